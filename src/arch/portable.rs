//! The portable backend: `wide` lanes, whatever SIMD the build targets (SSE2 on x86-64, NEON
//! on aarch64, simd128 on wasm32, scalar fallbacks elsewhere).
//!
//! Every lane performs exactly the operations of [`super::scalar`] in the same order, with no
//! fused multiply-add, so this backend is bitwise equal to the reference: the differential
//! tests check equality, not a tolerance.

use super::scalar;
use super::{Kernels, Pos, Rounding, Tables, round_to, same, same_mut};
use crate::element::{Dtype, Element};
use crate::rope::Layout;
use crate::trig::{self, C1, C2, C3, PIO2_1, PIO2_2, PIO2_3, ROUND_MAGIC, S1, S2, S3, TWO_OVER_PI};
use wide::{f32x4, f32x8, f64x4};

pub(crate) struct Portable;

/// Lane version of [`trig::sin_cos`]: `(sin, cos)` of four f64 angles.
#[inline(always)]
fn sin_cos4(a: f64x4) -> (f32x4, f32x4) {
    let k = (a * TWO_OVER_PI + ROUND_MAGIC) - ROUND_MAGIC;
    let r = ((a - k * PIO2_1) - k * PIO2_2) - k * PIO2_3;
    let k4 = ((k * 0.25 - 0.375) + ROUND_MAGIC) - ROUND_MAGIC;
    let q = k - 4.0 * k4;
    let (ra, qa) = (r.to_array(), q.to_array());
    let r = f32x4::new([ra[0] as f32, ra[1] as f32, ra[2] as f32, ra[3] as f32]);
    let q = f32x4::new([qa[0] as f32, qa[1] as f32, qa[2] as f32, qa[3] as f32]);
    let z = r * r;
    let s = ((S3 * z + S2) * z + S1) * z * r + r;
    let c = ((C3 * z + C2) * z + C1) * z * z - 0.5 * z + 1.0;
    let (one, two, three) = (f32x4::splat(1.0), f32x4::splat(2.0), f32x4::splat(3.0));
    let q1 = q.simd_eq(one);
    let q2 = q.simd_eq(two);
    let odd = q1 | q.simd_eq(three);
    let (s, c) = (odd.select(c, s), odd.select(s, c));
    let s = q.simd_ge(two).select(-s, s);
    let c = (q1 | q2).select(-c, c);
    (s, c)
}

/// Eight elements widened to f32 lanes (f32 directly; bf16 by a shift; f16 through `half`).
#[inline(always)]
fn load8<T: Element>(src: &[T]) -> f32x8 {
    let src = &src[..8];
    match T::DTYPE {
        Dtype::F32 => f32x8::new(same::<T, f32>(src).try_into().unwrap()),
        _ => f32x8::new(core::array::from_fn(|i| src[i].to_f32())),
    }
}

/// Eight f32 lanes stored as `T`, rounded once to nearest even.
#[inline(always)]
fn store8<T: Element>(v: f32x8, dst: &mut [T]) {
    let dst = &mut dst[..8];
    match T::DTYPE {
        Dtype::F32 => same_mut::<T, f32>(dst).copy_from_slice(&v.to_array()),
        _ => {
            for (d, v) in dst.iter_mut().zip(v.to_array()) {
                *d = T::from_f32(v);
            }
        }
    }
}

#[inline(always)]
fn f32s(src: &[f32]) -> f32x8 {
    f32x8::new(src[..8].try_into().unwrap())
}

/// Lane version of [`scalar::rot_mode`], exactly the same operations per lane.
#[inline(always)]
fn rot8<T: Element>(x: f32x8, c: f32x8, y_s: f32x8, round: Rounding) -> f32x8 {
    // x·c + y·s' where s' already carries the sign: (a·c − b·s) as a·c + b·(−s).
    match round {
        Rounding::HfEager => {
            let r = |v: f32x8| f32x8::new(v.to_array().map(round_to::<T>));
            r(r(x * c) + r(y_s))
        }
        Rounding::Once | Rounding::HfUpcast => x * c + y_s,
    }
}

impl Kernels for Portable {
    #[inline(always)]
    fn cos_sin(p: Pos<'_>, w: &[f32], cs: f32, ss: f32, cos: &mut [f32], sin: &mut [f32]) {
        let n4 = w.len() / 4 * 4;
        for (k, ((w, c), s)) in w[..n4]
            .chunks_exact(4)
            .zip(cos[..n4].chunks_exact_mut(4))
            .zip(sin[..n4].chunks_exact_mut(4))
            .enumerate()
        {
            let pv = match p {
                Pos::Splat(p) => f64x4::splat(p as f64),
                Pos::PerPair(pp) => {
                    let pp = &pp[4 * k..4 * k + 4];
                    f64x4::new([pp[0] as f64, pp[1] as f64, pp[2] as f64, pp[3] as f64])
                }
            };
            let wv = f64x4::new([w[0] as f64, w[1] as f64, w[2] as f64, w[3] as f64]);
            let (sv, cv) = sin_cos4(pv * wv);
            c.copy_from_slice(&(cv * cs).to_array());
            s.copy_from_slice(&(sv * ss).to_array());
        }
        let p = match p {
            Pos::PerPair(pp) => Pos::PerPair(&pp[n4..]),
            splat => splat,
        };
        scalar::Scalar::cos_sin(p, &w[n4..], cs, ss, &mut cos[n4..], &mut sin[n4..]);
    }

    #[inline(always)]
    fn sin_cos_f64(p: f64, w: &[f64], sin: &mut [f32], cos: &mut [f32]) {
        let pv = f64x4::splat(p);
        let n4 = w.len() / 4 * 4;
        for ((w, s), c) in w[..n4]
            .chunks_exact(4)
            .zip(sin[..n4].chunks_exact_mut(4))
            .zip(cos[..n4].chunks_exact_mut(4))
        {
            let (sv, cv) = sin_cos4(pv * f64x4::new([w[0], w[1], w[2], w[3]]));
            s.copy_from_slice(&sv.to_array());
            c.copy_from_slice(&cv.to_array());
        }
        for ((&wi, s), c) in w[n4..].iter().zip(&mut sin[n4..]).zip(&mut cos[n4..]) {
            (*s, *c) = trig::sin_cos(p * wi);
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
        match layout {
            Layout::RotateHalf => {
                let n8 = n / 8 * 8;
                let (lo, hi) = win.split_at_mut(half);
                let a = &mut lo[pair0..pair0 + n];
                let b = &mut hi[pair0..pair0 + n];
                for k in (0..n8).step_by(8) {
                    let (c, s) = (f32s(&tab.c[k..]), f32s(&tab.s[k..]));
                    let (x, y) = (load8(&a[k..]), load8(&b[k..]));
                    store8(rot8::<T>(x, c, y * -s, round), &mut a[k..]);
                    store8(rot8::<T>(y, c, x * s, round), &mut b[k..]);
                }
                for k in n8..n {
                    let (x, y) = (a[k].to_f32(), b[k].to_f32());
                    let (u, v) = scalar::rot_mode::<T>(x, y, tab.c[k], tab.s[k], round);
                    a[k] = T::from_f32(u);
                    b[k] = T::from_f32(v);
                }
            }
            Layout::Interleaved => {
                let m = 2 * n;
                let m8 = m / 8 * 8;
                let x = &mut win[2 * pair0..2 * pair0 + m];
                for k in (0..m8).step_by(8) {
                    let v = load8(&x[k..]);
                    let a = v.to_array();
                    let sw = f32x8::new([a[1], a[0], a[3], a[2], a[5], a[4], a[7], a[6]]);
                    let (c, s) = (f32s(&tab.c[k..]), f32s(&tab.s[k..]));
                    store8(rot8::<T>(v, c, sw * s, round), &mut x[k..]);
                }
                for k in (m8..m).step_by(2) {
                    let (c, s) = (tab.c[k], tab.s[k + 1]);
                    let (u, v) =
                        scalar::rot_mode::<T>(x[k].to_f32(), x[k + 1].to_f32(), c, s, round);
                    x[k] = T::from_f32(u);
                    x[k + 1] = T::from_f32(v);
                }
            }
        }
    }

    #[inline(always)]
    fn axpb<T: Element>(x: &mut [T], a: f32, b: f32) {
        let (av, bv) = (f32x8::splat(a), f32x8::splat(b));
        let mut chunks = x.chunks_exact_mut(8);
        for c in &mut chunks {
            store8(load8(c) * av + bv, c);
        }
        scalar::Scalar::axpb(chunks.into_remainder(), a, b);
    }
}
