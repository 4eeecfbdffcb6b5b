//! Accurate sin/cos for positional encodings: exact angle, f64 range reduction, f32 polynomial.
//!
//! The angle `p · ω` is formed in f64 (exact for RoPE: an i32 times an f32 has at most
//! 31 + 24 bits), reduced to `r ∈ [−π/4, π/4]` and a quadrant with a three-part Cody–Waite
//! split of π/2 whose first two parts have 27 significant bits, so `k · P1` and `k · P2` are
//! exact for `|k| < 2^26` (angles below ~1e8 rad, i.e. every |p| < 2^24 with ω ≤ 1 and far
//! beyond). `r` is rounded to f32 (≤ 3e-8 absolute) and evaluated with the Cephes minimax
//! polynomials (≤ 6e-8 absolute on the interval, measured), so sin and cos are within
//! ~1e-7 of the true values: half the 2.4e-7 the contract promises.
//!
//! Every operation here is a plain IEEE add or multiply (no fused multiply-add, no
//! `round()` from std): the SIMD backends perform the same operations lane by lane, so the
//! cos/sin they produce are bitwise the scalar ones on every target.

/// 2/π in f64.
pub(crate) const TWO_OVER_PI: f64 = core::f64::consts::FRAC_2_PI;
/// π/2 = P1 + P2 + P3; P1 and P2 have 27 significant bits.
pub(crate) const PIO2_1: f64 = 1.570_796_325_802_803;
pub(crate) const PIO2_2: f64 = 9.920_935_739_593_517e-10;
pub(crate) const PIO2_3: f64 = 5.721_188_726_109_832e-18;
/// 1.5 · 2^52: adding and subtracting it rounds an f64 with |x| < 2^51 to the nearest integer
/// (ties to even) in the current rounding mode, with no call to `round`.
pub(crate) const ROUND_MAGIC: f64 = 6_755_399_441_055_744.0;

/// sin(r) = r + r·z·(S1 + z·(S2 + z·S3)), z = r², |r| ≤ π/4 (Cephes `sinf`).
#[allow(clippy::excessive_precision)] // Cephes' published digits
pub(crate) const S1: f32 = -1.666_665_461_1e-1;
#[allow(clippy::excessive_precision)] // Cephes' published digits
pub(crate) const S2: f32 = 8.332_160_873_6e-3;
#[allow(clippy::excessive_precision)] // Cephes' published digits
pub(crate) const S3: f32 = -1.951_529_589_1e-4;
/// cos(r) = 1 − z/2 + z²·(C1 + z·(C2 + z·C3)) (Cephes `cosf`).
#[allow(clippy::excessive_precision)] // Cephes' published digits
pub(crate) const C1: f32 = 4.166_664_568_298_827e-2;
#[allow(clippy::excessive_precision)] // Cephes' published digits
pub(crate) const C2: f32 = -1.388_731_625_493_765e-3;
#[allow(clippy::excessive_precision)] // Cephes' published digits
pub(crate) const C3: f32 = 2.443_315_711_809_948e-5;

/// Reduces `angle` to `(r, q)` with `angle ≈ r + q·π/2`, `|r| ≤ π/4`, `q ∈ {0, 1, 2, 3}`.
#[inline(always)]
pub(crate) fn reduce(angle: f64) -> (f64, f64) {
    let k = (angle * TWO_OVER_PI + ROUND_MAGIC) - ROUND_MAGIC;
    let r = ((angle - k * PIO2_1) - k * PIO2_2) - k * PIO2_3;
    // floor(k / 4) for integer k: k/4 − 0.375 is never a tie and rounds to the floor.
    let k4 = ((k * 0.25 - 0.375) + ROUND_MAGIC) - ROUND_MAGIC;
    let q = k - 4.0 * k4;
    (r, q)
}

/// sin and cos of `r ∈ [−π/4, π/4]`.
#[inline(always)]
pub(crate) fn poly(r: f32) -> (f32, f32) {
    let z = r * r;
    let s = ((S3 * z + S2) * z + S1) * z * r + r;
    let c = ((C3 * z + C2) * z + C1) * z * z - 0.5 * z + 1.0;
    (s, c)
}

/// Applies the quadrant `q` to the polynomial values (f32 for [`sin_cos`], f64 for
/// [`sin_cos_f64`]).
#[inline(always)]
pub(crate) fn quadrant<F: Copy + core::ops::Neg<Output = F>>(q: f64, s: F, c: F) -> (F, F) {
    let odd = q == 1.0 || q == 3.0;
    let (s, c) = if odd { (c, s) } else { (s, c) };
    let s = if q >= 2.0 { -s } else { s };
    let c = if q == 1.0 || q == 2.0 { -c } else { c };
    (s, c)
}

/// [`quadrant`] with `k` read where the vector tiers read it: the low mantissa bits of
/// `y = angle·(2/π) + ROUND_MAGIC` (equal to [`reduce`]'s `q` for |angle·2/π| < 2^51).
#[inline(always)]
pub(crate) fn quadrant_of<F: Copy + core::ops::Neg<Output = F>>(y: f64, s: F, c: F) -> (F, F) {
    quadrant((y.to_bits() & 3) as f64, s, c)
}

/// `(sin, cos)` of an f64 angle, each within ~1e-7 of the true value for |angle| < 1e8.
#[inline(always)]
pub(crate) fn sin_cos(angle: f64) -> (f32, f32) {
    let (r, q) = reduce(angle);
    let (s, c) = poly(r as f32);
    quadrant(q, s, c)
}

/// `(sin, cos)` of the exact angle `p · w`.
///
/// ```
/// let (s, c) = posenc::sin_cos_exact(131_071, 1.0);
/// assert!((s as f64 - (131_071f64).sin()).abs() < 2.4e-7);
/// assert!((c as f64 - (131_071f64).cos()).abs() < 2.4e-7);
/// ```
pub fn sin_cos_exact(position: i32, freq: f32) -> (f32, f32) {
    sin_cos(position as f64 * freq as f64)
}

/// sin(r) ≈ r + r³·(D_S1 + z·(…)), z = r², |r| ≤ π/4: fdlibm's `__kernel_sin` (< 1 ulp).
#[allow(clippy::excessive_precision)] // fdlibm's published digits
pub(crate) const DS: [f64; 6] = [
    -1.666_666_666_666_663_243_48e-1,
    8.333_333_333_322_489_461_24e-3,
    -1.984_126_982_985_794_931_34e-4,
    2.755_731_370_707_006_767_89e-6,
    -2.505_076_025_340_686_341_95e-8,
    1.589_690_995_211_550_102_21e-10,
];
/// cos(r) ≈ 1 − z/2 + z²·(D_C1 + z·(…)): fdlibm's `__kernel_cos` (< 1 ulp).
#[allow(clippy::excessive_precision)] // fdlibm's published digits
pub(crate) const DC: [f64; 6] = [
    4.166_666_666_666_660_190_37e-2,
    -1.388_888_888_887_410_957_49e-3,
    2.480_158_728_947_672_941_78e-5,
    -2.755_731_435_139_066_330_35e-7,
    2.087_572_321_298_174_827_90e-9,
    -1.135_964_755_778_819_482_65e-11,
];

/// sin and cos of `r ∈ [−π/4, π/4]` in f64 (fdlibm's kernels with no tail, < 1 ulp each),
/// as plain unfused operations in a fixed order: the vector tiers repeat them lane by lane.
#[inline(always)]
pub(crate) fn poly64(r: f64) -> (f64, f64) {
    let z = r * r;
    let w = z * z;
    let sr = DS[1] + z * (DS[2] + z * DS[3]) + z * w * (DS[4] + z * DS[5]);
    let s = r + z * r * (DS[0] + z * sr);
    let cr = z * (DC[0] + z * (DC[1] + z * DC[2])) + w * w * (DC[3] + z * (DC[4] + z * DC[5]));
    let hz = 0.5 * z;
    let one_hz = 1.0 - hz;
    let c = one_hz + (((1.0 - one_hz) - hz) + z * cr);
    (s, c)
}

/// `(sin, cos)` of an f64 angle in f64, within ~3e-16 of the true values of the f64 angle
/// for |angle| < 1e8 (the reduction of [`reduce`] is exact there up to ~2 f64 roundings of
/// `r`). The start values of the sinusoidal recurrence.
#[inline(always)]
pub(crate) fn sin_cos_f64(angle: f64) -> (f64, f64) {
    let (r, q) = reduce(angle);
    let (s, c) = poly64(r);
    quadrant(q, s, c)
}
