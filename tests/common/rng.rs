//! The tests' deterministic generator: xorshift64* (Marsaglia's xorshift, then a
//! multiplication), seeded so that seed 0 works. Each test file adds the distributions it
//! needs (`value`, `any_f32`, `positions`, ...) in its own `impl Rng` block, beside the tests
//! whose bounds depend on them; this module holds only the generator they share.

/// xorshift64* state (never 0).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng((seed ^ 0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// `0 .. n` (modulo: slightly biased, which no test cares about).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in `[0, 1)`, 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}
