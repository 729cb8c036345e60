//! The integer product `acc[m][j] = Σ_k a[m][k] · w[k][j]` of 16-bit activations by 8-bit
//! weights into 32-bit sums, on whatever the machine has: WebAssembly SIMD (`i32x4.dot_i16x8_s`:
//! eight multiply-adds an instruction, against four for an f32x4 multiply and add), AVX2
//! natively (`vpmaddwd`: sixteen), or plain Rust. The sums are exact integers, so every kernel
//! gives the same bits for the same inputs (a test holds each one to the plain one).
//!
//! Layout (the weights are packed once, when the model is loaded): panels of [`PANEL`] columns;
//! within a panel, for each pair of rows of `w` (k, k+1), the panel's columns as pairs
//! `(w[k][j], w[k+1][j])`. A pair of activations `(a[m][k], a[m][k+1])` read as one 32-bit word
//! and broadcast to every lane then meets a panel row in one pairwise multiply-add. Activation
//! rows are `2 · pairs` long (odd K padded with a zero); columns past N are zero.

/// Columns of a panel: two WebAssembly vectors of four 32-bit sums, one AVX2 vector of eight.
pub(crate) const PANEL: usize = 8;

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

/// `out[m · n + j] = Σ_k a[m · 2·pairs + k] · w[k][j]` for `rows` rows of `a`.
/// The caller keeps every sum within i32 (`super::activation_bound`).
pub(crate) fn product(a: &[i16], rows: usize, w: &Packed, out: &mut [i32]) {
    assert!(a.len() >= rows * 2 * w.pairs && out.len() >= rows * w.n, "product: buffers too short");
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return wasm::product(a, rows, w, out);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked above); the lengths were checked above.
        return unsafe { avx2::product(a, rows, w, out) };
    }
    #[allow(unreachable_code)]
    plain(a, rows, w, out)
}

/// The same in plain Rust: what every other kernel must equal.
pub(crate) fn plain(a: &[i16], rows: usize, w: &Packed, out: &mut [i32]) {
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
            write_block(&acc, m, p, w.n, out);
        }
    }
}

/// One row's sums for panel `p` into `out`, the columns past `n` left out.
fn write_block(acc: &[i32; PANEL], m: usize, p: usize, n: usize, out: &mut [i32]) {
    let j0 = p * PANEL;
    let width = PANEL.min(n - j0);
    out[m * n + j0..m * n + j0 + width].copy_from_slice(&acc[..width]);
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm {
    use super::{write_block, Packed, PANEL};
    use core::arch::wasm32::*;

    /// Blocks of four rows by one panel: eight accumulators, two panel vectors and the broadcast
    /// pair in the sixteen vector registers V8 has on x86-64. Panel by panel, every row under
    /// each: a panel (K · 16 bytes) stays in the nearest cache while the rows pass it.
    ///
    /// Written out by hand, each accumulator a variable of its own: the worker is built for size
    /// (`opt-level = "s"`, fat LTO), and there a loop over an array of accumulators kept them in
    /// memory, at about half the speed (docs/benchmarks.md).
    pub(super) fn product(a: &[i16], rows: usize, w: &Packed, out: &mut [i32]) {
        let len = 2 * w.pairs;
        for p in 0..w.panels() {
            let panel = w.panel(p);
            let mut m = 0;
            while m + 4 <= rows {
                let block = &a[m * len..(m + 4) * len];
                let z = i32x4_splat(0);
                let (mut a00, mut a01, mut a10, mut a11, mut a20, mut a21, mut a30, mut a31) = (z, z, z, z, z, z, z, z);
                for q in 0..w.pairs {
                    // SAFETY: `panel` holds `pairs · PANEL · 2` values, so 16 from q · 16 are in
                    // it; `block` holds 4 rows of `len` = 2 · pairs values, so the pair at 2q of
                    // each is in it. Unaligned loads are allowed in WebAssembly.
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
                    store(lo, hi, m + r, p, w.n, out);
                }
                m += 4;
            }
            while m < rows {
                let row = &a[m * len..(m + 1) * len];
                let (mut lo, mut hi) = (i32x4_splat(0), i32x4_splat(0));
                for q in 0..w.pairs {
                    // SAFETY: as above, for one row.
                    unsafe {
                        let wp = panel.as_ptr().add(q * PANEL * 2);
                        let x = v128_load32_splat(row.as_ptr().add(2 * q) as *const u32);
                        lo = i32x4_add(lo, i32x4_dot_i16x8(x, v128_load(wp as *const v128)));
                        hi = i32x4_add(hi, i32x4_dot_i16x8(x, v128_load(wp.add(PANEL) as *const v128)));
                    }
                }
                store(lo, hi, m, p, w.n, out);
                m += 1;
            }
        }
    }

    /// A row's eight sums for panel `p` into `out`.
    fn store(lo: v128, hi: v128, m: usize, p: usize, n: usize, out: &mut [i32]) {
        let mut sums = [0i32; PANEL];
        // SAFETY: `sums` holds eight i32, two vectors.
        unsafe {
            v128_store(sums.as_mut_ptr() as *mut v128, lo);
            v128_store(sums.as_mut_ptr().add(4) as *mut v128, hi);
        }
        write_block(&sums, m, p, n, out);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{write_block, Packed, PANEL};
    use std::arch::x86_64::*;

    /// Blocks of four rows by two panels (eight accumulators of eight sums), two panels at a
    /// time with every row under them (as the WebAssembly kernel).
    /// SAFETY: the caller checks that AVX2 is present and the buffers' lengths.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn product(a: &[i16], rows: usize, w: &Packed, out: &mut [i32]) {
        let mut p = 0;
        while p + 2 <= w.panels() {
            panels::<2>(a, rows, p, w, out);
            p += 2;
        }
        if p < w.panels() {
            panels::<1>(a, rows, p, w, out);
        }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn panels<const P: usize>(a: &[i16], rows: usize, p: usize, w: &Packed, out: &mut [i32]) {
        let mut m = 0;
        while m + 4 <= rows {
            block::<4, P>(a, m, p, w, out);
            m += 4;
        }
        while m < rows {
            block::<1, P>(a, m, p, w, out);
            m += 1;
        }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn block<const R: usize, const P: usize>(a: &[i16], m: usize, p: usize, w: &Packed, out: &mut [i32]) {
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
            for (i, v) in acc.iter().enumerate() {
                let mut sums = [0i32; PANEL];
                // SAFETY: `sums` holds eight i32.
                unsafe { _mm256_storeu_si256(sums.as_mut_ptr() as *mut __m256i, *v) };
                write_block(&sums, m + r, p + i, w.n, out);
            }
        }
    }
}

/// Whether the kernel this machine runs ([`product`]) equals the plain one, bit for bit, and the
/// plain one the exact product, on shapes with odd K, N not a multiple of a panel (nor of two),
/// row counts not a multiple of a block, and the extreme values the callers allow. The unit
/// tests run it natively; the page's model check runs it in the worker, on its WebAssembly
/// kernel. Err says where the first difference is.
pub fn check() -> Result<(), String> {
    let mut s = 0x9e37_79b9u32;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        s
    };
    for &(rows, k, n) in &[(1, 1, 1), (3, 5, 7), (4, 384, 384), (7, 33, 17), (9, 1536, 24), (5, 64, 9)] {
        let w: Vec<i16> = (0..k * n).map(|_| (next() % 255) as i16 - 127).collect();
        let packed = Packed::new(k, n, |kk, j| w[kk * n + j]);
        let len = 2 * packed.pairs;
        let bound = i32::from(super::activation_bound(k));
        let mut a = vec![0i16; rows * len];
        for m in 0..rows {
            for kk in 0..k {
                a[m * len + kk] = match next() % 8 {
                    0 => bound as i16,
                    1 => -bound as i16,
                    _ => ((next() % (2 * bound as u32 + 1)) as i32 - bound) as i16,
                };
            }
        }
        let (mut want, mut got) = (vec![0i32; rows * n], vec![0i32; rows * n]);
        plain(&a, rows, &packed, &mut want);
        product(&a, rows, &packed, &mut got);
        if got != want {
            return Err(format!("the kernel differs from the plain product at rows {rows}, k {k}, n {n}"));
        }
        for m in 0..rows {
            for j in 0..n {
                let sum: i64 = (0..k).map(|kk| i64::from(a[m * len + kk]) * i64::from(w[kk * n + j])).sum();
                if i64::from(want[m * n + j]) != sum {
                    return Err(format!("the plain product is wrong at rows {rows}, k {k}, n {n}"));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_machines_kernel_equals_the_plain_one() {
        super::check().unwrap();
    }
}
