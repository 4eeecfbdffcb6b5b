//! The memory ceiling RoPE is measured against: `x = x·a + b` in place, the same loads and
//! stores as a rotation over the same bytes with the least arithmetic.

use super::dispatch::{dispatch, is_available};
use super::vector::{Kernel, Simd, pad, retype};
use crate::element::{Dtype, Element};
use crate::error::Error;
use crate::types::Backend;

/// `x = x·a + b` in place: one multiply-add per element (fused where the tier fuses), one
/// rounding to `T`.
pub(crate) struct Axpb<'a, T> {
    pub x: &'a mut [T],
    pub a: f32,
    pub b: f32,
}

impl<T: Element> Kernel for Axpb<'_, T> {
    type Output = ();
    const ROUNDS_TO_BF16: bool = matches!(T::DTYPE, Dtype::Bf16);

    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let l = S::LANES;
        let (av, bv) = (s.splat(self.a), s.splat(self.b));
        let mut chunks = self.x.chunks_exact_mut(l);
        for c in &mut chunks {
            s.store(s.mul_add(s.load(c), av, bv), c);
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let mut t = pad(rest);
            s.store(s.mul_add(s.load(&t[..]), av, bv), &mut t[..]);
            let k = rest.len();
            rest.copy_from_slice(&t[..k]);
        }
    }
}

/// The memory ceiling posenc's kernels are measured against: `x = x·a + b` in place over the
/// same bytes, with the same loads and stores (f16/bf16 widened and rounded once) and one
/// multiply-add per element on `backend`. Benchmarks and the tour report RoPE's time as a
/// ratio to this pass; it is public so that a runtime can measure the same ratio on its own
/// machine.
///
/// ```
/// use posenc::Backend;
/// use posenc::bench::memory_ceiling_pass;
/// let mut x = [1.0f32, 2.0, 3.0];
/// memory_ceiling_pass(Backend::active(), &mut x, 2.0, 0.5).unwrap();
/// assert_eq!(x, [2.5, 4.5, 6.5]);
/// ```
pub fn memory_ceiling_pass<T: Element>(
    backend: Backend,
    x: &mut [T],
    a: f32,
    b: f32,
) -> Result<(), Error> {
    if !is_available(backend) {
        return Err(Error::BackendUnavailable { backend });
    }
    match T::DTYPE {
        Dtype::F32 => axpb_f32(backend, retype(x), a, b),
        Dtype::F16 => axpb_f16(backend, retype(x), a, b),
        Dtype::Bf16 => axpb_bf16(backend, retype(x), a, b),
    }
    Ok(())
}

// Instantiated once per dtype, here in posenc (see `rope::rotate_same` for why).
#[inline(never)]
fn axpb_f32(backend: Backend, x: &mut [f32], a: f32, b: f32) {
    dispatch(backend, Axpb { x, a, b })
}

#[inline(never)]
fn axpb_f16(backend: Backend, x: &mut [half::f16], a: f32, b: f32) {
    dispatch(backend, Axpb { x, a, b })
}

#[inline(never)]
fn axpb_bf16(backend: Backend, x: &mut [half::bf16], a: f32, b: f32) {
    dispatch(backend, Axpb { x, a, b })
}
