//! What a sinusoidal table is ([`SinSpec`]: its frequencies, layout and padding row) and which
//! rows a call asks for ([`Rows`]).

use crate::types::SinusoidalLayout;

/// Rows of a sinusoidal call: a run of consecutive positions (`fill`, by the recurrence), or
/// rows given one by one and computed directly, written or added to (`add`).
#[derive(Clone, Copy)]
pub(crate) enum Rows<'a> {
    From(u32),
    Each { at: At<'a>, add: bool },
}

/// Rows given one by one: integer positions, or real-valued times.
#[derive(Clone, Copy)]
pub(crate) enum At<'a> {
    Positions(&'a [i32]),
    Times(&'a [f32]),
}

impl At<'_> {
    /// The position (or time) of row `r`, and whether it is the padding row (times never are).
    #[inline(always)]
    pub(crate) fn position(&self, r: usize, padding: Option<i32>) -> (f64, bool) {
        match *self {
            At::Positions(p) => (p[r] as f64, padding == Some(p[r])),
            At::Times(t) => (t[r] as f64, false),
        }
    }
}

/// What a sinusoidal table is: `pairs` frequencies `ω_i = base^(−i/den)` (f64), laid out in
/// a row of `d_model` values (a last odd column stays zero), an optional all-zero padding row.
#[derive(Clone, Copy, PartialEq)]
pub(crate) struct SinSpec {
    pub d_model: usize,
    pub pairs: usize,
    pub base: f64,
    pub den: f64,
    pub layout: SinusoidalLayout,
    pub padding: Option<i32>,
    /// The frequencies, [`sin_frequencies`]`(base, den, 0, ..)`, when `pairs ≤ SIN_CACHE`
    /// (zeros otherwise); see [`SinSpec::frequencies`].
    pub freq: [f64; SIN_CACHE],
}

/// Frequencies a [`SinSpec`] keeps (d_model ≤ 512): a one-row `add` at decode spends most of
/// its instructions in the `pow` calls of [`sin_frequencies`] otherwise (counted with
/// `valgrind --tool=callgrind` on `cargo bench --bench sinusoidal -- add`), so they are
/// computed once, at construction, for the common widths. 2 KiB in the encoder.
pub(crate) const SIN_CACHE: usize = 256;

/// Without the cached frequencies (a function of the other fields).
impl core::fmt::Debug for SinSpec {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SinSpec")
            .field("d_model", &self.d_model)
            .field("pairs", &self.pairs)
            .field("base", &self.base)
            .field("den", &self.den)
            .field("layout", &self.layout)
            .field("padding", &self.padding)
            .finish_non_exhaustive()
    }
}

impl SinSpec {
    /// A table of `d_model` columns with `pairs` frequencies `base^(−i/den)`.
    pub(crate) fn new(
        d_model: usize,
        pairs: usize,
        (base, den): (f64, f64),
        layout: SinusoidalLayout,
        padding: Option<i32>,
    ) -> SinSpec {
        let mut spec = SinSpec {
            d_model,
            pairs,
            base,
            den,
            layout,
            padding,
            freq: [0.0; SIN_CACHE],
        };
        if pairs <= SIN_CACHE {
            sin_frequencies(base, den, 0, &mut spec.freq[..pairs]);
        }
        spec
    }

    /// `ω_{i0 + k}` for `k < out.len()`: from the cache, or computed. Bitwise the same
    /// either way: `sin_frequencies` restarts its `pow` every 8 indices counted from 0, so
    /// one call over `0 .. pairs` gives the values of calls per chunk. Always inlined into the
    /// kernels, as everything they call (see `engine::vector`), at every opt-level.
    #[inline(always)]
    pub(crate) fn frequencies(&self, i0: usize, out: &mut [f64]) {
        if self.pairs <= SIN_CACHE {
            out.copy_from_slice(&self.freq[i0..i0 + out.len()]);
        } else {
            sin_frequencies(self.base, self.den, i0, out);
        }
    }
}

/// The frequencies `ω_{i0 + k} = base^(−(i0 + k)/den)` for `k < out.len()`, in f64: every
/// eighth one by `pow`, the ones between by repeated multiplication with `base^(−1/den)`.
/// Each is within ~8 f64 ulps of the exact value (at most 7 roundings of the ratio and the
/// products), an angle error below 6e-8 at any position ≤ 2^26: a quarter of the contract,
/// for an eighth of the `pow` calls. (Always inlined: the kernels call it through
/// [`SinSpec::frequencies`].)
#[inline(always)]
pub(crate) fn sin_frequencies(base: f64, den: f64, i0: usize, out: &mut [f64]) {
    let ratio = libm::pow(base, -1.0 / den);
    let mut w = 0.0;
    for (k, o) in out.iter_mut().enumerate() {
        let i = i0 + k;
        w = if k % 8 == 0 {
            libm::pow(base, -(i as f64) / den)
        } else {
            w * ratio
        };
        *o = w;
    }
}

/// The columns of pair `i`'s sine and cosine in a row with `pairs` pairs.
#[inline(always)]
pub(crate) fn sin_columns(layout: SinusoidalLayout, pairs: usize, i: usize) -> (usize, usize) {
    match layout {
        SinusoidalLayout::Interleaved => (2 * i, 2 * i + 1),
        SinusoidalLayout::Split => (i, pairs + i),
        SinusoidalLayout::SplitCosFirst => (pairs + i, i),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pow` restarts at every index that is a multiple of 8, counted from 0, so a call that
    /// starts at any multiple of 8 gives bitwise the values of one call over everything: what
    /// [`SinSpec::frequencies`] (cache or not) and the recurrence's chunks rely on.
    #[test]
    fn pow_restarts_every_eighth_index_from_zero() {
        for (base, den) in [(10_000.0, 63.0), (10_000.0, 32.0), (10_000.0, 255.0)] {
            let mut whole = [0.0f64; 200];
            sin_frequencies(base, den, 0, &mut whole);
            for i in (0..200).step_by(8) {
                let w = libm::pow(base, -(i as f64) / den);
                assert_eq!(
                    whole[i].to_bits(),
                    w.to_bits(),
                    "base {base} den {den}: ω_{i}"
                );
            }
            for i0 in (0..200).step_by(64) {
                let n = 64.min(200 - i0);
                let mut part = [0.0f64; 64];
                sin_frequencies(base, den, i0, &mut part[..n]);
                for k in 0..n {
                    assert_eq!(
                        part[k].to_bits(),
                        whole[i0 + k].to_bits(),
                        "base {base} den {den}: ω_{} from a call at {i0}",
                        i0 + k
                    );
                }
            }
        }
    }
}
