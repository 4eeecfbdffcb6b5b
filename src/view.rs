//! Strided views: which heads of a buffer to rotate.

use crate::engine::job::Span;
use crate::error::{Error, Formula};

/// At most this many views per [`Rope::apply_views`](crate::Rope::apply_views) call (Q and K
/// of a fused QKV buffer need two).
///
/// ```
/// use posenc::{Layout, Rope, RopeConfig, View, MAX_VIEWS};
/// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
/// let mut x = vec![0f32; 8 * (MAX_VIEWS + 1)];
/// let views: Vec<View> =
///     (0..=MAX_VIEWS).map(|i| View { n_heads: 1, token_stride: 8, head_stride: 8, offset: 8 * i }).collect();
/// assert!(rope.apply_views(&mut x, &views, &[0]).is_err()); // one view too many
/// ```
pub const MAX_VIEWS: usize = 4;

/// Where `n_heads` heads of every token live in a buffer, in elements: head `h` of token `t`
/// starts at `offset + t·token_stride + h·head_stride` and spans `head_dim` elements.
///
/// * token-major `[tokens, heads, head_dim]`: `token_stride = heads·head_dim`,
///   `head_stride = head_dim` ([`View::token_major`]);
/// * head-major `[heads, tokens, head_dim]`: `token_stride = head_dim`,
///   `head_stride = tokens·head_dim` ([`View::head_major`]);
/// * fused QKV rows: one view for Q and one for K, sharing `token_stride = (q + k + v)·head_dim`.
///
/// A call validates, before it writes: every head lies inside the buffer; the heads of one
/// view do not overlap (the smaller stride is at least `head_dim` and the larger one clears a
/// whole run of the smaller); and two views either occupy disjoint ranges of the buffer or
/// share a token stride with per-token footprints that do not overlap. The rule is
/// conservative: layouts whose heads sit in each other's gaps (GPT-NeoX/BLOOM fused QKV,
/// `[tokens, heads, 3, head_dim]`, where Q and K heads alternate) are refused as one call;
/// rotate them with one `apply_views` call per view.
///
/// ```
/// use posenc::View;
/// let v = View::head_major(8, 5, 64);
/// assert_eq!((v.token_stride, v.head_stride), (64, 5 * 64));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct View {
    /// Heads per token.
    pub n_heads: usize,
    /// Elements from one token's head to the next token's.
    pub token_stride: usize,
    /// Elements from one head to the next within a token.
    pub head_stride: usize,
    /// Element index of token 0, head 0.
    pub offset: usize,
}

impl View {
    /// A contiguous token-major buffer `[tokens, n_heads, head_dim]`.
    ///
    /// ```
    /// assert_eq!(posenc::View::token_major(4, 8).token_stride, 32);
    /// ```
    pub fn token_major(n_heads: usize, head_dim: usize) -> View {
        View {
            n_heads,
            token_stride: n_heads.saturating_mul(head_dim),
            head_stride: head_dim,
            offset: 0,
        }
    }

    /// A contiguous head-major buffer `[n_heads, tokens, head_dim]`.
    ///
    /// ```
    /// assert_eq!(posenc::View::head_major(4, 10, 8).head_stride, 80);
    /// ```
    pub fn head_major(n_heads: usize, tokens: usize, head_dim: usize) -> View {
        View {
            n_heads,
            token_stride: head_dim,
            head_stride: tokens.saturating_mul(head_dim),
            offset: 0,
        }
    }
}

/// `views[first]` and `views[second]` overlap (the same index: a view overlaps itself).
fn overlap(first: usize, second: usize) -> Error {
    Error::ViewsOverlap { first, second }
}

/// The first element after the last head of `v` (all sums checked).
fn end(v: &View, tokens: usize, head_dim: usize) -> Result<usize, Error> {
    let t = (tokens - 1)
        .checked_mul(v.token_stride)
        .ok_or(Error::ShapeOverflow)?;
    let h = (v.n_heads - 1)
        .checked_mul(v.head_stride)
        .ok_or(Error::ShapeOverflow)?;
    v.offset
        .checked_add(t)
        .and_then(|e| e.checked_add(h))
        .and_then(|e| e.checked_add(head_dim))
        .ok_or(Error::ShapeOverflow)
}

/// Whether the heads of one view are pairwise disjoint.
fn self_disjoint(v: &View, tokens: usize, head_dim: usize) -> bool {
    let mut dims = [(v.token_stride, tokens), (v.head_stride, v.n_heads)];
    dims.sort_unstable();
    let [(s1, n1), (s2, n2)] = dims;
    match (n1 > 1, n2 > 1) {
        (false, false) => true,
        (true, false) => s1 >= head_dim,
        (false, true) => s2 >= head_dim,
        (true, true) => {
            s1 >= head_dim
                && (n1 - 1)
                    .checked_mul(s1)
                    .and_then(|r| r.checked_add(head_dim))
                    .is_some_and(|r| s2 >= r)
        }
    }
}

/// Validates `views` over a buffer of `len` elements and returns them as spans in
/// `out[..n]`. Nothing is written to the buffer here or by a failing call.
pub(crate) fn validate(
    views: &[View],
    len: usize,
    head_dim: usize,
    tokens: usize,
    out: &mut [Span; MAX_VIEWS],
) -> Result<usize, Error> {
    if views.len() > MAX_VIEWS {
        return Err(Error::LengthMismatch {
            what: "views",
            expected: MAX_VIEWS,
            actual: views.len(),
            formula: Formula::one(&"MAX_VIEWS", MAX_VIEWS),
        });
    }
    let mut ranges = [(0usize, 0usize); MAX_VIEWS];
    for (i, v) in views.iter().enumerate() {
        if v.n_heads == 0 {
            return Err(Error::ZeroHeads);
        }
        if tokens > 0 {
            let e = end(v, tokens, head_dim)?;
            if e > len {
                return Err(Error::LengthMismatch {
                    what: "x",
                    expected: e,
                    actual: len,
                    formula: Formula::one(
                        &"at least a view's offset + (tokens − 1)·token_stride + (n_heads − 1)·head_stride + head_dim",
                        e,
                    ),
                });
            }
            if !self_disjoint(v, tokens, head_dim) {
                return Err(overlap(i, i));
            }
            ranges[i] = (v.offset, e);
        }
        out[i] = Span {
            n_heads: v.n_heads,
            token_stride: v.token_stride,
            head_stride: v.head_stride,
            offset: v.offset,
        };
    }
    if tokens > 0 {
        for i in 0..views.len() {
            for j in i + 1..views.len() {
                let (a, b) = (&views[i], &views[j]);
                let disjoint_ranges = ranges[i].1 <= ranges[j].0 || ranges[j].1 <= ranges[i].0;
                if !disjoint_ranges && !interleaved_disjoint(a, b, tokens, head_dim) {
                    return Err(overlap(i, j));
                }
            }
        }
    }
    Ok(views.len())
}

/// Two views with the same token stride whose per-token footprints (`offset mod stride`,
/// width `(n_heads − 1)·head_stride + head_dim`) fit in one stride and do not meet on the
/// circle of length `stride`: then no head of one meets a head of the other.
fn interleaved_disjoint(a: &View, b: &View, tokens: usize, head_dim: usize) -> bool {
    let ts = a.token_stride;
    if ts != b.token_stride || ts == 0 {
        return false;
    }
    let width = |v: &View| {
        (v.n_heads - 1)
            .checked_mul(v.head_stride)
            .and_then(|w| w.checked_add(head_dim))
    };
    let (Some(wa), Some(wb)) = (width(a), width(b)) else {
        return false;
    };
    if tokens > 1 && (wa > ts || wb > ts) {
        return false;
    }
    // In u128: `ob + ts − oa` may not fit a usize when the stride is huge.
    let (ts, wa, wb) = (ts as u128, wa as u128, wb as u128);
    let (oa, ob) = (a.offset as u128 % ts, b.offset as u128 % ts);
    let d = (ob + ts - oa) % ts;
    d >= wa && ts - d >= wb
}
