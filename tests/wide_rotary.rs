//! Rotary windows wider than one chunk of the RoPE driver (more than 128 pairs, up to
//! `MAX_ROTARY_DIM`), with and without a partial last vector, on every backend this machine
//! runs: each output against the f64 formula, and the portable tier bitwise against the
//! scalar reference. (`tests/backends.rs` covers every tail up to head_dim 256, one chunk.)

mod common;

use common::rng::Rng;
use posenc::{Backend, Element, Layout, Rope, RopeConfig, Rounding, View, bf16, f16};

/// Half an ulp of the storage type at 1.0, relative: the one rounding on store.
fn storage_eps<T: Element>() -> f64 {
    match T::DTYPE {
        posenc::Dtype::F32 => 0.0,
        posenc::Dtype::F16 => 1.0 / 2048.0,
        posenc::Dtype::Bf16 => 1.0 / 256.0,
    }
}

fn check<T: Element>(backend: Backend, head_dim: usize, rotary_dim: usize, layout: Layout) {
    let mut rng = Rng::new(0x5eed ^ (rotary_dim as u64) << 8 ^ head_dim as u64);
    let (tokens, heads) = (3, 2);
    let rope = Rope::new(&RopeConfig::new(head_dim, 10_000.0, layout).rotary_dim(rotary_dim))
        .unwrap()
        .with_backend(backend)
        .unwrap();
    let positions = [0, 77, -40_000];
    let x: Vec<T> = (0..tokens * heads * head_dim)
        .map(|_| T::from_f32(rng.unit() as f32 * 4.0 - 2.0))
        .collect();
    let mut y = x.clone();
    rope.apply(&mut y, heads, &positions).unwrap();
    let half = rotary_dim / 2;
    let w = rope.inv_freq();
    for (t, &p) in positions.iter().enumerate() {
        for h in 0..heads {
            let base = (t * heads + h) * head_dim;
            for (j, &wj) in w.iter().enumerate() {
                let (ia, ib) = match layout {
                    Layout::Interleaved => (base + 2 * j, base + 2 * j + 1),
                    Layout::RotateHalf => (base + j, base + j + half),
                };
                let (a, b) = (x[ia].to_f32() as f64, x[ib].to_f32() as f64);
                let angle = p as f64 * wj as f64;
                let (s, c) = angle.sin_cos();
                let want = [a * c - b * s, b * c + a * s];
                let got = [y[ia].to_f32() as f64, y[ib].to_f32() as f64];
                for (g, e) in got.iter().zip(want) {
                    // cos/sin within 2.4e-7 (the contract), the f32 arithmetic, one rounding.
                    let bound = 6e-7 * (a.abs() + b.abs()) + storage_eps::<T>() * e.abs() + 1e-30;
                    assert!(
                        (g - e).abs() <= bound,
                        "{backend:?} {layout:?} rd {rotary_dim} t {t} h {h} pair {j}: {g} vs {e}"
                    );
                }
            }
            for c in rotary_dim..head_dim {
                assert_eq!(
                    y[base + c],
                    x[base + c],
                    "channel {c} past the window changed"
                );
            }
        }
    }
}

#[test]
fn wide_windows_against_the_formula() {
    for backend in Backend::available() {
        for &(head_dim, rotary_dim) in &[(512, 512), (512, 510), (512, 258), (384, 320), (300, 290)]
        {
            for layout in [Layout::RotateHalf, Layout::Interleaved] {
                check::<f32>(backend, head_dim, rotary_dim, layout);
                check::<f16>(backend, head_dim, rotary_dim, layout);
                check::<bf16>(backend, head_dim, rotary_dim, layout);
            }
        }
    }
}

/// Portable is the scalar reference's arithmetic on wider lanes: bitwise equal, in every
/// rounding mode and through views, across chunk boundaries.
#[test]
fn wide_windows_portable_is_scalar_bitwise() {
    let mut rng = Rng::new(7);
    for &rotary_dim in &[512, 498, 300] {
        for layout in [Layout::RotateHalf, Layout::Interleaved] {
            for rounding in [Rounding::Once, Rounding::HfEager, Rounding::HfUpcast] {
                let rope = Rope::new(&RopeConfig::new(512, 1e4, layout).rotary_dim(rotary_dim))
                    .unwrap()
                    .with_rounding(rounding);
                let (s, p) = (
                    rope.with_backend(Backend::Scalar).unwrap(),
                    rope.with_backend(Backend::Portable).unwrap(),
                );
                // Head-major, 2 heads × 3 tokens.
                let x: Vec<bf16> = (0..2 * 3 * 512)
                    .map(|_| bf16::from_f32(rng.unit() as f32 - 0.5))
                    .collect();
                let view = [View::head_major(2, 3, 512)];
                let (mut a, mut b) = (x.clone(), x);
                s.apply_views(&mut a, &view, &[5, 1_000_000, -3]).unwrap();
                p.apply_views(&mut b, &view, &[5, 1_000_000, -3]).unwrap();
                let bits = |v: &[bf16]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&a),
                    bits(&b),
                    "rd {rotary_dim} {layout:?} {rounding:?}"
                );
            }
        }
    }
}
