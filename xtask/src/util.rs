//! Small helpers shared by the subcommands: paths, running commands, installing tools.

pub use mwait_support::project_root;
use std::process::Command;
use std::time::{Duration, Instant};

/// Result type of every step: a human-readable error.
pub type Res<T = ()> = Result<T, String>;

/// Prints a step banner so that a CI log reads as a list of steps.
pub fn step(name: &str) {
    println!("\n==> {name}");
}

/// Runs `cmd`, inheriting stdio, and fails with its description when it exits non-zero.
pub fn run(cmd: &mut Command) -> Res {
    let desc = describe(cmd);
    println!("$ {desc}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start `{desc}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{desc}` failed with {status}"))
    }
}

/// Runs `cmd` and returns its stdout; fails when it exits non-zero.
pub fn output(cmd: &mut Command) -> Res<String> {
    let desc = describe(cmd);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start `{desc}`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{desc}` failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// A `cargo` command run from the workspace root.
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(project_root());
    c
}

/// `cargo doc --no-deps` with `args` (what to document, and how), every rustdoc
/// warning an error.
pub fn strict_docs(args: &[&str]) -> Command {
    let mut c = cargo();
    c.arg("doc")
        .args(args)
        .arg("--no-deps")
        .env("RUSTDOCFLAGS", "-D warnings");
    c
}

/// Whether `prog` is on the PATH.
pub fn have(prog: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {prog} >/dev/null 2>&1")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Installs a rustup target when it is missing.
pub fn ensure_rust_target(target: &str) -> Res {
    let installed = output(Command::new("rustup").args(["target", "list", "--installed"]))?;
    if installed.lines().any(|l| l.trim() == target) {
        return Ok(());
    }
    println!("installing rustup target {target}");
    run(Command::new("rustup").args(["target", "add", target]))
}

/// Installs a rustup component (clippy, rustfmt) when it is missing.
pub fn ensure_rust_component(component: &str) -> Res {
    let installed = output(Command::new("rustup").args(["component", "list", "--installed"]))?;
    if installed.lines().any(|l| l.starts_with(component)) {
        return Ok(());
    }
    println!("installing rustup component {component}");
    run(Command::new("rustup").args(["component", "add", component]))
}

/// Installs the Debian packages that are not installed yet (needs root and apt).
pub fn ensure_apt(packages: &[&str]) -> Res {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
                .unwrap_or(false)
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    println!("installing Debian packages: {}", missing.join(" "));
    if !have("apt-get") {
        return Err(format!(
            "missing packages {missing:?} and no apt-get to install them"
        ));
    }
    let sudo: &[&str] = if is_root() { &[] } else { &["sudo"] };
    let apt = |args: &[&str]| {
        let mut all: Vec<&str> = sudo.to_vec();
        all.push("apt-get");
        all.extend_from_slice(args);
        let mut c = Command::new(all[0]);
        c.args(&all[1..]).env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    run(&mut apt(&["update", "-qq"]))?;
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend_from_slice(&missing);
    run(&mut apt(&args))
}

fn is_root() -> bool {
    output(Command::new("id").arg("-u"))
        .map(|s| s.trim() == "0")
        .unwrap_or(false)
}

/// What a command run by [`capture`] did: its exit, its output and how long it ran.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    /// The command line, for the record.
    pub command: String,
    /// How it ended, in words: `exit 0`, `exit 101`, `killed by signal 9`, `timed out
    /// after 300 s`, `could not start: ...`.
    pub status: String,
    /// Whether it exited with code 0.
    pub ok: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// Wall-clock seconds from start to exit (or to the kill).
    pub secs: f64,
}

/// How often [`capture`] checks whether its child has exited.
const CAPTURE_POLL_MS: u64 = 50;

/// Runs `cmd` with its output captured, and kills it (with everything it started: it
/// runs in a process group of its own) when it outlives `limit`. Never fails: a
/// command that cannot start, fails or hangs is described in the result, so that a
/// caller can record it and go on.
pub fn capture(cmd: &mut Command, limit: Duration) -> Captured {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;

    let command = describe(cmd);
    let t0 = Instant::now();
    let spawned = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return Captured {
                command,
                status: format!("could not start: {e}"),
                ..Captured::default()
            }
        }
    };
    let out = read_in_thread(child.stdout.take());
    let err = read_in_thread(child.stderr.take());
    let end = wait_within(&mut child, t0, limit);
    let secs = t0.elapsed().as_secs_f64();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Captured {
        command,
        ok: matches!(end, End::Exited(s) if s.code() == Some(0)),
        status: end.describe(limit),
        stdout,
        stderr,
        secs,
    }
}

/// Reads `pipe` to its end on a thread of its own, so that a child that fills one
/// pipe while nobody reads the other cannot stall; the text, lossily decoded.
fn read_in_thread<R: std::io::Read + Send + 'static>(
    pipe: Option<R>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// How a child run by [`capture`] ended.
enum End {
    /// It exited (or was killed by a signal it did not get from [`capture`]).
    Exited(std::process::ExitStatus),
    /// It outlived its limit and [`capture`] killed its process group.
    TimedOut,
    /// Waiting for it failed.
    Lost,
}

impl End {
    /// The status in words, as [`Captured::status`] has it.
    fn describe(&self, limit: Duration) -> String {
        use std::os::unix::process::ExitStatusExt;
        match self {
            End::TimedOut => format!("timed out after {} s", limit.as_secs()),
            End::Exited(s) => match s.code() {
                Some(c) => format!("exit {c}"),
                None => format!("killed by signal {}", s.signal().unwrap_or(0)),
            },
            End::Lost => "lost track of the process".to_string(),
        }
    }
}

/// Waits for `child` until `limit` after `t0`, then kills its process group.
fn wait_within(child: &mut std::process::Child, t0: Instant, limit: Duration) -> End {
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return End::Exited(s),
            Ok(None) if t0.elapsed() >= limit => {
                // The group id is the child's pid (process_group(0) in `capture`);
                // killing the group also ends what it started (cargo's children, a
                // test binary).
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                // Reaps the killed child; its status says nothing more.
                let _ = child.wait();
                return End::TimedOut;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(CAPTURE_POLL_MS)),
            Err(_) => return End::Lost,
        }
    }
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The kernel release of Debian's cloud kernel headers (`linux-headers-cloud-amd64`
/// depends on `linux-headers-<release>`): the kernel the VM test boots and the DKMS
/// check builds for.
pub fn cloud_kernel_release() -> Res<String> {
    let deps = output(Command::new("dpkg-query").args([
        "-W",
        "-f=${Depends}",
        "linux-headers-cloud-amd64",
    ]))?;
    deps.split([',', ' '])
        .find_map(|d| d.trim().strip_prefix("linux-headers-"))
        .map(str::to_string)
        .ok_or_else(|| format!("no linux-headers-<release> in the cloud headers' Depends: {deps}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_records_exit_status_and_output() {
        let c = capture(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(60),
        );
        assert!(!c.ok);
        assert_eq!(c.status, "exit 3");
        assert_eq!(c.stdout, "out\n");
        assert_eq!(c.stderr, "err\n");
        let ok = capture(&mut Command::new("true"), Duration::from_secs(60));
        assert!(ok.ok, "{}", ok.status);
        let killed = capture(
            Command::new("sh").args(["-c", "kill -9 $$"]),
            Duration::from_secs(60),
        );
        assert!(!killed.ok);
        assert_eq!(killed.status, "killed by signal 9");
    }

    #[test]
    fn capture_kills_what_outlives_its_limit_and_survives_a_missing_program() {
        // The child's own child (the sleep) holds the pipes too: the group kill must
        // end it, or reading the output would wait for the whole sleep.
        let c = capture(
            Command::new("sh").args(["-c", "sleep 600 & wait"]),
            Duration::from_millis(200),
        );
        assert!(!c.ok);
        assert!(c.status.starts_with("timed out"), "{}", c.status);
        assert!(c.secs < 600.0);
        let missing = capture(
            &mut Command::new("/nonexistent/program"),
            Duration::from_secs(60),
        );
        assert!(
            missing.status.starts_with("could not start"),
            "{}",
            missing.status
        );
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
        assert_eq!(tail("", 3), "");
    }
}
