//! The C ABI called from Rust: results against posenc's Rust API (bitwise: same code, same
//! backend), every error code, NULL/misaligned/overlapping pointers, buffers unchanged on
//! failure, and panics turned into codes.

use core::ffi::{CStr, c_char, c_int};
use core::ptr::{null, null_mut};
use posenc::{
    Layout, LongRope, Rope, RopeConfig, Scaling, Sinusoidal, SinusoidalLayout, Yarn, bf16, f16,
};
use posenc_capi::*;

fn cfg(head_dim: usize, base: f32, layout: PosencLayout) -> PosencRopeConfig {
    PosencRopeConfig {
        head_dim,
        base,
        layout,
        ..PosencRopeConfig::default()
    }
}

fn init(c: &PosencRopeConfig) -> Result<PosencRope, c_int> {
    let mut r = PosencRope::default();
    match unsafe { posenc_rope_init(c, &mut r) } {
        POSENC_OK => Ok(r),
        e => Err(e),
    }
}

fn rope(head_dim: usize, layout: PosencLayout) -> PosencRope {
    init(&cfg(head_dim, 10_000.0, layout)).unwrap()
}

fn text(p: *const c_char) -> String {
    assert!(!p.is_null());
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned()
}

fn detail() -> String {
    text(posenc_last_error_detail())
}

fn data(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.13)
        .collect()
}

const LAYOUTS: [(PosencLayout, Layout); 2] = [
    (POSENC_LAYOUT_INTERLEAVED, Layout::Interleaved),
    (POSENC_LAYOUT_ROTATE_HALF, Layout::RotateHalf),
];

// ---------------------------------------------------------------- results vs posenc

#[test]
fn apply_matches_posenc_bitwise_every_dtype_and_layout() {
    let (heads, hd, positions) = (3usize, 40usize, [0i32, 5, -7, 100_000]);
    let n = positions.len() * heads * hd;
    for (cl, l) in LAYOUTS {
        for rotary in [0usize, 16] {
            let c = PosencRopeConfig {
                rotary_dim: rotary,
                ..cfg(hd, 500_000.0, cl)
            };
            let r = init(&c).unwrap();
            let want = Rope::new(
                &RopeConfig::new(hd, 500_000.0, l).rotary_dim(if rotary == 0 {
                    hd
                } else {
                    rotary
                }),
            )
            .unwrap();
            assert_eq!(r.as_rope(), Some(&want));

            let x0 = data(n);
            for inverse in [false, true] {
                // f32
                let (mut a, mut b) = (x0.clone(), x0.clone());
                let rc = unsafe {
                    let f = if inverse {
                        posenc_rope_apply_inverse_f32
                    } else {
                        posenc_rope_apply_f32
                    };
                    f(
                        &r,
                        a.as_mut_ptr(),
                        n,
                        heads,
                        positions.as_ptr(),
                        positions.len(),
                    )
                };
                assert_eq!(rc, POSENC_OK);
                if inverse {
                    want.apply_inverse(&mut b, heads, &positions).unwrap();
                } else {
                    want.apply(&mut b, heads, &positions).unwrap();
                }
                assert_eq!(bits32(&a), bits32(&b));
                assert_ne!(bits32(&a), bits32(&x0));

                // f16
                let h0: Vec<f16> = x0.iter().map(|&v| f16::from_f32(v)).collect();
                let mut a: Vec<u16> = h0.iter().map(|v| v.to_bits()).collect();
                let mut b = h0.clone();
                let rc = unsafe {
                    let f = if inverse {
                        posenc_rope_apply_inverse_f16
                    } else {
                        posenc_rope_apply_f16
                    };
                    f(
                        &r,
                        a.as_mut_ptr(),
                        n,
                        heads,
                        positions.as_ptr(),
                        positions.len(),
                    )
                };
                assert_eq!(rc, POSENC_OK);
                if inverse {
                    want.apply_inverse(&mut b, heads, &positions).unwrap();
                } else {
                    want.apply(&mut b, heads, &positions).unwrap();
                }
                assert_eq!(a, b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());

                // bf16
                let h0: Vec<bf16> = x0.iter().map(|&v| bf16::from_f32(v)).collect();
                let mut a: Vec<u16> = h0.iter().map(|v| v.to_bits()).collect();
                let mut b = h0.clone();
                let rc = unsafe {
                    let f = if inverse {
                        posenc_rope_apply_inverse_bf16
                    } else {
                        posenc_rope_apply_bf16
                    };
                    f(
                        &r,
                        a.as_mut_ptr(),
                        n,
                        heads,
                        positions.as_ptr(),
                        positions.len(),
                    )
                };
                assert_eq!(rc, POSENC_OK);
                if inverse {
                    want.apply_inverse(&mut b, heads, &positions).unwrap();
                } else {
                    want.apply(&mut b, heads, &positions).unwrap();
                }
                assert_eq!(a, b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            }
        }
    }
}

fn bits32(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn accessors_tables_and_inv_freq_match_posenc() {
    let c = PosencRopeConfig {
        rotary_dim: 8,
        ..cfg(12, 10_000.0, POSENC_LAYOUT_ROTATE_HALF)
    };
    let r = init(&c).unwrap();
    let want = Rope::new(&RopeConfig::new(12, 10_000.0, Layout::RotateHalf).rotary_dim(8)).unwrap();
    unsafe {
        assert_eq!(posenc_rope_head_dim(&r), 12);
        assert_eq!(posenc_rope_rotary_dim(&r), 8);
        assert_eq!(posenc_rope_attention_factor(&r), 1.0);
        let mut w = [0f32; 4];
        assert_eq!(posenc_rope_inv_freq(&r, w.as_mut_ptr(), 4), POSENC_OK);
        assert_eq!(&w[..], want.inv_freq());
        let mut small = [7f32; 3];
        assert_eq!(
            posenc_rope_inv_freq(&r, small.as_mut_ptr(), 3),
            POSENC_ERR_LENGTH_MISMATCH
        );
        assert_eq!(small, [7.0; 3]);

        let p = [3i32, -2, 70_000];
        let (mut cs, mut sn) = ([0f32; 12], [0f32; 12]);
        let rc =
            posenc_rope_fill_cos_sin(&r, p.as_ptr(), 3, cs.as_mut_ptr(), 12, sn.as_mut_ptr(), 12);
        assert_eq!(rc, POSENC_OK);
        let (mut wc, mut ws) = ([0f32; 12], [0f32; 12]);
        want.fill_cos_sin(&p, &mut wc, &mut ws).unwrap();
        assert_eq!((bits32(&cs), bits32(&sn)), (bits32(&wc), bits32(&ws)));

        // apply_with_table with those tables equals apply.
        let x0 = data(3 * 2 * 12);
        let mut a = x0.clone();
        let rc = posenc_apply_with_table_f32(
            a.as_mut_ptr(),
            a.len(),
            2,
            12,
            POSENC_LAYOUT_ROTATE_HALF,
            cs.as_ptr(),
            sn.as_ptr(),
            12,
        );
        assert_eq!(rc, POSENC_OK);
        let mut b = x0.clone();
        want.apply(&mut b, 2, &p).unwrap();
        assert_eq!(bits32(&a), bits32(&b));
        let h0: Vec<f16> = x0.iter().map(|&v| f16::from_f32(v)).collect();
        let mut a: Vec<u16> = h0.iter().map(|v| v.to_bits()).collect();
        let rc = posenc_apply_with_table_f16(
            a.as_mut_ptr(),
            a.len(),
            2,
            12,
            POSENC_LAYOUT_ROTATE_HALF,
            cs.as_ptr(),
            sn.as_ptr(),
            12,
        );
        assert_eq!(rc, POSENC_OK);
        let mut b = h0.clone();
        let tokens = b.len() / 24;
        let cfg = posenc::RopeConfig::new(12, 1e4, Layout::RotateHalf).rotary_dim(2 * 12 / tokens);
        let table = posenc::Table::new(&cs, &sn, tokens).unwrap();
        posenc::Rope::new(&cfg)
            .unwrap()
            .apply(&mut b, 2, table)
            .unwrap();
        assert_eq!(a, b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        let g0: Vec<bf16> = x0.iter().map(|&v| bf16::from_f32(v)).collect();
        let mut a: Vec<u16> = g0.iter().map(|v| v.to_bits()).collect();
        let rc = posenc_apply_with_table_bf16(
            a.as_mut_ptr(),
            a.len(),
            2,
            12,
            POSENC_LAYOUT_ROTATE_HALF,
            cs.as_ptr(),
            sn.as_ptr(),
            12,
        );
        assert_eq!(rc, POSENC_OK);
        let mut b = g0.clone();
        let tokens = b.len() / 24;
        let cfg = posenc::RopeConfig::new(12, 1e4, Layout::RotateHalf).rotary_dim(2 * 12 / tokens);
        let table = posenc::Table::new(&cs, &sn, tokens).unwrap();
        posenc::Rope::new(&cfg)
            .unwrap()
            .apply(&mut b, 2, table)
            .unwrap();
        assert_eq!(a, b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    }
}

/// Builds the C scaling and checks inv_freq and the attention factor against posenc's.
fn check_scaling(head_dim: usize, base: f32, s: PosencScaling, want: Scaling<'_>) {
    let c = PosencRopeConfig {
        scaling: s,
        ..cfg(head_dim, base, POSENC_LAYOUT_ROTATE_HALF)
    };
    let r = init(&c).unwrap_or_else(|e| panic!("init failed: {e} {}", detail()));
    let w = Rope::new(&RopeConfig::new(head_dim, base, Layout::RotateHalf).scaling(want)).unwrap();
    assert_eq!(r.as_rope(), Some(&w), "{want:?}");
}

fn scaling(kind: PosencScalingKind, params: PosencScalingParams) -> PosencScaling {
    PosencScaling { kind, params }
}

#[test]
fn every_scaling_kind_maps_to_posenc() {
    let p = |linear| PosencScalingParams { linear };
    check_scaling(64, 1e4, PosencScaling::default(), Scaling::None);
    check_scaling(
        64,
        1e4,
        scaling(POSENC_SCALING_LINEAR, p(PosencLinear { factor: 4.0 })),
        Scaling::Linear { factor: 4.0 },
    );
    check_scaling(
        64,
        1e4,
        scaling(
            POSENC_SCALING_NTK,
            PosencScalingParams {
                ntk: PosencNtk { factor: 2.0 },
            },
        ),
        Scaling::Ntk { factor: 2.0 },
    );
    let d = PosencDynamicNtk {
        factor: 2.0,
        max_positions: 2048,
        seq_len: 5000,
    };
    check_scaling(
        64,
        1e4,
        scaling(
            POSENC_SCALING_DYNAMIC_NTK,
            PosencScalingParams { dynamic_ntk: d },
        ),
        Scaling::DynamicNtk {
            factor: 2.0,
            max_positions: 2048,
            seq_len: 5000,
        },
    );
    // YaRN: zero fields are HF's defaults.
    let y = PosencYarn {
        factor: 4.0,
        original_max_positions: 32_768,
        ..Default::default()
    };
    check_scaling(
        128,
        1e6,
        scaling(POSENC_SCALING_YARN, PosencScalingParams { yarn: y }),
        Scaling::Yarn(Yarn::new(4.0, 32_768)),
    );
    let y = PosencYarn {
        factor: 40.0,
        original_max_positions: 4096,
        beta_fast: 16.0,
        beta_slow: 2.0,
        mscale: 0.707,
        mscale_all_dim: 1.0,
        attention_factor: 0.0,
        no_truncate: 1,
    };
    check_scaling(
        64,
        1e4,
        scaling(POSENC_SCALING_YARN, PosencScalingParams { yarn: y }),
        Scaling::Yarn(Yarn {
            beta_fast: 16.0,
            beta_slow: 2.0,
            mscale: Some(0.707),
            mscale_all_dim: Some(1.0),
            truncate: false,
            ..Yarn::new(40.0, 4096)
        }),
    );
    let y = PosencYarn {
        attention_factor: 1.5,
        ..y
    };
    check_scaling(
        64,
        1e4,
        scaling(POSENC_SCALING_YARN, PosencScalingParams { yarn: y }),
        Scaling::Yarn(Yarn {
            beta_fast: 16.0,
            beta_slow: 2.0,
            mscale: Some(0.707),
            mscale_all_dim: Some(1.0),
            attention_factor: Some(1.5),
            truncate: false,
            ..Yarn::new(40.0, 4096)
        }),
    );
    let l = PosencLlama3 {
        factor: 8.0,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_positions: 8192,
    };
    check_scaling(
        128,
        500_000.0,
        scaling(POSENC_SCALING_LLAMA3, PosencScalingParams { llama3: l }),
        Scaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_positions: 8192,
        },
    );
    let (short, long): (Vec<f32>, Vec<f32>) = (
        (0..32).map(|i| 1.0 + i as f32 * 0.01).collect(),
        (0..32).map(|i| 2.0 + i as f32 * 0.1).collect(),
    );
    for (use_long, af) in [(0u8, 0.0f32), (1, 0.0), (1, 1.25)] {
        let lr = PosencLongRope {
            short_factor: short.as_ptr(),
            short_factor_len: 32,
            long_factor: long.as_ptr(),
            long_factor_len: 32,
            original_max_positions: 4096,
            max_positions: 131_072,
            attention_factor: af,
            use_long,
        };
        check_scaling(
            64,
            1e4,
            scaling(
                POSENC_SCALING_LONGROPE,
                PosencScalingParams { longrope: lr },
            ),
            Scaling::LongRope(LongRope {
                short_factor: &short,
                long_factor: &long,
                original_max_positions: 4096,
                max_positions: 131_072,
                use_long: use_long != 0,
                attention_factor: if af == 0.0 { None } else { Some(af) },
            }),
        );
    }
    let f: Vec<f32> = (0..32).map(|i| 1.0 + i as f32).collect();
    let ff = PosencFreqFactors {
        factors: f.as_ptr(),
        len: 32,
    };
    check_scaling(
        64,
        1e4,
        scaling(
            POSENC_SCALING_FREQ_FACTORS,
            PosencScalingParams { freq_factors: ff },
        ),
        Scaling::FreqFactors(&f),
    );
    let q = PosencProportional {
        partial_rotary_factor: 0.25,
        factor: 0.0,
    };
    check_scaling(
        64,
        1e4,
        scaling(
            POSENC_SCALING_PROPORTIONAL,
            PosencScalingParams { proportional: q },
        ),
        Scaling::Proportional {
            partial_rotary_factor: 0.25,
            factor: 1.0,
        },
    );
    let q = PosencProportional {
        partial_rotary_factor: 0.5,
        factor: 8.0,
    };
    check_scaling(
        64,
        1e4,
        scaling(
            POSENC_SCALING_PROPORTIONAL,
            PosencScalingParams { proportional: q },
        ),
        Scaling::Proportional {
            partial_rotary_factor: 0.5,
            factor: 8.0,
        },
    );
}

#[test]
fn yarn_attention_factor_reaches_c() {
    let y = PosencYarn {
        factor: 4.0,
        original_max_positions: 32_768,
        ..Default::default()
    };
    let c = PosencRopeConfig {
        scaling: scaling(POSENC_SCALING_YARN, PosencScalingParams { yarn: y }),
        ..cfg(128, 1e6, POSENC_LAYOUT_ROTATE_HALF)
    };
    let r = init(&c).unwrap();
    let a = unsafe { posenc_rope_attention_factor(&r) };
    assert!((a - (0.1 * 4f32.ln() + 1.0)).abs() < 1e-6);
}

#[test]
fn sinusoidal_matches_posenc_bitwise() {
    for (cl, l) in [
        (POSENC_SINUSOIDAL_INTERLEAVED, SinusoidalLayout::Interleaved),
        (POSENC_SINUSOIDAL_SPLIT, SinusoidalLayout::Split),
        (
            POSENC_SINUSOIDAL_SPLIT_COS_FIRST,
            SinusoidalLayout::SplitCosFirst,
        ),
    ] {
        let pe = Sinusoidal::new(10, 10_000.0, l).unwrap();
        let pos = [4i32, -3, 1_000_000];
        unsafe {
            let mut a = [0f32; 30];
            assert_eq!(
                posenc_sinusoidal_fill_f32(10, 10_000.0, cl, a.as_mut_ptr(), 30, 17),
                POSENC_OK
            );
            let mut b = [0f32; 30];
            pe.fill(&mut b, 17).unwrap();
            assert_eq!(bits32(&a), bits32(&b));

            assert_eq!(
                posenc_sinusoidal_fill_positions_f32(
                    10,
                    10_000.0,
                    cl,
                    a.as_mut_ptr(),
                    30,
                    pos.as_ptr(),
                    3
                ),
                POSENC_OK
            );
            pe.fill_positions(&mut b, &pos).unwrap();
            assert_eq!(bits32(&a), bits32(&b));

            let x0 = data(30);
            let (mut a, mut b) = (x0.clone(), x0.clone());
            assert_eq!(
                posenc_sinusoidal_add_f32(10, 10_000.0, cl, a.as_mut_ptr(), 30, pos.as_ptr(), 3),
                POSENC_OK
            );
            pe.add(&mut b, &pos).unwrap();
            assert_eq!(bits32(&a), bits32(&b));

            // f16 and bf16: fill, fill_positions, add.
            let mut a = [0u16; 30];
            let mut b = [f16::ZERO; 30];
            assert_eq!(
                posenc_sinusoidal_fill_f16(10, 10_000.0, cl, a.as_mut_ptr(), 30, 2),
                POSENC_OK
            );
            pe.fill(&mut b, 2).unwrap();
            assert_eq!(
                a.to_vec(),
                b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
            assert_eq!(
                posenc_sinusoidal_fill_positions_f16(
                    10,
                    10_000.0,
                    cl,
                    a.as_mut_ptr(),
                    30,
                    pos.as_ptr(),
                    3
                ),
                POSENC_OK
            );
            pe.fill_positions(&mut b, &pos).unwrap();
            assert_eq!(
                a.to_vec(),
                b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
            assert_eq!(
                posenc_sinusoidal_add_f16(10, 10_000.0, cl, a.as_mut_ptr(), 30, pos.as_ptr(), 3),
                POSENC_OK
            );
            pe.add(&mut b, &pos).unwrap();
            assert_eq!(
                a.to_vec(),
                b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );

            let mut a = [0u16; 30];
            let mut b = [bf16::ZERO; 30];
            assert_eq!(
                posenc_sinusoidal_fill_bf16(10, 10_000.0, cl, a.as_mut_ptr(), 30, 2),
                POSENC_OK
            );
            pe.fill(&mut b, 2).unwrap();
            assert_eq!(
                a.to_vec(),
                b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
            assert_eq!(
                posenc_sinusoidal_fill_positions_bf16(
                    10,
                    10_000.0,
                    cl,
                    a.as_mut_ptr(),
                    30,
                    pos.as_ptr(),
                    3
                ),
                POSENC_OK
            );
            pe.fill_positions(&mut b, &pos).unwrap();
            assert_eq!(
                a.to_vec(),
                b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
            assert_eq!(
                posenc_sinusoidal_add_bf16(10, 10_000.0, cl, a.as_mut_ptr(), 30, pos.as_ptr(), 3),
                POSENC_OK
            );
            pe.add(&mut b, &pos).unwrap();
            assert_eq!(
                a.to_vec(),
                b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn backend_and_version_are_static_strings() {
    let b = text(posenc_backend_name());
    assert_eq!(b, posenc::Backend::active().name());
    assert_eq!(text(posenc_version()), env!("CARGO_PKG_VERSION"));
    assert_eq!(posenc_backend_name(), posenc_backend_name()); // the same static pointer
}

// ---------------------------------------------------------------- error codes

#[test]
fn every_posenc_error_variant_has_its_own_code() {
    use posenc::Error as E;
    let all = [
        (
            E::InvalidHeadDim { head_dim: 3 },
            POSENC_ERR_INVALID_HEAD_DIM,
        ),
        (
            E::InvalidRotaryDim {
                rotary_dim: 3,
                head_dim: 4,
            },
            POSENC_ERR_INVALID_ROTARY_DIM,
        ),
        (
            E::RotaryDimTooLarge {
                rotary_dim: 1024,
                max: 512,
            },
            POSENC_ERR_ROTARY_DIM_TOO_LARGE,
        ),
        (
            E::InvalidModelDim { d_model: 3 },
            POSENC_ERR_INVALID_MODEL_DIM,
        ),
        (E::ZeroHeads, POSENC_ERR_ZERO_HEADS),
        (
            E::LengthMismatch {
                what: "x",
                expected: 1,
                actual: 2,
                formula: posenc::Formula {
                    names: &"",
                    values: [0; 3],
                },
            },
            POSENC_ERR_LENGTH_MISMATCH,
        ),
        (
            E::NotWholeRows {
                what: "x",
                len: 3,
                row: 2,
                formula: posenc::Formula {
                    names: &"",
                    values: [0; 3],
                },
            },
            POSENC_ERR_NOT_WHOLE_ROWS,
        ),
        (
            E::InvalidParameter {
                what: "base",
                value: f32::NAN,
            },
            POSENC_ERR_INVALID_PARAMETER,
        ),
        (E::ShapeOverflow, POSENC_ERR_SHAPE_OVERFLOW),
        (
            E::BackendUnavailable {
                backend: posenc::Backend::Avx512,
            },
            POSENC_ERR_BACKEND_UNAVAILABLE,
        ),
        (
            E::ParameterOutOfRange {
                what: "a",
                constraint: "b",
                value: 1.0,
            },
            POSENC_ERR_PARAMETER_OUT_OF_RANGE,
        ),
        (
            E::UnsupportedScaling { rope_type: "x" },
            POSENC_ERR_UNSUPPORTED_SCALING,
        ),
    ];
    let mut seen = std::collections::HashSet::new();
    for (e, code) in all {
        assert_eq!(error_code(&e), code, "{e:?}");
        assert!(code < 0 && seen.insert(code), "{e:?}");
    }
    // Overlapping views were a `ParameterOutOfRange` before they had a variant: same code.
    let views = E::ViewsOverlap {
        first: 0,
        second: 1,
    };
    assert_eq!(error_code(&views), POSENC_ERR_PARAMETER_OUT_OF_RANGE);
}

#[test]
fn every_code_has_a_distinct_nonempty_message() {
    let mut seen = std::collections::HashSet::new();
    for &code in [POSENC_OK].iter().chain(ALL_ERROR_CODES) {
        let m = text(posenc_error_message(code));
        assert!(!m.is_empty(), "{code}");
        assert!(seen.insert(m.clone()), "{code}: duplicate message {m}");
        assert_eq!(posenc_error_message(code), posenc_error_message(code)); // static
    }
    let unknown = text(posenc_error_message(12345));
    assert!(!unknown.is_empty() && !seen.contains(&unknown));
    let codes: std::collections::HashSet<_> = ALL_ERROR_CODES.iter().collect();
    assert_eq!(codes.len(), ALL_ERROR_CODES.len());
}

/// Asserts `rc == want` and that the thread's error detail mentions `needle`.
#[track_caller]
fn fails(rc: c_int, want: c_int, needle: &str) {
    assert_eq!(rc, want, "got {}: {}", rc, detail());
    let d = detail();
    assert!(d.contains(needle), "detail {d:?} lacks {needle:?}");
}

#[test]
fn init_errors_leave_out_unchanged() {
    let r0 = rope(8, POSENC_LAYOUT_INTERLEAVED);
    let try_init = |c: PosencRopeConfig| {
        let mut r = r0;
        let rc = unsafe { posenc_rope_init(&c, &mut r) };
        assert_eq!(r.as_rope(), r0.as_rope(), "out changed");
        rc
    };
    let base = cfg(8, 1e4, POSENC_LAYOUT_INTERLEAVED);
    fails(
        try_init(cfg(7, 1e4, 0)),
        POSENC_ERR_INVALID_HEAD_DIM,
        "head_dim",
    );
    fails(
        try_init(cfg(0, 1e4, 0)),
        POSENC_ERR_INVALID_HEAD_DIM,
        "head_dim",
    );
    fails(
        try_init(PosencRopeConfig {
            rotary_dim: 10,
            ..base
        }),
        POSENC_ERR_INVALID_ROTARY_DIM,
        "rotary_dim",
    );
    fails(
        try_init(PosencRopeConfig {
            rotary_dim: 3,
            ..base
        }),
        POSENC_ERR_INVALID_ROTARY_DIM,
        "rotary_dim",
    );
    fails(
        try_init(cfg(1024, 1e4, 0)),
        POSENC_ERR_ROTARY_DIM_TOO_LARGE,
        "1024",
    );
    fails(
        try_init(cfg(8, f32::NAN, 0)),
        POSENC_ERR_INVALID_PARAMETER,
        "base",
    );
    fails(
        try_init(cfg(8, -1.0, 0)),
        POSENC_ERR_INVALID_PARAMETER,
        "base",
    );
    fails(try_init(cfg(8, 1e4, 2)), POSENC_ERR_INVALID_ENUM, "layout");
    let bad_kind = PosencScaling {
        kind: 99,
        ..PosencScaling::default()
    };
    fails(
        try_init(PosencRopeConfig {
            scaling: bad_kind,
            ..base
        }),
        POSENC_ERR_INVALID_ENUM,
        "scaling.kind",
    );
    let lin0 = scaling(
        POSENC_SCALING_LINEAR,
        PosencScalingParams {
            linear: PosencLinear { factor: 0.0 },
        },
    );
    fails(
        try_init(PosencRopeConfig {
            scaling: lin0,
            ..base
        }),
        POSENC_ERR_INVALID_PARAMETER,
        "factor",
    );
    let l = PosencLlama3 {
        factor: 8.0,
        low_freq_factor: 4.0,
        high_freq_factor: 1.0,
        original_max_positions: 8192,
    };
    let s = scaling(POSENC_SCALING_LLAMA3, PosencScalingParams { llama3: l });
    fails(
        try_init(PosencRopeConfig { scaling: s, ..base }),
        POSENC_ERR_PARAMETER_OUT_OF_RANGE,
        "low_freq_factor",
    );
    // Factor arrays: NULL with a length, wrong length, misaligned.
    let ff = PosencFreqFactors {
        factors: null(),
        len: 4,
    };
    let s = scaling(
        POSENC_SCALING_FREQ_FACTORS,
        PosencScalingParams { freq_factors: ff },
    );
    fails(
        try_init(PosencRopeConfig { scaling: s, ..base }),
        POSENC_ERR_NULL_POINTER,
        "factors",
    );
    let ff = PosencFreqFactors {
        factors: null(),
        len: 0,
    }; // empty: valid pointer, wrong length
    let s = scaling(
        POSENC_SCALING_FREQ_FACTORS,
        PosencScalingParams { freq_factors: ff },
    );
    fails(
        try_init(PosencRopeConfig { scaling: s, ..base }),
        POSENC_ERR_LENGTH_MISMATCH,
        "",
    );
    let floats = [1f32; 8];
    let ff = PosencFreqFactors {
        factors: floats.as_ptr().cast::<u8>().wrapping_add(1).cast(),
        len: 4,
    };
    let s = scaling(
        POSENC_SCALING_FREQ_FACTORS,
        PosencScalingParams { freq_factors: ff },
    );
    fails(
        try_init(PosencRopeConfig { scaling: s, ..base }),
        POSENC_ERR_MISALIGNED_POINTER,
        "factors",
    );
    let one = [1f32; 4];
    let lr = PosencLongRope {
        short_factor: one.as_ptr(),
        short_factor_len: 4,
        long_factor: null(),
        long_factor_len: 4,
        original_max_positions: 4096,
        max_positions: 8192,
        attention_factor: 0.0,
        use_long: 0,
    };
    let s = scaling(
        POSENC_SCALING_LONGROPE,
        PosencScalingParams { longrope: lr },
    );
    fails(
        try_init(PosencRopeConfig { scaling: s, ..base }),
        POSENC_ERR_NULL_POINTER,
        "long_factor",
    );
    // NULL struct pointers.
    let mut r = r0;
    fails(
        unsafe { posenc_rope_init(null(), &mut r) },
        POSENC_ERR_NULL_POINTER,
        "cfg",
    );
    fails(
        unsafe { posenc_rope_init(&base, null_mut()) },
        POSENC_ERR_NULL_POINTER,
        "out",
    );
}

#[test]
fn apply_errors_leave_x_unchanged() {
    let r = rope(4, POSENC_LAYOUT_ROTATE_HALF);
    let x0 = data(8);
    let p = [1i32, 2];
    type F32 =
        unsafe extern "C" fn(*const PosencRope, *mut f32, usize, usize, *const i32, usize) -> c_int;
    type H =
        unsafe extern "C" fn(*const PosencRope, *mut u16, usize, usize, *const i32, usize) -> c_int;
    let f32s: [F32; 2] = [posenc_rope_apply_f32, posenc_rope_apply_inverse_f32];
    let halves: [H; 4] = [
        posenc_rope_apply_f16,
        posenc_rope_apply_bf16,
        posenc_rope_apply_inverse_f16,
        posenc_rope_apply_inverse_bf16,
    ];
    unsafe {
        for f in f32s {
            let mut x = x0.clone();
            let xp = x.as_mut_ptr();
            fails(
                f(&r, xp, 8, 1, p.as_ptr(), 1),
                POSENC_ERR_LENGTH_MISMATCH,
                "`x` has length 8, expected tokens × heads × head_dim = 1 × 1 × 4 = 4",
            );
            fails(
                f(&r, xp, 8, 0, p.as_ptr(), 2),
                POSENC_ERR_ZERO_HEADS,
                "n_heads",
            );
            fails(
                f(&r, xp, 8, 3, p.as_ptr(), 2),
                POSENC_ERR_LENGTH_MISMATCH,
                "x",
            );
            fails(
                f(&r, null_mut(), 8, 1, p.as_ptr(), 2),
                POSENC_ERR_NULL_POINTER,
                "`x`",
            );
            fails(
                f(&r, xp, 8, 1, null(), 2),
                POSENC_ERR_NULL_POINTER,
                "`positions`",
            );
            fails(
                f(null(), xp, 8, 1, p.as_ptr(), 2),
                POSENC_ERR_NULL_POINTER,
                "`rope`",
            );
            fails(
                f(&PosencRope::default(), xp, 8, 1, p.as_ptr(), 2),
                POSENC_ERR_UNINITIALIZED_ROPE,
                "posenc_rope_init",
            );
            fails(
                f(&r, xp.cast::<u8>().add(1).cast(), 4, 1, p.as_ptr(), 1),
                POSENC_ERR_MISALIGNED_POINTER,
                "`x`",
            );
            fails(
                f(&r, xp, 0, usize::MAX / 2, p.as_ptr(), 1),
                POSENC_ERR_SHAPE_OVERFLOW,
                "overflow",
            );
            fails(
                f(&r, xp, usize::MAX / 2, 1, p.as_ptr(), 2),
                POSENC_ERR_SHAPE_OVERFLOW,
                "`x`",
            );
            // x overlapping positions / the rope itself.
            fails(
                f(&r, xp, 8, 1, xp.cast::<i32>().add(2), 2),
                POSENC_ERR_OVERLAPPING_BUFFERS,
                "overlaps",
            );
            let mut rr = r;
            let rp: *mut PosencRope = &mut rr;
            fails(
                f(rp, rp.cast::<u8>().add(16).cast(), 4, 1, p.as_ptr(), 1),
                POSENC_ERR_OVERLAPPING_BUFFERS,
                "`rope`",
            );
            assert_eq!(bits32(&x), bits32(&x0));
            // NULL with zero lengths is an empty call.
            assert_eq!(f(&r, null_mut(), 0, 1, null(), 0), POSENC_OK);
        }
        for f in halves {
            let h0: Vec<u16> = x0.iter().map(|&v| f16::from_f32(v).to_bits()).collect();
            let mut x = h0.clone();
            let xp = x.as_mut_ptr();
            fails(
                f(&r, xp, 8, 1, p.as_ptr(), 1),
                POSENC_ERR_LENGTH_MISMATCH,
                "x",
            );
            fails(
                f(&r, null_mut(), 8, 1, p.as_ptr(), 2),
                POSENC_ERR_NULL_POINTER,
                "`x`",
            );
            fails(
                f(&r, xp.cast::<u8>().add(1).cast(), 4, 1, p.as_ptr(), 1),
                POSENC_ERR_MISALIGNED_POINTER,
                "`x`",
            );
            assert_eq!(x, h0);
            assert_eq!(f(&r, null_mut(), 0, 1, null(), 0), POSENC_OK);
        }
    }
}

#[test]
fn table_and_cos_sin_errors_leave_buffers_unchanged() {
    let r = rope(4, POSENC_LAYOUT_INTERLEAVED);
    let p = [1i32, 2];
    unsafe {
        let (mut c, mut s) = ([5f32; 4], [6f32; 4]);
        fails(
            posenc_rope_fill_cos_sin(&r, p.as_ptr(), 2, c.as_mut_ptr(), 3, s.as_mut_ptr(), 4),
            POSENC_ERR_LENGTH_MISMATCH,
            "cos",
        );
        // Each table has its own length: a short (or long) `sin` is refused although `cos` is
        // right, and neither table is written.
        for sin_len in [3, 5, 0] {
            fails(
                posenc_rope_fill_cos_sin(
                    &r,
                    p.as_ptr(),
                    2,
                    c.as_mut_ptr(),
                    4,
                    s.as_mut_ptr(),
                    sin_len,
                ),
                POSENC_ERR_LENGTH_MISMATCH,
                "`sin`",
            );
        }
        fails(
            posenc_rope_fill_cos_sin(&r, p.as_ptr(), 2, c.as_mut_ptr(), 4, c.as_mut_ptr(), 4),
            POSENC_ERR_OVERLAPPING_BUFFERS,
            "`cos` overlaps `sin`",
        );
        fails(
            posenc_rope_fill_cos_sin(&r, p.as_ptr(), 2, c.as_mut_ptr(), 4, null_mut(), 4),
            POSENC_ERR_NULL_POINTER,
            "sin",
        );
        fails(
            posenc_rope_fill_cos_sin(
                &r,
                c.as_ptr().cast(),
                2,
                c.as_mut_ptr(),
                4,
                s.as_mut_ptr(),
                4,
            ),
            POSENC_ERR_OVERLAPPING_BUFFERS,
            "positions",
        );
        assert_eq!((c, s), ([5.0; 4], [6.0; 4]));
        assert_eq!(
            posenc_rope_fill_cos_sin(&r, null(), 0, null_mut(), 0, null_mut(), 0),
            POSENC_OK
        );

        // apply_with_table: the brief's case, odd head_dim, and friends.
        let x0 = data(8);
        let (tc, ts) = ([1f32; 4], [0f32; 4]);
        let mut x = x0.clone();
        let xp = x.as_mut_ptr();
        fails(
            posenc_apply_with_table_f32(xp, 8, 1, 3, 0, tc.as_ptr(), ts.as_ptr(), 4),
            POSENC_ERR_INVALID_HEAD_DIM,
            "head_dim",
        );
        fails(
            posenc_apply_with_table_f32(xp, 8, 0, 4, 0, tc.as_ptr(), ts.as_ptr(), 4),
            POSENC_ERR_ZERO_HEADS,
            "n_heads",
        );
        fails(
            posenc_apply_with_table_f32(xp, 7, 1, 4, 0, tc.as_ptr(), ts.as_ptr(), 4),
            POSENC_ERR_NOT_WHOLE_ROWS,
            "x",
        );
        fails(
            posenc_apply_with_table_f32(xp, 8, 1, 4, 0, tc.as_ptr(), ts.as_ptr(), 3),
            POSENC_ERR_NOT_WHOLE_ROWS,
            "cos",
        );
        fails(
            posenc_apply_with_table_f32(xp, 4, 1, 2, 0, tc.as_ptr(), ts.as_ptr(), 4),
            POSENC_ERR_INVALID_ROTARY_DIM,
            "rotary_dim",
        );
        fails(
            posenc_apply_with_table_f32(xp, 8, 1, 4, 5, tc.as_ptr(), ts.as_ptr(), 4),
            POSENC_ERR_INVALID_ENUM,
            "layout",
        );
        fails(
            posenc_apply_with_table_f32(xp, 8, 1, 4, 0, null(), ts.as_ptr(), 4),
            POSENC_ERR_NULL_POINTER,
            "cos",
        );
        fails(
            posenc_apply_with_table_f32(xp, 8, 1, 4, 0, xp, ts.as_ptr(), 4),
            POSENC_ERR_OVERLAPPING_BUFFERS,
            "`x` overlaps `cos`",
        );
        assert_eq!(bits32(&x), bits32(&x0));
        let mut h = [0x3C00u16; 8];
        fails(
            posenc_apply_with_table_f16(h.as_mut_ptr(), 8, 1, 3, 0, tc.as_ptr(), ts.as_ptr(), 4),
            POSENC_ERR_INVALID_HEAD_DIM,
            "head_dim",
        );
        fails(
            posenc_apply_with_table_bf16(h.as_mut_ptr(), 8, 1, 3, 0, tc.as_ptr(), ts.as_ptr(), 4),
            POSENC_ERR_INVALID_HEAD_DIM,
            "head_dim",
        );
        assert_eq!(h, [0x3C00; 8]);
        assert_eq!(
            posenc_apply_with_table_f32(null_mut(), 0, 1, 4, 0, null(), null(), 0),
            POSENC_OK
        );

        let mut w = [0f32; 2];
        fails(
            posenc_rope_inv_freq(null(), w.as_mut_ptr(), 2),
            POSENC_ERR_NULL_POINTER,
            "rope",
        );
        fails(
            posenc_rope_inv_freq(&r, null_mut(), 2),
            POSENC_ERR_NULL_POINTER,
            "out",
        );
        fails(
            posenc_rope_inv_freq(&PosencRope::default(), w.as_mut_ptr(), 2),
            POSENC_ERR_UNINITIALIZED_ROPE,
            "",
        );
        assert!(posenc_rope_attention_factor(null()).is_nan());
        assert!(posenc_rope_attention_factor(&PosencRope::default()).is_nan());
        assert_eq!(posenc_rope_head_dim(null()), 0);
        assert_eq!(posenc_rope_rotary_dim(&PosencRope::default()), 0);
    }
}

#[test]
fn sinusoidal_errors_leave_buffers_unchanged() {
    let p = [0i32, 1];
    unsafe {
        let mut o = [9f32; 4];
        let op = o.as_mut_ptr();
        fails(
            posenc_sinusoidal_fill_f32(3, 1e4, 0, op, 3, 0),
            POSENC_ERR_INVALID_MODEL_DIM,
            "d_model",
        );
        fails(
            posenc_sinusoidal_fill_f32(0, 1e4, 0, op, 4, 0),
            POSENC_ERR_INVALID_MODEL_DIM,
            "d_model",
        );
        fails(
            posenc_sinusoidal_fill_f32(2, 0.0, 0, op, 4, 0),
            POSENC_ERR_INVALID_PARAMETER,
            "base",
        );
        fails(
            posenc_sinusoidal_fill_f32(2, 1e4, 3, op, 4, 0),
            POSENC_ERR_INVALID_ENUM,
            "layout",
        );
        fails(
            posenc_sinusoidal_fill_f32(4, 1e4, 0, op, 3, 0),
            POSENC_ERR_NOT_WHOLE_ROWS,
            "out",
        );
        fails(
            posenc_sinusoidal_fill_f32(2, 1e4, 0, null_mut(), 4, 0),
            POSENC_ERR_NULL_POINTER,
            "out",
        );
        fails(
            posenc_sinusoidal_fill_positions_f32(2, 1e4, 0, op, 2, p.as_ptr(), 2),
            POSENC_ERR_LENGTH_MISMATCH,
            "out",
        );
        fails(
            posenc_sinusoidal_fill_positions_f32(2, 1e4, 0, op, 4, null(), 2),
            POSENC_ERR_NULL_POINTER,
            "positions",
        );
        fails(
            posenc_sinusoidal_fill_positions_f32(2, 1e4, 0, op, 4, op.cast(), 2),
            POSENC_ERR_OVERLAPPING_BUFFERS,
            "overlaps",
        );
        fails(
            posenc_sinusoidal_add_f32(2, 1e4, 0, op, 3, p.as_ptr(), 2),
            POSENC_ERR_LENGTH_MISMATCH,
            "`x`",
        );
        fails(
            posenc_sinusoidal_add_f32(2, 1e4, 0, op, 4, op.cast::<i32>().add(3), 1),
            POSENC_ERR_OVERLAPPING_BUFFERS,
            "overlaps",
        );
        assert_eq!(o, [9.0; 4]);
        let mut h = [1u16; 4];
        fails(
            posenc_sinusoidal_fill_f16(3, 1e4, 0, h.as_mut_ptr(), 4, 0),
            POSENC_ERR_INVALID_MODEL_DIM,
            "",
        );
        fails(
            posenc_sinusoidal_fill_bf16(2, 1e4, 0, h.as_mut_ptr(), 3, 0),
            POSENC_ERR_NOT_WHOLE_ROWS,
            "",
        );
        fails(
            posenc_sinusoidal_fill_positions_f16(2, 1e4, 0, h.as_mut_ptr(), 3, p.as_ptr(), 2),
            POSENC_ERR_LENGTH_MISMATCH,
            "",
        );
        fails(
            posenc_sinusoidal_fill_positions_bf16(2, 1e4, 0, null_mut(), 4, p.as_ptr(), 2),
            POSENC_ERR_NULL_POINTER,
            "",
        );
        fails(
            posenc_sinusoidal_add_f16(2, 1e4, 0, h.as_mut_ptr(), 4, null(), 2),
            POSENC_ERR_NULL_POINTER,
            "",
        );
        fails(
            posenc_sinusoidal_add_bf16(2, 1e4, 9, h.as_mut_ptr(), 4, p.as_ptr(), 2),
            POSENC_ERR_INVALID_ENUM,
            "",
        );
        assert_eq!(h, [1; 4]);
        assert_eq!(
            posenc_sinusoidal_fill_f32(2, 1e4, 0, null_mut(), 0, 0),
            POSENC_OK
        );
        assert_eq!(
            posenc_sinusoidal_add_f32(2, 1e4, 1, null_mut(), 0, null(), 0),
            POSENC_OK
        );
    }
}

// ---------------------------------------------------------------- panics and threads

#[test]
fn panics_become_an_error_code() {
    assert_eq!(catch_panics(|| panic!("boom {}", 42)), POSENC_ERR_PANIC);
    assert!(detail().contains("boom 42"), "{}", detail());
    assert_eq!(catch_panics(|| panic!("static boom")), POSENC_ERR_PANIC);
    assert!(detail().contains("static boom"));
    assert_eq!(
        catch_panics(|| std::panic::panic_any(7u8)),
        POSENC_ERR_PANIC
    );
    // A payload whose destructor panics too.
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("bomb dropped");
        }
    }
    assert_eq!(
        catch_panics(|| std::panic::panic_any(Bomb)),
        POSENC_ERR_PANIC
    );
    // Normal results pass through.
    assert_eq!(catch_panics(|| -6), -6);
    assert_eq!(catch_panics(|| POSENC_OK), POSENC_OK);
    assert!(text(posenc_error_message(POSENC_ERR_PANIC)).contains("panic"));
}

#[test]
fn error_detail_is_per_thread_and_survives_success() {
    let r = rope(4, 0);
    let mut x = [0f32; 4];
    unsafe {
        fails(
            posenc_rope_apply_f32(&r, x.as_mut_ptr(), 3, 1, [0].as_ptr(), 1),
            POSENC_ERR_LENGTH_MISMATCH,
            "length 3",
        );
        assert_eq!(
            posenc_rope_apply_f32(&r, x.as_mut_ptr(), 4, 1, [0].as_ptr(), 1),
            POSENC_OK
        );
    }
    assert!(detail().contains("length 3"));
    std::thread::spawn(|| assert_eq!(detail(), ""))
        .join()
        .unwrap();
}

#[test]
fn one_rope_shared_by_threads_and_copied() {
    let r = rope(64, POSENC_LAYOUT_ROTATE_HALF);
    let copy = r; // a memcpy'd PosencRope is as good as the original
    let x0 = data(4 * 64);
    let mut want = x0.clone();
    unsafe {
        assert_eq!(
            posenc_rope_apply_f32(&copy, want.as_mut_ptr(), want.len(), 2, [9, 10].as_ptr(), 2),
            POSENC_OK
        );
    }
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..50 {
                    let mut x = x0.clone();
                    let rc = unsafe {
                        posenc_rope_apply_f32(&r, x.as_mut_ptr(), x.len(), 2, [9, 10].as_ptr(), 2)
                    };
                    assert_eq!(rc, POSENC_OK);
                    assert_eq!(bits32(&x), bits32(&want));
                }
            });
        }
    });
}

#[test]
fn c_struct_sizes_are_the_abi() {
    // Changing these is an ABI break: bump the library's major version and regenerate.
    assert_eq!(size_of::<PosencRope>(), 8 + POSENC_ROPE_STORAGE_WORDS * 8);
    assert_eq!(align_of::<PosencRope>(), align_of::<u64>());
    assert_eq!(POSENC_MAX_ROTARY_DIM, posenc::MAX_ROTARY_DIM);
    // The largest rotary dim fits a PosencRope.
    let r = rope(POSENC_MAX_ROTARY_DIM, 0);
    assert_eq!(unsafe { posenc_rope_rotary_dim(&r) }, POSENC_MAX_ROTARY_DIM);
}
