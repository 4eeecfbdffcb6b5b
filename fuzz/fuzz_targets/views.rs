//! The `views` fuzz target: the checks live in `posenc_fuzz::targets::views` (also replayed over
//! `corpus/views/` by `tests/replay.rs`, without libFuzzer).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| posenc_fuzz::targets::views::fuzz(data));
