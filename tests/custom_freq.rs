//! [`Rope::from_inv_freq`]: a rope from frequencies the caller already has.
//!
//! * Fed a golden case's own `inv_freq` buffer (HF's, as used in forward) and its
//!   `attention_scaling`, it passes the full per-case checker (`tests/common/check.rs`: cos/sin
//!   and outputs against the f64 truths and torch) on every backend: whatever scheme produced
//!   the buffer (default, linear, dynamic, YaRN, llama3, LongRoPE), posenc reproduces the case.
//! * Fed `Rope::new`'s own `inv_freq()` and `attention_factor()`, it is the same rope: every
//!   entry point gives bitwise the same output.
//! * Invalid input (NaN, ±inf, negative frequencies; zero, negative, NaN, inf attention
//!   factor; empty; odd or too-small head_dim; too many frequencies) is refused.

mod common;

use common::check::{self, RopeOptions};
use common::{Case, backends, bits, case_names};
use posenc::{
    Element, Error, Layout, LongRope, MAX_ROTARY_DIM, Rope, RopeConfig, Rounding, Scaling, Yarn,
    bf16, f16,
};

/// Rope cases in `INDEX.txt` that carry an `inv_freq` buffer: every rope case but the two
/// GPT-J ones (whose table comes from `create_sinusoidal_positions`, no buffer).
const CASES_WITH_INV_FREQ: usize = 27;

#[test]
fn golden_cases_from_their_inv_freq() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for name in case_names() {
        let case = Case::load(&name);
        if case.get("kind") != "rope" || !case.has_array("inv_freq") {
            continue;
        }
        let w = case.array("inv_freq").to_f32();
        let m = case.f64("attention_scaling") as f32;
        let layout = check::posenc_layout(case.get("layout"));
        let rope = Rope::from_inv_freq(case.usize("head_dim"), layout, &w, m)
            .unwrap_or_else(|e| panic!("{name}: from_inv_freq: {e}"));
        assert_eq!(rope.inv_freq(), &w[..], "{name}");
        assert_eq!(rope.rotary_dim(), case.usize("rotary_dim"), "{name}");
        for b in backends() {
            let rope = rope.with_backend(b).unwrap();
            match check::try_check_rope_case(&case, &rope, &RopeOptions::default()) {
                Ok(st) => println!(
                    "{:<9} {:<52} {:<4} cs={:.2e} out={:.2e} ({:.3}) torch={:.2e} exact={}/{} torch_eq={}",
                    b.name(),
                    st.case,
                    st.dtype,
                    st.cos_sin_err,
                    st.out_err,
                    st.out_ratio,
                    st.out_torch_err,
                    st.round_exact,
                    st.rotated,
                    st.torch_equal
                ),
                Err(e) => failures.push(format!("[{}] {e}", b.name())),
            }
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, CASES_WITH_INV_FREQ);
}

#[test]
fn invalid_frequencies_are_refused() {
    let good = [1.0f32, 0.1, 0.01, 0.001];
    let bad_freq = |v: f32| {
        let mut w = good;
        w[2] = v;
        let e = Rope::from_inv_freq(8, Layout::RotateHalf, &w, 1.0).unwrap_err();
        match e {
            Error::InvalidParameter {
                what: "inv_freq",
                value,
            } => assert_eq!(value.to_bits(), v.to_bits(), "{v}"),
            other => panic!("inv_freq {v}: {other:?}"),
        }
    };
    for v in [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -1.0,
        -f32::MIN_POSITIVE,
        -1e-45,
        f32::MIN,
    ] {
        bad_freq(v);
    }
    // Zero (a pair that never rotates), the smallest subnormal and the documented maximum
    // 2^16 are fine; -0 is ≥ 0 as well.
    for v in [0.0, -0.0, 1e-45, 65_536.0] {
        let mut w = good;
        w[2] = v;
        assert!(
            Rope::from_inv_freq(8, Layout::RotateHalf, &w, 1.0).is_ok(),
            "{v}"
        );
    }
    // Above 2^16 rad per position the angle reduction would leave its exact range.
    for v in [65_537.0, 5e15, f32::MAX] {
        let mut w = good;
        w[2] = v;
        let e = Rope::from_inv_freq(8, Layout::RotateHalf, &w, 1.0).unwrap_err();
        assert!(
            matches!(
                e,
                Error::ParameterOutOfRange {
                    what: "inv_freq",
                    ..
                }
            ),
            "{v}: {e:?}"
        );
    }
    for m in [0.0, -0.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let e = Rope::from_inv_freq(8, Layout::Interleaved, &good, m).unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidParameter {
                    what: "attention_factor",
                    ..
                }
            ),
            "attention factor {m}: {e:?}"
        );
    }
    // Empty: rotary_dim 0.
    assert_eq!(
        Rope::from_inv_freq(8, Layout::RotateHalf, &[], 1.0).unwrap_err(),
        Error::InvalidRotaryDim {
            rotary_dim: 0,
            head_dim: 8
        }
    );
    // Odd and zero head_dim.
    for hd in [0, 7, 9] {
        assert_eq!(
            Rope::from_inv_freq(hd, Layout::RotateHalf, &good, 1.0).unwrap_err(),
            Error::InvalidHeadDim { head_dim: hd }
        );
    }
    // Too many frequencies for the head, and for the inline table.
    assert_eq!(
        Rope::from_inv_freq(6, Layout::RotateHalf, &good, 1.0).unwrap_err(),
        Error::InvalidRotaryDim {
            rotary_dim: 8,
            head_dim: 6
        }
    );
    let many = vec![0.5f32; MAX_ROTARY_DIM / 2 + 1];
    assert_eq!(
        Rope::from_inv_freq(4096, Layout::RotateHalf, &many, 1.0).unwrap_err(),
        Error::RotaryDimTooLarge {
            rotary_dim: MAX_ROTARY_DIM + 2,
            max: MAX_ROTARY_DIM
        }
    );
    // The largest table fits; partial rotary is implied by a shorter list.
    let most = vec![0.5f32; MAX_ROTARY_DIM / 2];
    assert!(Rope::from_inv_freq(MAX_ROTARY_DIM, Layout::RotateHalf, &most, 1.0).is_ok());
    let r = Rope::from_inv_freq(64, Layout::RotateHalf, &good, 1.0).unwrap();
    assert_eq!(
        (r.head_dim(), r.rotary_dim(), r.rotary_offset()),
        (64, 8, 0)
    );
}

/// Configurations whose `Rope::new` frequencies are fed back.
fn configs<'a>(short: &'a [f32], long: &'a [f32]) -> Vec<RopeConfig<'a>> {
    vec![
        RopeConfig::new(128, 500_000.0, Layout::RotateHalf),
        RopeConfig::new(64, 10_000.0, Layout::Interleaved).rotary_dim(16),
        RopeConfig::new(128, 1e6, Layout::RotateHalf)
            .scaling(Scaling::Yarn(Yarn::new(4.0, 32_768))),
        RopeConfig::new(64, 150_000.0, Layout::Interleaved).scaling(Scaling::Yarn(Yarn {
            truncate: false,
            ..Yarn::new(32.0, 4096)
        })),
        RopeConfig::new(128, 500_000.0, Layout::RotateHalf).scaling(Scaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_positions: 8192,
        }),
        RopeConfig::new(96, 10_000.0, Layout::RotateHalf).scaling(Scaling::LongRope(LongRope {
            short_factor: short,
            long_factor: long,
            original_max_positions: 4096,
            max_positions: 131_072,
            use_long: true,
            attention_factor: None,
        })),
        RopeConfig::new(128, 10_000.0, Layout::RotateHalf).scaling(Scaling::DynamicNtk {
            factor: 2.0,
            max_positions: 2048,
            seq_len: 5000,
        }),
        RopeConfig::new(256, 10_000.0, Layout::Interleaved).rotary_dim(64),
    ]
}

/// Deterministic data: magnitudes 2^-6..2^6, both signs.
fn data<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            let v = (u * 12.0 - 6.0).exp2();
            T::from_f32(if s & 1 == 0 { v } else { -v } as f32)
        })
        .collect()
}

fn check_same<T: Element>(a: &Rope, b: &Rope, what: &str) {
    let hd = a.head_dim();
    let (tokens, nq, nk) = (3, 4, 2);
    let pos = [0, 131_071, -77];
    let q: Vec<T> = data(tokens * nq * hd, 1);
    let k: Vec<T> = data(tokens * nk * hd, 2);
    type Op<T> = fn(&Rope, &mut [T], usize, &[i32]) -> Result<(), Error>;
    let ops: [(&str, Op<T>); 3] = [
        ("apply", |r, x, n, p| r.apply(x, n, p)),
        ("apply_inverse", |r, x, n, p| r.apply_inverse(x, n, p)),
        ("shift", |r, x, n, p| r.shift(x, n, p)),
    ];
    for (name, op) in ops {
        let (mut x, mut y) = (q.clone(), q.clone());
        op(a, &mut x, nq, &pos).unwrap();
        op(b, &mut y, nq, &pos).unwrap();
        assert_eq!(bits(&x), bits(&y), "{what}: {name}");
    }
    let (mut q1, mut k1, mut q2, mut k2) = (q.clone(), k.clone(), q.clone(), k.clone());
    a.apply_qk(&mut q1, nq, &mut k1, nk, &pos).unwrap();
    b.apply_qk(&mut q2, nq, &mut k2, nk, &pos).unwrap();
    assert_eq!(bits(&q1), bits(&q2), "{what}: apply_qk q");
    assert_eq!(bits(&k1), bits(&k2), "{what}: apply_qk k");
    let half = a.rotary_dim() / 2;
    let (mut c1, mut s1) = (vec![0f32; 3 * half], vec![0f32; 3 * half]);
    let (mut c2, mut s2) = (c1.clone(), s1.clone());
    a.fill_cos_sin(&pos, &mut c1, &mut s1).unwrap();
    b.fill_cos_sin(&pos, &mut c2, &mut s2).unwrap();
    assert_eq!(bits(&c1), bits(&c2), "{what}: cos");
    assert_eq!(bits(&s1), bits(&s2), "{what}: sin");
}

/// `from_inv_freq(Rope::new(cfg).inv_freq(), attention_factor())` is `Rope::new(cfg)`: the
/// same accessors, and bitwise the same output from every entry point, on every backend,
/// for every dtype and rounding mode.
#[test]
fn equals_rope_new_when_fed_its_inv_freq() {
    let short: Vec<f32> = (0..48).map(|i| 1.0 + i as f32 * 0.05).collect();
    let long: Vec<f32> = (0..48).map(|i| 1.0 + i as f32 * 0.9).collect();
    for (ci, cfg) in configs(&short, &long).iter().enumerate() {
        let new = Rope::new(cfg).unwrap();
        let mine = Rope::from_inv_freq(
            cfg.head_dim,
            cfg.layout,
            new.inv_freq(),
            new.attention_factor(),
        )
        .unwrap();
        assert_eq!(mine.inv_freq(), new.inv_freq());
        assert_eq!(
            mine.attention_factor().to_bits(),
            new.attention_factor().to_bits()
        );
        assert_eq!(
            (mine.head_dim(), mine.rotary_dim(), mine.layout()),
            (new.head_dim(), new.rotary_dim(), new.layout())
        );
        assert_eq!(mine.backend(), new.backend());
        assert_eq!(mine, new, "config {ci}: the Rope values differ");
        for b in backends() {
            for rounding in [Rounding::Once, Rounding::HfEager, Rounding::HfUpcast] {
                let a = new.with_backend(b).unwrap().with_rounding(rounding);
                let c = mine.with_backend(b).unwrap().with_rounding(rounding);
                let what = format!("config {ci} [{} {rounding:?}]", b.name());
                check_same::<f32>(&a, &c, &what);
                check_same::<f16>(&a, &c, &what);
                check_same::<bf16>(&a, &c, &what);
            }
        }
    }
}

/// A rope's `Debug` shows its configuration and the frequencies as used (the `rotary_dim / 2`
/// live ones, not the unused rest of the fixed array behind them).
#[test]
fn debug_shows_the_configuration_and_the_live_frequencies() {
    let rope = Rope::new(
        &RopeConfig::new(8, 10_000.0, Layout::Interleaved)
            .rotary_dim(4)
            .rotary_offset(2),
    )
    .unwrap();
    let s = format!("{rope:?}");
    for part in [
        "head_dim: 8",
        "rotary_dim: 4",
        "rotary_offset: 2",
        "layout: Interleaved",
        "attention_factor: 1.0",
        "inv_freq: [1.0, 0.01]",
    ] {
        assert!(s.contains(part), "{part:?} missing from {s}");
    }
}
