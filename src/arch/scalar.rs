//! The reference backend: plain loops over plain IEEE operations, no SIMD written on purpose.
//! It is the oracle the other backends are tested against.

use super::{Kernels, Pos, Rounding, SIN_CHUNK, SinCols, Tables, round_to};
use crate::element::Element;
use crate::rope::Layout;
use crate::sinusoidal::SinusoidalLayout;
use crate::trig;

pub(crate) struct Scalar;

/// The rotation of one pair: `(a·c − b·s, b·c + a·s)`, unfused.
#[inline(always)]
pub(crate) fn rot(a: f32, b: f32, c: f32, s: f32) -> (f32, f32) {
    (a * c - b * s, b * c + a * s)
}

/// The rotation of one pair under a rounding mode: `Once`/`HfUpcast` round once (at the
/// store, by the caller); `HfEager` rounds each product and the sum to `T`, as torch's eager
/// ops do in f16/bf16.
#[inline(always)]
pub(crate) fn rot_mode<T: Element>(a: f32, b: f32, c: f32, s: f32, round: Rounding) -> (f32, f32) {
    match round {
        Rounding::HfEager => {
            let r = round_to::<T>;
            (r(r(a * c) + r(b * -s)), r(r(b * c) + r(a * s)))
        }
        Rounding::Once | Rounding::HfUpcast => rot(a, b, c, s),
    }
}

impl Kernels for Scalar {
    fn cos_sin(p: Pos<'_>, w: &[f32], cs: f32, ss: f32, cos: &mut [f32], sin: &mut [f32]) {
        for (i, ((&wi, c), s)) in w.iter().zip(cos.iter_mut()).zip(sin.iter_mut()).enumerate() {
            let pi = match p {
                Pos::Splat(p) => p,
                Pos::PerPair(pp) => pp[i],
            };
            let (sv, cv) = trig::sin_cos(pi as f64 * wi as f64);
            *c = cv * cs;
            *s = sv * ss;
        }
    }

    fn sin_cos_f64(p: f64, w: &[f64], sin: &mut [f32], cos: &mut [f32]) {
        for ((&wi, s), c) in w.iter().zip(sin.iter_mut()).zip(cos.iter_mut()) {
            let (sv, cv) = trig::sin_cos(p * wi);
            *s = sv;
            *c = cv;
        }
    }

    fn rotate_head<T: Element>(
        win: &mut [T],
        half: usize,
        layout: Layout,
        pair0: usize,
        n: usize,
        tab: &Tables,
        round: Rounding,
    ) {
        for k in 0..n {
            let j = pair0 + k;
            let (ia, ib, c, s) = match layout {
                Layout::Interleaved => (2 * j, 2 * j + 1, tab.c[2 * k], tab.s[2 * k + 1]),
                Layout::RotateHalf => (j, j + half, tab.c[k], tab.s[k]),
            };
            let (a, b) = rot_mode::<T>(win[ia].to_f32(), win[ib].to_f32(), c, s, round);
            win[ia] = T::from_f32(a);
            win[ib] = T::from_f32(b);
        }
    }

    fn axpb<T: Element>(x: &mut [T], a: f32, b: f32) {
        for v in x {
            *v = T::from_f32(v.to_f32() * a + b);
        }
    }
}

/// Writes (or adds) sin/cos of pairs `i0 .. i0 + sin.len()` into one sinusoidal row whose
/// sine/cosine halves are `pairs` wide. Shared by every backend: the cost is in the
/// trigonometry, not here.
#[inline(always)]
pub(crate) fn write_sinusoid<T: Element>(
    row: &mut [T],
    layout: SinusoidalLayout,
    pairs: usize,
    i0: usize,
    sin: &[f32],
    cos: &[f32],
    add: bool,
) {
    for (k, (&s, &c)) in sin.iter().zip(cos).enumerate() {
        let i = i0 + k;
        let (is, ic) = sin_columns(layout, pairs, i);
        if add {
            row[is] = T::from_f32(row[is].to_f32() + s);
            row[ic] = T::from_f32(row[ic].to_f32() + c);
        } else {
            row[is] = T::from_f32(s);
            row[ic] = T::from_f32(c);
        }
    }
}

/// The sinusoidal recurrence for one span, rows `j0 .. j1` of its anchor block (`rows` holds
/// exactly those rows): see [`SinCols`] for the operations. Rows before `j0` are stepped
/// through but not written. Row by row, so that a compiler can vectorise across columns.
#[inline(always)]
pub(crate) fn sin_cols<T: Element>(rows: &mut [T], sp: &SinCols<'_>, j0: usize, j1: usize) {
    let (d, col0, m) = (sp.d, sp.col0, sp.k.len());
    let mut prev = [0.0f64; 2 * SIN_CHUNK];
    let mut cur = [0.0f64; 2 * SIN_CHUNK];
    let (prev, cur) = (&mut prev[..m], &mut cur[..m]);
    prev.copy_from_slice(sp.y0);
    cur.copy_from_slice(sp.y1);
    for j in 0..j1 {
        if j >= j0 {
            let row = &mut rows[(j - j0) * d + col0..][..m];
            for (o, &y) in row.iter_mut().zip(prev.iter()) {
                *o = T::from_f32(y as f32);
            }
        }
        for ((p, q), &k) in prev.iter_mut().zip(cur.iter_mut()).zip(sp.k) {
            (*p, *q) = (*q, k * *q - *p);
        }
    }
}

/// [`sin_cols`] for the single column `c`, down the rows: the same operations. The x86
/// tiers use it for the few columns left after their vectors, where the row-by-row loops,
/// compiled inside the AVX2 tier, became masked stores that are slow on Zen 3 (a 4096 × 130
/// split fill took 1.5× as long).
#[inline(always)]
pub(crate) fn sin_col<T: Element>(
    rows: &mut [T],
    sp: &SinCols<'_>,
    c: usize,
    j0: usize,
    j1: usize,
) {
    let (d, col) = (sp.d, sp.col0 + c);
    let (mut p, mut q, k) = (sp.y0[c], sp.y1[c], sp.k[c]);
    for j in 0..j1 {
        if j >= j0 {
            rows[(j - j0) * d + col] = T::from_f32(p as f32);
        }
        (p, q) = (q, k * q - p);
    }
}

/// The columns of pair `i`'s sine and cosine in a row with `pairs` pairs.
#[inline(always)]
pub(crate) fn sin_columns(layout: SinusoidalLayout, pairs: usize, i: usize) -> (usize, usize) {
    match layout {
        SinusoidalLayout::Interleaved => (2 * i, 2 * i + 1),
        SinusoidalLayout::Split => (i, pairs + i),
        SinusoidalLayout::SplitCosFirst => (pairs + i, i),
    }
}
