//! The aarch64 tier, NEON (Advanced SIMD): the token (made only where `detect.rs` found the
//! feature, which every aarch64 Linux, macOS and Windows target has), the one
//! `#[target_feature]` entry function, and the `Simd` methods as `core::arch` intrinsics.
//! `wide` does use NEON here, but converts f16/bf16 one value at a time through `half` and
//! never fuses; this tier converts whole vectors and fuses the rotation like the x86 tiers.

pub(crate) mod neon;
