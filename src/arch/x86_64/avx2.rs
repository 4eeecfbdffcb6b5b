//! The AVX2 + FMA + F16C tier: 8 f32 lanes (`__m256`), 4 f64 lanes (`__m256d`).
//! Safety model: see the parent module.
#![allow(unsafe_op_in_unsafe_fn)]

use super::Isa;
use core::arch::x86_64::*;

#[derive(Clone, Copy)]
pub(crate) struct Avx2;

impl Isa for Avx2 {
    const LANES: usize = 8;
    type F = __m256;
    type D = __m256d;

    #[inline(always)]
    unsafe fn splat(v: f32) -> __m256 {
        _mm256_set1_ps(v)
    }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        _mm256_add_ps(a, b)
    }
    #[inline(always)]
    unsafe fn sub(a: __m256, b: __m256) -> __m256 {
        _mm256_sub_ps(a, b)
    }
    #[inline(always)]
    unsafe fn mul(a: __m256, b: __m256) -> __m256 {
        _mm256_mul_ps(a, b)
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
        _mm256_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn fnmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
        _mm256_fnmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn swap_pairs(a: __m256) -> __m256 {
        _mm256_permute_ps::<0b10_11_00_01>(a)
    }
    #[inline(always)]
    unsafe fn neg(a: __m256) -> __m256 {
        _mm256_xor_ps(a, _mm256_set1_ps(-0.0))
    }
    #[inline(always)]
    unsafe fn zip(a: __m256, b: __m256) -> (__m256, __m256) {
        // unpack works per 128-bit half: [a0 b0 a1 b1 | a4 b4 a5 b5], [a2 b2 a3 b3 | a6 b6 a7 b7].
        let (lo, hi) = (_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
        (
            _mm256_permute2f128_ps::<0x20>(lo, hi),
            _mm256_permute2f128_ps::<0x31>(lo, hi),
        )
    }
    #[inline(always)]
    unsafe fn quadrant(ylo: __m256d, yhi: __m256d, s: __m256, c: __m256) -> (__m256, __m256) {
        // The low dword of each f64 lane holds k's low bits: gather them into 8 i32 lanes.
        let idx = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        let ql = _mm256_permutevar8x32_epi32(_mm256_castpd_si256(ylo), idx);
        let qh = _mm256_permutevar8x32_epi32(_mm256_castpd_si256(yhi), idx);
        let q = _mm256_permute2x128_si256::<0x20>(ql, qh);
        // blendv reads the sign bit: k odd ⇔ bit 0, moved to bit 31.
        let odd = _mm256_castsi256_ps(_mm256_slli_epi32::<31>(q));
        let (s2, c2) = (_mm256_blendv_ps(s, c, odd), _mm256_blendv_ps(c, s, odd));
        let sign = _mm256_set1_epi32(i32::MIN);
        let sn = _mm256_and_si256(_mm256_slli_epi32::<30>(q), sign);
        let q1 = _mm256_add_epi32(q, _mm256_set1_epi32(1));
        let cn = _mm256_and_si256(_mm256_slli_epi32::<30>(q1), sign);
        (
            _mm256_xor_ps(s2, _mm256_castsi256_ps(sn)),
            _mm256_xor_ps(c2, _mm256_castsi256_ps(cn)),
        )
    }

    #[inline(always)]
    unsafe fn dsplat(v: f64) -> __m256d {
        _mm256_set1_pd(v)
    }
    #[inline(always)]
    unsafe fn dadd(a: __m256d, b: __m256d) -> __m256d {
        _mm256_add_pd(a, b)
    }
    #[inline(always)]
    unsafe fn dsub(a: __m256d, b: __m256d) -> __m256d {
        _mm256_sub_pd(a, b)
    }
    #[inline(always)]
    unsafe fn dmul(a: __m256d, b: __m256d) -> __m256d {
        _mm256_mul_pd(a, b)
    }
    #[inline(always)]
    unsafe fn narrow(lo: __m256d, hi: __m256d) -> __m256 {
        _mm256_insertf128_ps::<1>(
            _mm256_castps128_ps256(_mm256_cvtpd_ps(lo)),
            _mm256_cvtpd_ps(hi),
        )
    }

    #[inline(always)]
    unsafe fn dquadrant(y: __m256d, s: __m256d, c: __m256d) -> (__m256d, __m256d) {
        let q = _mm256_castpd_si256(y);
        // blendv reads the sign bit: k odd ⇔ bit 0, moved to bit 63.
        let odd = _mm256_castsi256_pd(_mm256_slli_epi64::<63>(q));
        let (s2, c2) = (_mm256_blendv_pd(s, c, odd), _mm256_blendv_pd(c, s, odd));
        let sign = _mm256_set1_epi64x(i64::MIN);
        let sn = _mm256_and_si256(_mm256_slli_epi64::<62>(q), sign);
        let q1 = _mm256_add_epi64(q, _mm256_set1_epi64x(1));
        let cn = _mm256_and_si256(_mm256_slli_epi64::<62>(q1), sign);
        (
            _mm256_xor_pd(s2, _mm256_castsi256_pd(sn)),
            _mm256_xor_pd(c2, _mm256_castsi256_pd(cn)),
        )
    }
    #[inline(always)]
    unsafe fn store_d(v: __m256d, dst: &mut [f64]) {
        let dst: &mut [f64; 4] = (&mut dst[..4]).try_into().unwrap();
        _mm256_storeu_pd(dst.as_mut_ptr(), v)
    }
    #[inline(always)]
    unsafe fn load_widen(src: &[f32]) -> __m256d {
        let src: &[f32; 4] = src[..4].try_into().unwrap();
        _mm256_cvtps_pd(_mm_loadu_ps(src.as_ptr()))
    }
    #[inline(always)]
    unsafe fn load_d(src: &[f64]) -> __m256d {
        let src: &[f64; 4] = src[..4].try_into().unwrap();
        _mm256_loadu_pd(src.as_ptr())
    }
    #[inline(always)]
    unsafe fn ld_f32(p: *const f32) -> __m256 {
        _mm256_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn st_f32(v: __m256, p: *mut f32) {
        _mm256_storeu_ps(p, v)
    }
    #[inline(always)]
    unsafe fn ld_f16(src: *const half::f16) -> __m256 {
        _mm256_cvtph_ps(_mm_loadu_si128(src.cast()))
    }
    #[inline(always)]
    unsafe fn st_f16(v: __m256, dst: *mut half::f16) {
        let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
        // Converted in a register, then stored with `vmovdqu`. LLVM folds the intrinsic
        // store below into the memory form of `vcvtps2ph`, which on Zen 3 costs more: in one
        // process timing both builds (medians of 41 rounds, 32 heads × 128), the f16 ceiling
        // pass took 0.75–0.82× the time at 1–512 tokens and RoPE f16 0.84–0.94× (no change
        // at 4096, where memory bounds both). Loads stay folded (`vcvtph2ps` from memory):
        // splitting them the same way measured RoPE f16 1.15–1.37× slower.
        #[cfg(not(miri))]
        // SAFETY: `dst .. dst + 8` (16 bytes) is writable, this function's contract; the
        // instruction writes exactly those bytes (unaligned store), uses no stack and leaves
        // the flags alone. The block does not claim `nomem`, so the compiler keeps every
        // other memory access in order around it.
        core::arch::asm!(
            "vmovdqu xmmword ptr [{dst}], {h}",
            dst = in(reg) dst,
            h = in(xmm_reg) h,
            options(nostack, preserves_flags),
        );
        // Miri cannot run inline assembly: the same 16 bytes through the intrinsic.
        #[cfg(miri)]
        _mm_storeu_si128(dst.cast(), h);
    }
    #[inline(always)]
    unsafe fn ld_bf16(src: *const half::bf16) -> __m256 {
        // The bits moved into place. A signalling NaN stays signalling here, unlike
        // `half::bf16::to_f32`, which quiets it: every kernel feeds loaded values to a
        // multiply or add before storing, and x86 arithmetic returns the same NaN quieted
        // (bit 22 set), so outputs are unchanged. Skipping the four quieting operations makes
        // the load two instructions instead of six: a 128-bit broadcast load (no ALU work)
        // and one byte shuffle putting value `i` in the high half of lane `i`, zeros below.
        // (Zero-extending then shifting costs a shuffle and a shift; the integer and shuffle
        // pipes limit every bf16 loop on AVX2. This load with the store below, against the
        // former pair, in one process timing both builds: RoPE bf16 0.94–1.01× the time, the
        // bf16 ceiling pass 0.89–0.97×.)
        let b = _mm256_broadcastsi128_si256(_mm_loadu_si128(src.cast()));
        let idx = _mm256_setr_epi8(
            Z, Z, 0, 1, Z, Z, 2, 3, Z, Z, 4, 5, Z, Z, 6, 7, //
            Z, Z, 8, 9, Z, Z, 10, 11, Z, Z, 12, 13, Z, Z, 14, 15,
        );
        _mm256_castsi256_ps(_mm256_shuffle_epi8(b, idx))
    }
    #[inline(always)]
    unsafe fn st_bf16(v: __m256, dst: *mut half::bf16) {
        // The high halves of the lanes, gathered into the low quadword of each 128-bit lane,
        // then the two quadwords side by side.
        let idx = _mm256_setr_epi8(
            2, 3, 6, 7, 10, 11, 14, 15, Z, Z, Z, Z, Z, Z, Z, Z, //
            2, 3, 6, 7, 10, 11, 14, 15, Z, Z, Z, Z, Z, Z, Z, Z,
        );
        let words = _mm256_shuffle_epi8(bf16_hi(v), idx);
        let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(words);
        _mm_storeu_si128(dst.cast(), _mm256_castsi256_si128(packed))
    }
    #[inline(always)]
    unsafe fn load_i32_widen(src: &[i32]) -> __m256d {
        let src: &[i32; 4] = src[..4].try_into().unwrap();
        _mm256_cvtepi32_pd(_mm_loadu_si128(src.as_ptr().cast()))
    }
    #[inline(always)]
    unsafe fn round_f16(v: __m256) -> __m256 {
        _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v))
    }
    #[inline(always)]
    unsafe fn round_bf16(v: __m256) -> __m256 {
        _mm256_castsi256_ps(_mm256_and_si256(
            bf16_hi(v),
            _mm256_set1_epi32(0xffff_0000_u32 as i32),
        ))
    }
}

/// A byte-shuffle index (high bit set) that writes a zero byte.
const Z: i8 = -128;

/// The bf16 bit pattern of each lane in the high 16 bits of a 32-bit lane (the low 16 bits
/// are left over from the rounding; callers drop them): round to nearest even, the high half
/// of `x + 0x7fff + lsb`; NaN quieted, the high half of `x | 0x0040_0000`. Exactly
/// `half::bf16::from_f32`. (Leaving the result high saves the shift down, and `round_bf16`
/// the shift back up.)
#[inline(always)]
unsafe fn bf16_hi(v: __m256) -> __m256i {
    let x = _mm256_castps_si256(v);
    let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), _mm256_set1_epi32(1));
    let rounded = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb);
    let quiet = _mm256_or_si256(x, _mm256_set1_epi32(0x0040_0000));
    // NaN lanes by an unordered compare, an FP instruction: it leaves the integer pipes, which
    // the rest of this sequence keeps busy. Comparing `|x|` with the infinity pattern as
    // integers (two instructions) measured 1.11–1.35× the time of the bf16 ceiling pass and
    // 1.07–1.15× that of RoPE bf16 (one process timing both builds, 1–4096 tokens).
    let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
    _mm256_blendv_epi8(rounded, quiet, nan)
}

crate::arch::x86_64::entry_points!(Avx2, "avx2,fma,f16c");
