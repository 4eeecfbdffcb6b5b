//! T5 relative-position buckets: hand-derived tables, HF's f32 expression re-derived
//! independently, the f64 formula, block fills and every error path.

use posenc::alibi::Positions;
use posenc::t5::{T5Buckets, t5_bucket};
use posenc::{Error, Formula};
use proptest::prelude::*;

/// Bucket from a threshold table: `thresholds[m]` is the smallest distance of bucket
/// `first + m`; distances below `first` are their own bucket.
fn from_thresholds(r: u64, first: u64, thresholds: &[u64]) -> u32 {
    if r < first {
        return r as u32;
    }
    (first + thresholds.iter().filter(|&&t| r >= t).count() as u64 - 1) as u32
}

// Worked out by hand from the formula, not from posenc. Bidirectional, 32 buckets, 128:
// 16 buckets per side, max_exact 8, bucket = 8 + trunc(8 · ln(r/8) / ln 16) = 8 +
// trunc(2·log2(r/8)): bucket 8 + m from r = 8·2^(m/2), rounded up: 8, 11.3→12, 16, 22.6→23,
// 32, 45.3→46, 64, 90.5→91; from 128 on 16 → clamped to 15.
const BIDI_32_128: [u64; 8] = [8, 12, 16, 23, 32, 46, 64, 91];
// Causal, 32, 128: max_exact 16, bucket = 16 + trunc(16 · ln(r/16) / ln 8) = 16 +
// trunc((16/3)·log2(r/16)): bucket 16 + m from r = 16·2^(3m/16), rounded up: 16, 18.3→19,
// 20.7→21, 23.6→24, 26.9→27, 30.6→31, 34.9→35, 39.7→40, 45.3→46, 51.5→52, 58.7→59,
// 66.8→67, 76.1→77, 86.6→87, 98.7→99, 112.4→113; from 128 on clamped to 31.
const CAUSAL_32_128: [u64; 16] = [
    16, 19, 21, 24, 27, 31, 35, 40, 46, 52, 59, 67, 77, 87, 99, 113,
];

#[test]
fn hand_derived_bidirectional_32_128() {
    let b = T5Buckets::new(true, 32, 128).unwrap();
    assert_eq!(b, T5Buckets::default());
    for rel in -1000i32..=1000 {
        let r = rel.unsigned_abs() as u64;
        let side = from_thresholds(r, 8, &BIDI_32_128);
        let want = if rel > 0 { 16 + side } else { side };
        assert_eq!(b.bucket(rel), want, "rel {rel}");
        assert_eq!(t5_bucket(rel, true, 32, 128), Ok(want));
    }
    // A few spelled out: the query's own key, neighbours, the boundaries where the f32
    // expression lands exactly on an integer (r = 16, 32, 64), and the far clamp.
    let known = [
        (0, 0),
        (-1, 1),
        (1, 17),
        (-7, 7),
        (7, 23),
        (-8, 8),
        (-11, 8),
        (-12, 9),
        (-15, 9),
        (-16, 10),
        (16, 26),
        (-22, 10),
        (-23, 11),
        (-32, 12),
        (-63, 13),
        (-64, 14),
        (64, 30),
        (-90, 14),
        (-91, 15),
        (-127, 15),
        (-128, 15),
        (128, 31),
        (i32::MIN, 15),
        (i32::MAX, 31),
    ];
    for (rel, want) in known {
        assert_eq!(b.bucket(rel), want, "rel {rel}");
    }
}

#[test]
fn hand_derived_causal_32_128() {
    let b = T5Buckets::new(false, 32, 128).unwrap();
    for rel in -1000i32..=1000 {
        let want = if rel >= 0 {
            0
        } else {
            from_thresholds(rel.unsigned_abs() as u64, 16, &CAUSAL_32_128)
        };
        assert_eq!(b.bucket(rel), want, "rel {rel}");
    }
    for (rel, want) in [
        (5, 0),
        (i32::MAX, 0),
        (0, 0),
        (-1, 1),
        (-15, 15),
        (-16, 16),
        (-18, 16),
        (-19, 17),
        (-45, 23),
        (-46, 24),
        (-112, 30),
        (-113, 31),
        (-100_000, 31),
        (i32::MIN, 31),
    ] {
        assert_eq!(b.bucket(rel), want, "rel {rel}");
    }
}

/// HF's `_relative_position_bucket`, transcribed line by line with torch's dtypes:
/// `relative_position.float()` (f32), `/ max_exact` (f32), `torch.log` (f32, here the
/// platform's `f32::ln`), `/ math.log(max_distance / max_exact)` (a Python f64, cast to f32),
/// `* (num_buckets - max_exact)` (f32), `.to(torch.long)` (truncation).
fn hf_f32(relative_position: i64, bidirectional: bool, num_buckets: u32, max_distance: u32) -> i64 {
    let mut num_buckets = num_buckets as i64;
    let mut relative_buckets = 0;
    let mut relative_position = relative_position;
    if bidirectional {
        num_buckets /= 2;
        relative_buckets += (relative_position > 0) as i64 * num_buckets;
        relative_position = relative_position.abs();
    } else {
        relative_position = -relative_position.min(0);
    }
    let max_exact = num_buckets / 2;
    let is_small = relative_position < max_exact;
    let log_scale = (max_distance as f64 / max_exact as f64).ln() as f32;
    let large = max_exact
        + ((relative_position as f32 / max_exact as f32).ln() / log_scale
            * (num_buckets - max_exact) as f32) as i64;
    let large = large.min(num_buckets - 1);
    relative_buckets + if is_small { relative_position } else { large }
}

/// The formula in f64: the real-number value before truncation, and the bucket.
fn formula_f64(rel: i64, bidirectional: bool, num_buckets: u32, max_distance: u32) -> (f64, i64) {
    let (n, offset, r) = if bidirectional {
        let n = num_buckets as i64 / 2;
        (n, if rel > 0 { n } else { 0 }, rel.abs())
    } else {
        (num_buckets as i64, 0, (-rel).max(0))
    };
    let me = n / 2;
    if r < me {
        return (r as f64, offset + r);
    }
    let v = (r as f64 / me as f64).ln() / (max_distance as f64 / me as f64).ln() * (n - me) as f64;
    (v, offset + (me + v as i64).min(n - 1))
}

const CONFIGS: [(u32, u32); 13] = [
    (32, 128), // T5, mT5, T5 v1.1, UMT5, LongT5
    (32, 256),
    (64, 128),
    (64, 256),
    (16, 64),
    (8, 32),
    (4, 8),
    (128, 1024),
    (256, 2048),
    (32, 100),
    (50, 200),
    (12, 1000),
    (10, 160),
];

#[test]
fn equals_hf_f32_expression_and_f64_formula_away_from_boundaries() {
    let mut near_boundary = 0;
    let mut differ = 0;
    for (nb, md) in CONFIGS {
        for bidirectional in [true, false] {
            let b = T5Buckets::new(bidirectional, nb, md).unwrap();
            let span = 4 * md as i64 + 64;
            let rels = (-span..=span).chain([
                i32::MIN as i64,
                i32::MIN as i64 + 1,
                -(1 << 24) - 1,
                1 << 24,
                i32::MAX as i64,
            ]);
            for rel in rels {
                let got = b.bucket(rel as i32) as i64;
                let hf = hf_f32(rel, bidirectional, nb, md);
                assert_eq!(
                    got, hf,
                    "({nb}, {md}, {bidirectional}) rel {rel}: vs HF f32"
                );
                let (v, exact) = formula_f64(rel, bidirectional, nb, md);
                if (v - v.round()).abs() < 1e-4 && v.round() != 0.0 && v != rel.abs() as f64 {
                    // The real value is (nearly) an integer: only HF's own f32 order decides.
                    near_boundary += 1;
                    if got != exact {
                        differ += 1;
                        println!(
                            "({nb}, {md}, {bidirectional}) rel {rel}: f64 {v} → {exact}, HF f32 → {got}"
                        );
                    }
                } else {
                    assert_eq!(
                        got, exact,
                        "({nb}, {md}, {bidirectional}) rel {rel}: vs f64"
                    );
                }
            }
        }
    }
    println!(
        "distances on a bucket boundary: {near_boundary}, where f64 truncation differs from HF's f32: {differ}"
    );
}

#[test]
fn sweep_equals_hf_f32_expression() {
    let mut checked = 0u64;
    for nb in 2u32..=130 {
        for bidirectional in [true, false] {
            let Ok(_) = T5Buckets::new(bidirectional, nb, u32::MAX) else {
                continue;
            };
            let me = if bidirectional { nb / 4 } else { nb / 2 };
            for md in [me + 1, me + 2, 2 * me, 3 * me + 1, 100, 128, 160, 256, 1000] {
                let Ok(b) = T5Buckets::new(bidirectional, nb, md) else {
                    continue;
                };
                let span = (2 * md as i64 + 2).min(5000);
                for rel in -span..=span {
                    assert_eq!(
                        b.bucket(rel as i32) as i64,
                        hf_f32(rel, bidirectional, nb, md),
                        "({nb}, {md}, {bidirectional}) rel {rel}"
                    );
                    checked += 1;
                }
            }
        }
    }
    println!("{checked} (config, distance) pairs equal HF's f32 expression");
}

#[test]
fn exact_integer_boundaries_of_the_default_config() {
    // 2·log2(r/8) is exactly 2, 4, 6 at r = 16, 32, 64, and f32 reproduces that exactly:
    // f32(ln 16) = 4·f32(ln 2), f32(ln 4) = 2·f32(ln 2), f32(ln 8) = 3·f32(ln 2).
    assert_eq!((16.0f64.ln() as f32).to_bits(), (4.0 * 2f32.ln()).to_bits());
    assert_eq!(8f32.ln().to_bits(), (3.0 * 2f32.ln()).to_bits());
    let b = T5Buckets::default();
    assert_eq!([b.bucket(-16), b.bucket(-32), b.bucket(-64)], [10, 12, 14]);
    assert_eq!([b.bucket(-15), b.bucket(-31), b.bucket(-63)], [9, 11, 13]);
}

#[test]
fn hf_f32_boundaries_where_the_f64_formula_disagrees() {
    // Found with numpy's float32 (an implementation independent of posenc and of libm): the
    // real value is an integer, f64 lands below it (ln 2 / ln 32 · 5 = 0.9999999999999999)
    // or f32 does (causal 17 / 27, r = 12: exactly 3 in reals, f32 just below).
    let b = T5Buckets::new(false, 10, 160).unwrap();
    assert_eq!([b.bucket(-10), b.bucket(-20), b.bucket(-80)], [6, 7, 9]);
    assert_eq!(formula_f64(-10, false, 10, 160).1, 5);
    let b = T5Buckets::new(false, 17, 27).unwrap();
    assert_eq!(b.bucket(-12), 10);
    assert_eq!(formula_f64(-12, false, 17, 27).1, 11);
    // Exactly 18 in reals (ln(5/3) / ln(25/9) · 36); the correctly rounded f32 log of
    // f32(60/36) (0x1.058aeep-1, glibc's too) gives 17.999998 → 36 + 17; a log 1 ulp high
    // (numpy's, musl's) would give 54.
    assert_eq!(T5Buckets::new(false, 72, 100).unwrap().bucket(-60), 53);
}

#[test]
fn fill_is_the_scalar_bucket_of_k_minus_q() {
    let b = T5Buckets::new(true, 32, 128).unwrap();
    let q = [0, 5, 200, -3, i32::MAX];
    let k = [i32::MIN, 0, 1, 7, 300, 64];
    let mut out = vec![u32::MAX; q.len() * k.len()];
    b.fill(&q, &k, &mut out).unwrap();
    for (i, &qi) in q.iter().enumerate() {
        for (j, &kj) in k.iter().enumerate() {
            let rel = kj as i64 - qi as i64;
            let want = hf_f32(rel, true, 32, 128) as u32;
            assert_eq!(out[i * k.len() + j], want, "q {qi} k {kj}");
        }
    }
    // HF compute_bias(query_length=3, key_length=5), encoder: context arange(3), memory
    // arange(5); a decoder step with a cache: query at 4 against keys 0..5.
    let mut out = vec![0u32; 15];
    b.fill(Positions::range(0, 3), Positions::range(0, 5), &mut out)
        .unwrap();
    assert_eq!(out, [0, 17, 18, 19, 20, 1, 0, 17, 18, 19, 2, 1, 0, 17, 18]);
    let dec = T5Buckets::new(false, 32, 128).unwrap();
    let mut out = vec![0u32; 5];
    dec.fill(Positions::range(4, 1), Positions::range(0, 5), &mut out)
        .unwrap();
    assert_eq!(out, [4, 3, 2, 1, 0]);
}

#[test]
fn fill_bias_gathers_head_major() {
    let b = T5Buckets::new(false, 8, 16).unwrap();
    let heads = 3;
    // table[bucket][head] = 100·bucket + head
    let table: Vec<i32> = (0..8 * heads as i32)
        .map(|i| 100 * (i / heads as i32) + i % heads as i32)
        .collect();
    let (q, k) = ([3, 40], [0, 1, 2, 3, 4, 39]);
    let mut out = vec![-1i32; heads * 2 * 6];
    b.fill_bias(&table, heads, &q, &k, &mut out).unwrap();
    for h in 0..heads {
        for (i, &qi) in q.iter().enumerate() {
            for (j, &kj) in k.iter().enumerate() {
                let bucket = b.bucket(kj - qi) as i32;
                assert_eq!(out[(h * 2 + i) * 6 + j], 100 * bucket + h as i32);
            }
        }
    }
}

#[test]
fn invalid_parameters() {
    for (bidi, nb, md) in [
        (true, 0, 128),
        (true, 2, 128),
        (true, 3, 128),
        (true, 33, 128),
        (false, 0, 128),
        (false, 1, 128),
    ] {
        let e = T5Buckets::new(bidi, nb, md).unwrap_err();
        assert!(
            matches!(
                e,
                Error::ParameterOutOfRange {
                    what: "num_buckets",
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(t5_bucket(0, bidi, nb, md), Err(e));
    }
    // max_distance must exceed max_exact (bidirectional: num_buckets / 4; causal: / 2).
    for (bidi, nb, md) in [(true, 32, 8), (true, 32, 0), (false, 32, 16), (false, 2, 1)] {
        let e = T5Buckets::new(bidi, nb, md).unwrap_err();
        assert!(
            matches!(
                e,
                Error::ParameterOutOfRange {
                    what: "max_distance",
                    ..
                }
            ),
            "{e}"
        );
    }
    // The smallest valid ones, and huge ones, work and stay in range.
    for (bidi, nb, md) in [
        (true, 4, 2),
        (false, 2, 2),
        (true, u32::MAX - 1, u32::MAX),
        (false, u32::MAX, u32::MAX),
        (false, 1 << 20, (1 << 19) + 1),
    ] {
        let b = T5Buckets::new(bidi, nb, md).unwrap();
        for rel in [i32::MIN, -1_000_000, -3, -1, 0, 1, 3, 1_000_000, i32::MAX] {
            assert!(b.bucket(rel) < nb, "({bidi}, {nb}, {md}) rel {rel}");
        }
    }
}

#[test]
fn errors_leave_buffers_untouched() {
    let b = T5Buckets::default();
    let mut out = vec![7u32; 5];
    let e = b.fill(&[0, 1], &[0, 1, 2], &mut out).unwrap_err();
    assert_eq!(
        e,
        Error::LengthMismatch {
            what: "out",
            expected: 6,
            actual: 5,
            formula: Formula {
                names: &"queries × keys",
                values: [2, 3, 0]
            }
        }
    );
    assert_eq!(out, [7; 5]);
    let huge = Positions::range(0, usize::MAX / 2);
    assert_eq!(b.fill(huge, huge, &mut out), Err(Error::ShapeOverflow));
    assert_eq!(out, [7; 5]);

    let table = vec![1.5f32; 32 * 2];
    let mut bias = [9.0f32; 2 * 2 * 3];
    let q = [0, 1];
    let k = [0, 1, 2];
    let cases: [(&[f32], usize, usize, Error); 4] = [
        (&table, 0, 12, Error::ZeroHeads),
        (
            &table[..63],
            2,
            12,
            Error::LengthMismatch {
                what: "table",
                expected: 64,
                actual: 63,
                formula: Formula {
                    names: &"num_buckets × heads",
                    values: [32, 2, 0],
                },
            },
        ),
        (
            &table,
            2,
            11,
            Error::LengthMismatch {
                what: "out",
                expected: 12,
                actual: 11,
                formula: Formula {
                    names: &"heads × queries × keys",
                    values: [2, 2, 3],
                },
            },
        ),
        (&table, usize::MAX / 4, 12, Error::ShapeOverflow),
    ];
    for (t, heads, len, want) in cases {
        let e = b.fill_bias(t, heads, &q, &k, &mut bias[..len]).unwrap_err();
        assert_eq!(e, want);
        assert!(bias.iter().all(|&v| v == 9.0));
    }
    // Empty blocks are fine (and do not loop over a huge range).
    b.fill(
        Positions::range(0, usize::MAX),
        Positions::range(0, 0),
        &mut [],
    )
    .unwrap();
    b.fill_bias(&table, 2, &[0], Positions::List(&[]), &mut [])
        .unwrap();
}

proptest! {
    #[test]
    fn buckets_are_in_range_and_monotone_per_side(
        nb in 2u32..300,
        md in 1u32..5000,
        bidirectional: bool,
        r in 0i32..100_000,
    ) {
        let nb = if bidirectional { (nb.max(4) / 2) * 2 } else { nb };
        let side = if bidirectional { nb / 2 } else { nb };
        prop_assume!(md > side / 2);
        let b = T5Buckets::new(bidirectional, nb, md).unwrap();
        let before = b.bucket(-r);
        prop_assert!(before < side);
        prop_assert!(b.bucket(-r - 1) >= before);
        let after = b.bucket(r);
        if bidirectional {
            prop_assert!(after < nb);
            prop_assert_eq!(after, if r > 0 { side + before } else { 0 });
        } else {
            prop_assert_eq!(after, 0);
        }
        prop_assert_eq!(b.bucket(-r) as i64, hf_f32(-(r as i64), bidirectional, nb, md));
    }

    #[test]
    fn ranges_equal_lists(q0 in -300i32..300, nq in 0usize..6, k0 in -300i32..300, nk in 0usize..8) {
        let b = T5Buckets::new(false, 32, 128).unwrap();
        let ql: Vec<i32> = (0..nq as i32).map(|i| q0 + i).collect();
        let kl: Vec<i32> = (0..nk as i32).map(|j| k0 + j).collect();
        let (mut a, mut c) = (vec![0u32; nq * nk], vec![1u32; nq * nk]);
        b.fill(Positions::range(q0, nq), Positions::range(k0, nk), &mut a).unwrap();
        b.fill(&ql, &kl, &mut c).unwrap();
        prop_assert_eq!(a, c);
    }
}
