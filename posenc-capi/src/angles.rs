//! The angles of a call, as C passes them (`PosencAngles`: positions, or a table computed
//! once by `posenc_rope_table`), and the table entry points.

use crate::error::{Fail, run};
use crate::raw::Raw;
use crate::rope::{PosencRope, borrow};
use core::ffi::c_int;
use posenc::{Error, Rope, Table};

/// What a `PosencAngles` holds: one of the `POSENC_ANGLES_*` values.
pub type PosencAnglesKind = u32;
/// One `int32_t` position per token in `positions` (the zero value).
pub const POSENC_ANGLES_POSITIONS: PosencAnglesKind = 0;
/// A table written by `posenc_rope_table` (or `posenc_rope_table_axes`) of the same rope, in
/// `table`: rotating from it is bit for bit rotating from the positions it was made from.
pub const POSENC_ANGLES_TABLE: PosencAnglesKind = 1;

/// The angles a call rotates by: positions, or a cos/sin table computed once per forward
/// pass and reused by every layer (the angles-once path). Read by value during the call.
///
/// Example: `PosencAngles at = {POSENC_ANGLES_POSITIONS, n_tokens, positions, NULL, 0};`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PosencAngles {
    /// `POSENC_ANGLES_POSITIONS` or `POSENC_ANGLES_TABLE`.
    pub kind: PosencAnglesKind,
    /// Tokens of the call.
    pub n_tokens: usize,
    /// For `POSENC_ANGLES_POSITIONS`: `n_tokens` positions (NULL only if `n_tokens` is 0).
    pub positions: *const i32,
    /// For `POSENC_ANGLES_TABLE`: the table (`table_len` floats, NULL only if 0).
    pub table: *const f32,
    /// For `POSENC_ANGLES_TABLE`: its length, which must be
    /// `posenc_rope_table_len(rope, n_tokens)`.
    pub table_len: usize,
}

/// A validated `PosencAngles`: pointers checked, nothing borrowed yet.
pub(crate) struct At {
    kind: PosencAnglesKind,
    n_tokens: usize,
    positions: Raw<i32>,
    table: Raw<f32>,
}

/// The angles as posenc takes them.
pub(crate) enum Src<'a> {
    Positions(&'a [i32]),
    Table(Table<'a>),
}

/// Calls `$f` (an expression using `$a`) with the angles of a [`Src`], as positions or as a
/// table (posenc's entry points are generic over them).
macro_rules! with_src {
    ($src:expr, |$a:ident| $f:expr) => {
        match $src {
            $crate::angles::Src::Positions($a) => $f,
            $crate::angles::Src::Table($a) => $f,
        }
    };
}
pub(crate) use with_src;

impl At {
    /// Reads and validates `*at` (its pointers; lengths are checked against the rope by
    /// [`At::src`]).
    pub(crate) fn new(at: *const PosencAngles) -> Result<At, Fail> {
        let r = Raw::one(at, "at")?;
        // SAFETY: non-NULL and aligned (Raw::one), readable by the caller contract; copied
        // by value.
        let at: PosencAngles = unsafe { r.ptr().read() };
        let (positions, table) = match at.kind {
            POSENC_ANGLES_POSITIONS => (Raw::new(at.positions, at.n_tokens, "at.positions")?, {
                Raw::new(core::ptr::null(), 0, "at.table")?
            }),
            POSENC_ANGLES_TABLE => (
                Raw::new(core::ptr::null(), 0, "at.positions")?,
                Raw::new(at.table, at.table_len, "at.table")?,
            ),
            other => return Err(Fail::InvalidEnum("at.kind", other)),
        };
        Ok(At {
            kind: at.kind,
            n_tokens: at.n_tokens,
            positions,
            table,
        })
    }

    /// Refuses the call if the written buffer `out` overlaps the positions or the table.
    pub(crate) fn disjoint<U>(&self, out: &Raw<U>) -> Result<(), Fail> {
        out.disjoint(&self.positions)?;
        out.disjoint(&self.table)
    }

    /// The angles for `rope`: a table must be `rope.table_len(n_tokens)` floats.
    ///
    /// # Safety
    /// The caller contract: the positions or table are readable and unmodified during the
    /// call, and [`At::disjoint`] was checked against every buffer the call writes.
    pub(crate) unsafe fn src<'a>(&self, rope: &Rope) -> Result<Src<'a>, Fail> {
        if self.kind == POSENC_ANGLES_POSITIONS {
            // SAFETY: checked by Raw::new; readable and unmodified (this function's contract).
            return Ok(Src::Positions(unsafe { self.positions.as_slice() }));
        }
        // SAFETY: as above, for the table.
        let t: &'a [f32] = unsafe { self.table.as_slice() };
        let expected = table_len(rope, self.n_tokens)?;
        if t.len() != expected {
            return Err(Fail::Posenc(Error::LengthMismatch {
                what: "at.table_len",
                expected,
                actual: t.len(),
                formula: posenc::Formula {
                    names: &"posenc_rope_table_len(rope, n_tokens)",
                    values: [expected, 0, 0],
                },
            }));
        }
        let (cos, sin) = t.split_at(expected / 2);
        Ok(Src::Table(Table::new(cos, sin, self.n_tokens)?))
    }
}

/// `rope.table_len(tokens)`, refusing an overflow instead of saturating.
fn table_len(rope: &Rope, tokens: usize) -> Result<usize, Fail> {
    tokens
        .checked_mul(rope.rotary_dim())
        .ok_or(Fail::Posenc(Error::ShapeOverflow))
}

/// Floats of the table `posenc_rope_table` writes for `n_tokens` tokens:
/// `2 * n_tokens * rotary_dim/2` (cosines, then sines); 0 if `rope` is NULL or not
/// initialized, or the product overflows.
///
/// # Safety
/// `rope` is NULL or points to a readable `PosencRope`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_table_len(rope: *const PosencRope, n_tokens: usize) -> usize {
    crate::error::catch_or(0, || {
        let Ok(r) = Raw::one(rope, "rope") else {
            return 0;
        };
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        match unsafe { borrow(&r) } {
            Ok(rope) => table_len(rope, n_tokens).unwrap_or(0),
            Err(_) => 0,
        }
    })
}

/// Computes the cos/sin of `positions` once into `out` (`out_len` must equal
/// `posenc_rope_table_len(rope, n_tokens)`), for `POSENC_ANGLES_TABLE`: compute it at the
/// first layer of a forward pass and rotate Q and K of every layer from it, bit for bit as
/// from the positions, with no trigonometry. The attention factor is not in the table (each
/// call applies its own).
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged.
///
/// # Safety
/// `rope` points to a `PosencRope` filled by `posenc_rope_init`; `positions` to `n_tokens`
/// readable `int32_t`; `out` to `out_len` writable floats not overlapping `positions` or
/// `rope`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_table(
    rope: *const PosencRope,
    positions: *const i32,
    n_tokens: usize,
    out: *mut f32,
    out_len: usize,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let p = Raw::new(positions, n_tokens, "positions")?;
        let o = Raw::new(out.cast_const(), out_len, "out")?;
        o.disjoint(&p)?;
        o.disjoint(&r)?;
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        check_out(rope, n_tokens, out_len)?;
        // SAFETY: checked by Raw::new; readable (contract); disjoint from `out`.
        let p = unsafe { p.as_slice() };
        // SAFETY: checked by Raw::new; writable (contract); disjoint from the inputs.
        let o = unsafe { o.as_mut_slice() };
        rope.table(p, o)?;
        Ok(())
    })
}

/// `out_len` must be the table length of `tokens` tokens exactly.
fn check_out(rope: &Rope, tokens: usize, out_len: usize) -> Result<(), Fail> {
    let expected = table_len(rope, tokens)?;
    if out_len != expected {
        return Err(Fail::Posenc(Error::LengthMismatch {
            what: "out_len",
            expected,
            actual: out_len,
            formula: posenc::Formula {
                names: &"posenc_rope_table_len(rope, n_tokens)",
                values: [expected, 0, 0],
            },
        }));
    }
    Ok(())
}

/// `posenc_rope_table` for multi-axis positions (M-RoPE, 2-D vision): `positions` holds
/// `n_tokens * n_axes` `int32_t`, token by token (`t, h, w` or `row, col`), and `n_axes` must
/// be the rope's axis count (its `axes` setting: 1, 2 or 3).
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged.
///
/// # Safety
/// As `posenc_rope_table`, with `positions` pointing to `positions_len` readable `int32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_table_axes(
    rope: *const PosencRope,
    positions: *const i32,
    positions_len: usize,
    n_axes: usize,
    out: *mut f32,
    out_len: usize,
) -> c_int {
    run(|| {
        let r = Raw::one(rope, "rope")?;
        let p = Raw::new(positions, positions_len, "positions")?;
        let o = Raw::new(out.cast_const(), out_len, "out")?;
        o.disjoint(&p)?;
        o.disjoint(&r)?;
        // SAFETY: checked by Raw::one; readable and unmodified during the call (contract).
        let rope = unsafe { borrow(&r) }?;
        // SAFETY: checked by Raw::new; readable (contract); disjoint from `out`.
        let p = unsafe { p.as_slice() };
        let tokens = axis_tokens(p.len(), n_axes)?;
        check_out(rope, tokens, out_len)?;
        // SAFETY: checked by Raw::new; writable (contract); disjoint from the inputs.
        let o = unsafe { o.as_mut_slice() };
        match n_axes {
            1 => rope.table_axes(p.as_chunks::<1>().0, o).map(drop),
            2 => rope.table_axes(p.as_chunks::<2>().0, o).map(drop),
            _ => rope.table_axes(p.as_chunks::<3>().0, o).map(drop),
        }?;
        Ok(())
    })
}

/// Tokens of `len` multi-axis positions with `n_axes` (1, 2 or 3) per token.
pub(crate) fn axis_tokens(len: usize, n_axes: usize) -> Result<usize, Fail> {
    if !(1..=3).contains(&n_axes) {
        return Err(Fail::Posenc(Error::ParameterOutOfRange {
            what: "n_axes",
            constraint: "must be 1, 2 or 3",
            value: n_axes as f32,
        }));
    }
    if !len.is_multiple_of(n_axes) {
        return Err(Fail::Posenc(Error::NotWholeRows {
            what: "positions",
            len,
            row: n_axes,
            formula: posenc::Formula {
                names: &"n_tokens × n_axes",
                values: [0, n_axes, 0],
            },
        }));
    }
    Ok(len / n_axes)
}
