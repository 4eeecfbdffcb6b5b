//! `Sinusoidal::fill` (consecutive positions `first ..`): the f64 three-term recurrence.
//!
//! ```text
//! for each row group (whole anchor blocks, an L2's worth of output):
//!     for each chunk of SIN_CHUNK frequencies ω (its columns: one run, or two in the split layouts):
//!         k = 2·cos ω                                            (f64, exact doubling)
//!         for each anchor block [a, a + SIN_BLOCK), a a multiple of SIN_BLOCK:
//!             y0, y1 = sin/cos(a·ω), sin/cos((a + 1)·ω)          (f64, trig::sin_cos_f64)
//!             every further row of a column: y(j + 2) = k·y(j + 1) − y(j)   (one mul, one sub)
//!             each value rounded once to f32 and once to T; rows before `first` stepped, not written
//! ```
//!
//! Anchors are absolute multiples of `SIN_BLOCK`, so every row is a function of its position
//! alone, whatever the call's first row or length: `par_fill` pieces and sub-range fills are
//! bitwise the whole fill's rows, on every tier (the recurrence is plain, unfused f64
//! arithmetic on every tier). Sines and cosines of a frequency obey the same recurrence, so a
//! run of columns needs no shuffles whatever the layout. (A rotation per row costs more
//! arithmetic and needs both of a pair's values together.)
//!
//! Inside a block, a span's columns go in strips of whole vectors, `PASS` rows at a time; each
//! strip's state makes one round trip through L1 per pass. Row groups keep a group's rows in
//! L2 while every chunk of frequencies writes them (sweeping one chunk across the whole table
//! touches every row once per chunk). The order changes no value. Settled with `cargo bench
//! --bench ratio` (the sinusoidal rows) and `cargo bench --bench sinusoidal`: `SIN_BLOCK`
//! 256 against 64, 128 and 512; `PASS` 8 against 4 and 16; groups against whole-table sweeps.
//!
//! Error, positions `p < 2^24`, vs the f64 formula `sin/cos(p·ω_exact)`:
//! * the angle `a·ω` rounded in f64: ≤ 2^-53·2^24 ≈ 1.9e-9 rad; `ω` itself within ~8 ulps
//!   (`spec::sin_frequencies`): ≤ 8·2^-53·2^24 ≈ 1.5e-8 rad (both shared with the direct
//!   method of `fill_positions`);
//! * the recurrence: an error `δ` made at step `m` reaches row `j` multiplied by the
//!   Chebyshev value `U_{j−m−1}(cos ω)`, at most `j − m` in size. Each step makes
//!   ≤ 3·2^-53 (|k·y| ≤ 2, |y| ≤ 1) and `k`'s own error adds ≤ 2·3e-16·|y|; the start values
//!   are within ~3e-16. Over the 254 steps of a block: ≤ (254·255/2)·(3.3e-16 + 6e-16) +
//!   256·6e-16 ≈ 3e-11, whatever the table length (the blocks restart);
//! * the rounding to f32: ≤ 2^-25 ≈ 3e-8.
//!
//! Every value is within ≈ 3e-8 + 1.7e-8 + 3e-11 ≈ 5e-8 of the f64 formula: a fifth of the
//! 2.4e-7 contract (`tests/properties.rs`: `sinusoidal_accuracy_formula`,
//! `sinusoidal_fill_recurrence_accuracy`). The values are not bitwise those of the direct
//! method (`fill_positions`), which rounds the reduced angle to f32.

use super::spec::SinSpec;
use crate::element::Element;
use crate::engine::math::sin_cos64;
use crate::engine::vector::Simd;
use crate::trig;
use crate::types::SinusoidalLayout;

/// Rows per anchor block.
pub(crate) const SIN_BLOCK: u64 = 256;
/// Output bytes per row group: an L2's worth on current x86 cores, and at least one block.
const SIN_GROUP_BYTES: u64 = 512 << 10;
/// Frequencies per chunk.
pub(crate) const SIN_CHUNK: usize = 64;
/// Rows per pass over a strip (even).
const PASS: usize = 8;

/// One span of consecutive output columns of one anchor block: column `col0 + c` of block row
/// `j` holds `y_j[c]`, where `y_0`, `y_1` are the f64 values at block rows 0 and 1 and
/// `y_{j+2} = k[c]·y_{j+1} − y_j` (unfused, in this order on every tier); each value rounded
/// once to f32 and once to `T`.
struct SinCols<'a> {
    /// Row width.
    d: usize,
    /// The span's first column.
    col0: usize,
    /// Per column of the span: values at block rows 0 and 1, and the step `2·cos ω`.
    y0: &'a [f64],
    y1: &'a [f64],
    k: &'a [f64],
}

/// `sin/cos(p·w[i])` in f64 for every `i` (`trig::sin_cos_f64` per lane): the start values
/// and steps of the recurrence.
#[inline(always)]
fn sin_cos_wide<S: Simd>(s: S, p: f64, w: &[f64], sin: &mut [f64], cos: &mut [f64]) {
    let h = S::LANES / 2;
    let nh = w.len() / h * h;
    let pv = s.dsplat(p);
    for k in (0..nh).step_by(h) {
        let (sn, c) = sin_cos64(s, s.dmul(pv, s.load_d(&w[k..])));
        s.store_d(sn, &mut sin[k..]);
        s.store_d(c, &mut cos[k..]);
    }
    // The same operations, one lane at a time.
    for k in nh..w.len() {
        (sin[k], cos[k]) = trig::sin_cos_f64(p * w[k]);
    }
}

/// `s`, `c` (a chunk's sines and cosines, `n` each) in the order of the chunk's columns:
/// pair by pair (interleaved), or all of one then all of the other (the split layouts).
#[inline(always)]
fn arrange(layout: SinusoidalLayout, s: &[f64], c: &[f64], out: &mut [f64]) {
    let n = s.len();
    match layout {
        SinusoidalLayout::Interleaved => {
            for ((o, &s), &c) in out.chunks_exact_mut(2).zip(s).zip(c) {
                (o[0], o[1]) = (s, c);
            }
        }
        SinusoidalLayout::Split => {
            out[..n].copy_from_slice(s);
            out[n..2 * n].copy_from_slice(c);
        }
        SinusoidalLayout::SplitCosFirst => {
            out[..n].copy_from_slice(c);
            out[n..2 * n].copy_from_slice(s);
        }
    }
}

/// Fills `out` (whole rows) with the rows of positions `first ..` by the recurrence.
#[inline(always)]
pub(crate) fn fill<S: Simd, T: Element>(s: S, out: &mut [T], spec: &SinSpec, first: u32) {
    let d = spec.d_model;
    let rows = (out.len() / d) as u64;
    let first = first as u64;
    let end = first + rows;
    let mut w = [0.0f64; SIN_CHUNK];
    let (mut sn, mut c) = ([0.0f64; SIN_CHUNK], [0.0f64; SIN_CHUNK]);
    // Per column of the chunk (in `arrange`'s order): the step and the two start rows.
    let mut k = [0.0f64; 2 * SIN_CHUNK];
    let mut y0 = [0.0f64; 2 * SIN_CHUNK];
    let mut y1 = [0.0f64; 2 * SIN_CHUNK];
    // Groups of whole anchor blocks, at least one.
    let row_bytes = (d * core::mem::size_of::<T>()) as u64;
    let group = (SIN_GROUP_BYTES / row_bytes / SIN_BLOCK).max(1) * SIN_BLOCK;
    let mut g = first / SIN_BLOCK * SIN_BLOCK;
    while g < end {
        let g_end = end.min(g + group);
        let mut i0 = 0;
        while i0 < spec.pairs {
            let n = SIN_CHUNK.min(spec.pairs - i0);
            spec.frequencies(i0, &mut w[..n]);
            sin_cos_wide(s, 1.0, &w[..n], &mut sn[..n], &mut c[..n]);
            for ci in c[..n].iter_mut() {
                *ci *= 2.0; // exact
            }
            arrange(spec.layout, &c[..n], &c[..n], &mut k[..2 * n]);
            // The chunk's columns: one run (interleaved) or two of `n` (split layouts).
            let spans = match spec.layout {
                SinusoidalLayout::Interleaved => [(2 * i0, 0, 2 * n), (0, 0, 0)],
                _ => [(i0, 0, n), (spec.pairs + i0, n, 2 * n)],
            };
            let mut a = g;
            while a < g_end {
                sin_cos_wide(s, a as f64, &w[..n], &mut sn[..n], &mut c[..n]);
                arrange(spec.layout, &sn[..n], &c[..n], &mut y0[..2 * n]);
                sin_cos_wide(s, (a + 1) as f64, &w[..n], &mut sn[..n], &mut c[..n]);
                arrange(spec.layout, &sn[..n], &c[..n], &mut y1[..2 * n]);
                let j0 = first.max(a) - a;
                let j1 = g_end.min(a + SIN_BLOCK) - a;
                let r0 = (a + j0 - first) as usize;
                let r1 = (a + j1 - first) as usize;
                let block = &mut out[r0 * d..r1 * d];
                for &(col0, c0, c1) in spans.iter().filter(|sp| sp.2 > sp.1) {
                    let sp = SinCols {
                        d,
                        col0,
                        y0: &y0[c0..c1],
                        y1: &y1[c0..c1],
                        k: &k[c0..c1],
                    };
                    span_rows(s, block, &sp, j0 as usize, j1 as usize);
                }
                a += SIN_BLOCK;
            }
            i0 += n;
        }
        g = g_end;
    }
    if let Some(pad) = spec.padding {
        let pad = pad as i64;
        if pad >= first as i64 && pad < end as i64 {
            let r = (pad - first as i64) as usize;
            out[r * d..(r + 1) * d].fill(T::from_f32(0.0));
        }
    }
}

/// Block rows `j0 .. j1` of one span (`rows` holds exactly those rows): strips of `2·LANES`
/// columns (four f64 vectors), then one of `LANES`, then single columns.
#[inline(always)]
fn span_rows<S: Simd, T: Element>(s: S, rows: &mut [T], sp: &SinCols<'_>, j0: usize, j1: usize) {
    let (l, m) = (S::LANES, sp.k.len());
    let m4 = m / (2 * l) * (2 * l);
    let m2 = m4 + (m - m4) / l * l;
    let mut ya = [0.0f64; 2 * SIN_CHUNK];
    let mut yb = [0.0f64; 2 * SIN_CHUNK];
    ya[..m].copy_from_slice(sp.y0);
    yb[..m].copy_from_slice(sp.y1);
    let mut j = 0;
    while j < j1 {
        let (ya, yb, js) = (&mut ya[..], &mut yb[..], (j, j0, j1));
        if j >= j0 && j + PASS <= j1 {
            strips::<S, T, 4, true>(s, rows, sp, ya, yb, (0, m4), js);
            strips::<S, T, 2, true>(s, rows, sp, ya, yb, (m4, m2), js);
        } else {
            // Starts before `j0` or ends past `j1` (a fill's first or last pass).
            strips::<S, T, 4, false>(s, rows, sp, ya, yb, (0, m4), js);
            strips::<S, T, 2, false>(s, rows, sp, ya, yb, (m4, m2), js);
        }
        j += PASS;
    }
    // Fewer than LANES columns left: the same operations, one column at a time.
    for c in m2..m {
        column(rows, sp, c, j0, j1);
    }
}

/// [`pass`] over a span's strips `c .. cend` of `V·LANES/2` columns.
#[inline(always)]
fn strips<S: Simd, T: Element, const V: usize, const FULL: bool>(
    s: S,
    rows: &mut [T],
    sp: &SinCols<'_>,
    ya: &mut [f64],
    yb: &mut [f64],
    (c, cend): (usize, usize),
    js: (usize, usize, usize),
) {
    for c in (c..cend).step_by(V * S::LANES / 2) {
        pass::<S, T, V, FULL>(s, rows, sp, (&mut *ya, &mut *yb), c, js);
    }
}

/// One pass over one strip: span columns `c .. c + V·LANES/2`, block rows `j .. j + PASS`,
/// the state (values at rows `j`, `j + 1`) loaded from and stored back to `ya`, `yb`. Rows
/// outside `j0 .. j1` are stepped through but not written; `FULL`: the whole pass lies inside
/// them.
#[inline(always)]
fn pass<S: Simd, T: Element, const V: usize, const FULL: bool>(
    s: S,
    rows: &mut [T],
    sp: &SinCols<'_>,
    (ya, yb): (&mut [f64], &mut [f64]),
    c: usize,
    (j, j0, j1): (usize, usize, usize),
) {
    let h = S::LANES / 2;
    // Plain loops, not `array::from_fn`: its closure would not inherit the target features.
    let zero = s.dsplat(0.0);
    let (mut k, mut a, mut b) = ([zero; V], [zero; V], [zero; V]);
    for v in 0..V {
        k[v] = s.load_d(&sp.k[c + v * h..]);
        a[v] = s.load_d(&ya[c + v * h..]);
        b[v] = s.load_d(&yb[c + v * h..]);
    }
    let dc = (sp.d, sp.col0 + c);
    for g in (0..PASS).step_by(2) {
        row::<S, T, V, FULL>(s, rows, dc, &a, (j + g, j0, j1));
        for v in 0..V {
            a[v] = s.dsub(s.dmul(k[v], b[v]), a[v]);
        }
        row::<S, T, V, FULL>(s, rows, dc, &b, (j + g + 1, j0, j1));
        for v in 0..V {
            b[v] = s.dsub(s.dmul(k[v], a[v]), b[v]);
        }
    }
    for v in 0..V {
        s.store_d(a[v], &mut ya[c + v * h..]);
        s.store_d(b[v], &mut yb[c + v * h..]);
    }
}

/// Block row `jj` of a pass (`rows` starts at block row `j0`), columns `col .. col +
/// V·LANES/2`, from the `V` f64 vectors `y`, rounded to f32 and to `T`. Skipped unless
/// `j0 ≤ jj < j1` (`FULL`: the caller knows the whole pass is inside, so the test compiles
/// away). `V` even.
#[inline(always)]
fn row<S: Simd, T: Element, const V: usize, const FULL: bool>(
    s: S,
    rows: &mut [T],
    (d, col): (usize, usize),
    y: &[S::D; V],
    (jj, j0, j1): (usize, usize, usize),
) {
    if FULL || (jj >= j0 && jj < j1) {
        let r = &mut rows[(jj - j0) * d + col..];
        for v in (0..V).step_by(2) {
            s.store::<T>(s.narrow(y[v], y[v + 1]), &mut r[v * S::LANES / 2..]);
        }
    }
}

/// Column `c` of a span, down block rows `0 .. j1` (written from `j0`): the recurrence's
/// operations for one column.
#[inline(always)]
fn column<T: Element>(rows: &mut [T], sp: &SinCols<'_>, c: usize, j0: usize, j1: usize) {
    let (d, col) = (sp.d, sp.col0 + c);
    let (mut p, mut q, k) = (sp.y0[c], sp.y1[c], sp.k[c]);
    for j in 0..j1 {
        if j >= j0 {
            rows[(j - j0) * d + col] = T::from_f32(p as f32);
        }
        (p, q) = (q, k * q - p);
    }
}
