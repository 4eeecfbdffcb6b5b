//! The reference tier: two lanes of plain IEEE operations in portable Rust, no intrinsics and
//! no fused multiply-adds. It runs the same kernels as every other tier, so it is the oracle
//! the SIMD tiers are tested against lane for lane, and the tier of last resort.

use super::vector::Simd;
use crate::trig;
use half::{bf16, f16};

/// The reference tier's token. Any code may make one: it needs nothing from the CPU.
#[derive(Clone, Copy)]
pub(crate) struct Scalar;

impl Simd for Scalar {
    const LANES: usize = 2;
    // Two f32 registers per value, of 16.
    const REGISTERS: usize = 8;
    const REFERENCE: bool = true;
    type F = [f32; 2];
    type D = f64;

    #[inline(always)]
    fn splat(self, v: f32) -> [f32; 2] {
        [v; 2]
    }
    #[inline(always)]
    fn add(self, a: [f32; 2], b: [f32; 2]) -> [f32; 2] {
        [a[0] + b[0], a[1] + b[1]]
    }
    #[inline(always)]
    fn sub(self, a: [f32; 2], b: [f32; 2]) -> [f32; 2] {
        [a[0] - b[0], a[1] - b[1]]
    }
    #[inline(always)]
    fn mul(self, a: [f32; 2], b: [f32; 2]) -> [f32; 2] {
        [a[0] * b[0], a[1] * b[1]]
    }
    #[inline(always)]
    fn mul_add(self, a: [f32; 2], b: [f32; 2], c: [f32; 2]) -> [f32; 2] {
        self.add(self.mul(a, b), c)
    }
    #[inline(always)]
    fn neg_mul_add(self, a: [f32; 2], b: [f32; 2], c: [f32; 2]) -> [f32; 2] {
        self.sub(c, self.mul(a, b))
    }
    #[inline(always)]
    fn swap_pairs(self, a: [f32; 2]) -> [f32; 2] {
        [a[1], a[0]]
    }
    #[inline(always)]
    fn neg(self, a: [f32; 2]) -> [f32; 2] {
        [-a[0], -a[1]]
    }
    #[inline(always)]
    fn zip(self, a: [f32; 2], b: [f32; 2]) -> ([f32; 2], [f32; 2]) {
        ([a[0], b[0]], [a[1], b[1]])
    }
    #[inline(always)]
    fn quadrant(self, ylo: f64, yhi: f64, s: [f32; 2], c: [f32; 2]) -> ([f32; 2], [f32; 2]) {
        let (s0, c0) = trig::quadrant_of(ylo, s[0], c[0]);
        let (s1, c1) = trig::quadrant_of(yhi, s[1], c[1]);
        ([s0, s1], [c0, c1])
    }
    #[inline(always)]
    fn round_f16(self, v: [f32; 2]) -> [f32; 2] {
        v.map(|x| f16::from_f32(x).to_f32())
    }
    #[inline(always)]
    fn round_bf16(self, v: [f32; 2]) -> [f32; 2] {
        v.map(|x| bf16::from_f32(x).to_f32())
    }

    #[inline(always)]
    fn dsplat(self, v: f64) -> f64 {
        v
    }
    #[inline(always)]
    fn dadd(self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn dsub(self, a: f64, b: f64) -> f64 {
        a - b
    }
    #[inline(always)]
    fn dmul(self, a: f64, b: f64) -> f64 {
        a * b
    }
    #[inline(always)]
    fn dsquare_add(self, x: f64, acc: f64) -> f64 {
        acc + x * x
    }
    #[inline(always)]
    fn dsub_exact(self, a: f64, k: f64, c: f64) -> f64 {
        a - k * c
    }
    #[inline(always)]
    fn narrow(self, lo: f64, hi: f64) -> [f32; 2] {
        [lo as f32, hi as f32]
    }
    #[inline(always)]
    fn dquadrant(self, y: f64, s: f64, c: f64) -> (f64, f64) {
        trig::quadrant_of(y, s, c)
    }

    #[inline(always)]
    unsafe fn ld_f32(self, p: *const f32) -> [f32; 2] {
        // SAFETY: `p .. p + 2` is readable (the caller's precondition); unaligned read.
        unsafe { p.cast::<[f32; 2]>().read_unaligned() }
    }
    #[inline(always)]
    unsafe fn st_f32(self, v: [f32; 2], p: *mut f32) {
        // SAFETY: `p .. p + 2` is writable (the caller's precondition); unaligned write.
        unsafe { p.cast::<[f32; 2]>().write_unaligned(v) }
    }
    #[inline(always)]
    unsafe fn ld_f16(self, p: *const f16) -> [f32; 2] {
        // SAFETY: `p .. p + 2` is readable (the caller's precondition).
        let h = unsafe { p.cast::<[f16; 2]>().read_unaligned() };
        h.map(f16::to_f32)
    }
    #[inline(always)]
    unsafe fn st_f16(self, v: [f32; 2], p: *mut f16) {
        // SAFETY: `p .. p + 2` is writable (the caller's precondition).
        unsafe { p.cast::<[f16; 2]>().write_unaligned(v.map(f16::from_f32)) }
    }
    #[inline(always)]
    unsafe fn ld_bf16(self, p: *const bf16) -> [f32; 2] {
        // SAFETY: `p .. p + 2` is readable (the caller's precondition).
        let h = unsafe { p.cast::<[bf16; 2]>().read_unaligned() };
        h.map(|b| f32::from_bits((b.to_bits() as u32) << 16))
    }
    #[inline(always)]
    unsafe fn st_bf16(self, v: [f32; 2], p: *mut bf16) {
        // SAFETY: `p .. p + 2` is writable (the caller's precondition).
        unsafe { p.cast::<[bf16; 2]>().write_unaligned(v.map(bf16::from_f32)) }
    }
    #[inline(always)]
    unsafe fn ld_d(self, p: *const f64) -> f64 {
        // SAFETY: `p` is readable (the caller's precondition); unaligned read.
        unsafe { p.read_unaligned() }
    }
    #[inline(always)]
    unsafe fn st_d(self, v: f64, p: *mut f64) {
        // SAFETY: `p` is writable (the caller's precondition); unaligned write.
        unsafe { p.write_unaligned(v) }
    }
    #[inline(always)]
    unsafe fn ld_widen(self, p: *const f32) -> f64 {
        // SAFETY: `p` is readable (the caller's precondition); unaligned read.
        unsafe { p.read_unaligned() as f64 }
    }
    #[inline(always)]
    unsafe fn ld_i32_widen(self, p: *const i32) -> f64 {
        // SAFETY: `p` is readable (the caller's precondition); unaligned read.
        unsafe { p.read_unaligned() as f64 }
    }
}
