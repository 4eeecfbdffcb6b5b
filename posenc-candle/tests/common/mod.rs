//! Test helpers: seeded random tensors and the per-dtype error terms of the stated bound.
#![allow(dead_code)]

use candle_core::{DType, Device, Result, Tensor};

/// A splitmix64 stream: the same numbers on every run and machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }

    pub fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// A random f32 tensor of `shape` cast to `dtype` (values in [-4, 4)).
pub fn randn(rng: &mut Rng, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let n = shape.iter().product();
    Tensor::from_vec(rng.vec(n, -4.0, 4.0), shape, &Device::Cpu)?.to_dtype(dtype)
}

/// cos and sin tables of random angles (|θ| up to 1000 rad) in `dtype`.
pub fn tables(rng: &mut Rng, shape: &[usize], dtype: DType) -> Result<(Tensor, Tensor)> {
    let n = shape.iter().product();
    let theta = Tensor::from_vec(rng.vec(n, -1000.0, 1000.0), shape, &Device::Cpu)?;
    Ok((theta.cos()?.to_dtype(dtype)?, theta.sin()?.to_dtype(dtype)?))
}

/// Unit roundoff of a dtype (half an ulp of 1) and the largest error of rounding a tiny value
/// to it (half its smallest subnormal).
pub fn unit_roundoff(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F16 => (2f64.powi(-11), 2f64.powi(-25)),
        DType::BF16 => (2f64.powi(-8), 2f64.powi(-134)),
        DType::F32 => (2f64.powi(-24), 2f64.powi(-150)),
        _ => (2f64.powi(-53), 0.0),
    }
}

/// eps32 of DESIGN.md's rotation bound (ulp of 1 in f32).
pub const EPS32: f64 = f32::EPSILON as f64;

/// The tensor's values as f64 (exact), flattened.
pub fn values(t: &Tensor) -> Result<Vec<f64>> {
    t.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()
}
