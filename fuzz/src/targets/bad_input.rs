//! Bad input at every public entry point.
//!
//! Random (often absurd) shapes, parameters and buffer lengths are thrown at `Rope::new`,
//! `Rope::with_backend`, `apply`, `apply_inverse`, `fill_cos_sin`, the table path
//! (`Table` on a rope of the table's rotary dim), `Sinusoidal::new` / `fairseq` / `timestep`,
//! `Sinusoidal::with_backend`, `fill`, `fill_times`, `fill_positions`, `add` and
//! `sin_cos_exact`. Checked:
//!
//! * nothing panics (overflow checks and debug assertions are on in the fuzz build);
//! * a call that returns `Err` leaves every buffer it was given bitwise unchanged;
//! * a call succeeds exactly when its documented length/shape rules hold (where the docs
//!   state them precisely) and its positions, times and angles are in the accuracy contract's
//!   domain (`|p| · max ω ≤ 2^26` for a rope, `|p|, |t| ≤ 2^26` for sinusoidal tables, the exact
//!   `|p · ω| ≤ 2^26` for `sin_cos_exact`, modelled in integers by
//!   [`crate::angle_in_domain`]); a `Rope` that was accepted has a sane configuration;
//! * a successful rotation leaves the channels past the rotary dim untouched;
//! * accepted sinusoidal values (`fill`, `fill_times`, `fill_positions`) and `sin_cos_exact`
//!   are within the contract's 2.4e-7 of an f64 formula written here from the docs, and every
//!   sinusoidal entry point gives the same bits on every backend.
//!
//! Positions, times, `first_position` and padding indices are biased to the domain's edges
//! (just inside and just outside 2^26, or the rope's own limit), and each [`Edge`] the target
//! reaches is counted: the replay test requires the corpus to reach them all.
//!
//! Claimed shapes (`n_heads`, `head_dim`, `d_model`, ...) go up to `usize::MAX`; the buffers
//! actually allocated stay below [`MAX_ELEMS`] elements each.

use arbitrary::Arbitrary;
use posenc::{
    Backend, Error, Layout, LongRope, MAX_ROTARY_DIM, Rope, RopeConfig, Scaling, Sinusoidal,
    SinusoidalLayout, Yarn, bf16, f16,
};
use std::sync::atomic::{AtomicU64, Ordering};
/// The accuracy contract's domain for sinusoidal positions and times (posenc's crate docs).
const DOMAIN: i64 = 1 << 26;
/// The accuracy contract's bound on every cos and sin (posenc's crate docs).
const BOUND: f64 = 2.4e-7;
/// What the f64 oracle here may add: `p·ω` and `base^x` rounded in f64 at `|p·ω| ≤ 2^26`.
const ORACLE_SLACK: f64 = 3e-8;

use crate::{
    DtypeSel, FloatParam, Fz, MAX_ELEMS, PosSel, angle_in_domain, assert_bits_eq, assert_same,
    assert_tail_untouched, gen_vec, max_freq, position_limit,
};

/// The domain edges this target is meant to reach. Each check below records when an input
/// reaches one ([`reached`]); `tests/replay.rs` asserts that the checked-in corpus reaches
/// every one, so a corpus that stops exercising an edge fails CI like a regression does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// `fill_times` accepted a time within 64 of ±2^26 (the largest accepted times).
    TimesAtEdgeOk,
    /// `fill_times` refused whole rows whose times are all within 2^26 + 64: just past the edge.
    TimesJustPastRefused,
    /// `fill_times` refused a finite time ≥ 1e15 (where backends once disagreed).
    TimesHugeRefused,
    /// `fill_times` refused a NaN or infinite time.
    TimesNonFiniteRefused,
    /// `fill_times` accepted on a `Sinusoidal::timestep` encoder.
    TimestepTimesOk,
    /// `fill_times` accepted fractional times on any encoder.
    FractionalTimesOk,
    /// `fill` accepted rows whose last position is within 255 of 2^26.
    FillAtEdgeOk,
    /// `fill` refused whole rows only because the last position passes 2^26.
    FillPastEdgeRefused,
    /// `fill_positions` accepted a position ±2^26.
    PositionsAtEdgeOk,
    /// `fill_positions` refused the right number of rows only for the domain.
    PositionsPastEdgeRefused,
    /// A fairseq encoder filled a table.
    FairseqFillOk,
    /// `Sinusoidal::fairseq` refused a padding index past 2^26.
    PaddingPastEdgeRefused,
    /// `Rope::apply` accepted a position at the rope's domain limit (`|p| · max ω = 2^26` or
    /// the largest `|p|` below it).
    RopeAtEdgeOk,
    /// `Rope::apply` refused a call of the right shape only for the domain.
    RopePastEdgeRefused,
    /// `Rope::apply` accepted a rope whose largest frequency exceeds 1 (domain below 2^26).
    RopeFastFreqOk,
    /// `sin_cos_exact` accepted an angle within 2^-20 (relative) of 2^26.
    ExactAtEdgeOk,
    /// `sin_cos_exact` refused a finite angle just past 2^26 (within 2^-20, relative).
    ExactJustPastRefused,
}

impl Edge {
    /// Every edge, in declaration order.
    pub const ALL: [Edge; 17] = [
        Edge::TimesAtEdgeOk,
        Edge::TimesJustPastRefused,
        Edge::TimesHugeRefused,
        Edge::TimesNonFiniteRefused,
        Edge::TimestepTimesOk,
        Edge::FractionalTimesOk,
        Edge::FillAtEdgeOk,
        Edge::FillPastEdgeRefused,
        Edge::PositionsAtEdgeOk,
        Edge::PositionsPastEdgeRefused,
        Edge::FairseqFillOk,
        Edge::PaddingPastEdgeRefused,
        Edge::RopeAtEdgeOk,
        Edge::RopePastEdgeRefused,
        Edge::RopeFastFreqOk,
        Edge::ExactAtEdgeOk,
        Edge::ExactJustPastRefused,
    ];
}

static REACHED: [AtomicU64; Edge::ALL.len()] = [const { AtomicU64::new(0) }; Edge::ALL.len()];

fn reach(e: Edge) {
    REACHED[e as usize].fetch_add(1, Ordering::Relaxed);
}

/// How many checked calls reached each [`Edge`] so far in this process.
pub fn reached() -> Vec<(Edge, u64)> {
    Edge::ALL
        .iter()
        .map(|&e| (e, REACHED[e as usize].load(Ordering::Relaxed)))
        .collect()
}

/// A claimed dimension: anything from 0 to `usize::MAX`.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Dim {
    Small(u8),
    Medium(u16),
    Large(u32),
    Any(usize),
    Max,
    MaxMinus(u8),
    /// `2^k`.
    Pow2(u8),
    /// `2^k + 1` (odd) or `2^k + 2`.
    Pow2Plus(u8, bool),
}

impl Dim {
    fn get(self) -> usize {
        let p2 = |k: u8| 1usize.wrapping_shl(k as u32 % usize::BITS);
        match self {
            Dim::Small(v) => v as usize,
            Dim::Medium(v) => v as usize,
            Dim::Large(v) => v as usize,
            Dim::Any(v) => v,
            Dim::Max => usize::MAX,
            Dim::MaxMinus(k) => usize::MAX - k as usize,
            Dim::Pow2(k) => p2(k),
            Dim::Pow2Plus(k, odd) => p2(k).wrapping_add(if odd { 1 } else { 2 }),
        }
    }
}

/// A buffer length, relative to the length the other arguments imply (when that is
/// representable), capped at [`MAX_ELEMS`].
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Len {
    Exact,
    Delta(i8),
    Any(u16),
    Zero,
}

impl Len {
    fn get(self, expected: Option<usize>) -> usize {
        let e = expected.filter(|&e| e <= MAX_ELEMS);
        match self {
            Len::Exact => e.unwrap_or(1),
            Len::Delta(d) => match e {
                Some(e) => (e as i64 + d as i64).clamp(0, MAX_ELEMS as i64) as usize,
                None => d.unsigned_abs() as usize,
            },
            Len::Any(n) => n as usize % (MAX_ELEMS + 1),
            Len::Zero => 0,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum RotarySel {
    /// `rotary_dim = head_dim` (what `RopeConfig::new` sets).
    Full,
    Dim(Dim),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum FirstPos {
    Any(u32),
    Max,
    NearMax(u16),
    Zero,
    /// Around the position domain's edge, 2^26: `2^26 + 8 − k`.
    Edge(u8),
}

/// A position: a fuzzer's choice folded into the sinusoidal domain (as the other targets do),
/// any `i32`, or just inside/outside the domain's edge of the rope (`|p| · max ω ≤ 2^26`) or of
/// the sinusoidal tables (`|p| ≤ 2^26`).
#[derive(Arbitrary, Debug, Clone, Copy)]
enum BadPos {
    Clamped(PosSel),
    Raw(PosSel),
    /// `±(rope limit + k)`, `k` in [−4, 3].
    RopeEdge(u8),
    /// `±(2^26 + k)`, `k` in [−4, 3].
    SinEdge(u8),
}

impl BadPos {
    fn get(self, rope_limit: i64) -> i32 {
        let edge = |lim: i64, k: u8| {
            let v = lim + (k & 7) as i64 - 4;
            let v = if k & 8 != 0 { -v } else { v };
            v.clamp(i32::MIN as i64, i32::MAX as i64) as i32
        };
        match self {
            BadPos::Clamped(p) => p.get().clamp(-DOMAIN as i32, DOMAIN as i32),
            BadPos::Raw(p) => p.get(),
            BadPos::RopeEdge(k) => edge(rope_limit, k),
            BadPos::SinEdge(k) => edge(DOMAIN, k),
        }
    }
}

/// A `fill_times` time: any parameter value, fractional diffusion timesteps, a few f32 steps
/// either side of ±2^26 (the domain's edge, where f32 steps are 4 or 8), or a power of ten up
/// to 10^38 (the huge times that once left [−1, 1]).
#[derive(Arbitrary, Debug, Clone, Copy)]
enum TimeSel {
    Param(FloatParam),
    Frac(u32),
    Edge(i8, bool),
    Huge(u8, bool),
}

impl TimeSel {
    fn get(self) -> f32 {
        let sign = |neg: bool, v: f32| if neg { -v } else { v };
        match self {
            TimeSel::Param(p) => p.get(),
            TimeSel::Frac(v) => (v % (1 << 20)) as f32 / 1024.0,
            TimeSel::Edge(k, neg) => {
                let b = (DOMAIN as f32).to_bits() as i64 + (k % 16) as i64;
                sign(neg, f32::from_bits(b as u32))
            }
            TimeSel::Huge(k, neg) => sign(neg, 10f32.powi((k % 39) as i32)),
        }
    }
}

/// The sinusoidal constructor.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum SinCtor {
    /// `Sinusoidal::new(d_model, sin_base, layout)`.
    New,
    /// `Sinusoidal::fairseq(d_model, padding_idx)`.
    Fairseq(Padding),
    /// `Sinusoidal::timestep(d_model, max_period)`.
    Timestep(FloatParam),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Padding {
    None,
    Small(u8),
    /// `2^26 + 8 − k`: around the padding domain's edge.
    Edge(u8),
    Any(u32),
}

impl Padding {
    fn get(self) -> Option<u32> {
        match self {
            Padding::None => None,
            Padding::Small(v) => Some(v as u32),
            Padding::Edge(k) => Some((DOMAIN as u32 + 8).wrapping_sub(k as u32)),
            Padding::Any(v) => Some(v),
        }
    }
}

/// A `sin_cos_exact(position, freq)` call; `edge` moves `freq` to a few f32 steps around
/// `2^26 / |position|`, the domain's edge for that position.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct ExactCall {
    position: PosSel,
    freq: FloatParam,
    edge: Option<i8>,
}

/// Every `Scaling` variant with arbitrary parameters; factor slices get their own lengths.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum ScalingSel {
    None,
    Linear(FloatParam),
    Ntk(FloatParam),
    DynamicNtk {
        factor: FloatParam,
        max_positions: u32,
        seq_len: u32,
    },
    Yarn {
        factor: FloatParam,
        original_max_positions: u32,
        beta_fast: FloatParam,
        beta_slow: FloatParam,
        mscale: Option<FloatParam>,
        mscale_all_dim: Option<FloatParam>,
        attention_factor: Option<FloatParam>,
        truncate: bool,
        defaults: bool,
    },
    Llama3 {
        factor: FloatParam,
        low_freq_factor: FloatParam,
        high_freq_factor: FloatParam,
        original_max_positions: u32,
    },
    LongRope {
        short_len: Len,
        long_len: Len,
        original_max_positions: u32,
        max_positions: u32,
        use_long: bool,
        attention_factor: Option<FloatParam>,
    },
    FreqFactors(Len),
    Proportional {
        partial_rotary_factor: FloatParam,
        factor: FloatParam,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    head_dim: Dim,
    rotary: RotarySel,
    n_heads: Dim,
    d_model: Dim,
    base: FloatParam,
    sin_base: FloatParam,
    scaling: ScalingSel,
    interleaved: bool,
    sin_layout: u8,
    sin_ctor: SinCtor,
    dtype: DtypeSel,
    pos_len: Len,
    x_len: Len,
    cos_len: Len,
    sin_len: Len,
    out_len: Len,
    first_position: FirstPos,
    positions: Vec<BadPos>,
    /// `fill_times`' times (cycled to the positions' count).
    times: Vec<TimeSel>,
    exact: Vec<ExactCall>,
    factors: Vec<FloatParam>,
    data: Vec<u32>,
}

/// Calls `f` on a copy of `buf` and, if it fails, asserts the copy is bitwise unchanged.
/// Returns the result and the (possibly written) copy.
#[track_caller]
fn call<T: Fz, R>(
    what: &str,
    buf: &[T],
    f: impl FnOnce(&mut [T]) -> Result<R, Error>,
) -> (Result<R, Error>, Vec<T>) {
    let mut x = buf.to_vec();
    let r = f(&mut x);
    if r.is_err() {
        assert_bits_eq(buf, &x, &format!("{what} failed but changed its buffer"));
    }
    (r, x)
}

#[track_caller]
fn expect_ok<R>(what: &str, r: &Result<R, Error>, valid: bool) {
    match r {
        Ok(_) if !valid => panic!("{what}: accepted an invalid call"),
        Err(e) if valid => panic!("{what}: refused a valid call: {e:?}"),
        _ => {}
    }
}

fn scaling_of<'a>(sel: ScalingSel, half: usize, factors: &'a [f32]) -> Scaling<'a> {
    // Factor slices: the first `len` of `factors` (cycled into a buffer by the caller).
    let slice = |len: Len| &factors[..len.get(Some(half)).min(factors.len())];
    match sel {
        ScalingSel::None => Scaling::None,
        ScalingSel::Linear(f) => Scaling::Linear { factor: f.get() },
        ScalingSel::Ntk(f) => Scaling::Ntk { factor: f.get() },
        ScalingSel::DynamicNtk {
            factor,
            max_positions,
            seq_len,
        } => Scaling::DynamicNtk {
            factor: factor.get(),
            max_positions,
            seq_len,
        },
        ScalingSel::Yarn {
            factor,
            original_max_positions,
            beta_fast,
            beta_slow,
            mscale,
            mscale_all_dim,
            attention_factor,
            truncate,
            defaults,
        } => {
            let mut y = Yarn::new(factor.get(), original_max_positions);
            if !defaults {
                y.beta_fast = beta_fast.get();
                y.beta_slow = beta_slow.get();
                y.mscale = mscale.map(FloatParam::get);
                y.mscale_all_dim = mscale_all_dim.map(FloatParam::get);
                y.attention_factor = attention_factor.map(FloatParam::get);
                y.truncate = truncate;
            }
            Scaling::Yarn(y)
        }
        ScalingSel::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_positions,
        } => Scaling::Llama3 {
            factor: factor.get(),
            low_freq_factor: low_freq_factor.get(),
            high_freq_factor: high_freq_factor.get(),
            original_max_positions,
        },
        ScalingSel::LongRope {
            short_len,
            long_len,
            original_max_positions,
            max_positions,
            use_long,
            attention_factor,
        } => Scaling::LongRope(LongRope {
            short_factor: slice(short_len),
            long_factor: &factors[factors.len() - slice(long_len).len()..],
            original_max_positions,
            max_positions,
            use_long,
            attention_factor: attention_factor.map(FloatParam::get),
        }),
        ScalingSel::FreqFactors(len) => Scaling::FreqFactors(slice(len)),
        ScalingSel::Proportional {
            partial_rotary_factor,
            factor,
        } => Scaling::Proportional {
            partial_rotary_factor: partial_rotary_factor.get(),
            factor: factor.get(),
        },
    }
}

/// `Rope::new` accepted `scaling`: its documented preconditions must hold (src/rope.rs docs
/// of `Scaling`, `Yarn`, `LongRope`).
fn assert_accepted_scaling_is_documented_valid(scaling: &Scaling<'_>, half: usize, base: f32) {
    let pos = |what: &str, v: f32| assert!(v.is_finite() && v > 0.0, "accepted {what} = {v}");
    let list = |what: &str, l: &[f32]| {
        assert_eq!(l.len(), half, "accepted {what} of length {}", l.len());
        for &v in l {
            pos(what, v);
        }
    };
    match *scaling {
        Scaling::None => {}
        Scaling::Linear { factor } | Scaling::Ntk { factor } => pos("factor", factor),
        Scaling::DynamicNtk {
            factor,
            max_positions,
            ..
        } => {
            pos("factor", factor);
            assert_ne!(max_positions, 0, "accepted max_positions 0");
        }
        Scaling::Yarn(y) => {
            pos("factor", y.factor);
            pos("beta_fast", y.beta_fast);
            pos("beta_slow", y.beta_slow);
            assert!(
                y.beta_slow <= y.beta_fast,
                "accepted beta_slow > beta_fast: {y:?}"
            );
            assert_ne!(
                y.original_max_positions, 0,
                "accepted original_max_positions 0"
            );
            if let Some(a) = y.attention_factor {
                pos("attention_factor", a);
            }
            // Refused whether or not they are used (an explicit attention factor wins).
            for v in [y.mscale, y.mscale_all_dim].into_iter().flatten() {
                assert!(v.is_finite(), "accepted mscale {v}");
            }
            assert!(base != 1.0, "accepted YaRN with base 1");
        }
        Scaling::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_positions,
        } => {
            pos("factor", factor);
            pos("low_freq_factor", low_freq_factor);
            pos("high_freq_factor", high_freq_factor);
            assert!(
                low_freq_factor <= high_freq_factor,
                "accepted low_freq_factor > high_freq_factor"
            );
            assert_ne!(
                original_max_positions, 0,
                "accepted original_max_positions 0"
            );
        }
        Scaling::LongRope(l) => {
            list("short_factor", l.short_factor);
            list("long_factor", l.long_factor);
            assert_ne!(
                l.original_max_positions, 0,
                "accepted original_max_positions 0"
            );
            if let Some(a) = l.attention_factor {
                pos("attention_factor", a);
            }
        }
        Scaling::FreqFactors(f) => list("freq_factors", f),
        Scaling::Proportional {
            partial_rotary_factor,
            factor,
        } => {
            assert!(
                (0.0..=1.0).contains(&partial_rotary_factor),
                "accepted partial_rotary_factor {partial_rotary_factor}"
            );
            pos("factor", factor);
        }
        _ => {} // a variant added after this target was written
    }
}

/// The documented validity of a caller table's arguments (`posenc_fuzz::table_rotate`).
fn table_call_valid(
    backend: Backend,
    x_len: usize,
    n_heads: usize,
    head_dim: usize,
    cos_len: usize,
    sin_len: usize,
) -> Option<usize> {
    if !backend.is_available() || head_dim == 0 || !head_dim.is_multiple_of(2) || n_heads == 0 {
        return None;
    }
    let row = n_heads.checked_mul(head_dim)?;
    if !x_len.is_multiple_of(row) || sin_len != cos_len {
        return None;
    }
    let tokens = x_len / row;
    if tokens == 0 {
        return (cos_len == 0).then_some(0);
    }
    if !cos_len.is_multiple_of(tokens) {
        return None;
    }
    let rotary_dim = (cos_len / tokens).checked_mul(2)?;
    (rotary_dim != 0 && rotary_dim <= head_dim && rotary_dim <= posenc::MAX_ROTARY_DIM)
        .then_some(rotary_dim)
}

struct Shapes {
    head_dim: usize,
    rotary_dim: usize,
    n_heads: usize,
    d_model: usize,
    layout: Layout,
    sin_layout: SinusoidalLayout,
    pos_len: usize,
}

/// `pos_len` positions from the fuzzer's choices (cycled; the token index when there are
/// none), edges relative to `rope_limit`.
fn positions(n: usize, sel: &[BadPos], rope_limit: i64) -> Vec<i32> {
    (0..n)
        .map(|i| {
            if sel.is_empty() {
                i as i32
            } else {
                sel[i % sel.len()].get(rope_limit)
            }
        })
        .collect()
}

/// The f64 formula of a sinusoidal row at position/time `p` (posenc's `Sinusoidal` docs: the
/// frequencies and layout of each constructor), written independently of posenc.
/// `time`: a `fill_times` row, which is never fairseq's padding row (times are not table
/// positions).
fn formula_row(
    ctor: SinCtor,
    layout: SinusoidalLayout,
    d: usize,
    base: f32,
    p: f64,
    time: bool,
) -> Vec<f64> {
    let half = d / 2;
    let mut row = vec![0f64; d];
    let (b, den, layout, padding) = match ctor {
        SinCtor::New => (base as f64, half as f64, layout, None),
        SinCtor::Fairseq(pad) => (1e4, (half - 1) as f64, SinusoidalLayout::Split, pad.get()),
        SinCtor::Timestep(mp) => (
            mp.get() as f64,
            half as f64,
            SinusoidalLayout::SplitCosFirst,
            None,
        ),
    };
    if !time && padding.is_some_and(|pad| pad as f64 == p) {
        return row; // fairseq's padding row is all zeros
    }
    for i in 0..half {
        let a = p * b.powf(-(i as f64) / den);
        let (sn, cs) = (a.sin(), a.cos());
        match layout {
            SinusoidalLayout::Interleaved => (row[2 * i], row[2 * i + 1]) = (sn, cs),
            SinusoidalLayout::Split => (row[i], row[half + i]) = (sn, cs),
            SinusoidalLayout::SplitCosFirst => (row[i], row[half + i]) = (cs, sn),
        }
    }
    row
}

/// Every value of `out` (rows at `at`) is within the accuracy contract of the f64 formula
/// (plus the storage type's rounding for f16/bf16).
#[track_caller]
fn assert_accurate<T: Fz>(
    what: &str,
    out: &[T],
    at: impl Iterator<Item = f64>,
    row: impl Fn(f64) -> Vec<f64>,
) {
    for (r, p) in at.enumerate() {
        let want = row(p);
        for (c, &w) in want.iter().enumerate() {
            let got = out[r * want.len() + c].to_f32() as f64;
            let store = if T::DTYPE == posenc::Dtype::F32 {
                0.0
            } else {
                T::ulp((w.abs() + BOUND) as f32) as f64
            };
            assert!(
                (got - w).abs() <= BOUND + ORACLE_SLACK + store,
                "{what}: row {r} (position/time {p}), column {c}: got {got:e}, the f64 formula \
                 gives {w:e}"
            );
        }
    }
}

/// `sin_cos_exact` succeeds exactly when `|position · freq| ≤ 2^26` (the exact product), and
/// then returns sin and cos of that angle within the contract.
fn check_sin_cos_exact(calls: &[ExactCall]) {
    for c in calls.iter().take(16) {
        let p = c.position.get();
        let w = match c.edge {
            None => c.freq.get(),
            Some(k) => {
                let w0 = (DOMAIN as f64 / (p as f64).abs().max(1.0)) as f32;
                f32::from_bits((w0.to_bits() as i64 + (k % 8) as i64).max(0) as u32)
            }
        };
        let res = posenc::sin_cos_exact(p, w);
        let valid = angle_in_domain(p as i64, w);
        let a = (p as f64 * w as f64).abs() / DOMAIN as f64;
        if (a - 1.0).abs() <= 1.0 / (1 << 20) as f64 {
            reach(if valid {
                Edge::ExactAtEdgeOk
            } else {
                Edge::ExactJustPastRefused
            });
        }
        match res {
            Ok((sn, cs)) => {
                assert!(
                    valid,
                    "sin_cos_exact({p}, {w:e}) accepted outside the domain"
                );
                let a = p as f64 * w as f64;
                for (got, want, f) in [(sn, a.sin(), "sin"), (cs, a.cos(), "cos")] {
                    assert!(
                        (got as f64 - want).abs() <= BOUND + ORACLE_SLACK,
                        "sin_cos_exact({p}, {w:e}): {f} {got:e}, want {want:e}"
                    );
                }
            }
            Err(e) => {
                assert!(!valid, "sin_cos_exact({p}, {w:e}) refused: {e:?}");
                assert!(
                    matches!(e, Error::OutOfDomain { .. }),
                    "sin_cos_exact({p}, {w:e}): {e:?}"
                );
            }
        }
    }
}

fn run<T: Fz>(inp: &Input, s: &Shapes, scaling: Scaling<'_>, lens: [usize; 4]) {
    let [x_len, cos_len, sin_len, out_len] = lens;
    let x0: Vec<T> = gen_vec(x_len, &inp.data);
    let cos0: Vec<f32> = gen_vec(cos_len, &inp.data);
    let sin0: Vec<f32> = gen_vec(sin_len, &inp.data[inp.data.len() / 2..]);
    let out0: Vec<T> = gen_vec(out_len, &inp.data[inp.data.len() / 3..]);
    let (n_heads, head_dim) = (s.n_heads, s.head_dim);

    // ---- Rope::new, with_backend, apply, apply_inverse, fill_cos_sin ----
    let cfg = RopeConfig::new(head_dim, inp.base.get(), s.layout)
        .rotary_dim(s.rotary_dim)
        .scaling(scaling);
    let rope = Rope::new(&cfg);
    // The rope's position domain: `|p| · max ω ≤ 2^26` (crate docs, *Accuracy contract*).
    let max_w = rope.as_ref().map_or(1.0, |r| max_freq(r.inv_freq()));
    let pos = &positions(s.pos_len, &inp.positions, position_limit(max_w))[..];
    if let Ok(rope) = rope {
        // An accepted configuration is a sane one.
        let rd = s.rotary_dim;
        assert!(
            head_dim != 0 && head_dim % 2 == 0,
            "accepted head_dim {head_dim}"
        );
        assert!(
            rd != 0 && rd.is_multiple_of(2) && rd <= head_dim && rd <= MAX_ROTARY_DIM,
            "accepted rotary_dim {rd} (head_dim {head_dim})"
        );
        assert!(
            cfg.base.is_finite() && cfg.base > 0.0,
            "accepted base {}",
            cfg.base
        );
        assert_accepted_scaling_is_documented_valid(&scaling, rd / 2, cfg.base);
        assert_eq!(rope.inv_freq().len(), rd / 2);
        for &w in rope.inv_freq() {
            // Documented: finite, ≥ 0 and at most 2^16 rad per position.
            assert!(
                w.is_finite() && (0.0..=65_536.0).contains(&w),
                "accepted inv_freq {w} ({cfg:?})"
            );
        }
        let m = rope.attention_factor();
        assert!(m.is_finite() && m > 0.0, "attention factor {m} ({cfg:?})");
        assert_eq!(
            (rope.head_dim(), rope.rotary_dim(), rope.layout()),
            (head_dim, rd, s.layout)
        );

        let in_domain = pos.iter().all(|&p| angle_in_domain(p as i64, max_w));
        let shape_ok = n_heads != 0
            && n_heads
                .checked_mul(head_dim)
                .and_then(|r| r.checked_mul(pos.len()))
                == Some(x_len);
        let rows_ok = shape_ok && in_domain;
        let table_n = pos.len().checked_mul(rd / 2);
        let table_ok = table_n == Some(cos_len) && sin_len == cos_len && in_domain;

        let mut ropes = vec![rope];
        for &b in Backend::ALL {
            match rope.with_backend(b) {
                Ok(r) => {
                    assert!(b.is_available(), "with_backend accepted {b:?}");
                    assert_eq!(r.backend(), b);
                    ropes.push(r);
                }
                Err(e) => {
                    assert!(!b.is_available(), "with_backend refused {b:?}: {e:?}");
                    assert_eq!(e, Error::BackendUnavailable { backend: b });
                }
            }
        }
        for r in &ropes {
            let (res, x) = call("apply", &x0, |x| r.apply(x, n_heads, pos));
            expect_ok("apply", &res, rows_ok);
            if res.is_ok() && !pos.is_empty() {
                let lim = position_limit(max_w);
                if pos.iter().any(|&p| (p as i64).abs() == lim) {
                    reach(Edge::RopeAtEdgeOk);
                }
                if max_w > 1.0 {
                    reach(Edge::RopeFastFreqOk);
                }
            }
            if res.is_err() && shape_ok {
                reach(Edge::RopePastEdgeRefused); // right shape: refused for the domain
            }
            if res.is_ok() {
                assert_tail_untouched(&x0, &x, head_dim, rd);
            }
            let (res, x) = call("apply_inverse", &x0, |x| r.apply_inverse(x, n_heads, pos));
            expect_ok("apply_inverse", &res, rows_ok);
            if res.is_ok() {
                assert_tail_untouched(&x0, &x, head_dim, rd);
            }
            let (mut cos, mut sin) = (cos0.clone(), sin0.clone());
            let res = r.fill_cos_sin(pos, &mut cos, &mut sin);
            expect_ok("fill_cos_sin", &res, table_ok);
            if res.is_err() {
                assert_bits_eq(&cos0, &cos, "fill_cos_sin failed but changed cos");
                assert_bits_eq(&sin0, &sin, "fill_cos_sin failed but changed sin");
            }
        }
    }

    // ---- the table path ----
    for &b in Backend::ALL {
        let valid = table_call_valid(b, x_len, n_heads, head_dim, cos_len, sin_len);
        let (res, x) = call("table path", &x0, |x| {
            crate::table_rotate(b, x, n_heads, head_dim, s.layout, &cos0, &sin0)
        });
        expect_ok("table path", &res, valid.is_some());
        if let (Ok(()), Some(rd)) = (res, valid)
            && rd != 0
        {
            assert_tail_untouched(&x0, &x, head_dim, rd);
        }
    }

    // ---- Sinusoidal ----
    let d = s.d_model;
    let base = inp.sin_base.get();
    let (res, ctor_ok) = match inp.sin_ctor {
        // posenc documents base ≥ 1 (every frequency ≤ 1, angles in the exact range).
        SinCtor::New => (
            Sinusoidal::new(d, base, s.sin_layout),
            d != 0 && d.is_multiple_of(2) && base.is_finite() && base >= 1.0,
        ),
        // d_model ≥ 4 (odd allowed: a zero last column), padding_idx ≤ 2^26.
        SinCtor::Fairseq(pad) => (
            Sinusoidal::fairseq(d, pad.get()),
            d >= 4 && pad.get().is_none_or(|p| p as i64 <= DOMAIN),
        ),
        // d_model ≥ 2 (odd allowed), max_period finite and ≥ 1.
        SinCtor::Timestep(mp) => {
            let mp = mp.get();
            (
                Sinusoidal::timestep(d, mp),
                d >= 2 && mp.is_finite() && mp >= 1.0,
            )
        }
    };
    expect_ok("Sinusoidal constructor", &res, ctor_ok);
    if let SinCtor::Fairseq(pad) = inp.sin_ctor
        && d >= 4
        && pad.get().is_some_and(|p| p as i64 > DOMAIN)
    {
        reach(Edge::PaddingPastEdgeRefused);
    }
    let Ok(pe) = res else { return };
    assert_eq!(pe.d_model(), d);
    let mut pes = vec![pe];
    for &b in Backend::ALL {
        match pe.with_backend(b) {
            Ok(p) => {
                assert!(b.is_available());
                assert_eq!(p.backend(), b);
                pes.push(p);
            }
            Err(e) => {
                assert!(!b.is_available(), "Sinusoidal::with_backend refused {b:?}");
                assert_eq!(e, Error::BackendUnavailable { backend: b });
            }
        }
    }
    let first = match inp.first_position {
        FirstPos::Any(p) => p,
        FirstPos::Max => u32::MAX,
        FirstPos::NearMax(k) => u32::MAX - k as u32,
        FirstPos::Zero => 0,
        FirstPos::Edge(k) => (DOMAIN as u32 + 8).wrapping_sub(k as u32),
    };
    // The accuracy domain: every position and time |p| ≤ 2^26 (the largest frequency is 1).
    let rows = (out_len / d) as i64;
    let fill_ok = out_len % d == 0 && (rows == 0 || first as i64 + rows - 1 <= DOMAIN);
    let in_domain = pos.iter().all(|&p| (p as i64).abs() <= DOMAIN);
    let list_ok = pos.len().checked_mul(d) == Some(out_len) && in_domain;
    let times: Vec<f32> = (0..pos.len())
        .map(|i| {
            if inp.times.is_empty() {
                i as f32
            } else {
                inp.times[i % inp.times.len()].get()
            }
        })
        .collect();
    let times_ok = pos.len().checked_mul(d) == Some(out_len)
        && times.iter().all(|&t| (t as f64).abs() <= DOMAIN as f64);
    let formula = |p: f64| formula_row(inp.sin_ctor, s.sin_layout, d, base, p, false);
    let time_formula = |t: f64| formula_row(inp.sin_ctor, s.sin_layout, d, base, t, true);
    // Every output of an accepted call: within the contract of the f64 formula (checked on the
    // first backend) and bitwise the same on every backend ("cos/sin bitwise identical on
    // every Backend throughout the domain"; `add` of NaN rows aside, see `assert_same`).
    let mut first_out: [Option<Vec<T>>; 4] = [None, None, None, None];
    let mut same = |k: usize, what: &str, out: Vec<T>| match &first_out[k] {
        None => first_out[k] = Some(out),
        Some(r) => assert_same(r, &out, &format!("{what}: backends differ")),
    };
    for (i, p) in pes.iter().enumerate() {
        let (res, out) = call("Sinusoidal::fill", &out0, |o| p.fill(o, first));
        expect_ok("Sinusoidal::fill", &res, fill_ok);
        let last = first as i64 + rows - 1;
        if res.is_ok() && rows > 0 {
            if last >= DOMAIN - 255 {
                reach(Edge::FillAtEdgeOk);
            }
            if matches!(inp.sin_ctor, SinCtor::Fairseq(_)) {
                reach(Edge::FairseqFillOk);
            }
        }
        if res.is_err() && out_len % d == 0 && rows > 0 {
            reach(Edge::FillPastEdgeRefused);
        }
        if res.is_ok() {
            if i == 0 {
                let at = (0..rows).map(|r| (first as i64 + r) as f64);
                assert_accurate("Sinusoidal::fill", &out, at, formula);
            }
            same(0, "Sinusoidal::fill", out);
        }
        let (res, out) = call("Sinusoidal::fill_times", &out0, |o| p.fill_times(o, &times));
        expect_ok("Sinusoidal::fill_times", &res, times_ok);
        let shape_ok = pos.len().checked_mul(d) == Some(out_len);
        let tmax = times.iter().fold(0f64, |m, &t| m.max((t as f64).abs()));
        if res.is_ok() {
            if tmax >= (DOMAIN - 64) as f64 {
                reach(Edge::TimesAtEdgeOk);
            }
            if matches!(inp.sin_ctor, SinCtor::Timestep(_)) && !times.is_empty() {
                reach(Edge::TimestepTimesOk);
            }
            if times.iter().any(|t| t.fract() != 0.0) {
                reach(Edge::FractionalTimesOk);
            }
        } else if shape_ok {
            if times.iter().any(|t| !t.is_finite()) {
                reach(Edge::TimesNonFiniteRefused);
            } else if tmax >= 1e15 {
                reach(Edge::TimesHugeRefused);
            } else if tmax <= (DOMAIN + 64) as f64 {
                reach(Edge::TimesJustPastRefused);
            }
        }
        if res.is_ok() {
            // In the domain every value is a sine or cosine: within [-1, 1], never NaN.
            assert!(
                out.iter().all(|v| v.to_f32().abs() <= 1.0),
                "fill_times left [-1, 1]: {times:?}"
            );
            if i == 0 {
                let at = times.iter().map(|&t| t as f64);
                assert_accurate("Sinusoidal::fill_times", &out, at, time_formula);
            }
            same(1, "Sinusoidal::fill_times", out);
        }
        let (res, out) = call("Sinusoidal::fill_positions", &out0, |o| {
            p.fill_positions(o, pos)
        });
        expect_ok("Sinusoidal::fill_positions", &res, list_ok);
        if res.is_ok() && pos.iter().any(|&q| (q as i64).abs() == DOMAIN) {
            reach(Edge::PositionsAtEdgeOk);
        }
        if res.is_err() && pos.len().checked_mul(d) == Some(out_len) {
            reach(Edge::PositionsPastEdgeRefused);
        }
        if res.is_ok() {
            if i == 0 {
                let at = pos.iter().map(|&q| q as f64);
                assert_accurate("Sinusoidal::fill_positions", &out, at, formula);
            }
            same(2, "Sinusoidal::fill_positions", out);
        }
        let (res, out) = call("Sinusoidal::add", &out0, |o| p.add(o, pos));
        expect_ok("Sinusoidal::add", &res, list_ok);
        if res.is_ok() {
            same(3, "Sinusoidal::add", out);
        }
    }
}

/// One fuzz input: `data` decoded as libFuzzer's typed `fuzz_target!` decodes it
/// (`Input::arbitrary_take_rest`), then checked; bytes that decode to nothing are skipped.
pub fn fuzz(data: &[u8]) {
    let Ok(inp) = Input::arbitrary_take_rest(arbitrary::Unstructured::new(data)) else {
        return;
    };
    let head_dim = inp.head_dim.get();
    let rotary_dim = match inp.rotary {
        RotarySel::Full => head_dim,
        RotarySel::Dim(d) => d.get(),
    };
    let s = Shapes {
        head_dim,
        rotary_dim,
        n_heads: inp.n_heads.get(),
        d_model: inp.d_model.get(),
        layout: if inp.interleaved {
            Layout::Interleaved
        } else {
            Layout::RotateHalf
        },
        sin_layout: [
            SinusoidalLayout::Interleaved,
            SinusoidalLayout::Split,
            SinusoidalLayout::SplitCosFirst,
        ][inp.sin_layout as usize % 3],
        pos_len: inp.pos_len.get(None).min(1 << 12),
    };
    check_sin_cos_exact(&inp.exact);
    let pos_len = s.pos_len;
    let row = s.n_heads.checked_mul(head_dim);
    let x_len = inp.x_len.get(row.and_then(|r| r.checked_mul(pos_len)));
    let cos_len = inp.cos_len.get(pos_len.checked_mul(rotary_dim / 2));
    let sin_len = inp.sin_len.get(Some(cos_len));
    let out_len = inp.out_len.get(pos_len.checked_mul(s.d_model));

    // Scaling factor slices: up to MAX_ROTARY_DIM / 2 (+ slack) values, cycled.
    let half = rotary_dim / 2;
    let n_factors = half.min(MAX_ROTARY_DIM) + 8;
    let factors: Vec<f32> = (0..n_factors)
        .map(|i| {
            if inp.factors.is_empty() {
                1.0
            } else {
                inp.factors[i % inp.factors.len()].get()
            }
        })
        .collect();
    let scaling = scaling_of(inp.scaling, half, &factors);

    let lens = [x_len, cos_len, sin_len, out_len];
    match inp.dtype {
        DtypeSel::F32 => run::<f32>(&inp, &s, scaling, lens),
        DtypeSel::F16 => run::<f16>(&inp, &s, scaling, lens),
        DtypeSel::Bf16 => run::<bf16>(&inp, &s, scaling, lens),
    }
}
