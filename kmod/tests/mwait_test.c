// SPDX-License-Identifier: GPL-2.0
/*
 * In-guest functional test of /dev/mwait (kselftest style): every refusal
 * is checked for its exact errno with the output fields poisoned first, and
 * the wait paths (changed, deadline, signal, cross-thread wake, ping-pong)
 * are executed.  Prints "ok"/"not ok" per test and a closing summary.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../include/uapi/linux/mwait.h"

#define POISON		0xa5a5a5a5U
#define MS		1000000ULL
#define PINGPONGS	100000
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define PINNED_PATH	"/sys/module/mwait/parameters/pinned"
/* Waits of DEADLINE_WAIT_NS with no store, whose lateness is judged. */
#define DEADLINE_TRIES	9
#define DEADLINE_WAIT_NS	(2 * MS)
/*
 * The median lateness allowed.  The module's timer ends a wait within
 * microseconds of its deadline; the bound leaves room for a guest whose
 * vCPUs are host threads on a loaded host.
 */
#define LATE_MAX_NS	(5 * MS)

/* How long the timed fuzzer runs, and how often it disturbs its callers. */
#define FUZZ_SECONDS	10
#define FUZZ_THREADS	2
/* A hint below C1, for the privilege checks. */
#define DEEP_HINT	0x10
/* An unprivileged user and group for the privilege checks. */
#define NOBODY		65534

static int fd, passed, failed;
/* Set by --compat: a 32-bit caller runs the quick subset, named so. */
static int compat;

static void check(int ok, const char *name)
{
	printf("%s %s%s\n", ok ? "ok" : "not ok", compat ? "compat: " : "",
	       name);
	if (ok)
		passed++;
	else
		failed++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void prep(struct mwait_wait *w, uint32_t *p, uint32_t exp,
		 uint64_t rel)
{
	memset(w, 0, sizeof(*w));
	w->addr = (uintptr_t)p;
	w->mask = ~0U;
	w->expected = exp;
	w->deadline_ns = now_ns() + rel;
	w->value = POISON;
	w->reason = POISON;
	w->wakeups = POISON;
}

static int refuse(struct mwait_wait *w, int err)
{
	int r = ioctl(fd, MWAIT_IOC_WAIT, w);

	return r == -1 && errno == err && w->value == POISON &&
	       w->reason == POISON && w->wakeups == POISON;
}

/* Waits until the word differs from exp, retrying on non-final reasons. */
static int wait_changed(uint32_t *p, uint32_t exp)
{
	struct mwait_wait w;

	for (;;) {
		prep(&w, p, exp, 100 * MS);
		if (ioctl(fd, MWAIT_IOC_WAIT, &w) && errno != EINTR)
			return -1;
		if (w.reason == MWAIT_REASON_CHANGED)
			return 0;
	}
}


static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The median time by which waits on `p` (which nobody changes) end after
 * their deadline, each retried on RESCHED; UINT64_MAX if one ended for
 * another reason than DEADLINE or before its deadline.
 */
static uint64_t deadline_lateness(uint32_t *p)
{
	uint64_t late[DEADLINE_TRIES], end;
	struct mwait_wait w;
	unsigned int i;
	int r;

	for (i = 0; i < DEADLINE_TRIES; i++) {
		prep(&w, p, *p, DEADLINE_WAIT_NS);
		do {
			r = ioctl(fd, MWAIT_IOC_WAIT, &w);
		} while (!r && w.reason == MWAIT_REASON_RESCHED);
		end = now_ns();
		if (r || w.reason != MWAIT_REASON_DEADLINE ||
		    end < w.deadline_ns)
			return UINT64_MAX;
		late[i] = end - w.deadline_ns;
	}
	qsort(late, DEADLINE_TRIES, sizeof(late[0]), cmp_u64);
	printf("# deadline lateness: min %llu ns, median %llu ns, max %llu ns\n",
	       (unsigned long long)late[0],
	       (unsigned long long)late[DEADLINE_TRIES / 2],
	       (unsigned long long)late[DEADLINE_TRIES - 1]);
	return late[DEADLINE_TRIES / 2];
}

/*
 * A wait on `p` (which nobody changes) through `wfd`, run on another thread.
 * With `hold`, it waits again after every RESCHED, until its deadline.
 */
struct bg_wait {
	int wfd;
	uint32_t *p;
	uint64_t rel;
	int hold;
	int r, err;
	struct mwait_wait w;
};

static void *bg_waiter(void *arg)
{
	struct bg_wait *b = arg;

	prep(&b->w, b->p, *b->p, b->rel);
	do {
		b->r = ioctl(b->wfd, MWAIT_IOC_WAIT, &b->w);
	} while (b->hold && !b->r && b->w.reason == MWAIT_REASON_RESCHED);
	b->err = errno;
	return NULL;
}

/* Ended without error, for a reason other than a change. */
static int ended_quietly(struct bg_wait *b)
{
	return b->r == 0 && (b->w.reason == MWAIT_REASON_DEADLINE ||
			     b->w.reason == MWAIT_REASON_RESCHED);
}

/* The module's count of user pages pinned by waits in flight, or -1. */
static long pinned_pages(void)
{
	FILE *f = fopen(PINNED_PATH, "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * Random ioctls: random commands and sizes, random struct bytes, random,
 * kernel and unmapped addresses, short deadlines so that a valid wait ends
 * soon.  Every call must end in success or one of the documented errnos.
 */
static int fuzz(int calls, uint32_t *word)
{
	static const unsigned long cmds[] = {
		MWAIT_IOC_INFO, MWAIT_IOC_WAIT,
		_IOWR(MWAIT_IOC_MAGIC, 1, char[16]),
		_IOR(MWAIT_IOC_MAGIC, 0, char[8]),
		_IOWR(MWAIT_IOC_MAGIC, 7, struct mwait_wait),
		_IO(MWAIT_IOC_MAGIC, 1), _IOWR('w', 1, struct mwait_wait),
		0x1234,
	};
	unsigned char buf[sizeof(struct mwait_wait) + 64];
	int i, bad = 0;

	for (i = 0; i < calls; i++) {
		uint64_t r = next_rand();
		unsigned long cmd = cmds[r % ARRAY_SIZE(cmds)];
		struct mwait_wait *w = (struct mwait_wait *)buf;
		void *arg = buf;
		size_t k;
		int ret;

		for (k = 0; k < sizeof(buf); k++)
			buf[k] = next_rand();
		switch ((r >> 8) % 6) {
		case 0:
			w->addr = (uintptr_t)word;
			break;
		case 1:
			w->addr = (uintptr_t)word + (r >> 16) % 4;
			break;
		case 2:
			w->addr = 0xffff888000000000ULL + (r & 0xfff0);
			break;
		default:
			break;
		}
		switch ((r >> 12) % 4) {
		case 0:
			w->deadline_ns = now_ns() + (r >> 20) % (2 * MS);
			break;
		case 1:
			w->deadline_ns = now_ns() - (r >> 20) % MS;
			break;
		default:
			break;
		}
		if ((r >> 24) % 3 == 0) {
			w->pad = 0;
			w->flags = 0;
			w->hint = 0;
		}
		if ((r >> 28) % 8 == 0)
			arg = (void *)(uintptr_t)(next_rand() & ~0xfULL);
		ret = ioctl(fd, cmd, arg);
		if (ret == 0 || errno == EINVAL || errno == EFAULT ||
		    errno == ERANGE || errno == ENOTTY || errno == EINTR)
			continue;
		printf("# %s: call %d cmd %#lx: unexpected errno %d\n",
		       __func__, i, cmd, errno);
		bad++;
	}
	return bad == 0;
}

/*
 * A wait on `p` on another thread while `disturb` runs on this one, then
 * the wait's result.  `disturb` changes the word in some way the waiter
 * must see (a store, perhaps after changing the mapping).
 */
static void wait_while(struct bg_wait *b, uint32_t *p, uint64_t rel,
		       void (*disturb)(uint32_t *))
{
	pthread_t t;

	memset(b, 0, sizeof(*b));
	b->wfd = fd;
	b->p = p;
	b->rel = rel;
	b->hold = 1;
	pthread_create(&t, NULL, bg_waiter, b);
	usleep(20000);
	disturb(p);
	pthread_join(t, NULL);
}

static void store_one(uint32_t *p)
{
	__atomic_store_n(p, 1, __ATOMIC_SEQ_CST);
}

static void dontneed_then_store(uint32_t *p)
{
	madvise(p, 4096, MADV_DONTNEED);
	__atomic_store_n(p, 6, __ATOMIC_SEQ_CST);
}

static void unmap_page(uint32_t *p)
{
	munmap(p, 4096);
}

/* The wait ended on the change, with no error. */
static int changed_to(struct bg_wait *b, uint32_t v)
{
	if (b->r || b->w.reason != MWAIT_REASON_CHANGED)
		printf("# wait: r %d errno %d reason %u value %u\n", b->r,
		       b->r ? b->err : 0, b->w.reason, b->w.value);
	return b->r == 0 && b->w.reason == MWAIT_REASON_CHANGED &&
	       b->w.value == v;
}

/*
 * The word must be watched in the page that is mapped now, not in one the
 * wait found at its start: the shared zero page, a file page that a private
 * store replaces, a page that MADV_DONTNEED drops.
 */
static void stale_pages(void)
{
	struct bg_wait b;
	uint32_t *p;
	char path[] = "/tmp/mwait-XXXXXX";
	int ffd;

	/* Read, never written: the read fault maps the shared zero page. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	wait_while(&b, p, 500 * MS, store_one);
	check(changed_to(&b, 1), "zero page: a store wakes the wait");
	munmap(p, 4096);

	/* Read-only and never written: nothing can change it. */
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	{
		struct mwait_wait w;

		prep(&w, p, *p, 10 * MS);
		check(refuse(&w, EFAULT),
		      "zero page in a read-only mapping -> EFAULT");
	}
	munmap(p, 4096);

	/* A private file mapping: the first store copies the page. */
	mkdir("/tmp", 0700);
	ffd = mkstemp(path);
	if (ffd < 0 || ftruncate(ffd, 4096)) {
		check(0, "MAP_PRIVATE file page: a store wakes the wait");
	} else {
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE,
			 ffd, 0);
		wait_while(&b, p, 500 * MS, store_one);
		check(changed_to(&b, 1),
		      "MAP_PRIVATE file page: a store wakes the wait");
		munmap(p, 4096);
	}
	if (ffd >= 0) {
		close(ffd);
		unlink(path);
	}

	/*
	 * MADV_DONTNEED drops the page; the word reads 0 until the store of 6
	 * faults in a new page.  Either value is a change the wait must see.
	 */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	*p = 5;
	wait_while(&b, p, 500 * MS, dontneed_then_store);
	check(changed_to(&b, 6) || changed_to(&b, 0),
	      "MADV_DONTNEED during a wait: the new page's value wakes it");
	munmap(p, 4096);

	/* The word is gone: the wait fails instead of watching a dead page. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	*p = 3;
	wait_while(&b, p, 500 * MS, unmap_page);
	if (b.r != -1 || b.err != EFAULT)
		printf("# munmap: r %d errno %d reason %u\n", b.r, b.err,
		       b.w.reason);
	check(b.r == -1 && b.err == EFAULT, "munmap during a wait -> EFAULT");
}

/*
 * Runs fn in a child with no privilege (uid and gid nobody, so no
 * capability); the fd stays open.  Returns fn's result, or 0.
 */
static int unprivileged(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(2);
		_exit(fn() ? 0 : 1);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

static uint32_t quiet_word = 7;

static int deep_hint_refused(void)
{
	struct mwait_wait w;

	prep(&w, &quiet_word, 7, MS);
	w.hint = DEEP_HINT;
	return refuse(&w, EPERM);
}

static int deep_hint_not_eperm(void)
{
	struct mwait_wait w;
	int r;

	prep(&w, &quiet_word, 7, MS);
	w.hint = DEEP_HINT;
	r = ioctl(fd, MWAIT_IOC_WAIT, &w);
	return r == 0 || errno == EINVAL;
}

static int c1_allowed(void)
{
	struct mwait_wait w;

	prep(&w, &quiet_word, 7, MS);
	return ioctl(fd, MWAIT_IOC_WAIT, &w) == 0;
}

/* Writes a module parameter; 0 on success. */
static int set_param(const char *name, const char *val)
{
	char path[128];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "/sys/module/mwait/parameters/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	r = fputs(val, f) < 0;
	return fclose(f) || r;
}

/* Who may ask for which C-state, and who may see the module's state. */
static void privileges(void)
{
	struct stat st;

	check(!stat("/dev/mwait", &st) && (st.st_mode & 0777) == 0600,
	      "/dev/mwait is 0600 from the kernel");
	check(!stat(PINNED_PATH, &st) && (st.st_mode & 0077) == 0,
	      "the pinned counter is readable by root only");
	check(unprivileged(c1_allowed), "unprivileged: hint 0x00 waits");
	check(unprivileged(deep_hint_refused),
	      "unprivileged: hint 0x10 -> EPERM");
	if (set_param("max_hint", "0x10")) {
		check(0, "max_hint=0x10 lets unprivileged callers ask for C2");
	} else {
		check(unprivileged(deep_hint_not_eperm),
		      "max_hint=0x10 lets unprivileged callers ask for C2");
		set_param("max_hint", "0");
	}
	check(unprivileged(deep_hint_refused),
	      "max_hint=0 again: hint 0x10 -> EPERM");
}

static int handled;

static void on_usr1(int sig)
{
	(void)sig;
	__atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
}

/*
 * A stop and continue with no handler, and a handler with SA_RESTART, do
 * not end the wait: the deadline is absolute, so the kernel restarts the
 * call and user space sees no EINTR.
 */
static void restarts(void)
{
	uint32_t *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct sigaction sa;
	struct bg_wait b;
	pid_t pid;
	int st;

	*shared = 0;
	pid = fork();
	if (pid == 0) {
		struct mwait_wait w;
		int r;

		prep(&w, shared, 0, 900 * MS);
		do {
			r = ioctl(fd, MWAIT_IOC_WAIT, &w);
		} while (!r && w.reason == MWAIT_REASON_RESCHED);
		_exit(r ? 2 : w.reason == MWAIT_REASON_CHANGED ? 0 : 3);
	}
	usleep(30000);
	kill(pid, SIGSTOP);
	usleep(30000);
	kill(pid, SIGCONT);
	usleep(30000);
	__atomic_store_n(shared, 1, __ATOMIC_SEQ_CST);
	st = -1;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		printf("# SIGSTOP/SIGCONT: child status %#x\n", st);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "SIGSTOP/SIGCONT without a handler: no EINTR, the wait goes on");
	munmap(shared, 4096);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	__atomic_store_n(&handled, 0, __ATOMIC_RELAXED);
	{
		pthread_t t;
		uint32_t word = 0;

		memset(&b, 0, sizeof(b));
		b.wfd = fd;
		b.p = &word;
		b.rel = 900 * MS;
		b.hold = 1;
		pthread_create(&t, NULL, bg_waiter, &b);
		usleep(30000);
		pthread_kill(t, SIGUSR1);
		usleep(30000);
		__atomic_store_n(&word, 1, __ATOMIC_SEQ_CST);
		pthread_join(t, NULL);
	}
	check(__atomic_load_n(&handled, __ATOMIC_RELAXED) > 0 &&
	      changed_to(&b, 1),
	      "SA_RESTART handler: the wait is restarted and completes");
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	sigaction(SIGUSR1, &sa, NULL);
}

/* Waits again and again on a quiet word until `stop`, counting RESCHED. */
static int stop_waiters;
static int rescheds;

static void *resched_waiter(void *arg)
{
	uint32_t word = 0;
	struct mwait_wait w;

	(void)arg;
	while (!__atomic_load_n(&stop_waiters, __ATOMIC_RELAXED)) {
		prep(&w, &word, 0, 50 * MS);
		if (!ioctl(fd, MWAIT_IOC_WAIT, &w) &&
		    w.reason == MWAIT_REASON_RESCHED)
			__atomic_add_fetch(&rescheds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * More waiters than CPUs: the scheduler needs the CPUs and the module must
 * say so (RESCHED), under any preemption model.
 */
static void oversubscribed(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t t[16];
	int i, n = 4 * (cpus > 0 && cpus < 4 ? cpus : 4);

	rescheds = 0;
	__atomic_store_n(&stop_waiters, 0, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++)
		pthread_create(&t[i], NULL, resched_waiter, NULL);
	usleep(500000);
	__atomic_store_n(&stop_waiters, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("# more waiters than CPUs: %d waiters, %d RESCHED returns\n",
	       n, rescheds);
	check(rescheds > 0, "more waiters than CPUs get RESCHED");
}

/*
 * The timed fuzzer: FUZZ_THREADS threads send random ioctls at a scratch
 * area while this thread remaps it, changes its protection, drops its pages,
 * forks and signals the callers.  Every call must end in success or a
 * documented errno.
 */
static uint32_t *scratch;
static int fuzz_stop;
static int fuzz_bad;

static void fuzz_one(uint64_t *state)
{
	unsigned char buf[sizeof(struct mwait_wait)];
	struct mwait_wait *w = (struct mwait_wait *)buf;
	uint64_t r;
	size_t k;
	int ret;

	for (k = 0; k < sizeof(buf); k++) {
		*state ^= *state << 13;
		*state ^= *state >> 7;
		*state ^= *state << 17;
		buf[k] = *state;
	}
	r = *state;
	w->addr = (uintptr_t)scratch + (r % 4) * 4096 + ((r >> 8) % 64) * 4;
	w->deadline_ns = now_ns() + (r >> 16) % (3 * MS);
	if ((r >> 32) % 4) {
		w->pad = 0;
		w->flags = 0;
		w->hint = 0;
	}
	if ((r >> 40) % 4)
		w->mask = 0;
	ret = ioctl(fd, (r >> 48) % 8 ? MWAIT_IOC_WAIT : MWAIT_IOC_INFO, buf);
	if (ret && errno != EINVAL && errno != EFAULT && errno != ERANGE &&
	    errno != EINTR) {
		printf("# timed fuzz: unexpected errno %d\n", errno);
		__atomic_add_fetch(&fuzz_bad, 1, __ATOMIC_RELAXED);
	}
}

static void *fuzz_caller(void *arg)
{
	uint64_t state = 0x9e3779b97f4a7c15ULL ^ (uintptr_t)arg;
	long calls = 0;

	while (!__atomic_load_n(&fuzz_stop, __ATOMIC_RELAXED)) {
		fuzz_one(&state);
		calls++;
	}
	return (void *)calls;
}

static void timed_fuzz(void)
{
	static const int prots[] = { PROT_NONE, PROT_READ,
				     PROT_READ | PROT_WRITE };
	pthread_t t[FUZZ_THREADS];
	struct sigaction sa;
	uint64_t end, i = 0;
	long calls = 0;
	void *res;
	int k;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	scratch = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__atomic_store_n(&fuzz_stop, 0, __ATOMIC_RELAXED);
	fuzz_bad = 0;
	for (k = 0; k < FUZZ_THREADS; k++)
		pthread_create(&t[k], NULL, fuzz_caller, (void *)(uintptr_t)k);
	end = now_ns() + FUZZ_SECONDS * 1000 * MS;
	while (now_ns() < end) {
		void *page = (char *)scratch + (i % 4) * 4096;

		switch (next_rand() % 6) {
		case 0:
			mprotect(page, 4096, prots[next_rand() % 3]);
			break;
		case 1:
			madvise(page, 4096, MADV_DONTNEED);
			break;
		case 2:
			munmap(page, 4096);
			mmap(page, 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			break;
		case 3:
			if (fork() == 0)
				_exit(0);
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
			break;
		case 4:
			pthread_kill(t[next_rand() % FUZZ_THREADS], SIGUSR1);
			break;
		default:
			/* Writable again first: a store to PROT_NONE faults. */
			mprotect(page, 4096, PROT_READ | PROT_WRITE);
			__atomic_store_n((uint32_t *)page, next_rand(),
					 __ATOMIC_RELAXED);
			break;
		}
		i++;
		usleep(200);
	}
	__atomic_store_n(&fuzz_stop, 1, __ATOMIC_RELAXED);
	for (k = 0; k < FUZZ_THREADS; k++) {
		pthread_join(t[k], &res);
		calls += (long)res;
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	munmap(scratch, 4 * 4096);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGUSR1, &sa, NULL);
	printf("# timed fuzz: %ld calls, %llu disturbances in %d s\n", calls,
	       (unsigned long long)i, FUZZ_SECONDS);
	check(fuzz_bad == 0, "timed fuzz with remaps, signals and forks");
}

static uint32_t cell, ping, pong;

static void *storer(void *arg)
{
	usleep(20000);
	__atomic_store_n(&cell, 1, __ATOMIC_SEQ_CST);
	return arg;
}

static void *ponger(void *arg)
{
	for (uint32_t i = 1; i <= PINGPONGS; i++) {
		if (wait_changed(&ping, i - 1))
			return (void *)1;
		__atomic_store_n(&pong, i, __ATOMIC_SEQ_CST);
	}
	return arg;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * On a CPU without MWAIT the module loads, INFO reports no USABLE flag and
 * every WAIT, even a valid one, is refused with EOPNOTSUPP.
 */
static int no_mwait(void)
{
	struct mwait_info info;
	struct mwait_wait w;
	static uint32_t word = 7;

	fd = open("/dev/mwait", O_RDWR);
	check(fd >= 0, "no-mwait: the module loads and /dev/mwait opens");
	memset(&info, 0xa5, sizeof(info));
	check(!ioctl(fd, MWAIT_IOC_INFO, &info) &&
	      info.abi_version == MWAIT_ABI_VERSION && info.flags == 0 &&
	      info.substates == 0 && info.line_size == 0,
	      "no-mwait: INFO has no USABLE flag and no leaf 5 data");
	prep(&w, &word, 7, MS);
	check(refuse(&w, EOPNOTSUPP), "no-mwait: WAIT -> EOPNOTSUPP");
	prep(&w, &word, 8, MS);
	check(refuse(&w, EOPNOTSUPP),
	      "no-mwait: WAIT on a changed word -> EOPNOTSUPP too");
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}

int main(int argc, char **argv)
{
	struct mwait_info info;
	struct mwait_wait w;
	static uint32_t word = 7;
	struct itimerval it = { .it_value = { .tv_usec = 100000 } };
	struct sigaction sa;
	pthread_t t;
	void *res;
	int r;

	if (argc > 1 && !strcmp(argv[1], "--no-mwait"))
		return no_mwait();
	compat = argc > 1 && !strcmp(argv[1], "--compat");
	fd = open("/dev/mwait", O_RDWR);
	check(fd >= 0, "open /dev/mwait");
	memset(&info, 0xa5, sizeof(info));
	r = ioctl(fd, MWAIT_IOC_INFO, &info);
	check(!r && info.abi_version == MWAIT_ABI_VERSION &&
	      (info.flags & MWAIT_INFO_USABLE) &&
	      info.max_wait_ns != 0xa5a5a5a5a5a5a5a5ULL, "info");
	printf("# info: flags %#x substates %#x line %u max %llu ns\n",
	       info.flags, info.substates, info.line_size,
	       (unsigned long long)info.max_wait_ns);

	prep(&w, &word, 7, MS);
	w.addr += 1;
	check(refuse(&w, EINVAL), "unaligned address -> EINVAL");
	prep(&w, &word, 7, MS);
	w.addr = 0xffffffff81000000ULL;
	check(refuse(&w, EFAULT), "kernel address -> EFAULT");
	prep(&w, &word, 7, MS);
	w.addr = 0x1000;
	check(refuse(&w, EFAULT), "unmapped address -> EFAULT");
	prep(&w, &word, 7, MS);
	w.flags = 1;
	check(refuse(&w, EINVAL), "unknown flag -> EINVAL");
	prep(&w, &word, 7, MS);
	w.pad = 1;
	check(refuse(&w, EINVAL), "nonzero pad -> EINVAL");
	prep(&w, &word, 7, MS);
	w.hint = 0x100;
	check(refuse(&w, EINVAL), "hint out of range -> EINVAL");
	prep(&w, &word, 7, MS);
	w.hint = 0x6f;
	check(refuse(&w, EINVAL), "hint leaf 5 forbids -> EINVAL");
	prep(&w, &word, 7, 0);
	w.deadline_ns += info.max_wait_ns + 1000 * MS;
	check(refuse(&w, ERANGE), "deadline beyond cap -> ERANGE");
	check(ioctl(fd, _IOWR(MWAIT_IOC_MAGIC, 9, struct mwait_wait), &w) == -1 &&
	      errno == ENOTTY, "unknown ioctl -> ENOTTY");
	/* 'w' belongs to another driver; ABI 1 used it. */
	check(ioctl(fd, _IOWR('w', 1, struct mwait_wait), &w) == -1 &&
	      errno == ENOTTY, "the ABI 1 WAIT number ('w', 1) -> ENOTTY");

	prep(&w, &word, 8, 10 * MS);
	r = ioctl(fd, MWAIT_IOC_WAIT, &w);
	check(!r && w.reason == MWAIT_REASON_CHANGED && w.value == 7 &&
	      w.wakeups == 0, "value already differs -> CHANGED at once");

	prep(&w, &word, 7, 20 * MS);
	do {
		r = ioctl(fd, MWAIT_IOC_WAIT, &w);
	} while (!r && w.reason == MWAIT_REASON_RESCHED);
	check(!r && w.reason == MWAIT_REASON_DEADLINE &&
	      now_ns() >= w.deadline_ns && w.value == 7,
	      "deadline honoured");
	check(deadline_lateness(&word) <= LATE_MAX_NS,
	      "no store: DEADLINE, median lateness within the bound");

	/* No SA_RESTART: the interrupted ioctl must surface as EINTR. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	prep(&w, &word, 7, 0);
	w.deadline_ns = now_ns() + info.max_wait_ns;
	do {
		r = ioctl(fd, MWAIT_IOC_WAIT, &w);
	} while (!r && w.reason == MWAIT_REASON_RESCHED);
	check(r == -1 && errno == EINTR && w.reason == MWAIT_REASON_SIGNAL,
	      "signal interrupts a wait -> EINTR");

	pthread_create(&t, NULL, storer, NULL);
	check(!wait_changed(&cell, 0) &&
	      __atomic_load_n(&cell, __ATOMIC_SEQ_CST) == 1, "wake on store across threads");
	pthread_join(t, NULL);
	stale_pages();
	restarts();
	if (compat) {
		/* A 32-bit caller: the layout and compat path, not the load. */
		printf("%d passed, %d failed\n", passed, failed);
		return failed != 0;
	}
	privileges();
	oversubscribed();

	pthread_create(&t, NULL, ponger, NULL);
	r = 0;
	for (uint32_t i = 1; i <= PINGPONGS && !r; i++) {
		__atomic_store_n(&ping, i, __ATOMIC_SEQ_CST);
		r = wait_changed(&pong, i - 1);
	}
	pthread_join(t, &res);
	check(!r && !res && pong == PINGPONGS, "10^5 ping-pongs, no lost wake");

	{
		struct bg_wait b = { .p = &cell, .rel = 300 * MS };

		b.wfd = open("/dev/mwait", O_RDWR);
		pthread_create(&t, NULL, bg_waiter, &b);
		usleep(20000);
		close(b.wfd);
		pthread_join(t, NULL);
		check(ended_quietly(&b) &&
		      ioctl(b.wfd, MWAIT_IOC_WAIT, &w) == -1 && errno == EBADF,
		      "close of the fd during a wait");
	}
	{
		/*
		 * Only the waiter's fd is open (the wait itself may return
		 * early with RESCHED, so the file, not the ioctl in flight, is
		 * what must hold the module): the module must stay.
		 */
		struct bg_wait b = { .p = &cell, .rel = 300 * MS };

		close(fd);
		b.wfd = open("/dev/mwait", O_RDWR);
		pthread_create(&t, NULL, bg_waiter, &b);
		usleep(20000);
		/* try_stop_module(): a module in use and no force: EWOULDBLOCK. */
		r = syscall(SYS_delete_module, "mwait", O_NONBLOCK);
		if (r == 0 || errno != EWOULDBLOCK)
			printf("# delete_module: %d, errno %d\n", r, errno);
		check(r == -1 && errno == EWOULDBLOCK,
		      "rmmod while a waiter is inside -> EWOULDBLOCK");
		pthread_join(t, NULL);
		check(ended_quietly(&b), "the waiter survives the rmmod attempt");
		close(b.wfd);
		fd = open("/dev/mwait", O_RDWR);
		check(fd >= 0, "the module is still there");
	}

	{
		/*
		 * The pin counter itself is tested: a wait in flight must show
		 * up as one pinned page, and it must be gone once it returns.
		 */
		struct bg_wait b = { .wfd = fd, .p = &cell, .rel = 100 * MS,
				     .hold = 1 };
		long n, most = 0, before = pinned_pages();

		pthread_create(&t, NULL, bg_waiter, &b);
		for (int i = 0; i < 50; i++) {
			usleep(1000);
			n = pinned_pages();
			/* A failed read (-1) sticks, and fails the check. */
			if (most >= 0 && (n < 0 || n > most))
				most = n;
		}
		pthread_join(t, NULL);
		printf("# pinned: %ld before, at most %ld during, %ld after\n",
		       before, most, pinned_pages());
		check(before == 0 && most == 1 && pinned_pages() == 0 &&
		      !b.r && b.w.reason == MWAIT_REASON_DEADLINE,
		      "a wait in flight pins one page, none after it");
	}

	check(fuzz(20000, &cell), "20000 random ioctls, documented errnos only");
	timed_fuzz();
	check(pinned_pages() == 0, "no page left pinned after the suite");


	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
