//! The portable tier: `wide` lanes, whatever SIMD the build targets (SSE2 on x86-64, NEON on
//! aarch64, simd128 on wasm32, scalar fallbacks elsewhere): 8 f32, 4 f64.
//!
//! Every lane performs exactly the operations of the scalar tier, with no fused multiply-add,
//! so this tier is bitwise equal to the reference: the differential tests check equality,
//! not a tolerance. Operations `wide` has no portable form for (shuffles, the quadrant's bit
//! tests, f16/bf16 conversions) go through arrays; `wide` cannot widen its lanes inside a
//! `#[target_feature]` function, which is why the x86 tiers are written with `core::arch`.

use super::vector::Simd;
use crate::trig;
use half::{bf16, f16};
use wide::{f32x8, f64x4};

/// The portable tier's token. Any code may make one: it uses only what the build targets.
#[derive(Clone, Copy)]
pub(crate) struct Portable;

impl Simd for Portable {
    const LANES: usize = 8;
    // Two 128-bit registers per value, 16 of them on x86-64 (SSE2).
    const REGISTERS: usize = 8;
    type F = f32x8;
    type D = f64x4;

    #[inline(always)]
    fn splat(self, v: f32) -> f32x8 {
        f32x8::splat(v)
    }
    #[inline(always)]
    fn add(self, a: f32x8, b: f32x8) -> f32x8 {
        a + b
    }
    #[inline(always)]
    fn sub(self, a: f32x8, b: f32x8) -> f32x8 {
        a - b
    }
    #[inline(always)]
    fn mul(self, a: f32x8, b: f32x8) -> f32x8 {
        a * b
    }
    #[inline(always)]
    fn mul_add(self, a: f32x8, b: f32x8, c: f32x8) -> f32x8 {
        a * b + c
    }
    #[inline(always)]
    fn neg_mul_add(self, a: f32x8, b: f32x8, c: f32x8) -> f32x8 {
        c - a * b
    }
    #[inline(always)]
    fn swap_pairs(self, a: f32x8) -> f32x8 {
        let a = a.to_array();
        f32x8::new([a[1], a[0], a[3], a[2], a[5], a[4], a[7], a[6]])
    }
    #[inline(always)]
    fn neg(self, a: f32x8) -> f32x8 {
        f32x8::new(lanes(a.to_array(), |v| -v))
    }
    #[inline(always)]
    fn zip(self, a: f32x8, b: f32x8) -> (f32x8, f32x8) {
        let (a, b) = (a.to_array(), b.to_array());
        (
            f32x8::new(core::array::from_fn(|i| {
                if i % 2 == 0 { a[i / 2] } else { b[i / 2] }
            })),
            f32x8::new(core::array::from_fn(|i| {
                if i % 2 == 0 {
                    a[4 + i / 2]
                } else {
                    b[4 + i / 2]
                }
            })),
        )
    }
    #[inline(always)]
    fn quadrant(self, ylo: f64x4, yhi: f64x4, s: f32x8, c: f32x8) -> (f32x8, f32x8) {
        let (yl, yh) = (ylo.to_array(), yhi.to_array());
        let (s, c) = (s.to_array(), c.to_array());
        let mut so = [0.0f32; 8];
        let mut co = [0.0f32; 8];
        for i in 0..8 {
            let y = if i < 4 { yl[i] } else { yh[i - 4] };
            (so[i], co[i]) = trig::quadrant_of(y, s[i], c[i]);
        }
        (f32x8::new(so), f32x8::new(co))
    }
    #[inline(always)]
    fn round_f16(self, v: f32x8) -> f32x8 {
        f32x8::new(lanes(v.to_array(), |x| f16_to_f32(f32_to_f16(x))))
    }
    #[inline(always)]
    fn round_bf16(self, v: f32x8) -> f32x8 {
        f32x8::new(lanes(v.to_array(), |x| bf16_to_f32(f32_to_bf16(x))))
    }

    #[inline(always)]
    fn dsplat(self, v: f64) -> f64x4 {
        f64x4::splat(v)
    }
    #[inline(always)]
    fn dadd(self, a: f64x4, b: f64x4) -> f64x4 {
        a + b
    }
    #[inline(always)]
    fn dsub(self, a: f64x4, b: f64x4) -> f64x4 {
        a - b
    }
    #[inline(always)]
    fn dmul(self, a: f64x4, b: f64x4) -> f64x4 {
        a * b
    }
    #[inline(always)]
    fn dsquare_add(self, x: f64x4, acc: f64x4) -> f64x4 {
        acc + x * x
    }
    #[inline(always)]
    fn dsub_exact(self, a: f64x4, k: f64x4, c: f64x4) -> f64x4 {
        a - k * c
    }
    #[inline(always)]
    fn narrow(self, lo: f64x4, hi: f64x4) -> f32x8 {
        let (lo, hi) = (lo.to_array(), hi.to_array());
        f32x8::new(core::array::from_fn(|i| {
            if i < 4 {
                lo[i] as f32
            } else {
                hi[i - 4] as f32
            }
        }))
    }
    #[inline(always)]
    fn dquadrant(self, y: f64x4, s: f64x4, c: f64x4) -> (f64x4, f64x4) {
        let (y, s, c) = (y.to_array(), s.to_array(), c.to_array());
        let mut so = [0.0f64; 4];
        let mut co = [0.0f64; 4];
        for i in 0..4 {
            (so[i], co[i]) = trig::quadrant_of(y[i], s[i], c[i]);
        }
        (f64x4::new(so), f64x4::new(co))
    }

    #[inline(always)]
    unsafe fn ld_f32(self, p: *const f32) -> f32x8 {
        // SAFETY: `p .. p + 8` is readable (the caller's precondition); unaligned read.
        f32x8::new(unsafe { p.cast::<[f32; 8]>().read_unaligned() })
    }
    #[inline(always)]
    unsafe fn st_f32(self, v: f32x8, p: *mut f32) {
        // SAFETY: `p .. p + 8` is writable (the caller's precondition); unaligned write.
        unsafe { p.cast::<[f32; 8]>().write_unaligned(v.to_array()) }
    }
    #[inline(always)]
    unsafe fn ld_f16(self, p: *const f16) -> f32x8 {
        // SAFETY: `p .. p + 8` is readable (the caller's precondition).
        let h = unsafe { p.cast::<[u16; 8]>().read_unaligned() };
        f32x8::new(lanes(h, f16_to_f32))
    }
    #[inline(always)]
    unsafe fn st_f16(self, v: f32x8, p: *mut f16) {
        let h = lanes(v.to_array(), f32_to_f16);
        // SAFETY: `p .. p + 8` is writable (the caller's precondition).
        unsafe { p.cast::<[u16; 8]>().write_unaligned(h) }
    }
    #[inline(always)]
    unsafe fn ld_bf16(self, p: *const bf16) -> f32x8 {
        // SAFETY: `p .. p + 8` is readable (the caller's precondition).
        let h = unsafe { p.cast::<[u16; 8]>().read_unaligned() };
        f32x8::new(lanes(h, bf16_to_f32))
    }
    #[inline(always)]
    unsafe fn st_bf16(self, v: f32x8, p: *mut bf16) {
        let h = lanes(v.to_array(), f32_to_bf16);
        // SAFETY: `p .. p + 8` is writable (the caller's precondition).
        unsafe { p.cast::<[u16; 8]>().write_unaligned(h) }
    }
    #[inline(always)]
    unsafe fn ld_d(self, p: *const f64) -> f64x4 {
        // SAFETY: `p .. p + 4` is readable (the caller's precondition); unaligned read.
        f64x4::new(unsafe { p.cast::<[f64; 4]>().read_unaligned() })
    }
    #[inline(always)]
    unsafe fn st_d(self, v: f64x4, p: *mut f64) {
        // SAFETY: `p .. p + 4` is writable (the caller's precondition); unaligned write.
        unsafe { p.cast::<[f64; 4]>().write_unaligned(v.to_array()) }
    }
    #[inline(always)]
    unsafe fn ld_widen(self, p: *const f32) -> f64x4 {
        // SAFETY: `p .. p + 4` is readable (the caller's precondition); unaligned read.
        let v = unsafe { p.cast::<[f32; 4]>().read_unaligned() };
        f64x4::new(lanes(v, f64::from))
    }
    #[inline(always)]
    unsafe fn ld_i32_widen(self, p: *const i32) -> f64x4 {
        // SAFETY: `p .. p + 4` is readable (the caller's precondition); unaligned read.
        let v = unsafe { p.cast::<[i32; 4]>().read_unaligned() };
        f64x4::new(lanes(v, f64::from))
    }
}

/// `f` on every lane of `a`: `a.map(f)`, but inlined. LLVM leaves `array::map` (its
/// `try_map`) out of line in a kernel as large as the RoPE driver, a call per vector that
/// also keeps the lanes from being vectorized (seen in `perf report` of the portable f16
/// RoPE), and a plain `#[inline]` here fares no better for f16; a loop over the lanes in an
/// always-inlined function is unrolled and vectorized. Except in unoptimised builds
/// (`posenc_unoptimized`, see `build.rs`): there every inlined copy keeps its own stack slots,
/// and the kernel's frame outgrew a test thread's stack (the fuzz replay at opt-level 0). The
/// switch is the opt-level, not `debug_assertions`, so that an optimised build with debug
/// assertions on (the test profile) compiles the portable tier as a release build does.
#[cfg_attr(not(posenc_unoptimized), inline(always))]
#[cfg_attr(posenc_unoptimized, inline)]
fn lanes<A: Copy, B: Copy + Default, const N: usize>(a: [A; N], f: impl Fn(A) -> B) -> [B; N] {
    let mut out = [B::default(); N];
    for i in 0..N {
        out[i] = f(a[i]);
    }
    out
}

// The 16-bit conversions, one lane at a time but without a branch, so that LLVM turns the
// loop over 8 lanes (`lanes`) into vector integer operations (SSE2, NEON, simd128) instead of
// 8 calls to `half`'s branchy conversions. The two that use the f32 adder give the same bits
// under a caller's flush-to-zero / denormals-are-zero modes: their operands and results are
// normal f32, except `f32_to_f16`'s input below 2^-126, which rounds to a zero f16 either way. Each gives `half`'s bits for every input: the tests run
// every f16/bf16 pattern and a dense f32 sample through this tier and compare bits with the
// scalar tier, which calls `half`. Selects are written as masks (`0 - bool`), not `if`, so no
// branch is left for LLVM to keep.

/// All ones when `c`, else zero.
#[inline]
fn mask(c: bool) -> u32 {
    0u32.wrapping_sub(c as u32)
}

/// `half::bf16::from_f32(x).to_bits()`: round to nearest even; a NaN keeps its sign and top
/// payload bits and becomes quiet.
#[inline]
fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    // Adding 0x7fff plus the kept part's lowest bit carries into bit 16 exactly when the
    // dropped half is above the tie, or at the tie with an odd kept part. Infinities and
    // the largest finite values carry into the exponent as rounding asks (to infinity).
    let rounded = b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16;
    let quiet = (b >> 16) | 0x40;
    let nan = mask(b & 0x7fff_ffff > 0x7f80_0000);
    ((quiet & nan) | (rounded & !nan)) as u16
}

/// `half::bf16::to_f32`, except that a signalling NaN stays signalling (as in every tier's
/// loads): the bits move up, nothing rounds.
#[inline]
fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// `half::f16::from_f32(x).to_bits()`: round to nearest even, overflow to infinity, f16
/// subnormals rounded like the rest, a NaN quiet with its top payload bits kept.
///
/// ```text
/// a = |x| as bits
/// a ≥ 2^16 (as f32 bits), or Inf/NaN  →  0x7c00, NaN: 0x7e00 | top payload
/// a < 2^-14 (f16 subnormal or zero)   →  bits of (|x| + 0.5) − bits of 0.5: the f32 adder
///                                        rounds |x| to a multiple of 2^-24 (f16's last
///                                        subnormal bit) to nearest even
/// otherwise                           →  rebias the exponent, round the 13 dropped bits to
///                                        nearest even by the same carry trick as bf16
/// ```
/// (F. Giesen's `float_to_half_fast3_rtne`, with `half`'s NaN payload.) Values from 65520 up
/// round to infinity through the third case, as they should.
#[inline]
fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = (b >> 16) & 0x8000;
    let a = b & 0x7fff_ffff;
    // Infinity, NaN and everything from 2^16 up.
    let nan = mask(a > 0x7f80_0000);
    let big = mask(a >= (127 + 16) << 23);
    let special = 0x7c00 | (nan & (0x0200 | ((a >> 13) & 0x03ff)));
    // f16 subnormals and zero: below 2^-14.
    let tiny = mask(a < 113 << 23);
    const HALF: u32 = 126 << 23; // 0.5: its ulp is 2^-24, f16's smallest subnormal
    let sub = (f32::from_bits(a) + f32::from_bits(HALF))
        .to_bits()
        .wrapping_sub(HALF);
    // Normal f16: rebias the exponent (−112 in the exponent field) and round 13 bits away.
    // (Wrapping: in the lanes below 2^-14 the subtraction wraps, and those lanes are masked.)
    let normal = a
        .wrapping_sub((127 - 15) << 23)
        .wrapping_add(0xfff + ((a >> 13) & 1))
        >> 13;
    let magnitude = (special & big) | (sub & tiny & !big) | (normal & !tiny & !big);
    (sign | magnitude) as u16
}

/// `half::f16::to_f32`: exact. A NaN comes out quiet with its payload shifted up, as
/// `vcvtph2ps` and `half` do.
///
/// ```text
/// m = (h & 0x7fff) << 13          the exponent and mantissa in f32's places
/// exponent 31 (Inf/NaN)   →  m + (255 − 31) << 23, plus the quiet bit for a NaN
/// exponent 0 (subnormal)  →  (m + 113 << 23) as f32 − 2^-14: the f32 subtraction
///                             normalises the mantissa, exactly
/// otherwise               →  m + (127 − 15) << 23
/// ```
#[inline]
fn f16_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let m = (h & 0x7fff) << 13;
    let exp = m & (0x7c00 << 13);
    let inf_nan = mask(exp == 0x7c00 << 13);
    let nan = mask(m > 0x7c00 << 13);
    let zero_sub = mask(exp == 0);
    let normal = m + ((127 - 15) << 23);
    let wide = (normal + ((128 - 16) << 23)) | (nan & 0x0040_0000);
    const MAGIC: u32 = 113 << 23; // 2^-14
    let sub = (f32::from_bits(m + MAGIC) - f32::from_bits(MAGIC)).to_bits();
    let magnitude = (wide & inf_nan) | (sub & zero_sub) | (normal & !inf_nan & !zero_sub);
    f32::from_bits(((h & 0x8000) << 16) | magnitude)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f16 pattern widens to `half`'s f32 bits; every bf16 pattern but a signalling
    /// NaN too (`half` quiets it; the loads of every tier keep it, and the first arithmetic
    /// operation on it quiets it).
    #[test]
    fn widening_matches_half_on_every_pattern() {
        for h in 0..=u16::MAX {
            assert_eq!(
                f16_to_f32(h).to_bits(),
                f16::from_bits(h).to_f32().to_bits(),
                "{h:#06x}"
            );
            let (ours, theirs) = (bf16_to_f32(h), bf16::from_bits(h).to_f32());
            if theirs.is_nan() {
                assert!(ours.is_nan() && ours.to_bits() | 0x0040_0000 == theirs.to_bits());
            } else {
                assert_eq!(ours.to_bits(), theirs.to_bits(), "{h:#06x}");
            }
        }
    }

    /// Narrowing gives `half`'s bits on f32 patterns that cover every exponent and sign, with
    /// mantissas on both sides of every tie of both formats (the low 13 / 16 bits near
    /// `1000…`), plus a stride through all 2^32 patterns. (`POSENC_EXHAUSTIVE=1` runs all
    /// 2^32; in release.)
    #[test]
    fn narrowing_matches_half() {
        let check = |b: u32| {
            let x = f32::from_bits(b);
            assert_eq!(
                f32_to_f16(x),
                f16::from_f32(x).to_bits(),
                "f16 of {b:#010x}"
            );
            assert_eq!(
                f32_to_bf16(x),
                bf16::from_f32(x).to_bits(),
                "bf16 of {b:#010x}"
            );
        };
        #[cfg(not(miri))]
        if std::env::var_os("POSENC_EXHAUSTIVE").is_some() {
            (0..=u32::MAX).for_each(check);
            return;
        }
        let stride = if cfg!(miri) { 0x0100_0f01 } else { 0x0000_0f01 };
        (0..=u32::MAX).step_by(stride).for_each(check);
        for sign in [0, 0x8000_0000u32] {
            for exp in 0..=255u32 {
                for low in [
                    0u32, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001,
                    0xffff, 0x1_0000, 0x1_8000, 0x7f_ffff,
                ] {
                    for top in [0u32, 0x2000, 0x7f_0000, 0x7f_e000] {
                        check(sign | exp << 23 | ((top | low) & 0x7f_ffff));
                    }
                }
            }
        }
    }
}
