//! Memory that a process shares with the children it forks afterwards: an anonymous
//! `MAP_SHARED` mapping, and the one write that places a value in such memory.

use std::io;
use std::ptr::NonNull;

/// An anonymous `MAP_SHARED | MAP_ANONYMOUS` mapping, readable and writable, zeroed
/// by the kernel, unmapped on drop. A child forked while it exists shares its pages
/// with this process (they are not copied on write).
#[derive(Debug)]
pub(crate) struct SharedMap {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; what lives in it is
// placed and shared by the owner's own `Send`/`Sync` types.
unsafe impl Send for SharedMap {}
// SAFETY: as above: `SharedMap` hands out no access of its own.
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// Maps `len` bytes (`len > 0`); the base is page-aligned. Keeps the `mmap` error.
    pub(crate) fn new(len: usize) -> io::Result<SharedMap> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a shared mapping of 0 bytes",
            ));
        }
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choice
        // touches no memory of ours; the result is checked before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(SharedMap { base, len })
    }

    /// The first byte (page-aligned).
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are exactly what `mmap` returned and was asked for;
        // the owner drops what it placed in the mapping before this runs.
        let r = unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
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
