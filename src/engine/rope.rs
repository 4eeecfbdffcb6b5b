//! The RoPE driver: one streaming loop for every tier, layout, dtype, angle source and
//! rounding mode.
//!
//! ```text
//! items = (token t, chunk of ≤ CHUNK pairs), in memory order    // one chunk per token up to head_dim 256
//! table[0] = angles of item 0
//! for each item i:
//!     for each target buffer, each view of heads, H heads at a time:
//!         rotate pairs of the chunk in those H heads with table[i]   // a table vector is loaded once for H heads
//!         compute one block of table[i + 1]                          // in the shadow of the memory stream
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
//! * `H`, heads per pass sharing each table load: 4 for a single token (decode: everything in
//!   L1, where table loads are a large share of all loads); 2 for rotate_half and 1 for
//!   interleaved when streaming (two interleaved heads per pass lost at 512–4096 tokens).
//!   Re-laying interleaved pairs in registers to share rotate_half's tables cost more
//!   shuffles than the table loads it saves.
//! * The next token's table is computed one block after each pass, behind the memory stream,
//!   instead of stalling the stream once per token. Spreading it differently, splitting a
//!   single token's table in two, software prefetch and fully unrolled heads measured no
//!   better.
//! * Per-head work is small (16 vectors at head_dim 128 on AVX2), so the loops walk raw
//!   pointers inside windows proven in bounds once per view ([`in_bounds`]).
//!
//! Every pair gets the same operations whatever the tier's width, the head grouping or the
//! position in a vector (tails are padded, not special-cased): on one tier, interleaved and
//! rotate_half are bitwise the same rotation, and results do not depend on how a call is split.

use super::angles::{CHUNK, Padded, Source, Tab, interleaved};
use super::dispatch::dispatch;
use super::job::{Job, Target};
use super::vector::{Kernel, MAX_LANES, Simd, pad};
use crate::element::{Dtype, Element};
use crate::types::{Backend, Rounding, View};
use core::mem::MaybeUninit;

/// Rotates `targets` as `job` says (validated by the API layer) on `backend`.
///
/// The kernels are instantiated once per dtype, here in posenc (`rotate_f32`, …): a generic
/// entry point would otherwise compile every tier's variants into each crate that calls it
/// (every test binary, every user crate), which dominated `cargo test`'s build time.
#[inline]
pub(crate) fn rotate<T: Element>(backend: Backend, targets: &mut [Target<'_, T>], job: Job<'_>) {
    match T::DTYPE {
        Dtype::F32 => rotate_f32(backend, retype_targets(targets), job),
        Dtype::F16 => rotate_f16(backend, retype_targets(targets), job),
        Dtype::Bf16 => rotate_bf16(backend, retype_targets(targets), job),
    }
}

#[inline(never)]
fn rotate_f32(backend: Backend, targets: &mut [Target<'_, f32>], job: Job<'_>) {
    rotate_as(backend, targets, job)
}

#[inline(never)]
fn rotate_f16(backend: Backend, targets: &mut [Target<'_, half::f16>], job: Job<'_>) {
    rotate_as(backend, targets, job)
}

#[inline(never)]
fn rotate_bf16(backend: Backend, targets: &mut [Target<'_, half::bf16>], job: Job<'_>) {
    rotate_as(backend, targets, job)
}

/// `targets` as targets of `U`, which `T` is (see `vector::retype`).
#[inline(always)]
fn retype_targets<'a, 'b, T: Element, U: Element>(
    targets: &'a mut [Target<'b, T>],
) -> &'a mut [Target<'b, U>] {
    assert!(T::DTYPE == U::DTYPE);
    // SAFETY: `T` and `U` are the same type (one `Element` per dtype), so `Target<'b, T>` and
    // `Target<'b, U>` are the same type too; the length and borrow carry over.
    unsafe { core::slice::from_raw_parts_mut(targets.as_mut_ptr().cast(), targets.len()) }
}

/// [`rotate`] for one dtype. Layout, rounding and the common shape (one chunk of whole vectors per token) are chosen
/// here, before dispatch, as constants of the kernel: each combination is its own
/// `#[target_feature]` instantiation, so the inner loops test none of them, and each function
/// stays small enough to keep its values in registers (one function holding every variant
/// measured slower in `cargo bench --bench ratio`, and its debug-build frame outgrew a rayon
/// worker's stack). `WHOLE` is decided against `MAX_LANES`, so it holds on every tier.
fn rotate_as<T: Element>(backend: Backend, targets: &mut [Target<'_, T>], job: Job<'_>) {
    let half = job.rotary_dim / 2;
    let whole = half <= CHUNK && half.is_multiple_of(MAX_LANES);
    macro_rules! go {
        ($il:literal, $once:literal, $whole:literal) => {
            dispatch(backend, Rotate::<T, $il, $once, $whole> { targets, job })
        };
    }
    match (interleaved(job.layout), job.round == Rounding::Once, whole) {
        (true, true, true) => go!(true, true, true),
        (false, true, true) => go!(false, true, true),
        (true, true, false) => go!(true, true, false),
        (false, true, false) => go!(false, true, false),
        (true, false, _) => go!(true, false, false),
        (false, false, _) => go!(false, false, false),
    }
}

/// The RoPE kernel for one layout (`IL`: interleaved), rounding (`ONCE`: posenc's) and shape
/// (`WHOLE`: one chunk of whole vectors per token); see [`rotate`].
pub(crate) struct Rotate<'a, 'b, T, const IL: bool, const ONCE: bool, const WHOLE: bool> {
    pub targets: &'a mut [Target<'b, T>],
    pub job: Job<'a>,
}

impl<T: Element, const IL: bool, const ONCE: bool, const WHOLE: bool> Kernel
    for Rotate<'_, '_, T, IL, ONCE, WHOLE>
{
    type Output = ();
    const ROUNDS_TO_BF16: bool = matches!(T::DTYPE, Dtype::Bf16);

    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let job = self.job;
        let half = job.rotary_dim / 2;
        if job.tokens == 0 || half == 0 {
            return;
        }
        for t in self.targets.iter() {
            for v in t.views {
                // The API layer validated every view; the loops below rely on it for raw
                // pointer arithmetic, so it is proven again here, once per view.
                assert!(in_bounds(v, &job, t.x.len()));
            }
        }
        let mut scratch = MaybeUninit::<Padded>::uninit();
        let src = Source::new(s, &job.angles, half, job.round, &mut scratch);
        let run = Run {
            s,
            src: &src,
            first: job.first,
            offset: job.offset,
            tokens: job.tokens,
            half,
            chunks: half.div_ceil(CHUNK),
            round: job.round,
        };
        run.stream::<T, IL, ONCE, WHOLE>(self.targets);
    }
}

/// Whether every rotary window `job` touches in view `v` lies inside a buffer of `len`
/// elements. Windows start at `v.offset + job.offset + t·token_stride + h·head_stride` for
/// tokens `t` in `job.first .. job.first + job.tokens` and are `rotary_dim` long; strides are
/// unsigned, so the last window ends furthest, and checking it (without overflow) proves
/// every pointer the loops form stays inside the buffer.
#[inline(always)]
fn in_bounds(v: &View, job: &Job<'_>, len: usize) -> bool {
    if job.tokens == 0 || v.n_heads == 0 {
        return true; // no window: the loops form no pointer for this view
    }
    let end = (job.first.checked_add(job.tokens - 1))
        .and_then(|t| t.checked_mul(v.token_stride))
        .and_then(|a| {
            (v.n_heads - 1)
                .checked_mul(v.head_stride)
                .and_then(|b| a.checked_add(b))
        })
        .and_then(|a| a.checked_add(v.offset))
        .and_then(|a| a.checked_add(job.offset))
        .and_then(|a| a.checked_add(job.rotary_dim));
    end.is_some_and(|e| e <= len)
}

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
    fn stream<T: Element, const IL: bool, const ONCE: bool, const WHOLE: bool>(
        &self,
        targets: &mut [Target<'_, T>],
    ) {
        let items = self.tokens * self.chunks;
        let mut tabs = [Tab::new(), Tab::new()];
        self.complete::<T, IL, ONCE>(&mut self.pending(0, &mut tabs[0]));
        let single = self.tokens == 1;
        for i in 0..items {
            let (a, b) = tabs.split_at_mut(1);
            let (cur, nxt) = if i % 2 == 0 {
                (&a[0], &mut b[0])
            } else {
                (&b[0], &mut a[0])
            };
            let mut next = self.pending(i + 1, nxt);
            let (t, j0, n) = self.item(i);
            for target in targets.iter_mut() {
                let x = target.x.as_mut_ptr();
                for v in target.views.iter().filter(|v| v.n_heads > 0) {
                    let (nh, hs) = (v.n_heads, v.head_stride);
                    let at = v.offset + self.offset + (self.first + t) * v.token_stride;
                    // SAFETY: `in_bounds` proved every window of every token of this view lies
                    // in `target.x`; `at` is the window of head 0 of token `first + t`.
                    let base = unsafe { x.add(at) };
                    let mut h = 0;
                    if single {
                        while h + 4 <= nh {
                            let p = base.wrapping_add(h * hs);
                            // SAFETY: (this call and the two below) heads `h .. h + H ≤
                            // n_heads` of token `t` are windows proven in bounds, and `rotate`
                            // stays inside pairs `j0 .. j0 + n ≤ half` of each; `cur` holds
                            // the item's table.
                            unsafe { self.rotate::<T, IL, ONCE, WHOLE, 4>(p, hs, j0, n, cur) };
                            self.advance::<T, IL, ONCE>(&mut next);
                            h += 4;
                        }
                    }
                    if !IL || single {
                        while h + 2 <= nh {
                            let p = base.wrapping_add(h * hs);
                            // SAFETY: as above.
                            unsafe { self.rotate::<T, IL, ONCE, WHOLE, 2>(p, hs, j0, n, cur) };
                            self.advance::<T, IL, ONCE>(&mut next);
                            h += 2;
                        }
                    }
                    while h < nh {
                        let p = base.wrapping_add(h * hs);
                        // SAFETY: as above.
                        unsafe { self.rotate::<T, IL, ONCE, WHOLE, 1>(p, hs, j0, n, cur) };
                        self.advance::<T, IL, ONCE>(&mut next);
                        h += 1;
                    }
                }
            }
            self.complete::<T, IL, ONCE>(&mut next);
        }
    }

    /// Computes what is left of `next`.
    #[inline(always)]
    fn complete<T: Element, const IL: bool, const ONCE: bool>(&self, next: &mut Pending<'_>) {
        while next.done < next.blocks {
            self.advance::<T, IL, ONCE>(next);
        }
    }

    /// Rotates pairs `j0 .. j0 + n` of the `H` rotary windows at `p0 + i·hs` (`i < H`) with
    /// the chunk's table; each table vector is loaded once for all of them.
    ///
    /// `WHOLE`: the chunk is the whole window and a whole number of vectors (no tail).
    ///
    /// # Safety
    /// `p0 + i·hs .. p0 + i·hs + 2·half` (`i < H`) are writable windows; `j0 + n ≤ half`;
    /// `tab` holds the table of this chunk (`n` pairs).
    #[inline(always)]
    unsafe fn rotate<
        T: Element,
        const IL: bool,
        const ONCE: bool,
        const WHOLE: bool,
        const H: usize,
    >(
        &self,
        p0: *mut T,
        hs: usize,
        j0: usize,
        n: usize,
        tab: &Tab,
    ) {
        let (s, l, half) = (self.s, S::LANES, self.half);
        let (j0, n) = if WHOLE { (0, half) } else { (j0, n) };
        if IL {
            let (m, start) = (2 * n, 2 * j0);
            let ml = m / l * l;
            for k in (0..ml).step_by(l) {
                // SAFETY: entries `k .. k + l ≤ 2n` of the table were written for this chunk.
                let (c, sn) = unsafe { tab.get(s, k) };
                for i in 0..H {
                    // SAFETY: values `start + k .. + l ≤ 2·half` of window `i`.
                    unsafe { self.inter::<T, ONCE>(p0.add(i * hs + start + k), c, sn) };
                }
            }
            if !WHOLE && ml < m {
                // SAFETY: the table's last block covers entries up to `2n` rounded up to `l`.
                let (c, sn) = unsafe { tab.get(s, ml) };
                for i in 0..H {
                    // SAFETY: values `start + ml .. start + m ≤ 2·half` of window `i`.
                    let x = unsafe {
                        core::slice::from_raw_parts_mut(p0.add(i * hs + start + ml), m - ml)
                    };
                    let mut buf = pad(x);
                    // SAFETY: `buf` holds `MAX_LANES ≥ l` values.
                    unsafe { self.inter::<T, ONCE>(buf.as_mut_ptr(), c, sn) };
                    x.copy_from_slice(&buf[..m - ml]);
                }
            }
        } else {
            let nl = n / l * l;
            for k in (0..nl).step_by(l) {
                // SAFETY: entries `k .. k + l ≤ n` of the table were written for this chunk.
                let (c, sn) = unsafe { tab.get(s, k) };
                for i in 0..H {
                    // SAFETY: pairs `j0 + k .. + l ≤ half` of window `i`: values at `a`
                    // and `a + half`, both inside the window of `2·half`.
                    unsafe {
                        let a = p0.add(i * hs + j0 + k);
                        self.half_pair::<T, ONCE>(a, a.add(half), c, sn);
                    }
                }
            }
            if !WHOLE && nl < n {
                // SAFETY: the table's last block covers entries up to `n` rounded up to `l`.
                let (c, sn) = unsafe { tab.get(s, nl) };
                for i in 0..H {
                    // SAFETY: pairs `j0 + nl .. j0 + n ≤ half` of window `i`, in its first and
                    // second half (disjoint).
                    let (a, b) = unsafe {
                        let a = p0.add(i * hs + j0 + nl);
                        (
                            core::slice::from_raw_parts_mut(a, n - nl),
                            core::slice::from_raw_parts_mut(a.add(half), n - nl),
                        )
                    };
                    let (mut ab, mut bb) = (pad(a), pad(b));
                    // SAFETY: each buffer holds `MAX_LANES ≥ l` values.
                    unsafe {
                        self.half_pair::<T, ONCE>(ab.as_mut_ptr(), bb.as_mut_ptr(), c, sn);
                    }
                    a.copy_from_slice(&ab[..n - nl]);
                    b.copy_from_slice(&bb[..n - nl]);
                }
            }
        }
    }

    /// One rotate_half vector pair at `a` and `b`: `a' = a·c − b·s`, `b' = b·c + a·s`.
    ///
    /// # Safety
    /// `a`, `b` each address `LANES` writable values.
    #[inline(always)]
    unsafe fn half_pair<T: Element, const ONCE: bool>(
        &self,
        a: *mut T,
        b: *mut T,
        c: S::F,
        sn: S::F,
    ) {
        let s = self.s;
        // SAFETY: the caller's precondition.
        unsafe {
            let (x, y) = (s.ld::<T>(a), s.ld::<T>(b));
            s.st::<T>(self.rot::<T, ONCE>(x, c, y, sn, true), a);
            s.st::<T>(self.rot::<T, ONCE>(y, c, x, sn, false), b);
        }
    }

    /// One interleaved vector at `x` with expanded tables: `x·c + swap_pairs(x)·s`.
    ///
    /// # Safety
    /// `x .. x + LANES` is writable.
    #[inline(always)]
    unsafe fn inter<T: Element, const ONCE: bool>(&self, x: *mut T, c: S::F, sn: S::F) {
        let s = self.s;
        // SAFETY: the caller's precondition.
        unsafe {
            let v = s.ld::<T>(x);
            s.st::<T>(self.rot::<T, ONCE>(v, c, s.swap_pairs(v), sn, false), x);
        }
    }

    /// `x·c ∓ y·s` (`minus` picks the sign; interleaved tables carry it in `s`). Every layout
    /// forms exactly these expressions per pair, which keeps the layouts bitwise equivalent.
    /// `ONCE`: posenc's rounding (fused where the tier fuses); otherwise HF's unfused f32
    /// arithmetic, with (`HfEager`) or without (`HfUpcast`) rounding to `T` in between.
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
        match self.round {
            Rounding::HfEager => s.round_to::<T>(v),
            _ => v,
        }
    }
}
