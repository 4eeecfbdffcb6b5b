//! Layout permutation: against HF's `view/transpose` reference, inverse and in-place
//! identities, bitwise layout equivalence of RoPE on every backend and dtype, and the
//! weight/activation agreement `W'·v = P·(W·v)`.

mod common;

use common::bits;
use posenc::permute::{
    permute_to_interleaved, permute_to_interleaved_in_place, permute_to_rotate_half,
    permute_to_rotate_half_in_place, permute_weight_to_interleaved,
    permute_weight_to_interleaved_in_place, permute_weight_to_rotate_half,
    permute_weight_to_rotate_half_in_place,
};
use posenc::{
    Backend, Element, Error, Formula, Layout, MAX_ROTARY_DIM, Rope, RopeConfig, bf16, f16,
};
use proptest::prelude::*;

/// HF `convert_llama_weights_to_hf.py`:
/// `w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)`,
/// written as the index map of that view/transpose, applied to the first `rotary_dim` rows
/// of each head (rows past it copied). Row `(h, t, i)` of the result is row `(h, i, t)` of
/// the input, `t ∈ {0, 1}`, `i < rotary_dim / 2`.
fn hf_permute<T: Copy>(
    w: &[T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    width: usize,
) -> Vec<T> {
    let half = rotary_dim / 2;
    let mut out = w.to_vec();
    for h in 0..n_heads {
        for t in 0..2 {
            for i in 0..half {
                let dst_row = h * head_dim + t * half + i;
                let src_row = h * head_dim + i * 2 + t;
                out[dst_row * width..(dst_row + 1) * width]
                    .copy_from_slice(&w[src_row * width..(src_row + 1) * width]);
            }
        }
    }
    out
}

#[test]
fn weight_permutation_is_hf_view_transpose() {
    // Llama-style GQA: Q 8 heads, K 2 KV heads, head_dim 16, in_features 5; and partial rotary.
    for (heads, hd, rd, width) in [(8, 16, 16, 5), (2, 16, 16, 5), (3, 12, 4, 2), (1, 2, 2, 1)] {
        let w: Vec<u32> = (0..(heads * hd * width) as u32).collect();
        let want = hf_permute(&w, heads, hd, rd, width);
        let mut got = vec![0; w.len()];
        permute_weight_to_rotate_half(&w, &mut got, heads, hd, rd, width).unwrap();
        assert_eq!(got, want);
        let mut inplace = w.clone();
        permute_weight_to_rotate_half_in_place(&mut inplace, heads, hd, rd, width).unwrap();
        assert_eq!(inplace, want);
        // Back: what convert_hf_to_gguf.py does.
        let mut back = vec![0; w.len()];
        permute_weight_to_interleaved(&got, &mut back, heads, hd, rd, width).unwrap();
        assert_eq!(back, w);
        permute_weight_to_interleaved_in_place(&mut inplace, heads, hd, rd, width).unwrap();
        assert_eq!(inplace, w);
        // Activations are the width-1 case.
        let mut act = vec![0; heads * hd * width];
        permute_to_rotate_half(&w, &mut act, heads * width, hd, rd).unwrap();
        assert_eq!(act, hf_permute(&w, heads * width, hd, rd, 1));
    }
}

#[test]
fn gqa_with_the_query_head_count_is_wrong() {
    // The classic converter bug: permuting K (2 KV heads) as if it had 8 heads of 4 rows.
    let w: Vec<u32> = (0..32).collect();
    let (mut right, mut wrong) = (vec![0; 32], vec![0; 32]);
    permute_weight_to_rotate_half(&w, &mut right, 2, 16, 16, 1).unwrap();
    permute_weight_to_rotate_half(&w, &mut wrong, 8, 4, 4, 1).unwrap();
    assert_ne!(right, wrong);
    assert_eq!(&right[..8], &[0, 2, 4, 6, 8, 10, 12, 14]);
}

/// Integer-valued data: every product and sum below is exact in f32.
fn int_data(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 17) as f32 - 8.0
        })
        .collect()
}

fn matvec(w: &[f32], v: &[f32]) -> Vec<f32> {
    w.chunks_exact(v.len())
        .map(|row| row.iter().zip(v).map(|(a, b)| a * b).sum())
        .collect()
}

proptest! {
    #[test]
    fn weight_and_activation_permutations_agree(
        heads in 1usize..5,
        pairs in 1usize..9,
        tail in 0usize..4,
        width in 1usize..7,
        seed: u32,
    ) {
        let (rd, hd) = (2 * pairs, 2 * pairs + 2 * tail);
        let w = int_data(heads * hd * width, seed);
        let v = int_data(width, seed ^ 0xdead);
        let mut wp = vec![0.0; w.len()];
        permute_weight_to_rotate_half(&w, &mut wp, heads, hd, rd, width).unwrap();
        let wv = matvec(&w, &v);
        let mut p_wv = vec![0.0; wv.len()];
        permute_to_rotate_half(&wv, &mut p_wv, heads, hd, rd).unwrap();
        prop_assert_eq!(matvec(&wp, &v), p_wv); // W'·v = P·(W·v), exactly
        // And the inverse direction.
        let mut wi = vec![0.0; w.len()];
        permute_weight_to_interleaved(&w, &mut wi, heads, hd, rd, width).unwrap();
        let mut pinv_wv = vec![0.0; wv.len()];
        permute_to_interleaved(&wv, &mut pinv_wv, heads, hd, rd).unwrap();
        prop_assert_eq!(matvec(&wi, &v), pinv_wv);
    }

    #[test]
    fn inverse_and_in_place_identities(
        tokens in 0usize..4,
        heads in 1usize..4,
        pairs in 1usize..300,
        tail in 0usize..5,
    ) {
        let (rd, hd) = (2 * pairs, 2 * pairs + 2 * tail);
        let x: Vec<u32> = (0..(tokens * heads * hd) as u32).collect();
        let mut p = vec![0; x.len()];
        permute_to_rotate_half(&x, &mut p, heads, hd, rd).unwrap();
        let mut back = vec![0; x.len()];
        permute_to_interleaved(&p, &mut back, heads, hd, rd).unwrap();
        prop_assert_eq!(&back, &x); // P⁻¹·P = id
        let mut pp = vec![0; x.len()];
        permute_to_rotate_half(&back, &mut pp, heads, hd, rd).unwrap();
        prop_assert_eq!(&pp, &p); // P·P⁻¹ = id
        prop_assert_eq!(&p, &hf_permute(&x, tokens * heads, hd, rd, 1));
        // Tail channels stay, rotary ones are a permutation of the head's rotary channels.
        for (a, b) in p.chunks_exact(hd).zip(x.chunks_exact(hd)) {
            prop_assert_eq!(&a[rd..], &b[rd..]);
            let mut s = a[..rd].to_vec();
            s.sort();
            prop_assert_eq!(&s[..], &b[..rd]);
        }
        if rd <= MAX_ROTARY_DIM {
            let mut ip = x.clone();
            permute_to_rotate_half_in_place(&mut ip, heads, hd, rd).unwrap();
            prop_assert_eq!(&ip, &p);
            permute_to_interleaved_in_place(&mut ip, heads, hd, rd).unwrap();
            prop_assert_eq!(&ip, &x);
        }
    }
}

fn data<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // N(0,1)-ish magnitudes with a wide exponent spread.
            let u = (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let e = ((s >> 3) % 20) as i32 - 10;
            T::from_f32((u * 2f64.powi(e)) as f32)
        })
        .collect()
}

/// `rope_rotate_half(P·x) == P·rope_interleaved(x)` bitwise, apply and apply_inverse, on
/// `backend`, for one shape and dtype.
fn check_equivalence<T: Element>(
    backend: Backend,
    head_dim: usize,
    rotary_dim: usize,
    heads: usize,
    positions: &[i32],
    base: f32,
    seed: u64,
) {
    let cfg = |layout| RopeConfig::new(head_dim, base, layout).rotary_dim(rotary_dim);
    let il = Rope::new(&cfg(Layout::Interleaved))
        .unwrap()
        .with_backend(backend)
        .unwrap();
    let rh = Rope::new(&cfg(Layout::RotateHalf))
        .unwrap()
        .with_backend(backend)
        .unwrap();
    let x: Vec<T> = data(positions.len() * heads * head_dim, seed);
    for inverse in [false, true] {
        let mut a = x.clone();
        let mut px = vec![T::default(); x.len()];
        permute_to_rotate_half(&x, &mut px, heads, head_dim, rotary_dim).unwrap();
        if inverse {
            il.apply_inverse(&mut a, heads, positions).unwrap();
            rh.apply_inverse(&mut px, heads, positions).unwrap();
        } else {
            il.apply(&mut a, heads, positions).unwrap();
            rh.apply(&mut px, heads, positions).unwrap();
        }
        let mut pa = vec![T::default(); x.len()];
        permute_to_rotate_half(&a, &mut pa, heads, head_dim, rotary_dim).unwrap();
        assert_eq!(
            bits(&px),
            bits(&pa),
            "{backend:?} {:?} hd {head_dim} rd {rotary_dim} inverse {inverse}",
            T::DTYPE
        );
        // And back: P⁻¹·rope_rotate_half(P·x) == rope_interleaved(x).
        permute_to_interleaved_in_place(&mut px, heads, head_dim, rotary_dim).unwrap();
        assert_eq!(bits(&px), bits(&a));
    }
}

fn available() -> Vec<Backend> {
    let v: Vec<Backend> = Backend::available().collect();
    assert!(v.contains(&Backend::Scalar) && v.contains(&Backend::Portable));
    v
}

#[test]
fn rope_layouts_are_the_same_math_on_every_backend_and_dtype() {
    let backends = available();
    println!("backends: {backends:?}");
    let positions = [
        0,
        1,
        7,
        -3,
        1000,
        70_000,
        131_071,
        -131_071,
        1 << 26, // the edges of the accuracy domain (frequencies ≤ 1)
        -(1 << 26),
    ];
    // Full and partial rotary; pair counts around the SIMD widths; Llama/NeoX/GPT-J shapes.
    let shapes = [
        (2, 2),
        (8, 8),
        (64, 64),
        (128, 128),
        (64, 16),
        (256, 64),
        (96, 96),
        (34, 30),
        (130, 66),
        (512, 512),
    ];
    for &backend in &backends {
        for (s, &(hd, rd)) in shapes.iter().enumerate() {
            let seed = 0x9e37_79b9 + s as u64;
            check_equivalence::<f32>(backend, hd, rd, 3, &positions, 10_000.0, seed);
            check_equivalence::<f16>(backend, hd, rd, 2, &positions, 500_000.0, seed);
            check_equivalence::<bf16>(backend, hd, rd, 2, &positions, 10_000.0, seed);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn rope_layout_equivalence_random_shapes(
        pairs in 1usize..=256,
        tail in 0usize..20,
        heads in 1usize..4,
        positions in proptest::collection::vec(-(1i32 << 26)..=(1 << 26), 1..4),
        dtype in 0u8..3,
        seed: u64,
    ) {
        let (rd, hd) = (2 * pairs, 2 * pairs + 2 * tail);
        for backend in available() {
            match dtype {
                0 => check_equivalence::<f32>(backend, hd, rd, heads, &positions, 10_000.0, seed),
                1 => check_equivalence::<f16>(backend, hd, rd, heads, &positions, 10_000.0, seed),
                _ => check_equivalence::<bf16>(backend, hd, rd, heads, &positions, 10_000.0, seed),
            }
        }
    }
}

#[test]
fn errors_leave_buffers_untouched() {
    let src = [1u16; 24];
    let mut dst = [7u16; 24];
    let cases: [(usize, usize, usize, Error); 6] = [
        (0, 4, 4, Error::ZeroHeads),
        (2, 0, 0, Error::InvalidHeadDim { head_dim: 0 }),
        (2, 3, 2, Error::InvalidHeadDim { head_dim: 3 }),
        (
            2,
            4,
            3,
            Error::InvalidRotaryDim {
                rotary_dim: 3,
                head_dim: 4,
            },
        ),
        (
            2,
            4,
            6,
            Error::InvalidRotaryDim {
                rotary_dim: 6,
                head_dim: 4,
            },
        ),
        (
            2,
            4,
            0,
            Error::InvalidRotaryDim {
                rotary_dim: 0,
                head_dim: 4,
            },
        ),
    ];
    for (heads, hd, rd, want) in cases {
        assert_eq!(
            permute_to_rotate_half(&src, &mut dst, heads, hd, rd),
            Err(want)
        );
        assert_eq!(
            permute_to_interleaved(&src, &mut dst, heads, hd, rd),
            Err(want)
        );
        assert_eq!(
            permute_weight_to_rotate_half(&src, &mut dst, heads, hd, rd, 3),
            Err(want)
        );
        assert_eq!(
            permute_weight_to_interleaved(&src, &mut dst, heads, hd, rd, 3),
            Err(want)
        );
        let mut x = dst;
        assert_eq!(
            permute_to_rotate_half_in_place(&mut x, heads, hd, rd),
            Err(want)
        );
        assert_eq!(
            permute_weight_to_interleaved_in_place(&mut x, heads, hd, rd, 3),
            Err(want)
        );
        assert_eq!(x, [7; 24]);
    }
    // Not whole rows / wrong dst / wrong weight shape / overflow.
    assert_eq!(
        permute_to_rotate_half(&src[..20], &mut dst[..20], 2, 4, 4),
        Err(Error::NotWholeRows {
            what: "src",
            len: 20,
            row: 8,
            formula: Formula {
                names: &"tokens × heads × head_dim",
                values: [0, 2, 4],
            },
        })
    );
    assert_eq!(
        permute_to_interleaved(&src, &mut dst[..16], 2, 4, 4),
        Err(Error::LengthMismatch {
            what: "dst",
            expected: 24,
            actual: 16,
            formula: Formula {
                names: &"src.len()",
                values: [24, 0, 0]
            }
        })
    );
    assert_eq!(
        permute_to_rotate_half_in_place(&mut dst[..20], 2, 4, 4),
        Err(Error::NotWholeRows {
            what: "x",
            len: 20,
            row: 8,
            formula: Formula {
                names: &"tokens × heads × head_dim",
                values: [0, 2, 4],
            },
        })
    );
    assert_eq!(
        permute_weight_to_rotate_half(&src, &mut dst, 2, 4, 4, 2),
        Err(Error::LengthMismatch {
            what: "src",
            expected: 16,
            actual: 24,
            formula: Formula {
                names: &"heads × head_dim × in_features",
                values: [2, 4, 2]
            }
        })
    );
    assert_eq!(
        permute_weight_to_rotate_half(&src, &mut dst[..20], 2, 4, 4, 3),
        Err(Error::LengthMismatch {
            what: "dst",
            expected: 24,
            actual: 20,
            formula: Formula {
                names: &"src.len()",
                values: [24, 0, 0]
            }
        })
    );
    assert_eq!(
        permute_weight_to_rotate_half_in_place(&mut dst, 2, 4, 4, 2),
        Err(Error::LengthMismatch {
            what: "w",
            expected: 16,
            actual: 24,
            formula: Formula {
                names: &"heads × head_dim × in_features",
                values: [2, 4, 2]
            }
        })
    );
    assert_eq!(
        permute_weight_to_interleaved(&src, &mut dst, usize::MAX / 2, 4, 4, 1),
        Err(Error::ShapeOverflow)
    );
    assert_eq!(
        permute_weight_to_interleaved(&src, &mut dst, 1, 4, 4, usize::MAX / 2),
        Err(Error::ShapeOverflow)
    );
    assert_eq!(dst, [7; 24]);
    // In place is limited to MAX_ROTARY_DIM; out of place is not.
    let big = 2 * MAX_ROTARY_DIM;
    let mut x: Vec<u32> = (0..big as u32).collect();
    assert_eq!(
        permute_to_rotate_half_in_place(&mut x, 1, big, big),
        Err(Error::RotaryDimTooLarge {
            rotary_dim: big,
            max: MAX_ROTARY_DIM
        })
    );
    assert_eq!(
        permute_weight_to_rotate_half_in_place(&mut x, 1, big, big, 1),
        Err(Error::RotaryDimTooLarge {
            rotary_dim: big,
            max: MAX_ROTARY_DIM
        })
    );
    assert!(x.iter().enumerate().all(|(i, &v)| v == i as u32));
    let mut y = vec![0; big];
    permute_to_rotate_half(&x, &mut y, 1, big, big).unwrap();
    assert_eq!(y[1], 2);
    // Empty inputs and zero in_features are fine.
    permute_to_rotate_half::<f32>(&[], &mut [], 3, 8, 8).unwrap();
    permute_weight_to_rotate_half::<f32>(&[], &mut [], 3, 8, 8, 0).unwrap();
    permute_weight_to_interleaved_in_place::<f32>(&mut [], 3, 8, 8, 0).unwrap();
}
