//! `load::ropes_from_hf_config` on published `config.json` files (`tests/data/configs`; which
//! are verbatim copies and which are reconstructions, and from where, in its `SOURCES.md`):
//! each must build the Rope of the matching preset (whose values are checked against HF's
//! buffers elsewhere) or, for the default scheme, HF's `inv_freq` formula evaluated here in
//! f64; and bad input must be a typed error naming the key, never a panic.
#![cfg(feature = "serde")]

use posenc::load::{ConfigErrorKind, HfOptions, ropes_from_hf_config, ropes_from_hf_config_with};
use posenc::presets::{self, Preset};
use posenc::{Error, Rope};
use std::path::PathBuf;

fn text(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/configs")
        .join(format!("{name}.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn single(name: &str) -> Rope {
    let ropes = ropes_from_hf_config(&text(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(ropes.len(), 1, "{name}: {ropes:?}");
    *ropes.single().unwrap()
}

/// Full equality (inv_freq bitwise, attention factor, layout, dims, axes) plus the fields
/// spelled out, so a failure says which.
fn assert_preset(name: &str, got: &Rope, p: &Preset<'_>) {
    let want = p.rope().unwrap();
    assert_eq!(got.head_dim(), want.head_dim(), "{name}: head_dim");
    assert_eq!(got.rotary_dim(), want.rotary_dim(), "{name}: rotary_dim");
    assert_eq!(got.layout(), want.layout(), "{name}: layout");
    assert_eq!(got.axes(), want.axes(), "{name}: axes");
    let bits = |r: &Rope| r.inv_freq().iter().map(|w| w.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(got), bits(&want), "{name}: inv_freq");
    assert_eq!(
        got.attention_factor().to_bits(),
        want.attention_factor().to_bits(),
        "{name}: attention factor"
    );
    assert_eq!(*got, want, "{name}");
}

#[test]
fn published_configs_build_their_presets() {
    let cases: &[(&str, Preset<'static>)] = &[
        ("llama-2-7b-hf", presets::LLAMA_2_7B),
        ("meta-llama-3-8b", presets::LLAMA_3_8B),
        ("llama-3.1-8b", presets::LLAMA_3_1_8B),
        ("llama-3.1-8b.transformers5", presets::LLAMA_3_1_8B),
        ("llama-3.2-1b", presets::LLAMA_3_2_1B),
        ("llama-3.2-3b", presets::LLAMA_3_2_3B),
        ("mistral-7b-v0.1", presets::MISTRAL_7B_V0_1),
        ("mistral-7b-v0.3", presets::MISTRAL_7B_V0_3),
        ("qwen2.5-7b-instruct", presets::QWEN2_5_7B),
        ("qwen2.5-7b", presets::QWEN2_5_7B),
        ("qwen2.5-7b-instruct-yarn", presets::QWEN2_5_7B_YARN),
        ("qwen2-vl-7b-instruct", presets::QWEN2_VL_7B),
        ("qwen3-vl-8b-instruct", presets::QWEN3_VL_8B),
        ("deepseek-v3", presets::DEEPSEEK_V3),
        ("gpt-oss-20b", presets::GPT_OSS_20B),
        ("gemma-2-9b", presets::GEMMA_2_9B),
        ("gpt-neox-20b", presets::GPT_NEOX_20B),
        ("gpt-j-6b", presets::GPT_J_6B),
        ("gpt-j-6b.third-party-copy", presets::GPT_J_6B),
        ("glm-4-9b-0414", presets::GLM_4_9B),
        // No preset of their own: HF's default inv_freq for (θ, d) is the one of a preset
        // with the same θ, d and pairing.
        ("qwen3-8b", presets::QWEN2_5_7B),
        ("qwen3-8b-base", presets::QWEN2_5_7B),
        ("olmo-2-1124-7b", presets::LLAMA_3_8B),
    ];
    for (name, p) in cases {
        assert_preset(name, &single(name), p);
    }
}

/// The default scheme against HF's formula itself, `inv_freq[j] = 1 / θ^(2j/r)` with `r` the
/// rotary dim, `int(head_dim * partial_rotary_factor)`, rotate_half pairing, attention factor 1.
/// HF evaluates it in f32: the exponent `2j/r` is rounded to f32 first (exact when `r` is a
/// power of two, not for Phi-3's 96), then the power and the reciprocal each round once. So the
/// reference here is `1 / θ^e` in f64 at HF's f32 exponent `e`, within an f32 epsilon. Several files give a
/// `head_dim` that is not `hidden_size / num_attention_heads` (Qwen3, GLM-4.5, Qwen3-Next), so
/// reading the wrong key changes `d`.
#[test]
fn default_configs_match_hfs_inv_freq_formula() {
    // (file, θ, head_dim, rotary dim)
    for (name, theta, d, r) in [
        ("llama-2-7b-hf", 1e4, 128, 128),
        ("qwen2.5-7b", 1e6, 128, 128),
        ("qwen3-8b", 1e6, 128, 128),
        ("qwen3-8b-base", 1e6, 128, 128),
        ("qwen3-0.6b", 1e6, 128, 128),
        ("qwen3-235b-a22b", 1e6, 128, 128),
        ("olmo-2-1124-7b", 5e5, 128, 128),
        ("meta-llama-3-8b", 5e5, 128, 128),
        ("mistral-7b-v0.1", 1e4, 128, 128),
        ("phi-3-mini-4k-instruct", 1e4, 96, 96),
        ("lfm2-1.2b", 1e6, 64, 64),
        ("gemma-2-9b", 1e4, 256, 256),
        // Partial rotary with rotate_half pairing: GLM-4.5 (glm4_moe) takes GPT-NeoX's
        // `apply_rotary_pos_emb`, Qwen3-Next Bamba's (unlike GLM-4, which pairs adjacent lanes).
        ("glm-4.5-air", 1e6, 128, 64),
        ("qwen3-next-80b-a3b", 1e7, 256, 64),
    ] {
        let rope = single(name);
        assert_eq!(rope.head_dim(), d, "{name}");
        assert_eq!(rope.rotary_dim(), r, "{name}");
        assert_eq!(rope.layout(), posenc::Layout::RotateHalf, "{name}");
        assert_eq!(rope.attention_factor(), 1.0, "{name}");
        assert_eq!(rope.inv_freq().len(), r / 2, "{name}");
        for (j, &w) in rope.inv_freq().iter().enumerate() {
            let e = ((2 * j) as f32 / r as f32) as f64;
            let hf = 1.0 / f64::powf(theta, e);
            let rel = ((w as f64 - hf) / hf).abs();
            assert!(
                rel <= f32::EPSILON as f64,
                "{name}: pair {j}: {w} vs {hf} (rel {rel:e})"
            );
        }
    }
}

#[test]
fn gemma3_has_a_rope_per_layer_type_in_both_forms() {
    // The unsloth copy spells out what Google's file leaves to the class defaults
    // (`head_dim`, `rope_theta`, `rope_local_base_freq`, `sliding_window_pattern`).
    for name in [
        "gemma-3-4b-it",
        "gemma-3-4b-it.transformers5",
        "gemma-3-4b-it.unsloth",
    ] {
        let ropes = ropes_from_hf_config(&text(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(ropes.len(), 2, "{name}");
        assert!(ropes.single().is_none());
        assert_preset(
            name,
            ropes.get("sliding_attention").unwrap(),
            &presets::GEMMA_3_4B_LOCAL,
        );
        assert_preset(
            name,
            ropes.get("full_attention").unwrap(),
            &presets::GEMMA_3_4B_GLOBAL,
        );
    }
    // The v4 file has no layer_types: HF's sliding_window_pattern 6 applies (every 6th is global).
    for name in ["gemma-3-4b-it", "gemma-3-4b-it.unsloth"] {
        let ropes = ropes_from_hf_config(&text(name)).unwrap();
        assert_eq!(ropes.layer_types().len(), 34, "{name}");
        assert_eq!(ropes.for_layer(5), ropes.get("full_attention"), "{name}");
        assert_eq!(ropes.for_layer(4), ropes.get("sliding_attention"), "{name}");
        assert_eq!(ropes.for_layer(34), None, "{name}");
    }
}

/// A per-type `rope_parameters` and a `layer_types` entry it has no settings for (a layer
/// without attention, or a misspelt name, as the fuzzer wrote it): the config reads, and that
/// layer has no rope while the others keep theirs.
#[test]
fn a_layer_type_without_rope_settings_has_no_rope() {
    let json = r#"{"model_type": "gemma3_text", "head_dim": 256,
        "layer_types": ["slidi0ng_attention", "full_attention", "sliding_attention"],
        "rope_parameters": {
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}}}"#;
    let ropes = ropes_from_hf_config(json).unwrap();
    assert_eq!(ropes.len(), 2);
    assert_eq!(ropes.for_layer(0), None);
    assert_eq!(ropes.for_layer(1), ropes.get("full_attention"));
    assert_eq!(ropes.for_layer(2), ropes.get("sliding_attention"));
    assert!(ropes.for_layer(1).is_some() && ropes.for_layer(2).is_some());
}

#[test]
fn gpt_oss_layer_types_share_one_rope() {
    let ropes = ropes_from_hf_config(&text("gpt-oss-20b")).unwrap();
    assert_eq!(ropes.layer_types().len(), 24);
    assert_eq!(ropes.for_layer(0), ropes.for_layer(1));
}

#[test]
fn phi3_longrope_uses_the_files_lists_and_the_callers_choice() {
    let t = text("phi-3-mini-128k-instruct");
    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
    let list = |k: &str| -> Vec<f32> {
        v["rope_scaling"][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    };
    let (short, long) = (list("short_factor"), list("long_factor"));
    assert_eq!((short.len(), long.len()), (48, 48));
    for use_long in [false, true] {
        let opts = HfOptions {
            use_long_factors: use_long,
            ..Default::default()
        };
        let ropes = ropes_from_hf_config_with(&t, &opts).unwrap();
        let p = presets::phi_3_mini_128k(&short, &long, use_long);
        assert_preset("phi-3-mini-128k", ropes.single().unwrap(), &p);
    }
    // The default is HF's buffer at load time: the short factors.
    assert_eq!(
        *ropes_from_hf_config(&t).unwrap().single().unwrap(),
        presets::phi_3_mini_128k(&short, &long, false)
            .rope()
            .unwrap()
    );
}

#[test]
fn dynamic_ntk_takes_the_callers_length() {
    let json = r#"{"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
        "rope_scaling": {"type": "dynamic", "factor": 2.0}}"#;
    let base = ropes_from_hf_config(json).unwrap();
    assert_preset(
        "dynamic at 4096",
        base.single().unwrap(),
        &presets::LLAMA_2_7B,
    );
    let long = ropes_from_hf_config_with(
        json,
        &HfOptions {
            seq_len: Some(8192),
            ..Default::default()
        },
    )
    .unwrap();
    // Above max_position_embeddings the base grows: the slowest pair slows down.
    let (a, b) = (base.single().unwrap(), long.single().unwrap());
    assert!(b.inv_freq()[63] < a.inv_freq()[63]);
    assert_eq!(b.inv_freq()[0], 1.0);
}

fn err(json: &str) -> (String, ConfigErrorKind) {
    let e = ropes_from_hf_config(json).unwrap_err();
    assert!(!e.to_string().is_empty());
    (e.key, e.kind)
}

#[test]
fn unknown_and_contradictory_keys_are_named() {
    use ConfigErrorKind::*;
    let k = |s: &str| s.to_owned();
    assert_eq!(
        err(
            r#"{"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 4096, "beta_fastt": 32}}"#
        ),
        (k("rope_scaling.beta_fastt"), UnknownKey)
    );
    // A key of another scheme is unknown to this one.
    assert_eq!(
        err(
            r#"{"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 4, "low_freq_factor": 1}}"#
        ),
        (k("rope_scaling.low_freq_factor"), UnknownKey)
    );
    assert_eq!(
        err(
            r#"{"head_dim": 64, "rope_scaling": {"rope_type": "linear", "type": "yarn", "factor": 4}}"#
        ),
        (k("rope_scaling.type"), Contradiction)
    );
    assert_eq!(
        err(
            r#"{"head_dim": 64, "rope_theta": 10000, "rope_parameters": {"rope_type": "default", "rope_theta": 500000}}"#
        ),
        (k("rope_parameters.rope_theta"), Contradiction)
    );
    assert_eq!(
        err(
            r#"{"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 2}, "rope_parameters": {"rope_type": "linear", "factor": 4}}"#
        ),
        (k("rope_scaling.factor"), Contradiction)
    );
    assert_eq!(
        err(r#"{"head_dim": 64, "rope_scaling": {"rope_type": "ntk-by-parts"}}"#),
        (k("rope_scaling.rope_type"), UnknownValue)
    );
    // Granite 4's attention layers carry no rotary embedding ("nope"); BERT-style configs say
    // "absolute". Neither builds a Rope; "rope" does.
    assert_eq!(
        err(r#"{"head_dim": 64, "position_embedding_type": "nope"}"#),
        (k("position_embedding_type"), UnknownValue)
    );
    assert_eq!(
        err(r#"{"head_dim": 64, "position_embedding_type": "absolute"}"#),
        (k("position_embedding_type"), UnknownValue)
    );
    assert_eq!(
        err(r#"{"head_dim": 64, "position_embedding_type": 1}"#),
        (k("position_embedding_type"), WrongType)
    );
    assert!(ropes_from_hf_config(r#"{"head_dim": 64, "position_embedding_type": "rope"}"#).is_ok());
    // Same value written twice (8 and 8.0; "mrope" and "default") is no contradiction.
    assert!(ropes_from_hf_config(r#"{"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 8}, "rope_parameters": {"rope_type": "linear", "factor": 8.0}}"#).is_ok());
    assert!(ropes_from_hf_config(r#"{"head_dim": 8, "rope_scaling": {"rope_type": "default", "type": "mrope", "mrope_section": [2, 1, 1]}}"#).is_ok());
}

#[test]
fn bad_values_are_typed_errors() {
    use ConfigErrorKind::*;
    let k = |s: &str| s.to_owned();
    assert_eq!(err("{"), (k(""), Json));
    assert_eq!(err("[1, 2]"), (k(""), Json));
    assert_eq!(err(r#"{"head_dim": "128"}"#), (k("head_dim"), WrongType));
    assert_eq!(err(r#"{"head_dim": 127.5}"#), (k("head_dim"), OutOfRange));
    assert_eq!(err(r#"{"head_dim": -2}"#), (k("head_dim"), OutOfRange));
    assert_eq!(
        err(r#"{"head_dim": 64, "rope_theta": 1e300}"#),
        (k("rope_theta"), OutOfRange)
    );
    assert_eq!(err(r#"{"head_dim": 64, "rope_theta": 1e400}"#).1, Json);
    assert_eq!(
        err(r#"{"head_dim": 64, "rope_scaling": {"rope_type": "linear"}}"#),
        (k("rope_scaling.factor"), Missing)
    );
    assert_eq!(
        err(r#"{"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": -4}}"#).1,
        Rope(Error::InvalidParameter {
            what: "factor",
            value: -4.0
        })
    );
    assert_eq!(
        err(r#"{"head_dim": 63}"#).1,
        Rope(Error::InvalidHeadDim { head_dim: 63 })
    );
    assert_eq!(err(r#"{"model_type": "llama"}"#), (k("head_dim"), Missing));
    assert_eq!(
        err(r#"{"hidden_size": 64, "num_attention_heads": 0}"#),
        (k("num_attention_heads"), OutOfRange)
    );
    assert_eq!(
        err(r#"{"head_dim": 128, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24]}}"#),
        (k("rope_scaling.mrope_section"), OutOfRange)
    );
    assert_eq!(
        err(r#"{"head_dim": 128, "partial_rotary_factor": 1.5}"#),
        (k("partial_rotary_factor"), OutOfRange)
    );
    assert_eq!(
        err(r#"{"head_dim": 64, "max_position_embeddings": 8192, "rope_scaling": {"rope_type": "longrope", "short_factor": [1, 2], "long_factor": [1, 2]}}"#).0,
        "rope_scaling"
    );
    assert_eq!(
        err(
            r#"{"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 4294967296}}"#
        ),
        (
            k("rope_scaling.original_max_position_embeddings"),
            OutOfRange
        )
    );
    assert_eq!(
        err(r#"{"head_dim": 64, "rope_scaling": 7}"#),
        (k("rope_scaling"), WrongType)
    );
}

/// Every prefix of every shipped config, and single-byte corruptions: an error or a rope,
/// never a panic.
#[test]
fn truncated_and_corrupted_configs_do_not_panic() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/configs");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let t = std::fs::read_to_string(&path).unwrap();
        let t = t.trim_end();
        for end in (0..t.len()).filter(|&i| t.is_char_boundary(i)) {
            assert!(ropes_from_hf_config(&t[..end]).is_err());
        }
        let bytes = t.as_bytes();
        for i in (0..bytes.len()).step_by(7) {
            for c in [b'0', b'"', b'-', b'e', b'{', b']', b'n'] {
                let mut b = bytes.to_vec();
                b[i] = c;
                if let Ok(s) = std::str::from_utf8(&b) {
                    let _ = ropes_from_hf_config(s);
                }
            }
        }
    }
}

/// The layers a model's code runs without rope (NoPE). Expected lists are written from each
/// model's HF code (quoted per case), not from posenc's reading of it.
#[test]
fn nope_layers_follow_each_models_code() {
    let nope = |json: &str| -> Vec<usize> {
        let ropes = ropes_from_hf_config(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        (0..64).filter(|&l| !ropes.rotates(l)).collect()
    };
    // Every fourth of n layers, and everything from n on (past the model's layers).
    let every_fourth =
        |n: usize| -> Vec<usize> { (0..64).filter(|&i| i >= n || (i + 1) % 4 == 0).collect() };
    // Llama4TextConfig: `int((layer_idx + 1) % no_rope_layer_interval != 0)` for
    // `num_hidden_layers` (default 48) when `no_rope_layers` is absent or empty.
    let scout = r#"{"model_type": "llama4", "text_config": {"model_type": "llama4_text",
        "head_dim": 128, "num_hidden_layers": 48, "rope_theta": 500000.0, "no_rope_layers": []}}"#;
    assert_eq!(nope(scout), every_fourth(48));
    assert_eq!(
        nope(r#"{"model_type": "llama4_text", "head_dim": 128}"#),
        every_fourth(48)
    );
    // An explicit list: `use_rope = config.no_rope_layers[layer_idx]`.
    assert_eq!(
        nope(
            r#"{"model_type": "llama4_text", "head_dim": 64, "num_hidden_layers": 4,
            "no_rope_layers": [1, 0, 1, 1]}"#
        ),
        [vec![1], (4..64).collect()].concat()
    );
    assert_eq!(
        nope(
            r#"{"model_type": "llama4_text", "head_dim": 64, "num_hidden_layers": 6,
            "no_rope_layer_interval": 3}"#
        ),
        [vec![2, 5], (6..64).collect()].concat()
    );
    // SmolLM3Config: the same default over 36 layers.
    assert_eq!(
        nope(r#"{"model_type": "smollm3", "head_dim": 128}"#),
        every_fourth(36)
    );
    // Cohere2: the rope only where `sliding_window` applies (`layer_types[i] ==
    // "sliding_attention"`); the default layer types put a full layer every
    // `sliding_window_pattern` (4) of 40.
    assert_eq!(
        nope(r#"{"model_type": "cohere2", "head_dim": 128}"#),
        every_fourth(40)
    );
    assert_eq!(
        nope(
            r#"{"model_type": "cohere2", "head_dim": 128, "layer_types":
            ["full_attention", "sliding_attention", "sliding_attention"]}"#
        ),
        [vec![0], (3..64).collect()].concat()
    );
    // ... and with `sliding_window: null`, `self.sliding_window` is None on every layer.
    assert_eq!(
        nope(
            r#"{"model_type": "cohere2", "head_dim": 128, "num_hidden_layers": 8,
            "sliding_window": null}"#
        ),
        (0..64).collect::<Vec<_>>()
    );
    // EXAONE 4: `if self.sliding_window is None or self.is_sliding`; 32 layers by default.
    assert_eq!(
        nope(r#"{"model_type": "exaone4", "head_dim": 128}"#),
        every_fourth(32)
    );
    assert_eq!(
        nope(
            r#"{"model_type": "exaone4", "head_dim": 128, "num_hidden_layers": 64,
            "sliding_window": 4096, "sliding_window_pattern": 4}"#
        ),
        (0..64).filter(|i| (i + 1) % 4 == 0).collect::<Vec<_>>()
    );
    assert_eq!(
        nope(
            r#"{"model_type": "exaone4", "head_dim": 64, "num_hidden_layers": 30,
            "sliding_window": null}"#
        ),
        Vec::<usize>::new()
    );
    // AFMoE: the rope on local layers; `global_attn_every_n_layers` (4) of 32.
    assert_eq!(
        nope(r#"{"model_type": "afmoe", "head_dim": 128}"#),
        every_fourth(32)
    );
    // Every other model rotates every layer.
    assert_eq!(nope(&text("llama-3.1-8b")), Vec::<usize>::new());
    assert_eq!(nope(&text("gpt-oss-20b")), Vec::<usize>::new());
    assert_eq!(nope(&text("gemma-3-4b-it")), Vec::<usize>::new());

    // `for_layer` agrees, and the rope of a layer that has one is the model's rope.
    let ropes = ropes_from_hf_config(scout).unwrap();
    assert_eq!(ropes.for_layer(3), None);
    assert_eq!(ropes.for_layer(4), ropes.single());
    assert_eq!(ropes.for_layer(48), None);
}

/// Llama 4 rotates adjacent channel pairs (`torch.view_as_complex` of the head reshaped to
/// `(-1, 2)`), with Llama 3's scaling.
#[test]
fn llama4_pairs_adjacent_channels() {
    let json = r#"{"model_type": "llama4", "text_config": {"model_type": "llama4_text",
        "head_dim": 128, "rope_theta": 500000.0, "max_position_embeddings": 10485760,
        "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}}}"#;
    let rope = *ropes_from_hf_config(json).unwrap().single().unwrap();
    assert_eq!(rope.layout(), posenc::Layout::Interleaved);
    let rh = r#"{"model_type": "llama", "head_dim": 128, "rope_theta": 500000.0,
        "max_position_embeddings": 10485760,
        "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}}"#;
    let llama = *ropes_from_hf_config(rh).unwrap().single().unwrap();
    assert_eq!(llama.layout(), posenc::Layout::RotateHalf);
    assert_eq!(rope.inv_freq(), llama.inv_freq());
}

/// Configs that say there is no rope, and bad NoPE settings: typed errors naming the key.
#[test]
fn nope_settings_are_checked() {
    // GraniteMoeHybrid's `position_embedding_type` defaults to None: no rope at all.
    let (key, kind) = err(r#"{"model_type": "granitemoehybrid", "head_dim": 128}"#);
    assert_eq!(
        (key.as_str(), kind),
        ("position_embedding_type", ConfigErrorKind::UnknownValue)
    );
    assert!(
        ropes_from_hf_config(
            r#"{"model_type": "granitemoehybrid", "head_dim": 128,
            "position_embedding_type": "rope"}"#
        )
        .is_ok()
    );
    for (json, want_key, want_kind) in [
        (
            r#"{"model_type": "llama4_text", "head_dim": 64, "no_rope_layers": "all"}"#,
            "no_rope_layers",
            ConfigErrorKind::WrongType,
        ),
        (
            r#"{"model_type": "llama4_text", "head_dim": 64, "no_rope_layers": [1, "x"]}"#,
            "no_rope_layers",
            ConfigErrorKind::WrongType,
        ),
        (
            r#"{"model_type": "llama4_text", "head_dim": 64, "num_hidden_layers": 3,
                "no_rope_layers": [1, 0]}"#,
            "no_rope_layers",
            ConfigErrorKind::OutOfRange,
        ),
        // SmolLM3 keeps an empty list, which has no entry for its first layer.
        (
            r#"{"model_type": "smollm3", "head_dim": 64, "no_rope_layers": []}"#,
            "no_rope_layers",
            ConfigErrorKind::OutOfRange,
        ),
        (
            r#"{"model_type": "smollm3", "head_dim": 64, "no_rope_layer_interval": 0}"#,
            "no_rope_layer_interval",
            ConfigErrorKind::OutOfRange,
        ),
        (
            r#"{"model_type": "cohere2", "head_dim": 64, "sliding_window_pattern": 0}"#,
            "sliding_window_pattern",
            ConfigErrorKind::OutOfRange,
        ),
        (
            r#"{"model_type": "exaone4", "head_dim": 64, "sliding_window_pattern": "LLLG"}"#,
            "sliding_window_pattern",
            ConfigErrorKind::WrongType,
        ),
        (
            r#"{"model_type": "afmoe", "head_dim": 64, "global_attn_every_n_layers": -4}"#,
            "global_attn_every_n_layers",
            ConfigErrorKind::OutOfRange,
        ),
    ] {
        let (key, kind) = err(json);
        assert_eq!((key.as_str(), kind), (want_key, want_kind), "{json}");
    }
}

/// OLMo 3 (transformers-4 form): `rope_scaling` is the full layers'; the sliding layers (three
/// of every four, `Olmo3Config`'s default `layer_types`) rotate unscaled, HF's
/// `rotary_embs["sliding_attention"]` built with `rope_type="default"`.
#[test]
fn olmo3_sliding_layers_rotate_unscaled() {
    let yarn = r#""rope_scaling": {"rope_type": "yarn", "factor": 8.0,
        "original_max_position_embeddings": 8192, "attention_factor": 1.2079441541679836,
        "beta_fast": 32, "beta_slow": 1}"#;
    let json = |model: &str| {
        format!(
            r#"{{"model_type": "{model}", "hidden_size": 4096, "num_attention_heads": 32,
            "num_hidden_layers": 8, "max_position_embeddings": 65536, "rope_theta": 500000, {yarn}}}"#
        )
    };
    let ropes = ropes_from_hf_config(&json("olmo3")).unwrap();
    assert_eq!(ropes.len(), 2);
    let plain = Rope::new(&posenc::RopeConfig::new(
        128,
        500_000.0,
        posenc::Layout::RotateHalf,
    ))
    .unwrap();
    // OLMo 2 has no sliding layers: its one rope is the scaled one.
    let scaled = *ropes_from_hf_config(&json("olmo2"))
        .unwrap()
        .single()
        .unwrap();
    assert_ne!(scaled, plain);
    for l in 0..8 {
        let want = if (l + 1) % 4 == 0 { &scaled } else { &plain };
        assert_eq!(ropes.for_layer(l), Some(want), "layer {l}");
    }
    // Without scaling, one rope for every layer.
    let unscaled = r#"{"model_type": "olmo3", "head_dim": 128, "rope_theta": 500000}"#;
    assert_eq!(
        ropes_from_hf_config(unscaled).unwrap().single(),
        Some(&plain)
    );
}
