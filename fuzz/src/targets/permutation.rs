//! The layout permutation of `posenc::permute_*` is the right one, is invertible, and makes
//! the two RoPE layouts the same math.
//!
//! For a random shape (partial rotary included, rotary dims up to `MAX_ROTARY_DIM`), dtype
//! (f32/f16/bf16 rows holding NaN, ±inf, subnormals) and positions over all of `i32`:
//!
//! * `permute_to_rotate_half` equals the reference index map (`posenc_fuzz::to_rotate_half`)
//!   bit for bit; `P⁻¹·P = id` and `P·P⁻¹ = id` bit for bit, out of place and in place;
//! * on every available backend, `rope_rotate_half(P·x) == P·rope_interleaved(x)` for `apply`
//!   and `apply_inverse` (bitwise, NaN equal to NaN: see `posenc_fuzz::NAN_PAYLOADS_MUST_MATCH`),
//!   and channels past `rotary_dim` are untouched;
//! * the weight permutation moves whole rows exactly as the activation permutation moves each
//!   column (`W'·v = P·(W·v)` for every `v`), out of place and in place, and inverts;
//! * with arbitrary claimed shapes, every function either succeeds or fails without touching
//!   its output, and never panics.

use crate::{
    DtypeSel, Fz, MAX_ELEMS, PosSel, assert_bits_eq, assert_same, assert_tail_untouched, gen_vec,
    positions, to_interleaved, to_rotate_half,
};
use arbitrary::Arbitrary;
use posenc::permute::{
    permute_to_interleaved, permute_to_interleaved_in_place, permute_to_rotate_half,
    permute_to_rotate_half_in_place, permute_weight_to_interleaved,
    permute_weight_to_interleaved_in_place, permute_weight_to_rotate_half,
    permute_weight_to_rotate_half_in_place,
};
use posenc::{Backend, Layout, MAX_ROTARY_DIM, Rope, RopeConfig, bf16, f16};

#[derive(Arbitrary, Debug)]
struct Input {
    /// rotary_dim = 2 · (1 + pairs % 256): up to `MAX_ROTARY_DIM`.
    pairs: u16,
    /// head_dim = rotary_dim + 2 · (tail % 40); zero half the time.
    tail: u8,
    n_heads: u8,
    tokens: u8,
    /// Columns of the weight matrix: 1 + width % 8.
    width: u8,
    dtype: DtypeSel,
    base: u8,
    positions: Vec<PosSel>,
    /// Claimed shapes for the bad-input part: (n_heads, head_dim, rotary_dim, in_features,
    /// src length, dst length).
    claims: (u32, u32, u32, u32, u16, u16),
    data: Vec<u32>,
}

fn available() -> impl Iterator<Item = Backend> {
    Backend::ALL.iter().copied().filter(|b| b.is_available())
}

fn run<T: Fz>(input: &Input, head_dim: usize, rotary_dim: usize) {
    let heads = 1 + input.n_heads as usize % 8;
    let row = heads * head_dim;
    let tokens = (input.tokens as usize % 6).min(MAX_ELEMS / row);
    let x: Vec<T> = gen_vec(tokens * row, &input.data);
    let n = x.len();

    // The permutation itself, and its inverse, out of place and in place.
    let mut p = vec![T::default(); n];
    permute_to_rotate_half(&x, &mut p, heads, head_dim, rotary_dim).unwrap();
    assert_bits_eq(
        &p,
        &to_rotate_half(&x, head_dim, rotary_dim),
        "P vs reference",
    );
    let mut back = vec![T::default(); n];
    permute_to_interleaved(&p, &mut back, heads, head_dim, rotary_dim).unwrap();
    assert_bits_eq(&back, &x, "P⁻¹·P");
    assert_bits_eq(
        &back,
        &to_interleaved(&p, head_dim, rotary_dim),
        "P⁻¹ vs reference",
    );
    let mut q = x.clone();
    permute_to_interleaved_in_place(&mut q, heads, head_dim, rotary_dim).unwrap();
    permute_to_rotate_half_in_place(&mut q, heads, head_dim, rotary_dim).unwrap();
    assert_bits_eq(&q, &x, "P·P⁻¹ in place");
    let mut q = x.clone();
    permute_to_rotate_half_in_place(&mut q, heads, head_dim, rotary_dim).unwrap();
    assert_bits_eq(&q, &p, "P in place");

    // RoPE: rope_rotate_half(P·x) == P·rope_interleaved(x), every backend.
    let base = [10_000.0, 500_000.0, 1e6, 150_000.0][input.base as usize % 4];
    let pos = positions(tokens, &input.positions);
    let cfg = RopeConfig::new(head_dim, base, Layout::Interleaved).rotary_dim(rotary_dim);
    let il = Rope::new(&cfg).unwrap();
    let rh = Rope::new(&RopeConfig {
        layout: Layout::RotateHalf,
        ..cfg
    })
    .unwrap();
    for backend in available() {
        let (il, rh) = (
            il.with_backend(backend).unwrap(),
            rh.with_backend(backend).unwrap(),
        );
        for inverse in [false, true] {
            let mut a = x.clone();
            let mut b = p.clone();
            if inverse {
                il.apply_inverse(&mut a, heads, &pos).unwrap();
                rh.apply_inverse(&mut b, heads, &pos).unwrap();
            } else {
                il.apply(&mut a, heads, &pos).unwrap();
                rh.apply(&mut b, heads, &pos).unwrap();
            }
            assert_tail_untouched(&x, &a, head_dim, rotary_dim);
            assert_tail_untouched(&p, &b, head_dim, rotary_dim);
            let mut pa = vec![T::default(); n];
            permute_to_rotate_half(&a, &mut pa, heads, head_dim, rotary_dim).unwrap();
            let what = if inverse { "apply_inverse" } else { "apply" };
            assert_same(
                &b,
                &pa,
                &format!("{backend:?} {what}: rope_rh(P·x) vs P·rope_il(x)"),
            );
            permute_to_interleaved_in_place(&mut b, heads, head_dim, rotary_dim).unwrap();
            assert_same(
                &b,
                &a,
                &format!("{backend:?} {what}: P⁻¹·rope_rh(P·x) vs rope_il(x)"),
            );
        }
    }

    // Weights: [heads·head_dim, width] rows move as the activation permutation moves a column.
    let width = 1 + input.width as usize % 8;
    let w_heads = (1 + input.n_heads as usize % 8)
        .min(MAX_ELEMS / (head_dim * width))
        .max(1);
    let w: Vec<T> = gen_vec(w_heads * head_dim * width, &input.data);
    let mut wp = vec![T::default(); w.len()];
    permute_weight_to_rotate_half(&w, &mut wp, w_heads, head_dim, rotary_dim, width).unwrap();
    for c in 0..width {
        let col: Vec<T> = w.iter().skip(c).step_by(width).copied().collect();
        let mut pcol = vec![T::default(); col.len()];
        permute_to_rotate_half(&col, &mut pcol, w_heads, head_dim, rotary_dim).unwrap();
        let wp_col: Vec<T> = wp.iter().skip(c).step_by(width).copied().collect();
        assert_bits_eq(&wp_col, &pcol, "weight column c vs P·column");
    }
    let mut wi = w.clone();
    permute_weight_to_rotate_half_in_place(&mut wi, w_heads, head_dim, rotary_dim, width).unwrap();
    assert_bits_eq(&wi, &wp, "weight permutation in place");
    permute_weight_to_interleaved_in_place(&mut wi, w_heads, head_dim, rotary_dim, width).unwrap();
    assert_bits_eq(&wi, &w, "weight P⁻¹·P in place");
    let mut wb = vec![T::default(); w.len()];
    permute_weight_to_interleaved(&wp, &mut wb, w_heads, head_dim, rotary_dim, width).unwrap();
    assert_bits_eq(&wb, &w, "weight P⁻¹·P");
}

/// Arbitrary claimed shapes against buffers of arbitrary (small) lengths: no panic, and a
/// refused call leaves its output bit for bit as it was.
fn claims(input: &Input) {
    let (h, d, r, f, ls, ld) = input.claims;
    let pick = |v: u32| -> usize {
        match v % 4 {
            0 => (v >> 2) as usize % 64,
            1 => (v >> 2) as usize,
            2 => usize::MAX - (v >> 2) as usize % 4,
            _ => 1usize << ((v >> 2) % usize::BITS),
        }
    };
    let (h, d, r, f) = (pick(h), pick(d), pick(r), pick(f));
    let src: Vec<f32> = gen_vec(ls as usize % 4096, &input.data);
    let orig: Vec<f32> = gen_vec(
        ld as usize % 4096,
        &input.claims.0.to_le_bytes().map(u32::from),
    );
    let check = |res: Result<(), posenc::Error>, out: &[f32], what: &str| {
        if res.is_err() {
            assert_bits_eq(out, &orig, &format!("{what} wrote before failing: {res:?}"));
        }
    };
    let mut dst = orig.clone();
    check(
        permute_to_rotate_half(&src, &mut dst, h, d, r),
        &dst,
        "to_rotate_half",
    );
    let mut dst = orig.clone();
    check(
        permute_to_interleaved(&src, &mut dst, h, d, r),
        &dst,
        "to_interleaved",
    );
    let mut dst = orig.clone();
    check(
        permute_weight_to_rotate_half(&src, &mut dst, h, d, r, f),
        &dst,
        "weight_to_rh",
    );
    let mut dst = orig.clone();
    check(
        permute_weight_to_interleaved(&src, &mut dst, h, d, r, f),
        &dst,
        "weight_to_il",
    );
    let mut x = orig.clone();
    let res = permute_to_rotate_half_in_place(&mut x, h, d, r);
    check(res, &x, "to_rotate_half_in_place");
    if res.is_ok() {
        assert!(r <= MAX_ROTARY_DIM);
        permute_to_interleaved_in_place(&mut x, h, d, r).unwrap();
        assert_bits_eq(&x, &orig, "claimed shape: P⁻¹·P in place");
    }
    let mut x = orig.clone();
    let res = permute_weight_to_interleaved_in_place(&mut x, h, d, r, f);
    check(res, &x, "weight_to_interleaved_in_place");
    if res.is_ok() {
        permute_weight_to_rotate_half_in_place(&mut x, h, d, r, f).unwrap();
        assert_bits_eq(&x, &orig, "claimed shape: weight P·P⁻¹ in place");
    }
}

/// One fuzz input: `data` decoded as libFuzzer's typed `fuzz_target!` decodes it
/// (`Input::arbitrary_take_rest`), then checked; bytes that decode to nothing are skipped.
pub fn fuzz(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(arbitrary::Unstructured::new(data)) else {
        return;
    };
    let rotary_dim = 2 * (1 + input.pairs as usize % (MAX_ROTARY_DIM / 2));
    let head_dim = rotary_dim + 2 * (input.tail as usize % 40) * (input.tail as usize & 1);
    match input.dtype {
        DtypeSel::F32 => run::<f32>(&input, head_dim, rotary_dim),
        DtypeSel::F16 => run::<f16>(&input, head_dim, rotary_dim),
        DtypeSel::Bf16 => run::<bf16>(&input, head_dim, rotary_dim),
    }
    claims(&input);
}
