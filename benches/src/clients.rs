//! The clients' scenarios: executors that park their threads through a `block_on`,
//! stock (futures-lite's `block_on`, on the `parking` crate's `Mutex` + `Condvar`)
//! against `mwait::block_on` (on `mwait::Parker`), in one process, so that each
//! round compares the two on the same placement of the vCPUs.
//!
//! - [`block_on_pingpong`]: two threads, each in a `block_on`, hand a value back
//!   and forth through two `async_channel::bounded(1)` channels (also in
//!   [`spin_block_on`], which spins where the others park);
//! - [`idle_block_on_cpu`]: the CPU time of a `block_on` that waits 200 ms for
//!   another thread, on a thread that has run `block_on` before and on a new one;
//! - [`executor`]: an `async_executor::Executor` run by two worker threads, each in
//!   a `block_on`, timing three workloads shaped like async-executor's own benches
//!   (`spawn_one`, `yield_now`, `channels`);
//! - [`ParkerSignal`]: `mwait::Parker` as a [`Signal`], for the raw
//!   parker ping-pong.

use crate::Signal;
use mwait_support::{pin_to_cpu, thread_cpu_time, unpin};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// A boxed future that a [`BlockOn`] runs.
pub type Task<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// A way to run a future to completion on the calling thread.
pub type BlockOn = fn(Task<'_>);

/// futures-lite's `block_on`: a `parking::Parker` (`Mutex` + `Condvar`) per thread.
pub fn stock_block_on(f: Task<'_>) {
    futures_lite::future::block_on(f)
}

/// `mwait::block_on`: an `mwait::Parker` per thread.
pub fn mwait_block_on(f: Task<'_>) {
    mwait::block_on(f)
}

/// The two sides the clients' scenarios compare, in report order.
pub const SIDES: [(&str, BlockOn); 2] = [("stock", stock_block_on), ("mwait", mwait_block_on)];

/// A `block_on` whose thread never sleeps: after a poll that is pending it spins
/// (PAUSE) on a flag its waker sets, then clears the flag and polls again. What a
/// PAUSE loop is to a ping-pong on a value, this is to [`block_on_pingpong`]: the
/// same channels and futures with the cheapest wait there is between two running
/// threads, the baseline a parker is told against.
pub fn spin_block_on(mut f: Task<'_>) {
    // Wakes set the flag with a read-modify-write, so that the waiter's exchange,
    // which reads the last of them, synchronises with every wake before it.
    struct Flag(AtomicBool);
    impl std::task::Wake for Flag {
        fn wake(self: Arc<Self>) {
            Self::wake_by_ref(&self);
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.swap(true, Ordering::Release);
        }
    }
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = std::task::Waker::from(flag.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    while f.as_mut().poll(&mut cx).is_pending() {
        // A wake during the poll left the flag set: the loop ends at once.
        while !flag.0.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
        flag.0.swap(false, Ordering::Acquire);
    }
}

/// Round trips per sample of [`block_on_pingpong`]: one pair of clock readings per
/// batch, as in the other ping-pongs (`ROUND_TRIP_BATCH`).
const BATCH: u32 = crate::ROUND_TRIP_BATCH;

/// Round trips each side runs before it is timed.
const WARMUP: u32 = 200;

/// Round-trip samples (ns, each the mean of a batch) of a ping-pong between this
/// thread and a partner through two bounded(1) channels, both threads inside
/// `block_on`, for `budget`; the threads on CPUs 0 and 1.
pub fn block_on_pingpong(block_on: BlockOn, budget: Duration) -> Vec<u64> {
    let (ping_tx, ping_rx) = async_channel::bounded::<u32>(1);
    let (pong_tx, pong_rx) = async_channel::bounded::<u32>(1);
    let partner = thread::spawn(move || {
        pin_to_cpu(1);
        block_on(Box::pin(async move {
            while let Ok(v) = ping_rx.recv().await {
                if pong_tx.send(v).await.is_err() {
                    return;
                }
            }
        }));
    });
    pin_to_cpu(0);
    let mut samples = Vec::new();
    block_on(Box::pin(async {
        for _ in 0..WARMUP {
            ping_tx.send(0).await.expect("the partner runs");
            pong_rx.recv().await.expect("the partner runs");
        }
        let end = Instant::now() + budget;
        while Instant::now() < end {
            let t0 = Instant::now();
            for _ in 0..BATCH {
                ping_tx.send(0).await.expect("the partner runs");
                pong_rx.recv().await.expect("the partner runs");
            }
            samples.push(mwait_support::duration_ns(t0.elapsed()) / u64::from(BATCH));
        }
    }));
    ping_tx.close();
    partner.join().expect("the partner thread");
    unpin();
    samples
}

/// How long the idle `block_on` of [`idle_block_on_cpu`] waits.
pub const IDLE_WAIT: Duration = Duration::from_millis(200);

/// The CPU time (ns) of one `block_on` that waits [`IDLE_WAIT`] for a value another
/// thread sends, on a thread that has run `block_on` and waited before (`fresh`
/// false: it ran one short wait first) or on a new thread whose first `block_on`
/// this is (`fresh` true).
pub fn idle_block_on_cpu(block_on: BlockOn, fresh: bool) -> u64 {
    idle_block_on_cpu_for(block_on, fresh, IDLE_WAIT)
}

/// [`idle_block_on_cpu`] with a wait of `wait` in place of [`IDLE_WAIT`].
pub fn idle_block_on_cpu_for(block_on: BlockOn, fresh: bool, wait: Duration) -> u64 {
    let measure = move || {
        let (tx, rx) = async_channel::bounded::<()>(1);
        if !fresh {
            let (warm_tx, warm_rx) = async_channel::bounded::<()>(1);
            let t = thread::spawn(move || {
                thread::sleep(Duration::from_millis(1));
                warm_tx.send_blocking(()).expect("the waiter runs");
            });
            block_on(Box::pin(async move {
                warm_rx.recv().await.expect("the sender runs");
            }));
            t.join().expect("the sender thread");
        }
        let sender = thread::spawn(move || {
            thread::sleep(wait);
            tx.send_blocking(()).expect("the waiter runs");
        });
        let cpu0 = thread_cpu_time();
        block_on(Box::pin(async move {
            rx.recv().await.expect("the sender runs");
        }));
        let cpu = thread_cpu_time() - cpu0;
        sender.join().expect("the sender thread");
        mwait_support::duration_ns(cpu)
    };
    thread::spawn(measure).join().expect("the measuring thread")
}

/// The parkers that [`idle_park_cpu_for`] compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParkerKind {
    /// `parking::Parker`, the one futures-lite's `block_on` uses.
    Stock,
    /// `mwait::Parker`.
    Mwait,
    /// [`BareParker`]: what any futex-based parker pays at the least.
    Bare,
}

/// The least a futex-based parker can be: a word that holds the token, an exchange
/// to take it, and a `FUTEX_WAIT` while it is not there; no learning, no counts, no
/// spin. A reference for the other parkers' idle parks, not a parker to use (an
/// unpark always makes the system call, parked or not).
pub struct BareParker(AtomicU32);

impl BareParker {
    /// A parker without a token, shared with its unparking side.
    pub fn pair() -> (Arc<BareParker>, Arc<BareParker>) {
        let p = Arc::new(BareParker(AtomicU32::new(0)));
        (p.clone(), p)
    }

    /// Blocks until the token is there, and takes it.
    pub fn park(&self) {
        while self.0.swap(0, Ordering::Acquire) == 0 {
            // The kernel sleeps only while the word is still 0.
            self.futex(libc::FUTEX_WAIT, 0);
        }
    }

    /// Sets the token and wakes the parker.
    pub fn unpark(&self) {
        self.0.store(1, Ordering::Release);
        self.futex(libc::FUTEX_WAKE, 1);
    }

    fn futex(&self, op: libc::c_int, val: u32) {
        // SAFETY: the word is a valid aligned u32 that outlives the call; no
        // timeout is passed.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.0.as_ptr(),
                op | libc::FUTEX_PRIVATE_FLAG,
                val,
                std::ptr::null::<libc::timespec>(),
            );
        }
    }
}

/// The CPU time (ns) of one park of `wait` on a new parker of `kind`, which another
/// thread unparks `wait` later, on a new thread whose first park this is (`fresh`)
/// or on one that parked a parker of the same kind for 1 ms first.
pub fn idle_park_cpu_for(kind: ParkerKind, fresh: bool, wait: Duration) -> u64 {
    fn run<P, U: Send + 'static>(
        new: fn() -> (P, U),
        park: fn(&P),
        unpark: fn(&U),
        fresh: bool,
        wait: Duration,
    ) -> u64 {
        let park_after = |pause: Duration| {
            let (p, u) = new();
            let unparker = thread::spawn(move || {
                thread::sleep(pause);
                unpark(&u);
            });
            let cpu0 = thread_cpu_time();
            park(&p);
            let cpu = thread_cpu_time() - cpu0;
            unparker.join().expect("the unparking thread");
            cpu
        };
        if !fresh {
            park_after(Duration::from_millis(1));
        }
        mwait_support::duration_ns(park_after(wait))
    }
    let measure = move || match kind {
        ParkerKind::Mwait => run(
            || {
                let p = mwait::Parker::new();
                let u = p.unparker();
                (p, u)
            },
            mwait::Parker::park,
            |u| {
                u.unpark();
            },
            fresh,
            wait,
        ),
        ParkerKind::Stock => run(
            parking::pair,
            parking::Parker::park,
            |u| {
                u.unpark();
            },
            fresh,
            wait,
        ),
        ParkerKind::Bare => run(BareParker::pair, |p| p.park(), |u| u.unpark(), fresh, wait),
    };
    thread::spawn(measure).join().expect("the measuring thread")
}

/// The workloads of [`executor`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Spawn one empty task from outside the executor and wait for it.
    SpawnOne,
    /// [`YIELD_TASKS`] tasks that each yield [`YIELDS`] times.
    YieldNow,
    /// A chain of [`CHAIN_TASKS`] tasks linked by bounded(1) channels; a value
    /// passes down the chain [`CHAIN_MESSAGES`] times (a serial chain of wake-ups
    /// that hops between the workers).
    Channels,
}

/// Tasks of [`Workload::YieldNow`].
pub const YIELD_TASKS: usize = 64;
/// Yields per task of [`Workload::YieldNow`].
pub const YIELDS: usize = 50;
/// Tasks of [`Workload::Channels`].
pub const CHAIN_TASKS: usize = 64;
/// Messages of [`Workload::Channels`].
pub const CHAIN_MESSAGES: usize = 20;

impl Workload {
    /// Every workload, in report order.
    pub const ALL: [Workload; 3] = [Workload::SpawnOne, Workload::YieldNow, Workload::Channels];

    /// Its name in the report (async-executor's bench it is shaped like).
    pub fn name(self) -> &'static str {
        match self {
            Workload::SpawnOne => "spawn_one",
            Workload::YieldNow => "yield_now",
            Workload::Channels => "channels",
        }
    }
}

/// The executor's worker threads.
pub const WORKERS: usize = 2;

/// Runs `workload` on an executor driven by [`WORKERS`] threads, each in
/// `block_on(ex.run(..))`, for `budget`; this thread drives each iteration with
/// `block_on` too. Returns the samples: ns per iteration.
pub fn executor(block_on: BlockOn, workload: Workload, budget: Duration) -> Vec<u64> {
    let ex = async_executor::Executor::new();
    let (stop_tx, stop_rx) = async_channel::bounded::<()>(1);
    let mut samples = Vec::new();
    thread::scope(|s| {
        for _ in 0..WORKERS {
            let (ex, stop_rx) = (&ex, stop_rx.clone());
            s.spawn(move || {
                block_on(Box::pin(async move {
                    let _ = ex.run(stop_rx.recv()).await;
                }))
            });
        }
        let once = |ex: &async_executor::Executor<'_>| match workload {
            Workload::SpawnOne => block_on(Box::pin(ex.spawn(async {}))),
            Workload::YieldNow => block_on(Box::pin(async {
                let tasks: Vec<_> = (0..YIELD_TASKS)
                    .map(|_| {
                        ex.spawn(async {
                            for _ in 0..YIELDS {
                                futures_lite::future::yield_now().await;
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await;
                }
            })),
            Workload::Channels => block_on(Box::pin(chain(ex))),
        };
        for _ in 0..3 {
            once(&ex);
        }
        let end = Instant::now() + budget;
        while Instant::now() < end {
            let t0 = Instant::now();
            once(&ex);
            samples.push(mwait_support::duration_ns(t0.elapsed()));
        }
        stop_tx.close();
    });
    samples
}

/// [`Workload::Channels`]: tasks linked head to tail by bounded(1) channels, each
/// passing on what it receives; [`CHAIN_MESSAGES`] values go in at the head and
/// come out at the tail.
async fn chain(ex: &async_executor::Executor<'_>) {
    let (head_tx, mut rx) = async_channel::bounded::<usize>(1);
    let mut tasks = Vec::with_capacity(CHAIN_TASKS);
    for _ in 0..CHAIN_TASKS {
        let (tx, next_rx) = async_channel::bounded::<usize>(1);
        let from = std::mem::replace(&mut rx, next_rx);
        tasks.push(ex.spawn(async move {
            while let Ok(v) = from.recv().await {
                if tx.send(v).await.is_err() {
                    return;
                }
            }
        }));
    }
    for i in 0..CHAIN_MESSAGES {
        head_tx.send(i).await.expect("the chain runs");
        assert_eq!(rx.recv().await, Ok(i));
    }
    head_tx.close();
    for t in tasks {
        t.await;
    }
}

/// `mwait::Parker` as a [`Signal`] for a ping-pong, where the token is the message:
/// `set` is an unpark, `wait_ge` a park that returns the value asked for. That holds
/// only where sets and waits strictly alternate, one set per wait, as in a
/// ping-pong (`scenarios::PingPong`, its final release included): a second set
/// before the park would merge into the first token. The parker sits on a line of
/// its own, apart from the unparker handle that the other thread reads at every
/// unpark, and parks only on the first thread that waits on the signal.
pub struct ParkerSignal {
    parker: OwnLine<OneThreadParker>,
    unparker: mwait::Unparker,
}

/// A value alone on a 128-byte pair of lines (as [`crate::impls::Pause`]).
#[repr(align(128))]
struct OwnLine<T>(T);

/// A `Parker` (`Send`, not `Sync`) that only the first thread to park on it may park
/// on: a park from any other thread panics before it touches the parker. A `Mutex`
/// would give the same sharing at two locked instructions per park, one of them
/// between the wake and the reply, which the ping-pong would count as the
/// parker's (6–13 % of a round trip of about 250 ns on the 2-vCPU guest).
struct OneThreadParker {
    parker: mwait::Parker,
    /// The address of the parking thread's [`THREAD_MARK`].
    owner: std::sync::OnceLock<usize>,
}

thread_local! {
    /// A thread-local whose address tells the threads alive at once apart.
    static THREAD_MARK: u8 = const { 0 };
}

// SAFETY: the only access to `parker` through a shared reference is `park`, which
// first checks that the calling thread is the one whose mark `owner` holds. Threads
// alive at once have thread-locals at distinct addresses, so two threads never use
// the parker at the same time; one that takes an exited owner's address uses it
// after that owner, which `Parker: Send` allows.
unsafe impl Sync for OneThreadParker {}

impl OneThreadParker {
    fn park(&self) {
        let me = THREAD_MARK.with(|m| std::ptr::from_ref(m) as usize);
        assert_eq!(
            *self.owner.get_or_init(|| me),
            me,
            "a ParkerSignal is waited on by one thread"
        );
        self.parker.park();
    }
}

impl Default for ParkerSignal {
    fn default() -> Self {
        let parker = mwait::Parker::new();
        let unparker = parker.unparker();
        ParkerSignal {
            parker: OwnLine(OneThreadParker {
                parker,
                owner: std::sync::OnceLock::new(),
            }),
            unparker,
        }
    }
}

impl Signal for ParkerSignal {
    fn set(&self, _v: u32) {
        self.unparker.unpark();
    }

    fn wait_ge(&self, v: u32) -> u32 {
        self.parker.0.park();
        v
    }
}

/// Makes a boxed [`ParkerSignal`] (an `impls::Make`).
pub fn parker_signal() -> Box<dyn Signal> {
    Box::new(ParkerSignal::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_side_ping_pongs_and_runs_every_workload() {
        for (name, block_on) in SIDES {
            let s = block_on_pingpong(block_on, Duration::from_millis(20));
            assert!(!s.is_empty(), "{name}");
            for w in Workload::ALL {
                let s = executor(block_on, w, Duration::from_millis(20));
                assert!(!s.is_empty(), "{name} {w:?}");
            }
        }
    }

    #[test]
    fn the_spinning_block_on_ping_pongs_and_sees_every_wake() {
        assert!(!block_on_pingpong(spin_block_on, Duration::from_millis(20)).is_empty());
        // Wakes from another thread, some while the future is being polled: a lost
        // one would leave the loop spinning on a clear flag for ever.
        let (tx, rx) = async_channel::bounded::<u32>(1);
        let sender = thread::spawn(move || {
            for i in 0..20_000 {
                tx.send_blocking(i).expect("the receiver runs");
            }
        });
        let mut got = 0;
        spin_block_on(Box::pin(async {
            while let Ok(i) = rx.recv().await {
                assert_eq!(i, got);
                got += 1;
            }
        }));
        sender.join().expect("the sender thread");
        assert_eq!(got, 20_000);
    }

    #[test]
    fn the_bare_parker_keeps_a_token_and_each_parker_idles() {
        // A token set before the park is taken at once, and only once.
        let (p, u) = BareParker::pair();
        u.unpark();
        p.park();
        assert_eq!(p.0.load(Ordering::Relaxed), 0, "the park took the token");
        // One unpark per park, each sent once the last park returned, before or
        // after the next park sleeps: a lost wake or token hangs the test.
        let (p, u) = BareParker::pair();
        let taken = Arc::new(AtomicU32::new(0));
        let seen = taken.clone();
        let parker = thread::spawn(move || {
            for _ in 0..2_000 {
                p.park();
                seen.fetch_add(1, Ordering::Release);
            }
        });
        for i in 1..=2_000 {
            u.unpark();
            while taken.load(Ordering::Acquire) < i {
                thread::yield_now();
            }
        }
        parker.join().expect("the parking thread");
        for kind in [ParkerKind::Stock, ParkerKind::Mwait, ParkerKind::Bare] {
            for fresh in [true, false] {
                let cpu = idle_park_cpu_for(kind, fresh, Duration::from_millis(2));
                assert!(cpu > 0, "{kind:?}: a park costs some CPU");
            }
        }
    }

    #[test]
    fn a_parker_signal_parks_on_its_first_waiting_thread_only() {
        let s = Arc::new(ParkerSignal::default());
        s.set(1);
        assert_eq!(s.wait_ge(1), 1);
        let other = s.clone();
        let t = thread::spawn(move || {
            other.set(2);
            other.wait_ge(2)
        });
        assert!(t.join().is_err(), "a second thread's wait panics");
        // The refused wait left the token, and the first thread still parks.
        assert_eq!(s.wait_ge(2), 2);
    }

    #[test]
    fn an_idle_block_on_is_measured_on_a_warm_and_a_fresh_thread() {
        for (_, block_on) in SIDES {
            for fresh in [false, true] {
                let ns = idle_block_on_cpu(block_on, fresh);
                assert!(ns < mwait_support::duration_ns(IDLE_WAIT), "{ns} ns");
            }
        }
    }
}
