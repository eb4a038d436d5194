/*
 * Unit tests for tally/counter.h, continued from test_counter.c: the
 * counter tree (tally_counter_init_tree), set and sum_and_reset, with
 * exact values; each test pins its thread as test_counter.c says.
 */
#define _GNU_SOURCE
#include "test_counter.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the counter tree (tally_counter_init_tree) --------------------------- */

/* The tree at this machine's slots (up to eight: one node level, units of
 * 8 * batch), batch 4, pinned: every carry is predictable. */
Test(counter, tree_exact_values)
{
	struct tally_counter c;
	unsigned n = tally__nr_cpu_slots();
	pin();
	cr_assert_eq(tally_counter_init_tree(&c, 100, 3), 0);
	cr_assert(tally_counter_is_tree(&c));
	cr_assert_eq(tally_counter_batch(&c), 4);
	if (n <= 8) /* 1 + (n + 1) * (4 - 1) + one node * (32 - 4) */
		cr_assert_eq(tally_counter_error_bound(&c), 1 + ((tally_sword)n + 1) * 3 + 28);
	tally_counter_add(&c, 3); /* w 3: no carry */
	expect_state(&c, 100, 103);
	tally_counter_add(&c, 1); /* w 4: the node gets 4, below its unit 32 */
	expect_state(&c, 100, 104);
	tally_counter_add(&c, 27); /* w 31: the node 28 */
	expect_state(&c, 100, 131);
	tally_counter_add(&c, 1); /* w 32: the node 32, the top gets 32 */
	expect_state(&c, 132, 132);
	tally_counter_add(&c, -1); /* w 31: the node 28, the top gives 32 back */
	expect_state(&c, 100, 131);
	tally_counter_add(&c, -40); /* w -9: the node -12, the top -32 */
	expect_state(&c, 68, 91);
	/* read never above sum, within the bound */
	cr_assert_lt(tally_counter_sum(&c) - tally_counter_read(&c), tally_counter_error_bound(&c));
	cr_assert_eq(tally_counter_compare(&c, 91), 0);
	cr_assert_eq(tally_counter_compare(&c, 90), 1);
	cr_assert_eq(tally_counter_compare(&c, 92), -1);
	tally_counter_fold_all(&c); /* the correction: read == sum */
	expect_state(&c, 91, 91);
	tally_counter_add(&c, 1); /* w -8: the node -8, no top change */
	expect_state(&c, 91, 92);
	tally_counter_destroy(&c);
}

/* On this machine (fewer than TALLY_COUNTER_TREE_SLOTS slots) batch 0 is
 * the flat counter; a tree's batch 0 is TALLY_COUNTER_TREE_BATCH. */
Test(counter, tree_default_choice)
{
	struct tally_counter c;
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	cr_assert_eq(tally_counter_is_tree(&c), tally__nr_cpu_slots() >= TALLY_COUNTER_TREE_SLOTS);
	tally_counter_destroy(&c);
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	cr_assert(!tally_counter_is_tree(&c), "an explicit batch is the flat counter");
	tally_counter_destroy(&c);
	cr_assert_eq(tally_counter_init_tree(&c, 0, 0), 0);
	cr_assert_eq(tally_counter_batch(&c), TALLY_COUNTER_TREE_BATCH);
	tally_counter_destroy(&c);
	cr_assert(!tally_counter_is_tree(NULL));
}

Test(counter, tree_rejects_bad_batch)
{
	struct tally_counter c, copy;
	memset(&c, 0xa5, sizeof(c));
	memcpy(&copy, &c, sizeof(c));
	cr_assert_eq(tally_counter_init_tree(NULL, 0, 0), -EINVAL);
	cr_assert_eq(tally_counter_init_tree(&c, 0, -1), -EINVAL);
	/* the top's unit, batch * 8^levels, would not fit */
	cr_assert_eq(tally_counter_init_tree(&c, 0, TALLY_SWORD_MAX / 2), -EINVAL);
	cr_assert_eq(tally_counter_init_tree(&c, 0, TALLY_SWORD_MAX), -EINVAL);
	cr_assert_eq(memcmp(&c, &copy, sizeof(c)), 0, "a rejected init wrote to c");
	tally_counter_destroy(NULL);
}

/* Every add's carry reaches the top before it returns: unit adds on one
 * CPU move the top once per 8 * batch (one node level here). */
Test(counter, tree_top_writes)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init_tree(&c, 0, 32), 0);
	if (c.tally__tree.levels == 1) {
		add_n(&c, 1, 256 * 10 + 255);
		cr_assert_eq(tally_counter_read(&c), 256 * 10);
		cr_assert_eq(tally_counter_sum(&c), 256 * 10 + 255);
	}
	tally_counter_destroy(&c);
}

/* ---- set and sum_and_reset ------------------------------------------------ */

Test(counter, set_exact)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 5, 32), 0);
	add_n(&c, 7, 100); /* 705: several folds at batch 32 */
	cr_assert_eq(tally_counter_sum(&c), 705);
	cr_assert_eq(tally_counter_set(&c, -40), 0);
	cr_assert_eq(tally_counter_sum(&c), -40);
	/* read moves with the value: exact until the next fold drifts it */
	cr_assert_lt(llabs((long long)(tally_counter_read(&c) + 40)),
		     (long long)tally_counter_error_bound(&c));
	tally_counter_fold_all(&c);
	cr_assert_eq(tally_counter_read(&c), -40);
	add_n(&c, 1, 50);
	cr_assert_eq(tally_counter_sum(&c), 10);
	tally_counter_fold_all(&c);
	cr_assert_eq(tally_counter_read(&c), 10);
	cr_assert_eq(tally_counter_compare(&c, 10), 0);
	cr_assert_eq(tally_counter_compare(&c, 9), 1);
	/* set to the extremes, then cross the wrap */
	cr_assert_eq(tally_counter_set(&c, TALLY_SWORD_MAX), 0);
	cr_assert_eq(tally_counter_sum(&c), TALLY_SWORD_MAX);
	tally_counter_add(&c, 1);
	cr_assert_eq(tally_counter_sum(&c), TALLY_SWORD_MIN);
	cr_assert_eq(tally_counter_sum_monotonic(&c), U(TALLY_SWORD_MAX) + 1u);
	tally_counter_destroy(&c);
}

Test(counter, set_keeps_read_bound)
{
	/* After a set the read stays within the bound of the sum, however
	 * far the set moved the value and whatever was left unfolded. */
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 0, 1024), 0);
	add_n(&c, 3, 300); /* 900, unfolded: read 0 */
	cr_assert_eq(tally_counter_read(&c), 0);
	cr_assert_eq(tally_counter_set(&c, 1000000), 0);
	cr_assert_eq(tally_counter_read(&c), 1000000 - 900);
	cr_assert_eq(tally_counter_sum(&c), 1000000);
	/* w 900 -> 1200: the add to 1026 crosses 1024 and folds 1026 */
	add_n(&c, 3, 100);
	cr_assert_eq(tally_counter_sum(&c), 1000300);
	cr_assert_eq(tally_counter_read(&c), 1000000 - 900 + 1026);
	tally_counter_destroy(&c);
}

Test(counter, sum_and_reset_exact)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 1000, 32), 0);
	add_n(&c, 9, 40);
	cr_assert_eq(tally_counter_sum_and_reset(&c), 1360);
	cr_assert_eq(tally_counter_sum(&c), 0);
	cr_assert_eq(tally_counter_sum_monotonic(&c), 0);
	cr_assert_eq(tally_counter_sum_and_reset(&c), 0);
	add_n(&c, -3, 11);
	cr_assert_eq(tally_counter_sum(&c), -33);
	cr_assert_eq(tally_counter_sum_and_reset(&c), -33);
	cr_assert_eq(tally_counter_sum(&c), 0);
	tally_counter_fold_all(&c);
	cr_assert_eq(tally_counter_read(&c), 0);
	/* An event counter past TALLY_SWORD_MAX: the value returned, as
	 * unsigned, is the count of events. */
	cr_assert_eq(tally_counter_set(&c, TALLY_SWORD_MAX - 4), 0);
	add_n(&c, 1, 10);
	cr_assert_eq((tally_uword)tally_counter_sum_and_reset(&c), U(TALLY_SWORD_MAX) + 6u);
	cr_assert_eq(tally_counter_sum(&c), 0);
	tally_counter_destroy(&c);
}

Test(counter, set_reset_null)
{
	cr_assert_eq(tally_counter_set(NULL, 5), -EINVAL);
	cr_assert_eq(tally_counter_sum_and_reset(NULL), 0);
}

/* Resets from two threads beside two adders: the values returned plus the
 * final sum are every add, exactly. */
struct reset_run {
	struct tally_counter *c;
	long long got;
	int adder;
};

static void *reset_thread(void *arg)
{
	struct reset_run *r = (struct reset_run *)arg;
	for (int i = 0; i < 20000; i++) {
		if (r->adder)
			tally_counter_add(r->c, 3);
		else
			r->got += tally_counter_sum_and_reset(r->c);
	}
	return NULL;
}

Test(counter, sum_and_reset_threads)
{
	struct tally_counter c;
	struct reset_run r[4];
	pthread_t tid[4];
	long long total = 0;
	cr_assert_eq(tally_counter_init(&c, 7, 16), 0);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct reset_run){&c, 0, i < 2};
		cr_assert_eq(pthread_create(&tid[i], NULL, reset_thread, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		total += r[i].got;
	}
	cr_assert_eq(total + tally_counter_sum(&c), 7 + 2 * 20000 * 3);
	tally_counter_destroy(&c);
}

/* A counter tree: set and sum_and_reset move read with the value (the
 * top), and the residues below it stay. */
Test(counter, tree_set_and_reset)
{
	struct tally_counter c;
	cr_assert_eq(tally_counter_init_tree(&c, 3, 0), 0);
	add_n(&c, 5, 1000);
	cr_assert_eq(tally_counter_sum_and_reset(&c), 5003);
	cr_assert_eq(tally_counter_sum(&c), 0);
	cr_assert_lt(llabs((long long)tally_counter_read(&c)),
		     (long long)tally_counter_error_bound(&c));
	add_n(&c, 2, 100);
	cr_assert_eq(tally_counter_set(&c, 77), 0);
	cr_assert_eq(tally_counter_sum(&c), 77);
	add_n(&c, 1, 10);
	cr_assert_eq(tally_counter_sum(&c), 87);
	tally_counter_fold_all(&c);
	cr_assert_eq(tally_counter_read(&c), 87);
	tally_counter_destroy(&c);
}
