//! `cargo xtask tidy`: the checks that keep the docs, the lists and the comments in
//! step with the tree. Each is a plain function over the files; `cargo xtask tidy`
//! prints what they find, and the `tidy` test runs them under `cargo test -p xtask`
//! (which `cargo xtask test` runs).
//!
//! - Every backticked path in a Markdown file or a module doc (`//!`) exists. A span
//!   is a path when it holds no space or punctuation of code and either contains a
//!   `/` or ends in an extension of [`PATH_EXTENSIONS`]; it resolves against the
//!   file's folder or one above it, the crate's root or `src/` (mwait's for files
//!   outside `crates/`), the folder of a module file's children, or a folder named
//!   earlier in the same paragraph or table row. Paths from `/` (the system's),
//!   under `target/` (build outputs), with a placeholder (`DIR/report.md`) or after
//!   a possessive (tokio's `src/runtime/park.rs`: another project's) are not
//!   checked.
//! - Every function that a walk of `docs/architecture.md` names (a `## One ...`
//!   section) is defined outside `cfg(test)`: a qualified name (`ladder::end`,
//!   `MonitorLine::park`) in its module or anywhere, a bare one in a file its step
//!   names (or, when the step names none, anywhere) unless it names a module.
//! - `examples/lib.rs` names every example.
//! - The README's documentation table names every `docs/*.md`.
//! - xtask's usage names every row of `cargo xtask clients`.
//! - No comment line sits aligned under the trailing comment of the line above (as
//!   rustfmt leaves the continuation of a `// (N)` tag), where it reads as part of
//!   the tag.
//! - No words about how the project was developed in its sources and documents
//!   (`crates/`, `docs/`, the tools, the integrations, `kmod/`, the root's
//!   Markdown): the repository speaks of the project; its history is git and
//!   `CHANGELOG.md`. "helper" and "this round" are not on the list: here they name
//!   the self-test's storing thread and a barrier's round.

use crate::util::{project_root, Res};
use std::fs;
use std::path::{Path, PathBuf};

/// The extensions that make a backticked span without a `/` a path.
const PATH_EXTENSIONS: &[&str] = &["rs", "md", "toml", "c", "h", "patch", "sh", "conf", "py"];

/// Words about how the project is developed rather than what it is.
const DEVELOPMENT_WORDS: &[&str] = &[
    "session",
    "sessions",
    "journal",
    "reviewer",
    "was lent",
    "lent to",
    "device machine",
    "device machines",
];

/// Projects whose issue trackers a comment may cite by number (`tokio issue 4129`).
const OTHER_PROJECTS: &[&str] = &["tokio", "rust-lang", "loom", "crossbeam", "parking_lot"];

/// `cargo xtask tidy`: prints every problem, fails when there is one.
pub fn run(args: &[String]) -> Res {
    if let Some(a) = args.first() {
        return Err(format!("tidy takes no arguments, got `{a}`"));
    }
    let problems = check(&project_root());
    for p in &problems {
        println!("{p}");
    }
    if problems.is_empty() {
        println!("tidy: no problems");
        Ok(())
    } else {
        Err(format!("{} problems", problems.len()))
    }
}

/// Every check over the tree at `root`, as `path:line: what` lines.
pub fn check(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    doc_paths(root, &mut out);
    walk_functions(root, &mut out);
    examples_listed(root, &mut out);
    docs_table(root, &mut out);
    clients_in_usage(&mut out);
    tag_continuations(root, &mut out);
    development_words(root, &mut out);
    out
}

/// The files under `dir` (recursively) whose names end in `.{ext}`, leaving out
/// build outputs and hidden folders, in a stable order.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == ext) {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

/// `path` relative to `root`, for messages.
fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// A paragraph of prose: its first line's number and its text.
struct Paragraph {
    line: usize,
    text: String,
}

/// The paragraphs of a Markdown file, without its fenced code blocks; each table
/// row is a paragraph of its own.
fn markdown_paragraphs(text: &str) -> Vec<Paragraph> {
    let mut out = Vec::new();
    let mut cur: Option<Paragraph> = None;
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fenced = !fenced;
            out.extend(cur.take());
            continue;
        }
        if fenced || t.is_empty() || t.starts_with('|') || t.starts_with('#') {
            out.extend(cur.take());
            if !fenced && !t.is_empty() {
                out.push(Paragraph {
                    line: i + 1,
                    text: line.to_string(),
                });
            }
            continue;
        }
        match &mut cur {
            Some(p) => {
                p.text.push('\n');
                p.text.push_str(line);
            }
            None => {
                cur = Some(Paragraph {
                    line: i + 1,
                    text: line.to_string(),
                })
            }
        }
    }
    out.extend(cur);
    out
}

/// The paragraphs of a Rust file's module docs (`//!` lines), without their code
/// blocks.
fn module_doc_paragraphs(text: &str) -> Vec<Paragraph> {
    let mut doc = String::new();
    let mut first = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("//!") {
            first.get_or_insert(i + 1);
            doc.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
        // Keep line numbers: every line of the file is a line of `doc`.
        doc.push('\n');
    }
    let Some(first) = first else {
        return Vec::new();
    };
    markdown_paragraphs(&doc)
        .into_iter()
        .filter(|p| p.line >= first)
        .collect()
}

/// The backticked spans of `text` that lie on one line.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.contains('\n'))
        .collect()
}

/// The backticked spans of `text` that lie on one line, each with the text before
/// it.
fn code_spans_after(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut at = 0;
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 && !part.contains('\n') {
            out.push((&text[..at - 1], part));
        }
        at += part.len() + 1;
    }
    out
}

/// Whether the span `s` is written as a path of the repository.
fn is_path(s: &str) -> bool {
    const CODE_PUNCTUATION: &str = " \t:*<>{}$=()[],;@#\"'|\\&?!+%^~";
    if s.is_empty()
        || s.starts_with('/')
        || s.starts_with('-')
        || s.starts_with("target/")
        || s.chars().any(|c| CODE_PUNCTUATION.contains(c))
        || !s.chars().any(|c| c.is_ascii_alphabetic())
        // A placeholder (`DIR/report.md`, `integrations/NAME/`).
        || s.split('/').any(|c| c.len() > 1 && c.chars().all(|c| c.is_ascii_uppercase()))
    {
        return false;
    }
    s.contains('/')
        || s.rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && PATH_EXTENSIONS.contains(&ext))
}

/// The folders a path in `file` may be written relative to, context aside.
fn bases(root: &Path, file: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut dir = file.parent();
    while let Some(d) = dir {
        if !d.starts_with(root) {
            break;
        }
        out.push(d.to_path_buf());
        dir = d.parent();
    }
    // A module file's children live in the folder of its name (`cell.rs`, `cell/`).
    if let (Some(stem), Some(parent)) = (file.file_stem(), file.parent()) {
        if file.extension().is_some_and(|x| x == "rs") {
            out.push(parent.join(stem));
        }
    }
    let krate = file
        .strip_prefix(root.join("crates"))
        .ok()
        .and_then(|r| r.iter().next())
        .map(|c| root.join("crates").join(c))
        .unwrap_or_else(|| root.join("crates/mwait"));
    out.push(krate.join("src"));
    out.push(krate);
    out
}

/// Every backticked path in the Markdown files and the module docs exists.
fn doc_paths(root: &Path, out: &mut Vec<String>) {
    let mut docs: Vec<(PathBuf, Vec<Paragraph>)> = Vec::new();
    for md in files(root, "md") {
        let text = read(&md);
        docs.push((md, markdown_paragraphs(&text)));
    }
    for top in [
        "crates",
        "xtask",
        "benches",
        "examples",
        "integrations",
        "kmod",
    ] {
        for rs in files(&root.join(top), "rs") {
            let text = read(&rs);
            docs.push((rs, module_doc_paragraphs(&text)));
        }
    }
    for (file, paragraphs) in docs {
        let bases = bases(root, &file);
        for p in paragraphs {
            let mut context: Vec<PathBuf> = Vec::new();
            for (before, span) in code_spans_after(&p.text) {
                // `tokio's `src/runtime/park.rs``: a path of another project.
                let before = before.strip_suffix("own ").unwrap_or(before);
                if !is_path(span) || before.ends_with("'s ") {
                    continue;
                }
                let want = span.trim_end_matches('/');
                let found = context
                    .iter()
                    .rev()
                    .chain(bases.iter())
                    .map(|b| b.join(want))
                    .find(|c| c.exists());
                match found {
                    Some(f) if f.is_dir() => context.push(f),
                    Some(f) => context.extend(f.parent().map(Path::to_path_buf)),
                    None => out.push(format!(
                        "{}:{}: `{span}` names no file or folder",
                        rel(root, &file),
                        p.line
                    )),
                }
            }
        }
    }
}

/// The text of a Rust source without its `cfg(test)` items (a test module, a
/// test-only function), by brace counting from the attribute.
fn without_test_items(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        let test_only = t.starts_with("#[cfg(test)]") || t.starts_with("#[cfg(all(test");
        if !test_only {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // Skip the item the attribute applies to: to its `;` or its closing brace.
        let mut depth = 0usize;
        let mut opened = false;
        'item: for l in lines.by_ref() {
            if l.trim_start().starts_with("#[") && !opened {
                continue;
            }
            for c in l.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth = depth.saturating_sub(1),
                    ';' if !opened => break 'item,
                    _ => {}
                }
                if opened && depth == 0 {
                    break 'item;
                }
            }
        }
    }
    out
}

/// Whether `text` defines a function named `name`.
fn defines_fn(text: &str, name: &str) -> bool {
    let pat = format!("fn {name}");
    text.match_indices(&pat).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + pat.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && matches!(after, Some('(') | Some('<'))
    })
}

/// The crate's source files outside its tests (`tests.rs` files), with their
/// `cfg(test)` items removed.
fn non_test_sources(src: &Path) -> Vec<(PathBuf, String)> {
    files(src, "rs")
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "tests.rs"))
        .map(|p| {
            let text = without_test_items(&read(&p));
            (p, text)
        })
        .collect()
}

/// A span as a function it names: the path without a trailing argument list, or
/// `None` when it is not a function's name (a type, a constant, an expression, a
/// manual page such as `membarrier(2)`).
fn function_name(span: &str) -> Option<&str> {
    let mut s = span.trim();
    if is_path(s) {
        return None;
    }
    if s.ends_with(')') {
        let open = s.find('(')?;
        let args = &s[open + 1..s.len() - 1];
        if !args.is_empty() && args.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s = &s[..open];
    }
    let ident = |x: &str| {
        x.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && x.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    if s.is_empty() || !s.split("::").flat_map(|x| x.split('.')).all(ident) {
        return None;
    }
    let last = s.rsplit(['.', ':']).next()?;
    let lowercase = last.chars().next().is_some_and(|c| c.is_lowercase());
    lowercase.then_some(s)
}

/// Every function a walk of docs/architecture.md names is defined outside
/// `cfg(test)` where the walk says.
fn walk_functions(root: &Path, out: &mut Vec<String>) {
    let doc_path = root.join("docs/architecture.md");
    let doc = read(&doc_path);
    let src = root.join("crates/mwait/src");
    let sources = non_test_sources(&src);
    let in_files = |name: &str, scope: &[PathBuf]| {
        sources
            .iter()
            .filter(|(p, _)| scope.is_empty() || scope.iter().any(|s| p.starts_with(s)))
            .any(|(_, text)| defines_fn(text, name))
    };
    // A module: a file or a folder of that name.
    let is_module = |name: &str| {
        files(&src, "rs").iter().any(|p| {
            p.file_stem().is_some_and(|s| s == name)
                || p.parent()
                    .and_then(Path::file_name)
                    .is_some_and(|d| d == name)
        })
    };

    // The steps: numbered items of the `## One ...` sections.
    let mut steps: Vec<(usize, String)> = Vec::new();
    let mut in_walk = false;
    for (i, line) in doc.lines().enumerate() {
        if line.starts_with("## ") {
            in_walk = line.starts_with("## One ");
            continue;
        }
        if !in_walk {
            continue;
        }
        let t = line.trim_start();
        let numbered = t
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        match steps.last_mut() {
            Some((_, text)) if !numbered && !t.is_empty() => {
                text.push(' ');
                text.push_str(t);
            }
            _ if numbered => steps.push((i + 1, t.to_string())),
            _ => {}
        }
    }

    for (line, text) in steps {
        let spans = code_spans(&text);
        // The files the step names, with their modules' folders (`cell.rs`, `cell/`).
        let named: Vec<PathBuf> = spans
            .iter()
            .filter_map(|s| s.strip_suffix(".rs"))
            .flat_map(|s| [src.join(format!("{s}.rs")), src.join(s)])
            .collect();
        // The arguments the step's calls are written with (`pred`): not functions.
        let arguments: Vec<&str> = spans
            .iter()
            .filter_map(|s| s.split_once('(').map(|(_, a)| a.trim_end_matches(')')))
            .flat_map(|a| a.split([',', ' ', '&']))
            .collect();
        for span in spans {
            let Some(path) = function_name(span) else {
                continue;
            };
            if arguments.contains(&path) {
                continue;
            }
            let segments: Vec<&str> = path.split(['.', ':']).filter(|s| !s.is_empty()).collect();
            let name = segments[segments.len() - 1];
            let found = if segments.len() == 1 || is_module(name) && !path.contains('.') {
                in_files(name, &named) || is_module(name)
            } else if segments[0].chars().next().is_some_and(char::is_lowercase)
                && !path.contains('.')
            {
                // A module path: the deepest folder or file it names is the scope.
                let mut scope = src.clone();
                for m in &segments[..segments.len() - 1] {
                    if scope.join(m).is_dir() || scope.join(format!("{m}.rs")).is_file() {
                        scope = scope.join(m);
                    }
                }
                let file = scope.with_extension("rs");
                in_files(name, &[scope, file])
            } else {
                in_files(name, &[])
            };
            if !found {
                out.push(format!(
                    "docs/architecture.md:{line}: `{span}`: no `fn {name}` outside cfg(test) \
                     where the walk says"
                ));
            }
        }
    }
}

/// examples/lib.rs names every example of examples/Cargo.toml.
fn examples_listed(root: &Path, out: &mut Vec<String>) {
    let manifest = read(&root.join("examples/Cargo.toml"));
    let lib = read(&root.join("examples/lib.rs"));
    let mut in_example = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_example = t == "[[example]]";
            continue;
        }
        let Some(name) = t
            .strip_prefix("name = \"")
            .and_then(|r| r.strip_suffix('"'))
        else {
            continue;
        };
        if in_example && !lib.contains(&format!("`{name}`")) {
            out.push(format!(
                "examples/lib.rs: the example `{name}` of examples/Cargo.toml is not listed"
            ));
        }
    }
}

/// The README's documentation table names every docs/*.md.
fn docs_table(root: &Path, out: &mut Vec<String>) {
    let readme = read(&root.join("README.md"));
    let Ok(entries) = fs::read_dir(root.join("docs")) else {
        return;
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    for name in names {
        let link = format!("docs/{name}");
        let listed = readme
            .lines()
            .any(|l| l.trim_start().starts_with('|') && l.contains(&link));
        if !listed {
            out.push(format!(
                "README.md: the documentation table does not name `{link}`"
            ));
        }
    }
}

/// xtask's usage names every row of `cargo xtask clients`.
fn clients_in_usage(out: &mut Vec<String>) {
    // The `clients` entry: its line and the indented lines under it.
    let mut entry = String::new();
    let mut inside = false;
    for line in crate::USAGE.lines() {
        if let Some(rest) = line.strip_prefix("  ") {
            if !rest.starts_with(' ') {
                inside = rest.starts_with("clients");
            }
        }
        if inside {
            entry.push_str(line);
            entry.push(' ');
        }
    }
    for name in crate::clients::names() {
        let named = entry.match_indices(name).any(|(i, _)| {
            let before = entry[..i].chars().next_back();
            let after = entry[i + name.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-');
            !word(before) && !word(after)
        });
        if !named {
            out.push(format!(
                "xtask/src/main.rs: the usage of `clients` does not name its row `{name}`"
            ));
        }
    }
}

/// The column of a trailing `//` comment on a line of code, if it has one.
fn trailing_comment(line: &str) -> Option<usize> {
    let t = line.trim_start();
    if t.starts_with("//") {
        return None;
    }
    // Outside string literals: an even number of quotes before it.
    line.match_indices(" //")
        .map(|(i, _)| i + 1)
        .find(|&i| line[..i].matches('"').count() % 2 == 0)
}

/// No comment line sits aligned under the trailing comment of the line above.
fn tag_continuations(root: &Path, out: &mut Vec<String>) {
    for top in [
        "crates",
        "xtask",
        "benches",
        "examples",
        "integrations",
        "kmod",
    ] {
        for rs in files(&root.join(top), "rs") {
            let text = read(&rs);
            let lines: Vec<&str> = text.lines().collect();
            for (i, pair) in lines.windows(2).enumerate() {
                let Some(col) = trailing_comment(pair[0]) else {
                    continue;
                };
                let next = pair[1];
                let indent = next.len() - next.trim_start().len();
                if next.trim_start().starts_with("//") && indent == col {
                    out.push(format!(
                        "{}:{}: a comment aligned under the trailing comment of line {} \
                         reads as part of it; put it on lines of its own",
                        rel(root, &rs),
                        i + 2,
                        i + 1
                    ));
                }
            }
        }
    }
}

/// Whether `hay` (lowercase) has `word` at `i` as a whole word.
fn whole_word(hay: &str, i: usize, word: &str) -> bool {
    let before = hay[..i].chars().next_back();
    let after = hay[i + word.len()..].chars().next();
    let letter = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    !letter(before) && !letter(after)
}

/// No words about how the project is developed in its sources and documents (this
/// file, which lists them, aside).
fn development_words(root: &Path, out: &mut Vec<String>) {
    let mut all = Vec::new();
    for top in [
        "crates",
        "docs",
        "benches",
        "examples",
        "xtask",
        "integrations",
        "kmod",
    ] {
        for ext in ["rs", "md", "toml", "patch", "c", "h"] {
            all.extend(files(&root.join(top), ext));
        }
    }
    // The root's own documents (README.md, CHANGELOG.md), not its subfolders.
    all.extend(
        files(root, "md")
            .into_iter()
            .filter(|p| p.parent() == Some(root)),
    );
    let this_file = root.join("xtask/src/tidy.rs");
    for file in all.into_iter().filter(|f| *f != this_file) {
        let text = read(&file);
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let mut found: Vec<String> = DEVELOPMENT_WORDS
                .iter()
                .filter(|w| {
                    lower
                        .match_indices(*w)
                        .any(|(i, _)| whole_word(&lower, i, w))
                })
                .map(|w| format!("\"{w}\""))
                .collect();
            // An issue of this project by number (another project's may be cited).
            for (i, _) in lower.match_indices("issue ") {
                let rest = &lower[i + "issue ".len()..];
                let numbered =
                    rest.starts_with('#') || rest.starts_with(|c: char| c.is_ascii_digit());
                let before = &lower[..i];
                let cited = OTHER_PROJECTS.iter().any(|p| {
                    before
                        .trim_end()
                        .trim_end_matches(':')
                        .trim_end()
                        .ends_with(p)
                });
                if numbered && whole_word(&lower, i, "issue") && !cited {
                    found.push("an issue number".to_string());
                }
            }
            if !found.is_empty() {
                out.push(format!(
                    "{}:{}: {} (about how the project is developed)",
                    rel(root, &file),
                    n + 1,
                    found.join(", ")
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy() {
        let problems = check(&project_root());
        assert!(
            problems.is_empty(),
            "cargo xtask tidy finds {} problems:\n{}",
            problems.len(),
            problems.join("\n")
        );
    }

    #[test]
    fn a_path_is_a_span_with_a_slash_or_a_known_extension() {
        assert!(is_path("cell.rs"));
        assert!(is_path("backend/selftest/"));
        assert!(is_path("docs/clients.md"));
        assert!(!is_path("/dev/mwait"));
        assert!(!is_path("target/mwait-bench/report.md"));
        assert!(!is_path("sys::park"));
        assert!(!is_path("cell.line.value"));
        assert!(!is_path("wait_until(pred)"));
        assert!(!is_path("DIR/report.md"));
    }

    #[test]
    fn function_names_drop_arguments_and_skip_types_and_manual_pages() {
        assert_eq!(
            function_name("ladder::end(Outcome{Entry})"),
            Some("ladder::end")
        );
        assert_eq!(
            function_name("on_woke.parked_woken()"),
            Some("on_woke.parked_woken")
        );
        assert_eq!(function_name("climb"), Some("climb"));
        assert_eq!(function_name("HwTier"), None);
        assert_eq!(function_name("membarrier(2)"), None);
        assert_eq!(function_name("state == 0"), None);
    }

    #[test]
    fn test_items_are_left_out() {
        let text = "fn kept() {}\n#[cfg(test)]\nfn gone() {\n    x();\n}\n\
                    #[cfg(test)]\nmod tests {\n    fn inner() {}\n}\nfn after() {}\n";
        let left = without_test_items(text);
        assert!(defines_fn(&left, "kept"));
        assert!(defines_fn(&left, "after"));
        assert!(!defines_fn(&left, "gone"));
        assert!(!defines_fn(&left, "inner"));
    }

    #[test]
    fn an_aligned_continuation_of_a_trailing_comment_is_found() {
        let line = "        let state = self.state.load(Ordering::SeqCst); // (2)";
        let col = trailing_comment(line).unwrap();
        assert_eq!(&line[col..col + 2], "//");
        assert_eq!(trailing_comment("    // a comment"), None);
        assert_eq!(trailing_comment("    let s = \"a // b\";"), None);
    }
}
