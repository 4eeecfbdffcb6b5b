//! Shared by the benches (`rope.rs`, `sinusoidal.rs`, `quant.rs`, `ratio.rs`, `fused.rs`): the criterion
//! configuration, the list of backends, deterministic inputs and the memory-ceiling kernels.
//!
//! (A directory module, not `benches/common.rs`, so Cargo does not discover it as a bench.)
#![allow(dead_code)] // each bench uses a different subset

use core::time::Duration;
use criterion::Criterion;
use posenc::{Backend, Element, bf16, f16};
use std::hint::black_box;

/// Short runs so that a full `cargo bench` finishes in a few minutes on a shared machine.
/// Command-line options (a filter, `--quick`, `--measurement-time`, ...) still override these:
/// `criterion_group!` applies `configure_from_args` after this.
pub fn config() -> Criterion {
    Criterion::default()
        .measurement_time(Duration::from_millis(1000))
        .warm_up_time(Duration::from_millis(300))
        .sample_size(20)
        .without_plots()
}

/// Every backend this build knows that can run on this CPU, in `Backend::ALL` order, so new
/// tiers show up in the benches without edits here.
pub fn backends() -> impl Iterator<Item = Backend> {
    Backend::available()
}

/// The backend a bench times: `POSENC_BENCH_BACKEND` by name (`avx2` on an AVX-512 host, to
/// time that tier), else the active one.
pub fn chosen_backend() -> Backend {
    static CHOSEN: std::sync::OnceLock<Backend> = std::sync::OnceLock::new();
    *CHOSEN.get_or_init(|| match std::env::var("POSENC_BENCH_BACKEND") {
        Ok(name) => Backend::available()
            .find(|b| b.name() == name)
            .unwrap_or_else(|| panic!("POSENC_BENCH_BACKEND={name}: not available here")),
        Err(_) => Backend::active(),
    })
}

/// Deterministic values uniform in `[lo, hi)` (splitmix64), the same on every run.
pub fn uniform<T: Element>(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<T> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let u = (z >> 40) as f32 / (1u64 << 24) as f32;
            T::from_f32(lo + (hi - lo) * u)
        })
        .collect()
}

/// Lazily (re)allocates `buf` to `n` inputs, so groups a filter skips allocate nothing.
pub fn lazy<T: Element>(buf: &mut Vec<T>, n: usize, seed: u64) -> &mut [T] {
    if buf.len() != n {
        *buf = uniform(n, seed, -1.0, 1.0);
    }
    buf
}

/// Branch-free widen/narrow for the ceiling loop.
///
/// `half`'s general conversions cannot be used there: in dev builds `half` gets its `std`
/// feature (criterion → ciborium → half/std), so each f16 conversion is a runtime-dispatched
/// call per element, which does not vectorise and would make the "ceiling" compute-bound.
/// These bit conversions are exact (equal to `half`'s, round to nearest even) for every finite
/// bf16 and for f16 values in the normal range, which is all the ceiling ever holds: its
/// buffer starts in `[1, 2)` and `x·(−1) + 3` maps `[1, 2]` onto itself exactly.
pub trait Store: Element {
    fn widen(self) -> f32;
    fn narrow(v: f32) -> Self;
}

impl Store for f32 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
    #[inline(always)]
    fn narrow(v: f32) -> Self {
        v
    }
}

impl Store for bf16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        f32::from_bits((self.to_bits() as u32) << 16)
    }
    #[inline(always)]
    fn narrow(v: f32) -> Self {
        let u = v.to_bits();
        bf16::from_bits((u.wrapping_add(0x7FFF + ((u >> 16) & 1)) >> 16) as u16)
    }
}

impl Store for f16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        // Normal f16 only: rebias the exponent by 127 − 15 = 112.
        let h = self.to_bits() as u32;
        f32::from_bits(((h & 0x8000) << 16) | (((h & 0x7FFF) + (112 << 10)) << 13))
    }
    #[inline(always)]
    fn narrow(v: f32) -> Self {
        // Results in the f16 normal range only; the carry of the rounding may bump the exponent.
        let u = v.to_bits();
        let sign = (u >> 16) & 0x8000;
        let m = (u & 0x7FFF_FFFF).wrapping_sub(112 << 23);
        f16::from_bits((sign | (m.wrapping_add(0xFFF + ((m >> 13) & 1)) >> 13)) as u16)
    }
}

/// The ceiling buffer: `n` values in `[1, 2)`, checked against `half` once.
pub fn ceiling_buffer<T: Store>(n: usize) -> Vec<T> {
    let x: Vec<T> = uniform(n, 7, 1.0, 2.0);
    for &v in x.iter().take(4096) {
        let f = v.to_f32();
        assert_eq!(v.widen().to_bits(), f.to_bits());
        assert_eq!(T::narrow(3.0 - f), T::from_f32(3.0 - f));
    }
    x
}

/// The memory ceiling: one in-place pass `x = x·a + b` over the buffer, in f32, unfused
/// (a plain multiply and add), rounded once on store. A plain loop the compiler
/// auto-vectorises; `black_box` on the buffer and on `a`, `b` keeps it from being elided or
/// folded.
///
/// The loop is compiled for the widest vectors this CPU has (like posenc's own runtime
/// tiers): a baseline SSE2 copy would itself be the bottleneck for L1/L2-resident shapes and
/// flatter kernels that use AVX2 or AVX-512.
pub fn axpb<T: Store>(x: &mut [T]) {
    let a = black_box(-1.0f32);
    let b = black_box(3.0f32);
    let x = black_box(x);
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            unsafe { axpb_avx512(x, a, b) };
        } else if is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { axpb_avx2(x, a, b) };
        } else {
            axpb_loop(x, a, b);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    axpb_loop(x, a, b);
    black_box(x);
}

#[inline(always)]
fn axpb_loop<T: Store>(x: &mut [T], a: f32, b: f32) {
    for v in x.iter_mut() {
        *v = T::narrow(v.widen() * a + b);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn axpb_avx2<T: Store>(x: &mut [T], a: f32, b: f32) {
    axpb_loop(x, a, b);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn axpb_avx512<T: Store>(x: &mut [T], a: f32, b: f32) {
    axpb_loop(x, a, b);
}

/// The write ceiling: `out.fill(v)`, vectorised like [`axpb`].
pub fn fill<T: Copy>(out: &mut [T], v: T) {
    let out = black_box(out);
    let v = black_box(v);
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            unsafe { fill_avx512(out, v) };
        } else if is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { fill_avx2(out, v) };
        } else {
            out.fill(v);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    out.fill(v);
    black_box(out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fill_avx2<T: Copy>(out: &mut [T], v: T) {
    out.fill(v);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn fill_avx512<T: Copy>(out: &mut [T], v: T) {
    out.fill(v);
}
