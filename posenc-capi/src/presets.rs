//! posenc's model presets by name or by index.

use crate::error::{Fail, run};
use crate::raw::Raw;
use crate::rope::PosencRope;
use core::ffi::{CStr, c_char, c_int};
use posenc::presets::{ALL, Preset};
use std::ffi::CString;
use std::sync::OnceLock;
use std::vec::Vec;

/// The presets' names as C strings, made once.
fn names() -> &'static [CString] {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    NAMES.get_or_init(|| {
        ALL.iter()
            .map(|p| CString::new(p.name).unwrap_or_default())
            .collect()
    })
}

/// How many presets there are: indices `0 .. posenc_preset_count() - 1` are valid for
/// `posenc_preset_name` and `posenc_rope_init_preset_index`. New presets are appended, so an
/// index keeps its model across releases.
#[unsafe(no_mangle)]
pub extern "C" fn posenc_preset_count() -> usize {
    ALL.len()
}

/// The name of preset `index` (e.g. `"Llama 3 8B"`, `"Qwen2-VL 7B"`): static, NUL-terminated,
/// never to be freed; NULL if `index` is out of range.
#[unsafe(no_mangle)]
pub extern "C" fn posenc_preset_name(index: usize) -> *const c_char {
    crate::error::catch_or(core::ptr::null(), || {
        names().get(index).map_or(core::ptr::null(), |n| n.as_ptr())
    })
}

/// Fills `*out` with the rope of preset `index` (see `posenc_preset_count`), and its head
/// counts into `*n_heads` and `*n_kv_heads` when those are not NULL.
///
/// Returns `POSENC_OK`, `POSENC_ERR_PARAMETER_OUT_OF_RANGE` for an index out of range, or
/// another error code; nothing is written on error.
///
/// # Safety
/// `out` points to a writable `PosencRope`; `n_heads` and `n_kv_heads` are NULL or point to
/// writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_init_preset_index(
    index: usize,
    out: *mut PosencRope,
    n_heads: *mut usize,
    n_kv_heads: *mut usize,
) -> c_int {
    run(|| {
        let preset = ALL
            .get(index)
            .ok_or(Fail::Posenc(posenc::Error::ParameterOutOfRange {
                what: "index",
                constraint: "must be below posenc_preset_count()",
                value: index as f32,
            }))?;
        // SAFETY: this function's caller contract.
        unsafe { init(preset, out, n_heads, n_kv_heads) }
    })
}

/// `posenc_rope_init_preset_index` by name: `name` is a preset's name exactly as
/// `posenc_preset_name` gives it (e.g. `"Llama 3.1 8B"`).
///
/// Returns `POSENC_OK`, `POSENC_ERR_PARAMETER_OUT_OF_RANGE` for an unknown name, or another
/// error code; nothing is written on error.
///
/// # Safety
/// `name` is a readable NUL-terminated string; otherwise as `posenc_rope_init_preset_index`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posenc_rope_init_preset(
    name: *const c_char,
    out: *mut PosencRope,
    n_heads: *mut usize,
    n_kv_heads: *mut usize,
) -> c_int {
    run(|| {
        let n = Raw::one(name, "name")?;
        // SAFETY: non-NULL (Raw::one), NUL-terminated and readable (contract).
        let name = unsafe { CStr::from_ptr(n.ptr()) };
        let preset = ALL
            .iter()
            .find(|p| p.name.as_bytes() == name.to_bytes())
            .ok_or(Fail::Posenc(posenc::Error::ParameterOutOfRange {
                what: "name",
                constraint: "must be a preset name (posenc_preset_name)",
                value: f32::NAN,
            }))?;
        // SAFETY: this function's caller contract.
        unsafe { init(preset, out, n_heads, n_kv_heads) }
    })
}

/// Writes the preset's rope and head counts.
///
/// # Safety
/// As `posenc_rope_init_preset_index`.
unsafe fn init(
    preset: &Preset<'static>,
    out: *mut PosencRope,
    n_heads: *mut usize,
    n_kv_heads: *mut usize,
) -> Result<(), Fail> {
    let o = Raw::one(out.cast_const(), "out")?;
    let opt = |p: *mut usize, what| {
        if p.is_null() {
            Ok(None)
        } else {
            Raw::one(p.cast_const(), what).map(Some)
        }
    };
    let (h, kv) = (opt(n_heads, "n_heads")?, opt(n_kv_heads, "n_kv_heads")?);
    for r in [&h, &kv].into_iter().flatten() {
        r.disjoint(&o)?;
    }
    if let (Some(a), Some(b)) = (&h, &kv) {
        a.disjoint(b)?;
    }
    let rope = preset.rope()?;
    // SAFETY: non-NULL and aligned (Raw::one), writable (contract), disjoint from the counts.
    unsafe { o.ptr().write(PosencRope::new(rope)) };
    if let Some(h) = h {
        // SAFETY: as above.
        unsafe { h.ptr().write(preset.n_heads) };
    }
    if let Some(kv) = kv {
        // SAFETY: as above.
        unsafe { kv.ptr().write(preset.n_kv_heads) };
    }
    Ok(())
}
