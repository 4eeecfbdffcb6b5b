//! What this CPU can run: detected once per process and cached.
//!
//! With `std`, the x86 tiers are detected at run time (`is_x86_feature_detected!`), NEON with
//! `is_aarch64_feature_detected!`; features the build already guarantees (`-C target-feature`,
//! `-C target-cpu`, and NEON on every standard aarch64 target) need no detection, and
//! without `std` they are the only source. Miri cannot answer `cpuid`, so under Miri only the
//! compile-time features count (which is how CI runs the AVX2 tier on Miri's model of the
//! intrinsics).

use core::sync::atomic::{AtomicU8, Ordering};

const AVX2: u8 = 1;
const AVX512: u8 = 2;
const AVX512_BF16: u8 = 4;
const NEON: u8 = 8;
const NEON_BF16: u8 = 16;
const KNOWN: u8 = 0x80;

/// Whether the CPU runs AVX2 + FMA + F16C (the `Avx2` tier).
#[inline]
pub(crate) fn avx2() -> bool {
    features() & AVX2 != 0
}

/// Whether the CPU runs AVX-512F + AVX2 + FMA + F16C (the `Avx512` tier).
#[inline]
pub(crate) fn avx512() -> bool {
    features() & AVX512 != 0
}

/// Whether the `Avx512` tier may also use AVX512-BF16's conversion (with AVX512-DQ's
/// `vfpclassps` for the inputs that conversion does not round as `half` does).
#[inline]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // read by the x86-64 tier only
pub(crate) fn avx512_bf16() -> bool {
    features() & AVX512_BF16 != 0
}

/// Whether the CPU runs aarch64 Advanced SIMD (the `Neon` tier).
#[inline]
pub(crate) fn neon() -> bool {
    features() & NEON != 0
}

/// Whether the `Neon` tier may also use FEAT_BF16's `bfcvtn` to round to bf16 (Armv8.6-A,
/// optional from Armv8.2-A: Neoverse V1/V2/N2, Apple M2 and later).
#[inline]
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))] // read by the aarch64 tier only
pub(crate) fn neon_bf16() -> bool {
    features() & NEON_BF16 != 0
}

/// The usable tiers as a bit set, detected once and cached (a relaxed atomic: detection is
/// idempotent, so racing threads store the same value).
#[inline]
fn features() -> u8 {
    static CACHE: AtomicU8 = AtomicU8::new(0);
    let f = CACHE.load(Ordering::Relaxed);
    if f & KNOWN != 0 {
        return f;
    }
    let f = detect() | KNOWN;
    CACHE.store(f, Ordering::Relaxed);
    f
}

#[cold]
fn detect() -> u8 {
    // `posenc_portable_only` builds no SIMD tier (see `dispatch`): none is offered.
    if cfg!(posenc_portable_only) {
        return 0;
    }
    #[allow(unused_mut)]
    let mut f = 0;
    if cfg!(all(
        target_arch = "x86_64",
        target_feature = "avx2",
        target_feature = "fma",
        target_feature = "f16c"
    )) {
        f |= AVX2;
        if cfg!(target_feature = "avx512f") {
            f |= AVX512;
            if cfg!(all(
                target_feature = "avx512bf16",
                target_feature = "avx512dq",
                target_feature = "avx512bw"
            )) {
                f |= AVX512_BF16;
            }
        }
    }
    #[cfg(all(target_arch = "x86_64", feature = "std", not(miri)))]
    {
        use std::is_x86_feature_detected as has;
        if has!("avx2") && has!("fma") && has!("f16c") {
            f |= AVX2;
            if has!("avx512f") {
                f |= AVX512;
                if has!("avx512bf16") && has!("avx512dq") && has!("avx512bw") {
                    f |= AVX512_BF16;
                }
            }
        }
    }
    // NEON is part of every standard aarch64 target (the build guarantees it: no run-time
    // check); a target built without it (`-neon`, soft-float) asks the CPU.
    if cfg!(all(target_arch = "aarch64", target_feature = "neon")) {
        f |= NEON;
    }
    #[cfg(all(target_arch = "aarch64", feature = "std", not(miri)))]
    if f & NEON == 0 && std::arch::is_aarch64_feature_detected!("neon") {
        f |= NEON;
    }
    if f & NEON != 0 && cfg!(all(target_arch = "aarch64", target_feature = "bf16")) {
        f |= NEON_BF16;
    }
    #[cfg(all(target_arch = "aarch64", feature = "std", not(miri)))]
    if f & NEON != 0 && std::arch::is_aarch64_feature_detected!("bf16") {
        f |= NEON_BF16;
    }
    f
}
