//! QK-norm's own token loop, for a head's norm (`Head`, `HeadOnePlus`) under posenc's rounding
//! over whole windows whose table [`Run::resident`] would hold in registers (`Run::stream`
//! decides): per token the table, and per target
//! the weights, are loaded into registers once, then the heads go in groups, every sum of
//! squares of a group before any of its rotations:
//!
//! ```text
//! for each token t:
//!     c[v], s[v] = table of t                              (NV vector pairs)
//!     for each target:  w1[k] = weight[k] + one            (every vector of a head)
//!         for each view, NORM_GROUP heads at a time:
//!             r[i] = 1 / sqrt(Σ x² / head_dim + eps)       for every head i of the group
//!             for each head i, each vector v:  load, x·r[i]·w1, rotate with c[v], s[v], store
//!     compute the table of t + 1
//! ```
//!
//! Every value gets the expressions the general loop gives it ([`Run::stream`]): the same
//! sums, factors, normalising loads ([`Run::normed`]) and rotations, so the results are the
//! same bit for bit; what this loop saves is reloading the table and the weights for every
//! head and the general loop's per-head work between them (`cargo bench --bench fused --
//! qknorm`, against the general loop it replaced for these calls).

use super::heads::paired;
use super::norm::NORM_GROUP;
use super::run::{Pre, Run, alternate};
use crate::element::Element;
use crate::engine::angles::{Form, Tab};
use crate::engine::job::{NormKind, Target};
use crate::engine::vector::{Simd, apart};

/// The weights of a head's channels in registers, `w + one` each: `a[v]` for vector `v` of the
/// window (rotate_half: of its first half), `b[v]` (rotate_half) for the vector `half` further.
struct Weights<F, const NV: usize> {
    a: [F; NV],
    b: [F; NV],
}

impl<S: Simd> Run<'_, S> {
    /// Whether a call's norms take [`Run::normed_tokens`]: every target has a head's norm, a
    /// token is one chunk whose window is the whole head, and the window (`IL`: of `2·half`
    /// values, else each half) a whole number of vectors. A row's norm (OLMo 2's) keeps the
    /// general loop: its weights differ per head, and loaded per head in this loop they made
    /// it slower than the general loop on both x86 tiers (`cargo bench --bench fused --
    /// qknorm`, the row norm rows).
    #[inline(always)]
    pub(super) fn norms_held<I: Element, O: Element, const IL: bool>(
        &self,
        targets: &[Target<'_, I, O>],
    ) -> bool {
        let m = if IL { 2 * self.half } else { self.half };
        self.chunks == 1
            && 2 * self.half == self.head_dim
            && m.is_multiple_of(S::LANES)
            && targets
                .iter()
                .all(|t| t.norm.is_some_and(|n| n.kind != NormKind::Row))
    }

    /// The token loop of a head's norm with the table (`NV` vectors) and weights in registers
    /// (see the module docs).
    ///
    /// # Safety
    /// [`Run::norms_held`] holds, `NV · LANES` is `half` (rotate_half) or `2·half`
    /// (interleaved); `tabs[0]` holds token 0's table, not split.
    #[inline(always)]
    pub(super) unsafe fn normed_tokens<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const NV: usize,
    >(
        &self,
        targets: &[Target<'_, I, O>],
        tabs: &mut [Tab; 2],
    ) {
        let (s, l, half) = (self.s, S::LANES, self.half);
        for t in 0..self.tokens {
            let (cur, nxt) = alternate(tabs, t);
            let row = self.direct_row::<IL, ONCE, 0>(t);
            let rows = match row {
                Some(row) => row,
                None => cur.rows(),
            };
            // SAFETY: `rows` holds token `t`'s table of the whole window, `NV · LANES` values
            // (the caller's precondition).
            let (c, sn) = unsafe { self.held::<IL, NV, 0>(rows) };
            let tok = self.first + t;
            for target in targets {
                let ((x, _), (y, _)) = (target.src(), target.dst());
                let Some(norm) = target.norm else {
                    continue;
                };
                let one = self.one(norm.kind);
                let mut w = Weights {
                    a: [s.splat(0.0); NV],
                    b: [s.splat(0.0); NV],
                };
                let wp = norm.weight.as_ptr();
                for v in 0..NV {
                    let k = v * l;
                    // SAFETY: a head's norm has `head_dim` = `2·half` weights (`weight_fits`,
                    // asserted in `drive`): `k + LANES ≤ NV·LANES`, which is `2·half`
                    // (interleaved) or `half`, and rotate_half's `half + k + LANES ≤ 2·half`.
                    unsafe {
                        w.a[v] = s.add(s.ld_f32(wp.add(k)), one);
                        if !IL {
                            w.b[v] = s.add(s.ld_f32(wp.add(half + k)), one);
                        }
                    }
                }
                for (sv, dv) in target.src_views.iter().zip(target.dst_views) {
                    if sv.n_heads == 0 {
                        continue;
                    }
                    // SAFETY: `in_bounds` proved every head of every token of both views lies
                    // in its buffer; these are head 0 of token `first + t` (the window is the
                    // whole head, `offset` 0).
                    let (p, q) = unsafe {
                        (
                            x.add(sv.offset + tok * sv.token_stride),
                            y.add(dv.offset + tok * dv.token_stride),
                        )
                    };
                    let heads = (sv.head_stride, dv.head_stride, sv.n_heads);
                    // SAFETY: heads `0 .. n_heads` of token `t` are whole windows in bounds
                    // in both buffers (in place the same, else disjoint); `c`, `sn` their table.
                    apart!(unsafe {
                        self.normed_heads::<I, O, IL, ONCE, NV>(
                            p, q, heads, &c, &sn, &w, norm.kind, norm.eps,
                        )
                    });
                }
            }
            if row.is_none() {
                self.complete::<I, IL, ONCE>(&mut self.pending(t + 1, nxt, Form::Plain));
            }
        }
    }

    /// One token's heads `p0 + h·ps` → `q0 + h·qs` (`heads` = `(ps, qs, n)`), normalised and
    /// rotated, `NORM_GROUP` at a time: the group's sums of squares and factors, then each
    /// head's vectors.
    ///
    /// # Safety
    /// Those windows (`2·half` values, the whole head) are readable and writable, in place the
    /// same, else disjoint; `c`, `sn` hold their table and `w` their weights.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn normed_heads<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const NV: usize,
    >(
        &self,
        p0: *const I,
        q0: *mut O,
        (ps, qs, nh): (usize, usize, usize),
        c: &[S::F; NV],
        sn: &[S::F; NV],
        w: &Weights<S::F, NV>,
        kind: NormKind,
        eps: f32,
    ) {
        let (s, l, half) = (self.s, S::LANES, self.half);
        // The sums run over `head_dim` as a value: given the length as a constant, LLVM
        // unrolled each head's sum and reordered its loads, which past the caches (reading the
        // heads from memory) took markedly longer on AVX2 (`cargo bench --bench fused --
        // qknorm`, 4096 tokens, `POSENC_BENCH_BACKEND=avx2`).
        let hd = self.head_dim;
        let mut h0 = 0;
        while h0 < nh {
            let g = (nh - h0).min(NORM_GROUP);
            // SAFETY: heads `h0 .. h0 + g ≤ nh`, `hd` values each (the caller's precondition).
            let rs = unsafe { self.factors(p0.wrapping_add(h0 * ps), ps, g, hd, eps) };
            for (i, &r) in rs[..g].iter().enumerate() {
                let h = h0 + i;
                let (p, q) = (p0.wrapping_add(h * ps), q0.wrapping_add(h * qs));
                let pre = Pre {
                    r: s.splat(r),
                    w: core::ptr::null(),
                    kind,
                    one: s.splat(-0.0),
                };
                if IL {
                    // Vectors in twos where the destination pairs them (see `paired`), then
                    // one at a time.
                    let mut v = 0;
                    while paired::<S, O>() && v + 1 < NV {
                        let k = v * l;
                        // SAFETY: vectors `k`, `k + LANES` of head `h`'s window, inside it
                        // (`v + 1 < NV`, and `NV·LANES` is the window); both read before
                        // either is written.
                        unsafe {
                            let x0 = self.normed::<I, ONCE>(s.ld::<I>(p.add(k)), w.a[v], pre);
                            let x1 =
                                self.normed::<I, ONCE>(s.ld::<I>(p.add(k + l)), w.a[v + 1], pre);
                            self.inter_pair::<I, O, ONCE>(
                                [x0, x1],
                                q.add(k),
                                [(c[v], sn[v]), (c[v + 1], sn[v + 1])],
                            );
                        }
                        v += 2;
                    }
                    while v < NV {
                        let k = v * l;
                        // SAFETY: vector `k` of head `h`'s window, inside it (`v < NV`).
                        unsafe {
                            let x = self.normed::<I, ONCE>(s.ld::<I>(p.add(k)), w.a[v], pre);
                            self.inter::<I, O, ONCE>(x, q.add(k), c[v], sn[v]);
                        }
                        v += 1;
                    }
                } else {
                    for v in 0..NV {
                        let k = v * l;
                        // SAFETY: vectors `k` and `half + k` of head `h`'s window, inside it
                        // (`NV·LANES` is `half`); both read before either is written.
                        unsafe {
                            let x = self.normed::<I, ONCE>(s.ld::<I>(p.add(k)), w.a[v], pre);
                            let y = self.normed::<I, ONCE>(s.ld::<I>(p.add(half + k)), w.b[v], pre);
                            self.half_pair::<I, O, ONCE>(
                                x,
                                y,
                                q.add(k),
                                q.add(half + k),
                                c[v],
                                sn[v],
                            );
                        }
                    }
                }
            }
            h0 += g;
        }
    }
}
