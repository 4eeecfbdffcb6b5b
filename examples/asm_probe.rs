//! Not an example to learn from: the probe that `.ci/check-asm.sh` disassembles. It calls every
//! public entry point that reaches the SIMD tiers with f32, f16 and bf16, so that each tier's
//! `#[target_feature]` entry function (`posenc::engine::x86_64::{avx2,avx512}::run::<Kernel>`,
//! `posenc::engine::aarch64::neon::run::<Kernel>`) is instantiated for the RoPE, cos/sin
//! table, sinusoidal and memory-ceiling kernels and can be read back from the binary. Running
//! it is harmless: it prints one line per available backend.
//!
//! An example of the crate (rather than a crate of its own) so that the build `cargo test`
//! makes anyway contains it: CI disassembles that build instead of compiling posenc once more.

use posenc::bench::memory_ceiling_pass;
use posenc::{
    Backend, Element, Layout, RmsNorm, Rope, RopeConfig, Sinusoidal, SinusoidalLayout, View, bf16,
    f16,
};
use std::hint::black_box;

fn every_entry_point<T: Element>(backend: Backend) -> f32 {
    let rope = Rope::new(&RopeConfig::new(128, 500_000.0, Layout::RotateHalf))
        .unwrap()
        .with_backend(backend)
        .unwrap();
    let positions = black_box([3, 70_000]);
    let mut x = vec![T::from_f32(0.5); 2 * 4 * 128];
    rope.apply(black_box(&mut x), 4, &positions).unwrap();
    // Rotate-into (T into f16 and bf16 caches: kernels for f32 → 16-bit, staged for the
    // rest) and QK-norm + RoPE (in place and into).
    let view = View::token_major(4, 128);
    let (mut h, mut b) = (vec![f16::ZERO; x.len()], vec![bf16::ZERO; x.len()]);
    rope.apply_into(black_box(&x), 4, &mut h, view, &positions)
        .unwrap();
    rope.apply_into(black_box(&x), 4, &mut b, view, &positions)
        .unwrap();
    let w = [1.0f32; 128];
    let norm = RmsNorm::per_head(&w, 1e-6);
    rope.apply_normed(black_box(&mut x), 4, &norm, &positions)
        .unwrap();
    rope.apply_normed_into(black_box(&x), 4, &norm, &mut b, view, &positions)
        .unwrap();
    let (mut cos, mut sin) = (vec![0f32; 2 * 64], vec![0f32; 2 * 64]);
    rope.fill_cos_sin(&positions, &mut cos, &mut sin).unwrap();
    let pe = Sinusoidal::new(64, 10_000.0, SinusoidalLayout::Interleaved)
        .unwrap()
        .with_backend(backend)
        .unwrap();
    let mut t = vec![T::from_f32(0.0); 2 * 64];
    pe.fill(black_box(&mut t), 5).unwrap();
    memory_ceiling_pass(backend, black_box(&mut x), 2.0, 0.5).unwrap();
    x[0].to_f32() + t[1].to_f32() + cos[0] + sin[1] + h[2].to_f32() + b[3].to_f32()
}

fn main() {
    for &b in Backend::ALL.iter().filter(|b| b.is_available()) {
        let s = every_entry_point::<f32>(b)
            + every_entry_point::<f16>(b)
            + every_entry_point::<bf16>(b);
        println!("{}: {s}", b.name());
    }
}
