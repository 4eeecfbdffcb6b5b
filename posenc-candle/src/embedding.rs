//! `RotaryEmbedding`: a posenc `Rope` applied to candle tensors from positions, exact angles.

use crate::wrap;
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, DType, InplaceOp1, Layout, Result, Tensor, bail};
use posenc::{Element, Rope, View};

/// Rotates queries and keys held in candle tensors by a posenc [`Rope`]: angles `p · ω` are
/// exact at every position (no `(positions × inv_freq)` f32 table, whose rounding grows with
/// the position), the rope's scaling, attention factor, partial rotary dim and layout apply.
///
/// Build it from a model's `config.json` ([`from_hf_config`](Self::from_hf_config), per layer)
/// or from any `Rope`: a [`posenc::presets`] entry, a GGUF's metadata via
/// `posenc::load::rope_from_gguf_layer`, or a `RopeConfig`.
///
/// Tensors are `(b, h, t, d)` ([`apply`](Self::apply), candle's usual layout) or
/// `(b, t, h, d)` ([`apply_thd`](Self::apply_thd)) with `d` the rope's `head_dim`. Positions
/// are `t` values shared by every batch entry or `b · t` values, batch-major.
///
/// CPU f32/f16/bf16 tensors are rotated by posenc itself, in place for the `*_inplace`
/// methods. Other devices and f64 take posenc's exact cos/sin (f32) as tables, cast to the
/// tensor's dtype, through candle_nn's kernels (`*_inplace` then writes the result back).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use posenc::presets::LLAMA_3_8B;
/// use posenc_candle::RotaryEmbedding;
/// let rot = RotaryEmbedding::new(LLAMA_3_8B.rope().unwrap());
/// let q = Tensor::ones((1, 32, 3, 128), candle_core::DType::F32, &Device::Cpu)?;
/// let k = Tensor::ones((1, 8, 3, 128), candle_core::DType::F32, &Device::Cpu)?;
/// let (q2, k2) = rot.forward(&q, &k, 100_000)?; // positions 100000..100003
/// assert_eq!(q2.dims(), q.dims());
/// assert_eq!(k2.dims(), k.dims());
/// # Ok::<(), candle_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RotaryEmbedding {
    rope: Rope,
}

/// Where heads and tokens sit in a 4-D tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Bhtd,
    Bthd,
}

impl RotaryEmbedding {
    /// Wraps `rope`.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(64, 10_000.0, Layout::RotateHalf)).unwrap();
    /// let rot = posenc_candle::RotaryEmbedding::new(rope);
    /// assert_eq!(rot.rope().head_dim(), 64);
    /// ```
    pub fn new(rope: Rope) -> Self {
        RotaryEmbedding { rope }
    }

    /// The rotary embedding of layer `layer` (from 0) of the model whose HuggingFace
    /// `config.json` text is `json`, with posenc's reading of it
    /// ([`posenc::load::ropes_from_hf_config`]: the model's own rope code, its config class's
    /// defaults, one rope per layer type). `Ok(None)` where
    /// [`HfRopes::for_layer`](posenc::load::HfRopes::for_layer) has no rope: a layer the model
    /// runs without position encoding (Llama 4's and SmolLM3's NoPE layers, …), whose queries
    /// and keys stay as they are. A config that posenc cannot read, or of a model that never
    /// rotates (kind [`NoRope`](posenc::load::ConfigErrorKind::NoRope)), is an error wrapping
    /// the [`posenc::load::ConfigError`], which names the key.
    ///
    /// ```
    /// // Llama 4 Scout's text config: every fourth layer has no rope.
    /// let json = r#"{"model_type": "llama4_text", "head_dim": 128, "rope_theta": 500000.0}"#;
    /// let layer0 = posenc_candle::RotaryEmbedding::from_hf_config(json, 0)?.unwrap();
    /// assert_eq!(layer0.rope().layout(), posenc::Layout::Interleaved);
    /// assert!(posenc_candle::RotaryEmbedding::from_hf_config(json, 3)?.is_none());
    /// // GPT-2 attends with learned positions.
    /// let gpt2 = r#"{"model_type": "gpt2", "n_embd": 768, "n_head": 12}"#;
    /// assert!(posenc_candle::RotaryEmbedding::from_hf_config(gpt2, 0).is_err());
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn from_hf_config(json: &str, layer: usize) -> Result<Option<Self>> {
        let ropes = posenc::load::ropes_from_hf_config(json).map_err(candle_core::Error::wrap)?;
        Ok(ropes
            .for_layer(layer)
            .map(|&rope| RotaryEmbedding::new(rope)))
    }

    /// The rope it applies.
    ///
    /// ```
    /// let rot = posenc_candle::RotaryEmbedding::new(posenc::presets::GPT_J_6B.rope().unwrap());
    /// assert_eq!((rot.rope().head_dim(), rot.rope().rotary_dim()), (256, 64));
    /// ```
    pub fn rope(&self) -> &Rope {
        &self.rope
    }

    /// Rotated copies of `q` `(b, hq, t, d)` and `k` `(b, hk, t, d)` at positions
    /// `index_pos .. index_pos + t` (as candle-transformers' models pass `index_pos`).
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// let rot = posenc_candle::RotaryEmbedding::new(posenc::presets::LLAMA_2_7B.rope().unwrap());
    /// let q = Tensor::ones((2, 32, 1, 128), DType::BF16, &Device::Cpu)?;
    /// let (q2, k2) = rot.forward(&q, &q, 7)?;
    /// assert_eq!(q2.dims(), &[2, 32, 1, 128]);
    /// assert_eq!(q2.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?,
    ///            k2.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn forward(&self, q: &Tensor, k: &Tensor, index_pos: usize) -> Result<(Tensor, Tensor)> {
        let t = q.dim(2)?;
        let positions = positions_from(index_pos, t)?;
        Ok((self.apply(q, &positions)?, self.apply(k, &positions)?))
    }

    /// A rotated copy of `x` `(b, h, t, d)`; `x` is untouched and may be non-contiguous.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(2, 1.0, posenc::Layout::RotateHalf)).unwrap();
    /// let rot = posenc_candle::RotaryEmbedding::new(rope); // ω = 1 rad per position
    /// let x = Tensor::new(&[[[[1f32, 0.0]]]], &Device::Cpu)?;
    /// let y = rot.apply(&x, &[3])?.flatten_all()?.to_vec1::<f32>()?;
    /// assert!((y[0] - 3f32.cos()).abs() < 1e-6 && (y[1] - 3f32.sin()).abs() < 1e-6);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn apply(&self, x: &Tensor, positions: &[i32]) -> Result<Tensor> {
        let y = x.force_contiguous()?;
        self.rotate(&y, positions, Order::Bhtd)?;
        Ok(y)
    }

    /// Rotates `x` `(b, h, t, d)` in place. `x` must be contiguous; every tensor sharing its
    /// storage sees the rotation (as with any candle in-place op), so call it on a tensor you
    /// own, e.g. the fresh result of `.transpose(1, 2)?.contiguous()?`.
    ///
    /// ```
    /// use candle_core::{Device, Tensor};
    /// let rope = posenc::Rope::new(&posenc::RopeConfig::new(2, 1.0, posenc::Layout::Interleaved)).unwrap();
    /// let rot = posenc_candle::RotaryEmbedding::new(rope);
    /// let x = Tensor::new(&[[[[1f32, 0.0], [1.0, 0.0]]]], &Device::Cpu)?; // t = 2
    /// rot.apply_inplace(&x, &[0, 1])?;
    /// let v = x.flatten_all()?.to_vec1::<f32>()?;
    /// assert_eq!(&v[..2], &[1.0, 0.0]); // position 0: unchanged
    /// assert!((v[2] - 1f32.cos()).abs() < 1e-6 && (v[3] - 1f32.sin()).abs() < 1e-6);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn apply_inplace(&self, x: &Tensor, positions: &[i32]) -> Result<()> {
        self.rotate(x, positions, Order::Bhtd)
    }

    /// A rotated copy of token-major `x` `(b, t, h, d)`.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// let rot = posenc_candle::RotaryEmbedding::new(posenc::presets::LLAMA_3_8B.rope().unwrap());
    /// let x = Tensor::ones((1, 4, 8, 128), DType::F16, &Device::Cpu)?;
    /// let y = rot.apply_thd(&x, &[10, 11, 12, 13])?;
    /// let z = rot.apply(&x.transpose(1, 2)?, &[10, 11, 12, 13])?.transpose(1, 2)?;
    /// assert_eq!(y.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?,
    ///            z.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn apply_thd(&self, x: &Tensor, positions: &[i32]) -> Result<Tensor> {
        let y = x.force_contiguous()?;
        self.rotate(&y, positions, Order::Bthd)?;
        Ok(y)
    }

    /// Rotates token-major `x` `(b, t, h, d)` in place; see [`apply_inplace`](Self::apply_inplace).
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// let rot = posenc_candle::RotaryEmbedding::new(posenc::presets::LLAMA_3_8B.rope().unwrap());
    /// let x = Tensor::ones((1, 1, 8, 128), DType::F32, &Device::Cpu)?;
    /// rot.apply_thd_inplace(&x, &[0])?; // position 0 is the identity
    /// assert_eq!(x.sum_all()?.to_scalar::<f32>()?, 1024.0);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn apply_thd_inplace(&self, x: &Tensor, positions: &[i32]) -> Result<()> {
        self.rotate(x, positions, Order::Bthd)
    }

    /// Validates, then rotates `x` in place: posenc on CPU f32/f16/bf16, candle_nn otherwise.
    fn rotate(&self, x: &Tensor, positions: &[i32], order: Order) -> Result<()> {
        let (b, n1, n2, d) = x.dims4()?;
        let t = if order == Order::Bhtd { n2 } else { n1 };
        if d != self.rope.head_dim() {
            bail!(
                "head_dim {} of the rope does not match the tensor's last dim {d} ({:?})",
                self.rope.head_dim(),
                x.shape()
            )
        }
        if positions.len() != t && Some(positions.len()) != b.checked_mul(t) {
            bail!(
                "{} positions for {b} batch entries of {t} tokens (need {t} or {})",
                positions.len(),
                b * t
            )
        }
        if !x.is_contiguous() {
            bail!("xs has to be contiguous in rope")
        }
        if x.elem_count() == 0 {
            return Ok(());
        }
        let on_posenc =
            x.device().is_cpu() && matches!(x.dtype(), DType::F32 | DType::F16 | DType::BF16);
        if on_posenc {
            x.inplace_op1(&InPlace {
                rope: &self.rope,
                positions,
                order,
            })
        } else {
            let y = self.with_candle(x, positions, order, (b, t))?;
            x.slice_set(&y, 0, 0)
        }
    }

    /// `x` rotated by candle_nn's kernels from posenc's exact cos/sin (other devices, f64).
    fn with_candle(
        &self,
        x: &Tensor,
        positions: &[i32],
        order: Order,
        (b, t): (usize, usize),
    ) -> Result<Tensor> {
        let rd = self.rope.rotary_dim();
        let n = positions.len() * rd / 2;
        let (mut cos, mut sin) = (vec![0f32; n], vec![0f32; n]);
        self.rope
            .fill_cos_sin(positions, &mut cos, &mut sin)
            .map_err(wrap)?;
        let rows = if positions.len() == t {
            vec![t, rd / 2]
        } else {
            vec![b, t, rd / 2]
        };
        let dev = x.device();
        let cos = Tensor::from_vec(cos, rows.clone(), dev)?.to_dtype(x.dtype())?;
        let sin = Tensor::from_vec(sin, rows, dev)?.to_dtype(x.dtype())?;
        let (off, d) = (self.rope.rotary_offset(), self.rope.head_dim());
        let window = x.narrow(3, off, rd)?.contiguous()?;
        let window = match order {
            Order::Bthd => {
                let bhtd = window.transpose(1, 2)?.contiguous()?;
                self.candle_rope(&bhtd, &cos, &sin)?.transpose(1, 2)?
            }
            Order::Bhtd => self.candle_rope(&window, &cos, &sin)?,
        };
        let mut parts = Vec::with_capacity(3);
        if off > 0 {
            parts.push(x.narrow(3, 0, off)?);
        }
        parts.push(window);
        if off + rd < d {
            parts.push(x.narrow(3, off + rd, d - off - rd)?);
        }
        Tensor::cat(&parts, 3)?.contiguous()
    }

    /// candle_nn's kernel for the rope's layout on `(b, h, t, rd)`.
    fn candle_rope(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        match self.rope.layout() {
            posenc::Layout::Interleaved => candle_nn::rotary_emb::rope_i(x, cos, sin),
            _ => candle_nn::rotary_emb::rope(x, cos, sin),
        }
    }
}

/// `start .. start + t` as posenc positions.
fn positions_from(start: usize, t: usize) -> Result<Vec<i32>> {
    let end = start.checked_add(t).filter(|&e| e <= i32::MAX as usize + 1);
    match end {
        Some(_) => Ok((start..start + t).map(|p| p as i32).collect()),
        None => bail!("positions {start}..{start}+{t} do not fit i32"),
    }
}

/// The in-place op on CPU storage.
struct InPlace<'a> {
    rope: &'a Rope,
    positions: &'a [i32],
    order: Order,
}

impl InplaceOp1 for InPlace<'_> {
    fn name(&self) -> &'static str {
        "posenc-rotary-emb-inplace"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> Result<()> {
        let Some((o1, o2)) = layout.contiguous_offsets() else {
            bail!("xs has to be contiguous in rope")
        };
        let dims = layout.shape().dims4()?;
        match storage {
            CpuStorage::F32(v) => self.run(&mut v[o1..o2], dims),
            CpuStorage::F16(v) => self.run(&mut v[o1..o2], dims),
            CpuStorage::BF16(v) => self.run(&mut v[o1..o2], dims),
            other => bail!("unsupported dtype for rope {:?}", other.dtype()),
        }
    }
}

impl InPlace<'_> {
    /// Rotates the contiguous `x` of `dims` (in `self.order`).
    fn run<T: Element>(&self, x: &mut [T], dims: (usize, usize, usize, usize)) -> Result<()> {
        let (rope, pos) = (self.rope, self.positions);
        let per_batch = pos.len()
            != match self.order {
                Order::Bhtd => dims.2,
                Order::Bthd => dims.1,
            };
        match self.order {
            Order::Bthd => {
                let (b, t, h, d) = dims;
                if per_batch || b == 1 {
                    // `b · t` tokens with one position each: a single call.
                    rope.apply(x, h, pos).map_err(wrap)
                } else {
                    x.chunks_mut(t * h * d)
                        .try_for_each(|xb| rope.apply(xb, h, pos))
                        .map_err(wrap)
                }
            }
            Order::Bhtd => {
                let (b, h, t, d) = dims;
                if per_batch {
                    let view = [View::head_major(h, t, d)];
                    x.chunks_mut(h * t * d)
                        .zip(pos.chunks(t))
                        .try_for_each(|(xb, pb)| rope.apply_views(xb, &view, pb))
                        .map_err(wrap)
                } else {
                    // Every head of every batch entry at the same `t` positions: one view.
                    rope.apply_views(x, &[View::head_major(b * h, t, d)], pos)
                        .map_err(wrap)
                }
            }
        }
    }
}
