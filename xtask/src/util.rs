//! Small helpers shared by the subcommands: paths, running commands, installing tools.

pub use mwait_support::project_root;
use std::process::Command;

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
