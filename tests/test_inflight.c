/*
 * Unit tests for tally/inflight.h: the in-flight gauges and the isolation
 * throttle of "mm/vmscan: throttle MGLRU eviction when isolated folios pile
 * up" (Hui Zhu, v7), one rule per test, then threads that over-isolate, wait
 * once and give up, and putbacks that wake them.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <tally/inflight.h>

#define U(x) ((tally_uword)(x))

/* Evictable sizes, per type, read by the throttle through a callback. */
struct pool {
	tally_uword ev[TALLY_INFLIGHT_TYPES_MAX];
	int calls;
};

static tally_uword pool_evictable(void *arg, unsigned type)
{
	struct pool *p = (struct pool *)arg;
	__atomic_add_fetch(&p->calls, 1, __ATOMIC_RELAXED);
	return __atomic_load_n(&p->ev[type], __ATOMIC_RELAXED);
}

static const struct tally_inflight_caller ordinary = {false, true, NULL};
static const struct tally_inflight_caller restricted = {false, false, NULL};
static const struct tally_inflight_caller kswapd = {true, true, NULL};

static struct tally_inflight_stats stats(const struct tally_inflight *f)
{
	struct tally_inflight_stats s;
	tally_inflight_stats(f, &s);
	return s;
}

Test(inflight, init_and_bad_input)
{
	struct tally_inflight f;
	cr_assert_eq(tally_inflight_init(&f, 0, 0), -EINVAL);
	cr_assert_eq(tally_inflight_init(&f, TALLY_INFLIGHT_TYPES_MAX + 1, 0), -EINVAL);
	cr_assert_eq(tally_inflight_init(NULL, 2, 0), -EINVAL);
	cr_assert_eq(tally_inflight_init(&f, 2, TALLY_INFLIGHT_WAIT_MAX_NS + 1), -EINVAL);
	cr_assert_eq(tally_inflight_init(&f, 2, 0), 0);
	cr_assert_eq(tally_inflight_wait_ns(&f), 20000000u);
	cr_assert_eq(tally_inflight_read(&f, 0), 0);
	cr_assert_eq(tally_inflight_read(&f, 1), 0);
	cr_assert_eq(tally_inflight_read(&f, 2), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 2, 1), -EINVAL);
	cr_assert_eq(tally_inflight_isolate(NULL, 0, 1), -EINVAL);
	cr_assert_eq(tally_inflight_putback(&f, 2, 1), -EINVAL);
	tally_inflight_destroy(&f);
	tally_inflight_destroy(NULL);
}

/* NULL anywhere: every public call fails cleanly (-EINVAL, 0, false or a
 * no-op); nothing reaches a gauge. */
Test(inflight, null_anywhere)
{
	struct tally_inflight f;
	struct tally_inflight_stats s;
	struct pool p = {{100}, 0};
	bool fatal = true;
	cr_assert_eq(tally_inflight_init(NULL, 1, 0), -EINVAL);
	cr_assert_eq(tally_inflight_init(&f, 1, 1000000), 0);
	tally_inflight_destroy(NULL);
	cr_assert_eq(tally_inflight_wait_ns(NULL), 0);
	cr_assert_eq(tally_inflight_read(NULL, 0), 0);
	cr_assert_eq(tally_inflight_waiters(NULL), 0);
	tally_inflight_wake(NULL);
	cr_assert_eq(tally_inflight_isolate(NULL, 0, 1), -EINVAL);
	cr_assert_eq(tally_inflight_putback(NULL, 0, 1), -EINVAL);
	cr_assert(!tally_inflight_too_many(NULL, 0, 0, NULL));
	cr_assert_eq(tally_inflight_allowed(NULL, 1u, pool_evictable, &p, NULL, &fatal), 0u);
	cr_assert(!fatal);
	fatal = true;
	cr_assert_eq(tally_inflight_allowed(&f, 1u, NULL, &p, NULL, &fatal), 0u);
	cr_assert(!fatal);
	/* NULL who is an ordinary caller, NULL fatal is not written. */
	cr_assert_eq(tally_inflight_allowed(&f, 1u, pool_evictable, &p, NULL, NULL), 1u);
	memset(&s, 0xa5, sizeof(s));
	tally_inflight_stats(NULL, &s);
	cr_assert(s.throttled == 0 && s.woken == 0 && s.timeouts == 0 && s.gave_up == 0 &&
		  s.fatal == 0);
	tally_inflight_stats(&f, NULL);
	cr_assert_eq(tally_inflight_read(&f, 0), 0);
	cr_assert_eq(stats(&f).throttled, 0);
	tally_inflight_destroy(&f);
}

Test(inflight, isolate_and_putback_move_the_gauge)
{
	struct tally_inflight f;
	cr_assert_eq(tally_inflight_init(&f, 2, 1000000), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 0, 32), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 1, 5), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 0, 3), 0);
	cr_assert_eq(tally_inflight_read(&f, 0), 35);
	cr_assert_eq(tally_inflight_read(&f, 1), 5);
	cr_assert_eq(tally_inflight_putback(&f, 0, 30), 0);
	cr_assert_eq(tally_inflight_read(&f, 0), 5);
	/* More than is in flight: refused, nothing changes. */
	cr_assert_eq(tally_inflight_putback(&f, 1, 6), -EINVAL);
	cr_assert_eq(tally_inflight_read(&f, 1), 5);
	/* A gauge that would wrap: refused. */
	cr_assert_eq(tally_inflight_isolate(&f, 1, TALLY_UWORD_MAX), -EINVAL);
	cr_assert_eq(tally_inflight_read(&f, 1), 5);
	cr_assert_eq(tally_inflight_putback(&f, 1, 5), 0);
	cr_assert_eq(tally_inflight_putback(&f, 0, 5), 0);
	cr_assert(tally_inflight_read(&f, 0) == 0 && tally_inflight_read(&f, 1) == 0);
	tally_inflight_destroy(&f);
}

Test(inflight, exempt_callers_are_never_over)
{
	struct tally_inflight f;
	cr_assert_eq(tally_inflight_init(&f, 2, 1000000), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 0, 1000), 0);
	cr_assert(!tally_inflight_too_many(&f, 0, 16, &kswapd));
	cr_assert(!tally_inflight_too_many(&f, 0, 0, &kswapd));
	cr_assert(tally_inflight_too_many(&f, 0, 16, &ordinary));
	tally_inflight_destroy(&f);
}

Test(inflight, threshold_is_half_the_evictable_size)
{
	struct tally_inflight f;
	cr_assert_eq(tally_inflight_init(&f, 2, 1000000), 0);
	/* Restricted (no IO/FS): evictable 100 -> threshold 50, strict. */
	cr_assert_eq(tally_inflight_isolate(&f, 1, 50), 0);
	cr_assert(!tally_inflight_too_many(&f, 1, 100, &restricted));
	cr_assert(!tally_inflight_too_many(&f, 1, 101, &restricted));
	cr_assert(tally_inflight_too_many(&f, 1, 99, &restricted)); /* 99/2 = 49 */
	cr_assert_eq(tally_inflight_isolate(&f, 1, 1), 0);
	cr_assert(tally_inflight_too_many(&f, 1, 100, &restricted));
	cr_assert(!tally_inflight_too_many(&f, 1, 102, &restricted));
	/* Nothing isolated is never too many, even with nothing evictable. */
	cr_assert(!tally_inflight_too_many(&f, 0, 0, &restricted));
	/* Bad type: false. */
	cr_assert(!tally_inflight_too_many(&f, 7, 0, &restricted));
	tally_inflight_destroy(&f);
}

Test(inflight, io_fs_callers_get_an_eighth_of_the_room)
{
	struct tally_inflight f;
	cr_assert_eq(tally_inflight_init(&f, 2, 1000000), 0);
	/* evictable 800: io_fs -> 800 >> 3 = 100 -> threshold 50. */
	cr_assert_eq(tally_inflight_isolate(&f, 0, 50), 0);
	cr_assert(!tally_inflight_too_many(&f, 0, 800, &ordinary));
	cr_assert(!tally_inflight_too_many(&f, 0, 800, NULL)); /* NULL: ordinary */
	cr_assert_eq(tally_inflight_isolate(&f, 0, 1), 0);
	cr_assert(tally_inflight_too_many(&f, 0, 800, &ordinary));
	cr_assert(tally_inflight_too_many(&f, 0, 800, NULL));
	cr_assert(!tally_inflight_too_many(&f, 0, 800, &restricted)); /* 51 <= 400 */
	/* The shift comes before the division: 815 >> 3 = 101 -> 50. */
	cr_assert(tally_inflight_too_many(&f, 0, 815, &ordinary));
	cr_assert(!tally_inflight_too_many(&f, 0, 816, &ordinary)); /* 102 / 2 = 51 */
	tally_inflight_destroy(&f);
}

Test(inflight, empty_types_are_never_allowed)
{
	struct tally_inflight f;
	struct pool p = {{0, 100}, 0};
	bool fatal = true;
	cr_assert_eq(tally_inflight_init(&f, 2, 1000000), 0);
	/* anon empty, file has items: only file. Even for kswapd. */
	cr_assert_eq(tally_inflight_allowed(&f, 3u, pool_evictable, &p, &ordinary, &fatal), 2u);
	cr_assert(!fatal);
	cr_assert_eq(tally_inflight_allowed(&f, 3u, pool_evictable, &p, &kswapd, &fatal), 2u);
	/* File over-isolated and anon empty: the empty type does not count as
	 * allowed; after one wait the caller gives up. */
	cr_assert_eq(tally_inflight_isolate(&f, 1, 51), 0);
	cr_assert_eq(tally_inflight_allowed(&f, 3u, pool_evictable, &p, &restricted, &fatal), 0u);
	cr_assert(!fatal);
	cr_assert_eq(stats(&f).throttled, 1);
	cr_assert_eq(stats(&f).gave_up, 1);
	tally_inflight_destroy(&f);
}

Test(inflight, nothing_evictable_stops_at_once)
{
	struct tally_inflight f;
	struct pool p = {{0, 0}, 0};
	bool fatal = true;
	/* A one-minute wait bound: the call must not wait at all. */
	cr_assert_eq(tally_inflight_init(&f, 2, 60000000000ull), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 0, 10), 0);
	double t0 = harness_now();
	cr_assert_eq(tally_inflight_allowed(&f, 3u, pool_evictable, &p, &ordinary, &fatal), 0u);
	cr_assert_eq(tally_inflight_allowed(&f, 3u, pool_evictable, &p, &kswapd, &fatal), 0u);
	cr_assert_lt(harness_now() - t0, 10.0);
	cr_assert(!fatal);
	cr_assert_eq(p.calls, 4); /* each type read once per call */
	struct tally_inflight_stats s = stats(&f);
	cr_assert(s.throttled == 0 && s.gave_up == 0 && s.timeouts == 0);
	tally_inflight_destroy(&f);
}

Test(inflight, some_allowed_returns_them_without_waiting)
{
	struct tally_inflight f;
	struct pool p = {{100, 100, 100}, 0};
	bool fatal;
	cr_assert_eq(tally_inflight_init(&f, 3, 60000000000ull), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 1, 51), 0); /* type 1 over (restricted) */
	cr_assert_eq(tally_inflight_allowed(&f, 7u, pool_evictable, &p, &restricted, &fatal), 5u);
	/* Only the types asked about. */
	cr_assert_eq(tally_inflight_allowed(&f, 4u, pool_evictable, &p, &restricted, &fatal), 4u);
	cr_assert_eq(tally_inflight_allowed(&f, 1u, pool_evictable, &p, &restricted, &fatal), 1u);
	/* io_fs: threshold (100 >> 3) / 2 = 6: type 0 with 7 isolated is over. */
	cr_assert_eq(tally_inflight_isolate(&f, 0, 7), 0);
	cr_assert_eq(tally_inflight_allowed(&f, 7u, pool_evictable, &p, &ordinary, &fatal), 4u);
	cr_assert_eq(tally_inflight_allowed(&f, 7u, pool_evictable, &p, &kswapd, &fatal), 7u);
	cr_assert_eq(stats(&f).throttled, 0);
	tally_inflight_destroy(&f);
}

Test(inflight, all_over_isolated_waits_once_then_gives_up)
{
	struct tally_inflight f;
	struct pool p = {{100, 100}, 0};
	bool fatal = true;
	const uint64_t wait = 30000000; /* 30 ms */
	cr_assert_eq(tally_inflight_init(&f, 2, wait), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 0, 51), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 1, 51), 0);
	double t0 = harness_now();
	cr_assert_eq(tally_inflight_allowed(&f, 3u, pool_evictable, &p, &restricted, &fatal), 0u);
	double dt = harness_now() - t0;
	cr_assert(!fatal);
	cr_assert_geq(dt, 0.030 - 0.001, "waited %f s", dt);
	cr_assert_eq(p.calls, 4); /* checked, waited, checked again */
	struct tally_inflight_stats s = stats(&f);
	cr_assert(s.throttled == 1 && s.timeouts == 1 && s.woken == 0 && s.gave_up == 1 &&
		  s.fatal == 0);
	cr_assert_eq(tally_inflight_waiters(&f), 0);
	tally_inflight_destroy(&f);
}

Test(inflight, evictable_growth_during_the_wait_allows)
{
	/* The second check re-reads the evictable sizes. */
	struct tally_inflight f;
	struct pool p = {{100, 0}, 0};
	bool fatal;
	cr_assert_eq(tally_inflight_init(&f, 2, 1000000), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 0, 51), 0);
	cr_assert_eq(tally_inflight_allowed(&f, 1u, pool_evictable, &p, &restricted, &fatal), 0u);
	p.ev[0] = 1000; /* now 51 <= 500 */
	cr_assert_eq(tally_inflight_allowed(&f, 1u, pool_evictable, &p, &restricted, &fatal), 1u);
	tally_inflight_destroy(&f);
}

Test(inflight, fatal_flag_returns_zero_and_says_so)
{
	struct tally_inflight f;
	struct pool p = {{100, 100}, 0};
	int dying = 1;
	struct tally_inflight_caller who = {false, false, &dying};
	bool fatal = false;
	cr_assert_eq(tally_inflight_init(&f, 2, 1000000), 0);
	/* Not over-isolated: the flag is not looked at, types are allowed. */
	cr_assert_eq(tally_inflight_allowed(&f, 3u, pool_evictable, &p, &who, &fatal), 3u);
	cr_assert(!fatal);
	cr_assert_eq(tally_inflight_isolate(&f, 0, 51), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 1, 51), 0);
	cr_assert_eq(tally_inflight_allowed(&f, 3u, pool_evictable, &p, &who, &fatal), 0u);
	cr_assert(fatal);
	cr_assert_eq(p.calls, 2 + 2); /* no check after the wait */
	struct tally_inflight_stats s = stats(&f);
	cr_assert(s.throttled == 1 && s.fatal == 1 && s.gave_up == 0);
	/* Flag clear: the ordinary give-up, fatal false. */
	dying = 0;
	cr_assert_eq(tally_inflight_allowed(&f, 3u, pool_evictable, &p, &who, &fatal), 0u);
	cr_assert(!fatal);
	cr_assert_eq(stats(&f).gave_up, 1);
	tally_inflight_destroy(&f);
}

/* ---- threads ------------------------------------------------------------ */
struct waiter {
	struct tally_inflight *f;
	struct pool *p;
	unsigned types;
	unsigned result;
	double seconds;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = (struct waiter *)arg;
	bool fatal;
	double t0 = harness_now();
	w->result = tally_inflight_allowed(w->f, w->types, pool_evictable, w->p, &restricted, &fatal);
	w->seconds = harness_now() - t0;
	return NULL;
}

static void wait_for_waiters(struct tally_inflight *f, unsigned n)
{
	double t0 = harness_now();
	while (tally_inflight_waiters(f) < n) {
		cr_assert_lt(harness_now() - t0, 30.0, "waiters never arrived");
		sched_yield();
	}
}

Test(inflight, putback_wakes_every_waiter)
{
	enum { N = 4 };
	struct tally_inflight f;
	struct pool p = {{100, 100}, 0};
	struct waiter w[N];
	pthread_t th[N];
	/* A one-minute bound: only a wake can end the waits in time. */
	cr_assert_eq(tally_inflight_init(&f, 2, 60000000000ull), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 0, 51), 0);
	cr_assert_eq(tally_inflight_isolate(&f, 1, 60), 0);
	for (int i = 0; i < N; i++) {
		w[i] = (struct waiter){&f, &p, 3u, 99u, 0};
		cr_assert_eq(pthread_create(&th[i], NULL, waiter_main, &w[i]), 0);
	}
	wait_for_waiters(&f, N);
	/* Anon back to 50: anon allowed again; file still over. */
	cr_assert_eq(tally_inflight_putback(&f, 0, 1), 0);
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(w[i].result, 1u);
		cr_assert_lt(w[i].seconds, 30.0);
	}
	struct tally_inflight_stats s = stats(&f);
	cr_assert(s.throttled == N && s.woken == N && s.timeouts == 0 && s.gave_up == 0);
	tally_inflight_destroy(&f);
}

/* Isolators that together pass the threshold wait once and give up; the
 * putbacks after they give up leave every gauge at 0. */
struct isolator {
	struct tally_inflight *f;
	struct pool *p;
	pthread_barrier_t *bar;
	unsigned result;
	double seconds;
};

static void *isolator_main(void *arg)
{
	struct isolator *it = (struct isolator *)arg;
	bool fatal;
	tally_inflight_isolate(it->f, 0, 20);
	pthread_barrier_wait(it->bar); /* all isolated: 80 > 50 */
	double t0 = harness_now();
	it->result = tally_inflight_allowed(it->f, 1u, pool_evictable, it->p, &restricted, &fatal);
	it->seconds = harness_now() - t0;
	pthread_barrier_wait(it->bar); /* nobody puts back before all gave up */
	tally_inflight_putback(it->f, 0, 20);
	return NULL;
}

Test(inflight, over_isolators_wait_once_and_give_up)
{
	enum { N = 4 };
	struct tally_inflight f;
	struct pool p = {{100}, 0};
	struct isolator it[N];
	pthread_t th[N];
	pthread_barrier_t bar;
	cr_assert_eq(tally_inflight_init(&f, 1, 20000000), 0); /* 20 ms */
	pthread_barrier_init(&bar, NULL, N);
	for (int i = 0; i < N; i++) {
		it[i] = (struct isolator){&f, &p, &bar, 99u, 0};
		cr_assert_eq(pthread_create(&th[i], NULL, isolator_main, &it[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(it[i].result, 0u);
		cr_assert_geq(it[i].seconds, 0.019);
	}
	struct tally_inflight_stats s = stats(&f);
	cr_assert(s.throttled == N && s.gave_up == N && s.timeouts + s.woken == N);
	cr_assert_eq(tally_inflight_read(&f, 0), 0);
	pthread_barrier_destroy(&bar);
	tally_inflight_destroy(&f);
}

/* A putback that lands while a reclaimer is between its check and its
 * sleep is never lost: many rounds of a waiter against a putback. */
Test(inflight, no_lost_wakeup)
{
	struct tally_inflight f;
	struct pool p = {{100}, 0};
	cr_assert_eq(tally_inflight_init(&f, 1, 60000000000ull), 0);
	for (int round = 0; round < 200; round++) {
		struct waiter w = {&f, &p, 1u, 99u, 0};
		pthread_t th;
		cr_assert_eq(tally_inflight_isolate(&f, 0, 51), 0);
		cr_assert_eq(pthread_create(&th, NULL, waiter_main, &w), 0);
		if (round & 1)
			sched_yield();
		cr_assert_eq(tally_inflight_putback(&f, 0, 51), 0);
		pthread_join(th, NULL);
		cr_assert_eq(w.result, 1u, "round %d", round);
		cr_assert_lt(w.seconds, 30.0, "round %d: a lost wakeup", round);
	}
	tally_inflight_destroy(&f);
}
