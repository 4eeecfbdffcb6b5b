//! The fused entry points of the C ABI (rotate-into, QK-norm + RoPE, the backward pass)
//! called from Rust. Each result is checked against what its contract says it equals,
//! computed another way: rotate-into against an in-place rotation of an f32 copy, rounded;
//! the norm against an f64 derivation; the backward against ⟨J·v, w⟩ = ⟨v, Jᵀ·w⟩ and against
//! a rotation by −θ times the attention factor in f64. Bad input of every entry point gets its
//! code with nothing written.

use core::ffi::{c_int, c_void};
use core::ptr::null;
use posenc::{bf16, f16};
use posenc_capi::*;

/// An element type of the tests: its tag and exact conversions.
trait El: Copy + PartialEq + core::fmt::Debug {
    const TAG: PosencDtype;
    fn of(v: f32) -> Self;
    fn f(self) -> f32;
}
impl El for f32 {
    const TAG: PosencDtype = POSENC_DTYPE_F32;
    fn of(v: f32) -> Self {
        v
    }
    fn f(self) -> f32 {
        self
    }
}
impl El for f16 {
    const TAG: PosencDtype = POSENC_DTYPE_F16;
    fn of(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}
impl El for bf16 {
    const TAG: PosencDtype = POSENC_DTYPE_BF16;
    fn of(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}

fn cfg(head_dim: usize, rotary_dim: usize, layout: PosencLayout) -> PosencRopeConfig {
    PosencRopeConfig {
        head_dim,
        rotary_dim,
        base: 10_000.0,
        layout,
        ..PosencRopeConfig::default()
    }
}

/// YaRN ×4 from 64 positions: an attention factor that is not 1.
fn yarn(mut c: PosencRopeConfig) -> PosencRopeConfig {
    c.scaling = PosencScaling {
        kind: POSENC_SCALING_YARN,
        params: PosencScalingParams {
            yarn: PosencYarn {
                factor: 4.0,
                original_max_positions: 64,
                ..PosencYarn::default()
            },
        },
    };
    c
}

fn init(c: &PosencRopeConfig) -> PosencRope {
    let mut r = PosencRope::default();
    assert_eq!(unsafe { posenc_rope_init(c, &mut r) }, POSENC_OK);
    r
}

fn data(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i + seed) * 37 % 23) as f32 - 11.0) * 0.13)
        .collect()
}

fn positions(p: &[i32]) -> PosencAngles {
    PosencAngles {
        kind: POSENC_ANGLES_POSITIONS,
        n_tokens: p.len(),
        positions: p.as_ptr(),
        table: null(),
        table_len: 0,
    }
}

fn c_table(r: &PosencRope, pos: &[i32]) -> Vec<f32> {
    let n = unsafe { posenc_rope_table_len(r, pos.len()) };
    let mut t = vec![0f32; n];
    let rc = unsafe { posenc_rope_table(r, pos.as_ptr(), pos.len(), t.as_mut_ptr(), n) };
    assert_eq!(rc, POSENC_OK);
    t
}

fn table(t: &[f32], n_tokens: usize) -> PosencAngles {
    PosencAngles {
        kind: POSENC_ANGLES_TABLE,
        n_tokens,
        positions: null(),
        table: t.as_ptr(),
        table_len: t.len(),
    }
}

fn conv<A: El, B: El>(v: &[A]) -> Vec<B> {
    v.iter().map(|&x| B::of(x.f())).collect()
}

/// `posenc_rope_rotate_*` for any element type.
fn rotate<E: El>(r: &PosencRope, op: PosencOp, x: &mut [E], heads: usize, at: &PosencAngles) {
    let (p, n) = (x.as_mut_ptr(), x.len());
    let rc = unsafe {
        match E::TAG {
            POSENC_DTYPE_F32 => posenc_rope_rotate_f32(r, op, p.cast(), n, heads, at),
            POSENC_DTYPE_F16 => posenc_rope_rotate_f16(r, op, p.cast(), n, heads, at),
            _ => posenc_rope_rotate_bf16(r, op, p.cast(), n, heads, at),
        }
    };
    assert_eq!(rc, POSENC_OK);
}

/// `posenc_rope_apply_normed_*` for any element type.
unsafe fn normed<E: El>(
    r: &PosencRope,
    x: &mut [E],
    heads: usize,
    n: &PosencRmsNorm,
    at: &PosencAngles,
) -> c_int {
    let (p, len) = (x.as_mut_ptr(), x.len());
    unsafe {
        match E::TAG {
            POSENC_DTYPE_F32 => posenc_rope_apply_normed_f32(r, p.cast(), len, heads, n, at),
            POSENC_DTYPE_F16 => posenc_rope_apply_normed_f16(r, p.cast(), len, heads, n, at),
            _ => posenc_rope_apply_normed_bf16(r, p.cast(), len, heads, n, at),
        }
    }
}

/// Scatters token-major rows (`tokens × heads × hd`) into `cache` through `v`.
fn scatter<E: Copy>(cache: &mut [E], rows: &[E], v: PosencView, hd: usize) {
    for (i, head) in rows.chunks(hd).enumerate() {
        let (t, h) = (i / v.n_heads, i % v.n_heads);
        let at = v.offset + t * v.token_stride + h * v.head_stride;
        cache[at..at + hd].copy_from_slice(head);
    }
}

fn norm(kind: PosencNormKind, w: &[f32], eps: f32) -> PosencRmsNorm {
    PosencRmsNorm {
        kind,
        weight: w.as_ptr(),
        weight_len: w.len(),
        eps,
    }
}

const HD: usize = 16;

/// Rotate-into, all nine dtype pairs, from positions and from a table, into a head-major and
/// a token-major slot: bitwise the rotation of an f32 copy, rounded once; nothing outside
/// the slot written.
fn into_pair<I: El, O: El>() {
    let r = init(&yarn(cfg(HD, 12, POSENC_LAYOUT_ROTATE_HALF)));
    let (heads, max_ctx) = (2, 8);
    let pos = [5i32, 6, 70];
    let t = c_table(&r, &pos);
    let src: Vec<I> = conv(&data(pos.len() * heads * HD, 1));
    let mut f = conv::<I, f32>(&src);
    rotate(&r, POSENC_OP_APPLY, &mut f, heads, &positions(&pos));
    let rotated: Vec<O> = conv(&f);
    let slots = [
        PosencView {
            n_heads: heads,
            token_stride: HD,
            head_stride: max_ctx * HD,
            offset: 4 * HD,
        },
        PosencView {
            n_heads: heads,
            token_stride: heads * HD,
            head_stride: HD,
            offset: 3 * heads * HD,
        },
    ];
    for slot in slots {
        let mut want = vec![O::of(7.0); heads * max_ctx * HD];
        scatter(&mut want, &rotated, slot, HD);
        for at in [positions(&pos), table(&t, pos.len())] {
            let mut cache = vec![O::of(7.0); heads * max_ctx * HD];
            let rc = unsafe {
                posenc_rope_apply_into(
                    &r,
                    I::TAG,
                    src.as_ptr().cast(),
                    src.len(),
                    heads,
                    O::TAG,
                    cache.as_mut_ptr().cast(),
                    cache.len(),
                    slot,
                    &at,
                )
            };
            assert_eq!(rc, POSENC_OK);
            assert_eq!(cache, want, "{} -> {}", I::TAG, O::TAG);
        }
    }
}

#[test]
fn apply_into_is_the_rounded_rotation_of_an_f32_copy_for_all_nine_pairs() {
    into_pair::<f32, f32>();
    into_pair::<f32, f16>();
    into_pair::<f32, bf16>();
    into_pair::<f16, f32>();
    into_pair::<f16, f16>();
    into_pair::<f16, bf16>();
    into_pair::<bf16, f32>();
    into_pair::<bf16, f16>();
    into_pair::<bf16, bf16>();
}

#[test]
fn apply_into_under_hf_eager_rotates_in_the_source_dtype_then_converts() {
    let c = PosencRopeConfig {
        rounding: POSENC_ROUNDING_HF_EAGER,
        ..cfg(HD, 0, POSENC_LAYOUT_ROTATE_HALF)
    };
    let r = init(&c);
    let pos = [3i32, 900];
    let src: Vec<bf16> = conv(&data(2 * 3 * HD, 4));
    let mut copy = src.clone();
    rotate(&r, POSENC_OP_APPLY, &mut copy, 3, &positions(&pos));
    let want: Vec<f32> = conv(&copy);
    let mut dst = vec![0f32; want.len()];
    let slot = PosencView {
        n_heads: 3,
        token_stride: 3 * HD,
        head_stride: HD,
        offset: 0,
    };
    let rc = unsafe {
        posenc_rope_apply_into(
            &r,
            POSENC_DTYPE_BF16,
            src.as_ptr().cast(),
            src.len(),
            3,
            POSENC_DTYPE_F32,
            dst.as_mut_ptr().cast(),
            dst.len(),
            slot,
            &positions(&pos),
        )
    };
    assert_eq!(rc, POSENC_OK);
    assert_eq!(dst, want);
}

#[test]
fn views_into_and_qk_into_equal_their_unfused_calls() {
    let r = init(&cfg(HD, 0, POSENC_LAYOUT_INTERLEAVED));
    let (hq, hk, ctx) = (4, 2, 6);
    let pos = [1i32, 2, 3];
    let t = c_table(&r, &pos);
    let at = table(&t, 3);
    let (q0, k0) = (data(3 * hq * HD, 2), data(3 * hk * HD, 3));
    // A fused [T][q | k | v] row; K's view into an f16 head-major cache at position 2.
    let row = (hq + 2 * hk) * HD;
    let mut qkv = vec![0f32; 3 * row];
    for tok in 0..3 {
        qkv[tok * row..tok * row + hq * HD].copy_from_slice(&q0[tok * hq * HD..][..hq * HD]);
        qkv[tok * row + hq * HD..][..hk * HD].copy_from_slice(&k0[tok * hk * HD..][..hk * HD]);
    }
    let kv = PosencView {
        n_heads: hk,
        token_stride: row,
        head_stride: HD,
        offset: hq * HD,
    };
    let slot = PosencView {
        n_heads: hk,
        token_stride: HD,
        head_stride: ctx * HD,
        offset: 2 * HD,
    };
    let mut want = vec![f16::ZERO; hk * ctx * HD];
    let rc = unsafe {
        posenc_rope_apply_into(
            &r,
            POSENC_DTYPE_F32,
            k0.as_ptr().cast(),
            k0.len(),
            hk,
            POSENC_DTYPE_F16,
            want.as_mut_ptr().cast(),
            want.len(),
            slot,
            &at,
        )
    };
    assert_eq!(rc, POSENC_OK);
    let mut cache = vec![f16::ZERO; want.len()];
    let rc = unsafe {
        posenc_rope_apply_views_into(
            &r,
            POSENC_DTYPE_F32,
            qkv.as_ptr().cast(),
            qkv.len(),
            &kv,
            1,
            POSENC_DTYPE_F16,
            cache.as_mut_ptr().cast(),
            cache.len(),
            &slot,
            1,
            &at,
        )
    };
    assert_eq!(rc, POSENC_OK);
    assert_eq!(cache, want);
    // Different view counts: refused, nothing written.
    let before = cache.clone();
    let two = [slot, slot];
    let rc = unsafe {
        posenc_rope_apply_views_into(
            &r,
            POSENC_DTYPE_F32,
            qkv.as_ptr().cast(),
            qkv.len(),
            &kv,
            1,
            POSENC_DTYPE_F16,
            cache.as_mut_ptr().cast(),
            cache.len(),
            two.as_ptr(),
            2,
            &at,
        )
    };
    assert_eq!(rc, POSENC_ERR_LENGTH_MISMATCH);
    assert_eq!(cache, before);

    // Q in place + K into the cache == Q rotated in place + K rotated into the slot.
    let mut wq = q0.clone();
    rotate(&r, POSENC_OP_APPLY, &mut wq, hq, &positions(&pos));
    let mut q = q0.clone();
    let mut cache = vec![f16::ZERO; want.len()];
    let rc = unsafe {
        posenc_rope_apply_qk_into(
            &r,
            POSENC_DTYPE_F32,
            q.as_mut_ptr().cast(),
            q.len(),
            hq,
            k0.as_ptr().cast(),
            k0.len(),
            hk,
            POSENC_DTYPE_F16,
            cache.as_mut_ptr().cast(),
            cache.len(),
            slot,
            &positions(&pos),
        )
    };
    assert_eq!(rc, POSENC_OK);
    assert_eq!((q, cache), (wq, want));
}

/// RMSNorm then RoPE in f64 from the definitions, one head row at a time. The angle is
/// `p · ω` with ω the rope's f32 frequencies (HF's `inv_freq`, `posenc_rope_inv_freq`):
/// f64 frequencies would differ by `p · ulp(ω)`, 1e-5 rad at position 4000.
#[allow(clippy::too_many_arguments)]
fn normed_ref(
    x: &[f32],
    heads: usize,
    kind: PosencNormKind,
    w: &[f32],
    eps: f32,
    pos: &[i32],
    inv_freq: &[f32],
    rotate_half: bool,
) -> Vec<f64> {
    let rot = 2 * inv_freq.len();
    let row = heads * HD;
    let mut out = vec![0f64; x.len()];
    for (t, xr) in x.chunks(row).enumerate() {
        let o = &mut out[t * row..][..row];
        let group = if kind == POSENC_NORM_PER_ROW { row } else { HD };
        for (g, xs) in xr.chunks(group).enumerate() {
            let ms = xs.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / group as f64;
            let rs = 1.0 / (ms + eps as f64).sqrt();
            for (j, &v) in xs.iter().enumerate() {
                let wi = match kind {
                    POSENC_NORM_PER_ROW => w[j] as f64,
                    POSENC_NORM_PER_HEAD => w[j] as f64,
                    _ => 1.0 + w[j] as f64,
                };
                o[g * group + j] = v as f64 * rs * wi;
            }
        }
        for h in 0..heads {
            let hv = &mut o[h * HD..][..HD];
            for (i, &f) in inv_freq.iter().enumerate() {
                let th = pos[t] as f64 * f as f64;
                let (a, b) = if rotate_half {
                    (i, i + rot / 2)
                } else {
                    (2 * i, 2 * i + 1)
                };
                let (xa, xb) = (hv[a], hv[b]);
                hv[a] = xa * th.cos() - xb * th.sin();
                hv[b] = xb * th.cos() + xa * th.sin();
            }
        }
    }
    out
}

#[test]
fn normed_in_place_matches_an_f64_derivation_and_its_rounded_f32_result() {
    let heads = 3;
    let pos = [0i32, 17, 4000];
    let x0 = data(pos.len() * heads * HD, 5);
    let wh: Vec<f32> = (0..HD).map(|i| 0.5 + i as f32 * 0.0625).collect();
    let wr: Vec<f32> = (0..heads * HD).map(|i| 1.5 - i as f32 * 0.01).collect();
    for (layout, half) in [
        (POSENC_LAYOUT_INTERLEAVED, false),
        (POSENC_LAYOUT_ROTATE_HALF, true),
    ] {
        let r = init(&cfg(HD, 12, layout));
        let t = c_table(&r, &pos);
        let mut inv = [0f32; 6];
        assert_eq!(
            unsafe { posenc_rope_inv_freq(&r, inv.as_mut_ptr(), 6) },
            POSENC_OK
        );
        for (kind, w) in [
            (POSENC_NORM_PER_HEAD, &wh),
            (POSENC_NORM_PER_HEAD_ONE_PLUS, &wh),
            (POSENC_NORM_PER_ROW, &wr),
        ] {
            let n = norm(kind, w, 1e-6);
            let want = normed_ref(&x0, heads, kind, w, 1e-6, &pos, &inv, half);
            for at in [positions(&pos), table(&t, pos.len())] {
                let mut x = x0.clone();
                assert_eq!(unsafe { normed(&r, &mut x, heads, &n, &at) }, POSENC_OK);
                for (a, b) in x.iter().zip(&want) {
                    // A few f32 roundings of values up to ~4: within 2e-6 · |w| scale.
                    assert!(
                        (*a as f64 - b).abs() <= 4e-6 * (1.0 + b.abs()),
                        "{a} vs {b}"
                    );
                }
                // bf16: the f32 result of the widened input, rounded once.
                let xb0: Vec<bf16> = conv(&x0);
                let mut wf: Vec<f32> = conv(&xb0);
                assert_eq!(unsafe { normed(&r, &mut wf, heads, &n, &at) }, POSENC_OK);
                let mut xb = xb0.clone();
                assert_eq!(unsafe { normed(&r, &mut xb, heads, &n, &at) }, POSENC_OK);
                assert_eq!(xb, conv::<f32, bf16>(&wf), "kind {kind}");
            }
        }
    }
}

#[test]
fn fused_norm_calls_equal_their_unfused_parts() {
    let r = init(&cfg(HD, 0, POSENC_LAYOUT_ROTATE_HALF));
    let (hq, hk, ctx) = (4, 2, 5);
    let pos = [9i32, 10];
    let at = positions(&pos);
    let (q0, k0) = (data(2 * hq * HD, 6), data(2 * hk * HD, 7));
    let wq: Vec<f32> = (0..hq * HD)
        .map(|i| 0.75 + (i % 7) as f32 * 0.125)
        .collect();
    let wk: Vec<f32> = (0..HD).map(|i| (i % 5) as f32 * 0.25 - 0.5).collect();
    let (qn, kn) = (
        norm(POSENC_NORM_PER_ROW, &wq, 1e-5),
        norm(POSENC_NORM_PER_HEAD_ONE_PLUS, &wk, 1e-5),
    );
    let (mut wantq, mut wantk) = (q0.clone(), k0.clone());
    assert_eq!(unsafe { normed(&r, &mut wantq, hq, &qn, &at) }, POSENC_OK);
    assert_eq!(unsafe { normed(&r, &mut wantk, hk, &kn, &at) }, POSENC_OK);

    // Q and K in place, one call.
    let (mut q, mut k) = (q0.clone(), k0.clone());
    let rc = unsafe {
        posenc_rope_apply_qk_normed_f32(
            &r,
            q.as_mut_ptr(),
            q.len(),
            hq,
            &qn,
            k.as_mut_ptr(),
            k.len(),
            hk,
            &kn,
            &at,
        )
    };
    assert_eq!(rc, POSENC_OK);
    assert_eq!((&q, &k), (&wantq, &wantk));

    // K normalised and rotated into a token-major bf16 slot: the in-place f32 result, rounded.
    let slot = PosencView {
        n_heads: hk,
        token_stride: hk * HD,
        head_stride: HD,
        offset: 3 * hk * HD,
    };
    let mut want_cache = vec![bf16::ZERO; ctx * hk * HD];
    scatter(&mut want_cache, &conv::<f32, bf16>(&wantk), slot, HD);
    let mut cache = vec![bf16::ZERO; want_cache.len()];
    let rc = unsafe {
        posenc_rope_apply_normed_into(
            &r,
            POSENC_DTYPE_F32,
            k0.as_ptr().cast(),
            k0.len(),
            hk,
            &kn,
            POSENC_DTYPE_BF16,
            cache.as_mut_ptr().cast(),
            cache.len(),
            slot,
            &at,
        )
    };
    assert_eq!(rc, POSENC_OK);
    assert_eq!(cache, want_cache);

    // Q in place + K into the cache, normed.
    let mut q = q0.clone();
    let mut cache = vec![bf16::ZERO; want_cache.len()];
    let rc = unsafe {
        posenc_rope_apply_qk_normed_into(
            &r,
            POSENC_DTYPE_F32,
            q.as_mut_ptr().cast(),
            q.len(),
            hq,
            &qn,
            k0.as_ptr().cast(),
            k0.len(),
            hk,
            &kn,
            POSENC_DTYPE_BF16,
            cache.as_mut_ptr().cast(),
            cache.len(),
            slot,
            &at,
        )
    };
    assert_eq!(rc, POSENC_OK);
    assert_eq!((q, cache), (wantq, want_cache));

    // f16 Q and K in place equal the single-buffer calls.
    let (qh0, kh0): (Vec<f16>, Vec<f16>) = (conv(&q0), conv(&k0));
    let (mut wq16, mut wk16) = (qh0.clone(), kh0.clone());
    assert_eq!(unsafe { normed(&r, &mut wq16, hq, &qn, &at) }, POSENC_OK);
    assert_eq!(unsafe { normed(&r, &mut wk16, hk, &kn, &at) }, POSENC_OK);
    let (mut qh, mut kh) = (qh0, kh0);
    let rc = unsafe {
        posenc_rope_apply_qk_normed_f16(
            &r,
            qh.as_mut_ptr().cast(),
            qh.len(),
            hq,
            &qn,
            kh.as_mut_ptr().cast(),
            kh.len(),
            hk,
            &kn,
            &at,
        )
    };
    assert_eq!(rc, POSENC_OK);
    assert_eq!((qh, kh), (wq16, wk16));
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
}

#[test]
fn backward_is_the_transposed_rotation_times_the_attention_factor() {
    let heads = 2;
    let pos = [0i32, 33, 200, -7];
    for layout in [POSENC_LAYOUT_INTERLEAVED, POSENC_LAYOUT_ROTATE_HALF] {
        let r = init(&yarn(cfg(HD, 12, layout)));
        let m = unsafe { posenc_rope_attention_factor(&r) } as f64;
        assert!(m > 1.05, "YaRN x4 has an attention factor above 1: {m}");
        let mut inv = [0f32; 6];
        assert_eq!(
            unsafe { posenc_rope_inv_freq(&r, inv.as_mut_ptr(), 6) },
            POSENC_OK
        );
        let t = c_table(&r, &pos);
        let (v, w) = (data(4 * heads * HD, 8), data(4 * heads * HD, 9));
        for at in [positions(&pos), table(&t, 4)] {
            // ⟨J·v, w⟩ = ⟨v, Jᵀ·w⟩.
            let (mut jv, mut jtw) = (v.clone(), w.clone());
            rotate(&r, POSENC_OP_APPLY, &mut jv, heads, &at);
            rotate(&r, POSENC_OP_BACKWARD, &mut jtw, heads, &at);
            let (l, rr) = (dot(&jv, &w), dot(&v, &jtw));
            assert!((l - rr).abs() < 1e-4 * (1.0 + l.abs()), "{l} vs {rr}");
            // By hand: each pair times m, rotated by −θ; channels 12..16 untouched.
            for (i, head) in w.chunks(HD).enumerate() {
                let p = pos[i / heads] as f64;
                let got = &jtw[i * HD..][..HD];
                for (j, &f) in inv.iter().enumerate() {
                    let (a, b) = match layout {
                        POSENC_LAYOUT_INTERLEAVED => (2 * j, 2 * j + 1),
                        _ => (j, j + 6),
                    };
                    let th = -p * f as f64;
                    let (ga, gb) = (head[a] as f64, head[b] as f64);
                    let wa = m * (ga * th.cos() - gb * th.sin());
                    let wb = m * (gb * th.cos() + ga * th.sin());
                    assert!((got[a] as f64 - wa).abs() < 2e-5, "{} vs {wa}", got[a]);
                    assert!((got[b] as f64 - wb).abs() < 2e-5, "{} vs {wb}", got[b]);
                }
                assert_eq!(got[12..], head[12..]);
            }
        }
    }
}

#[test]
fn qk_views_and_axes_backward_equal_the_single_buffer_backward() {
    let r = init(&yarn(cfg(HD, 0, POSENC_LAYOUT_ROTATE_HALF)));
    let pos = [4i32, 5, 6];
    let at = positions(&pos);
    let (gq0, gk0): (Vec<f16>, Vec<f16>) = (conv(&data(3 * 4 * HD, 1)), conv(&data(3 * 2 * HD, 2)));
    let (mut wq, mut wk) = (gq0.clone(), gk0.clone());
    rotate(&r, POSENC_OP_BACKWARD, &mut wq, 4, &at);
    rotate(&r, POSENC_OP_BACKWARD, &mut wk, 2, &at);
    let (mut gq, mut gk) = (gq0, gk0);
    let rc = unsafe {
        posenc_rope_apply_qk_backward_f16(
            &r,
            gq.as_mut_ptr().cast(),
            gq.len(),
            4,
            gk.as_mut_ptr().cast(),
            gk.len(),
            2,
            &at,
        )
    };
    assert_eq!(rc, POSENC_OK);
    assert_eq!((gq, gk), (wq, wk.clone()));

    // Views: the same keys stored head-major [2][3][HD].
    let gk0: Vec<bf16> = conv(&data(3 * 2 * HD, 2));
    let mut want = gk0.clone();
    rotate(&r, POSENC_OP_BACKWARD, &mut want, 2, &at);
    let hm = PosencView {
        n_heads: 2,
        token_stride: HD,
        head_stride: 3 * HD,
        offset: 0,
    };
    let mut g = vec![bf16::ZERO; gk0.len()];
    scatter(&mut g, &gk0, hm, HD);
    let rc = unsafe {
        posenc_rope_apply_views_backward_bf16(&r, g.as_mut_ptr().cast(), g.len(), &hm, 1, &at)
    };
    assert_eq!(rc, POSENC_OK);
    let mut want_hm = vec![bf16::ZERO; g.len()];
    scatter(&mut want_hm, &want, hm, HD);
    assert_eq!(g, want_hm);

    // Axes: a text token (all axes equal) is the plain backward; distinct axes satisfy the
    // adjoint identity with the forward.
    let mc = PosencRopeConfig {
        axes: POSENC_AXES_MROPE,
        sections: [2, 3, 3],
        ..yarn(cfg(HD, 0, POSENC_LAYOUT_ROTATE_HALF))
    };
    let mr = init(&mc);
    let axes_eq = [5i32, 5, 5];
    let g0 = data(2 * HD, 3);
    let (mut a, mut b) = (g0.clone(), g0.clone());
    let rc = unsafe {
        posenc_rope_apply_axes_backward_f32(&mr, a.as_mut_ptr(), a.len(), 2, axes_eq.as_ptr(), 3, 3)
    };
    assert_eq!(rc, POSENC_OK);
    rotate(&mr, POSENC_OP_BACKWARD, &mut b, 2, &positions(&[5]));
    assert_eq!(a, b);
    let axes = [3i32, 40, -8, 100, 2, 9];
    let (v, w) = (data(2 * 2 * HD, 4), data(2 * 2 * HD, 5));
    let (mut jv, mut jtw) = (v.clone(), w.clone());
    let rc = unsafe {
        posenc_rope_apply_axes_f32(&mr, jv.as_mut_ptr(), jv.len(), 2, axes.as_ptr(), 6, 3)
    };
    assert_eq!(rc, POSENC_OK);
    let rc = unsafe {
        posenc_rope_apply_axes_backward_f32(
            &mr,
            jtw.as_mut_ptr(),
            jtw.len(),
            2,
            axes.as_ptr(),
            6,
            3,
        )
    };
    assert_eq!(rc, POSENC_OK);
    let (l, rr) = (dot(&jv, &w), dot(&v, &jtw));
    assert!((l - rr).abs() < 1e-4 * (1.0 + l.abs()), "{l} vs {rr}");
}

/// Runs `f` on a buffer filled with 3.0 and checks it returned `code` and wrote nothing.
fn refused<E: El>(code: c_int, n: usize, f: impl FnOnce(*mut c_void, usize) -> c_int) {
    let mut b = vec![E::of(3.0); n];
    let rc = f(b.as_mut_ptr().cast(), b.len());
    assert_eq!(rc, code);
    assert!(b.iter().all(|&v| v == E::of(3.0)));
}

#[test]
fn bad_input_of_every_fused_entry_point_writes_nothing() {
    let r = init(&cfg(HD, 0, POSENC_LAYOUT_ROTATE_HALF));
    let pos = [1i32, 2];
    let at = positions(&pos);
    let src = data(2 * 2 * HD, 1);
    let w = vec![1f32; HD];
    let good = norm(POSENC_NORM_PER_HEAD, &w, 1e-6);
    let bad_kind = norm(7, &w, 1e-6);
    let short = norm(POSENC_NORM_PER_HEAD, &w[1..], 1e-6);
    let neg_eps = norm(POSENC_NORM_PER_HEAD, &w, -1.0);
    let slot = PosencView {
        n_heads: 2,
        token_stride: 2 * HD,
        head_stride: HD,
        offset: 0,
    };
    let n = src.len();
    let into = |st: PosencDtype, dt: PosencDtype, v: PosencView, dst: *mut c_void, len: usize| unsafe {
        posenc_rope_apply_into(&r, st, src.as_ptr().cast(), n, 2, dt, dst, len, v, &at)
    };
    // apply_into: unknown dtype, slot out of bounds, short dst, overlap with src, NULL angles.
    refused::<f32>(POSENC_ERR_INVALID_ENUM, n, |d, l| {
        into(3, POSENC_DTYPE_F32, slot, d, l)
    });
    refused::<f32>(POSENC_ERR_INVALID_ENUM, n, |d, l| {
        into(POSENC_DTYPE_F32, 9, slot, d, l)
    });
    let far = PosencView { offset: 1, ..slot };
    refused::<f16>(POSENC_ERR_LENGTH_MISMATCH, n, |d, l| {
        into(POSENC_DTYPE_F32, POSENC_DTYPE_F16, far, d, l)
    });
    refused::<f16>(POSENC_ERR_LENGTH_MISMATCH, n - 1, |d, l| {
        into(POSENC_DTYPE_F32, POSENC_DTYPE_F16, slot, d, l)
    });
    let dup = PosencView {
        head_stride: 0,
        ..slot
    };
    refused::<f16>(POSENC_ERR_PARAMETER_OUT_OF_RANGE, n, |d, l| {
        into(POSENC_DTYPE_F32, POSENC_DTYPE_F16, dup, d, l)
    });
    refused::<f32>(POSENC_ERR_NULL_POINTER, n, |d, l| unsafe {
        posenc_rope_apply_into(&r, 0, null(), n, 2, 0, d, l, slot, &at)
    });
    refused::<f32>(POSENC_ERR_NULL_POINTER, n, |d, l| unsafe {
        posenc_rope_apply_into(&r, 0, src.as_ptr().cast(), n, 2, 0, d, l, slot, null())
    });
    {
        // dst overlapping src (the same bytes read as bf16 and written as bf16).
        let mut buf = vec![bf16::from_f32(3.0); 2 * n];
        let p = buf.as_mut_ptr();
        let rc = unsafe {
            posenc_rope_apply_into(
                &r,
                POSENC_DTYPE_BF16,
                p.cast_const().cast(),
                n,
                2,
                POSENC_DTYPE_BF16,
                p.add(HD).cast(),
                n,
                slot,
                &at,
            )
        };
        assert_eq!(rc, POSENC_ERR_OVERLAPPING_BUFFERS);
        assert!(buf.iter().all(|&v| v == bf16::from_f32(3.0)));
        // A misaligned f32 destination.
        let rc = unsafe {
            posenc_rope_apply_into(
                &r,
                0,
                src.as_ptr().cast(),
                n,
                2,
                0,
                p.cast::<u8>().add(2).cast(),
                n / 2,
                slot,
                &at,
            )
        };
        assert_eq!(rc, POSENC_ERR_MISALIGNED_POINTER);
        assert!(buf.iter().all(|&v| v == bf16::from_f32(3.0)));
    }

    // apply_normed_into: NULL norm, bad kind, short weight, negative eps.
    for (nm, code) in [
        (null(), POSENC_ERR_NULL_POINTER),
        (&bad_kind as *const _, POSENC_ERR_INVALID_ENUM),
        (&short, POSENC_ERR_LENGTH_MISMATCH),
        (&neg_eps, POSENC_ERR_PARAMETER_OUT_OF_RANGE),
    ] {
        refused::<bf16>(code, n, |d, l| unsafe {
            posenc_rope_apply_normed_into(&r, 0, src.as_ptr().cast(), n, 2, nm, 2, d, l, slot, &at)
        });
    }
    // The weight inside the destination.
    {
        let mut buf = vec![1f32; n];
        let inside = norm(POSENC_NORM_PER_HEAD, &buf[..HD], 1e-6);
        let rc = unsafe {
            posenc_rope_apply_normed_into(
                &r,
                0,
                src.as_ptr().cast(),
                n,
                2,
                &inside,
                0,
                buf.as_mut_ptr().cast(),
                n,
                slot,
                &at,
            )
        };
        assert_eq!(rc, POSENC_ERR_OVERLAPPING_BUFFERS);
        assert!(buf.iter().all(|&v| v == 1.0));
    }

    // apply_views_into: a source view out of bounds.
    let sv = PosencView { offset: 5, ..slot };
    refused::<f32>(POSENC_ERR_LENGTH_MISMATCH, n, |d, l| unsafe {
        posenc_rope_apply_views_into(
            &r,
            0,
            src.as_ptr().cast(),
            n,
            &sv,
            1,
            0,
            d,
            l,
            &slot,
            1,
            &at,
        )
    });

    // apply_qk_into / qk_normed_into: q the wrong length (cache untouched), cache too short.
    let k = data(2 * 2 * HD, 2);
    for (q_len, cache_len, code) in [
        (n - 1, n, POSENC_ERR_LENGTH_MISMATCH),
        (n, n - 1, POSENC_ERR_LENGTH_MISMATCH),
    ] {
        let mut q = vec![3f32; n];
        refused::<f16>(code, cache_len, |d, l| unsafe {
            posenc_rope_apply_qk_into(
                &r,
                0,
                q.as_mut_ptr().cast(),
                q_len,
                2,
                k.as_ptr().cast(),
                k.len(),
                2,
                POSENC_DTYPE_F16,
                d,
                l,
                slot,
                &at,
            )
        });
        assert!(q.iter().all(|&v| v == 3.0));
        refused::<f16>(code, cache_len, |d, l| unsafe {
            posenc_rope_apply_qk_normed_into(
                &r,
                0,
                q.as_mut_ptr().cast(),
                q_len,
                2,
                &good,
                k.as_ptr().cast(),
                k.len(),
                2,
                &good,
                POSENC_DTYPE_F16,
                d,
                l,
                slot,
                &at,
            )
        });
        assert!(q.iter().all(|&v| v == 3.0));
    }
    // q aliasing k.
    {
        let mut q = vec![3f32; n];
        refused::<f16>(POSENC_ERR_OVERLAPPING_BUFFERS, n, |d, l| unsafe {
            posenc_rope_apply_qk_into(
                &r,
                0,
                q.as_mut_ptr().cast(),
                n,
                2,
                q.as_ptr().cast(),
                n,
                2,
                POSENC_DTYPE_F16,
                d,
                l,
                slot,
                &at,
            )
        });
    }

    // In place: apply_normed (bad kind, and rotary_dim > 256), qk_normed (k_norm's weight of
    // the wrong length, q untouched too).
    refused::<f32>(POSENC_ERR_INVALID_ENUM, n, |x, l| unsafe {
        posenc_rope_apply_normed_f32(&r, x.cast(), l, 2, &bad_kind, &at)
    });
    let big = init(&cfg(512, 0, POSENC_LAYOUT_ROTATE_HALF));
    let wb = vec![1f32; 512];
    refused::<bf16>(POSENC_ERR_PARAMETER_OUT_OF_RANGE, 2 * 512, |x, l| unsafe {
        posenc_rope_apply_normed_bf16(&big, x.cast(), l, 1, &norm(0, &wb, 0.0), &at)
    });
    let mut q = vec![3f32; n];
    refused::<f32>(POSENC_ERR_LENGTH_MISMATCH, n, |x, l| unsafe {
        posenc_rope_apply_qk_normed_f32(
            &r,
            q.as_mut_ptr(),
            n,
            2,
            &good,
            x.cast(),
            l,
            2,
            &short,
            &at,
        )
    });
    assert!(q.iter().all(|&v| v == 3.0));

    // Backward: unknown op still refused; qk (k too short, q untouched), views (two views on
    // the same heads), axes (wrong axis count).
    refused::<f32>(POSENC_ERR_INVALID_ENUM, n, |x, l| unsafe {
        posenc_rope_rotate_f32(&r, 4, x.cast(), l, 2, &at)
    });
    refused::<f16>(POSENC_ERR_LENGTH_MISMATCH, n - 1, |x, l| unsafe {
        posenc_rope_apply_qk_backward_f16(&r, q.as_mut_ptr().cast(), n, 2, x.cast(), l, 2, &at)
    });
    assert!(q.iter().all(|&v| v == 3.0));
    let twice = [slot, slot];
    refused::<bf16>(POSENC_ERR_PARAMETER_OUT_OF_RANGE, n, |x, l| unsafe {
        posenc_rope_apply_views_backward_bf16(&r, x.cast(), l, twice.as_ptr(), 2, &at)
    });
    let p3 = [1i32, 2, 3, 4];
    refused::<f32>(POSENC_ERR_PARAMETER_OUT_OF_RANGE, HD, |x, l| unsafe {
        posenc_rope_apply_axes_backward_f32(&r, x.cast(), l, 1, p3.as_ptr(), 4, 4)
    });
    refused::<f32>(POSENC_ERR_NULL_POINTER, HD, |x, l| unsafe {
        posenc_rope_apply_axes_backward_f32(&r, x.cast(), l, 1, null(), 3, 3)
    });
}
