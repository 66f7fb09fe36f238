// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/mwait: bounded ring-0 MONITOR/MWAIT on a user word.
 *
 * On CPUs whose MONITOR/MWAIT exist only in ring 0 this device waits on a
 * user __u32 on the caller's behalf.  The wait is bounded: it returns the
 * moment the word changes, the deadline passes, the scheduler needs the
 * CPU or a signal is pending, so the caller can fall back to a futex and
 * never holds a CPU the scheduler wants.  The notifier stays a plain store.
 *
 * MWAIT has no timer of its own: a store to the monitored line or an
 * interrupt ends it.  So that the deadline ends a wait on time, not at
 * the next tick or device interrupt, a wait arms an hrtimer for it on the
 * CPU that sleeps; the timer's interrupt is the wake-up.
 */

#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/hrtimer.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched/signal.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <asm/cpufeature.h>
#include <asm/mwait.h>
#include <asm/nospec-branch.h>
#include <asm/processor.h>
#include <asm/special_insns.h>
#include <uapi/linux/mwait.h>

/* Longest wait accepted, from now to the deadline: one second in ns. */
#define MWAIT_MAX_WAIT_NS	NSEC_PER_SEC

/* The deepest hint a wait can name: C-state 6 (C7), sub-state 15. */
#define MWAIT_HINT_MAX		0x6f

/*
 * Kbuild defines MWAIT_HAVE_IDLE_CLEAR or MWAIT_HAVE_MDS_IDLE_CLEAR after
 * the helper the headers declare.  Either clears the CPU buffers (VERW)
 * on the CPUs and mitigations that need it before an idle MWAIT (MDS with
 * SMT, MMIO Stale Data, TSA), and is a patched-out branch elsewhere.
 */
#if defined(MWAIT_HAVE_IDLE_CLEAR)
#define mwait_clear_cpu_buffers()	x86_idle_clear_cpu_buffers()
#elif defined(MWAIT_HAVE_MDS_IDLE_CLEAR)
#define mwait_clear_cpu_buffers()	mds_idle_clear_cpu_buffers()
#else
#error "no CPU buffer clear helper for idle in <asm/nospec-branch.h>"
#endif

/*
 * What the module found at load: whether MWAIT may be used, and CPUID
 * leaf 5 (read once, since CPUID exits to the hypervisor in a guest).
 */
static bool mwait_ok __ro_after_init;
static u32 mwait_line_size __ro_after_init;
static u32 mwait_substates __ro_after_init;

/*
 * The deepest hint that any caller may ask for; deeper ones need
 * CAP_SYS_ADMIN.  Root sets it, in /sys/module/mwait/parameters/max_hint.
 */
static unsigned int max_hint;
module_param(max_hint, uint, 0644);
MODULE_PARM_DESC(max_hint,
		 "deepest MWAIT hint allowed without CAP_SYS_ADMIN (default 0: C1)");

/*
 * User pages pinned by waits in flight.  Each wait pins one page and unpins
 * it on every way out, so the count is zero whenever no wait is running.
 * Root can read it as the parameter "pinned", so that a test can prove that
 * no path leaks a pin; it is checked again at unload.
 */
static atomic_long_t mwait_pinned = ATOMIC_LONG_INIT(0);

static int mwait_pinned_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%ld\n",
			 atomic_long_read(&mwait_pinned));
}

/* The count is an observation, not a setting: refuse "pinned=" at load. */
static int mwait_pinned_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops mwait_pinned_ops = {
	.set = mwait_pinned_set,
	.get = mwait_pinned_get,
};
module_param_cb(pinned, &mwait_pinned_ops, NULL, 0400);
MODULE_PARM_DESC(pinned, "user pages pinned by waits in flight (read-only)");

/*
 * Why MWAIT must not be used here, or NULL.  X86_BUG_MONITOR: a store by
 * another CPU does not end MWAIT, so a wait would sleep to its deadline.
 * idle=nomwait: the administrator keeps MWAIT off this machine.
 */
static const char *__init mwait_unusable(void)
{
	if (!boot_cpu_has(X86_FEATURE_MWAIT))
		return "the CPU has no MONITOR/MWAIT";
	if (boot_cpu_has_bug(X86_BUG_MONITOR))
		return "the CPU has X86_BUG_MONITOR";
	if (boot_option_idle_override == IDLE_NOMWAIT)
		return "the kernel was booted with idle=nomwait";
	return NULL;
}

/*
 * Who may ask for which hint (c << 4 | s).  Hint 0x00 (C1) is allowed to
 * every caller; a deeper one needs CAP_SYS_ADMIN or max_hint, then CPUID
 * leaf 5 must list it (C-state c + 1 has more than s sub-states) and no
 * idle= option may keep the CPUs out of C-states.
 */
static int mwait_hint_check(u32 hint)
{
	u32 cstate = MWAIT_HINT2CSTATE(hint);
	u32 sub = MWAIT_HINT2SUBSTATE(hint);

	if (hint > MWAIT_HINT_MAX)
		return -EINVAL;
	if (!hint)
		return 0;
	if (hint > READ_ONCE(max_hint) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (boot_option_idle_override != IDLE_NO_OVERRIDE)
		return -EINVAL;
	if (((mwait_substates >> (4 * (cstate + 1))) & 0xf) <= sub)
		return -EINVAL;
	return 0;
}

static long mwait_ioc_info(void __user *argp)
{
	struct mwait_info info = {
		.abi_version = MWAIT_ABI_VERSION,
		.flags = mwait_ok ? MWAIT_INFO_USABLE : 0,
		.substates = mwait_substates,
		.line_size = mwait_line_size,
		.max_wait_ns = MWAIT_MAX_WAIT_NS,
	};

	if (copy_to_user(argp, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

/*
 * The deadline's timer.  Its interrupt is what ends an MWAIT at the
 * deadline; the handler itself has nothing left to do.
 */
static enum hrtimer_restart mwait_deadline_fn(struct hrtimer *timer)
{
	return HRTIMER_NORESTART;
}

/*
 * How one wait sleeps: the MWAIT hint, and the deadline's timer with the
 * CPU it is armed on (-1 until it is armed).
 */
struct mwait_sleep {
	struct hrtimer timer;
	int timer_cpu;
	u32 hint;
};

/*
 * Kbuild defines MWAIT_HAVE_HRTIMER_SETUP where the headers have it.  Below
 * C1 the local APIC timer stops on CPUs without ARAT (always running APIC
 * timer), and the deadline's timer with it, so those CPUs wait in C1.
 */
static void mwait_sleep_init(struct mwait_sleep *sl, u32 hint)
{
#ifdef MWAIT_HAVE_HRTIMER_SETUP
	hrtimer_setup_on_stack(&sl->timer, mwait_deadline_fn, CLOCK_MONOTONIC,
			       HRTIMER_MODE_ABS_PINNED_HARD);
#else
	hrtimer_init_on_stack(&sl->timer, CLOCK_MONOTONIC,
			      HRTIMER_MODE_ABS_PINNED_HARD);
	sl->timer.function = mwait_deadline_fn;
#endif
	sl->timer_cpu = -1;
	sl->hint = hint;
	if ((hint >> 4) & 0xf && !boot_cpu_has(X86_FEATURE_ARAT))
		sl->hint = 0;
}

/*
 * One episode: arm the monitor, re-check the word and the deadline, then
 * MWAIT.  Interrupts stay off from the arm to the MWAIT, so the armed
 * monitor and the deadline's timer belong to the CPU that sleeps, and a
 * timer that fires after the deadline check stays pending until STI;MWAIT,
 * where it ends the MWAIT at once instead of being lost before it.  The
 * timer is (re)armed, pinned to this CPU, whenever the wait runs on a CPU
 * other than the one it was armed on.  Returns the MWAIT_REASON_* that
 * ends the wait, or 0 to go on.
 */
static u32 mwait_episode(u32 *word, struct mwait_wait *w,
			 struct mwait_sleep *sl)
{
	int cpu;
	u32 v;

	local_irq_disable();
	/* As the kernel's own MWAIT does on CPUs with this erratum. */
	if (static_cpu_has_bug(X86_BUG_CLFLUSH_MONITOR)) {
		/* Earlier accesses to the line complete before the flush, */
		mb();
		clflush(word);
		/* and the flush completes before MONITOR arms on the line. */
		mb();
	}
	__monitor(word, 0, 0);
	v = READ_ONCE(*word);
	if ((v & w->mask) != w->expected) {
		local_irq_enable();
		w->value = v;
		return MWAIT_REASON_CHANGED;
	}
	if (ktime_get_ns() >= w->deadline_ns) {
		local_irq_enable();
		w->value = v;
		return MWAIT_REASON_DEADLINE;
	}
	cpu = smp_processor_id();
	if (cpu != sl->timer_cpu) {
		hrtimer_start(&sl->timer, ns_to_ktime(w->deadline_ns),
			      HRTIMER_MODE_ABS_PINNED_HARD);
		sl->timer_cpu = cpu;
	}
	if (!need_resched()) {
		/* Nothing of the kernel's is left in the CPU's buffers. */
		mwait_clear_cpu_buffers();
		/* As local_irq_enable(), with MWAIT in STI's shadow. */
		trace_hardirqs_on();
		__sti_mwait(sl->hint, 0);
	} else {
		local_irq_enable();
	}
	w->wakeups++;
	w->value = READ_ONCE(*word);
	if ((w->value & w->mask) != w->expected)
		return MWAIT_REASON_CHANGED;
	if (need_resched())
		return MWAIT_REASON_RESCHED;
	if (signal_pending(current))
		return MWAIT_REASON_SIGNAL;
	if (ktime_get_ns() >= w->deadline_ns)
		return MWAIT_REASON_DEADLINE;
	return 0;
}

/*
 * Waits episode after episode until one ends the wait, then cancels the
 * deadline's timer.  Returns the MWAIT_REASON_* that ended it.
 */
static u32 mwait_loop(u32 *word, struct mwait_wait *w)
{
	struct mwait_sleep sl;
	u32 reason;

	mwait_sleep_init(&sl, w->hint);
	do {
		reason = mwait_episode(word, w, &sl);
	} while (!reason);
	hrtimer_cancel(&sl.timer);
	destroy_hrtimer_on_stack(&sl.timer);
	return reason;
}

static long mwait_ioc_wait(void __user *argp)
{
	struct mwait_wait w;
	struct page *page;
	unsigned long uaddr;
	u64 now;
	void *kaddr;
	long ret;

	if (copy_from_user(&w, argp, sizeof(w)))
		return -EFAULT;
	if (!mwait_ok)
		return -EOPNOTSUPP;
	if (w.pad || w.flags & ~MWAIT_WAIT_FLAGS_ALL)
		return -EINVAL;
	if (w.addr & (sizeof(u32) - 1))
		return -EINVAL;
	if (w.addr > ULONG_MAX ||
	    !access_ok((void __user *)(unsigned long)w.addr, sizeof(u32)))
		return -EFAULT;
	ret = mwait_hint_check(w.hint);
	if (ret)
		return ret;
	now = ktime_get_ns();
	if (w.deadline_ns > now && w.deadline_ns - now > MWAIT_MAX_WAIT_NS)
		return -ERANGE;

	uaddr = (unsigned long)w.addr;
	if (pin_user_pages_fast(uaddr & PAGE_MASK, 1, 0, &page) != 1)
		return -EFAULT;
	atomic_long_inc(&mwait_pinned);
	kaddr = kmap_local_page(page);

	w.value = 0;
	w.wakeups = 0;
	w.reason = mwait_loop(kaddr + offset_in_page(uaddr), &w);

	kunmap_local(kaddr);
	unpin_user_page(page);
	atomic_long_dec(&mwait_pinned);

	if (copy_to_user(argp, &w, sizeof(w)))
		return -EFAULT;
	ret = w.reason == MWAIT_REASON_SIGNAL ? -EINTR : 0;
	return ret;
}

static long mwait_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case MWAIT_IOC_INFO:
		return mwait_ioc_info(argp);
	case MWAIT_IOC_WAIT:
		return mwait_ioc_wait(argp);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations mwait_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = mwait_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/* No .mode: the node is 0600, root's; udev may grant a group access. */
static struct miscdevice mwait_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "mwait",
	.fops = &mwait_fops,
};

static int __init mwait_init(void)
{
	const char *why = mwait_unusable();
	unsigned int eax, ebx, ecx, edx;

	if (why) {
		/* INFO says so, and every WAIT fails with EOPNOTSUPP. */
		pr_info("mwait: not usable: %s\n", why);
	} else {
		mwait_ok = true;
		if (boot_cpu_data.cpuid_level >= CPUID_MWAIT_LEAF) {
			cpuid(CPUID_MWAIT_LEAF, &eax, &ebx, &ecx, &edx);
			mwait_line_size = ebx & 0xffff;
			mwait_substates = edx;
		}
	}
	return misc_register(&mwait_misc);
}

static void __exit mwait_exit(void)
{
	long pinned;

	misc_deregister(&mwait_misc);
	/*
	 * A wait holds its file and the file holds the module, so no wait
	 * can be in flight here: any count left is a leaked pin.
	 */
	pinned = atomic_long_read(&mwait_pinned);
	WARN(pinned, "mwait: %ld user pages still pinned at unload\n", pinned);
}

module_init(mwait_init);
module_exit(mwait_exit);

MODULE_DESCRIPTION("Bounded ring-0 MONITOR/MWAIT on a user word");
MODULE_LICENSE("GPL");
