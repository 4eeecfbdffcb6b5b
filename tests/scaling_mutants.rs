//! Scaling branches no other suite reaches, each found by mutation testing (a mutant of
//! `src/scaling.rs` that every other test let survive): YaRN's upper clamp of the correction
//! range (`hi > d − 1`), Llama 3 with `low_freq_factor ≠ 1`, Gemma's proportional RoPE with
//! `factor ≠ 1`.
//!
//! The expected frequencies are HF's formulas (`transformers.modeling_rope_utils`:
//! `_compute_yarn_parameters`, `_compute_llama3_parameters`,
//! `_compute_proportional_rope_parameters`), written here in f64 from their definitions. posenc
//! computes HF's f32 order of operations, so each value is compared within a relative
//! tolerance of a few f32 roundings ([`REL`]); every mutant these tests target moves some
//! frequency by far more (a factor, or a few percent of the ramp).

use posenc::{Layout, Rope, RopeConfig, Scaling, Yarn};
use std::f64::consts::PI;

/// f32 `pow` (≤ 1 ulp), a division, the ramp's few f32 operations: well under 1e-6.
const REL: f64 = 2e-6;

fn close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (j, (&g, &w)) in got.iter().zip(want).enumerate() {
        let tol = REL * w.abs() + 1e-30;
        assert!(
            (g as f64 - w).abs() <= tol,
            "{what}: pair {j}: posenc {g:e}, HF formula {w:e}"
        );
    }
}

/// HF `_compute_yarn_parameters` (truncate = true), f64: returns `(inv_freq, lo, hi)`.
fn yarn_reference(
    base: f64,
    d: usize,
    factor: f64,
    l0: f64,
    beta_fast: f64,
    beta_slow: f64,
) -> (Vec<f64>, f64, f64) {
    let dim = d as f64;
    let corr = |n: f64| dim * (l0 / (n * 2.0 * PI)).ln() / (2.0 * base.ln());
    let lo = corr(beta_fast).floor().max(0.0);
    let hi = corr(beta_slow).ceil().min(dim - 1.0);
    let hi_r = if lo == hi { hi + 0.001 } else { hi };
    let w = (0..d / 2)
        .map(|j| {
            let pos = base.powf((2 * j) as f64 / dim);
            let (extra, inter) = (1.0 / pos, 1.0 / (factor * pos));
            let ramp = ((j as f64 - lo) / (hi_r - lo)).clamp(0.0, 1.0);
            let e = 1.0 - ramp;
            inter * (1.0 - e) + extra * e
        })
        .collect();
    (w, lo, hi)
}

/// YaRN whose `beta_slow` puts the correction range's upper end past `d − 1`: HF clamps it
/// to `d − 1` (`min(high, dim - 1)`), which changes the ramp of every pair inside it.
#[test]
fn yarn_upper_clamp_of_the_correction_range() {
    let (base, d, factor, l0) = (100.0f32, 64usize, 4.0f32, 4096u32);
    let y = Yarn {
        beta_slow: 0.01,
        ..Yarn::new(factor, l0)
    };
    let rope =
        Rope::new(&RopeConfig::new(d, base, Layout::RotateHalf).scaling(Scaling::Yarn(y))).unwrap();
    let (want, lo, hi) = yarn_reference(base as f64, d, factor as f64, l0 as f64, 32.0, 0.01);
    // The case reaches the clamp: the unclamped upper end is past d − 1.
    let dim = d as f64;
    let unclamped =
        (dim * (l0 as f64 / (0.01 * 2.0 * PI)).ln() / (2.0 * (base as f64).ln())).ceil();
    assert!(
        unclamped > dim - 1.0 && hi == dim - 1.0,
        "hi {unclamped} → {hi}"
    );
    assert!(
        lo > 0.0 && lo < (d / 2) as f64,
        "lo {lo}: the ramp has pairs inside it"
    );
    close(rope.inv_freq(), &want, "yarn beta_slow 0.01");
    // HF's default attention factor, 0.1·ln(s) + 1.
    let af = 0.1 * (factor as f64).ln() + 1.0;
    assert!((rope.attention_factor() as f64 - af).abs() <= 1e-6 * af);
}

/// HF `_compute_llama3_parameters`, f64, on the unscaled frequencies `base^(−2j/d)`.
/// Returns `None` for a pair whose wavelength lies within `1e-5` (relative) of a band edge:
/// there f32 and f64 comparisons may classify it differently.
fn llama3_reference(
    base: f64,
    d: usize,
    factor: f64,
    low: f64,
    high: f64,
    l0: f64,
) -> Vec<Option<f64>> {
    let (low_wavelen, high_wavelen) = (l0 / low, l0 / high);
    (0..d / 2)
        .map(|j| {
            let w = base.powf(-((2 * j) as f64) / d as f64);
            let wavelen = 2.0 * PI / w;
            let near = |edge: f64| (wavelen / edge - 1.0).abs() < 1e-5;
            if near(low_wavelen) || near(high_wavelen) {
                return None;
            }
            Some(if wavelen < high_wavelen {
                w
            } else if wavelen > low_wavelen {
                w / factor
            } else {
                let smooth = (l0 / wavelen - low) / (high - low);
                (1.0 - smooth) * w / factor + smooth * w
            })
        })
        .collect()
}

/// Llama 3 with `low_freq_factor = 2` (every released config uses 1, where `L0/low` and
/// `L0·low` coincide): the band edges and the smoothing both depend on it.
#[test]
fn llama3_low_freq_factor_not_one() {
    for (base, d, factor, low, high, l0) in [
        (500_000.0f32, 128usize, 8.0f32, 2.0f32, 4.0f32, 8192u32),
        (10_000.0, 64, 16.0, 1.5, 6.0, 2048),
        (500_000.0, 128, 32.0, 0.5, 4.0, 8192),
        // A rotary dim past half the widest: the loop covers exactly d/2 pairs.
        (500_000.0, 256, 8.0, 1.5, 4.0, 8192),
    ] {
        let cfg = RopeConfig::new(d, base, Layout::RotateHalf).scaling(Scaling::Llama3 {
            factor,
            low_freq_factor: low,
            high_freq_factor: high,
            original_max_positions: l0,
        });
        let rope = Rope::new(&cfg).unwrap();
        let want = llama3_reference(
            base as f64,
            d,
            factor as f64,
            low as f64,
            high as f64,
            l0 as f64,
        );
        let (mut checked, mut smoothed) = (0, 0);
        for (j, (&g, w)) in rope.inv_freq().iter().zip(&want).enumerate() {
            let Some(w) = *w else { continue };
            checked += 1;
            let unscaled = (base as f64).powf(-((2 * j) as f64) / d as f64);
            let wavelen = 2.0 * PI / unscaled;
            if wavelen > l0 as f64 / high as f64 && wavelen < l0 as f64 / low as f64 {
                smoothed += 1;
            }
            assert!(
                (g as f64 - w).abs() <= REL * w,
                "llama3 base {base} low {low} high {high}: pair {j}: posenc {g:e}, HF {w:e}"
            );
        }
        assert!(
            checked >= d / 2 - 2,
            "only {checked} pairs away from the band edges"
        );
        assert!(smoothed >= 2, "the smoothing band holds {smoothed} pairs");
    }
}

/// Gemma's proportional RoPE with `factor ≠ 1`: the rotating pairs are the default
/// frequencies of the full dim divided by `factor`, the rest 0.
#[test]
fn proportional_factor_not_one() {
    for (base, d, p, factor) in [
        (1_000_000.0f32, 256usize, 0.25f32, 8.0f32),
        (10_000.0, 128, 0.5, 0.5),
        (10_000.0, 64, 1.0, 3.0),
    ] {
        let cfg = RopeConfig::new(d, base, Layout::RotateHalf).scaling(Scaling::Proportional {
            partial_rotary_factor: p,
            factor,
        });
        let rope = Rope::new(&cfg).unwrap();
        let rotating = (p as f64 * d as f64 / 2.0).floor() as usize;
        let want: Vec<f64> = (0..d / 2)
            .map(|j| {
                if j < rotating {
                    (base as f64).powf(-((2 * j) as f64) / d as f64) / factor as f64
                } else {
                    0.0
                }
            })
            .collect();
        close(
            rope.inv_freq(),
            &want,
            &format!("proportional p {p} factor {factor}"),
        );
    }
}

/// Llama 3 with a pair exactly on the low band edge: HF scales a pair fully only when its
/// wavelength is strictly past `L0 / low_freq_factor` (`wavelen > low_freq_wavelen`); on the
/// edge it is smoothed. Pair 0 (ω = 1, wavelength f32(2π)) with `L0 = 91` and the f32
/// `low_freq_factor` (found by a search over f32) for which f32(91 / low) is f32(2π) and the
/// smoothing factor is not 0.
#[test]
fn llama3_pair_on_the_low_band_edge_is_smoothed() {
    let (l0, factor) = (91u32, 8.0f32);
    let low = f32::from_bits(1_097_317_063); // 14.4831
    let high = low + 0.01;
    let two_pi = (2.0 * PI) as f32;
    assert_eq!(
        (l0 as f64 / low as f64) as f32,
        two_pi,
        "pair 0 sits on the edge"
    );
    let cfg = RopeConfig::new(64, 10_000.0, Layout::RotateHalf).scaling(Scaling::Llama3 {
        factor,
        low_freq_factor: low,
        high_freq_factor: high,
        original_max_positions: l0,
    });
    let rope = Rope::new(&cfg).unwrap();
    // HF in f32: smooth = (L0 / wavelen − low) / (high − low), where torch evaluates
    // `scalar / tensor` as `scalar · (1 / tensor)`; ω' = (1 − smooth)·ω/s + smooth·ω. (Here
    // `L0 / wavelen` rounded directly gives the same f32.)
    let span = (high as f64 - low as f64) as f32;
    let smooth = ((1.0 / two_pi) * l0 as f32 - low) / span;
    assert_eq!((1.0 / two_pi) * l0 as f32, l0 as f32 / two_pi);
    assert!(smooth != 0.0);
    let want = (1.0 - smooth) / factor + smooth;
    let got = rope.inv_freq()[0];
    assert!(
        (got as f64 - want as f64).abs() <= REL * want as f64,
        "pair 0: posenc {got:e}, HF {want:e} (scaled fully it would be {:e})",
        1.0 / factor
    );
}
