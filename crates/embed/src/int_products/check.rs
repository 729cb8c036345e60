//! The check of the integer kernels ([`super::kernel`]) and the GELU they can finish with
//! ([`super::gelu`]) against their plain code, run by the unit tests natively and by the page's
//! model check in the worker (where only it reaches the WebAssembly kernels).

use super::kernel::{plain, product, quantize, quantize_plain, Packed, Scaling};

/// Whether the kernel this machine runs ([`product`]) and the plain one both give the exact
/// product under unit scales (rounded to f32 as the exact sum is, and where every sum is at most
/// 2²⁴, the sum itself), and the same bits as each other under drawn scales, with a bias and
/// without; on shapes with odd K, N not a multiple of a panel (nor of two, nor of a group), row
/// counts not a multiple of a block, and the extreme values the callers allow; and whether its
/// rounding of activations ([`quantize`]) equals the plain one. The unit tests run it natively;
/// the page's model check runs it in the worker, on its WebAssembly kernels. Err says where the
/// first difference is.
pub fn check() -> Result<(), String> {
    check_gelu()?;
    let mut next = crate::draws::xorshift32(0x9e37_79b9);
    for &(rows, k, n) in &[(1, 1, 1), (3, 5, 7), (4, 384, 384), (7, 33, 17), (9, 1536, 24), (5, 64, 9), (6, 40, 100)] {
        let w: Vec<i16> = (0..k * n).map(|_| (next() % 255) as i16 - 127).collect();
        let packed = Packed::new(k, n, |kk, j| w[kk * n + j]);
        let len = 2 * packed.pairs;
        let bound = i32::from(super::activation_bound(k));
        // Under unit scales each value is its i32 sum rounded to f32 as the exact sum is (a sum
        // that wrapped would be 2³² off), and for activations small enough that every sum is at
        // most 2²⁴ in magnitude, the sum itself: both kernels are held to the exact product.
        let unit = (vec![1f32; rows], vec![1f32; n]);
        let exact = Scaling { rows: &unit.0, cols: &unit.1, bias: None, gelu: false };
        let is_exact = |a: &[i16]| {
            let (mut want, mut got) = (vec![7f32; rows * n], vec![7f32; rows * n]);
            plain(a, rows, &packed, &exact, &mut want);
            product(a, rows, &packed, &exact, &mut got);
            (0..rows * n).all(|i| {
                let (m, j) = (i / n, i % n);
                let sum: i64 = (0..k).map(|kk| i64::from(a[m * len + kk]) * i64::from(w[kk * n + j])).sum();
                want[i] == sum as f32 && got[i] == sum as f32
            })
        };
        let small = ((1 << 24) / (127 * len as i32)).min(bound);
        let mut a = vec![0i16; rows * len];
        for m in 0..rows {
            for kk in 0..k {
                a[m * len + kk] = ((next() % (2 * small as u32 + 1)) as i32 - small) as i16;
            }
        }
        if !is_exact(&a) {
            return Err(format!("a product of small activations is not the exact one at rows {rows}, k {k}, n {n}"));
        }
        // The extremes the bound allows: exact as above, then under drawn scales (a row of scale
        // NaN, one of 0, a column of 0), with a bias and without, the machine's kernel against the
        // plain one.
        for m in 0..rows {
            for kk in 0..k {
                a[m * len + kk] = match next() % 8 {
                    0 => bound as i16,
                    1 => -bound as i16,
                    _ => ((next() % (2 * bound as u32 + 1)) as i32 - bound) as i16,
                };
            }
        }
        if !is_exact(&a) {
            return Err(format!("a product at the bound is not the exact one at rows {rows}, k {k}, n {n}"));
        }
        let mut draw = |n: usize, lo: f32| -> Vec<f32> { (0..n).map(|_| lo + next() as f32 / u32::MAX as f32 * 1e-2).collect() };
        let (mut row_scales, mut cols, bias) = (draw(rows, 1e-5), draw(n, 1e-5), draw(n, -5e-3));
        row_scales[rows / 2] = f32::NAN;
        row_scales[rows - 1] = 0.0;
        cols[n / 3] = 0.0;
        // Row scales that bring each row's values to ±6, where GELU is neither 0 nor x.
        let mut sums = vec![0f32; rows * n];
        plain(&a, rows, &packed, &exact, &mut sums);
        let mid: Vec<f32> = sums.chunks(n).map(|r| 6.0 / r.iter().fold(1f32, |t, v| t.max(v.abs()))).collect();
        let cases = [(&row_scales, None, false), (&row_scales, Some(&bias[..]), false), (&row_scales, None, true), (&row_scales, Some(&bias[..]), true), (&mid, None, true), (&mid, Some(&bias[..]), true)];
        for (row_scales, bias, gelu) in cases {
            let scaling = Scaling { rows: row_scales, cols: &cols, bias, gelu };
            let (mut want, mut got) = (vec![7f32; rows * n], vec![7f32; rows * n]);
            plain(&a, rows, &packed, &scaling, &mut want);
            product(&a, rows, &packed, &scaling, &mut got);
            if !want.iter().zip(&got).all(|(&a, &b)| same(a, b)) {
                return Err(format!("the kernel differs from the plain product at rows {rows}, k {k}, n {n}, bias {}, GELU {gelu}", bias.is_some()));
            }
        }
    }
    // The rounding of a row, against the plain one: lengths with every remainder by 4 and by 8;
    // ordinary rows; each special value at the first place (a vector's), the last (the tail's)
    // and one drawn: NaN, both infinities, a signed zero; values on exact halves and one ulp
    // either side of them (a path that multiplied by a reciprocal, or rounded ties otherwise,
    // would differ there); rows of zeros, rows too small for a normal scale, and subnormal values
    // in a row of normal scale. `out` is longer than the row: nothing past it may be written.
    for &k in &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 14, 17, 384, 1001, 1536] {
        let bound = f32::from(super::activation_bound(k));
        for case in 0..10 {
            let mut row: Vec<f32> = (0..k).map(|_| (next() as f32 / u32::MAX as f32 - 0.5) * 7.0).collect();
            let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0];
            match case {
                1..=3 => {
                    let at = [0, k - 1, next() as usize % k][case - 1];
                    row[at] = special[next() as usize % special.len()];
                }
                4 | 5 => {
                    // The largest value is the bound, so the scale is exactly 1: every other
                    // value, n + ½ (case 4) or one ulp either side of it or of ½ (case 5), is
                    // rounded at or next to a tie.
                    for v in row.iter_mut() {
                        let half = (next() % (bound as u32 - 1)) as f32 + 0.5;
                        let half = if case == 5 && next() % 4 == 0 { 0.5 } else { half };
                        let near = match (case, next() % 3) {
                            (5, 0) => f32::from_bits(half.to_bits() - 1),
                            (5, 1) => f32::from_bits(half.to_bits() + 1),
                            _ => half,
                        };
                        *v = if next() % 2 == 0 { near } else { -near };
                    }
                    row[next() as usize % k] = bound;
                }
                6 => row.iter_mut().enumerate().for_each(|(i, v)| *v = if i % 2 == 0 { 0.0 } else { -0.0 }),
                7 => row.iter_mut().for_each(|v| *v *= 1e-36),
                8 => row.iter_mut().step_by(2).for_each(|v| *v *= 1e-40),
                _ => {}
            }
            let (mut want, mut got) = (vec![7i16; k + 8], vec![7i16; k + 8]);
            let (s_want, s_got) = (quantize_plain(&row, bound, &mut want), quantize(&row, bound, &mut got));
            if s_want.to_bits() != s_got.to_bits() || want != got {
                return Err(format!("the rounding of activations differs from the plain one at k {k}, case {case}"));
            }
        }
    }
    Ok(())
}

/// Bit for bit, a NaN against a NaN (its payload is the machine's to choose).
fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The values `check_gelu` puts through each implementation: the special ones, the erf
/// polynomial's whole range and past it, and values next to zero.
fn gelu_values() -> Vec<f32> {
    let mut v = vec![0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, 1e-40, -1e-40, 1e-30, -3.5, 3.5, 10.0, -10.0, 1e6, -1e6];
    v.extend((-2000..=2000).map(|i| i as f32 * 0.004_37));
    // A multiple of eight, so that every value goes through the vectors too.
    v.extend([0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0][..(8 - v.len() % 8) % 8].iter());
    v
}

/// Whether this machine's vector GELU equals the plain one value for value (a NaN against a NaN),
/// and in WebAssembly tract's too.
pub(super) fn check_gelu() -> Result<(), String> {
    use super::gelu::gelu;
    let values = gelu_values();
    #[allow(unused_mut)]
    let mut got: Vec<f32> = values.iter().map(|&x| gelu(x)).collect();
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    gelu_on::<crate::lanes::wasm::W>(&values, &mut got);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present.
        unsafe { gelu_avx2(&values, &mut got) };
    }
    if let Some((x, g)) = values.iter().zip(&got).find(|(x, g)| !same(gelu(**x), **g)) {
        return Err(format!("GELU of {x} is {g} in vectors, {} in plain code", gelu(*x)));
    }
    // In the page, also tract's own `GeluExact` (its WebAssembly erf kernel), which ran there
    // before GELU moved into the products: the same bits, so the page's vectors kept theirs.
    // Natively tract fuses its erf's multiply-adds, so there it differs in the last bits.
    #[cfg(target_arch = "wasm32")]
    {
        use tract_onnx::prelude::Tensor;
        use tract_onnx::tract_core::ops::element_wise::ElementWiseMiniOp;
        let mut t = Tensor::from_shape(&[values.len()], &values).map_err(|e| e.to_string())?;
        tract_onnx::tract_core::ops::nn::GeluExact {}.eval_in_place(&mut t, None).map_err(|e| format!("tract's GELU: {e}"))?;
        let plain = t.try_as_plain_ram().map_err(|e| e.to_string())?;
        let tract = plain.as_slice::<f32>().map_err(|e| e.to_string())?;
        if let Some(((x, g), t)) = values.iter().zip(&got).zip(tract).find(|((_, g), t)| !same(**g, **t)) {
            return Err(format!("GELU of {x} is {g} here, {t} in tract"));
        }
    }
    Ok(())
}

/// [`super::gelu::gelu_lanes`] on lanes `L`, eight values at a time (`values` is a multiple of 8).
#[cfg_attr(not(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128"))), allow(dead_code))]
#[inline(always)]
fn gelu_on<L: crate::lanes::Lanes>(values: &[f32], got: &mut [f32]) {
    for (c, out) in values.chunks_exact(8).zip(got.chunks_exact_mut(8)) {
        // SAFETY: `c` and `out` are eight f32 each.
        unsafe { super::gelu::gelu_lanes(L::load(c.as_ptr())).store(out.as_mut_ptr()) };
    }
}

/// [`gelu_on`] AVX2's lanes, compiled for AVX2 so that their instructions are inlined into it.
/// SAFETY: the caller checks that AVX2 is present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gelu_avx2(values: &[f32], got: &mut [f32]) {
    gelu_on::<crate::lanes::avx2::A>(values, got)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_machines_kernel_equals_the_plain_one() {
        super::check().unwrap();
    }
}
