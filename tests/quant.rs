//! The quantized K-cache shift and ggml's Q8_0/Q4_0 blocks.
//!
//! The oracle is a literal transcription of ggml's reference C (`ggml-quants.c`:
//! `quantize_row_q8_0_ref`, `quantize_row_q4_0_ref`, `dequantize_row_q8_0`,
//! `dequantize_row_q4_0`), loop for loop, written here apart from posenc's vectorized blocks;
//! the one-pass shift must equal "oracle dequantize → `Rope::shift` on f32 (same backend) →
//! oracle quantize" byte for byte on every backend.

use posenc::{
    Backend, BlockQ4_0, BlockQ8_0, Error, Layout, Rope, RopeConfig, dequantize_q4_0,
    dequantize_q8_0, f16, quantize_q4_0, quantize_q8_0,
};

// ---- ggml's reference, transcribed ----

/// ggml's `GGML_FP32_TO_FP16` (`ggml_compute_fp32_to_fp16`), bit manipulation as in ggml.
fn ggml_fp32_to_fp16(f: f32) -> u16 {
    let scale_to_inf = f32::from_bits(0x7780_0000); // 0x1.0p+112
    let scale_to_zero = f32::from_bits(0x0880_0000); // 0x1.0p-110
    let mut base = (f.abs() * scale_to_inf) * scale_to_zero;
    let w = f.to_bits();
    let shl1_w = w.wrapping_add(w);
    let sign = w & 0x8000_0000;
    let mut bias = shl1_w & 0xFF00_0000;
    if bias < 0x7100_0000 {
        bias = 0x7100_0000;
    }
    base += f32::from_bits((bias >> 1) + 0x0780_0000);
    let bits = base.to_bits();
    let exp_bits = (bits >> 13) & 0x0000_7C00;
    let mantissa_bits = bits & 0x0000_0FFF;
    let nonsign = exp_bits + mantissa_bits;
    ((sign >> 16)
        | if shl1_w > 0xFF00_0000 {
            0x7E00
        } else {
            nonsign
        }) as u16
}

fn ggml_fp16_to_fp32(h: u16) -> f32 {
    f16::from_bits(h).to_f32()
}

/// C's float → `int8_t` conversion as x86 does it (`cvttss2si`, then the low byte).
#[allow(clippy::manual_range_contains)] // spelled as the instruction's rule, apart from posenc's
fn c_to_i8(v: f32) -> i8 {
    let t: i32 = if v.is_nan() || v >= 2147483648.0 || v < -2147483648.0 {
        i32::MIN
    } else {
        v as i32
    };
    t as i8
}

fn ref_quantize_q8_0(x: &[f32], y: &mut [BlockQ8_0]) {
    for (i, yi) in y.iter_mut().enumerate() {
        let mut amax = 0.0f32;
        for j in 0..32 {
            let v = x[i * 32 + j];
            let a = v.abs();
            amax = if amax > a { amax } else { a }; // MAX(amax, fabsf(v))
        }
        let d = amax / ((1 << 7) - 1) as f32;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        yi.d = ggml_fp32_to_fp16(d);
        for j in 0..32 {
            let x0 = x[i * 32 + j] * id;
            yi.qs[j] = c_to_i8(x0.round()); // roundf: half away from zero
        }
    }
}

fn ref_quantize_q4_0(x: &[f32], y: &mut [BlockQ4_0]) {
    for (i, yi) in y.iter_mut().enumerate() {
        let mut amax = 0.0f32;
        let mut max = 0.0f32;
        for j in 0..32 {
            let v = x[i * 32 + j];
            if amax < v.abs() {
                amax = v.abs();
                max = v;
            }
        }
        let d = max / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        yi.d = ggml_fp32_to_fp16(d);
        for j in 0..16 {
            let x0 = x[i * 32 + j] * id;
            let x1 = x[i * 32 + 16 + j] * id;
            let xi0 = 15.min(c_to_i8(x0 + 8.5) as i32) as u8;
            let xi1 = 15.min(c_to_i8(x1 + 8.5) as i32) as u8;
            yi.qs[j] = xi0;
            yi.qs[j] |= xi1 << 4;
        }
    }
}

fn ref_dequantize_q8_0(x: &[BlockQ8_0], y: &mut [f32]) {
    for (i, b) in x.iter().enumerate() {
        let d = ggml_fp16_to_fp32(b.d);
        for j in 0..32 {
            y[i * 32 + j] = b.qs[j] as f32 * d;
        }
    }
}

fn ref_dequantize_q4_0(x: &[BlockQ4_0], y: &mut [f32]) {
    for (i, b) in x.iter().enumerate() {
        let d = ggml_fp16_to_fp32(b.d);
        for j in 0..16 {
            let x0 = (b.qs[j] & 0x0F) as i32 - 8;
            let x1 = (b.qs[j] >> 4) as i32 - 8;
            y[i * 32 + j] = x0 as f32 * d;
            y[i * 32 + j + 16] = x1 as f32 * d;
        }
    }
}

// ---- data ----

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

/// Values with blocks of every special kind mixed in: NaN first / middle / last, ±inf, all
/// zeros (with −0), a ±max tie, tiny (subnormal-scale) blocks, blocks whose scale overflows
/// f16, and plain random blocks of varied magnitude.
fn values(n_blocks: usize, seed: u64) -> Vec<f32> {
    let mut r = Rng(seed | 1);
    let mut x = Vec::with_capacity(n_blocks * 32);
    for b in 0..n_blocks {
        let scale = [1.0f32, 3.5, 1e-3, 200.0][b % 4];
        let mut blk: Vec<f32> = (0..32).map(|_| r.f() * scale).collect();
        match b % 11 {
            1 => blk[0] = f32::NAN,
            2 => blk[17] = f32::NAN,
            // A NaN with payload, last: ggml's maximum keeps it, and its scale's f16 is
            // ggml's 0x7E00, not the payload a conversion instruction would keep.
            3 => blk[31] = f32::from_bits(0xFFFF_E000),
            4 => blk[5] = f32::INFINITY,
            5 => blk[9] = f32::NEG_INFINITY,
            6 => {
                blk.iter_mut().for_each(|v| *v = 0.0);
                blk[3] = -0.0;
            }
            7 => {
                blk[2] = 7.0;
                blk[20] = -7.0; // tie: q4_0 keeps the first
            }
            8 => blk.iter_mut().for_each(|v| *v *= 1e-39),
            9 => blk.iter_mut().for_each(|v| *v *= 1e-30),
            // A scale past f16's range (its f16 is infinity).
            10 => blk.iter_mut().for_each(|v| *v *= 1e7),
            _ => {}
        }
        x.extend(blk);
    }
    x
}

fn q8(x: &[f32]) -> Vec<BlockQ8_0> {
    let mut b = vec![BlockQ8_0::default(); x.len() / 32];
    ref_quantize_q8_0(x, &mut b);
    b
}

fn q4(x: &[f32]) -> Vec<BlockQ4_0> {
    let mut b = vec![BlockQ4_0::default(); x.len() / 32];
    ref_quantize_q4_0(x, &mut b);
    b
}

// ---- the oracle's own checks ----

#[test]
fn transcribed_fp16_conversion_is_round_to_nearest_even() {
    let mut r = Rng(7);
    for _ in 0..100_000 {
        let f = f32::from_bits(r.next() as u32);
        let want = if f.is_nan() {
            0x7E00 | ((f.to_bits() >> 16) as u16 & 0x8000)
        } else {
            f16::from_f32(f).to_bits()
        };
        assert_eq!(ggml_fp32_to_fp16(f), want, "{f:e}");
    }
}

#[test]
fn ggml_examples_by_hand() {
    // Q8_0: amax 63.5 → d = 0.5, 1/d = 2; −0.25 · 2 = −0.5 → −1 and 0.75 · 2 = 1.5 → 2
    // (roundf: half away from zero, not to even).
    let mut x = [0.0f32; 32];
    x[0] = 63.5;
    x[1] = -0.25;
    x[2] = 0.75;
    let mut b = [BlockQ8_0::default()];
    quantize_q8_0(&x, &mut b).unwrap();
    assert_eq!(b[0].d, f16::from_f32(0.5).to_bits());
    assert_eq!(&b[0].qs[..4], &[127, -1, 2, 0]);
    // Q4_0: max −4 (first of largest magnitude) → d = 0.5; 2.0 · 2 + 8.5 → 12.
    let mut x = [0.0f32; 32];
    x[1] = -4.0;
    x[2] = 4.0;
    x[16] = 2.0;
    let mut b = [BlockQ4_0::default()];
    quantize_q4_0(&x, &mut b).unwrap();
    assert_eq!(b[0].d, f16::from_f32(0.5).to_bits());
    assert_eq!(b[0].qs[0], 0x8 | (12 << 4));
    assert_eq!(b[0].qs[1], 8 << 4); // low nibble: −4 · 2 + 8.5 → 0
    assert_eq!(b[0].qs[2], 15 | (8 << 4)); // 4 · 2 + 8.5 = 16.5 → 16 → 15
}

// ---- posenc's blocks against the oracle ----

#[test]
fn quantize_and_dequantize_match_ggml_byte_for_byte() {
    for seed in 1..6u64 {
        let x = values(300, seed);
        let mut got8 = vec![BlockQ8_0::default(); 300];
        quantize_q8_0(&x, &mut got8).unwrap();
        let want8 = q8(&x);
        for (i, (g, w)) in got8.iter().zip(&want8).enumerate() {
            assert_eq!(g, w, "q8_0 block {i}: {:?}", &x[i * 32..i * 32 + 32]);
        }
        let mut got4 = vec![BlockQ4_0::default(); 300];
        quantize_q4_0(&x, &mut got4).unwrap();
        let want4 = q4(&x);
        for (i, (g, w)) in got4.iter().zip(&want4).enumerate() {
            assert_eq!(g, w, "q4_0 block {i}: {:?}", &x[i * 32..i * 32 + 32]);
        }
        let (mut a, mut b) = (vec![0f32; x.len()], vec![0f32; x.len()]);
        dequantize_q8_0(&want8, &mut a).unwrap();
        ref_dequantize_q8_0(&want8, &mut b);
        assert_eq!(bits(&a), bits(&b));
        dequantize_q4_0(&want4, &mut a).unwrap();
        ref_dequantize_q4_0(&want4, &mut b);
        assert_eq!(bits(&a), bits(&b));
    }
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

// ---- the one-pass shift against the three passes ----

/// The three-pass sequence with the oracle's quantization around `Rope::shift`.
fn three_pass_q8(rope: &Rope, k: &[BlockQ8_0], heads: usize, deltas: &[i32]) -> Vec<BlockQ8_0> {
    let mut f = vec![0f32; k.len() * 32];
    ref_dequantize_q8_0(k, &mut f);
    rope.shift(&mut f, heads, deltas).unwrap();
    q8(&f)
}

fn three_pass_q4(rope: &Rope, k: &[BlockQ4_0], heads: usize, deltas: &[i32]) -> Vec<BlockQ4_0> {
    let mut f = vec![0f32; k.len() * 32];
    ref_dequantize_q4_0(k, &mut f);
    rope.shift(&mut f, heads, deltas).unwrap();
    q4(&f)
}

fn ropes() -> Vec<Rope> {
    let mut v = Vec::new();
    for layout in [Layout::RotateHalf, Layout::Interleaved] {
        v.push(RopeConfig::new(128, 5e5, layout));
        v.push(RopeConfig::new(64, 1e4, layout));
        v.push(RopeConfig::new(96, 1e4, layout).rotary_dim(24)); // partial (GPT-NeoX)
        v.push(
            RopeConfig::new(64, 1e4, layout)
                .rotary_dim(20)
                .rotary_offset(36),
        ); // odd window
        v.push(RopeConfig::new(32, 1e4, layout).rotary_dim(6));
    }
    v.iter().map(|c| Rope::new(c).unwrap()).collect()
}

#[test]
fn one_pass_equals_three_passes_on_every_backend() {
    // (tokens, heads): several tokens per batch, one token per batch, a row longer than a
    // batch (heads split), a single token.
    let shapes = [(7, 2), (5, 8), (3, 40), (1, 3), (33, 1)];
    let mut seed = 11;
    for base in ropes() {
        for backend in Backend::available() {
            let rope = base.with_backend(backend).unwrap();
            for &(tokens, heads) in &shapes {
                seed += 1;
                let n = tokens * heads * rope.head_dim() / 32;
                let x = values(n, seed);
                let deltas: Vec<i32> = (0..tokens as i32).map(|t| t * 37 - 500).collect();
                let ctx = format!("{rope:?} tokens {tokens} heads {heads}");

                let mut k8 = q8(&x);
                let want8 = three_pass_q8(&rope, &k8, heads, &deltas);
                rope.shift_q8_0(&mut k8, heads, &deltas).unwrap();
                assert_eq!(k8, want8, "q8_0 {ctx}");

                let mut k4 = q4(&x);
                let want4 = three_pass_q4(&rope, &k4, heads, &deltas);
                rope.shift_q4_0(&mut k4, heads, &deltas).unwrap();
                assert_eq!(k4, want4, "q4_0 {ctx}");
            }
        }
    }
}

#[test]
fn positions_of_any_type_and_tables_give_the_same_bytes() {
    let rope = Rope::new(&RopeConfig::new(128, 1e4, Layout::RotateHalf)).unwrap();
    // Enough tokens that converted positions span several batches.
    let (tokens, heads) = (300, 1);
    let x = values(tokens * heads * 4, 99);
    let deltas: Vec<i32> = (0..tokens as i32).map(|t| 1000 - 3 * t).collect();
    let wide: Vec<i64> = deltas.iter().map(|&d| d as i64).collect();
    let mut buf = vec![0f32; rope.table_len(tokens)];
    let table = rope.table(&deltas, &mut buf).unwrap();

    let k = q8(&x);
    let want = three_pass_q8(&rope, &k, heads, &deltas);
    let (mut a, mut b, mut c) = (k.clone(), k.clone(), k.clone());
    rope.shift_q8_0(&mut a, heads, &deltas).unwrap();
    rope.shift_q8_0(&mut b, heads, &wide).unwrap();
    rope.shift_q8_0(&mut c, heads, table).unwrap();
    assert_eq!(a, want);
    assert_eq!(b, want);
    assert_eq!(c, want);

    let k = q4(&x);
    let want = three_pass_q4(&rope, &k, heads, &deltas);
    let (mut a, mut b) = (k.clone(), k.clone());
    rope.shift_q4_0(&mut a, heads, &wide).unwrap();
    rope.shift_q4_0(&mut b, heads, table).unwrap();
    assert_eq!(a, want);
    assert_eq!(b, want);
}

#[test]
fn a_shift_moves_keys_like_rotating_at_the_new_position() {
    // Quantize keys rotated at p, shift by d; compare with keys rotated at p + d, within the
    // quantization step: the shift does what it says, not only what the sequence does.
    let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf)).unwrap();
    let mut r = Rng(5);
    let x: Vec<f32> = (0..4 * 64).map(|_| r.f()).collect();
    let (mut at_p, mut at_pd) = (x.clone(), x.clone());
    rope.apply(&mut at_p, 1, &[10, 20, 30, 40]).unwrap();
    rope.apply(&mut at_pd, 1, &[15, 27, 20, 1040]).unwrap();
    let mut k = vec![BlockQ8_0::default(); 8];
    quantize_q8_0(&at_p, &mut k).unwrap();
    rope.shift_q8_0(&mut k, 1, &[5, 7, -10, 1000]).unwrap();
    let mut got = vec![0f32; 256];
    dequantize_q8_0(&k, &mut got).unwrap();
    for (g, w) in got.iter().zip(&at_pd) {
        assert!((g - w).abs() < 0.03, "{g} vs {w}"); // two 1/254 steps of amax ≲ 1.5
    }
}

// ---- bad input ----

#[test]
fn bad_input_is_a_typed_error_and_writes_nothing() {
    let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf)).unwrap();
    let orig = q8(&values(2 * 3 * 2, 3)); // 2 tokens, 3 heads, 2 blocks per head
    let mut k = orig.clone();
    let e = rope.shift_q8_0(&mut k, 3, &[1]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 6,
                actual: 12,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(rope.shift_q8_0(&mut k, 0, &[1, 2]), Err(Error::ZeroHeads));
    let e = rope.shift_q8_0(&mut k, 3, &[1u64, 1 << 40]).unwrap_err();
    assert!(
        matches!(e, Error::PositionOutOfRange { index: 1, .. }),
        "{e}"
    );
    let e = rope.shift_q8_0(&mut k[..11], 3, &[1, 2]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    // A table made for another rotary dim.
    let other = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf).rotary_dim(32)).unwrap();
    let mut buf = [0f32; 64];
    let t = other.table(&[1, 2], &mut buf).unwrap();
    assert!(rope.shift_q8_0(&mut k, 3, t).is_err());
    assert_eq!(k, orig);

    // head_dim not a whole number of blocks: an error naming head_dim.
    let odd = Rope::new(&RopeConfig::new(48, 1e4, Layout::Interleaved)).unwrap();
    let mut k4 = vec![
        BlockQ4_0 {
            d: 0x3C00,
            qs: [0x19; 16]
        };
        3
    ];
    let e = odd.shift_q4_0(&mut k4, 2, &[1]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::ParameterOutOfRange {
                what: "head_dim",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        k4,
        vec![
            BlockQ4_0 {
                d: 0x3C00,
                qs: [0x19; 16]
            };
            3
        ]
    );

    // Block/value count mismatches of the conversions.
    assert!(quantize_q8_0(&[0.0; 33], &mut [BlockQ8_0::default()]).is_err());
    assert!(quantize_q4_0(&[0.0; 64], &mut [BlockQ4_0::default()]).is_err());
    let mut out = [7.0f32; 31];
    assert!(dequantize_q8_0(&[BlockQ8_0::default()], &mut out).is_err());
    assert_eq!(out, [7.0; 31]);
}

#[test]
fn no_tokens_is_a_no_op() {
    let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf)).unwrap();
    let empty: [i32; 0] = [];
    rope.shift_q8_0(&mut [], 4, &empty).unwrap();
    rope.shift_q4_0(&mut [], 4, &empty).unwrap();
}
