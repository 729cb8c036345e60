//! cos and sin in f32 as plain arithmetic, for the random features' 10⁹ evaluations.
//!
//! WebAssembly has no trigonometric instructions: `f32::cos` is a libm call per value, which
//! the compiler cannot put in simd128 lanes. At 60,000 documents the iterative samplers' DP-KDE
//! build takes about 10⁹ cosines (documents × prefixes × I). These are branch-free range
//! reduction and a polynomial, which vectorise; with [`round_to_i32`] the build's inner loop
//! has no call and no lane-by-lane step left (MTSamples × 12, iterative-linear, in the page:
//! the DP-KDE stage 15 → 8 s; natively, one thread, 6.1 → 3.7 s for the rounding alone). Accuracy is
//! about 10⁻⁷ for the phases the features meet (|x| of a few tens; `tests`), far below the
//! sums' grid (2^−20) and the DP noise. Privacy never rests on it: the build clamps every
//! contribution after the cosine (`kde::sums`), whatever these return.

/// 1.5·2^23: for |y| < 2^22, y + MAGIC lies in [2^23, 2^24), where f32 steps by exactly 1, so
/// the sum is y rounded to the nearest integer (ties to even) and its bits are MAGIC's bits
/// plus that integer.
const MAGIC: f32 = 12_582_912.0;

/// y rounded to the nearest integer (ties to even), as an i32, for |y| < 2^22; outside that
/// range (or for NaN) some i32, with no panic. Plain float and integer arithmetic that
/// vectorises: `y.round() as i32` is a libm call and a saturating conversion, which the
/// compiler does one lane at a time.
#[inline(always)]
pub(crate) fn round_to_i32(y: f32) -> i32 {
    ((y + MAGIC).to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32)
}

/// x = nπ + r with r in [−π/2, π/2] (Cody–Waite in three parts: n·PI_A and n·PI_B are exact
/// for |n| < 2^13), and (−1)^n as a sign bit to XOR into a result. n is rounded as in
/// [`round_to_i32`] and its parity read from the same bits (no float-to-integer conversion).
#[inline(always)]
fn reduce(x: f32) -> (f32, u32) {
    const INV_PI: f32 = std::f32::consts::FRAC_1_PI;
    const PI_A: f32 = 3.140625;
    const PI_B: f32 = 9.675_026e-4;
    const PI_C: f32 = 1.509_958e-7;
    let shifted = x * INV_PI + MAGIC;
    let n = shifted - MAGIC;
    let r = ((x - n * PI_A) - n * PI_B) - n * PI_C;
    (r, shifted.to_bits() << 31)
}

/// cos x: [`reduce`], an even polynomial on [−π/2, π/2] (Taylor to r¹², truncation below
/// 10⁻⁸) and the sign (−1)^n. Absolute error below 2·10⁻⁷ for |x| ≤ 10⁴ (`tests`); beyond that
/// it degrades, and for huge, infinite or NaN x it may leave [−1, 1] or be NaN.
#[inline(always)]
pub(crate) fn cos_fast(x: f32) -> f32 {
    let (r, sign) = reduce(x);
    let z = r * r;
    let poly = 1.0
        + z * (-0.5 + z * (1.0 / 24.0 + z * (-1.0 / 720.0 + z * (1.0 / 40_320.0 + z * (-1.0 / 3_628_800.0 + z * (1.0 / 479_001_600.0))))));
    f32::from_bits(poly.to_bits() ^ sign)
}

/// sin x: [`reduce`], an odd polynomial (Taylor to r¹³, truncation below 10⁻⁹) and the sign
/// (−1)^n; accuracy as [`cos_fast`]'s.
#[inline(always)]
pub(crate) fn sin_fast(x: f32) -> f32 {
    let (r, sign) = reduce(x);
    let z = r * r;
    let poly = r
        * (1.0 + z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5_040.0 + z * (1.0 / 362_880.0 + z * (-1.0 / 39_916_800.0 + z * (1.0 / 6_227_020_800.0)))))));
    f32::from_bits(poly.to_bits() ^ sign)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_to_libm_over_the_phases_met_and_beyond() {
        let mut worst = [[0f64; 3]; 2];
        for k in 0..2_000_001i64 {
            let x = (k - 1_000_000) as f32 * 1e-6;
            for (j, scale) in [1f32, 100.0, 10_000.0].into_iter().enumerate() {
                let x = x * scale;
                worst[0][j] = worst[0][j].max((cos_fast(x) as f64 - (x as f64).cos()).abs());
                worst[1][j] = worst[1][j].max((sin_fast(x) as f64 - (x as f64).sin()).abs());
            }
        }
        eprintln!("largest |error| for |x| ≤ 1, 100, 10⁴: cos {:?}, sin {:?}", worst[0], worst[1]);
        for (name, w) in ["cos", "sin"].iter().zip(worst) {
            assert!(w[0] < 1.5e-7 && w[1] < 2.5e-7 && w[2] < 2.5e-7, "{name}: {w:?}");
        }
    }

    #[test]
    fn rounds_to_the_nearest_integer_ties_to_even() {
        for (y, r) in [(0.5f32, 0), (1.5, 2), (2.5, 2), (-0.5, 0), (-1.5, -2), (1_482_910.4, 1_482_910), (-1_482_911.0, -1_482_911), (-3.7, -4), (0.0, 0), (-0.0, 0)] {
            assert_eq!(round_to_i32(y), r, "{y}");
        }
        // Every grid value the build can meet: the same as f64 rounding (ties to even).
        for k in -3_000_000..=3_000_000 {
            let y = k as f32 * 0.5 + 0.25 * (k % 3) as f32;
            assert_eq!(round_to_i32(y), (y as f64).round_ties_even() as i32, "{y}");
        }
    }
}
