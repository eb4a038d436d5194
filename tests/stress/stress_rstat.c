/*
 * Stress test of tally_tree / tally_group (rstat.h), all at once for
 * TALLY_STRESS_SECONDS (default 2):
 *   - writers: tally_group_mod on random groups of a fixed random tree;
 *   - flushers: thresholded, forced and ratelimited flushes of random
 *     subtrees, and the periodic flusher thread (1 ms);
 *   - a reader: reads of random groups, and RCU walks of children lists
 *     (tally_group_for_each_child) that meet groups being destroyed;
 *   - a churn thread: creates short-lived groups (chains of 1..3) under
 *     random groups, updates them, checks them exactly after forcing a
 *     flush of their subtree, and destroys them while everything else runs.
 * More threads than cores, so threads share CPU slots and get preempted
 * mid-update (between the word add and the dirty bits, say).
 *
 * A second phase (half as long) targets two races of an updater with a
 * flusher (see sb_phase()): the store-buffering pairing of
 * tally_group_mod() and the flush's drain (without a barrier on both
 * sides, the flush's membarrier() or a full fence on each, an update is
 * now and then left unmarked and the read right after a flush misses it:
 * measured on x86_64 with the rseq plain add and the updater's fence
 * removed, with the lockless lists this stress used to check, one to four
 * misses per million rounds), and a
 * thresholded flush after an update past the threshold while another
 * flush takes the count (without the flush's second drain: about one miss
 * per million rounds).
 *
 * Checks:
 *   during the run: the hierarchical and local values of item GROW
 *     (positive updates only) never go back, read monotonic; a short-lived
 *     group reads exactly its own updates after a forced flush of its
 *     subtree, or after an update past the threshold and a thresholded
 *     flush (even when a concurrent flush took the count first);
 *   at the end, after a forced root flush: every live group's hierarchical
 *     value equals the sum of every delta ever applied in its subtree,
 *     short-lived (destroyed) descendants included, and its local value
 *     the sum of the deltas applied to it; to the last unit, every item.
 *
 * Built twice: by default the trees pair full fences; with
 * TALLY_RSTAT_MEMBARRIER=1 (stress_rstat_membarrier) they use membarrier()
 * wherever the kernel offers it, which the program checks.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <tally/rstat.h>

/* The barrier pairing the trees must use (rstat.h, Memory ordering):
 * membarrier() where the kernel lists private expedited membarrier and its
 * registration, unless the build forces the full fence. */
static int want_membarrier(void)
{
#if TALLY_RSTAT_MEMBARRIER && defined(__NR_membarrier)
	long q = syscall(__NR_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0);
	return q >= 0 && (q & (1 << 3)) && (q & (1 << 4));
#else
	return 0;
#endif
}

#define U(x) ((tally_uword)(x))
#define NGROUPS 40
#define NITEMS 3
#define NWRITERS 3
#define NFLUSHERS 2
#define CHUNK 256

enum { GROW = 0 }; /* items 1.. walk both ways, sometimes far */

static struct tally_tree *tree;
static struct tally_group *grp[NGROUPS];
static int parent[NGROUPS];
static int stop;

struct writer {
	pthread_t tid;
	int id;
	tally_uword total[NGROUPS][NITEMS];
};

/* Deltas applied to short-lived groups, by the permanent group they
 * were created under (the churn thread's own). */
static tally_uword churn_total[NGROUPS][NITEMS];
static unsigned long long churn_groups, walks, flushes;

static int in_subtree(int x, int top)
{
	for (; x >= 0; x = parent[x])
		if (x == top)
			return 1;
	return 0;
}

static tally_sword delta_for(struct harness_rng *r, unsigned item)
{
	if (item == GROW)
		return (tally_sword)harness_range(r, 0, 4);
	if (harness_range(r, 0, 63) == 0)
		return (tally_sword)harness_range(r, -2000000, 2000000);
	return (tally_sword)harness_range(r, -50, 50);
}

static void *writer_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
	struct harness_rng rng = {0x1234u + (uint64_t)w->id * 7919u};
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int k = 0; k < CHUNK; k++) {
			int x = (int)harness_range(&rng, 0, NGROUPS - 1);
			unsigned item = (unsigned)harness_range(&rng, 0, NITEMS - 1);
			tally_sword d = delta_for(&rng, item);
			int err = tally_group_mod(grp[x], item, d);
			CHECK(err == 0, "mod returned %d", err);
			w->total[x][item] += U(d);
		}
	}
	return NULL;
}

static void *flusher_main(void *arg)
{
	struct harness_rng rng = {0x777u + (uint64_t)(intptr_t)arg};
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int x = (int)harness_range(&rng, 0, NGROUPS - 1);
		switch (harness_range(&rng, 0, 3)) {
		case 0:
			tally_group_flush(grp[x]);
			break;
		case 1:
			tally_group_flush_force(grp[x]);
			break;
		case 2:
			tally_group_flush_ratelimited(grp[x]);
			break;
		default:
			if (harness_range(&rng, 0, 15) == 0)
				tally_tree_flush_periodic(tree);
			else
				tally_group_flush_force(grp[x]);
		}
		__atomic_fetch_add(&flushes, 1, __ATOMIC_RELAXED);
		if (harness_range(&rng, 0, 7) == 0)
			sched_yield();
	}
	return NULL;
}

static int walk_child(struct tally_group *c, void *arg)
{
	/* c may be a short-lived group being destroyed right now: RCU keeps
	 * it readable; its values are not checked. */
	*(tally_uword *)arg += tally_group_read_monotonic(c, 1) + U(tally_group_read_local(c, 2));
	__atomic_fetch_add(&walks, 1, __ATOMIC_RELAXED);
	return 0;
}

static void *reader_main(void *arg)
{
	struct harness_rng rng = {0x4242u};
	static tally_uword last_h[NGROUPS], last_l[NGROUPS];
	tally_uword sink = 0;
	(void)arg;
	urcu_memb_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int x = (int)harness_range(&rng, 0, NGROUPS - 1);
		tally_uword h = tally_group_read_monotonic(grp[x], GROW);
		tally_uword l = U(tally_group_read_local(grp[x], GROW));
		CHECK(!tally_after(last_h[x], h), "group %d: GROW went back %llu -> %llu", x,
		      (unsigned long long)last_h[x], (unsigned long long)h);
		CHECK(!tally_after(last_l[x], l), "group %d: GROW local went back", x);
		last_h[x] = h;
		last_l[x] = l;
		sink += U(tally_group_read(grp[x], 1)) + tally_group_read_positive(grp[x], 2);
		if (harness_range(&rng, 0, 3) == 0)
			tally_group_for_each_child(grp[x], walk_child, &sink);
	}
	urcu_memb_unregister_thread();
	__atomic_store_n(&last_h[0], last_h[0] + (sink & 0), __ATOMIC_RELAXED);
	return NULL;
}

static void *churn_main(void *arg)
{
	struct harness_rng rng = {0x9999u};
	(void)arg;
	urcu_memb_register_thread(); /* tally_group_destroy uses call_rcu */
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int top = (int)harness_range(&rng, 0, NGROUPS - 1);
		int depth = (int)harness_range(&rng, 1, 3), k;
		struct tally_group *chain[3];
		tally_uword mine[3][NITEMS];
		memset(mine, 0, sizeof(mine));
		for (k = 0; k < depth; k++) {
			chain[k] = tally_group_create(k ? chain[k - 1] : grp[top]);
			CHECK(chain[k] != NULL, "create failed");
			if (!chain[k])
				return NULL;
		}
		for (int n = (int)harness_range(&rng, 0, 400); n > 0; n--) {
			int at = (int)harness_range(&rng, 0, depth - 1);
			unsigned item = (unsigned)harness_range(&rng, 0, NITEMS - 1);
			tally_sword d = delta_for(&rng, item);
			CHECK(tally_group_mod(chain[at], item, d) == 0, "mod failed");
			mine[at][item] += U(d);
			churn_total[top][item] += U(d);
		}
		if (harness_range(&rng, 0, 1)) {
			/* Only this thread updates the chain: after a flush of
			 * its top it reads exactly. Either forced, or
			 * thresholded after an update past the threshold: then
			 * the top is flushable, or a concurrent flush of an
			 * ancestor took its count, and that flush reflects every
			 * update before it and is done. */
			if (harness_range(&rng, 0, 1)) {
				tally_sword big = (tally_sword)tally_tree_flush_threshold(tree) + 1;
				int at = (int)harness_range(&rng, 0, depth - 1);
				/* The chain's top below its threshold first: only
				 * this thread updates the chain, so after a forced
				 * flush its counts are 0. */
				tally_group_flush_force(chain[0]);
				CHECK(!tally_group_needs_flush(chain[0]), "flushable after a flush");
				CHECK(tally_group_mod(chain[at], 1, big) == 0, "mod failed");
				mine[at][1] += U(big);
				churn_total[top][1] += U(big);
				tally_group_flush(chain[0]);
			} else {
				tally_group_flush_force(chain[0]);
			}
			for (unsigned i = 0; i < NITEMS; i++) {
				tally_uword sum = 0;
				for (k = depth - 1; k >= 0; k--) {
					sum += mine[k][i];
					CHECK_EQ(U(tally_group_read(chain[k], i)), sum);
					CHECK_EQ(U(tally_group_read_local(chain[k], i)), mine[k][i]);
				}
			}
		}
		CHECK(depth == 1 || tally_group_destroy(chain[0]) == -EBUSY, "destroy with kids");
		for (k = depth - 1; k >= 0; k--)
			CHECK(tally_group_destroy(chain[k]) == 0, "destroy failed");
		churn_groups += (unsigned long long)depth;
	}
	urcu_memb_unregister_thread();
	return NULL;
}

/* ---- phase 2: races of one updater with a flusher ------------------------ */

static struct tally_group *sb_root, *sb_parent, *sb_leaf, *sb_leaf2;
static int sb_stop, sb_cpus[2], sb_ncpus;

static void *sb_flusher(void *arg)
{
	(void)arg;
	if (sb_ncpus >= 2)
		harness_pin(sb_cpus[1]);
	while (!__atomic_load_n(&sb_stop, __ATOMIC_RELAXED))
		tally_group_flush_force(sb_root);
	return NULL;
}

/*
 * One thread updates root/p/{leaf, leaf2} and checks, while another,
 * pinned to another CPU, flushes the root in a loop. Even rounds: leaf +1
 * twice, a forced flush of leaf, leaf must read exactly (the store
 * buffering pairing of tally_group_mod and the drain). Odd rounds: a
 * forced flush of p (below its threshold now), leaf2 +1, leaf +
 * (threshold + 1), a thresholded flush of p, p must read exactly (p is
 * flushable, or the root flush took its count, and then it reflects leaf's
 * update although leaf was marked dirty after its first drain, and it is
 * done).
 */
static void sb_phase(double secs)
{
	struct tally_tree *t = tally_tree_create(1);
	pthread_t th;
	tally_uword want_leaf = 0, want_p = 0;
	tally_sword big;
	unsigned long long rounds = 0, missed_sb = 0, missed_thr = 0;
	double end;
	CHECK(t != NULL, "sb tree");
	if (!t)
		return;
	CHECK(t->tally__flush.memb == want_membarrier(), "tree uses %s",
	      t->tally__flush.memb ? "membarrier" : "fences");
	big = (tally_sword)tally_tree_flush_threshold(t) + 1;
	sb_root = tally_tree_root(t);
	sb_parent = tally_group_create(sb_root);
	sb_leaf = tally_group_create(sb_parent);
	sb_leaf2 = tally_group_create(sb_parent);
	sb_ncpus = harness_allowed_cpus(sb_cpus, 2);
	pthread_create(&th, NULL, sb_flusher, NULL);
	if (sb_ncpus >= 2)
		harness_pin(sb_cpus[0]);
	end = harness_now() + secs;
	while (harness_now() < end) {
		for (int k = 0; k < 1000; k++, rounds++) {
			if (k & 1) {
				/* p below its threshold first (a forced flush takes
				 * every count of this thread's updates). */
				tally_group_flush_force(sb_parent);
				tally_group_mod(sb_leaf2, 0, 1);
				tally_group_mod(sb_leaf, 0, big);
				want_leaf += U(big);
				want_p += U(big) + 1u;
				tally_group_flush(sb_parent);
				if (U(tally_group_read(sb_parent, 0)) == want_p)
					continue;
				missed_thr++;
			} else {
				tally_group_mod(sb_leaf, 0, 1);
				tally_group_mod(sb_leaf, 0, 1);
				want_leaf += 2;
				want_p += 2;
				tally_group_flush_force(sb_leaf);
				if (U(tally_group_read(sb_leaf, 0)) == want_leaf)
					continue;
				missed_sb++;
			}
			/* Count it once and start over from the true values. */
			tally_group_flush_force(sb_parent);
			want_leaf = U(tally_group_read(sb_leaf, 0));
			want_p = U(tally_group_read(sb_parent, 0));
		}
	}
	__atomic_store_n(&sb_stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	CHECK(missed_sb == 0, "%llu forced flushes missed an update before them", missed_sb);
	CHECK(missed_thr == 0, "%llu thresholded flushes missed an update past the threshold",
	      missed_thr);
	printf("stress_rstat: updater/flusher races (%s): %llu rounds, %llu + %llu missed\n",
	       t->tally__flush.memb ? "membarrier" : "full fences", rounds, missed_sb, missed_thr);
	tally_tree_destroy(t);
}

int main(void)
{
	static struct writer w[NWRITERS];
	pthread_t fl[NFLUSHERS], rd, ch;
	struct harness_rng rng = {2024};
	struct tally_tree_opts o;
	double secs = harness_seconds();
	int x, k;
	unsigned i;

	memset(&o, 0, sizeof(o));
	o.nr_items = NITEMS;
	o.batch = 4; /* small: thresholded flushes happen often */
	o.period_ns = 1000000;
	tree = tally_tree_create_opts(&o);
	CHECK(tree != NULL, "tree");
	if (!tree)
		return harness_exit("stress_rstat");
	grp[0] = tally_tree_root(tree);
	parent[0] = -1;
	for (x = 1; x < NGROUPS; x++) {
		parent[x] = (int)harness_range(&rng, 0, x - 1);
		grp[x] = tally_group_create(grp[parent[x]]);
		CHECK(grp[x] != NULL, "group %d", x);
	}

	CHECK(tally_tree_start_flusher(tree, 1000000) == 0, "flusher");
	for (k = 0; k < NWRITERS; k++) {
		w[k].id = k;
		pthread_create(&w[k].tid, NULL, writer_main, &w[k]);
	}
	for (k = 0; k < NFLUSHERS; k++)
		pthread_create(&fl[k], NULL, flusher_main, (void *)(intptr_t)k);
	pthread_create(&rd, NULL, reader_main, NULL);
	pthread_create(&ch, NULL, churn_main, NULL);

	usleep((useconds_t)(secs * 1e6));
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (k = 0; k < NWRITERS; k++)
		pthread_join(w[k].tid, NULL);
	for (k = 0; k < NFLUSHERS; k++)
		pthread_join(fl[k], NULL);
	pthread_join(rd, NULL);
	pthread_join(ch, NULL);
	tally_tree_stop_flusher(tree);

	tally_group_flush_force(grp[0]);
	CHECK_EQ(tally_tree_nr_groups(tree), NGROUPS);
	for (x = 0; x < NGROUPS; x++) {
		for (i = 0; i < NITEMS; i++) {
			tally_uword hier = 0, local = 0;
			int y;
			for (k = 0; k < NWRITERS; k++)
				local += w[k].total[x][i];
			for (y = 0; y < NGROUPS; y++) {
				if (!in_subtree(y, x))
					continue;
				for (k = 0; k < NWRITERS; k++)
					hier += w[k].total[y][i];
				hier += churn_total[y][i];
			}
			CHECK_EQ(U(tally_group_read(grp[x], i)), hier);
			CHECK_EQ(U(tally_group_read_local(grp[x], i)), local);
		}
	}
	printf("stress_rstat: %.1f s, %llu short-lived groups, %llu flushes, %llu child visits\n",
	       secs, churn_groups, flushes, walks);
	tally_tree_destroy(tree);
	sb_phase(secs / 2 > 0.5 ? secs / 2 : 0.5);
	return harness_exit("stress_rstat");
}
