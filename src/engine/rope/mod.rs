//! The RoPE driver: one streaming loop for every tier, layout, dtype pair, angle source and
//! rounding mode. It reads the heads of a source buffer of `I` and writes the heads of a
//! destination of `O`: in place, both are the same buffer and view; rotate-into (a KV-cache
//! slot) has two, and then the channels outside the rotary window are converted too. With a
//! norm (QK-norm), each head (or each token's row of heads) is RMS-normalised as it is loaded:
//! `r` from one read of the head, then the rotation reads it again, normalising each vector.
//!
//! ```text
//! items = (token t, chunk of ≤ CHUNK pairs), in memory order    // one chunk per token up to head_dim 256
//! table[0] = angles of item 0           // unless every token's row is a caller's, read where it lies
//! whole heads of 2, 4 or 8 table vectors (f32: 3, 6, on x86 16 too; see below): // `stream_resident`
//!     for each token t:                                              // one loop, skew settled per call
//!         for each target buffer, each view of heads:
//!             load table[t] into registers; rotate every head with them
//!         compute table[t + 1]
//!     (with a head's norm, the same sizes: every head's sum of squares of a group of 16, //  `normed_tokens`
//!      then each head normalised as it is loaded, the weights in registers too)
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
//! * When a token's table is 2, 4 or 8 vectors and the window a whole number of them
//!   (head_dim 128: rotate_half on both x86 tiers, interleaved on AVX-512), the table is
//!   loaded into registers once per token and every head of the view is rotated from them,
//!   the next table computed after the last head (`Run::resident`). A caller's table that
//!   needs no scaling and starts on a vector boundary is not copied at all: each token's row
//!   is loaded where it lies, an interleaved one expanded in registers (`cargo bench --bench
//!   bare`, `posenc_rh` and `posenc_il` on both x86 tiers; a rotate_half table off the
//!   boundary lost that way in `--bench ratio`, and is copied).
//!   f32 heads of 96 (3 and 6 vectors on AVX-512, 6 on AVX2) do the same, where the passes
//!   below took half again as long in cache and at decode (`cargo bench --bench ratio --
//!   heads`); the 16-bit kernels leave those sizes out, since built in they slowed the
//!   AVX512-BF16 rotate_half loop at 128 that shares their function. f32 tables of 16
//!   vectors on the x86 tiers (AVX2: interleaved at 128, rotate_half at 256; AVX-512:
//!   interleaved at 256) take the same loop with the table (partly) on the stack: it loads no
//!   more per vector than the passes do and saves their per-head work (`cargo bench --bench
//!   ratio -- heads`, both tiers).
//!   Those calls take a token loop of their own (`Run::stream_resident`), with the views'
//!   skew settled once and, for a single view, only its pointers advanced per token: inside
//!   the general loop below, the per-token work stalled the head loops around it (`cargo
//!   bench --bench bare`, posenc against the same head loop written bare).
//!   That won for f32 sources in cache in both layouts, decode included, and past the caches
//!   too, in place (`cargo bench --bench ratio -- heads`, 2048 tokens, and the 4096-token
//!   rows) and into a 16-bit cache (`cargo bench --bench fused -- into`, 4096 tokens), both
//!   x86 tiers. For 16-bit sources it won at every size where the table takes at most half
//!   the registers (head_dim 128 on AVX-512, 64 on AVX2: `cargo bench --bench ratio`, the
//!   4096-token bf16 and f16 rows, whose widening and rounding keep them from being bound by
//!   memory alone);
//!   with AVX2's 16 registers, 16-bit rotate_half at head_dim 128 (a table of 16) measured
//!   worse than two heads per pass. The rest keep the passes below.
//! * A head's norm (QK-norm) over whole windows of those sizes, under posenc's rounding, takes
//!   a token loop of its own (`Run::normed_tokens`), the table and the norm's weights in
//!   registers, 16-bit heads too
//!   whatever the register file: in the general loop below, with the table and weights loaded
//!   per vector, QK-norm + RoPE took longer in cache and past the caches on both x86 tiers
//!   (`cargo bench --bench fused -- qknorm`).
//! * `H`, heads per pass sharing each table load: 4 for a single token (decode: everything in
//!   L1, where table loads are a large share of all loads). Streaming, 1 for interleaved (two
//!   interleaved heads per pass lost at 512–4096 tokens, and gained nothing at 64 on AVX2:
//!   `cargo bench --bench align`; 16-bit ones lost past the caches on AVX-512 too, `cargo
//!   bench --bench ratio -- heads`) except f32 in cache on AVX-512, whose heads of 256 gained
//!   with 2 (`-- heads`), and 2 for rotate_half, except that a call reading f32 heads takes 1
//!   once its data outgrows the caches
//!   ([`IN_CACHE_BYTES`](stream::IN_CACHE_BYTES)): two f32 heads per pass won up to 512 tokens × 32 heads but lost
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
//!   halves cost what the split data accesses did. On AVX-512 the loops that hold the table
//!   in registers also take windows a quarter or three quarters of a vector before a boundary
//!   (16 or 48 bytes past a cache line: `malloc`'s large blocks, a Rust `Vec`), their end
//!   pieces moved a quarter vector at a time (`Simd::QUARTERS`; `--bench align`, +16 B and
//!   +48 B against +0 B).
//! * A bf16 destination on a tier whose rounding tests each vector (AVX512-BF16 for
//!   subnormals, NEON without FEAT_BF16 for NaNs: `Simd::BF16_PAIR`) is written two vectors at a time (a
//!   rotate_half pair, two interleaved vectors) through one `Simd::st2`, which makes that test
//!   once for both (`cargo bench --bench ratio`, the bf16 rows; `benches/mca/neon.py`).
//! * bf16 heads held against a table in registers, on a tier with `Simd::SPLIT_BF16`
//!   (AVX512-BF16; AVX2, whose registers hold the table of heads of 64 in rotate_half and 32
//!   interleaved), load `2·LANES` values at a time and widen them as their even- and
//!   odd-offset values where they lie (a shift and a mask, no shuffle), rotate those against
//!   the table unzipped once per token, and round two vectors back with one conversion and
//!   one word permute (AVX2: the integer rounding, a shift and a `vpblendw`;
//!   `Run::resident_split`). Faster than a widening shuffle per vector in both layouts, in
//!   cache and at decode (`cargo bench --bench ratio`, the bf16 rows; on AVX2 a probe of
//!   `Rope::apply` at those head sizes, `benches/LOG.md` 2026-12-04 late night).
//! * On a tier with `Simd::SPLIT_BF16_STREAM` (AVX2), the streaming loops do the same with
//!   the table in memory: the angle blocks write it in the order of the heads' even and odd
//!   values once per token (a split `Tab`), so each table load serves a group of heads as it
//!   is (`Run::rotate_split`). There the widening and narrowing shuffles share ports with the
//!   integer rounding's shifts (`cargo bench --bench ratio` with
//!   `POSENC_BENCH_BACKEND=avx2`, the bf16 rows). Unzipping a table in memory per block for
//!   the heads of a pass instead lost on AVX-512 and gained little on AVX2.
//! * Per-head work is small (16 vectors at head_dim 128 on AVX2), so the loops walk raw
//!   pointers inside windows proven in bounds once per view ([`in_bounds`]).
//!
//! Every pair gets the same operations whatever the tier's width, the head grouping or the
//! position in a vector (tails are padded, not special-cased): on one tier, interleaved and
//! rotate_half are bitwise the same rotation, and results do not depend on how a call is split.

mod heads;
mod norm;
mod normed;
mod run;
mod stream;

use super::angles::{CHUNK, Padded, Source, interleaved};
use super::dispatch::dispatch;
use super::job::{Job, Norm, NormKind, Target};
use super::vector::{Kernel, MAX_LANES, Simd};
use crate::element::{Dtype, Element};
use crate::types::{Backend, Rounding, View};
use core::mem::MaybeUninit;
use run::Run;

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
/// on every tier. A norm (QK-norm) runs in the general-shape kernels, `WHOLE` = false: a
/// head's norm over whole windows whose table a register loop holds, under posenc's rounding,
/// in its own token loop there (`Run::normed_tokens`), any other as a branch per head of the
/// general loop, rather
/// than in kernels of its own: a constant would double the kernels.
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
            // A norm runs in the general-shape kernels only (see `rotate_as`).
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
