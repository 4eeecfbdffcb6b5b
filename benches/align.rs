//! What a buffer's address costs: `apply` (from positions and from a `Table`) on the same
//! shape at four placements of its first value in a 64-byte cache line — 0, 16, 32 and 48
//! bytes past a boundary, the table at the same placement — timed alternately in one process
//! (41 rounds, medians), f32, tokens × 32 heads × 128, both layouts. 16 bytes is where glibc's
//! `malloc` places a block it maps fresh (128 KiB and up; so a Rust `Vec`), and its other
//! blocks are only 16-byte aligned; ggml and PyTorch align tensors to 64 bytes.
//! Printed: ns per token-head at each placement and the time at +16 B over the aligned time.
//! `cargo bench -p posenc-benches --bench align` (pin it: `taskset -c 1 …`;
//! `POSENC_BENCH_BACKEND=avx2` times that tier on an AVX-512 host).

mod common;

use posenc::{Layout, Rope, RopeConfig};
use std::hint::black_box;
use std::time::Instant;

const SKEWS: [usize; 4] = [0, 16, 32, 48];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// `len` values starting `skew` bytes past a 64-byte boundary inside `store`.
fn placed(store: &mut Vec<f32>, len: usize, skew: usize) -> &mut [f32] {
    store.resize(len + 32, 1.0);
    let at = (0..16)
        .find(|i| (store.as_ptr() as usize + 4 * i) % 64 == skew)
        .expect("an f32 boundary at that skew");
    &mut store[at..at + len]
}

fn main() {
    println!("backend {}", common::chosen_backend().name());
    println!(
        "f32 apply at four placements in a cache line, ns per token-head, medians of 41 \
         alternating rounds; ratio = time at +16 B / aligned time"
    );
    println!("| tokens | layout | path | +0 B | +16 B | +32 B | +48 B | +16 B / +0 B |");
    println!("|---:|---|---|---:|---:|---:|---:|---:|");
    for tokens in [1usize, 64, 512] {
        for (layout, name) in [
            (Layout::Interleaved, "interleaved"),
            (Layout::RotateHalf, "rotate_half"),
        ] {
            let rope = Rope::new(&RopeConfig::new(128, 500_000.0, layout))
                .and_then(|r| r.with_backend(common::chosen_backend()))
                .unwrap();
            let len = tokens * 32 * 128;
            let mut stores: Vec<Vec<f32>> = SKEWS.iter().map(|_| vec![]).collect();
            let mut xs: Vec<&mut [f32]> = stores
                .iter_mut()
                .zip(SKEWS)
                .map(|(s, k)| placed(s, len, k))
                .collect();
            for x in xs.iter_mut() {
                for (i, v) in x.iter_mut().enumerate() {
                    *v = 1.0 + (i % 17) as f32 / 17.0;
                }
            }
            let pos: Vec<i32> = (0..tokens as i32).map(|p| p + 1000).collect();
            // Each placement's table at that placement too, as a runtime's allocator would put
            // both.
            let mut tstores: Vec<Vec<f32>> = SKEWS.iter().map(|_| vec![]).collect();
            let tables: Vec<_> = tstores
                .iter_mut()
                .zip(SKEWS)
                .map(|(s, k)| {
                    let buf = placed(s, rope.table_len(tokens), k);
                    rope.table(&pos, buf).unwrap()
                })
                .collect();
            let reps = (8192 / tokens).max(2);
            // t[path][skew]
            let mut t = vec![vec![vec![]; SKEWS.len()]; 2];
            for _ in 0..41 {
                for (k, x) in xs.iter_mut().enumerate() {
                    let s = Instant::now();
                    for _ in 0..reps {
                        rope.apply(black_box(&mut x[..]), 32, &pos[..]).unwrap();
                    }
                    t[0][k].push(s.elapsed().as_secs_f64());
                    let s = Instant::now();
                    for _ in 0..reps {
                        rope.apply(black_box(&mut x[..]), 32, tables[k]).unwrap();
                    }
                    t[1][k].push(s.elapsed().as_secs_f64());
                }
            }
            let per = 1e9 / (reps * tokens * 32) as f64;
            for (path, tp) in ["apply", "table"].iter().zip(t) {
                let m: Vec<f64> = tp.into_iter().map(|v| median(v) * per).collect();
                println!(
                    "| {tokens} | {name} | {path} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} |",
                    m[0],
                    m[1],
                    m[2],
                    m[3],
                    m[1] / m[0]
                );
            }
        }
    }
}
