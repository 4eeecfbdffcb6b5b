//! RoPE frequencies (`inv_freq`) as checkpoints define them.
//!
//! Every framework keeps `inv_freq` in f32 and computes it in f32 in this order:
//! `e_j = f32(2j) / f32(d)`, `q_j = f32(b^e_j)` (pow correctly rounded to f32), `ω_j = 1 / q_j`.
//! This reproduces HuggingFace's buffer bit-for-bit; the "exact" `b^(−2j/d)` does not.
//! Scaled schemes then apply their f32 operations in HF's order.

use crate::error::Error;
use crate::rope::{MAX_PAIRS, Scaling};

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

/// The default frequencies `1 / f32(b^(f32(2j)/f32(d)))` for `j < d/2`, into `out[..d/2]`.
pub(crate) fn default_inv_freq(base: f32, rotary_dim: usize, out: &mut [f32; MAX_PAIRS]) {
    let d = rotary_dim as f32;
    for (j, w) in out.iter_mut().take(rotary_dim / 2).enumerate() {
        let e = (2 * j) as f32 / d;
        *w = 1.0 / pow_f32(base, e);
    }
}

/// Resolves the frequencies and attention factor of a scheme.
///
/// `out[..rotary_dim/2]` receives `inv_freq`; the return value is the attention factor.
pub(crate) fn resolve(
    base: f32,
    rotary_dim: usize,
    scaling: &Scaling<'_>,
    out: &mut [f32; MAX_PAIRS],
) -> Result<f32, Error> {
    positive("base", base)?;
    let attention_factor = match *scaling {
        Scaling::None => {
            default_inv_freq(base, rotary_dim, out);
            1.0
        }
        Scaling::Linear { factor } => {
            let s = positive("factor", factor)?;
            default_inv_freq(base, rotary_dim, out);
            for w in out.iter_mut().take(rotary_dim / 2) {
                *w /= s;
            }
            1.0
        }
        Scaling::Ntk { .. } => return Err(Error::UnsupportedScaling { rope_type: "ntk" }),
        Scaling::DynamicNtk { .. } => {
            return Err(Error::UnsupportedScaling {
                rope_type: "dynamic",
            });
        }
        Scaling::Yarn(_) => return Err(Error::UnsupportedScaling { rope_type: "yarn" }),
        Scaling::Llama3 { .. } => {
            return Err(Error::UnsupportedScaling {
                rope_type: "llama3",
            });
        }
        Scaling::LongRope(_) => {
            return Err(Error::UnsupportedScaling {
                rope_type: "longrope",
            });
        }
        Scaling::FreqFactors(_) => {
            return Err(Error::UnsupportedScaling {
                rope_type: "freq_factors",
            });
        }
    };
    // A frequency that over- or underflowed (e.g. a subnormal base) is refused, not used.
    for &w in out.iter().take(rotary_dim / 2) {
        if !(w.is_finite() && w >= 0.0) {
            return Err(Error::InvalidParameter {
                what: "inv_freq",
                value: w,
            });
        }
    }
    Ok(attention_factor)
}
