//! The reference backend: plain loops over plain IEEE operations, no SIMD written on purpose.
//! It is the oracle the other backends are tested against.

use super::Kernels;
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

impl Kernels for Scalar {
    fn cos_sin(p: i32, w: &[f32], cs: f32, ss: f32, cos: &mut [f32], sin: &mut [f32]) {
        for ((&wi, c), s) in w.iter().zip(cos.iter_mut()).zip(sin.iter_mut()) {
            let (sv, cv) = trig::sin_cos(p as f64 * wi as f64);
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

    fn rotate<T: Element>(
        row: &mut [T],
        head_dim: usize,
        half: usize,
        layout: Layout,
        pair0: usize,
        cos: &[f32],
        sin: &[f32],
    ) {
        for head in row.chunks_exact_mut(head_dim) {
            for (k, (&c, &s)) in cos.iter().zip(sin).enumerate() {
                let j = pair0 + k;
                let (ia, ib) = match layout {
                    Layout::Interleaved => (2 * j, 2 * j + 1),
                    Layout::RotateHalf => (j, j + half),
                };
                let (a, b) = rot(head[ia].to_f32(), head[ib].to_f32(), c, s);
                head[ia] = T::from_f32(a);
                head[ib] = T::from_f32(b);
            }
        }
    }
}

/// Writes (or adds) sin/cos of pairs `i0 .. i0 + sin.len()` into one sinusoidal row.
/// Shared by every backend: the cost is in the trigonometry, not here.
#[inline(always)]
pub(crate) fn write_sinusoid<T: Element>(
    row: &mut [T],
    layout: SinusoidalLayout,
    i0: usize,
    sin: &[f32],
    cos: &[f32],
    add: bool,
) {
    let half = row.len() / 2;
    for (k, (&s, &c)) in sin.iter().zip(cos).enumerate() {
        let i = i0 + k;
        let (is, ic) = match layout {
            SinusoidalLayout::Interleaved => (2 * i, 2 * i + 1),
            SinusoidalLayout::Split => (i, half + i),
        };
        if add {
            row[is] = T::from_f32(row[is].to_f32() + s);
            row[ic] = T::from_f32(row[ic].to_f32() + c);
        } else {
            row[is] = T::from_f32(s);
            row[ic] = T::from_f32(c);
        }
    }
}
