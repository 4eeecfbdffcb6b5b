//! Rotate-into and QK-norm + RoPE under random shapes, views and (often bad) arguments.
//!
//! Checked, for `apply_into`, `apply_normed_into` and `apply_normed`:
//! * nothing panics (overflow checks and debug assertions are on in the fuzz build);
//! * a call that returns `Err` leaves every buffer bitwise unchanged, and the source is never
//!   written;
//! * a call that succeeds equals its in-place form on a copy: `apply_into` is `apply` on an f32
//!   copy rounded once into the destination's heads, `apply_normed_into` (f32 → f32) is
//!   `apply_normed` on a copy, and nothing outside the destination heads is written.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use posenc::{Element, Layout, RmsNorm, Rope, RopeConfig, View, bf16};

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
}

fn bits<T: Element>(x: &[T]) -> Vec<u32> {
    x.iter().map(|v| v.to_f32().to_bits()).collect()
}

fuzz_target!(|inp: Input| {
    let hd = inp.head_dim as usize % 40;
    let layout = if inp.interleaved { Layout::Interleaved } else { Layout::RotateHalf };
    let cfg = RopeConfig::new(hd, 1e4, layout)
        .rotary_dim(inp.rotary_dim as usize % 40)
        .rotary_offset(inp.offset as usize % 8);
    let Ok(rope) = Rope::new(&cfg) else { return };
    let (nh, tokens) = (inp.n_heads as usize % 5, inp.tokens as usize % 6);
    let pos: Vec<i32> = inp.positions.iter().copied().take(tokens).collect();
    let n = (tokens * nh * hd) as isize + inp.src_slack as isize % 3;
    let n = n.max(0) as usize;
    let src: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 16.0).collect();
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

    match rope.apply_into(&src, nh, &mut dst, view, &pos[..]) {
        Err(_) => assert!(dst.iter().all(|v| *v == sentinel), "written on error"),
        Ok(()) => {
            let mut copy = src.clone();
            rope.apply(&mut copy, nh, &pos[..]).unwrap();
            let mut written = vec![false; dst_len];
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
    assert_eq!(bits(&src), src_bits, "source written");

    // QK-norm + RoPE: into f32 equals in place on a copy.
    let wlen = match inp.norm % 3 {
        2 => nh * hd,
        _ => hd,
    } as isize
        + inp.weight_slack as isize % 2;
    let w: Vec<f32> = (0..wlen.max(0) as usize).map(|i| 0.5 + (i % 7) as f32 / 8.0).collect();
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
});
