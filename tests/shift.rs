//! K-cache shift ([`Rope::shift`]) with YaRN scaling active (Qwen2.5: factor 4 over 32768
//! original positions, theta 1e6, head_dim 128, attention factor `m = 0.1·ln 4 + 1 ≈ 1.1386`):
//! composition, norm preservation, and agreement with `apply` at the shifted position. Every
//! dtype, both layouts, full and partial rotary, every backend this machine runs.
//!
//! `apply` multiplies cos/sin by `m`; `shift` must not (the keys already carry it). The norm
//! test tells the two apart: `m − 1 = 0.139` is five orders of magnitude above the tolerance.
//!
//! # Tolerances (derived from the contract, as in `tests/properties.rs`)
//!
//! * trig: cos/sin within `E = 2.4e-7` of the truth for `|p| < 2^24`; `apply`'s table values
//!   are `fl(cos·m)`, one more f32 rounding: within `m·(E + u)` of `m·cos` (u = 2^-24).
//! * rotation: each f32 output `a·c − b·s` within `2u·(|a·c| + |b·s|)` of exact for the table's
//!   c, s (fused or not).
//!
//! For a pair `x_p = (a, b)`: the table matrix differs from `m·R` by at most `√2·m·(E + u)`
//! in operator norm, and the two rounding errors have Euclidean norm `≤ 2√2·u·|(c, s)|·|x_p|`
//! (Cauchy–Schwarz), so one rotation is within `m·δ·|x_p|` of `m·R·x_p` with
//! `δ = √2(E + u) + 2√2·u·(1 + √2(E + u))` ([`DELTA`]; `m = 1` for `shift`). Storing to f16/bf16
//! adds at most `u_T·|v|` per component (`u_T` = 2^-11 / 2^-8; f32: 0, already counted) plus
//! half the smallest subnormal. Each property below compares two paths of at most three
//! rotations and three stores in total, so the pairwise distance is at most
//! `m·|x_p|·(3δ + 3u_T)·(1 + 1e-4)` (the factor covers the second-order products
//! `δ², δ·u_T, u_T²`) `+ 3·√2·sub/2`.

mod common;

use common::backends;
use common::rng::Rng;
use core::f64::consts::SQRT_2;
use posenc::{Backend, Element, Layout, Rope, RopeConfig, Scaling, Yarn, bf16, f16};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const U: f64 = 1.0 / 16_777_216.0;
const E: f64 = 2.4e-7;
const DELTA: f64 = SQRT_2 * (E + U) + 2.0 * SQRT_2 * U * (1.0 + SQRT_2 * (E + U));
/// Positions and sums stay below this magnitude (the exact-angle contract).
const EXACT: i64 = 1 << 24;

/// A storage type: unit roundoff and half its smallest subnormal.
trait Dt: Element + std::fmt::Debug {
    const NAME: &'static str;
    const UNIT: f64;
    const HALF_SUB: f64;
    fn bits(self) -> u32;
}

impl Dt for f32 {
    const NAME: &'static str = "f32";
    const UNIT: f64 = 0.0;
    const HALF_SUB: f64 = 0.0;
    fn bits(self) -> u32 {
        self.to_bits()
    }
}

impl Dt for f16 {
    const NAME: &'static str = "f16";
    const UNIT: f64 = 1.0 / 2048.0;
    const HALF_SUB: f64 = 1.0 / 33_554_432.0; // 2^-25
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
}

impl Dt for bf16 {
    const NAME: &'static str = "bf16";
    const UNIT: f64 = 1.0 / 256.0;
    const HALF_SUB: f64 = 0.0; // 2^-134: below anything measured here
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
}

/// This file's distribution over the shared xorshift64* ([`common::rng`]).
impl Rng {
    /// Magnitude 2^-6 .. 2^6, either sign: normal in every dtype, and `m·|x|·…` stays far
    /// from f16's overflow.
    fn value(&mut self) -> f32 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let mag = (u * 12.0 - 6.0).exp2() as f32;
        if self.next() & 1 == 0 { mag } else { -mag }
    }
}

/// Qwen2.5-style YaRN: head_dim 128, theta 1e6, factor 4 over 32768; `rotary_dim` 128 or 64.
fn rope(layout: Layout, rotary_dim: usize, backend: Backend) -> Rope {
    let cfg = RopeConfig::new(128, 1e6, layout)
        .rotary_dim(rotary_dim)
        .scaling(Scaling::Yarn(Yarn::new(4.0, 32_768)));
    let r = Rope::new(&cfg).unwrap().with_backend(backend).unwrap();
    let m = r.attention_factor() as f64;
    assert!((m - (0.1 * 4f64.ln() + 1.0)).abs() < 1e-6, "m = {m}");
    r
}

/// The pairs `(i, j)` of one head's rotary channels.
fn pairs(layout: Layout, r: usize) -> Vec<(usize, usize)> {
    (0..r / 2)
        .map(|i| match layout {
            Layout::Interleaved => (2 * i, 2 * i + 1),
            Layout::RotateHalf => (i, i + r / 2),
        })
        .collect()
}

/// What one random case is made of.
#[derive(Clone, Debug)]
struct Case {
    interleaved: bool,
    partial: bool,
    tokens: usize,
    heads: usize,
    seed: u64,
}

impl Case {
    fn layout(&self) -> Layout {
        if self.interleaved {
            Layout::Interleaved
        } else {
            Layout::RotateHalf
        }
    }
    fn rotary_dim(&self) -> usize {
        if self.partial { 64 } else { 128 }
    }
    fn data<T: Dt>(&self) -> Vec<T> {
        let mut rng = Rng::new(self.seed);
        (0..self.tokens * self.heads * 128)
            .map(|_| T::from_f32(rng.value()))
            .collect()
    }
}

fn case() -> impl Strategy<Value = Case> {
    (
        any::<bool>(),
        any::<bool>(),
        1usize..=3,
        1usize..=3,
        any::<u64>(),
    )
        .prop_map(|(interleaved, partial, tokens, heads, seed)| Case {
            interleaved,
            partial,
            tokens,
            heads,
            seed,
        })
}

/// A position with `|p| < 2^23`, biased to small values and to the extremes.
fn position() -> impl Strategy<Value = i32> {
    prop_oneof![
        2 => -64i32..64,
        2 => -(1i32 << 17)..(1 << 17),
        1 => -(1i32 << 23) + 1..(1 << 23),
        1 => prop_oneof![Just((1i32 << 23) - 1), Just(-(1i32 << 23) + 1), Just(0)],
    ]
}

/// Compares `got` and `want` pair by pair against `m·|x_p|·(3δ + 3u_T)` (module docs), and
/// the channels past the rotary dim bitwise against `x`.
fn close_pairs<T: Dt>(
    c: &Case,
    x: &[T],
    got: &[T],
    want: &[T],
    m: f64,
    what: &str,
) -> Result<(), TestCaseError> {
    let r = c.rotary_dim();
    let slack = 1.0 + 1e-4;
    for (h, ((xh, gh), wh)) in x
        .chunks_exact(128)
        .zip(got.chunks_exact(128))
        .zip(want.chunks_exact(128))
        .enumerate()
    {
        for (i, j) in pairs(c.layout(), r) {
            let (a, b) = (xh[i].to_f32() as f64, xh[j].to_f32() as f64);
            let norm = a.hypot(b);
            let d = (gh[i].to_f32() as f64 - wh[i].to_f32() as f64)
                .hypot(gh[j].to_f32() as f64 - wh[j].to_f32() as f64);
            let tol = m * norm * (3.0 * DELTA + 3.0 * T::UNIT) * slack + 3.0 * SQRT_2 * T::HALF_SUB;
            prop_assert!(
                d <= tol,
                "{what} [{}]: head {h} pair ({i}, {j}): |Δ| {d:e} > tol {tol:e} (|x_p| {norm:e})",
                T::NAME
            );
        }
        for k in r..128 {
            prop_assert_eq!(gh[k].bits(), xh[k].bits(), "{} tail channel {}", what, k);
        }
    }
    Ok(())
}

/// shift(d1) then shift(d2) equals shift(d1 + d2).
fn check_compose<T: Dt>(c: &Case, d1: &[i32], d2: &[i32]) -> Result<(), TestCaseError> {
    let x: Vec<T> = c.data();
    let sum: Vec<i32> = d1.iter().zip(d2).map(|(a, b)| a + b).collect();
    for b in backends() {
        let rope = rope(c.layout(), c.rotary_dim(), b);
        let mut two = x.clone();
        rope.shift(&mut two, c.heads, d1).unwrap();
        rope.shift(&mut two, c.heads, d2).unwrap();
        let mut one = x.clone();
        rope.shift(&mut one, c.heads, &sum).unwrap();
        close_pairs(&c.clone(), &x, &two, &one, 1.0, &format!("compose {:?}", b))?;
    }
    Ok(())
}

/// Per head, over the rotary channels: `‖shift(x)‖/‖x‖ = 1` and `‖apply(x)‖/‖x‖ = m`, within
/// `δ + u_T` (relative; every pair is within it, so the head is too); and every pair's norm
/// is preserved by shift individually.
fn check_norms<T: Dt>(c: &Case, d: &[i32]) -> Result<(), TestCaseError> {
    let x: Vec<T> = c.data();
    let r = c.rotary_dim();
    let tol = (DELTA + T::UNIT) * (1.0 + 1e-4);
    for b in backends() {
        let rope = rope(c.layout(), r, b);
        let m = rope.attention_factor() as f64;
        let mut s = x.clone();
        rope.shift(&mut s, c.heads, d).unwrap();
        let mut a = x.clone();
        rope.apply(&mut a, c.heads, d).unwrap();
        for (h, ((xh, sh), ah)) in x
            .chunks_exact(128)
            .zip(s.chunks_exact(128))
            .zip(a.chunks_exact(128))
            .enumerate()
        {
            let (mut nx, mut ns, mut na) = (0.0, 0.0, 0.0);
            for (i, j) in pairs(c.layout(), r) {
                let sq = |v: &[T]| {
                    let (p, q) = (v[i].to_f32() as f64, v[j].to_f32() as f64);
                    p * p + q * q
                };
                let (px, ps) = (sq(xh).sqrt(), sq(sh).sqrt());
                prop_assert!(
                    (ps - px).abs() <= px * tol + 2.0 * T::HALF_SUB,
                    "[{} {}] head {h} pair {i}: |shift x_p| {ps:e} vs |x_p| {px:e}",
                    b.name(),
                    T::NAME
                );
                nx += sq(xh);
                ns += sq(sh);
                na += sq(ah);
            }
            let (rs, ra) = ((ns / nx).sqrt(), (na / nx).sqrt());
            prop_assert!(
                (rs - 1.0).abs() <= tol,
                "[{} {}] head {h}: shift's norm ratio {rs} (must be 1: no attention factor)",
                b.name(),
                T::NAME
            );
            prop_assert!(
                (ra - m).abs() <= m * tol,
                "[{} {}] head {h}: apply's norm ratio {ra}, attention factor {m}",
                b.name(),
                T::NAME
            );
        }
    }
    Ok(())
}

/// shift(apply(x, p), d) equals apply(x, p + d).
fn check_shift_of_apply<T: Dt>(c: &Case, p: &[i32], d: &[i32]) -> Result<(), TestCaseError> {
    let x: Vec<T> = c.data();
    let sum: Vec<i32> = p.iter().zip(d).map(|(a, b)| a + b).collect();
    for b in backends() {
        let rope = rope(c.layout(), c.rotary_dim(), b);
        let m = rope.attention_factor() as f64;
        let mut lhs = x.clone();
        rope.apply(&mut lhs, c.heads, p).unwrap();
        rope.shift(&mut lhs, c.heads, d).unwrap();
        let mut rhs = x.clone();
        rope.apply(&mut rhs, c.heads, &sum).unwrap();
        close_pairs(c, &x, &lhs, &rhs, m, &format!("shift∘apply {:?}", b))?;
    }
    Ok(())
}

fn positions(n: usize) -> impl Strategy<Value = Vec<i32>> {
    proptest::collection::vec(position(), n)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn shift_composes(
        (c, d1, d2) in case().prop_flat_map(|c| {
            let n = c.tokens;
            (Just(c), positions(n), positions(n))
        })
    ) {
        prop_assume!(d1.iter().zip(&d2).all(|(a, b)| ((*a as i64) + (*b as i64)).abs() < EXACT));
        check_compose::<f32>(&c, &d1, &d2)?;
        check_compose::<f16>(&c, &d1, &d2)?;
        check_compose::<bf16>(&c, &d1, &d2)?;
    }

    #[test]
    fn shift_preserves_norms_apply_scales_by_m(
        (c, d) in case().prop_flat_map(|c| {
            let n = c.tokens;
            (Just(c), positions(n))
        })
    ) {
        check_norms::<f32>(&c, &d)?;
        check_norms::<f16>(&c, &d)?;
        check_norms::<bf16>(&c, &d)?;
    }

    #[test]
    fn shift_of_apply_is_apply_at_sum(
        (c, p, d) in case().prop_flat_map(|c| {
            let n = c.tokens;
            (Just(c), positions(n), positions(n))
        })
    ) {
        check_shift_of_apply::<f32>(&c, &p, &d)?;
        check_shift_of_apply::<f16>(&c, &p, &d)?;
        check_shift_of_apply::<bf16>(&c, &p, &d)?;
    }
}

fn check_zero<T: Dt>() {
    let c = Case {
        interleaved: false,
        partial: false,
        tokens: 3,
        heads: 2,
        seed: 9,
    };
    for layout in [Layout::RotateHalf, Layout::Interleaved] {
        for b in backends() {
            let rope = rope(layout, 128, b);
            let x: Vec<T> = c.data();
            let mut y = x.clone();
            rope.shift(&mut y, c.heads, &[0, 0, 0]).unwrap();
            let same = x.iter().zip(&y).all(|(p, q)| p.bits() == q.bits());
            assert!(
                same,
                "{layout:?} [{} {}]: shift(0) is not the identity",
                b.name(),
                T::NAME
            );
            // apply(0) is the multiplication by m: not the identity.
            let mut z = x.clone();
            rope.apply(&mut z, c.heads, &[0, 0, 0]).unwrap();
            let m = rope.attention_factor();
            for (p, q) in x.iter().zip(&z) {
                assert_eq!(
                    q.bits(),
                    T::from_f32(p.to_f32() * m).bits(),
                    "{layout:?} [{} {}]: apply(0) is not x·m",
                    b.name(),
                    T::NAME
                );
            }
        }
    }
}

/// `shift` by 0 is bitwise the identity (cos 0 = 1 and sin 0 = 0 exactly, and no attention
/// factor), while `apply` at 0 multiplies by `m` (bitwise `round(x·m)`).
#[test]
fn shift_by_zero_is_identity_apply_by_zero_is_m() {
    check_zero::<f32>();
    check_zero::<f16>();
    check_zero::<bf16>();
}

/// `shift` validates like `apply`, and an error writes nothing.
#[test]
fn shift_errors_write_nothing() {
    let rope = rope(Layout::RotateHalf, 128, Backend::active());
    let x = vec![0.5f32; 2 * 3 * 128];
    let mut y = x.clone();
    assert!(rope.shift(&mut y, 3, &[1]).is_err());
    assert!(rope.shift(&mut y, 0, &[1, 2]).is_err());
    assert!(rope.shift(&mut y[1..], 3, &[1, 2]).is_err());
    assert!(rope.shift(&mut y, 2, &[1, 2]).is_err());
    assert_eq!(y, x);
}
