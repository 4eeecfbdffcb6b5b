//! The `quant` fuzz target: the quantized K-cache shift (`Rope::shift_q8_0`, `Rope::shift_q4_0`) and the block
//! conversions under arbitrary shapes, bytes and deltas. Checked:
//!
//! * nothing panics (overflow checks and debug assertions are on in the fuzz build);
//! * a call that returns `Err` leaves the blocks bitwise unchanged, and it fails exactly when
//!   `head_dim` is not whole blocks (or above 4096), `n_heads` is 0, or the block count is
//!   not `tokens × n_heads × head_dim / 32`;
//! * a successful shift equals the three passes dequantize → `Rope::shift` on f32 (same
//!   backend) → quantize, byte for byte, from positions and from a table, on every backend.
//!   The blocks' bytes are arbitrary, so NaN/inf/subnormal scales and codes all occur.

use arbitrary::Arbitrary;
use posenc::{
    Backend, BlockQ4_0, BlockQ8_0, Layout, Rope, RopeConfig, dequantize_q4_0, dequantize_q8_0,
    quantize_q4_0, quantize_q8_0,
};

#[derive(Arbitrary, Debug)]
struct Input {
    /// head_dim = 2 · this (so odd block counts and non-multiples of 32 occur).
    half_dim: u8,
    rotary: u8,
    offset: u8,
    interleaved: bool,
    n_heads: u8,
    tokens: u8,
    /// Added to the exact block count (0: the valid length).
    len_delta: i8,
    deltas: Vec<i32>,
    bytes: Vec<u8>,
    q4: bool,
    table: bool,
}

/// Blocks of `B` made of arbitrary bytes (every bit pattern is a valid block).
fn blocks<B: Copy + Default>(n: usize, bytes: &[u8], size: usize, from: fn(&[u8]) -> B) -> Vec<B> {
    (0..n)
        .map(|i| {
            let mut b = vec![0u8; size];
            for (j, v) in b.iter_mut().enumerate() {
                *v = bytes
                    .get((i * size + j) % bytes.len().max(1))
                    .copied()
                    .unwrap_or(0)
                    ^ (i as u8);
            }
            from(&b)
        })
        .collect()
}

fn q8(b: &[u8]) -> BlockQ8_0 {
    BlockQ8_0 {
        d: u16::from_le_bytes([b[0], b[1]]),
        qs: core::array::from_fn(|j| b[2 + j] as i8),
    }
}

fn q4(b: &[u8]) -> BlockQ4_0 {
    BlockQ4_0 {
        d: u16::from_le_bytes([b[0], b[1]]),
        qs: core::array::from_fn(|j| b[2 + j]),
    }
}

/// Decodes one input and checks it (panics on a violated property).
pub fn fuzz(data: &[u8]) {
    let Ok(inp) = Input::arbitrary_take_rest(arbitrary::Unstructured::new(data)) else {
        return;
    };
    let head_dim = 2 * inp.half_dim as usize;
    let rotary = (2 * inp.rotary as usize).clamp(2, head_dim.max(2));
    let offset = (inp.offset as usize).min(head_dim.saturating_sub(rotary)) & !1;
    let layout = if inp.interleaved {
        Layout::Interleaved
    } else {
        Layout::RotateHalf
    };
    let cfg = RopeConfig::new(head_dim, 1e4, layout)
        .rotary_dim(rotary)
        .rotary_offset(offset);
    let Ok(base) = Rope::new(&cfg) else { return };
    let (tokens, heads) = (inp.tokens as usize % 24, inp.n_heads as usize % 12);
    let deltas: Vec<i32> = (0..tokens)
        .map(|t| {
            inp.deltas
                .get(t)
                .copied()
                .unwrap_or(t as i32)
                .clamp(-crate::MAX_POSITION, crate::MAX_POSITION)
        })
        .collect();
    let exact = tokens * heads * head_dim / 32;
    let n = (exact as i64 + inp.len_delta as i64).clamp(0, 4096) as usize;
    let valid = head_dim.is_multiple_of(32) && head_dim <= 4096 && heads > 0 && n == exact;

    for backend in Backend::available() {
        let rope = base.with_backend(backend).unwrap();
        let mut tbuf = vec![0f32; rope.table_len(tokens)];
        let table = rope.table(&deltas, &mut tbuf).unwrap();
        macro_rules! check {
            ($B:ty, $make:expr, $size:expr, $shift:ident, $deq:ident, $quant:ident) => {{
                let orig: Vec<$B> = blocks(n, &inp.bytes, $size, $make);
                let mut k = orig.clone();
                let r = if inp.table {
                    rope.$shift(&mut k, heads, table)
                } else {
                    rope.$shift(&mut k, heads, &deltas)
                };
                assert_eq!(r.is_ok(), valid, "{r:?}");
                if r.is_err() {
                    assert_eq!(k, orig);
                    return;
                }
                let mut f = vec![0f32; n * 32];
                $deq(&orig, &mut f).unwrap();
                rope.shift(&mut f, heads, &deltas).unwrap();
                let mut want = orig.clone();
                $quant(&f, &mut want).unwrap();
                assert_eq!(k, want);
            }};
        }
        if inp.q4 {
            check!(
                BlockQ4_0,
                q4,
                18,
                shift_q4_0,
                dequantize_q4_0,
                quantize_q4_0
            );
        } else {
            check!(
                BlockQ8_0,
                q8,
                34,
                shift_q8_0,
                dequantize_q8_0,
                quantize_q8_0
            );
        }
    }
}
