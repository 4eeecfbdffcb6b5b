//! The AVX-512F tier (+ AVX2, FMA, F16C): 16 f32 lanes (`__m512`), 8 f64 lanes (`__m512d`).
//!
//! What is specific to AVX-512: the token and its one entry function (`run`), the lane
//! operations as intrinsics (masked blends for the quadrant, two-source permutes for `zip`),
//! and the f16/bf16 conversions.
//!
//! bf16 rounding: on CPUs with AVX512-BF16, kernels that round to bf16 run in a second entry
//! function (`run_bf16`, token `Avx512<true>`) that converts with `vcvtneps2bf16`: one
//! instruction for what is otherwise an integer round-to-nearest-even sequence of ten. That
//! instruction rounds exactly as `half::bf16::from_f32` (nearest-even, NaN quieted by setting
//! bit 6) except that it reads subnormal inputs as zero, so a vector with a subnormal lane
//! (`vfpclassps`, rare in practice) takes the integer sequence instead; kernels that store two
//! vectors at once test both under one branch, and two consecutive vectors are converted by
//! one `vcvtne2ps2bf16` whose results are tested for ±0 (what a subnormal input becomes)
//! before anything is classified (`Avx512::bf16_packed_joined`). The bits are `half`'s either
//! way (`tests/element.rs` walks every bf16 pattern through every backend).

use crate::engine::detect;
use crate::engine::vector::{Kernel, Simd};
use core::arch::x86_64::*;

/// The AVX-512 tier's token: proof that this CPU has AVX-512F, AVX2, FMA and F16C, and with
/// `BF16`, AVX512-BF16, AVX512-DQ and AVX512-BW too. The private field keeps every constructor in this
/// file: [`Avx512::new`], then [`Avx512::native_bf16`].
#[derive(Clone, Copy)]
pub(crate) struct Avx512<const BF16: bool = false>(());

impl Avx512 {
    /// The token, if this CPU (or the build's target features) has AVX-512F, AVX2, FMA and
    /// F16C.
    #[inline]
    pub(crate) fn new() -> Option<Avx512> {
        detect::avx512().then_some(Avx512(()))
    }

    /// The token that also converts to bf16 natively, if this CPU has AVX512-BF16, AVX512-DQ
    /// and AVX512-BW (every CPU with the first has the others).
    #[inline]
    pub(crate) fn native_bf16(self) -> Option<Avx512<true>> {
        detect::avx512_bf16().then_some(Avx512(()))
    }

    /// Runs `k` with this tier's vectors, compiled with its features.
    #[inline(always)]
    pub(crate) fn vectorize<K: Kernel>(self, k: K) -> K::Output {
        // SAFETY: `run` needs AVX-512F, AVX2, FMA and F16C, which `self` proves
        // (`Avx512::new`).
        unsafe { run(self, k) }
    }
}

impl Avx512<true> {
    /// Runs `k` with this tier's vectors and native bf16 conversion.
    #[inline(always)]
    pub(crate) fn vectorize<K: Kernel>(self, k: K) -> K::Output {
        // SAFETY: `run_bf16` needs AVX-512F, AVX2, FMA, F16C, AVX512-BF16, -DQ and -BW, which
        // `self` proves (`Avx512::native_bf16`).
        unsafe { run_bf16(self, k) }
    }
}

/// The AVX-512 entry point: every kernel is instantiated here, where it inlines with the
/// tier's features enabled (`.ci/check-asm.sh` disassembles each instantiation).
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn run<K: Kernel>(t: Avx512, k: K) -> K::Output {
    k.run(t)
}

/// The entry point of the kernels that round to bf16 ([`Kernel::ROUNDS_TO_BF16`]), on CPUs
/// with AVX512-BF16.
#[target_feature(enable = "avx512f,avx2,fma,f16c,avx512bf16,avx512dq,avx512bw")]
fn run_bf16<K: Kernel>(t: Avx512<true>, k: K) -> K::Output {
    k.run(t)
}

impl<const BF16: bool> Simd for Avx512<BF16> {
    const LANES: usize = 16;
    const REGISTERS: usize = 32;
    const HALVES: bool = true;
    const QUARTERS: bool = true;
    const BF16_PAIR: bool = BF16;
    const SPLIT_BF16: bool = BF16;
    const ANGLES_BETWEEN_HEADS: bool = true;
    type F = __m512;
    type D = __m512d;

    #[inline(always)]
    fn splat(self, v: f32) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_set1_ps(v) }
    }
    #[inline(always)]
    fn add(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    fn mul_add(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn neg_mul_add(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_fnmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn swap_pairs(self, a: __m512) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_permute_ps::<0b10_11_00_01>(a) }
    }
    #[inline(always)]
    fn neg(self, a: __m512) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe {
            // Integer xor: `_mm512_xor_ps` would need AVX512DQ.
            let sign = _mm512_set1_epi32(i32::MIN);
            _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), sign))
        }
    }
    #[inline(always)]
    fn zip(self, a: __m512, b: __m512) -> (__m512, __m512) {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe {
            // Indices 0..15 pick from `a`, 16..31 from `b`.
            let lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
            let hi =
                _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
            (
                _mm512_permutex2var_ps(a, lo, b),
                _mm512_permutex2var_ps(a, hi, b),
            )
        }
    }
    #[inline(always)]
    fn quadrant(self, ylo: __m512d, yhi: __m512d, s: __m512, c: __m512) -> (__m512, __m512) {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe {
            // The low dword of each f64 lane holds k's low bits: the even dwords of `ylo` then
            // of `yhi` (indices 0..15 pick from `ylo`, 16..31 from `yhi`), in one permute.
            let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            let q =
                _mm512_permutex2var_epi32(_mm512_castpd_si512(ylo), even, _mm512_castpd_si512(yhi));
            let odd = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
            let (s2, c2) = (
                _mm512_mask_blend_ps(odd, s, c),
                _mm512_mask_blend_ps(odd, c, s),
            );
            // Bit 1 of k (sin's sign) and of k + 1 (cos's) shifted to the sign bit, where
            // `(k + 1) << 30 = (k << 30) + (1 << 30)`; each is masked to the sign bit and
            // xored in by one `vpternlogd` (0x78: a ^ (b & c)).
            let sign = _mm512_set1_epi32(i32::MIN);
            let ks = _mm512_slli_epi32::<30>(q);
            let k1s = _mm512_add_epi32(ks, _mm512_set1_epi32(1 << 30));
            (
                _mm512_castsi512_ps(_mm512_ternarylogic_epi32::<0x78>(
                    _mm512_castps_si512(s2),
                    ks,
                    sign,
                )),
                _mm512_castsi512_ps(_mm512_ternarylogic_epi32::<0x78>(
                    _mm512_castps_si512(c2),
                    k1s,
                    sign,
                )),
            )
        }
    }

    #[inline(always)]
    fn dsplat(self, v: f64) -> __m512d {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_set1_pd(v) }
    }
    #[inline(always)]
    fn dadd(self, a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_add_pd(a, b) }
    }
    #[inline(always)]
    fn dsub(self, a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_sub_pd(a, b) }
    }
    #[inline(always)]
    fn dmul(self, a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_mul_pd(a, b) }
    }
    #[inline(always)]
    fn dsquare_add(self, x: __m512d, acc: __m512d) -> __m512d {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_fmadd_pd(x, x, acc) }
    }
    #[inline(always)]
    fn dsub_exact(self, a: __m512d, k: __m512d, c: __m512d) -> __m512d {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_fnmadd_pd(k, c, a) }
    }
    #[inline(always)]
    fn narrow(self, lo: __m512d, hi: __m512d) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe {
            let lo = _mm512_castps256_ps512(_mm512_cvtpd_ps(lo));
            let hi = _mm256_castps_pd(_mm512_cvtpd_ps(hi));
            _mm512_castpd_ps(_mm512_insertf64x4::<1>(_mm512_castps_pd(lo), hi))
        }
    }

    #[inline(always)]
    fn dquadrant(self, y: __m512d, s: __m512d, c: __m512d) -> (__m512d, __m512d) {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe {
            let q = _mm512_castpd_si512(y);
            let odd = _mm512_test_epi64_mask(q, _mm512_set1_epi64(1));
            let (s2, c2) = (
                _mm512_mask_blend_pd(odd, s, c),
                _mm512_mask_blend_pd(odd, c, s),
            );
            let sign = _mm512_set1_epi64(i64::MIN);
            let sn = _mm512_and_si512(_mm512_slli_epi64::<62>(q), sign);
            let q1 = _mm512_add_epi64(q, _mm512_set1_epi64(1));
            let cn = _mm512_and_si512(_mm512_slli_epi64::<62>(q1), sign);
            (
                _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(s2), sn)),
                _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(c2), cn)),
            )
        }
    }
    #[inline(always)]
    unsafe fn st_d(self, v: __m512d, p: *mut f64) {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm512_storeu_pd(p, v) }
    }
    #[inline(always)]
    unsafe fn ld_widen(self, p: *const f32) -> __m512d {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm512_cvtps_pd(_mm256_loadu_ps(p)) }
    }
    #[inline(always)]
    unsafe fn ld_d(self, p: *const f64) -> __m512d {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm512_loadu_pd(p) }
    }
    #[inline(always)]
    unsafe fn ld_f32(self, p: *const f32) -> __m512 {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn st_f32(self, v: __m512, p: *mut f32) {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn st_narrow_f32(self, lo: __m512d, hi: __m512d, p: *mut f32) {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; `p` addresses 16 lanes (the caller's precondition): eight from `p`, eight from `p + 8`.
        unsafe {
            _mm256_storeu_ps(p, _mm512_cvtpd_ps(lo));
            _mm256_storeu_ps(p.add(8), _mm512_cvtpd_ps(hi));
        }
    }
    #[inline(always)]
    unsafe fn ld_f32_halves(self, lo: *const f32, hi: *const f32) -> __m512 {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointers address eight lanes each (the caller's precondition).
        unsafe {
            let lo = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(lo)));
            _mm512_castpd_ps(_mm512_insertf64x4::<1>(
                lo,
                _mm256_castps_pd(_mm256_loadu_ps(hi)),
            ))
        }
    }
    #[inline(always)]
    unsafe fn st_f32_halves(self, v: __m512, lo: *mut f32, hi: *mut f32) {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointers address eight lanes each (the caller's precondition).
        unsafe {
            _mm256_storeu_ps(lo, _mm512_castps512_ps256(v));
            _mm256_storeu_ps(
                hi,
                _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v))),
            );
        }
    }
    #[inline(always)]
    unsafe fn ld_f32_split(self, lo: *const f32, hi: *const f32, f: usize) -> __m512 {
        if f == 8 {
            // SAFETY: the caller's precondition with `f = LANES/2`.
            return unsafe { self.ld_f32_halves(lo, hi) };
        }
        // Four quarter vectors (see `quarter`).
        let at = |i| quarter(lo, hi, f, i);
        // SAFETY: the token proves AVX-512F; `f` is 4 or 12 (the caller's precondition), so each
        // quarter lies in `lo .. lo + f` or `hi .. hi + 16 − f`, which are readable.
        unsafe {
            let v = _mm512_castps128_ps512(_mm_loadu_ps(at(0)));
            let v = _mm512_insertf32x4::<1>(v, _mm_loadu_ps(at(1)));
            let v = _mm512_insertf32x4::<2>(v, _mm_loadu_ps(at(2)));
            _mm512_insertf32x4::<3>(v, _mm_loadu_ps(at(3)))
        }
    }
    #[inline(always)]
    unsafe fn st_f32_split(self, v: __m512, lo: *mut f32, hi: *mut f32, f: usize) {
        if f == 8 {
            // SAFETY: the caller's precondition with `f = LANES/2`.
            return unsafe { self.st_f32_halves(v, lo, hi) };
        }
        let at = |i| quarter(lo, hi, f, i).cast_mut();
        // SAFETY: the token proves AVX-512F; each quarter lies in `lo .. lo + f` or `hi .. hi +
        // 16 − f` (`f` is 4 or 12, the caller's precondition), which are writable.
        unsafe {
            _mm_storeu_ps(at(0), _mm512_castps512_ps128(v));
            _mm_storeu_ps(at(1), _mm512_extractf32x4_ps::<1>(v));
            _mm_storeu_ps(at(2), _mm512_extractf32x4_ps::<2>(v));
            _mm_storeu_ps(at(3), _mm512_extractf32x4_ps::<3>(v));
        }
    }
    #[inline(always)]
    unsafe fn ld_f16(self, src: *const half::f16) -> __m512 {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(src.cast())) }
    }
    #[inline(always)]
    unsafe fn st_f16(self, v: __m512, dst: *mut half::f16) {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm256_storeu_si256(dst.cast(), _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)) }
    }
    #[inline(always)]
    unsafe fn st_narrow_f16(self, lo: __m512d, hi: __m512d, p: *mut half::f16) {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; `p` addresses 16 lanes (the caller's precondition): eight from `p`, eight from `p + 8`.
        unsafe {
            let a = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_cvtpd_ps(lo));
            let b = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_cvtpd_ps(hi));
            _mm_storeu_si128(p.cast(), a);
            _mm_storeu_si128(p.add(8).cast(), b);
        }
    }
    #[inline(always)]
    unsafe fn ld_bf16(self, src: *const half::bf16) -> __m512 {
        // Signalling NaNs are not quieted here; see `avx2::ld_bf16` for why outputs are the
        // same.
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        let h = unsafe { _mm256_loadu_si256(src.cast()) };
        if BF16 {
            // SAFETY: `Avx512<true>` exists only on a CPU with AVX512-BW
            // (`Avx512::native_bf16`).
            unsafe {
                // One word permute puts value `i` in the high half of lane `i` and zeroes the
                // low halves (mask 0xAAAAAAAA): one operation instead of a widening and a
                // shift, which counts where 16-bit RoPE is bound by vector operations
                // (`cargo bench --bench ratio`, the bf16 rows in cache).
                let idx = _mm512_set_epi16(
                    15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0, 6, 0, 5, 0, 4, 0,
                    3, 0, 2, 0, 1, 0, 0, 0,
                );
                return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(
                    0xAAAA_AAAA,
                    idx,
                    _mm512_castsi256_si512(h),
                ));
            }
        }
        // SAFETY: the token proves AVX-512F (`Avx512::new`).
        unsafe { _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h))) }
    }
    #[inline(always)]
    unsafe fn st_bf16(self, v: __m512, dst: *mut half::bf16) {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm256_storeu_si256(dst.cast(), self.bf16_packed(v)) }
    }
    #[inline(always)]
    unsafe fn st_bf16_pair(self, a: __m512, pa: *mut half::bf16, b: __m512, pb: *mut half::bf16) {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointers address the
        // lanes (the caller's precondition).
        unsafe {
            let (a, b) = self.bf16_packed_pair(a, b);
            _mm256_storeu_si256(pa.cast(), a);
            _mm256_storeu_si256(pb.cast(), b);
        }
    }
    #[inline(always)]
    unsafe fn st_bf16_joined(self, a: __m512, b: __m512, p: *mut half::bf16) {
        // SAFETY: the token proves AVX-512F; the pointer addresses the 32 values (the
        // caller's precondition).
        unsafe { _mm512_storeu_si512(p.cast(), self.bf16_packed_joined(a, b)) }
    }
    #[inline(always)]
    unsafe fn ld_bf16_split(self, p: *const half::bf16) -> (__m512, __m512) {
        // SAFETY: the token proves AVX-512F; the pointer addresses the 32 values (the
        // caller's precondition).
        unsafe {
            // Each 32-bit word holds an even value in its low half and the next one in its
            // high half: a shift and a mask widen both where they lie.
            let z = _mm512_loadu_si512(p.cast());
            (
                _mm512_castsi512_ps(_mm512_slli_epi32::<16>(z)),
                _mm512_castsi512_ps(_mm512_and_si512(z, _mm512_set1_epi32(-0x1_0000))),
            )
        }
    }
    #[inline(always)]
    unsafe fn st_bf16_merge(self, e: __m512, o: __m512, p: *mut half::bf16) {
        // SAFETY: the token proves AVX-512F; the pointer addresses the 32 values (the
        // caller's precondition).
        unsafe { _mm512_storeu_si512(p.cast(), self.bf16_merged(e, o)) }
    }
    #[inline(always)]
    fn unzip(self, a: __m512, b: __m512) -> (__m512, __m512) {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F (`Avx512::new`).
        unsafe {
            // Indices 0..15 pick from `a`, 16..31 from `b`.
            let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
            (
                _mm512_permutex2var_ps(a, even, b),
                _mm512_permutex2var_ps(a, odd, b),
            )
        }
    }
    #[inline(always)]
    unsafe fn ld_i32_widen(self, p: *const i32) -> __m512d {
        // SAFETY: the token proves AVX-512F, AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm512_cvtepi32_pd(_mm256_loadu_si256(p.cast())) }
    }
    #[inline(always)]
    fn round_f16(self, v: __m512) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe { _mm512_cvtph_ps(_mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)) }
    }
    #[inline(always)]
    fn round_bf16(self, v: __m512) -> __m512 {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F, AVX2, FMA and F16C (`Avx512::new`).
        unsafe {
            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(
                self.bf16_packed(v),
            )))
        }
    }
}

impl<const BF16: bool> Avx512<BF16> {
    /// The 16 lanes rounded to bf16 exactly as `half::bf16::from_f32`, packed into 256 bits.
    #[inline(always)]
    fn bf16_packed(self, v: __m512) -> __m256i {
        if BF16 {
            // SAFETY: `Avx512<true>` exists only on a CPU with AVX512-BF16 and AVX512-DQ
            // (`Avx512::native_bf16`).
            unsafe {
                // Class 0x20: denormal. The native conversion reads those as zero.
                if _mm512_fpclass_ps_mask::<0x20>(v) == 0 {
                    return core::mem::transmute::<__m256bh, __m256i>(_mm512_cvtneps_pbh(v));
                }
            }
        }
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F (`Avx512::new`).
        unsafe { _mm512_cvtepi32_epi16(self.bf16_bits(v)) }
    }

    /// [`Avx512::bf16_packed`] of two vectors, with one subnormal test for both: the test and
    /// its branch cost about as much as the native conversion itself, so a kernel that
    /// produces two vectors at once converts them under one (`benches/ratio.rs`, bf16 rows).
    /// For two vectors stored apart (a rotate_half pair); see
    /// [`Avx512::bf16_packed_joined`] for two stored together.
    #[inline(always)]
    fn bf16_packed_pair(self, a: __m512, b: __m512) -> (__m256i, __m256i) {
        if BF16 {
            // SAFETY: `Avx512<true>` exists only on a CPU with AVX512-BF16 and AVX512-DQ
            // (`Avx512::native_bf16`).
            unsafe {
                let sub = _mm512_fpclass_ps_mask::<0x20>(a) | _mm512_fpclass_ps_mask::<0x20>(b);
                if sub == 0 {
                    return (
                        core::mem::transmute::<__m256bh, __m256i>(_mm512_cvtneps_pbh(a)),
                        core::mem::transmute::<__m256bh, __m256i>(_mm512_cvtneps_pbh(b)),
                    );
                }
            }
        }
        // A subnormal in either: each vector on its own (the rare path).
        (self.bf16_packed(a), self.bf16_packed(b))
    }

    /// [`Avx512::bf16_packed`] of two vectors stored together (two consecutive vectors of an
    /// interleaved head), `a` in the low 256 bits and `b` in the high: one `vcvtne2ps2bf16`
    /// for both, then one test of its 32 results.
    ///
    /// The native conversion differs from `half` only on subnormal inputs, which it reads as
    /// zero; an f32 that is not subnormal rounds to a bf16 that is not either (the two share
    /// the exponent range). So a result that differs from `half`'s is always ±0, and the
    /// results are `half`'s whenever none of the 32 is ±0 (`vptestnmw`): the common path. With
    /// a ±0 among them, the inputs are classified (`vfpclassps`) and a vector with a subnormal
    /// lane takes the integer sequence. This measured faster than [`Avx512::bf16_packed_pair`]
    /// for two interleaved vectors (`cargo bench --bench ratio`, the interleaved bf16 rows),
    /// and slower for a rotate_half pair, whose two halves would go to two stores
    /// (`cargo bench --bench fused -- into`, f32 into bf16 in cache).
    #[inline(always)]
    fn bf16_packed_joined(self, a: __m512, b: __m512) -> __m512i {
        if let Some(z) = self.bf16_native2(a, b) {
            return z;
        }
        // A subnormal in either (or no native conversion): each vector on its own.
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F (`Avx512::new`).
        unsafe {
            _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(self.bf16_packed(a)),
                self.bf16_packed(b),
            )
        }
    }

    /// `a` (low 256 bits) and `b` (high) rounded to bf16 by one `vcvtne2ps2bf16`, when that
    /// gives `half`'s bits: with AVX512-BF16, unless one of the 32 results is ±0 and an input
    /// is subnormal (see [`Avx512::bf16_packed_joined`]). `None` sends the caller to the
    /// integer sequence.
    #[inline(always)]
    fn bf16_native2(self, a: __m512, b: __m512) -> Option<__m512i> {
        if BF16 {
            // SAFETY: `Avx512<true>` exists only on a CPU with AVX512-BF16, AVX512-DQ and
            // AVX512-BW (`Avx512::native_bf16`).
            unsafe {
                // Low 16 results from the second operand (`a`), high 16 from the first.
                let z = core::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(b, a));
                // The words tested as integers, through `opaque`: otherwise LLVM reads
                // `z & 0x7fff == 0` as a bf16 comparison with zero, which it has no
                // instruction for, and splits it into 32 scalar ones.
                if _mm512_testn_epi16_mask(opaque(z), _mm512_set1_epi16(0x7fff)) == 0
                    || (_mm512_fpclass_ps_mask::<0x20>(a) | _mm512_fpclass_ps_mask::<0x20>(b)) == 0
                {
                    return Some(z);
                }
            }
        }
        None
    }

    /// `e` and `o` rounded to bf16 as [`Avx512::bf16_packed`] and interleaved, `e`'s lanes in
    /// the even words: [`Simd::st_bf16_merge`]'s 32 values. With AVX512-BF16, one
    /// `vcvtne2ps2bf16` and one word permute, under [`Avx512::bf16_packed_joined`]'s test for
    /// a flushed subnormal; otherwise (and for a vector with a subnormal lane) the integer
    /// sequence, whose patterns already lie in the low halves of the 32-bit lanes, so that a
    /// shift and an or interleave them.
    #[inline(always)]
    fn bf16_merged(self, e: __m512, o: __m512) -> __m512i {
        if let Some(z) = self.bf16_native2(e, o) {
            // SAFETY: `bf16_native2` returns a value only for `Avx512<true>`, which exists only
            // on a CPU with AVX512-BW (`Avx512::native_bf16`).
            unsafe {
                // Word `2i` from word `i` (`e`), word `2i + 1` from word `16 + i` (`o`).
                let idx = _mm512_set_epi16(
                    31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                    5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0,
                );
                return _mm512_permutexvar_epi16(idx, z);
            }
        }
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F (`Avx512::new`).
        unsafe {
            _mm512_or_si512(
                self.bf16_bits(e),
                _mm512_slli_epi32::<16>(self.bf16_bits(o)),
            )
        }
    }

    /// The bf16 bit pattern of each lane in the low 16 bits of a 32-bit lane, exactly
    /// `half::bf16::from_f32` (see `Avx2::bf16_hi`).
    #[inline(always)]
    fn bf16_bits(self, v: __m512) -> __m512i {
        // SAFETY: an `Avx512` token exists only on a CPU with AVX-512F (`Avx512::new`).
        unsafe {
            let x = _mm512_castps_si512(v);
            let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(1));
            let rounded = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb);
            let rounded = _mm512_srli_epi32::<16>(rounded);
            let quiet = _mm512_or_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(0x40));
            let abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7fff_ffff));
            let nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f80_0000));
            _mm512_mask_blend_epi32(nan, rounded, quiet)
        }
    }
}

/// `v` unchanged, through an empty `asm!` block (no instruction): LLVM cannot see where the
/// value came from, so it cannot rewrite the integer operations that follow into operations on
/// that origin's type (see `Avx512::bf16_native2`).
#[target_feature(enable = "avx512f")]
#[inline]
fn opaque(mut v: __m512i) -> __m512i {
    // SAFETY: the template is empty: no instruction runs, no memory or flag is touched, and
    // the register holds `v` before and after.
    unsafe {
        core::arch::asm!("/* {0} */", inout(zmm_reg) v, options(pure, nomem, nostack, preserves_flags))
    };
    v
}

/// Where quarter `i` (lanes `4i .. 4i + 4`) of a vector split at lane `f` lies: at `lo + 4i`
/// below `f`, else at `hi + 4i − f` ([`Simd::ld_f32_split`]).
#[inline(always)]
fn quarter(lo: *const f32, hi: *const f32, f: usize, i: usize) -> *const f32 {
    if 4 * i < f {
        lo.wrapping_add(4 * i)
    } else {
        hi.wrapping_add(4 * i - f)
    }
}
