//! The portable backend: `wide` lanes, whatever SIMD the build targets (SSE2 on x86-64, NEON
//! on aarch64, simd128 on wasm32, scalar fallbacks elsewhere).
//!
//! Every lane performs exactly the operations of [`super::scalar`] in the same order, with no
//! fused multiply-add, so this backend is bitwise equal to the reference: the differential
//! tests check equality, not a tolerance.

use super::Kernels;
use super::scalar::{self, rot};
use crate::element::Element;
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

#[inline(always)]
fn load8<T: Element>(src: &[T]) -> f32x8 {
    f32x8::new(core::array::from_fn(|i| src[i].to_f32()))
}

#[inline(always)]
fn store8<T: Element>(v: f32x8, dst: &mut [T]) {
    for (d, v) in dst[..8].iter_mut().zip(v.to_array()) {
        *d = T::from_f32(v);
    }
}

#[inline(always)]
fn f32s(src: &[f32]) -> f32x8 {
    f32x8::new(core::array::from_fn(|i| src[i]))
}

impl Kernels for Portable {
    #[inline(always)]
    fn cos_sin(p: i32, w: &[f32], cs: f32, ss: f32, cos: &mut [f32], sin: &mut [f32]) {
        let pv = f64x4::splat(p as f64);
        let n4 = w.len() / 4 * 4;
        for ((w, c), s) in w[..n4]
            .chunks_exact(4)
            .zip(cos[..n4].chunks_exact_mut(4))
            .zip(sin[..n4].chunks_exact_mut(4))
        {
            let wv = f64x4::new([w[0] as f64, w[1] as f64, w[2] as f64, w[3] as f64]);
            let (sv, cv) = sin_cos4(pv * wv);
            c.copy_from_slice(&(cv * cs).to_array());
            s.copy_from_slice(&(sv * ss).to_array());
        }
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
    fn rotate<T: Element>(
        row: &mut [T],
        head_dim: usize,
        half: usize,
        layout: Layout,
        pair0: usize,
        cos: &[f32],
        sin: &[f32],
    ) {
        let n = cos.len();
        match layout {
            Layout::RotateHalf => {
                let n8 = n / 8 * 8;
                for head in row.chunks_exact_mut(head_dim) {
                    let (lo, hi) = head.split_at_mut(half);
                    let a = &mut lo[pair0..pair0 + n];
                    let b = &mut hi[pair0..pair0 + n];
                    let mut k = 0;
                    while k < n8 {
                        let (c, s) = (f32s(&cos[k..]), f32s(&sin[k..]));
                        let (x, y) = (load8(&a[k..]), load8(&b[k..]));
                        store8(x * c - y * s, &mut a[k..]);
                        store8(y * c + x * s, &mut b[k..]);
                        k += 8;
                    }
                    for k in n8..n {
                        let (x, y) = rot(a[k].to_f32(), b[k].to_f32(), cos[k], sin[k]);
                        a[k] = T::from_f32(x);
                        b[k] = T::from_f32(y);
                    }
                }
            }
            Layout::Interleaved => {
                // Expanded once per token chunk, shared by all heads:
                // cd = [c0, c0, c1, c1, …], sd = [−s0, s0, −s1, s1, …], so that
                // out = x·cd + swap_pairs(x)·sd is (a·c − b·s, b·c + a·s) bit for bit.
                let mut cd = [0.0f32; 2 * super::CHUNK];
                let mut sd = [0.0f32; 2 * super::CHUNK];
                for (k, (&c, &s)) in cos.iter().zip(sin).enumerate() {
                    cd[2 * k] = c;
                    cd[2 * k + 1] = c;
                    sd[2 * k] = -s;
                    sd[2 * k + 1] = s;
                }
                let m = 2 * n;
                let m8 = m / 8 * 8;
                for head in row.chunks_exact_mut(head_dim) {
                    let x = &mut head[2 * pair0..2 * pair0 + m];
                    let mut k = 0;
                    while k < m8 {
                        let v = load8(&x[k..]);
                        let a = v.to_array();
                        let sw = f32x8::new([a[1], a[0], a[3], a[2], a[5], a[4], a[7], a[6]]);
                        store8(v * f32s(&cd[k..]) + sw * f32s(&sd[k..]), &mut x[k..]);
                        k += 8;
                    }
                    for k in (m8..m).step_by(2) {
                        let (c, s) = (cos[k / 2], sin[k / 2]);
                        let (u, v) = rot(x[k].to_f32(), x[k + 1].to_f32(), c, s);
                        x[k] = T::from_f32(u);
                        x[k + 1] = T::from_f32(v);
                    }
                }
            }
        }
    }
}
