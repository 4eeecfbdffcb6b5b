//! `rope`, `rope_i`, `rope_thd` against candle_nn 0.11.1 and an f64 reference, on random
//! tensors of every shape class candle_nn accepts, in f32, f16 and bf16; f64 and the error
//! cases against candle_nn itself.

mod common;

use candle_core::{DType, Device, Result, Tensor};
use common::{EPS32, Rng, randn, tables, unit_roundoff, values};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// `rope_i`: interleaved on `(b, h, t, d)`.
    I,
    /// `rope`: rotate-half on `(b, h, t, d)`.
    Half,
    /// `rope_thd`: rotate-half on `(b, t, h, d)`.
    Thd,
}

const KINDS: [Kind; 3] = [Kind::I, Kind::Half, Kind::Thd];
const DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

fn ours(kind: Kind, x: &Tensor, c: &Tensor, s: &Tensor) -> Result<Tensor> {
    match kind {
        Kind::I => posenc_candle::rope_i(x, c, s),
        Kind::Half => posenc_candle::rope(x, c, s),
        Kind::Thd => posenc_candle::rope_thd(x, c, s),
    }
}

fn theirs(kind: Kind, x: &Tensor, c: &Tensor, s: &Tensor) -> Result<Tensor> {
    match kind {
        Kind::I => candle_nn::rotary_emb::rope_i(x, c, s),
        Kind::Half => candle_nn::rotary_emb::rope(x, c, s),
        Kind::Thd => candle_nn::rotary_emb::rope_thd(x, c, s),
    }
}

/// The exact rotation (f64) of every element, and `|a·c| + |b·s|` of its two products,
/// following candle_nn's documented indexing: pair `i` of token `t` in batch `b` reads table
/// element `t·d/2 + i`, offset by `b·t·d/2` when both tables are 3-D.
fn reference(kind: Kind, x: &Tensor, c: &Tensor, s: &Tensor) -> Result<Vec<(f64, f64)>> {
    let (b, n1, n2, d) = x.dims4()?;
    let (h, t) = if kind == Kind::Thd {
        (n2, n1)
    } else {
        (n1, n2)
    };
    let per_batch = c.rank() == 3 && s.rank() == 3;
    let (xv, cv, sv) = (values(x)?, values(c)?, values(s)?);
    let half = d / 2;
    let mut out = vec![(0.0, 0.0); xv.len()];
    for bi in 0..b {
        for hi in 0..h {
            for ti in 0..t {
                let base = if kind == Kind::Thd {
                    ((bi * t + ti) * h + hi) * d
                } else {
                    ((bi * h + hi) * t + ti) * d
                };
                let row = ti * half + if per_batch { bi * t * half } else { 0 };
                for i in 0..half {
                    let (i1, i2) = if kind == Kind::I {
                        (base + 2 * i, base + 2 * i + 1)
                    } else {
                        (base + i, base + i + half)
                    };
                    let (p, q, co, si) = (xv[i1], xv[i2], cv[row + i], sv[row + i]);
                    out[i1] = (p * co - q * si, (p * co).abs() + (q * si).abs());
                    out[i2] = (p * si + q * co, (p * si).abs() + (q * co).abs());
                }
            }
        }
    }
    Ok(out)
}

/// Checks posenc's and candle_nn's outputs against the reference, each within its bound, and
/// against each other within the sum; returns the largest |ours − candle_nn| seen.
///
/// posenc: `2·eps32·(|a·c| + |b·s|)` in f32 (DESIGN.md's rotation bound), then one rounding
/// to a 16-bit dtype (`u·|r| + tiny`, `u` its unit roundoff). candle_nn computes in the
/// dtype: both products and the sum rounded, `u·(|a·c| + |b·s|)` from the products and
/// `u·|r|` from the sum, plus three tiny (subnormal) terms; the `2u` allows for the computed
/// sum's own magnitude under cancellation.
fn check_case(kind: Kind, x: &Tensor, c: &Tensor, s: &Tensor, what: &str) -> Result<f64> {
    let y = ours(kind, x, c, s)?;
    let z = theirs(kind, x, c, s)?;
    assert_eq!(y.dims(), x.dims(), "{what}");
    assert_eq!(y.dtype(), x.dtype(), "{what}");
    let (yv, zv) = (values(&y)?, values(&z)?);
    let r = reference(kind, x, c, s)?;
    let (u, tiny) = unit_roundoff(x.dtype());
    // posenc's one rounding on store (none when storing f32).
    let (u_store, tiny_store) = if x.dtype() == DType::F32 {
        (0.0, 0.0)
    } else {
        (u, tiny)
    };
    let mut worst: f64 = 0.0;
    for (k, ((&yo, &zo), &(exact, mag))) in yv.iter().zip(&zv).zip(&r).enumerate() {
        let ours_bound = 2.0 * EPS32 * mag * (1.0 + u_store) + u_store * exact.abs() + tiny_store;
        let theirs_bound = (2.0 * u + 4.0 * u * u) * mag + u * exact.abs() + 3.0 * tiny;
        assert!(
            (yo - exact).abs() <= ours_bound,
            "{what} [{k}]: posenc {yo} vs exact {exact} (bound {ours_bound})"
        );
        assert!(
            (zo - exact).abs() <= theirs_bound,
            "{what} [{k}]: candle_nn {zo} vs exact {exact} (bound {theirs_bound}): reference wrong?"
        );
        assert!((yo - zo).abs() <= ours_bound + theirs_bound, "{what} [{k}]");
        worst = worst.max((yo - zo).abs());
    }
    Ok(worst)
}

/// `xs` of `(b, h, t, d)` (or `(b, t, h, d)` for thd).
fn xs_shape(kind: Kind, b: usize, h: usize, t: usize, d: usize) -> Vec<usize> {
    if kind == Kind::Thd {
        vec![b, t, h, d]
    } else {
        vec![b, h, t, d]
    }
}

#[test]
fn equals_candle_nn_on_every_shape_class_and_dtype() -> Result<()> {
    let mut rng = Rng::new(0x5eed);
    // (b, h, t, d): decode (t = 1, one and several batches), prefill, odd pair counts (SIMD
    // tails: d/2 = 1, 3, 5, 17), one head, and one large enough to run on rayon's pool.
    let shapes = [
        (1, 4, 1, 64),
        (3, 5, 1, 128),
        (2, 3, 7, 64),
        (1, 1, 9, 2),
        (2, 2, 5, 6),
        (1, 3, 4, 10),
        (2, 2, 3, 34),
        (1, 8, 64, 128),
    ];
    for kind in KINDS {
        for dtype in DTYPES {
            for &(b, h, t, d) in &shapes {
                let x = randn(&mut rng, &xs_shape(kind, b, h, t, d), dtype)?;
                let what = format!("{kind:?} {dtype:?} b{b} h{h} t{t} d{d}");
                // 2-D tables of exactly t rows, and of more rows (the first t are read).
                let (c, s) = tables(&mut rng, &[t, d / 2], dtype)?;
                check_case(kind, &x, &c, &s, &format!("{what} 2-D"))?;
                let (c, s) = tables(&mut rng, &[t + 5, d / 2], dtype)?;
                check_case(kind, &x, &c, &s, &format!("{what} 2-D t'>t"))?;
                // 3-D per-batch tables.
                let (c, s) = tables(&mut rng, &[b, t, d / 2], dtype)?;
                check_case(kind, &x, &c, &s, &format!("{what} 3-D"))?;
                // 3-D with t' > t: candle_nn steps batches by t rows regardless.
                let (c, s) = tables(&mut rng, &[b, t + 2, d / 2], dtype)?;
                check_case(kind, &x, &c, &s, &format!("{what} 3-D t'>t"))?;
                // 3-D cos with 2-D sin: neither is read per batch.
                let (c, _) = tables(&mut rng, &[b, t, d / 2], dtype)?;
                let (_, s) = tables(&mut rng, &[t, d / 2], dtype)?;
                check_case(kind, &x, &c, &s, &format!("{what} 3-D cos 2-D sin"))?;
                // Tables narrowed from a longer cache (a storage offset, as Llama does).
                let (c, s) = tables(&mut rng, &[t + 40, d / 2], dtype)?;
                let (c, s) = (c.narrow(0, 33, t)?, s.narrow(0, 33, t)?);
                check_case(kind, &x, &c, &s, &format!("{what} narrowed tables"))?;
            }
        }
    }
    Ok(())
}

#[test]
fn storage_offsets_and_views_made_contiguous() -> Result<()> {
    let mut rng = Rng::new(7);
    for kind in KINDS {
        for dtype in DTYPES {
            let (b, h, t, d) = (2, 3, 5, 16);
            // xs narrowed out of a bigger batch: contiguous with a storage offset.
            let big = randn(&mut rng, &xs_shape(kind, b + 2, h, t, d), dtype)?;
            let x = big.narrow(0, 1, b)?;
            assert!(x.is_contiguous());
            let (c, s) = tables(&mut rng, &[t, d / 2], dtype)?;
            check_case(kind, &x, &c, &s, &format!("{kind:?} {dtype:?} offset xs"))?;
            // The other layout transposed then made contiguous (what Llama feeds `rope`).
            let other = randn(
                &mut rng,
                &[
                    b,
                    xs_shape(kind, 1, h, t, d)[2],
                    xs_shape(kind, 1, h, t, d)[1],
                    d,
                ],
                dtype,
            )?;
            let x = other.transpose(1, 2)?.contiguous()?;
            check_case(kind, &x, &c, &s, &format!("{kind:?} {dtype:?} transposed"))?;
        }
    }
    Ok(())
}

/// The first line of an error (candle may append a backtrace).
fn message(e: candle_core::Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_owned()
}

fn same_error(kind: Kind, x: &Tensor, c: &Tensor, s: &Tensor, what: &str) {
    let a = ours(kind, x, c, s).map(|_| ()).map_err(message);
    let b = theirs(kind, x, c, s).map(|_| ()).map_err(message);
    assert!(b.is_err(), "{what}: candle_nn accepted it");
    assert_eq!(a, b, "{what}");
}

#[test]
fn refuses_what_candle_nn_refuses_with_its_message() -> Result<()> {
    let mut rng = Rng::new(11);
    for kind in KINDS {
        for dtype in DTYPES {
            let x = randn(&mut rng, &xs_shape(kind, 2, 3, 4, 8), dtype)?;
            let (c, s) = tables(&mut rng, &[4, 4], dtype)?;
            let w = format!("{kind:?} {dtype:?}");
            // Non-contiguous xs (a transposed view), cos, sin.
            let xt = x.transpose(1, 2)?;
            assert!(!xt.is_contiguous());
            same_error(kind, &xt, &c, &s, &format!("{w} xs view"));
            let ct = tables(&mut rng, &[4, 4], dtype)?.0.t()?;
            same_error(kind, &x, &ct, &s, &format!("{w} cos view"));
            same_error(kind, &x, &c, &ct, &format!("{w} sin view"));
            // Shapes: xs not 4-D, tables 1-D / 4-D, batch mismatch, half width, too few rows.
            same_error(kind, &x.flatten(0, 1)?, &c, &s, &format!("{w} 3-D xs"));
            same_error(kind, &x, &c.flatten_all()?, &s, &format!("{w} 1-D cos"));
            same_error(
                kind,
                &x,
                &c.reshape((1, 1, 4, 4))?,
                &s,
                &format!("{w} 4-D cos"),
            );
            let (c3, s3) = tables(&mut rng, &[3, 4, 4], dtype)?;
            same_error(kind, &x, &c3, &s3, &format!("{w} batch 3 vs 2"));
            let (cw, sw) = tables(&mut rng, &[4, 3], dtype)?;
            same_error(kind, &x, &cw, &sw, &format!("{w} d/2 wrong"));
            let (cs, ss) = tables(&mut rng, &[3, 4], dtype)?;
            same_error(kind, &x, &cs, &ss, &format!("{w} t' < t"));
            // Table dtype differing from xs's.
            let other = if dtype == DType::F32 {
                DType::F16
            } else {
                DType::F32
            };
            let (co, so) = (c.to_dtype(other)?, s.to_dtype(other)?);
            same_error(kind, &x, &co, &so, &format!("{w} tables {other:?}"));
            same_error(kind, &x, &c, &so, &format!("{w} sin {other:?}"));
        }
    }
    Ok(())
}

#[test]
fn f64_is_handed_to_candle_nn() -> Result<()> {
    let mut rng = Rng::new(13);
    for kind in KINDS {
        let x = randn(&mut rng, &xs_shape(kind, 2, 3, 5, 12), DType::F64)?;
        let (c, s) = tables(&mut rng, &[5, 6], DType::F64)?;
        let (y, z) = (ours(kind, &x, &c, &s)?, theirs(kind, &x, &c, &s)?);
        assert_eq!(y.dtype(), DType::F64);
        // The same kernel: bit for bit.
        assert_eq!(values(&y)?, values(&z)?, "{kind:?}");
    }
    Ok(())
}

#[test]
fn empty_tensors_give_empty_results() -> Result<()> {
    for kind in KINDS {
        for dtype in DTYPES {
            for (b, h, t) in [(0, 2, 3), (2, 0, 3), (2, 2, 0)] {
                let x = Tensor::zeros(xs_shape(kind, b, h, t, 8), dtype, &Device::Cpu)?;
                let c = Tensor::zeros((t, 4), dtype, &Device::Cpu)?;
                let y = ours(kind, &x, &c, &c)?;
                assert_eq!(y.dims(), x.dims());
                assert_eq!(y.dtype(), dtype);
                // candle_nn agrees where it does not panic: its `par_chunks(t·d)` (`rope`,
                // `rope_i`) and `par_chunks(t·h·d)` (`rope_thd`) panic on a zero chunk size.
                let chunk = if kind == Kind::Thd { t * h } else { t };
                if chunk > 0 {
                    assert_eq!(theirs(kind, &x, &c, &c)?.dims(), x.dims());
                }
            }
        }
    }
    Ok(())
}

#[test]
fn f16_and_bf16_round_once_where_candle_nn_rounds_three_times() -> Result<()> {
    // Not a speed claim: over many random pairs posenc's single rounding is never further from
    // the exact rotation than candle_nn's per-operation rounding, and strictly closer overall.
    let mut rng = Rng::new(17);
    for dtype in [DType::F16, DType::BF16] {
        let x = randn(&mut rng, &[1, 8, 64, 64], dtype)?;
        let (c, s) = tables(&mut rng, &[64, 32], dtype)?;
        let r = reference(Kind::Half, &x, &c, &s)?;
        let y = values(&ours(Kind::Half, &x, &c, &s)?)?;
        let z = values(&theirs(Kind::Half, &x, &c, &s)?)?;
        let err = |v: &[f64]| {
            v.iter()
                .zip(&r)
                .map(|(a, (e, _))| (a - e).abs())
                .sum::<f64>()
        };
        let (ey, ez) = (err(&y), err(&z));
        assert!(
            ey < ez,
            "{dtype:?}: posenc total error {ey} vs candle_nn {ez}"
        );
    }
    Ok(())
}
