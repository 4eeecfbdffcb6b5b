//! # posenc
//!
//! The numeric core for transformer positional encodings: RoPE applied in place to query and
//! key rows (interleaved and rotate_half layouts; `f32`, `f16`, `bf16` storage; partial rotary
//! and rotary windows; arbitrary and negative positions; every frequency-scaling scheme
//! released checkpoints use; M-RoPE and 2-D vision RoPE; strided views), sinusoidal position
//! tables in all four conventions, and the companions runtimes need. Allocation-free,
//! `#![no_std]`, SIMD on every target, runtime-dispatched AVX2/AVX-512 on x86-64.
//!
//! ```
//! use posenc::{Layout, Rope, RopeConfig};
//! // Llama-3-8B: 32 query heads, 8 KV heads, head_dim 128, rope_theta 500000.
//! let rope = Rope::new(&RopeConfig::new(128, 500_000.0, Layout::RotateHalf)).unwrap();
//! let positions = [0, 1, 2, 3];
//! let mut q = vec![0.5f32; 4 * 32 * 128];
//! let mut k = vec![posenc::bf16::from_f32(0.5); 4 * 8 * 128];
//! rope.apply(&mut q, 32, &positions).unwrap();
//! rope.apply(&mut k, 8, &positions).unwrap();
//! ```
//!
//! ## Entry points
//! | what | where |
//! |---|---|
//! | RoPE on token-major rows | [`Rope::apply`], [`Rope::apply_inverse`], [`Rope::apply_qk`] (GQA, one cos/sin) |
//! | strided buffers (fused QKV, head-major) | [`Rope::apply_views`] with [`View`] |
//! | KV-cache shift (pure rotation) | [`Rope::shift`] |
//! | quantized K-cache shift (ggml `Q8_0`, `Q4_0`) | [`Rope::shift_q8_0`], [`Rope::shift_q4_0`] |
//! | several positions per token | [`Rope::apply_axes`] with [`Axes`] (M-RoPE, 2-D vision) |
//! | angles once per forward pass (every layer rotates from it) | [`Rope::table`] → [`Table`], passed where positions go |
//! | cos/sin tables for another framework, or rotating by someone else's | [`Rope::fill_cos_sin`], [`Table::new`] |
//! | positions of any integer type (`usize`, `u32`, `i64`, …) | [`Position`] |
//! | frequencies from a checkpoint | [`Rope::from_inv_freq`] |
//! | HF's own rounding, for bit-parity with HF | [`Rope::with_rounding`], [`Rounding`] |
//! | sinusoidal tables | [`Sinusoidal`] (`new`, `fairseq`, `timestep`) |
//! | model settings | [`presets`] |
//! | from a checkpoint (`config.json`, GGUF) | [`load`] |
//!
//! ## Features
//! | feature | default | effect |
//! |---|---|---|
//! | `std` | yes | run-time CPU detection (`is_x86_feature_detected!`), cached once per process; results never depend on it |
//! | `rayon` | no | `par_*` variants of the RoPE and sinusoidal entry points that split by tokens (by heads for one token), no allocation in the hot path |
//! | `serde` | no | [`load::ropes_from_hf_config`]: the `Rope`s of a HuggingFace `config.json` (implies `std`; `serde_json`) |
//! | `gguf` | no | [`load::GgufHeader`]: a GGUF file's metadata for [`load::rope_from_gguf`] (implies `std`); the lookup route itself is always there, no_std |
//!
//! Without `std` the crate is `#![no_std]` (math from `libm`), selects its SIMD tier from the
//! compile-time target features, and builds for bare-metal targets such as
//! `thumbv7em-none-eabihf`.
//!
//! **Stack use** is bounded and does not grow with the input. Optimised, a call's frames hold
//! two per-token cos/sin tables (at most 2.3 KiB each) and little else; a rotate-into that
//! converts through f32 (between two 16-bit dtypes, 16-bit into f32, or under the HF roundings
//! between two dtypes) adds a 32 KiB staging buffer. `tests/stack.rs` runs
//! every kind of call on every backend on a 128 KiB thread. Unoptimised builds (a debug
//! `cargo build`) need more, since every inlined copy keeps its own stack slots, and are
//! tested on 1 MiB threads, half of what a spawned thread gets by default.
//!
//! ## Hardware
//! | [`Backend`] | where it runs | how it is chosen |
//! |---|---|---|
//! | `Avx512` | x86-64 with AVX-512F, AVX2, FMA, F16C | at run time (std) or `-C target-feature` (no_std) |
//! | `Avx2` | x86-64 with AVX2, FMA, F16C (Haswell, Zen and later) | at run time (std) or `-C target-feature` |
//! | `Neon` | aarch64 with Advanced SIMD; bf16 rounded by `bfcvtn` where the CPU has FEAT_BF16 | at run time (std) or the target's features (no_std) |
//! | `Portable` | every target: SSE2 on x86-64, NEON on aarch64, simd128 on wasm32, scalar lanes elsewhere (`wide`) | fallback |
//! | `Scalar` | everywhere | only on request: the reference the others are tested against |
//!
//! [`Backend::active`] says which one runs; [`Rope::with_backend`] and
//! [`Sinusoidal::with_backend`] pick one explicitly. `Portable` is bitwise equal to `Scalar`;
//! the x86 tiers fuse multiply-adds in the rotation and stay within the rotation bound below;
//! cos/sin tables are bitwise identical on every backend.
//!
//! ## Companions
//! Each in its own module; the crate root holds only the encodings.
//! * **ALiBi** ([`alibi`]: [`alibi::alibi_slopes`], [`alibi::alibi_bias`]): BLOOM's f32 slopes
//!   bit for bit for any head count, and the `[heads, q, k]` bias of any query × key block
//!   ([`alibi::Positions`]: lists or ranges, so a KV-cache block at an offset needs no
//!   buffer), symmetric or causal, in f32, f16 or bf16; [`alibi::alibi_positions_from_mask`]
//!   reproduces BLOOM's padded `build_alibi_tensor`.
//! * **T5 relative buckets** ([`t5`]: [`t5::T5Buckets`], [`t5::t5_bucket`]): HF's
//!   `_relative_position_bucket` in HF's own f32 order of operations, bidirectional or causal,
//!   for one distance, a block, or the gathered `[heads, q, k]` bias.
//! * **Layout permutation** ([`permute`]: [`permute::permute_to_rotate_half`],
//!   [`permute::permute_weight_to_rotate_half`] and their inverses and in-place forms):
//!   interleaved ↔ rotate_half for activations and for Q/K projection rows (HF's Meta → HF
//!   `permute`, llama.cpp's HF → GGUF inverse), with GQA and partial rotary explicit.
//! * **Benchmark reference** ([`mod@bench`]: [`bench::memory_ceiling_pass`]): the memory ceiling
//!   RoPE's speed is reported against.
//!
//! ## Numerics
//! * `inv_freq` is f32, computed in the frameworks' order: HF's buffer bit for bit.
//! * Angles are exact: `p · ω` is formed in f64 (exact for |p| < 2^29) and reduced modulo π/2
//!   in f64 before an f32 polynomial: see the accuracy contract below (peers that round
//!   `p · ω` to f32 are off by 4e-3 rad at p = 131072).
//! * f16/bf16 are widened exactly, computed in f32 and rounded once (to nearest even) on store.
//! * Each rotated f32 output `a·c − b·s` is within `2·u·(|a·c| + |b·s|)` (u = 2^-24, the f32
//!   unit roundoff) of the exact value for the given c, s, fused or not; near cancellation no
//!   bound in ulps of the result is possible, so none is claimed.
//! * Interleaved and rotate_half are the same math: permuting a row, applying the other
//!   layout and permuting back is bitwise identical on the same backend (NaN payloads aside:
//!   which NaN survives an operation is unspecified).
//! * Sinusoidal tables use frequencies and angles formed in f64. [`Sinusoidal::fill`]
//!   (consecutive positions) computes them by an f64 recurrence restarted every 256
//!   positions, the other entry points by one reduction per value; the two are not bitwise
//!   equal, and both meet the accuracy contract.
//! * Bad input gets a typed [`Error`] before anything is written: a call that fails leaves every
//!   buffer untouched, and no input makes a public function panic.
//!
//! ## Accuracy contract
//! **Domain.** Every angle posenc evaluates has magnitude at most 2^26 = 67,108,864 rad:
//! * RoPE (every exact-angle entry point: [`Rope::apply`] and relatives, [`Rope::fill_cos_sin`],
//!   [`sin_cos_exact`]): the angle is `p · ω`, the exact product of the i32 position and the
//!   f32 frequency ([`Rope::inv_freq`]); frequencies are in `[0, 2^16]`
//!   ([`Rope::from_inv_freq`] refuses others), and a position with `|p| · max ω > 2^26` is
//!   refused. For the usual [`RopeConfig`] (base above 1, scaling factors of at least 1) every
//!   `ω ≤ 1`, so every `|p| ≤ 2^26` is accepted; a base below 1, a linear factor below 1 or a
//!   LongRoPE factor below 1 raises `max ω`, and [`Rope::position_limit`] says where the
//!   limit then lies.
//! * Sinusoidal tables (largest frequency `ω_0 = 1`): positions `|p| ≤ 2^26`
//!   ([`Sinusoidal::fill`]: `first_position + rows − 1 ≤ 2^26`; [`Sinusoidal::fill_positions`],
//!   [`Sinusoidal::add`]: every position), times `|t| ≤ 2^26` ([`Sinusoidal::fill_times`]).
//!
//! Outside the domain (NaN and infinite times and frequencies included) a call returns
//! [`Error::OutOfDomain`], naming the argument and the limit, before it writes anything.
//!
//! **Bound.** Inside it, every cos and sin is within 2.4e-7 (2^-22, two ulps of 1) of the
//! true value: of `cos/sin(p · ω)` for RoPE's f32 `ω` (exact-angle mode, [`Rounding::Once`]),
//! and of the f64 formula `cos/sin(p · base^(−i/den))` for sinusoidal tables. Measured worst
//! case, 2·10^7 samples biased to the domain's edge plus the top 4000 positions and times of
//! each table: 7.8e-8 ([`sin_cos_exact`] and RoPE's angles), 8.0e-8 (sinusoidal
//! `fill_positions`, `add`, `fill_times`), 4.8e-8 (sinusoidal `fill`).
//!
//! **Bitwise.** The cos/sin values are bitwise identical on every [`Backend`] throughout the
//! domain (`tests/accuracy_domain.rs` samples it, edges included, on every available
//! backend against an f64 reference).
//!
//! ## From a checkpoint
//! [`load`] builds the `Rope` of a published model from the files it ships with, with the
//! semantics of the runtime that reads them; its docs list where the two readings of one
//! model differ.
//!
//! **HuggingFace `config.json`** (feature `serde`): [`load::ropes_from_hf_config`] takes the
//! file's text, in the transformers-4 form (`rope_theta`, `rope_scaling`, …) or the
//! transformers-5 `rope_parameters`, and returns one `Rope` per layer type (Gemma 3's local
//! and global layers differ; most models have one).
//!
//! ```
//! # #[cfg(feature = "serde")] {
//! // Llama 3.1 8B's config.json (the keys that matter here; the rest are ignored).
//! let json = r#"{
//!   "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
//!   "max_position_embeddings": 131072, "rope_theta": 500000.0,
//!   "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
//!                    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
//! }"#;
//! let ropes = posenc::load::ropes_from_hf_config(json).unwrap();
//! let rope = ropes.single().unwrap(); // one layer type
//! assert_eq!(*rope, posenc::presets::LLAMA_3_1_8B.rope().unwrap());
//! let mut q = vec![0.5f32; 2 * 32 * 128];
//! rope.apply(&mut q, 32, &[0, 1]).unwrap();
//! # }
//! ```
//!
//! **GGUF metadata** (no_std, no allocation): [`load::rope_from_gguf`] reads llama.cpp's keys
//! (`{arch}.rope.freq_base`, `{arch}.rope.scaling.*`, …) through a lookup the caller provides,
//! with llama.cpp's semantics, plus the `rope_freqs` tensor when the file has one:
//!
//! ```
//! use posenc::load::{GgufValue, rope_from_gguf};
//! // A lookup over metadata some GGUF reader already holds (here: Qwen2.5-7B's keys).
//! let meta = |key: &str| match key {
//!     "general.architecture" => Some(GgufValue::Str("qwen2")),
//!     "qwen2.attention.key_length" => Some(GgufValue::U32(128)),
//!     "qwen2.rope.freq_base" => Some(GgufValue::F32(1e6)),
//!     _ => None,
//! };
//! let rope = rope_from_gguf(meta, None).unwrap();
//! assert_eq!(rope, posenc::presets::QWEN2_5_7B.rope().unwrap());
//! ```
//!
//! With the feature `gguf`, [`load::GgufHeader`] parses a GGUF file's header bytes (the
//! metadata, before the tensor data) and is that lookup:
//!
//! ```
//! # #[cfg(feature = "gguf")] {
//! use posenc::load::{GgufHeader, rope_from_gguf};
//! # let mut bytes = b"GGUF".to_vec(); // a minimal v3 header: 0 tensors, 3 keys
//! # bytes.extend(3u32.to_le_bytes()); bytes.extend(0u64.to_le_bytes()); bytes.extend(3u64.to_le_bytes());
//! # let mut kv = |k: &str, ty: u32, v: &[u8]| { bytes.extend((k.len() as u64).to_le_bytes()); bytes.extend(k.as_bytes()); bytes.extend(ty.to_le_bytes()); bytes.extend(v); };
//! # kv("general.architecture", 8, &[&5u64.to_le_bytes()[..], b"qwen2"].concat());
//! # kv("qwen2.attention.key_length", 4, &128u32.to_le_bytes());
//! # kv("qwen2.rope.freq_base", 6, &1e6f32.to_le_bytes());
//! // `bytes`: the start of a .gguf file, e.g. std::fs::read("qwen2.5-7b-instruct-q4_k_m.gguf")
//! let header = GgufHeader::parse(&bytes).unwrap();
//! let rope = rope_from_gguf(|key| header.get(key), None).unwrap();
//! assert_eq!(rope, posenc::presets::QWEN2_5_7B.rope().unwrap());
//! # }
//! ```
//!
//! ## Presets
//! [`presets`] holds the RoPE settings of published models as constants; each builds its
//! [`Rope`] with [`presets::Preset::rope`]. The module's table cites where every value was
//! checked and marks the ones that could not be.
//!
//! | model | preset | head / rotary dim | θ | layout | scaling / axes |
//! |---|---|---|---|---|---|
//! | Llama 2 7B | [`presets::LLAMA_2_7B`] | 128 / 128 | 1e4 | rotate_half | — |
//! | Llama 3 8B | [`presets::LLAMA_3_8B`] | 128 / 128 | 5e5 | rotate_half | — |
//! | Llama 3.1 8B | [`presets::LLAMA_3_1_8B`] | 128 / 128 | 5e5 | rotate_half | llama3 8, 1 / 4, 8192 |
//! | Llama 3.2 1B / 3B | [`presets::LLAMA_3_2_1B`], [`presets::LLAMA_3_2_3B`] | 64, 128 | 5e5 | rotate_half | llama3 32, 1 / 4, 8192 |
//! | Mistral 7B v0.1 / v0.3, Nemo | [`presets::MISTRAL_7B_V0_1`], [`presets::MISTRAL_7B_V0_3`], [`presets::MISTRAL_NEMO_12B`] | 128 / 128 | 1e4 / 1e6 / 1e6 | rotate_half | — |
//! | Qwen2.5 7B | [`presets::QWEN2_5_7B`], [`presets::QWEN2_5_7B_YARN`] | 128 / 128 | 1e6 | rotate_half | — / YaRN 4, 32768 |
//! | Qwen2-VL 7B (+ ViT) | [`presets::QWEN2_VL_7B`], [`presets::QWEN2_VL_VIT`] | 128; ViT 80 | 1e6; ViT 1e4 | rotate_half | M-RoPE `[16, 24, 24]`; 2-D |
//! | Qwen3-VL 8B | [`presets::QWEN3_VL_8B`] | 128 / 128 | 5e6 | rotate_half | interleaved M-RoPE `[24, 20, 20]` |
//! | DeepSeek-V3 | [`presets::DEEPSEEK_V3`] | 64 / 64 (rope part) | 1e4 | interleaved | YaRN 40, 4096, mscale 1 / 1 |
//! | Phi-3-mini-128k | [`presets::phi_3_mini_128k`] | 96 / 96 | 1e4 | rotate_half | LongRoPE, factor lists from the caller |
//! | GPT-NeoX 20B | [`presets::GPT_NEOX_20B`] | 96 / 24 | 1e4 | rotate_half | — |
//! | GPT-J 6B | [`presets::GPT_J_6B`] | 256 / 64 | 1e4 | interleaved | — |
//! | GLM-4 9B | [`presets::GLM_4_9B`] | 128 / 64 | 1e4 | interleaved | — |
//! | Gemma 2 9B | [`presets::GEMMA_2_9B`] | 256 / 256 | 1e4 | rotate_half | — |
//! | Gemma 3 4B | [`presets::GEMMA_3_4B_LOCAL`], [`presets::GEMMA_3_4B_GLOBAL`] | 256 / 256 | 1e4 local / 1e6 global | rotate_half | global: linear 8 |
//! | gpt-oss 20B | [`presets::GPT_OSS_20B`] | 64 / 64 | 1.5e5 | rotate_half | YaRN 32, 4096, no truncation |
//!
//! ```
//! let rope = posenc::presets::QWEN2_VL_7B.rope().unwrap();
//! let mut k = vec![0.5f32; 2 * 4 * 128]; // 2 tokens, 4 KV heads
//! rope.apply_axes(&mut k, 4, &[[7, 7, 7], [8, 3, 5]]).unwrap(); // a text token, an image patch
//! ```
//!
#![no_std]
#![deny(missing_docs)]

// `std` for run-time detection, and for the unit tests in every configuration (so that
// `cargo test --no-default-features --lib` runs them on the compile-time tier selection).
#[cfg(any(feature = "std", test))]
extern crate std;

mod angles;
mod axes;
mod backward;
pub mod bench;
mod companions;
mod element;
mod engine;
mod error;
mod fused;

#[cfg(feature = "rayon")]
mod parallel;
mod quant;
mod rope;
mod scaling;
mod sinusoidal;
mod trig;
mod types;
mod validate;
mod view;

pub use angles::{Angles, Position, Positions, Table};
pub use axes::Axes;
pub use companions::{alibi, load, permute, presets, t5};
pub use element::{Dtype, Element};
pub use error::{Error, Formula};
pub use fused::RmsNorm;
pub use half::{bf16, f16};
#[cfg(feature = "rayon")]
pub use parallel::{PAR_GRAIN, PAR_MIN_ELEMENTS};
pub use quant::{
    BlockQ4_0, BlockQ8_0, dequantize_q4_0, dequantize_q8_0, quantize_q4_0, quantize_q8_0,
};
pub use rope::{Rope, RopeConfig};
pub use scaling::{LongRope, MAX_ROTARY_DIM, Scaling, Yarn};
pub use sinusoidal::{Sinusoidal, fairseq_positions};
pub use trig::sin_cos_exact;
pub use types::{Backend, Layout, Rounding, SinusoidalLayout, View};

/// The README's code blocks, compiled and run as doctests so the front page cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
