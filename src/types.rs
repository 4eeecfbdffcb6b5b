//! The vocabulary every layer shares: how channels pair up ([`Layout`]), how a rotation rounds
//! ([`Rounding`]), where a sinusoidal row puts its sines ([`SinusoidalLayout`]), which set
//! of kernels runs ([`Backend`]) and where the heads of a buffer are ([`View`]).
//!
//! This is the ground floor: it imports nothing from the crate, so the API layer, the
//! frequency schemes and the SIMD engine can all name these types without importing each
//! other. (Which backends exist on this CPU is the engine's business: see
//! `engine/dispatch.rs`.)

/// Which channels of a head form a rotating pair.
///
/// ```
/// use posenc::Layout;
/// // GPT-J, Meta's LLaMA checkpoints, ggml "normal": pairs (2i, 2i+1).
/// let _meta = Layout::Interleaved;
/// // GPT-NeoX, HuggingFace, ggml "neox": pairs (i, i + rotary_dim/2).
/// let _hf = Layout::RotateHalf;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Pairs `(2i, 2i + 1)`.
    Interleaved,
    /// Pairs `(i, i + rotary_dim/2)`.
    RotateHalf,
}

/// How a rotation rounds in f16/bf16 (and whether f32 uses fused multiply-adds).
///
/// The default, [`Rounding::Once`], is posenc's contract: exact angles, f32 arithmetic, one
/// rounding on store. The `Hf*` modes reproduce HuggingFace's eager arithmetic instead, so a
/// runtime can match HF outputs bit for bit where HF is the reference: angles are the f32
/// product `f32(p)·ω` (as `position_ids.float() @ inv_freq` forms them), cos/sin are rounded
/// to the storage type, and the rotation is unfused.
///
/// ```
/// use posenc::{Layout, Rope, RopeConfig, Rounding};
/// let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf)).unwrap()
///     .with_rounding(Rounding::HfEager);
/// let mut q = vec![posenc::bf16::from_f32(0.5); 64];
/// rope.apply(&mut q, 1, &[7]).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Rounding {
    /// Exact angles, compute in f32, round once on store (the default).
    #[default]
    Once,
    /// HF eager (Llama, NeoX, Phi-3, GPT-J, …): each of `q·cos`, `rotate_half(q)·sin` and
    /// their sum is computed in f32 and rounded to the storage type (three roundings).
    HfEager,
    /// HF with upcast (Cohere): rounded cos/sin, the rotation in unfused f32, one rounding.
    HfUpcast,
}

/// Where the sines and cosines of a row go.
///
/// ```
/// use posenc::{Sinusoidal, SinusoidalLayout};
/// let mut row = [0f32; 4];
/// Sinusoidal::new(4, 10_000.0, SinusoidalLayout::Split).unwrap().fill(&mut row, 0).unwrap();
/// assert_eq!(row, [0.0, 0.0, 1.0, 1.0]); // sin, sin | cos, cos at position 0
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SinusoidalLayout {
    /// `PE[2i] = sin(p·ω_i)`, `PE[2i+1] = cos(p·ω_i)` (Vaswani et al., tensor2tensor).
    Interleaved,
    /// All sines, then all cosines (Marian, fairseq).
    Split,
    /// All cosines, then all sines (latent-diffusion timestep embeddings, ggml
    /// `timestep_embedding`).
    SplitCosFirst,
}

/// A set of kernels: the scalar reference, the portable SIMD lanes, or a run-time x86 or
/// aarch64 tier.
///
/// ```
/// let b = posenc::Backend::active();
/// println!("posenc runs on {}", b.name());
/// assert!(b.is_available());
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Plain loops: the reference and the test oracle.
    Scalar,
    /// `wide` lanes: SSE2 on x86-64, NEON on aarch64, simd128 on wasm, or whatever
    /// `-C target-feature` the build enables. Bitwise equal to `Scalar` (no fused ops).
    Portable,
    /// x86-64 AVX2 + FMA + F16C, selected at run time. Rotations use fused multiply-adds
    /// (within the documented bound of `Scalar`, not bitwise); cos/sin are bitwise `Scalar`'s.
    Avx2,
    /// x86-64 AVX-512F (+ FMA, F16C), selected at run time; same numerics as `Avx2`.
    Avx512,
    /// aarch64 Advanced SIMD (NEON), with whole-vector f16 (`fcvtl`/`fcvtn`) and bf16
    /// conversions (`bfcvtn` where the CPU has FEAT_BF16, `half`'s bits either way); same
    /// numerics as `Avx2` (fused rotations, bitwise cos/sin).
    Neon,
}

impl Backend {
    /// Every backend this build knows, available on this CPU or not.
    ///
    /// ```
    /// assert!(posenc::Backend::ALL.contains(&posenc::Backend::Scalar));
    /// ```
    pub const ALL: &'static [Backend] = &[
        Backend::Scalar,
        Backend::Portable,
        Backend::Avx2,
        Backend::Avx512,
        Backend::Neon,
    ];

    /// Short name (`"scalar"`, `"portable"`, `"avx2"`, `"avx512"`, `"neon"`).
    ///
    /// ```
    /// assert_eq!(posenc::Backend::Portable.name(), "portable");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Backend::Scalar => "scalar",
            Backend::Portable => "portable",
            Backend::Avx2 => "avx2",
            Backend::Avx512 => "avx512",
            Backend::Neon => "neon",
        }
    }

    /// Whether this backend's results are bitwise those of [`Backend::Scalar`] (true for
    /// `Portable`; the x86 and NEON tiers fuse multiply-adds in the rotation and agree within
    /// the documented bound instead).
    ///
    /// ```
    /// assert!(posenc::Backend::Portable.matches_scalar_bitwise());
    /// ```
    pub fn matches_scalar_bitwise(self) -> bool {
        matches!(self, Backend::Scalar | Backend::Portable)
    }
}

/// Where `n_heads` heads of every token live in a buffer, in elements: head `h` of token `t`
/// starts at `offset + t·token_stride + h·head_stride` and spans `head_dim` elements.
///
/// * token-major `[tokens, heads, head_dim]`: `token_stride = heads·head_dim`,
///   `head_stride = head_dim` ([`View::token_major`]);
/// * head-major `[heads, tokens, head_dim]`: `token_stride = head_dim`,
///   `head_stride = tokens·head_dim` ([`View::head_major`]);
/// * fused QKV rows: one view for Q and one for K, sharing `token_stride = (q + k + v)·head_dim`.
///
/// A call validates, before it writes: every head lies inside the buffer; the heads of one
/// view do not overlap (the smaller stride is at least `head_dim` and the larger one clears a
/// whole run of the smaller); and two views occupy disjoint ranges of the buffer, or share a
/// token stride with per-token footprints that do not overlap, or put their heads on
/// disjoint residues of their common stride (GPT-NeoX/BLOOM's fused `[tokens, heads, 3,
/// head_dim]` QKV, where Q and K heads alternate). Any number of views.
///
/// ```
/// use posenc::View;
/// let v = View::head_major(8, 5, 64);
/// assert_eq!((v.token_stride, v.head_stride), (64, 5 * 64));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct View {
    /// Heads per token.
    pub n_heads: usize,
    /// Elements from one token's head to the next token's.
    pub token_stride: usize,
    /// Elements from one head to the next within a token.
    pub head_stride: usize,
    /// Element index of token 0, head 0.
    pub offset: usize,
}

impl View {
    /// A contiguous token-major buffer `[tokens, n_heads, head_dim]`.
    ///
    /// ```
    /// assert_eq!(posenc::View::token_major(4, 8).token_stride, 32);
    /// ```
    pub fn token_major(n_heads: usize, head_dim: usize) -> View {
        View {
            n_heads,
            token_stride: n_heads.saturating_mul(head_dim),
            head_stride: head_dim,
            offset: 0,
        }
    }

    /// A contiguous head-major buffer `[n_heads, tokens, head_dim]`.
    ///
    /// ```
    /// assert_eq!(posenc::View::head_major(4, 10, 8).head_stride, 80);
    /// ```
    pub fn head_major(n_heads: usize, tokens: usize, head_dim: usize) -> View {
        View {
            n_heads,
            token_stride: head_dim,
            head_stride: tokens.saturating_mul(head_dim),
            offset: 0,
        }
    }
}
