//! Backends and the one dispatch point.
//!
//! A backend is a set of kernels ([`Kernels`]): per-token cos/sin, the per-token rotation of
//! every head, and a sinusoidal row. The drivers below own the loops over tokens and chunks
//! and are generic over the kernels, so each backend is one monomorphised copy of the same
//! driver and the dispatch happens once per public call, never per row. The runtime x86
//! tiers plug in here: a `#[target_feature]` function that instantiates the drivers with
//! `#[inline(always)]` kernels, and one more arm in each `match`.

pub(crate) mod portable;
pub(crate) mod scalar;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_64;

use crate::element::Element;
use crate::rope::Layout;
use crate::sinusoidal::SinusoidalLayout;

/// Pairs per chunk: cos/sin of one token are computed `CHUNK` pairs at a time into stack
/// buffers and applied to every head before the next chunk, so the stack use is small and
/// fixed whatever the rotary dim.
pub(crate) const CHUNK: usize = 64;

/// A set of kernels.
///
/// ```
/// let b = posenc::Backend::active();
/// println!("posenc runs on {}", b.name());
/// assert!(b.is_available());
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Plain loops: the reference and the test oracle.
    Scalar,
    /// `wide` lanes: SSE2 on x86-64, NEON on aarch64, simd128 on wasm, or whatever
    /// `-C target-feature` the build enables. Bitwise equal to `Scalar` (no fused ops).
    Portable,
    /// x86-64 AVX2 + FMA + F16C, selected at run time. Rotations use fused multiply-adds
    /// (within the documented bound of `Scalar`, not bitwise); cos/sin are bitwise `Scalar`'s.
    Avx2,
    /// x86-64 AVX-512F (+ FMA, F16C), selected at run time; same numerics as `Avx2`.
    Avx512,
}

impl Backend {
    /// Every backend this build knows, available on this CPU or not.
    ///
    /// ```
    /// assert!(posenc::Backend::ALL.contains(&posenc::Backend::Scalar));
    /// ```
    pub const ALL: &'static [Backend] = &[
        Backend::Scalar,
        Backend::Portable,
        Backend::Avx2,
        Backend::Avx512,
    ];

    /// Every backend that can run here, in [`Backend::ALL`] order: what a test or a benchmark
    /// that compares backends should iterate over.
    ///
    /// ```
    /// let here: Vec<posenc::Backend> = posenc::Backend::available().collect();
    /// assert!(here.contains(&posenc::Backend::Scalar) && here.contains(&posenc::Backend::active()));
    /// ```
    pub fn available() -> impl Iterator<Item = Backend> {
        Backend::ALL.iter().copied().filter(|b| b.is_available())
    }

    /// The backend posenc picks for this CPU: the fastest available (AVX-512, then AVX2,
    /// then portable). Detected once per process and cached; with `std` at run time, without
    /// `std` from the compile-time target features.
    ///
    /// ```
    /// let b = posenc::Backend::active();
    /// assert!(b.is_available() && b != posenc::Backend::Scalar);
    /// ```
    pub fn active() -> Backend {
        let f = features();
        if f & AVX512 != 0 {
            Backend::Avx512
        } else if f & AVX2 != 0 {
            Backend::Avx2
        } else {
            Backend::Portable
        }
    }

    /// Whether this backend can run on this CPU and build.
    ///
    /// ```
    /// assert!(posenc::Backend::Scalar.is_available());
    /// ```
    pub fn is_available(self) -> bool {
        match self {
            Backend::Scalar | Backend::Portable => true,
            Backend::Avx2 => features() & AVX2 != 0,
            Backend::Avx512 => features() & AVX512 != 0,
        }
    }

    /// Short name (`"scalar"`, `"portable"`, `"avx2"`, `"avx512"`).
    ///
    /// ```
    /// assert_eq!(posenc::Backend::Portable.name(), "portable");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Backend::Scalar => "scalar",
            Backend::Portable => "portable",
            Backend::Avx2 => "avx2",
            Backend::Avx512 => "avx512",
        }
    }

    /// Whether this backend's results are bitwise those of [`Backend::Scalar`] (true for
    /// `Portable`; the x86 tiers fuse multiply-adds in the rotation and agree within the
    /// documented bound instead).
    ///
    /// ```
    /// assert!(posenc::Backend::Portable.matches_scalar_bitwise());
    /// ```
    pub fn matches_scalar_bitwise(self) -> bool {
        matches!(self, Backend::Scalar | Backend::Portable)
    }
}

const AVX2: u8 = 1;
const AVX512: u8 = 2;
const KNOWN: u8 = 0x80;

/// The usable x86 tiers as a bit set, detected once and cached.
fn features() -> u8 {
    use core::sync::atomic::{AtomicU8, Ordering};
    static CACHE: AtomicU8 = AtomicU8::new(0);
    let f = CACHE.load(Ordering::Relaxed);
    if f & KNOWN != 0 {
        return f;
    }
    let f = detect() | KNOWN;
    CACHE.store(f, Ordering::Relaxed);
    f
}

#[allow(unreachable_code)]
fn detect() -> u8 {
    #[cfg(target_arch = "x86_64")]
    {
        // Known at compile time (e.g. `-C target-cpu=native`, or a Miri run with
        // `-C target-feature`, which is how CI executes the tiers on Miri's model of the
        // intrinsics): no detection needed.
        let mut f = 0;
        if cfg!(all(
            target_feature = "avx2",
            target_feature = "fma",
            target_feature = "f16c"
        )) {
            f |= AVX2;
        }
        if cfg!(all(
            target_feature = "avx512f",
            target_feature = "avx2",
            target_feature = "fma",
            target_feature = "f16c"
        )) {
            f |= AVX512;
        }
        // Run-time detection (std); Miri cannot answer cpuid.
        #[cfg(all(feature = "std", not(miri)))]
        {
            use std::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") && has!("f16c") {
                f |= AVX2;
                if has!("avx512f") {
                    f |= AVX512;
                }
            }
        }
        return f;
    }
    0
}

/// How outputs are rounded; see [`crate::Rounding`].
pub(crate) use crate::rope::Rounding;

/// Where the cos/sin of each token come from.
#[derive(Clone, Copy)]
pub(crate) enum Angles<'a> {
    /// Angles `p · inv_freq[i]`; cos scaled by `cs`, sin by `ss`. The product is exact (f64)
    /// unless `f32_angle` asks for HF's rounded f32 product.
    Freq {
        inv_freq: &'a [f32],
        positions: Positions<'a>,
        cs: f32,
        ss: f32,
        f32_angle: bool,
    },
    /// Caller tables, `tokens × half` each.
    Table { cos: &'a [f32], sin: &'a [f32] },
}

/// The positions of the tokens.
#[derive(Clone, Copy)]
pub(crate) enum Positions<'a> {
    /// One position per token.
    Plain(&'a [i32]),
    /// `n_axes` positions per token (M-RoPE: t, h, w); pair `j` uses axis `axis[j]`.
    Axes {
        pos: &'a [i32],
        n_axes: usize,
        axis: &'a [u8],
    },
}

/// The position(s) of one chunk of pairs.
#[derive(Clone, Copy)]
pub(crate) enum Pos<'a> {
    Splat(i32),
    PerPair(&'a [i32]),
}

/// Where the heads of a buffer are: head `h` of token `t` starts at
/// `offset + t·token_stride + h·head_stride` and its rotary window is the next `rotary_dim`
/// elements. Validated (in bounds, windows disjoint) before any kernel runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub n_heads: usize,
    pub token_stride: usize,
    pub head_stride: usize,
    pub offset: usize,
}

/// One buffer and the spans of heads to rotate in it.
pub(crate) struct Target<'a, T> {
    pub x: &'a mut [T],
    pub spans: &'a [Span],
}

/// What to rotate: shared by every target of a call.
#[derive(Clone, Copy)]
pub(crate) struct Job<'a> {
    pub tokens: usize,
    pub rotary_dim: usize,
    pub layout: Layout,
    pub angles: Angles<'a>,
    pub round: Rounding,
}

/// The largest lane count of any backend.
pub(crate) const MAX_LANES: usize = 16;
const TAB: usize = 2 * CHUNK + MAX_LANES;

/// One chunk's cos/sin laid out for the layout, computed once per token and shared by every
/// head: rotate_half keeps `c[k] = cos_k`, `s[k] = sin_k`; interleaved expands to
/// `c = [c0, c0, c1, c1, …]`, `s = [−s0, s0, −s1, s1, …]` so a block is
/// `x·c + swap_pairs(x)·s`, i.e. `(a·c − b·s, b·c + a·s)` bit for bit. The padding past the
/// chunk is zero, so vector tails read defined values.
pub(crate) struct Tables {
    pub c: [f32; TAB],
    pub s: [f32; TAB],
}

impl Tables {
    #[inline(always)]
    pub(crate) fn new() -> Tables {
        Tables {
            c: [0.0; TAB],
            s: [0.0; TAB],
        }
    }
}

/// The kernels a backend provides. All slices are pre-validated by the driver.
pub(crate) trait Kernels {
    /// `cos[i] = cos(θ_i)·cs`, `sin[i] = sin(θ_i)·ss`, `θ_i = p_i·w[i]` exact in f64.
    fn cos_sin(p: Pos<'_>, w: &[f32], cs: f32, ss: f32, cos: &mut [f32], sin: &mut [f32]);
    /// `sin[i], cos[i]` of `p·w[i]` in f64 (sinusoidal tables, HF-parity angles).
    fn sin_cos_f64(p: f64, w: &[f64], sin: &mut [f32], cos: &mut [f32]);
    /// `sin[i], cos[i]` of `p·w[i]`, in f64 ([`crate::trig::sin_cos_f64`] on each): the start
    /// values and steps of the sinusoidal recurrence.
    #[inline(always)]
    fn sin_cos_f64_wide(p: f64, w: &[f64], sin: &mut [f64], cos: &mut [f64]) {
        for ((&wi, s), c) in w.iter().zip(sin.iter_mut()).zip(cos.iter_mut()) {
            (*s, *c) = crate::trig::sin_cos_f64(p * wi);
        }
    }
    /// Rows `j0 .. j1` of one anchor block, the columns of one span (see [`SinCols`]);
    /// `rows` holds exactly those rows. The default is [`scalar::sin_cols`]; a backend may
    /// vectorise it as long as every value gets exactly its operations.
    #[inline(always)]
    fn sin_rows<T: Element>(rows: &mut [T], sp: &SinCols<'_>, j0: usize, j1: usize) {
        scalar::sin_cols(rows, sp, j0, j1)
    }
    /// Writes (or adds) sin/cos of pairs `i0 .. i0 + sin.len()` into one sinusoidal row
    /// ([`scalar::write_sinusoid`], which a backend may vectorise with the same operations:
    /// one f32 add when adding, one rounding to `T`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn write_sinusoid<T: Element>(
        row: &mut [T],
        layout: SinusoidalLayout,
        pairs: usize,
        i0: usize,
        sin: &[f32],
        cos: &[f32],
        add: bool,
    ) {
        scalar::write_sinusoid(row, layout, pairs, i0, sin, cos, add)
    }
    /// Lays out one chunk's cos/sin for `layout` (see [`Tables`]).
    #[inline(always)]
    fn prepare(layout: Layout, cos: &[f32], sin: &[f32], tab: &mut Tables) {
        match layout {
            Layout::RotateHalf => {
                tab.c[..cos.len()].copy_from_slice(cos);
                tab.s[..sin.len()].copy_from_slice(sin);
            }
            Layout::Interleaved => {
                for (k, (&c, &s)) in cos.iter().zip(sin).enumerate() {
                    tab.c[2 * k] = c;
                    tab.c[2 * k + 1] = c;
                    tab.s[2 * k] = -s;
                    tab.s[2 * k + 1] = s;
                }
            }
        }
    }
    /// Rotates pairs `pair0 .. pair0 + n` of one head's rotary window `win`
    /// (`win.len() == 2·half`), with the chunk's tables.
    fn rotate_head<T: Element>(
        win: &mut [T],
        half: usize,
        layout: Layout,
        pair0: usize,
        n: usize,
        tab: &Tables,
        round: Rounding,
    );
    /// Rotates pairs `pair0 .. pair0 + n` of `n_heads` heads of one token: head `h`'s rotary
    /// window is `x[h·head_stride ..][..rotary_dim]` (windows validated disjoint and in
    /// bounds). The default walks the heads; a backend may reorder the work (e.g. keep a
    /// block of cos/sin in registers across heads) as long as each head gets exactly
    /// [`Kernels::rotate_head`]'s results.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn rotate_heads<T: Element>(
        x: &mut [T],
        n_heads: usize,
        head_stride: usize,
        rotary_dim: usize,
        layout: Layout,
        pair0: usize,
        n: usize,
        tab: &Tables,
        round: Rounding,
    ) {
        let half = rotary_dim / 2;
        for h in 0..n_heads {
            let start = h * head_stride;
            let win = &mut x[start..start + rotary_dim];
            Self::rotate_head(win, half, layout, pair0, n, tab, round);
        }
    }
    /// The memory ceiling: `x = x·a + b` in place, one rounding to `T`.
    fn axpb<T: Element>(x: &mut [T], a: f32, b: f32);
}

/// Reinterprets a slice of `T` as a slice of `U` when they are the same type.
#[inline(always)]
pub(crate) fn same<T: 'static, U: 'static>(x: &[T]) -> &[U] {
    // `Any`-free identity cast: the caller matched `T::DTYPE`, and `Element` is sealed to
    // exactly three types, so this is `&[U]` itself. Checked, not assumed:
    assert!(core::any::TypeId::of::<T>() == core::any::TypeId::of::<U>());
    // SAFETY: T and U are the same type (asserted above), so the layouts are identical.
    unsafe { core::slice::from_raw_parts(x.as_ptr().cast::<U>(), x.len()) }
}

#[inline(always)]
pub(crate) fn same_mut<T: 'static, U: 'static>(x: &mut [T]) -> &mut [U] {
    assert!(core::any::TypeId::of::<T>() == core::any::TypeId::of::<U>());
    // SAFETY: T and U are the same type (asserted above), so the layouts are identical.
    unsafe { core::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<U>(), x.len()) }
}

/// `v` rounded to `T` and widened back (HF-parity intermediate rounding).
#[inline(always)]
pub(crate) fn round_to<T: Element>(v: f32) -> f32 {
    T::from_f32(v).to_f32()
}

/// The RoPE driver: per token, per chunk of pairs, cos/sin once, then every head of every
/// target.
#[inline(always)]
pub(crate) fn rope_with<K: Kernels, T: Element>(targets: &mut [Target<'_, T>], job: &Job<'_>) {
    let half = job.rotary_dim / 2;
    let mut cbuf = [0.0f32; CHUNK];
    let mut sbuf = [0.0f32; CHUNK];
    let mut pbuf = [0i32; CHUNK];
    let mut abuf = [0.0f64; CHUNK];
    let mut tab = Tables::new();
    for t in 0..job.tokens {
        let mut p0 = 0;
        while p0 < half {
            let n = CHUNK.min(half - p0);
            match job.angles {
                Angles::Freq {
                    inv_freq,
                    positions,
                    cs,
                    ss,
                    f32_angle,
                } => {
                    let w = &inv_freq[p0..p0 + n];
                    let pos = match positions {
                        Positions::Plain(p) => Pos::Splat(p[t]),
                        Positions::Axes { pos, n_axes, axis } => {
                            let row = &pos[t * n_axes..(t + 1) * n_axes];
                            for (pp, &a) in pbuf[..n].iter_mut().zip(&axis[p0..p0 + n]) {
                                *pp = row[a as usize];
                            }
                            Pos::PerPair(&pbuf[..n])
                        }
                    };
                    if f32_angle {
                        // HF parity: the angle is the f32 product f32(p)·ω, as torch forms it.
                        for (i, a) in abuf[..n].iter_mut().enumerate() {
                            let p = match pos {
                                Pos::Splat(p) => p,
                                Pos::PerPair(pp) => pp[i],
                            };
                            *a = ((p as f32) * w[i]) as f64;
                        }
                        K::sin_cos_f64(1.0, &abuf[..n], &mut sbuf[..n], &mut cbuf[..n]);
                        for (c, s) in cbuf[..n].iter_mut().zip(&mut sbuf[..n]) {
                            *c *= cs;
                            *s *= ss;
                        }
                    } else {
                        K::cos_sin(pos, w, cs, ss, &mut cbuf[..n], &mut sbuf[..n]);
                    }
                }
                Angles::Table { cos, sin } => {
                    let at = t * half + p0;
                    cbuf[..n].copy_from_slice(&cos[at..at + n]);
                    sbuf[..n].copy_from_slice(&sin[at..at + n]);
                }
            }
            if job.round != Rounding::Once {
                // HF rounds cos/sin to the model dtype before the rotation.
                for (c, s) in cbuf[..n].iter_mut().zip(&mut sbuf[..n]) {
                    *c = round_to::<T>(*c);
                    *s = round_to::<T>(*s);
                }
            }
            K::prepare(job.layout, &cbuf[..n], &sbuf[..n], &mut tab);
            for target in targets.iter_mut() {
                for span in target.spans {
                    let start = span.offset + t * span.token_stride;
                    let len = (span.n_heads - 1) * span.head_stride + job.rotary_dim;
                    let heads = &mut target.x[start..start + len];
                    let (hs, rd) = (span.head_stride, job.rotary_dim);
                    K::rotate_heads(
                        heads,
                        span.n_heads,
                        hs,
                        rd,
                        job.layout,
                        p0,
                        n,
                        &tab,
                        job.round,
                    );
                }
            }
            p0 += n;
        }
    }
}

/// Runs RoPE on `backend`. Arguments are validated by the caller.
pub(crate) fn rope<T: Element>(backend: Backend, targets: &mut [Target<'_, T>], job: &Job<'_>) {
    match backend {
        Backend::Scalar => rope_with::<scalar::Scalar, T>(targets, job),
        Backend::Portable => rope_with::<portable::Portable, T>(targets, job),
        // SAFETY: a call only carries Avx2 after `is_available()` confirmed AVX2+FMA+F16C
        // (Backend::active or with_backend).
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => unsafe { x86_64::avx2::rope(targets, job) },
        // SAFETY: as above, for AVX-512F+AVX2+FMA+F16C.
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => unsafe { x86_64::avx512::rope(targets, job) },
        #[cfg(not(target_arch = "x86_64"))]
        Backend::Avx2 | Backend::Avx512 => rope_with::<portable::Portable, T>(targets, job),
    }
}

#[inline(always)]
pub(crate) fn cos_sin_table_with<K: Kernels>(
    inv_freq: &[f32],
    positions: &[i32],
    cs: f32,
    ss: f32,
    cos: &mut [f32],
    sin: &mut [f32],
) {
    let half = inv_freq.len();
    if half == 0 {
        return;
    }
    for ((&p, c), s) in positions
        .iter()
        .zip(cos.chunks_exact_mut(half))
        .zip(sin.chunks_exact_mut(half))
    {
        K::cos_sin(Pos::Splat(p), inv_freq, cs, ss, c, s);
    }
}

/// Fills cos/sin tables (`positions.len() × inv_freq.len()` each) on `backend`.
pub(crate) fn cos_sin_table(
    backend: Backend,
    inv_freq: &[f32],
    positions: &[i32],
    cs: f32,
    ss: f32,
    cos: &mut [f32],
    sin: &mut [f32],
) {
    match backend {
        Backend::Scalar => {
            cos_sin_table_with::<scalar::Scalar>(inv_freq, positions, cs, ss, cos, sin)
        }
        Backend::Portable => {
            cos_sin_table_with::<portable::Portable>(inv_freq, positions, cs, ss, cos, sin)
        }
        // SAFETY: Avx2 is only carried after `is_available()` confirmed its features.
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => unsafe {
            x86_64::avx2::cos_sin_table(inv_freq, positions, cs, ss, cos, sin)
        },
        // SAFETY: Avx512 is only carried after `is_available()` confirmed its features.
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => unsafe {
            x86_64::avx512::cos_sin_table(inv_freq, positions, cs, ss, cos, sin)
        },
        #[cfg(not(target_arch = "x86_64"))]
        Backend::Avx2 | Backend::Avx512 => {
            cos_sin_table_with::<portable::Portable>(inv_freq, positions, cs, ss, cos, sin)
        }
    }
}

/// The memory ceiling posenc's kernels are measured against: `x = x·a + b` in place over the
/// same bytes, with the same loads and stores (f16/bf16 widened and rounded once) and one
/// fused multiply-add per element on `backend`. Benchmarks and the tour report RoPE's time as
/// a ratio to this pass; it is public so that a runtime can measure the same ratio on its
/// own machine.
///
/// ```
/// use posenc::{memory_ceiling_pass, Backend};
/// let mut x = [1.0f32, 2.0, 3.0];
/// memory_ceiling_pass(Backend::active(), &mut x, 2.0, 0.5).unwrap();
/// assert_eq!(x, [2.5, 4.5, 6.5]);
/// ```
pub fn memory_ceiling_pass<T: Element>(
    backend: Backend,
    x: &mut [T],
    a: f32,
    b: f32,
) -> Result<(), crate::Error> {
    if !backend.is_available() {
        return Err(crate::Error::BackendUnavailable { backend });
    }
    axpb(backend, x, a, b);
    Ok(())
}

/// The in-place memory ceiling `x = x·a + b` on `backend`.
fn axpb<T: Element>(backend: Backend, x: &mut [T], a: f32, b: f32) {
    match backend {
        Backend::Scalar => scalar::Scalar::axpb(x, a, b),
        Backend::Portable => portable::Portable::axpb(x, a, b),
        // SAFETY: Avx2 is only carried after `is_available()` confirmed its features.
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => unsafe { x86_64::avx2::axpb(x, a, b) },
        // SAFETY: Avx512 is only carried after `is_available()` confirmed its features.
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => unsafe { x86_64::avx512::axpb(x, a, b) },
        #[cfg(not(target_arch = "x86_64"))]
        Backend::Avx2 | Backend::Avx512 => portable::Portable::axpb(x, a, b),
    }
}

/// Rows of a sinusoidal call: a run of consecutive positions, a list, or real-valued times.
#[derive(Clone, Copy)]
pub(crate) enum Rows<'a> {
    From(u32),
    List(&'a [i32]),
    Times(&'a [f32]),
}

impl Rows<'_> {
    /// The position of row `r`, and whether it is the padding row.
    #[inline(always)]
    fn position(&self, r: usize, padding: Option<i32>) -> (f64, bool) {
        let (p, int) = match *self {
            Rows::From(first) => (first as i64 + r as i64, true),
            Rows::List(p) => (p[r] as i64, true),
            Rows::Times(t) => return (t[r] as f64, false),
        };
        (p as f64, int && padding.is_some_and(|pad| pad as i64 == p))
    }
}

/// What a sinusoidal table is: `pairs` frequencies `ω_i = base^(−i/den)` (f64), laid out in
/// a row of `d_model` values (a last odd column stays zero), an optional all-zero padding row.
#[derive(Clone, Copy, PartialEq)]
pub(crate) struct SinSpec {
    pub d_model: usize,
    pub pairs: usize,
    pub base: f64,
    pub den: f64,
    pub layout: SinusoidalLayout,
    pub padding: Option<i32>,
    /// The frequencies, [`sin_frequencies`]`(base, den, 0, ..)`, when `pairs ≤ SIN_CACHE`
    /// (zeros otherwise); see [`SinSpec::with_frequencies`].
    pub freq: [f64; SIN_CACHE],
}

/// Frequencies a [`SinSpec`] keeps (d_model ≤ 512): a one-row `add` at decode spent ~60% of
/// its instructions in the 33 `pow` calls of [`sin_frequencies`] (d_model 512), so they are
/// computed once, at construction, for the common widths. 2 KiB in the encoder.
pub(crate) const SIN_CACHE: usize = 256;

/// Without the cached frequencies (a function of the other fields).
impl core::fmt::Debug for SinSpec {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SinSpec")
            .field("d_model", &self.d_model)
            .field("pairs", &self.pairs)
            .field("base", &self.base)
            .field("den", &self.den)
            .field("layout", &self.layout)
            .field("padding", &self.padding)
            .finish_non_exhaustive()
    }
}

impl SinSpec {
    /// `self` with [`SinSpec::freq`] filled (when `pairs ≤ SIN_CACHE`).
    pub(crate) fn with_frequencies(mut self) -> SinSpec {
        self.freq = [0.0; SIN_CACHE];
        if self.pairs <= SIN_CACHE {
            sin_frequencies(self.base, self.den, 0, &mut self.freq[..self.pairs]);
        }
        self
    }

    /// `ω_{i0 + k}` for `k < out.len()`: from the cache, or computed. Bitwise the same
    /// either way: `sin_frequencies` restarts its `pow` every 8 indices counted from 0, so
    /// one call over `0 .. pairs` gives the values of calls per chunk.
    #[inline]
    pub(crate) fn frequencies(&self, i0: usize, out: &mut [f64]) {
        if self.pairs <= SIN_CACHE {
            out.copy_from_slice(&self.freq[i0..i0 + out.len()]);
        } else {
            sin_frequencies(self.base, self.den, i0, out);
        }
    }
}

/// The frequencies `ω_{i0 + k} = base^(−(i0 + k)/den)` for `k < out.len()`, in f64: every
/// eighth one by `pow`, the ones between by repeated multiplication with `base^(−1/den)`.
/// Each is within ~8 f64 ulps of the exact value (at most 7 roundings of the ratio and the
/// products), an angle error below 3e-8 at any position < 2^24: a twentieth of the contract,
/// for an eighth of the `pow` calls.
#[inline]
pub(crate) fn sin_frequencies(base: f64, den: f64, i0: usize, out: &mut [f64]) {
    let ratio = libm::pow(base, -1.0 / den);
    let mut w = 0.0;
    for (k, o) in out.iter_mut().enumerate() {
        let i = i0 + k;
        w = if k % 8 == 0 {
            libm::pow(base, -(i as f64) / den)
        } else {
            w * ratio
        };
        *o = w;
    }
}

/// Rows per anchor block of the sinusoidal recurrence (see [`sinusoidal_run`]). Each block
/// starts with two f64 `sin/cos` per frequency; at 64 rows that was a sixth of the work.
/// On a 4096 × 512 f32 fill (Zen 3, one process timing each build in turn, medians of 41),
/// 256 took 0.78–0.88× the time of 64, 128 0.84–0.91×, and 512 0.99–1.07× that of 256.
/// The error grows with the square of the block length (below) and stays 1000× below the
/// f32 rounding.
pub(crate) const SIN_BLOCK: u64 = 256;
/// Output bytes per row group of the recurrence (see [`sinusoidal_run`]): an L2's worth on
/// Zen 3 (512 KiB), at least one anchor block (256 rows, 512 KiB at d_model 512 f32). With
/// 64-row blocks, 128 KiB groups (steps recomputed every 64 rows) measured no faster.
const SIN_GROUP_BYTES: u64 = 512 << 10;
/// Frequencies per chunk of the recurrence.
pub(crate) const SIN_CHUNK: usize = CHUNK;
/// One span of consecutive output columns of one anchor block of the recurrence: column
/// `col0 + c` of row `a + j` of the block (`j < SIN_BLOCK`) holds `y_j[c]`, where `y_0`, `y_1`
/// are the f64 values at rows `a`, `a + 1` ([`crate::trig::sin_cos_f64`] of the angle) and
/// `y_{j+2} = k[c]·y_{j+1} − y_j` (unfused, in this order on every backend), `k[c] = 2·cos ω`
/// of the column's frequency; each value rounded once to f32 and once to `T`. Sines and
/// cosines of a frequency obey the same recurrence, so a span is any run of columns whatever
/// the layout.
pub(crate) struct SinCols<'a> {
    /// Row width.
    pub d: usize,
    /// The span's first column.
    pub col0: usize,
    /// Per column of the span: values at block rows 0 and 1, and the step `2·cos ω`.
    pub y0: &'a [f64],
    pub y1: &'a [f64],
    pub k: &'a [f64],
}

/// `s`, `c` (a chunk's sines and cosines, `n` each) in the order of the chunk's columns:
/// pair by pair (interleaved), or all of one then all of the other (the split layouts).
#[inline(always)]
fn sin_arrange(layout: SinusoidalLayout, s: &[f64], c: &[f64], out: &mut [f64]) {
    let n = s.len();
    match layout {
        SinusoidalLayout::Interleaved => {
            for ((o, &s), &c) in out.chunks_exact_mut(2).zip(s).zip(c) {
                (o[0], o[1]) = (s, c);
            }
        }
        SinusoidalLayout::Split => {
            out[..n].copy_from_slice(s);
            out[n..2 * n].copy_from_slice(c);
        }
        SinusoidalLayout::SplitCosFirst => {
            out[..n].copy_from_slice(c);
            out[n..2 * n].copy_from_slice(s);
        }
    }
}

/// `fill` (consecutive positions `first ..`): the f64 three-term recurrence.
///
/// Positions are cut into anchor blocks `[a, a + SIN_BLOCK)`, `a` a multiple of `SIN_BLOCK`
/// (absolute, so every row is a function of its position alone, whatever the call's first
/// row or length: `par_fill` pieces and sub-range fills are bitwise the whole fill's rows).
/// Per block and frequency, f64 `sin/cos` of `a·ω` and `(a + 1)·ω`
/// ([`crate::trig::sin_cos_f64`], fdlibm's kernels after the exact Cody–Waite reduction:
/// within ~3e-16 of the f64 angle's values); then every further row of every column by
/// `y_{j+2} = 2cos ω·y_{j+1} − y_j` ([`SinCols`]): one multiplication and one subtraction per
/// value, with no shuffles between sines and cosines. (A rotation per row took 1.5–2× the
/// arithmetic and needed both of a pair's values together.)
///
/// The loops run over row groups of whole blocks (`SIN_GROUP_BYTES` of output), and inside a
/// group over chunks of frequencies: a group's rows are written while they are in L2, where
/// sweeping one chunk across the whole table touched every row once per chunk (25–30% slower
/// for 4096 × 512 f32 in a stand-alone AVX2 kernel). The steps are computed once per group
/// and chunk. The order changes no value.
///
/// Error, positions `p < 2^24`, vs the f64 formula `sin/cos(p·ω_exact)`:
/// * the angle `a·ω` rounded in f64: ≤ 2^-53·2^24 ≈ 1.9e-9 rad; `ω` itself within ~8 ulps
///   ([`sin_frequencies`]): ≤ 8·2^-53·2^24 ≈ 1.5e-8 rad (both shared with the direct method
///   of `fill_positions`);
/// * the recurrence: an error `δ` made at step `m` reaches row `j` multiplied by the
///   Chebyshev value `U_{j−m−1}(cos ω)`, at most `j − m` in size. Each step makes
///   ≤ 3·2^-53 (|k·y| ≤ 2, |y| ≤ 1) and `k`'s own error adds ≤ 2·3e-16·|y|; the start values
///   are within ~3e-16. Over the 254 steps of a block: ≤ (254·255/2)·(3.3e-16 + 6e-16) +
///   256·6e-16 ≈ 3e-11, whatever the table length (the blocks restart, so there is no
///   growth with the position);
/// * the rounding to f32: ≤ 2^-25 ≈ 3e-8.
///
/// Every value is within ≈ 3e-8 + 1.7e-8 + 3e-11 ≈ 5e-8 of the f64 formula: a fifth of the
/// 2.4e-7 contract. Measured in `tests/properties.rs` (`sinusoidal_accuracy_formula`,
/// `sinusoidal_fill_recurrence_accuracy`). The values are not bitwise those of the direct
/// method (`fill_positions`), which rounds the angle's reduction to f32.
#[inline(always)]
fn sinusoidal_run<K: Kernels, T: Element>(out: &mut [T], spec: &SinSpec, first: u32) {
    let d = spec.d_model;
    let rows = (out.len() / d) as u64;
    let first = first as u64;
    let end = first + rows;
    let mut w = [0.0f64; SIN_CHUNK];
    let (mut s, mut c) = ([0.0f64; SIN_CHUNK], [0.0f64; SIN_CHUNK]);
    // Per column of the chunk (in `sin_arrange`'s order): the step and the two start rows.
    let mut k = [0.0f64; 2 * SIN_CHUNK];
    let mut y0 = [0.0f64; 2 * SIN_CHUNK];
    let mut y1 = [0.0f64; 2 * SIN_CHUNK];
    // Groups of whole anchor blocks, at least one.
    let row_bytes = (d * core::mem::size_of::<T>()) as u64;
    let group = (SIN_GROUP_BYTES / row_bytes / SIN_BLOCK).max(1) * SIN_BLOCK;
    let mut g = first / SIN_BLOCK * SIN_BLOCK;
    while g < end {
        let g_end = end.min(g + group);
        let mut i0 = 0;
        while i0 < spec.pairs {
            let n = SIN_CHUNK.min(spec.pairs - i0);
            spec.frequencies(i0, &mut w[..n]);
            K::sin_cos_f64_wide(1.0, &w[..n], &mut s[..n], &mut c[..n]);
            for ci in c[..n].iter_mut() {
                *ci *= 2.0; // exact
            }
            sin_arrange(spec.layout, &c[..n], &c[..n], &mut k[..2 * n]);
            // The chunk's columns: one run (interleaved) or two of `n` (split layouts).
            let spans = match spec.layout {
                SinusoidalLayout::Interleaved => [(2 * i0, 0, 2 * n), (0, 0, 0)],
                _ => [(i0, 0, n), (spec.pairs + i0, n, 2 * n)],
            };
            let mut a = g;
            while a < g_end {
                K::sin_cos_f64_wide(a as f64, &w[..n], &mut s[..n], &mut c[..n]);
                sin_arrange(spec.layout, &s[..n], &c[..n], &mut y0[..2 * n]);
                K::sin_cos_f64_wide((a + 1) as f64, &w[..n], &mut s[..n], &mut c[..n]);
                sin_arrange(spec.layout, &s[..n], &c[..n], &mut y1[..2 * n]);
                let j0 = first.max(a) - a;
                let j1 = g_end.min(a + SIN_BLOCK) - a;
                let r0 = (a + j0 - first) as usize;
                let r1 = (a + j1 - first) as usize;
                let block = &mut out[r0 * d..r1 * d];
                for &(col0, c0, c1) in spans.iter().filter(|sp| sp.2 > sp.1) {
                    let sp = SinCols {
                        d,
                        col0,
                        y0: &y0[c0..c1],
                        y1: &y1[c0..c1],
                        k: &k[c0..c1],
                    };
                    K::sin_rows(block, &sp, j0 as usize, j1 as usize);
                }
                a += SIN_BLOCK;
            }
            i0 += n;
        }
        g = g_end;
    }
    if let Some(pad) = spec.padding {
        let pad = pad as i64;
        if pad >= first as i64 && pad < end as i64 {
            let r = (pad - first as i64) as usize;
            out[r * d..(r + 1) * d].fill(T::from_f32(0.0));
        }
    }
}

/// Sinusoidal driver: `fill` by the recurrence ([`sinusoidal_run`]); otherwise column
/// blocks of `CHUNK` frequencies (computed once per call), then every row by the direct
/// method.
#[inline(always)]
pub(crate) fn sinusoidal_with<K: Kernels, T: Element>(
    out: &mut [T],
    spec: &SinSpec,
    rows: Rows<'_>,
    add: bool,
) {
    if out.is_empty() {
        return; // no rows: nothing to compute, however wide the rows would be
    }
    let d = spec.d_model;
    match (rows, add) {
        (Rows::From(first), false) => sinusoidal_run::<K, T>(out, spec, first),
        _ => {
            let mut w = [0.0f64; CHUNK];
            let mut sbuf = [0.0f32; CHUNK];
            let mut cbuf = [0.0f32; CHUNK];
            let zeros = [0.0f32; CHUNK];
            let mut i0 = 0;
            while i0 < spec.pairs {
                let n = CHUNK.min(spec.pairs - i0);
                spec.frequencies(i0, &mut w[..n]);
                for (r, row) in out.chunks_exact_mut(d).enumerate() {
                    let (p, pad) = rows.position(r, spec.padding);
                    let (s, c) = if pad {
                        (&zeros[..n], &zeros[..n])
                    } else {
                        K::sin_cos_f64(p, &w[..n], &mut sbuf[..n], &mut cbuf[..n]);
                        (&sbuf[..n], &cbuf[..n])
                    };
                    K::write_sinusoid(row, spec.layout, spec.pairs, i0, s, c, add);
                }
                i0 += n;
            }
        }
    }
    if 2 * spec.pairs < d {
        // An odd width's last column is zero (fairseq and timestep embeddings pad it).
        for row in out.chunks_exact_mut(d) {
            let last = &mut row[d - 1];
            *last = T::from_f32(if add { last.to_f32() + 0.0 } else { 0.0 });
        }
    }
}

/// Fills (or adds) sinusoidal rows on `backend`. Arguments are validated by the caller.
pub(crate) fn sinusoidal<T: Element>(
    backend: Backend,
    out: &mut [T],
    spec: &SinSpec,
    rows: Rows<'_>,
    add: bool,
) {
    match backend {
        Backend::Scalar => sinusoidal_with::<scalar::Scalar, T>(out, spec, rows, add),
        Backend::Portable => sinusoidal_with::<portable::Portable, T>(out, spec, rows, add),
        // SAFETY: Avx2 is only carried after `is_available()` confirmed its features.
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => unsafe { x86_64::avx2::sinusoidal(out, spec, rows, add) },
        // SAFETY: Avx512 is only carried after `is_available()` confirmed its features.
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => unsafe { x86_64::avx512::sinusoidal(out, spec, rows, add) },
        #[cfg(not(target_arch = "x86_64"))]
        Backend::Avx2 | Backend::Avx512 => {
            sinusoidal_with::<portable::Portable, T>(out, spec, rows, add)
        }
    }
}
