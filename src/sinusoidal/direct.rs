//! `fill_positions`, `fill_times` and `add`: every value computed directly, one exact-angle
//! sin/cos per value (the same `engine::math::sin_cos` RoPE uses), `SIN_CHUNK` frequencies at a
//! time so that the frequencies are computed once per call.
//!
//! ```text
//! for each chunk of frequencies ω_i:
//!     for each row r (position or time p; the padding row gets zeros):
//!         sin, cos = sin_cos(f64(p)·ω_i)          (exact reduction, f32 polynomial)
//!         write (or add in f32) at the layout's columns, rounded once to T
//! ```

use super::recurrence::SIN_CHUNK;
use super::spec::{At, SinSpec, sin_columns};
use crate::element::Element;
use crate::engine::math::sin_cos;
use crate::engine::vector::{MAX_LANES, Simd, pad};
use crate::types::SinusoidalLayout;

/// Fills (or adds to) `out`, whole rows at `at`, by the direct method.
#[inline(always)]
pub(crate) fn fill<S: Simd, T: Element>(
    s: S,
    out: &mut [T],
    spec: &SinSpec,
    at: At<'_>,
    add: bool,
) {
    let d = spec.d_model;
    let mut w = [0.0f64; SIN_CHUNK];
    let mut sbuf = [0.0f32; SIN_CHUNK];
    let mut cbuf = [0.0f32; SIN_CHUNK];
    let zeros = [0.0f32; SIN_CHUNK];
    let mut i0 = 0;
    while i0 < spec.pairs {
        let n = SIN_CHUNK.min(spec.pairs - i0);
        spec.frequencies(i0, &mut w[..n]);
        for (r, row) in out.chunks_exact_mut(d).enumerate() {
            let (p, pad) = at.position(r, spec.padding);
            let (sn, c) = if pad {
                (&zeros[..n], &zeros[..n])
            } else {
                sin_cos_row(s, p, &w[..n], &mut sbuf[..n], &mut cbuf[..n]);
                (&sbuf[..n], &cbuf[..n])
            };
            write(s, row, spec.layout, spec.pairs, i0, sn, c, add);
        }
        i0 += n;
    }
}

/// `sin[i], cos[i]` of `p·w[i]` (f64 angle, exact reduction; `trig::sin_cos` per lane).
#[inline(always)]
fn sin_cos_row<S: Simd>(s: S, p: f64, w: &[f64], sin: &mut [f32], cos: &mut [f32]) {
    let (l, h) = (S::LANES, S::LANES / 2);
    let pv = s.dsplat(p);
    let mut k = 0;
    while k < w.len() {
        let m = l.min(w.len() - k);
        let (lo, hi) = if m == l {
            (s.load_d(&w[k..]), s.load_d(&w[k + h..]))
        } else {
            let wt = pad(&w[k..]);
            (s.load_d(&wt[..]), s.load_d(&wt[h..]))
        };
        let (sv, cv) = sin_cos(s, s.dmul(pv, lo), s.dmul(pv, hi));
        if m == l {
            s.store(sv, &mut sin[k..]);
            s.store(cv, &mut cos[k..]);
        } else {
            let (mut st, mut ct) = ([0.0f32; MAX_LANES], [0.0f32; MAX_LANES]);
            s.store(sv, &mut st[..]);
            s.store(cv, &mut ct[..]);
            sin[k..].copy_from_slice(&st[..m]);
            cos[k..].copy_from_slice(&ct[..m]);
        }
        k += m;
    }
}

/// Writes (or adds) sin/cos of pairs `i0 .. i0 + sin.len()` into one row whose sine/cosine
/// halves are `pairs` wide: one f32 add when adding, one rounding to `T`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn write<S: Simd, T: Element>(
    s: S,
    row: &mut [T],
    layout: SinusoidalLayout,
    pairs: usize,
    i0: usize,
    sin: &[f32],
    cos: &[f32],
    add: bool,
) {
    let l = S::LANES;
    let nl = sin.len() / l * l;
    for k in (0..nl).step_by(l) {
        let (sv, cv) = (s.load(&sin[k..]), s.load(&cos[k..]));
        let i = i0 + k;
        match layout {
            SinusoidalLayout::Interleaved => {
                let (a, b) = s.zip(sv, cv);
                put(s, a, &mut row[2 * i..], add);
                put(s, b, &mut row[2 * i + l..], add);
            }
            SinusoidalLayout::Split => {
                put(s, sv, &mut row[i..], add);
                put(s, cv, &mut row[pairs + i..], add);
            }
            SinusoidalLayout::SplitCosFirst => {
                put(s, cv, &mut row[i..], add);
                put(s, sv, &mut row[pairs + i..], add);
            }
        }
    }
    // The rest, one value at a time: the same operations.
    for (k, (&sv, &cv)) in sin.iter().zip(cos).enumerate().skip(nl) {
        let (is, ic) = sin_columns(layout, pairs, i0 + k);
        if add {
            row[is] = T::from_f32(row[is].to_f32() + sv);
            row[ic] = T::from_f32(row[ic].to_f32() + cv);
        } else {
            row[is] = T::from_f32(sv);
            row[ic] = T::from_f32(cv);
        }
    }
}

/// Stores `v` at `dst[..LANES]` as `T`, or adds it to what is there (one f32 add, one
/// rounding). A function, not a closure: closures do not inherit the entry function's target
/// features.
#[inline(always)]
fn put<S: Simd, T: Element>(s: S, v: S::F, dst: &mut [T], add: bool) {
    let v = if add { s.add(s.load::<T>(dst), v) } else { v };
    s.store::<T>(v, dst);
}
