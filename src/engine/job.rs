//! What a RoPE call asks the engine to do, once the API layer has validated it: which heads
//! of which buffers ([`Target`], [`Span`]), and with which angles ([`Angles`]).

use crate::types::{Layout, Rounding};

/// Where the heads of a buffer are: head `h` of token `t` starts at
/// `offset + t·token_stride + h·head_stride` and its rotary window is the next `rotary_dim`
/// elements. Validated (in bounds, windows disjoint) before any kernel runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub n_heads: usize,
    pub token_stride: usize,
    pub head_stride: usize,
    pub offset: usize,
}

/// One buffer and the spans of heads to rotate in it.
pub(crate) struct Target<'a, T> {
    pub x: &'a mut [T],
    pub spans: &'a [Span],
}

/// The positions of the tokens.
#[derive(Clone, Copy)]
pub(crate) enum Positions<'a> {
    /// One position per token.
    Plain(&'a [i32]),
    /// `n_axes` positions per token (M-RoPE: t, h, w); pair `j` uses axis `axis[j]`.
    Axes {
        pos: &'a [i32],
        n_axes: usize,
        axis: &'a [u8],
    },
}

/// Where the cos/sin of each token come from.
#[derive(Clone, Copy)]
pub(crate) enum Angles<'a> {
    /// Angles `p · inv_freq[i]`; cos scaled by `cs`, sin by `ss`. The product is exact (f64)
    /// unless `f32_angle` asks for HF's rounded f32 product.
    Freq {
        inv_freq: &'a [f32],
        positions: Positions<'a>,
        cs: f32,
        ss: f32,
        f32_angle: bool,
    },
    /// Caller tables, `tokens × rotary_dim/2` each, used as they are.
    Table { cos: &'a [f32], sin: &'a [f32] },
}

/// What to rotate: shared by every target of a call.
#[derive(Clone, Copy)]
pub(crate) struct Job<'a> {
    pub tokens: usize,
    pub rotary_dim: usize,
    pub layout: Layout,
    pub angles: Angles<'a>,
    pub round: Rounding,
}
