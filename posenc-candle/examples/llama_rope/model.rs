//! A Llama forward pass whose rotary embedding can be chosen: candle's own, or posenc's.
//!
//! Copied from candle-transformers 0.11.1, `src/models/llama.rs` (Copyright the Candle
//! authors, licensed MIT OR Apache-2.0, as this crate is), because that model's rotary
//! embedding is a private method over a private table (`Cache::cos/sin`) and cannot be
//! replaced from outside. Changes from the original, all marked `posenc:`:
//! * `Cache` holds a [`Rotary`] instead of the cos/sin tensors; `apply_rotary_emb` dispatches
//!   on it (the `Rotary::Candle` arm is the original code);
//! * an f64 model computes its attention in f64 (the original casts q/k/v to f32) and its
//!   RMS norms by candle_nn's composed (differentiable) path, as candle's fused `rms_norm`
//!   kernel has no f64: an f64 run is an f64 reference;
//! * `with_tracing` wrappers replaced by the candle_nn layers they wrap (same math), the
//!   flash-attn branch and the LLaVA entry points dropped, `utils::{build_causal_mask,
//!   repeat_kv}` copied in.
//!
//! `tests/llama.rs` checks that the `Rotary::Candle` arm gives bitwise candle-transformers'
//! own `Llama` logits, so this is the real model's code path.
#![allow(dead_code)]

use candle_core::{D, DType, Device, IndexOp, Result, Tensor};
use candle_nn::{
    Embedding, Linear, Module, RmsNorm, VarBuilder, embedding, linear_no_bias as linear,
};
use candle_transformers::models::llama::{Config, Llama3RopeConfig, Llama3RopeType};
use posenc_candle::RotaryEmbedding;
use std::{collections::HashMap, f32::consts::PI};

/// posenc: which rotary embedding the attention layers apply.
#[derive(Debug, Clone)]
pub enum Rotary {
    /// candle-transformers' own: `candle_nn::rotary_emb::rope` on rows of a cos/sin table.
    Candle { cos: Tensor, sin: Tensor },
    /// `posenc_candle::rope` (posenc's table path) on rows of the same kind of table.
    PosencTable { cos: Tensor, sin: Tensor },
    /// `posenc_candle::RotaryEmbedding`: exact angles from positions, rotated in place.
    Posenc(Box<RotaryEmbedding>),
}

/// The model's `inv_freq`, computed as candle-transformers' `Cache::new` does (f32).
pub fn inv_freq(config: &Config) -> Vec<f32> {
    let head_dim = config.hidden_size / config.num_attention_heads;
    let default: Vec<f32> = (0..head_dim)
        .step_by(2)
        .map(|i| 1f32 / config.rope_theta.powf(i as f32 / head_dim as f32))
        .collect();
    match &config.rope_scaling {
        None
        | Some(Llama3RopeConfig {
            rope_type: Llama3RopeType::Default,
            ..
        }) => default,
        Some(rope_scaling) => {
            let low_freq_wavelen =
                rope_scaling.original_max_position_embeddings as f32 / rope_scaling.low_freq_factor;
            let high_freq_wavelen = rope_scaling.original_max_position_embeddings as f32
                / rope_scaling.high_freq_factor;
            default
                .into_iter()
                .map(|freq| {
                    let wavelen = 2. * PI / freq;
                    if wavelen < high_freq_wavelen {
                        freq
                    } else if wavelen > low_freq_wavelen {
                        freq / rope_scaling.factor
                    } else {
                        let smooth = (rope_scaling.original_max_position_embeddings as f32
                            / wavelen
                            - rope_scaling.low_freq_factor)
                            / (rope_scaling.high_freq_factor - rope_scaling.low_freq_factor);
                        (1. - smooth) * freq / rope_scaling.factor + smooth * freq
                    }
                })
                .collect()
        }
    }
}

/// candle-transformers' cos/sin tables: `positions · inv_freq` as an f32 matmul, f32 cos/sin,
/// cast to `dtype` (the original `Cache::new`).
pub fn candle_tables(config: &Config, dtype: DType, device: &Device) -> Result<(Tensor, Tensor)> {
    let theta = Tensor::new(inv_freq(config), device)?;
    let idx_theta = Tensor::arange(0, config.max_position_embeddings as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((config.max_position_embeddings, 1))?
        .matmul(&theta.reshape((1, theta.elem_count()))?)?;
    Ok((
        idx_theta.cos()?.to_dtype(dtype)?,
        idx_theta.sin()?.to_dtype(dtype)?,
    ))
}

/// posenc: f64 tables of the same `inv_freq` (f32 values, widened): angles and cos/sin in f64,
/// for the f64 reference run.
pub fn f64_tables(config: &Config, device: &Device) -> Result<(Tensor, Tensor)> {
    let freq = inv_freq(config);
    let n = config.max_position_embeddings;
    let mut cos = Vec::with_capacity(n * freq.len());
    let mut sin = Vec::with_capacity(n * freq.len());
    for p in 0..n {
        for &w in &freq {
            let a = p as f64 * w as f64;
            cos.push(a.cos());
            sin.push(a.sin());
        }
    }
    Ok((
        Tensor::from_vec(cos, (n, freq.len()), device)?,
        Tensor::from_vec(sin, (n, freq.len()), device)?,
    ))
}

#[derive(Debug, Clone)]
pub struct Cache {
    masks: HashMap<(usize, usize), Tensor>,
    pub use_kv_cache: bool,
    kvs: Vec<Option<(Tensor, Tensor)>>,
    // posenc: the rotary embedding instead of the cos/sin tensors.
    rotary: Rotary,
    device: Device,
}

impl Cache {
    /// posenc: the original took `dtype` and built the tables; the caller now passes the
    /// [`Rotary`] (see [`candle_tables`]).
    pub fn new(use_kv_cache: bool, rotary: Rotary, config: &Config, device: &Device) -> Self {
        Self {
            masks: HashMap::new(),
            use_kv_cache,
            kvs: vec![None; config.num_hidden_layers],
            device: device.clone(),
            rotary,
        }
    }

    fn mask(&mut self, seq_len: usize, index_pos: usize) -> Result<Tensor> {
        let kv_len = index_pos + seq_len;
        if let Some(mask) = self.masks.get(&(seq_len, kv_len)) {
            Ok(mask.clone())
        } else {
            let mask = build_causal_mask(seq_len, index_pos, &self.device)?;
            self.masks.insert((seq_len, kv_len), mask.clone());
            Ok(mask)
        }
    }
}

/// candle-transformers `utils::build_causal_mask`.
fn build_causal_mask(seq_len: usize, index_pos: usize, device: &Device) -> Result<Tensor> {
    let kv_len = index_pos + seq_len;
    let mask: Vec<u8> = (0..seq_len)
        .flat_map(|i| (0..kv_len).map(move |j| u8::from(j > index_pos + i)))
        .collect();
    Tensor::from_slice(&mask, (seq_len, kv_len), device)
}

/// candle-transformers `utils::repeat_kv`.
fn repeat_kv(xs: Tensor, n_rep: usize) -> Result<Tensor> {
    if n_rep == 1 {
        Ok(xs)
    } else {
        let (b_sz, n_kv_head, seq_len, head_dim) = xs.dims4()?;
        Tensor::cat(&vec![&xs; n_rep], 2)?.reshape((b_sz, n_kv_head * n_rep, seq_len, head_dim))
    }
}

#[derive(Debug, Clone)]
struct CausalSelfAttention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    num_attention_heads: usize,
    num_key_value_heads: usize,
    head_dim: usize,
    max_position_embeddings: usize,
}

impl CausalSelfAttention {
    fn apply_rotary_emb(&self, x: &Tensor, index_pos: usize, cache: &Cache) -> Result<Tensor> {
        let (_b_sz, _, seq_len, _hidden_size) = x.dims4()?;
        match &cache.rotary {
            Rotary::Candle { cos, sin } => {
                let cos = cos.narrow(0, index_pos, seq_len)?;
                let sin = sin.narrow(0, index_pos, seq_len)?;
                candle_nn::rotary_emb::rope(x, &cos, &sin)
            }
            // posenc: the same call into posenc_candle's drop-in.
            Rotary::PosencTable { cos, sin } => {
                let cos = cos.narrow(0, index_pos, seq_len)?;
                let sin = sin.narrow(0, index_pos, seq_len)?;
                posenc_candle::rope(x, &cos, &sin)
            }
            // posenc: exact angles. `x` is the fresh result of `.contiguous()` on a transposed
            // projection (or, for one token, a view of the projection output nothing else
            // reads), so rotating its storage in place is safe.
            Rotary::Posenc(rot) => {
                let start = i32::try_from(index_pos).map_err(candle_core::Error::wrap)?;
                let positions: Vec<i32> = (start..).take(seq_len).collect();
                rot.apply_inplace(x, &positions)?;
                Ok(x.clone())
            }
        }
    }

    fn forward(
        &self,
        x: &Tensor,
        index_pos: usize,
        block_idx: usize,
        cache: &mut Cache,
    ) -> Result<Tensor> {
        let (b_sz, seq_len, hidden_size) = x.dims3()?;
        let q = self.q_proj.forward(x)?;
        let k = self.k_proj.forward(x)?;
        let v = self.v_proj.forward(x)?;

        let q = q
            .reshape((b_sz, seq_len, self.num_attention_heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let k = k
            .reshape((b_sz, seq_len, self.num_key_value_heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let mut v = v
            .reshape((b_sz, seq_len, self.num_key_value_heads, self.head_dim))?
            .transpose(1, 2)?;

        let q = self.apply_rotary_emb(&q, index_pos, cache)?;
        let mut k = self.apply_rotary_emb(&k, index_pos, cache)?;

        if cache.use_kv_cache {
            if let Some((cache_k, cache_v)) = &cache.kvs[block_idx] {
                k = Tensor::cat(&[cache_k, &k], 2)?.contiguous()?;
                v = Tensor::cat(&[cache_v, &v], 2)?.contiguous()?;
                let k_seq_len = k.dims()[1];
                if k_seq_len > self.max_position_embeddings {
                    k = k
                        .narrow(
                            D::Minus1,
                            k_seq_len - self.max_position_embeddings,
                            self.max_position_embeddings,
                        )?
                        .contiguous()?
                }
                let v_seq_len = v.dims()[1];
                if v_seq_len > 2 * self.max_position_embeddings {
                    v = v
                        .narrow(
                            D::Minus1,
                            v_seq_len - self.max_position_embeddings,
                            self.max_position_embeddings,
                        )?
                        .contiguous()?
                }
            }
            cache.kvs[block_idx] = Some((k.clone(), v.clone()))
        }

        let k = repeat_kv(k, self.num_attention_heads / self.num_key_value_heads)?;
        let v = repeat_kv(v, self.num_attention_heads / self.num_key_value_heads)?;

        let in_dtype = q.dtype();
        // posenc: f64 stays f64 (the original always computes attention in f32).
        let att_dtype = if in_dtype == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        let q = q.to_dtype(att_dtype)?;
        let k = k.to_dtype(att_dtype)?;
        let v = v.to_dtype(att_dtype)?;
        let att = (q.matmul(&k.t()?)? / (self.head_dim as f64).sqrt())?;
        let att = if seq_len == 1 {
            att
        } else {
            let mask = cache.mask(seq_len, index_pos)?.broadcast_as(att.shape())?;
            masked_fill(&att, &mask, f32::NEG_INFINITY)?
        };
        let att = candle_nn::ops::softmax_last_dim(&att)?;
        // Convert to contiguous as matmul doesn't support strided vs for now.
        let y = att.matmul(&v.contiguous()?)?.to_dtype(in_dtype)?;
        let y = y.transpose(1, 2)?.reshape(&[b_sz, seq_len, hidden_size])?;
        let y = self.o_proj.forward(&y)?;
        Ok(y)
    }

    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let size_in = cfg.hidden_size;
        let size_q = (cfg.hidden_size / cfg.num_attention_heads) * cfg.num_attention_heads;
        let size_kv = (cfg.hidden_size / cfg.num_attention_heads) * cfg.num_key_value_heads;
        let q_proj = linear(size_in, size_q, vb.pp("q_proj"))?;
        let k_proj = linear(size_in, size_kv, vb.pp("k_proj"))?;
        let v_proj = linear(size_in, size_kv, vb.pp("v_proj"))?;
        let o_proj = linear(size_q, size_in, vb.pp("o_proj"))?;
        Ok(Self {
            q_proj,
            k_proj,
            v_proj,
            o_proj,
            num_attention_heads: cfg.num_attention_heads,
            num_key_value_heads: cfg.num_key_value_heads,
            head_dim: cfg.hidden_size / cfg.num_attention_heads,
            max_position_embeddings: cfg.max_position_embeddings,
        })
    }
}

/// posenc: `norm(x)`, by candle_nn's composed path for f64 (its fused kernel refuses f64).
fn rms(norm: &RmsNorm, x: &Tensor) -> Result<Tensor> {
    if x.dtype() == DType::F64 {
        norm.forward_diff(x)
    } else {
        norm.forward(x)
    }
}

fn masked_fill(on_false: &Tensor, mask: &Tensor, on_true: f32) -> Result<Tensor> {
    let shape = mask.shape();
    // posenc: in `on_false`'s dtype (the original's f32 scalar only fits f32 attention).
    let on_true = Tensor::new(on_true, on_false.device())?
        .to_dtype(on_false.dtype())?
        .broadcast_as(shape.dims())?;
    let m = mask.where_cond(&on_true, on_false)?;
    Ok(m)
}

#[derive(Debug, Clone)]
struct Mlp {
    c_fc1: Linear,
    c_fc2: Linear,
    c_proj: Linear,
}

impl Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = (candle_nn::ops::silu(&self.c_fc1.forward(x)?)? * self.c_fc2.forward(x)?)?;
        self.c_proj.forward(&x)
    }

    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let h_size = cfg.hidden_size;
        let i_size = cfg.intermediate_size;
        let c_fc1 = linear(h_size, i_size, vb.pp("gate_proj"))?;
        let c_fc2 = linear(h_size, i_size, vb.pp("up_proj"))?;
        let c_proj = linear(i_size, h_size, vb.pp("down_proj"))?;
        Ok(Self {
            c_fc1,
            c_fc2,
            c_proj,
        })
    }
}

#[derive(Debug, Clone)]
struct Block {
    rms_1: RmsNorm,
    attn: CausalSelfAttention,
    rms_2: RmsNorm,
    mlp: Mlp,
}

impl Block {
    fn forward(
        &self,
        x: &Tensor,
        index_pos: usize,
        block_idx: usize,
        cache: &mut Cache,
    ) -> Result<Tensor> {
        let residual = x;
        let x = rms(&self.rms_1, x)?;
        let x = (self.attn.forward(&x, index_pos, block_idx, cache)? + residual)?;
        let residual = &x;
        let x = (self.mlp.forward(&rms(&self.rms_2, &x)?)? + residual)?;
        Ok(x)
    }

    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let attn = CausalSelfAttention::load(vb.pp("self_attn"), cfg)?;
        let mlp = Mlp::load(vb.pp("mlp"), cfg)?;
        let rms_1 =
            candle_nn::rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb.pp("input_layernorm"))?;
        let rms_2 = candle_nn::rms_norm(
            cfg.hidden_size,
            cfg.rms_norm_eps,
            vb.pp("post_attention_layernorm"),
        )?;
        Ok(Self {
            rms_1,
            attn,
            rms_2,
            mlp,
        })
    }
}

#[derive(Debug, Clone)]
pub struct Llama {
    wte: Embedding,
    blocks: Vec<Block>,
    ln_f: RmsNorm,
    lm_head: Linear,
}

impl Llama {
    pub fn forward(&self, x: &Tensor, index_pos: usize, cache: &mut Cache) -> Result<Tensor> {
        let (_b_sz, seq_len) = x.dims2()?;
        let mut x = self.wte.forward(x)?;
        for (block_idx, block) in self.blocks.iter().enumerate() {
            x = block.forward(&x, index_pos, block_idx, cache)?;
        }
        let x = rms(&self.ln_f, &x)?;
        let x = x.i((.., seq_len - 1, ..))?.contiguous()?;
        let logits = self.lm_head.forward(&x)?;
        logits.to_dtype(DType::F32)
    }

    pub fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let wte = embedding(cfg.vocab_size, cfg.hidden_size, vb.pp("model.embed_tokens"))?;
        let lm_head = if cfg.tie_word_embeddings {
            Linear::new(wte.embeddings().clone(), None)
        } else {
            linear(cfg.hidden_size, cfg.vocab_size, vb.pp("lm_head"))?
        };
        let ln_f = candle_nn::rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb.pp("model.norm"))?;
        let blocks = (0..cfg.num_hidden_layers)
            .map(|i| Block::load(vb.pp(format!("model.layers.{i}")), cfg))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            wte,
            blocks,
            ln_f,
            lm_head,
        })
    }
}
