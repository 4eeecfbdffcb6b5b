//! The sinusoidal kernel: which method fills which rows, written once for every tier.

use super::spec::{Rows, SinSpec};
use super::{direct, recurrence};
use crate::element::{Dtype, Element};
use crate::engine::dispatch::dispatch;
use crate::engine::vector::{Kernel, Simd, retype};
use crate::types::Backend;

/// Fills (or adds to) `out`, whole rows of `rows` (validated by the caller), on `backend`.
/// Instantiated once per dtype, here in posenc (see `engine::rope::rotate_same` for why).
#[inline]
pub(crate) fn sinusoids<T: Element>(
    backend: Backend,
    out: &mut [T],
    spec: &SinSpec,
    rows: Rows<'_>,
) {
    match T::DTYPE {
        Dtype::F32 => sinusoids_f32(backend, retype(out), spec, rows),
        Dtype::F16 => sinusoids_f16(backend, retype(out), spec, rows),
        Dtype::Bf16 => sinusoids_bf16(backend, retype(out), spec, rows),
    }
}

#[inline(never)]
fn sinusoids_f32(b: Backend, out: &mut [f32], spec: &SinSpec, rows: Rows<'_>) {
    dispatch(b, Sinusoids { out, spec, rows })
}

#[inline(never)]
fn sinusoids_f16(b: Backend, out: &mut [half::f16], spec: &SinSpec, rows: Rows<'_>) {
    dispatch(b, Sinusoids { out, spec, rows })
}

#[inline(never)]
fn sinusoids_bf16(b: Backend, out: &mut [half::bf16], spec: &SinSpec, rows: Rows<'_>) {
    dispatch(b, Sinusoids { out, spec, rows })
}

/// Fills (or adds to) `out`, whole rows of `rows` (validated by the caller).
pub(crate) struct Sinusoids<'a, T> {
    pub out: &'a mut [T],
    pub spec: &'a SinSpec,
    pub rows: Rows<'a>,
}

impl<T: Element> Kernel for Sinusoids<'_, T> {
    type Output = ();
    const ROUNDS_TO_BF16: bool = matches!(T::DTYPE, Dtype::Bf16);

    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let Sinusoids { out, spec, rows } = self;
        if out.is_empty() {
            return; // no rows: nothing to compute, however wide the rows would be
        }
        let d = spec.d_model;
        let add = match rows {
            Rows::From(first) => {
                recurrence::fill(s, out, spec, first);
                false
            }
            Rows::Each { at, add } => {
                direct::fill(s, out, spec, at, add);
                add
            }
        };
        if 2 * spec.pairs < d {
            // An odd width's last column is zero (fairseq and timestep embeddings pad it).
            for row in out.chunks_exact_mut(d) {
                let last = &mut row[d - 1];
                *last = T::from_f32(if add { last.to_f32() + 0.0 } else { 0.0 });
            }
        }
    }
}
