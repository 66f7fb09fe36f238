//! Reads of the host's files (sysfs, procfs, device nodes). Under Miri, whose
//! isolation refuses them, every file is absent: detection and the load gate then
//! take their defaults.

/// The contents of the file at `path`, `None` when it cannot be read (or is not
/// UTF-8).
///
/// Kernel files report a size of 0, so `std::fs::read_to_string` asks for the size
/// first and then reads in pieces that start at 32 bytes: nine system calls for
/// `/proc/self/cgroup` on a cgroup v1 host. Here a buffer that holds every file
/// detection reads takes it in one read, and a second read finds its end: four
/// system calls per file, in a process's first wait.
#[cfg(not(miri))]
pub(crate) fn read(path: &str) -> Option<String> {
    use std::io::{ErrorKind, Read};
    const PIECE: usize = 4096;
    let mut file = std::fs::File::open(path).ok()?;
    let mut text = Vec::new();
    let mut piece = [0u8; PIECE];
    loop {
        match file.read(&mut piece) {
            Ok(0) => break,
            Ok(n) => text.extend_from_slice(&piece[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    String::from_utf8(text).ok()
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

#[cfg(all(test, not(miri)))]
mod tests {
    use super::read;

    /// A file longer than the buffer comes back whole; one that is not UTF-8, or
    /// missing, or a directory, is `None`.
    #[test]
    fn a_file_is_read_whole_or_not_at_all() {
        let dir = std::env::temp_dir().join(format!("mwait-host-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let long: String = (0..3000).map(|i| format!("{i}\n")).collect();
        assert!(long.len() > 3 * 4096);
        let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
        std::fs::write(path("long"), &long).unwrap();
        std::fs::write(path("latin1"), b"caf\xe9\n").unwrap();
        std::fs::write(path("empty"), b"").unwrap();
        assert_eq!(read(&path("long")).as_deref(), Some(long.as_str()));
        assert_eq!(read(&path("empty")).as_deref(), Some(""));
        assert_eq!(read(&path("latin1")), None);
        assert_eq!(read(&path("missing")), None);
        assert_eq!(read(dir.to_str().unwrap()), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A kernel file, which reports a size of 0, comes back whole.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_kernel_file_is_read_whole() {
        let text = read("/proc/self/status").expect("procfs is mounted");
        assert!(text.starts_with("Name:"), "{text}");
        assert!(text.contains("\nPid:"), "{text}");
        assert!(text.ends_with('\n'));
    }
}
