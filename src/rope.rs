//! Rotary position embedding: configuration, validation and the public entry points.
//!
//! Every entry point validates its arguments (lengths, shapes, views) before anything is
//! written, describes the work as a [`Job`] over [`Target`]s, and hands it to the engine once
//! (`engine::pairs::rotate`). Frequencies come from `scaling.rs` once per [`Rope`].

use crate::angles::{Angles, Ints, Position, Positions, Source, Table};
use crate::axes::Axes;
use crate::element::Element;
use crate::engine::angles::CosSinTable;
use crate::engine::dispatch::{dispatch, is_available};
use crate::engine::job::{Angles as EngineAngles, Job, Positions as EnginePositions, Target};
use crate::engine::pairs;
use crate::error::{Error, Formula};
use crate::scaling::{self, MAX_PAIRS, MAX_ROTARY_DIM, Scaling};
use crate::trig;
use crate::types::{Backend, Layout, Rounding, View};
use crate::validate::{check_offset, check_qk, check_rows, check_table};
use crate::view;
use core::fmt;

/// What a [`Rope`] is built from.
///
/// ```
/// use posenc::{Layout, RopeConfig};
/// // GPT-NeoX-style partial rotary: 32 of 128 channels rotate.
/// let cfg = RopeConfig::new(128, 10_000.0, Layout::RotateHalf).rotary_dim(32);
/// assert_eq!(cfg.rotary_dim, 32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RopeConfig<'a> {
    /// Channels per head.
    pub head_dim: usize,
    /// Channels of each head that rotate (even, `rotary_offset + rotary_dim ≤ head_dim`).
    pub rotary_dim: usize,
    /// `rope_theta`.
    pub base: f32,
    /// Pairing of channels.
    pub layout: Layout,
    /// Frequency scaling.
    pub scaling: Scaling<'a>,
    /// First rotating channel (0 unless set; ggml's `rope_set_offset`).
    pub rotary_offset: usize,
    /// How many positions a token has and which pair follows which (plain, M-RoPE, 2-D).
    pub axes: Axes,
}

impl<'a> RopeConfig<'a> {
    /// A full-rotary, unscaled configuration.
    ///
    /// ```
    /// let cfg = posenc::RopeConfig::new(128, 500_000.0, posenc::Layout::RotateHalf);
    /// assert_eq!(cfg.rotary_dim, 128);
    /// ```
    pub fn new(head_dim: usize, base: f32, layout: Layout) -> Self {
        RopeConfig {
            head_dim,
            rotary_dim: head_dim,
            base,
            layout,
            scaling: Scaling::None,
            rotary_offset: 0,
            axes: Axes::Single,
        }
    }

    /// Rotates only `rotary_dim` channels of each head (the first ones unless
    /// [`RopeConfig::rotary_offset`] moves the window); the rest are left bit-for-bit untouched.
    ///
    /// ```
    /// let cfg = posenc::RopeConfig::new(256, 1e4, posenc::Layout::Interleaved).rotary_dim(64);
    /// assert_eq!(cfg.rotary_dim, 64);
    /// ```
    pub fn rotary_dim(self, rotary_dim: usize) -> Self {
        RopeConfig { rotary_dim, ..self }
    }

    /// Rotates channels `offset .. offset + rotary_dim` instead of the first ones (ggml's
    /// `rope_set_offset`, DeepSeek-style layouts with a non-rotary prefix).
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let cfg = RopeConfig::new(8, 1e4, Layout::RotateHalf).rotary_dim(4).rotary_offset(4);
    /// let rope = Rope::new(&cfg).unwrap();
    /// let mut x = [1.0f32; 8];
    /// rope.apply(&mut x, 1, &[3]).unwrap();
    /// assert_eq!(&x[..4], &[1.0; 4]); // the prefix is untouched
    /// assert_ne!(x[4], 1.0);
    /// ```
    pub fn rotary_offset(self, offset: usize) -> Self {
        RopeConfig {
            rotary_offset: offset,
            ..self
        }
    }

    /// Sets the frequency-scaling scheme.
    ///
    /// ```
    /// use posenc::{RopeConfig, Layout, Scaling};
    /// let cfg = RopeConfig::new(64, 1e4, Layout::RotateHalf).scaling(Scaling::Linear { factor: 2.0 });
    /// assert_eq!(cfg.scaling, Scaling::Linear { factor: 2.0 });
    /// ```
    pub fn scaling(self, scaling: Scaling<'a>) -> Self {
        RopeConfig { scaling, ..self }
    }

    /// Sets the position axes (M-RoPE sections, 2-D vision RoPE).
    ///
    /// ```
    /// use posenc::{Axes, Layout, RopeConfig};
    /// // Qwen2-VL: 64 pairs split 16 (t) / 24 (h) / 24 (w).
    /// let cfg = RopeConfig::new(128, 1e6, Layout::RotateHalf).axes(Axes::MRope { sections: [16, 24, 24] });
    /// assert_eq!(cfg.axes.count(), 3);
    /// ```
    pub fn axes(self, axes: Axes) -> Self {
        RopeConfig { axes, ..self }
    }
}

/// A resolved RoPE: frequencies computed once, no lifetime, no heap.
///
/// `x` arguments are token-major, `tokens × n_heads × head_dim`, contiguous; `positions` has
/// one `i32` per token (negative positions rotate backwards). cos/sin are computed once per
/// token and shared by all heads. Strided buffers (fused QKV, head-major) go through
/// [`Rope::apply_views`].
///
/// ```
/// use posenc::{Layout, Rope, RopeConfig};
/// let rope = Rope::new(&RopeConfig::new(4, 10_000.0, Layout::RotateHalf)).unwrap();
/// let mut q = [1.0f32, 0.0, 0.0, 0.0]; // one token, one head
/// rope.apply(&mut q, 1, &[1]).unwrap();
/// assert!((q[0] - 1f32.cos()).abs() < 1e-6 && (q[2] - 1f32.sin()).abs() < 1e-6);
/// rope.apply_inverse(&mut q, 1, &[1]).unwrap();
/// assert!((q[0] - 1.0).abs() < 1e-6 && q[2].abs() < 1e-6);
/// ```
#[derive(Clone, Copy, PartialEq)]
pub struct Rope {
    head_dim: usize,
    rotary_dim: usize,
    rotary_offset: usize,
    layout: Layout,
    attention_factor: f32,
    backend: Backend,
    rounding: Rounding,
    axes: Axes,
    axis: [u8; MAX_PAIRS],
    inv_freq: [f32; MAX_PAIRS],
    /// [`Rope::position_limit`], computed once: every call that takes positions checks them
    /// against it, and working it out (a pass over the frequencies and two exact multiply-adds
    /// in software) cost a decode call as much as several heads' rotation (`perf report` of
    /// `apply` on one token).
    position_limit: u32,
}

impl fmt::Debug for Rope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rope")
            .field("head_dim", &self.head_dim)
            .field("rotary_dim", &self.rotary_dim)
            .field("rotary_offset", &self.rotary_offset)
            .field("layout", &self.layout)
            .field("attention_factor", &self.attention_factor)
            .field("backend", &self.backend)
            .field("rounding", &self.rounding)
            .field("axes", &self.axes)
            .field("inv_freq", &self.inv_freq())
            .finish()
    }
}

/// The largest |position| whose angles stay in the domain for every frequency of `inv_freq`.
fn limit_of(inv_freq: &[f32]) -> u32 {
    let w = inv_freq.iter().fold(0.0f32, |m, &w| m.max(w.abs()));
    trig::max_abs_position(w)
}

/// Validates `head_dim` and `rotary_dim` as a pair.
pub(crate) fn check_dims(head_dim: usize, rotary_dim: usize) -> Result<(), Error> {
    if head_dim == 0 || !head_dim.is_multiple_of(2) {
        return Err(Error::InvalidHeadDim { head_dim });
    }
    if rotary_dim == 0 || !rotary_dim.is_multiple_of(2) || rotary_dim > head_dim {
        return Err(Error::InvalidRotaryDim {
            rotary_dim,
            head_dim,
        });
    }
    if rotary_dim > MAX_ROTARY_DIM {
        return Err(Error::RotaryDimTooLarge {
            rotary_dim,
            max: MAX_ROTARY_DIM,
        });
    }
    Ok(())
}

impl Rope {
    /// Validates `config` and computes its frequencies and attention factor, for the
    /// backend [`Backend::active`] picks.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(128, 500_000.0, Layout::RotateHalf)).unwrap();
    /// assert_eq!(rope.inv_freq().len(), 64);
    /// assert!(Rope::new(&RopeConfig::new(128, f32::NAN, Layout::RotateHalf)).is_err());
    /// ```
    pub fn new(config: &RopeConfig<'_>) -> Result<Rope, Error> {
        check_dims(config.head_dim, config.rotary_dim)?;
        check_offset(config.head_dim, config.rotary_dim, config.rotary_offset)?;
        let mut inv_freq = [0.0f32; MAX_PAIRS];
        let attention_factor = scaling::resolve(
            config.base,
            config.rotary_dim,
            &config.scaling,
            &mut inv_freq,
        )?;
        let mut axis = [0u8; MAX_PAIRS];
        config.axes.resolve(
            config.rotary_dim,
            &config.scaling,
            config.base,
            &mut inv_freq,
            &mut axis,
        )?;
        Ok(Rope {
            head_dim: config.head_dim,
            rotary_dim: config.rotary_dim,
            rotary_offset: config.rotary_offset,
            layout: config.layout,
            attention_factor,
            backend: Backend::active(),
            rounding: Rounding::Once,
            axes: config.axes,
            axis,
            position_limit: limit_of(&inv_freq[..config.rotary_dim / 2]),
            inv_freq,
        })
    }

    /// A rope from frequencies the caller already has (e.g. a checkpoint's `inv_freq`
    /// buffer or a GGUF `rope_freqs`-derived vector), so a runtime can match any framework bit
    /// for bit. `rotary_dim = 2 · inv_freq.len()`; every frequency must be finite, ≥ 0 and at
    /// most 2^16, and the attention factor finite and > 0.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let hf = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf)).unwrap();
    /// let mine = Rope::from_inv_freq(64, Layout::RotateHalf, hf.inv_freq(), 1.0).unwrap();
    /// assert_eq!(mine.inv_freq(), hf.inv_freq());
    /// ```
    pub fn from_inv_freq(
        head_dim: usize,
        layout: Layout,
        inv_freq: &[f32],
        attention_factor: f32,
    ) -> Result<Rope, Error> {
        let rotary_dim = inv_freq.len().checked_mul(2).ok_or(Error::ShapeOverflow)?;
        check_dims(head_dim, rotary_dim)?;
        scaling::positive("attention_factor", attention_factor)?;
        scaling::check_inv_freq(inv_freq)?;
        let mut table = [0.0f32; MAX_PAIRS];
        table[..inv_freq.len()].copy_from_slice(inv_freq);
        Ok(Rope {
            head_dim,
            rotary_dim,
            rotary_offset: 0,
            layout,
            attention_factor,
            backend: Backend::active(),
            rounding: Rounding::Once,
            axes: Axes::Single,
            axis: [0; MAX_PAIRS],
            position_limit: limit_of(inv_freq),
            inv_freq: table,
        })
    }

    /// The same rope over the window `offset .. offset + rotary_dim` of each head (the
    /// GGUF loader's frequencies come through [`Rope::from_inv_freq`], whose window starts at
    /// channel 0).
    pub(crate) fn with_rotary_offset(self, offset: usize) -> Result<Rope, Error> {
        check_offset(self.head_dim, self.rotary_dim, offset)?;
        Ok(Rope {
            rotary_offset: offset,
            ..self
        })
    }

    /// The same rope, run on `backend` (for tests, benchmarks and A/B checks).
    ///
    /// ```
    /// use posenc::{Backend, Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::Interleaved)).unwrap();
    /// let scalar = rope.with_backend(Backend::Scalar).unwrap();
    /// assert_eq!(scalar.backend(), Backend::Scalar);
    /// ```
    pub fn with_backend(self, backend: Backend) -> Result<Rope, Error> {
        if !is_available(backend) {
            return Err(Error::BackendUnavailable { backend });
        }
        Ok(Rope { backend, ..self })
    }

    /// The same rope with another [`Rounding`] mode for [`Rope::apply`] and its relatives.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Rounding};
    /// let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf)).unwrap();
    /// assert_eq!(rope.with_rounding(Rounding::HfEager).rounding(), Rounding::HfEager);
    /// ```
    pub fn with_rounding(self, rounding: Rounding) -> Rope {
        Rope { rounding, ..self }
    }

    /// The rounding mode.
    ///
    /// ```
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(8, 1e4, posenc::Layout::RotateHalf)).unwrap();
    /// assert_eq!(rope.rounding(), posenc::Rounding::Once);
    /// ```
    pub fn rounding(&self) -> Rounding {
        self.rounding
    }

    /// The backend this rope runs on.
    ///
    /// ```
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(64, 1e4, posenc::Layout::RotateHalf)).unwrap();
    /// assert_eq!(rope.backend(), posenc::Backend::active());
    /// ```
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Channels per head.
    ///
    /// ```
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(64, 1e4, posenc::Layout::RotateHalf)).unwrap();
    /// assert_eq!(rope.head_dim(), 64);
    /// ```
    pub fn head_dim(&self) -> usize {
        self.head_dim
    }

    /// Rotating channels per head.
    ///
    /// ```
    /// let cfg = posenc::RopeConfig::new(64, 1e4, posenc::Layout::RotateHalf).rotary_dim(16);
    /// assert_eq!(posenc::Rope::new(&cfg).unwrap().rotary_dim(), 16);
    /// ```
    pub fn rotary_dim(&self) -> usize {
        self.rotary_dim
    }

    /// First rotating channel.
    ///
    /// ```
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(64, 1e4, posenc::Layout::RotateHalf)).unwrap();
    /// assert_eq!(rope.rotary_offset(), 0);
    /// ```
    pub fn rotary_offset(&self) -> usize {
        self.rotary_offset
    }

    /// The channel pairing.
    ///
    /// ```
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(64, 1e4, posenc::Layout::Interleaved)).unwrap();
    /// assert_eq!(rope.layout(), posenc::Layout::Interleaved);
    /// ```
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The position axes.
    ///
    /// ```
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(64, 1e4, posenc::Layout::RotateHalf)).unwrap();
    /// assert_eq!(rope.axes(), posenc::Axes::Single);
    /// ```
    pub fn axes(&self) -> Axes {
        self.axes
    }

    /// The `rotary_dim / 2` frequencies, exactly as used (f32, in the frameworks' order of
    /// operations: equal to HF's `inv_freq` buffer).
    ///
    /// ```
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(4, 10_000.0, posenc::Layout::RotateHalf)).unwrap();
    /// assert_eq!(rope.inv_freq(), &[1.0, 0.01]);
    /// ```
    pub fn inv_freq(&self) -> &[f32] {
        &self.inv_freq[..self.rotary_dim / 2]
    }

    /// The magnitude cos and sin are multiplied by (YaRN/LongRoPE mscale; 1 otherwise).
    ///
    /// ```
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(64, 1e4, posenc::Layout::RotateHalf)).unwrap();
    /// assert_eq!(rope.attention_factor(), 1.0);
    /// ```
    pub fn attention_factor(&self) -> f32 {
        self.attention_factor
    }

    /// The view of a contiguous token-major buffer of `n_heads` heads.
    pub(crate) fn contiguous(&self, n_heads: usize) -> View {
        View::token_major(n_heads, self.head_dim)
    }

    /// The largest |position| this rope accepts: the one whose angles `p·ω` stay within the
    /// accuracy contract's domain (|p·ω| ≤ 2^26) for every frequency of this rope. Larger
    /// positions get [`Error::PositionOutOfRange`] or [`Error::OutOfDomain`].
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Scaling};
    /// let rope = Rope::new(&RopeConfig::new(128, 1e4, Layout::RotateHalf)).unwrap();
    /// assert_eq!(rope.position_limit(), 1 << 26); // largest ω is 1
    /// let fast = RopeConfig::new(4, 1e4, Layout::RotateHalf).scaling(Scaling::Linear { factor: 0.1 });
    /// assert!(Rope::new(&fast).unwrap().position_limit() < 1 << 26); // ω up to 10
    /// ```
    pub fn position_limit(&self) -> u32 {
        self.position_limit
    }

    /// Checks an angle source against this rope: positions fit an i32; a table has
    /// `rotary_dim / 2` pairs per token.
    pub(crate) fn check_source(&self, src: &Source<'_>) -> Result<(), Error> {
        match src {
            Source::Positions(p) => p.check("positions", self.position_limit()),
            Source::Table(t) => {
                let half = self.rotary_dim / 2;
                if t.tokens() > 0 && t.pairs() != half {
                    return Err(Error::LengthMismatch {
                        what: "table pairs per token",
                        expected: half,
                        actual: t.pairs(),
                        formula: Formula::one(&"rotary_dim/2", half),
                    });
                }
                Ok(())
            }
        }
    }

    /// Rotates the views of `targets` (validated) by `src` (validated), cos scaled by `cs`
    /// and sin by `ss`. Positions that are not i32 are converted a stack buffer at a time, each
    /// piece its own engine call on its tokens: results do not depend on how a call is split.
    pub(crate) fn launch<I: Element, O: Element>(
        &self,
        targets: &mut [Target<'_, I, O>],
        src: Source<'_>,
        cs: f32,
        ss: f32,
    ) {
        match src {
            Source::Table(t) => {
                let angles = EngineAngles::Table {
                    cos: t.cos(),
                    sin: t.sin(),
                    cs,
                    ss,
                };
                pairs::rotate(self.backend, targets, self.job(0, t.tokens(), angles));
            }
            Source::Positions(p) => self.for_positions(p, None, |first, n, angles| {
                let job = self.job(first, n, angles.scaled(cs, ss));
                pairs::rotate(self.backend, targets, job);
            }),
        }
    }

    /// The job of tokens `first .. first + tokens` of a call.
    pub(crate) fn job<'a>(&self, first: usize, tokens: usize, angles: EngineAngles<'a>) -> Job<'a> {
        Job {
            first,
            tokens,
            offset: self.rotary_offset,
            rotary_dim: self.rotary_dim,
            head_dim: self.head_dim,
            layout: self.layout,
            angles,
            round: self.rounding,
        }
    }

    /// Angles `p · ω` from this rope's frequencies (HF's f32 product under the HF modes).
    fn freq<'a>(&'a self, positions: EnginePositions<'a>, cs: f32, ss: f32) -> EngineAngles<'a> {
        EngineAngles::Freq {
            inv_freq: self.inv_freq(),
            positions,
            cs,
            ss,
            f32_angle: self.rounding != Rounding::Once,
        }
    }

    /// `x` (`tokens × n_heads × head_dim`, token-major) rotated by `at`, cos/sin scaled by
    /// `cs`/`ss`, after every check.
    fn contiguous_call<'a, T: Element>(
        &self,
        what: &'static str,
        x: &mut [T],
        n_heads: usize,
        at: impl Angles<'a>,
        cs: f32,
        ss: f32,
    ) -> Result<(), Error> {
        let src = at.source();
        check_rows(what, x.len(), n_heads, self.head_dim, src.tokens())?;
        self.check_source(&src)?;
        let views = [self.contiguous(n_heads)];
        self.launch(&mut [Target::in_place(x, &views)], src, cs, ss);
        Ok(())
    }

    /// Rotates `x` (`tokens × n_heads × head_dim`) in place by the angles of `at`: positions
    /// (any integer type, one per token) or a [`Table`] made once by [`Rope::table`].
    ///
    /// Each output is `m·(a·cos θ − b·sin θ)` / `m·(b·cos θ + a·sin θ)` with `θ = p · ω` exact
    /// and `m` the attention factor; computed in f32, rounded once to `T`. On a multi-axis rope
    /// every axis takes the token's one position (text tokens).
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(8, 10_000.0, Layout::Interleaved)).unwrap();
    /// let mut k = vec![posenc::bf16::from_f32(0.5); 2 * 3 * 8]; // 2 tokens, 3 heads
    /// rope.apply(&mut k, 3, &[7, 8]).unwrap();
    /// assert!(rope.apply(&mut k, 3, &[7]).is_err()); // positions must match tokens
    /// ```
    pub fn apply<'a, T: Element>(
        &self,
        x: &mut [T],
        n_heads: usize,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let m = self.attention_factor;
        self.contiguous_call("x", x, n_heads, at, m, m)
    }

    /// Undoes [`Rope::apply`]: rotates by `−θ` and divides by the attention factor.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(8, 10_000.0, Layout::RotateHalf)).unwrap();
    /// let orig: Vec<f32> = (0..16).map(|i| i as f32 * 0.1).collect();
    /// let mut x = orig.clone();
    /// rope.apply(&mut x, 1, &[1000, -3]).unwrap();
    /// rope.apply_inverse(&mut x, 1, &[1000, -3]).unwrap();
    /// for (a, b) in x.iter().zip(&orig) { assert!((a - b).abs() < 1e-5); }
    /// ```
    pub fn apply_inverse<'a, T: Element>(
        &self,
        x: &mut [T],
        n_heads: usize,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let inv = 1.0 / self.attention_factor;
        self.contiguous_call("x", x, n_heads, at, inv, -inv)
    }

    /// Shifts keys already rotated to position `p` to `p + delta` (a KV-cache shift after
    /// dropping or inserting tokens): a pure rotation by `delta · ω`, *without* the attention
    /// factor, which the keys already carry. `shift(d1)` then `shift(d2)` equals `shift(d1 + d2)`
    /// within the rotation bound, and `shift(apply(x, p), d)` equals `apply(x, p + d)`.
    /// `deltas` may be a [`Table`] made from the deltas.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
    /// let x0 = [0.3f32, -1.0, 0.5, 2.0, 1.0, 0.0, -0.5, 0.25];
    /// let (mut a, mut b) = (x0, x0);
    /// rope.apply(&mut a, 1, &[100]).unwrap();
    /// rope.shift(&mut a, 1, &[-58]).unwrap();
    /// rope.apply(&mut b, 1, &[42]).unwrap();
    /// for (u, v) in a.iter().zip(&b) { assert!((u - v).abs() < 1e-5); }
    /// ```
    pub fn shift<'a, T: Element>(
        &self,
        k: &mut [T],
        n_heads: usize,
        deltas: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.contiguous_call("k", k, n_heads, deltas, 1.0, 1.0)
    }

    /// Rotates a query and a key buffer (different head counts, as in GQA/MQA) with the
    /// cos/sin computed once per token. Both are token-major and contiguous.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(128, 500_000.0, Layout::RotateHalf)).unwrap();
    /// let (mut q, mut k) = (vec![0.5f32; 2 * 32 * 128], vec![0.5f32; 2 * 8 * 128]);
    /// rope.apply_qk(&mut q, 32, &mut k, 8, &[10, 11]).unwrap();
    /// let mut k2 = vec![0.5f32; 2 * 8 * 128];
    /// rope.apply(&mut k2, 8, &[10, 11]).unwrap();
    /// assert_eq!(k, k2);
    /// ```
    pub fn apply_qk<'a, T: Element>(
        &self,
        q: &mut [T],
        n_q_heads: usize,
        k: &mut [T],
        n_kv_heads: usize,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let src = at.source();
        self.check_qk(q.len(), n_q_heads, k.len(), n_kv_heads, src.tokens())?;
        self.check_source(&src)?;
        let m = self.attention_factor;
        let (qs, ks) = ([self.contiguous(n_q_heads)], [self.contiguous(n_kv_heads)]);
        let mut targets = [Target::in_place(q, &qs), Target::in_place(k, &ks)];
        self.launch(&mut targets, src, m, m);
        Ok(())
    }

    /// Rotates the heads described by `views` inside one buffer (a fused QKV buffer, a
    /// head-major `[heads, tokens, head_dim]` tensor, GPT-NeoX's `[tokens, heads, 3,
    /// head_dim]`, a slice of a larger arena), computing cos/sin once per token for all of
    /// them. Every view is validated first: in bounds, and no two heads overlap (see
    /// [`View`]). Any number of views.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, View};
    /// // A fused QKV row per token: 4 q heads, 2 k heads, 2 v heads of 8 channels.
    /// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
    /// let tokens = 3;
    /// let row = (4 + 2 + 2) * 8;
    /// let mut qkv = vec![0.25f32; tokens * row];
    /// let q = View { n_heads: 4, token_stride: row, head_stride: 8, offset: 0 };
    /// let k = View { n_heads: 2, token_stride: row, head_stride: 8, offset: 32 };
    /// rope.apply_views(&mut qkv, &[q, k], &[0, 1, 2]).unwrap();
    /// assert_eq!(&qkv[48..64], &[0.25; 16]); // v untouched
    ///
    /// // GPT-NeoX: [tokens, heads, 3, head_dim], q and k of each head side by side.
    /// let (heads, hd) = (2, 8);
    /// let mut neox = vec![0.25f32; tokens * heads * 3 * hd];
    /// let q = View { n_heads: heads, token_stride: heads * 3 * hd, head_stride: 3 * hd, offset: 0 };
    /// let k = View { offset: hd, ..q };
    /// rope.apply_views(&mut neox, &[q, k], &[0, 1, 2]).unwrap();
    /// ```
    pub fn apply_views<'a, T: Element>(
        &self,
        x: &mut [T],
        views: &[View],
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let src = at.source();
        view::validate(views, x.len(), self.head_dim, src.tokens())?;
        self.check_source(&src)?;
        if src.tokens() == 0 {
            return Ok(()); // no tokens: nothing to rotate (offsets were never dereferenced)
        }
        let m = self.attention_factor;
        self.launch(&mut [Target::in_place(x, views)], src, m, m);
        Ok(())
    }

    /// Rotates `x` with several positions per token (M-RoPE `[t, h, w]`, 2-D vision
    /// `[row, col]`): pair `j` uses the axis [`Axes`] assigns it. `A` must equal
    /// `self.axes().count()`; tokens whose axes all equal `p` get exactly (bitwise) the
    /// rotation [`Rope::apply`] gives at `p`. For a table of such positions, see
    /// [`Rope::table_axes`].
    ///
    /// ```
    /// use posenc::{Axes, Layout, Rope, RopeConfig};
    /// let cfg = RopeConfig::new(16, 1e4, Layout::RotateHalf).axes(Axes::MRope { sections: [2, 3, 3] });
    /// let rope = Rope::new(&cfg).unwrap();
    /// let (mut a, mut b) = (vec![0.5f32; 16], vec![0.5f32; 16]);
    /// rope.apply_axes(&mut a, 1, &[[9, 9, 9]]).unwrap();
    /// rope.apply(&mut b, 1, &[9]).unwrap();
    /// assert_eq!(a, b); // a text token is plain RoPE
    /// ```
    pub fn apply_axes<T: Element, P: Position, const A: usize>(
        &self,
        x: &mut [T],
        n_heads: usize,
        positions: &[[P; A]],
    ) -> Result<(), Error> {
        let n_axes = self.check_axes(A)?;
        check_rows("x", x.len(), n_heads, self.head_dim, positions.len())?;
        let flat = P::ints(positions.as_flattened());
        flat.check("positions", self.position_limit())?;
        let views = [self.contiguous(n_heads)];
        let targets = &mut [Target::in_place(x, &views)];
        let m = self.attention_factor;
        self.for_positions(flat, Some(n_axes), |first, tokens, angles| {
            let job = self.job(first, tokens, angles.scaled(m, m));
            pairs::rotate(self.backend, targets, job);
        });
        Ok(())
    }

    /// Checks that positions with `a` axes suit this rope; returns the axis count.
    pub(crate) fn check_axes(&self, a: usize) -> Result<usize, Error> {
        let n_axes = self.axes.count();
        if a != n_axes {
            return Err(Error::LengthMismatch {
                what: "positions axes",
                expected: n_axes,
                actual: a,
                formula: Formula::one(&"axes().count()", n_axes),
            });
        }
        Ok(n_axes)
    }

    /// Calls `f(first, tokens, angles)` over validated positions, `n_axes` per token
    /// (flattened; `None`: one plain position per token), converting them to i32 a stack
    /// buffer at a time when they are another integer type. The angles are unscaled (cos and
    /// sin by 1): callers scale them ([`EngineAngles::scaled`]).
    pub(crate) fn for_positions<'a>(
        &'a self,
        ints: Ints<'a>,
        n_axes: Option<usize>,
        mut f: impl FnMut(usize, usize, EngineAngles<'_>),
    ) {
        let per_token = n_axes.unwrap_or(1);
        let tokens = ints.len() / per_token;
        if let Some(p) = ints.as_i32() {
            f(0, tokens, self.unscaled(p, n_axes));
            return;
        }
        // A decode step's few positions go through a small buffer: zeroing the large one
        // cost a one-token call more than its positions' check (`perf report`).
        let mut small = [0i32; SMALL_CONVERT];
        let mut large;
        let buf: &mut [i32] = if ints.len() <= SMALL_CONVERT {
            &mut small
        } else {
            large = [0i32; CONVERT];
            &mut large
        };
        let per = buf.len() / per_token; // tokens per piece (n_axes ≤ 3)
        let mut first = 0;
        while first < tokens {
            let n = ints.convert(first * per_token, &mut buf[..per * per_token]) / per_token;
            f(first, n, self.unscaled(&buf[..n * per_token], n_axes));
            first += n;
        }
    }

    /// Angles `p · ω` of `pos` (`n_axes` per token, or one plain position), unscaled.
    fn unscaled<'b>(&'b self, pos: &'b [i32], n_axes: Option<usize>) -> EngineAngles<'b> {
        let positions = match n_axes {
            None => EnginePositions::Plain(pos),
            Some(n_axes) => EnginePositions::Axes {
                pos,
                n_axes,
                axis: &self.axis[..self.rotary_dim / 2],
            },
        };
        self.freq(positions, 1.0, 1.0)
    }

    /// Elements of the buffer [`Rope::table`] needs for `tokens` tokens:
    /// `2 · tokens · rotary_dim/2` (cosines, then sines).
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(128, 1e4, Layout::RotateHalf).rotary_dim(64)).unwrap();
    /// assert_eq!(rope.table_len(10), 640);
    /// ```
    pub fn table_len(&self, tokens: usize) -> usize {
        tokens.saturating_mul(self.rotary_dim)
    }

    /// Computes the cos/sin of `positions` once into `buf` (at least
    /// [`Rope::table_len`]`(tokens)` elements; the rest is left alone) and returns them as a
    /// [`Table`] that every entry point of this rope takes in place of the positions: the
    /// angles-once path of a forward pass (compute at the first layer, rotate Q and K of every
    /// layer from it). Rotating from the table is bitwise rotating from the positions, on
    /// every backend, in every layout, rounding mode and dtype; the attention factor is
    /// applied by each call (so `apply`, `apply_inverse` and `shift` all take the same table).
    ///
    /// Place `buf` on a 64-byte boundary (as ggml's and PyTorch's allocators place tensors):
    /// a call with the default rounding and no attention factor then reads each token's row
    /// where it lies, where otherwise it copies the row first.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(64, 5e5, Layout::RotateHalf)).unwrap();
    /// let positions: Vec<usize> = (100..132).collect();
    /// let mut buf = vec![0f32; rope.table_len(positions.len())];
    /// let table = rope.table(&positions, &mut buf).unwrap();
    /// let (mut q, mut k) = (vec![0.5f32; 32 * 8 * 64], vec![0.5f32; 32 * 2 * 64]);
    /// for _layer in 0..2 {
    ///     rope.apply_qk(&mut q, 8, &mut k, 2, table).unwrap();
    /// }
    /// ```
    pub fn table<'p, 'b>(
        &self,
        positions: impl Positions<'p>,
        buf: &'b mut [f32],
    ) -> Result<Table<'b>, Error> {
        let ints = positions.ints();
        ints.check("positions", self.position_limit())?;
        let tokens = ints.len();
        let (cos, sin) = self.split_table(buf, tokens)?;
        let half = self.rotary_dim / 2;
        self.for_positions(ints, None, |first, n, angles| {
            let rows = first * half..(first + n) * half;
            self.fill_table(angles, &mut cos[rows.clone()], &mut sin[rows]);
        });
        Ok(Table::from_parts(cos, sin, tokens))
    }

    /// [`Rope::table`] for multi-axis positions (M-RoPE, 2-D vision), as
    /// [`Rope::apply_axes`] takes them.
    ///
    /// ```
    /// use posenc::{Axes, Layout, Rope, RopeConfig};
    /// let cfg = RopeConfig::new(16, 1e4, Layout::RotateHalf).axes(Axes::MRope { sections: [2, 3, 3] });
    /// let rope = Rope::new(&cfg).unwrap();
    /// let pos = [[3u32, 1, 2], [4, 1, 2]];
    /// let mut buf = [0f32; 32];
    /// let table = rope.table_axes(&pos, &mut buf).unwrap();
    /// let (mut a, mut b) = (vec![0.5f32; 32], vec![0.5f32; 32]);
    /// rope.apply_axes(&mut a, 1, &pos).unwrap();
    /// rope.apply(&mut b, 1, table).unwrap();
    /// assert_eq!(a, b);
    /// ```
    pub fn table_axes<'b, P: Position, const A: usize>(
        &self,
        positions: &[[P; A]],
        buf: &'b mut [f32],
    ) -> Result<Table<'b>, Error> {
        let n_axes = self.check_axes(A)?;
        let flat = P::ints(positions.as_flattened());
        flat.check("positions", self.position_limit())?;
        let tokens = positions.len();
        let (cos, sin) = self.split_table(buf, tokens)?;
        let half = self.rotary_dim / 2;
        self.for_positions(flat, Some(n_axes), |first, n, angles| {
            let rows = first * half..(first + n) * half;
            self.fill_table(angles, &mut cos[rows.clone()], &mut sin[rows]);
        });
        Ok(Table::from_parts(cos, sin, tokens))
    }

    /// The cos and sin halves of a table buffer for `tokens` tokens.
    fn split_table<'b>(
        &self,
        buf: &'b mut [f32],
        tokens: usize,
    ) -> Result<(&'b mut [f32], &'b mut [f32]), Error> {
        let n = tokens
            .checked_mul(self.rotary_dim / 2)
            .ok_or(Error::ShapeOverflow)?;
        if buf.len() / 2 < n {
            return Err(Error::LengthMismatch {
                what: "buf (at least)",
                expected: 2 * n,
                actual: buf.len(),
                formula: Formula::three(
                    &"2 × tokens × rotary_dim/2",
                    [2, tokens, self.rotary_dim / 2],
                ),
            });
        }
        let (cos, rest) = buf.split_at_mut(n);
        Ok((cos, &mut rest[..n]))
    }

    /// Writes the cos/sin `angles` gives into `cos`, `sin` (whole rows).
    fn fill_table(&self, angles: EngineAngles<'_>, cos: &mut [f32], sin: &mut [f32]) {
        let half = self.rotary_dim / 2;
        dispatch(
            self.backend,
            CosSinTable {
                angles,
                half,
                cos,
                sin,
            },
        );
    }

    /// Writes the cos/sin tables for `positions`: `tokens × rotary_dim/2` each, attention
    /// factor included, the exact-angle values [`Rounding::Once`] uses: tables to hand to
    /// another framework. (For posenc's own calls, [`Rope::table`] is the angles-once path.)
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(4, 10_000.0, Layout::RotateHalf)).unwrap();
    /// let (mut cos, mut sin) = ([0f32; 4], [0f32; 4]);
    /// rope.fill_cos_sin(&[0, 1], &mut cos, &mut sin).unwrap();
    /// assert_eq!(&cos[..2], &[1.0, 1.0]);
    /// assert!((sin[2] - 1f32.sin()).abs() < 1e-7);
    /// ```
    pub fn fill_cos_sin<'p>(
        &self,
        positions: impl Positions<'p>,
        cos: &mut [f32],
        sin: &mut [f32],
    ) -> Result<(), Error> {
        let ints = positions.ints();
        let half = self.rotary_dim / 2;
        check_table("cos", cos.len(), ints.len(), self.rotary_dim)?;
        check_table("sin", sin.len(), ints.len(), self.rotary_dim)?;
        ints.check("positions", self.position_limit())?;
        let m = self.attention_factor;
        // `.exact()`: exact angles whatever the rounding mode (the contract's values).
        self.for_positions(ints, None, |first, n, angles| {
            let rows = first * half..(first + n) * half;
            let angles = angles.scaled(m, m).exact();
            self.fill_table(angles, &mut cos[rows.clone()], &mut sin[rows]);
        });
        Ok(())
    }
}

/// Positions converted to i32 per engine call when the caller's are another type: a stack
/// buffer, so nothing is allocated (a whole number of 1-, 2- and 3-axis rows).
const CONVERT: usize = 384;
/// Positions converted at once for a call with this many or fewer (decode steps); like
/// `CONVERT`, a whole number of 1-, 2- and 3-axis rows.
const SMALL_CONVERT: usize = 48;

impl Rope {
    /// The checks of [`Rope::apply_qk`] (and its parallel form): `q` then `k`, a length
    /// error about `k` named so. Returns the row lengths `(q_row, k_row)`.
    pub(crate) fn check_qk(
        &self,
        q_len: usize,
        n_q_heads: usize,
        k_len: usize,
        n_kv_heads: usize,
        tokens: usize,
    ) -> Result<(usize, usize), Error> {
        check_qk(self.head_dim, q_len, n_q_heads, k_len, n_kv_heads, tokens)
    }
}
