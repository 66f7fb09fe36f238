//! The state word's bits and the pure rules that change them; the notes that argue
//! them are in `protocol.rs` ("Notes about memory ordering").

use crate::primitive::FENCED_IDLE_NOTIFIES;

/// Bits of `state` that count parked (futex) waiters (16 bits: more than 65 000,
/// far more than the threads that park on one cell).
pub(super) const PARKED_MASK: u32 = 0x0000_ffff;
/// Bit of `state` set by a notify that found [`WOKEN`] and made no call, so that
/// the notifier that set `WOKEN` knows to wake once more if its wake came too early
/// for a counted waiter; cleared with `WOKEN` by that notifier, by the next one to
/// set `WOKEN`, and by the last withdrawal (see "A wake on its way" in the notes).
pub(super) const SKIPPED: u32 = 0x0001_0000;
/// Bit of `state` that says "every waiter in the count has a wake on its way": set
/// by a notifier that wakes every sleeper, before its wake; cleared by the next
/// announcement, by the last withdrawal, and by that notifier if its wake woke fewer
/// than the count. While it stands, a notify makes no system call (see "A wake on
/// its way" in the notes).
pub(super) const WOKEN: u32 = 0x0002_0000;
/// Bits of `state` that tag a non-zero parked count with the fork generation of the
/// process whose waiters it counts (see "Counts left by a fork"); 0 with no count.
pub(super) const EPOCH_MASK: u32 = 0x00fc_0000;
/// The lowest bit of [`EPOCH_MASK`].
pub(super) const EPOCH_SHIFT: u32 = 18;
/// Bits of `state` that count the notifies in a row that found a `FENCED` cell with
/// nobody parked or armed (see "A cell that parks often").
pub(super) const IDLE_MASK: u32 = 0x1f00_0000;
/// One notify in [`IDLE_MASK`].
pub(super) const IDLE_ONE: u32 = 0x0100_0000;
// The longest run of idle notifies before the clearing one fits the count.
const _: () =
    assert!(FENCED_IDLE_NOTIFIES >= 1 && FENCED_IDLE_NOTIFIES - 1 <= IDLE_MASK / IDLE_ONE);
/// Bit of `state` that says "this cell's notifiers fence": set by a parking waiter
/// after its barrier (so after a whole `membarrier` grace period), so that the
/// waiters parking after it need no `membarrier` of their own; cleared by the last
/// of a run of notifies that find nobody parked (`IDLE_MASK`). See "A cell that parks often" in the notes above.
pub(super) const FENCED: u32 = 0x2000_0000;
/// Bit of `state` set for the whole life of a process-shared cell: it sends every
/// notify to the slow path, which orders with a `SeqCst` fence, because the
/// asymmetric barrier (`membarrier`) only reaches this process's threads.
pub(super) const SHARED_SLOW: u32 = 0x4000_0000;
/// The state a notify leaves on a `FENCED` cell where it found nobody parked or armed
/// (`state` is `FENCED` and a count of such notifies): the count one higher, or 0
/// (the light path again) once [`FENCED_IDLE_NOTIFIES`] have come in a row.
pub(super) const fn fenced_after_idle_notify(state: u32) -> u32 {
    let idle = (state & IDLE_MASK) / IDLE_ONE + 1;
    if idle >= FENCED_IDLE_NOTIFIES {
        0
    } else {
        FENCED | (idle * IDLE_ONE)
    }
}

/// The announcement (3) of a parked waiter of the process whose fork generation is
/// `tag` (`epoch_tag`): one more in the count, which no wake is on its way to yet
/// (`WOKEN` goes); a count under another tag was left by the parent of a `fork()`
/// (see "Counts left by a fork") and is dropped.
pub(super) const fn announced(state: u32, tag: u32) -> u32 {
    let state = state & !WOKEN;
    if state & PARKED_MASK == 0 || state & EPOCH_MASK == tag {
        ((state & !EPOCH_MASK) + 1) | tag
    } else {
        (state & !(PARKED_MASK | EPOCH_MASK)) | tag | 1
    }
}

/// Whether an announcement under `tag` on `state` drops a count that an ancestor
/// process left (see [`announced`]).
pub(super) const fn replaces_foreign_count(state: u32, tag: u32) -> bool {
    state & PARKED_MASK != 0 && state & EPOCH_MASK != tag
}

/// The withdrawal of a parked waiter that announced itself under `tag`: one less in the
/// count, and no tag, `WOKEN` nor `SKIPPED` once it is 0; `None` (nothing to change)
/// when the count is not this waiter's to take from: it is 0, or it stands under
/// another tag (its own was dropped, by a notifier or an announcement in a child of
/// `fork()`).
pub(super) const fn withdrawn(state: u32, tag: u32) -> Option<u32> {
    if state & PARKED_MASK == 0 || state & EPOCH_MASK != tag {
        return None;
    }
    let state = state - 1;
    Some(if state & PARKED_MASK == 0 {
        state & !(EPOCH_MASK | WOKEN | SKIPPED)
    } else {
        state
    })
}
