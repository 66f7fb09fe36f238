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

use crate::primitive::FENCED_IDLE_NOTIFIES;
use crate::WaitCell;

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

impl WaitCell {
    /// How many parked waiters the model's futex has woken on this cell so far (the
    /// models check that `notify_one` wakes one).
    fn model_wakes(&self) -> u32 {
        self.waiter().sleepers.queue().woken()
    }
}

/// Where a model's cell starts: as made, `FENCED` (see "A new cell starts `FENCED`"
/// in `protocol.rs`), so that its first park skips the barrier; or cleared by a run
/// of idle notifies, so that its first park runs the barrier and sets the bit.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Start {
    New,
    Cleared,
}

impl Start {
    /// A cell holding `value` that starts so. The idle notifies run before the
    /// model's other threads exist: they add no interleavings.
    pub(crate) fn cell(self, value: u32) -> loom::sync::Arc<WaitCell> {
        let cell = loom::sync::Arc::new(WaitCell::new(value));
        assert!(cell.waiter().line.fenced(), "a new cell starts FENCED");
        if let Start::Cleared = self {
            for _ in 0..FENCED_IDLE_NOTIFIES {
                cell.store(value);
            }
            assert!(!cell.waiter().line.fenced(), "the idle notifies cleared it");
        }
        cell
    }
}

/// [`model`] once from each [`Start`].
fn model_from_both_starts<F: Fn(Start) + Sync + Send + 'static>(f: F) {
    let f = std::sync::Arc::new(f);
    for start in [Start::New, Start::Cleared] {
        let f = std::sync::Arc::clone(&f);
        model(move || f(start));
    }
}
