//! posenc against the PyTorch / HuggingFace / numpy golden vectors in `tests/data`.
//!
//! Covered here: every `kind=rope` case with `rope.rope_type` `default` or `linear`, on every
//! backend this machine runs, and every sinusoidal case whose variant posenc implements.
//! The per-case checks live in `tests/common/check.rs` (documented there) so the scaled
//! rope types can reuse them.

mod common;

use common::check::{self, RopeStats};
use common::{Case, case_names};
use posenc::{Backend, Layout, Rope, RopeConfig, Scaling, Sinusoidal, SinusoidalLayout};

/// The rope types this file checks.
const ROPE_TYPES: &[&str] = &["default", "linear"];
/// Cases in `INDEX.txt` with those rope types (7 llama, 4 cohere, 3 gpt-neox, 2 gpt-j,
/// 2 linear): hard-coded so a reader that silently drops cases fails.
const ROPE_CASES: usize = 18;

/// The `Rope` a default/linear case describes.
fn rope_for(case: &Case) -> Rope {
    let layout = check::posenc_layout(case.get("layout"));
    let base = case.f64("rope.rope_theta") as f32;
    assert_eq!(
        base as f64,
        case.f64("rope.rope_theta"),
        "theta exact in f32"
    );
    let cfg =
        RopeConfig::new(case.usize("head_dim"), base, layout).rotary_dim(case.usize("rotary_dim"));
    let cfg = match case.get("rope.rope_type") {
        "default" => cfg,
        "linear" => cfg.scaling(Scaling::Linear {
            factor: case.f64("rope.factor") as f32,
        }),
        other => panic!("{}: rope_type {other} not handled here", case.name),
    };
    Rope::new(&cfg).unwrap_or_else(|e| panic!("{}: Rope::new: {e}", case.name))
}

fn rope_cases() -> Vec<Case> {
    case_names()
        .iter()
        .map(|n| Case::load(n))
        .filter(|c| c.get("kind") == "rope" && ROPE_TYPES.contains(&c.get("rope.rope_type")))
        .collect()
}

#[test]
fn rope_default_and_linear_cases() {
    let cases = rope_cases();
    assert_eq!(cases.len(), ROPE_CASES, "matching cases in INDEX.txt");
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut all: Vec<(Backend, RopeStats)> = Vec::new();
    for case in &cases {
        let rope = rope_for(case);
        for backend in Backend::available() {
            let rope = rope.with_backend(backend).unwrap();
            match check::try_check_rope_case(case, &rope, &check::RopeOptions::default()) {
                Ok(st) => all.push((backend, st)),
                Err(e) => failures.push(format!("[{}] {e}", backend.name())),
            }
        }
        checked += 1;
    }
    for (b, st) in &all {
        println!(
            "{:<9} {:<55} {:<4} invf_ulps={:?} invf_rel64={:.2e} cs={:.2e} ({:.2}) cs_torch={:.2e} ({:.2}) out={:.2e} ({:.3}) out64={:.2e} ({:.3}) torch={:.2e} ({:.3}) exact={}/{} torch_eq={} tail={}",
            b.name(),
            st.case,
            st.dtype,
            st.inv_freq_ulps,
            st.inv_freq_rel_vs_f64,
            st.cos_sin_err,
            st.cos_sin_ratio,
            st.cos_sin_torch_err,
            st.cos_sin_torch_ratio,
            st.out_err,
            st.out_ratio,
            st.out_f64_err,
            st.out_f64_ratio,
            st.out_torch_err,
            st.out_torch_ratio,
            st.round_exact,
            st.rotated,
            st.torch_equal,
            st.tail_checked
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, ROPE_CASES);
    assert_eq!(all.len(), ROPE_CASES * Backend::available().count());
}

/// Sinusoidal variants posenc implements, and the layout each maps to.
const SIN_VARIANTS: &[(&str, SinusoidalLayout)] = &[
    ("classic_interleaved", SinusoidalLayout::Interleaved),
    ("split_marian", SinusoidalLayout::Split),
];

/// Sinusoidal cases in `INDEX.txt` that are NOT covered, deliberately:
/// * `sin_split_m2m100_d64` (variant `split_fairseq_m2m100`, M2M100 / fairseq /
///   tensor2tensor): frequencies `exp(−i·ln(10000)/(d/2 − 1))` (note `d/2 − 1`), a zero
///   padding row and a `padding_idx + 1` position offset. posenc does not implement this
///   variant yet; when it does, move it to `SIN_VARIANTS` and the checker.
const SIN_NOT_COVERED: &[(&str, &str)] = &[("sin_split_m2m100_d64", "split_fairseq_m2m100")];

#[test]
fn sinusoidal_cases() {
    let mut covered = 0;
    let mut failures = Vec::new();
    let mut total = 0;
    for name in case_names() {
        let case = Case::load(&name);
        if case.get("kind") != "sinusoidal" {
            continue;
        }
        total += 1;
        let variant = case.get("variant");
        if let Some(&(_, v)) = SIN_NOT_COVERED.iter().find(|(n, _)| *n == name) {
            assert_eq!(
                variant, v,
                "{name}: listed as not covered under another variant"
            );
            continue;
        }
        let layout = SIN_VARIANTS
            .iter()
            .find(|(v, _)| *v == variant)
            .unwrap_or_else(|| panic!("{name}: variant {variant} neither checked nor listed"))
            .1;
        let base = case.f64("base") as f32;
        assert_eq!(base as f64, case.f64("base"), "{name}: base exact in f32");
        let pe = Sinusoidal::new(case.usize("d_model"), base, layout).unwrap();
        for backend in Backend::available() {
            let pe = pe.with_backend(backend).unwrap();
            match check::try_check_sinusoidal_case(&case, &pe) {
                Ok(st) => println!(
                    "{:<9} {:<24} err={:.2e} ({:.3}) at p={}: ours {:.2e} numpy_f32 {:.2e}; forward {:.2e}; bitwise rows {}",
                    backend.name(),
                    st.case,
                    st.err,
                    st.ratio,
                    st.max_position,
                    st.ours_err_at_max,
                    st.numpy_err_at_max,
                    st.forward_err,
                    st.rows_bitwise
                ),
                Err(e) => failures.push(format!("[{}] {e}", backend.name())),
            }
        }
        covered += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // 4 sinusoidal cases in INDEX.txt: 2 classic + 1 Marian checked, 1 M2M100 listed.
    assert_eq!(total, 4, "sinusoidal cases in INDEX.txt");
    assert_eq!(covered + SIN_NOT_COVERED.len(), total);
    assert_eq!(covered, 3);
}

/// The checkers can fail: a wrong layout, base, scaling factor or table layout is caught.
#[test]
fn checkers_catch_mutations() {
    let opts = check::RopeOptions::default();
    let case = Case::load("rope_llama_default_hd64_f32_contig");
    let good = rope_for(&case);
    check::check_rope_case(&case, &good);
    // Flipped layout.
    let flipped = Rope::new(&RopeConfig::new(64, 10_000.0, Layout::Interleaved)).unwrap();
    assert!(check::try_check_rope_case(&case, &flipped, &opts).is_err());
    // Base off by one part in 1e6: inv_freq no longer HF's.
    let base = Rope::new(&RopeConfig::new(64, 10_000.01, Layout::RotateHalf)).unwrap();
    let e = check::try_check_rope_case(&case, &base, &opts).unwrap_err();
    assert!(e.contains("inv_freq["), "{e}");
    // Same, with the ulp difference allowed: the derived angle allowance absorbs it exactly,
    // so only the torch comparison (torch's own error, at p ≤ 15) may or may not notice; the
    // truth comparisons must pass. Recomputing the allowance is what keeps this honest.
    let loose = check::RopeOptions {
        inv_freq_max_ulps: u32::MAX,
        ..opts
    };
    if let Err(e) = check::try_check_rope_case(&case, &base, &loose) {
        assert!(!e.contains("truth"), "allowance not derived correctly: {e}");
    }
    // Wrong linear factor.
    let lin = Case::load("rope_llama_linear_x4_hd128_f32_arbpos");
    let two = Rope::new(
        &RopeConfig::new(128, 10_000.0, Layout::RotateHalf)
            .scaling(Scaling::Linear { factor: 2.0 }),
    )
    .unwrap();
    assert!(check::try_check_rope_case(&lin, &two, &opts).is_err());
    // Partial rotary case with a layout flip inside the rotary part.
    let neox = Case::load("rope_gptneox_partial_hd64_rd16_f16_contig");
    let neox_bad =
        Rope::new(&RopeConfig::new(64, 10_000.0, Layout::Interleaved).rotary_dim(16)).unwrap();
    assert!(check::try_check_rope_case(&neox, &neox_bad, &opts).is_err());

    // Sinusoidal: the other layout, and another base.
    let classic = Case::load("sin_classic_numpy_d64");
    let split = Sinusoidal::new(64, 10_000.0, SinusoidalLayout::Split).unwrap();
    assert!(check::try_check_sinusoidal_case(&classic, &split).is_err());
    let marian = Case::load("sin_split_marian_d64");
    let other_base = Sinusoidal::new(64, 10_001.0, SinusoidalLayout::Split).unwrap();
    assert!(check::try_check_sinusoidal_case(&marian, &other_base).is_err());
}
