//! Exact-angle sine and cosine on vectors: `trig.rs`'s operations, lane by lane.
//!
//! Each function performs exactly the plain IEEE operations of its scalar model in
//! `crate::trig`, in the same order and without fusing, so the results are bitwise the scalar
//! ones on every tier:
//!
//! ```text
//! sin_cos(angle: f64 lanes) -> (f32 sin, f32 cos):
//!     k = round(angle·2/π)            (ROUND_MAGIC trick: k stays in y's low mantissa bits)
//!     r = angle − k·P1 − k·P2 − k·P3  (Cody–Waite, f64), narrowed to f32
//!     s, c = Cephes polynomials of r (f32)
//!     quadrant k mod 4 swaps and negates
//! ```
//!
//! `sin_cos64` is the same with fdlibm's f64 polynomials (the sinusoidal recurrence's start
//! values). `sqrt_f32` is the one scalar square root the kernels take (the RMSNorm factor).

use super::vector::Simd;
use crate::trig::{
    C1, C2, C3, DC, DS, PIO2_1, PIO2_2, PIO2_3, ROUND_MAGIC, S1, S2, S3, TWO_OVER_PI,
};

/// `√x` in f32, correctly rounded as IEEE requires, so bitwise `libm::sqrtf` (NaN for
/// negative inputs): the CPU's instruction where the target's baseline has one (SSE on
/// x86-64, NEON on aarch64), `libm`'s software square root elsewhere. The QK-norm takes one
/// per head, and `libm`'s (built without its `arch` feature, as posenc uses it) was the
/// largest single cost of that op (`cargo bench --bench fused -- qknorm` under `perf record`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn sqrt_f32(x: f32) -> f32 {
    use core::arch::x86_64::{_mm_cvtss_f32, _mm_set_ss, _mm_sqrt_ss};
    // SAFETY: SSE is part of every x86-64 target's baseline, so the CPU has these
    // instructions; they touch no memory.
    unsafe { _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(x))) }
}

/// See the x86-64 version.
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
#[inline(always)]
pub(crate) fn sqrt_f32(x: f32) -> f32 {
    use core::arch::aarch64::{vdupq_n_f32, vgetq_lane_f32, vsqrtq_f32};
    // SAFETY: the target enables NEON (the `cfg` above), so the CPU has these instructions;
    // they touch no memory.
    unsafe { vgetq_lane_f32::<0>(vsqrtq_f32(vdupq_n_f32(x))) }
}

/// See the x86-64 version.
#[cfg(not(any(
    target_arch = "x86_64",
    all(target_arch = "aarch64", target_feature = "neon")
)))]
#[inline(always)]
pub(crate) fn sqrt_f32(x: f32) -> f32 {
    libm::sqrtf(x)
}

/// `trig::reduce` on lanes: `r` and `y = angle·(2/π) + ROUND_MAGIC`, whose low mantissa bits
/// hold the quadrant.
#[inline(always)]
fn reduce<S: Simd>(s: S, a: S::D) -> (S::D, S::D) {
    let magic = s.dsplat(ROUND_MAGIC);
    let y = s.dadd(s.dmul(a, s.dsplat(TWO_OVER_PI)), magic);
    let k = s.dsub(y, magic);
    // `k·P1` and `k·P2` are exact in the domain (`trig::MAX_ANGLE`), so a fused step gives
    // the scalar bits.
    let r = s.dsub_exact(a, k, s.dsplat(PIO2_1));
    let r = s.dsub_exact(r, k, s.dsplat(PIO2_2));
    let r = s.dsub(r, s.dmul(k, s.dsplat(PIO2_3)));
    (r, y)
}

/// `trig::poly` on lanes: the sin/cos polynomials of the reduced argument `r` (`z = r²`).
#[inline(always)]
fn poly<S: Simd>(s: S, r: S::F, z: S::F) -> (S::F, S::F) {
    // ((S3·z + S2)·z + S1)·z·r + r
    let sn = s.add(s.mul(s.splat(S3), z), s.splat(S2));
    let sn = s.add(s.mul(sn, z), s.splat(S1));
    let sn = s.add(s.mul(s.mul(sn, z), r), r);
    // ((C3·z + C2)·z + C1)·z·z − 0.5·z + 1
    let c = s.add(s.mul(s.splat(C3), z), s.splat(C2));
    let c = s.add(s.mul(c, z), s.splat(C1));
    let c = s.mul(s.mul(c, z), z);
    let c = s.add(s.sub(c, s.mul(s.splat(0.5), z)), s.splat(1.0));
    (sn, c)
}

/// `(sin, cos)` of f32 angles below `trig::SMALL_ANGLE` in magnitude: `trig::sin_cos` of
/// them, which reduces such an angle to itself in quadrant 0, so only the polynomial is left.
#[inline(always)]
pub(crate) fn sin_cos_small<S: Simd>(s: S, r: S::F) -> (S::F, S::F) {
    poly(s, r, s.mul(r, r))
}

/// `(sin, cos)` of `LANES` f64 angles given as two halves, as f32: `trig::sin_cos` per lane.
#[inline(always)]
pub(crate) fn sin_cos<S: Simd>(s: S, lo: S::D, hi: S::D) -> (S::F, S::F) {
    let (rl, yl) = reduce(s, lo);
    let (rh, yh) = reduce(s, hi);
    let r = s.narrow(rl, rh);
    let (sn, c) = poly(s, r, s.mul(r, r));
    s.quadrant(yl, yh, sn, c)
}

/// [`sin_cos`] of two blocks at once, `[lo0, hi0, lo1, hi1]`: each lane gets the same
/// operations, written as one straight run so the compiler can interleave the two blocks'
/// dependency chains. One block's chain is long enough that out-of-order execution overlaps
/// little of the next block's when the blocks follow each other as loop iterations (`cargo
/// bench --bench ratio`, the `apply` column in cache, and `llvm-mca` of one block: its
/// simulated cycles well above its throughput bound). Four blocks at a time ran slower than
/// two there.
#[inline(always)]
pub(crate) fn sin_cos2<S: Simd>(s: S, a: [S::D; 4]) -> [(S::F, S::F); 2] {
    let (r0, y0) = reduce(s, a[0]);
    let (r1, y1) = reduce(s, a[1]);
    let (r2, y2) = reduce(s, a[2]);
    let (r3, y3) = reduce(s, a[3]);
    let (ra, rb) = (s.narrow(r0, r1), s.narrow(r2, r3));
    let (sa, ca) = poly(s, ra, s.mul(ra, ra));
    let (sb, cb) = poly(s, rb, s.mul(rb, rb));
    [s.quadrant(y0, y1, sa, ca), s.quadrant(y2, y3, sb, cb)]
}

/// `(sin, cos)` of f64 angles in f64: `trig::sin_cos_f64` per lane.
#[inline(always)]
pub(crate) fn sin_cos64<S: Simd>(s: S, a: S::D) -> (S::D, S::D) {
    let (r, y) = reduce(s, a);
    let z = s.dmul(r, r);
    let w = s.dmul(z, z);
    // DS1 + z·(DS2 + z·DS3) + z·w·(DS4 + z·DS5)
    let sr = s.dadd(
        s.dadd(
            s.dsplat(DS[1]),
            s.dmul(z, s.dadd(s.dsplat(DS[2]), s.dmul(z, s.dsplat(DS[3])))),
        ),
        s.dmul(
            s.dmul(z, w),
            s.dadd(s.dsplat(DS[4]), s.dmul(z, s.dsplat(DS[5]))),
        ),
    );
    // r + z·r·(DS0 + z·sr)
    let sn = s.dadd(
        r,
        s.dmul(s.dmul(z, r), s.dadd(s.dsplat(DS[0]), s.dmul(z, sr))),
    );
    // z·(DC0 + z·(DC1 + z·DC2)) + w·w·(DC3 + z·(DC4 + z·DC5))
    let c_lo = s.dadd(s.dsplat(DC[1]), s.dmul(z, s.dsplat(DC[2])));
    let c_hi = s.dadd(s.dsplat(DC[4]), s.dmul(z, s.dsplat(DC[5])));
    let cr = s.dadd(
        s.dmul(z, s.dadd(s.dsplat(DC[0]), s.dmul(z, c_lo))),
        s.dmul(s.dmul(w, w), s.dadd(s.dsplat(DC[3]), s.dmul(z, c_hi))),
    );
    // (1 − z/2) + (((1 − (1 − z/2)) − z/2) + z·cr)
    let hz = s.dmul(s.dsplat(0.5), z);
    let one_hz = s.dsub(s.dsplat(1.0), hz);
    let tail = s.dadd(s.dsub(s.dsub(s.dsplat(1.0), one_hz), hz), s.dmul(z, cr));
    let c = s.dadd(one_hz, tail);
    s.dquadrant(y, sn, c)
}

#[cfg(test)]
mod tests {
    /// Bitwise `libm::sqrtf` (NaN for NaN): every exponent with a spread of mantissas,
    /// subnormals, zeros of both signs, infinities, negative numbers and NaNs.
    #[test]
    fn sqrt_f32_is_libms_bit_for_bit() {
        let mut checked = 0;
        for bits in (0..=u32::MAX).step_by(65_537).chain([
            0,
            0x8000_0000,
            1,
            0x007f_ffff,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x7f80_0001,
            0xbf80_0000,
        ]) {
            let x = f32::from_bits(bits);
            let (got, want) = (super::sqrt_f32(x), libm::sqrtf(x));
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "sqrt({x:e}) = {got:e}, libm {want:e}"
            );
            checked += 1;
        }
        assert!(checked > 65_000);
    }
}
