//! The fairseq (M2M100) and timestep sinusoidal conventions: golden data from HF where it
//! exists (`sin_split_m2m100_d64`), the f64 formulas of REFERENCE.md otherwise, on every
//! backend.

mod common;

use common::Case;
use posenc::{Backend, Element, Sinusoidal, SinusoidalLayout, bf16, fairseq_positions};

/// Contract bound vs the f64 formula (2.4e-7) plus the f32 rounding of the value (≤ 6e-8).
const TOL: f64 = 2.4e-7 + 6e-8;

#[test]
fn m2m100_table_matches_f64_truth_and_padding_row_is_zero() {
    let case = Case::load("sin_split_m2m100_d64");
    let d = case.usize("d_model");
    let pad = case.usize("padding_idx") as u32;
    let positions: Vec<i32> = case
        .array("positions")
        .to_i64()
        .iter()
        .map(|&p| p as i32)
        .collect();
    let truth = case.array("pe_f64").to_f64();
    let torch = case.array("pe_f32").to_f32();
    let mut worst = 0f64;
    let mut worst_torch = 0f64;
    for b in Backend::available() {
        let pe = Sinusoidal::fairseq(d, Some(pad))
            .unwrap()
            .with_backend(b)
            .unwrap();
        // Every backend gives the same bits, so only the accessor tells that the table below
        // was computed where it was asked to be.
        assert_eq!(pe.backend(), b);
        let mut out = vec![f32::NAN; positions.len() * d];
        pe.fill_positions(&mut out, &positions).unwrap();
        for (r, &p) in positions.iter().enumerate() {
            let row = &out[r * d..(r + 1) * d];
            if p == pad as i32 {
                assert!(
                    row.iter().all(|&v| v == 0.0),
                    "{b:?}: padding row {p} must be zero"
                );
            }
            for (i, &v) in row.iter().enumerate() {
                let e = (v as f64 - truth[r * d + i]).abs();
                worst = worst.max(e);
                worst_torch = worst_torch.max((torch[r * d + i] as f64 - truth[r * d + i]).abs());
                assert!(
                    e <= TOL,
                    "{b:?}: row {p} col {i}: {v} vs {}",
                    truth[r * d + i]
                );
            }
        }
    }
    println!("m2m100 d=64: posenc vs f64 {worst:.2e}; torch f32 table vs f64 {worst_torch:.2e}");
    assert!(
        worst_torch > 100.0 * worst,
        "the data should show torch's f32 error dwarfing ours"
    );
}

#[test]
fn m2m100_forward_rows_through_fairseq_positions() {
    let case = Case::load("sin_split_m2m100_d64");
    let d = case.usize("d_model");
    let pad = case.usize("padding_idx") as i64;
    let ids = case.array("input_ids").to_i64();
    let cache = case.usize("forward.cache_length") as i64;
    let truth = case.array("forward_f64").to_f64();
    let mut pos = vec![0i32; ids.len()];
    fairseq_positions(&ids, pad, cache, &mut pos).unwrap();
    let pe = Sinusoidal::fairseq(d, Some(pad as u32)).unwrap();
    let mut x = vec![0f32; ids.len() * d];
    pe.add(&mut x, &pos).unwrap();
    for (k, (&v, &t)) in x.iter().zip(&truth).enumerate() {
        assert!(
            (v as f64 - t).abs() <= TOL,
            "forward element {k}: {v} vs {t}"
        );
    }
}

#[test]
fn fairseq_positions_follow_hf() {
    // HF create_position_ids_from_input_ids: cumsum(mask)·mask + past·mask + padding_idx.
    let mut pos = [0i32; 6];
    fairseq_positions(&[1, 1, 5, 6, 1, 7], 1, 3, &mut pos).unwrap();
    assert_eq!(pos, [1, 1, 5, 6, 1, 7]);
    let mut short = [0i32; 2];
    assert!(fairseq_positions(&[5, 6, 7], 1, 0, &mut short).is_err());
    assert_eq!(short, [0, 0]);
    let mut one = [0i32; 1];
    assert!(fairseq_positions(&[5], 1, i64::from(i32::MAX), &mut one).is_err());
    assert!(fairseq_positions(&[5], 1, -1, &mut one).is_err());
}

/// f64 truth of a row: `ω_i = base^(−i/den)`, with the layout.
fn truth_row(d: usize, base: f64, den: f64, layout: SinusoidalLayout, p: f64) -> Vec<f64> {
    let half = d / 2;
    let mut row = vec![0.0; d];
    for i in 0..half {
        let (s, c) = (p * base.powf(-(i as f64) / den)).sin_cos();
        let (is, ic) = match layout {
            SinusoidalLayout::Interleaved => (2 * i, 2 * i + 1),
            SinusoidalLayout::Split => (i, half + i),
            SinusoidalLayout::SplitCosFirst => (half + i, i),
        };
        row[is] = s;
        row[ic] = c;
    }
    row
}

#[test]
fn timestep_embedding_matches_formula_odd_and_fractional() {
    for d in [7usize, 8, 320, 321] {
        let half = d / 2;
        for b in Backend::available() {
            let pe = Sinusoidal::timestep(d, 10_000.0)
                .unwrap()
                .with_backend(b)
                .unwrap();
            let times = [0.0f32, 0.5, 1.0, 999.0, 999.75, 1.0e6 + 0.25];
            let mut out = vec![f32::NAN; times.len() * d];
            pe.fill_times(&mut out, &times).unwrap();
            for (r, &t) in times.iter().enumerate() {
                let want = truth_row(
                    d,
                    10_000.0,
                    half as f64,
                    SinusoidalLayout::SplitCosFirst,
                    t as f64,
                );
                for i in 0..d {
                    let e = (out[r * d + i] as f64 - want[i]).abs();
                    assert!(
                        e <= TOL,
                        "{b:?} d={d} t={t} col {i}: {} vs {}",
                        out[r * d + i],
                        want[i]
                    );
                }
                if d % 2 == 1 {
                    assert_eq!(out[r * d + d - 1], 0.0, "odd width: last column zero");
                }
            }
            // Integer positions through fill (the f64 recurrence, not bitwise fill_times'
            // direct method) meet the same bound at the same values.
            let mut a = vec![0f32; 3 * d];
            let mut c = vec![0f32; 3 * d];
            pe.fill(&mut a, 998).unwrap();
            pe.fill_times(&mut c, &[998.0, 999.0, 1000.0]).unwrap();
            for r in 0..3 {
                let p = 998.0 + r as f64;
                let want = truth_row(d, 10_000.0, half as f64, SinusoidalLayout::SplitCosFirst, p);
                for i in 0..d {
                    let (x, y) = (a[r * d + i] as f64, c[r * d + i] as f64);
                    assert!((x - want[i]).abs() <= TOL, "{b:?} fill p {p} col {i}: {x}");
                    assert!(
                        (x - y).abs() <= 2.0 * TOL,
                        "{b:?} fill vs fill_times p {p} col {i}"
                    );
                }
            }
        }
    }
}

#[test]
fn fairseq_odd_width_and_bf16_round_once() {
    let d = 9;
    for b in Backend::available() {
        let pe = Sinusoidal::fairseq(d, None)
            .unwrap()
            .with_backend(b)
            .unwrap();
        let mut f = vec![0f32; 4 * d];
        pe.fill(&mut f, 100).unwrap();
        let mut h = vec![bf16::from_f32(1.0); 4 * d];
        pe.fill(&mut h, 100).unwrap();
        for (x, y) in f.iter().zip(&h) {
            assert_eq!(
                bf16::from_f32(*x),
                *y,
                "{b:?}: bf16 is the f32 value rounded once"
            );
        }
        for r in 0..4 {
            let want = truth_row(
                d,
                10_000.0,
                (d / 2 - 1) as f64,
                SinusoidalLayout::Split,
                100.0 + r as f64,
            );
            for i in 0..d {
                assert!((f[r * d + i] as f64 - want[i]).abs() <= TOL);
            }
        }
        // add onto existing values: once-rounded f32 sum
        let mut x = vec![bf16::from_f32(0.5); 4 * d];
        pe.add(&mut x, &[100, 101, 102, 103]).unwrap();
        for (k, v) in x.iter().enumerate() {
            assert_eq!(
                *v,
                <bf16 as Element>::from_f32(0.5 + f[k]),
                "{b:?} element {k}"
            );
        }
    }
}

#[test]
fn variant_constructors_validate() {
    assert!(Sinusoidal::fairseq(3, None).is_err()); // half − 1 = 0
    assert!(Sinusoidal::fairseq(4, Some(u32::MAX)).is_err());
    assert!(Sinusoidal::timestep(1, 1e4).is_err());
    assert!(Sinusoidal::timestep(8, f32::NAN).is_err());
    assert!(Sinusoidal::timestep(8, 0.0).is_err());
    let pe = Sinusoidal::timestep(8, 1e4).unwrap();
    let mut out = [7f32; 8];
    assert!(pe.fill_times(&mut out, &[1.0, 2.0]).is_err());
    assert_eq!(out, [7.0; 8]);
}

/// `Sinusoidal::frequency` against each convention's formula in f64 (REFERENCE.md):
/// `base^(−2i/d)` (`new`), `exp(−i·ln(10⁴)/(d/2 − 1))` (fairseq), `exp(−i·ln(P)/(d/2))`
/// (timestep); `None` from `i = d/2` on.
#[test]
fn frequency_accessor_follows_each_convention() {
    fn check(pe: &Sinusoidal, want: impl Fn(f64) -> f64, what: &str) {
        let pairs = pe.d_model() / 2;
        for i in 0..pairs {
            let (got, w) = (pe.frequency(i).unwrap(), want(i as f64));
            assert!(
                (got - w).abs() <= 1e-14 * w,
                "{what}: ω_{i} = {got:e}, formula {w:e}"
            );
        }
        assert_eq!(pe.frequency(pairs), None, "{what}: past the end");
        assert_eq!(pe.frequency(usize::MAX), None, "{what}: usize::MAX");
    }
    for d in [2usize, 10, 64] {
        let pe = Sinusoidal::new(d, 1e4, SinusoidalLayout::Split).unwrap();
        check(&pe, |i| 1e4f64.powf(-2.0 * i / d as f64), "new");
        let pe = Sinusoidal::timestep(d + 1, 1e4).unwrap();
        check(
            &pe,
            |i| (-i * 1e4f64.ln() / (d / 2) as f64).exp(),
            "timestep",
        );
    }
    for d in [4usize, 9, 64] {
        let pe = Sinusoidal::fairseq(d, None).unwrap();
        let half = (d / 2) as f64;
        check(&pe, |i| (-i * 1e4f64.ln() / (half - 1.0)).exp(), "fairseq");
    }
}

/// `fairseq_positions` at the edge of i32: the last real token's row is
/// `padding_idx + past_len + (number of real tokens)`, so the padding tokens around it do not
/// count towards the limit, and one real token more than fits is refused before any write.
#[test]
fn fairseq_positions_limit_counts_real_tokens_only() {
    let max = i32::MAX as i64;
    // Three padding tokens and one real one: the real one lands exactly on i32::MAX.
    let mut out = [7i32; 4];
    posenc::fairseq_positions(&[1, 1, 1, 5], 1, max - 2, &mut out).unwrap();
    assert_eq!(out, [1, 1, 1, i32::MAX]);
    // Three real tokens and one padding token: the third real one would be i32::MAX + 1.
    let mut out = [7i32; 4];
    assert!(posenc::fairseq_positions(&[5, 6, 7, 1], 1, max - 3, &mut out).is_err());
    assert_eq!(out, [7; 4], "nothing written");
    // One fewer past token and it fits.
    posenc::fairseq_positions(&[5, 6, 7, 1], 1, max - 4, &mut out).unwrap();
    assert_eq!(out, [i32::MAX - 2, i32::MAX - 1, i32::MAX, 1]);
}

/// An odd width's last column is a zero of the table, and `add` adds it as any column is added:
/// in f32, so `−0.0 + 0.0` is `+0.0` (IEEE 754 round-to-nearest) and a NaN stays NaN.
#[test]
fn add_adds_the_zero_column_of_an_odd_width() {
    let pe = Sinusoidal::timestep(5, 10_000.0).unwrap();
    for b in Backend::available() {
        let pe = pe.with_backend(b).unwrap();
        // Two rows of 5: row 0 all −0.0, row 1 ones and a NaN in its last column.
        let mut x = [-0.0f32; 10];
        x[5..9].fill(1.0);
        x[9] = f32::NAN;
        pe.add(&mut x, &[3, 4]).unwrap();
        assert_eq!(
            x[4].to_bits(),
            0.0f32.to_bits(),
            "{b:?}: −0.0 + 0.0 in the last column"
        );
        assert!(x[9].is_nan(), "{b:?}: NaN + 0.0 in the last column");
    }
}

/// `fill` zeroes the padding row wherever it falls in the filled range and writes nothing
/// else differently: every other row is bitwise the row of the same table without a padding
/// row (a `fill` row depends on its position alone), and a padding row just outside the
/// range (before its first row or one past its last) changes nothing.
#[test]
fn fill_zeroes_the_padding_row_wherever_it_falls() {
    fn check<T: Element>(b: Backend, d: usize, first: u32, rows: usize) {
        let plain = Sinusoidal::fairseq(d, None)
            .unwrap()
            .with_backend(b)
            .unwrap();
        let mut want = vec![T::from_f32(f32::NAN); rows * d];
        plain.fill(&mut want, first).unwrap();
        let last = first + rows as u32 - 1;
        for pad in [first - 1, first, first + 3, last, last + 1] {
            let pe = Sinusoidal::fairseq(d, Some(pad))
                .unwrap()
                .with_backend(b)
                .unwrap();
            let mut out = vec![T::from_f32(f32::NAN); rows * d];
            pe.fill(&mut out, first).unwrap();
            for r in 0..rows {
                let (got, row) = (&out[r * d..(r + 1) * d], &want[r * d..(r + 1) * d]);
                let p = first + r as u32;
                for (c, (&g, &w)) in got.iter().zip(row).enumerate() {
                    let w = if p == pad { 0.0 } else { w.to_f32() };
                    assert_eq!(
                        g.to_f32().to_bits(),
                        w.to_bits(),
                        "{b:?} {:?} d={d} first={first} pad={pad}: row {p} col {c}",
                        T::DTYPE
                    );
                }
            }
        }
    }
    for b in Backend::available() {
        // Inside one anchor block, and across the block boundary at 512.
        for (first, rows) in [(300, 20), (500, 20)] {
            check::<f32>(b, 12, first, rows);
            check::<bf16>(b, 13, first, rows);
        }
    }
}

/// A table's `Debug` names what defines it (width, frequencies, layout, padding row) and
/// leaves out the frequency cache it keeps (hundreds of numbers that are a function of those).
#[test]
fn debug_names_the_table_not_its_cache() {
    let pe = Sinusoidal::fairseq(6, Some(1)).unwrap();
    let s = format!("{pe:?}");
    for part in [
        "d_model: 6",
        "pairs: 3",
        "layout: Split",
        "padding: Some(1)",
    ] {
        assert!(s.contains(part), "{part:?} missing from {s}");
    }
    assert!(s.len() < 300, "the cache leaked into Debug: {s}");
}
