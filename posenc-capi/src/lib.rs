//! # posenc-capi
//!
//! A C ABI for [`posenc`]: RoPE applied in place (f32, f16, bf16; interleaved and rotate_half;
//! every scaling scheme), cos/sin tables, rotation with caller tables, sinusoidal position
//! tables, and ALiBi slopes and biases; for runtimes, angles computed once per forward pass
//! (`PosencAngles`: positions or a table from [`posenc_rope_table`]), Q+K with GQA in one
//! call, strided views, M-RoPE axes, presets by name or index, a model's rope from its GGUF
//! metadata or HuggingFace `config.json`, and the one-pass shift of a ggml `Q8_0`/`Q4_0` K
//! cache; fused paths: rotation into a cache slot of another dtype, QK-norm + RoPE in one
//! pass, and the backward pass. Built as a static library, a shared library and an rlib; the
//! header `include/posenc.h` is generated from this crate by cbindgen
//! (`check-header.sh` keeps it in sync).
//!
//! ## Conventions (the caller contract, repeated in the header)
//! * Every function that can fail returns an `int`: [`POSENC_OK`] (0) or a negative
//!   `POSENC_ERR_*` code; [`posenc_error_message`] names a code and
//!   [`posenc_last_error_detail`] gives the full message of the thread's last failure.
//! * A function that fails has written nothing: every argument is validated before the first
//!   write (the one exception is [`POSENC_ERR_PANIC`], which should never happen).
//! * Buffers are `(pointer, element count)` pairs. A pointer must be NULL or point to that
//!   many readable (and, for outputs, writable) elements, aligned for their type. NULL with a
//!   count of 0 is an empty buffer; NULL with a non-zero count is
//!   [`POSENC_ERR_NULL_POINTER`]. Every output buffer has its own count, which must equal the
//!   length the other arguments imply ([`POSENC_ERR_LENGTH_MISMATCH`] otherwise, before any
//!   write), so nothing is written past a count the caller gave. An output buffer must not
//!   overlap any other buffer of the same call ([`POSENC_ERR_OVERLAPPING_BUFFERS`] when it
//!   does).
//! * f16 and bf16 elements are passed as their `uint16_t` bit patterns.
//! * No panic crosses the boundary: every entry point runs inside `catch_unwind` and reports
//!   a caught panic as [`POSENC_ERR_PANIC`], its location and message the error detail.
//! * Nothing is printed: the first call installs a process-wide panic hook that is silent
//!   for panics inside posenc's guard (on that thread) and hands every other panic to the
//!   hook installed before it (see the `error` module).
//! * All functions are thread-safe: they keep no shared state (a `PosencRope` is read-only
//!   after [`posenc_rope_init`], so one may be used from many threads at once).
//! * Stack use is bounded, whatever the input: tens of KiB at most in an optimised build
//!   (posenc's `tests/stack.rs` runs every kind of call on a 128 KiB thread), up to 1 MiB in a
//!   debug build (see posenc's crate docs, "Stack use").
//!
//! ## Why `PosencRope` is a fixed-size blob
//! `posenc::Rope` is `Copy`, has no lifetime and owns no heap memory, so the C caller can own
//! it outright: [`PosencRope`] is a POD struct the caller allocates anywhere (stack, arena,
//! struct member), [`posenc_rope_init`] stores the resolved `Rope` in it (its size and
//! alignment are checked against the reserved storage by compile-time assertions) and every
//! call borrows it in place, with no allocation, no handle table and no free function. The
//! alternative, storing the configuration and rebuilding the `Rope` on every call, would
//! recompute `rotary_dim / 2` powers (plus the scaling logic) per call, which costs as much as
//! rotating a decode step, and would make the caller keep LongRoPE/freq-factor arrays alive;
//! the blob copies the resolved frequencies once. The storage reserves more than today's
//! `Rope` needs so that posenc can grow it without changing the C struct's size.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod alibi;
mod angles;
mod backward;
mod error;
mod fused;
mod load;
mod misc;
mod presets;
mod quant;
mod raw;
mod rope;
mod rotate;
mod sinusoidal;

pub use alibi::*;
pub use angles::*;
pub use backward::*;
pub use error::*;
pub use fused::*;
pub use load::*;
pub use misc::*;
pub use presets::*;
pub use quant::*;
pub use rope::*;
pub use rotate::*;
pub use sinusoidal::*;
