//! Caller buffers: `(pointer, count)` pairs validated before they become slices.

use crate::error::Fail;
use core::ptr::NonNull;

/// A caller buffer whose pointer has been checked (non-NULL unless empty, aligned, length
/// within `isize::MAX` bytes) but not yet turned into a slice, so that overlaps can be
/// refused before any reference exists.
pub(crate) struct Raw<T> {
    ptr: *mut T,
    len: usize,
    what: &'static str,
}

impl<T> Raw<T> {
    /// Validates `(ptr, len)`. An empty buffer may have any pointer, NULL included: it is
    /// replaced by a dangling, aligned one and never read.
    pub(crate) fn new(ptr: *const T, len: usize, what: &'static str) -> Result<Raw<T>, Fail> {
        if len == 0 {
            return Ok(Raw {
                ptr: NonNull::dangling().as_ptr(),
                len: 0,
                what,
            });
        }
        if ptr.is_null() {
            return Err(Fail::Null(what));
        }
        if !ptr.is_aligned() {
            return Err(Fail::Misaligned(what));
        }
        // `slice::from_raw_parts` requires the span to fit in isize; no real object exceeds it.
        if len > isize::MAX as usize / size_of::<T>().max(1) {
            return Err(Fail::TooLong(what, len));
        }
        Ok(Raw {
            ptr: ptr.cast_mut(),
            len,
            what,
        })
    }

    /// A single required object (a struct argument): NULL is an error even though the
    /// "length" is 1.
    pub(crate) fn one(ptr: *const T, what: &'static str) -> Result<Raw<T>, Fail> {
        Raw::new(ptr, 1, what)
    }

    /// The byte range `[start, end)` (empty for an empty buffer).
    fn range(&self) -> (usize, usize) {
        let start = self.ptr as usize;
        (start, start.saturating_add(self.len * size_of::<T>()))
    }

    /// Refuses the call if this buffer (written by the call) overlaps `other`.
    pub(crate) fn disjoint<U>(&self, other: &Raw<U>) -> Result<(), Fail> {
        let (a0, a1) = self.range();
        let (b0, b1) = other.range();
        if a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1 {
            return Err(Fail::Overlap(self.what, other.what));
        }
        Ok(())
    }

    /// The buffer as a shared slice.
    ///
    /// # Safety
    /// The caller contract of the entry point: the pointer given to [`Raw::new`] points to
    /// `len` initialized, readable elements that nothing writes to during the call.
    pub(crate) unsafe fn as_slice<'a>(&self) -> &'a [T] {
        // SAFETY: non-NULL, aligned and within isize::MAX bytes (checked in `new`; a dangling
        // aligned pointer for len 0); readable and not mutated meanwhile by the caller
        // contract stated above.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The buffer as a mutable slice.
    ///
    /// # Safety
    /// The caller contract of the entry point: the pointer given to [`Raw::new`] points to
    /// `len` initialized, writable elements that nothing else accesses during the call, and
    /// [`Raw::disjoint`] has been checked against every other buffer of the call.
    pub(crate) unsafe fn as_mut_slice<'a>(&self) -> &'a mut [T] {
        // SAFETY: non-NULL, aligned and within isize::MAX bytes (checked in `new`); writable
        // and unaliased by the caller contract and the overlap checks stated above.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// The raw pointer (for single-object arguments).
    pub(crate) fn ptr(&self) -> *mut T {
        self.ptr
    }
}
