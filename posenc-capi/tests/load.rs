//! The loaders of the C ABI: a model's rope from GGUF bytes and from a `config.json`, each
//! against what posenc's Rust route (or a preset) gives for the same file, and every failure
//! typed, with `*out` untouched.

use core::ffi::CStr;
use core::ptr::null;
use posenc::load::{HfOptions, ropes_from_hf_config_with};
use posenc::presets;
use posenc_capi::*;

/// A GGUF v3 file with no tensors and the given key/values (`(key, type code, value bytes)`).
fn gguf(kvs: &[(&str, u32, Vec<u8>)]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend((kvs.len() as u64).to_le_bytes());
    for (k, ty, v) in kvs {
        b.extend((k.len() as u64).to_le_bytes());
        b.extend(k.as_bytes());
        b.extend(ty.to_le_bytes());
        b.extend(v);
    }
    b
}

fn string(s: &str) -> (u32, Vec<u8>) {
    (
        8,
        [&(s.len() as u64).to_le_bytes()[..], s.as_bytes()].concat(),
    )
}

/// Qwen2.5 7B's rope keys: NEOX pairing, base 1e6, head 128.
fn qwen2() -> Vec<u8> {
    let (t, arch) = string("qwen2");
    gguf(&[
        ("general.architecture", t, arch),
        (
            "qwen2.attention.key_length",
            4,
            128u32.to_le_bytes().to_vec(),
        ),
        ("qwen2.rope.freq_base", 6, 1e6f32.to_le_bytes().to_vec()),
    ])
}

/// A rope struct with a recognisable, uninitialised pattern, to see that failures leave it.
fn sentinel() -> PosencRope {
    let mut r = PosencRope::default();
    // SAFETY: `PosencRope` is plain words; any bytes are a (refused, uninitialised) value.
    unsafe {
        core::ptr::write_bytes(
            &mut r as *mut PosencRope as *mut u8,
            0xA5,
            size_of::<PosencRope>(),
        )
    };
    r
}

fn bytes_of(r: &PosencRope) -> Vec<u8> {
    // SAFETY: reading the plain words of a live struct.
    unsafe {
        core::slice::from_raw_parts(r as *const PosencRope as *const u8, size_of::<PosencRope>())
    }
    .to_vec()
}

fn detail() -> String {
    // SAFETY: never NULL, NUL-terminated, valid until the next failing call on this thread.
    unsafe { CStr::from_ptr(posenc_last_error_detail()) }
        .to_string_lossy()
        .into_owned()
}

fn init_gguf(b: &[u8], freqs: &[f32], out: &mut PosencRope) -> i32 {
    // SAFETY: both slices readable for their lengths; `out` is writable and separate.
    unsafe { posenc_rope_init_gguf(b.as_ptr(), b.len(), freqs.as_ptr(), freqs.len(), out) }
}

fn init_hf(json: &str, layer: usize, opts: Option<&PosencHfOptions>, out: &mut PosencRope) -> i32 {
    let o = opts.map_or(null(), |o| o as *const PosencHfOptions);
    // SAFETY: `json` readable for its length; `o` NULL or a live struct; `out` writable.
    unsafe { posenc_rope_init_hf_config(json.as_ptr().cast(), json.len(), layer, o, out) }
}

fn init_hf_type(json: &str, ty: &CStr, out: &mut PosencRope) -> i32 {
    // SAFETY: as `init_hf`, `ty` NUL-terminated.
    unsafe {
        posenc_rope_init_hf_config_type(json.as_ptr().cast(), json.len(), ty.as_ptr(), null(), out)
    }
}

#[test]
fn gguf_bytes_give_the_files_rope() {
    let mut r = sentinel();
    assert_eq!(init_gguf(&qwen2(), &[], &mut r), POSENC_OK, "{}", detail());
    assert_eq!(r.as_rope(), Some(&presets::QWEN2_5_7B.rope().unwrap()));
    // Bytes past the metadata (tensor infos, data) are not read: a longer buffer is the same.
    let mut long = qwen2();
    long.extend([0xFFu8; 4096]);
    let mut r2 = sentinel();
    assert_eq!(init_gguf(&long, &[], &mut r2), POSENC_OK);
    assert_eq!(r2.as_rope(), r.as_rope());
}

#[test]
fn gguf_frequency_factors_reach_the_rope() {
    // A Llama 3.1 GGUF: NORM pairing (interleaved), base 500000, its `rope_freqs` divisors.
    let (t, arch) = string("llama");
    let b = gguf(&[
        ("general.architecture", t, arch),
        (
            "llama.attention.key_length",
            4,
            128u32.to_le_bytes().to_vec(),
        ),
        ("llama.rope.freq_base", 6, 5e5f32.to_le_bytes().to_vec()),
    ]);
    let factors: Vec<f32> = (0..64).map(|i| if i < 20 { 1.0 } else { 8.0 }).collect();
    let mut plain = sentinel();
    let mut scaled = sentinel();
    assert_eq!(init_gguf(&b, &[], &mut plain), POSENC_OK, "{}", detail());
    assert_eq!(
        init_gguf(&b, &factors, &mut scaled),
        POSENC_OK,
        "{}",
        detail()
    );
    let (p, s) = (plain.as_rope().unwrap(), scaled.as_rope().unwrap());
    assert_eq!(p.layout(), posenc::Layout::Interleaved);
    for (i, (&a, &b)) in p.inv_freq().iter().zip(s.inv_freq()).enumerate() {
        // ggml divides each frequency by its factor.
        assert_eq!(b, a / factors[i], "pair {i}");
    }
    // A factor count that does not match the rotary pairs is the file's error.
    let mut r = sentinel();
    let before = bytes_of(&r);
    assert_eq!(init_gguf(&b, &factors[..63], &mut r), POSENC_ERR_MODEL_FILE);
    assert!(detail().contains("rope_freqs"), "{}", detail());
    assert_eq!(bytes_of(&r), before);
}

#[test]
fn gguf_failures_are_typed_and_write_nothing() {
    let before = bytes_of(&sentinel());
    let check = |b: &[u8], want: i32, names: &str| {
        let mut r = sentinel();
        assert_eq!(init_gguf(b, &[], &mut r), want, "{names}: {}", detail());
        assert!(detail().contains(names), "{names} not in {}", detail());
        assert_eq!(
            bytes_of(&r),
            before,
            "{names}: a failed call wrote the rope"
        );
    };
    let q = qwen2();
    // Truncated anywhere: the header's own error, never a read past the buffer.
    for cut in [0, 3, 4, 10, 24, 40, q.len() - 1] {
        check(&q[..cut], POSENC_ERR_MODEL_FILE, "gguf");
    }
    check(b"GGML\x03\0\0\0", POSENC_ERR_MODEL_FILE, "gguf");
    check(&gguf(&[]), POSENC_ERR_MODEL_FILE, "general.architecture");
    let (t, arch) = string("bloom");
    check(
        &gguf(&[("general.architecture", t, arch)]),
        POSENC_ERR_NO_ROPE,
        "general.architecture",
    );
    let (t, arch) = string("no-such-arch");
    check(
        &gguf(&[("general.architecture", t, arch)]),
        POSENC_ERR_MODEL_FILE,
        "general.architecture",
    );
    // Buffer errors come before the file is read.
    let mut r = sentinel();
    // SAFETY: NULL with a non-zero count is refused before any read.
    let code = unsafe { posenc_rope_init_gguf(null(), 8, null(), 0, &mut r) };
    assert_eq!(code, POSENC_ERR_NULL_POINTER);
    // SAFETY: a NULL `out` is refused before any write.
    let code =
        unsafe { posenc_rope_init_gguf(q.as_ptr(), q.len(), null(), 0, core::ptr::null_mut()) };
    assert_eq!(code, POSENC_ERR_NULL_POINTER);
    // `out` inside the bytes it is read from.
    let mut buf = vec![0u64; 512];
    let n = q.len();
    // SAFETY: `buf` holds the file at its start and has room for a PosencRope after it.
    let code = unsafe {
        let base = buf.as_mut_ptr().cast::<u8>();
        core::ptr::copy_nonoverlapping(q.as_ptr(), base, n);
        posenc_rope_init_gguf(
            base,
            4096,
            null(),
            0,
            buf.as_mut_ptr().add(n.div_ceil(8)).cast(),
        )
    };
    assert_eq!(code, POSENC_ERR_OVERLAPPING_BUFFERS);
}

const LLAMA_3_1: &str = r#"{"model_type": "llama", "hidden_size": 4096,
  "num_attention_heads": 32, "max_position_embeddings": 131072, "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}"#;

/// Gemma 3 4B in the transformers-4 form: local layers θ = 1e4 unscaled, every sixth layer
/// global, θ = 1e6 with linear ×8.
const GEMMA_3: &str = r#"{"model_type": "gemma3_text", "head_dim": 256,
  "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "sliding_window_pattern": 6,
  "num_hidden_layers": 12, "rope_scaling": {"rope_type": "linear", "factor": 8.0}}"#;

#[test]
fn a_config_gives_hfs_rope() {
    let mut r = sentinel();
    assert_eq!(
        init_hf(LLAMA_3_1, 0, None, &mut r),
        POSENC_OK,
        "{}",
        detail()
    );
    assert_eq!(r.as_rope(), Some(&presets::LLAMA_3_1_8B.rope().unwrap()));
    // One rope for every layer: any index, and its type name, give it.
    let mut r2 = sentinel();
    assert_eq!(init_hf(LLAMA_3_1, 1 << 40, None, &mut r2), POSENC_OK);
    assert_eq!(r2.as_rope(), r.as_rope());
    assert_eq!(init_hf_type(LLAMA_3_1, c"default", &mut r2), POSENC_OK);
    assert_eq!(r2.as_rope(), r.as_rope());
    // The text is a length, not a C string: the same config inside a longer buffer.
    let padded = format!("{LLAMA_3_1}\0trailing bytes that are not JSON");
    // SAFETY: the first LLAMA_3_1.len() bytes of `padded` are readable.
    let code = unsafe {
        posenc_rope_init_hf_config(padded.as_ptr().cast(), LLAMA_3_1.len(), 3, null(), &mut r2)
    };
    assert_eq!(code, POSENC_OK, "{}", detail());
    assert_eq!(r2.as_rope(), r.as_rope());
}

#[test]
fn a_config_with_layer_types_gives_each_layer_its_rope() {
    let (local, global) = (
        presets::GEMMA_3_4B_LOCAL.rope().unwrap(),
        presets::GEMMA_3_4B_GLOBAL.rope().unwrap(),
    );
    for layer in 0..12 {
        let mut r = sentinel();
        assert_eq!(
            init_hf(GEMMA_3, layer, None, &mut r),
            POSENC_OK,
            "{}",
            detail()
        );
        let want = if layer % 6 == 5 { &global } else { &local };
        assert_eq!(r.as_rope(), Some(want), "layer {layer}");
    }
    let mut r = sentinel();
    assert_eq!(init_hf_type(GEMMA_3, c"full_attention", &mut r), POSENC_OK);
    assert_eq!(r.as_rope(), Some(&global));
    assert_eq!(
        init_hf_type(GEMMA_3, c"sliding_attention", &mut r),
        POSENC_OK
    );
    assert_eq!(r.as_rope(), Some(&local));
    // Past the layers, or a type the config does not have: refused, nothing written.
    let before = bytes_of(&sentinel());
    let mut r = sentinel();
    assert_eq!(
        init_hf(GEMMA_3, 12, None, &mut r),
        POSENC_ERR_PARAMETER_OUT_OF_RANGE
    );
    assert!(detail().contains("layer"), "{}", detail());
    assert_eq!(
        init_hf_type(GEMMA_3, c"default", &mut r),
        POSENC_ERR_PARAMETER_OUT_OF_RANGE
    );
    assert!(detail().contains("layer_type"), "{}", detail());
    assert_eq!(bytes_of(&r), before);
}

#[test]
fn the_options_are_hfs_run_time_choices() {
    // Phi-3-mini-128k: LongRoPE short and long factors; dynamic NTK for Llama 2-style configs.
    let short: Vec<String> = (0..48)
        .map(|i| format!("{:.3}", 1.0 + i as f32 * 0.01))
        .collect();
    let long: Vec<String> = (0..48)
        .map(|i| format!("{:.3}", 1.0 + i as f32 * 0.5))
        .collect();
    let phi3 = format!(
        r#"{{"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0, "rope_scaling": {{"type": "longrope",
        "short_factor": [{}], "long_factor": [{}]}}}}"#,
        short.join(", "),
        long.join(", ")
    );
    let dynamic = r#"{"model_type": "llama", "head_dim": 128, "max_position_embeddings": 4096,
        "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}"#;
    for (json, opts) in [
        (
            phi3.as_str(),
            PosencHfOptions {
                use_long_factors: 1,
                seq_len: 0,
            },
        ),
        (
            phi3.as_str(),
            PosencHfOptions {
                use_long_factors: 0,
                seq_len: 0,
            },
        ),
        (
            dynamic,
            PosencHfOptions {
                use_long_factors: 0,
                seq_len: 16384,
            },
        ),
        (dynamic, PosencHfOptions::default()),
    ] {
        let rust = HfOptions {
            use_long_factors: opts.use_long_factors != 0,
            seq_len: (opts.seq_len != 0).then_some(opts.seq_len),
        };
        let want = *ropes_from_hf_config_with(json, &rust)
            .unwrap()
            .single()
            .unwrap();
        let mut r = sentinel();
        assert_eq!(
            init_hf(json, 0, Some(&opts), &mut r),
            POSENC_OK,
            "{}",
            detail()
        );
        assert_eq!(r.as_rope(), Some(&want), "{opts:?}");
    }
    // The options change the rope (so the comparisons above can tell them apart).
    let mut a = sentinel();
    let mut b = sentinel();
    let long_opts = PosencHfOptions {
        use_long_factors: 1,
        seq_len: 0,
    };
    assert_eq!(init_hf(&phi3, 0, Some(&long_opts), &mut a), POSENC_OK);
    assert_eq!(init_hf(&phi3, 0, None, &mut b), POSENC_OK);
    assert_ne!(a.as_rope(), b.as_rope());
    let ntk = PosencHfOptions {
        use_long_factors: 0,
        seq_len: 16384,
    };
    assert_eq!(init_hf(dynamic, 0, Some(&ntk), &mut a), POSENC_OK);
    assert_eq!(init_hf(dynamic, 0, None, &mut b), POSENC_OK);
    assert_ne!(a.as_rope(), b.as_rope());
}

#[test]
fn config_failures_are_typed_and_write_nothing() {
    let before = bytes_of(&sentinel());
    let check = |json: &[u8], want: i32, names: &str| {
        let mut r = sentinel();
        // SAFETY: `json` readable for its length; `r` writable.
        let code = unsafe {
            posenc_rope_init_hf_config(json.as_ptr().cast(), json.len(), 0, null(), &mut r)
        };
        assert_eq!(code, want, "{names}: {}", detail());
        assert!(detail().contains(names), "{names} not in {}", detail());
        assert_eq!(
            bytes_of(&r),
            before,
            "{names}: a failed call wrote the rope"
        );
    };
    check(b"{", POSENC_ERR_MODEL_FILE, "config.json");
    check(b"[1, 2]", POSENC_ERR_MODEL_FILE, "config.json");
    check(
        b"{\"head_dim\": 64, \"x\": \"\xff\"}",
        POSENC_ERR_MODEL_FILE,
        "UTF-8",
    );
    check(br#"{"head_dim": 63}"#, POSENC_ERR_MODEL_FILE, "head_dim");
    check(
        br#"{"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factr": 4.0}}"#,
        POSENC_ERR_MODEL_FILE,
        "rope_scaling",
    );
    check(
        br#"{"head_dim": 64, "rope_theta": "big"}"#,
        POSENC_ERR_MODEL_FILE,
        "rope_theta",
    );
    check(
        br#"{"head_dim": 64, "position_embedding_type": "absolute"}"#,
        POSENC_ERR_NO_ROPE,
        "position_embedding_type",
    );
    check(
        br#"{"model_type": "gpt2", "n_embd": 768, "n_head": 12}"#,
        POSENC_ERR_NO_ROPE,
        "model_type",
    );
    check(
        br#"{"head_dim": 64, "position_embedding_type": 3}"#,
        POSENC_ERR_MODEL_FILE,
        "position_embedding_type",
    );
    let mut r = sentinel();
    // SAFETY: NULL with a non-zero count is refused before any read.
    let code = unsafe { posenc_rope_init_hf_config(null(), 5, 0, null(), &mut r) };
    assert_eq!(code, POSENC_ERR_NULL_POINTER);
    // SAFETY: a NULL type name is refused before any read.
    let code =
        unsafe { posenc_rope_init_hf_config_type(c"{}".as_ptr(), 2, null(), null(), &mut r) };
    assert_eq!(code, POSENC_ERR_NULL_POINTER);
    assert_eq!(bytes_of(&r), before);
}

#[test]
fn the_new_codes_have_messages() {
    for code in [POSENC_ERR_MODEL_FILE, POSENC_ERR_NO_ROPE] {
        // SAFETY: never NULL, static, NUL-terminated.
        let m = unsafe { CStr::from_ptr(posenc_error_message(code)) }
            .to_str()
            .unwrap();
        assert!(!m.contains("unknown"), "{code}: {m}");
        assert!(ALL_ERROR_CODES.contains(&code));
    }
}

/// A NoPE layer (no position encoding) is `POSENC_ERR_NO_ROPE` from `config.json`, and
/// `posenc_gguf_layer_rotates` says 0 for it: Llama 4 and SmolLM3 leave every fourth layer
/// unrotated in both runtimes (HF's `no_rope_layers` default, llama.cpp's step of 4).
#[test]
fn nope_layers_are_reported_per_layer() {
    let json = r#"{"model_type": "llama4", "text_config": {"model_type": "llama4_text",
        "head_dim": 128, "num_hidden_layers": 8, "rope_theta": 500000.0}}"#;
    let want = ropes_from_hf_config_with(json, &HfOptions::default()).unwrap();
    for layer in 0..8usize {
        let mut r = sentinel();
        let before = bytes_of(&r);
        let code = init_hf(json, layer, None, &mut r);
        if (layer + 1) % 4 == 0 {
            assert_eq!(code, POSENC_ERR_NO_ROPE, "layer {layer}");
            assert!(detail().contains("NoPE"), "{}", detail());
            assert_eq!(
                bytes_of(&r),
                before,
                "layer {layer}: a failed call wrote the rope"
            );
        } else {
            assert_eq!(code, POSENC_OK, "layer {layer}: {}", detail());
            assert_eq!(r.as_rope(), want.single());
        }
    }

    let (t, arch) = string("smollm3");
    let file = gguf(&[
        ("general.architecture", t, arch),
        ("smollm3.block_count", 4, 8u32.to_le_bytes().to_vec()),
    ]);
    let rotates = |layer: u32| -> (i32, i32) {
        let mut out = -7;
        // SAFETY: `file` is readable for its length; `out` is a writable int.
        let code = unsafe { posenc_gguf_layer_rotates(file.as_ptr(), file.len(), layer, &mut out) };
        (code, out)
    };
    let got: Vec<(i32, i32)> = (0..8).map(rotates).collect();
    let want: Vec<(i32, i32)> = (0..8)
        .map(|l| (POSENC_OK, i32::from((l + 1) % 4 != 0)))
        .collect();
    assert_eq!(got, want);
    // Past the file's block count: an error, `*rotates` untouched.
    assert_eq!(rotates(8), (POSENC_ERR_MODEL_FILE, -7));
    assert!(detail().contains("block_count"), "{}", detail());
    // An architecture without rope, a truncated file, NULL pointers.
    let (t, arch) = string("bloom");
    let bloom = gguf(&[("general.architecture", t, arch)]);
    let mut out = -7;
    // SAFETY: readable bytes, writable int.
    let code = unsafe { posenc_gguf_layer_rotates(bloom.as_ptr(), bloom.len(), 0, &mut out) };
    assert_eq!((code, out), (POSENC_ERR_NO_ROPE, -7));
    // SAFETY: as above, a prefix of the file.
    let code = unsafe { posenc_gguf_layer_rotates(file.as_ptr(), 10, 0, &mut out) };
    assert_eq!((code, out), (POSENC_ERR_MODEL_FILE, -7));
    // SAFETY: NULL with a non-zero count, and a NULL `rotates`, are refused before any access.
    let code = unsafe { posenc_gguf_layer_rotates(null(), 8, 0, &mut out) };
    assert_eq!((code, out), (POSENC_ERR_NULL_POINTER, -7));
    // SAFETY: as above.
    let code =
        unsafe { posenc_gguf_layer_rotates(file.as_ptr(), file.len(), 0, core::ptr::null_mut()) };
    assert_eq!(code, POSENC_ERR_NULL_POINTER);
}

/// `posenc_rope_init_gguf_layer`: Gemma 3's sliding-window layers have their own rope (the
/// local-layer preset), its global ones the file's; a NoPE layer is `POSENC_ERR_NO_ROPE`.
#[test]
fn gguf_layers_get_their_rope() {
    let (t, arch) = string("gemma3");
    let (lt, linear) = string("linear");
    let file = gguf(&[
        ("general.architecture", t, arch),
        ("gemma3.block_count", 4, 34u32.to_le_bytes().to_vec()),
        (
            "gemma3.attention.key_length",
            4,
            256u32.to_le_bytes().to_vec(),
        ),
        ("gemma3.rope.freq_base", 6, 1e6f32.to_le_bytes().to_vec()),
        ("gemma3.rope.scaling.type", lt, linear),
        ("gemma3.rope.scaling.factor", 6, 8f32.to_le_bytes().to_vec()),
    ]);
    let init = |b: &[u8], layer: u32, out: &mut PosencRope| {
        // SAFETY: `b` is readable for its length; `out` is a writable rope.
        unsafe { posenc_rope_init_gguf_layer(b.as_ptr(), b.len(), null(), 0, layer, out) }
    };
    let (local, global) = (
        presets::GEMMA_3_4B_LOCAL.rope().unwrap(),
        presets::GEMMA_3_4B_GLOBAL.rope().unwrap(),
    );
    for layer in 0..34 {
        let mut r = sentinel();
        assert_eq!(init(&file, layer, &mut r), POSENC_OK, "{}", detail());
        let want = if layer % 6 == 5 { &global } else { &local };
        assert_eq!(r.as_rope(), Some(want), "layer {layer}");
    }
    let mut r = sentinel();
    let before = bytes_of(&r);
    assert_eq!(init(&file, 34, &mut r), POSENC_ERR_MODEL_FILE);
    assert_eq!(bytes_of(&r), before);

    let (t, arch) = string("smollm3");
    let smol = gguf(&[
        ("general.architecture", t, arch),
        ("smollm3.block_count", 4, 8u32.to_le_bytes().to_vec()),
        (
            "smollm3.attention.key_length",
            4,
            128u32.to_le_bytes().to_vec(),
        ),
    ]);
    assert_eq!(init(&smol, 3, &mut r), POSENC_ERR_NO_ROPE);
    assert!(detail().contains("NoPE"), "{}", detail());
    assert_eq!(bytes_of(&r), before, "a NoPE layer wrote the rope");
    assert_eq!(init(&smol, 2, &mut r), POSENC_OK, "{}", detail());
    // SAFETY: NULL with a non-zero count is refused before any read.
    let code = unsafe { posenc_rope_init_gguf_layer(null(), 8, null(), 0, 0, &mut r) };
    assert_eq!(code, POSENC_ERR_NULL_POINTER);
}
