//! Frequency scaling: the [`Scaling`] schemes checkpoints ship with and the RoPE frequencies
//! (`inv_freq`) and attention factor each one defines.
//!
//! Every framework keeps `inv_freq` in f32 and computes it in f32 in this order:
//! `e_j = f32(2j) / f32(d)`, `q_j = f32(b^e_j)` (pow correctly rounded to f32), `ω_j = 1 / q_j`.
//! This reproduces HuggingFace's buffer bit-for-bit; the "exact" `b^(−2j/d)` does not.
//!
//! Scaled schemes then apply their operations in the precision and order of HuggingFace
//! transformers 5.x (`modeling_rope_utils.py`, `_compute_*_parameters`), which is not uniform:
//! tensor operations are f32 (each rounded once, no fused multiply-add), while scalars derived
//! from the config (YaRN's correction range, every attention factor, llama3's wavelength bounds)
//! are Python floats, i.e. f64, and are rounded to f32 only where they meet a tensor. Two torch
//! details matter for the last bit:
//!
//! * `scalar / tensor` is `tensor.reciprocal() * scalar` (`Tensor.__rtruediv__`): two roundings,
//!   so llama3's `2π / ω` is `f32(f32(1/ω) · f32(2π))`, not `f32(2π / ω)`.
//! * A Python scalar combined with an f32 tensor is first rounded to f32.
//!
//! posenc's `q_j` is the correctly rounded `b^e`; torch's CPU pow is SLEEF's `powf_u10` in the
//! vector body (and libm's `powf` in the tail), which rounds the other way when `b^e` lies within
//! a few hundredths of an ulp of a midpoint. That is the only source of difference from HF's
//! buffer on the golden vectors (1 ulp at such a pair, 2 after LongRoPE's `1/(f·q)`); emulating
//! SLEEF would tie the result to torch's vector width instead of to the formula.
//!
//! Each function below names the f32/f64 split it reproduces. Degenerate parameters are refused
//! with a typed error before anything is computed, and every result (frequencies and attention
//! factor) is checked finite at the end, so no input makes `Rope::new` panic or return NaN.

use crate::error::{Error, Formula};
use core::cmp::Ordering;

/// The largest `rotary_dim` a [`Rope`](crate::Rope) supports: its frequencies live inline (no heap), in
/// `MAX_ROTARY_DIM / 2` f32 slots. 512 covers every released RoPE model (the largest rotary
/// dims in use are 256). `head_dim` itself has no limit.
///
/// ```
/// use posenc::{Error, Layout, Rope, RopeConfig, MAX_ROTARY_DIM};
/// let too_wide = RopeConfig::new(2 * MAX_ROTARY_DIM, 1e4, Layout::RotateHalf);
/// assert!(matches!(Rope::new(&too_wide), Err(Error::RotaryDimTooLarge { .. })));
/// ```
pub const MAX_ROTARY_DIM: usize = 512;
/// Frequency slots a [`crate::Rope`] keeps inline: one per pair of the widest rotary dim.
/// (A literal with a compile-time check rather than `MAX_ROTARY_DIM / 2`, whose mutants
/// would only change an array's capacity, which no result can show.)
pub(crate) const MAX_PAIRS: usize = 256;
const _: () = assert!(2 * MAX_PAIRS == MAX_ROTARY_DIM);

/// Frequency-scaling scheme, with parameters named as in HuggingFace configs.
///
/// Every variant is implemented. Each reproduces HuggingFace transformers 5.x
/// (`modeling_rope_utils.py`) in HF's own mix of f32 tensor and f64 Python arithmetic, so
/// [`Rope::inv_freq`](crate::Rope::inv_freq) equals HF's f32 `inv_freq` buffer and [`Rope::attention_factor`](crate::Rope::attention_factor) equals
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
/// Parameters are validated by [`Rope::new`](crate::Rope::new): factors, divisors and bases must be finite and
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
/// caller chooses, and builds a new [`Rope`](crate::Rope) when it changes its mind.
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
    /// Gemma, keep `rotary_dim = head_dim` (the default) with [`Layout::RotateHalf`](crate::Layout::RotateHalf).
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

/// `f32(b^e)`: the f64 pow of two f32 values (accurate to < 1 ulp of f64), rounded to f32.
#[inline]
pub(crate) fn pow_f32(b: f32, e: f32) -> f32 {
    libm::pow(b as f64, e as f64) as f32
}

/// Checks that `v` is finite and strictly positive.
pub(crate) fn positive(what: &'static str, v: f32) -> Result<f32, Error> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(Error::InvalidParameter { what, value: v })
    }
}

/// Checks that a count is non-zero (reported as an [`Error::InvalidParameter`] of value 0).
fn nonzero(what: &'static str, v: u32) -> Result<u32, Error> {
    if v == 0 {
        Err(Error::InvalidParameter { what, value: 0.0 })
    } else {
        Ok(v)
    }
}

/// Checks that a per-pair factor list has `rotary_dim / 2` entries, all finite and positive.
fn factor_list(what: &'static str, factors: &[f32], pairs: usize) -> Result<(), Error> {
    if factors.len() != pairs {
        return Err(Error::LengthMismatch {
            what,
            expected: pairs,
            actual: factors.len(),
            formula: Formula::one(&"rotary_dim/2", pairs),
        });
    }
    for &f in factors {
        positive(what, f)?;
    }
    Ok(())
}

/// The exponent `f32(2j) / f32(d)` of pair `j` (torch: `arange(0, d, 2).float() / d`).
#[inline]
fn exponent(j: usize, rotary_dim: usize) -> f32 {
    (2 * j) as f32 / rotary_dim as f32
}

/// The default frequencies `1 / f32(b^(f32(2j)/f32(d)))` for `j < d/2`, into `out[..d/2]`.
pub(crate) fn default_inv_freq(base: f32, rotary_dim: usize, out: &mut [f32; MAX_PAIRS]) {
    for (j, w) in out.iter_mut().take(rotary_dim / 2).enumerate() {
        *w = 1.0 / pow_f32(base, exponent(j, rotary_dim));
    }
}

/// Resolves the frequencies and attention factor of a scheme.
///
/// `out[..rotary_dim/2]` receives `inv_freq`; the return value is the attention factor.
/// `rotary_dim` is even, non-zero and at most [`crate::MAX_ROTARY_DIM`] (checked by the caller;
/// nothing here indexes past `out` even if it were not).
pub(crate) fn resolve(
    base: f32,
    rotary_dim: usize,
    scaling: &Scaling<'_>,
    out: &mut [f32; MAX_PAIRS],
) -> Result<f32, Error> {
    positive("base", base)?;
    let pairs = (rotary_dim / 2).min(MAX_PAIRS);
    let attention_factor = match *scaling {
        Scaling::None => {
            default_inv_freq(base, rotary_dim, out);
            1.0
        }
        Scaling::Linear { factor } => {
            let s = positive("factor", factor)?;
            default_inv_freq(base, rotary_dim, out);
            for w in out.iter_mut().take(pairs) {
                *w /= s;
            }
            1.0
        }
        Scaling::Ntk { factor } => {
            ntk(base, rotary_dim, factor, out)?;
            1.0
        }
        Scaling::DynamicNtk {
            factor,
            max_positions,
            seq_len,
        } => {
            dynamic_ntk(base, rotary_dim, factor, max_positions, seq_len, out)?;
            1.0
        }
        Scaling::Yarn(ref y) => yarn(base, rotary_dim, y, out)?,
        Scaling::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_positions,
        } => {
            llama3(
                base,
                rotary_dim,
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_positions,
                out,
            )?;
            1.0
        }
        Scaling::LongRope(ref lr) => long_rope(base, rotary_dim, lr, out)?,
        Scaling::FreqFactors(factors) => {
            factor_list("freq_factors", factors, pairs)?;
            default_inv_freq(base, rotary_dim, out);
            for (w, &f) in out.iter_mut().zip(factors) {
                *w /= f;
            }
            1.0
        }
        Scaling::Proportional {
            partial_rotary_factor,
            factor,
        } => {
            proportional(base, rotary_dim, partial_rotary_factor, factor, out)?;
            1.0
        }
    };
    // A frequency that over- or underflowed (e.g. a subnormal base) is refused, not used.
    check_inv_freq(&out[..pairs])?;
    // `apply_inverse` divides by it, and a zero, negative or non-finite magnitude is never
    // meant: refuse it whatever produced it.
    positive("attention_factor", attention_factor)
}

/// The largest frequency posenc accepts: 2^16 rad per position. Real checkpoints never
/// exceed 1 (`ω_0 = 1` is the fastest pair). The accuracy contract's domain is the angle,
/// `|p·ω| ≤ 2^26` (`trig::MAX_ANGLE`), checked per call on the positions; this bound keeps
/// at least the positions `|p| ≤ 1024` usable with every accepted frequency.
pub(crate) const MAX_INV_FREQ: f32 = 65_536.0;

/// Refuses frequencies that are negative, non-finite or above [`MAX_INV_FREQ`].
pub(crate) fn check_inv_freq(inv_freq: &[f32]) -> Result<(), Error> {
    for &w in inv_freq {
        if !(w.is_finite() && w >= 0.0) {
            return Err(Error::InvalidParameter {
                what: "inv_freq",
                value: w,
            });
        }
        if w > MAX_INV_FREQ {
            return Err(Error::ParameterOutOfRange {
                what: "inv_freq",
                constraint: "must not exceed 65536 (2^16) rad per position",
                value: w,
            });
        }
    }
    Ok(())
}

/// Fixed NTK-aware scaling: `b' = b · s^(d/(d−2))` in f64 (a Python float in the reference,
/// rounded to f32 where it meets the exponent tensor), then the default frequencies of `b'`.
///
/// For `d = 2` the exponent `d/(d−2)` is undefined (HF raises `ZeroDivisionError`), but the only
/// frequency is `b'^0 = 1` for every base, so the unscaled frequencies are returned.
fn ntk(base: f32, d: usize, factor: f32, out: &mut [f32; MAX_PAIRS]) -> Result<(), Error> {
    let s = positive("factor", factor)?;
    if d <= 2 {
        default_inv_freq(base, d, out);
        return Ok(());
    }
    let exp = d as f64 / (d - 2) as f64;
    let scaled = (base as f64 * libm::pow(s as f64, exp)) as f32;
    positive("scaled_base", scaled)?;
    default_inv_freq(scaled, d, out);
    Ok(())
}

/// HF `dynamic` NTK for an explicit sequence length `seq_len`.
///
/// At or below `max_positions` these are the original frequencies (what HF's module holds
/// until a longer sequence arrives). Above it, HF's forward passes `seq_len = max(pos) + 1` as
/// an int64 tensor, which makes the base change f32 tensor arithmetic:
/// `t = f32(s)·f32(L) / f32(Lmax) − f32(s − 1)`, `b' = f32(b) · f32(t^(d/(d−2)))` (the pow
/// itself in f64: torch's `pow(Tensor, Scalar)` kernel calls `std::pow(float, double)`), then
/// `1 / f32(b'^(2j/d))`. (The Python-int path of the same function computes `b'` in f64; the
/// forward's tensor path is what a running model uses, and what the golden vectors record.)
fn dynamic_ntk(
    base: f32,
    d: usize,
    factor: f32,
    max_positions: u32,
    seq_len: u32,
    out: &mut [f32; MAX_PAIRS],
) -> Result<(), Error> {
    let s = positive("factor", factor)?;
    let lmax = nonzero("max_positions", max_positions)?;
    if seq_len <= lmax || d <= 2 {
        // d = 2: the only frequency is b'^0 = 1 whatever the base (see `ntk`).
        default_inv_freq(base, d, out);
        return Ok(());
    }
    let t = s * seq_len as f32;
    let t = t / lmax as f32;
    let t = t - (s as f64 - 1.0) as f32;
    // torch's pow(f32 tensor, Python float) keeps the exponent in f64: std::pow(float, double)
    // is the double pow, rounded to f32.
    let exp = d as f64 / (d - 2) as f64;
    let scaled = base * (libm::pow(t as f64, exp) as f32);
    positive("scaled_base", scaled)?;
    default_inv_freq(scaled, d, out);
    Ok(())
}

/// YaRN's magnitude helper `g(s, μ)`, in f64 as HF's `get_mscale`.
fn get_mscale(scale: f64, mscale: f64) -> f64 {
    if scale <= 1.0 {
        1.0
    } else {
        0.1 * mscale * libm::log(scale) + 1.0
    }
}

/// Finite check for an optional f32 parameter.
fn finite(what: &'static str, v: f32) -> Result<f64, Error> {
    if v.is_finite() {
        Ok(v as f64)
    } else {
        Err(Error::InvalidParameter { what, value: v })
    }
}

/// YaRN (HF `_compute_yarn_parameters`). Returns the attention factor.
///
/// * Attention factor, f64: explicit `attention_factor`; else, if `mscale` and
///   `mscale_all_dim` are both given and non-zero (Python truthiness: HF treats 0 as absent),
///   `g(s, mscale) / g(s, mscale_all_dim)`; else `g(s, 1)`.
/// * Correction range, f64: `c(n) = d·ln(L0 / (n·2·π)) / (2·ln b)`, `lo = c(β_fast)`,
///   `hi = c(β_slow)`, floored/ceiled when `truncate`, then `lo = max(lo, 0)`,
///   `hi = min(hi, d − 1)`; if `lo == hi`, `hi += 0.001`.
/// * Ramp, f32: `γ_j = clamp((f32(j) − f32(lo)) / f32(hi − lo), 0, 1)`, `e_j = 1 − γ_j`.
/// * Frequencies, f32: `q_j = f32(b^(2j/d))`, `ω_j = f32(1/f32(s·q_j))·(1 − e_j) + f32(1/q_j)·e_j`,
///   every operation rounded (note `1 − e_j` is not always `γ_j` in f32).
fn yarn(base: f32, d: usize, y: &Yarn, out: &mut [f32; MAX_PAIRS]) -> Result<f32, Error> {
    let s = positive("factor", y.factor)?;
    let l0 = nonzero("original_max_positions", y.original_max_positions)?;
    let beta_fast = positive("beta_fast", y.beta_fast)?;
    let beta_slow = positive("beta_slow", y.beta_slow)?;
    if beta_slow > beta_fast {
        return Err(Error::ParameterOutOfRange {
            what: "beta_slow",
            constraint: "must not exceed `beta_fast`",
            value: beta_slow,
        });
    }
    if base == 1.0 {
        // ln(b) = 0: the correction dims are infinite (HF raises in `math.floor`).
        return Err(Error::ParameterOutOfRange {
            what: "base",
            constraint: "must not be 1 for YaRN",
            value: base,
        });
    }

    // Validated whether or not they are used (an explicit attention factor wins), as the
    // `Yarn` docs promise: a NaN in a config is a bug to report, not to ignore.
    let mscale = y.mscale.map(|v| finite("mscale", v)).transpose()?;
    let mscale_all = y
        .mscale_all_dim
        .map(|v| finite("mscale_all_dim", v))
        .transpose()?;
    let attention_factor = match y.attention_factor {
        Some(a) => positive("attention_factor", a)? as f64,
        None => {
            let sf = s as f64;
            match (mscale, mscale_all) {
                (Some(a), Some(b)) if a != 0.0 && b != 0.0 => get_mscale(sf, a) / get_mscale(sf, b),
                _ => get_mscale(sf, 1.0),
            }
        }
    };

    let dim = d as f64;
    let ln_base = libm::log(base as f64);
    let correction_dim = |n: f32| -> f64 {
        dim * libm::log(l0 as f64 / (n as f64 * 2.0 * core::f64::consts::PI)) / (2.0 * ln_base)
    };
    let (mut lo, mut hi) = (correction_dim(beta_fast), correction_dim(beta_slow));
    if y.truncate {
        lo = libm::floor(lo);
        hi = libm::ceil(hi);
    }
    // Python's max(lo, 0) / min(hi, d - 1); lo and hi are finite (b ≠ 1, L0 ≥ 1, β > 0), so
    // f64's max/min (which differ from Python's only on NaN) are Python's.
    lo = lo.max(0.0);
    hi = hi.min(dim - 1.0);
    if lo == hi {
        hi += 0.001; // HF: "prevent singularity"
    }
    let lo32 = lo as f32;
    let span = (hi - lo) as f32;

    for (j, w) in out.iter_mut().take(d / 2).enumerate() {
        let q = pow_f32(base, exponent(j, d));
        let extrapolation = 1.0 / q;
        let interpolation = 1.0 / (s * q);
        let ramp = clamp01((j as f32 - lo32) / span);
        let e = 1.0 - ramp;
        *w = interpolation * (1.0 - e) + extrapolation * e;
    }
    Ok(attention_factor as f32)
}

/// `torch.clamp(x, 0, 1)`: NaN stays NaN.
#[inline]
fn clamp01(x: f32) -> f32 {
    x.clamp(0.0, 1.0)
}

/// Llama 3.1 smoothing (HF `_compute_llama3_parameters`).
///
/// `λ_lo = L0/low` and `λ_hi = L0/high` are f64, compared as f32 with the f32 wavelengths
/// `λ_j = f32(1/ω_j)·f32(2π)`. `λ_j > λ_lo`: `ω_j/s`; `λ_j < λ_hi`: `ω_j`; otherwise
/// `σ = (f32(1/λ_j)·f32(L0) − low) / f32(high − low)` and `ω'_j = (1−σ)·ω_j/s + σ·ω_j`, each
/// operation rounded to f32 in that order.
///
/// `low_freq_factor == high_freq_factor` makes σ = 0/0 in HF (NaN) for a wavelength exactly on
/// the common bound (the band is otherwise empty); posenc uses σ = 0 there, as vLLM does, so
/// the scheme becomes a hard cutoff at `L0/low`. `low_freq_factor > high_freq_factor` is refused.
fn llama3(
    base: f32,
    d: usize,
    factor: f32,
    low_freq_factor: f32,
    high_freq_factor: f32,
    original_max_positions: u32,
    out: &mut [f32; MAX_PAIRS],
) -> Result<(), Error> {
    let s = positive("factor", factor)?;
    let low = positive("low_freq_factor", low_freq_factor)?;
    let high = positive("high_freq_factor", high_freq_factor)?;
    if low > high {
        return Err(Error::ParameterOutOfRange {
            what: "low_freq_factor",
            constraint: "must not exceed `high_freq_factor`",
            value: low,
        });
    }
    let l0 = nonzero("original_max_positions", original_max_positions)?;

    let low_wavelen = (l0 as f64 / low as f64) as f32;
    let high_wavelen = (l0 as f64 / high as f64) as f32;
    let two_pi = (2.0 * core::f64::consts::PI) as f32;
    let l0_32 = l0 as f32;
    let span = (high as f64 - low as f64) as f32;

    default_inv_freq(base, d, out);
    for w in out.iter_mut().take(d / 2) {
        let inv = *w;
        let wavelen = (1.0 / inv) * two_pi;
        if wavelen > low_wavelen {
            *w = inv / s;
        } else if wavelen.partial_cmp(&high_wavelen) != Some(Ordering::Less) {
            // HF: `~(wavelen < high) & ~(wavelen > low)`, NaN included.
            let smooth = if span == 0.0 {
                0.0
            } else {
                ((1.0 / wavelen) * l0_32 - low) / span
            };
            *w = (1.0 - smooth) * inv / s + smooth * inv;
        }
    }
    Ok(())
}

/// LongRoPE (HF `_compute_longrope_parameters`). Returns the attention factor.
///
/// `ω_j = 1 / f32(f32(f_j) · q_j)` with `f` the long or short list (the caller's choice); the
/// attention factor is the explicit one, else with `s = max_positions / L0` (f64):
/// `1` if `s ≤ 1`, else `sqrt(1 + ln s / ln L0)`. Both lists are validated whichever is used.
fn long_rope(
    base: f32,
    d: usize,
    lr: &LongRope<'_>,
    out: &mut [f32; MAX_PAIRS],
) -> Result<f32, Error> {
    let pairs = (d / 2).min(MAX_PAIRS);
    factor_list("short_factor", lr.short_factor, pairs)?;
    factor_list("long_factor", lr.long_factor, pairs)?;
    let l0 = nonzero("original_max_positions", lr.original_max_positions)?;

    let attention_factor = match lr.attention_factor {
        Some(a) => positive("attention_factor", a)? as f64,
        None => {
            let s = lr.max_positions as f64 / l0 as f64;
            if s <= 1.0 {
                1.0
            } else {
                // L0 = 1 gives ln L0 = 0 and an infinite factor: refused by `resolve`.
                libm::sqrt(1.0 + libm::log(s) / libm::log(l0 as f64))
            }
        }
    };

    let factors = if lr.use_long {
        lr.long_factor
    } else {
        lr.short_factor
    };
    for (j, (w, &f)) in out.iter_mut().zip(factors).enumerate() {
        *w = 1.0 / (f * pow_f32(base, exponent(j, d)));
    }
    Ok(attention_factor as f32)
}

/// Gemma's proportional RoPE (HF `_compute_proportional_rope_parameters`): the first
/// `k = floor(p·d/2)` pairs get the default frequencies of the full `d` (`d` being the rotary
/// dim, which is `head_dim` for Gemma), the remaining pairs `ω = 0`; all are then divided by
/// `factor` in f32.
fn proportional(
    base: f32,
    d: usize,
    partial_rotary_factor: f32,
    factor: f32,
    out: &mut [f32; MAX_PAIRS],
) -> Result<(), Error> {
    let p = partial_rotary_factor;
    if !(p.is_finite() && p >= 0.0) {
        return Err(Error::InvalidParameter {
            what: "partial_rotary_factor",
            value: p,
        });
    }
    if p > 1.0 {
        return Err(Error::ParameterOutOfRange {
            what: "partial_rotary_factor",
            constraint: "must be at most 1",
            value: p,
        });
    }
    let s = positive("factor", factor)?;
    let pairs = (d / 2).min(MAX_PAIRS);
    // Python: int(p * head_dim // 2); p·d/2 ≤ d/2, and the cast saturates anyway.
    let rotating = (libm::floor(p as f64 * d as f64 / 2.0) as usize).min(pairs);
    default_inv_freq(base, d, out);
    for (j, w) in out.iter_mut().take(pairs).enumerate() {
        if j >= rotating {
            *w = 0.0;
        }
        *w /= s;
    }
    Ok(())
}
