/*
 * tests/perturb.h - schedule perturbation for stress programs: make the
 * threads under test lose their CPU at random points, for random times,
 * so that races whose window is a few instructions wide are hit in a
 * seconds-long run.
 *
 *   #define _GNU_SOURCE
 *   #include "harness.h"
 *   #include "perturb.h"
 *
 *   perturb_init();                  // main thread, before any thread starts
 *   ... in each thread under test:   perturb_register();   (then its work)
 *   perturb_start(&opts);            // preempters, stopper, signal storms
 *   ... run ...
 *   perturb_stop();                  // before the registered threads exit
 *   ... in each thread under test:   perturb_unregister(); (before it exits)
 *
 * What it does, each part optional (struct perturb_opts):
 *   - preempters: a thread per listed CPU, pinned there, that wakes every
 *     period_us (timer slack 1 ns), spins up to spin_us and sleeps again.
 *     SCHED_FIFO if the process may use it (silently SCHED_OTHER if not):
 *     every wake-up then preempts whatever runs on that CPU, at a random
 *     point, and the scheduler may pick another thread of the CPU next.
 *   - the stopper: now and then picks a registered thread and sends it
 *     PERTURB_SIG_STOP; the handler sleeps until the stopper releases it
 *     (stop_min_us..stop_max_us later), a SIGSTOP of one thread. It stops
 *     the thread wherever it is, also between two instructions of a
 *     lock-free protocol, and the other threads of its CPU run meanwhile.
 *   - signal storms: bursts of PERTURB_SIG_STORM to every registered
 *     thread (an empty handler): kernel entries and exits at random points.
 * TALLY_PERTURB=preempt,stop,storm (any subset, or none) keeps only those;
 * TALLY_TEST_NO_SIGNALS=1 (set for the tests under qemu-i386) drops the
 * stopper and the storms, which are signals.
 * Handlers save errno and use only async-signal-safe calls; the program's
 * other system calls are restarted (SA_RESTART).
 *
 * perturb_stop() releases every stopped thread and joins the perturbing
 * threads; no signal is sent after it returns, so the registered threads
 * may then exit (unregister first). Counters of what happened:
 * perturb_report().
 */
#ifndef TALLY_TESTS_PERTURB_H
#define TALLY_TESTS_PERTURB_H

#ifndef _GNU_SOURCE
#  error "define _GNU_SOURCE before including perturb.h"
#endif

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define PERTURB_SIG_STOP SIGUSR1
#define PERTURB_SIG_STORM SIGUSR2
#define PERTURB_MAX_THREADS 32
#define PERTURB_MAX_CPUS 4

struct perturb_opts {
	int nr_preempt_cpus;               /* preempter threads: 0..4 */
	int preempt_cpus[PERTURB_MAX_CPUS]; /* their CPUs */
	unsigned period_us;                /* preempter wake-up period (20) */
	unsigned spin_us;                  /* preempter spins 0..spin_us (3) */
	int stopper;                       /* send stop signals */
	unsigned stop_gap_us;              /* stopper sleeps 0..gap between (200) */
	unsigned stop_min_us, stop_max_us; /* stop length (20..1000) */
	int storms;                        /* signal storms, from the stopper */
	int stopper_cpu;                   /* pin the stopper there; -1: no pin */
};

struct perturb_target {
	pthread_t tid;
	int used;   /* registered (only the stopper's thread reads it after start) */
	int hold;   /* 1: the stop handler sleeps; atomic */
};

struct perturb_state {
	struct perturb_target t[PERTURB_MAX_THREADS];
	int nr; /* registered slots; atomic */
	int stop;
	int fifo; /* preempters got SCHED_FIFO */
	struct perturb_opts o;
	pthread_t pre[PERTURB_MAX_CPUS], stopper;
	unsigned long long wakeups, stops, storm_sigs, stopped_ns;
	pthread_mutex_t reg_lock;
};

static struct perturb_state perturb_g = {.reg_lock = PTHREAD_MUTEX_INITIALIZER};
static __thread int perturb_self = -1;

static inline uint64_t perturb_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void perturb_sleep_ns(uint64_t ns)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ns / 1000000000ull);
	ts.tv_nsec = (long)(ns % 1000000000ull);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A small xorshift for the perturbing threads (not the harness rng, so a
 * program's own random sequence does not depend on this file). */
static inline uint64_t perturb_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void perturb_stop_handler(int sig)
{
	int e = errno, me = perturb_self;
	uint64_t t0 = perturb_ns();
	(void)sig;
	if (me >= 0) {
		/* Bounded: a lost release never hangs the program. */
		while (__atomic_load_n(&perturb_g.t[me].hold, __ATOMIC_ACQUIRE) &&
		       perturb_ns() - t0 < 20000000ull)
			perturb_sleep_ns(5000);
	}
	__atomic_fetch_add(&perturb_g.stopped_ns, perturb_ns() - t0, __ATOMIC_RELAXED);
	errno = e;
}

static void perturb_storm_handler(int sig)
{
	(void)sig;
}

/* Install the handlers. Main thread, before the registered threads start. */
static inline void perturb_init(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = perturb_stop_handler;
	sigaction(PERTURB_SIG_STOP, &sa, NULL);
	sa.sa_handler = perturb_storm_handler;
	sigaction(PERTURB_SIG_STORM, &sa, NULL);
}

/* The calling thread may be stopped and stormed from now on. */
static inline void perturb_register(void)
{
	int i;
	pthread_mutex_lock(&perturb_g.reg_lock);
	for (i = 0; i < PERTURB_MAX_THREADS; i++) {
		if (!perturb_g.t[i].used) {
			perturb_g.t[i].tid = pthread_self();
			perturb_g.t[i].used = 1;
			perturb_self = i;
			if (i >= perturb_g.nr)
				__atomic_store_n(&perturb_g.nr, i + 1, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&perturb_g.reg_lock);
}

/* Call after perturb_stop() (no signal comes any more), before exiting. */
static inline void perturb_unregister(void)
{
	pthread_mutex_lock(&perturb_g.reg_lock);
	if (perturb_self >= 0)
		perturb_g.t[perturb_self].used = 0;
	perturb_self = -1;
	pthread_mutex_unlock(&perturb_g.reg_lock);
}

static inline int perturb_pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void *perturb_preempter(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	uint64_t rs = 0x9e3779b97f4a7c15ull ^ (uint64_t)cpu;
	struct sched_param sp;
	memset(&sp, 0, sizeof(sp));
	perturb_pin(cpu);
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	sp.sched_priority = 1;
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
		__atomic_store_n(&perturb_g.fifo, 1, __ATOMIC_RELAXED);
	while (!__atomic_load_n(&perturb_g.stop, __ATOMIC_ACQUIRE)) {
		uint64_t spin = perturb_g.o.spin_us ?
					perturb_rand(&rs) % (perturb_g.o.spin_us * 1000ull) : 0;
		uint64_t t0;
		perturb_sleep_ns(perturb_g.o.period_us * 1000ull);
		t0 = perturb_ns();
		while (perturb_ns() - t0 < spin)
			;
		__atomic_fetch_add(&perturb_g.wakeups, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* A registered thread, picked at random; -1 if none. Stopper's thread. */
static inline int perturb_pick(uint64_t *rs)
{
	int n = __atomic_load_n(&perturb_g.nr, __ATOMIC_ACQUIRE), k, i;
	if (n <= 0)
		return -1;
	for (k = 0; k < 4; k++) {
		i = (int)(perturb_rand(rs) % (uint64_t)n);
		pthread_mutex_lock(&perturb_g.reg_lock);
		if (perturb_g.t[i].used) {
			pthread_mutex_unlock(&perturb_g.reg_lock);
			return i;
		}
		pthread_mutex_unlock(&perturb_g.reg_lock);
	}
	return -1;
}

/* Send sig to registered thread i (under the registration lock: a thread
 * unregisters only after perturb_stop(), this just keeps it tidy). */
static inline void perturb_kill(int i, int sig)
{
	pthread_mutex_lock(&perturb_g.reg_lock);
	if (perturb_g.t[i].used)
		pthread_kill(perturb_g.t[i].tid, sig);
	pthread_mutex_unlock(&perturb_g.reg_lock);
}

static void *perturb_stopper(void *arg)
{
	uint64_t rs = 0x2545f4914f6cdd1dull;
	const struct perturb_opts *o = &perturb_g.o;
	(void)arg;
	if (o->stopper_cpu >= 0)
		perturb_pin(o->stopper_cpu);
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	while (!__atomic_load_n(&perturb_g.stop, __ATOMIC_ACQUIRE)) {
		int i;
		perturb_sleep_ns(perturb_rand(&rs) % (o->stop_gap_us * 1000ull + 1));
		if (o->storms && perturb_rand(&rs) % 4 == 0) {
			int n = __atomic_load_n(&perturb_g.nr, __ATOMIC_ACQUIRE), k, j;
			for (k = 0; k < 8; k++)
				for (j = 0; j < n; j++) {
					perturb_kill(j, PERTURB_SIG_STORM);
					__atomic_fetch_add(&perturb_g.storm_sigs, 1, __ATOMIC_RELAXED);
				}
			continue;
		}
		if (!o->stopper || (i = perturb_pick(&rs)) < 0)
			continue;
		__atomic_store_n(&perturb_g.t[i].hold, 1, __ATOMIC_RELEASE);
		perturb_kill(i, PERTURB_SIG_STOP);
		perturb_sleep_ns((o->stop_min_us +
				  perturb_rand(&rs) % (o->stop_max_us - o->stop_min_us + 1)) *
				 1000ull);
		__atomic_store_n(&perturb_g.t[i].hold, 0, __ATOMIC_RELEASE);
		__atomic_fetch_add(&perturb_g.stops, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Default options: a preempter on cpu (if >= 0), stops and storms. The
 * environment variable TALLY_PERTURB, if set, keeps only the parts it
 * names ("preempt,stop,storm"; "none": nothing), to see which one matters. */
static inline void perturb_defaults(struct perturb_opts *o, int cpu)
{
	const char *env = getenv("TALLY_PERTURB");
	memset(o, 0, sizeof(*o));
	if (cpu >= 0) {
		o->nr_preempt_cpus = 1;
		o->preempt_cpus[0] = cpu;
	}
	o->period_us = 20;
	o->spin_us = 3;
	o->stopper = 1;
	o->stop_gap_us = 200;
	o->stop_min_us = 20;
	o->stop_max_us = 1000;
	o->storms = 1;
	o->stopper_cpu = -1;
	if (env) {
		if (!strstr(env, "preempt"))
			o->nr_preempt_cpus = 0;
		o->stopper = strstr(env, "stop") != NULL;
		o->storms = strstr(env, "storm") != NULL;
	}
	/* Under qemu-i386, whose signal delivery loses atomic updates and
	 * can crash the emulator (tests/CMakeLists.txt), no signals: the
	 * preempters only. */
	env = getenv("TALLY_TEST_NO_SIGNALS");
	if (env && *env == '1')
		o->stopper = o->storms = 0;
}

static inline void perturb_start(const struct perturb_opts *o)
{
	int k;
	perturb_g.o = *o;
	if (perturb_g.o.stop_max_us < perturb_g.o.stop_min_us)
		perturb_g.o.stop_max_us = perturb_g.o.stop_min_us;
	if (perturb_g.o.nr_preempt_cpus > PERTURB_MAX_CPUS)
		perturb_g.o.nr_preempt_cpus = PERTURB_MAX_CPUS;
	__atomic_store_n(&perturb_g.stop, 0, __ATOMIC_RELEASE);
	for (k = 0; k < perturb_g.o.nr_preempt_cpus; k++)
		pthread_create(&perturb_g.pre[k], NULL, perturb_preempter,
			       (void *)(intptr_t)perturb_g.o.preempt_cpus[k]);
	if (perturb_g.o.stopper || perturb_g.o.storms)
		pthread_create(&perturb_g.stopper, NULL, perturb_stopper, NULL);
}

static inline void perturb_stop(void)
{
	int k;
	__atomic_store_n(&perturb_g.stop, 1, __ATOMIC_RELEASE);
	for (k = 0; k < perturb_g.o.nr_preempt_cpus; k++)
		pthread_join(perturb_g.pre[k], NULL);
	if (perturb_g.o.stopper || perturb_g.o.storms)
		pthread_join(perturb_g.stopper, NULL);
	for (k = 0; k < PERTURB_MAX_THREADS; k++)
		__atomic_store_n(&perturb_g.t[k].hold, 0, __ATOMIC_RELEASE);
}

static inline void perturb_report(const char *name)
{
	printf("%s: perturbation: %llu preempter wake-ups (%s), %llu stops (%.1f ms stopped), "
	       "%llu storm signals\n",
	       name, __atomic_load_n(&perturb_g.wakeups, __ATOMIC_RELAXED),
	       __atomic_load_n(&perturb_g.fifo, __ATOMIC_RELAXED) ? "SCHED_FIFO" : "SCHED_OTHER",
	       __atomic_load_n(&perturb_g.stops, __ATOMIC_RELAXED),
	       (double)__atomic_load_n(&perturb_g.stopped_ns, __ATOMIC_RELAXED) * 1e-6,
	       __atomic_load_n(&perturb_g.storm_sigs, __ATOMIC_RELAXED));
}

#endif /* TALLY_TESTS_PERTURB_H */
