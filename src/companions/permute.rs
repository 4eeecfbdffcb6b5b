//! Reordering channels between the interleaved and the rotate_half pairing.
//!
//! The two RoPE layouts are the same math on differently ordered channels: pair `i` is
//! `(x[2i], x[2i+1])` interleaved and `(x[i], x[i + r/2])` rotate_half. Moving channel `2i` to
//! `i` and `2i+1` to `r/2 + i` (within each head's first `r = rotary_dim` channels) turns one
//! into the other, so `rope_rotate_half(P·x) = P·rope_interleaved(x)` exactly — posenc's
//! tests and fuzz targets check it bit for bit on every backend.
//!
//! Two uses:
//!
//! * **Activations** (`tokens × n_heads × head_dim` rows, like
//!   [`Rope::apply`](crate::Rope::apply)): [`permute_to_rotate_half`], [`permute_to_interleaved`] and their `_in_place` forms.
//! * **Q/K projection weights** (`[n_heads·head_dim, in_features]`, row-major, rows = output
//!   features): [`permute_weight_to_rotate_half`], [`permute_weight_to_interleaved`] and their
//!   `_in_place` forms move whole rows, so that `W'·v = P·(W·v)`: a model converted this way
//!   produces rotate_half-ordered q/k and runs with [`Layout::RotateHalf`](crate::Layout).
//!   This is HuggingFace `convert_llama_weights_to_hf.py`'s `permute` (Meta's interleaved
//!   checkpoints → HF), and llama.cpp's `convert_hf_to_gguf.py` `LlamaModel.permute` is its
//!   inverse (HF → GGUF, whose LLaMA rope is interleaved).
//!
//! ```
//! use posenc::permute::{permute_to_interleaved_in_place, permute_to_rotate_half_in_place};
//! // one token, two heads of 4 channels, all rotary: (a0, b0, a1, b1) per head
//! let mut x = [1, 2, 3, 4, 5, 6, 7, 8];
//! permute_to_rotate_half_in_place(&mut x, 2, 4, 4).unwrap();
//! assert_eq!(x, [1, 3, 2, 4, 5, 7, 6, 8]); // (a0, a1, b0, b1) per head
//! permute_to_interleaved_in_place(&mut x, 2, 4, 4).unwrap();
//! assert_eq!(x, [1, 2, 3, 4, 5, 6, 7, 8]);
//! ```
//!
//! What converters get wrong, and what the arguments here make explicit:
//! * **GQA**: K has `n_kv_heads` heads. Permuting K with the query head count shuffles rows
//!   across KV heads; the model still runs and produces garbage. Pass `n_kv_heads` for K.
//! * **Partial rotary**: only the first `rotary_dim` channels of each head pair up; the
//!   pass-through tail must stay where it is (HF's `permute` has no such argument).
//! * **Biases** (Qwen2-style q/k biases) need the same permutation: a bias is a weight with
//!   `in_features = 1`, or one row of activations.
//! * **V and O** are never permuted; permuting twice in the same direction is not the identity
//!   (the inverse is the other function).

use crate::error::{Error, Formula};
use crate::scaling::MAX_ROTARY_DIM;

#[derive(Clone, Copy)]
enum Dir {
    ToRotateHalf,
    ToInterleaved,
}

/// The source channel of destination channel `j` (`< r = 2h`): `new[j] = old[source(j)]`.
#[inline(always)]
fn source(dir: Dir, j: usize, h: usize) -> usize {
    match dir {
        // new[i] = old[2i], new[h + i] = old[2i + 1]
        Dir::ToRotateHalf => {
            if j < h {
                2 * j
            } else {
                2 * (j - h) + 1
            }
        }
        // new[2i] = old[i], new[2i + 1] = old[h + i]
        Dir::ToInterleaved => j / 2 + (j % 2) * h,
    }
}

fn check_dims(n_heads: usize, head_dim: usize, rotary_dim: usize) -> Result<usize, Error> {
    if n_heads == 0 {
        return Err(Error::ZeroHeads);
    }
    if head_dim == 0 || !head_dim.is_multiple_of(2) {
        return Err(Error::InvalidHeadDim { head_dim });
    }
    if rotary_dim == 0 || !rotary_dim.is_multiple_of(2) || rotary_dim > head_dim {
        return Err(Error::InvalidRotaryDim {
            rotary_dim,
            head_dim,
        });
    }
    n_heads.checked_mul(head_dim).ok_or(Error::ShapeOverflow)
}

fn check_in_place(rotary_dim: usize) -> Result<(), Error> {
    if rotary_dim > MAX_ROTARY_DIM {
        return Err(Error::RotaryDimTooLarge {
            rotary_dim,
            max: MAX_ROTARY_DIM,
        });
    }
    Ok(())
}

/// Activations: `len` is a whole number of `n_heads · head_dim` rows.
fn check_rows(
    what: &'static str,
    len: usize,
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
) -> Result<(), Error> {
    let row = check_dims(n_heads, head_dim, rotary_dim)?;
    if !len.is_multiple_of(row) {
        return Err(Error::NotWholeRows {
            what,
            len,
            row,
            formula: Formula::three(&"tokens × heads × head_dim", [0, n_heads, head_dim]),
        });
    }
    Ok(())
}

/// Weights: `len == n_heads · head_dim · in_features`.
fn check_weight(
    what: &'static str,
    len: usize,
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    in_features: usize,
) -> Result<(), Error> {
    let rows = check_dims(n_heads, head_dim, rotary_dim)?;
    let expected = rows.checked_mul(in_features).ok_or(Error::ShapeOverflow)?;
    if len != expected {
        return Err(Error::LengthMismatch {
            what,
            expected,
            actual: len,
            formula: Formula::three(
                &"heads × head_dim × in_features",
                [n_heads, head_dim, in_features],
            ),
        });
    }
    Ok(())
}

fn check_dst(src_len: usize, dst_len: usize) -> Result<(), Error> {
    if dst_len != src_len {
        return Err(Error::LengthMismatch {
            what: "dst",
            expected: src_len,
            actual: dst_len,
            formula: Formula::one(&"src.len()", src_len),
        });
    }
    Ok(())
}

/// Out of place: `src` and `dst` are whole blocks of `head_dim` channels of `width` elements
/// each (validated by the caller; `width > 0`).
fn permute_copy<T: Copy>(
    dir: Dir,
    src: &[T],
    dst: &mut [T],
    head_dim: usize,
    rotary_dim: usize,
    width: usize,
) {
    let block = head_dim * width;
    let r = rotary_dim * width;
    let half = r / 2;
    for (s, d) in src.chunks_exact(block).zip(dst.chunks_exact_mut(block)) {
        let (s_rot, s_tail) = s.split_at(r);
        let (d_rot, d_tail) = d.split_at_mut(r);
        d_tail.copy_from_slice(s_tail);
        match dir {
            Dir::ToRotateHalf => {
                let (lo, hi) = d_rot.split_at_mut(half);
                if width == 1 {
                    for ((pair, a), b) in s_rot.chunks_exact(2).zip(lo).zip(hi) {
                        *a = pair[0];
                        *b = pair[1];
                    }
                } else {
                    let lo = lo.chunks_exact_mut(width);
                    let hi = hi.chunks_exact_mut(width);
                    for ((pair, a), b) in s_rot.chunks_exact(2 * width).zip(lo).zip(hi) {
                        let (p0, p1) = pair.split_at(width);
                        a.copy_from_slice(p0);
                        b.copy_from_slice(p1);
                    }
                }
            }
            Dir::ToInterleaved => {
                let (lo, hi) = s_rot.split_at(half);
                if width == 1 {
                    for ((pair, a), b) in d_rot.chunks_exact_mut(2).zip(lo).zip(hi) {
                        pair[0] = *a;
                        pair[1] = *b;
                    }
                } else {
                    let lo = lo.chunks_exact(width);
                    let hi = hi.chunks_exact(width);
                    for ((pair, a), b) in d_rot.chunks_exact_mut(2 * width).zip(lo).zip(hi) {
                        let (p0, p1) = pair.split_at_mut(width);
                        p0.copy_from_slice(a);
                        p1.copy_from_slice(b);
                    }
                }
            }
        }
    }
}

/// In place, by cycles: every block undergoes the same channel permutation, so its cycle
/// leaders are found once (a bit set of `MAX_ROTARY_DIM` bits on the stack) and each cycle
/// is then a chain of channel swaps — no scratch copy of the data, whatever `width` is.
/// `rotary_dim ≤ MAX_ROTARY_DIM` and the shapes are validated by the caller.
fn permute_in_place<T: Copy>(
    dir: Dir,
    x: &mut [T],
    head_dim: usize,
    rotary_dim: usize,
    width: usize,
) {
    let h = rotary_dim / 2;
    let mut leaders = [0u16; MAX_ROTARY_DIM];
    let mut n_leaders = 0;
    let mut seen = [0u64; MAX_ROTARY_DIM / 64];
    for start in 0..rotary_dim {
        if seen[start / 64] & (1 << (start % 64)) != 0 {
            continue;
        }
        let mut j = start;
        loop {
            seen[j / 64] |= 1 << (j % 64);
            j = source(dir, j, h);
            if j == start {
                break;
            }
        }
        if source(dir, start, h) != start {
            leaders[n_leaders] = start as u16;
            n_leaders += 1;
        }
    }
    let leaders = &leaders[..n_leaders];
    for block in x.chunks_exact_mut(head_dim * width) {
        for &a in leaders {
            let a = a as usize;
            // Gather along the cycle: after swapping channels j and source(j), channel j
            // holds its final value and source(j) holds old[a], carried to the cycle's end.
            let mut j = a;
            loop {
                let k = source(dir, j, h);
                if k == a {
                    break;
                }
                swap_channels(block, j, k, width);
                j = k;
            }
        }
    }
}

/// Swaps channels `a != b` (each `width` elements) of `block`.
#[inline(always)]
fn swap_channels<T>(block: &mut [T], a: usize, b: usize, width: usize) {
    if width == 1 {
        block.swap(a, b);
    } else {
        let (lo, hi) = (a.min(b), a.max(b));
        let (first, second) = block.split_at_mut(hi * width);
        first[lo * width..(lo + 1) * width].swap_with_slice(&mut second[..width]);
    }
}

/// Reorders activations from interleaved to rotate_half channel order, `src` → `dst`.
///
/// `src` and `dst` are `tokens × n_heads × head_dim` (the rows of
/// [`Rope::apply`](crate::Rope::apply)); in each head, channel `2i` goes to `i` and `2i+1` to
/// `rotary_dim/2 + i` for `i < rotary_dim/2`, and channels from `rotary_dim` on stay where
/// they are. Values are copied bit for bit; `T` is any `Copy` type.
///
/// Errors (nothing written): [`Error::ZeroHeads`], [`Error::InvalidHeadDim`] (zero or odd),
/// [`Error::InvalidRotaryDim`] (zero, odd or `> head_dim`), [`Error::ShapeOverflow`],
/// [`Error::NotWholeRows`] (`src` is not whole rows), [`Error::LengthMismatch`] (`dst`).
///
/// ```
/// use posenc::permute::{permute_to_interleaved, permute_to_rotate_half};
/// // one token, one head, head_dim 6, rotary_dim 4: channels 4 and 5 pass through
/// let x = [0, 1, 2, 3, 4, 5];
/// let mut y = [0; 6];
/// permute_to_rotate_half(&x, &mut y, 1, 6, 4).unwrap();
/// assert_eq!(y, [0, 2, 1, 3, 4, 5]);
/// let mut back = [0; 6];
/// permute_to_interleaved(&y, &mut back, 1, 6, 4).unwrap();
/// assert_eq!(back, x);
/// ```
pub fn permute_to_rotate_half<T: Copy>(
    src: &[T],
    dst: &mut [T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
) -> Result<(), Error> {
    check_rows("src", src.len(), n_heads, head_dim, rotary_dim)?;
    check_dst(src.len(), dst.len())?;
    permute_copy(Dir::ToRotateHalf, src, dst, head_dim, rotary_dim, 1);
    Ok(())
}

/// Reorders activations from rotate_half to interleaved channel order, `src` → `dst`: the
/// inverse of [`permute_to_rotate_half`] (channel `i` goes to `2i`, `rotary_dim/2 + i` to
/// `2i+1`). Shapes and errors as there.
///
/// ```
/// use posenc::permute::permute_to_interleaved;
/// let x = [0.0f32, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 13.0]; // 2 heads, head_dim 4
/// let mut y = [0.0; 8];
/// permute_to_interleaved(&x, &mut y, 2, 4, 4).unwrap();
/// assert_eq!(y, [0.0, 2.0, 1.0, 3.0, 10.0, 12.0, 11.0, 13.0]);
/// ```
pub fn permute_to_interleaved<T: Copy>(
    src: &[T],
    dst: &mut [T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
) -> Result<(), Error> {
    check_rows("src", src.len(), n_heads, head_dim, rotary_dim)?;
    check_dst(src.len(), dst.len())?;
    permute_copy(Dir::ToInterleaved, src, dst, head_dim, rotary_dim, 1);
    Ok(())
}

/// [`permute_to_rotate_half`] in place, without scratch memory: `rotary_dim` must not exceed
/// [`MAX_ROTARY_DIM`] ([`Error::RotaryDimTooLarge`]), the other errors are the same.
///
/// ```
/// let mut x = [0u8, 1, 2, 3, 4, 5, 6, 7];
/// posenc::permute::permute_to_rotate_half_in_place(&mut x, 1, 8, 8).unwrap();
/// assert_eq!(x, [0, 2, 4, 6, 1, 3, 5, 7]);
/// ```
pub fn permute_to_rotate_half_in_place<T: Copy>(
    x: &mut [T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
) -> Result<(), Error> {
    check_rows("x", x.len(), n_heads, head_dim, rotary_dim)?;
    check_in_place(rotary_dim)?;
    permute_in_place(Dir::ToRotateHalf, x, head_dim, rotary_dim, 1);
    Ok(())
}

/// [`permute_to_interleaved`] in place, without scratch memory: `rotary_dim` must not exceed
/// [`MAX_ROTARY_DIM`] ([`Error::RotaryDimTooLarge`]), the other errors are the same.
///
/// ```
/// let mut x = [0u8, 2, 4, 6, 1, 3, 5, 7];
/// posenc::permute::permute_to_interleaved_in_place(&mut x, 1, 8, 8).unwrap();
/// assert_eq!(x, [0, 1, 2, 3, 4, 5, 6, 7]);
/// ```
pub fn permute_to_interleaved_in_place<T: Copy>(
    x: &mut [T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
) -> Result<(), Error> {
    check_rows("x", x.len(), n_heads, head_dim, rotary_dim)?;
    check_in_place(rotary_dim)?;
    permute_in_place(Dir::ToInterleaved, x, head_dim, rotary_dim, 1);
    Ok(())
}

/// Reorders the rows of a Q or K projection weight (`[n_heads·head_dim, in_features]`,
/// row-major) from interleaved to rotate_half order, `src` → `dst`, so that
/// `dst·v = P·(src·v)` with `P` the activation permutation of [`permute_to_rotate_half`].
///
/// This is HF's `convert_llama_weights_to_hf.py` `permute(w, n_heads, dim1, dim2)`
/// (`w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)`),
/// generalised to partial rotary: in each head, row `2i` goes to `i` and `2i+1` to
/// `rotary_dim/2 + i`; rows from `rotary_dim` on stay. For K of a GQA model pass the number
/// of **KV** heads. A bias is the case `in_features = 1`.
///
/// Errors (nothing written): as [`permute_to_rotate_half`], except that `src` must be exactly
/// `n_heads · head_dim · in_features` long ([`Error::LengthMismatch`], `what = "src"`).
///
/// ```
/// use posenc::permute::permute_weight_to_rotate_half;
/// // 1 head, head_dim 4, in_features 2: rows r0..r3 become r0, r2, r1, r3
/// let w = [0, 0, 1, 1, 2, 2, 3, 3];
/// let mut hf = [0; 8];
/// permute_weight_to_rotate_half(&w, &mut hf, 1, 4, 4, 2).unwrap();
/// assert_eq!(hf, [0, 0, 2, 2, 1, 1, 3, 3]);
/// ```
pub fn permute_weight_to_rotate_half<T: Copy>(
    src: &[T],
    dst: &mut [T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    in_features: usize,
) -> Result<(), Error> {
    check_weight("src", src.len(), n_heads, head_dim, rotary_dim, in_features)?;
    check_dst(src.len(), dst.len())?;
    if in_features > 0 {
        permute_copy(
            Dir::ToRotateHalf,
            src,
            dst,
            head_dim,
            rotary_dim,
            in_features,
        );
    }
    Ok(())
}

/// Reorders the rows of a Q or K projection weight from rotate_half back to interleaved
/// order, `src` → `dst`: the inverse of [`permute_weight_to_rotate_half`], i.e. what
/// llama.cpp's `convert_hf_to_gguf.py` (`LlamaModel.permute`) does to HF checkpoints for
/// ggml's interleaved rope. Shapes and errors as there.
///
/// ```
/// use posenc::permute::permute_weight_to_interleaved;
/// let hf = [0, 0, 2, 2, 1, 1, 3, 3];
/// let mut gguf = [0; 8];
/// permute_weight_to_interleaved(&hf, &mut gguf, 1, 4, 4, 2).unwrap();
/// assert_eq!(gguf, [0, 0, 1, 1, 2, 2, 3, 3]);
/// ```
pub fn permute_weight_to_interleaved<T: Copy>(
    src: &[T],
    dst: &mut [T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    in_features: usize,
) -> Result<(), Error> {
    check_weight("src", src.len(), n_heads, head_dim, rotary_dim, in_features)?;
    check_dst(src.len(), dst.len())?;
    if in_features > 0 {
        permute_copy(
            Dir::ToInterleaved,
            src,
            dst,
            head_dim,
            rotary_dim,
            in_features,
        );
    }
    Ok(())
}

/// [`permute_weight_to_rotate_half`] in place, without scratch memory (rows are swapped along
/// the permutation's cycles): `rotary_dim` must not exceed [`MAX_ROTARY_DIM`]
/// ([`Error::RotaryDimTooLarge`]); `w` must be `n_heads · head_dim · in_features` long
/// ([`Error::LengthMismatch`], `what = "w"`).
///
/// ```
/// let mut w = [0, 0, 1, 1, 2, 2, 3, 3];
/// posenc::permute::permute_weight_to_rotate_half_in_place(&mut w, 1, 4, 4, 2).unwrap();
/// assert_eq!(w, [0, 0, 2, 2, 1, 1, 3, 3]);
/// ```
pub fn permute_weight_to_rotate_half_in_place<T: Copy>(
    w: &mut [T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    in_features: usize,
) -> Result<(), Error> {
    check_weight("w", w.len(), n_heads, head_dim, rotary_dim, in_features)?;
    check_in_place(rotary_dim)?;
    if in_features > 0 {
        permute_in_place(Dir::ToRotateHalf, w, head_dim, rotary_dim, in_features);
    }
    Ok(())
}

/// [`permute_weight_to_interleaved`] in place, without scratch memory: `rotary_dim` must not
/// exceed [`MAX_ROTARY_DIM`] ([`Error::RotaryDimTooLarge`]); `w` must be
/// `n_heads · head_dim · in_features` long ([`Error::LengthMismatch`], `what = "w"`).
///
/// ```
/// let mut w = [0, 0, 2, 2, 1, 1, 3, 3];
/// posenc::permute::permute_weight_to_interleaved_in_place(&mut w, 1, 4, 4, 2).unwrap();
/// assert_eq!(w, [0, 0, 1, 1, 2, 2, 3, 3]);
/// ```
pub fn permute_weight_to_interleaved_in_place<T: Copy>(
    w: &mut [T],
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    in_features: usize,
) -> Result<(), Error> {
    check_weight("w", w.len(), n_heads, head_dim, rotary_dim, in_features)?;
    check_in_place(rotary_dim)?;
    if in_features > 0 {
        permute_in_place(Dir::ToInterleaved, w, head_dim, rotary_dim, in_features);
    }
    Ok(())
}
