//! Rotary position embedding: configuration, validation and the public entry points.

use crate::arch::{self, Angles, Backend, Job, Positions, Span, Target};
use crate::axes::Axes;
use crate::element::Element;
use crate::error::Error;
use crate::freq;
use crate::view::{self, MAX_VIEWS, View};
use core::fmt;

/// The largest `rotary_dim` a [`Rope`] supports: its frequencies live inline (no heap), in
/// `MAX_ROTARY_DIM / 2` f32 slots. 512 covers every released RoPE model (the largest rotary
/// dims in use are 256). `head_dim` itself has no limit.
///
/// ```
/// use posenc::{Error, Layout, Rope, RopeConfig, MAX_ROTARY_DIM};
/// let too_wide = RopeConfig::new(2 * MAX_ROTARY_DIM, 1e4, Layout::RotateHalf);
/// assert!(matches!(Rope::new(&too_wide), Err(Error::RotaryDimTooLarge { .. })));
/// ```
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
/// Every variant is implemented. Each reproduces HuggingFace transformers 5.x
/// (`modeling_rope_utils.py`) in HF's own mix of f32 tensor and f64 Python arithmetic, so
/// [`Rope::inv_freq`] equals HF's f32 `inv_freq` buffer and [`Rope::attention_factor`] equals
/// HF's `attention_scaling` rounded to f32. `d` below is the rotary dim, `b` the base,
/// `ω_j = 1 / f32(b^(f32(2j)/f32(d)))` the unscaled frequencies.
///
/// The one deliberate difference: posenc's `b^e` is correctly rounded to f32, while torch's CPU
/// pow (SLEEF, ≤ 1 ulp) rounds the other way when the exact power lies within a few hundredths
/// of an ulp of a rounding midpoint. Such a pair then differs from HF's buffer by 1 ulp (2 after
/// LongRoPE's extra operations); on the golden vectors that is 1–2 pairs of 32–64 in 7 of the 13
/// scaled cases, every other value is bit for bit. HF's own buffer is not portable at those
/// pairs either: which pow torch uses depends on the CPU's vector width and the pair's index.
///
/// Parameters are validated by [`Rope::new`]: factors, divisors and bases must be finite and
/// positive ([`Error::InvalidParameter`]), counts such as `original_max_positions` non-zero
/// (the same error, value 0), per-pair lists must have `d/2` entries
/// ([`Error::LengthMismatch`]), and relations between parameters hold
/// ([`Error::ParameterOutOfRange`]). Whatever the input, `Rope::new` does not panic, and a
/// parameter set whose frequencies or attention factor would overflow or be NaN is refused
/// (`InvalidParameter` with `what = "inv_freq"`, `"scaled_base"` or `"attention_factor"`).
///
/// Two schemes depend on the running sequence, and take that as an explicit input instead of
/// guessing it: [`Scaling::DynamicNtk`] (`seq_len`) and [`LongRope`] (`use_long`). Peers decide
/// differently (HF per forward call from the largest position, vLLM once from the maximum model
/// length, llama.cpp from the context size), and keys already in a KV cache were rotated with
/// the frequencies of the moment: only the caller knows when it rebuilds its cache, so the
/// caller chooses, and builds a new [`Rope`] when it changes its mind.
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
    /// No scaling (the default): `ω_j`.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Scaling};
    /// let rope = Rope::new(&RopeConfig::new(4, 10_000.0, Layout::RotateHalf).scaling(Scaling::None)).unwrap();
    /// assert_eq!((rope.inv_freq(), rope.attention_factor()), (&[1.0, 0.01][..], 1.0));
    /// ```
    #[default]
    None,
    /// Position interpolation (HF `linear`): `ω'_j = f32(ω_j / factor)`.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Scaling};
    /// let cfg = RopeConfig::new(4, 10_000.0, Layout::RotateHalf).scaling(Scaling::Linear { factor: 2.0 });
    /// assert_eq!(Rope::new(&cfg).unwrap().inv_freq(), &[0.5, 0.005]);
    /// ```
    Linear {
        /// `factor` (> 0).
        factor: f32,
    },
    /// Fixed NTK-aware base change: `b' = f32(b · factor^(d/(d−2)))` (f64 arithmetic, as the
    /// Python float of HF's former `ntk` type), then the default frequencies of `b'`. For
    /// `d = 2` the only frequency is `b'^0 = 1` for any base, so it is returned unscaled.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Scaling};
    /// // d = 4: b' = 10000 · 4^2 = 160000, so ω_1 = 1/sqrt(160000) = 1/400.
    /// let cfg = RopeConfig::new(4, 10_000.0, Layout::RotateHalf).scaling(Scaling::Ntk { factor: 4.0 });
    /// assert_eq!(Rope::new(&cfg).unwrap().inv_freq(), &[1.0, 1.0 / 400.0]);
    /// ```
    Ntk {
        /// `factor` (> 0).
        factor: f32,
    },
    /// HF `dynamic` NTK, for an explicit sequence length `L = seq_len`.
    ///
    /// `L ≤ max_positions`: the unscaled frequencies. Above: the base becomes
    /// `b' = b · (factor·L/max_positions − (factor − 1))^(d/(d−2))`, computed in f32 in the
    /// order of HF's forward (which passes `L = max(position) + 1` as a tensor), then the
    /// default frequencies of `b'`. HF recomputes whenever a longer sequence arrives; vLLM
    /// fixes `L = factor · max_positions` once. Keys already cached keep the frequencies they
    /// were rotated with, so the caller decides when to rebuild: pass the `seq_len` it wants.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Scaling};
    /// let at = |seq_len| {
    ///     let s = Scaling::DynamicNtk { factor: 2.0, max_positions: 2048, seq_len };
    ///     Rope::new(&RopeConfig::new(128, 10_000.0, Layout::RotateHalf).scaling(s)).unwrap()
    /// };
    /// let plain = Rope::new(&RopeConfig::new(128, 10_000.0, Layout::RotateHalf)).unwrap();
    /// assert_eq!(at(2048).inv_freq(), plain.inv_freq()); // within the trained length
    /// assert!(at(4096).inv_freq()[63] < plain.inv_freq()[63]); // longer: larger base
    /// ```
    DynamicNtk {
        /// `factor` (> 0).
        factor: f32,
        /// `max_position_embeddings` (> 0).
        max_positions: u32,
        /// The sequence length the frequencies are computed for.
        seq_len: u32,
    },
    /// YaRN (HF `yarn`): see [`Yarn`].
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Scaling, Yarn};
    /// // Qwen2.5: factor 4 over an original 32768 positions, theta 1e6.
    /// let cfg = RopeConfig::new(128, 1e6, Layout::RotateHalf)
    ///     .scaling(Scaling::Yarn(Yarn::new(4.0, 32_768)));
    /// let rope = Rope::new(&cfg).unwrap();
    /// assert_eq!(rope.inv_freq()[0], 1.0); // fast pairs extrapolate (unchanged)
    /// assert!((rope.attention_factor() - 1.1386294).abs() < 1e-6); // 0.1·ln 4 + 1
    /// ```
    Yarn(Yarn),
    /// Llama 3.1 frequency smoothing (HF `llama3`): with `λ_j = 2π/ω_j` and `L0 =
    /// original_max_positions`, pairs with `λ_j < L0/high_freq_factor` keep `ω_j`, pairs with
    /// `λ_j > L0/low_freq_factor` get `ω_j/factor`, and those between are interpolated with
    /// `σ = (L0/λ_j − low_freq_factor)/(high_freq_factor − low_freq_factor)`:
    /// `(1 − σ)·ω_j/factor + σ·ω_j`. Attention factor 1.
    ///
    /// `low_freq_factor > high_freq_factor` is refused. `low_freq_factor == high_freq_factor`
    /// is a hard cutoff at `L0/low_freq_factor`: HF would compute σ = 0/0 (NaN) for a
    /// wavelength exactly on the bound; posenc uses σ = 0 there, as vLLM does.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Scaling};
    /// // Llama 3.1.
    /// let cfg = RopeConfig::new(128, 500_000.0, Layout::RotateHalf).scaling(Scaling::Llama3 {
    ///     factor: 8.0, low_freq_factor: 1.0, high_freq_factor: 4.0, original_max_positions: 8192,
    /// });
    /// let (scaled, plain) = (Rope::new(&cfg).unwrap(), Rope::new(&cfg.scaling(Scaling::None)).unwrap());
    /// assert_eq!(scaled.inv_freq()[0], plain.inv_freq()[0]); // short wavelength: kept
    /// assert_eq!(scaled.inv_freq()[63], plain.inv_freq()[63] / 8.0); // long wavelength: / factor
    /// ```
    Llama3 {
        /// `factor` (> 0).
        factor: f32,
        /// `low_freq_factor` (> 0, ≤ `high_freq_factor`).
        low_freq_factor: f32,
        /// `high_freq_factor` (> 0).
        high_freq_factor: f32,
        /// `original_max_position_embeddings` (> 0).
        original_max_positions: u32,
    },
    /// LongRoPE (HF `longrope`; Phi-3/3.5/4): see [`LongRope`].
    ///
    /// ```
    /// use posenc::{Layout, LongRope, Rope, RopeConfig, Scaling};
    /// let (short, long) = ([1.0f32, 1.0], [2.0f32, 4.0]);
    /// let lr = LongRope {
    ///     short_factor: &short, long_factor: &long,
    ///     original_max_positions: 4096, max_positions: 131_072,
    ///     use_long: true, attention_factor: None,
    /// };
    /// let rope = Rope::new(&RopeConfig::new(4, 10_000.0, Layout::RotateHalf).scaling(Scaling::LongRope(lr))).unwrap();
    /// assert_eq!(rope.inv_freq(), &[0.5, 0.0025]); // 1 / (f_j · b^(2j/d))
    /// // sqrt(1 + ln(131072/4096) / ln 4096)
    /// assert!((rope.attention_factor() - 1.1902381).abs() < 1e-6);
    /// ```
    LongRope(LongRope<'a>),
    /// Per-pair frequency divisors, ggml's `rope_freqs` tensor (how llama.cpp stores llama3
    /// and LongRoPE scaling in GGUF files): `ω'_j = f32(ω_j / f_j)`, `rotary_dim / 2` finite
    /// positive values. Attention factor 1.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Scaling};
    /// let f = [1.0f32, 2.0];
    /// let cfg = RopeConfig::new(4, 10_000.0, Layout::RotateHalf).scaling(Scaling::FreqFactors(&f));
    /// assert_eq!(Rope::new(&cfg).unwrap().inv_freq(), &[1.0, 0.005]);
    /// ```
    FreqFactors(&'a [f32]),
    /// Gemma's proportional RoPE (HF `proportional`): of the `d/2` pairs, the first
    /// `k = floor(partial_rotary_factor · d / 2)` get the default frequencies *of the full `d`*
    /// (`ω_j = b^(−2j/d)`, exponent over the whole rotary dim), the remaining pairs `ω = 0`,
    /// i.e. they pass through unrotated (cos 0 = 1, sin 0 = 0 exactly); then all are divided by
    /// `factor`. This is not ordinary partial rotary (`rotary_dim < head_dim`), which spreads
    /// the exponent over the rotated channels only and pairs `(i, i + rotary_dim/2)`. To match
    /// Gemma, keep `rotary_dim = head_dim` (the default) with [`Layout::RotateHalf`].
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Scaling};
    /// let cfg = RopeConfig::new(8, 10_000.0, Layout::RotateHalf)
    ///     .scaling(Scaling::Proportional { partial_rotary_factor: 0.5, factor: 1.0 });
    /// assert_eq!(Rope::new(&cfg).unwrap().inv_freq(), &[1.0, 0.1, 0.0, 0.0]);
    /// ```
    Proportional {
        /// `partial_rotary_factor`, in `[0, 1]`.
        partial_rotary_factor: f32,
        /// `factor` (> 0; HF's default is 1).
        factor: f32,
    },
}

/// YaRN parameters (HF `rope_type = "yarn"`), for [`Scaling::Yarn`].
///
/// With `s = factor`, `L0 = original_max_positions`, `d` the rotary dim and `b` the base:
/// * correction dims (f64, as HF's Python floats): `c(n) = d·ln(L0/(2πn)) / (2 ln b)`,
///   `lo = max(floor(c(beta_fast)), 0)`, `hi = min(ceil(c(beta_slow)), d − 1)` (without
///   floor/ceil when `truncate` is false, as gpt-oss); if `hi == lo`, `hi += 0.001` (HF);
/// * ramp (f32): `γ_j = clamp((j − lo)/(hi − lo), 0, 1)`, extrapolation weight `e_j = 1 − γ_j`;
/// * frequencies (f32, HF's order): `ω'_j = f32(1/(s·q_j))·(1 − e_j) + f32(1/q_j)·e_j`, with
///   `q_j = f32(b^(2j/d))`: fast pairs keep `ω_j`, slow pairs get `ω_j/s`;
/// * attention factor (f64, then f32): `attention_factor` if given; else if `mscale` and
///   `mscale_all_dim` are both given and non-zero, `g(s, mscale)/g(s, mscale_all_dim)`; else
///   `g(s, 1)`, where `g(s, μ) = 1` for `s ≤ 1`, else `0.1·μ·ln s + 1`. A zero `mscale` counts
///   as absent, as in HF (Python truthiness).
///
/// `factor` is used as given. (HF 5.x uses it too; only a missing `factor` falls back to
/// `max_position_embeddings / original_max_position_embeddings`, which the caller computes.)
///
/// Refused: non-finite or non-positive `factor`, `beta_fast`, `beta_slow` or explicit
/// `attention_factor`; non-finite `mscale`/`mscale_all_dim`; `original_max_positions == 0`;
/// `beta_slow > beta_fast` (the ramp would run backwards: HF computes it, but no model uses
/// it); base 1 (`ln b = 0`, where HF raises). HF maps a missing or zero `beta_fast`/`beta_slow`
/// to 32/1; a config reader should do the same before filling this struct.
///
/// ```
/// use posenc::{Layout, Rope, RopeConfig, Scaling, Yarn};
/// // DeepSeek-V3: mscale == mscale_all_dim, so the rotation's magnitude is exactly 1.
/// let y = Yarn { mscale: Some(1.0), mscale_all_dim: Some(1.0), ..Yarn::new(40.0, 4096) };
/// let rope = Rope::new(&RopeConfig::new(64, 10_000.0, Layout::Interleaved).scaling(Scaling::Yarn(y))).unwrap();
/// assert_eq!(rope.attention_factor(), 1.0);
/// // gpt-oss: no truncation of the correction range.
/// let y = Yarn { truncate: false, ..Yarn::new(32.0, 4096) };
/// let rope = Rope::new(&RopeConfig::new(64, 150_000.0, Layout::RotateHalf).scaling(Scaling::Yarn(y))).unwrap();
/// assert!((rope.attention_factor() - 1.3465736).abs() < 1e-6);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Yarn {
    /// `factor` (> 0).
    pub factor: f32,
    /// `original_max_position_embeddings` (> 0).
    pub original_max_positions: u32,
    /// `beta_fast` (default 32; > 0, ≥ `beta_slow`).
    pub beta_fast: f32,
    /// `beta_slow` (default 1; > 0).
    pub beta_slow: f32,
    /// `mscale`.
    pub mscale: Option<f32>,
    /// `mscale_all_dim`.
    pub mscale_all_dim: Option<f32>,
    /// Explicit `attention_factor` (> 0); overrides the mscale rules.
    pub attention_factor: Option<f32>,
    /// Floor/ceil the correction range (HF's default true; false for gpt-oss).
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

/// LongRoPE parameters (HF `rope_type = "longrope"`), for [`Scaling::LongRope`].
///
/// `ω'_j = 1 / f32(f_j · q_j)` (f32, HF's order) with `q_j = f32(b^(2j/d))` and `f` the
/// `long_factor` list if `use_long`, else `short_factor`. Attention factor: `attention_factor`
/// if given; else with `s = max_positions / original_max_positions` (f64): `1` if `s ≤ 1`,
/// else `sqrt(1 + ln s / ln original_max_positions)`. (HF 5.x takes `s` from a `factor` entry
/// of the config when one is present; for such a config pass the resulting
/// `attention_factor` explicitly.)
///
/// `use_long` is an explicit input because peers choose differently: HF switches to the long
/// factors per call when `max(position) + 1 > original_max_positions` (and back), vLLM decides
/// once from `max_model_len`, llama.cpp from the context size. Keys already in a KV cache were
/// rotated with one set; switching without re-rotating them corrupts attention, so only the
/// caller, which owns the cache, can decide.
///
/// Both lists must have `rotary_dim / 2` finite positive entries, whichever is used
/// ([`Error::LengthMismatch`] / [`Error::InvalidParameter`]); `original_max_positions` must be
/// non-zero, and an explicit `attention_factor` finite and positive.
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
    /// `original_max_position_embeddings` (> 0).
    pub original_max_positions: u32,
    /// `max_position_embeddings`.
    pub max_positions: u32,
    /// Use the long factors (explicit: peers decide differently, and cached keys depend on it).
    pub use_long: bool,
    /// Explicit `attention_factor` (> 0).
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

/// How a rotation rounds in f16/bf16 (and whether f32 uses fused multiply-adds).
///
/// The default, [`Rounding::Once`], is posenc's contract: exact angles, f32 arithmetic, one
/// rounding on store. The `Hf*` modes reproduce HuggingFace's eager arithmetic instead, so a
/// runtime can match HF outputs bit for bit where HF is the reference: angles are the f32
/// product `f32(p)·ω` (as `position_ids.float() @ inv_freq` forms them), cos/sin are rounded
/// to the storage type, and the rotation is unfused.
///
/// ```
/// use posenc::{Layout, Rope, RopeConfig, Rounding};
/// let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf)).unwrap()
///     .with_rounding(Rounding::HfEager);
/// let mut q = vec![posenc::bf16::from_f32(0.5); 64];
/// rope.apply(&mut q, 1, &[7]).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Rounding {
    /// Exact angles, compute in f32, round once on store (the default).
    #[default]
    Once,
    /// HF eager (Llama, NeoX, Phi-3, GPT-J, …): each of `q·cos`, `rotate_half(q)·sin` and
    /// their sum is computed in f32 and rounded to the storage type (three roundings).
    HfEager,
    /// HF with upcast (Cohere): rounded cos/sin, the rotation in unfused f32, one rounding.
    HfUpcast,
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
        check_offset(config.head_dim, config.rotary_dim, config.rotary_offset)?;
        let mut inv_freq = [0.0f32; MAX_PAIRS];
        let attention_factor = freq::resolve(
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
        freq::positive("attention_factor", attention_factor)?;
        freq::check_inv_freq(inv_freq)?;
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
            inv_freq: table,
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

    /// The span of a contiguous token-major buffer of `n_heads` heads.
    fn contiguous(&self, n_heads: usize) -> Span {
        Span {
            n_heads,
            token_stride: n_heads * self.head_dim,
            head_stride: self.head_dim,
            offset: self.rotary_offset,
        }
    }

    fn job<'a>(&'a self, positions: Positions<'a>, tokens: usize, cs: f32, ss: f32) -> Job<'a> {
        let hf = self.rounding != Rounding::Once;
        Job {
            tokens,
            rotary_dim: self.rotary_dim,
            layout: self.layout,
            angles: Angles::Freq {
                inv_freq: self.inv_freq(),
                positions,
                cs,
                ss,
                f32_angle: hf,
            },
            round: self.rounding,
        }
    }

    /// Rotates `x` (`tokens × n_heads × head_dim`) in place by the angles of `positions`.
    ///
    /// Each output is `m·(a·cos θ − b·sin θ)` / `m·(b·cos θ + a·sin θ)` with `θ = p · ω` exact
    /// and `m` the attention factor; computed in f32, rounded once to `T`. On a multi-axis rope
    /// every axis takes the token's one position (text tokens).
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
        check_rows(x.len(), n_heads, self.head_dim, positions.len())?;
        let m = self.attention_factor;
        let job = self.job(Positions::Plain(positions), positions.len(), m, m);
        self.run(x, &[self.contiguous(n_heads)], &job);
        Ok(())
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
        check_rows(x.len(), n_heads, self.head_dim, positions.len())?;
        let inv = 1.0 / self.attention_factor;
        let job = self.job(Positions::Plain(positions), positions.len(), inv, -inv);
        self.run(x, &[self.contiguous(n_heads)], &job);
        Ok(())
    }

    /// Shifts keys already rotated to position `p` to `p + delta` (a KV-cache shift after
    /// dropping or inserting tokens): a pure rotation by `delta · ω`, *without* the attention
    /// factor, which the keys already carry. `shift(d1)` then `shift(d2)` equals `shift(d1 + d2)`
    /// within the rotation bound, and `shift(apply(x, p), d)` equals `apply(x, p + d)`.
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
    pub fn shift<T: Element>(
        &self,
        k: &mut [T],
        n_heads: usize,
        deltas: &[i32],
    ) -> Result<(), Error> {
        check_rows(k.len(), n_heads, self.head_dim, deltas.len())?;
        let job = self.job(Positions::Plain(deltas), deltas.len(), 1.0, 1.0);
        self.run(k, &[self.contiguous(n_heads)], &job);
        Ok(())
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
    pub fn apply_qk<T: Element>(
        &self,
        q: &mut [T],
        n_q_heads: usize,
        k: &mut [T],
        n_kv_heads: usize,
        positions: &[i32],
    ) -> Result<(), Error> {
        self.check_qk(q.len(), n_q_heads, k.len(), n_kv_heads, positions.len())?;
        let m = self.attention_factor;
        let job = self.job(Positions::Plain(positions), positions.len(), m, m);
        let (qs, ks) = ([self.contiguous(n_q_heads)], [self.contiguous(n_kv_heads)]);
        let mut targets = [Target { x: q, spans: &qs }, Target { x: k, spans: &ks }];
        arch::rope(self.backend, &mut targets, &job);
        Ok(())
    }

    /// Rotates the heads described by `views` inside one buffer (a fused QKV buffer, a
    /// head-major `[heads, tokens, head_dim]` tensor, a slice of a larger arena), computing
    /// cos/sin once per token for all of them. Every view is validated first: in bounds, and
    /// no two heads overlap (see [`View`]).
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
    /// ```
    pub fn apply_views<T: Element>(
        &self,
        x: &mut [T],
        views: &[View],
        positions: &[i32],
    ) -> Result<(), Error> {
        let mut spans = [Span {
            n_heads: 0,
            token_stride: 0,
            head_stride: 0,
            offset: 0,
        }; MAX_VIEWS];
        let n = view::validate(views, x.len(), self.head_dim, positions.len(), &mut spans)?;
        if positions.is_empty() {
            return Ok(()); // no tokens: nothing to rotate (offsets were never dereferenced)
        }
        for s in &mut spans[..n] {
            // In bounds (validated with the whole head), so this cannot overflow; checked anyway.
            s.offset = s
                .offset
                .checked_add(self.rotary_offset)
                .ok_or(Error::ShapeOverflow)?;
        }
        let m = self.attention_factor;
        let job = self.job(Positions::Plain(positions), positions.len(), m, m);
        self.run(x, &spans[..n], &job);
        Ok(())
    }

    /// Rotates `x` with several positions per token (M-RoPE `[t, h, w]`, 2-D vision
    /// `[row, col]`): pair `j` uses the axis [`Axes`] assigns it. `A` must equal
    /// `self.axes().count()`; tokens whose axes all equal `p` get exactly (bitwise) the
    /// rotation [`Rope::apply`] gives at `p`.
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
    pub fn apply_axes<T: Element, const A: usize>(
        &self,
        x: &mut [T],
        n_heads: usize,
        positions: &[[i32; A]],
    ) -> Result<(), Error> {
        let n_axes = self.axes.count();
        if A != n_axes {
            return Err(Error::LengthMismatch {
                what: "positions axes",
                expected: n_axes,
                actual: A,
            });
        }
        check_rows(x.len(), n_heads, self.head_dim, positions.len())?;
        let pos = Positions::Axes {
            pos: positions.as_flattened(),
            n_axes,
            axis: &self.axis[..self.rotary_dim / 2],
        };
        let m = self.attention_factor;
        let job = self.job(pos, positions.len(), m, m);
        self.run(x, &[self.contiguous(n_heads)], &job);
        Ok(())
    }

    fn run<T: Element>(&self, x: &mut [T], spans: &[Span], job: &Job<'_>) {
        let mut targets = [Target { x, spans }];
        arch::rope(self.backend, &mut targets, job);
    }

    /// Writes the cos/sin tables for `positions`: `tokens × rotary_dim/2` each, attention
    /// factor included, the exact-angle values [`Rounding::Once`] uses.
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
        let q_row = check_rows(q_len, n_q_heads, self.head_dim, tokens)?;
        let k_row =
            check_rows(k_len, n_kv_heads, self.head_dim, tokens).map_err(|e| rename(e, "k"))?;
        Ok((q_row, k_row))
    }
}

/// Renames the buffer an error speaks of (for calls that take two).
fn rename(e: Error, what: &'static str) -> Error {
    match e {
        Error::LengthMismatch {
            expected, actual, ..
        } => Error::LengthMismatch {
            what,
            expected,
            actual,
        },
        other => other,
    }
}

/// Validates the rotary window `offset .. offset + rotary_dim` inside a head.
fn check_offset(head_dim: usize, rotary_dim: usize, offset: usize) -> Result<(), Error> {
    match offset.checked_add(rotary_dim) {
        Some(end) if end <= head_dim => Ok(()),
        _ => Err(Error::ParameterOutOfRange {
            what: "rotary_offset",
            constraint: "must keep rotary_offset + rotary_dim within head_dim",
            value: offset as f32,
        }),
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
    if head_dim == 0 || !head_dim.is_multiple_of(2) {
        return Err(Error::InvalidHeadDim { head_dim });
    }
    if n_heads == 0 {
        return Err(Error::ZeroHeads);
    }
    let row = n_heads.checked_mul(head_dim).ok_or(Error::ShapeOverflow)?;
    if !x.len().is_multiple_of(row) {
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
    if !cos.len().is_multiple_of(tokens) {
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
    let span = [Span {
        n_heads,
        token_stride: row,
        head_stride: head_dim,
        offset: 0,
    }];
    let job = Job {
        tokens,
        rotary_dim,
        layout,
        angles: Angles::Table { cos, sin },
        round: Rounding::Once,
    };
    let mut targets = [Target { x, spans: &span }];
    arch::rope(backend, &mut targets, &job);
    Ok(())
}
