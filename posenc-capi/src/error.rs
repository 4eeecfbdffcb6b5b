//! Error codes, their messages, the per-thread error detail, and the panic guard every entry
//! point runs in.
//!
//! The guard is silent: a C library must not write to its host's stderr, but Rust's panic
//! hook prints every panic (and, with `RUST_BACKTRACE`, a backtrace) before `catch_unwind`
//! sees it. The first guarded call installs, once per process, a hook that says nothing for
//! a panic on a thread that is inside a guard (it records the panic's location for the error
//! detail instead) and hands every other panic to the hook that was installed before it, so
//! a Rust host's own hook keeps working for its own panics. A hook the host installs after
//! that replaces posenc's, and posenc's panics are printed again (still caught).

use core::ffi::{CStr, c_char, c_int};
use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, PanicHookInfo, catch_unwind};
use std::string::String;
use std::sync::Once;

/// Success.
pub const POSENC_OK: c_int = 0;
/// `head_dim` is zero or odd.
pub const POSENC_ERR_INVALID_HEAD_DIM: c_int = -1;
/// `rotary_dim` is odd or larger than `head_dim` (or, for a table, implied so by the table's
/// length).
pub const POSENC_ERR_INVALID_ROTARY_DIM: c_int = -2;
/// `rotary_dim` exceeds `POSENC_MAX_ROTARY_DIM`.
pub const POSENC_ERR_ROTARY_DIM_TOO_LARGE: c_int = -3;
/// The sinusoidal `d_model` is zero or odd.
pub const POSENC_ERR_INVALID_MODEL_DIM: c_int = -4;
/// `n_heads` is zero.
pub const POSENC_ERR_ZERO_HEADS: c_int = -5;
/// A buffer does not have the length the other arguments imply.
pub const POSENC_ERR_LENGTH_MISMATCH: c_int = -6;
/// A buffer's length is not a whole number of rows.
pub const POSENC_ERR_NOT_WHOLE_ROWS: c_int = -7;
/// A floating-point parameter is non-finite or out of its domain (e.g. `base <= 0`), or a
/// count such as `original_max_positions` is zero.
pub const POSENC_ERR_INVALID_PARAMETER: c_int = -8;
/// A product of shape arguments overflows `size_t`, or a buffer length exceeds what an
/// object may span.
pub const POSENC_ERR_SHAPE_OVERFLOW: c_int = -9;
/// The requested backend cannot run on this CPU or build.
pub const POSENC_ERR_BACKEND_UNAVAILABLE: c_int = -10;
/// A parameter violates a constraint of its scaling scheme that involves more than its sign
/// (e.g. llama3 `low_freq_factor > high_freq_factor`, YaRN `beta_slow > beta_fast`).
pub const POSENC_ERR_PARAMETER_OUT_OF_RANGE: c_int = -11;
/// The scaling scheme is not implemented (no scheme of this release returns it).
pub const POSENC_ERR_UNSUPPORTED_SCALING: c_int = -12;
/// A model's files (GGUF metadata, a `config.json`) are malformed, lack a key the rope needs,
/// or describe a rope posenc cannot build; `posenc_last_error_detail` names the key.
pub const POSENC_ERR_MODEL_FILE: c_int = -13;
/// A model's files describe a model without rotary position embeddings (a GGUF architecture
/// llama.cpp runs without RoPE, such as ALiBi's BLOOM, or a `config.json` of a family that
/// never rotates or whose `position_embedding_type` is not `"rope"`), or a layer the model runs
/// without them (a NoPE layer, asked for by index): not an error in the file, but no rope to
/// build.
pub const POSENC_ERR_NO_ROPE: c_int = -14;
/// posenc reported an error newer than this C API; `posenc_last_error_detail` describes it.
pub const POSENC_ERR_UNKNOWN: c_int = -99;
/// A pointer is NULL while its element count is non-zero (or a required struct pointer is
/// NULL).
pub const POSENC_ERR_NULL_POINTER: c_int = -100;
/// A pointer is not aligned for its element type.
pub const POSENC_ERR_MISALIGNED_POINTER: c_int = -101;
/// An output buffer overlaps another buffer of the same call.
pub const POSENC_ERR_OVERLAPPING_BUFFERS: c_int = -102;
/// An enumeration argument (a layout or a scaling kind) has an unknown value.
pub const POSENC_ERR_INVALID_ENUM: c_int = -103;
/// The `PosencRope` was not initialized by a successful `posenc_rope_init`.
pub const POSENC_ERR_UNINITIALIZED_ROPE: c_int = -104;
/// A panic was caught inside the library (a bug, or a corrupted `PosencRope`: please report
/// it with `posenc_last_error_detail`, which says where it happened). Nothing is printed.
/// Output buffers of the failed call are unspecified.
pub const POSENC_ERR_PANIC: c_int = -105;

/// Every error code this C API returns, [`POSENC_OK`] excluded.
pub const ALL_ERROR_CODES: &[c_int] = &[
    POSENC_ERR_INVALID_HEAD_DIM,
    POSENC_ERR_INVALID_ROTARY_DIM,
    POSENC_ERR_ROTARY_DIM_TOO_LARGE,
    POSENC_ERR_INVALID_MODEL_DIM,
    POSENC_ERR_ZERO_HEADS,
    POSENC_ERR_LENGTH_MISMATCH,
    POSENC_ERR_NOT_WHOLE_ROWS,
    POSENC_ERR_INVALID_PARAMETER,
    POSENC_ERR_SHAPE_OVERFLOW,
    POSENC_ERR_BACKEND_UNAVAILABLE,
    POSENC_ERR_PARAMETER_OUT_OF_RANGE,
    POSENC_ERR_UNSUPPORTED_SCALING,
    POSENC_ERR_MODEL_FILE,
    POSENC_ERR_NO_ROPE,
    POSENC_ERR_UNKNOWN,
    POSENC_ERR_NULL_POINTER,
    POSENC_ERR_MISALIGNED_POINTER,
    POSENC_ERR_OVERLAPPING_BUFFERS,
    POSENC_ERR_INVALID_ENUM,
    POSENC_ERR_UNINITIALIZED_ROPE,
    POSENC_ERR_PANIC,
];

/// The C error code of a [`posenc::Error`]: one code per variant; variants added to posenc
/// after this crate map to [`POSENC_ERR_UNKNOWN`] until they get their own.
pub fn error_code(err: &posenc::Error) -> c_int {
    use posenc::Error as E;
    match err {
        E::InvalidHeadDim { .. } => POSENC_ERR_INVALID_HEAD_DIM,
        E::InvalidRotaryDim { .. } => POSENC_ERR_INVALID_ROTARY_DIM,
        E::RotaryDimTooLarge { .. } => POSENC_ERR_ROTARY_DIM_TOO_LARGE,
        E::InvalidModelDim { .. } => POSENC_ERR_INVALID_MODEL_DIM,
        E::ZeroHeads => POSENC_ERR_ZERO_HEADS,
        E::LengthMismatch { .. } => POSENC_ERR_LENGTH_MISMATCH,
        E::NotWholeRows { .. } => POSENC_ERR_NOT_WHOLE_ROWS,
        E::InvalidParameter { .. } => POSENC_ERR_INVALID_PARAMETER,
        E::ShapeOverflow => POSENC_ERR_SHAPE_OVERFLOW,
        E::BackendUnavailable { .. } => POSENC_ERR_BACKEND_UNAVAILABLE,
        E::ParameterOutOfRange { .. } => POSENC_ERR_PARAMETER_OUT_OF_RANGE,
        // Views whose heads overlap: before it had a variant of its own this error was a
        // `ParameterOutOfRange`, and the C code stays the same.
        E::ViewsOverlap { .. } => POSENC_ERR_PARAMETER_OUT_OF_RANGE,
        E::UnsupportedScaling { .. } => POSENC_ERR_UNSUPPORTED_SCALING,
        _ => POSENC_ERR_UNKNOWN,
    }
}

/// The static message of a code: never NULL, never freed, valid for the life of the process.
fn message(code: c_int) -> &'static CStr {
    match code {
        POSENC_OK => c"ok",
        POSENC_ERR_INVALID_HEAD_DIM => c"head_dim must be even and non-zero",
        POSENC_ERR_INVALID_ROTARY_DIM => c"rotary_dim must be even, non-zero and at most head_dim",
        POSENC_ERR_ROTARY_DIM_TOO_LARGE => c"rotary_dim exceeds POSENC_MAX_ROTARY_DIM",
        POSENC_ERR_INVALID_MODEL_DIM => c"d_model must be even and non-zero",
        POSENC_ERR_ZERO_HEADS => c"n_heads must be non-zero",
        POSENC_ERR_LENGTH_MISMATCH => {
            c"a buffer does not have the length the other arguments imply"
        }
        POSENC_ERR_NOT_WHOLE_ROWS => c"a buffer length is not a whole number of rows",
        POSENC_ERR_INVALID_PARAMETER => {
            c"a parameter is non-finite, out of its domain, or a required count is zero"
        }
        POSENC_ERR_SHAPE_OVERFLOW => c"a length or shape product overflows size_t",
        POSENC_ERR_BACKEND_UNAVAILABLE => {
            c"the requested backend is not available on this CPU or build"
        }
        POSENC_ERR_PARAMETER_OUT_OF_RANGE => {
            c"a parameter violates a constraint of its scaling scheme"
        }
        POSENC_ERR_UNSUPPORTED_SCALING => c"the scaling scheme is not implemented",
        POSENC_ERR_MODEL_FILE => {
            c"the model's GGUF metadata or config.json is malformed or lacks a key the rope needs"
        }
        POSENC_ERR_NO_ROPE => {
            c"the model's files describe no rotary embeddings (for the model, or for this layer)"
        }
        POSENC_ERR_UNKNOWN => {
            c"posenc reported an error this C API does not know (see posenc_last_error_detail)"
        }
        POSENC_ERR_NULL_POINTER => {
            c"a pointer is NULL while its length is non-zero (or a required pointer is NULL)"
        }
        POSENC_ERR_MISALIGNED_POINTER => c"a pointer is not aligned for its element type",
        POSENC_ERR_OVERLAPPING_BUFFERS => {
            c"an output buffer overlaps another buffer of the same call"
        }
        POSENC_ERR_INVALID_ENUM => c"a layout or scaling kind argument has an unknown value",
        POSENC_ERR_UNINITIALIZED_ROPE => {
            c"the PosencRope was not initialized by a successful posenc_rope_init"
        }
        POSENC_ERR_PANIC => {
            c"internal panic caught (a bug, please report it); output buffers are unspecified"
        }
        _ => c"unknown posenc error code",
    }
}

/// A short, static description of an error code (any `int`; unknown codes get a generic
/// message).
///
/// The returned string is NUL-terminated, never NULL, never to be freed, and valid for the
/// life of the process.
#[unsafe(no_mangle)]
pub extern "C" fn posenc_error_message(code: c_int) -> *const c_char {
    message(code).as_ptr()
}

thread_local! {
    static LAST_DETAIL: RefCell<CString> = RefCell::new(CString::default());
}

/// The full message of the most recent failed call on the calling thread, in UTF-8 (e.g.
/// "`x` has length 6, expected tokens × heads × head_dim = 1 × 2 × 4 = 8"), or "" if no call
/// on this thread has failed yet.
///
/// The string is NUL-terminated and never NULL. It is owned by the library and stays valid
/// until the next failing call on the same thread (or the thread's exit); copy it to keep it.
/// Successful calls leave it unchanged.
#[unsafe(no_mangle)]
pub extern "C" fn posenc_last_error_detail() -> *const c_char {
    catch_or(c"".as_ptr(), || {
        LAST_DETAIL
            .try_with(|d| d.borrow().as_ptr())
            .unwrap_or(c"".as_ptr())
    })
}

/// Stores `msg` as the thread's last error detail (best effort: never panics).
fn set_detail(msg: String) {
    let c = CString::new(msg.replace('\0', "\u{FFFD}")).unwrap_or_default();
    let _ = LAST_DETAIL.try_with(|d| {
        if let Ok(mut slot) = d.try_borrow_mut() {
            *slot = c;
        }
    });
}

/// Why a call failed before reaching posenc, or posenc's own error.
#[derive(Debug)]
pub(crate) enum Fail {
    Posenc(posenc::Error),
    Null(&'static str),
    Misaligned(&'static str),
    TooLong(&'static str, usize),
    Overlap(&'static str, &'static str),
    InvalidEnum(&'static str, u32),
    Uninitialized,
    /// A model file that describes no rope to build (its detail says why).
    NoRope(String),
    /// A malformed or incomplete model file (its detail names the key).
    ModelFile(String),
}

impl From<posenc::Error> for Fail {
    fn from(e: posenc::Error) -> Fail {
        Fail::Posenc(e)
    }
}

impl Fail {
    fn code(&self) -> c_int {
        match self {
            Fail::Posenc(e) => error_code(e),
            Fail::Null(_) => POSENC_ERR_NULL_POINTER,
            Fail::Misaligned(_) => POSENC_ERR_MISALIGNED_POINTER,
            Fail::TooLong(..) => POSENC_ERR_SHAPE_OVERFLOW,
            Fail::Overlap(..) => POSENC_ERR_OVERLAPPING_BUFFERS,
            Fail::InvalidEnum(..) => POSENC_ERR_INVALID_ENUM,
            Fail::Uninitialized => POSENC_ERR_UNINITIALIZED_ROPE,
            Fail::NoRope(_) => POSENC_ERR_NO_ROPE,
            Fail::ModelFile(_) => POSENC_ERR_MODEL_FILE,
        }
    }

    fn detail(&self) -> String {
        match self {
            Fail::Posenc(e) => format!("{e}"),
            Fail::Null(what) => format!("`{what}` is NULL but its length is non-zero"),
            Fail::Misaligned(what) => format!("`{what}` is not aligned for its element type"),
            Fail::TooLong(what, len) => {
                format!("`{what}` has length {len}, more than an object can span")
            }
            Fail::Overlap(a, b) => format!("`{a}` overlaps `{b}`"),
            Fail::InvalidEnum(what, v) => format!("`{what}` has the unknown value {v}"),
            Fail::Uninitialized => {
                "the PosencRope was not initialized by a successful posenc_rope_init".into()
            }
            Fail::NoRope(d) | Fail::ModelFile(d) => d.clone(),
        }
    }
}

/// The text of a panic payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).into()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".into()
    }
}

thread_local! {
    /// How many guards the current thread is inside (entry points may nest: a property
    /// accessor inside another call, in tests).
    static GUARD_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Where the last panic inside a guard on this thread happened, recorded by the hook.
    static PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Whether the current thread is inside a guard (false while the thread is being torn down).
fn in_guard() -> bool {
    GUARD_DEPTH.try_with(|d| d.get() > 0).unwrap_or(false)
}

/// posenc's part of the panic hook: a panic inside a guard is recorded, not printed.
/// Returns false for a panic outside every guard, which goes to the previous hook.
fn quiet_hook(info: &PanicHookInfo<'_>) -> bool {
    if !in_guard() {
        return false;
    }
    if let Some(loc) = info.location() {
        let at = format!("{}:{}:{}", loc.file(), loc.line(), loc.column());
        let _ = PANIC_LOCATION.try_with(|l| {
            if let Ok(mut slot) = l.try_borrow_mut() {
                *slot = Some(at);
            }
        });
    }
    true
}

/// Installs the silent hook, once per process, in front of whatever hook is installed now.
fn install_quiet_hook() {
    static INSTALL: Once = Once::new();
    // `take_hook`/`set_hook` panic on a thread that is already panicking (a call made from a
    // destructor during unwinding); such a call runs unsilenced, and a later one installs.
    if INSTALL.is_completed() || std::thread::panicking() {
        return;
    }
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !quiet_hook(info) {
                previous(info);
            }
        }));
    });
}

/// Marks the current thread as inside a guard for its lifetime.
struct Guard;

impl Guard {
    fn enter() -> Guard {
        install_quiet_hook();
        let _ = GUARD_DEPTH.try_with(|d| d.set(d.get() + 1));
        Guard
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = GUARD_DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// The location the hook recorded for the thread's last guarded panic (and forgets it).
fn take_panic_location() -> Option<String> {
    PANIC_LOCATION
        .try_with(|l| l.try_borrow_mut().ok().and_then(|mut slot| slot.take()))
        .ok()
        .flatten()
}

/// Runs `f`, returning `fallback` if it panics (the panic's location and text become the
/// thread's error detail; nothing is printed). Used directly by the entry points that
/// return a value instead of a code.
pub(crate) fn catch_or<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    let _guard = Guard::enter();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(payload) => {
            let text = panic_text(&*payload);
            set_detail(match take_panic_location() {
                Some(at) => format!("panic in posenc at {at}: {text}"),
                None => format!("panic in posenc: {text}"),
            });
            // Dropping a payload can itself panic; contain that too (leaking it is harmless),
            // still inside the guard, so silently.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            let _ = take_panic_location();
            fallback
        }
    }
}

/// Runs `f` the way every code-returning entry point runs its body: a panic inside `f`
/// becomes [`POSENC_ERR_PANIC`] (its location and text the thread's error detail) instead of
/// unwinding into the caller, and prints nothing.
///
/// Public so that the tests can prove it on a panicking closure: no valid input makes
/// posenc panic, so no exported function can be made to exercise it from outside.
#[doc(hidden)]
pub fn catch_panics(f: impl FnOnce() -> c_int) -> c_int {
    catch_or(POSENC_ERR_PANIC, f)
}

/// Runs an entry point's body: `Ok` is [`POSENC_OK`]; a failure records its detail and
/// returns its code; a panic is [`POSENC_ERR_PANIC`].
pub(crate) fn run(f: impl FnOnce() -> Result<(), Fail>) -> c_int {
    catch_panics(|| match f() {
        Ok(()) => POSENC_OK,
        Err(fail) => {
            set_detail(fail.detail());
            fail.code()
        }
    })
}
