// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/mwait: bounded ring-0 MONITOR/MWAIT on a user word.
 *
 * On CPUs whose MONITOR/MWAIT exist only in ring 0 this device waits on a
 * user __u32 on the caller's behalf.  The wait is bounded: it returns once
 * it sees the word changed, the deadline passed, the scheduler wanted the
 * CPU or a signal pending, so the caller can fall back to a futex and never
 * holds a CPU the scheduler wants.  The notifier stays a plain store.
 *
 * MWAIT has no timer of its own: a store to the monitored line or an
 * interrupt ends it.  So that the deadline ends a wait on time, not at
 * the next tick or device interrupt, a wait arms an hrtimer for it on the
 * CPU that sleeps; the timer's interrupt is the wake-up.
 *
 * A wait is a series of episodes, each ended by an MWAIT wake-up.  Every
 * episode looks the word up again in the caller's address space and pins
 * its page only until the episode ends, so a wait never watches a page
 * that is no longer the one mapped, and no pin outlives its episode by
 * more than a preemption at the episode's end.
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
#include <linux/preempt.h>
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
 * User pages pinned by waits in flight.  An episode pins one page and
 * unpins it before it ends, so the count is zero whenever no wait is
 * running.  Root can read it as the parameter "pinned", so that a test can
 * prove that no path leaks a pin; it is checked again at unload.
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
 * One wait: its arguments and results, the user address of the word, the
 * MWAIT hint, the deadline's timer with the CPU it is armed on (-1 until it
 * is armed), and the caller's count of preemptions when the wait began.
 */
struct mwait_ctx {
	struct mwait_wait *w;
	unsigned long uaddr;
	struct hrtimer timer;
	int timer_cpu;
	u32 hint;
	unsigned long nivcsw;
};

/*
 * Kbuild defines MWAIT_HAVE_HRTIMER_SETUP where the headers have it.  Below
 * C1 the local APIC timer stops on CPUs without ARAT (always running APIC
 * timer), and the deadline's timer with it, so those CPUs wait in C1.
 */
static void mwait_ctx_init(struct mwait_ctx *c, struct mwait_wait *w,
			   unsigned long uaddr)
{
#ifdef MWAIT_HAVE_HRTIMER_SETUP
	hrtimer_setup_on_stack(&c->timer, mwait_deadline_fn, CLOCK_MONOTONIC,
			       HRTIMER_MODE_ABS_PINNED_HARD);
#else
	hrtimer_init_on_stack(&c->timer, CLOCK_MONOTONIC,
			      HRTIMER_MODE_ABS_PINNED_HARD);
	c->timer.function = mwait_deadline_fn;
#endif
	c->w = w;
	c->uaddr = uaddr;
	c->timer_cpu = -1;
	c->hint = w->hint;
	if (MWAIT_HINT2CSTATE(w->hint) && !boot_cpu_has(X86_FEATURE_ARAT))
		c->hint = 0;
	c->nivcsw = READ_ONCE(current->nivcsw);
}

/*
 * A read-only pin is kept only for a page that can still change: a file
 * page, which other mappings and write() reach.  An anonymous page or the
 * zero page in a mapping the caller cannot write never changes.
 */
static bool mwait_page_can_change(struct page *page)
{
	struct folio *folio = page_folio(page);

	return READ_ONCE(folio->mapping) && !folio_test_anon(folio);
}

/*
 * Pins the page that holds the word now.  A write pin first, as the futex
 * code does: it breaks copy-on-write, so the page pinned is the one the
 * next store in this address space writes (not the shared zero page, or a
 * file page that a private store would replace).  A mapping the caller
 * cannot write gets a read pin, kept for file pages only.  Returns 0 and
 * the FOLL_* flags of the pin, or the pin's own errno.
 */
static int mwait_pin(unsigned long uaddr, struct page **pagep,
		     unsigned int *flags)
{
	unsigned long start = uaddr & PAGE_MASK;
	int n;

	*flags = FOLL_WRITE;
	n = pin_user_pages_fast(start, 1, *flags, pagep);
	if (n == -EFAULT) {
		*flags = 0;
		n = pin_user_pages_fast(start, 1, *flags, pagep);
		if (n == 1 && !mwait_page_can_change(*pagep)) {
			unpin_user_page(*pagep);
			return -EFAULT;
		}
	}
	if (n < 0)
		return n;
	if (n != 1)
		return -EFAULT;
	atomic_long_inc(&mwait_pinned);
	return 0;
}

/*
 * With interrupts off, the page the address maps now, with a reference
 * the caller drops once interrupts and preemption are on again (freeing a
 * page may take a sleeping lock under PREEMPT_RT), or NULL.  The lookup is
 * the lockless one, safe with interrupts off.
 */
static struct page *mwait_mapped_now(unsigned long uaddr, unsigned int flags)
{
	struct page *now;

	if (!get_user_page_fast_only(uaddr & PAGE_MASK, flags, &now))
		return NULL;
	return now;
}

static void mwait_unpin(struct page *page)
{
	unpin_user_page(page);
	atomic_long_dec(&mwait_pinned);
}

/*
 * Why the wait ends now, with the monitor armed and interrupts off, or 0.
 * A preemption since the wait began counts as the scheduler wanting the
 * CPU: under full preemption the interrupt that ends MWAIT can preempt the
 * task where preemption is enabled, and need_resched() is clear again when
 * it runs here.
 */
static u32 mwait_reason(struct mwait_ctx *c)
{
	struct mwait_wait *w = c->w;

	if ((w->value & w->mask) != w->expected)
		return MWAIT_REASON_CHANGED;
	if (signal_pending(current))
		return MWAIT_REASON_SIGNAL;
	if (need_resched() || READ_ONCE(current->nivcsw) != c->nivcsw)
		return MWAIT_REASON_RESCHED;
	if (ktime_get_ns() >= w->deadline_ns)
		return MWAIT_REASON_DEADLINE;
	return 0;
}

/*
 * One episode: pin the word's page, arm the monitor, check the word, a
 * signal, the scheduler and the deadline, check that the page is still
 * the one mapped, then MWAIT.
 *
 * Preemption is off from before the checks until after MWAIT returns, as
 * in the idle loop: the interrupt that ends MWAIT leaves need_resched()
 * set for the next episode to see instead of preempting the task inside
 * MWAIT's return.  Interrupts stay off from the arm to STI;MWAIT, so the
 * armed monitor and the deadline's timer belong to the CPU that sleeps,
 * and an interrupt (the timer, a reschedule or signal IPI, a TLB flush
 * after the mapping changed) that comes after the checks stays pending
 * until STI;MWAIT, where it ends the MWAIT at once instead of being lost
 * before it.  The timer is (re)armed, pinned to this CPU, whenever the
 * wait runs on a CPU other than the one it was armed on.
 *
 * Returns the MWAIT_REASON_* that ends the wait, 0 to go on, or the pin's
 * negative errno.
 */
static int mwait_episode(struct mwait_ctx *c)
{
	struct mwait_wait *w = c->w;
	struct page *page, *now = NULL;
	unsigned int flags;
	void *kaddr;
	u32 *word;
	u32 reason;
	int cpu;
	int err;

	err = mwait_pin(c->uaddr, &page, &flags);
	if (err)
		return err;
	kaddr = kmap_local_page(page);
	word = kaddr + offset_in_page(c->uaddr);

	preempt_disable();
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
	w->value = READ_ONCE(*word);
	reason = mwait_reason(c);
	/*
	 * If the address still maps the pinned page, any later change of the
	 * mapping flushes this CPU's TLB with an IPI, which stays pending
	 * until STI;MWAIT and ends the MWAIT.  If it does not, the change
	 * came first: go round and pin the new page instead of sleeping.
	 */
	if (!reason)
		now = mwait_mapped_now(c->uaddr, flags);
	if (!reason && now == page) {
		cpu = smp_processor_id();
		if (cpu != c->timer_cpu) {
			hrtimer_start(&c->timer, ns_to_ktime(w->deadline_ns),
				      HRTIMER_MODE_ABS_PINNED_HARD);
			c->timer_cpu = cpu;
		}
		/* Nothing of the kernel's is left in the CPU's buffers. */
		mwait_clear_cpu_buffers();
		/* As local_irq_enable(), with MWAIT in STI's shadow. */
		trace_hardirqs_on();
		__sti_mwait(c->hint, 0);
		w->wakeups++;
	} else {
		local_irq_enable();
	}
	preempt_enable();
	if (now)
		put_page(now);
	kunmap_local(kaddr);
	mwait_unpin(page);
	return reason;
}

/*
 * Waits episode after episode until one ends the wait, then cancels the
 * deadline's timer.  Returns the MWAIT_REASON_* that ended it, or a
 * negative errno.
 */
static int mwait_loop(struct mwait_wait *w, unsigned long uaddr)
{
	struct mwait_ctx c;
	int ret;

	mwait_ctx_init(&c, w, uaddr);
	do {
		ret = mwait_episode(&c);
	} while (!ret);
	hrtimer_cancel(&c.timer);
	destroy_hrtimer_on_stack(&c.timer);
	return ret;
}

static long mwait_ioc_wait(void __user *argp)
{
	struct mwait_wait w;
	u64 now;
	int ret;

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

	w.value = 0;
	w.wakeups = 0;
	ret = mwait_loop(&w, (unsigned long)w.addr);
	if (ret < 0)
		return ret;
	w.reason = ret;
	if (copy_to_user(argp, &w, sizeof(w)))
		return -EFAULT;
	/*
	 * The deadline is absolute, so a call restarted after the signal's
	 * handler (SA_RESTART) or a stop waits no longer than this one would
	 * have; without SA_RESTART the caller sees EINTR.
	 */
	return w.reason == MWAIT_REASON_SIGNAL ? -ERESTARTSYS : 0;
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
