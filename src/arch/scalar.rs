//! The reference backend: plain loops over plain IEEE operations, no SIMD written on purpose.
//! It is the oracle the other backends are tested against.

use super::{Kernels, Pos, Rounding, STREAMS, SinChunk, Tables, round_to};
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

/// The sinusoidal recurrence for pairs `k0 .. k1` of a chunk, rows `j0 .. j1` of its anchor
/// block (`rows` holds exactly those rows): see [`SinChunk`] for the operations. Rows before
/// `j0` are stepped through but not written.
#[inline(always)]
pub(crate) fn sin_rows<T: Element>(
    rows: &mut [T],
    ch: &SinChunk<'_>,
    k0: usize,
    k1: usize,
    j0: usize,
    j1: usize,
) {
    let d = ch.d;
    let last = STREAMS - 1;
    for k in k0..k1 {
        let i = ch.i0 + k;
        let (is, ic) = sin_columns(ch.layout, ch.pairs, i);
        let (a_s, a_c) = (ch.s[k], ch.c[k]);
        let mut st = [(a_s, a_c); STREAMS];
        for (q, st) in st.iter_mut().enumerate().skip(1) {
            *st = trig::rotate64(a_s, a_c, ch.steps.s[q - 1][k], ch.steps.c[q - 1][k]);
        }
        let (rs, rc) = (ch.steps.s[last][k], ch.steps.c[last][k]);
        let mut j = 0;
        while j < j1 {
            for (q, st) in st.iter_mut().enumerate() {
                let jj = j + q;
                if jj >= j0 && jj < j1 {
                    let row = &mut rows[(jj - j0) * d..(jj - j0 + 1) * d];
                    row[is] = T::from_f32(st.0 as f32);
                    row[ic] = T::from_f32(st.1 as f32);
                }
                *st = trig::rotate64(st.0, st.1, rs, rc);
            }
            j += STREAMS;
        }
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
