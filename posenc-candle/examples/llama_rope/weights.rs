//! A small Llama configuration and its random weights from a fixed seed (no checkpoint: the
//! comparison needs a real forward pass, not a trained model).
#![allow(dead_code)]

use candle_core::{DType, Device, Result, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::llama::Config;
use std::collections::HashMap;

/// 2 layers, 4 query / 2 key-value heads of 32 (GQA), Llama-3's θ = 500000; positions up to
/// `max_position_embeddings` (candle's tables are that long).
pub fn tiny_config(max_position_embeddings: usize) -> Config {
    Config {
        hidden_size: 128,
        intermediate_size: 256,
        vocab_size: 512,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        use_flash_attn: false,
        rms_norm_eps: 1e-5,
        rope_theta: 500_000.0,
        bos_token_id: None,
        eos_token_id: None,
        rope_scaling: None,
        max_position_embeddings,
        tie_word_embeddings: false,
    }
}

/// splitmix64 → uniform f32 in `[-a, a)`.
fn uniform(state: &mut u64, n: usize, a: f32) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let u = (z >> 40) as f32 / (1u64 << 24) as f32;
            a * (2.0 * u - 1.0)
        })
        .collect()
}

/// Every weight the model loads, f32, from `seed`: linear layers uniform with variance
/// `1/fan_in`, embeddings uniform in [-1, 1), norms `1 ± 0.1`.
pub fn random_weights(cfg: &Config, seed: u64) -> Result<HashMap<String, Tensor>> {
    let dev = Device::Cpu;
    let mut state = seed;
    let mut map = HashMap::new();
    let mut put = |name: String, shape: (usize, usize), a: f32, state: &mut u64| -> Result<()> {
        let v = uniform(state, shape.0 * shape.1, a);
        map.insert(name, Tensor::from_vec(v, shape, &dev)?);
        Ok(())
    };
    let (h, i, v) = (cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size);
    let head_dim = h / cfg.num_attention_heads;
    let kv = cfg.num_key_value_heads * head_dim;
    let lin = |fan_in: usize| (3.0 / fan_in as f32).sqrt();
    put("model.embed_tokens.weight".into(), (v, h), 1.0, &mut state)?;
    put("lm_head.weight".into(), (v, h), lin(h), &mut state)?;
    for l in 0..cfg.num_hidden_layers {
        let p = format!("model.layers.{l}");
        put(
            format!("{p}.self_attn.q_proj.weight"),
            (h, h),
            lin(h),
            &mut state,
        )?;
        put(
            format!("{p}.self_attn.k_proj.weight"),
            (kv, h),
            lin(h),
            &mut state,
        )?;
        put(
            format!("{p}.self_attn.v_proj.weight"),
            (kv, h),
            lin(h),
            &mut state,
        )?;
        put(
            format!("{p}.self_attn.o_proj.weight"),
            (h, h),
            lin(h),
            &mut state,
        )?;
        put(
            format!("{p}.mlp.gate_proj.weight"),
            (i, h),
            lin(h),
            &mut state,
        )?;
        put(
            format!("{p}.mlp.up_proj.weight"),
            (i, h),
            lin(h),
            &mut state,
        )?;
        put(
            format!("{p}.mlp.down_proj.weight"),
            (h, i),
            lin(i),
            &mut state,
        )?;
    }
    let mut norm = |name: String, state: &mut u64| -> Result<()> {
        let w: Vec<f32> = uniform(state, h, 0.1)
            .into_iter()
            .map(|x| 1.0 + x)
            .collect();
        map.insert(name, Tensor::from_vec(w, h, &dev)?);
        Ok(())
    };
    for l in 0..cfg.num_hidden_layers {
        norm(
            format!("model.layers.{l}.input_layernorm.weight"),
            &mut state,
        )?;
        norm(
            format!("model.layers.{l}.post_attention_layernorm.weight"),
            &mut state,
        )?;
    }
    norm("model.norm.weight".into(), &mut state)?;
    Ok(map)
}

/// A VarBuilder over `weights`, converted to `dtype` on load (f32 → f64 is exact).
pub fn var_builder(weights: &HashMap<String, Tensor>, dtype: DType) -> VarBuilder<'static> {
    VarBuilder::from_tensors(weights.clone(), dtype, &Device::Cpu)
}

/// `n` token ids from `seed`, shape `(1, n)`.
pub fn tokens(cfg: &Config, n: usize, seed: u64) -> Result<Tensor> {
    let mut state = seed;
    let ids: Vec<u32> = uniform(&mut state, n, 1.0)
        .into_iter()
        .map(|u| (((u + 1.0) / 2.0) * cfg.vocab_size as f32) as u32 % cfg.vocab_size as u32)
        .collect();
    Tensor::from_vec(ids, (1, n), &Device::Cpu)
}
