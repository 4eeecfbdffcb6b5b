//! The AVX2 + FMA + F16C tier: 8 f32 lanes (`__m256`), 4 f64 lanes (`__m256d`).
//!
//! What is specific to AVX2: the token and its one entry function (`run`), the lane
//! operations as intrinsics, and the f16/bf16 conversions. The f16 conversions are F16C's
//! (`vcvtph2ps`, `vcvtps2ph`, round to nearest even: `half`'s bits); bf16 has no instruction
//! here, so its rounding is integer arithmetic ([`Avx2::bf16_hi`]), arranged to keep the integer and
//! shuffle ports (which bound every bf16 loop on AVX2) as free as possible.

use crate::engine::detect;
use crate::engine::vector::{Kernel, Simd};
use core::arch::x86_64::*;

/// The AVX2 tier's token: proof that this CPU has AVX2, FMA and F16C. The private field
/// keeps every constructor in this file, and [`Avx2::new`] is the only one.
#[derive(Clone, Copy)]
pub(crate) struct Avx2(());

impl Avx2 {
    /// The token, if this CPU (or the build's target features) has AVX2, FMA and F16C.
    #[inline]
    pub(crate) fn new() -> Option<Avx2> {
        detect::avx2().then_some(Avx2(()))
    }

    /// Runs `k` with this tier's vectors, compiled with its features.
    #[inline(always)]
    pub(crate) fn vectorize<K: Kernel>(self, k: K) -> K::Output {
        // SAFETY: `run` needs AVX2, FMA and F16C, which `self` proves (`Avx2::new`).
        unsafe { run(self, k) }
    }
}

/// The AVX2 entry point: every kernel is instantiated here, where it inlines with the tier's
/// features enabled (`.ci/check-asm.sh` disassembles each instantiation).
#[target_feature(enable = "avx2,fma,f16c")]
fn run<K: Kernel>(t: Avx2, k: K) -> K::Output {
    k.run(t)
}

impl Simd for Avx2 {
    const LANES: usize = 8;
    const REGISTERS: usize = 16;
    const HALVES: bool = true;
    const BF16_PAIR: bool = true;
    const SPLIT_BF16: bool = true;
    const SPLIT_BF16_STREAM: bool = true;
    type F = __m256;
    type D = __m256d;

    #[inline(always)]
    fn splat(self, v: f32) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_set1_ps(v) }
    }
    #[inline(always)]
    fn add(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_mul_ps(a, b) }
    }
    #[inline(always)]
    fn mul_add(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn neg_mul_add(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_fnmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn swap_pairs(self, a: __m256) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_permute_ps::<0b10_11_00_01>(a) }
    }
    #[inline(always)]
    fn neg(self, a: __m256) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_xor_ps(a, _mm256_set1_ps(-0.0)) }
    }
    #[inline(always)]
    fn zip(self, a: __m256, b: __m256) -> (__m256, __m256) {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe {
            // unpack works per 128-bit half: [a0 b0 a1 b1 | a4 b4 a5 b5], [a2 b2 a3 b3 | a6 b6 a7 b7].
            let (lo, hi) = (_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
            (
                _mm256_permute2f128_ps::<0x20>(lo, hi),
                _mm256_permute2f128_ps::<0x31>(lo, hi),
            )
        }
    }
    #[inline(always)]
    fn quadrant(self, ylo: __m256d, yhi: __m256d, s: __m256, c: __m256) -> (__m256, __m256) {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe {
            // The low dword of each f64 lane holds k's low bits. `vshufps` takes dwords 0 and 2
            // of each 128-bit lane of `ylo` and of `yhi` (lanes 0, 1, 4, 5 | 2, 3, 6, 7 of k);
            // `vpermpd` puts the 64-bit pairs back in order.
            let mixed =
                _mm256_shuffle_ps::<0b10_00_10_00>(_mm256_castpd_ps(ylo), _mm256_castpd_ps(yhi));
            let q = _mm256_castpd_si256(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(
                mixed,
            )));
            // blendv reads the sign bit: k odd ⇔ bit 0, moved to bit 31.
            let odd = _mm256_castsi256_ps(_mm256_slli_epi32::<31>(q));
            let (s2, c2) = (_mm256_blendv_ps(s, c, odd), _mm256_blendv_ps(c, s, odd));
            // Bit 1 of k (sin's sign) and of k + 1 (cos's) shifted to the sign bit, where
            // `(k + 1) << 30 = (k << 30) + (1 << 30)`.
            let sign = _mm256_set1_epi32(i32::MIN);
            let ks = _mm256_slli_epi32::<30>(q);
            let sn = _mm256_and_si256(ks, sign);
            let cn = _mm256_and_si256(_mm256_add_epi32(ks, _mm256_set1_epi32(1 << 30)), sign);
            (
                _mm256_xor_ps(s2, _mm256_castsi256_ps(sn)),
                _mm256_xor_ps(c2, _mm256_castsi256_ps(cn)),
            )
        }
    }

    #[inline(always)]
    fn dsplat(self, v: f64) -> __m256d {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_set1_pd(v) }
    }
    #[inline(always)]
    fn dadd(self, a: __m256d, b: __m256d) -> __m256d {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_add_pd(a, b) }
    }
    #[inline(always)]
    fn dsub(self, a: __m256d, b: __m256d) -> __m256d {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_sub_pd(a, b) }
    }
    #[inline(always)]
    fn dmul(self, a: __m256d, b: __m256d) -> __m256d {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_mul_pd(a, b) }
    }
    #[inline(always)]
    fn dsquare_add(self, x: __m256d, acc: __m256d) -> __m256d {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_fmadd_pd(x, x, acc) }
    }
    #[inline(always)]
    fn dsub_exact(self, a: __m256d, k: __m256d, c: __m256d) -> __m256d {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_fnmadd_pd(k, c, a) }
    }
    #[inline(always)]
    fn narrow(self, lo: __m256d, hi: __m256d) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe {
            _mm256_insertf128_ps::<1>(
                _mm256_castps128_ps256(_mm256_cvtpd_ps(lo)),
                _mm256_cvtpd_ps(hi),
            )
        }
    }

    #[inline(always)]
    fn dquadrant(self, y: __m256d, s: __m256d, c: __m256d) -> (__m256d, __m256d) {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe {
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
    }
    #[inline(always)]
    unsafe fn st_d(self, v: __m256d, p: *mut f64) {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm256_storeu_pd(p, v) }
    }
    #[inline(always)]
    unsafe fn ld_widen(self, p: *const f32) -> __m256d {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm256_cvtps_pd(_mm_loadu_ps(p)) }
    }
    #[inline(always)]
    unsafe fn ld_d(self, p: *const f64) -> __m256d {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm256_loadu_pd(p) }
    }
    #[inline(always)]
    unsafe fn ld_f32(self, p: *const f32) -> __m256 {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn st_f32(self, v: __m256, p: *mut f32) {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm256_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn ld_f32_halves(self, lo: *const f32, hi: *const f32) -> __m256 {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointers address four lanes each (the caller's precondition).
        unsafe {
            _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi))
        }
    }
    #[inline(always)]
    unsafe fn st_f32_halves(self, v: __m256, lo: *mut f32, hi: *mut f32) {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointers address four lanes each (the caller's precondition).
        unsafe {
            _mm_storeu_ps(lo, _mm256_castps256_ps128(v));
            _mm_storeu_ps(hi, _mm256_extractf128_ps::<1>(v));
        }
    }
    #[inline(always)]
    unsafe fn ld_f16(self, src: *const half::f16) -> __m256 {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(src.cast())) }
    }
    #[inline(always)]
    unsafe fn st_f16(self, v: __m256, dst: *mut half::f16) {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
            // Converted in a register, then stored with `vmovdqu`: LLVM would fold the
            // intrinsic store into the memory form of `vcvtps2ph`, which is slower on Zen-family
            // cores (`cargo bench --bench ratio`, the f16 rows and the f16 ceiling pass, which
            // shares this store). Loads stay folded (`vcvtph2ps` from memory): splitting them
            // the same way measured slower in the same benchmark.
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
    }
    #[inline(always)]
    unsafe fn ld_bf16(self, src: *const half::bf16) -> __m256 {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe {
            // The bits moved into place (a signalling NaN stays signalling: see the trait).
            // Two instructions: a 128-bit broadcast load (no ALU work) and one byte shuffle
            // putting value `i` in the high half of lane `i`, zeros below. Zero-extending then
            // shifting costs one more shuffle-port operation (`cargo bench --bench ratio`, the
            // bf16 rows and the bf16 ceiling pass).
            let b = _mm256_broadcastsi128_si256(_mm_loadu_si128(src.cast()));
            let idx = _mm256_setr_epi8(
                Z, Z, 0, 1, Z, Z, 2, 3, Z, Z, 4, 5, Z, Z, 6, 7, //
                Z, Z, 8, 9, Z, Z, 10, 11, Z, Z, 12, 13, Z, Z, 14, 15,
            );
            _mm256_castsi256_ps(_mm256_shuffle_epi8(b, idx))
        }
    }
    #[inline(always)]
    unsafe fn st_bf16(self, v: __m256, dst: *mut half::bf16) {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe {
            // The high halves of the lanes, gathered into the low quadword of each 128-bit lane,
            // then the two quadwords side by side.
            let idx = _mm256_setr_epi8(
                2, 3, 6, 7, 10, 11, 14, 15, Z, Z, Z, Z, Z, Z, Z, Z, //
                2, 3, 6, 7, 10, 11, 14, 15, Z, Z, Z, Z, Z, Z, Z, Z,
            );
            let words = _mm256_shuffle_epi8(self.bf16_hi(v), idx);
            let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(words);
            _mm_storeu_si128(dst.cast(), _mm256_castsi256_si128(packed))
        }
    }
    #[inline(always)]
    unsafe fn st_bf16_pair(self, a: __m256, pa: *mut half::bf16, b: __m256, pb: *mut half::bf16) {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointers address the lanes (the
        // caller's precondition).
        unsafe {
            let w = self.bf16_two(a, b);
            _mm_storeu_si128(pa.cast(), _mm256_castsi256_si128(w));
            _mm_storeu_si128(pb.cast(), _mm256_extracti128_si256::<1>(w));
        }
    }
    #[inline(always)]
    unsafe fn st_bf16_joined(self, a: __m256, b: __m256, p: *mut half::bf16) {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the 16 values (the
        // caller's precondition).
        unsafe { _mm256_storeu_si256(p.cast(), self.bf16_two(a, b)) }
    }
    #[inline(always)]
    unsafe fn ld_bf16_split(self, p: *const half::bf16) -> (__m256, __m256) {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the 16 values (the
        // caller's precondition).
        unsafe {
            // Each 32-bit word holds an even value in its low half and the next one in its
            // high half: a shift and a mask widen both where they lie.
            let z = _mm256_loadu_si256(p.cast());
            (
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(z)),
                _mm256_castsi256_ps(_mm256_and_si256(z, _mm256_set1_epi32(-0x1_0000))),
            )
        }
    }
    #[inline(always)]
    unsafe fn st_bf16_merge(self, e: __m256, o: __m256, p: *mut half::bf16) {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the 16 values (the
        // caller's precondition).
        unsafe {
            let (he, ho) = self.bf16_hi2(e, o);
            // Word 2i: `e`'s pattern moved down; word 2i + 1: `o`'s where it lies.
            let w = _mm256_blend_epi16::<0b1010_1010>(_mm256_srli_epi32::<16>(he), ho);
            _mm256_storeu_si256(p.cast(), w)
        }
    }
    #[inline(always)]
    fn unzip(self, a: __m256, b: __m256) -> (__m256, __m256) {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe {
            // Even lanes to the low half, odd to the high half, then the halves of `a` and `b`
            // side by side.
            let idx = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
            let (pa, pb) = (
                _mm256_permutevar8x32_ps(a, idx),
                _mm256_permutevar8x32_ps(b, idx),
            );
            (
                _mm256_permute2f128_ps::<0x20>(pa, pb),
                _mm256_permute2f128_ps::<0x31>(pa, pb),
            )
        }
    }
    #[inline(always)]
    unsafe fn ld_i32_widen(self, p: *const i32) -> __m256d {
        // SAFETY: the token proves AVX2, FMA and F16C; the pointer addresses the lanes (the caller's precondition).
        unsafe { _mm256_cvtepi32_pd(_mm_loadu_si128(p.cast())) }
    }
    #[inline(always)]
    fn round_f16(self, v: __m256) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe { _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)) }
    }
    #[inline(always)]
    fn round_bf16(self, v: __m256) -> __m256 {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe {
            _mm256_castsi256_ps(_mm256_and_si256(
                self.bf16_hi(v),
                _mm256_set1_epi32(0xffff_0000_u32 as i32),
            ))
        }
    }
}

/// A byte-shuffle index (high bit set) that writes a zero byte.
const Z: i8 = -128;

impl Avx2 {
    /// The bf16 bit pattern of each lane in the high 16 bits of a 32-bit lane (the low 16 bits
    /// are left over from the rounding; callers drop them): round to nearest even, the high half
    /// of `x + 0x7fff + lsb`; NaN quieted, the high half of `x | 0x0040_0000`. Exactly
    /// `half::bf16::from_f32`. (Leaving the result high saves the shift down, and `round_bf16`
    /// the shift back up.)
    #[inline(always)]
    fn bf16_hi(self, v: __m256) -> __m256i {
        let rounded = self.bf16_rounded(v);
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe {
            let x = _mm256_castps_si256(v);
            let quiet = _mm256_or_si256(x, _mm256_set1_epi32(0x0040_0000));
            // NaN lanes by an unordered compare, an FP instruction: it leaves the integer ports,
            // which the rest of this sequence keeps busy (comparing `|x|` with the infinity pattern as
            // integers lost in `cargo bench --bench ratio`'s bf16 rows).
            let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
            _mm256_blendv_epi8(rounded, quiet, nan)
        }
    }

    /// [`Avx2::bf16_hi`] of a lane that is not NaN: the high half of `x + 0x7fff + lsb`.
    #[inline(always)]
    fn bf16_rounded(self, v: __m256) -> __m256i {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe {
            let x = _mm256_castps_si256(v);
            let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), _mm256_set1_epi32(1));
            _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb)
        }
    }

    /// [`Avx2::bf16_hi`] of `a` and of `b`. One unordered compare of `a` with `b` finds a NaN
    /// in either, and only then do the lanes take [`Avx2::bf16_hi`]'s quieting; otherwise
    /// each is [`Avx2::bf16_rounded`], three operations fewer per vector.
    #[inline(always)]
    fn bf16_hi2(self, a: __m256, b: __m256) -> (__m256i, __m256i) {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe {
            let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(a, b);
            if _mm256_testz_ps(nan, nan) != 0 {
                (self.bf16_rounded(a), self.bf16_rounded(b))
            } else {
                (self.bf16_hi(a), self.bf16_hi(b))
            }
        }
    }

    /// The bf16 patterns of `a`'s lanes then `b`'s, 16 words in order (as
    /// [`Simd::st_bf16_joined`] stores them): [`Avx2::bf16_hi2`], then one `vpackusdw` of the
    /// two vectors' high halves and one `vpermq` put the 16 patterns in order, where one
    /// vector at a time takes a byte shuffle and a `vpermq` each (`cargo bench --bench
    /// ratio`, the AVX2 bf16 rows).
    #[inline(always)]
    fn bf16_two(self, a: __m256, b: __m256) -> __m256i {
        // SAFETY: an `Avx2` token exists only on a CPU with AVX2, FMA and F16C (`Avx2::new`).
        unsafe {
            let (ha, hb) = self.bf16_hi2(a, b);
            // `vpackusdw` works per 128-bit half: [a0..a3 b0..b3 | a4..a7 b4..b7].
            let packed =
                _mm256_packus_epi32(_mm256_srli_epi32::<16>(ha), _mm256_srli_epi32::<16>(hb));
            _mm256_permute4x64_epi64::<0b11_01_10_00>(packed)
        }
    }
}
