//! The process's settings, below every layer that reads them: what code applied
//! (`Settings::apply`, in `settings.rs`) and the variables of the environment that are
//! not about the choice of backend (`MWAIT_STRICT`, `MWAIT_LOG`, `MWAIT_MEMBARRIER`),
//! and the parser and report of every yes-or-no variable (`MWAIT_MOVE_APART` too).
//!
//! A setting is read once per process, and a bad one is reported once, on stderr,
//! in one line that names the variable, its value and what is used instead. The
//! settings freeze at the first read that decides something (the choice of backend,
//! the `membarrier` registration): code that applies settings later is told so.

use std::sync::{Mutex, OnceLock};

/// What code asked for through `Settings::apply`, in the names the environment
/// uses: the layers above turn the names into backends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Applied {
    /// A backend's name, as `MWAIT_BACKEND` would give it.
    pub backend: Option<&'static str>,
    /// Backends' names, as `MWAIT_DISABLE` would list them.
    pub disable: Vec<&'static str>,
    /// Whether the asymmetric barrier is wanted, as `MWAIT_MEMBARRIER` would say.
    pub membarrier: Option<bool>,
}

/// The applied settings, and whether something has read them (then they are final).
struct State {
    applied: Applied,
    frozen: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    applied: Applied {
        backend: None,
        disable: Vec::new(),
        membarrier: None,
    },
    frozen: false,
});

fn state() -> std::sync::MutexGuard<'static, State> {
    // Nothing panics while holding the lock; a poisoned lock still holds whole data.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Replaces the applied settings, unless they are frozen (`Err`).
pub(crate) fn apply(applied: Applied) -> Result<(), ()> {
    let mut s = state();
    if s.frozen {
        return Err(());
    }
    s.applied = applied;
    Ok(())
}

/// The applied settings, frozen from now on.
pub(crate) fn freeze() -> Applied {
    let mut s = state();
    s.frozen = true;
    s.applied.clone()
}

/// Writes one line about a setting to stderr: `mwait: LINE`, in one `write` (so that
/// another thread's output does not cut it), and nothing when stderr is closed
/// (`eprintln!` would panic there, and a setting must never make a wait panic).
pub(crate) fn warn(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("mwait: {line}\n").as_bytes());
}

/// A variable of the environment, trimmed; `None` when unset or blank.
pub(crate) fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The values a yes-or-no variable takes.
const BOOL_VALUES: &str = "0, 1, false, true, off, on";

/// `v` as a yes or a no, or `None` when it is neither of [`BOOL_VALUES`].
pub(crate) fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" => Some(true),
        "0" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// The yes-or-no variable `name`: `None` when unset; a value that is neither is
/// reported (naming `default_text`, what is used instead) and read as unset, or
/// refused under `MWAIT_STRICT=1`.
pub(crate) fn bool_var(name: &str, default_text: &str) -> Option<bool> {
    let v = var(name)?;
    match parse_bool(&v) {
        Some(b) => Some(b),
        None => {
            let problem = format!("{name}={v}: not one of {BOOL_VALUES}");
            refuse_or_warn(
                &format!("{problem}; using {default_text} instead"),
                &problem,
            );
            None
        }
    }
}

/// Under `MWAIT_STRICT=1`, panics with `problem`; else writes `line` to stderr.
pub(crate) fn refuse_or_warn(line: &str, problem: &str) {
    if strict() {
        panic!("mwait: {problem} (MWAIT_STRICT=1 makes a bad setting an error)");
    }
    warn(line);
}

/// `MWAIT_STRICT=1`: a bad setting panics (at the first wait that needs it) instead
/// of being reported and replaced by the automatic choice.
pub(crate) fn strict() -> bool {
    static STRICT: OnceLock<bool> = OnceLock::new();
    *STRICT.get_or_init(|| {
        let v = var("MWAIT_STRICT");
        match v.as_deref().map(parse_bool) {
            None => false,
            Some(Some(b)) => b,
            Some(None) => {
                warn(&format!(
                    "MWAIT_STRICT={}: not one of {BOOL_VALUES}; using 0 instead",
                    v.unwrap_or_default()
                ));
                false
            }
        }
    })
}

/// `MWAIT_LOG=1`: the choice of backend is written to stderr once, when it is made.
pub(crate) fn log() -> bool {
    static LOG: OnceLock<bool> = OnceLock::new();
    *LOG.get_or_init(|| bool_var("MWAIT_LOG", "0").unwrap_or(false))
}

/// Whether the asymmetric barrier is wanted: `MWAIT_MEMBARRIER` where it is set, else
/// what code applied, else yes. Freezes the settings.
pub(crate) fn membarrier_wanted() -> bool {
    static WANTED: OnceLock<bool> = OnceLock::new();
    *WANTED.get_or_init(|| {
        let code = freeze().membarrier;
        let default = code.unwrap_or(true);
        bool_var("MWAIT_MEMBARRIER", if default { "1" } else { "0" }).unwrap_or(default)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yes_and_no_are_read_in_every_spelling_and_nothing_else() {
        for v in ["1", "true", "ON", " on "] {
            assert_eq!(parse_bool(v), Some(true), "{v}");
        }
        for v in ["0", "False", "off"] {
            assert_eq!(parse_bool(v), Some(false), "{v}");
        }
        for v in ["yes", "2", "", "of"] {
            assert_eq!(parse_bool(v), None, "{v}");
        }
    }
}
