/*
 * examples/reclaim/lock.c - lock call sites and the instrumented
 * acquisitions (perf lock contention's view), clocks, CPU pinning and the
 * spin work that stands for touching memory.
 */
#define _GNU_SOURCE
#include "model_impl.h"

#include <sched.h>
#include <time.h>

const char *const site_key[NR_SITES] = {
	"note_cost_unlock", "refault_note_cost", "prepare_scan_control",
	"shrink_active_list", "lru_add_drain", "isolate", "putback",
};

const char *const site_label[NR_SITES] = {
	"note_cost_unlock (shrink_lruvec)",
	"refault_note_cost (workingset_refault)",
	"prepare_scan_control (shrink_node)",
	"shrink_active_list",
	"lru_add_drain",
	"isolate (shrink_inactive_list)",
	"putback (shrink_inactive_list)",
};

int site_is_producer(int site)
{
	return site == SITE_NOTE_COST_UNLOCK || site == SITE_REFAULT_NOTE_COST;
}

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU work that stands for touching memory or shrinking a folio. */
void burn(unsigned units)
{
	uint64_t h = units;
	for (unsigned i = 0; i < units * 16u; i++) {
		h = h * 6364136223846793005ull + i;
		__asm__ __volatile__("" : "+r"(h));
	}
}

/* Pin the calling thread to the k-th CPU it may run on (round-robin), so
 * the scheduler cannot pack every thread onto one CPU of a busy machine
 * and hide the contention. */
void pin_nth(unsigned k)
{
	cpu_set_t allowed, one;
	int n, i;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	n = CPU_COUNT(&allowed);
	if (n <= 1)
		return;
	k %= (unsigned)n;
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &allowed))
			continue;
		if (k-- == 0) {
			CPU_ZERO(&one);
			CPU_SET(i, &one);
			sched_setaffinity(0, sizeof(one), &one);
			return;
		}
	}
}

/*
 * lru_lock is a spinlock in the kernel: waiters spin for the (short) hold
 * time. Here it is a glibc adaptive mutex whose waiter spins on trylock
 * for up to LONG_WAIT_NS (lock_at) before it sleeps in the kernel: a
 * spinlock's wait while the holder runs, and no CPU burnt behind a holder
 * that lost its CPU.
 */
int lock_init(struct site_lock *l)
{
	pthread_mutexattr_t a;
	int err = pthread_mutexattr_init(&a);
	if (err)
		return err;
#if defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
	err = pthread_mutex_init(&l->m, &a);
	pthread_mutexattr_destroy(&a);
	l->holder_site = -1;
	return err;
}

void lock_destroy(struct site_lock *l)
{
	pthread_mutex_destroy(&l->m);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

static void note_wait(struct tstats *ts, int site, uint64_t ns)
{
	ts->wait_ns[site] += ns;
	ts->contended[site]++;
	if (ns > LONG_WAIT_NS) {
		ts->long_waits[site]++;
		ts->long_wait_ns[site] += ns;
	}
}

/*
 * An instrumented acquisition: a failed trylock starts the wait clock and
 * records who held the lock up (the site of its last acquisition: a hint,
 * read without the lock).
 */
void lock_at(struct site_lock *l, struct tstats *ts, int site)
{
	if (pthread_mutex_trylock(&l->m)) {
		int h = __atomic_load_n(&l->holder_site, __ATOMIC_RELAXED);
		uint64_t t0 = now_ns(), t;
		int got = 0;
		/* Spin as a spinlock waiter does, for up to LONG_WAIT_NS: no
		 * hold lasts that long, so only a holder that lost its CPU
		 * sends the waiter to sleep. */
		do {
			cpu_relax();
			got = !pthread_mutex_trylock(&l->m);
			t = now_ns();
		} while (!got && t - t0 < LONG_WAIT_NS);
		if (!got) {
			pthread_mutex_lock(&l->m);
			t = now_ns();
		}
		note_wait(ts, site, t - t0);
		if (h >= 0 && h < NR_SITES)
			ts->contended_by[site][h]++;
	}
	__atomic_store_n(&l->holder_site, site, __ATOMIC_RELAXED);
	ts->acq[site]++;
	if (ts->hold_times) {
		l->holder = ts;
		l->t_acquired = now_ns();
	}
}

void unlock(struct site_lock *l)
{
	struct tstats *ts = l->holder;
	if (ts) {
		int site = __atomic_load_n(&l->holder_site, __ATOMIC_RELAXED);
		ts->hold_ns[site] += now_ns() - l->t_acquired;
		l->holder = NULL;
	}
	pthread_mutex_unlock(&l->m);
}

void cost_lock_at(struct tally_cost *c, struct tstats *ts, int site)
{
	if (!tally_cost_trylock(c)) {
		uint64_t t0 = now_ns();
		tally_cost_lock(c);
		note_wait(ts, site, now_ns() - t0);
		ts->contended_by[site][site]++; /* only prepare_scan_control takes it */
	}
	ts->acq[site]++;
}
