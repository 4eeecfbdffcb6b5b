//! Quantized K caches: ggml's `Q8_0` and `Q4_0` blocks ([`BlockQ8_0`], [`BlockQ4_0`]),
//! their dequantization and reference quantization, and the context shift of a quantized
//! K cache in one pass ([`Rope::shift_q8_0`], [`Rope::shift_q4_0`]).
//!
//! ```text
//! for each batch of whole heads (≤ 4096 values, in L1):
//!     dequantize the batch's blocks into an f32 stack buffer
//!     Rope::shift on it (the same code, backend and angles as on any f32 buffer)
//!     requantize it over the same blocks with ggml's reference rounding
//! ```
//! The result is bitwise the three-pass sequence dequantize → [`Rope::shift`] on f32 →
//! quantize, on every backend, without the f32 copy of the cache.

use crate::angles::{Angles, Ints, Source, Table};
use crate::engine::dispatch::dispatch;
use crate::engine::quant::{BLOCK, Block, Dequantize, Quantize};
pub use crate::engine::quant::{BlockQ4_0, BlockQ8_0};
use crate::error::{Error, Formula};
use crate::rope::Rope;
use crate::types::Backend;

/// f32 values dequantized at a time by the one-pass shift: 16 KiB of stack, a whole number
/// of heads (so it bounds `head_dim`).
const BATCH: usize = 4096;

/// Checks that `values` f32 correspond to `blocks` blocks.
fn check_values(values: usize, blocks: usize, what: &'static str) -> Result<(), Error> {
    let expected = blocks.checked_mul(BLOCK).ok_or(Error::ShapeOverflow)?;
    if values != expected {
        return Err(Error::LengthMismatch {
            what,
            expected,
            actual: values,
            formula: Formula::two(&"blocks × 32", [blocks, BLOCK]),
        });
    }
    Ok(())
}

/// Dequantizes `Q8_0` blocks into `out` (`32 · blocks.len()` values), as ggml's
/// `dequantize_row_q8_0`: value `j` of a block is `qs[j] · d`, exact in f32.
///
/// ```
/// use posenc::{BlockQ8_0, dequantize_q8_0, f16};
/// let b = BlockQ8_0 { d: f16::from_f32(0.25).to_bits(), qs: [-4; 32] };
/// let mut x = [0f32; 32];
/// dequantize_q8_0(&[b], &mut x).unwrap();
/// assert_eq!(x, [-1.0; 32]);
/// assert!(dequantize_q8_0(&[b], &mut [0f32; 31]).is_err());
/// ```
pub fn dequantize_q8_0(blocks: &[BlockQ8_0], out: &mut [f32]) -> Result<(), Error> {
    dequantize(blocks, out)
}

/// Dequantizes `Q4_0` blocks into `out` (`32 · blocks.len()` values), as ggml's
/// `dequantize_row_q4_0`: value `j` is `(low nibble of qs[j] − 8) · d`, value `j + 16`
/// `(high nibble of qs[j] − 8) · d`.
///
/// ```
/// use posenc::{BlockQ4_0, dequantize_q4_0, f16};
/// let b = BlockQ4_0 { d: f16::from_f32(2.0).to_bits(), qs: [0x08; 16] };
/// let mut x = [0f32; 32];
/// dequantize_q4_0(&[b], &mut x).unwrap();
/// assert_eq!((x[0], x[16]), (0.0, -16.0));
/// ```
pub fn dequantize_q4_0(blocks: &[BlockQ4_0], out: &mut [f32]) -> Result<(), Error> {
    dequantize(blocks, out)
}

/// Quantizes `x` (`32 · out.len()` values) into `Q8_0` blocks byte for byte as ggml's
/// `quantize_row_q8_0_ref`: `d = amax / 127` stored as f16 (nearest even), each value
/// `roundf(x · (1/d))` with the f32 `d`.
///
/// ```
/// use posenc::{BlockQ8_0, quantize_q8_0, f16};
/// let mut x = [0.5f32; 32];
/// x[3] = -1.27;
/// let mut b = [BlockQ8_0::default()];
/// quantize_q8_0(&x, &mut b).unwrap();
/// assert_eq!(b[0].d, f16::from_f32(1.27 / 127.0).to_bits());
/// assert_eq!((b[0].qs[0], b[0].qs[3]), (50, -127));
/// ```
pub fn quantize_q8_0(x: &[f32], out: &mut [BlockQ8_0]) -> Result<(), Error> {
    quantize(x, out)
}

/// Quantizes `x` (`32 · out.len()` values) into `Q4_0` blocks byte for byte as ggml's
/// `quantize_row_q4_0_ref`: `d = max / −8` (`max` the first value of largest magnitude,
/// with its sign) stored as f16, codes `min(15, trunc(x · (1/d) + 8.5))` with the f32 `d`.
///
/// ```
/// use posenc::{BlockQ4_0, quantize_q4_0, f16};
/// let mut x = [0.0f32; 32];
/// x[0] = 8.0; // max: d = −1
/// x[16] = -4.0; // code 12 in the high nibble of byte 0
/// let mut b = [BlockQ4_0::default()];
/// quantize_q4_0(&x, &mut b).unwrap();
/// assert_eq!(b[0].d, f16::from_f32(-1.0).to_bits());
/// assert_eq!(b[0].qs[0], 0xC0); // low nibble: 8 · (−1) + 8.5 → 0
/// ```
pub fn quantize_q4_0(x: &[f32], out: &mut [BlockQ4_0]) -> Result<(), Error> {
    quantize(x, out)
}

fn dequantize<B: Block>(blocks: &[B], out: &mut [f32]) -> Result<(), Error> {
    check_values(out.len(), blocks.len(), "out (32 values per block)")?;
    dispatch(Backend::active(), Dequantize { blocks, out });
    Ok(())
}

fn quantize<B: Block>(x: &[f32], out: &mut [B]) -> Result<(), Error> {
    check_values(x.len(), out.len(), "x (32 values per block)")?;
    dispatch(Backend::active(), Quantize { x, out });
    Ok(())
}

impl Rope {
    /// Shifts a `Q8_0` K cache in place (llama.cpp's `-ctk q8_0` context shift): `k` holds
    /// `tokens × n_heads × head_dim / 32` blocks, token-major, and each token's keys are
    /// rotated by its delta as [`Rope::shift`] rotates f32 keys (positions or a [`Table`] made
    /// from the deltas), then requantized with ggml's reference rounding
    /// ([`quantize_q8_0`]). One pass over the cache: the result is bitwise
    /// [`dequantize_q8_0`] → [`Rope::shift`] on the f32 values (this rope, its backend) →
    /// [`quantize_q8_0`], every block requantized (channels outside the rotary window
    /// included).
    ///
    /// `head_dim` must be a multiple of 32 (whole blocks per head) and at most 4096; errors
    /// leave `k` untouched.
    ///
    /// ```
    /// use posenc::{BlockQ8_0, Layout, Rope, RopeConfig, dequantize_q8_0, quantize_q8_0};
    /// let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf)).unwrap();
    /// let (tokens, heads) = (3, 2);
    /// let x: Vec<f32> = (0..tokens * heads * 64).map(|i| (i as f32 * 0.37).sin()).collect();
    /// let mut k = vec![BlockQ8_0::default(); x.len() / 32];
    /// quantize_q8_0(&x, &mut k).unwrap();
    ///
    /// let mut f = vec![0f32; x.len()]; // the three-pass reference
    /// dequantize_q8_0(&k, &mut f).unwrap();
    /// rope.shift(&mut f, heads, &[-5, -5, -5]).unwrap();
    /// let mut want = k.clone();
    /// quantize_q8_0(&f, &mut want).unwrap();
    ///
    /// rope.shift_q8_0(&mut k, heads, &[-5, -5, -5]).unwrap();
    /// assert_eq!(k, want);
    /// ```
    pub fn shift_q8_0<'a>(
        &self,
        k: &mut [BlockQ8_0],
        n_heads: usize,
        deltas: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.shift_blocks(k, n_heads, deltas.source())
    }

    /// [`Rope::shift_q8_0`] for a `Q4_0` K cache (`-ctk q4_0`): bitwise
    /// [`dequantize_q4_0`] → [`Rope::shift`] → [`quantize_q4_0`].
    ///
    /// ```
    /// use posenc::{BlockQ4_0, Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(128, 5e5, Layout::RotateHalf)).unwrap();
    /// let mut k = vec![BlockQ4_0 { d: 0x3C00, qs: [0x7A; 16] }; 2 * 8 * 4]; // 2 tokens, 8 heads
    /// rope.shift_q4_0(&mut k, 8, &[-100i64, -100]).unwrap();
    /// assert!(rope.shift_q4_0(&mut k, 8, &[-100]).is_err()); // one delta per token
    /// let odd = Rope::new(&RopeConfig::new(80, 1e4, Layout::RotateHalf)).unwrap();
    /// assert!(odd.shift_q4_0(&mut k, 1, &[1]).is_err()); // 80 values: not whole blocks
    /// ```
    pub fn shift_q4_0<'a>(
        &self,
        k: &mut [BlockQ4_0],
        n_heads: usize,
        deltas: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.shift_blocks(k, n_heads, deltas.source())
    }

    /// The one-pass quantized shift: validates everything, then dequantizes, shifts and
    /// requantizes a batch of whole heads at a time.
    fn shift_blocks<B: Block>(
        &self,
        k: &mut [B],
        n_heads: usize,
        src: Source<'_>,
    ) -> Result<(), Error> {
        let head_dim = self.head_dim();
        if !head_dim.is_multiple_of(BLOCK) {
            return Err(Error::ParameterOutOfRange {
                what: "head_dim",
                constraint: "must be a multiple of 32 (whole Q8_0/Q4_0 blocks per head)",
                value: head_dim as f32,
            });
        }
        if head_dim > BATCH {
            return Err(Error::ParameterOutOfRange {
                what: "head_dim",
                constraint: "must be at most 4096 for a quantized shift",
                value: head_dim as f32,
            });
        }
        if n_heads == 0 {
            return Err(Error::ZeroHeads);
        }
        let tokens = src.tokens();
        let per_head = head_dim / BLOCK;
        let per_token = n_heads.checked_mul(per_head).ok_or(Error::ShapeOverflow)?;
        let expected = tokens.checked_mul(per_token).ok_or(Error::ShapeOverflow)?;
        if k.len() != expected {
            return Err(Error::LengthMismatch {
                what: "k (blocks)",
                expected,
                actual: k.len(),
                formula: Formula::three(
                    &"tokens × heads × head_dim/32",
                    [tokens, n_heads, per_head],
                ),
            });
        }
        self.check_source(&src)?;

        let mut buf = [0f32; BATCH];
        let mut pos = [0i32; BATCH / BLOCK];
        let row = n_heads * head_dim; // ≤ k.len() · 32: no overflow
        if row <= BATCH {
            // Several whole tokens per batch.
            let per_batch = BATCH / row;
            let mut t0 = 0;
            while t0 < tokens {
                let n = per_batch.min(tokens - t0);
                let blocks = &mut k[t0 * per_token..(t0 + n) * per_token];
                let at = sub_source(src, t0, n, &mut pos);
                self.shift_batch(blocks, &mut buf[..n * row], n_heads, at)?;
                t0 += n;
            }
        } else {
            // One token, several whole heads per batch.
            let per_batch = BATCH / head_dim;
            for t in 0..tokens {
                let at = sub_source(src, t, 1, &mut pos);
                let mut h0 = 0;
                while h0 < n_heads {
                    let n = per_batch.min(n_heads - h0);
                    let first = t * per_token + h0 * per_head;
                    let blocks = &mut k[first..first + n * per_head];
                    self.shift_batch(blocks, &mut buf[..n * head_dim], n, at)?;
                    h0 += n;
                }
            }
        }
        Ok(())
    }

    /// Dequantizes `blocks` into `buf` (the same number of values), shifts them as `n_heads`
    /// heads per token by `at`, and requantizes them into `blocks`.
    fn shift_batch<B: Block>(
        &self,
        blocks: &mut [B],
        buf: &mut [f32],
        n_heads: usize,
        at: Source<'_>,
    ) -> Result<(), Error> {
        let backend = self.backend();
        dispatch(backend, Dequantize { blocks, out: buf });
        self.shift(buf, n_heads, at)?;
        dispatch(
            backend,
            Quantize {
                x: buf,
                out: blocks,
            },
        );
        Ok(())
    }
}

/// Tokens `t0 .. t0 + n` of a validated source: a slice of i32 positions or of a table, or
/// other integer positions converted into `pos` (`n ≤ pos.len()`).
fn sub_source<'a>(src: Source<'a>, t0: usize, n: usize, pos: &'a mut [i32]) -> Source<'a> {
    match src {
        Source::Positions(p) => match p.as_i32() {
            Some(s) => Source::Positions(Ints::I32(&s[t0..t0 + n])),
            None => {
                let got = p.convert(t0, &mut pos[..n]);
                Source::Positions(Ints::I32(&pos[..got]))
            }
        },
        Source::Table(t) => {
            let p = t.pairs();
            let r = t0 * p..(t0 + n) * p;
            Source::Table(Table::from_parts(&t.cos()[r.clone()], &t.sin()[r], n))
        }
    }
}
