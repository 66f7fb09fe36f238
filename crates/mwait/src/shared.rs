//! Cells in memory shared between processes: [`SharedCells`], a mapping that a
//! process shares with the children it forks, and [`WaitCell::init_shared`], which
//! places one cell in memory the caller mapped (a file mapped by unrelated processes).
//!
//! A cell in shared memory must be made by [`WaitCell::new_shared`]: its parked
//! waiters sleep on non-private futexes, which a notifier in another process can
//! wake, and its notifiers never use the process-private asymmetric barrier. A cell
//! made by [`WaitCell::new`] and copied into shared memory works within one process,
//! but a notifier in another process cannot wake its parked waiters, which then
//! sleep to their deadline. Both ways here build the cell in place with
//! `new_shared`, so that mistake cannot be made through them.

use crate::cell::WaitCell;
use crate::sys::anon_map::{place_value, AnonMap};
use std::fmt;
use std::io;
use std::mem::size_of;
use std::ops::Deref;

/// `n` process-shared [`WaitCell`]s in an anonymous `MAP_SHARED` mapping: every
/// child that this process forks while the value lives shares them (Unix only).
///
/// Each cell is made by [`WaitCell::new_shared`]: blocking waits and every writer
/// work across the processes; async waits and [`wait_any`](crate::atomic::wait_any)
/// refuse such a cell with a panic (a waker points into one process's memory). The
/// mapping is unmapped when the value is dropped in a process; a child's copy of the
/// value unmaps the child's view only. A child killed while it is parked leaves its
/// count on the cell, which costs each later notify a system call (see
/// [`WaitCell::new_shared`]).
///
/// # Examples
///
/// ```
/// let cells = mwait::SharedCells::new(2).expect("mmap");
/// assert_eq!(cells.len(), 2);
/// assert!(cells[0].is_shared());
/// cells[1].store(7);
/// // A child forked now (libc::fork) sees 7 in cells[1], and its stores wake this
/// // process's waiters.
/// assert_eq!(cells[1].load(), 7);
/// ```
pub struct SharedCells {
    /// How many cells. They are never dropped in place: a shared cell owns nothing
    /// to free (no waker is ever armed on it), and several processes hold its bytes.
    len: usize,
    map: AnonMap,
}

impl SharedCells {
    /// Maps `n` cells holding 0, or returns the `mmap` error (`n == 0` is refused
    /// with `InvalidInput`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(mwait::SharedCells::new(0).is_err());
    /// assert_eq!(mwait::SharedCells::new(3).unwrap()[2].load(), 0);
    /// ```
    pub fn new(n: usize) -> io::Result<SharedCells> {
        let bytes = n.checked_mul(size_of::<WaitCell>()).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "too many cells for one mapping",
            )
        })?;
        let map = AnonMap::new(bytes, true)?;
        let base = map.base().as_ptr().cast::<WaitCell>();
        for i in 0..n {
            // SAFETY: the mapping is page-aligned (more than the cell's 128 bytes)
            // and holds `n` cells; slot `i` is within it, written once, and lives as
            // long as `map`, which `self` owns.
            let _ = unsafe { WaitCell::init_shared(base.add(i), 0) };
        }
        Ok(SharedCells { len: n, map })
    }
}

impl Deref for SharedCells {
    type Target = [WaitCell];

    fn deref(&self) -> &[WaitCell] {
        let base = self.map.base().as_ptr().cast::<WaitCell>();
        // SAFETY: `new` placed `len` initialised cells at `base`, which stay mapped
        // and are only ever reached through shared references for `self`'s life.
        unsafe { std::slice::from_raw_parts(base, self.len) }
    }
}

impl fmt::Debug for SharedCells {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl WaitCell {
    /// Builds a process-shared cell ([`WaitCell::new_shared`]) holding `value` at
    /// `place`, in memory that the caller mapped and shares with other processes (a
    /// file or a POSIX shared-memory object mapped `MAP_SHARED`), and returns it.
    /// One process initialises the cell; the others, once it is initialised, use
    /// the same bytes through their own mapping. [`SharedCells`] does the mapping
    /// for a parent and its forked children without `unsafe`.
    ///
    /// # Safety
    ///
    /// - `place` is valid for writes of a `WaitCell` and 128-byte aligned (a
    ///   page-aligned mapping is);
    /// - the memory stays mapped, and is written by nothing but `WaitCell` methods,
    ///   for `'a`, in this process and in every other one that uses the cell;
    /// - no process waits on or writes to the cell before this call returns, and
    ///   no process calls it again on the same bytes while another uses the cell.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::WaitCell;
    /// let map = mwait::SharedCells::new(1).unwrap(); // stands for the caller's mapping
    /// let place = &map[0] as *const WaitCell as *mut WaitCell;
    /// // SAFETY: `place` is a 128-byte aligned cell of a live shared mapping that
    /// // nothing else uses meanwhile.
    /// let cell = unsafe { WaitCell::init_shared(place, 5) };
    /// assert_eq!((cell.load(), cell.is_shared()), (5, true));
    /// ```
    pub unsafe fn init_shared<'a>(place: *mut WaitCell, value: u32) -> &'a WaitCell {
        debug_assert!(place.is_aligned(), "a WaitCell is 128-byte aligned");
        // SAFETY: the caller's conditions are `place`'s.
        unsafe { place_value(place, WaitCell::new_shared(value)) }
    }
}
