/*
 * Shared by the rstat unit tests (test_rstat*.c): RCU registration of
 * every test thread, and a plain model of a tree: the deltas applied to
 * each group, from which the exact hierarchical and local values follow.
 */
#ifndef TALLY_TEST_RSTAT_MODEL_H
#define TALLY_TEST_RSTAT_MODEL_H

#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <tally/rstat.h>

#define U(x) ((tally_uword)(x))

/* Every test thread may destroy groups: call_rcu() wants it registered. */
static inline void rstat_setup(void)
{
	urcu_memb_register_thread();
}

static inline void rstat_teardown(void)
{
	urcu_memb_unregister_thread();
}

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

static inline int in_subtree(const struct model *m, int x, int top)
{
	for (; x >= 0; x = m->parent[x])
		if (x == top)
			return 1;
	return 0;
}

static inline tally_uword model_hier(const struct model *m, int top, unsigned i)
{
	tally_uword sum = 0;
	int x;
	for (x = 0; x < m->n; x++)
		if (in_subtree(m, x, top))
			sum += m->local[x][i];
	return sum;
}

/* A random tree of n groups: each new group under a random earlier one. */
static inline struct tally_tree *model_build(struct model *m, struct harness_rng *r, int n, unsigned items)
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

static inline tally_sword random_delta(struct harness_rng *r)
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

static inline void model_mods(struct model *m, struct harness_rng *r, int count)
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

static inline void model_check_group(const struct model *m, int x)
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


#endif /* TALLY_TEST_RSTAT_MODEL_H */
