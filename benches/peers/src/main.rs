//! posenc vs candle-nn and ggml RoPE, side by side on the same shapes, dtypes and thread counts.
//!
//! `cd benches/peers && cargo run --release` prints two markdown tables: timings (median ns per
//! token-head) and correctness (max |peer − posenc| on the same input, positions 0..tokens).
//! Shapes: tokens × 32 heads × 128, tokens ∈ {1, 64, 512, 4096}, Llama-3 base 500000.
//!
//! What each column times (see README.md for the full notes):
//! * posenc: `Rope::apply` in place, cos/sin computed inside the call (exact angles).
//! * posenc table: `Rope::apply` in place from a `Table` of precomputed f32 cos/sin (what candle gets).
//! * ceiling: `memory_ceiling_pass(Backend::active(), x, 1, 0)` in place on the same bytes.
//! * candle: `rope_i` (interleaved, b·h·t·d) / `rope_thd` (rotate_half, b·t·h·d, posenc's
//!   layout) on precomputed cos/sin tensors of the same dtype; out of place (a fresh output
//!   tensor per call, as candle's API does).
//! * candle bhtd: `rope` (rotate_half on b·h·t·d), candle's usual layout.
//! * ggml: `ggml_graph_compute` of a graph holding one `ggml_rope_ext_inplace` node (cos/sin
//!   computed inside, like posenc), on a persistent ggml threadpool; graph construction and
//!   planning are outside the timing.
//!
//! Threads: every implementation is timed from a worker of a rayon pool of 1 or 2 threads, so
//! the timing thread does part of the work. 2 threads: posenc `Rope::par_apply` (feature
//! `rayon`; the table and ceiling columns are split the same way), candle's own `par_chunks`
//! in that pool, ggml `n_threads = 2` on a persistent ggml threadpool (caller + 1 worker).
//! The implementations of a case are measured interleaved (see `bench`), median per call.

use candle_core::{DType, Device, Tensor};
use half::{bf16, f16};
use llama_cpp_sys_2 as g;
use posenc::{Backend, Layout, Rope, RopeConfig, Table};
use std::hint::black_box;
use std::time::{Duration, Instant};

const HEADS: usize = 32;
const DIM: usize = 128;
const HALF: usize = DIM / 2;
const BASE: f32 = 500_000.0;
const TOKENS: [usize; 4] = [1, 64, 512, 4096];

/// An element type all three libraries (may) take.
trait Ty: posenc::Element + candle_core::WithDType + Copy + Send + Sync + 'static {
    const NAME: &'static str;
    const CANDLE: DType;
    /// ggml's tensor type, where ggml's CPU rope supports it (f32, f16; not bf16).
    const GGML: Option<g::ggml_type>;
    fn from_f(v: f32) -> Self;
    fn to_f(self) -> f32;
}
impl Ty for f32 {
    const NAME: &'static str = "f32";
    const CANDLE: DType = DType::F32;
    const GGML: Option<g::ggml_type> = Some(g::GGML_TYPE_F32);
    fn from_f(v: f32) -> Self {
        v
    }
    fn to_f(self) -> f32 {
        self
    }
}
impl Ty for f16 {
    const NAME: &'static str = "f16";
    const CANDLE: DType = DType::F16;
    const GGML: Option<g::ggml_type> = Some(g::GGML_TYPE_F16);
    fn from_f(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn to_f(self) -> f32 {
        self.to_f32()
    }
}
impl Ty for bf16 {
    const NAME: &'static str = "bf16";
    const CANDLE: DType = DType::BF16;
    const GGML: Option<g::ggml_type> = None;
    fn from_f(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn to_f(self) -> f32 {
        self.to_f32()
    }
}

/// Times several implementations of one case, interleaved so that a burst of load from other
/// processes hits all of them alike: each is warmed up (≥ 2 calls and ≥ 20 ms) and given a
/// sample size of `iters` calls lasting ≥ 1 ms; then ROUNDS rounds each take 1–3 samples of
/// every implementation in turn. Returns the median seconds per call of each.
fn bench(fs: &mut [&mut dyn FnMut()]) -> Vec<f64> {
    const ROUNDS: usize = 15;
    let mut iters = Vec::new();
    let mut per_sample = Vec::new();
    for f in fs.iter_mut() {
        let t0 = Instant::now();
        let mut n = 0u32;
        while n < 2 || t0.elapsed() < Duration::from_millis(20) {
            f();
            n += 1;
        }
        let per = t0.elapsed().as_secs_f64() / n as f64;
        let it = ((1e-3 / per).ceil() as usize).max(1);
        iters.push(it);
        per_sample.push(per * it as f64);
    }
    let mut samples = vec![Vec::new(); fs.len()];
    for _ in 0..ROUNDS {
        for (i, f) in fs.iter_mut().enumerate() {
            let k = (10e-3 / per_sample[i]).clamp(1.0, 3.0) as usize;
            for _ in 0..k {
                let t = Instant::now();
                for _ in 0..iters[i] {
                    f();
                }
                samples[i].push(t.elapsed().as_secs_f64() / iters[i] as f64);
            }
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort_by(|a, b| a.partial_cmp(b).unwrap());
            s[s.len() / 2]
        })
        .collect()
}

/// `PEERS_TOKENS=1,64` runs a subset (for a quick look); the default is all of TOKENS.
fn tokens() -> Vec<usize> {
    match std::env::var("PEERS_TOKENS") {
        Ok(v) => v.split(',').map(|t| t.trim().parse().expect("PEERS_TOKENS: numbers")).collect(),
        Err(_) => TOKENS.to_vec(),
    }
}

fn random_input<T: Ty>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::from_f(((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0)
        })
        .collect()
}

fn max_diff<T: Ty>(a: &[T], b: &[T]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x.to_f() - y.to_f()).abs()).fold(0.0, f32::max)
}

/// token-major (t, h, d) → head-major (h, t, d), and back.
fn thd_to_htd<T: Copy>(x: &[T], t: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(x.len());
    for h in 0..HEADS {
        for ti in 0..t {
            out.extend_from_slice(&x[(ti * HEADS + h) * DIM..][..DIM]);
        }
    }
    out
}
fn htd_to_thd<T: Copy>(x: &[T], t: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(x.len());
    for ti in 0..t {
        for h in 0..HEADS {
            out.extend_from_slice(&x[(h * t + ti) * DIM..][..DIM]);
        }
    }
    out
}

/// Runs `f(piece, n_heads, first_token, tokens)` serially, or (`par`) on the current rayon
/// pool split exactly as posenc's `par_apply` splits: serial below `PAR_MIN_ELEMENTS`,
/// otherwise runs of whole tokens of at least `PAR_GRAIN` elements (a token here is 4096
/// elements, below the grain, so posenc never splits heads at these shapes).
fn split<T: Send>(
    par: bool,
    x: &mut [T],
    tokens: usize,
    f: &(dyn Fn(&mut [T], usize, usize, usize) + Sync),
) {
    use rayon::prelude::*;
    let row = HEADS * DIM;
    if !par || x.len() < posenc::PAR_MIN_ELEMENTS {
        f(x, HEADS, 0, tokens)
    } else {
        let per = posenc::PAR_GRAIN.div_ceil(row);
        x.par_chunks_mut(per * row)
            .enumerate()
            .for_each(|(i, x)| f(x, HEADS, i * per, x.len() / row));
    }
}

/// candle's cos/sin as candle-transformers' Llama builds them: f32 `inv_freq`, positions ·
/// inv_freq as an f32 matmul, cos/sin in f32, then cast to the activation dtype.
fn candle_tables(tokens: usize, dt: DType) -> (Tensor, Tensor) {
    let dev = Device::Cpu;
    let inv: Vec<f32> = (0..DIM)
        .step_by(2)
        .map(|i| 1f32 / BASE.powf(i as f32 / DIM as f32))
        .collect();
    let inv = Tensor::from_vec(inv, (1, HALF), &dev).unwrap();
    let t = Tensor::arange(0u32, tokens as u32, &dev)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .reshape((tokens, 1))
        .unwrap();
    let freqs = t.matmul(&inv).unwrap();
    (
        freqs.cos().unwrap().to_dtype(dt).unwrap(),
        freqs.sin().unwrap().to_dtype(dt).unwrap(),
    )
}

/// ggml's threadpool polling level (0..=100): `PEERS_GGML_POLL`, default ggml's own (50, what
/// llama.cpp runs with). See README.md: on a machine with other busy processes ggml's 2-thread
/// compute waits for scheduler ticks (static row split + spin barrier), with either setting.
fn ggml_poll() -> u32 {
    std::env::var("PEERS_GGML_POLL").map_or(50, |v| v.parse().expect("PEERS_GGML_POLL: 0..=100"))
}

/// One ggml rope graph over a tokens × 32 × 128 tensor: in place, positions 0..tokens.
struct Ggml {
    ctx: *mut g::ggml_context,
    graph: *mut g::ggml_cgraph,
    a: *mut g::ggml_tensor,
    bytes: usize,
}

impl Ggml {
    fn new<T: Ty>(ty: g::ggml_type, tokens: usize, layout: Layout, input: &[T]) -> Ggml {
        let bytes = std::mem::size_of_val(input);
        // SAFETY: plain ggml C API use; the context owns every tensor and the graph, and is
        // sized for them (data + positions + overheads + slack).
        unsafe {
            let params = g::ggml_init_params {
                mem_size: bytes + tokens * 4 + 16 * g::ggml_tensor_overhead() + g::ggml_graph_overhead() + (1 << 20),
                mem_buffer: std::ptr::null_mut(),
                no_alloc: false,
            };
            let ctx = g::ggml_init(params);
            assert!(!ctx.is_null());
            let a = g::ggml_new_tensor_3d(ctx, ty, DIM as i64, HEADS as i64, tokens as i64);
            let pos = g::ggml_new_tensor_1d(ctx, g::GGML_TYPE_I32, tokens as i64);
            let p = g::ggml_get_data(pos) as *mut i32;
            for i in 0..tokens {
                *p.add(i) = i as i32;
            }
            let mode = match layout {
                Layout::Interleaved => 0, // GGML_ROPE_TYPE_NORMAL
                Layout::RotateHalf => 2,  // GGML_ROPE_TYPE_NEOX
            };
            let r = g::ggml_rope_ext_inplace(
                ctx,
                a,
                pos,
                std::ptr::null_mut(),
                DIM as i32,
                mode,
                8192, // n_ctx_orig: only read by YaRN (ext_factor 0 here)
                BASE,
                1.0,  // freq_scale
                0.0,  // ext_factor
                1.0,  // attn_factor
                32.0, // beta_fast
                1.0,  // beta_slow
            );
            let graph = g::ggml_new_graph(ctx);
            g::ggml_build_forward_expand(graph, r);
            let me = Ggml { ctx, graph, a, bytes };
            me.load(input);
            me
        }
    }
    fn load<T: Ty>(&self, input: &[T]) {
        assert_eq!(std::mem::size_of_val(input), self.bytes);
        // SAFETY: `a` holds exactly `bytes` bytes (checked: same element size and count).
        unsafe {
            std::ptr::copy_nonoverlapping(
                input.as_ptr() as *const u8,
                g::ggml_get_data(self.a) as *mut u8,
                self.bytes,
            )
        }
    }
    fn read<T: Ty>(&self, n: usize) -> Vec<T> {
        assert_eq!(n * std::mem::size_of::<T>(), self.bytes);
        // SAFETY: as in `load`.
        unsafe { std::slice::from_raw_parts(g::ggml_get_data(self.a) as *const T, n).to_vec() }
    }
    /// A persistent threadpool of `n` threads (the caller is thread 0) and the plan for it.
    fn plan(&self, n: i32) -> (*mut g::ggml_threadpool, g::ggml_cplan, Vec<u8>) {
        // SAFETY: plain ggml C API use; the work buffer outlives every compute with this plan.
        unsafe {
            let mut tp = g::ggml_threadpool_params_default(n);
            tp.poll = ggml_poll();
            let pool = g::ggml_threadpool_new(&mut tp);
            assert!(!pool.is_null());
            let mut plan = g::ggml_graph_plan(self.graph, n, pool);
            let mut work = vec![0u8; plan.work_size + 64];
            plan.work_data = work.as_mut_ptr();
            (pool, plan, work)
        }
    }
    fn compute(&self, plan: &mut g::ggml_cplan) {
        // SAFETY: the plan was made for this graph and its work buffer is alive.
        let st = unsafe { g::ggml_graph_compute(self.graph, plan) };
        assert_eq!(st, g::GGML_STATUS_SUCCESS);
    }
}
impl Drop for Ggml {
    fn drop(&mut self) {
        // SAFETY: the context was made by ggml_init and is freed once.
        unsafe { g::ggml_free(self.ctx) }
    }
}

#[derive(Default)]
struct Row {
    case: String,
    tokens: usize,
    posenc: f64,
    table: f64,
    ceiling: f64,
    candle: Option<f64>,
    candle_bhtd: Option<f64>,
    ggml: Option<f64>,
}

struct Check {
    case: String,
    candle: f32,
    candle_kernel: f32,
    candle_bhtd: Option<f32>,
    ggml: Option<f32>,
}

fn run<T: Ty>(layout: Layout, pool1: &rayon::ThreadPool, pool2: &rayon::ThreadPool, rows: &mut Vec<Row>, checks: &mut Vec<Check>) {
    let lname = match layout {
        Layout::Interleaved => "interleaved",
        _ => "rotate_half",
    };
    let rope = Rope::new(&RopeConfig::new(DIM, BASE, layout)).unwrap();
    let active = Backend::active();
    let dev = Device::Cpu;
    for t in tokens() {
        let n = t * HEADS * DIM;
        let positions: Vec<i32> = (0..t as i32).collect();
        let input: Vec<T> = random_input(n, 0x9E37_79B9_7F4A_7C15 ^ (t as u64) << 7);

        // ---- correctness, positions 0..t, single thread
        let mut want = input.clone();
        rope.apply(&mut want, HEADS, &positions).unwrap();
        let (ccos, csin) = candle_tables(t, T::CANDLE);
        let x_thd = Tensor::from_slice(&input, (1, t, HEADS, DIM), &dev).unwrap();
        let x_htd = Tensor::from_vec(thd_to_htd(&input, t), (1, HEADS, t, DIM), &dev).unwrap();
        let candle_main = |x_thd: &Tensor, x_htd: &Tensor| match layout {
            Layout::Interleaved => candle_nn::rotary_emb::rope_i(x_htd, &ccos, &csin).unwrap(),
            _ => candle_nn::rotary_emb::rope_thd(x_thd, &ccos, &csin).unwrap(),
        };
        let got_main: Vec<T> = candle_main(&x_thd, &x_htd).flatten_all().unwrap().to_vec1().unwrap();
        let got_main = match layout {
            Layout::Interleaved => htd_to_thd(&got_main, t),
            _ => got_main,
        };
        // The same rotation kernel question without the angle question: posenc with candle's
        // own cos/sin values (as f32).
        let tc: Vec<f32> = ccos.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        let ts: Vec<f32> = csin.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        let mut with_candle_tables = input.clone();
        rope.apply(&mut with_candle_tables, HEADS, Table::new(&tc, &ts, t).unwrap()).unwrap();
        let candle_bhtd = (layout == Layout::RotateHalf).then(|| {
            let got: Vec<T> = candle_nn::rotary_emb::rope(&x_htd, &ccos, &csin)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            max_diff(&htd_to_thd(&got, t), &want)
        });
        let ggml = T::GGML.map(|ty| {
            let gg = Ggml::new(ty, t, layout, &input);
            let (tp, mut plan, _work) = gg.plan(1);
            gg.compute(&mut plan);
            // SAFETY: the pool was made by ggml_threadpool_new and is freed once.
            unsafe { g::ggml_threadpool_free(tp) };
            max_diff(&gg.read::<T>(n), &want)
        });
        checks.push(Check {
            case: format!("{lname} {} t={t}", T::NAME),
            candle: max_diff(&got_main, &want),
            candle_kernel: max_diff(&got_main, &with_candle_tables),
            candle_bhtd,
            ggml,
        });

        // ---- timing
        let mut cos = vec![0f32; t * HALF];
        let mut sin = vec![0f32; t * HALF];
        rope.fill_cos_sin(&positions, &mut cos, &mut sin).unwrap();
        for threads in [1usize, 2] {
            // Everything runs on a worker of a rayon pool of `threads` threads, so the timing
            // thread takes part in the work (as ggml's caller does in its own threadpool) and
            // candle's `par_chunks` sees exactly `threads` threads.
            let par = threads == 2;
            let pool = if par { pool2 } else { pool1 };
            let m = pool.install(|| {
                let mut x1 = input.clone();
                let mut posenc = || {
                    let x = black_box(&mut x1);
                    if par {
                        rope.par_apply(x, HEADS, &positions).unwrap()
                    } else {
                        rope.apply(x, HEADS, &positions).unwrap()
                    }
                };
                let mut x2 = input.clone();
                let mut table = || {
                    split(par, black_box(&mut x2), t, &|x, h, t0, nt| {
                        let r = t0 * HALF..(t0 + nt) * HALF;
                        rope.apply(x, h, Table::new(&cos[r.clone()], &sin[r], nt).unwrap())
                            .unwrap()
                    })
                };
                let mut x3 = input.clone();
                let mut ceiling = || {
                    split(par, black_box(&mut x3), t, &|x, _, _, _| {
                        posenc::bench::memory_ceiling_pass(active, x, 1.0, 0.0).unwrap()
                    })
                };
                let mut candle = || drop(black_box(candle_main(&x_thd, &x_htd)));
                let mut candle_bhtd =
                    || drop(black_box(candle_nn::rotary_emb::rope(&x_htd, &ccos, &csin).unwrap()));
                let gg = T::GGML.map(|ty| Ggml::new(ty, t, layout, &input));
                let mut gplan = gg.as_ref().map(|gg| gg.plan(threads as i32));
                let mut ggml = || {
                    let (gg, (_, plan, _)) = (gg.as_ref().unwrap(), gplan.as_mut().unwrap());
                    gg.compute(plan)
                };
                let mut fs: Vec<&mut dyn FnMut()> =
                    vec![&mut posenc, &mut table, &mut ceiling, &mut candle];
                if layout == Layout::RotateHalf {
                    fs.push(&mut candle_bhtd);
                }
                if T::GGML.is_some() {
                    fs.push(&mut ggml);
                }
                let m = bench(&mut fs);
                drop(fs);
                if let Some((tp, _, _)) = gplan {
                    // SAFETY: made by ggml_threadpool_new, freed once, after its last compute.
                    unsafe { g::ggml_threadpool_free(tp) };
                }
                m
            });
            let mut it = m.into_iter();
            let (posenc, table, ceiling, candle) =
                (it.next().unwrap(), it.next().unwrap(), it.next().unwrap(), it.next());
            let candle_bhtd = if layout == Layout::RotateHalf { it.next() } else { None };
            let ggml = it.next();
            rows.push(Row {
                case: format!("{lname} {} t={t} {threads}T", T::NAME),
                tokens: t,
                posenc,
                table,
                ceiling,
                candle,
                candle_bhtd,
                ggml,
            });
            eprintln!("done: {}", rows.last().unwrap().case);
        }
    }
}

fn main() {
    // SAFETY: initialises ggml-cpu's tables (fp16 conversion etc.) once, before any compute.
    unsafe { g::ggml_cpu_init() };
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_string();
    let load_start = load();
    let pool1 = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let pool2 = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let mut rows = Vec::new();
    let mut checks = Vec::new();
    for layout in [Layout::Interleaved, Layout::RotateHalf] {
        run::<f32>(layout, &pool1, &pool2, &mut rows, &mut checks);
        run::<f16>(layout, &pool1, &pool2, &mut rows, &mut checks);
        run::<bf16>(layout, &pool1, &pool2, &mut rows, &mut checks);
    }

    println!("posenc backend: {}", Backend::active().name());
    println!("/proc/loadavg at start: {load_start}; at end: {}", load());
    println!();
    println!("Median ns per token-head (32 heads × 128 dims; lower is better). ×peer = peer time / posenc time.");
    println!();
    println!(
        "| case | posenc | posenc table | ceiling | candle | candle bhtd | ggml | posenc/ceiling | ×candle | ×ggml |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let f = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.2}"));
    let x = |v: Option<f64>, p: f64| v.map_or("—".to_string(), |v| format!("{:.1}×", v / p));
    for r in &rows {
        let th = (r.tokens * HEADS) as f64 / 1e9; // seconds → ns per token-head
        let per = |s: f64| s / th;
        let best_candle = match (r.candle, r.candle_bhtd) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {:.2} | {} | {} |",
            r.case,
            per(r.posenc),
            per(r.table),
            per(r.ceiling),
            f(r.candle.map(per)),
            f(r.candle_bhtd.map(per)),
            f(r.ggml.map(per)),
            r.posenc / r.ceiling,
            x(best_candle, r.posenc),
            x(r.ggml, r.posenc),
        );
    }
    println!();
    println!("Correctness: max |peer − posenc| on the same input in [-1, 1), positions 0..tokens.");
    println!();
    println!("| case | candle (its f32 tables) | candle vs posenc on candle's tables | candle bhtd | ggml |");
    println!("|---|---:|---:|---:|---:|");
    let e = |v: Option<f32>| v.map_or("—".to_string(), |v| format!("{v:.2e}"));
    for c in &checks {
        println!(
            "| {} | {:.2e} | {:.2e} | {} | {} |",
            c.case,
            c.candle,
            c.candle_kernel,
            e(c.candle_bhtd),
            e(c.ggml)
        );
    }
}
