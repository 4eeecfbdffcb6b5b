//! The fused entry points a runtime calls around its KV cache: rotating into another buffer
//! of any dtype (K straight into a cache slot, `posenc_rope_apply_into`) and QK-norm + RoPE
//! in one pass (Qwen3, Gemma 3, OLMo 2, `posenc_rope_apply_normed_*`).
//!
//! An entry point with one element type is suffixed `_f32`/`_f16`/`_bf16` like the rest of
//! the API; one that converts between element types takes each buffer's type as a
//! `PosencDtype` tag and the buffer as `void *` (nine source × destination pairs would be
//! nine functions per operation otherwise).

use crate::angles::{At, PosencAngles, with_src};
use crate::error::{Fail, run};
use crate::raw::{Dtype, Raw};
use crate::rope::{PosencRope, borrow};
use crate::rotate::{PosencView, VIEWS, to_views};
use core::ffi::{c_int, c_void};
use posenc::{RmsNorm, View, bf16, f16};

/// The element type of a `void *` buffer: one of the `POSENC_DTYPE_*` values.
pub type PosencDtype = u32;
/// `float`.
pub const POSENC_DTYPE_F32: PosencDtype = 0;
/// IEEE binary16, as `uint16_t` bits.
pub const POSENC_DTYPE_F16: PosencDtype = 1;
/// bfloat16, as `uint16_t` bits.
pub const POSENC_DTYPE_BF16: PosencDtype = 2;

/// Which RMSNorm a `PosencRmsNorm` is: one of the `POSENC_NORM_*` values.
pub type PosencNormKind = u32;
/// Qwen3's `q_norm`/`k_norm`: one norm per head, a `[head_dim]` weight `w`, `w * (x * r)`
/// (`w * round(x * r)` under `POSENC_ROUNDING_HF_EAGER`/`_HF_UPCAST`, HF's order).
pub const POSENC_NORM_PER_HEAD: PosencNormKind = 0;
/// Gemma 3's `q_norm`/`k_norm`: per head, a `[head_dim]` weight used as `1 + w`, computed in
/// float.
pub const POSENC_NORM_PER_HEAD_ONE_PLUS: PosencNormKind = 1;
/// OLMo 2's `q_norm`/`k_norm`: one norm over a token's whole row of heads, a
/// `[n_heads * head_dim]` weight, before the split into heads.
pub const POSENC_NORM_PER_ROW: PosencNormKind = 2;

/// An RMSNorm applied right before the rotation: `r = 1 / sqrt(mean(x^2) + eps)` over each
/// head (or each token's row of heads), then `x * r` times the weight. Read by value during
/// the call; the weight is borrowed for the call.
///
/// Example: `PosencRmsNorm qn = {POSENC_NORM_PER_HEAD, q_norm_weight, 128, 1e-6f};`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PosencRmsNorm {
    /// `POSENC_NORM_PER_HEAD`, `POSENC_NORM_PER_HEAD_ONE_PLUS` or `POSENC_NORM_PER_ROW`.
    pub kind: PosencNormKind,
    /// The weight, f32 (widen a checkpoint's bf16 weight once at load: exact).
    pub weight: *const f32,
    /// Its length: `head_dim`, or `n_heads * head_dim` for `POSENC_NORM_PER_ROW`.
    pub weight_len: usize,
    /// Added to the mean of squares: finite and `>= 0`.
    pub eps: f32,
}

/// The names a norm argument's parts have in error details.
type Names = [&'static str; 3];
const NORM: Names = ["norm", "norm.kind", "norm.weight"];
const Q_NORM: Names = ["q_norm", "q_norm.kind", "q_norm.weight"];
const K_NORM: Names = ["k_norm", "k_norm.kind", "k_norm.weight"];

/// A validated `PosencRmsNorm`: kind known, weight pointer checked, nothing borrowed yet.
struct Norm {
    kind: PosencNormKind,
    weight: Raw<f32>,
    eps: f32,
}

impl Norm {
    /// Reads and validates `*p` (the weight's length and `eps` are checked by posenc).
    fn new(p: *const PosencRmsNorm, names: Names) -> Result<Norm, Fail> {
        let r = Raw::one(p, names[0])?;
        // SAFETY: non-NULL and aligned (Raw::one), readable by the caller contract; copied
        // by value.
        let n: PosencRmsNorm = unsafe { r.ptr().read() };
        if n.kind > POSENC_NORM_PER_ROW {
            return Err(Fail::InvalidEnum(names[1], n.kind));
        }
        Ok(Norm {
            kind: n.kind,
            weight: Raw::new(n.weight, n.weight_len, names[2])?,
            eps: n.eps,
        })
    }

    /// Refuses the call if the written buffer `out` overlaps the weight.
    fn disjoint<U>(&self, out: &Raw<U>) -> Result<(), Fail> {
        out.disjoint(&self.weight)
    }

    /// The norm as posenc takes it.
    ///
    /// # Safety
    /// The weight is readable and unmodified during the call, and [`Norm::disjoint`] was
    /// checked against every buffer the call writes.
    unsafe fn get<'a>(&self) -> RmsNorm<'a> {
        // SAFETY: checked by Raw::new; readable and unmodified (this function's contract).
        let w: &'a [f32] = unsafe { self.weight.as_slice() };
        match self.kind {
            POSENC_NORM_PER_HEAD => RmsNorm::per_head(w, self.eps),
            POSENC_NORM_PER_HEAD_ONE_PLUS => RmsNorm::per_head_one_plus(w, self.eps),
            _ => RmsNorm::per_row(w, self.eps),
        }
    }
}

/// A validated `PosencDtype`.
#[derive(Clone, Copy)]
enum Tag {
    F32,
    F16,
    Bf16,
}

fn tag(v: PosencDtype, what: &'static str) -> Result<Tag, Fail> {
    match v {
        POSENC_DTYPE_F32 => Ok(Tag::F32),
        POSENC_DTYPE_F16 => Ok(Tag::F16),
        POSENC_DTYPE_BF16 => Ok(Tag::Bf16),
        other => Err(Fail::InvalidEnum(what, other)),
    }
}

/// Calls the generic function `$f::<I, O>(args)` for the element types of two tags.
macro_rules! by_pair {
    ($i:expr, $o:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match ($i, $o) {
            (Tag::F32, Tag::F32) => $f::<f32, f32>($($arg),*),
            (Tag::F32, Tag::F16) => $f::<f32, f16>($($arg),*),
            (Tag::F32, Tag::Bf16) => $f::<f32, bf16>($($arg),*),
            (Tag::F16, Tag::F32) => $f::<f16, f32>($($arg),*),
            (Tag::F16, Tag::F16) => $f::<f16, f16>($($arg),*),
            (Tag::F16, Tag::Bf16) => $f::<f16, bf16>($($arg),*),
            (Tag::Bf16, Tag::F32) => $f::<bf16, f32>($($arg),*),
            (Tag::Bf16, Tag::F16) => $f::<bf16, f16>($($arg),*),
            (Tag::Bf16, Tag::Bf16) => $f::<bf16, bf16>($($arg),*),
        }
    };
}

/// `posenc_rope_apply_into` and `posenc_rope_apply_normed_into` for one dtype pair.
///
/// # Safety
/// The caller contract of `posenc_rope_apply_normed_into`, with `src` holding `src_len`
/// elements of `I` and `dst` `dst_len` of `O` (`norm` None: no norm).
#[allow(clippy::too_many_arguments)] // the C signature, forwarded
unsafe fn into<I: Dtype, O: Dtype>(
    rope: *const PosencRope,
    src: *const c_void,
    src_len: usize,
    n_heads: usize,
    norm: Option<*const PosencRmsNorm>,
    dst: *mut c_void,
    dst_len: usize,
    dst_view: PosencView,
    at: *const PosencAngles,
) -> Result<(), Fail> {
    let r = Raw::one(rope, "rope")?;
    let s = Raw::new(src.cast::<I>(), src_len, "src")?;
    let d = Raw::new(dst.cast::<O>().cast_const(), dst_len, "dst")?;
    let n = norm.map(|p| Norm::new(p, NORM)).transpose()?;
    let at = At::new(at)?;
    d.disjoint(&s)?;
    d.disjoint(&r)?;
    at.disjoint(&d)?;
    if let Some(n) = &n {
        n.disjoint(&d)?;
    }
    // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
    let rope = unsafe { borrow(&r) }?;
    // SAFETY: checked by At::new; readable (contract); disjoint from the written `dst`.
    let angles = unsafe { at.src(rope) }?;
    // SAFETY: checked by Raw::new; readable and unmodified (contract); disjoint from `dst`.
    let s = unsafe { s.as_slice() };
    // SAFETY: checked by Norm::new; readable (contract); disjoint from `dst` (checked above).
    let norm = unsafe { n.as_ref().map(|n| n.get()) };
    // SAFETY: checked by Raw::new; writable, unaccessed by others (contract); disjoint from
    // every input (checked above).
    let d = unsafe { d.as_mut_slice() };
    let v = View::from(dst_view);
    match norm {
        None => with_src!(angles, |a| rope.apply_into(s, n_heads, d, v, a))?,
        Some(nm) => with_src!(angles, |a| rope.apply_normed_into(s, n_heads, &nm, d, v, a))?,
    }
    Ok(())
}

/// Rotates `src` (`src_len` elements of `src_dtype`: `at->n_tokens * n_heads * head_dim`,
/// token-major, left untouched) into the heads `dst_view` describes in `dst` (`dst_len`
/// elements of `dst_dtype`): a KV-cache slot, token-major `[pos][kv_head][dim]` (`{n_heads,
/// n_heads * head_dim, head_dim, start * n_heads * head_dim}`) or head-major
/// `[kv_head][pos][dim]` (`{n_heads, head_dim, max_ctx * head_dim, start * head_dim}`), at
/// any start and stride. Every channel of each head is written: the rotary window rotated,
/// the rest converted. Any of f32/f16/bf16 on each side.
///
/// Under `POSENC_ROUNDING_ONCE` the rotation is computed in float and rounded once into
/// `dst_dtype`: bit for bit rotating a float copy of `src` and rounding it. Under the HF
/// modes it is `posenc_rope_rotate_*(POSENC_OP_APPLY)` on a copy of `src` in `src_dtype`,
/// then converted.
///
/// Returns `POSENC_OK`, or an error code with `dst` unchanged: among others
/// `POSENC_ERR_INVALID_ENUM` for an unknown dtype, `POSENC_ERR_LENGTH_MISMATCH` for a
/// `dst_view` outside `dst` or a `src_len` off the shape, `POSENC_ERR_OVERLAPPING_BUFFERS`
/// if `dst` overlaps `src`, and `POSENC_ERR_PARAMETER_OUT_OF_RANGE` for a view whose heads
/// overlap each other.
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `src` to `src_len` readable
/// elements of `src_dtype`, `dst` to `dst_len` writable elements of `dst_dtype`, aligned for
/// them; `at` to a readable `PosencAngles` whose buffers satisfy the buffer contract; `dst`
/// does not overlap `src`, `rope` or the buffers of `*at`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn posenc_rope_apply_into(
    rope: *const PosencRope,
    src_dtype: PosencDtype,
    src: *const c_void,
    src_len: usize,
    n_heads: usize,
    dst_dtype: PosencDtype,
    dst: *mut c_void,
    dst_len: usize,
    dst_view: PosencView,
    at: *const PosencAngles,
) -> c_int {
    run(|| {
        let (i, o) = (tag(src_dtype, "src_dtype")?, tag(dst_dtype, "dst_dtype")?);
        // SAFETY: this function's caller contract is the one `into` requires.
        unsafe {
            by_pair!(
                i,
                o,
                into(
                    rope, src, src_len, n_heads, None, dst, dst_len, dst_view, at
                )
            )
        }
    })
}

/// RMSNorm then RoPE from `src` (untouched) into a destination view of any dtype, in one
/// pass: `posenc_rope_apply_normed_*` on a copy, rounded as `posenc_rope_apply_into` rounds.
/// Shapes, views and dtypes as `posenc_rope_apply_into`; `*norm` as `PosencRmsNorm` says
/// (its weight `head_dim` long, or `n_heads * head_dim` for `POSENC_NORM_PER_ROW`).
///
/// Returns `POSENC_OK`, or an error code with `dst` unchanged.
///
/// # Safety
/// As `posenc_rope_apply_into`; `norm` points to a readable `PosencRmsNorm` whose weight is
/// `weight_len` readable floats not overlapping `dst`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn posenc_rope_apply_normed_into(
    rope: *const PosencRope,
    src_dtype: PosencDtype,
    src: *const c_void,
    src_len: usize,
    n_heads: usize,
    norm: *const PosencRmsNorm,
    dst_dtype: PosencDtype,
    dst: *mut c_void,
    dst_len: usize,
    dst_view: PosencView,
    at: *const PosencAngles,
) -> c_int {
    run(|| {
        let (i, o) = (tag(src_dtype, "src_dtype")?, tag(dst_dtype, "dst_dtype")?);
        let norm = Some(norm);
        // SAFETY: this function's caller contract is the one `into` requires.
        unsafe {
            by_pair!(
                i,
                o,
                into(
                    rope, src, src_len, n_heads, norm, dst, dst_len, dst_view, at
                )
            )
        }
    })
}

/// `posenc_rope_apply_views_into` for one dtype pair.
///
/// # Safety
/// The caller contract of `posenc_rope_apply_views_into`, with `I` and `O` elements.
#[allow(clippy::too_many_arguments)] // the C signature, forwarded
unsafe fn views_into<I: Dtype, O: Dtype>(
    rope: *const PosencRope,
    src: *const c_void,
    src_len: usize,
    src_views: *const PosencView,
    n_src_views: usize,
    dst: *mut c_void,
    dst_len: usize,
    dst_views: *const PosencView,
    n_dst_views: usize,
    at: *const PosencAngles,
) -> Result<(), Fail> {
    let r = Raw::one(rope, "rope")?;
    let s = Raw::new(src.cast::<I>(), src_len, "src")?;
    let sv = Raw::new(src_views, n_src_views, "src_views")?;
    let d = Raw::new(dst.cast::<O>().cast_const(), dst_len, "dst")?;
    let dv = Raw::new(dst_views, n_dst_views, "dst_views")?;
    let at = At::new(at)?;
    d.disjoint(&s)?;
    d.disjoint(&sv)?;
    d.disjoint(&dv)?;
    d.disjoint(&r)?;
    at.disjoint(&d)?;
    // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
    let rope = unsafe { borrow(&r) }?;
    // SAFETY: checked by At::new; readable (contract); disjoint from the written `dst`.
    let angles = unsafe { at.src(rope) }?;
    // SAFETY: checked by Raw::new; readable (contract); disjoint from `dst`. PosencView is
    // `repr(C)` over four `size_t`, every bit pattern valid.
    let (sv, dv) = unsafe { (sv.as_slice(), dv.as_slice()) };
    let (mut sbuf, mut dbuf) = (
        [View::token_major(0, 0); VIEWS],
        [View::token_major(0, 0); VIEWS],
    );
    let sv = to_views(sv, &mut sbuf, "n_src_views")?;
    let dv = to_views(dv, &mut dbuf, "n_dst_views")?;
    // SAFETY: checked by Raw::new; readable and unmodified (contract); disjoint from `dst`.
    let s = unsafe { s.as_slice() };
    // SAFETY: checked by Raw::new; writable, unaccessed by others (contract); disjoint from
    // every input (checked above).
    let d = unsafe { d.as_mut_slice() };
    with_src!(angles, |a| rope.apply_views_into(s, sv, d, dv, a))?;
    Ok(())
}

/// `posenc_rope_apply_into` for up to 64 strided views of `src`, each rotated into the view
/// of the same index in `dst` (same head count; `n_dst_views == n_src_views`): K of a fused
/// QKV row into a cache slot, head-major to token-major, several slots in one call. Every
/// view is validated first: in bounds, and no two destination heads overlap.
///
/// Returns `POSENC_OK`, or an error code with `dst` unchanged.
///
/// # Safety
/// As `posenc_rope_apply_into`; `src_views` and `dst_views` point to `n_src_views` and
/// `n_dst_views` readable `PosencView`, not overlapping `dst`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn posenc_rope_apply_views_into(
    rope: *const PosencRope,
    src_dtype: PosencDtype,
    src: *const c_void,
    src_len: usize,
    src_views: *const PosencView,
    n_src_views: usize,
    dst_dtype: PosencDtype,
    dst: *mut c_void,
    dst_len: usize,
    dst_views: *const PosencView,
    n_dst_views: usize,
    at: *const PosencAngles,
) -> c_int {
    run(|| {
        let (i, o) = (tag(src_dtype, "src_dtype")?, tag(dst_dtype, "dst_dtype")?);
        // SAFETY: this function's caller contract is the one `views_into` requires.
        unsafe {
            by_pair!(
                i,
                o,
                views_into(
                    rope,
                    src,
                    src_len,
                    src_views,
                    n_src_views,
                    dst,
                    dst_len,
                    dst_views,
                    n_dst_views,
                    at
                )
            )
        }
    })
}

/// The arguments of the Q-in-place, K-into-cache entry points.
#[derive(Clone, Copy)]
struct QkInto {
    rope: *const PosencRope,
    q: *mut c_void,
    q_len: usize,
    n_q_heads: usize,
    k: *const c_void,
    k_len: usize,
    n_kv_heads: usize,
    cache: *mut c_void,
    cache_len: usize,
    cache_view: PosencView,
    at: *const PosencAngles,
}

/// `posenc_rope_apply_qk_into` and `posenc_rope_apply_qk_normed_into` for one dtype pair
/// (`norms` None: no norm).
///
/// # Safety
/// The caller contract of `posenc_rope_apply_qk_normed_into`, with `q` and `k` of `T` and
/// `cache` of `O`.
unsafe fn qk_into<T: Dtype, O: Dtype>(
    c: QkInto,
    norms: Option<(*const PosencRmsNorm, *const PosencRmsNorm)>,
) -> Result<(), Fail> {
    let r = Raw::one(c.rope, "rope")?;
    let q = Raw::new(c.q.cast::<T>().cast_const(), c.q_len, "q")?;
    let k = Raw::new(c.k.cast::<T>(), c.k_len, "k")?;
    let cache = Raw::new(c.cache.cast::<O>().cast_const(), c.cache_len, "cache")?;
    let norms = match norms {
        Some((qn, kn)) => Some((Norm::new(qn, Q_NORM)?, Norm::new(kn, K_NORM)?)),
        None => None,
    };
    let at = At::new(c.at)?;
    q.disjoint(&k)?;
    q.disjoint(&cache)?;
    cache.disjoint(&k)?;
    at.disjoint(&q)?;
    at.disjoint(&cache)?;
    q.disjoint(&r)?;
    cache.disjoint(&r)?;
    if let Some((qn, kn)) = &norms {
        qn.disjoint(&q)?;
        kn.disjoint(&q)?;
        qn.disjoint(&cache)?;
        kn.disjoint(&cache)?;
    }
    // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
    let rope = unsafe { borrow(&r) }?;
    // SAFETY: checked by At::new; readable (contract); disjoint from `q` and `cache`.
    let angles = unsafe { at.src(rope) }?;
    // SAFETY: checked by Raw::new; readable and unmodified (contract); disjoint from `q` and
    // `cache`.
    let k = unsafe { k.as_slice() };
    // SAFETY: checked by Norm::new; readable (contract); disjoint from `q` and `cache`.
    let norms = unsafe { norms.as_ref().map(|(qn, kn)| (qn.get(), kn.get())) };
    // SAFETY: checked by Raw::new; writable, unaccessed by others (contract); disjoint from
    // each other and from every input (checked above).
    let (q, cache) = unsafe { (q.as_mut_slice(), cache.as_mut_slice()) };
    let (nq, nk, v) = (c.n_q_heads, c.n_kv_heads, View::from(c.cache_view));
    match norms {
        None => with_src!(angles, |a| rope.apply_qk_into(q, nq, k, nk, cache, v, a))?,
        Some((qn, kn)) => with_src!(angles, |a| rope
            .apply_qk_normed_into(q, nq, &qn, k, nk, &kn, cache, v, a))?,
    }
    Ok(())
}

/// What a decoder layer does after its QKV projection: rotates `q` in place
/// (`at->n_tokens * n_q_heads * head_dim` elements of `dtype`) and `k` (`at->n_tokens *
/// n_kv_heads * head_dim` of `dtype`, untouched) into the cache slot `cache_view` of `cache`
/// (`cache_len` elements of `cache_dtype`), one angle source, GQA/MQA head counts. `q` is
/// bit for bit `posenc_rope_rotate_*(POSENC_OP_APPLY)`, the cache as
/// `posenc_rope_apply_into`.
///
/// Returns `POSENC_OK`, or an error code with `q` and `cache` unchanged.
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `q` to `q_len` writable and
/// `k` to `k_len` readable elements of `dtype`, `cache` to `cache_len` writable elements of
/// `cache_dtype`, aligned for them; `at` as for `posenc_rope_apply_into`. `q` and `cache`
/// overlap neither each other nor `k`, `rope` or the buffers of `*at`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn posenc_rope_apply_qk_into(
    rope: *const PosencRope,
    dtype: PosencDtype,
    q: *mut c_void,
    q_len: usize,
    n_q_heads: usize,
    k: *const c_void,
    k_len: usize,
    n_kv_heads: usize,
    cache_dtype: PosencDtype,
    cache: *mut c_void,
    cache_len: usize,
    cache_view: PosencView,
    at: *const PosencAngles,
) -> c_int {
    run(|| {
        let (t, o) = (tag(dtype, "dtype")?, tag(cache_dtype, "cache_dtype")?);
        let c = QkInto {
            rope,
            q,
            q_len,
            n_q_heads,
            k,
            k_len,
            n_kv_heads,
            cache,
            cache_len,
            cache_view,
            at,
        };
        // SAFETY: this function's caller contract is the one `qk_into` requires.
        unsafe { by_pair!(t, o, qk_into(c, None)) }
    })
}

/// QK-norm + RoPE for a decoder layer: `q` normalised by `*q_norm` and rotated in place, `k`
/// normalised by `*k_norm` and rotated into the cache slot, one angle source: bit for bit
/// `posenc_rope_apply_normed_*` on `q` and `posenc_rope_apply_normed_into` from `k`. Shapes
/// as `posenc_rope_apply_qk_into`; the rope's `rotary_dim` must be at most 256 (the in-place
/// norm on `q`; `POSENC_ERR_PARAMETER_OUT_OF_RANGE` otherwise).
///
/// Returns `POSENC_OK`, or an error code with `q` and `cache` unchanged.
///
/// # Safety
/// As `posenc_rope_apply_qk_into`; `q_norm` and `k_norm` point to readable `PosencRmsNorm`
/// whose weights do not overlap `q` or `cache`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn posenc_rope_apply_qk_normed_into(
    rope: *const PosencRope,
    dtype: PosencDtype,
    q: *mut c_void,
    q_len: usize,
    n_q_heads: usize,
    q_norm: *const PosencRmsNorm,
    k: *const c_void,
    k_len: usize,
    n_kv_heads: usize,
    k_norm: *const PosencRmsNorm,
    cache_dtype: PosencDtype,
    cache: *mut c_void,
    cache_len: usize,
    cache_view: PosencView,
    at: *const PosencAngles,
) -> c_int {
    run(|| {
        let (t, o) = (tag(dtype, "dtype")?, tag(cache_dtype, "cache_dtype")?);
        let c = QkInto {
            rope,
            q,
            q_len,
            n_q_heads,
            k,
            k_len,
            n_kv_heads,
            cache,
            cache_len,
            cache_view,
            at,
        };
        let norms = Some((q_norm, k_norm));
        // SAFETY: this function's caller contract is the one `qk_into` requires.
        unsafe { by_pair!(t, o, qk_into(c, norms)) }
    })
}

/// `posenc_rope_apply_normed_*` for every dtype.
///
/// # Safety
/// The caller contract of `posenc_rope_apply_normed_f32`, `x` pointing to `len` writable
/// `E::C`.
unsafe fn normed<E: Dtype>(
    rope: *const PosencRope,
    x: *mut E::C,
    len: usize,
    n_heads: usize,
    norm: *const PosencRmsNorm,
    at: *const PosencAngles,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let x = Raw::<E>::dtype(x, len, "x")?;
        let n = Norm::new(norm, NORM)?;
        let at = At::new(at)?;
        at.disjoint(&x)?;
        x.disjoint(&r)?;
        n.disjoint(&x)?;
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        // SAFETY: checked by At::new; readable (contract); disjoint from the written `x`.
        let angles = unsafe { at.src(rope) }?;
        // SAFETY: checked by Norm::new; readable (contract); disjoint from `x`.
        let n = unsafe { n.get() };
        // SAFETY: checked by Raw::dtype; writable, unaccessed by others (contract); disjoint
        // from every input (checked above).
        let x = unsafe { x.as_mut_slice() };
        with_src!(angles, |a| rope.apply_normed(x, n_heads, &n, a))?;
        Ok(())
    })
}

/// QK-norm + RoPE in place, in one pass over `x` (`len` floats: `at->n_tokens * n_heads *
/// head_dim`, token-major): RMSNorm by `*norm`, then the rotation of `POSENC_OP_APPLY`,
/// bit for bit the rotation of the normalised values kept in float (posenc's rounding) or
/// HF's rounded module output (the HF modes). Channels outside the rotary window are
/// normalised too. The rope's `rotary_dim` must be at most 256 (else
/// `POSENC_ERR_PARAMETER_OUT_OF_RANGE`; `posenc_rope_apply_normed_into` has no limit).
///
/// Returns `POSENC_OK`, or an error code with `x` unchanged (a weight of the wrong length is
/// `POSENC_ERR_LENGTH_MISMATCH`, a negative or non-finite `eps`
/// `POSENC_ERR_PARAMETER_OUT_OF_RANGE`, an unknown `norm->kind` `POSENC_ERR_INVALID_ENUM`).
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `x` to `len` writable
/// floats; `norm` to a readable `PosencRmsNorm` whose weight is `weight_len` readable floats;
/// `at` to a readable `PosencAngles` whose buffers satisfy the buffer contract; `x` overlaps
/// none of `rope`, the weight or the buffers of `*at`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_normed_f32(
    rope: *const PosencRope,
    x: *mut f32,
    len: usize,
    n_heads: usize,
    norm: *const PosencRmsNorm,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `normed` requires.
    unsafe { normed::<f32>(rope, x, len, n_heads, norm, at) }
}

/// `posenc_rope_apply_normed_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_normed_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_normed_f16(
    rope: *const PosencRope,
    x: *mut u16,
    len: usize,
    n_heads: usize,
    norm: *const PosencRmsNorm,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `normed` requires.
    unsafe { normed::<f16>(rope, x, len, n_heads, norm, at) }
}

/// `posenc_rope_apply_normed_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_normed_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_normed_bf16(
    rope: *const PosencRope,
    x: *mut u16,
    len: usize,
    n_heads: usize,
    norm: *const PosencRmsNorm,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `normed` requires.
    unsafe { normed::<bf16>(rope, x, len, n_heads, norm, at) }
}

/// `posenc_rope_apply_qk_normed_*` for every dtype.
///
/// # Safety
/// The caller contract of `posenc_rope_apply_qk_normed_f32`, with `E::C` elements.
#[allow(clippy::too_many_arguments)] // the C signature, forwarded
unsafe fn qk_normed<E: Dtype>(
    rope: *const PosencRope,
    q: *mut E::C,
    q_len: usize,
    n_q_heads: usize,
    q_norm: *const PosencRmsNorm,
    k: *mut E::C,
    k_len: usize,
    n_kv_heads: usize,
    k_norm: *const PosencRmsNorm,
    at: *const PosencAngles,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let q = Raw::<E>::dtype(q, q_len, "q")?;
        let k = Raw::<E>::dtype(k, k_len, "k")?;
        let qn = Norm::new(q_norm, Q_NORM)?;
        let kn = Norm::new(k_norm, K_NORM)?;
        let at = At::new(at)?;
        q.disjoint(&k)?;
        for out in [&q, &k] {
            at.disjoint(out)?;
            out.disjoint(&r)?;
            qn.disjoint(out)?;
            kn.disjoint(out)?;
        }
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        // SAFETY: checked by At::new; readable (contract); disjoint from `q` and `k`.
        let angles = unsafe { at.src(rope) }?;
        // SAFETY: checked by Norm::new; readable (contract); disjoint from `q` and `k`.
        let (qn, kn) = unsafe { (qn.get(), kn.get()) };
        // SAFETY: checked by Raw::dtype; writable, unaccessed by others (contract); disjoint
        // from each other and from every input (checked above).
        let (q, k) = unsafe { (q.as_mut_slice(), k.as_mut_slice()) };
        with_src!(angles, |a| rope
            .apply_qk_normed(q, n_q_heads, &qn, k, n_kv_heads, &kn, a))?;
        Ok(())
    })
}

/// QK-norm + RoPE on Q and K in place (GQA head counts), each with its own norm, one angle
/// source: bit for bit `posenc_rope_apply_normed_f32` on each buffer. Shapes as
/// `posenc_rope_apply_qk_f32`.
///
/// Returns `POSENC_OK`, or an error code with `q` and `k` unchanged.
///
/// # Safety
/// As `posenc_rope_apply_qk_f32`; `q_norm` and `k_norm` point to readable `PosencRmsNorm`
/// whose weights overlap neither `q` nor `k`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn posenc_rope_apply_qk_normed_f32(
    rope: *const PosencRope,
    q: *mut f32,
    q_len: usize,
    n_q_heads: usize,
    q_norm: *const PosencRmsNorm,
    k: *mut f32,
    k_len: usize,
    n_kv_heads: usize,
    k_norm: *const PosencRmsNorm,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `qk_normed` requires.
    unsafe {
        qk_normed::<f32>(
            rope, q, q_len, n_q_heads, q_norm, k, k_len, n_kv_heads, k_norm, at,
        )
    }
}

/// `posenc_rope_apply_qk_normed_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_qk_normed_f32`, with `uint16_t` buffers.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn posenc_rope_apply_qk_normed_f16(
    rope: *const PosencRope,
    q: *mut u16,
    q_len: usize,
    n_q_heads: usize,
    q_norm: *const PosencRmsNorm,
    k: *mut u16,
    k_len: usize,
    n_kv_heads: usize,
    k_norm: *const PosencRmsNorm,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `qk_normed` requires.
    unsafe {
        qk_normed::<f16>(
            rope, q, q_len, n_q_heads, q_norm, k, k_len, n_kv_heads, k_norm, at,
        )
    }
}

/// `posenc_rope_apply_qk_normed_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_qk_normed_f32`, with `uint16_t` buffers.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn posenc_rope_apply_qk_normed_bf16(
    rope: *const PosencRope,
    q: *mut u16,
    q_len: usize,
    n_q_heads: usize,
    q_norm: *const PosencRmsNorm,
    k: *mut u16,
    k_len: usize,
    n_kv_heads: usize,
    k_norm: *const PosencRmsNorm,
    at: *const PosencAngles,
) -> c_int {
    // SAFETY: this function's caller contract is the one `qk_normed` requires.
    unsafe {
        qk_normed::<bf16>(
            rope, q, q_len, n_q_heads, q_norm, k, k_len, n_kv_heads, k_norm, at,
        )
    }
}
