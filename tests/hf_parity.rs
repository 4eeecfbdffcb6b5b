//! HF parity: how close posenc's outputs come to torch's `q_out`/`k_out` on the golden cases,
//! in posenc's own rounding ([`Rounding::Once`], the default) and in the HF-parity modes
//! ([`Rounding::HfEager`] for Llama/NeoX/GPT-J/gpt-oss/DeepSeek/Phi-3, whose apply runs every
//! op in the case dtype; [`Rounding::HfUpcast`] for Cohere, which upcasts and rounds once).
//!
//! The rope of a case is `Rope::from_inv_freq(HF's inv_freq buffer, attention_scaling)`, so the
//! frequencies are HF's bit for bit and only the apply step is under test (GPT-J has no buffer:
//! `Rope::new`, whose default frequencies equal HF's on every case that has one).
//!
//! # What is asserted, and why
//!
//! An output element depends on its inputs `a, b` (bitwise torch's), the pair's cos/sin table
//! entries, and the sequence of operations. In an HF mode the sequence is torch's (f32 angle
//! `f32(p)·ω`, cos/sin in f32, times the attention factor, rounded to the dtype; then the
//! dtype's eager ops, or one f32 rotation rounded once), so:
//!
//! 1. **Where our table entries equal torch's** (`cos`/`sin` arrays of the case, in its dtype),
//!    the output must be **bitwise** torch's. Our table entries are read back exactly by
//!    rotating unit vectors (`(1, 0)` → `(c, s)`, every rounding of which is exact).
//! 2. **Where they differ**, by `Δc`, `Δs` (known): `|ours − torch| ≤ |a·Δc| + |b·Δs| +
//!    2·2.01·u_T·(|a·c| + |b·s|) + 2·sub` — both sides round at most three times, each rounding
//!    within `u_T` of its value, and the sum of the three is within `2.01·u_T·(|a·c| + |b·s|)`
//!    of the exact `a·c − b·s` (`u_T` = 2^-24/2^-11/2^-8, `sub` half the smallest subnormal).
//! 3. **f16/bf16, HF mode: ≥ 99 % of the rotated elements bitwise equal.** torch's f32 cos/sin
//!    are within ~1.8 ulp of correctly rounded and ours within ~1, so they differ by a few f32
//!    ulps at most; rounded to bf16 (f16) they still agree unless the pair straddles a
//!    rounding midpoint, a chance of about 2^-15 (2^-12) per entry: with at most 5·64 entries
//!    per case essentially every entry agrees, and by 1. every element with it.
//! 4. The HF modes are backend-independent: every backend gives bitwise the same output (the
//!    rotation is unfused in these modes and cos/sin are bitwise scalar's).
//! 5. `Once` (exact angles, one rounding) is reported, and checked within the case's
//!    `hint.tol_abs.out` (the golden tests check it in full).
//!
//! Run with `--nocapture` for the table (case, dtype, mode, bitwise %, max |ours − torch|, the
//! largest difference in ulps of the larger product `max(|a·c|, |b·s|)`, table entries equal).

mod common;

use common::check::{self, Dt, Store};
use common::{Case, backends, case_names};
use posenc::{Layout, Rope, RopeConfig, Rounding, bf16, f16};

/// Rope cases in INDEX.txt.
const ROPE_CASES: usize = 29;

/// The case's rope: HF's own frequency buffer, or (GPT-J) the default frequencies.
fn rope_for(case: &Case) -> Rope {
    let layout = check::posenc_layout(case.get("layout"));
    let (hd, rd) = (case.usize("head_dim"), case.usize("rotary_dim"));
    let m = case.f64("attention_scaling") as f32;
    if case.has_array("inv_freq") {
        Rope::from_inv_freq(hd, layout, &case.array("inv_freq").to_f32(), m).unwrap()
    } else {
        let base = case.f64("rope.rope_theta") as f32;
        assert_eq!(m, 1.0);
        Rope::new(&RopeConfig::new(hd, base, layout).rotary_dim(rd)).unwrap()
    }
}

fn is_cohere(case: &Case) -> bool {
    case.get("apply_semantics").contains("upcast")
}

/// Our cos/sin table entries in an HF mode, `[tokens, r/2]` each, read back exactly: one head
/// per token with every pair `(1, 0)` rotates to `(c, s)`.
fn our_tables<T: Store>(rope: &Rope, positions: &[i32]) -> (Vec<f64>, Vec<f64>) {
    let (hd, r) = (rope.head_dim(), rope.rotary_dim());
    let half = r / 2;
    let pair = |i: usize| match rope.layout() {
        Layout::Interleaved => (2 * i, 2 * i + 1),
        Layout::RotateHalf => (i, i + half),
    };
    let s = positions.len();
    let mut x = vec![T::from_f32(0.0); s * hd];
    for t in 0..s {
        for i in 0..half {
            x[t * hd + pair(i).0] = T::from_f32(1.0);
        }
    }
    rope.apply(&mut x, 1, positions).unwrap();
    let (mut c, mut sn) = (Vec::new(), Vec::new());
    for t in 0..s {
        for i in 0..half {
            let (a, b) = pair(i);
            c.push(x[t * hd + a].to_f64());
            sn.push(x[t * hd + b].to_f64());
        }
    }
    (c, sn)
}

/// One row of the report.
#[derive(Clone, Debug, Default)]
struct Row {
    case: String,
    dtype: String,
    mode: String,
    rotated: usize,
    equal: usize,
    max_abs: f64,
    max_ulps: f64,
    table_entries: usize,
    table_equal: usize,
    /// Largest table difference from torch, in ulps of the dtype at torch's value.
    table_max_ulps: f64,
    /// Elements whose table entries equal torch's but whose output does not (must be 0).
    unexplained: usize,
    /// Elements whose difference exceeds the bound of point 2 (must be 0).
    over_bound: usize,
    out: Vec<u32>,
}

fn run<T: Store>(case: &Case, rope: &Rope, mode: Rounding) -> Row {
    let dt = Dt::parse(case.get("dtype"));
    let layout = case.get("layout");
    let half_out = layout == "interleaved_in_half_out";
    let (d, r) = (case.usize("head_dim"), case.usize("rotary_dim"));
    let n = r / 2;
    let positions: Vec<i32> = case
        .array("positions")
        .to_i64()
        .into_iter()
        .map(|p| i32::try_from(p).unwrap())
        .collect();
    let s = positions.len();
    let rope = rope.with_rounding(mode);
    let hf_mode = mode != Rounding::Once;
    let torch_c = check::table_to_pairs(
        &case.array("cos").to_f64(),
        &case.array("cos").shape,
        case.get("cos_layout"),
        r,
    );
    let torch_s = check::table_to_pairs(
        &case.array("sin").to_f64(),
        &case.array("sin").shape,
        case.get("cos_layout"),
        r,
    );
    let (our_c, our_s) = our_tables::<T>(&rope, &positions);
    let mut row = Row {
        case: case.name.clone(),
        dtype: case.get("dtype").to_string(),
        mode: format!("{mode:?}"),
        ..Row::default()
    };
    if hf_mode {
        row.table_entries = 2 * s * n;
        row.table_equal = (0..s * n)
            .map(|k| usize::from(our_c[k] == torch_c[k]) + usize::from(our_s[k] == torch_s[k]))
            .sum();
        row.table_max_ulps = (0..s * n)
            .map(|k| {
                ((our_c[k] - torch_c[k]).abs() / dt.ulp(torch_c[k]))
                    .max((our_s[k] - torch_s[k]).abs() / dt.ulp(torch_s[k]))
            })
            .fold(0.0, f64::max);
    }
    let u_t = match dt {
        Dt::F32 => 1.0 / 16_777_216.0,
        Dt::F16 => 1.0 / 2048.0,
        Dt::Bf16 => 1.0 / 256.0,
    };
    let sub = dt.ulp(0.0) / 2.0;
    let tol_abs: f64 = case.f64("hint.tol_abs.out");
    for tensor in ["q", "k"] {
        let input = case.array(tensor);
        let heads = input.shape[1];
        let x = T::load(&input);
        let y = check::apply_hf(&rope, &x, heads, &positions, half_out);
        let torch = T::load(&case.array(&format!("{tensor}_out")));
        for h in 0..heads {
            for t in 0..s {
                let base = (h * s + t) * d;
                for i in 0..n {
                    let ((ia, ib), (oa, ob)) = check::pair_indices(layout, r, i);
                    let (a, b) = (x[base + ia].to_f64(), x[base + ib].to_f64());
                    let k = t * n + i;
                    let (tc, ts) = (torch_c[k], torch_s[k]);
                    let same_table = our_c[k] == tc && our_s[k] == ts;
                    let (dc, ds) = ((our_c[k] - tc).abs(), (our_s[k] - ts).abs());
                    let (cm, sm) = (our_c[k].abs().max(tc.abs()), our_s[k].abs().max(ts.abs()));
                    // (first member: a·c − b·s; second: b·c + a·s)
                    for (o, p, q) in [(oa, a, b), (ob, b, a)] {
                        let (got, want) = (y[base + o], torch[base + o]);
                        let diff = (got.to_f64() - want.to_f64()).abs();
                        row.rotated += 1;
                        let eq = got.bits() == want.bits();
                        row.equal += usize::from(eq);
                        row.max_abs = row.max_abs.max(diff);
                        let larger = (p * cm).abs().max((q * sm).abs());
                        row.max_ulps = row.max_ulps.max(diff / dt.ulp(larger));
                        if hf_mode {
                            if same_table && !eq {
                                row.unexplained += 1;
                            }
                            let bound = (p * dc).abs()
                                + (q * ds).abs()
                                + 2.0 * 2.01 * u_t * ((p * cm).abs() + (q * sm).abs())
                                + 2.0 * sub;
                            if diff > bound {
                                row.over_bound += 1;
                            }
                        } else if diff > tol_abs {
                            row.over_bound += 1;
                        }
                    }
                }
                // Pass-through channels are bitwise the input (and torch's).
                for o in r..d {
                    assert_eq!(
                        y[base + o].bits(),
                        x[base + o].bits(),
                        "{}: tail",
                        case.name
                    );
                    assert_eq!(
                        y[base + o].bits(),
                        torch[base + o].bits(),
                        "{}: tail",
                        case.name
                    );
                }
            }
        }
        row.out.extend(y.iter().map(|v| v.bits()));
    }
    row
}

fn run_case(case: &Case, rope: &Rope, mode: Rounding) -> Row {
    match Dt::parse(case.get("dtype")) {
        Dt::F32 => run::<f32>(case, rope, mode),
        Dt::F16 => run::<f16>(case, rope, mode),
        Dt::Bf16 => run::<bf16>(case, rope, mode),
    }
}

#[test]
fn hf_parity_table() {
    let mut rows: Vec<Row> = Vec::new();
    let mut failures = Vec::new();
    let mut cases = 0;
    for name in case_names() {
        let case = Case::load(&name);
        if case.get("kind") != "rope" {
            continue;
        }
        cases += 1;
        let rope = rope_for(&case);
        let parity = if is_cohere(&case) {
            Rounding::HfUpcast
        } else {
            Rounding::HfEager
        };
        for mode in [Rounding::Once, parity] {
            let mut first: Option<Row> = None;
            for b in backends() {
                let row = run_case(&case, &rope.with_backend(b).unwrap(), mode);
                let tag = format!("{name} {mode:?} [{}]", b.name());
                if row.over_bound > 0 {
                    failures.push(format!(
                        "{tag}: {} elements beyond the bound",
                        row.over_bound
                    ));
                }
                if row.unexplained > 0 {
                    failures.push(format!(
                        "{tag}: {} elements differ from torch although their cos/sin equal torch's",
                        row.unexplained
                    ));
                }
                let bitwise = row.equal as f64 / row.rotated as f64;
                if mode != Rounding::Once && row.dtype != "f32" && bitwise < 0.99 {
                    failures.push(format!("{tag}: only {:.3} % bitwise", 100.0 * bitwise));
                }
                match &first {
                    None => first = Some(row),
                    Some(f) => {
                        if mode != Rounding::Once && f.out != row.out {
                            failures.push(format!(
                                "{tag}: HF mode differs from the scalar backend's output"
                            ));
                        }
                    }
                }
            }
            rows.push(first.unwrap());
        }
    }
    println!(
        "{:<52} {:<4} {:<8} {:>9} {:>10} {:>6} {:>13} {:>9}",
        "case", "dt", "mode", "bitwise%", "max|Δ|", "ulps", "table equal", "tab ulps"
    );
    for r in &rows {
        println!(
            "{:<52} {:<4} {:<8} {:>9.3} {:>10.3e} {:>6.2} {:>13} {:>9}",
            r.case.trim_start_matches("rope_"),
            r.dtype,
            r.mode,
            100.0 * r.equal as f64 / r.rotated as f64,
            r.max_abs,
            r.max_ulps,
            if r.table_entries > 0 {
                format!("{}/{}", r.table_equal, r.table_entries)
            } else {
                "-".to_string()
            },
            if r.table_entries > 0 {
                format!("{:.2}", r.table_max_ulps)
            } else {
                "-".to_string()
            }
        );
    }
    let sum = |dt16: bool, hf: bool| {
        let sel: Vec<&Row> = rows
            .iter()
            .filter(|r| (r.dtype != "f32") == dt16 && (r.mode != "Once") == hf)
            .collect();
        let (e, n): (usize, usize) = sel
            .iter()
            .fold((0, 0), |(e, n), r| (e + r.equal, n + r.rotated));
        (e, n)
    };
    for (dt16, label) in [(true, "f16/bf16"), (false, "f32")] {
        for (hf, mode) in [(false, "Once"), (true, "HF mode")] {
            let (e, n) = sum(dt16, hf);
            println!(
                "total {label:<8} {mode:<8}: {e}/{n} bitwise ({:.3} %)",
                100.0 * e as f64 / n as f64
            );
        }
    }
    assert_eq!(cases, ROPE_CASES);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
