//! Tells the library whether this build is unoptimised (`--cfg posenc_unoptimized`), from the
//! opt-level Cargo passes to build scripts.
//!
//! Unoptimised, LLVM keeps every local of every `#[inline(always)]` copy in a stack slot of its
//! own, and the kernels inline many copies into one function: `engine::vector::apart!` then
//! gives the large ones frames of their own, so a debug build's stack stays small. There is no
//! built-in `cfg` for the opt-level, and `debug_assertions` is no proxy: the test profile
//! optimises with debug assertions on, and must compile what a release build compiles.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("OPT_LEVEL").as_deref() == Ok("0") {
        println!("cargo:rustc-cfg=posenc_unoptimized");
    }
}
