//! The integer product `acc[m][j] = Σ_k a[m][k] · w[k][j]` of 16-bit activations by 8-bit
//! weights into 32-bit sums, on whatever the machine has: WebAssembly SIMD (`i32x4.dot_i16x8_s`:
//! eight multiply-adds an instruction, against four for an f32x4 multiply and add), AVX2
//! natively (`vpmaddwd`: sixteen), or plain Rust; each block of sums is scaled to f32 as it
//! leaves the registers ([`Scaling`]). The sums are exact integers and the scaling is the same
//! f32 operations in the same order in every kernel, so every kernel gives the same bits for the
//! same inputs (a test holds each one to the plain one).
//!
//! Layout (the weights are packed once, when the model is loaded): panels of [`PANEL`] columns;
//! within a panel, for each pair of rows of `w` (k, k+1), the panel's columns as pairs
//! `(w[k][j], w[k+1][j])`. A pair of activations `(a[m][k], a[m][k+1])` read as one 32-bit word
//! and broadcast to every lane then meets a panel row in one pairwise multiply-add. Activation
//! rows are `2 · pairs` long (odd K padded with a zero); columns past N are zero.
//!
//! Also here, since every product's input passes through it: the rounding of a row of f32
//! activations to those 16-bit integers ([`quantize`]), in vectors where the machine has them.

/// Columns of a panel: two WebAssembly vectors of four 32-bit sums, one AVX2 vector of eight.
pub(crate) const PANEL: usize = 8;

/// Panels a kernel takes at a time: every block of rows meets the group's panels before the next
/// block comes. The block's rows (K · 8 bytes for four) stay in the nearest cache while they do,
/// the group's panels (K · 128 bytes) in the next, and each row's 64 sums are written as 256
/// bytes in a row, where panel by panel under every row read all the rows again for each panel
/// and wrote a row's sums 32 bytes at a time, each to another cache line than the row's last.
/// For 256 rows with K = 384 and N = 1,536 that was about 40% slower in a stand-alone copy of the
/// WebAssembly kernel, and the product about 15% slower in the page (docs/benchmarks.md).
pub(crate) const GROUP: usize = 8;

/// The weights, packed for the kernels.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Packed {
    /// Rows of `w` (the activations' length) and its columns (the outputs').
    pub k: usize,
    pub n: usize,
    /// Pairs of rows: ⌈k / 2⌉.
    pub pairs: usize,
    /// [panel][pair][column][2].
    pub data: Vec<i16>,
}

impl Packed {
    /// Packs `w(k, j)` for k < `k`, j < `n`.
    pub fn new(k: usize, n: usize, w: impl Fn(usize, usize) -> i16) -> Packed {
        let pairs = k.div_ceil(2);
        let panels = n.div_ceil(PANEL);
        let mut data = vec![0i16; panels * pairs * PANEL * 2];
        for p in 0..panels {
            for q in 0..pairs {
                for c in 0..PANEL {
                    let j = p * PANEL + c;
                    for h in 0..2 {
                        let kk = 2 * q + h;
                        if j < n && kk < k {
                            data[((p * pairs + q) * PANEL + c) * 2 + h] = w(kk, j);
                        }
                    }
                }
            }
        }
        Packed { k, n, pairs, data }
    }

    fn panels(&self) -> usize {
        self.n.div_ceil(PANEL)
    }

    /// Panel `p`'s values.
    fn panel(&self, p: usize) -> &[i16] {
        &self.data[p * self.pairs * PANEL * 2..(p + 1) * self.pairs * PANEL * 2]
    }
}

/// What turns row m's exact sum for column j into the product's value:
/// `sum as f32 · rows[m] · cols[j]`, then `+ bias[j]` where there is a bias, then GELU where
/// asked ([`super::gelu`]), these f32 operations in this order in every kernel (none fused), so
/// that all give the same bits.
///
/// Why here and not in a pass after the product: the sums then never go to memory. Stand-alone,
/// scaling as the sums leave the registers, straight into the output tensor, took about a tenth
/// off a 256 × 384 × 1,536 product in WebAssembly (docs/benchmarks.md).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scaling<'a> {
    /// Each row's scale (its activations' rounding, [`quantize`]).
    pub rows: &'a [f32],
    /// Each column's scale (the int8 weights').
    pub cols: &'a [f32],
    pub bias: Option<&'a [f32]>,
    pub gelu: bool,
}

impl Scaling<'_> {
    #[inline(always)]
    fn value(&self, sum: i32, m: usize, j: usize) -> f32 {
        let v = sum as f32 * self.rows[m] * self.cols[j];
        let v = match self.bias {
            Some(b) => v + b[j],
            None => v,
        };
        if self.gelu {
            super::gelu::gelu(v)
        } else {
            v
        }
    }
}

/// `out[m · n + j]` = row m's `Σ_k a[m · 2·pairs + k] · w[k][j]`, scaled by `scaling`, for `rows`
/// rows of `a`: every value of `out[..rows · n]` written (the operation's output is not zeroed
/// first; `check` starts from other values). The caller keeps every sum within i32
/// (`super::activation_bound`).
pub(crate) fn product(a: &[i16], rows: usize, w: &Packed, scaling: &Scaling, out: &mut [f32]) {
    assert!(a.len() >= rows * 2 * w.pairs && out.len() >= rows * w.n, "product: buffers too short");
    assert!(scaling.rows.len() >= rows && scaling.cols.len() >= w.n && scaling.bias.is_none_or(|b| b.len() >= w.n), "product: scales too short");
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return wasm::product(a, rows, w, scaling, out);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked above); the lengths were checked above.
        return unsafe { avx2::product(a, rows, w, scaling, out) };
    }
    #[allow(unreachable_code)]
    plain(a, rows, w, scaling, out)
}

/// The same in plain Rust: what every other kernel must equal.
pub(crate) fn plain(a: &[i16], rows: usize, w: &Packed, scaling: &Scaling, out: &mut [f32]) {
    let len = 2 * w.pairs;
    for m in 0..rows {
        let row = &a[m * len..(m + 1) * len];
        for p in 0..w.panels() {
            let panel = w.panel(p);
            let mut acc = [0i32; PANEL];
            for (q, pair) in row.chunks_exact(2).enumerate() {
                let ws = &panel[q * PANEL * 2..(q + 1) * PANEL * 2];
                for c in 0..PANEL {
                    acc[c] += pair[0] as i32 * ws[2 * c] as i32 + pair[1] as i32 * ws[2 * c + 1] as i32;
                }
            }
            write_block(&acc, m, p, scaling, w.n, out);
        }
    }
}

/// One row's sums for panel `p`, scaled, into `out`, the columns past `n` left out.
fn write_block(acc: &[i32; PANEL], m: usize, p: usize, scaling: &Scaling, n: usize, out: &mut [f32]) {
    let j0 = p * PANEL;
    let width = PANEL.min(n - j0);
    for (c, (o, &sum)) in out[m * n + j0..m * n + j0 + width].iter_mut().zip(acc).enumerate() {
        *o = scaling.value(sum, m, j0 + c);
    }
}

/// Rounds a row of activations to integers of at most `bound` in magnitude under the row's own
/// scale `s = max |v| / bound`: `out[i] = v[i] / s` rounded half away from zero. Returns `s`; a
/// row with a value that is not finite returns NaN, and one whose scale would not be a normal f32
/// (its largest value under `bound` times the smallest normal f32, about 10⁻³⁴) returns 0, both
/// leaving `out` as it was.
///
/// One pass a row over K values against K · N multiply-adds, yet in the page the plain loop (the
/// largest value and the rounding a value at a time) was slow enough that doing it in vectors cut
/// the products by about a fifth; stand-alone, the vector loop is 4–6 times quicker
/// (docs/benchmarks.md). Every implementation makes the same IEEE operations a value (a division,
/// an addition of ±½, a truncation), so they agree to the bit with [`quantize_plain`]
/// ([`super::check::check`]).
pub(crate) fn quantize(row: &[f32], bound: f32, out: &mut [i16]) -> f32 {
    assert!(out.len() >= row.len(), "quantize: output too short");
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return wasm::quantize(row, bound, out);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86-64; the length was checked above.
    return unsafe { sse2::quantize(row, bound, out) };
    #[allow(unreachable_code)]
    quantize_plain(row, bound, out)
}

/// [`quantize`] in plain Rust, a value at a time: what every other implementation must equal.
pub(crate) fn quantize_plain(row: &[f32], bound: f32, out: &mut [i16]) -> f32 {
    if !row.iter().all(|v| v.is_finite()) {
        // As an f32 product would, the row's outputs are then not numbers.
        return f32::NAN;
    }
    let top = row.iter().fold(0f32, |t, v| t.max(v.abs()));
    match scale(top, bound) {
        Some(s) => {
            for (q, &v) in out.iter_mut().zip(row) {
                *q = round(v, s);
            }
            s
        }
        None => 0.0,
    }
}

/// The scale for a row whose largest magnitude is `top`, if it is a normal f32: rounded under a
/// subnormal scale, a row's integers could pass the bound (its products are below 10⁻³¹ anyway).
#[inline(always)]
fn scale(top: f32, bound: f32) -> Option<f32> {
    let s = top / bound;
    (s >= f32::MIN_POSITIVE).then_some(s)
}

/// The largest magnitude of a row from its vector part's four lanes of largest magnitudes
/// (`finite`: whether every value they saw was finite) and its last values, or None if a value is
/// not finite.
#[cfg_attr(not(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128"))), allow(dead_code))]
#[inline(always)]
fn largest(lanes: [f32; 4], finite: bool, tail: &[f32]) -> Option<f32> {
    let mut top = lanes.into_iter().fold(0f32, f32::max);
    let mut finite = finite;
    for &v in tail {
        finite &= v.is_finite();
        top = top.max(v.abs());
    }
    finite.then_some(top)
}

/// [`round`] on the values from `from` on: the tail a vector loop leaves.
#[cfg_attr(not(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128"))), allow(dead_code))]
#[inline(always)]
fn round_from(from: usize, row: &[f32], s: f32, out: &mut [i16]) {
    for (q, &v) in out[from..row.len()].iter_mut().zip(&row[from..]) {
        *q = round(v, s);
    }
}

/// `v / s` to the integer half away from zero (`r + ½` with r's sign, itself rounded, then
/// truncated): |result| ≤ bound for |v| ≤ bound · s.
#[inline(always)]
fn round(v: f32, s: f32) -> i16 {
    let r = v / s;
    (r + 0.5f32.copysign(r)) as i16
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm {
    use super::{write_block, Packed, Scaling, GROUP, PANEL};
    use core::arch::wasm32::*;

    /// Blocks of four rows by one panel: eight accumulators, two panel vectors and the broadcast
    /// pair in the sixteen vector registers V8 has on x86-64; panels in groups of [`GROUP`] (see
    /// there).
    ///
    /// Written out by hand, each accumulator a variable of its own: the worker is built for size
    /// (`opt-level = "s"`, fat LTO), and there a loop over an array of accumulators kept them in
    /// memory, at about half the speed (docs/benchmarks.md).
    pub(super) fn product(a: &[i16], rows: usize, w: &Packed, scaling: &Scaling, out: &mut [f32]) {
        let len = 2 * w.pairs;
        for group in (0..w.panels()).step_by(GROUP) {
            let panels = group..(group + GROUP).min(w.panels());
            let mut m = 0;
            while m + 4 <= rows {
                for p in panels.clone() {
                    four_rows(&a[m * len..(m + 4) * len], w, p, m, scaling, out);
                }
                m += 4;
            }
            for m in m..rows {
                for p in panels.clone() {
                    one_row(&a[m * len..(m + 1) * len], w, p, m, scaling, out);
                }
            }
        }
    }

    /// Rows m..m + 4 (`block`) by panel `p`, into `out`.
    #[inline(always)]
    fn four_rows(block: &[i16], w: &Packed, p: usize, m: usize, scaling: &Scaling, out: &mut [f32]) {
        let (len, panel) = (2 * w.pairs, w.panel(p));
        let z = i32x4_splat(0);
        let (mut a00, mut a01, mut a10, mut a11, mut a20, mut a21, mut a30, mut a31) = (z, z, z, z, z, z, z, z);
        for q in 0..w.pairs {
            // SAFETY: `panel` holds `pairs · PANEL · 2` values, so 16 from q · 16 are in it;
            // `block` holds 4 rows of `len` = 2 · pairs values, so the pair at 2q of each is in
            // it. Unaligned loads are allowed in WebAssembly.
            unsafe {
                let wp = panel.as_ptr().add(q * PANEL * 2);
                let (w0, w1) = (v128_load(wp as *const v128), v128_load(wp.add(PANEL) as *const v128));
                let ap = block.as_ptr().add(2 * q);
                let x = v128_load32_splat(ap as *const u32);
                a00 = i32x4_add(a00, i32x4_dot_i16x8(x, w0));
                a01 = i32x4_add(a01, i32x4_dot_i16x8(x, w1));
                let x = v128_load32_splat(ap.add(len) as *const u32);
                a10 = i32x4_add(a10, i32x4_dot_i16x8(x, w0));
                a11 = i32x4_add(a11, i32x4_dot_i16x8(x, w1));
                let x = v128_load32_splat(ap.add(2 * len) as *const u32);
                a20 = i32x4_add(a20, i32x4_dot_i16x8(x, w0));
                a21 = i32x4_add(a21, i32x4_dot_i16x8(x, w1));
                let x = v128_load32_splat(ap.add(3 * len) as *const u32);
                a30 = i32x4_add(a30, i32x4_dot_i16x8(x, w0));
                a31 = i32x4_add(a31, i32x4_dot_i16x8(x, w1));
            }
        }
        for (r, (lo, hi)) in [(a00, a01), (a10, a11), (a20, a21), (a30, a31)].into_iter().enumerate() {
            store(lo, hi, m + r, p, scaling, w.n, out);
        }
    }

    /// Row m (`row`) by panel `p`, into `out`.
    #[inline(always)]
    fn one_row(row: &[i16], w: &Packed, p: usize, m: usize, scaling: &Scaling, out: &mut [f32]) {
        let panel = w.panel(p);
        let (mut lo, mut hi) = (i32x4_splat(0), i32x4_splat(0));
        for q in 0..w.pairs {
            // SAFETY: as in `four_rows`, for one row.
            unsafe {
                let wp = panel.as_ptr().add(q * PANEL * 2);
                let x = v128_load32_splat(row.as_ptr().add(2 * q) as *const u32);
                lo = i32x4_add(lo, i32x4_dot_i16x8(x, v128_load(wp as *const v128)));
                hi = i32x4_add(hi, i32x4_dot_i16x8(x, v128_load(wp.add(PANEL) as *const v128)));
            }
        }
        store(lo, hi, m, p, scaling, w.n, out);
    }

    /// [`super::quantize`], four values a vector: the largest magnitude by `pmax` (a NaN lane
    /// never gets into it, since `pmax` keeps its first operand when the comparison fails; the
    /// same pass marks the row not finite), then eight values at a time divided, given ±½ by
    /// their sign bit, truncated (saturating, as Rust's `as` is) and narrowed to 16 bits (in
    /// range: |r + ½| < bound + 1).
    pub(super) fn quantize(row: &[f32], bound: f32, out: &mut [i16]) -> f32 {
        let (k, p) = (row.len(), row.as_ptr());
        let (mut top, mut bad, inf) = (f32x4_splat(0.0), i32x4_splat(0), f32x4_splat(f32::INFINITY));
        for c in 0..k / 4 {
            // SAFETY: values 4c..4c + 4 are in `row`; unaligned loads are allowed.
            let v = f32x4_abs(unsafe { v128_load(p.add(4 * c) as *const v128) });
            bad = v128_or(bad, v128_not(f32x4_lt(v, inf)));
            top = f32x4_pmax(top, v);
        }
        let lanes = [f32x4_extract_lane::<0>(top), f32x4_extract_lane::<1>(top), f32x4_extract_lane::<2>(top), f32x4_extract_lane::<3>(top)];
        let Some(top) = super::largest(lanes, !v128_any_true(bad), &row[k / 4 * 4..]) else { return f32::NAN };
        let Some(s) = super::scale(top, bound) else { return 0.0 };
        let (sv, half, sign) = (f32x4_splat(s), f32x4_splat(0.5), f32x4_splat(-0.0));
        let q = out.as_mut_ptr();
        for c in 0..k / 8 {
            // SAFETY: values 8c..8c + 8 are in `row`, and `out` is at least as long.
            unsafe {
                let r0 = f32x4_div(v128_load(p.add(8 * c) as *const v128), sv);
                let r1 = f32x4_div(v128_load(p.add(8 * c + 4) as *const v128), sv);
                let i0 = i32x4_trunc_sat_f32x4(f32x4_add(r0, v128_or(half, v128_and(r0, sign))));
                let i1 = i32x4_trunc_sat_f32x4(f32x4_add(r1, v128_or(half, v128_and(r1, sign))));
                v128_store(q.add(8 * c) as *mut v128, i16x8_narrow_i32x4(i0, i1));
            }
        }
        super::round_from(k / 8 * 8, row, s, out);
        s
    }

    /// Row m's eight sums for panel `p`, scaled, into `out`: in vectors (`f32x4.convert_i32x4_s`
    /// rounds to nearest, as Rust's `as f32` does; then the multiplications and the addition of
    /// [`Scaling`], unfused) unless the panel passes the last column.
    #[inline(always)]
    fn store(lo: v128, hi: v128, m: usize, p: usize, scaling: &Scaling, n: usize, out: &mut [f32]) {
        let j0 = p * PANEL;
        if j0 + PANEL > n {
            let mut sums = [0i32; PANEL];
            // SAFETY: `sums` holds eight i32, two vectors.
            unsafe {
                v128_store(sums.as_mut_ptr() as *mut v128, lo);
                v128_store(sums.as_mut_ptr().add(4) as *mut v128, hi);
            }
            return write_block(&sums, m, p, scaling, n, out);
        }
        let (cols, o) = (&scaling.cols[j0..j0 + PANEL], &mut out[m * n + j0..m * n + j0 + PANEL]);
        let s = f32x4_splat(scaling.rows[m]);
        // SAFETY: `cols` and `o` are eight f32 long, two vectors each (the slicing checked it);
        // unaligned loads and stores are allowed.
        unsafe {
            let mut v0 = f32x4_mul(f32x4_mul(f32x4_convert_i32x4(lo), s), v128_load(cols.as_ptr() as *const v128));
            let mut v1 = f32x4_mul(f32x4_mul(f32x4_convert_i32x4(hi), s), v128_load(cols.as_ptr().add(4) as *const v128));
            if let Some(bias) = scaling.bias {
                let b = &bias[j0..j0 + PANEL];
                v0 = f32x4_add(v0, v128_load(b.as_ptr() as *const v128));
                v1 = f32x4_add(v1, v128_load(b.as_ptr().add(4) as *const v128));
            }
            if scaling.gelu {
                let g = super::super::gelu::gelu_lanes(crate::lanes::wasm::W(v0, v1));
                (v0, v1) = (g.0, g.1);
            }
            v128_store(o.as_mut_ptr() as *mut v128, v0);
            v128_store(o.as_mut_ptr().add(4) as *mut v128, v1);
        }
    }
}

/// [`quantize`] with SSE2 (every x86-64 has it), as the WebAssembly one.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    /// SAFETY: `out` is at least as long as `row`.
    pub(super) unsafe fn quantize(row: &[f32], bound: f32, out: &mut [i16]) -> f32 {
        let (k, p) = (row.len(), row.as_ptr());
        let (abs, inf) = (_mm_castsi128_ps(_mm_set1_epi32(i32::MAX)), _mm_set1_ps(f32::INFINITY));
        let (mut top, mut finite) = (_mm_setzero_ps(), 0xf);
        for c in 0..k / 4 {
            let v = _mm_and_ps(_mm_loadu_ps(p.add(4 * c)), abs);
            finite &= _mm_movemask_ps(_mm_cmplt_ps(v, inf));
            top = _mm_max_ps(v, top);
        }
        let mut lanes = [0f32; 4];
        _mm_storeu_ps(lanes.as_mut_ptr(), top);
        let Some(top) = super::largest(lanes, finite == 0xf, &row[k / 4 * 4..]) else { return f32::NAN };
        let Some(s) = super::scale(top, bound) else { return 0.0 };
        let (sv, half, sign) = (_mm_set1_ps(s), _mm_set1_ps(0.5), _mm_set1_ps(-0.0));
        let q = out.as_mut_ptr();
        for c in 0..k / 8 {
            let r0 = _mm_div_ps(_mm_loadu_ps(p.add(8 * c)), sv);
            let r1 = _mm_div_ps(_mm_loadu_ps(p.add(8 * c + 4)), sv);
            let i0 = _mm_cvttps_epi32(_mm_add_ps(r0, _mm_or_ps(half, _mm_and_ps(r0, sign))));
            let i1 = _mm_cvttps_epi32(_mm_add_ps(r1, _mm_or_ps(half, _mm_and_ps(r1, sign))));
            _mm_storeu_si128(q.add(8 * c) as *mut __m128i, _mm_packs_epi32(i0, i1));
        }
        super::round_from(k / 8 * 8, row, s, out);
        s
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{write_block, Packed, Scaling, GROUP, PANEL};
    use std::arch::x86_64::*;

    /// Blocks of four rows by two panels (eight accumulators of eight sums), panels in groups of
    /// [`GROUP`] (as the WebAssembly kernel).
    /// SAFETY: the caller checks that AVX2 is present and the buffers' lengths.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn product(a: &[i16], rows: usize, w: &Packed, scaling: &Scaling, out: &mut [f32]) {
        for group in (0..w.panels()).step_by(GROUP) {
            let end = (group + GROUP).min(w.panels());
            let mut m = 0;
            while m + 4 <= rows {
                panels::<4>(a, m, group, end, w, scaling, out);
                m += 4;
            }
            for m in m..rows {
                panels::<1>(a, m, group, end, w, scaling, out);
            }
        }
    }

    /// Rows m..m + R by panels `from..to`, two at a time.
    #[target_feature(enable = "avx2")]
    unsafe fn panels<const R: usize>(a: &[i16], m: usize, from: usize, to: usize, w: &Packed, scaling: &Scaling, out: &mut [f32]) {
        let mut p = from;
        while p + 2 <= to {
            block::<R, 2>(a, m, p, w, scaling, out);
            p += 2;
        }
        if p < to {
            block::<R, 1>(a, m, p, w, scaling, out);
        }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn block<const R: usize, const P: usize>(a: &[i16], m: usize, p: usize, w: &Packed, scaling: &Scaling, out: &mut [f32]) {
        let len = 2 * w.pairs;
        let rows = &a[m * len..(m + R) * len];
        // No closures here: a closure does not inherit this function's target features, so an
        // intrinsic inside one would be a call.
        let mut panels: [&[i16]; P] = [&[]; P];
        for (i, panel) in panels.iter_mut().enumerate() {
            *panel = w.panel(p + i);
        }
        let mut acc = [[_mm256_setzero_si256(); P]; R];
        for q in 0..w.pairs {
            let mut ws = [_mm256_setzero_si256(); P];
            for (v, panel) in ws.iter_mut().zip(&panels) {
                // SAFETY: each panel holds `pairs · PANEL · 2` values: 16 from q · 16 are in it.
                *v = unsafe { _mm256_loadu_si256(panel.as_ptr().add(q * PANEL * 2) as *const __m256i) };
            }
            for (r, acc) in acc.iter_mut().enumerate() {
                // SAFETY: row r holds `len` = 2 · pairs values; the pair at 2q is in it.
                let pair = _mm256_set1_epi32(unsafe { (rows.as_ptr().add(r * len + 2 * q) as *const i32).read_unaligned() });
                for i in 0..P {
                    acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(pair, ws[i]));
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for (i, &v) in acc.iter().enumerate() {
                store(v, m + r, p + i, scaling, w.n, out);
            }
        }
    }

    /// Row m's eight sums for panel `p`, scaled, into `out`, as the WebAssembly kernel's `store`
    /// (`vcvtdq2ps` rounds to nearest under the default MXCSR, as Rust's `as f32` does).
    /// SAFETY: the caller checks that AVX2 is present; every load and store is on a slice of
    /// eight values cut (bounds-checked) just before it.
    #[target_feature(enable = "avx2")]
    unsafe fn store(sums: __m256i, m: usize, p: usize, scaling: &Scaling, n: usize, out: &mut [f32]) {
        let j0 = p * PANEL;
        if j0 + PANEL > n {
            let mut lanes = [0i32; PANEL];
            // SAFETY: `lanes` holds eight i32.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, sums) };
            return write_block(&lanes, m, p, scaling, n, out);
        }
        let (cols, o) = (&scaling.cols[j0..j0 + PANEL], &mut out[m * n + j0..m * n + j0 + PANEL]);
        // SAFETY: `cols` and `o` (and the bias's slice) are eight f32 long (the slicing checked it).
        unsafe {
            let mut v = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(sums), _mm256_set1_ps(scaling.rows[m])), _mm256_loadu_ps(cols.as_ptr()));
            if let Some(bias) = scaling.bias {
                v = _mm256_add_ps(v, _mm256_loadu_ps(bias[j0..j0 + PANEL].as_ptr()));
            }
            if scaling.gelu {
                v = super::super::gelu::gelu_lanes(crate::lanes::avx2::A(v)).0;
            }
            _mm256_storeu_ps(o.as_mut_ptr(), v);
        }
    }
}
