//! # posenc
//!
//! The numeric core for transformer positional encodings: RoPE applied in place to query and
//! key rows (interleaved and rotate_half layouts; `f32`, `f16`, `bf16` storage; partial rotary;
//! arbitrary and negative positions) and sinusoidal position tables. Allocation-free,
//! `#![no_std]`, SIMD on every target.
//!
//! ```
//! use posenc::{Layout, Rope, RopeConfig};
//! // Llama-3-8B: 32 query heads, 8 KV heads, head_dim 128, rope_theta 500000.
//! let rope = Rope::new(&RopeConfig::new(128, 500_000.0, Layout::RotateHalf)).unwrap();
//! let positions = [0, 1, 2, 3];
//! let mut q = vec![0.5f32; 4 * 32 * 128];
//! let mut k = vec![half::bf16::from_f32(0.5); 4 * 8 * 128];
//! rope.apply(&mut q, 32, &positions).unwrap();
//! rope.apply(&mut k, 8, &positions).unwrap();
//! ```
//!
//! ## Numerics
//! * `inv_freq` is f32, computed in the frameworks' order: HF's buffer bit for bit.
//! * Angles are exact: `p · ω` is formed in f64 (exact for |p| < 2^29) and reduced modulo π/2
//!   in f64 before an f32 polynomial; sin and cos are within 2.4e-7 of the true values for
//!   every |p| < 2^24 (peers that round `p · ω` to f32 are off by 4e-3 rad at p = 131072).
//! * f16/bf16 are widened exactly, computed in f32 and rounded once (to nearest even) on store.
//! * Each rotated f32 output `a·c − b·s` is within `2·u·(|a·c| + |b·s|)` (u = 2^-24, the f32
//!   unit roundoff) of the exact value for the given c, s, fused or not; near cancellation no
//!   bound in ulps of the result is possible, so none is claimed.
//! * Interleaved and rotate_half are the same math: permuting a row, applying the other
//!   layout and permuting back is bitwise identical on the same backend.
//!
//! ## Features
//! | feature | default | effect |
//! |---|---|---|
//! | `std` | yes | runtime CPU detection; results never change with it |
//!
//! Without `std` the crate is `#![no_std]` (uses `libm`) and builds for bare-metal targets
//! such as `thumbv7em-none-eabihf`.
#![no_std]
#![deny(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

mod arch;
mod element;
mod error;
mod freq;
mod rope;
mod sinusoidal;
mod trig;

pub use arch::Backend;
pub use element::{Dtype, Element};
pub use error::Error;
pub use half::{bf16, f16};
pub use rope::{
    Layout, LongRope, MAX_ROTARY_DIM, Rope, RopeConfig, Scaling, Yarn, apply_with_table,
    apply_with_table_on,
};
pub use sinusoidal::{Sinusoidal, SinusoidalLayout};
pub use trig::sin_cos_exact;
