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
        (k("position_embedding_type"), NoRope)
    );
    assert_eq!(
        err(r#"{"head_dim": 64, "position_embedding_type": "absolute"}"#),
        (k("position_embedding_type"), NoRope)
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
        ("position_embedding_type", ConfigErrorKind::NoRope)
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
/// Families whose attention never rotates: their configs carry a head size (GPT-2's `n_embd`
/// and `n_head`, BLOOM's `hidden_size`) and nothing else about positions, so without their
/// `model_type` they would build a θ 10000 rope. Each is a `NoRope` naming the key that
/// decides; the families' rotary members still build.
#[test]
fn models_without_rotary_embeddings_are_no_rope() {
    // Keys as in the published files (openai-community/gpt2, bigscience/bloom-560m, …): NoRope
    // on `model_type`.
    let families = [
        r#"{"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12}"#,
        r#"{"model_type": "gpt_bigcode", "n_embd": 6144, "n_head": 48}"#,
        r#"{"model_type": "gpt_neo", "hidden_size": 2048, "num_heads": 16}"#,
        r#"{"model_type": "opt", "hidden_size": 768, "num_attention_heads": 12}"#,
        r#"{"model_type": "bloom", "hidden_size": 1024, "n_head": 16}"#,
        r#"{"model_type": "mpt", "d_model": 4096, "n_heads": 32, "attn_config": {"alibi": true}}"#,
        r#"{"model_type": "t5", "d_model": 512, "num_heads": 8, "d_kv": 64}"#,
        r#"{"model_type": "whisper", "d_model": 384, "encoder_attention_heads": 6}"#,
        r#"{"model_type": "mamba", "hidden_size": 768}"#,
        r#"{"model_type": "jamba", "hidden_size": 4096, "num_attention_heads": 32}"#,
        r#"{"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12}"#,
    ];
    let keyed = [
        // BERT's published files say it outright.
        (
            r#"{"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12,
            "position_embedding_type": "absolute"}"#,
            "position_embedding_type",
        ),
        // baichuan-inc/Baichuan2-13B-Chat: ALiBi (its 7B sibling, 32 layers, rotates).
        (
            r#"{"model_type": "baichuan", "hidden_size": 5120, "num_attention_heads": 40,
            "num_hidden_layers": 40}"#,
            "num_hidden_layers",
        ),
        // tiiuae/falcon-rw-1b, under the original remote code's name.
        (
            r#"{"model_type": "RefinedWebModel", "alibi": true, "hidden_size": 2048,
            "n_head": 32}"#,
            "alibi",
        ),
        // Falcon-RW: ALiBi instead of the rotary embedding.
        (
            r#"{"model_type": "falcon", "alibi": true, "hidden_size": 2048,
            "num_attention_heads": 32}"#,
            "alibi",
        ),
    ];
    let cases = families.into_iter().map(|j| (j, "model_type"));
    for (json, key) in cases.chain(keyed) {
        let e = ropes_from_hf_config(json).expect_err(json);
        assert_eq!(
            (e.key.as_str(), e.kind),
            (key, ConfigErrorKind::NoRope),
            "{json}: {e}"
        );
    }
    let e = ropes_from_hf_config(r#"{"model_type": "falcon", "alibi": 1, "head_dim": 64}"#);
    assert_eq!(e.unwrap_err().kind, ConfigErrorKind::WrongType);
    // Rotary members: Falcon-7B (`alibi: false`), ESM-2 and Jina v3's XLM-RoBERTa
    // (`"rotary"`, θ from `rotary_emb_base`), all HF's rotate_half over the whole head.
    let rotary = [
        (
            r#"{"model_type": "baichuan", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32}"#,
            10_000.0,
        ),
        (
            r#"{"model_type": "falcon", "alibi": false, "hidden_size": 4544, "num_attention_heads": 71}"#,
            10_000.0,
        ),
        (
            r#"{"model_type": "esm", "hidden_size": 320, "num_attention_heads": 20, "position_embedding_type": "rotary"}"#,
            10_000.0,
        ),
        (
            r#"{"model_type": "xlm-roberta", "hidden_size": 1024, "num_attention_heads": 16, "position_embedding_type": "rotary", "rotary_emb_base": 20000.0}"#,
            20_000.0,
        ),
    ];
    for (json, theta) in rotary {
        let ropes = ropes_from_hf_config(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        let rope = ropes.single().unwrap();
        let d = rope.head_dim();
        assert_eq!(
            (rope.rotary_dim(), rope.layout()),
            (d, posenc::Layout::RotateHalf)
        );
        let want = hf_inv_freq(theta, d, d / 2, 0);
        let got: Vec<f64> = rope.inv_freq().iter().map(|&w| f64::from(w)).collect();
        assert_eq!(got.len(), want.len(), "{json}");
        for (j, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-6 * w, "{json}: ω{j} {g} vs {w}");
        }
    }
}

/// The single rope of `json`: dims, layout, unit attention factor, and each frequency within
/// one f32 rounding of `want` (HF's formula in f64).
fn assert_family(
    json: &str,
    head_dim: usize,
    rotary_dim: usize,
    layout: posenc::Layout,
    want: &[f64],
) {
    let ropes = ropes_from_hf_config(json).unwrap_or_else(|e| panic!("{json}: {e}"));
    let rope = ropes.single().unwrap();
    assert_eq!(
        (
            rope.head_dim(),
            rope.rotary_dim(),
            rope.layout(),
            rope.attention_factor()
        ),
        (head_dim, rotary_dim, layout, 1.0),
        "{json}"
    );
    let got = rope.inv_freq();
    assert_eq!(got.len(), want.len(), "{json}");
    for (j, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= w * f64::from(f32::EPSILON),
            "{json}: ω{j} {g} vs {w}"
        );
    }
}

/// Families whose modeling code departs from Llama's in a way their `config.json` does not
/// spell out, each against its code (HF transformers, or the remote code the Hub runs):
/// ERNIE 4.5 and CodeGen pair adjacent channels; ChatGLM rotates the first half of a
/// `kv_channels` head at θ = 10000·`rope_ratio`; DBRX keeps θ in `attn_config` and its width in
/// `d_model` / `n_heads`; Hunyuan's "dynamic" with `alpha` raises the base to
/// θ·alpha^(d/(d−2)) once.
#[test]
fn families_with_their_own_rope_code_rotate_as_it_does() {
    use posenc::Layout::{Interleaved, RotateHalf};
    // baidu/ERNIE-4.5-0.3B-PT and ERNIE-4.5-21B-A3B-PT (`ernie4_5_moe`).
    for model in ["ernie4_5", "ernie4_5_moe"] {
        let json = format!(
            r#"{{"model_type": "{model}", "hidden_size": 1024, "num_attention_heads": 16,
            "num_key_value_heads": 2, "head_dim": 128, "rope_theta": 500000.0}}"#
        );
        assert_family(&json, 128, 128, Interleaved, &hf_inv_freq(5e5, 128, 64, 0));
    }
    let e = ropes_from_hf_config(r#"{"model_type": "ernie4_5_vl_moe", "head_dim": 128}"#);
    assert_eq!(e.unwrap_err().kind, ConfigErrorKind::UnknownValue);
    // Salesforce/codegen-350M-mono: 64-wide heads, the first 32 channels in adjacent pairs;
    // without `rotary_dim` the config class's 64.
    let codegen = r#"{"model_type": "codegen", "n_embd": 1024, "n_head": 16, "rotary_dim": 32}"#;
    assert_family(codegen, 64, 32, Interleaved, &hf_inv_freq(1e4, 32, 16, 0));
    let codegen2b = r#"{"model_type": "codegen", "n_embd": 2560, "n_head": 32}"#;
    assert_family(codegen2b, 80, 64, Interleaved, &hf_inv_freq(1e4, 64, 32, 0));
    // GPT-J's and CodeGen's code fix θ at 10000 whatever the config says.
    let gptj = r#"{"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rope_theta": 500000}"#;
    assert_family(gptj, 256, 64, Interleaved, &hf_inv_freq(1e4, 64, 32, 0));
    // THUDM/glm-4-9b-chat (`rope_ratio` 500) and chatglm3-6b (none): the exponent's
    // denominator is the rotated width, 64.
    let glm4 = r#"{"model_type": "chatglm", "hidden_size": 4096, "kv_channels": 128,
        "num_attention_heads": 32, "multi_query_group_num": 2, "rope_ratio": 500}"#;
    assert_family(glm4, 128, 64, Interleaved, &hf_inv_freq(5e6, 64, 32, 0));
    let chatglm3 = r#"{"model_type": "chatglm", "hidden_size": 4096, "kv_channels": 128,
        "num_attention_heads": 32}"#;
    assert_family(chatglm3, 128, 64, Interleaved, &hf_inv_freq(1e4, 64, 32, 0));
    // databricks/dbrx-instruct, and its attention config's default θ.
    let dbrx = r#"{"model_type": "dbrx", "d_model": 6144, "n_heads": 48,
        "attn_config": {"clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000}}"#;
    assert_family(dbrx, 128, 128, RotateHalf, &hf_inv_freq(5e5, 128, 64, 0));
    let dbrx_default = r#"{"model_type": "dbrx", "d_model": 6144, "n_heads": 48}"#;
    assert_family(
        dbrx_default,
        128,
        128,
        RotateHalf,
        &hf_inv_freq(1e4, 128, 64, 0),
    );
    let e = ropes_from_hf_config(r#"{"model_type": "dbrx", "d_model": 6144, "n_heads": 0}"#);
    assert_eq!(e.unwrap_err().kind, ConfigErrorKind::OutOfRange);
    // tencent/Hunyuan-A13B-Instruct's dict, YaRN's keys and all.
    let hunyuan = |model: &str, extra: &str| {
        format!(
            r#"{{"model_type": "{model}", "head_dim": 128, "rope_theta": 10000.0,
            "max_position_embeddings": 32768, "rope_scaling": {{"alpha": 1000.0,
            "beta_fast": 32, "beta_slow": 1, "factor": 1.0, "mscale": 1.0,
            "mscale_all_dim": 1.0, "type": "dynamic"{extra}}}}}"#
        )
    };
    let base = 1e4 * 1000f64.powf(128.0 / 126.0);
    let base = f64::from(base as f32); // HF hands the base to torch as an f32 scalar
    for model in ["hunyuan_v1_dense", "hunyuan_v1_moe"] {
        assert_family(
            &hunyuan(model, ""),
            128,
            128,
            RotateHalf,
            &hf_inv_freq(base, 128, 64, 0),
        );
        let e = ropes_from_hf_config(&hunyuan(model, r#", "foo": 1"#)).unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.kind),
            ("rope_scaling.foo", ConfigErrorKind::UnknownKey)
        );
    }
    // nomic-ai/nomic-embed-text-v1.5 (flash-attn's keys), and the same keys set otherwise.
    let nomic = |extra: &str| {
        format!(
            r#"{{"model_type": "nomic_bert", "n_embd": 768, "n_head": 12,
            "rotary_emb_base": 1000, "rotary_scaling_factor": null{extra}}}"#
        )
    };
    let v15 = nomic(r#", "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": false"#);
    assert_family(&v15, 64, 64, RotateHalf, &hf_inv_freq(1e3, 64, 32, 0));
    let pairs = nomic(r#", "rotary_emb_fraction": 0.5, "rotary_emb_interleaved": true"#);
    assert_family(&pairs, 64, 32, Interleaved, &hf_inv_freq(1e3, 32, 16, 0));
    let e = ropes_from_hf_config(r#"{"head_dim": 64, "rotary_scaling_factor": 2}"#);
    let e = e.unwrap_err();
    assert_eq!(
        (e.key.as_str(), e.kind),
        ("rotary_scaling_factor", ConfigErrorKind::UnknownKey)
    );
    // THUDM/GLM-4.1V-9B-Thinking: M-RoPE over adjacent pairs (`rotate_half_llm`), half the
    // head; zai-org/GLM-4.5V (`glm4v_moe`): the same sections over halves, its class's 0.5.
    let glm4v = |model: &str, text: &str, extra: &str| {
        format!(
            r#"{{"model_type": "{model}", "text_config": {{"model_type": "{text}",
            "hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 10000.0{extra},
            "rope_scaling": {{"type": "default", "mrope_section": [8, 12, 12]}}}}}}"#
        )
    };
    for (json, layout) in [
        (
            glm4v("glm4v", "glm4v_text", r#", "partial_rotary_factor": 0.5"#),
            Interleaved,
        ),
        (glm4v("glm4v_moe", "glm4v_moe_text", ""), RotateHalf),
    ] {
        let ropes = ropes_from_hf_config(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
        let rope = ropes.single().unwrap();
        assert_eq!(
            (rope.head_dim(), rope.rotary_dim(), rope.layout()),
            (128, 64, layout)
        );
        assert_eq!(
            rope.axes(),
            posenc::Axes::MRope {
                sections: [8, 12, 12]
            }
        );
    }
    // openbmb/MiniCPM3-4B: MLA, the rope over the 32 `qk_rope_head_dim` channels in halves.
    let minicpm3 = r#"{"model_type": "minicpm3", "hidden_size": 2560, "num_attention_heads": 40,
        "qk_rope_head_dim": 32, "qk_nope_head_dim": 64}"#;
    assert_family(minicpm3, 32, 32, RotateHalf, &hf_inv_freq(1e4, 32, 16, 0));
    // mistralai/Ministral-3-8B-Instruct-2512: `llama_4_scaling_beta` scales queries after the
    // rotation; the rope is the dict's YaRN without it. (A default dict may carry it too.)
    let ministral = |beta: &str| {
        format!(
            r#"{{"model_type": "mistral3", "text_config": {{"model_type": "ministral3",
            "head_dim": 128, "rope_parameters": {{"rope_type": "yarn", "factor": 16.0,
            "original_max_position_embeddings": 16384, "beta_fast": 32.0, "beta_slow": 1.0,
            "mscale": 1.0, "mscale_all_dim": 1.0, "rope_theta": 1000000.0{beta}}}}}}}"#
        )
    };
    let with_beta = ropes_from_hf_config(&ministral(r#", "llama_4_scaling_beta": 0.1"#));
    let without = ropes_from_hf_config(&ministral("")).unwrap();
    assert_eq!(with_beta.unwrap().single(), without.single());
    let plain = r#"{"head_dim": 64, "rope_parameters": {"rope_theta": 10000.0,
        "llama_4_scaling_beta": 0.1, "original_max_position_embeddings": 128}}"#;
    assert_family(plain, 64, 64, RotateHalf, &hf_inv_freq(1e4, 64, 32, 0));
    // Without the beta, the length is no setting of the default scheme.
    let e = ropes_from_hf_config(
        r#"{"head_dim": 64, "rope_parameters": {"original_max_position_embeddings": 128}}"#,
    );
    assert_eq!(e.unwrap_err().kind, ConfigErrorKind::UnknownKey);
    // Zyphra/Zamba2-2.7B: the shared attention's heads span the hidden state and the
    // embeddings (2·2560/32), rotated only with `use_mem_rope`.
    let zamba2 = |rope: &str| {
        format!(
            r#"{{"model_type": "zamba2", "hidden_size": 2560, "num_attention_heads": 32,
            "rope_theta": 10000{rope}}}"#
        )
    };
    assert_family(
        &zamba2(r#", "use_mem_rope": true"#),
        160,
        160,
        RotateHalf,
        &hf_inv_freq(1e4, 160, 80, 0),
    );
    let e = ropes_from_hf_config(&zamba2(r#", "use_mem_rope": false"#)).unwrap_err();
    assert_eq!(
        (e.key.as_str(), e.kind),
        ("use_mem_rope", ConfigErrorKind::NoRope)
    );
    let e = ropes_from_hf_config(&zamba2("")).unwrap_err();
    assert_eq!(e.kind, ConfigErrorKind::NoRope);
    // Older remote-code spellings: stabilityai/stablelm-3b-4e1t (`rope_pct`),
    // microsoft/Phi-3-small-8k-instruct (`rope_embedding_base`, `rope_position_scale` 1).
    let epoch = r#"{"model_type": "stablelm_epoch", "hidden_size": 2560,
        "num_attention_heads": 32, "rope_pct": 0.25, "rope_theta": 10000}"#;
    assert_family(epoch, 80, 20, RotateHalf, &hf_inv_freq(1e4, 20, 10, 0));
    let small = |scale: &str| {
        format!(
            r#"{{"model_type": "phi3small", "hidden_size": 4096, "num_attention_heads": 32,
            "rope_embedding_base": 1000000, "rope_position_scale": {scale}}}"#
        )
    };
    assert_family(
        &small("1.0"),
        128,
        128,
        RotateHalf,
        &hf_inv_freq(1e6, 128, 64, 0),
    );
    let e = ropes_from_hf_config(&small("2.0")).unwrap_err();
    assert_eq!(
        (e.key.as_str(), e.kind),
        ("rope_position_scale", ConfigErrorKind::UnknownKey)
    );
    // Another family's dynamic scaling has no `alpha`.
    let e = ropes_from_hf_config(&hunyuan("llama", "")).unwrap_err();
    assert_eq!(e.kind, ConfigErrorKind::UnknownKey);
}

/// A key the file leaves out takes its config class's default (HF transformers'
/// `configuration_*.py`), not Llama's: θ, the rotated fraction, the head width, the pairing,
/// and for gpt-oss and Apertus a whole scaling.
#[test]
fn absent_keys_take_their_config_classs_defaults() {
    use posenc::Layout::{Interleaved, RotateHalf};
    // Width from `hidden_size / num_attention_heads` unless the class says otherwise:
    // (model_type, hidden_size, heads, head_dim, rotary_dim, layout, θ).
    let cases: &[(&str, usize, usize, usize, usize, posenc::Layout, f64)] = &[
        ("ernie4_5", 1024, 16, 128, 128, Interleaved, 5e5),
        ("minimax_m2", 3072, 48, 128, 128, RotateHalf, 5e6),
        ("helium", 2560, 20, 128, 128, Interleaved, 1e5),
        ("persimmon", 4096, 64, 64, 32, RotateHalf, 25e3),
        ("stablelm", 2560, 32, 80, 20, RotateHalf, 1e4),
        ("phi", 2560, 32, 80, 40, RotateHalf, 1e4),
        ("nemotron", 6144, 48, 128, 64, RotateHalf, 1e4),
        ("glm", 4096, 32, 128, 64, Interleaved, 1e4),
        ("qwen3_next", 2048, 16, 256, 64, RotateHalf, 1e4),
        ("qwen3", 1024, 16, 128, 128, RotateHalf, 1e4),
        ("seed_oss", 5120, 80, 128, 128, RotateHalf, 1e4),
        ("vaultgemma", 1152, 4, 256, 256, RotateHalf, 1e4),
        ("lfm2", 2048, 32, 64, 64, RotateHalf, 1e6),
        ("lfm2_moe", 2048, 32, 64, 64, RotateHalf, 1e6),
    ];
    // Other keys: (model_type, keys, head_dim, rotary_dim, layout, θ), one row per model.
    #[rustfmt::skip]
    let keyed = [
        ("mixtral", r#""head_dim": 128"#, 128, 128, RotateHalf, 1e6),
        ("glm4_moe", r#""head_dim": 128"#, 128, 64, RotateHalf, 1e4),
        // JetMoE's heads are `kv_channels` wide.
        ("jetmoe", r#""hidden_size": 2048, "kv_channels": 128"#, 128, 128, RotateHalf, 1e4),
        // Bamba overwrites the file's factor with 0.5.
        ("bamba", r#""head_dim": 128, "partial_rotary_factor": 1.0"#, 128, 64, RotateHalf, 1e4),
        // MLA: the rope's own channels, adjacent pairs.
        ("glm4_moe_lite", r#""head_dim": 256, "qk_rope_head_dim": 64"#, 64, 64, Interleaved, 1e4),
        // LFM2 reads Liquid's `theta` before `rope_theta`; either alone is θ.
        ("lfm2", r#""hidden_size": 2048, "num_attention_heads": 32, "theta": 5e5, "rope_theta": 2e6"#, 64, 64, RotateHalf, 5e5),
        ("lfm2", r#""hidden_size": 2048, "num_attention_heads": 32, "theta": 5e5"#, 64, 64, RotateHalf, 5e5),
        ("lfm2", r#""hidden_size": 2048, "num_attention_heads": 32, "rope_theta": 2e6"#, 64, 64, RotateHalf, 2e6),
    ];
    let by_width = cases
        .iter()
        .map(|&(model, hidden, heads, head, rotary, layout, theta)| {
            let keys = format!(r#""hidden_size": {hidden}, "num_attention_heads": {heads}"#);
            (model, keys, head, rotary, layout, theta)
        });
    let by_key = keyed.map(|(model, keys, head, rotary, layout, theta)| {
        (model, keys.to_owned(), head, rotary, layout, theta)
    });
    for (model, keys, head, rotary, layout, theta) in by_width.chain(by_key) {
        let json = format!(r#"{{"model_type": "{model}", {keys}}}"#);
        assert_family(
            &json,
            head,
            rotary,
            layout,
            &hf_inv_freq(theta, rotary, rotary / 2, 0),
        );
    }
    // gpt-oss without rope settings: `GptOssConfig`'s YaRN, i.e. the published file's rope.
    let bare = r#"{"model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64}"#;
    let rope = ropes_from_hf_config(bare).unwrap();
    assert_preset(
        "gpt_oss defaults",
        rope.single().unwrap(),
        &presets::GPT_OSS_20B,
    );
    // A `null` written out is HF's "no scaling".
    let unscaled = r#"{"model_type": "gpt_oss", "head_dim": 64, "rope_scaling": null}"#;
    assert_family(unscaled, 64, 64, RotateHalf, &hf_inv_freq(1.5e5, 64, 32, 0));
    // Apertus: Llama 3's scaling ×8 over 8192 positions, θ 1.2e7.
    let apertus = r#"{"model_type": "apertus", "hidden_size": 4096, "num_attention_heads": 32}"#;
    let got = *ropes_from_hf_config(apertus).unwrap().single().unwrap();
    let want = Rope::new(&posenc::RopeConfig::new(128, 1.2e7, RotateHalf).scaling(
        posenc::Scaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_positions: 8192,
        },
    ))
    .unwrap();
    assert_eq!(got, want);
}

/// Remote-code multimodal wrappers keep their language model's settings under their own key,
/// read as HF's `text_config` is, and errors name the path through it.
#[test]
fn multimodal_wrappers_language_model_is_read() {
    use posenc::Layout::{Interleaved, RotateHalf};
    // OpenGVLab/InternVL3-8B (`llm_config`), deepseek-ai/deepseek-vl2 (`language_config`).
    let internvl = r#"{"model_type": "internvl_chat", "llm_config": {"model_type": "qwen2",
        "hidden_size": 3584, "num_attention_heads": 28, "rope_theta": 1000000.0}}"#;
    assert_family(
        internvl,
        128,
        128,
        RotateHalf,
        &hf_inv_freq(1e6, 128, 64, 0),
    );
    let vl2 = r#"{"model_type": "deepseek_vl_v2", "language_config": {"model_type": "deepseek_v2",
        "hidden_size": 2560, "num_attention_heads": 10, "qk_rope_head_dim": 64}}"#;
    assert_family(vl2, 64, 64, Interleaved, &hf_inv_freq(1e4, 64, 32, 0));
    // Qwen/Qwen2.5-Omni-7B: the thinker's text model, M-RoPE in halves (Qwen2.5-VL's
    // `apply_multimodal_rotary_pos_emb`); the talker beside it has a rope of its own.
    let omni = r#"{"model_type": "qwen2_5_omni", "thinker_config": {
        "model_type": "qwen2_5_omni_thinker", "text_config": {"model_type": "qwen2_5_omni_text",
        "hidden_size": 3584, "num_attention_heads": 28, "rope_theta": 1000000.0,
        "rope_scaling": {"mrope_section": [16, 24, 24], "rope_type": "default", "type": "default"}}},
        "talker_config": {"model_type": "qwen2_5_omni_talker", "hidden_size": 896,
        "num_attention_heads": 12, "head_dim": 128, "rope_theta": 1000000.0}}"#;
    assert_family(omni, 128, 128, RotateHalf, &hf_inv_freq(1e6, 128, 64, 0));
    let rope = *ropes_from_hf_config(omni).unwrap().single().unwrap();
    assert_eq!(
        rope.axes(),
        posenc::Axes::MRope {
            sections: [16, 24, 24]
        }
    );
    // Qwen/Qwen3-Omni-30B-A3B-Instruct: the thinker's text model is Qwen3-VL-MoE's, M-RoPE
    // with the sections interleaved; its dict names that twice (`interleaved`,
    // `mrope_interleaved`), and HF interleaves without either.
    let omni3 = |scaling: &str| {
        format!(
            r#"{{"model_type": "qwen3_omni_moe", "thinker_config": {{
            "model_type": "qwen3_omni_moe_thinker", "text_config": {{
            "model_type": "qwen3_omni_moe_text", "head_dim": 128, "hidden_size": 2048,
            "num_attention_heads": 32, "rope_theta": 1000000,
            "rope_scaling": {{{scaling}"mrope_section": [24, 20, 20], "rope_type": "default",
            "type": "default"}}}}}}}}"#
        )
    };
    for flags in [
        r#""interleaved": true, "mrope_interleaved": true, "#,
        r#""interleaved": true, "#,
        "",
    ] {
        let json = omni3(flags);
        assert_family(&json, 128, 128, RotateHalf, &hf_inv_freq(1e6, 128, 64, 0));
        let rope = *ropes_from_hf_config(&json).unwrap().single().unwrap();
        assert_eq!(
            rope.axes(),
            posenc::Axes::MRopeInterleaved {
                sections: [24, 20, 20]
            },
            "{flags}"
        );
    }
    let e = ropes_from_hf_config(&omni3(
        r#""interleaved": false, "mrope_interleaved": true, "#,
    ))
    .unwrap_err();
    assert_eq!(
        (e.key.as_str(), e.kind),
        (
            "thinker_config.text_config.rope_scaling.interleaved",
            ConfigErrorKind::Contradiction
        )
    );
    // Another model's dict has no `interleaved`.
    let e = ropes_from_hf_config(
        &omni3(r#""interleaved": true, "#).replace("qwen3_omni_moe_text", "qwen2_5_omni_text"),
    )
    .unwrap_err();
    assert_eq!(e.kind, ConfigErrorKind::UnknownKey);
    // The class default θ of that text model is 1e6, not Llama's 10000.
    let bare = r#"{"thinker_config": {"text_config": {"model_type": "qwen2_5_omni_text",
        "hidden_size": 3584, "num_attention_heads": 28}}}"#;
    assert_family(bare, 128, 128, RotateHalf, &hf_inv_freq(1e6, 128, 64, 0));
    // Malformed wrappers: a typed error on the key at fault.
    for (json, key, kind) in [
        (
            r#"{"llm_config": {"head_dim": 64, "rope_theta": "x"}}"#,
            "llm_config.rope_theta",
            ConfigErrorKind::WrongType,
        ),
        (
            r#"{"head_dim": 64, "language_config": 3}"#,
            "language_config",
            ConfigErrorKind::WrongType,
        ),
        (
            r#"{"thinker_config": {"text_config": {"head_dim": 64, "rope_theta": "x"}}}"#,
            "thinker_config.text_config.rope_theta",
            ConfigErrorKind::WrongType,
        ),
        (
            r#"{"head_dim": 64, "thinker_config": {"model_type": "x"}}"#,
            "thinker_config.text_config",
            ConfigErrorKind::Missing,
        ),
        (
            r#"{"head_dim": 64, "thinker_config": {"text_config": []}}"#,
            "thinker_config.text_config",
            ConfigErrorKind::WrongType,
        ),
        (
            r#"{"head_dim": 64, "thinker_config": 1}"#,
            "thinker_config",
            ConfigErrorKind::WrongType,
        ),
    ] {
        let e = ropes_from_hf_config(json).unwrap_err();
        assert_eq!((e.key.as_str(), e.kind), (key, kind), "{json}");
    }
}

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

/// HF's default `inv_freq` (`1 / θ^(2j/d)`, the exponent rounded to f32 as torch's
/// `arange(0, d, 2).float() / d` does), evaluated here in f64, for `pairs` pairs; `zeros`
/// more pairs of 0 (proportional RoPE's unrotated tail).
fn hf_inv_freq(theta: f64, d: usize, pairs: usize, zeros: usize) -> Vec<f64> {
    (0..pairs)
        .map(|j| 1.0 / theta.powf(((2 * j) as f32 / d as f32) as f64))
        .chain(core::iter::repeat_n(0.0, zeros))
        .collect()
}

/// The rope `ropes.for_layer(layer)` against HF's values: head dim, rotate_half, unscaled
/// magnitude, and each frequency within one f32 rounding (a zero exactly).
fn assert_layer(ropes: &posenc::load::HfRopes, layer: usize, head_dim: usize, want: &[f64]) {
    assert_partial_layer(ropes, layer, head_dim, head_dim, want);
}

/// [`assert_layer`] for a rope over the first `rotary` channels of the head.
fn assert_partial_layer(
    ropes: &posenc::load::HfRopes,
    layer: usize,
    head_dim: usize,
    rotary: usize,
    want: &[f64],
) {
    let rope = ropes
        .for_layer(layer)
        .unwrap_or_else(|| panic!("layer {layer}: no rope"));
    assert_eq!(rope.head_dim(), head_dim, "layer {layer}");
    assert_eq!(rope.rotary_dim(), rotary, "layer {layer}");
    assert_eq!(rope.layout(), posenc::Layout::RotateHalf, "layer {layer}");
    assert_eq!(rope.attention_factor(), 1.0, "layer {layer}");
    assert_eq!(rope.inv_freq().len(), want.len(), "layer {layer}");
    for (j, (&w, &hf)) in rope.inv_freq().iter().zip(want).enumerate() {
        let ok = if hf == 0.0 {
            w == 0.0
        } else {
            ((w as f64 - hf) / hf).abs() <= f32::EPSILON as f64
        };
        assert!(ok, "layer {layer}, pair {j}: {w} vs HF {hf}");
    }
}

#[test]
fn gemma3n_sliding_layers_rotate_with_the_local_base() {
    // Gemma3nTextConfig: θ 1e6 (full), `rope_local_base_freq` 1e4 (sliding), `head_dim` 256,
    // `layer_types` every fifth full of `num_hidden_layers` (35); `rope_scaling` goes to the
    // full layers only (`rope_parameters["full_attention"].update(rope_scaling)`).
    let local = hf_inv_freq(1e4, 256, 128, 0);
    let global = hf_inv_freq(1e6, 256, 128, 0);
    for json in [
        r#"{"model_type": "gemma3n", "text_config": {"model_type": "gemma3n_text",
            "head_dim": 256, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0}}"#,
        r#"{"model_type": "gemma3n_text"}"#,
        r#"{"model_type": "gemma3n_text", "rope_parameters": {
            "sliding_attention": {"rope_type": "default"},
            "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}}"#,
    ] {
        let ropes = ropes_from_hf_config(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(ropes.layer_types().len(), 35, "{json}");
        for l in 0..35 {
            let want = if (l + 1) % 5 == 0 { &global } else { &local };
            assert_layer(&ropes, l, 256, want);
        }
    }
    let scaled = ropes_from_hf_config(
        r#"{"model_type": "gemma3n_text", "num_hidden_layers": 5,
        "rope_scaling": {"rope_type": "linear", "factor": 8.0}}"#,
    )
    .unwrap();
    assert_layer(&scaled, 0, 256, &local);
    let full = scaled.for_layer(4).unwrap();
    for (j, (&w, hf)) in full.inv_freq().iter().zip(&global).enumerate() {
        let hf = hf / 8.0;
        assert!(
            ((w as f64 - hf) / hf).abs() <= f32::EPSILON as f64,
            "pair {j}"
        );
    }
}

#[test]
fn gemma4_full_layers_rotate_a_quarter_of_wider_heads() {
    // Gemma4TextConfig: sliding layers θ 1e4 over `head_dim` (256); full layers
    // `global_head_dim` (512) wide, "proportional" RoPE with partial_rotary_factor 0.25:
    // `rope_angles = int(0.25 * 512 // 2)` = 64 frequencies θ^(−2j/512), then 192 zeros.
    let sliding = hf_inv_freq(1e4, 256, 128, 0);
    let full = hf_inv_freq(1e6, 512, 64, 192);
    let params = r#""rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                           "rope_theta": 1000000.0}}"#;
    for json in [
        format!(
            r#"{{"model_type": "gemma4", "text_config": {{"model_type": "gemma4_text",
            "head_dim": 256, "global_head_dim": 512, "num_hidden_layers": 30, {params}}}}}"#
        ),
        // The config class's defaults: the same ropes, 30 layers.
        r#"{"model_type": "gemma4_text"}"#.to_owned(),
    ] {
        let ropes = ropes_from_hf_config(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(ropes.layer_types().len(), 30, "{json}");
        for l in 0..30 {
            if (l + 1) % 6 == 0 {
                assert_layer(&ropes, l, 512, &full);
            } else {
                assert_layer(&ropes, l, 256, &sliding);
            }
        }
    }
    // The last layer is full whatever the list says; `global_head_dim: null` keeps the width.
    let ropes = ropes_from_hf_config(&format!(
        r#"{{"model_type": "gemma4_text", "global_head_dim": null,
        "layer_types": ["full_attention", "sliding_attention", "sliding_attention"], {params}}}"#
    ))
    .unwrap();
    assert_eq!(
        ropes.layer_types(),
        ["full_attention", "sliding_attention", "full_attention"]
    );
    assert_layer(&ropes, 2, 256, &hf_inv_freq(1e6, 256, 32, 96));
    assert_layer(&ropes, 1, 256, &sliding);
    // HF reads nothing but `rope_parameters`, one dict per layer type, for Gemma 4.
    for (json, key, kind) in [
        (
            r#"{"model_type": "gemma4_text", "rope_theta": 10000.0}"#,
            "rope_theta",
            ConfigErrorKind::Contradiction,
        ),
        (
            r#"{"model_type": "gemma4_text", "rope_scaling": {"rope_type": "linear", "factor": 2}}"#,
            "rope_scaling",
            ConfigErrorKind::Contradiction,
        ),
        (
            r#"{"model_type": "gemma4_text", "rope_parameters": {"rope_type": "default"}}"#,
            "rope_parameters",
            ConfigErrorKind::Missing,
        ),
    ] {
        assert_eq!(err(json), (key.to_owned(), kind), "{json}");
    }
}

#[test]
fn modernbert_layers_take_the_global_or_local_base() {
    // ModernBertConfig: `global_rope_theta` 160000 on every `global_attn_every_n_layers`-th
    // layer from layer 0 (`"sliding_attention" if bool(i % n) else "full_attention"`),
    // `local_rope_theta` 10000 on the others; head 768 / 12.
    let (global, local) = (
        hf_inv_freq(160_000.0, 64, 32, 0),
        hf_inv_freq(1e4, 64, 32, 0),
    );
    for json in [
        r#"{"model_type": "modernbert", "hidden_size": 768, "num_attention_heads": 12,
            "num_hidden_layers": 22, "global_attn_every_n_layers": 3,
            "global_rope_theta": 160000.0, "local_rope_theta": 10000.0}"#,
        r#"{"model_type": "modernbert", "hidden_size": 768, "num_attention_heads": 12}"#,
        r#"{"model_type": "modernbert", "hidden_size": 768, "num_attention_heads": 12,
            "rope_parameters": {"full_attention": {"rope_type": "default"},
                                "sliding_attention": {"rope_type": "default"}}}"#,
        r#"{"model_type": "modernbert-decoder", "hidden_size": 768, "num_attention_heads": 12,
            "layer_types": ["full_attention", "sliding_attention", "sliding_attention",
                "full_attention", "sliding_attention", "sliding_attention",
                "full_attention", "sliding_attention", "sliding_attention",
                "full_attention", "sliding_attention", "sliding_attention",
                "full_attention", "sliding_attention", "sliding_attention",
                "full_attention", "sliding_attention", "sliding_attention",
                "full_attention", "sliding_attention", "sliding_attention", "full_attention"],
            "rope_parameters": {
                "full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}"#,
    ] {
        let ropes = ropes_from_hf_config(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(ropes.layer_types().len(), 22, "{json}");
        for l in 0..22 {
            assert_layer(&ropes, l, 64, if l % 3 == 0 { &global } else { &local });
        }
    }
    // Another period; `local_rope_theta: null` is the global θ for every layer.
    let ropes = ropes_from_hf_config(
        r#"{"model_type": "modernbert", "head_dim": 64, "num_hidden_layers": 4,
        "global_attn_every_n_layers": 2, "local_rope_theta": null}"#,
    )
    .unwrap();
    assert_eq!(
        ropes.layer_types(),
        [
            "full_attention",
            "sliding_attention",
            "full_attention",
            "sliding_attention"
        ]
    );
    for l in 0..4 {
        assert_layer(&ropes, l, 64, &global);
    }
}

#[test]
fn published_gemma3n_gemma4_and_modernbert_configs_rotate_each_layer_as_hf() {
    let ropes = ropes_from_hf_config(&text("gemma-3n-e4b-it")).unwrap();
    let (local, global) = (hf_inv_freq(1e4, 256, 128, 0), hf_inv_freq(1e6, 256, 128, 0));
    assert_eq!(ropes.layer_types().len(), 35);
    for l in 0..35 {
        assert_layer(
            &ropes,
            l,
            256,
            if (l + 1) % 5 == 0 { &global } else { &local },
        );
    }

    let ropes = ropes_from_hf_config(&text("gemma-4-e4b-it.resaved")).unwrap();
    let full = hf_inv_freq(1e6, 512, 64, 192);
    assert_eq!(ropes.layer_types().len(), 42);
    for l in 0..42 {
        if (l + 1) % 6 == 0 {
            assert_layer(&ropes, l, 512, &full);
        } else {
            assert_layer(&ropes, l, 256, &local);
        }
    }

    let ropes = ropes_from_hf_config(&text("modernbert-base.resaved")).unwrap();
    let (global, local) = (
        hf_inv_freq(160_000.0, 64, 32, 0),
        hf_inv_freq(1e4, 64, 32, 0),
    );
    assert_eq!(ropes.layer_types().len(), 22);
    for l in 0..22 {
        assert_layer(&ropes, l, 64, if l % 3 == 0 { &global } else { &local });
    }
}

#[test]
fn mimo_v2_sliding_layers_take_swa_rope_theta() {
    // The Hub form (`mimo_v2`) as HF's convert_mimo_v2_flash_weights_to_hf.py reads it:
    // `hybrid_layer_pattern` 1 = sliding; full layers `rope_theta` (with `rope_scaling`),
    // sliding ones `swa_rope_theta`; both rotate int(192 · 0.334) = 64 channels.
    let (full, swa) = (hf_inv_freq(1e7, 64, 32, 0), hf_inv_freq(1e4, 64, 32, 0));
    let hub = r#""head_dim": 192, "swa_head_dim": 192, "partial_rotary_factor": 0.334,
        "swa_rope_theta": 10000.0, "hybrid_layer_pattern": [0, 1, 1, 1, 1, 0, 1, 1]"#;
    for json in [
        format!(r#"{{"model_type": "mimo_v2", "rope_theta": 10000000.0, {hub}}}"#),
        // A transformers-5 re-save keeps the Hub keys beside a flat `rope_parameters`.
        format!(
            r#"{{"model_type": "mimo_v2", "rope_theta": 10000000.0, {hub}, "rope_parameters":
            {{"partial_rotary_factor": 0.334, "rope_theta": 10000000.0, "rope_type": "default",
              "type": "default"}}}}"#
        ),
    ] {
        let ropes = ropes_from_hf_config(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(ropes.layer_types().len(), 8);
        for l in 0..8 {
            let want = if l % 5 == 0 { &full } else { &swa };
            assert_partial_layer(&ropes, l, 192, 64, want);
        }
    }
    // MiMoV2FlashConfig's defaults: 48 layers, full at 0 and every sixth, θ 5e6 / 1e4.
    let ropes = ropes_from_hf_config(r#"{"model_type": "mimo_v2_flash"}"#).unwrap();
    let full5 = hf_inv_freq(5e6, 64, 32, 0);
    assert_eq!(ropes.layer_types().len(), 48);
    for l in 0..48 {
        let want = if l == 0 || (l + 1) % 6 == 0 {
            &full5
        } else {
            &swa
        };
        assert_partial_layer(&ropes, l, 192, 64, want);
    }
    // `rope_scaling` goes to the full layers only.
    let ropes = ropes_from_hf_config(
        r#"{"model_type": "mimo_v2", "hybrid_layer_pattern": [0, 1],
        "rope_scaling": {"rope_type": "linear", "factor": 4.0}}"#,
    )
    .unwrap();
    let quarter: Vec<f64> = full5.iter().map(|w| w / 4.0).collect();
    assert_partial_layer(&ropes, 0, 192, 64, &quarter);
    assert_partial_layer(&ropes, 1, 192, 64, &swa);
    // A flat dict and a top-level θ that disagree.
    assert_eq!(
        err(r#"{"model_type": "mimo_v2", "rope_theta": 5000000.0,
            "rope_parameters": {"rope_theta": 10000000.0}}"#),
        ("rope_theta".to_owned(), ConfigErrorKind::Contradiction)
    );
}

#[test]
fn deepseek_v4_rotates_the_last_channels_by_layer_kind() {
    use posenc::{Layout, RopeConfig, Scaling, Yarn};
    // DeepseekV4Config: sliding layers (compress ratio 0) the "main" rope, θ `rope_theta`
    // unscaled; compressed ones (4: CSA, 128: HCA) the "compress" rope, θ
    // `compress_rope_theta` with the YaRN `rope_scaling` and `attention_factor` 1.0. Both
    // rotate the head's last `qk_rope_head_dim` channels (`x[..., -rope_dim:]`) in adjacent
    // pairs (`repeat_interleave(2)`).
    let yarn = Yarn {
        attention_factor: Some(1.0),
        ..Yarn::new(16.0, 65536)
    };
    let rope = |theta: f32, scaling: Scaling<'_>| {
        let cfg = RopeConfig::new(512, theta, Layout::Interleaved)
            .rotary_dim(64)
            .rotary_offset(448)
            .scaling(scaling);
        Rope::new(&cfg).unwrap()
    };
    let (main, compress) = (
        rope(1e4, Scaling::None),
        rope(160_000.0, Scaling::Yarn(yarn)),
    );
    assert_ne!(main, compress);
    let hub = r#""model_type": "deepseek_v4", "head_dim": 512, "qk_rope_head_dim": 64,
        "num_hidden_layers": 6, "rope_theta": 10000, "compress_rope_theta": 160000,
        "max_position_embeddings": 1048576, "compress_ratios": [0, 0, 4, 128, 4, 0, 0]"#;
    let scaling = r#"{"beta_fast": 32, "beta_slow": 1, "factor": 16,
        "original_max_position_embeddings": 65536, "type": "yarn"}"#;
    let nested = r#"{"main": {"rope_type": "default", "rope_theta": 10000.0,
            "partial_rotary_factor": 0.125},
        "compress": {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 65536,
            "beta_fast": 32, "beta_slow": 1, "attention_factor": 1.0, "rope_theta": 160000.0,
            "partial_rotary_factor": 0.125}}"#;
    for json in [
        format!(r#"{{{hub}, "rope_scaling": {scaling}}}"#),
        // transformers 5: the scaling as a flat `rope_parameters`, or nested by rope.
        format!(r#"{{{hub}, "rope_parameters": {scaling}}}"#),
        format!(r#"{{{hub}, "rope_parameters": {nested}}}"#),
    ] {
        let ropes = ropes_from_hf_config(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(ropes.layer_types().len(), 6, "{json}");
        for (l, want) in [main, main, compress, compress, compress, main]
            .iter()
            .enumerate()
        {
            assert_eq!(ropes.for_layer(l), Some(want), "layer {l}: {json}");
        }
    }
    // The config class's own list (43 layers): two heavily compressed layers, then heavily
    // and sparsely compressed in turn; every layer the compress rope.
    let ropes = ropes_from_hf_config(&format!(
        r#"{{"model_type": "deepseek_v4", "rope_scaling": {scaling}}}"#
    ))
    .unwrap();
    let types = ropes.layer_types();
    assert_eq!(types.len(), 43);
    assert_eq!(
        types[..5],
        [
            "heavily_compressed_attention",
            "heavily_compressed_attention",
            "heavily_compressed_attention",
            "compressed_sparse_attention",
            "heavily_compressed_attention"
        ]
    );
    assert!((0..43).all(|l| ropes.for_layer(l) == Some(&compress)));
    assert_eq!(
        err(r#"{"model_type": "deepseek_v4", "compress_ratios": [0, 8]}"#),
        ("compress_ratios".to_owned(), ConfigErrorKind::UnknownValue)
    );
}
