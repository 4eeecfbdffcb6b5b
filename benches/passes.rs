//! The passes `ratio.rs` sets RoPE against, each with the timed backend's lanes: the 16-bit
//! bytes ceiling (`bytes16`) and the arithmetic floors of f32 and 16-bit RoPE (`floor32`,
//! `floor16`) and of the sinusoidal fill (`sinfloor`), and the sinusoidal fill's conversions
//! alone (`cvtfloor`). (The f32 bytes ceiling is posenc's own `bench::memory_ceiling_pass`.)

/// The 16-bit bytes ceiling: `x = x·3 + 1` over 16-bit integers, in place.
pub mod bytes16 {
    #[inline(always)]
    fn body(x: &mut [u16]) {
        for v in x.iter_mut() {
            *v = v.wrapping_mul(3).wrapping_add(1);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw,avx512f,avx2")]
    fn avx512(x: &mut [u16]) {
        body(x)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn avx2(x: &mut [u16]) {
        body(x)
    }

    /// The pass, with the widest integer lanes this CPU has (the loop auto-vectorises).
    pub fn pass(x: &mut [u16]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512bw")
                && crate::backend() != posenc::Backend::Avx2
            {
                // SAFETY: the CPU has AVX-512BW (and so AVX-512F and AVX2), checked above.
                return unsafe { avx512(x) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked above.
                return unsafe { avx2(x) };
            }
        }
        body(x)
    }
}

/// The f32 arithmetic floor: `x = (x·m)·a + b` (a multiply, then a fused multiply-add) in
/// place, RoPE's floating-point work per value with none of its other work.
pub mod floor32 {
    #[inline(always)]
    fn body(x: &mut [f32], m: f32, a: f32, b: f32) {
        for v in x.iter_mut() {
            *v = (*v * m).mul_add(a, b);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    fn avx512(x: &mut [f32], m: f32, a: f32, b: f32) {
        body(x, m, a, b)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn avx2(x: &mut [f32], m: f32, a: f32, b: f32) {
        body(x, m, a, b)
    }

    /// The pass with the timed backend's lanes (the loop auto-vectorises; `mul_add` is one
    /// FMA instruction where the target has FMA).
    pub fn pass(x: &mut [f32], m: f32, a: f32, b: f32) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && crate::backend() == posenc::Backend::Avx512
            {
                // SAFETY: the CPU has AVX-512F (and AVX2 and FMA with it), checked above.
                return unsafe { avx512(x, m, a, b) };
            }
            if std::arch::is_x86_feature_detected!("fma")
                && crate::backend() == posenc::Backend::Avx2
            {
                // SAFETY: the CPU has AVX2 and FMA (the AVX2 backend's requirements), checked
                // above.
                return unsafe { avx2(x, m, a, b) };
            }
        }
        body(x, m, a, b)
    }
}

/// The 16-bit arithmetic floor: in place, per value, a widening to f32 by the cheapest
/// instructions of the timed backend's lanes, RoPE's `(x·m)·a + b` (a multiply, then a fused
/// multiply-add, as `floor32`), and a narrowing by the cheapest instructions whatever their
/// rounding. f16 widens and narrows with F16C's `vcvtph2ps` / `vcvtps2ph`, the only f16
/// conversions these CPUs have; bf16 widens a 32-bit word's two values in place (a shift, a
/// mask) and narrows by truncation (a shift, a mask and an or: no rounding at all,
/// so cheaper than the round-to-nearest-even the contract requires, and it leaves values in
/// even/odd order, which a floor need not undo). Any 16-bit rotation under posenc's contract
/// (computed in f32, rounded once) does at least this per value: bytes ceiling ÷ floor is the
/// most it can reach.
pub mod floor16 {
    use posenc::{bf16, f16};

    /// One value at a time (the tails, and CPUs without the x86 passes below): f16 through
    /// `half`, bf16 widened by a shift and truncated.
    #[inline(always)]
    fn scalar(x: &mut [u16], is_f16: bool, m: f32, a: f32, b: f32) {
        for v in x.iter_mut() {
            let w = if is_f16 {
                f16::from_bits(*v).to_f32()
            } else {
                bf16::from_bits(*v).to_f32()
            };
            let y = (w * m).mul_add(a, b);
            *v = if is_f16 {
                f16::from_f32(y).to_bits()
            } else {
                (y.to_bits() >> 16) as u16
            };
        }
    }

    /// bf16 two values per 32-bit word, widened where they lie (the low one by a shift, the
    /// high one by a mask) and truncated back: integer and f32 lane operations only, so the
    /// loop auto-vectorises for whatever lanes it is compiled with (one body for every tier).
    #[inline(always)]
    fn bf16_words(x: &mut [u16], m: f32, a: f32, b: f32) {
        // SAFETY: u32 has no invalid bit patterns and `align_to_mut` splits `x` exactly;
        // `x` is borrowed mutably for the whole pass.
        let (head, words, tail) = unsafe { x.align_to_mut::<u32>() };
        for w in words.iter_mut() {
            let lo = (f32::from_bits(*w << 16) * m).mul_add(a, b);
            let hi = (f32::from_bits(*w & 0xFFFF_0000) * m).mul_add(a, b);
            *w = (lo.to_bits() >> 16) | (hi.to_bits() & 0xFFFF_0000);
        }
        scalar(head, false, m, a, b);
        scalar(tail, false, m, a, b);
    }

    /// One bf16 value at a time, rounded as the contract rounds (`half`: nearest-even, NaN
    /// quieted, subnormals kept).
    #[inline(always)]
    fn bf16_exact_scalar(x: &mut [u16], m: f32, a: f32, b: f32) {
        for v in x.iter_mut() {
            let y = (bf16::from_bits(*v).to_f32() * m).mul_add(a, b);
            *v = bf16::from_f32(y).to_bits();
        }
    }

    /// The exact passes' loop: `x` in blocks of `N` values through `block`, which rounds a
    /// block in place and returns true, or returns false having written nothing (a value its
    /// fast path cannot round as `half` does); such a block, and the tail, go value by value.
    /// (Only the x86-64 passes have fast paths.)
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn bf16_exact_blocks<const N: usize>(
        x: &mut [u16],
        m: f32,
        a: f32,
        b: f32,
        mut block: impl FnMut(&mut [u16]) -> bool,
    ) {
        let mut chunks = x.chunks_exact_mut(N);
        for c in &mut chunks {
            if !block(c) {
                bf16_exact_scalar(c, m, a, b);
            }
        }
        bf16_exact_scalar(chunks.into_remainder(), m, a, b);
    }

    /// `y` rounded to bf16 as `half` rounds it (nearest-even; a NaN quieted, its payload's
    /// top bits kept), the pattern in the high 16 bits: integer operations and one select,
    /// no branch (`half::bf16::from_f32` branches on NaN).
    #[inline(always)]
    fn bf16_round_hi(y: f32) -> u32 {
        let b = y.to_bits();
        let rounded = b.wrapping_add(0x7fff + ((b >> 16) & 1));
        let quiet = b | 0x0040_0000;
        let out = if b & 0x7fff_ffff > 0x7f80_0000 {
            quiet
        } else {
            rounded
        };
        out & 0xFFFF_0000
    }

    /// [`bf16_words`] rounded as the contract rounds ([`bf16_round_hi`]: the integer
    /// round-to-nearest-even, vectorised as integer lane operations).
    #[inline(always)]
    fn bf16_words_exact(x: &mut [u16], m: f32, a: f32, b: f32) {
        // SAFETY: u32 has no invalid bit patterns and `align_to_mut` splits `x` exactly;
        // `x` is borrowed mutably for the whole pass.
        let (head, words, tail) = unsafe { x.align_to_mut::<u32>() };
        for w in words.iter_mut() {
            let lo = (f32::from_bits(*w << 16) * m).mul_add(a, b);
            let hi = (f32::from_bits(*w & 0xFFFF_0000) * m).mul_add(a, b);
            *w = (bf16_round_hi(lo) >> 16) | bf16_round_hi(hi);
        }
        bf16_exact_scalar(head, m, a, b);
        bf16_exact_scalar(tail, m, a, b);
    }

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use std::arch::x86_64::*;

        #[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
        pub(super) fn bf16_avx512(x: &mut [u16], m: f32, a: f32, b: f32) {
            super::bf16_words(x, m, a, b)
        }

        #[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
        pub(super) fn bf16_exact_avx512(x: &mut [u16], m: f32, a: f32, b: f32) {
            super::bf16_words_exact(x, m, a, b)
        }

        /// [`super::bf16_words_exact`] on AVX2 by the sequence posenc's AVX2 tier rounds with
        /// (`avx2.rs`, `bf16_hi2`): 16 values per 32-byte load, widened where they lie (a
        /// shift, a mask), the integer round-to-nearest-even of both vectors after one
        /// unordered compare finds no NaN in either, and one word blend putting the rounded
        /// low values under the high ones. A block with a NaN is redone value by value.
        #[target_feature(enable = "avx2,fma,f16c")]
        pub(super) fn bf16_exact_avx2(x: &mut [u16], m: f32, a: f32, b: f32) {
            let (vm, va, vb) = (_mm256_set1_ps(m), _mm256_set1_ps(a), _mm256_set1_ps(b));
            let (high, bias, one) = (
                _mm256_set1_epi32(-0x1_0000),
                _mm256_set1_epi32(0x7fff),
                _mm256_set1_epi32(1),
            );
            super::bf16_exact_blocks::<16>(x, m, a, b, |c| {
                let p = c.as_mut_ptr();
                // SAFETY: `c` is 16 u16 (32 bytes), read and written by one unaligned access;
                // the CPU has the features enabled above (the caller checks).
                unsafe {
                    let z = _mm256_loadu_si256(p.cast());
                    let lo = _mm256_castsi256_ps(_mm256_slli_epi32::<16>(z));
                    let hi = _mm256_castsi256_ps(_mm256_and_si256(z, high));
                    let lo = _mm256_fmadd_ps(_mm256_mul_ps(lo, vm), va, vb);
                    let hi = _mm256_fmadd_ps(_mm256_mul_ps(hi, vm), va, vb);
                    let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(lo, hi);
                    if _mm256_testz_ps(nan, nan) != 0 {
                        let round = |v: __m256| {
                            let x = _mm256_castps_si256(v);
                            let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), one);
                            _mm256_add_epi32(_mm256_add_epi32(x, bias), lsb)
                        };
                        // Words 0, 2, 4, … from the low values' high halves, shifted down;
                        // words 1, 3, … from the high values' high halves, where they lie.
                        let w = _mm256_blend_epi16::<0b1010_1010>(
                            _mm256_srli_epi32::<16>(round(lo)),
                            round(hi),
                        );
                        _mm256_storeu_si256(p.cast(), w);
                        true
                    } else {
                        false
                    }
                }
            });
        }

        /// The words as they are, hidden from LLVM, which otherwise reads a test of bf16 bits
        /// against zero as a bf16 comparison and splits it into scalar ones (as posenc's
        /// `avx512.rs` notes for the same test).
        #[inline]
        #[target_feature(enable = "avx512f")]
        fn opaque(mut v: __m512i) -> __m512i {
            // SAFETY: the template is empty: no instruction runs, no memory or flag is touched.
            unsafe {
                std::arch::asm!("/* {0} */", inout(zmm_reg) v, options(pure, nomem, nostack, preserves_flags))
            };
            v
        }

        /// [`super::bf16_words_exact`] with AVX512-BF16, by the cheapest exact sequence
        /// found for 64 values (`benches/LOG.md`): each 32-value load widened by two word
        /// unpacks (values `0-3, 8-11, …` and `4-7, 12-15, …`), the arithmetic, two
        /// `vcvtne2ps2bf16` (whose results are `half`'s unless one is ±0: the instruction
        /// reads subnormal inputs as zero), one test of the 64 results for ±0 under one
        /// branch, and a qword permute per 32 results back into order. A block with a ±0
        /// result is redone value by value (the rare path, as in posenc's kernels).
        #[target_feature(enable = "avx512f,avx512bw,avx512bf16,avx2,fma,f16c")]
        pub(super) fn bf16_exact_avx512bf16(x: &mut [u16], m: f32, a: f32, b: f32) {
            let (vm, va, vb) = (_mm512_set1_ps(m), _mm512_set1_ps(a), _mm512_set1_ps(b));
            let zero = _mm512_setzero_si512();
            let low15 = _mm512_set1_epi16(0x7fff);
            // Qword `i` of the result from qword `idx[i]` of `vcvtne2ps2bf16`'s (values 0-3 of
            // the first vector's lanes in qword 0, of the second's in qword 4, …).
            let idx = _mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7);
            super::bf16_exact_blocks::<64>(x, m, a, b, |c| {
                let p = c.as_mut_ptr();
                // SAFETY: `c` is 64 u16 (128 bytes): two unaligned 64-byte accesses at `p`
                // and `p + 32`; the CPU has the features enabled above (the caller checks).
                unsafe {
                    let (z0, z1) = (
                        _mm512_loadu_si512(p.cast()),
                        _mm512_loadu_si512(p.add(32).cast()),
                    );
                    let w = [
                        _mm512_unpacklo_epi16(zero, z0),
                        _mm512_unpackhi_epi16(zero, z0),
                        _mm512_unpacklo_epi16(zero, z1),
                        _mm512_unpackhi_epi16(zero, z1),
                    ]
                    .map(|v| _mm512_fmadd_ps(_mm512_mul_ps(_mm512_castsi512_ps(v), vm), va, vb));
                    let r0 = opaque(std::mem::transmute::<__m512bh, __m512i>(
                        _mm512_cvtne2ps_pbh(w[1], w[0]),
                    ));
                    let r1 = opaque(std::mem::transmute::<__m512bh, __m512i>(
                        _mm512_cvtne2ps_pbh(w[3], w[2]),
                    ));
                    if (_mm512_testn_epi16_mask(r0, low15) | _mm512_testn_epi16_mask(r1, low15))
                        == 0
                    {
                        _mm512_storeu_si512(p.cast(), _mm512_permutexvar_epi64(idx, r0));
                        _mm512_storeu_si512(p.add(32).cast(), _mm512_permutexvar_epi64(idx, r1));
                        true
                    } else {
                        false
                    }
                }
            });
        }

        #[target_feature(enable = "avx2,fma,f16c")]
        pub(super) fn bf16_avx2(x: &mut [u16], m: f32, a: f32, b: f32) {
            super::bf16_words(x, m, a, b)
        }

        /// f16 with F16C's 512-bit conversions, 16 values per step; the tail by `scalar`.
        #[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
        pub(super) fn f16_avx512(x: &mut [u16], m: f32, a: f32, b: f32) {
            let (vm, va, vb) = (_mm512_set1_ps(m), _mm512_set1_ps(a), _mm512_set1_ps(b));
            let mut chunks = x.chunks_exact_mut(16);
            for c in &mut chunks {
                // SAFETY: `c` is 16 u16 (32 bytes), read and written by one unaligned access.
                unsafe {
                    let v = _mm512_cvtph_ps(_mm256_loadu_si256(c.as_ptr().cast()));
                    let y = _mm512_fmadd_ps(_mm512_mul_ps(v, vm), va, vb);
                    let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(y);
                    _mm256_storeu_si256(c.as_mut_ptr().cast(), h);
                }
            }
            super::scalar(chunks.into_remainder(), true, m, a, b);
        }

        /// f16 with F16C's 256-bit conversions, 8 values per step; the tail by `scalar`.
        #[target_feature(enable = "avx2,fma,f16c")]
        pub(super) fn f16_avx2(x: &mut [u16], m: f32, a: f32, b: f32) {
            let (vm, va, vb) = (_mm256_set1_ps(m), _mm256_set1_ps(a), _mm256_set1_ps(b));
            let mut chunks = x.chunks_exact_mut(8);
            for c in &mut chunks {
                // SAFETY: `c` is 8 u16 (16 bytes), read and written by one unaligned access.
                unsafe {
                    let v = _mm256_cvtph_ps(_mm_loadu_si128(c.as_ptr().cast()));
                    let y = _mm256_fmadd_ps(_mm256_mul_ps(v, vm), va, vb);
                    let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(y);
                    _mm_storeu_si128(c.as_mut_ptr().cast(), h);
                }
            }
            super::scalar(chunks.into_remainder(), true, m, a, b);
        }
    }

    /// The bf16 pass with the contract's rounding (`half`'s bits) instead of truncation, by
    /// the cheapest exact sequence found for the timed backend's lanes: with AVX512-BF16 the
    /// native rounding under its ±0 test, on AVX2 the tier's own integer rounding. Any bf16
    /// rotation posenc may ship does at least this per value. Elsewhere (AVX-512 without
    /// AVX512-BF16, other architectures) it is [`bf16_words_exact`] as the compiler builds it,
    /// never timed against those kernels: there it is an estimate, not a floor. (On AVX2 that
    /// loop took longer than the kernel itself, `benches/LOG.md` 2026-12-05 night.)
    pub fn pass_exact_bf16(x: &mut [u16], m: f32, a: f32, b: f32) {
        #[cfg(target_arch = "x86_64")]
        {
            use posenc::Backend;
            use std::arch::is_x86_feature_detected as has;
            let base = has!("avx2") && has!("fma") && has!("f16c");
            if crate::backend() == Backend::Avx512 && base && has!("avx512f") && has!("avx512bw") {
                // SAFETY: the CPU has every feature these passes enable, checked here.
                return unsafe {
                    if has!("avx512bf16") {
                        x86::bf16_exact_avx512bf16(x, m, a, b)
                    } else {
                        x86::bf16_exact_avx512(x, m, a, b)
                    }
                };
            }
            if matches!(crate::backend(), Backend::Avx512 | Backend::Avx2) && base {
                // SAFETY: the CPU has every feature this pass enables, checked above.
                return unsafe { x86::bf16_exact_avx2(x, m, a, b) };
            }
        }
        bf16_words_exact(x, m, a, b)
    }

    /// The pass over `x` (f16 bits if `is_f16`, else bf16 bits) with the timed backend's lanes.
    pub fn pass(x: &mut [u16], is_f16: bool, m: f32, a: f32, b: f32) {
        #[cfg(target_arch = "x86_64")]
        {
            use posenc::Backend;
            use std::arch::is_x86_feature_detected as has;
            let base = has!("avx2") && has!("fma") && has!("f16c");
            if crate::backend() == Backend::Avx512 && base && has!("avx512f") && has!("avx512bw") {
                // SAFETY: the CPU has every feature these passes enable, checked above.
                return unsafe {
                    if is_f16 {
                        x86::f16_avx512(x, m, a, b)
                    } else {
                        x86::bf16_avx512(x, m, a, b)
                    }
                };
            }
            if matches!(crate::backend(), Backend::Avx512 | Backend::Avx2) && base {
                // SAFETY: the CPU has every feature these passes enable, checked above.
                return unsafe {
                    if is_f16 {
                        x86::f16_avx2(x, m, a, b)
                    } else {
                        x86::bf16_avx2(x, m, a, b)
                    }
                };
            }
        }
        if is_f16 {
            scalar(x, true, m, a, b)
        } else {
            bf16_words(x, m, a, b)
        }
    }
}

/// The sinusoidal arithmetic floor: the f64 recurrence of `Sinusoidal::fill`
/// (`y(j + 2) = k·y(j + 1) − y(j)`, unfused, four f64 vectors of columns in registers, in
/// the kernel's loop order) and its rounding of every value to f32, with the rows
/// stored to a ring of `RING` rows that stays in L1: the work every table of the same size
/// and method costs with no memory traffic at all. A 16-bit table is that f32 table rounded
/// once more, so its fill costs at least this too.
pub mod sinfloor {
    pub const D: usize = 512;
    const RING: usize = 8;

    /// Rows per pass over a strip of columns (the kernel's `three_term::PASS`).
    const PASS: usize = 8;
    /// Columns per chunk (two per frequency of the kernel's `SIN_CHUNK`).
    const CHUNK: usize = 128;

    /// The kernel's loop order: per block of 256 rows and chunk of columns, passes of `PASS`
    /// rows over strips of `W` columns, each strip's state loaded from and stored back to
    /// the chunk's state arrays once per pass.
    #[inline(always)]
    fn body<const W: usize>(ring: &mut [f32], k: &[f64], y0: &[f64], y1: &[f64], rows: usize) {
        for _block in 0..rows / 256 {
            for c0 in (0..D).step_by(CHUNK) {
                let (mut ya, mut yb) = ([0.0f64; CHUNK], [0.0f64; CHUNK]);
                ya.copy_from_slice(&y0[c0..c0 + CHUNK]);
                yb.copy_from_slice(&y1[c0..c0 + CHUNK]);
                for j0 in (0..256).step_by(PASS) {
                    for c in (0..CHUNK).step_by(W) {
                        let (mut a, mut b, mut kk) = ([0.0f64; W], [0.0f64; W], [0.0f64; W]);
                        a.copy_from_slice(&ya[c..c + W]);
                        b.copy_from_slice(&yb[c..c + W]);
                        kk.copy_from_slice(&k[c0 + c..c0 + c + W]);
                        for j in (j0..j0 + PASS).step_by(2) {
                            let r = (j % RING) * D + c0 + c;
                            let (ra, rb) = ring[r..r + D + W].split_at_mut(D);
                            for i in 0..W {
                                ra[i] = a[i] as f32;
                            }
                            for i in 0..W {
                                a[i] = kk[i] * b[i] - a[i];
                            }
                            for i in 0..W {
                                rb[i] = b[i] as f32;
                            }
                            for i in 0..W {
                                b[i] = kk[i] * a[i] - b[i];
                            }
                        }
                        ya[c..c + W].copy_from_slice(&a);
                        yb[c..c + W].copy_from_slice(&b);
                    }
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    fn avx512(ring: &mut [f32], k: &[f64], y0: &[f64], y1: &[f64], rows: usize) {
        body::<32>(ring, k, y0, y1, rows)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn avx2(ring: &mut [f32], k: &[f64], y0: &[f64], y1: &[f64], rows: usize) {
        body::<16>(ring, k, y0, y1, rows)
    }

    /// `rows` rows (a multiple of 256) of a `D`-wide table into `ring` (`(RING + 1) · D`
    /// values), with the timed backend's lanes.
    pub fn pass(ring: &mut [f32], k: &[f64], y0: &[f64], y1: &[f64], rows: usize) {
        assert!(ring.len() > RING * D && k.len() == D && y0.len() == D && y1.len() == D);
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && crate::backend() == posenc::Backend::Avx512
            {
                // SAFETY: the CPU has AVX-512F (and AVX2 and FMA with it), checked above.
                return unsafe { avx512(ring, k, y0, y1, rows) };
            }
            if std::arch::is_x86_feature_detected!("fma")
                && crate::backend() == posenc::Backend::Avx2
            {
                // SAFETY: the CPU has AVX2 and FMA (the AVX2 backend's requirements), checked
                // above.
                return unsafe { avx2(ring, k, y0, y1, rows) };
            }
        }
        body::<8>(ring, k, y0, y1, rows)
    }
}

/// The least any fill computing in f64 does: every value of the table rounded once from f64
/// to f32 and stored, with no arithmetic (the f64 values come from one row's worth in L1).
/// Where this pass alone is slower than the plain write, no f64 method reaches the write.
pub mod cvtfloor {
    use posenc::Element;

    /// Values of the repeated f64 row.
    const D: usize = 512;

    #[inline(always)]
    fn body<T: Element>(out: &mut [T], src: &[f64]) {
        for row in out.chunks_exact_mut(D) {
            for (o, &s) in row.iter_mut().zip(src) {
                *o = T::from_f32(s as f32);
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    fn avx512<T: Element>(out: &mut [T], src: &[f64]) {
        body(out, src)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn avx2<T: Element>(out: &mut [T], src: &[f64]) {
        body(out, src)
    }

    /// `out` (whole rows of `D`) from `src` (`D` values), with the timed backend's lanes (f32
    /// is the pass; other types add their own rounding).
    pub fn pass<T: Element>(out: &mut [T], src: &[f64]) {
        assert!(src.len() == D && out.len().is_multiple_of(D));
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && crate::backend() == posenc::Backend::Avx512
            {
                // SAFETY: the CPU has AVX-512F (and AVX2 and FMA with it), checked above.
                return unsafe { avx512(out, src) };
            }
            if std::arch::is_x86_feature_detected!("fma")
                && crate::backend() == posenc::Backend::Avx2
            {
                // SAFETY: the CPU has AVX2 and FMA (the AVX2 backend's requirements), checked
                // above.
                return unsafe { avx2(out, src) };
            }
        }
        body(out, src)
    }
}
