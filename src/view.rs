//! Strided views: which heads of a buffer to rotate.

use crate::error::{Error, Formula};
use crate::types::View;

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

/// Validates `views` over a buffer of `len` elements for `tokens` tokens: every head in
/// bounds, no two heads overlapping. Nothing is written to the buffer here or by a failing
/// call. Any number of views: the pairwise check is quadratic in the views and allocates
/// nothing.
pub(crate) fn validate(
    views: &[View],
    len: usize,
    head_dim: usize,
    tokens: usize,
) -> Result<(), Error> {
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
        }
    }
    if tokens > 0 {
        for (i, a) in views.iter().enumerate() {
            let ra = (a.offset, end(a, tokens, head_dim)?);
            for (j, b) in views.iter().enumerate().skip(i + 1) {
                let rb = (b.offset, end(b, tokens, head_dim)?);
                let disjoint_ranges = ra.1 <= rb.0 || rb.1 <= ra.0;
                if !disjoint_ranges
                    && !interleaved_disjoint(a, b, head_dim)
                    && !lattice_disjoint(a, b, tokens, head_dim)
                {
                    return Err(overlap(i, j));
                }
            }
        }
    }
    Ok(())
}

/// Every head of a view starts at `offset + t·token_stride + h·head_stride`, so at
/// `offset` plus a multiple of `g`, the gcd of the strides it actually steps by. With `g`
/// common to two views, each view's heads cover, modulo `g`, one arc `[offset mod g,
/// + head_dim)` of a circle of length `g`; disjoint arcs mean disjoint heads. This accepts
/// GPT-NeoX/BLOOM's fused `[tokens, heads, 3, head_dim]` QKV, where Q and K heads alternate
/// (`g = 3·head_dim`, Q's arc at 0, K's at `head_dim`).
fn lattice_disjoint(a: &View, b: &View, tokens: usize, head_dim: usize) -> bool {
    let mut g = 0usize;
    for v in [a, b] {
        if tokens > 1 {
            g = gcd(g, v.token_stride);
        }
        if v.n_heads > 1 {
            g = gcd(g, v.head_stride);
        }
    }
    if g == 0 {
        return false; // one head of one token each: the range test already decided
    }
    // `d`: how far b's arc starts after a's, around the circle (`d < g`). Both arcs fit
    // apart only if `d ≥ head_dim` and `g − d ≥ head_dim`, which also refuses `g < 2·head_dim`.
    let (oa, ob) = (a.offset % g, b.offset % g);
    let d = if ob >= oa { ob - oa } else { ob + (g - oa) };
    d >= head_dim && g - d >= head_dim
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Two views with the same token stride whose per-token footprints (`offset mod stride`,
/// width `(n_heads − 1)·head_stride + head_dim`) fit in one stride and do not meet on the
/// circle of length `stride`: then no head of one meets a head of the other.
fn interleaved_disjoint(a: &View, b: &View, head_dim: usize) -> bool {
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
    // `d`: how far b's footprint starts after a's around the circle (`d < ts`). They fit
    // apart only if `d ≥ wa` and `ts − d ≥ wb`, which also refuses a footprint wider than
    // the stride. In u128: `b.offset + ts` may not fit a usize when the stride is huge.
    let (ts, wa, wb) = (ts as u128, wa as u128, wb as u128);
    let d = (b.offset as u128 + ts - a.offset as u128 % ts) % ts;
    d >= wa && ts - d >= wb
}
