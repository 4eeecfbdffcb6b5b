//! The RoPE driver's two angle sources against each other on the same backend, bit for bit:
//! `Rope::apply` computes each token's exact-angle cos/sin inside the driver (the next token's
//! pipelined behind the current one's heads), the table path (`Table`) reads them from the tables
//! `fill_cos_sin` writes (bitwise the driver's own cos/sin, attention factor included). Both
//! must give identical bits: same cos/sin, same fused expressions. Shapes cover rotary dims
//! that are whole vectors (multiples of 8 / 16 pairs, the driver's common shape) and ones with
//! a partial last vector, partial rotary (head stride ≠ window), 1–9 heads (decode's
//! four-heads-per-pass loop, the two-heads-per-pass loop and their remainders), and 1–5
//! tokens (the pipeline's first, middle and last tokens), on every backend.

mod common;

use common::bits;
use posenc::{Backend, Element, Layout, Rope, bf16, f16};
use proptest::prelude::*;

fn values<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            T::from_f32(((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0)
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn check<T: Element>(
    backend: Backend,
    layout: Layout,
    head_dim: usize,
    pairs: usize,
    n_heads: usize,
    positions: &[i32],
    factor: f32,
    seed: u64,
) {
    // Frequencies of a 1e4-base rope over `pairs` pairs, as a checkpoint would ship them.
    let inv_freq: Vec<f32> = (0..pairs)
        .map(|i| 10_000f32.powf(-((2 * i) as f32) / (2 * pairs) as f32))
        .collect();
    let rope = Rope::from_inv_freq(head_dim, layout, &inv_freq, factor)
        .unwrap()
        .with_backend(backend)
        .unwrap();
    let tokens = positions.len();
    let x0: Vec<T> = values(tokens * n_heads * head_dim, seed);
    let mut fast = x0.clone();
    rope.apply(&mut fast, n_heads, positions).unwrap();
    let (mut cos, mut sin) = (vec![0f32; tokens * pairs], vec![0f32; tokens * pairs]);
    rope.fill_cos_sin(positions, &mut cos, &mut sin).unwrap();
    let mut generic = x0.clone();
    common::table_on(backend, &mut generic, n_heads, head_dim, layout, &cos, &sin).unwrap();
    assert_eq!(
        bits(&fast),
        bits(&generic),
        "{} {layout:?} {} head_dim {head_dim} pairs {pairs} heads {n_heads} positions {positions:?}",
        backend.name(),
        T::DTYPE.name(),
    );
}

fn available() -> Vec<Backend> {
    Backend::available().collect()
}

#[test]
fn fast_path_is_bitwise_the_generic_driver_on_every_shape() {
    let positions = [0, 7, -3, 1 << 20, 123_456, 5];
    for backend in available() {
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            // (head_dim, pairs): whole vectors of 8 and 16 pairs, ragged ones, partial rotary,
            // up to the fast path's 128 pairs and past it.
            for (head_dim, pairs) in [
                (16, 8),
                (32, 16),
                (40, 16),
                (64, 32),
                (64, 12),
                (96, 48),
                (128, 64),
                (128, 32),
                (192, 64),
                (256, 128),
                (288, 144),
            ] {
                for n_heads in 1..=9 {
                    for tokens in [1, 2, 3, 5] {
                        let pos = &positions[..tokens];
                        let seed = (head_dim * 31 + n_heads * 7 + tokens) as u64;
                        check::<f32>(backend, layout, head_dim, pairs, n_heads, pos, 1.0, seed);
                        check::<f16>(backend, layout, head_dim, pairs, n_heads, pos, 1.25, seed);
                        check::<bf16>(backend, layout, head_dim, pairs, n_heads, pos, 0.9, seed);
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn fast_path_matches_generic_on_random_shapes(
        pairs_in_vectors in 1usize..=8,
        extra in 0usize..3,
        n_heads in 1usize..=9,
        positions in proptest::collection::vec(-(1i32 << 24)..(1 << 24), 1..6),
        interleaved in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let layout = if interleaved { Layout::Interleaved } else { Layout::RotateHalf };
        let pairs = 16 * pairs_in_vectors;
        let head_dim = 2 * pairs + 2 * extra * 8;
        for backend in available() {
            check::<f32>(backend, layout, head_dim, pairs, n_heads, &positions, 1.0, seed);
            check::<bf16>(backend, layout, head_dim, pairs, n_heads, &positions, 1.0, seed);
        }
    }
}
