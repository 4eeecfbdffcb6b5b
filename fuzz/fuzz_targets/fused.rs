//! The `fused` fuzz target: the checks live in `posenc_fuzz::targets::fused` (also replayed
//! over `corpus/fused/` by `tests/replay.rs`, without libFuzzer).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| posenc_fuzz::targets::fused::fuzz(data));
