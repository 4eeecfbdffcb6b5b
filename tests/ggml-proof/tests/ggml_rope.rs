//! posenc's GGUF loader against ggml itself.
//!
//! Each case is GGUF metadata (llama.cpp's keys) for one architecture and scaling, plus the
//! arguments llama.cpp passes to `ggml_rope_ext` / `ggml_rope_multi` for that metadata. posenc
//! builds its `Rope` with `posenc::load::rope_from_gguf` and rotates the same input; the test
//! asserts, element by element, `|posenc − ggml| ≤ bound`, where the bound is the error ggml's
//! own f32 angle computation allows (derived in `bound` below), and that dimensions outside
//! the rotary part are copied bitwise by both.
//!
//! Run: `cd tests/ggml-proof && cargo test -- --nocapture` (prints the measured maximum error
//! and the largest error/bound ratio per case).

use posenc::load::{GgufArray, GgufValue, rope_from_gguf};
use posenc_ggml_proof::{
    GGML_SOURCE, MODE_IMROPE, MODE_MROPE, MODE_NEOX, MODE_NORMAL, Pos, RopeArgs, ggml_rope,
};

/// f32 unit roundoff.
const U: f64 = 1.0 / (1u64 << 24) as f64;

/// Positions below 8,192: the ends, powers of two around the middle, and a spread between.
const POSITIONS: [i32; 16] = [
    0, 1, 2, 3, 17, 100, 511, 1000, 2047, 3001, 4095, 4096, 5555, 7000, 8190, 8191,
];

fn xorshift(state: &mut u64) -> f32 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    // Uniform in [-1, 1).
    ((*state >> 40) as f32 / (1u64 << 23) as f32) - 1.0
}

fn input(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..len).map(|_| xorshift(&mut s)).collect()
}

/// The magnitude llama.cpp passes to the rope op, transcribed from `llama_context`'s
/// constructor (`src/llama-context.cpp` of the vendored llama.cpp, the `yarn_attn_factor`
/// block): `get_mscale(s)` (or DeepSeek-2's ratio when `rope.scaling.yarn_log_multiplier` is
/// set), divided by `1 + 0.1·ln s` because ggml multiplies that back in, times
/// `rope.scaling.attn_factor`.
fn llama_cpp_attn_factor(
    arch: &str,
    freq_scale: f32,
    ext_factor: f32,
    yarn_log_mul: f32,
    rope_attn_factor: f32,
) -> f32 {
    let get_mscale = |scale: f32, mscale: f32| {
        if scale <= 1.0 {
            1.0
        } else {
            0.1 * mscale * scale.ln() + 1.0
        }
    };
    let mut attn = 1.0f32;
    if ext_factor != 0.0 {
        let factor = 1.0 / freq_scale;
        if yarn_log_mul != 0.0 {
            let mscale_all_dims = yarn_log_mul;
            let mscale = if arch == "deepseek2" && mscale_all_dims != 1.0 {
                mscale_all_dims
            } else {
                1.0
            };
            attn = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dims);
        } else {
            attn = get_mscale(factor, 1.0);
        }
        attn *= 1.0 / (1.0 + 0.1 * factor.ln());
    }
    attn * rope_attn_factor
}

struct Case {
    name: &'static str,
    arch: &'static str,
    /// `(key suffix after "{arch}.", value)`.
    meta: Vec<(&'static str, GgufValue<'static>)>,
    /// Elements per head as ggml sees the tensor (`ne0`).
    head_dim: usize,
    n_heads: usize,
    args: RopeArgs<'static>,
    /// `[t, h, w]` per token for M-RoPE cases.
    axes: Option<Vec<[i32; 3]>>,
}

/// The bound on `|posenc − ggml|` for one element of a rotated pair `(a, b)` at pair index
/// `j` (ggml's `i0/2`), unscaled angle `θₑ = |p|·base^(−2j/n)/ffⱼ` (computed by the caller in
/// f64), magnitude `m`.
///
/// ggml forms the angle in f32 as `θ = mix(fs·θₑ, θₑ)` with `θₑ = (p·sʲ)/ffⱼ`, where
/// `s = powf(base, −2/n_dims)` and `p·sʲ` is a running product (`theta *= theta_scale`, one
/// rounding per step). With u = 2⁻²⁴: `s` carries ≤ 3u relative error (powf ≤ 1 ulp = 2u, the
/// rounded exponent ≤ u·|ln s| < u), each of the j products adds u, so `p·sʲ` is within
/// `4j·u` (relative, first order) of the exact `p·base^(−2j/n)`; the division by ffⱼ, the
/// product with fs and the YaRN mix (two products, one sum) add ≤ 5u·θₑ. posenc's angle is
/// `p·ω` exact with `ω` its f32 frequency: framework `1/f32(base^(2j/n))` (2 roundings), then
/// the same division, product and mix on `ω` (5 roundings): ≤ 7u·θₑ. Hence
/// `|Δθ| ≤ θₑ·(4j + 12)·u` with `θₑ ≤ p·base^(−2j/n)/ffⱼ` (the interpolated angle is smaller
/// since fs ≤ 1). A rotation is 1-Lipschitz in the angle, so the rotated pair moves by at most
/// `m·‖(a, b)‖·|Δθ|` (m the magnitude). On top come the roundings of the outputs: ggml's cosf
/// and sinf (≤ 1 ulp each), its magnitude product and `a·c − b·s` (≤ 3 roundings), posenc's
/// single rounding of its f32 result, and the f32 magnitude itself (≤ 2u): ≤ 8u·m·(|a| + |b|).
fn bound(a: f32, b: f32, j: usize, theta_e: f64, m: f64) -> f64 {
    let (a, b) = (a as f64, b as f64);
    let dtheta = theta_e * (4.0 * j as f64 + 12.0) * U;
    m * (a.hypot(b) * dtheta + 8.0 * U * (a.abs() + b.abs()))
}

#[derive(Default)]
struct Stats {
    max_err: f64,
    max_ratio: f64,
    max_bound: f64,
    checked: usize,
    /// Single-position cases: each side against the exact rotation (f64) by posenc's own f32
    /// frequencies, to show whose error the difference is.
    posenc_vs_exact: Option<f64>,
    ggml_vs_exact: Option<f64>,
}

fn run(case: &Case) -> Stats {
    run_with_e(case, false)
}

/// As [`run`], but ggml's fourth M-RoPE axis gets `t` instead of llama.cpp's 0.
fn run_e_equals_t(case: &Case) -> Stats {
    run_with_e(case, true)
}

fn run_with_e(case: &Case, e_is_t: bool) -> Stats {
    let arch = case.arch;
    let keys: Vec<(String, GgufValue<'static>)> = case
        .meta
        .iter()
        .map(|(k, v)| (format!("{arch}.{k}"), *v))
        .collect();
    let lookup = |key: &str| -> Option<GgufValue<'static>> {
        if key == "general.architecture" {
            return Some(GgufValue::Str(arch));
        }
        keys.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    };
    let rope = rope_from_gguf(lookup, case.args.freq_factors)
        .unwrap_or_else(|e| panic!("{}: rope_from_gguf: {e}", case.name));
    assert_eq!(rope.head_dim(), case.head_dim, "{}: head_dim", case.name);
    assert_eq!(
        rope.rotary_dim(),
        case.args.n_dims,
        "{}: rotary_dim",
        case.name
    );
    let m = rope.attention_factor() as f64;

    let tokens = POSITIONS.len();
    let x = input(tokens * case.n_heads * case.head_dim, 0x9e37_79b9_7f4a_7c15);
    let mut ours = x.clone();
    let theirs = match &case.axes {
        None => {
            rope.apply(&mut ours, case.n_heads, &POSITIONS).unwrap();
            ggml_rope(
                &x,
                case.head_dim,
                case.n_heads,
                Pos::Plain(&POSITIONS),
                &case.args,
            )
        }
        Some(axes) => {
            rope.apply_axes(&mut ours, case.n_heads, axes).unwrap();
            let four: Vec<[i32; 4]> = axes
                .iter()
                .map(|&[t, h, w]| [t, h, w, if e_is_t { t } else { 0 }])
                .collect();
            ggml_rope(
                &x,
                case.head_dim,
                case.n_heads,
                Pos::Axes(&four),
                &case.args,
            )
        }
    };

    let n = case.args.n_dims;
    let neox = case.args.mode != MODE_NORMAL;
    let mut st = Stats::default();
    for t in 0..tokens {
        let p = match &case.axes {
            None => POSITIONS[t].unsigned_abs() as f64,
            // Any pair follows one of the token's axes: the largest bounds them all.
            Some(axes) => axes[t].iter().map(|v| v.unsigned_abs()).max().unwrap() as f64,
        };
        for h in 0..case.n_heads {
            let row = (t * case.n_heads + h) * case.head_dim;
            for j in 0..n / 2 {
                let (ia, ib) = if neox {
                    (j, j + n / 2)
                } else {
                    (2 * j, 2 * j + 1)
                };
                let ff = case.args.freq_factors.map_or(1.0, |f| f[j] as f64);
                let base = case.args.freq_base as f64;
                let theta_e = p * base.powf(-2.0 * j as f64 / n as f64) / ff;
                let lim = bound(x[row + ia], x[row + ib], j, theta_e, m);
                if case.axes.is_none() {
                    let theta = POSITIONS[t] as f64 * rope.inv_freq()[j] as f64;
                    let (a, b) = (x[row + ia] as f64, x[row + ib] as f64);
                    let exact = [
                        m * (a * theta.cos() - b * theta.sin()),
                        m * (b * theta.cos() + a * theta.sin()),
                    ];
                    for (k, i) in [ia, ib].into_iter().enumerate() {
                        let po = (ours[row + i] as f64 - exact[k]).abs();
                        let gg = (theirs[row + i] as f64 - exact[k]).abs();
                        st.posenc_vs_exact = Some(st.posenc_vs_exact.unwrap_or(0.0).max(po));
                        st.ggml_vs_exact = Some(st.ggml_vs_exact.unwrap_or(0.0).max(gg));
                    }
                }
                for i in [ia, ib] {
                    let err = (ours[row + i] as f64 - theirs[row + i] as f64).abs();
                    assert!(
                        err <= lim,
                        "{}: token {t} (p = {p}) head {h} dim {i} (pair {j}): posenc {} ggml {} \
                         |Δ| = {err:e} > bound {lim:e}",
                        case.name,
                        ours[row + i],
                        theirs[row + i]
                    );
                    st.max_err = st.max_err.max(err);
                    st.max_ratio = st.max_ratio.max(err / lim);
                    st.max_bound = st.max_bound.max(lim);
                    st.checked += 1;
                }
            }
            // Outside the rotary part both copy the input.
            for i in n..case.head_dim {
                assert_eq!(
                    ours[row + i].to_bits(),
                    theirs[row + i].to_bits(),
                    "{}: pass-through dim {i}",
                    case.name
                );
                assert_eq!(
                    ours[row + i].to_bits(),
                    x[row + i].to_bits(),
                    "{}: pass-through dim {i}",
                    case.name
                );
            }
        }
    }
    st
}

fn f32v(v: f32) -> GgufValue<'static> {
    GgufValue::F32(v)
}
fn u32v(v: u32) -> GgufValue<'static> {
    GgufValue::U32(v)
}

/// Llama 3's frequency factors as llama.cpp's converter writes the `rope_freqs` tensor
/// (`convert_hf_to_gguf.py`, LlamaModel.generate_extra_tensors): per pair, 1 above the
/// high-frequency wavelength, `factor` below the low-frequency one, a smooth blend between.
fn llama3_factors(
    base: f64,
    dim: usize,
    factor: f64,
    low: f64,
    high: f64,
    old_ctx: f64,
) -> Vec<f32> {
    let low_wavelen = old_ctx / low;
    let high_wavelen = old_ctx / high;
    (0..dim / 2)
        .map(|j| {
            let freq = 1.0 / base.powf((2 * j) as f64 / dim as f64);
            let wavelen = 2.0 * std::f64::consts::PI / freq;
            let f = if wavelen < high_wavelen {
                1.0
            } else if wavelen > low_wavelen {
                factor
            } else {
                let smooth = (old_ctx / wavelen - low) / (high - low);
                1.0 / ((1.0 - smooth) / factor + smooth)
            };
            f as f32
        })
        .collect()
}

fn leak(v: Vec<f32>) -> &'static [f32] {
    Box::leak(v.into_boxed_slice())
}

/// Arguments without scaling.
fn plain(n_dims: usize, mode: i32, base: f32) -> RopeArgs<'static> {
    RopeArgs {
        n_dims,
        mode,
        sections: None,
        n_ctx_orig: 0,
        freq_base: base,
        freq_scale: 1.0,
        ext_factor: 0.0,
        attn_factor: 1.0,
        beta_fast: 32.0,
        beta_slow: 1.0,
        freq_factors: None,
    }
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();

    // Normal (interleaved pairs), no scaling: Llama 2.
    v.push(Case {
        name: "llama NORMAL base 1e4 d128",
        arch: "llama",
        meta: vec![
            ("attention.key_length", u32v(128)),
            ("rope.freq_base", f32v(10_000.0)),
        ],
        head_dim: 128,
        n_heads: 2,
        args: plain(128, MODE_NORMAL, 10_000.0),
        axes: None,
    });
    // Llama 3.1: base 5e5 with the llama3 frequency factors as the rope_freqs tensor.
    let ff = leak(llama3_factors(500_000.0, 128, 8.0, 1.0, 4.0, 8192.0));
    v.push(Case {
        name: "llama NORMAL base 5e5 + rope_freqs (llama3 x8)",
        arch: "llama",
        meta: vec![
            ("attention.key_length", u32v(128)),
            ("rope.freq_base", f32v(500_000.0)),
        ],
        head_dim: 128,
        n_heads: 2,
        args: RopeArgs {
            freq_factors: Some(ff),
            ..plain(128, MODE_NORMAL, 500_000.0)
        },
        axes: None,
    });
    // Linear scaling, power-of-two and non-power-of-two factors.
    for factor in [4.0f32, 3.0] {
        v.push(Case {
            name: if factor == 4.0 {
                "llama NORMAL linear x4"
            } else {
                "llama NORMAL linear x3"
            },
            arch: "llama",
            meta: vec![
                ("attention.key_length", u32v(64)),
                ("rope.freq_base", f32v(10_000.0)),
                ("rope.scaling.type", GgufValue::Str("linear")),
                ("rope.scaling.factor", f32v(factor)),
            ],
            head_dim: 64,
            n_heads: 3,
            args: RopeArgs {
                freq_scale: 1.0 / factor,
                ..plain(64, MODE_NORMAL, 10_000.0)
            },
            axes: None,
        });
    }
    // Scaling type "none" ignores a stored factor (llama_context forces freq_scale = 1).
    v.push(Case {
        name: "llama NORMAL type none, factor ignored",
        arch: "llama",
        meta: vec![
            ("attention.key_length", u32v(64)),
            ("rope.freq_base", f32v(10_000.0)),
            ("rope.scaling.type", GgufValue::Str("none")),
            ("rope.scaling.factor", f32v(4.0)),
        ],
        head_dim: 64,
        n_heads: 2,
        args: plain(64, MODE_NORMAL, 10_000.0),
        axes: None,
    });
    // Partial rotary, normal pairing: GLM-4 (half of a 128 head).
    v.push(Case {
        name: "glm4 NORMAL partial 64 of 128",
        arch: "glm4",
        meta: vec![
            ("attention.key_length", u32v(128)),
            ("rope.dimension_count", u32v(64)),
            ("rope.freq_base", f32v(10_000.0)),
        ],
        head_dim: 128,
        n_heads: 2,
        args: plain(64, MODE_NORMAL, 10_000.0),
        axes: None,
    });
    // NEOX, no scaling: Qwen2.5.
    v.push(Case {
        name: "qwen2 NEOX base 1e6 d128",
        arch: "qwen2",
        meta: vec![
            ("attention.key_length", u32v(128)),
            ("rope.freq_base", f32v(1_000_000.0)),
        ],
        head_dim: 128,
        n_heads: 2,
        args: plain(128, MODE_NEOX, 1_000_000.0),
        axes: None,
    });
    // NEOX partial rotary: Phi-2 (32 of 80, head size from embedding_length / head_count).
    v.push(Case {
        name: "phi2 NEOX partial 32 of 80",
        arch: "phi2",
        meta: vec![
            ("embedding_length", u32v(2560)),
            ("attention.head_count", u32v(32)),
            ("rope.dimension_count", u32v(32)),
            ("rope.freq_base", f32v(10_000.0)),
        ],
        head_dim: 80,
        n_heads: 2,
        args: plain(32, MODE_NEOX, 10_000.0),
        axes: None,
    });
    // NEOX with frequency factors and linear scaling together.
    let ff96 = leak((0..48).map(|j| 1.0 + 0.05 * j as f32).collect());
    v.push(Case {
        name: "phi3 NEOX longrope factors + attn_factor",
        arch: "phi3",
        meta: vec![
            ("attention.key_length", u32v(96)),
            ("rope.freq_base", f32v(10_000.0)),
            ("rope.scaling.type", GgufValue::Str("longrope")),
            ("rope.scaling.attn_factor", f32v(1.190_238_3)),
        ],
        head_dim: 96,
        n_heads: 2,
        args: RopeArgs {
            freq_factors: Some(ff96),
            attn_factor: llama_cpp_attn_factor("phi3", 1.0, 0.0, 0.0, 1.190_238_3),
            ..plain(96, MODE_NEOX, 10_000.0)
        },
        axes: None,
    });
    // YaRN (ext_factor 1 by the type), Qwen2.5 with the model card's factor 4.
    let yarn = |name,
                arch,
                hd,
                mode,
                base: f32,
                factor: f32,
                ctx: u32,
                extra: Vec<(&'static str, GgufValue<'static>)>,
                ext: f32,
                bf: f32,
                bs: f32,
                log_mul: f32,
                rattn: f32| {
        let mut meta = vec![
            ("attention.key_length", u32v(hd as u32)),
            ("rope.freq_base", f32v(base)),
            ("rope.scaling.type", GgufValue::Str("yarn")),
            ("rope.scaling.factor", f32v(factor)),
            ("rope.scaling.original_context_length", u32v(ctx)),
        ];
        meta.extend(extra);
        let fs = 1.0 / factor;
        Case {
            name,
            arch,
            meta,
            head_dim: hd,
            n_heads: 2,
            args: RopeArgs {
                n_ctx_orig: ctx as i32,
                freq_scale: fs,
                ext_factor: ext,
                attn_factor: llama_cpp_attn_factor(arch, fs, ext, log_mul, rattn),
                beta_fast: bf,
                beta_slow: bs,
                ..plain(hd, mode, base)
            },
            axes: None,
        }
    };
    v.push(yarn(
        "qwen2 NEOX yarn x4 (32768)",
        "qwen2",
        128,
        MODE_NEOX,
        1_000_000.0,
        4.0,
        32768,
        vec![],
        1.0,
        32.0,
        1.0,
        0.0,
        1.0,
    ));
    v.push(yarn(
        "llama NORMAL yarn x16, ext 0.5, beta 16/2, attn 0.9",
        "llama",
        128,
        MODE_NORMAL,
        10_000.0,
        16.0,
        4096,
        vec![
            ("rope.scaling.yarn_ext_factor", f32v(0.5)),
            ("rope.scaling.yarn_beta_fast", f32v(16.0)),
            ("rope.scaling.yarn_beta_slow", f32v(2.0)),
            ("rope.scaling.attn_factor", f32v(0.9)),
        ],
        0.5,
        16.0,
        2.0,
        0.0,
        0.9,
    ));
    v.push(yarn(
        "gpt-oss NEOX yarn x32 base 150000",
        "gpt-oss",
        64,
        MODE_NEOX,
        150_000.0,
        32.0,
        4096,
        vec![],
        1.0,
        32.0,
        1.0,
        0.0,
        1.0,
    ));
    v.push(yarn(
        "llama NORMAL yarn x3 (non-power-of-two freq_scale)",
        "llama",
        64,
        MODE_NORMAL,
        10_000.0,
        3.0,
        2048,
        vec![],
        1.0,
        32.0,
        1.0,
        0.0,
        1.0,
    ));
    // DeepSeek-V3: MLA's 64-dim rope part (head = rope dims), YaRN x40 with the log multiplier
    // (HF mscale_all_dim 1 → GGUF yarn_log_multiplier 0.1).
    let mut ds = yarn(
        "deepseek2 NORMAL yarn x40 log_mul 0.1",
        "deepseek2",
        64,
        MODE_NORMAL,
        10_000.0,
        40.0,
        4096,
        vec![
            ("rope.dimension_count", u32v(64)),
            ("rope.scaling.yarn_log_multiplier", f32v(0.1)),
        ],
        1.0,
        32.0,
        1.0,
        1.0,
        1.0,
    );
    // key_length is the full q/k head (192); the loader keeps only the rope part.
    ds.meta[0] = ("attention.key_length", u32v(192));
    v.push(ds);

    // M-RoPE: Qwen2-VL sections [16, 24, 24] and Qwen3-VL interleaved [24, 20, 20].
    let axes: Vec<[i32; 3]> = POSITIONS
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            [
                p,
                (p / 3 + 7 * i as i32) % 8192,
                (8191 - p + 13 * i as i32) % 8192,
            ]
        })
        .collect();
    for (name, arch, mode, sections, base) in [
        (
            "qwen2vl MROPE [16,24,24]",
            "qwen2vl",
            MODE_MROPE,
            [16i32, 24, 24, 0],
            1_000_000.0f32,
        ),
        (
            "qwen3vl IMROPE [24,20,20]",
            "qwen3vl",
            MODE_IMROPE,
            [24, 20, 20, 0],
            5_000_000.0,
        ),
    ] {
        let text: Vec<[i32; 3]> = POSITIONS.iter().map(|&p| [p, p, p]).collect();
        for (who, ax) in [("image tokens", axes.clone()), ("text tokens", text)] {
            v.push(Case {
                name: Box::leak(format!("{name}, {who}").into_boxed_str()),
                arch,
                meta: vec![
                    ("attention.key_length", u32v(128)),
                    ("rope.freq_base", f32v(base)),
                    (
                        "rope.dimension_sections",
                        GgufValue::Array(GgufArray::from_i32(Box::leak(Box::new(sections)))),
                    ),
                ],
                head_dim: 128,
                n_heads: 2,
                args: RopeArgs {
                    sections: Some(sections),
                    ..plain(128, mode, base)
                },
                axes: Some(ax),
            });
        }
    }
    v
}

#[test]
fn posenc_matches_ggml_rope_within_ggmls_f32_angle_error() {
    println!("ggml from {GGML_SOURCE}");
    println!(
        "{:<52} {:>11} {:>11} {:>9} {:>7} {:>11} {:>11}",
        "case", "max|Δ|", "max bound", "max Δ/bd", "values", "posenc-ex", "ggml-ex"
    );
    let (mut worst_err, mut worst_ratio) = (0.0f64, 0.0f64);
    let all = cases();
    for case in &all {
        let st = run(case);
        let opt = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3e}"));
        println!(
            "{:<52} {:>11.3e} {:>11.3e} {:>9.3} {:>7} {:>11} {:>11}",
            case.name,
            st.max_err,
            st.max_bound,
            st.max_ratio,
            st.checked,
            opt(st.posenc_vs_exact),
            opt(st.ggml_vs_exact)
        );
        worst_err = worst_err.max(st.max_err);
        worst_ratio = worst_ratio.max(st.max_ratio);
    }
    println!(
        "all {} cases: max |posenc − ggml| = {worst_err:.3e}, max error/bound = {worst_ratio:.3}",
        all.len()
    );
}

/// The bound is not vacuous: ggml run with a base 10⁻⁴ (relative) off, or with YaRN's
/// original context doubled, or with HF's Qwen3-VL axis rule (pairs 61 and 62 rotated with
/// t, i.e. `e = t`), fails it.
#[test]
fn near_misses_are_caught() {
    let find = |prefix: &str| {
        cases()
            .into_iter()
            .find(|c| c.name.starts_with(prefix))
            .unwrap()
    };
    let mut base = find("qwen2 NEOX base");
    base.args.freq_base *= 1.0001;
    let mut ctx = find("qwen2 NEOX yarn");
    ctx.args.n_ctx_orig *= 2;
    let imrope = find("qwen3vl IMROPE [24,20,20], text");
    for case in [base, ctx] {
        let caught = std::panic::catch_unwind(|| run(&case)).is_err();
        assert!(caught, "{}: a near miss passed the bound", case.name);
    }
    let caught = std::panic::catch_unwind(|| run_e_equals_t(&imrope)).is_err();
    assert!(caught, "{}: HF's axis rule passed the bound", imrope.name);
}
