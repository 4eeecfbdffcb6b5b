//! The angles-once path: a [`Table`] made by `Rope::table` (or `table_axes`) rotates bit for
//! bit as the positions it was made from, through every entry point that takes positions, on
//! every backend, dtype, layout and rounding mode, with partial rotary, `rotary_offset`,
//! scaling with an attention factor, views (head-major, fused QKV, GPT-NeoX cells), GQA, and
//! positions of every integer type. The expected side is always the position path, which the
//! rest of the suite checks against the scalar oracle and the golden vectors.

mod common;

use common::rng::Rng;
use common::{backends, bits};
use posenc::{
    Axes, Backend, Element, Layout, Rope, RopeConfig, Rounding, Scaling, Table, View, Yarn, bf16,
    f16,
};

fn data<T: Element>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::from_f32((rng.unit() * 4.0 - 2.0) as f32))
        .collect()
}

fn positions(rng: &mut Rng, n: usize) -> Vec<i32> {
    (0..n)
        .map(|i| match rng.below(4) {
            0 => i as i32,
            1 => rng.below(1 << 20) as i32 - (1 << 19),
            2 => rng.below(1 << 24) as i32,
            _ => -(rng.below(100) as i32),
        })
        .collect()
}

/// Ropes that exercise every part of the angle path: plain, partial rotary with an offset,
/// YaRN (attention factor ≠ 1), head_dim not a multiple of any vector width, > one chunk.
fn ropes(layout: Layout) -> Vec<Rope> {
    let yarn = Scaling::Yarn(Yarn::new(4.0, 4096));
    vec![
        Rope::new(&RopeConfig::new(64, 1e4, layout)).unwrap(),
        Rope::new(
            &RopeConfig::new(96, 5e5, layout)
                .rotary_dim(36)
                .rotary_offset(10),
        )
        .unwrap(),
        Rope::new(&RopeConfig::new(128, 1e6, layout).scaling(yarn)).unwrap(),
        Rope::new(&RopeConfig::new(22, 1e4, layout)).unwrap(),
        Rope::new(&RopeConfig::new(320, 1e4, layout)).unwrap(),
    ]
}

fn same<T: Element>(a: &[T], b: &[T], what: &str) {
    assert_eq!(bits(a), bits(b), "{what}");
}

#[allow(clippy::needless_borrows_for_generic_args)] // `&table`: the `&Table` form is API too
fn every_entry_point<T: Element>(rope: &Rope, seed: u64) {
    let mut rng = Rng::new(seed);
    let d = rope.head_dim();
    for tokens in [0usize, 1, 3, 17] {
        let pos = positions(&mut rng, tokens);
        let mut buf = vec![f32::NAN; rope.table_len(tokens) + 3];
        let table = rope.table(&pos, &mut buf).unwrap();
        let what = format!("{:?} {:?} {} tokens", rope.backend(), rope.layout(), tokens);
        for heads in [1usize, 3, 8] {
            let x: Vec<T> = data(&mut rng, tokens * heads * d);
            let (mut a, mut b) = (x.clone(), x.clone());
            rope.apply(&mut a, heads, &pos).unwrap();
            rope.apply(&mut b, heads, table).unwrap();
            same(&a, &b, &format!("apply {what} {heads} heads"));
            let (mut a, mut b) = (x.clone(), x.clone());
            rope.apply_inverse(&mut a, heads, &pos).unwrap();
            rope.apply_inverse(&mut b, heads, &table).unwrap();
            same(&a, &b, &format!("apply_inverse {what}"));
            let (mut a, mut b) = (x.clone(), x.clone());
            rope.shift(&mut a, heads, &pos).unwrap();
            rope.shift(&mut b, heads, table).unwrap();
            same(&a, &b, &format!("shift {what}"));
        }
        // GQA: 8 query heads, 2 key heads.
        let (q, k): (Vec<T>, Vec<T>) = (
            data(&mut rng, tokens * 8 * d),
            data(&mut rng, tokens * 2 * d),
        );
        let (mut qa, mut ka, mut qb, mut kb) = (q.clone(), k.clone(), q.clone(), k.clone());
        rope.apply_qk(&mut qa, 8, &mut ka, 2, &pos).unwrap();
        rope.apply_qk(&mut qb, 8, &mut kb, 2, table).unwrap();
        same(&qa, &qb, &format!("apply_qk q {what}"));
        same(&ka, &kb, &format!("apply_qk k {what}"));
        // Views: head-major, and a fused QKV row with a gap.
        let hm = View::head_major(3, tokens, d);
        let x: Vec<T> = data(&mut rng, 3 * tokens * d);
        let (mut a, mut b) = (x.clone(), x.clone());
        rope.apply_views(&mut a, &[hm], &pos).unwrap();
        rope.apply_views(&mut b, &[hm], table).unwrap();
        same(&a, &b, &format!("head-major {what}"));
        let row = 7 * d + 5;
        let qv = View {
            n_heads: 4,
            token_stride: row,
            head_stride: d,
            offset: 0,
        };
        let kv = View {
            n_heads: 2,
            token_stride: row,
            head_stride: d,
            offset: 4 * d,
        };
        let x: Vec<T> = data(&mut rng, tokens * row);
        let (mut a, mut b) = (x.clone(), x.clone());
        rope.apply_views(&mut a, &[qv, kv], &pos).unwrap();
        rope.apply_views(&mut b, &[qv, kv], table).unwrap();
        same(&a, &b, &format!("fused views {what}"));
    }
}

#[test]
fn table_is_the_position_path_bitwise() {
    for backend in backends() {
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            for rounding in [Rounding::Once, Rounding::HfEager, Rounding::HfUpcast] {
                for (i, rope) in ropes(layout).into_iter().enumerate() {
                    let rope = rope.with_backend(backend).unwrap().with_rounding(rounding);
                    let seed = (i as u64) << 8 | backend as u64;
                    every_entry_point::<f32>(&rope, seed);
                    every_entry_point::<f16>(&rope, seed + 1);
                    every_entry_point::<bf16>(&rope, seed + 2);
                }
            }
        }
    }
}

/// A table whose rows lie on vector boundaries is read where it lies (rotate_half, no
/// scaling, posenc's rounding), any other is copied per token: every placement in a cache
/// line, with and without an attention factor, rotates as the positions do, on every backend.
#[test]
fn tables_at_every_placement_are_the_position_path() {
    let mut rng = Rng::new(23);
    let (tokens, heads) = (9, 4);
    let pos = positions(&mut rng, tokens);
    let yarn = Scaling::Yarn(Yarn::new(4.0, 4096));
    for backend in backends() {
        for layout in [Layout::RotateHalf, Layout::Interleaved] {
            let plain = RopeConfig::new(128, 5e5, layout);
            for config in [plain, plain.scaling(yarn)] {
                let rope = Rope::new(&config).unwrap().with_backend(backend).unwrap();
                let len = rope.table_len(tokens);
                let mut store = vec![0f32; len + 32];
                let line = (0..16)
                    .find(|i| (store.as_ptr() as usize + 4 * i).is_multiple_of(64))
                    .unwrap();
                for skew in [0, 4, 8, 12] {
                    let table = rope
                        .table(&pos, &mut store[line + skew..line + skew + len])
                        .unwrap();
                    let x: Vec<f32> = data(&mut rng, tokens * heads * 128);
                    let (mut want, mut got) = (x.clone(), x.clone());
                    rope.apply(&mut want, heads, &pos).unwrap();
                    rope.apply(&mut got, heads, table).unwrap();
                    same(&got, &want, &format!("{backend:?} {layout:?} f32 +{skew}"));
                    let x: Vec<bf16> = data(&mut rng, tokens * heads * 128);
                    let (mut want, mut got) = (x.clone(), x.clone());
                    rope.apply(&mut want, heads, &pos).unwrap();
                    rope.apply(&mut got, heads, table).unwrap();
                    same(&got, &want, &format!("{backend:?} {layout:?} bf16 +{skew}"));
                }
            }
        }
    }
}

/// A table's values are the same on every backend (the exact-angle contract), so a table
/// made on one backend drives another to the same bits as that backend's positions.
#[test]
fn tables_agree_across_backends() {
    let mut rng = Rng::new(11);
    let pos = positions(&mut rng, 40);
    for layout in [Layout::Interleaved, Layout::RotateHalf] {
        for rope in ropes(layout) {
            let mut reference = vec![0f32; rope.table_len(pos.len())];
            rope.with_backend(Backend::Scalar)
                .unwrap()
                .table(&pos, &mut reference)
                .unwrap();
            for b in backends() {
                let mut buf = vec![0f32; rope.table_len(pos.len())];
                rope.with_backend(b).unwrap().table(&pos, &mut buf).unwrap();
                assert_eq!(bits(&buf), bits(&reference), "{b:?} {layout:?}");
            }
        }
    }
}

/// Positions of every integer type give the same table and rotation as i32 (converted in
/// pieces of a stack buffer: more tokens than one piece).
#[test]
fn integer_position_types() {
    let mut rng = Rng::new(5);
    let rope = Rope::new(&RopeConfig::new(16, 1e4, Layout::RotateHalf)).unwrap();
    let n = 1000;
    let pos: Vec<i32> = (0..n).map(|_| rng.below(30_000) as i32).collect();
    let x: Vec<f32> = data(&mut rng, n * 2 * 16);
    let mut want = x.clone();
    rope.apply(&mut want, 2, &pos).unwrap();
    let mut want_table = vec![0f32; rope.table_len(n)];
    rope.table(&pos, &mut want_table).unwrap();
    macro_rules! check {
        ($($t:ty),*) => {$(
            let p: Vec<$t> = pos.iter().map(|&v| v as $t).collect();
            let mut got = x.clone();
            rope.apply(&mut got, 2, &p).unwrap();
            assert_eq!(bits(&got), bits(&want), stringify!($t));
            let mut tab = vec![0f32; rope.table_len(n)];
            rope.table(&p, &mut tab).unwrap();
            assert_eq!(bits(&tab), bits(&want_table), stringify!($t));
            let (mut c, mut s) = (vec![0f32; n * 8], vec![0f32; n * 8]);
            let (mut c32, mut s32) = (vec![0f32; n * 8], vec![0f32; n * 8]);
            rope.fill_cos_sin(&p, &mut c, &mut s).unwrap();
            rope.fill_cos_sin(&pos, &mut c32, &mut s32).unwrap();
            assert_eq!((bits(&c), bits(&s)), (bits(&c32), bits(&s32)), stringify!($t));
        )*};
    }
    check!(u32, i64, u64, usize, isize, u16, i16);
    // Negative positions in signed types.
    let neg: Vec<i64> = (0..n as i64).map(|v| -v).collect();
    let neg32: Vec<i32> = (0..n as i32).map(|v| -v).collect();
    let (mut a, mut b) = (x.clone(), x.clone());
    rope.apply(&mut a, 2, &neg).unwrap();
    rope.apply(&mut b, 2, &neg32).unwrap();
    assert_eq!(bits(&a), bits(&b));
}

/// M-RoPE: `table_axes` rotates as `apply_axes`, with i32 and with wider integer types.
#[test]
fn axes_table() {
    let mut rng = Rng::new(9);
    for axes in [
        Axes::MRope {
            sections: [4, 6, 6],
        },
        Axes::MRopeInterleaved {
            sections: [6, 5, 5],
        },
    ] {
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            let rope = Rope::new(&RopeConfig::new(32, 1e6, layout).axes(axes)).unwrap();
            for b in backends() {
                let rope = rope.with_backend(b).unwrap();
                let n = 300;
                let pos: Vec<[i32; 3]> = (0..n)
                    .map(|_| [0, 1, 2].map(|_| rng.below(5000) as i32))
                    .collect();
                let pos64: Vec<[u64; 3]> = pos.iter().map(|p| p.map(|v| v as u64)).collect();
                let x: Vec<bf16> = data(&mut rng, n * 3 * 32);
                let mut want = x.clone();
                rope.apply_axes(&mut want, 3, &pos).unwrap();
                let mut wide = x.clone();
                rope.apply_axes(&mut wide, 3, &pos64).unwrap();
                assert_eq!(bits(&wide), bits(&want), "{b:?} u64 axes");
                let mut buf = vec![0f32; rope.table_len(n)];
                let table = rope.table_axes(&pos64, &mut buf).unwrap();
                let mut got = x.clone();
                rope.apply(&mut got, 3, table).unwrap();
                assert_eq!(bits(&got), bits(&want), "{b:?} {layout:?} table_axes");
            }
        }
    }
}

/// A foreign table (another framework's cos/sin, attention factor inside) rotates as the
/// formula says: `(a·c − b·s, b·c + a·s)` per pair, computed here in f64.
#[test]
fn foreign_table_is_the_formula() {
    let mut rng = Rng::new(3);
    let (tokens, heads, d, pairs) = (5, 2, 12, 4);
    let cos: Vec<f32> = (0..tokens * pairs)
        .map(|_| (rng.unit() * 2.0 - 1.0) as f32)
        .collect();
    let sin: Vec<f32> = (0..tokens * pairs)
        .map(|_| (rng.unit() * 2.0 - 1.0) as f32)
        .collect();
    let table = Table::new(&cos, &sin, tokens).unwrap();
    for layout in [Layout::Interleaved, Layout::RotateHalf] {
        let rope = Rope::new(&RopeConfig::new(d, 1e4, layout).rotary_dim(2 * pairs)).unwrap();
        for b in backends() {
            let x: Vec<f32> = data(&mut rng, tokens * heads * d);
            let mut got = x.clone();
            rope.with_backend(b)
                .unwrap()
                .apply(&mut got, heads, table)
                .unwrap();
            for t in 0..tokens {
                for h in 0..heads {
                    let base = (t * heads + h) * d;
                    for i in 0..pairs {
                        let (ia, ib) = match layout {
                            Layout::Interleaved => (2 * i, 2 * i + 1),
                            Layout::RotateHalf => (i, i + pairs),
                        };
                        let (a, bb) = (x[base + ia] as f64, x[base + ib] as f64);
                        let (c, s) = (cos[t * pairs + i] as f64, sin[t * pairs + i] as f64);
                        let (wa, wb) = (a * c - bb * s, bb * c + a * s);
                        // One f32 rounding of a two-term sum (fused or not): within 2 ulp of
                        // the magnitudes involved.
                        let tol = 2.0 * f32::EPSILON as f64 * (a.abs() + bb.abs());
                        assert!(
                            (got[base + ia] as f64 - wa).abs() <= tol,
                            "{b:?} {layout:?}"
                        );
                        assert!(
                            (got[base + ib] as f64 - wb).abs() <= tol,
                            "{b:?} {layout:?}"
                        );
                    }
                    for j in 2 * pairs..d {
                        assert_eq!(got[base + j].to_bits(), x[base + j].to_bits(), "untouched");
                    }
                }
            }
        }
    }
}

#[cfg(feature = "rayon")]
#[test]
fn parallel_from_a_table() {
    let rope = Rope::new(&RopeConfig::new(128, 5e5, Layout::RotateHalf)).unwrap();
    let mut rng = Rng::new(1);
    for tokens in [1usize, 7, 300] {
        let pos: Vec<u32> = (0..tokens as u32).map(|p| p * 3).collect();
        let mut buf = vec![0f32; rope.table_len(tokens)];
        let table = rope.table(&pos, &mut buf).unwrap();
        let (q, k): (Vec<f16>, Vec<f16>) = (
            data(&mut rng, tokens * 32 * 128),
            data(&mut rng, tokens * 8 * 128),
        );
        let (mut qa, mut ka, mut qb, mut kb) = (q.clone(), k.clone(), q.clone(), k.clone());
        rope.apply_qk(&mut qa, 32, &mut ka, 8, &pos).unwrap();
        rope.par_apply_qk(&mut qb, 32, &mut kb, 8, table).unwrap();
        assert_eq!((bits(&qa), bits(&ka)), (bits(&qb), bits(&kb)));
        let (mut a, mut b) = (q.clone(), q.clone());
        rope.apply(&mut a, 32, &pos).unwrap();
        rope.par_apply(&mut b, 32, table).unwrap();
        assert_eq!(bits(&a), bits(&b));
        let (mut a, mut b) = (q.clone(), q.clone());
        rope.shift(&mut a, 32, &pos).unwrap();
        rope.par_shift(&mut b, 32, table).unwrap();
        assert_eq!(bits(&a), bits(&b));
    }
}
