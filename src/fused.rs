//! Fused RoPE calls a runtime makes around its KV cache: rotating into another buffer of any
//! dtype (K straight into a cache slot, [`Rope::apply_into`]) and RMSNorm + RoPE in one pass
//! (Qwen3, Gemma 3, OLMo 2's QK-norm, [`Rope::apply_normed`]).
//!
//! Each call validates everything (shapes, views, overlap, weights) before anything is
//! written, then runs the one RoPE driver (`engine::rope`) with a source and a destination.

use crate::angles::Angles;
use crate::element::Element;
use crate::engine::angles::CHUNK;
use crate::engine::job::{Norm, NormKind, Target};
use crate::engine::pairs::{STAGE, is_staged};
use crate::error::{Error, Formula};
use crate::rope::Rope;
use crate::types::Rounding;
use crate::types::View;
use crate::validate::check_rows;
use crate::view;

/// An RMSNorm applied to each head (or each token's row of heads) right before the rotation:
/// `r = 1 / sqrt(mean(x²) + eps)`, then `x · r` times the weight. Weights are f32 (widen a
/// checkpoint's bf16 weights once at load: exact).
///
/// Under [`Rounding::Once`] the normalised value stays in f32 and the
/// rotation rounds once. Under the HF modes the norm rounds as HuggingFace's module does (see
/// each constructor), and the rotation then runs on the rounded values as HF's RoPE does. In
/// every mode the squares (each exact in f64) are summed in f64, the mean rounded once to
/// f32, and `r` is `1 / sqrt(mean + eps)` in f32 (two roundings, as `torch.rsqrt`). The f64
/// sum is within `n · 2^-53` (relative) of the exact one for `n` squares, far below f32's
/// rounding; the tiers add the squares in different orders, so two backends can differ in
/// the last bit of `r` only when the exact mean lies that close to a midpoint between two
/// f32 values.
///
/// ```
/// use posenc::{Layout, RmsNorm, Rope, RopeConfig};
/// let rope = Rope::new(&RopeConfig::new(4, 1e4, Layout::RotateHalf)).unwrap();
/// let w = [1.0f32; 4];
/// let mut q = [3.0f32, 0.0, 4.0, 0.0];
/// rope.apply_normed(&mut q, 1, &RmsNorm::per_head(&w, 0.0), &[0]).unwrap();
/// // mean(x²) = 25/4: x / 2.5
/// assert_eq!(q, [1.2, 0.0, 1.6, 0.0]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RmsNorm<'w> {
    kind: NormKind,
    weight: &'w [f32],
    eps: f32,
}

impl<'w> RmsNorm<'w> {
    /// Qwen3's `q_norm`/`k_norm` (and Llama-style RMSNorm per head): a `[head_dim]` weight,
    /// `w · round_T(x · r)` under the HF modes (rounded to `T` again after the product).
    ///
    /// ```
    /// let w = [1.0f32; 128];
    /// let _norm = posenc::RmsNorm::per_head(&w, 1e-6);
    /// ```
    pub fn per_head(weight: &'w [f32], eps: f32) -> Self {
        RmsNorm {
            kind: NormKind::Head,
            weight,
            eps,
        }
    }

    /// Gemma 3's `q_norm`/`k_norm`: a `[head_dim]` weight used as `1 + w`, computed in f32:
    /// `round_T((x · r) · (1 + w))` under the HF modes.
    ///
    /// ```
    /// let w = [0.0f32; 256]; // Gemma stores w; the scale is 1 + w
    /// let _norm = posenc::RmsNorm::per_head_one_plus(&w, 1e-6);
    /// ```
    pub fn per_head_one_plus(weight: &'w [f32], eps: f32) -> Self {
        RmsNorm {
            kind: NormKind::HeadOnePlus,
            weight,
            eps,
        }
    }

    /// OLMo 2's `q_norm`/`k_norm`: one norm over a token's whole row of heads (`[n_heads ·
    /// head_dim]` weight, `r` from all of them) before the split into heads:
    /// `round_T(w · (x · r))` under the HF modes.
    ///
    /// ```
    /// let w = vec![1.0f32; 16 * 128];
    /// let _norm = posenc::RmsNorm::per_row(&w, 1e-6);
    /// ```
    pub fn per_row(weight: &'w [f32], eps: f32) -> Self {
        RmsNorm {
            kind: NormKind::Row,
            weight,
            eps,
        }
    }

    /// Checks the weight against `n_heads` heads of `head_dim` and `eps`.
    fn check(&self, n_heads: usize, head_dim: usize) -> Result<Norm<'w>, Error> {
        let expected = match self.kind {
            NormKind::Row => n_heads.checked_mul(head_dim).ok_or(Error::ShapeOverflow)?,
            _ => head_dim,
        };
        if self.weight.len() != expected {
            return Err(Error::LengthMismatch {
                what: "norm weight",
                expected,
                actual: self.weight.len(),
                formula: match self.kind {
                    NormKind::Row => Formula::two(&"n_heads × head_dim", [n_heads, head_dim]),
                    _ => Formula::one(&"head_dim", head_dim),
                },
            });
        }
        if !(self.eps.is_finite() && self.eps >= 0.0) {
            return Err(Error::ParameterOutOfRange {
                what: "eps",
                constraint: "must be finite and >= 0",
                value: self.eps,
            });
        }
        Ok(Norm {
            kind: self.kind,
            weight: self.weight,
            eps: self.eps,
        })
    }
}

/// Whether two buffers share any byte (empty buffers share none).
fn overlap<A, B>(a: &[A], b: &[B]) -> bool {
    let (a0, b0) = (a.as_ptr() as usize, b.as_ptr() as usize);
    let (a1, b1) = (
        a0 + core::mem::size_of_val(a),
        b0 + core::mem::size_of_val(b),
    );
    a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1
}

/// A view error about `x` (what `view::validate` calls the buffer), about `what` instead.
fn named(e: Error, what: &'static str) -> Error {
    match e {
        Error::LengthMismatch {
            expected,
            actual,
            formula,
            ..
        } => Error::LengthMismatch {
            what,
            expected,
            actual,
            formula,
        },
        other => other,
    }
}

/// Checks what a call between two dtypes that the engine stages (`engine::pairs`) needs: a
/// head (a row of heads, for a row norm) fits the stack buffer.
fn check_staged<I: Element, O: Element>(
    round: Rounding,
    head_dim: usize,
    views: &[View],
    norm: Option<Norm<'_>>,
) -> Result<(), Error> {
    if !is_staged(I::DTYPE, O::DTYPE, round) {
        return Ok(());
    }
    let row = norm.is_some_and(|n| n.kind == NormKind::Row);
    let widest = views.iter().map(|v| v.n_heads).max().unwrap_or(0);
    let (what, need) = match row {
        true => ("n_heads", widest.saturating_mul(head_dim)),
        false => ("head_dim", head_dim),
    };
    if need > STAGE {
        return Err(Error::ParameterOutOfRange {
            what,
            constraint: "a head (a row of heads, under a row norm) must have at most 8192 \
                channels when rotating from f16/bf16 into another dtype, or between dtypes under \
                the HF rounding modes",
            value: if row { widest as f32 } else { head_dim as f32 },
        });
    }
    Ok(())
}

/// The error of a destination that overlaps its source.
fn overlap_error() -> Error {
    Error::ParameterOutOfRange {
        what: "dst",
        constraint: "must not overlap src",
        value: 0.0,
    }
}

impl Rope {
    /// QK-norm + RoPE in place reads each head whole before rotating it, which the engine
    /// does for rotary dims up to `2·CHUNK` = 256 (every released QK-norm model: Qwen3 and
    /// OLMo 2 at 128, Gemma 3 at 256); the `_into` forms have no such limit.
    fn check_norm_in_place(&self) -> Result<(), Error> {
        if self.rotary_dim() > 2 * CHUNK {
            return Err(Error::ParameterOutOfRange {
                what: "rotary_dim",
                constraint: "QK-norm + RoPE in place needs rotary_dim <= 256 (use the _into form)",
                value: self.rotary_dim() as f32,
            });
        }
        Ok(())
    }

    /// Checks a source/destination pair of view lists for `tokens` tokens: each list valid in
    /// its buffer, pairs with equal head counts, the buffers disjoint.
    fn check_into<I, O>(
        &self,
        src: &[I],
        src_views: &[View],
        dst: &[O],
        dst_views: &[View],
        tokens: usize,
    ) -> Result<(), Error> {
        if src_views.len() != dst_views.len() {
            return Err(Error::LengthMismatch {
                what: "dst_views",
                expected: src_views.len(),
                actual: dst_views.len(),
                formula: Formula::one(&"src_views.len()", src_views.len()),
            });
        }
        view::validate(src_views, src.len(), self.head_dim(), tokens)
            .map_err(|e| named(e, "src"))?;
        view::validate(dst_views, dst.len(), self.head_dim(), tokens)
            .map_err(|e| named(e, "dst"))?;
        for (s, d) in src_views.iter().zip(dst_views) {
            if s.n_heads != d.n_heads {
                return Err(Error::LengthMismatch {
                    what: "dst view n_heads",
                    expected: s.n_heads,
                    actual: d.n_heads,
                    formula: Formula::one(&"the src view's n_heads", s.n_heads),
                });
            }
        }
        if overlap(src, dst) {
            return Err(overlap_error());
        }
        Ok(())
    }

    /// Rotates `src` (`tokens × n_heads × head_dim`, token-major, left untouched) into the
    /// heads `dst_view` describes in `dst`: a KV-cache slot, token-major
    /// `[pos][kv_head][dim]` or head-major `[kv_head][pos][dim]`, at any start and stride.
    /// Any of f32/f16/bf16 on each side. Every channel of each head is written: the rotary
    /// window rotated, the others converted.
    ///
    /// Under [`Rounding::Once`] the rotation is computed in f32 and
    /// rounded once into `O`: bitwise rotating an f32 copy of `src` and rounding it. Under the
    /// HF modes it is [`Rope::apply`] on a copy of `src` in `I`, then converted to `O`.
    /// Everything is checked (shapes, views, head counts, overlap) before anything is written.
    ///
    /// ```
    /// use posenc::{bf16, Layout, Rope, RopeConfig, View};
    /// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
    /// let (kv_heads, max_ctx) = (2, 16);
    /// // A head-major bf16 cache [kv_head][pos][dim]; write positions 5..7.
    /// let mut cache = vec![bf16::ZERO; kv_heads * max_ctx * 8];
    /// let k = vec![0.5f32; 2 * kv_heads * 8]; // 2 new tokens
    /// let slot = View { offset: 5 * 8, ..View::head_major(kv_heads, max_ctx, 8) };
    /// rope.apply_into(&k, kv_heads, &mut cache, slot, &[5, 6]).unwrap();
    ///
    /// let mut copy = k.clone();
    /// rope.apply(&mut copy, kv_heads, &[5, 6]).unwrap();
    /// assert_eq!(cache[5 * 8], bf16::from_f32(copy[0]));
    /// ```
    pub fn apply_into<'a, I: Element, O: Element>(
        &self,
        src: &[I],
        n_heads: usize,
        dst: &mut [O],
        dst_view: View,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.contiguous_into(src, n_heads, None, dst, dst_view, at.source())
    }

    /// [`Rope::apply_into`] for any number of source views, each rotated into the
    /// destination view of the same index (same head count): fused QKV rows into a cache,
    /// head-major to token-major, several caches' slots in one buffer.
    ///
    /// ```
    /// use posenc::{f16, Layout, Rope, RopeConfig, View};
    /// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::Interleaved)).unwrap();
    /// // K of a fused QKV row (4 q, 2 k, 2 v heads) into an f16 token-major cache.
    /// let row = 8 * 8;
    /// let qkv = vec![0.25f32; 3 * row];
    /// let k = View { n_heads: 2, token_stride: row, head_stride: 8, offset: 32 };
    /// let mut cache = vec![f16::ZERO; 10 * 2 * 8];
    /// let slot = View { offset: 4 * 16, ..View::token_major(2, 8) };
    /// rope.apply_views_into(&qkv, &[k], &mut cache, &[slot], &[4, 5, 6]).unwrap();
    /// ```
    pub fn apply_views_into<'a, I: Element, O: Element>(
        &self,
        src: &[I],
        src_views: &[View],
        dst: &mut [O],
        dst_views: &[View],
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.views_into(src, src_views, dst, dst_views, at.source(), None)
    }

    /// Rotates `q` in place and `k` into a cache slot (GQA/MQA: different head counts), from
    /// one angle source: what a decoder layer does after its QKV projection.
    /// `k` is `tokens × n_kv_heads × head_dim`, the cache slot `cache_view` (as
    /// [`Rope::apply_into`]). `q` is validated with everything else before anything is written.
    ///
    /// ```
    /// use posenc::{bf16, Layout, Rope, RopeConfig, View};
    /// let rope = Rope::new(&RopeConfig::new(64, 5e5, Layout::RotateHalf)).unwrap();
    /// let (mut q, k) = (vec![0.5f32; 2 * 8 * 64], vec![0.5f32; 2 * 2 * 64]);
    /// let mut cache = vec![bf16::ZERO; 32 * 2 * 64];
    /// let slot = View { offset: 10 * 2 * 64, ..View::token_major(2, 64) };
    /// rope.apply_qk_into(&mut q, 8, &k, 2, &mut cache, slot, &[10usize, 11]).unwrap();
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn apply_qk_into<'a, T: Element, O: Element>(
        &self,
        q: &mut [T],
        n_q_heads: usize,
        k: &[T],
        n_kv_heads: usize,
        cache: &mut [O],
        cache_view: View,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.qk_into(
            q, n_q_heads, None, k, n_kv_heads, None, cache, cache_view, at,
        )
    }

    /// RMSNorm then RoPE, in one pass over `x` (`tokens × n_heads × head_dim`, in place):
    /// bitwise [`Rope::apply`] after the norm would have been written back in f32 (posenc's
    /// rounding), or the HF module's rounded output (HF modes). Channels outside the rotary
    /// window are normalised too. In place, `rotary_dim` must be at most 256 (a typed error
    /// otherwise; [`Rope::apply_normed_into`] has no limit).
    ///
    /// ```
    /// use posenc::{Layout, RmsNorm, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(64, 1e6, Layout::RotateHalf)).unwrap();
    /// let w = vec![1.0f32; 64];
    /// let mut k = vec![2.0f32; 3 * 4 * 64];
    /// rope.apply_normed(&mut k, 4, &RmsNorm::per_head(&w, 1e-6), &[0, 1, 2]).unwrap();
    /// assert!((k[0] - 1.0).abs() < 1e-6); // position 0: the norm alone
    /// ```
    pub fn apply_normed<'a, T: Element>(
        &self,
        x: &mut [T],
        n_heads: usize,
        norm: &RmsNorm<'_>,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let src = at.source();
        check_rows("x", x.len(), n_heads, self.head_dim(), src.tokens())?;
        self.check_source(&src)?;
        let norm = norm.check(n_heads, self.head_dim())?;
        self.check_norm_in_place()?;
        let views = [self.contiguous(n_heads)];
        let m = self.attention_factor();
        self.launch(&mut [Target::in_place(x, &views).normed(norm)], src, m, m);
        Ok(())
    }

    /// RMSNorm then RoPE from `src` (untouched) into a destination view of any dtype (a cache
    /// slot), in one pass: [`Rope::apply_normed`] on a copy, rounded as
    /// [`Rope::apply_into`] rounds.
    ///
    /// ```
    /// use posenc::{bf16, Layout, RmsNorm, Rope, RopeConfig, View};
    /// let rope = Rope::new(&RopeConfig::new(8, 1e6, Layout::RotateHalf)).unwrap();
    /// let w = [1.0f32; 8];
    /// let k = vec![0.5f32; 3 * 2 * 8];
    /// let mut cache = vec![bf16::ZERO; 16 * 2 * 8];
    /// let slot = View::head_major(2, 16, 8);
    /// rope.apply_normed_into(&k, 2, &RmsNorm::per_head(&w, 1e-6), &mut cache, slot, &[0, 1, 2]).unwrap();
    /// assert_eq!(cache[0], bf16::ONE); // position 0: 0.5 normalised to 1
    /// ```
    pub fn apply_normed_into<'a, I: Element, O: Element>(
        &self,
        src: &[I],
        n_heads: usize,
        norm: &RmsNorm<'_>,
        dst: &mut [O],
        dst_view: View,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.contiguous_into(src, n_heads, Some(norm), dst, dst_view, at.source())
    }

    /// QK-norm + RoPE for a decoder layer: `q` normalised by `q_norm` and rotated in place,
    /// `k` normalised by `k_norm` and rotated into a cache slot, one angle source.
    ///
    /// ```
    /// use posenc::{bf16, Layout, RmsNorm, Rope, RopeConfig, View};
    /// let rope = Rope::new(&RopeConfig::new(128, 1e6, Layout::RotateHalf)).unwrap();
    /// let (qw, kw) = (vec![1.0f32; 128], vec![1.0f32; 128]);
    /// let (mut q, k) = (vec![0.5f32; 16 * 128], vec![0.5f32; 8 * 128]);
    /// let mut cache = vec![bf16::ZERO; 64 * 8 * 128];
    /// let slot = View { offset: 7 * 8 * 128, ..View::token_major(8, 128) };
    /// rope.apply_qk_normed_into(
    ///     &mut q, 16, &RmsNorm::per_head(&qw, 1e-6),
    ///     &k, 8, &RmsNorm::per_head(&kw, 1e-6),
    ///     &mut cache, slot, &[7],
    /// ).unwrap();
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn apply_qk_normed_into<'a, T: Element, O: Element>(
        &self,
        q: &mut [T],
        n_q_heads: usize,
        q_norm: &RmsNorm<'_>,
        k: &[T],
        n_kv_heads: usize,
        k_norm: &RmsNorm<'_>,
        cache: &mut [O],
        cache_view: View,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.qk_into(
            q,
            n_q_heads,
            Some(q_norm),
            k,
            n_kv_heads,
            Some(k_norm),
            cache,
            cache_view,
            at,
        )
    }

    /// The checks and call of [`Rope::apply_into`] and [`Rope::apply_normed_into`]: `src`
    /// (token-major, `n_heads` heads) into `dst_view`, normalised first when `norm` is given.
    fn contiguous_into<I: Element, O: Element>(
        &self,
        src: &[I],
        n_heads: usize,
        norm: Option<&RmsNorm<'_>>,
        dst: &mut [O],
        dst_view: View,
        at: crate::angles::Source<'_>,
    ) -> Result<(), Error> {
        let sv = [self.contiguous(n_heads)];
        check_rows("src", src.len(), n_heads, self.head_dim(), at.tokens())?;
        let norm = norm
            .map(|n| n.check(n_heads, self.head_dim()))
            .transpose()?;
        self.views_into(src, &sv, dst, &[dst_view], at, norm)
    }

    /// The checked body of the `*_into` calls on view lists.
    fn views_into<I: Element, O: Element>(
        &self,
        src: &[I],
        src_views: &[View],
        dst: &mut [O],
        dst_views: &[View],
        at: crate::angles::Source<'_>,
        norm: Option<Norm<'_>>,
    ) -> Result<(), Error> {
        let tokens = at.tokens();
        self.check_into(src, src_views, dst, dst_views, tokens)?;
        self.check_source(&at)?;
        check_staged::<I, O>(self.rounding(), self.head_dim(), src_views, norm)?;
        if tokens == 0 {
            return Ok(()); // no tokens: nothing to write (offsets were never dereferenced)
        }
        let mut target = Target::between(src, src_views, dst, dst_views);
        if let Some(n) = norm {
            target = target.normed(n);
        }
        let m = self.attention_factor();
        self.launch(&mut [target], at, m, m);
        Ok(())
    }

    /// The checked body of the Q-in-place, K-into-cache calls.
    #[allow(clippy::too_many_arguments)]
    fn qk_into<'a, T: Element, O: Element>(
        &self,
        q: &mut [T],
        n_q_heads: usize,
        q_norm: Option<&RmsNorm<'_>>,
        k: &[T],
        n_kv_heads: usize,
        k_norm: Option<&RmsNorm<'_>>,
        cache: &mut [O],
        cache_view: View,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let src = at.source();
        let tokens = src.tokens();
        self.check_qk(q.len(), n_q_heads, k.len(), n_kv_heads, tokens)?;
        let (kv, cv) = ([self.contiguous(n_kv_heads)], [cache_view]);
        self.check_into(k, &kv, cache, &cv, tokens)?;
        if overlap(q, cache) || overlap(q, k) {
            return Err(overlap_error());
        }
        self.check_source(&src)?;
        let qn = q_norm
            .map(|n| n.check(n_q_heads, self.head_dim()))
            .transpose()?;
        let kn = k_norm
            .map(|n| n.check(n_kv_heads, self.head_dim()))
            .transpose()?;
        if qn.is_some() {
            self.check_norm_in_place()?;
        }
        check_staged::<T, O>(self.rounding(), self.head_dim(), &kv, kn)?;
        if tokens == 0 {
            return Ok(());
        }
        let m = self.attention_factor();
        let qv = [self.contiguous(n_q_heads)];
        let mut qt = Target::in_place(q, &qv);
        if let Some(n) = qn {
            qt = qt.normed(n);
        }
        self.launch(&mut [qt], src, m, m);
        let mut kt = Target::between(k, &kv, cache, &cv);
        if let Some(n) = kn {
            kt = kt.normed(n);
        }
        self.launch(&mut [kt], src, m, m);
        Ok(())
    }
}

/// [`Rope::apply_normed`] for Q and K in place, one angle source (both buffers of `T`: one
/// engine pass over both).
impl Rope {
    /// QK-norm + RoPE in place on `q` and `k` (GQA head counts), each with its own norm.
    ///
    /// ```
    /// use posenc::{Layout, RmsNorm, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(64, 1e6, Layout::RotateHalf)).unwrap();
    /// let (qw, kw) = (vec![1.0f32; 64], vec![0.5f32; 64]);
    /// let (mut q, mut k) = (vec![0.5f32; 2 * 8 * 64], vec![0.5f32; 2 * 2 * 64]);
    /// let (qn, kn) = (RmsNorm::per_head(&qw, 1e-6), RmsNorm::per_head(&kw, 1e-6));
    /// rope.apply_qk_normed(&mut q, 8, &qn, &mut k, 2, &kn, &[0, 1]).unwrap();
    /// assert!((k[0] - 0.5).abs() < 1e-5); // 0.5 · (0.5 · r), r = 1/sqrt(0.25 + 1e-6)
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn apply_qk_normed<'a, T: Element>(
        &self,
        q: &mut [T],
        n_q_heads: usize,
        q_norm: &RmsNorm<'_>,
        k: &mut [T],
        n_kv_heads: usize,
        k_norm: &RmsNorm<'_>,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let src = at.source();
        self.check_qk(q.len(), n_q_heads, k.len(), n_kv_heads, src.tokens())?;
        self.check_source(&src)?;
        let qn = q_norm.check(n_q_heads, self.head_dim())?;
        let kn = k_norm.check(n_kv_heads, self.head_dim())?;
        self.check_norm_in_place()?;
        let (qv, kv) = ([self.contiguous(n_q_heads)], [self.contiguous(n_kv_heads)]);
        let m = self.attention_factor();
        let mut targets = [
            Target::in_place(q, &qv).normed(qn),
            Target::in_place(k, &kv).normed(kn),
        ];
        self.launch(&mut targets, src, m, m);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::overlap;

    #[test]
    fn overlap_compares_address_ranges() {
        let buf = [0u8; 64];
        assert!(overlap(&buf[..10], &buf[9..20]));
        assert!(!overlap(&buf[..10], &buf[10..20]));
        assert!(overlap(&buf[8..9], &buf[..64]));
        assert!(!overlap(&buf[..0], &buf[..64]));
    }
}
