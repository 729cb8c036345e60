//! Step 3 of the DP vocabulary ([`super`]), drawn fast over the huge public list.
//!
//! # Drawing the noise (speed, same distribution)
//! Step 3 draws one noise value per vocabulary entry: 340,000 English words × 40 classes is
//! 13.6 million exact draws, most of them for zero counts that can never reach the top N.
//! [`NoisyHistogram`] draws them lazily, with exactly the joint distribution of drawing every
//! one: the noise values are independent, and for an integer T ≥ 1 each zero-count entry's
//! value Z is drawn in two steps, first the event Z ≥ T (an exact Bernoulli of probability
//! P(Z ≥ T) = q^T/(1+q), `noise::bernoulli_laplace_at_least`, which mostly fails after one
//! or two uniform draws), then Z given that event: T + a geometric variable (P(Z = z | Z ≥ T)
//! ∝ q^z for z ≥ T), or, only when needed, Z given Z < T (exact rejection from the full
//! distribution). Every non-zero count gets its full draw. If at least N entries then have a
//! noisy value ≥ T, the N largest are among the values drawn (every undrawn value is below T),
//! so the top N is read from them; otherwise the remaining zero-count entries are drawn (given
//! Z < T) and the top N is read from all. A value needed later (a selected term's count in
//! another class) is drawn then, given Z < T, once. T is chosen so that about 4N + 64 zero
//! entries are expected above it; it affects only the running time, never what is released.

use std::collections::HashMap;

use crate::dp::rng::SecureRng;
use crate::dp::noise::{bernoulli_laplace_at_least, discrete_laplace, geometric, Ratio};
use crate::input::public_vocab::TermId;

/// A histogram's noisy counts h[v] + Z_v (Z_v discrete Laplace of `scale`, every entry, zeros
/// included), drawn lazily with the same joint distribution (module docs, "Drawing the noise").
pub(super) struct NoisyHistogram<'a> {
    counts: &'a [u64],
    scale: Ratio,
    values: Drawn,
}

/// The noisy counts drawn so far.
enum Drawn {
    /// T in use: every non-zero count and every zero count whose noise reached T (or that was
    /// asked for since); the other zero-count entries have noise below T, not drawn yet.
    Lazy { threshold: i64, drawn: HashMap<TermId, i64> },
    /// Every entry, by index: 8 bytes each (a map of 340k entries takes about 26 bytes each,
    /// ~350 MB for 40 classes, and every class is kept until Ṽ is read).
    All(Vec<i64>),
}

impl<'a> NoisyHistogram<'a> {
    /// Draws what the top `n` needs, with T from [`threshold_for`].
    pub(super) fn draw(counts: &'a [u64], n: usize, scale: Ratio, rng: &mut SecureRng) -> NoisyHistogram<'a> {
        let zeros = counts.iter().filter(|&&c| c == 0).count();
        NoisyHistogram::draw_with(counts, n, scale, threshold_for(zeros, n, scale), rng)
    }

    /// Draws what the top `n` needs with a given T in 1..=65535 (any such T gives the same
    /// distribution), or every entry when `threshold` is None.
    pub(super) fn draw_with(counts: &'a [u64], n: usize, scale: Ratio, threshold: Option<i64>, rng: &mut SecureRng) -> NoisyHistogram<'a> {
        let Some(t) = threshold else {
            let all = counts.iter().map(|&c| noisy(c, scale, rng)).collect();
            return NoisyHistogram { counts, scale, values: Drawn::All(all) };
        };
        debug_assert!((1..=u16::MAX as i64).contains(&t));
        let non_zero = counts.iter().filter(|&&c| c > 0).count();
        let mut drawn = HashMap::with_capacity(non_zero + 8 * n + 128);
        for (i, &c) in counts.iter().enumerate() {
            let value = if c > 0 {
                noisy(c, scale, rng)
            } else if bernoulli_laplace_at_least(rng, scale, t as u16) {
                t.saturating_add(geometric(rng, scale))
            } else {
                continue;
            };
            drawn.insert(i as TermId, value);
        }
        // Every value ≥ T counts, a non-zero count's too; values below T may be drawn ones.
        let reaching = drawn.values().filter(|&&v| v >= t).count();
        let mut h = NoisyHistogram { counts, scale, values: Drawn::Lazy { threshold: t, drawn } };
        if reaching < n {
            h.draw_the_rest(rng);
        }
        h
    }

    /// Every zero-count entry not drawn yet, given that its noise is below T; then all are kept
    /// by index.
    fn draw_the_rest(&mut self, rng: &mut SecureRng) {
        let Drawn::Lazy { threshold, drawn } = &self.values else { return };
        let all = (0..self.counts.len())
            .map(|i| match drawn.get(&(i as TermId)) {
                Some(&v) => v,
                // Not drawn: a zero count whose noise is below T (non-zero counts are all drawn).
                None => below(rng, self.scale, *threshold),
            })
            .collect();
        self.values = Drawn::All(all);
    }

    /// The noisy count of entry `id` (drawn now, given noise below T, if it was not yet).
    pub(super) fn value(&mut self, id: TermId, rng: &mut SecureRng) -> i64 {
        let scale = self.scale;
        match &mut self.values {
            Drawn::All(all) => all[id as usize],
            Drawn::Lazy { threshold, drawn } => *drawn.entry(id).or_insert_with(|| below(rng, scale, *threshold)),
        }
    }

    /// The `n` largest noisy counts (see `top_of`). Exact: when not every entry is drawn, at
    /// least `n` drawn values are ≥ T (else `draw_with` drew everything), and every undrawn one
    /// is below T.
    pub(super) fn top(&self, n: usize) -> Vec<(TermId, i64)> {
        match &self.values {
            Drawn::All(all) => top_of(all.iter().enumerate().map(|(i, &v)| (i as TermId, v)).collect(), n),
            Drawn::Lazy { drawn, .. } => top_of(drawn.iter().map(|(&id, &v)| (id, v)).collect(), n),
        }
    }
}

/// A count plus discrete Laplace noise of `scale`.
fn noisy(count: u64, scale: Ratio, rng: &mut SecureRng) -> i64 {
    (count.min(i64::MAX as u64) as i64).saturating_add(discrete_laplace(rng, scale))
}

/// Discrete Laplace noise of `scale` given that it is below `t` (exact: rejection).
fn below(rng: &mut SecureRng, scale: Ratio, t: i64) -> i64 {
    loop {
        let z = discrete_laplace(rng, scale);
        if z < t {
            return z;
        }
    }
}

/// T for `zeros` zero-count entries and a top `n`: the largest T ≥ 1 (at most 65535) with
/// about 4n + 64 of them expected to reach it, or None (draw every entry) if even T = 1 would
/// leave fewer. Floating point is fine here: any T ≥ 1 gives the same distribution.
fn threshold_for(zeros: usize, n: usize, scale: Ratio) -> Option<i64> {
    let q = (-1.0 / scale.to_f64()).exp();
    if !(q > 0.0 && q < 1.0) || zeros == 0 {
        return None;
    }
    let ratio = (4.0 * n as f64 + 64.0) * (1.0 + q) / zeros as f64;
    if ratio >= q {
        return None;
    }
    Some((ratio.ln() / q.ln()).floor().clamp(1.0, u16::MAX as f64) as i64)
}

/// The `n` largest entries as (index, value), largest first; ties go to the lower index.
pub(super) fn top_of(mut all: Vec<(TermId, i64)>, n: usize) -> Vec<(TermId, i64)> {
    let order = |a: &(TermId, i64), b: &(TermId, i64)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    let n = n.min(all.len());
    if n < all.len() {
        all.select_nth_unstable_by(n, order);
        all.truncate(n);
    }
    all.sort_unstable_by(order);
    all
}

/// Adds discrete Laplace noise of `scale` to every count and returns the `n` largest noisy
/// counts as (index, noisy count), largest first; ties go to the lower index.
#[cfg(test)]
pub(super) fn noisy_top_n(counts: &[u64], n: usize, scale: Ratio, rng: &mut SecureRng) -> Vec<(TermId, i64)> {
    NoisyHistogram::draw(counts, n, scale, rng).top(n)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Exact CDF of the discrete Laplace distribution with `scale` at integer z.
    fn laplace_cdf(scale: f64, z: i64) -> f64 {
        let q = (-1.0 / scale).exp();
        if z >= 0 {
            1.0 - q.powi((z + 1) as i32) / (1.0 + q)
        } else {
            q.powi((-z) as i32) / (1.0 + q)
        }
    }

    /// Kolmogorov–Smirnov distance of integer samples from a CDF.
    fn ks(mut xs: Vec<i64>, cdf: impl Fn(i64) -> f64) -> f64 {
        xs.sort_unstable();
        let n = xs.len() as f64;
        let (mut d, mut i) = (0f64, 0);
        while i < xs.len() {
            let z = xs[i];
            let j = i + xs[i..].iter().take_while(|&&x| x == z).count();
            d = d.max((i as f64 / n - cdf(z - 1)).abs()).max((j as f64 / n - cdf(z)).abs());
            i = j;
        }
        d
    }

    /// The thresholds the distribution tests run at: every entry drawn; T = 1, the lazy path
    /// (what `threshold_for` picks for the first test); T = 6, where fewer than N values
    /// usually reach T, so the fallback (`draw_the_rest`) runs in most draws.
    pub(crate) const THRESHOLDS: [Option<i64>; 3] = [None, Some(1), Some(6)];

    #[test]
    fn lazily_drawn_noise_has_the_distribution_of_drawing_every_entry() {
        // 300 zero counts and a top 1 at scale 1. Any single entry's value, drawn at once or
        // later given Z < T, must be exactly discrete Laplace; the top value must be the
        // maximum of 300 of them, whose CDF is F(m)^300. DKW bound at α = 1e-6 for 12,000
        // samples: 0.025. (At T = 6, about 300·q^6/(1+q) = 0.54 values reach T: the fallback
        // runs in ~58% of the draws.)
        let counts = vec![0u64; 300];
        let scale = Ratio::from_f64(1.0).unwrap();
        assert_eq!(threshold_for(300, 1, scale), Some(1));
        let mut rng = SecureRng::seeded_for_tests(41);
        let trials = 12_000;
        let limit = (2e6f64.ln() / (2.0 * trials as f64)).sqrt();
        for threshold in THRESHOLDS {
            let (mut one, mut top) = (Vec::new(), Vec::new());
            for _ in 0..trials {
                let mut h = NoisyHistogram::draw_with(&counts, 1, scale, threshold, &mut rng);
                top.push(h.top(1)[0].1);
                one.push(h.value(17, &mut rng));
            }
            let d_one = ks(one, |z| laplace_cdf(1.0, z));
            assert!(d_one < limit, "T {threshold:?}, one entry: KS distance {d_one}");
            let d_top = ks(top.clone(), |z| laplace_cdf(1.0, z).powi(300));
            assert!(d_top < limit, "T {threshold:?}, top value: KS distance {d_top}");
            // The same check tells 300 entries from 400 (a sampler that drew the tail too often).
            let d_wrong = ks(top, |z| laplace_cdf(1.0, z).powi(400));
            assert!(d_wrong > limit, "T {threshold:?}: KS distance {d_wrong} did not tell 300 entries from 400");
        }
    }

    /// Two outcome frequency tables of the same number of trials agree outcome by outcome
    /// within 6 sd (the difference of two counts a, b has variance about a + b).
    pub(crate) fn assert_same_frequencies<K: std::fmt::Debug + Eq + std::hash::Hash>(lazy: &HashMap<K, usize>, full: &HashMap<K, usize>, what: &str) {
        for k in lazy.keys().chain(full.keys()) {
            let (a, b) = (*lazy.get(k).unwrap_or(&0) as f64, *full.get(k).unwrap_or(&0) as f64);
            let sd = (a + b).sqrt().max(1.0);
            assert!((a - b).abs() < 6.0 * sd, "{what}, outcome {k:?}: lazy {a}, full {b}");
        }
    }

    /// Every entry of `counts` with its own full draw (the plain mechanism, no laziness).
    pub(crate) fn full_draw(counts: &[u64], scale: Ratio, rng: &mut SecureRng) -> Vec<(TermId, i64)> {
        counts.iter().enumerate().map(|(i, &c)| (i as TermId, noisy(c, scale, rng))).collect()
    }

    #[test]
    fn lazy_selection_matches_full_draws_with_counts() {
        // Non-zero counts among zeros: the selected set of ids (zero-count ids included) has the
        // distribution of the plain mechanism (every entry drawn), outcome by outcome, at every
        // T. 24 entries and a top 2 (276 possible sets) keep every outcome well sampled; at
        // T = 6 the non-zero counts rarely reach T, so the fallback decides most draws.
        let mut counts = vec![0u64; 24];
        counts[3] = 3;
        counts[10] = 2;
        counts[23] = 1;
        let scale = Ratio::from_f64(1.5).unwrap();
        let trials = 15_000;
        let mut rng = SecureRng::seeded_for_tests(42);
        for threshold in THRESHOLDS {
            let lazy = crate::dp::testing::frequencies(trials, || set_of(&NoisyHistogram::draw_with(&counts, 2, scale, threshold, &mut rng).top(2)));
            let full = crate::dp::testing::frequencies(trials, || set_of(&top_of(full_draw(&counts, scale, &mut rng), 2)));
            assert_same_frequencies(&lazy, &full, &format!("T {threshold:?}"));
        }
    }

    /// The ids of (id, count) pairs, sorted.
    pub(crate) fn set_of(terms: &[(TermId, i64)]) -> Vec<TermId> {
        let mut v: Vec<TermId> = terms.iter().map(|p| p.0).collect();
        v.sort_unstable();
        v
    }

    /// Two-sample Kolmogorov–Smirnov distance between integer samples.
    pub(crate) fn ks_two_sample(mut xs: Vec<i64>, mut ys: Vec<i64>) -> f64 {
        xs.sort_unstable();
        ys.sort_unstable();
        let (nx, ny) = (xs.len() as f64, ys.len() as f64);
        let (mut i, mut j, mut d) = (0, 0, 0f64);
        while i < xs.len() || j < ys.len() {
            // The next value present in either sample; both empirical CDFs just after it.
            let z = match (xs.get(i), ys.get(j)) {
                (Some(&x), Some(&y)) => x.min(y),
                (Some(&x), None) => x,
                (None, Some(&y)) => y,
                (None, None) => break,
            };
            i += xs[i..].iter().take_while(|&&x| x == z).count();
            j += ys[j..].iter().take_while(|&&y| y == z).count();
            d = d.max((i as f64 / nx - j as f64 / ny).abs());
        }
        d
    }
}
