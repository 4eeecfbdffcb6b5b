//! GGUF metadata → [`Rope`] with llama.cpp's keys, layouts and semantics (no_std, no alloc).

use crate::axes::Axes;
use crate::error::Error;
use crate::rope::{Rope, RopeConfig};
use crate::scaling::Scaling;
use crate::types::Layout;
use core::fmt;

/// One GGUF metadata value, as a caller's lookup returns it.
///
/// Scalars carry their value; strings and arrays borrow from wherever the caller keeps the
/// metadata (a parsed header, a memory-mapped file, its own structures).
///
/// ```
/// use posenc::load::GgufValue;
/// let v = GgufValue::F32(500_000.0);
/// assert_eq!(v, GgufValue::F32(500_000.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GgufValue<'a> {
    /// GGUF type 0.
    U8(u8),
    /// GGUF type 1.
    I8(i8),
    /// GGUF type 2.
    U16(u16),
    /// GGUF type 3.
    I16(i16),
    /// GGUF type 4.
    U32(u32),
    /// GGUF type 5.
    I32(i32),
    /// GGUF type 6.
    F32(f32),
    /// GGUF type 7.
    Bool(bool),
    /// GGUF type 8 (UTF-8).
    Str(&'a str),
    /// GGUF type 9.
    Array(GgufArray<'a>),
    /// GGUF type 10.
    U64(u64),
    /// GGUF type 11.
    I64(i64),
    /// GGUF type 12.
    F64(f64),
}

/// The element type of a GGUF array (GGUF's `gguf_type` codes 0–12).
///
/// ```
/// assert_eq!(posenc::load::GgufType::from_code(5), Some(posenc::load::GgufType::I32));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GgufType {
    /// `uint8` (0).
    U8,
    /// `int8` (1).
    I8,
    /// `uint16` (2).
    U16,
    /// `int16` (3).
    I16,
    /// `uint32` (4).
    U32,
    /// `int32` (5).
    I32,
    /// `float32` (6).
    F32,
    /// `bool` (7).
    Bool,
    /// `string` (8).
    Str,
    /// `array` (9).
    Array,
    /// `uint64` (10).
    U64,
    /// `int64` (11).
    I64,
    /// `float64` (12).
    F64,
}

impl GgufType {
    /// The type of a GGUF type code, `None` for codes outside 0–12.
    ///
    /// ```
    /// use posenc::load::GgufType;
    /// assert_eq!(GgufType::from_code(12), Some(GgufType::F64));
    /// assert_eq!(GgufType::from_code(13), None);
    /// ```
    pub fn from_code(code: u32) -> Option<GgufType> {
        Some(match code {
            0 => GgufType::U8,
            1 => GgufType::I8,
            2 => GgufType::U16,
            3 => GgufType::I16,
            4 => GgufType::U32,
            5 => GgufType::I32,
            6 => GgufType::F32,
            7 => GgufType::Bool,
            8 => GgufType::Str,
            9 => GgufType::Array,
            10 => GgufType::U64,
            11 => GgufType::I64,
            12 => GgufType::F64,
            _ => return None,
        })
    }

    /// Bytes per element for fixed-size types; `None` for strings and arrays.
    ///
    /// ```
    /// assert_eq!(posenc::load::GgufType::U64.fixed_size(), Some(8));
    /// assert_eq!(posenc::load::GgufType::Str.fixed_size(), None);
    /// ```
    pub fn fixed_size(self) -> Option<usize> {
        Some(match self {
            GgufType::U8 | GgufType::I8 | GgufType::Bool => 1,
            GgufType::U16 | GgufType::I16 => 2,
            GgufType::U32 | GgufType::I32 | GgufType::F32 => 4,
            GgufType::U64 | GgufType::I64 | GgufType::F64 => 8,
            GgufType::Str | GgufType::Array => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ArrayRepr<'a> {
    /// Elements of a fixed-size type, little-endian, back to back (as in a GGUF file).
    Le {
        elem: GgufType,
        len: usize,
        bytes: &'a [u8],
    },
    I32(&'a [i32]),
    U32(&'a [u32]),
    F32(&'a [f32]),
    /// Strings or nested arrays, as their encoded bytes (not decoded element by element).
    #[cfg_attr(not(feature = "gguf"), allow(dead_code))]
    Opaque {
        elem: GgufType,
        len: usize,
        bytes: &'a [u8],
    },
}

/// A GGUF array value: either little-endian bytes of fixed-size elements (as a file holds
/// them) or a typed slice the caller already has. Arrays of strings or arrays are not read by
/// the RoPE keys; [`GgufArray::get`] returns `None` for them.
///
/// ```
/// use posenc::load::{GgufArray, GgufValue};
/// let sections = GgufArray::from_i32(&[16, 24, 24, 0]);
/// assert_eq!(sections.len(), 4);
/// assert_eq!(sections.get(1), Some(GgufValue::I32(24)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GgufArray<'a>(ArrayRepr<'a>);

impl<'a> GgufArray<'a> {
    /// An array of `len` elements of the fixed-size type `elem`, stored little-endian in
    /// `bytes`. `None` if `elem` is a string or array type, or `bytes` is not exactly
    /// `len` elements long.
    ///
    /// ```
    /// use posenc::load::{GgufArray, GgufType, GgufValue};
    /// let a = GgufArray::from_le_bytes(GgufType::U16, 2, &[1, 0, 2, 1]).unwrap();
    /// assert_eq!(a.get(1), Some(GgufValue::U16(258)));
    /// assert!(GgufArray::from_le_bytes(GgufType::U16, 3, &[1, 0]).is_none());
    /// ```
    pub fn from_le_bytes(elem: GgufType, len: usize, bytes: &'a [u8]) -> Option<GgufArray<'a>> {
        let size = elem.fixed_size()?;
        if len.checked_mul(size)? != bytes.len() {
            return None;
        }
        Some(GgufArray(ArrayRepr::Le { elem, len, bytes }))
    }

    /// An array of strings or arrays, kept as its encoded bytes.
    #[cfg(feature = "gguf")]
    pub(crate) fn opaque(elem: GgufType, len: usize, bytes: &'a [u8]) -> GgufArray<'a> {
        GgufArray(ArrayRepr::Opaque { elem, len, bytes })
    }

    /// An `int32` array from a slice.
    ///
    /// ```
    /// assert_eq!(posenc::load::GgufArray::from_i32(&[1, 2]).len(), 2);
    /// ```
    pub fn from_i32(values: &'a [i32]) -> GgufArray<'a> {
        GgufArray(ArrayRepr::I32(values))
    }

    /// A `uint32` array from a slice.
    ///
    /// ```
    /// assert_eq!(posenc::load::GgufArray::from_u32(&[1, 2, 3]).len(), 3);
    /// ```
    pub fn from_u32(values: &'a [u32]) -> GgufArray<'a> {
        GgufArray(ArrayRepr::U32(values))
    }

    /// A `float32` array from a slice.
    ///
    /// ```
    /// assert!(posenc::load::GgufArray::from_f32(&[]).is_empty());
    /// ```
    pub fn from_f32(values: &'a [f32]) -> GgufArray<'a> {
        GgufArray(ArrayRepr::F32(values))
    }

    /// The element type.
    ///
    /// ```
    /// use posenc::load::{GgufArray, GgufType};
    /// assert_eq!(GgufArray::from_f32(&[1.0]).elem_type(), GgufType::F32);
    /// ```
    pub fn elem_type(&self) -> GgufType {
        match self.0 {
            ArrayRepr::Le { elem, .. } | ArrayRepr::Opaque { elem, .. } => elem,
            ArrayRepr::I32(_) => GgufType::I32,
            ArrayRepr::U32(_) => GgufType::U32,
            ArrayRepr::F32(_) => GgufType::F32,
        }
    }

    /// Number of elements.
    ///
    /// ```
    /// assert_eq!(posenc::load::GgufArray::from_u32(&[7]).len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        match self.0 {
            ArrayRepr::Le { len, .. } | ArrayRepr::Opaque { len, .. } => len,
            ArrayRepr::I32(v) => v.len(),
            ArrayRepr::U32(v) => v.len(),
            ArrayRepr::F32(v) => v.len(),
        }
    }

    /// True for an empty array.
    ///
    /// ```
    /// assert!(!posenc::load::GgufArray::from_i32(&[0]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The little-endian encoded elements, as a GGUF file stores them (`None` for an array
    /// built from a typed slice).
    ///
    /// ```
    /// use posenc::load::{GgufArray, GgufType};
    /// let a = GgufArray::from_le_bytes(GgufType::U8, 2, &[7, 9]).unwrap();
    /// assert_eq!(a.as_le_bytes(), Some(&[7u8, 9][..]));
    /// assert_eq!(GgufArray::from_i32(&[1]).as_le_bytes(), None);
    /// ```
    pub fn as_le_bytes(&self) -> Option<&'a [u8]> {
        match self.0 {
            ArrayRepr::Le { bytes, .. } | ArrayRepr::Opaque { bytes, .. } => Some(bytes),
            _ => None,
        }
    }

    /// Element `i` as a scalar value; `None` past the end.
    ///
    /// ```
    /// use posenc::load::{GgufArray, GgufValue};
    /// assert_eq!(GgufArray::from_f32(&[0.5]).get(0), Some(GgufValue::F32(0.5)));
    /// assert_eq!(GgufArray::from_f32(&[0.5]).get(1), None);
    /// ```
    pub fn get(&self, i: usize) -> Option<GgufValue<'a>> {
        match self.0 {
            ArrayRepr::I32(v) => v.get(i).map(|&x| GgufValue::I32(x)),
            ArrayRepr::U32(v) => v.get(i).map(|&x| GgufValue::U32(x)),
            ArrayRepr::F32(v) => v.get(i).map(|&x| GgufValue::F32(x)),
            ArrayRepr::Opaque { .. } => None,
            ArrayRepr::Le { elem, len, bytes } => {
                if i >= len {
                    return None;
                }
                let size = elem.fixed_size()?;
                let b = bytes.get(i * size..(i + 1) * size)?;
                scalar_from_le(elem, b)
            }
        }
    }
}

/// Decodes one fixed-size little-endian scalar (`b` has exactly its size).
pub(crate) fn scalar_from_le(elem: GgufType, b: &[u8]) -> Option<GgufValue<'static>> {
    let a2 = || -> Option<[u8; 2]> { b.try_into().ok() };
    let a4 = || -> Option<[u8; 4]> { b.try_into().ok() };
    let a8 = || -> Option<[u8; 8]> { b.try_into().ok() };
    Some(match elem {
        GgufType::U8 => GgufValue::U8(*b.first()?),
        GgufType::I8 => GgufValue::I8(*b.first()? as i8),
        GgufType::Bool => GgufValue::Bool(*b.first()? != 0),
        GgufType::U16 => GgufValue::U16(u16::from_le_bytes(a2()?)),
        GgufType::I16 => GgufValue::I16(i16::from_le_bytes(a2()?)),
        GgufType::U32 => GgufValue::U32(u32::from_le_bytes(a4()?)),
        GgufType::I32 => GgufValue::I32(i32::from_le_bytes(a4()?)),
        GgufType::F32 => GgufValue::F32(f32::from_le_bytes(a4()?)),
        GgufType::U64 => GgufValue::U64(u64::from_le_bytes(a8()?)),
        GgufType::I64 => GgufValue::I64(i64::from_le_bytes(a8()?)),
        GgufType::F64 => GgufValue::F64(f64::from_le_bytes(a8()?)),
        GgufType::Str | GgufType::Array => return None,
    })
}

impl GgufValue<'_> {
    /// The value as a non-negative integer, if it is an integer of any width that fits `u64`.
    fn as_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U8(v) => Some(v as u64),
            GgufValue::U16(v) => Some(v as u64),
            GgufValue::U32(v) => Some(v as u64),
            GgufValue::U64(v) => Some(v),
            GgufValue::I8(v) => u64::try_from(v).ok(),
            GgufValue::I16(v) => u64::try_from(v).ok(),
            GgufValue::I32(v) => u64::try_from(v).ok(),
            GgufValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as f32 (`float32`, or `float64` rounded to f32).
    fn as_f32(&self) -> Option<f32> {
        match *self {
            GgufValue::F32(v) => Some(v),
            GgufValue::F64(v) => Some(v as f32),
            _ => None,
        }
    }
}

/// What was wrong with a GGUF metadata value.
///
/// ```
/// use posenc::load::GgufErrorKind;
/// assert_ne!(GgufErrorKind::Missing, GgufErrorKind::WrongType);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GgufErrorKind {
    /// A required key is absent.
    Missing,
    /// The value has a type the key never has (e.g. a string where a count belongs).
    WrongType,
    /// The value is of the right type but out of range (zero dims, an odd rotary dim, a
    /// negative factor, an integer that does not fit, ...).
    OutOfRange,
    /// The value names something llama.cpp does not know (an architecture, a scaling type).
    Unknown,
    /// The model does not use RoPE: its architecture is llama.cpp's `LLAMA_ROPE_TYPE_NONE`, or
    /// one whose graph applies none (StarCoder and BERT, on `general.architecture`), or a
    /// model its graph runs without (Baichuan other than 32 blocks, on `block_count`; Granite
    /// with `rope.scaling.finetuned` false).
    NoRope,
    /// Settings that posenc (or llama.cpp) cannot combine, e.g. M-RoPE with YaRN.
    Unsupported,
    /// The formatted key `{arch}.…` does not fit the internal buffer (architecture name
    /// longer than 64 bytes).
    KeyTooLong,
}

/// A GGUF metadata error: which key (without the `{arch}.` prefix for per-architecture keys,
/// e.g. `"rope.scaling.type"`; `"rope_freqs"` for the caller's tensor) and what was wrong.
///
/// ```
/// use posenc::load::{rope_from_gguf, GgufErrorKind, GgufValue};
/// let err = rope_from_gguf(|_| None::<GgufValue<'static>>, None).unwrap_err();
/// assert_eq!((err.key, err.kind), ("general.architecture", GgufErrorKind::Missing));
/// println!("{err}");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GgufError {
    /// The key (per-architecture keys without their `{arch}.` prefix).
    pub key: &'static str,
    /// What was wrong.
    pub kind: GgufErrorKind,
    /// The [`Rope`] construction error behind an `OutOfRange`, if that is where it came from.
    pub rope: Option<Error>,
}

impl GgufError {
    fn new(key: &'static str, kind: GgufErrorKind) -> GgufError {
        GgufError {
            key,
            kind,
            rope: None,
        }
    }
}

impl fmt::Display for GgufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            GgufErrorKind::Missing => "is missing",
            GgufErrorKind::WrongType => "has the wrong type",
            GgufErrorKind::OutOfRange => "is out of range",
            GgufErrorKind::Unknown => "names something llama.cpp does not know",
            GgufErrorKind::NoRope => "describes a model without RoPE",
            GgufErrorKind::Unsupported => "asks for a combination posenc cannot build",
            GgufErrorKind::KeyTooLong => "is too long once prefixed with the architecture",
        };
        let prefix = if self.key.starts_with("general.") || self.key == "rope_freqs" {
            ""
        } else {
            "{arch}."
        };
        write!(f, "GGUF key `{prefix}{}` {what}", self.key)?;
        if let Some(e) = self.rope {
            write!(f, ": {e}")?;
        }
        Ok(())
    }
}

impl core::error::Error for GgufError {}

/// How llama.cpp rotates an architecture (`llama_model_rope_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RopeKind {
    Norm,
    Neox,
    MRope,
    IMRope,
    /// GLM-4: NORM, or M-RoPE when `rope.dimension_sections` is set.
    NormOrMRope,
    /// GLM-4 MoE, HunYuan VL: NEOX, or M-RoPE when sections are set.
    NeoxOrMRope,
    None,
}

/// llama.cpp's `llama_model_rope_type`, by GGUF architecture name (`LLM_ARCH_NAMES`).
fn rope_kind(arch: &str) -> Option<RopeKind> {
    Some(match arch {
        "clip" | "gpt2" | "gptj" | "mpt" | "refact" | "bloom" | "mamba" | "mamba2" | "jamba"
        | "jina-bert-v2" | "t5" | "t5encoder" | "jais" | "rwkv6" | "rwkv6qwen2" | "rwkv7"
        | "arwkv7" | "wavtokenizer-dec" | "nemotron_h" | "nemotron_h_moe" | "kimi-linear" => {
            RopeKind::None
        }
        "llama" | "llada" | "llama4" | "deci" | "baichuan" | "starcoder" | "internlm2"
        | "minicpm" | "xverse" | "command-r" | "cohere2" | "cohere2moe" | "olmo" | "arctic"
        | "deepseek" | "deepseek2" | "deepseek2-ocr" | "deepseek32" | "deepseek4" | "plm"
        | "chatglm" | "granite" | "granitemoe" | "granitehybrid" | "chameleon" | "bailingmoe"
        | "neo-bert" | "smollm3" | "arcee" | "ernie4_5" | "ernie4_5-moe" | "mistral3"
        | "eagle3" | "mistral4" | "llama-embed" | "maincoder" | "glm-dsa" => RopeKind::Norm,
        "falcon" | "falcon-h1" | "grok" | "dbrx" | "bert" | "jina-bert-v3" | "modern-bert"
        | "nomic-bert" | "nomic-bert-moe" | "eurobert" | "stablelm" | "bitnet" | "qwen"
        | "qwen2" | "dream" | "qwen2moe" | "qwen3" | "qwen3moe" | "llada-moe" | "rnd1"
        | "olmo2" | "olmoe" | "phi2" | "phi3" | "phimoe" | "plamo" | "plamo2" | "plamo3"
        | "gemma" | "gemma2" | "gemma3" | "gemma3n" | "gemma4" | "gemma4-assistant"
        | "gemma-embedding" | "starcoder2" | "openelm" | "gptneox" | "codeshell" | "orion"
        | "nemotron" | "exaone" | "exaone4" | "exaone-moe" | "minicpm3" | "bailingmoe2"
        | "dots1" | "hunyuan-moe" | "jais2" | "gpt-oss" | "hunyuan-dense" | "hy_v3" | "lfm2"
        | "lfm2moe" | "smallthinker" | "seed_oss" | "grovemoe" | "apertus" | "minimax-m2"
        | "cogvlm" | "pangu-embedded" | "afmoe" | "laguna" | "qwen3next" | "mimo2" | "step35"
        | "talkie" | "mellum" => RopeKind::Neox,
        "qwen2vl" | "paddleocr" => RopeKind::MRope,
        "qwen3vl" | "qwen3vlmoe" | "qwen35" | "qwen35moe" => RopeKind::IMRope,
        "glm4" => RopeKind::NormOrMRope,
        "glm4moe" | "hunyuan_vl" => RopeKind::NeoxOrMRope,
        _ => return None,
    })
}

/// Architectures whose RoPE rotates only a `rope.dimension_count`-wide part of a longer head
/// (MLA's decoupled `q_pe`/`k_pe`): the returned [`Rope`] has `head_dim = rotary_dim`, as
/// [`presets::DEEPSEEK_V3`](crate::presets::DEEPSEEK_V3).
fn rope_part_only(arch: &str) -> bool {
    matches!(
        arch,
        "deepseek2" | "deepseek2-ocr" | "deepseek32" | "minicpm3" | "glm-dsa" | "plm"
    )
}

/// A key `{arch}.{suffix}` formatted into a fixed buffer.
struct KeyBuf {
    buf: [u8; 128],
    len: usize,
}

impl KeyBuf {
    fn new(arch: &str, suffix: &'static str) -> Result<KeyBuf, GgufError> {
        let mut k = KeyBuf {
            buf: [0; 128],
            len: 0,
        };
        let total = arch.len() + 1 + suffix.len();
        if arch.len() > 64 || total > k.buf.len() {
            return Err(GgufError::new(suffix, GgufErrorKind::KeyTooLong));
        }
        k.buf[..arch.len()].copy_from_slice(arch.as_bytes());
        k.buf[arch.len()] = b'.';
        k.buf[arch.len() + 1..total].copy_from_slice(suffix.as_bytes());
        k.len = total;
        Ok(k)
    }

    fn as_str(&self) -> &str {
        // Concatenation of two valid UTF-8 strings and an ASCII dot.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

struct Meta<'l, F> {
    lookup: &'l F,
    arch: &'l str,
}

impl<'a, F: Fn(&str) -> Option<GgufValue<'a>>> Meta<'_, F> {
    fn get(&self, suffix: &'static str) -> Result<Option<GgufValue<'a>>, GgufError> {
        let key = KeyBuf::new(self.arch, suffix)?;
        Ok((self.lookup)(key.as_str()))
    }

    fn u32(&self, suffix: &'static str) -> Result<Option<u32>, GgufError> {
        match self.get(suffix)? {
            None => Ok(None),
            Some(v) => {
                let n = v
                    .as_u64()
                    .ok_or(GgufError::new(suffix, GgufErrorKind::WrongType))?;
                u32::try_from(n)
                    .map(Some)
                    .map_err(|_| GgufError::new(suffix, GgufErrorKind::OutOfRange))
            }
        }
    }

    fn f32(&self, suffix: &'static str) -> Result<Option<f32>, GgufError> {
        match self.get(suffix)? {
            None => Ok(None),
            Some(v) => {
                let x = v
                    .as_f32()
                    .ok_or(GgufError::new(suffix, GgufErrorKind::WrongType))?;
                if x.is_finite() {
                    Ok(Some(x))
                } else {
                    Err(GgufError::new(suffix, GgufErrorKind::OutOfRange))
                }
            }
        }
    }
}

/// llama.cpp's `rope_yarn_ramp`: `1 − clamp((j − lo) / max(0.001, hi − lo), 0, 1)` in f32.
fn yarn_ramp(lo: f32, hi: f32, j: usize) -> f32 {
    let y = (j as f32 - lo) / (hi - lo).max(0.001);
    1.0 - y.clamp(0.0, 1.0)
}

/// ggml's `ggml_rope_yarn_corr_dim`, in f32 as ggml computes it.
fn yarn_corr_dim(n_dims: usize, n_ctx_orig: u32, n_rot: f32, base: f32) -> f32 {
    n_dims as f32 * libm::logf(n_ctx_orig as f32 / (n_rot * 2.0 * core::f32::consts::PI))
        / (2.0 * libm::logf(base))
}

/// llama.cpp's `get_mscale` (f32).
fn get_mscale(scale: f32, mscale: f32) -> f32 {
    if scale <= 1.0 {
        1.0
    } else {
        0.1 * mscale * libm::logf(scale) + 1.0
    }
}

fn rope_err(key: &'static str) -> impl Fn(Error) -> GgufError {
    move |e| GgufError {
        key,
        kind: GgufErrorKind::OutOfRange,
        rope: Some(e),
    }
}

/// The file's `general.architecture` and how llama.cpp rotates it: an error for an unknown
/// architecture or one without RoPE.
fn architecture<'a, F>(lookup: &F) -> Result<(&'a str, RopeKind), GgufError>
where
    F: Fn(&str) -> Option<GgufValue<'a>>,
{
    const ARCH: &str = "general.architecture";
    let arch = match lookup(ARCH) {
        Some(GgufValue::Str(s)) => s,
        Some(_) => return Err(GgufError::new(ARCH, GgufErrorKind::WrongType)),
        None => return Err(GgufError::new(ARCH, GgufErrorKind::Missing)),
    };
    let kind = rope_kind(arch).ok_or(GgufError::new(ARCH, GgufErrorKind::Unknown))?;
    if kind == RopeKind::None {
        return Err(GgufError::new(ARCH, GgufErrorKind::NoRope));
    }
    let meta = Meta { lookup, arch };
    match arch {
        // `llama_model_rope_type` names a rope for these, but their graphs apply none:
        // StarCoder (GPT-BigCode) and BERT add learned position embeddings (`pos_embd`); BERT's
        // graph ropes only NomicBERT and Jina v3.
        "starcoder" | "bert" => return Err(GgufError::new(ARCH, GgufErrorKind::NoRope)),
        // The graph ropes only `LLM_TYPE_7B`, which is 32 blocks; the 13B (40, ALiBi) and
        // unknown sizes run without. `block_count` is required, as llama.cpp requires it.
        "baichuan" => match meta.u32("block_count")? {
            Some(32) => {}
            Some(_) => return Err(GgufError::new("block_count", GgufErrorKind::NoRope)),
            None => return Err(GgufError::new("block_count", GgufErrorKind::Missing)),
        },
        // Granite "uses rope_finetuned as a switch for rope, so default to true": a file that
        // sets it false (Granite 4.0-H) builds no positions and skips both rope calls.
        "granite" | "granitemoe" | "granitehybrid" => {
            const SWITCH: &str = "rope.scaling.finetuned";
            match meta.get(SWITCH)? {
                None | Some(GgufValue::Bool(true)) => {}
                Some(GgufValue::Bool(false)) => {
                    return Err(GgufError::new(SWITCH, GgufErrorKind::NoRope));
                }
                Some(_) => return Err(GgufError::new(SWITCH, GgufErrorKind::WrongType)),
            }
        }
        _ => {}
    }
    Ok((arch, kind))
}

/// Whether llama.cpp applies the rope at decoder layer `layer` (from 0) of a GGUF model:
/// false for a layer its graph runs without position encoding (a NoPE layer), whose queries
/// and keys a runtime must leave unrotated. The rope of a layer that has one is
/// [`rope_from_gguf_layer`]'s.
///
/// llama.cpp decides this per architecture, from no key of its own (its
/// `n_no_rope_layer_step` is a constant) and from the sliding-window layout:
///
/// | architecture | layers without rope |
/// |---|---|
/// | `llama4` | every fourth (`(layer + 1) % 4 == 0`); none when `attention.sliding_window` is 0 |
/// | `smollm3`, `afmoe` | every fourth (`(layer + 1) % 4 == 0`) |
/// | `cohere2` | the dense (non-sliding) ones: the last of every `attention.sliding_window_pattern` (4) |
/// | `exaone4` | with 64 blocks (EXAONE 4.0 32B), the last of every `attention.sliding_window_pattern` (4); otherwise none |
/// | `smallthinker` | with `attention.sliding_window` > 0, the first of every four (`layer % 4 == 0`); otherwise none |
/// | any other | none |
///
/// llama.cpp reads `attention.sliding_window_pattern` as one number (a per-layer array leaves
/// the default), as here. For `llama4` with `attention.sliding_window` 0 (MobileLLM), its
/// comment says "always use rope" and its older graph does; a later refactor of its Llama 4
/// graph leaves the last layer unrotated. This follows the comment.
///
/// Errors: as [`rope_from_gguf`] for the architecture (missing, unknown, without RoPE); a
/// key of the wrong type; [`GgufErrorKind::OutOfRange`] on `block_count` when the file has
/// it and `layer` is not below it; [`GgufErrorKind::Missing`] on `block_count` for
/// `exaone4`, whose rule depends on it. Reads no more than those keys; `no_std`, no
/// allocation.
///
/// ```
/// use posenc::load::{gguf_layer_rotates, GgufValue};
/// // SmolLM3-3B: 36 blocks, every fourth without rope.
/// let meta = |key: &str| match key {
///     "general.architecture" => Some(GgufValue::Str("smollm3")),
///     "smollm3.block_count" => Some(GgufValue::U32(36)),
///     _ => None,
/// };
/// let nope: Vec<u32> = (0..36).filter(|&l| !gguf_layer_rotates(meta, l).unwrap()).collect();
/// assert_eq!(nope, [3, 7, 11, 15, 19, 23, 27, 31, 35]);
/// assert!(gguf_layer_rotates(meta, 36).is_err());
/// ```
pub fn gguf_layer_rotates<'a, F>(lookup: F, layer: u32) -> Result<bool, GgufError>
where
    F: Fn(&str) -> Option<GgufValue<'a>>,
{
    let (arch, _) = architecture(&lookup)?;
    let meta = Meta {
        lookup: &lookup,
        arch,
    };
    const BLOCKS: &str = "block_count";
    let blocks = meta.u32(BLOCKS)?;
    if blocks.is_some_and(|n| layer >= n) {
        return Err(GgufError::new(BLOCKS, GgufErrorKind::OutOfRange));
    }
    let window = || meta.u32("attention.sliding_window");
    Ok(match arch {
        // `use_rope = n_no_rope_layer_step > 0 && (il + 1) % n_no_rope_layer_step != 0`, the
        // step 4 (llama.cpp's constant) unless Llama 4 has no chunked attention. (Written
        // `il % 4 != 3`, which cannot overflow.)
        "llama4" => window()? == Some(0) || layer % 4 != 3,
        "smollm3" | "afmoe" => layer % 4 != 3,
        // The rope only on sliding layers.
        "cohere2" => slides(&meta, layer, 4, Array::Ignored)?,
        "exaone4" => match blocks {
            None => return Err(GgufError::new(BLOCKS, GgufErrorKind::Missing)),
            Some(64) => slides(&meta, layer, 4, Array::Ignored)?,
            Some(_) => true,
        },
        // `use_rope = step == n_layer || il % step != 0`: step 4 with a sliding window, else
        // the block count.
        "smallthinker" => match window()? {
            Some(w) if w > 0 => blocks == Some(4) || !layer.is_multiple_of(4),
            _ => true,
        },
        _ => true,
    })
}

/// Builds the [`Rope`] llama.cpp would use for a GGUF model, from its metadata: the rope of
/// every layer that has one, or, for a model whose sliding-window layers rotate differently
/// (Gemma 3, Gemma 3n, Gemma 4, OLMo 3, MiMo-V2, Step 3.5, …), of its global layers;
/// [`rope_from_gguf_layer`] gives each layer's. Step 3.5's global layers rotate half of
/// `rope.dimension_count` (llama.cpp halves it for them) with the first half of `rope_freqs`
/// (one tensor sized for the sliding layers' wider rope). DeepSeek-V4's (`deepseek4`) is
/// that of its layers with a compressor (see [`rope_from_gguf_layer`]), over the head's last
/// `rope.dimension_count` channels.
///
/// `lookup` returns the value of a metadata key (full key, e.g. `"llama.rope.freq_base"`), or
/// `None` if the file does not have it. `rope_freqs` is the content of the model's frequency
/// factor tensor if it has one (`rope_freqs.weight`, which llama.cpp's converter writes for
/// Llama 3.1/3.2's llama3 scaling; or the one of `rope_factors_long.weight` /
/// `rope_factors_short.weight` the runtime chose, for LongRoPE models such as Phi-3), as f32
/// values, `rope.dimension_count / 2` of them. Neither allocates; the function is `no_std`.
///
/// Keys read (llama.cpp's names and defaults, `llama_model::load_hparams` and
/// `llama_context`'s constructor):
///
/// | key | default | use |
/// |---|---|---|
/// | `general.architecture` | required | the `{arch}` prefix and the pairing ([`Layout`]) |
/// | `{arch}.rope.dimension_count` | head dim | rotary dim |
/// | `{arch}.attention.key_length` | `embedding_length / attention.head_count` | head dim |
/// | `{arch}.rope.freq_base` | 10000 | base |
/// | `{arch}.rope.scaling.type` | `"linear"` | `none`, `linear`, `yarn`, `longrope` |
/// | `{arch}.rope.scaling.factor` (else `{arch}.rope.scale_linear`) | 0 (= 1) | `freq_scale = 1/factor` |
/// | `{arch}.rope.scaling.original_context_length` | `{arch}.context_length` | YaRN `n_ctx_orig` |
/// | `{arch}.rope.scaling.attn_factor` | 1 | multiplies the magnitude |
/// | `{arch}.rope.scaling.yarn_ext_factor` | 1 for YaRN, else 0 | ramp weight |
/// | `{arch}.rope.scaling.yarn_attn_factor` | 1 | magnitude when `ext_factor` is 0 |
/// | `{arch}.rope.scaling.yarn_beta_fast` / `_slow` | 32 / 1 | correction dims |
/// | `{arch}.rope.scaling.yarn_log_multiplier` | 0 | `0.1·mscale_all_dim` (divided by 0.1, as llama.cpp) |
/// | `{arch}.rope.dimension_sections` | none | M-RoPE sections `[t, h, w, e]` |
///
/// Pairing follows `llama_model_rope_type`: NORM architectures (`llama`, `deepseek2`,
/// `chatglm`, `glm4`, `command-r`, …) get [`Layout::Interleaved`]; NEOX ones (`qwen2`,
/// `qwen3`, `phi3`, `gemma*`, `gptneox`, `olmo2`, `gpt-oss`, …) [`Layout::RotateHalf`];
/// `qwen2vl` M-RoPE and `qwen3vl` interleaved M-RoPE ([`Axes`]) with rotate_half pairs.
/// (llama.cpp's converter permutes Llama's Q/K weights to interleaved order, which is why a
/// Llama GGUF pairs `(2i, 2i+1)` while the HF checkpoint pairs `(i, i + d/2)`.) For MLA
/// architectures (`deepseek2`, …) the rope covers the `rope.dimension_count` channels of
/// `q_pe`/`k_pe`, so `head_dim = rotary_dim`.
///
/// Frequencies and magnitude follow llama.cpp's semantics, formed per pair instead of per
/// angle (posenc's angles are exact products `p·ω_j`):
/// * `ω_j` is posenc's framework frequency `1/f32(b^(2j/d))` (ggml: the running f32 product of
///   `powf(b, −2/d)`, a few ulp away), divided by `rope_freqs[j]` in f32;
/// * `θ_interp = freq_scale·ω`, and with `ext_factor ≠ 0` the YaRN mix
///   `θ_interp·(1 − r_j) + ω·r_j` with ggml's ramp `r_j = ext_factor·(1 − clamp((j − lo) /
///   max(0.001, hi − lo), 0, 1))` and correction dims `lo = max(0, floor(c(β_fast)))`,
///   `hi = min(d − 1, ceil(c(β_slow)))`, `c(n) = d·ln(n_ctx_orig/(2πn)) / (2 ln b)`, all f32;
/// * magnitude: llama.cpp's `yarn_attn_factor` resolution (with `ext_factor ≠ 0`:
///   `g(s, mscale)/g(s, mscale_all_dim)` or `g(s, 1)`, divided by `1 + 0.1 ln s`), times
///   `rope.scaling.attn_factor`, times ggml's in-op `1 + 0.1 ln(1/freq_scale)`, in f32.
///
/// Differences from HF's reading of the same model are in the [module docs](crate::load).
///
/// ```
/// use posenc::load::{rope_from_gguf, GgufValue};
/// use posenc::Layout;
/// // A Llama 3 8B GGUF: llama.cpp's "llama" architecture pairs interleaved channels.
/// let meta = |key: &str| match key {
///     "general.architecture" => Some(GgufValue::Str("llama")),
///     "llama.rope.dimension_count" => Some(GgufValue::U32(128)),
///     "llama.attention.head_count" => Some(GgufValue::U32(32)),
///     "llama.embedding_length" => Some(GgufValue::U32(4096)),
///     "llama.rope.freq_base" => Some(GgufValue::F32(500_000.0)),
///     _ => None,
/// };
/// let rope = rope_from_gguf(meta, None).unwrap();
/// assert_eq!((rope.head_dim(), rope.rotary_dim(), rope.layout()), (128, 128, Layout::Interleaved));
/// assert_eq!(rope.inv_freq(), posenc::presets::LLAMA_3_8B.rope().unwrap().inv_freq());
/// ```
pub fn rope_from_gguf<'a, F>(lookup: F, rope_freqs: Option<&[f32]>) -> Result<Rope, GgufError>
where
    F: Fn(&str) -> Option<GgufValue<'a>>,
{
    build(&lookup, rope_freqs, Swa::Global)
}

/// The rope llama.cpp applies at decoder layer `layer` (from 0) of a GGUF model: `None` where
/// its graph runs the layer without rope ([`gguf_layer_rotates`]), else [`rope_from_gguf`]'s
/// rope, except on the sliding-window layers of the architectures whose graphs rotate those
/// differently:
///
/// | architecture | sliding-window layers | their rope |
/// |---|---|---|
/// | `gemma3` | all but the last of every `attention.sliding_window_pattern` (6), or the layers a per-layer array of that key marks | base `rope.freq_base_swa` (10000), unscaled (`rope_freq_scale_train_swa = 1`) |
/// | `gemma3n` | all but the last of every `attention.sliding_window_pattern` (5), or as its per-layer array marks | base `rope.freq_base_swa` (10000), unscaled |
/// | `gemma-embedding` (EmbeddingGemma) | as `gemma3`, whatever the window | as `gemma3` |
/// | `mimo2` | as the required per-layer `attention.sliding_window_pattern` marks (one number: every layer) | base `rope.freq_base_swa` (10000), unscaled |
/// | `gemma4`, `step35` | as `mimo2` | heads `attention.key_length_swa` wide (required for `gemma4`; else `attention.key_length`) rotating `rope.dimension_count_swa` channels (default: the full layers' `rope.dimension_count`, before Step 3.5's halving), base `rope.freq_base_swa` (10000), unscaled, no frequency factors |
/// | `olmo2` (OLMo 3), with `attention.sliding_window` > 0 | all but the last of every `attention.sliding_window_pattern` (4), or as its per-layer array marks | the file's base, no scaling, no YaRN, magnitude 1 |
/// | `modern-bert`, with `attention.sliding_window` > 0 | all but the first of every `attention.sliding_window_pattern` (3) | base `rope.freq_base_swa` (10000), the file's scale |
/// | `deepseek4` | those whose required `attention.compress_ratios` entry is 0 | the file's base, no scaling, no YaRN, magnitude 1 (the others, with a compressor: `attention.compress_rope_freq_base`, the file's YaRN with betas 32 / 1, magnitude 1) |
/// | `gpt-oss`, `gemma2` | the even ones | with `rope.freq_base_swa` set, that base; everything else the file's |
/// | `llama4` (with a chunk window), `afmoe` and `smallthinker` (with a sliding window) | every layer that rotates | as `gpt-oss` |
///
/// Other architectures rotate every layer that has a rope with the file's settings.
/// `rope_freqs` as for [`rope_from_gguf`]; llama.cpp rotates the sliding layers of OLMo 3,
/// Gemma 4 and Step 3.5 without factors, and so does this.
///
/// Errors: [`gguf_layer_rotates`]'s, then [`rope_from_gguf`]'s; a sliding-window pattern of
/// the wrong type, or for `mimo2`, `gemma4` and `step35` none, or a list without this layer;
/// `gemma4` without `attention.key_length_swa`.
///
/// ```
/// use posenc::load::{rope_from_gguf_layer, GgufValue};
/// // Gemma 3 4B: global layers θ = 1e6 with linear ×8; five of every six slide, θ = 1e4.
/// let meta = |key: &str| match key {
///     "general.architecture" => Some(GgufValue::Str("gemma3")),
///     "gemma3.block_count" => Some(GgufValue::U32(34)),
///     "gemma3.attention.key_length" => Some(GgufValue::U32(256)),
///     "gemma3.rope.freq_base" => Some(GgufValue::F32(1e6)),
///     "gemma3.rope.scaling.type" => Some(GgufValue::Str("linear")),
///     "gemma3.rope.scaling.factor" => Some(GgufValue::F32(8.0)),
///     _ => None,
/// };
/// let global = rope_from_gguf_layer(meta, None, 5).unwrap().unwrap();
/// let local = rope_from_gguf_layer(meta, None, 4).unwrap().unwrap();
/// assert_eq!(global, posenc::presets::GEMMA_3_4B_GLOBAL.rope().unwrap());
/// assert_eq!(local, posenc::presets::GEMMA_3_4B_LOCAL.rope().unwrap());
/// ```
pub fn rope_from_gguf_layer<'a, F>(
    lookup: F,
    rope_freqs: Option<&[f32]>,
    layer: u32,
) -> Result<Option<Rope>, GgufError>
where
    F: Fn(&str) -> Option<GgufValue<'a>>,
{
    if !gguf_layer_rotates(&lookup, layer)? {
        return Ok(None);
    }
    let (arch, _) = architecture(&lookup)?;
    let meta = Meta {
        lookup: &lookup,
        arch,
    };
    let window = meta.u32("attention.sliding_window")?;
    let windowed = window.is_some_and(|w| w > 0);
    const BASE_SWA: &str = "rope.freq_base_swa";
    // The sliding layers' own base, or 10000 (`rope_freq_base_train_swa`'s default where the
    // architecture does not copy the global one).
    let own_base = || -> Result<f32, GgufError> { Ok(meta.f32(BASE_SWA)?.unwrap_or(10_000.0)) };
    // The sliding layers' base where llama.cpp copies the global settings first and then
    // reads the key: the file's key, else the global base (the rope is then the global one).
    let rebased = || -> Result<Swa, GgufError> {
        Ok(match meta.f32(BASE_SWA)? {
            Some(b) => Swa::Rebased(b),
            None => Swa::Global,
        })
    };
    let swa = match arch {
        "gemma3" if window != Some(0) && slides(&meta, layer, 6, Array::PerLayer)? => {
            Swa::Base(own_base()?)
        }
        "gemma3n" if slides(&meta, layer, 5, Array::PerLayer)? => Swa::Base(own_base()?),
        // EmbeddingGemma: Gemma 3's layers without the causal mask (`load_swa_pattern(ml, 6)`).
        "gemma-embedding" if slides(&meta, layer, 6, Array::PerLayer)? => Swa::Base(own_base()?),
        // A required per-layer list (`get_key_or_arr(…, swa_layers, n_layer)`).
        "mimo2" if flagged(&meta, layer)? => Swa::Base(own_base()?),
        "gemma4" | "step35" if flagged(&meta, layer)? => Swa::Own(own_base()?),
        // `use_compress_rope = dsv4_compress_ratios[il] != 0`: the others rotate plainly (the
        // file's base, no scaling or YaRN, magnitude 1).
        "deepseek4" if !compressed(&meta, layer)? => Swa::Plain,
        "olmo2" if windowed && slides(&meta, layer, 4, Array::PerLayer)? => Swa::Plain,
        // Its graph takes each layer's base but the model's scale: the sliding layers' base
        // is `rope.freq_base_swa` (10000; no copy of the global one).
        "modern-bert" if windowed && slides(&meta, layer, 3, Array::DenseFirst)? => {
            Swa::Rebased(own_base()?)
        }
        // `set_swa_pattern(2)`: even layers slide.
        "gpt-oss" | "gemma2" if layer.is_multiple_of(2) => rebased()?,
        // Chunked / sliding layers are the ones that rotate at all ([`gguf_layer_rotates`]):
        // `set_swa_pattern(4)` (SmallThinker: dense first, `il % 4 != 0`).
        "llama4" if window != Some(0) && layer % 4 != 3 => rebased()?,
        "afmoe" if windowed && layer % 4 != 3 => rebased()?,
        "smallthinker" if windowed && !layer.is_multiple_of(4) => rebased()?,
        _ => Swa::Global,
    };
    if let Swa::Base(b) | Swa::Rebased(b) | Swa::Own(b) = swa
        && b <= 0.0
    {
        return Err(GgufError::new(
            "rope.freq_base_swa",
            GgufErrorKind::OutOfRange,
        ));
    }
    build(&lookup, rope_freqs, swa).map(Some)
}

/// How an architecture's loader in llama.cpp reads an array in
/// `attention.sliding_window_pattern`.
#[derive(Clone, Copy, PartialEq)]
enum Array {
    /// As the layers' flags (`load_swa_pattern`: Gemma 3, OLMo 3).
    PerLayer,
    /// Not at all: a scalar read (`get_key_or_arr` into one number) leaves the default period.
    Ignored,
    /// As [`Array::Ignored`], with the period's first layer the dense one
    /// (`set_swa_pattern(p, true)`: ModernBERT).
    DenseFirst,
}

/// Whether layer `il` slides, by `attention.sliding_window_pattern`: a per-layer array (a
/// non-zero or true entry slides; a layer past it does not), or a period `p` whose last layer
/// is dense (llama.cpp's `set_swa_pattern`: `p == 0 || il % p < p − 1`), `period` if absent.
fn slides<'a, F>(meta: &Meta<'_, F>, il: u32, period: u32, arrays: Array) -> Result<bool, GgufError>
where
    F: Fn(&str) -> Option<GgufValue<'a>>,
{
    const PATTERN: &str = "attention.sliding_window_pattern";
    let p = match meta.get(PATTERN)? {
        None => period,
        Some(GgufValue::Array(_)) if arrays != Array::PerLayer => period,
        Some(GgufValue::Array(a)) => {
            return match a.get(il as usize) {
                None => Ok(false),
                Some(GgufValue::Bool(b)) => Ok(b),
                Some(v) => v
                    .as_u64()
                    .map(|n| n != 0)
                    .ok_or(GgufError::new(PATTERN, GgufErrorKind::WrongType)),
            };
        }
        Some(v) => {
            let n = v
                .as_u64()
                .ok_or(GgufError::new(PATTERN, GgufErrorKind::WrongType))?;
            u32::try_from(n).map_err(|_| GgufError::new(PATTERN, GgufErrorKind::OutOfRange))?
        }
    };
    Ok(match arrays {
        Array::DenseFirst => p == 0 || !il.is_multiple_of(p),
        _ => p == 0 || il % p < p - 1,
    })
}

/// Whether layer `il` slides by a required `attention.sliding_window_pattern` read as
/// llama.cpp's `get_key_or_arr` into per-layer flags: an array gives each layer's flag (it
/// must cover the layer), one number every layer's.
fn flagged<'a, F>(meta: &Meta<'_, F>, il: u32) -> Result<bool, GgufError>
where
    F: Fn(&str) -> Option<GgufValue<'a>>,
{
    const PATTERN: &str = "attention.sliding_window_pattern";
    let flag = |v: GgufValue<'_>| match v {
        GgufValue::Bool(b) => Ok(b),
        v => v
            .as_u64()
            .map(|n| n != 0)
            .ok_or(GgufError::new(PATTERN, GgufErrorKind::WrongType)),
    };
    match meta.get(PATTERN)? {
        None => Err(GgufError::new(PATTERN, GgufErrorKind::Missing)),
        Some(GgufValue::Array(a)) => match a.get(il as usize) {
            None => Err(GgufError::new(PATTERN, GgufErrorKind::OutOfRange)),
            Some(v) => flag(v),
        },
        Some(v) => flag(v),
    }
}

/// Whether DeepSeek-V4's layer `il` has a compressor: its entry of the required
/// `attention.compress_ratios` (one per layer at least, as llama.cpp checks) is not 0.
fn compressed<'a, F>(meta: &Meta<'_, F>, il: u32) -> Result<bool, GgufError>
where
    F: Fn(&str) -> Option<GgufValue<'a>>,
{
    const RATIOS: &str = "attention.compress_ratios";
    match meta.get(RATIOS)? {
        None => Err(GgufError::new(RATIOS, GgufErrorKind::Missing)),
        Some(GgufValue::Array(a)) => match a.get(il as usize) {
            None => Err(GgufError::new(RATIOS, GgufErrorKind::OutOfRange)),
            Some(v) => v
                .as_u64()
                .map(|r| r != 0)
                .ok_or(GgufError::new(RATIOS, GgufErrorKind::WrongType)),
        },
        Some(_) => Err(GgufError::new(RATIOS, GgufErrorKind::WrongType)),
    }
}

/// What a sliding-window layer's rope takes instead of the file's (llama.cpp's
/// `get_rope_freq_base` / `get_rope_freq_scale` of an SWA layer, and OLMo 3's graph).
#[derive(Clone, Copy, PartialEq)]
enum Swa {
    /// Not a sliding-window layer, or one that rotates as the others.
    Global,
    /// Gemma 3 and 3n: `rope_freq_base_train_swa` (this base) and
    /// `rope_freq_scale_train_swa = 1`; the YaRN settings and the magnitude stay the model's.
    Base(f32),
    /// `gpt-oss`, `gemma2`, `llama4`, `afmoe`, `smallthinker` with `rope.freq_base_swa` set:
    /// this base, everything else the model's (llama.cpp copies the global base and scale to
    /// the sliding layers, then reads the key over the base).
    Rebased(f32),
    /// Gemma 4 and Step 3.5: as [`Swa::Base`] (this base, unscaled), with the sliding layers'
    /// own head and rotary dims (`attention.key_length_swa`, `rope.dimension_count_swa`) and
    /// no frequency factors (their graphs pass factors to the full layers only).
    Own(f32),
    /// OLMo 3 (`olmo2`): "regular rope with no yarn rope scaling", the file's base with
    /// `freq_scale = 1`, `ext_factor = 0`, `attn_factor = 1` and no frequency factors.
    Plain,
}

fn build<'a, F>(lookup: &F, rope_freqs: Option<&[f32]>, swa: Swa) -> Result<Rope, GgufError>
where
    F: Fn(&str) -> Option<GgufValue<'a>>,
{
    let (arch, kind) = architecture(lookup)?;
    let meta = Meta { lookup, arch };

    // Head and rotary dims.
    let key_length = meta.u32("attention.key_length")?;
    let head_dim = match key_length {
        Some(k) => k,
        None => {
            let embd = meta.u32("embedding_length")?;
            let heads = meta.u32("attention.head_count")?;
            match (embd, heads) {
                (Some(e), Some(h)) if h > 0 => e / h,
                (Some(_), Some(_)) => {
                    return Err(GgufError::new(
                        "attention.head_count",
                        GgufErrorKind::OutOfRange,
                    ));
                }
                (None, _) => {
                    return Err(GgufError::new("embedding_length", GgufErrorKind::Missing));
                }
                (_, None) => {
                    return Err(GgufError::new(
                        "attention.head_count",
                        GgufErrorKind::Missing,
                    ));
                }
            }
        }
    };
    const DIMS: &str = "rope.dimension_count";
    let n_rot_full = meta.u32(DIMS)?.unwrap_or(head_dim);
    // DeepSeek-V4: every layer is a sliding one to llama.cpp (`set_swa_pattern(0)`), so its
    // heads take the sliding layers' dims; its graph picks the rope by compress ratio.
    let dsv4 = arch == "deepseek4";
    let (head_dim, n_rot, dims_key) = if matches!(swa, Swa::Own(_)) || dsv4 {
        // The sliding layers' dims, defaulting to the full layers' (Gemma 4 requires the
        // head's: `get_key(LLM_KV_ATTENTION_KEY_LENGTH_SWA, …)` without a default).
        const HEAD_SWA: &str = "attention.key_length_swa";
        const DIMS_SWA: &str = "rope.dimension_count_swa";
        let h = match meta.u32(HEAD_SWA)? {
            Some(h) => h,
            None if arch == "gemma4" => {
                return Err(GgufError::new(HEAD_SWA, GgufErrorKind::Missing));
            }
            None => head_dim,
        };
        (h, meta.u32(DIMS_SWA)?.unwrap_or(n_rot_full), DIMS_SWA)
    } else if arch == "step35" {
        // "full_attention layer only use half of the RoPE dimensions": llama.cpp halves
        // `n_rot_full` whatever the file says (after the sliding layers' default copied it).
        (head_dim, n_rot_full / 2, DIMS)
    } else {
        (head_dim, n_rot_full, DIMS)
    };
    let n_rot = n_rot as usize;
    let head_dim = if rope_part_only(arch) {
        n_rot
    } else {
        head_dim as usize
    };
    if n_rot == 0
        || !n_rot.is_multiple_of(2)
        || n_rot > head_dim
        || n_rot > crate::scaling::MAX_ROTARY_DIM
    {
        return Err(GgufError::new(dims_key, GgufErrorKind::OutOfRange));
    }
    let pairs = n_rot / 2;

    // Scaling settings.
    let base = meta.f32("rope.freq_base")?.unwrap_or(10_000.0);
    if base <= 0.0 {
        return Err(GgufError::new("rope.freq_base", GgufErrorKind::OutOfRange));
    }
    let base = match swa {
        Swa::Base(b) | Swa::Rebased(b) | Swa::Own(b) => b,
        // DeepSeek-V4's compressed layers: `dsv4_compress_rope_base`, required.
        Swa::Global if dsv4 => {
            const COMPRESS: &str = "attention.compress_rope_freq_base";
            match meta.f32(COMPRESS)? {
                Some(b) if b > 0.0 => b,
                Some(_) => return Err(GgufError::new(COMPRESS, GgufErrorKind::OutOfRange)),
                None => return Err(GgufError::new(COMPRESS, GgufErrorKind::Missing)),
            }
        }
        Swa::Global | Swa::Plain => base,
    };
    let rope_freqs = match swa {
        Swa::Plain | Swa::Own(_) => None,
        // Step 3.5 stores one factor tensor for its widest rope (the sliding layers'), and
        // ggml reads the first `n_rot / 2` of it on the full layers.
        _ if arch == "step35" => rope_freqs.map(|f| f.get(..pairs).unwrap_or(f)),
        _ => rope_freqs,
    };
    const TYPE: &str = "rope.scaling.type";
    #[derive(PartialEq)]
    enum ScalingType {
        None,
        Linear,
        Yarn,
        /// LongRoPE: its factors come in through `rope_freqs`; nothing else changes.
        LongRope,
    }
    let scaling_type = match meta.get(TYPE)? {
        None => ScalingType::Linear,
        Some(GgufValue::Str(s)) => match s {
            "none" => ScalingType::None,
            "linear" => ScalingType::Linear,
            "yarn" => ScalingType::Yarn,
            "longrope" => ScalingType::LongRope,
            _ => return Err(GgufError::new(TYPE, GgufErrorKind::Unknown)),
        },
        Some(_) => return Err(GgufError::new(TYPE, GgufErrorKind::WrongType)),
    };
    let factor = match meta.f32("rope.scaling.factor")? {
        Some(f) => f,
        None => meta.f32("rope.scale_linear")?.unwrap_or(0.0),
    };
    if factor < 0.0 {
        return Err(GgufError::new(
            "rope.scaling.factor",
            GgufErrorKind::OutOfRange,
        ));
    }
    let mut freq_scale = if factor == 0.0 { 1.0 } else { 1.0 / factor };
    if scaling_type == ScalingType::None {
        freq_scale = 1.0;
    }
    // llama_context resolves the magnitude from the model's `freq_scale`; the op's own factor
    // and the frequencies take the layer's.
    let model_freq_scale = freq_scale;
    if matches!(swa, Swa::Base(_) | Swa::Own(_) | Swa::Plain) {
        freq_scale = 1.0;
    }
    let rope_attn_factor = meta.f32("rope.scaling.attn_factor")?.unwrap_or(1.0);
    let ext_factor = match meta.f32("rope.scaling.yarn_ext_factor")? {
        Some(e) if e >= 0.0 => e,
        _ => {
            if scaling_type == ScalingType::Yarn {
                1.0
            } else {
                0.0
            }
        }
    };
    // OLMo 3's sliding layers: no YaRN (`ext_factor` 0).
    let ext_factor = if swa == Swa::Plain { 0.0 } else { ext_factor };
    let yarn_attn_factor = match meta.f32("rope.scaling.yarn_attn_factor")? {
        Some(a) if a >= 0.0 => a,
        _ => 1.0,
    };
    // (DeepSeek-V4's loader reads neither key: its betas are the defaults.)
    let (beta_fast, beta_slow) = if dsv4 {
        (32.0, 1.0)
    } else {
        (
            meta.f32("rope.scaling.yarn_beta_fast")?.unwrap_or(32.0),
            meta.f32("rope.scaling.yarn_beta_slow")?.unwrap_or(1.0),
        )
    };
    let log_mul = meta
        .f32("rope.scaling.yarn_log_multiplier")?
        .map_or(0.0, |v| v / 0.1);
    let n_ctx_orig = match meta.u32("rope.scaling.original_context_length")? {
        Some(n) if n != 0 => n,
        _ => meta.u32("context_length")?.unwrap_or(0),
    };

    // M-RoPE sections.
    const SECTIONS: &str = "rope.dimension_sections";
    let mut sections = [0usize; 4];
    if let Some(v) = meta.get(SECTIONS)? {
        let GgufValue::Array(a) = v else {
            return Err(GgufError::new(SECTIONS, GgufErrorKind::WrongType));
        };
        if a.len() > 4 {
            return Err(GgufError::new(SECTIONS, GgufErrorKind::OutOfRange));
        }
        for (i, s) in sections.iter_mut().enumerate().take(a.len()) {
            let n = a
                .get(i)
                .and_then(|x| x.as_u64())
                .ok_or(GgufError::new(SECTIONS, GgufErrorKind::WrongType))?;
            *s = usize::try_from(n)
                .ok()
                .filter(|&n| n <= pairs)
                .ok_or(GgufError::new(SECTIONS, GgufErrorKind::OutOfRange))?;
        }
    }
    let use_mrope = sections[0] > 0 && sections[1] > 0;
    let (layout, mrope) = match kind {
        RopeKind::Norm => (Layout::Interleaved, None),
        RopeKind::Neox => (Layout::RotateHalf, None),
        RopeKind::MRope => (Layout::RotateHalf, Some(false)),
        RopeKind::IMRope => (Layout::RotateHalf, Some(true)),
        RopeKind::NormOrMRope if use_mrope => (Layout::RotateHalf, Some(false)),
        RopeKind::NormOrMRope => (Layout::Interleaved, None),
        RopeKind::NeoxOrMRope if use_mrope => (Layout::RotateHalf, Some(false)),
        RopeKind::NeoxOrMRope | RopeKind::None => (Layout::RotateHalf, None),
    };

    const FREQS: &str = "rope_freqs";
    if let Some(ff) = rope_freqs {
        if ff.len() != pairs {
            return Err(GgufError::new(FREQS, GgufErrorKind::OutOfRange));
        }
        if ff.iter().any(|&f| !(f.is_finite() && f > 0.0)) {
            return Err(GgufError::new(FREQS, GgufErrorKind::OutOfRange));
        }
    }

    // Magnitude: llama_context's resolution of `yarn_attn_factor`, then ggml's in-op factor.
    let mut attn = yarn_attn_factor;
    if ext_factor != 0.0 {
        let s = 1.0 / model_freq_scale;
        if log_mul != 0.0 {
            let mscale_all_dims = log_mul;
            let mscale = if arch == "deepseek2" && mscale_all_dims != 1.0 {
                mscale_all_dims
            } else {
                1.0
            };
            attn = get_mscale(s, mscale) / get_mscale(s, mscale_all_dims);
        } else {
            attn = get_mscale(s, 1.0);
        }
        attn *= 1.0 / (1.0 + 0.1 * libm::logf(s));
    }
    attn *= rope_attn_factor;
    if swa == Swa::Plain {
        attn = 1.0;
    }
    // DeepSeek-V4's graph passes its own factor, `dsv4_rope_attn_factor`, which cancels
    // ggml's in-op one below.
    if dsv4 && swa == Swa::Global {
        attn = if ext_factor != 0.0 {
            1.0 / (1.0 + 0.1 * libm::logf(1.0 / freq_scale))
        } else {
            1.0
        };
    }
    let mut magnitude = attn;
    if ext_factor != 0.0 {
        magnitude *= 1.0 + 0.1 * libm::logf(1.0 / freq_scale);
    }

    if let Some(interleaved) = mrope {
        if sections[3] != 0 {
            return Err(GgufError::new(SECTIONS, GgufErrorKind::Unsupported));
        }
        if ext_factor != 0.0 || freq_scale != 1.0 || magnitude != 1.0 {
            // posenc's M-RoPE takes its frequencies from a `Scaling`, which has no llama.cpp
            // YaRN; no released M-RoPE GGUF sets these.
            return Err(GgufError::new(TYPE, GgufErrorKind::Unsupported));
        }
        let s = [sections[0], sections[1], sections[2]];
        let axes = if interleaved {
            Axes::MRopeInterleaved { sections: s }
        } else {
            Axes::MRope { sections: s }
        };
        // ggml's IMROPE sends pair j (its sector `j mod Σsections`) to a fourth axis `e` when
        // none of the t/h/w rules claims it (`j % 3 == 1 && j < 3·s_h` → h, `j % 3 == 2 &&
        // j < 3·s_w` → w, `j % 3 == 0 && j < 3·s_t` → t; Qwen3-VL's [24, 20, 20]: pairs 61 and
        // 62), and llama.cpp passes `e = 0` for every decoder token (text `[p, p, p, 0]`,
        // image tokens `z = 0`): those pairs are never rotated, where HF rotates them with t.
        // posenc's axes have no `e`: their frequency is divided by `f32::MAX`, which underflows
        // it to 0 or the smallest subnormal, so for |p| < 2²⁴ the angle is below 2⁻¹²⁵: cos
        // rounds to 1 and the sin term is below f32 precision of any normal input.
        let mut factors = [1.0f32; crate::scaling::MAX_PAIRS];
        let mut stationary = false;
        let sect = sections[0] + sections[1] + sections[2];
        if interleaved && sect > 0 {
            for (j, f) in factors.iter_mut().enumerate().take(pairs) {
                let k = j % sect;
                let claimed = (k % 3 == 1 && k < 3 * sections[1])
                    || (k % 3 == 2 && k < 3 * sections[2])
                    || (k % 3 == 0 && k < 3 * sections[0]);
                if !claimed {
                    *f = f32::MAX;
                    stationary = true;
                }
            }
        }
        if let Some(ff) = rope_freqs {
            for (f, &r) in factors.iter_mut().zip(ff) {
                if *f == 1.0 {
                    *f = r;
                }
            }
        }
        let scaling = if stationary || rope_freqs.is_some() {
            Scaling::FreqFactors(&factors[..pairs])
        } else {
            Scaling::None
        };
        let cfg = RopeConfig::new(head_dim, base, layout)
            .rotary_dim(n_rot)
            .scaling(scaling)
            .axes(axes);
        return Rope::new(&cfg).map_err(rope_err(SECTIONS));
    }

    // Frequencies: posenc's ω_j, then ggml's per-pair operations in f32.
    let plain = Rope::new(&RopeConfig::new(n_rot, base, layout)).map_err(rope_err(DIMS))?;
    let (lo, hi) = if ext_factor != 0.0 {
        if n_ctx_orig == 0 {
            return Err(GgufError::new(
                "rope.scaling.original_context_length",
                GgufErrorKind::Missing,
            ));
        }
        if !(beta_fast > 0.0 && beta_slow > 0.0) {
            return Err(GgufError::new(
                "rope.scaling.yarn_beta_fast",
                GgufErrorKind::OutOfRange,
            ));
        }
        let start = libm::floorf(yarn_corr_dim(n_rot, n_ctx_orig, beta_fast, base));
        let end = libm::ceilf(yarn_corr_dim(n_rot, n_ctx_orig, beta_slow, base));
        (start.max(0.0), end.min((n_rot - 1) as f32))
    } else {
        (0.0, 0.0)
    };
    let mut inv_freq = [0.0f32; crate::scaling::MAX_ROTARY_DIM / 2];
    for (j, (w, &omega)) in inv_freq.iter_mut().zip(plain.inv_freq()).enumerate() {
        let extrap = match rope_freqs {
            Some(ff) => omega / ff[j],
            None => omega,
        };
        let interp = freq_scale * extrap;
        *w = if ext_factor != 0.0 {
            let mix = yarn_ramp(lo, hi, j) * ext_factor;
            interp * (1.0 - mix) + extrap * mix
        } else {
            interp
        };
    }
    let key = if ext_factor != 0.0 {
        "rope.scaling.factor"
    } else {
        "rope.scaling.attn_factor"
    };
    let rope = Rope::from_inv_freq(head_dim, layout, &inv_freq[..pairs], magnitude)
        .map_err(rope_err(key))?;
    if dsv4 {
        // `[nope | rope]`: the rotated channels are the head's last `n_rot`.
        return rope
            .with_rotary_offset(head_dim - n_rot)
            .map_err(rope_err(dims_key));
    }
    Ok(rope)
}
