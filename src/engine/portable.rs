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
        f32x8::new(a.to_array().map(|v| -v))
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
        f32x8::new(v.to_array().map(|x| f16::from_f32(x).to_f32()))
    }
    #[inline(always)]
    fn round_bf16(self, v: f32x8) -> f32x8 {
        f32x8::new(v.to_array().map(|x| bf16::from_f32(x).to_f32()))
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
        let h = unsafe { p.cast::<[f16; 8]>().read_unaligned() };
        f32x8::new(h.map(f16::to_f32))
    }
    #[inline(always)]
    unsafe fn st_f16(self, v: f32x8, p: *mut f16) {
        let h = v.to_array().map(f16::from_f32);
        // SAFETY: `p .. p + 8` is writable (the caller's precondition).
        unsafe { p.cast::<[f16; 8]>().write_unaligned(h) }
    }
    #[inline(always)]
    unsafe fn ld_bf16(self, p: *const bf16) -> f32x8 {
        // SAFETY: `p .. p + 8` is readable (the caller's precondition).
        let h = unsafe { p.cast::<[bf16; 8]>().read_unaligned() };
        f32x8::new(h.map(|b| f32::from_bits((b.to_bits() as u32) << 16)))
    }
    #[inline(always)]
    unsafe fn st_bf16(self, v: f32x8, p: *mut bf16) {
        let h = v.to_array().map(bf16::from_f32);
        // SAFETY: `p .. p + 8` is writable (the caller's precondition).
        unsafe { p.cast::<[bf16; 8]>().write_unaligned(h) }
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
        f64x4::new(v.map(f64::from))
    }
    #[inline(always)]
    unsafe fn ld_i32_widen(self, p: *const i32) -> f64x4 {
        // SAFETY: `p .. p + 4` is readable (the caller's precondition); unaligned read.
        let v = unsafe { p.cast::<[i32; 4]>().read_unaligned() };
        f64x4::new(v.map(f64::from))
    }
}
