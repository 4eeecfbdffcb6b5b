//! The crate's one error type.

use crate::types::Backend;
use core::fmt;

/// Why a posenc call refused its input.
///
/// Every public function validates all of its arguments before it writes anything, so a call
/// that returns an `Error` has left every caller buffer exactly as it was.
///
/// ```
/// use posenc::{Error, Layout, Rope, RopeConfig};
/// let err = Rope::new(&RopeConfig::new(63, 10_000.0, Layout::RotateHalf)).unwrap_err();
/// assert_eq!(err, Error::InvalidHeadDim { head_dim: 63 });
/// println!("{err}"); // "head_dim must be even and non-zero, got 63"
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Error {
    /// `head_dim` is zero or odd.
    InvalidHeadDim {
        /// The value given.
        head_dim: usize,
    },
    /// `rotary_dim` is zero, odd or larger than `head_dim`.
    InvalidRotaryDim {
        /// The rotary dimension given (or implied by a table's length).
        rotary_dim: usize,
        /// The head dimension it must fit in.
        head_dim: usize,
    },
    /// `rotary_dim` exceeds [`MAX_ROTARY_DIM`](crate::MAX_ROTARY_DIM), the size of the
    /// frequency table a [`Rope`](crate::Rope) keeps inline.
    RotaryDimTooLarge {
        /// The rotary dimension given.
        rotary_dim: usize,
        /// The crate's maximum.
        max: usize,
    },
    /// The sinusoidal model dimension is zero or odd.
    InvalidModelDim {
        /// The value given.
        d_model: usize,
    },
    /// `n_heads` is zero.
    ZeroHeads,
    /// A slice does not have the length the other arguments imply.
    LengthMismatch {
        /// Which argument (`"x"`, `"positions"`, `"cos"`, `"sin"`, `"out"`, ...).
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        actual: usize,
    },
    /// A slice length is not a whole number of rows.
    NotWholeRows {
        /// Which argument.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The row length it must be a multiple of.
        row: usize,
    },
    /// A floating-point parameter is non-finite or out of its domain.
    InvalidParameter {
        /// Which parameter (`"base"`, `"factor"`, `"inv_freq"`, ...).
        what: &'static str,
        /// The value given (or the first offending value computed from it).
        value: f32,
    },
    /// A product of shape arguments overflows `usize`.
    ShapeOverflow,
    /// The requested backend cannot run on this CPU or build.
    BackendUnavailable {
        /// The backend asked for.
        backend: Backend,
    },
    /// A parameter is finite but violates a constraint of its scheme that involves more than
    /// its sign (e.g. `low_freq_factor > high_freq_factor`, YaRN `beta_slow > beta_fast`).
    ///
    /// ```
    /// use posenc::{Error, Layout, Rope, RopeConfig, Scaling};
    /// let cfg = RopeConfig::new(128, 500_000.0, Layout::RotateHalf).scaling(Scaling::Llama3 {
    ///     factor: 8.0, low_freq_factor: 4.0, high_freq_factor: 1.0, original_max_positions: 8192,
    /// });
    /// let err = Rope::new(&cfg).unwrap_err();
    /// assert!(matches!(err, Error::ParameterOutOfRange { what: "low_freq_factor", .. }));
    /// ```
    ParameterOutOfRange {
        /// Which parameter.
        what: &'static str,
        /// What it must satisfy, e.g. "must not exceed `high_freq_factor`".
        constraint: &'static str,
        /// The value given.
        value: f32,
    },
    /// The scaling scheme is declared in the public contract but not implemented.
    ///
    /// No scheme of this release returns it: every [`Scaling`](crate::Scaling) variant is
    /// implemented. It stays so that code matching on it keeps compiling, and for schemes a
    /// future release may declare before implementing them.
    UnsupportedScaling {
        /// The scheme's name, as in HF `rope_type`.
        rope_type: &'static str,
    },
    /// A position, time or angle lies outside the domain where posenc's accuracy contract
    /// holds (`|p·ω| ≤ 2^26` rad, see the crate docs' *Accuracy contract*): beyond it the
    /// exact range reduction stops being exact, so the call is refused rather than answered
    /// less accurately.
    ///
    /// ```
    /// use posenc::{Error, Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(8, 1e4, SinusoidalLayout::Interleaved).unwrap();
    /// let mut out = [0f32; 8];
    /// let err = pe.fill_positions(&mut out, &[1 << 27]).unwrap_err();
    /// assert!(matches!(err, Error::OutOfDomain { what: "positions", .. }));
    /// assert_eq!(out, [0.0; 8]); // nothing written
    /// ```
    OutOfDomain {
        /// Which argument (`"positions"`, `"times"`, `"position * freq"`, ...).
        what: &'static str,
        /// The largest magnitude accepted for it.
        limit: f64,
        /// The value given (the first offending one).
        value: f64,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::InvalidHeadDim { head_dim } => {
                write!(f, "head_dim must be even and non-zero, got {head_dim}")
            }
            Error::InvalidRotaryDim {
                rotary_dim,
                head_dim,
            } => write!(
                f,
                "rotary_dim must be even, non-zero and at most head_dim ({head_dim}), got {rotary_dim}"
            ),
            Error::RotaryDimTooLarge { rotary_dim, max } => {
                write!(
                    f,
                    "rotary_dim {rotary_dim} exceeds the supported maximum {max}"
                )
            }
            Error::InvalidModelDim { d_model } => {
                write!(f, "d_model must be even and non-zero, got {d_model}")
            }
            Error::ZeroHeads => f.write_str("n_heads must be non-zero"),
            Error::LengthMismatch {
                what,
                expected,
                actual,
            } => {
                write!(f, "`{what}` has length {actual}, expected {expected}")
            }
            Error::NotWholeRows { what, len, row } => {
                write!(
                    f,
                    "`{what}` has length {len}, not a multiple of the row length {row}"
                )
            }
            Error::InvalidParameter { what, value } => {
                write!(f, "`{what}` must be finite and positive, got {value}")
            }
            Error::ShapeOverflow => f.write_str("shape product overflows usize"),
            Error::BackendUnavailable { backend } => {
                write!(
                    f,
                    "backend {} is not available on this CPU or build",
                    backend.name()
                )
            }
            Error::ParameterOutOfRange {
                what,
                constraint,
                value,
            } => {
                write!(f, "`{what}` {constraint}, got {value}")
            }
            Error::UnsupportedScaling { rope_type } => {
                write!(f, "scaling scheme `{rope_type}` is not implemented yet")
            }
            Error::OutOfDomain { what, limit, value } => {
                write!(
                    f,
                    "`{what}` must lie within ±{limit} (the domain of the accuracy contract), got {value}"
                )
            }
        }
    }
}

impl core::error::Error for Error {}
