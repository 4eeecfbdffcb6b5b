//! QK-norm inside the driver: a head's (or a row's) sum of squares, the RMSNorm factor, and
//! the normalising load the head kernels read through.

use super::run::{Pre, Run};
use crate::element::{Dtype, Element};
use crate::engine::job::NormKind;
use crate::engine::math::sqrt_f32;
use crate::engine::vector::{MAX_LANES, Simd, pad};

/// Heads whose norm factors are computed before any of them is rotated: their sums are
/// independent, so the CPU overlaps them rather than waiting on each head's sum → square
/// root → rotation in turn (see `Run::stream` and `Run::normed_heads`).
pub(super) const NORM_GROUP: usize = 16;

impl<S: Simd> Run<'_, S> {
    /// `Σ x²` over the `n` values at `p`, each square exact in f64, summed in f64.
    ///
    /// # Safety
    /// `p .. p + n` is readable.
    #[inline(always)]
    pub(super) unsafe fn sum_squares<I: Element>(&self, p: *const I, n: usize) -> f64 {
        let (s, l) = (self.s, S::LANES);
        // Four accumulators, two vectors a step: each add waits on the one two vectors back,
        // not one (the contract leaves the order of the f64 sum free, see `RmsNorm`).
        let mut acc = [s.dsplat(0.0); 4];
        let mut k = 0;
        while k + 2 * l <= n {
            for u in 0..2 {
                // SAFETY: values `k + u·l .. k + (u + 1)·l ≤ n`.
                let (lo, hi) = unsafe { self.widen::<I>(p.add(k + u * l)) };
                acc[2 * u] = s.dsquare_add(lo, acc[2 * u]);
                acc[2 * u + 1] = s.dsquare_add(hi, acc[2 * u + 1]);
            }
            k += 2 * l;
        }
        while k < n {
            let (lo, hi) = if k + l <= n {
                // SAFETY: values `k .. k + l ≤ n`.
                unsafe { self.widen::<I>(p.add(k)) }
            } else {
                // SAFETY: values `k .. n`; the rest of the vector is zero padding.
                let tail = unsafe { core::slice::from_raw_parts(p.add(k), n - k) };
                let padded = pad(tail);
                // SAFETY: `padded` holds `MAX_LANES ≥ l` values.
                unsafe { self.widen::<I>(padded.as_ptr()) }
            };
            acc[0] = s.dsquare_add(lo, acc[0]);
            acc[1] = s.dsquare_add(hi, acc[1]);
            k += l;
        }
        let mut out = [0.0f64; MAX_LANES];
        s.store_d(
            s.dadd(s.dadd(acc[0], acc[1]), s.dadd(acc[2], acc[3])),
            &mut out[..],
        );
        out[..l / 2].iter().sum()
    }

    /// The norm factors ([`scale`]) of the `g ≤ NORM_GROUP` heads at `p + i·ps`, `n` values
    /// each, in lanes `0 .. g`: every sum, then every factor, so that the group's divisions
    /// and square roots issue back to back rather than one per head between the sums.
    ///
    /// # Safety
    /// Each of those heads' `n` values is readable.
    #[inline(always)]
    pub(super) unsafe fn factors<I: Element>(
        &self,
        p: *const I,
        ps: usize,
        g: usize,
        n: usize,
        eps: f32,
    ) -> [f32; NORM_GROUP] {
        let mut sums = [0.0f64; NORM_GROUP];
        for (i, sum) in sums[..g.min(NORM_GROUP)].iter_mut().enumerate() {
            // SAFETY: head `i < g` (the caller's precondition).
            *sum = unsafe { self.sum_squares(p.wrapping_add(i * ps), n) };
        }
        let mut rs = [0.0f32; NORM_GROUP];
        // (All NORM_GROUP lanes, the unused ones too: a loop of fixed length is what LLVM
        // vectorises.)
        for (r, &sum) in rs.iter_mut().zip(&sums) {
            *r = scale(sum, n, eps);
        }
        rs
    }

    /// The `LANES` values of `I` at `p` as f64 (exact): the low half and the high half.
    ///
    /// # Safety
    /// `p .. p + LANES` is readable.
    #[inline(always)]
    pub(super) unsafe fn widen<I: Element>(&self, p: *const I) -> (S::D, S::D) {
        let (s, l) = (self.s, S::LANES);
        if I::DTYPE == Dtype::F32 {
            let p = p.cast::<f32>();
            // SAFETY: `I` is f32 (its dtype), and both halves are in `p .. p + l`.
            unsafe { (s.ld_widen(p), s.ld_widen(p.add(l / 2))) }
        } else {
            let mut tmp = [0.0f32; MAX_LANES];
            // SAFETY: the caller's precondition.
            s.store(unsafe { s.ld::<I>(p) }, &mut tmp[..]);
            (s.load_widen(&tmp[..]), s.load_widen(&tmp[l / 2..]))
        }
    }

    /// The norm of `x` with weights `w`: `(x·r)·w'` in f32 under posenc's rounding (`w'` is `w`,
    /// or `1 + w` for Gemma), HF's module arithmetic and roundings to `I` otherwise.
    #[inline(always)]
    pub(super) fn pre<I: Element, const ONCE: bool>(
        &self,
        x: S::F,
        w: S::F,
        pre: Pre<S::F>,
    ) -> S::F {
        self.normed::<I, ONCE>(x, self.s.add(w, pre.one), pre)
    }

    /// What [`Pre::one`] adds to each weight of norm `kind`: 1 for Gemma's `1 + w`, else
    /// −0.0, which leaves every weight as it is.
    #[inline(always)]
    pub(super) fn one(&self, kind: NormKind) -> S::F {
        self.s.splat(if kind == NormKind::HeadOnePlus {
            1.0
        } else {
            -0.0
        })
    }

    /// [`Run::pre`] with the weights' `w + one` already added (`w1`): a loop that holds a
    /// head's weights in registers adds it once per call rather than once per vector. For
    /// `Head` and `Row` `one` is −0.0, so `w1` is `w` bit for bit.
    #[inline(always)]
    pub(super) fn normed<I: Element, const ONCE: bool>(
        &self,
        x: S::F,
        w1: S::F,
        pre: Pre<S::F>,
    ) -> S::F {
        let s = self.s;
        let xr = s.mul(x, pre.r);
        if ONCE {
            return s.mul(w1, xr);
        }
        match pre.kind {
            NormKind::Head => s.round_to::<I>(s.mul(w1, s.round_to::<I>(xr))),
            _ => s.round_to::<I>(s.mul(w1, xr)),
        }
    }

    /// Loads `LANES` values of `I` at `p`, normalised when `NORM` (weights at `w`).
    ///
    /// # Safety
    /// `p .. p + LANES` is readable, and `w .. w + LANES` when `NORM`.
    #[inline(always)]
    pub(super) unsafe fn ld<I: Element, const ONCE: bool, const NORM: bool>(
        &self,
        p: *const I,
        w: *const f32,
        pre: Pre<S::F>,
    ) -> S::F {
        // SAFETY: the caller's precondition.
        unsafe {
            let x = self.s.ld::<I>(p);
            if NORM {
                self.pre::<I, ONCE>(x, self.s.ld_f32(w), pre)
            } else {
                x
            }
        }
    }
}

/// The RMSNorm factor `1 / sqrt(mean + eps)` of `n` values whose squares sum to `sum`: the
/// mean rounded once to f32 (`sum` carries every square exactly, in f64), then HF's f32
/// arithmetic (`torch.rsqrt` is `1 / sqrt`, two roundings).
#[inline(always)]
pub(super) fn scale(sum: f64, n: usize, eps: f32) -> f32 {
    let mean = (sum / n as f64) as f32;
    1.0 / sqrt_f32(mean + eps)
}
