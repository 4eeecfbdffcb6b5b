//! The run-time x86-64 tiers, one file each: the token (made only where `detect.rs` found
//! the features), the one `#[target_feature]` entry function, and the `Simd` methods as
//! `core::arch` intrinsics. `wide` picks its lanes at compile time and does not widen inside
//! `#[target_feature]` functions, so these tiers are written with intrinsics.

pub(crate) mod avx2;
pub(crate) mod avx512;
