//! The RoPE entry points that take `PosencAngles` (positions or a table computed once): one
//! buffer (apply, inverse, shift), Q and K with GQA in one call, strided views, and
//! multi-axis positions (M-RoPE, 2-D vision).

use crate::angles::{At, PosencAngles, axis_tokens, with_src};
use crate::error::{Fail, run};
use crate::raw::{Dtype, Raw};
use crate::rope::{PosencRope, borrow};
use core::ffi::c_int;
use posenc::{View, bf16, f16};

/// What `posenc_rope_rotate_*` does: one of the `POSENC_OP_*` values.
pub type PosencOp = u32;
/// Rotates by the angles, times the attention factor (`posenc_rope_apply_f32`).
pub const POSENC_OP_APPLY: PosencOp = 0;
/// Undoes `POSENC_OP_APPLY`: the negated angles, divided by the attention factor.
pub const POSENC_OP_INVERSE: PosencOp = 1;
/// KV-cache shift: keys rotated at `p` move to `p + delta` (angles of the deltas), a pure
/// rotation without the attention factor, which the keys already carry.
pub const POSENC_OP_SHIFT: PosencOp = 2;
/// The backward pass of `POSENC_OP_APPLY`: `x` holds the gradient of the rotated output and
/// becomes the gradient of the input, the transposed rotation (angles negated) times the
/// attention factor. Unlike `POSENC_OP_INVERSE` (which divides by the factor) this is the
/// vector-Jacobian product for every scaling.
pub const POSENC_OP_BACKWARD: PosencOp = 3;

/// Which way the Q+K, views and axes entry points rotate.
#[derive(Clone, Copy)]
pub(crate) enum Dir {
    /// The forward rotation (`posenc_rope_apply_*`).
    Forward,
    /// Its vector-Jacobian product (`posenc_rope_apply_*_backward_*`).
    Backward,
}

/// A strided view of heads inside one buffer (a fused QKV row, a head-major cache, GPT-NeoX's
/// `[tokens, heads, 3, head_dim]`), in elements: head `h` of token `t` starts at
/// `offset + t * token_stride + h * head_stride` and is `head_dim` long.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PosencView {
    /// Heads per token.
    pub n_heads: usize,
    /// Elements from one token's head to the next token's.
    pub token_stride: usize,
    /// Elements from one head to the next within a token.
    pub head_stride: usize,
    /// Element index of token 0, head 0.
    pub offset: usize,
}

/// `posenc_rope_rotate_*` for every dtype.
///
/// # Safety
/// The caller contract of `posenc_rope_rotate_f32`, `x` pointing to `len` writable `E::C`.
unsafe fn rotate<E: Dtype>(
    rope: *const PosencRope,
    op: PosencOp,
    x: *mut E::C,
    len: usize,
    n_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let x = Raw::<E>::dtype(x, len, "x")?;
        let at = At::new(at)?;
        at.disjoint(&x)?;
        x.disjoint(&r)?;
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        // SAFETY: checked by At::new; readable (contract); disjoint from the written `x`.
        let src = unsafe { at.src(rope) }?;
        // SAFETY: checked by Raw::dtype; writable, unaccessed by others (contract); disjoint
        // from the angles and the rope (checked above).
        let x = unsafe { x.as_mut_slice() };
        match op {
            POSENC_OP_APPLY => with_src!(src, |a| rope.apply(x, n_heads, a))?,
            POSENC_OP_INVERSE => with_src!(src, |a| rope.apply_inverse(x, n_heads, a))?,
            POSENC_OP_SHIFT => with_src!(src, |a| rope.shift(x, n_heads, a))?,
            POSENC_OP_BACKWARD => with_src!(src, |a| rope.apply_backward(x, n_heads, a))?,
            other => return Err(Fail::InvalidEnum("op", other)),
        }
        Ok(())
    })
}

/// Rotates `x` in place (`len` floats: `at->n_tokens` tokens of `n_heads * head_dim`,
/// token-major) as `op` says, by the angles of `*at`: positions, or a table made once by
/// `posenc_rope_table` (bit for bit the same result).
///
/// Returns `POSENC_OK`, or an error code with `x` unchanged.
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `x` to `len` writable floats;
/// `at` to a readable `PosencAngles` whose buffers satisfy the buffer contract and do not
/// overlap `x`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_rotate_f32(
    rope: *const PosencRope,
    op: PosencOp,
    x: *mut f32,
    len: usize,
    n_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `rotate` requires.
    unsafe { rotate::<f32>(rope, op, x, len, n_heads, at) }
}

/// `posenc_rope_rotate_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_rotate_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_rotate_f16(
    rope: *const PosencRope,
    op: PosencOp,
    x: *mut u16,
    len: usize,
    n_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `rotate` requires.
    unsafe { rotate::<f16>(rope, op, x, len, n_heads, at) }
}

/// `posenc_rope_rotate_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_rotate_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_rotate_bf16(
    rope: *const PosencRope,
    op: PosencOp,
    x: *mut u16,
    len: usize,
    n_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `rotate` requires.
    unsafe { rotate::<bf16>(rope, op, x, len, n_heads, at) }
}

/// `posenc_rope_apply_qk_*` for every dtype.
///
/// # Safety
/// The caller contract of `posenc_rope_apply_qk_f32`, with `E::C` elements.
#[allow(clippy::too_many_arguments)] // the C signature, forwarded
pub(crate) unsafe fn qk<E: Dtype>(
    dir: Dir,
    rope: *const PosencRope,
    q: *mut E::C,
    q_len: usize,
    n_q_heads: usize,
    k: *mut E::C,
    k_len: usize,
    n_kv_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let q = Raw::<E>::dtype(q, q_len, "q")?;
        let k = Raw::<E>::dtype(k, k_len, "k")?;
        let at = At::new(at)?;
        q.disjoint(&k)?;
        at.disjoint(&q)?;
        at.disjoint(&k)?;
        q.disjoint(&r)?;
        k.disjoint(&r)?;
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        // SAFETY: checked by At::new; readable (contract); disjoint from `q` and `k`.
        let src = unsafe { at.src(rope) }?;
        // SAFETY: checked by Raw::dtype; writable, unaccessed by others (contract); disjoint
        // from each other, the angles and the rope (checked above).
        let (q, k) = unsafe { (q.as_mut_slice(), k.as_mut_slice()) };
        match dir {
            Dir::Forward => with_src!(src, |a| rope.apply_qk(q, n_q_heads, k, n_kv_heads, a))?,
            Dir::Backward => with_src!(src, |a| rope
                .apply_qk_backward(q, n_q_heads, k, n_kv_heads, a))?,
        }
        Ok(())
    })
}

/// Rotates a query and a key buffer with different head counts (GQA/MQA) in one call, the
/// cos/sin computed once per token: `q` holds `at->n_tokens * n_q_heads * head_dim` floats,
/// `k` `at->n_tokens * n_kv_heads * head_dim`, both token-major. Bitwise the same as two
/// `POSENC_OP_APPLY` calls.
///
/// Returns `POSENC_OK`, or an error code with `q` and `k` unchanged.
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `q` and `k` to `q_len` and
/// `k_len` writable floats that do not overlap each other, `rope` or the buffers of `*at`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_qk_f32(
    rope: *const PosencRope,
    q: *mut f32,
    q_len: usize,
    n_q_heads: usize,
    k: *mut f32,
    k_len: usize,
    n_kv_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `qk` requires.
    unsafe {
        qk::<f32>(
            Dir::Forward,
            rope,
            q,
            q_len,
            n_q_heads,
            k,
            k_len,
            n_kv_heads,
            at,
        )
    }
}

/// `posenc_rope_apply_qk_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_qk_f32`, with `uint16_t` buffers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_qk_f16(
    rope: *const PosencRope,
    q: *mut u16,
    q_len: usize,
    n_q_heads: usize,
    k: *mut u16,
    k_len: usize,
    n_kv_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `qk` requires.
    unsafe {
        qk::<f16>(
            Dir::Forward,
            rope,
            q,
            q_len,
            n_q_heads,
            k,
            k_len,
            n_kv_heads,
            at,
        )
    }
}

/// `posenc_rope_apply_qk_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_qk_f32`, with `uint16_t` buffers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_qk_bf16(
    rope: *const PosencRope,
    q: *mut u16,
    q_len: usize,
    n_q_heads: usize,
    k: *mut u16,
    k_len: usize,
    n_kv_heads: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `qk` requires.
    unsafe {
        qk::<bf16>(
            Dir::Forward,
            rope,
            q,
            q_len,
            n_q_heads,
            k,
            k_len,
            n_kv_heads,
            at,
        )
    }
}

/// `posenc_rope_apply_views_*` for every dtype.
///
/// # Safety
/// The caller contract of `posenc_rope_apply_views_f32`, with `E::C` elements.
pub(crate) unsafe fn views<E: Dtype>(
    dir: Dir,
    rope: *const PosencRope,
    x: *mut E::C,
    len: usize,
    views: *const PosencView,
    n_views: usize,
    at: *const PosencAngles,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let x = Raw::<E>::dtype(x, len, "x")?;
        let v = Raw::new(views, n_views, "views")?;
        let at = At::new(at)?;
        at.disjoint(&x)?;
        x.disjoint(&v)?;
        x.disjoint(&r)?;
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        // SAFETY: checked by At::new; readable (contract); disjoint from `x`.
        let src = unsafe { at.src(rope) }?;
        // SAFETY: checked by Raw::new; readable (contract); disjoint from `x`. PosencView is
        // `repr(C)` over four `size_t`, every bit pattern valid.
        let v = unsafe { v.as_slice() };
        // SAFETY: checked by Raw::dtype; writable, unaccessed by others (contract); disjoint
        // from every input (checked above).
        let x = unsafe { x.as_mut_slice() };
        let mut buf = [View::token_major(0, 0); VIEWS];
        let views = to_views(v, &mut buf, "n_views")?;
        match dir {
            Dir::Forward => with_src!(src, |a| rope.apply_views(x, views, a))?,
            Dir::Backward => with_src!(src, |a| rope.apply_views_backward(x, views, a))?,
        }
        Ok(())
    })
}

/// Views one call takes (a fused QKV buffer has 2; GPT-NeoX's layout 2; more is unusual).
pub(crate) const VIEWS: usize = 64;

/// posenc's views of up to [`VIEWS`] caller views, converted into `buf` (posenc's `View` has
/// no C layout of its own); `what` names the count in the error of a longer list.
pub(crate) fn to_views<'b>(
    v: &[PosencView],
    buf: &'b mut [View; VIEWS],
    what: &'static str,
) -> Result<&'b [View], Fail> {
    if v.len() > VIEWS {
        return Err(Fail::Posenc(posenc::Error::ParameterOutOfRange {
            what,
            constraint: "must be at most 64",
            value: v.len() as f32,
        }));
    }
    for (b, c) in buf.iter_mut().zip(v) {
        *b = (*c).into();
    }
    Ok(&buf[..v.len()])
}

impl From<PosencView> for View {
    fn from(c: PosencView) -> View {
        View {
            n_heads: c.n_heads,
            token_stride: c.token_stride,
            head_stride: c.head_stride,
            offset: c.offset,
        }
    }
}

/// Rotates the heads of up to 64 strided views of one buffer (`len` floats) by the angles of
/// `*at`, cos/sin computed once per token for all of them. Every view is validated first: in
/// bounds, and no two heads overlap.
///
/// Returns `POSENC_OK`, or an error code with `x` unchanged.
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `x` to `len` writable floats;
/// `views` to `n_views` readable `PosencView`; `x` must not overlap `views`, `rope` or the
/// buffers of `*at`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_views_f32(
    rope: *const PosencRope,
    x: *mut f32,
    len: usize,
    views: *const PosencView,
    n_views: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `views` requires.
    unsafe { self::views::<f32>(Dir::Forward, rope, x, len, views, n_views, at) }
}

/// `posenc_rope_apply_views_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_views_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_views_f16(
    rope: *const PosencRope,
    x: *mut u16,
    len: usize,
    views: *const PosencView,
    n_views: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `views` requires.
    unsafe { self::views::<f16>(Dir::Forward, rope, x, len, views, n_views, at) }
}

/// `posenc_rope_apply_views_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_views_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_views_bf16(
    rope: *const PosencRope,
    x: *mut u16,
    len: usize,
    views: *const PosencView,
    n_views: usize,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `views` requires.
    unsafe { self::views::<bf16>(Dir::Forward, rope, x, len, views, n_views, at) }
}

/// `posenc_rope_apply_axes_*` for every dtype.
///
/// # Safety
/// The caller contract of `posenc_rope_apply_axes_f32`, with `E::C` elements.
#[allow(clippy::too_many_arguments)] // the C signature, forwarded, and the direction
pub(crate) unsafe fn axes<E: Dtype>(
    dir: Dir,
    rope: *const PosencRope,
    x: *mut E::C,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    positions_len: usize,
    n_axes: usize,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let x = Raw::<E>::dtype(x, len, "x")?;
        let p = Raw::new(positions, positions_len, "positions")?;
        x.disjoint(&p)?;
        x.disjoint(&r)?;
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        // SAFETY: checked by Raw::new; readable (contract); disjoint from `x`.
        let p = unsafe { p.as_slice() };
        axis_tokens(p.len(), n_axes)?;
        // SAFETY: checked by Raw::dtype; writable, unaccessed by others (contract); disjoint
        // from the positions and the rope.
        let x = unsafe { x.as_mut_slice() };
        match (dir, n_axes) {
            (Dir::Forward, 1) => rope.apply_axes(x, n_heads, p.as_chunks::<1>().0),
            (Dir::Forward, 2) => rope.apply_axes(x, n_heads, p.as_chunks::<2>().0),
            (Dir::Forward, _) => rope.apply_axes(x, n_heads, p.as_chunks::<3>().0),
            (Dir::Backward, 1) => rope.apply_axes_backward(x, n_heads, p.as_chunks::<1>().0),
            (Dir::Backward, 2) => rope.apply_axes_backward(x, n_heads, p.as_chunks::<2>().0),
            (Dir::Backward, _) => rope.apply_axes_backward(x, n_heads, p.as_chunks::<3>().0),
        }?;
        Ok(())
    })
}

/// Rotates `x` (`len` floats, token-major) with several positions per token (M-RoPE
/// `t, h, w`; 2-D vision `row, col`): `positions` holds `n_tokens * n_axes` `int32_t`, token
/// by token, and `n_axes` must be the rope's axis count (`PosencRopeConfig.axes`). A token
/// whose positions are all `p` gets exactly the rotation `POSENC_OP_APPLY` gives at `p`.
///
/// Returns `POSENC_OK`, or an error code with `x` unchanged.
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `x` to `len` writable floats
/// and `positions` to `positions_len` readable `int32_t`, not overlapping.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_axes_f32(
    rope: *const PosencRope,
    x: *mut f32,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    positions_len: usize,
    n_axes: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `axes` requires.
    unsafe {
        axes::<f32>(
            Dir::Forward,
            rope,
            x,
            len,
            n_heads,
            positions,
            positions_len,
            n_axes,
        )
    }
}

/// `posenc_rope_apply_axes_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_axes_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_axes_f16(
    rope: *const PosencRope,
    x: *mut u16,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    positions_len: usize,
    n_axes: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `axes` requires.
    unsafe {
        axes::<f16>(
            Dir::Forward,
            rope,
            x,
            len,
            n_heads,
            positions,
            positions_len,
            n_axes,
        )
    }
}

/// `posenc_rope_apply_axes_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_axes_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_axes_bf16(
    rope: *const PosencRope,
    x: *mut u16,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    positions_len: usize,
    n_axes: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `axes` requires.
    unsafe {
        axes::<bf16>(
            Dir::Forward,
            rope,
            x,
            len,
            n_heads,
            positions,
            positions_len,
            n_axes,
        )
    }
}
