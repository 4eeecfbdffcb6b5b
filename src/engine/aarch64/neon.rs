//! The NEON tier (aarch64 Advanced SIMD): 8 f32 lanes as two `float32x4_t`, 4 f64 lanes as
//! two `float64x2_t`.
//!
//! Why two q registers per vector: the 16-bit formats then load and store 8 values (one q
//! register) at a time, and convert them with one widening pair (`fcvtl`/`fcvtl2`,
//! `shll`/`shll2`) and one narrowing pair (`fcvtn`/`fcvtn2`, `uzp2`/`uzp1`), and the driver's
//! per-vector bookkeeping is paid once per 8 lanes, as on AVX2. (A 4-lane variant was not
//! built; `benches/LOG.md` has llvm-mca's prediction for this one.)
//!
//! The f16 conversions are the base ARMv8 `fcvtl`/`fcvtn` instructions, round to nearest
//! even by the default FPCR (subnormals kept, NaN quieted with its payload's top bits,
//! overflow to infinity): `half`'s bits. They are written as inline assembly because their
//! `core::arch` forms (`vcvt_f32_f16`, …) need the `float16x4_t` type, newer than this
//! crate's minimum Rust. bf16 has no base instruction, so its rounding is integer arithmetic
//! on the 16-bit halves ([`Neon::narrow_bf16`]); on CPUs with FEAT_BF16 (Neoverse V1/V2/N2,
//! Apple M2 and later) the kernels that round to bf16 run in a second entry function
//! (`run_bf16`, token `Neon<true>`) that rounds with `bfcvtn`/`bfcvtn2` ([`bfcvtn`]), the same
//! bits in two instructions per 8 values.
//!
//! `mul_add` is `fmla`/`fmls` (one rounding), so rotations agree with the scalar tier within
//! the documented bound, exactly like the x86 tiers; every other method is one IEEE operation
//! per lane, so cos/sin tables and sinusoidal values are bitwise the scalar tier's.

use crate::engine::detect;
use crate::engine::vector::{Kernel, Simd};
use core::arch::aarch64::*;
use core::arch::asm;

/// The NEON tier's token: proof that this CPU has Advanced SIMD, and with `BF16`, FEAT_BF16
/// too. The private field keeps every constructor in this file: [`Neon::new`], then
/// [`Neon::native_bf16`].
#[derive(Clone, Copy)]
pub(crate) struct Neon<const BF16: bool = false>(());

impl Neon {
    /// The token, if this CPU (or the build's target features) has NEON.
    #[inline]
    pub(crate) fn new() -> Option<Neon> {
        detect::neon().then_some(Neon(()))
    }

    /// The token that also rounds to bf16 with `bfcvtn`, if this CPU has FEAT_BF16.
    #[inline]
    pub(crate) fn native_bf16(self) -> Option<Neon<true>> {
        detect::neon_bf16().then_some(Neon(()))
    }

    /// Runs `k` with this tier's vectors, compiled with its features.
    #[inline(always)]
    pub(crate) fn vectorize<K: Kernel>(self, k: K) -> K::Output {
        // SAFETY: `run` needs NEON, which `self` proves (`Neon::new`).
        unsafe { run(self, k) }
    }
}

impl Neon<true> {
    /// Runs `k` with this tier's vectors and `bfcvtn`.
    #[inline(always)]
    pub(crate) fn vectorize<K: Kernel>(self, k: K) -> K::Output {
        // SAFETY: `run_bf16` needs NEON and FEAT_BF16, which `self` proves
        // (`Neon::native_bf16`).
        unsafe { run_bf16(self, k) }
    }
}

/// The NEON entry point: every kernel is instantiated here, where it inlines with the tier's
/// features enabled (`.ci/check-asm.sh` disassembles each instantiation). Marked
/// `#[inline(never)]`: NEON is a baseline feature of aarch64 targets, so LLVM would otherwise
/// merge this function into `dispatch` and leave no symbol to check (the call costs one per
/// public call). LLVM still merges the smallest instantiations (the memory ceiling's) into
/// their callers, which have the same features; check-asm checks those callers instead.
#[inline(never)]
#[target_feature(enable = "neon")]
fn run<K: Kernel>(t: Neon, k: K) -> K::Output {
    k.run(t)
}

/// The entry point of the kernels that round to bf16 ([`Kernel::ROUNDS_TO_BF16`]), on CPUs
/// with FEAT_BF16.
#[inline(never)]
#[target_feature(enable = "neon,bf16")]
fn run_bf16<K: Kernel>(t: Neon<true>, k: K) -> K::Output {
    k.run(t)
}

/// 8 f32 lanes: lanes 0..4 in the first register, 4..8 in the second.
#[derive(Clone, Copy)]
pub(crate) struct F32x8(float32x4_t, float32x4_t);

/// 4 f64 lanes: lanes 0..2 in the first register, 2..4 in the second.
#[derive(Clone, Copy)]
pub(crate) struct F64x4(float64x2_t, float64x2_t);

impl<const BF16: bool> Simd for Neon<BF16> {
    const LANES: usize = 8;
    // The integer rounding tests two vectors for NaN at once; `bfcvtn` needs no test.
    const BF16_PAIR: bool = !BF16;
    // Two of the 32 q registers per value.
    const REGISTERS: usize = 16;
    type F = F32x8;
    type D = F64x4;

    #[inline(always)]
    fn splat(self, v: f32) -> F32x8 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe {
            let v = vdupq_n_f32(v);
            F32x8(v, v)
        }
    }
    #[inline(always)]
    fn add(self, a: F32x8, b: F32x8) -> F32x8 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F32x8(vaddq_f32(a.0, b.0), vaddq_f32(a.1, b.1)) }
    }
    #[inline(always)]
    fn sub(self, a: F32x8, b: F32x8) -> F32x8 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F32x8(vsubq_f32(a.0, b.0), vsubq_f32(a.1, b.1)) }
    }
    #[inline(always)]
    fn mul(self, a: F32x8, b: F32x8) -> F32x8 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F32x8(vmulq_f32(a.0, b.0), vmulq_f32(a.1, b.1)) }
    }
    #[inline(always)]
    fn mul_add(self, a: F32x8, b: F32x8, c: F32x8) -> F32x8 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F32x8(vfmaq_f32(c.0, a.0, b.0), vfmaq_f32(c.1, a.1, b.1)) }
    }
    #[inline(always)]
    fn neg_mul_add(self, a: F32x8, b: F32x8, c: F32x8) -> F32x8 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F32x8(vfmsq_f32(c.0, a.0, b.0), vfmsq_f32(c.1, a.1, b.1)) }
    }
    #[inline(always)]
    fn swap_pairs(self, a: F32x8) -> F32x8 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F32x8(vrev64q_f32(a.0), vrev64q_f32(a.1)) }
    }
    #[inline(always)]
    fn neg(self, a: F32x8) -> F32x8 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F32x8(vnegq_f32(a.0), vnegq_f32(a.1)) }
    }
    #[inline(always)]
    fn zip(self, a: F32x8, b: F32x8) -> (F32x8, F32x8) {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe {
            (
                F32x8(vzip1q_f32(a.0, b.0), vzip2q_f32(a.0, b.0)),
                F32x8(vzip1q_f32(a.1, b.1), vzip2q_f32(a.1, b.1)),
            )
        }
    }
    #[inline(always)]
    fn quadrant(self, ylo: F64x4, yhi: F64x4, s: F32x8, c: F32x8) -> (F32x8, F32x8) {
        let (s0, c0) = self.quadrant4(self.low_words(ylo), s.0, c.0);
        let (s1, c1) = self.quadrant4(self.low_words(yhi), s.1, c.1);
        (F32x8(s0, s1), F32x8(c0, c1))
    }
    #[inline(always)]
    fn round_f16(self, v: F32x8) -> F32x8 {
        self.widen_f16(self.narrow_f16(v))
    }
    #[inline(always)]
    fn round_bf16(self, v: F32x8) -> F32x8 {
        self.widen_bf16(self.narrow_bf16(v))
    }

    #[inline(always)]
    fn dsplat(self, v: f64) -> F64x4 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe {
            let v = vdupq_n_f64(v);
            F64x4(v, v)
        }
    }
    #[inline(always)]
    fn dadd(self, a: F64x4, b: F64x4) -> F64x4 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F64x4(vaddq_f64(a.0, b.0), vaddq_f64(a.1, b.1)) }
    }
    #[inline(always)]
    fn dsub(self, a: F64x4, b: F64x4) -> F64x4 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F64x4(vsubq_f64(a.0, b.0), vsubq_f64(a.1, b.1)) }
    }
    #[inline(always)]
    fn dmul(self, a: F64x4, b: F64x4) -> F64x4 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F64x4(vmulq_f64(a.0, b.0), vmulq_f64(a.1, b.1)) }
    }
    #[inline(always)]
    fn dsquare_add(self, x: F64x4, acc: F64x4) -> F64x4 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F64x4(vfmaq_f64(acc.0, x.0, x.0), vfmaq_f64(acc.1, x.1, x.1)) }
    }
    #[inline(always)]
    fn dsub_exact(self, a: F64x4, k: F64x4, c: F64x4) -> F64x4 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { F64x4(vfmsq_f64(a.0, k.0, c.0), vfmsq_f64(a.1, k.1, c.1)) }
    }
    #[inline(always)]
    fn narrow(self, lo: F64x4, hi: F64x4) -> F32x8 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe {
            // fcvtn / fcvtn2: f64 → f32 rounded to nearest even, as `as f32`.
            F32x8(
                vcvt_high_f32_f64(vcvt_f32_f64(lo.0), lo.1),
                vcvt_high_f32_f64(vcvt_f32_f64(hi.0), hi.1),
            )
        }
    }
    #[inline(always)]
    fn dquadrant(self, y: F64x4, s: F64x4, c: F64x4) -> (F64x4, F64x4) {
        let (s0, c0) = self.dquadrant2(y.0, s.0, c.0);
        let (s1, c1) = self.dquadrant2(y.1, s.1, c.1);
        (F64x4(s0, s1), F64x4(c0, c1))
    }

    #[inline(always)]
    unsafe fn ld_f32(self, p: *const f32) -> F32x8 {
        // SAFETY: the token proves NEON; `p .. p + 8` is readable (the caller's precondition).
        unsafe { F32x8(vld1q_f32(p), vld1q_f32(p.add(4))) }
    }
    #[inline(always)]
    unsafe fn st_f32(self, v: F32x8, p: *mut f32) {
        // SAFETY: the token proves NEON; `p .. p + 8` is writable (the caller's precondition).
        unsafe {
            vst1q_f32(p, v.0);
            vst1q_f32(p.add(4), v.1);
        }
    }
    #[inline(always)]
    unsafe fn ld_f16(self, src: *const half::f16) -> F32x8 {
        // SAFETY: the token proves NEON; `src .. src + 8` (16 bytes) is readable (the caller's
        // precondition).
        let h = unsafe { vld1q_u16(src.cast()) };
        self.widen_f16(h)
    }
    #[inline(always)]
    unsafe fn st_f16(self, v: F32x8, dst: *mut half::f16) {
        let h = self.narrow_f16(v);
        // SAFETY: the token proves NEON; `dst .. dst + 8` (16 bytes) is writable (the caller's
        // precondition).
        unsafe { vst1q_u16(dst.cast(), h) }
    }
    #[inline(always)]
    unsafe fn ld_bf16(self, src: *const half::bf16) -> F32x8 {
        // SAFETY: the token proves NEON; `src .. src + 8` (16 bytes) is readable (the caller's
        // precondition).
        let h = unsafe { vld1q_u16(src.cast()) };
        self.widen_bf16(h)
    }
    #[inline(always)]
    unsafe fn st_bf16(self, v: F32x8, dst: *mut half::bf16) {
        let h = self.narrow_bf16(v);
        // SAFETY: the token proves NEON; `dst .. dst + 8` (16 bytes) is writable (the caller's
        // precondition).
        unsafe { vst1q_u16(dst.cast(), h) }
    }
    #[inline(always)]
    unsafe fn st_bf16_pair(self, a: F32x8, pa: *mut half::bf16, b: F32x8, pb: *mut half::bf16) {
        if BF16 {
            // SAFETY: the caller's precondition.
            unsafe {
                self.st_bf16(a, pa);
                self.st_bf16(b, pb);
            }
            return;
        }
        // One NaN test for 16 values: `fmax` and `fmaxv` return NaN when any lane is one. Only
        // then do the lanes need `narrow_bf16`'s quieting blend; otherwise the rounding alone
        // gives `half`'s bits. Fewer vector operations per value in the bound loop (llvm-mca
        // on the bf16 Rotate loop: `benches/mca/neon.py`).
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        let nan = unsafe { vmaxvq_f32(vmaxq_f32(vmaxq_f32(a.0, a.1), vmaxq_f32(b.0, b.1))) };
        let (ha, hb) = if nan.is_nan() {
            (self.narrow_bf16(a), self.narrow_bf16(b))
        } else {
            (self.round_bf16_halves(a).1, self.round_bf16_halves(b).1)
        };
        // SAFETY: the token proves NEON; `pa .. pa + 8` and `pb .. pb + 8` (16 bytes each) are
        // writable (the caller's precondition).
        unsafe {
            vst1q_u16(pa.cast(), ha);
            vst1q_u16(pb.cast(), hb);
        }
    }
    #[inline(always)]
    unsafe fn ld_d(self, p: *const f64) -> F64x4 {
        // SAFETY: the token proves NEON; `p .. p + 4` is readable (the caller's precondition).
        unsafe { F64x4(vld1q_f64(p), vld1q_f64(p.add(2))) }
    }
    #[inline(always)]
    unsafe fn st_d(self, v: F64x4, p: *mut f64) {
        // SAFETY: the token proves NEON; `p .. p + 4` is writable (the caller's precondition).
        unsafe {
            vst1q_f64(p, v.0);
            vst1q_f64(p.add(2), v.1);
        }
    }
    #[inline(always)]
    unsafe fn ld_widen(self, p: *const f32) -> F64x4 {
        // SAFETY: the token proves NEON; `p .. p + 4` is readable (the caller's precondition).
        unsafe {
            let v = vld1q_f32(p);
            F64x4(vcvt_f64_f32(vget_low_f32(v)), vcvt_high_f64_f32(v))
        }
    }
    #[inline(always)]
    unsafe fn ld_i32_widen(self, p: *const i32) -> F64x4 {
        // SAFETY: the token proves NEON; `p .. p + 4` is readable (the caller's precondition).
        unsafe {
            // i32 → i64 (sign-extended) → f64: exact, every i32 is an f64.
            let v = vld1q_s32(p);
            F64x4(
                vcvtq_f64_s64(vmovl_s32(vget_low_s32(v))),
                vcvtq_f64_s64(vmovl_high_s32(v)),
            )
        }
    }
}

impl<const BF16: bool> Neon<BF16> {
    /// The low 32 bits of each f64 lane of `y`, in lane order (`k`'s low bits: see
    /// [`Simd::quadrant`]).
    #[inline(always)]
    fn low_words(self, y: F64x4) -> uint32x4_t {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe { vuzp1q_u32(vreinterpretq_u32_f64(y.0), vreinterpretq_u32_f64(y.1)) }
    }

    /// [`Simd::quadrant`] on 4 lanes, `k`'s low bits in `q`: swap where `k` is odd, flip the
    /// sign of sin where `k & 2`, of cos where `(k + 1) & 2` (a sign flip, as scalar negation).
    #[inline(always)]
    fn quadrant4(
        self,
        q: uint32x4_t,
        s: float32x4_t,
        c: float32x4_t,
    ) -> (float32x4_t, float32x4_t) {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe {
            let odd = vtstq_u32(q, vdupq_n_u32(1));
            let (s2, c2) = (vbslq_f32(odd, c, s), vbslq_f32(odd, s, c));
            let sign = vdupq_n_u32(0x8000_0000);
            let sn = vandq_u32(vshlq_n_u32::<30>(q), sign);
            let cn = vandq_u32(vshlq_n_u32::<30>(vaddq_u32(q, vdupq_n_u32(1))), sign);
            (
                vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(s2), sn)),
                vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(c2), cn)),
            )
        }
    }

    /// [`Simd::dquadrant`] on 2 lanes: `k` in the low bits of each lane of `y`.
    #[inline(always)]
    fn dquadrant2(
        self,
        y: float64x2_t,
        s: float64x2_t,
        c: float64x2_t,
    ) -> (float64x2_t, float64x2_t) {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe {
            let q = vreinterpretq_u64_f64(y);
            let odd = vtstq_u64(q, vdupq_n_u64(1));
            let (s2, c2) = (vbslq_f64(odd, c, s), vbslq_f64(odd, s, c));
            let sign = vdupq_n_u64(1 << 63);
            let sn = vandq_u64(vshlq_n_u64::<62>(q), sign);
            let cn = vandq_u64(vshlq_n_u64::<62>(vaddq_u64(q, vdupq_n_u64(1))), sign);
            (
                vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(s2), sn)),
                vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(c2), cn)),
            )
        }
    }

    /// 8 f16 bit patterns widened exactly to f32 (`fcvtl`, `fcvtl2`).
    #[inline(always)]
    fn widen_f16(self, h: uint16x8_t) -> F32x8 {
        let (lo, hi): (float32x4_t, float32x4_t);
        // SAFETY: `fcvtl`/`fcvtl2` are base ARMv8 Advanced SIMD instructions (the token proves
        // NEON); they read and write the named vector registers only: no memory, no stack,
        // no flags.
        unsafe {
            asm!(
                "fcvtl {lo:v}.4s, {h:v}.4h",
                "fcvtl2 {hi:v}.4s, {h:v}.8h",
                h = in(vreg) h,
                // `out`, not `lateout`: `lo` is written before `h` is read the second time.
                lo = out(vreg) lo,
                hi = lateout(vreg) hi,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        F32x8(lo, hi)
    }

    /// The 8 lanes rounded to f16 bit patterns (`fcvtn`, `fcvtn2`): round to nearest even by
    /// the FPCR's default mode, subnormals kept, overflow to infinity, NaN quieted keeping the
    /// payload's top bits — exactly `half::f16::from_f32`.
    #[inline(always)]
    fn narrow_f16(self, v: F32x8) -> uint16x8_t {
        let h: uint16x8_t;
        // SAFETY: `fcvtn`/`fcvtn2` are base ARMv8 Advanced SIMD instructions (the token proves
        // NEON); they read and write the named vector registers only: no memory, no stack,
        // no flags.
        unsafe {
            asm!(
                "fcvtn {h:v}.4h, {lo:v}.4s",
                "fcvtn2 {h:v}.8h, {hi:v}.4s",
                lo = in(vreg) v.0,
                hi = in(vreg) v.1,
                // `out`, not `lateout`: `h` is written before `hi` is read.
                h = out(vreg) h,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        h
    }

    /// 8 bf16 bit patterns widened to f32 by moving the bits into place (`shll`/`shll2` by
    /// 16: value `i` in the high half of lane `i`, zeros below). A signalling NaN stays
    /// signalling (see the trait).
    #[inline(always)]
    fn widen_bf16(self, h: uint16x8_t) -> F32x8 {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe {
            F32x8(
                vreinterpretq_f32_u32(vshll_n_u16::<16>(vget_low_u16(h))),
                vreinterpretq_f32_u32(vshll_high_n_u16::<16>(h)),
            )
        }
    }

    /// The 8 lanes rounded to bf16 bit patterns exactly as `half::bf16::from_f32`: round to
    /// nearest even (the high half of `x + 0x7fff + lsb`), NaN quieted (the high half of
    /// `x | 0x0040_0000`).
    ///
    /// Worked on the 16-bit halves of the 8 lanes, 8 at a time: `uzp2`/`uzp1` split the high
    /// halves (the truncated bf16) from the low ones (the bits rounding drops), and the carry
    /// of `x + 0x7fff + lsb` out of the low half is the compare `lo + lsb > 0x8000`. This
    /// takes fewer vector operations than rounding each 32-bit lane and gathering the high
    /// halves afterwards (llvm-mca on the bf16 Rotate loop, `benches/LOG.md`).
    ///
    /// With FEAT_BF16 (`Neon<true>`), `bfcvtn`/`bfcvtn2` instead: see [`bfcvtn`].
    #[inline(always)]
    fn narrow_bf16(self, v: F32x8) -> uint16x8_t {
        if BF16 {
            // SAFETY: `Neon<true>` exists only on a CPU with FEAT_BF16 (`Neon::native_bf16`).
            return unsafe { bfcvtn(v) };
        }
        let (hi, rounded) = self.round_bf16_halves(v);
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe {
            let quiet = vorrq_u16(hi, vdupq_n_u16(0x0040));
            // All ones where the lane is a number (a NaN is unequal to itself), narrowed to
            // the 16-bit halves like `hi`.
            let number = vuzp1q_u16(
                vreinterpretq_u16_u32(vceqq_f32(v.0, v.0)),
                vreinterpretq_u16_u32(vceqq_f32(v.1, v.1)),
            );
            vbslq_u16(number, rounded, quiet)
        }
    }

    /// The high 16-bit halves of the 8 lanes (the truncated bf16) and those halves rounded to
    /// nearest even: [`Neon::narrow_bf16`] for every lane that is not a NaN.
    #[inline(always)]
    fn round_bf16_halves(self, v: F32x8) -> (uint16x8_t, uint16x8_t) {
        // SAFETY: a `Neon` token exists only on a CPU with NEON (`Neon::new`).
        unsafe {
            let (a, b) = (vreinterpretq_u16_f32(v.0), vreinterpretq_u16_f32(v.1));
            let hi = vuzp2q_u16(a, b);
            let lo = vuzp1q_u16(a, b);
            // Round up iff `lo > 0x8000 − lsb` (no wrap: the right side is ≥ 0x7fff); `up` is
            // all ones (−1) there, so `hi − up` is `hi + 1`, carrying into the exponent
            // (overflow to infinity) exactly as the 32-bit sum does.
            let lsb = vandq_u16(hi, vdupq_n_u16(1));
            let up = vcgtq_u16(lo, vsubq_u16(vdupq_n_u16(0x8000), lsb));
            (hi, vsubq_u16(hi, up))
        }
    }
}

/// The 8 lanes rounded to bf16 bit patterns by FEAT_BF16's `bfcvtn`/`bfcvtn2`: round to
/// nearest even by the FPCR's default mode, subnormals kept (FPCR.FZ clear, as for `fcvtn`),
/// overflow to infinity, NaN quieted keeping the payload's top bits: exactly
/// `half::bf16::from_f32` (the tests below compare every case). Two instructions for the
/// integer sequence's six per 8 values and its NaN test (`python3 benches/mca/neon.py`, the
/// bf16 rows). A function of its own so that the instructions are assembled with the
/// feature; it inlines into `run_bf16`, which has it.
#[target_feature(enable = "neon,bf16")]
#[inline]
fn bfcvtn(v: F32x8) -> uint16x8_t {
    let h: uint16x8_t;
    // SAFETY: `bfcvtn`/`bfcvtn2` are FEAT_BF16 Advanced SIMD instructions, which this
    // function's target features (checked by every caller) provide; they read and write the
    // named vector registers only: no memory, no stack, no flags.
    unsafe {
        asm!(
            "bfcvtn {h:v}.4h, {lo:v}.4s",
            "bfcvtn2 {h:v}.8h, {hi:v}.4s",
            lo = in(vreg) v.0,
            hi = in(vreg) v.1,
            // `out`, not `lateout`: `h` is written before `hi` is read.
            h = out(vreg) h,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    h
}

#[cfg(test)]
mod tests {
    //! The conversions against `half`, bit for bit, NaN payloads included: the kernel-level
    //! tests (tests/element.rs) check rounding through every backend but accept any NaN.

    use super::*;

    /// Calls `f` on f32 patterns: a stride through all 2^32 (odd, so every exponent and low-bit phase
    /// is hit), and around every f16/bf16 rounding boundary of interest: subnormal and
    /// normal ties, the overflow threshold, ±0, ±inf, quiet and signalling NaNs with payloads
    /// in the high and only the low bits.
    fn for_each_pattern(mut f: impl FnMut(u32)) {
        for u in (0..(1u64 << 32)).step_by(4099) {
            f(u as u32);
        }
        for base in [
            0x0000_0000u32, // +0, f32 subnormals
            0x3380_0000,    // 2^-24: the smallest f16 subnormal
            0x3880_0000,    // 2^-14: the smallest f16 normal
            0x477f_e000,    // 65504: the largest f16
            0x477f_f000,    // 65520: the f16 overflow tie
            0x7f7f_ffff,    // the largest f32 (bf16 overflow)
            0x7f80_0000,    // +inf, then signalling NaNs
            0x7fc0_0000,    // quiet NaN
        ] {
            for d in 0..4096u32 {
                for sign in [0, 0x8000_0000] {
                    f(base.wrapping_add(d) | sign);
                    f(base.wrapping_sub(d) | sign);
                    f(base.wrapping_add(d << 12) | sign);
                }
            }
        }
    }

    /// Every pattern of [`for_each_pattern`], 8 at a time (the last vector padded with zeros).
    fn each_vector(f: impl Fn(&[f32; 8])) {
        let (mut buf, mut n) = ([0f32; 8], 0);
        for_each_pattern(|u| {
            buf[n] = f32::from_bits(u);
            n += 1;
            if n == 8 {
                f(&buf);
                n = 0;
            }
        });
        if n > 0 {
            buf[n..].fill(0.0);
            f(&buf);
        }
    }

    #[test]
    fn f16_store_and_round_trip_are_halfs_bits() {
        let t = Neon::new().expect("NEON is available on every aarch64 target this runs on");
        each_vector(|x| {
            let mut out = [half::f16::ZERO; 8];
            // SAFETY: `x` holds 8 readable values and `out` 8 writable ones.
            unsafe { t.st_f16(t.ld_f32(x.as_ptr()), out.as_mut_ptr()) };
            let mut rt = [0f32; 8];
            // SAFETY: `x` holds 8 readable values and `rt` 8 writable ones.
            unsafe { t.st_f32(t.round_f16(t.ld_f32(x.as_ptr())), rt.as_mut_ptr()) };
            for i in 0..8 {
                let want = half::f16::from_f32(x[i]);
                assert_eq!(
                    out[i].to_bits(),
                    want.to_bits(),
                    "st_f16 of {:#010x}",
                    x[i].to_bits()
                );
                assert_eq!(
                    rt[i].to_bits(),
                    want.to_f32().to_bits(),
                    "round_f16 of {:#010x}",
                    x[i].to_bits()
                );
            }
        });
    }

    /// The two bf16 roundings: the integer sequence, and `bfcvtn` where the CPU has it.
    fn bf16_tokens(check: impl Fn(&dyn Fn(&[f32; 8], &mut [half::bf16; 8], &mut [f32; 8]))) {
        let t = Neon::new().expect("NEON is available on every aarch64 target this runs on");
        check(&|x, out, rt| bf16_store_and_round_trip(t, x, out, rt));
        if let Some(t) = t.native_bf16() {
            check(&|x, out, rt| bf16_store_and_round_trip(t, x, out, rt));
        }
    }

    /// `st_bf16` of `x` to `out`, and `round_bf16` of `x` to `rt`.
    fn bf16_store_and_round_trip<const B: bool>(
        t: Neon<B>,
        x: &[f32; 8],
        out: &mut [half::bf16; 8],
        rt: &mut [f32; 8],
    ) {
        // SAFETY: `x` holds 8 readable values, `out` and `rt` 8 writable ones.
        unsafe {
            t.st_bf16(t.ld_f32(x.as_ptr()), out.as_mut_ptr());
            t.st_f32(t.round_bf16(t.ld_f32(x.as_ptr())), rt.as_mut_ptr());
        }
    }

    #[test]
    fn bf16_store_and_round_trip_are_halfs_bits() {
        bf16_tokens(|store| {
            each_vector(|x| {
                let (mut out, mut rt) = ([half::bf16::ZERO; 8], [0f32; 8]);
                store(x, &mut out, &mut rt);
                for i in 0..8 {
                    let want = half::bf16::from_f32(x[i]);
                    assert_eq!(
                        out[i].to_bits(),
                        want.to_bits(),
                        "st_bf16 of {:#010x}",
                        x[i].to_bits()
                    );
                    assert_eq!(
                        rt[i].to_bits(),
                        (want.to_bits() as u32) << 16,
                        "round_bf16 of {:#010x}",
                        x[i].to_bits()
                    );
                }
            })
        });
    }

    /// The pair store's fast path (no NaN in either vector) and its full path (a NaN in
    /// one of them) against `half`, with every pattern in either vector of the pair.
    #[test]
    fn bf16_pair_store_is_halfs_bits() {
        let t = Neon::new().expect("NEON is available on every aarch64 target this runs on");
        bf16_pair_store_matches_half(t);
        if let Some(t) = t.native_bf16() {
            bf16_pair_store_matches_half(t);
        }
    }

    fn bf16_pair_store_matches_half<const B: bool>(t: Neon<B>) {
        let other = [
            1.0f32,
            -2.5,
            3.0e-3,
            1.003_906_3,
            -7.5e-39,
            65504.0,
            0.1,
            -0.0,
        ];
        each_vector(|x| {
            for (a, b) in [(x, &other), (&other, x)] {
                let (mut oa, mut ob) = ([half::bf16::ZERO; 8], [half::bf16::ZERO; 8]);
                // SAFETY: `a`, `b` hold 8 readable values and `oa`, `ob` 8 writable ones.
                unsafe {
                    let (va, vb) = (t.ld_f32(a.as_ptr()), t.ld_f32(b.as_ptr()));
                    t.st_bf16_pair(va, oa.as_mut_ptr(), vb, ob.as_mut_ptr());
                }
                for (v, o) in a.iter().zip(&oa).chain(b.iter().zip(&ob)) {
                    let want = half::bf16::from_f32(*v);
                    assert_eq!(
                        o.to_bits(),
                        want.to_bits(),
                        "st_bf16_pair of {:#010x}",
                        v.to_bits()
                    );
                }
            }
        });
    }

    /// Whether bf16 rounds with `bfcvtn` follows the CPU (std's detection, independent of
    /// posenc's cache) and, with `POSENC_EXPECT_NEON_BF16` set (CI: `1` under qemu's default
    /// CPU, `0` as a Cortex-A72), is that: a `run_bf16` that is silently not selected, or
    /// selected where the instruction is missing, fails here.
    #[test]
    #[cfg(feature = "std")]
    fn native_bf16_is_the_expected_one() {
        let native = Neon::new().unwrap().native_bf16().is_some();
        assert_eq!(native, std::arch::is_aarch64_feature_detected!("bf16"));
        if let Ok(want) = std::env::var("POSENC_EXPECT_NEON_BF16") {
            assert_eq!(
                native,
                want == "1",
                "POSENC_EXPECT_NEON_BF16={want:?}: native bf16 rounding is {native}"
            );
        }
    }

    #[test]
    fn every_f16_and_bf16_pattern_widens_exactly() {
        let t = Neon::new().expect("NEON is available on every aarch64 target this runs on");
        for start in (0..=u16::MAX).step_by(8) {
            let h: [half::f16; 8] =
                core::array::from_fn(|i| half::f16::from_bits(start + i as u16));
            let b: [half::bf16; 8] =
                core::array::from_fn(|i| half::bf16::from_bits(start + i as u16));
            let (mut fh, mut fb) = ([0f32; 8], [0f32; 8]);
            // SAFETY: each array holds 8 values.
            unsafe {
                t.st_f32(t.ld_f16(h.as_ptr()), fh.as_mut_ptr());
                t.st_f32(t.ld_bf16(b.as_ptr()), fb.as_mut_ptr());
            }
            for i in 0..8 {
                // f16: `half` widens a NaN keeping its payload and quiet bit as fcvtl does.
                assert_eq!(
                    fh[i].to_bits(),
                    h[i].to_f32().to_bits(),
                    "f16 {:#06x}",
                    h[i].to_bits()
                );
                // bf16: the bits moved into place (a signalling NaN stays signalling, which
                // `half` would quiet: the trait documents this).
                assert_eq!(
                    fb[i].to_bits(),
                    (b[i].to_bits() as u32) << 16,
                    "bf16 {:#06x}",
                    b[i].to_bits()
                );
            }
        }
    }
}
