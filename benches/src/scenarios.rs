//! The measured scenarios, each returning plain numbers for the report runner and
//! usable from criterion's `iter_custom`.

use crate::impls::Make;
use crate::{AsyncSignal, Signal};
use mwait_support::{
    compute_throughput_process, current_cpu, duration_ns, pin_to_cpu, sample_batches_for,
    sample_for, thread_cpu_time, unpin,
};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Where the two threads of a ping-pong run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Pinned to CPUs 0 and 1.
    TwoCpus,
    /// Both pinned to CPU 0.
    SameCpu,
}

impl Placement {
    /// The CPUs of the timed thread and of its partner.
    pub fn cpus(self) -> (usize, usize) {
        match self {
            Placement::TwoCpus => (0, 1),
            Placement::SameCpu => (0, 0),
        }
    }
}

/// A running ping-pong partner: `round_trip()` runs one round trip.
pub struct PingPong {
    ping: Arc<dyn Signal>,
    pong: Arc<dyn Signal>,
    stop: Arc<AtomicBool>,
    /// How the rounds run (a [`Rounds`] as `u8`; see [`PingPong::set_rounds`]).
    rounds: Arc<AtomicU8>,
    next: u32,
    partner: Option<thread::JoinHandle<()>>,
}

/// How a [`PingPong`]'s rounds run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Rounds {
    /// Through the signals' `set` and `wait_ge`.
    Signal,
    /// Plain stores and PAUSE loops on the signals' words.
    Pause,
    /// `mwait::atomic` on the signals' words: a store and `wake_all`, a
    /// `wait_until`.
    Atomic,
}

impl Rounds {
    const ALL: [Rounds; 3] = [Rounds::Signal, Rounds::Pause, Rounds::Atomic];

    fn from_u8(v: u8) -> Rounds {
        Rounds::ALL[usize::from(v).min(Rounds::ALL.len() - 1)]
    }
}

/// PAUSE until `word` holds at least `v`; returns the value seen.
fn pause_until_ge(word: &AtomicU32, v: u32) -> u32 {
    loop {
        let seen = word.load(Ordering::Acquire);
        if seen >= v {
            return seen;
        }
        std::hint::spin_loop();
    }
}

/// Waits through `mwait::atomic` until `word` holds at least `v`; returns the value
/// seen.
fn atomic_until_ge(word: &AtomicU32, v: u32) -> u32 {
    mwait::atomic::wait_until(word, |cur| cur >= v, None).value()
}

/// Stores `v` into `word` and wakes its `mwait::atomic` waiters.
fn store_and_wake(word: &AtomicU32, v: u32) {
    word.store(v, Ordering::Release);
    mwait::atomic::wake_all(word);
}

impl PingPong {
    /// Starts the partner thread; the calling thread becomes the timed side (and is
    /// pinned as `placement` says).
    pub fn start(make: Make, placement: Placement) -> PingPong {
        PingPong::start_with(make, Some(placement.cpus()), Duration::ZERO)
    }

    /// Starts the partner thread, which sleeps `partner_delay` first; `pins` are
    /// the CPUs of the calling (timed) thread and of the partner, or `None` to
    /// leave both where the scheduler puts them. Each thread is pinned before its
    /// first wait.
    pub fn start_with(
        make: Make,
        pins: Option<(usize, usize)>,
        partner_delay: Duration,
    ) -> PingPong {
        let ping: Arc<dyn Signal> = Arc::from(make());
        let pong: Arc<dyn Signal> = Arc::from(make());
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicU8::new(Rounds::Signal as u8));
        let partner = {
            let (ping, pong, stop, rounds) =
                (ping.clone(), pong.clone(), stop.clone(), rounds.clone());
            thread::spawn(move || {
                thread::sleep(partner_delay);
                if let Some((_, cpu)) = pins {
                    pin_to_cpu(cpu);
                }
                let mut i = 0u32;
                loop {
                    i = i.wrapping_add(1);
                    // The mode of this round, read before its wait (see `set_rounds`).
                    let mode = Rounds::from_u8(rounds.load(Ordering::Acquire));
                    let words = match (mode, ping.word(), pong.word()) {
                        (Rounds::Signal, ..) => None,
                        (mode, Some(ping), Some(pong)) => Some((mode, ping, pong)),
                        _ => None,
                    };
                    i = match words {
                        Some((Rounds::Atomic, ping, _)) => atomic_until_ge(ping, i),
                        Some((_, ping, _)) => pause_until_ge(ping, i),
                        None => ping.wait_ge(i),
                    };
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    match words {
                        Some((Rounds::Atomic, _, pong)) => store_and_wake(pong, i),
                        Some((_, _, pong)) => pong.store(i, Ordering::Release),
                        None => pong.set(i),
                    }
                }
            })
        };
        if let Some((cpu, _)) = pins {
            pin_to_cpu(cpu);
        }
        PingPong {
            ping,
            pong,
            stop,
            rounds,
            next: 0,
            partner: Some(partner),
        }
    }

    /// Whether the signals have words a PAUSE ping-pong can run on (see
    /// [`Signal::word`]).
    pub fn has_words(&self) -> bool {
        self.ping.word().is_some() && self.pong.word().is_some()
    }

    /// Turns the PAUSE rounds on (`Rounds::Pause`) or off (`Rounds::Signal`): see
    /// [`PingPong::set_rounds`].
    pub fn set_pause(&mut self, on: bool) {
        self.set_rounds(if on { Rounds::Pause } else { Rounds::Signal });
    }

    /// Makes the rounds run as `mode` says ([`PingPong::round_trip`],
    /// [`PingPong::pause_round_trip`] or [`PingPong::atomic_round_trip`] from now
    /// on), through one round trip that the partner answers in any mode: a ping
    /// that writes the word and wakes a partner waiting in any mode (the signal's
    /// `set`, then `mwait::atomic::wake_all` on the word), and a PAUSE loop on the
    /// answer's word, which every kind of answer writes. The partner reads the mode
    /// before each wait, so from the round after this one it waits in the new mode.
    /// Without words (see [`PingPong::has_words`]) it does nothing.
    pub fn set_rounds(&mut self, mode: Rounds) {
        let Some(answer) = self.pong.word() else {
            return;
        };
        self.rounds.store(mode as u8, Ordering::Release);
        self.next = self.next.wrapping_add(1);
        self.wake_any(self.next);
        pause_until_ge(answer, self.next);
    }

    /// Pings `v` through the signal's `set`, and wakes the partner also where it
    /// waits on the word through `mwait::atomic`, which the signal's wake does not
    /// reach.
    fn wake_any(&self, v: u32) {
        self.ping.set(v);
        if let Some(word) = self.ping.word() {
            mwait::atomic::wake_all(word);
        }
    }

    /// One round trip of plain stores and PAUSE loops on the signals' words, after
    /// [`PingPong::set_pause`]`(true)`.
    #[inline]
    pub fn pause_round_trip(&mut self) {
        if let (Some(ping), Some(pong)) = (self.ping.word(), self.pong.word()) {
            self.next = self.next.wrapping_add(1);
            ping.store(self.next, Ordering::Release);
            pause_until_ge(pong, self.next);
        }
    }

    /// One round trip of stores and `mwait::atomic` waits and wakes on the signals'
    /// words, after [`PingPong::set_rounds`]`(Rounds::Atomic)`.
    #[inline]
    pub fn atomic_round_trip(&mut self) {
        if let (Some(ping), Some(pong)) = (self.ping.word(), self.pong.word()) {
            self.next = self.next.wrapping_add(1);
            store_and_wake(ping, self.next);
            atomic_until_ge(pong, self.next);
        }
    }

    /// One round trip.
    #[inline]
    pub fn round_trip(&mut self) {
        self.next = self.next.wrapping_add(1);
        self.ping.set(self.next);
        self.pong.wait_ge(self.next);
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.wake_any(self.next.wrapping_add(1));
        if let Some(p) = self.partner.take() {
            p.join().unwrap();
        }
        // Give the calling thread its CPUs back.
        unpin();
    }
}

/// Round trips a warm ping-pong runs before it is measured.
pub const WARMUP_ROUND_TRIPS: u32 = 200;

/// Round-trip samples (ns) of `make` for `budget` after `warmup` round trips.
pub fn pingpong(make: Make, placement: Placement, budget: Duration, warmup: u32) -> Vec<u64> {
    let mut pp = PingPong::start(make, placement);
    for _ in 0..warmup {
        pp.round_trip();
    }
    sample_batches_for(
        budget,
        2_000_000 / crate::ROUND_TRIP_BATCH as usize,
        crate::ROUND_TRIP_BATCH,
        || pp.round_trip(),
    )
}

/// Operations per timed batch of the notify scenario (amortises the clock reads).
pub const NOTIFY_BATCH: u32 = 1_000;

/// Samples of ns per call of `f` (given a growing counter) for `budget`, each the
/// mean over a batch of [`NOTIFY_BATCH`] calls. `f` is inlined into the timed loop,
/// as a notify is in a program that calls it: through a `dyn FnMut` every call paid
/// an indirect call (~3 ns here), as much as a whole uncontended WaitCell notify,
/// which hid the mechanisms' own costs and their ratios.
pub fn per_call_ns(budget: Duration, mut f: impl FnMut(u32)) -> Vec<f64> {
    let mut i = 0u32;
    sample_for(budget, 100_000, || {
        // A local counter stays in a register; the captured one went through
        // memory on every call, a store-to-load chain that the loop carried.
        let mut j = i;
        for _ in 0..NOTIFY_BATCH {
            j = j.wrapping_add(1);
            f(j);
        }
        i = j;
    })
    .into_iter()
    .map(|ns| ns as f64 / f64::from(NOTIFY_BATCH))
    .collect()
}

/// Samples of ns per store and `atomic_wait::wake_one` of a word nobody waits on
/// (each one a system call).
pub fn atomic_wait_wakes(budget: Duration) -> Vec<f64> {
    let aw = AtomicU32::new(0);
    per_call_ns(budget, |i| {
        aw.store(i, Ordering::Release);
        atomic_wait::wake_one(&aw);
    })
}

/// Cost of one notify with nobody waiting, per mechanism: samples of ns per op.
pub fn notify_costs(budget: Duration) -> Vec<(String, Vec<f64>)> {
    // The `plain-store` row is the floor: a store and the loop around it.
    let mut out = Vec::new();
    let plain = AtomicU32::new(0);
    out.push((
        "plain-store".to_string(),
        per_call_ns(budget, |i| {
            plain.store(std::hint::black_box(i), Ordering::Release)
        }),
    ));
    let cell = mwait::WaitCell::new(0);
    // Park once so that the process takes the asymmetric-barrier path (as any
    // process that has ever parked a waiter does).
    // (It also sets the cell's FENCED bit; the first store, finding nobody parked,
    // clears it, as in any program whose waiter left.)
    let park_now = mwait::WaitPolicy::new().backend(mwait::Backend::Futex);
    let soon = std::time::Instant::now() + Duration::from_millis(1);
    let _ = cell.wait_until_deadline_with(|v| v == u32::MAX, soon, &park_now);
    out.push((
        "waitcell".to_string(),
        per_call_ns(budget, |i| std::hint::black_box(&cell).store(i)),
    ));
    let futex = crate::impls::Futex::default();
    out.push(("futex".to_string(), per_call_ns(budget, |i| futex.set(i))));
    out.push(("atomic-wait".to_string(), atomic_wait_wakes(budget)));
    let cv = std::sync::Condvar::new();
    out.push((
        "std-condvar".to_string(),
        per_call_ns(budget, |_| cv.notify_one()),
    ));
    let pcv = parking_lot::Condvar::new();
    out.push((
        "parking-lot".to_string(),
        per_call_ns(budget, |_| {
            pcv.notify_one();
        }),
    ));
    let sleeper = thread::spawn(|| thread::sleep(Duration::from_millis(1)));
    let handle = sleeper.thread().clone();
    out.push(("park".to_string(), per_call_ns(budget, |_| handle.unpark())));
    sleeper.join().unwrap();
    let parker = crossbeam_utils::sync::Parker::new();
    let unparker = parker.unparker().clone();
    out.push((
        "crossbeam-parker".to_string(),
        per_call_ns(budget, |_| unparker.unpark()),
    ));
    out
}

/// What a slow-producer scenario measured.
#[derive(Clone, Debug, Default)]
pub struct SlowProducer {
    /// CPU time of the waiter thread per second of wall time.
    pub waiter_cpu: f64,
    /// Wake latencies (store to waiter running), ns.
    pub wake_ns: Vec<u64>,
    /// For each wake of `wake_ns`: whether the waiter ran on the CPU the producer
    /// stored from. The scheduler's choice, not the mechanism's: on the 2-vCPU VM a
    /// parked waiter woken onto the producer's CPU runs ~2.5 µs after the store, one
    /// woken on the other CPU (preempting a compute worker there) ~9 µs, and the
    /// choice tends to stick for a whole round.
    pub on_producer_cpu: Vec<bool>,
}

impl SlowProducer {
    /// The wake latencies of the wakes on the producer's CPU (`true`) or elsewhere.
    pub fn wakes_where(&self, on_producer_cpu: bool) -> Vec<u64> {
        self.wake_ns
            .iter()
            .zip(&self.on_producer_cpu)
            .filter(|(_, &same)| same == on_producer_cpu)
            .map(|(&w, _)| w)
            .collect()
    }

    /// The share of the wakes that ran on the producer's CPU.
    pub fn share_on_producer_cpu(&self) -> f64 {
        let same = self.on_producer_cpu.iter().filter(|&&s| s).count();
        same as f64 / self.on_producer_cpu.len().max(1) as f64
    }

    /// The wake p50 of the wakes on the producer's CPU (`true`) or elsewhere; NaN
    /// unless that placement made at least a fifth of the wakes and 50 of them.
    pub fn p50_where(&self, on_producer_cpu: bool) -> f64 {
        let mut w = self.wakes_where(on_producer_cpu);
        if w.len() < 50 || w.len() * 5 < self.wake_ns.len() {
            return f64::NAN;
        }
        crate::stats(&mut w).p50
    }
}

/// A producer that sleeps `gap` between stores and a waiter that waits for each.
pub fn slow_producer(make: Make, gap: Duration, duration: Duration) -> SlowProducer {
    slow_producer_pinned(make, gap, duration, None)
}

/// Two [`slow_producer_pinned`] pairs at the same time: `beside`'s in a thread of its
/// own, `make`'s on the calling thread, its stores half a `gap` after the other's.
/// Returns `(make's, beside's)`. Both waiters are awake a few % of the time each, so
/// they rarely meet, and whatever the host's wake-up path costs in those seconds it
/// costs both: the way to compare two waiters' CPU times on a machine whose wake-ups
/// move with its neighbours' load.
pub fn slow_producers_beside(
    make: Make,
    beside: Make,
    gap: Duration,
    duration: Duration,
    pins: Option<(usize, usize)>,
) -> (SlowProducer, SlowProducer) {
    let other = thread::spawn(move || slow_producer_pinned(beside, gap, duration, pins));
    thread::sleep(gap / 2);
    let mine = slow_producer_pinned(make, gap, duration, pins);
    let theirs = other.join().expect("the pair beside does not panic");
    (mine, theirs)
}

/// `make`'s waiter CPU over `beside`'s, from two runs of [`slow_producers_beside`]:
/// one with `make`'s pair on the calling thread, started half a gap after the
/// other's, and one the other way round. The geometric mean of the two runs' ratios.
///
/// Unpinned, the pair started second pays more per wake, whatever its mechanism:
/// on the 2-vCPU guest a futex waiter beside a futex waiter read 0.95–2.72x started
/// second and 0.72–0.88x started first, six runs of each in turns
/// (`mwait-experiments long-wait-trace unpinned 12 160 1000 futex futex`; pinned,
/// 0.96–1.24x and 0.99–2.06x). A bias that multiplies one run's ratio divides the
/// other's, and the mean of the two cancels it.
pub fn slow_producers_both_ways(
    make: Make,
    beside: Make,
    gap: Duration,
    duration: Duration,
    pins: Option<(usize, usize)>,
) -> f64 {
    let (m, b) = slow_producers_beside(make, beside, gap, duration, pins);
    let second = m.waiter_cpu / b.waiter_cpu;
    let (b, m) = slow_producers_beside(beside, make, gap, duration, pins);
    let first = m.waiter_cpu / b.waiter_cpu;
    (second * first).sqrt()
}

/// [`slow_producer`] with the producer (the calling thread) and the waiter pinned
/// to the CPUs `(producer, waiter)`, for experiments that take the scheduler's
/// choice of CPU out of a wake-up latency.
pub fn slow_producer_pinned(
    make: Make,
    gap: Duration,
    duration: Duration,
    pins: Option<(usize, usize)>,
) -> SlowProducer {
    slow_producer_paced(make, duration, pins, || thread::sleep(gap))
}

/// [`slow_producer_pinned`] with the producer's idle time between two stores
/// spent by `pace`.
pub fn slow_producer_paced(
    make: Make,
    duration: Duration,
    pins: Option<(usize, usize)>,
    mut pace: impl FnMut(),
) -> SlowProducer {
    let sig: Arc<dyn Signal> = Arc::from(make());
    let stamp = Arc::new(AtomicU64::new(0));
    let producer_cpu = Arc::new(AtomicUsize::new(usize::MAX));
    let stop = Arc::new(AtomicBool::new(false));
    let epoch = Instant::now();
    let waiter = {
        let (sig, stamp, stop) = (sig.clone(), stamp.clone(), stop.clone());
        let producer_cpu = producer_cpu.clone();
        thread::spawn(move || {
            if let Some((_, cpu)) = pins {
                pin_to_cpu(cpu);
            }
            let cpu0 = thread_cpu_time();
            let t0 = Instant::now();
            let mut wake = Vec::new();
            let mut same = Vec::new();
            let mut i = 0u32;
            loop {
                i = sig.wait_ge(i + 1);
                let now = duration_ns(epoch.elapsed());
                let cpu = current_cpu();
                if stop.load(Ordering::Acquire) {
                    break;
                }
                wake.push(now.saturating_sub(stamp.load(Ordering::Acquire)));
                same.push(cpu != usize::MAX && cpu == producer_cpu.load(Ordering::Acquire));
            }
            let cpu = (thread_cpu_time() - cpu0).as_secs_f64() / t0.elapsed().as_secs_f64();
            SlowProducer {
                waiter_cpu: cpu,
                wake_ns: wake,
                on_producer_cpu: same,
            }
        })
    };
    if let Some((cpu, _)) = pins {
        pin_to_cpu(cpu);
    }
    let end = Instant::now() + duration;
    let mut i = 0u32;
    while Instant::now() < end {
        pace();
        i = i.wrapping_add(1);
        producer_cpu.store(current_cpu(), Ordering::Release);
        stamp.store(duration_ns(epoch.elapsed()), Ordering::Release);
        sig.set(i);
    }
    stop.store(true, Ordering::Release);
    sig.set(i.wrapping_add(1));
    if pins.is_some() {
        unpin();
    }
    waiter.join().unwrap()
}

/// The interference experiment: compute workers filling the CPUs (in a separate
/// process), beside a slow producer/waiter pair of `make`. Returns (worker
/// throughput, pair measurements). As many workers as the calling thread's mask
/// holds CPUs: call it from an unpinned thread.
pub fn interference(make: Make, gap: Duration, duration: Duration) -> (f64, SlowProducer) {
    let workers = mwait_support::affinity_cpus();
    let handle = thread::spawn(move || compute_throughput_process(workers, duration));
    let pair = slow_producer(make, gap, duration);
    (handle.join().unwrap(), pair)
}

/// A barrier the scenario can drive.
pub trait BarrierLike: Send + Sync {
    /// Waits for both threads.
    fn wait(&self);
}

impl BarrierLike for mwait::Barrier {
    fn wait(&self) {
        mwait::Barrier::wait(self);
    }
}

impl BarrierLike for std::sync::Barrier {
    fn wait(&self) {
        std::sync::Barrier::wait(self);
    }
}

/// A sense-reversing spin barrier for two threads.
#[derive(Default)]
pub struct SpinBarrier {
    count: AtomicU32,
    sense: AtomicBool,
}

impl BarrierLike for SpinBarrier {
    fn wait(&self) {
        let sense = self.sense.load(Ordering::Acquire);
        if self.count.fetch_add(1, Ordering::AcqRel) == 1 {
            self.count.store(0, Ordering::Relaxed);
            self.sense.store(!sense, Ordering::Release);
        } else {
            while self.sense.load(Ordering::Acquire) == sense {
                std::hint::spin_loop();
            }
        }
    }
}

/// Busy work of about `units` × a few ns.
#[inline]
pub fn work(units: u32) {
    let mut x = 1u64;
    for _ in 0..units {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
}

/// A constructor of a fresh two-party barrier.
pub type MakeBarrier = fn() -> Arc<dyn BarrierLike>;

/// The barriers of the barrier scenario by report name, each with its constructor.
pub fn barriers() -> [(&'static str, MakeBarrier); 3] {
    [
        ("waitcell", || Arc::new(mwait::Barrier::new(2))),
        ("std-barrier", || Arc::new(std::sync::Barrier::new(2))),
        ("spin", || Arc::new(SpinBarrier::default())),
    ]
}

/// mwmon's case 2: two threads with asymmetric work meet at a barrier `episodes`
/// times; returns the total time.
pub fn barrier_episodes(b: Arc<dyn BarrierLike>, episodes: u32) -> Duration {
    let [first, rest] = barrier_episodes_split(b, episodes, 0);
    first + rest
}

/// [`barrier_episodes`] timed in two parts: the first `first` episodes and the
/// `episodes - first` after them. Both threads are pinned before their first wait.
pub fn barrier_episodes_split(b: Arc<dyn BarrierLike>, episodes: u32, first: u32) -> [Duration; 2] {
    const LIGHT: u32 = 200;
    const HEAVY: u32 = 600;
    let other = {
        let b = b.clone();
        thread::spawn(move || {
            pin_to_cpu(1);
            for _ in 0..episodes {
                work(LIGHT);
                b.wait();
            }
        })
    };
    pin_to_cpu(0);
    let episode = || {
        work(HEAVY);
        b.wait();
    };
    let t0 = Instant::now();
    (0..first.min(episodes)).for_each(|_| episode());
    let t1 = Instant::now();
    (first.min(episodes)..episodes).for_each(|_| episode());
    let took = [t1 - t0, t1.elapsed()];
    other.join().unwrap();
    unpin();
    took
}

/// A scenario run for a time budget that returns its samples in ns.
pub type Timed = fn(Duration) -> Vec<u64>;

/// The mechanisms of the async ping-pong by report name, each with its
/// [`async_pingpong`].
pub fn async_mechanisms() -> [(&'static str, Timed); 2] {
    [
        ("waitcell-async", async_pingpong::<crate::impls::AsyncCell>),
        ("tokio-notify", async_pingpong::<crate::impls::TokioNotify>),
    ]
}

/// Async ping-pong round trips of the mechanism `S` between two tokio tasks on a
/// two-worker runtime, for `budget`: one task raises `ping` and awaits `pong`, the
/// other answers each ping.
pub fn async_pingpong<S: AsyncSignal>(budget: Duration) -> Vec<u64> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async move {
        let ping = Arc::new(S::default());
        let pong = Arc::new(S::default());
        let partner = {
            let (ping, pong) = (ping.clone(), pong.clone());
            tokio::spawn(async move {
                let mut i = 0u32;
                loop {
                    i = i.wrapping_add(1);
                    if ping.reach(i).await == u32::MAX {
                        return;
                    }
                    pong.set(i);
                }
            })
        };
        let mut out = Vec::new();
        let end = Instant::now() + budget;
        let mut i = 0u32;
        while Instant::now() < end {
            i += 1;
            let t0 = Instant::now();
            ping.set(i);
            pong.reach(i).await;
            out.push(duration_ns(t0.elapsed()));
        }
        ping.set(u32::MAX);
        partner.await.unwrap();
        out
    })
}

/// Up to `n` samples of `pp`'s round trips within `budget`, each the mean of
/// [`crate::ROUND_TRIP_BATCH`] round trips.
pub fn round_trips(pp: &mut PingPong, budget: Duration, n: usize) -> Vec<u64> {
    sample_batches_for(budget, n, crate::ROUND_TRIP_BATCH, || pp.round_trip())
}

/// What [`interleaved_with_pause`] measured.
pub struct Interleaved {
    /// The mechanism's p50 over all its slices.
    pub steady_p50: f64,
    /// The mechanism's samples over all its slices.
    pub samples: usize,
    /// The PAUSE ping-pong's p50 over all its slices.
    pub pause_p50: f64,
    /// The median of the PAUSE slices' p50s.
    pub pause_slice_p50: f64,
    /// The median over slice pairs of the mechanism's p50 over the PAUSE loop's.
    pub median_ratio: f64,
}

/// The most samples one slice keeps (a 10 ms slice holds far fewer).
const SLICE_SAMPLES_MAX: usize = 1_000_000;

/// One slice of [`interleaved_with_pause`].
pub const SLICE: Duration = Duration::from_millis(10);

/// `budget` of slices, alternately of a PAUSE ping-pong and of `pp`, whose threads
/// run on `pins` (`None`: where the scheduler puts them). Each PAUSE slice comes
/// before the mechanism's: each ratio compares the two within a few ms. On a
/// virtual machine the host moves the two vCPUs between placements (one core, one
/// cache complex, two) within a fraction of a second, and the round trip of either
/// mechanism moves by up to 8x with it; measured far apart, two mechanisms are
/// compared at different placements as often as not.
///
/// Where `pp` runs on two distinct pinned CPUs and its signals have words (a
/// `WaitCell`'s value), the PAUSE slice runs on `pp`'s own threads and words
/// ([`PingPong::set_pause`]): the round trip depends on where its two lines live as
/// well as on the CPUs (on the 16-vCPU Intel guest a `WaitCell::store` ping-pong on
/// one pair of cells read 23–30 ns per round trip below a bare-store one on another
/// pair in two processes and 47 ns above it in a third, of about 320 ns:
/// `hop_cost parts`), so a
/// baseline on other memory compared the mechanism with a luckier or unluckier
/// pair of lines in every process. Otherwise the PAUSE slice is a fresh ping-pong
/// on CPUs 0 and 1 while `pp`'s partner waits, parked or spinning as the mechanism
/// does. That pair is pinned whatever `pins` says: a fresh unpinned pair often
/// starts both threads on one CPU (a new thread starts beside its parent) and
/// spends a whole 10 ms slice there at milliseconds per round trip, which is no
/// baseline; so an unpinned mechanism is compared with the best PAUSE placement.
pub fn interleaved_with_pause(
    pp: &mut PingPong,
    pins: Option<(usize, usize)>,
    budget: Duration,
) -> Interleaved {
    let pause = crate::impls::by_name("pause").expect("the PAUSE ping-pong is a known mechanism");
    let end = std::time::Instant::now() + budget;
    let (mut mine_all, mut pause_all) = (Vec::new(), Vec::new());
    let (mut ratios, mut pause_p50s) = (Vec::new(), Vec::new());
    let same_memory = matches!(pins, Some((a, b)) if a != b) && pp.has_words();
    loop {
        let mut theirs = if same_memory {
            pp.set_pause(true);
            let s = sample_batches_for(SLICE, SLICE_SAMPLES_MAX, crate::ROUND_TRIP_BATCH, || {
                pp.pause_round_trip()
            });
            pp.set_pause(false);
            s
        } else {
            let mut p = PingPong::start_with(pause, Some((0, 1)), Duration::ZERO);
            let s = round_trips(&mut p, SLICE, SLICE_SAMPLES_MAX);
            drop(p);
            // Dropping the PAUSE ping-pong unpinned this thread: back to `pins`.
            if let Some((cpu, _)) = pins {
                mwait_support::pin_to_cpu(cpu);
            }
            s
        };
        let mut mine = round_trips(pp, SLICE, SLICE_SAMPLES_MAX);
        let p = crate::stats(&mut theirs).p50;
        pause_p50s.push(p);
        ratios.push(crate::stats(&mut mine).p50 / p);
        mine_all.extend(mine);
        pause_all.extend(theirs);
        if std::time::Instant::now() >= end {
            break;
        }
    }
    let samples = mine_all.len();
    Interleaved {
        steady_p50: crate::stats(&mut mine_all).p50,
        samples,
        pause_p50: crate::stats(&mut pause_all).p50,
        pause_slice_p50: crate::median(&pause_p50s),
        median_ratio: crate::median(&ratios),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mwait::WaitCell;

    /// The `set`s of the mechanism per signal, in the order `PingPong` builds them
    /// (ping, then pong): the test's one ping-pong is the only user.
    static SETS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
    static BUILT: AtomicUsize = AtomicUsize::new(0);

    /// A cell that counts the mechanism's `set`s, so that the test sees which rounds
    /// went through the mechanism and which through the words alone.
    struct Counted {
        cell: WaitCell,
        id: usize,
    }

    impl Signal for Counted {
        fn set(&self, v: u32) {
            SETS[self.id].fetch_add(1, Ordering::Relaxed);
            self.cell.store(v);
        }
        fn wait_ge(&self, v: u32) -> u32 {
            self.cell.wait_until(|x| x >= v)
        }
        fn word(&self) -> Option<&AtomicU32> {
            Some(self.cell.as_atomic())
        }
    }

    fn counted() -> Box<dyn Signal> {
        Box::new(Counted {
            cell: WaitCell::new(0),
            id: BUILT.fetch_add(1, Ordering::Relaxed),
        })
    }

    #[test]
    fn pause_and_atomic_rounds_run_on_the_words_and_switch_back() {
        let mut pp = PingPong::start_with(counted, Some((0, 1)), Duration::ZERO);
        assert!(pp.has_words());
        let sets = || {
            (
                SETS[0].load(Ordering::Relaxed),
                SETS[1].load(Ordering::Relaxed),
            )
        };
        for _ in 0..100 {
            pp.round_trip();
        }
        assert_eq!(sets(), (100, 100));
        pp.set_pause(true);
        for _ in 0..1000 {
            pp.pause_round_trip();
        }
        // Only the switch's ping went through the mechanism, and the partner
        // answered it in one mode or the other.
        let (ping, pong) = sets();
        assert_eq!(ping, 101);
        assert!(pong == 100 || pong == 101, "{pong}");
        pp.set_pause(false);
        for _ in 0..100 {
            pp.round_trip();
        }
        let (ping, pong) = sets();
        assert_eq!(ping, 202);
        assert!((200..=202).contains(&pong), "{pong}");
        assert_eq!(pp.next, 1202);
        assert_eq!(
            pp.pong.word().map(|w| w.load(Ordering::Acquire)),
            Some(1202)
        );
        // The same on the words through `mwait::atomic`, and a drop that finds
        // the partner waiting that way.
        pp.set_rounds(Rounds::Atomic);
        for _ in 0..1000 {
            pp.atomic_round_trip();
        }
        let (ping, _) = sets();
        assert_eq!(ping, 203);
        assert_eq!(
            pp.pong.word().map(|w| w.load(Ordering::Acquire)),
            Some(2203)
        );
        std::thread::sleep(Duration::from_millis(20));
        drop(pp);
    }
}
