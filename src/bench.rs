//! What posenc's benchmarks measure against, public so that a runtime can take the same
//! measurement on its own machine. Not part of the encodings' API.
//!
//! [`memory_ceiling_pass`] is the memory ceiling: one in-place pass `x = x·a + b` over the
//! same bytes as a rotation, with the same loads and stores and the least arithmetic. The
//! benchmarks and the tour report RoPE as `ceiling time / RoPE time`: 1 means RoPE runs at
//! the speed of memory, below 1 slower than the ceiling.
//!
//! ```
//! use posenc::bench::memory_ceiling_pass;
//! use posenc::Backend;
//! use std::time::Instant;
//! let mut x = vec![0.5f32; 1 << 16];
//! let t = Instant::now();
//! memory_ceiling_pass(Backend::active(), &mut x, 1.0, 0.0).unwrap();
//! println!("ceiling: {:?} for {} bytes", t.elapsed(), 4 * x.len());
//! assert!(x.iter().all(|&v| v == 0.5)); // x·1 + 0: every byte read and written, none changed
//! ```

pub use crate::engine::ceiling::memory_ceiling_pass;
