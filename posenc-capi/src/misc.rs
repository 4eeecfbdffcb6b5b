//! Library-wide queries: the active backend and the version.

use core::ffi::{CStr, c_char};
use posenc::Backend;

/// The backend posenc runs on on this CPU (detected once per process): `"avx512"`, `"avx2"`,
/// `"neon"` (aarch64), `"portable"` (SSE2/NEON/simd128 lanes) or `"scalar"`; `"unknown"` for a
/// backend newer than this C API.
///
/// The string is static: NUL-terminated, never NULL, never to be freed.
#[unsafe(no_mangle)]
pub extern "C" fn posenc_backend_name() -> *const c_char {
    crate::error::catch_or(c"unknown".as_ptr(), || {
        backend_name(Backend::active()).as_ptr()
    })
}

fn backend_name(b: Backend) -> &'static CStr {
    match b {
        Backend::Scalar => c"scalar",
        Backend::Portable => c"portable",
        Backend::Avx2 => c"avx2",
        Backend::Avx512 => c"avx512",
        Backend::Neon => c"neon",
        _ => c"unknown",
    }
}

const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => panic!("the package version contains a NUL byte"),
    };

/// The version of this library (e.g. `"0.1.0"`): static, NUL-terminated, never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn posenc_version() -> *const c_char {
    VERSION.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_match_posenc() {
        for &b in Backend::ALL {
            assert_eq!(backend_name(b).to_str().unwrap(), b.name());
        }
    }
}
