//! Multi-axis RoPE against values derived here, independently, from REFERENCE.md "Multimodal":
//! Qwen2-VL blocked M-RoPE, Qwen3-VL interleaved M-RoPE and Qwen2-VL-ViT 2-D vision RoPE, on
//! every available backend in f32, f16 and bf16.
//!
//! The reference does not call posenc for anything but the buffer under test: per pair `j` it
//! picks the axis and the frequency index from the formulas (its own code, below), forms
//! `ω = 1 / f32(b^(f32(2i)/f32(d)))` the frameworks' way, the angle `pos · ω` exactly in f64,
//! and rotates in f64. Accepted error per output (DESIGN.md contract, with `u = 2^-24`):
//! `2.4e-7·(|a| + |b|)` for cos/sin, plus the rotation bound `2u·(|a·c| + |b·s|)`, plus half an
//! ulp of the storage type for f16/bf16 (one rounding on store).
//!
//! Cross-check of the Qwen3-VL axis pattern against HuggingFace's source text
//! (`transformers/models/qwen3_vl/modeling_qwen3_vl.py`, `Qwen3VLTextRotaryEmbedding`):
//! `apply_interleaved_mrope` starts from the `t` frequencies and overwrites
//! `freqs_t[..., slice(offset, mrope_section[dim] * 3, 3)]` with `h` (`offset = 1`) and `w`
//! (`offset = 2`); `emb = cat(freqs, freqs)` then feeds rotate_half. So pair `j` follows `h` iff
//! `j % 3 == 1 && j < 3·sec_h`, `w` iff `j % 3 == 2 && j < 3·sec_w`, else `t` — the rule below.
//! The vision rotary (`Qwen3VLVisionRotaryEmbedding(dim)`, same as Qwen2-VL's) builds
//! `inv_freq = 1/θ^(arange(0, dim, 2)/dim)` with `dim = head_dim/2` and concatenates the row and
//! column frequencies, then `cat(emb, emb)` for rotate_half: the `Vision2d` rule below.
//!
//! Run with `cargo test --test mrope -- --nocapture` for the measured error table.

use posenc::{
    Axes, Backend, Element, Error, Formula, Layout, Rope, RopeConfig, Rounding, Scaling, bf16, f16,
};

const U: f64 = 1.0 / 16_777_216.0; // 2^-24, the f32 unit roundoff
const TRIG: f64 = 2.4e-7; // contract: |cos' − cos|, |sin' − sin| ≤ 2.4e-7

// ---------------------------------------------------------------------------------------
// storage types, widened and narrowed through `half` (not through posenc)
// ---------------------------------------------------------------------------------------

trait Dt: Element + std::fmt::Debug {
    const NAME: &'static str;
    fn widen(self) -> f64;
    fn narrow(v: f32) -> Self;
    fn bits(self) -> u32;
    /// Half an ulp of the storage type at magnitude `x` (0 for f32: no extra rounding).
    fn half_ulp(x: f64) -> f64;
}

/// Half an ulp at `|x|` of a binary format with `p` significand bits (incl. the implicit one)
/// and smallest normal exponent `emin`.
fn half_ulp_fmt(x: f64, p: i32, emin: i32) -> f64 {
    let x = x.abs();
    let e = if x == 0.0 {
        emin
    } else {
        (x.log2().floor() as i32).max(emin)
    };
    // ulp in [2^e, 2^(e+1)) is 2^(e+1-p); half of it. Callers pass an upper bound of the
    // magnitude of the value being rounded, so its binade's half ulp bounds the rounding.
    2f64.powi(e - p)
}

impl Dt for f32 {
    const NAME: &'static str = "f32";
    fn widen(self) -> f64 {
        self as f64
    }
    fn narrow(v: f32) -> Self {
        v
    }
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn half_ulp(_: f64) -> f64 {
        0.0
    }
}
impl Dt for f16 {
    const NAME: &'static str = "f16";
    fn widen(self) -> f64 {
        self.to_f64()
    }
    fn narrow(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn half_ulp(x: f64) -> f64 {
        half_ulp_fmt(x, 11, -14)
    }
}
impl Dt for bf16 {
    const NAME: &'static str = "bf16";
    fn widen(self) -> f64 {
        self.to_f64()
    }
    fn narrow(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn half_ulp(x: f64) -> f64 {
        half_ulp_fmt(x, 8, -126)
    }
}

/// Deterministic inputs in [-2, 2) (xorshift), rounded to the storage type.
fn inputs<T: Dt>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0;
            T::narrow(v)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// the independent reference
// ---------------------------------------------------------------------------------------

/// `ω_i = 1 / f32(b^(f32(2i)/f32(d)))`, the frameworks' f32 order (REFERENCE.md).
fn omega(base: f32, i: usize, d: usize) -> f32 {
    let e = (2 * i) as f32 / d as f32;
    let q = (base as f64).powf(e as f64) as f32;
    1.0 / q
}

#[derive(Clone, Copy, Debug)]
enum Scheme {
    /// Qwen2-VL: pairs `[0, s0)` follow t, `[s0, s0+s1)` h, the rest w; global index.
    Blocked([usize; 3]),
    /// Qwen3-VL: h iff `j%3==1 && j<3·s1`, w iff `j%3==2 && j<3·s2`, else t; global index.
    Interleaved([usize; 3]),
    /// 2-D vision: first half of the pairs row, second half column, index reset per half,
    /// exponent over `d = rotary_dim / 2`.
    Vision,
}

impl Scheme {
    fn axes(self) -> Axes {
        match self {
            Scheme::Blocked(sections) => Axes::MRope { sections },
            Scheme::Interleaved(sections) => Axes::MRopeInterleaved { sections },
            Scheme::Vision => Axes::Vision2d,
        }
    }

    /// `(axis, frequency index, exponent denominator)` of pair `j` of `rotary_dim / 2`.
    fn pair(self, j: usize, rotary_dim: usize) -> (usize, usize, usize) {
        match self {
            Scheme::Blocked(s) => {
                let axis = if j < s[0] {
                    0
                } else if j < s[0] + s[1] {
                    1
                } else {
                    2
                };
                (axis, j, rotary_dim)
            }
            Scheme::Interleaved(s) => {
                let axis = if j % 3 == 1 && j < 3 * s[1] {
                    1
                } else if j % 3 == 2 && j < 3 * s[2] {
                    2
                } else {
                    0
                };
                (axis, j, rotary_dim)
            }
            Scheme::Vision => {
                let quarter = rotary_dim / 4;
                if j < quarter {
                    (0, j, rotary_dim / 2)
                } else {
                    (1, j - quarter, rotary_dim / 2)
                }
            }
        }
    }
}

/// Exact (f64) rotation of one head, rotate_half pairing, and the contract's tolerance per
/// output (without the storage rounding).
fn reference(
    scheme: Scheme,
    base: f32,
    rotary_dim: usize,
    pos: &[i32],
    head: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let half = rotary_dim / 2;
    let mut out = head.to_vec();
    let mut tol = vec![0.0; head.len()];
    for j in 0..half {
        let (axis, idx, d) = scheme.pair(j, rotary_dim);
        let w = omega(base, idx, d) as f64;
        let theta = pos[axis] as f64 * w; // exact: 24-bit ω times |p| < 2^29
        let (s, c) = theta.sin_cos();
        let (a, b) = (head[j], head[j + half]);
        out[j] = a * c - b * s;
        out[j + half] = b * c + a * s;
        let trig = TRIG * (a.abs() + b.abs());
        let (ca, sa) = (c.abs() + TRIG, s.abs() + TRIG);
        tol[j] = trig + 2.0 * U * (a.abs() * ca + b.abs() * sa);
        tol[j + half] = trig + 2.0 * U * (b.abs() * ca + a.abs() * sa);
    }
    (out, tol)
}

// ---------------------------------------------------------------------------------------
// the check
// ---------------------------------------------------------------------------------------

struct Case {
    name: &'static str,
    scheme: Scheme,
    head_dim: usize,
    base: f32,
}

const QWEN2_VL: Case = Case {
    name: "Qwen2-VL M-RoPE [16,24,24] d128 θ1e6",
    scheme: Scheme::Blocked([16, 24, 24]),
    head_dim: 128,
    base: 1e6,
};
const QWEN3_VL: Case = Case {
    name: "Qwen3-VL interleaved [24,20,20] d128 θ5e6",
    scheme: Scheme::Interleaved([24, 20, 20]),
    head_dim: 128,
    base: 5e6,
};
const VISION: Case = Case {
    name: "Qwen2-VL ViT 2-D d80 θ1e4",
    scheme: Scheme::Vision,
    head_dim: 80,
    base: 10_000.0,
};

/// Widths no model ships, chosen so the pair count (34, 18) is a multiple of no tier's lane
/// count: the last vector of every head is a tail, where the axis of lanes past the last pair
/// must not be read.
const TAIL_MROPE: Case = Case {
    name: "M-RoPE [10,12,12] d68 θ1e4 (vector tails)",
    scheme: Scheme::Blocked([10, 12, 12]),
    head_dim: 68,
    base: 1e4,
};
/// The widest head posenc takes (256 pairs): every pair has its own axis entry.
const WIDEST_MROPE: Case = Case {
    name: "M-RoPE [64,96,96] d512 θ1e6 (widest head)",
    scheme: Scheme::Blocked([64, 96, 96]),
    head_dim: 512,
    base: 1e6,
};
const TAIL_VISION: Case = Case {
    name: "2-D d36 θ1e4 (vector tails)",
    scheme: Scheme::Vision,
    head_dim: 36,
    base: 1e4,
};

impl Case {
    fn rope(&self) -> Rope {
        let cfg =
            RopeConfig::new(self.head_dim, self.base, Layout::RotateHalf).axes(self.scheme.axes());
        Rope::new(&cfg).unwrap_or_else(|e| panic!("{}: Rope::new: {e}", self.name))
    }
}

/// Positions per token: distinct axes, large values, negatives, and text tokens.
fn positions<const A: usize>() -> Vec<[i32; A]> {
    let rows: [[i32; 3]; 9] = [
        [0, 0, 0],
        [5, 3, 7],
        [151, 160, 172],
        [4096, 17, 33],
        [131_071, 131_000, 130_500],
        [1_000_000, 999, 12_345],
        [-7, 2, -3],
        [2_500_000, 2_400_000, 2_600_001],
        [42, 42, 42],
    ];
    rows.iter()
        .map(|r| core::array::from_fn(|i| r[i]))
        .collect()
}

/// Largest (|error|, |error| / tolerance) over one case × backend × dtype.
fn check_case<T: Dt, const A: usize>(case: &Case, backend: Backend) -> (f64, f64) {
    let rope = case.rope().with_backend(backend).unwrap();
    let (hd, rd) = (case.head_dim, case.head_dim);
    let n_heads = 3;
    let pos = positions::<A>();
    let x0: Vec<T> = inputs(pos.len() * n_heads * hd, 0x5EED ^ hd as u64);
    let mut x = x0.clone();
    rope.apply_axes(&mut x, n_heads, &pos).unwrap();
    let (mut max_err, mut max_ratio) = (0.0f64, 0.0f64);
    for (t, p) in pos.iter().enumerate() {
        for h in 0..n_heads {
            let off = (t * n_heads + h) * hd;
            let head: Vec<f64> = x0[off..off + hd].iter().map(|v| v.widen()).collect();
            let (want, tol) = reference(case.scheme, case.base, rd, p, &head);
            for i in 0..hd {
                let got = x[off + i].widen();
                let err = (got - want[i]).abs();
                let limit = tol[i] + T::half_ulp(want[i].abs() + tol[i]);
                max_err = max_err.max(err);
                if limit > 0.0 {
                    max_ratio = max_ratio.max(err / limit);
                }
                assert!(
                    err <= limit,
                    "{} {} {}: token {t} {p:?} head {h} channel {i}: got {got:e}, want {:e}, \
                     |err| {err:e} > {limit:e}",
                    case.name,
                    backend.name(),
                    T::NAME,
                    want[i]
                );
            }
        }
    }
    (max_err, max_ratio)
}

fn run_all<const A: usize>(case: &Case) {
    for b in Backend::available() {
        let r32 = check_case::<f32, A>(case, b);
        let r16 = check_case::<f16, A>(case, b);
        let rbf = check_case::<bf16, A>(case, b);
        println!(
            "{:<42} {:<9} max |err| (err/tol): f32 {:.2e} ({:.3})  f16 {:.2e} ({:.3})  \
             bf16 {:.2e} ({:.3})",
            case.name,
            b.name(),
            r32.0,
            r32.1,
            r16.0,
            r16.1,
            rbf.0,
            rbf.1
        );
    }
}

#[test]
fn qwen2_vl_blocked_mrope_matches_the_formula() {
    run_all::<3>(&QWEN2_VL);
}

#[test]
fn qwen3_vl_interleaved_mrope_matches_the_formula() {
    run_all::<3>(&QWEN3_VL);
}

#[test]
fn qwen2_vl_vit_2d_rope_matches_the_formula() {
    run_all::<2>(&VISION);
}

#[test]
fn widths_with_vector_tails_match_the_formula() {
    run_all::<3>(&TAIL_MROPE);
    run_all::<2>(&TAIL_VISION);
}

#[test]
fn the_widest_head_matches_the_formula() {
    run_all::<3>(&WIDEST_MROPE);
}

/// The axis pattern itself, spelled out for the real configs (a second, literal statement of
/// the rule, independent of `Scheme::pair`'s arithmetic).
#[test]
fn axis_patterns_are_the_published_ones() {
    let axis = |s: Scheme, j| s.pair(j, 128).0;
    // Qwen3-VL: THW THW ... up to j = 59 (3·20 = 60), then t for j = 60..63.
    let s = Scheme::Interleaved([24, 20, 20]);
    let pattern: String = (0..64).map(|j| ['t', 'h', 'w'][axis(s, j)]).collect();
    assert_eq!(pattern, format!("{}tttt", "thw".repeat(20)));
    // Qwen2-VL: 16 t, 24 h, 24 w.
    let s = Scheme::Blocked([16, 24, 24]);
    let pattern: String = (0..64).map(|j| ['t', 'h', 'w'][axis(s, j)]).collect();
    assert_eq!(
        pattern,
        format!("{}{}{}", "t".repeat(16), "h".repeat(24), "w".repeat(24))
    );
    // Vision d80: pairs 0..19 rows with ω index 0..19, 20..39 columns with ω index 0..19.
    for j in 0..40 {
        assert_eq!(
            Scheme::Vision.pair(j, 80),
            (j / 20, j % 20, 40),
            "vision pair {j}"
        );
    }
    // The rope reports the axes it was built with.
    assert_eq!(
        QWEN2_VL.rope().axes(),
        Axes::MRope {
            sections: [16, 24, 24]
        }
    );
    assert_eq!(VISION.rope().axes(), Axes::Vision2d);
    // And the frequencies posenc uses: M-RoPE keeps the plain ones, Vision2d resets per half.
    let plain = Rope::new(&RopeConfig::new(128, 1e6, Layout::RotateHalf)).unwrap();
    assert_eq!(QWEN2_VL.rope().inv_freq(), plain.inv_freq());
    let vis = VISION.rope();
    for j in 0..40 {
        assert_eq!(vis.inv_freq()[j], omega(1e4, j % 20, 40), "vision ω_{j}");
    }
}

// ---------------------------------------------------------------------------------------
// text tokens are plain RoPE, bit for bit
// ---------------------------------------------------------------------------------------

fn text_tokens_bitwise<T: Dt, const A: usize>(case: &Case) {
    let ps = [0, 1, 7, 4096, 131_071, 1_000_000, -5, 2_500_000];
    let rope = case.rope();
    // The same frequencies as a single-axis rope (M-RoPE keeps them; Vision2d's are taken
    // from the multi-axis rope itself).
    let single = Rope::from_inv_freq(case.head_dim, Layout::RotateHalf, rope.inv_freq(), 1.0)
        .expect("single-axis rope");
    for b in Backend::available() {
        let rope = rope.with_backend(b).unwrap();
        let single = single.with_backend(b).unwrap();
        let n_heads = 2;
        let x0: Vec<T> = inputs(ps.len() * n_heads * case.head_dim, 77);
        let axes: Vec<[i32; A]> = ps.iter().map(|&p| [p; A]).collect();
        let (mut a, mut p1, mut p2) = (x0.clone(), x0.clone(), x0.clone());
        rope.apply_axes(&mut a, n_heads, &axes).unwrap();
        rope.apply(&mut p1, n_heads, &ps).unwrap();
        single.apply(&mut p2, n_heads, &ps).unwrap();
        for i in 0..a.len() {
            assert_eq!(
                a[i].bits(),
                p1[i].bits(),
                "{} {} {}: apply_axes([p; {A}]) != apply(p) at element {i}",
                case.name,
                b.name(),
                T::NAME
            );
            assert_eq!(
                a[i].bits(),
                p2[i].bits(),
                "{} {} {}: apply_axes([p; {A}]) != single-axis apply(p) at element {i}",
                case.name,
                b.name(),
                T::NAME
            );
        }
    }
}

#[test]
fn text_tokens_are_plain_rope_bitwise() {
    for case in [&QWEN2_VL, &QWEN3_VL] {
        text_tokens_bitwise::<f32, 3>(case);
        text_tokens_bitwise::<f16, 3>(case);
        text_tokens_bitwise::<bf16, 3>(case);
    }
    text_tokens_bitwise::<f32, 2>(&VISION);
    text_tokens_bitwise::<f16, 2>(&VISION);
    text_tokens_bitwise::<bf16, 2>(&VISION);
}

// ---------------------------------------------------------------------------------------
// K-shift: a plain rotation by Δ on every axis
// ---------------------------------------------------------------------------------------

/// `E(a, b)`: the contract's error of one rotated output of the pair `(a, b)` (cos/sin error
/// plus rotation bound, with `|c|, |s| ≤ 1`).
fn pair_bound(a: f64, b: f64) -> f64 {
    (TRIG + 2.0 * U * (1.0 + TRIG)) * (a.abs() + b.abs())
}

fn kshift<T: Dt, const A: usize>(case: &Case) -> f64 {
    let hd = case.head_dim;
    let half = hd / 2;
    let n_heads = 2;
    let pos: Vec<[i32; A]> = positions::<A>();
    let deltas: Vec<i32> = [-3, 17, -100, 5000, -65_536, 1, 0, -2_500_000, 1_000_000]
        .into_iter()
        .take(pos.len())
        .collect();
    let shifted: Vec<[i32; A]> = pos
        .iter()
        .zip(&deltas)
        .map(|(p, &d)| core::array::from_fn(|i| p[i] + d))
        .collect();
    let mut worst = 0.0f64;
    for b in Backend::available() {
        let rope = case.rope().with_backend(b).unwrap();
        let x0: Vec<T> = inputs(pos.len() * n_heads * hd, 99);
        let mut y = x0.clone();
        rope.apply_axes(&mut y, n_heads, &pos).unwrap();
        let y_rot = y.clone(); // keys as cached at p
        rope.shift(&mut y, n_heads, &deltas).unwrap();
        let mut z = x0.clone();
        rope.apply_axes(&mut z, n_heads, &shifted).unwrap();
        for r in 0..pos.len() * n_heads {
            let o = r * hd;
            for j in 0..half {
                let (a, bb) = (x0[o + j].widen(), x0[o + j + half].widen());
                let (ya, yb) = (y_rot[o + j].widen(), y_rot[o + j + half].widen());
                // apply(p)'s error E per output, carried through the shift (a rotation mixes
                // the pair: ≤ 2E per output), the shift's own error on (ya, yb), apply(p + d)'s
                // error E, and the storage roundings (at y, carried through the rotation as
                // their sum, and at both final outputs).
                let e = pair_bound(a, bb);
                let round_y = T::half_ulp(ya) + T::half_ulp(yb);
                for i in [o + j, o + j + half] {
                    let (u, v) = (y[i].widen(), z[i].widen());
                    let tol = 3.0 * e
                        + pair_bound(ya, yb)
                        + round_y
                        + T::half_ulp(u.abs().max(v.abs()))
                        + T::half_ulp(u.abs().max(v.abs()));
                    let err = (u - v).abs();
                    if tol > 0.0 {
                        worst = worst.max(err / tol);
                    }
                    assert!(
                        err <= tol,
                        "{} {} {}: shift(apply_axes(x, p), d) vs apply_axes(x, p + d): row {r} \
                         channel {}: {u:e} vs {v:e}, |diff| {err:e} > {tol:e}",
                        case.name,
                        b.name(),
                        T::NAME,
                        i - o
                    );
                }
            }
        }
    }
    worst
}

#[test]
fn kshift_of_multi_axis_keys_is_a_plain_rotation() {
    for case in [&QWEN2_VL, &QWEN3_VL] {
        let r = [
            kshift::<f32, 3>(case),
            kshift::<f16, 3>(case),
            kshift::<bf16, 3>(case),
        ];
        println!(
            "{:<42} K-shift max diff/tol f32/f16/bf16: {r:.3?}",
            case.name
        );
    }
    let r = [
        kshift::<f32, 2>(&VISION),
        kshift::<f16, 2>(&VISION),
        kshift::<bf16, 2>(&VISION),
    ];
    println!(
        "{:<42} K-shift max diff/tol f32/f16/bf16: {r:.3?}",
        VISION.name
    );
}

// ---------------------------------------------------------------------------------------
// errors: exact variants, buffers untouched
// ---------------------------------------------------------------------------------------

#[test]
fn sections_must_sum_to_half_the_rotary_dim() {
    let cfg = |s: [usize; 3], interleaved: bool| {
        let axes = if interleaved {
            Axes::MRopeInterleaved { sections: s }
        } else {
            Axes::MRope { sections: s }
        };
        RopeConfig::new(128, 1e6, Layout::RotateHalf).axes(axes)
    };
    for interleaved in [false, true] {
        for (s, actual) in [
            ([16, 24, 23], 63),
            ([16, 24, 25], 65),
            ([0, 0, 0], 0),
            ([64, 1, 0], 65),
            ([usize::MAX, 1, 0], usize::MAX), // overflow reported as usize::MAX
        ] {
            assert_eq!(
                Rope::new(&cfg(s, interleaved)),
                Err(Error::LengthMismatch {
                    what: "sections",
                    expected: 64,
                    actual,
                    formula: Formula {
                        names: &"rotary_dim/2",
                        values: [64, 0, 0]
                    }
                }),
                "sections {s:?} interleaved {interleaved}"
            );
        }
        assert!(Rope::new(&cfg([64, 0, 0], interleaved)).is_ok());
    }
    // Against a partial rotary dim: sections count pairs of rotary_dim, not head_dim.
    let partial = RopeConfig::new(128, 1e6, Layout::RotateHalf)
        .rotary_dim(64)
        .axes(Axes::MRope {
            sections: [16, 24, 24],
        });
    assert_eq!(
        Rope::new(&partial),
        Err(Error::LengthMismatch {
            what: "sections",
            expected: 32,
            actual: 64,
            formula: Formula {
                names: &"rotary_dim/2",
                values: [32, 0, 0]
            }
        })
    );
}

#[test]
fn vision2d_refuses_odd_pair_counts_and_scaling() {
    for rd in [2usize, 6, 10, 78] {
        let cfg = RopeConfig::new(80, 1e4, Layout::RotateHalf)
            .rotary_dim(rd)
            .axes(Axes::Vision2d);
        assert_eq!(
            Rope::new(&cfg),
            Err(Error::ParameterOutOfRange {
                what: "rotary_dim",
                constraint: "must be a multiple of 4 for 2-D vision RoPE",
                value: rd as f32,
            }),
            "rotary_dim {rd}"
        );
    }
    assert!(Rope::new(&RopeConfig::new(80, 1e4, Layout::RotateHalf).axes(Axes::Vision2d)).is_ok());
    for scaling in [
        Scaling::Linear { factor: 2.0 },
        Scaling::Ntk { factor: 2.0 },
        Scaling::Yarn(posenc::Yarn::new(4.0, 4096)),
    ] {
        let cfg = RopeConfig::new(80, 1e4, Layout::RotateHalf)
            .axes(Axes::Vision2d)
            .scaling(scaling);
        assert_eq!(
            Rope::new(&cfg),
            Err(Error::ParameterOutOfRange {
                what: "scaling",
                constraint: "must be None for 2-D vision RoPE",
                value: 0.0,
            }),
            "{scaling:?}"
        );
    }
}

/// A recognisable pattern, NaN payloads included, compared bit for bit after a refused call.
fn pattern(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| match i % 4 {
            0 => f32::from_bits(0x7FC0_1234 + i as u32),
            1 => -(i as f32),
            2 => f32::from_bits(1 + i as u32), // subnormal
            _ => 0.5 + i as f32,
        })
        .collect()
}

fn untouched<T: Dt>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.bits() == y.bits())
}

#[test]
fn apply_axes_with_the_wrong_shape_leaves_buffers_untouched() {
    let mrope = QWEN2_VL.rope();
    let vision = VISION.rope();
    let single = Rope::new(&RopeConfig::new(128, 1e6, Layout::RotateHalf)).unwrap();
    for b in Backend::available() {
        let (mrope, vision, single) = (
            mrope.with_backend(b).unwrap(),
            vision.with_backend(b).unwrap(),
            single.with_backend(b).unwrap(),
        );
        let axes_err = |expected, actual| Error::LengthMismatch {
            what: "positions axes",
            expected,
            actual,
            formula: Formula {
                names: &"axes().count()",
                values: [expected, 0, 0],
            },
        };
        // Wrong number of axes.
        let x0 = pattern(2 * 4 * 128);
        let mut x = x0.clone();
        assert_eq!(
            mrope.apply_axes(&mut x, 4, &[[1, 2], [3, 4]]),
            Err(axes_err(3, 2))
        );
        assert!(untouched(&x, &x0));
        assert_eq!(
            mrope.apply_axes(&mut x, 4, &[[1], [3]]),
            Err(axes_err(3, 1))
        );
        assert!(untouched(&x, &x0));
        assert_eq!(
            mrope.apply_axes(&mut x, 4, &[[1, 2, 3, 4], [3, 4, 5, 6]]),
            Err(axes_err(3, 4))
        );
        assert!(untouched(&x, &x0));
        assert_eq!(
            single.apply_axes(&mut x, 4, &[[1, 2], [3, 4]]),
            Err(axes_err(1, 2))
        );
        assert!(untouched(&x, &x0));
        let v0 = pattern(2 * 4 * 80);
        let mut v = v0.clone();
        assert_eq!(
            vision.apply_axes(&mut v, 4, &[[1, 2, 3], [3, 4, 5]]),
            Err(axes_err(2, 3))
        );
        assert!(untouched(&v, &v0));
        // Right axes, wrong token count / heads: the usual errors, still nothing written.
        assert_eq!(
            mrope.apply_axes(&mut x, 4, &[[1, 2, 3]]),
            Err(Error::LengthMismatch {
                what: "x",
                expected: 4 * 128,
                actual: 2 * 4 * 128,
                formula: Formula {
                    names: &"tokens × heads × head_dim",
                    values: [1, 4, 128]
                }
            })
        );
        assert!(untouched(&x, &x0));
        assert_eq!(
            mrope.apply_axes(&mut x, 0, &[[1, 2, 3], [4, 5, 6]]),
            Err(Error::ZeroHeads)
        );
        assert!(untouched(&x, &x0));
        // 16-bit buffers too.
        let h0: Vec<bf16> = x0.iter().map(|&v| bf16::from_f32(v)).collect();
        let mut h = h0.clone();
        assert_eq!(
            mrope.apply_axes(&mut h, 4, &[[1, 2], [3, 4]]),
            Err(axes_err(3, 2))
        );
        assert!(untouched(&h, &h0));
        // A valid call on the same buffer does write (the checks above are not vacuous).
        mrope
            .apply_axes(&mut x, 4, &[[1, 2, 3], [4, 5, 6]])
            .unwrap();
        assert!(!untouched(&x, &x0));
    }
}

/// Text tokens of an M-RoPE model (every axis at `p`) rotate bitwise as `apply` at `p`, under
/// every rounding mode (the HF modes form HF's f32 product `f32(p)·ω` on the axes path too)
/// and on every backend.
#[test]
fn equal_axes_are_apply_under_every_rounding_mode() {
    let pos: Vec<i32> = vec![0, 1, 7, 4093, 100_000, -13_725, 1 << 20];
    let axes: Vec<[i32; 3]> = pos.iter().map(|&p| [p; 3]).collect();
    let x: Vec<f32> = (0..pos.len() * 2 * 128)
        .map(|i| 100.0 + 1.37 * (i % 97) as f32)
        .collect();
    for b in Backend::ALL.iter().copied().filter(|b| b.is_available()) {
        for rounding in [Rounding::Once, Rounding::HfEager, Rounding::HfUpcast] {
            let rope = QWEN2_VL
                .rope()
                .with_backend(b)
                .unwrap()
                .with_rounding(rounding);
            let (mut a, mut p) = (x.clone(), x.clone());
            rope.apply_axes(&mut a, 2, &axes).unwrap();
            rope.apply(&mut p, 2, &pos).unwrap();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&p), "{b:?} {rounding:?}");
        }
    }
}

/// The cos/sin of image tokens near the start of a prompt, whose low frequencies' angles are
/// small enough that the vector tiers skip their range reduction (each pair at its own axis's
/// position), are the reference tier's bit for bit on every backend: blocked and interleaved
/// sections, under every rounding mode (the HF modes form the f32 product), in calls whose
/// largest position leaves many small blocks and in a call that leaves few.
#[test]
fn small_angles_of_image_tokens_are_the_reference_bitwise() {
    // A 6 × 10 patch image at t = 2 after two text tokens, then text again.
    let mut image: Vec<[i32; 3]> = vec![[0; 3], [1; 3]];
    for h in 0..6 {
        for w in 0..10 {
            image.push([2, 2 + h, 2 + w]);
        }
    }
    image.push([12; 3]);
    let mut far = image.clone();
    far.push([900, 905, 911]);
    for axes in [
        Axes::MRope {
            sections: [16, 24, 24],
        },
        Axes::MRopeInterleaved {
            sections: [24, 20, 20],
        },
    ] {
        for rounding in [Rounding::Once, Rounding::HfEager, Rounding::HfUpcast] {
            let rope = Rope::new(&RopeConfig::new(128, 1e6, Layout::RotateHalf).axes(axes))
                .unwrap()
                .with_rounding(rounding);
            for pos in [&image, &far] {
                let table = |b: Backend| {
                    let rope = rope.with_backend(b).unwrap();
                    let mut buf = vec![f32::NAN; rope.table_len(pos.len())];
                    rope.table_axes(pos, &mut buf).unwrap();
                    buf.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                };
                let want = table(Backend::Scalar);
                for b in Backend::available() {
                    assert!(table(b) == want, "{b:?} {axes:?} {rounding:?}");
                }
            }
        }
    }
}
