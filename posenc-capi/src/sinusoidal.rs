//! Sinusoidal position tables ("Attention Is All You Need").
//!
//! No handle: each function takes `d_model`, `base` and `layout` directly and builds the
//! `posenc::Sinusoidal` per call. Building it forms its frequencies (for `d_model ≤ 512` the
//! Rust encoder keeps them, so Rust callers pay that once), which is the dominant cost of a
//! one-row `add` from C: ~33 `pow` calls at `d_model = 512`. A handle type would remove it.

use crate::error::{Fail, run};
use crate::raw::{Dtype, Raw};
use core::ffi::c_int;
use posenc::{Sinusoidal, SinusoidalLayout, bf16, f16};

/// Where the sines and cosines of a sinusoidal row go: one of the `POSENC_SINUSOIDAL_*`
/// values.
pub type PosencSinusoidalLayout = u32;
/// `PE[2i] = sin(p * w_i)`, `PE[2i+1] = cos(p * w_i)` (Vaswani et al., tensor2tensor).
pub const POSENC_SINUSOIDAL_INTERLEAVED: PosencSinusoidalLayout = 0;
/// All sines, then all cosines (Marian, fairseq).
pub const POSENC_SINUSOIDAL_SPLIT: PosencSinusoidalLayout = 1;
/// All cosines, then all sines (latent-diffusion timestep embeddings, ggml
/// `timestep_embedding`).
pub const POSENC_SINUSOIDAL_SPLIT_COS_FIRST: PosencSinusoidalLayout = 2;

fn encoder(d_model: usize, base: f32, layout: PosencSinusoidalLayout) -> Result<Sinusoidal, Fail> {
    let layout = match layout {
        POSENC_SINUSOIDAL_INTERLEAVED => SinusoidalLayout::Interleaved,
        POSENC_SINUSOIDAL_SPLIT => SinusoidalLayout::Split,
        POSENC_SINUSOIDAL_SPLIT_COS_FIRST => SinusoidalLayout::SplitCosFirst,
        v => return Err(Fail::InvalidEnum("layout", v)),
    };
    Ok(Sinusoidal::new(d_model, base, layout)?)
}

/// The `posenc_sinusoidal_fill_*` entry points, once for every dtype.
///
/// # Safety
/// `out` points to `len` writable `E::C` (NULL allowed for 0) accessed by no one else during
/// the call.
unsafe fn fill<E: Dtype>(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    out: *mut E::C,
    len: usize,
    first_position: u32,
) -> c_int {
    run(|| {
        let pe = encoder(d_model, base, layout)?;
        let out = Raw::<E>::dtype(out, len, "out")?;
        // SAFETY: checked by Raw::dtype; writable and unaccessed by others (contract); the
        // only buffer of the call.
        let out = unsafe { out.as_mut_slice() };
        Ok(pe.fill(out, first_position)?)
    })
}

/// Fills (`add` false) or adds to (`add` true) `out` the rows of `positions`: the logic of
/// `fill_positions` and `add`, once for every dtype (the `posenc_sinusoidal_fill_positions_*`
/// and `posenc_sinusoidal_add_*` entry points).
///
/// # Safety
/// `out` points to `len` writable `E::C`, `positions` to `n_positions` readable `int32_t`
/// (NULL allowed for zero counts), not overlapping.
#[allow(clippy::too_many_arguments)] // the C signature, forwarded
unsafe fn with_positions<E: Dtype>(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    out: *mut E::C,
    len: usize,
    positions: *const i32,
    n_positions: usize,
    add: bool,
) -> c_int {
    run(|| {
        let pe = encoder(d_model, base, layout)?;
        let out = Raw::<E>::dtype(out, len, if add { "x" } else { "out" })?;
        let p = Raw::new(positions, n_positions, "positions")?;
        out.disjoint(&p)?;
        // SAFETY: checked by Raw::new; readable (contract); disjoint from the output.
        let p = unsafe { p.as_slice() };
        // SAFETY: checked by Raw::dtype; writable and unaccessed by others (contract);
        // disjoint from `positions` (checked above).
        let out = unsafe { out.as_mut_slice() };
        if add {
            Ok(pe.add(out, p)?)
        } else {
            Ok(pe.fill_positions(out, p)?)
        }
    })
}

/// Fills `out` (`len` floats, a whole number of rows of `d_model`) with the sinusoidal rows
/// of positions `first_position, first_position + 1, ...`. `d_model` is even and non-zero,
/// `base` finite and > 0 (10000 in the original), `layout` a `POSENC_SINUSOIDAL_*` value.
///
/// Frequencies `base^(-2i/d_model)` and angles are formed in double and reduced exactly:
/// every value is within 2.4e-7 of the double-precision formula for positions below 2^24.
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged.
///
/// # Safety
/// `out` points to `len` writable floats (NULL allowed if `len` is 0), accessed by no other
/// thread during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_sinusoidal_fill_f32(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    out: *mut f32,
    len: usize,
    first_position: u32,
) -> c_int {
    // SAFETY: this function's caller contract is the one `fill` requires.
    unsafe { fill::<f32>(d_model, base, layout, out, len, first_position) }
}

/// `posenc_sinusoidal_fill_f32` for binary16 output (`uint16_t` bits, rounded once to
/// nearest even).
///
/// # Safety
/// As `posenc_sinusoidal_fill_f32`, with `out` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_sinusoidal_fill_f16(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    out: *mut u16,
    len: usize,
    first_position: u32,
) -> c_int {
    // SAFETY: this function's caller contract is the one `fill` requires.
    unsafe { fill::<f16>(d_model, base, layout, out, len, first_position) }
}

/// `posenc_sinusoidal_fill_f32` for bfloat16 output (`uint16_t` bits, rounded once to
/// nearest even).
///
/// # Safety
/// As `posenc_sinusoidal_fill_f32`, with `out` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_sinusoidal_fill_bf16(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    out: *mut u16,
    len: usize,
    first_position: u32,
) -> c_int {
    // SAFETY: this function's caller contract is the one `fill` requires.
    unsafe { fill::<bf16>(d_model, base, layout, out, len, first_position) }
}

/// Fills `out` (`len == n_positions * d_model` floats) with the sinusoidal rows of
/// `positions` (any `int32_t`, negative included). Other arguments as
/// `posenc_sinusoidal_fill_f32`.
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged.
///
/// # Safety
/// `out` points to `len` writable floats and `positions` to `n_positions` readable
/// `int32_t` (NULL allowed for zero counts); they must not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_sinusoidal_fill_positions_f32(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    out: *mut f32,
    len: usize,
    positions: *const i32,
    n_positions: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `fill_positions` requires.
    unsafe {
        with_positions::<f32>(
            d_model,
            base,
            layout,
            out,
            len,
            positions,
            n_positions,
            false,
        )
    }
}

/// `posenc_sinusoidal_fill_positions_f32` for binary16 output (`uint16_t` bits).
///
/// # Safety
/// As `posenc_sinusoidal_fill_positions_f32`, with `out` pointing to `len` writable
/// `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_sinusoidal_fill_positions_f16(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    out: *mut u16,
    len: usize,
    positions: *const i32,
    n_positions: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `fill_positions` requires.
    unsafe {
        with_positions::<f16>(
            d_model,
            base,
            layout,
            out,
            len,
            positions,
            n_positions,
            false,
        )
    }
}

/// `posenc_sinusoidal_fill_positions_f32` for bfloat16 output (`uint16_t` bits).
///
/// # Safety
/// As `posenc_sinusoidal_fill_positions_f32`, with `out` pointing to `len` writable
/// `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_sinusoidal_fill_positions_bf16(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    out: *mut u16,
    len: usize,
    positions: *const i32,
    n_positions: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `fill_positions` requires.
    unsafe {
        with_positions::<bf16>(
            d_model,
            base,
            layout,
            out,
            len,
            positions,
            n_positions,
            false,
        )
    }
}

/// Adds the sinusoidal rows of `positions` to `x` in place (`len == n_positions * d_model`
/// floats; the sum is formed in float and rounded once). Other arguments as
/// `posenc_sinusoidal_fill_f32`.
///
/// Returns `POSENC_OK`, or an error code with `x` unchanged.
///
/// # Safety
/// `x` points to `len` writable floats and `positions` to `n_positions` readable `int32_t`
/// (NULL allowed for zero counts); they must not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_sinusoidal_add_f32(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    x: *mut f32,
    len: usize,
    positions: *const i32,
    n_positions: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `add` requires.
    unsafe { with_positions::<f32>(d_model, base, layout, x, len, positions, n_positions, true) }
}

/// `posenc_sinusoidal_add_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_sinusoidal_add_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_sinusoidal_add_f16(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    x: *mut u16,
    len: usize,
    positions: *const i32,
    n_positions: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `add` requires.
    unsafe { with_positions::<f16>(d_model, base, layout, x, len, positions, n_positions, true) }
}

/// `posenc_sinusoidal_add_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_sinusoidal_add_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_sinusoidal_add_bf16(
    d_model: usize,
    base: f32,
    layout: PosencSinusoidalLayout,
    x: *mut u16,
    len: usize,
    positions: *const i32,
    n_positions: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `add` requires.
    unsafe { with_positions::<bf16>(d_model, base, layout, x, len, positions, n_positions, true) }
}
