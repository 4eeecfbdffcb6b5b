//! Strided views ([`Rope::apply_views`]), [`Rope::apply_qk`] and the rotary window offset
//! ([`RopeConfig::rotary_offset`]), on every backend this machine runs and every dtype.
//!
//! The oracle throughout is [`Rope::apply`] on a contiguous token-major copy, compared **bit
//! for bit**: a view only changes *where* heads live, never the arithmetic (the same kernel
//! rotates each head with the same per-token cos/sin), so any difference is a bug, not
//! rounding. Elements a call must not touch are compared bitwise as well, and are poisoned
//! with NaN payloads where it matters, so a kernel that reads or writes outside its heads is
//! caught even when it writes back what it read.
//!
//! Validation ([`View`] docs): every head in bounds (all sums checked), the heads of one view
//! pairwise disjoint, two views disjoint; an error leaves the buffer bitwise untouched.
//! `validator_is_sound_exhaustive_small` enumerates every small single- and two-view
//! configuration against a brute-force oracle: no overlapping or out-of-bounds configuration
//! may be accepted; the legitimate ones the (documented, conservative) rules reject are
//! counted and printed.
//!
//! Runtime: a few seconds at the test profile's opt-level 1.

mod common;

use common::backends;
use common::rng::Rng;
use posenc::{
    Backend, Element, Error, Formula, Layout, Rope, RopeConfig, Rounding, Scaling, View, Yarn,
    bf16, f16,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::fmt::Debug;

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// A storage type with its bit pattern.
trait Dt: Element + Debug + PartialEq {
    const NAME: &'static str;
    fn bits(self) -> u32;
    /// A quiet NaN with payload `k` (poison: distinguishable from anything posenc computes).
    fn poison(k: u32) -> Self;
}

impl Dt for f32 {
    const NAME: &'static str = "f32";
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn poison(k: u32) -> Self {
        f32::from_bits(0x7fc0_0000 | (0x1357 + k) & 0x3f_ffff)
    }
}

impl Dt for f16 {
    const NAME: &'static str = "f16";
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn poison(k: u32) -> Self {
        f16::from_bits(0x7e00 | ((0x55 + k) & 0x1ff) as u16)
    }
}

impl Dt for bf16 {
    const NAME: &'static str = "bf16";
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn poison(k: u32) -> Self {
        bf16::from_bits(0x7fc0 | ((0x15 + k) & 0x3f) as u16)
    }
}

fn bits<T: Dt>(x: &[T]) -> Vec<u32> {
    x.iter().map(|v| v.bits()).collect()
}

/// First index where `a` and `b` differ in any bit.
fn first_diff<T: Dt>(a: &[T], b: &[T]) -> Option<usize> {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).position(|(x, y)| x.bits() != y.bits())
}

/// Panics unless `got` and `want` are bitwise equal. `what` is formatted only then (pass
/// `format_args!`: under Miri, formatting every message up front is a large share of a run).
#[track_caller]
fn assert_bits<T: Dt>(got: &[T], want: &[T], what: impl std::fmt::Display) {
    if let Some(i) = first_diff(got, want) {
        panic!(
            "{what} [{}]: element {i} of {}: {:?} ({:#x}) != {:?} ({:#x})",
            T::NAME,
            got.len(),
            got[i],
            got[i].bits(),
            want[i],
            want[i].bits()
        );
    }
}

/// xorshift64* ([`common::rng`]): deterministic data from a seed. This file's distributions.
impl Rng {
    /// A normal value of magnitude 2^-6 .. 2^6, either sign (normal in f32, f16 and bf16).
    fn value(&mut self) -> f32 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let mag = (u * 12.0 - 6.0).exp2() as f32;
        if self.next() & 1 == 0 { mag } else { -mag }
    }
    fn data<T: Dt>(&mut self, n: usize) -> Vec<T> {
        (0..n).map(|_| T::from_f32(self.value())).collect()
    }
    /// Positions: small, negative, and large (up to ±2^20).
    fn positions(&mut self, n: usize) -> Vec<i32> {
        (0..n)
            .map(|_| match self.below(4) {
                0 => self.below(64) as i32,
                1 => -(self.below(5000) as i32),
                _ => self.below(1 << 21) as i32 - (1 << 20),
            })
            .collect()
    }
}

/// Under Miri: fewer configurations and shapes, the same code paths (`cfg(miri)` sizes).
const MIRI: bool = cfg!(miri);
/// f16 storage runs except under Miri with F16C compiled in: Miri has no model of the F16C
/// conversions (`vcvtps2ph`); f16 is covered natively and under qemu.
const F16: bool = !cfg!(all(miri, target_feature = "f16c"));

/// The first `n` of `items` under Miri, all of them natively.
fn thin<T: Copy>(items: &[T], n: usize) -> &[T] {
    if MIRI {
        &items[..n.min(items.len())]
    } else {
        items
    }
}

/// The configurations the bitwise-equivalence tests run: both layouts, full and partial
/// rotary, an attention factor ≠ 1 (YaRN), a window offset, the HF rounding modes. Between
/// them they take every RoPE kernel: layout × posenc / HF rounding × whole vectors of pairs
/// (`rotary_dim` a multiple of 32) / a partial last vector.
///
/// Under Miri (thousands of times slower) the heads are narrower, with the same kernel for
/// each (16 pairs for whole vectors; 10, 9, 12 and 9 pairs for the partial ones, which cross
/// the 8-lane width of the tiers Miri runs), and each configuration runs on one backend, taken in turn from
/// `turn`: each test passes its own, so every backend runs every configuration in the suite
/// and each test runs every backend.
fn ropes(turn: usize) -> Vec<(String, Rope)> {
    let yarn = Scaling::Yarn(Yarn::new(4.0, 32_768));
    // (natively, under Miri)
    let hd = |native: usize, miri: usize| if MIRI { miri } else { native };
    let cfgs: Vec<(String, RopeConfig<'static>, Rounding)> = vec![
        (
            format!("hd{} rotate_half 5e5", hd(128, 32)),
            RopeConfig::new(hd(128, 32), 500_000.0, Layout::RotateHalf),
            Rounding::Once,
        ),
        (
            format!("hd{} interleaved rd32", hd(64, 40)),
            RopeConfig::new(hd(64, 40), 10_000.0, Layout::Interleaved).rotary_dim(32),
            Rounding::Once,
        ),
        (
            // Under Miri a partial last vector (10 pairs), the one posenc-rounding kernel
            // the other five leave out.
            format!("hd{} rotate_half yarn x4 1e6", hd(128, 20)),
            RopeConfig::new(hd(128, 20), 1e6, Layout::RotateHalf).scaling(yarn),
            Rounding::Once,
        ),
        (
            format!("hd{} interleaved rd{} offset 7", hd(96, 26), hd(34, 18)),
            RopeConfig::new(hd(96, 26), 10_000.0, Layout::Interleaved)
                .rotary_dim(hd(34, 18))
                .rotary_offset(7),
            Rounding::Once,
        ),
        (
            format!("hd{} rotate_half hf_eager", hd(64, 24)),
            RopeConfig::new(hd(64, 24), 10_000.0, Layout::RotateHalf),
            Rounding::HfEager,
        ),
        (
            format!("hd{} interleaved yarn hf_upcast", hd(64, 18)),
            RopeConfig::new(hd(64, 18), 1e6, Layout::Interleaved).scaling(yarn),
            Rounding::HfUpcast,
        ),
    ];
    let mut out = Vec::new();
    let all = backends();
    for (i, (name, cfg, rounding)) in cfgs.into_iter().enumerate() {
        let rope = Rope::new(&cfg).unwrap().with_rounding(rounding);
        let bs = if MIRI {
            vec![all[(i + turn) % all.len()]]
        } else {
            all.clone()
        };
        for b in bs {
            out.push((
                format!("{name} [{}]", b.name()),
                rope.with_backend(b).unwrap(),
            ));
        }
    }
    out
}

/// Under Miri, the token count for configuration `i` of [`ropes`]: 1 (decode: heads four,
/// two and one at a time) or 2 (a stream: two heads at a time in rotate_half, one in
/// interleaved; the next token's table computed behind the first), alternating, so that each
/// backend gets both; natively `random`, drawn from the case's generator.
fn tokens(i: usize, random: impl FnOnce() -> usize) -> usize {
    if MIRI { [1, 2][i % 2] } else { random() }
}

/// Copies heads out of a strided buffer into a contiguous token-major `[tokens, n, hd]` one.
fn gather<T: Dt>(x: &[T], v: &View, tokens: usize, hd: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(tokens * v.n_heads * hd);
    for t in 0..tokens {
        for h in 0..v.n_heads {
            let s = v.offset + t * v.token_stride + h * v.head_stride;
            out.extend_from_slice(&x[s..s + hd]);
        }
    }
    out
}

/// The inverse of [`gather`].
fn scatter<T: Dt>(x: &mut [T], v: &View, tokens: usize, hd: usize, heads: &[T]) {
    let mut k = 0;
    for t in 0..tokens {
        for h in 0..v.n_heads {
            let s = v.offset + t * v.token_stride + h * v.head_stride;
            x[s..s + hd].copy_from_slice(&heads[k..k + hd]);
            k += hd;
        }
    }
}

/// What `apply_views` must produce: each view's heads gathered, rotated by `Rope::apply`,
/// scattered back; everything else as it was.
fn expected_views<T: Dt>(rope: &Rope, x: &[T], views: &[View], positions: &[i32]) -> Vec<T> {
    let hd = rope.head_dim();
    let mut want = x.to_vec();
    for v in views {
        let mut heads = gather(x, v, positions.len(), hd);
        rope.apply(&mut heads, v.n_heads, positions).unwrap();
        scatter(&mut want, v, positions.len(), hd, &heads);
    }
    want
}

// ---------------------------------------------------------------------------------------
// fused QKV, head-major, arenas
// ---------------------------------------------------------------------------------------

fn check_fused_qkv<T: Dt>(
    rope: &Rope,
    name: &str,
    (nq, nk, nv): (usize, usize, usize),
    i: usize,
    seed: u64,
) {
    let hd = rope.head_dim();
    let mut rng = Rng::new(seed);
    let tokens = tokens(i, || 1 + rng.below(5) as usize);
    let row = (nq + nk + nv) * hd;
    let x: Vec<T> = rng.data(tokens * row);
    let pos = rng.positions(tokens);
    let q = View {
        n_heads: nq,
        token_stride: row,
        head_stride: hd,
        offset: 0,
    };
    let k = View {
        n_heads: nk,
        token_stride: row,
        head_stride: hd,
        offset: nq * hd,
    };
    let vv = View {
        n_heads: nv,
        token_stride: row,
        head_stride: hd,
        offset: (nq + nk) * hd,
    };
    let want = expected_views(rope, &x, &[q, k], &pos);
    // Both orders of the two views (under Miri one, by configuration: the other runs on
    // the next configuration).
    let orders = [[q, k], [k, q]];
    let orders = if MIRI {
        &orders[i % 2..][..1]
    } else {
        &orders[..]
    };
    for &order in orders {
        let mut got = x.clone();
        rope.apply_views(&mut got, &order, &pos).unwrap();
        let what = format!("{name} fused qkv {nq}/{nk}/{nv} tokens {tokens}");
        assert_bits(&got, &want, &what);
        // V is bitwise the input.
        assert_bits(
            &gather(&got, &vv, tokens, hd),
            &gather(&x, &vv, tokens, hd),
            &what,
        );
        // Q and K are exactly two separate `apply` calls.
        for v in [q, k] {
            let mut sep = gather(&x, &v, tokens, hd);
            rope.apply(&mut sep, v.n_heads, &pos).unwrap();
            assert_bits(&gather(&got, &v, tokens, hd), &sep, &what);
        }
    }
}

/// Fused QKV rows `[tokens, (q + k + v)·hd]`: Q and K as two views sharing the token stride
/// equal two separate `apply` calls bitwise, V is untouched; MHA, GQA 32/8 and MQA.
#[test]
fn fused_qkv_rows() {
    for (i, (name, rope)) in ropes(0).iter().enumerate() {
        // Under Miri one small GQA row: two Q heads and one K head (pass widths: `ropes`).
        let shapes: &[_] = if MIRI {
            &[(2, 1, 1)]
        } else {
            &[(4, 2, 2), (3, 3, 3), (32, 8, 8), (8, 1, 1)]
        };
        for (j, &(nq, nk, nv)) in shapes.iter().enumerate() {
            let seed = (i * 16 + j) as u64;
            check_fused_qkv::<f32>(rope, name, (nq, nk, nv), i, seed);
            if F16 {
                check_fused_qkv::<f16>(rope, name, (nq, nk, nv), i, seed);
            }
            check_fused_qkv::<bf16>(rope, name, (nq, nk, nv), i, seed);
        }
    }
}

fn check_head_major<T: Dt>(rope: &Rope, name: &str, i: usize, seed: u64) {
    let hd = rope.head_dim();
    let mut rng = Rng::new(seed);
    // Under Miri: five heads of one token (four at a time, then one) or three of two.
    let heads = if MIRI {
        [5, 3][i % 2]
    } else {
        1 + rng.below(6) as usize
    };
    let tokens = tokens(i, || 1 + rng.below(6) as usize);
    let hm: Vec<T> = rng.data(heads * tokens * hd);
    let pos = rng.positions(tokens);
    // Token-major copy, rotated by `apply`.
    let mut tm = vec![T::from_f32(0.0); hm.len()];
    for h in 0..heads {
        for t in 0..tokens {
            tm[(t * heads + h) * hd..][..hd].copy_from_slice(&hm[(h * tokens + t) * hd..][..hd]);
        }
    }
    rope.apply(&mut tm, heads, &pos).unwrap();
    let mut got = hm.clone();
    rope.apply_views(&mut got, &[View::head_major(heads, tokens, hd)], &pos)
        .unwrap();
    for h in 0..heads {
        for t in 0..tokens {
            assert_bits(
                &got[(h * tokens + t) * hd..][..hd],
                &tm[(t * heads + h) * hd..][..hd],
                format_args!("{name} head-major {heads}x{tokens}: head {h} token {t}"),
            );
        }
    }
    // View::token_major on the token-major buffer is `apply` itself.
    let mut tm2: Vec<T> = rng.data(heads * tokens * hd);
    let mut tm3 = tm2.clone();
    rope.apply(&mut tm2, heads, &pos).unwrap();
    rope.apply_views(&mut tm3, &[View::token_major(heads, hd)], &pos)
        .unwrap();
    assert_bits(&tm3, &tm2, format_args!("{name} token_major view"));
}

/// Head-major `[heads, tokens, head_dim]` equals the token-major result, permuted.
#[test]
fn head_major_equals_token_major_permuted() {
    for (i, (name, rope)) in ropes(1).iter().enumerate() {
        for &s in thin(&[0, 1, 2], 1) {
            let seed = 1000 + (i * 8 + s) as u64;
            check_head_major::<f32>(rope, name, i, seed);
            if F16 {
                check_head_major::<f16>(rope, name, i, seed);
            }
            check_head_major::<bf16>(rope, name, i, seed);
        }
    }
}

fn check_arena<T: Dt>(rope: &Rope, name: &str, i: usize, seed: u64) {
    let hd = rope.head_dim();
    let mut rng = Rng::new(seed);
    let tokens = tokens(i, || 1 + rng.below(4) as usize);
    let (nq, nk) = if MIRI {
        (2, 1)
    } else {
        (1 + rng.below(4) as usize, 1 + rng.below(3) as usize)
    };
    // Q: token-major with padding between heads and between tokens, at an odd offset.
    let q = View {
        n_heads: nq,
        token_stride: nq * (hd + 3) + 13,
        head_stride: hd + 3,
        offset: 37,
    };
    let q_end = q.offset + (tokens - 1) * q.token_stride + (nq - 1) * q.head_stride + hd;
    // K: head-major further on, with a gap between tokens.
    let k = View {
        n_heads: nk,
        token_stride: hd + 1,
        head_stride: tokens * (hd + 1) + 5,
        offset: q_end + 11,
    };
    let k_end = k.offset + (tokens - 1) * k.token_stride + (nk - 1) * k.head_stride + hd;
    let len = k_end + 9;
    // The arena: poison everywhere, data in the declared heads.
    let mut x: Vec<T> = (0..len as u32).map(T::poison).collect();
    for v in [&q, &k] {
        let d: Vec<T> = rng.data(tokens * v.n_heads * hd);
        scatter(&mut x, v, tokens, hd, &d);
    }
    let pos = rng.positions(tokens);
    let want = expected_views(rope, &x, &[q, k], &pos);
    let mut got = x.clone();
    rope.apply_views(&mut got, &[q, k], &pos).unwrap();
    assert_bits(&got, &want, format_args!("{name} arena"));
    // The heads were rotated at all (poison aside, the call did something).
    assert!(first_diff(&got, &x).is_some(), "{name}: nothing rotated");

    // Exact fit: a view whose last head ends at the last element is accepted; one element
    // less is out of bounds.
    let mut fit = got[..k_end].to_vec();
    let before = fit.clone();
    rope.apply_views(&mut fit, &[q, k], &pos).unwrap();
    let mut short = before[..k_end - 1].to_vec();
    let e = rope.apply_views(&mut short, &[q, k], &pos).unwrap_err();
    assert_eq!(
        e,
        Error::LengthMismatch {
            what: "x",
            expected: k_end,
            actual: k_end - 1,
            formula: Formula {
                names: &"at least a view's offset + (tokens − 1)·token_stride + (n_heads − 1)·head_stride + head_dim",
                values: [k_end, 0, 0]
            },
        },
        "{name}"
    );
    assert_bits(
        &short,
        &before[..k_end - 1],
        format_args!("{name} short arena"),
    );
}

/// Views at offsets into a larger, NaN-poisoned arena, with padding between heads and tokens:
/// exactly the declared heads change, exactly as `apply` would change them.
#[test]
fn arena_offsets_and_padding() {
    for (i, (name, rope)) in ropes(2).iter().enumerate() {
        for &s in thin(&[0, 1, 2], 1) {
            let seed = 2000 + (i * 8 + s) as u64;
            check_arena::<f32>(rope, name, i, seed);
            if F16 {
                check_arena::<f16>(rope, name, i, seed);
            }
            check_arena::<bf16>(rope, name, i, seed);
        }
    }
}

// ---------------------------------------------------------------------------------------
// apply_qk
// ---------------------------------------------------------------------------------------

fn check_qk<T: Dt>(rope: &Rope, name: &str, nq: usize, nk: usize, i: usize, seed: u64) {
    let hd = rope.head_dim();
    let mut rng = Rng::new(seed);
    let tokens = tokens(i, || 1 + rng.below(4) as usize);
    let q: Vec<T> = rng.data(tokens * nq * hd);
    let k: Vec<T> = rng.data(tokens * nk * hd);
    let pos = rng.positions(tokens);
    let (mut q1, mut k1) = (q.clone(), k.clone());
    rope.apply_qk(&mut q1, nq, &mut k1, nk, &pos).unwrap();
    let (mut q2, mut k2) = (q.clone(), k.clone());
    rope.apply(&mut q2, nq, &pos).unwrap();
    rope.apply(&mut k2, nk, &pos).unwrap();
    let what = format!("{name} apply_qk {nq}/{nk} tokens {tokens}");
    assert_bits(&q1, &q2, format_args!("{what}: q"));
    assert_bits(&k1, &k2, format_args!("{what}: k"));

    // Errors: nothing written to either buffer.
    let (mut qe, mut ke) = (q.clone(), k.clone());
    let e = rope
        .apply_qk(&mut qe, nq, &mut ke[..k.len() - 1], nk, &pos)
        .unwrap_err();
    assert!(
        matches!(e, Error::LengthMismatch { what: "k", .. }),
        "{what}: {e:?}"
    );
    let e = rope
        .apply_qk(&mut qe[1..], nq, &mut ke, nk, &pos)
        .unwrap_err();
    assert!(
        matches!(e, Error::LengthMismatch { what: "q", .. }),
        "{what}: {e:?}"
    );
    assert_eq!(
        rope.apply_qk(&mut qe, 0, &mut ke, nk, &pos),
        Err(Error::ZeroHeads)
    );
    assert_eq!(
        rope.apply_qk(&mut qe, nq, &mut ke, 0, &pos),
        Err(Error::ZeroHeads)
    );
    // One position too many: both lengths are wrong.
    let mut longer = pos.clone();
    longer.push(3);
    assert!(rope.apply_qk(&mut qe, nq, &mut ke, nk, &longer).is_err());
    assert_bits(&qe, &q, format_args!("{what}: q after errors"));
    assert_bits(&ke, &k, format_args!("{what}: k after errors"));
}

/// `apply_qk` (cos/sin once per token for both) equals two `apply` calls bitwise: MHA,
/// GQA 32/8, MQA 32/1 and 8/1; its errors write nothing.
#[test]
fn apply_qk_equals_two_applies() {
    for (i, (name, rope)) in ropes(3).iter().enumerate() {
        // Under Miri one: four Q heads (four at a time when decoding) and one K head.
        let shapes: &[_] = if MIRI {
            &[(4, 1)]
        } else {
            &[(4, 4), (1, 3), (32, 8), (32, 1), (8, 1)]
        };
        for (j, &(nq, nk)) in shapes.iter().enumerate() {
            let seed = 3000 + (i * 16 + j) as u64;
            check_qk::<f32>(rope, name, nq, nk, i, seed);
            if F16 {
                check_qk::<f16>(rope, name, nq, nk, i, seed);
            }
            check_qk::<bf16>(rope, name, nq, nk, i, seed);
        }
    }
}

// ---------------------------------------------------------------------------------------
// rotary window offset
// ---------------------------------------------------------------------------------------

/// Checks one entry point with a rotary window: channels outside `[o, o + r)` of every head
/// are bitwise the input, and the window equals the plain rope (head_dim = r) applied to the
/// windows copied out.
fn check_window<T: Dt>(
    rope: &Rope,
    plain: &Rope,
    x: &[T],
    what: std::fmt::Arguments<'_>,
    run: impl Fn(&Rope, &mut [T]),
) {
    let (hd, r, o) = (rope.head_dim(), rope.rotary_dim(), rope.rotary_offset());
    let mut got = x.to_vec();
    run(rope, &mut got);
    let mut win: Vec<T> = x
        .chunks_exact(hd)
        .flat_map(|h| h[o..o + r].to_vec())
        .collect();
    run(plain, &mut win);
    for (i, (g, orig)) in got.chunks_exact(hd).zip(x.chunks_exact(hd)).enumerate() {
        assert_bits(&g[..o], &orig[..o], format_args!("{what}: head {i} prefix"));
        assert_bits(
            &g[o + r..],
            &orig[o + r..],
            format_args!("{what}: head {i} tail"),
        );
        assert_bits(
            &g[o..o + r],
            &win[i * r..][..r],
            format_args!("{what}: head {i} window"),
        );
    }
}

/// The windows `(head_dim, rotary_dim, offset)`: odd, small and vector-sized offsets, a
/// window ending at the head's end, one pair, a window of whole vectors (`rotary_dim` a
/// multiple of 32) and one with a partial last vector. Under Miri fewer and narrower heads
/// with the same relations (16 pairs in whole vectors, 9 crossing the 8-lane width).
const WINDOWS: &[(usize, usize, usize)] = if MIRI {
    &[(48, 32, 1), (48, 32, 16), (16, 2, 14), (20, 18, 2)]
} else {
    &[
        (96, 32, 1),
        (96, 32, 7),
        (96, 32, 16),
        (96, 32, 64),
        (64, 2, 62),
        (130, 128, 2),
    ]
};

fn check_offsets<T: Dt>(seed: u64) {
    let yarn = Scaling::Yarn(Yarn::new(4.0, 32_768));
    let all = backends();
    for (li, layout) in [Layout::RotateHalf, Layout::Interleaved]
        .into_iter()
        .enumerate()
    {
        for (wi, &(hd, r, o)) in WINDOWS.iter().enumerate() {
            // Under Miri one scaling and one backend per window, taken in turn (shifted by
            // layout and dtype), so each backend runs both layouts, whole and partial
            // vectors, and both scalings.
            let turn = li * WINDOWS.len() + wi + seed as usize;
            let scalings = if MIRI {
                vec![[Scaling::None, yarn][turn % 2]]
            } else {
                vec![Scaling::None, yarn]
            };
            for scaling in scalings {
                let bs = if MIRI {
                    vec![all[turn % all.len()]]
                } else {
                    all.clone()
                };
                for b in bs {
                    let cfg = RopeConfig::new(hd, 1e6, layout)
                        .rotary_dim(r)
                        .rotary_offset(o)
                        .scaling(scaling);
                    let rope = Rope::new(&cfg).unwrap().with_backend(b).unwrap();
                    let plain = Rope::new(&RopeConfig::new(r, 1e6, layout).scaling(scaling))
                        .unwrap()
                        .with_backend(b)
                        .unwrap();
                    assert_eq!(rope.inv_freq(), plain.inv_freq());
                    assert_eq!(rope.attention_factor(), plain.attention_factor());
                    let mut rng = Rng::new(seed ^ (hd * 1000 + r * 10 + o) as u64);
                    // Under Miri 1 token or 2, two heads (pass widths: `ropes`).
                    let (tokens, heads, kv) = if MIRI {
                        ([1, 2][(turn / 2) % 2], 2, 1)
                    } else {
                        (3, 4, 2)
                    };
                    let x: Vec<T> = rng.data(tokens * heads * hd);
                    let k: Vec<T> = rng.data(tokens * kv * hd);
                    let pos = rng.positions(tokens);
                    let what = format!(
                        "{layout:?} hd{hd} r{r} offset {o} {scaling:?} [{}]",
                        b.name()
                    );
                    // Under Miri `apply` and one other entry point per window, taken in turn.
                    let entry = |k: usize| !MIRI || k == 0 || k == 1 + turn % 5;
                    if entry(0) {
                        check_window(&rope, &plain, &x, format_args!("{what} apply"), |rp, y| {
                            rp.apply(y, heads, &pos).unwrap()
                        });
                    }
                    if entry(1) {
                        check_window(
                            &rope,
                            &plain,
                            &x,
                            format_args!("{what} inverse"),
                            |rp, y| rp.apply_inverse(y, heads, &pos).unwrap(),
                        );
                    }
                    if entry(2) {
                        check_window(&rope, &plain, &x, format_args!("{what} shift"), |rp, y| {
                            rp.shift(y, heads, &pos).unwrap()
                        });
                    }
                    if entry(3) {
                        check_window(&rope, &plain, &x, format_args!("{what} axes"), |rp, y| {
                            let p: Vec<[i32; 1]> = pos.iter().map(|&p| [p]).collect();
                            rp.apply_axes(y, heads, &p).unwrap()
                        });
                    }
                    if entry(4) {
                        // apply_views: head-major, each head is still a head_dim-wide block.
                        check_window(&rope, &plain, &x, format_args!("{what} views"), |rp, y| {
                            let hdim = rp.head_dim();
                            rp.apply_views(y, &[View::head_major(heads, tokens, hdim)], &pos)
                                .unwrap()
                        });
                    }
                    if entry(5) {
                        // apply_qk: q and k both windowed.
                        let mut both = x.clone();
                        both.extend_from_slice(&k);
                        check_window(&rope, &plain, &both, format_args!("{what} qk"), |rp, y| {
                            let (q, kk) = y.split_at_mut(tokens * heads * rp.head_dim());
                            rp.apply_qk(q, heads, kk, kv, &pos).unwrap()
                        });
                    }
                }
            }
        }
    }
}

/// `RopeConfig::rotary_offset`: channels outside `[offset, offset + rotary_dim)` are bit for
/// bit untouched, and the window is exactly a plain rope of head_dim `rotary_dim` applied to
/// the copied-out windows, for `apply`, `apply_inverse`, `shift`, `apply_axes`,
/// `apply_views` and `apply_qk`.
#[test]
fn rotary_offset_window() {
    check_offsets::<f32>(1);
    if F16 {
        check_offsets::<f16>(2);
    }
    check_offsets::<bf16>(3);
}

/// A window that does not fit the head is refused by `Rope::new`, including overflow.
#[test]
fn rotary_offset_validation() {
    let base = RopeConfig::new(64, 1e4, Layout::RotateHalf).rotary_dim(32);
    assert!(Rope::new(&base.rotary_offset(32)).is_ok());
    for o in [33, 64, 1000, usize::MAX - 31, usize::MAX] {
        let e = Rope::new(&base.rotary_offset(o)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::ParameterOutOfRange {
                    what: "rotary_offset",
                    ..
                }
            ),
            "offset {o}: {e:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// validation
// ---------------------------------------------------------------------------------------

const HD: usize = 8;

fn v(n_heads: usize, token_stride: usize, head_stride: usize, offset: usize) -> View {
    View {
        n_heads,
        token_stride,
        head_stride,
        offset,
    }
}

/// One bad call: the views, the token count, the buffer length, and the error expected
/// (`None`: any error).
struct Bad {
    what: &'static str,
    views: Vec<View>,
    tokens: usize,
    len: usize,
    err: Option<Error>,
}

/// `views[first]` meets `views[second]` (the same index: a view meets itself).
fn overlap(first: usize, second: usize) -> Error {
    Error::ViewsOverlap { first, second }
}

fn bad_cases() -> Vec<Bad> {
    let (t, m) = (3, usize::MAX);
    let tm = |n| v(n, n * HD, HD, 0); // token-major
    let hm = |n| View::head_major(n, t, HD);
    let b = |what, views, len, err| Bad {
        what,
        views,
        tokens: t,
        len,
        err,
    };
    let lm = |expected, actual| {
        Some(Error::LengthMismatch {
            what: "x",
            expected,
            actual,
            formula: Formula {
                names: &"at least a view's offset + (tokens − 1)·token_stride + (n_heads − 1)·head_stride + head_dim",
                values: [expected, 0, 0],
            },
        })
    };
    vec![
        // out of bounds
        b("one short", vec![tm(2)], t * 2 * HD - 1, lm(48, 47)),
        b("offset 1", vec![v(2, 16, 8, 1)], 48, lm(49, 48)),
        b("head-major short", vec![hm(2)], 2 * t * HD - 1, lm(48, 47)),
        b(
            "second view out",
            vec![tm(1), v(1, 8, 8, 24)],
            40,
            lm(24 + 16 + 8, 40),
        ),
        b("empty buffer", vec![tm(1)], 0, lm(24, 0)),
        // overflow of offset + strides
        b(
            "offset MAX",
            vec![v(1, 8, 8, m)],
            64,
            Some(Error::ShapeOverflow),
        ),
        b(
            "offset MAX-7",
            vec![v(1, 8, 8, m - 7)],
            64,
            Some(Error::ShapeOverflow),
        ),
        b(
            "token_stride MAX",
            vec![v(1, m, 8, 0)],
            64,
            Some(Error::ShapeOverflow),
        ),
        b(
            "token_stride MAX/2+1",
            vec![v(1, m / 2 + 1, 8, 0)],
            64,
            Some(Error::ShapeOverflow),
        ),
        b(
            "head_stride MAX",
            vec![v(2, 16, m, 0)],
            64,
            Some(Error::ShapeOverflow),
        ),
        b(
            "n_heads MAX",
            vec![v(m, 16, 8, 0)],
            64,
            Some(Error::ShapeOverflow),
        ),
        b(
            "sum overflows",
            vec![v(2, m / 4, m / 4, m / 4 + 1)],
            64,
            Some(Error::ShapeOverflow),
        ),
        b(
            "sum in range but huge",
            vec![v(1, 8, 8, m - 24)],
            64,
            lm(m, 64),
        ),
        // overlapping heads within one view
        b(
            "head_stride 0",
            vec![v(2, 16, 0, 0)],
            64,
            Some(overlap(0, 0)),
        ),
        b(
            "token_stride 0",
            vec![v(2, 0, 8, 0)],
            64,
            Some(overlap(0, 0)),
        ),
        b(
            "both strides 0",
            vec![v(2, 0, 0, 0)],
            64,
            Some(overlap(0, 0)),
        ),
        b(
            "head_stride < hd",
            vec![v(2, 16, 7, 0)],
            64,
            Some(overlap(0, 0)),
        ),
        b(
            "head_stride 1",
            vec![v(4, 32, 1, 0)],
            128,
            Some(overlap(0, 0)),
        ),
        b(
            "token_stride < hd",
            vec![v(1, 7, 8, 0)],
            64,
            Some(overlap(0, 0)),
        ),
        b(
            "head-major token_stride < hd",
            vec![v(2, 7, 3 * HD, 0)],
            64,
            Some(overlap(0, 0)),
        ),
        b(
            "head-major head_stride < tokens·hd",
            vec![v(2, 8, 16, 0)],
            64,
            Some(overlap(0, 0)),
        ),
        b(
            "token-major token_stride < n·hd",
            vec![v(3, 16, 8, 0)],
            64,
            Some(overlap(0, 0)),
        ),
        b(
            "equal strides",
            vec![v(2, 8, 8, 0)],
            64,
            Some(overlap(0, 0)),
        ),
        // overlapping views
        b(
            "same view twice",
            vec![tm(2), tm(2)],
            48,
            Some(overlap(0, 1)),
        ),
        b(
            "k overlaps q's last head",
            vec![v(2, 32, 8, 0), v(2, 32, 8, 8)],
            96,
            Some(overlap(0, 1)),
        ),
        b(
            "k shares one element",
            vec![v(1, 32, 8, 0), v(1, 32, 8, 7)],
            96,
            Some(overlap(0, 1)),
        ),
        b(
            "k wraps into next token's q",
            vec![v(2, 24, 8, 0), v(1, 24, 8, 20)],
            96,
            Some(overlap(0, 1)),
        ),
        b(
            "different strides, overlapping",
            vec![v(1, 8, 8, 0), v(1, 16, 8, 8)],
            64,
            Some(overlap(0, 1)),
        ),
        b(
            "token-major vs head-major",
            vec![tm(2), hm(2)],
            48,
            Some(overlap(0, 1)),
        ),
        b(
            "third view overlaps first",
            vec![v(1, 32, 8, 0), v(1, 32, 8, 8), v(1, 32, 8, 4)],
            96,
            Some(overlap(0, 2)),
        ),
        // zero heads
        b(
            "zero heads",
            vec![v(0, 8, 8, 0)],
            64,
            Some(Error::ZeroHeads),
        ),
        b(
            "zero heads second",
            vec![tm(1), v(0, 8, 8, 100)],
            64,
            Some(Error::ZeroHeads),
        ),
    ]
}

fn check_bad<T: Dt>(rope: &Rope, c: &Bad, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut x: Vec<T> = rng.data(c.len);
    // Some poison among the data: an error path must not even canonicalise a NaN.
    for (i, e) in x.iter_mut().enumerate().step_by(5) {
        *e = T::poison(i as u32);
    }
    let before = bits(&x);
    let pos = rng.positions(c.tokens);
    let r = rope.apply_views(&mut x, &c.views, &pos);
    let e = match r {
        Ok(()) => panic!("{} [{}]: accepted {:?}", c.what, T::NAME, c.views),
        Err(e) => e,
    };
    if let Some(want) = c.err {
        assert_eq!(e, want, "{} [{}]", c.what, T::NAME);
    }
    assert_eq!(bits(&x), before, "{} [{}]: buffer changed", c.what, T::NAME);
}

/// Every error path of `apply_views` returns its error and leaves the buffer bitwise
/// untouched, on every backend, for every dtype. (Under Miri each case on one backend and one
/// of the two ropes, taken in turn: validation runs before any kernel is chosen.)
#[test]
fn validation_errors_leave_buffer_untouched() {
    let all = backends();
    for (i, c) in bad_cases().iter().enumerate() {
        let bs = if MIRI {
            vec![all[i % all.len()]]
        } else {
            all.clone()
        };
        for b in bs {
            let cfgs = [
                (RopeConfig::new(HD, 1e4, Layout::RotateHalf), Rounding::Once),
                (
                    RopeConfig::new(HD, 1e4, Layout::Interleaved)
                        .rotary_dim(4)
                        .rotary_offset(2),
                    Rounding::HfEager,
                ),
            ];
            let cfgs = if MIRI {
                &cfgs[i / 3 % 2..][..1]
            } else {
                &cfgs[..]
            };
            for &(rope_cfg, rounding) in cfgs {
                let rope = Rope::new(&rope_cfg)
                    .unwrap()
                    .with_rounding(rounding)
                    .with_backend(b)
                    .unwrap();
                check_bad::<f32>(&rope, c, i as u64);
                if F16 {
                    check_bad::<f16>(&rope, c, i as u64);
                }
                check_bad::<bf16>(&rope, c, i as u64);
            }
        }
    }
}

/// The boundaries of the rules are accepted: an exact fit, many disjoint views, strides
/// exactly `head_dim`, a head-major head stride exactly `tokens·head_dim`, two interleaved
/// views meeting exactly, zero views, stride 0 with a single head and token, and any views at
/// all with zero tokens (nothing to do; but zero heads is still an error).
#[test]
fn validation_boundaries_accepted() {
    let rope = Rope::new(&RopeConfig::new(HD, 1e4, Layout::RotateHalf)).unwrap();
    let ok = |views: &[View], tokens: usize, len: usize| {
        let mut rng = Rng::new(tokens as u64);
        let mut x: Vec<f32> = rng.data(len);
        let pos = rng.positions(tokens);
        let want = if tokens == 0 {
            x.clone()
        } else {
            expected_views(&rope, &x, views, &pos)
        };
        rope.apply_views(&mut x, views, &pos)
            .unwrap_or_else(|e| panic!("{views:?} tokens {tokens} len {len}: {e}"));
        assert_bits(&x, &want, format_args!("{views:?}"));
    };
    ok(&[View::token_major(2, HD)], 3, 48);
    ok(&[View::head_major(2, 3, HD)], 3, 48);
    let four: Vec<View> = (0..4).map(|i| v(1, 64, HD, i * HD)).collect();
    ok(&four, 3, 3 * 64);
    // No fixed limit on the number of views.
    let nine: Vec<View> = (0..9).map(|i| v(1, 9 * HD, HD, i * HD)).collect();
    ok(&nine, 3, 3 * 9 * HD);
    ok(&[v(2, 16, 8, 0)], 3, 48);
    ok(&[v(2, 8, 24, 0)], 3, 48);
    ok(&[v(2, 32, 8, 0), v(2, 32, 8, 16)], 3, 96);
    // The K view wraps around the token stride: its heads end where the next token's Q begins.
    ok(&[v(2, 32, 8, 8), v(1, 32, 8, 28)], 3, 96 + 8);
    // Accepted by the lattice alone (ranges overlap; the token strides differ, or the
    // footprints do not fit one): a stride the view never steps by plays no part, neither
    // the token stride of one token nor the head stride of one head. One token, Q and K
    // heads alternating, an odd token stride:
    ok(&[v(2, 1, 2 * HD, 0), v(2, 1, 2 * HD, HD)], 1, 4 * HD);
    // One head each, token strides 2·hd and 4·hd, an odd head stride:
    ok(&[v(1, 2 * HD, 1, 0), v(1, 4 * HD, 1, HD)], 2, 6 * HD);
    ok(&[], 3, 48);
    ok(&[v(1, 0, 0, 5)], 1, 13);
    ok(&[v(3, 0, 0, 0)], 0, 0);
    ok(&[v(1, usize::MAX, usize::MAX, usize::MAX)], 0, 0);
    let mut empty: Vec<f32> = vec![];
    assert_eq!(
        rope.apply_views(&mut empty, &[v(0, 8, 8, 0)], &[0i32; 0]),
        Err(Error::ZeroHeads)
    );
}

/// GPT-NeoX / BLOOM store fused QKV as `[tokens, heads, 3, head_dim]`: per head, q, k and v
/// are adjacent. Q (`head_stride = 3·hd`, offset 0) and K (offset `hd`) interleave head by
/// head; one call rotates both, exactly as two single-view calls do. Shifting K by one
/// channel makes its heads meet Q's: refused, buffer untouched.
#[test]
fn neox_fused_qkv_layout_in_one_call() {
    let (heads, tokens, hd) = (4, 3, 16);
    let rope = Rope::new(&RopeConfig::new(hd, 1e4, Layout::RotateHalf)).unwrap();
    let row = heads * 3 * hd;
    let q = v(heads, row, 3 * hd, 0);
    let k = v(heads, row, 3 * hd, hd);
    let mut rng = Rng::new(7);
    let x: Vec<f32> = rng.data(tokens * row);
    let pos = rng.positions(tokens);
    let mut y = x.clone();
    rope.apply_views(&mut y, &[q, k], &pos).unwrap();
    let mut z = x.clone();
    rope.apply_views(&mut z, &[q], &pos).unwrap();
    rope.apply_views(&mut z, &[k], &pos).unwrap();
    assert_bits(&y, &z, "one call vs two");
    assert_bits(&y, &expected_views(&rope, &x, &[q, k], &pos), "one call");
    let mut w = x.clone();
    let k_off = v(heads, row, 3 * hd, hd - 1);
    assert_eq!(
        rope.apply_views(&mut w, &[q, k_off], &pos),
        Err(overlap(0, 1))
    );
    assert_eq!(bits(&w), bits(&x));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 256 }, failure_persistence: None, ..ProptestConfig::default() })]

    /// Fused layouts like `[tokens, heads, c, head_dim]` (Q and K heads alternating in cells
    /// of `c` slots): any Q and K offsets inside a cell whose heads do not meet are accepted
    /// in one call (and rotated right: `run_checked`); ones that meet are refused.
    #[test]
    fn fused_cells_accepted_exactly_when_disjoint(
        heads in 2usize..5,
        tokens in 2usize..4,
        c in 2usize..5,
        oq in 0usize..40,
        ok_ in 0usize..40,
        seed in any::<u64>(),
    ) {
        let hd = 8;
        let rope = Rope::new(&RopeConfig::new(hd, 1e4, Layout::RotateHalf)).unwrap();
        let cell = c * hd;
        let (oq, ok_) = (oq % (cell - hd + 1), ok_ % (cell - hd + 1));
        let row = heads * cell;
        let views = [v(heads, row, cell, oq), v(heads, row, cell, ok_)];
        let len = tokens * row;
        let accepted = run_checked(&rope, &views, tokens, len, seed).map_err(TestCaseError::fail)?;
        let disjoint = oracle(&views, tokens, len, hd) == Some(true);
        prop_assert_eq!(accepted, disjoint, "{:?}", views);
    }
}

/// Regression (panicked until db89ffa): `view::interleaved_disjoint` computed
/// `(ob + ts - oa) % ts` in usize. With one token the token stride is never bounded by the
/// buffer, so two views with `token_stride = usize::MAX` whose ranges overlap overflowed that
/// sum: a debug build (tests, fuzz) panicked with "attempt to add with overflow" instead of
/// returning the overlap error. Expected: `Err(overlap)`, buffer untouched.
#[test]
fn bug_single_token_huge_token_stride_overflows() {
    let rope = Rope::new(&RopeConfig::new(HD, 1e4, Layout::RotateHalf)).unwrap();
    let mut x = vec![1.0f32; 32];
    let views = [v(1, usize::MAX, HD, 0), v(1, usize::MAX, HD, 4)];
    let r = std::panic::catch_unwind(move || {
        let r = rope.apply_views(&mut x, &views, &[5]);
        (r, x)
    });
    let (r, x) = r.expect("apply_views panicked (overflow in view::interleaved_disjoint)");
    assert_eq!(r, Err(overlap(0, 1)));
    assert!(x.iter().all(|&e| e == 1.0));
}

/// Regression (panicked until db89ffa): with zero tokens `apply_views` skips the bounds
/// checks (nothing will be written), then added the rope's `rotary_offset` to each view's
/// offset unchecked: a view with `offset = usize::MAX` on a rope with `rotary_offset > 0`
/// panicked with "attempt to add with overflow" in a debug build. Expected: `Ok(())` (nothing
/// to do), as with `rotary_offset` 0.
#[test]
fn bug_zero_tokens_offset_overflow_with_rotary_offset() {
    let cfg = RopeConfig::new(HD, 1e4, Layout::RotateHalf)
        .rotary_dim(4)
        .rotary_offset(2);
    let rope = Rope::new(&cfg).unwrap();
    let r = std::panic::catch_unwind(|| {
        let mut x: Vec<f32> = vec![];
        rope.apply_views(&mut x, &[v(1, 8, 8, usize::MAX)], &[0i32; 0])
    });
    let r = r.expect("apply_views panicked (rotary_offset added to an unvalidated offset)");
    assert_eq!(r, Ok(()));
}

/// Regression (found by the `views` fuzz target at 380cbe1; gone since d6fa9ca restructured the
/// driver): `arch::rope_with` advanced `start += head_stride` after the last head of a token as
/// well. A one-head view's head stride is never used, so validation (rightly) does not
/// constrain it; `usize::MAX` there (a "don't care" value) passed validation and then overflowed
/// that addition in a debug build. Expected: `Ok`, the same result as `apply`.
#[test]
fn bug_single_head_huge_head_stride_overflows() {
    let rope = Rope::new(&RopeConfig::new(HD, 1e4, Layout::RotateHalf)).unwrap();
    let x: Vec<f32> = Rng::new(11).data(2 * HD);
    let mut want = x.clone();
    rope.apply(&mut want, 1, &[3, 4]).unwrap();
    let r = std::panic::catch_unwind(|| {
        let mut y = x.clone();
        let r = rope.apply_views(&mut y, &[v(1, HD, usize::MAX, 0)], &[3, 4]);
        (r, y)
    });
    let (r, y) = r.expect("apply_views panicked (start += head_stride after the last head)");
    assert_eq!(r, Ok(()));
    assert_bits(&y, &want, "one head, huge head_stride");
}

// ---------------------------------------------------------------------------------------
// soundness of the validator: brute force
// ---------------------------------------------------------------------------------------

/// The oracle: `Some(true)` if every head is in bounds and no two heads (of any views)
/// share an element, `Some(false)` if in bounds but overlapping, `None` if out of bounds.
fn oracle(views: &[View], tokens: usize, len: usize, hd: usize) -> Option<bool> {
    let mut count = vec![0u8; len];
    let mut disjoint = true;
    for v in views {
        if v.n_heads == 0 {
            return None;
        }
        for t in 0..tokens {
            for h in 0..v.n_heads {
                let s = t
                    .checked_mul(v.token_stride)
                    .and_then(|a| h.checked_mul(v.head_stride).and_then(|b| a.checked_add(b)))
                    .and_then(|a| a.checked_add(v.offset))?;
                let e = s.checked_add(hd)?;
                if e > len {
                    return None;
                }
                for c in &mut count[s..e] {
                    *c += 1;
                    disjoint &= *c == 1;
                }
            }
        }
    }
    Some(disjoint)
}

/// Runs `apply_views` on a poisoned buffer and checks it against the oracle. Returns whether
/// the call was accepted.
fn run_checked(
    rope: &Rope,
    views: &[View],
    tokens: usize,
    len: usize,
    seed: u64,
) -> Result<bool, String> {
    let hd = rope.head_dim();
    let verdict = oracle(views, tokens, len, hd);
    let mut rng = Rng::new(seed);
    let x: Vec<f32> = rng.data(len);
    let pos = rng.positions(tokens);
    let mut got = x.clone();
    match rope.apply_views(&mut got, views, &pos) {
        Err(e) => {
            if first_diff(&got, &x).is_some() {
                return Err(format!(
                    "{views:?} tokens {tokens} len {len}: error {e:?} but the buffer changed"
                ));
            }
            Ok(false)
        }
        Ok(()) => {
            if tokens > 0 && verdict != Some(true) {
                return Err(format!(
                    "{views:?} tokens {tokens} len {len}: accepted, but {}",
                    if verdict.is_none() {
                        "out of bounds"
                    } else {
                        "heads overlap"
                    }
                ));
            }
            if tokens == 0 {
                if first_diff(&got, &x).is_some() {
                    return Err(format!("{views:?}: zero tokens changed the buffer"));
                }
                return Ok(true);
            }
            let want = expected_views(rope, &x, views, &pos);
            if let Some(i) = first_diff(&got, &want) {
                return Err(format!(
                    "{views:?} tokens {tokens} len {len}: element {i} {} != {}",
                    got[i], want[i]
                ));
            }
            // Poisoned copy: everything outside the declared heads is a NaN with a payload.
            // The heads must come out the same, the poison bit for bit.
            let mut covered = vec![false; len];
            for v in views {
                for t in 0..tokens {
                    for h in 0..v.n_heads {
                        let s = v.offset + t * v.token_stride + h * v.head_stride;
                        covered[s..s + hd].fill(true);
                    }
                }
            }
            let mut p = x.clone();
            for (i, e) in p.iter_mut().enumerate() {
                if !covered[i] {
                    *e = f32::poison(i as u32);
                }
            }
            let before = p.clone();
            rope.apply_views(&mut p, views, &pos).unwrap();
            for i in 0..len {
                let want = if covered[i] { got[i] } else { before[i] };
                if p[i].to_bits() != want.to_bits() {
                    return Err(format!(
                        "{views:?} tokens {tokens}: poisoned run differs at {i} (covered {})",
                        covered[i]
                    ));
                }
            }
            Ok(true)
        }
    }
}

/// Counts of the exhaustive run.
#[derive(Default)]
struct Tally {
    seen: usize,
    legit: usize,
    refused: usize,
    /// Refused legitimate pairs by kind: same token and head stride, same token stride only,
    /// different token strides.
    refused_kind: [usize; 3],
    examples: Vec<String>,
    errors: Vec<String>,
}

impl Tally {
    fn one(&mut self, rope: &Rope, views: &[View], tokens: usize, len: usize) {
        self.seen += 1;
        match run_checked(rope, views, tokens, len, self.seen as u64) {
            Err(e) => self.errors.push(e),
            Ok(accepted) => {
                if tokens > 0 && oracle(views, tokens, len, rope.head_dim()) == Some(true) {
                    self.legit += 1;
                    if !accepted {
                        self.refused += 1;
                        let kind = match views {
                            [a, b] if a.token_stride == b.token_stride => {
                                usize::from(a.head_stride != b.head_stride)
                            }
                            [_, _] => 2,
                            _ => 0,
                        };
                        if views.len() == 2 {
                            self.refused_kind[kind] += 1;
                        }
                        let shown = self
                            .examples
                            .iter()
                            .filter(|e| e.starts_with(&format!("{}", views.len())))
                            .count();
                        if shown < 4 && (views.len() == 1 || self.refused_kind[kind] <= 2) {
                            self.examples.push(format!(
                                "{} view(s): {views:?} tokens {tokens}",
                                views.len()
                            ));
                        }
                    }
                }
            }
        }
    }
}

/// Every single view and every pair of views in a small parameter space (head_dim 2, strides
/// 0..7, offsets 0..5, up to 3 tokens and 3 heads), against the brute-force oracle: nothing
/// out of bounds or overlapping is accepted; whatever is accepted rotates exactly the
/// declared heads. Legitimate configurations refused by the conservative rules are counted
/// and a few printed (they are reported, not failures).
#[test]
#[cfg_attr(
    miri,
    ignore = "over 10^5 calls; under Miri `random_views_rejected_or_contained` runs the same checks"
)]
fn validator_is_sound_exhaustive_small() {
    let rope = Rope::new(&RopeConfig::new(2, 1e4, Layout::RotateHalf))
        .unwrap()
        .with_backend(Backend::Scalar)
        .unwrap();
    let mut t = Tally::default();
    let len = 24;
    for tokens in 0..=3 {
        for n in 1..=3 {
            for ts in 0..=7 {
                for hs in 0..=7 {
                    for off in 0..=5 {
                        t.one(&rope, &[v(n, ts, hs, off)], tokens, len);
                    }
                }
            }
        }
    }
    let single = (t.legit, t.refused);
    let mut small = Vec::new();
    for n in 1..=2 {
        for ts in 0..=6 {
            for hs in 0..=6 {
                for off in 0..=5 {
                    if n == 1 && hs > 0 {
                        continue; // head_stride is irrelevant with one head
                    }
                    small.push(v(n, ts, hs, off));
                }
            }
        }
    }
    for tokens in 1..=2 {
        for a in &small {
            for b in &small {
                t.one(&rope, &[*a, *b], tokens, len);
            }
        }
    }
    println!(
        "single views: {} legitimate, {} of them refused; pairs: {} legitimate, {} refused \
         (same token and head stride {}, same token stride {}, different token strides {}); {} calls",
        single.0,
        single.1,
        t.legit - single.0,
        t.refused - single.1,
        t.refused_kind[0],
        t.refused_kind[1],
        t.refused_kind[2],
        t.seen
    );
    for e in &t.examples {
        println!("  refused although disjoint and in bounds: {e}");
    }
    assert!(
        t.errors.is_empty(),
        "{} unsound results:\n{}",
        t.errors.len(),
        t.errors[..t.errors.len().min(12)].join("\n")
    );
    assert!(t.seen > 100_000, "enumerated {}", t.seen);
}

// ---------------------------------------------------------------------------------------
// proptest: random views
// ---------------------------------------------------------------------------------------

fn any_view(max_off: usize) -> impl Strategy<Value = View> {
    let stride = prop_oneof![
        4 => 0usize..80,
        1 => Just(0usize),
        1 => (1usize..6).prop_map(|k| k * 16),
    ];
    (0usize..5, stride.clone(), stride, 0..max_off).prop_map(|(n, ts, hs, off)| View {
        n_heads: n,
        token_stride: ts,
        head_stride: hs,
        offset: off,
    })
}

fn prop_rope(i: usize, b: Backend) -> Rope {
    let cfg = match i % 3 {
        0 => RopeConfig::new(16, 1e4, Layout::RotateHalf),
        1 => RopeConfig::new(16, 1e4, Layout::Interleaved)
            .rotary_dim(6)
            .rotary_offset(5),
        _ => RopeConfig::new(8, 1e6, Layout::RotateHalf)
            .scaling(Scaling::Yarn(Yarn::new(4.0, 32_768))),
    };
    Rope::new(&cfg).unwrap().with_backend(b).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if MIRI { 6 } else { 768 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random views (1..=6 of them, strides and offsets from 0, heads from 0): either refused
    /// with the buffer untouched, or accepted, in which case the oracle agrees they are in
    /// bounds and disjoint, the declared heads are rotated exactly as `apply` would, and a
    /// NaN-poisoned copy shows nothing outside the heads was read into them or written.
    #[test]
    fn random_views_rejected_or_contained(
        views in prop_oneof![
            4 => proptest::collection::vec(any_view(200), 1..=2),
            1 => proptest::collection::vec(any_view(200), 3..=6),
        ],
        tokens in 0usize..5,
        len in 0usize..400,
        which in 0usize..3,
        bi in 0usize..8,
        seed in any::<u64>(),
    ) {
        let bs = backends();
        let rope = prop_rope(which, bs[bi % bs.len()]);
        run_checked(&rope, &views, tokens, len, seed).map_err(TestCaseError::fail)?;
    }
}
