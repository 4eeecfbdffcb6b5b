//! Runtime-dispatched x86-64 tiers: AVX2+FMA+F16C and AVX-512F(+F16C).
//!
//! `wide` picks its lanes at compile time and does not widen inside `#[target_feature]`
//! functions, so these tiers are written with `core::arch`. The kernels are generic over an
//! [`Isa`] (the vector types and the handful of operations they need) and marked
//! `#[inline(always)]`; they are instantiated only inside the `#[target_feature]` entry points
//! at the bottom of `avx2.rs` / `avx512.rs`, where LLVM inlines every intrinsic with the
//! tier's features enabled.
//!
//! # Safety model
//! Every `unsafe fn` in this module and its children has exactly one precondition: the CPU
//! supports the features of the [`Isa`] involved. That holds because the only way in is
//! through [`super::Backend`], whose tiers are selected (or accepted by `with_backend`) only
//! after `is_x86_feature_detected!` (std) or `cfg(target_feature)` (no_std) confirmed the
//! features. Memory accesses go through the slice-taking helpers in [`Isa`], which check
//! lengths before touching pointers. Hence `unsafe_op_in_unsafe_fn` is allowed here: the
//! blocks would all repeat the same argument.
#![allow(unsafe_op_in_unsafe_fn)]

pub(crate) mod avx2;
pub(crate) mod avx512;
mod fast;

use super::scalar;
use super::{Kernels, MAX_LANES, Pos, Rounding, SIN_CHUNK, SinCols, Tables};
use crate::element::{Dtype, Element};
use crate::rope::Layout;
use crate::sinusoidal::SinusoidalLayout;
use crate::trig::{
    self, C1, C2, C3, DC, DS, PIO2_1, PIO2_2, PIO2_3, ROUND_MAGIC, S1, S2, S3, TWO_OVER_PI,
};
use core::marker::PhantomData;

/// The vector operations the kernels need. `F` has `LANES` f32 lanes; `D` has `LANES / 2`
/// f64 lanes.
pub(crate) trait Isa: Copy {
    const LANES: usize;
    type F: Copy;
    type D: Copy;

    unsafe fn splat(v: f32) -> Self::F;
    unsafe fn add(a: Self::F, b: Self::F) -> Self::F;
    unsafe fn sub(a: Self::F, b: Self::F) -> Self::F;
    unsafe fn mul(a: Self::F, b: Self::F) -> Self::F;
    /// `a·b + c`, fused.
    unsafe fn fmadd(a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    /// `−(a·b) + c`, fused.
    unsafe fn fnmadd(a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    /// `[x1, x0, x3, x2, …]`.
    unsafe fn swap_pairs(a: Self::F) -> Self::F;
    /// `−a` (sign bit flipped, so `−0.0` for `0.0`, as scalar negation).
    unsafe fn neg(a: Self::F) -> Self::F;
    /// Interleaves `a` and `b`: `([a0, b0, a1, b1, …], […, a_{L−1}, b_{L−1}])`.
    unsafe fn zip(a: Self::F, b: Self::F) -> (Self::F, Self::F);
    /// Applies the quadrant `k mod 4` to the polynomial values `(s, c)`, where `k` sits in the
    /// low mantissa bits of `y = angle·(2/π) + ROUND_MAGIC` (two f64 halves): swap when `k` is
    /// odd, negate sin when `k & 2`, negate cos when `(k + 1) & 2` — the selections
    /// `trig::quadrant` makes, so the results are bitwise the scalar ones.
    unsafe fn quadrant(ylo: Self::D, yhi: Self::D, s: Self::F, c: Self::F) -> (Self::F, Self::F);

    unsafe fn dsplat(v: f64) -> Self::D;
    unsafe fn dadd(a: Self::D, b: Self::D) -> Self::D;
    unsafe fn dsub(a: Self::D, b: Self::D) -> Self::D;
    unsafe fn dmul(a: Self::D, b: Self::D) -> Self::D;
    /// Rounds two f64 vectors to f32 and concatenates them (`lo` in the low lanes).
    unsafe fn narrow(lo: Self::D, hi: Self::D) -> Self::F;
    /// [`Isa::quadrant`] on f64 lanes: `k` in the low mantissa bits of each lane of `y`.
    unsafe fn dquadrant(y: Self::D, s: Self::D, c: Self::D) -> (Self::D, Self::D);

    /// `LANES / 2` f32 from `src[..LANES / 2]`, widened to f64.
    unsafe fn load_widen(src: &[f32]) -> Self::D;
    /// `LANES / 2` f64 from `src[..LANES / 2]`.
    unsafe fn load_d(src: &[f64]) -> Self::D;
    /// `LANES` values from `p` (unaligned). Besides the features: `p .. p + LANES` must be
    /// readable. The slice versions below check that and are what most code uses; the fast
    /// path (`fast.rs`) calls these directly inside windows validated once per call.
    unsafe fn ld_f32(p: *const f32) -> Self::F;
    /// `LANES` values to `p`; `p .. p + LANES` must be writable.
    unsafe fn st_f32(v: Self::F, p: *mut f32);
    /// As [`Isa::ld_f32`], widening f16.
    unsafe fn ld_f16(p: *const half::f16) -> Self::F;
    /// As [`Isa::st_f32`], rounding to f16 (nearest even).
    unsafe fn st_f16(v: Self::F, p: *mut half::f16);
    /// As [`Isa::ld_f32`], widening bf16 (bits shifted into place; a signalling NaN stays
    /// signalling until the first arithmetic operation quiets it).
    unsafe fn ld_bf16(p: *const half::bf16) -> Self::F;
    /// As [`Isa::st_f32`], rounding to bf16 exactly as `half::bf16::from_f32`.
    unsafe fn st_bf16(v: Self::F, p: *mut half::bf16);

    #[inline(always)]
    unsafe fn load_f32(src: &[f32]) -> Self::F {
        Self::ld_f32(src[..Self::LANES].as_ptr())
    }
    #[inline(always)]
    unsafe fn store_f32(v: Self::F, dst: &mut [f32]) {
        Self::st_f32(v, dst[..Self::LANES].as_mut_ptr())
    }
    /// `LANES / 2` f64 to `dst[..LANES / 2]`.
    unsafe fn store_d(v: Self::D, dst: &mut [f64]);
    /// `LANES / 2` i32 from `src[..LANES / 2]`, widened to f64 (exact).
    unsafe fn load_i32_widen(src: &[i32]) -> Self::D;
    /// Rounds to f16 and back (nearest even), like a store and a load.
    unsafe fn round_f16(v: Self::F) -> Self::F;
    /// Rounds to bf16 and back (nearest even, NaN quieted), like a store and a load.
    unsafe fn round_bf16(v: Self::F) -> Self::F;
}

/// `LANES` values of `T` at `p`, as f32.
///
/// # Safety
/// `p .. p + LANES` is readable; the tier's features.
#[inline(always)]
unsafe fn ld<I: Isa, T: Element>(p: *const T) -> I::F {
    match T::DTYPE {
        Dtype::F32 => I::ld_f32(cast::<T, f32>(p)),
        Dtype::F16 => I::ld_f16(cast::<T, half::f16>(p)),
        Dtype::Bf16 => I::ld_bf16(cast::<T, half::bf16>(p)),
    }
}

/// `p` as a pointer to `U`, which `T::DTYPE` says `T` is (`Element` is sealed to three
/// types). Checked like `arch::same`, not assumed; the check folds away.
#[inline(always)]
fn cast<T: 'static, U: 'static>(p: *const T) -> *const U {
    assert!(core::any::TypeId::of::<T>() == core::any::TypeId::of::<U>());
    p.cast()
}

/// Stores `LANES` f32 lanes at `p` as `T`, rounding once to nearest even.
///
/// # Safety
/// `p .. p + LANES` is writable; the tier's features.
#[inline(always)]
unsafe fn st<I: Isa, T: Element>(v: I::F, p: *mut T) {
    match T::DTYPE {
        Dtype::F32 => I::st_f32(v, cast::<T, f32>(p).cast_mut()),
        Dtype::F16 => I::st_f16(v, cast::<T, half::f16>(p).cast_mut()),
        Dtype::Bf16 => I::st_bf16(v, cast::<T, half::bf16>(p).cast_mut()),
    }
}

/// [`ld`] from `src[..LANES]` (bounds-checked).
#[inline(always)]
unsafe fn load<I: Isa, T: Element>(src: &[T]) -> I::F {
    ld::<I, T>(src[..I::LANES].as_ptr())
}

/// [`st`] to `dst[..LANES]` (bounds-checked).
#[inline(always)]
unsafe fn store<I: Isa, T: Element>(v: I::F, dst: &mut [T]) {
    st::<I, T>(v, dst[..I::LANES].as_mut_ptr())
}

/// Lane version of `trig::reduce`: the same operations in the same order (no fusing), so
/// cos/sin are bitwise the scalar ones. Returns `r` and `y = angle·(2/π) + ROUND_MAGIC`,
/// whose low mantissa bits hold the quadrant.
#[inline(always)]
unsafe fn reduce<I: Isa>(a: I::D) -> (I::D, I::D) {
    let magic = I::dsplat(ROUND_MAGIC);
    let y = I::dadd(I::dmul(a, I::dsplat(TWO_OVER_PI)), magic);
    let k = I::dsub(y, magic);
    let r = I::dsub(a, I::dmul(k, I::dsplat(PIO2_1)));
    let r = I::dsub(r, I::dmul(k, I::dsplat(PIO2_2)));
    let r = I::dsub(r, I::dmul(k, I::dsplat(PIO2_3)));
    (r, y)
}

/// The sin/cos polynomials of the reduced argument `r` (`z = r²`), in `trig`'s order.
/// (A function, not a closure: closures do not inherit `#[target_feature]`, so their
/// intrinsics would not inline.)
#[inline(always)]
unsafe fn poly<I: Isa>(r: I::F, z: I::F) -> (I::F, I::F) {
    // ((S3·z + S2)·z + S1)·z·r + r
    let s = I::add(I::mul(I::splat(S3), z), I::splat(S2));
    let s = I::add(I::mul(s, z), I::splat(S1));
    let s = I::add(I::mul(I::mul(s, z), r), r);
    // ((C3·z + C2)·z + C1)·z·z − 0.5·z + 1
    let c = I::add(I::mul(I::splat(C3), z), I::splat(C2));
    let c = I::add(I::mul(c, z), I::splat(C1));
    let c = I::mul(I::mul(c, z), z);
    let c = I::add(I::sub(c, I::mul(I::splat(0.5), z)), I::splat(1.0));
    (s, c)
}

/// `(sin, cos)` of `LANES` f64 angles given as two halves.
#[inline(always)]
unsafe fn sin_cos<I: Isa>(lo: I::D, hi: I::D) -> (I::F, I::F) {
    let (rl, yl) = reduce::<I>(lo);
    let (rh, yh) = reduce::<I>(hi);
    let r = I::narrow(rl, rh);
    let (s, c) = poly::<I>(r, I::mul(r, r));
    I::quadrant(yl, yh, s, c)
}

/// Lane version of [`trig::sin_cos_f64`]: `(sin, cos)` of f64 angles in f64, the same
/// operations in the same order (no fusing).
#[inline(always)]
unsafe fn sin_cos64<I: Isa>(a: I::D) -> (I::D, I::D) {
    let k = I::dsplat;
    let (r, y) = reduce::<I>(a);
    let z = I::dmul(r, r);
    let w = I::dmul(z, z);
    // DS1 + z·(DS2 + z·DS3) + z·w·(DS4 + z·DS5)
    let sr = I::dadd(
        I::dadd(
            k(DS[1]),
            I::dmul(z, I::dadd(k(DS[2]), I::dmul(z, k(DS[3])))),
        ),
        I::dmul(I::dmul(z, w), I::dadd(k(DS[4]), I::dmul(z, k(DS[5])))),
    );
    // r + z·r·(DS0 + z·sr)
    let s = I::dadd(r, I::dmul(I::dmul(z, r), I::dadd(k(DS[0]), I::dmul(z, sr))));
    // z·(DC0 + z·(DC1 + z·DC2)) + w·w·(DC3 + z·(DC4 + z·DC5))
    let c_lo = I::dadd(k(DC[1]), I::dmul(z, k(DC[2])));
    let c_hi = I::dadd(k(DC[4]), I::dmul(z, k(DC[5])));
    let cr = I::dadd(
        I::dmul(z, I::dadd(k(DC[0]), I::dmul(z, c_lo))),
        I::dmul(I::dmul(w, w), I::dadd(k(DC[3]), I::dmul(z, c_hi))),
    );
    // (1 − z/2) + (((1 − (1 − z/2)) − z/2) + z·cr)
    let hz = I::dmul(k(0.5), z);
    let one_hz = I::dsub(k(1.0), hz);
    let tail = I::dadd(I::dsub(I::dsub(k(1.0), one_hz), hz), I::dmul(z, cr));
    let c = I::dadd(one_hz, tail);
    I::dquadrant(y, s, c)
}

/// Stores `v` at `dst[..LANES]` as `T`, or adds it to what is there (one f32 add, one
/// rounding: `scalar::write_sinusoid`'s operations).
#[inline(always)]
unsafe fn put<I: Isa, T: Element>(v: I::F, dst: &mut [T], add: bool) {
    let v = if add { I::add(load::<I, T>(dst), v) } else { v };
    store::<I, T>(v, dst);
}

/// Rows per pass of the sinusoidal recurrence over a span (even): each strip's state makes
/// one round trip through L1 per `PASS` rows. The rows of a pass are written one cache line
/// (16 f32 columns on AVX2) at a time, so `PASS` lines at the row stride are live in L1 at
/// once; 8 measured faster than 4 and 16 in a stand-alone kernel (4096 × 512 f32, Zen 3).
const PASS: usize = 8;

/// Row `jj` of a pass (block row; `base` is block row `j0`), columns `col .. col + V·LANES/2`,
/// from the `V` f64 vectors `y`, rounded to f32 and to `T`. Skipped unless `j0 ≤ jj < j1`
/// (`FULL`: the whole pass is inside, so the test compiles away).
///
/// # Safety
/// Block rows `j0 .. j1` of `d` values start at `base`, and `col + V·LANES/2 ≤ d`; `V` even;
/// the tier's features.
#[inline(always)]
unsafe fn sin_row<I: Isa, T: Element, const V: usize, const FULL: bool>(
    base: *mut T,
    (d, col): (usize, usize),
    y: &[I::D; V],
    (jj, j0, j1): (usize, usize, usize),
) {
    if FULL || (jj >= j0 && jj < j1) {
        // SAFETY: `j0 ≤ jj < j1` (tested, or `sin_pass` asserted it for the whole pass), so
        // the row is one of those at `base`; its columns `col .. col + V·LANES/2` end by `d`
        // (the caller's precondition, which `sin_rows` asserts once per span).
        let row = base.add((jj - j0) * d + col);
        for v in (0..V).step_by(2) {
            st::<I, T>(I::narrow(y[v], y[v + 1]), row.add(v * I::LANES / 2));
        }
    }
}

/// One pass of the recurrence ([`SinCols`]) over one strip: span columns `c .. c + V·LANES/2`,
/// block rows `j .. j + PASS`, the state (values at rows `j`, `j + 1`) loaded from and stored
/// back to `ya`, `yb`. Rows outside `j0 .. j1` are stepped through but not written; `FULL`:
/// the whole pass lies inside them (asserted).
///
/// # Safety
/// As [`sin_row`] for columns `sp.col0 + c ..` (`c + V·LANES/2` ≤ the span's length, which
/// `sp.col0` + it ≤ `d`); the tier's features.
#[inline(always)]
unsafe fn sin_pass<I: Isa, T: Element, const V: usize, const FULL: bool>(
    base: *mut T,
    sp: &SinCols<'_>,
    (ya, yb): (&mut [f64], &mut [f64]),
    c: usize,
    (j, j0, j1): (usize, usize, usize),
) {
    assert!(!FULL || (j >= j0 && j + PASS <= j1));
    let h = I::LANES / 2;
    let k: [I::D; V] = core::array::from_fn(|v| I::load_d(&sp.k[c + v * h..]));
    let mut a: [I::D; V] = core::array::from_fn(|v| I::load_d(&ya[c + v * h..]));
    let mut b: [I::D; V] = core::array::from_fn(|v| I::load_d(&yb[c + v * h..]));
    let dc = (sp.d, sp.col0 + c);
    for g in (0..PASS).step_by(2) {
        sin_row::<I, T, V, FULL>(base, dc, &a, (j + g, j0, j1));
        for v in 0..V {
            a[v] = I::dsub(I::dmul(k[v], b[v]), a[v]);
        }
        sin_row::<I, T, V, FULL>(base, dc, &b, (j + g + 1, j0, j1));
        for v in 0..V {
            b[v] = I::dsub(I::dmul(k[v], a[v]), b[v]);
        }
    }
    for v in 0..V {
        I::store_d(a[v], &mut ya[c + v * h..]);
        I::store_d(b[v], &mut yb[c + v * h..]);
    }
}

/// [`sin_pass`] over a span's strips `c .. cend` of `V·LANES/2` columns.
#[inline(always)]
unsafe fn sin_strips<I: Isa, T: Element, const V: usize, const FULL: bool>(
    base: *mut T,
    sp: &SinCols<'_>,
    ya: &mut [f64],
    yb: &mut [f64],
    (c, cend): (usize, usize),
    js: (usize, usize, usize),
) {
    for c in (c..cend).step_by(V * I::LANES / 2) {
        sin_pass::<I, T, V, FULL>(base, sp, (&mut *ya, &mut *yb), c, js);
    }
}

/// `v` rounded to `T` and widened back.
#[inline(always)]
unsafe fn round_t<I: Isa, T: Element>(v: I::F) -> I::F {
    match T::DTYPE {
        Dtype::F32 => v,
        Dtype::F16 => I::round_f16(v),
        Dtype::Bf16 => I::round_bf16(v),
    }
}

/// Kernels of one ISA.
pub(crate) struct Tier<I>(PhantomData<I>);

impl<I: Isa> Tier<I> {
    /// cos/sin of `LANES` pairs at positions `(plo, phi)` (two f64 halves).
    #[inline(always)]
    unsafe fn cos_sin_block(
        plo: I::D,
        phi: I::D,
        w: &[f32],
        cs: I::F,
        ss: I::F,
        cos: &mut [f32],
        sin: &mut [f32],
    ) {
        let h = I::LANES / 2;
        let lo = I::dmul(plo, I::load_widen(&w[..h]));
        let hi = I::dmul(phi, I::load_widen(&w[h..]));
        let (s, c) = sin_cos::<I>(lo, hi);
        I::store_f32(I::mul(c, cs), cos);
        I::store_f32(I::mul(s, ss), sin);
    }

    /// `x·c ∓ y·s` under a rounding mode (`minus` picks the sign; the interleaved tables
    /// carry it in `s` instead). Every layout forms exactly these expressions per pair, which
    /// keeps interleaved and rotate_half bitwise equivalent.
    #[inline(always)]
    unsafe fn rot<T: Element>(
        x: I::F,
        c: I::F,
        y: I::F,
        s: I::F,
        minus: bool,
        round: Rounding,
    ) -> I::F {
        let xc = I::mul(x, c);
        match (round, minus) {
            // Fused: one rounding of y·s ± round(x·c).
            (Rounding::Once, true) => I::fnmadd(y, s, xc),
            (Rounding::Once, false) => I::fmadd(y, s, xc),
            // HF's unfused f32 ops, with (eager) or without (upcast) rounding to T between.
            (Rounding::HfUpcast, true) => I::sub(xc, I::mul(y, s)),
            (Rounding::HfUpcast, false) => I::add(xc, I::mul(y, s)),
            (Rounding::HfEager, minus) => {
                let (xc, ys) = (round_t::<I, T>(xc), round_t::<I, T>(I::mul(y, s)));
                round_t::<I, T>(if minus {
                    I::sub(xc, ys)
                } else {
                    I::add(xc, ys)
                })
            }
        }
    }

    /// One block of a rotate_half head: `a[..LANES]`, `b[..LANES]`.
    #[inline(always)]
    unsafe fn rot_half_block<T: Element>(
        a: &mut [T],
        b: &mut [T],
        c: I::F,
        s: I::F,
        round: Rounding,
    ) {
        let (x, y) = (load::<I, T>(a), load::<I, T>(b));
        store::<I, T>(Self::rot::<T>(x, c, y, s, true, round), a);
        store::<I, T>(Self::rot::<T>(y, c, x, s, false, round), b);
    }

    /// One block of an interleaved head: `x[..LANES]` with expanded tables (`sd` signed).
    #[inline(always)]
    unsafe fn rot_inter_block<T: Element>(x: &mut [T], cd: I::F, sd: I::F, round: Rounding) {
        let v = load::<I, T>(x);
        store::<I, T>(Self::rot::<T>(v, cd, I::swap_pairs(v), sd, false, round), x);
    }
}

/// Copies `src` into the front of a zeroed `LANES`-wide buffer (tails run the vector code on
/// padding so that every element goes through the same operations).
#[inline(always)]
fn pad<T: Copy + Default>(src: &[T]) -> [T; MAX_LANES] {
    let mut buf = [T::default(); MAX_LANES];
    buf[..src.len()].copy_from_slice(src);
    buf
}

/// The last `n − nl` (< LANES) pairs of a rotate_half window, through the vector code on a
/// zero-padded copy so that they get the same operations as the full blocks.
#[inline(always)]
unsafe fn rotate_half_tail<I: Isa, T: Element>(
    win: &mut [T],
    half: usize,
    pair0: usize,
    nl: usize,
    n: usize,
    tab: &Tables,
    round: Rounding,
) {
    let l = I::LANES;
    let (lo, hi) = win.split_at_mut(half);
    let (a, b) = (
        &mut lo[pair0 + nl..pair0 + n],
        &mut hi[pair0 + nl..pair0 + n],
    );
    let (mut at, mut bt) = (pad(a), pad(b));
    let c = I::load_f32(&tab.c[nl..nl + l]);
    let s = I::load_f32(&tab.s[nl..nl + l]);
    Tier::<I>::rot_half_block(&mut at[..l], &mut bt[..l], c, s, round);
    a.copy_from_slice(&at[..n - nl]);
    b.copy_from_slice(&bt[..n - nl]);
}

/// The last `m − ml` (< LANES) values of an interleaved run `x[..m]`, padded likewise.
#[inline(always)]
unsafe fn interleaved_tail<I: Isa, T: Element>(
    x: &mut [T],
    ml: usize,
    m: usize,
    tab: &Tables,
    round: Rounding,
) {
    let l = I::LANES;
    let mut xt = pad(&x[ml..m]);
    let c = I::load_f32(&tab.c[ml..ml + l]);
    let s = I::load_f32(&tab.s[ml..ml + l]);
    Tier::<I>::rot_inter_block(&mut xt[..l], c, s, round);
    x[ml..m].copy_from_slice(&xt[..m - ml]);
}

impl<I: Isa> Kernels for Tier<I> {
    #[inline(always)]
    fn cos_sin(p: Pos<'_>, w: &[f32], cs: f32, ss: f32, cos: &mut [f32], sin: &mut [f32]) {
        let l = I::LANES;
        let h = l / 2;
        let n = w.len();
        // SAFETY: Tier<I> is only instantiated inside I's `#[target_feature]` entry points,
        // which run only on CPUs with I's features (module docs).
        unsafe {
            let (csv, ssv) = (I::splat(cs), I::splat(ss));
            let mut k = 0;
            while k < n {
                let m = l.min(n - k);
                let (plo, phi, pt) = match p {
                    Pos::Splat(p) => (I::dsplat(p as f64), I::dsplat(p as f64), [0; MAX_LANES]),
                    Pos::PerPair(pp) => {
                        let pt = pad(&pp[k..k + m]);
                        (
                            I::load_i32_widen(&pt[..h]),
                            I::load_i32_widen(&pt[h..l]),
                            pt,
                        )
                    }
                };
                let _ = pt;
                if m == l {
                    let (c, s) = (&mut cos[k..k + l], &mut sin[k..k + l]);
                    Self::cos_sin_block(plo, phi, &w[k..k + l], csv, ssv, c, s);
                } else {
                    let wt = pad(&w[k..]);
                    let (mut ct, mut st) = ([0.0f32; MAX_LANES], [0.0f32; MAX_LANES]);
                    Self::cos_sin_block(plo, phi, &wt[..l], csv, ssv, &mut ct[..l], &mut st[..l]);
                    cos[k..].copy_from_slice(&ct[..m]);
                    sin[k..].copy_from_slice(&st[..m]);
                }
                k += m;
            }
        }
    }

    #[inline(always)]
    fn sin_cos_f64(p: f64, w: &[f64], sin: &mut [f32], cos: &mut [f32]) {
        let l = I::LANES;
        let h = l / 2;
        let n = w.len();
        // SAFETY: as in `cos_sin`.
        unsafe {
            let pv = I::dsplat(p);
            let mut k = 0;
            while k < n {
                let m = l.min(n - k);
                let (lo, hi) = if m == l {
                    let w = &w[k..k + l];
                    (I::load_d(&w[..h]), I::load_d(&w[h..]))
                } else {
                    let wt = pad(&w[k..k + m]);
                    (I::load_d(&wt[..h]), I::load_d(&wt[h..l]))
                };
                let (s, c) = sin_cos::<I>(I::dmul(pv, lo), I::dmul(pv, hi));
                if m == l {
                    I::store_f32(s, &mut sin[k..k + l]);
                    I::store_f32(c, &mut cos[k..k + l]);
                } else {
                    let (mut st, mut ct) = ([0.0f32; MAX_LANES], [0.0f32; MAX_LANES]);
                    I::store_f32(s, &mut st[..l]);
                    I::store_f32(c, &mut ct[..l]);
                    sin[k..k + m].copy_from_slice(&st[..m]);
                    cos[k..k + m].copy_from_slice(&ct[..m]);
                }
                k += m;
            }
        }
    }

    #[inline(always)]
    fn sin_cos_f64_wide(p: f64, w: &[f64], sin: &mut [f64], cos: &mut [f64]) {
        let h = I::LANES / 2;
        let n = w.len();
        let nh = n / h * h;
        // SAFETY: as in `cos_sin`.
        unsafe {
            let pv = I::dsplat(p);
            for k in (0..nh).step_by(h) {
                let (s, c) = sin_cos64::<I>(I::dmul(pv, I::load_d(&w[k..k + h])));
                I::store_d(s, &mut sin[k..k + h]);
                I::store_d(c, &mut cos[k..k + h]);
            }
        }
        // The same operations lane by lane.
        for k in nh..n {
            (sin[k], cos[k]) = trig::sin_cos_f64(p * w[k]);
        }
    }

    #[inline(always)]
    fn sin_rows<T: Element>(rows: &mut [T], sp: &SinCols<'_>, j0: usize, j1: usize) {
        let (l, m) = (I::LANES, sp.k.len());
        // Strips of 2·LANES columns (four f64 vectors, a cache line of f32 on AVX2), then one
        // of LANES; fewer than LANES columns go to the reference.
        let m4 = m / (2 * l) * (2 * l);
        let m2 = m4 + (m - m4) / l * l;
        // Every row and column `sin_row` may store to is inside `rows`.
        assert!(sp.col0 + m <= sp.d && rows.len() >= (j1 - j0) * sp.d);
        assert!(sp.y0.len() == m && sp.y1.len() == m);
        let mut ya = [0.0f64; 2 * SIN_CHUNK];
        let mut yb = [0.0f64; 2 * SIN_CHUNK];
        ya[..m].copy_from_slice(sp.y0);
        yb[..m].copy_from_slice(sp.y1);
        let base = rows.as_mut_ptr();
        let mut j = 0;
        while j < j1 {
            let (ya, yb, js) = (&mut ya[..], &mut yb[..], (j, j0, j1));
            // SAFETY: the tier's features as in `cos_sin`; the stores as asserted above.
            unsafe {
                if j >= j0 && j + PASS <= j1 {
                    sin_strips::<I, T, 4, true>(base, sp, ya, yb, (0, m4), js);
                    sin_strips::<I, T, 2, true>(base, sp, ya, yb, (m4, m2), js);
                } else {
                    // Starts before `j0` or ends past `j1` (a fill's first or last pass).
                    sin_strips::<I, T, 4, false>(base, sp, ya, yb, (0, m4), js);
                    sin_strips::<I, T, 2, false>(base, sp, ya, yb, (m4, m2), js);
                }
            }
            j += PASS;
        }
        // Fewer than LANES columns left: the reference's operations, one column at a time.
        for c in m2..m {
            scalar::sin_col(rows, sp, c, j0, j1);
        }
    }

    #[inline(always)]
    fn write_sinusoid<T: Element>(
        row: &mut [T],
        layout: SinusoidalLayout,
        pairs: usize,
        i0: usize,
        sin: &[f32],
        cos: &[f32],
        add: bool,
    ) {
        let l = I::LANES;
        let n = sin.len();
        let nl = n / l * l;
        // SAFETY: as in `cos_sin`.
        unsafe {
            for k in (0..nl).step_by(l) {
                let (s, c) = (I::load_f32(&sin[k..]), I::load_f32(&cos[k..]));
                let i = i0 + k;
                match layout {
                    SinusoidalLayout::Interleaved => {
                        let (a, b) = I::zip(s, c);
                        put::<I, T>(a, &mut row[2 * i..], add);
                        put::<I, T>(b, &mut row[2 * i + l..], add);
                    }
                    SinusoidalLayout::Split => {
                        put::<I, T>(s, &mut row[i..], add);
                        put::<I, T>(c, &mut row[pairs + i..], add);
                    }
                    SinusoidalLayout::SplitCosFirst => {
                        put::<I, T>(c, &mut row[i..], add);
                        put::<I, T>(s, &mut row[pairs + i..], add);
                    }
                }
            }
        }
        if nl < n {
            let (s, c) = (&sin[nl..], &cos[nl..]);
            super::scalar::write_sinusoid(row, layout, pairs, i0 + nl, s, c, add);
        }
    }

    #[inline(always)]
    fn rotate_head<T: Element>(
        win: &mut [T],
        half: usize,
        layout: Layout,
        pair0: usize,
        n: usize,
        tab: &Tables,
        round: Rounding,
    ) {
        let l = I::LANES;
        // SAFETY: as in `cos_sin`.
        unsafe {
            match layout {
                Layout::RotateHalf => {
                    let nl = n / l * l;
                    let (lo, hi) = win.split_at_mut(half);
                    let a = &mut lo[pair0..pair0 + n];
                    let b = &mut hi[pair0..pair0 + n];
                    for ((a, b), (c, s)) in a
                        .chunks_exact_mut(l)
                        .zip(b.chunks_exact_mut(l))
                        .zip(tab.c.chunks_exact(l).zip(tab.s.chunks_exact(l)))
                    {
                        Self::rot_half_block(a, b, I::load_f32(c), I::load_f32(s), round);
                    }
                    if nl < n {
                        rotate_half_tail::<I, T>(win, half, pair0, nl, n, tab, round);
                    }
                }
                Layout::Interleaved => {
                    let m = 2 * n;
                    let ml = m / l * l;
                    let x = &mut win[2 * pair0..2 * pair0 + m];
                    for (x, (c, s)) in x
                        .chunks_exact_mut(l)
                        .zip(tab.c.chunks_exact(l).zip(tab.s.chunks_exact(l)))
                    {
                        Self::rot_inter_block(x, I::load_f32(c), I::load_f32(s), round);
                    }
                    if ml < m {
                        interleaved_tail::<I, T>(x, ml, m, tab, round);
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn axpb<T: Element>(x: &mut [T], a: f32, b: f32) {
        let l = I::LANES;
        // SAFETY: as in `cos_sin`.
        unsafe {
            let (av, bv) = (I::splat(a), I::splat(b));
            let mut chunks = x.chunks_exact_mut(l);
            for c in &mut chunks {
                store::<I, T>(I::fmadd(load::<I, T>(c), av, bv), c);
            }
            let rest = chunks.into_remainder();
            if !rest.is_empty() {
                let mut t = pad(rest);
                store::<I, T>(I::fmadd(load::<I, T>(&t[..l]), av, bv), &mut t[..l]);
                let k = rest.len();
                rest.copy_from_slice(&t[..k]);
            }
        }
    }
}

/// Declares the `#[target_feature]` entry points of a tier: the generic drivers of
/// `arch/mod.rs` instantiated with `Tier<$isa>`.
macro_rules! entry_points {
    ($isa:ty, $features:literal) => {
        use crate::arch::{Job, Rows, SinSpec, Target};
        use crate::element::Element;

        type K = crate::arch::x86_64::Tier<$isa>;

        /// # Safety
        /// The CPU supports the tier's features.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn rope<T: Element>(targets: &mut [Target<'_, T>], job: &Job<'_>) {
            if !crate::arch::x86_64::fast::rope::<$isa, T>(targets, job) {
                crate::arch::rope_with::<K, T>(targets, job)
            }
        }

        /// # Safety
        /// The CPU supports the tier's features.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn cos_sin_table(
            inv_freq: &[f32],
            positions: &[i32],
            cs: f32,
            ss: f32,
            cos: &mut [f32],
            sin: &mut [f32],
        ) {
            crate::arch::cos_sin_table_with::<K>(inv_freq, positions, cs, ss, cos, sin)
        }

        /// # Safety
        /// The CPU supports the tier's features.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn sinusoidal<T: Element>(
            out: &mut [T],
            spec: &SinSpec,
            rows: Rows<'_>,
            add: bool,
        ) {
            crate::arch::sinusoidal_with::<K, T>(out, spec, rows, add)
        }

        /// # Safety
        /// The CPU supports the tier's features.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn axpb<T: Element>(x: &mut [T], a: f32, b: f32) {
            <K as crate::arch::Kernels>::axpb(x, a, b)
        }
    };
}
pub(crate) use entry_points;
