/*
 * bench/codesize/main.c - ns per update through the 100 call sites of
 * sites.c (CODESIZE_PRIM: tally_counter_add, tally_vec_mod, tally_vec_inc
 * or tally_group_mod), one thread, in its CPU time (other load on the
 * machine does not count), against the same loop calling 100 empty
 * functions (the call and loop overhead, subtracted). Checks the exact
 * sum.
 *   codesize_<mode> [rounds]     rounds of 100 adds (default 2,000,000)
 * Prints "mode ns_per_add"; exit 1 on a wrong sum.
 */
#include "sites.h"

#include <stdio.h>
#include <time.h>

#ifndef CODESIZE_MODE
#  define CODESIZE_MODE "inline"
#endif

static void empty(obj_t *o)
{
	__asm__ __volatile__("" : : "r"(o) : "memory");
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Best of 5 timings of rounds x 100 calls through table t. */
static double best_ns(site_fn *const *t, obj_t *o, long rounds)
{
	double best = 1e30;
	for (int k = 0; k < 5; k++) {
		double t0 = now();
		for (long r = 0; r < rounds; r++)
			for (int i = 0; i < NR_SITES; i++)
				t[i](o);
		double ns = (now() - t0) * 1e9 / ((double)rounds * NR_SITES);
		if (ns < best)
			best = ns;
	}
	return best;
}

/* The object's exact total (every item's, for a vector or a group). */
static long long total(obj_t *o)
{
#if CODESIZE_PRIM == 0
	return (long long)tally_counter_sum(o);
#elif CODESIZE_PRIM == 3
	long long t = 0;
	tally_group_flush_force(o);
	for (unsigned i = 0; i < CODESIZE_ITEMS; i++)
		t += (long long)tally_group_read(o, i);
	return t;
#else
	long long t = 0;
	for (unsigned i = 0; i < CODESIZE_ITEMS; i++)
		t += (long long)tally_vec_read_exact(o, i);
	return t;
#endif
}

int main(int argc, char **argv)
{
	static site_fn *empties[NR_SITES];
	long rounds = argc > 1 ? atol(argv[1]) : 2000000;
	long per_round = 0;
	double add, call;
	obj_t *o;
#if CODESIZE_PRIM == 0
	static struct tally_counter c;
	o = tally_counter_init(&c, 0, 0) ? NULL : &c;
#elif CODESIZE_PRIM == 3
	struct tally_tree *t;
	urcu_memb_register_thread();
	t = tally_tree_create(CODESIZE_ITEMS);
	o = t ? tally_tree_root(t) : NULL;
#else
	static struct tally_vec v;
	o = tally_vec_init(&v, CODESIZE_ITEMS, 0) ? NULL : &v;
#endif
	for (int i = 0; i < NR_SITES; i++) {
		empties[i] = empty;
		per_round += site_delta(i);
	}
	if (rounds < 1 || !o)
		return 2;
	call = best_ns(empties, o, rounds);
	add = best_ns(sites, o, rounds);
	if (total(o) != 5 * rounds * per_round) {
		fprintf(stderr, "codesize_%s: sum %lld, expected %lld\n", CODESIZE_MODE, total(o),
			(long long)(5 * rounds * per_round));
		return 1;
	}
#if CODESIZE_PRIM == 0
	tally_counter_destroy(&c);
#elif CODESIZE_PRIM == 3
	tally_tree_destroy(t);
	urcu_memb_unregister_thread();
#else
	tally_vec_destroy(&v);
#endif
	printf("%s %.2f ns per update (%.2f with the call through the table, %.2f the call "
	       "alone)\n",
	       CODESIZE_MODE, add - call, add, call);
	return 0;
}
