/*
 * tests/test_counter.h - what the counter unit tests (test_counter.c,
 * test_counter_tree.c) share: pinning, repeated adds, the error bound,
 * and a read/sum check.
 */
#ifndef TALLY_TESTS_TEST_COUNTER_H
#define TALLY_TESTS_TEST_COUNTER_H

#include "harness.h"

#include <criterion/criterion.h>
#include <tally/counter.h>

#define U(x) ((tally_uword)(x))

static inline void pin(void)
{
	cr_assert_geq(harness_pin_here(), 0, "cannot pin the test thread");
}

static inline void add_n(struct tally_counter *c, tally_sword d, int n)
{
	for (int i = 0; i < n; i++)
		tally_counter_add(c, d);
}

/* Expected error bound: 2 * batch * (CPU slots + the shared slot). */
static inline tally_sword bound_for(tally_sword batch)
{
	return 2 * batch * ((tally_sword)tally__nr_cpu_slots() + 1);
}

static inline void expect_state(struct tally_counter *c, tally_sword read, tally_sword sum)
{
	cr_assert_eq(tally_counter_read(c), read);
	cr_assert_eq(tally_counter_sum(c), sum);
}

#endif
