//! [`WaitPolicy`], the knobs of one wait, and [`Resolved`], what they come to once the
//! process's [`Selection`](crate::Selection) fills in the automatic ones.

use crate::backend::kind::Backend;
use crate::backend::spin::SpinPause;
use crate::backend::{CState, HwTier};
use crate::select::{backend_hw, for_waits, ForcedTier};
use crate::sys::clock::duration_ns;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Duration;

/// A budget that is either the detected default or fixed by the caller.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Budget {
    Auto,
    Fixed(u64),
}

/// How a wait climbs the tier ladder: how long it spins, how long it waits in
/// hardware, whether it then parks in the kernel, and which backend it uses.
///
/// Budgets are in *time*, not iterations (PAUSE costs 10 cycles on some CPUs and 140 on
/// others). [`WaitPolicy::new`] (also `Default`) leaves every knob on *auto*: the
/// values come from detection when a wait starts
/// ([`Selection::defaults`](crate::Selection::defaults)): no spin at all when the
/// process can use only one CPU (from the moment its waits read the count, which
/// they do at the first spin that catches its partner, or once spins that miss
/// come eight times within 100 ms: `docs/default-policy.md`), a shorter spin under
/// a hypervisor, and a per-cell adaptive spin that stops spinning on cells where
/// spinning keeps failing.
///
/// A policy can be set per cell ([`WaitCell::with_policy`](crate::WaitCell::with_policy))
/// or per call (`wait_*_with`).
///
/// # Examples
///
/// ```
/// use mwait::WaitPolicy;
/// use std::time::Duration;
/// // Latency-critical: spin up to 20 µs, skip the hardware tier, then park.
/// let p = WaitPolicy::new()
///     .spin(Duration::from_micros(20))
///     .hardware(Duration::ZERO);
/// assert_eq!(p.spin_budget(), Some(Duration::from_micros(20)));
/// assert!(p.parks());
/// ```
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct WaitPolicy {
    spin: Budget,
    hw: Budget,
    park: bool,
    adaptive: bool,
    cstate: CState,
    backend: Option<Backend>,
    handoff: bool,
    apart: Option<bool>,
    /// Whether any of the fields above differs from [`WaitPolicy::new`]'s: a function
    /// of them, kept by every setter, so that equality and hashing are unchanged and
    /// a wait tells the default policy by one flag (see [`WaitPolicy::resolve`]).
    tuned: bool,
}

impl fmt::Debug for WaitPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitPolicy")
            .field("spin", &self.spin)
            .field("hw", &self.hw)
            .field("park", &self.park)
            .field("adaptive", &self.adaptive)
            .field("cstate", &self.cstate)
            .field("backend", &self.backend)
            .field("handoff", &self.handoff)
            .field("apart", &self.apart)
            .finish()
    }
}

impl Default for WaitPolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitPolicy {
    /// Every knob on auto; parks after the budgets; the process's backend.
    pub const fn new() -> WaitPolicy {
        WaitPolicy {
            spin: Budget::Auto,
            hw: Budget::Auto,
            park: true,
            adaptive: true,
            cstate: CState::C0_1,
            backend: None,
            handoff: true,
            apart: None,
            tuned: false,
        }
    }

    /// This policy with [`tuned`](Self::tuned) brought up to date, for every setter
    /// to return.
    const fn retuned(mut self) -> WaitPolicy {
        let d = WaitPolicy::new();
        self.tuned = !(matches!(self.spin, Budget::Auto)
            && matches!(self.hw, Budget::Auto)
            && self.park == d.park
            && self.adaptive == d.adaptive
            && self.cstate as u8 == d.cstate as u8
            && self.backend.is_none()
            && self.handoff == d.handoff
            && self.apart.is_none());
        self
    }

    /// Spin for at most `d` before the next tier (`Duration::ZERO`: never spin).
    /// A fixed spin budget turns the adaptive spin off.
    pub const fn spin(mut self, d: Duration) -> WaitPolicy {
        self.spin = Budget::Fixed(duration_ns(d));
        self.adaptive = false;
        self.retuned()
    }

    /// Wait in hardware (UMWAIT, MWAITX, kernel MWAIT) for at most `d` before parking.
    pub const fn hardware(mut self, d: Duration) -> WaitPolicy {
        self.hw = Budget::Fixed(duration_ns(d));
        self.retuned()
    }

    /// Whether to park (futex) once the budgets are spent. With `false` the waiter
    /// keeps spinning and yielding until the value changes or the deadline passes:
    /// it then occupies a CPU for the whole wait. Only for callers that own their CPUs.
    pub const fn park(mut self, park: bool) -> WaitPolicy {
        self.park = park;
        self.retuned()
    }

    /// Whether the spin budget adapts per cell (on by default with an auto budget).
    pub const fn adaptive(mut self, on: bool) -> WaitPolicy {
        self.adaptive = on;
        self.retuned()
    }

    /// Whether a wait right after this thread woke a parked waiter spins the longer
    /// hand-off budget (on by default): such a wait most likely awaits the woken
    /// thread's answer. A wait that never awaits one, an idle worker waiting for
    /// whoever brings work, turns it off and spins the ordinary budget.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::WaitPolicy;
    /// let idle = WaitPolicy::new().handoff(false);
    /// assert!(!idle.spins_handoff());
    /// assert!(WaitPolicy::new().spins_handoff());
    /// ```
    pub const fn handoff(mut self, on: bool) -> WaitPolicy {
        self.handoff = on;
        self.retuned()
    }

    /// Whether a thread that woke a partner parked on its own CPU may move itself to
    /// another CPU at its next wait (off by default; `None` here leaves it to the
    /// process's `MWAIT_MOVE_APART`, itself off unless set to `1`).
    ///
    /// Two threads that answer each other and that the scheduler put on one CPU
    /// hand that CPU back and forth through the kernel on every round trip, while
    /// another CPU of the process may idle; the kernel's load balancer moves only
    /// threads that wait in a run queue, so it leaves them there. With this on,
    /// such a thread takes its CPU out of its affinity mask, which makes the kernel
    /// migrate it, and puts the mask back at once (`sched_setaffinity` twice, at
    /// most once per 200 µs to 10 ms per thread, never for a thread pinned to one
    /// CPU, nor on a machine with more runnable threads than CPUs). What it costs
    /// the program:
    ///
    /// - a `sched_setaffinity` made by another thread of the program on this thread
    ///   between the two calls is kept (the mask is put back only if it is still the
    ///   narrowed one), but one made from outside between them is indistinguishable
    ///   from ours and is then overwritten;
    /// - on Linux 6.2 and later every successful `sched_setaffinity` saves a user
    ///   mask, so a thread that followed its cpuset's CPUs (a container resized, CPUs
    ///   brought online) stays on the mask it had from then on.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::WaitPolicy;
    /// assert_eq!(WaitPolicy::new().moves_apart(), None);
    /// assert_eq!(WaitPolicy::new().move_apart(true).moves_apart(), Some(true));
    /// ```
    pub const fn move_apart(mut self, on: bool) -> WaitPolicy {
        self.apart = Some(on);
        self.retuned()
    }

    /// This policy's [`move_apart`](Self::move_apart) setting (`None`: the
    /// process's, from `MWAIT_MOVE_APART`).
    pub const fn moves_apart(&self) -> Option<bool> {
        self.apart
    }

    /// Whether waits under this policy take the hand-off spin after a wake.
    pub const fn spins_handoff(&self) -> bool {
        self.handoff
    }

    /// The power state of hardware waits.
    pub const fn cstate(mut self, c: CState) -> WaitPolicy {
        self.cstate = c;
        self.retuned()
    }

    /// The power state from a wake-latency budget: how much later than the store the
    /// waiter may wake ([`CState::for_wake_latency`]). Without it, the default is
    /// [`CState::C0_1`], the fastest wake-up.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::{CState, WaitPolicy};
    /// use std::time::Duration;
    /// let p = WaitPolicy::new().wake_latency(Duration::from_micros(50));
    /// assert_eq!(p.target_cstate(), CState::C1);
    /// ```
    pub const fn wake_latency(self, budget: Duration) -> WaitPolicy {
        self.cstate(CState::for_wake_latency(budget))
    }

    /// Use `backend`'s ladder for these waits instead of the process's choice.
    /// `Backend::Futex` parks at once unless a spin budget is set; `Backend::Spin`
    /// never parks. A hardware backend this machine does not offer (unless forced
    /// with the test-only `MWAIT_UNSAFE_FORCE=1`) is reported once on stderr, and
    /// those waits use the process's backend instead (`MWAIT_STRICT=1` makes it a
    /// panic at the first wait that needs the tier). One that its self-test demoted
    /// is skipped: those waits spin, then park.
    pub const fn backend(mut self, backend: Backend) -> WaitPolicy {
        self.backend = Some(backend);
        self.retuned()
    }

    /// The fixed spin budget, or `None` when it is auto.
    pub const fn spin_budget(&self) -> Option<Duration> {
        match self.spin {
            Budget::Auto => None,
            Budget::Fixed(ns) => Some(Duration::from_nanos(ns)),
        }
    }

    /// The fixed hardware budget, or `None` when it is auto.
    pub const fn hardware_budget(&self) -> Option<Duration> {
        match self.hw {
            Budget::Auto => None,
            Budget::Fixed(ns) => Some(Duration::from_nanos(ns)),
        }
    }

    /// Whether waits park after the budgets.
    pub const fn parks(&self) -> bool {
        self.park
    }

    /// The power state of hardware waits.
    pub const fn target_cstate(&self) -> CState {
        self.cstate
    }

    /// The backend forced by this policy, if any.
    pub const fn forced_backend(&self) -> Option<Backend> {
        self.backend
    }

    /// Whether this policy lets a wait spin before the ladder runs: only with the
    /// adaptive spin on (a fixed budget turns it off: the inline spin is part of the
    /// adaptation), not with a zero spin budget, nor on the futex ladder (which spins
    /// only when asked).
    #[inline(always)]
    pub(crate) const fn allows_inline_spin(&self) -> bool {
        self.is_adaptive() && !matches!(self.backend, Some(Backend::Futex))
    }

    /// Whether waits under this policy adapt their spin: asked for, and with the
    /// automatic budget (a fixed one, zero included, is taken as given).
    #[inline(always)]
    const fn is_adaptive(&self) -> bool {
        self.adaptive && matches!(self.spin, Budget::Auto)
    }

    /// Turns the policy into the numbers one wait uses. The default policy, which
    /// most waits use, resolves the same way for the life of the process: its
    /// result is kept in one small static instead of being rebuilt from the
    /// selection on every wait, whose cache misses would sit on every wait. It is
    /// told by its `tuned` flag, one load: a comparison with `new()` field by field
    /// is some twenty instructions on every wait that enters the ladder. The static
    /// lies on one cache line: a wait that parks after a long sleep misses on each
    /// line it reads.
    ///
    /// Where the process turns out to have one CPU (`detect::process_cpus`, read when
    /// something first needs it), the automatic spin is off from then on: the flag
    /// beside the static says so.
    #[inline]
    pub(crate) fn resolve(&self) -> Resolved {
        self.resolve_in(&DEFAULT.0)
    }

    /// [`WaitPolicy::resolve`] with `line` as the default policy's line (the tests
    /// make their own).
    #[inline(always)]
    fn resolve_in(&self, line: &DefaultLine) -> Resolved {
        if !self.tuned {
            let mut r = *line.resolved.get_or_init(|| self.resolve_uncached(line));
            if line.one_cpu.load(Relaxed) {
                r.spin_ns = 0;
            }
            return r;
        }
        self.resolve_uncached(line)
    }

    /// Whether this policy's automatic spin is off for want of CPUs: an adaptive
    /// policy's once the count is known to be one (`line`; its waits read the count
    /// at their first catch or the run-queue gate's first reading, `ladder/adapt.rs`
    /// and `ladder/load.rs`); a policy that spins without adapting has no gate, and
    /// reads the count here.
    fn one_cpu(&self, line: &DefaultLine) -> bool {
        if !self.is_adaptive() {
            return usable_cpus() <= 1;
        }
        // A count read before (by `Capabilities::detect`, say) applies at once.
        if let Some(n) = crate::detect::process_cpus_if_read() {
            line.note_cpus(n);
        }
        line.one_cpu.load(Relaxed)
    }

    fn resolve_uncached(&self, line: &DefaultLine) -> Resolved {
        let sel = for_waits();
        let (backend, hw) = match self.backend {
            None => (sel.backend, sel.hw),
            Some(b) if b == sel.backend => (b, sel.hw),
            Some(b) => match backend_hw(b) {
                ForcedTier::Built(hw) => (b, hw),
                // Reported once (`backend_hw`): these waits use the process's choice.
                ForcedTier::Unavailable => (sel.backend, sel.hw),
            },
        };
        let d = &sel.defaults;
        let auto_spin = match backend {
            // A forced futex ladder parks at once unless the caller asks for a spin.
            Backend::Futex if self.backend.is_some() => 0,
            _ => d.spin_ns,
        };
        let spin_ns = match self.spin {
            Budget::Auto if self.one_cpu(line) => 0,
            Budget::Auto => auto_spin,
            Budget::Fixed(ns) => ns,
        };
        let hw_ns = match (hw, self.hw) {
            (None, _) => 0,
            (Some(_), Budget::Auto) => d.hw_ns,
            (Some(_), Budget::Fixed(ns)) => ns,
        };
        Resolved {
            spin_ns,
            hw_ns,
            hw,
            spin_pause: sel.spin_pause,
            park: self.park && backend != Backend::Spin,
            adaptive: self.is_adaptive(),
            cstate: self.cstate,
            handoff: self.handoff,
            apart: match self.apart {
                Some(on) => on,
                None => move_apart_by_default(),
            },
        }
    }
}

/// The process's `MWAIT_MOVE_APART`: `1`, `true` or `on` turns moving apart on for
/// every policy that does not say; unset, `0`, `false` or `off` leave it off; any
/// other value is reported once on stderr, as every bad setting is, and leaves it
/// off (a panic under `MWAIT_STRICT=1`).
fn move_apart_by_default() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        crate::sys::settings::bool_var("MWAIT_MOVE_APART", "0 (threads are never moved)")
            .unwrap_or(false)
    })
}

/// A value on a cache line of its own.
#[repr(align(64))]
struct OneLine<T>(T);

/// The default policy as resolved, and whether the process turned out to have one
/// CPU ([`WaitPolicy::resolve`]).
struct DefaultLine {
    resolved: OnceLock<Resolved>,
    one_cpu: AtomicBool,
}

/// The default policy's line: one line that a wait which parks after a long sleep
/// reads.
static DEFAULT: OneLine<DefaultLine> = OneLine(DefaultLine {
    resolved: OnceLock::new(),
    one_cpu: AtomicBool::new(false),
});

const _: () = assert!(std::mem::size_of::<DefaultLine>() <= 64);

impl DefaultLine {
    /// Notes the process's count of usable CPUs: one turns the automatic spin off.
    fn note_cpus(&self, cpus: usize) {
        if cpus <= 1 {
            self.one_cpu.store(true, Relaxed);
        }
    }
}

/// The process's count of usable CPUs (`detect::process_cpus`, read at the first
/// call), as the waits ask for it: a count of one turns their automatic spin off
/// from then on ([`WaitPolicy::resolve`]).
pub(crate) fn usable_cpus() -> usize {
    let n = crate::detect::process_cpus();
    DEFAULT.0.note_cpus(n);
    n
}

/// A policy resolved for one wait.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Resolved {
    pub spin_ns: u64,
    pub hw_ns: u64,
    pub hw: Option<HwTier>,
    pub spin_pause: Option<SpinPause>,
    pub park: bool,
    pub adaptive: bool,
    pub cstate: CState,
    pub handoff: bool,
    /// Whether a thread may move itself off a CPU it shares with its partner
    /// ([`WaitPolicy::move_apart`]).
    pub apart: bool,
}

impl Resolved {
    /// Whether this wait has a hardware tier with a budget.
    #[inline]
    pub(crate) fn hw_wanted(&self) -> bool {
        self.hw.is_some() && self.hw_ns > 0
    }
}

/// Settles every one-time initialisation of this process's waits: CPU detection,
/// the count of CPUs it may use, the choice of backend (with its hardware tier's
/// self-test), the default policy's numbers and the `membarrier` registration. Each
/// is made once, by whichever thread needs it first, and others block until it is
/// done; a child forked while another thread of its parent was inside one would
/// block on it for ever. Call `prepare` before `fork()` in a multi-threaded program
/// (or early in `main`); it is cheap after its first call.
///
/// It also takes that work off the waits, which otherwise pay it on the waiting
/// thread: the first wait the CPUID leaves (each exits to the hypervisor in a
/// guest) and the detection code's first run, about 50 µs of CPU on a 2-vCPU
/// guest; the count of CPUs (the kernel's open and read of the cgroup files that
/// bound it, 40–70 µs) the first wait that needs it, which in a process whose waits
/// rarely spin is none. A short-lived process whose waits are long sees the rest: a
/// 300 ms one fed every 1 ms spent 1.04–1.06x a futex waiter's CPU, and 1.03–1.04x
/// with `prepare` first, on a 2-vCPU guest (`mwait-experiments cold-long-wait
/// 20`).
///
/// What it cannot settle: the hardware tier of a backend that one wait forces with
/// [`WaitPolicy::backend`], built at that wait's first use (make such a wait once
/// before forking).
///
/// # Panics
///
/// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
/// refused (the crate docs' "Environment"); without it no setting makes this panic.
///
/// # Examples
///
/// ```
/// mwait::prepare();
/// // Forking now leaves the child no half-done initialisation of mwait's.
/// assert!(!mwait::selection().reason.is_empty());
/// ```
pub fn prepare() {
    let _ = crate::detect::Capabilities::for_waits();
    let _ = usable_cpus();
    let _ = WaitPolicy::new().resolve();
    crate::sys::park::prepare();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Once the process's count of CPUs turns out to be one, no policy with the
    /// automatic budget spins, however it was resolved before; a fixed budget is
    /// the caller's word and stays.
    #[test]
    fn a_count_of_one_cpu_turns_the_automatic_spin_off() {
        let line = DefaultLine {
            resolved: OnceLock::new(),
            one_cpu: AtomicBool::new(false),
        };
        let d = WaitPolicy::new();
        let tuned = d.cstate(CState::C1);
        let fixed = d.spin(Duration::from_micros(3));
        // Not noted yet, on a machine of more CPUs: the defaults spin. (Where the
        // count reads one, resolving notes it at once.)
        if crate::detect::process_cpus() > 1 {
            assert!(d.resolve_in(&line).spin_ns > 0);
            assert!(tuned.resolve_in(&line).spin_ns > 0);
        }
        line.one_cpu.store(true, Relaxed);
        assert_eq!(d.resolve_in(&line).spin_ns, 0, "the kept resolution too");
        assert_eq!(tuned.resolve_in(&line).spin_ns, 0);
        assert_eq!(fixed.resolve_in(&line).spin_ns, 3_000);
        // The rest of the resolution does not change.
        let (before, after) = (fixed.resolve_in(&line), d.resolve_in(&line));
        assert_eq!((before.hw_ns, before.park), (after.hw_ns, after.park));
    }

    #[test]
    fn the_inline_spin_respects_policies_that_do_not_spin() {
        assert!(WaitPolicy::new().allows_inline_spin());
        assert!(!WaitPolicy::new().spin(Duration::ZERO).allows_inline_spin());
        assert!(!WaitPolicy::new()
            .backend(Backend::Futex)
            .allows_inline_spin());
        // A fixed budget turns the adaptation, which decides the inline spin, off.
        assert!(!WaitPolicy::new()
            .spin(Duration::from_micros(3))
            .allows_inline_spin());
        assert!(!WaitPolicy::new().adaptive(false).allows_inline_spin());
    }

    /// The flag that tells the default policy is set exactly when a policy differs
    /// from `new()`, whatever setters built it: a setter back to the default clears
    /// it, and equality and hashing do not see it.
    #[test]
    fn a_policy_is_tuned_exactly_when_it_differs_from_the_default() {
        use std::hash::BuildHasher;
        let keys = std::hash::RandomState::new();
        let hash = |p: &WaitPolicy| keys.hash_one(p);
        let d = WaitPolicy::new();
        assert!(!d.tuned && !WaitPolicy::default().tuned);
        let changed = [
            d.spin(Duration::ZERO),
            d.hardware(Duration::from_micros(1)),
            d.park(false),
            d.adaptive(false),
            d.cstate(CState::C1),
            d.backend(Backend::Futex),
            d.handoff(false),
            d.move_apart(false),
        ];
        for p in changed {
            assert!(p.tuned && p != d, "{p:?}");
        }
        let back = [
            d.park(false).park(true),
            d.adaptive(false).adaptive(true),
            d.cstate(CState::C1).cstate(CState::C0_1),
            d.handoff(false).handoff(true),
            d.park(true).handoff(true),
        ];
        for p in back {
            assert!(!p.tuned, "{p:?}");
            assert_eq!(p, d);
            assert_eq!(hash(&p), hash(&d));
        }
        assert_eq!(format!("{d:?}"), format!("{:?}", d.park(false).park(true)));
        assert!(!format!("{d:?}").contains("tuned"));
    }
}
