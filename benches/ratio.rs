//! RoPE time against the memory ceiling, side by side: for every dtype × layout × shape
//! (tokens × 32 heads × 128), the active backend's `apply` and `posenc::bench::memory_ceiling_pass`
//! over the same bytes are timed alternately (41 rounds; each round long enough to be
//! measurable), so both see the same machine state, and the medians are printed with their
//! ratio. Then the same for `Sinusoidal::fill` of a 4096 × 512 table against a plain write of
//! the same bytes (`slice::fill`). `cargo bench -p posenc-benches --bench ratio`; the README's
//! speed tables come from it. For the default-vs-native comparison run it a second time with
//! `RUSTFLAGS="-C target-cpu=native" cargo bench -p posenc-benches --bench ratio
//! --target-dir target/native`.

use posenc::bench::memory_ceiling_pass;
use posenc::{Backend, Element, Layout, Rope, RopeConfig, Sinusoidal, SinusoidalLayout, bf16, f16};
use std::hint::black_box;
use std::time::Instant;

fn time<F: FnMut()>(f: &mut F, reps: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    t.elapsed().as_secs_f64() / reps as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Returns (ceiling, rope) in ns per token-head.
fn run<T: Element>(tokens: usize, layout: Layout) -> (f64, f64) {
    let rope = Rope::new(&RopeConfig::new(128, 500_000.0, layout)).unwrap();
    let mut x: Vec<T> = (0..tokens * 32 * 128)
        .map(|i| T::from_f32(1.0 + (i % 17) as f32 / 17.0))
        .collect();
    let pos: Vec<i32> = (0..tokens as i32).map(|p| p + 1000).collect();
    let reps = (8192 / tokens).max(2);
    let b = Backend::active();
    let (mut tc, mut tr) = (vec![], vec![]);
    for _ in 0..41 {
        let mut ceiling = || memory_ceiling_pass(b, black_box(&mut x[..]), -1.0, 3.0).unwrap();
        tc.push(time(&mut ceiling, reps));
        let mut apply = || rope.apply(black_box(&mut x[..]), 32, &pos).unwrap();
        tr.push(time(&mut apply, reps));
    }
    let per = 1e9 / (tokens * 32) as f64;
    (median(tc) * per, median(tr) * per)
}

/// Returns (plain write, fill) in µs for a 4096 × 512 table.
fn run_sin<T: Element>(layout: SinusoidalLayout) -> (f64, f64) {
    let pe = Sinusoidal::new(512, 10_000.0, layout).unwrap();
    let mut out: Vec<T> = vec![T::from_f32(0.0); 4096 * 512];
    let v = T::from_f32(0.5);
    let (mut tw, mut tf) = (vec![], vec![]);
    for _ in 0..41 {
        let mut write = || black_box(&mut out[..]).fill(v);
        tw.push(time(&mut write, 4));
        let mut fill = || pe.fill(black_box(&mut out[..]), black_box(0)).unwrap();
        tf.push(time(&mut fill, 4));
    }
    (median(tw) * 1e6, median(tf) * 1e6)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported here.
    println!(
        "backend {}; ns per token-head (128 dims), medians of 41 alternating rounds",
        Backend::active().name()
    );
    println!("| tokens | layout | f32 rope / ceiling | f32 ratio | bf16 ratio | f16 ratio |");
    println!("|---:|---|---:|---:|---:|---:|");
    for tokens in [1, 64, 512, 4096] {
        for (layout, name) in [
            (Layout::Interleaved, "interleaved"),
            (Layout::RotateHalf, "rotate_half"),
        ] {
            let (c32, r32) = run::<f32>(tokens, layout);
            let (cb, rb) = run::<bf16>(tokens, layout);
            let (ch, rh) = run::<f16>(tokens, layout);
            println!(
                "| {tokens} | {name} | {r32:.1} / {c32:.1} | {:.2} | {:.2} | {:.2} |",
                c32 / r32,
                cb / rb,
                ch / rh
            );
        }
    }
    println!();
    println!("sinusoidal fill 4096 x 512 (rows 0..4096) vs a plain write of the same bytes, µs");
    println!("| layout | f32 fill / write | f32 ratio | bf16 ratio | f16 ratio |");
    println!("|---|---:|---:|---:|---:|");
    for (layout, name) in [
        (SinusoidalLayout::Interleaved, "interleaved"),
        (SinusoidalLayout::Split, "split"),
    ] {
        let (w32, f32_) = run_sin::<f32>(layout);
        let (wb, fb) = run_sin::<bf16>(layout);
        let (wh, fh) = run_sin::<f16>(layout);
        println!(
            "| {name} | {f32_:.0} / {w32:.0} | {:.2} | {:.2} | {:.2} |",
            w32 / f32_,
            wb / fb,
            wh / fh
        );
    }
}
