//! A model's rope from the files a runtime starts from: GGUF metadata (llama.cpp's keys and
//! semantics) and a HuggingFace `config.json` (HF's), through `posenc::load`.
//!
//! Each entry point validates its buffers, reads the file, builds the `Rope` and only then
//! writes `*out`; a file that describes no rope (an ALiBi model, a BERT-style config) is
//! `POSENC_ERR_NO_ROPE`, any other problem with the file `POSENC_ERR_MODEL_FILE`, with the
//! offending key in `posenc_last_error_detail`.

use crate::error::{Fail, run};
use crate::raw::Raw;
use crate::rope::PosencRope;
use core::ffi::{CStr, c_char, c_int};
use posenc::Rope;
use posenc::load::{
    ConfigError, ConfigErrorKind, GgufError, GgufErrorKind, GgufHeader, HfOptions, HfRopes,
    gguf_layer_rotates, rope_from_gguf, rope_from_gguf_layer, ropes_from_hf_config_with,
};
use std::format;

/// The run-time choices HF makes for a `config.json` (posenc's `load::HfOptions`), for
/// `posenc_rope_init_hf_config`. All zero (or a NULL pointer) is HF's `inv_freq` buffer as
/// the model is loaded.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PosencHfOptions {
    /// LongRoPE: non-zero to use `long_factor` (HF switches to it once `max(position) + 1`
    /// exceeds `original_max_position_embeddings`); zero for `short_factor`.
    pub use_long_factors: c_int,
    /// Dynamic NTK: the sequence length to compute the base for; 0 for
    /// `max_position_embeddings` (unscaled).
    pub seq_len: u32,
}

/// Writes `rope` to `out` (checked by `Raw::one`, writable by the caller's contract).
///
/// # Safety
/// `out` is writable for a `PosencRope` and nothing else reads or writes it during the call.
unsafe fn store(out: &Raw<PosencRope>, rope: Rope) {
    // SAFETY: non-NULL and aligned (Raw::one); writable and unshared (this fn's contract).
    unsafe { out.ptr().write(PosencRope::new(rope)) };
}

/// Fills `*out` with the rope a GGUF file's metadata describes, with llama.cpp's semantics:
/// its pairing per architecture (`NORM` rope is interleaved, `NEOX` rotate_half), its YaRN
/// ramp, correction dims and magnitude, its LongRoPE and M-RoPE keys.
///
/// `bytes` is the start of the file (at least its header and metadata; the whole file, mapped,
/// will do: tensor infos and data are not read). `rope_freqs` is the file's `rope_freqs.weight`
/// tensor as floats (llama3-style frequency factors; for LongRoPE files, the
/// `rope_factors_long` or `rope_factors_short` values you choose), or NULL with 0 when the file
/// has none. Where llama.cpp's reading of a model differs from HF's is listed in posenc's
/// `load` module docs. For a model whose layers rotate differently (Gemma 3's and OLMo 3's
/// sliding-window layers; NoPE layers) this is the global layers' rope:
/// `posenc_rope_init_gguf_layer` gives each layer's.
///
/// Returns `POSENC_OK`; `POSENC_ERR_NO_ROPE` for an architecture llama.cpp runs without RoPE;
/// `POSENC_ERR_MODEL_FILE` for malformed or truncated bytes, a missing key, a key of the wrong
/// type or out of range (the detail names it); or a buffer error. Nothing is written on error.
///
/// # Safety
/// `bytes` points to `n_bytes` readable bytes and `rope_freqs` to `n_rope_freqs` readable
/// floats (either NULL when its count is 0); `out` points to a writable `PosencRope` that
/// overlaps neither.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_init_gguf(
    bytes: *const u8,
    n_bytes: usize,
    rope_freqs: *const f32,
    n_rope_freqs: usize,
    out: *mut PosencRope,
) -> c_int {
    // SAFETY: this function's contract.
    run(|| unsafe { init_from_gguf(bytes, n_bytes, rope_freqs, n_rope_freqs, None, out) })
}

/// The two GGUF entry points' shared body: validates the buffers, reads the header, builds
/// the file's rope (`layer` `None`) or that layer's, and only then writes `*out`.
///
/// # Safety
/// As `posenc_rope_init_gguf`.
unsafe fn init_from_gguf(
    bytes: *const u8,
    n_bytes: usize,
    rope_freqs: *const f32,
    n_rope_freqs: usize,
    layer: Option<u32>,
    out: *mut PosencRope,
) -> Result<(), Fail> {
    let b = Raw::new(bytes, n_bytes, "bytes")?;
    let f = Raw::new(rope_freqs, n_rope_freqs, "rope_freqs")?;
    let o = Raw::one(out.cast_const(), "out")?;
    o.disjoint(&b)?;
    o.disjoint(&f)?;
    // SAFETY: checked by Raw::new, readable (contract), not overlapping `out`, the only
    // buffer written.
    let (b, f) = unsafe { (b.as_slice(), f.as_slice()) };
    let header = GgufHeader::parse(b).map_err(|e| Fail::ModelFile(format!("{e}")))?;
    let (get, freqs) = (|key: &str| header.get(key), (!f.is_empty()).then_some(f));
    let rope = match layer {
        None => rope_from_gguf(get, freqs).map_err(gguf_fail)?,
        Some(l) => rope_from_gguf_layer(get, freqs, l)
            .map_err(gguf_fail)?
            .ok_or_else(|| nope(l))?,
    };
    // SAFETY: `o` is the caller's writable `out` (contract), disjoint from both inputs.
    unsafe { store(&o, rope) };
    Ok(())
}

/// `posenc_rope_init_gguf` for decoder layer `layer` (from 0): the rope llama.cpp applies
/// there, which differs from the file's on the sliding-window layers of Gemma 3 (their own
/// base, unscaled) and OLMo 3 (no YaRN scaling); posenc's `rope_from_gguf_layer` lists the
/// rules.
///
/// Returns as `posenc_rope_init_gguf`, and `POSENC_ERR_NO_ROPE` for a layer llama.cpp runs
/// without rope (a NoPE layer, see `posenc_gguf_layer_rotates`), `POSENC_ERR_MODEL_FILE` for
/// a `layer` not below the file's `block_count`. Nothing is written on error.
///
/// # Safety
/// As `posenc_rope_init_gguf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_init_gguf_layer(
    bytes: *const u8,
    n_bytes: usize,
    rope_freqs: *const f32,
    n_rope_freqs: usize,
    layer: u32,
    out: *mut PosencRope,
) -> c_int {
    // SAFETY: this function's contract.
    run(|| unsafe { init_from_gguf(bytes, n_bytes, rope_freqs, n_rope_freqs, Some(layer), out) })
}

/// The `Fail` of a layer that runs without rope.
fn nope(layer: impl core::fmt::Display) -> Fail {
    Fail::NoRope(format!(
        "layer {layer} runs without position encoding (a NoPE layer)"
    ))
}

/// The `Fail` of a GGUF error: an architecture without RoPE describes a model without a
/// rope; everything else is a problem with the file.
fn gguf_fail(e: GgufError) -> Fail {
    match e.kind {
        GgufErrorKind::NoRope => Fail::NoRope(format!("{e}")),
        _ => Fail::ModelFile(format!("{e}")),
    }
}

/// Sets `*rotates` to 1 if llama.cpp applies the rope at decoder layer `layer` (from 0) of a
/// GGUF model, 0 for a layer its graph runs without position encoding (NoPE: every fourth
/// layer of Llama 4, SmolLM3 and AFMoE, the dense layers of Cohere 2 and of EXAONE 4.0 32B),
/// whose queries and keys a runtime must leave unrotated. `bytes` as for
/// `posenc_rope_init_gguf`; the rules per architecture are posenc's `gguf_layer_rotates`.
///
/// Returns `POSENC_OK`; `POSENC_ERR_NO_ROPE` for an architecture llama.cpp runs without RoPE;
/// `POSENC_ERR_MODEL_FILE` for malformed or truncated bytes, a key of the wrong type, or a
/// `layer` not below the file's `block_count` (the detail names the key); or a buffer error.
/// Nothing is written on error.
///
/// # Safety
/// `bytes` points to `n_bytes` readable bytes (NULL when 0); `rotates` points to a writable
/// `int` that does not overlap them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_gguf_layer_rotates(
    bytes: *const u8,
    n_bytes: usize,
    layer: u32,
    rotates: *mut c_int,
) -> c_int {
    run(|| {
        let b = Raw::new(bytes, n_bytes, "bytes")?;
        let o = Raw::one(rotates.cast_const(), "rotates")?;
        o.disjoint(&b)?;
        // SAFETY: checked by Raw::new, readable (contract), not overlapping `rotates`.
        let b = unsafe { b.as_slice() };
        let header = GgufHeader::parse(b).map_err(|e| Fail::ModelFile(format!("{e}")))?;
        let r = gguf_layer_rotates(|key| header.get(key), layer).map_err(gguf_fail)?;
        // SAFETY: non-NULL and aligned (Raw::one), writable and disjoint from `bytes`
        // (contract, checked above).
        unsafe { o.ptr().write(c_int::from(r)) };
        Ok(())
    })
}

/// The `Fail` of a `config.json` error: a config of a model without rotary embeddings
/// ([`ConfigErrorKind::NoRope`]) is no rope to build; everything else is a problem with the
/// file.
fn config_fail(e: ConfigError) -> Fail {
    if e.kind == ConfigErrorKind::NoRope {
        Fail::NoRope(format!("{e}"))
    } else {
        Fail::ModelFile(format!("{e}"))
    }
}

/// The body both `config.json` entry points share: validates `json`, `options` and `out`,
/// reads the config, and writes the rope `pick` chooses from it.
///
/// # Safety
/// As `posenc_rope_init_hf_config` for `json`, `n_json`, `options` and `out`.
unsafe fn init_from_config(
    json: *const c_char,
    n_json: usize,
    options: *const PosencHfOptions,
    out: *mut PosencRope,
    pick: impl FnOnce(&HfRopes) -> Result<Rope, Fail>,
) -> Result<(), Fail> {
    let j = Raw::new(json, n_json, "json")?;
    let o = Raw::one(out.cast_const(), "out")?;
    o.disjoint(&j)?;
    let opts = if options.is_null() {
        PosencHfOptions::default()
    } else {
        let r = Raw::one(options, "options")?;
        o.disjoint(&r)?;
        // SAFETY: non-NULL and aligned (Raw::one), readable (contract); copied by value.
        unsafe { r.ptr().read() }
    };
    // SAFETY: checked by Raw::new, readable (contract), not overlapping `out`.
    let chars = unsafe { j.as_slice() };
    // SAFETY: the same bytes: `c_char` and `u8` have one size and alignment.
    let text: &[u8] = unsafe { core::slice::from_raw_parts(chars.as_ptr().cast(), chars.len()) };
    let text = core::str::from_utf8(text)
        .map_err(|e| Fail::ModelFile(format!("config.json: not UTF-8 ({e})")))?;
    let options = HfOptions {
        use_long_factors: opts.use_long_factors != 0,
        seq_len: (opts.seq_len != 0).then_some(opts.seq_len),
    };
    let ropes = ropes_from_hf_config_with(text, &options).map_err(config_fail)?;
    let rope = pick(&ropes)?;
    // SAFETY: `o` is the caller's writable `out` (contract), disjoint from the inputs, which
    // are no longer read.
    unsafe { store(&o, rope) };
    Ok(())
}

/// Fills `*out` with the rope of decoder layer `layer` that a HuggingFace `config.json`
/// describes, with HF's semantics: its `inv_freq` buffer, attention factor and pairing (see
/// posenc's `load::ropes_from_hf_config_with` for the keys read: transformers-4 `rope_theta`,
/// `rope_scaling`, `partial_rotary_factor`, … or transformers-5 `rope_parameters`; a
/// multimodal config's `text_config` first).
///
/// `json` is the file's UTF-8 text, `n_json` bytes (no terminating NUL needed). Most models
/// have one rope for every layer, and any `layer` gets it; models whose layer types rotate
/// differently (Gemma 3's local and global layers) get the rope of `layer`'s type, through the
/// config's `layer_types` (or `sliding_window_pattern`). `options` is NULL for HF's choices at
/// load time, or points to the run-time choices HF makes (LongRoPE's long factors, the
/// dynamic-NTK sequence length).
///
/// Returns `POSENC_OK`; `POSENC_ERR_NO_ROPE` for a model without rotary embeddings (a family
/// that never rotates, such as GPT-2 or BLOOM, or a `position_embedding_type` other than
/// `"rope"`), or when `layer` runs without position encoding (a NoPE layer: Llama 4's and SmolLM3's
/// every fourth, the global layers of Cohere 2, EXAONE 4 and AFMoE; its queries and keys stay
/// unrotated); `POSENC_ERR_MODEL_FILE` for text that is not UTF-8 or not JSON, or a rope setting that is
/// missing, of the wrong type, unknown, contradictory or out of range (the detail names the
/// key); `POSENC_ERR_PARAMETER_OUT_OF_RANGE` when the model has several ropes and `layer` is
/// past its `layer_types` or of a type the config gives no rope settings (a layer without
/// attention); or a buffer error. Nothing is written on error.
///
/// # Safety
/// `json` points to `n_json` readable bytes (NULL when 0); `options` is NULL or points to a
/// readable `PosencHfOptions`; `out` points to a writable `PosencRope` that overlaps neither.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_init_hf_config(
    json: *const c_char,
    n_json: usize,
    layer: usize,
    options: *const PosencHfOptions,
    out: *mut PosencRope,
) -> c_int {
    run(|| {
        // SAFETY: this function's contract.
        unsafe {
            init_from_config(json, n_json, options, out, |ropes| {
                if !ropes.rotates(layer) {
                    return Err(nope(layer));
                }
                ropes.for_layer(layer).copied().ok_or(Fail::Posenc(
                    posenc::Error::ParameterOutOfRange {
                        what: "layer",
                        constraint: "must index the config's layer_types, at a type with rope \
                                     settings, when its layers rotate differently",
                        value: layer as f32,
                    },
                ))
            })
        }
    })
}

/// `posenc_rope_init_hf_config` by layer type instead of layer index: the rope of the layer
/// type named `layer_type` (NUL-terminated, as the config names it: `"default"` for a model
/// with one rope, Gemma 3's `"sliding_attention"` and `"full_attention"`, or the keys of a
/// transformers-5 `rope_parameters` dict).
///
/// Returns as `posenc_rope_init_hf_config`, with `POSENC_ERR_PARAMETER_OUT_OF_RANGE` for a
/// layer type the config does not have.
///
/// # Safety
/// `layer_type` is a readable NUL-terminated string; otherwise as
/// `posenc_rope_init_hf_config`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_init_hf_config_type(
    json: *const c_char,
    n_json: usize,
    layer_type: *const c_char,
    options: *const PosencHfOptions,
    out: *mut PosencRope,
) -> c_int {
    run(|| {
        let t = Raw::one(layer_type, "layer_type")?;
        // SAFETY: non-NULL (Raw::one), NUL-terminated and readable (contract).
        let name = unsafe { CStr::from_ptr(t.ptr()) };
        // SAFETY: this function's contract; the name is read before `out` is written.
        unsafe {
            init_from_config(json, n_json, options, out, |ropes| {
                name.to_str()
                    .ok()
                    .and_then(|n| ropes.get(n))
                    .copied()
                    .ok_or(Fail::Posenc(posenc::Error::ParameterOutOfRange {
                        what: "layer_type",
                        constraint: "must be a layer type of the config",
                        value: f32::NAN,
                    }))
            })
        }
    })
}
