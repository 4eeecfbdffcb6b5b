//! RoPE benchmarks: every op × dtype × layout × shape, each group holding the dispatched
//! backend, every available backend by name, and the memory ceiling over the same bytes, so
//! `benches/report.py` can print each as a ratio to the ceiling and a speedup over scalar.
//!
//! ```text
//! cargo bench -p posenc-benches --bench rope                            # everything, ~5 min (170 benches)
//! cargo bench -p posenc-benches --bench rope -- 'rope/f32/rotate_half'  # a regex filter on the ids
//! cargo bench -p posenc-benches --bench rope -- --quick 'decode'        # quick mode
//! python3 benches/report.py                                            # markdown tables
//! ```
//!
//! Ids: `rope/{dtype}/{layout}/{shape}/{function}`, `fill_cos_sin/{case}/{tokens}/{function}`,
//! `table/{dtype}/{layout}/{shape}/{function}`; `function` is `dispatched`
//! (`Rope::new`, the backend posenc picks), a backend name (`scalar`, `portable`, ...) or
//! `ceiling`.
//!
//! Throughput is `Bytes` = the size of `x` in its dtype. Each byte is read once and written
//! once per call, but it is counted once (so GB/s is "buffer bytes processed per second", and
//! a read+write stream moves twice that over the memory bus). The ceiling is exactly one
//! in-place `x = x·a + b` pass over a buffer of the same length and dtype, so
//! `t_ceiling / t` is the fraction of the achievable streaming speed a kernel reaches.

mod common;

use common::{Store, axpb, backends, ceiling_buffer, config, lazy};
use criterion::{
    BenchmarkGroup, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
    measurement::WallTime,
};
use posenc::{Layout, Rope, RopeConfig, Table, bf16, f16};
use std::hint::black_box;

/// Llama-3-style heads: 32 heads of 128 channels, `rope_theta = 500000`.
const HEADS: usize = 32;
const HEAD_DIM: usize = 128;
const BASE: f32 = 500_000.0;

/// tokens × 32 × 128, with the positions a runtime would pass.
struct Shape {
    name: &'static str,
    tokens: usize,
    positions: Vec<i32>,
}

impl Shape {
    fn id(&self) -> String {
        format!("{}_{}x{}x{}", self.name, self.tokens, HEADS, HEAD_DIM)
    }
    fn len(&self) -> usize {
        self.tokens * HEADS * HEAD_DIM
    }
}

fn shapes() -> Vec<Shape> {
    vec![
        // One decode step deep into a long context.
        Shape {
            name: "decode",
            tokens: 1,
            positions: vec![70_000],
        },
        // Continuous batching: 64 sequences, one new token each, at unrelated positions.
        Shape {
            name: "batch",
            tokens: 64,
            positions: (0..64).map(|i| 1_000 + 1_543 * i).collect(),
        },
        // A prompt chunk appended after a 1000-token system prompt.
        Shape {
            name: "prefill",
            tokens: 512,
            positions: (1_000..1_512).collect(),
        },
        // A long prompt from the start.
        Shape {
            name: "large",
            tokens: 4096,
            positions: (0..4096).collect(),
        },
    ]
}

fn layout_name(layout: Layout) -> &'static str {
    match layout {
        Layout::Interleaved => "interleaved",
        Layout::RotateHalf => "rotate_half",
    }
}

/// A group with `Throughput::Bytes(bytes)`; multi-millisecond shapes sample flat (the same
/// iteration count per sample) so 20 samples fit the time budget.
fn group<'a>(c: &'a mut Criterion, id: String, bytes: usize) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(id);
    g.throughput(Throughput::Bytes(bytes as u64));
    if bytes >= 4 << 20 {
        g.sampling_mode(SamplingMode::Flat);
    }
    g
}

/// `ceiling`: one `x = x·a + b` pass over `n` elements of `T`.
fn bench_ceiling<T: Store>(g: &mut BenchmarkGroup<'_, WallTime>, n: usize) {
    let mut y: Vec<T> = Vec::new();
    g.bench_function("ceiling", |b| {
        if y.len() != n {
            y = ceiling_buffer(n);
        }
        b.iter(|| axpb(&mut y[..]))
    });
}

fn rope_apply<T: Store>(c: &mut Criterion) {
    for layout in [Layout::Interleaved, Layout::RotateHalf] {
        let rope = Rope::new(&RopeConfig::new(HEAD_DIM, BASE, layout)).unwrap();
        for shape in shapes() {
            let n = shape.len();
            let id = format!(
                "rope/{}/{}/{}",
                T::DTYPE.name(),
                layout_name(layout),
                shape.id()
            );
            let mut g = group(c, id, n * T::DTYPE.size_bytes());
            let mut x: Vec<T> = Vec::new();
            let pos = &shape.positions[..];
            g.bench_function("dispatched", |b| {
                let x = lazy(&mut x, n, 1);
                b.iter(|| {
                    rope.apply(black_box(&mut x[..]), HEADS, black_box(pos))
                        .unwrap()
                })
            });
            for backend in backends() {
                let r = rope.with_backend(backend).unwrap();
                g.bench_function(backend.name(), |b| {
                    let x = lazy(&mut x, n, 1);
                    b.iter(|| {
                        r.apply(black_box(&mut x[..]), HEADS, black_box(pos))
                            .unwrap()
                    })
                });
            }
            bench_ceiling::<T>(&mut g, n);
            g.finish();
        }
    }
}

fn rope_f32(c: &mut Criterion) {
    rope_apply::<f32>(c);
}
fn rope_f16(c: &mut Criterion) {
    rope_apply::<f16>(c);
}
fn rope_bf16(c: &mut Criterion) {
    rope_apply::<bf16>(c);
}

/// cos/sin tables, `tokens × 64` each: compute-bound (two exact-angle sin/cos per pair); the
/// ceiling is a plain write of both tables. Throughput = bytes of both tables (written once).
fn fill_cos_sin(c: &mut Criterion) {
    let rope = Rope::new(&RopeConfig::new(HEAD_DIM, BASE, Layout::RotateHalf)).unwrap();
    let half = HEAD_DIM / 2;
    // A decode step deep in a context, a prompt's chunk past its start, and a prompt from its
    // start, where the low frequencies' angles are small enough to skip their reduction
    // (`engine/angles.rs`, `small_from`).
    for (case, positions) in [
        ("decode", vec![70_000]),
        ("prefill", (1_000..1_512).collect::<Vec<i32>>()),
        ("prompt", (0..512).collect()),
    ] {
        let tokens = positions.len();
        let n = tokens * half;
        let mut g = group(c, format!("fill_cos_sin/{case}/{tokens}x{half}"), 2 * n * 4);
        let (mut cos, mut sin) = (vec![0f32; n], vec![0f32; n]);
        let pos = &positions[..];
        g.bench_function("dispatched", |b| {
            b.iter(|| {
                rope.fill_cos_sin(black_box(pos), black_box(&mut cos), &mut sin)
                    .unwrap()
            })
        });
        for backend in backends() {
            let r = rope.with_backend(backend).unwrap();
            g.bench_function(backend.name(), |b| {
                b.iter(|| {
                    r.fill_cos_sin(black_box(pos), black_box(&mut cos), &mut sin)
                        .unwrap()
                })
            });
        }
        g.bench_function("ceiling", |b| {
            b.iter(|| {
                common::fill(&mut cos[..], 0.5);
                common::fill(&mut sin[..], 0.5);
            })
        });
        g.finish();
    }
}

/// Rotation from a table made once by `Rope::table` (the angles-once path: no trig at all),
/// the closest posenc gets to a pure memory-bound kernel. Throughput = bytes of `x` only (the tables, 1/32 of x in f32, are
/// read once per token and shared by all heads).
fn with_table<T: Store>(c: &mut Criterion) {
    for layout in [Layout::Interleaved, Layout::RotateHalf] {
        let rope = Rope::new(&RopeConfig::new(HEAD_DIM, BASE, layout)).unwrap();
        for shape in shapes()
            .into_iter()
            .filter(|s| matches!(s.name, "decode" | "prefill"))
        {
            let n = shape.len();
            let id = format!(
                "table/{}/{}/{}",
                T::DTYPE.name(),
                layout_name(layout),
                shape.id()
            );
            let mut g = group(c, id, n * T::DTYPE.size_bytes());
            let mut x: Vec<T> = Vec::new();
            let mut buf = vec![0.0f32; rope.table_len(shape.tokens)];
            let table: Table<'_> = rope.table(&shape.positions, &mut buf).unwrap();
            g.bench_function("dispatched", |b| {
                let x = lazy(&mut x, n, 1);
                b.iter(|| rope.apply(black_box(&mut x[..]), HEADS, table).unwrap())
            });
            for backend in backends() {
                let rope = rope.with_backend(backend).unwrap();
                g.bench_function(backend.name(), |b| {
                    let x = lazy(&mut x, n, 1);
                    b.iter(|| rope.apply(black_box(&mut x[..]), HEADS, table).unwrap())
                });
            }
            bench_ceiling::<T>(&mut g, n);
            g.finish();
        }
    }
}

fn with_table_f32(c: &mut Criterion) {
    with_table::<f32>(c);
}
fn with_table_bf16(c: &mut Criterion) {
    with_table::<bf16>(c);
}

criterion_group! {
    name = benches;
    config = config();
    targets = rope_f32, rope_f16, rope_bf16, fill_cos_sin, with_table_f32, with_table_bf16
}
criterion_main!(benches);
