//! Reusable checkers: one golden case against posenc (format: `tests/data/README.md`).
//!
//! # RoPE
//!
//! ```ignore
//! pub fn check_rope_case(case: &Case, rope: &posenc::Rope) -> RopeStats;           // panics on failure
//! pub fn try_check_rope_case(case: &Case, rope: &Rope, opts: &RopeOptions)
//!     -> Result<RopeStats, String>;                                                // every failure listed
//! ```
//!
//! `case` is a `kind=rope` case; `rope` is the caller's [`posenc::Rope`] built from the
//! manifest (the checker verifies `head_dim`, `rotary_dim` and the layout agree with it, but
//! never builds frequencies itself, so it serves every `rope.rope_type`). Handled:
//!
//! * layouts `half` (`Layout::RotateHalf`), `interleaved` (`Layout::Interleaved`) and
//!   `interleaved_in_half_out` (DeepSeek-V3: `Layout::Interleaved`, then each head's rotary
//!   part is de-interleaved, `out[i] = y[2i]`, `out[i + r/2] = y[2i + 1]`);
//! * dtypes f32 / f16 / bf16; partial rotary (`pass_through=tail`: the tail must be
//!   bit-for-bit the input); positions i64 → i32; `q` and `k` (head counts may differ);
//! * HF's `[1, H, S, D]` is transposed to posenc's token-major `[S, H, D]`, `rope.apply(x, H,
//!   positions)` runs, and the result is transposed back.
//!
//! Checks, where the arrays exist (each failure is recorded with case, tensor, head, token,
//! position, dim, ours, expected and the tolerance):
//!
//! 1. `rope.inv_freq()` vs `inv_freq`: bit-for-bit (`RopeOptions::inv_freq_max_ulps`, default 0,
//!    the contract). Any ulp difference that is allowed is carried into the later bounds as an
//!    exact angle difference `|p|·|ω_ours − ω_hf|`, never as a loosened constant.
//! 2. `rope.attention_factor()` vs `attention_scaling`: relative 2e-7.
//! 3. `rope.fill_cos_sin` vs `cos_f64_f32freq` / `sin_f64_f32freq` (converted from the
//!    `cos_layout` columns to pairs): `≤ 2.4e-7·max(1, m) + |m − m_ref| + m·dθ` (the contract,
//!    plus the two derived allowances, both 0 for an exact inv_freq and m = 1); GPT-J (no
//!    f32freq arrays) against `cos_f64` with `dθ = |p|·|ω_ours − ω_f64|`. For f32 cases also
//!    vs torch `cos`/`sin`: `2·observed_p + 1e-6 + allowance`, where `observed_p` is torch's own
//!    distance from the truth at that position, measured from the arrays.
//! 4. Outputs vs the f64 truth, per element (see [`rotation_bound`] for the derivation), for
//!    f16/bf16 plus half an ulp of the dtype (round-once); for f16/bf16 also the count of
//!    elements equal to `round_dtype(truth)` (reported; at most 1 % may differ; only against
//!    the f32freq truth: the pure-f64 one has other angles, so rounding it means nothing). Checked
//!    against `*_f64_f32freq` (primary) and, with `RopeOptions::check_f64_truth`, against
//!    `*_f64` with the angle allowance from `inv_freq_f64` (GPT-J: the f64 formula).
//! 5. Outputs vs torch `q_out` / `k_out`: f32 per position
//!    `2·observed.torch_vs_f64_f32freq.out_max_abs_per_position + 1e-5`, else
//!    `hint.tol_abs.out`; f16/bf16 `hint.tol_abs.out`.
//!
//! # Sinusoidal
//!
//! ```ignore
//! pub fn check_sinusoidal_case(case: &Case, pe: &posenc::Sinusoidal) -> SinStats;  // panics
//! pub fn try_check_sinusoidal_case(case: &Case, pe: &Sinusoidal) -> Result<SinStats, String>;
//! ```
//! for `variant=classic_interleaved` and `variant=split_marian` (see the function docs).
#![allow(dead_code)]

use super::{Array, Case};
use posenc::{Element, Layout, Rope, Sinusoidal, bf16, f16};

/// f32 unit roundoff, 2^-24.
pub const U32: f64 = 1.0 / 16_777_216.0;
/// The contract's sin/cos accuracy: 2 ulp of 1 in f32.
pub const TRIG_TOL: f64 = 2.4e-7;

/// Storage dtype of a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dt {
    F32,
    F16,
    Bf16,
}

impl Dt {
    pub fn parse(s: &str) -> Dt {
        match s {
            "f32" => Dt::F32,
            "f16" => Dt::F16,
            "bf16" => Dt::Bf16,
            other => panic!("unsupported dtype {other}"),
        }
    }
    /// (significand bits incl. the hidden one, minimum normal exponent)
    fn format(self) -> (i32, i32) {
        match self {
            Dt::F32 => (24, -126),
            Dt::F16 => (11, -14),
            Dt::Bf16 => (8, -126),
        }
    }
    /// The spacing of this dtype's values around `|x|` (subnormal spacing below the normals).
    pub fn ulp(self, x: f64) -> f64 {
        let (p, emin) = self.format();
        let x = x.abs();
        let e = if x == 0.0 {
            emin
        } else {
            (((x.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(emin)
        };
        2f64.powi(e - (p - 1))
    }
    /// `x` rounded once, to nearest even, to this dtype (no overflow handling: |x| is small).
    /// Written here rather than taken from `half::f16::from_f64`, which drops the low 32 bits
    /// of the f64 significand first and so can misjudge a near-tie.
    pub fn round(self, x: f64) -> f64 {
        let q = self.ulp(x);
        // x / q and the product are exact (q is a power of two, no overflow or underflow).
        (x / q).round_ties_even() * q
    }
}

/// Element types the checker can load from an [`Array`].
pub trait Store: Element {
    fn load(a: &Array) -> Vec<Self>;
    fn to_f64(self) -> f64 {
        self.to_f32() as f64
    }
    fn bits(self) -> u32;
}

impl Store for f32 {
    fn load(a: &Array) -> Vec<f32> {
        a.to_f32()
    }
    fn bits(self) -> u32 {
        self.to_bits()
    }
}

impl Store for f16 {
    fn load(a: &Array) -> Vec<f16> {
        assert_eq!(a.dtype, "f16");
        a.bits16().into_iter().map(f16::from_bits).collect()
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
}

impl Store for bf16 {
    fn load(a: &Array) -> Vec<bf16> {
        assert_eq!(a.dtype, "bf16");
        a.bits16().into_iter().map(bf16::from_bits).collect()
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
}

/// Collects failures (the first few in full, then a count) instead of stopping at the first.
pub struct Failures {
    case: String,
    list: Vec<String>,
    count: usize,
}

impl Failures {
    pub fn new(case: &str) -> Failures {
        Failures {
            case: case.to_string(),
            list: Vec::new(),
            count: 0,
        }
    }
    pub fn fail(&mut self, msg: String) {
        self.count += 1;
        if self.list.len() < 12 {
            self.list.push(msg);
        }
    }
    pub fn check(&mut self, ok: bool, msg: impl FnOnce() -> String) {
        if !ok {
            self.fail(msg());
        }
    }
    pub fn finish<S>(self, stats: S) -> Result<S, String> {
        if self.count == 0 {
            Ok(stats)
        } else {
            Err(format!(
                "{}: {} failure(s):\n  {}",
                self.case,
                self.count,
                self.list.join("\n  ")
            ))
        }
    }
}

/// Knobs of the RoPE checker. The defaults are the contract; loosen only with a reason.
#[derive(Clone, Copy, Debug)]
pub struct RopeOptions {
    /// Largest accepted ulp distance of `rope.inv_freq()` from HF's `inv_freq` (0: bit-for-bit).
    pub inv_freq_max_ulps: u32,
    /// Also check outputs and cos/sin against the pure-f64 `*_f64` arrays.
    pub check_f64_truth: bool,
}

impl Default for RopeOptions {
    fn default() -> Self {
        RopeOptions {
            inv_freq_max_ulps: 0,
            check_f64_truth: true,
        }
    }
}

/// What one RoPE case measured (all maxima over q and k, every head, token and pair).
#[derive(Clone, Debug, Default)]
pub struct RopeStats {
    pub case: String,
    pub dtype: String,
    /// Max ulp distance `inv_freq()` vs HF's `inv_freq` (None: no array, e.g. GPT-J).
    pub inv_freq_ulps: Option<u64>,
    /// GPT-J (no HF buffer): max relative distance of `inv_freq()` from the f64 formula.
    pub inv_freq_rel_vs_f64: f64,
    /// |m − attention_scaling| / attention_scaling.
    pub attention_rel: f64,
    /// Max |ours − truth| of cos/sin (primary truth), and the max of err / tol.
    pub cos_sin_err: f64,
    pub cos_sin_ratio: f64,
    /// Max |ours − torch| of cos/sin (f32 cases) and the max err / tol.
    pub cos_sin_torch_err: f64,
    pub cos_sin_torch_ratio: f64,
    /// Outputs vs the primary truth (`*_f64_f32freq`, or `*_f64` for GPT-J).
    pub out_err: f64,
    pub out_ratio: f64,
    /// Outputs vs `*_f64` with the angle allowance (when checked).
    pub out_f64_err: f64,
    pub out_f64_ratio: f64,
    /// Outputs vs torch.
    pub out_torch_err: f64,
    pub out_torch_ratio: f64,
    /// f16/bf16: rotated elements equal to round_dtype(primary truth), and how many rotated.
    pub round_exact: usize,
    pub rotated: usize,
    /// Rotated elements bitwise equal to torch's output.
    pub torch_equal: usize,
    /// Tail (pass-through) elements verified bit-for-bit.
    pub tail_checked: usize,
}

/// Per-pair (input indices, output indices) of pair `i` within one head.
pub fn pair_indices(layout: &str, r: usize, i: usize) -> ((usize, usize), (usize, usize)) {
    let h = r / 2;
    match layout {
        "half" => ((i, i + h), (i, i + h)),
        "interleaved" => ((2 * i, 2 * i + 1), (2 * i, 2 * i + 1)),
        "interleaved_in_half_out" => ((2 * i, 2 * i + 1), (i, i + h)),
        other => panic!("unknown layout {other}"),
    }
}

/// The posenc layout that implements the manifest's `layout`.
pub fn posenc_layout(layout: &str) -> Layout {
    match layout {
        "half" => Layout::RotateHalf,
        "interleaved" | "interleaved_in_half_out" => Layout::Interleaved,
        other => panic!("unknown layout {other}"),
    }
}

/// A `cos`/`sin`-style array (`[S, W]`, `cos_layout` columns) as pairs: `[S, r/2]`.
pub fn table_to_pairs(v: &[f64], shape: &[usize], cos_layout: &str, r: usize) -> Vec<f64> {
    let (s, w) = (shape[0], shape[1]);
    let n = r / 2;
    let (want_w, col): (usize, fn(usize) -> usize) = match cos_layout {
        "cat" => (r, |i| i),
        "repeat_interleave" => (r, |i| 2 * i),
        "half_only" | "gptj_sin_cos" => (n, |i| i),
        other => panic!("unknown cos_layout {other}"),
    };
    assert_eq!(
        w, want_w,
        "cos_layout {cos_layout}: width {w}, rotary_dim {r}"
    );
    let mut out = Vec::with_capacity(s * n);
    for t in 0..s {
        for i in 0..n {
            out.push(v[t * w + col(i)]);
        }
    }
    out
}

/// posenc's output for an HF `[1, H, S, D]` tensor: transposed to token-major `[S, H, D]`,
/// `rope.apply`, transposed back; for `half_out` (DeepSeek `interleaved_in_half_out`) each
/// head's rotary part is then de-interleaved: `out[i] = y[2i]`, `out[i + r/2] = y[2i + 1]`.
pub fn apply_hf<T: Element>(
    rope: &Rope,
    hf: &[T],
    heads: usize,
    positions: &[i32],
    half_out: bool,
) -> Vec<T> {
    let s = positions.len();
    let d = rope.head_dim();
    let r = rope.rotary_dim();
    assert_eq!(hf.len(), heads * s * d);
    let mut x = vec![T::default(); hf.len()];
    for h in 0..heads {
        for t in 0..s {
            x[(t * heads + h) * d..][..d].copy_from_slice(&hf[(h * s + t) * d..][..d]);
        }
    }
    rope.apply(&mut x, heads, positions).expect("Rope::apply");
    let mut out = vec![T::default(); hf.len()];
    for h in 0..heads {
        for t in 0..s {
            let src = &x[(t * heads + h) * d..][..d];
            let dst = &mut out[(h * s + t) * d..][..d];
            dst.copy_from_slice(src);
            if half_out {
                for i in 0..r / 2 {
                    dst[i] = src[2 * i];
                    dst[i + r / 2] = src[2 * i + 1];
                }
            }
        }
    }
    out
}

/// The bound on one rotated output, ours vs a truth, before rounding to the storage dtype.
///
/// Ours is `y = fl(a·c' ∓ b·s')` (fused or not) with `c' ≈ m_o·cos θ_o`, `s' ≈ m_o·sin θ_o` the
/// f32 table values; the truth is `m_r·(a·cos θ_r ∓ b·sin θ_r)` in f64, `θ_r = p·ω_ref`,
/// `θ_o = p·ω_ours` exactly. `(t1, t2)` are `(|a·c|, |b·s|)` for the first member of a pair,
/// `(|b·c|, |a·s|)` for the second, with c, s the unscaled truth cos/sin. Then
///
/// * rotation rounding with the given c', s' (the contract): `2u·(|a·c'| + |b·s'|)`, and
///   `|c'| ≤ m·|c| + e_cs`, so `≤ 2u·m·(t1 + t2) + 2u·(|a| + |b|)·e_cs`;
/// * table error: `|c' − m_r·cos θ_r| ≤ e_cs` with `e_cs = 2.4e-7·max(1, m_o)` (contract)
///   `+ |m_o − m_r|` (attention factor) `+ m·|θ_o − θ_r|` (|d cos/dθ| ≤ 1), same for sin,
///   weighted by |a| and |b|: `(|a| + |b|)·e_cs`;
/// * the f64 truth's own rounding, a few f64 ulps: `4e-16·m·(|a| + |b|)`.
///
/// `m = max(m_o, m_r)`, `u = 2^-24`.
pub fn rotation_bound(t1: f64, t2: f64, ab: f64, m: f64, e_cs: f64) -> f64 {
    2.0 * U32 * m * (t1 + t2) + ab * e_cs * (1.0 + 2.0 * U32) + 4e-16 * m * ab + 1e-300
}

/// One "truth" to compare against: per-pair cos/sin (attention factor included), the
/// attention factor used, per (token, pair) angle difference from ours, and the outputs.
struct Truth {
    name: &'static str,
    cos: Vec<f64>,
    sin: Vec<f64>,
    m: f64,
    dtheta: Vec<f64>,
    q: Vec<f64>,
    k: Vec<f64>,
}

/// ulp distance of two finite f32 of the same sign.
fn ulps(a: f32, b: f32) -> u64 {
    let key = |x: f32| {
        let b = x.to_bits() as i64;
        if b < 0 { i32::MIN as i64 - b } else { b }
    };
    (key(a) - key(b)).unsigned_abs()
}

/// Per-position list from the manifest, if present and of the right length.
fn per_position(case: &Case, key: &str, s: usize) -> Option<Vec<f64>> {
    case.opt(key).map(|_| {
        let v = case.list_f64(key);
        assert_eq!(v.len(), s, "{}: {key} length", case.name);
        v
    })
}

/// Checks one RoPE case; panics listing every failure. See the module docs.
pub fn check_rope_case(case: &Case, rope: &Rope) -> RopeStats {
    try_check_rope_case(case, rope, &RopeOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Checks one RoPE case; `Err` lists the failures. See the module docs.
pub fn try_check_rope_case(
    case: &Case,
    rope: &Rope,
    opts: &RopeOptions,
) -> Result<RopeStats, String> {
    assert_eq!(case.get("kind"), "rope", "{}: not a rope case", case.name);
    let name = case.name.as_str();
    let dt = Dt::parse(case.get("dtype"));
    let layout = case.get("layout").to_string();
    let d = case.usize("head_dim");
    let r = case.usize("rotary_dim");
    let n = r / 2;
    let mut f = Failures::new(name);
    let mut st = RopeStats {
        case: name.to_string(),
        dtype: case.get("dtype").to_string(),
        ..RopeStats::default()
    };
    // The caller's rope must be the manifest's configuration.
    assert_eq!(rope.head_dim(), d, "{name}: head_dim");
    assert_eq!(rope.rotary_dim(), r, "{name}: rotary_dim");
    f.check(rope.layout() == posenc_layout(&layout), || {
        format!("layout: rope has {:?}, case is {layout}", rope.layout())
    });
    let half_out = layout == "interleaved_in_half_out";
    match case.get("pass_through") {
        "none" => assert_eq!(r, d, "{name}: pass_through=none but rotary_dim < head_dim"),
        "tail" => assert!(r < d, "{name}: pass_through=tail"),
        other => panic!("{name}: pass_through={other}"),
    }

    let positions: Vec<i32> = case
        .array("positions")
        .to_i64()
        .into_iter()
        .map(|p| i32::try_from(p).expect("position fits i32"))
        .collect();
    let s = positions.len();
    let ours_w: Vec<f64> = rope.inv_freq().iter().map(|&w| w as f64).collect();
    assert_eq!(ours_w.len(), n);
    let m_o = rope.attention_factor() as f64;

    // 1. inv_freq, bit for bit.
    let hf_w: Option<Vec<f32>> = case
        .has_array("inv_freq")
        .then(|| case.array("inv_freq").to_f32());
    if let Some(hf) = &hf_w {
        assert_eq!(hf.len(), n, "{name}: inv_freq length");
        let mut worst = 0;
        for (i, (&o, &h)) in rope.inv_freq().iter().zip(hf).enumerate() {
            let u = ulps(o, h);
            worst = worst.max(u);
            f.check(u <= opts.inv_freq_max_ulps as u64, || {
                format!("inv_freq[{i}]: ours {o:e} hf {h:e} ({u} ulp)")
            });
        }
        st.inv_freq_ulps = Some(worst);
    }

    // 2. attention factor.
    let m_hf = case.f64("attention_scaling");
    st.attention_rel = (m_o - m_hf).abs() / m_hf;
    f.check(st.attention_rel <= 2e-7, || {
        format!("attention_factor: ours {m_o} hf {m_hf}")
    });

    // The f64 frequencies of the pure-f64 run: its buffer, or (GPT-J) the formula
    // 1 / base^(2i/r) that create_sinusoidal_positions evaluates in f64.
    let w_f64: Vec<f64> = if case.has_array("inv_freq_f64") {
        case.array("inv_freq_f64").to_f64()
    } else {
        let base = case.f64("rope.rope_theta");
        (0..n)
            .map(|i| 1.0 / base.powf((2 * i) as f64 / r as f64))
            .collect()
    };
    if hf_w.is_none() {
        st.inv_freq_rel_vs_f64 = ours_w
            .iter()
            .zip(&w_f64)
            .map(|(o, w)| ((o - w) / w).abs())
            .fold(0.0, f64::max);
        // An f32 computation in HF's order is within a couple of f32 roundings of the formula.
        f.check(st.inv_freq_rel_vs_f64 <= 3.0 * U32, || {
            format!("inv_freq vs f64 formula: rel {:e}", st.inv_freq_rel_vs_f64)
        });
    }

    // Angle differences |p·ω_ours − p·ω_ref| per (token, pair); p·ω_ours is exact in f64,
    // p·ω_ref is rounded once (the 1e-15 relative slack).
    let dtheta = |w_ref: &[f64]| -> Vec<f64> {
        let mut v = Vec::with_capacity(s * n);
        for &p in &positions {
            let p = p as f64;
            for i in 0..n {
                v.push((p * ours_w[i] - p * w_ref[i]).abs() + 1e-15 * (p * w_ref[i]).abs());
            }
        }
        v
    };
    let cos_layout = case.get("cos_layout").to_string();
    let pairs_of = |arr: &str| -> Vec<f64> {
        let a = case.array(arr);
        table_to_pairs(&a.to_f64(), &a.shape, &cos_layout, r)
    };
    let mut truths: Vec<Truth> = Vec::new();
    if case.has_array("q_out_f64_f32freq") {
        let w_ref: Vec<f64> = hf_w
            .as_ref()
            .expect("f32freq arrays come with inv_freq")
            .iter()
            .map(|&w| w as f64)
            .collect();
        truths.push(Truth {
            name: "f64_f32freq",
            cos: pairs_of("cos_f64_f32freq"),
            sin: pairs_of("sin_f64_f32freq"),
            m: m_hf,
            dtheta: dtheta(&w_ref),
            q: case.array("q_out_f64_f32freq").to_f64(),
            k: case.array("k_out_f64_f32freq").to_f64(),
        });
    }
    if truths.is_empty() || opts.check_f64_truth {
        let m_ref = case
            .opt("attention_scaling_f64")
            .map_or(m_hf, |v| v.parse().unwrap());
        truths.push(Truth {
            name: "f64",
            cos: pairs_of("cos_f64"),
            sin: pairs_of("sin_f64"),
            m: m_ref,
            dtheta: dtheta(&w_f64),
            q: case.array("q_out_f64").to_f64(),
            k: case.array("k_out_f64").to_f64(),
        });
    }

    // 3. cos/sin tables.
    let mut cos = vec![0f32; s * n];
    let mut sin = vec![0f32; s * n];
    rope.fill_cos_sin(&positions, &mut cos, &mut sin)
        .expect("fill_cos_sin");
    let e_cs_of = |tr: &Truth, j: usize| {
        TRIG_TOL * m_o.max(1.0) + (m_o - tr.m).abs() + m_o.max(tr.m) * tr.dtheta[j]
    };
    for (ti, tr) in truths.iter().enumerate() {
        for (t, &p) in positions.iter().enumerate() {
            for i in 0..n {
                let j = t * n + i;
                let tol = e_cs_of(tr, j);
                for (what, ours, truth) in [("cos", cos[j], tr.cos[j]), ("sin", sin[j], tr.sin[j])]
                {
                    let err = (ours as f64 - truth).abs();
                    if ti == 0 {
                        st.cos_sin_err = st.cos_sin_err.max(err);
                        st.cos_sin_ratio = st.cos_sin_ratio.max(err / tol);
                    }
                    f.check(err <= tol, || {
                        format!(
                            "{what} vs {} at token {t} (p={p}) pair {i}: ours {ours:e} truth {truth:e} err {err:e} tol {tol:e}",
                            tr.name
                        )
                    });
                }
            }
        }
    }
    // ... and vs torch's f32 tables, per position: 2 × torch's own distance from the primary
    // truth there (measured from the arrays: the manifest has no per-position cos list for the
    // f32freq truth) + 1e-6 + our derived allowance beyond the contract (0 when exact).
    if dt == Dt::F32 {
        let tr = &truths[0];
        let tc = pairs_of("cos");
        let ts = pairs_of("sin");
        let mut observed_max: f64 = 0.0;
        for (t, &p) in positions.iter().enumerate() {
            let range = t * n..(t + 1) * n;
            let obs = range
                .clone()
                .map(|j| (tc[j] - tr.cos[j]).abs().max((ts[j] - tr.sin[j]).abs()))
                .fold(0.0, f64::max);
            observed_max = observed_max.max(obs);
            let allow = range
                .clone()
                .map(|j| e_cs_of(tr, j) - TRIG_TOL * m_o.max(1.0))
                .fold(0.0, f64::max);
            let tol = 2.0 * obs + 1e-6 + allow;
            for j in range {
                for (what, ours, torch) in [("cos", cos[j], tc[j]), ("sin", sin[j], ts[j])] {
                    let err = (ours as f64 - torch).abs();
                    st.cos_sin_torch_err = st.cos_sin_torch_err.max(err);
                    st.cos_sin_torch_ratio = st.cos_sin_torch_ratio.max(err / tol);
                    f.check(err <= tol, || {
                        format!(
                            "{what} vs torch at token {t} (p={p}) pair {}: ours {ours:e} torch {torch:e} err {err:e} tol {tol:e}",
                            j - t * n
                        )
                    });
                }
            }
        }
        // The layout conversion agrees with the generator's own measurement.
        let key = format!("observed.torch_vs_{}.cos_max_abs", tr.name);
        if let Some(v) = case.opt(&key) {
            let v: f64 = v.parse().unwrap();
            assert!(
                (observed_max - v).abs() <= 1e-9 + 1e-6 * v,
                "{name}: {key} = {v:e}, measured from the arrays {observed_max:e}"
            );
        }
    }

    // 4./5. outputs, q and k.
    let tol_hint = case.f64("hint.tol_abs.out");
    let torch_pp = if dt == Dt::F32 {
        per_position(
            case,
            "observed.torch_vs_f64_f32freq.out_max_abs_per_position",
            s,
        )
    } else {
        None
    };
    for tensor in ["q", "k"] {
        let a_in = case.array(tensor);
        assert_eq!(a_in.dtype, case.get("dtype"));
        let [b1, heads, s1, d1] = a_in.shape[..] else {
            panic!("{name}: {tensor} shape {:?}", a_in.shape)
        };
        assert_eq!((b1, s1, d1), (1, s, d), "{name}: {tensor} shape");
        let (x, ours, in_bits, out_bits) = match dt {
            Dt::F32 => run::<f32>(rope, &a_in, heads, &positions, half_out),
            Dt::F16 => run::<f16>(rope, &a_in, heads, &positions, half_out),
            Dt::Bf16 => run::<bf16>(rope, &a_in, heads, &positions, half_out),
        };
        let torch_arr = case.array(&format!("{tensor}_out"));
        let torch = torch_arr.to_f64();
        let torch_bits: Vec<u32> = match dt {
            Dt::F32 => torch_arr.to_f32().iter().map(|v| v.to_bits()).collect(),
            _ => torch_arr.bits16().into_iter().map(u32::from).collect(),
        };
        for h in 0..heads {
            for t in 0..s {
                let base = (h * s + t) * d;
                let p = positions[t];
                // Pass-through tail: bit for bit the input.
                for c in r..d {
                    st.tail_checked += 1;
                    f.check(out_bits[base + c] == in_bits[base + c], || {
                        format!(
                            "{tensor} tail changed: head {h} token {t} dim {c}: in {:#x} out {:#x}",
                            in_bits[base + c],
                            out_bits[base + c]
                        )
                    });
                }
                let torch_tol = match &torch_pp {
                    Some(v) => 2.0 * v[t] + 1e-5,
                    None => tol_hint,
                };
                for i in 0..n {
                    let ((ia, ib), (oa, ob)) = pair_indices(&layout, r, i);
                    let (a, b) = (x[base + ia], x[base + ib]);
                    for (ti, tr) in truths.iter().enumerate() {
                        let j = t * n + i;
                        let (c, sn) = (tr.cos[j] / tr.m, tr.sin[j] / tr.m);
                        let m = m_o.max(tr.m);
                        let e_cs = e_cs_of(tr, j);
                        let ab = a.abs() + b.abs();
                        let truth_out = if tensor == "q" { &tr.q } else { &tr.k };
                        for (o, t1, t2) in [
                            (oa, (a * c).abs(), (b * sn).abs()),
                            (ob, (b * c).abs(), (a * sn).abs()),
                        ] {
                            let want = truth_out[base + o];
                            let got = ours[base + o];
                            let b32 = rotation_bound(t1, t2, ab, m, e_cs);
                            let tol = match dt {
                                Dt::F32 => b32,
                                _ => b32 + 0.5 * dt.ulp(want.abs() + b32),
                            };
                            let err = (got - want).abs();
                            if ti == 0 {
                                st.out_err = st.out_err.max(err);
                                st.out_ratio = st.out_ratio.max(err / tol);
                                if dt != Dt::F32 && tr.name == "f64_f32freq" {
                                    st.rotated += 1;
                                    st.round_exact += usize::from(got == dt.round(want));
                                }
                            } else {
                                st.out_f64_err = st.out_f64_err.max(err);
                                st.out_f64_ratio = st.out_f64_ratio.max(err / tol);
                            }
                            f.check(err <= tol, || {
                                format!(
                                    "{tensor} vs {} head {h} token {t} (p={p}) dim {o}: ours {got:e} truth {want:e} err {err:e} tol {tol:e} (a={a:e} b={b:e})",
                                    tr.name
                                )
                            });
                        }
                    }
                    for o in [oa, ob] {
                        let (got, want) = (ours[base + o], torch[base + o]);
                        let err = (got - want).abs();
                        st.out_torch_err = st.out_torch_err.max(err);
                        st.out_torch_ratio = st.out_torch_ratio.max(err / torch_tol);
                        st.torch_equal += usize::from(out_bits[base + o] == torch_bits[base + o]);
                        f.check(err <= torch_tol, || {
                            format!(
                                "{tensor} vs torch head {h} token {t} (p={p}) dim {o}: ours {got:e} torch {want:e} err {err:e} tol {torch_tol:e}"
                            )
                        });
                    }
                }
            }
        }
    }
    if st.rotated > 0 {
        // Round-once: all but a handful equal round_dtype(truth) (README: 4 of 35,744 overall,
        // from f32 intermediates just below a tie). 1 % catches a double rounding.
        let miss = st.rotated - st.round_exact;
        f.check(miss * 100 <= st.rotated, || {
            format!(
                "only {} of {} elements equal round_{}(truth)",
                st.round_exact, st.rotated, st.dtype
            )
        });
    }
    f.finish(st)
}

/// Loads `a` as `T`, runs [`apply_hf`], returns (input as f64, output as f64, input bits,
/// output bits), all in HF order.
fn run<T: Store>(
    rope: &Rope,
    a: &Array,
    heads: usize,
    positions: &[i32],
    half_out: bool,
) -> (Vec<f64>, Vec<f64>, Vec<u32>, Vec<u32>) {
    let x = T::load(a);
    let y = apply_hf(rope, &x, heads, positions, half_out);
    (
        x.iter().map(|v| v.to_f64()).collect(),
        y.iter().map(|v| v.to_f64()).collect(),
        x.iter().map(|v| v.bits()).collect(),
        y.iter().map(|v| v.bits()).collect(),
    )
}

/// The sinusoidal tolerance vs the f64 formula: the contract's 2.4e-7 for the f32 sin/cos,
/// plus 6e-8 for holding the result in f32 (a value near 1 is stored to 2^-24 = 6e-8
/// spacing, so even a perfect table is off by half of that; a full step leaves room for the
/// last polynomial operation rounding the other way). The angle slack, numpy's
/// `p / 10000^(2i/d)` vs posenc's `p · 10000^(−2i/d)` both in f64, is a few f64 ulps of the
/// angle: `4.4e-16 · |θ|` (4.4e-10 at θ = 1e6), added per position.
pub const SIN_TOL: f64 = TRIG_TOL + 6e-8;

/// What one sinusoidal case measured.
#[derive(Clone, Debug, Default)]
pub struct SinStats {
    pub case: String,
    /// Max |ours − pe_f64| (f32 output), and the max err / tol.
    pub err: f64,
    pub ratio: f64,
    /// classic: at the largest position, max |numpy pe_f32 − pe_f64| and max |ours − pe_f64|.
    pub numpy_err_at_max: f64,
    pub ours_err_at_max: f64,
    pub max_position: i32,
    /// Marian: max |ours − forward_f64| over the forward rows.
    pub forward_err: f64,
    /// Rows compared bitwise (f16/bf16 round-once, `fill` vs `fill_positions`).
    pub rows_bitwise: usize,
}

/// Checks one sinusoidal case; panics listing every failure.
pub fn check_sinusoidal_case(case: &Case, pe: &Sinusoidal) -> SinStats {
    try_check_sinusoidal_case(case, pe).unwrap_or_else(|e| panic!("{e}"))
}

/// Checks one `kind=sinusoidal` case of variant `classic_interleaved` or `split_marian`
/// against `pe` (built by the caller from `d_model`, `base` and the variant's layout):
///
/// * `fill_positions::<f32>` at `positions` vs `pe_f64`: `≤ SIN_TOL + 4.4e-16·|p|`;
/// * `fill_positions::<f16>` / `::<bf16>` are bitwise `round(f32 output)` (round once);
/// * `fill(out, first)` over each run of consecutive positions (the f64 recurrence, not
///   bitwise `fill_positions`) is within the same bound of `pe_f64` in f32, and its f16/bf16
///   tables are that f32 table rounded once;
/// * classic: numpy's f32 `pe_f32` is inaccurate at large p (angle rounded to f32): ours must
///   be within `SIN_TOL` of `pe_f64` where numpy is ≥ 1000× further off, at the largest p,
///   and within numpy's own per-row distance + `SIN_TOL` of `pe_f32` everywhere;
/// * Marian: `pe_f32` is `round_f32(pe_f64)`: ours within `SIN_TOL + 3e-8`; `forward_f64` /
///   `forward_f32` rows are positions `forward.cache_length ..`: `fill(out, cache_length)`
///   within the same bounds.
pub fn try_check_sinusoidal_case(case: &Case, pe: &Sinusoidal) -> Result<SinStats, String> {
    assert_eq!(case.get("kind"), "sinusoidal", "{}: kind", case.name);
    let name = case.name.as_str();
    let variant = case.get("variant");
    assert!(
        variant == "classic_interleaved" || variant == "split_marian",
        "{name}: variant {variant} is not implemented by posenc"
    );
    let d = case.usize("d_model");
    assert_eq!(pe.d_model(), d, "{name}: d_model");
    assert_eq!(case.usize("position_offset"), 0, "{name}: position_offset");
    let mut f = Failures::new(name);
    let mut st = SinStats {
        case: name.to_string(),
        ..SinStats::default()
    };
    let positions: Vec<i32> = case
        .array("positions")
        .to_i64()
        .into_iter()
        .map(|p| i32::try_from(p).expect("position fits i32"))
        .collect();
    let rows = positions.len();
    let truth = case.array("pe_f64");
    assert_eq!(truth.shape, [rows, d], "{name}: pe_f64 shape");
    let truth = truth.to_f64();

    let mut ours = vec![0f32; rows * d];
    pe.fill_positions(&mut ours, &positions)
        .expect("fill_positions");
    let tol_at = |p: i32| SIN_TOL + 4.4e-16 * (p as f64).abs();
    let row_err = |row: &[f32], want: &[f64]| -> f64 {
        row.iter()
            .zip(want)
            .map(|(&o, &w)| (o as f64 - w).abs())
            .fold(0.0, f64::max)
    };
    for (r, &p) in positions.iter().enumerate() {
        let tol = tol_at(p);
        for c in 0..d {
            let (o, w) = (ours[r * d + c] as f64, truth[r * d + c]);
            let err = (o - w).abs();
            st.err = st.err.max(err);
            st.ratio = st.ratio.max(err / tol);
            f.check(err <= tol, || {
                format!("pe_f64 row {r} (p={p}) col {c}: ours {o:e} truth {w:e} err {err:e}")
            });
        }
    }

    // Round once for f16/bf16; fill == fill_positions, for every storage type.
    st.rows_bitwise += check_16::<f16>(&mut f, pe, &positions, &ours, "f16", |v| {
        f16::from_f32(v).to_bits()
    });
    st.rows_bitwise += check_16::<bf16>(&mut f, pe, &positions, &ours, "bf16", |v| {
        bf16::from_f32(v).to_bits()
    });
    st.rows_bitwise += check_fill_runs(&mut f, pe, &positions, &truth, tol_at);

    let pe32 = case.array("pe_f32");
    assert_eq!(pe32.shape, [rows, d], "{name}: pe_f32 shape");
    let pe32 = pe32.to_f64();
    match variant {
        "classic_interleaved" => {
            let (rmax, &pmax) = positions
                .iter()
                .enumerate()
                .max_by_key(|&(_, p)| *p)
                .unwrap();
            st.max_position = pmax;
            for r in 0..rows {
                let want = &truth[r * d..][..d];
                let numpy = &pe32[r * d..][..d];
                let mine = &ours[r * d..][..d];
                let numpy_err = numpy
                    .iter()
                    .zip(want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                let vs_numpy = mine
                    .iter()
                    .zip(numpy)
                    .map(|(&a, &b)| (a as f64 - b).abs())
                    .fold(0.0, f64::max);
                f.check(vs_numpy <= numpy_err + tol_at(positions[r]), || {
                    format!("row {r}: |ours − numpy f32| {vs_numpy:e} > numpy's own error {numpy_err:e} + tol")
                });
                if r == rmax {
                    st.numpy_err_at_max = numpy_err;
                    st.ours_err_at_max = row_err(mine, want);
                }
            }
            f.check(st.ours_err_at_max * 1000.0 <= st.numpy_err_at_max, || {
                format!(
                    "at p={pmax}: ours {:e} from pe_f64, numpy f32 {:e}: not far closer",
                    st.ours_err_at_max, st.numpy_err_at_max
                )
            });
            // Our reading of the arrays agrees with the generator's measurement.
            if let Some(v) = case.opt("observed.f32_vs_f64.max_abs") {
                let v: f64 = v.parse().unwrap();
                let measured = pe32
                    .iter()
                    .zip(&truth)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                assert!(
                    (measured - v).abs() <= 1e-6 * v,
                    "{name}: observed max_abs {v:e}, measured {measured:e}"
                );
            }
        }
        "split_marian" => {
            for (r, &p) in positions.iter().enumerate() {
                let err = row_err(&ours[r * d..][..d], &pe32[r * d..][..d]);
                f.check(err <= tol_at(p) + 3e-8, || {
                    format!("pe_f32 row {r} (p={p}): err {err:e}")
                });
            }
            let c0 = u32::try_from(case.usize("forward.cache_length")).unwrap();
            let seq = case.usize("forward.seq_len");
            let fw64 = case.array("forward_f64");
            assert_eq!(fw64.shape, [seq, d], "{name}: forward_f64 shape");
            let fw64 = fw64.to_f64();
            let fw32 = case.array("forward_f32").to_f64();
            let mut fwd = vec![0f32; seq * d];
            pe.fill(&mut fwd, c0).expect("fill");
            let fw_pos: Vec<i32> = (0..seq as i32).map(|t| c0 as i32 + t).collect();
            let mut by_list = vec![0f32; seq * d];
            pe.fill_positions(&mut by_list, &fw_pos)
                .expect("fill_positions");
            for t in 0..seq {
                let p = fw_pos[t];
                let row = &fwd[t * d..][..d];
                let err = row_err(row, &fw64[t * d..][..d]);
                st.forward_err = st.forward_err.max(err);
                f.check(err <= tol_at(p), || {
                    format!("forward_f64 row {t} (p={p}): err {err:e}")
                });
                let err32 = row_err(row, &fw32[t * d..][..d]);
                f.check(err32 <= tol_at(p) + 3e-8, || {
                    format!("forward_f32 row {t} (p={p}): err {err32:e}")
                });
                // `fill` (recurrence) and `fill_positions` (direct) need not agree bitwise:
                // both within the bound of the f64 rows.
                let err_list = row_err(&by_list[t * d..][..d], &fw64[t * d..][..d]);
                f.check(err_list <= tol_at(p), || {
                    format!("forward row {t}: fill_positions err {err_list:e}")
                });
            }
        }
        _ => unreachable!(),
    }
    f.finish(st)
}

/// `fill_positions::<T>` is bitwise `round(f32 output)`; returns the rows compared.
fn check_16<T: Store>(
    f: &mut Failures,
    pe: &Sinusoidal,
    positions: &[i32],
    ours32: &[f32],
    what: &str,
    round_bits: impl Fn(f32) -> u16,
) -> usize {
    let d = pe.d_model();
    let mut out = vec![T::default(); positions.len() * d];
    pe.fill_positions(&mut out, positions)
        .expect("fill_positions");
    for (j, (&o, &v)) in out.iter().zip(ours32).enumerate() {
        let want = round_bits(v) as u32;
        f.check(o.bits() == want, || {
            format!(
                "{what} row {} (p={}) col {}: {:#06x}, round(f32 {v:e}) = {want:#06x}",
                j / d,
                positions[j / d],
                j % d,
                o.bits()
            )
        });
    }
    positions.len()
}

/// `fill(out, first)` over every maximal run of consecutive non-negative positions: f32
/// within `tol_at(p)` of `truth` (`fill` runs the f64 recurrence, so it is not bitwise
/// `fill_positions`), f16/bf16 bitwise the f32 run rounded once; returns the rows compared.
fn check_fill_runs(
    f: &mut Failures,
    pe: &Sinusoidal,
    positions: &[i32],
    truth: &[f64],
    tol_at: impl Fn(i32) -> f64,
) -> usize {
    let d = pe.d_model();
    let mut compared = 0;
    let mut start = 0;
    while start < positions.len() {
        let mut end = start + 1;
        while end < positions.len() && positions[end] == positions[end - 1] + 1 {
            end += 1;
        }
        if positions[start] >= 0 {
            let n = (end - start) * d;
            let first = positions[start] as u32;
            let (mut r32, mut r16, mut rb) =
                (vec![0f32; n], vec![f16::ZERO; n], vec![bf16::ZERO; n]);
            pe.fill(&mut r32, first).expect("fill");
            pe.fill(&mut r16, first).expect("fill");
            pe.fill(&mut rb, first).expect("fill");
            for (k, &v) in r32.iter().enumerate() {
                let (r, c) = (start + k / d, k % d);
                let (p, w) = (positions[r], truth[r * d + c]);
                let err = (v as f64 - w).abs();
                f.check(err <= tol_at(p), || {
                    format!(
                        "fill from {first} row {} (p={p}) col {c}: {v:e} truth {w:e} err {err:e}",
                        k / d
                    )
                });
                f.check(r16[k].to_bits() == f16::from_f32(v).to_bits(), || {
                    format!(
                        "F16: fill from {first} row {} col {c}: not round(f32 fill)",
                        k / d
                    )
                });
                f.check(rb[k].to_bits() == bf16::from_f32(v).to_bits(), || {
                    format!(
                        "Bf16: fill from {first} row {} col {c}: not round(f32 fill)",
                        k / d
                    )
                });
            }
            compared += end - start;
        }
        start = end;
    }
    compared
}
