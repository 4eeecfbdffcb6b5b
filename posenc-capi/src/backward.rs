//! The backward pass of RoPE (the vector-Jacobian product: the transposed rotation times
//! the attention factor) for Q+K with GQA, strided views and multi-axis positions; the
//! in-place backward of one buffer is `posenc_rope_rotate_*` with `POSENC_OP_BACKWARD`. Each
//! takes exactly what its forward takes and rotates by the same angles, bit for bit.

use crate::angles::PosencAngles;
use crate::rope::PosencRope;
use crate::rotate::{Dir, PosencView, axes, qk, views};
use core::ffi::c_int;
use posenc::{bf16, f16};

/// The backward of `posenc_rope_apply_qk_f32`: `gq` (`q_len` floats, the gradient of the
/// rotated queries, `at->n_tokens * n_q_heads * head_dim`) and `gk` (`k_len`,
/// `at->n_tokens * n_kv_heads * head_dim`) become, in place, the gradients of the unrotated
/// queries and keys: each pair times the attention factor and rotated by the negated angle.
/// Bitwise the same as `posenc_rope_rotate_f32(POSENC_OP_BACKWARD)` on each buffer.
///
/// Returns `POSENC_OK`, or an error code with `gq` and `gk` unchanged.
///
/// # Safety
/// As `posenc_rope_apply_qk_f32`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_qk_backward_f32(
    rope: *const PosencRope,
    gq: *mut f32,
    gq_len: usize,
    n_q_heads: usize,
    gk: *mut f32,
    gk_len: usize,
    n_kv_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `qk` requires.
    unsafe {
        qk::<f32>(
            Dir::Backward,
            rope,
            gq,
            gq_len,
            n_q_heads,
            gk,
            gk_len,
            n_kv_heads,
            at,
        )
    }
}

/// `posenc_rope_apply_qk_backward_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_qk_backward_f32`, with `uint16_t` buffers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_qk_backward_f16(
    rope: *const PosencRope,
    gq: *mut u16,
    gq_len: usize,
    n_q_heads: usize,
    gk: *mut u16,
    gk_len: usize,
    n_kv_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `qk` requires.
    unsafe {
        qk::<f16>(
            Dir::Backward,
            rope,
            gq,
            gq_len,
            n_q_heads,
            gk,
            gk_len,
            n_kv_heads,
            at,
        )
    }
}

/// `posenc_rope_apply_qk_backward_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_qk_backward_f32`, with `uint16_t` buffers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_qk_backward_bf16(
    rope: *const PosencRope,
    gq: *mut u16,
    gq_len: usize,
    n_q_heads: usize,
    gk: *mut u16,
    gk_len: usize,
    n_kv_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `qk` requires.
    unsafe {
        qk::<bf16>(
            Dir::Backward,
            rope,
            gq,
            gq_len,
            n_q_heads,
            gk,
            gk_len,
            n_kv_heads,
            at,
        )
    }
}

/// The backward of `posenc_rope_apply_views_f32`: the gradients in the heads of `views` (up
/// to 64 strided views of `g`, `len` floats, validated as the forward validates them) become,
/// in place, the gradients of the unrotated heads. Other elements of `g` are untouched.
///
/// Returns `POSENC_OK`, or an error code with `g` unchanged.
///
/// # Safety
/// As `posenc_rope_apply_views_f32`, with `g` in place of `x`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_views_backward_f32(
    rope: *const PosencRope,
    g: *mut f32,
    len: usize,
    views: *const PosencView,
    n_views: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `views` requires.
    unsafe { self::views::<f32>(Dir::Backward, rope, g, len, views, n_views, at) }
}

/// `posenc_rope_apply_views_backward_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_views_backward_f32`, with `g` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_views_backward_f16(
    rope: *const PosencRope,
    g: *mut u16,
    len: usize,
    views: *const PosencView,
    n_views: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `views` requires.
    unsafe { self::views::<f16>(Dir::Backward, rope, g, len, views, n_views, at) }
}

/// `posenc_rope_apply_views_backward_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_views_backward_f32`, with `g` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_views_backward_bf16(
    rope: *const PosencRope,
    g: *mut u16,
    len: usize,
    views: *const PosencView,
    n_views: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `views` requires.
    unsafe { self::views::<bf16>(Dir::Backward, rope, g, len, views, n_views, at) }
}

/// The backward of `posenc_rope_apply_axes_f32` (M-RoPE, 2-D vision): `g` (`len` floats,
/// token-major) becomes, in place, the gradient of the unrotated input, each pair rotated by
/// the negated angle of its axis's position, times the attention factor. `positions` and
/// `n_axes` as for the forward.
///
/// Returns `POSENC_OK`, or an error code with `g` unchanged.
///
/// # Safety
/// As `posenc_rope_apply_axes_f32`, with `g` in place of `x`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_axes_backward_f32(
    rope: *const PosencRope,
    g: *mut f32,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    positions_len: usize,
    n_axes: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `axes` requires.
    unsafe {
        axes::<f32>(
            Dir::Backward,
            rope,
            g,
            len,
            n_heads,
            positions,
            positions_len,
            n_axes,
        )
    }
}

/// `posenc_rope_apply_axes_backward_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_axes_backward_f32`, with `g` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_axes_backward_f16(
    rope: *const PosencRope,
    g: *mut u16,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    positions_len: usize,
    n_axes: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `axes` requires.
    unsafe {
        axes::<f16>(
            Dir::Backward,
            rope,
            g,
            len,
            n_heads,
            positions,
            positions_len,
            n_axes,
        )
    }
}

/// `posenc_rope_apply_axes_backward_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_axes_backward_f32`, with `g` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_axes_backward_bf16(
    rope: *const PosencRope,
    g: *mut u16,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    positions_len: usize,
    n_axes: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `axes` requires.
    unsafe {
        axes::<bf16>(
            Dir::Backward,
            rope,
            g,
            len,
            n_heads,
            positions,
            positions_len,
            n_axes,
        )
    }
}
