/*
 * Unit tests for tally/rstat.h, the flush: exact hierarchical and local
 * values after forced flushes on random tree shapes (against a plain
 * model), subtree flushes that leave everything outside the subtree as it
 * was, an update beside a stalled updater of the same slot, monotonic
 * reads across a wrap (64-bit, and 32-bit in the w32 build), bad input and
 * memory. Thresholds and the flusher: test_rstat_threshold.c; create,
 * destroy and RCU: test_rstat_lifetime.c.
 */
#define _GNU_SOURCE
#include "test_rstat_model.h"

#include <tally/rstat.h> /* also tells the build to link liburcu */

TestSuite(rstat, .init = rstat_setup, .fini = rstat_teardown);

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

/* ---- an updater stalled in the middle of its update ------------------------- */

/*
 * Updater B adds to group g on slot s and stops (preempted, SIGSTOP) in
 * the middle of marking g dirty; updater A then updates g on the same slot
 * and returns. A flush that starts after A returned must show A's delta,
 * whatever B does. B's stall is made by hand in every slot: its leaf bit
 * set, the summary bit not yet (a drain cleared it after B's leaf set).
 * Against the old lockless list (one node per group and slot, claimed by
 * CAS, then pushed), the same test claims the node without pushing it;
 * A's update then skipped the push and the flush missed A's delta.
 */
Test(rstat, update_beside_a_stalled_updater_of_the_same_slot)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t), *g = tally_group_create(root);
	unsigned s, round;
	for (round = 1; round <= 3; round++) {
		unsigned id = g->tally__dirty.id;
		for (s = 0; s < t->tally__ids.nr_slots; s++) {
			struct tally__rstat_dirty *d =
				tally__rstat_dirty_at(g->tally__dirty.block, g->tally__dirty.stride, s);
			__atomic_fetch_or(&d->leaf[(id >> 6) & 63], 1ull << (id & 63),
					  __ATOMIC_SEQ_CST);
			__atomic_store_n(&d->summary, 0, __ATOMIC_SEQ_CST);
		}
		cr_assert_eq(tally_group_mod(g, 0, 5), 0); /* A */
		tally_group_flush_force(root);
		cr_assert_eq(tally_group_read(root, 0), 5 * (tally_sword)round,
			     "round %u: the flush missed A's update", round);
		cr_assert_eq(tally_group_read_local(g, 0), 5 * (tally_sword)round);
	}
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
	 * clamped read drops to 0 (the bug that "mm/vmstat, mm/memcontrol: add
	 * _monotonic vmstat readers", Usama Arif, 2026, fixes), the monotonic delta is 10. */
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
	/* Read-side sections of a NULL tree: no-ops. */
	tally_tree_read_lock(NULL);
	tally_tree_read_unlock(NULL);
	tally_tree_destroy(NULL);
	cr_assert_eq(tally_tree_flush_threshold(NULL), 0);
	cr_assert_eq(tally_tree_group_bytes(NULL), 0);
	cr_assert_eq(tally_tree_nr_groups(NULL), 0);
	cr_assert_eq(tally_group_read(root, 1), 4);
	cr_assert_eq(tally_group_read_local(g, 1), 4);
	tally_tree_destroy(t);
}

/* ---- depth ----------------------------------------------------------------------- */

/*
 * A chain as deep as a tree allows (the root, then TALLY_RSTAT_DEPTH_MAX
 * groups), asked for 200,000 deep: creation stops at the bound with
 * E2BIG and changes nothing; one update per group of the chain is cheap
 * (each walks at most the bound's worth of ancestors; unbounded, 20,000
 * deep took 3.7 s); values are exact at every depth; a group at the
 * bound still crosses thresholds up to the root; a destroyed deepest
 * group makes room for another.
 */
Test(rstat, depth_bound_refuses_deeper_groups)
{
	const long want = 200000;
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t), *g = root, *deepest, *x;
	struct tally_group **chain =
		(struct tally_group **)calloc(TALLY_RSTAT_DEPTH_MAX + 1u, sizeof(*chain));
	long n = 0, k;
	int e = 0;
	double t0;
	cr_assert_not_null(chain);
	while (n < want) {
		errno = 0;
		x = tally_group_create(g);
		if (!x) {
			e = errno;
			break;
		}
		chain[n++] = g = x;
	}
	cr_assert_eq(n, TALLY_RSTAT_DEPTH_MAX, "chain of %ld, bound %u", n, TALLY_RSTAT_DEPTH_MAX);
	cr_assert_eq(e, E2BIG);
	cr_assert_eq(tally_tree_nr_groups(t), TALLY_RSTAT_DEPTH_MAX + 1ul);
	deepest = chain[n - 1];
	t0 = harness_now();
	for (k = 0; k < n; k++)
		cr_assert_eq(tally_group_mod(chain[k], 0, 1), 0);
	printf("depth %ld: one update per group in %.3f ms\n", n, (harness_now() - t0) * 1e3);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), n);
	for (k = 0; k < n; k++) {
		cr_assert_eq(tally_group_read(chain[k], 0), n - k, "depth %ld", k + 1);
		cr_assert_eq(tally_group_read_local(chain[k], 0), 1);
	}
	/* The deepest group's updates still reach the root's threshold. */
	cr_assert(!tally_group_needs_flush(root));
	cr_assert_eq(tally_group_mod(deepest, 0, (tally_sword)tally_tree_flush_threshold(t) + 1), 0);
	cr_assert(tally_group_needs_flush(root));
	tally_group_flush(root);
	cr_assert_eq(U(tally_group_read(root, 0)), U(n) + tally_tree_flush_threshold(t) + 1u);
	/* Still refused, and nothing changed; room again after a destroy. */
	errno = 0;
	cr_assert_null(tally_group_create(deepest));
	cr_assert_eq(errno, E2BIG);
	cr_assert_eq(tally_tree_nr_groups(t), TALLY_RSTAT_DEPTH_MAX + 1ul);
	cr_assert_eq(tally_group_destroy(deepest), 0);
	x = tally_group_create(chain[n - 2]);
	cr_assert_not_null(x);
	cr_assert_null(tally_group_create(x));
	cr_assert_eq(errno, E2BIG);
	free(chain);
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
