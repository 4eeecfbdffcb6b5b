//! Sinusoidal position tables ("Attention Is All You Need", 2017).

use crate::arch::{self, Backend, Rows};
use crate::element::Element;
use crate::error::Error;

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
    /// All sines, then all cosines (Marian).
    Split,
}

/// A sinusoidal encoder: `ω_i = base^(−2i/d_model)`, i.e. `PE[p, 2i] = sin(p / base^(2i/d))`.
///
/// Frequencies and angles are formed in f64 and reduced exactly, so every value is within
/// 2.4e-7 of the f64 formula at every position below 2^24 (numpy's f32 tables are off by
/// 1e-2 at p = 1e6).
///
/// ```
/// use posenc::{Sinusoidal, SinusoidalLayout};
/// let pe = Sinusoidal::new(512, 10_000.0, SinusoidalLayout::Interleaved).unwrap();
/// let mut table = vec![0f32; 16 * 512];
/// pe.fill(&mut table, 0).unwrap();
/// assert!((table[512 + 0] - 1f32.sin()).abs() < 1e-7); // PE[1, 0] = sin(1)
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sinusoidal {
    d_model: usize,
    base: f32,
    layout: SinusoidalLayout,
    backend: Backend,
}

/// `ω_i = base^(−2i/d)`, in f64.
#[inline]
pub(crate) fn frequency(base: f64, i: usize, d_model: usize) -> f64 {
    libm::pow(base, -((2 * i) as f64) / d_model as f64)
}

impl Sinusoidal {
    /// A table of width `d_model` (even, non-zero) with frequency base `base` (finite, > 0).
    ///
    /// ```
    /// use posenc::{Sinusoidal, SinusoidalLayout};
    /// assert!(Sinusoidal::new(64, 10_000.0, SinusoidalLayout::Interleaved).is_ok());
    /// assert!(Sinusoidal::new(63, 10_000.0, SinusoidalLayout::Interleaved).is_err());
    /// ```
    pub fn new(d_model: usize, base: f32, layout: SinusoidalLayout) -> Result<Sinusoidal, Error> {
        if d_model == 0 || !d_model.is_multiple_of(2) {
            return Err(Error::InvalidModelDim { d_model });
        }
        crate::freq::positive("base", base)?;
        Ok(Sinusoidal {
            d_model,
            base,
            layout,
            backend: Backend::active(),
        })
    }

    /// The same encoder, run on `backend`.
    ///
    /// ```
    /// use posenc::{Backend, Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(8, 1e4, SinusoidalLayout::Split).unwrap();
    /// assert_eq!(pe.with_backend(Backend::Scalar).unwrap().backend(), Backend::Scalar);
    /// ```
    pub fn with_backend(self, backend: Backend) -> Result<Sinusoidal, Error> {
        if !backend.is_available() {
            return Err(Error::BackendUnavailable { backend });
        }
        Ok(Sinusoidal { backend, ..self })
    }

    /// The backend this encoder runs on.
    ///
    /// ```
    /// let pe = posenc::Sinusoidal::new(8, 1e4, posenc::SinusoidalLayout::Split).unwrap();
    /// assert_eq!(pe.backend(), posenc::Backend::active());
    /// ```
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The row width.
    ///
    /// ```
    /// let pe = posenc::Sinusoidal::new(8, 1e4, posenc::SinusoidalLayout::Split).unwrap();
    /// assert_eq!(pe.d_model(), 8);
    /// ```
    pub fn d_model(&self) -> usize {
        self.d_model
    }

    fn run<T: Element>(&self, out: &mut [T], rows: Rows<'_>, add: bool) {
        let (d, b, l) = (self.d_model, self.base as f64, self.layout);
        arch::sinusoidal(self.backend, out, d, b, l, rows, add);
    }

    /// Fills `out` (`rows × d_model`) with the rows of positions `first_position ..`.
    ///
    /// ```
    /// use posenc::{Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(4, 10_000.0, SinusoidalLayout::Interleaved).unwrap();
    /// let mut t = [0f32; 8];
    /// pe.fill(&mut t, 0).unwrap();
    /// assert_eq!(&t[..4], &[0.0, 1.0, 0.0, 1.0]);
    /// assert!(pe.fill(&mut t[..5], 0).is_err()); // not whole rows
    /// ```
    pub fn fill<T: Element>(&self, out: &mut [T], first_position: u32) -> Result<(), Error> {
        if !out.len().is_multiple_of(self.d_model) {
            return Err(Error::NotWholeRows {
                what: "out",
                len: out.len(),
                row: self.d_model,
            });
        }
        self.run(out, Rows::From(first_position), false);
        Ok(())
    }

    fn check_positions(&self, len: usize, what: &'static str, n: usize) -> Result<(), Error> {
        let expected = n.checked_mul(self.d_model).ok_or(Error::ShapeOverflow)?;
        if len != expected {
            return Err(Error::LengthMismatch {
                what,
                expected,
                actual: len,
            });
        }
        Ok(())
    }

    /// Fills `out` (`positions.len() × d_model`) with the rows of `positions`.
    ///
    /// ```
    /// use posenc::{Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(2, 10_000.0, SinusoidalLayout::Interleaved).unwrap();
    /// let mut t = [0f32; 4];
    /// pe.fill_positions(&mut t, &[0, -1]).unwrap();
    /// assert_eq!(t[0], 0.0);
    /// assert!((t[2] + 1f32.sin()).abs() < 1e-7);
    /// ```
    pub fn fill_positions<T: Element>(
        &self,
        out: &mut [T],
        positions: &[i32],
    ) -> Result<(), Error> {
        self.check_positions(out.len(), "out", positions.len())?;
        self.run(out, Rows::List(positions), false);
        Ok(())
    }

    /// Adds the rows of `positions` to `x` (`positions.len() × d_model`) in place, in f32,
    /// rounding once to `T`.
    ///
    /// ```
    /// use posenc::{Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(2, 10_000.0, SinusoidalLayout::Interleaved).unwrap();
    /// let mut x = [1.0f32, 1.0];
    /// pe.add(&mut x, &[0]).unwrap();
    /// assert_eq!(x, [1.0, 2.0]); // + [sin 0, cos 0]
    /// ```
    pub fn add<T: Element>(&self, x: &mut [T], positions: &[i32]) -> Result<(), Error> {
        self.check_positions(x.len(), "x", positions.len())?;
        self.run(x, Rows::List(positions), true);
        Ok(())
    }
}
