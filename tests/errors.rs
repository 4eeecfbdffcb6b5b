//! Bad input (DESIGN.md "Tests" 4): every error path of every public function, with the exact
//! [`Error`] asserted and every caller buffer compared bit for bit before and after (the
//! buffers hold a recognisable pattern with NaN payloads first); `Display` and
//! `core::error::Error`; and a proptest that throws random shapes, lengths and parameters at
//! every entry point inside `catch_unwind`: no panic, and an `Err` leaves every buffer as it
//! was.
//!
//! Errors are compared through their `Debug` text, which is exact (field by field) and, unlike
//! `PartialEq`, equates an `InvalidParameter` holding NaN with itself.
//!
//! Runtime: well under 1 s at the test profile's opt-level 1 (10 s more if
//! `sinusoidal_zero_rows_with_huge_d_model_returns_promptly` regresses and times out).

use posenc::{
    Backend, Element, Error, Formula, Layout, LongRope, MAX_ROTARY_DIM, Rope, RopeConfig, Scaling,
    Sinusoidal, SinusoidalLayout, Table, View, Yarn, bf16, f16,
};
use proptest::prelude::*;
use std::panic::{AssertUnwindSafe, catch_unwind};

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// The formula of a token-major buffer: `tokens × heads × head_dim`.
fn rows(tokens: usize, heads: usize, head_dim: usize) -> Formula {
    Formula {
        names: &"tokens × heads × head_dim",
        values: [tokens, heads, head_dim],
    }
}

/// The formula of a cos or sin table: `tokens × rotary_dim/2`.
fn table(tokens: usize, half: usize) -> Formula {
    Formula {
        names: &"tokens × rotary_dim/2",
        values: [tokens, half, 0],
    }
}

trait Dt: Element {
    fn bits(self) -> u32;
    /// The i-th value of the recognisable pattern: NaNs with payloads (quiet and
    /// signalling, both signs), subnormals, ±0, infinities and ordinary values.
    fn pattern(i: usize) -> Self;
}

impl Dt for f32 {
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn pattern(i: usize) -> Self {
        let i32_ = i as u32;
        f32::from_bits(match i % 8 {
            0 => 0x7FC0_0000 | ((0xA5A5 + i32_) & 0x3F_FFFF), // quiet NaN, payload
            1 => 0xFF80_0001 + (i32_ & 0xFFFF),               // signalling NaN, negative
            2 => (-(i as f32) - 0.25).to_bits(),
            3 => 0x0000_0001 + i32_, // subnormal
            4 => 0x8000_0000,        // −0
            5 => 0x7F80_0000,        // +inf
            6 => (i as f32 * 1.5).to_bits(),
            _ => 0x7FBF_FF00 | (i32_ & 0xFF), // signalling NaN, large payload
        })
    }
}

impl Dt for f16 {
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn pattern(i: usize) -> Self {
        let k = i as u16;
        f16::from_bits(match i % 8 {
            0 => 0x7E00 | (k & 0x1FF), // quiet NaN
            1 => 0xFC01 + (k & 0xFF),  // signalling NaN, negative
            2 => f16::from_f32(-(i as f32) - 0.25).to_bits(),
            3 => 0x0001 + (k & 0x3FF), // subnormal
            4 => 0x8000,
            5 => 0x7C00,
            6 => f16::from_f32(i as f32 * 1.5).to_bits(),
            _ => 0x7D00 | (k & 0xFF),
        })
    }
}

impl Dt for bf16 {
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn pattern(i: usize) -> Self {
        let k = i as u16;
        bf16::from_bits(match i % 8 {
            0 => 0x7FC0 | (k & 0x3F),
            1 => 0xFF81 + (k & 0x3F),
            2 => bf16::from_f32(-(i as f32) - 0.25).to_bits(),
            3 => 0x0001 + (k & 0x7F),
            4 => 0x8000,
            5 => 0x7F80,
            6 => bf16::from_f32(i as f32 * 1.5).to_bits(),
            _ => 0x7FA0 | (k & 0x1F),
        })
    }
}

fn pat<T: Dt>(n: usize) -> Vec<T> {
    (0..n).map(T::pattern).collect()
}

fn bits<T: Dt>(x: &[T]) -> Vec<u32> {
    x.iter().map(|v| v.bits()).collect()
}

/// Asserts `got` is exactly `want` (Debug text, so NaN values compare equal), and that its
/// Display is non-empty.
#[track_caller]
fn assert_err(got: Result<(), Error>, want: Error, ctx: &str) {
    match got {
        Ok(()) => panic!("{ctx}: expected {want:?}, got Ok"),
        Err(e) => {
            assert_eq!(format!("{e:?}"), format!("{want:?}"), "{ctx}");
            assert!(!e.to_string().is_empty(), "{ctx}: empty Display");
        }
    }
}

/// Runs `f` on a pattern-filled buffer of `n` elements and asserts the error and that the
/// buffer kept every bit.
#[track_caller]
fn expect_x<T: Dt>(
    n: usize,
    want: Error,
    ctx: &str,
    f: impl FnOnce(&mut [T]) -> Result<(), Error>,
) {
    let before = pat::<T>(n);
    let mut x = before.clone();
    let r = f(&mut x);
    assert_err(r, want, &format!("{ctx} ({:?})", T::DTYPE));
    assert_eq!(
        bits(&x),
        bits(&before),
        "{ctx} ({:?}): buffer changed",
        T::DTYPE
    );
}

/// [`expect_x`] for f32, f16 and bf16.
macro_rules! for_dtypes {
    ($n:expr, $want:expr, $ctx:expr, |$x:ident| $body:expr) => {{
        expect_x::<f32>($n, $want, $ctx, |$x| $body);
        expect_x::<f16>($n, $want, $ctx, |$x| $body);
        expect_x::<bf16>($n, $want, $ctx, |$x| $body);
    }};
}

fn rope(head_dim: usize, rotary_dim: usize) -> Rope {
    Rope::new(&RopeConfig::new(head_dim, 10_000.0, Layout::RotateHalf).rotary_dim(rotary_dim))
        .unwrap()
}

fn unavailable() -> Vec<Backend> {
    Backend::ALL
        .iter()
        .copied()
        .filter(|b| !b.is_available())
        .collect()
}

const BAD_POSITIVE: [f32; 7] = [
    f32::NAN,
    -f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.0,
    -0.0,
    -1.0,
];

// ---------------------------------------------------------------------------------------
// Rope::new
// ---------------------------------------------------------------------------------------

fn new_err(cfg: RopeConfig<'_>) -> Result<(), Error> {
    Rope::new(&cfg).map(|_| ())
}

#[test]
fn rope_new_bad_head_dim() {
    for hd in [0usize, 1, 7, 63, usize::MAX] {
        assert_err(
            new_err(RopeConfig::new(hd, 1e4, Layout::RotateHalf)),
            Error::InvalidHeadDim { head_dim: hd },
            &format!("head_dim {hd}"),
        );
    }
    // Dimensions are checked before the base.
    assert_err(
        new_err(RopeConfig::new(0, f32::NAN, Layout::Interleaved)),
        Error::InvalidHeadDim { head_dim: 0 },
        "head_dim 0 with NaN base",
    );
}

#[test]
fn rope_new_bad_rotary_dim() {
    for (hd, rd) in [
        (64usize, 0usize),
        (64, 1),
        (64, 33),
        (64, 66),
        (64, 128),
        (2, 4),
        (64, usize::MAX),
    ] {
        assert_err(
            new_err(RopeConfig::new(hd, 1e4, Layout::RotateHalf).rotary_dim(rd)),
            Error::InvalidRotaryDim {
                rotary_dim: rd,
                head_dim: hd,
            },
            &format!("head_dim {hd} rotary_dim {rd}"),
        );
    }
    for (hd, rd) in [
        (MAX_ROTARY_DIM + 2, MAX_ROTARY_DIM + 2),
        (4096, 1024),
        (usize::MAX - 1, usize::MAX - 1),
    ] {
        assert_err(
            new_err(RopeConfig::new(hd, 1e4, Layout::RotateHalf).rotary_dim(rd)),
            Error::RotaryDimTooLarge {
                rotary_dim: rd,
                max: MAX_ROTARY_DIM,
            },
            &format!("head_dim {hd} rotary_dim {rd}"),
        );
    }
    // The largest allowed.
    assert!(
        Rope::new(&RopeConfig::new(4096, 1e4, Layout::RotateHalf).rotary_dim(MAX_ROTARY_DIM))
            .is_ok()
    );
}

#[test]
fn rope_new_bad_base() {
    for base in BAD_POSITIVE {
        assert_err(
            new_err(RopeConfig::new(64, base, Layout::RotateHalf)),
            Error::InvalidParameter {
                what: "base",
                value: base,
            },
            &format!("base {base}"),
        );
    }
    // A positive base so small that frequencies exceed 2^16 rad per position (and then
    // overflow f32) is refused, not used: the first frequency past the bound is reported.
    match Rope::new(&RopeConfig::new(64, 1e-45, Layout::RotateHalf)) {
        Err(Error::ParameterOutOfRange {
            what: "inv_freq",
            value,
            ..
        }) => assert!(value > 65_536.0),
        other => panic!("base 1e-45: expected ParameterOutOfRange(inv_freq), got {other:?}"),
    }
    // The same for a tiny linear factor (the fuzzer's case: inv_freq 5e15, where the x86
    // tiers and the scalar reduction would disagree on the quadrant).
    let tiny =
        RopeConfig::new(2, 1e4, Layout::RotateHalf).scaling(Scaling::Linear { factor: 2e-16 });
    assert!(matches!(
        Rope::new(&tiny),
        Err(Error::ParameterOutOfRange {
            what: "inv_freq",
            ..
        })
    ));
    // 2^16 itself is accepted, through Rope::from_inv_freq too; just above it is not.
    assert!(Rope::from_inv_freq(2, Layout::RotateHalf, &[65_536.0], 1.0).is_ok());
    assert!(Rope::from_inv_freq(2, Layout::RotateHalf, &[65_537.0], 1.0).is_err());
}

#[test]
fn rope_new_bad_linear_factor() {
    for factor in BAD_POSITIVE {
        assert_err(
            new_err(
                RopeConfig::new(64, 1e4, Layout::RotateHalf).scaling(Scaling::Linear { factor }),
            ),
            Error::InvalidParameter {
                what: "factor",
                value: factor,
            },
            &format!("factor {factor}"),
        );
    }
    // A subnormal factor makes the frequencies overflow.
    match Rope::new(
        &RopeConfig::new(64, 1e4, Layout::RotateHalf).scaling(Scaling::Linear { factor: 1e-45 }),
    ) {
        Err(Error::InvalidParameter {
            what: "inv_freq",
            value,
        }) => assert!(!value.is_finite()),
        other => panic!("factor 1e-45: expected InvalidParameter(inv_freq), got {other:?}"),
    }
}

/// Every declared scheme, with sensible parameters: either implemented (`Ok`) or refused with
/// `UnsupportedScaling` naming it (the contract of this release), never another error. With
/// a NaN factor: an error (any), never `Ok`.
#[test]
fn rope_new_scaling_variants() {
    static SHORT: [f32; 32] = [1.0; 32];
    static NAN_LIST: [f32; 32] = [f32::NAN; 32];
    let schemes = |f: f32, list: &'static [f32]| -> Vec<(&'static str, Scaling<'static>)> {
        vec![
            ("ntk", Scaling::Ntk { factor: f }),
            (
                "dynamic",
                Scaling::DynamicNtk {
                    factor: f,
                    max_positions: 4096,
                    seq_len: 8192,
                },
            ),
            ("yarn", Scaling::Yarn(Yarn::new(f, 4096))),
            (
                "llama3",
                Scaling::Llama3 {
                    factor: f,
                    low_freq_factor: 1.0,
                    high_freq_factor: 4.0,
                    original_max_positions: 8192,
                },
            ),
            (
                "longrope",
                Scaling::LongRope(LongRope {
                    short_factor: list,
                    long_factor: list,
                    original_max_positions: 4096,
                    max_positions: 131_072,
                    use_long: true,
                    attention_factor: None,
                }),
            ),
            ("freq_factors", Scaling::FreqFactors(list)),
        ]
    };
    for (name, scaling) in schemes(4.0, &SHORT) {
        let cfg = RopeConfig::new(64, 1e4, Layout::RotateHalf).scaling(scaling);
        match Rope::new(&cfg) {
            Ok(r) => assert!(
                r.inv_freq().iter().all(|w| w.is_finite() && *w >= 0.0)
                    && r.attention_factor().is_finite(),
                "{name}: non-finite frequencies {r:?}"
            ),
            Err(e) => assert_err(
                Err(e),
                Error::UnsupportedScaling { rope_type: name },
                &format!("scheme {name}"),
            ),
        }
    }
    for (name, scaling) in schemes(f32::NAN, &NAN_LIST) {
        let cfg = RopeConfig::new(64, 1e4, Layout::RotateHalf).scaling(scaling);
        let r = Rope::new(&cfg);
        assert!(r.is_err(), "{name} with NaN parameters: {r:?}");
        assert!(!r.unwrap_err().to_string().is_empty());
    }
}

// ---------------------------------------------------------------------------------------
// with_backend
// ---------------------------------------------------------------------------------------

/// Every backend this CPU lacks is refused by every entry point that takes one, and the
/// buffers are untouched. (No such backend on a CPU that has them all: the loop is empty.)
#[test]
fn unavailable_backends_are_refused() {
    let r = rope(8, 8);
    let pe = Sinusoidal::new(8, 1e4, SinusoidalLayout::Split).unwrap();
    for b in unavailable() {
        assert_eq!(
            format!("{:?}", r.with_backend(b)),
            format!(
                "{:?}",
                Err::<Rope, _>(Error::BackendUnavailable { backend: b })
            )
        );
        assert_eq!(
            format!("{:?}", pe.with_backend(b)),
            format!(
                "{:?}",
                Err::<Sinusoidal, _>(Error::BackendUnavailable { backend: b })
            )
        );
    }
    println!("unavailable here: {:?}", unavailable());
}

/// Every backend this CPU has is accepted, and the rope then reports it: the backends give the
/// same bits, so only the accessor tells that a test asked for `Scalar` and ran `Scalar`.
#[test]
fn available_backends_are_taken_as_asked() {
    let r = rope(8, 8);
    for b in Backend::available() {
        assert_eq!(r.with_backend(b).unwrap().backend(), b);
    }
}

// ---------------------------------------------------------------------------------------
// apply / apply_inverse
// ---------------------------------------------------------------------------------------

#[test]
fn apply_errors() {
    let r = rope(8, 4);
    // The same checks for both entry points (and every dtype, below).
    let cases: &[(&str, usize, usize, &[i32], Error)] = &[
        ("zero heads", 16, 0, &[0, 1], Error::ZeroHeads),
        ("zero heads, empty", 0, 0, &[], Error::ZeroHeads),
        (
            "x one too long",
            17,
            2,
            &[0],
            Error::LengthMismatch {
                what: "x",
                expected: 16,
                actual: 17,
                formula: rows(1, 2, 8),
            },
        ),
        (
            "x one too short",
            15,
            2,
            &[0],
            Error::LengthMismatch {
                what: "x",
                expected: 16,
                actual: 15,
                formula: rows(1, 2, 8),
            },
        ),
        (
            "positions too long",
            16,
            1,
            &[0, 1, 2],
            Error::LengthMismatch {
                what: "x",
                expected: 24,
                actual: 16,
                formula: rows(3, 1, 8),
            },
        ),
        (
            "positions too short",
            16,
            1,
            &[5],
            Error::LengthMismatch {
                what: "x",
                expected: 8,
                actual: 16,
                formula: rows(1, 1, 8),
            },
        ),
        (
            "no positions, some x",
            8,
            1,
            &[],
            Error::LengthMismatch {
                what: "x",
                expected: 0,
                actual: 8,
                formula: rows(0, 1, 8),
            },
        ),
        (
            "heads × head_dim overflows",
            8,
            usize::MAX,
            &[0],
            Error::ShapeOverflow,
        ),
        (
            "heads × head_dim overflows, empty",
            0,
            usize::MAX / 4,
            &[],
            Error::ShapeOverflow,
        ),
        (
            "tokens × row overflows",
            8,
            usize::MAX / 8,
            &[0, 1],
            Error::ShapeOverflow,
        ),
    ];
    for &(what, n, heads, positions, want) in cases {
        for_dtypes!(n, want, &format!("apply: {what}"), |x| r
            .apply(x, heads, positions));
        for_dtypes!(n, want, &format!("apply_inverse: {what}"), |x| r
            .apply_inverse(x, heads, positions));
    }
    // Boundaries that are not errors: no tokens with a huge (but representable) row.
    let mut empty: [f32; 0] = [];
    r.apply(&mut empty, usize::MAX / 8, &[0i32; 0]).unwrap();
    r.apply_inverse(&mut empty, 1, &[0i32; 0]).unwrap();
}

// ---------------------------------------------------------------------------------------
// fill_cos_sin
// ---------------------------------------------------------------------------------------

#[test]
fn fill_cos_sin_errors() {
    let r = rope(16, 8); // 4 pairs
    let positions = [0, 1, -2];
    for (nc, ns, want) in [
        (
            11,
            12,
            Error::LengthMismatch {
                what: "cos",
                expected: 12,
                actual: 11,
                formula: table(3, 4),
            },
        ),
        (
            13,
            12,
            Error::LengthMismatch {
                what: "cos",
                expected: 12,
                actual: 13,
                formula: table(3, 4),
            },
        ),
        (
            0,
            0,
            Error::LengthMismatch {
                what: "cos",
                expected: 12,
                actual: 0,
                formula: table(3, 4),
            },
        ),
        (
            12,
            11,
            Error::LengthMismatch {
                what: "sin",
                expected: 12,
                actual: 11,
                formula: table(3, 4),
            },
        ),
        (
            12,
            16,
            Error::LengthMismatch {
                what: "sin",
                expected: 12,
                actual: 16,
                formula: table(3, 4),
            },
        ),
    ] {
        let (c0, s0) = (pat::<f32>(nc), pat::<f32>(ns));
        let (mut c, mut s) = (c0.clone(), s0.clone());
        assert_err(
            r.fill_cos_sin(&positions, &mut c, &mut s),
            want,
            &format!("fill_cos_sin cos {nc} sin {ns}"),
        );
        assert_eq!(bits(&c), bits(&c0), "cos changed");
        assert_eq!(bits(&s), bits(&s0), "sin changed");
    }
    // No positions: empty tables are right, anything else is not.
    r.fill_cos_sin(&[0i32; 0], &mut [], &mut []).unwrap();
    let mut c = pat::<f32>(4);
    let c0 = c.clone();
    assert_err(
        r.fill_cos_sin(&[0i32; 0], &mut c, &mut []),
        Error::LengthMismatch {
            what: "cos",
            expected: 0,
            actual: 4,
            formula: table(0, 4),
        },
        "fill_cos_sin no positions",
    );
    assert_eq!(bits(&c), bits(&c0));
}

// ---------------------------------------------------------------------------------------
// Table, Rope::table, rotating from a table
// ---------------------------------------------------------------------------------------

/// A formula of one named quantity.
fn one(name: &'static &'static str, value: usize) -> Formula {
    Formula {
        names: name,
        values: [value, 0, 0],
    }
}

#[test]
#[allow(clippy::needless_borrows_for_generic_args)] // `&three`: the `&Table` form is API too
fn table_errors() {
    // Table::new: (what, cos len, sin len, tokens, error)
    let cases: &[(&str, usize, usize, usize, Error)] = &[
        (
            "sin shorter than cos",
            8,
            6,
            1,
            Error::LengthMismatch {
                what: "sin",
                expected: 8,
                actual: 6,
                formula: one(&"cos.len()", 8),
            },
        ),
        (
            "sin longer than cos",
            8,
            10,
            1,
            Error::LengthMismatch {
                what: "sin",
                expected: 8,
                actual: 10,
                formula: one(&"cos.len()", 8),
            },
        ),
        (
            "no tokens, non-empty cos",
            4,
            4,
            0,
            Error::LengthMismatch {
                what: "cos",
                expected: 0,
                actual: 4,
                formula: Formula {
                    names: &"",
                    values: [0; 3],
                },
            },
        ),
        (
            "cos not whole tokens",
            7,
            7,
            3,
            Error::NotWholeRows {
                what: "cos",
                len: 7,
                row: 3,
                formula: Formula {
                    names: &"rotary_dim/2 × tokens",
                    values: [0, 3, 0],
                },
            },
        ),
    ];
    for &(what, nc, ns, tokens, want) in cases {
        let (c, s) = (pat::<f32>(nc), pat::<f32>(ns));
        assert_eq!(Table::new(&c, &s, tokens), Err(want), "{what}");
    }
    // A table whose pairs per token differ from the rope's rotary_dim / 2, and one whose
    // token count differs from the buffer's: refused by every entry point, nothing written.
    for b in Backend::ALL.iter().copied().filter(|b| b.is_available()) {
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            let rope = Rope::new(&RopeConfig::new(8, 1e4, layout).rotary_dim(4))
                .unwrap()
                .with_backend(b)
                .unwrap();
            let (c6, s6) = (pat::<f32>(6), pat::<f32>(6));
            let three = Table::new(&c6, &s6, 2).unwrap(); // 2 tokens × 3 pairs
            let want = Error::LengthMismatch {
                what: "table pairs per token",
                expected: 2,
                actual: 3,
                formula: Formula {
                    names: &"rotary_dim/2",
                    values: [2, 0, 0],
                },
            };
            for_dtypes!(16, want, &format!("{b:?} {layout:?}: pairs"), |x| {
                rope.apply(x, 1, three)
            });
            for_dtypes!(16, want, &format!("{b:?} {layout:?}: inverse pairs"), |x| {
                rope.apply_inverse(x, 1, &three)
            });
            let (c4, s4) = (pat::<f32>(4), pat::<f32>(4));
            let two = Table::new(&c4, &s4, 2).unwrap(); // 2 tokens × 2 pairs
            let want = Error::LengthMismatch {
                what: "x",
                expected: 2 * 3 * 8,
                actual: 16,
                formula: Formula {
                    names: &"tokens × heads × head_dim",
                    values: [2, 3, 8],
                },
            };
            for_dtypes!(16, want, &format!("{b:?} {layout:?}: tokens"), |x| {
                rope.apply(x, 3, two)
            });
        }
    }
    // Rope::table: a buffer too short for the positions.
    let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
    let mut buf = [7.0f32; 15];
    assert_eq!(
        rope.table(&[1, 2], &mut buf),
        Err(Error::LengthMismatch {
            what: "buf (at least)",
            expected: 16,
            actual: 15,
            formula: Formula {
                names: &"2 × tokens × rotary_dim/2",
                values: [2, 2, 4]
            },
        })
    );
    assert!(buf.iter().all(|&v| v == 7.0), "nothing written");
    // Positions of a wider type that do not fit an i32: every entry point, nothing written.
    let big = [0i64, 1, i64::from(i32::MAX) + 1];
    assert_eq!(
        rope.table(&big, &mut [7.0f32; 48]),
        Err(Error::PositionOutOfRange {
            what: "positions",
            index: 2,
            value: i64::from(i32::MAX) + 1,
        })
    );
    let want = Error::PositionOutOfRange {
        what: "positions",
        index: 0,
        value: -(1 << 40),
    };
    for_dtypes!(8, want, "apply i64", |x| rope.apply(x, 1, &[-(1i64 << 40)]));
    let want = Error::PositionOutOfRange {
        what: "positions",
        index: 1,
        value: i64::MAX,
    };
    for_dtypes!(16, want, "apply u64", |x| rope.apply(
        x,
        1,
        &[0u64, u64::MAX]
    ));
    // Boundaries that are not errors: no tokens; the edges of the domain in any type.
    let mut empty: [f32; 0] = [];
    rope.apply(&mut empty, 3, Table::new(&[], &[], 0).unwrap())
        .unwrap();
    let (mut a, mut b) = ([0.5f32; 16], [0.5f32; 16]);
    rope.apply(&mut a, 1, &[-(1 << 26), 1 << 26]).unwrap();
    rope.apply(&mut b, 1, &[-(1i64 << 26), 1i64 << 26]).unwrap();
    assert_eq!(bits(&a), bits(&b));
}

// ---------------------------------------------------------------------------------------
// Sinusoidal
// ---------------------------------------------------------------------------------------

#[test]
fn sinusoidal_new_errors() {
    for d in [0usize, 1, 7, usize::MAX] {
        for layout in [SinusoidalLayout::Interleaved, SinusoidalLayout::Split] {
            assert_err(
                Sinusoidal::new(d, 1e4, layout).map(|_| ()),
                Error::InvalidModelDim { d_model: d },
                &format!("d_model {d}"),
            );
        }
    }
    for base in BAD_POSITIVE {
        assert_err(
            Sinusoidal::new(64, base, SinusoidalLayout::Interleaved).map(|_| ()),
            Error::InvalidParameter {
                what: "base",
                value: base,
            },
            &format!("sinusoidal base {base}"),
        );
    }
}

#[test]
fn sinusoidal_call_errors() {
    for layout in [SinusoidalLayout::Interleaved, SinusoidalLayout::Split] {
        let pe = Sinusoidal::new(8, 1e4, layout).unwrap();
        for n in [1usize, 7, 9, 23] {
            for_dtypes!(
                n,
                Error::NotWholeRows {
                    what: "out",
                    len: n,
                    row: 8,
                    formula: Formula {
                        names: &"positions × d_model",
                        values: [0, 8, 0],
                    },
                },
                &format!("fill {n}"),
                |x| pe.fill(x, 3)
            );
        }
        for (n, positions) in [
            (16usize, &[0, 1, 2][..]),
            (16, &[4][..]),
            (8, &[][..]),
            (0, &[1][..]),
            (9, &[1][..]),
        ] {
            let expected = positions.len() * 8;
            for_dtypes!(
                n,
                Error::LengthMismatch {
                    what: "out",
                    expected,
                    actual: n,
                    formula: Formula {
                        names: &"positions × d_model",
                        values: [positions.len(), 8, 0]
                    },
                },
                &format!("fill_positions {n} {positions:?}"),
                |x| pe.fill_positions(x, positions)
            );
            for_dtypes!(
                n,
                Error::LengthMismatch {
                    what: "x",
                    expected,
                    actual: n,
                    formula: Formula {
                        names: &"positions × d_model",
                        values: [positions.len(), 8, 0]
                    },
                },
                &format!("add {n} {positions:?}"),
                |x| pe.add(x, positions)
            );
        }
        // positions × d_model overflows.
        let wide = Sinusoidal::new(usize::MAX - 1, 1e4, layout).unwrap();
        for_dtypes!(4, Error::ShapeOverflow, "fill_positions overflow", |x| wide
            .fill_positions(x, &[0, 1]));
        for_dtypes!(4, Error::ShapeOverflow, "add overflow", |x| wide
            .add(x, &[0, 1]));
        for_dtypes!(
            4,
            Error::NotWholeRows {
                what: "out",
                len: 4,
                row: usize::MAX - 1,
                formula: Formula {
                    names: &"positions × d_model",
                    values: [0, usize::MAX - 1, 0],
                },
            },
            "fill, row wider than out",
            |x| wide.fill(x, 0)
        );
    }
}

/// Zero rows are no work, whatever `d_model`: `fill(&mut [], _)`, `fill_positions(&mut [], &[])`
/// and `add(&mut [], &[])` must return at once. They must not loop over all `d_model / 2`
/// frequencies (2^62 of them here) computing nothing.
#[test]
fn sinusoidal_zero_rows_with_huge_d_model_returns_promptly() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let pe = Sinusoidal::new(usize::MAX - 1, 1e4, SinusoidalLayout::Split).unwrap();
        let mut out: [f32; 0] = [];
        let r = (
            pe.fill(&mut out, 0),
            pe.fill_positions(&mut out, &[]),
            pe.add(&mut out, &[]),
        );
        let _ = tx.send(format!("{r:?}"));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(10)) {
        Ok(r) => assert_eq!(r, "(Ok(()), Ok(()), Ok(()))"),
        Err(_) => panic!(
            "BUG: Sinusoidal::new(usize::MAX - 1, ..).fill(&mut [], 0) (and fill_positions / add \
             with no rows) has not returned after 10 s: the sinusoidal driver loops over every \
             column block of d_model/2 frequencies, computing pow() for each, even when there \
             are no rows to write"
        ),
    }
}

// ---------------------------------------------------------------------------------------
// Error itself
// ---------------------------------------------------------------------------------------

#[test]
fn error_display_and_trait() {
    // Each variant, with what its message must mention.
    let all: [(Error, &[&str]); 14] = [
        (Error::InvalidHeadDim { head_dim: 63 }, &["head_dim", "63"]),
        (
            Error::InvalidRotaryDim {
                rotary_dim: 66,
                head_dim: 64,
            },
            &["rotary_dim", "66", "64"],
        ),
        (
            Error::RotaryDimTooLarge {
                rotary_dim: 1024,
                max: MAX_ROTARY_DIM,
            },
            &["1024", "512"],
        ),
        (Error::InvalidModelDim { d_model: 7 }, &["d_model", "7"]),
        (Error::ZeroHeads, &["n_heads"]),
        (
            Error::LengthMismatch {
                what: "positions",
                expected: 16,
                actual: 17,
                formula: rows(2, 1, 8),
            },
            &[
                "`positions`",
                "17",
                "tokens × heads × head_dim = 2 × 1 × 8 = 16",
            ],
        ),
        (
            Error::NotWholeRows {
                what: "out",
                len: 9,
                row: 8,
                formula: Formula {
                    names: &"tokens × heads × head_dim",
                    values: [0, 1, 8],
                },
            },
            &["`out`", "9", "heads × head_dim = 1 × 8 = 8"],
        ),
        (
            Error::InvalidParameter {
                what: "base",
                value: f32::NAN,
            },
            &["base", "NaN"],
        ),
        (Error::ShapeOverflow, &["overflow"]),
        (
            Error::BackendUnavailable {
                backend: Backend::Portable,
            },
            &["portable"],
        ),
        (Error::UnsupportedScaling { rope_type: "yarn" }, &["yarn"]),
        (
            Error::ViewsOverlap {
                first: 1,
                second: 3,
            },
            &["`views[1]`", "`views[3]`", "overlap"],
        ),
        (
            Error::ViewsOverlap {
                first: 2,
                second: 2,
            },
            &["`views[2]`", "its own heads"],
        ),
        (
            Error::ParameterOutOfRange {
                what: "low_freq_factor",
                constraint: "must not exceed `high_freq_factor`",
                value: 4.0,
            },
            &["low_freq_factor", "high_freq_factor", "4"],
        ),
    ];
    for (e, needles) in all {
        let s = e.to_string();
        assert!(!s.trim().is_empty(), "{e:?}: empty Display");
        for n in needles {
            assert!(s.contains(n), "{e:?}: Display `{s}` does not mention `{n}`");
        }
    }
    fn is_error<E: core::error::Error + Send + Sync + 'static>(_: &E) {}
    is_error(&Error::ZeroHeads);
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(Error::ShapeOverflow);
    assert!(boxed.source().is_none());
    assert!(!boxed.to_string().is_empty());
    // `?` converts it.
    fn q() -> Result<(), Box<dyn std::error::Error>> {
        Rope::new(&RopeConfig::new(3, 1e4, Layout::RotateHalf))?;
        Ok(())
    }
    assert!(q().is_err());
}

// ---------------------------------------------------------------------------------------
// no panics, ever
// ---------------------------------------------------------------------------------------

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..=20,
        2 => prop::sample::select(vec![64usize, 96, 128, 130, 256, 512, 514, 1024]),
        1 => prop::sample::select(vec![
            usize::MAX,
            usize::MAX - 1,
            usize::MAX / 2,
            usize::MAX / 2 + 1,
            1 << 40,
            (1 << 32) + 2,
        ]),
        1 => any::<usize>(),
    ]
}

fn heads() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..=5,
        1 => prop::sample::select(vec![usize::MAX, usize::MAX / 2, 1 << 33, usize::MAX / 64]),
    ]
}

fn param() -> impl Strategy<Value = f32> {
    prop_oneof![
        2 => prop::sample::select(vec![
            f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, -1.0, 1e-45,
            1e-40, f32::MIN_POSITIVE, 0.5, 1.0, 2.0, 4.0, 1e4, 5e5, 1e38, f32::MAX,
        ]),
        1 => any::<f32>(),
        1 => 1.0f32..1e6,
    ]
}

fn position() -> impl Strategy<Value = i32> {
    prop_oneof![
        3 => -5000i32..5000,
        1 => prop::sample::select(vec![i32::MIN, i32::MIN + 1, i32::MAX, i32::MAX - 1, 0]),
        1 => any::<i32>(),
    ]
}

fn small_len() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 0usize..=40, 1 => 0usize..=600]
}

fn scaling<'a>(f: f32, g: f32, n: u32, m: u32, list: &'a [f32], pick: u8) -> Scaling<'a> {
    match pick % 8 {
        0 => Scaling::None,
        1 => Scaling::Linear { factor: f },
        2 => Scaling::Ntk { factor: f },
        3 => Scaling::DynamicNtk {
            factor: f,
            max_positions: n,
            seq_len: m,
        },
        4 => Scaling::Yarn(Yarn {
            factor: f,
            original_max_positions: n,
            beta_fast: g,
            beta_slow: f / 8.0,
            mscale: if m.is_multiple_of(2) { Some(g) } else { None },
            mscale_all_dim: if m.is_multiple_of(3) { Some(f) } else { None },
            attention_factor: if m.is_multiple_of(5) { Some(g) } else { None },
            truncate: !m.is_multiple_of(7),
        }),
        5 => Scaling::Llama3 {
            factor: f,
            low_freq_factor: g,
            high_freq_factor: f + g,
            original_max_positions: n,
        },
        6 => Scaling::LongRope(LongRope {
            short_factor: list,
            long_factor: &list[list.len() / 2..],
            original_max_positions: n,
            max_positions: m,
            use_long: n.is_multiple_of(2),
            attention_factor: if m.is_multiple_of(2) { Some(g) } else { None },
        }),
        _ => Scaling::FreqFactors(list),
    }
}

/// Runs `f` on copies of the buffers inside `catch_unwind`: no panic; on `Err` every buffer
/// is bit for bit what it was.
fn no_panic<T: Dt>(
    what: &str,
    x: &[T],
    cos: &[f32],
    sin: &[f32],
    f: impl FnOnce(&mut [T], &mut [f32], &mut [f32]) -> Result<(), Error>,
) -> Result<(), TestCaseError> {
    let (mut x2, mut c2, mut s2) = (x.to_vec(), cos.to_vec(), sin.to_vec());
    let r = catch_unwind(AssertUnwindSafe(|| f(&mut x2, &mut c2, &mut s2)));
    let r = match r {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            return Err(TestCaseError::fail(format!("{what}: panicked: {msg}")));
        }
    };
    if let Err(e) = r {
        prop_assert!(!e.to_string().is_empty());
        prop_assert_eq!(bits(&x2), bits(x), "{}: x changed on {:?}", what, e);
        prop_assert_eq!(
            c2.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            cos.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{}: cos changed on {:?}",
            what,
            e
        );
        prop_assert_eq!(
            s2.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            sin.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{}: sin changed on {:?}",
            what,
            e
        );
    }
    Ok(())
}

#[derive(Debug, Clone)]
struct Fuzz {
    head_dim: usize,
    rotary_dim: usize,
    base: f32,
    f: f32,
    g: f32,
    n: u32,
    m: u32,
    pick: u8,
    interleaved: bool,
    n_heads: usize,
    positions: Vec<i32>,
    x_len: usize,
    consistent: bool,
    cos_len: usize,
    sin_len: usize,
    list: Vec<f32>,
    backend: usize,
    d_model: usize,
    first: u32,
}

fn fuzz() -> impl Strategy<Value = Fuzz> {
    (
        (
            dim(),
            dim(),
            param(),
            param(),
            param(),
            any::<u32>(),
            any::<u32>(),
            any::<u8>(),
        ),
        (
            any::<bool>(),
            heads(),
            prop::collection::vec(position(), 0..5),
            small_len(),
            any::<bool>(),
            small_len(),
            small_len(),
        ),
        (
            prop::collection::vec(param(), 0..70),
            any::<usize>(),
            dim(),
            any::<u32>(),
        ),
    )
        .prop_map(
            |(
                (head_dim, rotary_dim, base, f, g, n, m, pick),
                (interleaved, n_heads, positions, x_len, consistent, cos_len, sin_len),
                (list, backend, d_model, first),
            )| Fuzz {
                head_dim,
                rotary_dim,
                base,
                f,
                g,
                n,
                m,
                pick,
                interleaved,
                n_heads,
                positions,
                x_len,
                consistent,
                cos_len,
                sin_len,
                list,
                backend,
                d_model,
                first,
            },
        )
}

fn fuzz_one<T: Dt>(z: &Fuzz) -> Result<(), TestCaseError> {
    let layout = if z.interleaved {
        Layout::Interleaved
    } else {
        Layout::RotateHalf
    };
    let backend = Backend::ALL[z.backend % Backend::ALL.len()];
    // Buffer lengths: random, or (when it is small) the length the other arguments imply, so
    // the success paths run too.
    let implied = z
        .positions
        .len()
        .checked_mul(z.n_heads)
        .and_then(|v| v.checked_mul(z.head_dim))
        .filter(|&v| v <= 4096);
    let x_len = match implied {
        Some(v) if z.consistent => v,
        _ => z.x_len,
    };
    // x holds NaNs, infinities and every other pattern.
    let x: Vec<T> = pat(x_len);
    let half_implied = (z.rotary_dim / 2)
        .checked_mul(z.positions.len())
        .filter(|&v| v <= 4096);
    let (cos_len, sin_len) = match half_implied {
        Some(v) if z.consistent => (v, v),
        _ => (z.cos_len, z.sin_len),
    };
    let cos: Vec<f32> = (0..cos_len).map(|i| (i as f32 * 0.37).cos()).collect();
    let sin: Vec<f32> = (0..sin_len).map(|i| (i as f32 * 0.37).sin()).collect();
    let no_buf: [f32; 0] = [];

    // Rope::new and everything on a Rope.
    let cfg = RopeConfig::new(z.head_dim, z.base, layout)
        .rotary_dim(z.rotary_dim)
        .scaling(scaling(z.f, z.g, z.n, z.m, &z.list, z.pick));
    let built = catch_unwind(AssertUnwindSafe(|| Rope::new(&cfg)));
    let rope = match built {
        Err(_) => {
            return Err(TestCaseError::fail(format!(
                "Rope::new panicked on {cfg:?}"
            )));
        }
        Ok(Ok(r)) => {
            prop_assert!(
                r.inv_freq().iter().all(|w| w.is_finite() && *w >= 0.0),
                "non-finite inv_freq from {:?}: {:?}",
                cfg,
                r
            );
            prop_assert!(
                r.attention_factor().is_finite() && r.attention_factor() > 0.0,
                "bad attention factor from {:?}: {:?}",
                cfg,
                r
            );
            Some(r)
        }
        Ok(Err(e)) => {
            prop_assert!(!e.to_string().is_empty());
            None
        }
    };
    // A valid rope with the fuzzed head_dim/rotary_dim where possible, so the calls below
    // also run when the fuzzed config is refused.
    let fallback = Rope::new(&RopeConfig::new(z.head_dim, 1e4, layout).rotary_dim(z.rotary_dim))
        .or_else(|_| Rope::new(&RopeConfig::new(8, 1e4, layout)))
        .unwrap();
    for r in rope.iter().chain(std::iter::once(&fallback)) {
        let r2 = catch_unwind(AssertUnwindSafe(|| r.with_backend(backend)));
        prop_assert!(r2.is_ok(), "with_backend panicked");
        let r = r2.unwrap().unwrap_or(*r);
        no_panic("apply", &x, &no_buf, &no_buf, |x, _, _| {
            r.apply(x, z.n_heads, &z.positions)
        })?;
        no_panic("apply_inverse", &x, &no_buf, &no_buf, |x, _, _| {
            r.apply_inverse(x, z.n_heads, &z.positions)
        })?;
        no_panic::<T>("fill_cos_sin", &[], &cos, &sin, |_, c, s| {
            r.fill_cos_sin(&z.positions, c, s)
        })?;
    }
    no_panic("table path", &x, &cos, &sin, |x, c, s| {
        let tokens = z.positions.len();
        let table = Table::new(c, s, tokens)?;
        fallback.with_backend(backend)?.apply(x, z.n_heads, table)
    })?;

    // Sinusoidal. Zero rows with a huge even d_model once looped over every frequency; that
    // case is `sinusoidal_zero_rows_with_huge_d_model_returns_promptly` (with a timeout), and
    // is kept out of the fuzzer so that a regression fails there instead of hanging here:
    // with a huge d_model the buffer is never empty.
    let sl = if z.interleaved {
        SinusoidalLayout::Interleaved
    } else {
        SinusoidalLayout::Split
    };
    let built = catch_unwind(AssertUnwindSafe(|| Sinusoidal::new(z.d_model, z.base, sl)));
    prop_assert!(built.is_ok(), "Sinusoidal::new panicked");
    if let Ok(pe) = built.unwrap() {
        let huge = z.d_model > 1 << 20;
        let out_len = if z.consistent && !huge {
            (z.positions.len() * z.d_model).min(8192)
        } else if huge {
            x_len.max(1)
        } else {
            x_len
        };
        let out: Vec<T> = pat(out_len);
        let pe = pe.with_backend(backend).unwrap_or(pe);
        no_panic("fill", &out, &no_buf, &no_buf, |o, _, _| {
            pe.fill(o, z.first)
        })?;
        no_panic("fill_positions", &out, &no_buf, &no_buf, |o, _, _| {
            pe.fill_positions(o, &z.positions)
        })?;
        no_panic("add", &out, &no_buf, &no_buf, |o, _, _| {
            pe.add(o, &z.positions)
        })?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 384,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_public_function_panics(z in fuzz()) {
        fuzz_one::<f32>(&z)?;
        fuzz_one::<f16>(&z)?;
        fuzz_one::<bf16>(&z)?;
    }
}

// ---------------------------------------------------------------------------------------
// messages: the argument by name, and the arithmetic behind the length it should have
// ---------------------------------------------------------------------------------------

/// The message of a failed call, checked to be exactly `want`.
fn message(r: Result<(), Error>, want: &str) {
    assert_eq!(r.unwrap_err().to_string(), want);
}

#[test]
fn messages_name_the_argument_and_the_formula() {
    let rope = Rope::new(&RopeConfig::new(128, 1e4, Layout::RotateHalf)).unwrap();
    // A newcomer's first mistake: 3 tokens' worth of x for 2 positions.
    let mut x = vec![0.0f32; 3 * 32 * 128];
    message(
        rope.apply(&mut x, 32, &[0, 1]),
        "`x` has length 12288, expected tokens × heads × head_dim = 2 × 32 × 128 = 8192",
    );
    message(
        rope.apply(&mut x[..12288 - 128 * 48], 48, &[0, 1, 2]),
        "`x` has length 6144, expected tokens × heads × head_dim = 3 × 48 × 128 = 18432",
    );
    // apply_qk calls its buffers q and k, each with its own head count.
    let (mut q, mut k) = (vec![0.0f32; 2 * 8 * 128], vec![0.0f32; 2 * 2 * 128]);
    message(
        rope.apply_qk(&mut q[1..], 8, &mut k, 2, &[0, 1]),
        "`q` has length 2047, expected tokens × heads × head_dim = 2 × 8 × 128 = 2048",
    );
    message(
        rope.apply_qk(&mut q, 8, &mut k, 4, &[0, 1]),
        "`k` has length 512, expected tokens × heads × head_dim = 2 × 4 × 128 = 1024",
    );
    message(
        rope.shift(&mut k, 2, &[5]),
        "`k` has length 512, expected tokens × heads × head_dim = 1 × 2 × 128 = 256",
    );
    // fill_cos_sin: tokens × rotary_dim/2.
    let (mut cos, mut sin) = (vec![0.0f32; 128], vec![0.0f32; 192]);
    message(
        rope.fill_cos_sin(&[0, 1, 2], &mut cos, &mut sin),
        "`cos` has length 128, expected tokens × rotary_dim/2 = 3 × 64 = 192",
    );
    // A caller's table: 128 values cannot be 3 tokens' worth; sin must match cos; a table
    // of the wrong width for the rope; a table for the wrong number of tokens.
    message(
        Table::new(&cos, &cos, 3).map(|_| ()),
        "`cos` has length 128, expected rotary_dim/2 × tokens, not a multiple of tokens = 3",
    );
    message(
        Table::new(&cos, &sin, 2).map(|_| ()),
        "`sin` has length 192, expected cos.len() = 128",
    );
    let mut x = vec![0.0f32; 4 * 128];
    message(
        rope.apply(&mut x, 1, Table::new(&cos, &cos, 4).unwrap()),
        "`table pairs per token` has length 32, expected rotary_dim/2 = 64",
    );
    let mut x3 = vec![0.0f32; 3 * 128];
    message(
        rope.apply(&mut x3, 1, Table::new(&cos, &cos, 2).unwrap()),
        "`x` has length 384, expected tokens × heads × head_dim = 2 × 1 × 128 = 256",
    );
    // Views: the two that meet, or the one that meets itself.
    let (row, hd) = (3 * 128, 128);
    let mut qkv = vec![0.0f32; 2 * row];
    let view = |n_heads, offset| View {
        n_heads,
        token_stride: row,
        head_stride: hd,
        offset,
    };
    message(
        rope.apply_views(&mut qkv, &[view(1, 0), view(2, 128), view(1, 200)], &[0, 1]),
        "`views[1]` and `views[2]` overlap: a head of one meets a head of the other",
    );
    message(
        rope.apply_views(
            &mut qkv,
            &[View {
                head_stride: 64,
                ..view(2, 0)
            }],
            &[0, 1],
        ),
        "`views[0]` makes two of its own heads overlap: its strides must keep every head_dim-wide head apart",
    );
    // Sinusoidal rows: positions × d_model.
    let pe = Sinusoidal::new(64, 1e4, SinusoidalLayout::Split).unwrap();
    let mut out = vec![0.0f32; 100];
    message(
        pe.fill(&mut out, 0),
        "`out` has length 100, expected positions × d_model, not a multiple of d_model = 64",
    );
    message(
        pe.fill_positions(&mut out, &[1, 2]),
        "`out` has length 100, expected positions × d_model = 2 × 64 = 128",
    );
}
