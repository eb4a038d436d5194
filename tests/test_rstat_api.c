/*
 * Unit tests for the group calls an adopter needs around tally/rstat.h:
 * reset of a subtree or a tree (exact since-reset values against a plain
 * model, raw values and ancestors unmoved, gauges left alone), groups
 * created with their name, found by name, subtrees destroyed in one call
 * (every count handed up exactly), the thread-registration wrappers, and
 * bad input. The TALLY_DEBUG checks of the RCU rules: tests/plain/rstat_debug.c.
 */
#define _GNU_SOURCE
#include "test_rstat_model.h"

#include <tally/rstat.h> /* also tells the build to link liburcu */

TestSuite(rstat_api, .init = rstat_setup, .fini = rstat_teardown);

/* ---- reset ------------------------------------------------------------------ */

/* The model's baselines: what each group's since-reset values subtract. */
struct bases {
	tally_uword h[MAXG][MAXI], l[MAXG][MAXI];
};

static void model_reset(const struct model *m, struct bases *b, int top)
{
	for (int x = 0; x < m->n; x++)
		if (in_subtree(m, x, top))
			for (unsigned i = 0; i < m->items; i++) {
				b->h[x][i] = model_hier(m, x, i);
				b->l[x][i] = m->local[x][i];
			}
}

/* Every group in top's subtree (top -1: every group) against the model. */
static void check_since_reset(const struct model *m, const struct bases *b, int top)
{
	for (int x = 0; x < m->n; x++)
		for (unsigned i = 0; top < 0 || in_subtree(m, x, top) ? i < m->items : 0; i++) {
			tally_uword h = model_hier(m, x, i);
			cr_assert_eq(U(tally_group_read(m->g[x], i)), h - b->h[x][i],
				     "group %d item %u: since reset %lld, model %lld", x, i,
				     (long long)tally_group_read(m->g[x], i),
				     (long long)tally__to_signed(h - b->h[x][i]));
			cr_assert_eq(U(tally_group_read_local(m->g[x], i)),
				     m->local[x][i] - b->l[x][i], "group %d item %u: local", x, i);
			/* raw: never moved by a reset */
			cr_assert_eq(tally_group_read_monotonic(m->g[x], i) - TALLY_MONOTONIC_BIAS, h,
				     "group %d item %u: raw", x, i);
		}
}

Test(rstat_api, reset_subtrees_exact_random_trees)
{
	for (unsigned seed = 1; seed <= 30; seed++) {
		struct harness_rng r = {seed * 104729u};
		struct model m;
		static struct bases b;
		int n = (int)harness_range(&r, 1, MAXG);
		unsigned items = (unsigned)harness_range(&r, 1, MAXI);
		struct tally_tree *t = model_build(&m, &r, n, items);
		memset(&b, 0, sizeof(b));
		for (int round = 0; round < 6; round++) {
			int top = (int)harness_range(&r, 0, m.n - 1);
			model_mods(&m, &r, (int)harness_range(&r, 0, 300));
			/* No flush first: the reset's own flush takes the cut. */
			if (round == 5)
				cr_assert_eq(tally_tree_reset(t), 0);
			else
				cr_assert_eq(tally_group_reset(m.g[top]), 0);
			if (round == 5)
				top = 0;
			model_reset(&m, &b, top);
			/* The reset flushed its subtree: exact there at once. */
			check_since_reset(&m, &b, top);
			model_mods(&m, &r, (int)harness_range(&r, 0, 300));
			tally_group_flush_force(tally_tree_root(t));
			check_since_reset(&m, &b, -1);
		}
		tally_tree_destroy(t);
	}
}

Test(rstat_api, reset_leaves_ancestors_and_gauges)
{
	static const unsigned char flags[2] = {0, TALLY_GROUP_ITEM_GAUGE};
	struct tally_tree_opts o = {.nr_items = 2, .item_flags = flags};
	struct tally_tree *t = tally_tree_create_opts(&o);
	struct tally_group *root, *a, *b;
	cr_assert_not_null(t);
	root = tally_tree_root(t);
	a = tally_group_create(root);
	b = tally_group_create(a);
	cr_assert_eq(tally_group_mod(b, 0, 10), 0);
	cr_assert_eq(tally_group_mod(b, 1, 4096), 0); /* bytes in use */
	cr_assert_eq(tally_group_mod(a, 0, 5), 0);
	cr_assert_eq(tally_group_reset(a), 0);
	cr_assert_eq(tally_group_read(a, 0), 0);
	cr_assert_eq(tally_group_read(b, 0), 0);
	cr_assert_eq(tally_group_read_local(a, 0), 0);
	cr_assert_eq(tally_group_read(b, 1), 4096); /* a gauge: left alone */
	cr_assert_eq(tally_group_read(a, 1), 4096);
	/* The root was flushed by a's reset only as far as a's subtree goes:
	 * its own flush brings the counts up, and a reset below it never
	 * took them away. */
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0), 15);
	cr_assert_eq(tally_group_read(root, 1), 4096);
	cr_assert_eq(tally_group_mod(b, 0, 3), 0);
	cr_assert_eq(tally_group_mod(b, 1, -4096), 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(b, 0), 3);
	cr_assert_eq(tally_group_read(a, 0), 3);
	cr_assert_eq(tally_group_read(root, 0), 18);
	cr_assert_eq(tally_group_read(b, 1), 0);
	cr_assert_eq(tally_group_read_positive(b, 1), 0);
	cr_assert_eq(tally_group_read_monotonic(b, 0) - TALLY_MONOTONIC_BIAS, 13);
	/* A second reset moves the baselines again. */
	cr_assert_eq(tally_tree_reset(t), 0);
	cr_assert_eq(tally_group_read(root, 0), 0);
	cr_assert_eq(tally_group_read(a, 0), 0);
	cr_assert_eq(tally_group_read(root, 1), 0); /* the gauge's level */
	/* A destroyed child's counts after the reset reach the parent. */
	cr_assert_eq(tally_group_mod(b, 0, 7), 0);
	cr_assert_eq(tally_group_destroy(b), 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(a, 0), 7);
	cr_assert_eq(tally_group_read(root, 0), 7);
	tally_tree_destroy(t);
}

Test(rstat_api, reset_bad_input)
{
	unsigned char bad[2] = {0, 0x2};
	struct tally_tree_opts o = {.nr_items = 2, .item_flags = bad};
	struct tally_tree *t;
	struct tally_group *g;
	errno = 0;
	cr_assert_null(tally_tree_create_opts(&o));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(tally_group_reset(NULL), -EINVAL);
	cr_assert_eq(tally_tree_reset(NULL), -EINVAL);
	t = tally_tree_create(1);
	g = tally_group_create(tally_tree_root(t));
	cr_assert_eq(tally_group_mod(g, 0, 5), 0);
	tally_tree_read_lock(t);
	cr_assert_eq(tally_group_destroy(g), 0);
	cr_assert_eq(tally_group_reset(g), -EINVAL); /* destroyed: nothing done */
	cr_assert_eq(tally_group_read(g, 0), 5);     /* its values as of the destroy */
	tally_tree_read_unlock(t);
	tally_tree_destroy(t);
}

/* ---- names ----------------------------------------------------------------- */

Test(rstat_api, create_named)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t), *a, *b, *c;
	char long_name[TALLY_GROUP_NAME_MAX + 2];
	a = tally_group_create_named(root, "tenant-a");
	cr_assert_not_null(a);
	cr_assert_str_eq(tally_group_name(a), "tenant-a");
	b = tally_group_create_named(root, "t\xc3\xa9nant"); /* UTF-8 */
	cr_assert_not_null(b);
	c = tally_group_create_named(a, "tenant-a"); /* another parent: fine */
	cr_assert_not_null(c);
	cr_assert_eq(tally_tree_nr_groups(t), 4);
	/* One name per parent. */
	errno = 0;
	cr_assert_null(tally_group_create_named(root, "tenant-a"));
	cr_assert_eq(errno, EEXIST);
	cr_assert_eq(tally_group_set_name(tally_group_create(root), "dup"), 0);
	errno = 0;
	cr_assert_null(tally_group_create_named(root, "dup"));
	cr_assert_eq(errno, EEXIST);
	/* Bad names and parents: nothing created. */
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	const char *bad[] = {"", "a/b", "/", "\xff", long_name};
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		errno = 0;
		cr_assert_null(tally_group_create_named(root, bad[k]), "name %u", k);
		cr_assert_eq(errno, EINVAL, "name %u", k);
	}
	long_name[TALLY_GROUP_NAME_MAX] = 0; /* the longest allowed */
	cr_assert_not_null(tally_group_create_named(root, long_name));
	errno = 0;
	cr_assert_null(tally_group_create_named(NULL, "x"));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(tally_group_create_named(root, NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(tally_tree_nr_groups(t), 6);
	/* Too deep: refused as tally_group_create refuses (the name's copy
	 * freed: ASan would see it leak). */
	{
		struct tally_group *top = tally_group_create(root), *p = top;
		for (unsigned d = 1; d < TALLY_RSTAT_DEPTH_MAX && p; d++)
			p = tally_group_create(p);
		cr_assert_not_null(p);
		errno = 0;
		cr_assert_null(tally_group_create_named(p, "deep"));
		cr_assert_eq(errno, E2BIG);
		cr_assert_eq(tally_group_destroy_subtree(top), 0); /* 1024 groups at once */
		cr_assert_eq(tally_tree_nr_groups(t), 6);
	}
	/* Destroyed: its name is free again; a destroyed parent refuses. */
	tally_tree_read_lock(t);
	cr_assert_eq(tally_group_destroy(c), 0);
	cr_assert_eq(tally_group_destroy(a), 0);
	errno = 0;
	cr_assert_null(tally_group_create_named(a, "x"));
	cr_assert_eq(errno, EINVAL);
	tally_tree_read_unlock(t);
	a = tally_group_create_named(root, "tenant-a");
	cr_assert_not_null(a);
	cr_assert_str_eq(tally_group_name(a), "tenant-a");
	tally_tree_destroy(t);
}

Test(rstat_api, find_child)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t), *a, *b, *d1, *d2;
	a = tally_group_create_named(root, "a");
	b = tally_group_create_named(root, "b");
	(void)tally_group_create(root); /* unnamed: never found */
	tally_tree_read_lock(t);
	cr_assert_eq(tally_group_find_child(root, "a"), a);
	cr_assert_eq(tally_group_find_child(root, "b"), b);
	errno = 0;
	cr_assert_null(tally_group_find_child(root, "c"));
	cr_assert_eq(errno, ENOENT);
	errno = 0;
	cr_assert_null(tally_group_find_child(a, "a")); /* children of a only */
	cr_assert_eq(errno, ENOENT);
	errno = 0;
	cr_assert_null(tally_group_find_child(NULL, "a"));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(tally_group_find_child(root, NULL));
	cr_assert_eq(errno, EINVAL);
	/* Two of one name through set_name: the one created last. */
	d1 = tally_group_create(root);
	d2 = tally_group_create(root);
	cr_assert_eq(tally_group_set_name(d1, "d"), 0);
	cr_assert_eq(tally_group_set_name(d2, "d"), 0);
	cr_assert_eq(tally_group_find_child(root, "d"), d2);
	/* A destroyed child is not found; the other one is. */
	cr_assert_eq(tally_group_destroy(d2), 0);
	cr_assert_eq(tally_group_find_child(root, "d"), d1);
	cr_assert_eq(tally_group_destroy(a), 0);
	errno = 0;
	cr_assert_null(tally_group_find_child(root, "a"));
	cr_assert_eq(errno, ENOENT);
	tally_tree_read_unlock(t);
	tally_tree_destroy(t);
}

/* ---- destroy a subtree ---------------------------------------------------------- */

Test(rstat_api, destroy_subtree_hands_everything_up)
{
	for (unsigned seed = 1; seed <= 30; seed++) {
		struct harness_rng r = {seed * 7919u + 3};
		struct model m;
		int n = (int)harness_range(&r, 2, MAXG);
		unsigned items = (unsigned)harness_range(&r, 1, MAXI);
		struct tally_tree *t = model_build(&m, &r, n, items);
		int top = (int)harness_range(&r, 1, m.n - 1), p = m.parent[top], gone = 0;
		model_mods(&m, &r, 200);
		tally_group_flush_force(m.g[(int)harness_range(&r, 0, m.n - 1)]);
		model_mods(&m, &r, 200); /* some unflushed */
		for (int x = 0; x < m.n; x++)
			gone += in_subtree(&m, x, top);
		tally_tree_read_lock(t);
		cr_assert_eq(tally_group_destroy_subtree(m.g[top]), 0);
		for (int x = 0; x < m.n; x++)
			if (in_subtree(&m, x, top)) {
				/* Counted, for p (the nearest live ancestor). */
				cr_assert_eq(tally_group_mod(m.g[x], 0, 1), 0);
				m.local[x][0] += 1;
				cr_assert_eq(tally_group_destroy(m.g[x]), -EINVAL);
			}
		cr_assert_eq(tally_group_destroy_subtree(m.g[top]), -EINVAL);
		tally_tree_read_unlock(t);
		cr_assert_eq(tally_tree_nr_groups(t), (unsigned long)(m.n - gone));
		tally_group_flush_force(tally_tree_root(t));
		/* Every count of the subtree is now the parent's own (local keeps
		 * only what was its own; hierarchical has it all). */
		for (unsigned i = 0; i < items; i++) {
			cr_assert_eq(U(tally_group_read(m.g[p], i)), model_hier(&m, p, i));
			cr_assert_eq(U(tally_group_read(m.g[0], i)), model_hier(&m, 0, i));
			cr_assert_eq(U(tally_group_read_local(m.g[p], i)), m.local[p][i]);
		}
		tally_tree_destroy(t);
	}
}

Test(rstat_api, destroy_subtree_bad_input)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *a = tally_group_create(tally_tree_root(t));
	cr_assert_eq(tally_group_destroy_subtree(NULL), -EINVAL);
	cr_assert_eq(tally_group_destroy_subtree(tally_tree_root(t)), -EINVAL);
	/* A leaf: as tally_group_destroy. */
	cr_assert_eq(tally_group_mod(a, 0, 9), 0);
	cr_assert_eq(tally_group_destroy_subtree(a), 0);
	tally_group_flush_force(tally_tree_root(t));
	cr_assert_eq(tally_group_read(tally_tree_root(t), 0), 9);
	cr_assert_eq(tally_tree_nr_groups(t), 1);
	tally_tree_destroy(t);
}

/* ---- thread registration ---------------------------------------------------- */

static void *registered_destroyer(void *arg)
{
	struct tally_group *g = (struct tally_group *)arg;
	struct tally_tree *t = tally_group_tree(g);
	int r;
	if (tally_tree_register_thread(t))
		return (void *)1;
	tally_tree_read_lock(t);
	r = tally_group_find_child(tally_group_parent(g), "x") == g;
	tally_tree_read_unlock(t);
	r = r && tally_group_destroy(g) == 0;
	tally_tree_unregister_thread(t);
	return r ? NULL : (void *)1;
}

Test(rstat_api, register_thread)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *g = tally_group_create_named(tally_tree_root(t), "x");
	pthread_t tid;
	void *ret;
	cr_assert_eq(tally_tree_register_thread(NULL), -EINVAL);
	tally_tree_unregister_thread(NULL); /* no-op */
	cr_assert_eq(pthread_create(&tid, NULL, registered_destroyer, g), 0);
	cr_assert_eq(pthread_join(tid, &ret), 0);
	cr_assert_null(ret);
	cr_assert_eq(tally_tree_nr_groups(t), 1);
	tally_tree_destroy(t);
}
