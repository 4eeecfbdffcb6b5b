//! The one dispatch point: every operation reaches its tier through [`dispatch`], and the
//! [`Backend`] methods say which tiers this CPU and build can run.
//!
//! An operation is a [`Kernel`]: written once, generic over the vector trait. `dispatch`
//! matches the backend once per public call (never per row) and hands the kernel to the
//! tier's token: `Scalar` and `Portable` run it in an entry function of their own; an x86 or
//! aarch64 tier first proves itself (`Avx2::new()` returns a token only where the CPU has the
//! features), then runs the kernel inside its `#[target_feature]` entry function. Adding an operation needs no change
//! here; adding a tier is one arm.
//!
//! Built with `--cfg posenc_portable_only` (a development switch, not a feature: mutation
//! testing uses it, see CONTRIBUTING), the x86 and aarch64 arms fall back to the portable tier
//! and their kernels are never instantiated, so a change to code every kernel inlines
//! re-optimises two tiers instead of four; `Backend::available` then lists only `Scalar` and
//! `Portable`.

#[cfg(all(target_arch = "aarch64", not(posenc_portable_only)))]
use super::aarch64::neon::Neon;
use super::detect;
use super::portable::Portable;
use super::scalar::Scalar;
use super::vector::Kernel;
#[cfg(all(target_arch = "x86_64", not(posenc_portable_only)))]
use super::x86_64::{avx2::Avx2, avx512::Avx512};
use crate::types::Backend;

/// Runs `k` on `backend`. A backend that is not available here (callers check
/// [`is_available`] first, so this does not happen) runs the portable tier instead: the
/// results are within the same contract, and no instruction the CPU lacks is executed.
#[inline]
pub(crate) fn dispatch<K: Kernel>(backend: Backend, k: K) -> K::Output {
    match backend {
        Backend::Scalar => run_scalar(k),
        Backend::Portable => run_portable(k),
        #[cfg(all(target_arch = "x86_64", not(posenc_portable_only)))]
        Backend::Avx2 => match Avx2::new() {
            Some(t) => t.vectorize(k),
            None => run_portable(k),
        },
        #[cfg(all(target_arch = "x86_64", not(posenc_portable_only)))]
        Backend::Avx512 => match Avx512::new() {
            Some(t) => match t.native_bf16() {
                Some(t) if K::ROUNDS_TO_BF16 => t.vectorize(k),
                _ => t.vectorize(k),
            },
            None => run_portable(k),
        },
        #[cfg(any(not(target_arch = "x86_64"), posenc_portable_only))]
        Backend::Avx2 | Backend::Avx512 => run_portable(k),
        #[cfg(all(target_arch = "aarch64", not(posenc_portable_only)))]
        Backend::Neon => match Neon::new() {
            Some(t) => match t.native_bf16() {
                Some(t) if K::ROUNDS_TO_BF16 => t.vectorize(k),
                _ => t.vectorize(k),
            },
            None => run_portable(k),
        },
        #[cfg(any(not(target_arch = "aarch64"), posenc_portable_only))]
        Backend::Neon => run_portable(k),
    }
}

/// Whether `backend` can run on this CPU and build.
/// The scalar tier's entry function. Not inlined, as the SIMD tiers' `#[target_feature]`
/// entries cannot be: each tier's instance of a kernel then has a stack frame of its own, so
/// the frames of two tiers never stack up in one call. Unoptimised (a debug build, or the
/// fuzz replay at opt-level 0), where inlined code keeps every local in its own slot, a
/// kernel's frame runs to about a megabyte, and `dispatch` holding the scalar and portable
/// instances overflowed a test thread's 2 MiB stack on the way to the AVX-512 one.
#[inline(never)]
fn run_scalar<K: Kernel>(k: K) -> K::Output {
    k.run(Scalar)
}

/// The portable tier's entry function (see [`run_scalar`]).
#[inline(never)]
fn run_portable<K: Kernel>(k: K) -> K::Output {
    k.run(Portable)
}

#[inline]
pub(crate) fn is_available(backend: Backend) -> bool {
    match backend {
        Backend::Scalar | Backend::Portable => true,
        Backend::Avx2 => detect::avx2(),
        Backend::Avx512 => detect::avx512(),
        Backend::Neon => detect::neon(),
    }
}

impl Backend {
    /// Every backend that can run here, in [`Backend::ALL`] order: what a test or a benchmark
    /// that compares backends should iterate over.
    ///
    /// ```
    /// let here: Vec<posenc::Backend> = posenc::Backend::available().collect();
    /// assert!(here.contains(&posenc::Backend::Scalar) && here.contains(&posenc::Backend::active()));
    /// ```
    pub fn available() -> impl Iterator<Item = Backend> {
        Backend::ALL.iter().copied().filter(|b| b.is_available())
    }

    /// The backend posenc picks for this CPU: the fastest available (AVX-512, then AVX2, or
    /// NEON on aarch64, then portable). Detected once per process and cached; with `std` at run time, without
    /// `std` from the compile-time target features.
    ///
    /// ```
    /// let b = posenc::Backend::active();
    /// assert!(b.is_available() && b != posenc::Backend::Scalar);
    /// ```
    pub fn active() -> Backend {
        if detect::avx512() {
            Backend::Avx512
        } else if detect::avx2() {
            Backend::Avx2
        } else if detect::neon() {
            Backend::Neon
        } else {
            Backend::Portable
        }
    }

    /// Whether this backend can run on this CPU and build.
    ///
    /// ```
    /// assert!(posenc::Backend::Scalar.is_available());
    /// ```
    pub fn is_available(self) -> bool {
        is_available(self)
    }
}
