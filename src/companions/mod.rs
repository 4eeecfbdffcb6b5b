//! What a runtime needs beside the encodings themselves: ALiBi biases, T5 relative-position
//! buckets, interleaved ↔ rotate_half permutations, and the RoPE settings of published
//! models. Each uses the core's types; the core never imports a companion.

pub(crate) mod alibi;
pub(crate) mod permute;
pub mod presets;
pub(crate) mod t5;
