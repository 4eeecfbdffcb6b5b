//! ALiBi through the C ABI: results bitwise posenc's, every error path, buffers unchanged.

use core::ffi::{CStr, c_int};
use core::ptr::{null, null_mut};
use posenc::alibi::{AlibiMode, Positions};
use posenc::{bf16, f16};
use posenc_capi::*;

fn list(p: &[i32]) -> PosencPositions {
    PosencPositions {
        kind: POSENC_POSITIONS_LIST,
        start: 0,
        list: p.as_ptr(),
        len: p.len(),
    }
}

fn range(start: i32, len: usize) -> PosencPositions {
    PosencPositions {
        kind: POSENC_POSITIONS_RANGE,
        start,
        list: null(),
        len,
    }
}

#[track_caller]
fn fails(rc: c_int, want: c_int) {
    let d = unsafe { CStr::from_ptr(posenc_last_error_detail()) };
    assert_eq!(rc, want, "got {rc}: {d:?}");
}

#[test]
fn slopes_match_posenc() {
    for n in [1usize, 2, 7, 8, 12, 32, 80] {
        let mut a = vec![0f32; n];
        let mut b = vec![0f32; n];
        assert_eq!(
            unsafe { posenc_alibi_slopes(n, a.as_mut_ptr(), n) },
            POSENC_OK
        );
        posenc::alibi::alibi_slopes(n, &mut b).unwrap();
        assert_eq!(a, b, "{n}");
        assert_eq!(
            unsafe { posenc_alibi_slopes_max_bias(n, 5.0, a.as_mut_ptr(), n) },
            POSENC_OK
        );
        posenc::alibi::alibi_slopes_max_bias(n, 5.0, &mut b).unwrap();
        assert_eq!(a, b, "{n}");
    }
    let mut s = [0f32; 4];
    assert_eq!(
        unsafe { posenc_alibi_slopes_max_bias(4, 4.0, s.as_mut_ptr(), 4) },
        POSENC_OK
    );
    assert_eq!(s, [0.5, 0.25, 0.125, 0.0625]);
}

#[test]
fn slope_errors_leave_out_unchanged() {
    let mut s = [3f32; 4];
    unsafe {
        fails(posenc_alibi_slopes(0, null_mut(), 0), POSENC_ERR_ZERO_HEADS);
        fails(
            posenc_alibi_slopes(4, null_mut(), 4),
            POSENC_ERR_NULL_POINTER,
        );
        let sp = s.as_mut_ptr();
        fails(
            posenc_alibi_slopes(2, sp.cast::<u8>().add(1).cast(), 2),
            POSENC_ERR_MISALIGNED_POINTER,
        );
        fails(
            posenc_alibi_slopes_max_bias(4, f32::NAN, sp, 4),
            POSENC_ERR_INVALID_PARAMETER,
        );
        fails(
            posenc_alibi_slopes_max_bias(4, -1.0, sp, 4),
            POSENC_ERR_INVALID_PARAMETER,
        );
        fails(
            posenc_alibi_slopes_max_bias(0, 8.0, sp, 0),
            POSENC_ERR_ZERO_HEADS,
        );
        // `out_len`, not `n_heads`, bounds the writes: a buffer declared shorter (or longer)
        // than `n_heads` is refused before anything is written, the element past the
        // declared length included.
        for (n_heads, out_len) in [(4, 3), (3, 4), (4, 0), (1, 2)] {
            fails(
                posenc_alibi_slopes(n_heads, sp, out_len),
                POSENC_ERR_LENGTH_MISMATCH,
            );
            fails(
                posenc_alibi_slopes_max_bias(n_heads, 4.0, sp, out_len),
                POSENC_ERR_LENGTH_MISMATCH,
            );
        }
        let d = CStr::from_ptr(posenc_last_error_detail()).to_str().unwrap();
        assert!(d.contains("`out`"), "{d}");
    }
    assert_eq!(s, [3.0; 4]);
}

#[test]
fn bias_matches_posenc_every_dtype_mode_and_positions_kind() {
    let slopes = [0.5f32, 0.25, 0.0625];
    let (ql, kl) = ([3i32, -1], [0i32, 1, 2, 10, -4]);
    let qs: [(PosencPositions, Positions); 2] = [
        (list(&ql), Positions::List(&ql)),
        (range(7, 2), Positions::range(7, 2)),
    ];
    let ks: [(PosencPositions, Positions); 2] = [
        (list(&kl), Positions::List(&kl)),
        (range(i32::MAX - 2, 5), Positions::range(i32::MAX - 2, 5)),
    ];
    for (cm, m) in [
        (POSENC_ALIBI_SYMMETRIC, AlibiMode::Symmetric),
        (POSENC_ALIBI_CAUSAL, AlibiMode::Causal),
    ] {
        for (cq, q) in qs {
            for (ck, k) in ks {
                let n = 3 * 2 * 5;
                let mut a = vec![0f32; n];
                let mut b = vec![0f32; n];
                let rc = unsafe {
                    posenc_alibi_bias_f32(slopes.as_ptr(), 3, cq, ck, cm, a.as_mut_ptr(), n)
                };
                assert_eq!(rc, POSENC_OK);
                posenc::alibi::alibi_bias(&slopes, q, k, m, &mut b).unwrap();
                assert_eq!(
                    a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );

                let mut a = vec![0u16; n];
                let mut b = vec![f16::ZERO; n];
                let rc = unsafe {
                    posenc_alibi_bias_f16(slopes.as_ptr(), 3, cq, ck, cm, a.as_mut_ptr(), n)
                };
                assert_eq!(rc, POSENC_OK);
                posenc::alibi::alibi_bias(&slopes, q, k, m, &mut b).unwrap();
                assert_eq!(a, b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());

                let mut a = vec![0u16; n];
                let mut b = vec![bf16::ZERO; n];
                let rc = unsafe {
                    posenc_alibi_bias_bf16(slopes.as_ptr(), 3, cq, ck, cm, a.as_mut_ptr(), n)
                };
                assert_eq!(rc, POSENC_OK);
                posenc::alibi::alibi_bias(&slopes, q, k, m, &mut b).unwrap();
                assert_eq!(a, b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            }
        }
    }
}

#[test]
fn bias_known_values() {
    // One head (slope 0.5), query at 1, keys at 0, 1, 2.
    let (mut sym, mut causal) = ([9f32; 3], [9f32; 3]);
    unsafe {
        let s = [0.5f32];
        assert_eq!(
            posenc_alibi_bias_f32(
                s.as_ptr(),
                1,
                list(&[1]),
                range(0, 3),
                POSENC_ALIBI_SYMMETRIC,
                sym.as_mut_ptr(),
                3
            ),
            POSENC_OK
        );
        assert_eq!(
            posenc_alibi_bias_f32(
                s.as_ptr(),
                1,
                list(&[1]),
                range(0, 3),
                POSENC_ALIBI_CAUSAL,
                causal.as_mut_ptr(),
                3
            ),
            POSENC_OK
        );
    }
    assert_eq!(sym, [-0.5, 0.0, -0.5]);
    assert_eq!(causal, [-0.5, 0.0, 0.5]);
}

#[test]
fn bias_errors_leave_out_unchanged() {
    let s = [0.5f32, 0.25];
    let mut o = [7f32; 6];
    let op = o.as_mut_ptr();
    let (q, k) = (range(0, 1), range(0, 3));
    unsafe {
        fails(
            posenc_alibi_bias_f32(s.as_ptr(), 2, q, k, 2, op, 6),
            POSENC_ERR_INVALID_ENUM,
        );
        fails(
            posenc_alibi_bias_f32(s.as_ptr(), 2, PosencPositions { kind: 5, ..q }, k, 0, op, 6),
            POSENC_ERR_INVALID_ENUM,
        );
        fails(
            posenc_alibi_bias_f32(s.as_ptr(), 2, q, PosencPositions { kind: 9, ..k }, 0, op, 6),
            POSENC_ERR_INVALID_ENUM,
        );
        fails(
            posenc_alibi_bias_f32(s.as_ptr(), 2, q, k, 0, op, 5),
            POSENC_ERR_LENGTH_MISMATCH,
        );
        fails(
            posenc_alibi_bias_f32(s.as_ptr(), 0, q, k, 0, op, 6),
            POSENC_ERR_ZERO_HEADS,
        );
        fails(
            posenc_alibi_bias_f32(null(), 2, q, k, 0, op, 6),
            POSENC_ERR_NULL_POINTER,
        );
        fails(
            posenc_alibi_bias_f32(s.as_ptr(), 2, q, k, 0, null_mut(), 6),
            POSENC_ERR_NULL_POINTER,
        );
        let null_list = PosencPositions {
            kind: POSENC_POSITIONS_LIST,
            start: 0,
            list: null(),
            len: 3,
        };
        fails(
            posenc_alibi_bias_f32(s.as_ptr(), 2, q, null_list, 0, op, 6),
            POSENC_ERR_NULL_POINTER,
        );
        let nan = [0.5f32, f32::NAN];
        fails(
            posenc_alibi_bias_f32(nan.as_ptr(), 2, q, k, 0, op, 6),
            POSENC_ERR_PARAMETER_OUT_OF_RANGE,
        );
        // The output may not overlap the slopes or a position list.
        fails(
            posenc_alibi_bias_f32(op, 2, q, k, 0, op.add(1), 6),
            POSENC_ERR_OVERLAPPING_BUFFERS,
        );
        let over = PosencPositions {
            kind: POSENC_POSITIONS_LIST,
            start: 0,
            list: op.cast::<i32>().add(5),
            len: 3,
        };
        fails(
            posenc_alibi_bias_f32(s.as_ptr(), 2, q, over, 0, op, 6),
            POSENC_ERR_OVERLAPPING_BUFFERS,
        );
        // A range has no buffer: any start, NULL list, never an overlap.
        assert_eq!(
            posenc_alibi_bias_f32(s.as_ptr(), 2, range(0, 0), k, 0, null_mut(), 0),
            POSENC_OK
        );
        let mut h = [1u16; 6];
        fails(
            posenc_alibi_bias_f16(s.as_ptr(), 2, q, k, 0, h.as_mut_ptr(), 5),
            POSENC_ERR_LENGTH_MISMATCH,
        );
        fails(
            posenc_alibi_bias_bf16(s.as_ptr(), 2, q, k, 3, h.as_mut_ptr(), 6),
            POSENC_ERR_INVALID_ENUM,
        );
        assert_eq!(h, [1; 6]);
    }
    assert_eq!(o, [7.0; 6]);
}

#[test]
fn bloom_positions_from_mask_every_mask_type() {
    let want = [0i32, 0, 0, 1, 2];
    let mut out = [9i32; 5];
    unsafe {
        assert_eq!(
            posenc_alibi_positions_from_mask_u8([0u8, 0, 1, 1, 1].as_ptr(), 5, out.as_mut_ptr(), 5),
            POSENC_OK
        );
        assert_eq!(out, want);
        out = [9; 5];
        assert_eq!(
            posenc_alibi_positions_from_mask_i32(
                [0i32, 0, 1, 1, 1].as_ptr(),
                5,
                out.as_mut_ptr(),
                5
            ),
            POSENC_OK
        );
        assert_eq!(out, want);
        out = [9; 5];
        assert_eq!(
            posenc_alibi_positions_from_mask_i64(
                [0i64, 0, 1, 1, 1].as_ptr(),
                5,
                out.as_mut_ptr(),
                5
            ),
            POSENC_OK
        );
        assert_eq!(out, want);

        // BLOOM's build_alibi_tensor for that row: one query at 0, causal.
        let mut slopes = [0f32; 2];
        assert_eq!(posenc_alibi_slopes(2, slopes.as_mut_ptr(), 2), POSENC_OK);
        let mut bloom = [0f32; 10];
        let rc = posenc_alibi_bias_f32(
            slopes.as_ptr(),
            2,
            list(&[0]),
            list(&out),
            POSENC_ALIBI_CAUSAL,
            bloom.as_mut_ptr(),
            10,
        );
        assert_eq!(rc, POSENC_OK);
        assert_eq!(&bloom[..5], &[0.0, 0.0, 0.0, 0.0625, 0.125]);

        // Errors: NULL, in place (mask == out).
        let mut m = [1i32, 1, 0];
        let before = m;
        fails(
            posenc_alibi_positions_from_mask_u8(null(), 5, out.as_mut_ptr(), 5),
            POSENC_ERR_NULL_POINTER,
        );
        fails(
            posenc_alibi_positions_from_mask_i64([1i64].as_ptr(), 1, null_mut(), 1),
            POSENC_ERR_NULL_POINTER,
        );
        fails(
            posenc_alibi_positions_from_mask_i32(m.as_ptr(), 3, m.as_mut_ptr(), 3),
            POSENC_ERR_OVERLAPPING_BUFFERS,
        );
        assert_eq!(m, before);
        assert_eq!(
            posenc_alibi_positions_from_mask_u8(null(), 0, null_mut(), 0),
            POSENC_OK
        );

        // `out_len` must equal `mask_len`: a shorter or longer output is refused whole.
        let mut o = [9i32; 5];
        let op = o.as_mut_ptr();
        for (mask_len, out_len) in [(5, 4), (4, 5), (1, 0)] {
            fails(
                posenc_alibi_positions_from_mask_u8([1u8; 5].as_ptr(), mask_len, op, out_len),
                POSENC_ERR_LENGTH_MISMATCH,
            );
            fails(
                posenc_alibi_positions_from_mask_i32([1i32; 5].as_ptr(), mask_len, op, out_len),
                POSENC_ERR_LENGTH_MISMATCH,
            );
            fails(
                posenc_alibi_positions_from_mask_i64([1i64; 5].as_ptr(), mask_len, op, out_len),
                POSENC_ERR_LENGTH_MISMATCH,
            );
        }
        assert_eq!(o, [9; 5]);
    }
}
