//! Every scaled golden case (HF `rope_type` linear, dynamic, yarn, llama3, longrope): posenc's
//! `inv_freq` against HF's f32 buffer (≤ 2 ulp required, the maximum distance printed) and its
//! attention factor against HF's `attention_scaling` (relative 2e-7). Every pair that is not
//! bit-for-bit must be explained by a pow near-tie (torch's SLEEF pow is not correctly rounded
//! there; posenc's is), so an order-of-operations bug cannot hide inside the 2 ulp. Then the
//! whole pipeline (cos/sin, outputs vs f64 truth and torch) runs through the shared checker
//! `common::check` on every backend this machine has.
//!
//! Run with `cargo test --test golden_scaling -- --nocapture` to see the per-case table.

mod common;

use common::check::{self, RopeOptions};
use common::{Case, ulps};
use posenc::{Backend, LongRope, Rope, RopeConfig, Scaling, Yarn};

/// The `rope_type`s this file covers.
const SCALED: &[&str] = &["linear", "dynamic", "yarn", "llama3", "longrope"];

/// `rope.*` keys this file understands; any other key fails the test instead of being ignored.
const KNOWN_KEYS: &[&str] = &[
    "rope.rope_type",
    "rope.rope_theta",
    "rope.factor",
    "rope.partial_rotary_factor",
    "rope.original_max_position_embeddings",
    "rope.beta_fast",
    "rope.beta_slow",
    "rope.mscale",
    "rope.mscale_all_dim",
    "rope.attention_factor",
    "rope.truncate",
    "rope.low_freq_factor",
    "rope.high_freq_factor",
    "rope.short_factor",
    "rope.long_factor",
];

fn f32_list(case: &Case, key: &str) -> Vec<f32> {
    // The manifest holds Python's f64 reprs; torch.tensor(list, dtype=float32) rounds each once.
    case.list_f64(key).into_iter().map(|v| v as f32).collect()
}

fn opt_f32(case: &Case, key: &str) -> Option<f32> {
    case.opt(key).map(|v| v.parse::<f64>().unwrap() as f32)
}

/// Where the exact `b^e` lies between its two f32 neighbours (0: on the lower, 1: on the
/// upper, 0.5: a tie), from the f64 pow, whose error (~1e-16 relative) is far below the f32
/// spacing (6e-8).
fn tie_position(b: f32, e: f32) -> f64 {
    let x = (b as f64).powf(e as f64);
    let r = x as f32;
    let lo = if r as f64 <= x { r } else { r.next_down() };
    let hi = lo.next_up();
    (x - lo as f64) / (hi as f64 - lo as f64)
}

/// The base whose powers give `inv_freq`: `rope_theta`, or for dynamic NTK the scaled base,
/// derived here from the formula HF's forward evaluates (f32 tensor arithmetic, f64 pow).
fn pow_base(case: &Case) -> f32 {
    let base = case.f64("rope.rope_theta") as f32;
    if case.get("rope.rope_type") != "dynamic" {
        return base;
    }
    let (lmax, seq) = (
        case.usize("max_position_embeddings"),
        case.usize("dynamic.seq_len"),
    );
    if seq <= lmax {
        return base;
    }
    let s = case.f64("rope.factor") as f32;
    let d = case.usize("rotary_dim") as f64;
    let t = s * seq as f32 / lmax as f32 - (s as f64 - 1.0) as f32;
    base * ((t as f64).powf(d / (d - 2.0)) as f32)
}

/// The manifest's parameters as a posenc `Rope`. The factor lists live in `lists`, which the
/// returned config borrows.
fn build(case: &Case, lists: &mut (Vec<f32>, Vec<f32>)) -> Rope {
    for key in case.kv.keys().filter(|k| k.starts_with("rope.")) {
        assert!(
            KNOWN_KEYS.contains(&key.as_str()),
            "{}: unhandled parameter {key}",
            case.name
        );
    }
    let head_dim = case.usize("head_dim");
    let rotary_dim = case.usize("rotary_dim");
    if let Some(p) = case.opt("rope.partial_rotary_factor") {
        let p: f64 = p.parse().unwrap();
        assert_eq!(
            (head_dim as f64 * p) as usize,
            rotary_dim,
            "{}: partial rotary",
            case.name
        );
    }
    let base = case.f64("rope.rope_theta") as f32;
    // DeepSeek-V3's `interleaved_in_half_out` rotates interleaved pairs (the checker
    // de-interleaves the output); its frequencies are those of any layout.
    let layout = check::posenc_layout(case.get("layout"));
    let cfg = RopeConfig::new(head_dim, base, layout).rotary_dim(rotary_dim);
    let factor = || case.f64("rope.factor") as f32;
    let original = || case.usize("rope.original_max_position_embeddings") as u32;
    let scaling = match case.get("rope.rope_type") {
        "linear" => Scaling::Linear { factor: factor() },
        "dynamic" => Scaling::DynamicNtk {
            factor: factor(),
            max_positions: case.usize("max_position_embeddings") as u32,
            seq_len: case.usize("dynamic.seq_len") as u32,
        },
        "yarn" => {
            // HF: `get("beta_fast") or 32`, `get("beta_slow") or 1`, truncate defaults true.
            let beta =
                |key, default: f32| opt_f32(case, key).filter(|&b| b != 0.0).unwrap_or(default);
            Scaling::Yarn(Yarn {
                factor: factor(),
                original_max_positions: original(),
                beta_fast: beta("rope.beta_fast", 32.0),
                beta_slow: beta("rope.beta_slow", 1.0),
                mscale: opt_f32(case, "rope.mscale"),
                mscale_all_dim: opt_f32(case, "rope.mscale_all_dim"),
                attention_factor: opt_f32(case, "rope.attention_factor"),
                truncate: case.opt("rope.truncate").is_none_or(|t| t == "true"),
            })
        }
        "llama3" => Scaling::Llama3 {
            factor: factor(),
            low_freq_factor: case.f64("rope.low_freq_factor") as f32,
            high_freq_factor: case.f64("rope.high_freq_factor") as f32,
            original_max_positions: original(),
        },
        "longrope" => {
            assert!(
                case.opt("rope.factor").is_none(),
                "{}: longrope with factor",
                case.name
            );
            *lists = (
                f32_list(case, "rope.short_factor"),
                f32_list(case, "rope.long_factor"),
            );
            let use_long = match case.get("longrope.branch") {
                "long" => true,
                "short" => false,
                other => panic!("{}: longrope.branch {other}", case.name),
            };
            return Rope::new(&cfg.scaling(Scaling::LongRope(LongRope {
                short_factor: &lists.0,
                long_factor: &lists.1,
                original_max_positions: original(),
                max_positions: case.usize("max_position_embeddings") as u32,
                use_long,
                attention_factor: opt_f32(case, "rope.attention_factor"),
            })))
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        }
        other => panic!("{}: not a scaled rope_type: {other}", case.name),
    };
    Rope::new(&cfg.scaling(scaling)).unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

struct Row {
    name: String,
    rope_type: String,
    max_ulps: u64,
    differing: usize,
    pairs: usize,
    /// For the differing pairs: the largest |tie position − 0.5| of their pow.
    worst_tie: f64,
    attention_rel: f64,
    /// Largest err/tol of the pipeline checks (cos/sin and outputs) over all backends.
    pipeline_ratio: f64,
}

/// The largest |tie position − 0.5| accepted for a pair that differs from HF. torch's SLEEF
/// powf (u10) rounds the wrong way only this close to a midpoint; the golden set's deviations
/// sit at 0.014–0.032.
const NEAR_TIE: f64 = 0.05;

/// Checks one case; returns its row of the report.
fn check_case(case: &Case) -> Row {
    let mut lists = (Vec::new(), Vec::new());
    let rope = build(case, &mut lists);
    let hf = case.array("inv_freq").to_f32();
    let ours = rope.inv_freq();
    assert_eq!(ours.len(), hf.len(), "{}: inv_freq length", case.name);
    let dist: Vec<u64> = ours.iter().zip(&hf).map(|(&a, &b)| ulps(a, b)).collect();
    let max_ulps = dist.iter().copied().max().unwrap_or(0);
    let worst = dist.iter().position(|&d| d == max_ulps).unwrap_or(0);
    assert!(
        max_ulps <= 2,
        "{}: inv_freq[{worst}] = {:e}, HF {:e}: {max_ulps} ulp",
        case.name,
        ours[worst],
        hf[worst]
    );
    let (b, d) = (pow_base(case), rope.rotary_dim());
    let mut worst_tie = 0.0f64;
    for (j, _) in dist.iter().enumerate().filter(|(_, d)| **d != 0) {
        let e = (2 * j) as f32 / d as f32;
        let off = (tie_position(b, e) - 0.5).abs();
        assert!(
            off <= NEAR_TIE,
            "{}: inv_freq[{j}] = {:e}, HF {:e}: {} ulp, and {b}^{e} is {off:.3} ulp from a tie: \
             not a pow rounding difference",
            case.name,
            ours[j],
            hf[j],
            dist[j]
        );
        worst_tie = worst_tie.max(off);
    }
    let m_hf = case.f64("attention_scaling");
    let m = rope.attention_factor() as f64;
    let attention_rel = ((m - m_hf) / m_hf).abs();
    assert!(
        attention_rel <= 2e-7,
        "{}: attention factor {m} vs HF {m_hf}",
        case.name
    );

    // The whole pipeline, on every backend; the inv_freq deviations above are carried by the
    // checker into its bounds as exact angle differences.
    let opts = RopeOptions {
        inv_freq_max_ulps: 2,
        ..RopeOptions::default()
    };
    let mut pipeline_ratio = 0.0f64;
    for backend in Backend::ALL.iter().copied().filter(|b| b.is_available()) {
        let rope = rope.with_backend(backend).unwrap();
        let st = check::try_check_rope_case(case, &rope, &opts)
            .unwrap_or_else(|e| panic!("[{}] {e}", backend.name()));
        for r in [
            st.cos_sin_ratio,
            st.cos_sin_torch_ratio,
            st.out_ratio,
            st.out_f64_ratio,
            st.out_torch_ratio,
        ] {
            pipeline_ratio = pipeline_ratio.max(r);
        }
    }
    Row {
        name: case.name.clone(),
        rope_type: case.get("rope.rope_type").to_string(),
        max_ulps,
        differing: dist.iter().filter(|&&d| d != 0).count(),
        pairs: hf.len(),
        worst_tie,
        attention_rel,
        pipeline_ratio,
    }
}

#[test]
fn scaled_cases_match_hf_inv_freq_and_attention_factor() {
    let names = common::case_names();
    let scaled: Vec<Case> = names
        .iter()
        .map(|n| Case::load(n))
        .filter(|c| c.get("kind") == "rope")
        .filter(|c| c.opt("rope.rope_type").is_some_and(|t| SCALED.contains(&t)))
        .collect();
    // Count independently of the filter above: every INDEX entry whose manifest names one of
    // the scaled types must be checked.
    let expected = names
        .iter()
        .filter(|n| {
            let text =
                std::fs::read_to_string(common::data_dir().join(n).join("manifest.txt")).unwrap();
            text.lines().any(|l| {
                SCALED
                    .iter()
                    .any(|t| l.trim() == format!("rope.rope_type={t}"))
            })
        })
        .count();

    let mut rows = Vec::new();
    for case in &scaled {
        rows.push(check_case(case));
    }
    println!(
        "{:<52} {:<8} {:>7} {:>9} {:>8} {:>12} {:>9}",
        "case", "type", "max ulp", "differing", "|tie-.5|", "attn rel", "err/tol"
    );
    for r in &rows {
        println!(
            "{:<52} {:<8} {:>7} {:>6}/{:<2} {:>8.3} {:>12.3e} {:>9.3}",
            r.name,
            r.rope_type,
            r.max_ulps,
            r.differing,
            r.pairs,
            r.worst_tie,
            r.attention_rel,
            r.pipeline_ratio
        );
    }
    assert_eq!(
        rows.len(),
        expected,
        "scaled cases checked vs listed in INDEX.txt"
    );
    for t in SCALED {
        assert!(
            rows.iter().any(|r| r.rope_type == *t),
            "no golden case for rope_type {t}"
        );
    }
}
