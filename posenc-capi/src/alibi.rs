//! ALiBi: slopes, the bias of an attention block, and BLOOM's key positions from a mask.

use crate::error::{Fail, run};
use crate::raw::{Dtype, Raw};
use core::ffi::c_int;
use posenc::alibi::{AlibiMode, Positions};
use posenc::{bf16, f16};

/// How the ALiBi bias depends on the query-key distance: one of the `POSENC_ALIBI_*` values.
pub type PosencAlibiMode = u32;
/// `-slope * |k - q|`: the paper's bias, also for bidirectional (encoder) attention.
pub const POSENC_ALIBI_SYMMETRIC: PosencAlibiMode = 0;
/// `slope * (k - q)`, no absolute value: as BLOOM, MPT and ggml add it. Under a causal mask
/// both modes give the same numbers.
pub const POSENC_ALIBI_CAUSAL: PosencAlibiMode = 1;

/// Whether a `PosencPositions` is a list or a range: one of the `POSENC_POSITIONS_*` values.
pub type PosencPositionsKind = u32;
/// `list[0 .. len]`.
pub const POSENC_POSITIONS_LIST: PosencPositionsKind = 0;
/// `start, start + 1, ..., start + len - 1` (no buffer; may run past `INT32_MAX` without
/// wrapping).
pub const POSENC_POSITIONS_RANGE: PosencPositionsKind = 1;

/// The positions of the queries or keys of a block, passed by value: an explicit list, or a
/// contiguous range. A prefill block of `n` tokens is the range `(0, n)`; a decode step
/// against a cache of `n` keys is queries `(n - 1, 1)` against keys `(0, n)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PosencPositions {
    /// `POSENC_POSITIONS_LIST` or `POSENC_POSITIONS_RANGE`.
    pub kind: PosencPositionsKind,
    /// For a range: the first position (ignored for a list).
    pub start: i32,
    /// For a list: `len` readable positions (NULL only if `len` is 0; ignored for a range).
    pub list: *const i32,
    /// How many positions.
    pub len: usize,
}

fn mode(v: PosencAlibiMode) -> Result<AlibiMode, Fail> {
    match v {
        POSENC_ALIBI_SYMMETRIC => Ok(AlibiMode::Symmetric),
        POSENC_ALIBI_CAUSAL => Ok(AlibiMode::Causal),
        _ => Err(Fail::InvalidEnum("mode", v)),
    }
}

/// A validated list (or a range, which has no buffer).
enum Pos {
    List(Raw<i32>),
    Range(i32, usize),
}

impl Pos {
    fn new(p: &PosencPositions, what: &'static str) -> Result<Pos, Fail> {
        match p.kind {
            POSENC_POSITIONS_LIST => Ok(Pos::List(Raw::new(p.list, p.len, what)?)),
            POSENC_POSITIONS_RANGE => Ok(Pos::Range(p.start, p.len)),
            v => Err(Fail::InvalidEnum(what, v)),
        }
    }

    /// Refuses an output overlapping this list.
    fn disjoint_from<T>(&self, out: &Raw<T>) -> Result<(), Fail> {
        match self {
            Pos::List(l) => out.disjoint(l),
            Pos::Range(..) => Ok(()),
        }
    }

    /// # Safety
    /// A list's buffer is readable and unmodified for the call (the caller contract).
    unsafe fn get<'a>(&self) -> Positions<'a> {
        match self {
            // SAFETY: checked by Raw::new; readable by this function's contract.
            Pos::List(l) => Positions::List(unsafe { l.as_slice() }),
            Pos::Range(start, len) => Positions::range(*start, *len),
        }
    }
}

/// The slope entry points: validates the arguments (`out_len` against `n_heads` among them)
/// before writing.
///
/// # Safety
/// `out` points to `out_len` writable floats (NULL only if `out_len` is 0), accessed by no
/// other thread during the call.
unsafe fn slopes(n_heads: usize, max_bias: f32, out: *mut f32, out_len: usize) -> c_int {
    run(|| {
        let o = Raw::new(out.cast_const(), out_len, "out")?;
        // SAFETY: checked by Raw::new; writable and unaccessed by others (contract); the only
        // buffer of the call. posenc checks its length against `n_heads` before writing.
        let o = unsafe { o.as_mut_slice() };
        Ok(posenc::alibi::alibi_slopes_max_bias(n_heads, max_bias, o)?)
    })
}

/// Writes the ALiBi slopes of `n_heads` heads into `out` (`out_len` floats; `out_len` must
/// equal `n_heads`), as BLOOM, MPT and ggml define them (maximum bias 8): with
/// `c = 2^floor(log2 n_heads)`, head `k < c` gets `2^(-8(k+1)/c)` and the extra heads
/// `k >= c` get `2^(-4(2(k-c)+1)/c)`; computed as BLOOM's `build_alibi_tensor` does, so they
/// are BLOOM's f32 slopes bit for bit.
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged (`POSENC_ERR_ZERO_HEADS` for 0
/// heads, `POSENC_ERR_LENGTH_MISMATCH` if `out_len != n_heads`).
///
/// # Safety
/// `out` points to `out_len` writable floats (NULL only if `out_len` is 0), accessed by no
/// other thread during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_alibi_slopes(
    n_heads: usize,
    out: *mut f32,
    out_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `slopes` requires.
    unsafe { slopes(n_heads, 8.0, out, out_len) }
}

/// `posenc_alibi_slopes` with a maximum bias other than 8 (ggml `max_alibi_bias`, MPT
/// `alibi_bias_max`): head `k < c` gets `2^(-max_bias(k+1)/c)`, extra heads
/// `2^(-(max_bias/2)(2(k-c)+1)/c)`. `max_bias` must be finite and > 0.
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged.
///
/// # Safety
/// As `posenc_alibi_slopes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_alibi_slopes_max_bias(
    n_heads: usize,
    max_bias: f32,
    out: *mut f32,
    out_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `slopes` requires.
    unsafe { slopes(n_heads, max_bias, out, out_len) }
}

/// The `posenc_alibi_bias_*` entry points, once for every dtype.
///
/// # Safety
/// The caller contract of `posenc_alibi_bias_f32`, with `out` pointing to `out_len` writable
/// `E::C`.
unsafe fn bias<E: Dtype>(
    slopes: *const f32,
    n_heads: usize,
    q: PosencPositions,
    k: PosencPositions,
    m: PosencAlibiMode,
    out: *mut E::C,
    out_len: usize,
) -> c_int {
    run(|| {
        let m = mode(m)?;
        let s = Raw::new(slopes, n_heads, "slopes")?;
        let q = Pos::new(&q, "q")?;
        let k = Pos::new(&k, "k")?;
        let o = Raw::<E>::dtype(out, out_len, "out")?;
        o.disjoint(&s)?;
        q.disjoint_from(&o)?;
        k.disjoint_from(&o)?;
        // SAFETY: checked by Raw::new / Pos::new; readable and unmodified (contract); none
        // overlaps the output (checked above).
        let (s, q, k) = unsafe { (s.as_slice(), q.get(), k.get()) };
        // SAFETY: checked by Raw::dtype; writable and unaccessed by others (contract);
        // disjoint from every input (checked above).
        let o = unsafe { o.as_mut_slice() };
        Ok(posenc::alibi::alibi_bias(s, q, k, m, o)?)
    })
}

/// Fills the ALiBi bias of an attention block: `out[h][i][j]` for head `h`, query `i`, key
/// `j`, head-major and contiguous (`out_len == n_heads * q.len * k.len`), ready to add to
/// `[heads, q, k]` scores. Each value is `slopes[h] * d` with `d = k_j - q_i`
/// (`POSENC_ALIBI_CAUSAL`) or `-|k_j - q_i|` (`POSENC_ALIBI_SYMMETRIC`), the distance exact
/// and the product rounded once to float: torch's `slopes * distance` for `|d| <= 2^24`.
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged (`POSENC_ERR_ZERO_HEADS` for no
/// slopes, `POSENC_ERR_PARAMETER_OUT_OF_RANGE` for a non-finite slope).
///
/// # Safety
/// `slopes` points to `n_heads` readable floats, a list `q`/`k` to `len` readable `int32_t`,
/// `out` to `out_len` writable floats (NULL allowed for zero counts); `out` must not overlap
/// the inputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_alibi_bias_f32(
    slopes: *const f32,
    n_heads: usize,
    q: PosencPositions,
    k: PosencPositions,
    mode: PosencAlibiMode,
    out: *mut f32,
    out_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `bias` requires.
    unsafe { bias::<f32>(slopes, n_heads, q, k, mode, out, out_len) }
}

/// `posenc_alibi_bias_f32` with binary16 output (`uint16_t` bits, the float product rounded
/// once more to nearest even).
///
/// # Safety
/// As `posenc_alibi_bias_f32`, with `out` pointing to `out_len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_alibi_bias_f16(
    slopes: *const f32,
    n_heads: usize,
    q: PosencPositions,
    k: PosencPositions,
    mode: PosencAlibiMode,
    out: *mut u16,
    out_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `bias` requires.
    unsafe { bias::<f16>(slopes, n_heads, q, k, mode, out, out_len) }
}

/// `posenc_alibi_bias_f32` with bfloat16 output (`uint16_t` bits).
///
/// # Safety
/// As `posenc_alibi_bias_f32`, with `out` pointing to `out_len` writable `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_alibi_bias_bf16(
    slopes: *const f32,
    n_heads: usize,
    q: PosencPositions,
    k: PosencPositions,
    mode: PosencAlibiMode,
    out: *mut u16,
    out_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `bias` requires.
    unsafe { bias::<bf16>(slopes, n_heads, q, k, mode, out, out_len) }
}

/// The mask entry points, once for every mask type.
///
/// # Safety
/// `mask` points to `mask_len` readable elements and `out` to `out_len` writable `int32_t`
/// (NULL allowed for a count of 0), not overlapping.
unsafe fn from_mask<M: Copy + Into<i64>>(
    mask: *const M,
    mask_len: usize,
    out: *mut i32,
    out_len: usize,
) -> c_int {
    run(|| {
        let m = Raw::new(mask, mask_len, "mask")?;
        let o = Raw::new(out.cast_const(), out_len, "out")?;
        o.disjoint(&m)?;
        // SAFETY: checked by Raw::new; readable (contract); disjoint from the output.
        let m = unsafe { m.as_slice() };
        // SAFETY: checked by Raw::new; writable, unaccessed by others (contract); disjoint.
        // posenc checks `out_len == mask_len` before writing.
        let o = unsafe { o.as_mut_slice() };
        Ok(posenc::alibi::alibi_positions_from_mask(m, o)?)
    })
}

/// BLOOM's key positions from an attention mask row of `mask_len` bytes, written to `out`
/// (`out_len` must equal `mask_len`): `(cumsum(mask) - 1) * mask`, i.e. attended keys (any
/// non-zero byte) are numbered 0, 1, 2, ... and padding gets 0. With these as key positions
/// and one query at position 0, `posenc_alibi_bias_*` in `POSENC_ALIBI_CAUSAL` mode is
/// BLOOM's `build_alibi_tensor` for that row.
///
/// Returns `POSENC_OK`, or an error code with `out` unchanged (`POSENC_ERR_LENGTH_MISMATCH`
/// if `out_len != mask_len`).
///
/// # Safety
/// `mask` points to `mask_len` readable bytes and `out` to `out_len` writable `int32_t` (NULL
/// allowed for a count of 0); they must not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_alibi_positions_from_mask_u8(
    mask: *const u8,
    mask_len: usize,
    out: *mut i32,
    out_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `from_mask` requires.
    unsafe { from_mask(mask, mask_len, out, out_len) }
}

/// `posenc_alibi_positions_from_mask_u8` for an `int32_t` mask.
///
/// # Safety
/// As `posenc_alibi_positions_from_mask_u8`, with `mask` pointing to `mask_len` `int32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_alibi_positions_from_mask_i32(
    mask: *const i32,
    mask_len: usize,
    out: *mut i32,
    out_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `from_mask` requires.
    unsafe { from_mask(mask, mask_len, out, out_len) }
}

/// `posenc_alibi_positions_from_mask_u8` for an `int64_t` mask (torch's default mask dtype).
///
/// # Safety
/// As `posenc_alibi_positions_from_mask_u8`, with `mask` pointing to `mask_len` `int64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_alibi_positions_from_mask_i64(
    mask: *const i64,
    mask_len: usize,
    out: *mut i32,
    out_len: usize,
) -> c_int {
    // SAFETY: this function's caller contract is the one `from_mask` requires.
    unsafe { from_mask(mask, mask_len, out, out_len) }
}
