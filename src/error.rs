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
    ///
    /// ```
    /// use posenc::{Error, Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(128, 1e4, Layout::RotateHalf)).unwrap();
    /// let mut x = vec![0.0f32; 12288];
    /// let err = rope.apply(&mut x, 32, &[0, 1]).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "`x` has length 12288, expected tokens × heads × head_dim = 2 × 32 × 128 = 8192"
    /// );
    /// ```
    LengthMismatch {
        /// Which argument (`"x"`, `"q"`, `"k"`, `"positions"`, `"cos"`, `"sin"`, `"out"`, ...).
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        actual: usize,
        /// How `expected` follows from the other arguments.
        formula: Formula,
    },
    /// A slice length is not a whole number of rows.
    ///
    /// ```
    /// use posenc::Error;
    /// let mut out = vec![0.0f32; 100];
    /// let err = posenc::Sinusoidal::new(64, 1e4, posenc::SinusoidalLayout::Split).unwrap().fill(&mut out, 0).unwrap_err();
    /// assert!(matches!(err, Error::NotWholeRows { what: "out", len: 100, row: 64, .. }));
    /// assert_eq!(
    ///     err.to_string(),
    ///     "`out` has length 100, expected positions × d_model, not a multiple of d_model = 64"
    /// );
    /// ```
    NotWholeRows {
        /// Which argument.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The row length it must be a multiple of.
        row: usize,
        /// The length it must have: a count times the row, the count first and unknown
        /// (value 0), then the row's factors, e.g. `tokens × heads × head_dim` with
        /// `[0, 4, 128]`.
        formula: Formula,
    },
    /// Two of the [`View`](crate::View)s given to one call overlap (`first < second`), or one
    /// view makes two of its own heads overlap (`first == second`); both are indices into the
    /// `views` argument.
    ///
    /// ```
    /// use posenc::{Error, Layout, Rope, RopeConfig, View};
    /// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
    /// let mut x = vec![0.0f32; 32];
    /// let q = View::token_major(2, 8);
    /// let k = View { offset: 8, ..View::token_major(1, 8) };
    /// let err = rope.apply_views(&mut x, &[q, k], &[0, 1]).unwrap_err();
    /// assert_eq!(err, Error::ViewsOverlap { first: 0, second: 1 });
    /// assert_eq!(err.to_string(), "`views[0]` and `views[1]` overlap: a head of one meets a head of the other");
    /// ```
    ViewsOverlap {
        /// The index of the first view.
        first: usize,
        /// The index of the second view (equal to `first` when a view overlaps itself).
        second: usize,
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
    /// A position (or delta) does not fit an `i32`, the range RoPE's angles are defined on.
    ///
    /// ```
    /// use posenc::{Error, Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(2, 1e4, Layout::RotateHalf)).unwrap();
    /// let err = rope.apply(&mut [1.0f32, 0.0], 1, &[u32::MAX]).unwrap_err();
    /// assert!(matches!(err, Error::PositionOutOfRange { index: 0, .. }));
    /// ```
    PositionOutOfRange {
        /// The argument.
        what: &'static str,
        /// Index of the first such position.
        index: usize,
        /// Its value.
        value: i64,
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
                formula,
            } => {
                write!(f, "`{what}` has length {actual}, expected ")?;
                formula.write(f, expected)
            }
            Error::NotWholeRows {
                what,
                len,
                row,
                formula,
            } => {
                write!(f, "`{what}` has length {len}, ")?;
                match formula.names.split_once(" × ") {
                    Some((_count, row_names)) => {
                        write!(f, "expected {}, not a multiple of ", formula.names)?;
                        write_product(f, row_names, &formula.values[1..], row)
                    }
                    None => {
                        f.write_str("not a multiple of ")?;
                        formula.write(f, row)
                    }
                }
            }
            Error::ViewsOverlap { first, second } if first == second => write!(
                f,
                "`views[{first}]` makes two of its own heads overlap: its strides must keep every head_dim-wide head apart"
            ),
            Error::ViewsOverlap { first, second } => write!(
                f,
                "`views[{first}]` and `views[{second}]` overlap: a head of one meets a head of the other"
            ),
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
            Error::PositionOutOfRange { what, index, value } => write!(
                f,
                "`{what}[{index}]` is {value}, outside the i32 range RoPE positions take"
            ),
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

/// How a length follows from the other arguments of a call: up to three named factors and
/// their values, so an [`Error`] can show the arithmetic
/// (`tokens × heads × head_dim = 2 × 32 × 128 = 8192`).
///
/// `names` holds the factors' names joined by `" × "`, `values` their values in that order
/// (unused slots 0). With one name (`"rotary_dim/2"`, `"input_ids.len()"`) the message reads
/// `rotary_dim/2 = 64`; with none (`""`) the length is a plain number. `names` is a thin
/// reference (to a `&'static str`) so that an [`Error`] stays small.
///
/// ```
/// use posenc::{Error, Formula, Layout, Rope, RopeConfig};
/// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
/// let (mut q, mut k) = (vec![0.0f32; 4 * 8], vec![0.0f32; 8]);
/// let err = rope.apply_qk(&mut q, 4, &mut k, 2, &[0]).unwrap_err();
/// let Error::LengthMismatch { what, formula, .. } = err else { panic!() };
/// assert_eq!(what, "k");
/// assert_eq!(formula, Formula { names: &"tokens × heads × head_dim", values: [1, 2, 8] });
/// assert_eq!(*formula.names, "tokens × heads × head_dim");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Formula {
    /// The factors' names joined by `" × "`, e.g. `&"tokens × heads × head_dim"`.
    pub names: &'static &'static str,
    /// The factors' values, in the order of `names`.
    pub values: [usize; 3],
}

impl Formula {
    /// No formula: the length is a plain number.
    pub(crate) const NONE: Formula = Formula {
        names: &"",
        values: [0; 3],
    };

    /// One named quantity.
    pub(crate) const fn one(name: &'static &'static str, value: usize) -> Formula {
        Formula {
            names: name,
            values: [value, 0, 0],
        }
    }

    /// A product of two named factors (`names` joined by `" × "`).
    pub(crate) const fn two(names: &'static &'static str, values: [usize; 2]) -> Formula {
        Formula {
            names,
            values: [values[0], values[1], 0],
        }
    }

    /// A product of three named factors (`names` joined by `" × "`).
    pub(crate) const fn three(names: &'static &'static str, values: [usize; 3]) -> Formula {
        Formula { names, values }
    }

    /// Writes `total` with the arithmetic behind it: `a × b = 2 × 3 = 6`, `a = 6` or `6`.
    fn write(&self, f: &mut fmt::Formatter<'_>, total: usize) -> fmt::Result {
        write_product(f, self.names, &self.values, total)
    }
}

/// Writes `total` as the product of the factors `names` (joined by `" × "`) with `values`.
fn write_product(
    f: &mut fmt::Formatter<'_>,
    names: &str,
    values: &[usize],
    total: usize,
) -> fmt::Result {
    if names.is_empty() {
        return write!(f, "{total}");
    }
    f.write_str(names)?;
    let n = names.split(" × ").count();
    if n > 1 {
        for (i, v) in values.iter().take(n).enumerate() {
            let sep = if i == 0 { " = " } else { " × " };
            write!(f, "{sep}{v}")?;
        }
    }
    write!(f, " = {total}")
}
