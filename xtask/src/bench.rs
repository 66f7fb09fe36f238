//! `cargo xtask bench`: built in its own issue.

use crate::util::Res;

/// Entry point of the subcommand.
pub fn run(_args: &[String]) -> Res {
    Err("not built yet".into())
}
