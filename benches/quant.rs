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
    BlockQ4_0, BlockQ8_0, Error, Layout, Rope, RopeConfig, dequantize_q4_0, dequantize_q8_0,
    quantize_q4_0, quantize_q8_0,
};
use std::hint::black_box;

const HEADS: usize = 8;
const HEAD_DIM: usize = 128;

/// posenc's one-pass shift of a format's K cache: `(rope, blocks, heads, deltas)`.
type Shift<B> = fn(&Rope, &mut [B], usize, &[i32]) -> Result<(), Error>;

/// A format's ggml functions: quantize, dequantize, and posenc's one-pass shift.
struct Format<B> {
    name: &'static str,
    quantize: fn(&[f32], &mut [B]) -> Result<(), Error>,
    dequantize: fn(&[B], &mut [f32]) -> Result<(), Error>,
    shift: Shift<B>,
}

fn bench(c: &mut Criterion) {
    let rope = Rope::new(&RopeConfig::new(HEAD_DIM, 500_000.0, Layout::RotateHalf)).unwrap();
    let q8 = Format::<BlockQ8_0> {
        name: "q8_0",
        quantize: quantize_q8_0,
        dequantize: dequantize_q8_0,
        shift: |r, k, h, d| r.shift_q8_0(k, h, d),
    };
    let q4 = Format::<BlockQ4_0> {
        name: "q4_0",
        quantize: quantize_q4_0,
        dequantize: dequantize_q4_0,
        shift: |r, k, h, d| r.shift_q4_0(k, h, d),
    };
    for tokens in [64usize, 1024, 4096] {
        let x: Vec<f32> = uniform(tokens * HEADS * HEAD_DIM, 7, -1.0, 1.0);
        let deltas = vec![-512i32; tokens];
        group(c, &rope, &q8, tokens, &x, &deltas);
        group(c, &rope, &q4, tokens, &x, &deltas);
    }
}

/// One format at one size: the one pass, the three passes, and each of those alone.
fn group<B: Clone + Default>(
    c: &mut Criterion,
    rope: &Rope,
    fmt: &Format<B>,
    tokens: usize,
    x: &[f32],
    deltas: &[i32],
) {
    let mut k = vec![B::default(); x.len() / 32];
    (fmt.quantize)(x, &mut k).unwrap();
    let mut f = vec![0f32; x.len()];
    let mut g = c.benchmark_group(format!("shift_{}/{tokens}x{HEADS}x{HEAD_DIM}", fmt.name));
    g.throughput(Throughput::Bytes((k.len() * size_of::<B>()) as u64));
    g.bench_function("one_pass", |b| {
        b.iter(|| (fmt.shift)(rope, black_box(&mut k), HEADS, deltas).unwrap())
    });
    g.bench_function("three_pass", |b| {
        b.iter(|| {
            (fmt.dequantize)(black_box(&k), &mut f).unwrap();
            rope.shift(&mut f, HEADS, deltas).unwrap();
            (fmt.quantize)(&f, black_box(&mut k)).unwrap();
        })
    });
    g.bench_function("pass_dequantize", |b| {
        b.iter(|| (fmt.dequantize)(black_box(&k), black_box(&mut f)).unwrap())
    });
    g.bench_function("pass_shift", |b| {
        b.iter(|| rope.shift(black_box(&mut f), HEADS, deltas).unwrap())
    });
    g.bench_function("pass_quantize", |b| {
        b.iter(|| (fmt.quantize)(black_box(&f), black_box(&mut k)).unwrap())
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench
}
criterion_main!(benches);
