//! The head kernels: the rotation of the rotary windows of one or a few heads from a table
//! (in memory or held in registers), the skewed-window and split-bf16 variants, and the copy
//! of the channels outside the window. Every pair gets the same expressions ([`Run::rot`]).

use super::run::{Pre, Run};
use crate::element::{Dtype, Element};
use crate::engine::angles::{Rows, Tab};
use crate::engine::vector::{MAX_LANES, Simd, pad};
use crate::types::Rounding;

/// Whether interleaved loops take their vectors two at a time, to store them with one
/// [`Simd::st2_joined`]: for a bf16 destination on a tier whose bf16 rounding tests each vector
/// ([`Simd::BF16_PAIR`]), where one test for two vectors ran faster (AVX512-BF16: `cargo
/// bench --bench ratio`, the bf16 rows; NEON: `benches/mca/neon.py`). Other kernels keep one
/// vector at a time.
pub(super) const fn paired<S: Simd, O: Element>() -> bool {
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
    const SKEW: usize,
>() -> bool {
    S::SPLIT_BF16
        && ONCE
        && SKEW == 0
        && NV.is_multiple_of(2)
        && matches!(I::DTYPE, Dtype::Bf16)
        && matches!(O::DTYPE, Dtype::Bf16)
}

/// Whether the streaming loops of a kernel of tier `S` from `I` to `O` (`WHOLE`: of whole
/// windows) rotate split tables ([`Run::rotate_split`]): bf16 to bf16 under posenc's rounding,
/// on a tier with [`Simd::SPLIT_BF16_STREAM`]. A constant, so the other kernels contain
/// neither those loops nor the split table's writes.
pub(super) const fn split_stream<
    S: Simd,
    I: Element,
    O: Element,
    const ONCE: bool,
    const WHOLE: bool,
>() -> bool {
    S::SPLIT_BF16_STREAM
        && ONCE
        && WHOLE
        && matches!(I::DTYPE, Dtype::Bf16)
        && matches!(O::DTYPE, Dtype::Bf16)
}

/// Whether a kernel of tier `S` from `I` to `O` (`WHOLE`: of whole windows) can take the skewed
/// loops ([`Run::rotate_skewed`]). A constant, tested as one (`const { … }`) where those loops
/// are called: the kernels that can never take them then do not contain them, which keeps
/// their instantiations out of every other dtype pair's and tier's build.
pub(super) const fn skewable<S: Simd, I: Element, O: Element, const WHOLE: bool>() -> bool {
    WHOLE && S::HALVES && matches!(I::DTYPE, Dtype::F32) && matches!(O::DTYPE, Dtype::F32)
}

/// Whether the in-cache token loops rotate a token's heads two at a time
/// ([`Run::resident_twos`]): rotate_half f32 into f32 under posenc's rounding, heads of 128
/// (`NV` 8) on an x86 tier of 8 lanes and 16 registers (AVX2), unskewed. There the table
/// fills the register file; AVX-512 holds it in registers, and NEON has no host here to time
/// it on, so both keep [`Run::resident`]. It was timed in cache only: past the caches the
/// calls keep [`Run::resident`]'s blocked loads (see [`half_block`]).
pub(super) const fn twos<
    S: Simd,
    I: Element,
    O: Element,
    const IL: bool,
    const ONCE: bool,
    const NV: usize,
    const SKEW: usize,
>() -> bool {
    !IL && ONCE
        && SKEW == 0
        && NV == 8
        && S::LANES == 8
        && S::REGISTERS == 16
        && cfg!(target_arch = "x86_64")
        && matches!(I::DTYPE, Dtype::F32)
        && matches!(O::DTYPE, Dtype::F32)
}

/// How many rotate_half vectors of `I` the head loops load from a window's first half before
/// the first of their partners in the second half: 256 bytes, at most [`MAX_BLOCK`] vectors;
/// 0 (the vectors in pairs) for 16-bit sources.
///
/// Loaded in pairs (`v`, `half + v`), f32 windows whose halves lie 512 bytes or more apart
/// (heads of 256) ran at about half their bytes ceiling once the call outgrew L2, on both x86
/// tiers; four cache lines of the first half ahead ran them at the ceiling (two lines: halfway
/// there), and AVX-512's heads of 64 gained in cache too. The 16-bit kernels lost with blocks
/// (`cargo bench --bench ratio -- heads`, both tiers). The compiler cannot move these loads
/// ahead itself: the stores between them may alias them.
const fn half_block<S: Simd, I: Element>() -> usize {
    if !matches!(I::DTYPE, Dtype::F32) {
        return 0;
    }
    // (At least 4: no tier's vectors are wider than 64 bytes.)
    let v = 256 / (S::LANES * size_of::<f32>());
    if v > MAX_BLOCK { MAX_BLOCK } else { v }
}

/// The most first-half vectors [`half_block`] holds: half of AVX2's register file.
const MAX_BLOCK: usize = 8;

impl<S: Simd> Run<'_, S> {
    /// The channels of a head outside its rotary window, from `p` (source head) to `q`
    /// (destination head): converted, normalised first when `NORM`.
    ///
    /// # Safety
    /// `p .. p + head_dim` is readable, `q .. q + head_dim` writable (the same head in place);
    /// when `NORM`, `pre.w .. + head_dim` is readable.
    #[inline(always)]
    pub(super) unsafe fn pass<I: Element, O: Element, const ONCE: bool, const NORM: bool>(
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
    /// as [`Run::rotate_skewed`] requires; `split` only when `tab` is split (see [`Tab`]).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) unsafe fn rotate<
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
        split: bool,
    ) {
        let (s, l, half) = (self.s, S::LANES, self.half);
        if const { H > 1 && skewable::<S, I, O, WHOLE>() } && skewed {
            // SAFETY: the caller's precondition; `skewed`: f32 windows half a vector past a
            // boundary, whole ones (`WHOLE`).
            unsafe { self.rotate_skewed::<I, O, IL, ONCE, H>(p0, q0, ps, qs, tab) };
            return;
        }
        if const { split_stream::<S, I, O, ONCE, WHOLE>() } && split {
            // SAFETY: the caller's precondition; `I` and `O` are bf16 (`split_stream`), and
            // the table is split (`Run::splits` held when the call scheduled its tables).
            unsafe { self.rotate_split::<IL, H>(p0.cast(), q0.cast(), ps, qs, tab) };
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
            // One head per pass: whole blocks of B = `half_block` vectors, each block's
            // first-half vectors loaded first (see `half_block`), then the vectors left over.
            // Two or four heads per pass load each table vector once for all of them instead
            // (blocks there, with a table load per head, lost), and the norm's passes keep
            // the pairs (blocked, they lost in `cargo bench --bench fused -- qknorm`):
            //   for each block [k0, k0 + B·l):  x[b] = load(k0 + b·l) for b < B, then
            //       for b < B: y = load(half + k0 + b·l); store the rotations of (x[b], y)
            let bl = const {
                if H == 1 && !NORM {
                    half_block::<S, I>()
                } else {
                    0
                }
            } * l;
            let mut k0 = 0;
            while bl > 0 && k0 + bl <= nl {
                // SAFETY: pairs `j0 + k0 .. + bl ≤ j0 + nl ≤ half` of the one window (`H` is
                // 1), in its first half and (`half` further) its second (and weights); the
                // table's entries `k0 .. k0 + bl ≤ n` were written for this chunk; in place,
                // the stores reach only vectors this block has loaded.
                unsafe {
                    let (a, b, w) = (p0.add(j0), q0.add(j0), w.wrapping_add(j0));
                    let mut x = [s.splat(0.0); MAX_BLOCK];
                    for (v, x) in x[..bl / l].iter_mut().enumerate() {
                        let k = k0 + v * l;
                        *x = self.ld::<I, ONCE, NORM>(a.add(k), w.wrapping_add(k), pre);
                    }
                    for (v, &x) in x[..bl / l].iter().enumerate() {
                        let k = k0 + v * l;
                        let (c, sn) = tab.get(s, k);
                        let y = self.ld::<I, ONCE, NORM>(
                            a.add(half + k),
                            w.wrapping_add(half + k),
                            pre,
                        );
                        self.half_pair::<I, O, ONCE>(x, y, b.add(k), b.add(half + k), c, sn);
                    }
                }
                k0 += bl;
            }
            for k in (k0..nl).step_by(l) {
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
    pub(super) unsafe fn rotate_skewed<
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
                self.ends::<I, IL, ONCE>(p0.add(i * ps).cast(), q0.add(i * qs).cast(), c, sn, e)
            };
        }
    }

    /// Rotates the rotary windows of heads `0 .. nh` at `p0 + h·ps` into `q0 + h·qs`, every
    /// pair of each, with the chunk's table loaded into `NV` pairs of registers once for all
    /// of them:
    ///
    /// ```text
    /// c[v], s[v] = table vector v                (v < NV; interleaved: the expanded entries,
    ///                                             expanded here from a caller's compact row)
    /// for each head h:  for each v:  rotate vector v (rotate_half: v and v + half) with c[v], s[v]
    ///     (f32 rotate_half: the v of a block of `half_block` loaded first, then each v + half)
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
    /// `SKEW` (0: none): the f32 windows start `SKEW` values before a vector boundary, a split
    /// [`Simd::ld_f32_split`] takes (`LANES/2`: [`Run::rotate_skewed`]'s windows): vector `v`
    /// starts at `SKEW + v·LANES`, and the last register pair holds the table of the two end
    /// pieces, values `0 .. SKEW` and the last `LANES − SKEW` (see [`Run::ends`]). A constant,
    /// so each split's loads and stores are fixed in the loop (passed in at run time, the
    /// skewed loops ran slower than the straddling ones, `cargo bench --bench align`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) unsafe fn resident<
        I: Element,
        O: Element,
        const IL: bool,
        const ONCE: bool,
        const NV: usize,
        const SKEW: usize,
    >(
        &self,
        p0: *const I,
        q0: *mut O,
        ps: usize,
        qs: usize,
        nh: usize,
        tab: Rows,
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
        let (e, whole) = if SKEW > 0 { (SKEW, NV - 1) } else { (0, NV) };
        // SAFETY: the caller's precondition.
        let (c, sn) = unsafe { self.held::<IL, NV, SKEW>(tab) };
        for h in 0..nh {
            let (p, q) = (p0.wrapping_add(h * ps), q0.wrapping_add(h * qs));
            if SKEW > 0 {
                // SAFETY: the window of head `h` (the caller's precondition), f32 (`SKEW`).
                unsafe { self.ends::<I, IL, ONCE>(p.cast(), q.cast(), c[NV - 1], sn[NV - 1], e) };
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
            // (Heads of 96, 3 or 6 vectors, keep the pairs: blocked, they lost in cache on
            // both tiers and gained only past the caches, `cargo bench --bench ratio -- heads`.)
            if IL || const { half_block::<S, I>() == 0 || !NV.is_power_of_two() } {
                for (v, (&c, &sn)) in c[..whole].iter().zip(&sn[..whole]).enumerate() {
                    // SAFETY: vector `v` of the window of head `h < nh` (rotate_half: and its
                    // partner `half` further), inside it (the caller's precondition).
                    unsafe { self.vector::<I, O, IL, ONCE>(p, q, e + v * l, c, sn) };
                }
                continue;
            }
            // rotate_half: vectors in blocks of up to `half_block`, each block's first-half
            // vectors loaded before any of its second-half ones (see `half_block`):
            //   for each block [v0, v1): x[v] = load(v) for v in v0..v1, then
            //   for v in v0..v1: y = load(half + v); store rotations of (x[v], y) to v, half + v
            let mut v0 = 0;
            while v0 < whole {
                let v1 = whole.min(v0 + const { half_block::<S, I>() });
                let mut x = [s.splat(0.0); MAX_BLOCK];
                for (v, x) in (v0..v1).zip(&mut x) {
                    // SAFETY: vector `v < whole` of the window of head `h < nh`, in its first
                    // half (the caller's precondition); nothing of the block is stored yet.
                    *x = unsafe { s.ld::<I>(p.add(e + v * l)) };
                }
                for (v, &x) in (v0..v1).zip(&x) {
                    let k = e + v * l;
                    // SAFETY: as above, and its partner `half` further, in the second half;
                    // in place, the stores below reach only vectors this block has loaded.
                    unsafe {
                        let y = s.ld::<I>(p.add(half + k));
                        self.half_pair::<I, O, ONCE>(x, y, q.add(k), q.add(half + k), c[v], sn[v]);
                    }
                }
                v0 = v1;
            }
        }
    }

    /// [`Run::resident`] for the kernels [`twos`] names: rotate_half, its vector pairs taken
    /// for two heads at a time from one table pair.
    ///
    /// ```text
    /// for each two heads h, h + 1:  for v in 0 .. NV:
    ///     (c, s) = table pair v (held: on the stack, the table is the whole register file)
    ///     rotate pair v of head h, then pair v of head h + 1, with (c, s)
    /// an odd last head: Run::resident
    /// ```
    ///
    /// AVX2's table of a head of 128 is its 16 registers, so the compiler keeps it on the
    /// stack and [`Run::resident`] loads each table pair once per head; here once per two
    /// heads, a quarter fewer loads (`cargo bench --bench bare` with
    /// `POSENC_BENCH_BACKEND=avx2`: `rh_two` against `posenc_rh`; then `--bench ratio`, the
    /// AVX2 table column in cache). Loading the pairs from the row in the loop instead of
    /// holding them ran slower there. Each value gets [`Run::resident`]'s operations, so the
    /// results are bitwise its.
    ///
    /// # Safety
    /// As [`Run::resident`] with `SKEW` 0.
    #[inline(always)]
    pub(super) unsafe fn resident_twos<
        I: Element,
        O: Element,
        const ONCE: bool,
        const NV: usize,
    >(
        &self,
        p0: *const I,
        q0: *mut O,
        ps: usize,
        qs: usize,
        nh: usize,
        tab: Rows,
    ) {
        let l = S::LANES;
        // SAFETY: the caller's precondition.
        let (c, sn) = unsafe { self.held::<false, NV, 0>(tab) };
        let mut h = 0;
        while h + 1 < nh {
            let (p, q) = (p0.wrapping_add(h * ps), q0.wrapping_add(h * qs));
            let (p1, q1) = (p.wrapping_add(ps), q.wrapping_add(qs));
            for (v, (&c, &sn)) in c.iter().zip(&sn).enumerate() {
                // SAFETY: vector `v < NV` of the windows of heads `h`, `h + 1 < nh` and their
                // partners `half` further lie inside them (the caller's precondition); in
                // place, each head's stores reach only its own window.
                unsafe {
                    self.vector::<I, O, false, ONCE>(p, q, v * l, c, sn);
                    self.vector::<I, O, false, ONCE>(p1, q1, v * l, c, sn);
                }
            }
            h += 2;
        }
        if h < nh {
            // SAFETY: head `h < nh`, one head, as the caller's precondition.
            unsafe {
                self.resident::<I, O, false, ONCE, NV, 0>(
                    p0.wrapping_add(h * ps),
                    q0.wrapping_add(h * qs),
                    ps,
                    qs,
                    1,
                    tab,
                )
            };
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
    /// As [`Run::resident`] with `SKEW` 0, the windows of bf16.
    #[inline(always)]
    pub(super) unsafe fn resident_split<const IL: bool, const NV: usize>(
        &self,
        p0: *const half::bf16,
        q0: *mut half::bf16,
        ps: usize,
        qs: usize,
        nh: usize,
        tab: Rows,
    ) {
        let (s, l, half) = (self.s, S::LANES, self.half);
        debug_assert!(NV * l == if IL { 2 * half } else { half } && NV.is_multiple_of(2));
        let zero = s.splat(0.0);
        // Block `b < NV / 2`: rotate_half `[ce, co, se, so]`, interleaved `[c, s, −, −]`.
        let mut t = [[zero; 4]; NV];
        for (b, t) in t.iter_mut().take(NV / 2).enumerate() {
            *t = if IL {
                // SAFETY: a `Tab`'s entries `2b·LANES .. (2b + 2)·LANES ≤ NV·LANES` were
                // written for this chunk; a compact row holds `half = NV·LANES/2` entries.
                let (c, sn) = unsafe { tab.il_pairs(s, b) };
                [c, sn, zero, zero]
            } else {
                // SAFETY: entries `2b·LANES .. (2b + 2)·LANES ≤ NV·LANES` were written for
                // this chunk.
                let ((c0, s0), (c1, s1)) =
                    unsafe { (tab.get(s, 2 * b * l), tab.get(s, (2 * b + 1) * l)) };
                let (ce, co) = s.unzip(c0, c1);
                let (se, so) = s.unzip(s0, s1);
                [ce, co, se, so]
            };
        }
        for h in 0..nh {
            let (p, q) = (p0.wrapping_add(h * ps), q0.wrapping_add(h * qs));
            for (b, t) in t.iter().take(NV / 2).enumerate() {
                // SAFETY: values `2b·LANES .. + 2·LANES` of the window of head `h < nh`
                // (rotate_half: and `half` further) lie inside it (the caller's precondition:
                // `2·LANES·NV/2` is the window, or its first half).
                unsafe { self.split_block::<IL>(p, q, 2 * b * l, *t) };
            }
        }
    }

    /// Whether a split table ([`Tab`]) serves this call's windows, which [`Run::rotate_split`]
    /// takes `2·LANES` values at a time: one chunk per token, and rotate_half's half (a
    /// group of `2·LANES` pairs per table read) or interleaved's window (`LANES` pairs) a whole
    /// number of them.
    #[inline(always)]
    pub(super) fn splits<const IL: bool>(&self) -> bool {
        let l = S::LANES;
        self.chunks == 1
            && if IL {
                self.half.is_multiple_of(l)
            } else {
                self.half.is_multiple_of(2 * l)
            }
    }

    /// [`Run::rotate`] of whole bf16 windows from a split table (see [`Tab`]), on a tier with
    /// [`Simd::SPLIT_BF16_STREAM`]: [`Run::resident_split`]'s loop with the table loaded per
    /// group of `2·LANES` values for the `H` heads, already in the order of the heads' even and
    /// odd values, so nothing is moved between lanes on either side of the rotation.
    ///
    /// # Safety
    /// As [`Run::rotate`] with `WHOLE`, the windows of bf16; `tab` is split and
    /// [`Run::splits`] holds.
    #[inline(always)]
    pub(super) unsafe fn rotate_split<const IL: bool, const H: usize>(
        &self,
        p0: *const half::bf16,
        q0: *mut half::bf16,
        ps: usize,
        qs: usize,
        tab: &Tab,
    ) {
        let (s, l, half) = (self.s, S::LANES, self.half);
        debug_assert!(self.splits::<IL>());
        let zero = s.splat(0.0);
        let groups = if IL { half / l } else { half / (2 * l) };
        for g in 0..groups {
            // SAFETY: the entries of group `g` (interleaved: `g·LANES .. + LANES`; rotate_half:
            // `2g·LANES .. + 2·LANES`) were written for this chunk.
            let t = unsafe {
                if IL {
                    let (c, sn) = tab.get(s, g * l);
                    [c, sn, zero, zero]
                } else {
                    let ((ce, se), (co, so)) = (tab.get(s, 2 * g * l), tab.get(s, (2 * g + 1) * l));
                    [ce, co, se, so]
                }
            };
            for i in 0..H {
                // SAFETY: values `2g·LANES .. + 2·LANES` of window `i` (rotate_half: and `half`
                // further) lie inside it (`splits`; the caller's precondition).
                unsafe { self.split_block::<IL>(p0.add(i * ps), q0.add(i * qs), 2 * g * l, t) };
            }
        }
    }

    /// Values `k .. k + 2·LANES` of the bf16 window at `p` (rotate_half: and their partners
    /// `half` further) rotated as their even and odd values with the split table `t` into the
    /// window at `q` (see [`Run::resident_split`] for `t` and the expressions).
    ///
    /// # Safety
    /// Those values lie inside both windows.
    #[inline(always)]
    unsafe fn split_block<const IL: bool>(
        &self,
        p: *const half::bf16,
        q: *mut half::bf16,
        k: usize,
        t: [S::F; 4],
    ) {
        let (s, half) = (self.s, self.half);
        // SAFETY: the caller's precondition.
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

    /// A whole window's table in registers, `NV` vector pairs `(c[v], s[v])`: vector `v`'s
    /// (interleaved: expanded, from a compact row too, a caller's or a `Tab`'s). With `SKEW`,
    /// the vectors start `SKEW` values into the window and the last pair holds the two end
    /// pieces' table (see [`Run::resident`]).
    ///
    /// # Safety
    /// `tab` holds the table of every pair of the window, `NV · LANES` is `half` (rotate_half)
    /// or `2·half` (interleaved), and `SKEW` is 0 or a split [`Simd::ld_f32_split`] takes.
    #[inline(always)]
    pub(super) unsafe fn held<const IL: bool, const NV: usize, const SKEW: usize>(
        &self,
        tab: Rows,
    ) -> ([S::F; NV], [S::F; NV]) {
        let (s, l) = (self.s, S::LANES);
        let m = if IL { 2 * self.half } else { self.half };
        debug_assert!(NV * l == m);
        let (e, whole) = if SKEW > 0 { (SKEW, NV - 1) } else { (0, NV) };
        let (mut c, mut sn) = ([s.splat(0.0); NV], [s.splat(0.0); NV]);
        if IL && SKEW == 0 {
            // Vectors in twos, each two expanded from one compact vector when the row is the
            // caller's (`Rows::il_vectors`).
            for b in 0..NV.div_ceil(2) {
                let two = 2 * b + 1 < NV;
                // SAFETY: a `Tab`'s entries `2b·LANES .. + 2·LANES ≤ NV·LANES` (`two`, else
                // `.. + LANES`) were written for this chunk; a compact row holds `half =
                // NV·LANES/2` entries (the caller's precondition).
                let [v0, v1] = unsafe { tab.il_vectors(s, b, two) };
                (c[2 * b], sn[2 * b]) = v0;
                if two {
                    (c[2 * b + 1], sn[2 * b + 1]) = v1;
                }
            }
        } else {
            for (v, (c, sn)) in c.iter_mut().zip(&mut sn).enumerate() {
                // SAFETY: entries `e + v·LANES .. + LANES ≤ NV·LANES` (`v < whole`), and the end
                // pieces `0 .. e`, `m − (LANES − e) .. m`, were written for this chunk; `e` is
                // a split `ld_f32_split` takes (the caller's precondition).
                (*c, *sn) = unsafe {
                    if v < whole {
                        tab.get(s, e + v * l)
                    } else {
                        tab.get_split(s, 0, m - (l - e), e)
                    }
                };
            }
        }
        (c, sn)
    }

    /// The vector at value `k` of the window at `p` (rotate_half: and its partner `half`
    /// further) rotated with `c`, `sn` into the window at `q`.
    ///
    /// # Safety
    /// Those `LANES` values (rotate_half: both runs) lie inside both windows.
    #[inline(always)]
    pub(super) unsafe fn vector<I: Element, O: Element, const IL: bool, const ONCE: bool>(
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
    pub(super) unsafe fn half_pair<I: Element, O: Element, const ONCE: bool>(
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
    /// `c`, `sn` their table: values `0 .. f` in lanes `0 .. f`, the last `LANES − f` in the
    /// rest, each piece loaded and stored on its own ([`Simd::ld_f32_split`]).
    ///
    /// # Safety
    /// `p .. p + 2·half` is a readable f32 window, `q ..` the same window or a disjoint
    /// writable one; `I` is f32 (it names the rounding of the HF modes); `f` is even, below
    /// `LANES`, and a split `ld_f32_split` takes.
    #[inline(always)]
    pub(super) unsafe fn ends<I: Element, const IL: bool, const ONCE: bool>(
        &self,
        p: *const f32,
        q: *mut f32,
        c: S::F,
        sn: S::F,
        f: usize,
    ) {
        let (s, half) = (self.s, self.half);
        // The back piece starts `b` values before the end of each run.
        let b = S::LANES - f;
        debug_assert!(I::DTYPE == Dtype::F32);
        // SAFETY: every piece lies inside the window (`f, b < LANES ≤ half`: a skewed window
        // is a whole number of vectors; the caller's precondition).
        unsafe {
            if IL {
                let m = 2 * half;
                let v = s.ld_f32_split(p, p.add(m - b), f);
                let r = self.rot::<I, ONCE>(v, c, s.swap_pairs(v), sn, false);
                s.st_f32_split(r, q, q.add(m - b), f);
            } else {
                let x = s.ld_f32_split(p, p.add(half - b), f);
                let y = s.ld_f32_split(p.add(half), p.add(2 * half - b), f);
                let ra = self.rot::<I, ONCE>(x, c, y, sn, true);
                let rb = self.rot::<I, ONCE>(y, c, x, sn, false);
                s.st_f32_split(ra, q, q.add(half - b), f);
                s.st_f32_split(rb, q.add(half), q.add(2 * half - b), f);
            }
        }
    }

    /// One interleaved vector `v` (loaded) with expanded tables, `v·c + swap_pairs(v)·s`,
    /// stored to `q`.
    ///
    /// # Safety
    /// `q .. q + LANES` is writable.
    #[inline(always)]
    pub(super) unsafe fn inter<I: Element, O: Element, const ONCE: bool>(
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
    pub(super) unsafe fn inter2<I: Element, O: Element, const ONCE: bool>(
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
    pub(super) unsafe fn inter_pair<I: Element, O: Element, const ONCE: bool>(
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
    pub(super) fn rot<T: Element, const ONCE: bool>(
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
