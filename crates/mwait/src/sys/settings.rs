//! The process's settings, below every layer that reads them: what code applied
//! (`Settings::apply`, in `settings.rs`) and the variables of the environment that are
//! not about the choice of backend (`MWAIT_STRICT`, `MWAIT_LOG`, `MWAIT_MEMBARRIER`),
//! the parser and report of every yes-or-no variable (`MWAIT_MOVE_APART` too), and
//! the report of a variable whose name misspells one of mwait's.
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

/// The applied settings, frozen from now on. The first freeze also reports the
/// variables whose names misspell one that mwait reads ([`report_misspelled`]);
/// under `MWAIT_STRICT=1` every freeze refuses them, so that each wait that would
/// make the choice panics, as with the other bad settings.
pub(crate) fn freeze() -> Applied {
    let (applied, first) = {
        let mut s = state();
        let first = !s.frozen;
        s.frozen = true;
        (s.applied.clone(), first)
    };
    if first || strict() {
        report_misspelled();
    }
    applied
}

/// Every variable of the environment that mwait reads.
const VARIABLES: [&str; 8] = [
    "MWAIT_BACKEND",
    "MWAIT_DISABLE",
    "MWAIT_MEMBARRIER",
    "MWAIT_LOG",
    "MWAIT_STRICT",
    "MWAIT_MOVE_APART",
    "MWAIT_UNSAFE_FORCE",
    "MWAIT_SELFTEST",
];

/// Reports, once per process, each variable of the environment whose name is not
/// one of [`VARIABLES`] but a slip away from one ([`misspelled`]): a setting the
/// user meant, which mwait would otherwise ignore without a word. Other names,
/// those of programs that share the prefix too, are left alone. Under
/// `MWAIT_STRICT=1` the first such name panics.
fn report_misspelled() {
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else {
            continue;
        };
        if let Some(meant) = misspelled(name) {
            let problem = format!("{name} is not a variable mwait reads (did you mean {meant}?)");
            refuse_or_warn(&format!("{problem}; it is ignored"), &problem);
        }
    }
}

/// The variable of [`VARIABLES`] that `name` misspells: none is `name` itself, its
/// prefix is `MWAIT_` (ignoring case, or with two neighbouring letters swapped), and
/// the nearest, ignoring case, is at most one edit away (two for a name of more
/// than ten letters), an edit being a letter added, dropped, replaced, or two
/// neighbours swapped. On Windows, whose variables' names ignore case, a name
/// that differs only in case is the variable itself. The prefix keeps other
/// programs' names out: `MAIL_DISABLE` is two edits from `MWAIT_DISABLE`.
fn misspelled(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    let known = if cfg!(windows) { upper.as_str() } else { name };
    if VARIABLES.contains(&known) {
        return None;
    }
    let prefix = upper.split('_').next().unwrap_or_default();
    let mut letters = prefix.as_bytes().to_vec();
    letters.sort_unstable();
    if letters != b"AIMTW" || edits(prefix.as_bytes(), b"MWAIT") > 1 {
        return None;
    }
    VARIABLES
        .iter()
        .map(|&known| (edits(upper.as_bytes(), known.as_bytes()), known))
        .filter(|&(d, known)| d <= if known.len() > 10 { 2 } else { 1 })
        .min_by_key(|&(d, _)| d)
        .map(|(_, known)| known)
}

/// The edits between `a` and `b`: letters added, dropped or replaced, and swaps of
/// two neighbours (the restricted Damerau-Levenshtein distance).
fn edits(a: &[u8], b: &[u8]) -> usize {
    // The distances from a's prefixes of i-2 and i-1 letters to each prefix of b,
    // then the row of i letters being filled.
    let mut rows = [
        vec![0; b.len() + 1],
        (0..=b.len()).collect(),
        vec![0; b.len() + 1],
    ];
    for i in 1..=a.len() {
        let [before, last, row] = &mut rows;
        row[0] = i;
        for j in 1..=b.len() {
            let replace = last[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            row[j] = replace.min(last[j] + 1).min(row[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        rows.rotate_left(1);
    }
    rows[1][b.len()]
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
    fn a_slip_in_a_variables_name_is_told_apart_from_another_name() {
        for (name, meant) in [
            ("MWAIT_DISABEL", "MWAIT_DISABLE"),
            ("MWAIT_DISABLED", "MWAIT_DISABLE"),
            ("MWAIT_BACKED", "MWAIT_BACKEND"),
            ("MWIAT_BACKEND", "MWAIT_BACKEND"),
            ("MWAIT_MEMBARIER", "MWAIT_MEMBARRIER"),
            ("MWAIT_LOGS", "MWAIT_LOG"),
            ("MWAIT_STRCT", "MWAIT_STRICT"),
            ("MWAIT_MOVEAPART", "MWAIT_MOVE_APART"),
            ("MWAIT_SELF_TEST", "MWAIT_SELFTEST"),
            ("MWAIT_BCAKEDN", "MWAIT_BACKEND"),
        ] {
            assert_eq!(misspelled(name), Some(meant), "{name}");
        }
        // Case: the variable itself where names ignore it (Windows), else a slip.
        let lower = if cfg!(windows) {
            None
        } else {
            Some("MWAIT_LOG")
        };
        assert_eq!(misspelled("mwait_log"), lower);
        for name in VARIABLES {
            assert_eq!(misspelled(name), None, "{name}");
        }
        // Other programs' names, the test suite's and those too far from any.
        for name in [
            "MWAIT_HW_EXPECT",
            "MWAIT_TEST_RUNNER",
            "MWAIT_BENCH_STATS",
            "MWAIT_STRESS_ROUNDS",
            "MWAIT_DOG_FOOD",
            "MWAIT_LOGGING",
            "MWAIT_DIS",
            "MAIL_DISABLE",
            "WAIT_LOG",
            "AWAIT_BACKEND",
            "MWAITT_LOG",
            "MWAIT",
            "PATH",
            "",
        ] {
            assert_eq!(misspelled(name), None, "{name}");
        }
    }

    #[test]
    fn edits_count_additions_drops_replacements_and_swaps() {
        for (a, b, n) in [
            ("", "", 0),
            ("", "abc", 3),
            ("abc", "", 3),
            ("abc", "abc", 0),
            ("abc", "abd", 1),
            ("abc", "ab", 1),
            ("abc", "xabc", 1),
            ("abc", "acb", 1),
            ("abcd", "badc", 2),
            ("kitten", "sitting", 3),
        ] {
            assert_eq!(edits(a.as_bytes(), b.as_bytes()), n, "{a} {b}");
            assert_eq!(edits(b.as_bytes(), a.as_bytes()), n, "{b} {a}");
        }
    }

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
