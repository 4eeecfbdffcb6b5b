//! Tells the library whether this build is unoptimised (`--cfg posenc_unoptimized`), from the
//! opt-level Cargo passes to build scripts.
//!
//! Unoptimised, LLVM keeps every local of every `#[inline(always)]` copy in a stack slot of its
//! own, and the kernels inline many copies into one function: `engine::vector::apart!` then
//! gives the large ones frames of their own, so a debug build's stack stays small. There is no
//! built-in `cfg` for the opt-level, and `debug_assertions` is no proxy: the test profile
//! optimises with debug assertions on, and must compile what a release build compiles.
//!
//! It also passes the opt-level on as `POSENC_OPT_LEVEL` to every target of the package:
//! `tests/stack.rs` holds each kind of build to its own stack bound.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let level = std::env::var("OPT_LEVEL").unwrap_or_default();
    if level == "0" {
        println!("cargo:rustc-cfg=posenc_unoptimized");
    }
    println!("cargo:rustc-env=POSENC_OPT_LEVEL={level}");
}
