//! Sinusoidal position tables ("Attention Is All You Need", 2017): the public encoder and its
//! validation (this file), what a table is (`spec.rs`), and the two ways of computing rows,
//! written once for every tier: the f64 recurrence for consecutive positions
//! (`recurrence.rs`) and one exact-angle sin/cos per value for lists and times (`direct.rs`);
//! `kernel.rs` picks between them.

mod direct;
mod kernel;
mod recurrence;
mod spec;

use crate::element::Element;
use crate::engine::dispatch::is_available;
use crate::error::{Error, Formula};
use crate::trig;
use crate::types::{Backend, SinusoidalLayout};
use spec::{At, Rows, SinSpec};

/// The largest position or time magnitude a sinusoidal table accepts: 2^26. Its largest
/// frequency is `ω_0 = base^0 = 1`, so this keeps every angle within the accuracy contract's
/// domain, `|angle| ≤ 2^26` (see the crate docs).
const MAX_POSITION: u32 = 1 << 26;
// The two limits are one: ω_0 = 1.
const _: () = assert!(MAX_POSITION as f64 == trig::MAX_ANGLE);

/// A sinusoidal encoder. Four conventions, mutually incompatible, are built in:
///
/// | constructor | frequencies `ω_i` | layout | used by |
/// |---|---|---|---|
/// | [`Sinusoidal::new`] (`Interleaved`) | `base^(−2i/d)` | sin, cos, sin, cos… | Vaswani 2017, tensor2tensor |
/// | [`Sinusoidal::new`] (`Split`) | `base^(−2i/d)` | sin… \| cos… | Marian |
/// | [`Sinusoidal::fairseq`] | `base^(−i/(d/2 − 1))` | sin… \| cos…, odd `d` zero-padded, zero padding row | fairseq, M2M100, Speech2Text, Whisper's encoder table |
/// | [`Sinusoidal::timestep`] | `max_period^(−i/(d/2))` | cos… \| sin…, odd `d` zero-padded | latent diffusion, ggml `timestep_embedding` |
///
/// Frequencies and angles are formed in f64 and reduced exactly, so every value is within
/// 2.4e-7 of the f64 formula at every position and time `|p| ≤ 2^26` (numpy's f32 tables are
/// off by 1e-2 at p = 1e6; fairseq's f32 table by 3.6e-3 already at p = 1e5). Positions and
/// times beyond get [`Error::OutOfDomain`] (the crate docs' *Accuracy contract*).
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
    spec: SinSpec,
    backend: Backend,
}

/// A sinusoidal base must be finite and ≥ 1: then every frequency is ≤ 1 and every angle of
/// a u32/i32 position stays in the range the exact reduction covers. (A base below 1 would
/// make frequencies grow with the index, which no convention uses.)
fn at_least_one(what: &'static str, v: f32) -> Result<f32, Error> {
    let v = crate::scaling::positive(what, v)?;
    if v >= 1.0 {
        Ok(v)
    } else {
        Err(Error::ParameterOutOfRange {
            what,
            constraint: "must be finite and at least 1",
            value: v,
        })
    }
}

impl Sinusoidal {
    /// A table of width `d_model` (even, non-zero) with `ω_i = base^(−2i/d_model)` (`base`
    /// finite, ≥ 1): the 2017 formula.
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
        at_least_one("base", base)?;
        let pairs = d_model / 2;
        Ok(Sinusoidal::from_spec(SinSpec::new(
            d_model,
            pairs,
            (base as f64, pairs as f64),
            layout,
            None,
        )))
    }

    /// The fairseq / tensor2tensor table (M2M100, Speech2Text, XGLM…): `half = d_model / 2`
    /// frequencies `ω_i = 10000^(−i/(half − 1))` (note `half − 1`, so `ω_{half−1} = 1/10000`),
    /// all sines then all cosines, a zero last column when `d_model` is odd, and an all-zero
    /// row at `padding_idx`. Rows are indexed by the raw table position: token `t` of a
    /// sequence sits at `padding_idx + 1 + t` (see [`fairseq_positions`]). Needs
    /// `d_model ≥ 4` and `padding_idx ≤ 2^26` (the position domain, see below).
    ///
    /// ```
    /// use posenc::Sinusoidal;
    /// let pe = Sinusoidal::fairseq(8, Some(1)).unwrap();
    /// let mut rows = [9f32; 16];
    /// pe.fill_positions(&mut rows, &[1, 2]).unwrap();
    /// assert_eq!(&rows[..8], &[0.0; 8]); // the padding row
    /// assert!((rows[8] - 2f32.sin()).abs() < 1e-7); // row 2: sin(2·ω_0), ω_0 = 1
    /// ```
    pub fn fairseq(d_model: usize, padding_idx: Option<u32>) -> Result<Sinusoidal, Error> {
        let pairs = d_model / 2;
        if pairs < 2 {
            return Err(Error::InvalidModelDim { d_model });
        }
        let padding = match padding_idx {
            // A padding row past the domain could never be asked for.
            Some(p) if p > MAX_POSITION => {
                return Err(Error::OutOfDomain {
                    what: "padding_idx",
                    limit: MAX_POSITION as f64,
                    value: p as f64,
                });
            }
            Some(p) => Some(p as i32),
            None => None,
        };
        Ok(Sinusoidal::from_spec(SinSpec::new(
            d_model,
            pairs,
            (10_000.0, (pairs - 1) as f64),
            SinusoidalLayout::Split,
            padding,
        )))
    }

    /// The diffusion timestep embedding (`timestep_embedding` of latent diffusion and ggml):
    /// `half = d_model / 2` frequencies `ω_i = max_period^(−i/half)`, cosines first, a zero last
    /// column when `d_model` is odd. Timesteps may be fractional: see
    /// [`Sinusoidal::fill_times`].
    ///
    /// ```
    /// use posenc::Sinusoidal;
    /// let pe = Sinusoidal::timestep(4, 10_000.0).unwrap();
    /// let mut e = [0f32; 4];
    /// pe.fill_times(&mut e, &[0.5]).unwrap();
    /// assert!((e[0] - 0.5f32.cos()).abs() < 1e-7 && (e[2] - 0.5f32.sin()).abs() < 1e-7);
    /// ```
    pub fn timestep(d_model: usize, max_period: f32) -> Result<Sinusoidal, Error> {
        let pairs = d_model / 2;
        if pairs == 0 {
            return Err(Error::InvalidModelDim { d_model });
        }
        at_least_one("max_period", max_period)?;
        Ok(Sinusoidal::from_spec(SinSpec::new(
            d_model,
            pairs,
            (max_period as f64, pairs as f64),
            SinusoidalLayout::SplitCosFirst,
            None,
        )))
    }

    fn from_spec(spec: SinSpec) -> Sinusoidal {
        Sinusoidal {
            spec,
            backend: Backend::active(),
        }
    }
    /// The same encoder, run on `backend`.
    ///
    /// ```
    /// use posenc::{Backend, Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(8, 1e4, SinusoidalLayout::Split).unwrap();
    /// assert_eq!(pe.with_backend(Backend::Scalar).unwrap().backend(), Backend::Scalar);
    /// ```
    pub fn with_backend(self, backend: Backend) -> Result<Sinusoidal, Error> {
        if !is_available(backend) {
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
        self.spec.d_model
    }

    /// The layout of a row.
    ///
    /// ```
    /// let pe = posenc::Sinusoidal::timestep(8, 1e4).unwrap();
    /// assert_eq!(pe.layout(), posenc::SinusoidalLayout::SplitCosFirst);
    /// ```
    pub fn layout(&self) -> SinusoidalLayout {
        self.spec.layout
    }

    /// Frequency `i` (`i < d_model / 2`), in f64 as the tables use it; `None` past the end.
    ///
    /// ```
    /// let pe = posenc::Sinusoidal::fairseq(64, Some(1)).unwrap();
    /// assert!((pe.frequency(31).unwrap() - 1e-4).abs() < 1e-18);
    /// ```
    pub fn frequency(&self, i: usize) -> Option<f64> {
        if i >= self.spec.pairs {
            return None;
        }
        let mut w = [0.0];
        spec::sin_frequencies(self.spec.base, self.spec.den, i, &mut w);
        Some(w[0])
    }

    fn run<T: Element>(&self, out: &mut [T], rows: Rows<'_>) {
        kernel::sinusoids(self.backend, out, &self.spec, rows);
    }

    /// Fills `out` (`rows × d_model`) with the rows of positions `first_position ..`.
    ///
    /// Consecutive positions are computed by an f64 recurrence rather than one sine and
    /// cosine per value: per block of 256 positions (aligned to multiples of 256) and
    /// frequency, f64 `sin/cos` at the block's first two positions, then each further value
    /// of a column from the two before it, `y(p + 2) = 2cos ω·y(p + 1) − y(p)` (one f64
    /// multiplication and subtraction), rounded once to f32 and once to `T`. The recurrence
    /// adds ≤ 3e-11 (at most 254 steps per value, whatever the position), so every value is
    /// within ≈ 5e-8 of the f64 formula in the domain (one f32 rounding plus the frequency
    /// error), inside the 2.4e-7 contract. It is therefore **not** necessarily bitwise equal
    /// to [`Sinusoidal::fill_positions`] (or [`Sinusoidal::fill_times`]) over the same
    /// positions, which compute each value directly; both meet the contract. Each row depends
    /// on its position alone: filling a sub-range gives bitwise the same rows as a longer
    /// fill, and every backend gives the same bits.
    ///
    /// For a few rows, [`Sinusoidal::fill_positions`] is faster: every `fill` starts at the
    /// 256-aligned block before `first_position` and steps up to it (up to 255 steps of every
    /// column before the first row it writes).
    ///
    /// # Errors
    /// [`Error::NotWholeRows`] when `out` is not whole rows; [`Error::OutOfDomain`] when the
    /// last row's position `first_position + rows − 1` exceeds 2^26.
    ///
    /// ```
    /// use posenc::{Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(4, 10_000.0, SinusoidalLayout::Interleaved).unwrap();
    /// let mut t = [0f32; 8];
    /// pe.fill(&mut t, 0).unwrap();
    /// assert_eq!(&t[..4], &[0.0, 1.0, 0.0, 1.0]);
    /// assert!(pe.fill(&mut t[..5], 0).is_err()); // not whole rows
    /// assert!(pe.fill(&mut t, 1 << 26).is_err()); // rows at 2^26 and 2^26 + 1
    /// assert!(pe.fill(&mut t, (1 << 26) - 1).is_ok());
    /// ```
    pub fn fill<T: Element>(&self, out: &mut [T], first_position: u32) -> Result<(), Error> {
        self.check_fill(out.len(), first_position)?;
        self.run(out, Rows::From(first_position));
        Ok(())
    }

    /// [`Sinusoidal::fill`]'s checks: whole rows, and the last row's position
    /// (`first_position + rows − 1`) within [`MAX_POSITION`].
    pub(crate) fn check_fill(&self, len: usize, first_position: u32) -> Result<(), Error> {
        let d = self.spec.d_model;
        if !len.is_multiple_of(d) {
            return Err(Error::NotWholeRows {
                what: "out",
                len,
                row: d,
                formula: Formula::two(&"positions × d_model", [0, d]),
            });
        }
        let rows = (len / d) as u64;
        let last = first_position as u64 + rows.saturating_sub(1);
        if rows > 0 && last > MAX_POSITION as u64 {
            return Err(Error::OutOfDomain {
                what: "first_position + rows - 1",
                limit: MAX_POSITION as f64,
                value: last as f64,
            });
        }
        Ok(())
    }

    /// The length check of the list and time entry points: `len == n · d_model`.
    fn check_rows(&self, len: usize, what: &'static str, n: usize) -> Result<(), Error> {
        let expected = n
            .checked_mul(self.spec.d_model)
            .ok_or(Error::ShapeOverflow)?;
        if len != expected {
            return Err(Error::LengthMismatch {
                what,
                expected,
                actual: len,
                formula: Formula::two(&"positions × d_model", [n, self.spec.d_model]),
            });
        }
        Ok(())
    }

    /// [`Sinusoidal::fill_positions`]' and [`Sinusoidal::add`]'s checks: `len` is
    /// `positions.len()` rows, and every `|p| ≤ MAX_POSITION`.
    pub(crate) fn check_positions(
        &self,
        len: usize,
        what: &'static str,
        positions: &[i32],
    ) -> Result<(), Error> {
        self.check_rows(len, what, positions.len())?;
        trig::check_positions("positions", positions, 1.0)
    }

    /// Fills `out` (`positions.len() × d_model`) with the rows of `positions`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `out` is not `positions.len()` rows;
    /// [`Error::OutOfDomain`] when some `|p| > 2^26`.
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
        self.check_positions(out.len(), "out", positions)?;
        self.run(
            out,
            Rows::Each {
                at: At::Positions(positions),
                add: false,
            },
        );
        Ok(())
    }

    /// Adds the rows of `positions` to `x` (`positions.len() × d_model`) in place, in f32,
    /// rounding once to `T`.
    ///
    /// # Errors
    /// As [`Sinusoidal::fill_positions`], for `x`.
    ///
    /// ```
    /// use posenc::{Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(2, 10_000.0, SinusoidalLayout::Interleaved).unwrap();
    /// let mut x = [1.0f32, 1.0];
    /// pe.add(&mut x, &[0]).unwrap();
    /// assert_eq!(x, [1.0, 2.0]); // + [sin 0, cos 0]
    /// ```
    pub fn add<T: Element>(&self, x: &mut [T], positions: &[i32]) -> Result<(), Error> {
        self.check_positions(x.len(), "x", positions)?;
        self.run(
            x,
            Rows::Each {
                at: At::Positions(positions),
                add: true,
            },
        );
        Ok(())
    }

    /// Fills `out` (`times.len() × d_model`) with the rows of real-valued positions (diffusion
    /// timesteps, which may be fractional). The angle `t·ω` is formed in f64 from the f32 `t`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `out` is not `times.len()` rows; [`Error::OutOfDomain`]
    /// when some `|t| > 2^26` or is NaN.
    ///
    /// ```
    /// let pe = posenc::Sinusoidal::timestep(2, 10_000.0).unwrap();
    /// let mut e = [0f32; 2];
    /// pe.fill_times(&mut e, &[999.5]).unwrap();
    /// assert!((e[0] - (999.5f64).cos() as f32).abs() < 2.4e-7);
    /// assert!(pe.fill_times(&mut e, &[1e16]).is_err()); // beyond 2^26
    /// assert!(pe.fill_times(&mut e, &[f32::NAN]).is_err());
    /// ```
    pub fn fill_times<T: Element>(&self, out: &mut [T], times: &[f32]) -> Result<(), Error> {
        self.check_rows(out.len(), "out", times.len())?;
        if let Some(&t) = times
            .iter()
            .find(|&&t| !trig::angle_in_domain(t as f64, 1.0))
        {
            return Err(Error::OutOfDomain {
                what: "times",
                limit: MAX_POSITION as f64,
                value: t as f64,
            });
        }
        self.run(
            out,
            Rows::Each {
                at: At::Times(times),
                add: false,
            },
        );
        Ok(())
    }
}

/// fairseq's `make_positions` / HF's `create_position_ids_from_input_ids`: the table row of
/// each token of a (left- or right-padded) sequence. Real tokens count up from
/// `padding_idx + 1 + past_len`; padding tokens (`input_ids[t] == padding_idx`) get
/// `padding_idx`, the zero row of [`Sinusoidal::fairseq`]. Validates before writing: `out`
/// must have `input_ids.len()` entries and every position must fit an `i32`.
///
/// ```
/// let mut pos = [0i32; 5];
/// posenc::fairseq_positions(&[1, 1, 7, 8, 9], 1, 0, &mut pos).unwrap();
/// assert_eq!(pos, [1, 1, 2, 3, 4]);
/// ```
pub fn fairseq_positions(
    input_ids: &[i64],
    padding_idx: i64,
    past_len: i64,
    out: &mut [i32],
) -> Result<(), Error> {
    if out.len() != input_ids.len() {
        return Err(Error::LengthMismatch {
            what: "out",
            expected: input_ids.len(),
            actual: out.len(),
            formula: Formula::one(&"input_ids.len()", input_ids.len()),
        });
    }
    let real = input_ids.iter().filter(|&&t| t != padding_idx).count() as i64;
    let last = padding_idx
        .checked_add(past_len)
        .and_then(|v| v.checked_add(real));
    let fits = |v: i64| i32::try_from(v).is_ok();
    if !(fits(padding_idx) && last.is_some_and(fits) && past_len >= 0) {
        return Err(Error::ParameterOutOfRange {
            what: "padding_idx + past_len + tokens",
            constraint: "must be a non-negative past length with positions fitting an i32",
            value: past_len as f32,
        });
    }
    let mut count = 0i64;
    for (o, &t) in out.iter_mut().zip(input_ids) {
        if t == padding_idx {
            *o = padding_idx as i32;
        } else {
            count += 1;
            *o = (padding_idx + past_len + count) as i32;
        }
    }
    Ok(())
}
