//! Eight f32 lanes ([`Lanes`]) for the kernels written once for every machine (attention, and the
//! GELU the integer products finish with): two WebAssembly or SSE vectors, one AVX2 vector, or
//! plain Rust. Every implementation computes each method's result the same way, lane
//! by lane (never a fused multiply-add), so all give the same bits; the one sum across lanes and
//! the exponential are written once, here, for all of them.

/// Eight f32 lanes and the few operations the kernels need: two 128-bit vectors in WebAssembly and
/// SSE, one 256-bit vector with AVX2. `add`, `sub`, `mul` and `div` are one IEEE operation a lane,
/// never fused; the others are exact; so every implementation gives the same bits for the same lanes.
/// The horizontal sum below is written once, over the eight lanes, for the same reason.
pub(crate) trait Lanes: Copy {
    fn splat(x: f32) -> Self;
    /// SAFETY: eight f32 readable from `p` (no alignment needed).
    unsafe fn load(p: *const f32) -> Self;
    /// SAFETY: eight f32 writable at `p` (no alignment needed).
    unsafe fn store(self, p: *mut f32);
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    /// Each lane with its sign bit cleared.
    fn abs(self) -> Self;
    /// Each lane with `z`'s sign bit ORed into it (for a lane without one: `z`'s sign).
    fn with_sign_of(self, z: Self) -> Self;
    /// `o` where `self < o`, else `self` (WebAssembly's `pmax`, x86's `maxps o, self`: one
    /// instruction a vector), the same result everywhere, NaN and signed zeros included (a NaN in
    /// `self` is kept, one in `o` is not).
    fn max(self, o: Self) -> Self;
    /// To the nearest integer, ties to even.
    fn nearest(self) -> Self;
    /// 2ⁿ for lanes holding integers n in [-126, 127].
    fn pow2(self) -> Self;
    /// Zero where `self < o`, else `y`.
    fn zero_below(self, o: Self, y: Self) -> Self;

    #[inline(always)]
    fn lanes(self) -> [f32; 8] {
        let mut l = [0f32; 8];
        // SAFETY: `l` holds eight f32.
        unsafe { self.store(l.as_mut_ptr()) };
        l
    }

    /// The lanes' sum, in one order for every implementation: lane i with lane i + 4, then the
    /// four pairs by halves.
    #[inline(always)]
    fn sum(self) -> f32 {
        let l = self.lanes();
        ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]))
    }

    /// e^x for x ≤ 0 (not a number stays so; below -87.336 55, where e^x leaves f32's normal
    /// range, 0).
    /// Cephes' `expf`: x = n·ln 2 + r with |r| ≤ ½ ln 2 (ln 2 in two parts, so that r is exact),
    /// a degree-7 polynomial for e^r, then 2ⁿ by the exponent field: within 2 ulp of `f32::exp`
    /// (a unit test sweeps it).
    #[inline(always)]
    fn exp_neg(self) -> Self {
        let lo = Self::splat(-87.336_55);
        let x = self.max(lo);
        let n = x.mul(Self::splat(std::f32::consts::LOG2_E)).nearest();
        let r = x.sub(n.mul(Self::splat(0.693_359_4))).sub(n.mul(Self::splat(-2.121_944_4e-4)));
        let p = Self::splat(1.987_569_1e-4).mul(r).add(Self::splat(1.398_199_9e-3));
        let p = p.mul(r).add(Self::splat(8.333_452e-3));
        let p = p.mul(r).add(Self::splat(4.166_579_6e-2));
        let p = p.mul(r).add(Self::splat(1.666_666_5e-1));
        let p = p.mul(r).add(Self::splat(5.000_000_1e-1));
        let y = p.mul(r.mul(r)).add(r).add(Self::splat(1.0));
        self.zero_below(lo, y.mul(n.pow2()))
    }
}

/// Two four-lane vectors as eight lanes (WebAssembly, SSE): each operation on both halves.
macro_rules! pair_lanes {
    ($name:ident, $v:ty, splat: $splat:expr, load: $load:expr, store: $store:expr, add: $add:expr, sub: $sub:expr, mul: $mul:expr, div: $div:expr, abs: $abs:expr, with_sign_of: $ws:expr, max: $max:expr, nearest: $nearest:expr, pow2: $pow2:expr, zero_below: $zb:expr) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name(pub(crate) $v, pub(crate) $v);

        impl super::Lanes for $name {
            #[inline(always)]
            fn splat(x: f32) -> Self {
                let v = $splat(x);
                $name(v, v)
            }
            #[inline(always)]
            unsafe fn load(p: *const f32) -> Self {
                // SAFETY: the caller's: eight f32 from p.
                unsafe { $name($load(p), $load(p.add(4))) }
            }
            #[inline(always)]
            unsafe fn store(self, p: *mut f32) {
                // SAFETY: the caller's: eight f32 at p.
                unsafe {
                    $store(p, self.0);
                    $store(p.add(4), self.1);
                }
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                $name($add(self.0, o.0), $add(self.1, o.1))
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                $name($sub(self.0, o.0), $sub(self.1, o.1))
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                $name($mul(self.0, o.0), $mul(self.1, o.1))
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                $name($div(self.0, o.0), $div(self.1, o.1))
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $name($abs(self.0), $abs(self.1))
            }
            #[inline(always)]
            fn with_sign_of(self, z: Self) -> Self {
                $name($ws(self.0, z.0), $ws(self.1, z.1))
            }
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                $name($max(self.0, o.0), $max(self.1, o.1))
            }
            #[inline(always)]
            fn nearest(self) -> Self {
                $name($nearest(self.0), $nearest(self.1))
            }
            #[inline(always)]
            fn pow2(self) -> Self {
                $name($pow2(self.0), $pow2(self.1))
            }
            #[inline(always)]
            fn zero_below(self, o: Self, y: Self) -> Self {
                $name($zb(self.0, o.0, y.0), $zb(self.1, o.1, y.1))
            }
        }
    };
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) mod wasm {
    use core::arch::wasm32::*;

    // Unaligned loads and stores are allowed in WebAssembly.
    pair_lanes!(W, v128,
        splat: f32x4_splat,
        load: |p: *const f32| v128_load(p as *const v128),
        store: |p: *mut f32, v| v128_store(p as *mut v128, v),
        add: f32x4_add,
        sub: f32x4_sub,
        mul: f32x4_mul,
        div: f32x4_div,
        abs: f32x4_abs,
        with_sign_of: |a, z| v128_or(a, v128_and(z, f32x4_splat(-0.0))),
        max: f32x4_pmax,
        nearest: f32x4_nearest,
        pow2: |n| i32x4_shl(i32x4_add(i32x4_trunc_sat_f32x4(n), i32x4_splat(127)), 23),
        zero_below: |x, lo, y| v128_andnot(y, f32x4_lt(x, lo)));
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod sse {
    use std::arch::x86_64::*;

    // SSE and SSE2 are part of x86-64 itself: every intrinsic below is always available.
    // `maxps a, b` is `a > b ? a : b`, so `max` swaps its operands. `nearest`: |x| < 2²³ here
    // (exp_neg's n), so converting to i32 under the default rounding (to nearest, ties to even)
    // and back is exact.
    pair_lanes!(S, __m128,
        splat: |x| unsafe { _mm_set1_ps(x) },
        load: |p| _mm_loadu_ps(p),
        store: |p, v| _mm_storeu_ps(p, v),
        add: |a, b| unsafe { _mm_add_ps(a, b) },
        sub: |a, b| unsafe { _mm_sub_ps(a, b) },
        mul: |a, b| unsafe { _mm_mul_ps(a, b) },
        div: |a, b| unsafe { _mm_div_ps(a, b) },
        abs: |a| unsafe { _mm_andnot_ps(_mm_set1_ps(-0.0), a) },
        with_sign_of: |a, z| unsafe { _mm_or_ps(a, _mm_and_ps(z, _mm_set1_ps(-0.0))) },
        max: |a, b| unsafe { _mm_max_ps(b, a) },
        nearest: |x| unsafe { _mm_cvtepi32_ps(_mm_cvtps_epi32(x)) },
        pow2: |n| unsafe { _mm_castsi128_ps(_mm_slli_epi32::<23>(_mm_add_epi32(_mm_cvttps_epi32(n), _mm_set1_epi32(127)))) },
        zero_below: |x, lo, y| unsafe { _mm_andnot_ps(_mm_cmplt_ps(x, lo), y) });
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use std::arch::x86_64::*;

    /// Eight lanes in one AVX register. Its operations are AVX and AVX2 instructions, in safe
    /// methods (a trait's methods cannot carry `#[target_feature]`): by this module's rule they
    /// are only used inside `kernel`'s `blocks_avx2`, which runs only where AVX2 was detected and
    /// is compiled for it, so that they are inlined there.
    #[derive(Clone, Copy)]
    pub(crate) struct A(pub(crate) __m256);

    // SAFETY (every `unsafe` below): AVX2 is present wherever these run (above).
    impl super::Lanes for A {
        #[inline(always)]
        fn splat(x: f32) -> Self {
            A(unsafe { _mm256_set1_ps(x) })
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            A(unsafe { _mm256_loadu_ps(p) })
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            unsafe { _mm256_storeu_ps(p, self.0) }
        }
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            A(unsafe { _mm256_add_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn sub(self, o: Self) -> Self {
            A(unsafe { _mm256_sub_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn mul(self, o: Self) -> Self {
            A(unsafe { _mm256_mul_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn div(self, o: Self) -> Self {
            A(unsafe { _mm256_div_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn abs(self) -> Self {
            A(unsafe { _mm256_andnot_ps(_mm256_set1_ps(-0.0), self.0) })
        }
        #[inline(always)]
        fn with_sign_of(self, z: Self) -> Self {
            A(unsafe { _mm256_or_ps(self.0, _mm256_and_ps(z.0, _mm256_set1_ps(-0.0))) })
        }
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            A(unsafe { _mm256_max_ps(o.0, self.0) })
        }
        #[inline(always)]
        fn nearest(self) -> Self {
            A(unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(self.0) })
        }
        #[inline(always)]
        fn pow2(self) -> Self {
            A(unsafe { _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(_mm256_cvttps_epi32(self.0), _mm256_set1_epi32(127)))) })
        }
        #[inline(always)]
        fn zero_below(self, o: Self, y: Self) -> Self {
            A(unsafe { _mm256_andnot_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(self.0, o.0), y.0) })
        }
    }
}

/// Eight lanes in plain Rust, for other machines, and for the check that the others give the
/// same bits.
pub(crate) mod one {
    #[derive(Clone, Copy)]
    pub(crate) struct One([f32; 8]);

    impl One {
        fn map2(self, o: Self, f: impl Fn(f32, f32) -> f32) -> Self {
            One(std::array::from_fn(|i| f(self.0[i], o.0[i])))
        }
    }

    impl super::Lanes for One {
        fn splat(x: f32) -> Self {
            One([x; 8])
        }
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: the caller's.
            One(unsafe { (p as *const [f32; 8]).read_unaligned() })
        }
        unsafe fn store(self, p: *mut f32) {
            // SAFETY: the caller's.
            unsafe { (p as *mut [f32; 8]).write_unaligned(self.0) }
        }
        fn add(self, o: Self) -> Self {
            self.map2(o, |a, b| a + b)
        }
        fn sub(self, o: Self) -> Self {
            self.map2(o, |a, b| a - b)
        }
        fn mul(self, o: Self) -> Self {
            self.map2(o, |a, b| a * b)
        }
        fn div(self, o: Self) -> Self {
            self.map2(o, |a, b| a / b)
        }
        fn abs(self) -> Self {
            One(self.0.map(f32::abs))
        }
        fn with_sign_of(self, z: Self) -> Self {
            self.map2(z, |a, z| f32::from_bits(a.to_bits() | (z.to_bits() & 0x8000_0000)))
        }
        fn max(self, o: Self) -> Self {
            self.map2(o, |a, b| if a < b { b } else { a })
        }
        fn nearest(self) -> Self {
            One(self.0.map(f32::round_ties_even))
        }
        fn pow2(self) -> Self {
            One(self.0.map(|n| f32::from_bits(((n as i32 + 127) as u32) << 23)))
        }
        fn zero_below(self, o: Self, y: Self) -> Self {
            One(std::array::from_fn(|i| if self.0[i] < o.0[i] { 0.0 } else { y.0[i] }))
        }
    }
}
