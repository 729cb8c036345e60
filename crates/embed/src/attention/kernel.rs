//! Attention for one batch: `out = softmax(Q·Kᵀ · scale + mask) · V`, head by head, item by item,
//! without the scores' tensor ever leaving a block of four query rows.
//!
//! One algorithm, written once over [`Lanes`] (eight f32 lanes): WebAssembly SIMD in the page,
//! AVX2 natively where the CPU has it, else SSE (x86-64's baseline), plain Rust elsewhere. Every
//! lane does the same IEEE operations in the same order (a multiply then an add, never fused; the
//! exponential below), and the one sum across lanes is written once, so the page and the CLI
//! compute the same bits. (A head size that is not a multiple of 8, which the bundled model's 32
//! is, takes [`plain`] instead, whose `f32::exp` is each platform's own.) [`plain`] is the textbook version (`f32::exp`,
//! one score at a time) that the tests and the page's model check hold the kernel to.
//!
//! Layout (as a BERT's heads leave Q, K and V): `q` is [items, queries, heads, dim], `k` and `v`
//! [items, keys, heads, dim], `out` as `q`; `mask`, if any, `keys` values added to every score of
//! an item (one set for every item, or one per item).

use crate::lanes::{self, Lanes};

/// The sizes of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    pub items: usize,
    pub queries: usize,
    pub keys: usize,
    pub heads: usize,
    pub dim: usize,
}

impl Shape {
    fn q_len(&self) -> usize {
        self.items * self.queries * self.heads * self.dim
    }

    fn kv_len(&self) -> usize {
        self.items * self.keys * self.heads * self.dim
    }
}

/// Where `mask` is given: `keys` values for every item, or `items · keys`.
fn mask_of<'m>(mask: Option<&'m [f32]>, sh: &Shape, item: usize) -> Option<&'m [f32]> {
    mask.map(|m| if m.len() == sh.keys { m } else { &m[item * sh.keys..(item + 1) * sh.keys] })
}

fn check_lengths(sh: &Shape, q: &[f32], k: &[f32], v: &[f32], mask: Option<&[f32]>, out: &[f32]) {
    let mask_ok = mask.is_none_or(|m| m.len() == sh.keys || m.len() == sh.items * sh.keys);
    assert!(
        q.len() == sh.q_len() && k.len() == sh.kv_len() && v.len() == sh.kv_len() && out.len() == sh.q_len() && mask_ok,
        "attention: buffers of the wrong length for {sh:?}"
    );
}

/// `out` for `q`, `k`, `v` (module docs), on this machine's lanes: every value of it written.
pub(crate) fn attend(sh: &Shape, q: &[f32], k: &[f32], v: &[f32], mask: Option<&[f32]>, scale: f32, out: &mut [f32]) {
    check_lengths(sh, q, k, v, mask, out);
    if sh.queries == 0 || sh.keys == 0 || sh.dim % 8 != 0 {
        return plain(sh, q, k, v, mask, scale, out);
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return blocks::<lanes::wasm::W>(sh, q, k, v, mask, scale, out);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present (checked above).
            return unsafe { blocks_avx2(sh, q, k, v, mask, scale, out) };
        }
        return blocks::<lanes::sse::S>(sh, q, k, v, mask, scale, out);
    }
    #[allow(unreachable_code)]
    blocks::<lanes::one::One>(sh, q, k, v, mask, scale, out)
}

/// The same, one score at a time with `f32::exp`: what [`attend`] must stay close to.
pub(crate) fn plain(sh: &Shape, q: &[f32], k: &[f32], v: &[f32], mask: Option<&[f32]>, scale: f32, out: &mut [f32]) {
    check_lengths(sh, q, k, v, mask, out);
    let (hd, d) = (sh.heads * sh.dim, sh.dim);
    let mut s = vec![0f32; sh.keys];
    for a in 0..sh.items {
        let m_a = mask_of(mask, sh, a);
        for h in 0..sh.heads {
            for i in 0..sh.queries {
                let qr = &q[(a * sh.queries + i) * hd + h * d..][..d];
                for (n, s) in s.iter_mut().enumerate() {
                    let kr = &k[(a * sh.keys + n) * hd + h * d..][..d];
                    let dot = qr.iter().zip(kr).fold(0f32, |t, (x, y)| t + x * y);
                    *s = dot * scale + m_a.map_or(0.0, |m| m[n]);
                }
                let top = s.iter().fold(f32::NEG_INFINITY, |t, &x| t.max(x));
                let mut sum = 0f32;
                s.iter_mut().for_each(|x| {
                    *x = (*x - top).exp();
                    sum += *x;
                });
                let o = &mut out[(a * sh.queries + i) * hd + h * d..][..d];
                o.fill(0.0);
                for (n, &e) in s.iter().enumerate() {
                    let vr = &v[(a * sh.keys + n) * hd + h * d..][..d];
                    o.iter_mut().zip(vr).for_each(|(o, &x)| *o += e * x);
                }
                let inv = 1.0 / sum;
                o.iter_mut().for_each(|o| *o *= inv);
            }
        }
    }
}

/// The algorithm (module docs), for each item and head:
/// 1. K of the head transposed into `kt` ([dim][keys padded to 8]), so that eight keys' scores
///    are one [`Lanes`];
/// 2. four query rows at a time (the last block repeats the last row): their scores against
///    every key, eight keys at a time (four accumulators), times `scale`, plus the mask, with
///    each row's largest score kept on the way; padded keys get -∞;
/// 3. each row's softmax without its division: e^(s - largest), and their sum;
/// 4. the rows times V, eight of the head's values at a time (four accumulators again), then
///    each row times 1 / its sum.
#[inline(always)]
fn blocks<L: Lanes>(sh: &Shape, q: &[f32], k: &[f32], v: &[f32], mask: Option<&[f32]>, scale: f32, out: &mut [f32]) {
    // What the unchecked loads and stores below rely on, besides the lengths.
    check_lengths(sh, q, k, v, mask, out);
    assert!(sh.queries > 0 && sh.dim % 8 == 0, "attention: blocks need queries and a head size that is a multiple of 8, not {sh:?}");
    let (hd, d) = (sh.heads * sh.dim, sh.dim);
    let padded = sh.keys.div_ceil(8) * 8;
    let mut kt = vec![0f32; d * padded];
    let mut sc = vec![0f32; 4 * padded];
    // The mask, padded with -∞ (a padded key's score: 0 · scale - ∞).
    let mut mp = vec![f32::NEG_INFINITY; padded];
    let scale_v = L::splat(scale);
    for a in 0..sh.items {
        let m_a = mask_of(mask, sh, a);
        for (n, x) in mp[..sh.keys].iter_mut().enumerate() {
            *x = m_a.map_or(0.0, |m| m[n]);
        }
        for h in 0..sh.heads {
            let base = a * sh.keys * hd + h * d;
            for n in 0..sh.keys {
                for (kk, &x) in k[base + n * hd..][..d].iter().enumerate() {
                    kt[kk * padded + n] = x;
                }
            }
            let mut i0 = 0;
            while i0 < sh.queries {
                let rows = [0, 1, 2, 3].map(|r| (i0 + r).min(sh.queries - 1));
                let q_at = |r: usize| (a * sh.queries + rows[r]) * hd + h * d;
                let (q0, q1, q2, q3) = (&q[q_at(0)..][..d], &q[q_at(1)..][..d], &q[q_at(2)..][..d], &q[q_at(3)..][..d]);
                let ninf = L::splat(f32::NEG_INFINITY);
                let (mut t0, mut t1, mut t2, mut t3) = (ninf, ninf, ninf, ninf);
                for n0 in (0..padded).step_by(8) {
                    let z = L::splat(0.0);
                    let (mut a0, mut a1, mut a2, mut a3) = (z, z, z, z);
                    for kk in 0..d {
                        // SAFETY: kt holds d · padded values; n0 + 8 ≤ padded.
                        let w = unsafe { L::load(kt.as_ptr().add(kk * padded + n0)) };
                        a0 = a0.add(L::splat(q0[kk]).mul(w));
                        a1 = a1.add(L::splat(q1[kk]).mul(w));
                        a2 = a2.add(L::splat(q2[kk]).mul(w));
                        a3 = a3.add(L::splat(q3[kk]).mul(w));
                    }
                    // SAFETY: mp holds `padded` values and sc 4 · padded; n0 + 8 ≤ padded.
                    unsafe {
                        let m = L::load(mp.as_ptr().add(n0));
                        let p = sc.as_mut_ptr().add(n0);
                        let (s0, s1, s2, s3) = (a0.mul(scale_v).add(m), a1.mul(scale_v).add(m), a2.mul(scale_v).add(m), a3.mul(scale_v).add(m));
                        s0.store(p);
                        s1.store(p.add(padded));
                        s2.store(p.add(2 * padded));
                        s3.store(p.add(3 * padded));
                        (t0, t1, t2, t3) = (t0.max(s0), t1.max(s1), t2.max(s2), t3.max(s3));
                    }
                }
                let mut inv = [0f32; 4];
                for (r, top) in [t0, t1, t2, t3].into_iter().enumerate() {
                    let top = L::splat(top.lanes().into_iter().fold(f32::NEG_INFINITY, f32::max));
                    let mut sum = L::splat(0.0);
                    for c in sc[r * padded..(r + 1) * padded].chunks_exact_mut(8) {
                        // SAFETY: a chunk holds eight values.
                        unsafe {
                            let e = L::load(c.as_ptr()).sub(top).exp_neg();
                            e.store(c.as_mut_ptr());
                            sum = sum.add(e);
                        }
                    }
                    inv[r] = 1.0 / sum.sum();
                }
                for d0 in (0..d).step_by(8) {
                    let z = L::splat(0.0);
                    let (mut a0, mut a1, mut a2, mut a3) = (z, z, z, z);
                    for n in 0..sh.keys {
                        // SAFETY: V's row n of item a holds hd values from base + n · hd, and
                        // h · d + d0 + 8 ≤ hd; sc holds 4 rows of `padded` ≥ keys.
                        unsafe {
                            let w = L::load(v.as_ptr().add(base + n * hd + d0));
                            let s = sc.as_ptr().add(n);
                            a0 = a0.add(L::splat(*s).mul(w));
                            a1 = a1.add(L::splat(*s.add(padded)).mul(w));
                            a2 = a2.add(L::splat(*s.add(2 * padded)).mul(w));
                            a3 = a3.add(L::splat(*s.add(3 * padded)).mul(w));
                        }
                    }
                    let valid = (sh.queries - i0).min(4);
                    for (r, acc) in [a0, a1, a2, a3].into_iter().enumerate().take(valid) {
                        // SAFETY: out's row holds hd values from q_at(r), and h · d + d0 + 8 ≤ hd.
                        unsafe { acc.mul(L::splat(inv[r])).store(out.as_mut_ptr().add(q_at(r) + d0)) };
                    }
                }
                i0 += 4;
            }
        }
    }
}

/// [`blocks`] on AVX2's lanes, compiled for AVX2 so that their instructions are inlined into it.
/// SAFETY: the caller checks that AVX2 is present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn blocks_avx2(sh: &Shape, q: &[f32], k: &[f32], v: &[f32], mask: Option<&[f32]>, scale: f32, out: &mut [f32]) {
    blocks::<lanes::avx2::A>(sh, q, k, v, mask, scale, out)
}

/// Whether this machine's kernel ([`attend`]) stays within 10⁻⁵ of [`plain`] (for |V| ≤ 1) and
/// gives the same bits as the plain-Rust lanes (natively, SSE's as well), on shapes with key and
/// query counts not a multiple of a block, with and without a mask, one mask for all items and
/// one each, and large scores. The unit tests run it natively (AVX2 or SSE); the page's model
/// check runs it in the worker (WebAssembly SIMD). Err says where the first difference is.
pub fn check() -> Result<(), String> {
    let mut word = crate::draws::xorshift32(0x2545_f491);
    // In [-1, 1): the word's top 24 bits, exact in an f32.
    let mut next = move || (word() >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0;
    let cases = [(1, 1, 1, 1, 8, 0), (2, 5, 7, 3, 8, 1), (2, 9, 13, 2, 32, 2), (1, 4, 8, 1, 16, 0), (3, 6, 6, 2, 8, 2), (1, 33, 33, 2, 32, 1)];
    for (items, queries, keys, heads, dim, masks) in cases {
        let sh = Shape { items, queries, keys, heads, dim };
        let wide = if masks == 2 { 12.0 } else { 3.0 };
        let q: Vec<f32> = (0..sh.q_len()).map(|_| next() * wide).collect();
        let k: Vec<f32> = (0..sh.kv_len()).map(|_| next() * wide).collect();
        let v: Vec<f32> = (0..sh.kv_len()).map(|_| next()).collect();
        let mask: Option<Vec<f32>> = match masks {
            0 => None,
            1 => Some((0..keys).map(|n| if n % 3 == 2 { -10_000.0 } else { 0.0 }).collect()),
            _ => Some((0..items * keys).map(|i| if (i * 7) % 5 == 1 && i % keys != 0 { -10_000.0 } else { next() }).collect()),
        };
        // The kernels' outputs start as NaN: a value one left unwritten fails the comparison
        // with the plain code below (the operation's output is not zeroed before the kernel
        // writes it).
        let (mut want, mut got, mut plain_lanes) = (vec![0f32; sh.q_len()], vec![f32::NAN; sh.q_len()], vec![f32::NAN; sh.q_len()]);
        plain(&sh, &q, &k, &v, mask.as_deref(), 0.177, &mut want);
        attend(&sh, &q, &k, &v, mask.as_deref(), 0.177, &mut got);
        if sh.queries > 0 && sh.keys > 0 && sh.dim % 8 == 0 {
            blocks::<lanes::one::One>(&sh, &q, &k, &v, mask.as_deref(), 0.177, &mut plain_lanes);
            if got.iter().zip(&plain_lanes).any(|(a, b)| a.to_bits() != b.to_bits()) {
                return Err(format!("attention: the kernel's bits differ from the plain lanes' at {sh:?}"));
            }
            // Natively, SSE too (the kernel above is AVX2's where the machine has it).
            #[cfg(target_arch = "x86_64")]
            {
                let mut sse = vec![f32::NAN; sh.q_len()];
                blocks::<lanes::sse::S>(&sh, &q, &k, &v, mask.as_deref(), 0.177, &mut sse);
                if sse.iter().zip(&plain_lanes).any(|(a, b)| a.to_bits() != b.to_bits()) {
                    return Err(format!("attention: SSE's bits differ from the plain lanes' at {sh:?}"));
                }
            }
        }
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            if !((g - w).abs() <= 1e-5) {
                return Err(format!("attention: {g} against {w} at {i} of {sh:?}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machines_kernel_equals_the_lanes_and_stays_near_the_plain_one() {
        check().unwrap();
    }

    #[test]
    fn the_exponential_is_within_two_ulp() {
        let mut worst = 0u32;
        let mut x = 0f32;
        while x > -87.3 {
            let got = <lanes::one::One as Lanes>::splat(x).exp_neg().lanes()[0];
            let want = x.exp();
            worst = worst.max(got.to_bits().abs_diff(want.to_bits()));
            x -= 0.000_73;
        }
        assert!(worst <= 2, "{worst} ulp");
        let at = |x: f32| <lanes::one::One as Lanes>::splat(x).exp_neg().lanes()[0];
        assert_eq!(at(0.0), 1.0);
        assert_eq!(at(-100.0), 0.0);
        assert_eq!(at(f32::NEG_INFINITY), 0.0);
        assert!(at(f32::NAN).is_nan());
    }

    #[test]
    fn an_item_reads_its_own_rows_and_mask_only() {
        let sh = Shape { items: 2, queries: 5, keys: 5, heads: 2, dim: 8 };
        let wave = |n: usize, f: f32| (0..n).map(|i| (i as f32 * f).sin() * 2.0).collect::<Vec<f32>>();
        let (mut q, mut k, mut v) = (wave(sh.q_len(), 0.37), wave(sh.kv_len(), 0.11), wave(sh.kv_len(), 0.23));
        let mut mask = vec![0f32; 2 * sh.keys];
        mask[3] = -10_000.0;
        let mut out = vec![0f32; sh.q_len()];
        attend(&sh, &q, &k, &v, Some(&mask), 0.5, &mut out);
        let bits = |o: &[f32]| o.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        let first = bits(&out[..sh.q_len() / 2]);
        // Everything of the second item changed, a NaN in its V included: the first item's
        // outputs keep their bits, and the second's are not numbers.
        let (half_q, half_kv) = (sh.q_len() / 2, sh.kv_len() / 2);
        q[half_q..].iter_mut().for_each(|x| *x = -*x * 3.0);
        k[half_kv..].iter_mut().for_each(|x| *x += 1.5);
        v[half_kv..].iter_mut().for_each(|x| *x *= 7.0);
        v[half_kv + 3] = f32::NAN;
        mask[sh.keys..].iter_mut().for_each(|x| *x = -5.0);
        attend(&sh, &q, &k, &v, Some(&mask), 0.5, &mut out);
        assert_eq!(first, bits(&out[..half_q]));
        assert!(out[half_q..].iter().any(|x| x.is_nan()));
    }
}
