//! Which backend runs, checked against what the CPU says.
//!
//! Always: every backend in [`Backend::ALL`] reports `is_available()` exactly as the CPU's
//! features imply (`std::is_x86_feature_detected!`: AVX2+FMA+F16C → `Avx2`, and also AVX-512F
//! → `Avx512`; `std::arch::is_aarch64_feature_detected!`: NEON → `Neon`; `Scalar` and
//! `Portable` everywhere), and [`Backend::active`] is the fastest available one. Built without
//! posenc's `std` feature, the build's target features take the CPU's place (nothing is
//! detected at run time then). With `POSENC_EXPECT_BACKEND` set (CI sets it from
//! /proc/cpuinfo natively, to `avx2` / `portable` under `qemu-x86_64 -cpu Haswell` / `-cpu
//! Nehalem`, to `neon` under `qemu-aarch64`, and to `portable` for the build without `std`),
//! the active backend must be that one, so a tier that is silently not selected fails the
//! build.

use posenc::Backend;

/// The tiers this CPU supports, from std's own detection (independent of posenc's cache).
/// Compile-time target features count too: under Miri, or with `-C target-feature`, posenc
/// trusts them, and so does `is_x86_feature_detected!`.
fn cpu_supports(b: Backend) -> bool {
    match b {
        Backend::Scalar | Backend::Portable => true,
        // A `--cfg posenc_portable_only` build (mutation testing) has no SIMD tier.
        _ if cfg!(posenc_portable_only) => false,
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => {
            use std::is_x86_feature_detected as has;
            has!("avx2") && has!("fma") && has!("f16c")
        }
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => {
            use std::is_x86_feature_detected as has;
            has!("avx512f") && has!("avx2") && has!("fma") && has!("f16c")
        }
        #[cfg(not(target_arch = "x86_64"))]
        Backend::Avx2 | Backend::Avx512 => false,
        #[cfg(target_arch = "aarch64")]
        Backend::Neon => std::arch::is_aarch64_feature_detected!("neon"),
        #[cfg(not(target_arch = "aarch64"))]
        Backend::Neon => false,
        _ => false,
    }
}

/// Without posenc's `std` feature nothing is detected at run time (as on bare metal): a tier
/// is offered exactly when the build's target features guarantee it, whatever the CPU has.
fn build_guarantees(b: Backend) -> bool {
    match b {
        Backend::Scalar | Backend::Portable => true,
        _ if cfg!(posenc_portable_only) => false,
        Backend::Avx2 => cfg!(all(
            target_arch = "x86_64",
            target_feature = "avx2",
            target_feature = "fma",
            target_feature = "f16c"
        )),
        Backend::Avx512 => cfg!(all(
            target_arch = "x86_64",
            target_feature = "avx512f",
            target_feature = "avx2",
            target_feature = "fma",
            target_feature = "f16c"
        )),
        Backend::Neon => cfg!(all(target_arch = "aarch64", target_feature = "neon")),
        _ => false,
    }
}

/// What posenc must offer in this build: the CPU's tiers with `std`, the build's without.
fn supported(b: Backend) -> bool {
    if cfg!(feature = "std") {
        cpu_supports(b)
    } else {
        build_guarantees(b)
    }
}

#[test]
fn availability_matches_the_cpu() {
    for &b in Backend::ALL {
        assert_eq!(
            b.is_available(),
            supported(b),
            "{}: posenc says available = {}, expected {} (std: {})",
            b.name(),
            b.is_available(),
            supported(b),
            cfg!(feature = "std")
        );
    }
}

#[test]
fn active_is_the_fastest_available() {
    let active = Backend::active();
    let want = [
        Backend::Avx512,
        Backend::Avx2,
        Backend::Neon,
        Backend::Portable,
    ]
    .into_iter()
    .find(|&b| supported(b))
    .unwrap();
    assert_eq!(active, want);
    assert!(active.is_available());
    // Detection is cached: asking again changes nothing.
    assert_eq!(Backend::active(), active);
    let available: Vec<&str> = Backend::ALL
        .iter()
        .filter(|b| b.is_available())
        .map(|b| b.name())
        .collect();
    println!(
        "posenc active backend: {} (available: {})",
        active.name(),
        available.join(", ")
    );
}

#[test]
fn active_is_the_expected_one() {
    let Ok(expect) = std::env::var("POSENC_EXPECT_BACKEND") else {
        println!(
            "POSENC_EXPECT_BACKEND not set; active backend: {}",
            Backend::active().name()
        );
        return;
    };
    let expect = expect.trim().to_ascii_lowercase();
    assert!(
        Backend::ALL.iter().any(|b| b.name() == expect),
        "POSENC_EXPECT_BACKEND={expect:?} names no backend (known: {:?})",
        Backend::ALL.iter().map(|b| b.name()).collect::<Vec<_>>()
    );
    assert_eq!(
        Backend::active().name(),
        expect,
        "POSENC_EXPECT_BACKEND: the active backend is not the expected one"
    );
}
