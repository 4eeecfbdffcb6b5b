//! One call's constants ([`Run`]) and its tables: which item (token, chunk of pairs) comes
//! next, and the next item's table computed block by block ([`Pending`]) while the current
//! one is rotated. Every other file of the driver adds methods to [`Run`].

use crate::element::Element;
use crate::engine::angles::{CHUNK, Form, Rows, Source, Tab};
use crate::engine::job::{NormKind, Target};
use crate::engine::vector::{Simd, apart};
use crate::types::{Rounding, View};

/// One call's constants.
pub(super) struct Run<'a, S: Simd> {
    pub(super) s: S,
    pub(super) src: &'a Source<'a, S>,
    /// The first token of the views this call rotates (entry 0 of the angles).
    pub(super) first: usize,
    /// The rotary window's offset within a head.
    pub(super) offset: usize,
    pub(super) tokens: usize,
    pub(super) half: usize,
    pub(super) head_dim: usize,
    /// Chunks per token.
    pub(super) chunks: usize,
    pub(super) round: Rounding,
}

/// The next item's table, filled block by block while the current item is rotated.
pub(super) struct Pending<'a> {
    pub(super) t: usize,
    pub(super) j0: usize,
    pub(super) done: usize,
    pub(super) blocks: usize,
    pub(super) tab: &'a mut Tab,
    /// How the table holds the item (see [`Form`]).
    pub(super) form: Form,
}

/// What a normalised head is multiplied by: `r` (splat) and the weights of its channels
/// (`w` points at the weight of the head's channel 0).
#[derive(Clone, Copy)]
pub(super) struct Pre<F> {
    pub(super) r: F,
    pub(super) w: *const f32,
    pub(super) kind: NormKind,
    /// Added to each weight: 1 for Gemma's `1 + w`, else −0.0, which leaves every value
    /// (−0.0 included) as it is, so one loop serves every kind without a branch per vector.
    pub(super) one: F,
}

impl<S: Simd> Run<'_, S> {
    /// Item `i`: its token, first pair and pair count.
    #[inline(always)]
    pub(super) fn item(&self, i: usize) -> (usize, usize, usize) {
        if self.chunks == 1 {
            // The common case, one chunk per token. (Written apart so that the pair count is
            // not known to be ≤ CHUNK: LLVM then keeps the rotation a loop instead of
            // unrolling it into a chain of exits, which measured slower in `cargo bench
            // --bench ratio`.)
            return (i, 0, self.half);
        }
        let (t, j0) = (i / self.chunks, (i % self.chunks) * CHUNK);
        (t, j0, CHUNK.min(self.half - j0))
    }

    /// The table of item `i`, nothing computed yet (no blocks past the last item), to be held
    /// in `form`.
    #[inline(always)]
    pub(super) fn pending<'t>(&self, i: usize, tab: &'t mut Tab, form: Form) -> Pending<'t> {
        if i >= self.tokens * self.chunks {
            return Pending {
                t: 0,
                j0: 0,
                done: 0,
                blocks: 0,
                tab,
                form,
            };
        }
        let (t, j0, n) = self.item(i);
        Pending {
            t,
            j0,
            done: 0,
            blocks: n.div_ceil(S::LANES),
            tab,
            form,
        }
    }

    /// Computes the next block of `next`, if any is left.
    #[inline(always)]
    pub(super) fn advance<T: Element, const IL: bool, const ONCE: bool>(
        &self,
        next: &mut Pending<'_>,
    ) {
        if next.done < next.blocks {
            apart!(
                self.src
                    .block::<T, IL, ONCE>(self.s, next.t, next.j0, next.done, next.tab, next.form)
            );
            next.done += 1;
        }
    }

    /// Computes what is left of `next`: a caller table's blocks in one loop
    /// ([`Source::table_row`]), any other source's one block at a time.
    #[inline(always)]
    pub(super) fn complete<T: Element, const IL: bool, const ONCE: bool>(
        &self,
        next: &mut Pending<'_>,
    ) {
        self.table_rest::<T, IL, ONCE>(next);
        while next.done < next.blocks {
            self.advance::<T, IL, ONCE>(next);
        }
    }

    /// [`Run::complete`] computing the blocks in twos, together (see `math::sin_cos2`), then a
    /// last one alone (which kernels take it: `stream.rs`, `next_table`).
    #[inline(always)]
    pub(super) fn complete_twos<T: Element, const IL: bool, const ONCE: bool>(
        &self,
        next: &mut Pending<'_>,
    ) {
        self.table_rest::<T, IL, ONCE>(next);
        while next.done + 1 < next.blocks {
            apart!(
                self.src
                    .block2::<T, IL, ONCE>(self.s, next.t, next.j0, next.done, next.tab, next.form)
            );
            next.done += 2;
        }
        self.advance::<T, IL, ONCE>(next);
    }

    /// What is left of `next` in one loop when its source is a caller's table
    /// ([`Source::table_row`]); nothing otherwise.
    #[inline(always)]
    fn table_rest<T: Element, const IL: bool, const ONCE: bool>(&self, next: &mut Pending<'_>) {
        if next.done < next.blocks
            && apart!(self.src.table_row::<T, IL, ONCE>(
                self.s,
                next.t,
                next.j0,
                next.done,
                next.blocks,
                next.tab,
                next.form,
            ))
        {
            next.done = next.blocks;
        }
    }

    /// Token `t`'s row of a caller's table, read where it lies, for the kernels under posenc's
    /// rounding ([`Source::row`] says which tables qualify), but not for skewed interleaved
    /// windows, which read a `Tab`'s end pieces; `None` when the token's table is staged in a
    /// `Tab` instead.
    #[inline(always)]
    pub(super) fn direct_row<const IL: bool, const ONCE: bool, const SKEW: usize>(
        &self,
        t: usize,
    ) -> Option<Rows> {
        if IL && SKEW > 0 || !ONCE || t >= self.tokens {
            return None;
        }
        // SAFETY: `t` is a token of the call (tested above).
        unsafe { self.src.row::<IL>(t) }
    }

    /// Where, in values from the start of its buffer, view `v`'s rotary window of head 0 of
    /// the call's first token starts. (A method, not a closure: closures are not inlined in
    /// unoptimised builds, and `check-asm.sh` requires the entry points to contain their
    /// kernels.)
    #[inline(always)]
    pub(super) fn first_window(&self, v: &View) -> usize {
        v.offset + self.first * v.token_stride + self.offset
    }

    /// The bytes a call reads and writes through its views: the source heads' and, rotating
    /// into another buffer, the destination heads' too (saturating: only compared with
    /// [`IN_CACHE_BYTES`](super::stream::IN_CACHE_BYTES)).
    #[inline(always)]
    pub(super) fn bytes<I: Element, O: Element>(&self, targets: &[Target<'_, I, O>]) -> usize {
        let mut per_token = 0usize;
        for t in targets {
            let size = size_of::<I>()
                + if t.writes_elsewhere() {
                    size_of::<O>()
                } else {
                    0
                };
            for v in t.src_views {
                per_token = per_token.saturating_add(v.n_heads.saturating_mul(size));
            }
        }
        per_token
            .saturating_mul(self.head_dim)
            .saturating_mul(self.tokens)
    }

    /// The `Pre` of a call without a norm (never read).
    #[inline(always)]
    pub(super) fn no_pre(&self) -> Pre<S::F> {
        Pre {
            r: self.s.splat(1.0),
            w: core::ptr::null(),
            kind: NormKind::Head,
            one: self.s.splat(-0.0),
        }
    }
}

/// Item `i`'s table (`cur`, complete) and the one the next item's is computed into: the two
/// tables take turns.
#[inline(always)]
pub(super) fn alternate(tabs: &mut [Tab; 2], i: usize) -> (&Tab, &mut Tab) {
    let (a, b) = tabs.split_at_mut(1);
    if i.is_multiple_of(2) {
        (&a[0], &mut b[0])
    } else {
        (&b[0], &mut a[0])
    }
}
