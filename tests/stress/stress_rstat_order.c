/*
 * Ordering stress of tally_group_mod() against flushes, under schedule
 * perturbation: checks rstat.h's promise itself, every round, not only
 * final totals:
 *
 *   "a flush that starts after tally_group_mod() returned (happens-after
 *    it) reflects that update", whatever the other threads are doing
 *   (preempted, stopped, starved);
 *   and the threshold promise: an update that takes a group past its
 *   threshold is reflected, with every earlier update of its thread, once
 *   tally_group_flush() of that group returns.
 *
 * Tree: root - P - {L0, L1}; one item; a large batch, so only the
 * deliberate big updates make a group flushable. Threads:
 *   - NUPD updaters, all pinned to ONE CPU, so they share its slot: each
 *     adds small positive deltas to P, L0 and L1, and after each call
 *     returns publishes its running per-group total (release store);
 *     now and then an updater forces a flush itself and checks it, and
 *     updater 0 also makes a leaf cross its threshold and calls the
 *     thresholded flush;
 *   - a checker, on another CPU where there is one: picks a group, loads
 *     the published totals (acquire: those updates returned before the
 *     flush starts), forces a flush of the group, reads it and asserts
 *     hierarchical >= the sum of those totals over the group's subtree
 *     and local >= the group's own (deltas are positive), and no more
 *     than what returned by the time it read plus one update in progress
 *     per updater (nothing counted twice); modular comparisons, so 32-bit
 *     words may wrap;
 *   - perturbation (perturb.h): a preempter on the updaters' CPU waking
 *     every 20 us (SCHED_FIFO where allowed), a stopper that holds one
 *     updater in a signal handler for 20 us..1 ms (a SIGSTOP of one
 *     thread, wherever it is, also between two steps of the lock-free
 *     push), and signal storms.
 * At the end every group must read exactly the sum of its subtree's
 * updates after a forced root flush.
 *
 * The race it is built for: updater B claims its group's node on the
 * shared slot (the CAS of the node's link from "off list" to "being
 * pushed") and loses the CPU before the push; updater A then updates the
 * same group on the same slot, sees the node taken, skips the push and
 * returns; a flush started after that does not find the group on the slot
 * and misses A's delta for as long as B stays off the CPU.
 *
 * Reports every violation's count (failed checks and episodes: runs of
 * consecutive failed checks of a group by one thread) after TALLY_STRESS_SECONDS (default 2);
 * exits non-zero on any violation, printing the first one at once.
 * TALLY_ORDER_VERBOSE=1 prints every episode's first check.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "perturb.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <tally/rstat.h>

#define U(x) ((tally_uword)(x))
#define NUPD 3

enum { ROOT, P, L0, L1, NG };
static const int parent_of[NG] = {-1, ROOT, P, P};
static const char *const gname[NG] = {"root", "P", "L0", "L1"};

static struct tally_tree *tree;
static struct tally_group *grp[NG];
static int stop;
static int upd_cpu = -1, chk_cpu = -1;
static int verbose;

/* done[u][x]: the sum of updater u's deltas to group x whose
 * tally_group_mod() returned. Written by u (release), read by all. */
static tally_uword done[NUPD][NG];

static unsigned long long nr_updates, nr_checks, nr_self_checks, nr_thr_checks;
static unsigned long long nr_violations, nr_episodes, nr_skipped;
/* The most an updater can have added but not yet published: one update
 * each, the big one for updater 0. */
static tally_sword big, slack;
static int reported;

/* Whether trees of this build use membarrier() (TALLY_RSTAT_MEMBARRIER
 * and a kernel that offers private expedited membarrier), for the report. */
static int uses_membarrier(void)
{
#if TALLY_RSTAT_MEMBARRIER && defined(__NR_membarrier)
	long q = syscall(__NR_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0);
	return q >= 0 && (q & (1 << 3)) && (q & (1 << 4));
#else
	return 0;
#endif
}

static int in_subtree(int x, int top)
{
	for (; x >= 0; x = parent_of[x])
		if (x == top)
			return 1;
	return 0;
}

/* The updates to y's subtree (hierarchical) and to y alone (local) that
 * returned before now: acquire loads of every updater's totals. */
static void returned_before(int y, tally_uword *hier, tally_uword *local)
{
	tally_uword h = 0, l = 0;
	for (int u = 0; u < NUPD; u++)
		for (int x = 0; x < NG; x++) {
			tally_uword v;
			if (!in_subtree(x, y))
				continue;
			v = __atomic_load_n(&done[u][x], __ATOMIC_ACQUIRE);
			h += v;
			if (x == y)
				l += v;
		}
	*hier = h;
	*local = l;
}

/* Whether v lies in [lo, hi] on the circle of 2^TALLY_WORD_BITS. */
static int within(tally_uword v, tally_uword lo, tally_uword hi)
{
	return (tally_uword)(v - lo) <= (tally_uword)(hi - lo);
}

/*
 * One check's verdict, after a flush of y: y's values must lie between
 * lo (updates that returned before the flush started: all of them, or,
 * for the thresholded promise, this thread's) and the totals of updates
 * that returned by the time of the reads, plus one update in progress
 * per updater (added, not yet published). Positive deltas: a flush shows
 * updates that raced with it, never less than lo, never more than that.
 * Modular comparisons, right across a wrap (32-bit words); a check whose
 * window spans half the word (an updater descheduled for long while the
 * others ran) cannot tell and is skipped. *bad carries the caller's
 * "previous check of this group failed" state, for counting episodes.
 * Returns 1 if it passed.
 */
static int verdict(const char *who, const char *how, int y, tally_uword lo_h, tally_uword lo_l,
		   int *bad)
{
	tally_uword h = U(tally_group_read(grp[y], 0));
	tally_uword l = U(tally_group_read_local(grp[y], 0));
	tally_uword hi_h, hi_l;
	int ok;
	returned_before(y, &hi_h, &hi_l);
	hi_h += U(slack);
	hi_l += U(slack);
	if ((tally_sword)(hi_h - lo_h) < 0 || (tally_sword)(hi_l - lo_l) < 0) {
		__atomic_fetch_add(&nr_skipped, 1, __ATOMIC_RELAXED);
		return 1;
	}
	ok = within(h, lo_h, hi_h) && (y == ROOT || within(l, lo_l, hi_l));
	if (ok) {
		*bad = 0;
		return 1;
	}
	__atomic_fetch_add(&nr_violations, 1, __ATOMIC_RELAXED);
	if (!*bad)
		__atomic_fetch_add(&nr_episodes, 1, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED) || (verbose && !*bad))
		fprintf(stderr,
			"stress_rstat_order: ORDERING VIOLATION (%s, %s flush of %s): the flush "
			"started after updates totalling %llu (hierarchical) / %llu (local) had "
			"returned, and reads %llu / %llu (%lld / %lld missing; at most %llu / %llu "
			"could show)\n",
			who, how, gname[y], (unsigned long long)lo_h, (unsigned long long)lo_l,
			(unsigned long long)h, (unsigned long long)l,
			(long long)(tally_sword)(lo_h - h),
			y != ROOT ? (long long)(tally_sword)(lo_l - l) : 0ll,
			(unsigned long long)hi_h, (unsigned long long)hi_l);
	*bad = 1;
	return 0;
}

static void *updater_main(void *arg)
{
	int u = (int)(intptr_t)arg, bad[NG] = {0};
	struct harness_rng rng = {0xabcdu + (uint64_t)u * 7919u};
	unsigned long long n = 0;
	if (upd_cpu >= 0)
		harness_pin(upd_cpu);
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int x = (int)harness_range(&rng, P, L1);
		tally_sword d = (tally_sword)harness_range(&rng, 1, 3);
		int r = tally_group_mod(grp[x], 0, d);
		CHECK(r == 0, "mod returned %d", r);
		__atomic_store_n(&done[u][x], done[u][x] + U(d), __ATOMIC_RELEASE);
		n++;
		switch (harness_range(&rng, 0, 63)) {
		case 0: { /* a forced flush of a group above or at x */
			int y = (int)harness_range(&rng, 0, 1) ? x : parent_of[x];
			tally_uword wh, wl;
			returned_before(y, &wh, &wl);
			tally_group_flush_force(grp[y]);
			verdict("an updater", "forced", y, wh, wl, &bad[y]);
			__atomic_fetch_add(&nr_self_checks, 1, __ATOMIC_RELAXED);
			break;
		}
		case 1: { /* updater 0: a leaf past its threshold, thresholded flush */
			int l = (int)harness_range(&rng, L0, L1);
			tally_uword mine;
			if (u)
				break;
			/* Only this thread's big updates reach the leaf's
			 * threshold count (the others' small ones stay in the
			 * per-CPU batch, far below it, and each round ends with a
			 * flush of the leaf that takes its count): the leaf is
			 * below its threshold and this update takes it past. */
			r = tally_group_mod(grp[l], 0, big);
			CHECK(r == 0, "mod returned %d", r);
			mine = done[u][l] + U(big);
			__atomic_store_n(&done[u][l], mine, __ATOMIC_RELEASE);
			tally_group_flush(grp[l]);
			/* The promise covers this thread's updates. */
			verdict("updater 0", "thresholded", l, mine, mine, &bad[l]);
			__atomic_fetch_add(&nr_thr_checks, 1, __ATOMIC_RELAXED);
			break;
		}
		default:
			break;
		}
	}
	__atomic_fetch_add(&nr_updates, n, __ATOMIC_RELAXED);
	perturb_unregister(); /* after perturb_stop(): no signal comes now */
	return NULL;
}

static void *checker_main(void *arg)
{
	struct harness_rng rng = {0x5eedu};
	int bad[NG] = {0};
	unsigned long long n = 0;
	(void)arg;
	if (chk_cpu >= 0)
		harness_pin(chk_cpu);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int y = (int)harness_range(&rng, ROOT, L1);
		tally_uword wh, wl;
		returned_before(y, &wh, &wl);
		tally_group_flush_force(grp[y]);
		verdict("checker", "forced", y, wh, wl, &bad[y]);
		n++;
	}
	__atomic_fetch_add(&nr_checks, n, __ATOMIC_RELAXED);
	return NULL;
}

int main(void)
{
	pthread_t up[NUPD], chk;
	struct tally_tree_opts o;
	struct perturb_opts po;
	int cpus[2], ncpus, x, u;
	double secs = harness_seconds(), t0;
	const char *v = getenv("TALLY_ORDER_VERBOSE");

	verbose = v && *v && *v != '0';
	memset(&o, 0, sizeof(o));
	o.nr_items = 1;
	o.batch = TALLY_RSTAT_BATCH_MAX; /* thresholds: only the big updates */
	tree = tally_tree_create_opts(&o);
	CHECK(tree != NULL, "tree");
	if (!tree)
		return harness_exit("stress_rstat_order");
	big = (tally_sword)tally_tree_flush_threshold(tree) + 1;
	slack = big + 3 * NUPD;
	grp[ROOT] = tally_tree_root(tree);
	for (x = P; x < NG; x++) {
		grp[x] = tally_group_create(grp[parent_of[x]]);
		CHECK(grp[x] != NULL, "group %s", gname[x]);
		if (!grp[x])
			return harness_exit("stress_rstat_order");
	}

	ncpus = harness_allowed_cpus(cpus, 2);
	if (ncpus >= 1)
		upd_cpu = cpus[ncpus - 1];
	if (ncpus >= 2)
		chk_cpu = cpus[0];
	perturb_init();
	for (u = 0; u < NUPD; u++)
		pthread_create(&up[u], NULL, updater_main, (void *)(intptr_t)u);
	pthread_create(&chk, NULL, checker_main, NULL);
	perturb_defaults(&po, upd_cpu);
	po.stopper_cpu = chk_cpu;
	perturb_start(&po);

	t0 = harness_now();
	usleep((useconds_t)(secs * 1e6));
	perturb_stop();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (u = 0; u < NUPD; u++)
		pthread_join(up[u], NULL);
	pthread_join(chk, NULL);
	t0 = harness_now() - t0;

	/* Exact totals, after every updater returned. */
	tally_group_flush_force(grp[ROOT]);
	for (x = 0; x < NG; x++) {
		tally_uword h = 0, l = 0;
		for (u = 0; u < NUPD; u++)
			for (int y = 0; y < NG; y++)
				if (in_subtree(y, x)) {
					h += done[u][y];
					if (y == x)
						l += done[u][y];
				}
		CHECK_EQ(U(tally_group_read(grp[x], 0)), h);
		CHECK_EQ(U(tally_group_read_local(grp[x], 0)), l);
	}

	perturb_report("stress_rstat_order");
	printf("stress_rstat_order: %.2f s, updaters on CPU %d, checker on CPU %d, "
	       "TALLY_PCPU_MODE %d, %s, %llu updates, %llu checker "
	       "flushes, %llu updater forced flushes, %llu thresholded\n",
	       t0, upd_cpu, chk_cpu, TALLY_PCPU_MODE, uses_membarrier() ? "membarrier" : "full fences", nr_updates,
	       nr_checks, nr_self_checks, nr_thr_checks);
	printf("stress_rstat_order: %llu ordering violations in %llu episodes (%llu checks "
	       "skipped: too far apart to tell across a wrap)\n",
	       nr_violations, nr_episodes, nr_skipped);
	CHECK(nr_violations == 0, "%llu flushes missed updates that returned before they started",
	      nr_violations);
	tally_tree_destroy(tree);
	return harness_exit("stress_rstat_order");
}
