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
//! Inside a block, a span's columns run through `engine::three_term` (strips of whole vectors,
//! a few rows at a time). Row groups keep a group's rows in
//! L2 while every chunk of frequencies writes them (sweeping one chunk across the whole table
//! touches every row once per chunk). The order changes no value. Settled with `cargo bench
//! --bench ratio` (the sinusoidal rows) and `cargo bench --bench sinusoidal`: `SIN_BLOCK`
//! 256 against 64, 128 and 512; groups against whole-table sweeps.
//!
//! Error, positions `p ≤ 2^26` (the domain), vs the f64 formula `sin/cos(p·ω_exact)`:
//! * the angle `a·ω` rounded in f64: ≤ 2^-53·2^26 ≈ 7.5e-9 rad; `ω` itself within ~8 ulps
//!   (`spec::sin_frequencies`): ≤ 8·2^-53·2^26 ≈ 6e-8 rad in the worst case (both shared
//!   with the direct method of `fill_positions`); the start values' reduction is exact
//!   there (`trig::MAX_ANGLE`);
//! * the recurrence: an error `δ` made at step `m` reaches row `j` multiplied by the
//!   Chebyshev value `U_{j−m−1}(cos ω)`, at most `j − m` in size. Each step makes
//!   ≤ 3·2^-53 (|k·y| ≤ 2, |y| ≤ 1) and `k`'s own error adds ≤ 2·3e-16·|y|; the start values
//!   are within ~3e-16. Over the 254 steps of a block: ≤ (254·255/2)·(3.3e-16 + 6e-16) +
//!   256·6e-16 ≈ 3e-11, whatever the table length (the blocks restart);
//! * the rounding to f32: ≤ 2^-25 ≈ 3e-8.
//!
//! Every value is within ≈ 3e-8 + 6.8e-8 + 3e-11 ≈ 1e-7 of the f64 formula (4.8e-8 measured
//! at the top of the domain): under half the 2.4e-7 contract (`tests/properties.rs`: `sinusoidal_accuracy_formula`,
//! `sinusoidal_fill_recurrence_accuracy`). The values are not bitwise those of the direct
//! method (`fill_positions`), which rounds the reduced angle to f32.

use super::spec::SinSpec;
use crate::element::Element;
use crate::engine::math::sin_cos64;
use crate::engine::three_term::{self, Columns};

// A chunk's columns (two per frequency) fit one span of the recurrence.
const _: () = assert!(2 * SIN_CHUNK <= three_term::MAX_COLUMNS);
use crate::engine::vector::Simd;
use crate::trig;
use crate::types::SinusoidalLayout;

/// Rows per anchor block.
pub(crate) const SIN_BLOCK: u64 = 256;
/// Output bytes per row group: an L2's worth on current x86 cores, and at least one block.
const SIN_GROUP_BYTES: u64 = 512 << 10;
/// Frequencies per chunk.
pub(crate) const SIN_CHUNK: usize = 64;

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
                    let sp = Columns {
                        d,
                        col0,
                        y0: &y0[c0..c1],
                        y1: &y1[c0..c1],
                        k: &k[c0..c1],
                    };
                    three_term::run(s, block, &sp, j0 as usize, j1 as usize);
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
