//! The `permutation` fuzz target: the checks live in `posenc_fuzz::targets::permutation` (also replayed over
//! `corpus/permutation/` by `tests/replay.rs`, without libFuzzer).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| posenc_fuzz::targets::permutation::fuzz(data));
