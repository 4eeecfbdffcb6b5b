//! The `fused` fuzz target: rotate-into, QK-norm + RoPE and the backward under random shapes,
//! views, dtype pairs, rounding modes and (often bad) arguments. Checked:
//!
//! * nothing panics (overflow checks and debug assertions are on in the fuzz build);
//! * a call that returns `Err` leaves every buffer bitwise unchanged, and the source is never
//!   written;
//! * `apply_into` (f32 → bf16 through its kernel, f16 → bf16 through the staged path, under
//!   posenc's rounding or HF-eager) is the documented reference in the destination's heads,
//!   and nothing outside them is written;
//! * `apply_normed_into` (f32 → f32) equals `apply_normed` on a copy;
//! * `apply_backward` equals `apply_inverse` (no attention factor here) and fails exactly
//!   when it does.

use arbitrary::Arbitrary;
use posenc::{Element, Layout, RmsNorm, Rope, RopeConfig, Rounding, View, bf16, f16};

#[derive(Arbitrary, Debug)]
struct Input {
    head_dim: u8,
    rotary_dim: u8,
    offset: u8,
    interleaved: bool,
    n_heads: u8,
    tokens: u8,
    src_slack: i8,
    dst_heads: u8,
    token_stride: u16,
    head_stride: u16,
    dst_offset: u16,
    dst_len: u16,
    positions: Vec<i32>,
    norm: u8,
    eps: f32,
    weight_slack: i8,
    /// Bit 0: the source is f16 (a staged pair, f16 → bf16); bit 1: HF-eager rounding.
    mode: u8,
}

fn bits<T: Element>(x: &[T]) -> Vec<u32> {
    x.iter().map(|v| v.to_f32().to_bits()).collect()
}

/// Decodes one input and checks it (see the module docs).
pub fn fuzz(data: &[u8]) {
    let Ok(inp) = Input::arbitrary_take_rest(arbitrary::Unstructured::new(data)) else {
        return;
    };
    let hd = inp.head_dim as usize % 40;
    let layout = if inp.interleaved {
        Layout::Interleaved
    } else {
        Layout::RotateHalf
    };
    let cfg = RopeConfig::new(hd, 1e4, layout)
        .rotary_dim(inp.rotary_dim as usize % 40)
        .rotary_offset(inp.offset as usize % 8);
    let Ok(rope) = Rope::new(&cfg) else { return };
    let rope = match inp.mode & 2 {
        0 => rope,
        _ => rope.with_rounding(Rounding::HfEager),
    };
    let (nh, tokens) = (inp.n_heads as usize % 5, inp.tokens as usize % 6);
    let pos: Vec<i32> = inp.positions.iter().copied().take(tokens).collect();
    let n = (tokens * nh * hd) as isize + inp.src_slack as isize % 3;
    let n = n.max(0) as usize;
    let src: Vec<f32> = (0..n)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 16.0)
        .collect();
    let view = View {
        n_heads: inp.dst_heads as usize % 5,
        token_stride: inp.token_stride as usize % 512,
        head_stride: inp.head_stride as usize % 512,
        offset: inp.dst_offset as usize % 256,
    };
    let dst_len = inp.dst_len as usize % 2048;
    let sentinel = bf16::from_f32(-7.0);
    let mut dst = vec![sentinel; dst_len];
    let src_bits = bits(&src);

    if inp.mode & 1 == 0 {
        into_case(&rope, &src, nh, &mut dst, view, &pos);
    } else {
        let src16: Vec<f16> = src.iter().map(|&v| f16::from_f32(v)).collect();
        into_case(&rope, &src16, nh, &mut dst, view, &pos);
    }
    assert_eq!(bits(&src), src_bits, "source written");

    // Backward: with no attention factor (no scaling here), the transposed rotation is the
    // inverse rotation, bit for bit.
    let mut g = src.clone();
    let mut inv = src.clone();
    let (rb, ri) = (
        rope.apply_backward(&mut g, nh, &pos[..]),
        rope.apply_inverse(&mut inv, nh, &pos[..]),
    );
    assert_eq!(
        rb.is_ok(),
        ri.is_ok(),
        "backward and inverse disagree on validity"
    );
    assert_eq!(bits(&g), bits(&inv), "backward is not the inverse rotation");
    if rb.is_err() {
        assert_eq!(bits(&g), src_bits, "backward written on error");
    }
    // QK-norm + RoPE: into f32 equals in place on a copy.
    let wlen = match inp.norm % 3 {
        2 => nh * hd,
        _ => hd,
    } as isize
        + inp.weight_slack as isize % 2;
    let w: Vec<f32> = (0..wlen.max(0) as usize)
        .map(|i| 0.5 + (i % 7) as f32 / 8.0)
        .collect();
    let norm = match inp.norm % 3 {
        0 => RmsNorm::per_head(&w, inp.eps),
        1 => RmsNorm::per_head_one_plus(&w, inp.eps),
        _ => RmsNorm::per_row(&w, inp.eps),
    };
    let mut out = vec![-7.0f32; dst_len];
    let res = rope.apply_normed_into(&src, nh, &norm, &mut out, view, &pos[..]);
    let mut inplace = src.clone();
    let res2 = rope.apply_normed(&mut inplace, nh, &norm, &pos[..]);
    match res {
        Err(_) => assert!(out.iter().all(|v| *v == -7.0), "written on error"),
        Ok(()) => {
            assert!(res2.is_ok(), "into accepted what in place refused");
            for t in 0..pos.len() {
                for h in 0..nh {
                    for c in 0..hd {
                        let i = view.offset + t * view.token_stride + h * view.head_stride + c;
                        let e = inplace[(t * nh + h) * hd + c];
                        assert!(out[i].to_bits() == e.to_bits() || (out[i].is_nan() && e.is_nan()));
                    }
                }
            }
        }
    }
    if res2.is_err() {
        assert_eq!(bits(&inplace), src_bits, "in place written on error");
    }
}

/// `apply_into` of `src` (`I`) into the bf16 `dst` (filled with a sentinel): an error writes
/// nothing; a success is the documented reference (under posenc's rounding, `apply` on an f32
/// copy rounded once; under the HF modes, `apply` on a copy in `I`, converted) in the view's
/// heads, and nothing outside them is written.
fn into_case<I: Element>(
    rope: &Rope,
    src: &[I],
    nh: usize,
    dst: &mut [bf16],
    view: View,
    pos: &[i32],
) {
    let hd = rope.head_dim();
    let sentinel = bf16::from_f32(-7.0);
    match rope.apply_into(src, nh, dst, view, pos) {
        Err(_) => assert!(dst.iter().all(|v| *v == sentinel), "written on error"),
        Ok(()) => {
            let copy: Vec<f32> = if rope.rounding() == Rounding::Once {
                let mut c: Vec<f32> = src.iter().map(|v| v.to_f32()).collect();
                rope.apply(&mut c, nh, pos).unwrap();
                c
            } else {
                let mut c = src.to_vec();
                rope.apply(&mut c, nh, pos).unwrap();
                c.iter().map(|v| v.to_f32()).collect()
            };
            let mut written = vec![false; dst.len()];
            for t in 0..pos.len() {
                for h in 0..nh {
                    for c in 0..hd {
                        let i = view.offset + t * view.token_stride + h * view.head_stride + c;
                        written[i] = true;
                        let e = bf16::from_f32(copy[(t * nh + h) * hd + c]);
                        assert!(dst[i] == e || (dst[i].is_nan() && e.is_nan()));
                    }
                }
            }
            for (i, w) in written.iter().enumerate() {
                assert!(*w || dst[i] == sentinel, "written outside the view");
            }
        }
    }
}
