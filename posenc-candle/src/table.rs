//! The one place this crate calls posenc's table path, and the split of a tensor's rows into
//! calls of it (serial, or on rayon's current pool for large tensors, as candle_nn does).

use crate::wrap;
use candle_core::Result;
use posenc::{Element, Layout, Rope, Table};
use rayon::prelude::*;

/// Below this many elements a rotation runs on the calling thread (posenc's own serial
/// threshold, `posenc::PAR_MIN_ELEMENTS`).
const PAR_MIN_ELEMENTS: usize = 32 * 1024;
/// Smallest piece handed to one rayon task, in elements.
const PAR_GRAIN: usize = 16 * 1024;

/// Rotates `x` (`tokens × n_heads × head_dim`, token-major) in place from f32 tables of
/// `tokens × head_dim/2` each.
///
/// This is the single call into posenc's table path: a [`posenc::Table`] over the rows, on a
/// rope of this head size and pairing (its frequencies are never used: the table gives the
/// angles, so the rope is built from zero frequencies, which costs no `powf`).
pub(crate) fn rotate_with_table<T: Element>(
    x: &mut [T],
    n_heads: usize,
    head_dim: usize,
    layout: Layout,
    cos: &[f32],
    sin: &[f32],
) -> Result<()> {
    let half = head_dim / 2;
    let tokens = cos.len().checked_div(half).unwrap_or(0);
    let zeros = [0f32; posenc::MAX_ROTARY_DIM / 2];
    let freqs = zeros.get(..half).ok_or_else(|| {
        wrap(posenc::Error::RotaryDimTooLarge {
            rotary_dim: head_dim,
            max: posenc::MAX_ROTARY_DIM,
        })
    })?;
    let rope = Rope::from_inv_freq(head_dim, layout, freqs, 1.0).map_err(wrap)?;
    let table = Table::new(cos, sin, tokens).map_err(wrap)?;
    rope.apply(x, n_heads, table).map_err(wrap)
}

/// One call of [`rotate_with_table`]: `x` is `cos.len() / (head_dim/2)` tokens of `n_heads`
/// heads, `cos`/`sin` its rows.
pub(crate) struct Piece<'a, T> {
    /// Token-major `tokens × n_heads × head_dim` elements.
    pub x: &'a mut [T],
    /// Heads per token in `x`.
    pub n_heads: usize,
    /// `tokens × head_dim/2` cosines.
    pub cos: &'a [f32],
    /// `tokens × head_dim/2` sines.
    pub sin: &'a [f32],
}

/// Rotates every piece (all with the same `head_dim`, `layout`); pieces are disjoint, so
/// large work is split by whole tokens and spread over rayon's current pool. Results do not
/// depend on the split (each output depends only on its own pair and table row).
pub(crate) fn rotate_pieces<T: Element + Send>(
    pieces: Vec<Piece<'_, T>>,
    head_dim: usize,
    layout: Layout,
) -> Result<()> {
    let total: usize = pieces.iter().map(|p| p.x.len()).sum();
    let half = head_dim / 2;
    if total < PAR_MIN_ELEMENTS || rayon::current_num_threads() < 2 {
        for p in pieces {
            rotate_with_table(p.x, p.n_heads, head_dim, layout, p.cos, p.sin)?;
        }
        return Ok(());
    }
    // Cut each piece into runs of whole tokens of at least PAR_GRAIN elements.
    let mut runs = Vec::new();
    for p in pieces {
        let row = p.n_heads * head_dim;
        let per_run = PAR_GRAIN.div_ceil(row.max(1)).max(1);
        let xs = p.x.chunks_mut(per_run * row);
        let cs = p.cos.chunks(per_run * half);
        let ss = p.sin.chunks(per_run * half);
        for ((x, cos), sin) in xs.zip(cs).zip(ss) {
            runs.push(Piece {
                x,
                n_heads: p.n_heads,
                cos,
                sin,
            });
        }
    }
    runs.into_par_iter()
        .try_for_each(|p| rotate_with_table(p.x, p.n_heads, head_dim, layout, p.cos, p.sin))
}
