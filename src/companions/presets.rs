//! RoPE settings of published models, as [`Preset`] constants.
//!
//! Each preset holds what a runtime needs to rotate that model's queries and keys: the head
//! geometry (`head_dim`, `rotary_dim`, head counts), `rope_theta`, the channel pairing, the
//! scaling scheme with its published parameters, and the position axes. [`Preset::rope`]
//! builds the [`Rope`]; [`Preset::config`] gives the [`RopeConfig`] to adjust first (a longer
//! context, another scaling). Values are those of the checkpoints' `config.json` as
//! HuggingFace transformers reads them; the table says where each one was checked, and which
//! could not be.
//!
//! | preset | head / rotary | heads (kv) | θ | layout | scaling / axes | checked against |
//! |---|---|---|---|---|---|---|
//! | [`LLAMA_2_7B`] | 128 / 128 | 32 (32) | 1e4 | half | — | HF `convert_llama_weights_to_hf.py` (θ default 1e4, 4096 ctx); heads: published config copies |
//! | [`LLAMA_3_8B`] | 128 / 128 | 32 (8) | 5e5 | half | — | HF convert script (8192 ctx); θ and heads: config copies |
//! | [`LLAMA_3_1_8B`] | 128 / 128 | 32 (8) | 5e5 | half | llama3 8 / 1 / 4 / 8192 | HF convert script (`3.1` → factor 8); golden `rope_llama_llama3_x8` |
//! | [`LLAMA_3_2_1B`] | 64 / 64 | 32 (8) | 5e5 | half | llama3 32 / 1 / 4 / 8192 | HF convert script (`3.2` → factor 32); `Llama-3.2-1B-Instruct` config copy |
//! | [`LLAMA_3_2_3B`] | 128 / 128 | 24 (8) | 5e5 | half | llama3 32 / 1 / 4 / 8192 | HF convert script; config copies (3072 / 24 heads) |
//! | [`MISTRAL_7B_V0_1`] | 128 / 128 | 32 (8) | 1e4 | half | — | HF `MistralConfig` (documented as v0.1: 32 / 8 heads); θ 1e4: HF default, **not read from the checkpoint** |
//! | [`MISTRAL_7B_V0_3`] | 128 / 128 | 32 (8) | 1e6 | half | — | θ 1e6 seen for v0.2 in ports; **v0.3's own config not retrieved** |
//! | [`MISTRAL_NEMO_12B`] | 128 / 128 | 32 (8) | 1e6 | half | — | `Mistral-Nemo-Base-2407` config copy |
//! | [`QWEN2_5_7B`] | 128 / 128 | 28 (4) | 1e6 | half | — | projection shapes 3584 → 3584 / 512; θ 1e6: Qwen2 family configs, **7B's own not retrieved** |
//! | [`QWEN2_5_7B_YARN`] | 128 / 128 | 28 (4) | 1e6 | half | YaRN 4 / 32768 | as above; YaRN values: the model card's long-context recipe (**card not retrieved**; golden `rope_llama_yarn_x4`) |
//! | [`QWEN2_VL_7B`] | 128 / 128 | 28 (4) | 1e6 | half | M-RoPE `[16, 24, 24]` | REFERENCE.md; projection shapes; θ **not read from the checkpoint** |
//! | [`QWEN2_VL_VIT`] | 80 / 80 | 16 (16) | 1e4 | half | 2-D vision | ViT width 1280 (module dump), 16 heads; HF `VisionRotaryEmbedding(head_dim/2)` |
//! | [`QWEN3_VL_8B`] | 128 / 128 | 32 (8) | 5e6 | half | interleaved M-RoPE `[24, 20, 20]` | HF `modeling_qwen3_vl.py` (`apply_interleaved_mrope`, default sections); θ 5e6 and head_dim: Qwen3-VL config copies; **kv heads 8 not confirmed** |
//! | [`DEEPSEEK_V3`] | 64 / 64 | 128 (128) | 1e4 | interleaved | YaRN 40 / 4096, mscale 1 / 1 | HF `DeepseekV3Config` (`head_dim = qk_rope_head_dim = 64`, `rope_interleave`); YaRN: golden `rope_deepseekv3_yarn_interleave_x40` |
//! | [`PHI_3_MINI_128K_LAYOUT`], [`phi_3_mini_128k`] | 96 / 96 | 32 (32) | 1e4 | half | LongRoPE 4096 → 131072, factors from the caller | Phi-3 128k config copy (3072 / 32 heads, 4096 / 131072); **the factor lists are not built in** |
//! | [`GPT_NEOX_20B`] | 96 / 24 | 64 (64) | 1e4 | half | — | `rotary_pct` 0.25, 6144 / 64 heads (config copies) |
//! | [`GPT_J_6B`] | 256 / 64 | 16 (16) | 1e4 | interleaved | — | model card (16 heads of 256, RoPE on 64 dims) |
//! | [`GLM_4_9B`] | 128 / 64 | 32 (2) | 1e4 | interleaved | — | HF `Glm4Config` (0.5 partial rotary, 32 / 2 heads) and `modeling_glm4.py` (pairs `(2i, 2i+1)`); θ: HF default, **not read from a checkpoint** |
//! | [`GEMMA_2_9B`] | 256 / 256 | 16 (8) | 1e4 | half | — | `Gemma2Config(head_dim=256, 16 / 8 heads)` in a port; θ: HF default |
//! | [`GEMMA_3_4B_LOCAL`] | 256 / 256 | 8 (4) | 1e4 | half | — (sliding layers) | HF `Gemma3TextConfig` (`rope_local_base_freq` 1e4, 8 / 4 heads) |
//! | [`GEMMA_3_4B_GLOBAL`] | 256 / 256 | 8 (4) | 1e6 | half | linear 8 (global layers) | HF `Gemma3TextConfig` (θ 1e6); factor 8 from a port, **checkpoint config not retrieved** |
//! | [`GPT_OSS_20B`] | 64 / 64 | 64 (8) | 1.5e5 | half | YaRN 32 / 4096, no truncation | `openai/gpt-oss-20b` config report; golden `rope_gptoss_yarn_notrunc_x32` |
//!
//! "half" is [`Layout::RotateHalf`] (pairs `(i, i + d/2)`, HF's `rotate_half`), "interleaved"
//! is [`Layout::Interleaved`]. Golden cases are in `tests/data`: for those rows
//! `tests/presets.rs` checks the preset's `inv_freq` against HF's buffer (≤ 2 ulp).
//!
//! Notes on the rows that are easy to get wrong:
//! * **DeepSeek-V3** rotates only the 64-channel `q_pe`/`k_pe` parts (MLA's decoupled RoPE);
//!   `k_pe` is one head shared by all query heads. The checkpoint's pairs are interleaved
//!   (`(2i, 2i+1)`, DeepSeek's reference code and llama.cpp rotate them in place). HF's
//!   `apply_rotary_pos_emb_interleave` reads the same pairs but writes its output
//!   de-interleaved (rotate_half order): the dot products `q·k` are identical, only the channel
//!   order differs. To reproduce HF's tensors byte for byte, permute the rotated output with
//!   [`permute_to_rotate_half`](crate::permute::permute_to_rotate_half) (or permute the input and use
//!   [`Layout::RotateHalf`]; both layouts are the same math). When `q_pe` sits at channels
//!   128..192 of a 192-channel query head, use
//!   `RopeConfig { head_dim: 192, rotary_offset: 128, ..DEEPSEEK_V3.config() }` instead of
//!   splitting the buffer. The YaRN magnitude is exactly 1 (mscale = mscale_all_dim); the
//!   model puts `(0.1·ln 40 + 1)²` into its softmax scale, outside RoPE.
//! * **Phi-3-mini-128k** LongRoPE needs two lists of 48 factors from the checkpoint's
//!   `config.json` (`rope_scaling.short_factor` / `long_factor`). They differ between the
//!   checkpoint's revisions and could not be retrieved from a verified copy here, so the
//!   preset takes them as slices ([`phi_3_mini_128k`]) instead of embedding numbers that may be
//!   wrong. Which list to use (`use_long`) is the caller's decision (see [`LongRope`]).
//! * **GPT-NeoX / GPT-J / GLM-4** are partial rotary: the channels past `rotary_dim` pass
//!   through untouched, and the frequencies are spread over `rotary_dim`, not `head_dim`.
//! * **Gemma 3** interleaves sliding-window layers ([`GEMMA_3_4B_LOCAL`], θ 1e4) and global
//!   layers ([`GEMMA_3_4B_GLOBAL`], θ 1e6 with linear scaling): build one [`Rope`] of each.
//! * **Qwen2.5 YaRN** is opt-in: the released config has no `rope_scaling`; the model card
//!   asks to add factor 4 over 32768 positions for long inputs ([`QWEN2_5_7B_YARN`]).
//!
//! ```
//! use posenc::presets;
//! let rope = presets::LLAMA_3_1_8B.rope().unwrap();
//! let (q_heads, kv_heads) = (presets::LLAMA_3_1_8B.n_heads, presets::LLAMA_3_1_8B.n_kv_heads);
//! let mut q = vec![0.5f32; 2 * q_heads * 128];
//! let mut k = vec![0.5f32; 2 * kv_heads * 128];
//! rope.apply_qk(&mut q, q_heads, &mut k, kv_heads, &[0, 1]).unwrap();
//! ```

use crate::axes::Axes;
use crate::error::Error;
use crate::rope::{Rope, RopeConfig};
use crate::scaling::{LongRope, Scaling, Yarn};
use crate::types::Layout;

/// A published model's RoPE settings and attention head counts.
///
/// Fields are public so a preset can be inspected or copied and adjusted; [`Preset::config`]
/// turns it into a [`RopeConfig`], [`Preset::rope`] into a [`Rope`].
///
/// ```
/// use posenc::presets::{self, Preset};
/// let p: Preset = presets::GPT_J_6B;
/// assert_eq!((p.head_dim, p.rotary_dim, p.layout), (256, 64, posenc::Layout::Interleaved));
/// let rope = p.rope().unwrap();
/// assert_eq!(rope.inv_freq().len(), 32);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Preset<'a> {
    /// Human-readable model name.
    pub name: &'static str,
    /// The HuggingFace checkpoint the values describe.
    pub checkpoint: &'static str,
    /// Channels per head (of the rotated part, for DeepSeek's MLA).
    pub head_dim: usize,
    /// Channels per head that rotate.
    pub rotary_dim: usize,
    /// `rope_theta`.
    pub base: f32,
    /// Channel pairing.
    pub layout: Layout,
    /// Frequency scaling as published.
    pub scaling: Scaling<'a>,
    /// Position axes (M-RoPE sections, 2-D vision).
    pub axes: Axes,
    /// Query heads (`num_attention_heads`).
    pub n_heads: usize,
    /// Key/value heads (`num_key_value_heads`).
    pub n_kv_heads: usize,
}

impl<'a> Preset<'a> {
    /// The configuration this preset describes.
    ///
    /// ```
    /// use posenc::{presets, Rope, Scaling};
    /// // Qwen2.5-7B with YaRN switched off again.
    /// let cfg = presets::QWEN2_5_7B_YARN.config().scaling(Scaling::None);
    /// assert_eq!(Rope::new(&cfg).unwrap(), presets::QWEN2_5_7B.rope().unwrap());
    /// ```
    pub fn config(&self) -> RopeConfig<'a> {
        RopeConfig::new(self.head_dim, self.base, self.layout)
            .rotary_dim(self.rotary_dim)
            .scaling(self.scaling)
            .axes(self.axes)
    }

    /// Builds the [`Rope`] (frequencies, attention factor, axes).
    ///
    /// ```
    /// let rope = posenc::presets::GPT_OSS_20B.rope().unwrap();
    /// assert!((rope.attention_factor() - 1.3465736).abs() < 1e-6); // 0.1·ln 32 + 1
    /// ```
    pub fn rope(&self) -> Result<Rope, Error> {
        Rope::new(&self.config())
    }
}

/// Llama 2 7B: θ 1e4, 32 heads of 128, no GQA.
///
/// ```
/// let rope = posenc::presets::LLAMA_2_7B.rope().unwrap();
/// assert_eq!((rope.inv_freq()[0], rope.inv_freq().len()), (1.0, 64));
/// ```
pub const LLAMA_2_7B: Preset<'static> = Preset {
    name: "Llama 2 7B",
    checkpoint: "meta-llama/Llama-2-7b-hf",
    head_dim: 128,
    rotary_dim: 128,
    base: 10_000.0,
    layout: Layout::RotateHalf,
    scaling: Scaling::None,
    axes: Axes::Single,
    n_heads: 32,
    n_kv_heads: 32,
};

/// Llama 3 8B: θ 5e5, 32 query / 8 KV heads of 128, no scaling (8192 context).
///
/// ```
/// assert_eq!(posenc::presets::LLAMA_3_8B.n_kv_heads, 8);
/// ```
pub const LLAMA_3_8B: Preset<'static> = Preset {
    name: "Llama 3 8B",
    checkpoint: "meta-llama/Meta-Llama-3-8B",
    head_dim: 128,
    rotary_dim: 128,
    base: 500_000.0,
    layout: Layout::RotateHalf,
    scaling: Scaling::None,
    axes: Axes::Single,
    n_heads: 32,
    n_kv_heads: 8,
};

/// The llama3 scaling of Llama 3.1 / 3.2 (`low_freq_factor` 1, `high_freq_factor` 4, original
/// 8192 positions) with the given factor.
const fn llama3(factor: f32) -> Scaling<'static> {
    Scaling::Llama3 {
        factor,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_positions: 8192,
    }
}

/// Llama 3.1 8B: Llama 3 8B with llama3 scaling (factor 8, 1 / 4, 8192 original positions).
///
/// ```
/// let p = posenc::presets::LLAMA_3_1_8B;
/// assert!(matches!(p.scaling, posenc::Scaling::Llama3 { factor: 8.0, .. }));
/// ```
pub const LLAMA_3_1_8B: Preset<'static> = Preset {
    name: "Llama 3.1 8B",
    checkpoint: "meta-llama/Llama-3.1-8B",
    scaling: llama3(8.0),
    ..LLAMA_3_8B
};

/// Llama 3.2 1B: 32 query / 8 KV heads of 64, llama3 scaling with factor 32.
///
/// ```
/// assert_eq!(posenc::presets::LLAMA_3_2_1B.rope().unwrap().inv_freq().len(), 32);
/// ```
pub const LLAMA_3_2_1B: Preset<'static> = Preset {
    name: "Llama 3.2 1B",
    checkpoint: "meta-llama/Llama-3.2-1B",
    head_dim: 64,
    rotary_dim: 64,
    base: 500_000.0,
    layout: Layout::RotateHalf,
    scaling: llama3(32.0),
    axes: Axes::Single,
    n_heads: 32,
    n_kv_heads: 8,
};

/// Llama 3.2 3B: 24 query / 8 KV heads of 128, llama3 scaling with factor 32.
///
/// ```
/// assert_eq!(posenc::presets::LLAMA_3_2_3B.n_heads, 24);
/// ```
pub const LLAMA_3_2_3B: Preset<'static> = Preset {
    name: "Llama 3.2 3B",
    checkpoint: "meta-llama/Llama-3.2-3B",
    head_dim: 128,
    rotary_dim: 128,
    n_heads: 24,
    ..LLAMA_3_2_1B
};

/// Mistral 7B v0.1: θ 1e4, 32 query / 8 KV heads of 128.
///
/// ```
/// assert_eq!(posenc::presets::MISTRAL_7B_V0_1.base, 10_000.0);
/// ```
pub const MISTRAL_7B_V0_1: Preset<'static> = Preset {
    name: "Mistral 7B v0.1",
    checkpoint: "mistralai/Mistral-7B-v0.1",
    head_dim: 128,
    rotary_dim: 128,
    base: 10_000.0,
    layout: Layout::RotateHalf,
    scaling: Scaling::None,
    axes: Axes::Single,
    n_heads: 32,
    n_kv_heads: 8,
};

/// Mistral 7B v0.3: as v0.1 with θ 1e6.
///
/// ```
/// assert_eq!(posenc::presets::MISTRAL_7B_V0_3.base, 1e6);
/// ```
pub const MISTRAL_7B_V0_3: Preset<'static> = Preset {
    name: "Mistral 7B v0.3",
    checkpoint: "mistralai/Mistral-7B-v0.3",
    base: 1e6,
    ..MISTRAL_7B_V0_1
};

/// Mistral Nemo 12B: θ 1e6, 32 query / 8 KV heads of an explicit 128 (hidden size 5120).
///
/// ```
/// assert_eq!(posenc::presets::MISTRAL_NEMO_12B.head_dim, 128);
/// ```
pub const MISTRAL_NEMO_12B: Preset<'static> = Preset {
    name: "Mistral Nemo 12B",
    checkpoint: "mistralai/Mistral-Nemo-Base-2407",
    base: 1e6,
    ..MISTRAL_7B_V0_1
};

/// Qwen2.5 7B: θ 1e6, 28 query / 4 KV heads of 128, as released (no scaling).
///
/// ```
/// assert_eq!(posenc::presets::QWEN2_5_7B.n_kv_heads, 4);
/// ```
pub const QWEN2_5_7B: Preset<'static> = Preset {
    name: "Qwen2.5 7B",
    checkpoint: "Qwen/Qwen2.5-7B-Instruct",
    head_dim: 128,
    rotary_dim: 128,
    base: 1e6,
    layout: Layout::RotateHalf,
    scaling: Scaling::None,
    axes: Axes::Single,
    n_heads: 28,
    n_kv_heads: 4,
};

/// Qwen2.5 7B with the model card's long-context YaRN: factor 4 over 32768 original positions
/// (magnitude `0.1·ln 4 + 1`).
///
/// ```
/// let rope = posenc::presets::QWEN2_5_7B_YARN.rope().unwrap();
/// assert!((rope.attention_factor() - 1.1386294).abs() < 1e-6);
/// ```
pub const QWEN2_5_7B_YARN: Preset<'static> = Preset {
    name: "Qwen2.5 7B (YaRN x4)",
    scaling: Scaling::Yarn(Yarn {
        factor: 4.0,
        original_max_positions: 32_768,
        beta_fast: 32.0,
        beta_slow: 1.0,
        mscale: None,
        mscale_all_dim: None,
        attention_factor: None,
        truncate: true,
    }),
    ..QWEN2_5_7B
};

/// Qwen2-VL 7B (language model): M-RoPE with sections `[16, 24, 24]` (t, h, w), θ 1e6, 28
/// query / 4 KV heads of 128. Rotate with [`Rope::apply_axes`] and `[t, h, w]` per token.
///
/// ```
/// let rope = posenc::presets::QWEN2_VL_7B.rope().unwrap();
/// let mut q = vec![0.5f32; 28 * 128];
/// rope.apply_axes(&mut q, 28, &[[3, 10, 12]]).unwrap();
/// ```
pub const QWEN2_VL_7B: Preset<'static> = Preset {
    name: "Qwen2-VL 7B",
    checkpoint: "Qwen/Qwen2-VL-7B-Instruct",
    axes: Axes::MRope {
        sections: [16, 24, 24],
    },
    ..QWEN2_5_7B
};

/// Qwen2-VL's vision encoder: 2-D RoPE over heads of 80 (width 1280, 16 heads), θ 1e4, the
/// frequencies reset per half (`[row, col]` per patch).
///
/// ```
/// let rope = posenc::presets::QWEN2_VL_VIT.rope().unwrap();
/// let mut x = vec![0.5f32; 16 * 80];
/// rope.apply_axes(&mut x, 16, &[[4, 9]]).unwrap();
/// ```
pub const QWEN2_VL_VIT: Preset<'static> = Preset {
    name: "Qwen2-VL ViT",
    checkpoint: "Qwen/Qwen2-VL-7B-Instruct",
    head_dim: 80,
    rotary_dim: 80,
    base: 10_000.0,
    layout: Layout::RotateHalf,
    scaling: Scaling::None,
    axes: Axes::Vision2d,
    n_heads: 16,
    n_kv_heads: 16,
};

/// Qwen3-VL 8B (language model): interleaved M-RoPE with sections `[24, 20, 20]`, θ 5e6, 32
/// query heads of 128 (8 KV heads: not confirmed from the checkpoint, see the module table).
///
/// ```
/// let p = posenc::presets::QWEN3_VL_8B;
/// assert_eq!(p.axes, posenc::Axes::MRopeInterleaved { sections: [24, 20, 20] });
/// ```
pub const QWEN3_VL_8B: Preset<'static> = Preset {
    name: "Qwen3-VL 8B",
    checkpoint: "Qwen/Qwen3-VL-8B-Instruct",
    head_dim: 128,
    rotary_dim: 128,
    base: 5e6,
    layout: Layout::RotateHalf,
    scaling: Scaling::None,
    axes: Axes::MRopeInterleaved {
        sections: [24, 20, 20],
    },
    n_heads: 32,
    n_kv_heads: 8,
};

/// DeepSeek-V3: the 64-channel decoupled RoPE part (`qk_rope_head_dim`) of 128 heads,
/// interleaved pairs, θ 1e4, YaRN factor 40 over 4096 positions with `mscale` =
/// `mscale_all_dim` = 1 (magnitude exactly 1). See the module notes for HF's de-interleaved
/// output order and for rotating `q_pe` inside a 192-channel head.
///
/// ```
/// assert_eq!(posenc::presets::DEEPSEEK_V3.rope().unwrap().attention_factor(), 1.0);
/// ```
pub const DEEPSEEK_V3: Preset<'static> = Preset {
    name: "DeepSeek-V3",
    checkpoint: "deepseek-ai/DeepSeek-V3",
    head_dim: 64,
    rotary_dim: 64,
    base: 10_000.0,
    layout: Layout::Interleaved,
    scaling: Scaling::Yarn(Yarn {
        factor: 40.0,
        original_max_positions: 4096,
        beta_fast: 32.0,
        beta_slow: 1.0,
        mscale: Some(1.0),
        mscale_all_dim: Some(1.0),
        attention_factor: None,
        truncate: true,
    }),
    axes: Axes::Single,
    n_heads: 128,
    n_kv_heads: 128,
};

/// Phi-3-mini-128k without its factor lists: heads of 96, θ 1e4, 32 heads, and an *unscaled*
/// placeholder. Use [`phi_3_mini_128k`] with the checkpoint's `short_factor` / `long_factor`.
///
/// ```
/// assert_eq!(posenc::presets::PHI_3_MINI_128K_LAYOUT.head_dim, 96);
/// ```
pub const PHI_3_MINI_128K_LAYOUT: Preset<'static> = Preset {
    name: "Phi-3-mini-128k",
    checkpoint: "microsoft/Phi-3-mini-128k-instruct",
    head_dim: 96,
    rotary_dim: 96,
    base: 10_000.0,
    layout: Layout::RotateHalf,
    scaling: Scaling::None,
    axes: Axes::Single,
    n_heads: 32,
    n_kv_heads: 32,
};

/// Phi-3-mini-128k with LongRoPE (4096 original, 131072 maximum positions; magnitude
/// `sqrt(1 + ln 32 / ln 4096)`), the 48-value `short_factor` and `long_factor` lists taken
/// from the checkpoint's `config.json` (`rope_scaling`), and the caller's choice of list.
///
/// ```
/// # let (short, long) = ([1.0f32; 48], [4.0f32; 48]);
/// // short/long: the 48 values of config.json's rope_scaling.short_factor / long_factor.
/// let p = posenc::presets::phi_3_mini_128k(&short, &long, true);
/// let rope = p.rope().unwrap();
/// assert!((rope.attention_factor() - 1.1902381).abs() < 1e-6);
/// ```
pub fn phi_3_mini_128k<'a>(
    short_factor: &'a [f32],
    long_factor: &'a [f32],
    use_long: bool,
) -> Preset<'a> {
    Preset {
        scaling: Scaling::LongRope(LongRope {
            short_factor,
            long_factor,
            original_max_positions: 4096,
            max_positions: 131_072,
            use_long,
            attention_factor: None,
        }),
        ..PHI_3_MINI_128K_LAYOUT
    }
}

/// GPT-NeoX 20B: `rotary_pct` 0.25 of heads of 96 (24 channels rotate), θ 1e4, 64 heads.
///
/// ```
/// assert_eq!(posenc::presets::GPT_NEOX_20B.rotary_dim, 24);
/// ```
pub const GPT_NEOX_20B: Preset<'static> = Preset {
    name: "GPT-NeoX 20B",
    checkpoint: "EleutherAI/gpt-neox-20b",
    head_dim: 96,
    rotary_dim: 24,
    base: 10_000.0,
    layout: Layout::RotateHalf,
    scaling: Scaling::None,
    axes: Axes::Single,
    n_heads: 64,
    n_kv_heads: 64,
};

/// GPT-J 6B: `rotary_dim` 64 of heads of 256, interleaved pairs (`rotate_every_two`), θ 1e4,
/// 16 heads.
///
/// ```
/// assert_eq!(posenc::presets::GPT_J_6B.layout, posenc::Layout::Interleaved);
/// ```
pub const GPT_J_6B: Preset<'static> = Preset {
    name: "GPT-J 6B",
    checkpoint: "EleutherAI/gpt-j-6b",
    head_dim: 256,
    rotary_dim: 64,
    base: 10_000.0,
    layout: Layout::Interleaved,
    scaling: Scaling::None,
    axes: Axes::Single,
    n_heads: 16,
    n_kv_heads: 16,
};

/// GLM-4 9B (HF `glm4`): `partial_rotary_factor` 0.5 of heads of 128, interleaved pairs, θ 1e4,
/// 32 query / 2 KV heads.
///
/// ```
/// let p = posenc::presets::GLM_4_9B;
/// assert_eq!((p.rotary_dim, p.layout), (64, posenc::Layout::Interleaved));
/// ```
pub const GLM_4_9B: Preset<'static> = Preset {
    name: "GLM-4 9B",
    checkpoint: "THUDM/GLM-4-9B-0414",
    head_dim: 128,
    rotary_dim: 64,
    base: 10_000.0,
    layout: Layout::Interleaved,
    scaling: Scaling::None,
    axes: Axes::Single,
    n_heads: 32,
    n_kv_heads: 2,
};

/// Gemma 2 9B: heads of 256, θ 1e4 on every layer, 16 query / 8 KV heads.
///
/// ```
/// assert_eq!(posenc::presets::GEMMA_2_9B.head_dim, 256);
/// ```
pub const GEMMA_2_9B: Preset<'static> = Preset {
    name: "Gemma 2 9B",
    checkpoint: "google/gemma-2-9b",
    head_dim: 256,
    rotary_dim: 256,
    base: 10_000.0,
    layout: Layout::RotateHalf,
    scaling: Scaling::None,
    axes: Axes::Single,
    n_heads: 16,
    n_kv_heads: 8,
};

/// Gemma 3 4B, sliding-window (local) layers: θ 1e4 (`rope_local_base_freq`), no scaling,
/// 8 query / 4 KV heads of 256.
///
/// ```
/// assert_eq!(posenc::presets::GEMMA_3_4B_LOCAL.base, 10_000.0);
/// ```
pub const GEMMA_3_4B_LOCAL: Preset<'static> = Preset {
    name: "Gemma 3 4B (local layers)",
    checkpoint: "google/gemma-3-4b-it",
    head_dim: 256,
    rotary_dim: 256,
    base: 10_000.0,
    layout: Layout::RotateHalf,
    scaling: Scaling::None,
    axes: Axes::Single,
    n_heads: 8,
    n_kv_heads: 4,
};

/// Gemma 3 4B, global layers: θ 1e6 with linear scaling by 8.
///
/// ```
/// let rope = posenc::presets::GEMMA_3_4B_GLOBAL.rope().unwrap();
/// assert_eq!(rope.inv_freq()[0], 0.125);
/// ```
pub const GEMMA_3_4B_GLOBAL: Preset<'static> = Preset {
    name: "Gemma 3 4B (global layers)",
    base: 1e6,
    scaling: Scaling::Linear { factor: 8.0 },
    ..GEMMA_3_4B_LOCAL
};

/// gpt-oss 20B: heads of 64, θ 150000, YaRN factor 32 over 4096 positions without truncation
/// of the correction range (magnitude `0.1·ln 32 + 1`), 64 query / 8 KV heads.
///
/// ```
/// let p = posenc::presets::GPT_OSS_20B;
/// assert!(matches!(p.scaling, posenc::Scaling::Yarn(y) if !y.truncate));
/// ```
pub const GPT_OSS_20B: Preset<'static> = Preset {
    name: "gpt-oss 20B",
    checkpoint: "openai/gpt-oss-20b",
    head_dim: 64,
    rotary_dim: 64,
    base: 150_000.0,
    layout: Layout::RotateHalf,
    scaling: Scaling::Yarn(Yarn {
        factor: 32.0,
        original_max_positions: 4096,
        beta_fast: 32.0,
        beta_slow: 1.0,
        mscale: None,
        mscale_all_dim: None,
        attention_factor: None,
        truncate: false,
    }),
    axes: Axes::Single,
    n_heads: 64,
    n_kv_heads: 8,
};

/// Every constant preset of this module (Phi-3-mini-128k as its factor-free
/// [`PHI_3_MINI_128K_LAYOUT`]).
///
/// ```
/// for p in posenc::presets::ALL {
///     p.rope().unwrap_or_else(|e| panic!("{}: {e}", p.name));
/// }
/// ```
pub const ALL: &[Preset<'static>] = &[
    LLAMA_2_7B,
    LLAMA_3_8B,
    LLAMA_3_1_8B,
    LLAMA_3_2_1B,
    LLAMA_3_2_3B,
    MISTRAL_7B_V0_1,
    MISTRAL_7B_V0_3,
    MISTRAL_NEMO_12B,
    QWEN2_5_7B,
    QWEN2_5_7B_YARN,
    QWEN2_VL_7B,
    QWEN2_VL_VIT,
    QWEN3_VL_8B,
    DEEPSEEK_V3,
    PHI_3_MINI_128K_LAYOUT,
    GPT_NEOX_20B,
    GPT_J_6B,
    GLM_4_9B,
    GEMMA_2_9B,
    GEMMA_3_4B_LOCAL,
    GEMMA_3_4B_GLOBAL,
    GPT_OSS_20B,
];
