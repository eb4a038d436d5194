/*
 * Unit tests for tally/rstat.h, group lifetimes: destroy handing
 * unflushed deltas to the parent, destroy of groups linked in updated
 * trees, RCU protection of a destroyed group and what each call does on
 * it, updates racing with destroys inside read-side sections (nothing
 * lost), mass destroys of siblings, and child walks.
 */
#define _GNU_SOURCE
#include "test_rstat_model.h"

#include <tally/rstat.h> /* also tells the build to link liburcu */

TestSuite(rstat_lifetime, .init = rstat_setup, .fini = rstat_teardown);

/* ---- lifetime ---------------------------------------------------------------- */

static int count_child(struct tally_group *c, void *arg)
{
	(void)c;
	++*(int *)arg;
	return 0;
}

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

Test(rstat_lifetime, destroy_hands_unflushed_deltas_to_parent)
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

Test(rstat_lifetime, destroy_while_linked_in_updated_trees)
{
	/* Children marked dirty and linked in the updated
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

Test(rstat_lifetime, rcu_protects_a_destroyed_group)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t);
	struct tally_group *g = tally_group_create(root);
	cr_assert_eq(tally_group_mod(g, 0, 9), 0);
	tally_group_flush_force(g);
	tally_tree_read_lock(t);
	/* Destroy defers the free past our read-side section, so g's memory
	 * stays valid: an update still counts (for g's nearest live
	 * ancestor), every other change fails cleanly. */
	cr_assert_eq(tally_group_destroy(g), 0);
	errno = 0;
	cr_assert_null(tally_group_create(g));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(tally_group_mod(g, 0, 1), 0);
	cr_assert_eq(tally_group_mod(g, 7, 1), -EINVAL); /* a bad item still is one */
	cr_assert_eq(tally_group_destroy(g), -EINVAL);
	errno = 0;
	tally_group_flush_force(g);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(tally_group_read(g, 0), 9); /* its values at the destroy */
	cr_assert_eq(tally_group_read_local(g, 0), 9);
	cr_assert(!tally_group_needs_flush(g));
	errno = 0;
	tally_group_flush(g);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(tally_group_parent(g), root);
	cr_assert_eq(tally_group_tree(g), t);
	{
		int n = 0;
		cr_assert_eq(tally_group_for_each_child(g, count_child, &n), 0);
		cr_assert_eq(n, 0);
	}
	tally_tree_read_unlock(t);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), 10);
	cr_assert_eq(tally_group_read_local(root, 0), 0);
	cr_assert_eq(tally_tree_nr_groups(t), 1);
	tally_tree_destroy(t);
}

static int find_child(struct tally_group *c, void *arg)
{
	return c == (struct tally_group *)arg ? 7 : 0;
}

Test(rstat_lifetime, for_each_child)
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
	errno = 0;
	cr_assert_null(tally_group_parent(root));
	cr_assert_eq(errno, 0); /* the root's parent: not an error */
	cr_assert_eq(tally_group_tree(kid[0]), t);
	/* NULL: NULL and errno EINVAL, as every call that returns an object */
	errno = 0;
	cr_assert_null(tally_group_parent(NULL));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(tally_group_tree(NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(tally_group_for_each_child(NULL, count_child, &n), -EINVAL);
	cr_assert_eq(tally_group_for_each_child(root, NULL, &n), -EINVAL);
	tally_tree_destroy(t);
}


/* ---- an update that passed its check just before the destroy -------------------- */

/*
 * A mod inside a read-side section checks g alive, loses the CPU, g is
 * destroyed, and the mod goes on: word add, barrier, dirty bits. Made by
 * hand with the steps of tally_group_mod() after its check. A flush of the
 * parent that starts after that must show the delta (the drain hands it
 * to the nearest live ancestor), before and without the deferred free;
 * the deferred free must not count it again. Before the fix the group was
 * pushed on a list after its destroy and freed while listed
 * (heap-use-after-free), and the delta never reached the parent.
 */
static void late_mod(struct tally_group *g, unsigned item, tally_sword d)
{
	struct tally_tree *t = g->tally__tree;
	unsigned s;
	tally__pcpu_add(&g->tally__pcpu, t->tally__word_off + item * sizeof(tally_uword),
			(tally_uword)d, &s);
	tally__rstat_barrier_update(t);
	tally__rstat_mark_dirty(g, s);
}

Test(rstat_lifetime, mod_that_passed_its_check_before_destroy_reaches_the_parent)
{
	struct tally_tree *t = tally_tree_create(2);
	struct tally_group *root = tally_tree_root(t), *p = tally_group_create(root);
	struct tally_group *q = tally_group_create(p), *g = tally_group_create(q);
	cr_assert_eq(tally_group_mod(g, 0, 3), 0);
	tally_tree_read_lock(t);
	cr_assert_eq(tally_group_destroy(g), 0);
	late_mod(g, 0, 40);
	late_mod(g, 1, -7);
	tally_group_flush_force(q);
	cr_assert_eq(tally_group_read(q, 0), 43);
	cr_assert_eq(tally_group_read(q, 1), -7);
	cr_assert_eq(tally_group_read_local(q, 0), 0);
	/* Its parent destroyed too: the next live ancestor gets it. */
	late_mod(g, 0, 500);
	cr_assert_eq(tally_group_destroy(q), 0);
	late_mod(g, 1, 1000);
	tally_group_flush_force(p);
	cr_assert_eq(tally_group_read(p, 0), 543);
	cr_assert_eq(tally_group_read(p, 1), 993);
	late_mod(g, 0, 5);
	tally_tree_read_unlock(t);
	/* Not drained yet: the deferred free hands it over. */
	urcu_memb_barrier();
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), 548);
	cr_assert_eq(tally_group_read(root, 1), 993);
	cr_assert_eq(tally_group_read(p, 0), 548);
	cr_assert_eq(tally_tree_nr_groups(t), 2);
	tally_tree_destroy(t);
}

/* ---- updates racing with destroys ------------------------------------------------ */

/*
 * Registered threads update groups inside read-side sections while another
 * thread replaces and destroys them. Every update counts (0, the group
 * destroyed or not: issue 29), and a flush that starts after the updates
 * returned must show every delta in the root: none
 * lost, none counted twice, no use after free (ASan). Before the fix, an update that
 * passed the dead check just before a destroy added to a group already
 * flushed and freed: a heap-use-after-free under ASan, and its delta was
 * lost.
 */
#define RACE_SLOTS 4

struct race {
	/* The tree, for the updaters' read-side sections: never reached
	 * through a slot's group, which the main thread may destroy and free
	 * before the section starts. */
	struct tally_tree *tree;
	struct tally_group *slot[RACE_SLOTS];
	int stop;
};

struct race_arg {
	struct race *r;
	uint64_t seed;
	tally_uword counted[2];
};

static void *race_mod_main(void *p)
{
	struct race_arg *a = (struct race_arg *)p;
	struct harness_rng r = {a->seed};
	urcu_memb_register_thread();
	while (!__atomic_load_n(&a->r->stop, __ATOMIC_ACQUIRE)) {
		int k;
		tally_tree_read_lock(a->r->tree);
		for (k = 0; k < 64; k++) {
			struct tally_group *g = __atomic_load_n(
				&a->r->slot[harness_range(&r, 0, RACE_SLOTS - 1)], __ATOMIC_ACQUIRE);
			unsigned i = (unsigned)(k & 1);
			tally_sword d = (tally_sword)harness_range(&r, -3, 1000);
			int e = tally_group_mod(g, i, d);
			if (e != 0)
				abort();
			a->counted[i] += (tally_uword)d;
		}
		tally_tree_read_unlock(a->r->tree);
	}
	urcu_memb_unregister_thread();
	return NULL;
}

Test(rstat_lifetime, updates_racing_with_destroy_reach_the_parent)
{
	struct tally_tree *t = tally_tree_create(2);
	struct tally_group *root = tally_tree_root(t), *mid = tally_group_create(root);
	static struct race r;
	struct race_arg a[2];
	pthread_t th[2];
	double end;
	unsigned long destroyed = 0;
	tally_uword want[2] = {0, 0};
	int k;
	memset(&r, 0, sizeof(r));
	r.tree = t;
	for (k = 0; k < RACE_SLOTS; k++)
		r.slot[k] = tally_group_create(mid);
	for (k = 0; k < 2; k++) {
		memset(&a[k], 0, sizeof(a[k]));
		a[k].r = &r;
		a[k].seed = 77u + (uint64_t)k;
		cr_assert_eq(pthread_create(&th[k], NULL, race_mod_main, &a[k]), 0);
	}
	end = harness_now() + 1.0;
	while (harness_now() < end) {
		for (k = 0; k < RACE_SLOTS; k++) {
			struct tally_group *old = r.slot[k], *g = tally_group_create(mid);
			cr_assert_not_null(g);
			__atomic_store_n(&r.slot[k], g, __ATOMIC_RELEASE);
			cr_assert_eq(tally_group_destroy(old), 0);
			destroyed++;
		}
		if (destroyed % 64 == 0)
			tally_group_flush_force(mid);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	for (k = 0; k < 2; k++) {
		pthread_join(th[k], NULL);
		want[0] += a[k].counted[0];
		want[1] += a[k].counted[1];
	}
	/* Every counted update has returned: a flush that starts now reflects
	 * it, in the root, without waiting for the deferred frees. */
	tally_group_flush_force(root);
	cr_assert_eq(U(tally_group_read(root, 0)), want[0], "item 0: root %lld, counted %lld",
		     (long long)tally_group_read(root, 0), (long long)tally__to_signed(want[0]));
	cr_assert_eq(U(tally_group_read(root, 1)), want[1], "item 1: root %lld, counted %lld",
		     (long long)tally_group_read(root, 1), (long long)tally__to_signed(want[1]));
	cr_assert_eq(U(tally_group_read(mid, 0)), want[0]);
	cr_assert_eq(tally_group_read_local(mid, 0), 0);
	cr_assert_gt(destroyed, 100);
	/* And the deferred frees change nothing more. */
	urcu_memb_barrier();
	tally_group_flush_force(root);
	cr_assert_eq(U(tally_group_read(root, 0)), want[0]);
	cr_assert_eq(U(tally_group_read(root, 1)), want[1]);
	tally_tree_destroy(t);
}

/* ---- mass destroys ---------------------------------------------------------------- */

/*
 * N siblings (TALLY_TEST_DESTROY_N, default 100,000) under one parent,
 * each updated, some flushed, then destroyed oldest first (the far end of
 * the sibling list): totals exact. Destroy is O(1) apart from its flush
 * (before the fix it walked the siblings and the updated list: quadratic,
 * about 40 s for 100,000). The time is printed, not checked.
 */
Test(rstat_lifetime, mass_sibling_destroys_keep_totals_exact)
{
	const char *env = getenv("TALLY_TEST_DESTROY_N");
	long n = env ? atol(env) : 100000, k;
	struct tally_tree *t = tally_tree_create(2);
	struct tally_group *root = tally_tree_root(t), *p = tally_group_create(root);
	struct tally_group **kids = (struct tally_group **)calloc((size_t)n, sizeof(*kids));
	tally_uword want0 = 0, want1 = 0;
	double t0;
	cr_assert_not_null(kids);
	for (k = 0; k < n; k++) {
		kids[k] = tally_group_create(p);
		cr_assert_not_null(kids[k]);
		cr_assert_eq(tally_group_mod(kids[k], 0, 1), 0);
		cr_assert_eq(tally_group_mod(kids[k], 1, (tally_sword)(k % 1000) - 500), 0);
		want0 += 1;
		want1 += (tally_uword)((tally_sword)(k % 1000) - 500);
	}
	tally_group_flush_force(p); /* half flushed, half not */
	for (k = 0; k < n; k += 2) {
		cr_assert_eq(tally_group_mod(kids[k], 0, 2), 0);
		want0 += 2;
	}
	t0 = harness_now();
	for (k = 0; k < n; k++)
		cr_assert_eq(tally_group_destroy(kids[k]), 0);
	fprintf(stderr, "rstat: %ld sibling destroys, oldest first: %.3f s\n", n,
		harness_now() - t0);
	cr_assert_eq(tally_tree_nr_groups(t), 2);
	tally_group_flush_force(root);
	cr_assert_eq(U(tally_group_read(root, 0)), want0);
	cr_assert_eq(U(tally_group_read(root, 1)), want1);
	cr_assert_eq(U(tally_group_read(p, 0)), want0);
	cr_assert_eq(tally_group_read_local(p, 0), 0);
	free(kids);
	tally_tree_destroy(t);
}
