/*
 * Unit tests for tally/rstat.h: exact hierarchical and local values after
 * forced flushes on random tree shapes (against a plain model), subtree
 * flushes that leave everything outside the subtree as it was, per-group
 * thresholds, the ratelimit with an injected clock, the periodic thread,
 * destroy handing unflushed deltas to the parent, monotonic reads across
 * a wrap (64-bit, and 32-bit in the w32 build), and bad input.
 *
 * Tests that count exact threshold crossings pin the thread to one CPU so
 * every update lands in one per-CPU slot.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <tally/rstat.h>

#define U(x) ((tally_uword)(x))

/* Every test thread may destroy groups: call_rcu() wants it registered. */
static void setup(void)
{
	urcu_memb_register_thread();
}

static void teardown(void)
{
	urcu_memb_unregister_thread();
}

TestSuite(rstat, .init = setup, .fini = teardown);

/* ---- a plain model ---------------------------------------------------------- */

#define MAXG 64
#define MAXI 4

struct model {
	int n;                      /* groups; 0 is the root */
	int parent[MAXG];           /* -1 for the root */
	struct tally_group *g[MAXG];
	tally_uword local[MAXG][MAXI]; /* truth: deltas applied to the group */
	unsigned items;
};

static int in_subtree(const struct model *m, int x, int top)
{
	for (; x >= 0; x = m->parent[x])
		if (x == top)
			return 1;
	return 0;
}

static tally_uword model_hier(const struct model *m, int top, unsigned i)
{
	tally_uword sum = 0;
	int x;
	for (x = 0; x < m->n; x++)
		if (in_subtree(m, x, top))
			sum += m->local[x][i];
	return sum;
}

/* A random tree of n groups: each new group under a random earlier one. */
static struct tally_tree *model_build(struct model *m, struct harness_rng *r, int n, unsigned items)
{
	struct tally_tree *t = tally_tree_create(items);
	int x;
	cr_assert_not_null(t);
	memset(m, 0, sizeof(*m));
	m->items = items;
	m->n = n;
	m->parent[0] = -1;
	m->g[0] = tally_tree_root(t);
	for (x = 1; x < n; x++) {
		m->parent[x] = (int)harness_range(r, 0, x - 1);
		m->g[x] = tally_group_create(m->g[m->parent[x]]);
		cr_assert_not_null(m->g[x]);
	}
	return t;
}

static tally_sword random_delta(struct harness_rng *r)
{
	switch (harness_range(r, 0, 9)) {
	case 0:
		return (tally_sword)harness_range(r, -1000000, 1000000);
	case 1:
		return -1;
	default:
		return (tally_sword)harness_range(r, -100, 100);
	}
}

static void model_mods(struct model *m, struct harness_rng *r, int count)
{
	int k;
	for (k = 0; k < count; k++) {
		int x = (int)harness_range(r, 0, m->n - 1);
		unsigned i = (unsigned)harness_range(r, 0, m->items - 1);
		tally_sword d = random_delta(r);
		cr_assert_eq(tally_group_mod(m->g[x], i, d), 0);
		m->local[x][i] += (tally_uword)d;
	}
}

static void model_check_group(const struct model *m, int x)
{
	unsigned i;
	for (i = 0; i < m->items; i++) {
		cr_assert_eq(U(tally_group_read(m->g[x], i)), model_hier(m, x, i),
			     "group %d item %u: hierarchical %lld, model %lld", x, i,
			     (long long)tally_group_read(m->g[x], i),
			     (long long)tally__to_signed(model_hier(m, x, i)));
		cr_assert_eq(U(tally_group_read_local(m->g[x], i)), m->local[x][i],
			     "group %d item %u: local", x, i);
	}
}

/* ---- exact values after forced flushes ------------------------------------- */

Test(rstat, forced_flush_exact_random_trees)
{
	unsigned seed;
	for (seed = 1; seed <= 40; seed++) {
		struct harness_rng r = {seed * 7919u};
		struct model m;
		int n = (int)harness_range(&r, 1, MAXG);
		unsigned items = (unsigned)harness_range(&r, 1, MAXI);
		struct tally_tree *t = model_build(&m, &r, n, items);
		int round, x;
		for (round = 0; round < 4; round++) {
			model_mods(&m, &r, (int)harness_range(&r, 0, 300));
			tally_group_flush_force(tally_tree_root(t));
			for (x = 0; x < m.n; x++)
				model_check_group(&m, x);
		}
		tally_tree_destroy(t);
	}
}

/* Updates from several unpinned threads land in several slots; a forced
 * flush after they finish is still exact. */
struct many_arg {
	struct model *m;
	int id;
	tally_uword local[MAXG][MAXI];
};

static void *many_main(void *p)
{
	struct many_arg *a = (struct many_arg *)p;
	struct harness_rng r = {(uint64_t)a->id * 104729u + 1};
	int k;
	for (k = 0; k < 200000; k++) {
		int x = (int)harness_range(&r, 0, a->m->n - 1);
		unsigned i = (unsigned)harness_range(&r, 0, a->m->items - 1);
		tally_sword d = random_delta(&r);
		if (tally_group_mod(a->m->g[x], i, d))
			abort();
		a->local[x][i] += (tally_uword)d;
		if (k % 4096 == 0)
			sched_yield(); /* invite migrations */
	}
	return NULL;
}

Test(rstat, forced_flush_exact_after_threads)
{
	struct harness_rng r = {99};
	static struct model m;
	static struct many_arg a[3];
	pthread_t th[3];
	struct tally_tree *t = model_build(&m, &r, 40, 3);
	int k, x;
	unsigned i;
	for (k = 0; k < 3; k++) {
		memset(&a[k], 0, sizeof(a[k]));
		a[k].m = &m;
		a[k].id = k;
		cr_assert_eq(pthread_create(&th[k], NULL, many_main, &a[k]), 0);
	}
	for (k = 0; k < 3; k++) {
		pthread_join(th[k], NULL);
		for (x = 0; x < m.n; x++)
			for (i = 0; i < m.items; i++)
				m.local[x][i] += a[k].local[x][i];
	}
	tally_group_flush_force(tally_tree_root(t));
	for (x = 0; x < m.n; x++)
		model_check_group(&m, x);
	tally_tree_destroy(t);
}

/* ---- subtree flushes ------------------------------------------------------- */

Test(rstat, subtree_flush_leaves_the_rest_alone)
{
	unsigned seed;
	for (seed = 1; seed <= 30; seed++) {
		struct harness_rng r = {seed * 31337u};
		struct model m;
		static tally_sword before[MAXG][MAXI], before_local[MAXG][MAXI];
		struct tally_tree *t = model_build(&m, &r, (int)harness_range(&r, 2, MAXG), MAXI);
		int round, x;
		unsigned i;
		model_mods(&m, &r, 200);
		tally_group_flush_force(tally_tree_root(t));
		for (round = 0; round < 8; round++) {
			int top = (int)harness_range(&r, 0, m.n - 1);
			model_mods(&m, &r, (int)harness_range(&r, 1, 200));
			for (x = 0; x < m.n; x++)
				for (i = 0; i < m.items; i++) {
					before[x][i] = tally_group_read(m.g[x], i);
					before_local[x][i] = tally_group_read_local(m.g[x], i);
				}
			tally_group_flush_force(m.g[top]);
			for (x = 0; x < m.n; x++) {
				if (in_subtree(&m, x, top)) {
					model_check_group(&m, x);
					continue;
				}
				/* Ancestors, siblings, cousins: as they were. */
				for (i = 0; i < m.items; i++) {
					cr_assert_eq(tally_group_read(m.g[x], i), before[x][i],
						     "seed %u: group %d outside subtree %d changed", seed,
						     x, top);
					cr_assert_eq(tally_group_read_local(m.g[x], i),
						     before_local[x][i]);
				}
			}
		}
		/* Whatever stayed queued comes out in a root flush. */
		tally_group_flush_force(tally_tree_root(t));
		for (x = 0; x < m.n; x++)
			model_check_group(&m, x);
		tally_tree_destroy(t);
	}
}

Test(rstat, subtree_flush_hands_up_at_next_ancestor_flush)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t);
	struct tally_group *a = tally_group_create(root);
	struct tally_group *b = tally_group_create(a);
	struct tally_group *c = tally_group_create(a);
	cr_assert_eq(tally_group_mod(b, 0, 5), 0);
	cr_assert_eq(tally_group_mod(c, 0, 7), 0);
	tally_group_flush_force(b);
	cr_assert_eq(tally_group_read(b, 0), 5);
	cr_assert_eq(tally_group_read(c, 0), 0); /* sibling */
	cr_assert_eq(tally_group_read(a, 0), 0); /* parent: pending only */
	cr_assert_eq(tally_group_read(root, 0), 0);
	tally_group_flush_force(a);
	cr_assert_eq(tally_group_read(a, 0), 12);
	cr_assert_eq(tally_group_read(c, 0), 7);
	cr_assert_eq(tally_group_read(root, 0), 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), 12);
	cr_assert_eq(tally_group_read_local(root, 0), 0);
	cr_assert_eq(tally_group_read_local(a, 0), 0);
	tally_tree_destroy(t);
}

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

Test(rstat, default_threshold_is_64_times_online_cpus)
{
	struct tally_tree *t = tally_tree_create(1);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cr_assert_eq(tally_tree_flush_threshold(t), 64u * (uint64_t)n);
	cr_assert_eq(tally_tree_period_ns(t), 2000000000ull);
	tally_tree_destroy(t);
}

Test(rstat, needs_flush_flips_only_past_batch_times_cpus)
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

Test(rstat, one_big_update_makes_flushable)
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

Test(rstat, ancestor_flushable_first_and_walk_stops_there)
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

Test(rstat, ratelimited_flushes_only_after_two_periods)
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

Test(rstat, periodic_thread_flushes)
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

/* ---- lifetime ---------------------------------------------------------------- */

struct mod_arg {
	struct tally_group *g;
	int n;
};

static void *mod_main(void *p)
{
	struct mod_arg *a = (struct mod_arg *)p;
	int k;
	for (k = 0; k < a->n; k++)
		if (tally_group_mod(a->g, k & 1, (k & 1) ? -1 : 3))
			abort();
	return NULL;
}

Test(rstat, destroy_hands_unflushed_deltas_to_parent)
{
	struct tally_tree *t = tally_tree_create(2);
	struct tally_group *root = tally_tree_root(t);
	struct tally_group *p = tally_group_create(root);
	struct tally_group *c = tally_group_create(p);
	struct tally_group *gc = tally_group_create(c);
	struct mod_arg a = {c, 100001};
	pthread_t th;
	cr_assert_eq(tally_tree_nr_groups(t), 4);
	cr_assert_eq(tally_group_mod(c, 0, 5), 0);
	cr_assert_eq(tally_group_mod(p, 0, 1), 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(p, 0), 6);
	/* Unflushed: from this thread, from another thread (other slots), and
	 * in the grandchild, destroyed first. */
	cr_assert_eq(tally_group_mod(c, 0, 7), 0);
	cr_assert_eq(tally_group_mod(c, 1, -3), 0);
	cr_assert_eq(tally_group_mod(gc, 1, 1000), 0);
	cr_assert_eq(pthread_create(&th, NULL, mod_main, &a), 0);
	pthread_join(th, NULL);
	/* 50001 even k add 3, 50000 odd k subtract 1. */
	cr_assert_eq(tally_group_destroy(p), -EBUSY); /* has a child */
	cr_assert_eq(tally_group_destroy(c), -EBUSY);
	cr_assert_eq(tally_group_destroy(gc), 0);
	cr_assert_eq(tally_group_destroy(c), 0);
	cr_assert_eq(tally_tree_nr_groups(t), 2);
	/* The parent's values change only at its next flush. */
	cr_assert_eq(tally_group_read(p, 0), 6);
	cr_assert_eq(tally_group_read(p, 1), 0);
	tally_group_flush_force(p);
	cr_assert_eq(tally_group_read(p, 0), 6 + 7 + 50001 * 3);
	cr_assert_eq(tally_group_read(p, 1), -3 + 1000 - 50000);
	cr_assert_eq(tally_group_read_local(p, 0), 1);
	cr_assert_eq(tally_group_read_local(p, 1), 0);
	cr_assert_eq(tally_group_read(root, 0), 6);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), 6 + 7 + 50001 * 3);
	cr_assert_eq(tally_group_read(root, 1), -3 + 1000 - 50000);
	/* p is a leaf now. */
	cr_assert_eq(tally_group_mod(p, 0, 1), 0);
	cr_assert_eq(tally_group_destroy(p), 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), 6 + 7 + 50001 * 3 + 1);
	cr_assert_eq(tally_group_read_local(root, 0), 0);
	cr_assert_eq(tally_tree_nr_groups(t), 1);
	tally_tree_destroy(t);
}

Test(rstat, destroy_while_linked_in_updated_trees)
{
	/* Children queued on the lockless lists and linked in the updated
	 * trees by subtree flushes elsewhere, then destroyed: the flushes that
	 * follow never touch them, and nothing is lost. */
	struct harness_rng r = {5};
	struct model m;
	struct tally_tree *t = model_build(&m, &r, 30, 2);
	int round;
	for (round = 0; round < 20; round++) {
		int x, leaf = -1;
		unsigned i;
		model_mods(&m, &r, 100);
		tally_group_flush_force(m.g[(int)harness_range(&r, 0, m.n - 1)]);
		/* Destroy a random leaf: its deltas go to its parent (model:
		 * move its local truth into the parent's "local" for the
		 * hierarchical sums, but not the parent's read_local). */
		for (x = m.n - 1; x > 0; x--) {
			int y, kids = 0;
			for (y = 0; y < m.n; y++)
				kids += m.parent[y] == x;
			if (!kids) {
				leaf = x;
				break;
			}
		}
		if (leaf < 0)
			break;
		cr_assert_eq(tally_group_destroy(m.g[leaf]), 0);
		for (i = 0; i < m.items; i++)
			m.local[m.parent[leaf]][i] += m.local[leaf][i];
		/* Keep the parent's own local truth apart: remember it in a
		 * shadow by checking only hierarchical values below. */
		m.g[leaf] = m.g[m.n - 1];
		m.parent[leaf] = m.parent[m.n - 1];
		memcpy(m.local[leaf], m.local[m.n - 1], sizeof(m.local[0]));
		for (x = 0; x < m.n - 1; x++)
			if (m.parent[x] == m.n - 1)
				m.parent[x] = leaf;
		m.n--;
		tally_group_flush_force(tally_tree_root(t));
		for (x = 0; x < m.n; x++)
			for (i = 0; i < m.items; i++)
				cr_assert_eq(U(tally_group_read(m.g[x], i)), model_hier(&m, x, i));
	}
	tally_tree_destroy(t);
}

Test(rstat, rcu_protects_a_destroyed_group)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t);
	struct tally_group *g = tally_group_create(root);
	cr_assert_eq(tally_group_mod(g, 0, 9), 0);
	tally_group_flush_force(g);
	tally_tree_read_lock(t);
	/* Destroy defers the free past our read-side section, so g's memory
	 * stays valid and every call on it fails cleanly. */
	cr_assert_eq(tally_group_destroy(g), 0);
	errno = 0;
	cr_assert_null(tally_group_create(g));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(tally_group_mod(g, 0, 1), -EINVAL);
	cr_assert_eq(tally_group_destroy(g), -EINVAL);
	errno = 0;
	tally_group_flush_force(g);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(tally_group_read(g, 0), 9); /* its last values */
	tally_tree_read_unlock(t);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), 9);
	cr_assert_eq(tally_tree_nr_groups(t), 1);
	tally_tree_destroy(t);
}

static int count_child(struct tally_group *c, void *arg)
{
	(void)c;
	++*(int *)arg;
	return 0;
}

static int find_child(struct tally_group *c, void *arg)
{
	return c == (struct tally_group *)arg ? 7 : 0;
}

Test(rstat, for_each_child)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t);
	struct tally_group *kid[5];
	int k, n = 0;
	for (k = 0; k < 5; k++)
		kid[k] = tally_group_create(root);
	tally_group_create(kid[0]); /* a grandchild is not a child */
	cr_assert_eq(tally_group_for_each_child(root, count_child, &n), 0);
	cr_assert_eq(n, 5);
	cr_assert_eq(tally_group_for_each_child(root, find_child, kid[3]), 7);
	cr_assert_eq(tally_group_destroy(kid[3]), 0);
	cr_assert_eq(tally_group_for_each_child(root, find_child, kid[3]), 0);
	n = 0;
	cr_assert_eq(tally_group_for_each_child(root, count_child, &n), 0);
	cr_assert_eq(n, 4);
	cr_assert_eq(tally_group_parent(kid[0]), root);
	cr_assert_null(tally_group_parent(root));
	cr_assert_eq(tally_group_tree(kid[0]), t);
	cr_assert_eq(tally_group_for_each_child(NULL, count_child, &n), -EINVAL);
	cr_assert_eq(tally_group_for_each_child(root, NULL, &n), -EINVAL);
	tally_tree_destroy(t);
}

/* ---- monotonic reads across a wrap -------------------------------------------- */

Test(rstat, monotonic_reads_across_signed_and_unsigned_wrap)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t);
	struct tally_group *g = tally_group_create(root);
	struct tally_sample s;
	/* Event counter climbing to just below TALLY_SWORD_MAX (2^31 - 1 in
	 * the w32 build, 2^63 - 1 otherwise). */
	cr_assert_eq(tally_group_mod(g, 0, TALLY_SWORD_MAX - 5), 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(g, 0), TALLY_SWORD_MAX - 5);
	cr_assert_eq(tally_group_read_positive(root, 0), U(TALLY_SWORD_MAX) - 5u);
	cr_assert_eq(tally_group_read_monotonic(root, 0),
		     U(U(TALLY_SWORD_MAX) - 5u + TALLY_MONOTONIC_BIAS));
	s.last = tally_group_read_monotonic(root, 0);
	/* +10 passes TALLY_SWORD_MAX: the signed value wraps negative, the
	 * clamped read drops to 0 (seed 000's bug), the monotonic delta is 10. */
	cr_assert_eq(tally_group_mod(g, 0, 10), 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), TALLY_SWORD_MIN + 4);
	cr_assert_eq(tally_group_read_positive(root, 0), 0);
	cr_assert_eq(tally_delta(s.last, tally_group_read_positive(root, 0)) > U(TALLY_SWORD_MAX),
		     1); /* the clamped sample would give a ~2^(W-1) delta */
	cr_assert_eq(tally_sample_advance(&s, tally_group_read_monotonic(root, 0)), 10);
	cr_assert_eq(tally_group_read_local(g, 0), TALLY_SWORD_MIN + 4);
	/* On past the unsigned wrap: 2^W - 1 - 5 + 10 + SWORD_MAX + ... */
	cr_assert_eq(tally_group_mod(g, 0, TALLY_SWORD_MAX), 0);
	cr_assert_eq(tally_group_mod(g, 0, 7), 0);
	tally_group_flush_force(root);
	/* total = 2 * SWORD_MAX + 12 = 2^W + 10 (mod 2^W: 10) */
	cr_assert_eq(tally_group_read(root, 0), 10);
	cr_assert_eq(tally_sample_advance(&s, tally_group_read_monotonic(root, 0)),
		     U(TALLY_SWORD_MAX) + 7u);
	tally_tree_destroy(t);
}

/* ---- bad input ------------------------------------------------------------------ */

Test(rstat, bad_input)
{
	struct tally_tree_opts o;
	struct tally_tree *t;
	struct tally_group *root, *g;
	errno = 0;
	cr_assert_null(tally_tree_create(0));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(tally_tree_create(TALLY_RSTAT_ITEMS_MAX + 1));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(tally_tree_create_opts(NULL));
	cr_assert_eq(errno, EINVAL);
	memset(&o, 0, sizeof(o));
	o.nr_items = 1;
	o.batch = TALLY_RSTAT_BATCH_MAX + 1;
	errno = 0;
	cr_assert_null(tally_tree_create_opts(&o));
	cr_assert_eq(errno, EINVAL);
	o.batch = 0;
	o.period_ns = TALLY_RSTAT_PERIOD_MAX + 1;
	cr_assert_null(tally_tree_create_opts(&o));
	errno = 0;
	cr_assert_null(tally_tree_root(NULL));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(tally_group_create(NULL));
	cr_assert_eq(errno, EINVAL);

	t = tally_tree_create(3);
	root = tally_tree_root(t);
	g = tally_group_create(root);
	cr_assert_eq(tally_group_mod(g, 1, 4), 0);
	tally_group_flush_force(root);
	/* Bad item, NULL group: -EINVAL and nothing changes. */
	cr_assert_eq(tally_group_mod(g, 3, 1), -EINVAL);
	cr_assert_eq(tally_group_mod(g, ~0u, 1), -EINVAL);
	cr_assert_eq(tally_group_mod(NULL, 0, 1), -EINVAL);
	cr_assert_eq(tally_group_mod(g, 0, 0), 0); /* a zero delta is fine */
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), 0);
	cr_assert_eq(tally_group_read(root, 1), 4);
	cr_assert_eq(tally_group_read(root, 2), 0);
	cr_assert(!tally_group_needs_flush(g));
	/* Readers: bad index or NULL read 0. */
	cr_assert_eq(tally_group_read(g, 3), 0);
	cr_assert_eq(tally_group_read_positive(g, 3), 0);
	cr_assert_eq(tally_group_read_monotonic(g, 3), 0);
	cr_assert_eq(tally_group_read_local(g, 3), 0);
	cr_assert_eq(tally_group_read(NULL, 0), 0);
	cr_assert_eq(tally_group_read_local(NULL, 0), 0);
	cr_assert_eq(tally_group_read_monotonic(NULL, 0), 0);
	cr_assert(!tally_group_needs_flush(NULL));
	/* Destroying the root or NULL. */
	cr_assert_eq(tally_group_destroy(root), -EINVAL);
	cr_assert_eq(tally_group_destroy(NULL), -EINVAL);
	cr_assert_eq(tally_tree_nr_groups(t), 2);
	/* Flushing NULL: errno, nothing else. */
	errno = 0;
	tally_group_flush(NULL);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	tally_group_flush_force(NULL);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	tally_group_flush_ratelimited(NULL);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	tally_tree_flush_periodic(NULL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(tally_tree_start_flusher(NULL, 0), -EINVAL);
	cr_assert_eq(tally_tree_start_flusher(t, TALLY_RSTAT_PERIOD_MAX + 1), -EINVAL);
	tally_tree_stop_flusher(NULL);
	tally_tree_stop_flusher(t); /* none running */
	tally_tree_destroy(NULL);
	cr_assert_eq(tally_tree_flush_threshold(NULL), 0);
	cr_assert_eq(tally_tree_group_bytes(NULL), 0);
	cr_assert_eq(tally_tree_nr_groups(NULL), 0);
	cr_assert_eq(tally_group_read(root, 1), 4);
	cr_assert_eq(tally_group_read_local(g, 1), 4);
	tally_tree_destroy(t);
}

/* ---- memory ---------------------------------------------------------------------- */

Test(rstat, group_bytes_about_two_words_per_item_and_cpu)
{
	unsigned items[] = {1, 4, 16, 64};
	size_t k;
	for (k = 0; k < sizeof(items) / sizeof(items[0]); k++) {
		struct tally_tree *t = tally_tree_create(items[k]);
		size_t slots = tally__nr_cpu_slots() + 1u;
		size_t per_slot = 2u * items[k] * sizeof(tally_uword);
		size_t bytes = tally_tree_group_bytes(t);
		/* 2 words per item and slot, plus under a cache line of
		 * header and rounding per slot, plus the group struct and
		 * 3 words per item. */
		cr_assert_geq(bytes, slots * per_slot);
		cr_assert_leq(bytes, slots * (per_slot + 48 + TALLY_CACHELINE) + 512 +
					     3u * items[k] * sizeof(tally_uword));
		tally_tree_destroy(t);
	}
}
