//! The `load` fuzz target: the checks live in `posenc_fuzz::targets::load` (also replayed over
//! `corpus/load/` by `tests/replay.rs`, without libFuzzer).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| posenc_fuzz::targets::load::fuzz(data));
