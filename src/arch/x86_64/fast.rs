//! The RoPE fast path of the x86 tiers: the common case (angles from `inv_freq` at one
//! position per token, single rounding, every head a whole number of vectors), with loop
//! choices measured on an AVX2 Zen 3 (ratios to the in-place ceiling, f32, 32 heads × 128):
//!
//! * Heads in memory order. Visiting heads inner-most, block by block, keeps cos/sin in
//!   registers but measured 0.59–0.75 against 0.82–0.96 in memory order at 64–4096 tokens
//!   (the hardware prefetchers want the stream), and was no faster at decode.
//! * rotate_half: two heads per pass, sharing each table load (a head is only 16 vectors
//!   at head_dim 128 on AVX2, so table loads are otherwise half of all loads).
//!   Interleaved: one head per pass; two measured 2× slower at 4096 tokens and no faster
//!   elsewhere. At decode (one token, in L1) both layouts take four heads per pass, sharing
//!   each table load (five alternating runs of the two builds, ceiling/rope): interleaved
//!   f32 0.43–0.47 against 0.38–0.44 with two, f16 0.72–0.76 against 0.60–0.66;
//!   rotate_half f32 unchanged (0.54–0.56), bf16 0.79–0.81 against 0.75–0.79, f16
//!   0.78–0.80 against 0.74–0.76. (De-interleaving in registers so that interleaved could
//!   use rotate_half's per-pair tables was tried too: four shuffles per two vectors cost
//!   more than the table loads they save.)
//! * The next token's table is computed one block after each pass, in the shadow of the
//!   memory stream, instead of stalling it once per token. A single token (decode) has no
//!   next token; splitting it into two passes over its pairs, to compute the second half of
//!   its table behind the first, measured slower (rotate_half 9.5 → 11.5 ns per token-head).
//!   Also slower or no better: software prefetch 1–4 KiB ahead (better at 4096 tokens,
//!   worse at 64–512), fully unrolled loops for head_dim 128, two cos/sin blocks computed as
//!   interleaved chains.
//! * What that table costs at 64–512 tokens: about what computing it alone costs
//!   (`fill_cos_sin`, ~3 ns per token-head, the exact-angle contract's f64 reduction), and
//!   no placement hides it. A build that never recomputes the table (wrong results, timing
//!   only; three alternating runs of the two builds) measured, as ratios to the ceiling,
//!   rotate_half f32 0.82–0.92 and f16 0.81–0.87, interleaved f32 0.65–0.78 and f16
//!   0.70–0.75, against 0.61–0.80, 0.64–0.67, 0.52–0.66 and 0.53–0.58 with it (f16 then
//!   against the older, slower f16 ceiling: see `Avx2::st_f16`). Computing
//!   its blocks spread evenly over a token's passes, or all after the token's last pass,
//!   measured the same as one block after each pass, within noise. Also tried there:
//!   rotate_half one head per pass, with or without the head's loop fully unrolled
//!   (17–21 ns per token-head at 64 tokens against 14–16; a stand-alone kernel with
//!   precomputed tables gained 5–10% from the same change).
//! * Where the rest goes (stand-alone AVX2 kernels, tables already computed, ns per
//!   token-head at 8 / 64 / 512 tokens, ranges over four runs): the table loads. rotate_half
//!   one head per pass is 7.9–8.4 / 8.6–9.7 / 9.4–10.4 with its table loaded from L1,
//!   6.3–6.4 / 8.2–8.7 / 8.7–9.2 with one table vector kept in registers (not a valid RoPE,
//!   a bound), against a ceiling of 5.7–5.8 / 7.4–8.2 / 8.1–8.8. Keeping a real table in
//!   registers needs passes of 32 pairs over all heads of a token (16 ymm hold 32 pairs of
//!   cos/sin): 6.6–6.7 at 8 tokens but 9.4–10.3 at 64 and 10.7–11.1 at 512, where the
//!   prefetchers lose the stream. Two heads per table load: 7.6–8.1 / 9.0–9.5 / 8.9–9.3;
//!   four: 7.5–7.8 / 9.7–10.2 / 10.4–10.9.
//!
//! Per-head work is 16 vectors at head_dim 128, so per-head overhead matters: the loops
//! walk raw pointers inside windows proven in bounds once per span (see [`in_bounds`]).
//!
//! The results are bitwise those of the generic driver on the same tier: the same
//! `sin_cos`, the same table layout ([`crate::arch::Tables`]) and the same fused expressions
//! as `Tier::rot` with `Rounding::Once`. `tests/fast_path.rs` checks that bit for bit.
#![allow(unsafe_op_in_unsafe_fn)]

use super::{Isa, ld, sin_cos, st};
use crate::arch::{Angles, Job, Positions, Rounding, Span, Target};
use crate::element::Element;
use crate::rope::Layout;
use core::mem::MaybeUninit;

/// The largest `half` (pairs per head) of the fast path: head_dim 256.
const MAX_HALF: usize = 128;

/// One token's cos/sin laid out as [`crate::arch::Tables`] does: rotate_half one per pair,
/// interleaved expanded to `[c0, c0, c1, c1, …]` and `[−s0, s0, −s1, s1, …]`.
///
/// Left uninitialised: clearing two of these (4 KiB) cost ~1 ns per token-head at decode,
/// a tenth of the call. Only the first `half` (rotate_half) or `2·half` (interleaved)
/// entries are ever read, and `table_block` writes all of them before a token reads its
/// table (every block `0 .. half / LANES` is written first; Miri checks the reads).
#[repr(C, align(64))]
struct Tab {
    c: MaybeUninit<[f32; 2 * MAX_HALF]>,
    s: MaybeUninit<[f32; 2 * MAX_HALF]>,
}

/// Runs `job` on the fast path if it qualifies; returns whether it did.
///
/// # Safety
/// The CPU supports `I`'s features (the parent module's safety model).
#[inline(always)]
pub(super) unsafe fn rope<I: Isa, T: Element>(
    targets: &mut [Target<'_, T>],
    job: &Job<'_>,
) -> bool {
    let Angles::Freq {
        inv_freq,
        positions: Positions::Plain(pos),
        cs,
        ss,
        f32_angle: false,
    } = job.angles
    else {
        return false;
    };
    let half = job.rotary_dim / 2;
    let tokens = job.tokens;
    if job.round != Rounding::Once
        || half == 0
        || half > MAX_HALF
        || !half.is_multiple_of(I::LANES)
        || pos.len() < tokens
        || inv_freq.len() < half
        || !targets.iter().all(|t| {
            t.spans
                .iter()
                .all(|s| in_bounds(s, tokens, 2 * half, t.x.len()))
        })
    {
        return false;
    }
    let run = Run::<I> {
        w: &inv_freq[..half],
        pos: &pos[..tokens],
        cs: I::splat(cs),
        ss: I::splat(ss),
        half,
    };
    // The layout as a constant, so the inner loops carry no test of it.
    match job.layout {
        _ if tokens == 0 => {}
        Layout::Interleaved => run.go::<T, true>(targets),
        Layout::RotateHalf => run.go::<T, false>(targets),
    }
    true
}

/// Whether every rotary window of `span` over `tokens` tokens lies inside a buffer of
/// `len` elements. Windows start at `offset + t·token_stride + h·head_stride` and are `rd`
/// long; strides are unsigned, so the last window ends furthest, and checking it (without
/// overflow) proves every pointer the loops below form stays inside the buffer. The public
/// entry points have validated this already; the fast path re-proves it locally, once per
/// span, because it drops the per-access bounds checks.
#[inline(always)]
fn in_bounds(span: &Span, tokens: usize, rd: usize, len: usize) -> bool {
    if tokens == 0 {
        return true;
    }
    if span.n_heads == 0 {
        // Never validated through (no entry point accepts zero heads), and the loops would
        // still form the span's base pointer: let the generic driver have it.
        return false;
    }
    let end = (tokens - 1)
        .checked_mul(span.token_stride)
        .and_then(|a| {
            (span.n_heads - 1)
                .checked_mul(span.head_stride)
                .and_then(|b| a.checked_add(b))
        })
        .and_then(|a| a.checked_add(span.offset))
        .and_then(|a| a.checked_add(rd));
    end.is_some_and(|e| e <= len)
}

/// One rotate_half vector pair at `a` and `b`: `Tier::rot_half_block` with
/// `Rounding::Once` (`x·c − y·s`, `y·c + x·s`, one rounding each).
///
/// # Safety
/// `a`, `b` each address `LANES` writable values; the tier's features.
#[inline(always)]
unsafe fn half_pair<I: Isa, T: Element>(a: *mut T, b: *mut T, c: I::F, s: I::F) {
    let (x, y) = (ld::<I, T>(a), ld::<I, T>(b));
    st::<I, T>(I::fnmadd(y, s, I::mul(x, c)), a);
    st::<I, T>(I::fmadd(x, s, I::mul(y, c)), b);
}

/// One interleaved vector at `x` with expanded tables: `Tier::rot_inter_block` with
/// `Rounding::Once` (`x·c + swap_pairs(x)·s`, the sign in `s`).
///
/// # Safety
/// `x .. x + LANES` is writable; the tier's features.
#[inline(always)]
unsafe fn inter<I: Isa, T: Element>(x: *mut T, c: I::F, s: I::F) {
    let v = ld::<I, T>(x);
    st::<I, T>(I::fmadd(I::swap_pairs(v), s, I::mul(v, c)), x);
}

/// One call's constants.
struct Run<'a, I: Isa> {
    w: &'a [f32],
    pos: &'a [i32],
    cs: I::F,
    ss: I::F,
    half: usize,
}

impl<I: Isa> Run<'_, I> {
    /// cos/sin (scaled) of pairs `b·LANES .. (b + 1)·LANES` at position `p`.
    #[inline(always)]
    unsafe fn cos_sin(&self, p: i32, b: usize) -> (I::F, I::F) {
        let (l, h) = (I::LANES, I::LANES / 2);
        let k = b * l;
        let pv = I::dsplat(p as f64);
        let lo = I::dmul(pv, I::load_widen(&self.w[k..k + h]));
        let hi = I::dmul(pv, I::load_widen(&self.w[k + h..k + l]));
        let (s, c) = sin_cos::<I>(lo, hi);
        (I::mul(c, self.cs), I::mul(s, self.ss))
    }

    /// Block `b` of the table of position `p`, laid out for the layout.
    #[inline(always)]
    unsafe fn table_block<const IL: bool>(&self, p: i32, b: usize, tab: &mut Tab) {
        let l = I::LANES;
        let k = b * l;
        let (c, s) = self.cos_sin(p, b);
        assert!(2 * k + 2 * l <= 2 * MAX_HALF); // `k + l ≤ half ≤ MAX_HALF`
        // SAFETY (the stores below): in bounds of the arrays (asserted).
        let (tc, ts) = (
            tab.c.as_mut_ptr().cast::<f32>(),
            tab.s.as_mut_ptr().cast::<f32>(),
        );
        if IL {
            // Expanded as `Tables`: [c0, c0, c1, c1, …], [−s0, s0, −s1, s1, …].
            let (c0, c1) = I::zip(c, c);
            let (s0, s1) = I::zip(I::neg(s), s);
            I::st_f32(c0, tc.add(2 * k));
            I::st_f32(c1, tc.add(2 * k + l));
            I::st_f32(s0, ts.add(2 * k));
            I::st_f32(s1, ts.add(2 * k + l));
        } else {
            I::st_f32(c, tc.add(k));
            I::st_f32(s, ts.add(k));
        }
    }

    /// Tokens in memory order, two heads per pass, the next token's table pipelined.
    #[inline(always)]
    unsafe fn go<T: Element, const IL: bool>(&self, targets: &mut [Target<'_, T>]) {
        let tokens = self.pos.len();
        let blocks = self.half / I::LANES;
        let mut tabs = [Tab::new(), Tab::new()];
        for b in 0..blocks {
            self.table_block::<IL>(self.pos[0], b, &mut tabs[0]);
        }
        for t in 0..tokens {
            let (a, b) = tabs.split_at_mut(1);
            let (cur, nxt) = if t % 2 == 0 {
                (&a[0], &mut b[0])
            } else {
                (&b[0], &mut a[0])
            };
            let mut next = Pending {
                p: self.pos.get(t + 1).copied().unwrap_or(0),
                done: if t + 1 < tokens { 0 } else { blocks },
                tab: nxt,
            };
            for target in targets.iter_mut() {
                let x = target.x.as_mut_ptr();
                for span in target.spans {
                    // SAFETY: `in_bounds` proved every window of every token of this span
                    // lies in `target.x`; heads `h .. h + H` (`h + H ≤ n_heads`, checked
                    // before each call) are among those windows, and `rotate` stays inside
                    // them.
                    let base = x.add(span.offset + t * span.token_stride);
                    let (n, hs) = (span.n_heads, span.head_stride);
                    let mut h = 0;
                    if tokens == 1 {
                        // A single token is in L1: four heads share each table load (the
                        // pairs below take the rest).
                        while h + 3 < n {
                            self.rotate::<T, IL, 4>(base.add(h * hs), hs, cur);
                            self.advance::<IL>(&mut next, blocks);
                            h += 4;
                        }
                    }
                    while h + 1 < n {
                        let p0 = base.add(h * hs);
                        if IL && tokens > 1 {
                            // Interleaved heads one at a time when streaming: two at once
                            // measured 2× slower at 512–4096 tokens. A single token is in
                            // L1, where sharing the table loads pays.
                            self.rotate::<T, IL, 1>(p0, hs, cur);
                            self.rotate::<T, IL, 1>(p0.add(hs), hs, cur);
                        } else {
                            self.rotate::<T, IL, 2>(p0, hs, cur);
                        }
                        self.advance::<IL>(&mut next, blocks);
                        h += 2;
                    }
                    if h < n {
                        self.rotate::<T, IL, 1>(base.add(h * hs), hs, cur);
                        self.advance::<IL>(&mut next, blocks);
                    }
                }
            }
            while next.done < blocks {
                self.advance::<IL>(&mut next, blocks);
            }
        }
    }

    /// Computes the next pending block of the next token's table, if any.
    #[inline(always)]
    unsafe fn advance<const IL: bool>(&self, next: &mut Pending<'_>, blocks: usize) {
        if next.done < blocks {
            self.table_block::<IL>(next.p, next.done, next.tab);
            next.done += 1;
        }
    }

    /// Rotates the `H` windows at `p0 + i·hs` (`i < H`) with one token's table; each table
    /// vector is loaded once for all of them.
    ///
    /// # Safety
    /// `p0 + i·hs .. p0 + i·hs + 2·half` (`i < H`) are writable windows; the tier's features.
    #[inline(always)]
    unsafe fn rotate<T: Element, const IL: bool, const H: usize>(
        &self,
        p0: *mut T,
        hs: usize,
        tab: &Tab,
    ) {
        let (l, half) = (I::LANES, self.half);
        let (tc, ts) = (tab.c.as_ptr().cast::<f32>(), tab.s.as_ptr().cast::<f32>());
        // SAFETY: offsets stay below `2·half ≤ 2·MAX_HALF` (tables: entries below `half`,
        // resp. `2·half`, all written by `table_block` before this token's pass, see `Tab`)
        // and `2·half` in each window (caller).
        if IL {
            for k in (0..2 * half).step_by(l) {
                let (c, s) = (I::ld_f32(tc.add(k)), I::ld_f32(ts.add(k)));
                for i in 0..H {
                    inter::<I, T>(p0.add(i * hs + k), c, s);
                }
            }
        } else {
            for k in (0..half).step_by(l) {
                let (c, s) = (I::ld_f32(tc.add(k)), I::ld_f32(ts.add(k)));
                for i in 0..H {
                    let p = p0.add(i * hs);
                    half_pair::<I, T>(p.add(k), p.add(half + k), c, s);
                }
            }
        }
    }
}

impl Tab {
    #[inline(always)]
    fn new() -> Tab {
        Tab {
            c: MaybeUninit::uninit(),
            s: MaybeUninit::uninit(),
        }
    }
}

/// The next token's table, filled block by block while the current token is rotated.
struct Pending<'a> {
    p: i32,
    done: usize,
    tab: &'a mut Tab,
}
