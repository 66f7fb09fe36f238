//! Reads of the host's files (sysfs, procfs, device nodes). Under Miri, whose
//! isolation refuses them, every file is absent: detection and the load gate then
//! take their defaults.

/// The contents of the file at `path`, `None` when it cannot be read.
#[cfg(not(miri))]
pub(crate) fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Under Miri: no file can be read.
#[cfg(miri)]
pub(crate) fn read(_path: &str) -> Option<String> {
    None
}

/// Whether a file exists at `path`.
#[cfg(not(miri))]
pub(crate) fn exists(path: &str) -> bool {
    std::path::Path::new(path).exists()
}

/// Under Miri: no file exists.
#[cfg(miri)]
pub(crate) fn exists(_path: &str) -> bool {
    false
}
