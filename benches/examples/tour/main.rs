//! The posenc tour — start here: `cargo run --release -p posenc-benches --example tour`.
//!
//! On the attention shapes of Llama-3.1-8B (32 query heads, 8 KV heads, head_dim 128,
//! rope_theta 500000, llama3 frequency scaling, rotate_half) in f32 and bf16, it
//!
//! 1. shows which backend runs and what the CPU offers,
//! 2. applies RoPE to q and k for a 512-token prefill and one decode step far out,
//! 3. checks the contract numerically (relative position, norm, inverse, layouts, partial
//!    rotary, backends against the scalar reference) and exits non-zero if any check fails,
//! 4. measures cos/sin accuracy against f64 out to a 1M-token context, for posenc and for the
//!    `f32(p) · inv_freq` product other implementations use, and the same for a sinusoidal
//!    table,
//! 5. times `apply` on the active backend against the scalar reference and the memory
//!    ceiling (an in-place `x = x·a + b` over the same bytes),
//! 6. draws pictures into `target/posenc-tour/` (plots.rs): the sinusoidal table, RoPE's
//!    long-distance decay for Llama/Qwen frequency sets, and the cos/sin error of section 4
//!    at every scale out to 2^24 positions.
//!
//! It runs in a few seconds in release mode. The numbers are from this run, on this machine.

use posenc::{
    Backend, Dtype, Element, Layout, Rope, RopeConfig, Sinusoidal, SinusoidalLayout, bf16,
};
use std::hint::black_box;
use std::time::{Duration, Instant};

mod plots;

const Q_HEADS: usize = 32;
const KV_HEADS: usize = 8;
const HEAD_DIM: usize = 128;
const THETA: f32 = 500_000.0;
const PREFILL: usize = 512;
const DECODE_POS: i32 = 70_000;
/// Contexts of the accuracy tables: 4K .. 1M tokens.
const CONTEXTS: [i32; 5] = [4_096, 32_768, 131_072, 524_288, 1_048_576];
/// Timed runs per measurement; the median is reported.
const RUNS: usize = 30;

fn main() {
    let start = Instant::now();
    let mut checks = Checks::default();
    // Llama 3.1 8B as published: rope_theta 500000 with llama3 scaling (8, 1, 4, 8192).
    let rope = posenc::presets::LLAMA_3_1_8B.rope().unwrap();

    println!("posenc tour — Llama-3.1-8B attention: {Q_HEADS} query heads, {KV_HEADS} KV heads,");
    println!("head_dim {HEAD_DIM}, rope_theta {THETA}, llama3 scaling (factor 8, low 1, high 4,");
    println!("original context 8192), rotate_half; f32 and bf16 storage.");

    section("1. What runs here");
    let available: Vec<&str> = backends().map(|b| b.name()).collect();
    row("active backend", Backend::active().name());
    row("available backends", &available.join(", "));
    row("CPU features", &cpu_features());

    section("2. Apply RoPE to q and k");
    // The whole API of a decode loop: one Rope per model, then `apply` on q and k per step.
    //     let rope = Rope::new(&RopeConfig::new(128, 500_000.0, Layout::RotateHalf))?;
    //     rope.apply(&mut q, 32, &positions)?;   // q: tokens × 32 × 128, token-major
    //     rope.apply(&mut k, 8, &positions)?;    // k: tokens × 8 × 128
    let prefill_pos: Vec<i32> = (0..PREFILL as i32).collect();
    let mut rng = Rng(0x5EED);
    let f32_data = Qk::<f32>::run(&rope, &prefill_pos, &mut rng);
    let bf16_data = Qk::<bf16>::run(&rope, &prefill_pos, &mut rng);
    println!(
        "   prefill: q {PREFILL}×{Q_HEADS}×{HEAD_DIM}, k {PREFILL}×{KV_HEADS}×{HEAD_DIM} at \
         positions 0..{PREFILL}; decode: 1 token at position {DECODE_POS}"
    );
    println!(
        "   rotated: f32 q+k {}, bf16 q+k {} (section 5 times apply; this one is not timed)",
        mib(f32_data.bytes()),
        mib(bf16_data.bytes()),
    );
    // A one-hot head shows what a rotation is: pair 0 (dims 0 and 64) has ω = 1 rad/token.
    let mut e = vec![0.0f32; HEAD_DIM];
    e[0] = 1.0;
    rope.apply(&mut e, 1, &[1]).unwrap();
    println!(
        "   e.g. dims (0, 64) of a head at position 1: (1, 0) → ({:.6}, {:.6}) = (cos 1, sin 1)",
        e[0], e[64]
    );

    section("3. Checks (each: the measured worst case, the bound it must meet, the verdict)");
    println!(
        "   u = unit roundoff of the storage type (f32 2^-24, bf16 2^-8); 8e-7 covers the f32\n   \
         cos/sin error (≤ 2.4e-7 each) and the f32 rotation rounding."
    );
    check_relative_position::<f32>(&rope, &mut rng, &mut checks);
    check_relative_position::<bf16>(&rope, &mut rng, &mut checks);
    check_norm(&f32_data, &mut checks);
    check_norm(&bf16_data, &mut checks);
    check_inverse(&rope, &f32_data, &mut checks);
    check_inverse(&rope, &bf16_data, &mut checks);
    check_layouts::<f32>(&mut rng, &mut checks);
    check_layouts::<bf16>(&mut rng, &mut checks);
    check_partial::<f32>(&mut rng, &mut checks);
    check_partial::<bf16>(&mut rng, &mut checks);
    check_backends::<f32>(&rope, &f32_data, &mut checks);
    check_backends::<bf16>(&rope, &bf16_data, &mut checks);
    check_mrope(&mut rng, &mut checks);
    check_decoder_layer(&mut rng, &mut checks);

    section("4. Accuracy of cos/sin against f64, last 64 positions of each context");
    rope_accuracy(&rope);
    sinusoidal_accuracy();

    section("5. Speed of apply (median of 30 timed runs; a run = enough back-to-back calls");
    println!("   to last ≥ 0.3 ms, timed with std::time::Instant and divided by the call count)");
    speed::<f32>(&rope);
    speed::<bf16>(&rope);

    section("6. Pictures");
    pictures(&rope);

    println!();
    let total = start.elapsed();
    if checks.failed.is_empty() {
        println!(
            "All {} checks passed in {:.1} s.",
            checks.passed,
            total.as_secs_f64()
        );
    } else {
        println!(
            "{} of {} checks FAILED: {}",
            checks.failed.len(),
            checks.passed + checks.failed.len(),
            checks.failed.join("; ")
        );
        std::process::exit(1);
    }
}

// ----------------------------------------------------------------------------------------
// Section 2: the q/k buffers every later section reuses.

/// Original and rotated q/k of one dtype: a prefill and a decode step.
struct Qk<T> {
    q: Vec<T>,
    k: Vec<T>,
    q_rot: Vec<T>,
    k_rot: Vec<T>,
    dq: Vec<T>,
    dq_rot: Vec<T>,
    positions: Vec<i32>,
}

impl<T: Element> Qk<T> {
    fn run(rope: &Rope, positions: &[i32], rng: &mut Rng) -> Qk<T> {
        let q: Vec<T> = rng.vec(positions.len() * Q_HEADS * HEAD_DIM);
        let k: Vec<T> = rng.vec(positions.len() * KV_HEADS * HEAD_DIM);
        let dq: Vec<T> = rng.vec(Q_HEADS * HEAD_DIM);
        let (mut q_rot, mut k_rot, mut dq_rot) = (q.clone(), k.clone(), dq.clone());
        rope.apply(&mut q_rot, Q_HEADS, positions).unwrap();
        rope.apply(&mut k_rot, KV_HEADS, positions).unwrap();
        rope.apply(&mut dq_rot, Q_HEADS, &[DECODE_POS]).unwrap();
        Qk {
            q,
            k,
            q_rot,
            k_rot,
            dq,
            dq_rot,
            positions: positions.to_vec(),
        }
    }

    fn bytes(&self) -> usize {
        (self.q.len() + self.k.len()) * T::DTYPE.size_bytes()
    }

    /// The prefill q, prefill k and decode q.
    fn sets(&self) -> [Set<'_, T>; 3] {
        [
            (&self.q, &self.q_rot, Q_HEADS, self.positions.clone()),
            (&self.k, &self.k_rot, KV_HEADS, self.positions.clone()),
            (&self.dq, &self.dq_rot, Q_HEADS, vec![DECODE_POS]),
        ]
    }
}

/// (original, rotated, heads, positions).
type Set<'a, T> = (&'a [T], &'a [T], usize, Vec<i32>);

// ----------------------------------------------------------------------------------------
// Section 3: checks.

#[derive(Default)]
struct Checks {
    passed: usize,
    failed: Vec<String>,
}

impl Checks {
    /// Prints one result line: `what` (one line of meaning), the value, its bound, verdict.
    fn bound<T: Element>(&mut self, what: &str, value: f64, bound: f64) {
        self.bound_note::<T>(what, value, bound, "");
    }

    /// [`Checks::bound`] with a note after the verdict.
    fn bound_note<T: Element>(&mut self, what: &str, value: f64, bound: f64, note: &str) {
        let ok = value <= bound;
        println!(
            "      {:<5} {what:<44} {value:>9.3e}  ≤ {bound:>8.1e}  {}{note}",
            T::DTYPE.name(),
            if ok { "ok" } else { "FAIL" }
        );
        self.record(ok, what);
    }

    /// Prints one bitwise result line.
    fn bitwise<T: Element>(&mut self, what: &str, differing: usize, total: usize, label: &str) {
        let ok = differing == 0;
        let verdict = if ok {
            label.to_string()
        } else {
            format!("FAIL: {differing} of {total} values differ")
        };
        println!("      {:<5} {what:<44} {verdict}", T::DTYPE.name());
        self.record(ok, what);
    }

    fn record(&mut self, ok: bool, what: &str) {
        if ok {
            self.passed += 1;
        } else {
            self.failed.push(what.to_string());
        }
    }
}

/// (7) Qwen2-VL M-RoPE: a prompt of text tokens, then a 4×6 image patch grid at one temporal
/// position, then text again; text tokens must equal plain RoPE bitwise, and scores must
/// depend on the position difference per axis only.
fn check_mrope(rng: &mut Rng, checks: &mut Checks) {
    println!("   (7) Qwen2-VL M-RoPE (sections [16, 24, 24] of 64 pairs, θ 1e6): 5 text tokens,");
    println!("       a 4×6 image grid at t = 5, 5 more text tokens; 28 query heads");
    let preset = posenc::presets::QWEN2_VL_7B;
    let rope = preset.rope().unwrap();
    let heads = preset.n_heads;
    let mut pos: Vec<[i32; 3]> = (0..5).map(|p| [p, p, p]).collect();
    for h in 0..4 {
        for w in 0..6 {
            pos.push([5, 5 + h, 5 + w]);
        }
    }
    for p in 11..16 {
        pos.push([p, p, p]); // text resumes after the image's largest position
    }
    let q: Vec<f32> = rng.vec(pos.len() * heads * HEAD_DIM);
    let mut mq = q.clone();
    rope.apply_axes(&mut mq, heads, &pos).unwrap();
    // Text tokens: bitwise the plain rotation at their one position.
    let text: Vec<usize> = (0..pos.len())
        .filter(|&t| pos[t][0] == pos[t][1] && pos[t][1] == pos[t][2])
        .collect();
    let row = heads * HEAD_DIM;
    let mut diff = 0;
    for &t in &text {
        let mut plain = q[t * row..(t + 1) * row].to_vec();
        rope.apply(&mut plain, heads, &[pos[t][0]]).unwrap();
        diff += differing(&plain, &mq[t * row..(t + 1) * row]);
    }
    checks.bitwise::<f32>(
        "text tokens ≡ plain RoPE at p",
        diff,
        text.len() * row,
        "bitwise equal",
    );
    // Relative positions per axis: <R(P)q, R(P')k> = <q, R(P' − P)k>, image token pairs.
    let k: Vec<f32> = rng.vec(pos.len() * HEAD_DIM);
    let mut worst = 0.0f64;
    for a in 5..29 {
        for b in 5..29 {
            let (mut rq, mut rk) = (
                q[a * row..a * row + HEAD_DIM].to_vec(),
                k[b * HEAD_DIM..(b + 1) * HEAD_DIM].to_vec(),
            );
            let mut dk = rk.clone();
            rope.apply_axes(&mut rq, 1, &[pos[a]]).unwrap();
            rope.apply_axes(&mut rk, 1, &[pos[b]]).unwrap();
            let d = [
                pos[b][0] - pos[a][0],
                pos[b][1] - pos[a][1],
                pos[b][2] - pos[a][2],
            ];
            rope.apply_axes(&mut dk, 1, &[d]).unwrap();
            let lhs = dot(&rq, &rk);
            let rhs = dot(&q[a * row..a * row + HEAD_DIM], &dk);
            let scale =
                norm(&q[a * row..a * row + HEAD_DIM]) * norm(&k[b * HEAD_DIM..(b + 1) * HEAD_DIM]);
            worst = worst.max((lhs - rhs).abs() / scale);
        }
    }
    checks.bound::<f32>(
        "image: per-axis relative position, max |Δ|/‖q‖‖k‖",
        worst,
        3.0 * rot_err::<f32>(),
    );
}

/// (8) One decoder layer's positional work as a runtime does it (Qwen3-style: QK-norm, head_dim
/// 128, θ 1e6, 16 q / 8 kv heads): angles once per forward (`rope.table`), then per layer
/// QK-norm + RoPE with q in place and k straight into a head-major bf16 KV cache
/// (`apply_qk_normed_into`), then a context shift of the cache (`shift` by −drop). Checked
/// against the unfused sequence: the norm written out in f32, `apply`, then one rounding to
/// bf16; the shifted keys against keys written directly at their new positions.
fn check_decoder_layer(rng: &mut Rng, checks: &mut Checks) {
    use posenc::{RmsNorm, View};
    println!("   (8) a decoder layer's positional work: angles once, QK-norm + RoPE into a bf16");
    println!("       KV cache (16 q / 8 kv heads, Qwen3-style), then a context shift by −96");
    let (nq, nkv, hd, tokens, ctx, start) = (16, 8, HEAD_DIM, 64, 256, 160);
    let rope = Rope::new(&RopeConfig::new(hd, 1e6, Layout::RotateHalf)).unwrap();
    let pos: Vec<usize> = (start..start + tokens).collect();
    let mut buf = vec![0f32; rope.table_len(tokens)];
    let angles = rope.table(&pos, &mut buf).unwrap(); // once per forward, every layer reuses it
    let (qw, kw): (Vec<f32>, Vec<f32>) = (
        (0..hd).map(|i| 0.5 + (i % 9) as f32 / 8.0).collect(),
        (0..hd).map(|i| 0.75 + (i % 5) as f32 / 8.0).collect(),
    );
    let (qn, kn) = (RmsNorm::per_head(&qw, 1e-6), RmsNorm::per_head(&kw, 1e-6));
    let q0: Vec<f32> = rng.vec(tokens * nq * hd);
    let k: Vec<f32> = rng.vec(tokens * nkv * hd);
    // The cache: [kv_head][pos][dim], bf16; this step writes positions start .. start + tokens.
    let mut cache = vec![bf16::ZERO; nkv * ctx * hd];
    let slot = View {
        offset: start * hd,
        ..View::head_major(nkv, ctx, hd)
    };
    let mut q = q0.clone();
    rope.apply_qk_normed_into(&mut q, nq, &qn, &k, nkv, &kn, &mut cache, slot, angles)
        .unwrap();
    // Unfused: norm (f32, written out), rotate, round once into the cache layout.
    let norm = |x: &[f32], w: &[f32]| -> Vec<f32> {
        x.chunks(hd)
            .flat_map(|h| {
                let sum: f64 = h.iter().map(|&v| v as f64 * v as f64).sum();
                let r = 1.0 / ((sum / hd as f64) as f32 + 1e-6).sqrt();
                h.iter()
                    .zip(w)
                    .map(move |(&v, &w)| v * r * w)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let mut uq = norm(&q0, &qw);
    let mut uk = norm(&k, &kw);
    rope.apply(&mut uq, nq, &pos).unwrap();
    rope.apply(&mut uk, nkv, &pos).unwrap();
    let mut diff = differing(&q, &uq);
    for t in 0..tokens {
        for h in 0..nkv {
            let c = &cache[h * ctx * hd + (start + t) * hd..][..hd];
            let u: Vec<bf16> = uk[(t * nkv + h) * hd..][..hd]
                .iter()
                .map(|&v| bf16::from_f32(v))
                .collect();
            diff += differing(c, &u);
        }
    }
    checks.bitwise::<bf16>(
        "QK-norm+RoPE into cache ≡ norm, rope, round",
        diff,
        tokens * (nq + nkv) * hd,
        "bitwise equal",
    );
    // Context shift: drop 96 positions; the keys move to p − 96 in place in the cache.
    let drop = 96usize;
    let deltas = vec![-(drop as i32); tokens];
    let mut worst = 0.0f64;
    for h in 0..nkv {
        let keys = &mut cache[h * ctx * hd + start * hd..][..tokens * hd];
        rope.shift(keys, 1, &deltas).unwrap();
    }
    let moved: Vec<usize> = pos.iter().map(|p| p - drop).collect();
    let mut direct = norm(&k, &kw);
    rope.apply(&mut direct, nkv, &moved).unwrap();
    for t in 0..tokens {
        for h in 0..nkv {
            for c in 0..hd {
                let got = cache[h * ctx * hd + (start + t) * hd + c].to_f32() as f64;
                let want = direct[(t * nkv + h) * hd + c] as f64;
                worst = worst.max((got - want).abs() / want.abs().max(1.0));
            }
        }
    }
    checks.bound::<bf16>(
        "context shift ≡ rotating at p − 96, max rel |Δ|",
        worst,
        4.0 * unit::<bf16>(),
    );
}

/// Unit roundoff of the storage type.
fn unit<T: Element>() -> f64 {
    if T::DTYPE == Dtype::F32 {
        2f64.powi(-24)
    } else if T::DTYPE == Dtype::Bf16 {
        2f64.powi(-8)
    } else {
        2f64.powi(-11)
    }
}

/// The per-vector relative error of one rotation stored in `T`.
fn rot_err<T: Element>() -> f64 {
    unit::<T>() + 8e-7
}

fn check_relative_position<T: Element>(rope: &Rope, rng: &mut Rng, checks: &mut Checks) {
    if T::DTYPE == Dtype::F32 {
        println!("   (1) relative position: <R(m)q, R(n)k> = <q, R(n−m)k> for 4096 (m, n) pairs,");
        println!("       m, n anywhere in 0..2^20, both in 1e5..1e6, and close pairs near 1e6");
    }
    const PAIRS: usize = 4096;
    let mut pairs: Vec<(i32, i32)> = vec![
        (0, 0),
        (0, 1_048_575),
        (1_048_575, 0),
        (100_000, 1_000_000),
        (999_999, 1_000_000),
        (524_287, 524_288),
    ];
    while pairs.len() < PAIRS {
        let (m, n) = match pairs.len() % 3 {
            0 => (rng.below(1 << 20), rng.below(1 << 20)),
            1 => (rng.range(100_000, 1_000_000), rng.range(100_000, 1_000_000)),
            _ => {
                let m = rng.range(100_000, 1_000_000);
                (m, m + rng.below(8192))
            }
        };
        pairs.push((m as i32, n as i32));
    }
    let m: Vec<i32> = pairs.iter().map(|p| p.0).collect();
    let n: Vec<i32> = pairs.iter().map(|p| p.1).collect();
    let d: Vec<i32> = pairs.iter().map(|p| p.1 - p.0).collect();
    let q: Vec<T> = rng.vec(PAIRS * HEAD_DIM);
    let k: Vec<T> = rng.vec(PAIRS * HEAD_DIM);
    let (mut rq, mut rk, mut dk) = (q.clone(), k.clone(), k.clone());
    rope.apply(&mut rq, 1, &m).unwrap();
    rope.apply(&mut rk, 1, &n).unwrap();
    rope.apply(&mut dk, 1, &d).unwrap();
    let mut worst = 0.0f64;
    for j in 0..PAIRS {
        let h = j * HEAD_DIM..(j + 1) * HEAD_DIM;
        let lhs = dot(&rq[h.clone()], &rk[h.clone()]);
        let rhs = dot(&q[h.clone()], &dk[h.clone()]);
        let scale = norm(&q[h.clone()]) * norm(&k[h]);
        worst = worst.max((lhs - rhs).abs() / scale);
    }
    // Three rotated vectors, each within rot_err of exact.
    checks.bound::<T>("max |Δ| / (‖q‖·‖k‖)", worst, 3.0 * rot_err::<T>());
}

fn check_norm<T: Element>(data: &Qk<T>, checks: &mut Checks) {
    if T::DTYPE == Dtype::F32 {
        println!("   (2) norm preservation, every head of the prefill q, k and the decode q");
    }
    let mut worst = 0.0f64;
    for (orig, rot, _, _) in data.sets() {
        for (a, b) in orig.chunks_exact(HEAD_DIM).zip(rot.chunks_exact(HEAD_DIM)) {
            worst = worst.max((norm(b) / norm(a) - 1.0).abs());
        }
    }
    checks.bound::<T>("max |‖R(p)x‖ / ‖x‖ − 1|", worst, rot_err::<T>());
}

fn check_inverse<T: Element>(rope: &Rope, data: &Qk<T>, checks: &mut Checks) {
    if T::DTYPE == Dtype::F32 {
        println!("   (3) apply_inverse ∘ apply ≈ identity, same heads");
    }
    let mut worst = 0.0f64;
    for (orig, rot, heads, positions) in data.sets() {
        let mut back = rot.to_vec();
        rope.apply_inverse(&mut back, heads, &positions).unwrap();
        for (a, b) in orig.chunks_exact(HEAD_DIM).zip(back.chunks_exact(HEAD_DIM)) {
            let diff: Vec<f64> = a
                .iter()
                .zip(b)
                .map(|(x, y)| x.to_f32() as f64 - y.to_f32() as f64)
                .collect();
            worst = worst.max(diff.iter().map(|v| v * v).sum::<f64>().sqrt() / norm(a));
        }
    }
    checks.bound::<T>("max ‖x − R(p)⁻¹R(p)x‖ / ‖x‖", worst, 2.0 * rot_err::<T>());
}

/// Interleaved pair i = (2i, 2i+1) ↔ rotate_half pair i = (i, i + 64).
fn to_rotate_half<T: Copy>(x: &[T]) -> Vec<T> {
    let half = HEAD_DIM / 2;
    let mut y = x.to_vec();
    for (src, dst) in x.chunks_exact(HEAD_DIM).zip(y.chunks_exact_mut(HEAD_DIM)) {
        for i in 0..half {
            dst[i] = src[2 * i];
            dst[half + i] = src[2 * i + 1];
        }
    }
    y
}

fn from_rotate_half<T: Copy>(y: &[T]) -> Vec<T> {
    let half = HEAD_DIM / 2;
    let mut x = y.to_vec();
    for (src, dst) in y.chunks_exact(HEAD_DIM).zip(x.chunks_exact_mut(HEAD_DIM)) {
        for i in 0..half {
            dst[2 * i] = src[i];
            dst[2 * i + 1] = src[half + i];
        }
    }
    x
}

fn differing<T: Element>(a: &[T], b: &[T]) -> usize {
    // Compare representations: to_f32 is exact, so equal f32 bits ⇔ equal T bits.
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.to_f32().to_bits() != y.to_f32().to_bits())
        .count()
}

fn check_layouts<T: Element>(rng: &mut Rng, checks: &mut Checks) {
    if T::DTYPE == Dtype::F32 {
        println!("   (4) layouts are the same math: interleaved vs permute → rotate_half →");
        println!("       unpermute, 64 tokens × 32 heads at positions up to 2^20, per backend");
    }
    let positions: Vec<i32> = (0..64).map(|_| rng.below(1 << 20) as i32).collect();
    let x: Vec<T> = rng.vec(64 * Q_HEADS * HEAD_DIM);
    for backend in backends() {
        let cfg = |l| RopeConfig::new(HEAD_DIM, THETA, l);
        let inter = Rope::new(&cfg(Layout::Interleaved)).unwrap();
        let half = Rope::new(&cfg(Layout::RotateHalf)).unwrap();
        let (inter, half) = (
            inter.with_backend(backend).unwrap(),
            half.with_backend(backend).unwrap(),
        );
        let mut a = x.clone();
        inter.apply(&mut a, Q_HEADS, &positions).unwrap();
        let mut y = to_rotate_half(&x);
        half.apply(&mut y, Q_HEADS, &positions).unwrap();
        let b = from_rotate_half(&y);
        let what = format!("{} interleaved ≡ permuted rotate_half", backend.name());
        checks.bitwise::<T>(&what, differing(&a, &b), a.len(), "bitwise equal");
    }
}

fn check_partial<T: Element>(rng: &mut Rng, checks: &mut Checks) {
    if T::DTYPE == Dtype::F32 {
        println!("   (5) partial rotary: rotary_dim 64 of head_dim 128; dims 64..128 untouched");
    }
    let cfg = RopeConfig::new(HEAD_DIM, THETA, Layout::RotateHalf).rotary_dim(64);
    let positions: Vec<i32> = (0..16).map(|i| 1 + i * 65_537).collect();
    let x: Vec<T> = rng.vec(16 * Q_HEADS * HEAD_DIM);
    for backend in backends() {
        let rope = Rope::new(&cfg).unwrap().with_backend(backend).unwrap();
        let mut y = x.clone();
        rope.apply(&mut y, Q_HEADS, &positions).unwrap();
        let tail = |v: &[T]| -> Vec<T> {
            v.chunks_exact(HEAD_DIM)
                .flat_map(|h| h[64..].to_vec())
                .collect()
        };
        let (tx, ty) = (tail(&x), tail(&y));
        let rotated = differing(&x, &y) > 0;
        let what = format!("{} tail of every head", backend.name());
        let diff = differing(&tx, &ty) + usize::from(!rotated);
        checks.bitwise::<T>(&what, diff, tx.len(), "bitwise untouched (head rotated)");
    }
}

fn check_backends<T: Element>(rope: &Rope, data: &Qk<T>, checks: &mut Checks) {
    if T::DTYPE == Dtype::F32 {
        println!("   (6) every backend vs the scalar reference, prefill q: |Δ| / bound per");
        println!("       value, bound = 4u₃₂(|a|+|b|) + 1 ulp of T: each backend is within");
        println!("       2u₃₂(|a·c|+|b·s|) of exact in f32, then rounds once to T (so a bf16");
        println!("       last-bit flip where the f32 results straddle a rounding boundary is ≈ 1)");
    }
    let half = HEAD_DIM / 2;
    let mut s = data.q.clone();
    let scalar = rope.with_backend(Backend::Scalar).unwrap();
    scalar.apply(&mut s, Q_HEADS, &data.positions).unwrap();
    for backend in backends().filter(|&b| b != Backend::Scalar) {
        let r = rope.with_backend(backend).unwrap();
        let mut y = data.q.clone();
        r.apply(&mut y, Q_HEADS, &data.positions).unwrap();
        let (mut worst, mut differ, mut ulps) = (0.0f64, 0usize, 0.0f64);
        for ((x, a), b) in data
            .q
            .chunks_exact(HEAD_DIM)
            .zip(s.chunks_exact(HEAD_DIM))
            .zip(y.chunks_exact(HEAD_DIM))
        {
            for i in 0..HEAD_DIM {
                let j = if i < half { i + half } else { i - half };
                let pair = x[i].to_f32().abs() as f64 + x[j].to_f32().abs() as f64;
                let v = a[i].to_f32() as f64;
                let bound = 4.0 * 2f64.powi(-24) * pair + ulp::<T>(v);
                let d = (v - b[i].to_f32() as f64).abs();
                if d > 0.0 {
                    worst = worst.max(d / bound);
                    differ += 1;
                    ulps = ulps.max(d / ulp::<T>(v));
                }
            }
        }
        let what = format!("{} vs scalar: max |Δ| / bound", backend.name());
        let share = 100.0 * differ as f64 / s.len() as f64;
        let note = if differ == 0 {
            "  (bitwise equal)".to_string()
        } else if T::DTYPE == Dtype::F32 {
            format!("  ({share:.1}% of values differ)")
        } else {
            // Rounded once each from f32 results that differ in the last bits: where those
            // straddle a rounding boundary of T, the stored values are one ulp apart, and
            // that ulp is (almost) all of the bound, so the ratio is ≈ 1 by construction.
            format!(
                "  ({differ} of {} values differ, by ≤ {ulps:.0} ulp)",
                s.len()
            )
        };
        checks.bound_note::<T>(&what, worst, 1.0, &note);
    }
}

/// One unit in the last place of `v` in T; 0 for f32, whose rounding the 4u₃₂ term covers.
fn ulp<T: Element>(v: f64) -> f64 {
    if T::DTYPE == Dtype::F32 {
        return 0.0;
    }
    if v == 0.0 {
        return f64::MIN_POSITIVE;
    }
    let mantissa_bits = if T::DTYPE == Dtype::Bf16 { 7 } else { 10 };
    2f64.powi(v.abs().log2().floor() as i32 - mantissa_bits)
}

// ----------------------------------------------------------------------------------------
// Section 4: accuracy.

fn rope_accuracy(rope: &Rope) {
    println!(
        "   RoPE cos/sin, 64 frequencies of Llama-3.1 (rope_theta 500000, llama3 scaling); the f64 reference is"
    );
    println!(
        "   cos/sin(p · inv_freq) with the f32 inv_freq widened (the angle the checkpoint means)."
    );
    println!(
        "   \"f32 product\" = cos/sin(f32(p) * inv_freq) in f32, as most runtimes compute them."
    );
    println!();
    println!(
        "   {:>9}  {:>17}  {:>14}  {:>18}  {:>16}",
        "context", "positions", "posenc", "f32 product", "its angle error"
    );
    let w = rope.inv_freq();
    for &ctx in &CONTEXTS {
        let positions: Vec<i32> = (ctx - 64..ctx).collect();
        let n = positions.len() * w.len();
        let (mut cos, mut sin) = (vec![0f32; n], vec![0f32; n]);
        rope.fill_cos_sin(&positions, &mut cos, &mut sin).unwrap();
        let (mut ours, mut theirs, mut angle) = (0.0f64, 0.0f64, 0.0f64);
        for (t, &p) in positions.iter().enumerate() {
            for (i, &wi) in w.iter().enumerate() {
                let exact = p as f64 * wi as f64; // exact in f64 for |p| < 2^29
                let (s64, c64) = exact.sin_cos();
                let at = t * w.len() + i;
                ours = ours
                    .max((cos[at] as f64 - c64).abs())
                    .max((sin[at] as f64 - s64).abs());
                let a32 = p as f32 * wi;
                theirs = theirs
                    .max((a32.cos() as f64 - c64).abs())
                    .max((a32.sin() as f64 - s64).abs());
                angle = angle.max((a32 as f64 - exact).abs());
            }
        }
        println!(
            "   {:>9}  {:>17}  {:>14.1e}  {:>18.1e}  {:>12.1e} rad",
            ctx,
            format!("{}..{}", ctx - 64, ctx - 1),
            ours,
            theirs,
            angle
        );
    }
    println!("   (max |error| of cos and sin over the 64 × 64 values per row)");
}

fn sinusoidal_accuracy() {
    const D: usize = 512;
    println!();
    println!("   Sinusoidal table, d_model {D}, base 10000, interleaved (sin, cos, ...); the f64");
    println!("   reference is sin/cos(p · 10000^(−2i/512)) in f64. \"f32 formula\" = the PyTorch");
    println!("   tutorial's exp(2i · −ln(10000)/d) and p · div_term and sin/cos, all in f32.");
    println!();
    println!(
        "   {:>9}  {:>17}  {:>14}  {:>18}",
        "context", "positions", "posenc", "f32 formula"
    );
    let pe = Sinusoidal::new(D, 10_000.0, SinusoidalLayout::Interleaved).unwrap();
    let neg_ln = -(10_000f32.ln()) / D as f32;
    for &ctx in &CONTEXTS {
        let positions: Vec<i32> = (ctx - 64..ctx).collect();
        let mut table = vec![0f32; positions.len() * D];
        pe.fill_positions(&mut table, &positions).unwrap();
        let (mut ours, mut theirs) = (0.0f64, 0.0f64);
        for (row, &p) in table.chunks_exact(D).zip(&positions) {
            for i in 0..D / 2 {
                let w = 10_000f64.powf(-((2 * i) as f64) / D as f64);
                let (s64, c64) = (p as f64 * w).sin_cos();
                ours = ours
                    .max((row[2 * i] as f64 - s64).abs())
                    .max((row[2 * i + 1] as f64 - c64).abs());
                let div = ((2 * i) as f32 * neg_ln).exp();
                let a = p as f32 * div;
                theirs = theirs
                    .max((a.sin() as f64 - s64).abs())
                    .max((a.cos() as f64 - c64).abs());
            }
        }
        println!(
            "   {:>9}  {:>17}  {:>14.1e}  {:>18.1e}",
            ctx,
            format!("{}..{}", ctx - 64, ctx - 1),
            ours,
            theirs
        );
    }
    println!("   (max |error| over the 64 × 512 values per row)");
}

// ----------------------------------------------------------------------------------------
// Section 5: speed.

/// Median time per call of `f` over RUNS runs.
fn median_time(mut f: impl FnMut()) -> Duration {
    f(); // warm the caches and the branch predictors
    let t = Instant::now();
    f();
    let once = t.elapsed().as_nanos().max(1);
    let reps = (300_000 / once).clamp(1, 100_000) as u32;
    let mut runs: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            t.elapsed() / reps
        })
        .collect();
    runs.sort();
    runs[RUNS / 2]
}

fn speed<T: Element>(rope: &Rope) {
    let active = Backend::active();
    if T::DTYPE == Dtype::F32 {
        println!("   q only (the prefill is section 2's q). GB/s = bytes of x / time;");
        println!(
            "   ratio = ceiling time / time, as in the README (1.0 = memory speed, below 1 slower"
        );
        println!("   than the ceiling); speedup = scalar time / active time.");
        println!();
        println!(
            "   {:<20} {:<5} {:>10} {:>10} {:>10} {:>8} {:>10} {:>8}",
            "shape (tok×head×dim)",
            "dtype",
            active.name(),
            "scalar",
            "ceiling",
            "GB/s",
            "ratio",
            "speedup"
        );
    }
    let scalar = rope.with_backend(Backend::Scalar).unwrap();
    let active_rope = rope.with_backend(active).unwrap();
    let mut rng = Rng(42);
    for (label, tokens, first) in [
        ("decode 1×32×128", 1usize, DECODE_POS),
        ("prefill 512×32×128", PREFILL, 0),
    ] {
        let positions: Vec<i32> = (first..first + tokens as i32).collect();
        let n = tokens * Q_HEADS * HEAD_DIM;
        let mut x: Vec<T> = rng.vec(n);
        let t_active = median_time(|| {
            active_rope
                .apply(black_box(&mut x[..]), Q_HEADS, &positions)
                .unwrap()
        });
        let t_scalar = median_time(|| {
            scalar
                .apply(black_box(&mut x[..]), Q_HEADS, &positions)
                .unwrap()
        });
        let mut y: Vec<T> = (0..n)
            .map(|i| T::from_f32(1.0 + (i % 97) as f32 / 97.0))
            .collect();
        let t_ceiling = median_time(|| axpb(&mut y[..]));
        let bytes = (n * T::DTYPE.size_bytes()) as f64;
        println!(
            "   {:<20} {:<5} {:>10} {:>10} {:>10} {:>8.1} {:>10.2} {:>7.2}×",
            label,
            T::DTYPE.name(),
            fmt_dur(t_active),
            fmt_dur(t_scalar),
            fmt_dur(t_ceiling),
            bytes / t_active.as_nanos() as f64,
            t_ceiling.as_secs_f64() / t_active.as_secs_f64(),
            t_scalar.as_secs_f64() / t_active.as_secs_f64(),
        );
    }
}

/// The memory ceiling: `posenc::bench::memory_ceiling_pass`, one in-place `x = x·a + b` pass over the
/// same bytes with the active backend's own loads, stores and fused multiply-add. `x` stays in
/// [1, 2]: a = −1, b = 3 map it onto itself.
fn axpb<T: Element>(x: &mut [T]) {
    let (a, b) = (black_box(-1.0f32), black_box(3.0f32));
    posenc::bench::memory_ceiling_pass(Backend::active(), black_box(x), a, b).unwrap();
}

// ----------------------------------------------------------------------------------------
// Section 6: pictures (drawn in plots.rs).

/// Writes the PNGs and prints their paths. A picture that cannot be written (read-only
/// target dir, …) is reported but does not fail the tour: its verdict is the checks'.
fn pictures(rope: &Rope) {
    let t = Instant::now();
    match plots::write_all(rope) {
        Ok(written) => {
            for (path, what) in written {
                println!("   {:<68} {}", what, path.display());
            }
            println!("   (drawn in {:.1} s)", t.elapsed().as_secs_f64());
        }
        Err(e) => println!("   pictures not written: {e}"),
    }
}

// ----------------------------------------------------------------------------------------
// Helpers.

/// Every backend this build knows that runs on this CPU (new tiers appear automatically).
fn backends() -> impl Iterator<Item = Backend> {
    Backend::ALL.iter().copied().filter(|b| b.is_available())
}

#[cfg(target_arch = "x86_64")]
fn cpu_features() -> String {
    let yes = |b: bool| if b { "yes" } else { "no" };
    format!(
        "avx2 {}, fma {}, f16c {}, avx512f {}, avx512bf16 {}",
        yes(is_x86_feature_detected!("avx2")),
        yes(is_x86_feature_detected!("fma")),
        yes(is_x86_feature_detected!("f16c")),
        yes(is_x86_feature_detected!("avx512f")),
        yes(is_x86_feature_detected!("avx512bf16")),
    )
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_features() -> String {
    format!(
        "({}: runtime tiers are x86_64 only)",
        std::env::consts::ARCH
    )
}

fn section(title: &str) {
    println!();
    println!("{title}");
}

fn row(key: &str, value: &str) {
    println!("   {key:<20} {value}");
}

fn dot<T: Element>(a: &[T], b: &[T]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.to_f32() as f64 * y.to_f32() as f64)
        .sum()
}

fn norm<T: Element>(a: &[T]) -> f64 {
    dot(a, a).sqrt()
}

fn fmt_dur(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// splitmix64: deterministic inputs, the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo)
    }
    /// Values uniform in [−1, 1).
    fn vec<T: Element>(&mut self, n: usize) -> Vec<T> {
        (0..n)
            .map(|_| T::from_f32(((self.next() >> 40) as f32 / (1 << 23) as f32) - 1.0))
            .collect()
    }
}
