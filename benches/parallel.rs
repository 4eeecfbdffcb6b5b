//! `Rope::par_apply` (feature `rayon`) on the large prefill shape, f32 rotate_half
//! 4096 × 32 × 128 (64 MiB), serial and on rayon pools of 1 and 2 threads.
//!
//! ```text
//! cargo bench -p posenc-benches --features rayon --bench parallel
//! cargo bench -p posenc-benches --features rayon --bench parallel -- --quick
//! ```
//!
//! Ids: `rope_par/f32/rotate_half/large_4096x32x128/{serial,threads_1,threads_2}`. After the
//! criterion group come the ratios this bench exists for, from rounds that time every
//! contender in turn on the same buffer (serial `apply`, `par_apply` on pools of 1 and 2
//! threads, and the memory ceiling over the same bytes on 1 and 2 threads): `par_apply` on
//! two threads against the two-thread ceiling (1.0 = as fast as two threads can move the
//! bytes on this machine), and what the second thread adds to each. Medians of the
//! per-round ratios, with their quartiles.

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

/// The memory ceiling over `x` (x = x·a + b, in place) split in `parts` contiguous pieces,
/// one rayon task each, in pool `p`: the most `parts` threads can gain on this machine for a
/// memory-bound pass.
fn ceiling(p: &rayon::ThreadPool, x: &mut [f32], parts: usize) {
    let per = x.len().div_ceil(parts);
    p.install(|| {
        use rayon::prelude::*;
        x.par_chunks_mut(per).for_each(|x| {
            posenc::bench::memory_ceiling_pass(Backend::active(), black_box(x), 1.0, 0.0).unwrap()
        })
    });
}

/// Median and quartiles of `v`.
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    (v[n / 2], v[n / 4], v[3 * n / 4])
}

criterion_group!(benches, bench);

/// The contenders of the side-by-side rounds, in the order each round times them.
const NAMES: [&str; 5] = [
    "apply (serial)",
    "par_apply, 1 thread",
    "par_apply, 2 threads",
    "ceiling, 1 thread",
    "ceiling, 2 threads",
];

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // Every contender once per round, in turn, on the same buffer: a burst of load from
    // other processes hits them alike, and each round gives its own ratios.
    let mut k = case();
    let (p1, p2) = (pool(1), pool(2));
    const ROUNDS: usize = 31;
    let mut times = [const { Vec::new() }; 5];
    for round in 0..=ROUNDS {
        let mut t = [0f64; 5];
        for (i, slot) in t.iter_mut().enumerate() {
            let s = Instant::now();
            match i {
                0 => k
                    .rope
                    .apply(black_box(&mut k.x), HEADS, &k.positions)
                    .unwrap(),
                1 | 2 => (if i == 1 { &p1 } else { &p2 }).install(|| {
                    k.rope
                        .par_apply(black_box(&mut k.x), HEADS, &k.positions)
                        .unwrap()
                }),
                _ => ceiling(if i == 3 { &p1 } else { &p2 }, &mut k.x, i - 2),
            }
            *slot = s.elapsed().as_secs_f64();
        }
        // Round 0 warms the pools and the pages.
        if round > 0 {
            for (v, t) in times.iter_mut().zip(t) {
                v.push(t);
            }
        }
    }
    println!(
        "side by side, {ROUNDS} rounds ({} cores): median ms (quartiles)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for (name, v) in NAMES.iter().zip(&times) {
        let (m, lo, hi) = spread(v.iter().map(|t| t * 1e3).collect());
        println!("  {name:<22} {m:.2} ({lo:.2}–{hi:.2})");
    }
    // Ratios within each round, then their median: ceiling time / posenc time (1.0 = memory
    // speed on that many threads), and the speed-up two threads give each.
    let ratio =
        |a: usize, b: usize| spread((0..ROUNDS).map(|r| times[a][r] / times[b][r]).collect());
    for (label, (a, b)) in [
        ("par_apply on 2 threads vs the 2-thread ceiling", (4, 2)),
        ("par_apply on 1 thread vs the 1-thread ceiling", (3, 1)),
        ("2 threads over 1, par_apply", (1, 2)),
        ("2 threads over 1, ceiling", (3, 4)),
        ("par_apply on 2 threads over serial apply", (0, 2)),
    ] {
        let (m, lo, hi) = ratio(a, b);
        println!("  {label}: {m:.2} ({lo:.2}–{hi:.2})");
    }
}
