//! `mwait-codegen write|check`: regenerates or checks mwait-sys's bindings.
//!
//! Normally run through `cargo xtask codegen [--check]`, which installs libclang
//! first.

use std::process::ExitCode;

const USAGE: &str = "\
usage: mwait-codegen <write|check>

  write   regenerates crates/mwait-sys/src/bindings.rs from the uapi header
  check   fails when the checked-in file differs from a fresh generation
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["write"] => mwait_codegen::write().map(|()| {
            println!("wrote {}", mwait_codegen::OUTPUT);
        }),
        ["check"] => mwait_codegen::check().map(|()| {
            println!("{} is up to date", mwait_codegen::OUTPUT);
        }),
        _ => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mwait-codegen: error: {e}");
            ExitCode::FAILURE
        }
    }
}
