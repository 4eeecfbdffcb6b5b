//! Angles: the cos/sin of one token, computed a vector of pairs at a time, and laid out for
//! the rotation ([`Tab`]); the caller-facing cos/sin tables ([`CosSinTable`]).
//!
//! A block is `LANES` consecutive pairs `j .. j + LANES` of one token:
//!
//! ```text
//! exact (posenc's contract):  θ = f64(p) · f64(ω_j)  (exact: 31 + 24 bits), sin/cos in math.rs
//! HF parity (f32_angle):      θ = f64(f32(p) · ω_j)  (the f32 product torch forms)
//! M-RoPE axes:                p = the position of pair j's axis
//! a call's small blocks:      every |θ| < 0.77 for each of the three above: θ = f32(p)·ω_j,
//!                             no reduction, the same bits (see `small_from`)
//! caller tables:              cos/sin loaded as they are
//! then                        cos·cs, sin·ss (attention factor; −1/m for the inverse)
//!                             rounded to the storage type under the HF rounding modes
//! ```
//!
//! Pairs past the rotary window (the padding of a last, partial block) get frequency 0 and
//! position 0: they compute cos 0 = 1, sin 0 = 0 and are never stored.

use super::job::{Angles, Positions};
use super::math::{sin_cos, sin_cos_small, sin_cos2};
use super::vector::{Kernel, MAX_LANES, Simd, pad};
use crate::element::{Dtype, Element};
use crate::scaling::MAX_PAIRS;
use crate::trig::SMALL_ANGLE;
use crate::types::Layout;
use core::mem::MaybeUninit;

/// Pairs per table. A token's rotation works through its pairs `CHUNK` at a time (one chunk
/// up to head_dim 256, every released model's), so the stack use is fixed whatever the
/// rotary dim. A multiple of every tier's `LANES`.
pub(crate) const CHUNK: usize = 128;
/// Entries per table: interleaved expands a pair to two, plus a padded last vector.
const TAB: usize = 2 * (CHUNK + MAX_LANES);

/// One chunk of one token's cos/sin laid out for the layout, shared by every head: rotate_half
/// keeps `c[k] = cos_k`, `s[k] = sin_k`; interleaved expands to `c = [c0, c0, c1, c1, …]`,
/// `s = [−s0, s0, −s1, s1, …]` so a vector of a head is `x·c + swap_pairs(x)·s`, i.e.
/// `(a·c − b·s, b·c + a·s)` bit for bit. (A pair-interleaved `[c0, s0, …]` duplicated per
/// vector with `movsldup`/`movshdup` and one `fmaddsub` ran no faster in `cargo bench --bench
/// bare`, and rounds `b·s` where this rounds `a·c`, so it would break the bitwise agreement
/// with the scalar reference and with rotate_half.)
///
/// Left uninitialised: only entries below `n` (rotate_half) or `2·n` (interleaved) rounded up
/// to whole vectors are read, and [`Source::block`] writes all of them before a chunk's
/// rotation reads them (Miri checks the reads).
///
/// A *split* table (for `Run::rotate_split`) holds the same cos/sin in the order of a
/// head's even and odd values: rotate_half keeps, for each group of `2·LANES` pairs, their
/// even-numbered pairs' entries, then their odd-numbered pairs'; interleaved keeps one entry
/// per pair, unexpanded (the cos of both values of a pair, the sin of its second value; the
/// first value's is its negation).
#[repr(C, align(64))]
pub(crate) struct Tab {
    c: MaybeUninit<[f32; TAB]>,
    s: MaybeUninit<[f32; TAB]>,
}

/// How a [`Tab`] holds a chunk: laid out as its doc says (`Plain`), split (`Split`, see
/// there), or, interleaved, *compact* like a caller's row (`Compact`: one entry per pair,
/// unexpanded, read through [`Tab::rows_as`] and expanded in registers by
/// [`Rows::il_vectors`]). For rotate_half, `Compact` is `Plain`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Plain,
    Split,
    Compact,
}

impl Tab {
    #[inline(always)]
    pub(crate) fn new() -> Tab {
        Tab {
            c: MaybeUninit::uninit(),
            s: MaybeUninit::uninit(),
        }
    }

    /// Where the rotation reads this table's entries.
    #[inline(always)]
    pub(crate) fn rows(&self) -> Rows {
        self.rows_as(false)
    }

    /// Where the rotation reads this table's entries when the table is `compact` (an
    /// interleaved chunk written in [`Form::Compact`]), else as [`Tab::rows`].
    #[inline(always)]
    pub(crate) fn rows_as(&self, compact: bool) -> Rows {
        Rows {
            c: self.c.as_ptr().cast(),
            s: self.s.as_ptr().cast(),
            compact,
        }
    }

    /// The cos and sin vectors at entry `k` (`k + LANES ≤` the entries written for the chunk).
    ///
    /// # Safety
    /// `k + LANES ≤ TAB`, and those entries were written for the current chunk.
    #[inline(always)]
    pub(crate) unsafe fn get<S: Simd>(&self, s: S, k: usize) -> (S::F, S::F) {
        debug_assert!(k + S::LANES <= TAB);
        // SAFETY: in bounds of both arrays and initialised (the caller's precondition).
        unsafe { self.rows().get(s, k) }
    }

    /// The cos and sin vectors of entries `lo .. lo + LANES/2` (low lanes) and `hi .. hi +
    /// LANES/2` (high lanes): the table of a window's two end pieces (see `Run::resident`).
    ///
    /// # Safety
    /// Both ranges lie below `TAB` and were written for the current chunk.
    #[inline(always)]
    pub(crate) unsafe fn get_halves<S: Simd>(&self, s: S, lo: usize, hi: usize) -> (S::F, S::F) {
        debug_assert!(lo.max(hi) + S::LANES / 2 <= TAB);
        // SAFETY: in bounds of both arrays and initialised (the caller's precondition).
        unsafe { self.rows().get_halves(s, lo, hi) }
    }

    /// Stores a block's cos and sin at entry `k`.
    #[inline(always)]
    fn put<S: Simd>(&mut self, s: S, k: usize, c: S::F, sn: S::F) {
        assert!(k + S::LANES <= TAB);
        let (cp, sp) = (
            self.c.as_mut_ptr().cast::<f32>(),
            self.s.as_mut_ptr().cast::<f32>(),
        );
        // SAFETY: `k + LANES ≤ TAB` (asserted), so both stores stay inside the arrays.
        unsafe {
            s.st_f32(c, cp.add(k));
            s.st_f32(sn, sp.add(k));
        }
    }

    /// Stores block `b`'s cos and sin (pairs `b·LANES ..`) into a split rotate_half table: its
    /// even lanes at entry `g + i·LANES/2`, its odd lanes `LANES` further, where `g = 2·LANES·(b
    /// / 2)` is its group and `i = b mod 2` its place in the group.
    #[inline(always)]
    fn put_split<S: Simd>(&mut self, s: S, b: usize, c: S::F, sn: S::F) {
        let l = S::LANES;
        let e = 2 * l * (b / 2) + (b % 2) * (l / 2);
        assert!(e + l + l / 2 <= TAB);
        let (cp, sp) = (
            self.c.as_mut_ptr().cast::<f32>(),
            self.s.as_mut_ptr().cast::<f32>(),
        );
        // (cos evens, sin evens), (cos odds, sin odds), half a vector each.
        let (even, odd) = s.unzip(c, sn);
        // SAFETY: `e + LANES + LANES/2 ≤ TAB` (asserted): every half store stays inside the
        // arrays.
        unsafe {
            s.st_f32_halves(even, cp.add(e), sp.add(e));
            s.st_f32_halves(odd, cp.add(e + l), sp.add(e + l));
        }
    }
}

/// A chunk's cos and sin where a rotation reads them: a `Tab`'s arrays ([`Tab::rows_as`]), or
/// a token's row of a caller's table that needs no scaling, read where it lies
/// ([`Source::row`]). A rotate_half row is laid out as a `Tab`; an interleaved one is
/// *compact*, one entry per pair (as a `Tab` in [`Form::Compact`] is), and
/// [`Rows::il_vectors`] expands it in registers as [`Source::put_block`] expands a block into
/// a `Tab`.
#[derive(Clone, Copy)]
pub(crate) struct Rows {
    c: *const f32,
    s: *const f32,
    compact: bool,
}

impl Rows {
    /// Vectors `2b` and `2b + 1` of an interleaved chunk's expanded table (pairs `b·LANES ..`;
    /// the second only when `two`, else the first again), as a `Tab` holds them: read from the
    /// `Tab`, or expanded from a compact row.
    ///
    /// # Safety
    /// A `Tab`'s entries `2b·LANES ..` (`two`: `.. + 2·LANES`, else `.. + LANES`), or a compact
    /// row's `b·LANES .. + LANES`, are readable and hold this chunk's table.
    #[inline(always)]
    pub(crate) unsafe fn il_vectors<S: Simd>(self, s: S, b: usize, two: bool) -> [(S::F, S::F); 2] {
        let l = S::LANES;
        // SAFETY: (each branch) the entries the caller's precondition names.
        unsafe {
            if self.compact {
                let (c, sn) = self.get(s, b * l);
                expand_il(s, c, sn)
            } else {
                let v0 = self.get(s, 2 * b * l);
                [
                    v0,
                    if two {
                        self.get(s, (2 * b + 1) * l)
                    } else {
                        v0
                    },
                ]
            }
        }
    }

    /// An interleaved chunk's cos and sin of pairs `b·LANES ..`, one entry per pair: a compact
    /// row's, or the even lanes of a `Tab`'s expanded cos and the odd lanes of its sin (the
    /// `+sin` entries).
    ///
    /// # Safety
    /// As [`Rows::il_vectors`] with `two`.
    #[inline(always)]
    pub(crate) unsafe fn il_pairs<S: Simd>(self, s: S, b: usize) -> (S::F, S::F) {
        // SAFETY: the caller's precondition.
        unsafe {
            if self.compact {
                self.get(s, b * S::LANES)
            } else {
                let [(c0, s0), (c1, s1)] = self.il_vectors(s, b, true);
                (s.unzip(c0, c1).0, s.unzip(s0, s1).1)
            }
        }
    }

    /// The cos and sin vectors at entry `k`.
    ///
    /// # Safety
    /// Entries `k .. k + LANES` of both rows are readable and hold this chunk's table.
    #[inline(always)]
    pub(crate) unsafe fn get<S: Simd>(self, s: S, k: usize) -> (S::F, S::F) {
        // SAFETY: the caller's precondition.
        unsafe { (s.ld_f32(self.c.add(k)), s.ld_f32(self.s.add(k))) }
    }

    /// The cos and sin vectors of entries `lo .. lo + f` (lanes `0 .. f`) and `hi .. hi +
    /// LANES − f` (the rest; see [`Simd::ld_f32_split`] for the `f` a tier takes).
    ///
    /// # Safety
    /// Both ranges of both rows are readable and hold this chunk's table; `f` as
    /// `ld_f32_split` requires.
    #[inline(always)]
    pub(crate) unsafe fn get_split<S: Simd>(
        self,
        s: S,
        lo: usize,
        hi: usize,
        f: usize,
    ) -> (S::F, S::F) {
        // SAFETY: the caller's precondition.
        unsafe {
            (
                s.ld_f32_split(self.c.add(lo), self.c.add(hi), f),
                s.ld_f32_split(self.s.add(lo), self.s.add(hi), f),
            )
        }
    }

    /// The cos and sin vectors of entries `lo .. lo + LANES/2` (low lanes) and `hi .. hi +
    /// LANES/2` (high lanes).
    ///
    /// # Safety
    /// Both ranges of both rows are readable and hold this chunk's table.
    #[inline(always)]
    pub(crate) unsafe fn get_halves<S: Simd>(self, s: S, lo: usize, hi: usize) -> (S::F, S::F) {
        // SAFETY: the caller's precondition.
        unsafe {
            (
                s.ld_f32_halves(self.c.add(lo), self.c.add(hi)),
                s.ld_f32_halves(self.s.add(lo), self.s.add(hi)),
            )
        }
    }
}

/// A call's angle source with its per-call constants: [`Angles`] prepared for a tier.
pub(crate) struct Source<'a, S: Simd> {
    kind: Kind<'a>,
    half: usize,
    cs: S::F,
    ss: S::F,
    /// `cs` and `ss` are 1: scaling leaves every cos and sin as it is.
    unit: bool,
    /// The first pair of the call's *small* blocks: from here to the end of the window, every
    /// angle of every token is below [`SMALL_ANGLE`] (see [`small_from`]).
    small_from: usize,
}

#[derive(Clone, Copy)]
enum Kind<'a> {
    Exact {
        w: &'a [f32],
        pos: &'a [i32],
    },
    F32 {
        w: &'a [f32],
        pos: &'a [i32],
    },
    Axes {
        w: &'a [f32],
        pos: &'a [i32],
        n_axes: usize,
        axis: &'a [u8],
        /// HF's f32 product, as `F32` (M-RoPE in HF multiplies in f32 too).
        f32_angle: bool,
    },
    Table {
        cos: &'a [f32],
        sin: &'a [f32],
    },
}

/// The exact angles `f64(p) · f64(ω_j)` of the block at pair `j` (padded frequencies `w`), as
/// two f64 halves: what [`Source::reduced`] and [`Source::cos_sin2`] reduce.
#[inline(always)]
fn exact<S: Simd>(s: S, p: i32, w: &[f32], j: usize) -> (S::D, S::D) {
    let p = s.dsplat(p as f64);
    let h = S::LANES / 2;
    (
        s.dmul(p, s.load_widen(&w[j..])),
        s.dmul(p, s.load_widen(&w[j + h..])),
    )
}

/// Where a call's small blocks start: the first pair of the trailing blocks (whole vectors of
/// the padded frequencies `w`) whose every angle `p·ω`, over every position of the call, is
/// below [`SMALL_ANGLE`] in magnitude; the padded end when there are none. The reference tier
/// has none (it keeps the plain reduction, so the differential tests check the short path
/// against it), nor do positions past 2^24, where `f32(p)` is no longer `p`.
///
/// Such a block reduces to itself (`trig::SMALL_ANGLE`): its sin and cos are the polynomial of
/// the angle rounded to f32, and for `|p| ≤ 2^24` that rounding is the f32 product `f32(p)·ω`
/// (one rounding of the exact product, as narrowing the exact f64 product is). So the block
/// needs no f64 arithmetic, no reduction and no quadrant, and gives the same bits. Real
/// rotary embeddings have many: the low frequencies stay small over a whole prompt, the more
/// so with the large bases of long-context models.
///
/// Decided once per call from its largest position, so that a block only compares its first
/// pair with the result: testing each block's own angles (as a vector, or one of them as a
/// scalar) cost decode steps deep in a context (which have few or no small blocks) more than
/// it saved (`cargo bench --bench rope -- fill_cos_sin`, the `decode` rows; `benches/LOG.md`).
/// The scan below goes from the last block and stops at the first that is not small, so it
/// holds for frequencies in any order.
#[inline(always)]
fn small_from<S: Simd>(w: &[f32], pos: &[i32], half: usize) -> usize {
    let l = S::LANES;
    let end = half.next_multiple_of(l);
    let pmax = pos.iter().map(|p| p.unsigned_abs()).max().unwrap_or(0);
    if S::REFERENCE || pmax > 1 << 24 {
        return end;
    }
    // Exact in f64: a position of at most 25 bits times an f32. A NaN frequency compares
    // false, so its block is never small.
    let pm = f64::from(pmax);
    let mut j = end;
    while j >= l
        && w.get(j - l..j)
            .is_some_and(|b| b.iter().all(|&x| pm * f64::from(x.abs()) < SMALL_ANGLE))
    {
        j -= l;
    }
    j
}

/// `inv_freq` zero-padded to whole vectors, for rotary dims that are not a whole number of
/// vectors (so every block loads `LANES` frequencies).
pub(crate) type Padded = [f32; MAX_PAIRS + MAX_LANES];

impl<'a, S: Simd> Source<'a, S> {
    /// The source of `angles` for a rotary window of `half` pairs. `scratch` receives the
    /// padded frequencies when `half` is not a multiple of `LANES` (it is left alone
    /// otherwise: initialising it costs a visible share of a decode step).
    #[inline(always)]
    pub(crate) fn new(
        s: S,
        angles: &Angles<'a>,
        half: usize,
        scratch: &'a mut MaybeUninit<Padded>,
    ) -> Self {
        let (kind, cs, ss, small) = match *angles {
            Angles::Freq {
                inv_freq,
                positions,
                cs,
                ss,
                f32_angle,
            } => {
                let w = &inv_freq[..half];
                let w: &'a [f32] = if half.is_multiple_of(S::LANES) {
                    w
                } else {
                    let buf = scratch.write([0.0; MAX_PAIRS + MAX_LANES]);
                    buf[..half].copy_from_slice(w);
                    &buf[..]
                };
                let kind = match positions {
                    Positions::Plain(pos) if f32_angle => Kind::F32 { w, pos },
                    Positions::Plain(pos) => Kind::Exact { w, pos },
                    Positions::Axes { pos, n_axes, axis } => Kind::Axes {
                        w,
                        pos,
                        n_axes,
                        axis,
                        f32_angle,
                    },
                };
                // Every position of the call, of every axis under M-RoPE.
                let (Positions::Plain(pos) | Positions::Axes { pos, .. }) = positions;
                (kind, cs, ss, small_from::<S>(w, pos, half))
            }
            Angles::Table { cos, sin, cs, ss } => (Kind::Table { cos, sin }, cs, ss, usize::MAX),
        };
        Source {
            kind,
            half,
            cs: s.splat(cs),
            ss: s.splat(ss),
            unit: cs == 1.0 && ss == 1.0,
            small_from: small,
        }
    }

    /// Whether the cos and sin are computed (from frequencies and positions) rather than read
    /// from a caller's table.
    #[inline(always)]
    pub(crate) fn computes(&self) -> bool {
        !matches!(self.kind, Kind::Table { .. })
    }

    /// cos and sin (scaled, not yet rounded or laid out) of pairs `j .. j + LANES` of token
    /// `t`; lanes past `half` are padding.
    #[inline(always)]
    pub(crate) fn cos_sin(&self, s: S, t: usize, j: usize) -> (S::F, S::F) {
        if j >= self.small_from {
            self.small(s, t, j)
        } else {
            self.reduced(s, t, j)
        }
    }

    /// [`Source::cos_sin`] of a small block (see [`small_from`]): the polynomial of the f32
    /// products `f32(p)·ω`, with each pair's own axis position under M-RoPE.
    #[inline(always)]
    fn small(&self, s: S, t: usize, j: usize) -> (S::F, S::F) {
        let (w, p) = match self.kind {
            Kind::Exact { w, pos } | Kind::F32 { w, pos } => (w, s.splat(pos[t] as f32)),
            Kind::Axes {
                w,
                pos,
                n_axes,
                axis,
                ..
            } => {
                let row = &pos[t * n_axes..(t + 1) * n_axes];
                let mut pp = [0.0f32; MAX_LANES];
                for (i, p) in pp[..S::LANES.min(self.half - j)].iter_mut().enumerate() {
                    *p = row[axis[j + i] as usize] as f32;
                }
                (w, s.load(&pp[..]))
            }
            Kind::Table { .. } => return self.reduced(s, t, j),
        };
        let r = s.mul(p, s.load(&w[j..]));
        let (sn, c) = sin_cos_small(s, r);
        self.scaled(s, c, sn)
    }

    /// [`Source::cos_sin`] through the range reduction (or a caller's table).
    #[inline(always)]
    fn reduced(&self, s: S, t: usize, j: usize) -> (S::F, S::F) {
        let (l, h) = (S::LANES, S::LANES / 2);
        // The angles of the block as two f64 halves; one `sin_cos` below serves every source
        // (each inlined copy of it is code and, in debug builds, stack).
        // (No closures here: a closure does not inherit the entry function's target
        // features, so the intrinsics it calls would not inline.)
        let (lo, hi) = match self.kind {
            Kind::Exact { w, pos } => exact(s, pos[t], w, j),
            Kind::F32 { w, pos } => {
                // HF: the f32 product f32(p)·ω, then sin/cos of that angle.
                let p = pos[t] as f32;
                let mut a = [0.0f64; MAX_LANES];
                for (i, a) in a[..l].iter_mut().enumerate() {
                    *a = (p * w[j + i]) as f64;
                }
                (s.load_d(&a[..h]), s.load_d(&a[h..l]))
            }
            Kind::Axes {
                w,
                pos,
                n_axes,
                axis,
                f32_angle,
            } => {
                let row = &pos[t * n_axes..(t + 1) * n_axes];
                let n = l.min(self.half - j);
                let mut pp = [0i32; MAX_LANES];
                for (i, p) in pp[..n].iter_mut().enumerate() {
                    *p = row[axis[j + i] as usize];
                }
                if f32_angle {
                    // As `F32`: so every axis at `p` is bitwise `apply` at `p`.
                    let mut a = [0.0f64; MAX_LANES];
                    for (i, a) in a[..l].iter_mut().enumerate() {
                        *a = (pp[i] as f32 * w[j + i]) as f64;
                    }
                    (s.load_d(&a[..h]), s.load_d(&a[h..l]))
                } else {
                    (
                        s.dmul(s.load_i32_widen(&pp[..h]), s.load_widen(&w[j..])),
                        s.dmul(s.load_i32_widen(&pp[h..l]), s.load_widen(&w[j + h..])),
                    )
                }
            }
            Kind::Table { cos, sin } => return self.table_block(s, cos, sin, t, j),
        };
        let (sn, c) = sin_cos(s, lo, hi);
        self.scaled(s, c, sn)
    }

    /// Computed cos and sin times the scales (`cs`, `ss`): as they are when both scales are 1,
    /// the common case, which saves two multiplies a block (arithmetic never makes a
    /// signalling NaN, so the multiply by 1 would leave every bit as it is).
    #[inline(always)]
    fn scaled(&self, s: S, c: S::F, sn: S::F) -> (S::F, S::F) {
        if self.unit {
            (c, sn)
        } else {
            (s.mul(c, self.cs), s.mul(sn, self.ss))
        }
    }

    /// [`Source::cos_sin`] of the two blocks at pairs `j` and `j + LANES` (both inside the
    /// padded frequencies): computed together ([`sin_cos2`]) for exact angles that are not
    /// both small, one after the other otherwise.
    #[inline(always)]
    fn cos_sin2(&self, s: S, t: usize, j: usize) -> [(S::F, S::F); 2] {
        let l = S::LANES;
        if let Kind::Exact { w, pos } = self.kind
            && j + l < self.small_from
        {
            let ((a0, a1), (a2, a3)) = (exact(s, pos[t], w, j), exact(s, pos[t], w, j + l));
            let [(s0, c0), (s1, c1)] = sin_cos2(s, [a0, a1, a2, a3]);
            return [self.scaled(s, c0, s0), self.scaled(s, c1, s1)];
        }
        [self.cos_sin(s, t, j), self.cos_sin(s, t, j + l)]
    }

    /// [`Source::block`] of blocks `b` and `b + 1` (both of the chunk), computed together
    /// ([`Source::cos_sin2`]).
    #[inline(always)]
    pub(crate) fn block2<T: Element, const IL: bool, const ONCE: bool>(
        &self,
        s: S,
        t: usize,
        j0: usize,
        b: usize,
        tab: &mut Tab,
        form: Form,
    ) {
        let [(c0, s0), (c1, s1)] = self.cos_sin2(s, t, j0 + b * S::LANES);
        Self::put_block::<T, IL, ONCE>(s, b, c0, s0, tab, form);
        Self::put_block::<T, IL, ONCE>(s, b + 1, c1, s1, tab, form);
    }

    /// Block `b` (pairs `j0 + b·LANES ..`) of token `t`'s table for the chunk starting at
    /// pair `j0`, laid out for the layout (`IL`: interleaved) in the table's `form` and,
    /// under the HF modes (`ONCE` false: `engine::rope` instantiates it for those modes only),
    /// rounded to `T` as HF rounds cos/sin to the model dtype.
    #[inline(always)]
    pub(crate) fn block<T: Element, const IL: bool, const ONCE: bool>(
        &self,
        s: S,
        t: usize,
        j0: usize,
        b: usize,
        tab: &mut Tab,
        form: Form,
    ) {
        let (c, sn) = self.cos_sin(s, t, j0 + b * S::LANES);
        Self::put_block::<T, IL, ONCE>(s, b, c, sn, tab, form);
    }

    /// Blocks `b0 .. blocks` of token `t`'s table, as [`Source::block`] computes them, when
    /// the source is a caller's table (returns whether it is): the source is told apart once
    /// for the row, so the loop over its blocks holds only their loads, scaling and stores.
    /// Told apart per block, as [`Source::block`] must (it computes one block at a time
    /// between passes), a row cost a token markedly more: `cargo bench --bench bare`, its
    /// per-token cost and `h8` rows.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn table_row<T: Element, const IL: bool, const ONCE: bool>(
        &self,
        s: S,
        t: usize,
        j0: usize,
        b0: usize,
        blocks: usize,
        tab: &mut Tab,
        form: Form,
    ) -> bool {
        let Kind::Table { cos, sin } = self.kind else {
            return false;
        };
        for b in b0..blocks {
            let (c, sn) = self.table_block(s, cos, sin, t, j0 + b * S::LANES);
            Self::put_block::<T, IL, ONCE>(s, b, c, sn, tab, form);
        }
        true
    }

    /// Token `t`'s row of a caller's table, read where it lies, when it needs no scaling
    /// (multiplied by 1, every cos and sin would stay as it is; a signalling NaN would be
    /// quieted, as the rotation's own multiply quiets it) and its rows start on vector
    /// boundaries: read from a table that straddles cache lines, the rotation ran slower than
    /// from the aligned copy (`cargo bench --bench ratio`, which times tables at both
    /// placements). `half` entries each: a rotate_half [`Tab`] of the whole window, or (`IL`)
    /// compact (see [`Rows`]; rows on vector boundaries make the window a whole number of
    /// pairs of vectors). `None` for every other source.
    ///
    /// # Safety
    /// `t` is a token of the call (the table holds `tokens × half` entries each).
    #[inline(always)]
    pub(crate) unsafe fn row<const IL: bool>(&self, t: usize) -> Option<Rows> {
        let v = S::LANES * size_of::<f32>();
        match self.kind {
            Kind::Table { cos, sin }
                if self.unit
                    && (cos.as_ptr().addr()
                        | sin.as_ptr().addr()
                        | (self.half * size_of::<f32>()))
                    .is_multiple_of(v) =>
            {
                debug_assert!((t + 1) * self.half <= cos.len().min(sin.len()));
                // SAFETY: row `t` lies inside both tables (the caller's precondition).
                Some(unsafe {
                    Rows {
                        c: cos.as_ptr().add(t * self.half),
                        s: sin.as_ptr().add(t * self.half),
                        compact: IL,
                    }
                })
            }
            _ => None,
        }
    }

    /// A caller table's cos and sin of pairs `j .. j + LANES` of token `t` (lanes past `half`
    /// are padding), scaled as the computed cos/sin are, so a table made from positions
    /// rotates bit for bit as those positions do.
    #[inline(always)]
    fn table_block(&self, s: S, cos: &[f32], sin: &[f32], t: usize, j: usize) -> (S::F, S::F) {
        let l = S::LANES;
        let at = t * self.half + j;
        let n = l.min(self.half - j);
        let (c, sn) = if n == l {
            (s.load(&cos[at..]), s.load(&sin[at..]))
        } else {
            let (c, sn) = (pad(&cos[at..at + n]), pad(&sin[at..at + n]));
            (s.load(&c[..]), s.load(&sn[..]))
        };
        (s.mul(c, self.cs), s.mul(sn, self.ss))
    }

    /// Block `b`'s cos and sin `c`, `sn` into `tab`, laid out as [`Source::block`] says.
    #[inline(always)]
    fn put_block<T: Element, const IL: bool, const ONCE: bool>(
        s: S,
        b: usize,
        mut c: S::F,
        mut sn: S::F,
        tab: &mut Tab,
        form: Form,
    ) {
        let k = b * S::LANES;
        if !ONCE {
            c = s.round_to::<T>(c);
            sn = s.round_to::<T>(sn);
        }
        // (Only bf16 tables under posenc's rounding are ever split, on a tier that streams
        // them so: a constant, which keeps the test and the split writes out of every other
        // kernel's angle blocks.)
        if const { S::SPLIT_BF16_STREAM && ONCE && matches!(T::DTYPE, Dtype::Bf16) }
            && form == Form::Split
        {
            if IL {
                tab.put(s, k, c, sn);
            } else {
                tab.put_split(s, b, c, sn);
            }
        } else if IL && form != Form::Compact {
            let [(c0, s0), (c1, s1)] = expand_il(s, c, sn);
            tab.put(s, 2 * k, c0, s0);
            tab.put(s, 2 * k + S::LANES, c1, s1);
        } else {
            tab.put(s, k, c, sn);
        }
    }
}

/// A block's cos and sin (pairs `j .. j + LANES`) expanded for interleaved heads: the two
/// vectors `([c_j, c_j, c_j+1, c_j+1, …], [−s_j, s_j, −s_j+1, s_j+1, …])` of its values.
#[inline(always)]
fn expand_il<S: Simd>(s: S, c: S::F, sn: S::F) -> [(S::F, S::F); 2] {
    let (c0, c1) = s.zip(c, c);
    let (s0, s1) = s.zip(s.neg(sn), sn);
    [(c0, s0), (c1, s1)]
}

/// Whether a layout is interleaved (the tables' const parameter).
#[inline(always)]
pub(crate) fn interleaved(layout: Layout) -> bool {
    layout == Layout::Interleaved
}

/// `Rope::fill_cos_sin` and `Rope::table`: `cos`, `sin` (`tokens × half` each, validated)
/// receive the cos/sin `angles` gives each token, scaled as it says (what the rotation
/// itself would compute, bit for bit).
pub(crate) struct CosSinTable<'a> {
    pub angles: Angles<'a>,
    pub half: usize,
    pub cos: &'a mut [f32],
    pub sin: &'a mut [f32],
}

impl Kernel for CosSinTable<'_> {
    type Output = ();

    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let half = self.half;
        if half == 0 {
            return;
        }
        let mut scratch = MaybeUninit::uninit();
        let src = Source::new(s, &self.angles, half, &mut scratch);
        let l = S::LANES;
        for (t, (c, sn)) in self
            .cos
            .chunks_exact_mut(half)
            .zip(self.sin.chunks_exact_mut(half))
            .enumerate()
        {
            // Blocks in twos, computed together (see `sin_cos2`), then a last one alone (the
            // pairs were timed with a probe of this call; `cargo bench --bench rope --
            // fill_cos_sin` times it too).
            let mut j = 0;
            while j + 2 * l <= half {
                let [(c0, s0), (c1, s1)] = src.cos_sin2(s, t, j);
                s.store(c0, &mut c[j..]);
                s.store(s0, &mut sn[j..]);
                s.store(c1, &mut c[j + l..]);
                s.store(s1, &mut sn[j + l..]);
                j += 2 * l;
            }
            for j in (j..half).step_by(l) {
                let (cv, sv) = src.cos_sin(s, t, j);
                if j + l <= half {
                    s.store(cv, &mut c[j..]);
                    s.store(sv, &mut sn[j..]);
                } else {
                    let (mut ct, mut st) = ([0.0f32; MAX_LANES], [0.0f32; MAX_LANES]);
                    s.store(cv, &mut ct[..]);
                    s.store(sv, &mut st[..]);
                    c[j..].copy_from_slice(&ct[..half - j]);
                    sn[j..].copy_from_slice(&st[..half - j]);
                }
            }
        }
    }
}
