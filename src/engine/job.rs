//! What a RoPE call asks the engine to do, once the API layer has validated it: which heads
//! of which buffers ([`Target`], each a list of [`View`]s), and with which angles
//! ([`Angles`]).

use crate::types::{Layout, Rounding, View};
use core::marker::PhantomData;

/// One source buffer of `I` and one destination buffer of `O`, and the views of heads to
/// rotate: head `h` of token `t` of `src_views[i]` goes to head `h` of token `t` of
/// `dst_views[i]` (validated: in bounds, heads disjoint, source and destination disjoint unless
/// they are the same buffer, before any kernel runs). The in-place form is the same buffer on
/// both sides with the same views ([`Target::in_place`]).
pub(crate) struct Target<'a, I, O> {
    src: *const I,
    src_len: usize,
    dst: *mut O,
    dst_len: usize,
    pub src_views: &'a [View],
    pub dst_views: &'a [View],
    /// RMSNorm of each head (or row) before the rotation.
    pub norm: Option<Norm<'a>>,
    /// Whether the channels outside the rotary window are written too (into another buffer,
    /// or normalised in place).
    pub whole: bool,
    _borrow: PhantomData<(&'a [I], &'a mut [O])>,
}

impl<'a, T> Target<'a, T, T> {
    /// `x` rotated in place, the heads of `views`.
    pub(crate) fn in_place(x: &'a mut [T], views: &'a [View]) -> Self {
        let (dst, len) = (x.as_mut_ptr(), x.len());
        Target {
            src: dst.cast_const(),
            src_len: len,
            dst,
            dst_len: len,
            src_views: views,
            dst_views: views,
            norm: None,
            whole: false,
            _borrow: PhantomData,
        }
    }
}

impl<'a, I, O> Target<'a, I, O> {
    /// `src` (untouched) rotated into `dst`, view `src_views[i]` into `dst_views[i]` (as many
    /// of each, each pair with the same head count). The borrows prove the buffers disjoint.
    pub(crate) fn between(
        src: &'a [I],
        src_views: &'a [View],
        dst: &'a mut [O],
        dst_views: &'a [View],
    ) -> Self {
        assert_eq!(src_views.len(), dst_views.len());
        Target {
            src: src.as_ptr(),
            src_len: src.len(),
            dst: dst.as_mut_ptr(),
            dst_len: dst.len(),
            src_views,
            dst_views,
            norm: None,
            whole: true,
            _borrow: PhantomData,
        }
    }

    /// The same target with every head RMS-normalised first (all its channels are then
    /// written).
    pub(crate) fn normed(self, norm: Norm<'a>) -> Self {
        Target {
            norm: Some(norm),
            whole: true,
            ..self
        }
    }

    /// The source pointer and length.
    pub(crate) fn src(&self) -> (*const I, usize) {
        (self.src, self.src_len)
    }

    /// The destination pointer and length.
    pub(crate) fn dst(&self) -> (*mut O, usize) {
        (self.dst, self.dst_len)
    }

    /// Whether the target writes another buffer than it reads (rotate-into).
    #[inline(always)]
    pub(crate) fn writes_elsewhere(&self) -> bool {
        !core::ptr::eq(self.src.cast::<u8>(), self.dst.cast::<u8>().cast_const())
    }
}

/// Which weight an RMSNorm multiplies by.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum NormKind {
    /// `w[c]` per head (Qwen3): `w · round(x · r)` under the HF modes.
    Head,
    /// `1 + w[c]` per head (Gemma 3): `round((x · r) · (1 + w))` under the HF modes.
    HeadOnePlus,
    /// `w[h·head_dim + c]`, `r` over all heads of the token (OLMo 2): `round(w · (x · r))`.
    Row,
}

/// An RMSNorm before the rotation: `r = 1 / sqrt(mean(x²) + eps)` over a head (or a row of
/// heads), then `x · r` times the weight.
#[derive(Clone, Copy)]
pub(crate) struct Norm<'a> {
    pub kind: NormKind,
    /// `head_dim` weights (`Head`, `HeadOnePlus`) or `n_heads · head_dim` (`Row`).
    pub weight: &'a [f32],
    pub eps: f32,
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
    /// Channels per head (what a whole-head copy or norm covers).
    pub head_dim: usize,
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

impl<'a> Job<'a> {
    /// Tokens `first + a .. first + a + n` of this job as a job of their own, counted from
    /// 0: the caller shifts its views to start at token `first + a`.
    pub(crate) fn piece(self, a: usize, n: usize) -> Job<'a> {
        let half = self.rotary_dim / 2;
        let angles = match self.angles {
            Angles::Freq {
                inv_freq,
                positions,
                cs,
                ss,
                f32_angle,
            } => Angles::Freq {
                inv_freq,
                positions: match positions {
                    Positions::Plain(p) => Positions::Plain(&p[a..a + n]),
                    Positions::Axes { pos, n_axes, axis } => Positions::Axes {
                        pos: &pos[a * n_axes..(a + n) * n_axes],
                        n_axes,
                        axis,
                    },
                },
                cs,
                ss,
                f32_angle,
            },
            Angles::Table { cos, sin, cs, ss } => Angles::Table {
                cos: &cos[a * half..(a + n) * half],
                sin: &sin[a * half..(a + n) * half],
                cs,
                ss,
            },
        };
        Job {
            first: 0,
            tokens: n,
            angles,
            ..self
        }
    }
}
