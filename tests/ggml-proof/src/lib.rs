//! ggml's own RoPE (`ggml_rope_ext`, `ggml_rope_multi`) on the CPU backend, called through
//! its C API from the ggml that `build.rs` compiles out of the crates.io package
//! `llama-cpp-sys-2` (see `GGML_SOURCE`). One safe function, [`ggml_rope`]: it builds a
//! one-op graph in a fresh ggml context, runs it on one thread and returns the output.
//!
//! The declarations below are the few ggml.h / ggml-cpu.h entry points the proof needs, with
//! the signatures of the vendored headers.

use std::ffi::c_void;

/// Which ggml package and version the library was built from (set by build.rs).
pub const GGML_SOURCE: &str = env!("GGML_PROOF_VENDOR");

/// `GGML_ROPE_TYPE_NORMAL`: pairs `(2i, 2i+1)`.
pub const MODE_NORMAL: i32 = 0;
/// `GGML_ROPE_TYPE_NEOX`: pairs `(i, i + n_dims/2)`.
pub const MODE_NEOX: i32 = 2;
/// `GGML_ROPE_TYPE_MROPE`: Qwen2-VL sections, NEOX pairing.
pub const MODE_MROPE: i32 = 8;
/// `GGML_ROPE_TYPE_IMROPE`: Qwen3-VL interleaved sections, NEOX pairing.
pub const MODE_IMROPE: i32 = 40;

const GGML_TYPE_F32: i32 = 0;
const GGML_TYPE_I32: i32 = 26;

#[repr(C)]
struct InitParams {
    mem_size: usize,
    mem_buffer: *mut c_void,
    no_alloc: bool,
}

#[repr(C)]
struct Context {
    _opaque: [u8; 0],
}
#[repr(C)]
struct Tensor {
    _opaque: [u8; 0],
}
#[repr(C)]
struct Graph {
    _opaque: [u8; 0],
}

unsafe extern "C" {
    fn ggml_init(params: InitParams) -> *mut Context;
    fn ggml_free(ctx: *mut Context);
    fn ggml_tensor_overhead() -> usize;
    fn ggml_graph_overhead() -> usize;
    fn ggml_new_tensor_1d(ctx: *mut Context, ty: i32, ne0: i64) -> *mut Tensor;
    fn ggml_new_tensor_3d(ctx: *mut Context, ty: i32, ne0: i64, ne1: i64, ne2: i64) -> *mut Tensor;
    fn ggml_get_data(tensor: *const Tensor) -> *mut c_void;
    fn ggml_rope_ext(
        ctx: *mut Context,
        a: *mut Tensor,
        b: *mut Tensor,
        c: *mut Tensor,
        n_dims: i32,
        mode: i32,
        n_ctx_orig: i32,
        freq_base: f32,
        freq_scale: f32,
        ext_factor: f32,
        attn_factor: f32,
        beta_fast: f32,
        beta_slow: f32,
    ) -> *mut Tensor;
    fn ggml_rope_multi(
        ctx: *mut Context,
        a: *mut Tensor,
        b: *mut Tensor,
        c: *mut Tensor,
        n_dims: i32,
        sections: *mut i32,
        mode: i32,
        n_ctx_orig: i32,
        freq_base: f32,
        freq_scale: f32,
        ext_factor: f32,
        attn_factor: f32,
        beta_fast: f32,
        beta_slow: f32,
    ) -> *mut Tensor;
    fn ggml_new_graph(ctx: *mut Context) -> *mut Graph;
    fn ggml_build_forward_expand(graph: *mut Graph, tensor: *mut Tensor);
    fn ggml_graph_compute_with_ctx(ctx: *mut Context, graph: *mut Graph, n_threads: i32) -> i32;
}

/// The arguments of `ggml_rope_ext` / `ggml_rope_multi` after the tensors.
#[derive(Clone, Copy, Debug)]
pub struct RopeArgs<'a> {
    /// Rotated dimensions (from the start of each head).
    pub n_dims: usize,
    /// `MODE_*`.
    pub mode: i32,
    /// M-RoPE sections (pairs per axis `t, h, w, e`); `Some` calls `ggml_rope_multi`.
    pub sections: Option<[i32; 4]>,
    /// YaRN's original context length.
    pub n_ctx_orig: i32,
    /// `θ` base.
    pub freq_base: f32,
    /// `1 / factor`.
    pub freq_scale: f32,
    /// YaRN ramp weight (0: no YaRN).
    pub ext_factor: f32,
    /// Magnitude multiplied into cos and sin.
    pub attn_factor: f32,
    /// YaRN β_fast.
    pub beta_fast: f32,
    /// YaRN β_slow.
    pub beta_slow: f32,
    /// The optional frequency-factor tensor (`n_dims / 2` divisors).
    pub freq_factors: Option<&'a [f32]>,
}

/// Positions as ggml takes them: one per token, or (M-RoPE) `[t, h, w, e]` per token
/// (llama.cpp passes `e = 0` for every decoder token).
#[derive(Clone, Copy, Debug)]
pub enum Pos<'a> {
    /// One position per token.
    Plain(&'a [i32]),
    /// `[t, h, w, e]` per token.
    Axes(&'a [[i32; 4]]),
}

impl Pos<'_> {
    fn tokens(&self) -> usize {
        match self {
            Pos::Plain(p) => p.len(),
            Pos::Axes(p) => p.len(),
        }
    }
}

/// ggml's RoPE of `x` (`tokens × n_heads × head_dim` row-major, i.e. ggml's
/// `[head_dim, n_heads, tokens]`), computed by ggml's CPU backend on one thread.
///
/// Panics if the shapes disagree or ggml fails (this is a test helper).
pub fn ggml_rope(
    x: &[f32],
    head_dim: usize,
    n_heads: usize,
    pos: Pos<'_>,
    args: &RopeArgs<'_>,
) -> Vec<f32> {
    let tokens = pos.tokens();
    assert_eq!(x.len(), tokens * n_heads * head_dim, "x shape");
    assert!(
        args.n_dims <= head_dim && args.n_dims.is_multiple_of(2),
        "n_dims"
    );
    if let Some(ff) = args.freq_factors {
        assert_eq!(ff.len(), args.n_dims / 2, "freq factors");
    }
    assert_eq!(
        args.sections.is_some(),
        matches!(pos, Pos::Axes(_)),
        "sections vs positions"
    );
    let data_bytes = 4 * (2 * x.len() + 4 * tokens + head_dim);
    // SAFETY: both functions only return sizes of ggml's internal structs.
    let overhead = unsafe { 8 * ggml_tensor_overhead() + ggml_graph_overhead() };
    // The compute plan's work buffer (one rope cache row per thread) comes out of the context.
    let mem_size = data_bytes + overhead + (1 << 20);
    let params = InitParams {
        mem_size,
        mem_buffer: std::ptr::null_mut(),
        no_alloc: false,
    };
    // SAFETY: a null buffer asks ggml to allocate `mem_size` itself; the context is freed below.
    let ctx = unsafe { ggml_init(params) };
    assert!(!ctx.is_null(), "ggml_init");
    let out;
    // SAFETY: every tensor is created in `ctx` with the shape its data is copied into (sizes
    // asserted above); data pointers come from ggml for those tensors; the graph is built and
    // computed in the same context, and the result is copied out before `ggml_free`.
    unsafe {
        let a = ggml_new_tensor_3d(
            ctx,
            GGML_TYPE_F32,
            head_dim as i64,
            n_heads as i64,
            tokens as i64,
        );
        assert!(!a.is_null());
        std::ptr::copy_nonoverlapping(x.as_ptr(), ggml_get_data(a).cast::<f32>(), x.len());
        let n_pos = match pos {
            Pos::Plain(_) => tokens,
            Pos::Axes(_) => 4 * tokens,
        };
        let b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n_pos as i64);
        assert!(!b.is_null());
        let bp = ggml_get_data(b).cast::<i32>();
        match pos {
            Pos::Plain(p) => std::ptr::copy_nonoverlapping(p.as_ptr(), bp, tokens),
            Pos::Axes(p) => {
                // ggml_rope_multi's layout: all t, then all h, then all w, then all e.
                for (t, axes) in p.iter().enumerate() {
                    for (k, &v) in axes.iter().enumerate() {
                        *bp.add(k * tokens + t) = v;
                    }
                }
            }
        }
        let c = match args.freq_factors {
            Some(ff) => {
                let c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, ff.len() as i64);
                assert!(!c.is_null());
                std::ptr::copy_nonoverlapping(
                    ff.as_ptr(),
                    ggml_get_data(c).cast::<f32>(),
                    ff.len(),
                );
                c
            }
            None => std::ptr::null_mut(),
        };
        let y = match args.sections {
            None => ggml_rope_ext(
                ctx,
                a,
                b,
                c,
                args.n_dims as i32,
                args.mode,
                args.n_ctx_orig,
                args.freq_base,
                args.freq_scale,
                args.ext_factor,
                args.attn_factor,
                args.beta_fast,
                args.beta_slow,
            ),
            Some(mut sections) => ggml_rope_multi(
                ctx,
                a,
                b,
                c,
                args.n_dims as i32,
                sections.as_mut_ptr(),
                args.mode,
                args.n_ctx_orig,
                args.freq_base,
                args.freq_scale,
                args.ext_factor,
                args.attn_factor,
                args.beta_fast,
                args.beta_slow,
            ),
        };
        assert!(!y.is_null(), "rope op");
        let graph = ggml_new_graph(ctx);
        assert!(!graph.is_null());
        ggml_build_forward_expand(graph, y);
        let status = ggml_graph_compute_with_ctx(ctx, graph, 1);
        assert_eq!(status, 0, "ggml_graph_compute_with_ctx");
        out = std::slice::from_raw_parts(ggml_get_data(y).cast::<f32>(), x.len()).to_vec();
        ggml_free(ctx);
    }
    out
}
