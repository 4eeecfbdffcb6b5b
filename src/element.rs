//! Storage element types: `f32`, `half::f16`, `half::bf16`.
//!
//! All arithmetic runs in f32. A half-precision element is widened exactly on load and
//! rounded once, to nearest even, on store (NaN stays NaN); both conversions are bit-for-bit
//! those of the `half` crate.

use half::{bf16, f16};

/// The storage dtype of an [`Element`].
///
/// ```
/// use posenc::{Dtype, Element};
/// assert_eq!(<posenc::bf16 as Element>::DTYPE, Dtype::Bf16);
/// assert_eq!(Dtype::F16.size_bytes(), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// IEEE binary32.
    F32,
    /// IEEE binary16 (`half::f16`).
    F16,
    /// bfloat16 (`half::bf16`).
    Bf16,
}

impl Dtype {
    /// Bytes per element.
    ///
    /// ```
    /// assert_eq!(posenc::Dtype::F32.size_bytes(), 4);
    /// ```
    pub const fn size_bytes(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::Bf16 => 2,
        }
    }

    /// Lower-case name (`"f32"`, `"f16"`, `"bf16"`).
    ///
    /// ```
    /// assert_eq!(posenc::Dtype::Bf16.name(), "bf16");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
        }
    }
}

pub(crate) mod sealed {
    /// Seals [`super::Element`]: the kernels rely on exactly three representations.
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// A storage type posenc reads and writes: `f32`, `half::f16` or `half::bf16`.
///
/// Sealed: the kernels rely on exactly these three representations.
///
/// ```
/// use posenc::Element;
/// let x = <posenc::f16 as Element>::from_f32(1.0 / 3.0);
/// assert_eq!(x, posenc::f16::from_f32(1.0 / 3.0)); // the same rounding as `half`
/// assert_eq!(x.to_f32(), posenc::f16::from_f32(1.0 / 3.0).to_f32());
/// ```
pub trait Element:
    sealed::Sealed + Copy + Default + PartialEq + core::fmt::Debug + Send + Sync + 'static
{
    /// The dtype tag of this type.
    ///
    /// ```
    /// use posenc::{Dtype, Element, bf16, f16};
    /// assert_eq!(<f32 as Element>::DTYPE, Dtype::F32);
    /// assert_eq!(<f16 as Element>::DTYPE, Dtype::F16);
    /// assert_eq!(<bf16 as Element>::DTYPE, Dtype::Bf16);
    /// ```
    const DTYPE: Dtype;
    /// Widens to f32 (exact: every f16 and bf16 value is an f32 value).
    ///
    /// ```
    /// use posenc::{Element, bf16};
    /// // bf16 keeps the top 16 bits of an f32: 0x3FC0 is 1.5.
    /// assert_eq!(Element::to_f32(bf16::from_bits(0x3FC0)), 1.5);
    /// ```
    fn to_f32(self) -> f32;
    /// Rounds an f32 to this type, to nearest even; NaN stays NaN.
    ///
    /// ```
    /// use posenc::{Element, bf16, f16};
    /// // 1 + 2^-8 lies halfway between two bf16 values: to even, i.e. down to 1.
    /// let x: bf16 = Element::from_f32(1.0 + 1.0 / 256.0);
    /// assert_eq!(x.to_bits(), 0x3F80);
    /// let y: f16 = Element::from_f32(f32::NAN);
    /// assert!(y.is_nan());
    /// ```
    fn from_f32(v: f32) -> Self;
}

impl Element for f32 {
    const DTYPE: Dtype = Dtype::F32;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
}

impl Element for f16 {
    const DTYPE: Dtype = Dtype::F16;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
}

impl Element for bf16 {
    const DTYPE: Dtype = Dtype::Bf16;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        // The top half of an f32, except that a signalling NaN is quieted (bit 22 set), as
        // `half` does: conversions match `half` bit for bit.
        bf16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
}
