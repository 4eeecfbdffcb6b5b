//! Layouts are the same math, and backends agree.
//!
//! For a random valid RoPE (partial rotary included; f32/f16/bf16 rows holding NaN, ±inf,
//! subnormals; positions over all of `i32`; optional Linear scaling), on every available
//! backend:
//!
//! * `Layout::Interleaved` equals, bit for bit (any NaN equals any NaN: see
//!   `posenc_fuzz::NAN_PAYLOADS_MUST_MATCH`), permuting
//!   each head's rotary part to rotate_half order, applying `Layout::RotateHalf` and permuting
//!   back — for `apply`, `apply_inverse`, and the table path with the tables of
//!   `fill_cos_sin` and with arbitrary caller tables;
//! * `apply_with_table_on(fill_cos_sin tables)` equals `apply` (the tables are "the exact-angle
//!   values the apply path uses");
//! * channels past `rotary_dim` are untouched;
//! * every backend agrees with `Backend::Scalar`: bitwise where `matches_scalar_bitwise`, else
//!   within the documented rotation bound (see [`agreement`]); cos/sin tables bitwise always;
//! * the fused ops are the same math in both layouts too, bit for bit: `apply_backward`, and
//!   `apply_into` from the rows into a token-major f32 and bf16 destination (the source
//!   permuted, the destination permuted back). (QK-norm is left out: permuting a head reorders
//!   its sum of squares, which the contract leaves free, so the norm factor may differ in
//!   its last bit between the layouts.)

use crate::{
    DtypeSel, FloatParam, Fz, PosSel, assert_bits_eq, assert_same, assert_tail_untouched, gen_vec,
    max_freq, position_limit, positions_within, to_interleaved, to_rotate_half,
};
use arbitrary::Arbitrary;
use posenc::{Backend, Dtype, Layout, Rope, RopeConfig, Scaling, View, bf16, f16};

#[derive(Arbitrary, Debug)]
enum BaseSel {
    Common(u8),
    Any(FloatParam),
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// rotary_dim = 2 · (1 + pairs % 256): up to `MAX_ROTARY_DIM`, several 64-pair chunks.
    pairs: u16,
    /// Partial rotary: head_dim = rotary_dim + 2 · (tail % 48); zero half the time.
    tail: u8,
    n_heads: u8,
    tokens: u8,
    dtype: DtypeSel,
    base: BaseSel,
    linear: Option<FloatParam>,
    positions: Vec<PosSel>,
    /// Words for arbitrary caller cos/sin tables.
    table_seed: Vec<u32>,
    /// Words for the rows (the rest of the input).
    data: Vec<u32>,
}

/// How a backend's output must relate to `Backend::Scalar`'s.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Agreement {
    /// Bit for bit (NaN equals NaN unless `NAN_PAYLOADS_MUST_MATCH`).
    Bitwise,
    /// Within the documented rotation bound: each output is within `2·u·(|a·c| + |b·s|)` of
    /// the exact value for the given c, s, so two backends are within twice that of each
    /// other, plus one ulp of the storage type for the final rounding of f16/bf16.
    RotationBound,
}

/// The agreement each backend is documented to have with `Backend::Scalar`.
///
/// `Backend::matches_scalar_bitwise` is the crate's own statement: Scalar and Portable are
/// bitwise (no fused multiply-add, same operation order), the x86 tiers (AVX2+FMA, AVX-512)
/// fuse the rotation and are only within the bound. To force every backend to bitwise (or to
/// the bound), change this one function.
fn agreement(backend: Backend) -> Agreement {
    if backend.matches_scalar_bitwise() {
        Agreement::Bitwise
    } else {
        Agreement::RotationBound
    }
}

/// Checks `other` (a backend's output in interleaved order) against `reference` (Scalar's)
/// under `policy`. `mag(t, j)` bounds `|c|` and `|s|` of pair `j` of token `t`.
#[allow(clippy::too_many_arguments)]
fn check_agreement<T: Fz>(
    policy: Agreement,
    x0: &[T],
    reference: &[T],
    other: &[T],
    row: usize,
    head_dim: usize,
    rotary_dim: usize,
    mag: &dyn Fn(usize, usize) -> f32,
    what: &str,
) {
    match policy {
        Agreement::Bitwise => assert_same(reference, other, what),
        Agreement::RotationBound => {
            assert_tail_untouched(x0, other, head_dim, rotary_dim);
            let u = f32::EPSILON as f64 / 2.0;
            let tiny = f32::from_bits(1) as f64; // underflow in a product: absolute, ≤ 2^-150
            for (i, (&r, &o)) in reference.iter().zip(other).enumerate() {
                let (t, c) = (i / row, i % head_dim);
                if c >= rotary_dim || r.bits() == o.bits() {
                    continue;
                }
                let first = i - c % 2; // pair (2j, 2j + 1) in interleaved order
                let (a, b) = (x0[first].to_f32() as f64, x0[first + 1].to_f32() as f64);
                let m = mag(t, c / 2) as f64;
                let s = (a.abs() + b.abs()) * m;
                // Non-finite inputs or tables, or an f32 product that may overflow: only
                // "no panic" is promised (fused and unfused legitimately differ, e.g. NaN
                // from inf − inf against a finite fused result).
                if !s.is_finite() || s >= f32::MAX as f64 * 0.5 {
                    continue;
                }
                let rounding = if T::DTYPE == Dtype::F32 {
                    0.0
                } else {
                    T::ulp(r.to_f32().abs().max(o.to_f32().abs())) as f64
                };
                let tol = 4.0 * u * s + 4.0 * tiny + rounding;
                let (rf, of) = (r.to_f32() as f64, o.to_f32() as f64);
                let ok = if rf.is_nan() && of.is_nan() {
                    true
                } else if rf.is_finite() && of.is_finite() {
                    (rf - of).abs() <= tol
                } else if rf.is_infinite() || of.is_infinite() {
                    // Storage overflow (f16): the finite one must be at the edge of the range.
                    let fin = if rf.is_finite() { rf } else { of };
                    (rf.is_infinite() && of.is_infinite() && rf == of)
                        || (fin.is_finite() && fin.abs() + tol >= T::MAX as f64)
                } else {
                    false // NaN from finite, non-overflowing inputs
                };
                assert!(
                    ok,
                    "{what}: index {i}: scalar {rf:e} vs {of:e}, |diff| exceeds the bound {tol:e} \
                     (a = {a:e}, b = {b:e}, max |c|,|s| = {m:e})"
                );
            }
        }
    }
}

/// Everything one backend produces for a case (all outputs in interleaved order).
struct Outputs<T> {
    apply: Vec<T>,
    inverse: Vec<T>,
    table: Vec<T>,
    random_table: Vec<T>,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

struct Case<'a> {
    head_dim: usize,
    rotary_dim: usize,
    n_heads: usize,
    positions: &'a [i32],
    rand_cos: &'a [f32],
    rand_sin: &'a [f32],
}

/// `apply_into` from `x0` into a token-major destination of `D` (every head of every token,
/// zeros before the call) in both layouts, the rotate_half source permuted and its destination
/// permuted back: asserts the two are bitwise equal.
fn into_both_layouts<T: Fz, D: Fz>(
    x0: &[T],
    case: &Case<'_>,
    what: &str,
    rope: impl Fn(Layout) -> Rope,
) {
    let (hd, rd, nh) = (case.head_dim, case.rotary_dim, case.n_heads);
    let view = View::token_major(nh, hd);
    let run = |src: &[T], layout: Layout| {
        let mut dst = vec![D::from_f32(0.0); src.len()];
        rope(layout)
            .apply_into(src, nh, &mut dst, view, case.positions)
            .expect("valid apply_into refused");
        dst
    };
    let il = run(x0, Layout::Interleaved);
    let rh = run(&to_rotate_half(x0, hd, rd), Layout::RotateHalf);
    assert_same(&il, &to_interleaved(&rh, hd, rd), what);
}

/// Runs `f` on the interleaved rows and on their rotate_half permutation (permuted back), and
/// asserts the two are bitwise equal. Returns the interleaved result.
fn both_layouts<T: Fz>(
    x0: &[T],
    case: &Case<'_>,
    what: &str,
    f: impl Fn(&mut [T], Layout),
) -> Vec<T> {
    let mut il = x0.to_vec();
    f(&mut il, Layout::Interleaved);
    let mut rh = to_rotate_half(x0, case.head_dim, case.rotary_dim);
    f(&mut rh, Layout::RotateHalf);
    let rh = to_interleaved(&rh, case.head_dim, case.rotary_dim);
    assert_same(&il, &rh, what);
    assert_tail_untouched(x0, &il, case.head_dim, case.rotary_dim);
    il
}

fn run_backend<T: Fz>(
    backend: Backend,
    il: &Rope,
    rh: &Rope,
    x0: &[T],
    case: &Case<'_>,
) -> Outputs<T> {
    let il = il.with_backend(backend).expect("available backend refused");
    let rh = rh.with_backend(backend).expect("available backend refused");
    let rope = |layout| match layout {
        Layout::Interleaved => il,
        Layout::RotateHalf => rh,
    };
    let name = backend.name();
    let (n_heads, head_dim, pos) = (case.n_heads, case.head_dim, case.positions);

    let apply = both_layouts(x0, case, &format!("{name}: apply"), |x, l| {
        rope(l).apply(x, n_heads, pos).expect("valid apply refused")
    });
    let inverse = both_layouts(x0, case, &format!("{name}: apply_inverse"), |x, l| {
        rope(l)
            .apply_inverse(x, n_heads, pos)
            .expect("valid apply_inverse refused")
    });

    both_layouts(x0, case, &format!("{name}: apply_backward"), |x, l| {
        rope(l)
            .apply_backward(x, n_heads, pos)
            .expect("valid apply_backward refused")
    });
    into_both_layouts::<T, f32>(x0, case, &format!("{name}: apply_into f32"), rope);
    into_both_layouts::<T, bf16>(x0, case, &format!("{name}: apply_into bf16"), rope);

    let n = pos.len() * case.rotary_dim / 2;
    let (mut cos, mut sin) = (vec![0f32; n], vec![0f32; n]);
    il.fill_cos_sin(pos, &mut cos, &mut sin)
        .expect("valid fill_cos_sin refused");
    let (mut cos2, mut sin2) = (vec![f32::NAN; n], vec![f32::NAN; n]);
    rh.fill_cos_sin(pos, &mut cos2, &mut sin2)
        .expect("valid fill_cos_sin refused");
    assert_same(&cos, &cos2, &format!("{name}: fill_cos_sin cos, layouts"));
    assert_same(&sin, &sin2, &format!("{name}: fill_cos_sin sin, layouts"));

    let with_table = |cos: &[f32], sin: &[f32], what: &str| {
        both_layouts(x0, case, &format!("{name}: {what}"), |x, l| {
            crate::table_rotate(backend, x, n_heads, head_dim, l, cos, sin)
                .expect("valid table refused")
        })
    };
    let table = with_table(&cos, &sin, "apply_with_table(fill_cos_sin)");
    // fill_cos_sin writes "the exact-angle values the apply path uses".
    assert_same(
        &apply,
        &table,
        &format!("{name}: apply vs apply_with_table(fill_cos_sin)"),
    );
    let random_table = with_table(case.rand_cos, case.rand_sin, "apply_with_table(random)");
    Outputs {
        apply,
        inverse,
        table,
        random_table,
        cos,
        sin,
    }
}

fn run<T: Fz>(input: &Input, head_dim: usize, rotary_dim: usize, base: f32, scaling: Scaling) {
    let n_heads = 1 + input.n_heads as usize % 4;
    let tokens = input.tokens as usize % 6;
    let row = n_heads * head_dim;
    let x0: Vec<T> = gen_vec(tokens * row, &input.data);
    let n = tokens * rotary_dim / 2;
    let rand_cos: Vec<f32> = gen_vec(n, &input.table_seed);
    let rand_sin: Vec<f32> = gen_vec(
        n,
        &input.table_seed.iter().rev().copied().collect::<Vec<_>>(),
    );

    let cfg = RopeConfig::new(head_dim, base, Layout::Interleaved)
        .rotary_dim(rotary_dim)
        .scaling(scaling);
    let il = Rope::new(&cfg);
    let rh = Rope::new(&RopeConfig {
        layout: Layout::RotateHalf,
        ..cfg
    });
    let (il, rh) = match (il, rh) {
        (Ok(il), Ok(rh)) => (il, rh),
        (Err(a), Err(b)) => {
            // Compared by Debug text: `Error` holds the offending f32, and NaN != NaN.
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "layouts refuse differently"
            );
            return;
        }
        (a, b) => panic!("one layout accepted, the other refused: {a:?} / {b:?}"),
    };
    assert_bits_eq(il.inv_freq(), rh.inv_freq(), "inv_freq differs by layout");
    // Positions up to the rope's documented domain, `|p| · max ω ≤ 2^26` (the crate docs'
    // accuracy contract): its edge included. A base below 1 or a Linear factor below 1 makes
    // `max ω > 1`, so the edge is not always 2^26.
    let limit = position_limit(max_freq(il.inv_freq()));
    let pos = positions_within(tokens, &input.positions, limit);
    assert_eq!(
        il.attention_factor().to_bits(),
        rh.attention_factor().to_bits()
    );

    let case = Case {
        head_dim,
        rotary_dim,
        n_heads,
        positions: &pos,
        rand_cos: &rand_cos,
        rand_sin: &rand_sin,
    };
    let reference = run_backend(Backend::Scalar, &il, &rh, &x0, &case);
    let attn = il.attention_factor().abs();
    let half = rotary_dim / 2;
    for &b in Backend::ALL {
        if b == Backend::Scalar || !b.is_available() {
            continue;
        }
        let out = run_backend(b, &il, &rh, &x0, &case);
        let policy = agreement(b);
        let what = |op: &str| format!("{} vs scalar ({policy:?}): {op}", b.name());
        let table_mag = |cos: &[f32], sin: &[f32], t: usize, j: usize| {
            cos[t * half + j].abs().max(sin[t * half + j].abs())
        };
        // apply uses c·m, s·m: exactly the fill_cos_sin table; apply_inverse uses c/m, s/m.
        let apply_mag = |t, j| table_mag(&reference.cos, &reference.sin, t, j);
        let inv_mag = |t, j| apply_mag(t, j) / attn / attn * (1.0 + 1e-6);
        let rand_mag = |t, j| table_mag(&rand_cos, &rand_sin, t, j);
        let chk = |r: &[T], o: &[T], mag: &dyn Fn(usize, usize) -> f32, op| {
            check_agreement(policy, &x0, r, o, row, head_dim, rotary_dim, mag, &what(op))
        };
        chk(&reference.apply, &out.apply, &apply_mag, "apply");
        chk(&reference.inverse, &out.inverse, &inv_mag, "apply_inverse");
        chk(
            &reference.table,
            &out.table,
            &apply_mag,
            "table(fill_cos_sin)",
        );
        chk(
            &reference.random_table,
            &out.random_table,
            &rand_mag,
            "table(random)",
        );
        // cos/sin are documented bitwise Scalar's on every backend, the fused x86 tiers
        // included ("cos/sin are bitwise `Scalar`'s"), so this stays bitwise.
        assert_same(&reference.cos, &out.cos, &what("fill_cos_sin cos"));
        assert_same(&reference.sin, &out.sin, &what("fill_cos_sin sin"));
    }
}

/// One fuzz input: `data` decoded as libFuzzer's typed `fuzz_target!` decodes it
/// (`Input::arbitrary_take_rest`), then checked; bytes that decode to nothing are skipped.
pub fn fuzz(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(arbitrary::Unstructured::new(data)) else {
        return;
    };
    let rotary_dim = 2 * (1 + input.pairs as usize % 256);
    let tail = if input.tail & 0x80 == 0 {
        0
    } else {
        input.tail as usize % 48
    };
    let head_dim = rotary_dim + 2 * tail;
    let base = match input.base {
        BaseSel::Common(i) => [10_000.0, 500_000.0, 1_000_000.0, 10.0, 2.0, 1e8][i as usize % 6],
        BaseSel::Any(p) => p.get(),
    };
    let scaling = match input.linear {
        None => Scaling::None,
        Some(f) => Scaling::Linear { factor: f.get() },
    };
    match input.dtype {
        DtypeSel::F32 => run::<f32>(&input, head_dim, rotary_dim, base, scaling),
        DtypeSel::F16 => run::<f16>(&input, head_dim, rotary_dim, base, scaling),
        DtypeSel::Bf16 => run::<bf16>(&input, head_dim, rotary_dim, base, scaling),
    }
}
