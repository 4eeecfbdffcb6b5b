//! The fuzz targets' checks, one module per target in `fuzz_targets/`: each `fuzz(data)`
//! decodes one input and panics on a violated property. The libFuzzer binaries call them,
//! and so does the corpus replay (`tests/replay.rs`), which needs no nightly toolchain.

pub mod bad_input;
pub mod fused;
pub mod layout_equivalence;
pub mod load;
pub mod permutation;
pub mod quant;
pub mod views;
