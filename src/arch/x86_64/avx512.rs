//! The AVX-512F tier (+ F16C, FMA): 16 f32 lanes (`__m512`), 8 f64 lanes (`__m512d`).
//!
//! bf16 stores use integer round-to-nearest-even rather than AVX512-BF16's `vcvtneps2bf16`:
//! that instruction treats subnormal inputs as zero, which would break the bit-for-bit
//! agreement with `half::bf16::from_f32` the contract promises (the rounding itself is
//! memory-bound either way).
//! Safety model: see the parent module.
#![allow(unsafe_op_in_unsafe_fn)]

use super::Isa;
use core::arch::x86_64::*;

#[derive(Clone, Copy)]
pub(crate) struct Avx512;

impl Isa for Avx512 {
    const LANES: usize = 16;
    type F = __m512;
    type D = __m512d;

    #[inline(always)]
    unsafe fn splat(v: f32) -> __m512 {
        _mm512_set1_ps(v)
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        _mm512_add_ps(a, b)
    }
    #[inline(always)]
    unsafe fn sub(a: __m512, b: __m512) -> __m512 {
        _mm512_sub_ps(a, b)
    }
    #[inline(always)]
    unsafe fn mul(a: __m512, b: __m512) -> __m512 {
        _mm512_mul_ps(a, b)
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
        _mm512_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn fnmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
        _mm512_fnmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn swap_pairs(a: __m512) -> __m512 {
        _mm512_permute_ps::<0b10_11_00_01>(a)
    }
    #[inline(always)]
    unsafe fn neg(a: __m512) -> __m512 {
        // Integer xor: `_mm512_xor_ps` would need AVX512DQ.
        let sign = _mm512_set1_epi32(i32::MIN);
        _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), sign))
    }
    #[inline(always)]
    unsafe fn zip(a: __m512, b: __m512) -> (__m512, __m512) {
        // Indices 0..15 pick from `a`, 16..31 from `b`.
        let lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        let hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
        (
            _mm512_permutex2var_ps(a, lo, b),
            _mm512_permutex2var_ps(a, hi, b),
        )
    }
    #[inline(always)]
    unsafe fn quadrant(ylo: __m512d, yhi: __m512d, s: __m512, c: __m512) -> (__m512, __m512) {
        // The low dword of each f64 lane holds k's low bits (vpmovqd truncates to it).
        let ql = _mm512_cvtepi64_epi32(_mm512_castpd_si512(ylo));
        let qh = _mm512_cvtepi64_epi32(_mm512_castpd_si512(yhi));
        let q = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(ql), qh);
        let odd = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
        let (s2, c2) = (
            _mm512_mask_blend_ps(odd, s, c),
            _mm512_mask_blend_ps(odd, c, s),
        );
        let sign = _mm512_set1_epi32(i32::MIN);
        let sn = _mm512_and_si512(_mm512_slli_epi32::<30>(q), sign);
        let q1 = _mm512_add_epi32(q, _mm512_set1_epi32(1));
        let cn = _mm512_and_si512(_mm512_slli_epi32::<30>(q1), sign);
        let flip = |v: __m512, m: __m512i| {
            _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), m))
        };
        (flip(s2, sn), flip(c2, cn))
    }

    #[inline(always)]
    unsafe fn dsplat(v: f64) -> __m512d {
        _mm512_set1_pd(v)
    }
    #[inline(always)]
    unsafe fn dadd(a: __m512d, b: __m512d) -> __m512d {
        _mm512_add_pd(a, b)
    }
    #[inline(always)]
    unsafe fn dsub(a: __m512d, b: __m512d) -> __m512d {
        _mm512_sub_pd(a, b)
    }
    #[inline(always)]
    unsafe fn dmul(a: __m512d, b: __m512d) -> __m512d {
        _mm512_mul_pd(a, b)
    }
    #[inline(always)]
    unsafe fn narrow(lo: __m512d, hi: __m512d) -> __m512 {
        let lo = _mm512_castps256_ps512(_mm512_cvtpd_ps(lo));
        let hi = _mm256_castps_pd(_mm512_cvtpd_ps(hi));
        _mm512_castpd_ps(_mm512_insertf64x4::<1>(_mm512_castps_pd(lo), hi))
    }

    #[inline(always)]
    unsafe fn dquadrant(y: __m512d, s: __m512d, c: __m512d) -> (__m512d, __m512d) {
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
        let flip = |v: __m512d, m: __m512i| {
            _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(v), m))
        };
        (flip(s2, sn), flip(c2, cn))
    }
    #[inline(always)]
    unsafe fn store_d(v: __m512d, dst: &mut [f64]) {
        let dst: &mut [f64; 8] = (&mut dst[..8]).try_into().unwrap();
        _mm512_storeu_pd(dst.as_mut_ptr(), v)
    }
    #[inline(always)]
    unsafe fn load_widen(src: &[f32]) -> __m512d {
        let src: &[f32; 8] = src[..8].try_into().unwrap();
        _mm512_cvtps_pd(_mm256_loadu_ps(src.as_ptr()))
    }
    #[inline(always)]
    unsafe fn load_d(src: &[f64]) -> __m512d {
        let src: &[f64; 8] = src[..8].try_into().unwrap();
        _mm512_loadu_pd(src.as_ptr())
    }
    #[inline(always)]
    unsafe fn ld_f32(p: *const f32) -> __m512 {
        _mm512_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn st_f32(v: __m512, p: *mut f32) {
        _mm512_storeu_ps(p, v)
    }
    #[inline(always)]
    unsafe fn ld_f16(src: *const half::f16) -> __m512 {
        _mm512_cvtph_ps(_mm256_loadu_si256(src.cast()))
    }
    #[inline(always)]
    unsafe fn st_f16(v: __m512, dst: *mut half::f16) {
        _mm256_storeu_si256(dst.cast(), _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v))
    }
    #[inline(always)]
    unsafe fn ld_bf16(src: *const half::bf16) -> __m512 {
        // Signalling NaNs are not quieted here; see `avx2::ld_bf16` for why outputs are the
        // same.
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(
            _mm256_loadu_si256(src.cast()),
        )))
    }
    #[inline(always)]
    unsafe fn st_bf16(v: __m512, dst: *mut half::bf16) {
        _mm256_storeu_si256(dst.cast(), _mm512_cvtepi32_epi16(bf16_bits(v)))
    }
    #[inline(always)]
    unsafe fn load_i32_widen(src: &[i32]) -> __m512d {
        let src: &[i32; 8] = src[..8].try_into().unwrap();
        _mm512_cvtepi32_pd(_mm256_loadu_si256(src.as_ptr().cast()))
    }
    #[inline(always)]
    unsafe fn round_f16(v: __m512) -> __m512 {
        _mm512_cvtph_ps(_mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v))
    }
    #[inline(always)]
    unsafe fn round_bf16(v: __m512) -> __m512 {
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(bf16_bits(v)))
    }
}

/// The bf16 bit pattern of each lane in the low 16 bits of a 32-bit lane, exactly
/// `half::bf16::from_f32` (see `avx2::bf16_hi`).
#[inline(always)]
unsafe fn bf16_bits(v: __m512) -> __m512i {
    let x = _mm512_castps_si512(v);
    let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(1));
    let rounded = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb);
    let rounded = _mm512_srli_epi32::<16>(rounded);
    let quiet = _mm512_or_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(0x40));
    let abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7fff_ffff));
    let nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f80_0000));
    _mm512_mask_blend_epi32(nan, rounded, quiet)
}

crate::arch::x86_64::entry_points!(Avx512, "avx512f,avx2,fma,f16c");
