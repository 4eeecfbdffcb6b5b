//! ggml's `Q8_0` and `Q4_0` blocks: their byte layout, and dequantization and quantization
//! written once for every tier ([`Dequantize`], [`Quantize`]), byte for byte ggml's reference
//! (`dequantize_row_q8_0` / `quantize_row_q8_0_ref` and the `q4_0` pair in `ggml-quants.c`).
//!
//! ```text
//! Q8_0  d = f16(amax / 127)                 q[j] = roundf(x[j] · (1 / d))          x = q · d
//! Q4_0  d = f16(max / −8), max = the first  q[j] = min(15, trunc(x[j] · (1/d) + 8.5))
//!       value of largest magnitude          nibble j (low) and j + 16 (high)       x = (q − 8) · d
//! ```
//! The quantizers divide by the f32 scale, not by its f16 rounding (as ggml does), and
//! `1 / d` is 0 for a zero scale.
//!
//! The block math is plain element-wise f32 arithmetic on 32-value arrays, inlined into each
//! tier's `#[target_feature]` entry function, where the compiler vectorizes it for that
//! tier; IEEE arithmetic without reassociation gives the same bits on every tier. Two steps
//! of ggml's loops are order-dependent, and are done in another order only where that cannot
//! change the result:
//! * ggml's running maximum `MAX(amax, |x|)` (`a > b ? a : b`) forgets a NaN unless it is the
//!   last value. Without NaN the maximum of a set does not depend on the order, so here it is
//!   an integer maximum of the magnitudes' bits (which also detects a NaN); a block with a
//!   NaN takes ggml's sequential loop.
//! * `Q4_0` keeps the *first* value of largest magnitude (its sign matters): the maximum
//!   finds the magnitude, a scan the first value that has it.
//!
//! Float-to-`int8_t` conversions of NaN or infinity are undefined in C; ggml's x86 builds give
//! the low byte of `cvttss2si`'s `0x80000000`, 0, and so does this module. They occur only in
//! blocks holding a NaN or an infinity, or whose scale is so small (below 2^-128) that `1 / d`
//! overflows.

use super::vector::{Kernel, MAX_LANES, Simd};

/// Values per block (`QK8_0 = QK4_0 = 32`).
pub const BLOCK: usize = 32;

/// One ggml `Q8_0` block (`block_q8_0`): 32 values as an f16 scale `d` and 32 signed bytes,
/// value `j` = `qs[j] · d`. `#[repr(C)]`, 34 bytes, alignment 2: a GGUF/llama.cpp `Q8_0`
/// tensor (or K cache) is a slice of these.
///
/// ```
/// use posenc::BlockQ8_0;
/// assert_eq!((size_of::<BlockQ8_0>(), align_of::<BlockQ8_0>()), (34, 2));
/// let b = BlockQ8_0 { d: posenc::f16::from_f32(0.5).to_bits(), qs: [2; 32] };
/// let mut x = [0f32; 32];
/// posenc::dequantize_q8_0(&[b], &mut x).unwrap();
/// assert_eq!(x, [1.0; 32]);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockQ8_0 {
    /// The scale, as the bits of an IEEE binary16 (`ggml_half`).
    pub d: u16,
    /// The quantized values.
    pub qs: [i8; BLOCK],
}

/// One ggml `Q4_0` block (`block_q4_0`): 32 values as an f16 scale `d` and 16 bytes of 4-bit
/// codes; byte `j` holds value `j` in its low nibble and value `j + 16` in its high nibble,
/// value = `(code − 8) · d`. `#[repr(C)]`, 18 bytes, alignment 2, byte-compatible with GGUF.
///
/// ```
/// use posenc::BlockQ4_0;
/// assert_eq!((size_of::<BlockQ4_0>(), align_of::<BlockQ4_0>()), (18, 2));
/// let b = BlockQ4_0 { d: posenc::f16::from_f32(0.5).to_bits(), qs: [0x9A; 16] };
/// let mut x = [0f32; 32];
/// posenc::dequantize_q4_0(&[b], &mut x).unwrap();
/// assert_eq!((x[0], x[16]), (1.0, 0.5)); // (10 − 8) · 0.5, (9 − 8) · 0.5
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockQ4_0 {
    /// The scale, as the bits of an IEEE binary16 (`ggml_half`).
    pub d: u16,
    /// The 4-bit codes, two per byte.
    pub qs: [u8; BLOCK / 2],
}

/// A block format: how 32 f32 values become a block and back.
pub(crate) trait Block: Copy {
    /// The block's values (exact: an int of at most 8 bits times an f16 is an f32).
    fn dequantize(&self, out: &mut [f32; BLOCK]);
    /// What ggml divides to get the scale: `amax` (Q8_0) or the signed `max` (Q4_0).
    fn peak(x: &[f32; BLOCK]) -> f32;
    /// The divisor: `d = peak / DIVISOR`.
    const DIVISOR: f32;
    /// The block of `x` with the scale `d` (the bits of its f16, [`f32_to_f16_bits`]) and
    /// `id = inverse(d)` (of the f32 scale).
    fn encode(x: &[f32; BLOCK], d: u16, id: f32) -> Self;
    /// ggml's reference quantization of `x`.
    #[inline(always)]
    fn quantize(x: &[f32; BLOCK]) -> Self {
        let d = Self::peak(x) / Self::DIVISOR;
        Self::encode(x, f32_to_f16_bits(d), inverse(d))
    }
}

/// `|v|` (`fabsf`): the sign bit cleared.
#[inline(always)]
fn abs(v: f32) -> f32 {
    f32::from_bits(v.to_bits() & 0x7FFF_FFFF)
}

/// ggml's `MAX(a, b)`: `a > b ? a : b`.
#[inline(always)]
fn gmax(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// The bits of the largest `|x[j]|`, compared as integers: for non-negative floats the bit
/// patterns order as the values do, and a NaN's lie above infinity's (`0x7F80_0000`), so a
/// result above that says the block holds a NaN. Integer maxima are associative, so this is
/// a vector reduction in any order.
#[inline(always)]
fn amax_bits(x: &[f32; BLOCK]) -> u32 {
    let mut m = [0u32; 8];
    for k in 0..BLOCK / 8 {
        for (j, mj) in m.iter_mut().enumerate() {
            *mj = (*mj).max(x[8 * k + j].to_bits() & 0x7FFF_FFFF);
        }
    }
    m.iter().fold(0, |a, &b| a.max(b))
}

/// ggml's running maximum of `|x[j]|` in its order, NaN and all: the path of a block holding a
/// NaN. Out of line: inlined, LLVM shared its magnitudes with [`amax_bits`] and took that
/// reduction apart into scalar compares (`cargo bench --bench quant`).
#[cold]
#[inline(never)]
fn ggml_amax(x: &[f32; BLOCK]) -> f32 {
    x.iter().fold(0.0, |a, &v| gmax(a, abs(v)))
}

/// Bits above those of infinity: a NaN.
const NAN_BITS: u32 = 0x7F80_0000;

/// ggml's `GGML_FP32_TO_FP16`: round to nearest even; NaN becomes `0x7E00` with its sign.
#[inline(always)]
pub(crate) fn f32_to_f16_bits(v: f32) -> u16 {
    if v.is_nan() {
        ((v.to_bits() >> 16) as u16 & 0x8000) | 0x7E00
    } else {
        half::f16::from_f32(v).to_bits()
    }
}

/// ggml's `GGML_FP16_TO_FP32` (exact).
#[inline(always)]
fn f16_bits_to_f32(d: u16) -> f32 {
    half::f16::from_bits(d).to_f32()
}

/// Whether `v` converts to an i32 without overflow (false for NaN).
#[inline(always)]
fn fits_i32(v: f32) -> bool {
    abs(v) < 2_147_483_648.0 || v == -2_147_483_648.0
}

/// `v` truncated toward zero, when `ok` says [`fits_i32`] holds for it (otherwise 0). A plain
/// truncation (`cvttps2dq`), not Rust's saturating `as`, whose extra clamps per value are
/// redundant after `fits_i32`; the difference is settled by `cargo bench -p posenc-benches
/// --bench quant`.
#[inline(always)]
fn trunc_i32(v: f32, ok: bool) -> i32 {
    let v = if ok { v } else { 0.0 };
    // SAFETY: `v` is 0 or a value `fits_i32` accepted (finite, |v| < 2^31 or v = −2^31), so
    // its truncation is representable in an i32.
    unsafe { v.to_int_unchecked::<i32>() }
}

/// C's `(int8_t)v` for a float `v` as ggml's x86 builds compute it: truncated to an i32 by
/// `cvttss2si` (NaN and values outside the i32 range give `0x80000000`), then its low byte.
/// Written with selects, not branches, so that the block loops vectorize.
#[inline(always)]
fn to_i8_x86(v: f32) -> i8 {
    let ok = fits_i32(v);
    let t = if ok { trunc_i32(v, ok) } else { i32::MIN };
    t as i8
}

/// The float just below ½: `0.5 − 2^-25`.
const BELOW_HALF: f32 = f32::from_bits(0x3EFF_FFFF);

/// An i32 whose low byte is C's `(int8_t)roundf(v)` (half away from zero), as
/// [`to_i8_x86`] converts it.
///
/// `roundf(v)` is the truncation of `v + copysign(BELOW_HALF, v)` rounded to nearest even,
/// for every `v` the conversion is defined for: one sign, one add and one truncation per
/// vector, where truncating first and correcting by the fraction took six (`cargo bench
/// --bench quant`, the quantize pass). Why it holds, for `v ≥ 0` (`−v` mirrors it), with `k`
/// the integer part of `v`, `f` its fraction and `u` the spacing of the floats at `v`:
/// ```text
/// v ≥ 2^23      v is an integer and BELOW_HALF < u/2: the sum rounds back to v
/// f ≥ ½, v ≥ 1  the sum is ≥ k + 1 − 2^-25; floats below k + 1 are ≥ 2^-23 apart,
///               so it rounds to ≥ k + 1 (and stays < k + 2)
/// v ∈ [½, 1)    the sum is ≥ 1 − 2^-25: above 1, or exactly ½ + BELOW_HALF, the tie
///               between 1 − 2^-24 and 1, which goes to the even 1
/// f < ½, v ≥ 1  f ≤ ½ − u (a multiple of u), so the sum is ≤ k + 1 − u − 2^-25: below
///               the float k + 1 − u, so it rounds to at most that
/// v < ½         the sum is ≤ (½ − 2^-25) + BELOW_HALF = 1 − 2^-24, a float below 1
/// ```
/// (`tests::rounding_is_roundf`: every float of magnitude in [1/4, 256), and a stride through
/// the others, against `libm::roundf`.)
#[inline(always)]
fn round_i8_wide(v: f32) -> i32 {
    let r = v + BELOW_HALF.copysign(v);
    // NaN, ±inf, huge: roundf leaves them as they are, and their conversion's low byte is 0.
    // (`r` fits exactly when `v` does: it is `v` itself from 2^23 up.)
    trunc_i32(r, fits_i32(r))
}

/// `1 / d`, or 0 when `d` is zero (C's `d ? 1.0f/d : 0.0f`: NaN counts as non-zero).
#[inline(always)]
fn inverse(d: f32) -> f32 {
    if d != 0.0 { 1.0 / d } else { 0.0 }
}

impl Block for BlockQ8_0 {
    #[inline(always)]
    fn dequantize(&self, out: &mut [f32; BLOCK]) {
        let d = f16_bits_to_f32(self.d);
        // From a local copy of the codes: read straight from the block, they were converted
        // one scalar at a time (`cargo bench --bench quant`).
        let qs = self.qs;
        for (o, q) in out.iter_mut().zip(qs) {
            *o = f32::from(q) * d;
        }
    }

    #[inline(always)]
    fn peak(x: &[f32; BLOCK]) -> f32 {
        let bits = amax_bits(x);
        if bits > NAN_BITS {
            ggml_amax(x)
        } else {
            f32::from_bits(bits)
        }
    }

    const DIVISOR: f32 = 127.0;

    #[inline(always)]
    fn encode(x: &[f32; BLOCK], d: u16, id: f32) -> BlockQ8_0 {
        // Two loops, the rounding in i32 lanes and then the low bytes: written as one, the
        // loop narrowed each value with a byte insert, and measured slower in `cargo bench
        // --bench quant`. (Q4_0's nibbles split the same way measured slower.)
        let mut wide = [0i32; BLOCK];
        for (w, &v) in wide.iter_mut().zip(x) {
            *w = round_i8_wide(v * id);
        }
        // A plain loop, not `map`: `map` went out of line (`try_map`) and wrote the bytes one
        // at a time, which the block's 32-byte copy then waited on.
        let mut qs = [0i8; BLOCK];
        for (q, &w) in qs.iter_mut().zip(&wide) {
            *q = w as i8;
        }
        BlockQ8_0 { d, qs }
    }
}

impl Block for BlockQ4_0 {
    #[inline(always)]
    fn dequantize(&self, out: &mut [f32; BLOCK]) {
        let d = f16_bits_to_f32(self.d);
        let (lo, hi) = out.split_at_mut(BLOCK / 2);
        let qs = self.qs; // (as for `Q8_0`)
        for ((l, h), q) in lo.iter_mut().zip(hi.iter_mut()).zip(qs) {
            *l = ((q & 0x0F) as i32 - 8) as f32 * d;
            *h = ((q >> 4) as i32 - 8) as f32 * d;
        }
    }

    #[inline(always)]
    fn peak(x: &[f32; BLOCK]) -> f32 {
        let bits = amax_bits(x);
        if bits > NAN_BITS {
            // ggml's loop as written: `amax < |v|` is false for NaN.
            let (mut amax, mut max) = (0.0f32, 0.0f32);
            for &v in x {
                if amax < abs(v) {
                    amax = abs(v);
                    max = v;
                }
            }
            max
        } else {
            let amax = f32::from_bits(bits);
            // The first value of that magnitude; 0 (not a −0 value) when every value is ±0.
            // (Backwards with selects: no branch per value.)
            let mut max = 0.0f32;
            for &v in x.iter().rev() {
                max = if abs(v) == amax && amax > 0.0 { v } else { max };
            }
            max
        }
    }

    const DIVISOR: f32 = -8.0;

    #[inline(always)]
    fn encode(x: &[f32; BLOCK], d: u16, id: f32) -> BlockQ4_0 {
        let mut qs = [0u8; BLOCK / 2];
        let (lo, hi) = x.split_at(BLOCK / 2);
        for ((q, &a), &b) in qs.iter_mut().zip(lo).zip(hi) {
            *q = nibble(a * id) | (nibble(b * id) << 4);
        }
        BlockQ4_0 { d, qs }
    }
}

/// Block `i` of `x`.
#[inline(always)]
fn block(x: &[f32], i: usize) -> &[f32; BLOCK] {
    x[i * BLOCK..(i + 1) * BLOCK]
        .try_into()
        .expect("chunks of BLOCK")
}

/// ggml's `MIN(15, (int8_t)(x0 + 8.5f))` stored into a `uint8_t`.
#[inline(always)]
fn nibble(x0: f32) -> u8 {
    i32::from(to_i8_x86(x0 + 8.5)).min(15) as u8
}

/// [`f32_to_f16_bits`] of every scale of a group, as vectors: the tier's f16 store
/// (`vcvtps2ph`, `fcvtn`) rounds as `half` does, where `half`'s own conversion went through
/// integer code one scale at a time (`cargo bench --bench quant`, the quantize pass); a NaN
/// scale then takes ggml's `0x7E00` with its sign, as in [`f32_to_f16_bits`].
#[inline(always)]
fn scale_bits<S: Simd, const N: usize>(s: S, d: &[f32; N]) -> [u16; N] {
    const { assert!(N <= MAX_LANES) };
    // Room for whole vectors from every multiple of `LANES` below `N`.
    let mut f = [0.0f32; 2 * MAX_LANES];
    f[..N].copy_from_slice(d);
    let mut h = [half::f16::ZERO; 2 * MAX_LANES];
    for c in (0..N).step_by(S::LANES) {
        s.store(s.load::<f32>(&f[c..]), &mut h[c..]);
    }
    let mut bits = [0u16; N];
    for ((b, h), &d) in bits.iter_mut().zip(h).zip(d) {
        *b = if d.is_nan() {
            f32_to_f16_bits(d)
        } else {
            h.to_bits()
        };
    }
    bits
}

/// Dequantizes `blocks` into `out` (`32 · blocks.len()` values; checked by the caller).
pub(crate) struct Dequantize<'a, B> {
    pub blocks: &'a [B],
    pub out: &'a mut [f32],
}

impl<B: Block> Kernel for Dequantize<'_, B> {
    type Output = ();

    #[inline(always)]
    fn run<S: Simd>(self, _s: S) {
        for (b, o) in self.blocks.iter().zip(self.out.chunks_exact_mut(BLOCK)) {
            let o: &mut [f32; BLOCK] = o.try_into().expect("chunks of BLOCK");
            b.dequantize(o);
        }
    }
}

/// Quantizes `x` (`32 · out.len()` values; checked by the caller) into `out`.
pub(crate) struct Quantize<'a, B> {
    pub x: &'a [f32],
    pub out: &'a mut [B],
}

impl<B: Block> Kernel for Quantize<'_, B> {
    type Output = ();

    /// ```text
    /// for each group of GROUP blocks:
    ///     peak of every block; d = peak / DIVISOR and id = 1 / d for all (vector divisions)
    ///     the f16 of every d (one vector conversion)
    ///     encode every block with its d and id
    /// ```
    /// A block alone is one chain (peak → d → id → codes) that the CPU cannot overlap with the
    /// next block's: its loop is too long. Grouped, the divisions of the group run together.
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        const GROUP: usize = 8;
        let mut outs = self.out.chunks_exact_mut(GROUP);
        let mut xs = self.x.chunks_exact(GROUP * BLOCK);
        for (o, x) in (&mut outs).zip(&mut xs) {
            // Each block's peak, one block at a time: the index goes through `black_box` so
            // that LLVM does not vectorize this loop *across* the blocks, which for AVX-512 it
            // did with a gather per value of a block, far slower than working within each block
            // (`cargo bench --bench quant`, the quantize pass).
            let mut d = [0.0f32; GROUP];
            for (i, d) in d.iter_mut().enumerate() {
                *d = B::peak(block(x, core::hint::black_box(i)));
            }
            let mut id = [0.0f32; GROUP];
            for (d, id) in d.iter_mut().zip(&mut id) {
                *d /= B::DIVISOR;
                *id = inverse(*d);
            }
            let bits = scale_bits(s, &d);
            for (i, o) in o.iter_mut().enumerate() {
                let i = core::hint::black_box(i); // (as for the peaks)
                *o = B::encode(block(x, i), bits[i], id[i]);
            }
        }
        for (o, x) in outs
            .into_remainder()
            .iter_mut()
            .zip(xs.remainder().chunks_exact(BLOCK))
        {
            let x: &[f32; BLOCK] = x.try_into().expect("chunks of BLOCK");
            *o = B::quantize(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// C's `(int8_t)roundf(v)` as ggml's x86 builds compute it.
    fn reference(v: f32) -> i8 {
        to_i8_x86(libm::roundf(v))
    }

    fn check(bits: u32) {
        for v in [f32::from_bits(bits), -f32::from_bits(bits)] {
            assert_eq!(
                round_i8_wide(v) as i8,
                reference(v),
                "{v:e} ({:#x})",
                v.to_bits()
            );
        }
    }

    /// Every float of magnitude in [2^-2, 2^8) (the codes a block's values take, and every
    /// case of the proof at each of those binades), a stride through the rest, the specials.
    #[test]
    #[cfg_attr(miri, ignore = "2^27 values")]
    fn rounding_is_roundf() {
        for bits in 0x3E80_0000..0x4380_0000u32 {
            check(bits);
        }
        for bits in (0..0x3E80_0000u32).step_by(997) {
            check(bits);
        }
        for bits in (0x4380_0000..=0x7FFF_FFFFu32).step_by(1009) {
            check(bits);
        }
        for v in [
            0.0f32,
            0.5,
            1.5,
            2.5,
            8_388_607.5,
            2_147_483_520.0,
            2_147_483_648.0,
        ] {
            check(v.to_bits());
        }
        for bits in [
            0x7F80_0000u32,
            0x7FC0_0000,
            0x7F80_0001,
            1,
            0x3EFF_FFFF,
            0x3F00_0001,
        ] {
            check(bits);
        }
    }
}
