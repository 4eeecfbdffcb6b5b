//! Which kernel rotates which dtype pair. Only the pairs a runtime streams have kernels of
//! their own (`engine::rope`: each dtype with itself under every rounding mode, f32 into
//! f16/bf16 under posenc's rounding); the others, and the HF modes between two dtypes, pass
//! through a stack buffer, a piece of heads and tokens at a time:
//!
//! ```text
//! posenc's rounding (Once):  src (I) ──convert, exact──▶ stack (f32) ──kernel f32→O──▶ dst (O)
//! HF modes:                  src (I) ──kernel I→I, HF──▶ stack (I) ──convert──▶ dst (O)
//! ```
//!
//! Both are the documented result by construction: under `Once`, rotate-into is "rotate an
//! f32 copy and round it once", and the stack holds that copy (f16 and bf16 widen to f32
//! exactly), norm included, since the kernels normalise in f32 as well; under the HF modes it
//! is "rotate a copy in `I` the HF way, then convert", which is what the two steps do. A piece
//! is a call of its own on a subset of tokens (and of heads, unless a row norm needs them
//! all), and results do not depend on how a call is split, so the pieces add up to the whole.
//! The staged pairs trade a copy through L1 for not compiling a kernel set for each of them
//! on every tier (see `engine::rope::rotate_same`).

use super::job::{Job, Target};
use super::rope;
use crate::element::{Dtype, Element};
use crate::types::{Backend, Rounding, View};

/// Elements of the stack buffer a piece passes through. The API layer refuses a staged call
/// whose piece cannot fit: a head longer than this, or a row norm over more channels.
pub(crate) const STAGE: usize = 8192;

/// Rotates `targets` as `job` says (validated by the API layer) on `backend`: each target's
/// source heads of `I`, rotated in f32, into its destination heads of `O` (the same buffer
/// for the in-place calls); through a kernel of the pair's own, or staged.
#[inline]
pub(crate) fn rotate<I: Element, O: Element>(
    backend: Backend,
    targets: &mut [Target<'_, I, O>],
    job: Job<'_>,
) {
    if is_staged(I::DTYPE, O::DTYPE, job.round) {
        staged(backend, targets, job);
    } else if I::DTYPE == O::DTYPE {
        rope::rotate_same::<I>(backend, rope::retype_targets(targets), job);
    } else {
        // Not staged and two dtypes: f32 into f16/bf16 under posenc's rounding.
        rope::rotate_from_f32::<O>(backend, rope::retype_targets(targets), job);
    }
}

/// Whether [`rotate`] stages a call from `i` into `o` under `round` (the pair has no kernel of
/// its own): any two dtypes except f32 into f16/bf16 under posenc's rounding.
pub(crate) fn is_staged(i: Dtype, o: Dtype, round: Rounding) -> bool {
    i != o && !(i == Dtype::F32 && round == Rounding::Once)
}

/// Rotates `targets` (validated, `I` and `O` two different dtypes, or the HF modes between
/// them) as `job` says, piece by piece (see the module docs).
fn staged<I: Element, O: Element>(
    backend: Backend,
    targets: &mut [Target<'_, I, O>],
    job: Job<'_>,
) {
    let hd = job.head_dim;
    assert!(hd > 0 && hd <= STAGE);
    for t in targets.iter_mut() {
        let ((sp, sl), (dp, dl)) = (t.src(), t.dst());
        // SAFETY: a target borrows its source for reading and its destination for writing
        // for its whole lifetime (`Target::between`: a shared and a mutable slice, so they do
        // not overlap; an in-place target has one dtype and never comes here), and `t` is
        // borrowed mutably for as long as these slices live.
        let (src, dst) = unsafe {
            (
                core::slice::from_raw_parts(sp, sl),
                core::slice::from_raw_parts_mut(dp, dl),
            )
        };
        for (sv, dv) in t.src_views.iter().zip(t.dst_views) {
            let nh = sv.n_heads;
            if nh == 0 {
                continue;
            }
            // Heads per piece: all of a token's when a row norm needs them (the API checked
            // they fit), else as many as fit; then tokens per piece.
            let row = t.norm.is_some_and(|n| n.kind == super::job::NormKind::Row);
            let heads = if row { nh } else { nh.min(STAGE / hd) };
            assert!(heads * hd <= STAGE);
            let per = STAGE / (heads * hd);
            let mut h0 = 0;
            while h0 < nh {
                let gh = heads.min(nh - h0);
                let mut a = 0;
                while a < job.tokens {
                    let n = per.min(job.tokens - a);
                    let tok = job.first + a;
                    // The validated views, moved to start at head `h0` of token `tok`.
                    let at = |v: &View| View {
                        n_heads: gh,
                        offset: v.offset + tok * v.token_stride + h0 * v.head_stride,
                        ..*v
                    };
                    let piece = Piece {
                        src_view: at(sv),
                        dst_view: at(dv),
                        stage_view: View::token_major(gh, hd),
                        job: job.piece(a, n),
                    };
                    if job.round == Rounding::Once {
                        piece.via_f32(backend, src, dst, t.norm);
                    } else {
                        piece.via_source_type(backend, src, dst, t.norm);
                    }
                    a += n;
                }
                h0 += gh;
            }
        }
    }
}

/// One piece: `job.tokens` tokens of the heads of `src_view` into those of `dst_view`,
/// through a stack buffer laid out as `stage_view` (token-major, dense).
struct Piece<'a> {
    src_view: View,
    dst_view: View,
    stage_view: View,
    job: Job<'a>,
}

impl Piece<'_> {
    /// Every channel of every head of the piece: `(token, head, channel)` with its index in
    /// `v`.
    fn cells(&self, v: &View, mut f: impl FnMut(usize, usize)) {
        let hd = self.job.head_dim;
        let mut k = 0;
        for t in 0..self.job.tokens {
            for h in 0..v.n_heads {
                let base = v.offset + t * v.token_stride + h * v.head_stride;
                for c in 0..hd {
                    f(k, base + c);
                    k += 1;
                }
            }
        }
    }

    /// Posenc's rounding: the source converted to f32 on the stack, then the f32 → `O`
    /// kernel into the destination.
    #[inline(never)]
    fn via_f32<I: Element, O: Element>(
        &self,
        backend: Backend,
        src: &[I],
        dst: &mut [O],
        norm: Option<super::job::Norm<'_>>,
    ) {
        let mut stage = [0.0f32; STAGE];
        self.cells(&self.src_view, |k, i| stage[k] = src[i].to_f32());
        let (sv, dv) = ([self.stage_view], [self.dst_view]);
        let target = Target::between(&stage[..], &sv, dst, &dv);
        let mut targets = [match norm {
            Some(n) => target.normed(n),
            None => target,
        }];
        rope::rotate_from_f32::<O>(backend, &mut targets, self.job);
    }

    /// The HF modes: the `I` → `I` kernel onto the stack, then converted into the
    /// destination.
    #[inline(never)]
    fn via_source_type<I: Element, O: Element>(
        &self,
        backend: Backend,
        src: &[I],
        dst: &mut [O],
        norm: Option<super::job::Norm<'_>>,
    ) {
        let mut stage = [I::from_f32(0.0); STAGE];
        {
            let (sv, dv) = ([self.src_view], [self.stage_view]);
            let target = Target::between(src, &sv, &mut stage[..], &dv);
            let mut targets = [match norm {
                Some(n) => target.normed(n),
                None => target,
            }];
            rope::rotate_same::<I>(backend, &mut targets, self.job);
        }
        self.cells(&self.dst_view, |k, i| {
            dst[i] = O::from_f32(stage[k].to_f32())
        });
    }
}
