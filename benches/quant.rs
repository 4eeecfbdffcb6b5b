//! The quantized K-cache shift: one pass (`Rope::shift_q8_0` / `shift_q4_0`) against the
//! three passes a runtime writes without it (dequantize the whole cache to f32,
//! `Rope::shift`, quantize back), each pass posenc's own (the same dispatched kernels).
//!
//! ```text
//! taskset -c 1 cargo bench --bench quant                    # everything
//! taskset -c 1 cargo bench --bench quant -- 'q8_0/1024'     # a regex filter on the ids
//! ```
//!
//! Ids: `shift_{q8_0,q4_0}/{tokens}x8x128/{one_pass,three_pass}`: Llama-3-8B's K cache per
//! layer (8 KV heads of 128 channels, θ 5e5), every token shifted by −512 (a context shift
//! that drops 512 tokens). Throughput is the cache's bytes.
//!
//! Each of the three passes is timed alone too (`pass_dequantize`, `pass_shift`,
//! `pass_quantize`): the one pass does the work of all three with the same kernels, only
//! without the f32 buffer between them, so `three_pass ÷ pass_quantize` (or any one pass) bounds
//! what fusing can gain where that buffer stays in cache.

mod common;

use common::{config, uniform};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use posenc::{
    BlockQ4_0, BlockQ8_0, Layout, Rope, RopeConfig, dequantize_q4_0, dequantize_q8_0,
    quantize_q4_0, quantize_q8_0,
};
use std::hint::black_box;

const HEADS: usize = 8;
const HEAD_DIM: usize = 128;

fn bench(c: &mut Criterion) {
    let rope = Rope::new(&RopeConfig::new(HEAD_DIM, 500_000.0, Layout::RotateHalf)).unwrap();
    for tokens in [64usize, 1024, 4096] {
        let n = tokens * HEADS * HEAD_DIM;
        let x: Vec<f32> = uniform(n, 7, -1.0, 1.0);
        let deltas = vec![-512i32; tokens];
        let mut f = vec![0f32; n];
        let id = format!("{tokens}x{HEADS}x{HEAD_DIM}");

        let mut k8 = vec![BlockQ8_0::default(); n / 32];
        quantize_q8_0(&x, &mut k8).unwrap();
        let mut g = c.benchmark_group(format!("shift_q8_0/{id}"));
        g.throughput(Throughput::Bytes(
            (k8.len() * size_of::<BlockQ8_0>()) as u64,
        ));
        g.bench_function("one_pass", |b| {
            b.iter(|| rope.shift_q8_0(black_box(&mut k8), HEADS, &deltas).unwrap())
        });
        g.bench_function("three_pass", |b| {
            b.iter(|| {
                dequantize_q8_0(black_box(&k8), &mut f).unwrap();
                rope.shift(&mut f, HEADS, &deltas).unwrap();
                quantize_q8_0(&f, black_box(&mut k8)).unwrap();
            })
        });
        g.bench_function("pass_dequantize", |b| {
            b.iter(|| dequantize_q8_0(black_box(&k8), black_box(&mut f)).unwrap())
        });
        g.bench_function("pass_shift", |b| {
            b.iter(|| rope.shift(black_box(&mut f), HEADS, &deltas).unwrap())
        });
        g.bench_function("pass_quantize", |b| {
            b.iter(|| quantize_q8_0(black_box(&f), black_box(&mut k8)).unwrap())
        });
        g.finish();

        let mut k4 = vec![BlockQ4_0::default(); n / 32];
        quantize_q4_0(&x, &mut k4).unwrap();
        let mut g = c.benchmark_group(format!("shift_q4_0/{id}"));
        g.throughput(Throughput::Bytes(
            (k4.len() * size_of::<BlockQ4_0>()) as u64,
        ));
        g.bench_function("one_pass", |b| {
            b.iter(|| rope.shift_q4_0(black_box(&mut k4), HEADS, &deltas).unwrap())
        });
        g.bench_function("three_pass", |b| {
            b.iter(|| {
                dequantize_q4_0(black_box(&k4), &mut f).unwrap();
                rope.shift(&mut f, HEADS, &deltas).unwrap();
                quantize_q4_0(&f, black_box(&mut k4)).unwrap();
            })
        });
        g.bench_function("pass_dequantize", |b| {
            b.iter(|| dequantize_q4_0(black_box(&k4), black_box(&mut f)).unwrap())
        });
        g.bench_function("pass_shift", |b| {
            b.iter(|| rope.shift(black_box(&mut f), HEADS, &deltas).unwrap())
        });
        g.bench_function("pass_quantize", |b| {
            b.iter(|| quantize_q4_0(black_box(&f), black_box(&mut k4)).unwrap())
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench
}
criterion_main!(benches);
