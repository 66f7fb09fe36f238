/* What the user-mode wait instructions really do on this machine, each tried in a
 * child process so that SIGILL (an instruction the CPU or the hypervisor refuses) is
 * survivable. For UMONITOR/UMWAIT, TPAUSE and MONITORX/MWAITX, whatever CPUID says:
 *   - whether it executes at all (exit status or the signal of the child);
 *   - with nobody writing: the median TSC cycles of one wait for timers of
 *     1e3 .. 1e7 TSC cycles (a real monitor lasts about its timer, up to the OS cap;
 *     a trapped or emulated no-op lasts the same whatever the timer);
 *   - with a writer storing to the armed line every ~200 us: how many waits returned
 *     without a store (early returns) and the median delay from the store to the
 *     waiter's return (a real monitor wakes within a few us).
 * Build and run: gcc -O2 -pthread benches/c/insn_probe.c -o /tmp/insn_probe && /tmp/insn_probe
 * (docs/hardware-results.md quotes it per machine). */
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#define WAITS 200
#define STORE_GAP_CYCLES_DIV 5000 /* 1/5000 s = 200 us */

static volatile uint32_t line[32] __attribute__((aligned(128)));
static volatile int writer_stop;
static volatile uint64_t last_store_tsc;
static uint64_t tsc_hz;

static inline void umonitor(volatile void *p)
{
	__asm__ volatile(".byte 0xf3, 0x48, 0x0f, 0xae, 0xf0" ::"a"(p) : "memory");
}

static inline int umwait(uint32_t ctrl, uint64_t deadline)
{
	uint8_t cf;
	__asm__ volatile(".byte 0xf2, 0x48, 0x0f, 0xae, 0xf1\n\tsetc %0"
			 : "=r"(cf)
			 : "c"(ctrl), "a"((uint32_t)deadline),
			   "d"((uint32_t)(deadline >> 32))
			 : "memory", "cc");
	return cf;
}

static inline int tpause(uint32_t ctrl, uint64_t deadline)
{
	uint8_t cf;
	__asm__ volatile(".byte 0x66, 0x0f, 0xae, 0xf1\n\tsetc %0"
			 : "=r"(cf)
			 : "c"(ctrl), "a"((uint32_t)deadline),
			   "d"((uint32_t)(deadline >> 32))
			 : "memory", "cc");
	return cf;
}

static inline void monitorx(volatile void *p)
{
	__asm__ volatile(".byte 0x0f, 0x01, 0xfa" ::"a"(p), "c"(0), "d"(0)
			 : "memory");
}

static inline void mwaitx(uint32_t timer)
{
	/* ECX bit 1: the timer in EBX is enabled; EAX 0xf0: C1-like hint off. */
	__asm__ volatile(".byte 0x0f, 0x01, 0xfb" ::"a"(0xf0), "b"(timer),
			 "c"(2)
			 : "memory");
}

enum insn { UMWAIT, TPAUSE, MWAITX };
static const char *names[] = { "umwait", "tpause", "mwaitx" };

/* One wait of `timer` TSC cycles on the line; returns its TSC length. */
static uint64_t one_wait(enum insn k, uint64_t timer)
{
	uint64_t t0 = __rdtsc();
	switch (k) {
	case UMWAIT:
		umonitor(&line[0]);
		if (line[0] == line[1])
			umwait(0, t0 + timer);
		break;
	case TPAUSE:
		tpause(0, t0 + timer);
		break;
	case MWAITX:
		monitorx(&line[0]);
		if (line[0] == line[1])
			mwaitx((uint32_t)timer);
		break;
	}
	return __rdtsc() - t0;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return v[n / 2];
}

static void *writer(void *arg)
{
	uint64_t gap = tsc_hz / STORE_GAP_CYCLES_DIV;

	(void)arg;
	while (!writer_stop) {
		uint64_t t = __rdtsc();

		while (__rdtsc() - t < gap && !writer_stop)
			_mm_pause();
		last_store_tsc = __rdtsc();
		__atomic_fetch_add(&line[0], 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void probe(enum insn k)
{
	static const uint64_t timers[] = { 1000, 10000, 100000, 1000000,
					   10000000 };
	uint64_t v[WAITS];
	int early = 0, woken = 0;
	uint64_t lat[WAITS];
	pthread_t th;

	/* Executes at all? A SIGILL kills this child here. */
	one_wait(k, 1000);
	printf("%s: executes\n", names[k]);
	for (unsigned t = 0; t < sizeof(timers) / sizeof(timers[0]); t++) {
		int n = timers[t] >= 1000000 ? 20 : WAITS;

		for (int i = 0; i < n; i++)
			v[i] = one_wait(k, timers[t]);
		printf("%s: no writer, timer %llu cycles: median %llu cycles\n",
		       names[k], (unsigned long long)timers[t],
		       (unsigned long long)median(v, n));
		fflush(stdout);
	}
	if (k == TPAUSE)
		return;
	writer_stop = 0;
	pthread_create(&th, NULL, writer, NULL);
	for (int i = 0; i < WAITS; i++) {
		uint32_t before = line[0];
		uint64_t t0 = __rdtsc(), t1;

		line[1] = before;
		one_wait(k, tsc_hz / 1000); /* 1 ms timer */
		t1 = __rdtsc();
		if (line[0] == before && t1 - t0 < tsc_hz / 1000 / 2)
			early++;
		else if (line[0] != before)
			lat[woken++] = t1 - last_store_tsc;
	}
	writer_stop = 1;
	pthread_join(th, NULL);
	printf("%s: writer every 200 us, %d waits of a 1 ms timer: %d early returns without a store, %d woken by the store, median store-to-return %llu cycles\n",
	       names[k], WAITS, early, woken,
	       (unsigned long long)(woken ? median(lat, woken) : 0));
}

static uint64_t measure_tsc_hz(void)
{
	struct timespec a, b;
	uint64_t t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &a);
	t0 = __rdtsc();
	usleep(100000);
	clock_gettime(CLOCK_MONOTONIC, &b);
	t1 = __rdtsc();
	return (t1 - t0) * 1000000000ull /
	       ((b.tv_sec - a.tv_sec) * 1000000000ull + b.tv_nsec - a.tv_nsec);
}

int main(void)
{
	unsigned a, b, c, d;
	char brand[49] = { 0 };
	struct utsname u;
	FILE *f;
	char buf[64];

	uname(&u);
	printf("uname -r: %s\n", u.release);
	for (unsigned i = 0; i < 3; i++) {
		__cpuid(0x80000002 + i, a, b, c, d);
		memcpy(brand + 16 * i, (unsigned[]){ a, b, c, d }, 16);
	}
	__cpuid(1, a, b, c, d);
	printf("cpu: %s, family %u model %u stepping %u\n", brand,
	       ((a >> 8) & 0xf) + ((a >> 20) & 0xff),
	       ((a >> 4) & 0xf) | ((a >> 12) & 0xf0), a & 0xf);
	printf("cpuid: monitor %u, hypervisor %u", (c >> 3) & 1, c >> 31);
	__cpuid_count(7, 0, a, b, c, d);
	printf(", waitpkg %u", (c >> 5) & 1);
	__cpuid(0x80000001, a, b, c, d);
	printf(", monitorx %u\n", (c >> 29) & 1);
	f = fopen("/sys/devices/system/cpu/umwait_control/max_time", "r");
	if (f && fgets(buf, sizeof(buf), f))
		printf("umwait_control max_time: %s", buf);
	if (f)
		fclose(f);
	tsc_hz = measure_tsc_hz();
	printf("tsc: %llu Hz (measured)\n", (unsigned long long)tsc_hz);
	fflush(stdout);
	for (int k = UMWAIT; k <= MWAITX; k++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			probe(k);
			fflush(stdout);
			_exit(0);
		}
		waitpid(pid, &st, 0);
		if (WIFSIGNALED(st))
			printf("%s: child killed by signal %d (%s)\n", names[k],
			       WTERMSIG(st), strsignal(WTERMSIG(st)));
		fflush(stdout);
	}
	return 0;
}
