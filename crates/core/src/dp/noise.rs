//! Exact noise samplers over the integers.
//!
//! Textbook Laplace sampling (`-b·ln(U)` with a floating-point U) leaks through the gaps and
//! rounding of floating-point numbers (Mironov 2012). We sample the **discrete Laplace**
//! distribution exactly instead, with integer arithmetic only, following Canonne, Kamath and
//! Steinke (2020), "The Discrete Gaussian for Differential Privacy", Algorithms 1 and 2, the
//! same method OpenDP uses for its integer Laplace mechanism:
//!
//! - `Bernoulli(exp(-γ))` for a rational γ = num/den, exactly, from uniform integers;
//! - discrete Laplace with rational scale t: P(Z = z) = (1-q)/(1+q)·q^|z|, q = exp(-1/t).
//!
//! Adding discrete Laplace noise of scale Δ/ε to an integer-valued query of L1 sensitivity Δ
//! is ε-DP (the geometric mechanism, Ghosh, Roughgarden & Sundararajan 2009): for outputs
//! y, P[y | x]/P[y | x'] = q^(|y-x| - |y-x'|) ≤ q^(-‖x-x'‖₁) ≤ exp(ε).
//!
//! All randomness is drawn from [`SecureRng`]; uniform integers use rejection sampling, so
//! there is no modulo bias. Rationals are exact: a float parameter is converted to the
//! fraction it denotes (every finite float is a dyadic rational), never rounded.

use super::{DpError, SecureRng};

/// A positive rational number num/den, in lowest terms, with both parts at most 2^96 so that
/// the samplers' products never overflow `u128`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ratio {
    pub num: u128,
    pub den: u128,
}

const RATIO_MAX: u128 = 1 << 96;

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Ratio {
    pub fn new(num: u128, den: u128) -> Result<Ratio, DpError> {
        if num == 0 || den == 0 {
            return Err(DpError::Scale(format!("{num}/{den}")));
        }
        let g = gcd(num, den);
        let (num, den) = (num / g, den / g);
        if num > RATIO_MAX || den > RATIO_MAX {
            return Err(DpError::Scale(format!("{num}/{den}")));
        }
        Ok(Ratio { num, den })
    }

    /// The exact value of a finite, positive float, as a fraction.
    pub fn from_f64(x: f64) -> Result<Ratio, DpError> {
        if !x.is_finite() || x <= 0.0 {
            return Err(DpError::Scale(x.to_string()));
        }
        let bits = x.to_bits();
        let exp_bits = ((bits >> 52) & 0x7ff) as i32;
        let frac = (bits & ((1u64 << 52) - 1)) as u128;
        // x = mantissa · 2^exp exactly.
        let (mantissa, exp) = if exp_bits == 0 { (frac, -1074) } else { (frac | (1 << 52), exp_bits - 1075) };
        let tz = (mantissa.trailing_zeros() as i32).min(52);
        let (mantissa, exp) = (mantissa >> tz, exp + tz);
        if exp >= 0 {
            if exp > 95 {
                return Err(DpError::Scale(x.to_string()));
            }
            Ratio::new(mantissa.checked_shl(exp as u32).ok_or_else(|| DpError::Scale(x.to_string()))?, 1)
        } else {
            if -exp > 96 {
                return Err(DpError::Scale(x.to_string()));
            }
            Ratio::new(mantissa, 1u128 << (-exp) as u32)
        }
    }

    /// `k / x` for a positive integer k and a float x, exactly (used for scale = Δ/ε).
    pub fn int_over_f64(k: u64, x: f64) -> Result<Ratio, DpError> {
        let r = Ratio::from_f64(x)?;
        let num = (k as u128).checked_mul(r.den).ok_or_else(|| DpError::Scale(format!("{k}/{x}")))?;
        Ratio::new(num, r.num)
    }

    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

/// A uniform integer in `[0, n)`, `n > 0`, by rejection (no modulo bias). Below 2^64 it draws
/// one 64-bit word per try and uses 64-bit arithmetic (the same distribution, several times
/// faster in wasm, where 128-bit division is a library call); n = 1 draws nothing.
pub(crate) fn uniform_below(rng: &mut SecureRng, n: u128) -> u128 {
    debug_assert!(n > 0);
    if n <= u64::MAX as u128 {
        return uniform_below_u64(rng, n as u64) as u128;
    }
    if n.is_power_of_two() {
        return rng.next_u128() & (n - 1);
    }
    // Accept draws below the largest multiple of n that fits; the rest would be biased.
    let zone = u128::MAX - (u128::MAX - n + 1) % n;
    loop {
        let v = rng.next_u128();
        if v <= zone {
            return v % n;
        }
    }
}

fn uniform_below_u64(rng: &mut SecureRng, n: u64) -> u64 {
    if n == 1 {
        return 0;
    }
    if n.is_power_of_two() {
        return rng.next_u64() & (n - 1);
    }
    // As above: 2^64 mod n = (2^64 − n) mod n draws at the top are rejected.
    let zone = u64::MAX - (u64::MAX - n + 1) % n;
    loop {
        let v = rng.next_u64();
        if v <= zone {
            return v % n;
        }
    }
}

/// Bernoulli(num/den), `num <= den`, exactly (certain outcomes draw nothing).
pub(crate) fn bernoulli_ratio(rng: &mut SecureRng, num: u128, den: u128) -> bool {
    if num == 0 {
        return false;
    }
    if num >= den {
        return true;
    }
    uniform_below(rng, den) < num
}

/// Bernoulli(exp(-num/den)) for 0 ≤ num/den ≤ 1 (CKS20 Algorithm 1, first case): draw
/// A_k ~ Bernoulli(γ/k) for k = 1, 2, … until one fails; the first failing k is odd with
/// probability exp(-γ).
fn bernoulli_exp_neg_le1(rng: &mut SecureRng, num: u128, den: u128) -> bool {
    let mut k: u128 = 1;
    loop {
        // den·k ≤ 2^96 · k: fine for any k this loop can reach (P(k) ≤ 1/k!).
        if !bernoulli_ratio(rng, num, den * k) {
            return k % 2 == 1;
        }
        k += 1;
    }
}

/// Bernoulli(exp(-γ)) for a rational γ = num/den ≥ 0, exactly (CKS20 Algorithm 1).
pub(crate) fn bernoulli_exp_neg(rng: &mut SecureRng, num: u128, den: u128) -> bool {
    // exp(-γ) = exp(-1)^⌊γ⌋ · exp(-(γ - ⌊γ⌋)).
    let whole = num / den;
    for _ in 0..whole {
        if !bernoulli_exp_neg_le1(rng, 1, 1) {
            return false;
        }
    }
    bernoulli_exp_neg_le1(rng, num % den, den)
}

/// One sample of the geometric distribution P(Y = y) ∝ exp(-y·s/t), y ≥ 0, for `scale` = t/s
/// (CKS20 Algorithm 2 without the sign).
pub(crate) fn geometric(rng: &mut SecureRng, scale: Ratio) -> i64 {
    let (t, s) = (scale.num, scale.den);
    loop {
        // X = U + t·V is geometric: P(X = x) ∝ exp(-x/t).
        let u = uniform_below(rng, t);
        if !bernoulli_exp_neg(rng, u, t) {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp_neg_le1(rng, 1, 1) {
            v += 1;
        }
        let Some(x) = t.checked_mul(v).and_then(|tv| tv.checked_add(u)) else { continue };
        // Y = ⌊X/s⌋ is geometric with P(Y = y) ∝ exp(-y·s/t).
        if let Ok(y) = i64::try_from(x / s) {
            return y;
        }
    }
}

/// One sample of the discrete Laplace distribution with scale `scale` = t/s:
/// P(Z = z) ∝ exp(-|z|·s/t). CKS20 Algorithm 2.
pub fn discrete_laplace(rng: &mut SecureRng, scale: Ratio) -> i64 {
    loop {
        let y = geometric(rng, scale);
        // A random sign; reject (-, 0) so that 0 is not counted twice.
        let negative = rng.next_u64() & 1 == 1;
        if negative && y == 0 {
            continue;
        }
        return if negative { -y } else { y };
    }
}

/// Bernoulli(P(Z ≥ T)) for Z discrete Laplace with `scale` = t/s and an integer T ≥ 1, exactly:
/// P(Z ≥ T) = Σ_{z≥T} (1−q)/(1+q)·q^z = q^T/(1+q), q = exp(−s/t), the product of
/// Bernoulli(q^T) = Bernoulli(exp(−T·s/t)) and Bernoulli(1/(1+q)); the latter is the event
/// that a variable K with P(K = k) = (1−q)·q^k, k ≥ 0, is even: Σ_{k even} (1−q)·q^k = 1/(1+q).
/// The first factor is drawn first: it fails at once most of the time, which is what makes
/// it cheap.
///
/// K is drawn with [`geometric`], whose law P(Y = y) ∝ exp(−y·s/t) = q^y is exactly that
/// (normalised, (1−q)·q^y), in an expected number of uniform draws that does not grow with the
/// scale. Counting Bernoulli(q) successes before the first failure has the same law but costs
/// 1/(1−q) ≈ t/s trials, which at scale 10^5 made every cell that passed the first factor cost
/// 10^5 exact draws. Like every full draw, `geometric` redraws the values it cannot represent:
/// Y ≥ 2^63, a cut that leaves P(Y even) exactly 1/(1+q) since 2^63 is even, and X ≥ 2^128,
/// of probability below exp(−2^128/t) ≤ exp(−2^32) (t ≤ 2^96).
/// (T ≤ 65535 keeps T·s within `u128`: s ≤ 2^96.)
pub(crate) fn bernoulli_laplace_at_least(rng: &mut SecureRng, scale: Ratio, at_least: u16) -> bool {
    debug_assert!(at_least >= 1);
    let (t, s) = (scale.num, scale.den);
    if !bernoulli_exp_neg(rng, s * at_least as u128, t) {
        return false;
    }
    geometric(rng, scale) % 2 == 0
}

#[cfg(test)]
mod tests {
    //! Statistical tests with fixed seeds and fixed thresholds (as OpenDP tests its
    //! samplers): they are deterministic, and each threshold is far enough from the expected
    //! value that a correct sampler passes with overwhelming probability for any seed, while
    //! a sampler with the wrong scale or a sign bias fails.
    use super::*;

    fn q_of(scale: f64) -> f64 {
        (-1.0 / scale).exp()
    }

    /// Exact CDF of the discrete Laplace with scale t at integer z.
    fn cdf(scale: f64, z: i64) -> f64 {
        let q = q_of(scale);
        if z >= 0 {
            1.0 - q.powi((z + 1) as i32) / (1.0 + q)
        } else {
            q.powi((-z) as i32) / (1.0 + q)
        }
    }

    #[test]
    fn ratio_from_f64_is_exact() {
        assert_eq!(Ratio::from_f64(1.0).unwrap(), Ratio { num: 1, den: 1 });
        assert_eq!(Ratio::from_f64(0.75).unwrap(), Ratio { num: 3, den: 4 });
        assert_eq!(Ratio::from_f64(10.0).unwrap(), Ratio { num: 10, den: 1 });
        let r = Ratio::from_f64(0.1).unwrap();
        assert_eq!(r.num as f64 / r.den as f64, 0.1);
        assert_eq!(r.den, 1 << 55);
        // S/ε with ε = 0.1: exactly 10·2^55 / 0x1999999999999A·... reduced.
        let s = Ratio::int_over_f64(10, 0.1).unwrap();
        assert!((s.to_f64() - 100.0).abs() < 1e-9);
        assert!(Ratio::from_f64(f64::NAN).is_err());
        assert!(Ratio::from_f64(-1.0).is_err());
        assert!(Ratio::from_f64(1e-300).is_err());
        assert!(Ratio::from_f64(1e300).is_err());
    }

    #[test]
    fn uniform_below_is_unbiased_on_a_non_power_of_two() {
        let mut rng = SecureRng::seeded_for_tests(1);
        let n = 6u128;
        let trials = 120_000;
        let mut counts = [0u64; 6];
        for _ in 0..trials {
            counts[uniform_below(&mut rng, n) as usize] += 1;
        }
        // Chi-square with 5 degrees of freedom; 30 is far beyond the 0.99999 quantile (~28.3).
        let e = trials as f64 / 6.0;
        let chi2: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
        assert!(chi2 < 30.0, "chi2 = {chi2}, counts {counts:?}");
    }

    #[test]
    fn bernoulli_exp_matches_exp() {
        let mut rng = SecureRng::seeded_for_tests(2);
        for &(num, den) in &[(0u128, 1u128), (1, 3), (1, 1), (5, 2), (7, 1)] {
            let p = (-(num as f64) / den as f64).exp();
            let n = 200_000;
            let hits = (0..n).filter(|_| bernoulli_exp_neg(&mut rng, num, den)).count() as f64;
            let sd = (p * (1.0 - p) / n as f64).sqrt().max(1e-9);
            let got = hits / n as f64;
            assert!((got - p).abs() <= 6.0 * sd + 1e-12, "γ={num}/{den}: got {got}, want {p}");
        }
    }

    fn samples(scale: Ratio, n: usize, seed: u64) -> Vec<i64> {
        let mut rng = SecureRng::seeded_for_tests(seed);
        (0..n).map(|_| discrete_laplace(&mut rng, scale)).collect()
    }

    /// Kolmogorov–Smirnov distance between the sample and the exact CDF, over the integers.
    fn ks_distance(xs: &mut [i64], scale: f64) -> f64 {
        xs.sort_unstable();
        let n = xs.len() as f64;
        let mut d: f64 = 0.0;
        let mut i = 0;
        while i < xs.len() {
            let z = xs[i];
            let mut j = i;
            while j < xs.len() && xs[j] == z {
                j += 1;
            }
            // Empirical CDF just below z and at z, against the exact CDF there.
            d = d.max((i as f64 / n - cdf(scale, z - 1)).abs());
            d = d.max((j as f64 / n - cdf(scale, z)).abs());
            i = j;
        }
        d
    }

    #[test]
    fn discrete_laplace_passes_ks_against_its_cdf() {
        for (k, &scale) in [0.5f64, 1.0, 3.0, 10.0, 123.25].iter().enumerate() {
            let mut xs = samples(Ratio::from_f64(scale).unwrap(), 100_000, 10 + k as u64);
            let d = ks_distance(&mut xs, scale);
            // sqrt(ln(2/α)/(2n)) with α = 1e-6 (DKW inequality): 0.0085 for n = 1e5.
            assert!(d < 0.0085, "scale {scale}: KS distance {d}");
        }
    }

    #[test]
    fn ks_detects_a_wrong_scale() {
        // The same check must fail for a sampler whose scale is 10% off.
        let mut xs = samples(Ratio::from_f64(11.0).unwrap(), 100_000, 3);
        let d = ks_distance(&mut xs, 10.0);
        assert!(d > 0.0085, "KS distance {d} did not catch a 10% scale error");
    }

    #[test]
    fn discrete_laplace_tails_and_symmetry() {
        let scale = 4.0;
        let n = 200_000;
        let xs = samples(Ratio::from_f64(scale).unwrap(), n, 4);
        let q = q_of(scale);
        for k in [1i64, 4, 8, 16, 32] {
            // P(|Z| ≥ k) = 2·q^k/(1+q) for k ≥ 1.
            let p = 2.0 * q.powi(k as i32) / (1.0 + q);
            let got = xs.iter().filter(|&&x| x.abs() >= k).count() as f64 / n as f64;
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            assert!((got - p).abs() < 6.0 * sd + 1e-5, "tail k={k}: got {got}, want {p}");
        }
        let pos = xs.iter().filter(|&&x| x > 0).count() as f64;
        let neg = xs.iter().filter(|&&x| x < 0).count() as f64;
        // Under symmetry pos - neg has sd sqrt(pos + neg).
        assert!((pos - neg).abs() < 6.0 * (pos + neg).sqrt(), "pos {pos}, neg {neg}");
        let mean = xs.iter().sum::<i64>() as f64 / n as f64;
        let var = 2.0 * q / (1.0 - q).powi(2);
        assert!(mean.abs() < 6.0 * (var / n as f64).sqrt(), "mean {mean}");
        let got_var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((got_var / var - 1.0).abs() < 0.03, "variance {got_var} vs {var}");
    }

    #[test]
    fn the_tail_event_has_the_tail_probability() {
        // P(Z ≥ T) = q^T/(1+q); a sampler missing the 1/(1+q) factor (or with the wrong
        // scale) is off by far more than the 6-sd tolerance at these sizes.
        let mut rng = SecureRng::seeded_for_tests(31);
        for &(scale, at) in &[(1.0f64, 1u16), (3.0, 1), (3.0, 4), (0.5, 2), (10.0, 7)] {
            let q = q_of(scale);
            let p = q.powi(at as i32) / (1.0 + q);
            let n = 200_000;
            let r = Ratio::from_f64(scale).unwrap();
            let hits = (0..n).filter(|_| bernoulli_laplace_at_least(&mut rng, r, at)).count() as f64;
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            assert!((hits / n as f64 - p).abs() < 6.0 * sd, "scale {scale}, T {at}: {} vs {p}", hits / n as f64);
        }
    }

    #[test]
    fn the_tail_event_is_exact_at_large_scales() {
        // Scales where T reaches its 65535 cap in the vocabulary (S/ε ≳ 17,000): about a third
        // of the cells pass the first factor, and each then needs K's parity. Counting
        // Bernoulli(q) trials one at a time cost ~10^5 exact draws per such cell here.
        let mut rng = SecureRng::seeded_for_tests(33);
        for &(scale, at) in &[(1e5f64, 30_000u16), (12_345.75, 9_000), (2e4, u16::MAX)] {
            let q = q_of(scale);
            let p = q.powi(at as i32) / (1.0 + q);
            let n = 40_000;
            let r = Ratio::from_f64(scale).unwrap();
            let hits = (0..n).filter(|_| bernoulli_laplace_at_least(&mut rng, r, at)).count() as f64;
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            assert!((hits / n as f64 - p).abs() < 6.0 * sd, "scale {scale}, T {at}: {} vs {p}", hits / n as f64);
        }
    }

    #[test]
    fn geometric_has_its_distribution() {
        // P(Y ≥ k) = q^k.
        let mut rng = SecureRng::seeded_for_tests(32);
        let scale = 2.5;
        let q = q_of(scale);
        let n = 200_000;
        let ys: Vec<i64> = (0..n).map(|_| geometric(&mut rng, Ratio::from_f64(scale).unwrap())).collect();
        assert!(ys.iter().all(|&y| y >= 0));
        for k in [1i64, 2, 5, 10] {
            let p = q.powi(k as i32);
            let got = ys.iter().filter(|&&y| y >= k).count() as f64 / n as f64;
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            assert!((got - p).abs() < 6.0 * sd, "k {k}: {got} vs {p}");
        }
    }

    #[test]
    fn huge_and_tiny_scales_work() {
        let xs = samples(Ratio::from_f64(1e9).unwrap(), 2000, 5);
        let mean_abs = xs.iter().map(|x| x.unsigned_abs() as f64).sum::<f64>() / xs.len() as f64;
        assert!((mean_abs / 1e9 - 1.0).abs() < 0.15, "{mean_abs}");
        let xs = samples(Ratio::from_f64(0.01).unwrap(), 2000, 6);
        assert!(xs.iter().all(|&x| x == 0) || xs.iter().filter(|&&x| x != 0).count() < 3);
    }
}
