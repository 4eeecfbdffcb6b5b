//! The three-term recurrence `y(j + 2) = k·y(j + 1) − y(j)` down the rows of a block, for a
//! span of columns at once: the inner loop of the sinusoidal fill (`sinusoidal/recurrence.rs`
//! owns the algorithm around it: anchors, row groups, frequency chunks).
//!
//! ```text
//! for each strip of whole vectors of the span's columns (2·LANES, then LANES, then single columns):
//!     for each pass of PASS rows:                  // the strip's state: one round trip through L1 per pass
//!         store y(j), y(j + 1) rounded to f32, then to T (rows before j0 stepped, not written)
//!         y(j + 2) = k·y(j + 1) − y(j)             // f64, unfused, in this order on every tier
//! ```
//!
//! Rows go out through raw pointers inside a block whose bounds are checked once per span:
//! per-store slice checks and offsets cost a visible share of the fill (`cargo bench --bench
//! ratio`, the sinusoidal rows). `PASS` 8 measured faster than 4 and 16 in the same benchmark.

use super::vector::Simd;
use crate::element::{Dtype, Element};

/// Rows per pass over a strip (even).
const PASS: usize = 8;
/// The most columns of one span.
pub(crate) const MAX_COLUMNS: usize = 128;

/// One span of consecutive output columns of a block of rows: column `col0 + c` of block row
/// `j` holds `y_j[c]`, where `y_0`, `y_1` are the f64 values at block rows 0 and 1 and
/// `y_{j+2} = k[c]·y_{j+1} − y_j` (unfused, in this order on every tier); each value rounded
/// once to f32 and once to `T`.
pub(crate) struct Columns<'a> {
    /// Row width.
    pub d: usize,
    /// The span's first column.
    pub col0: usize,
    /// Per column of the span: values at block rows 0 and 1, and the step `2·cos ω`.
    pub y0: &'a [f64],
    pub y1: &'a [f64],
    pub k: &'a [f64],
}

/// Block rows `j0 .. j1` of one span (`rows` holds exactly those rows): strips of `2·LANES`
/// columns (four f64 vectors), then one of `LANES`, then single columns.
#[inline(always)]
pub(crate) fn run<S: Simd, T: Element>(
    s: S,
    rows: &mut [T],
    sp: &Columns<'_>,
    j0: usize,
    j1: usize,
) {
    let (l, m) = (S::LANES, sp.k.len());
    let m4 = m / (2 * l) * (2 * l);
    let m2 = m4 + (m - m4) / l * l;
    // Every row and column `row` may store to is inside `rows`.
    assert!(m <= MAX_COLUMNS && j0 <= j1);
    assert!(sp.col0 + m <= sp.d && rows.len() >= (j1 - j0) * sp.d);
    assert!(sp.y0.len() == m && sp.y1.len() == m);
    let mut ya = [0.0f64; MAX_COLUMNS];
    let mut yb = [0.0f64; MAX_COLUMNS];
    ya[..m].copy_from_slice(sp.y0);
    yb[..m].copy_from_slice(sp.y1);
    let base = rows.as_mut_ptr();
    let mut j = 0;
    while j < j1 {
        let (ya, yb, js) = (&mut ya[..], &mut yb[..], (j, j0, j1));
        // SAFETY: block rows `j0 .. j1` of `d` values start at `base` and columns
        // `col0 .. col0 + m ≤ d` (asserted above): what `row` stores to.
        unsafe {
            if j >= j0 && j + PASS <= j1 {
                strips::<S, T, 4, true>(s, base, sp, ya, yb, (0, m4), js);
                strips::<S, T, 2, true>(s, base, sp, ya, yb, (m4, m2), js);
            } else {
                // Starts before `j0` or ends past `j1` (a fill's first or last pass).
                strips::<S, T, 4, false>(s, base, sp, ya, yb, (0, m4), js);
                strips::<S, T, 2, false>(s, base, sp, ya, yb, (m4, m2), js);
            }
        }
        j += PASS;
    }
    // Fewer than LANES columns left: the same operations, one column at a time.
    for c in m2..m {
        column(rows, sp, c, j0, j1);
    }
}

/// [`pass`] over a span's strips `c .. cend` of `V·LANES/2` columns.
///
/// # Safety
/// As [`pass`], for every strip of the range.
#[inline(always)]
unsafe fn strips<S: Simd, T: Element, const V: usize, const FULL: bool>(
    s: S,
    base: *mut T,
    sp: &Columns<'_>,
    ya: &mut [f64],
    yb: &mut [f64],
    (c, cend): (usize, usize),
    js: (usize, usize, usize),
) {
    for c in (c..cend).step_by(V * S::LANES / 2) {
        // SAFETY: the caller's precondition, for this strip.
        unsafe { pass::<S, T, V, FULL>(s, base, sp, (&mut *ya, &mut *yb), c, js) };
    }
}

/// One pass over one strip: span columns `c .. c + V·LANES/2`, block rows `j .. j + PASS`,
/// the state (values at rows `j`, `j + 1`) loaded from and stored back to `ya`, `yb`. Rows
/// outside `j0 .. j1` are stepped through but not written; `FULL`: the whole pass lies inside
/// them (asserted).
///
/// # Safety
/// Block rows `j0 .. j1` of `sp.d` values start at `base`, and `sp.col0 + c + V·LANES/2 ≤
/// sp.d`.
#[inline(always)]
unsafe fn pass<S: Simd, T: Element, const V: usize, const FULL: bool>(
    s: S,
    base: *mut T,
    sp: &Columns<'_>,
    (ya, yb): (&mut [f64], &mut [f64]),
    c: usize,
    (j, j0, j1): (usize, usize, usize),
) {
    assert!(!FULL || (j >= j0 && j + PASS <= j1));
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
        // SAFETY: (both rows) the caller's precondition.
        unsafe { row::<S, T, V, FULL>(s, base, dc, &a, (j + g, j0, j1)) };
        for v in 0..V {
            a[v] = s.dsub(s.dmul(k[v], b[v]), a[v]);
        }
        // SAFETY: as above.
        unsafe { row::<S, T, V, FULL>(s, base, dc, &b, (j + g + 1, j0, j1)) };
        for v in 0..V {
            b[v] = s.dsub(s.dmul(k[v], a[v]), b[v]);
        }
    }
    for v in 0..V {
        s.store_d(a[v], &mut ya[c + v * h..]);
        s.store_d(b[v], &mut yb[c + v * h..]);
    }
}

/// Block row `jj` of a pass (`base` is block row `j0`), columns `col .. col + V·LANES/2`,
/// from the `V` f64 vectors `y`, rounded to f32 and to `T`. Skipped unless `j0 ≤ jj < j1`
/// (`FULL`: the whole pass is inside, so the test compiles away).
///
/// # Safety
/// Block rows `j0 .. j1` of `d` values start at `base`, and `col + V·LANES/2 ≤ d`; `V` even.
#[inline(always)]
unsafe fn row<S: Simd, T: Element, const V: usize, const FULL: bool>(
    s: S,
    base: *mut T,
    (d, col): (usize, usize),
    y: &[S::D; V],
    (jj, j0, j1): (usize, usize, usize),
) {
    if FULL || (jj >= j0 && jj < j1) {
        // SAFETY: `j0 ≤ jj < j1` (tested, or `pass` asserted it for the whole pass), so the
        // row is one of those at `base`; its columns `col .. col + V·LANES/2` end by `d`.
        unsafe {
            let (r, h) = (base.add((jj - j0) * d + col), S::LANES / 2);
            if V.is_multiple_of(4) && matches!(T::DTYPE, Dtype::Bf16) && S::BF16_PAIR {
                // Two vectors at a time: bf16's rounding test once for both.
                for v in (0..V).step_by(4) {
                    let (a, b) = (s.narrow(y[v], y[v + 1]), s.narrow(y[v + 2], y[v + 3]));
                    s.st2_joined::<T>(a, b, r.add(v * h));
                }
            } else {
                for v in (0..V).step_by(2) {
                    s.st_narrow::<T>(y[v], y[v + 1], r.add(v * h));
                }
            }
        }
    }
}

/// Column `c` of a span, down block rows `0 .. j1` (written from `j0`): the recurrence's
/// operations for one column.
#[inline(always)]
fn column<T: Element>(rows: &mut [T], sp: &Columns<'_>, c: usize, j0: usize, j1: usize) {
    let (d, col) = (sp.d, sp.col0 + c);
    let (mut p, mut q, k) = (sp.y0[c], sp.y1[c], sp.k[c]);
    for j in 0..j1 {
        if j >= j0 {
            rows[(j - j0) * d + col] = T::from_f32(p as f32);
        }
        (p, q) = (q, k * q - p);
    }
}
