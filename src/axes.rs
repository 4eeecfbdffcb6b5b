//! Multi-axis positions: M-RoPE (Qwen2-VL, Qwen3-VL) and 2-D vision RoPE.

use crate::error::{Error, Formula};
use crate::scaling::{MAX_PAIRS, Scaling};

/// How many positions a token has and which axis each rotary pair follows.
///
/// ```
/// use posenc::Axes;
/// assert_eq!(Axes::Single.count(), 1);
/// assert_eq!(Axes::Vision2d.count(), 2);
/// assert_eq!(Axes::MRopeInterleaved { sections: [24, 20, 20] }.count(), 3);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Axes {
    /// One position per token: plain RoPE.
    #[default]
    Single,
    /// Qwen2-VL M-RoPE: positions `[t, h, w]`; the first `sections[0]` pairs follow `t`, the
    /// next `sections[1]` follow `h`, the last `sections[2]` follow `w` (the sections count
    /// pairs and sum to `rotary_dim / 2`; Qwen2-VL uses `[16, 24, 24]`). Pair `j` keeps its
    /// global frequency `ω_j`.
    MRope {
        /// Pairs per axis `[t, h, w]`.
        sections: [usize; 3],
    },
    /// Qwen3-VL interleaved M-RoPE: pair `j` follows `h` if `j % 3 == 1 && j < 3·sections[1]`,
    /// `w` if `j % 3 == 2 && j < 3·sections[2]`, else `t` (Qwen3-VL: `[24, 20, 20]`).
    MRopeInterleaved {
        /// Pairs per axis `[t, h, w]`.
        sections: [usize; 3],
    },
    /// 2-D vision RoPE (Qwen2-VL ViT, ggml `VISION`): positions `[row, col]`; the first half of
    /// the pairs follow the row, the second half the column, each half with the frequencies
    /// `b^(−2j/(rotary_dim/2))` (index reset per half). Requires `rotary_dim % 4 == 0` and no
    /// scaling.
    Vision2d,
}

impl Axes {
    /// Positions per token.
    ///
    /// ```
    /// assert_eq!(posenc::Axes::MRope { sections: [16, 24, 24] }.count(), 3);
    /// ```
    pub fn count(self) -> usize {
        match self {
            Axes::Single => 1,
            Axes::Vision2d => 2,
            Axes::MRope { .. } | Axes::MRopeInterleaved { .. } => 3,
        }
    }

    /// Fills the axis of each pair (and, for 2-D vision, replaces the frequencies).
    pub(crate) fn resolve(
        self,
        rotary_dim: usize,
        scaling: &Scaling<'_>,
        base: f32,
        inv_freq: &mut [f32; MAX_PAIRS],
        axis: &mut [u8; MAX_PAIRS],
    ) -> Result<(), Error> {
        let pairs = rotary_dim / 2;
        let axis = &mut axis[..pairs];
        match self {
            Axes::Single => axis.fill(0),
            Axes::MRope { sections } | Axes::MRopeInterleaved { sections } => {
                let total = sections.iter().try_fold(0usize, |a, &s| a.checked_add(s));
                if total != Some(pairs) {
                    return Err(Error::LengthMismatch {
                        what: "sections",
                        expected: pairs,
                        actual: total.unwrap_or(usize::MAX),
                        formula: Formula::one(&"rotary_dim/2", pairs),
                    });
                }
                for (j, a) in axis.iter_mut().enumerate() {
                    *a = match self {
                        Axes::MRope { .. } => {
                            if j < sections[0] {
                                0
                            } else if j < sections[0] + sections[1] {
                                1
                            } else {
                                2
                            }
                        }
                        _ => {
                            if j % 3 == 1 && j < 3 * sections[1] {
                                1
                            } else if j % 3 == 2 && j < 3 * sections[2] {
                                2
                            } else {
                                0
                            }
                        }
                    };
                }
            }
            Axes::Vision2d => {
                if !rotary_dim.is_multiple_of(4) {
                    return Err(Error::ParameterOutOfRange {
                        what: "rotary_dim",
                        constraint: "must be a multiple of 4 for 2-D vision RoPE",
                        value: rotary_dim as f32,
                    });
                }
                if *scaling != Scaling::None {
                    return Err(Error::ParameterOutOfRange {
                        what: "scaling",
                        constraint: "must be None for 2-D vision RoPE",
                        value: 0.0,
                    });
                }
                let quarter = pairs / 2;
                let mut half_freq = [0.0f32; MAX_PAIRS];
                crate::scaling::default_inv_freq(base, pairs, &mut half_freq);
                for j in 0..pairs {
                    inv_freq[j] = half_freq[j % quarter];
                    axis[j] = (j >= quarter) as u8;
                }
            }
        }
        Ok(())
    }
}
