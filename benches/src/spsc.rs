//! The `spsc` scenarios: a bounded single-producer single-consumer ring of
//! [`SLOTS`] slots whose head and tail are two `WaitCell`s, against
//! `crossbeam_channel::bounded` and `std::sync::mpsc::sync_channel` of the same
//! capacity.
//!
//! The ring is the plainest use of two cells as a channel: the sender waits on the
//! head while the ring is full, the receiver on the tail while it is empty, and each
//! side `store`s its position after every message, so every message is a notify of
//! the other side's cell. Two measurements, each thread unpinned (where the
//! scheduler puts a woken thread is part of what a channel costs):
//!
//! - [`throughput`]: messages per second at saturation (the sender never pauses);
//! - [`gapped`]: one message after each sleep of `gap` (a sleeping sender leaves
//!   the CPUs to the receiver, where a sender spinning on the clock would share a
//!   CPU with it on a small or loaded machine and decide its latency), each message
//!   carrying its send time: the receiver's latency p50 and p99 and its CPU time
//!   per message (`CLOCK_THREAD_CPUTIME_ID`).

use crate::scenarios::Placement;
use crate::stats;
use mwait::WaitCell;
use mwait_support::thread_cpu_time;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Slots of every channel of the section.
pub const SLOTS: u32 = 256;

/// The channels the section compares, in the report's order.
pub const CHANNELS: [Channel; 3] = [Channel::Ring, Channel::Crossbeam, Channel::Std];

/// The channels the section runs at saturation: [`CHANNELS`], then the
/// [`Channel::PauseRing`] baseline.
pub const SATURATED: [Channel; 4] = [
    Channel::Ring,
    Channel::Crossbeam,
    Channel::Std,
    Channel::PauseRing,
];

/// One of the section's channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    /// The ring on two `WaitCell`s.
    Ring,
    /// `crossbeam_channel::bounded(SLOTS)`.
    Crossbeam,
    /// `std::sync::mpsc::sync_channel(SLOTS)`.
    Std,
    /// The same ring with two plain `AtomicU32`s for positions, each side polling
    /// with PAUSE (and yielding its CPU every [`PAUSE_POLLS_PER_YIELD`] polls, so
    /// that two threads on one CPU still take turns): what the ring's own design
    /// costs without a waiting primitive. It never sleeps, so it runs at saturation
    /// only.
    PauseRing,
}

impl Channel {
    /// The name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Channel::Ring => "waitcell-ring",
            Channel::Crossbeam => "crossbeam-channel",
            Channel::Std => "std-sync-channel",
            Channel::PauseRing => "pause-ring",
        }
    }

    /// A sender and a receiver of `u64`s.
    fn open(self) -> (Tx, Rx) {
        match self {
            Channel::Ring => {
                let ring = std::sync::Arc::new(Ring::new());
                (Tx::Ring(ring.clone(), 0), Rx::Ring(ring, 0))
            }
            Channel::PauseRing => {
                let ring = std::sync::Arc::new(Ring::new());
                (Tx::PauseRing(ring.clone(), 0), Rx::PauseRing(ring, 0))
            }
            Channel::Crossbeam => {
                let (s, r) = crossbeam_channel::bounded(SLOTS as usize);
                (Tx::Crossbeam(s), Rx::Crossbeam(r))
            }
            Channel::Std => {
                let (s, r) = mpsc::sync_channel(SLOTS as usize);
                (Tx::Std(s), Rx::Std(r))
            }
        }
    }
}

/// The ring: `tail` counts the messages sent, `head` those received (both wrap).
struct Ring<P = WaitCell> {
    head: P,
    tail: P,
    slots: Vec<AtomicU64>,
}

/// How many PAUSE polls a side of [`Channel::PauseRing`] makes before it yields.
pub const PAUSE_POLLS_PER_YIELD: u32 = 1024;

/// A ring's position: a `WaitCell`, or a plain atomic on a line of its own that a
/// waiting side polls with PAUSE (the [`Channel::PauseRing`] baseline).
trait Position {
    fn new() -> Self;
    fn wait_until(&self, pred: impl Fn(u32) -> bool) -> u32;
    fn store(&self, v: u32);
}

impl Position for WaitCell {
    fn new() -> Self {
        WaitCell::new(0)
    }
    #[inline]
    fn wait_until(&self, pred: impl Fn(u32) -> bool) -> u32 {
        WaitCell::wait_until(self, pred)
    }
    #[inline]
    fn store(&self, v: u32) {
        WaitCell::store(self, v);
    }
}

/// A plain position on its own 128-byte pair of lines, as a `WaitCell`'s value is.
#[repr(align(128))]
struct PausePosition(AtomicU32);

impl Position for PausePosition {
    fn new() -> Self {
        PausePosition(AtomicU32::new(0))
    }
    #[inline]
    fn wait_until(&self, pred: impl Fn(u32) -> bool) -> u32 {
        let mut polls = 0u32;
        loop {
            let v = self.0.load(Ordering::Acquire);
            if pred(v) {
                return v;
            }
            polls += 1;
            if polls % PAUSE_POLLS_PER_YIELD == 0 {
                thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
    #[inline]
    fn store(&self, v: u32) {
        self.0.store(v, Ordering::Release);
    }
}

impl<P: Position> Ring<P> {
    fn new() -> Ring<P> {
        Ring {
            head: P::new(),
            tail: P::new(),
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn slot(&self, pos: u32) -> &AtomicU64 {
        &self.slots[(pos % SLOTS) as usize]
    }

    /// Sends `m` from the sender's position `tail`.
    #[inline]
    fn send(&self, tail: &mut u32, m: u64) {
        let t = *tail;
        self.head.wait_until(|h| t.wrapping_sub(h) < SLOTS);
        // The slot is the sender's until the tail passes it: the tail's store
        // (release) publishes it, the receiver's acquire load of the tail sees it.
        self.slot(t).store(m, Ordering::Relaxed);
        *tail = t.wrapping_add(1);
        self.tail.store(*tail);
    }

    /// Receives the message at the receiver's position `head`.
    #[inline]
    fn recv(&self, head: &mut u32) -> u64 {
        let h = *head;
        self.tail.wait_until(|t| t != h);
        let m = self.slot(h).load(Ordering::Relaxed);
        *head = h.wrapping_add(1);
        self.head.store(*head);
        m
    }
}

enum Tx {
    /// The ring and the sender's position.
    Ring(std::sync::Arc<Ring>, u32),
    PauseRing(std::sync::Arc<Ring<PausePosition>>, u32),
    Crossbeam(crossbeam_channel::Sender<u64>),
    Std(mpsc::SyncSender<u64>),
}

impl Tx {
    fn send(&mut self, m: u64) {
        match self {
            Tx::Ring(ring, tail) => ring.send(tail, m),
            Tx::PauseRing(ring, tail) => ring.send(tail, m),
            Tx::Crossbeam(s) => s.send(m).expect("the receiver outlives the sender"),
            Tx::Std(s) => s.send(m).expect("the receiver outlives the sender"),
        }
    }
}

enum Rx {
    /// The ring and the receiver's position.
    Ring(std::sync::Arc<Ring>, u32),
    PauseRing(std::sync::Arc<Ring<PausePosition>>, u32),
    Crossbeam(crossbeam_channel::Receiver<u64>),
    Std(mpsc::Receiver<u64>),
}

impl Rx {
    fn recv(&mut self) -> u64 {
        match self {
            Rx::Ring(ring, head) => ring.recv(head),
            Rx::PauseRing(ring, head) => ring.recv(head),
            Rx::Crossbeam(r) => r.recv().expect("the sender sends every message"),
            Rx::Std(r) => r.recv().expect("the sender sends every message"),
        }
    }
}

/// Messages per second through `ch` at saturation: `n` messages (their sum is
/// checked, so a lost or repeated message fails the run).
pub fn throughput(ch: Channel, n: u32) -> f64 {
    throughput_placed(ch, n, None)
}

/// [`throughput`] with the sender (the calling thread, unpinned again afterwards)
/// and the receiver pinned to `place`'s CPUs, or where the scheduler puts them
/// (`None`, the bench's section).
pub fn throughput_placed(ch: Channel, n: u32, place: Option<Placement>) -> f64 {
    let cpus = place.map(Placement::cpus);
    let (mut tx, mut rx) = ch.open();
    if let Some((sender, _)) = cpus {
        mwait_support::pin_to_cpu(sender);
    }
    let start = Instant::now();
    let receiver = thread::spawn(move || {
        if let Some((_, receiver)) = cpus {
            mwait_support::pin_to_cpu(receiver);
        }
        (0..n).map(|_| rx.recv()).sum::<u64>()
    });
    for i in 0..n {
        tx.send(u64::from(i));
    }
    let sum = receiver.join().expect("the receiver does not panic");
    let secs = start.elapsed().as_secs_f64();
    if cpus.is_some() {
        mwait_support::unpin();
    }
    let n64 = u64::from(n);
    assert_eq!(
        sum,
        n64 * n64.saturating_sub(1) / 2,
        "{} lost or repeated a message",
        ch.name()
    );
    f64::from(n) / secs
}

/// What [`gapped`] measured.
#[derive(Clone, Debug)]
pub struct Gapped {
    /// Send-to-receive latency p50, ns.
    pub p50_ns: f64,
    /// Send-to-receive latency p99, ns.
    pub p99_ns: f64,
    /// The receiver's CPU time per message, ns.
    pub cpu_per_msg_ns: f64,
}

/// `n` messages through `ch`, one after each sleep of `gap` (so at least `gap`
/// apart: the timer's slack comes on top).
pub fn gapped(ch: Channel, n: u32, gap: Duration) -> Gapped {
    let (mut tx, mut rx) = ch.open();
    let base = Instant::now();
    let receiver = thread::spawn(move || {
        let cpu0 = thread_cpu_time();
        let mut lat = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let sent = rx.recv();
            let now = base.elapsed().as_nanos() as u64;
            lat.push(now.saturating_sub(sent));
        }
        (lat, thread_cpu_time() - cpu0)
    });
    for _ in 0..n {
        thread::sleep(gap);
        tx.send(base.elapsed().as_nanos() as u64);
    }
    let (mut lat, cpu) = receiver.join().expect("the receiver does not panic");
    let s = stats(&mut lat);
    Gapped {
        p50_ns: s.p50,
        p99_ns: s.p99,
        cpu_per_msg_ns: cpu.as_nanos() as f64 / f64::from(n.max(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_channel_carries_every_message_once_in_order() {
        for ch in SATURATED {
            assert!(throughput(ch, 10_000) > 0.0, "{}", ch.name());
            let (mut tx, mut rx) = ch.open();
            let r = thread::spawn(move || (0..3 * SLOTS).map(|_| rx.recv()).collect::<Vec<_>>());
            for i in 0..3 * SLOTS {
                tx.send(u64::from(i) * 7);
            }
            let got = r.join().unwrap();
            let want: Vec<u64> = (0..3 * SLOTS).map(|i| u64::from(i) * 7).collect();
            assert_eq!(got, want, "{}", ch.name());
        }
    }

    #[test]
    fn a_gapped_run_measures_latency_and_cpu() {
        let g = gapped(Channel::Ring, 50, Duration::from_micros(50));
        assert!(g.p50_ns > 0.0 && g.p99_ns >= g.p50_ns);
        assert!(g.cpu_per_msg_ns > 0.0);
    }
}
