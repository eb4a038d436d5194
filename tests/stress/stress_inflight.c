/*
 * stress_inflight: reclaimers isolate and put back concurrently through
 * the isolation throttle.
 *
 * Each reclaimer asks tally_inflight_allowed for a mask, isolates a random
 * batch of an allowed type, holds it briefly, and puts it back. The pool is
 * small, so the throttle waits, wakes and gives up all the time; some
 * reclaimers are exempt, some restricted, one is "dying" now and then.
 * Checks: every allowed mask names only types with items; a batch is never
 * refused; at the end every gauge is 0 and the sums of isolated and put
 * back agree to the item; each wait ended exactly once (woken or timed
 * out) and each give-up or fatal return followed a wait.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <tally/inflight.h>

enum { THREADS = 4, TYPES = 3 };

static struct tally_inflight F;
static tally_uword evictable[TYPES] = {64, 200, 0}; /* type 2 is empty */
static int stop;

struct worker {
	int id;
	unsigned long long isolated, putback, batches, zero, bad_mask, errors;
	int dying;
};

static tally_uword ev(void *arg, unsigned type)
{
	(void)arg;
	return evictable[type];
}

static void *worker(void *arg)
{
	struct worker *w = (struct worker *)arg;
	struct harness_rng r = {(uint64_t)w->id * 31u + 7u};
	struct tally_inflight_caller who = {w->id == 0, w->id != 1, &w->dying};
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		bool fatal;
		__atomic_store_n(&w->dying, harness_next(&r) % 50 == 0, __ATOMIC_RELEASE);
		unsigned mask = tally_inflight_allowed(&F, 7u, ev, NULL, &who, &fatal);
		if (!mask) {
			w->zero++;
			continue;
		}
		if (mask & 4u)
			w->bad_mask++;
		unsigned type = (mask & 1u) && (!(mask & 2u) || (harness_next(&r) & 1)) ? 0 : 1;
		tally_uword n = (tally_uword)(1 + harness_next(&r) % 24);
		if (tally_inflight_isolate(&F, type, n))
			w->errors++;
		w->isolated += n;
		w->batches++;
		if (harness_next(&r) & 1)
			sched_yield();
		if (tally_inflight_putback(&F, type, n))
			w->errors++;
		w->putback += n;
	}
	return NULL;
}

int main(void)
{
	pthread_t th[THREADS];
	struct worker w[THREADS] = {{0}};
	if (tally_inflight_init(&F, TYPES, 1000000)) /* 1 ms waits */
		return 2;
	for (int i = 0; i < THREADS; i++) {
		w[i].id = i;
		pthread_create(&th[i], NULL, worker, &w[i]);
	}
	double t0 = harness_now(), secs = harness_seconds();
	while (harness_now() - t0 < secs) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	unsigned long long iso = 0, put = 0, batches = 0, zero = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(w[i].bad_mask, 0);
		CHECK_EQ(w[i].errors, 0);
		iso += w[i].isolated;
		put += w[i].putback;
		batches += w[i].batches;
		zero += w[i].zero;
	}
	CHECK_EQ(iso, put);
	for (unsigned t = 0; t < TYPES; t++)
		CHECK_EQ(tally_inflight_read(&F, t), 0);
	CHECK_EQ(tally_inflight_waiters(&F), 0);
	struct tally_inflight_stats s;
	tally_inflight_stats(&F, &s);
	CHECK_EQ(s.throttled, s.woken + s.timeouts);
	CHECK(s.gave_up + s.fatal <= s.throttled, "gave_up %llu fatal %llu throttled %llu",
	      (unsigned long long)s.gave_up, (unsigned long long)s.fatal,
	      (unsigned long long)s.throttled);
	CHECK_EQ(s.gave_up + s.fatal, zero);
	CHECK(batches > 0, "no batch isolated");
	printf("stress_inflight: %llu batches, %llu items; %llu waits (%llu woken, %llu timed "
	       "out), %llu gave up, %llu fatal\n",
	       batches, iso, (unsigned long long)s.throttled, (unsigned long long)s.woken,
	       (unsigned long long)s.timeouts, (unsigned long long)s.gave_up,
	       (unsigned long long)s.fatal);
	tally_inflight_destroy(&F);
	return harness_exit("stress_inflight");
}
