//! The runtime entry points of the C ABI called from Rust, against posenc's Rust API (same
//! code, same backend: bitwise): angles from positions or a table, Q+K with GQA, views,
//! M-RoPE axes, the config's rotary_offset/axes/rounding, presets, the quantized K-cache
//! shift; and their errors, with buffers unchanged.

use core::ffi::{CStr, c_int};
use core::ptr::{null, null_mut};
use posenc::{Axes, BlockQ4_0, BlockQ8_0, Layout, Rope, RopeConfig, Rounding, View, bf16, presets};
use posenc_capi::*;

fn cfg(head_dim: usize, layout: PosencLayout) -> PosencRopeConfig {
    PosencRopeConfig {
        head_dim,
        base: 10_000.0,
        layout,
        ..PosencRopeConfig::default()
    }
}

fn init(c: &PosencRopeConfig) -> Result<PosencRope, c_int> {
    let mut r = PosencRope::default();
    match unsafe { posenc_rope_init(c, &mut r) } {
        POSENC_OK => Ok(r),
        e => Err(e),
    }
}

fn data(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i + seed) * 37 % 23) as f32 - 11.0) * 0.13)
        .collect()
}

fn positions(p: &[i32]) -> PosencAngles {
    PosencAngles {
        kind: POSENC_ANGLES_POSITIONS,
        n_tokens: p.len(),
        positions: p.as_ptr(),
        table: null(),
        table_len: 0,
    }
}

fn table(t: &[f32], n_tokens: usize) -> PosencAngles {
    PosencAngles {
        kind: POSENC_ANGLES_TABLE,
        n_tokens,
        positions: null(),
        table: t.as_ptr(),
        table_len: t.len(),
    }
}

/// The C table of `pos` for `r`.
fn c_table(r: &PosencRope, pos: &[i32]) -> Vec<f32> {
    let n = unsafe { posenc_rope_table_len(r, pos.len()) };
    let mut t = vec![0f32; n];
    let rc = unsafe { posenc_rope_table(r, pos.as_ptr(), pos.len(), t.as_mut_ptr(), n) };
    assert_eq!(rc, POSENC_OK);
    t
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn config_offset_axes_and_rounding_reach_posenc() {
    let c = PosencRopeConfig {
        rotary_dim: 16,
        rotary_offset: 8,
        rounding: POSENC_ROUNDING_HF_EAGER,
        ..cfg(32, POSENC_LAYOUT_ROTATE_HALF)
    };
    let want = Rope::new(
        &RopeConfig::new(32, 1e4, Layout::RotateHalf)
            .rotary_dim(16)
            .rotary_offset(8),
    )
    .unwrap()
    .with_rounding(Rounding::HfEager);
    assert_eq!(init(&c).unwrap().as_rope(), Some(&want));

    let c = PosencRopeConfig {
        axes: POSENC_AXES_MROPE,
        sections: [2, 3, 3],
        ..cfg(16, POSENC_LAYOUT_ROTATE_HALF)
    };
    let want = Rope::new(
        &RopeConfig::new(16, 1e4, Layout::RotateHalf).axes(Axes::MRope {
            sections: [2, 3, 3],
        }),
    )
    .unwrap();
    assert_eq!(init(&c).unwrap().as_rope(), Some(&want));

    for (c, code) in [
        (
            PosencRopeConfig {
                rounding: 3,
                ..cfg(8, 0)
            },
            POSENC_ERR_INVALID_ENUM,
        ),
        (
            PosencRopeConfig {
                axes: 4,
                ..cfg(8, 0)
            },
            POSENC_ERR_INVALID_ENUM,
        ),
        (
            PosencRopeConfig {
                rotary_offset: 2,
                ..cfg(8, 0)
            },
            POSENC_ERR_PARAMETER_OUT_OF_RANGE,
        ),
    ] {
        assert_eq!(init(&c).err(), Some(code));
    }
}

#[test]
fn rotate_from_positions_and_tables_matches_posenc() {
    let (heads, hd) = (3, 32);
    let pos = [0i32, 7, -3, 100_000];
    for layout in [POSENC_LAYOUT_INTERLEAVED, POSENC_LAYOUT_ROTATE_HALF] {
        let r = init(&PosencRopeConfig {
            rotary_dim: 24,
            ..cfg(hd, layout)
        })
        .unwrap();
        let rope = *r.as_rope().unwrap();
        let t = c_table(&r, &pos);
        let mut buf = vec![0f32; rope.table_len(pos.len())];
        rope.table(&pos, &mut buf).unwrap();
        assert_eq!(bits(&t), bits(&buf));
        let x0 = data(pos.len() * heads * hd, 1);
        for op in [POSENC_OP_APPLY, POSENC_OP_INVERSE, POSENC_OP_SHIFT] {
            let mut want = x0.clone();
            match op {
                POSENC_OP_APPLY => rope.apply(&mut want, heads, &pos),
                POSENC_OP_INVERSE => rope.apply_inverse(&mut want, heads, &pos),
                _ => rope.shift(&mut want, heads, &pos),
            }
            .unwrap();
            for at in [positions(&pos), table(&t, pos.len())] {
                let mut x = x0.clone();
                let rc =
                    unsafe { posenc_rope_rotate_f32(&r, op, x.as_mut_ptr(), x.len(), heads, &at) };
                assert_eq!(rc, POSENC_OK);
                assert_eq!(bits(&x), bits(&want), "op {op}");
            }
            // bf16, from the table.
            let mut xb: Vec<bf16> = x0.iter().map(|&v| bf16::from_f32(v)).collect();
            let mut wb = xb.clone();
            match op {
                POSENC_OP_APPLY => rope.apply(&mut wb, heads, &pos),
                POSENC_OP_INVERSE => rope.apply_inverse(&mut wb, heads, &pos),
                _ => rope.shift(&mut wb, heads, &pos),
            }
            .unwrap();
            let at = table(&t, pos.len());
            let rc = unsafe {
                posenc_rope_rotate_bf16(&r, op, xb.as_mut_ptr().cast(), xb.len(), heads, &at)
            };
            assert_eq!(rc, POSENC_OK);
            assert_eq!(xb, wb);
        }
    }
}

#[test]
fn qk_views_and_axes_match_posenc() {
    let r = init(&cfg(16, POSENC_LAYOUT_ROTATE_HALF)).unwrap();
    let rope = *r.as_rope().unwrap();
    let pos = [3i32, 4, 5];
    let t = c_table(&r, &pos);
    // Q + K with GQA.
    let (q0, k0) = (data(3 * 4 * 16, 2), data(3 * 2 * 16, 3));
    let (mut wq, mut wk) = (q0.clone(), k0.clone());
    rope.apply_qk(&mut wq, 4, &mut wk, 2, &pos).unwrap();
    for at in [positions(&pos), table(&t, 3)] {
        let (mut q, mut k) = (q0.clone(), k0.clone());
        let rc = unsafe {
            posenc_rope_apply_qk_f32(
                &r,
                q.as_mut_ptr(),
                q.len(),
                4,
                k.as_mut_ptr(),
                k.len(),
                2,
                &at,
            )
        };
        assert_eq!(rc, POSENC_OK);
        assert_eq!((bits(&q), bits(&k)), (bits(&wq), bits(&wk)));
    }
    // Views: a fused QKV row of 4 q, 2 k, 2 v heads.
    let row = 8 * 16;
    let x0 = data(3 * row, 4);
    let cv = [
        PosencView {
            n_heads: 4,
            token_stride: row,
            head_stride: 16,
            offset: 0,
        },
        PosencView {
            n_heads: 2,
            token_stride: row,
            head_stride: 16,
            offset: 64,
        },
    ];
    let pv = [
        View {
            n_heads: 4,
            token_stride: row,
            head_stride: 16,
            offset: 0,
        },
        View {
            n_heads: 2,
            token_stride: row,
            head_stride: 16,
            offset: 64,
        },
    ];
    let mut want = x0.clone();
    rope.apply_views(&mut want, &pv, &pos).unwrap();
    let mut x = x0.clone();
    let at = table(&t, 3);
    let rc =
        unsafe { posenc_rope_apply_views_f32(&r, x.as_mut_ptr(), x.len(), cv.as_ptr(), 2, &at) };
    assert_eq!(rc, POSENC_OK);
    assert_eq!(bits(&x), bits(&want));
    // Overlapping views are refused, nothing written.
    let bad = [
        cv[0],
        PosencView {
            offset: 16,
            ..cv[1]
        },
    ];
    let mut x = x0.clone();
    let rc =
        unsafe { posenc_rope_apply_views_f32(&r, x.as_mut_ptr(), x.len(), bad.as_ptr(), 2, &at) };
    assert_eq!(rc, POSENC_ERR_PARAMETER_OUT_OF_RANGE);
    assert_eq!(bits(&x), bits(&x0));

    // M-RoPE axes and their table.
    let m = init(&PosencRopeConfig {
        axes: POSENC_AXES_MROPE,
        sections: [2, 3, 3],
        ..cfg(16, POSENC_LAYOUT_ROTATE_HALF)
    })
    .unwrap();
    let mrope = *m.as_rope().unwrap();
    let ap = [[7i32, 7, 7], [8, 3, 5]];
    let flat = ap.as_flattened();
    let x0 = data(2 * 2 * 16, 5);
    let mut want = x0.clone();
    mrope.apply_axes(&mut want, 2, &ap).unwrap();
    let mut x = x0.clone();
    let rc =
        unsafe { posenc_rope_apply_axes_f32(&m, x.as_mut_ptr(), x.len(), 2, flat.as_ptr(), 6, 3) };
    assert_eq!(rc, POSENC_OK);
    assert_eq!(bits(&x), bits(&want));
    let n = unsafe { posenc_rope_table_len(&m, 2) };
    let mut tb = vec![0f32; n];
    let rc = unsafe { posenc_rope_table_axes(&m, flat.as_ptr(), 6, 3, tb.as_mut_ptr(), n) };
    assert_eq!(rc, POSENC_OK);
    let mut x = x0.clone();
    let at = table(&tb, 2);
    assert_eq!(
        unsafe { posenc_rope_rotate_f32(&m, POSENC_OP_APPLY, x.as_mut_ptr(), x.len(), 2, &at) },
        POSENC_OK
    );
    assert_eq!(bits(&x), bits(&want));
    // Wrong axis counts.
    let mut x = x0.clone();
    for (len, axes, code) in [
        (6, 2, POSENC_ERR_LENGTH_MISMATCH),
        (6, 4, POSENC_ERR_PARAMETER_OUT_OF_RANGE),
        (5, 3, POSENC_ERR_NOT_WHOLE_ROWS),
    ] {
        let rc = unsafe {
            posenc_rope_apply_axes_f32(&m, x.as_mut_ptr(), x.len(), 2, flat.as_ptr(), len, axes)
        };
        assert_eq!(rc, code, "{len} {axes}");
    }
    assert_eq!(bits(&x), bits(&x0));
}

#[test]
fn angles_errors_write_nothing() {
    let r = init(&cfg(16, POSENC_LAYOUT_ROTATE_HALF)).unwrap();
    let pos = [1i32, 2];
    let t = c_table(&r, &pos);
    let x0 = data(2 * 16, 6);
    let mut x = x0.clone();
    let call = |x: &mut Vec<f32>, at: *const PosencAngles, op| unsafe {
        posenc_rope_rotate_f32(&r, op, x.as_mut_ptr(), x.len(), 1, at)
    };
    assert_eq!(call(&mut x, null(), 0), POSENC_ERR_NULL_POINTER);
    assert_eq!(call(&mut x, &positions(&pos), 9), POSENC_ERR_INVALID_ENUM);
    assert_eq!(
        call(
            &mut x,
            &PosencAngles {
                kind: 5,
                ..positions(&pos)
            },
            0
        ),
        POSENC_ERR_INVALID_ENUM
    );
    assert_eq!(
        call(&mut x, &table(&t[..30], 2), 0),
        POSENC_ERR_LENGTH_MISMATCH
    );
    assert_eq!(
        call(&mut x, &positions(&pos[..1]), 0),
        POSENC_ERR_LENGTH_MISMATCH
    );
    assert_eq!(
        call(
            &mut x,
            &PosencAngles {
                positions: null(),
                ..positions(&pos)
            },
            0
        ),
        POSENC_ERR_NULL_POINTER
    );
    // The angles overlapping the written buffer.
    let at = table(&x[..32], 2);
    let p = x.as_mut_ptr();
    assert_eq!(
        unsafe { posenc_rope_rotate_f32(&r, 0, p, 32, 1, &at) },
        POSENC_ERR_OVERLAPPING_BUFFERS
    );
    assert_eq!(bits(&x), bits(&x0));
    // posenc_rope_table: exact output length, nothing written otherwise.
    let mut out = vec![9f32; 33];
    let rc = unsafe { posenc_rope_table(&r, pos.as_ptr(), 2, out.as_mut_ptr(), 33) };
    assert_eq!(rc, POSENC_ERR_LENGTH_MISMATCH);
    assert!(out.iter().all(|&v| v == 9.0));
    assert_eq!(unsafe { posenc_rope_table_len(null(), 2) }, 0);
}

fn blocks8(n: usize) -> Vec<BlockQ8_0> {
    let mut b = vec![BlockQ8_0::default(); n];
    posenc::quantize_q8_0(&data(n * 32, 7), &mut b).unwrap();
    b
}

#[test]
fn quantized_shift_and_conversions_match_posenc() {
    let r = init(&PosencRopeConfig {
        rotary_dim: 32,
        ..cfg(64, POSENC_LAYOUT_ROTATE_HALF)
    })
    .unwrap();
    let rope = *r.as_rope().unwrap();
    let (heads, deltas) = (3, [-5i32, 9, 200]);
    let t = c_table(&r, &deltas);
    let k0 = blocks8(3 * heads * 2);
    let mut want = k0.clone();
    rope.shift_q8_0(&mut want, heads, &deltas).unwrap();
    for at in [positions(&deltas), table(&t, 3)] {
        let mut k: Vec<PosencBlockQ8_0> = k0
            .iter()
            .map(|b| PosencBlockQ8_0 { d: b.d, qs: b.qs })
            .collect();
        let rc = unsafe { posenc_rope_shift_q8_0(&r, k.as_mut_ptr(), k.len(), heads, &at) };
        assert_eq!(rc, POSENC_OK);
        assert!(k.iter().zip(&want).all(|(a, b)| a.d == b.d && a.qs == b.qs));
    }
    // Q4_0 through the C conversions.
    let x = data(k0.len() * 32, 8);
    let mut k4 = vec![PosencBlockQ4_0::default(); k0.len()];
    assert_eq!(
        unsafe { posenc_quantize_q4_0(x.as_ptr(), x.len(), k4.as_mut_ptr(), k4.len()) },
        POSENC_OK
    );
    let mut w4 = vec![BlockQ4_0::default(); k0.len()];
    posenc::quantize_q4_0(&x, &mut w4).unwrap();
    assert!(k4.iter().zip(&w4).all(|(a, b)| a.d == b.d && a.qs == b.qs));
    rope.shift_q4_0(&mut w4, heads, &deltas).unwrap();
    let rc = unsafe {
        posenc_rope_shift_q4_0(&r, k4.as_mut_ptr(), k4.len(), heads, &positions(&deltas))
    };
    assert_eq!(rc, POSENC_OK);
    assert!(k4.iter().zip(&w4).all(|(a, b)| a.d == b.d && a.qs == b.qs));
    let mut f = vec![0f32; x.len()];
    assert_eq!(
        unsafe { posenc_dequantize_q4_0(k4.as_ptr(), k4.len(), f.as_mut_ptr(), f.len()) },
        POSENC_OK
    );
    let mut wf = vec![0f32; x.len()];
    posenc::dequantize_q4_0(&w4, &mut wf).unwrap();
    assert_eq!(bits(&f), bits(&wf));

    // Errors: wrong block count, head_dim not whole blocks, overlap; nothing written.
    let mut k: Vec<PosencBlockQ8_0> = k0
        .iter()
        .map(|b| PosencBlockQ8_0 { d: b.d, qs: b.qs })
        .collect();
    let before = k.clone();
    let rc = unsafe {
        posenc_rope_shift_q8_0(&r, k.as_mut_ptr(), k.len() - 1, heads, &positions(&deltas))
    };
    assert_eq!(rc, POSENC_ERR_LENGTH_MISMATCH);
    let odd = init(&cfg(48, POSENC_LAYOUT_ROTATE_HALF)).unwrap();
    let rc = unsafe { posenc_rope_shift_q8_0(&odd, k.as_mut_ptr(), 9, 2, &positions(&deltas)) };
    assert_eq!(rc, POSENC_ERR_PARAMETER_OUT_OF_RANGE);
    let msg = unsafe { CStr::from_ptr(posenc_last_error_detail()) }
        .to_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains("head_dim"), "{msg}");
    let rc = unsafe { posenc_rope_shift_q8_0(&r, null_mut(), 18, heads, &positions(&deltas)) };
    assert_eq!(rc, POSENC_ERR_NULL_POINTER);
    assert_eq!(k, before);
    let mut out = vec![1f32; 31];
    let rc = unsafe { posenc_dequantize_q8_0(k.as_ptr(), 1, out.as_mut_ptr(), 31) };
    assert_eq!(rc, POSENC_ERR_LENGTH_MISMATCH);
    assert!(out.iter().all(|&v| v == 1.0));
}

#[test]
fn presets_by_name_and_index() {
    let n = posenc_preset_count();
    assert_eq!(n, presets::ALL.len());
    for (i, p) in presets::ALL.iter().enumerate() {
        let name = unsafe { CStr::from_ptr(posenc_preset_name(i)) };
        assert_eq!(name.to_str().unwrap(), p.name);
        let (mut a, mut b) = (PosencRope::default(), PosencRope::default());
        let (mut h, mut kv) = (0usize, 0usize);
        assert_eq!(
            unsafe { posenc_rope_init_preset_index(i, &mut a, &mut h, &mut kv) },
            POSENC_OK
        );
        assert_eq!((h, kv), (p.n_heads, p.n_kv_heads));
        assert_eq!(
            unsafe { posenc_rope_init_preset(name.as_ptr(), &mut b, null_mut(), null_mut()) },
            POSENC_OK
        );
        let want = p.rope().unwrap();
        assert_eq!((a.as_rope(), b.as_rope()), (Some(&want), Some(&want)));
    }
    assert!(posenc_preset_name(n).is_null());
    let mut r = PosencRope::default();
    assert_eq!(
        unsafe { posenc_rope_init_preset_index(n, &mut r, null_mut(), null_mut()) },
        POSENC_ERR_PARAMETER_OUT_OF_RANGE
    );
    assert_eq!(
        unsafe { posenc_rope_init_preset(c"Llama 9".as_ptr(), &mut r, null_mut(), null_mut()) },
        POSENC_ERR_PARAMETER_OUT_OF_RANGE
    );
    assert_eq!(
        unsafe { posenc_rope_init_preset(null(), &mut r, null_mut(), null_mut()) },
        POSENC_ERR_NULL_POINTER
    );
    assert!(r.as_rope().is_none());
}
