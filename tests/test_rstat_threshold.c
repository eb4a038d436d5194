/*
 * Unit tests for tally/rstat.h, thresholds and the flusher: per-group
 * thresholds (needs_flush past batch * CPUs, the ancestor walk), the
 * ratelimit with an injected clock, the periodic thread, concurrent stops
 * of it, and the clamped deadline of a very long period.
 *
 * Tests that count exact threshold crossings pin the thread to one CPU so
 * every update lands in one per-CPU slot.
 */
#define _GNU_SOURCE
#include "test_rstat_model.h"

#include <tally/rstat.h> /* also tells the build to link liburcu */

TestSuite(rstat_threshold, .init = rstat_setup, .fini = rstat_teardown);

/* ---- thresholds ------------------------------------------------------------ */

static struct tally_tree *tree_batch(unsigned items, unsigned batch)
{
	struct tally_tree_opts o;
	memset(&o, 0, sizeof(o));
	o.nr_items = items;
	o.batch = batch;
	return tally_tree_create_opts(&o);
}

/* Unit updates until needs_flush first holds: (floor(T / b) + 1) * b. */
static uint64_t flip_point(struct tally_tree *t, unsigned batch)
{
	return (tally_tree_flush_threshold(t) / batch + 1) * batch;
}

Test(rstat_threshold, default_threshold_is_64_times_online_cpus)
{
	struct tally_tree *t = tally_tree_create(1);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cr_assert_eq(tally_tree_flush_threshold(t), 64u * (uint64_t)n);
	cr_assert_eq(tally_tree_period_ns(t), 2000000000ull);
	tally_tree_destroy(t);
}

Test(rstat_threshold, needs_flush_flips_only_past_batch_times_cpus)
{
	unsigned batches[] = {1, 4, 64};
	size_t k;
	cr_assert_geq(harness_pin_here(), 0);
	for (k = 0; k < sizeof(batches) / sizeof(batches[0]); k++) {
		unsigned b = batches[k];
		struct tally_tree *t = tree_batch(1, b);
		struct tally_group *root = tally_tree_root(t);
		struct tally_group *g = tally_group_create(root);
		uint64_t flip = flip_point(t, b), j;
		cr_assert_eq(tally_tree_flush_threshold(t),
			     (uint64_t)b * (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
		for (j = 1; j < flip; j++) {
			cr_assert_eq(tally_group_mod(g, 0, (j & 1) ? 1 : -1), 0);
			cr_assert(!tally_group_needs_flush(g), "batch %u: flushable after %llu", b,
				  (unsigned long long)j);
			cr_assert(!tally_group_needs_flush(root));
			/* Thresholded flushes do nothing below the threshold. */
			tally_group_flush(g);
			tally_group_flush(root);
			cr_assert_eq(tally_group_read(g, 0), 0);
			cr_assert_eq(tally_group_read_local(g, 0), 0);
		}
		cr_assert_eq(tally_group_mod(g, 0, 1), 0); /* the flip-th unit */
		cr_assert(tally_group_needs_flush(g));
		cr_assert(tally_group_needs_flush(root));
		/* flip - 1 updates of alternating sign from +1, then +1. */
		tally_group_flush(g);
		cr_assert_eq(tally_group_read(g, 0), (flip & 1) ? 1 : 2);
		cr_assert(!tally_group_needs_flush(g)); /* the flush zeroed g's count */
		cr_assert(tally_group_needs_flush(root)); /* not the root's */
		cr_assert_eq(tally_group_read(root, 0), 0);
		tally_group_flush(root);
		cr_assert(!tally_group_needs_flush(root));
		cr_assert_eq(tally_group_read(root, 0), (flip & 1) ? 1 : 2);
		tally_tree_destroy(t);
	}
}

Test(rstat_threshold, one_big_update_makes_flushable)
{
	struct tally_tree *t = tree_batch(1, 8);
	struct tally_group *g = tally_group_create(tally_tree_root(t));
	tally_sword big = (tally_sword)tally_tree_flush_threshold(t) + 1;
	cr_assert_eq(tally_group_mod(g, 0, -big), 0);
	cr_assert(tally_group_needs_flush(g));
	tally_group_flush(g);
	cr_assert_eq(tally_group_read(g, 0), -big);
	cr_assert(!tally_group_needs_flush(g));
	/* Exactly the threshold is not past it. */
	cr_assert_eq(tally_group_mod(g, 0, big - 1), 0);
	cr_assert(!tally_group_needs_flush(g));
	tally_group_flush(g);
	cr_assert_eq(tally_group_read(g, 0), -big);
	tally_tree_destroy(t);
}

Test(rstat_threshold, ancestor_flushable_first_and_walk_stops_there)
{
	/* Two leaves under one parent: the parent sees both leaves' updates,
	 * so it needs a flush before either leaf does. */
	unsigned b = 4;
	struct tally_tree *t;
	struct tally_group *root, *p, *a, *c;
	uint64_t T, j, half;
	cr_assert_geq(harness_pin_here(), 0);
	t = tree_batch(1, b);
	T = tally_tree_flush_threshold(t);
	root = tally_tree_root(t);
	p = tally_group_create(root);
	a = tally_group_create(p);
	c = tally_group_create(p);
	half = flip_point(t, b) - 1; /* each leaf stays just below */
	for (j = 0; j < half; j++) {
		tally_group_mod(a, 0, 1);
		tally_group_mod(c, 0, 1);
	}
	cr_assert(!tally_group_needs_flush(a));
	cr_assert(!tally_group_needs_flush(c));
	cr_assert(tally_group_needs_flush(p));
	cr_assert(tally_group_needs_flush(root));
	/* A thresholded leaf flush does nothing; the parent's flushes all. */
	tally_group_flush(a);
	cr_assert_eq(tally_group_read(a, 0), 0);
	tally_group_flush(p);
	cr_assert_eq(tally_group_read(p, 0), (tally_sword)(2 * half));
	cr_assert_eq(tally_group_read(a, 0), (tally_sword)half);
	cr_assert_eq(tally_group_read(c, 0), (tally_sword)half);
	cr_assert(!tally_group_needs_flush(p));
	cr_assert(!tally_group_needs_flush(a)); /* the subtree's counts zeroed */
	cr_assert(tally_group_needs_flush(root)); /* outside: kept */
	cr_assert_eq(tally_group_read(root, 0), 0);
	/* The root is flushable, so updates below stop counting at the first
	 * flushable group: the leaf counts (still below), and so does p, until
	 * p is flushable again. */
	(void)T;
	for (j = 0; j < flip_point(t, b); j++)
		tally_group_mod(a, 0, 1);
	cr_assert(tally_group_needs_flush(a));
	cr_assert(tally_group_needs_flush(p));
	tally_group_flush(root);
	cr_assert_eq(tally_group_read(root, 0), (tally_sword)(2 * half + flip_point(t, b)));
	cr_assert(!tally_group_needs_flush(root));
	cr_assert(!tally_group_needs_flush(p));
	cr_assert(!tally_group_needs_flush(a));
	tally_tree_destroy(t);
}

/* ---- ratelimited and periodic flushing --------------------------------------- */

struct fake_clock {
	uint64_t now;
};

static uint64_t fake_now(void *arg)
{
	return __atomic_load_n(&((struct fake_clock *)arg)->now, __ATOMIC_RELAXED);
}

Test(rstat_threshold, ratelimited_flushes_only_after_two_periods)
{
	struct fake_clock clk = {1000};
	struct tally_tree_opts o;
	struct tally_tree *t;
	struct tally_group *root, *g;
	tally_sword big;
	const uint64_t P = 100;
	memset(&o, 0, sizeof(o));
	o.nr_items = 1;
	o.clock = fake_now;
	o.clock_arg = &clk;
	o.period_ns = P;
	t = tally_tree_create_opts(&o);
	cr_assert_not_null(t);
	cr_assert_eq(tally_tree_period_ns(t), P);
	root = tally_tree_root(t);
	g = tally_group_create(root);
	big = (tally_sword)tally_tree_flush_threshold(t) + 1;

	/* Creation counts as the last root flush, at 1000. */
	cr_assert_eq(tally_group_mod(g, 0, big), 0);
	cr_assert(tally_group_needs_flush(g));
	clk.now = 1000 + P;
	tally_group_flush_ratelimited(g);
	cr_assert_eq(tally_group_read(g, 0), 0);
	clk.now = 1000 + 2 * P; /* exactly 2 periods: not late enough */
	tally_group_flush_ratelimited(g);
	cr_assert_eq(tally_group_read(g, 0), 0);
	clk.now = 1000 + 2 * P + 1;
	tally_group_flush_ratelimited(g);
	cr_assert_eq(tally_group_read(g, 0), big);

	/* Late, but below the threshold: thresholded, so nothing. */
	cr_assert_eq(tally_group_mod(g, 0, 1), 0);
	tally_group_flush_ratelimited(g);
	cr_assert_eq(tally_group_read(g, 0), big);

	/* A root flush records the time; a non-root flush does not. */
	clk.now = 5000;
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), big + 1);
	clk.now = 5000 + P;
	tally_group_flush_force(g); /* not the root: 5000 stays */
	cr_assert_eq(tally_group_mod(g, 0, big), 0);
	clk.now = 5000 + 2 * P;
	tally_group_flush_ratelimited(g);
	cr_assert_eq(tally_group_read(g, 0), big + 1);
	clk.now = 5000 + 2 * P + 1;
	tally_group_flush_ratelimited(g);
	cr_assert_eq(tally_group_read(g, 0), 2 * big + 1);

	/* The periodic tick forces a root flush (below threshold too) and
	 * records the time. */
	cr_assert_eq(tally_group_mod(g, 0, 2), 0);
	clk.now = 9000;
	tally_tree_flush_periodic(t);
	cr_assert_eq(tally_group_read(root, 0), 2 * big + 3);
	cr_assert_eq(tally_group_mod(g, 0, big), 0);
	clk.now = 9000 + 2 * P;
	tally_group_flush_ratelimited(root);
	cr_assert_eq(tally_group_read(root, 0), 2 * big + 3);
	clk.now = 9000 + 2 * P + 1;
	tally_group_flush_ratelimited(root);
	cr_assert_eq(tally_group_read(root, 0), 3 * big + 3);

	/* The clock may wrap: time_after() order. */
	clk.now = UINT64_MAX - 10;
	tally_tree_flush_periodic(t);
	cr_assert_eq(tally_group_mod(g, 0, big), 0);
	clk.now = UINT64_MAX - 10 + 2 * P; /* wrapped past 0 */
	tally_group_flush_ratelimited(g);
	cr_assert_eq(tally_group_read(g, 0), 3 * big + 3);
	clk.now += 1;
	tally_group_flush_ratelimited(g);
	cr_assert_eq(tally_group_read(g, 0), 4 * big + 3);
	tally_tree_destroy(t);
}

static int poll_until(struct tally_group *g, unsigned item, tally_sword want, double bound_s)
{
	double end = harness_now() + bound_s;
	while (harness_now() < end) {
		if (tally_group_read(g, item) == want)
			return 1;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return tally_group_read(g, item) == want;
}

Test(rstat_threshold, periodic_thread_flushes)
{
	struct tally_tree *t = tally_tree_create(2);
	struct tally_group *root = tally_tree_root(t);
	struct tally_group *g = tally_group_create(tally_group_create(root));
	cr_assert_eq(tally_tree_start_flusher(t, 1000000), 0); /* 1 ms */
	cr_assert_eq(tally_tree_start_flusher(t, 1000000), -EBUSY);
	cr_assert_eq(tally_group_mod(g, 1, 42), 0);
	cr_assert(poll_until(root, 1, 42, 20.0), "the flusher thread never flushed");
	cr_assert_eq(tally_group_read(g, 1), 42);
	cr_assert_eq(tally_group_read_local(g, 1), 42);
	tally_tree_stop_flusher(t);
	tally_tree_stop_flusher(t); /* no-op */
	/* Restart with the tree's own period (2 s): it still runs. */
	cr_assert_eq(tally_tree_start_flusher(t, 0), 0);
	cr_assert_eq(tally_group_mod(g, 1, -50), 0);
	cr_assert(poll_until(root, 1, -8, 30.0), "the 2 s flusher never flushed");
	/* tree_destroy stops it. */
	tally_tree_destroy(t);
}


/* ---- stopping the flusher from several threads at once ----------------------- */

struct stop_arg {
	struct tally_tree *t;
	pthread_barrier_t *go;
	int done;
};

static void *stop_main(void *p)
{
	struct stop_arg *a = (struct stop_arg *)p;
	pthread_barrier_wait(a->go);
	tally_tree_stop_flusher(a->t);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Two threads stop one flusher at once, many times: both must return, with
 * the thread joined once (before the fix both saw it running and both
 * joined it: a hang, or undefined behaviour).
 */
Test(rstat_threshold, concurrent_stops_both_return)
{
	struct tally_tree *t = tally_tree_create(1);
	int round;
	for (round = 0; round < 200; round++) {
		pthread_barrier_t go;
		struct stop_arg a[2] = {{t, &go, 0}, {t, &go, 0}};
		pthread_t th[2];
		double end;
		int k;
		cr_assert_eq(tally_tree_start_flusher(t, 1000000), 0);
		pthread_barrier_init(&go, NULL, 2);
		for (k = 0; k < 2; k++)
			cr_assert_eq(pthread_create(&th[k], NULL, stop_main, &a[k]), 0);
		end = harness_now() + 10.0;
		while ((!__atomic_load_n(&a[0].done, __ATOMIC_ACQUIRE) ||
			!__atomic_load_n(&a[1].done, __ATOMIC_ACQUIRE)) &&
		       harness_now() < end) {
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
		cr_assert(a[0].done && a[1].done, "round %d: a stop_flusher() call hangs", round);
		for (k = 0; k < 2; k++)
			pthread_join(th[k], NULL);
		pthread_barrier_destroy(&go);
	}
	/* Stopped for good: it can start again. */
	cr_assert_eq(tally_tree_start_flusher(t, 0), 0);
	tally_tree_destroy(t);
}

/* ---- deadlines of very long periods ------------------------------------------------ */

/*
 * A 2^62 ns period (TALLY_RSTAT_PERIOD_MAX) from now overflows a 32-bit
 * time_t: the deadline saturates at the largest time_t (not wrapped into
 * the past, which would make the flusher spin). The saturation itself is
 * tested in test_os.c (tally__os_timespec_add); here, through the tree.
 */
Test(rstat_threshold, long_period_deadline_clamps)
{
	struct timespec ts, now;
	struct tally_tree *t = tally_tree_create(1);
	cr_assert_not_null(t);
	cr_assert_eq(tally_tree_start_flusher(t, TALLY_RSTAT_PERIOD_MAX), 0);
	tally__rstat_deadline(t, &ts, TALLY_RSTAT_PERIOD_MAX);
	t->tally__flusher.cond.now(&now);
	cr_assert_gt((uint64_t)ts.tv_sec, (uint64_t)now.tv_sec + (1ull << 30));
	cr_assert(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
	if (sizeof(time_t) == 4) /* saturated: the largest time_t */
		cr_assert_eq((uint64_t)ts.tv_sec, 0x7fffffffull);
	tally__rstat_deadline(t, &ts, 1000000000ull); /* 1 s from now */
	cr_assert(ts.tv_sec - now.tv_sec >= 0 && ts.tv_sec - now.tv_sec <= 3);
	tally_tree_stop_flusher(t);
	tally_tree_destroy(t);
}
