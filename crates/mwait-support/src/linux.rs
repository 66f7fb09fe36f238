//! Thread placement on Linux: `sched_setaffinity`, `sched_getaffinity`,
//! `sched_getcpu`.

/// The CPUs an affinity call names; the kernel keeps only those of the process's
/// cpuset.
const MASK_CPUS: usize = libc::CPU_SETSIZE as usize;

pub(crate) fn pin_to_cpu(cpu: usize) -> bool {
    if cpu >= MASK_CPUS {
        return false;
    }
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes within it
    // for `cpu` below CPU_SETSIZE, which the check above guarantees; the set
    // outlives the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

pub(crate) fn unpin() {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes within it
    // for CPUs below CPU_SETSIZE; the set outlives the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..MASK_CPUS {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

pub(crate) fn current_cpu() -> usize {
    // SAFETY: sched_getcpu takes no arguments and only reads the vDSO/rseq data.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).unwrap_or(usize::MAX)
}

pub(crate) fn idle_priority() -> bool {
    // SAFETY: sched_param is plain data, all-zero is valid (SCHED_IDLE takes priority
    // 0); the call reads it during the call only.
    unsafe {
        let param: libc::sched_param = std::mem::zeroed();
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0
    }
}

pub(crate) fn thread_id() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

pub(crate) fn affinity_cpus() -> Option<usize> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; sched_getaffinity writes
    // at most `size_of::<cpu_set_t>()` bytes into it.
    let n = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        libc::CPU_COUNT(&set)
    };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// Installs a seccomp filter on the calling thread (inherited by the threads it
/// starts later) that makes system call `nr` fail with `errno` and allows every other.
pub(crate) fn deny_syscall(nr: libc::c_long, errno: u16) -> std::io::Result<()> {
    // Classic BPF over `struct seccomp_data`, whose first field is the call number.
    const LOAD_NR: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JUMP_IF_EQUAL: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RETURN: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let mut program = [
        libc::sock_filter {
            code: LOAD_NR,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: JUMP_IF_EQUAL,
            jt: 0,
            jf: 1,
            k: nr as u32,
        },
        libc::sock_filter {
            code: RETURN,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | u32::from(errno),
        },
        libc::sock_filter {
            code: RETURN,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ];
    let prog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_mut_ptr(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments only; PR_SET_SECCOMP reads
    // the program through `prog`, which with `program` outlives the call (the kernel
    // copies it).
    let ok = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog,
            ) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Runs `f` in a child of `fork()` and returns the child's exit status (`f`'s value,
/// or -1 if it panicked or the child could not be made or waited for).
pub(crate) fn in_forked_child(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child runs `f` and leaves with `_exit`, running no destructor or
    // exit handler of the parent's state; `f` must keep to what a child of a
    // multi-threaded process may do (the caller's contract, see lib.rs).
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(-1);
        // SAFETY: `_exit` ends the child at once; it takes an int.
        unsafe { libc::_exit(code) };
    }
    if pid < 0 {
        return -1;
    }
    let mut status = 0;
    // SAFETY: `status` is a valid int to write; `pid` is our child.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    if waited == pid && libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    }
}
