//! T5 relative-position buckets (Raffel et al. 2020), exactly as HuggingFace's
//! `T5Attention._relative_position_bucket` computes them, and the bias gather a runtime does
//! with them.
//!
//! ```
//! use posenc::t5::T5Buckets;
//! // HF T5 encoder defaults: 32 buckets, max_distance 128, bidirectional.
//! let b = T5Buckets::new(true, 32, 128).unwrap();
//! assert_eq!(b.bucket(0), 0);
//! assert_eq!(b.bucket(-3), 3); // keys before the query: buckets 0..16
//! assert_eq!(b.bucket(3), 19); // keys after it: offset by 16
//! ```

/// The query/key positions of a block (lists or ranges), shared with ALiBi: the same type
/// as [`alibi::Positions`](crate::alibi::Positions).
pub use super::alibi::Positions;
use super::alibi::block_len;
use crate::error::{Error, Formula};

/// A validated T5 bucketing: `num_buckets`, `max_distance`, and whether attention is
/// bidirectional (encoder) or causal (decoder).
///
/// `relative_position` is `key − query` (HF's `memory_position − context_position`).
/// Bidirectional: half the buckets are for keys after the query (`rel > 0`), which get an
/// offset of `num_buckets / 2`. Causal: only `rel ≤ 0` is distinguished, `rel > 0` is bucket
/// 0. Then, with `n` the buckets of one side and `max_exact = n / 2`, a distance `r = |rel|`
/// below `max_exact` is its own bucket, and larger ones are binned logarithmically up to
/// `max_distance`:
/// `max_exact + trunc(ln(r / max_exact) / ln(max_distance / max_exact) · (n − max_exact))`,
/// clamped to `n − 1`.
///
/// **Bit-for-bit HF.** The logarithmic branch is evaluated in HF's own arithmetic: `r` and
/// `r / max_exact` in f32, an f32 `ln`, divided by `ln(max_distance / max_exact)` computed in
/// f64 and rounded to f32, multiplied by `n − max_exact` in f32, then truncated toward zero.
/// Where the real value is an integer, the f64 formula can land on the other side of it
/// (causal, 10 buckets, `max_distance` 160: `r = 10` is bucket 6 in HF's f32 and 5 in f64),
/// which is why posenc follows HF's order. The f32 `ln` is correctly rounded (torch's CPU
/// `log` is glibc's `logf` for a tensor's scalar tail and SLEEF's ≤ 1 ulp `logf` in vector
/// lanes, so HF itself can differ by a bucket at such exact-integer points, depending on the
/// element's position in the tensor and the CPU). On T5's own configuration (32/128) every
/// distance is unaffected: the boundary points are powers of two, where every `logf` is exact
/// enough.
///
/// Validation ([`Error::ParameterOutOfRange`]): bidirectional needs an even
/// `num_buckets ≥ 4`, causal `num_buckets ≥ 2` (so `max_exact ≥ 1`), and
/// `max_distance > max_exact` (else the logarithm's scale is zero or negative). HF accepts an
/// odd bidirectional count and never uses its last bucket; posenc refuses it as a
/// configuration error.
///
/// ```
/// use posenc::t5::T5Buckets;
/// let enc = T5Buckets::new(true, 32, 128).unwrap(); // T5 encoder: HF's defaults
/// assert_eq!(enc, T5Buckets::default());
/// assert_eq!(enc.bucket(0), 0);
/// assert_eq!(enc.bucket(-1), 1);
/// assert_eq!(enc.bucket(1), 17); // keys after the query: offset 16
/// assert_eq!(enc.bucket(-16), 10);
/// assert_eq!(enc.bucket(-1000), 15);
/// let dec = T5Buckets::new(false, 32, 128).unwrap(); // T5 decoder
/// assert_eq!(dec.bucket(5), 0); // the future is one bucket
/// assert_eq!(dec.bucket(-10), 10); // causal: 16 exact buckets
/// assert_eq!(dec.bucket(-20), 17); // 16 + trunc(16 · ln(20/16) / ln(128/16))
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct T5Buckets {
    bidirectional: bool,
    num_buckets: u32,
    max_distance: u32,
    /// Buckets per side (`num_buckets`, halved when bidirectional).
    side: u32,
    /// `side / 2`.
    max_exact: u32,
    /// `f32(ln(max_distance / max_exact))`, the f64 log rounded to f32 as torch does.
    log_scale: f32,
    /// `f32(side − max_exact)`.
    span: f32,
}

impl Default for T5Buckets {
    /// Bidirectional, 32 buckets, `max_distance` 128: HF's defaults, the T5 encoder.
    ///
    /// ```
    /// assert_eq!(posenc::t5::T5Buckets::default().num_buckets(), 32);
    /// ```
    fn default() -> Self {
        T5Buckets {
            bidirectional: true,
            num_buckets: 32,
            max_distance: 128,
            side: 16,
            max_exact: 8,
            log_scale: libm::log(16.0) as f32,
            span: 8.0,
        }
    }
}

impl T5Buckets {
    /// Validates a bucketing; see the type's documentation for the rules.
    ///
    /// ```
    /// use posenc::t5::T5Buckets;
    /// assert!(T5Buckets::new(false, 32, 128).is_ok());
    /// assert!(T5Buckets::new(true, 33, 128).is_err()); // odd, bidirectional
    /// assert!(T5Buckets::new(true, 32, 8).is_err());   // max_distance ≤ max_exact (8)
    /// ```
    pub fn new(
        bidirectional: bool,
        num_buckets: u32,
        max_distance: u32,
    ) -> Result<T5Buckets, Error> {
        let side = if bidirectional {
            if num_buckets < 4 || !num_buckets.is_multiple_of(2) {
                return Err(Error::ParameterOutOfRange {
                    what: "num_buckets",
                    constraint: "must be even and at least 4 for bidirectional buckets",
                    value: num_buckets as f32,
                });
            }
            num_buckets / 2
        } else {
            if num_buckets < 2 {
                return Err(Error::ParameterOutOfRange {
                    what: "num_buckets",
                    constraint: "must be at least 2",
                    value: num_buckets as f32,
                });
            }
            num_buckets
        };
        let max_exact = side / 2;
        if max_distance <= max_exact {
            return Err(Error::ParameterOutOfRange {
                what: "max_distance",
                constraint: "must exceed max_exact (num_buckets / 4 bidirectional, / 2 causal)",
                value: max_distance as f32,
            });
        }
        // Python: math.log(max_distance / max_exact), f64; torch casts it to f32 for the op.
        // max_distance / max_exact > 1 + 2^-32, so the log is ≥ 2^-33: positive and normal.
        let log_scale = libm::log(max_distance as f64 / max_exact as f64) as f32;
        Ok(T5Buckets {
            bidirectional,
            num_buckets,
            max_distance,
            side,
            max_exact,
            log_scale,
            span: (side - max_exact) as f32,
        })
    }

    /// Whether keys after the query get their own buckets (encoder) or not (decoder).
    ///
    /// ```
    /// assert!(posenc::t5::T5Buckets::default().bidirectional());
    /// ```
    pub fn bidirectional(&self) -> bool {
        self.bidirectional
    }

    /// The number of buckets (rows of the bias embedding).
    ///
    /// ```
    /// assert_eq!(posenc::t5::T5Buckets::new(false, 32, 128).unwrap().num_buckets(), 32);
    /// ```
    pub fn num_buckets(&self) -> u32 {
        self.num_buckets
    }

    /// The distance from which every farther one shares the last bucket.
    ///
    /// ```
    /// assert_eq!(posenc::t5::T5Buckets::default().max_distance(), 128);
    /// ```
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// The bucket of `relative_position = key − query`, in `0 .. num_buckets`.
    ///
    /// ```
    /// let b = posenc::t5::T5Buckets::default();
    /// assert_eq!(b.bucket(-7), 7);  // exact buckets: 0..8
    /// assert_eq!(b.bucket(-8), 8);  // first logarithmic bucket
    /// assert_eq!(b.bucket(i32::MIN), 15);
    /// assert_eq!(b.bucket(i32::MAX), 31);
    /// ```
    pub fn bucket(&self, relative_position: i32) -> u32 {
        self.bucket_i64(relative_position as i64)
    }

    /// [`T5Buckets::bucket`] for a distance formed in `i64` (`k − q` of two `i32` positions).
    #[inline]
    pub(crate) fn bucket_i64(&self, rel: i64) -> u32 {
        let (offset, r) = if self.bidirectional {
            (if rel > 0 { self.side } else { 0 }, rel.unsigned_abs())
        } else {
            // -min(rel, 0)
            (0, if rel < 0 { rel.unsigned_abs() } else { 0 })
        };
        let max_exact = self.max_exact as u64;
        if r < max_exact {
            return offset + r as u32;
        }
        // HF, in f32: log(rel.float() / max_exact) / log_scale * (n - max_exact), .to(long).
        let x = r as f32 / self.max_exact as f32;
        let z = ln_f32(x) / self.log_scale * self.span;
        // z ≥ 0 and finite; `as` truncates toward zero and saturates.
        let large = (self.max_exact as u64).saturating_add(z as u64);
        offset + large.min(self.side as u64 - 1) as u32
    }

    /// Fills `out` (`q.len() × k.len()`, query-major) with the bucket of every query–key pair:
    /// `out[i·k_len + j] = bucket(k_j − q_i)`, HF's `compute_bias` buckets for any block (a KV
    /// cache block at an offset included). The distance is formed in `i64`.
    ///
    /// Errors (nothing written): [`Error::ShapeOverflow`], [`Error::LengthMismatch`].
    ///
    /// ```
    /// use posenc::alibi::Positions;
    /// use posenc::t5::T5Buckets;
    /// let dec = T5Buckets::new(false, 32, 128).unwrap();
    /// let mut out = [0u32; 3 * 3];
    /// dec.fill(Positions::range(0, 3), Positions::range(0, 3), &mut out).unwrap();
    /// assert_eq!(out, [0, 0, 0,
    ///                  1, 0, 0,
    ///                  2, 1, 0]);
    /// ```
    pub fn fill<'q, 'k>(
        &self,
        q: impl Into<Positions<'q>>,
        k: impl Into<Positions<'k>>,
        out: &mut [u32],
    ) -> Result<(), Error> {
        let (q, k) = (q.into(), k.into());
        let expected = block_len(1, q.len(), k.len())?;
        if out.len() != expected {
            return Err(Error::LengthMismatch {
                what: "out",
                expected,
                actual: out.len(),
                formula: Formula::two(&"queries × keys", [q.len(), k.len()]),
            });
        }
        if out.is_empty() {
            return Ok(());
        }
        for (row, qi) in out.chunks_exact_mut(k.len()).zip(q.iter()) {
            for (o, kj) in row.iter_mut().zip(k.iter()) {
                *o = self.bucket_i64(kj - qi);
            }
        }
        Ok(())
    }

    /// The T5 attention bias of a block, gathered from the relative-attention embedding:
    /// `out[h][i][j] = table[bucket(k_j − q_i)][h]`, head-major (`n_heads × q.len() × k.len()`)
    /// as HF's `compute_bias` returns it (`[1, heads, q, k]`).
    ///
    /// `table` is the embedding weight as stored, `[num_buckets, n_heads]` row-major (HF's
    /// `relative_attention_bias.weight`). Values are copied, not computed: any `T`.
    ///
    /// Errors (nothing written): [`Error::ZeroHeads`], [`Error::ShapeOverflow`],
    /// [`Error::LengthMismatch`] for `table` or `out`.
    ///
    /// ```
    /// use posenc::alibi::Positions;
    /// use posenc::t5::T5Buckets;
    /// let b = T5Buckets::new(true, 4, 8).unwrap(); // buckets: 0 same, 1 before, 3 after
    /// // 4 buckets × 2 heads: head 0 = bucket id, head 1 = 10 × bucket id
    /// let table = [0.0f32, 0.0, 1.0, 10.0, 2.0, 20.0, 3.0, 30.0];
    /// let mut out = [0f32; 2 * 1 * 3];
    /// b.fill_bias(&table, 2, &[1], Positions::range(0, 3), &mut out).unwrap();
    /// assert_eq!(out, [1.0, 0.0, 3.0, 10.0, 0.0, 30.0]);
    /// ```
    pub fn fill_bias<'q, 'k, T: Copy>(
        &self,
        table: &[T],
        n_heads: usize,
        q: impl Into<Positions<'q>>,
        k: impl Into<Positions<'k>>,
        out: &mut [T],
    ) -> Result<(), Error> {
        let (q, k) = (q.into(), k.into());
        if n_heads == 0 {
            return Err(Error::ZeroHeads);
        }
        let table_len = (self.num_buckets as usize)
            .checked_mul(n_heads)
            .ok_or(Error::ShapeOverflow)?;
        if table.len() != table_len {
            return Err(Error::LengthMismatch {
                what: "table",
                expected: table_len,
                actual: table.len(),
                formula: Formula::two(&"num_buckets × heads", [self.num_buckets as usize, n_heads]),
            });
        }
        let expected = block_len(n_heads, q.len(), k.len())?;
        if out.len() != expected {
            return Err(Error::LengthMismatch {
                what: "out",
                expected,
                actual: out.len(),
                formula: Formula::three(&"heads × queries × keys", [n_heads, q.len(), k.len()]),
            });
        }
        if out.is_empty() {
            return Ok(());
        }
        let plane = q.len() * k.len(); // ≤ out.len(): no overflow
        for (h, head) in out.chunks_exact_mut(plane).enumerate() {
            for (row, qi) in head.chunks_exact_mut(k.len()).zip(q.iter()) {
                for (o, kj) in row.iter_mut().zip(k.iter()) {
                    // bucket < num_buckets and h < n_heads: in bounds of the validated table.
                    let b = self.bucket_i64(kj - qi) as usize;
                    if let Some(&v) = table.get(b * n_heads + h) {
                        *o = v;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The correctly rounded f32 natural log of `x > 0` (short of a double-rounding case of
/// probability ~2^-29): the f64 log of the exact f32 value, within 1 f64 ulp, rounded once.
///
/// `libm::logf` (and torch's SLEEF `logf`) are only within ~1 ulp, and a bucket flips when
/// the real value of the expression is an integer and the log rounds the other way: causal,
/// 72 buckets, `max_distance` 100, `r = 60` (`ln(5/3) / ln(25/9) · 36 = 18`) is bucket 53
/// with the correctly rounded log (and glibc's `logf`) and 54 with musl's/`libm`'s.
#[inline]
fn ln_f32(x: f32) -> f32 {
    libm::log(x as f64) as f32
}

/// The T5 bucket of one relative position (`key − query`), validating the parameters each
/// call: HF's `_relative_position_bucket(relative_position, bidirectional, num_buckets,
/// max_distance)` bit for bit. Build a [`T5Buckets`] once to bucket many.
///
/// ```
/// // HF defaults (bidirectional, 32, 128): the query's own key, one before, one after.
/// assert_eq!(posenc::t5::t5_bucket(0, true, 32, 128), Ok(0));
/// assert_eq!(posenc::t5::t5_bucket(-1, true, 32, 128), Ok(1));
/// assert_eq!(posenc::t5::t5_bucket(1, true, 32, 128), Ok(17));
/// assert!(posenc::t5::t5_bucket(1, true, 2, 128).is_err());
/// ```
pub fn t5_bucket(
    relative_position: i32,
    bidirectional: bool,
    num_buckets: u32,
    max_distance: u32,
) -> Result<u32, Error> {
    Ok(T5Buckets::new(bidirectional, num_buckets, max_distance)?.bucket(relative_position))
}
