/*
 * bench/codesize/main.c - ns per tally_counter_add through the 100 call
 * sites of sites.c, one thread, in its CPU time (other load on the machine
 * does not count), against the same loop calling 100 empty functions (the
 * call and loop overhead, subtracted). Checks the exact sum.
 *   codesize_<mode> [rounds]     rounds of 100 adds (default 2,000,000)
 * Prints "mode ns_per_add"; exit 1 on a wrong sum.
 */
#include "sites.h"

#include <stdio.h>
#include <time.h>

#ifndef CODESIZE_MODE
#  define CODESIZE_MODE "inline"
#endif

static void empty(struct tally_counter *c)
{
	__asm__ __volatile__("" : : "r"(c) : "memory");
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Best of 5 timings of rounds x 100 calls through table t. */
static double best_ns(site_fn *const *t, struct tally_counter *c, long rounds)
{
	double best = 1e30;
	for (int k = 0; k < 5; k++) {
		double t0 = now();
		for (long r = 0; r < rounds; r++)
			for (int i = 0; i < NR_SITES; i++)
				t[i](c);
		double ns = (now() - t0) * 1e9 / ((double)rounds * NR_SITES);
		if (ns < best)
			best = ns;
	}
	return best;
}

int main(int argc, char **argv)
{
	static site_fn *empties[NR_SITES];
	struct tally_counter c;
	long rounds = argc > 1 ? atol(argv[1]) : 2000000;
	long per_round = 0;
	double add, call;
	for (int i = 0; i < NR_SITES; i++) {
		empties[i] = empty;
		per_round += site_delta(i);
	}
	if (rounds < 1 || tally_counter_init(&c, 0, 0) != 0)
		return 2;
	call = best_ns(empties, &c, rounds);
	add = best_ns(sites, &c, rounds);
	if (tally_counter_sum(&c) != (tally_sword)(5 * rounds * per_round)) {
		fprintf(stderr, "codesize_%s: sum %lld, expected %lld\n", CODESIZE_MODE,
			(long long)tally_counter_sum(&c), (long long)(5 * rounds * per_round));
		return 1;
	}
	tally_counter_destroy(&c);
	printf("%s %.2f ns per add (%.2f with the call through the table, %.2f the call alone)\n",
	       CODESIZE_MODE, add - call, add, call);
	return 0;
}
