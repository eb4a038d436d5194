/*
 * Stress test of tally_group_reset / tally_tree_reset beside updates,
 * flushes, and groups created (tally_group_create_named) and destroyed
 * (tally_group_destroy_subtree) under the tree, with the threads stopped
 * and preempted at random points (perturb.h):
 *   - writers: tally_group_mod on random groups of a fixed random tree
 *     (item GROW grows only; the others walk both ways);
 *   - two resetters: resets of random subtrees and of the whole tree;
 *   - a flusher: forced flushes of random subtrees;
 *   - a reader: since-reset values of item GROW are never negative (a
 *     reader racing with a reset sees the value before it or since it);
 *   - a sync thread (until the resetters stop), alone on its group S: an update, a reset of S,
 *     and S reads 0 (every update completed before a reset is in its
 *     baseline); an update of k, a forced flush, and S reads k or 0 (0
 *     only if another thread's reset came between: none that started
 *     after a reset returned is in its baseline);
 *   - a churn thread (first three quarters of the run): a chain of named
 *     groups under a random fixed group, updated, then destroyed in one
 *     call; its counts must reach the fixed group exactly.
 * At the end, after the resetters stop, one last tree reset while the
 * writers still run, then a forced root flush once they stop:
 *   - raw values (tally_group_read_monotonic, never moved by a reset):
 *     every fixed group's hierarchical value is every delta applied in its
 *     subtree, churned groups included; its local value, its own deltas;
 *   - one cut: every group's since-reset value is exactly its local
 *     since-reset value plus its children's since-reset values (a reset
 *     whose baselines were not of one instant would break this by the
 *     updates that fell between them);
 * to the last unit, every item.
 *
 * TALLY_STRESS_SECONDS sets the run time (default 2).
 */
#define _GNU_SOURCE
#include "harness.h"
#include "perturb.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <tally/rstat.h>

#define U(x) ((tally_uword)(x))
#define NGROUPS 24
#define NITEMS 3
#define NWRITERS 2
#define CHUNK 128

enum { GROW = 0 };

static struct tally_tree *tree;
static struct tally_group *grp[NGROUPS];
static int parent[NGROUPS];
static struct tally_group *sync_g; /* child of the root, the sync thread's */
static tally_uword sync_total;      /* what the sync thread added (item GROW) */
static int stop, stop_churn, stop_reset;

struct writer {
	pthread_t tid;
	int id;
	tally_uword total[NGROUPS][NITEMS];
	unsigned long long ops;
};

static tally_sword delta_for(struct harness_rng *r, unsigned item)
{
	if (item == GROW)
		return (tally_sword)harness_range(r, 0, 7);
	return (tally_sword)harness_range(r, -500, 500);
}

static void *writer_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
	struct harness_rng r = {0xabcdu + (uint64_t)w->id * 7919u};
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int k = 0; k < CHUNK; k++) {
			int x = (int)harness_range(&r, 0, NGROUPS - 1);
			unsigned i = (unsigned)harness_range(&r, 0, NITEMS - 1);
			tally_sword d = delta_for(&r, i);
			CHECK_EQ(tally_group_mod(grp[x], i, d), 0);
			w->total[x][i] += U(d);
		}
		w->ops += CHUNK;
	}
	perturb_unregister();
	return NULL;
}

static void *resetter_main(void *arg)
{
	unsigned long long *resets = (unsigned long long *)arg;
	struct harness_rng r = {(uint64_t)(uintptr_t)arg};
	perturb_register();
	while (!__atomic_load_n(&stop_reset, __ATOMIC_RELAXED)) {
		int x = (int)harness_range(&r, -1, NGROUPS - 1);
		if (x < 0)
			CHECK_EQ(tally_tree_reset(tree), 0);
		else
			CHECK_EQ(tally_group_reset(grp[x]), 0);
		++*resets;
	}
	perturb_unregister();
	return NULL;
}

static void *flusher_main(void *arg)
{
	struct harness_rng r = {0x77u};
	(void)arg;
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		tally_group_flush_force(grp[harness_range(&r, 0, NGROUPS - 1)]);
		usleep(50);
	}
	perturb_unregister();
	return NULL;
}

static void *reader_main(void *arg)
{
	unsigned long long *reads = (unsigned long long *)arg;
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int x = 0; x < NGROUPS; x++) {
			tally_sword h = tally_group_read(grp[x], GROW);
			tally_sword l = tally_group_read_local(grp[x], GROW);
			CHECK(h >= 0, "group %d: since-reset value %lld is negative", x, (long long)h);
			CHECK(l >= 0, "group %d: since-reset local %lld is negative", x, (long long)l);
		}
		++*reads;
	}
	perturb_unregister();
	return NULL;
}

static void *sync_main(void *arg)
{
	unsigned long long *rounds = (unsigned long long *)arg;
	struct harness_rng r = {0x5151u};
	perturb_register();
	while (!__atomic_load_n(&stop_reset, __ATOMIC_RELAXED)) {
		tally_sword k = (tally_sword)harness_range(&r, 1, 1000), v;
		tally_sword j = (tally_sword)harness_range(&r, 1, 1000);
		CHECK_EQ(tally_group_mod(sync_g, GROW, j), 0);
		sync_total += U(j + k);
		CHECK_EQ(tally_group_reset(sync_g), 0);
		CHECK_EQ(tally_group_read(sync_g, GROW), 0);
		CHECK_EQ(tally_group_read_local(sync_g, GROW), 0);
		CHECK_EQ(tally_group_mod(sync_g, GROW, k), 0);
		tally_group_flush_force(sync_g);
		v = tally_group_read(sync_g, GROW);
		CHECK(v == k || v == 0, "after a reset and %lld: %lld", (long long)k, (long long)v);
		++*rounds;
	}
	perturb_unregister();
	return NULL;
}

/* Counts of the churned groups, by the fixed group they hung under. */
static tally_uword churned[NGROUPS][NITEMS];

static void *churn_main(void *arg)
{
	unsigned long long *chains = (unsigned long long *)arg;
	struct harness_rng r = {0xc4u};
	perturb_register();
	CHECK_EQ(tally_tree_register_thread(tree), 0);
	while (!__atomic_load_n(&stop_churn, __ATOMIC_RELAXED)) {
		int p = (int)harness_range(&r, 0, NGROUPS - 1);
		int depth = (int)harness_range(&r, 1, 3);
		struct tally_group *chain[3], *up = grp[p];
		for (int d = 0; d < depth; d++) {
			chain[d] = tally_group_create_named(up, d ? "below" : "churn");
			CHECK(chain[d] != NULL, "create_named: errno %d", errno);
			if (!chain[d])
				return NULL;
			up = chain[d];
		}
		for (int k = 0; k < 50; k++) {
			int d = (int)harness_range(&r, 0, depth - 1);
			unsigned i = (unsigned)harness_range(&r, 0, NITEMS - 1);
			tally_sword v = delta_for(&r, i);
			CHECK_EQ(tally_group_mod(chain[d], i, v), 0);
			churned[p][i] += U(v);
		}
		if (harness_range(&r, 0, 1))
			CHECK_EQ(tally_group_reset(chain[0]), 0);
		CHECK_EQ(tally_group_destroy_subtree(chain[0]), 0);
		++*chains;
	}
	tally_tree_unregister_thread(tree);
	perturb_unregister();
	return NULL;
}

static int in_subtree(int x, int top)
{
	for (; x >= 0; x = parent[x])
		if (x == top)
			return 1;
	return 0;
}

int main(void)
{
	struct writer w[NWRITERS];
	pthread_t rs[2], fl, rd, sy, ch;
	unsigned long long resets[2] = {1, 2}, reads = 0, rounds = 0, chains = 0, wops = 0;
	struct harness_rng r = {42};
	struct perturb_opts po;
	double secs = harness_seconds();

	tree = tally_tree_create(NITEMS);
	CHECK(tree != NULL, "tree");
	if (!tree)
		return harness_exit("stress_rstat_reset");
	grp[0] = tally_tree_root(tree);
	parent[0] = -1;
	for (int x = 1; x < NGROUPS; x++) {
		parent[x] = (int)harness_range(&r, 0, x - 1);
		grp[x] = tally_group_create(grp[parent[x]]);
	}
	sync_g = tally_group_create_named(grp[0], "sync");
	CHECK(sync_g != NULL, "sync group");

	memset(w, 0, sizeof(w));
	perturb_init();
	for (int i = 0; i < NWRITERS; i++) {
		w[i].id = i;
		pthread_create(&w[i].tid, NULL, writer_main, &w[i]);
	}
	pthread_create(&rs[0], NULL, resetter_main, &resets[0]);
	pthread_create(&rs[1], NULL, resetter_main, &resets[1]);
	pthread_create(&fl, NULL, flusher_main, NULL);
	pthread_create(&rd, NULL, reader_main, &reads);
	pthread_create(&sy, NULL, sync_main, &rounds);
	pthread_create(&ch, NULL, churn_main, &chains);
	perturb_defaults(&po, -1);
	perturb_start(&po);
	usleep((useconds_t)(secs * 0.75e6));
	__atomic_store_n(&stop_churn, 1, __ATOMIC_RELAXED);
	pthread_join(ch, NULL);
	usleep((useconds_t)(secs * 0.2e6));
	__atomic_store_n(&stop_reset, 1, __ATOMIC_RELAXED);
	pthread_join(rs[0], NULL);
	pthread_join(rs[1], NULL);
	pthread_join(sy, NULL);
	/* The last reset, with the writers running: the one the end checks. */
	CHECK_EQ(tally_tree_reset(tree), 0);
	usleep((useconds_t)(secs * 0.05e6));
	perturb_stop();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NWRITERS; i++) {
		pthread_join(w[i].tid, NULL);
		wops += w[i].ops;
	}
	pthread_join(fl, NULL);
	pthread_join(rd, NULL);
	tally_group_flush_force(grp[0]);

	for (int x = 0; x < NGROUPS; x++)
		for (unsigned i = 0; i < NITEMS; i++) {
			tally_uword hier = 0;
			tally_sword since = tally_group_read_local(grp[x], i);
			for (int y = 0; y < NGROUPS; y++) {
				if (!in_subtree(y, x))
					continue;
				for (int k = 0; k < NWRITERS; k++)
					hier += w[k].total[y][i];
				hier += churned[y][i];
			}
			if (x == 0 && i == GROW)
				hier += sync_total;
			CHECK(tally_group_read_monotonic(grp[x], i) - TALLY_MONOTONIC_BIAS == hier,
			      "group %d item %u: raw %llu, applied %llu", x, i,
			      (unsigned long long)tally_group_read_monotonic(grp[x], i),
			      (unsigned long long)hier);
			/* one cut: since-reset = local since-reset + children's */
			for (int c = 1; c < NGROUPS; c++)
				if (parent[c] == x)
					since += tally_group_read(grp[c], i);
			if (x == 0)
				since += tally_group_read(sync_g, i);
			CHECK(U(tally_group_read(grp[x], i)) == U(since),
			      "group %d item %u: since reset %lld, local and children %lld", x, i,
			      (long long)tally_group_read(grp[x], i), (long long)since);
		}
	printf("stress_rstat_reset: %llu updates, %llu resets, %llu sync rounds, %llu chains "
	       "churned, %llu reader passes\n",
	       wops, resets[0] + resets[1] - 3, rounds, chains, reads);
	perturb_report("stress_rstat_reset");
	CHECK(rounds > 0 && chains > 0, "sync or churn never ran");
	tally_tree_destroy(tree);
	return harness_exit("stress_rstat_reset");
}
