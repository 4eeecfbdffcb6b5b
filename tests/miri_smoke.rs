//! A small, fast pass over every backend, dtype, layout and entry point, sized for Miri
//! (`cargo +nightly miri test --test miri_smoke`): it checks memory safety of the kernels
//! (tails, padding, chunking, partial rotary) and the cross-backend contract on tiny shapes.
//! Under Miri the x86 tiers are available only when compiled in with `-C target-feature`,
//! which CI does to run the AVX2 and AVX-512 kernels on Miri's model of the intrinsics.

mod common;

use posenc::{Backend, Element, Layout, Rope, RopeConfig, Sinusoidal, SinusoidalLayout, bf16, f16};

fn data<T: Element>(n: usize, seed: u32) -> Vec<T> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            T::from_f32((s % 2001) as f32 / 1000.0 - 1.0)
        })
        .collect()
}

/// Each output within a few roundings of `want` (bitwise when `bitwise`); inputs are in
/// [-1, 1], so `scale` roundings of magnitude ≤ 1 bound the difference.
#[track_caller]
fn close<T: Element>(backend: Backend, bitwise: bool, got: &[T], want: &[T], scale: f32) {
    for (g, w) in got.iter().zip(want) {
        let (g, w) = (g.to_f32(), w.to_f32());
        if bitwise {
            assert_eq!(
                g.to_bits(),
                w.to_bits(),
                "{backend:?} {}",
                core::any::type_name::<T>()
            );
        } else {
            let ulp = match T::DTYPE {
                posenc::Dtype::F32 => f32::EPSILON,
                posenc::Dtype::F16 => 2f32.powi(-10),
                posenc::Dtype::Bf16 => 2f32.powi(-7),
            };
            assert!(
                (g - w).abs() <= ulp * scale * 2.0,
                "{backend:?}: {g} vs {w}"
            );
        }
    }
}

fn rope_case<T: Element>(layout: Layout, head_dim: usize, rotary_dim: usize) {
    rope_shape::<T>(layout, head_dim, rotary_dim, &[-3, 70_000], 3);
}

fn rope_shape<T: Element>(
    layout: Layout,
    head_dim: usize,
    rotary_dim: usize,
    positions: &[i32],
    heads: usize,
) {
    let cfg = RopeConfig::new(head_dim, 10_000.0, layout).rotary_dim(rotary_dim);
    let rope = Rope::new(&cfg).unwrap();
    let tokens = positions.len();
    let x0: Vec<T> = data(tokens * heads * head_dim, head_dim as u32);
    let mut want = x0.clone();
    rope.with_backend(Backend::Scalar)
        .unwrap()
        .apply(&mut want, heads, positions)
        .unwrap();
    let half = rotary_dim / 2;
    let (mut cos, mut sin) = (vec![0f32; tokens * half], vec![0f32; tokens * half]);
    rope.fill_cos_sin(positions, &mut cos, &mut sin).unwrap();
    for &b in Backend::ALL.iter().filter(|b| b.is_available()) {
        let r = rope.with_backend(b).unwrap();
        let mut x = x0.clone();
        r.apply(&mut x, heads, positions).unwrap();
        close(b, b.matches_scalar_bitwise(), &x, &want, 4.0);
        r.apply_inverse(&mut x, heads, positions).unwrap();
        close(b, false, &x, &x0, 8.0);
        let mut y = x0.clone();
        common::table_on(b, &mut y, heads, head_dim, layout, &cos, &sin).unwrap();
        close(b, b.matches_scalar_bitwise(), &y, &want, 4.0);
        let (mut c2, mut s2) = (vec![0f32; tokens * half], vec![0f32; tokens * half]);
        r.fill_cos_sin(positions, &mut c2, &mut s2).unwrap();
        assert_eq!(
            c2, cos,
            "{b:?}: cos/sin tables are bitwise identical on every backend"
        );
        assert_eq!(s2, sin);
        for t in 0..tokens * heads {
            let row = t * head_dim;
            assert!(x0[row + rotary_dim..row + head_dim] == y[row + rotary_dim..row + head_dim]);
        }
    }
}

/// Miri has no model of the F16C conversions (`vcvtps2ph`), which `half` and the x86 tiers
/// use when the build enables `f16c`; such a Miri run covers f32 and bf16 only.
const F16: bool = !cfg!(all(miri, target_feature = "f16c"));

#[test]
fn rope_every_backend_dtype_layout_tail() {
    for layout in [Layout::Interleaved, Layout::RotateHalf] {
        // (64, 64) and (80, 64): whole vectors of pairs on AVX2, so the x86 tiers take their
        // raw-pointer fast path (heads back to back, and strided by 80 with a partial window).
        // Under Miri without (64, 64): tests/views.rs and tests/properties.rs run whole
        // vectors with heads back to back on every backend there.
        let shapes: &[_] = if cfg!(miri) {
            &[(2, 2), (6, 4), (18, 18), (40, 34), (80, 64)]
        } else {
            &[(2, 2), (6, 4), (18, 18), (40, 34), (64, 64), (80, 64)]
        };
        for &(hd, rd) in shapes {
            rope_case::<f32>(layout, hd, rd);
            if F16 {
                rope_case::<f16>(layout, hd, rd);
            }
            rope_case::<bf16>(layout, hd, rd);
        }
    }
}

/// One token (decode) with 7 heads: the x86 fast path's interleaved four-heads-per-pass
/// loop, then its two-head and one-head remainders.
#[test]
fn rope_decode_many_heads() {
    // Under Miri heads of 32 (16 pairs): still whole vectors, at half the cost.
    let hd = if cfg!(miri) { 32 } else { 64 };
    for layout in [Layout::Interleaved, Layout::RotateHalf] {
        rope_shape::<f32>(layout, hd, hd, &[70_000], 7);
        rope_shape::<bf16>(layout, hd, hd, &[-3], 7);
    }
}

/// bf16 heads too wide for AVX2 to hold their table in registers (rotate_half: 64 pairs, two
/// groups of 16 per head on AVX2; interleaved: 32 pairs), two tokens of three heads: the
/// streaming loops on split tables (`Run::rotate_split`), their two- and one-head passes, the
/// next token's table written split while the current one is read.
#[test]
fn rope_bf16_streamed_on_split_tables() {
    rope_shape::<bf16>(Layout::RotateHalf, 128, 128, &[-3, 70_000], 3);
    rope_shape::<bf16>(Layout::Interleaved, 64, 64, &[-3, 70_000], 3);
}

/// f32 heads at every offset of a 32-byte vector: AVX2 moves windows half a vector off a
/// boundary on whole vectors, their end pieces in halves (decode's four heads per pass, the
/// table held in registers over several tokens); every placement's result is bitwise the
/// aligned one's, and Miri checks the pieces' accesses.
#[test]
fn rope_f32_at_every_offset_of_a_vector() {
    for layout in [Layout::Interleaved, Layout::RotateHalf] {
        let rope = Rope::new(&RopeConfig::new(32, 10_000.0, layout)).unwrap();
        for (positions, heads) in [(&[70_000][..], 5), (&[-3, 9][..], 2)] {
            let len = positions.len() * heads * 32;
            let x0: Vec<f32> = data(len, 7);
            for &b in Backend::ALL.iter().filter(|b| b.is_available()) {
                let r = rope.with_backend(b).unwrap();
                let mut buf = vec![0f32; len + 16];
                let start = (buf.as_ptr() as usize / 4).wrapping_neg() % 8;
                let mut want = Vec::new();
                for off in 0..8 {
                    let x = &mut buf[start + off..start + off + len];
                    x.copy_from_slice(&x0);
                    r.apply(x, heads, positions).unwrap();
                    if off == 0 {
                        want = x.to_vec();
                    }
                    close(b, true, x, &want, 0.0);
                }
            }
        }
    }
}

#[test]
fn rotary_dim_above_one_chunk() {
    // 160 pairs: two chunks of cos/sin per token, the last one short. Under Miri two heads
    // (rotate_half: two at a time) and one (interleaved: one at a time) instead of three.
    let heads = |n| if cfg!(miri) { n } else { 3 };
    rope_shape::<f32>(Layout::RotateHalf, 320, 320, &[-3, 70_000], heads(2));
    rope_shape::<bf16>(Layout::Interleaved, 322, 320, &[-3, 70_000], heads(1));
}

/// `fill` long enough for whole passes of the x86 recurrence (8 rows), which write through
/// raw pointers, plus a partial pass; d = 44 gives spans with strips of 2·LANES and LANES
/// columns and a tail shorter than a vector (AVX2).
#[test]
fn sinusoidal_fill_whole_passes() {
    for layout in [
        SinusoidalLayout::Interleaved,
        SinusoidalLayout::SplitCosFirst,
    ] {
        let pe = Sinusoidal::new(44, 10_000.0, layout).unwrap();
        let mut want = vec![0f32; 35 * 44];
        let scalar = pe.with_backend(Backend::Scalar).unwrap();
        scalar.fill(&mut want, 0).unwrap();
        for b in Backend::available() {
            let mut got = vec![0f32; 35 * 44];
            pe.with_backend(b).unwrap().fill(&mut got, 0).unwrap();
            assert_eq!(got, want, "{b:?} {layout:?}");
        }
    }
}

#[test]
fn sinusoidal_every_backend() {
    for layout in [SinusoidalLayout::Interleaved, SinusoidalLayout::Split] {
        for d in [2, 10, 36] {
            let pe = Sinusoidal::new(d, 10_000.0, layout).unwrap();
            let mut want = vec![0f32; 3 * d];
            pe.with_backend(Backend::Scalar)
                .unwrap()
                .fill(&mut want, 5)
                .unwrap();
            for &b in Backend::ALL.iter().filter(|b| b.is_available()) {
                let p = pe.with_backend(b).unwrap();
                let mut got = vec![0f32; 3 * d];
                p.fill(&mut got, 5).unwrap();
                assert_eq!(got, want, "{b:?}");
                let mut h = vec![bf16::from_f32(0.25); 3 * d];
                p.add(&mut h, &[5, 6, 7]).unwrap();
                for (g, w) in h.iter().zip(&want) {
                    assert_eq!(*g, bf16::from_f32(0.25 + w));
                }
            }
        }
    }
}

#[test]
fn errors_leave_buffers_alone() {
    let rope = Rope::new(&RopeConfig::new(8, 10_000.0, Layout::RotateHalf)).unwrap();
    let mut x = vec![bf16::from_f32(1.5); 17];
    assert!(rope.apply(&mut x, 2, &[0]).is_err());
    assert!(x.iter().all(|v| v.to_f32() == 1.5));
}

#[test]
fn compiled_in_tiers_are_exercised() {
    // A build (or Miri run) with the tier's target features must make the tier available,
    // so the tests above really run its kernels.
    if cfg!(all(
        target_arch = "x86_64",
        target_feature = "avx2",
        target_feature = "fma",
        target_feature = "f16c"
    )) {
        assert!(Backend::Avx2.is_available());
    }
    if cfg!(all(
        target_arch = "x86_64",
        target_feature = "avx512f",
        target_feature = "avx2",
        target_feature = "fma",
        target_feature = "f16c"
    )) {
        assert!(Backend::Avx512.is_available());
    }
}
