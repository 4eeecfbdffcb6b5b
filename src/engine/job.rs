//! What a RoPE call asks the engine to do, once the API layer has validated it: which heads
//! of which buffers ([`Target`], each a list of [`View`]s), and with which angles
//! ([`Angles`]).

use crate::types::{Layout, Rounding, View};

/// One buffer and the views of heads to rotate in it (validated: in bounds, windows
/// disjoint, before any kernel runs).
pub(crate) struct Target<'a, T> {
    pub x: &'a mut [T],
    pub views: &'a [View],
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
    /// Tables computed before (`tokens × rotary_dim/2` each): cos scaled by `cs`, sin by
    /// `ss`, exactly as `Freq` scales the cos/sin it computes.
    Table {
        cos: &'a [f32],
        sin: &'a [f32],
        cs: f32,
        ss: f32,
    },
}

/// What to rotate: shared by every target of a call.
#[derive(Clone, Copy)]
pub(crate) struct Job<'a> {
    /// Tokens `first .. first + tokens` of every view are rotated, token `first + t` by the
    /// angles of entry `t` (so a call can be fed its positions in pieces).
    pub first: usize,
    pub tokens: usize,
    /// The rotary window's first channel within a head (`rotary_offset`).
    pub offset: usize,
    pub rotary_dim: usize,
    pub layout: Layout,
    pub angles: Angles<'a>,
    pub round: Rounding,
}

impl<'a> Angles<'a> {
    /// The same angles with cos scaled by `cs` and sin by `ss` (instead of what they had).
    pub(crate) fn scaled(self, cs: f32, ss: f32) -> Angles<'a> {
        match self {
            Angles::Freq {
                inv_freq,
                positions,
                f32_angle,
                ..
            } => Angles::Freq {
                inv_freq,
                positions,
                cs,
                ss,
                f32_angle,
            },
            Angles::Table { cos, sin, .. } => Angles::Table { cos, sin, cs, ss },
        }
    }

    /// The same angles with the exact product (not HF's f32 one).
    pub(crate) fn exact(self) -> Angles<'a> {
        match self {
            Angles::Freq {
                inv_freq,
                positions,
                cs,
                ss,
                ..
            } => Angles::Freq {
                inv_freq,
                positions,
                cs,
                ss,
                f32_angle: false,
            },
            table => table,
        }
    }
}
