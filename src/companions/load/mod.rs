//! # From a checkpoint
//!
//! Two routes from a published model to its [`Rope`](crate::Rope):
//!
//! * **HuggingFace `config.json`** (feature `serde`): [`ropes_from_hf_config`] reads the
//!   transformers-4 keys (`rope_theta`, `rope_scaling`, `partial_rotary_factor`, `head_dim`,
//!   `mrope_section`, …) or the transformers-5 `rope_parameters` (also per layer type, as
//!   Gemma 3's local and global layers), with HF's semantics: the `Rope` equals the one HF
//!   builds (its `inv_freq` buffer, attention factor, pairing).
//! * **GGUF metadata** (no_std, no allocation): [`rope_from_gguf`] reads llama.cpp's keys
//!   through a lookup the caller provides, with llama.cpp's semantics: its pairing per
//!   architecture, its YaRN ramp, correction dims and magnitude, its frequency factors. With
//!   the feature `gguf`, [`GgufHeader`] parses a GGUF file's header bytes to provide that
//!   lookup.
//!
//! ```
//! # #[cfg(feature = "serde")] {
//! // HF route: Qwen2.5-7B-Instruct with the model card's YaRN.
//! let json = r#"{"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
//!   "max_position_embeddings": 32768, "rope_theta": 1000000.0,
//!   "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}}"#;
//! let ropes = posenc::load::ropes_from_hf_config(json).unwrap();
//! assert_eq!(*ropes.single().unwrap(), posenc::presets::QWEN2_5_7B_YARN.rope().unwrap());
//! # }
//! ```
//!
//! ```
//! # #[cfg(feature = "gguf")] {
//! // GGUF route: a file's bytes (here only the header) → its metadata → the Rope.
//! use posenc::load::{rope_from_gguf, GgufHeader};
//! # let mut bytes = b"GGUF".to_vec();
//! # bytes.extend(3u32.to_le_bytes()); bytes.extend(0u64.to_le_bytes()); bytes.extend(3u64.to_le_bytes());
//! # let mut kv = |k: &str, ty: u32, v: &[u8]| { bytes.extend((k.len() as u64).to_le_bytes()); bytes.extend(k.as_bytes()); bytes.extend(ty.to_le_bytes()); bytes.extend(v); };
//! # kv("general.architecture", 8, &[&5u64.to_le_bytes()[..], b"qwen2"].concat());
//! # kv("qwen2.attention.key_length", 4, &128u32.to_le_bytes());
//! # kv("qwen2.rope.freq_base", 6, &1e6f32.to_le_bytes());
//! let header = GgufHeader::parse(&bytes).unwrap();
//! let rope = rope_from_gguf(|key| header.get(key), None).unwrap();
//! assert_eq!(rope, posenc::presets::QWEN2_5_7B.rope().unwrap()); // qwen2 is NEOX: rotate_half
//! # }
//! ```
//!
//! **Per layer.** Some models rotate their layers differently: the sliding-window layers of
//! Gemma 3 and 3n, ModernBERT and MiMo-V2 with their own base, OLMo 3's without its YaRN
//! scaling, Gemma 4's full layers over heads twice as wide (and in its GGUF, Step 3.5's over
//! half the channels), DeepSeek-V4's sliding and compressed layers with two ropes; and some
//! leave the queries
//! and keys of some layers unrotated (NoPE): Llama 4 and SmolLM3 every fourth layer, Cohere 2,
//! EXAONE 4 and AFMoE their global layers. A runtime asks per layer:
//! [`HfRopes::for_layer`] (`None` on a NoPE layer; [`HfRopes::rotates`]) on the HF route,
//! [`rope_from_gguf_layer`] (the same; [`gguf_layer_rotates`]) on the GGUF route.
//!
//! Without the `gguf` feature the lookup is any closure, e.g. over the metadata map a GGUF
//! library already built:
//!
//! ```
//! use posenc::load::{rope_from_gguf, GgufValue};
//! let meta = |key: &str| match key {
//!     "general.architecture" => Some(GgufValue::Str("qwen2")),
//!     "qwen2.attention.key_length" => Some(GgufValue::U32(128)),
//!     "qwen2.rope.freq_base" => Some(GgufValue::F32(1e6)),
//!     _ => None,
//! };
//! assert_eq!(rope_from_gguf(meta, None).unwrap(), posenc::presets::QWEN2_5_7B.rope().unwrap());
//! ```
//!
//! ## Where llama.cpp's reading differs from HF's
//! Same model, two runtimes, not quite the same rope:
//! * **Pairing.** llama.cpp's converter permutes Llama-family Q/K weights to interleaved order
//!   (NORM rope), so a Llama GGUF pairs `(2i, 2i+1)` where the HF checkpoint pairs
//!   `(i, i + d/2)`; each is right for its own weights. Qwen, Gemma, Phi-3, GPT-NeoX, OLMo 2
//!   and gpt-oss stay rotate_half (NEOX) in both.
//! * **YaRN in f32.** ggml computes the correction dims with `logf` in f32 and the magnitude
//!   as `get_mscale(s)/(1 + 0.1·ln s)·(1 + 0.1·ln(1/freq_scale))` in f32, where HF uses f64:
//!   the magnitude can differ in the last bit (DeepSeek-V3: HF exactly 1, llama.cpp 1 ± 1 ulp).
//!   The ramp is the same function of `j`; when `hi == lo` HF adds 0.001 to `hi`, ggml divides
//!   by `max(0.001, hi − lo)`, which is the same.
//! * **`truncate = false`** (gpt-oss) has no GGUF key: llama.cpp always floors/ceils the
//!   correction dims, so a gpt-oss GGUF's frequencies differ from HF's in the ramp's pairs.
//! * **`freq_scale = 1/factor`** is rounded to f32 and multiplied (ggml), where HF divides by
//!   the factor: equal for power-of-two factors, otherwise up to 1 ulp apart.
//! * **Base frequencies.** ggml forms `ω_j` as a running f32 product of `powf(b, −2/d)`
//!   (relative error growing with `j`, a few ulp); posenc uses the framework value
//!   `1/f32(b^(2j/d))` on both routes, so this part matches HF, not ggml's accumulated error.
//! * **Frequency factors.** llama.cpp stores llama3 scaling as a `rope_freqs` tensor of
//!   divisors computed by its converter in f64/f32 (its own rounding); LongRoPE models carry
//!   `rope_factors_long`/`rope_factors_short` and choose by context size, where HF chooses
//!   per call. Pass the chosen tensor's values.
//! * **Interleaved M-RoPE (Qwen3-VL).** ggml's IMROPE gives a pair that none of the t/h/w
//!   rules claims (Qwen3-VL's `[24, 20, 20]`: pairs 61 and 62) to a fourth axis, which
//!   llama.cpp sets to 0 for every decoder token: llama.cpp never rotates those pairs, HF
//!   rotates them with t. The GGUF route follows llama.cpp (their frequency underflows to 0).
//! * **Which layers have no rope.** HF reads each model's lists (`no_rope_layers`,
//!   `layer_types`) and its config defaults; llama.cpp hard-codes a period of 4 per
//!   architecture and writes no key for it. They agree on the published checkpoints and
//!   differ where a config departs from the period: a `no_rope_layers` list of another
//!   shape or AFMoE's `global_attn_every_n_layers` other than 4 (llama.cpp: every fourth
//!   regardless), EXAONE 4 (llama.cpp slides only the 64-layer model; HF any config with a
//!   `sliding_window`), Llama 4 with `attention.sliding_window` 0 (see
//!   [`gguf_layer_rotates`]).
//! * **Magnitude in the op.** ggml multiplies cos and sin by the YaRN magnitude inside the
//!   rope op, as posenc's `attention_factor` does, so a K-cache shift with it is not a pure
//!   rotation in either; use [`Rope::shift`](crate::Rope::shift) for shifts.

#[cfg(any(feature = "serde", feature = "gguf"))]
extern crate alloc;

mod gguf;
#[cfg(feature = "gguf")]
mod gguf_file;
#[cfg(feature = "serde")]
mod hf;

pub use gguf::{
    GgufArray, GgufError, GgufErrorKind, GgufType, GgufValue, gguf_layer_rotates, rope_from_gguf,
    rope_from_gguf_layer,
};
#[cfg(feature = "gguf")]
pub use gguf_file::GgufHeader;
#[cfg(feature = "serde")]
pub use hf::{
    ConfigError, ConfigErrorKind, HfOptions, HfRopes, ropes_from_hf_config,
    ropes_from_hf_config_with,
};
