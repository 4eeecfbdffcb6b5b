//! posenc against the PyTorch / HuggingFace / numpy golden vectors in `tests/data`.
//!
//! Covered here: every `kind=rope` case with `rope.rope_type` `default` or `linear`, on every
//! backend this machine runs, and every sinusoidal case whose variant posenc implements.
//! The per-case checks live in `tests/common/check.rs` (documented there) so the scaled
//! rope types can reuse them.

mod common;

use common::check::{self, RopeStats};
use common::{Case, case_names};
use posenc::{Backend, Layout, Rope, RopeConfig, Scaling};

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

fn backends() -> Vec<Backend> {
    Backend::ALL
        .iter()
        .copied()
        .filter(|b| b.is_available())
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
        for &backend in &backends() {
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
    assert_eq!(all.len(), ROPE_CASES * backends().len());
}
