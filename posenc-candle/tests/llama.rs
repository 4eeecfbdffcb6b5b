//! A small Llama (candle-transformers 0.11.1's code, random weights from a fixed seed) run with
//! candle's rotary embedding and with posenc's: the logits agree, and at positions near 100k
//! posenc's exact angles are measurably closer to an f64 run of the same model.

#[path = "../examples/llama_rope/model.rs"]
mod model;
#[path = "../examples/llama_rope/weights.rs"]
mod weights;

use candle_core::{DType, Device, Result, Tensor};
use candle_transformers::models::llama as ct;
use model::{Cache, Llama, Rotary, candle_tables, f64_tables, inv_freq};
use posenc::{Layout, Rope};
use posenc_candle::RotaryEmbedding;

const SEED: u64 = 0x11a3a;

/// The posenc rotary of the model: its own f32 `inv_freq`, exact angles.
fn posenc_rotary(cfg: &ct::Config) -> Rotary {
    let head_dim = cfg.hidden_size / cfg.num_attention_heads;
    let rope = Rope::from_inv_freq(head_dim, Layout::RotateHalf, &inv_freq(cfg), 1.0).unwrap();
    Rotary::Posenc(Box::new(RotaryEmbedding::new(rope)))
}

/// Logits of a prompt at `index_pos`, then of `decode` greedy single tokens after it (KV
/// cache).
fn run(
    cfg: &ct::Config,
    rotary: Rotary,
    dtype: DType,
    prompt: &Tensor,
    index_pos: usize,
    decode: usize,
) -> Result<Vec<Vec<f64>>> {
    let w = weights::random_weights(cfg, SEED)?;
    let model = Llama::load(weights::var_builder(&w, dtype), cfg)?;
    let mut cache = Cache::new(true, rotary, cfg, &Device::Cpu);
    let mut out = Vec::new();
    let n = prompt.dim(1)?;
    let mut logits = if index_pos == 0 {
        model.forward(prompt, 0, &mut cache)?
    } else {
        // The model's causal mask assumes the cache holds positions 0..index_pos; starting
        // further on, feed the prompt one token at a time (no mask needed), keeping every
        // step's logits.
        for i in 0..n - 1 {
            let l = model.forward(&prompt.narrow(1, i, 1)?, index_pos + i, &mut cache)?;
            out.push(l.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()?);
        }
        model.forward(&prompt.narrow(1, n - 1, 1)?, index_pos + n - 1, &mut cache)?
    };
    for pos in index_pos + n..=index_pos + n + decode {
        out.push(
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

fn max_diff(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

fn max_abs(a: &[Vec<f64>]) -> f64 {
    a.iter().flatten().map(|x| x.abs()).fold(0.0, f64::max)
}

#[test]
fn the_copied_model_is_candle_transformers_llama() -> Result<()> {
    let cfg = weights::tiny_config(256);
    let prompt = weights::tokens(&cfg, 12, 1)?;
    let (cos, sin) = candle_tables(&cfg, DType::F32, &Device::Cpu)?;
    let ours = run(&cfg, Rotary::Candle { cos, sin }, DType::F32, &prompt, 0, 3)?;
    // candle-transformers' own model and cache on the same weights and tokens.
    let w = weights::random_weights(&cfg, SEED)?;
    let theirs_model = ct::Llama::load(weights::var_builder(&w, DType::F32), &cfg)?;
    let mut cache = ct::Cache::new(true, DType::F32, &cfg, &Device::Cpu)?;
    let mut logits = theirs_model.forward(&prompt, 0, &mut cache)?;
    for (pos, step) in (12..).zip(&ours) {
        assert_eq!(
            &logits
                .flatten_all()?
                .to_dtype(DType::F64)?
                .to_vec1::<f64>()?,
            step
        );
        let next = logits.argmax(candle_core::D::Minus1)?.unsqueeze(0)?;
        logits = theirs_model.forward(&next, pos, &mut cache)?;
    }
    Ok(())
}

#[test]
fn posenc_rotary_gives_candles_logits() -> Result<()> {
    let cfg = weights::tiny_config(256);
    let prompt = weights::tokens(&cfg, 16, 2)?;
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let (cos, sin) = candle_tables(&cfg, dtype, &Device::Cpu)?;
        let candle = run(
            &cfg,
            Rotary::Candle {
                cos: cos.clone(),
                sin: sin.clone(),
            },
            dtype,
            &prompt,
            0,
            4,
        )?;
        let table = run(&cfg, Rotary::PosencTable { cos, sin }, dtype, &prompt, 0, 4)?;
        let exact = run(&cfg, posenc_rotary(&cfg), dtype, &prompt, 0, 4)?;
        let scale = max_abs(&candle);
        let (dt, de) = (max_diff(&table, &candle), max_diff(&exact, &candle));
        eprintln!(
            "{dtype:?}: max |logit| {scale:.3}, posenc table vs candle {dt:.3e}, posenc exact vs candle {de:.3e}"
        );
        // Tolerance, relative to the largest logit: f32 1e-5 (a few f32 roundings carried
        // through two layers); 16-bit: the activations themselves are rounded to 8 (bf16) or
        // 11 (f16) bits after every layer, so one different rounding of a q/k element moves the
        // logits by up to a few of their ulps: 4e-2 (bf16), 5e-3 (f16).
        let tol = match dtype {
            DType::F32 => 1e-5,
            DType::BF16 => 4e-2,
            _ => 5e-3,
        } * scale;
        assert!(dt <= tol, "{dtype:?} table: {dt} > {tol}");
        assert!(de <= tol, "{dtype:?} exact: {de} > {tol}");
    }
    Ok(())
}

#[test]
fn exact_angles_are_closer_to_f64_near_position_100k() -> Result<()> {
    let start = 100_000;
    let cfg = weights::tiny_config(start + 64);
    let prompt = weights::tokens(&cfg, 16, 3)?;
    let (c64, s64) = f64_tables(&cfg, &Device::Cpu)?;
    let reference = run(
        &cfg,
        Rotary::Candle { cos: c64, sin: s64 },
        DType::F64,
        &prompt,
        start,
        4,
    )?;
    let (cos, sin) = candle_tables(&cfg, DType::F32, &Device::Cpu)?;
    let candle = run(
        &cfg,
        Rotary::Candle {
            cos: cos.clone(),
            sin: sin.clone(),
        },
        DType::F32,
        &prompt,
        start,
        4,
    )?;
    let table = run(
        &cfg,
        Rotary::PosencTable { cos, sin },
        DType::F32,
        &prompt,
        start,
        4,
    )?;
    let exact = run(&cfg, posenc_rotary(&cfg), DType::F32, &prompt, start, 4)?;
    let (ec, et, ee) = (
        max_diff(&candle, &reference),
        max_diff(&table, &reference),
        max_diff(&exact, &reference),
    );
    eprintln!(
        "positions {start}..{}: max |logit − f64| candle {ec:.3e}, posenc table (candle's tables) {et:.3e}, posenc exact {ee:.3e}; max |logit| {:.3}",
        start + 20,
        max_abs(&reference)
    );
    // The table path inherits the tables' angle error; exact angles leave only f32 rounding.
    assert!(ee * 10.0 < ec, "exact {ee} vs candle {ec}");
    assert!(
        et * 2.0 > ec,
        "posenc's table path should carry the tables' error: {et} vs {ec}"
    );
    // At small positions both are at f32 rounding level.
    let cfg0 = weights::tiny_config(64);
    let (c64, s64) = f64_tables(&cfg0, &Device::Cpu)?;
    let reference0 = run(
        &cfg0,
        Rotary::Candle { cos: c64, sin: s64 },
        DType::F64,
        &prompt,
        0,
        4,
    )?;
    let (cos, sin) = candle_tables(&cfg0, DType::F32, &Device::Cpu)?;
    let candle0 = run(
        &cfg0,
        Rotary::Candle { cos, sin },
        DType::F32,
        &prompt,
        0,
        4,
    )?;
    let exact0 = run(&cfg0, posenc_rotary(&cfg0), DType::F32, &prompt, 0, 4)?;
    let (ec0, ee0) = (
        max_diff(&candle0, &reference0),
        max_diff(&exact0, &reference0),
    );
    eprintln!("positions 0..20: candle {ec0:.3e}, posenc exact {ee0:.3e}");
    assert!(ee0 < 1e-4 && ec0 < 1e-4, "{ee0} {ec0}");
    Ok(())
}
