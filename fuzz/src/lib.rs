//! Shared helpers of the posenc fuzz targets: value generators that reach the IEEE corners
//! (NaN with payloads, ±inf, subnormals, ±0), bit-pattern comparison for the three storage
//! types, and the interleaved ↔ rotate_half permutation.

pub mod targets;

use arbitrary::Arbitrary;
use posenc::{Element, bf16, f16};

/// Hard cap on the elements of any one buffer a target allocates. Claimed shape parameters
/// (`n_heads`, `head_dim`, ...) may be huge; the buffers never are.
pub const MAX_ELEMS: usize = 1 << 16;

/// A storage type of posenc with access to its bit pattern.
pub trait Fz: Element {
    /// Bit pattern, zero-extended.
    fn bits(self) -> u32;
    /// A value drawn from `raw`: the low 3 bits pick a class (raw bits, ±inf, NaN with a
    /// payload, subnormal, ±0, three classes of moderate normals), the rest fill it.
    fn from_raw(raw: u32) -> Self;
    /// An upper bound on one ulp of this type at magnitude `|v|` (for tolerance checks).
    fn ulp(v: f32) -> f32;
    /// The largest finite value, as f32.
    const MAX: f32;
}

/// A moderate f32 normal: exponent in [−20, 20], sign and mantissa from `p`.
fn moderate(p: u32) -> f32 {
    let sign = (p & 1) << 31;
    let exp = 127 + ((p >> 1) % 41) - 20;
    f32::from_bits(sign | (exp << 23) | ((p >> 7) & 0x7f_ffff))
}

impl Fz for f32 {
    const MAX: f32 = f32::MAX;
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn from_raw(raw: u32) -> Self {
        let p = raw >> 3;
        let sign = (p & 1) << 31;
        match raw & 7 {
            0 => f32::from_bits(raw.rotate_right(3)),
            1 => f32::from_bits(sign | 0x7f80_0000),
            2 => f32::from_bits(sign | 0x7f80_0000 | ((p >> 1) & 0x7f_ffff).max(1)),
            3 => f32::from_bits(sign | ((p >> 1) & 0x7f_ffff)),
            4 => f32::from_bits(sign | if p & 2 == 0 { 0 } else { 0x0080_0000 }),
            _ => moderate(p),
        }
    }
    fn ulp(v: f32) -> f32 {
        (v.abs() * f32::EPSILON).max(f32::from_bits(1))
    }
}

impl Fz for f16 {
    const MAX: f32 = 65504.0;
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn from_raw(raw: u32) -> Self {
        let p = raw >> 3;
        let sign = ((p & 1) << 15) as u16;
        let m = ((p >> 1) & 0x3ff) as u16;
        f16::from_bits(match raw & 7 {
            0 => (raw >> 16) as u16,
            1 => sign | 0x7c00,
            2 => sign | 0x7c00 | m.max(1),
            3 => sign | m,
            4 => sign,
            _ => sign | ((1 + (p >> 11) % 30) << 10) as u16 | m,
        })
    }
    fn ulp(v: f32) -> f32 {
        (v.abs() * 2f32.powi(-10)).max(2f32.powi(-24))
    }
}

impl Fz for bf16 {
    const MAX: f32 = 3.389_531_4e38;
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn from_raw(raw: u32) -> Self {
        let p = raw >> 3;
        let sign = ((p & 1) << 15) as u16;
        let m = ((p >> 1) & 0x7f) as u16;
        bf16::from_bits(match raw & 7 {
            0 => (raw >> 16) as u16,
            1 => sign | 0x7f80,
            2 => sign | 0x7f80 | m.max(1),
            3 => sign | m,
            4 => sign,
            _ => (moderate(p).to_bits() >> 16) as u16,
        })
    }
    fn ulp(v: f32) -> f32 {
        (v.abs() * 2f32.powi(-7)).max(2f32.powi(-133))
    }
}

/// `n` values of `T` from the fuzzer's words, cycled (perturbed per cycle) when short.
pub fn gen_vec<T: Fz>(n: usize, seed: &[u32]) -> Vec<T> {
    (0..n)
        .map(|i| {
            let raw = if seed.is_empty() {
                (i as u32).wrapping_mul(0x9e37_79b9)
            } else {
                let cycle = (i / seed.len()) as u32;
                let w = seed[i % seed.len()];
                if cycle == 0 {
                    w
                } else {
                    ((w.rotate_left(3 * cycle) ^ cycle.wrapping_mul(0x9e37_79b9)) & !7) | (w & 7)
                }
            };
            T::from_raw(raw)
        })
        .collect()
}

/// First index where the bit patterns of `a` and `b` differ (length mismatch counts).
pub fn first_bit_diff<T: Fz>(a: &[T], b: &[T]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    a.iter().zip(b).position(|(x, y)| x.bits() != y.bits())
}

/// Whether two NaNs must also agree in sign and payload for values computed by posenc to count
/// as equal.
///
/// `false`, deliberately: Rust (like IEEE 754) leaves the sign and payload of a NaN produced by
/// arithmetic unspecified (RFC 3514), and LLVM freely commutes `a * b` / `a + b`, which on x86
/// decides which input NaN propagates. Measured on posenc: with two NaN inputs to one pair the
/// *scalar* backend already returns different payloads for Interleaved and RotateHalf, and the
/// SIMD interleaved kernels (`a·c + b·(−s)`) flip the sign of a NaN coming from `sin`. So
/// computed outputs compare bitwise except that any NaN equals any NaN. Buffers that must be
/// *untouched* (failed calls, channels past `rotary_dim`) are always compared bit for bit.
/// Set to `true` to hunt NaN-propagation differences.
pub const NAN_PAYLOADS_MUST_MATCH: bool = false;

/// First index where `a` and `b` differ as computed values: bitwise, except that NaN equals
/// NaN unless [`NAN_PAYLOADS_MUST_MATCH`].
pub fn first_value_diff<T: Fz>(a: &[T], b: &[T]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    a.iter().zip(b).position(|(x, y)| {
        x.bits() != y.bits()
            && (NAN_PAYLOADS_MUST_MATCH || !(x.to_f32().is_nan() && y.to_f32().is_nan()))
    })
}

/// Panics with context unless `a` and `b` are equal as computed values ([`first_value_diff`]).
#[track_caller]
pub fn assert_same<T: Fz>(a: &[T], b: &[T], what: &str) {
    if let Some(i) = first_value_diff(a, b) {
        panic!(
            "{what}: mismatch at index {i} (len {} vs {}): {:?} ({:#x}) vs {:?} ({:#x})",
            a.len(),
            b.len(),
            a.get(i),
            a.get(i).map_or(0, |v| v.bits()),
            b.get(i),
            b.get(i).map_or(0, |v| v.bits()),
        );
    }
}

/// Panics with context if `a` and `b` differ in any bit.
#[track_caller]
pub fn assert_bits_eq<T: Fz>(a: &[T], b: &[T], what: &str) {
    if let Some(i) = first_bit_diff(a, b) {
        panic!(
            "{what}: bitwise mismatch at index {i} (len {} vs {}): {:?} ({:#x}) vs {:?} ({:#x})",
            a.len(),
            b.len(),
            a.get(i),
            a.get(i).map_or(0, |v| v.bits()),
            b.get(i),
            b.get(i).map_or(0, |v| v.bits()),
        );
    }
}

/// Interleaved → rotate_half order, per head: `rh[i] = il[2i]`, `rh[i + r/2] = il[2i + 1]`
/// for `i < r/2`; channels from `rotary_dim` on are copied unchanged.
pub fn to_rotate_half<T: Copy>(x: &[T], head_dim: usize, rotary_dim: usize) -> Vec<T> {
    let half = rotary_dim / 2;
    let mut out = x.to_vec();
    for (src, dst) in x.chunks_exact(head_dim).zip(out.chunks_exact_mut(head_dim)) {
        for i in 0..half {
            dst[i] = src[2 * i];
            dst[i + half] = src[2 * i + 1];
        }
    }
    out
}

/// The inverse of [`to_rotate_half`].
pub fn to_interleaved<T: Copy>(x: &[T], head_dim: usize, rotary_dim: usize) -> Vec<T> {
    let half = rotary_dim / 2;
    let mut out = x.to_vec();
    for (src, dst) in x.chunks_exact(head_dim).zip(out.chunks_exact_mut(head_dim)) {
        for i in 0..half {
            dst[2 * i] = src[i];
            dst[2 * i + 1] = src[i + half];
        }
    }
    out
}

/// Panics unless channels `rotary_dim..head_dim` of every head are bitwise those of `orig`.
#[track_caller]
pub fn assert_tail_untouched<T: Fz>(orig: &[T], out: &[T], head_dim: usize, rotary_dim: usize) {
    for (h, (o, n)) in orig
        .chunks_exact(head_dim)
        .zip(out.chunks_exact(head_dim))
        .enumerate()
    {
        if let Some(i) = first_bit_diff(&o[rotary_dim..], &n[rotary_dim..]) {
            panic!(
                "head {h}: channel {} past rotary_dim {rotary_dim} changed",
                rotary_dim + i
            );
        }
    }
}

/// An f32 parameter, biased to the values that break validation.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum FloatParam {
    /// One of a few realistic values.
    Typical(u8),
    /// Any bit pattern.
    Bits(u32),
    Nan,
    NegNan,
    Inf,
    NegInf,
    Zero,
    NegZero,
    /// A (positive) subnormal; 0 becomes the smallest one.
    Subnormal(u32),
    MinPositive,
    Max,
    /// `−|v|` for a moderate `v`.
    Negative(u32),
    /// `2^e`, `e` in [−149, 127].
    Pow2(i16),
    /// `1 + k·2^−23`: just above one (NTK/YaRN edge cases), or exactly one.
    NearOne(u8),
}

impl FloatParam {
    pub fn get(self) -> f32 {
        const TYPICAL: [f32; 12] = [
            10_000.0,
            500_000.0,
            1_000_000.0,
            1.0,
            2.0,
            4.0,
            8.0,
            32.0,
            0.5,
            1.5,
            40.0,
            0.1,
        ];
        match self {
            FloatParam::Typical(i) => TYPICAL[i as usize % TYPICAL.len()],
            FloatParam::Bits(b) => f32::from_bits(b),
            FloatParam::Nan => f32::NAN,
            FloatParam::NegNan => -f32::NAN,
            FloatParam::Inf => f32::INFINITY,
            FloatParam::NegInf => f32::NEG_INFINITY,
            FloatParam::Zero => 0.0,
            FloatParam::NegZero => -0.0,
            FloatParam::Subnormal(b) => f32::from_bits((b & 0x7f_ffff).max(1)),
            FloatParam::MinPositive => f32::MIN_POSITIVE,
            FloatParam::Max => f32::MAX,
            FloatParam::Negative(b) => -moderate(b).abs(),
            FloatParam::Pow2(e) => {
                let e = e.rem_euclid(277) as i32 - 149;
                if e >= -126 {
                    f32::from_bits(((e + 127) as u32) << 23)
                } else {
                    f32::from_bits(1 << (e + 149))
                }
            }
            FloatParam::NearOne(k) => f32::from_bits(1f32.to_bits() + k as u32),
        }
    }
}

/// A position, biased to the extremes of `i32`.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum PosSel {
    Small(i16),
    Any(i32),
    Min,
    Max,
    NearMin(u8),
    NearMax(u8),
    /// `±2^k`.
    Pow2(u8, bool),
}

impl PosSel {
    pub fn get(self) -> i32 {
        match self {
            PosSel::Small(v) => v as i32,
            PosSel::Any(v) => v,
            PosSel::Min => i32::MIN,
            PosSel::Max => i32::MAX,
            PosSel::NearMin(k) => i32::MIN + k as i32,
            PosSel::NearMax(k) => i32::MAX - k as i32,
            PosSel::Pow2(k, neg) => {
                let v = 1i32.wrapping_shl(k as u32 % 31);
                if neg { -v } else { v }
            }
        }
    }
}

/// The largest |position| posenc accepts for frequencies up to 1 (`|p·ω| ≤ 2^26`, the
/// accuracy contract's domain); the fuzzer's extreme choices are folded into it.
pub const MAX_POSITION: i32 = 1 << 26;

/// `n` positions from the fuzzer's choices, cycled; the token index when there are none.
/// Values beyond ±[`MAX_POSITION`] are clamped to it (the extremes stay extremes: the
/// domain's edge).
pub fn positions(n: usize, sel: &[PosSel]) -> Vec<i32> {
    positions_within(n, sel, MAX_POSITION as i64)
}

/// [`positions`] clamped to ±`limit` (and to `i32`) instead: a rope's own domain, whose edge
/// is [`position_limit`] of its largest frequency.
pub fn positions_within(n: usize, sel: &[PosSel], limit: i64) -> Vec<i32> {
    (0..n)
        .map(|i| {
            if sel.is_empty() {
                (i as i64).min(limit) as i32
            } else {
                (sel[i % sel.len()].get() as i64)
                    .clamp(-limit, limit)
                    .clamp(i32::MIN as i64, i32::MAX as i64) as i32
            }
        })
        .collect()
}

/// Storage dtype of a fuzz case.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum DtypeSel {
    F32,
    F16,
    Bf16,
}

/// Rotates token-major `x` by caller tables whose length gives the rotary dim (`tokens ×
/// rotary_dim/2` each) on `backend`, through posenc's table path: a rope of that rotary dim
/// rotating from a `posenc::Table`. Errors in the order the targets' validity models expect.
pub fn table_rotate<T: Element>(
    backend: posenc::Backend,
    x: &mut [T],
    n_heads: usize,
    head_dim: usize,
    layout: posenc::Layout,
    cos: &[f32],
    sin: &[f32],
) -> Result<(), posenc::Error> {
    use posenc::Error;
    if !backend.is_available() {
        return Err(Error::BackendUnavailable { backend });
    }
    if head_dim == 0 || !head_dim.is_multiple_of(2) {
        return Err(Error::InvalidHeadDim { head_dim });
    }
    if n_heads == 0 {
        return Err(Error::ZeroHeads);
    }
    let row = n_heads.checked_mul(head_dim).ok_or(Error::ShapeOverflow)?;
    if !x.len().is_multiple_of(row) {
        return Err(Error::ShapeOverflow);
    }
    let tokens = x.len() / row;
    let table = posenc::Table::new(cos, sin, tokens)?;
    if tokens == 0 {
        return Ok(());
    }
    let cfg = posenc::RopeConfig::new(head_dim, 1e4, layout).rotary_dim(2 * table.pairs());
    posenc::Rope::new(&cfg)?
        .with_backend(backend)?
        .apply(x, n_heads, table)
}

/// The accuracy contract's angle limit, 2^26 rad (posenc's crate docs, *Accuracy contract*).
pub const MAX_ANGLE: f64 = 67_108_864.0;

/// Whether the exact product `|p · w|` is at most [`MAX_ANGLE`], computed in integers (an
/// independent model of posenc's domain test, which uses a fused multiply-add): `w` is
/// `m · 2^e` with an integer mantissa `m`, so the test is `|p| · m ≤ 2^(26 − e)`. NaN and
/// infinite `w` are outside (the docs refuse them whatever `p`).
pub fn angle_in_domain(p: i64, w: f32) -> bool {
    if !w.is_finite() {
        return false;
    }
    let bits = w.to_bits() & 0x7fff_ffff;
    let (exp, frac) = (bits >> 23, bits & 0x7f_ffff);
    let (m, e) = if exp == 0 {
        (frac as u128, -149)
    } else {
        ((frac | 0x80_0000) as u128, exp as i32 - 150)
    };
    let prod = p.unsigned_abs() as u128 * m; // < 2^64 · 2^24
    match 26 - e {
        k if k >= 100 => true,
        k if k >= 0 => prod <= 1u128 << k,
        _ => prod == 0, // prod · 2^e with e > 26: any non-zero product is ≥ 2^27
    }
}

/// The largest `n ≤ 2^31` with `n · |w| ≤ 2^26` exactly: every position `|p| ≤ n` is in a
/// rope's domain when `w` is its largest frequency (0 for NaN/inf).
pub fn position_limit(w: f32) -> i64 {
    let (mut lo, mut hi) = (0i64, 1i64 << 31);
    if !angle_in_domain(0, w) {
        return 0;
    }
    if angle_in_domain(hi, w) {
        return hi;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if angle_in_domain(mid, w) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The largest frequency of a rope: the one that decides its position domain.
pub fn max_freq(inv_freq: &[f32]) -> f32 {
    inv_freq.iter().fold(0f32, |m, &w| m.max(w.abs()))
}

static STRICT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the targets also check the properties posenc is known to break (each marked
/// `KNOWN ISSUE` where it is relaxed, with its reproducer in `regressions/<target>/`). Off
/// for fuzzing and the corpus replay; the ignored regression replay turns it on.
pub fn strict() -> bool {
    STRICT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Turns [`strict`] on or off for this process.
pub fn set_strict(on: bool) {
    STRICT.store(on, std::sync::atomic::Ordering::Relaxed);
}
