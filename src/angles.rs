//! What a RoPE call rotates by: the positions of its tokens, in whatever integer type the
//! caller holds them ([`Position`]), or a [`Table`] of cos/sin computed once per forward pass
//! and reused by every layer. Every `Rope` entry point takes either ([`Angles`]).
//!
//! ```text
//! rope.apply(&mut q, heads, &positions)   // angles computed here, exactly, from p · ω
//! let t = rope.table(&positions, &mut buf)?;   // once per forward pass
//! rope.apply(&mut q, heads, t)            // every layer: the same bits, no trig
//! ```

use crate::error::Error;
use crate::validate::table_rows;
#[cfg(feature = "rayon")]
use core::ops::Range;

mod sealed {
    pub trait Sealed {}
}

/// An integer type a runtime holds positions in: `i32`, `u32`, `i64`, `u64`, `usize`,
/// `isize`, `i16`, `u16`. Every value must fit an `i32` ([`Error::PositionOutOfRange`]) and
/// keep its angles in the accuracy contract's domain, `|p·ω| ≤ 2^26` for the rope's largest
/// frequency, so `|p| ≤ 2^26` for unscaled ropes ([`Error::OutOfDomain`]); both are checked
/// before anything is written. Nothing is allocated to convert them.
///
/// ```
/// use posenc::{Layout, Rope, RopeConfig};
/// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
/// let (mut a, mut b) = ([0.5f32; 16], [0.5f32; 16]);
/// rope.apply(&mut a, 1, &[3usize, 4]).unwrap();
/// rope.apply(&mut b, 1, &[3i32, 4]).unwrap();
/// assert_eq!(a, b);
/// assert!(rope.apply(&mut a, 1, &[0u64, 1 << 40]).is_err()); // does not fit an i32
/// ```
pub trait Position: Copy + sealed::Sealed {
    #[doc(hidden)]
    fn ints(s: &[Self]) -> Ints<'_>;
}

macro_rules! positions {
    ($($t:ident => $v:ident),*) => {
        /// A slice of positions, by integer type (no conversion until the engine runs).
        #[doc(hidden)]
        #[derive(Clone, Copy, Debug)]
        pub enum Ints<'a> { $($v(&'a [$t])),* }

        $(
            impl sealed::Sealed for $t {}
            impl Position for $t {
                #[inline]
                fn ints(s: &[Self]) -> Ints<'_> {
                    Ints::$v(s)
                }
            }
        )*

        impl<'a> Ints<'a> {
            /// How many positions.
            pub(crate) fn len(&self) -> usize {
                match self { $(Ints::$v(s) => s.len()),* }
            }

            /// Positions `r` (in bounds: the callers slice validated ranges).
            #[cfg(feature = "rayon")]
            pub(crate) fn slice(self, r: Range<usize>) -> Ints<'a> {
                match self { $(Ints::$v(s) => Ints::$v(&s[r])),* }
            }

            /// The first position that does not fit an i32, as (index, value).
            fn first_out_of_range(&self) -> Option<(usize, i128)> {
                match self {
                    $(Ints::$v(s) => s
                        .iter()
                        .position(|&p| i32::try_from(p).is_err())
                        .map(|i| (i, s[i] as i128))),*
                }
            }

            /// The first position with `|p| > limit`, if any.
            fn first_beyond(&self, limit: u32) -> Option<i128> {
                let limit = limit as i128;
                match self {
                    $(Ints::$v(s) => s
                        .iter()
                        .map(|&p| p as i128)
                        .find(|p| p.abs() > limit)),*
                }
            }

            /// Writes positions `from ..` into `out` as i32 (validated: they fit), as many as
            /// fit; returns how many.
            pub(crate) fn convert(&self, from: usize, out: &mut [i32]) -> usize {
                match self {
                    $(Ints::$v(s) => {
                        let src = &s[from..];
                        let n = src.len().min(out.len());
                        for (o, &p) in out[..n].iter_mut().zip(src) {
                            *o = p as i32;
                        }
                        n
                    }),*
                }
            }
        }
    };
}

positions!(i32 => I32, u32 => U32, i64 => I64, u64 => U64, usize => Usize, isize => Isize,
           i16 => I16, u16 => U16);

impl<'a> Ints<'a> {
    /// The positions as i32 without conversion, when they are i32.
    pub(crate) fn as_i32(&self) -> Option<&'a [i32]> {
        match *self {
            Ints::I32(s) => Some(s),
            _ => None,
        }
    }

    /// Checks that every position fits an i32 ([`Error::PositionOutOfRange`]) and that
    /// `|p| ≤ limit`, the largest position whose angles stay in the accuracy contract's domain
    /// for the rope's frequencies ([`Error::OutOfDomain`]). `what` names the argument.
    pub(crate) fn check(&self, what: &'static str, limit: u32) -> Result<(), Error> {
        if self.as_i32().is_none()
            && let Some((index, value)) = self.first_out_of_range()
        {
            return Err(Error::PositionOutOfRange {
                what,
                index,
                value: value.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
            });
        }
        match self.first_beyond(limit) {
            Some(value) => Err(Error::OutOfDomain {
                what,
                limit: limit as f64,
                value: value as f64,
            }),
            None => Ok(()),
        }
    }
}

/// cos/sin of a batch of tokens, computed once (by [`Rope::table`](crate::Rope::table), or by
/// another framework) into caller memory: `tokens × pairs` cosines and as many sines, token
/// by token. Every `Rope` entry point that takes positions takes a `Table` instead and rotates
/// bit for bit as it would from the positions the table was made from, without any
/// trigonometry: compute it once per forward pass, then rotate Q and K of every layer from it.
///
/// ```
/// use posenc::{Layout, Rope, RopeConfig, Table};
/// let rope = Rope::new(&RopeConfig::new(4, 1e4, Layout::RotateHalf)).unwrap();
/// // Tables made elsewhere: 1 token, 2 pairs; pair 0 turns by 90°, pair 1 by 0°.
/// let table = Table::new(&[0.0, 1.0], &[1.0, 0.0], 1).unwrap();
/// let mut x = [1.0f32, 2.0, 3.0, 4.0];
/// rope.apply(&mut x, 1, table).unwrap();
/// assert_eq!(x, [-3.0, 2.0, 1.0, 4.0]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Table<'a> {
    cos: &'a [f32],
    sin: &'a [f32],
    tokens: usize,
}

impl<'a> Table<'a> {
    /// A table over `tokens` tokens from cos and sin values the caller computed (e.g. the
    /// `cos`/`sin` tensors of another framework): each `tokens × pairs`, row by row, where
    /// `pairs` is the rotary dim / 2 of the rope that will use it. They are used as they are:
    /// any attention factor must already be in them.
    ///
    /// ```
    /// use posenc::Table;
    /// assert_eq!(Table::new(&[1.0; 6], &[0.0; 6], 3).unwrap().pairs(), 2);
    /// assert!(Table::new(&[1.0; 6], &[0.0; 4], 3).is_err()); // sin differs from cos
    /// assert!(Table::new(&[1.0; 6], &[0.0; 6], 4).is_err()); // 6 is not 4 whole rows
    /// ```
    pub fn new(cos: &'a [f32], sin: &'a [f32], tokens: usize) -> Result<Table<'a>, Error> {
        table_rows(cos.len(), sin.len(), tokens)?;
        Ok(Table { cos, sin, tokens })
    }

    /// Tokens in the table.
    ///
    /// ```
    /// assert_eq!(posenc::Table::new(&[1.0; 6], &[0.0; 6], 3).unwrap().tokens(), 3);
    /// ```
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Pairs per token (the rotary dim / 2 of the rope it serves); 0 for an empty table.
    ///
    /// ```
    /// assert_eq!(posenc::Table::new(&[], &[], 0).unwrap().pairs(), 0);
    /// ```
    pub fn pairs(&self) -> usize {
        self.cos.len().checked_div(self.tokens).unwrap_or(0)
    }

    /// The cosines, `tokens × pairs`.
    ///
    /// ```
    /// assert_eq!(posenc::Table::new(&[0.5], &[0.25], 1).unwrap().cos(), &[0.5]);
    /// ```
    pub fn cos(&self) -> &'a [f32] {
        self.cos
    }

    /// The sines, `tokens × pairs`.
    ///
    /// ```
    /// assert_eq!(posenc::Table::new(&[0.5], &[0.25], 1).unwrap().sin(), &[0.25]);
    /// ```
    pub fn sin(&self) -> &'a [f32] {
        self.sin
    }

    /// Tokens `r` of the table (validated by the caller).
    #[cfg(feature = "rayon")]
    pub(crate) fn slice(self, r: Range<usize>) -> Table<'a> {
        let p = self.pairs();
        Table {
            cos: &self.cos[r.start * p..r.end * p],
            sin: &self.sin[r.start * p..r.end * p],
            tokens: r.end - r.start,
        }
    }

    /// A table from parts already known to agree.
    pub(crate) fn from_parts(cos: &'a [f32], sin: &'a [f32], tokens: usize) -> Table<'a> {
        debug_assert!(cos.len() == sin.len() && (tokens == 0 || cos.len().is_multiple_of(tokens)));
        Table { cos, sin, tokens }
    }
}

/// Where a call's angles come from, once the argument is unpacked.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// One position per token: angles `p · ω`, computed by the call.
    Positions(Ints<'a>),
    /// cos/sin computed before.
    Table(Table<'a>),
}

impl<'a> Source<'a> {
    /// Tokens the source covers.
    pub(crate) fn tokens(&self) -> usize {
        match self {
            Source::Positions(p) => p.len(),
            Source::Table(t) => t.tokens(),
        }
    }

    /// Tokens `r` (validated by the caller).
    #[cfg(feature = "rayon")]
    pub(crate) fn slice(self, r: Range<usize>) -> Source<'a> {
        match self {
            Source::Positions(p) => Source::Positions(p.slice(r)),
            Source::Table(t) => Source::Table(t.slice(r)),
        }
    }
}

/// What a RoPE call rotates by: positions (`&[P]`, `&[P; N]`, `&Vec<P>` of any [`Position`]
/// type) or a [`Table`] (by value or reference).
///
/// ```
/// use posenc::{Layout, Rope, RopeConfig};
/// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::Interleaved)).unwrap();
/// let positions = vec![5u32, 6, 7];
/// let mut buf = vec![0f32; rope.table_len(positions.len())];
/// let table = rope.table(&positions, &mut buf).unwrap();
/// let (mut a, mut b) = (vec![0.5f32; 3 * 2 * 8], vec![0.5f32; 3 * 2 * 8]);
/// rope.apply(&mut a, 2, &positions).unwrap();
/// rope.apply(&mut b, 2, table).unwrap();
/// assert_eq!(a, b); // bit for bit
/// ```
pub trait Angles<'a>: Copy + sealed::Sealed {
    #[doc(hidden)]
    fn source(self) -> Source<'a>;
}

impl<P: Position> sealed::Sealed for &[P] {}
impl<'a, P: Position> Angles<'a> for &'a [P] {
    #[inline]
    fn source(self) -> Source<'a> {
        Source::Positions(P::ints(self))
    }
}

impl<P: Position, const N: usize> sealed::Sealed for &[P; N] {}
impl<'a, P: Position, const N: usize> Angles<'a> for &'a [P; N] {
    #[inline]
    fn source(self) -> Source<'a> {
        Source::Positions(P::ints(self))
    }
}

#[cfg(feature = "std")]
impl<P: Position> sealed::Sealed for &std::vec::Vec<P> {}
#[cfg(feature = "std")]
impl<'a, P: Position> Angles<'a> for &'a std::vec::Vec<P> {
    #[inline]
    fn source(self) -> Source<'a> {
        Source::Positions(P::ints(self))
    }
}

impl sealed::Sealed for Table<'_> {}
impl<'a> Angles<'a> for Table<'a> {
    #[inline]
    fn source(self) -> Source<'a> {
        Source::Table(self)
    }
}

impl sealed::Sealed for Source<'_> {}
impl<'a> Angles<'a> for Source<'a> {
    #[inline]
    fn source(self) -> Source<'a> {
        self
    }
}

impl sealed::Sealed for &Table<'_> {}
impl<'a> Angles<'a> for &Table<'a> {
    #[inline]
    fn source(self) -> Source<'a> {
        Source::Table(*self)
    }
}

/// Positions for the calls that take only positions (a table's own construction, M-RoPE
/// axes): `&[P]`, `&[P; N]`, `&Vec<P>`.
///
/// ```
/// use posenc::{Layout, Rope, RopeConfig};
/// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::Interleaved)).unwrap();
/// let mut buf = [0f32; 16];
/// assert_eq!(rope.table(&[1u16, 2], &mut buf).unwrap().tokens(), 2);
/// ```
pub trait Positions<'a>: Copy + sealed::Sealed {
    #[doc(hidden)]
    fn ints(self) -> Ints<'a>;
}

impl<'a, P: Position> Positions<'a> for &'a [P] {
    #[inline]
    fn ints(self) -> Ints<'a> {
        P::ints(self)
    }
}

impl<'a, P: Position, const N: usize> Positions<'a> for &'a [P; N] {
    #[inline]
    fn ints(self) -> Ints<'a> {
        P::ints(self)
    }
}

#[cfg(feature = "std")]
impl<'a, P: Position> Positions<'a> for &'a std::vec::Vec<P> {
    #[inline]
    fn ints(self) -> Ints<'a> {
        P::ints(self)
    }
}
