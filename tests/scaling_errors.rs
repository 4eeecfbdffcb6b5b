//! Every guard of the scaling schemes (exact error variant asserted), the documented behaviour
//! of their degenerate-but-accepted cases, and a property: `Rope::new` never panics, whatever
//! the parameters, and whatever it accepts is finite.

use posenc::{Error, Formula, Layout, LongRope, Rope, RopeConfig, Scaling, Yarn};
use proptest::prelude::*;

fn cfg(d: usize, base: f32, scaling: Scaling<'_>) -> RopeConfig<'_> {
    RopeConfig::new(d, base, Layout::RotateHalf).scaling(scaling)
}

fn new(d: usize, base: f32, scaling: Scaling<'_>) -> Result<Rope, Error> {
    Rope::new(&cfg(d, base, scaling))
}

/// `assert_eq!` for errors whose value may be NaN (NaN != NaN).
#[track_caller]
fn assert_invalid(r: Result<Rope, Error>, what: &'static str, value: f32) {
    match r {
        Err(Error::InvalidParameter { what: w, value: v }) => {
            assert_eq!(w, what);
            assert!(
                v.to_bits() == value.to_bits() || (v.is_nan() && value.is_nan()),
                "{v} vs {value}"
            );
        }
        other => panic!("expected InvalidParameter {{ {what}, {value} }}, got {other:?}"),
    }
}

#[track_caller]
fn assert_out_of_range(r: Result<Rope, Error>, what: &'static str, value: f32) {
    match r {
        Err(Error::ParameterOutOfRange {
            what: w,
            value: v,
            constraint,
        }) => {
            assert_eq!((w, v), (what, value));
            assert!(!constraint.is_empty());
        }
        other => panic!("expected ParameterOutOfRange {{ {what}, {value} }}, got {other:?}"),
    }
}

const BAD: [f32; 5] = [0.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY];

fn plain(d: usize, base: f32) -> Rope {
    new(d, base, Scaling::None).unwrap()
}

// ---- Linear / Ntk / DynamicNtk ------------------------------------------------------------

#[test]
fn linear_and_ntk_factor_must_be_finite_positive() {
    for v in BAD {
        assert_invalid(new(64, 1e4, Scaling::Linear { factor: v }), "factor", v);
        assert_invalid(new(64, 1e4, Scaling::Ntk { factor: v }), "factor", v);
    }
}

#[test]
fn ntk_overflowing_base_is_refused() {
    // 1e30 · (1e30)^(64/62) overflows f32.
    assert_invalid(
        new(64, 1e30, Scaling::Ntk { factor: 1e30 }),
        "scaled_base",
        f32::INFINITY,
    );
    // Underflow: 1e-30 · (1e-30)^(64/62) is 0 in f32.
    assert_invalid(
        new(64, 1e-30, Scaling::Ntk { factor: 1e-30 }),
        "scaled_base",
        0.0,
    );
}

#[test]
fn ntk_rotary_dim_2_is_unscaled() {
    // d/(d−2) is undefined, but the only frequency is b'^0 = 1 for every base.
    let r = Rope::new(&cfg(4, 1e4, Scaling::Ntk { factor: 8.0 }).rotary_dim(2)).unwrap();
    assert_eq!(r.inv_freq(), &[1.0]);
}

#[test]
fn ntk_matches_its_formula() {
    // b' = 10000 · 4^(64/62), in f64, rounded to f32.
    let b = (1e4f64 * 4f64.powf(64.0 / 62.0)) as f32;
    let r = new(64, 1e4, Scaling::Ntk { factor: 4.0 }).unwrap();
    assert_eq!(r.inv_freq(), plain(64, b).inv_freq());
    assert_eq!(r.attention_factor(), 1.0);
}

#[test]
fn dynamic_guards() {
    let dynamic = |factor, max_positions, seq_len| Scaling::DynamicNtk {
        factor,
        max_positions,
        seq_len,
    };
    for v in BAD {
        assert_invalid(new(64, 1e4, dynamic(v, 2048, 4096)), "factor", v);
    }
    assert_invalid(new(64, 1e4, dynamic(2.0, 0, 4096)), "max_positions", 0.0);
    assert_invalid(new(64, 1e4, dynamic(2.0, 0, 0)), "max_positions", 0.0);
    // factor·L overflows f32.
    assert_invalid(
        new(64, 1e4, dynamic(3e38, 2048, 4096)),
        "scaled_base",
        f32::INFINITY,
    );
    // L = Lmax + 1 is Lmax in f32 when Lmax = 2^25: t = s − f32(s − 1) = 0.
    assert_invalid(
        new(64, 1e4, dynamic(1e30, 1 << 25, (1 << 25) + 1)),
        "scaled_base",
        0.0,
    );
}

#[test]
fn dynamic_within_max_positions_is_unscaled() {
    for seq_len in [0, 1, 2047, 2048] {
        let s = Scaling::DynamicNtk {
            factor: 2.0,
            max_positions: 2048,
            seq_len,
        };
        assert_eq!(
            new(128, 1e4, s).unwrap().inv_freq(),
            plain(128, 1e4).inv_freq(),
            "{seq_len}"
        );
    }
    // Beyond it the base grows: every frequency but ω_0 = 1 decreases.
    let s = Scaling::DynamicNtk {
        factor: 2.0,
        max_positions: 2048,
        seq_len: 2049,
    };
    let (scaled, p) = (new(128, 1e4, s).unwrap(), plain(128, 1e4));
    assert_eq!(scaled.inv_freq()[0], 1.0);
    assert!(
        scaled.inv_freq()[1..]
            .iter()
            .zip(&p.inv_freq()[1..])
            .all(|(a, b)| a < b)
    );
    // d = 2: unscaled whatever the length (see Ntk).
    let r = Rope::new(&cfg(4, 1e4, s).rotary_dim(2)).unwrap();
    assert_eq!(r.inv_freq(), &[1.0]);
}

// ---- YaRN ---------------------------------------------------------------------------------

fn yarn(y: Yarn) -> Result<Rope, Error> {
    new(128, 1e6, Scaling::Yarn(y))
}

#[test]
fn yarn_guards() {
    let y = Yarn::new(4.0, 32_768);
    for v in BAD {
        assert_invalid(yarn(Yarn { factor: v, ..y }), "factor", v);
        assert_invalid(yarn(Yarn { beta_fast: v, ..y }), "beta_fast", v);
        assert_invalid(yarn(Yarn { beta_slow: v, ..y }), "beta_slow", v);
        assert_invalid(
            yarn(Yarn {
                attention_factor: Some(v),
                ..y
            }),
            "attention_factor",
            v,
        );
    }
    for v in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        assert_invalid(
            yarn(Yarn {
                mscale: Some(v),
                mscale_all_dim: Some(1.0),
                ..y
            }),
            "mscale",
            v,
        );
        assert_invalid(
            yarn(Yarn {
                mscale: Some(1.0),
                mscale_all_dim: Some(v),
                ..y
            }),
            "mscale_all_dim",
            v,
        );
    }
    assert_invalid(
        yarn(Yarn {
            original_max_positions: 0,
            ..y
        }),
        "original_max_positions",
        0.0,
    );
    assert_out_of_range(
        yarn(Yarn {
            beta_fast: 1.0,
            beta_slow: 32.0,
            ..y
        }),
        "beta_slow",
        32.0,
    );
    assert_out_of_range(new(128, 1.0, Scaling::Yarn(y)), "base", 1.0);
    // g(4, −10) = 0.1·(−10)·ln 4 + 1 < 0: a negative magnitude, refused.
    let negative = Yarn {
        mscale: Some(1.0),
        mscale_all_dim: Some(-10.0),
        ..Yarn::new(4.0, 4096)
    };
    match yarn(negative) {
        Err(Error::InvalidParameter {
            what: "attention_factor",
            value,
        }) => {
            let expected = (0.1 * 4f64.ln() + 1.0) / (0.1 * -10.0 * 4f64.ln() + 1.0);
            assert_eq!(value, expected as f32);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn yarn_accepted_edge_cases() {
    let y = Yarn::new(4.0, 32_768);
    // Equal betas: a valid (one-dim-wide) ramp.
    assert!(
        yarn(Yarn {
            beta_fast: 8.0,
            beta_slow: 8.0,
            ..y
        })
        .is_ok()
    );
    // A zero mscale is "absent" (HF's Python truthiness): g(s, 1).
    let r = yarn(Yarn {
        mscale: Some(0.0),
        mscale_all_dim: Some(0.707),
        ..y
    })
    .unwrap();
    assert_eq!(r.attention_factor(), yarn(y).unwrap().attention_factor());
    // An explicit attention factor wins over everything.
    let r = yarn(Yarn {
        attention_factor: Some(0.5),
        mscale: Some(2.0),
        mscale_all_dim: Some(1.0),
        ..y
    });
    assert_eq!(r.unwrap().attention_factor(), 0.5);
    // factor ≤ 1: g = 1.
    assert_eq!(
        yarn(Yarn { factor: 0.5, ..y }).unwrap().attention_factor(),
        1.0
    );
}

#[test]
fn yarn_singular_range_uses_hf_epsilon() {
    // L0 = 6 < 2π: c(β_slow) = 128·ln(6/2π)/(2 ln 1e4) ≈ −0.32, ceil → 0, and lo = max(floor(c(32)),
    // 0) = 0: lo == hi, so HF widens hi by 0.001. Pair 0 extrapolates, every other interpolates.
    let r = new(128, 1e4, Scaling::Yarn(Yarn::new(4.0, 6))).unwrap();
    assert_eq!(r.inv_freq()[0], 1.0);
    for (j, &w) in r.inv_freq().iter().enumerate().skip(1) {
        // Ramp 1, extrapolation weight 0: exactly the interpolated 1/f32(4·q_j).
        let q = 1e4f64.powf(((2 * j) as f32 / 128.0) as f64) as f32;
        assert_eq!(w, 1.0 / (4.0 * q), "pair {j}");
    }
}

// ---- llama3 -------------------------------------------------------------------------------

fn llama3(factor: f32, low: f32, high: f32, l0: u32) -> Result<Rope, Error> {
    new(
        128,
        500_000.0,
        Scaling::Llama3 {
            factor,
            low_freq_factor: low,
            high_freq_factor: high,
            original_max_positions: l0,
        },
    )
}

#[test]
fn llama3_guards() {
    for v in BAD {
        assert_invalid(llama3(v, 1.0, 4.0, 8192), "factor", v);
        assert_invalid(llama3(8.0, v, 4.0, 8192), "low_freq_factor", v);
        assert_invalid(llama3(8.0, 1.0, v, 8192), "high_freq_factor", v);
    }
    assert_out_of_range(llama3(8.0, 4.0, 1.0, 8192), "low_freq_factor", 4.0);
    assert_invalid(llama3(8.0, 1.0, 4.0, 0), "original_max_positions", 0.0);
}

#[test]
fn llama3_equal_factors_are_a_hard_cutoff() {
    // Choose low = high so that L0/low is exactly pair 0's f32 wavelength f32(1/1)·f32(2π):
    // HF computes σ = 0/0 there (NaN); posenc uses σ = 0 (vLLM), i.e. ω/factor.
    let two_pi = core::f32::consts::TAU;
    let low = (8192.0f64 / two_pi as f64) as f32;
    assert_eq!(
        (8192.0f64 / low as f64) as f32,
        two_pi,
        "precondition: wavelength on the bound"
    );
    let r = llama3(8.0, low, low, 8192).unwrap();
    let p = plain(128, 500_000.0);
    assert_eq!(r.inv_freq()[0], 1.0 / 8.0);
    for (&w, &q) in r.inv_freq().iter().zip(p.inv_freq()).skip(1) {
        // Every other wavelength is longer than 2π: divided.
        assert_eq!(w, q / 8.0);
    }
    // Away from the bound: a plain step, no interpolated pair.
    let r = llama3(8.0, 2.0, 2.0, 8192).unwrap();
    for (&w, &q) in r.inv_freq().iter().zip(p.inv_freq()) {
        assert!(w == q || w == q / 8.0);
    }
}

// ---- LongRoPE -----------------------------------------------------------------------------

fn longrope<'a>(short: &'a [f32], long: &'a [f32]) -> LongRope<'a> {
    LongRope {
        short_factor: short,
        long_factor: long,
        original_max_positions: 4096,
        max_positions: 131_072,
        use_long: false,
        attention_factor: None,
    }
}

#[test]
fn longrope_guards() {
    let ok = [1.0f32; 48];
    let short = [1.0f32; 47];
    let long = [1.0f32; 49];
    let lr = |l: LongRope<'_>| -> Result<Rope, Error> { new(96, 1e4, Scaling::LongRope(l)) };
    assert_eq!(
        lr(longrope(&short, &ok)).unwrap_err(),
        Error::LengthMismatch {
            what: "short_factor",
            expected: 48,
            actual: 47,
            formula: Formula {
                names: &"rotary_dim/2",
                values: [48, 0, 0]
            }
        }
    );
    // The unused list is validated too.
    assert_eq!(
        lr(longrope(&ok, &long)).unwrap_err(),
        Error::LengthMismatch {
            what: "long_factor",
            expected: 48,
            actual: 49,
            formula: Formula {
                names: &"rotary_dim/2",
                values: [48, 0, 0]
            }
        }
    );
    for v in BAD {
        let mut bad = [1.0f32; 48];
        bad[17] = v;
        assert_invalid(lr(longrope(&bad, &ok)), "short_factor", v);
        assert_invalid(
            lr(LongRope {
                use_long: true,
                ..longrope(&ok, &bad)
            }),
            "long_factor",
            v,
        );
        assert_invalid(
            lr(LongRope {
                attention_factor: Some(v),
                ..longrope(&ok, &ok)
            }),
            "attention_factor",
            v,
        );
    }
    assert_invalid(
        lr(LongRope {
            original_max_positions: 0,
            ..longrope(&ok, &ok)
        }),
        "original_max_positions",
        0.0,
    );
    // L0 = 1 with s > 1: ln s / ln 1 is infinite.
    assert_invalid(
        lr(LongRope {
            original_max_positions: 1,
            ..longrope(&ok, &ok)
        }),
        "attention_factor",
        f32::INFINITY,
    );
}

#[test]
fn longrope_accepted_edge_cases() {
    let ok = [1.0f32; 48];
    let lr = |l: LongRope<'_>| new(96, 1e4, Scaling::LongRope(l)).unwrap();
    // s ≤ 1: magnitude 1; with all-one factors the frequencies are the default ones.
    let r = lr(LongRope {
        max_positions: 4096,
        ..longrope(&ok, &ok)
    });
    assert_eq!(r.attention_factor(), 1.0);
    assert_eq!(r.inv_freq(), plain(96, 1e4).inv_freq());
    let r = lr(LongRope {
        max_positions: 0,
        original_max_positions: 1,
        ..longrope(&ok, &ok)
    });
    assert_eq!(r.attention_factor(), 1.0);
}

// ---- FreqFactors, Proportional, base --------------------------------------------------------

#[test]
fn freq_factors_guards() {
    let short = [1.0f32; 31];
    assert_eq!(
        new(64, 1e4, Scaling::FreqFactors(&short)).unwrap_err(),
        Error::LengthMismatch {
            what: "freq_factors",
            expected: 32,
            actual: 31,
            formula: Formula {
                names: &"rotary_dim/2",
                values: [32, 0, 0]
            }
        }
    );
    assert_eq!(
        new(64, 1e4, Scaling::FreqFactors(&[])).unwrap_err(),
        Error::LengthMismatch {
            what: "freq_factors",
            expected: 32,
            actual: 0,
            formula: Formula {
                names: &"rotary_dim/2",
                values: [32, 0, 0]
            }
        }
    );
    for v in BAD {
        let mut f = [1.0f32; 32];
        f[31] = v;
        assert_invalid(new(64, 1e4, Scaling::FreqFactors(&f)), "freq_factors", v);
    }
    // Subnormal divisors overflow the frequency.
    let f = [1e-45f32; 32];
    assert_invalid(
        new(64, 1e4, Scaling::FreqFactors(&f)),
        "inv_freq",
        f32::INFINITY,
    );
}

#[test]
fn proportional_guards_and_edges() {
    let prop = |p, factor| Scaling::Proportional {
        partial_rotary_factor: p,
        factor,
    };
    for v in [-1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.25] {
        assert_invalid(new(64, 1e4, prop(v, 1.0)), "partial_rotary_factor", v);
    }
    assert_out_of_range(new(64, 1e4, prop(1.5, 1.0)), "partial_rotary_factor", 1.5);
    for v in BAD {
        assert_invalid(new(64, 1e4, prop(0.5, v)), "factor", v);
    }
    // p = 0: nothing rotates; p = 1: the default frequencies; p = 0.25 of 256: 32 of 128 pairs.
    assert!(
        new(64, 1e4, prop(0.0, 1.0))
            .unwrap()
            .inv_freq()
            .iter()
            .all(|&w| w == 0.0)
    );
    assert_eq!(
        new(64, 1e4, prop(1.0, 1.0)).unwrap().inv_freq(),
        plain(64, 1e4).inv_freq()
    );
    let r = new(256, 1e6, prop(0.25, 1.0)).unwrap();
    assert_eq!(&r.inv_freq()[..32], &plain(256, 1e6).inv_freq()[..32]);
    assert!(r.inv_freq()[32..].iter().all(|&w| w == 0.0));
    // ω = 0 pairs pass through exactly.
    let mut x: Vec<f32> = (0..256).map(|i| i as f32 * 0.01 - 1.0).collect();
    let orig = x.clone();
    r.apply(&mut x, 1, &[123_456]).unwrap();
    for i in (32..128).chain(160..256) {
        assert_eq!(x[i], orig[i], "channel {i}");
    }
}

#[test]
fn base_guards_apply_to_every_scheme() {
    let f = [1.0f32; 32];
    let lr = longrope(&f, &f);
    let schemes = [
        Scaling::None,
        Scaling::Linear { factor: 2.0 },
        Scaling::Ntk { factor: 2.0 },
        Scaling::DynamicNtk {
            factor: 2.0,
            max_positions: 2048,
            seq_len: 4096,
        },
        Scaling::Yarn(Yarn::new(4.0, 4096)),
        Scaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_positions: 8192,
        },
        Scaling::LongRope(lr),
        Scaling::FreqFactors(&f),
        Scaling::Proportional {
            partial_rotary_factor: 0.5,
            factor: 1.0,
        },
    ];
    for s in schemes {
        for v in BAD {
            assert_invalid(new(64, v, s), "base", v);
        }
        assert!(new(64, 1e4, s).is_ok(), "{s:?}");
    }
}

#[test]
fn new_error_displays() {
    let e = Error::ParameterOutOfRange {
        what: "low_freq_factor",
        constraint: "must not exceed `high_freq_factor`",
        value: 4.0,
    };
    assert_eq!(
        e.to_string(),
        "`low_freq_factor` must not exceed `high_freq_factor`, got 4"
    );
}

// ---- Property: never a panic ----------------------------------------------------------------

/// Any f32 at all (every bit pattern: NaN payloads, infinities, subnormals, huge), plus the
/// special values and a plausible range often enough that valid paths are exercised too.
fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => any::<u32>().prop_map(f32::from_bits),
        2 => prop::sample::select(vec![
            0.0f32, -0.0, 1.0, -1.0, 0.001, 1e-45, 1e38, f32::MAX, f32::MIN_POSITIVE,
            f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 32.0, 4.0,
        ]),
        3 => 0.01f32..100.0,
    ]
}

fn any_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        prop::sample::select(vec![0u32, 1, 2, 6, 4096, 8192, 32_768, u32::MAX]),
        1u32..200_000,
    ]
}

#[derive(Clone, Debug)]
enum Spec {
    None,
    Linear(f32),
    Ntk(f32),
    Dynamic(f32, u32, u32),
    Yarn(Yarn),
    Llama3(f32, f32, f32, u32),
    LongRope {
        short: Vec<f32>,
        long: Vec<f32>,
        l0: u32,
        max: u32,
        use_long: bool,
        m: Option<f32>,
    },
    Factors(Vec<f32>),
    Proportional(f32, f32),
}

fn factor_vec() -> impl Strategy<Value = Vec<f32>> {
    prop_oneof![
        prop::collection::vec(any_f32(), 0..260),
        // The right length for the dims below far more often than chance.
        (1usize..=256).prop_flat_map(|n| prop::collection::vec(0.5f32..8.0, n)),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    let yarn = (
        (any_f32(), any_u32(), any_f32(), any_f32()),
        (
            prop::option::of(any_f32()),
            prop::option::of(any_f32()),
            prop::option::of(any_f32()),
        ),
        any::<bool>(),
    )
        .prop_map(|((factor, l0, bf, bs), (m, ma, a), truncate)| Yarn {
            factor,
            original_max_positions: l0,
            beta_fast: bf,
            beta_slow: bs,
            mscale: m,
            mscale_all_dim: ma,
            attention_factor: a,
            truncate,
        });
    prop_oneof![
        Just(Spec::None),
        any_f32().prop_map(Spec::Linear),
        any_f32().prop_map(Spec::Ntk),
        (any_f32(), any_u32(), any_u32()).prop_map(|(f, m, s)| Spec::Dynamic(f, m, s)),
        yarn.prop_map(Spec::Yarn),
        (any_f32(), any_f32(), any_f32(), any_u32())
            .prop_map(|(f, l, h, o)| Spec::Llama3(f, l, h, o)),
        (
            factor_vec(),
            factor_vec(),
            any_u32(),
            any_u32(),
            any::<bool>(),
            prop::option::of(any_f32())
        )
            .prop_map(|(short, long, l0, max, use_long, m)| Spec::LongRope {
                short,
                long,
                l0,
                max,
                use_long,
                m
            }),
        factor_vec().prop_map(Spec::Factors),
        (any_f32(), any_f32()).prop_map(|(p, f)| Spec::Proportional(p, f)),
    ]
}

fn scaling(spec: &Spec) -> Scaling<'_> {
    match spec {
        Spec::None => Scaling::None,
        Spec::Linear(f) => Scaling::Linear { factor: *f },
        Spec::Ntk(f) => Scaling::Ntk { factor: *f },
        Spec::Dynamic(f, m, s) => Scaling::DynamicNtk {
            factor: *f,
            max_positions: *m,
            seq_len: *s,
        },
        Spec::Yarn(y) => Scaling::Yarn(*y),
        Spec::Llama3(f, l, h, o) => Scaling::Llama3 {
            factor: *f,
            low_freq_factor: *l,
            high_freq_factor: *h,
            original_max_positions: *o,
        },
        Spec::LongRope {
            short,
            long,
            l0,
            max,
            use_long,
            m,
        } => Scaling::LongRope(LongRope {
            short_factor: short,
            long_factor: long,
            original_max_positions: *l0,
            max_positions: *max,
            use_long: *use_long,
            attention_factor: *m,
        }),
        Spec::Factors(f) => Scaling::FreqFactors(f),
        Spec::Proportional(p, f) => Scaling::Proportional {
            partial_rotary_factor: *p,
            factor: *f,
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    /// `Rope::new` returns (never panics) for arbitrary parameters; what it accepts has finite,
    /// non-negative frequencies and a finite positive attention factor, and no scheme reports
    /// itself unsupported.
    #[test]
    fn rope_new_never_panics(
        spec in spec(),
        half in prop_oneof![1usize..=256, Just(1usize), Just(256), 0usize..=300],
        base in any_f32(),
    ) {
        let d = 2 * half;
        let cfg = RopeConfig::new(d.max(2), base, Layout::Interleaved).rotary_dim(d).scaling(scaling(&spec));
        match Rope::new(&cfg) {
            Ok(r) => {
                prop_assert_eq!(r.inv_freq().len(), d / 2);
                prop_assert!(r.inv_freq().iter().all(|w| w.is_finite() && *w >= 0.0), "{:?}", r);
                let m = r.attention_factor();
                prop_assert!(m.is_finite() && m > 0.0, "{:?}", r);
            }
            Err(e) => {
                prop_assert!(!matches!(e, Error::UnsupportedScaling { .. }), "{:?}", e);
                // Display never panics either.
                let _ = e.to_string();
            }
        }
    }
}
