//! The backward pass (`apply_backward`, `apply_qk_backward`, `apply_views_backward`,
//! `apply_axes_backward`): the vector-Jacobian product of each forward rotation.
//!
//! * Adjoint identity: `⟨J·v, w⟩ = ⟨v, Jᵀ·w⟩` for random `v`, `w`, with `J·v` the forward and
//!   `Jᵀ·w` the backward, both computed by posenc in f32, the dot products in f64; the
//!   tolerance is the two rotations' rounding, `4·2^-24·m·Σ|v|·|w|`-sized (stated below).
//! * Finite differences in f64: the forward is linear, so column `i` of `J` is
//!   `(f(h·e_i) − f(0)) / h` with `h = 1`; `Jᵀ·w` formed from those columns in f64 must match
//!   the backward within the same kind of bound.
//! * Every configuration the forward has: both layouts, partial rotary with an offset, every
//!   `Scaling` (YaRN and LongRoPE with an attention factor ≠ 1), M-RoPE axes, views, tables,
//!   every dtype (f16/bf16: bitwise the f32 backward of the widened gradient, rounded once),
//!   every backend.

mod common;

use common::backends;
use common::rng::Rng;
use posenc::{
    Axes, Backend, Element, Layout, LongRope, Rope, RopeConfig, Scaling, View, Yarn, bf16, f16,
};

impl Rng {
    fn value(&mut self) -> f32 {
        (self.unit() * 2.0 - 1.0) as f32
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.value()).collect()
    }
}

const U: f64 = 1.0 / 16_777_216.0;

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
}

fn abs_dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 * *y as f64).abs())
        .sum()
}

const SHORT: [f32; 16] = [
    1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1, 2.2, 2.3, 2.4, 2.5,
];
const LONG: [f32; 16] = [
    2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5,
];

/// Every scaling, for a rotary dim of 32 (LongRoPE's factor lists have 16 entries).
fn scalings() -> Vec<Scaling<'static>> {
    vec![
        Scaling::None,
        Scaling::Linear { factor: 4.0 },
        Scaling::Ntk { factor: 2.0 },
        Scaling::DynamicNtk {
            factor: 2.0,
            max_positions: 2048,
            seq_len: 8192,
        },
        Scaling::Yarn(Yarn::new(16.0, 4096)),
        Scaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_positions: 8192,
        },
        Scaling::LongRope(LongRope {
            short_factor: &SHORT,
            long_factor: &LONG,
            original_max_positions: 4096,
            max_positions: 131_072,
            use_long: true,
            attention_factor: None,
        }),
    ]
}

/// Shapes `(head_dim, rotary_offset)` with rotary_dim 32: full, and partial with an offset.
const SHAPES: &[(usize, usize)] = &[(32, 0), (40, 6), (34, 2)];

fn rope(b: Backend, hd: usize, off: usize, layout: Layout, sc: Scaling) -> Rope {
    let cfg = RopeConfig::new(hd, 10_000.0, layout)
        .rotary_dim(32)
        .rotary_offset(off)
        .scaling(sc);
    Rope::new(&cfg).unwrap().with_backend(b).unwrap()
}

/// `⟨J·v, w⟩` against `⟨v, Jᵀ·w⟩` within `8·u·m·Σ|v_i|·|(Jᵀw)_i|`-sized rounding: each
/// output of either rotation is off by at most `2u·m·(|a|+|b|)` (plus cos/sin), so either dot
/// product is off by a few `u·m·Σ|v|·|w|`.
fn check_adjoint(jv: &[f32], w: &[f32], v: &[f32], jtw: &[f32], m: f64, what: &str) {
    let (lhs, rhs) = (dot(jv, w), dot(v, jtw));
    let tol = 8.0
        * U
        * m.max(1.0)
        * (abs_dot(v, &jtw.iter().map(|x| x.abs() + 1.0).collect::<Vec<_>>()) + abs_dot(jv, w));
    assert!(
        (lhs - rhs).abs() <= tol,
        "{what}: ⟨Jv,w⟩ {lhs} vs ⟨v,Jᵀw⟩ {rhs} (tol {tol:e})"
    );
}

#[test]
fn adjoint_identity_every_scaling_layout_shape_backend() {
    let mut rng = Rng::new(11);
    for b in backends() {
        for layout in [Layout::RotateHalf, Layout::Interleaved] {
            for sc in scalings() {
                for &(hd, off) in SHAPES {
                    let r = rope(b, hd, off, layout, sc);
                    let m = r.attention_factor() as f64;
                    let (tokens, heads) = (5, 3);
                    let pos: Vec<i32> = (0..tokens)
                        .map(|_| rng.below(200_000) as i32 - 100)
                        .collect();
                    let v = rng.vec(tokens * heads * hd);
                    let w = rng.vec(tokens * heads * hd);
                    let (mut jv, mut jtw) = (v.clone(), w.clone());
                    r.apply(&mut jv, heads, &pos[..]).unwrap();
                    r.apply_backward(&mut jtw, heads, &pos[..]).unwrap();
                    check_adjoint(
                        &jv,
                        &w,
                        &v,
                        &jtw,
                        m,
                        &format!("{b:?} {layout:?} {sc:?} hd {hd} off {off}"),
                    );
                    // The backward is not the inverse when the attention factor is not 1.
                    if (m - 1.0).abs() > 1e-3 {
                        let mut inv = w.clone();
                        r.apply_inverse(&mut inv, heads, &pos[..]).unwrap();
                        assert_ne!(inv, jtw);
                    }
                    // From a table: the same bits.
                    let mut buf = vec![0f32; r.table_len(tokens)];
                    let t = r.table(&pos, &mut buf).unwrap();
                    let mut g = w.clone();
                    r.apply_backward(&mut g, heads, t).unwrap();
                    assert_eq!(g, jtw, "table");
                }
            }
        }
    }
}

#[test]
fn finite_differences_in_f64_match_the_backward() {
    let mut rng = Rng::new(12);
    for b in backends() {
        for layout in [Layout::RotateHalf, Layout::Interleaved] {
            for sc in [Scaling::None, Scaling::Yarn(Yarn::new(8.0, 2048))] {
                for &(hd, off) in SHAPES {
                    let r = rope(b, hd, off, layout, sc);
                    let m = r.attention_factor() as f64;
                    let (tokens, heads) = (2, 2);
                    let n = tokens * heads * hd;
                    let pos = [rng.below(50_000) as i32, -(rng.below(500) as i32)];
                    // Columns of J: (f(h·e_i) − f(0)) / h, h = 1, in f64.
                    let mut jt_w = vec![0f64; n];
                    let w = rng.vec(n);
                    for i in 0..n {
                        let mut e = vec![0f32; n];
                        e[i] = 1.0;
                        r.apply(&mut e, heads, &pos[..]).unwrap();
                        jt_w[i] = e.iter().zip(&w).map(|(c, wk)| *c as f64 * *wk as f64).sum();
                    }
                    let mut g = w.clone();
                    r.apply_backward(&mut g, heads, &pos[..]).unwrap();
                    for i in 0..n {
                        // Each entry is a two-term sum of products; the columns and the
                        // backward each carry a few u·m of rounding per term.
                        let tol = 8.0 * U * m.max(1.0) * 2.0;
                        assert!(
                            (g[i] as f64 - jt_w[i]).abs() <= tol,
                            "{b:?} {layout:?} {sc:?} hd {hd} off {off} i {i}: {} vs {}",
                            g[i],
                            jt_w[i]
                        );
                    }
                }
            }
        }
    }
}

fn dtype_case<T: Element>(b: Backend, rng: &mut Rng) {
    for layout in [Layout::RotateHalf, Layout::Interleaved] {
        for &(hd, off) in SHAPES {
            let r = rope(b, hd, off, layout, Scaling::Yarn(Yarn::new(4.0, 4096)));
            let (tokens, heads) = (3, 2);
            let pos = [7, 70_000, -3];
            let g: Vec<T> = rng
                .vec(tokens * heads * hd)
                .into_iter()
                .map(T::from_f32)
                .collect();
            let mut wide: Vec<f32> = g.iter().map(|v| v.to_f32()).collect();
            r.apply_backward(&mut wide, heads, &pos[..]).unwrap();
            let mut got = g.clone();
            r.apply_backward(&mut got, heads, &pos[..]).unwrap();
            let expect: Vec<T> = wide.iter().map(|&v| T::from_f32(v)).collect();
            assert_eq!(got, expect, "{b:?} {layout:?} hd {hd} {:?}", T::DTYPE);
        }
    }
}

#[test]
fn every_dtype_is_the_f32_backward_rounded_once() {
    let mut rng = Rng::new(13);
    for b in backends() {
        dtype_case::<f16>(b, &mut rng);
        dtype_case::<bf16>(b, &mut rng);
    }
}

#[test]
fn qk_views_and_axes_backward_are_adjoints_of_their_forwards() {
    let mut rng = Rng::new(14);
    for b in backends() {
        for layout in [Layout::RotateHalf, Layout::Interleaved] {
            let r = rope(b, 40, 6, layout, Scaling::Yarn(Yarn::new(8.0, 4096)));
            let m = r.attention_factor() as f64;
            let (tokens, hd) = (4, 40);
            let pos: Vec<i32> = (0..tokens).map(|t| 100 * t as i32 + 5).collect();
            // Q + K.
            let (v_q, v_k) = (rng.vec(tokens * 4 * hd), rng.vec(tokens * 2 * hd));
            let (w_q, w_k) = (rng.vec(tokens * 4 * hd), rng.vec(tokens * 2 * hd));
            let (mut jq, mut jk) = (v_q.clone(), v_k.clone());
            r.apply_qk(&mut jq, 4, &mut jk, 2, &pos[..]).unwrap();
            let (mut gq, mut gk) = (w_q.clone(), w_k.clone());
            r.apply_qk_backward(&mut gq, 4, &mut gk, 2, &pos[..])
                .unwrap();
            check_adjoint(&jq, &w_q, &v_q, &gq, m, "qk q");
            check_adjoint(&jk, &w_k, &v_k, &gk, m, "qk k");
            // Head-major views of a buffer with a gap.
            let views = [View {
                offset: 3,
                ..View::head_major(2, tokens, hd)
            }];
            let n = 3 + 2 * tokens * hd + 5;
            let (v, w) = (rng.vec(n), rng.vec(n));
            let (mut jv, mut jtw) = (v.clone(), w.clone());
            r.apply_views(&mut jv, &views, &pos[..]).unwrap();
            r.apply_views_backward(&mut jtw, &views, &pos[..]).unwrap();
            check_adjoint(&jv, &w, &v, &jtw, m, "views");
            assert_eq!(&jtw[..3], &w[..3], "outside the views");
        }
        // M-RoPE axes.
        let cfg = RopeConfig::new(32, 1e6, Layout::RotateHalf).axes(Axes::MRope {
            sections: [4, 6, 6],
        });
        let r = Rope::new(&cfg).unwrap().with_backend(b).unwrap();
        let pos: Vec<[u32; 3]> = (0..5).map(|t| [t, 2 * t + 1, 3 * t + 7]).collect();
        let (v, w) = (rng.vec(5 * 2 * 32), rng.vec(5 * 2 * 32));
        let (mut jv, mut jtw) = (v.clone(), w.clone());
        r.apply_axes(&mut jv, 2, &pos).unwrap();
        r.apply_axes_backward(&mut jtw, 2, &pos).unwrap();
        check_adjoint(&jv, &w, &v, &jtw, 1.0, "axes");
        // Forward then backward at attention factor 1 is the identity (within rounding).
        let mut round = v.clone();
        r.apply_axes(&mut round, 2, &pos).unwrap();
        r.apply_axes_backward(&mut round, 2, &pos).unwrap();
        for (a, o) in round.iter().zip(&v) {
            assert!((a - o).abs() <= 4e-7 * 8.0, "axes round trip {a} vs {o}");
        }
    }
}

#[test]
fn bad_input_of_every_backward_entry_point_is_a_typed_error_with_nothing_written() {
    let r = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
    let mut g = vec![0.5f32; 2 * 8];
    assert!(r.apply_backward(&mut g[1..], 1, &[1, 2][..]).is_err());
    assert!(r.apply_backward(&mut g, 1, &[1][..]).is_err());
    assert!(r.apply_backward(&mut g, 0, &[1, 2][..]).is_err());
    assert!(r.apply_backward(&mut g, 1, &[1u64 << 40, 2][..]).is_err());
    let mut g2 = vec![0.5f32; 8];
    assert!(
        r.apply_qk_backward(&mut g, 1, &mut g2, 2, &[1, 2][..])
            .is_err()
    );
    assert!(
        r.apply_views_backward(&mut g, &[View::token_major(1, 7)], &[1, 2][..])
            .is_err()
    );
    assert!(
        r.apply_views_backward(
            &mut g,
            &[View {
                offset: 1,
                ..View::token_major(1, 8)
            }],
            &[1, 2][..]
        )
        .is_err()
    );
    assert!(
        r.apply_axes_backward(&mut g, 1, &[[1, 2, 3], [1, 2, 3]])
            .is_err()
    ); // 3 axes on a 1-axis rope
    assert!(g.iter().chain(&g2).all(|&v| v == 0.5), "written");
}
