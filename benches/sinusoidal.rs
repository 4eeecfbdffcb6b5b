//! Sinusoidal benchmarks: a 4096 × 512 table fill and a one-row `add` (a decode step), for
//! each dtype and layout, each group holding the dispatched backend, every available backend
//! by name and a ceiling over the same bytes.
//!
//! ```text
//! cargo bench -p posenc-benches --bench sinusoidal                # everything, ~1.5 min (60 benches)
//! cargo bench -p posenc-benches --bench sinusoidal -- 'fill/f32'  # a regex filter on the ids
//! python3 benches/report.py sinusoidal                             # markdown tables
//! ```
//!
//! Throughput is `Bytes` = the size of the output (`fill`) or of `x` (`add`) in its dtype.
//! `add` reads and writes each byte once; it is counted once.

mod common;

use common::{Store, axpb, backends, ceiling_buffer, config, lazy};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use posenc::{Sinusoidal, SinusoidalLayout, bf16, f16};
use std::hint::black_box;

const D_MODEL: usize = 512;
const BASE: f32 = 10_000.0;
const ROWS: usize = 4096;

fn layouts() -> [(SinusoidalLayout, &'static str); 2] {
    [
        (SinusoidalLayout::Interleaved, "interleaved"),
        (SinusoidalLayout::Split, "split"),
    ]
}

/// `fill`: rows 0..4096 of a d_model = 512 table. Ceiling: a plain write of the same bytes
/// (`out.fill(v)`, vectorised for this CPU: what a table fill at memory speed would cost).
fn fill<T: Store>(c: &mut Criterion) {
    for (layout, lname) in layouts() {
        let pe = Sinusoidal::new(D_MODEL, BASE, layout).unwrap();
        let n = ROWS * D_MODEL;
        let id = format!(
            "sinusoidal_fill/{}/{lname}/{ROWS}x{D_MODEL}",
            T::DTYPE.name()
        );
        let mut g = c.benchmark_group(id);
        g.throughput(Throughput::Bytes((n * T::DTYPE.size_bytes()) as u64));
        g.sampling_mode(SamplingMode::Flat);
        let mut out: Vec<T> = Vec::new();
        g.bench_function("dispatched", |b| {
            let out = lazy(&mut out, n, 1);
            b.iter(|| pe.fill(black_box(&mut out[..]), black_box(0)).unwrap())
        });
        for backend in backends() {
            let p = pe.with_backend(backend).unwrap();
            g.bench_function(backend.name(), |b| {
                let out = lazy(&mut out, n, 1);
                b.iter(|| p.fill(black_box(&mut out[..]), black_box(0)).unwrap())
            });
        }
        g.bench_function("ceiling", |b| {
            let out = lazy(&mut out, n, 1);
            b.iter(|| common::fill(&mut out[..], T::from_f32(0.5)))
        });
        g.finish();
    }
}

/// `add`: one row at position 70000 added to a decode token's embedding. Repeated adds make
/// `x` grow until its rounding absorbs the increments; speed does not depend on the values.
/// Ceiling: `x = x·a + b` over the same bytes (an add reads `x`, so a plain write would be
/// an unfair ceiling).
fn add<T: Store>(c: &mut Criterion) {
    for (layout, lname) in layouts() {
        let pe = Sinusoidal::new(D_MODEL, BASE, layout).unwrap();
        let id = format!("sinusoidal_add/{}/{lname}/1x{D_MODEL}", T::DTYPE.name());
        let mut g = c.benchmark_group(id);
        g.throughput(Throughput::Bytes((D_MODEL * T::DTYPE.size_bytes()) as u64));
        let mut x: Vec<T> = Vec::new();
        let pos = [70_000];
        g.bench_function("dispatched", |b| {
            let x = lazy(&mut x, D_MODEL, 1);
            b.iter(|| pe.add(black_box(&mut x[..]), black_box(&pos)).unwrap())
        });
        for backend in backends() {
            let p = pe.with_backend(backend).unwrap();
            g.bench_function(backend.name(), |b| {
                let x = lazy(&mut x, D_MODEL, 1);
                b.iter(|| p.add(black_box(&mut x[..]), black_box(&pos)).unwrap())
            });
        }
        let mut y: Vec<T> = Vec::new();
        g.bench_function("ceiling", |b| {
            if y.len() != D_MODEL {
                y = ceiling_buffer(D_MODEL);
            }
            b.iter(|| axpb(&mut y[..]))
        });
        g.finish();
    }
}

fn all(c: &mut Criterion) {
    fill::<f32>(c);
    fill::<f16>(c);
    fill::<bf16>(c);
    add::<f32>(c);
    add::<f16>(c);
    add::<bf16>(c);
}

criterion_group! {
    name = benches;
    config = config();
    targets = all
}
criterion_main!(benches);
