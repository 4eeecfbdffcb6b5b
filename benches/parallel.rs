//! `Rope::par_apply` (feature `rayon`) on the large prefill shape, f32 rotate_half
//! 4096 × 32 × 128 (64 MiB), serial and on rayon pools of 1 and 2 threads.
//!
//! ```text
//! cargo bench -p posenc-benches --features rayon --bench parallel
//! cargo bench -p posenc-benches --features rayon --bench parallel -- --quick
//! ```
//!
//! Ids: `rope_par/f32/rotate_half/large_4096x32x128/{serial,threads_1,threads_2}`. After the
//! criterion group it prints its own median-of-runs speedup of 2 threads over 1 (the ratio
//! this bench exists for; the criterion numbers above it are the detailed ones), and the
//! memory ceiling over the same bytes on one and on two threads: how much two threads can
//! gain at all on this machine for a memory-bound pass.

use criterion::{Criterion, SamplingMode, Throughput, criterion_group};
use posenc::{Backend, Layout, Rope, RopeConfig};
use std::hint::black_box;
use std::time::{Duration, Instant};

const TOKENS: usize = 4096;
const HEADS: usize = 32;
const HEAD_DIM: usize = 128;

struct Case {
    rope: Rope,
    positions: Vec<i32>,
    x: Vec<f32>,
}

fn case() -> Case {
    let rope = Rope::new(&RopeConfig::new(HEAD_DIM, 500_000.0, Layout::RotateHalf)).unwrap();
    let positions = (0..TOKENS as i32).collect();
    let x = (0..TOKENS * HEADS * HEAD_DIM)
        .map(|i| (i % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    Case { rope, positions, x }
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let mut k = case();
    let mut g = c.benchmark_group(format!(
        "rope_par/f32/rotate_half/large_{TOKENS}x{HEADS}x{HEAD_DIM}"
    ));
    g.throughput(Throughput::Bytes((k.x.len() * 4) as u64))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .measurement_time(Duration::from_secs(4));
    g.bench_function("serial", |b| {
        b.iter(|| {
            k.rope
                .apply(black_box(&mut k.x), HEADS, &k.positions)
                .unwrap()
        })
    });
    for threads in [1, 2] {
        let p = pool(threads);
        g.bench_function(format!("threads_{threads}"), |b| {
            b.iter(|| {
                p.install(|| {
                    k.rope
                        .par_apply(black_box(&mut k.x), HEADS, &k.positions)
                        .unwrap()
                })
            })
        });
    }
    g.finish();
}

/// Median wall time of `runs` calls of `par_apply` in a pool of `threads`.
fn median(k: &mut Case, threads: usize, runs: usize) -> Duration {
    let p = pool(threads);
    let mut t: Vec<Duration> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            p.install(|| {
                k.rope
                    .par_apply(black_box(&mut k.x), HEADS, &k.positions)
                    .unwrap()
            });
            s.elapsed()
        })
        .collect();
    t.sort();
    t[runs / 2]
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    let mut k = case();
    let _warm = median(&mut k, 2, 3);
    let (t1, t2) = (median(&mut k, 1, 31), median(&mut k, 2, 31));
    let mut ts: Vec<Duration> = (0..31)
        .map(|_| {
            let s = Instant::now();
            k.rope
                .apply(black_box(&mut k.x), HEADS, &k.positions)
                .unwrap();
            s.elapsed()
        })
        .collect();
    ts.sort();
    println!(
        "rope_par speedup, 2 threads over 1 (median of 31, {} cores): {:.2}× ({:.2?} → {:.2?}); \
         over the serial `apply` ({:.2?}): {:.2}×",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        t1.as_secs_f64() / t2.as_secs_f64(),
        t1,
        t2,
        ts[15],
        ts[15].as_secs_f64() / t2.as_secs_f64()
    );
    // The same bytes streamed once on one thread (x = x·a + b): when this is close to t1,
    // the call is bound by memory bandwidth, which more threads do not add much of.
    let mut c: Vec<Duration> = (0..31)
        .map(|_| {
            let s = Instant::now();
            posenc::bench::memory_ceiling_pass(Backend::active(), black_box(&mut k.x), 1.0, 0.0)
                .unwrap();
            s.elapsed()
        })
        .collect();
    c.sort();
    // The same pass split in two halves on two threads: the most two threads can gain on
    // this machine for a memory-bound call.
    let p = pool(2);
    let mut c2: Vec<Duration> = (0..31)
        .map(|_| {
            let mid = k.x.len() / 2;
            let (a, b) = k.x.split_at_mut(mid);
            let s = Instant::now();
            let (ra, rb) = p.install(|| {
                rayon::join(
                    || {
                        posenc::bench::memory_ceiling_pass(
                            Backend::active(),
                            black_box(a),
                            1.0,
                            0.0,
                        )
                    },
                    || {
                        posenc::bench::memory_ceiling_pass(
                            Backend::active(),
                            black_box(b),
                            1.0,
                            0.0,
                        )
                    },
                )
            });
            ra.unwrap();
            rb.unwrap();
            s.elapsed()
        })
        .collect();
    c2.sort();
    println!(
        "memory ceiling, same bytes: one thread {:.2?}, two threads {:.2?} ({:.2}×)",
        c[15],
        c2[15],
        c[15].as_secs_f64() / c2[15].as_secs_f64()
    );
}
