//! The accuracy contract (crate docs, *Accuracy contract*), sampled over its whole domain,
//! edges included, on every available backend:
//!
//! * **domain**: every angle `|θ| ≤ 2^26` rad. RoPE: `θ = p·ω`, i32 `p`, f32 `ω ∈ [0, 2^16]`;
//!   sinusoidal tables (largest frequency 1): positions and times `|p| ≤ 2^26`.
//! * **bound**: every cos and sin within [`E`] = 2.4e-7 of the true value (RoPE: of the exact
//!   product `p·ω`; sinusoidal: of the f64 formula with the convention's frequencies, written
//!   here from their definitions).
//! * **bitwise**: cos/sin identical on every backend.
//! * **outside**: `Error::OutOfDomain` naming the argument and the limit, nothing written.
//!
//! The references are f64, computed here independently of posenc: the angle is carried as an
//! exact unevaluated sum `a + b` (RoPE: `p` split in two halves whose products with `ω` are
//! exact; sinusoidal: a fused multiply-add two-product), so the reference's own error is a few
//! f64 ulps, far below `E`.

use posenc::{Backend, Error, Layout, Rope, Sinusoidal, SinusoidalLayout, sin_cos_exact};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// The contract's bound: two ulps of 1 (2^-22).
const E: f64 = 2.4e-7;
/// The domain's largest angle, and position / time for sinusoidal tables.
const EDGE: f64 = 67_108_864.0; // 2^26
/// The largest frequency `Rope::from_inv_freq` accepts.
const MAX_FREQ: f32 = 65_536.0;

fn available() -> Vec<Backend> {
    Backend::ALL
        .iter()
        .copied()
        .filter(|b| b.is_available())
        .collect()
}

/// `(sin, cos)` of the exact angle `p·w` (f32 `w`): `p = hi + lo` with `lo` the low 16 bits,
/// so `hi·w` (≤ 15 + 24 bits) and `lo·w` (≤ 16 + 24 bits) are exact in f64.
fn reference_exact(p: i32, w: f32) -> (f64, f64) {
    let p = p as i64;
    let hi = p >> 16 << 16;
    let lo = p - hi;
    let (a, b) = (hi as f64 * w as f64, lo as f64 * w as f64);
    let ((sa, ca), (sb, cb)) = (a.sin_cos(), b.sin_cos());
    (sa * cb + ca * sb, ca * cb - sa * sb)
}

/// `(sin, cos)` of `x·w` (f64), the product kept exactly as `a + b` (two-product by FMA).
fn reference_f64(x: f64, w: f64) -> (f64, f64) {
    let a = x * w;
    let b = x.mul_add(w, -a);
    let (sa, ca) = a.sin_cos();
    (sa + b * ca, ca - b * sa)
}

/// The largest `n` with `n·w ≤ 2^26` exactly (w > 0), from `w`'s mantissa and exponent:
/// `w = m·2^e`, so `n·m·2^e ≤ 2^26 ⇔ n·m ≤ 2^(26 − e)` in integers.
fn max_position(w: f32) -> i64 {
    let bits = w.to_bits();
    let (exp, frac) = (((bits >> 23) & 0xff) as i32, (bits & 0x7f_ffff) as u128);
    let (m, e) = if exp == 0 {
        (frac, -149)
    } else {
        (frac | 0x80_0000, exp - 150)
    };
    let k = 26 - e; // n·m ≤ 2^k
    let n = if k >= 120 {
        u128::MAX
    } else if k < 0 {
        0
    } else {
        (1u128 << k) / m
    };
    n.min(1 << 31) as i64
}

/// Frequencies over `[0, 2^16]`: the edges, powers of two, the checkpoint range, any bits.
fn freq() -> impl Strategy<Value = f32> {
    prop_oneof![
        2 => prop::sample::select(vec![
            0.0f32, f32::from_bits(1), f32::MIN_POSITIVE, 1e-30, 1e-6, 1e-4, 0.5, 1.0, 2.0,
            40_000.5, MAX_FREQ, f32::from_bits(MAX_FREQ.to_bits() - 1),
        ]),
        4 => (-20i32..=0, 0.5f32..1.0).prop_map(|(e, m)| m * (e as f32).exp2()),
        2 => (0u32..=MAX_FREQ.to_bits()).prop_map(f32::from_bits),
        1 => 1.0f32..MAX_FREQ,
    ]
}

/// A position for frequency `w` with `|p·w| ≤ 2^26`: the edges `±n`, `±(n − 1)`, 0, ±1 and
/// uniform in `[−n, n]`, where `n` is [`max_position`].
fn position_for(w: f32, pick: u8, u: f64) -> i32 {
    let n = if w == 0.0 { 1 << 31 } else { max_position(w) };
    let n = n.min(i32::MAX as i64);
    let p = match pick % 8 {
        0 => n,
        1 => -n,
        2 => (n - 1).max(0),
        3 => 0,
        4 => 1.min(n),
        _ => (u * n as f64).round() as i64,
    };
    p as i32
}

/// RoPE's cos/sin (through `fill_cos_sin`, one frequency) at `positions` on every backend:
/// within `E` of the exact-angle reference, bitwise equal across backends and to
/// `sin_cos_exact`.
fn check_rope(w: f32, positions: &[i32]) -> Result<(), TestCaseError> {
    let rope = Rope::from_inv_freq(2, Layout::RotateHalf, &[w], 1.0).unwrap();
    let n = positions.len();
    let mut first: Option<(Vec<u32>, Vec<u32>)> = None;
    for b in available() {
        let (mut c, mut s) = (vec![f32::NAN; n], vec![f32::NAN; n]);
        rope.with_backend(b)
            .unwrap()
            .fill_cos_sin(positions, &mut c, &mut s)
            .unwrap();
        for (t, &p) in positions.iter().enumerate() {
            let (rs, rc) = reference_exact(p, w);
            let e = (c[t] as f64 - rc).abs().max((s[t] as f64 - rs).abs());
            prop_assert!(e <= E, "{b:?} p {p} ω {w:e}: error {e:e} > {E:e}");
            let (es, ec) = sin_cos_exact(p, w).unwrap();
            prop_assert_eq!(
                (es.to_bits(), ec.to_bits()),
                (s[t].to_bits(), c[t].to_bits())
            );
        }
        let bits = (
            c.iter().map(|v| v.to_bits()).collect(),
            s.iter().map(|v| v.to_bits()).collect(),
        );
        match &first {
            None => first = Some(bits),
            Some(f) => prop_assert!(*f == bits, "{b:?} differs from the first backend"),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// RoPE angles over the whole domain `|p·ω| ≤ 2^26`, `ω ∈ [0, 2^16]`, edges included.
    #[test]
    fn rope_domain(w in freq(), picks in prop::collection::vec((any::<u8>(), -1.0f64..=1.0), 1..9)) {
        let positions: Vec<i32> = picks.iter().map(|&(k, u)| position_for(w, k, u)).collect();
        check_rope(w, &positions)?;
        // One past the edge (when it is an i32) is refused by `sin_cos_exact`.
        let n = if w == 0.0 { i64::MAX } else { max_position(w) };
        if n < i32::MAX as i64 {
            let err = sin_cos_exact((n + 1) as i32, w).unwrap_err();
            let named = matches!(err, Error::OutOfDomain { what: "position * freq", limit, .. } if limit == EDGE);
            prop_assert!(named, "{:?}", err);
            let err = sin_cos_exact(-(n + 1) as i32, w).unwrap_err();
            let refused = matches!(err, Error::OutOfDomain { .. });
            prop_assert!(refused, "{:?}", err);
        }
    }
}

/// The sinusoidal conventions: an encoder and its frequencies from their definitions.
fn encoder(kind: u8, d: usize) -> (Sinusoidal, Vec<f64>) {
    let half = d / 2;
    match kind % 4 {
        0 | 1 => {
            let layout = if kind.is_multiple_of(4) {
                SinusoidalLayout::Interleaved
            } else {
                SinusoidalLayout::Split
            };
            let w = (0..half)
                .map(|i| 1e4f64.powf(-((2 * i) as f64) / d as f64))
                .collect();
            (Sinusoidal::new(d, 10_000.0, layout).unwrap(), w)
        }
        2 => {
            let d = d.max(4);
            let half = d / 2;
            let w = (0..half)
                .map(|i| 1e4f64.powf(-(i as f64) / (half - 1) as f64))
                .collect();
            (Sinusoidal::fairseq(d, None).unwrap(), w)
        }
        _ => {
            let w = (0..half)
                .map(|i| 1e4f64.powf(-(i as f64) / half as f64))
                .collect();
            (Sinusoidal::timestep(d, 10_000.0).unwrap(), w)
        }
    }
}

/// Columns of pair `i`'s sine and cosine.
fn cols(layout: SinusoidalLayout, half: usize, i: usize) -> (usize, usize) {
    match layout {
        SinusoidalLayout::Interleaved => (2 * i, 2 * i + 1),
        SinusoidalLayout::Split => (i, half + i),
        SinusoidalLayout::SplitCosFirst => (half + i, i),
    }
}

/// Every row of `out` (positions or times `xs`) within `E` of the formula.
fn check_rows(
    pe: &Sinusoidal,
    w: &[f64],
    xs: &[f64],
    out: &[f32],
    what: &str,
) -> Result<(), TestCaseError> {
    let d = pe.d_model();
    for (row, &x) in out.chunks(d).zip(xs) {
        for (i, &wi) in w.iter().enumerate() {
            let (rs, rc) = reference_f64(x, wi);
            let (is, ic) = cols(pe.layout(), w.len(), i);
            let e = (row[is] as f64 - rs).abs().max((row[ic] as f64 - rc).abs());
            prop_assert!(
                e <= E,
                "{what} {:?} d {d} x {x} pair {i}: error {e:e}",
                pe.backend()
            );
        }
    }
    Ok(())
}

/// Positions and times over the domain: edges, near the edges, uniform.
fn domain_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => prop::sample::select(vec![0.0, 1.0, -1.0, EDGE, -EDGE, EDGE - 1.0, 1.0 - EDGE]),
        2 => (0.0f64..4096.0).prop_map(|v| EDGE - v),
        3 => -EDGE..=EDGE,
        1 => -5000.0f64..5000.0,
    ]
}

/// Compares `run(pe)` on every backend, bitwise, and returns the first backend's output.
fn same_on_backends(
    pe: &Sinusoidal,
    len: usize,
    run: impl Fn(&Sinusoidal, &mut [f32]),
) -> Result<Vec<f32>, TestCaseError> {
    let mut first: Option<Vec<f32>> = None;
    for b in available() {
        let pe = pe.with_backend(b).unwrap();
        let mut out = vec![f32::NAN; len];
        run(&pe, &mut out);
        match &first {
            None => first = Some(out),
            Some(f) => {
                let same = f.iter().zip(&out).all(|(x, y)| x.to_bits() == y.to_bits());
                prop_assert!(same, "{b:?} differs from the first backend");
            }
        }
    }
    Ok(first.unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    /// Sinusoidal positions (`fill_positions`, `add`), times (`fill_times`) and runs (`fill`)
    /// over the domain, every convention, against the formula, bitwise across backends.
    #[test]
    fn sinusoidal_domain(
        kind in any::<u8>(),
        d in prop::sample::select(vec![2usize, 4, 6, 16, 34, 130]),
        xs in prop::collection::vec(domain_value(), 1..6),
        tail in 0u32..600,
        rows in 1usize..8,
    ) {
        let (pe, w) = encoder(kind, d);
        let d = pe.d_model();
        // Integer positions.
        let pos: Vec<i32> = xs.iter().map(|&x| x.trunc() as i32).collect();
        let px: Vec<f64> = pos.iter().map(|&p| p as f64).collect();
        let out = same_on_backends(&pe, pos.len() * d, |pe, o| pe.fill_positions(o, &pos).unwrap())?;
        check_rows(&pe, &w, &px, &out, "fill_positions")?;
        let added = same_on_backends(&pe, pos.len() * d, |pe, o| {
            o.fill(0.0);
            pe.add(o, &pos).unwrap()
        })?;
        prop_assert!(added.iter().zip(&out).all(|(a, b)| a == b), "add onto zeros ≠ fill_positions");
        // Times: the f32 values of the same draws (every f32 within ±2^26 is in the domain).
        let times: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
        let tx: Vec<f64> = times.iter().map(|&t| t as f64).collect();
        let out = same_on_backends(&pe, times.len() * d, |pe, o| pe.fill_times(o, &times).unwrap())?;
        check_rows(&pe, &w, &tx, &out, "fill_times")?;
        // A run ending `tail` rows below the edge (the recurrence).
        let first = (EDGE as u32 + 1 - rows as u32).saturating_sub(tail);
        let fx: Vec<f64> = (0..rows).map(|r| (first as usize + r) as f64).collect();
        let out = same_on_backends(&pe, rows * d, |pe, o| pe.fill(o, first).unwrap())?;
        check_rows(&pe, &w, &fx, &out, "fill")?;
    }
}

/// What a refused call must look like: `OutOfDomain` naming `what` and the limit, the buffer
/// untouched.
fn refused(r: Result<(), Error>, what: &str, limit: f64, buf: &[f32]) {
    match r {
        Err(Error::OutOfDomain {
            what: w, limit: l, ..
        }) => {
            assert_eq!((w, l), (what, limit));
        }
        other => panic!("{what}: expected OutOfDomain, got {other:?}"),
    }
    assert!(
        buf.iter().all(|v| v.to_bits() == 7f32.to_bits()),
        "{what}: buffer written"
    );
}

#[test]
fn sinusoidal_edges_refused_untouched() {
    let next_up = f32::from_bits((EDGE as f32).to_bits() + 1); // 2^26 + 8
    for kind in 0..4 {
        let (pe, _) = encoder(kind, 8);
        let d = pe.d_model();
        for b in available() {
            let pe = pe.with_backend(b).unwrap();
            let mut buf = vec![7f32; 2 * d];
            let edge = EDGE as i32;
            for bad in [[0, edge + 1], [-edge - 1, 0], [i32::MAX, 0], [i32::MIN, 0]] {
                refused(pe.fill_positions(&mut buf, &bad), "positions", EDGE, &buf);
                refused(pe.add(&mut buf, &bad), "positions", EDGE, &buf);
            }
            for bad in [
                next_up,
                -next_up,
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                1e16,
                f32::MAX,
            ] {
                refused(pe.fill_times(&mut buf, &[0.5, bad]), "times", EDGE, &buf);
            }
            // Two rows from 2^26: the second is past the edge; from 2^26 − 1 both fit.
            for first in [EDGE as u32, EDGE as u32 + 1, u32::MAX] {
                refused(
                    pe.fill(&mut buf, first),
                    "first_position + rows - 1",
                    EDGE,
                    &buf,
                );
            }
            assert!(pe.fill(&mut buf, EDGE as u32 - 1).is_ok());
            assert!(pe.fill(&mut buf[..d], EDGE as u32).is_ok());
            assert!(
                pe.fill(&mut buf[..0], u32::MAX).is_ok(),
                "no rows: nothing to refuse"
            );
            assert!(pe.fill_positions(&mut buf, &[edge, -edge]).is_ok());
            assert!(
                pe.fill_times(&mut buf, &[EDGE as f32, -EDGE as f32])
                    .is_ok()
            );
        }
    }
    let e = Sinusoidal::fairseq(8, Some(EDGE as u32 + 1)).unwrap_err();
    assert!(matches!(e, Error::OutOfDomain { what: "padding_idx", limit, .. } if limit == EDGE));
    assert!(Sinusoidal::fairseq(8, Some(EDGE as u32)).is_ok());
}

#[test]
fn sin_cos_exact_domain() {
    assert!(sin_cos_exact(EDGE as i32, 1.0).is_ok());
    assert!(sin_cos_exact(-(EDGE as i32), -1.0).is_ok());
    assert!(sin_cos_exact(1024, MAX_FREQ).is_ok());
    assert!(sin_cos_exact(i32::MIN, 0.0).is_ok());
    for (p, w) in [
        (EDGE as i32 + 1, 1.0),
        (1025, MAX_FREQ),
        (1, 1e10),
        (i32::MAX, 1e10),
        (0, f32::NAN),
        (1, f32::INFINITY),
        (0, f32::INFINITY),
    ] {
        let e = sin_cos_exact(p, w).unwrap_err();
        assert!(
            matches!(e, Error::OutOfDomain { what: "position * freq", limit, .. } if limit == EDGE),
            "({p}, {w}): {e:?}"
        );
    }
}

#[test]
fn out_of_domain_display_names_argument_and_limit() {
    let e = Error::OutOfDomain {
        what: "times",
        limit: EDGE,
        value: 1e16,
    };
    let s = e.to_string();
    assert!(
        s.contains("`times`") && s.contains("67108864") && s.contains("10000000000000000"),
        "{s}"
    );
}

#[test]
fn from_inv_freq_domain_edge() {
    assert!(Rope::from_inv_freq(2, Layout::RotateHalf, &[MAX_FREQ], 1.0).is_ok());
    let above = f32::from_bits(MAX_FREQ.to_bits() + 1);
    assert!(Rope::from_inv_freq(2, Layout::RotateHalf, &[above], 1.0).is_err());
}

/// Where the reduction's cases meet, cos/sin stay bitwise `sin_cos_exact`'s on every backend.
/// The vector tiers skip the reduction for a call's *small* blocks, those whose every angle is
/// below 0.77 at every position of the call, forming the angle as one f32 product; this test
/// holds blocks on both sides of that cut-off:
/// * all angles below it (reduced to themselves, `k = 0`);
/// * one angle either side of the cut-off, of 0.78, of π/4 (where the quadrant turns) or past
///   it, spread over the lanes of a block, in whole and partial blocks;
/// * positions either side of 2^24, where `f32(p)` stops being exact;
/// * each position in a call of its own, and in calls with others (the cut-off holds for the
///   call's largest position).
#[test]
fn angles_around_the_quadrant_edge_and_2_pow_24() {
    const PI_4: f32 = core::f32::consts::FRAC_PI_4;
    let up = |x: f32, n: u32| f32::from_bits(x.to_bits() + n);
    let down = |x: f32, n: u32| f32::from_bits(x.to_bits() - n);
    // Angles that straddle the cut-off (0.77), 0.78 and π/4.
    let edges = [
        down(0.77, 1),
        0.77,
        up(0.77, 1),
        0.78,
        down(PI_4, 2),
        PI_4,
        up(PI_4, 2),
        0.9,
    ];
    let mut checked = 0usize;
    for half in [64usize, 40, 7] {
        // Angle patterns at the anchor position (exactly at anchor 1, within an f32 rounding of
        // the frequency elsewhere): all below the cut-off, then one edge angle per pattern, at
        // lanes five apart, so that each edge lands on most lane positions of a block.
        let small = |i: usize| 0.769 * (half - i) as f32 / half as f32;
        let mut patterns: Vec<Vec<f32>> = vec![(0..half).map(small).collect()];
        for (e, &edge) in edges.iter().enumerate() {
            for lane in (e % 3..half).step_by(5) {
                let mut a: Vec<f32> = (0..half).map(small).collect();
                a[lane] = edge;
                patterns.push(a);
            }
        }
        let anchors = [
            1i32,
            3,
            1000,
            65_535,
            (1 << 24) - 1,
            1 << 24,
            (1 << 24) + 1,
            -((1 << 24) + 3),
        ];
        for &anchor in &anchors {
            // Every angle stays in the domain: |p| ≤ 2^24 + 4 and ω < 1.
            let near = [anchor, -anchor, anchor + 1, anchor - 1, 0];
            let far = [1 << 24, (1 << 24) + 1, -(1 << 24) - 1];
            let all: Vec<i32> = near.iter().chain(&far).copied().collect();
            let mut calls: Vec<&[i32]> = vec![&all, &near];
            calls.extend(all.chunks(1));
            for angles in &patterns {
                // Frequencies that give about these angles at the anchor (the negative
                // positions give the negative angles).
                let w: Vec<f32> = angles
                    .iter()
                    .map(|&a| (a as f64 / anchor.unsigned_abs() as f64) as f32)
                    .collect();
                let rope = Rope::from_inv_freq(2 * half, Layout::RotateHalf, &w, 1.0).unwrap();
                for b in available() {
                    let rope = rope.with_backend(b).unwrap();
                    for &positions in &calls {
                        let n = positions.len();
                        let (mut c, mut s) = (vec![f32::NAN; n * half], vec![f32::NAN; n * half]);
                        rope.fill_cos_sin(positions, &mut c, &mut s).unwrap();
                        for (t, &p) in positions.iter().enumerate() {
                            for (i, &w) in w.iter().enumerate() {
                                let (es, ec) = sin_cos_exact(p, w).unwrap();
                                let k = t * half + i;
                                assert_eq!(
                                    (s[k].to_bits(), c[k].to_bits()),
                                    (es.to_bits(), ec.to_bits()),
                                    "{b:?}: p {p} of {positions:?}, pair {i} of {half}, ω {w:e}, \
                                     angle {}",
                                    p as f64 * w as f64
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 100_000, "{checked}");
}
