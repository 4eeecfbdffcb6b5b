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
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // Known at compile time (e.g. `-C target-cpu=native`): no detection needed.
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
        #[cfg(feature = "std")]
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

/// Where the cos/sin of each token come from.
#[derive(Clone, Copy)]
pub(crate) enum Angles<'a> {
    /// Exact angles `p · inv_freq[i]`; cos scaled by `cos_scale`, sin by `sin_scale`.
    Freq {
        inv_freq: &'a [f32],
        positions: &'a [i32],
        cos_scale: f32,
        sin_scale: f32,
    },
    /// Caller tables, `tokens × half` each.
    Table { cos: &'a [f32], sin: &'a [f32] },
}

/// The kernels a backend provides. All slices are pre-validated by the caller.
pub(crate) trait Kernels {
    /// `cos[i] = cos(p·w[i])·cs`, `sin[i] = sin(p·w[i])·ss`, the angle exact in f64.
    fn cos_sin(p: i32, w: &[f32], cs: f32, ss: f32, cos: &mut [f32], sin: &mut [f32]);
    /// `sin[i], cos[i]` of `p·w[i]` in f64 (sinusoidal tables).
    fn sin_cos_f64(p: f64, w: &[f64], sin: &mut [f32], cos: &mut [f32]);
    /// Rotates pairs `pair0 .. pair0 + cos.len()` of every head in `row`
    /// (`row.len() == n_heads · head_dim`); `half = rotary_dim / 2`.
    fn rotate<T: Element>(
        row: &mut [T],
        head_dim: usize,
        half: usize,
        layout: Layout,
        pair0: usize,
        cos: &[f32],
        sin: &[f32],
    );
}

/// The RoPE driver: per token, per chunk of pairs, cos/sin once, then every head.
#[inline(always)]
pub(crate) fn rope_with<K: Kernels, T: Element>(
    x: &mut [T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    layout: Layout,
    angles: Angles<'_>,
) {
    let half = rotary_dim / 2;
    let row_len = n_heads * head_dim;
    if row_len == 0 {
        return;
    }
    let mut cbuf = [0.0f32; CHUNK];
    let mut sbuf = [0.0f32; CHUNK];
    for (t, row) in x.chunks_exact_mut(row_len).enumerate() {
        let mut p0 = 0;
        while p0 < half {
            let n = CHUNK.min(half - p0);
            let (c, s): (&[f32], &[f32]) = match angles {
                Angles::Freq {
                    inv_freq,
                    positions,
                    cos_scale,
                    sin_scale,
                } => {
                    K::cos_sin(
                        positions[t],
                        &inv_freq[p0..p0 + n],
                        cos_scale,
                        sin_scale,
                        &mut cbuf[..n],
                        &mut sbuf[..n],
                    );
                    (&cbuf[..n], &sbuf[..n])
                }
                Angles::Table { cos, sin } => {
                    let at = t * half + p0;
                    (&cos[at..at + n], &sin[at..at + n])
                }
            };
            K::rotate(row, head_dim, half, layout, p0, c, s);
            p0 += n;
        }
    }
}

/// Runs RoPE on `backend`. Arguments are validated by the caller.
pub(crate) fn rope<T: Element>(
    backend: Backend,
    x: &mut [T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    layout: Layout,
    angles: Angles<'_>,
) {
    match backend {
        Backend::Scalar => {
            rope_with::<scalar::Scalar, T>(x, n_heads, head_dim, rotary_dim, layout, angles)
        }
        Backend::Portable => {
            rope_with::<portable::Portable, T>(x, n_heads, head_dim, rotary_dim, layout, angles)
        }
        // SAFETY: a Rope/Sinusoidal/table call only carries Avx2 after `is_available()`
        // confirmed AVX2+FMA+F16C (Backend::active or with_backend).
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => unsafe {
            x86_64::avx2::rope(x, n_heads, head_dim, rotary_dim, layout, angles)
        },
        // SAFETY: as above, for AVX-512F+AVX2+FMA+F16C.
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => unsafe {
            x86_64::avx512::rope(x, n_heads, head_dim, rotary_dim, layout, angles)
        },
        #[cfg(not(target_arch = "x86_64"))]
        Backend::Avx2 | Backend::Avx512 => {
            rope_with::<portable::Portable, T>(x, n_heads, head_dim, rotary_dim, layout, angles)
        }
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
        K::cos_sin(p, inv_freq, cs, ss, c, s);
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

/// Rows of a sinusoidal call: a run of consecutive positions or an explicit list.
#[derive(Clone, Copy)]
pub(crate) enum Rows<'a> {
    From(u32),
    List(&'a [i32]),
}

impl Rows<'_> {
    #[inline(always)]
    fn position(&self, r: usize) -> f64 {
        match *self {
            Rows::From(first) => first as f64 + r as f64,
            Rows::List(p) => p[r] as f64,
        }
    }
}

/// Sinusoidal driver: column blocks of `CHUNK` frequencies (computed once per call), then
/// every row.
#[inline(always)]
pub(crate) fn sinusoidal_with<K: Kernels, T: Element>(
    out: &mut [T],
    d_model: usize,
    base: f64,
    layout: SinusoidalLayout,
    rows: Rows<'_>,
    add: bool,
) {
    let half = d_model / 2;
    let mut w = [0.0f64; CHUNK];
    let mut sbuf = [0.0f32; CHUNK];
    let mut cbuf = [0.0f32; CHUNK];
    let mut i0 = 0;
    while i0 < half {
        let n = CHUNK.min(half - i0);
        for (k, wk) in w[..n].iter_mut().enumerate() {
            *wk = crate::sinusoidal::frequency(base, i0 + k, d_model);
        }
        for (r, row) in out.chunks_exact_mut(d_model).enumerate() {
            K::sin_cos_f64(rows.position(r), &w[..n], &mut sbuf[..n], &mut cbuf[..n]);
            scalar::write_sinusoid(row, layout, i0, &sbuf[..n], &cbuf[..n], add);
        }
        i0 += n;
    }
}

/// Fills (or adds) sinusoidal rows on `backend`. Arguments are validated by the caller.
pub(crate) fn sinusoidal<T: Element>(
    backend: Backend,
    out: &mut [T],
    d_model: usize,
    base: f64,
    layout: SinusoidalLayout,
    rows: Rows<'_>,
    add: bool,
) {
    match backend {
        Backend::Scalar => {
            sinusoidal_with::<scalar::Scalar, T>(out, d_model, base, layout, rows, add)
        }
        Backend::Portable => {
            sinusoidal_with::<portable::Portable, T>(out, d_model, base, layout, rows, add)
        }
        // SAFETY: Avx2 is only carried after `is_available()` confirmed its features.
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => unsafe { x86_64::avx2::sinusoidal(out, d_model, base, layout, rows, add) },
        // SAFETY: Avx512 is only carried after `is_available()` confirmed its features.
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => unsafe {
            x86_64::avx512::sinusoidal(out, d_model, base, layout, rows, add)
        },
        #[cfg(not(target_arch = "x86_64"))]
        Backend::Avx2 | Backend::Avx512 => {
            sinusoidal_with::<portable::Portable, T>(out, d_model, base, layout, rows, add)
        }
    }
}
