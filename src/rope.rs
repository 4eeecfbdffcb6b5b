//! Rotary position embedding: configuration, validation and the public entry points.

use crate::arch::{self, Angles, Backend};
use crate::element::Element;
use crate::error::Error;
use crate::freq;
use core::fmt;

/// The largest `rotary_dim` a [`Rope`] supports: its frequencies live inline (no heap), in
/// `MAX_ROTARY_DIM / 2` f32 slots. 512 covers every released RoPE model (the largest rotary
/// dims in use are 256). `head_dim` itself has no limit.
pub const MAX_ROTARY_DIM: usize = 512;
pub(crate) const MAX_PAIRS: usize = MAX_ROTARY_DIM / 2;

/// Which channels of a head form a rotating pair.
///
/// ```
/// use posenc::Layout;
/// // GPT-J, Meta's LLaMA checkpoints, ggml "normal": pairs (2i, 2i+1).
/// let _meta = Layout::Interleaved;
/// // GPT-NeoX, HuggingFace, ggml "neox": pairs (i, i + rotary_dim/2).
/// let _hf = Layout::RotateHalf;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Pairs `(2i, 2i + 1)`.
    Interleaved,
    /// Pairs `(i, i + rotary_dim/2)`.
    RotateHalf,
}

/// Frequency-scaling scheme, with parameters named as in HuggingFace configs.
///
/// This release implements [`Scaling::None`] and [`Scaling::Linear`]; [`Rope::new`] returns
/// [`Error::UnsupportedScaling`] for the others, which are declared so the public contract
/// is stable.
///
/// ```
/// use posenc::{Layout, Rope, RopeConfig, Scaling};
/// let cfg = RopeConfig::new(128, 10_000.0, Layout::RotateHalf)
///     .scaling(Scaling::Linear { factor: 4.0 });
/// let rope = Rope::new(&cfg).unwrap();
/// assert_eq!(rope.inv_freq()[0], 0.25);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Scaling<'a> {
    /// No scaling (the default).
    #[default]
    None,
    /// Position interpolation: `ω' = ω / factor`.
    Linear {
        /// `factor` (> 0).
        factor: f32,
    },
    /// NTK-aware base change `b' = b · factor^(d/(d−2))`.
    Ntk {
        /// `factor`.
        factor: f32,
    },
    /// HF `dynamic` NTK, for an explicit current sequence length.
    DynamicNtk {
        /// `factor`.
        factor: f32,
        /// `max_position_embeddings`.
        max_positions: u32,
        /// The sequence length the frequencies are computed for.
        seq_len: u32,
    },
    /// YaRN.
    Yarn(Yarn),
    /// Llama 3.1 frequency smoothing.
    Llama3 {
        /// `factor`.
        factor: f32,
        /// `low_freq_factor`.
        low_freq_factor: f32,
        /// `high_freq_factor`.
        high_freq_factor: f32,
        /// `original_max_position_embeddings`.
        original_max_positions: u32,
    },
    /// LongRoPE (Phi-3/3.5/4).
    LongRope(LongRope<'a>),
    /// Per-pair frequency divisors (ggml `rope_freqs`).
    FreqFactors(&'a [f32]),
}

/// YaRN parameters (HF `rope_type = "yarn"`).
///
/// ```
/// let y = posenc::Yarn::new(4.0, 32_768);
/// assert_eq!((y.beta_fast, y.beta_slow, y.truncate), (32.0, 1.0, true));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Yarn {
    /// `factor`.
    pub factor: f32,
    /// `original_max_position_embeddings`.
    pub original_max_positions: u32,
    /// `beta_fast` (default 32).
    pub beta_fast: f32,
    /// `beta_slow` (default 1).
    pub beta_slow: f32,
    /// `mscale`.
    pub mscale: Option<f32>,
    /// `mscale_all_dim`.
    pub mscale_all_dim: Option<f32>,
    /// Explicit `attention_factor`.
    pub attention_factor: Option<f32>,
    /// Floor/ceil the correction range (false for gpt-oss).
    pub truncate: bool,
}

impl Yarn {
    /// YaRN with HF's defaults: `beta_fast = 32`, `beta_slow = 1`, no mscale overrides,
    /// `truncate = true`.
    ///
    /// ```
    /// let y = posenc::Yarn::new(40.0, 4096);
    /// assert_eq!(y.mscale, None);
    /// ```
    pub fn new(factor: f32, original_max_positions: u32) -> Yarn {
        Yarn {
            factor,
            original_max_positions,
            beta_fast: 32.0,
            beta_slow: 1.0,
            mscale: None,
            mscale_all_dim: None,
            attention_factor: None,
            truncate: true,
        }
    }
}

/// LongRoPE parameters (HF `rope_type = "longrope"`).
///
/// ```
/// let short = [1.0f32; 48];
/// let long = [4.0f32; 48];
/// let lr = posenc::LongRope {
///     short_factor: &short, long_factor: &long,
///     original_max_positions: 4096, max_positions: 131_072,
///     use_long: true, attention_factor: None,
/// };
/// assert!(lr.use_long);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LongRope<'a> {
    /// `short_factor`, `rotary_dim / 2` values.
    pub short_factor: &'a [f32],
    /// `long_factor`, `rotary_dim / 2` values.
    pub long_factor: &'a [f32],
    /// `original_max_position_embeddings`.
    pub original_max_positions: u32,
    /// `max_position_embeddings`.
    pub max_positions: u32,
    /// Use the long factors (explicit: peers decide differently, and cached keys depend on it).
    pub use_long: bool,
    /// Explicit `attention_factor`.
    pub attention_factor: Option<f32>,
}

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
    /// Leading channels of each head that rotate (`≤ head_dim`, even).
    pub rotary_dim: usize,
    /// `rope_theta`.
    pub base: f32,
    /// Pairing of channels.
    pub layout: Layout,
    /// Frequency scaling.
    pub scaling: Scaling<'a>,
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
        }
    }

    /// Rotates only the first `rotary_dim` channels of each head; the rest are left
    /// bit-for-bit untouched.
    ///
    /// ```
    /// let cfg = posenc::RopeConfig::new(256, 1e4, posenc::Layout::Interleaved).rotary_dim(64);
    /// assert_eq!(cfg.rotary_dim, 64);
    /// ```
    pub fn rotary_dim(self, rotary_dim: usize) -> Self {
        RopeConfig { rotary_dim, ..self }
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
}

/// A resolved RoPE: frequencies computed once, no lifetime, no heap.
///
/// `x` arguments are token-major, `tokens × n_heads × head_dim`, contiguous; `positions` has
/// one `i32` per token (negative positions rotate backwards). cos/sin are computed once per
/// token and shared by all heads.
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
    layout: Layout,
    attention_factor: f32,
    backend: Backend,
    inv_freq: [f32; MAX_PAIRS],
}

impl fmt::Debug for Rope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rope")
            .field("head_dim", &self.head_dim)
            .field("rotary_dim", &self.rotary_dim)
            .field("layout", &self.layout)
            .field("attention_factor", &self.attention_factor)
            .field("backend", &self.backend)
            .field("inv_freq", &self.inv_freq())
            .finish()
    }
}

/// Validates `head_dim` and `rotary_dim` as a pair.
pub(crate) fn check_dims(head_dim: usize, rotary_dim: usize) -> Result<(), Error> {
    if head_dim == 0 || head_dim % 2 != 0 {
        return Err(Error::InvalidHeadDim { head_dim });
    }
    if rotary_dim == 0 || rotary_dim % 2 != 0 || rotary_dim > head_dim {
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

/// Checks `x.len() == tokens · n_heads · head_dim` and returns the row length
/// `n_heads · head_dim`.
pub(crate) fn check_rows(
    x_len: usize,
    n_heads: usize,
    head_dim: usize,
    tokens: usize,
) -> Result<usize, Error> {
    if n_heads == 0 {
        return Err(Error::ZeroHeads);
    }
    let row = n_heads.checked_mul(head_dim).ok_or(Error::ShapeOverflow)?;
    let expected = tokens.checked_mul(row).ok_or(Error::ShapeOverflow)?;
    if x_len != expected {
        return Err(Error::LengthMismatch {
            what: "x",
            expected,
            actual: x_len,
        });
    }
    Ok(row)
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
        let mut inv_freq = [0.0f32; MAX_PAIRS];
        let attention_factor = freq::resolve(
            config.base,
            config.rotary_dim,
            &config.scaling,
            &mut inv_freq,
        )?;
        Ok(Rope {
            head_dim: config.head_dim,
            rotary_dim: config.rotary_dim,
            layout: config.layout,
            attention_factor,
            backend: Backend::active(),
            inv_freq,
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
        if !backend.is_available() {
            return Err(Error::BackendUnavailable { backend });
        }
        Ok(Rope { backend, ..self })
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

    /// The channel pairing.
    ///
    /// ```
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(64, 1e4, posenc::Layout::Interleaved)).unwrap();
    /// assert_eq!(rope.layout(), posenc::Layout::Interleaved);
    /// ```
    pub fn layout(&self) -> Layout {
        self.layout
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

    fn check(&self, x_len: usize, n_heads: usize, tokens: usize) -> Result<(), Error> {
        check_rows(x_len, n_heads, self.head_dim, tokens).map(|_| ())
    }

    /// Rotates `x` (`tokens × n_heads × head_dim`) in place by the angles of `positions`.
    ///
    /// Each output is `m·(a·cos θ − b·sin θ)` / `m·(b·cos θ + a·sin θ)` with `θ = p · ω` exact
    /// and `m` the attention factor; computed in f32, rounded once to `T`.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(8, 10_000.0, Layout::Interleaved)).unwrap();
    /// let mut k = vec![half::bf16::from_f32(0.5); 2 * 3 * 8]; // 2 tokens, 3 heads
    /// rope.apply(&mut k, 3, &[7, 8]).unwrap();
    /// assert!(rope.apply(&mut k, 3, &[7]).is_err()); // positions must match tokens
    /// ```
    pub fn apply<T: Element>(
        &self,
        x: &mut [T],
        n_heads: usize,
        positions: &[i32],
    ) -> Result<(), Error> {
        self.check(x.len(), n_heads, positions.len())?;
        let m = self.attention_factor;
        self.run(x, n_heads, positions, m, m)
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
    pub fn apply_inverse<T: Element>(
        &self,
        x: &mut [T],
        n_heads: usize,
        positions: &[i32],
    ) -> Result<(), Error> {
        self.check(x.len(), n_heads, positions.len())?;
        let inv = 1.0 / self.attention_factor;
        self.run(x, n_heads, positions, inv, -inv)
    }

    fn run<T: Element>(
        &self,
        x: &mut [T],
        n_heads: usize,
        positions: &[i32],
        cos_scale: f32,
        sin_scale: f32,
    ) -> Result<(), Error> {
        let angles = Angles::Freq {
            inv_freq: self.inv_freq(),
            positions,
            cos_scale,
            sin_scale,
        };
        arch::rope(
            self.backend,
            x,
            n_heads,
            self.head_dim,
            self.rotary_dim,
            self.layout,
            angles,
        );
        Ok(())
    }

    /// Writes the cos/sin tables for `positions`: `tokens × rotary_dim/2` each, attention
    /// factor included, the exact-angle values the apply path uses.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(4, 10_000.0, Layout::RotateHalf)).unwrap();
    /// let (mut cos, mut sin) = ([0f32; 4], [0f32; 4]);
    /// rope.fill_cos_sin(&[0, 1], &mut cos, &mut sin).unwrap();
    /// assert_eq!(&cos[..2], &[1.0, 1.0]);
    /// assert!((sin[2] - 1f32.sin()).abs() < 1e-7);
    /// ```
    pub fn fill_cos_sin(
        &self,
        positions: &[i32],
        cos: &mut [f32],
        sin: &mut [f32],
    ) -> Result<(), Error> {
        let half = self.rotary_dim / 2;
        let expected = positions
            .len()
            .checked_mul(half)
            .ok_or(Error::ShapeOverflow)?;
        if cos.len() != expected {
            return Err(Error::LengthMismatch {
                what: "cos",
                expected,
                actual: cos.len(),
            });
        }
        if sin.len() != expected {
            return Err(Error::LengthMismatch {
                what: "sin",
                expected,
                actual: sin.len(),
            });
        }
        let m = self.attention_factor;
        arch::cos_sin_table(self.backend, self.inv_freq(), positions, m, m, cos, sin);
        Ok(())
    }
}

/// Applies a rotation from tables the caller already has (e.g. from another framework):
/// bit-for-bit their angles.
///
/// `tokens = x.len() / (n_heads · head_dim)`; `cos` and `sin` are `tokens × rotary_dim/2`
/// each, so the rotary dim follows from their length (even, non-zero, `≤ head_dim`); channels
/// past it are untouched. Pair `i` of a token uses `cos[t·rotary_dim/2 + i]`.
///
/// ```
/// use posenc::{apply_with_table, Layout};
/// let mut x = [1.0f32, 2.0, 3.0, 4.0]; // 1 token, 1 head, head_dim 4
/// let (cos, sin) = ([0.0f32, 1.0], [1.0f32, 0.0]); // pair 0 by +90°, pair 1 by 0°
/// apply_with_table(&mut x, 1, 4, Layout::RotateHalf, &cos, &sin).unwrap();
/// assert_eq!(x, [-3.0, 2.0, 1.0, 4.0]);
/// ```
pub fn apply_with_table<T: Element>(
    x: &mut [T],
    n_heads: usize,
    head_dim: usize,
    layout: Layout,
    cos: &[f32],
    sin: &[f32],
) -> Result<(), Error> {
    apply_with_table_on(Backend::active(), x, n_heads, head_dim, layout, cos, sin)
}

/// [`apply_with_table`] on a chosen backend.
///
/// ```
/// use posenc::{apply_with_table_on, Backend, Layout};
/// let mut x = [1.0f32, 0.0];
/// apply_with_table_on(Backend::Scalar, &mut x, 1, 2, Layout::Interleaved, &[0.0], &[1.0]).unwrap();
/// assert_eq!(x, [0.0, 1.0]);
/// ```
pub fn apply_with_table_on<T: Element>(
    backend: Backend,
    x: &mut [T],
    n_heads: usize,
    head_dim: usize,
    layout: Layout,
    cos: &[f32],
    sin: &[f32],
) -> Result<(), Error> {
    if !backend.is_available() {
        return Err(Error::BackendUnavailable { backend });
    }
    if head_dim == 0 || head_dim % 2 != 0 {
        return Err(Error::InvalidHeadDim { head_dim });
    }
    if n_heads == 0 {
        return Err(Error::ZeroHeads);
    }
    let row = n_heads.checked_mul(head_dim).ok_or(Error::ShapeOverflow)?;
    if x.len() % row != 0 {
        return Err(Error::NotWholeRows {
            what: "x",
            len: x.len(),
            row,
        });
    }
    let tokens = x.len() / row;
    if sin.len() != cos.len() {
        return Err(Error::LengthMismatch {
            what: "sin",
            expected: cos.len(),
            actual: sin.len(),
        });
    }
    if tokens == 0 {
        if !cos.is_empty() {
            return Err(Error::LengthMismatch {
                what: "cos",
                expected: 0,
                actual: cos.len(),
            });
        }
        return Ok(());
    }
    if cos.len() % tokens != 0 {
        return Err(Error::NotWholeRows {
            what: "cos",
            len: cos.len(),
            row: tokens,
        });
    }
    let half = cos.len() / tokens;
    let rotary_dim = half.checked_mul(2).ok_or(Error::ShapeOverflow)?;
    if rotary_dim == 0 || rotary_dim > head_dim {
        return Err(Error::InvalidRotaryDim {
            rotary_dim,
            head_dim,
        });
    }
    arch::rope(
        backend,
        x,
        n_heads,
        head_dim,
        rotary_dim,
        layout,
        Angles::Table { cos, sin },
    );
    Ok(())
}
