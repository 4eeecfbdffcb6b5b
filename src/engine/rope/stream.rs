//! The token loops: the order in which a call visits tokens, targets, views and heads, how
//! many heads share a table load, and where the next token's table is computed (see the
//! module docs of `engine::rope` for the choices and the benchmarks that settled them).

use super::heads::{skewable, split_stream, twos};
use super::norm::{NORM_GROUP, scale};
use super::run::{Pending, Pre, Run, alternate};
use crate::element::{Dtype, Element};
use crate::engine::angles::{Form, Rows, Tab};
use crate::engine::job::{NormKind, Target};
use crate::engine::vector::{Simd, apart};

/// Up to this many bytes per call, a call counts as in cache: where an f32 source's table is not
/// held in registers, two heads per pass share each table load (rotate_half; interleaved on
/// AVX-512); beyond it, one head per pass (see the module docs).
/// Between the largest call where the in-cache paths won (512 tokens × 32 heads × 128, f32:
/// 8 MiB) and the smallest where one head per pass won (1024 tokens: 16 MiB) in `cargo bench
/// --bench ratio` and `--bench fused` (rotate-into) on both x86 tiers.
pub(super) const IN_CACHE_BYTES: usize = 12 << 20;

/// Whether a table of `nv` vectors per token from `I` heads is held in registers across the
/// heads ([`Run::stream_resident`] has a loop for each of these sizes): 2, 4 and 8 (head_dim
/// 64 and 128 on both x86 tiers, 256 in rotate_half on AVX-512), and for f32 heads those of 96
/// (6; on AVX-512 also 3). The 16-bit kernels leave 3 and 6 out: built into them, those loops
/// slowed AVX512-BF16's bf16 rotate_half at 128, which shares their function, and 3 is left
/// out of AVX2's f32 kernel, where it slowed the interleaved passes at 128 (`cargo bench
/// --bench ratio -- heads`, both tiers).
///
/// The x86 f32 kernels also take 16 (AVX2: interleaved heads of 128, rotate_half of 256;
/// AVX-512: interleaved heads of 256): a table of twice AVX2's register file, all of
/// AVX-512's, so the compiler keeps (some of) it on the stack and those vectors load their
/// cos and sin from there, as the passes load them from the table in memory; what the token
/// loop saves is the passes' per-head work (`cargo bench --bench ratio`, `-- heads`, and
/// with `POSENC_BENCH_BACKEND=avx2`).
#[inline(always)]
fn holds<S: Simd, I: Element>(nv: usize) -> bool {
    matches!(nv, 2 | 4 | 8) || f32_only::<S, I>(nv)
}

/// The sizes [`holds`] takes for f32 heads only: a constant for each, so that the kernels
/// without them do not contain their loops.
const fn f32_only<S: Simd, I: Element>(nv: usize) -> bool {
    matches!(I::DTYPE, Dtype::F32)
        && (nv == 6 || nv == 3 && S::LANES == 16 || nv == 16 && x86_vector::<S>())
}

/// Whether `S` is one of the x86-64 tiers with vector registers of 8 or 16 lanes (AVX2,
/// AVX-512), the tiers whose f32 tables of 16 vectors ([`holds`]) were measured: NEON has
/// AVX2's shape on paper but no host here to time it on, and the portable tier has 8
/// registers.
const fn x86_vector<S: Simd>() -> bool {
    cfg!(target_arch = "x86_64") && S::LANES >= 8 && S::REGISTERS >= 16
}

/// `$go!(NV $(, $extra)*)` for the table size `$nv` (of `$i` heads on tier `$s`), one of the
/// sizes [`holds`] takes, as a constant: each size its own loop, and the kernels without
/// [`f32_only`]'s sizes without their loops.
macro_rules! by_size {
    ($s:ty, $i:ty, $nv:expr, $go:ident $(, $extra:expr)*) => {
        match $nv {
            2 => $go!(2 $(, $extra)*),
            4 => $go!(4 $(, $extra)*),
            3 if const { f32_only::<$s, $i>(3) } => $go!(3 $(, $extra)*),
            6 if const { f32_only::<$s, $i>(6) } => $go!(6 $(, $extra)*),
            16 if const { f32_only::<$s, $i>(16) } => $go!(16 $(, $extra)*),
            _ => $go!(8 $(, $extra)*),
        }
    };
}

impl<S: Simd> Run<'_, S> {
    /// The items in memory order, the next item's table pipelined.
    #[inline(always)]
    pub(super) fn stream<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const WHOLE: bool,
    >(
        &self,
        targets: &mut [Target<'_, I, O>],
    ) {
        let items = self.tokens * self.chunks;
        let mut tabs = [Tab::new(), Tab::new()];
        let nv = (if IL { 2 * self.half } else { self.half }) / S::LANES;
        // Whole bf16 windows on a tier that streams them split (see `Run::rotate_split`),
        // unless their table stays in registers (below).
        let split = const { split_stream::<S, I, O, ONCE, WHOLE>() }
            && !(4 * nv <= S::REGISTERS && holds::<S, I>(nv))
            && self.splits::<IL>();
        let form = if split { Form::Split } else { Form::Plain };
        let single = self.tokens == 1;
        let partial = 2 * self.half < self.head_dim;
        let in_cache = self.bytes(targets) <= IN_CACHE_BYTES;
        // Vectors of the table held in registers across the heads of a token (0: none), for
        // the calls where that won (see the module docs): an f32 source's at any size, in place
        // or into another buffer, or a 16-bit source's at any size when the table (`2·nv`
        // registers) leaves half the register file to the conversions.
        let fits = I::DTYPE == Dtype::F32 || 4 * nv <= S::REGISTERS;
        // A head's norm (QK-norm) over whole windows of a size `holds` takes, under posenc's
        // rounding: its own token loop, the table and the weights in registers (see
        // `Run::normed_tokens`). Not limited by `fits`: AVX2's bf16 heads of 128 (a table of
        // 16) took longer in the general loop than there (`cargo bench --bench fused --
        // qknorm`, `POSENC_BENCH_BACKEND=avx2`). The HF modes, whose purpose is HF's bits
        // rather than speed, keep the general loop: in their kernels too, the loop added
        // over half as much code again as it adds to posenc's (`size` of a release
        // `examples/asm_probe`).
        if !WHOLE
            && ONCE
            && !S::REFERENCE
            && holds::<S, I>(nv)
            && self.norms_held::<I, O, IL>(targets)
        {
            self.complete::<I, IL, ONCE>(&mut self.pending(0, &mut tabs[0], form));
            macro_rules! normed {
                ($nv:literal) => {
                    // SAFETY: `norms_held`: every target's norm is a head's, and each token is
                    // one chunk, its window the whole head and `nv` vectors; `tabs[0]` holds
                    // token 0's table, not split (`split` needs `WHOLE`).
                    apart!(unsafe { self.normed_tokens::<I, O, IL, ONCE, $nv>(targets, &mut tabs) })
                };
            }
            by_size!(S, I, nv, normed);
            return;
        }
        let resident = if WHOLE && fits { nv } else { 0 };
        // Two heads per pass share each table load: a single token's, rotate_half's streaming,
        // and AVX-512's f32 interleaved streaming in cache (see the module docs).
        let pair_heads = single
            || !IL && (I::DTYPE != Dtype::F32 || in_cache)
            || IL && S::LANES == 16 && I::DTYPE == Dtype::F32 && in_cache;
        if !S::REFERENCE && holds::<S, I>(resident) {
            // SAFETY: `resident` is nonzero only for `WHOLE` kernels, whose chunk is the whole
            // window. (`split` excludes these calls, so `form` is `Plain`, the form
            // `Run::stream_resident` makes token 0's table in, when it is read.)
            unsafe {
                self.stream_resident::<I, O, IL, ONCE, WHOLE>(
                    targets, resident, &mut tabs, in_cache,
                )
            };
            return;
        }
        self.complete::<I, IL, ONCE>(&mut self.pending(0, &mut tabs[0], form));
        for i in 0..items {
            let (cur, nxt) = alternate(&mut tabs, i);
            let mut next = self.pending(i + 1, nxt, form);
            let (t, j0, n) = self.item(i);
            for target in targets.iter_mut() {
                let (x, _) = target.src();
                let (y, _) = target.dst();
                let (norm, whole) = (target.norm, target.whole);
                for (sv, dv) in target.src_views.iter().zip(target.dst_views) {
                    let nh = sv.n_heads;
                    if nh == 0 {
                        continue;
                    }
                    let (shs, dhs) = (sv.head_stride, dv.head_stride);
                    let tok = self.first + t;
                    // SAFETY: `in_bounds` proved every head of every token of both views lies
                    // in its buffer; these are head 0 of token `first + t`.
                    let (sbase, dbase) = unsafe {
                        (
                            x.add(sv.offset + tok * sv.token_stride),
                            y.add(dv.offset + tok * dv.token_stride),
                        )
                    };
                    // (`WHOLE` kernels never norm: the branch is not compiled into them.)
                    if !WHOLE && let Some(norm) = norm {
                        let hd = self.head_dim;
                        // (A loop, not a closure: a closure would lose the tier's features.)
                        let row = if norm.kind == NormKind::Row {
                            let mut sum = 0.0f64;
                            for h in 0..nh {
                                // SAFETY: head `h` of this token is in bounds (above).
                                sum += unsafe { self.sum_squares(sbase.wrapping_add(h * shs), hd) };
                            }
                            Some(scale(sum, nh * hd, norm.eps))
                        } else {
                            None
                        };
                        // The `r` of up to NORM_GROUP heads first, then their rotations: the
                        // heads' sums are independent, so the CPU overlaps them rather than
                        // waiting on each head's sum → square root → rotation in turn. (In
                        // place too: every head is read before it is written, and heads are
                        // disjoint.)
                        let mut h0 = 0;
                        while h0 < nh {
                            let g = (nh - h0).min(NORM_GROUP);
                            let rs = match row {
                                Some(r) => [r; NORM_GROUP],
                                // SAFETY: heads `h0 .. h0 + g ≤ n_heads` are in bounds (above).
                                None => unsafe {
                                    self.factors(sbase.wrapping_add(h0 * shs), shs, g, hd, norm.eps)
                                },
                            };
                            for (i, &r) in rs[..g].iter().enumerate() {
                                let h = h0 + i;
                                let (sp, dp) =
                                    (sbase.wrapping_add(h * shs), dbase.wrapping_add(h * dhs));
                                let w = match norm.kind {
                                    NormKind::Row => norm.weight[h * hd..].as_ptr(),
                                    _ => norm.weight.as_ptr(),
                                };
                                let pre = Pre {
                                    r: self.s.splat(r),
                                    w,
                                    kind: norm.kind,
                                    one: self.one(norm.kind),
                                };
                                if partial && j0 == 0 {
                                    // SAFETY: head `h` of both views is in bounds; `w` has
                                    // `head_dim` weights (asserted in `run`).
                                    unsafe { self.pass::<I, O, ONCE, true>(sp, dp, pre) };
                                }
                                // SAFETY: the windows of head `h` are in bounds, pairs `j0 ..
                                // j0 + n ≤ half`; `cur` holds the item's table; `w` as above.
                                apart!(unsafe {
                                    self.rotate::<I, O, IL, ONCE, WHOLE, true, 1>(
                                        sp.add(self.offset),
                                        dp.add(self.offset),
                                        shs,
                                        dhs,
                                        j0,
                                        n,
                                        cur,
                                        Pre {
                                            w: pre.w.wrapping_add(self.offset),
                                            ..pre
                                        },
                                        false,
                                        false,
                                    )
                                });
                                self.advance::<I, IL, ONCE>(&mut next);
                            }
                            h0 += g;
                        }
                        continue;
                    }
                    if whole && partial && j0 == 0 {
                        for h in 0..nh {
                            let pre = self.no_pre();
                            // SAFETY: head `h` of both views is in bounds.
                            unsafe {
                                self.pass::<I, O, ONCE, false>(
                                    sbase.wrapping_add(h * shs),
                                    dbase.wrapping_add(h * dhs),
                                    pre,
                                )
                            };
                        }
                    }
                    let (sbase, dbase) = (
                        sbase.wrapping_add(self.offset),
                        dbase.wrapping_add(self.offset),
                    );
                    // f32 windows half a vector past a vector boundary, all of them (the
                    // strides keep the offset), on a tier with native half-vector accesses:
                    // moved on vector boundaries (see `Run::rotate_skewed`).
                    let skewed = const { skewable::<S, I, O, WHOLE>() }
                        && half_skewed::<S>(sbase.addr(), [sv.token_stride, shs])
                        && half_skewed::<S>(dbase.addr(), [dv.token_stride, dhs]);
                    let pre = self.no_pre();
                    let heads = Heads {
                        p: sbase,
                        q: dbase,
                        ps: shs,
                        qs: dhs,
                        n: nh,
                    };
                    let mut h = 0;
                    // Grouped heads: not on the reference tier (see `Simd::REFERENCE`; a
                    // constant, so its kernel does not contain them).
                    // SAFETY: (each call) heads `0 .. n_heads` of token `t` are windows proven
                    // in bounds in both buffers, pairs `j0 .. j0 + n ≤ half`; `cur` holds the
                    // item's table; `skewed` as tested above.
                    unsafe {
                        if !S::REFERENCE && single {
                            h = self.groups::<I, O, IL, ONCE, WHOLE, 4>(
                                heads, h, j0, n, cur, pre, skewed, &mut next,
                            );
                        }
                        if !S::REFERENCE && pair_heads {
                            h = self.groups::<I, O, IL, ONCE, WHOLE, 2>(
                                heads, h, j0, n, cur, pre, skewed, &mut next,
                            );
                        }
                        self.groups::<I, O, IL, ONCE, WHOLE, 1>(
                            heads, h, j0, n, cur, pre, skewed, &mut next,
                        );
                    }
                }
            }
            self.complete::<I, IL, ONCE>(&mut next);
        }
    }

    /// Heads `h ..` of `heads` in groups of `H` (one [`Run::rotate`] each, sharing its table
    /// loads), while a whole group is left, computing a block of `next` after each group;
    /// returns the first head not rotated.
    ///
    /// # Safety
    /// As [`Run::rotate`] for every head of `heads` (windows at `p + i·ps`, `q + i·qs`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn groups<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const WHOLE: bool,
        const H: usize,
    >(
        &self,
        heads: Heads<I, O>,
        mut h: usize,
        j0: usize,
        n: usize,
        cur: &Tab,
        pre: Pre<S::F>,
        skewed: bool,
        next: &mut Pending<'_>,
    ) -> usize {
        while h + H <= heads.n {
            let (p, q) = (
                heads.p.wrapping_add(h * heads.ps),
                heads.q.wrapping_add(h * heads.qs),
            );
            // SAFETY: heads `h .. h + H ≤ n` are windows of the caller's precondition; `cur`
            // is laid out as `next` is (every item's table of a call is, split or not).
            apart!(unsafe {
                self.rotate::<I, O, IL, ONCE, WHOLE, false, H>(
                    p,
                    q,
                    heads.ps,
                    heads.qs,
                    j0,
                    n,
                    cur,
                    pre,
                    skewed,
                    next.form == Form::Split,
                )
            });
            self.advance::<I, IL, ONCE>(next);
            h += H;
        }
        h
    }

    /// [`Run::stream`] for the calls whose table stays in registers across a token's heads
    /// (`nv` vectors: the sizes [`holds`] takes). Whether the windows are skewed (see
    /// `Run::rotate_skewed`) is settled once for the call, so the loop over tokens is one
    /// instance of [`Run::resident_tokens`] with nothing between the tokens' head loops but
    /// the next table. Run inside `stream`'s general loop, the same head loops took markedly
    /// longer in cache than the bare loop (`cargo bench --bench bare`, `posenc_*` against
    /// `rh_bare`).
    ///
    /// # Safety
    /// `WHOLE`: one chunk per token, every pair of the window, a whole number of vectors.
    #[inline(always)]
    pub(super) unsafe fn stream_resident<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const WHOLE: bool,
    >(
        &self,
        targets: &mut [Target<'_, I, O>],
        nv: usize,
        tabs: &mut [Tab; 2],
        in_cache: bool,
    ) {
        // f32 windows the same number of values `f` before a vector boundary, every one of the
        // call's (the strides keep the offset), on a tier that splits vectors there (see
        // `front`). Otherwise the plain loop, which takes windows at any address.
        let mut skewed = const { skewable::<S, I, O, WHOLE>() };
        let mut f = 0;
        for target in targets.iter() {
            let ((x, _), (y, _)) = (target.src(), target.dst());
            for (sv, dv) in target.src_views.iter().zip(target.dst_views) {
                if sv.n_heads > 0 {
                    // The window of head 0 of the call's first token in each buffer.
                    let (p, q) = (
                        x.wrapping_add(self.first_window(sv)),
                        y.wrapping_add(self.first_window(dv)),
                    );
                    let fp = front::<S>(p.addr(), [sv.token_stride, sv.head_stride]);
                    let fq = front::<S>(q.addr(), [dv.token_stride, dv.head_stride]);
                    skewed &= fp != 0 && fp == fq && (f == 0 || f == fp);
                    f = fp;
                }
            }
        }
        // Token 0's table (`tabs[0]`, as `Run::resident_tokens` reads it), unless every
        // token's row is a caller's read where it lies (`Run::direct_row`; skewed interleaved
        // windows read a `Tab`): made and never read, it cost decode calls from a table (`cargo
        // bench --bench ratio`, the table column at 1 token). Made here, outside the token
        // loops: made in them, their skewed interleaved instances ran slower at every size.
        if self.direct_row::<IL, ONCE, 0>(0).is_none() || IL && skewed {
            self.complete::<I, IL, ONCE>(&mut self.pending(0, &mut tabs[0], Form::Plain));
        }
        macro_rules! tokens {
            ($nv:literal, $skew:expr) => {
                // SAFETY: the caller's precondition; `$skew` (nonzero) only when every window
                // is an f32 window that many values before a boundary, a split the tier takes
                // (`front`); `tabs[0]` holds token 0's table unless `direct_row` gives token
                // 0's row at 0 and not `IL && skewed`, when it gives it at `$skew` too (only
                // interleaved rows depend on the skew).
                apart!(unsafe {
                    self.resident_tokens::<I, O, IL, ONCE, WHOLE, $nv, { $skew }>(
                        targets, tabs, in_cache,
                    )
                })
            };
        }
        // (`front` gives 4 on AVX2, whose vectors are 8 lanes; 4, 8 or 12 on AVX-512, so only
        // 16-lane kernels contain the loops of 8 and 12.)
        match f {
            _ if !(const { skewable::<S, I, O, WHOLE>() } && skewed) => {
                by_size!(S, I, nv, tokens, 0)
            }
            4 => by_size!(S, I, nv, tokens, 4),
            8 if const { S::LANES == 16 } => by_size!(S, I, nv, tokens, 8),
            12 if const { S::LANES == 16 } => by_size!(S, I, nv, tokens, 12),
            _ => by_size!(S, I, nv, tokens, 0),
        }
    }

    /// Per token, every head of every view from the table in registers
    /// ([`Run::resident`]), then the next token's table. For one view of f32 heads past the
    /// caches (`in_cache` false, and see [`between`]) whose angles are computed, not a
    /// caller's table, the next token's table is computed a block at a time between groups of
    /// the token's heads instead:
    ///
    /// ```text
    /// per = ⌈heads / blocks⌉
    /// for each group of `per` heads:  rotate them (`Run::resident`); compute one block of the
    ///                                 next token's table
    /// ```
    ///
    /// so the angles' arithmetic runs while the heads' loads wait on memory (`cargo bench
    /// --bench ratio`, the apply column at 4096 tokens on AVX-512, most for f32 windows 16
    /// bytes off a line; on an AVX2 host it lost, see [`Simd::ANGLES_BETWEEN_HEADS`]). It lost
    /// for 16-bit heads there, for a caller's table copied row by row (nothing to overlap but
    /// the copy) and for f32 in cache, where the heads' loads do not wait, as did computing
    /// the whole next table after half the heads. The other calls keep a branch of their own:
    /// run as a single group of this loop, with the next token's `Pending` made before the
    /// heads, they took longer in cache.
    ///
    /// # Safety
    /// As [`Run::stream_resident`]; `SKEW` nonzero only when every window of the call is an
    /// f32 window `SKEW` values before a vector boundary, a split the tier takes (`front`);
    /// `tabs[0]` holds token 0's table unless [`Run::direct_row`] gives token 0's row (and so
    /// every token's).
    #[inline(always)]
    pub(super) unsafe fn resident_tokens<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const WHOLE: bool,
        const NV: usize,
        const SKEW: usize,
    >(
        &self,
        targets: &mut [Target<'_, I, O>],
        tabs: &mut [Tab; 2],
        in_cache: bool,
    ) {
        debug_assert!(WHOLE && self.chunks == 1);
        let partial = 2 * self.half < self.head_dim;
        // One view whose heads need nothing but the rotation (`apply`, a table's per-layer
        // call): its first window and strides, and a loop of its own, so a token costs a
        // multiply-add per pointer. (The general loop below over targets and views took
        // longer per token in `cargo bench --bench bare`, its `h8` rows most, and so did this
        // view's case as a branch inside it.)
        let one = match targets {
            [target] if target.src_views.len() == 1 && !(target.whole && partial) => {
                let ((x, _), (y, _)) = (target.src(), target.dst());
                let (sv, dv) = (&target.src_views[0], &target.dst_views[0]);
                Some((
                    (
                        x.wrapping_add(self.first_window(sv)),
                        sv.token_stride,
                        sv.head_stride,
                    ),
                    (
                        y.wrapping_add(self.first_window(dv)),
                        dv.token_stride,
                        dv.head_stride,
                    ),
                    sv.n_heads,
                ))
            }
            _ => None,
        };
        // Each token's table: a caller's row read where it lies (`Run::direct_row`), else
        // `tabs`, the next one completed after the token's heads. On the x86 tiers, the
        // interleaved tables this loop computes for unskewed windows (every one after token
        // 0's, which the caller made) are compact: each token's table is loaded once
        // (`Run::held`), so expanding it there, as a caller's compact row is, stores and loads
        // half the entries of an expanded `Tab` for the same shuffles (`cargo bench --bench
        // ratio`, the interleaved apply column, on both tiers; `--bench bare -- overlap` puts
        // AVX-512's expansion into a `Tab` between its rotation from a table plus the angles
        // alone and `apply`).
        let compact = IL && SKEW == 0 && const { x86_vector::<S>() };
        let form = if compact { Form::Compact } else { Form::Plain };
        if let Some(((p, pts, phs), (q, qts, qhs), nh)) = one {
            let groups =
                !in_cache && const { between::<S, I, O, IL, ONCE, NV>() } && self.src.computes();
            for t in 0..self.tokens {
                let (cur, nxt) = alternate(tabs, t);
                let (p, q) = (p.wrapping_add(t * pts), q.wrapping_add(t * qts));
                let row = self.direct_row::<IL, ONCE, SKEW>(t);
                let computed = cur.rows_as(compact && t > 0);
                if row.is_some() || !groups {
                    let rows = match row {
                        Some(row) => row,
                        None => computed,
                    };
                    // SAFETY: heads `0 .. n_heads` of token `first + t` are windows proven in
                    // bounds in both buffers (`in_bounds`); `rows` holds the token's table
                    // (laid out as a `Tab`, or compact as `rows` says); the rest as below.
                    unsafe {
                        self.token_heads::<I, O, IL, ONCE, NV, SKEW>(
                            p,
                            q,
                            phs,
                            qhs,
                            nh,
                            rows,
                            in_cache && row.is_some(),
                        )
                    };
                    if row.is_none() {
                        self.next_table::<I, O, IL, ONCE, SKEW>(&mut self.pending(
                            t + 1,
                            nxt,
                            form,
                        ));
                    }
                    continue;
                }
                let mut next = self.pending(t + 1, nxt, form);
                let per = nh.div_ceil(next.blocks.max(1));
                let mut h = 0;
                while h < nh {
                    let n = per.min(nh - h);
                    // SAFETY: heads `h .. h + n` (`h + n ≤ n_heads`) of token `first + t`, as
                    // above; `cur` holds the token's table, and `next` writes only `nxt`.
                    unsafe {
                        self.resident::<I, O, IL, ONCE, NV, SKEW>(
                            p.wrapping_add(h * phs),
                            q.wrapping_add(h * qhs),
                            phs,
                            qhs,
                            n,
                            computed,
                        )
                    };
                    h += n;
                    self.advance::<I, IL, ONCE>(&mut next);
                }
                self.complete::<I, IL, ONCE>(&mut next);
            }
            return;
        }
        for t in 0..self.tokens {
            let (cur, nxt) = alternate(tabs, t);
            let row = self.direct_row::<IL, ONCE, SKEW>(t);
            let rows = match row {
                Some(row) => row,
                None => cur.rows(),
            };
            let tok = self.first + t;
            for target in targets.iter() {
                let ((x, _), (y, _)) = (target.src(), target.dst());
                for (sv, dv) in target.src_views.iter().zip(target.dst_views) {
                    let (nh, shs, dhs) = (sv.n_heads, sv.head_stride, dv.head_stride);
                    if nh == 0 {
                        continue;
                    }
                    // SAFETY: `in_bounds` proved every head of every token of both views lies
                    // in its buffer; these are head 0 of token `first + t`.
                    let (sbase, dbase) = unsafe {
                        (
                            x.add(sv.offset + tok * sv.token_stride),
                            y.add(dv.offset + tok * dv.token_stride),
                        )
                    };
                    if target.whole && partial {
                        for h in 0..nh {
                            // SAFETY: head `h` of both views is in bounds.
                            unsafe {
                                self.pass::<I, O, ONCE, false>(
                                    sbase.wrapping_add(h * shs),
                                    dbase.wrapping_add(h * dhs),
                                    self.no_pre(),
                                )
                            };
                        }
                    }
                    // SAFETY: heads `0 .. n_heads` of token `t` are windows proven in bounds
                    // in both buffers; `WHOLE` (the caller's precondition): the chunk is every
                    // pair of the window, a whole number of vectors, and `rows` holds its
                    // table; `SKEW` only for skewed f32 windows (the caller's precondition).
                    unsafe {
                        self.token_heads::<I, O, IL, ONCE, NV, SKEW>(
                            sbase.wrapping_add(self.offset),
                            dbase.wrapping_add(self.offset),
                            shs,
                            dhs,
                            nh,
                            rows,
                            in_cache && row.is_some(),
                        )
                    };
                }
            }
            if row.is_none() {
                self.complete::<I, IL, ONCE>(&mut self.pending(t + 1, nxt, Form::Plain));
            }
        }
    }

    /// The next token's table for [`Run::resident_tokens`]' one-view loop: its blocks in twos
    /// ([`Run::complete_twos`]) for unskewed f32 windows into f32 on the x86 vector tiers,
    /// one at a time otherwise. Built into every kernel, the pairs grew the code markedly
    /// (`size` of a release `examples/asm_probe`) for small gains outside f32 (`cargo bench
    /// --bench ratio`); built into the skewed loops, they slowed AVX-512's interleaved calls
    /// 16 bytes past a line, from positions and from tables alike.
    #[inline(always)]
    fn next_table<I: Element, O: Element, const IL: bool, const ONCE: bool, const SKEW: usize>(
        &self,
        next: &mut Pending<'_>,
    ) {
        if SKEW == 0
            && matches!(I::DTYPE, Dtype::F32)
            && matches!(O::DTYPE, Dtype::F32)
            && x86_vector::<S>()
        {
            self.complete_twos::<I, IL, ONCE>(next);
        } else {
            self.complete::<I, IL, ONCE>(next);
        }
    }

    /// A token's `nh` heads of one view from its table `rows`: [`Run::resident_twos`] for
    /// the kernels [`twos`] names when `two` (in cache, from a caller's table: from computed
    /// angles, the two heads at a time slowed `apply` in `cargo bench --bench ratio`),
    /// [`Run::resident`] otherwise.
    ///
    /// # Safety
    /// As [`Run::resident`].
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn token_heads<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const NV: usize,
        const SKEW: usize,
    >(
        &self,
        p: *const I,
        q: *mut O,
        ps: usize,
        qs: usize,
        nh: usize,
        rows: Rows,
        two: bool,
    ) {
        // SAFETY: the caller's precondition (`twos`: `SKEW` is 0).
        unsafe {
            if const { twos::<S, I, O, IL, ONCE, NV, SKEW>() } && two {
                self.resident_twos::<I, O, ONCE, NV>(p, q, ps, qs, nh, rows)
            } else {
                self.resident::<I, O, IL, ONCE, NV, SKEW>(p, q, ps, qs, nh, rows)
            }
        }
    }
}

/// Whether [`Run::resident_tokens`] computes the next token's table between groups of heads
/// past the caches, for tables of `NV` vectors: f32 heads of 128 values or more into f32,
/// under posenc's rounding, on a tier with [`Simd::ANGLES_BETWEEN_HEADS`] (AVX-512), the
/// calls where it was timed and won. (Built into every kernel, the loop added a fifth to the code of a release
/// `examples/asm_probe`; the HF modes exist for HF's bits, not speed.)
const fn between<
    S: Simd,
    I: Element,
    O: Element,
    const IL: bool,
    const ONCE: bool,
    const NV: usize,
>() -> bool {
    let head = if IL { NV * S::LANES } else { 2 * NV * S::LANES };
    ONCE && matches!(I::DTYPE, Dtype::F32)
        && matches!(O::DTYPE, Dtype::F32)
        && S::ANGLES_BETWEEN_HEADS
        && head >= 128
}

/// Whether the f32 window at address `at` starts half a vector of `S` past a vector boundary,
/// and `strides` (in values) keep every other window of the view there too.
#[inline(always)]
fn half_skewed<S: Simd>(at: usize, strides: [usize; 2]) -> bool {
    front::<S>(at, strides) == S::LANES / 2
}

/// How many f32 values the window at address `at` lies before the next vector boundary of
/// `S`, when `S` splits a vector there ([`Simd::ld_f32_split`]: half a vector, and on a tier
/// with [`Simd::QUARTERS`] a quarter or three quarters) and `strides` (in values) keep every
/// other window of the view there too; 0 otherwise (and on a boundary).
#[inline(always)]
fn front<S: Simd>(at: usize, strides: [usize; 2]) -> usize {
    let (l, v) = (S::LANES, S::LANES * size_of::<f32>());
    let r = at % v;
    // (`r` a multiple of 8 bytes: `f` is even, so no interleaved pair is split.)
    let f = (v - r) / size_of::<f32>();
    let split = 2 * f == l || S::QUARTERS && (4 * f == l || 4 * f == 3 * l);
    if r != 0 && r.is_multiple_of(8) && split && strides.iter().all(|s| s.is_multiple_of(l)) {
        f
    } else {
        0
    }
}

/// The rotary windows of one view's heads for one token: head `h` at `p + h·ps` (source) and
/// `q + h·qs` (destination), `n` heads.
#[derive(Clone, Copy)]
struct Heads<I, O> {
    p: *const I,
    q: *mut O,
    ps: usize,
    qs: usize,
    n: usize,
}
