//! The SIMD engine: every numeric kernel, written once over a vector trait, and the one
//! dispatch point that picks the tier.
//!
//! ```text
//! vector.rs     Simd: the lane operations a tier provides (safe methods on a value token),
//!               the per-dtype loads and stores built on them, and Kernel: an operation
//!               written once for every tier
//! math.rs       exact-angle sin/cos on lanes (trig.rs, lane by lane)
//! job.rs        what a RoPE call asks for: targets, spans of heads, angle sources
//! angles.rs     a token's cos/sin, computed a vector of pairs at a time and laid out for the
//!               rotation; the caller-facing cos/sin tables (Kernel: CosSinTable)
//! rope.rs       the RoPE driver: one streaming loop for every layout, dtype and angle source
//!               (Kernel: Rotate)
//! ceiling.rs    the memory ceiling x = x·a + b (Kernel: Axpb, memory_ceiling_pass)
//! quant.rs      ggml's Q8_0/Q4_0 blocks: dequantize and reference quantize (Kernels:
//!               Dequantize, Quantize)
//! three_term.rs the recurrence y(j+2) = k·y(j+1) − y(j) down a block of rows (the
//!               sinusoidal fill's inner loop)
//! dispatch.rs   dispatch(backend, kernel): the one place a tier is chosen; Backend's methods
//! detect.rs     what this CPU runs, detected once and cached
//! scalar.rs     the reference tier (2 lanes of plain Rust arithmetic, the test oracle)
//! portable.rs   `wide` lanes (SSE2, NEON, simd128, …), bitwise the reference
//! x86_64/       AVX2 and AVX-512: the token, the one #[target_feature] entry, the intrinsics
//! aarch64/      NEON: the same shape (token, entry, intrinsics; f16 conversions as asm)
//! ```
//!
//! Data flows one way: the API layer validates, then builds a kernel value (`Rotate`,
//! `CosSinTable`, the sinusoidal module's `Sinusoids`, …) and calls [`dispatch::dispatch`]
//! once; the tier's token runs the kernel's generic `run`. Nothing here imports the API layer.
//!
//! # Safety model
//! `unsafe` in the crate lives here, for three reasons only:
//! * **Tokens.** An x86 or aarch64 token (`Avx2`, `Avx512`, `Neon`) is made only by its `new()`, which checks
//!   the CPU. Its methods call intrinsics inside `unsafe` blocks whose `SAFETY` comment is
//!   that check; a tier's `#[target_feature]` entry functions (`run`, and `run_bf16` for
//!   the AVX-512 and NEON tokens that also prove a native bf16 conversion) are called only
//!   with a token in hand.
//! * **Pointers.** Loads and stores through raw pointers (`Simd::ld`, `Simd::st`, …) are
//!   `unsafe fn`s whose precondition is that the lanes are readable or writable. Their
//!   callers either hold a slice of the right length (the safe `Simd::load`/`store`) or
//!   have proven a whole window in bounds once (`rope.rs`'s `in_bounds`).
//! * **Inline assembly** in one AVX2 store, AVX-512's `opaque` and NEON's f16 and bf16
//!   conversions, documented where it stands.

#[cfg(target_arch = "aarch64")]
#[cfg_attr(posenc_portable_only, allow(dead_code, unused_imports))]
mod aarch64;
pub(crate) mod angles;
pub(crate) mod ceiling;
mod detect;
pub(crate) mod dispatch;
pub(crate) mod job;
pub(crate) mod math;
pub(crate) mod pairs;
mod portable;
pub(crate) mod quant;
pub(crate) mod rope;
mod scalar;
pub(crate) mod three_term;
pub(crate) mod vector;
#[cfg(target_arch = "x86_64")]
#[cfg_attr(posenc_portable_only, allow(dead_code, unused_imports))]
mod x86_64;
