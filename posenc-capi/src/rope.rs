//! RoPE: configuration structs, the caller-owned `PosencRope`, and the apply entry points.

use crate::error::{Fail, run};
use crate::raw::{Dtype, Raw};
use core::ffi::c_int;
use posenc::{
    Axes, Error, Layout, LongRope, Rope, RopeConfig, Rounding, Scaling, Table, Yarn, bf16, f16,
};

/// The largest `rotary_dim` a `PosencRope` supports (posenc's `MAX_ROTARY_DIM`).
pub const POSENC_MAX_ROTARY_DIM: usize = 512;
const _: () = assert!(POSENC_MAX_ROTARY_DIM == posenc::MAX_ROTARY_DIM);

/// Channel pairing of a RoPE layout: one of the `POSENC_LAYOUT_*` values.
pub type PosencLayout = u32;
/// Pairs `(2i, 2i + 1)`: GPT-J, Meta's original LLaMA checkpoints, ggml "normal".
pub const POSENC_LAYOUT_INTERLEAVED: PosencLayout = 0;
/// Pairs `(i, i + rotary_dim/2)`: GPT-NeoX, HuggingFace transformers, ggml "neox".
pub const POSENC_LAYOUT_ROTATE_HALF: PosencLayout = 1;

pub(crate) fn layout(v: PosencLayout) -> Result<Layout, Fail> {
    match v {
        POSENC_LAYOUT_INTERLEAVED => Ok(Layout::Interleaved),
        POSENC_LAYOUT_ROTATE_HALF => Ok(Layout::RotateHalf),
        _ => Err(Fail::InvalidEnum("layout", v)),
    }
}

/// Frequency-scaling scheme of a `PosencScaling`: one of the `POSENC_SCALING_*` values.
pub type PosencScalingKind = u32;
/// No scaling (the zero value).
pub const POSENC_SCALING_NONE: PosencScalingKind = 0;
/// HF `linear` (position interpolation): `params.linear`.
pub const POSENC_SCALING_LINEAR: PosencScalingKind = 1;
/// Fixed NTK-aware base change: `params.ntk`.
pub const POSENC_SCALING_NTK: PosencScalingKind = 2;
/// HF `dynamic` NTK at an explicit sequence length: `params.dynamic_ntk`.
pub const POSENC_SCALING_DYNAMIC_NTK: PosencScalingKind = 3;
/// HF `yarn`: `params.yarn`.
pub const POSENC_SCALING_YARN: PosencScalingKind = 4;
/// HF `llama3` (Llama 3.1 frequency smoothing): `params.llama3`.
pub const POSENC_SCALING_LLAMA3: PosencScalingKind = 5;
/// HF `longrope` (Phi-3/3.5/4): `params.longrope`.
pub const POSENC_SCALING_LONGROPE: PosencScalingKind = 6;
/// Per-pair frequency divisors (ggml `rope_freqs`): `params.freq_factors`.
pub const POSENC_SCALING_FREQ_FACTORS: PosencScalingKind = 7;
/// HF `proportional` (Gemma): `params.proportional`.
pub const POSENC_SCALING_PROPORTIONAL: PosencScalingKind = 8;

/// Parameters of `POSENC_SCALING_LINEAR`: `inv_freq / factor`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PosencLinear {
    /// `factor` (> 0).
    pub factor: f32,
}

/// Parameters of `POSENC_SCALING_NTK`: base `b * factor^(d/(d-2))`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PosencNtk {
    /// `factor` (> 0).
    pub factor: f32,
}

/// Parameters of `POSENC_SCALING_DYNAMIC_NTK` (HF `dynamic`), for an explicit sequence
/// length: unscaled while `seq_len <= max_positions`, a larger base above.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PosencDynamicNtk {
    /// `factor` (> 0).
    pub factor: f32,
    /// `max_position_embeddings` (> 0).
    pub max_positions: u32,
    /// The sequence length the frequencies are computed for (the caller decides when to
    /// rebuild: keys already cached keep the frequencies they were rotated with).
    pub seq_len: u32,
}

/// Parameters of `POSENC_SCALING_YARN` (HF `yarn`).
///
/// Zero fields mean HF's defaults, so a zero-initialized struct with `factor` and
/// `original_max_positions` set is HF's default YaRN: `beta_fast` 0 means 32, `beta_slow` 0
/// means 1 (HF maps missing or zero betas the same way); `mscale`, `mscale_all_dim` and
/// `attention_factor` 0 mean absent; `no_truncate` 0 means HF's `truncate: true`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PosencYarn {
    /// `factor` (> 0).
    pub factor: f32,
    /// `original_max_position_embeddings` (> 0).
    pub original_max_positions: u32,
    /// `beta_fast` (0: 32).
    pub beta_fast: f32,
    /// `beta_slow` (0: 1).
    pub beta_slow: f32,
    /// `mscale` (0: absent, as in HF).
    pub mscale: f32,
    /// `mscale_all_dim` (0: absent, as in HF).
    pub mscale_all_dim: f32,
    /// Explicit `attention_factor` (> 0; 0: absent, computed from the mscale rules).
    pub attention_factor: f32,
    /// Non-zero for HF `truncate: false` (gpt-oss): no floor/ceil of the correction range.
    pub no_truncate: u8,
}

/// Parameters of `POSENC_SCALING_LLAMA3` (HF `llama3`, Llama 3.1).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PosencLlama3 {
    /// `factor` (> 0).
    pub factor: f32,
    /// `low_freq_factor` (> 0, <= `high_freq_factor`).
    pub low_freq_factor: f32,
    /// `high_freq_factor` (> 0).
    pub high_freq_factor: f32,
    /// `original_max_position_embeddings` (> 0).
    pub original_max_positions: u32,
}

/// Parameters of `POSENC_SCALING_LONGROPE` (HF `longrope`; Phi-3/3.5/4).
///
/// Both factor lists must have `rotary_dim / 2` finite positive entries. They are read only
/// during `posenc_rope_init` (the resolved frequencies are copied into the `PosencRope`), so
/// they need not outlive that call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PosencLongRope {
    /// `short_factor`: `short_factor_len` floats (NULL only if the length is 0).
    pub short_factor: *const f32,
    /// Number of entries of `short_factor`.
    pub short_factor_len: usize,
    /// `long_factor`: `long_factor_len` floats (NULL only if the length is 0).
    pub long_factor: *const f32,
    /// Number of entries of `long_factor`.
    pub long_factor_len: usize,
    /// `original_max_position_embeddings` (> 0).
    pub original_max_positions: u32,
    /// `max_position_embeddings`.
    pub max_positions: u32,
    /// Explicit `attention_factor` (> 0; 0: absent, computed from the position counts).
    pub attention_factor: f32,
    /// Non-zero to use `long_factor` (explicit: peers decide differently, and keys already
    /// cached depend on the choice).
    pub use_long: u8,
}

/// Parameters of `POSENC_SCALING_FREQ_FACTORS`: `inv_freq[j] / factors[j]` (ggml
/// `rope_freqs`). Read only during `posenc_rope_init`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PosencFreqFactors {
    /// `rotary_dim / 2` finite positive divisors (NULL only if `len` is 0).
    pub factors: *const f32,
    /// Number of entries of `factors`.
    pub len: usize,
}

/// Parameters of `POSENC_SCALING_PROPORTIONAL` (HF `proportional`, Gemma): the first
/// `floor(partial_rotary_factor * d / 2)` pairs get the default frequencies of the full `d`,
/// the others frequency 0; all are divided by `factor`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PosencProportional {
    /// `partial_rotary_factor`, in [0, 1].
    pub partial_rotary_factor: f32,
    /// `factor` (> 0; 0 means HF's default, 1).
    pub factor: f32,
}

/// The parameters of each scaling scheme; `PosencScaling.kind` says which member is read.
#[repr(C)]
#[derive(Clone, Copy)]
pub union PosencScalingParams {
    /// For `POSENC_SCALING_LINEAR`.
    pub linear: PosencLinear,
    /// For `POSENC_SCALING_NTK`.
    pub ntk: PosencNtk,
    /// For `POSENC_SCALING_DYNAMIC_NTK`.
    pub dynamic_ntk: PosencDynamicNtk,
    /// For `POSENC_SCALING_YARN`.
    pub yarn: PosencYarn,
    /// For `POSENC_SCALING_LLAMA3`.
    pub llama3: PosencLlama3,
    /// For `POSENC_SCALING_LONGROPE`.
    pub longrope: PosencLongRope,
    /// For `POSENC_SCALING_FREQ_FACTORS`.
    pub freq_factors: PosencFreqFactors,
    /// For `POSENC_SCALING_PROPORTIONAL`.
    pub proportional: PosencProportional,
}

/// A frequency-scaling scheme: a tag and the parameters of that scheme. Parameters are named
/// as in HuggingFace configs and validated by `posenc_rope_init`.
///
/// All-zero is `POSENC_SCALING_NONE`. Example: `s.kind = POSENC_SCALING_LINEAR;
/// s.params.linear.factor = 4.0f;`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PosencScaling {
    /// Which scheme (a `POSENC_SCALING_*` value); selects the member of `params` that is read.
    pub kind: PosencScalingKind,
    /// The scheme's parameters (ignored for `POSENC_SCALING_NONE`).
    pub params: PosencScalingParams,
}

impl Default for PosencScaling {
    fn default() -> PosencScaling {
        PosencScaling {
            kind: POSENC_SCALING_NONE,
            params: PosencScalingParams {
                linear: PosencLinear { factor: 0.0 },
            },
        }
    }
}

/// What a `PosencRope` is built from.
///
/// Zero-initialize it and set the fields you need: `rotary_dim` 0 means `head_dim` (full
/// rotary) and an all-zero `scaling` means no scaling.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PosencRopeConfig {
    /// Channels per head (even, non-zero).
    pub head_dim: usize,
    /// Leading channels of each head that rotate (even, <= `head_dim`, <=
    /// `POSENC_MAX_ROTARY_DIM`); 0 means `head_dim`. Channels past it are left untouched.
    pub rotary_dim: usize,
    /// `rope_theta` (finite, > 0).
    pub base: f32,
    /// A `POSENC_LAYOUT_*` value.
    pub layout: PosencLayout,
    /// Frequency scaling.
    pub scaling: PosencScaling,
    /// First rotating channel of each head (0: the first; ggml's `rope_set_offset`):
    /// channels `rotary_offset .. rotary_offset + rotary_dim` rotate, the rest are untouched.
    pub rotary_offset: usize,
    /// Position axes: a `POSENC_AXES_*` value (0: one position per token).
    pub axes: PosencAxesKind,
    /// Pairs per axis (t, h, w) for `POSENC_AXES_MROPE` and `POSENC_AXES_MROPE_INTERLEAVED`,
    /// summing to at most `rotary_dim / 2`; ignored otherwise.
    pub sections: [u32; 3],
    /// How results are rounded: a `POSENC_ROUNDING_*` value (0: posenc's single rounding).
    pub rounding: PosencRounding,
}

/// Position axes of a `PosencRopeConfig`: one of the `POSENC_AXES_*` values.
pub type PosencAxesKind = u32;
/// One position per token (the zero value).
pub const POSENC_AXES_SINGLE: PosencAxesKind = 0;
/// Qwen2-VL M-RoPE: three positions (t, h, w) per token, pairs in `sections` blocks.
pub const POSENC_AXES_MROPE: PosencAxesKind = 1;
/// Qwen3-VL interleaved M-RoPE: three positions per token, pairs cycling t, h, w.
pub const POSENC_AXES_MROPE_INTERLEAVED: PosencAxesKind = 2;
/// 2-D vision RoPE: two positions (row, column) per token.
pub const POSENC_AXES_VISION_2D: PosencAxesKind = 3;

/// Rounding of a `PosencRopeConfig`: one of the `POSENC_ROUNDING_*` values.
pub type PosencRounding = u32;
/// posenc's: exact angles, computed in float, rounded once (the zero value).
pub const POSENC_ROUNDING_ONCE: PosencRounding = 0;
/// HuggingFace eager (Llama, NeoX, Phi-3, GPT-J): f32 angle products, cos/sin and the
/// products rounded to the element type, as HF's `apply_rotary_pos_emb` (bit-parity with HF).
pub const POSENC_ROUNDING_HF_EAGER: PosencRounding = 1;
/// HuggingFace with upcast (Cohere): rounded cos/sin, the rotation in unfused float, one
/// rounding.
pub const POSENC_ROUNDING_HF_UPCAST: PosencRounding = 2;

fn axes(kind: PosencAxesKind, sections: [u32; 3]) -> Result<Axes, Fail> {
    let sections = sections.map(|s| s as usize);
    match kind {
        POSENC_AXES_SINGLE => Ok(Axes::Single),
        POSENC_AXES_MROPE => Ok(Axes::MRope { sections }),
        POSENC_AXES_MROPE_INTERLEAVED => Ok(Axes::MRopeInterleaved { sections }),
        POSENC_AXES_VISION_2D => Ok(Axes::Vision2d),
        _ => Err(Fail::InvalidEnum("axes", kind)),
    }
}

fn rounding(v: PosencRounding) -> Result<Rounding, Fail> {
    match v {
        POSENC_ROUNDING_ONCE => Ok(Rounding::Once),
        POSENC_ROUNDING_HF_EAGER => Ok(Rounding::HfEager),
        POSENC_ROUNDING_HF_UPCAST => Ok(Rounding::HfUpcast),
        _ => Err(Fail::InvalidEnum("rounding", v)),
    }
}

impl Default for PosencRopeConfig {
    fn default() -> PosencRopeConfig {
        PosencRopeConfig {
            head_dim: 0,
            rotary_dim: 0,
            base: 0.0,
            layout: POSENC_LAYOUT_INTERLEAVED,
            scaling: PosencScaling::default(),
            rotary_offset: 0,
            axes: POSENC_AXES_SINGLE,
            sections: [0; 3],
            rounding: POSENC_ROUNDING_ONCE,
        }
    }
}

/// 0 means absent (HF treats these the same way, or 0 is not a valid value).
fn nonzero(v: f32) -> Option<f32> {
    if v == 0.0 { None } else { Some(v) }
}

/// 0 means `default`.
fn or_default(v: f32, default: f32) -> f32 {
    if v == 0.0 { default } else { v }
}

/// Builds posenc's config from the C struct (borrowing the caller's factor arrays) and
/// resolves it.
///
/// # Safety
/// The member of `cfg.scaling.params` that `cfg.scaling.kind` names is initialized, and its
/// pointer/length pairs satisfy the buffer contract (readable for the duration of the call).
unsafe fn resolve(cfg: &PosencRopeConfig) -> Result<Rope, Fail> {
    let lay = layout(cfg.layout)?;
    let axes = axes(cfg.axes, cfg.sections)?;
    let rounding = rounding(cfg.rounding)?;
    let p = &cfg.scaling.params;
    // SAFETY (every union read below): all members of PosencScalingParams are plain old data
    // with no invalid bit patterns (f32, u32, u8, usize, raw pointers), and the caller
    // initialized the member that `kind` names, which is the only one read.
    let (short, long, factors);
    let scaling = match cfg.scaling.kind {
        POSENC_SCALING_NONE => Scaling::None,
        POSENC_SCALING_LINEAR => Scaling::Linear {
            factor: unsafe { p.linear }.factor,
        },
        POSENC_SCALING_NTK => Scaling::Ntk {
            factor: unsafe { p.ntk }.factor,
        },
        POSENC_SCALING_DYNAMIC_NTK => {
            let d = unsafe { p.dynamic_ntk };
            Scaling::DynamicNtk {
                factor: d.factor,
                max_positions: d.max_positions,
                seq_len: d.seq_len,
            }
        }
        POSENC_SCALING_YARN => {
            let y = unsafe { p.yarn };
            Scaling::Yarn(Yarn {
                factor: y.factor,
                original_max_positions: y.original_max_positions,
                beta_fast: or_default(y.beta_fast, 32.0),
                beta_slow: or_default(y.beta_slow, 1.0),
                mscale: nonzero(y.mscale),
                mscale_all_dim: nonzero(y.mscale_all_dim),
                attention_factor: nonzero(y.attention_factor),
                truncate: y.no_truncate == 0,
            })
        }
        POSENC_SCALING_LLAMA3 => {
            let l = unsafe { p.llama3 };
            Scaling::Llama3 {
                factor: l.factor,
                low_freq_factor: l.low_freq_factor,
                high_freq_factor: l.high_freq_factor,
                original_max_positions: l.original_max_positions,
            }
        }
        POSENC_SCALING_LONGROPE => {
            let l = unsafe { p.longrope };
            short = Raw::new(l.short_factor, l.short_factor_len, "short_factor")?;
            long = Raw::new(l.long_factor, l.long_factor_len, "long_factor")?;
            Scaling::LongRope(LongRope {
                // SAFETY: checked by Raw::new; readable for the call by this function's
                // contract; only read.
                short_factor: unsafe { short.as_slice() },
                // SAFETY: as above.
                long_factor: unsafe { long.as_slice() },
                original_max_positions: l.original_max_positions,
                max_positions: l.max_positions,
                use_long: l.use_long != 0,
                attention_factor: nonzero(l.attention_factor),
            })
        }
        POSENC_SCALING_FREQ_FACTORS => {
            let f = unsafe { p.freq_factors };
            factors = Raw::new(f.factors, f.len, "factors")?;
            // SAFETY: checked by Raw::new; readable for the call by this function's contract.
            Scaling::FreqFactors(unsafe { factors.as_slice() })
        }
        POSENC_SCALING_PROPORTIONAL => {
            let q = unsafe { p.proportional };
            Scaling::Proportional {
                partial_rotary_factor: q.partial_rotary_factor,
                factor: or_default(q.factor, 1.0),
            }
        }
        other => return Err(Fail::InvalidEnum("scaling.kind", other)),
    };
    let rotary_dim = if cfg.rotary_dim == 0 {
        cfg.head_dim
    } else {
        cfg.rotary_dim
    };
    let config = RopeConfig::new(cfg.head_dim, cfg.base, lay)
        .rotary_dim(rotary_dim)
        .rotary_offset(cfg.rotary_offset)
        .axes(axes)
        .scaling(scaling);
    Ok(Rope::new(&config)?.with_rounding(rounding))
}

/// Words of storage a `PosencRope` reserves for posenc's resolved rope (frequencies, dims,
/// layout, attention factor, backend).
pub const POSENC_ROPE_STORAGE_WORDS: usize = 192;

// The resolved rope must fit the storage and need no more alignment than it has. The
// storage is larger than today's `Rope` (about 1 KiB) so that posenc can grow without
// changing the C struct's size, which would be an ABI break.
const _: () = assert!(size_of::<Rope>() <= POSENC_ROPE_STORAGE_WORDS * size_of::<u64>());
const _: () = assert!(align_of::<Rope>() <= align_of::<u64>());

/// Marks a `PosencRope` written by a successful `posenc_rope_init` of this build: "POSENC" and
/// the size of the stored `Rope`.
const MAGIC: u64 = 0x504F_5345_4E43_0000 | size_of::<Rope>() as u64;

/// A resolved RoPE (frequencies computed once), owned by the caller: a plain struct of
/// fixed size to allocate anywhere (stack, arena, struct member), filled by
/// `posenc_rope_init`, with nothing to free.
///
/// Treat it as opaque. It may be copied with `memcpy` or assignment and shared read-only
/// between threads; it is only meaningful inside the process (and library build) that
/// initialized it, so do not persist it. The `magic` field lets the library refuse a struct
/// that `posenc_rope_init` never filled (`POSENC_ERR_UNINITIALIZED_ROPE`); zero-initializing
/// a `PosencRope` before use makes that check reliable.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PosencRope {
    /// Written by `posenc_rope_init`; do not modify.
    magic: u64,
    /// posenc's resolved rope; do not modify.
    storage: [u64; POSENC_ROPE_STORAGE_WORDS],
}

impl Default for PosencRope {
    /// An all-zero, uninitialized rope (refused until `posenc_rope_init` fills it).
    fn default() -> PosencRope {
        PosencRope {
            magic: 0,
            storage: [0; POSENC_ROPE_STORAGE_WORDS],
        }
    }
}

impl PosencRope {
    pub(crate) fn new(rope: Rope) -> PosencRope {
        let mut blob = PosencRope {
            magic: MAGIC,
            storage: [0; POSENC_ROPE_STORAGE_WORDS],
        };
        // SAFETY: `storage` is large enough for a Rope and aligned at least as strictly (the
        // const assertions above); `write` moves the (Copy, drop-free) value in without
        // reading the old bytes.
        unsafe { blob.storage.as_mut_ptr().cast::<Rope>().write(rope) };
        blob
    }

    /// The stored rope, if this struct was filled by `posenc_rope_init`.
    fn rope(&self) -> Result<&Rope, Fail> {
        if self.magic != MAGIC {
            return Err(Fail::Uninitialized);
        }
        // SAFETY: MAGIC is only ever written by `PosencRope::new`, together with a valid
        // Rope in `storage` (properly aligned and sized, see the const assertions); the caller
        // contract forbids modifying a PosencRope other than by posenc_rope_init or copying a
        // whole initialized one, and copies carry the Rope's bytes unchanged (Rope is Copy
        // and holds no pointers).
        Ok(unsafe { &*self.storage.as_ptr().cast::<Rope>() })
    }

    /// The posenc rope of an initialized `PosencRope` (for Rust callers of this crate).
    pub fn as_rope(&self) -> Option<&Rope> {
        self.rope().ok()
    }
}

/// Borrows the rope of a caller's `PosencRope`.
///
/// # Safety
/// `r` was checked by `Raw::one` and points to a readable `PosencRope` that nothing writes
/// during the call.
pub(crate) unsafe fn borrow<'a>(r: &Raw<PosencRope>) -> Result<&'a Rope, Fail> {
    // SAFETY: non-NULL and aligned (Raw::one); readable and unchanging during the call by
    // this function's contract.
    let blob: &'a PosencRope = unsafe { &*r.ptr() };
    blob.rope()
}

/// Validates `cfg` and computes its frequencies and attention factor into `*out`, for the
/// fastest backend of this CPU.
///
/// Returns `POSENC_OK`, or an error code with `*out` unchanged.
///
/// # Safety
/// `cfg` points to a readable `PosencRopeConfig` whose `scaling.params` member named by
/// `scaling.kind` is initialized, with its factor arrays readable for the call; `out` points
/// to a writable `PosencRope`. NULL `cfg` or `out` is `POSENC_ERR_NULL_POINTER`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_init(
    cfg: *const PosencRopeConfig,
    out: *mut PosencRope,
) -> c_int {
    run(|| {
        let cfg = Raw::one(cfg, "cfg")?;
        let out = Raw::one(out.cast_const(), "out")?;
        // SAFETY: non-NULL and aligned (Raw::one), readable by the caller contract; copied by
        // value, so no reference into the caller's struct outlives this line.
        let cfg: PosencRopeConfig = unsafe { cfg.ptr().read() };
        // SAFETY: the scaling member and its arrays are valid by the caller contract. The
        // borrowed arrays are dropped inside `resolve`, before `out` is written, so even an
        // `out` overlapping them aliases nothing.
        let rope = unsafe { resolve(&cfg) }?;
        // SAFETY: non-NULL and aligned (Raw::one), writable by the caller contract.
        unsafe { out.ptr().write(PosencRope::new(rope)) };
        Ok(())
    })
}

/// The apply entry points, once for every dtype: validates the arguments, then rotates `x`
/// (or undoes the rotation).
///
/// # Safety
/// The caller contract of `posenc_rope_apply_f32`, with `x` pointing to `len` writable
/// `E::C`.
unsafe fn apply<E: Dtype>(
    rope: *const PosencRope,
    x: *mut E::C,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    n_tokens: usize,
    inverse: bool,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let x = Raw::<E>::dtype(x, len, "x")?;
        let p = Raw::new(positions, n_tokens, "positions")?;
        x.disjoint(&p)?;
        x.disjoint(&r)?;
        // SAFETY: checked by Raw::one, readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        // SAFETY: checked by Raw::new; readable (contract); not overlapping the written `x`.
        let p = unsafe { p.as_slice() };
        // SAFETY: checked by Raw::dtype; writable and not accessed by anyone else during the
        // call (contract); disjoint from `positions` and `rope` (checked above).
        let x = unsafe { x.as_mut_slice() };
        if inverse {
            Ok(rope.apply_inverse(x, n_heads, p)?)
        } else {
            Ok(rope.apply(x, n_heads, p)?)
        }
    })
}

/// Rotates `x` in place by the angles of `positions`: `x` is token-major, `n_tokens` tokens
/// of `n_heads` heads of `head_dim` floats (`len == n_tokens * n_heads * head_dim`),
/// `positions` has one entry per token (negative positions rotate backwards).
///
/// Angles are exact (`p * inv_freq[i]` formed without rounding and reduced in double), cos
/// and sin are multiplied by the attention factor, and each output `a*c - b*s` is within
/// `2 * 2^-24 * (|a*c| + |b*s|)` of the exact value for those c, s.
///
/// Returns `POSENC_OK`, or an error code with `x` unchanged.
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `x` points to `len`
/// writable floats and `positions` to `n_tokens` readable `int32_t` (either may be NULL when
/// its count is 0); `x` must not overlap `positions` or `rope`, and no other thread may
/// access `x` during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_f32(
    rope: *const PosencRope,
    x: *mut f32,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    n_tokens: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `apply` requires.
    unsafe { apply::<f32>(rope, x, len, n_heads, positions, n_tokens, false) }
}

/// `posenc_rope_apply_f32` for IEEE binary16 elements, passed as their `uint16_t` bits:
/// loaded exactly, computed in float, rounded once to nearest even on store.
///
/// # Safety
/// As `posenc_rope_apply_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_f16(
    rope: *const PosencRope,
    x: *mut u16,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    n_tokens: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `apply` requires.
    unsafe { apply::<f16>(rope, x, len, n_heads, positions, n_tokens, false) }
}

/// `posenc_rope_apply_f32` for bfloat16 elements, passed as their `uint16_t` bits: loaded
/// exactly, computed in float, rounded once to nearest even on store.
///
/// # Safety
/// As `posenc_rope_apply_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_bf16(
    rope: *const PosencRope,
    x: *mut u16,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    n_tokens: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `apply` requires.
    unsafe { apply::<bf16>(rope, x, len, n_heads, positions, n_tokens, false) }
}

/// Undoes `posenc_rope_apply_f32`: rotates by the negated angles and divides by the
/// attention factor. Arguments and errors as `posenc_rope_apply_f32`.
///
/// # Safety
/// As `posenc_rope_apply_f32`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_inverse_f32(
    rope: *const PosencRope,
    x: *mut f32,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    n_tokens: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `apply` requires.
    unsafe { apply::<f32>(rope, x, len, n_heads, positions, n_tokens, true) }
}

/// `posenc_rope_apply_inverse_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_inverse_f16(
    rope: *const PosencRope,
    x: *mut u16,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    n_tokens: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `apply` requires.
    unsafe { apply::<f16>(rope, x, len, n_heads, positions, n_tokens, true) }
}

/// `posenc_rope_apply_inverse_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_rope_apply_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_apply_inverse_bf16(
    rope: *const PosencRope,
    x: *mut u16,
    len: usize,
    n_heads: usize,
    positions: *const i32,
    n_tokens: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `apply` requires.
    unsafe { apply::<bf16>(rope, x, len, n_heads, positions, n_tokens, true) }
}

/// Writes the cos and sin tables for `positions`: `n_tokens * rotary_dim/2` floats each
/// (`cos_len` and `sin_len` must both equal that), token-major, attention factor included:
/// exactly the values the apply functions use.
///
/// Returns `POSENC_OK`, or an error code with both tables unchanged
/// (`POSENC_ERR_LENGTH_MISMATCH` if either length is not `n_tokens * rotary_dim/2`).
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `positions` points to
/// `n_tokens` readable `int32_t`; `cos` to `cos_len` and `sin` to `sin_len` writable floats
/// (NULL allowed for a zero count). `cos` and `sin` must not overlap each other, `positions`
/// or `rope`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_fill_cos_sin(
    rope: *const PosencRope,
    positions: *const i32,
    n_tokens: usize,
    cos: *mut f32,
    cos_len: usize,
    sin: *mut f32,
    sin_len: usize,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let p = Raw::new(positions, n_tokens, "positions")?;
        let c = Raw::new(cos.cast_const(), cos_len, "cos")?;
        let s = Raw::new(sin.cast_const(), sin_len, "sin")?;
        c.disjoint(&s)?;
        c.disjoint(&p)?;
        s.disjoint(&p)?;
        c.disjoint(&r)?;
        s.disjoint(&r)?;
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        // SAFETY: checked by Raw::new; readable (contract); disjoint from both outputs.
        let p = unsafe { p.as_slice() };
        // SAFETY: checked by Raw::new; writable (contract); disjoint from every other buffer
        // of the call (checked above). posenc checks both lengths before writing.
        let (c, s) = unsafe { (c.as_mut_slice(), s.as_mut_slice()) };
        Ok(rope.fill_cos_sin(p, c, s)?)
    })
}

/// Copies the `rotary_dim / 2` frequencies the rope uses (f32, HF's `inv_freq` buffer) into
/// `out`; `out_len` must equal `rotary_dim / 2` (see `posenc_rope_rotary_dim`).
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged.
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `out` points to `out_len`
/// writable floats not overlapping `rope`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_inv_freq(
    rope: *const PosencRope,
    out: *mut f32,
    out_len: usize,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let o = Raw::new(out.cast_const(), out_len, "out")?;
        o.disjoint(&r)?;
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        let w = rope.inv_freq();
        if out_len != w.len() {
            return Err(Fail::Posenc(posenc::Error::LengthMismatch {
                what: "out",
                expected: w.len(),
                actual: out_len,
                formula: posenc::Formula {
                    names: &"rotary_dim/2",
                    values: [w.len(), 0, 0],
                },
            }));
        }
        // SAFETY: checked by Raw::new; writable (contract); disjoint from `rope`.
        unsafe { o.as_mut_slice() }.copy_from_slice(w);
        Ok(())
    })
}

/// Reads a property of an initialized rope, or returns `fallback`.
///
/// # Safety
/// `rope` is NULL or points to a readable `PosencRope`.
unsafe fn property<T: Copy>(rope: *const PosencRope, fallback: T, f: impl FnOnce(&Rope) -> T) -> T {
    crate::error::catch_or(fallback, || {
        let Ok(r) = Raw::one(rope, "rope") else {
            return fallback;
        };
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        match unsafe { borrow(&r) } {
            Ok(rope) => f(rope),
            Err(_) => fallback,
        }
    })
}

/// The factor cos and sin are multiplied by (YaRN/LongRoPE mscale; 1 otherwise), or NaN if
/// `rope` is NULL or not initialized.
///
/// # Safety
/// `rope` is NULL or points to a readable `PosencRope`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_attention_factor(rope: *const PosencRope) -> f32 {
    // SAFETY: the caller contract above.
    unsafe { property(rope, f32::NAN, |r| r.attention_factor()) }
}

/// The rope's `head_dim`, or 0 if `rope` is NULL or not initialized.
///
/// # Safety
/// `rope` is NULL or points to a readable `PosencRope`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_head_dim(rope: *const PosencRope) -> usize {
    // SAFETY: the caller contract above.
    unsafe { property(rope, 0, |r| r.head_dim()) }
}

/// The rope's `rotary_dim` (twice the number of frequencies), or 0 if `rope` is NULL or not
/// initialized.
///
/// # Safety
/// `rope` is NULL or points to a readable `PosencRope`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_rotary_dim(rope: *const PosencRope) -> usize {
    // SAFETY: the caller contract above.
    unsafe { property(rope, 0, |r| r.rotary_dim()) }
}

/// The apply-with-table entry points, once for every dtype.
///
/// # Safety
/// The caller contract of `posenc_apply_with_table_f32`, with `x` pointing to `len` writable
/// `E::C`.
#[allow(clippy::too_many_arguments)] // the C signature, forwarded
unsafe fn with_table<E: Dtype>(
    x: *mut E::C,
    len: usize,
    n_heads: usize,
    head_dim: usize,
    lay: PosencLayout,
    cos: *const f32,
    sin: *const f32,
    table_len: usize,
) -> c_int {
    run(|| {
        let lay = layout(lay)?;
        let x = Raw::<E>::dtype(x, len, "x")?;
        let c = Raw::new(cos, table_len, "cos")?;
        let s = Raw::new(sin, table_len, "sin")?;
        x.disjoint(&c)?;
        x.disjoint(&s)?;
        // SAFETY: checked by Raw::new; readable (contract); disjoint from the written `x`.
        let (c, s) = unsafe { (c.as_slice(), s.as_slice()) };
        // SAFETY: checked by Raw::dtype; writable, unaccessed by others (contract); disjoint
        // from the tables (checked above).
        let x = unsafe { x.as_mut_slice() };
        Ok(apply_table(x, n_heads, head_dim, lay, c, s)?)
    })
}

/// Rotates token-major `x` by caller tables whose length gives the rotary dim: the checks
/// this entry point documents, in its order, then a rope of that rotary dim rotating from a
/// `posenc::Table`.
fn apply_table<T: posenc::Element>(
    x: &mut [T],
    n_heads: usize,
    head_dim: usize,
    layout: Layout,
    cos: &[f32],
    sin: &[f32],
) -> Result<(), Error> {
    if head_dim == 0 || !head_dim.is_multiple_of(2) {
        return Err(Error::InvalidHeadDim { head_dim });
    }
    if n_heads == 0 {
        return Err(Error::ZeroHeads);
    }
    let row = n_heads.checked_mul(head_dim).ok_or(Error::ShapeOverflow)?;
    if !x.len().is_multiple_of(row) {
        return Err(Error::NotWholeRows {
            what: "x",
            len: x.len(),
            row,
            formula: posenc::Formula {
                names: &"tokens × heads × head_dim",
                values: [0, n_heads, head_dim],
            },
        });
    }
    let tokens = x.len() / row;
    let table = Table::new(cos, sin, tokens)?;
    if tokens == 0 {
        return Ok(());
    }
    let rotary_dim = table.pairs().checked_mul(2).ok_or(Error::ShapeOverflow)?;
    if rotary_dim == 0 || rotary_dim > head_dim {
        return Err(Error::InvalidRotaryDim {
            rotary_dim,
            head_dim,
        });
    }
    let rope = Rope::new(&RopeConfig::new(head_dim, 1e4, layout).rotary_dim(rotary_dim))?;
    rope.apply(x, n_heads, table)
}

/// Rotates `x` (`len` floats: tokens of `n_heads * head_dim`) with cos/sin tables the caller
/// already has (e.g. from another framework): bit for bit their angles. `cos` and `sin` are
/// `table_len = n_tokens * rotary_dim/2` floats each, token-major, so the rotary dim follows
/// from their length (even, non-zero, <= `head_dim`); channels past it are untouched.
/// `layout` is a `POSENC_LAYOUT_*` value.
///
/// Returns `POSENC_OK`, or an error code with `x` unchanged.
///
/// # Safety
/// `x` points to `len` writable floats; `cos` and `sin` each to `table_len` readable floats
/// (NULL allowed for zero counts); `x` must not overlap the tables.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_apply_with_table_f32(
    x: *mut f32,
    len: usize,
    n_heads: usize,
    head_dim: usize,
    layout: PosencLayout,
    cos: *const f32,
    sin: *const f32,
    table_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `with_table` requires.
    unsafe { with_table::<f32>(x, len, n_heads, head_dim, layout, cos, sin, table_len) }
}

/// `posenc_apply_with_table_f32` for binary16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_apply_with_table_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_apply_with_table_f16(
    x: *mut u16,
    len: usize,
    n_heads: usize,
    head_dim: usize,
    layout: PosencLayout,
    cos: *const f32,
    sin: *const f32,
    table_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `with_table` requires.
    unsafe { with_table::<f16>(x, len, n_heads, head_dim, layout, cos, sin, table_len) }
}

/// `posenc_apply_with_table_f32` for bfloat16 elements (`uint16_t` bits).
///
/// # Safety
/// As `posenc_apply_with_table_f32`, with `x` pointing to `len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_apply_with_table_bf16(
    x: *mut u16,
    len: usize,
    n_heads: usize,
    head_dim: usize,
    layout: PosencLayout,
    cos: *const f32,
    sin: *const f32,
    table_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `with_table` requires.
    unsafe { with_table::<bf16>(x, len, n_heads, head_dim, layout, cos, sin, table_len) }
}
