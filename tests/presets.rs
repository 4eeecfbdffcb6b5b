//! One test per `posenc::presets` row: the preset builds its `Rope`, and its values equal the
//! published config values, written here as literals with the place each was checked (the
//! same sources as the table in `src/presets.rs`; "unconfirmed" marks values that could not be
//! read from the checkpoint's own config). Rows whose scheme has a golden case in `tests/data`
//! (HF's f32 `inv_freq` buffer and `attention_scaling`) also compare against it: `inv_freq`
//! within 2 ulp (posenc's pow is correctly rounded where torch's is not; see
//! `tests/golden_scaling.rs`), the attention factor within 2e-7 relative, and the golden
//! case's own scheme parameters against the preset's, so the comparison is of like with like.

mod common;

use common::ulps;
use posenc::presets::{self, Preset};
use posenc::{Axes, Layout, LongRope, Rope, Scaling, Yarn};

/// Builds the rope and checks the geometry every preset shares.
#[allow(clippy::too_many_arguments)]
fn geometry(
    p: &Preset,
    head_dim: usize,
    rotary_dim: usize,
    base: f32,
    layout: Layout,
    n_heads: usize,
    n_kv_heads: usize,
    axes: Axes,
) -> Rope {
    let rope = p
        .rope()
        .unwrap_or_else(|e| panic!("{}: Rope::new: {e}", p.name));
    assert_eq!(p.head_dim, head_dim, "{}: head_dim", p.name);
    assert_eq!(p.rotary_dim, rotary_dim, "{}: rotary_dim", p.name);
    assert_eq!(p.base, base, "{}: rope_theta", p.name);
    assert_eq!(p.layout, layout, "{}: layout", p.name);
    assert_eq!(p.n_heads, n_heads, "{}: num_attention_heads", p.name);
    assert_eq!(p.n_kv_heads, n_kv_heads, "{}: num_key_value_heads", p.name);
    assert_eq!(p.axes, axes, "{}: axes", p.name);
    assert_eq!(
        (
            rope.head_dim(),
            rope.rotary_dim(),
            rope.layout(),
            rope.axes()
        ),
        (head_dim, rotary_dim, layout, axes),
        "{}: the rope built from the preset",
        p.name
    );
    assert_eq!(rope.inv_freq().len(), rotary_dim / 2, "{}", p.name);
    assert!(!p.checkpoint.is_empty() && !p.name.is_empty());
    rope
}

/// The preset's `inv_freq` and attention factor against a golden case, plus the case's
/// `rope.*` parameters against the expected literals. Returns the largest ulp distance.
fn golden(rope: &Rope, case: &str, params: &[(&str, f64)]) -> u64 {
    let c = common::Case::load(case);
    for &(key, want) in params {
        assert_eq!(
            c.f64(key),
            want,
            "{case}: golden case parameter {key} is not the preset's"
        );
    }
    let hf = c.array("inv_freq").to_f32();
    assert_eq!(hf.len(), rope.inv_freq().len(), "{case}: inv_freq length");
    let mut worst = 0;
    for (j, (&mine, &theirs)) in rope.inv_freq().iter().zip(&hf).enumerate() {
        let d = ulps(mine, theirs);
        assert!(
            d <= 2,
            "{case}: inv_freq[{j}] {mine:e} vs HF {theirs:e}: {d} ulp"
        );
        worst = worst.max(d);
    }
    let af = c.f64("attention_scaling");
    let rel = (rope.attention_factor() as f64 - af).abs() / af;
    assert!(
        rel <= 2e-7,
        "{case}: attention factor {} vs HF {af}",
        rope.attention_factor()
    );
    println!("{case}: inv_freq max {worst} ulp from HF, attention factor rel diff {rel:.1e}");
    worst
}

fn llama3(p: &Preset) -> (f32, f32, f32, u32) {
    match p.scaling {
        Scaling::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_positions,
        } => (
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_positions,
        ),
        other => panic!("{}: expected llama3 scaling, got {other:?}", p.name),
    }
}

fn yarn(p: &Preset) -> Yarn {
    match p.scaling {
        Scaling::Yarn(y) => y,
        other => panic!("{}: expected YaRN, got {other:?}", p.name),
    }
}

// Llama -------------------------------------------------------------------------------------

#[test]
fn llama_2_7b() {
    // HF convert_llama_weights_to_hf.py: rope_theta default 10000.0, context 4096 for "2";
    // hidden 4096 / 32 heads, n_kv_heads = n_heads (published config copies).
    let p = presets::LLAMA_2_7B;
    geometry(
        &p,
        128,
        128,
        10_000.0,
        Layout::RotateHalf,
        32,
        32,
        Axes::Single,
    );
    assert_eq!(p.scaling, Scaling::None);
}

#[test]
fn llama_3_8b() {
    // rope_theta 500000.0, 32 / 8 heads, hidden 4096 (config copies); context 8192 for "3" in
    // HF's convert script: no rope_scaling.
    let p = presets::LLAMA_3_8B;
    geometry(
        &p,
        128,
        128,
        500_000.0,
        Layout::RotateHalf,
        32,
        8,
        Axes::Single,
    );
    assert_eq!(p.scaling, Scaling::None);
}

#[test]
fn llama_3_1_8b() {
    // HF convert_llama_weights_to_hf.py for "3.1": factor 8.0, low_freq_factor 1.0,
    // high_freq_factor 4.0, original_max_position_embeddings 8192, rope_type llama3.
    let p = presets::LLAMA_3_1_8B;
    let rope = geometry(
        &p,
        128,
        128,
        500_000.0,
        Layout::RotateHalf,
        32,
        8,
        Axes::Single,
    );
    assert_eq!(llama3(&p), (8.0, 1.0, 4.0, 8192));
    golden(
        &rope,
        "rope_llama_llama3_x8_hd128_f32_arbpos",
        &[
            ("rope.rope_theta", 500_000.0),
            ("rope.factor", 8.0),
            ("rope.low_freq_factor", 1.0),
            ("rope.high_freq_factor", 4.0),
            ("rope.original_max_position_embeddings", 8192.0),
            ("head_dim", 128.0),
            ("rotary_dim", 128.0),
        ],
    );
}

#[test]
fn llama_3_2_1b() {
    // meta-llama/Llama-3.2-1B-Instruct config.json (copy with _commit_hash 4e20de36…):
    // head_dim 64, hidden 2048, 32 / 8 heads, rope_theta 500000.0, rope_scaling llama3 with
    // factor 32.0, 1.0 / 4.0, 8192 (also HF's convert script: "3.2" → factor 32).
    let p = presets::LLAMA_3_2_1B;
    geometry(
        &p,
        64,
        64,
        500_000.0,
        Layout::RotateHalf,
        32,
        8,
        Axes::Single,
    );
    assert_eq!(llama3(&p), (32.0, 1.0, 4.0, 8192));
}

#[test]
fn llama_3_2_3b() {
    // Llama-3.2-3B: hidden 3072, 24 / 8 heads (→ head_dim 128), rope_theta 500000, llama3
    // factor 32.0, 1.0 / 4.0, 8192 (config copies; HF convert script for "3.2").
    let p = presets::LLAMA_3_2_3B;
    geometry(
        &p,
        128,
        128,
        500_000.0,
        Layout::RotateHalf,
        24,
        8,
        Axes::Single,
    );
    assert_eq!(llama3(&p), (32.0, 1.0, 4.0, 8192));
}

// Mistral -----------------------------------------------------------------------------------

#[test]
fn mistral_7b_v0_1() {
    // HF MistralConfig, "defaults yield Mistral-7B-v0.1": hidden 4096, 32 heads, 8 KV heads;
    // rope_theta 10000 is HF's default (unconfirmed against the checkpoint's config.json).
    let p = presets::MISTRAL_7B_V0_1;
    geometry(
        &p,
        128,
        128,
        10_000.0,
        Layout::RotateHalf,
        32,
        8,
        Axes::Single,
    );
    assert_eq!(p.scaling, Scaling::None);
}

#[test]
fn mistral_7b_v0_3() {
    // rope_theta 1000000.0 as in Mistral-7B-v0.2 configs seen in ports; v0.3 keeps the v0.2
    // architecture (its own config.json unconfirmed here).
    let p = presets::MISTRAL_7B_V0_3;
    geometry(&p, 128, 128, 1e6, Layout::RotateHalf, 32, 8, Axes::Single);
    assert_eq!(p.scaling, Scaling::None);
}

#[test]
fn mistral_nemo_12b() {
    // mistralai/Mistral-Nemo-Base-2407 config.json (copy): head_dim 128, hidden 5120,
    // 32 / 8 heads, rope_theta 1000000.0, no rope_scaling.
    let p = presets::MISTRAL_NEMO_12B;
    geometry(&p, 128, 128, 1e6, Layout::RotateHalf, 32, 8, Axes::Single);
    assert_eq!(p.scaling, Scaling::None);
}

// Qwen --------------------------------------------------------------------------------------

#[test]
fn qwen2_5_7b() {
    // Qwen2.5-7B: q_proj 3584 → 3584, k_proj 3584 → 512 (module dump): 28 heads of 128, 4 KV
    // heads; rope_theta 1000000.0 as every Qwen2 config (the 7B's own unconfirmed here).
    let p = presets::QWEN2_5_7B;
    geometry(&p, 128, 128, 1e6, Layout::RotateHalf, 28, 4, Axes::Single);
    assert_eq!(p.scaling, Scaling::None);
}

#[test]
fn qwen2_5_7b_yarn() {
    // The Qwen2.5 model card's long-context setting: {"factor": 4.0,
    // "original_max_position_embeddings": 32768, "type": "yarn"} (card not retrieved here;
    // the golden case is that setting, "Qwen2.5-style YaRN", theta 1e6).
    let p = presets::QWEN2_5_7B_YARN;
    let rope = geometry(&p, 128, 128, 1e6, Layout::RotateHalf, 28, 4, Axes::Single);
    assert_eq!(
        yarn(&p),
        Yarn::new(4.0, 32_768),
        "HF defaults otherwise: beta 32 / 1, no mscale, truncate"
    );
    golden(
        &rope,
        "rope_llama_yarn_x4_hd128_f32_arbpos",
        &[
            ("rope.rope_theta", 1e6),
            ("rope.factor", 4.0),
            ("rope.original_max_position_embeddings", 32_768.0),
            ("head_dim", 128.0),
        ],
    );
}

#[test]
fn qwen2_vl_7b() {
    // Qwen2-VL-7B language model: 28 layers of q 3584 → 3584, k 3584 → 512 (module dump),
    // rope_scaling {"type": "mrope", "mrope_section": [16, 24, 24]} (REFERENCE.md; HF
    // apply_multimodal_rotary_pos_emb); rope_theta 1e6 (unconfirmed from the checkpoint).
    let p = presets::QWEN2_VL_7B;
    let axes = Axes::MRope {
        sections: [16, 24, 24],
    };
    let rope = geometry(&p, 128, 128, 1e6, Layout::RotateHalf, 28, 4, axes);
    assert_eq!(p.scaling, Scaling::None);
    // M-RoPE keeps the plain frequencies.
    assert_eq!(
        rope.inv_freq(),
        presets::QWEN2_5_7B.rope().unwrap().inv_freq()
    );
}

#[test]
fn qwen2_vl_vit() {
    // Qwen2-VL vision tower: embed_dim 1280 (qkv Linear(1280, 3840) in the module dump),
    // 16 heads → head_dim 80; VisionRotaryEmbedding(head_dim // 2), theta 10000.
    let p = presets::QWEN2_VL_VIT;
    let rope = geometry(
        &p,
        80,
        80,
        10_000.0,
        Layout::RotateHalf,
        16,
        16,
        Axes::Vision2d,
    );
    // Index reset per half: the column half repeats the row half's frequencies.
    assert_eq!(rope.inv_freq()[..20], rope.inv_freq()[20..]);
    assert_eq!(rope.inv_freq()[0], 1.0);
}

#[test]
fn qwen3_vl_8b() {
    // HF modeling_qwen3_vl.py: mrope_section default [24, 20, 20], apply_interleaved_mrope;
    // Qwen3-VL text configs: head_dim 128, rope_theta 5000000, "mrope_interleaved": true.
    // 32 query heads (hidden 4096 / 128); 8 KV heads unconfirmed.
    let p = presets::QWEN3_VL_8B;
    let axes = Axes::MRopeInterleaved {
        sections: [24, 20, 20],
    };
    geometry(&p, 128, 128, 5e6, Layout::RotateHalf, 32, 8, axes);
    assert_eq!(p.scaling, Scaling::None);
}

// DeepSeek ----------------------------------------------------------------------------------

#[test]
fn deepseek_v3() {
    // HF DeepseekV3Config: qk_rope_head_dim 64 (= head_dim used by RoPE), 128 heads, 128 KV
    // heads, rope_interleave true; rope_scaling yarn factor 40, original 4096, beta_fast 32,
    // beta_slow 1, mscale 1.0, mscale_all_dim 1.0, rope_theta 10000 (golden case manifest
    // "DeepSeek-V3 rope settings"; also a torchtitan-style port: rope_factor 40,
    // original_seq_len 4096, beta 32 / 1, mscale 1.0).
    let p = presets::DEEPSEEK_V3;
    let rope = geometry(
        &p,
        64,
        64,
        10_000.0,
        Layout::Interleaved,
        128,
        128,
        Axes::Single,
    );
    assert_eq!(
        yarn(&p),
        Yarn {
            mscale: Some(1.0),
            mscale_all_dim: Some(1.0),
            ..Yarn::new(40.0, 4096)
        }
    );
    assert_eq!(rope.attention_factor(), 1.0);
    golden(
        &rope,
        "rope_deepseekv3_yarn_interleave_x40_hd64_f32_arbpos",
        &[
            ("rope.rope_theta", 10_000.0),
            ("rope.factor", 40.0),
            ("rope.original_max_position_embeddings", 4096.0),
            ("rope.beta_fast", 32.0),
            ("rope.beta_slow", 1.0),
            ("rope.mscale", 1.0),
            ("rope.mscale_all_dim", 1.0),
            ("head_dim", 64.0),
        ],
    );
    // The layout subtlety: HF writes the output de-interleaved. posenc's interleaved output,
    // permuted to rotate_half order, is what HF returns (same math, other channel order).
    let x0: Vec<f32> = (0..64).map(|i| (i as f32 * 0.37).sin()).collect();
    let mut ours = x0.clone();
    rope.apply(&mut ours, 1, &[1234]).unwrap();
    let mut hf_order = vec![0.0f32; 64];
    posenc::permute::permute_to_rotate_half(&ours, &mut hf_order, 1, 64, 64).unwrap();
    let mut via_half = vec![0.0f32; 64];
    posenc::permute::permute_to_rotate_half(&x0, &mut via_half, 1, 64, 64).unwrap();
    let half = posenc::RopeConfig {
        layout: Layout::RotateHalf,
        ..p.config()
    };
    Rope::new(&half)
        .unwrap()
        .with_backend(rope.backend())
        .unwrap()
        .apply(&mut via_half, 1, &[1234])
        .unwrap();
    assert_eq!(hf_order, via_half);
}

// Phi-3 -------------------------------------------------------------------------------------

#[test]
fn phi_3_mini_128k() {
    // Phi-3 128k config (copy): hidden 3072, 32 heads, 32 KV heads (→ 96), rope_theta 10000.0,
    // original_max_position_embeddings 4096, max_position_embeddings 131072, LongRoPE ("su")
    // with 48-value factor lists. The lists are the caller's (not built in); the golden
    // case's own lists stand in for them, and its inv_freq must come out.
    let layout = presets::PHI_3_MINI_128K_LAYOUT;
    geometry(
        &layout,
        96,
        96,
        10_000.0,
        Layout::RotateHalf,
        32,
        32,
        Axes::Single,
    );
    assert_eq!(layout.scaling, Scaling::None);
    for (case, use_long) in [
        ("rope_phi3_longrope_long_hd96_f32_arbpos", true),
        ("rope_phi3_longrope_short_hd96_f32_contig", false),
    ] {
        let c = common::Case::load(case);
        let f = |k| -> Vec<f32> { c.list_f64(k).into_iter().map(|v| v as f32).collect() };
        let (short, long) = (f("rope.short_factor"), f("rope.long_factor"));
        assert_eq!((short.len(), long.len()), (48, 48));
        let p = presets::phi_3_mini_128k(&short, &long, use_long);
        let rope = geometry(
            &p,
            96,
            96,
            10_000.0,
            Layout::RotateHalf,
            32,
            32,
            Axes::Single,
        );
        assert_eq!(
            p.scaling,
            Scaling::LongRope(LongRope {
                short_factor: &short,
                long_factor: &long,
                original_max_positions: 4096,
                max_positions: 131_072,
                use_long,
                attention_factor: None,
            })
        );
        golden(
            &rope,
            case,
            &[
                ("rope.rope_theta", 10_000.0),
                ("rope.original_max_position_embeddings", 4096.0),
                ("max_position_embeddings", 131_072.0),
                ("head_dim", 96.0),
            ],
        );
    }
}

// Partial rotary ----------------------------------------------------------------------------

#[test]
fn gpt_neox_20b() {
    // GPT-NeoX-20B: hidden_size 6144, num_attention_heads 64 (→ 96), rotary_pct 0.25
    // (→ 24), rotary_emb_base 10000 (config copies).
    let p = presets::GPT_NEOX_20B;
    geometry(
        &p,
        96,
        24,
        10_000.0,
        Layout::RotateHalf,
        64,
        64,
        Axes::Single,
    );
    assert_eq!(p.rotary_dim as f64, 0.25 * 96.0);
    // Partial rotary: the exponent runs over the 24 rotated channels.
    let rope = p.rope().unwrap();
    assert_eq!(rope.inv_freq()[6], 1.0 / 10f32.powi(2)); // 1e4^(12/24)
}

#[test]
fn gpt_j_6b() {
    // EleutherAI/gpt-j-6b model card: d_model 4096, 16 heads, d_head 256, "RoPE dimensions
    // 64"; HF GPT-J rotate_every_two (interleaved pairs); base 10000.
    let p = presets::GPT_J_6B;
    geometry(
        &p,
        256,
        64,
        10_000.0,
        Layout::Interleaved,
        16,
        16,
        Axes::Single,
    );
    assert_eq!(p.scaling, Scaling::None);
}

#[test]
fn glm_4_9b() {
    // HF Glm4Config: head_dim 128, 32 heads, 2 KV heads, partial_rotary_factor 0.5;
    // modeling_glm4.py rotate_half takes x[..., 0::2] / x[..., 1::2] (interleaved pairs) over
    // the first half of the head. rope_theta 10000: HF default (unconfirmed vs checkpoint).
    let p = presets::GLM_4_9B;
    geometry(
        &p,
        128,
        64,
        10_000.0,
        Layout::Interleaved,
        32,
        2,
        Axes::Single,
    );
    assert_eq!(p.rotary_dim as f64, 0.5 * 128.0);
}

// Gemma -------------------------------------------------------------------------------------

#[test]
fn gemma_2_9b() {
    // Gemma2Config(num_attention_heads=16, num_key_value_heads=8, head_dim=256, ...) for
    // GEMMA2_9B in a checkpoint-conversion port; rope_theta 10000.0 (Gemma2Config default).
    let p = presets::GEMMA_2_9B;
    geometry(
        &p,
        256,
        256,
        10_000.0,
        Layout::RotateHalf,
        16,
        8,
        Axes::Single,
    );
    assert_eq!(p.scaling, Scaling::None);
}

#[test]
fn gemma_3_4b_local() {
    // HF Gemma3TextConfig: rope_local_base_freq 10000.0, head_dim 256, 8 heads, 4 KV heads.
    let p = presets::GEMMA_3_4B_LOCAL;
    geometry(
        &p,
        256,
        256,
        10_000.0,
        Layout::RotateHalf,
        8,
        4,
        Axes::Single,
    );
    assert_eq!(p.scaling, Scaling::None);
}

#[test]
fn gemma_3_4b_global() {
    // HF Gemma3TextConfig: rope_theta 1000000.0 for global layers; rope_scaling linear with
    // factor 8 on global layers (a port's rope_scaling_factor_global 8; the checkpoint's
    // config.json unconfirmed here).
    let p = presets::GEMMA_3_4B_GLOBAL;
    let rope = geometry(&p, 256, 256, 1e6, Layout::RotateHalf, 8, 4, Axes::Single);
    assert_eq!(p.scaling, Scaling::Linear { factor: 8.0 });
    let plain = posenc::RopeConfig {
        scaling: Scaling::None,
        ..p.config()
    };
    let plain = Rope::new(&plain).unwrap();
    for (a, b) in rope.inv_freq().iter().zip(plain.inv_freq()) {
        assert_eq!(*a, b / 8.0);
    }
}

// gpt-oss -----------------------------------------------------------------------------------

#[test]
fn gpt_oss_20b() {
    // openai/gpt-oss-20b config: head_dim 64, 64 heads, 8 KV heads, rope_theta 150000,
    // rope_scaling {beta_fast 32.0, beta_slow 1.0, factor 32.0,
    // original_max_position_embeddings 4096, rope_type yarn, truncate false}.
    let p = presets::GPT_OSS_20B;
    let rope = geometry(
        &p,
        64,
        64,
        150_000.0,
        Layout::RotateHalf,
        64,
        8,
        Axes::Single,
    );
    assert_eq!(
        yarn(&p),
        Yarn {
            truncate: false,
            ..Yarn::new(32.0, 4096)
        }
    );
    golden(
        &rope,
        "rope_gptoss_yarn_notrunc_x32_hd64_f32_arbpos",
        &[
            ("rope.rope_theta", 150_000.0),
            ("rope.factor", 32.0),
            ("rope.original_max_position_embeddings", 4096.0),
            ("rope.beta_fast", 32.0),
            ("rope.beta_slow", 1.0),
            ("head_dim", 64.0),
        ],
    );
}

// The list ------------------------------------------------------------------------------------

#[test]
fn all_lists_every_constant_once_and_each_builds() {
    let all = presets::ALL;
    assert_eq!(all.len(), 22);
    for (i, p) in all.iter().enumerate() {
        p.rope().unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert!(
            all[..i].iter().all(|q| q.name != p.name),
            "{} listed twice",
            p.name
        );
    }
}
