//! ALiBi ("Attention with Linear Biases", Press et al. 2022): per-head slopes and the additive
//! attention bias for a block of queries × keys.
//!
//! Also home of [`Positions`], the query/key position argument shared with the T5 buckets.
//!
//! ```
//! use posenc::alibi::{alibi_bias, alibi_slopes, AlibiMode, Positions};
//! // Two heads, a prefill block of 3 queries against its 3 keys, causal.
//! let mut slopes = [0f32; 2];
//! alibi_slopes(2, &mut slopes).unwrap();
//! assert_eq!(slopes, [0.0625, 0.00390625]); // 2^(-8/2), 2^(-16/2)
//! let mut bias = [0f32; 2 * 3 * 3];
//! let block = Positions::range(0, 3);
//! alibi_bias(&slopes, block, block, AlibiMode::Causal, &mut bias).unwrap();
//! // head 0, query 2: keys 0, 1, 2 at distances −2, −1, 0
//! assert_eq!(&bias[6..9], &[-0.125, -0.0625, 0.0]);
//! ```

use crate::element::Element;
use crate::error::{Error, Formula};

/// Positions of the queries or keys of a block: an explicit list, or a contiguous range
/// `start, start + 1, …, start + len − 1`.
///
/// A range needs no buffer and is what a runtime usually has: a prefill block is
/// `Positions::range(0, n)`, a decode step against a KV cache of `n` keys is queries
/// `Positions::range(n - 1, 1)` against keys `Positions::range(0, n)`. Lists are for anything
/// else (left padding, packed sequences, shifted caches). Positions are `i32` like everywhere
/// in posenc; distances `k − q` are formed in `i64`, so they never overflow.
///
/// ```
/// use posenc::alibi::Positions;
/// let r = Positions::range(10, 3); // 10, 11, 12
/// assert_eq!(r.len(), 3);
/// let l: Positions = (&[4, 0, 7][..]).into();
/// assert_eq!(l, Positions::List(&[4, 0, 7]));
/// assert!(Positions::range(5, 0).is_empty());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Positions<'a> {
    /// One position per query (or key), in order.
    List(&'a [i32]),
    /// `start, start + 1, …, start + len − 1` (computed in `i64`: a range may run past
    /// `i32::MAX` without wrapping).
    Range {
        /// The first position.
        start: i32,
        /// How many positions.
        len: usize,
    },
}

impl<'a> Positions<'a> {
    /// The range `start .. start + len`.
    ///
    /// ```
    /// assert_eq!(posenc::alibi::Positions::range(-2, 4).len(), 4);
    /// ```
    pub const fn range(start: i32, len: usize) -> Positions<'static> {
        Positions::Range { start, len }
    }

    /// How many positions.
    ///
    /// ```
    /// assert_eq!(posenc::alibi::Positions::List(&[1, 2]).len(), 2);
    /// ```
    pub const fn len(&self) -> usize {
        match *self {
            Positions::List(p) => p.len(),
            Positions::Range { len, .. } => len,
        }
    }

    /// Whether there are no positions.
    ///
    /// ```
    /// assert!(posenc::alibi::Positions::List(&[]).is_empty());
    /// ```
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The positions in order, widened to `i64`. Only called on validated shapes, where a
    /// range's `len` is bounded by a real buffer's length, so `start + index` fits in `i64`.
    pub(crate) fn iter(self) -> PosIter<'a> {
        match self {
            Positions::List(p) => PosIter::List(p.iter()),
            Positions::Range { start, len } => PosIter::Range {
                next: start as i64,
                left: len,
            },
        }
    }
}

/// Any borrowed list of `i32` positions: `&[i32]`, `&[i32; N]`, `&Vec<i32>`.
impl<'a, P: AsRef<[i32]> + ?Sized> From<&'a P> for Positions<'a> {
    fn from(p: &'a P) -> Self {
        Positions::List(p.as_ref())
    }
}

/// Iterator over [`Positions`] as `i64`.
#[derive(Clone)]
pub(crate) enum PosIter<'a> {
    List(core::slice::Iter<'a, i32>),
    Range { next: i64, left: usize },
}

impl Iterator for PosIter<'_> {
    type Item = i64;
    #[inline]
    fn next(&mut self) -> Option<i64> {
        match self {
            PosIter::List(it) => it.next().map(|&p| p as i64),
            PosIter::Range { next, left } => {
                if *left == 0 {
                    return None;
                }
                let p = *next;
                *left -= 1;
                // Cannot overflow on validated shapes (see `Positions::iter`); saturate rather
                // than trust that for the last step.
                *next = next.saturating_add(1);
                Some(p)
            }
        }
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            PosIter::List(it) => it.len(),
            PosIter::Range { left, .. } => *left,
        };
        (n, Some(n))
    }
}

/// `heads · q_len · k_len`, or `ShapeOverflow`.
pub(crate) fn block_len(heads: usize, q_len: usize, k_len: usize) -> Result<usize, Error> {
    heads
        .checked_mul(q_len)
        .and_then(|n| n.checked_mul(k_len))
        .ok_or(Error::ShapeOverflow)
}

/// How the bias depends on the query–key distance.
///
/// Under a causal mask (keys `j ≤ i` only) both give the same numbers; they differ on the
/// keys a causal mask hides.
///
/// ```
/// use posenc::alibi::{alibi_bias, AlibiMode, Positions};
/// let mut sym = [0f32; 3];
/// let mut causal = [0f32; 3];
/// // one head (slope 0.5), query at 1, keys at 0, 1, 2
/// alibi_bias(&[0.5], &[1], Positions::range(0, 3), AlibiMode::Symmetric, &mut sym).unwrap();
/// alibi_bias(&[0.5], &[1], Positions::range(0, 3), AlibiMode::Causal, &mut causal).unwrap();
/// assert_eq!(sym, [-0.5, 0.0, -0.5]);
/// assert_eq!(causal, [-0.5, 0.0, 0.5]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlibiMode {
    /// `−slope · |i − j|` (the paper's bias; also for bidirectional/encoder attention).
    Symmetric,
    /// `slope · (j − i)`: no absolute value, as BLOOM, MPT and ggml add it (BLOOM's
    /// `slope · j` differs from it by a per-row constant, which softmax ignores).
    Causal,
}

/// The ALiBi slopes of `n_heads` heads, as BLOOM, MPT and ggml define them, into `out`
/// (`out.len() == n_heads`).
///
/// With `c = 2^floor(log2 n_heads)`: head `k < c` gets `2^(−8(k+1)/c)`, and the extra heads
/// of a head count that is not a power of two, `k ≥ c`, get `2^(−4(2(k−c)+1)/c)`.
///
/// Computed as BLOOM's `build_alibi_tensor` computes them, so they are BLOOM's f32 slopes bit
/// for bit: the base `β = 2^(−8/c)` (resp. `2^(−4/c)`) is rounded to f32 first, and the slope
/// is that f32 base to the integer power `e` (`k + 1`, resp. `2(k−c) + 1`), rounded once to
/// f32 (the power is evaluated in f64; checked against an exact rational computation for
/// every head count up to 300). ggml computes the same way, with f32 `powf`.
///
/// The base's rounding is raised to the power `e`, so these are within a relative
/// `(e + 1)·2^-24` of the exact `β^e`, not within 1 ulp. They are exact for up to 8 heads
/// (and for the first 8 of 9–15); head 10 of 12 is `0x1.6a09e4p-3`, 1.2 ulp below the exact
/// value; for head counts ≤ 128 they are within 9 ulp (from `c = 16` on, head 1 is
/// `0.49999997`, not `0.5`). That is what BLOOM checkpoints were trained with. (MPT computes
/// `1 / f32(2^(8(k+1)/c))` instead, close to exact, so its f32 slopes can differ from these
/// in the last bits when `c ≥ 16`.) torch's f32 `pow` is not always correctly rounded (SLEEF,
/// ≤ 1 ulp, used for vectors of ≥ 16–32 heads), so BLOOM's own slopes for `c ≥ 16` can
/// differ from these by 1 ulp depending on the CPU.
///
/// ```
/// let mut slopes = [0f32; 12];
/// posenc::alibi::alibi_slopes(12, &mut slopes).unwrap();
/// assert_eq!(&slopes[..3], &[0.5, 0.25, 0.125]);
/// assert_eq!(slopes[8], std::f32::consts::FRAC_1_SQRT_2); // 2^(-4/8)
/// assert!(posenc::alibi::alibi_slopes(0, &mut []).is_err());
/// ```
pub fn alibi_slopes(n_heads: usize, out: &mut [f32]) -> Result<(), Error> {
    alibi_slopes_max_bias(n_heads, 8.0, out)
}

/// [`alibi_slopes`] with a maximum bias other than 8: head `k < c` gets
/// `2^(−max_bias·(k+1)/c)`, extra heads `2^(−(max_bias/2)·(2(k−c)+1)/c)`. This is ggml's
/// `max_alibi_bias` (`f_max_alibi_bias`) and MPT's `alibi_bias_max`; `8.0` gives
/// [`alibi_slopes`].
///
/// `max_bias` must be finite and positive ([`Error::InvalidParameter`]).
///
/// ```
/// let mut s = [0f32; 4];
/// posenc::alibi::alibi_slopes_max_bias(4, 4.0, &mut s).unwrap();
/// assert_eq!(s, [0.5, 0.25, 0.125, 0.0625]); // 2^(-4(k+1)/4)
/// assert!(posenc::alibi::alibi_slopes_max_bias(4, f32::NAN, &mut s).is_err());
/// ```
pub fn alibi_slopes_max_bias(n_heads: usize, max_bias: f32, out: &mut [f32]) -> Result<(), Error> {
    if n_heads == 0 {
        return Err(Error::ZeroHeads);
    }
    if !(max_bias.is_finite() && max_bias > 0.0) {
        return Err(Error::InvalidParameter {
            what: "max_bias",
            value: max_bias,
        });
    }
    if out.len() != n_heads {
        return Err(Error::LengthMismatch {
            what: "out",
            expected: n_heads,
            actual: out.len(),
            formula: Formula::one(&"n_heads", n_heads),
        });
    }
    // c = 2^floor(log2 n_heads): exact in f64 (a power of two).
    let c = 1usize << (usize::BITS - 1 - n_heads.leading_zeros());
    let cf = c as f64;
    // BLOOM: base = float32(2 ** (-(2 ** -(log2(c) - 3)))) = f32(2^(-8/c)), the exponent
    // exact in f64 (division by a power of two), the power as Python's f64 pow.
    let mb = max_bias as f64;
    let base = libm::exp2(-mb / cf) as f32;
    let extra = libm::exp2(-(mb / 2.0) / cf) as f32;
    for (k, s) in out.iter_mut().enumerate() {
        let (b, e) = if k < c {
            (base, k + 1)
        } else {
            (extra, 2 * (k - c) + 1)
        };
        *s = power(b, e);
    }
    Ok(())
}

/// `b^e` for an f32 base and an integer exponent, rounded once to f32: torch's float32
/// `pow(base, int powers)` with a correctly rounded pow. The power is formed in f64 (within
/// ~1 f64 ulp), so the f32 result is the correctly rounded one unless the exact power lies
/// within ~2^-29 relative of an f32 rounding midpoint.
fn power(b: f32, e: usize) -> f32 {
    libm::pow(b as f64, e as f64) as f32
}

fn check_slopes(slopes: &[f32]) -> Result<(), Error> {
    if slopes.is_empty() {
        return Err(Error::ZeroHeads);
    }
    if let Some(&bad) = slopes.iter().find(|s| !s.is_finite()) {
        return Err(Error::ParameterOutOfRange {
            what: "slopes",
            constraint: "must be finite",
            value: bad,
        });
    }
    Ok(())
}

/// Fills the ALiBi bias of a block: `out[h][i][j]` for head `h`, query `i`, key `j`,
/// head-major and contiguous (`slopes.len() × q.len() × k.len()`), the layout an attention
/// kernel adds to its `[heads, q, k]` scores.
///
/// Each value is `slope_h · d` with `d = k_j − q_i` ([`AlibiMode::Causal`]) or `−|k_j − q_i|`
/// ([`AlibiMode::Symmetric`]), the distance formed exactly in `i64`; the product is rounded
/// once to f32 (exactly for `|d| < 2^29`: it is formed in f64), then once to `T`: the same
/// numbers as torch's f32 `slopes * distance` followed by `.to(dtype)` for `|d| ≤ 2^24`, where
/// torch's int → f32 conversion is still exact. A zero distance gives `+0.0` for a positive
/// slope.
///
/// Queries and keys are [`Positions`] (a list, or a range), so a block anywhere in a KV
/// cache is described without materialising its positions. To reproduce BLOOM's
/// `build_alibi_tensor` (which adds `slope · position_j` for left-padded batches), pass
/// a single query at position 0 and the key positions from
/// [`alibi_positions_from_mask`]; see there.
///
/// Errors (nothing is written): no slopes ([`Error::ZeroHeads`]), a non-finite slope
/// ([`Error::ParameterOutOfRange`]), a shape product that overflows ([`Error::ShapeOverflow`]),
/// `out` of the wrong length ([`Error::LengthMismatch`]).
///
/// ```
/// use posenc::alibi::{alibi_bias, alibi_slopes, AlibiMode, Positions};
/// let mut slopes = [0f32; 8];
/// alibi_slopes(8, &mut slopes).unwrap();
/// // Decode step: the query at position 4 against the 5 cached keys 0..=4, in bf16.
/// let mut bias = vec![posenc::bf16::ZERO; 8 * 1 * 5];
/// let (q, k) = (Positions::range(4, 1), Positions::range(0, 5));
/// alibi_bias(&slopes, q, k, AlibiMode::Causal, &mut bias).unwrap();
/// assert_eq!(bias[0].to_f32(), -2.0); // head 0 (slope 1/2), key 0: 0.5 · (0 − 4)
/// assert_eq!(bias[4].to_f32(), 0.0); // the query's own key
/// ```
pub fn alibi_bias<'q, 'k, T: Element>(
    slopes: &[f32],
    q: impl Into<Positions<'q>>,
    k: impl Into<Positions<'k>>,
    mode: AlibiMode,
    out: &mut [T],
) -> Result<(), Error> {
    let (q, k) = (q.into(), k.into());
    check_slopes(slopes)?;
    let expected = block_len(slopes.len(), q.len(), k.len())?;
    if out.len() != expected {
        return Err(Error::LengthMismatch {
            what: "out",
            expected,
            actual: out.len(),
            formula: Formula::three(&"heads × queries × keys", [slopes.len(), q.len(), k.len()]),
        });
    }
    if out.is_empty() {
        return Ok(());
    }
    let mut rows = out.chunks_exact_mut(k.len());
    for &slope in slopes {
        let s = slope as f64;
        for qi in q.iter() {
            // `rows` has exactly heads · q_len rows: never exhausted here.
            let Some(row) = rows.next() else {
                return Ok(());
            };
            for (o, kj) in row.iter_mut().zip(k.iter()) {
                let d = kj - qi;
                let d = match mode {
                    AlibiMode::Causal => d,
                    AlibiMode::Symmetric => -d.abs(),
                };
                // |d| < 2^33: exact in f64; the product is exact for |d| < 2^29.
                *o = T::from_f32((s * d as f64) as f32);
            }
        }
    }
    Ok(())
}

/// BLOOM's key positions from an attention mask: `(cumsum(mask) − 1) · mask`, i.e. attended
/// keys are numbered `0, 1, 2, …` in order and padding gets 0. Any non-zero mask value
/// counts as attended (HF's masks are 0/1); `mask` may be `bool`, or any integer type that
/// converts to `i64`.
///
/// With these as key positions and a single query at position 0, [`alibi_bias`] in
/// [`AlibiMode::Causal`] is BLOOM's `build_alibi_tensor` for that batch row (shape
/// `[heads, 1, seq]`; BLOOM stacks rows batch-major), bit for bit in f32, f16 and bf16.
///
/// Errors: `out.len() != mask.len()` ([`Error::LengthMismatch`]); a mask longer than
/// `i32::MAX + 1` ([`Error::ShapeOverflow`], positions would not fit in `i32`).
///
/// ```
/// use posenc::alibi::{alibi_bias, alibi_positions_from_mask, alibi_slopes, AlibiMode};
/// let mask = [0i64, 0, 1, 1, 1]; // left-padded row
/// let mut pos = [0i32; 5];
/// alibi_positions_from_mask(&mask, &mut pos).unwrap();
/// assert_eq!(pos, [0, 0, 0, 1, 2]);
/// let mut slopes = [0f32; 2];
/// alibi_slopes(2, &mut slopes).unwrap(); // [1/16, 1/256]
/// let mut bloom = [0f32; 2 * 5];
/// alibi_bias(&slopes, &[0], &pos, AlibiMode::Causal, &mut bloom).unwrap();
/// assert_eq!(&bloom[..5], &[0.0, 0.0, 0.0, 0.0625, 0.125]);
/// ```
pub fn alibi_positions_from_mask<M: Copy + Into<i64>>(
    mask: &[M],
    out: &mut [i32],
) -> Result<(), Error> {
    if out.len() != mask.len() {
        return Err(Error::LengthMismatch {
            what: "out",
            expected: mask.len(),
            actual: out.len(),
            formula: Formula::one(&"mask.len()", mask.len()),
        });
    }
    if mask.len() as u64 > i32::MAX as u64 + 1 {
        return Err(Error::ShapeOverflow);
    }
    let mut next = 0i32;
    for (o, &m) in out.iter_mut().zip(mask) {
        if m.into() != 0 {
            *o = next;
            // At most mask.len() − 1 ≤ i32::MAX increments are observed.
            next = next.saturating_add(1);
        } else {
            *o = 0;
        }
    }
    Ok(())
}
