//! RoPE frequencies (`inv_freq`) as checkpoints define them.
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

use crate::error::Error;
use crate::rope::{LongRope, MAX_PAIRS, Scaling, Yarn};
use core::cmp::Ordering;

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
/// exceed 1 (`ω_0 = 1` is the fastest pair); the bound keeps every angle `p·ω` (|p| ≤ 2^31)
/// below 2^47, where the range reduction's rounding trick and quadrant stay valid and every
/// backend computes the same cos/sin. The 2.4e-7 accuracy contract covers `|p·ω| < 2^24`.
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
    // Python's max(lo, 0) / min(hi, d - 1); lo and hi are finite (b ≠ 1, L0 ≥ 1, β > 0).
    if lo < 0.0 {
        lo = 0.0;
    }
    if hi > dim - 1.0 {
        hi = dim - 1.0;
    }
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
