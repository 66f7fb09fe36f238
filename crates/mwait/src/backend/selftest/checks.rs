//! The waiter's side of the self-test: the tries and checks (b), (c) and (a).

use super::helper::{armed, Mailbox};
use super::*;
use crate::backend::HwWake;
use crate::sys::ThreadCpus;

/// One try as the waiter saw it.
struct Try {
    /// When the wait began and when it returned.
    begun_ns: u64,
    ended_ns: u64,
    wake: HwWake,
    /// The helper's timestamps around its store, if it stored.
    store_ns: Option<(u64, u64)>,
}

impl Try {
    fn lasted_ns(&self) -> u64 {
        self.ended_ns.saturating_sub(self.begun_ns)
    }
}

pub(super) struct Tester<'a, W> {
    pub(super) hw: &'a W,
    pub(super) plan: Plan,
    pub(super) mailbox: &'a Mailbox,
    pub(super) next_id: u64,
}

impl<W: HardwareWait> Tester<'_, W> {
    /// Announces try `self.next_id` to the helper.
    fn announce(&self, store_after_ns: u64, from_begin: bool) {
        let mb = self.mailbox;
        mb.word.0.store(armed(self.next_id), Ordering::Relaxed);
        mb.store_after_ns.store(store_after_ns, Ordering::Relaxed);
        mb.from_begin.store(from_begin, Ordering::Relaxed);
        mb.slack_ns
            .store(self.plan.store_slack_ns(), Ordering::Relaxed);
        let cpu = current_cpu().unwrap_or(usize::MAX);
        mb.waiter_cpu.store(cpu, Ordering::Relaxed);
        mb.request.store(self.next_id, Ordering::Release);
    }

    /// One wait with timer `timer_ns`. With `store_after_ns`, a store try: the wait
    /// begins once the helper has acknowledged the try (`None` if it did not within
    /// [`Plan::watchdog_ns`]), and the helper stores that long after the wait began
    /// if it saw the start in time. Without, a no-store try, ended by the watchdog's
    /// store at the latest.
    fn attempt(&mut self, timer_ns: u64, store_after_ns: Option<u64>) -> Option<Try> {
        self.next_id += 1;
        let (id, mb) = (self.next_id, self.mailbox);
        let value = armed(id);
        self.announce(
            store_after_ns.unwrap_or(self.plan.watchdog_ns()),
            store_after_ns.is_some(),
        );
        let mut begun_ns = now_ns();
        if store_after_ns.is_some() {
            // The helper must be running: wait for its acknowledgement (it then waits
            // for this thread's start, so this thread may yield meanwhile).
            let give_up = begun_ns + self.plan.watchdog_ns();
            let mut round = 0;
            while mb.acked.load(Ordering::Acquire) != id {
                if now_ns() >= give_up {
                    // Void. The helper's store for this try, if any, now fails.
                    mb.word.0.store(value + 1, Ordering::Relaxed);
                    return None;
                }
                pause(&mut round);
            }
            begun_ns = now_ns();
            mb.begun_ns.store(begun_ns, Ordering::Relaxed);
            mb.begun.store(id, Ordering::Release);
        }
        let wake = self
            .hw
            .wait_episode(&mb.word.0, value, begun_ns + timer_ns, CState::C0_1);
        let ended_ns = now_ns();
        let cancelled = mb
            .word
            .0
            .compare_exchange(value, value + 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        let store_ns = if cancelled {
            None
        } else {
            let mut round = 0;
            while mb.stored.load(Ordering::Acquire) != id {
                pause(&mut round);
            }
            Some((
                mb.store_t0_ns.load(Ordering::Relaxed),
                mb.store_t1_ns.load(Ordering::Relaxed),
            ))
        };
        Some(Try {
            begun_ns,
            ended_ns,
            wake,
            store_ns,
        })
    }

    /// Checks (b), (c) and (a), in that order; the first that fails ends the test.
    /// `t0` is when the test began, for [`Report::cost_ns`].
    pub(super) fn checks(mut self, t0: u64) -> Result<Report, String> {
        // Checks (b) and (c): no store (bar the watchdog); short and long waits
        // interleaved, so that a burst of load hits both alike.
        let mut timers = self.timer_tries();
        let (m_short, m_long) = timers.check_timer(self.plan)?;
        timers.check_early_return()?;
        // Check (a): the helper stores `short_ns` into a wait of `long_ns`.
        check_two_cpus()?;
        let mut stores = self.store_tries();
        let m_wake = self.check_store_wake(&mut stores, m_long)?;
        Ok(Report {
            timer_medians_ns: (m_short, m_long),
            early: (timers.early, timers.valid()),
            wake_median_ns: m_wake,
            store_tries: (stores.latencies.len(), stores.attempts),
            cost_ns: now_ns() - t0,
        })
    }

    /// The no-store waits of checks (b) and (c): [`TIMER_TRIES`] of each timer,
    /// short and long alternating, in at most `2 * TIMER_TRIES * ATTEMPTS_PER_TRY`
    /// attempts.
    fn timer_tries(&mut self) -> TimerTries {
        let plan = self.plan;
        let mut tries = TimerTries::default();
        while (tries.short.len() < TIMER_TRIES || tries.long.len() < TIMER_TRIES)
            && tries.attempts < 2 * TIMER_TRIES * ATTEMPTS_PER_TRY
        {
            tries.attempts += 1;
            let timer_ns =
                if tries.short.len() <= tries.long.len() && tries.short.len() < TIMER_TRIES {
                    plan.short_ns
                } else {
                    plan.long_ns()
                };
            let Some(t) = self.attempt(timer_ns, None) else {
                continue;
            };
            // `Yield` (the kernel tier: the scheduler wants the CPU) is no verdict on
            // the monitor.
            if t.wake == HwWake::Yield {
                continue;
            }
            if t.lasted_ns() < timer_ns / 2 {
                tries.early += 1;
            }
            if timer_ns == plan.short_ns {
                tries.short.push(t.lasted_ns());
            } else {
                tries.long.push(t.lasted_ns());
            }
        }
        tries
    }

    /// The tries of check (a), until [`STORE_TRIES`] are valid or
    /// [`Plan::store_budget_ns`] has passed.
    fn store_tries(&mut self) -> StoreTries {
        let give_up = now_ns() + self.plan.store_budget_ns();
        let mut tries = StoreTries::default();
        while tries.latencies.len() < STORE_TRIES && now_ns() < give_up {
            tries.attempts += 1;
            if let Some(latency) = self.store_try(&mut tries.voids) {
                tries.latencies.push(latency);
            }
        }
        tries
    }

    /// One try of check (a): the latency from the helper's store to the end of the
    /// wait, or `None` with the reason counted in `voids` when the try is void.
    fn store_try(&mut self, voids: &mut Voids) -> Option<u64> {
        let plan = self.plan;
        let Some(t) = self.attempt(plan.long_ns(), Some(plan.short_ns)) else {
            voids.no_ack += 1;
            return None;
        };
        let Some((s0, s1)) = t.store_ns else {
            if self.mailbox.skipped.load(Ordering::Acquire) == self.next_id {
                voids.helper_late += 1;
            } else {
                voids.ended_first += 1;
            }
            return None;
        };
        if t.wake == HwWake::Yield {
            voids.yielded += 1;
        } else if s1 - s0 > plan.store_slack_ns() {
            voids.wide_store += 1;
        } else if !(t.begun_ns..=t.begun_ns + plan.store_late_ns()).contains(&s0) {
            voids.late_store += 1;
        } else if t.ended_ns < s0 {
            voids.ended_first += 1;
        } else {
            return Some(t.ended_ns - s0);
        }
        None
    }

    /// Check (a)'s verdict on `tries`: the median latency from store to wake, or why
    /// the check failed or was inconclusive. `m_long` is check (b)'s long median.
    fn check_store_wake(&self, tries: &mut StoreTries, m_long: u64) -> Result<u64, String> {
        let plan = self.plan;
        if tries.latencies.len() < MIN_VALID_TRIES {
            let (attempts_a, voids) = (tries.attempts, &tries.voids);
            return Err(format!(
                "check (a) store wake: inconclusive: in {attempts_a} attempts over {} ms \
                 only {} had the storing thread running with the waiter and storing during \
                 the wait (an overloaded machine), {MIN_VALID_TRIES} needed; void: {voids}; \
                 the helper {} on a CPU of its own",
                plan.store_budget_ns() / 1_000_000,
                tries.latencies.len(),
                if self.mailbox.apart.load(Ordering::Relaxed) {
                    "ran"
                } else {
                    "did not run"
                }
            ));
        }
        let valid = tries.latencies.len();
        let m_wake = median(&mut tries.latencies);
        let wake_within_ns = plan.wake_within_ns(m_long);
        if m_wake > wake_within_ns {
            return Err(format!(
                "check (a) store wake: a wait with a {} ns timer ended {m_wake} ns after \
                 another thread's store to its line (median of {valid} tries; at most \
                 {wake_within_ns} ns allowed): it does not wake on stores",
                plan.long_ns(),
            ));
        }
        Ok(m_wake)
    }
}

/// The no-store waits of checks (b) and (c).
#[derive(Default)]
struct TimerTries {
    /// How long the waits with the short timer lasted, in ns.
    short: Vec<u64>,
    /// How long the waits with the long timer lasted, in ns.
    long: Vec<u64>,
    /// Waits that ended before half their timer.
    early: usize,
    /// Attempts made, void ones included.
    attempts: usize,
}

impl TimerTries {
    /// The waits that count (not void, not ended by a `Yield`).
    fn valid(&self) -> usize {
        self.short.len() + self.long.len()
    }

    /// Check (b)'s verdict: the medians of the short and the long waits, or why the
    /// check failed or was inconclusive.
    fn check_timer(&mut self, plan: Plan) -> Result<(u64, u64), String> {
        if self.short.len() < MIN_VALID_TRIES || self.long.len() < MIN_VALID_TRIES {
            let (tried, attempts) = (self.valid(), self.attempts);
            return Err(format!(
                "check (b) timer: inconclusive: {tried} of {attempts} waits ended by a \
                 yield to the scheduler"
            ));
        }
        let (m_short, m_long) = (median(&mut self.short), median(&mut self.long));
        if m_long < plan.long_ns() / 2 || m_long < m_short + plan.min_timer_gap_ns() {
            return Err(format!(
                "check (b) timer: waits of {} ns and {} ns with no store lasted {m_short} ns \
                 and {m_long} ns (medians of {} and {}): not in proportion to their timer \
                 (the long one must last at least half its timer and {} ns more than the \
                 short one)",
                plan.short_ns,
                plan.long_ns(),
                self.short.len(),
                self.long.len(),
                plan.min_timer_gap_ns()
            ));
        }
        Ok((m_short, m_long))
    }

    /// Check (c)'s verdict: a quarter of the waits at most returned early (with ten
    /// tries, two).
    fn check_early_return(&self) -> Result<(), String> {
        let (early, tried) = (self.early, self.valid());
        if early * 4 > tried {
            return Err(format!(
                "check (c) early return: {early} of {tried} waits with no store returned \
                 before half their timer (at most a quarter may)"
            ));
        }
        Ok(())
    }
}

/// Check (a) cannot be made in a process confined to one CPU, where no other thread
/// can store during a wait (nor can a monitor help).
fn check_two_cpus() -> Result<(), String> {
    if ThreadCpus::of_this_thread().is_some_and(|c| c.count() <= 1) {
        return Err(
            "check (a) store wake: cannot be measured: this process may run on \
             one CPU only, where no other thread can store during a wait (nor can a \
             monitor help)"
                .to_string(),
        );
    }
    Ok(())
}

/// The tries of check (a).
#[derive(Default)]
struct StoreTries {
    /// The latency from the helper's store to the end of the wait of each valid try,
    /// in ns.
    latencies: Vec<u64>,
    /// Attempts made, void ones included.
    attempts: usize,
    /// Why the void ones were void.
    voids: Voids,
}

/// Why store tries were void, for the message of an inconclusive check (a).
#[derive(Default)]
struct Voids {
    /// The helper did not acknowledge the try in time.
    no_ack: u32,
    /// The helper saw the wait's start too late, and did not store.
    helper_late: u32,
    /// The wait ended before the store (an early return, or a no-op).
    ended_first: u32,
    /// The helper's timestamps around its store were too far apart.
    wide_store: u32,
    /// The store came too late in the wait.
    late_store: u32,
    /// The wait ended with `Yield`.
    yielded: u32,
}

impl fmt::Display for Voids {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} not acknowledged, {} with the helper late at the start, {} ended before \
             the store, {} with the store preempted, {} stored too late, {} yielded",
            self.no_ack,
            self.helper_late,
            self.ended_first,
            self.wide_store,
            self.late_store,
            self.yielded
        )
    }
}
