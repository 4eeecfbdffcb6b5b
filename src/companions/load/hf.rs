//! HuggingFace `config.json` → [`Rope`]s (feature `serde`).

use super::alloc::borrow::ToOwned;
use super::alloc::format;
use super::alloc::string::{String, ToString};
use super::alloc::vec::Vec;
use crate::axes::Axes;
use crate::error::Error;
use crate::rope::{Rope, RopeConfig};
use crate::scaling::{LongRope, Scaling, Yarn};
use crate::types::Layout;
use core::fmt;
use serde_json::{Map, Value};

/// Why a `config.json` could not be turned into [`Rope`]s.
///
/// ```
/// use posenc::load::{ropes_from_hf_config, ConfigErrorKind};
/// let err = ropes_from_hf_config(r#"{"head_dim": 128, "rope_scaling": {"rope_type": "linear", "factr": 2}}"#)
///     .unwrap_err();
/// assert_eq!((err.key.as_str(), err.kind), ("rope_scaling.factr", ConfigErrorKind::UnknownKey));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConfigErrorKind {
    /// The text is not JSON, or its top level is not an object.
    Json,
    /// A required key is absent (or `null`).
    Missing,
    /// A value has the wrong JSON type (a string where a number belongs, …).
    WrongType,
    /// A key in the rope settings that the scheme does not have.
    UnknownKey,
    /// A value that names nothing known (a `rope_type`).
    UnknownValue,
    /// Two keys that say different things (`rope_type` vs `type`, `rope_theta` at the top
    /// level and in `rope_parameters`, …).
    Contradiction,
    /// The model does not rotate: its `model_type` is a family whose attention takes no
    /// rotary embedding (learned or sinusoidal positions, ALiBi, relative buckets, none), its
    /// `position_embedding_type` is not `"rope"`, or Falcon's `alibi` is set. Not an error in
    /// the file, but no rope to build.
    NoRope,
    /// A number outside its domain (negative, zero where a count belongs, not an integer,
    /// larger than the type holds).
    OutOfRange,
    /// [`Rope::new`] refused the settings read from this key.
    Rope(Error),
}

/// A `config.json` error: the key (a dotted path such as `rope_scaling.factor`, or
/// `rope_parameters.full_attention.rope_theta`), what kind of problem, and a sentence.
///
/// ```
/// use posenc::load::{ropes_from_hf_config, ConfigErrorKind};
/// let err = ropes_from_hf_config("{").unwrap_err();
/// assert_eq!(err.kind, ConfigErrorKind::Json);
/// println!("{err}");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    /// The offending key, as a dotted path (empty for JSON syntax errors).
    pub key: String,
    /// The kind of problem.
    pub kind: ConfigErrorKind,
    /// A human-readable explanation.
    pub detail: String,
}

impl ConfigError {
    fn new(key: impl Into<String>, kind: ConfigErrorKind, detail: impl Into<String>) -> Self {
        ConfigError {
            key: key.into(),
            kind,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "config.json: {}", self.detail)
        } else {
            write!(f, "config.json key `{}`: {}", self.key, self.detail)
        }
    }
}

impl core::error::Error for ConfigError {}

/// Choices HF makes at run time, which a runtime must make explicitly (see [`LongRope`] and
/// [`Scaling::DynamicNtk`]). The default reproduces HF's `inv_freq` buffer as the model is
/// loaded: LongRoPE's short factors and dynamic NTK at `max_position_embeddings` (unscaled).
///
/// ```
/// let opts = posenc::load::HfOptions { use_long_factors: true, ..Default::default() };
/// assert_eq!(opts.seq_len, None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HfOptions {
    /// LongRoPE: use `long_factor` (HF switches to it once `max(position) + 1` exceeds
    /// `original_max_position_embeddings`).
    pub use_long_factors: bool,
    /// Dynamic NTK: the sequence length to compute the base for (default:
    /// `max_position_embeddings`, i.e. unscaled).
    pub seq_len: Option<u32>,
}

/// The [`Rope`]s of a model, keyed by attention layer type.
///
/// Most models have one rope, keyed `"default"`. Models whose layer types rotate differently
/// have one per type, keyed as in the config: Gemma 3's and 3n's `"sliding_attention"` (local,
/// θ = `rope_local_base_freq`, unscaled) and `"full_attention"` (global, θ = `rope_theta`,
/// `rope_scaling`), ModernBERT's (θ = `local_rope_theta`, `global_rope_theta`), or whatever
/// a transformers-5 `rope_parameters` dict names (Gemma 4: a wider head on full layers).
///
/// ```
/// use posenc::load::ropes_from_hf_config;
/// let ropes = ropes_from_hf_config(r#"{"model_type": "llama", "hidden_size": 4096,
///     "num_attention_heads": 32, "rope_theta": 500000.0}"#).unwrap();
/// assert_eq!(ropes.len(), 1);
/// assert_eq!(ropes.single().unwrap().head_dim(), 128);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HfRopes {
    ropes: Vec<(String, Rope)>,
    layer_types: Vec<String>,
    /// Per layer, whether its attention applies the rope (`None`: every layer does).
    rotary: Option<Vec<bool>>,
}

impl HfRopes {
    /// The rope of a layer type (`"default"` when the config has one for all layers).
    ///
    /// ```
    /// let ropes = posenc::load::ropes_from_hf_config(r#"{"head_dim": 64}"#).unwrap();
    /// assert!(ropes.get("default").is_some());
    /// assert!(ropes.get("sliding_attention").is_none());
    /// ```
    pub fn get(&self, layer_type: &str) -> Option<&Rope> {
        self.ropes
            .iter()
            .find(|(k, _)| k == layer_type)
            .map(|(_, r)| r)
    }

    /// The rope, if the model has exactly one.
    ///
    /// ```
    /// let ropes = posenc::load::ropes_from_hf_config(r#"{"head_dim": 64}"#).unwrap();
    /// assert_eq!(ropes.single().unwrap().rotary_dim(), 64);
    /// ```
    pub fn single(&self) -> Option<&Rope> {
        match self.ropes.as_slice() {
            [(_, r)] => Some(r),
            _ => None,
        }
    }

    /// The rope of layer `layer`: through the config's `layer_types` list (or, for Gemma 3,
    /// its `sliding_window_pattern`), or the single rope. `None` for a layer whose attention
    /// runs without position encoding ([`rotates`](Self::rotates) is false: Llama 4's and
    /// SmolLM3's NoPE layers, the global layers of Cohere 2, EXAONE 4 and AFMoE); when the
    /// model has several ropes and `layer` is past the list; or when its type is one the
    /// config gives no rope settings (a layer without attention, or a name misspelt in one of
    /// the two places: compare [`layer_types`](Self::layer_types) with [`iter`](Self::iter)).
    ///
    /// ```
    /// let ropes = posenc::load::ropes_from_hf_config(r#"{"head_dim": 64}"#).unwrap();
    /// assert_eq!(ropes.for_layer(7), ropes.single());
    /// ```
    pub fn for_layer(&self, layer: usize) -> Option<&Rope> {
        if !self.rotates(layer) {
            return None;
        }
        if let Some(r) = self.single() {
            return Some(r);
        }
        self.get(self.layer_types.get(layer)?)
    }

    /// Whether layer `layer`'s attention applies the rope, as the model's code decides:
    /// false for a NoPE layer, whose queries and keys a runtime must leave unrotated.
    ///
    /// | `model_type` | layers without rope | from |
    /// |---|---|---|
    /// | `llama4`, `llama4_text`, `smollm3` | `no_rope_layers[i] == 0` | `no_rope_layers`, else every `no_rope_layer_interval`-th (4) of `num_hidden_layers` (48; SmolLM3: 36) |
    /// | `cohere2` | every layer not of type `"sliding_attention"` (all, with `sliding_window: null`) | `layer_types`, else every `sliding_window_pattern`-th (4) of `num_hidden_layers` (40) |
    /// | `afmoe` | every layer not of type `"sliding_attention"` | `layer_types`, else every `global_attn_every_n_layers`-th (4) of `num_hidden_layers` (32) |
    /// | `exaone4` | every layer not of type `"sliding_attention"`, unless `sliding_window` is `null` (then none) | `layer_types`, else every `sliding_window_pattern`-th (4) of `num_hidden_layers` (32) |
    ///
    /// For every other model, every layer rotates (true for any `layer`). For the models in
    /// the table, a `layer` past the model's layers is false.
    ///
    /// ```
    /// // Llama 4 Scout: every fourth layer has no positional encoding (iRoPE).
    /// let ropes = posenc::load::ropes_from_hf_config(r#"{"model_type": "llama4",
    ///     "text_config": {"model_type": "llama4_text", "head_dim": 128,
    ///                     "num_hidden_layers": 48, "rope_theta": 500000.0}}"#).unwrap();
    /// assert!(ropes.rotates(0) && ropes.rotates(2) && !ropes.rotates(3));
    /// assert_eq!(ropes.for_layer(3), None);
    /// assert_eq!(ropes.single().unwrap().layout(), posenc::Layout::Interleaved);
    /// ```
    pub fn rotates(&self, layer: usize) -> bool {
        match &self.rotary {
            None => true,
            Some(r) => r.get(layer) == Some(&true),
        }
    }

    /// `(layer type, rope)` pairs.
    ///
    /// ```
    /// let ropes = posenc::load::ropes_from_hf_config(r#"{"head_dim": 64}"#).unwrap();
    /// assert_eq!(ropes.iter().next().unwrap().0, "default");
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Rope)> {
        self.ropes.iter().map(|(k, r)| (k.as_str(), r))
    }

    /// The number of (layer type, rope) entries: one per layer type with settings of its own
    /// (DeepSeek-V4 lists its compress rope under both compressed types), one in all when
    /// every layer rotates alike.
    ///
    /// ```
    /// assert_eq!(posenc::load::ropes_from_hf_config(r#"{"head_dim": 64}"#).unwrap().len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.ropes.len()
    }

    /// Always false for a successfully read config (it has at least one rope).
    ///
    /// ```
    /// assert!(!posenc::load::ropes_from_hf_config(r#"{"head_dim": 64}"#).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.ropes.is_empty()
    }

    /// The config's layer types, one per layer (empty if it has none).
    ///
    /// ```
    /// let ropes = posenc::load::ropes_from_hf_config(r#"{"head_dim": 64,
    ///     "layer_types": ["sliding_attention", "full_attention"]}"#).unwrap();
    /// assert_eq!(ropes.layer_types().len(), 2);
    /// ```
    pub fn layer_types(&self) -> &[String] {
        &self.layer_types
    }
}

/// Builds the [`Rope`]s of a model from its HuggingFace `config.json` text, with
/// [`HfOptions::default`]. See [`ropes_from_hf_config_with`].
///
/// ```
/// use posenc::load::ropes_from_hf_config;
/// // Llama 3.1 8B's rope settings.
/// let json = r#"{"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
///   "max_position_embeddings": 131072, "rope_theta": 500000.0,
///   "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
///                    "original_max_position_embeddings": 8192, "rope_type": "llama3"}}"#;
/// let rope = *ropes_from_hf_config(json).unwrap().single().unwrap();
/// assert_eq!(rope, posenc::presets::LLAMA_3_1_8B.rope().unwrap());
/// ```
pub fn ropes_from_hf_config(json: &str) -> Result<HfRopes, ConfigError> {
    ropes_from_hf_config_with(json, &HfOptions::default())
}

/// Builds the [`Rope`]s of a model from its HuggingFace `config.json` text.
///
/// Reads both forms:
/// * **transformers 4**: `rope_theta`, `rope_scaling` (`rope_type`, or the legacy `type`;
///   `"mrope"` counts as `"default"`), `partial_rotary_factor`, `head_dim` (else
///   `hidden_size / num_attention_heads`), `max_position_embeddings`,
///   `original_max_position_embeddings`, `mrope_section` (and `mrope_interleaved`, which
///   Qwen3-Omni's dicts also spell `interleaved`; Qwen3-VL and Qwen3-Omni interleave without
///   it); older spellings `rotary_pct`, `rotary_emb_base` (GPT-NeoX), `theta` (LFM2, read
///   before `rope_theta` as its config class does), `rope_pct` (StableLM-epoch),
///   `rope_embedding_base` (Phi-3-small), `rotary_emb_fraction` and
///   `rotary_emb_interleaved` (flash-attn's, in NomicBERT's remote code), `rotary_dim`, `n_embd`,
///   `n_head`, `n_positions` (GPT-J); Gemma 3's and Gemma 3n's `rope_local_base_freq` (their
///   sliding layers' θ, unscaled), ModernBERT's `global_rope_theta` / `local_rope_theta` (by
///   `global_attn_every_n_layers`, layer 0 global), MiMo-V2's Hub keys (`swa_rope_theta`,
///   `hybrid_layer_pattern`, `swa_head_dim`, as HF's conversion script maps them),
///   DeepSeek-V4's (`compress_ratios`, `compress_rope_theta`, `qk_rope_head_dim`: see
///   below),
///   OLMo 3's `rope_scaling` (its full layers' only: the sliding ones rotate unscaled), and the
///   families whose own rope code reads other keys: ChatGLM's remote code (`kv_channels`
///   heads, the first half rotated at θ = 10000·`rope_ratio`), DBRX's
///   (`attn_config.rope_theta`, `d_model / n_heads`), Hunyuan's `"dynamic"` with `alpha` (the
///   base raised to θ·alpha^(d/(d−2)) at load time, as llama.cpp and vLLM keep it; HF's own
///   recomputation past `max_position_embeddings` is not followed), and CodeGen's and GPT-J's
///   (θ fixed at 10000, `rotary_dim` 64 by default);
/// * **transformers 5**: `rope_parameters` holding the same keys (with `rope_theta` and
///   `partial_rotary_factor` inside), either one dict for all layers or one per layer type
///   (`{"sliding_attention": {…}, "full_attention": {…}}`).
///
/// A multimodal config's language-model level is read first (`text_config`; InternVL's
/// `llm_config`, DeepSeek-VL2's and Janus's `language_config`; Qwen-Omni's
/// `thinker_config.text_config`), then its top level. Where a key is absent, the model's
/// config class default applies, as HF's config classes write them: θ = 10000 unless the
/// class says otherwise (Gemma 3 and 3n, Mixtral, MiniMax, PhiMoE, LFM2, Qwen2.5-Omni's text
/// model: 1e6; ERNIE 4.5, Cohere, OLMo 3, FlexOlmo, BitNet: 5e5; SmolLM3 2e6, MiniMax-M2 5e6,
/// LongCat-Flash 1e7, Apertus 1.2e7, gpt-oss 150000, Helium 100000, Persimmon 25000; Gemma 3's
/// local θ 1e4; ModernBERT 160000 and 10000); the partial rotary factor 1 unless the class
/// says otherwise (GPT-NeoX, StableLM, Qwen3-Next: 0.25; GLM, GLM-4, GLM-4 MoE, Persimmon,
/// Phi, Nemotron: 0.5; Moonshine 0.9; Bamba 0.5 whatever the file says); `head_dim` the
/// class's own where it does not derive it from `hidden_size / num_attention_heads` (Gemma,
/// VaultGemma, Qwen3-Next: 256; MiMo-V2 192; DeepSeek-V4 512; ERNIE 4.5, Seed-OSS, Qwen3,
/// Helium, GLM, GLM-4, MiniMax-M2: 128; gpt-oss 64; JetMoE `kv_channels`); and the scaling of
/// a class that has one by default when the file gives neither `rope_scaling` nor
/// `rope_parameters` (gpt-oss: YaRN ×32 over 4096, no truncation; Apertus: Llama 3's ×8 over
/// 8192; Gemma 4: its per-type `rope_parameters`).
///
/// Heads of different widths: Gemma 4's full-attention layers have heads `global_head_dim`
/// wide (default 512), and their proportional rope spans that width, so
/// `for_layer(l).head_dim()` is 512 there and `head_dim` (256) on the sliding layers. Gemma 4
/// keeps no older form: a `rope_theta` or `rope_scaling` without `rope_parameters` is a
/// [`ConfigErrorKind::Contradiction`] (HF would ignore it), a single `rope_parameters` dict a
/// [`ConfigErrorKind::Missing`] (it needs one per layer type), and its last layer is full
/// whatever `layer_types` says, as its config class forces it.
///
/// DeepSeek-V4 keys its ropes by rope (`"main"`, `"compress"`), not by layer type; the result
/// has them by layer type: `"sliding_attention"` (compress ratio 0: θ `rope_theta`,
/// unscaled) and `"compressed_sparse_attention"` / `"heavily_compressed_attention"` (4, 128:
/// θ `compress_rope_theta` with the YaRN scaling, attention factor 1). Each rotates the last
/// `qk_rope_head_dim` (64) channels of the 512-wide head (`rotary_offset` 448) in adjacent
/// pairs. Its compressor's keys (rotated at their block's first position) and the output's
/// inverse rotation (`apply_inverse` at the query's position) use the same ropes.
///
/// Pairing follows the modeling code: [`Layout::Interleaved`] for GPT-J (`gptj`), CodeGen
/// (`codegen`), GLM (`glm`, `glm4`, `chatglm`), Cohere (`cohere`, `cohere2`), ERNIE 4.5
/// (`ernie4_5`, `ernie4_5_moe`), Helium, Moonshine, GLM-4.1V's M-RoPE (`glm4v`), Llama 4
/// (`llama4`, `llama4_text`) and the MLA models DeepSeek-V2/V3, Kimi K2, GLM-4 MoE Lite and
/// LongCat-Flash (`rope_interleave`, default true; their rope covers `qk_rope_head_dim`
/// channels, as MiniCPM3's, which pairs halves);
/// [`Layout::RotateHalf`] (HF's `rotate_half`) for every other model. DeepSeek's rope covers
/// `qk_rope_head_dim` channels, so its `Rope` has `head_dim = qk_rope_head_dim` (as
/// [`presets::DEEPSEEK_V3`](crate::presets::DEEPSEEK_V3)).
///
/// Strictness: every key inside `rope_scaling` / `rope_parameters` must belong to the
/// declared scheme ([`ConfigErrorKind::UnknownKey`] names it), except Ministral 3's and
/// Mistral Large 3's `llama_4_scaling_beta` (with its `original_max_position_embeddings`), a
/// scale of the queries by position (`1 + β·ln(1 + ⌊p / L⌋)`) that leaves the rope alone and
/// that the runtime applies; keys given twice with
/// different values (`type` vs `rope_type`, `rope_theta` outside and inside
/// `rope_parameters`, `rope_scaling` vs `rope_parameters`) are a
/// [`ConfigErrorKind::Contradiction`]. Keys outside the rope settings are not checked (a
/// config has many). No input panics: malformed JSON, wrong types, huge or fractional
/// numbers are typed errors.
///
/// Layers without position encoding (Llama 4's and SmolLM3's NoPE layers, the global layers
/// of Cohere 2, EXAONE 4 and AFMoE) are read from `no_rope_layers` / `layer_types` and their
/// defaults: see [`HfRopes::rotates`]. A model without rotary positions is a
/// [`ConfigErrorKind::NoRope`]: on `model_type` for families whose attention never rotates
/// (GPT-2, BLOOM, MPT, BERT, T5, Whisper, Mamba, Jamba, …) unless `position_embedding_type`
/// says `"rope"` or `"rotary"` (ESM's word; XLM-RoBERTa with rotary embeddings); on
/// `position_embedding_type` for any other value (or none, for GraniteMoeHybrid, whose default
/// is none); on Falcon's `alibi` when it is set; on `num_hidden_layers` for Baichuan's
/// 40-layer (13B) models, which use ALiBi; on Zamba2's `use_mem_rope` unless it is true
/// (its heads are then `attention_head_dim`, twice `hidden_size / num_attention_heads`). ERNIE 4.5 VL (`ernie4_5_vl*`) is an
/// [`ConfigErrorKind::UnknownValue`] on `model_type`: its 3-D rope follows neither M-RoPE
/// order.
///
/// ```
/// use posenc::load::{ropes_from_hf_config_with, HfOptions};
/// // Gemma 3 in the transformers-5 form: one rope per layer type.
/// let json = r#"{"model_type": "gemma3_text", "head_dim": 256, "rope_parameters": {
///     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
///     "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}}}"#;
/// let ropes = ropes_from_hf_config_with(json, &HfOptions::default()).unwrap();
/// assert_eq!(ropes.get("full_attention").unwrap().inv_freq()[0], 0.125);
/// assert_eq!(ropes.get("sliding_attention").unwrap().inv_freq()[0], 1.0);
/// ```
pub fn ropes_from_hf_config_with(json: &str, options: &HfOptions) -> Result<HfRopes, ConfigError> {
    let root: Value = serde_json::from_str(json)
        .map_err(|e| ConfigError::new("", ConfigErrorKind::Json, e.to_string()))?;
    let root = root.as_object().ok_or_else(|| {
        ConfigError::new("", ConfigErrorKind::Json, "the top level is not an object")
    })?;
    // The language model's own config inside a multimodal one: HF's `text_config`, or the
    // remote-code spellings of InternVL (`llm_config`) and DeepSeek-VL2 / Janus
    // (`language_config`); the first present. Qwen-Omni's configs nest it one level deeper,
    // in the thinker (the language model; the talker turns its states into speech):
    // `thinker_config.text_config`.
    let mut text = None;
    for key in TEXT_KEYS {
        match root.get(key) {
            None | Some(Value::Null) => continue,
            Some(Value::Object(t)) => text = Some((t, key)),
            Some(_) => return Err(wrong(key, "an object")),
        }
        break;
    }
    if text.is_none() {
        match root.get("thinker_config") {
            None | Some(Value::Null) => {}
            Some(Value::Object(thinker)) => match thinker.get("text_config") {
                Some(Value::Object(t)) => text = Some((t, THINKER_TEXT)),
                Some(Value::Null) | None => {
                    return Err(ConfigError::new(
                        THINKER_TEXT,
                        ConfigErrorKind::Missing,
                        "the thinker's language model",
                    ));
                }
                Some(_) => return Err(wrong(THINKER_TEXT, "an object")),
            },
            Some(_) => return Err(wrong("thinker_config", "an object")),
        }
    }
    let cfg = Cfg {
        text: text.map(|(t, _)| t),
        text_key: text.map_or("text_config", |(_, k)| k),
        root,
    };
    cfg.build(options)
}

/// Where a multimodal config keeps its language model's settings, in order of preference.
const TEXT_KEYS: [&str; 3] = ["text_config", "llm_config", "language_config"];

/// Where Qwen-Omni's configs keep their language model's settings.
const THINKER_TEXT: &str = "thinker_config.text_config";

/// The config: its language model's level (`text_config`, …) first, then the top level.
struct Cfg<'a> {
    text: Option<&'a Map<String, Value>>,
    /// The key `text` sits under (error paths name it).
    text_key: &'static str,
    root: &'a Map<String, Value>,
}

fn wrong(key: &str, what: &str) -> ConfigError {
    ConfigError::new(key, ConfigErrorKind::WrongType, format!("must be {what}"))
}

fn num_f64(key: &str, v: &Value) -> Result<f64, ConfigError> {
    v.as_f64().ok_or_else(|| wrong(key, "a number"))
}

/// A JSON number as a finite f32.
fn num_f32(key: &str, v: &Value) -> Result<f32, ConfigError> {
    let x = num_f64(key, v)?;
    let y = x as f32;
    if !x.is_finite() || !y.is_finite() {
        return Err(ConfigError::new(
            key,
            ConfigErrorKind::OutOfRange,
            format!("{x} is not a finite f32"),
        ));
    }
    Ok(y)
}

/// A JSON number as a count (a non-negative integer, also written as `8192.0`).
fn num_u64(key: &str, v: &Value) -> Result<u64, ConfigError> {
    if let Some(n) = v.as_u64() {
        return Ok(n);
    }
    let x = num_f64(key, v)?;
    if x >= 0.0 && x.fract() == 0.0 && x < 1.8e19 {
        Ok(x as u64)
    } else {
        Err(ConfigError::new(
            key,
            ConfigErrorKind::OutOfRange,
            format!("{x} is not a non-negative integer"),
        ))
    }
}

fn num_u32(key: &str, v: &Value) -> Result<u32, ConfigError> {
    let n = num_u64(key, v)?;
    u32::try_from(n).map_err(|_| {
        ConfigError::new(
            key,
            ConfigErrorKind::OutOfRange,
            format!("{n} does not fit in u32"),
        )
    })
}

fn num_usize(key: &str, v: &Value) -> Result<usize, ConfigError> {
    let n = num_u64(key, v)?;
    usize::try_from(n).map_err(|_| {
        ConfigError::new(
            key,
            ConfigErrorKind::OutOfRange,
            format!("{n} is too large"),
        )
    })
}

fn rope_error(key: &str) -> impl Fn(Error) -> ConfigError + '_ {
    move |e| ConfigError::new(key, ConfigErrorKind::Rope(e), e.to_string())
}

/// JSON equality with numbers compared as values (`8` and `8.0` are the same setting).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// One rope's settings dict (`rope_scaling`, `rope_parameters` or one of its per-layer dicts)
/// with the dotted path used in errors.
struct Dict<'a> {
    path: String,
    map: Option<&'a Map<String, Value>>,
}

impl<'a> Dict<'a> {
    fn key(&self, k: &str) -> String {
        format!("{}.{k}", self.path)
    }

    fn get(&self, k: &str) -> Option<&'a Value> {
        self.map?.get(k).filter(|v| !v.is_null())
    }
}

/// The config class's `rope_theta` where the file gives none (HF transformers'
/// `configuration_*.py`: an `__init__` default or a `default_theta`); 10000 for the rest.
fn class_default_theta(model_type: &str) -> f32 {
    match model_type {
        "gemma3" | "gemma3_text" | "gemma3n" | "gemma3n_text" | "mixtral" | "minimax"
        | "phimoe" | "lfm2" | "lfm2_moe" | "qwen2_5_omni_text" => 1e6,
        "ernie4_5" | "ernie4_5_moe" | "cohere" | "olmo3" | "flex_olmo" | "bitnet" => 5e5,
        "smollm3" => 2e6,
        "minimax_m2" => 5e6,
        "longcat_flash" => 1e7,
        "apertus" => 1.2e7,
        "gpt_oss" => 150_000.0,
        "helium" => 100_000.0,
        "persimmon" => 25_000.0,
        _ => 10_000.0,
    }
}

/// The config class's `partial_rotary_factor` where the file gives none; 1 for the rest.
fn class_default_partial_rotary(model_type: &str) -> f64 {
    match model_type {
        "gpt_neox" | "stablelm" | "qwen3_next" => 0.25,
        "glm" | "glm4" | "glm4_moe" | "glm4v_moe" | "glm4v_moe_text" | "persimmon" | "phi"
        | "nemotron" => 0.5,
        "moonshine" => 0.9,
        _ => 1.0,
    }
}

/// The config class's `head_dim` where the file gives none and the class does not derive it
/// from `hidden_size / num_attention_heads`.
fn class_default_head_dim(model_type: &str) -> Option<usize> {
    Some(match model_type {
        t if t.starts_with("gemma") => 256, // Gemma 1 to 4, 3n
        "vaultgemma" | "qwen3_next" => 256,
        "mimo_v2" | "mimo_v2_flash" => 192,
        "deepseek_v4" => 512,
        "ernie4_5" | "seed_oss" | "qwen3" | "helium" | "glm" | "glm4" | "minimax_m2" => 128,
        "gpt_oss" => 64,
        _ => return None,
    })
}

/// What a model family's attention uses in place of rotary embeddings, by HF `model_type`:
/// families whose modeling code never rotates, so that their `config.json` (which has a head
/// size, and often nothing that says so) does not build a rope that would rotate a model never
/// trained with it. Families that rotate in some checkpoints and not in others are read from
/// the key that decides (`position_embedding_type`, Falcon's `alibi`), not listed here.
fn positions_without_rope(model_type: &str) -> Option<&'static str> {
    Some(match model_type {
        "gpt2" | "gpt_bigcode" | "gpt_neo" | "openai-gpt" | "opt" | "biogpt" | "bert"
        | "roberta" | "xlm-roberta" | "xlm-roberta-xl" | "distilbert" | "albert" | "camembert"
        | "electra" | "mobilebert" | "megatron-bert" | "bart" | "mbart" | "blenderbot" => {
            "learned positions"
        }
        "ctrl" | "xglm" | "marian" | "pegasus" | "m2m_100" => "sinusoidal positions",
        "whisper" => "sinusoidal and learned positions",
        "bloom" | "mpt" | "jais" => "ALiBi",
        "t5" | "mt5" | "umt5" | "longt5" | "switch_transformers" => "relative position buckets",
        "deberta" | "deberta-v2" => "disentangled relative positions",
        "mamba" | "mamba2" | "falcon_mamba" | "rwkv" => "no attention",
        "jamba" | "nemotron_h" | "kimi_linear" => "no position encoding in its attention layers",
        _ => return None,
    })
}

impl<'a> Cfg<'a> {
    /// A non-null value: `text_config` first, then the top level; with its dotted path.
    fn get(&self, key: &str) -> Option<(String, &'a Value)> {
        if let Some(v) = self.text.and_then(|t| t.get(key)).filter(|v| !v.is_null()) {
            return Some((format!("{}.{key}", self.text_key), v));
        }
        self.root
            .get(key)
            .filter(|v| !v.is_null())
            .map(|v| (key.to_owned(), v))
    }

    fn f32(&self, key: &str) -> Result<Option<f32>, ConfigError> {
        self.get(key).map(|(k, v)| num_f32(&k, v)).transpose()
    }

    fn u32(&self, key: &str) -> Result<Option<u32>, ConfigError> {
        self.get(key).map(|(k, v)| num_u32(&k, v)).transpose()
    }

    /// A boolean, with its dotted path.
    fn flag(&self, key: &str) -> Result<Option<(String, bool)>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some((k, v)) => match v.as_bool() {
                Some(b) => Ok(Some((k, b))),
                None => Err(wrong(&k, "a boolean")),
            },
        }
    }

    fn usize(&self, key: &str) -> Result<Option<usize>, ConfigError> {
        self.get(key).map(|(k, v)| num_usize(&k, v)).transpose()
    }

    fn model_type(&self) -> Result<&'a str, ConfigError> {
        match self.get("model_type") {
            None => Ok(""),
            Some((k, v)) => v.as_str().ok_or_else(|| wrong(&k, "a string")),
        }
    }

    fn build(&self, options: &HfOptions) -> Result<HfRopes, ConfigError> {
        let model_type = self.model_type()?;
        // Granite 4 (`"nope"`) and BERT-style configs (`"absolute"`) say so here: a Rope built
        // for them would rotate a model that was never trained with rotations.
        // ModernBERT's published files carry a BERT-era `"position_embedding_type":
        // "absolute"` that its config class and modeling code never read: it always rotates.
        let position_embedding = match model_type {
            "modernbert" | "modernbert-decoder" => None,
            _ => self.get("position_embedding_type"),
        };
        // `"rotary"`: ESM's spelling, and XLM-RoBERTa's with rotary embeddings (Jina v3).
        let said_rope = match position_embedding {
            Some((k, v)) => match v.as_str() {
                Some("rope" | "rotary") => true,
                Some(other) => {
                    return Err(ConfigError::new(
                        k,
                        ConfigErrorKind::NoRope,
                        format!("the model's position embedding is `{other}`, not rotary"),
                    ));
                }
                None => return Err(wrong(&k, "a string")),
            },
            // GraniteMoeHybrid's config class defaults to no position embedding (`None`):
            // its attention rotates only with `"rope"` written out.
            None if model_type == "granitemoehybrid" => {
                return Err(ConfigError::new(
                    "position_embedding_type",
                    ConfigErrorKind::NoRope,
                    "absent, and GraniteMoeHybrid's default is no position embedding, not rotary",
                ));
            }
            None => false,
        };
        if !said_rope && let Some(instead) = positions_without_rope(model_type) {
            return Err(ConfigError::new(
                "model_type",
                ConfigErrorKind::NoRope,
                format!("`{model_type}` attends with {instead}, not rotary embeddings"),
            ));
        }
        // Falcon: `alibi` (Falcon-RW) replaces the rotary embedding (HF `FalconAttention`
        // builds its rotary embedding only `if not self.config.alibi`).
        // (`RefinedWeb*`: the original remote code's names.)
        if matches!(model_type, "falcon" | "RefinedWeb" | "RefinedWebModel")
            && let Some((k, true)) = self.flag("alibi")?
        {
            return Err(ConfigError::new(
                k,
                ConfigErrorKind::NoRope,
                "Falcon with ALiBi attends without rotary embeddings",
            ));
        }
        // Zamba2's shared attention rotates only with `use_mem_rope` (its class default false).
        if model_type == "zamba2" && !matches!(self.flag("use_mem_rope")?, Some((_, true))) {
            return Err(ConfigError::new(
                "use_mem_rope",
                ConfigErrorKind::NoRope,
                "Zamba2 attends without rotary embeddings unless `use_mem_rope` is true",
            ));
        }
        // Baichuan's 13B models (40 layers) attend with ALiBi, its 7B ones with a rope; the
        // two share `model_type` and differ in their remote code (llama.cpp tells them apart
        // by the same layer count).
        if model_type == "baichuan" && self.usize("num_hidden_layers")? == Some(40) {
            return Err(ConfigError::new(
                "num_hidden_layers",
                ConfigErrorKind::NoRope,
                "Baichuan's 40-layer (13B) models attend with ALiBi, not rotary embeddings",
            ));
        }
        // ERNIE 4.5 VL's 3-D rope gives the first 44 frequencies alternately to the height and
        // width positions and the rest to time: neither of M-RoPE's two orders.
        if model_type.starts_with("ernie4_5_vl") {
            return Err(ConfigError::new(
                "model_type",
                ConfigErrorKind::UnknownValue,
                "ERNIE 4.5 VL's 3-D rope (height and width alternating over the first \
                 frequencies, time after) is not one posenc builds",
            ));
        }
        // Gemma 3 and 3n: a local rope (θ = `rope_local_base_freq`, unscaled) on their
        // sliding layers. Gemma 4: its own defaults and head size on full layers (below).
        let gemma3 = matches!(
            model_type,
            "gemma3" | "gemma3_text" | "gemma3n" | "gemma3n_text"
        );
        let gemma4 = matches!(model_type, "gemma4" | "gemma4_text");
        // ModernBERT (encoder, decoder): `global_rope_theta` on full layers, `local_rope_theta`
        // on sliding ones.
        let modernbert = matches!(model_type, "modernbert" | "modernbert-decoder");
        // Models whose config class writes its own per-type `rope_parameters` when there is
        // none: read again with them written in.
        if let Some(level) = self.written_rope_parameters(model_type)? {
            let cfg = match self.text {
                Some(_) => Cfg {
                    text: Some(&level),
                    text_key: self.text_key,
                    root: self.root,
                },
                None => Cfg {
                    text: None,
                    text_key: self.text_key,
                    root: &level,
                },
            };
            return cfg.build(options);
        }

        // Geometry: head dim, and who rotates which pairs.
        // MLA models: the rope covers the `qk_rope_head_dim` channels of each head, in adjacent
        // pairs unless `rope_interleave` is false.
        let deepseek = matches!(
            model_type,
            "deepseek_v2" | "deepseek_v3" | "kimi_k2" | "glm4_moe_lite" | "longcat_flash"
        );
        // MiniCPM3 is MLA too, its rope over `qk_rope_head_dim` in halves (`rotate_half`).
        let head_dim = if deepseek || model_type == "minicpm3" {
            self.usize("qk_rope_head_dim")?.ok_or_else(|| {
                ConfigError::new(
                    "qk_rope_head_dim",
                    ConfigErrorKind::Missing,
                    "an MLA model's rope dim is required",
                )
            })?
        } else {
            self.head_dim(model_type)?
        };
        let layout = match model_type {
            // Llama 4 rotates adjacent pairs as complex numbers (`view_as_complex`); its HF
            // checkpoint is not permuted to rotate_half as Llama 1–3's are.
            // ERNIE 4.5 and CodeGen pair `x[..., 0::2]` with `x[..., 1::2]` (GLM's
            // `rotate_half`, GPT-J's `rotate_every_two`); their GGUFs are not permuted either
            // (llama.cpp: NORM for ERNIE 4.5).
            "gptj" | "codegen" | "glm" | "glm4" | "chatglm" | "cohere" | "cohere2" | "llama4"
            | "llama4_text" | "deepseek_v4" | "ernie4_5" | "ernie4_5_moe" | "helium"
            | "moonshine" => Layout::Interleaved,
            // GLM-4.1V's M-RoPE (`rotate_half_llm`, cos `repeat_interleave`d): adjacent pairs,
            // each pair's axis by its frequency's section as in Qwen2-VL. (GLM-4.5V,
            // `glm4v_moe`, rotates halves.)
            "glm4v" | "glm4v_text" => Layout::Interleaved,
            _ if deepseek => match self.flag("rope_interleave")? {
                Some((_, false)) => Layout::RotateHalf,
                _ => Layout::Interleaved,
            },
            // flash-attn's rotary keys, as remote-code BERTs write them (NomicBERT, Jina's
            // XLM-RoBERTa): `rotary_emb_interleaved` pairs adjacent channels.
            _ => match self.flag("rotary_emb_interleaved")? {
                Some((_, true)) => Layout::Interleaved,
                _ => Layout::RotateHalf,
            },
        };
        // Phi-3-small's `rope_position_scale` scales positions before the rotation; only 1
        // (its published value) leaves them alone.
        if let Some((k, v)) = self.get("rope_position_scale")
            && num_f64(&k, v)? != 1.0
        {
            return Err(ConfigError::new(
                k,
                ConfigErrorKind::UnknownKey,
                "a position scale other than 1 is not one posenc applies",
            ));
        }
        // NomicBERT's `rotary_scaling_factor` switches its remote code to a dynamic-NTK rope
        // of its own, which posenc does not build.
        if let Some((k, _)) = self.get("rotary_scaling_factor") {
            return Err(ConfigError::new(
                k,
                ConfigErrorKind::UnknownKey,
                "NomicBERT's dynamic-NTK scaling is not one posenc builds",
            ));
        }

        // Where the rope settings are, and which layer types they cover.
        let scaling_v4 = self.get("rope_scaling");
        let params_v5 = self.get("rope_parameters");
        let mut dicts: Vec<(String, Dict<'a>, Option<f32>)> = Vec::new(); // (layer type, dict, theta override)
        let as_obj = |k: &str, v: &'a Value| -> Result<&'a Map<String, Value>, ConfigError> {
            v.as_object().ok_or_else(|| wrong(k, "an object"))
        };
        match (&params_v5, &scaling_v4) {
            (Some((pk, pv)), sv) => {
                let pmap = as_obj(pk, pv)?;
                let per_layer = !pmap.is_empty() && pmap.values().all(Value::is_object);
                if let Some((sk, sv)) = sv {
                    let smap = as_obj(sk, sv)?;
                    if per_layer && !smap.is_empty() {
                        return Err(ConfigError::new(
                            sk.clone(),
                            ConfigErrorKind::Contradiction,
                            format!("given beside a per-layer-type `{pk}`"),
                        ));
                    }
                    for (k, v) in smap {
                        if let Some(p) = pmap.get(k)
                            && !same(p, v)
                        {
                            return Err(ConfigError::new(
                                format!("{sk}.{k}"),
                                ConfigErrorKind::Contradiction,
                                format!("differs from `{pk}.{k}`"),
                            ));
                        }
                    }
                }
                if per_layer {
                    for (layer_type, v) in pmap {
                        let path = format!("{pk}.{layer_type}");
                        let map = as_obj(&path, v)?;
                        dicts.push((
                            layer_type.clone(),
                            Dict {
                                path,
                                map: Some(map),
                            },
                            None,
                        ));
                    }
                } else {
                    dicts.push((
                        "default".to_owned(),
                        Dict {
                            path: pk.clone(),
                            map: Some(pmap),
                        },
                        None,
                    ));
                }
            }
            (None, Some((sk, sv))) => {
                let smap = as_obj(sk, sv)?;
                dicts.push((
                    "default".to_owned(),
                    Dict {
                        path: sk.clone(),
                        map: Some(smap),
                    },
                    None,
                ));
            }
            (None, None) => {
                dicts.push((
                    "default".to_owned(),
                    Dict {
                        path: "rope_scaling".to_owned(),
                        map: None,
                    },
                    None,
                ));
            }
        }
        // Gemma 3 in the transformers-4 form: `rope_scaling` and `rope_theta` are the global
        // layers'; the local (sliding) layers use `rope_local_base_freq`, unscaled.
        if gemma3 && dicts.len() == 1 && dicts[0].0 == "default" && params_v5.is_none() {
            let local = self.f32("rope_local_base_freq")?.unwrap_or(10_000.0);
            dicts[0].0 = "full_attention".to_owned();
            dicts.insert(
                0,
                (
                    "sliding_attention".to_owned(),
                    Dict {
                        path: "rope_local_base_freq".to_owned(),
                        map: None,
                    },
                    Some(local),
                ),
            );
        }
        // ModernBERT in the transformers-4 form: one `rope_scaling` (if any) for both types,
        // θ from `global_rope_theta` (160000) and `local_rope_theta` (10000; `null`: the
        // global θ, as its modeling code reads it).
        if modernbert && dicts.len() == 1 && dicts[0].0 == "default" && params_v5.is_none() {
            let global = self.f32("global_rope_theta")?.unwrap_or(160_000.0);
            let local = match self.f32("local_rope_theta")? {
                Some(t) => t,
                None if self.null("local_rope_theta") => global,
                None => 10_000.0,
            };
            let path = dicts[0].1.path.clone();
            let map = dicts[0].1.map;
            dicts[0].0 = "full_attention".to_owned();
            dicts[0].2 = Some(global);
            dicts.insert(
                0,
                (
                    "sliding_attention".to_owned(),
                    Dict { path, map },
                    Some(local),
                ),
            );
        }
        // OLMo 3 in the transformers-4 form: `rope_scaling` is the full layers'; its sliding
        // layers rotate unscaled (HF's `rotary_embs["sliding_attention"]` with
        // `rope_type="default"`, as llama.cpp's OLMo 3 graph).
        if model_type == "olmo3"
            && dicts.len() == 1
            && dicts[0].0 == "default"
            && params_v5.is_none()
            && scaling_v4.is_some()
        {
            dicts[0].0 = "full_attention".to_owned();
            let plain = Dict {
                path: "rope_theta".to_owned(),
                map: None,
            };
            dicts.insert(0, ("sliding_attention".to_owned(), plain, None));
        }

        // Gemma 4: one rope per layer type, its full layers' heads `global_head_dim` wide
        // (`config.global_head_dim if not self.is_sliding and config.global_head_dim`; the
        // config class pops it with default 512), their proportional rope computed over that
        // width (`head_dim_key = "global_head_dim"`).
        let global_head_dim = if gemma4 {
            if dicts.iter().any(|(t, _, _)| t == "default") {
                return Err(ConfigError::new(
                    params_v5.map_or_else(|| "rope_parameters".to_owned(), |(k, _)| k),
                    ConfigErrorKind::Missing,
                    "Gemma 4 needs one rope per layer type (`sliding_attention`, \
                     `full_attention`)",
                ));
            }
            match self.usize("global_head_dim")? {
                None if self.null("global_head_dim") => head_dim,
                None => 512,
                Some(0) => head_dim,
                Some(n) => n,
            }
        } else {
            head_dim
        };

        let mut ropes = Vec::with_capacity(dicts.len());
        for (layer_type, dict, theta) in &dicts {
            // Per-type dicts without `rope_theta`: HF's config `setdefault`s it from the
            // older keys (Gemma 3 / 3n: sliding `rope_local_base_freq`, full `rope_theta`;
            // ModernBERT: `local_rope_theta`, `global_rope_theta`).
            let unset = theta.is_none() && dict.get("rope_theta").is_none();
            let sliding = layer_type == "sliding_attention";
            let full = layer_type == "full_attention";
            let theta = match theta {
                None if unset && gemma3 && sliding => {
                    Some(self.f32("rope_local_base_freq")?.unwrap_or(10_000.0))
                }
                None if unset && modernbert && sliding => {
                    Some(self.f32("local_rope_theta")?.unwrap_or(10_000.0))
                }
                None if unset && modernbert && full => {
                    Some(self.f32("global_rope_theta")?.unwrap_or(160_000.0))
                }
                t => *t,
            };
            let dim = if full {
                global_head_dim
            } else if sliding && matches!(model_type, "mimo_v2" | "mimo_v2_flash") {
                // The Hub code sizes sliding heads by `swa_head_dim` (HF's port drops it as
                // equal to `head_dim`).
                self.usize("swa_head_dim")?.unwrap_or(head_dim)
            } else {
                head_dim
            };
            let rope = self.rope(model_type, dim, layout, dict, theta, options)?;
            ropes.push((layer_type.clone(), rope));
        }
        // DeepSeek-V4 keys its ropes by rope (`rope_layer_type = "main" if sliding else
        // "compress"`): one entry per layer type that takes each.
        if model_type == "deepseek_v4" {
            let mut typed = Vec::with_capacity(ropes.len() + 1);
            for (key, rope) in ropes {
                match key.as_str() {
                    "main" => typed.push(("sliding_attention".to_owned(), rope)),
                    "compress" => {
                        typed.push(("compressed_sparse_attention".to_owned(), rope));
                        typed.push(("heavily_compressed_attention".to_owned(), rope));
                    }
                    _ => typed.push((key, rope)),
                }
            }
            ropes = typed;
        }
        // One rope for every layer type: say so once.
        if ropes.len() > 1 && ropes.iter().all(|(_, r)| *r == ropes[0].1) && !gemma3 {
            ropes.truncate(1);
            ropes[0].0 = "default".to_owned();
        }

        let layer_types = self.layer_types(model_type)?;
        let rotary = self.rotary(model_type, &layer_types)?;
        Ok(HfRopes {
            ropes,
            layer_types,
            rotary,
        })
    }

    /// The config's level (`text_config`, else the top) with the per-type `rope_parameters`
    /// HF builds when there is none, for the models that build their own (`None` for every
    /// other model, or when `rope_parameters` is given):
    ///
    /// * Gemma 4: `Gemma4TextConfig`'s defaults. HF keeps no older form for it (`rope_theta`
    ///   and `rope_scaling` are not read), so either of those is a contradiction here rather
    ///   than ignored.
    /// * MiMo-V2 (`mimo_v2`, the Hub form; `mimo_v2_flash`, HF's) without a per-type dict,
    ///   as HF's `convert_mimo_v2_flash_weights_to_hf.py` rewrites it: full layers
    ///   `rope_theta` (5e6) with `rope_scaling`, sliding layers `swa_rope_theta` (1e4)
    ///   unscaled, both `partial_rotary_factor` (0.334); a flat `rope_parameters` is the full
    ///   layers'. The keys it moves are taken out of the level.
    fn written_rope_parameters(
        &self,
        model_type: &str,
    ) -> Result<Option<Map<String, Value>>, ConfigError> {
        if model_type == "deepseek_v4" {
            return self.deepseek_v4_parameters();
        }
        let per_type = match self.get("rope_parameters") {
            None => false,
            Some((_, Value::Object(m))) => !m.is_empty() && m.values().all(Value::is_object),
            Some(_) => true, // refused where it is read
        };
        if per_type || (model_type.starts_with("gemma4") && self.get("rope_parameters").is_some()) {
            return Ok(None);
        }
        let mut level = self.text.unwrap_or(self.root).clone();
        let params = match model_type {
            "gemma4" | "gemma4_text" => {
                for key in ["rope_theta", "rope_scaling"] {
                    if let Some((k, _)) = self.get(key) {
                        return Err(ConfigError::new(
                            k,
                            ConfigErrorKind::Contradiction,
                            "Gemma 4 reads its rope from `rope_parameters` only; without it HF \
                             ignores this key and applies its defaults",
                        ));
                    }
                }
                serde_json::json!({
                    "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
                    "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                       "rope_theta": 1_000_000.0},
                })
            }
            "mimo_v2" | "mimo_v2_flash" => {
                // A flat `rope_parameters` (a transformers-5 re-save of the Hub form) is the
                // full layers' dict; the top-level keys fill what it lacks and must agree.
                let mut full = match level.remove("rope_parameters") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(m)) => m,
                    Some(_) => return Err(wrong("rope_parameters", "an object")),
                };
                for (key, default) in [
                    ("rope_theta", 5_000_000.0),
                    ("partial_rotary_factor", 0.334),
                ] {
                    let top = level.remove(key).filter(|v| !v.is_null());
                    match (full.get(key), top) {
                        (Some(inner), Some(top)) if !same(inner, &top) => {
                            return Err(ConfigError::new(
                                key,
                                ConfigErrorKind::Contradiction,
                                format!("differs from `rope_parameters.{key}`"),
                            ));
                        }
                        (Some(_), _) => {}
                        (None, top) => {
                            full.insert(key.to_owned(), top.unwrap_or(Value::from(default)));
                        }
                    }
                }
                if !full.contains_key("type") {
                    full.entry("rope_type").or_insert(Value::from("default"));
                }
                match level.remove("rope_scaling") {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(m)) => full.extend(m),
                    Some(_) => return Err(wrong("rope_scaling", "an object")),
                }
                let swa_theta = match level.remove("swa_rope_theta") {
                    Some(v) if !v.is_null() => Value::from(num_f64("swa_rope_theta", &v)?),
                    _ => Value::from(10_000.0),
                };
                let prf = full.get("partial_rotary_factor").cloned();
                serde_json::json!({
                    "full_attention": full,
                    "sliding_attention": {"rope_type": "default", "rope_theta": swa_theta,
                                          "partial_rotary_factor": prf},
                })
            }
            // Config classes whose default scaling applies to a file that names none:
            // `GptOssConfig`'s YaRN ×32 over 4096 positions, `ApertusConfig`'s Llama 3 ×8 over
            // 8192. (A `null` written out is HF's "no scaling" and stays so.)
            "gpt_oss" | "apertus"
                if ["rope_parameters", "rope_scaling"]
                    .iter()
                    .all(|k| self.get(k).is_none() && !self.null(k)) =>
            {
                if model_type == "gpt_oss" {
                    serde_json::json!({"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                        "beta_slow": 1.0, "truncate": false,
                        "original_max_position_embeddings": 4096})
                } else {
                    serde_json::json!({"rope_type": "llama3", "factor": 8.0,
                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 8192})
                }
            }
            _ => return Ok(None),
        };
        level.insert("rope_parameters".to_owned(), params);
        Ok(Some(level))
    }

    /// DeepSeek-V4's `rope_parameters` as `DeepseekV4Config` builds them, keyed by rope
    /// (`"main"`: the sliding layers', `"compress"`: the compressed layers'); `None` when the
    /// config already has them complete.
    ///
    /// From the Hub form: `main` = default rope, θ `rope_theta` (10000); `compress` =
    /// `rope_scaling` (YaRN) with θ `compress_rope_theta` (160000); both over
    /// `partial_rotary_factor` (else `qk_rope_head_dim / head_dim`, else 64 / 512) of the
    /// head. A YaRN `compress` without `attention_factor` gets 1.0 ("the V4 reference does NOT
    /// multiply cos/sin by YaRN's computed mscale"); a nested dict is taken as written.
    fn deepseek_v4_parameters(&self) -> Result<Option<Map<String, Value>>, ConfigError> {
        let mut level = self.text.unwrap_or(self.root).clone();
        let yarn = |m: &Map<String, Value>| {
            let name = m.get("rope_type").or_else(|| m.get("type"));
            name.and_then(Value::as_str) == Some("yarn") && !m.contains_key("attention_factor")
        };
        // Already nested (`main`, `compress`): as written, the factor included; the top-level
        // keys it replaces are dropped, as the config class drops them.
        const REPLACED: [&str; 4] = [
            "rope_theta",
            "compress_rope_theta",
            "partial_rotary_factor",
            "qk_rope_head_dim",
        ];
        let flat = match self.get("rope_parameters") {
            None => Map::new(),
            Some((_, Value::Object(m))) if m.get("main").is_some_and(Value::is_object) => {
                if REPLACED.iter().all(|k| !level.contains_key(*k)) {
                    return Ok(None);
                }
                for k in REPLACED {
                    level.remove(k);
                }
                return Ok(Some(level));
            }
            Some((k, Value::Object(m))) => {
                let own = k
                    .strip_prefix(self.text_key)
                    .and_then(|r| r.strip_prefix('.'));
                level.remove(own.unwrap_or(k.as_str()));
                m.clone()
            }
            Some(_) => return Ok(None), // refused where it is read
        };
        let head = self.usize("head_dim")?.unwrap_or(512);
        // `partial_rotary_factor`, else `qk_rope_head_dim / head_dim`, else 64 / 512.
        let prf = match (
            level.remove("partial_rotary_factor"),
            level.remove("qk_rope_head_dim"),
        ) {
            (Some(p), _) if !p.is_null() => p,
            (_, Some(q)) if !q.is_null() && head > 0 => {
                Value::from(num_usize("qk_rope_head_dim", &q)? as f64 / head as f64)
            }
            _ => Value::from(64.0 / 512.0),
        };
        let mut take = |key: &str, default: f64| -> Result<Value, ConfigError> {
            match level.remove(key) {
                Some(v) if !v.is_null() => num_f64(key, &v).map(Value::from),
                _ => Ok(Value::from(default)),
            }
        };
        let theta = take("rope_theta", 10_000.0)?;
        let compress_theta = take("compress_rope_theta", 160_000.0)?;
        // The scaling: `rope_scaling` (transformers 4) or a flat `rope_parameters`.
        let mut compress = match level.remove("rope_scaling") {
            None | Some(Value::Null) => flat,
            Some(Value::Object(m)) if flat.is_empty() => m,
            Some(Value::Object(_)) => {
                return Err(ConfigError::new(
                    "rope_scaling",
                    ConfigErrorKind::Contradiction,
                    "given beside a flat `rope_parameters`",
                ));
            }
            Some(_) => return Err(wrong("rope_scaling", "an object")),
        };
        if yarn(&compress) {
            compress.insert("attention_factor".to_owned(), Value::from(1.0));
        }
        if !compress.contains_key("type") {
            compress
                .entry("rope_type")
                .or_insert(Value::from("default"));
        }
        compress.insert("rope_theta".to_owned(), compress_theta);
        compress.insert("partial_rotary_factor".to_owned(), prf.clone());
        level.insert(
            "rope_parameters".to_owned(),
            serde_json::json!({
                "main": {"rope_type": "default", "rope_theta": theta, "partial_rotary_factor": prf},
                "compress": compress,
            }),
        );
        Ok(Some(level))
    }

    /// Whether `key` is written as `null` (where HF's value is then `None`, not the config
    /// class's default): `text_config` first, then the top level.
    fn null(&self, key: &str) -> bool {
        let v = match self.text.and_then(|t| t.get(key)) {
            Some(v) => Some(v),
            None => self.root.get(key),
        };
        v.is_some_and(Value::is_null)
    }

    /// `num_hidden_layers`, or the config class's default; capped (a list per layer is built).
    fn layers(&self, default: usize) -> Result<usize, ConfigError> {
        Ok(self
            .usize("num_hidden_layers")?
            .unwrap_or(default)
            .min(1 << 16))
    }

    /// A period of layers (every `n`-th is the odd one out), or the config class's default;
    /// 0 is refused, where HF would divide by it.
    fn period(&self, key: &str, default: usize) -> Result<usize, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some((k, v)) => match num_usize(&k, v)? {
                0 => Err(ConfigError::new(
                    k,
                    ConfigErrorKind::OutOfRange,
                    "must be positive",
                )),
                n => Ok(n),
            },
        }
    }

    /// Per layer, whether its attention applies the rope, for the models whose code decides
    /// it per layer (see [`HfRopes::rotates`]); `None` for every other model.
    fn rotary(
        &self,
        model_type: &str,
        layer_types: &[String],
    ) -> Result<Option<Vec<bool>>, ConfigError> {
        let sliding = || -> Option<Vec<bool>> {
            Some(
                layer_types
                    .iter()
                    .map(|t| t == "sliding_attention")
                    .collect(),
            )
        };
        match model_type {
            // `use_rope = config.no_rope_layers[layer_idx]` (1: rope). Absent, the list has a
            // NoPE layer every `no_rope_layer_interval`; Llama 4's config treats an empty list
            // as absent, SmolLM3's keeps it (and HF fails at its first layer).
            "llama4" | "llama4_text" | "smollm3" => {
                let llama4 = model_type != "smollm3";
                let n = self.layers(if llama4 { 48 } else { 36 })?;
                if let Some((k, v)) = self.get("no_rope_layers") {
                    let a = v
                        .as_array()
                        .ok_or_else(|| wrong(&k, "a list of 0s and 1s"))?;
                    if !(llama4 && a.is_empty()) {
                        let list = a
                            .iter()
                            .map(|x| match x {
                                Value::Bool(b) => Ok(*b),
                                _ => num_u64(&k, x).map(|n| n != 0),
                            })
                            .collect::<Result<Vec<bool>, _>>()?;
                        // HF indexes it by layer: one entry per layer at least.
                        if list.len() < n.max(1) {
                            return Err(ConfigError::new(
                                k,
                                ConfigErrorKind::OutOfRange,
                                format!("{} entries for {} layers", list.len(), n.max(1)),
                            ));
                        }
                        return Ok(Some(list));
                    }
                }
                let every = self.period("no_rope_layer_interval", 4)?;
                Ok(Some((0..n).map(|i| (i + 1) % every != 0).collect()))
            }
            // Cohere 2: `sliding_window if layer_types[i] == "sliding_attention" else None`,
            // and the rope only where that is not None (so nowhere with `sliding_window: null`).
            "cohere2" if self.null("sliding_window") => {
                Ok(Some(Vec::from_iter(layer_types.iter().map(|_| false))))
            }
            // AFMoE (Arcee): the rope on local (sliding) layers only.
            "cohere2" | "afmoe" => Ok(sliding()),
            // EXAONE 4: `if self.sliding_window is None or self.is_sliding`.
            "exaone4" if self.null("sliding_window") => Ok(None),
            "exaone4" => Ok(sliding()),
            _ => Ok(None),
        }
    }

    fn layer_types(&self, model_type: &str) -> Result<Vec<String>, ConfigError> {
        let mut types = self.listed_layer_types(model_type)?;
        // Gemma 4's config forces its last layer to full attention, listed or not.
        if matches!(model_type, "gemma4" | "gemma4_text")
            && let Some(last) = types.last_mut()
        {
            "full_attention".clone_into(last);
        }
        Ok(types)
    }

    /// `layer_types` as written, or the config class's default list.
    fn listed_layer_types(&self, model_type: &str) -> Result<Vec<String>, ConfigError> {
        if let Some((k, v)) = self.get("layer_types") {
            let a = v.as_array().ok_or_else(|| wrong(&k, "a list of strings"))?;
            return a
                .iter()
                .map(|t| {
                    t.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| wrong(&k, "a list of strings"))
                })
                .collect();
        }
        // DeepSeek-V4: `_COMPRESS_RATIO_TO_LAYER_TYPE[r] for r in compress_ratios`, cut to
        // `num_hidden_layers` (the list also covers the MTP layers).
        if model_type == "deepseek_v4" {
            let Some((k, v)) = self.get("compress_ratios") else {
                // The config class's (V4-Pro's) list: two heavily compressed layers, then
                // heavily / sparsely compressed in turn.
                let n = self.layers(43)?;
                return Ok((0..n)
                    .map(|i| {
                        if i >= 2 && (i - 2) % 2 == 1 {
                            "compressed_sparse_attention"
                        } else {
                            "heavily_compressed_attention"
                        }
                        .to_owned()
                    })
                    .collect());
            };
            let a = v
                .as_array()
                .ok_or_else(|| wrong(&k, "a list of 0, 4 or 128"))?;
            let n = self.layers(43)?.min(a.len());
            return a[..n]
                .iter()
                .map(|r| match num_u64(&k, r)? {
                    0 => Ok("sliding_attention".to_owned()),
                    4 => Ok("compressed_sparse_attention".to_owned()),
                    128 => Ok("heavily_compressed_attention".to_owned()),
                    other => Err(ConfigError::new(
                        k.clone(),
                        ConfigErrorKind::UnknownValue,
                        format!("compress ratio {other} is none of 0, 4, 128"),
                    )),
                })
                .collect();
        }
        // MiMo-V2-Flash: the Hub form's `hybrid_layer_pattern` (1: sliding), else the config
        // class's list (full: layer 0 and every sixth).
        if matches!(model_type, "mimo_v2" | "mimo_v2_flash") {
            if let Some((k, v)) = self.get("hybrid_layer_pattern") {
                let a = v
                    .as_array()
                    .ok_or_else(|| wrong(&k, "a list of 0s and 1s"))?;
                return a
                    .iter()
                    .map(|x| {
                        Ok(if num_u64(&k, x)? == 1 {
                            "sliding_attention"
                        } else {
                            "full_attention"
                        }
                        .to_owned())
                    })
                    .collect();
            }
            return Ok((0..self.layers(48)?)
                .map(|i| {
                    if i == 0 || (i + 1) % 6 == 0 {
                        "full_attention"
                    } else {
                        "sliding_attention"
                    }
                    .to_owned()
                })
                .collect());
        }
        // ModernBERT's own list: layer i is full where i % period == 0 (layer 0 is).
        if matches!(model_type, "modernbert" | "modernbert-decoder") {
            let every = self.period("global_attn_every_n_layers", 3)?;
            return Ok((0..self.layers(22)?)
                .map(|i| {
                    if i % every == 0 {
                        "full_attention"
                    } else {
                        "sliding_attention"
                    }
                    .to_owned()
                })
                .collect());
        }
        // The config classes' own lists: layer i slides unless (i + 1) % period == 0.
        let (n, pattern) = match model_type {
            "gemma3" | "gemma3_text" => (
                self.layers(26)?,
                self.usize("sliding_window_pattern")?.unwrap_or(6).max(1),
            ),
            "gemma3n" | "gemma3n_text" => (self.layers(35)?, 5),
            "gemma4" | "gemma4_text" => (self.layers(30)?, 6),
            "cohere2" => (self.layers(40)?, self.period("sliding_window_pattern", 4)?),
            "afmoe" => (
                self.layers(32)?,
                self.period("global_attn_every_n_layers", 4)?,
            ),
            "olmo3" => (self.layers(32)?, 4),
            // With `sliding_window: null` EXAONE 4's period is 0 (HF then needs the list).
            "exaone4" if !self.null("sliding_window") => {
                (self.layers(32)?, self.period("sliding_window_pattern", 4)?)
            }
            _ => return Ok(Vec::new()),
        };
        Ok((0..n)
            .map(|i| {
                if (i + 1) % pattern == 0 {
                    "full_attention"
                } else {
                    "sliding_attention"
                }
                .to_owned()
            })
            .collect())
    }

    fn head_dim(&self, model_type: &str) -> Result<usize, ConfigError> {
        if let Some(h) = self.usize("head_dim")? {
            return Ok(h);
        }
        if let Some(h) = class_default_head_dim(model_type) {
            return Ok(h);
        }
        // Zamba2's attention runs on the hidden state concatenated with the embeddings:
        // `attention_head_dim = 2 * hidden_size // num_attention_heads`.
        if model_type == "zamba2" {
            if let Some(h) = self.usize("attention_head_dim")? {
                return Ok(h);
            }
            if let (Some(h), Some(n)) = (
                self.usize("hidden_size")?,
                self.usize("num_attention_heads")?,
            ) && n > 0
            {
                return Ok(2 * h / n);
            }
        }
        // JetMoE's heads are `kv_channels` wide (its class default 128).
        if model_type == "jetmoe" {
            return Ok(self.usize("kv_channels")?.unwrap_or(128));
        }
        // ChatGLM's remote code: `kv_channels` when given, else hidden_size / heads.
        if model_type == "chatglm"
            && let Some(h) = self.usize("kv_channels")?
        {
            return Ok(h);
        }
        // DBRX: `d_model / n_heads`.
        if model_type == "dbrx" {
            let d = self.usize("d_model")?.ok_or_else(|| {
                ConfigError::new("d_model", ConfigErrorKind::Missing, "DBRX's width")
            })?;
            return match self.usize("n_heads")? {
                Some(n) if n > 0 => Ok(d / n),
                Some(_) => Err(ConfigError::new(
                    "n_heads",
                    ConfigErrorKind::OutOfRange,
                    "must be non-zero",
                )),
                None => Err(ConfigError::new(
                    "n_heads",
                    ConfigErrorKind::Missing,
                    "needed for d_model / n_heads",
                )),
            };
        }
        let hidden = match self.usize("hidden_size")? {
            Some(h) => Some(h),
            None => self.usize("n_embd")?,
        };
        let heads = match self.usize("num_attention_heads")? {
            Some(h) => Some(h),
            None => self.usize("n_head")?,
        };
        match (hidden, heads) {
            (Some(h), Some(n)) if n > 0 => Ok(h / n),
            (Some(_), Some(_)) => Err(ConfigError::new(
                "num_attention_heads",
                ConfigErrorKind::OutOfRange,
                "must be non-zero",
            )),
            (None, _) => Err(ConfigError::new(
                "head_dim",
                ConfigErrorKind::Missing,
                "neither `head_dim` nor `hidden_size` is given",
            )),
            (_, None) => Err(ConfigError::new(
                "num_attention_heads",
                ConfigErrorKind::Missing,
                "needed for hidden_size / num_attention_heads",
            )),
        }
    }

    /// DBRX's base: `attn_config.rope_theta` (its attention config's default 10000).
    fn dbrx_theta(&self) -> Result<f32, ConfigError> {
        let Some((k, v)) = self.get("attn_config") else {
            return Ok(10_000.0);
        };
        let attn = v.as_object().ok_or_else(|| wrong(&k, "an object"))?;
        match attn.get("rope_theta").filter(|v| !v.is_null()) {
            Some(t) => num_f32(&format!("{k}.rope_theta"), t),
            None => Ok(10_000.0),
        }
    }

    /// A value given in the rope dict and/or at the top level (`top` keys, in order of
    /// preference); the two must agree.
    fn either(
        &self,
        dict: &Dict<'a>,
        key: &str,
        top: &[&str],
    ) -> Result<Option<(String, &'a Value)>, ConfigError> {
        let inner = dict.get(key).map(|v| (dict.key(key), v));
        let outer = top.iter().find_map(|k| self.get(k));
        match (inner, outer) {
            (Some((ik, iv)), Some((ok, ov))) => {
                if same(iv, ov) {
                    Ok(Some((ik, iv)))
                } else {
                    Err(ConfigError::new(
                        ik,
                        ConfigErrorKind::Contradiction,
                        format!("differs from `{ok}`"),
                    ))
                }
            }
            (i, o) => Ok(i.or(o)),
        }
    }

    fn rope(
        &self,
        model_type: &str,
        head_dim: usize,
        layout: Layout,
        dict: &Dict<'a>,
        theta_override: Option<f32>,
        options: &HfOptions,
    ) -> Result<Rope, ConfigError> {
        // Scheme name: `rope_type` and/or the legacy `type` ("mrope" is "default").
        let canon = |s: &'a str| if s == "mrope" { "default" } else { s };
        let name = |k: &str| -> Result<Option<(&'a str, String)>, ConfigError> {
            match dict.get(k) {
                None => Ok(None),
                Some(v) => {
                    let s = v.as_str().ok_or_else(|| wrong(&dict.key(k), "a string"))?;
                    Ok(Some((canon(s), dict.key(k))))
                }
            }
        };
        let (rope_type, type_key) = match (name("rope_type")?, name("type")?) {
            (Some((a, ak)), Some((b, bk))) => {
                if a != b {
                    return Err(ConfigError::new(
                        bk,
                        ConfigErrorKind::Contradiction,
                        format!("`{b}` differs from `{ak}` = `{a}`"),
                    ));
                }
                (a, ak)
            }
            (Some((a, ak)), None) | (None, Some((a, ak))) => (a, ak),
            (None, None) => ("default", dict.key("rope_type")),
        };
        let rope_type = if rope_type == "su" {
            "longrope"
        } else {
            rope_type
        };

        // Keys each scheme may have (besides the common ones).
        const YARN_KEYS: &[&str] = &[
            "factor",
            "original_max_position_embeddings",
            "beta_fast",
            "beta_slow",
            "mscale",
            "mscale_all_dim",
            "attention_factor",
            "truncate",
        ];
        const COMMON: &[&str] = &[
            "rope_type",
            "type",
            "rope_theta",
            "partial_rotary_factor",
            "mrope_section",
            "mrope_interleaved",
        ];
        // Hunyuan's "dynamic" with `alpha` is NTK-alpha at load time: its rotary class raises
        // the base to `θ·alpha^(d/(d−2))` and reads no other key of the dict (its published
        // dicts also carry YaRN's `beta_fast`, `mscale`, …, which it ignores).
        let ntk_alpha = rope_type == "dynamic"
            && matches!(model_type, "hunyuan_v1_dense" | "hunyuan_v1_moe")
            && dict.get("alpha").is_some();
        let allowed: &[&str] = match rope_type {
            "default" => &[],
            "linear" => &["factor"],
            // `alpha` and the YaRN keys, which it ignores.
            "dynamic" if ntk_alpha => YARN_KEYS,
            "dynamic" => &["factor", "original_max_position_embeddings"],
            "yarn" => YARN_KEYS,
            "longrope" => &[
                "factor",
                "original_max_position_embeddings",
                "short_factor",
                "long_factor",
                "attention_factor",
            ],
            "llama3" => &[
                "factor",
                "low_freq_factor",
                "high_freq_factor",
                "original_max_position_embeddings",
            ],
            "proportional" => &["factor"],
            other => {
                return Err(ConfigError::new(
                    type_key,
                    ConfigErrorKind::UnknownValue,
                    format!("unknown rope type `{other}`"),
                ));
            }
        };
        // Ministral 3's and Mistral Large 3's `llama_4_scaling_beta` scales queries by
        // `1 + β·ln(1 + ⌊p / original_max_position_embeddings⌋)` after the rotation: not a
        // rope setting, so it leaves the rope alone (with the length it reads, also beside
        // the default scheme); the runtime scales its queries.
        let query_scale = dict.get("llama_4_scaling_beta").is_some();
        // Qwen3-Omni's thinker: HF's Qwen3-VL-MoE rotary, whose published dicts carry
        // `interleaved` beside `mrope_interleaved` (read as one setting below).
        let omni = matches!(
            model_type,
            "qwen3_omni_moe" | "qwen3_omni_moe_thinker" | "qwen3_omni_moe_text"
        );
        if let Some(map) = dict.map {
            for k in map.keys() {
                // Keys read outside the scheme: Hunyuan's `alpha`, the query scale's two,
                // Qwen3-Omni's `interleaved`.
                let outside = match k.as_str() {
                    "alpha" => ntk_alpha,
                    "llama_4_scaling_beta" | "original_max_position_embeddings" => query_scale,
                    "interleaved" => omni,
                    _ => false,
                };
                if !COMMON.contains(&k.as_str()) && !allowed.contains(&k.as_str()) && !outside {
                    return Err(ConfigError::new(
                        dict.key(k),
                        ConfigErrorKind::UnknownKey,
                        format!("not a setting of rope type `{rope_type}`"),
                    ));
                }
            }
        }

        // Base and rotary dim.
        let base = match theta_override {
            Some(t) => t,
            // ChatGLM's remote code: `10000 * rope_ratio`; it reads no `rope_theta`.
            None if model_type == "chatglm" => 10_000.0 * self.f32("rope_ratio")?.unwrap_or(1.0),
            // CodeGen's and GPT-J's code fix the base at 10000.
            None if matches!(model_type, "codegen" | "gptj") => 10_000.0,
            None if model_type == "dbrx" => self.dbrx_theta()?,
            // Older spellings: GPT-NeoX's `rotary_emb_base`, Phi-3-small's `rope_embedding_base`;
            // LFM2's config class reads Liquid's own `theta` before `rope_theta`
            // (`kwargs.get("theta", kwargs.get("rope_theta", …))`).
            None => match self.either(
                dict,
                "rope_theta",
                if model_type == "lfm2" {
                    &["theta", "rope_theta"]
                } else {
                    &["rope_theta", "rotary_emb_base", "rope_embedding_base"]
                },
            )? {
                Some((k, v)) => num_f32(&k, v)?,
                None => class_default_theta(model_type),
            },
        };
        let base = if ntk_alpha {
            let key = dict.key("alpha");
            let alpha = f64::from(num_f32(&key, dict.get("alpha").unwrap_or(&Value::Null))?);
            if head_dim <= 2 {
                return Err(ConfigError::new(
                    key,
                    ConfigErrorKind::OutOfRange,
                    "NTK-alpha needs a head of more than 2 channels",
                ));
            }
            // HF: `rope_theta * alpha ** (dim / (dim - 2))` in Python floats, then f32.
            let d = head_dim as f64;
            (f64::from(base) * libm::pow(alpha, d / (d - 2.0))) as f32
        } else {
            base
        };
        // Older spellings: GPT-NeoX's `rotary_pct`, StableLM-epoch's `rope_pct`, flash-attn's
        // `rotary_emb_fraction`.
        let prf_top: &[&str] = &[
            "partial_rotary_factor",
            "rotary_pct",
            "rope_pct",
            "rotary_emb_fraction",
        ];
        let rotary_dim = if let Some(rd) = self.usize("rotary_dim")? {
            rd
        } else if matches!(model_type, "codegen" | "gptj") {
            64 // their config classes' default `rotary_dim`
        } else if model_type == "chatglm" {
            // `RotaryEmbedding(rotary_dim // 2)`: the first half of each head.
            head_dim / 2
        } else if model_type == "bamba" {
            // `BambaConfig` overwrites the factor with 0.5 ("hardcode for BC").
            head_dim / 2
        } else {
            let prf = match self.either(dict, "partial_rotary_factor", prf_top)? {
                Some((k, v)) => {
                    let f = num_f64(&k, v)?;
                    if !(f > 0.0 && f <= 1.0) {
                        return Err(ConfigError::new(
                            k,
                            ConfigErrorKind::OutOfRange,
                            format!("{f} is not in (0, 1]"),
                        ));
                    }
                    f
                }
                None => class_default_partial_rotary(model_type),
            };
            // HF: int(head_dim * partial_rotary_factor).
            (head_dim as f64 * prf) as usize
        };
        let rotary_dim = if rope_type == "proportional" {
            head_dim
        } else {
            rotary_dim
        };

        // Axes.
        let axes = match self.either(dict, "mrope_section", &["mrope_section"])? {
            None => Axes::Single,
            Some((k, v)) => {
                let a = v
                    .as_array()
                    .ok_or_else(|| wrong(&k, "a list of 3 counts"))?;
                if a.len() != 3 {
                    return Err(ConfigError::new(
                        k,
                        ConfigErrorKind::OutOfRange,
                        format!("has {} entries, expected 3 (t, h, w)", a.len()),
                    ));
                }
                let mut s = [0usize; 3];
                for (i, x) in a.iter().enumerate() {
                    s[i] = num_usize(&k, x)?;
                }
                // HF's Qwen3-VL rotary (Qwen3-Omni's thinker's too) interleaves whatever the
                // file says; vLLM reads `mrope_interleaved`, so a file's value is taken.
                let flag = |k: &str, v: &Value| v.as_bool().ok_or_else(|| wrong(k, "a boolean"));
                let named = self.either(dict, "mrope_interleaved", &["mrope_interleaved"])?;
                let older = dict.get("interleaved").filter(|_| omni);
                let interleaved = match (named, older) {
                    (Some((nk, nv)), Some(ov)) => {
                        let n = flag(&nk, nv)?;
                        if flag(&dict.key("interleaved"), ov)? != n {
                            return Err(ConfigError::new(
                                dict.key("interleaved"),
                                ConfigErrorKind::Contradiction,
                                format!("differs from `{nk}`"),
                            ));
                        }
                        n
                    }
                    (Some((nk, nv)), None) => flag(&nk, nv)?,
                    (None, Some(ov)) => flag(&dict.key("interleaved"), ov)?,
                    (None, None) => {
                        omni || matches!(
                            model_type,
                            "qwen3_vl" | "qwen3_vl_text" | "qwen3_vl_moe" | "qwen3_vl_moe_text"
                        )
                    }
                };
                if interleaved {
                    Axes::MRopeInterleaved { sections: s }
                } else {
                    Axes::MRope { sections: s }
                }
            }
        };

        let f32_key = |k: &str| -> Result<Option<f32>, ConfigError> {
            dict.get(k).map(|v| num_f32(&dict.key(k), v)).transpose()
        };
        let factor_req = || -> Result<f32, ConfigError> {
            f32_key("factor")?.ok_or_else(|| {
                ConfigError::new(
                    dict.key("factor"),
                    ConfigErrorKind::Missing,
                    format!("required by rope type `{rope_type}`"),
                )
            })
        };
        let max_positions = self
            .u32("max_position_embeddings")?
            .map_or_else(|| self.u32("n_positions"), |m| Ok(Some(m)))?;
        let original = |required: bool| -> Result<Option<u32>, ConfigError> {
            match self.either(
                dict,
                "original_max_position_embeddings",
                &["original_max_position_embeddings"],
            )? {
                Some((k, v)) => Ok(Some(num_u32(&k, v)?)),
                None if required => Err(ConfigError::new(
                    dict.key("original_max_position_embeddings"),
                    ConfigErrorKind::Missing,
                    format!("required by rope type `{rope_type}`"),
                )),
                None => Ok(None),
            }
        };
        let need_max = |what: &str| {
            max_positions.ok_or_else(|| {
                ConfigError::new(
                    "max_position_embeddings",
                    ConfigErrorKind::Missing,
                    format!("required by rope type `{what}`"),
                )
            })
        };

        // The lists LongRoPE borrows live here until the Rope (which owns its frequencies) is
        // built.
        let list = |k: &str| -> Result<Vec<f32>, ConfigError> {
            let key = dict.key(k);
            let v = dict.get(k).ok_or_else(|| {
                ConfigError::new(
                    key.clone(),
                    ConfigErrorKind::Missing,
                    "required by rope type `longrope`",
                )
            })?;
            let a = v
                .as_array()
                .ok_or_else(|| wrong(&key, "a list of numbers"))?;
            a.iter().map(|x| num_f32(&key, x)).collect()
        };
        let (short, long);

        let scaling = match rope_type {
            "default" => Scaling::None,
            "dynamic" if ntk_alpha => Scaling::None, // in the base (above)
            "linear" => Scaling::Linear {
                factor: factor_req()?,
            },
            "dynamic" => {
                let max = match original(false)? {
                    Some(o) => o,
                    None => need_max("dynamic")?,
                };
                Scaling::DynamicNtk {
                    factor: factor_req()?,
                    max_positions: max,
                    seq_len: options.seq_len.unwrap_or(max),
                }
            }
            "yarn" => {
                let orig = match original(false)? {
                    Some(o) => o,
                    None => need_max("yarn")?,
                };
                // HF maps a missing or zero beta to its default.
                let beta = |k: &str, d: f32| -> Result<f32, ConfigError> {
                    Ok(f32_key(k)?.filter(|&b| b != 0.0).unwrap_or(d))
                };
                let truncate = match dict.get("truncate") {
                    None => true,
                    Some(v) => v
                        .as_bool()
                        .ok_or_else(|| wrong(&dict.key("truncate"), "a boolean"))?,
                };
                Scaling::Yarn(Yarn {
                    factor: factor_req()?,
                    original_max_positions: orig,
                    beta_fast: beta("beta_fast", 32.0)?,
                    beta_slow: beta("beta_slow", 1.0)?,
                    mscale: f32_key("mscale")?,
                    mscale_all_dim: f32_key("mscale_all_dim")?,
                    attention_factor: f32_key("attention_factor")?,
                    truncate,
                })
            }
            "longrope" => {
                short = list("short_factor")?;
                long = list("long_factor")?;
                let max = need_max("longrope")?;
                let orig = original(false)?.unwrap_or(max);
                let mut attention_factor = f32_key("attention_factor")?;
                if attention_factor.is_none()
                    && let Some(s) = f32_key("factor")?
                {
                    // HF 5 takes the scale from an explicit `factor`.
                    let s = s as f64;
                    if s > 1.0 && orig > 1 {
                        let m = libm::sqrt(1.0 + libm::log(s) / libm::log(orig as f64));
                        attention_factor = Some(m as f32);
                    } else {
                        attention_factor = Some(1.0);
                    }
                }
                Scaling::LongRope(LongRope {
                    short_factor: &short,
                    long_factor: &long,
                    original_max_positions: orig,
                    max_positions: max,
                    use_long: options.use_long_factors,
                    attention_factor,
                })
            }
            "llama3" => {
                let req = |k: &str| {
                    f32_key(k)?.ok_or_else(|| {
                        ConfigError::new(
                            dict.key(k),
                            ConfigErrorKind::Missing,
                            "required by rope type `llama3`",
                        )
                    })
                };
                Scaling::Llama3 {
                    factor: req("factor")?,
                    low_freq_factor: req("low_freq_factor")?,
                    high_freq_factor: req("high_freq_factor")?,
                    original_max_positions: original(true)?.unwrap_or(0),
                }
            }
            "proportional" => {
                let prf = match self.either(dict, "partial_rotary_factor", prf_top)? {
                    Some((k, v)) => num_f32(&k, v)?,
                    None => 1.0,
                };
                Scaling::Proportional {
                    partial_rotary_factor: prf,
                    factor: f32_key("factor")?.unwrap_or(1.0),
                }
            }
            _ => Scaling::None, // unreachable: refused above
        };

        // DeepSeek-V4 rotates the head's last channels (`[nope | rope]`, `x[..., -rd:]`).
        let offset = match model_type {
            "deepseek_v4" => head_dim.saturating_sub(rotary_dim),
            _ => 0,
        };
        let cfg = RopeConfig::new(head_dim, base, layout)
            .rotary_dim(rotary_dim)
            .rotary_offset(offset)
            .scaling(scaling)
            .axes(axes);
        let key = if rope_type == "default" && matches!(axes, Axes::Single) {
            if dict.map.is_some() {
                dict.key("rope_theta")
            } else {
                "head_dim".to_owned()
            }
        } else {
            dict.path.clone()
        };
        Rope::new(&cfg).map_err(rope_error(&key))
    }
}
