//! The loom models of the crate, as unit tests of its loom build
//! (`RUSTFLAGS="--cfg mwait_loom"`), so that they reach the internals they check
//! directly: the wait/notify protocol (`loom_cell.rs`), the async registry
//! (`loom_async.rs`), the waiter table of bare atomics (`loom_atomic.rs`) and the
//! `Parker` (`loom_parker.rs`). The model of the fallback barrier lives beside the
//! model platform, in `sys/os/loom.rs`.
//!
//! `cargo xtask test` runs them all:
//! `cargo test -p mwait --release --lib -- tests::loom_ sys::os::loom::tests` with
//! `LOOM_MAX_PREEMPTIONS=3` and `CARGO_TARGET_DIR=target/loom`. The other unit tests
//! of the crate need the real platform, and that filter leaves them out.

mod loom_async;
mod loom_atomic;
mod loom_cell;
mod loom_parker;

/// `loom::model` with a preemption bound of 3 unless `LOOM_MAX_PREEMPTIONS` says
/// otherwise: three preemptions cover every two-sided race here, and unbounded the
/// two-waiter models run for hours.
fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}
