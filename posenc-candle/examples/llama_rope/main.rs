//! A small Llama (candle-transformers' code, random weights) with candle's rotary embedding
//! and with posenc's, built from the same `config.json` text a runtime would read.
//!
//! ```sh
//! cargo run --release -p posenc-candle --example llama_rope
//! ```
//!
//! Prints how far each run's logits are from an f64 run of the same model, at positions
//! 0.. and 100000.., and how far posenc's logits are from candle's.

mod model;
mod weights;

use candle_core::{DType, Device, Result, Tensor};
use candle_transformers::models::llama::{Config, LlamaConfig};
use model::{Cache, Llama, Rotary, candle_tables, f64_tables, inv_freq};
use posenc_candle::RotaryEmbedding;

/// A Llama-3.1-style config (llama3 frequency scaling), tiny dimensions.
const CONFIG_JSON: &str = r#"{
  "model_type": "llama", "hidden_size": 128, "intermediate_size": 256, "vocab_size": 512,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "max_position_embeddings": 100064,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"}
}"#;

/// Logits (f64) of `prompt` at `index_pos` then 4 greedy decode steps.
fn run(
    cfg: &Config,
    rotary: Rotary,
    dtype: DType,
    prompt: &Tensor,
    index_pos: usize,
) -> Result<Vec<f64>> {
    let w = weights::random_weights(cfg, 0x11a3a)?;
    let model = Llama::load(weights::var_builder(&w, dtype), cfg)?;
    let mut cache = Cache::new(true, rotary, cfg, &Device::Cpu);
    let mut out = Vec::new();
    let n = prompt.dim(1)?;
    let mut logits = if index_pos == 0 {
        model.forward(prompt, 0, &mut cache)?
    } else {
        // The causal mask assumes the cache holds 0..index_pos: one token at a time instead.
        for i in 0..n - 1 {
            let l = model.forward(&prompt.narrow(1, i, 1)?, index_pos + i, &mut cache)?;
            out.extend(l.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()?);
        }
        model.forward(&prompt.narrow(1, n - 1, 1)?, index_pos + n - 1, &mut cache)?
    };
    for pos in index_pos + n..index_pos + n + 5 {
        out.extend(
            logits
                .flatten_all()?
                .to_dtype(DType::F64)?
                .to_vec1::<f64>()?,
        );
        let next = logits.argmax(candle_core::D::Minus1)?.unsqueeze(0)?;
        logits = model.forward(&next, pos, &mut cache)?;
    }
    Ok(out)
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

fn main() -> Result<()> {
    let llama: LlamaConfig = serde_json::from_str(CONFIG_JSON).map_err(candle_core::Error::wrap)?;
    let cfg = llama.into_config(false);
    let ropes =
        posenc::load::ropes_from_hf_config(CONFIG_JSON).map_err(candle_core::Error::wrap)?;
    let rope = *ropes.single().expect("one rope for every layer");
    let theirs = inv_freq(&cfg);
    let differ = rope
        .inv_freq()
        .iter()
        .zip(&theirs)
        .filter(|(a, b)| a != b)
        .count();
    println!(
        "inv_freq: posenc (from config.json) vs candle-transformers: {differ} of {} differ",
        theirs.len()
    );
    let rot = RotaryEmbedding::new(rope);
    let prompt = weights::tokens(&cfg, 16, 3)?;
    let dev = Device::Cpu;
    for start in [0, 100_000] {
        let (c64, s64) = f64_tables(&cfg, &dev)?;
        let reference = run(
            &cfg,
            Rotary::Candle { cos: c64, sin: s64 },
            DType::F64,
            &prompt,
            start,
        )?;
        let (cos, sin) = candle_tables(&cfg, DType::F32, &dev)?;
        let candle = run(
            &cfg,
            Rotary::Candle { cos, sin },
            DType::F32,
            &prompt,
            start,
        )?;
        let exact = run(
            &cfg,
            Rotary::Posenc(Box::new(rot.clone())),
            DType::F32,
            &prompt,
            start,
        )?;
        let scale = reference.iter().fold(0f64, |m, x| m.max(x.abs()));
        println!(
            "positions {start}..{}: max |logit| {scale:.3}; max |logit − f64 run|: candle {:.3e}, posenc {:.3e}; |posenc − candle| {:.3e}",
            start + 20,
            max_diff(&candle, &reference),
            max_diff(&exact, &reference),
            max_diff(&exact, &candle)
        );
    }
    Ok(())
}
