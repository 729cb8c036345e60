//! GELU, `x · ½ · (1 + erf(x / √2))`, as the product that feeds it finishes its values
//! ([`super::kernel::Scaling`]'s `gelu`): the bundled model's feed-forward product in is followed
//! by one, and as a pass of its own (tract's `GeluExact`) it read and wrote the product's whole
//! output again (256 × 1,536 values a 256-token note, six times a note).
//!
//! The arithmetic is tract-linalg's WebAssembly kernel's for `GeluExact` (`WasmErf4` inside
//! `x · ½ · (erf(x · (1/√2)) + 1)`): erf by Abramowitz and Stegun's 7.1.28,
//! `1 − 1 / (1 + a₁|z| + … + a₆|z|⁶)¹⁶` with z's sign (maximum error 3 · 10⁻⁷), the sixteenth
//! power by four squarings, nothing fused. So the page's vectors keep their bits; natively tract
//! fuses the multiply-adds (AVX2 + FMA), so there a vector moves in its last bits, as the
//! reference test allows. [`gelu`] (a value) and [`gelu_lanes`] (eight, on any machine's
//! [`Lanes`], the ones attention's kernel runs on) make the same operations a value
//! ([`super::check::check_gelu`]).

use crate::lanes::Lanes;

/// 1/√2 as tract computes it (`2f32.sqrt().recip()`: both correctly rounded).
const INV_SQRT2: f32 = 0.707_106_77;
/// a₁ … a₆, as tract-linalg writes them.
#[allow(clippy::excessive_precision)]
const A: [f32; 6] = [0.0705230784, 0.0422820123, 0.0092705272, 0.0001520143, 0.0002765672, 0.0000430638];

/// One value.
#[inline(always)]
pub(crate) fn gelu(x: f32) -> f32 {
    let z = x * INV_SQRT2;
    let abs = z.abs();
    let mut y = A[5] * abs;
    for a in A[..5].iter().rev() {
        y = (y + a) * abs;
    }
    let mut r = y + 1.0;
    for _ in 0..4 {
        r = r * r;
    }
    let erf = f32::from_bits((1.0 - 1.0 / r).to_bits() | (z.to_bits() & 0x8000_0000));
    x * 0.5 * (erf + 1.0)
}

/// Eight values, on any machine's [`Lanes`] (WebAssembly SIMD in the page, AVX2 natively): the
/// operations are [`gelu`]'s, one by one, none fused.
#[inline(always)]
pub(crate) fn gelu_lanes<L: Lanes>(x: L) -> L {
    let one = L::splat(1.0);
    let z = x.mul(L::splat(INV_SQRT2));
    let abs = z.abs();
    let mut y = L::splat(A[5]).mul(abs);
    for &a in A[..5].iter().rev() {
        y = y.add(L::splat(a)).mul(abs);
    }
    let mut r = y.add(one);
    for _ in 0..4 {
        r = r.mul(r);
    }
    let erf = one.sub(one.div(r)).with_sign_of(z);
    x.mul(L::splat(0.5)).mul(erf.add(one))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_over_root_two_is_tracts() {
        assert_eq!(INV_SQRT2.to_bits(), 2f32.sqrt().recip().to_bits());
    }

    /// Against GELU in f64 with erf from its Taylor series (|z| < 3): within the approximation's
    /// 3 · 10⁻⁷ of erf and the f32 arithmetic's error (about 10⁻⁶ of erf, from 1/r¹⁶), times |x| / 2.
    #[test]
    fn it_is_gelu() {
        let erf = |z: f64| -> f64 {
            let (mut term, mut sum, mut k) = (z, z, 0.0);
            while term.abs() > 1e-17 {
                k += 1.0;
                term *= -z * z / k;
                sum += term / (2.0 * k + 1.0);
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        };
        for x in (-420..=420).map(|i| i as f32 * 0.01) {
            let want = x as f64 * 0.5 * (1.0 + erf(x as f64 / 2f64.sqrt()));
            let tol = 1.5e-6 * (x.abs() as f64 * 0.5) + 2e-7 * want.abs() + 1e-9;
            assert!((gelu(x) as f64 - want).abs() <= tol, "GELU({x}) = {} against {want}", gelu(x));
        }
        assert!(gelu(f32::NAN).is_nan());
        assert_eq!(gelu(f32::INFINITY), f32::INFINITY);
        assert_eq!(gelu(0.0), 0.0);
    }

    #[test]
    fn the_machines_vectors_equal_the_plain_code() {
        super::super::check::check_gelu().unwrap();
    }
}
