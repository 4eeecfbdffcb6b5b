//! Properties of the RoPE and sinusoidal kernels (DESIGN.md "Tests" 2), plus the accuracy of
//! the exact-angle contract.
//!
//! # Tolerances
//!
//! Every tolerance below is derived from the two numeric promises of the contract, never
//! tuned to what the implementation happens to achieve:
//!
//! * **trig**: the cos/sin a [`Rope`] uses are within `E = 2.4e-7` of the true values for
//!   every angle `|p·ω| ≤ 2^26` ([`E`]), the accuracy contract's whole domain; positions are
//!   drawn from it (`|p| ≤ 2^26`, every frequency here is ≤ 1).
//! * **rotation**: each f32 output `a·c − b·s` is within `2u·(|a·c| + |b·s|)` of the exact
//!   value for the given `c, s` (`u = 2^-24`).
//!
//! From them, for one pair `x_p = (a, b)` rotated by the true rotation `R`:
//! `|R̂x_p − R x_p| ≤ δ·|x_p|` with `δ(E) = √2·E + 2√2·u·(1 + √2·E)` ([`delta`]): the matrix
//! built from `(ĉ, ŝ)` differs from `R` by at most `√2·E` in operator norm, and by
//! Cauchy–Schwarz `(|a·c| + |b·s|)² ≤ |x_p|²·|(c, s)|²`, so the two rounding errors of the
//! pair have Euclidean norm `≤ 2√2·u·|(ĉ, ŝ)|·|x_p|`. Each test states how it combines `δ`.
//! f16/bf16 outputs add one rounding to storage, at most `u_T·|v|` per component (`u_T` =
//! 2^-11 for f16, 2^-8 for bf16) plus half the smallest subnormal, absolute.
//! All reference arithmetic is in f64; its own error (< 1e-15 relative here) is covered by a
//! `1e-12` relative slack where sums are formed.
//!
//! Runtime: about 2–4 s at the test profile's opt-level 1 on one core.

mod common;

use common::rng::Rng;
use core::f64::consts::SQRT_2;
use posenc::{Backend, Element, Layout, Rope, RopeConfig, Sinusoidal, SinusoidalLayout, bf16, f16};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// f32 unit roundoff.
const U: f64 = 1.0 / 16_777_216.0;
/// The contract: sin/cos within 2 ulp-of-1 of the truth for every angle `|p·ω| ≤ 2^26`.
const E: f64 = 2.4e-7;
/// The largest position magnitude of the contract's domain for frequencies ≤ 1.
const DOMAIN: i64 = 1 << 26;
/// f16 storage runs except under Miri with F16C compiled in: Miri has no model of the F16C
/// conversions (`vcvtps2ph`); f16 is covered natively and under qemu.
const F16: bool = !cfg!(all(miri, target_feature = "f16c"));

/// Per-pair relative error of one rotation (see the module docs).
fn delta(e: f64) -> f64 {
    SQRT_2 * e + 2.0 * SQRT_2 * U * (1.0 + SQRT_2 * e)
}

/// The trig bound that applies at position `p` (the contract's, in the whole domain).
fn trig_tol(p: i64) -> f64 {
    assert!(p.abs() <= DOMAIN, "position {p} outside the domain");
    E
}

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// xorshift64* ([`common::rng`]): deterministic data from a seed proptest chooses (and
/// shrinks). This file's distributions.
impl Rng {
    /// A normal value of magnitude 2^-8 .. 2^8, either sign (normal in f32, f16 and bf16).
    fn value(&mut self) -> f32 {
        let mag = (self.unit() * 16.0 - 8.0).exp2();
        if self.next() & 1 == 0 {
            mag as f32
        } else {
            -mag as f32
        }
    }
    /// Like [`Rng::value`], but one in eight is a special: ±0, ±inf, NaNs with payloads,
    /// subnormals, extremes.
    fn any_f32(&mut self) -> f32 {
        const SPECIAL: [u32; 12] = [
            0x0000_0000,
            0x8000_0000,
            0x7F80_0000,
            0xFF80_0000,
            0x7FC0_0000,
            0x7F80_0001,
            0xFFC1_2345,
            0x7FBF_FFFF,
            0x0000_0001,
            0x8012_3456,
            0x7F7F_FFFF,
            0x0080_0000,
        ];
        if self.below(8) == 0 {
            f32::from_bits(SPECIAL[self.below(SPECIAL.len() as u64) as usize])
        } else {
            self.value()
        }
    }
}

/// Storage types with their bits and rounding unit.
trait Dt: Element {
    /// Unit roundoff of the storage type relative to f32 (0 for f32: the kernel's f32 value
    /// is stored as is).
    const UNIT: f64;
    /// Half the smallest subnormal: the absolute part of one rounding to the storage type.
    const TINY: f64;
    fn bits(self) -> u32;
    fn from_bits32(b: u32) -> Self;
}

impl Dt for f32 {
    const UNIT: f64 = 0.0;
    const TINY: f64 = 0.0;
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn from_bits32(b: u32) -> Self {
        f32::from_bits(b)
    }
}

impl Dt for f16 {
    const UNIT: f64 = 1.0 / 2048.0;
    const TINY: f64 = 1.0 / 33_554_432.0; // 2^-25
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn from_bits32(b: u32) -> Self {
        f16::from_bits(b as u16)
    }
}

impl Dt for bf16 {
    const UNIT: f64 = 1.0 / 256.0;
    const TINY: f64 = 1e-40;
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn from_bits32(b: u32) -> Self {
        bf16::from_bits(b as u16)
    }
}

fn f64s<T: Element>(x: &[T]) -> Vec<f64> {
    x.iter().map(|v| v.to_f32() as f64).collect()
}

fn bits<T: Dt>(x: &[T]) -> Vec<u32> {
    x.iter().map(|v| v.bits()).collect()
}

/// Bitwise equality, except that any NaN equals any NaN. Rust (like IEEE 754) leaves the
/// payload and sign of a NaN produced from NaN operands unspecified: when two NaNs meet in
/// `a·c − b·s`, which one survives depends on the compiler's operand order (LLVM treats
/// `fadd` as commutative), so no kernel can promise NaN bits. Everything else, including
/// the sign of zero, is compared bit for bit.
fn same<T: Dt>(a: T, b: T) -> bool {
    a.bits() == b.bits() || (a.to_f32().is_nan() && b.to_f32().is_nan())
}

fn norm(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// The pairs `(ia, ib)` of a head.
fn pairs(layout: Layout, rotary_dim: usize) -> impl Iterator<Item = (usize, usize)> {
    let half = rotary_dim / 2;
    (0..half).map(move |i| match layout {
        Layout::Interleaved => (2 * i, 2 * i + 1),
        Layout::RotateHalf => (i, i + half),
    })
}

fn available() -> impl Iterator<Item = Backend> {
    Backend::available()
}

/// Under Miri, which runs every case a few thousand times slower: fewer and narrower cases,
/// the same code paths (`cfg(miri)` sizes; `fixed_shapes` walks each path on purpose).
const MIRI: bool = cfg!(miri);

/// (head_dim, rotary_dim): full and partial rotary, pair counts below, at and across the
/// lane widths and the 64-pair chunk of the drivers. Under Miri up to 16 pairs: one pair,
/// tails below and across the 8 lanes of the tiers Miri runs, whole vectors (16 pairs), full
/// and partial.
const DIMS: &[(usize, usize)] = if MIRI {
    &[
        (2, 2),
        (6, 2),
        (10, 6),
        (30, 18),
        (18, 18),
        (32, 32),
        (40, 32),
    ]
} else {
    &[
        (2, 2),
        (6, 2),
        (8, 8),
        (10, 6),
        (30, 18),
        (64, 64),
        (64, 16),
        (80, 64),
        (96, 96),
        (128, 128),
        (128, 32),
        (130, 130),
        (256, 64),
        (256, 256),
    ]
};
const BASES: &[f32] = &[10_000.0, 500_000.0, 1_000_000.0, 100.0];

fn layout_of(interleaved: bool) -> Layout {
    if interleaved {
        Layout::Interleaved
    } else {
        Layout::RotateHalf
    }
}

/// Positions over the contract's domain `|p| ≤ 2^26` (frequencies ≤ 1), edges included.
fn position() -> impl Strategy<Value = i32> {
    let edge = DOMAIN as i32;
    prop_oneof![
        6 => -edge..=edge,
        2 => 0..4096i32,
        1 => prop::sample::select(vec![
            0, 1, -1, edge, -edge, edge - 1, 1 - edge, 1 << 24, -(1 << 24),
        ]),
    ]
}

/// `(m, d)` with `m + d` in the domain (flipping the sign of `d` when it would leave it:
/// then `m` and `d` have the same sign, so `|m − d| ≤ max(|m|, |d|)` stays inside).
fn fit_sum(m: i32, d: i32) -> (i32, i32) {
    if ((m as i64) + (d as i64)).abs() <= DOMAIN {
        (m, d)
    } else {
        (m, -d)
    }
}

#[derive(Clone, Debug)]
struct Shape {
    head_dim: usize,
    rotary_dim: usize,
    base: f32,
    layout: Layout,
    n_heads: usize,
    positions: Vec<i32>,
    seed: u64,
}

impl Shape {
    fn rope(&self, layout: Layout) -> Rope {
        let cfg = RopeConfig::new(self.head_dim, self.base, layout).rotary_dim(self.rotary_dim);
        Rope::new(&cfg).unwrap()
    }
    fn len(&self) -> usize {
        self.positions.len() * self.n_heads * self.head_dim
    }
    /// Token of the flat element / head index `h` (of `n_heads` per token).
    fn token_of_head(&self, h: usize) -> usize {
        h / self.n_heads
    }
}

fn shape(max_tokens: usize) -> impl Strategy<Value = Shape> {
    (
        0..DIMS.len(),
        0..BASES.len(),
        any::<bool>(),
        1usize..4,
        // (Under Miri at most two tokens: a stream, at a fraction of the cost.)
        vec(
            position(),
            1..=if MIRI { max_tokens.min(2) } else { max_tokens },
        ),
        any::<u64>(),
    )
        .prop_map(|(d, b, il, n_heads, positions, seed)| Shape {
            head_dim: DIMS[d].0,
            rotary_dim: DIMS[d].1,
            base: BASES[b],
            layout: layout_of(il),
            n_heads,
            positions,
            seed,
        })
}

/// `cases` natively; 1 under Miri, which runs every case a few thousand times slower
/// (`fixed_shapes` covers the paths a single random case may miss).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: if MIRI { 1 } else { cases },
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// norm preservation
// ---------------------------------------------------------------------------------------

/// Per head: `| ‖y‖ − ‖x‖ | ≤ ‖y − R x‖ ≤ δ·‖x‖` (pairs are orthogonal, the tail is
/// untouched); in f16/bf16 plus one rounding of every output, `≤ u_T·(1 + δ)·‖x‖` and the
/// subnormal slack `√head_dim · TINY`.
fn check_norm<T: Dt>(s: &Shape) -> Result<(), TestCaseError> {
    let mut rng = Rng::new(s.seed);
    let x: Vec<T> = (0..s.len()).map(|_| T::from_f32(rng.value())).collect();
    for backend in available() {
        let rope = s.rope(s.layout).with_backend(backend).unwrap();
        let mut y = x.clone();
        rope.apply(&mut y, s.n_heads, &s.positions).unwrap();
        let (xf, yf) = (f64s(&x), f64s(&y));
        for (h, (hx, hy)) in xf.chunks(s.head_dim).zip(yf.chunks(s.head_dim)).enumerate() {
            let p = s.positions[s.token_of_head(h)] as i64;
            let d = delta(trig_tol(p));
            let (nx, ny) = (norm(hx), norm(hy));
            let tol = d * nx + T::UNIT * (1.0 + d) * nx + (s.head_dim as f64).sqrt() * T::TINY;
            prop_assert!(
                (ny - nx).abs() <= tol,
                "{backend:?} {:?} head {h} p {p}: |x| {nx} |Rx| {ny} diff {:e} tol {tol:e}",
                T::DTYPE,
                (ny - nx).abs()
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn norm_preserved_f32(s in shape(4)) {
        check_norm::<f32>(&s)?;
    }

    #[test]
    fn norm_preserved_f16_bf16(s in shape(2)) {
        if F16 {
            check_norm::<f16>(&s)?;
        }
        check_norm::<bf16>(&s)?;
    }
}

// ---------------------------------------------------------------------------------------
// relative position, composition, inverse
// ---------------------------------------------------------------------------------------

/// `<R(m)q, R(n)k> = <q, R(n−m)k>` per head, dot products in f64.
///
/// With `q̂ = R q + e_q`, `|e_q| ≤ δ_m|q_p|` per pair, and likewise for `k̂` at `n` and at
/// `n − m`: `|<q̂, k̂> − <Rq, R'k>| ≤ (δ_m + δ_n + δ_m·δ_n)·Σ_p |q_p||k_p|` and
/// `|<q, k̂_d> − <q, R_d k>| ≤ δ_d·Σ_p |q_p||k_p|`; the exact values agree because the exact
/// angles are additive (`nω − mω = (n − m)ω`). The tail channels are identical on both sides.
fn check_relative(
    s: &Shape,
    m: i32,
    d: i32,
    k_heads_seed: u64,
    backend: Backend,
) -> Result<(), TestCaseError> {
    let n = m + d;
    let rope = s.rope(s.layout).with_backend(backend).unwrap();
    let len = s.n_heads * s.head_dim;
    let mut rng = Rng::new(s.seed ^ k_heads_seed);
    let q: Vec<f32> = (0..len).map(|_| rng.value()).collect();
    let k: Vec<f32> = (0..len).map(|_| rng.value()).collect();
    let (mut qm, mut kn, mut kd) = (q.clone(), k.clone(), k.clone());
    rope.apply(&mut qm, s.n_heads, &[m]).unwrap();
    rope.apply(&mut kn, s.n_heads, &[n]).unwrap();
    rope.apply(&mut kd, s.n_heads, &[d]).unwrap();
    let (dm, dn, dd) = (
        delta(trig_tol(m as i64)),
        delta(trig_tol(n as i64)),
        delta(trig_tol(d as i64)),
    );
    let tol_rel = dm + dn + dm * dn + dd;
    for h in 0..s.n_heads {
        let r = h * s.head_dim..(h + 1) * s.head_dim;
        let dot = |a: &[f32], b: &[f32]| -> f64 {
            a[r.clone()]
                .iter()
                .zip(&b[r.clone()])
                .map(|(&x, &y)| x as f64 * y as f64)
                .sum()
        };
        let lhs = dot(&qm, &kn);
        let rhs = dot(&q, &kd);
        let (qh, kh) = (&q[r.clone()], &k[r.clone()]);
        let pair_mass: f64 = pairs(s.layout, s.rotary_dim)
            .map(|(a, b)| {
                let qp = (qh[a] as f64).hypot(qh[b] as f64);
                let kp = (kh[a] as f64).hypot(kh[b] as f64);
                qp * kp
            })
            .sum();
        let abs_mass: f64 = qh
            .iter()
            .zip(kh)
            .map(|(&x, &y)| (x as f64 * y as f64).abs())
            .sum();
        let tol = tol_rel * pair_mass + 1e-12 * abs_mass;
        prop_assert!(
            (lhs - rhs).abs() <= tol,
            "{backend:?} head {h} m {m} n {n}: <R(m)q,R(n)k> {lhs} <q,R(n-m)k> {rhs} diff {:e} tol {tol:e}",
            (lhs - rhs).abs()
        );
    }
    Ok(())
}

/// Per pair Euclidean distance `|a_p − b_p| ≤ tol·|x_p| + abs`; tail channels bitwise equal.
fn check_pairs_close(
    s: &Shape,
    x: &[f32],
    a: &[f32],
    b: &[f32],
    tol_of_token: impl Fn(usize) -> f64,
    what: &str,
) -> Result<(), TestCaseError> {
    for (h, ((hx, ha), hb)) in x
        .chunks(s.head_dim)
        .zip(a.chunks(s.head_dim))
        .zip(b.chunks(s.head_dim))
        .enumerate()
    {
        let t = s.token_of_head(h);
        let tol = tol_of_token(t);
        for (i, j) in pairs(s.layout, s.rotary_dim) {
            let xp = (hx[i] as f64).hypot(hx[j] as f64);
            let dist = (ha[i] as f64 - hb[i] as f64).hypot(ha[j] as f64 - hb[j] as f64);
            prop_assert!(
                dist <= tol * xp,
                "{what}: head {h} token {t} pair ({i},{j}): {:?} vs {:?} from {:?}, dist {dist:e} tol {:e}",
                (ha[i], ha[j]),
                (hb[i], hb[j]),
                (hx[i], hx[j]),
                tol * xp
            );
        }
        for c in s.rotary_dim..s.head_dim {
            prop_assert_eq!(
                ha[c].to_bits(),
                hb[c].to_bits(),
                "{} tail channel {}",
                what,
                c
            );
        }
    }
    Ok(())
}

/// apply(p1) then apply(p2) vs apply(p1 + p2): with `A = R̂₂ŷ`, `ŷ = R̂₁x`,
/// `|A − R₂R₁x| ≤ (δ₁ + δ₂ + δ₁δ₂)|x_p|` and `|B − R₃x| ≤ δ₃|x_p|`, where `R₃ = R₂R₁`
/// exactly (the angles are exact), so per pair `|A − B| ≤ (δ₁ + δ₂ + δ₁δ₂ + δ₃)|x_p|`.
fn check_composition(s: &Shape, p2: &[i32], backend: Backend) -> Result<(), TestCaseError> {
    let rope = s.rope(s.layout).with_backend(backend).unwrap();
    let (p1, p2): (Vec<i32>, Vec<i32>) = s
        .positions
        .iter()
        .zip(p2.iter().cycle())
        .map(|(&a, &b)| fit_sum(a, b))
        .unzip();
    let p3: Vec<i32> = p1.iter().zip(&p2).map(|(a, b)| a + b).collect();
    let mut rng = Rng::new(s.seed);
    let x: Vec<f32> = (0..s.len()).map(|_| rng.value()).collect();
    let mut a = x.clone();
    rope.apply(&mut a, s.n_heads, &p1).unwrap();
    rope.apply(&mut a, s.n_heads, &p2).unwrap();
    let mut b = x.clone();
    rope.apply(&mut b, s.n_heads, &p3).unwrap();
    let tol = |t: usize| {
        let (d1, d2, d3) = (
            delta(trig_tol(p1[t] as i64)),
            delta(trig_tol(p2[t] as i64)),
            delta(trig_tol(p3[t] as i64)),
        );
        d1 + d2 + d1 * d2 + d3
    };
    check_pairs_close(
        s,
        &x,
        &a,
        &b,
        tol,
        &format!("{backend:?} composition p1 {p1:?} p2 {p2:?}"),
    )
}

/// `apply_inverse ∘ apply`: both use the same `(ĉ, ŝ)` (the inverse negates `ŝ`, exactly),
/// so `R̂ᵀR̂ = ρ²·I` with `ρ = |(ĉ, ŝ)| ≤ 1 + √2E`, and per pair
/// `|z − x| ≤ (ρ² − 1)|x_p| + ρ·|e₁| + |e₂|` with rounding errors
/// `|e₁| ≤ 2√2uρ|x_p|`, `|e₂| ≤ 2√2uρ(ρ + 2√2uρ)|x_p|`. f16/bf16 add two roundings to
/// storage of vectors of norm `≤ ρ(1 + …)|x_p|`: `2.1·u_T·|x_p|` and the subnormal slack.
/// The trig bound here only needs `ĉ² + ŝ² ≈ 1`, which holds at every position (the values
/// come from the polynomial on the reduced argument), so `E` applies over the full range.
fn check_inverse<T: Dt>(s: &Shape, backend: Backend) -> Result<(), TestCaseError> {
    let rope = s.rope(s.layout).with_backend(backend).unwrap();
    let mut rng = Rng::new(s.seed);
    let x: Vec<T> = (0..s.len()).map(|_| T::from_f32(rng.value())).collect();
    let mut z = x.clone();
    rope.apply(&mut z, s.n_heads, &s.positions).unwrap();
    rope.apply_inverse(&mut z, s.n_heads, &s.positions).unwrap();
    let rho = 1.0 + SQRT_2 * E;
    let e1 = 2.0 * SQRT_2 * U * rho;
    let tol = (rho * rho - 1.0) + rho * e1 + 2.0 * SQRT_2 * U * rho * (rho + e1) + 2.1 * T::UNIT;
    let (xf, zf) = (f64s(&x), f64s(&z));
    for (h, (hx, hz)) in xf.chunks(s.head_dim).zip(zf.chunks(s.head_dim)).enumerate() {
        for (i, j) in pairs(s.layout, s.rotary_dim) {
            let xp = hx[i].hypot(hx[j]);
            let dist = (hz[i] - hx[i]).hypot(hz[j] - hx[j]);
            prop_assert!(
                dist <= tol * xp + 4.0 * T::TINY,
                "{backend:?} {:?} head {h} pair ({i},{j}): {:?} -> {:?}, dist {dist:e} tol {:e}",
                T::DTYPE,
                (hx[i], hx[j]),
                (hz[i], hz[j]),
                tol * xp
            );
        }
    }
    // The tail: bitwise untouched.
    for (hx, hz) in x.chunks(s.head_dim).zip(z.chunks(s.head_dim)) {
        prop_assert_eq!(
            bits(&hx[s.rotary_dim..]),
            bits(&hz[s.rotary_dim..]),
            "tail changed"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn relative_position(s in shape(1), m in position(), d in position(), k_seed in any::<u64>()) {
        let (m, d) = fit_sum(m, d);
        for backend in available() {
            check_relative(&s, m, d, k_seed, backend)?;
        }
    }

    #[test]
    fn composition(s in shape(4), p2 in vec(position(), 1..=4)) {
        for backend in available() {
            check_composition(&s, &p2, backend)?;
        }
    }

    #[test]
    fn inverse_after_apply_is_identity(s in shape(4)) {
        for backend in available() {
            check_inverse::<f32>(&s, backend)?;
            if F16 {
                check_inverse::<f16>(&s, backend)?;
            }
            check_inverse::<bf16>(&s, backend)?;
        }
    }
}

// ---------------------------------------------------------------------------------------
// layout equivalence (bitwise)
// ---------------------------------------------------------------------------------------

/// Interleaved order → rotate_half order, per head; the tail is copied.
fn to_rotate_half<T: Copy>(x: &[T], head_dim: usize, rotary_dim: usize) -> Vec<T> {
    let half = rotary_dim / 2;
    let mut out = x.to_vec();
    for (o, h) in out.chunks_mut(head_dim).zip(x.chunks(head_dim)) {
        for i in 0..half {
            o[i] = h[2 * i];
            o[i + half] = h[2 * i + 1];
        }
    }
    out
}

/// rotate_half order → interleaved order, per head.
fn to_interleaved<T: Copy>(x: &[T], head_dim: usize, rotary_dim: usize) -> Vec<T> {
    let half = rotary_dim / 2;
    let mut out = x.to_vec();
    for (o, h) in out.chunks_mut(head_dim).zip(x.chunks(head_dim)) {
        for i in 0..half {
            o[2 * i] = h[i];
            o[2 * i + 1] = h[i + half];
        }
    }
    out
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Apply,
    Inverse,
    Table,
}

/// Runs `op` with `layout` on `backend`; the table is tokens × rotary_dim/2.
fn run_op<T: Dt>(
    s: &Shape,
    op: Op,
    layout: Layout,
    backend: Backend,
    x: &mut [T],
    cos: &[f32],
    sin: &[f32],
) {
    match op {
        Op::Apply => s
            .rope(layout)
            .with_backend(backend)
            .unwrap()
            .apply(x, s.n_heads, &s.positions)
            .unwrap(),
        Op::Inverse => s
            .rope(layout)
            .with_backend(backend)
            .unwrap()
            .apply_inverse(x, s.n_heads, &s.positions)
            .unwrap(),
        Op::Table => common::table_on(backend, x, s.n_heads, s.head_dim, layout, cos, sin).unwrap(),
    }
}

/// permute(interleaved → rotate_half), RotateHalf, permute back == Interleaved, bit for bit
/// (NaN payloads excepted, see [`same`]), on every available backend. Inputs include NaNs,
/// infinities, zeros and subnormals.
fn check_layouts<T: Dt>(s: &Shape, op: Op) -> Result<(), TestCaseError> {
    let mut rng = Rng::new(s.seed);
    let x: Vec<T> = (0..s.len()).map(|_| T::from_f32(rng.any_f32())).collect();
    let n_tab = s.positions.len() * s.rotary_dim / 2;
    // Arbitrary finite tables (NaN tables: `layout_equivalence_nan_table`).
    let cos: Vec<f32> = (0..n_tab).map(|_| rng.value()).collect();
    let sin: Vec<f32> = (0..n_tab).map(|_| rng.value()).collect();
    for backend in available() {
        let mut il = x.clone();
        run_op(s, op, Layout::Interleaved, backend, &mut il, &cos, &sin);
        let mut rh = to_rotate_half(&x, s.head_dim, s.rotary_dim);
        run_op(s, op, Layout::RotateHalf, backend, &mut rh, &cos, &sin);
        let back = to_interleaved(&rh, s.head_dim, s.rotary_dim);
        if let Some(at) = (0..il.len()).find(|&i| !same(il[i], back[i])) {
            prop_assert!(
                false,
                "{backend:?} {:?} {op:?}: element {at} (channel {}): interleaved {:#x} vs permuted rotate_half {:#x}, input {:#x}",
                T::DTYPE,
                at % s.head_dim,
                il[at].bits(),
                back[at].bits(),
                x[at].bits()
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn layout_equivalence_bitwise(s in shape(3)) {
        for op in [Op::Apply, Op::Inverse, Op::Table] {
            check_layouts::<f32>(&s, op)?;
            if F16 {
                check_layouts::<f16>(&s, op)?;
            }
            check_layouts::<bf16>(&s, op)?;
        }
    }
}

/// Layout equivalence with a caller table that holds NaNs (a caller's table can hold
/// anything): the same elements are NaN, everything else bitwise.
#[test]
fn layout_equivalence_nan_table() {
    let (head_dim, tokens) = (16, 2);
    let half = head_dim / 2;
    let x: Vec<f32> = (0..tokens * head_dim).map(|i| i as f32 - 7.5).collect();
    let mut cos = vec![0.5f32; tokens * half];
    let mut sin = vec![0.25f32; tokens * half];
    sin[1] = f32::NAN;
    sin[half + 3] = -f32::NAN;
    cos[2] = f32::NAN;
    for backend in available() {
        let mut il = x.clone();
        common::table_on(
            backend,
            &mut il,
            1,
            head_dim,
            Layout::Interleaved,
            &cos,
            &sin,
        )
        .unwrap();
        let mut rh = to_rotate_half(&x, head_dim, head_dim);
        common::table_on(
            backend,
            &mut rh,
            1,
            head_dim,
            Layout::RotateHalf,
            &cos,
            &sin,
        )
        .unwrap();
        let back = to_interleaved(&rh, head_dim, head_dim);
        for (i, (&a, &b)) in il.iter().zip(&back).enumerate() {
            assert!(
                same(a, b),
                "{backend:?}: element {i}: {:#010x} with Interleaved, {:#010x} with RotateHalf",
                a.to_bits(),
                b.to_bits()
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// partial rotary: the tail is untouched bit for bit
// ---------------------------------------------------------------------------------------

/// Channels `rotary_dim..head_dim` of every head keep their bits, whatever they hold (random
/// bit patterns: signalling and quiet NaNs with payloads, infinities, subnormals), for every
/// operation and backend.
fn check_tail<T: Dt>(s: &Shape, op: Op) -> Result<(), TestCaseError> {
    let mut rng = Rng::new(s.seed);
    let x: Vec<T> = (0..s.len())
        .map(|i| {
            if i % s.head_dim < s.rotary_dim {
                T::from_f32(rng.any_f32())
            } else if rng.below(4) == 0 {
                // A NaN with a random payload, signalling or quiet.
                let nan = if T::DTYPE == posenc::Dtype::F32 {
                    0x7F80_0000 | (rng.next() as u32 & 0x807F_FFFF).max(1)
                } else if T::DTYPE == posenc::Dtype::F16 {
                    0x7C00 | (rng.next() as u32 & 0x83FF).max(1)
                } else {
                    0x7F80 | (rng.next() as u32 & 0x807F).max(1)
                };
                T::from_bits32(nan)
            } else {
                T::from_bits32(rng.next() as u32)
            }
        })
        .collect();
    let n_tab = s.positions.len() * s.rotary_dim / 2;
    let cos: Vec<f32> = (0..n_tab).map(|_| rng.value()).collect();
    let sin: Vec<f32> = (0..n_tab).map(|_| rng.value()).collect();
    for backend in available() {
        let mut y = x.clone();
        run_op(s, op, s.layout, backend, &mut y, &cos, &sin);
        for (h, (hx, hy)) in x.chunks(s.head_dim).zip(y.chunks(s.head_dim)).enumerate() {
            prop_assert_eq!(
                bits(&hx[s.rotary_dim..]),
                bits(&hy[s.rotary_dim..]),
                "{:?} {:?} {:?} head {}: tail changed",
                backend,
                T::DTYPE,
                op,
                h
            );
        }
    }
    Ok(())
}

fn partial_shape() -> impl Strategy<Value = Shape> {
    shape(3).prop_filter("partial rotary", |s| s.rotary_dim < s.head_dim)
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn partial_rotary_tail_untouched(s in partial_shape()) {
        for op in [Op::Apply, Op::Inverse, Op::Table] {
            check_tail::<f32>(&s, op)?;
            if F16 {
                check_tail::<f16>(&s, op)?;
            }
            check_tail::<bf16>(&s, op)?;
        }
    }
}

// ---------------------------------------------------------------------------------------
// fixed shapes: every kernel path, deterministically
// ---------------------------------------------------------------------------------------

/// The shapes [`fixed_shapes`] runs (the proptests above draw theirs at random): whole
/// vectors of pairs (16 pairs) and partial last vectors (9), full and partial rotary, both
/// layouts, one token with four heads (the decode pass: four heads at a time) and streams of
/// two tokens, positions at the domain's edges.
fn fixed() -> Vec<Shape> {
    let edge = DOMAIN as i32;
    let shape = |head_dim, rotary_dim, base, layout, n_heads, positions: &[i32], seed| Shape {
        head_dim,
        rotary_dim,
        base,
        layout,
        n_heads,
        positions: positions.to_vec(),
        seed,
    };
    vec![
        shape(32, 32, 500_000.0, Layout::RotateHalf, 4, &[edge], 1),
        shape(18, 18, 10_000.0, Layout::Interleaved, 2, &[-1, 1 << 24], 2),
        shape(30, 18, 100.0, Layout::RotateHalf, 3, &[0, 1 - edge], 3),
        shape(40, 32, 1e6, Layout::Interleaved, 4, &[77], 4),
    ]
}

/// Every property above on the [`fixed`] shapes, on every backend, and the sinusoidal ones at
/// a width of one whole vector and a tail (9 pairs): under Miri, where each proptest runs one
/// random case, this makes sure every kernel path is walked. The layout property (both
/// layouts, f32 and bf16) runs on every shape, one of its three operations per shape in turn,
/// as does the tail property on the partial ones; the others take the shapes in turn.
#[test]
fn fixed_shapes() {
    let run = || -> Result<(), TestCaseError> {
        for (k, s) in fixed().iter().enumerate() {
            let op = [Op::Apply, Op::Inverse, Op::Table][k % 3];
            check_layouts::<f32>(s, op)?;
            if F16 {
                check_layouts::<f16>(s, op)?;
            }
            check_layouts::<bf16>(s, op)?;
            if s.rotary_dim < s.head_dim {
                check_tail::<f32>(s, op)?;
                if F16 {
                    check_tail::<f16>(s, op)?;
                }
                check_tail::<bf16>(s, op)?;
            }
            if k % 2 == 0 {
                check_norm::<f32>(s)?;
                if F16 {
                    check_norm::<f16>(s)?;
                }
                check_norm::<bf16>(s)?;
            } else {
                for backend in available() {
                    check_inverse::<f32>(s, backend)?;
                    if F16 {
                        check_inverse::<f16>(s, backend)?;
                    }
                    check_inverse::<bf16>(s, backend)?;
                }
            }
            let (m, d) = fit_sum(s.positions[0], 12_345);
            for backend in available() {
                if k % 2 == 0 {
                    check_relative(s, m, d, 7, backend)?;
                } else {
                    check_composition(s, &[-(1 << 20), 3], backend)?;
                }
            }
        }
        // Two rows a step after an anchor, near the top of the domain.
        let first = (1 << 26) - 255;
        check_sin_dots(
            18,
            10_000.0,
            SinusoidalLayout::Interleaved,
            5,
            -(1 << 23),
            64,
        )?;
        check_sin_fill::<f32>(18, 10_000.0, SinusoidalLayout::Interleaved, first, 2)?;
        if F16 {
            check_sin_fill::<f16>(18, 10_000.0, SinusoidalLayout::Split, first, 2)?;
        }
        check_sin_fill::<bf16>(18, 10_000.0, SinusoidalLayout::Split, first, 2)?;
        Ok(())
    };
    if let Err(e) = run() {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------
// sinusoidal
// ---------------------------------------------------------------------------------------

const D_MODELS: &[usize] = &[2, 4, 8, 10, 64, 66, 128, 130, 512];

/// The widths the sinusoidal properties are checked at: all of [`D_MODELS`], or under Miri
/// the narrow ones (they still take the lane tails; `fixed_shapes` adds whole vectors).
fn sin_widths() -> &'static [usize] {
    if MIRI { &D_MODELS[..4] } else { D_MODELS }
}

/// `first` natively; under Miri the first row of its anchor block plus `first % 3`. `fill`
/// steps each column from the block's anchor (a multiple of 256) to `first`, up to 255 rows,
/// which Miri interprets thousands of times slower; a step or two still walks that path.
fn near_anchor(first: u32) -> u32 {
    if MIRI {
        first - first % 256 + first % 3
    } else {
        first
    }
}

fn sin_layout_of(interleaved: bool) -> SinusoidalLayout {
    if interleaved {
        SinusoidalLayout::Interleaved
    } else {
        SinusoidalLayout::Split
    }
}

/// `ω_i = base^(−2i/d)` in f64, the formula.
fn sin_freq(base: f32, i: usize, d: usize) -> f64 {
    (base as f64).powf(-((2 * i) as f64) / d as f64)
}

/// `<PE(t), PE(t + k)> = Σ_i cos(k·ω_i)`, whatever `t`. Each table value is within `E` of the
/// formula (`|p| < 2^24`), so per pair `|ŝ₁ŝ₂ + ĉ₁ĉ₂ − (s₁s₂ + c₁c₂)| ≤
/// E·(|s₁| + |c₁| + |s₂| + |c₂|) + 2E² ≤ 2√2·E + 2E²`: the dot is within
/// `(d/2)·(2√2E + 2E²)` of `Σ cos(kω_i)` (checked), and two dots within twice that of each
/// other (checked).
fn check_sin_dots(
    d: usize,
    base: f32,
    layout: SinusoidalLayout,
    t1: i32,
    t2: i32,
    k: i32,
) -> Result<(), TestCaseError> {
    let pe = Sinusoidal::new(d, base, layout).unwrap();
    let bound = (d / 2) as f64 * (2.0 * SQRT_2 * E + 2.0 * E * E) + 1e-12 * d as f64;
    let truth: f64 = (0..d / 2)
        .map(|i| (k as f64 * sin_freq(base, i, d)).cos())
        .sum();
    for backend in available() {
        let pe = pe.with_backend(backend).unwrap();
        let mut out = vec![0f32; 4 * d];
        pe.fill_positions(&mut out, &[t1, t1 + k, t2, t2 + k])
            .unwrap();
        let rows: Vec<&[f32]> = out.chunks(d).collect();
        let dot = |a: &[f32], b: &[f32]| -> f64 {
            a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
        };
        let (d1, d2) = (dot(rows[0], rows[1]), dot(rows[2], rows[3]));
        prop_assert!(
            (d1 - truth).abs() <= bound && (d2 - truth).abs() <= bound,
            "{backend:?} d {d} {layout:?} k {k}: <PE({t1}),PE(+k)> {d1}, <PE({t2}),PE(+k)> {d2}, Σcos(kω) {truth}, bound {bound:e}"
        );
        prop_assert!((d1 - d2).abs() <= 2.0 * bound);
    }
    Ok(())
}

/// `fill_positions(first..)` and `add` onto zeros give the same table, bit for bit (`0 + v = v`
/// exactly in f32, then the same single rounding; a `−0` entry would become `+0` under `add`,
/// so zeros are compared by value). `fill(first)` runs the f64 recurrence instead of the
/// direct method, so it is not bitwise `fill_positions`: its f32 table is within the contract
/// of the f64 formula (and within `2E` of `fill_positions`), its f16/bf16 tables are that f32
/// table rounded once, and every row is a function of its position alone (a one-row fill
/// gives the same row).
fn check_sin_fill<T: Dt>(
    d: usize,
    base: f32,
    layout: SinusoidalLayout,
    first: u32,
    rows: usize,
) -> Result<(), TestCaseError> {
    let pe = Sinusoidal::new(d, base, layout).unwrap();
    let positions: Vec<i32> = (0..rows).map(|r| (first as usize + r) as i32).collect();
    let half = d / 2;
    for backend in available() {
        let pe = pe.with_backend(backend).unwrap();
        let mut a = vec![T::from_f32(f32::NAN); rows * d];
        let mut a32 = vec![f32::NAN; rows * d];
        let mut b = a.clone();
        let mut b32 = a32.clone();
        let mut c = vec![T::from_f32(0.0); rows * d];
        pe.fill(&mut a, first).unwrap();
        pe.fill(&mut a32, first).unwrap();
        pe.fill_positions(&mut b, &positions).unwrap();
        pe.fill_positions(&mut b32, &positions).unwrap();
        pe.add(&mut c, &positions).unwrap();
        for (i, (x, y)) in b.iter().zip(&c).enumerate() {
            let same = x.bits() == y.bits() || (x.to_f32() == 0.0 && y.to_f32() == 0.0);
            prop_assert!(
                same,
                "{backend:?} {:?} d {d} element {i}: fill_positions {:#x} vs add onto 0 {:#x}",
                T::DTYPE,
                x.bits(),
                y.bits()
            );
        }
        for (i, (x, &y)) in a.iter().zip(&a32).enumerate() {
            prop_assert_eq!(
                x.bits(),
                T::from_f32(y).bits(),
                "{:?} fill: f32 rounded once, element {}",
                backend,
                i
            );
        }
        for (r, row) in a32.chunks(d).enumerate() {
            let p = (first as usize + r) as f64;
            // The contract holds over the whole domain (`first + rows − 1 ≤ 2^26`).
            for i in 0..half {
                let (ts, tc) = (p * sin_freq(base, i, d)).sin_cos();
                let (is, ic) = match layout {
                    SinusoidalLayout::Interleaved => (2 * i, 2 * i + 1),
                    SinusoidalLayout::Split => (i, half + i),
                    SinusoidalLayout::SplitCosFirst => (half + i, i),
                };
                let e = (row[is] as f64 - ts).abs().max((row[ic] as f64 - tc).abs());
                prop_assert!(
                    e <= E,
                    "{:?} fill row {} pair {}: error {:e}",
                    backend,
                    r,
                    i,
                    e
                );
            }
            let mut one = vec![f32::NAN; d];
            pe.fill(&mut one, first + r as u32).unwrap();
            prop_assert_eq!(
                bits(&one),
                bits(row),
                "{:?} one-row fill of row {}",
                backend,
                r
            );
        }
        // Both within E of the formula.
        let tol = 2.0 * E;
        for (x, y) in a32.iter().zip(&b32) {
            prop_assert!(
                ((x - y).abs() as f64) <= tol,
                "{:?} fill {} vs fill_positions {}",
                backend,
                x,
                y
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn sinusoidal_dot_depends_only_on_offset(
        d in prop::sample::select(sin_widths()),
        base in prop::sample::select(vec![10_000.0f32, 1_000.0, 500_000.0]),
        il in any::<bool>(),
        t1 in -(1i32 << 23)..(1 << 23),
        t2 in -(1i32 << 23)..(1 << 23),
        k in prop_oneof![-64i32..64, -(1i32 << 23)..(1 << 23)],
    ) {
        check_sin_dots(d, base, sin_layout_of(il), t1, t2, k)?;
    }

    #[test]
    fn sinusoidal_fill_paths_agree(
        d in prop::sample::select(sin_widths()),
        il in any::<bool>(),
        first in prop_oneof![0u32..5000, 0u32..(1u32 << 26) - 8, ((1u32 << 26) - 8)..=((1u32 << 26) - 3)],
        rows in 0usize..5,
    ) {
        let layout = sin_layout_of(il);
        let first = near_anchor(first);
        check_sin_fill::<f32>(d, 10_000.0, layout, first, rows)?;
        if F16 {
            check_sin_fill::<f16>(d, 10_000.0, layout, first, rows)?;
        }
        check_sin_fill::<bf16>(d, 10_000.0, layout, first, rows)?;
    }
}

// ---------------------------------------------------------------------------------------
// accuracy of the exact-angle contract (plain tests, deterministic)
// ---------------------------------------------------------------------------------------

/// The RoPE accuracy positions: 0..4096, ±2^k up to 2^24, 10^4 random `|p| < 2^24`.
fn accuracy_positions() -> Vec<i32> {
    let mut p: Vec<i32> = (0..4096).collect();
    for k in 0..=24 {
        p.push(1 << k);
        p.push(-(1 << k));
        p.push((1 << k) - 1);
        p.push(-((1 << k) - 1));
    }
    let mut rng = Rng::new(0x5EED_0001);
    for _ in 0..10_000 {
        let v = rng.below(1 << 25) as i64 - (1 << 24);
        p.push(v.clamp(-DOMAIN, DOMAIN) as i32);
    }
    p
}

/// Max |cos − cos_true|, |sin − sin_true| of `fill_cos_sin` over `positions`, with the
/// position and pair of the worst.
fn rope_worst(rope: &Rope, positions: &[i32]) -> (f64, i32, usize) {
    let half = rope.rotary_dim() / 2;
    let mut cos = vec![0f32; positions.len() * half];
    let mut sin = vec![0f32; positions.len() * half];
    rope.fill_cos_sin(positions, &mut cos, &mut sin).unwrap();
    let mut worst = (0.0f64, 0, 0);
    for (t, &p) in positions.iter().enumerate() {
        for (i, &w) in rope.inv_freq().iter().enumerate() {
            let theta = p as f64 * w as f64;
            let (ts, tc) = theta.sin_cos();
            let e = (cos[t * half + i] as f64 - tc)
                .abs()
                .max((sin[t * half + i] as f64 - ts).abs());
            if e > worst.0 {
                worst = (e, p, i);
            }
        }
    }
    worst
}

#[test]
#[cfg_attr(
    miri,
    ignore = "an accuracy scan of 10^5..10^7 values: numerics, not memory; the property tests above run the same kernels under Miri"
)]
fn rope_accuracy_exact_angle_contract() {
    let positions = accuracy_positions();
    let mut overall = 0.0f64;
    for base in [10_000.0f32, 500_000.0, 1_000_000.0] {
        for head_dim in [64, 128, 256] {
            let rope = Rope::new(&RopeConfig::new(head_dim, base, Layout::RotateHalf)).unwrap();
            for backend in available() {
                let rope = rope.with_backend(backend).unwrap();
                let (e, p, i) = rope_worst(&rope, &positions);
                println!(
                    "rope base {base:e} head_dim {head_dim} {backend:?}: worst {e:.3e} at p {p} pair {i}"
                );
                assert!(
                    e <= E,
                    "{backend:?} base {base} head_dim {head_dim}: error {e:e} > {E:e} at position {p}, pair {i}"
                );
                overall = overall.max(e);
            }
        }
    }
    println!("rope worst overall (|p| <= 2^24): {overall:.3e} (contract {E:e})");
}

/// The top of the domain, `2^24 ≤ |p| ≤ 2^26` (frequencies ≤ 1), under the same contract.
#[test]
#[cfg_attr(
    miri,
    ignore = "an accuracy scan of 10^5..10^7 values: numerics, not memory; the property tests above run the same kernels under Miri"
)]
fn rope_accuracy_domain_top() {
    let edge = DOMAIN as i32;
    let mut positions = vec![edge, -edge, edge - 1, 1 - edge];
    for k in 24..26 {
        positions.push(1 << k);
        positions.push(-(1 << k));
    }
    let mut rng = Rng::new(0x5EED_0002);
    positions.extend((0..3000).map(|_| (rng.below(2 << 26) as i64 - DOMAIN) as i32));
    let mut overall = 0.0f64;
    for base in [10_000.0f32, 1_000_000.0] {
        let rope = Rope::new(&RopeConfig::new(128, base, Layout::RotateHalf)).unwrap();
        for backend in available() {
            let (e, p, i) = rope_worst(&rope.with_backend(backend).unwrap(), &positions);
            println!("rope domain top base {base:e} {backend:?}: worst {e:.3e} at p {p} pair {i}");
            assert!(e <= E, "{backend:?}: {e:e} > {E:e} at p {p} pair {i}");
            overall = overall.max(e);
        }
    }
    println!("rope worst overall (2^24 ≤ |p| ≤ 2^26): {overall:.3e} (contract {E:e})");
}

#[test]
#[cfg_attr(
    miri,
    ignore = "an accuracy scan of 10^5..10^7 values: numerics, not memory; the property tests above run the same kernels under Miri"
)]
fn sinusoidal_accuracy_formula() {
    let mut positions: Vec<i32> = (0..4096).collect();
    for k in 0..=24 {
        positions.push(1 << k);
        positions.push((1 << k) - 1);
        positions.push(-(1 << k));
    }
    let mut rng = Rng::new(0x5EED_0003);
    positions.extend((0..2000).map(|_| (rng.below(1 << 25) as i64 - (1 << 24)) as i32));
    let mut overall = 0.0f64;
    for d in [64usize, 512] {
        for layout in [SinusoidalLayout::Interleaved, SinusoidalLayout::Split] {
            let pe = Sinusoidal::new(d, 10_000.0, layout).unwrap();
            let half = d / 2;
            let w: Vec<f64> = (0..half).map(|i| sin_freq(10_000.0, i, d)).collect();
            for backend in available() {
                let pe = pe.with_backend(backend).unwrap();
                let mut out = vec![0f32; positions.len() * d];
                pe.fill_positions(&mut out, &positions).unwrap();
                // And `fill` over a run starting at 2^24 − 64 (u32 positions).
                let first = (1u32 << 24) - 64;
                let mut run = vec![0f32; 64 * d];
                pe.fill(&mut run, first).unwrap();
                let rows = positions
                    .iter()
                    .map(|&p| p as f64)
                    .zip(out.chunks(d))
                    .chain((0..64).map(|r| (first + r) as f64).zip(run.chunks(d)));
                let worst = worst_vs_formula(rows, &w, layout);
                println!(
                    "sinusoidal d {d} {layout:?} {backend:?}: worst {:.3e} at p {} pair {}",
                    worst.0, worst.1, worst.2
                );
                assert!(
                    worst.0 <= E,
                    "{backend:?} d {d} {layout:?}: {:e} > {E:e} at p {} pair {}",
                    worst.0,
                    worst.1,
                    worst.2
                );
                overall = overall.max(worst.0);
            }
        }
    }
    println!("sinusoidal worst overall: {overall:.3e} (contract {E:e})");
}

/// The worst |error| of sinusoidal rows `(position, row)` against the f64 formula
/// `sin/cos(p·w[i])`, with the position and pair where it occurs.
fn worst_vs_formula<'a>(
    rows: impl Iterator<Item = (f64, &'a [f32])>,
    w: &[f64],
    layout: SinusoidalLayout,
) -> (f64, f64, usize) {
    let half = w.len();
    let mut worst = (0.0f64, 0.0, 0);
    for (p, row) in rows {
        for (i, &wi) in w.iter().enumerate() {
            let (ts, tc) = (p * wi).sin_cos();
            let (is, ic) = match layout {
                SinusoidalLayout::Interleaved => (2 * i, 2 * i + 1),
                SinusoidalLayout::Split => (i, half + i),
                SinusoidalLayout::SplitCosFirst => (half + i, i),
            };
            let e = (row[is] as f64 - ts).abs().max((row[ic] as f64 - tc).abs());
            if e > worst.0 {
                worst = (e, p, i);
            }
        }
    }
    worst
}

/// `fill` runs the f64 recurrence (anchored every 256 positions): long tables and large
/// first positions against the f64 formula, on every backend. The error is one f32 rounding
/// (≤ 3e-8) plus the frequency and angle roundings the direct method shares (≤ 1.7e-8 below
/// 2^24); the recurrence itself adds ≤ 3e-11.
#[test]
#[cfg_attr(
    miri,
    ignore = "an accuracy scan of 10^5..10^7 values: numerics, not memory; the property tests above run the same kernels under Miri"
)]
fn sinusoidal_fill_recurrence_accuracy() {
    let mut overall = 0.0f64;
    for (d, rows, first) in [
        (512usize, 4096usize, 0u32),
        (512, 4096, (1 << 24) - 4096),
        (64, 20_000, (1 << 24) - 20_000),
        (64, 4096, (1 << 26) - 4095), // the last row is the domain's edge, 2^26
        (130, 3000, 12_345),
        (8, 70_000, 1_000_001),
    ] {
        let half = d / 2;
        for layout in [SinusoidalLayout::Interleaved, SinusoidalLayout::Split] {
            let pe = Sinusoidal::new(d, 10_000.0, layout).unwrap();
            let w: Vec<f64> = (0..half).map(|i| sin_freq(10_000.0, i, d)).collect();
            for backend in available() {
                let pe = pe.with_backend(backend).unwrap();
                let mut out = vec![f32::NAN; rows * d];
                pe.fill(&mut out, first).unwrap();
                let table = out.chunks(d).enumerate();
                let table = table.map(|(r, row)| (first as f64 + r as f64, row));
                let worst = worst_vs_formula(table, &w, layout);
                println!(
                    "fill {rows}x{d} from {first} {layout:?} {backend:?}: worst {:.3e} at p {} pair {}",
                    worst.0, worst.1, worst.2
                );
                assert!(
                    worst.0 <= 6e-8,
                    "{backend:?} fill {rows}x{d} from {first} {layout:?}: {:e} at p {} pair {}",
                    worst.0,
                    worst.1,
                    worst.2
                );
                overall = overall.max(worst.0);
            }
        }
    }
    println!("sinusoidal fill (recurrence) worst overall: {overall:.3e} (contract {E:e})");
}
