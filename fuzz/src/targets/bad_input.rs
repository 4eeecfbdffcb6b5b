//! Bad input at every public entry point.
//!
//! Random (often absurd) shapes, parameters and buffer lengths are thrown at `Rope::new`,
//! `Rope::with_backend`, `apply`, `apply_inverse`, `fill_cos_sin`, the table path
//! (`Table` on a rope of the table's rotary dim), `Sinusoidal::new`, `Sinusoidal::with_backend`, `fill`, `fill_times`,
//! `fill_positions` and `add`. Checked:
//!
//! * nothing panics (overflow checks and debug assertions are on in the fuzz build);
//! * a call that returns `Err` leaves every buffer it was given bitwise unchanged;
//! * a call succeeds exactly when its documented length/shape rules hold (where the docs
//!   state them precisely), and a `Rope` that was accepted has a sane configuration;
//! * a successful rotation leaves the channels past the rotary dim untouched.
//!
//! Claimed shapes (`n_heads`, `head_dim`, `d_model`, ...) go up to `usize::MAX`; the buffers
//! actually allocated stay below [`MAX_ELEMS`] elements each.

use arbitrary::Arbitrary;
use posenc::{
    Backend, Error, Layout, LongRope, MAX_ROTARY_DIM, Rope, RopeConfig, Scaling, Sinusoidal,
    SinusoidalLayout, Yarn, bf16, f16,
};
/// The accuracy contract's domain for sinusoidal positions and times (posenc's crate docs).
const DOMAIN: i64 = 1 << 26;

use crate::{
    DtypeSel, FloatParam, Fz, MAX_ELEMS, PosSel, assert_bits_eq, assert_tail_untouched, gen_vec,
    positions,
};

/// A claimed dimension: anything from 0 to `usize::MAX`.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Dim {
    Small(u8),
    Medium(u16),
    Large(u32),
    Any(usize),
    Max,
    MaxMinus(u8),
    /// `2^k`.
    Pow2(u8),
    /// `2^k + 1` (odd) or `2^k + 2`.
    Pow2Plus(u8, bool),
}

impl Dim {
    fn get(self) -> usize {
        let p2 = |k: u8| 1usize.wrapping_shl(k as u32 % usize::BITS);
        match self {
            Dim::Small(v) => v as usize,
            Dim::Medium(v) => v as usize,
            Dim::Large(v) => v as usize,
            Dim::Any(v) => v,
            Dim::Max => usize::MAX,
            Dim::MaxMinus(k) => usize::MAX - k as usize,
            Dim::Pow2(k) => p2(k),
            Dim::Pow2Plus(k, odd) => p2(k).wrapping_add(if odd { 1 } else { 2 }),
        }
    }
}

/// A buffer length, relative to the length the other arguments imply (when that is
/// representable), capped at [`MAX_ELEMS`].
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Len {
    Exact,
    Delta(i8),
    Any(u16),
    Zero,
}

impl Len {
    fn get(self, expected: Option<usize>) -> usize {
        let e = expected.filter(|&e| e <= MAX_ELEMS);
        match self {
            Len::Exact => e.unwrap_or(1),
            Len::Delta(d) => match e {
                Some(e) => (e as i64 + d as i64).clamp(0, MAX_ELEMS as i64) as usize,
                None => d.unsigned_abs() as usize,
            },
            Len::Any(n) => n as usize % (MAX_ELEMS + 1),
            Len::Zero => 0,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum RotarySel {
    /// `rotary_dim = head_dim` (what `RopeConfig::new` sets).
    Full,
    Dim(Dim),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum FirstPos {
    Any(u32),
    Max,
    NearMax(u16),
    Zero,
    /// Around the position domain's edge, 2^26: `2^26 + 8 − k`.
    Edge(u8),
}

/// Every `Scaling` variant with arbitrary parameters; factor slices get their own lengths.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum ScalingSel {
    None,
    Linear(FloatParam),
    Ntk(FloatParam),
    DynamicNtk {
        factor: FloatParam,
        max_positions: u32,
        seq_len: u32,
    },
    Yarn {
        factor: FloatParam,
        original_max_positions: u32,
        beta_fast: FloatParam,
        beta_slow: FloatParam,
        mscale: Option<FloatParam>,
        mscale_all_dim: Option<FloatParam>,
        attention_factor: Option<FloatParam>,
        truncate: bool,
        defaults: bool,
    },
    Llama3 {
        factor: FloatParam,
        low_freq_factor: FloatParam,
        high_freq_factor: FloatParam,
        original_max_positions: u32,
    },
    LongRope {
        short_len: Len,
        long_len: Len,
        original_max_positions: u32,
        max_positions: u32,
        use_long: bool,
        attention_factor: Option<FloatParam>,
    },
    FreqFactors(Len),
    Proportional {
        partial_rotary_factor: FloatParam,
        factor: FloatParam,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    head_dim: Dim,
    rotary: RotarySel,
    n_heads: Dim,
    d_model: Dim,
    base: FloatParam,
    sin_base: FloatParam,
    scaling: ScalingSel,
    interleaved: bool,
    sin_split: bool,
    dtype: DtypeSel,
    pos_len: Len,
    x_len: Len,
    cos_len: Len,
    sin_len: Len,
    out_len: Len,
    first_position: FirstPos,
    positions: Vec<PosSel>,
    /// `fill_times`' times (cycled to the positions' count).
    times: Vec<FloatParam>,
    factors: Vec<FloatParam>,
    data: Vec<u32>,
}

/// Calls `f` on a copy of `buf` and, if it fails, asserts the copy is bitwise unchanged.
/// Returns the result and the (possibly written) copy.
#[track_caller]
fn call<T: Fz, R>(
    what: &str,
    buf: &[T],
    f: impl FnOnce(&mut [T]) -> Result<R, Error>,
) -> (Result<R, Error>, Vec<T>) {
    let mut x = buf.to_vec();
    let r = f(&mut x);
    if r.is_err() {
        assert_bits_eq(buf, &x, &format!("{what} failed but changed its buffer"));
    }
    (r, x)
}

#[track_caller]
fn expect_ok<R>(what: &str, r: &Result<R, Error>, valid: bool) {
    match r {
        Ok(_) if !valid => panic!("{what}: accepted an invalid call"),
        Err(e) if valid => panic!("{what}: refused a valid call: {e:?}"),
        _ => {}
    }
}

fn scaling_of<'a>(sel: ScalingSel, half: usize, factors: &'a [f32]) -> Scaling<'a> {
    // Factor slices: the first `len` of `factors` (cycled into a buffer by the caller).
    let slice = |len: Len| &factors[..len.get(Some(half)).min(factors.len())];
    match sel {
        ScalingSel::None => Scaling::None,
        ScalingSel::Linear(f) => Scaling::Linear { factor: f.get() },
        ScalingSel::Ntk(f) => Scaling::Ntk { factor: f.get() },
        ScalingSel::DynamicNtk {
            factor,
            max_positions,
            seq_len,
        } => Scaling::DynamicNtk {
            factor: factor.get(),
            max_positions,
            seq_len,
        },
        ScalingSel::Yarn {
            factor,
            original_max_positions,
            beta_fast,
            beta_slow,
            mscale,
            mscale_all_dim,
            attention_factor,
            truncate,
            defaults,
        } => {
            let mut y = Yarn::new(factor.get(), original_max_positions);
            if !defaults {
                y.beta_fast = beta_fast.get();
                y.beta_slow = beta_slow.get();
                y.mscale = mscale.map(FloatParam::get);
                y.mscale_all_dim = mscale_all_dim.map(FloatParam::get);
                y.attention_factor = attention_factor.map(FloatParam::get);
                y.truncate = truncate;
            }
            Scaling::Yarn(y)
        }
        ScalingSel::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_positions,
        } => Scaling::Llama3 {
            factor: factor.get(),
            low_freq_factor: low_freq_factor.get(),
            high_freq_factor: high_freq_factor.get(),
            original_max_positions,
        },
        ScalingSel::LongRope {
            short_len,
            long_len,
            original_max_positions,
            max_positions,
            use_long,
            attention_factor,
        } => Scaling::LongRope(LongRope {
            short_factor: slice(short_len),
            long_factor: &factors[factors.len() - slice(long_len).len()..],
            original_max_positions,
            max_positions,
            use_long,
            attention_factor: attention_factor.map(FloatParam::get),
        }),
        ScalingSel::FreqFactors(len) => Scaling::FreqFactors(slice(len)),
        ScalingSel::Proportional {
            partial_rotary_factor,
            factor,
        } => Scaling::Proportional {
            partial_rotary_factor: partial_rotary_factor.get(),
            factor: factor.get(),
        },
    }
}

/// `Rope::new` accepted `scaling`: its documented preconditions must hold (src/rope.rs docs
/// of `Scaling`, `Yarn`, `LongRope`).
fn assert_accepted_scaling_is_documented_valid(scaling: &Scaling<'_>, half: usize, base: f32) {
    let pos = |what: &str, v: f32| assert!(v.is_finite() && v > 0.0, "accepted {what} = {v}");
    let list = |what: &str, l: &[f32]| {
        assert_eq!(l.len(), half, "accepted {what} of length {}", l.len());
        for &v in l {
            pos(what, v);
        }
    };
    match *scaling {
        Scaling::None => {}
        Scaling::Linear { factor } | Scaling::Ntk { factor } => pos("factor", factor),
        Scaling::DynamicNtk {
            factor,
            max_positions,
            ..
        } => {
            pos("factor", factor);
            assert_ne!(max_positions, 0, "accepted max_positions 0");
        }
        Scaling::Yarn(y) => {
            pos("factor", y.factor);
            pos("beta_fast", y.beta_fast);
            pos("beta_slow", y.beta_slow);
            assert!(
                y.beta_slow <= y.beta_fast,
                "accepted beta_slow > beta_fast: {y:?}"
            );
            assert_ne!(
                y.original_max_positions, 0,
                "accepted original_max_positions 0"
            );
            match y.attention_factor {
                Some(a) => pos("attention_factor", a),
                // KNOWN ISSUE (fuzz/README.md): the `Yarn` docs refuse non-finite
                // `mscale`/`mscale_all_dim` unconditionally, but `Rope::new` only validates them
                // when they are used, i.e. without an explicit `attention_factor` (which
                // overrides them). Checked only where they are used until docs or code change.
                None => {
                    for v in [y.mscale, y.mscale_all_dim].into_iter().flatten() {
                        assert!(v.is_finite(), "accepted mscale {v}");
                    }
                }
            }
            assert!(base != 1.0, "accepted YaRN with base 1");
        }
        Scaling::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_positions,
        } => {
            pos("factor", factor);
            pos("low_freq_factor", low_freq_factor);
            pos("high_freq_factor", high_freq_factor);
            assert!(
                low_freq_factor <= high_freq_factor,
                "accepted low_freq_factor > high_freq_factor"
            );
            assert_ne!(
                original_max_positions, 0,
                "accepted original_max_positions 0"
            );
        }
        Scaling::LongRope(l) => {
            list("short_factor", l.short_factor);
            list("long_factor", l.long_factor);
            assert_ne!(
                l.original_max_positions, 0,
                "accepted original_max_positions 0"
            );
            if let Some(a) = l.attention_factor {
                pos("attention_factor", a);
            }
        }
        Scaling::FreqFactors(f) => list("freq_factors", f),
        Scaling::Proportional {
            partial_rotary_factor,
            factor,
        } => {
            assert!(
                (0.0..=1.0).contains(&partial_rotary_factor),
                "accepted partial_rotary_factor {partial_rotary_factor}"
            );
            pos("factor", factor);
        }
        _ => {} // a variant added after this target was written
    }
}

/// The documented validity of a caller table's arguments (`posenc_fuzz::table_rotate`).
fn table_call_valid(
    backend: Backend,
    x_len: usize,
    n_heads: usize,
    head_dim: usize,
    cos_len: usize,
    sin_len: usize,
) -> Option<usize> {
    if !backend.is_available() || head_dim == 0 || !head_dim.is_multiple_of(2) || n_heads == 0 {
        return None;
    }
    let row = n_heads.checked_mul(head_dim)?;
    if !x_len.is_multiple_of(row) || sin_len != cos_len {
        return None;
    }
    let tokens = x_len / row;
    if tokens == 0 {
        return (cos_len == 0).then_some(0);
    }
    if !cos_len.is_multiple_of(tokens) {
        return None;
    }
    let rotary_dim = (cos_len / tokens).checked_mul(2)?;
    (rotary_dim != 0 && rotary_dim <= head_dim && rotary_dim <= posenc::MAX_ROTARY_DIM)
        .then_some(rotary_dim)
}

struct Shapes {
    head_dim: usize,
    rotary_dim: usize,
    n_heads: usize,
    d_model: usize,
    layout: Layout,
    sin_layout: SinusoidalLayout,
}

fn run<T: Fz>(inp: &Input, s: &Shapes, scaling: Scaling<'_>, pos: &[i32], lens: [usize; 4]) {
    let [x_len, cos_len, sin_len, out_len] = lens;
    let x0: Vec<T> = gen_vec(x_len, &inp.data);
    let cos0: Vec<f32> = gen_vec(cos_len, &inp.data);
    let sin0: Vec<f32> = gen_vec(sin_len, &inp.data[inp.data.len() / 2..]);
    let out0: Vec<T> = gen_vec(out_len, &inp.data[inp.data.len() / 3..]);
    let (n_heads, head_dim) = (s.n_heads, s.head_dim);

    // ---- Rope::new, with_backend, apply, apply_inverse, fill_cos_sin ----
    let cfg = RopeConfig::new(head_dim, inp.base.get(), s.layout)
        .rotary_dim(s.rotary_dim)
        .scaling(scaling);
    if let Ok(rope) = Rope::new(&cfg) {
        // An accepted configuration is a sane one.
        let rd = s.rotary_dim;
        assert!(
            head_dim != 0 && head_dim % 2 == 0,
            "accepted head_dim {head_dim}"
        );
        assert!(
            rd != 0 && rd.is_multiple_of(2) && rd <= head_dim && rd <= MAX_ROTARY_DIM,
            "accepted rotary_dim {rd} (head_dim {head_dim})"
        );
        assert!(
            cfg.base.is_finite() && cfg.base > 0.0,
            "accepted base {}",
            cfg.base
        );
        assert_accepted_scaling_is_documented_valid(&scaling, rd / 2, cfg.base);
        assert_eq!(rope.inv_freq().len(), rd / 2);
        for &w in rope.inv_freq() {
            // Documented: finite, ≥ 0 and at most 2^16 rad per position.
            assert!(
                w.is_finite() && (0.0..=65_536.0).contains(&w),
                "accepted inv_freq {w} ({cfg:?})"
            );
        }
        let m = rope.attention_factor();
        assert!(m.is_finite() && m > 0.0, "attention factor {m} ({cfg:?})");
        assert_eq!(
            (rope.head_dim(), rope.rotary_dim(), rope.layout()),
            (head_dim, rd, s.layout)
        );

        let rows_ok = n_heads != 0
            && n_heads
                .checked_mul(head_dim)
                .and_then(|r| r.checked_mul(pos.len()))
                == Some(x_len);
        let table_n = pos.len().checked_mul(rd / 2);
        let table_ok = table_n == Some(cos_len) && sin_len == cos_len;

        let mut ropes = vec![rope];
        for &b in Backend::ALL {
            match rope.with_backend(b) {
                Ok(r) => {
                    assert!(b.is_available(), "with_backend accepted {b:?}");
                    assert_eq!(r.backend(), b);
                    ropes.push(r);
                }
                Err(e) => {
                    assert!(!b.is_available(), "with_backend refused {b:?}: {e:?}");
                    assert_eq!(e, Error::BackendUnavailable { backend: b });
                }
            }
        }
        for r in &ropes {
            let (res, x) = call("apply", &x0, |x| r.apply(x, n_heads, pos));
            expect_ok("apply", &res, rows_ok);
            if res.is_ok() {
                assert_tail_untouched(&x0, &x, head_dim, rd);
            }
            let (res, x) = call("apply_inverse", &x0, |x| r.apply_inverse(x, n_heads, pos));
            expect_ok("apply_inverse", &res, rows_ok);
            if res.is_ok() {
                assert_tail_untouched(&x0, &x, head_dim, rd);
            }
            let (mut cos, mut sin) = (cos0.clone(), sin0.clone());
            let res = r.fill_cos_sin(pos, &mut cos, &mut sin);
            expect_ok("fill_cos_sin", &res, table_ok);
            if res.is_err() {
                assert_bits_eq(&cos0, &cos, "fill_cos_sin failed but changed cos");
                assert_bits_eq(&sin0, &sin, "fill_cos_sin failed but changed sin");
            }
        }
    }

    // ---- the table path ----
    for &b in Backend::ALL {
        let valid = table_call_valid(b, x_len, n_heads, head_dim, cos_len, sin_len);
        let (res, x) = call("table path", &x0, |x| {
            crate::table_rotate(b, x, n_heads, head_dim, s.layout, &cos0, &sin0)
        });
        expect_ok("table path", &res, valid.is_some());
        if let (Ok(()), Some(rd)) = (res, valid)
            && rd != 0
        {
            assert_tail_untouched(&x0, &x, head_dim, rd);
        }
    }

    // ---- Sinusoidal ----
    let d = s.d_model;
    let base = inp.sin_base.get();
    let res = Sinusoidal::new(d, base, s.sin_layout);
    expect_ok(
        "Sinusoidal::new",
        &res,
        // posenc documents base ≥ 1 (every frequency ≤ 1, angles in the exact range).
        d != 0 && d.is_multiple_of(2) && base.is_finite() && base >= 1.0,
    );
    let Ok(pe) = res else { return };
    assert_eq!(pe.d_model(), d);
    let mut pes = vec![pe];
    for &b in Backend::ALL {
        match pe.with_backend(b) {
            Ok(p) => {
                assert!(b.is_available());
                assert_eq!(p.backend(), b);
                pes.push(p);
            }
            Err(e) => {
                assert!(!b.is_available(), "Sinusoidal::with_backend refused {b:?}");
                assert_eq!(e, Error::BackendUnavailable { backend: b });
            }
        }
    }
    let first = match inp.first_position {
        FirstPos::Any(p) => p,
        FirstPos::Max => u32::MAX,
        FirstPos::NearMax(k) => u32::MAX - k as u32,
        FirstPos::Zero => 0,
        FirstPos::Edge(k) => (DOMAIN as u32 + 8).wrapping_sub(k as u32),
    };
    // The accuracy domain: every position and time |p| ≤ 2^26 (the largest frequency is 1).
    let rows = (out_len / d) as i64;
    let fill_ok = out_len % d == 0 && (rows == 0 || first as i64 + rows - 1 <= DOMAIN);
    let in_domain = pos.iter().all(|&p| (p as i64).abs() <= DOMAIN);
    let list_ok = pos.len().checked_mul(d) == Some(out_len) && in_domain;
    let times: Vec<f32> = (0..pos.len())
        .map(|i| {
            if inp.times.is_empty() {
                i as f32
            } else {
                inp.times[i % inp.times.len()].get()
            }
        })
        .collect();
    let times_ok = pos.len().checked_mul(d) == Some(out_len)
        && times.iter().all(|&t| (t as f64).abs() <= DOMAIN as f64);
    for p in &pes {
        let (res, _) = call("Sinusoidal::fill", &out0, |o| p.fill(o, first));
        expect_ok("Sinusoidal::fill", &res, fill_ok);
        let (res, out) = call("Sinusoidal::fill_times", &out0, |o| p.fill_times(o, &times));
        expect_ok("Sinusoidal::fill_times", &res, times_ok);
        if res.is_ok() {
            // In the domain every value is a sine or cosine: within [-1, 1], never NaN.
            assert!(
                out.iter().all(|v| v.to_f32().abs() <= 1.0),
                "fill_times left [-1, 1]: {times:?}"
            );
        }
        let (res, _) = call("Sinusoidal::fill_positions", &out0, |o| {
            p.fill_positions(o, pos)
        });
        expect_ok("Sinusoidal::fill_positions", &res, list_ok);
        let (res, _) = call("Sinusoidal::add", &out0, |o| p.add(o, pos));
        expect_ok("Sinusoidal::add", &res, list_ok);
    }
}

/// One fuzz input: `data` decoded as libFuzzer's typed `fuzz_target!` decodes it
/// (`Input::arbitrary_take_rest`), then checked; bytes that decode to nothing are skipped.
pub fn fuzz(data: &[u8]) {
    let Ok(inp) = Input::arbitrary_take_rest(arbitrary::Unstructured::new(data)) else {
        return;
    };
    let head_dim = inp.head_dim.get();
    let rotary_dim = match inp.rotary {
        RotarySel::Full => head_dim,
        RotarySel::Dim(d) => d.get(),
    };
    let s = Shapes {
        head_dim,
        rotary_dim,
        n_heads: inp.n_heads.get(),
        d_model: inp.d_model.get(),
        layout: if inp.interleaved {
            Layout::Interleaved
        } else {
            Layout::RotateHalf
        },
        sin_layout: if inp.sin_split {
            SinusoidalLayout::Split
        } else {
            SinusoidalLayout::Interleaved
        },
    };
    let pos_len = inp.pos_len.get(None).min(1 << 12);
    let pos = positions(pos_len, &inp.positions);
    let row = s.n_heads.checked_mul(head_dim);
    let x_len = inp.x_len.get(row.and_then(|r| r.checked_mul(pos_len)));
    let cos_len = inp.cos_len.get(pos_len.checked_mul(rotary_dim / 2));
    let sin_len = inp.sin_len.get(Some(cos_len));
    let out_len = inp.out_len.get(pos_len.checked_mul(s.d_model));

    // Scaling factor slices: up to MAX_ROTARY_DIM / 2 (+ slack) values, cycled.
    let half = rotary_dim / 2;
    let n_factors = half.min(MAX_ROTARY_DIM) + 8;
    let factors: Vec<f32> = (0..n_factors)
        .map(|i| {
            if inp.factors.is_empty() {
                1.0
            } else {
                inp.factors[i % inp.factors.len()].get()
            }
        })
        .collect();
    let scaling = scaling_of(inp.scaling, half, &factors);

    let lens = [x_len, cos_len, sin_len, out_len];
    match inp.dtype {
        DtypeSel::F32 => run::<f32>(&inp, &s, scaling, &pos, lens),
        DtypeSel::F16 => run::<f16>(&inp, &s, scaling, &pos, lens),
        DtypeSel::Bf16 => run::<bf16>(&inp, &s, scaling, &pos, lens),
    }
}
