//! The `bad_input` fuzz target: the checks live in `posenc_fuzz::targets::bad_input` (also replayed over
//! `corpus/bad_input/` by `tests/replay.rs`, without libFuzzer).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| posenc_fuzz::targets::bad_input::fuzz(data));
