//! Quantized K caches: ggml's `Q8_0` and `Q4_0` blocks, their conversions (byte for byte
//! ggml's reference) and the one-pass context shift.

use crate::angles::{At, PosencAngles, Src, with_src};
use crate::error::run;
use crate::raw::Raw;
use crate::rope::{PosencRope, borrow};
use core::ffi::c_int;
use posenc::{BlockQ4_0, BlockQ8_0, Rope};

/// One ggml `Q8_0` block (`block_q8_0`, 34 bytes): 32 values `qs[j] * d`, `d` an IEEE
/// binary16 passed as its bits. A GGUF/llama.cpp `Q8_0` tensor or K cache is an array of
/// these.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PosencBlockQ8_0 {
    /// The scale (binary16 bits).
    pub d: u16,
    /// The quantized values.
    pub qs: [i8; 32],
}

/// One ggml `Q4_0` block (`block_q4_0`, 18 bytes): byte `j` of `qs` holds value `j` in its
/// low nibble and value `j + 16` in its high nibble, each `(code - 8) * d`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PosencBlockQ4_0 {
    /// The scale (binary16 bits).
    pub d: u16,
    /// The 4-bit codes, two per byte.
    pub qs: [u8; 16],
}

// The C structs are posenc's blocks field for field (both `repr(C)`); the casts below rely on
// it.
const _: () = assert!(size_of::<PosencBlockQ8_0>() == 34 && size_of::<BlockQ8_0>() == 34);
const _: () = assert!(align_of::<PosencBlockQ8_0>() == align_of::<BlockQ8_0>());
const _: () = assert!(size_of::<PosencBlockQ4_0>() == 18 && size_of::<BlockQ4_0>() == 18);
const _: () = assert!(align_of::<PosencBlockQ4_0>() == align_of::<BlockQ4_0>());

/// A C block type and posenc's block of the same layout.
///
/// # Safety
/// `Self` and `Self::Posenc` are `repr(C)` structs with the same fields in the same order.
unsafe trait CBlock: Sized {
    type Posenc;
}

// SAFETY: `{ u16 d; i8 qs[32]; }` on both sides, `repr(C)`.
unsafe impl CBlock for PosencBlockQ8_0 {
    type Posenc = BlockQ8_0;
}

// SAFETY: `{ u16 d; u8 qs[16]; }` on both sides, `repr(C)`.
unsafe impl CBlock for PosencBlockQ4_0 {
    type Posenc = BlockQ4_0;
}

/// A validated caller buffer of C blocks as posenc's blocks.
///
/// # Safety
/// As `Raw::as_mut_slice`.
unsafe fn blocks<'a, B: CBlock>(r: &Raw<B>) -> &'a mut [B::Posenc] {
    // SAFETY: the caller's contract for the C blocks; `B::Posenc` has the same layout as `B`
    // (`CBlock`) and every bit pattern is valid for both (integers only).
    unsafe {
        let s = r.as_mut_slice();
        core::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<B::Posenc>(), s.len())
    }
}

/// Shifts a `Q8_0` K cache in place (llama.cpp's context shift with `-ctk q8_0`): `k` holds
/// `n_blocks = at->n_tokens * n_heads * head_dim / 32` blocks, token-major; every token's keys
/// are dequantized, rotated by its delta exactly as `POSENC_OP_SHIFT` rotates floats, and
/// requantized with ggml's reference rounding, in one pass. Bitwise
/// `posenc_dequantize_q8_0` -> `posenc_rope_rotate_f32(POSENC_OP_SHIFT)` ->
/// `posenc_quantize_q8_0`. `head_dim` must be a multiple of 32 (else
/// `POSENC_ERR_PARAMETER_OUT_OF_RANGE`) and at most 4096.
///
/// Returns `POSENC_OK`, or an error code with `k` unchanged.
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `k` to `n_blocks` writable
/// blocks not overlapping `rope` or the buffers of `*at`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_shift_q8_0(
    rope: *const PosencRope,
    k: *mut PosencBlockQ8_0,
    n_blocks: usize,
    n_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `shift` requires.
    unsafe {
        shift(rope, k, n_blocks, n_heads, at, |r, k, n, a| {
            with_src!(a, |a| r.shift_q8_0(k, n, a))
        })
    }
}

/// `posenc_rope_shift_q8_0` for a `Q4_0` K cache (`-ctk q4_0`).
///
/// # Safety
/// As `posenc_rope_shift_q8_0`, with `k` pointing to `n_blocks` writable `PosencBlockQ4_0`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_shift_q4_0(
    rope: *const PosencRope,
    k: *mut PosencBlockQ4_0,
    n_blocks: usize,
    n_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `shift` requires.
    unsafe {
        shift(rope, k, n_blocks, n_heads, at, |r, k, n, a| {
            with_src!(a, |a| r.shift_q4_0(k, n, a))
        })
    }
}

/// The shift entry points: validates the buffers, then runs `f` with positions or a table.
///
/// # Safety
/// The caller contract of `posenc_rope_shift_q8_0`.
unsafe fn shift<B: CBlock>(
    rope: *const PosencRope,
    k: *mut B,
    n_blocks: usize,
    n_heads: usize,
    at: *const PosencAngles,
    f: impl FnOnce(&Rope, &mut [B::Posenc], usize, Src<'_>) -> Result<(), posenc::Error>,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let k = Raw::new(k.cast_const(), n_blocks, "k")?;
        let at = At::new(at)?;
        at.disjoint(&k)?;
        k.disjoint(&r)?;
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        // SAFETY: checked by At::new; readable (contract); disjoint from `k`.
        let src = unsafe { at.src(rope) }?;
        // SAFETY: checked by Raw::new; writable, unaccessed by others (contract); disjoint
        // from the angles and the rope (checked above).
        let k = unsafe { blocks(&k) };
        Ok(f(rope, k, n_heads, src)?)
    })
}

/// Quantizes `x` (`x_len = 32 * n_blocks` floats) into `Q8_0` blocks byte for byte as ggml's
/// `quantize_row_q8_0_ref` (`d = amax / 127` rounded to binary16, values
/// `roundf(x * (1 / d))` with the float `d`).
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged.
///
/// # Safety
/// `x` points to `x_len` readable floats, `out` to `n_blocks` writable blocks, not
/// overlapping.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_quantize_q8_0(
    x: *const f32,
    x_len: usize,
    out: *mut PosencBlockQ8_0,
    n_blocks: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `quantize` requires.
    unsafe { quantize(x, x_len, out, n_blocks, posenc::quantize_q8_0) }
}

/// Quantizes `x` (`x_len = 32 * n_blocks` floats) into `Q4_0` blocks byte for byte as ggml's
/// `quantize_row_q4_0_ref` (`d = max / -8`, `max` the first value of largest magnitude,
/// codes `min(15, (int8_t)(x * (1 / d) + 8.5))`).
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged.
///
/// # Safety
/// As `posenc_quantize_q8_0`, with `out` pointing to `PosencBlockQ4_0`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_quantize_q4_0(
    x: *const f32,
    x_len: usize,
    out: *mut PosencBlockQ4_0,
    n_blocks: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `quantize` requires.
    unsafe { quantize(x, x_len, out, n_blocks, posenc::quantize_q4_0) }
}

/// posenc's quantizer for the blocks of `B`.
type QuantizeFn<B> = fn(&[f32], &mut [<B as CBlock>::Posenc]) -> Result<(), posenc::Error>;

/// The quantize entry points.
///
/// # Safety
/// The caller contract of `posenc_quantize_q8_0`.
unsafe fn quantize<B: CBlock>(
    x: *const f32,
    x_len: usize,
    out: *mut B,
    n_blocks: usize,
    f: QuantizeFn<B>,
) -> c_int {
    run(|| {
        let x = Raw::new(x, x_len, "x")?;
        let o = Raw::new(out.cast_const(), n_blocks, "out")?;
        o.disjoint(&x)?;
        // SAFETY: checked by Raw::new; readable (contract); disjoint from `out`.
        let x = unsafe { x.as_slice() };
        // SAFETY: checked by Raw::new; writable (contract); disjoint from `x`.
        let o = unsafe { blocks(&o) };
        Ok(f(x, o)?)
    })
}

/// Dequantizes `n_blocks` `Q8_0` blocks into `out` (`out_len = 32 * n_blocks` floats), as
/// ggml's `dequantize_row_q8_0` (exact).
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged.
///
/// # Safety
/// `blocks` points to `n_blocks` readable blocks, `out` to `out_len` writable floats, not
/// overlapping.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_dequantize_q8_0(
    blocks: *const PosencBlockQ8_0,
    n_blocks: usize,
    out: *mut f32,
    out_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `dequantize` requires.
    unsafe { dequantize(blocks, n_blocks, out, out_len, posenc::dequantize_q8_0) }
}

/// Dequantizes `n_blocks` `Q4_0` blocks into `out` (`out_len = 32 * n_blocks` floats), as
/// ggml's `dequantize_row_q4_0`.
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged.
///
/// # Safety
/// As `posenc_dequantize_q8_0`, with `blocks` pointing to `PosencBlockQ4_0`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_dequantize_q4_0(
    blocks: *const PosencBlockQ4_0,
    n_blocks: usize,
    out: *mut f32,
    out_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `dequantize` requires.
    unsafe { dequantize(blocks, n_blocks, out, out_len, posenc::dequantize_q4_0) }
}

/// posenc's dequantizer for the blocks of `B`.
type DequantizeFn<B> = fn(&[<B as CBlock>::Posenc], &mut [f32]) -> Result<(), posenc::Error>;

/// The dequantize entry points.
///
/// # Safety
/// The caller contract of `posenc_dequantize_q8_0`.
unsafe fn dequantize<B: CBlock>(
    blocks: *const B,
    n_blocks: usize,
    out: *mut f32,
    out_len: usize,
    f: DequantizeFn<B>,
) -> c_int {
    run(|| {
        let b = Raw::new(blocks, n_blocks, "blocks")?;
        let o = Raw::new(out.cast_const(), out_len, "out")?;
        o.disjoint(&b)?;
        // SAFETY: checked by Raw::new; readable (contract); disjoint from `out`. `B::Posenc`
        // has `B`'s layout (`CBlock`).
        let b = unsafe {
            let s = b.as_slice();
            core::slice::from_raw_parts(s.as_ptr().cast::<B::Posenc>(), s.len())
        };
        // SAFETY: checked by Raw::new; writable (contract); disjoint from `blocks`.
        let o = unsafe { o.as_mut_slice() };
        Ok(f(b, o)?)
    })
}
