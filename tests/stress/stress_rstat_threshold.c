/*
 * Stress of rstat.h's thresholded-flush promise beside concurrent forced
 * root flushes:
 *
 *   "if an update by this thread finds g below its threshold and takes it
 *    past, tally_group_flush(g) afterwards returns with that update and
 *    every earlier one of this thread reflected, whether it flushed or
 *    another flush got there first."
 *
 * Tree: root - G (the updater's group) and NNOISE noise leaves; one item;
 * the default batch (64) and threshold (64 * online CPUs). Threads:
 *   - the updater, alone on one CPU: updates G by 1..threshold at a time
 *     (a crossing update of at most one threshold, on top of counts that
 *     a concurrent flush may have taken); whenever needs_flush(G) was
 *     false before the call and true after it (only this thread adds to
 *     G's count, flushes only lower it, so this very update found G below
 *     its threshold and took it past), it calls tally_group_flush(G) and
 *     checks that G reads exactly the sum of all its updates;
 *   - the flusher: forced root flushes (tally_tree_flush_periodic()) in a
 *     loop, on another CPU;
 *   - the noise thread, pinned beside the flusher: updates the noise
 *     leaves, so each flush has work, and takes the flusher's CPU from it
 *     mid-flush (a long flush: the window between its count take and its
 *     settle is what the updater must hit).
 * The race: the flusher takes G's count (say 100 of 128), drains and
 * walks a second time; the update lands after that drain (its bit and
 * word unseen) but adds its count (100 -> 200) before the settle, which
 * subtracts only what it took (100 <= 128): tally_group_flush(G) then
 * does nothing and G lacks the update.
 *
 * Runs TALLY_STRESS_SECONDS (default 2) or until 20,000 crossings; prints
 * the crossings checked and the violations; exits non-zero on any.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <string.h>
#include <tally/rstat.h>

#define NNOISE 256
#define U_READ(g) ((tally_uword)tally_group_read((g), 0))

static struct tally_tree *tree;
static struct tally_group *grp, *noise[NNOISE];
static int stop;
static int cpu_upd = -1, cpu_other = -1;

static void pin_or_not(int cpu)
{
	if (cpu >= 0)
		(void)harness_pin(cpu);
}

/* Flushes started so far, and the mean flush time (ns), for the updater
 * to place its updates across a flush. */
static unsigned long flush_starts;
static uint64_t flush_ns = 10000;

static void *flusher_main(void *p)
{
	unsigned long *n = (unsigned long *)p;
	pin_or_not(cpu_other);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		double t0 = harness_now();
		uint64_t m;
		__atomic_store_n(&flush_starts, flush_starts + 1ul, __ATOMIC_RELEASE);
		tally_tree_flush_periodic(tree);
		m = __atomic_load_n(&flush_ns, __ATOMIC_RELAXED);
		__atomic_store_n(&flush_ns, m - m / 8 + (uint64_t)((harness_now() - t0) * 1e9) / 8,
				 __ATOMIC_RELAXED);
		(*n)++;
	}
	return NULL;
}

/* Wait for the next flush to start, then for a random part of a flush's
 * mean time: the update lands anywhere in a flush (or just after one). */
static void meet_a_flush(struct harness_rng *r)
{
	unsigned long f0 = __atomic_load_n(&flush_starts, __ATOMIC_ACQUIRE);
	double t, d;
	t = harness_now() + 0.001;
	while (__atomic_load_n(&flush_starts, __ATOMIC_ACQUIRE) == f0 && harness_now() < t)
		;
	d = (double)__atomic_load_n(&flush_ns, __ATOMIC_RELAXED) * 1.2e-9 *
	    (double)harness_range(r, 0, 1000) / 1000.0;
	t = harness_now() + d;
	while (harness_now() < t)
		;
}

static void *noise_main(void *p)
{
	struct harness_rng r = {99};
	unsigned long *n = (unsigned long *)p;
	pin_or_not(cpu_other);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		int k;
		for (k = 0; k < 64; k++)
			CHECK_EQ(tally_group_mod(noise[harness_range(&r, 0, NNOISE - 1)], 0, 1), 0);
		*n += 64;
	}
	return NULL;
}

int main(void)
{
	int cpus[8], ncpu = harness_allowed_cpus(cpus, 8), k;
	unsigned long nflush = 0, nnoise = 0, nupd = 0, crossings = 0, violations = 0;
	struct harness_rng r = {7};
	pthread_t fl, no;
	tally_uword total = 0;
	uint64_t thr;
	double end;
	if (ncpu >= 2) {
		cpu_upd = cpus[0];
		cpu_other = cpus[1];
	}
	tree = tally_tree_create(1);
	CHECK(tree != NULL, "tally_tree_create");
	if (!tree)
		return harness_exit("stress_rstat_threshold");
	thr = tally_tree_flush_threshold(tree);
	grp = tally_group_create(tally_tree_root(tree));
	CHECK(grp != NULL, "group");
	for (k = 0; k < NNOISE; k++) {
		noise[k] = tally_group_create(tally_tree_root(tree));
		CHECK(noise[k] != NULL, "noise group");
	}
	pin_or_not(cpu_upd);
	CHECK_EQ(pthread_create(&fl, NULL, flusher_main, &nflush), 0);
	CHECK_EQ(pthread_create(&no, NULL, noise_main, &nnoise), 0);
	end = harness_now() + harness_seconds();
	while (crossings < 20000 && ((nupd & 255) || harness_now() < end)) {
		tally_sword d = (tally_sword)harness_range(&r, 1, (long long)thr);
		bool before, after;
		meet_a_flush(&r);
		before = tally_group_needs_flush(grp);
		CHECK_EQ(tally_group_mod(grp, 0, d), 0);
		total += (tally_uword)d;
		nupd++;
		after = tally_group_needs_flush(grp);
		if (before || !after)
			continue;
		crossings++;
		tally_group_flush(grp);
		if (U_READ(grp) != total) {
			if (!violations)
				fprintf(stderr,
					"crossing %lu: after tally_group_flush(G) G reads %llu, "
					"its updates sum to %llu (last update %lld, threshold %llu)\n",
					crossings, (unsigned long long)U_READ(grp),
					(unsigned long long)total, (long long)d,
					(unsigned long long)thr);
			violations++;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(fl, NULL);
	pthread_join(no, NULL);
	/* Quiescent: a forced flush shows everything. */
	tally_group_flush_force(tally_tree_root(tree));
	CHECK_EQ(U_READ(grp), total);
	CHECK_EQ((tally_uword)tally_group_read(tally_tree_root(tree), 0),
		 total + (tally_uword)nnoise);
	printf("stress_rstat_threshold: %s, %lu updates, %lu crossings checked, %lu violations; "
	       "%lu forced root flushes, %lu noise updates beside\n",
	       ncpu >= 2 ? "pinned on 2 CPUs" : "one CPU", nupd, crossings, violations, nflush,
	       nnoise);
	CHECK(violations == 0, "%lu of %lu crossings: tally_group_flush(G) missed updates",
	      violations, crossings);
	CHECK(crossings > 0, "no crossing checked");
	tally_tree_destroy(tree);
	return harness_exit("stress_rstat_threshold");
}
