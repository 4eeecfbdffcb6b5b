//! Accurate sin/cos for positional encodings: exact angle, f64 range reduction, f32 polynomial.
//!
//! The angle `p · ω` is formed in f64 (exact for RoPE while |p| < 2^29, an i32 times an f32
//! having at most 31 + 24 bits; within 2^-28 rad in the domain below otherwise), reduced to
//! `r ∈ [−π/4, π/4]` and a quadrant with a three-part Cody–Waite split of π/2 whose first two
//! parts have 27 significant bits, so `k · P1` and `k · P2` are exact for `|k| < 2^26`
//! (angles below 2^26·π/2 ≈ 1.05e8 rad). `r` is rounded to f32 (≤ 3e-8 absolute) and
//! evaluated with the Cephes minimax polynomials (≤ 6e-8 absolute on the interval,
//! measured), so sin and cos are within ~1e-7 of the true values: half the 2.4e-7 the
//! contract promises.
//!
//! The domain: every angle posenc evaluates is at most [`MAX_ANGLE`] = 2^26 in magnitude
//! (callers check with [`angle_in_domain`], [`max_abs_position`], [`check_positions`]).
//!
//! Every operation that computes a value here is a plain IEEE add or multiply (no fused
//! multiply-add, no `round()` from std): the SIMD backends perform the same operations lane
//! by lane, so the cos/sin they produce are bitwise the scalar ones on every target. (The
//! domain test uses a fused multiply-add, for an exact comparison; and the vector tiers fuse
//! [`reduce`]'s `angle − k·P1` and `− k·P2`, whose products are exact in the domain, so the
//! fused step rounds as the plain one does: `Simd::dsub_exact`.)

use crate::error::Error;

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

/// Angles below this in magnitude need no reduction: [`reduce`] gives `k = 0`, `r` the angle
/// itself and quadrant 0 (`|angle·2/π| < 0.5`), so [`sin_cos`] is [`poly`] of the angle
/// rounded to f32. Kept below π/4 with a margin so that a bound checked on the exact product
/// holds for its f32 rounding too.
pub(crate) const SMALL_ANGLE: f64 = 0.77;

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

/// The largest angle magnitude, in radians, of the accuracy contract: 2^26. Every angle
/// posenc evaluates, `|p·ω|` for RoPE, `|p|` and `|t|` for sinusoidal tables (whose largest
/// frequency is `ω_0 = 1`), is at most this, or the call is refused with
/// [`Error::OutOfDomain`].
///
/// Why 2^26: [`reduce`] is exact up to roundings of `r` while `k·P1` and `k·P2` are
/// (`|k| < 2^26`, i.e. `|angle| < 2^26·π/2`), so the reduced argument carries no error from
/// the angle's size and sin/cos are within the polynomial's error plus one f32 rounding of
/// `r` of the truth; the quadrant's rounding trick (`|angle·2/π| < 2^51`) holds far beyond,
/// so every backend gives the same bits. One bound for every scheme, with a power of two
/// margin below where the reduction stops being exact (an f32 time or an i32 position at
/// 2^26 is exact, so the edge itself is in the domain).
pub(crate) const MAX_ANGLE: f64 = 67_108_864.0;

/// Whether `|p·w| ≤ MAX_ANGLE` for the exact (unrounded) product; `false` for NaN or
/// infinite inputs. The fused multiply-add rounds `|p·w| − MAX_ANGLE` once, which keeps its
/// sign: the test is exact for every pair of f64 inputs.
#[inline]
pub(crate) fn angle_in_domain(p: f64, w: f64) -> bool {
    libm::fma(libm::fabs(p), libm::fabs(w), -MAX_ANGLE) <= 0.0
}

/// The largest `n` with `n·|max_freq| ≤ MAX_ANGLE` (exactly), capped at 2^31 (`|i32::MIN|`):
/// every i32 position `p` with `|p| ≤ n` keeps every angle `p·ω`, `|ω| ≤ |max_freq|`, in the
/// domain. 2^31 for a zero frequency, 0 for NaN.
pub(crate) fn max_abs_position(max_freq: f32) -> u32 {
    const CAP: u32 = 1 << 31;
    let w = libm::fabsf(max_freq) as f64;
    if w == 0.0 {
        return CAP;
    }
    if !angle_in_domain(1.0, w) {
        return 0; // NaN, or a frequency above MAX_ANGLE
    }
    // floor(MAX_ANGLE / w), corrected down by one where the quotient rounded up to the next
    // integer. It never needs a correction up: the exact floor is an integer below 2^53, so
    // the quotient rounded to nearest is at least that floor. (An exhaustive search over f32
    // finds three frequencies that need the correction down; the unit test holds them.)
    let q = (MAX_ANGLE / w).min(CAP as f64);
    let n = q as u32; // q ≥ 1 (checked above), ≤ 2^31
    if angle_in_domain(n as f64, w) {
        n
    } else {
        n - 1
    }
}

/// Refuses the first position `p` of `positions` with `|p| > max_abs_position(max_freq)`
/// ([`Error::OutOfDomain`] naming `what` and that limit): the RoPE entry points' check, with
/// `max_freq` the largest frequency the positions meet.
pub(crate) fn check_positions(
    what: &'static str,
    positions: &[i32],
    max_freq: f32,
) -> Result<(), Error> {
    let limit = max_abs_position(max_freq);
    match positions.iter().find(|p| p.unsigned_abs() > limit) {
        Some(&p) => Err(Error::OutOfDomain {
            what,
            limit: limit as f64,
            value: p as f64,
        }),
        None => Ok(()),
    }
}

/// `(sin, cos)` of the exact angle `position · freq`, each within 2.4e-7 of the true value
/// (see the crate docs' *Accuracy contract*), bitwise what every backend computes for that
/// angle.
///
/// # Errors
/// [`Error::OutOfDomain`] (`what: "position * freq"`) when `|position · freq| > 2^26` or
/// `freq` is NaN or infinite: outside the accuracy contract's domain.
///
/// ```
/// let (s, c) = posenc::sin_cos_exact(131_071, 1.0).unwrap();
/// assert!((s as f64 - (131_071f64).sin()).abs() < 2.4e-7);
/// assert!((c as f64 - (131_071f64).cos()).abs() < 2.4e-7);
/// assert!(posenc::sin_cos_exact(i32::MAX, 1e10).is_err()); // |p·ω| > 2^26
/// ```
pub fn sin_cos_exact(position: i32, freq: f32) -> Result<(f32, f32), Error> {
    let (p, w) = (position as f64, freq as f64);
    if !angle_in_domain(p, w) {
        return Err(Error::OutOfDomain {
            what: "position * freq",
            limit: MAX_ANGLE,
            value: p * w,
        });
    }
    Ok(sin_cos(p * w))
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

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;

    /// `n·w ≤ 2^26` decided in integers: `w = m·2^e` (f32), so `n·m ≤ 2^(26 − e)`.
    fn fits(n: u64, w: f32) -> bool {
        let bits = w.to_bits();
        let (exp, frac) = ((bits >> 23) & 0xff, (bits & 0x7f_ffff) as u128);
        let (m, e) = if exp == 0 {
            (frac, -149)
        } else {
            (frac | 0x80_0000, exp as i32 - 150)
        };
        let k = 26 - e;
        if k < 0 {
            return n as u128 * m == 0;
        }
        k >= 100 || n as u128 * m <= 1u128 << k
    }

    #[test]
    fn max_abs_position_is_the_exact_edge() {
        let mut ws = std::vec![1.0f32, 0.5, 3.0, 0.1, 1e-3, 40_000.5, 65_536.0, 7.0, 1.5e-9];
        ws.extend((1..200).map(|k| f32::from_bits(0x3f80_0000 + k * 7919)));
        ws.extend((1..200).map(|k| 1.0 / k as f32));
        // The only f32 frequencies whose f64 quotient 2^26/w rounds up to the next integer
        // (an exhaustive search over every f32: floor of the exact quotient vs of the f64 one).
        ws.extend([1_024_132_485, 1_025_347_269, 1_031_027_233].map(f32::from_bits));
        for w in ws {
            let n = max_abs_position(w) as u64;
            if n < 1 << 31 {
                assert!(fits(n, w) && !fits(n + 1, w), "w {w:e}: n {n}");
            } else {
                assert!(fits(1 << 31, w), "w {w:e}");
            }
            assert_eq!(max_abs_position(-w), n as u32, "sign of w");
        }
        assert_eq!(max_abs_position(1.0), 1 << 26);
        assert_eq!(max_abs_position(65_536.0), 1 << 10);
        assert_eq!(max_abs_position(0.0), 1 << 31);
        assert_eq!(max_abs_position(1e-30), 1 << 31);
        assert_eq!(max_abs_position(f32::NAN), 0);
        assert_eq!(max_abs_position(f32::INFINITY), 0);
        assert_eq!(max_abs_position(1e9), 0);
        assert_eq!(max_abs_position(67_108_864.0), 1);
    }

    #[test]
    fn angle_in_domain_edges() {
        assert!(angle_in_domain(67_108_864.0, 1.0));
        assert!(angle_in_domain(-67_108_864.0, -1.0));
        assert!(!angle_in_domain(67_108_865.0, 1.0));
        assert!(!angle_in_domain(1.0, 67_108_864.000_000_01));
        // 2^25 + 1 times (2 + 2^-22): exceeds 2^26 by ~8e-6, rounds to above in f64 too;
        // a product one f64 ulp above the edge.
        assert!(!angle_in_domain(
            2.0f64.powi(13) + 1.0,
            8192.0 - 2.0f64.powi(-20)
        ));
        assert!(!angle_in_domain(f64::NAN, 1.0));
        assert!(!angle_in_domain(1.0, f64::INFINITY));
        assert!(!angle_in_domain(0.0, f64::INFINITY));
        assert!(angle_in_domain(0.0, 1e300));
    }

    #[test]
    fn check_positions_names_the_first_offender() {
        assert_eq!(
            check_positions("positions", &[0, 1 << 26, -(1 << 26)], 1.0),
            Ok(())
        );
        assert_eq!(
            check_positions("positions", &[5, (1 << 26) + 1, i32::MIN], 1.0),
            Err(Error::OutOfDomain {
                what: "positions",
                limit: 67_108_864.0,
                value: 67_108_865.0
            })
        );
        assert_eq!(
            check_positions("p", &[-1025], 65_536.0),
            Err(Error::OutOfDomain {
                what: "p",
                limit: 1024.0,
                value: -1025.0
            })
        );
        assert_eq!(check_positions("p", &[i32::MIN, i32::MAX], 0.0), Ok(()));
    }

    /// 20,001 evenly spaced points of `[−π/4, π/4]`, both ends included.
    fn reduced_range() -> impl Iterator<Item = f64> {
        let (q, n) = (core::f64::consts::FRAC_PI_4, 20_000);
        (0..=n).map(move |i| -q + 2.0 * q * i as f64 / n as f64)
    }

    /// fdlibm's kernels in f64 against the platform's `sin`/`cos` (an independent
    /// implementation, correctly rounded or within an ulp): within 2 ulps over the whole
    /// reduced range, ends included, where every coefficient shows.
    #[test]
    fn poly64_is_within_two_ulps_on_the_reduced_range() {
        for r in reduced_range() {
            let (s, c) = poly64(r);
            let (ts, tc) = (r.sin(), r.cos());
            assert!(
                (s - ts).abs() <= 2.0 * f64::EPSILON * ts.abs(),
                "sin({r}) = {s}, want {ts}"
            );
            assert!(
                (c - tc).abs() <= 2.0 * f64::EPSILON * tc.abs(),
                "cos({r}) = {c}, want {tc}"
            );
        }
    }

    /// `poly64` is fdlibm's `__kernel_sin` / `__kernel_cos` with no tail, operation for
    /// operation: bitwise what the `libm` crate (a separate port of fdlibm) returns from `sin`
    /// and `cos` for 2^-26 ≤ |r| ≤ π/4, where those call the same kernels directly (below
    /// 2^-26 they return `r` and 1 early).
    #[test]
    fn poly64_is_fdlibms_kernel_bit_for_bit() {
        for r in reduced_range().filter(|r| r.abs() >= 1.0 / (1u64 << 26) as f64) {
            let (s, c) = poly64(r);
            assert_eq!(s.to_bits(), libm::sin(r).to_bits(), "sin({r})");
            assert_eq!(c.to_bits(), libm::cos(r).to_bits(), "cos({r})");
        }
    }

    /// The f64 start values of the sinusoidal recurrence: every quadrant, and angles up to
    /// 1e8, within 4e-16 of the platform's `sin`/`cos` of the same f64 angle.
    #[test]
    fn sin_cos_f64_is_within_4e_16_up_to_1e8() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut angles = std::vec![0.0, -0.0, 1.0, -1.0, 1e8, -1e8, 12_345.678];
        angles.extend((0..64).map(|k| k as f64 * core::f64::consts::FRAC_PI_4 + 1e-3));
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            // Spread over the magnitudes: 1e-3 … 1e8.
            angles.push(u * 10f64.powi((i % 12) - 3));
        }
        for a in angles {
            let (s, c) = sin_cos_f64(a);
            assert!(
                (s - a.sin()).abs() <= 4e-16,
                "sin({a}) = {s}, want {}",
                a.sin()
            );
            assert!(
                (c - a.cos()).abs() <= 4e-16,
                "cos({a}) = {c}, want {}",
                a.cos()
            );
        }
    }

    #[test]
    fn sin_cos_exact_refuses_and_computes() {
        assert_eq!(sin_cos_exact(3, 0.5), Ok(sin_cos(1.5)));
        let (s, c) = sin_cos_exact(1 << 26, 1.0).unwrap();
        let t = 67_108_864f64;
        assert!((s as f64 - t.sin()).abs() < 2.4e-7 && (c as f64 - t.cos()).abs() < 2.4e-7);
        assert_eq!(
            sin_cos_exact((1 << 26) + 1, 1.0),
            Err(Error::OutOfDomain {
                what: "position * freq",
                limit: MAX_ANGLE,
                value: 67_108_865.0
            })
        );
        // The error carries the product itself: 2^25 · 4 = 2^27.
        assert_eq!(
            sin_cos_exact(-(1 << 25), 4.0),
            Err(Error::OutOfDomain {
                what: "position * freq",
                limit: MAX_ANGLE,
                value: -134_217_728.0
            })
        );
    }
}
