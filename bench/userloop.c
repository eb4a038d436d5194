/*
 * bench/userloop.c - what a user's own loop pays per call, without the
 * benchmark harness: tally_counter_add (default batch, and the largest
 * batch, tally_counter_max_batch(): never a fold) and tally_group_mod on
 * groups at depth 1, 4 and 8 (8 items, nothing flushing), one thread, each
 * case timed by thread CPU time over N calls, the cases interleaved, best
 * of R rounds. bench/RESULTS.md quotes it ("What a user's loop pays").
 *
 *   cc -std=c11 -O2 -Iinclude bench/userloop.c -o userloop -pthread \
 *      $(pkg-config --cflags --libs liburcu-memb)
 *   ./userloop [N [R]]                        (default 50000000 5)
 * Counter only (no liburcu: a -m32 build, TALLY_WORD_BITS=32 or not):
 *   cc -m32 -std=c11 -O2 -Iinclude -DUSERLOOP_COUNTER_ONLY bench/userloop.c -pthread
 */
#define _GNU_SOURCE
#include <tally/counter.h>
#ifndef USERLOOP_COUNTER_ONLY
#include <tally/rstat.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITEMS 8u

static double thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* noinline: the loop is a user's, not folded into the timing code */
__attribute__((noinline)) static double time_counter(struct tally_counter *c, long n)
{
	double t0 = thread_ns();
	for (long i = 0; i < n; i++)
		tally_counter_add(c, 1);
	return (thread_ns() - t0) / (double)n;
}

#ifndef USERLOOP_COUNTER_ONLY
__attribute__((noinline)) static double time_group(struct tally_group *g, long n)
{
	double t0 = thread_ns();
	for (long i = 0; i < n; i++)
		tally_group_mod(g, (unsigned)i % ITEMS, 1);
	return (thread_ns() - t0) / (double)n;
}
#endif

enum { C_DEFAULT, C_LARGEST, C_GROUP, NR_CASES = C_GROUP + 3 };
static const char *const case_name[NR_CASES] = {
	"tally_counter_add, default batch",
	"tally_counter_add, largest batch (no fold)",
	"tally_group_mod, depth 1",
	"tally_group_mod, depth 4",
	"tally_group_mod, depth 8",
};
#ifndef USERLOOP_COUNTER_ONLY
static const int case_depth[NR_CASES] = {0, 0, 1, 4, 8};
#endif

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 50000000L;
	int rounds = argc > 2 ? atoi(argv[2]) : 5, ncases = NR_CASES;
	double best[NR_CASES];
	struct tally_counter c[2];
	if (n <= 0 || rounds <= 0) {
		fprintf(stderr, "usage: userloop [N [ROUNDS]]\n");
		return 2;
	}
	if (tally_counter_init(&c[0], 0, 0) || tally_counter_init(&c[1], 0, tally_counter_max_batch())) {
		fprintf(stderr, "userloop: tally_counter_init failed\n");
		return 1;
	}
#ifndef USERLOOP_COUNTER_ONLY
	struct tally_tree *t = tally_tree_create(ITEMS);
	struct tally_group *g[NR_CASES] = {0}, *x = t ? tally_tree_root(t) : NULL;
	/* one chain from the root: the depth 1, 4 and 8 groups on it */
	for (int d = 1; d <= 8 && x; d++) {
		x = tally_group_create(x);
		for (int k = C_GROUP; k < NR_CASES; k++)
			if (case_depth[k] == d)
				g[k] = x;
	}
	if (!x)
		return 1;
#else
	ncases = C_GROUP;
#endif
	for (int k = 0; k < NR_CASES; k++)
		best[k] = 1e30;
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < ncases; k++) {
			double ns = k == C_DEFAULT ? time_counter(&c[0], n) :
				    k == C_LARGEST ? time_counter(&c[1], n) :
#ifndef USERLOOP_COUNTER_ONLY
						     time_group(g[k], n);
#else
						     0;
#endif
			if (ns < best[k])
				best[k] = ns;
		}
	}
	/* Exact to the unit, or the figures mean nothing. */
	for (int k = 0; k < 2; k++)
		if (tally_counter_sum_monotonic(&c[k]) != (tally_uword)((tally_uword)n * (tally_uword)rounds)) {
			fprintf(stderr, "userloop: counter %d lost updates\n", k);
			return 1;
		}
	printf("%d-bit words, %d-bit pointers, %ld calls per round, best of %d (thread CPU time)\n",
	       TALLY_WORD_BITS, (int)(8 * sizeof(void *)), n, rounds);
	printf("  %-44s %6s %10s  %s\n", "", "ns", "Mops/s", "against the add: largest / default batch");
	for (int k = 0; k < ncases; k++)
		printf("  %-44s %6.2f %10.1f  %.2fx / %.2fx\n", case_name[k], best[k], 1e3 / best[k],
		       best[k] / best[C_LARGEST], best[k] / best[C_DEFAULT]);
#ifndef USERLOOP_COUNTER_ONLY
	tally_group_flush_force(tally_tree_root(t));
	tally_sword sum = 0;
	for (unsigned i = 0; i < ITEMS; i++)
		sum += tally_group_read(tally_tree_root(t), i);
	if ((tally_uword)sum != (tally_uword)n * (tally_uword)rounds * (tally_uword)(NR_CASES - C_GROUP)) {
		fprintf(stderr, "userloop: the tree lost updates\n");
		return 1;
	}
	tally_tree_destroy(t);
#endif
	tally_counter_destroy(&c[0]);
	tally_counter_destroy(&c[1]);
	return 0;
}
