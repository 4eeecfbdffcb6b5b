//! Argument checks shared by the RoPE entry points: buffer lengths against the shape the
//! other arguments imply, and the rotary window inside a head. Each failure is a typed
//! [`Error`] that names the argument and shows the arithmetic ([`Formula`]).
//!
//! Layering: validate → frequencies (`scaling.rs`) → angles → rotate (`engine/`); this file
//! imports only `error`.

use crate::error::{Error, Formula};

/// Checks `len == tokens · n_heads · head_dim` for the buffer `what` and returns the row
/// length `n_heads · head_dim`.
pub(crate) fn check_rows(
    what: &'static str,
    len: usize,
    n_heads: usize,
    head_dim: usize,
    tokens: usize,
) -> Result<usize, Error> {
    if n_heads == 0 {
        return Err(Error::ZeroHeads);
    }
    let row = n_heads.checked_mul(head_dim).ok_or(Error::ShapeOverflow)?;
    let expected = tokens.checked_mul(row).ok_or(Error::ShapeOverflow)?;
    if len != expected {
        return Err(Error::LengthMismatch {
            what,
            expected,
            actual: len,
            formula: Formula::three(&"tokens × heads × head_dim", [tokens, n_heads, head_dim]),
        });
    }
    Ok(row)
}

/// The checks of `Rope::apply_qk` (and its parallel form): `q` then `k`, each error named
/// after its buffer. Returns the row lengths `(q_row, k_row)`.
pub(crate) fn check_qk(
    head_dim: usize,
    q_len: usize,
    n_q_heads: usize,
    k_len: usize,
    n_kv_heads: usize,
    tokens: usize,
) -> Result<(usize, usize), Error> {
    let q_row = check_rows("q", q_len, n_q_heads, head_dim, tokens)?;
    let k_row = check_rows("k", k_len, n_kv_heads, head_dim, tokens)?;
    Ok((q_row, k_row))
}

/// Validates the rotary window `offset .. offset + rotary_dim` inside a head.
pub(crate) fn check_offset(head_dim: usize, rotary_dim: usize, offset: usize) -> Result<(), Error> {
    match offset.checked_add(rotary_dim) {
        Some(end) if end <= head_dim => Ok(()),
        _ => Err(Error::ParameterOutOfRange {
            what: "rotary_offset",
            constraint: "must keep rotary_offset + rotary_dim within head_dim",
            value: offset as f32,
        }),
    }
}

/// Checks that a cos or sin table (`what`) holds `tokens × rotary_dim/2` values, for a rope
/// whose rotary dim is known.
pub(crate) fn check_table(
    what: &'static str,
    len: usize,
    tokens: usize,
    rotary_dim: usize,
) -> Result<(), Error> {
    let half = rotary_dim / 2;
    let expected = tokens.checked_mul(half).ok_or(Error::ShapeOverflow)?;
    if len != expected {
        return Err(Error::LengthMismatch {
            what,
            expected,
            actual: len,
            formula: Formula::two(&"tokens × rotary_dim/2", [tokens, half]),
        });
    }
    Ok(())
}

/// For a table whose length sets the rotary dim (`cos` and `sin` of `tokens × rotary_dim/2`
/// each): checks that `sin` matches `cos` and that `cos` is a whole number of token rows
/// (empty when there are no tokens). The rotary dim it implies is checked against a rope's
/// when the table is used.
pub(crate) fn table_rows(cos_len: usize, sin_len: usize, tokens: usize) -> Result<(), Error> {
    if sin_len != cos_len {
        return Err(Error::LengthMismatch {
            what: "sin",
            expected: cos_len,
            actual: sin_len,
            formula: Formula::one(&"cos.len()", cos_len),
        });
    }
    if tokens == 0 {
        if cos_len != 0 {
            return Err(Error::LengthMismatch {
                what: "cos",
                expected: 0,
                actual: cos_len,
                formula: Formula::NONE, // no tokens (x is empty): no table
            });
        }
        return Ok(());
    }
    if !cos_len.is_multiple_of(tokens) {
        return Err(Error::NotWholeRows {
            what: "cos",
            len: cos_len,
            row: tokens,
            // cos is tokens × rotary_dim/2 with rotary_dim unknown: the count is rotary_dim/2.
            formula: Formula::two(&"rotary_dim/2 × tokens", [0, tokens]),
        });
    }
    Ok(())
}
