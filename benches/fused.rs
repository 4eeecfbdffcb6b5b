//! The fused runtime ops against their unfused sequences, side by side: the contenders of
//! each comparison are timed alternately (31 rounds, each long enough to measure), so both
//! see the same machine state; medians, the min–max range of the per-round ratio, one thread,
//! the active backend (`POSENC_BENCH_BACKEND=avx2` times that tier instead). `cargo bench
//! --bench fused` (pin it: `taskset -c 1 cargo bench --bench fused`). Shapes: Llama-3-8B (32 Q
//! heads, 8 KV heads, head_dim 128), 64 / 512 / 4096 tokens.
//!
//! * rotate-into: K (f32) into a bf16 / f16 cache slot, against a plain convert-and-copy of
//!   the same bytes (`half`'s slice conversion) and against `apply` then that conversion;
//! * QK-norm + RoPE (Qwen3 per-head norm, f32 and bf16 in place; OLMo 2's row norm, f32),
//!   against a norm pass then a
//!   RoPE pass: the norm pass is posenc's own fused kernel run from a table of position 0
//!   (cos 1, sin 0: the norm and a pass over memory, SIMD), the RoPE pass `apply_qk`; each
//!   pass is also timed alone, which bounds the speed-up: the fused call does all the norm
//!   pass does, so it is at most (norm pass + RoPE pass) ÷ norm pass;
//! * backward against forward (`apply_backward` vs `apply`, Q and K, f32 and bf16);
//! * Q and K in one call (`apply_qk`, the decoder layer's call) against two `apply` calls,
//!   one per buffer, from positions and from a `Table`, both layouts, f32 and bf16.
//!
//! Rotate-into and apply-then-copy run both from positions and from a `Table` computed once
//! (the angles-once path a runtime takes per forward). Arguments name the sections to run:
//! `cargo bench --bench fused -- into qknorm backward qk`.

mod common;

use half::slice::HalfFloatSliceExt;
use posenc::{Element, Layout, RmsNorm, Rope, RopeConfig, View, bf16, f16};
use std::hint::black_box;
use std::time::Instant;

const ROUNDS: usize = 31;
const HD: usize = 128;
const NQ: usize = 32;
const NKV: usize = 8;

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

/// Times `fs` alternately; returns each one's median seconds and the (min, max) of the
/// per-round ratio of each to the first.
fn race(fs: &mut [&mut dyn FnMut()], reps: usize) -> (Vec<f64>, Vec<(f64, f64)>) {
    let mut t = vec![vec![]; fs.len()];
    for _ in 0..ROUNDS {
        for (i, f) in fs.iter_mut().enumerate() {
            let mut g = || f();
            t[i].push(time(&mut g, reps));
        }
    }
    let ranges = (0..fs.len())
        .map(|i| {
            let r: Vec<f64> = t[i].iter().zip(&t[0]).map(|(a, b)| a / b).collect();
            (
                r.iter().cloned().fold(f64::INFINITY, f64::min),
                r.iter().cloned().fold(0.0, f64::max),
            )
        })
        .collect();
    (t.into_iter().map(median).collect(), ranges)
}

fn reps(tokens: usize) -> usize {
    (16384 / tokens).max(4)
}

/// Convert f32 → `O` with `half`'s slice conversion.
trait Convert: Element {
    fn convert(dst: &mut [Self], src: &[f32]);
}
impl Convert for bf16 {
    fn convert(dst: &mut [Self], src: &[f32]) {
        dst.convert_from_f32_slice(src)
    }
}
impl Convert for f16 {
    fn convert(dst: &mut [Self], src: &[f32]) {
        dst.convert_from_f32_slice(src)
    }
}

fn into<O: Convert>(tokens: usize, name: &str) {
    let rope = Rope::new(&RopeConfig::new(HD, 5e5, Layout::RotateHalf))
        .and_then(|r| r.with_backend(common::chosen_backend()))
        .unwrap();
    let mut k: Vec<f32> = (0..tokens * NKV * HD)
        .map(|i| 1.0 + (i % 17) as f32 / 17.0)
        .collect();
    let mut cache = vec![O::from_f32(0.0); tokens * NKV * HD];
    let pos: Vec<i32> = (0..tokens as i32).map(|p| p + 1000).collect();
    let view = View::token_major(NKV, HD);
    let src = k.clone();
    let mut convert = || O::convert(black_box(&mut cache[..]), black_box(&src[..]));
    let mut cache2 = vec![O::from_f32(0.0); tokens * NKV * HD];
    let mut apply_copy = || {
        rope.apply(black_box(&mut k[..]), NKV, &pos[..]).unwrap();
        O::convert(&mut cache2[..], &k[..]);
    };
    let mut cache3 = vec![O::from_f32(0.0); tokens * NKV * HD];
    let mut fused = || {
        rope.apply_into(black_box(&src[..]), NKV, &mut cache3[..], view, &pos[..])
            .unwrap()
    };
    // The same two from angles computed once (a `Table`), as a runtime does per forward.
    let mut buf = vec![0f32; rope.table_len(tokens)];
    let table = rope.table(&pos[..], &mut buf).unwrap();
    let mut cache4 = vec![O::from_f32(0.0); tokens * NKV * HD];
    let mut k2 = src.clone();
    let mut apply_copy_t = || {
        rope.apply(black_box(&mut k2[..]), NKV, table).unwrap();
        O::convert(&mut cache4[..], &k2[..]);
    };
    let mut cache5 = vec![O::from_f32(0.0); tokens * NKV * HD];
    let mut fused_t = || {
        rope.apply_into(black_box(&src[..]), NKV, &mut cache5[..], view, table)
            .unwrap()
    };
    // One race per comparison, two contenders each, so that each runs right after the other
    // and both inherit the same state from their predecessor. (In one five-way race, convert
    // ran after the table contender, which had just read the same source: past the caches
    // that left part of it in L3 for convert alone.)
    let reps = reps(tokens);
    let row = |label: &str,
               convert: &mut dyn FnMut(),
               apply_copy: &mut dyn FnMut(),
               into: &mut dyn FnMut()| {
        let (mc, rc) = race(&mut [&mut *convert, &mut *into], reps);
        let (ma, _) = race(&mut [&mut *apply_copy, &mut *into], reps);
        println!(
            "| into f32→{name}{label} | {tokens} | convert {:.1} µs | apply+copy {:.1} µs | into {:.1} µs | into/convert {:.2} ({:.2}–{:.2}) | apply+copy/into {:.2} |",
            mc[0] * 1e6,
            ma[0] * 1e6,
            mc[1] * 1e6,
            mc[1] / mc[0],
            rc[1].0,
            rc[1].1,
            ma[0] / ma[1],
        )
    };
    row("", &mut convert, &mut apply_copy, &mut fused);
    row(", table", &mut convert, &mut apply_copy_t, &mut fused_t);
}

fn qknorm<T: Element>(tokens: usize, name: &str, row: bool) {
    let rope = Rope::new(&RopeConfig::new(HD, 1e6, Layout::RotateHalf))
        .and_then(|r| r.with_backend(common::chosen_backend()))
        .unwrap();
    let mut q: Vec<T> = (0..tokens * NQ * HD)
        .map(|i| T::from_f32(1.0 + (i % 17) as f32 / 17.0))
        .collect();
    let mut k: Vec<T> = (0..tokens * NKV * HD)
        .map(|i| T::from_f32(1.0 + (i % 13) as f32 / 13.0))
        .collect();
    // A head's norm (Qwen3), or with `row` a row's (OLMo 2: weights for every head).
    let (qw, kw) = (vec![1.0f32; HD * NQ], vec![0.75f32; HD * NKV]);
    let (qn, kn) = if row {
        (RmsNorm::per_row(&qw, 1e-6), RmsNorm::per_row(&kw, 1e-6))
    } else {
        (
            RmsNorm::per_head(&qw[..HD], 1e-6),
            RmsNorm::per_head(&kw[..HD], 1e-6),
        )
    };
    let pos: Vec<i32> = (0..tokens as i32).map(|p| p + 1000).collect();
    let zeros = vec![0i32; tokens];
    let mut buf0 = vec![0f32; rope.table_len(tokens)];
    let t0 = rope.table(&zeros, &mut buf0).unwrap();
    let (mut q2, mut k2) = (q.clone(), k.clone());
    let (mut q3, mut k3, mut q4, mut k4) = (q.clone(), k.clone(), q.clone(), k.clone());
    let mut unfused = || {
        rope.apply_qk_normed(black_box(&mut q2[..]), NQ, &qn, &mut k2[..], NKV, &kn, t0)
            .unwrap();
        rope.apply_qk(&mut q2[..], NQ, &mut k2[..], NKV, &pos[..])
            .unwrap();
    };
    let mut fused = || {
        rope.apply_qk_normed(
            black_box(&mut q[..]),
            NQ,
            &qn,
            &mut k[..],
            NKV,
            &kn,
            &pos[..],
        )
        .unwrap()
    };
    // Each pass alone, on buffers of its own: the fused call does all of the norm pass's work
    // (it is the same kernel, with angles instead of a table), so its speed-up over the two
    // passes is at most (norm + rope) ÷ norm, printed as the bound.
    let mut norm_only = || {
        rope.apply_qk_normed(black_box(&mut q3[..]), NQ, &qn, &mut k3[..], NKV, &kn, t0)
            .unwrap()
    };
    let mut rope_only = || {
        rope.apply_qk(black_box(&mut q4[..]), NQ, &mut k4[..], NKV, &pos[..])
            .unwrap()
    };
    let (m, r) = race(
        &mut [&mut unfused, &mut fused, &mut norm_only, &mut rope_only],
        reps(tokens),
    );
    println!(
        "| qk-norm+rope {name} | {tokens} | norm pass + rope pass {:.1} µs | fused {:.1} µs | speed-up {:.2} (per-round {:.2}–{:.2}) | norm pass {:.1} µs, rope pass {:.1} µs: bound {:.2} |",
        m[0] * 1e6,
        m[1] * 1e6,
        m[0] / m[1],
        1.0 / r[1].1,
        1.0 / r[1].0,
        m[2] * 1e6,
        m[3] * 1e6,
        (m[2] + m[3]) / m[2],
    );
}

fn backward<T: Element>(tokens: usize, name: &str) {
    let rope = Rope::new(&RopeConfig::new(HD, 5e5, Layout::RotateHalf))
        .and_then(|r| r.with_backend(common::chosen_backend()))
        .unwrap();
    let mut q: Vec<T> = (0..tokens * NQ * HD)
        .map(|i| T::from_f32(1.0 + (i % 17) as f32 / 17.0))
        .collect();
    let mut k: Vec<T> = (0..tokens * NKV * HD)
        .map(|i| T::from_f32(1.0 + (i % 13) as f32 / 13.0))
        .collect();
    let pos: Vec<i32> = (0..tokens as i32).map(|p| p + 1000).collect();
    let (mut gq, mut gk) = (q.clone(), k.clone());
    let mut fwd = || {
        rope.apply_qk(black_box(&mut q[..]), NQ, &mut k[..], NKV, &pos[..])
            .unwrap()
    };
    let mut bwd = || {
        rope.apply_qk_backward(black_box(&mut gq[..]), NQ, &mut gk[..], NKV, &pos[..])
            .unwrap()
    };
    let (m, r) = race(&mut [&mut fwd, &mut bwd], reps(tokens));
    println!(
        "| backward {name} | {tokens} | forward {:.1} µs | backward {:.1} µs | backward/forward {:.3} ({:.2}–{:.2}) |",
        m[0] * 1e6,
        m[1] * 1e6,
        m[1] / m[0],
        r[1].0,
        r[1].1,
    );
}

/// One `apply_qk` call against `apply` on Q then on K (each call computes the angles again
/// from positions; from a table both read the same one).
fn qk<T: Element>(tokens: usize, layout: Layout, name: &str) {
    let rope = Rope::new(&RopeConfig::new(HD, 5e5, layout))
        .and_then(|r| r.with_backend(common::chosen_backend()))
        .unwrap();
    let q: Vec<T> = (0..tokens * NQ * HD)
        .map(|i| T::from_f32(1.0 + (i % 17) as f32 / 17.0))
        .collect();
    let k: Vec<T> = (0..tokens * NKV * HD)
        .map(|i| T::from_f32(1.0 + (i % 13) as f32 / 13.0))
        .collect();
    let pos: Vec<i32> = (0..tokens as i32).map(|p| p + 1000).collect();
    let mut buf = vec![0f32; rope.table_len(tokens)];
    let table = rope.table(&pos[..], &mut buf).unwrap();
    let mut bufs: Vec<(Vec<T>, Vec<T>)> = (0..4).map(|_| (q.clone(), k.clone())).collect();
    let [a, b, c, d] = &mut bufs[..] else {
        unreachable!()
    };
    let mut two = || {
        rope.apply(black_box(&mut a.0[..]), NQ, &pos[..]).unwrap();
        rope.apply(black_box(&mut a.1[..]), NKV, &pos[..]).unwrap();
    };
    let mut one = || {
        rope.apply_qk(black_box(&mut b.0[..]), NQ, &mut b.1[..], NKV, &pos[..])
            .unwrap()
    };
    let mut two_t = || {
        rope.apply(black_box(&mut c.0[..]), NQ, table).unwrap();
        rope.apply(black_box(&mut c.1[..]), NKV, table).unwrap();
    };
    let mut one_t = || {
        rope.apply_qk(black_box(&mut d.0[..]), NQ, &mut d.1[..], NKV, table)
            .unwrap()
    };
    let (m, r) = race(
        &mut [&mut two, &mut one, &mut two_t, &mut one_t],
        reps(tokens),
    );
    let r1 = r[1];
    println!(
        "| qk {name} | {tokens} | two calls {:.2} µs | apply_qk {:.2} µs | two/one {:.2} ({:.2}–{:.2}) | table: two calls {:.2} µs | apply_qk {:.2} µs | two/one {:.2} |",
        m[0] * 1e6,
        m[1] * 1e6,
        m[0] / m[1],
        1.0 / r1.1,
        1.0 / r1.0,
        m[2] * 1e6,
        m[3] * 1e6,
        m[2] / m[3],
    );
}

fn main() {
    println!(
        "backend {}; medians of {ROUNDS} alternating rounds; (min–max of the per-round ratio)",
        common::chosen_backend().name()
    );
    // An argument (`cargo bench --bench fused -- into`) runs only the sections it names.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let on = |s: &str| only.is_empty() || only.iter().any(|o| o == s);
    for tokens in [64, 512, 4096] {
        if on("into") {
            into::<bf16>(tokens, "bf16");
            into::<f16>(tokens, "f16");
        }
    }
    for tokens in [64, 512, 4096] {
        if on("qknorm") {
            qknorm::<f32>(tokens, "f32", false);
            qknorm::<bf16>(tokens, "bf16", false);
            qknorm::<f32>(tokens, "f32 row norm", true);
        }
    }
    for tokens in [1, 64, 512, 4096] {
        if on("qk") {
            qk::<f32>(tokens, Layout::RotateHalf, "f32 rotate_half");
            qk::<f32>(tokens, Layout::Interleaved, "f32 interleaved");
            qk::<bf16>(tokens, Layout::RotateHalf, "bf16 rotate_half");
        }
    }
    for tokens in [64, 512, 4096] {
        if on("backward") {
            backward::<f32>(tokens, "f32");
            backward::<bf16>(tokens, "bf16");
        }
    }
}
