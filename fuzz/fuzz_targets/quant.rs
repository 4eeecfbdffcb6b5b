//! The `quant` fuzz target: the checks live in `posenc_fuzz::targets::quant` (also replayed over
//! `corpus/quant/` by `tests/replay.rs`, without libFuzzer).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| posenc_fuzz::targets::quant::fuzz(data));
