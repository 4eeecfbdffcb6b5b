//! `rope`, `rope_i`, `rope_thd`: candle_nn's functions, with CPU f32/f16/bf16 tensors rotated
//! by posenc's table path and everything else handed to candle_nn unchanged.

use crate::table::{Piece, rotate_pieces};
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor, bail};
use posenc::Element;
use std::borrow::Cow;

/// Where heads and tokens sit in `xs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// `(b, h, t, d)`: candle's usual layout (`rope`, `rope_i`).
    Bhtd,
    /// `(b, t, h, d)`: token-major, posenc's own layout (`rope_thd`).
    Bthd,
}

/// Interleaved rotary embedding on `(b, h, t, d)`: pairs `(x[2i], x[2i+1])`, as
/// `candle_nn::rotary_emb::rope_i`.
///
/// `cos`/`sin` are `(t', d/2)` or per batch `(b, t', d/2)` with `t' ≥ t`, of `xs`'s dtype;
/// all three contiguous. Same checks, errors and result as candle_nn; CPU f32/f16/bf16 go
/// through posenc (see the crate docs for the numerics), f64 and other devices through
/// candle_nn itself.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let dev = Device::Cpu;
/// let xs = Tensor::new(&[[[[1f32, 0.0]]]], &dev)?; // (1, 1, 1, 2)
/// let (cos, sin) = (Tensor::new(&[[0f32]], &dev)?, Tensor::new(&[[1f32]], &dev)?);
/// let ys = posenc_candle::rope_i(&xs, &cos, &sin)?;
/// assert_eq!(ys.flatten_all()?.to_vec1::<f32>()?, [0.0, 1.0]); // rotated by 90°
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn rope_i(xs: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    if !on_posenc(xs) {
        return candle_nn::rotary_emb::rope_i(xs, cos, sin);
    }
    let (b_sz, _n_head, seq_len, n_embd) = xs.dims4()?;
    check(xs, cos, sin, b_sz, seq_len, n_embd)?;
    xs.apply_op3_no_bwd(
        cos,
        sin,
        &TableRope::new(posenc::Layout::Interleaved, Order::Bhtd),
    )
}

/// Rotate-half ("neox") rotary embedding on `(b, h, t, d)`: pairs `(x[i], x[i + d/2])`, as
/// `candle_nn::rotary_emb::rope`.
///
/// Tables, checks and errors as [`rope_i`].
///
/// ```
/// use candle_core::{Device, Tensor};
/// let dev = Device::Cpu;
/// let xs = Tensor::new(&[[[[1f32, 2.0, 3.0, 4.0]]]], &dev)?; // (1, 1, 1, 4)
/// let cos = Tensor::new(&[[0f32, 1.0]], &dev)?; // pair 0 by 90°, pair 1 by 0°
/// let sin = Tensor::new(&[[1f32, 0.0]], &dev)?;
/// let ys = posenc_candle::rope(&xs, &cos, &sin)?;
/// assert_eq!(ys.flatten_all()?.to_vec1::<f32>()?, [-3.0, 2.0, 1.0, 4.0]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn rope(xs: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    if !on_posenc(xs) {
        return candle_nn::rotary_emb::rope(xs, cos, sin);
    }
    let (b_sz, _n_head, seq_len, n_embd) = xs.dims4()?;
    check(xs, cos, sin, b_sz, seq_len, n_embd)?;
    xs.apply_op3_no_bwd(
        cos,
        sin,
        &TableRope::new(posenc::Layout::RotateHalf, Order::Bhtd),
    )
}

/// Rotate-half rotary embedding on token-major `(b, t, h, d)`, as
/// `candle_nn::rotary_emb::rope_thd`.
///
/// Tables, checks and errors as [`rope_i`].
///
/// ```
/// use candle_core::{Device, Tensor};
/// let dev = Device::Cpu;
/// let xs = Tensor::new(&[[[[1f32, 2.0], [3.0, 4.0]]]], &dev)?; // (1, 1, 2, 2): 2 heads
/// let (cos, sin) = (Tensor::new(&[[-1f32]], &dev)?, Tensor::new(&[[0f32]], &dev)?);
/// let ys = posenc_candle::rope_thd(&xs, &cos, &sin)?; // both heads by 180°
/// assert_eq!(ys.flatten_all()?.to_vec1::<f32>()?, [-1.0, -2.0, -3.0, -4.0]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn rope_thd(xs: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    if !on_posenc(xs) {
        return candle_nn::rotary_emb::rope_thd(xs, cos, sin);
    }
    let (b_sz, seq_len, _n_head, n_embd) = xs.dims4()?;
    check(xs, cos, sin, b_sz, seq_len, n_embd)?;
    xs.apply_op3_no_bwd(
        cos,
        sin,
        &TableRope::new(posenc::Layout::RotateHalf, Order::Bthd),
    )
}

/// Whether posenc handles `xs`: CPU tensors of a dtype posenc stores (f32, f16, bf16).
/// Everything else (f64, CUDA, Metal) is candle_nn's, checks and errors included.
fn on_posenc(xs: &Tensor) -> bool {
    xs.device().is_cpu() && matches!(xs.dtype(), DType::F32 | DType::F16 | DType::BF16)
}

/// candle_nn's checks, in its order and with its messages.
fn check(
    xs: &Tensor,
    cos: &Tensor,
    sin: &Tensor,
    b_sz: usize,
    seq_len: usize,
    n_embd: usize,
) -> Result<()> {
    let (cos_seq_len, cos_n_embd) = check_cs(cos, b_sz)?;
    let (sin_seq_len, sin_n_embd) = check_cs(sin, b_sz)?;
    if cos_n_embd * 2 != n_embd
        || sin_n_embd * 2 != n_embd
        || seq_len > cos_seq_len
        || seq_len > sin_seq_len
    {
        bail!(
            "inconsistent last dim size in rope {:?} {:?} {:?}",
            xs.shape(),
            cos.shape(),
            sin.shape()
        )
    }
    if !xs.is_contiguous() {
        bail!("xs has to be contiguous in rope")
    }
    if !cos.is_contiguous() {
        bail!("cos has to be contiguous in rope")
    }
    if !sin.is_contiguous() {
        bail!("sin has to be contiguous in rope")
    }
    Ok(())
}

/// `(t', d/2)` of a 2-D table or a 3-D `(b, t', d/2)` one of the right batch.
fn check_cs(cs: &Tensor, b_sz: usize) -> Result<(usize, usize)> {
    match *cs.dims() {
        [t, d] => Ok((t, d)),
        [b, t, d] => {
            if b != b_sz {
                bail!("inconsistent batch size in rope {b_sz} {cs:?}",)
            }
            Ok((t, d))
        }
        _ => bail!("cos/sin has to be 2D or 3D in rope {b_sz} {cs:?}"),
    }
}

/// The custom op: a copy of `xs` rotated in place by posenc from the (f32-widened) tables.
#[derive(Clone, Copy, Debug)]
struct TableRope {
    layout: posenc::Layout,
    order: Order,
}

impl TableRope {
    fn new(layout: posenc::Layout, order: Order) -> Self {
        TableRope { layout, order }
    }
}

impl CustomOp3 for TableRope {
    fn name(&self) -> &'static str {
        "posenc-rotary-emb"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        use CpuStorage::{BF16, F16, F32};
        let (l, o) = (self.layout, self.order);
        let (b, n1, n2, d) = l1.shape().dims4()?;
        let t = if o == Order::Bhtd { n2 } else { n1 };
        let btd = (b, t, d / 2);
        match (s1, s2, s3) {
            (F32(x), F32(c), F32(s)) => run(x, l1, &Table::new(c, l2, s, l3, btd)?, l, o),
            (F16(x), F16(c), F16(s)) => run(x, l1, &Table::new(c, l2, s, l3, btd)?, l, o),
            (BF16(x), BF16(c), BF16(s)) => run(x, l1, &Table::new(c, l2, s, l3, btd)?, l, o),
            _ => bail!(
                "unsupported dtype for rope {:?} {:?} {:?}",
                s1.dtype(),
                s2.dtype(),
                s3.dtype()
            ),
        }
    }
}

/// A contiguous slice of `storage` as `layout` places it, or the error candle_nn gives.
fn contiguous<'a, T>(storage: &'a [T], layout: &Layout, what: &str) -> Result<&'a [T]> {
    match layout.contiguous_offsets() {
        None => bail!("input {what} has to be contiguous"),
        Some((o1, o2)) => Ok(&storage[o1..o2]),
    }
}

/// A storage dtype of both candle and posenc, with its tables widened to f32 (exact).
trait Widen: Element + candle_core::WithDType + Send {
    /// `v` as f32: borrowed when it already is.
    fn widen(v: &[Self]) -> Cow<'_, [f32]>;
}

impl Widen for f32 {
    fn widen(v: &[f32]) -> Cow<'_, [f32]> {
        Cow::Borrowed(v)
    }
}

impl Widen for half::f16 {
    fn widen(v: &[Self]) -> Cow<'_, [f32]> {
        Cow::Owned(v.iter().map(|x| x.to_f32()).collect())
    }
}

impl Widen for half::bf16 {
    fn widen(v: &[Self]) -> Cow<'_, [f32]> {
        Cow::Owned(v.iter().map(|x| x.to_f32()).collect())
    }
}

/// The cos/sin rows one call reads, as f32, in candle_nn's indexing.
struct Table<'a> {
    cos: Cow<'a, [f32]>,
    sin: Cow<'a, [f32]>,
    /// Both tables 3-D: batch `i` reads its rows from `i · t · d/2` on (candle_nn's rule:
    /// `t` is `xs`'s sequence length, whatever the tables' own); otherwise every batch reads
    /// the first `t` rows.
    per_batch: bool,
}

impl<'a> Table<'a> {
    /// The rows `xs` of `b` batches, `t` tokens and `half` pairs reads (checked present by
    /// [`check`]: `t ≤ t'`; only those are widened).
    fn new<T: Widen>(
        c: &'a [T],
        lc: &Layout,
        s: &'a [T],
        ls: &Layout,
        (b, t, half): (usize, usize, usize),
    ) -> Result<Table<'a>> {
        let (c, s) = (contiguous(c, lc, "cos")?, contiguous(s, ls, "sin")?);
        let per_batch = lc.dims().len() == 3 && ls.dims().len() == 3;
        let n = if per_batch { b * t * half } else { t * half };
        if c.len() < n || s.len() < n {
            bail!("cos/sin too short in rope {lc:?} {ls:?}")
        }
        Ok(Table {
            cos: T::widen(&c[..n]),
            sin: T::widen(&s[..n]),
            per_batch,
        })
    }

    /// The `t × half` rows batch `b_i` uses.
    fn rows(&self, b_i: usize, t: usize, half: usize) -> (&[f32], &[f32]) {
        let start = if self.per_batch { b_i * t * half } else { 0 };
        let r = start..start + t * half;
        (&self.cos[r.clone()], &self.sin[r])
    }
}

/// A rotated copy of `x` (contiguous, 4-D in `order`).
fn run<T: Widen>(
    x: &[T],
    lx: &Layout,
    table: &Table,
    layout: posenc::Layout,
    order: Order,
) -> Result<(CpuStorage, Shape)> {
    let mut dst = contiguous(x, lx, "src")?.to_vec();
    let (b, n1, n2, d) = lx.shape().dims4()?;
    if !dst.is_empty() {
        rotate(&mut dst, (b, n1, n2, d), table, layout, order)?;
    }
    Ok((T::to_cpu_storage_owned(dst), lx.shape().clone()))
}

/// Rotates the non-empty contiguous `x` of `dims` (in `order`) in place.
fn rotate<T: Element + Send>(
    x: &mut [T],
    dims: (usize, usize, usize, usize),
    table: &Table,
    layout: posenc::Layout,
    order: Order,
) -> Result<()> {
    let half = dims.3 / 2;
    let mut pieces = Vec::new();
    match order {
        Order::Bthd => {
            // Per batch: `t` tokens of `h` heads, exactly posenc's token-major layout.
            let (_b, t, h, d) = dims;
            for (b_i, xb) in x.chunks_mut(t * h * d).enumerate() {
                let (cos, sin) = table.rows(b_i, t, half);
                let n_heads = h;
                pieces.push(Piece {
                    x: xb,
                    n_heads,
                    cos,
                    sin,
                });
            }
        }
        Order::Bhtd if dims.2 == 1 => {
            // One token: `(b, h, 1, d)` is token-major already, `h` heads per batch entry
            // (all `b · h` heads as one token when every batch reads the same row).
            let (b, h, _t, d) = dims;
            if table.per_batch {
                for (b_i, xb) in x.chunks_mut(h * d).enumerate() {
                    let (cos, sin) = table.rows(b_i, 1, half);
                    pieces.push(Piece {
                        x: xb,
                        n_heads: h,
                        cos,
                        sin,
                    });
                }
            } else {
                let (cos, sin) = table.rows(0, 1, half);
                pieces.push(Piece {
                    x,
                    n_heads: b * h,
                    cos,
                    sin,
                });
            }
        }
        Order::Bhtd => {
            // Head-major: each `(b, h)` slice is `t` tokens of one head.
            let (_b, h, t, d) = dims;
            for (bh_i, xh) in x.chunks_mut(t * d).enumerate() {
                let (cos, sin) = table.rows(bh_i / h, t, half);
                pieces.push(Piece {
                    x: xh,
                    n_heads: 1,
                    cos,
                    sin,
                });
            }
        }
    }
    rotate_pieces(pieces, dims.3, layout)
}
