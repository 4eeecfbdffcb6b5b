//! A drop-in for candle_nn's rotary embeddings, computed by posenc on CPU.
//!
//! * [`rope`], [`rope_i`], [`rope_thd`]: the functions of `candle_nn::rotary_emb` (candle
//!   0.11.1) with their signatures, shapes (`(b, h, t, d)`, `(b, t, h, d)` for `rope_thd`;
//!   cos/sin `(t', d/2)` or per batch `(b, t', d/2)`, `t' ≥ t`), dtypes, contiguity rules and
//!   error messages. CPU tensors of f32, f16 and bf16 are rotated by posenc's table path from
//!   the caller's cos/sin; **f64 and every other device are handed to candle_nn unchanged**
//!   (posenc stores no f64), so a call never fails here where candle_nn's would succeed.
//!   One deliberate difference: empty inputs that make candle_nn's CPU kernel panic
//!   (`par_chunks(0)`: `t = 0`, or `h = 0` for `rope_thd`) give an empty tensor here.
//! * [`RotaryEmbedding`]: a posenc [`posenc::Rope`] (from a preset, or per layer from a
//!   `config.json`) applied from positions with exact angles, in place on CPU
//!   (`candle_core::InplaceOp1`).
//!
//! # Numerics
//!
//! posenc loads each pair to f32, computes `a·c − b·s` / `a·s + b·c` in f32 and rounds once to
//! the tensor's dtype: each output is within `2·eps32·(|a·c| + |b·s|)` of the exact value for
//! the given `c`, `s` (eps32 = 2⁻²³), plus that one final rounding. candle_nn computes in the
//! tensor's own dtype, rounding each product and the sum (in f16/bf16: three roundings to 11
//! or 8 bits). The two therefore agree within the sum of their bounds, which the tests check
//! on random tensors; in f16/bf16 posenc's result is the closer one to the exact rotation.
//!
//! # Example
//!
//! ```
//! use candle_core::{DType, Device, Tensor};
//! let dev = Device::Cpu;
//! let xs = Tensor::randn(0f32, 1.0, (1, 4, 16, 64), &dev)?; // (b, h, t, d)
//! let theta = Tensor::randn(0f32, 1.0, (16, 32), &dev)?;
//! let (cos, sin) = (theta.cos()?, theta.sin()?);
//! let ours = posenc_candle::rope(&xs, &cos, &sin)?;
//! let theirs = candle_nn::rotary_emb::rope(&xs, &cos, &sin)?;
//! let diff = (ours - theirs)?.abs()?.max_all()?.to_scalar::<f32>()?;
//! assert!(diff < 1e-5);
//! # Ok::<(), candle_core::Error>(())
//! ```
#![deny(missing_docs)]

mod embedding;
mod ops;
mod table;

pub use embedding::RotaryEmbedding;
pub use ops::{rope, rope_i, rope_thd};

/// A posenc error as a candle error.
pub(crate) fn wrap(e: posenc::Error) -> candle_core::Error {
    candle_core::Error::wrap(e)
}
