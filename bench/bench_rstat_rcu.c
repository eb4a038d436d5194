/*
 * bench_rstat_rcu - what the RCU flavor costs a tree's users: a group
 * update inside a read-side section (the pattern for groups another thread
 * may destroy), the section alone, and a group's create + destroy (a
 * call_rcu()). Built twice into bench_rstat: with the default flavor,
 * urcu-memb, and with TALLY_BENCH_BP and tally::rstat_bp's definitions,
 * urcu-bp (TALLY_URCU_BP, the bulletproof flavor: threads register by
 * themselves; its read lock checks the registration and fences where
 * urcu-memb relies on membarrier()). The names end in /memb or /bp; compare them in one run.
 */
#include "cbench.h"

#include <stdlib.h>
#include <tally/rstat.h>

#ifdef TALLY_BENCH_BP
#  define FLAVOR "bp"
#  define REGISTER_FN register_rstat_rcu_bp
#else
#  define FLAVOR "memb"
#  define REGISTER_FN register_rstat_rcu_memb
#endif

#define RCU_ITEMS 4
#define RCU_UNROLL 8

struct rcu_case {
	struct tally_tree *tree;
	struct tally_group **leaf; /* one per thread */
	int mod;                   /* 1: mod inside the section; 0: section only */
};

static struct rcu_case section_mod = {NULL, NULL, 1}, section_only = {NULL, NULL, 0};

static int rcu_setup(struct cbench_state *s, void *arg)
{
	struct rcu_case *c = (struct rcu_case *)arg;
	int threads = cbench_nthreads(s), i;
	c->tree = tally_tree_create(RCU_ITEMS);
	c->leaf = (struct tally_group **)calloc((size_t)threads, sizeof(*c->leaf));
	if (!c->tree || !c->leaf)
		return -1;
	for (i = 0; i < threads; i++)
		if (!(c->leaf[i] = tally_group_create(tally_tree_root(c->tree))))
			return -1;
	return 0;
}

static void rcu_teardown(struct cbench_state *s, void *arg)
{
	struct rcu_case *c = (struct rcu_case *)arg;
	uint64_t want = c->mod ? cbench_iterations(s) * RCU_UNROLL * (uint64_t)cbench_nthreads(s) : 0;
	tally_uword sum = 0;
	tally_group_flush_force(tally_tree_root(c->tree));
	for (unsigned i = 0; i < RCU_ITEMS; i++)
		sum += (tally_uword)tally_group_read(tally_tree_root(c->tree), i);
	cbench_check(s, sum == (tally_uword)want, "root total after flush");
	tally_tree_destroy(c->tree);
	free(c->leaf);
	c->tree = NULL;
	c->leaf = NULL;
}

/* Per iteration RCU_UNROLL times: read lock, (mod), read unlock. */
static void rcu_body(struct cbench_state *s, void *arg)
{
	struct rcu_case *c = (struct rcu_case *)arg;
	struct tally_group *g = NULL;
	uint64_t n, i;
	unsigned k = 0;
	while (cbench_batch(s, &n)) {
		/* The tree is thread 0's, ready once the start barrier is
		 * passed. Thread 0 may destroy it as soon as every thread has
		 * left the loop, so register through the flavor itself (the
		 * tree's), not through the tree (urcu-bp: nothing to do). */
		if (!g) {
			TALLY_URCU_DEFAULT_FLAVOR.register_thread();
			g = c->leaf[cbench_thread_index(s)];
		}
		for (i = 0; i < n; i++)
			for (int j = 0; j < RCU_UNROLL; j++) {
				tally_tree_read_lock(c->tree);
				if (c->mod)
					tally_group_mod(g, k++ % RCU_ITEMS, 1);
				tally_tree_read_unlock(c->tree);
			}
	}
	cbench_items(s, (int64_t)(cbench_iterations(s) * RCU_UNROLL));
	if (g)
		TALLY_URCU_DEFAULT_FLAVOR.unregister_thread();
}

/* A group created and destroyed (its free deferred by call_rcu()). */
static void churn_body(struct cbench_state *s, void *arg)
{
	struct tally_tree *t = tally_tree_create(RCU_ITEMS);
	uint64_t n, i;
	int ok = t != NULL;
	(void)arg;
	if (!t) {
		cbench_skip(s, "tree");
		return;
	}
	tally_tree_register_thread(t);
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			struct tally_group *g = tally_group_create(tally_tree_root(t));
			ok &= g && tally_group_mod(g, 0, 1) == 0 && tally_group_destroy(g) == 0;
		}
	tally_group_flush_force(tally_tree_root(t));
	cbench_check(s, ok && (uint64_t)tally_group_read(tally_tree_root(t), 0) ==
				      cbench_iterations(s),
		     "every destroyed group's count in the root");
	cbench_items(s, (int64_t)cbench_iterations(s));
	tally_tree_unregister_thread(t);
	tally_tree_destroy(t);
}

CBENCH_INIT(REGISTER_FN)
{
	cbench_thread_range(cbench_setup(cbench_register("rcu_section_mod/" FLAVOR, rcu_body,
							 &section_mod),
					 rcu_setup, rcu_teardown),
			    1, 2);
	cbench_thread_range(cbench_setup(cbench_register("rcu_section/" FLAVOR, rcu_body,
							 &section_only),
					 rcu_setup, rcu_teardown),
			    1, 2);
	cbench_register("group_create_destroy/" FLAVOR, churn_body, NULL);
}
