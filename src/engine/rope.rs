//! The RoPE driver: one streaming loop for every tier, layout, dtype pair, angle source and
//! rounding mode. It reads the heads of a source buffer of `I` and writes the heads of a
//! destination of `O`: in place, both are the same buffer and view; rotate-into (a KV-cache
//! slot) has two, and then the channels outside the rotary window are converted too. With a
//! norm (QK-norm), each head (or each token's row of heads) is RMS-normalised as it is loaded:
//! `r` from one read of the head, then the rotation reads it again, normalising each vector.
//!
//! ```text
//! items = (token t, chunk of ≤ CHUNK pairs), in memory order    // one chunk per token up to head_dim 256
//! table[0] = angles of item 0
//! in cache, whole heads of ≤ 8 table vectors:                        // `stream_resident`
//!     for each token t:                                              // one loop, skew settled per call
//!         for each target buffer, each view of heads:
//!             load table[t] into registers; rotate every head with them
//!         compute table[t + 1]
//! else, for each item i:
//!     for each target buffer, each view of heads:
//!         H heads at a time:
//!             rotate pairs of the chunk in those H heads with table[i]   // a table vector is loaded once for H heads
//!             compute one block of table[i + 1]                          // in the shadow of the memory stream
//!     finish table[i + 1]
//! rotate one vector:  rotate_half  a' = a·c − b·s,  b' = b·c + a·s   (a, b: LANES pairs, half apart)
//!                     interleaved  x' = x·c + swap_pairs(x)·s        (c, s expanded, sign in s: see `Tab`)
//! a window's last, partial vector runs the same code on a zero-padded copy
//! ```
//!
//! The choices, each settled with `cargo bench --bench ratio` (RoPE time against the
//! in-place memory ceiling over the same bytes, per layout, dtype and token count):
//! * Heads in memory order. Visiting heads inner-most, block by block, keeps the table in
//!   registers but loses the hardware prefetchers' stream.
//! * In cache ([`IN_CACHE_BYTES`]), when a token's table is at most 8 vectors and the window a
//!   whole number of them (head_dim 128: rotate_half on both x86 tiers, interleaved on
//!   AVX-512), the table is loaded into registers once per token and every head of the view
//!   is rotated from them, the next table computed after the last head (`Run::resident`).
//!   Those calls take a token loop of their own (`Run::stream_resident`), with the views'
//!   skew settled once and, for a single view, only its pointers advanced per token: inside
//!   the general loop below, the per-token work stalled the head loops around it (`cargo
//!   bench --bench bare`, posenc against the same head loop written bare).
//!   That won for f32 sources in both layouts, decode included, and for 16-bit sources where
//!   the table takes at most half the registers (AVX-512); with AVX2's 16 registers, 16-bit
//!   rotate_half (a table of 16) measured worse than two heads per pass, and calls past the
//!   caches worse than one head per pass, so those keep the passes below.
//! * `H`, heads per pass sharing each table load: 4 for a single token (decode: everything in
//!   L1, where table loads are a large share of all loads). Streaming, 1 for interleaved (two
//!   interleaved heads per pass lost at 512–4096 tokens, and gained nothing at 64 on AVX2:
//!   `cargo bench --bench align`) and 2 for rotate_half, except that
//!   a call reading f32 heads takes 1 once its data outgrows the caches
//!   ([`IN_CACHE_BYTES`]): two f32 heads per pass won up to 512 tokens × 32 heads but lost
//!   clearly from 1024 tokens up, in place and into an f16/bf16 cache, on the AVX2 and
//!   AVX-512 tiers (`cargo bench --bench ratio`, `POSENC_BENCH_BACKEND=avx2` for the
//!   AVX2 tier; rotate-into in `cargo bench --bench fused`). 16-bit heads measured the same
//!   either way at 4096 tokens and better with 2 at 512, so they keep 2.
//!   Re-laying interleaved pairs in registers to share rotate_half's tables cost more
//!   shuffles than the table loads it saves.
//! * The next token's table is computed one block after each pass, behind the memory stream,
//!   instead of stalling the stream once per token. Spreading it differently, splitting a
//!   single token's table in two, software prefetch and fully unrolled heads measured no
//!   better.
//! * f32 windows half a vector past a vector boundary (on AVX2: a large block `malloc` maps,
//!   16 bytes past a page, and half its other blocks) run on vector boundaries, their two end
//!   pieces together in one vector of two halves (`Run::rotate_skewed`): their straddling
//!   vector accesses made in-cache calls slower than on an aligned buffer (`cargo bench
//!   --bench align`, every placement in a cache line side by side). Not with one head per pass
//!   (interleaved streaming): there a table load serves one head, and the table loaded as
//!   halves cost what the split data accesses did.
//! * A bf16 destination on a tier whose rounding tests each vector (AVX512-BF16 for
//!   subnormals, NEON without FEAT_BF16 for NaNs: `Simd::BF16_PAIR`) is written two vectors at a time (a
//!   rotate_half pair, two interleaved vectors) through one `Simd::st2`, which makes that test
//!   once for both (`cargo bench --bench ratio`, the bf16 rows; `benches/mca/neon.py`).
//! * bf16 heads held against a table in registers, on a tier with `Simd::SPLIT_BF16`
//!   (AVX512-BF16), load `2·LANES` values at a time and widen them as their even- and
//!   odd-offset values where they lie (a shift and a mask, no shuffle), rotate those against
//!   the table unzipped once per token, and round two vectors back with one conversion and
//!   one word permute (`Run::resident_split`). Faster than a widening shuffle per vector in
//!   both layouts, in cache and at decode (`cargo bench --bench ratio`, the bf16 rows).
//! * Per-head work is small (16 vectors at head_dim 128 on AVX2), so the loops walk raw
//!   pointers inside windows proven in bounds once per view ([`in_bounds`]).
//!
//! Every pair gets the same operations whatever the tier's width, the head grouping or the
//! position in a vector (tails are padded, not special-cased): on one tier, interleaved and
//! rotate_half are bitwise the same rotation, and results do not depend on how a call is split.

use super::angles::{CHUNK, Padded, Source, Tab, interleaved};
use super::dispatch::dispatch;
use super::job::{Job, Norm, NormKind, Target};
use super::vector::{Kernel, MAX_LANES, Simd, pad};
use crate::element::{Dtype, Element};
use crate::types::{Backend, Rounding, View};
use core::mem::MaybeUninit;

/// Rotates `targets` (validated by the API layer, one dtype `T` in and out: in place, or into
/// a buffer of the same type) as `job` says on `backend`, under any rounding mode.
///
/// The kernels are instantiated once per dtype pair, here in posenc (`rotate_f32_f32`, …): a
/// generic entry point would otherwise compile every tier's variants into each crate that
/// calls it (every test binary, every user crate), which dominated `cargo test`'s build time.
/// For the same reason only the pairs a runtime streams get kernels of their own: this one,
/// and [`rotate_from_f32`]. `engine::pairs` routes every call to one of them.
#[inline]
pub(crate) fn rotate_same<T: Element>(
    backend: Backend,
    targets: &mut [Target<'_, T, T>],
    job: Job<'_>,
) {
    match T::DTYPE {
        Dtype::F32 => rotate_f32_f32(backend, retype_targets(targets), job),
        Dtype::F16 => rotate_f16_f16(backend, retype_targets(targets), job),
        Dtype::Bf16 => rotate_bf16_bf16(backend, retype_targets(targets), job),
    }
}

/// Rotates f32 `targets` into heads of `O` (f32 activations into an f16/bf16 cache) as `job`
/// says on `backend`. Into f16 and bf16 under posenc's rounding only (`engine::pairs` stages
/// the HF modes); into f32 under any.
#[inline]
pub(crate) fn rotate_from_f32<O: Element>(
    backend: Backend,
    targets: &mut [Target<'_, f32, O>],
    job: Job<'_>,
) {
    match O::DTYPE {
        Dtype::F32 => rotate_f32_f32(backend, retype_targets(targets), job),
        Dtype::F16 => rotate_f32_f16(backend, retype_targets(targets), job),
        Dtype::Bf16 => rotate_f32_bf16(backend, retype_targets(targets), job),
    }
}

/// One non-generic entry point per dtype pair with a kernel (see [`rotate_same`]): `$hf` says
/// whether the pair has the HF modes' kernels too (one dtype in and out).
macro_rules! per_pair {
    ($($name:ident: $i:ty => $o:ty, $hf:literal;)*) => {$(
        #[inline(never)]
        fn $name(backend: Backend, targets: &mut [Target<'_, $i, $o>], job: Job<'_>) {
            rotate_as::<$i, $o, $hf>(backend, targets, job)
        }
    )*};
}

per_pair! {
    rotate_f32_f32: f32 => f32, true;
    rotate_f16_f16: half::f16 => half::f16, true;
    rotate_bf16_bf16: half::bf16 => half::bf16, true;
    rotate_f32_f16: f32 => half::f16, false;
    rotate_f32_bf16: f32 => half::bf16, false;
}

/// `targets` as targets of `(I2, O2)`, which `(I, O)` are (see `vector::retype`).
#[inline(always)]
pub(crate) fn retype_targets<'a, 'b, I: Element, O: Element, I2: Element, O2: Element>(
    targets: &'a mut [Target<'b, I, O>],
) -> &'a mut [Target<'b, I2, O2>] {
    assert!(I::DTYPE == I2::DTYPE && O::DTYPE == O2::DTYPE);
    // SAFETY: `I` and `I2` are the same type, and so are `O` and `O2` (one `Element` per
    // dtype), so `Target<'b, I, O>` and `Target<'b, I2, O2>` are the same type too; the length
    // and borrow carry over.
    unsafe { core::slice::from_raw_parts_mut(targets.as_mut_ptr().cast(), targets.len()) }
}

/// [`rotate_same`] / [`rotate_from_f32`] for one dtype pair. Layout, rounding and the common shape (one chunk of whole
/// vectors per token) are chosen here, before dispatch, as constants of the kernel: each
/// combination is its own `#[target_feature]` instantiation, so the inner loops test none of
/// them, and each function stays small enough to keep its values in registers (one function
/// holding every variant measured slower in `cargo bench --bench ratio`, and its debug-build
/// frame outgrew a rayon worker's stack). `WHOLE` is decided against `MAX_LANES`, so it holds
/// on every tier. A norm (QK-norm) runs in the general shape, `WHOLE` = false, where it is a
/// branch per head rather than a kernel of its own: a constant would double the kernels.
/// Pairs between two dtypes come here under posenc's rounding only (see [`rotate_from_f32`]).
fn rotate_as<I: Element, O: Element, const HF: bool>(
    backend: Backend,
    targets: &mut [Target<'_, I, O>],
    job: Job<'_>,
) {
    let half = job.rotary_dim / 2;
    let norm = targets.iter().any(|t| t.norm.is_some());
    let whole = half <= CHUNK && half.is_multiple_of(MAX_LANES) && !norm;
    macro_rules! go {
        ($il:literal, $once:literal, $whole:literal) => {
            dispatch(backend, Rotate::<I, O, $il, $once, $whole> { targets, job })
        };
    }
    let il = interleaved(job.layout);
    if HF && job.round != Rounding::Once {
        // (`HF` is a constant, so the pairs without these kernels do not instantiate them.)
        return match il {
            true => go!(true, false, false),
            false => go!(false, false, false),
        };
    }
    // Under the HF modes a pair without `HF` never gets here (see [`rotate_from_f32`]).
    match (il, whole) {
        (true, true) => go!(true, true, true),
        (false, true) => go!(false, true, true),
        (true, false) => go!(true, true, false),
        (false, false) => go!(false, true, false),
    }
}

/// The RoPE kernel for one dtype pair (`I` read, `O` written), layout (`IL`: interleaved),
/// rounding (`ONCE`: posenc's) and shape (`WHOLE`: one chunk of whole vectors per token, and
/// no norm); see [`rotate_same`].
pub(crate) struct Rotate<'a, 'b, I, O, const IL: bool, const ONCE: bool, const WHOLE: bool> {
    pub targets: &'a mut [Target<'b, I, O>],
    pub job: Job<'a>,
}

impl<I: Element, O: Element, const IL: bool, const ONCE: bool, const WHOLE: bool> Kernel
    for Rotate<'_, '_, I, O, IL, ONCE, WHOLE>
{
    type Output = ();
    const ROUNDS_TO_BF16: bool = matches!(O::DTYPE, Dtype::Bf16);

    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        if S::REFERENCE {
            reference::<S, I, O, IL, ONCE>(s, self.targets, self.job)
        } else {
            drive::<S, I, O, IL, ONCE, WHOLE>(s, self.targets, self.job)
        }
    }
}

/// The reference tier's kernel: the general shape whatever `WHOLE` the call was given (the
/// results are the same, see the module docs), out of line so that the whole-vector and the
/// general kernels share it. (The reference tier has no target features to lose in a call.)
#[inline(never)]
fn reference<S: Simd, I: Element, O: Element, const IL: bool, const ONCE: bool>(
    s: S,
    targets: &mut [Target<'_, I, O>],
    job: Job<'_>,
) {
    drive::<S, I, O, IL, ONCE, false>(s, targets, job)
}

/// [`Rotate`]'s body: checks every view once, then streams (see the module docs).
#[inline(always)]
fn drive<S: Simd, I: Element, O: Element, const IL: bool, const ONCE: bool, const WHOLE: bool>(
    s: S,
    targets: &mut [Target<'_, I, O>],
    job: Job<'_>,
) {
    // half ≥ 1: a rope's rotary dim is at least 2 (`check_dims`).
    let half = job.rotary_dim / 2;
    if job.tokens == 0 {
        return;
    }
    for t in targets.iter() {
        // The API layer validated every view; the loops below rely on it for raw
        // pointer arithmetic, so it is proven again here, once per view.
        assert!(t.src_views.len() == t.dst_views.len());
        for (sv, dv) in t.src_views.iter().zip(t.dst_views) {
            assert!(sv.n_heads == dv.n_heads);
            assert!(in_bounds(sv, &job, t.src().1) && in_bounds(dv, &job, t.dst().1));
            // The norm runs in the general shape only (see `rotate_as`).
            assert!(!WHOLE || t.norm.is_none());
            // A norm reads the whole head before the rotation writes it: in place, that
            // holds only when a token is one chunk (the API refuses the rest).
            assert!(
                t.norm.is_none()
                    || half <= CHUNK
                    || !core::ptr::eq(t.src().0.cast::<u8>(), t.dst().0.cast::<u8>().cast_const())
            );
            assert!(
                t.norm
                    .is_none_or(|n| weight_fits(&n, sv.n_heads, job.head_dim))
            );
        }
    }
    let mut scratch = MaybeUninit::<Padded>::uninit();
    let src = Source::new(s, &job.angles, half, &mut scratch);
    let run = Run {
        s,
        src: &src,
        first: job.first,
        offset: job.offset,
        tokens: job.tokens,
        half,
        head_dim: job.head_dim,
        chunks: half.div_ceil(CHUNK),
        round: job.round,
    };
    run.stream::<I, O, IL, ONCE, WHOLE>(targets);
}

/// Whether every head `job` touches in view `v` lies inside a buffer of `len` elements.
/// Heads start at `v.offset + t·token_stride + h·head_stride` for tokens `t` in
/// `job.first .. job.first + job.tokens` and are `head_dim` long (the rotary window lies
/// inside); strides are unsigned, so the last head ends furthest, and checking it (without
/// overflow) proves every pointer the loops form stays inside the buffer.
#[inline(always)]
fn in_bounds(v: &View, job: &Job<'_>, len: usize) -> bool {
    if job.tokens == 0 || v.n_heads == 0 {
        return true; // no head: the loops form no pointer for this view
    }
    let window = job.offset.checked_add(job.rotary_dim);
    let end = (job.first.checked_add(job.tokens - 1))
        .and_then(|t| t.checked_mul(v.token_stride))
        .and_then(|a| {
            (v.n_heads - 1)
                .checked_mul(v.head_stride)
                .and_then(|b| a.checked_add(b))
        })
        .and_then(|a| a.checked_add(v.offset))
        .and_then(|a| a.checked_add(job.head_dim));
    window.is_some_and(|w| w <= job.head_dim) && end.is_some_and(|e| e <= len)
}

/// Whether norm `n`'s weight covers what it scales: a head (`head_dim` weights) or, for a
/// row norm, all `n_heads` heads of a token.
fn weight_fits(n: &Norm<'_>, n_heads: usize, head_dim: usize) -> bool {
    let need = match n.kind {
        NormKind::Row => n_heads.checked_mul(head_dim),
        NormKind::Head | NormKind::HeadOnePlus => Some(head_dim),
    };
    need.is_some_and(|w| w <= n.weight.len())
}

/// Whether interleaved loops take their vectors two at a time, to store them with one
/// [`Simd::st2_joined`]: for a bf16 destination on a tier whose bf16 rounding tests each vector
/// ([`Simd::BF16_PAIR`]), where one test for two vectors ran faster (AVX512-BF16: `cargo
/// bench --bench ratio`, the bf16 rows; NEON: `benches/mca/neon.py`). Other kernels keep one
/// vector at a time.
const fn paired<S: Simd, O: Element>() -> bool {
    S::BF16_PAIR && matches!(O::DTYPE, Dtype::Bf16)
}

/// Whether [`Run::resident`] of `NV` table vectors from `I` to `O` takes
/// [`Run::resident_split`]: bf16 heads to bf16 under posenc's rounding (the HF modes round
/// between operations in the vectors' order), on a tier with [`Simd::SPLIT_BF16`], with an
/// even number of table vectors and no skewed end pieces (those are f32's).
const fn split<
    S: Simd,
    I: Element,
    O: Element,
    const ONCE: bool,
    const NV: usize,
    const SKEW: bool,
>() -> bool {
    S::SPLIT_BF16
        && ONCE
        && !SKEW
        && NV.is_multiple_of(2)
        && matches!(I::DTYPE, Dtype::Bf16)
        && matches!(O::DTYPE, Dtype::Bf16)
}

/// Up to this many bytes per call, a call counts as in cache: the table stays in registers
/// across heads, and rotate_half with an f32 source rotates two heads per pass where it does
/// not; beyond it, one head per pass from a table in memory (see the module docs). Between
/// the largest call where the in-cache paths won (512 tokens × 32 heads × 128, f32: 8 MiB)
/// and the smallest where one head per pass won (1024 tokens: 16 MiB) in `cargo bench
/// --bench ratio` on both x86 tiers.
const IN_CACHE_BYTES: usize = 12 << 20;

/// Heads whose norm factors are computed before any of them is rotated (see `stream`).
const NORM_GROUP: usize = 16;

/// One call's constants.
struct Run<'a, S: Simd> {
    s: S,
    src: &'a Source<'a, S>,
    /// The first token of the views this call rotates (entry 0 of the angles).
    first: usize,
    /// The rotary window's offset within a head.
    offset: usize,
    tokens: usize,
    half: usize,
    head_dim: usize,
    /// Chunks per token.
    chunks: usize,
    round: Rounding,
}

/// The next item's table, filled block by block while the current item is rotated.
struct Pending<'a> {
    t: usize,
    j0: usize,
    done: usize,
    blocks: usize,
    tab: &'a mut Tab,
}

/// What a normalised head is multiplied by: `r` (splat) and the weights of its channels
/// (`w` points at the weight of the head's channel 0).
#[derive(Clone, Copy)]
struct Pre<F> {
    r: F,
    w: *const f32,
    kind: NormKind,
    /// Added to each weight: 1 for Gemma's `1 + w`, else −0.0, which leaves every value
    /// (−0.0 included) as it is, so one loop serves every kind without a branch per vector.
    one: F,
}

impl<S: Simd> Run<'_, S> {
    /// Item `i`: its token, first pair and pair count.
    #[inline(always)]
    fn item(&self, i: usize) -> (usize, usize, usize) {
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

    /// The table of item `i`, nothing computed yet (no blocks past the last item).
    #[inline(always)]
    fn pending<'t>(&self, i: usize, tab: &'t mut Tab) -> Pending<'t> {
        if i >= self.tokens * self.chunks {
            return Pending {
                t: 0,
                j0: 0,
                done: 0,
                blocks: 0,
                tab,
            };
        }
        let (t, j0, n) = self.item(i);
        Pending {
            t,
            j0,
            done: 0,
            blocks: n.div_ceil(S::LANES),
            tab,
        }
    }

    /// Computes the next block of `next`, if any is left.
    #[inline(always)]
    fn advance<T: Element, const IL: bool, const ONCE: bool>(&self, next: &mut Pending<'_>) {
        if next.done < next.blocks {
            self.src
                .block::<T, IL, ONCE>(self.s, next.t, next.j0, next.done, next.tab);
            next.done += 1;
        }
    }

    /// The items in memory order, the next item's table pipelined.
    #[inline(always)]
    fn stream<I: Element, O: Element, const IL: bool, const ONCE: bool, const WHOLE: bool>(
        &self,
        targets: &mut [Target<'_, I, O>],
    ) {
        let items = self.tokens * self.chunks;
        let mut tabs = [Tab::new(), Tab::new()];
        self.complete::<I, IL, ONCE>(&mut self.pending(0, &mut tabs[0]));
        let single = self.tokens == 1;
        let partial = 2 * self.half < self.head_dim;
        let in_cache = self.bytes(targets) <= IN_CACHE_BYTES;
        // Vectors of the table held in registers across the heads of a token (0: none), for
        // the calls where that won (see the module docs): an f32 source's, or a 16-bit
        // source's when the table (`2·nv` registers) leaves half the register file to the
        // conversions.
        let nv = (if IL { 2 * self.half } else { self.half }) / S::LANES;
        let resident = if WHOLE && in_cache && (I::DTYPE == Dtype::F32 || 4 * nv <= S::REGISTERS) {
            nv
        } else {
            0
        };
        // Two heads per pass share each table load: a single token's, and rotate_half's
        // streaming (see the module docs).
        let pair_heads = single || !IL && (I::DTYPE != Dtype::F32 || in_cache);
        if !S::REFERENCE && matches!(resident, 2 | 4 | 8) {
            // SAFETY: `resident` is nonzero only for `WHOLE` kernels, whose chunk is the whole
            // window; the table of item 0 is complete.
            unsafe { self.stream_resident::<I, O, IL, ONCE, WHOLE>(targets, resident, &mut tabs) };
            return;
        }
        for i in 0..items {
            let (cur, nxt) = alternate(&mut tabs, i);
            let mut next = self.pending(i + 1, nxt);
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
                            let mut rs = [0.0f32; NORM_GROUP];
                            if let Some(r) = row {
                                rs = [r; NORM_GROUP];
                            } else {
                                // Every sum, then every factor: the divisions and square roots
                                // of the group issue back to back, not one per head between
                                // the sums.
                                let mut sums = [0.0f64; NORM_GROUP];
                                for (i, sum) in sums[..g].iter_mut().enumerate() {
                                    // SAFETY: head `h0 + i < n_heads` is in bounds (above).
                                    *sum = unsafe {
                                        self.sum_squares(sbase.wrapping_add((h0 + i) * shs), hd)
                                    };
                                }
                                // (All NORM_GROUP lanes, the unused ones too: a loop of
                                // fixed length is what LLVM vectorises.)
                                for (r, &sum) in rs.iter_mut().zip(&sums) {
                                    *r = scale(sum, hd, norm.eps);
                                }
                            }
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
                                    one: self.s.splat(if norm.kind == NormKind::HeadOnePlus {
                                        1.0
                                    } else {
                                        -0.0
                                    }),
                                };
                                if partial && j0 == 0 {
                                    // SAFETY: head `h` of both views is in bounds; `w` has
                                    // `head_dim` weights (asserted in `run`).
                                    unsafe { self.pass::<I, O, ONCE, true>(sp, dp, pre) };
                                }
                                // SAFETY: the windows of head `h` are in bounds, pairs `j0 ..
                                // j0 + n ≤ half`; `cur` holds the item's table; `w` as above.
                                unsafe {
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
                                    )
                                };
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
                    let mut h = 0;
                    // Grouped heads: not on the reference tier (see `Simd::REFERENCE`; a
                    // constant, so its kernel does not contain them).
                    if !S::REFERENCE {
                        if single {
                            while h + 4 <= nh {
                                let (p, q) =
                                    (sbase.wrapping_add(h * shs), dbase.wrapping_add(h * dhs));
                                // SAFETY: (this call and the two below) heads `h .. h + H ≤
                                // n_heads` of token `t` are windows proven in bounds in both
                                // buffers, and `rotate` stays inside pairs `j0 .. j0 + n ≤ half` of
                                // each; `cur` holds the item's table.
                                unsafe {
                                    self.rotate::<I, O, IL, ONCE, WHOLE, false, 4>(
                                        p, q, shs, dhs, j0, n, cur, pre, skewed,
                                    )
                                };
                                self.advance::<I, IL, ONCE>(&mut next);
                                h += 4;
                            }
                        }
                        if pair_heads {
                            while h + 2 <= nh {
                                let (p, q) =
                                    (sbase.wrapping_add(h * shs), dbase.wrapping_add(h * dhs));
                                // SAFETY: as above.
                                unsafe {
                                    self.rotate::<I, O, IL, ONCE, WHOLE, false, 2>(
                                        p, q, shs, dhs, j0, n, cur, pre, skewed,
                                    )
                                };
                                self.advance::<I, IL, ONCE>(&mut next);
                                h += 2;
                            }
                        }
                    }
                    while h < nh {
                        let (p, q) = (sbase.wrapping_add(h * shs), dbase.wrapping_add(h * dhs));
                        // SAFETY: as above.
                        unsafe {
                            self.rotate::<I, O, IL, ONCE, WHOLE, false, 1>(
                                p, q, shs, dhs, j0, n, cur, pre, skewed,
                            )
                        };
                        self.advance::<I, IL, ONCE>(&mut next);
                        h += 1;
                    }
                }
            }
            self.complete::<I, IL, ONCE>(&mut next);
        }
    }

    /// [`Run::stream`] for the calls whose table stays in registers across a token's heads
    /// (`nv` vectors: 2, 4 or 8). Whether the windows are skewed (see `Run::rotate_skewed`) is
    /// settled once for the call, so the loop over tokens is one instance of
    /// [`Run::resident_tokens`] with nothing between the tokens' head loops but the next
    /// table. Run inside `stream`'s general loop, the same head loops took markedly longer in
    /// cache than the bare loop (`cargo bench --bench bare`, `posenc_*` against `rh_bare`).
    ///
    /// # Safety
    /// `WHOLE`: one chunk per token, every pair of the window, a whole number of vectors;
    /// `tabs[0]` holds token 0's table.
    #[inline(always)]
    unsafe fn stream_resident<
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
    ) {
        // f32 windows half a vector past a vector boundary, every one of the call's (the
        // strides keep the offset), on a tier with native half-vector accesses. Otherwise the
        // plain loop, which takes windows at any address.
        let mut skewed = const { skewable::<S, I, O, WHOLE>() };
        for target in targets.iter() {
            let ((x, _), (y, _)) = (target.src(), target.dst());
            for (sv, dv) in target.src_views.iter().zip(target.dst_views) {
                if sv.n_heads > 0 {
                    // The window of head 0 of the call's first token in each buffer.
                    let (p, q) = (
                        x.wrapping_add(self.first_window(sv)),
                        y.wrapping_add(self.first_window(dv)),
                    );
                    skewed &= half_skewed::<S>(p.addr(), [sv.token_stride, sv.head_stride])
                        && half_skewed::<S>(q.addr(), [dv.token_stride, dv.head_stride]);
                }
            }
        }
        macro_rules! tokens {
            ($nv:literal, $skew:literal) => {
                // SAFETY: the caller's precondition; `$skew` only when every window is skewed.
                unsafe { self.resident_tokens::<I, O, IL, ONCE, WHOLE, $nv, $skew>(targets, tabs) }
            };
        }
        if const { skewable::<S, I, O, WHOLE>() } && skewed {
            match nv {
                2 => tokens!(2, true),
                4 => tokens!(4, true),
                _ => tokens!(8, true),
            }
        } else {
            match nv {
                2 => tokens!(2, false),
                4 => tokens!(4, false),
                _ => tokens!(8, false),
            }
        }
    }

    /// Per token, every head of every view from the table in registers
    /// ([`Run::resident`]), then the next token's table.
    ///
    /// # Safety
    /// As [`Run::stream_resident`]; `SKEW` only when every window of the call is an f32
    /// window half a vector past a boundary on a tier that takes them.
    #[inline(always)]
    unsafe fn resident_tokens<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const WHOLE: bool,
        const NV: usize,
        const SKEW: bool,
    >(
        &self,
        targets: &mut [Target<'_, I, O>],
        tabs: &mut [Tab; 2],
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
        if let Some(((p, pts, phs), (q, qts, qhs), nh)) = one {
            for t in 0..self.tokens {
                let (cur, nxt) = alternate(tabs, t);
                let mut next = self.pending(t + 1, nxt);
                // SAFETY: heads `0 .. n_heads` of token `first + t` are windows proven in
                // bounds in both buffers (`in_bounds`); the rest as below.
                unsafe {
                    self.resident::<I, O, IL, ONCE, NV, SKEW>(
                        p.wrapping_add(t * pts),
                        q.wrapping_add(t * qts),
                        phs,
                        qhs,
                        nh,
                        cur,
                    )
                };
                self.complete::<I, IL, ONCE>(&mut next);
            }
            return;
        }
        for t in 0..self.tokens {
            let (cur, nxt) = alternate(tabs, t);
            let mut next = self.pending(t + 1, nxt);
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
                    // pair of the window, a whole number of vectors, and `cur` holds its
                    // table; `SKEW` only for skewed f32 windows (the caller's precondition).
                    unsafe {
                        self.resident::<I, O, IL, ONCE, NV, SKEW>(
                            sbase.wrapping_add(self.offset),
                            dbase.wrapping_add(self.offset),
                            shs,
                            dhs,
                            nh,
                            cur,
                        )
                    };
                }
            }
            self.complete::<I, IL, ONCE>(&mut next);
        }
    }

    /// Where, in values from the start of its buffer, view `v`'s rotary window of head 0 of
    /// the call's first token starts. (A method, not a closure: closures are not inlined in
    /// unoptimised builds, and `check-asm.sh` requires the entry points to contain their
    /// kernels.)
    #[inline(always)]
    fn first_window(&self, v: &View) -> usize {
        v.offset + self.first * v.token_stride + self.offset
    }

    /// The bytes a call reads and writes through its views: the source heads' and, rotating
    /// into another buffer, the destination heads' too (saturating: only compared with
    /// [`IN_CACHE_BYTES`]).
    #[inline(always)]
    fn bytes<I: Element, O: Element>(&self, targets: &[Target<'_, I, O>]) -> usize {
        let mut per_token = 0usize;
        for t in targets {
            let into = !core::ptr::eq(t.src().0.cast::<u8>(), t.dst().0.cast::<u8>().cast_const());
            let size = size_of::<I>() + if into { size_of::<O>() } else { 0 };
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
    fn no_pre(&self) -> Pre<S::F> {
        Pre {
            r: self.s.splat(1.0),
            w: core::ptr::null(),
            kind: NormKind::Head,
            one: self.s.splat(-0.0),
        }
    }

    /// Computes what is left of `next`.
    #[inline(always)]
    fn complete<T: Element, const IL: bool, const ONCE: bool>(&self, next: &mut Pending<'_>) {
        while next.done < next.blocks {
            self.advance::<T, IL, ONCE>(next);
        }
    }

    /// `Σ x²` over the `n` values at `p`, each square exact in f64, summed in f64.
    ///
    /// # Safety
    /// `p .. p + n` is readable.
    #[inline(always)]
    unsafe fn sum_squares<I: Element>(&self, p: *const I, n: usize) -> f64 {
        let (s, l) = (self.s, S::LANES);
        // Four accumulators, two vectors a step: each add waits on the one two vectors back,
        // not one (the contract leaves the order of the f64 sum free, see `RmsNorm`).
        let mut acc = [s.dsplat(0.0); 4];
        let mut k = 0;
        while k + 2 * l <= n {
            for u in 0..2 {
                // SAFETY: values `k + u·l .. k + (u + 1)·l ≤ n`.
                let (lo, hi) = unsafe { self.widen::<I>(p.add(k + u * l)) };
                acc[2 * u] = s.dsquare_add(lo, acc[2 * u]);
                acc[2 * u + 1] = s.dsquare_add(hi, acc[2 * u + 1]);
            }
            k += 2 * l;
        }
        while k < n {
            let (lo, hi) = if k + l <= n {
                // SAFETY: values `k .. k + l ≤ n`.
                unsafe { self.widen::<I>(p.add(k)) }
            } else {
                // SAFETY: values `k .. n`; the rest of the vector is zero padding.
                let tail = unsafe { core::slice::from_raw_parts(p.add(k), n - k) };
                let padded = pad(tail);
                // SAFETY: `padded` holds `MAX_LANES ≥ l` values.
                unsafe { self.widen::<I>(padded.as_ptr()) }
            };
            acc[0] = s.dsquare_add(lo, acc[0]);
            acc[1] = s.dsquare_add(hi, acc[1]);
            k += l;
        }
        let mut out = [0.0f64; MAX_LANES];
        s.store_d(
            s.dadd(s.dadd(acc[0], acc[1]), s.dadd(acc[2], acc[3])),
            &mut out[..],
        );
        out[..l / 2].iter().sum()
    }

    /// The `LANES` values of `I` at `p` as f64 (exact): the low half and the high half.
    ///
    /// # Safety
    /// `p .. p + LANES` is readable.
    #[inline(always)]
    unsafe fn widen<I: Element>(&self, p: *const I) -> (S::D, S::D) {
        let (s, l) = (self.s, S::LANES);
        if I::DTYPE == Dtype::F32 {
            let p = p.cast::<f32>();
            // SAFETY: `I` is f32 (its dtype), and both halves are in `p .. p + l`.
            unsafe { (s.ld_widen(p), s.ld_widen(p.add(l / 2))) }
        } else {
            let mut tmp = [0.0f32; MAX_LANES];
            // SAFETY: the caller's precondition.
            s.store(unsafe { s.ld::<I>(p) }, &mut tmp[..]);
            (s.load_widen(&tmp[..]), s.load_widen(&tmp[l / 2..]))
        }
    }

    /// The channels of a head outside its rotary window, from `p` (source head) to `q`
    /// (destination head): converted, normalised first when `NORM`.
    ///
    /// # Safety
    /// `p .. p + head_dim` is readable, `q .. q + head_dim` writable (the same head in place);
    /// when `NORM`, `pre.w .. + head_dim` is readable.
    #[inline(always)]
    unsafe fn pass<I: Element, O: Element, const ONCE: bool, const NORM: bool>(
        &self,
        p: *const I,
        q: *mut O,
        pre: Pre<S::F>,
    ) {
        let (s, l) = (self.s, S::LANES);
        let end = self.offset + 2 * self.half;
        for (a, b) in [(0, self.offset), (end, self.head_dim)] {
            let mut k = a;
            while k < b {
                let m = l.min(b - k);
                // SAFETY: channels `k .. k + m ≤ head_dim` of the head (and its weights); the
                // destination is written after the source is read (the same memory in place).
                unsafe {
                    let xs = core::slice::from_raw_parts(p.add(k), m);
                    let mut v = s.load(&pad(xs)[..]);
                    v = if NORM {
                        let ws = core::slice::from_raw_parts(pre.w.add(k), m);
                        self.pre::<I, ONCE>(v, s.load(&pad(ws)[..]), pre)
                    } else {
                        // × 1: exact, and quiets a signalling NaN as a widening by `half` does.
                        s.mul(v, s.splat(1.0))
                    };
                    let mut out = [O::default(); MAX_LANES];
                    s.store(v, &mut out[..]);
                    core::ptr::copy_nonoverlapping(out.as_ptr(), q.add(k), m);
                }
                k += m;
            }
        }
    }

    /// The norm of `x` with weights `w`: `(x·r)·w'` in f32 under posenc's rounding (`w'` is `w`,
    /// or `1 + w` for Gemma), HF's module arithmetic and roundings to `I` otherwise.
    #[inline(always)]
    fn pre<I: Element, const ONCE: bool>(&self, x: S::F, w: S::F, pre: Pre<S::F>) -> S::F {
        let s = self.s;
        let xr = s.mul(x, pre.r);
        if ONCE {
            return s.mul(s.add(w, pre.one), xr);
        }
        match pre.kind {
            NormKind::Head => s.round_to::<I>(s.mul(w, s.round_to::<I>(xr))),
            _ => s.round_to::<I>(s.mul(s.add(w, pre.one), xr)),
        }
    }

    /// Loads `LANES` values of `I` at `p`, normalised when `NORM` (weights at `w`).
    ///
    /// # Safety
    /// `p .. p + LANES` is readable, and `w .. w + LANES` when `NORM`.
    #[inline(always)]
    unsafe fn ld<I: Element, const ONCE: bool, const NORM: bool>(
        &self,
        p: *const I,
        w: *const f32,
        pre: Pre<S::F>,
    ) -> S::F {
        // SAFETY: the caller's precondition.
        unsafe {
            let x = self.s.ld::<I>(p);
            if NORM {
                self.pre::<I, ONCE>(x, self.s.ld_f32(w), pre)
            } else {
                x
            }
        }
    }

    /// Rotates pairs `j0 .. j0 + n` of the `H` rotary windows at `p0 + i·ps` (`i < H`) into the
    /// windows at `q0 + i·qs` with the chunk's table; each table vector is loaded once for all
    /// of them. `pre.w` points at the weight of the window's first channel when `NORM`.
    ///
    /// `WHOLE`: the chunk is the whole window and a whole number of vectors (no tail).
    ///
    /// # Safety
    /// `p0 + i·ps .. p0 + i·ps + 2·half` (`i < H`) are readable windows, `q0 + i·qs ..` writable
    /// ones (the same windows in place, else disjoint); `j0 + n ≤ half`; `tab` holds the table
    /// of this chunk (`n` pairs); when `NORM`, `pre.w .. + 2·half` is readable; `skewed` only
    /// as [`Run::rotate_skewed`] requires.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn rotate<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const WHOLE: bool,
        const NORM: bool,
        const H: usize,
    >(
        &self,
        p0: *const I,
        q0: *mut O,
        ps: usize,
        qs: usize,
        j0: usize,
        n: usize,
        tab: &Tab,
        pre: Pre<S::F>,
        skewed: bool,
    ) {
        let (s, l, half) = (self.s, S::LANES, self.half);
        if const { H > 1 && skewable::<S, I, O, WHOLE>() } && skewed {
            // SAFETY: the caller's precondition; `skewed`: f32 windows half a vector past a
            // boundary, whole ones (`WHOLE`).
            unsafe { self.rotate_skewed::<I, O, IL, ONCE, H>(p0, q0, ps, qs, tab) };
            return;
        }
        let (j0, n) = if WHOLE { (0, half) } else { (j0, n) };
        let w = pre.w;
        if IL {
            let (m, start) = (2 * n, 2 * j0);
            let ml = m / l * l;
            let mut k0 = 0; // stays 0 (a constant) in kernels that do not pair
            if paired::<S, O>() {
                while k0 + 2 * l <= ml {
                    // SAFETY: entries `k0 .. k0 + 2l ≤ 2n` of the table were written for this chunk.
                    let (t0, t1) = unsafe { (tab.get(s, k0), tab.get(s, k0 + l)) };
                    for i in 0..H {
                        // SAFETY: values `start + k0 .. + 2l ≤ 2·half` of window `i` (and weights).
                        unsafe {
                            let at = start + k0;
                            let (p, w) = (p0.add(i * ps + at), w.wrapping_add(at));
                            let v0 = self.ld::<I, ONCE, NORM>(p, w, pre);
                            let v1 = self.ld::<I, ONCE, NORM>(p.add(l), w.wrapping_add(l), pre);
                            self.inter_pair::<I, O, ONCE>([v0, v1], q0.add(i * qs + at), [t0, t1]);
                        }
                    }
                    k0 += 2 * l;
                }
            }
            for k in (k0..ml).step_by(l) {
                // SAFETY: entries `k .. k + l ≤ 2n` of the table were written for this chunk.
                let (c, sn) = unsafe { tab.get(s, k) };
                for i in 0..H {
                    // SAFETY: values `start + k .. + l ≤ 2·half` of window `i` (and weights).
                    unsafe {
                        let at = start + k;
                        let v =
                            self.ld::<I, ONCE, NORM>(p0.add(i * ps + at), w.wrapping_add(at), pre);
                        self.inter::<I, O, ONCE>(v, q0.add(i * qs + at), c, sn);
                    }
                }
            }
            if !WHOLE && ml < m {
                // SAFETY: the table's last block covers entries up to `2n` rounded up to `l`.
                let (c, sn) = unsafe { tab.get(s, ml) };
                let at = start + ml;
                for i in 0..H {
                    // SAFETY: values `start + ml .. start + m ≤ 2·half` of window `i` (and
                    // weights): read first, then written (the same memory in place).
                    unsafe {
                        let x = core::slice::from_raw_parts(p0.add(i * ps + at), m - ml);
                        let mut v = s.load(&pad(x)[..]);
                        if NORM {
                            let ws = core::slice::from_raw_parts(w.add(at), m - ml);
                            v = self.pre::<I, ONCE>(v, s.load(&pad(ws)[..]), pre);
                        }
                        let mut out = [O::default(); MAX_LANES];
                        self.inter::<I, O, ONCE>(v, out.as_mut_ptr(), c, sn);
                        core::ptr::copy_nonoverlapping(out.as_ptr(), q0.add(i * qs + at), m - ml);
                    }
                }
            }
        } else {
            let nl = n / l * l;
            for k in (0..nl).step_by(l) {
                // SAFETY: entries `k .. k + l ≤ n` of the table were written for this chunk.
                let (c, sn) = unsafe { tab.get(s, k) };
                for i in 0..H {
                    // SAFETY: pairs `j0 + k .. + l ≤ half` of window `i`: values at `a`
                    // and `a + half`, both inside the window of `2·half` (and weights).
                    unsafe {
                        let at = j0 + k;
                        let a = p0.add(i * ps + at);
                        let x = self.ld::<I, ONCE, NORM>(a, w.wrapping_add(at), pre);
                        let y =
                            self.ld::<I, ONCE, NORM>(a.add(half), w.wrapping_add(at + half), pre);
                        let b = q0.add(i * qs + at);
                        self.half_pair::<I, O, ONCE>(x, y, b, b.add(half), c, sn);
                    }
                }
            }
            if !WHOLE && nl < n {
                // SAFETY: the table's last block covers entries up to `n` rounded up to `l`.
                let (c, sn) = unsafe { tab.get(s, nl) };
                let (at, r) = (j0 + nl, n - nl);
                for i in 0..H {
                    // SAFETY: pairs `j0 + nl .. j0 + n ≤ half` of window `i`, in its first and
                    // second half (disjoint), and their weights: read, then written.
                    unsafe {
                        let a = p0.add(i * ps + at);
                        let mut x = s.load(&pad(core::slice::from_raw_parts(a, r))[..]);
                        let mut y = s.load(&pad(core::slice::from_raw_parts(a.add(half), r))[..]);
                        if NORM {
                            let wa = core::slice::from_raw_parts(w.add(at), r);
                            let wb = core::slice::from_raw_parts(w.add(at + half), r);
                            x = self.pre::<I, ONCE>(x, s.load(&pad(wa)[..]), pre);
                            y = self.pre::<I, ONCE>(y, s.load(&pad(wb)[..]), pre);
                        }
                        let (mut oa, mut ob) =
                            ([O::default(); MAX_LANES], [O::default(); MAX_LANES]);
                        self.half_pair::<I, O, ONCE>(x, y, oa.as_mut_ptr(), ob.as_mut_ptr(), c, sn);
                        let b = q0.add(i * qs + at);
                        core::ptr::copy_nonoverlapping(oa.as_ptr(), b, r);
                        core::ptr::copy_nonoverlapping(ob.as_ptr(), b.add(half), r);
                    }
                }
            }
        }
    }

    /// [`Run::rotate`] of whole f32 windows (`WHOLE`) that each start `e = LANES/2` values past
    /// a vector boundary, as a `malloc`ed buffer's do on AVX2. Vector accesses at those
    /// addresses straddle a cache line every other vector, and each such access costs two; so
    /// every access here lies on a boundary (measured with `cargo bench --bench ratio`, whose
    /// last column times such buffers):
    ///
    /// ```text
    /// a run of m values (rotate_half: each half of the window, the same pairs; interleaved: the window)
    ///   [0, e) | [e, e + L) … [m − e − L, m − e) | [m − e, m)
    ///   piece  |  whole vectors, on boundaries    |  piece
    /// whole vectors: as `rotate`, the table loaded at their own entries (as two halves)
    /// the two pieces in one vector (`Run::ends`): lanes 0..e = values 0..e, lanes e..L = m−e..m,
    ///   each half a vector, loaded and stored on its own; its table gathered the same way
    /// ```
    ///
    /// Each value gets the operations `rotate` gives it, in another lane: the results are
    /// bitwise the same (`e` is even, so interleaved pairs stay whole).
    ///
    /// # Safety
    /// As [`Run::rotate`] with `WHOLE`; `I` and `O` are f32.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn rotate_skewed<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const H: usize,
    >(
        &self,
        p0: *const I,
        q0: *mut O,
        ps: usize,
        qs: usize,
        tab: &Tab,
    ) {
        let (s, l, half) = (self.s, S::LANES, self.half);
        let (e, m) = (l / 2, if IL { 2 * half } else { half });
        for k in (e..m - e).step_by(l) {
            // The table is aligned, so entries `k ..` (half a vector past a boundary) load as
            // two halves too: a table load here serves only `H` heads.
            // SAFETY: entries `k .. k + l ≤ m` were written for this chunk.
            let (c, sn) = unsafe { tab.get_halves(s, k, k + e) };
            for i in 0..H {
                // SAFETY: values `k .. k + l ≤ m` of window `i` (rotate_half: and `half` further).
                unsafe { self.vector::<I, O, IL, ONCE>(p0.add(i * ps), q0.add(i * qs), k, c, sn) };
            }
        }
        // SAFETY: entries `0 .. e` and `m − e .. m` were written for this chunk.
        let (c, sn) = unsafe { tab.get_halves(s, 0, m - e) };
        for i in 0..H {
            // SAFETY: window `i` (the caller's precondition), f32.
            unsafe {
                self.ends::<I, IL, ONCE>(p0.add(i * ps).cast(), q0.add(i * qs).cast(), c, sn)
            };
        }
    }

    /// Rotates the rotary windows of heads `0 .. nh` at `p0 + h·ps` into `q0 + h·qs`, every
    /// pair of each, with the chunk's table loaded into `NV` pairs of registers once for all
    /// of them:
    ///
    /// ```text
    /// c[v], s[v] = table vector v                (v < NV; interleaved: the expanded entries)
    /// for each head h:  for each v:  rotate vector v (rotate_half: v and v + half) with c[v], s[v]
    /// ```
    ///
    /// The next token's table is then computed after the last head rather than a block per
    /// head as [`Run::stream`] otherwise does: inside this loop its code took registers the
    /// heads need.
    ///
    /// # Safety
    /// The windows `p0 + h·ps .. + 2·half` (`h < nh`) are readable, `q0 + h·qs ..` writable
    /// (the same windows in place, else disjoint); `tab` holds the table of every pair of the
    /// window, and `NV · LANES` is `half` (rotate_half) or `2·half` (interleaved).
    ///
    /// `SKEW`: the windows are [`Run::rotate_skewed`]'s, vector `v` starts at `LANES/2 +
    /// v·LANES` and the last register pair holds the table of the two end pieces.
    #[inline(always)]
    unsafe fn resident<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const NV: usize,
        const SKEW: bool,
    >(
        &self,
        p0: *const I,
        q0: *mut O,
        ps: usize,
        qs: usize,
        nh: usize,
        tab: &Tab,
    ) {
        if const { split::<S, I, O, ONCE, NV, SKEW>() } {
            // SAFETY: the caller's precondition; `I` and `O` are bf16 (`split`), so the
            // windows hold bf16 values.
            unsafe {
                self.resident_split::<IL, NV>(p0.cast(), q0.cast(), ps, qs, nh, tab);
            }
            return;
        }
        let (s, l, half) = (self.s, S::LANES, self.half);
        let m = if IL { 2 * half } else { half };
        debug_assert!(NV * l == m);
        let (e, whole) = if SKEW { (l / 2, NV - 1) } else { (0, NV) };
        let (mut c, mut sn) = ([s.splat(0.0); NV], [s.splat(0.0); NV]);
        for (v, (c, sn)) in c.iter_mut().zip(&mut sn).enumerate() {
            // SAFETY: entries `e + v·LANES .. + LANES ≤ NV·LANES` (`v < whole`), and the end
            // pieces `0 .. e`, `m − e .. m`, were written for this chunk.
            (*c, *sn) = unsafe {
                if v < whole {
                    tab.get(s, e + v * l)
                } else {
                    tab.get_halves(s, 0, m - e)
                }
            };
        }
        for h in 0..nh {
            let (p, q) = (p0.wrapping_add(h * ps), q0.wrapping_add(h * qs));
            if SKEW {
                // SAFETY: the window of head `h` (the caller's precondition), f32 (`SKEW`).
                unsafe { self.ends::<I, IL, ONCE>(p.cast(), q.cast(), c[NV - 1], sn[NV - 1]) };
            }
            if IL && paired::<S, O>() {
                let mut v = 0;
                while v + 1 < whole {
                    // SAFETY: vectors `v`, `v + 1` of the window of head `h < nh`, inside it
                    // (the caller's precondition).
                    unsafe {
                        self.inter2::<I, O, ONCE>(
                            p,
                            q,
                            e + v * l,
                            [(c[v], sn[v]), (c[v + 1], sn[v + 1])],
                        )
                    };
                    v += 2;
                }
                if v < whole {
                    // SAFETY: the last vector of the window of head `h < nh`, inside it.
                    unsafe { self.vector::<I, O, IL, ONCE>(p, q, e + v * l, c[v], sn[v]) };
                }
                continue;
            }
            for (v, (&c, &sn)) in c[..whole].iter().zip(&sn[..whole]).enumerate() {
                let k = e + v * l;
                // SAFETY: vector `v` of the window of head `h < nh` (rotate_half: and its
                // partner `half` further), inside the window (the caller's precondition).
                unsafe { self.vector::<I, O, IL, ONCE>(p, q, k, c, sn) };
            }
        }
    }

    /// [`Run::resident`] of bf16 heads on a tier with [`Simd::SPLIT_BF16`]: each load takes
    /// `2·LANES` values and widens them as its even- and odd-offset values, and each store
    /// rounds two vectors and interleaves them back ([`Simd::ld_bf16_split`],
    /// [`Simd::st_bf16_merge`]), so no value is moved between lanes on the way in. The table
    /// is unzipped to match, once per token:
    ///
    /// ```text
    /// rotate_half: block b = values 2bL .. 2bL + 2L of each half (pairs (j, j + half))
    ///     (ce, co), (se, so) = unzip(c[2b], c[2b+1]), unzip(s[2b], s[2b+1])
    ///     (xe, xo), (ye, yo) = split(x[block]), split(x[half + block])
    ///     x[block]        = merge(xe·ce − ye·se, xo·co − yo·so)
    ///     x[half + block] = merge(ye·ce + xe·se, yo·co + xo·so)
    /// interleaved: block b = values 2bL .. 2bL + 2L (pairs (2j, 2j + 1))
    ///     c = even lanes of (c[2b], c[2b+1]) (the expanded cos, once per pair)
    ///     s = odd lanes of (s[2b], s[2b+1])  (the expanded sin's +sin entries)
    ///     (xe, xo) = split(x[block]);  x[block] = merge(xe·c − xo·s, xo·c + xe·s)
    /// ```
    ///
    /// Each value gets the operations [`Run::rot`] gives it on the other paths (interleaved:
    /// `fma(x1, −s, x0·c)` there is `fnmadd(x1, s, x0·c)` here, one rounding of the same
    /// exact value), so the results are bitwise those of [`Run::resident`]'s vectors. The
    /// interleaved table also shrinks from `2·NV` registers to `NV`.
    ///
    /// # Safety
    /// As [`Run::resident`] with `SKEW` false, the windows of bf16.
    #[inline(always)]
    unsafe fn resident_split<const IL: bool, const NV: usize>(
        &self,
        p0: *const half::bf16,
        q0: *mut half::bf16,
        ps: usize,
        qs: usize,
        nh: usize,
        tab: &Tab,
    ) {
        let (s, l, half) = (self.s, S::LANES, self.half);
        debug_assert!(NV * l == if IL { 2 * half } else { half } && NV.is_multiple_of(2));
        let zero = s.splat(0.0);
        // Block `b < NV / 2`: rotate_half `[ce, co, se, so]`, interleaved `[c, s, −, −]`.
        let mut t = [[zero; 4]; NV];
        for (b, t) in t.iter_mut().take(NV / 2).enumerate() {
            // SAFETY: entries `2b·LANES .. (2b + 2)·LANES ≤ NV·LANES` were written for this
            // chunk.
            let ((c0, s0), (c1, s1)) =
                unsafe { (tab.get(s, 2 * b * l), tab.get(s, (2 * b + 1) * l)) };
            let (ce, co) = s.unzip(c0, c1);
            let (se, so) = s.unzip(s0, s1);
            *t = if IL {
                [ce, so, zero, zero]
            } else {
                [ce, co, se, so]
            };
        }
        for h in 0..nh {
            let (p, q) = (p0.wrapping_add(h * ps), q0.wrapping_add(h * qs));
            for (b, t) in t.iter().take(NV / 2).enumerate() {
                let k = 2 * b * l;
                // SAFETY: values `k .. k + 2·LANES` of the window of head `h < nh`
                // (rotate_half: and `half` further) lie inside it (the caller's precondition:
                // `2·LANES·NV/2` is the window, or its first half).
                unsafe {
                    if IL {
                        let (xe, xo) = s.ld_bf16_split(p.add(k));
                        let a = self.rot::<half::bf16, true>(xe, t[0], xo, t[1], true);
                        let b = self.rot::<half::bf16, true>(xo, t[0], xe, t[1], false);
                        s.st_bf16_merge(a, b, q.add(k));
                    } else {
                        let (xe, xo) = s.ld_bf16_split(p.add(k));
                        let (ye, yo) = s.ld_bf16_split(p.add(half + k));
                        let ae = self.rot::<half::bf16, true>(xe, t[0], ye, t[2], true);
                        let ao = self.rot::<half::bf16, true>(xo, t[1], yo, t[3], true);
                        let be = self.rot::<half::bf16, true>(ye, t[0], xe, t[2], false);
                        let bo = self.rot::<half::bf16, true>(yo, t[1], xo, t[3], false);
                        s.st_bf16_merge(ae, ao, q.add(k));
                        s.st_bf16_merge(be, bo, q.add(half + k));
                    }
                }
            }
        }
    }

    /// The vector at value `k` of the window at `p` (rotate_half: and its partner `half`
    /// further) rotated with `c`, `sn` into the window at `q`.
    ///
    /// # Safety
    /// Those `LANES` values (rotate_half: both runs) lie inside both windows.
    #[inline(always)]
    unsafe fn vector<I: Element, O: Element, const IL: bool, const ONCE: bool>(
        &self,
        p: *const I,
        q: *mut O,
        k: usize,
        c: S::F,
        sn: S::F,
    ) {
        let (s, half) = (self.s, self.half);
        // SAFETY: the caller's precondition.
        unsafe {
            if IL {
                self.inter::<I, O, ONCE>(s.ld::<I>(p.add(k)), q.add(k), c, sn);
            } else {
                let (x, y) = (s.ld::<I>(p.add(k)), s.ld::<I>(p.add(half + k)));
                self.half_pair::<I, O, ONCE>(x, y, q.add(k), q.add(half + k), c, sn);
            }
        }
    }

    /// One rotate_half vector pair `x`, `y` (loaded) stored to `a` and `b`:
    /// `a = x·c − y·s`, `b = y·c + x·s`.
    ///
    /// # Safety
    /// `a`, `b` each address `LANES` writable values.
    #[inline(always)]
    unsafe fn half_pair<I: Element, O: Element, const ONCE: bool>(
        &self,
        x: S::F,
        y: S::F,
        a: *mut O,
        b: *mut O,
        c: S::F,
        sn: S::F,
    ) {
        let s = self.s;
        // SAFETY: the caller's precondition.
        unsafe {
            if paired::<S, O>() {
                let (ra, rb) = (
                    self.rot::<I, ONCE>(x, c, y, sn, true),
                    self.rot::<I, ONCE>(y, c, x, sn, false),
                );
                s.st2::<O>(ra, a, rb, b);
            } else {
                s.st::<O>(self.rot::<I, ONCE>(x, c, y, sn, true), a);
                s.st::<O>(self.rot::<I, ONCE>(y, c, x, sn, false), b);
            }
        }
    }

    /// The two end pieces of a skewed window (see [`Run::rotate_skewed`]) in one vector,
    /// `c`, `sn` their table: each piece half a vector, loaded and stored on its own.
    ///
    /// # Safety
    /// `p .. p + 2·half` is a readable f32 window, `q ..` the same window or a disjoint
    /// writable one; `I` is f32 (it names the rounding of the HF modes).
    #[inline(always)]
    unsafe fn ends<I: Element, const IL: bool, const ONCE: bool>(
        &self,
        p: *const f32,
        q: *mut f32,
        c: S::F,
        sn: S::F,
    ) {
        let (s, half) = (self.s, self.half);
        let e = S::LANES / 2;
        debug_assert!(I::DTYPE == Dtype::F32);
        // SAFETY: every piece lies inside the window (`e ≤ half`; the caller's precondition).
        unsafe {
            if IL {
                let m = 2 * half;
                let v = s.ld_f32_halves(p, p.add(m - e));
                let r = self.rot::<I, ONCE>(v, c, s.swap_pairs(v), sn, false);
                s.st_f32_halves(r, q, q.add(m - e));
            } else {
                let x = s.ld_f32_halves(p, p.add(half - e));
                let y = s.ld_f32_halves(p.add(half), p.add(2 * half - e));
                let a = self.rot::<I, ONCE>(x, c, y, sn, true);
                let b = self.rot::<I, ONCE>(y, c, x, sn, false);
                s.st_f32_halves(a, q, q.add(half - e));
                s.st_f32_halves(b, q.add(half), q.add(2 * half - e));
            }
        }
    }

    /// One interleaved vector `v` (loaded) with expanded tables, `v·c + swap_pairs(v)·s`,
    /// stored to `q`.
    ///
    /// # Safety
    /// `q .. q + LANES` is writable.
    #[inline(always)]
    unsafe fn inter<I: Element, O: Element, const ONCE: bool>(
        &self,
        v: S::F,
        q: *mut O,
        c: S::F,
        sn: S::F,
    ) {
        let s = self.s;
        // SAFETY: the caller's precondition.
        unsafe { s.st::<O>(self.rot::<I, ONCE>(v, c, s.swap_pairs(v), sn, false), q) };
    }

    /// Interleaved vectors `k` and `k + LANES` of the window at `p`, rotated with their tables
    /// `t` (`(c, s)` each) into the window at `q` (see [`Run::inter_pair`]).
    ///
    /// # Safety
    /// Values `k .. k + 2·LANES` lie inside both windows.
    #[inline(always)]
    unsafe fn inter2<I: Element, O: Element, const ONCE: bool>(
        &self,
        p: *const I,
        q: *mut O,
        k: usize,
        t: [(S::F, S::F); 2],
    ) {
        let (s, l) = (self.s, S::LANES);
        // SAFETY: the caller's precondition.
        unsafe {
            let v = [s.ld::<I>(p.add(k)), s.ld::<I>(p.add(k + l))];
            self.inter_pair::<I, O, ONCE>(v, q.add(k), t);
        }
    }

    /// Two consecutive interleaved vectors `v` (loaded), each [`Run::inter`] with its table
    /// `t[i]` = `(c, s)`, stored to `q` and `q + LANES` with one [`Simd::st2_joined`]: for a bf16
    /// destination that shares the rounding's test between them (see [`paired`]).
    ///
    /// # Safety
    /// `q .. q + 2·LANES` is writable.
    #[inline(always)]
    unsafe fn inter_pair<I: Element, O: Element, const ONCE: bool>(
        &self,
        v: [S::F; 2],
        q: *mut O,
        t: [(S::F, S::F); 2],
    ) {
        let s = self.s;
        let r0 = self.rot::<I, ONCE>(v[0], t[0].0, s.swap_pairs(v[0]), t[0].1, false);
        let r1 = self.rot::<I, ONCE>(v[1], t[1].0, s.swap_pairs(v[1]), t[1].1, false);
        // SAFETY: the caller's precondition.
        unsafe { s.st2_joined::<O>(r0, r1, q) };
    }

    /// `x·c ∓ y·s` (`minus` picks the sign; interleaved tables carry it in `s`). Every layout
    /// forms exactly these expressions per pair, which keeps the layouts bitwise equivalent.
    /// `ONCE`: posenc's rounding (fused where the tier fuses); otherwise HF's unfused f32
    /// arithmetic, with (`HfEager`) or without (`HfUpcast`) rounding to the source type `T` in between.
    #[inline(always)]
    fn rot<T: Element, const ONCE: bool>(
        &self,
        x: S::F,
        c: S::F,
        y: S::F,
        sn: S::F,
        minus: bool,
    ) -> S::F {
        let s = self.s;
        let xc = s.mul(x, c);
        if ONCE {
            return if minus {
                s.neg_mul_add(y, sn, xc)
            } else {
                s.mul_add(y, sn, xc)
            };
        }
        let (xc, ys) = match self.round {
            Rounding::HfEager => (s.round_to::<T>(xc), s.round_to::<T>(s.mul(y, sn))),
            _ => (xc, s.mul(y, sn)),
        };
        let v = if minus { s.sub(xc, ys) } else { s.add(xc, ys) };
        // Both HF modes end in the source type (HF's output tensor); a store to another type
        // (rotate-into) then converts that value, as HF's cache write does. In place the store
        // to `T` rounds the same value again, which changes nothing.
        s.round_to::<T>(v)
    }
}

/// Whether a kernel of tier `S` from `I` to `O` (`WHOLE`: of whole windows) can take the skewed
/// loops ([`Run::rotate_skewed`]). A constant, tested as one (`const { … }`) where those loops
/// are called: the kernels that can never take them then do not contain them, which keeps
/// their instantiations out of every other dtype pair's and tier's build.
const fn skewable<S: Simd, I: Element, O: Element, const WHOLE: bool>() -> bool {
    WHOLE && S::HALVES && matches!(I::DTYPE, Dtype::F32) && matches!(O::DTYPE, Dtype::F32)
}

/// Item `i`'s table (`cur`, complete) and the one the next item's is computed into: the two
/// tables take turns.
#[inline(always)]
fn alternate(tabs: &mut [Tab; 2], i: usize) -> (&Tab, &mut Tab) {
    let (a, b) = tabs.split_at_mut(1);
    if i.is_multiple_of(2) {
        (&a[0], &mut b[0])
    } else {
        (&b[0], &mut a[0])
    }
}

/// Whether the f32 window at address `at` starts half a vector of `S` past a vector boundary,
/// and `strides` (in values) keep every other window of the view there too.
#[inline(always)]
fn half_skewed<S: Simd>(at: usize, strides: [usize; 2]) -> bool {
    let v = S::LANES * size_of::<f32>();
    at % v == v / 2 && strides.iter().all(|s| s.is_multiple_of(S::LANES))
}

/// The RMSNorm factor `1 / sqrt(mean + eps)` of `n` values whose squares sum to `sum`: the
/// mean rounded once to f32 (`sum` carries every square exactly, in f64), then HF's f32
/// arithmetic (`torch.rsqrt` is `1 / sqrt`, two roundings).
#[inline(always)]
fn scale(sum: f64, n: usize, eps: f32) -> f32 {
    let mean = (sum / n as f64) as f32;
    1.0 / super::math::sqrt_f32(mean + eps)
}

/// The kernel's own bounds checks, against the API layer's validation: they must refuse what
/// it refuses, or the kernel's pointers could leave their buffer. The public API never lets
/// such a call through, so only these tests reach the refusing side.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::job::Angles;
    use crate::types::Layout;
    extern crate std;

    fn job(
        first: usize,
        tokens: usize,
        offset: usize,
        rotary_dim: usize,
        head_dim: usize,
    ) -> Job<'static> {
        Job {
            first,
            tokens,
            offset,
            rotary_dim,
            head_dim,
            layout: Layout::RotateHalf,
            angles: Angles::Table {
                cos: &[],
                sin: &[],
                cs: 1.0,
                ss: 1.0,
            },
            round: Rounding::Once,
        }
    }

    /// The same statement in u128, where nothing overflows: the window lies in the head, and
    /// the last element of the last head of the last token is inside the buffer.
    fn truth(v: &View, j: &Job<'_>, len: usize) -> bool {
        let w = |x: usize| x as u128;
        match end(v, j) {
            None => true,
            Some(end) => w(j.offset) + w(j.rotary_dim) <= w(j.head_dim) && end <= w(len),
        }
    }

    /// One past the last element of the last head the job touches (`None`: it touches none).
    fn end(v: &View, j: &Job<'_>) -> Option<u128> {
        if j.tokens == 0 || v.n_heads == 0 {
            return None;
        }
        let w = |x: usize| x as u128;
        Some(
            w(v.offset)
                + w(j.first + j.tokens - 1) * w(v.token_stride)
                + w(v.n_heads - 1) * w(v.head_stride)
                + w(j.head_dim),
        )
    }

    #[test]
    fn in_bounds_is_exactly_the_last_head_inside() {
        let big = usize::MAX / 3;
        let mut checked = 0;
        for n_heads in [0, 1, 3] {
            for (first, tokens) in [(0, 0), (0, 1), (0, 4), (5, 2), (big, 2)] {
                for (ts, hs) in [(0, 0), (8, 8), (24, 8), (8, 0), (big, 1), (1, big)] {
                    for vo in [0, 3, big] {
                        for (jo, rd, hd) in [(0, 8, 8), (2, 4, 8), (2, 8, 8), (0, 2, 4)] {
                            let v = View {
                                n_heads,
                                token_stride: ts,
                                head_stride: hs,
                                offset: vo,
                            };
                            let j = job(first, tokens, jo, rd, hd);
                            // Lengths around the exact end, and the extremes.
                            let end =
                                end(&v, &j).map_or(0, |e| usize::try_from(e).unwrap_or(usize::MAX));
                            for len in [
                                0,
                                1,
                                end.saturating_sub(1),
                                end,
                                end.saturating_add(1),
                                usize::MAX,
                            ] {
                                assert_eq!(
                                    in_bounds(&v, &j, len),
                                    truth(&v, &j, len),
                                    "{v:?} {first} {tokens} {jo} {rd} {hd} len {len}"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 1000);
    }

    #[test]
    fn a_norm_weight_covers_a_head_or_a_row() {
        let w = [1.0f32; 24];
        let norm = |kind, n| Norm {
            kind,
            weight: &w[..n],
            eps: 1e-6,
        };
        for kind in [NormKind::Head, NormKind::HeadOnePlus] {
            assert!(weight_fits(&norm(kind, 8), 3, 8));
            assert!(!weight_fits(&norm(kind, 7), 3, 8));
        }
        assert!(weight_fits(&norm(NormKind::Row, 24), 3, 8));
        assert!(!weight_fits(&norm(NormKind::Row, 23), 3, 8));
        assert!(!weight_fits(&norm(NormKind::Row, 24), 4, 8));
        assert!(!weight_fits(&norm(NormKind::Row, 24), usize::MAX, 2));
    }
}
