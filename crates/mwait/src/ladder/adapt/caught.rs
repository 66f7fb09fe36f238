//! The flag of a cell whose last spin caught the change ([`Caught`]).

use crate::policy::usable_cpus;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// 1 while the last spin of the ladder on a cell caught the change (and no wait
/// parked since): the next untimed wait may then spin its first loads inline, see
/// [`Caught::inline_spin_ok`]. A wait caught in the park tier writes it twice (off,
/// then on), so the cell keeps it away from the line that holds the state word, which
/// the notifier loads on every notify.
#[derive(Debug)]
pub(crate) struct Caught(AtomicU32);

impl Caught {
    pub(crate) const fn new() -> Caught {
        Caught(AtomicU32::new(0))
    }

    /// Whether a wait may spin its first loads inline, before the ladder: the last spin
    /// of the ladder on this cell caught the change and no wait has parked since (a
    /// spin that catches its partner is not stopped by the run queue's length, see
    /// `load.rs`). One load, no clock.
    #[inline(always)]
    pub(crate) fn inline_spin_ok(&self) -> bool {
        self.get()
    }

    /// Whether the cell's last spin caught the change (and no park came since).
    #[inline(always)]
    pub(crate) fn get(&self) -> bool {
        self.0.load(Relaxed) != 0
    }

    /// Notes whether the ladder's spin caught the change (`false` also when a wait
    /// parks). Stores only on a change. A cell that catches spins on whatever the
    /// run-queue gate says, and never asks it (`load.rs`), so the process's count of
    /// CPUs, which turns every automatic spin off where it is one, is settled here
    /// first (`detect::process_cpus`; read once per process).
    #[inline]
    pub(crate) fn note(&self, caught: bool) {
        if self.get() != caught {
            if caught {
                let _ = usable_cpus();
            }
            self.0.store(u32::from(caught), Relaxed);
        }
    }
}
