//! What a runtime needs beside the encodings themselves: ALiBi biases, T5 relative-position
//! buckets, interleaved ↔ rotate_half permutations, the RoPE settings of published models, and
//! loading them from a checkpoint's `config.json` or GGUF metadata. Each uses the core's types; the core never imports a companion.

pub mod alibi;
pub mod load;
pub mod permute;
pub mod presets;
pub mod t5;
