//! `cargo xtask codegen [--check]`: regenerates or checks mwait-sys's bindings.
//!
//! The generator is the `mwait-codegen` crate, run with `cargo run` by its
//! manifest: it depends on bindgen, so it is a workspace of its own that neither
//! xtask nor `cargo test --workspace` builds.

use crate::util::{self, cargo, ensure_apt, project_root, step, Res};

/// The generator's manifest, relative to the workspace root.
pub const MANIFEST: &str = "xtask/codegen/Cargo.toml";

/// `cargo xtask codegen`: writes `crates/mwait-sys/src/bindings.rs`; with
/// `--check`, fails when the checked-in file differs from a fresh generation.
pub fn run(args: &[String]) -> Res {
    let mode = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => "write",
        ["--check"] => "check",
        _ => return Err(format!("codegen takes only `--check`, got {args:?}")),
    };
    step(&format!("bindgen on the uapi header ({mode})"));
    generator(mode)
}

/// Runs `mwait-codegen write|check` after installing libclang, which bindgen
/// loads at run time (as root; otherwise `ensure_apt` says what is missing).
pub fn generator(mode: &str) -> Res {
    ensure_apt(&["libclang-dev"])?;
    util::run(
        cargo()
            .args(["run", "-q", "--manifest-path", MANIFEST, "--", mode])
            .env("CARGO_TARGET_DIR", project_root().join("target/codegen")),
    )
}
