//! The `layout_equivalence` fuzz target: the checks live in `posenc_fuzz::targets::layout_equivalence` (also replayed over
//! `corpus/layout_equivalence/` by `tests/replay.rs`, without libFuzzer).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| posenc_fuzz::targets::layout_equivalence::fuzz(data));
