//! The `par_*` methods (feature `rayon`) against their serial calls: bitwise equal results on
//! every available backend, dtype, layout, rounding mode, partial rotary window and split
//! shape (serial fallback, runs of tokens, head groups of one token, GQA), and the same errors
//! with buffers untouched.
#![cfg(feature = "rayon")]

use posenc::{
    Backend, Element, Error, Layout, PAR_GRAIN, PAR_MIN_ELEMENTS, Rope, RopeConfig, Rounding,
    Sinusoidal, SinusoidalLayout, bf16, f16,
};

fn data<T: Element>(n: usize, seed: u32) -> Vec<T> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            T::from_f32((s % 20001) as f32 / 1000.0 - 10.0)
        })
        .collect()
}

fn positions(n: usize, seed: i32) -> Vec<i32> {
    (0..n as i32)
        .map(|i| (i * 7919 + seed).rem_euclid(300_000) - 1000)
        .collect()
}

#[track_caller]
fn bitwise<T: Element>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_f32().to_bits() == w.to_f32().to_bits(),
            "{what}: element {i}: {g:?} vs serial {w:?}"
        );
    }
}

/// A pool with more threads than this 2-core machine has, so pieces really are stolen.
fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap()
}

/// (tokens, heads, head_dim, rotary_dim, offset): every path of the splitter.
const SHAPES: [(usize, usize, usize, usize, usize); 6] = [
    (3, 4, 64, 64, 0),     // below PAR_MIN_ELEMENTS: the calling thread
    (200, 4, 64, 64, 0),   // runs of tokens, last run short
    (37, 7, 130, 96, 2),   // runs of tokens, odd head_dim, partial rotary at an offset
    (1, 300, 128, 128, 0), // one decode token: head groups, last group short
    (3, 160, 128, 64, 0),  // few large tokens: head groups per token
    (0, 8, 64, 64, 0),     // no tokens
];

fn rope_case<T: Element>(rope: &Rope, shape: (usize, usize, usize, usize, usize)) {
    let (tokens, heads, head_dim, ..) = shape;
    let pos = positions(tokens, heads as i32);
    let x0: Vec<T> = data(tokens * heads * head_dim, (tokens * 31 + heads) as u32);
    let what = format!(
        "{:?} {} {:?} {:?} {shape:?}",
        rope.backend(),
        core::any::type_name::<T>(),
        rope.layout(),
        rope.rounding()
    );

    let (mut a, mut b) = (x0.clone(), x0.clone());
    rope.par_apply(&mut a, heads, &pos).unwrap();
    rope.apply(&mut b, heads, &pos).unwrap();
    bitwise(&a, &b, &format!("par_apply {what}"));
    if tokens > 0 && rope.rounding() == Rounding::Once {
        assert!(a != x0, "{what}: nothing rotated");
    }

    rope.par_apply_inverse(&mut a, heads, &pos).unwrap();
    rope.apply_inverse(&mut b, heads, &pos).unwrap();
    bitwise(&a, &b, &format!("par_apply_inverse {what}"));

    let deltas: Vec<i32> = pos.iter().map(|p| 5 - p / 3).collect();
    rope.par_shift(&mut a, heads, &deltas).unwrap();
    rope.shift(&mut b, heads, &deltas).unwrap();
    bitwise(&a, &b, &format!("par_shift {what}"));
}

fn ropes(layout: Layout, rotary_dim: usize, head_dim: usize, offset: usize) -> Vec<Rope> {
    let cfg = RopeConfig::new(head_dim, 500_000.0, layout)
        .rotary_dim(rotary_dim)
        .rotary_offset(offset);
    let rope = Rope::new(&cfg).unwrap();
    let mut out = Vec::new();
    for &b in Backend::ALL.iter().filter(|b| b.is_available()) {
        for r in [Rounding::Once, Rounding::HfEager, Rounding::HfUpcast] {
            out.push(rope.with_backend(b).unwrap().with_rounding(r));
        }
    }
    out
}

// The shapes above are chosen against the published thresholds.
const _: () = {
    assert!(3 * 4 * 64 < PAR_MIN_ELEMENTS);
    assert!(200 * 4 * 64 >= PAR_MIN_ELEMENTS && 4 * 64 < PAR_GRAIN);
    assert!(37 * 7 * 130 >= PAR_MIN_ELEMENTS && 7 * 130 < PAR_GRAIN);
    assert!(300 * 128 >= PAR_MIN_ELEMENTS && 300 * 128 >= PAR_GRAIN);
    assert!(3 * 160 * 128 >= PAR_MIN_ELEMENTS && 160 * 128 >= PAR_GRAIN);
    assert!(300 * 128 % PAR_GRAIN != 0); // a short last head group
};

#[test]
fn rope_par_equals_serial_bitwise() {
    pool().install(|| {
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            for shape in SHAPES {
                let (_, _, head_dim, rotary_dim, offset) = shape;
                for rope in ropes(layout, rotary_dim, head_dim, offset) {
                    rope_case::<f32>(&rope, shape);
                    rope_case::<f16>(&rope, shape);
                    rope_case::<bf16>(&rope, shape);
                }
            }
        }
    });
}

/// In a pool of one thread the `par_*` methods make the serial call instead of splitting:
/// the results must still be the serial call's, on shapes the splitter would cut.
#[test]
fn par_in_a_one_thread_pool_equals_serial_bitwise() {
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    one.install(|| {
        assert_eq!(rayon::current_num_threads(), 1);
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            for rope in ropes(layout, 96, 130, 2) {
                rope_case::<f32>(&rope, (37, 7, 130, 96, 2));
                rope_case::<bf16>(&rope, (1, 300, 130, 96, 2));
                qk_case::<f16>(&rope, 100, 32, 8);
            }
        }
        let pe = Sinusoidal::new(6, 10_000.0, SinusoidalLayout::Split).unwrap();
        let (mut x, mut y) = (vec![0f32; 6000 * 6], vec![0f32; 6000 * 6]);
        pe.par_fill(&mut x, 99).unwrap();
        pe.fill(&mut y, 99).unwrap();
        bitwise(&x, &y, "par_fill in a one-thread pool");
        let pos = positions(6000, 3);
        let x0: Vec<f16> = data(6000 * 6, 8);
        let (mut x, mut y) = (x0.clone(), x0);
        pe.par_add(&mut x, &pos).unwrap();
        pe.add(&mut y, &pos).unwrap();
        bitwise(&x, &y, "par_add in a one-thread pool");
    });
}

#[test]
fn rope_par_in_the_global_pool() {
    let rope = Rope::new(&RopeConfig::new(128, 500_000.0, Layout::RotateHalf)).unwrap();
    rope_case::<f32>(&rope, (64, 32, 128, 128, 0));
    rope_case::<bf16>(&rope, (1, 256, 128, 128, 0));
}

fn qk_case<T: Element>(rope: &Rope, tokens: usize, hq: usize, hk: usize) {
    let d = rope.head_dim();
    let pos = positions(tokens, 17);
    let q0: Vec<T> = data(tokens * hq * d, 3);
    let k0: Vec<T> = data(tokens * hk * d, 4);
    let (mut q, mut k) = (q0.clone(), k0.clone());
    let (mut q2, mut k2) = (q0.clone(), k0.clone());
    rope.par_apply_qk(&mut q, hq, &mut k, hk, &pos).unwrap();
    rope.apply_qk(&mut q2, hq, &mut k2, hk, &pos).unwrap();
    let what = format!(
        "par_apply_qk {:?} {} {:?} {:?} {tokens}×({hq}, {hk})×{d}",
        rope.backend(),
        core::any::type_name::<T>(),
        rope.layout(),
        rope.rounding()
    );
    bitwise(&q, &q2, &format!("{what} q"));
    bitwise(&k, &k2, &format!("{what} k"));
}

#[test]
fn qk_par_equals_serial_bitwise() {
    pool().install(|| {
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            for rope in ropes(layout, 48, 64, 8) {
                for (tokens, hq, hk) in [
                    (2, 4, 1),    // calling thread
                    (100, 32, 8), // runs of tokens through apply_qk
                    (2, 256, 64), // large tokens: head groups of q and k
                    (1, 512, 1),  // one decode token, MQA
                    (0, 32, 8),   // no tokens
                    (61, 12, 12), // MHA
                ] {
                    qk_case::<f32>(&rope, tokens, hq, hk);
                    qk_case::<f16>(&rope, tokens, hq, hk);
                    qk_case::<bf16>(&rope, tokens, hq, hk);
                }
            }
        }
    });
}

#[test]
fn rope_errors_are_the_serial_errors_and_nothing_is_written() {
    let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf)).unwrap();
    let big = PAR_MIN_ELEMENTS + 64; // large enough that a parallel split would happen
    // (x len, n_heads, tokens)
    for (len, heads, tokens) in [
        (big, 0, big / 64),     // zero heads
        (big + 1, 1, big / 64), // not tokens × heads × head_dim
        (big, 1, big / 64 - 1), // positions one short
        (big, 2, big / 64),     // heads × tokens too many
        (0, 1, 3),
        (64, usize::MAX, 1), // overflow
    ] {
        let pos = positions(tokens, 1);
        let x0: Vec<f32> = data(len, 9);
        let mut x = x0.clone();
        let want = rope.apply(&mut x.clone(), heads, &pos).unwrap_err();
        assert_eq!(rope.par_apply(&mut x, heads, &pos), Err(want));
        assert_eq!(rope.par_apply_inverse(&mut x, heads, &pos), Err(want));
        assert_eq!(rope.par_shift(&mut x, heads, &pos), Err(want));
        assert_eq!(
            rope.apply_inverse(&mut x.clone(), heads, &pos),
            Err(want),
            "the serial calls agree"
        );
        bitwise(&x, &x0, "x after an error");
    }

    // apply_qk: a bad q, a bad k (reported as "k"), and zero kv heads.
    let t = 600;
    let pos = positions(t, 2);
    for (ql, hq, kl, hk) in [
        (t * 8 * 64 + 1, 8, t * 2 * 64, 2),
        (t * 8 * 64, 8, t * 2 * 64 - 64, 2),
        (t * 8 * 64, 8, t * 2 * 64, 0),
        (t * 8 * 64, 0, t * 2 * 64, 2),
    ] {
        let (q0, k0): (Vec<bf16>, Vec<bf16>) = (data(ql, 1), data(kl, 2));
        let (mut q, mut k) = (q0.clone(), k0.clone());
        let want = rope
            .apply_qk(&mut q.clone(), hq, &mut k.clone(), hk, &pos)
            .unwrap_err();
        assert_eq!(rope.par_apply_qk(&mut q, hq, &mut k, hk, &pos), Err(want));
        bitwise(&q, &q0, "q after an error");
        bitwise(&k, &k0, "k after an error");
    }
    let mut q = vec![0f32; t * 8 * 64];
    let mut k = vec![0f32; t * 2 * 64 - 64];
    assert!(matches!(
        rope.par_apply_qk(&mut q, 8, &mut k, 2, &pos),
        Err(Error::LengthMismatch { what: "k", .. })
    ));
}

#[test]
fn sinusoidal_par_equals_serial_bitwise() {
    pool().install(|| {
        for layout in [SinusoidalLayout::Interleaved, SinusoidalLayout::Split] {
            for &b in Backend::ALL.iter().filter(|b| b.is_available()) {
                for (d, rows) in [(6, 7), (6, 6000), (512, 300), (1000, 40), (4096, 9)] {
                    let pe = Sinusoidal::new(d, 10_000.0, layout)
                        .unwrap()
                        .with_backend(b)
                        .unwrap();
                    let what = format!("{b:?} {layout:?} {rows}×{d}");
                    // Up to the accuracy domain's edge: the last row at 2^26.
                    let edge = (1u32 << 26) + 1 - rows as u32;
                    for first in [0, 123_456, edge - 10, edge] {
                        let (mut x, mut y) = (vec![0f32; rows * d], vec![0f32; rows * d]);
                        pe.par_fill(&mut x, first).unwrap();
                        pe.fill(&mut y, first).unwrap();
                        bitwise(&x, &y, &format!("par_fill from {first} {what}"));
                        let (mut x, mut y) = (vec![f16::ZERO; rows * d], vec![f16::ZERO; rows * d]);
                        pe.par_fill(&mut x, first).unwrap();
                        pe.fill(&mut y, first).unwrap();
                        bitwise(&x, &y, &format!("par_fill f16 from {first} {what}"));
                    }
                    let pos = positions(rows, d as i32);
                    let (mut x, mut y) = (vec![0f32; rows * d], vec![0f32; rows * d]);
                    pe.par_fill_positions(&mut x, &pos).unwrap();
                    pe.fill_positions(&mut y, &pos).unwrap();
                    bitwise(&x, &y, &format!("par_fill_positions {what}"));
                    let x0: Vec<bf16> = data(rows * d, 5);
                    let (mut x, mut y) = (x0.clone(), x0);
                    pe.par_add(&mut x, &pos).unwrap();
                    pe.add(&mut y, &pos).unwrap();
                    bitwise(&x, &y, &format!("par_add bf16 {what}"));
                    let x0: Vec<f32> = data(rows * d, 6);
                    let (mut x, mut y) = (x0.clone(), x0);
                    pe.par_add(&mut x, &pos).unwrap();
                    pe.add(&mut y, &pos).unwrap();
                    bitwise(&x, &y, &format!("par_add f32 {what}"));
                }
            }
        }
    });
}

#[test]
fn sinusoidal_errors_are_the_serial_errors_and_nothing_is_written() {
    let pe = Sinusoidal::new(512, 10_000.0, SinusoidalLayout::Split).unwrap();
    let big = PAR_MIN_ELEMENTS + 512;
    let x0: Vec<f32> = data(big + 1, 3);
    let mut x = x0.clone();
    let want = pe.fill(&mut x.clone(), 0).unwrap_err();
    assert_eq!(pe.par_fill(&mut x, 0), Err(want));
    let pos = positions(big / 512, 0);
    let want = pe.add(&mut x.clone(), &pos).unwrap_err();
    assert_eq!(pe.par_add(&mut x, &pos), Err(want));
    let want = pe.fill_positions(&mut x.clone(), &pos).unwrap_err();
    assert_eq!(pe.par_fill_positions(&mut x, &pos), Err(want));
    bitwise(&x, &x0, "x after an error");
    let mut x = vec![0f32; big];
    let short = &pos[1..];
    let want = pe.add(&mut x.clone(), short).unwrap_err();
    assert_eq!(pe.par_add(&mut x, short), Err(want));
    assert!(x.iter().all(|v| *v == 0.0));
}
