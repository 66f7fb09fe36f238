//! Anonymous mappings of the process's own: shared with the children it forks
//! afterwards (`SharedCells`) or private (the shootdown barrier's page), and the one
//! write that places a value in such memory.

use std::io;
use std::ptr::NonNull;

/// An anonymous mapping, readable and writable, zeroed by the kernel, unmapped on
/// drop. A shared one's pages are shared with a child forked while it exists (not
/// copied on write); a private one's are this process's alone.
#[derive(Debug)]
pub(crate) struct AnonMap {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; what lives in it is
// placed and shared by the owner's own `Send`/`Sync` types.
unsafe impl Send for AnonMap {}
// SAFETY: as above: `AnonMap` hands out no access of its own.
unsafe impl Sync for AnonMap {}

impl AnonMap {
    /// Maps `len` bytes (`len > 0`), `MAP_SHARED` if `shared`, else `MAP_PRIVATE`;
    /// the base is page-aligned. Keeps the `mmap` error.
    pub(crate) fn new(len: usize, shared: bool) -> io::Result<AnonMap> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a mapping of 0 bytes",
            ));
        }
        let sharing = if shared {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        };
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choice
        // touches no memory of ours; the result is checked before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                sharing | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(AnonMap { base, len })
    }

    /// The first byte (page-aligned).
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// How many bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are exactly what `mmap` returned and was asked for;
        // the owner drops what it placed in the mapping before this runs.
        let r = unsafe { libc::munmap(self.base.as_ptr().cast(), self.len()) };
        debug_assert_eq!(r, 0, "munmap of our own mapping failed");
    }
}

/// Writes `value` to `place` and returns a reference to it.
///
/// # Safety
///
/// `place` is valid for writes of a `T` and aligned for it, holds no value that needs
/// dropping, and stays mapped and otherwise unwritten for `'a`.
pub(crate) unsafe fn place_value<'a, T>(place: *mut T, value: T) -> &'a T {
    // SAFETY: the caller's conditions.
    unsafe {
        place.write(value);
        &*place
    }
}
