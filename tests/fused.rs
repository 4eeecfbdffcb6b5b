//! Rotate-into (`apply_into`, `apply_views_into`, `apply_qk_into`) and QK-norm + RoPE
//! (`apply_normed*`, `RmsNorm`): what each computes, against an independent reference, on
//! every backend that runs here, tails included; and bad input of every entry point (a typed
//! error, nothing written).
//!
//! References:
//! * rotate-into under `Rounding::Once` is *bitwise* rotating an f32 copy of the source with
//!   [`Rope::apply`] on the same backend and rounding it once (`Element::from_f32`); under the
//!   HF modes, `apply` on a copy in the source type, then converted. Every channel of a
//!   destination head is written (outside the rotary window: converted); nothing outside the
//!   destination heads is.
//! * QK-norm + RoPE: bitwise [`Rope::apply`] (same backend) on the f32 norm written out by this
//!   file (`norm_f32`), rounded once; within a stated bound of an f64 derivation (exact
//!   mean, exact `1/sqrt`, exact angles); and, under `Rounding::HfEager`, bitwise against
//!   golden vectors computed by `tests/data/qknorm_hf/gen.py` from HF's module code.
//! * The backends agree with `Scalar` through both: every backend is held to the same
//!   bitwise reference built with its own `apply` (whose agreement with `Scalar` is
//!   `tests/backends.rs`'s business), and to the same f64 bound.

mod common;

use common::rng::Rng;
use common::{backends, bits};
use posenc::{
    Backend, Element, Error, Layout, RmsNorm, Rope, RopeConfig, Rounding, Scaling, View, Yarn,
    bf16, f16,
};

impl Rng {
    /// Values in `[-4, 4)`.
    fn value(&mut self) -> f32 {
        (self.unit() * 8.0 - 4.0) as f32
    }
    fn vec<T: Element>(&mut self, n: usize) -> Vec<T> {
        (0..n).map(|_| T::from_f32(self.value())).collect()
    }
    fn positions(&mut self, n: usize) -> Vec<i32> {
        (0..n).map(|_| self.below(70_000) as i32 - 1000).collect()
    }
}

/// Shapes `(head_dim, rotary_dim, rotary_offset)`: full, partial with an offset, tails
/// against every tier's lanes, and two chunks per token (rotary_dim 272 > 2·128).
const SHAPES: &[(usize, usize, usize)] = &[
    (8, 8, 0),
    (20, 12, 4),
    (64, 64, 0),
    (96, 32, 0),
    (128, 128, 0),
    (130, 126, 2),
    (288, 272, 8),
];

fn rope_on(b: Backend, hd: usize, rd: usize, off: usize, layout: Layout, sc: Scaling) -> Rope {
    let cfg = RopeConfig::new(hd, 10_000.0, layout)
        .rotary_dim(rd)
        .rotary_offset(off)
        .scaling(sc);
    Rope::new(&cfg).unwrap().with_backend(b).unwrap()
}

/// A destination slot for `tokens` tokens of `n_heads` heads in a larger cache of
/// `max_ctx` positions, at position `start`: token-major or head-major.
fn slot(head_major: bool, n_heads: usize, max_ctx: usize, start: usize, hd: usize) -> View {
    if head_major {
        View {
            offset: start * hd,
            ..View::head_major(n_heads, max_ctx, hd)
        }
    } else {
        View {
            offset: start * n_heads * hd,
            ..View::token_major(n_heads, hd)
        }
    }
}

/// Element index of channel `c` of head `h` of token `t` in view `v`.
fn at(v: &View, t: usize, h: usize, c: usize) -> usize {
    v.offset + t * v.token_stride + h * v.head_stride + c
}

const SENTINEL: f32 = 12345.0;

/// Checks `dst` against `expect` (token-major `tokens × n_heads × hd` of f32 values already
/// rounded to `O`) through `view`, and that nothing else was written.
fn check_dst<O: Element>(
    dst: &[O],
    view: &View,
    expect: &[O],
    tokens: usize,
    hd: usize,
    what: &str,
) {
    let mut written = vec![false; dst.len()];
    for t in 0..tokens {
        for h in 0..view.n_heads {
            for c in 0..hd {
                let i = at(view, t, h, c);
                written[i] = true;
                let e = expect[(t * view.n_heads + h) * hd + c];
                assert_eq!(
                    dst[i].to_f32().to_bits(),
                    e.to_f32().to_bits(),
                    "{what}: token {t} head {h} channel {c}: {:?} vs {:?}",
                    dst[i],
                    e
                );
            }
        }
    }
    for (i, w) in written.iter().enumerate() {
        if !w {
            assert_eq!(
                dst[i].to_f32(),
                O::from_f32(SENTINEL).to_f32(),
                "{what}: {i} written"
            );
        }
    }
}

/// The reference of rotate-into: `apply` on a copy (f32 under `Once`, `I` under the HF
/// modes), then each value rounded once to `O`.
fn reference_into<I: Element, O: Element>(
    rope: &Rope,
    src: &[I],
    n_heads: usize,
    pos: &[i32],
) -> Vec<O> {
    if rope.rounding() == Rounding::Once {
        let mut copy: Vec<f32> = src.iter().map(|v| v.to_f32()).collect();
        rope.apply(&mut copy, n_heads, pos).unwrap();
        copy.iter().map(|&v| O::from_f32(v)).collect()
    } else {
        let mut copy = src.to_vec();
        rope.apply(&mut copy, n_heads, pos).unwrap();
        copy.iter().map(|v| O::from_f32(v.to_f32())).collect()
    }
}

fn into_case<I: Element, O: Element>(
    rng: &mut Rng,
    b: Backend,
    layout: Layout,
    rounding: Rounding,
) {
    for &(hd, rd, off) in SHAPES {
        let rope = rope_on(b, hd, rd, off, layout, Scaling::None).with_rounding(rounding);
        for (tokens, n_heads) in [(1, 1), (1, 5), (3, 2), (6, 3)] {
            let src: Vec<I> = rng.vec(tokens * n_heads * hd);
            let pos = rng.positions(tokens);
            let expect: Vec<O> = reference_into(&rope, &src, n_heads, &pos);
            for head_major in [false, true] {
                let (max_ctx, start) = (tokens + 4, 3);
                let view = slot(head_major, n_heads, max_ctx, start, hd);
                let mut dst = vec![O::from_f32(SENTINEL); n_heads * max_ctx * hd];
                let before = bits(&src);
                rope.apply_into(&src, n_heads, &mut dst, view, &pos[..])
                    .unwrap();
                assert_eq!(bits(&src), before, "source written");
                let what = format!(
                    "{b:?} {layout:?} {rounding:?} {:?}->{:?} hd {hd} rd {rd} off {off} t {tokens} h {n_heads} hm {head_major}",
                    I::DTYPE,
                    O::DTYPE
                );
                check_dst(&dst, &view, &expect, tokens, hd, &what);
                // From a table made once: the same bits.
                let mut buf = vec![0f32; rope.table_len(tokens)];
                let table = rope.table(&pos, &mut buf).unwrap();
                let mut dst2 = vec![O::from_f32(SENTINEL); dst.len()];
                rope.apply_into(&src, n_heads, &mut dst2, view, table)
                    .unwrap();
                assert_eq!(bits(&dst2), bits(&dst), "{what}: table");
                // From usize positions (converted a piece at a time): the same bits.
                if pos.iter().all(|&p| p >= 0) {
                    let up: Vec<usize> = pos.iter().map(|&p| p as usize).collect();
                    let mut dst3 = vec![O::from_f32(SENTINEL); dst.len()];
                    rope.apply_into(&src, n_heads, &mut dst3, view, &up[..])
                        .unwrap();
                    assert_eq!(bits(&dst3), bits(&dst), "{what}: usize positions");
                }
            }
        }
    }
}

macro_rules! all_pairs {
    ($f:ident, $($args:expr),*) => {
        $f::<f32, f32>($($args),*);
        $f::<f32, f16>($($args),*);
        $f::<f32, bf16>($($args),*);
        $f::<f16, f32>($($args),*);
        $f::<f16, f16>($($args),*);
        $f::<f16, bf16>($($args),*);
        $f::<bf16, f32>($($args),*);
        $f::<bf16, f16>($($args),*);
        $f::<bf16, bf16>($($args),*);
    };
}

#[test]
fn into_is_rotating_an_f32_copy_then_rounding_once_all_pairs_backends_layouts() {
    let mut rng = Rng::new(1);
    for b in backends() {
        for layout in [Layout::RotateHalf, Layout::Interleaved] {
            all_pairs!(into_case, &mut rng, b, layout, Rounding::Once);
        }
    }
}

#[test]
fn into_under_hf_modes_is_apply_on_a_source_copy_then_converted() {
    let mut rng = Rng::new(2);
    for b in backends() {
        for rounding in [Rounding::HfEager, Rounding::HfUpcast] {
            all_pairs!(into_case, &mut rng, b, Layout::RotateHalf, rounding);
        }
    }
}

#[test]
fn into_rounds_once_where_rotating_in_the_cache_rounds_twice() {
    // The motivating case: rotating bf16 values inside the cache slot rounds the
    // input, then the output; rotate-into rounds the f32 result once.
    let rope = Rope::new(&RopeConfig::new(128, 5e5, Layout::RotateHalf)).unwrap();
    let mut rng = Rng::new(3);
    let (tokens, heads) = (1, 8);
    let k: Vec<f32> = rng.vec(tokens * heads * 128);
    let mut cache = vec![bf16::ZERO; k.len()];
    rope.apply_into(
        &k,
        heads,
        &mut cache,
        View::token_major(heads, 128),
        &[4000],
    )
    .unwrap();
    let mut twice: Vec<bf16> = k.iter().map(|&v| bf16::from_f32(v)).collect();
    rope.apply(&mut twice, heads, &[4000]).unwrap();
    let differ = cache.iter().zip(&twice).filter(|(a, b)| a != b).count();
    assert!(differ > 0, "the two-rounding path should differ somewhere");
    let mut once = k.clone();
    rope.apply(&mut once, heads, &[4000]).unwrap();
    assert!(
        cache
            .iter()
            .zip(&once)
            .all(|(c, o)| *c == bf16::from_f32(*o))
    );
}

#[test]
fn views_into_moves_fused_qkv_heads_into_head_major_slots() {
    let mut rng = Rng::new(4);
    for b in backends() {
        for &(hd, rd, off) in SHAPES {
            let rope = rope_on(b, hd, rd, off, Layout::Interleaved, Scaling::None);
            let (tokens, nq, nk) = (5, 4, 2);
            let row = (nq + 2 * nk) * hd;
            let qkv: Vec<f32> = rng.vec(tokens * row);
            let pos = rng.positions(tokens);
            let kview = View {
                n_heads: nk,
                token_stride: row,
                head_stride: hd,
                offset: nq * hd,
            };
            let vview = View {
                offset: (nq + nk) * hd,
                ..kview
            };
            let max_ctx = 16;
            // K and V caches in one buffer, head-major each.
            let kslot = slot(true, nk, max_ctx, 7, hd);
            let vslot = View {
                offset: kslot.offset + nk * max_ctx * hd,
                ..kslot
            };
            let mut cache = vec![f16::from_f32(SENTINEL); 2 * nk * max_ctx * hd];
            rope.apply_views_into(&qkv, &[kview, vview], &mut cache, &[kslot, vslot], &pos[..])
                .unwrap();
            for (sv, dv) in [(kview, kslot), (vview, vslot)] {
                let mut heads = vec![0f32; tokens * nk * hd];
                for t in 0..tokens {
                    for h in 0..nk {
                        for c in 0..hd {
                            heads[(t * nk + h) * hd + c] = qkv[at(&sv, t, h, c)];
                        }
                    }
                }
                let expect: Vec<f16> = reference_into(&rope, &heads, nk, &pos);
                for t in 0..tokens {
                    for h in 0..nk {
                        for c in 0..hd {
                            let (g, e) = (cache[at(&dv, t, h, c)], expect[(t * nk + h) * hd + c]);
                            assert_eq!(g.to_bits(), e.to_bits(), "{b:?} hd {hd} t {t} h {h} c {c}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn qk_into_rotates_q_in_place_and_k_into_the_cache() {
    let mut rng = Rng::new(5);
    for b in backends() {
        for &(hd, rd, off) in SHAPES {
            let rope = rope_on(
                b,
                hd,
                rd,
                off,
                Layout::RotateHalf,
                Scaling::Yarn(Yarn::new(4.0, 4096)),
            );
            let (tokens, nq, nk) = (3, 8, 2);
            let q0: Vec<bf16> = rng.vec(tokens * nq * hd);
            let k: Vec<bf16> = rng.vec(tokens * nk * hd);
            let pos: Vec<u32> = (0..tokens as u32).map(|t| 90 + t).collect();
            let ipos: Vec<i32> = pos.iter().map(|&p| p as i32).collect();
            let view = slot(false, nk, 8, 2, hd);
            let mut cache = vec![bf16::from_f32(SENTINEL); 8 * nk * hd];
            let mut q = q0.clone();
            rope.apply_qk_into(&mut q, nq, &k, nk, &mut cache, view, &pos[..])
                .unwrap();
            let mut q_ref = q0.clone();
            rope.apply(&mut q_ref, nq, &ipos[..]).unwrap();
            assert_eq!(bits(&q), bits(&q_ref), "{b:?} hd {hd}: q");
            let expect: Vec<bf16> = reference_into(&rope, &k, nk, &ipos);
            check_dst(&cache, &view, &expect, tokens, hd, "qk_into k");
        }
    }
}

// ---------------------------------------------------------------------------------------
// QK-norm + RoPE
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Head,
    OnePlus,
    Row,
}

fn norm_of<'w>(kind: Kind, w: &'w [f32], eps: f32) -> RmsNorm<'w> {
    match kind {
        Kind::Head => RmsNorm::per_head(w, eps),
        Kind::OnePlus => RmsNorm::per_head_one_plus(w, eps),
        Kind::Row => RmsNorm::per_row(w, eps),
    }
}

fn weights(rng: &mut Rng, kind: Kind, n_heads: usize, hd: usize) -> Vec<f32> {
    let n = if kind == Kind::Row { n_heads * hd } else { hd };
    (0..n).map(|_| (rng.unit() * 1.5 + 0.25) as f32).collect()
}

/// The norm as posenc defines it under `Rounding::Once`, written out: the mean of the
/// squares exactly (f64) rounded once to f32, `r = 1 / sqrt(mean + eps)` in f32, then
/// `(x·r)·w'` in f32 (`w' = 1 + w` for Gemma). Token-major `x`, f32 out.
fn norm_f32(x: &[f32], n_heads: usize, hd: usize, kind: Kind, w: &[f32], eps: f32) -> Vec<f32> {
    let r_of = |v: &[f32]| {
        let sum: f64 = v.iter().map(|&a| (a as f64) * (a as f64)).sum();
        let mean = (sum / v.len() as f64) as f32;
        1.0 / (mean + eps).sqrt()
    };
    let mut out = vec![0f32; x.len()];
    for (row, orow) in x.chunks(n_heads * hd).zip(out.chunks_mut(n_heads * hd)) {
        let row_r = r_of(row);
        for h in 0..n_heads {
            let head = &row[h * hd..(h + 1) * hd];
            let r = if kind == Kind::Row { row_r } else { r_of(head) };
            for c in 0..hd {
                let xr = head[c] * r;
                orow[h * hd + c] = match kind {
                    Kind::Head => xr * w[c],
                    Kind::OnePlus => xr * (1.0 + w[c]),
                    Kind::Row => xr * w[h * hd + c],
                };
            }
        }
    }
    out
}

fn normed_case<I: Element, O: Element>(rng: &mut Rng, b: Backend, layout: Layout) {
    for &(hd, rd, off) in SHAPES {
        let rope = rope_on(b, hd, rd, off, layout, Scaling::None);
        // 19 heads: the kernels take the norm factors of a group of 16 heads before rotating
        // them, so one full group and a partial one.
        for (kind, (tokens, n_heads)) in [Kind::Head, Kind::OnePlus, Kind::Row]
            .into_iter()
            .flat_map(|k| [(k, (3, 3)), (k, (2, 19))])
        {
            let w = weights(rng, kind, n_heads, hd);
            let eps = 1e-6;
            let norm = norm_of(kind, &w, eps);
            let x: Vec<I> = rng.vec(tokens * n_heads * hd);
            let pos = rng.positions(tokens);
            let wide: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
            let mut expect = norm_f32(&wide, n_heads, hd, kind, &w, eps);
            rope.apply(&mut expect, n_heads, &pos[..]).unwrap();
            let what = format!(
                "{b:?} {layout:?} {kind:?} {:?}->{:?} hd {hd} rd {rd} off {off}",
                I::DTYPE,
                O::DTYPE
            );
            // Into a head-major slot.
            let view = slot(true, n_heads, tokens + 2, 1, hd);
            let mut dst = vec![O::from_f32(SENTINEL); n_heads * (tokens + 2) * hd];
            rope.apply_normed_into(&x, n_heads, &norm, &mut dst, view, &pos[..])
                .unwrap();
            let e_o: Vec<O> = expect.iter().map(|&v| O::from_f32(v)).collect();
            check_dst(&dst, &view, &e_o, tokens, hd, &what);
            // In place (when the pair is one type), and Q + K in one call.
            if I::DTYPE == O::DTYPE && rd > 256 {
                // In place needs each head read whole before it is written: a typed error.
                let mut y = x.clone();
                let e = rope.apply_normed(&mut y, n_heads, &norm, &pos[..]);
                assert!(matches!(
                    e,
                    Err(Error::ParameterOutOfRange {
                        what: "rotary_dim",
                        ..
                    })
                ));
                assert_eq!(bits(&y), bits(&x), "{what}: written on error");
            } else if I::DTYPE == O::DTYPE {
                let mut y = x.clone();
                rope.apply_normed(&mut y, n_heads, &norm, &pos[..]).unwrap();
                let e_i: Vec<I> = expect.iter().map(|&v| I::from_f32(v)).collect();
                assert_eq!(bits(&y), bits(&e_i), "{what}: in place");
                // From a table made once, its rows on a 64-byte boundary (read where they lie)
                // and 16 bytes past one (staged): the same bits.
                let len = rope.table_len(tokens);
                let mut buf = vec![0f32; len + 32];
                let a = (64 - buf.as_ptr().addr() % 64) % 64 / 4;
                for at in [a, a + 4] {
                    let table = rope.table(&pos, &mut buf[at..at + len]).unwrap();
                    let mut y = x.clone();
                    rope.apply_normed(&mut y, n_heads, &norm, table).unwrap();
                    assert_eq!(bits(&y), bits(&e_i), "{what}: from a table at {at}");
                }
                let (mut q, mut k) = (x.clone(), x.clone());
                rope.apply_qk_normed(&mut q, n_heads, &norm, &mut k, n_heads, &norm, &pos[..])
                    .unwrap();
                assert_eq!(bits(&q), bits(&e_i), "{what}: qk q");
                assert_eq!(bits(&k), bits(&e_i), "{what}: qk k");
            }
        }
    }
}

#[test]
fn normed_is_apply_after_the_f32_norm_rounded_once_all_pairs_backends() {
    let mut rng = Rng::new(6);
    for b in backends() {
        for layout in [Layout::RotateHalf, Layout::Interleaved] {
            all_pairs!(normed_case, &mut rng, b, layout);
        }
    }
}

/// The stated bound of QK-norm + RoPE (f32 out) against the f64 derivation: every output is
/// within `16·u·m·(|ŷ_a| + |ŷ_b|)` (`u = 2^-24`, `ŷ` the exact normalised pair, `m` the
/// attention factor) plus `2^-140` (underflow). Error budget: the mean rounded once (u), the
/// `+ eps`, `sqrt` and `1/` (3u), hence `r` within ~3.5u; `x·r` and `·w` (2u); cos/sin and the
/// attention factor (under 2u); the rotation (2u).
#[test]
fn normed_is_within_the_stated_bound_of_an_f64_derivation() {
    let mut rng = Rng::new(7);
    let u = 1.0 / 16_777_216.0f64;
    for b in backends() {
        for layout in [Layout::RotateHalf, Layout::Interleaved] {
            for &(hd, rd, off) in SHAPES {
                let sc = Scaling::Yarn(Yarn::new(8.0, 4096));
                let rope = rope_on(b, hd, rd, off, layout, sc);
                let m = rope.attention_factor() as f64;
                for kind in [Kind::Head, Kind::OnePlus, Kind::Row] {
                    let (tokens, n_heads) = (4, 2);
                    let w = weights(&mut rng, kind, n_heads, hd);
                    let eps = 1e-5f32;
                    let x: Vec<f32> = rng.vec(tokens * n_heads * hd);
                    let pos = rng.positions(tokens);
                    let mut y = vec![0f32; x.len()];
                    let v = View::token_major(n_heads, hd);
                    let norm = norm_of(kind, &w, eps);
                    rope.apply_normed_into(&x, n_heads, &norm, &mut y, v, &pos[..])
                        .unwrap();
                    let row = n_heads * hd;
                    for t in 0..tokens {
                        let xr = &x[t * row..(t + 1) * row];
                        let ms = |v: &[f32]| {
                            v.iter().map(|&a| (a as f64).powi(2)).sum::<f64>() / v.len() as f64
                        };
                        for h in 0..n_heads {
                            let head = &xr[h * hd..(h + 1) * hd];
                            let mean = if kind == Kind::Row { ms(xr) } else { ms(head) };
                            let r = 1.0 / (mean + eps as f64).sqrt();
                            let yhat: Vec<f64> = (0..hd)
                                .map(|c| {
                                    let wc = match kind {
                                        Kind::Head => w[c] as f64,
                                        Kind::OnePlus => 1.0 + w[c] as f64,
                                        Kind::Row => w[h * hd + c] as f64,
                                    };
                                    head[c] as f64 * r * wc
                                })
                                .collect();
                            let got = &y[t * row + h * hd..t * row + (h + 1) * hd];
                            let half = rd / 2;
                            for c in 0..hd {
                                let (exact, scale) = if c < off || c >= off + rd {
                                    (yhat[c], yhat[c].abs())
                                } else {
                                    let j = c - off;
                                    let (pair, i) = match layout {
                                        Layout::RotateHalf => (j % half, j / half),
                                        Layout::Interleaved => (j / 2, j % 2),
                                    };
                                    let (ia, ib) = match layout {
                                        Layout::RotateHalf => (off + pair, off + pair + half),
                                        Layout::Interleaved => (off + 2 * pair, off + 2 * pair + 1),
                                    };
                                    let th = pos[t] as f64 * rope.inv_freq()[pair] as f64;
                                    let (a, bb) = (yhat[ia], yhat[ib]);
                                    let v = if i == 0 {
                                        a * th.cos() - bb * th.sin()
                                    } else {
                                        bb * th.cos() + a * th.sin()
                                    };
                                    (m * v, m * (a.abs() + bb.abs()))
                                };
                                let bound = 16.0 * u * scale + 2f64.powi(-140);
                                let d = (got[c] as f64 - exact).abs();
                                assert!(
                                    d <= bound,
                                    "{b:?} {layout:?} {kind:?} hd {hd} t {t} h {h} c {c}: {} vs {exact}: {d:e} > {bound:e}",
                                    got[c]
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One case of `tests/data/qknorm_hf/vectors.txt` (see `gen.py` there).
struct Golden {
    name: String,
    kind: Kind,
    dtype: String,
    head_dim: usize,
    n_heads: usize,
    layout: Layout,
    inv_freq: Vec<f32>,
    eps: f32,
    pos: Vec<i32>,
    weight: Vec<f32>,
    x: Vec<u32>,
    y: Vec<u32>,
}

fn golden() -> Vec<Golden> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/qknorm_hf/vectors.txt"),
    )
    .unwrap();
    let mut out = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut f = std::collections::HashMap::new();
        for line in block.lines() {
            let (k, v) = line.split_once(' ').unwrap();
            f.insert(k, v);
        }
        let hex = |k: &str| -> Vec<u32> {
            f[k].split_whitespace()
                .map(|h| u32::from_str_radix(h, 16).unwrap())
                .collect()
        };
        out.push(Golden {
            name: f["name"].to_string(),
            kind: match f["kind"] {
                "qwen3" => Kind::Head,
                "gemma3" => Kind::OnePlus,
                "olmo2" => Kind::Row,
                k => panic!("kind {k}"),
            },
            dtype: f["dtype"].to_string(),
            head_dim: f["head_dim"].parse().unwrap(),
            n_heads: f["n_heads"].parse().unwrap(),
            layout: match f["layout"] {
                "rotate_half" => Layout::RotateHalf,
                _ => Layout::Interleaved,
            },
            inv_freq: hex("inv_freq").into_iter().map(f32::from_bits).collect(),
            eps: f32::from_bits(u32::from_str_radix(f["eps"], 16).unwrap()),
            pos: f["pos"]
                .split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect(),
            weight: hex("weight").into_iter().map(f32::from_bits).collect(),
            x: hex("x"),
            y: hex("y"),
        });
    }
    assert!(out.len() >= 6, "golden cases missing");
    out
}

fn golden_case<T: Element>(g: &Golden, b: Backend, from: impl Fn(u32) -> T, to: impl Fn(T) -> u32) {
    let rope = Rope::from_inv_freq(g.head_dim, g.layout, &g.inv_freq, 1.0)
        .unwrap()
        .with_backend(b)
        .unwrap()
        .with_rounding(Rounding::HfEager);
    let norm = norm_of(g.kind, &g.weight, g.eps);
    let x: Vec<T> = g.x.iter().map(|&v| from(v)).collect();
    let mut y = x.clone();
    rope.apply_normed(&mut y, g.n_heads, &norm, &g.pos[..])
        .unwrap();
    let got: Vec<u32> = y.into_iter().map(&to).collect();
    let bad = got.iter().zip(&g.y).filter(|(a, b)| a != b).count();
    assert_eq!(
        bad,
        0,
        "{}: {b:?}: {bad} of {} values differ from HF's formula",
        g.name,
        got.len()
    );
    // Into an f32 destination: the same values (HF's output, converted exactly).
    let mut dst = vec![0f32; x.len()];
    let v = View::token_major(g.n_heads, g.head_dim);
    rope.apply_normed_into(&x, g.n_heads, &norm, &mut dst, v, &g.pos[..])
        .unwrap();
    let wide: Vec<u32> = dst.iter().map(|&d| to(T::from_f32(d))).collect();
    assert_eq!(wide, g.y, "{}: {b:?}: into f32", g.name);
}

#[test]
fn hf_eager_qk_norm_is_bitwise_hf_on_golden_vectors() {
    let cases = golden();
    for b in backends() {
        for g in &cases {
            match g.dtype.as_str() {
                "bf16" => {
                    golden_case::<bf16>(g, b, |v| bf16::from_bits(v as u16), |v| v.to_bits() as u32)
                }
                "f16" => {
                    golden_case::<f16>(g, b, |v| f16::from_bits(v as u16), |v| v.to_bits() as u32)
                }
                "f32" => golden_case::<f32>(g, b, f32::from_bits, f32::to_bits),
                d => panic!("dtype {d}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Bad input: a typed error, nothing written
// ---------------------------------------------------------------------------------------

fn assert_untouched<T: Element>(x: &[T], fill: f32, what: &str) {
    assert!(
        x.iter().all(|v| v.to_f32() == T::from_f32(fill).to_f32()),
        "{what}: written"
    );
}

#[test]
fn bad_input_of_every_into_and_normed_entry_point_is_a_typed_error_with_nothing_written() {
    let (hd, nh, tokens) = (8, 2, 3);
    let rope = Rope::new(&RopeConfig::new(hd, 1e4, Layout::RotateHalf)).unwrap();
    let src = vec![0.5f32; tokens * nh * hd];
    let good = View::token_major(nh, hd);
    let pos = [1, 2, 3];
    let w = [1.0f32; 8];
    let wrow = [1.0f32; 16];
    let mut buf = [0f32; 16 * 3]; // table_len(3) of a head_dim-16 rope
    let bad_table = Rope::new(&RopeConfig::new(16, 1e4, Layout::RotateHalf))
        .unwrap()
        .table(&pos, &mut buf)
        .unwrap();
    let fresh = || vec![bf16::from_f32(SENTINEL); tokens * nh * hd];

    type Case<'c> = (
        &'c str,
        Box<dyn Fn(&mut Vec<bf16>) -> Result<(), Error> + 'c>,
    );
    let cases: Vec<Case> = vec![
        (
            "src too short",
            Box::new(|d| rope.apply_into(&src[1..], nh, d, good, &pos[..])),
        ),
        (
            "zero heads",
            Box::new(|d| rope.apply_into(&src, 0, d, good, &pos[..])),
        ),
        (
            "dst too short",
            Box::new(|d| {
                let n = d.len() - 1;
                rope.apply_into(&src, nh, &mut d[..n], good, &pos[..])
            }),
        ),
        (
            "dst view heads",
            Box::new(|d| rope.apply_into(&src, nh, d, View::token_major(1, hd), &pos[..])),
        ),
        (
            "dst heads overlap",
            Box::new(|d| {
                let v = View {
                    head_stride: hd - 1,
                    ..good
                };
                rope.apply_into(&src, nh, d, v, &pos[..])
            }),
        ),
        (
            "dst offset past the end",
            Box::new(|d| rope.apply_into(&src, nh, d, View { offset: 1, ..good }, &pos[..])),
        ),
        (
            "dst stride overflow",
            Box::new(|d| {
                rope.apply_into(
                    &src,
                    nh,
                    d,
                    View {
                        token_stride: usize::MAX,
                        ..good
                    },
                    &pos[..],
                )
            }),
        ),
        (
            "positions count",
            Box::new(|d| rope.apply_into(&src, nh, d, good, &pos[..2])),
        ),
        (
            "position out of i32",
            Box::new(|d| rope.apply_into(&src, nh, d, good, &[0u64, 1, 1 << 40][..])),
        ),
        (
            "table of another rope",
            Box::new(|d| rope.apply_into(&src, nh, d, good, bad_table)),
        ),
        (
            "view count mismatch",
            Box::new(|d| rope.apply_views_into(&src, &[good, good], d, &[good], &pos[..])),
        ),
        (
            "src views overlap",
            Box::new(|d| {
                rope.apply_views_into(
                    &src,
                    &[good, good],
                    d,
                    &[good, View { offset: 0, ..good }],
                    &pos[..],
                )
            }),
        ),
        (
            "norm weight length",
            Box::new(|d| {
                rope.apply_normed_into(
                    &src,
                    nh,
                    &RmsNorm::per_head(&w[..7], 1e-6),
                    d,
                    good,
                    &pos[..],
                )
            }),
        ),
        (
            "row weight length",
            Box::new(|d| {
                rope.apply_normed_into(&src, nh, &RmsNorm::per_row(&w, 1e-6), d, good, &pos[..])
            }),
        ),
        (
            "eps NaN",
            Box::new(|d| {
                rope.apply_normed_into(
                    &src,
                    nh,
                    &RmsNorm::per_head(&w, f32::NAN),
                    d,
                    good,
                    &pos[..],
                )
            }),
        ),
        (
            "eps negative",
            Box::new(|d| {
                rope.apply_normed_into(
                    &src,
                    nh,
                    &RmsNorm::per_head_one_plus(&w, -1.0),
                    d,
                    good,
                    &pos[..],
                )
            }),
        ),
        (
            "normed dst view",
            Box::new(|d| {
                rope.apply_normed_into(
                    &src,
                    nh,
                    &RmsNorm::per_row(&wrow, 1e-6),
                    d,
                    View { offset: 5, ..good },
                    &pos[..],
                )
            }),
        ),
    ];
    for (what, f) in &cases {
        let mut d = fresh();
        let e = f(&mut d);
        assert!(e.is_err(), "{what}: accepted");
        assert_untouched(&d, SENTINEL, what);
    }
    assert_untouched(&src, 0.5, "src");

    // The in-place and Q+K entry points: neither buffer written.
    let mut q = vec![0.5f32; tokens * 4 * hd];
    let k = vec![0.5f32; tokens * nh * hd];
    let mut cache = fresh();
    assert!(
        rope.apply_qk_into(&mut q[1..], 4, &k, nh, &mut cache, good, &pos[..])
            .is_err()
    );
    assert!(
        rope.apply_qk_into(&mut q, 4, &k[1..], nh, &mut cache, good, &pos[..])
            .is_err()
    );
    assert!(
        rope.apply_qk_into(
            &mut q,
            4,
            &k,
            nh,
            &mut cache,
            View { offset: 2, ..good },
            &pos[..]
        )
        .is_err()
    );
    assert!(
        rope.apply_qk_into(&mut q, 4, &k, nh, &mut cache, good, &pos[..1])
            .is_err()
    );
    let n = RmsNorm::per_head(&w, 1e-6);
    let bad = RmsNorm::per_head(&w[..4], 1e-6);
    assert!(
        rope.apply_qk_normed_into(&mut q, 4, &n, &k, nh, &bad, &mut cache, good, &pos[..])
            .is_err()
    );
    assert!(
        rope.apply_qk_normed_into(&mut q, 4, &bad, &k, nh, &n, &mut cache, good, &pos[..])
            .is_err()
    );
    assert_untouched(&q, 0.5, "q");
    assert_untouched(&cache, SENTINEL, "cache");
    let mut k2 = k.clone();
    assert!(
        rope.apply_qk_normed(&mut q, 4, &n, &mut k2, nh, &bad, &pos[..])
            .is_err()
    );
    assert!(
        rope.apply_qk_normed(&mut q, 4, &n, &mut k2[1..], nh, &n, &pos[..])
            .is_err()
    );
    assert!(rope.apply_normed(&mut q, 4, &bad, &pos[..]).is_err());
    assert!(
        rope.apply_normed(&mut q, 4, &RmsNorm::per_row(&wrow, 1e-6), &pos[..])
            .is_err()
    );
    assert!(rope.apply_normed(&mut q, 4, &n, &pos[..2]).is_err());
    assert_untouched(&q, 0.5, "q");
    assert_untouched(&k2, 0.5, "k");

    // Typed: the errors name what is wrong.
    let mut d = fresh();
    assert!(matches!(
        rope.apply_into(&src, nh, &mut d, View::token_major(1, hd), &pos[..]),
        Err(Error::LengthMismatch {
            what: "dst view n_heads",
            ..
        })
    ));
    assert!(matches!(
        rope.apply_normed_into(
            &src,
            nh,
            &RmsNorm::per_head(&w, f32::INFINITY),
            &mut d,
            good,
            &pos[..]
        ),
        Err(Error::ParameterOutOfRange { what: "eps", .. })
    ));
    assert!(matches!(
        rope.apply_into(&src[1..], nh, &mut d, good, &pos[..]),
        Err(Error::LengthMismatch { what: "src", .. })
    ));
}

#[test]
fn zero_tokens_write_nothing() {
    let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
    let mut d = vec![bf16::from_f32(SENTINEL); 16];
    let none: [i32; 0] = [];
    rope.apply_into(&[0f32; 0], 2, &mut d, View::token_major(2, 8), &none[..])
        .unwrap();
    assert_untouched(&d, SENTINEL, "zero tokens");
}

/// A large rotate-into of `I` into `O` against the reference, into a head-major slot.
fn large_case<I: Element, O: Element>(rng: &mut Rng, rope: &Rope, tokens: usize, n_heads: usize) {
    let hd = rope.head_dim();
    let src: Vec<I> = rng.vec(tokens * n_heads * hd);
    let pos = rng.positions(tokens);
    let expect: Vec<O> = reference_into(rope, &src, n_heads, &pos);
    let view = slot(true, n_heads, tokens + 3, 2, hd);
    let mut dst = vec![O::from_f32(SENTINEL); n_heads * (tokens + 3) * hd];
    rope.apply_into(&src, n_heads, &mut dst, view, &pos[..])
        .unwrap();
    let what = format!(
        "{:?} {:?}->{:?} t {tokens} h {n_heads}",
        rope.rounding(),
        I::DTYPE,
        O::DTYPE
    );
    check_dst(&dst, &view, &expect, tokens, hd, &what);
}

/// The pairs without a kernel of their own (16-bit into another dtype; any two dtypes under
/// the HF modes) pass through a stack buffer of 8192 values a piece of heads and tokens at a
/// time. Shapes that cross those seams (more heads than a piece holds: 80 × 128 > 8192; more
/// tokens than a piece of 4 heads holds: 40 × 4 × 128 > 8192) still give the reference's bits,
/// and so does a row norm, whose pieces hold a token's whole row.
#[test]
fn staged_pairs_across_piece_seams_are_the_reference() {
    let mut rng = Rng::new(9);
    for b in backends() {
        for rounding in [Rounding::Once, Rounding::HfEager] {
            let rope =
                rope_on(b, 128, 128, 0, Layout::RotateHalf, Scaling::None).with_rounding(rounding);
            for (tokens, n_heads) in [(3, 80), (40, 4)] {
                large_case::<f16, bf16>(&mut rng, &rope, tokens, n_heads);
                large_case::<bf16, f32>(&mut rng, &rope, tokens, n_heads);
                large_case::<f32, bf16>(&mut rng, &rope, tokens, n_heads);
            }
        }
        // A row norm over 32 heads of 128 (4096 values a token): two tokens a piece.
        let rope = rope_on(b, 128, 128, 0, Layout::Interleaved, Scaling::None);
        let (tokens, n_heads) = (5, 32);
        let w = weights(&mut rng, Kind::Row, n_heads, 128);
        let x: Vec<f16> = rng.vec(tokens * n_heads * 128);
        let pos = rng.positions(tokens);
        let wide: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
        let mut expect = norm_f32(&wide, n_heads, 128, Kind::Row, &w, 1e-6);
        rope.apply(&mut expect, n_heads, &pos[..]).unwrap();
        let e_o: Vec<bf16> = expect.iter().map(|&v| bf16::from_f32(v)).collect();
        let view = slot(false, n_heads, tokens, 0, 128);
        let mut dst = vec![bf16::from_f32(SENTINEL); tokens * n_heads * 128];
        rope.apply_normed_into(
            &x,
            n_heads,
            &RmsNorm::per_row(&w, 1e-6),
            &mut dst,
            view,
            &pos[..],
        )
        .unwrap();
        check_dst(
            &dst,
            &view,
            &e_o,
            tokens,
            128,
            &format!("{b:?} row norm f16->bf16"),
        );
    }
}

/// A staged call whose piece cannot fit the stack buffer is a typed error with nothing
/// written; the same shape between the pairs with kernels of their own runs.
#[test]
fn staged_pairs_past_the_stack_buffer_are_typed_errors() {
    let (hd, rd) = (8194, 64);
    let rope = rope_on(
        Backend::Scalar,
        hd,
        rd,
        0,
        Layout::RotateHalf,
        Scaling::None,
    );
    let src16 = vec![f16::from_f32(0.5); hd];
    let mut dst = vec![bf16::from_f32(SENTINEL); hd];
    let view = View::token_major(1, hd);
    assert!(matches!(
        rope.apply_into(&src16, 1, &mut dst, view, &[3]),
        Err(Error::ParameterOutOfRange {
            what: "head_dim",
            ..
        })
    ));
    assert_untouched(&dst, SENTINEL, "staged head_dim");
    let src32 = vec![0.5f32; hd];
    rope.apply_into(&src32, 1, &mut dst, view, &[3]).unwrap();
    let hf = rope.with_rounding(Rounding::HfUpcast);
    let mut dst = vec![bf16::from_f32(SENTINEL); hd];
    assert!(matches!(
        hf.apply_into(&src32, 1, &mut dst, view, &[3]),
        Err(Error::ParameterOutOfRange {
            what: "head_dim",
            ..
        })
    ));
    assert_untouched(&dst, SENTINEL, "staged head_dim, HF");

    // A row norm over 72 heads of 128 (9216 values a token).
    let rope = rope_on(
        Backend::Scalar,
        128,
        128,
        0,
        Layout::RotateHalf,
        Scaling::None,
    );
    let n_heads = 72;
    let w = vec![1.0f32; n_heads * 128];
    let src = vec![f16::from_f32(0.5); n_heads * 128];
    let mut dst = vec![bf16::from_f32(SENTINEL); n_heads * 128];
    let view = View::token_major(n_heads, 128);
    let row = RmsNorm::per_row(&w, 1e-6);
    assert!(matches!(
        rope.apply_normed_into(&src, n_heads, &row, &mut dst, view, &[0]),
        Err(Error::ParameterOutOfRange {
            what: "n_heads",
            ..
        })
    ));
    assert_untouched(&dst, SENTINEL, "staged row norm");
    let wide = vec![0.5f32; n_heads * 128];
    rope.apply_normed_into(&wide, n_heads, &row, &mut dst, view, &[0])
        .unwrap();
}
