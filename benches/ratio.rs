//! RoPE time against a ceiling of bytes alone, side by side in one process.
//!
//! For every shape (tokens × 32 heads × 128), layout and dtype, four things are timed
//! alternately on the same buffer (41 rounds, each long enough to be measurable; medians):
//!
//! * `apply` from positions (exact angles computed in the call);
//! * `apply` from a `Table` made once by `Rope::table` (the angles-once path a runtime takes
//!   for every layer but the first);
//! * the **bytes ceiling**: one in-place pass over the same bytes with the cheapest operation
//!   of that width and no conversion — f32 `x·a + b` (`posenc::bench::memory_ceiling_pass`), 16-bit
//!   integers `x·3 + 1` (`passes.rs`, vectorised for the widest integer lanes the CPU has);
//! * for 16-bit, also the converting pass (`memory_ceiling_pass` on f16/bf16: widen, `x·a + b`,
//!   round), which shows how much of the time is conversion.
//!
//! Every shape runs twice: on a buffer aligned to 64 bytes (as ggml's and PyTorch's CPU
//! allocators place tensors) and on one 16 bytes past a 64-byte boundary (where glibc's
//! `malloc` puts a large block it maps, so a Rust `Vec`); the ceilings run on the same
//! buffer as the RoPE calls they are set against.
//!
//! Printed: ns per token-head, ratio = ceiling time / RoPE time (1.0 = the speed of moving the
//! bytes), and the 16-bit time over f32's for the same elements. A second table sets RoPE
//! against the **arithmetic floor**: an in-place pass over the same bytes doing RoPE's
//! arithmetic per value (one multiply, one fused multiply-add, as `a·c − b·s` is) and nothing
//! else, timed in the same rounds; for 16-bit also the widening and narrowing, by the cheapest
//! instructions whatever their rounding (`floor16`). Where the floor's own ratio is below 1,
//! the CPU's execution units, not its memory, bound any rotation with that arithmetic, and the
//! floor's ratio is the most RoPE can reach there; where a 16-bit floor takes longer than f32's
//! rotation from a table, no 16-bit rotation can be as fast as f32's. bf16's floor truncates, so
//! it has a second, exact one (`floor16::pass_exact_bf16`: the same pass rounded to `half`'s
//! bits by the cheapest exact sequence found for the lanes), the least a bf16 rotation under the
//! contract costs. Then the sinusoidal fill of a
//! 4096 × 512 table against a plain write of the same bytes (`slice::fill`), and against the
//! fill's own arithmetic with no memory traffic (`sinfloor`): where that floor is slower than the
//! write, the method, not memory, bounds the fill; and against the table's values rounded from
//! f64 to f32 and stored with no arithmetic at all (`cvtfloor`), the least any f64 method does.
//! `cargo bench -p posenc-benches --bench ratio`; the README's speed table comes from it.
//! `POSENC_BENCH_BACKEND=avx2` (a backend's name) times that tier instead of the active one,
//! e.g. the AVX2 tier on an AVX-512 host; the 16-bit bytes ceiling then uses AVX2 lanes too.
//! `cargo bench -p posenc-benches --bench ratio -- heads` times head sizes 64, 96, 128 and 256
//! instead (1, 64, 512 and 2048 tokens, aligned buffers); `-- sin` the sinusoidal rows alone.

mod common;
mod passes;

use passes::{bytes16, cvtfloor, floor16, floor32, sinfloor};
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

/// The backend timed (see [`common::chosen_backend`]).
fn backend() -> Backend {
    common::chosen_backend()
}

/// The bytes ceiling of a buffer of `T`: no conversion, the cheapest op of its width.
fn bytes_ceiling<T: Element>(x: &mut [T]) {
    if T::DTYPE.size_bytes() == 4 {
        memory_ceiling_pass(backend(), x, -1.0, 3.0).unwrap();
    } else {
        assert_eq!(size_of::<T>(), 2);
        // SAFETY: `T` is a 16-bit element (f16 or bf16, plain bits, any pattern valid as u16
        // and back), so the same memory is `x.len()` u16 values; `x` is borrowed mutably for
        // the whole pass.
        let bits = unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<u16>(), x.len()) };
        bytes16::pass(bits);
    }
}

/// ns per token-head of: apply, table apply, bytes ceiling, converting ceiling.
struct Times {
    apply: f64,
    table: f64,
    bytes: f64,
    converting: f64,
    /// The arithmetic floor (`floor32`, `floor16`).
    floor: f64,
    /// The floor with the contract's rounding (`floor16::pass_exact_bf16` for bf16; f32 and
    /// f16's floors round exactly already).
    exact: f64,
}

/// Where a buffer starts, in bytes past a 64-byte boundary: `ALIGNED` as ggml's and
/// PyTorch's CPU allocators place tensors, `MALLOC` as glibc's `malloc` places a block it maps
/// fresh (128 KiB and up, in a process that has not freed such blocks; a Rust `Vec` of one):
/// 16 bytes past a page. Its other blocks are 16-byte aligned, so half of them sit 16 bytes
/// past a 32-byte boundary too. The two are timed
/// separately because a vector access that straddles a cache line costs two (at `MALLOC`, every
/// other 32-byte vector and every 64-byte one).
const ALIGNED: usize = 0;
const MALLOC: usize = 16;

/// `len` elements starting `skew` bytes past a 64-byte boundary, inside `store`.
fn placed<T: Element>(store: &mut Vec<T>, len: usize, skew: usize) -> &mut [T] {
    store.resize(len + 64, T::from_f32(0.0));
    let size = size_of::<T>();
    let at = (0..64 / size)
        .find(|i| (store.as_ptr() as usize + i * size) % 64 == skew)
        .expect("an element boundary at that skew");
    &mut store[at..at + len]
}

/// Times `tokens` × 32 heads of `head_dim`, in `layout`, starting `skew` bytes past a 64-byte
/// boundary.
fn run<T: Element>(head_dim: usize, tokens: usize, layout: Layout, skew: usize) -> Times {
    let rope = Rope::new(&RopeConfig::new(head_dim, 500_000.0, layout))
        .and_then(|r| r.with_backend(backend()))
        .unwrap();
    let fresh: Vec<T> = (0..tokens * 32 * head_dim)
        .map(|i| T::from_f32(1.0 + (i % 17) as f32 / 17.0))
        .collect();
    let mut store = vec![];
    let x = placed(&mut store, fresh.len(), skew);
    let pos: Vec<i32> = (0..tokens as i32).map(|p| p + 1000).collect();
    // The table at the buffer's placement: a table's rows on vector boundaries are read where
    // they lie, others are copied per token (so both paths are timed, each at its placement).
    let mut tstore = vec![];
    let buf = placed::<f32>(&mut tstore, rope.table_len(tokens), skew);
    let table = rope.table(&pos, buf).unwrap();
    let reps = (8192 / tokens).max(2);
    let b = backend();
    let (mut ta, mut tt, mut tb, mut tc, mut tf) = (vec![], vec![], vec![], vec![], vec![]);
    let mut te = vec![];
    for _ in 0..41 {
        // The integer pass drifts the 16-bit values into NaNs and infinities; start each round
        // from finite data so every timed call sees the same kind of values.
        x.copy_from_slice(&fresh);
        let mut apply = || rope.apply(black_box(&mut x[..]), 32, &pos).unwrap();
        ta.push(time(&mut apply, reps));
        let mut from_table = || rope.apply(black_box(&mut x[..]), 32, table).unwrap();
        tt.push(time(&mut from_table, reps));
        // The floor before the bytes pass, on finite values as RoPE's (f16 conversions of
        // NaNs and subnormals may take longer).
        if T::DTYPE == posenc::Dtype::F32 {
            // SAFETY: `T` is f32 (checked), so the buffer is `x.len()` f32 values; `x` is
            // borrowed mutably for the whole pass.
            let x32 =
                unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<f32>(), x.len()) };
            let (m, a, b) = black_box((-1.0f32, -1.0f32, 3.0f32));
            let mut floor = || floor32::pass(black_box(&mut x32[..]), m, a, b);
            tf.push(time(&mut floor, reps));
        } else {
            // SAFETY: `T` is a 16-bit element (plain bits, any pattern valid as u16 and
            // back), so the buffer is `x.len()` u16 values; `x` is borrowed mutably for the
            // whole pass.
            let bits =
                unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<u16>(), x.len()) };
            let is_f16 = T::DTYPE == posenc::Dtype::F16;
            let (m, a, b) = black_box((-1.0f32, -1.0f32, 3.0f32));
            let mut floor = || floor16::pass(black_box(&mut bits[..]), is_f16, m, a, b);
            tf.push(time(&mut floor, reps));
            if !is_f16 {
                let mut exact = || floor16::pass_exact_bf16(black_box(&mut bits[..]), m, a, b);
                te.push(time(&mut exact, reps));
            }
        }
        let mut converting = || memory_ceiling_pass(b, black_box(&mut x[..]), -1.0, 3.0).unwrap();
        tc.push(time(&mut converting, reps));
        let mut bytes = || bytes_ceiling(black_box(&mut x[..]));
        tb.push(time(&mut bytes, reps));
    }
    let per = 1e9 / (tokens * 32) as f64;
    Times {
        apply: median(ta) * per,
        table: median(tt) * per,
        bytes: median(tb) * per,
        converting: median(tc) * per,
        exact: if te.is_empty() {
            median(tf.clone()) * per
        } else {
            median(te) * per
        },
        floor: median(tf) * per,
    }
}

/// Inputs and output ring of the sinusoidal arithmetic floor (`sinfloor`).
struct SinFloor {
    k: Vec<f64>,
    y0: Vec<f64>,
    y1: Vec<f64>,
    ring: Vec<f32>,
}

impl SinFloor {
    fn new() -> SinFloor {
        let d = sinfloor::D;
        let w: Vec<f64> = (0..d / 2)
            .map(|i| 10_000f64.powf(-2.0 * i as f64 / d as f64))
            .collect();
        SinFloor {
            k: w.iter().flat_map(|w| [2.0 * w.cos(); 2]).collect(),
            y0: w.iter().flat_map(|_| [0.0, 1.0]).collect(),
            y1: w.iter().flat_map(|w| [w.sin(), w.cos()]).collect(),
            ring: vec![0f32; 9 * d],
        }
    }

    /// One floor pass over 4096 rows.
    fn pass(&mut self) {
        sinfloor::pass(
            black_box(&mut self.ring[..]),
            &self.k,
            &self.y0,
            &self.y1,
            4096,
        );
    }
}

/// Returns (plain write, fill, floor, conversions) in µs for a 4096 × 512 table; the floor and
/// the conversions pass (0 without a floor; the caller passes one with f32 only) are timed in
/// the same rounds as the write and the fill.
fn run_sin<T: Element>(
    layout: SinusoidalLayout,
    mut floor: Option<&mut SinFloor>,
) -> (f64, f64, f64, f64) {
    let pe = Sinusoidal::new(512, 10_000.0, layout)
        .and_then(|p| p.with_backend(backend()))
        .unwrap();
    // 64-byte aligned, as the RoPE rows' first column: a write straddling cache lines is the
    // slower ceiling, and this one should be the fastest plain write.
    let mut store = vec![];
    let out = placed::<T>(&mut store, 4096 * 512, ALIGNED);
    let v = T::from_f32(0.5);
    let row: Vec<f64> = (0..512).map(|i| (i as f64 * 0.37).sin()).collect();
    let (mut tw, mut tf, mut tl, mut tc) = (vec![], vec![], vec![0.0], vec![0.0]);
    for _ in 0..41 {
        let mut write = || common::fill(&mut out[..], v);
        tw.push(time(&mut write, 4));
        let mut fill = || pe.fill(black_box(&mut out[..]), black_box(0)).unwrap();
        tf.push(time(&mut fill, 4));
        if let Some(f) = floor.as_deref_mut() {
            tl.push(time(&mut || f.pass(), 4));
            // Into the fill's own buffer: a second table would leave its dirty lines for
            // the next write to evict.
            let mut convert = || cvtfloor::pass(black_box(&mut out[..]), black_box(&row));
            tc.push(time(&mut convert, 4));
        }
    }
    (
        median(tw) * 1e6,
        median(tf) * 1e6,
        median(tl) * 1e6,
        median(tc) * 1e6,
    )
}

/// `-- heads`: the head sizes of released models other than 128, in and out of the first
/// cache levels, both layouts, every dtype, aligned buffers: a kernel that is fast at 128 only
/// (whole vectors, a table held in registers) shows here.
fn heads() {
    println!(
        "backend {}; head sizes, ns per token-head (32 heads), medians of 41 alternating \
         rounds; ratio = bytes-ceiling time / time; buffers 64-byte aligned",
        backend().name()
    );
    println!(
        "| head_dim | tokens | layout | dtype | apply / table / bytes ceiling ns | apply ratio \
         | table ratio | floor ratio | apply time / f32 apply time |"
    );
    println!("|---:|---:|---|---|---:|---:|---:|---:|---:|");
    // 64: Llama 3.2 1B, TinyLlama; 96: Phi-3; 128: most; 256: Gemma 2 and 3.
    for head_dim in [64, 96, 128, 256] {
        for tokens in [1, 64, 512, 2048] {
            for (layout, name) in [
                (Layout::Interleaved, "interleaved"),
                (Layout::RotateHalf, "rotate_half"),
            ] {
                let rows = [
                    ("f32", run::<f32>(head_dim, tokens, layout, ALIGNED)),
                    ("bf16", run::<bf16>(head_dim, tokens, layout, ALIGNED)),
                    ("f16", run::<f16>(head_dim, tokens, layout, ALIGNED)),
                ];
                let f32_apply = rows[0].1.apply;
                for (dtype, t) in rows {
                    println!(
                        "| {head_dim} | {tokens} | {name} | {dtype} | {:.1} / {:.1} / {:.1} | {:.2} \
                         | {:.2} | {:.2} | {:.2} |",
                        t.apply,
                        t.table,
                        t.bytes,
                        t.bytes / t.apply,
                        t.bytes / t.table,
                        t.bytes / t.floor,
                        t.apply / f32_apply,
                    );
                }
            }
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; the other arguments understood are `heads` (head sizes
    // other than 128) and `sin` (the sinusoidal rows alone).
    if std::env::args().any(|a| a == "heads") {
        heads();
        return;
    }
    if std::env::args().any(|a| a == "sin") {
        sinusoidal();
        return;
    }
    println!(
        "backend {}; ns per token-head (128 dims), medians of 41 alternating rounds; \
         ratio = bytes-ceiling time / time",
        backend().name()
    );
    println!(
        "buffers 64-byte aligned (ggml's, PyTorch's allocators); the last ratio column: the same \
         at 16 bytes past a 64-byte boundary (glibc malloc's large blocks, a Rust Vec)"
    );
    println!(
        "| tokens | layout | dtype | apply / table / bytes ceiling ns | apply ratio | table ratio \
         | converting ceiling ratio | time / f32 time | apply / table ratio at +16 B |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|");
    let mut floors = vec![];
    for tokens in [1, 64, 512, 4096] {
        for (layout, name) in [
            (Layout::Interleaved, "interleaved"),
            (Layout::RotateHalf, "rotate_half"),
        ] {
            let rows = [
                (
                    "f32",
                    run::<f32>(128, tokens, layout, ALIGNED),
                    run::<f32>(128, tokens, layout, MALLOC),
                ),
                (
                    "bf16",
                    run::<bf16>(128, tokens, layout, ALIGNED),
                    run::<bf16>(128, tokens, layout, MALLOC),
                ),
                (
                    "f16",
                    run::<f16>(128, tokens, layout, ALIGNED),
                    run::<f16>(128, tokens, layout, MALLOC),
                ),
            ];
            let (f32_apply, f32_table) = (rows[0].1.apply, rows[0].1.table);
            for (dtype, t, _) in &rows {
                floors.push((
                    tokens, name, *dtype, t.floor, t.exact, t.bytes, t.apply, t.table, f32_table,
                ));
            }
            for (dtype, t, m) in rows {
                println!(
                    "| {tokens} | {name} | {dtype} | {:.1} / {:.1} / {:.1} | {:.2} | {:.2} | {} | {:.2} | {:.2} / {:.2} |",
                    t.apply,
                    t.table,
                    t.bytes,
                    t.bytes / t.apply,
                    t.bytes / t.table,
                    if dtype == "f32" {
                        "—".to_string()
                    } else {
                        format!("{:.2}", t.converting / t.apply)
                    },
                    t.apply / f32_apply,
                    m.bytes / m.apply,
                    m.bytes / m.table,
                );
            }
        }
    }
    println!();
    println!(
        "against the arithmetic floor (RoPE's multiply and multiply-add per value on the same \
         bytes; 16-bit: widened and narrowed by the cheapest instructions, bf16 truncated); \
         floor ratio = bytes-ceiling time / floor time, the most a rotation can reach; \
         floor / f32 table > 1: no 16-bit rotation can be as fast as f32's (both apply paths add \
         the same angles to it); exact floor: bf16's floor rounded as the contract rounds \
         (`half`'s bits, by the cheapest exact sequence found for these lanes; f32's and f16's floors \
         are exact already), so its ratio is the most a bf16 rotation that keeps the contract \
         can reach, and exact floor / f32 table > 1: none can be as fast as f32's"
    );
    println!(
        "| tokens | layout | dtype | floor / exact floor ns | floor / exact floor ratio \
         | apply / floor | table / floor | floor / f32 table | exact floor / f32 table |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|");
    for (tokens, name, dtype, floor, exact, bytes, apply, table, f32_table) in floors {
        println!(
            "| {tokens} | {name} | {dtype} | {floor:.1} / {exact:.1} | {:.2} / {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            bytes / floor,
            bytes / exact,
            floor / apply,
            floor / table,
            floor / f32_table,
            exact / f32_table
        );
    }
    println!();
    sinusoidal();
}

/// The sinusoidal fill against a plain write of its bytes and against its own arithmetic.
fn sinusoidal() {
    println!("sinusoidal fill 4096 x 512 (rows 0..4096) vs a plain write of the same bytes, µs");
    println!(
        "(arithmetic floor: the f64 recurrence and the rounding to f32 alone, no memory traffic; \
         floor ratio = write time / floor time, the most a fill by this method can reach; \
         conversions: every value rounded from f64 to f32 and stored, nothing computed, the \
         least any f64 method does; its ratio = f32 write time / its time)"
    );
    println!(
        "| layout | f32 fill / write / floor / conversions | f32 ratio | bf16 ratio | f16 ratio \
         | f32 floor ratio | bf16 floor ratio | f16 floor ratio | conversions ratio |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut sin_floor = SinFloor::new();
    for (layout, name) in [
        (SinusoidalLayout::Interleaved, "interleaved"),
        (SinusoidalLayout::Split, "split"),
    ] {
        let (w32, f32_, floor, conv) = run_sin::<f32>(layout, Some(&mut sin_floor));
        let (wb, fb, _, _) = run_sin::<bf16>(layout, None);
        let (wh, fh, _, _) = run_sin::<f16>(layout, None);
        println!(
            "| {name} | {f32_:.0} / {w32:.0} / {floor:.0} / {conv:.0} | {:.2} | {:.2} | {:.2} \
             | {:.2} | {:.2} | {:.2} | {:.2} |",
            w32 / f32_,
            wb / fb,
            wh / fh,
            w32 / floor,
            wb / floor,
            wh / floor,
            w32 / conv
        );
    }
}
