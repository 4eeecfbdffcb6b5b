//! candle_nn's `rope_i` / `rope` / `rope_thd` vs posenc-candle's drop-ins, on the same
//! tensors and tables, plus posenc-candle's `RotaryEmbedding` (exact angles, in place).
//!
//! ```sh
//! cd benches/peers && cargo run --release --no-default-features --bin candle_dropin
//! PEERS_TOKENS=1,64 cargo run --release --no-default-features --bin candle_dropin
//! ```
//!
//! Shape `(1, 32, t, 128)` (`(1, t, 32, 128)` for `rope_thd`), Llama-3 θ = 500000, positions
//! `0..t`, tables built as candle-transformers' Llama builds them (f32 `positions · inv_freq`,
//! f32 cos/sin, cast to the dtype). Both drop-ins return a new tensor (candle's API);
//! `RotaryEmbedding::apply_inplace` rotates the tensor's own storage. Every implementation is
//! timed on a worker of a rayon pool of 1 or 2 threads (candle and posenc-candle both use
//! the current pool). Samples are interleaved per round so load from other processes hits
//! all alike; printed: median ns per token-head, and the median and range over the rounds of
//! the per-round ratio candle_nn / posenc-candle.

use candle_core::{DType, Device, Tensor};
use posenc::{Layout, Rope, RopeConfig};
use posenc_candle::RotaryEmbedding;
use std::hint::black_box;
use std::time::{Duration, Instant};

const HEADS: usize = 32;
const DIM: usize = 128;
const BASE: f32 = 500_000.0;
const TOKENS: [usize; 4] = [1, 64, 512, 4096];
const ROUNDS: usize = 15;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    RopeI,
    Rope,
    RopeThd,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::RopeI => "rope_i (bhtd, interleaved)",
            Kind::Rope => "rope (bhtd, rotate_half)",
            Kind::RopeThd => "rope_thd (bthd, rotate_half)",
        }
    }
}

/// candle-transformers' tables for positions `0..t`.
fn tables(t: usize, dt: DType) -> (Tensor, Tensor) {
    let dev = Device::Cpu;
    let inv: Vec<f32> = (0..DIM)
        .step_by(2)
        .map(|i| 1f32 / BASE.powf(i as f32 / DIM as f32))
        .collect();
    let inv = Tensor::from_vec(inv, (1, DIM / 2), &dev).unwrap();
    let p = Tensor::arange(0u32, t as u32, &dev)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .reshape((t, 1))
        .unwrap();
    let f = p.matmul(&inv).unwrap();
    (
        f.cos().unwrap().to_dtype(dt).unwrap(),
        f.sin().unwrap().to_dtype(dt).unwrap(),
    )
}

/// Per-call seconds of each implementation: warm-up, a sample size of ≥ 1 ms, then ROUNDS
/// rounds of one sample of each in turn. Returns `samples[impl][round]`.
fn bench(fs: &mut [&mut dyn FnMut()]) -> Vec<Vec<f64>> {
    let mut iters = Vec::new();
    for f in fs.iter_mut() {
        let t0 = Instant::now();
        let mut n = 0u32;
        while n < 2 || t0.elapsed() < Duration::from_millis(20) {
            f();
            n += 1;
        }
        let per = t0.elapsed().as_secs_f64() / n as f64;
        iters.push(((1e-3 / per).ceil() as usize).max(1));
    }
    let mut samples = vec![Vec::new(); fs.len()];
    for _ in 0..ROUNDS {
        for (i, f) in fs.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..iters[i] {
                f();
            }
            samples[i].push(t.elapsed().as_secs_f64() / iters[i] as f64);
        }
    }
    samples
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s[s.len() / 2]
}

fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
    (a.to_dtype(DType::F32).unwrap() - b.to_dtype(DType::F32).unwrap())
        .unwrap()
        .abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

fn tokens() -> Vec<usize> {
    match std::env::var("PEERS_TOKENS") {
        Ok(v) => v
            .split(',')
            .map(|t| t.trim().parse().expect("PEERS_TOKENS: numbers"))
            .collect(),
        Err(_) => TOKENS.to_vec(),
    }
}

fn main() {
    let pools: Vec<rayon::ThreadPool> = [1, 2]
        .iter()
        .map(|&n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
        })
        .collect();
    println!("posenc backend: {:?}", posenc::Backend::active());
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("/proc/loadavg at start: {}", load().trim());
    println!();
    println!(
        "| case | dtype | t | threads | candle_nn | posenc-candle | ×candle median (range) | RotaryEmbedding in place | max |Δ| |"
    );
    println!("|---|---|---:|---:|---:|---:|---|---:|---:|");
    for kind in [Kind::RopeI, Kind::Rope, Kind::RopeThd] {
        let layout = if kind == Kind::RopeI {
            Layout::Interleaved
        } else {
            Layout::RotateHalf
        };
        let rot = RotaryEmbedding::new(Rope::new(&RopeConfig::new(DIM, BASE, layout)).unwrap());
        for dt in [DType::F32, DType::F16, DType::BF16] {
            for t in tokens() {
                let shape = if kind == Kind::RopeThd {
                    (1, t, HEADS, DIM)
                } else {
                    (1, HEADS, t, DIM)
                };
                let x = Tensor::randn(0f32, 1.0, shape, &Device::Cpu)
                    .unwrap()
                    .to_dtype(dt)
                    .unwrap();
                let (cos, sin) = tables(t, dt);
                let theirs = |x: &Tensor| match kind {
                    Kind::RopeI => candle_nn::rotary_emb::rope_i(x, &cos, &sin).unwrap(),
                    Kind::Rope => candle_nn::rotary_emb::rope(x, &cos, &sin).unwrap(),
                    Kind::RopeThd => candle_nn::rotary_emb::rope_thd(x, &cos, &sin).unwrap(),
                };
                let ours = |x: &Tensor| match kind {
                    Kind::RopeI => posenc_candle::rope_i(x, &cos, &sin).unwrap(),
                    Kind::Rope => posenc_candle::rope(x, &cos, &sin).unwrap(),
                    Kind::RopeThd => posenc_candle::rope_thd(x, &cos, &sin).unwrap(),
                };
                let diff = max_diff(&theirs(&x), &ours(&x));
                let positions: Vec<i32> = (0..t as i32).collect();
                for (threads, pool) in [1, 2].into_iter().zip(&pools) {
                    let s = pool.install(|| {
                        let xi = x.copy().unwrap();
                        let mut a = || drop(black_box(theirs(black_box(&x))));
                        let mut b = || drop(black_box(ours(black_box(&x))));
                        let mut c = || {
                            if kind == Kind::RopeThd {
                                rot.apply_thd_inplace(black_box(&xi), &positions).unwrap()
                            } else {
                                rot.apply_inplace(black_box(&xi), &positions).unwrap()
                            }
                        };
                        bench(&mut [&mut a, &mut b, &mut c])
                    });
                    let per = |v: &[f64]| median(v) * 1e9 / (t * HEADS) as f64;
                    let ratios: Vec<f64> = s[0].iter().zip(&s[1]).map(|(a, b)| a / b).collect();
                    let (lo, hi) = range(&ratios);
                    println!(
                        "| {} | {dt:?} | {t} | {threads} | {:.2} | {:.2} | {:.1}× ({lo:.1}–{hi:.1}) | {:.2} | {diff:.1e} |",
                        kind.name(),
                        per(&s[0]),
                        per(&s[1]),
                        median(&ratios),
                        per(&s[2]),
                    );
                }
            }
        }
    }
    println!();
    println!("/proc/loadavg at end: {}", load().trim());
}
