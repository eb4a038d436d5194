/*
 * Unit tests for tally/counter.h: percpu_counter rules with exact values.
 *
 * Each test pins its thread to the CPU it runs on, so every add lands in
 * one per-CPU slot and the fold points are exact: an add folds when it
 * moves that slot's word across a multiple of batch (a carry) and the
 * slot's local count (w - base) has reached +-batch then. A slot's word
 * starts at 0. Expectations that depend on the machine are derived from
 * tally__nr_cpu_slots().
 */
#define _GNU_SOURCE
#include "test_counter.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

Test(counter, init_value)
{
	struct tally_counter c;
	cr_assert_eq(tally_counter_init(&c, 1000, 32), 0);
	cr_assert_eq(tally_counter_read(&c), 1000);
	cr_assert_eq(tally_counter_sum(&c), 1000);
	cr_assert_eq(tally_counter_read_positive(&c), 1000);
	cr_assert_eq(tally_counter_sum_positive(&c), 1000);
	tally_counter_destroy(&c);

	cr_assert_eq(tally_counter_init(&c, -77, 32), 0);
	cr_assert_eq(tally_counter_read(&c), -77);
	cr_assert_eq(tally_counter_sum(&c), -77);
	cr_assert_eq(tally_counter_read_positive(&c), 0);
	cr_assert_eq(tally_counter_sum_positive(&c), 0);
	tally_counter_destroy(&c);

	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MIN, 1), 0);
	cr_assert_eq(tally_counter_read(&c), TALLY_SWORD_MIN);
	cr_assert_eq(tally_counter_sum(&c), TALLY_SWORD_MIN);
	tally_counter_destroy(&c);
}

Test(counter, batch32_positive)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	add_n(&c, 1, 31);
	cr_assert_eq(tally_counter_read(&c), 0);
	cr_assert_eq(tally_counter_sum(&c), 31);
	tally_counter_add(&c, 1); /* local 32 >= batch: fold */
	cr_assert_eq(tally_counter_read(&c), 32);
	cr_assert_eq(tally_counter_sum(&c), 32);
	add_n(&c, 1, 31);
	cr_assert_eq(tally_counter_read(&c), 32);
	cr_assert_eq(tally_counter_sum(&c), 63);
	tally_counter_add(&c, 1);
	cr_assert_eq(tally_counter_read(&c), 64);
	/* Going back down: w 63 carries with local -1: no fold. */
	add_n(&c, -1, 31);
	cr_assert_eq(tally_counter_read(&c), 64);
	cr_assert_eq(tally_counter_sum(&c), 33);
	/* w 32: local -32, but no carry (33 -> 32 stays in [32, 64)): no check. */
	tally_counter_add(&c, -1);
	cr_assert_eq(tally_counter_read(&c), 64);
	cr_assert_eq(tally_counter_sum(&c), 32);
	/* w 31 carries with local -33: fold. */
	tally_counter_add(&c, -1);
	cr_assert_eq(tally_counter_read(&c), 31);
	cr_assert_eq(tally_counter_sum(&c), 31);
	tally_counter_destroy(&c);
}

Test(counter, batch32_negative)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	/* w -1 carries (0 -> -1 leaves [0, 32)) with local -1: no fold. */
	add_n(&c, -1, 31);
	cr_assert_eq(tally_counter_read(&c), 0);
	cr_assert_eq(tally_counter_sum(&c), -31);
	cr_assert_eq(tally_counter_sum_positive(&c), 0);
	tally_counter_add(&c, -1); /* w -32: still in [-32, 0): no carry */
	cr_assert_eq(tally_counter_read(&c), 0);
	cr_assert_eq(tally_counter_sum(&c), -32);
	tally_counter_add(&c, -1); /* w -33 carries with local -33: fold */
	cr_assert_eq(tally_counter_read(&c), -33);
	cr_assert_eq(tally_counter_sum(&c), -33);
	cr_assert_eq(tally_counter_read_positive(&c), 0);
	add_n(&c, -3, 10); /* w -63, local -30: no carry */
	cr_assert_eq(tally_counter_read(&c), -33);
	tally_counter_add(&c, -3); /* w -66 carries, local -33: fold */
	cr_assert_eq(tally_counter_read(&c), -66);
	cr_assert_eq(tally_counter_sum(&c), -66);
	tally_counter_destroy(&c);
}

Test(counter, single_big_add_folds_at_once)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	tally_counter_add(&c, 32);
	cr_assert_eq(tally_counter_read(&c), 32);
	tally_counter_add(&c, 1000);
	cr_assert_eq(tally_counter_read(&c), 1032);
	tally_counter_add(&c, -31); /* local -31: stays */
	cr_assert_eq(tally_counter_read(&c), 1032);
	cr_assert_eq(tally_counter_sum(&c), 1001);
	tally_counter_add(&c, 62); /* local 31: stays */
	cr_assert_eq(tally_counter_read(&c), 1032);
	cr_assert_eq(tally_counter_sum(&c), 1063);
	tally_counter_add(&c, -5000); /* local -4969: folds */
	cr_assert_eq(tally_counter_read(&c), -3937);
	cr_assert_eq(tally_counter_sum(&c), -3937);
	tally_counter_destroy(&c);
}

Test(counter, batch1_folds_every_add)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 5, 1), 0);
	for (int i = 1; i <= 100; i++) {
		tally_counter_add(&c, i % 3 == 0 ? -2 : 1);
		cr_assert_eq(tally_counter_read(&c), tally_counter_sum(&c));
	}
	/* 67 adds of +1, 33 of -2. */
	cr_assert_eq(tally_counter_sum(&c), 5 + 67 - 66);
	/* An add of 0 never folds nor changes anything. */
	tally_counter_add(&c, 0);
	cr_assert_eq(tally_counter_read(&c), 6);
	tally_counter_destroy(&c);
}

Test(counter, default_batch)
{
	struct tally_counter c;
	unsigned n = tally__nr_cpu_slots();
	tally_sword b = 2 * (tally_sword)n, p = 1;
	if (b < TALLY_COUNTER_MIN_BATCH)
		b = TALLY_COUNTER_MIN_BATCH;
	if (b < TALLY_COUNTER_BATCH_FLOOR)
		b = TALLY_COUNTER_BATCH_FLOOR;
	while (p < b)
		p *= 2;
	b = p;
	pin();
	cr_assert_geq(n, 1);
	cr_assert_eq(tally_counter_default_batch(), b);
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	cr_assert_eq(tally_counter_error_bound(&c), bound_for(b));
	add_n(&c, 1, (int)b - 1);
	cr_assert_eq(tally_counter_read(&c), 0);
	cr_assert_eq(tally_counter_sum(&c), b - 1);
	tally_counter_add(&c, 1);
	cr_assert_eq(tally_counter_read(&c), b);
	tally_counter_destroy(&c);
}

Test(counter, nr_cpu_slots_covers_the_machine)
{
	unsigned n = tally__nr_cpu_slots();
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	int cpus[CPU_SETSIZE];
	int k = harness_allowed_cpus(cpus, CPU_SETSIZE);
	cr_assert_geq(n, 1);
	if (conf > 0)
		cr_assert_geq((long)n, conf);
	for (int i = 0; i < k; i++)
		cr_assert_lt((unsigned)cpus[i], n);
	cr_assert_eq(tally__nr_cpu_slots(), n, "cached value must not change");
}

/* The slot count is the platform layer's count of possible CPUs (os.h),
 * or the fallback where the OS cannot tell. */
Test(counter, nr_cpu_slots_from_the_platform_layer)
{
	unsigned possible = tally__os_possible_cpus();
	cr_assert_eq(tally__nr_cpu_slots(), possible ? possible : TALLY_FALLBACK_NCPUS);
}

/* The parser behind it (os.h): the highest CPU in a sysfs list. */
Test(counter, cpu_list_parser)
{
	cr_assert_eq(tally__os_cpu_list_max("0\n"), 0);
	cr_assert_eq(tally__os_cpu_list_max("0-1\n"), 1);
	cr_assert_eq(tally__os_cpu_list_max("0-3,8-11\n"), 11);
	cr_assert_eq(tally__os_cpu_list_max("0,2,4"), 4);
	cr_assert_eq(tally__os_cpu_list_max("0-127"), 127);
	cr_assert_eq(tally__os_cpu_list_max(""), -1);
	cr_assert_eq(tally__os_cpu_list_max("\n"), -1);
	cr_assert_eq(tally__os_cpu_list_max("abc"), -1);
	cr_assert_eq(tally__os_cpu_list_max("0-3 junk"), -1);
	cr_assert_eq(tally__os_cpu_list_max("99999999999"), -1); /* absurdly large */
}

Test(counter, error_bound)
{
	struct tally_counter c;
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	cr_assert_eq(tally_counter_error_bound(&c), bound_for(32));
	cr_assert_eq(tally_counter_error_bound(&c),
		     2 * 32 * ((tally_sword)tally__nr_cpu_slots() + 1));
	tally_counter_destroy(&c);
	/* The largest batch accepted: the bound is exact, not saturated. */
	cr_assert_eq(tally_counter_init(&c, 0, tally_counter_max_batch()), 0);
	cr_assert_eq(tally_counter_error_bound(&c), bound_for(tally_counter_max_batch()));
	cr_assert_lt(tally_counter_error_bound(&c), TALLY_SWORD_MAX);
	tally_counter_destroy(&c);
	/* 2^(W-2), which init took before it checked the bound: refused. */
	cr_assert_eq(tally_counter_init(&c, 0, TALLY_SWORD_MAX / 2), -EINVAL);
}

Test(counter, read_vs_sum_positive)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, -10, 32), 0);
	tally_counter_add(&c, 20); /* local 20: read -10, sum 10 */
	cr_assert_eq(tally_counter_read(&c), -10);
	cr_assert_eq(tally_counter_sum(&c), 10);
	cr_assert_eq(tally_counter_read_positive(&c), 0);
	cr_assert_eq(tally_counter_sum_positive(&c), 10);
	tally_counter_add(&c, 20); /* local 40: folds */
	cr_assert_eq(tally_counter_read(&c), 30);
	cr_assert_eq(tally_counter_read_positive(&c), 30);
	cr_assert_eq(tally_counter_sum_positive(&c), 30);
	tally_counter_add(&c, -31); /* local -31 */
	cr_assert_eq(tally_counter_read_positive(&c), 30);
	cr_assert_eq(tally_counter_sum(&c), -1);
	cr_assert_eq(tally_counter_sum_positive(&c), 0);
	tally_counter_destroy(&c);
}

Test(counter, fold_all)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 7, 32), 0);
	add_n(&c, 1, 31);
	cr_assert_eq(tally_counter_read(&c), 7);
	tally_counter_fold_all(&c);
	cr_assert_eq(tally_counter_read(&c), 38);
	cr_assert_eq(tally_counter_sum(&c), 38);
	tally_counter_fold_all(&c); /* nothing left: no change */
	cr_assert_eq(tally_counter_read(&c), 38);
	tally_counter_add(&c, -5);
	cr_assert_eq(tally_counter_read(&c), 38);
	tally_counter_fold_all(&c);
	cr_assert_eq(tally_counter_read(&c), 33);
	/* After a fold_all the slot's local restarts from 0 at w 26: the carry
	 * at w 32 finds local 6 and does not fold; nothing checks again until
	 * the carry at w 64 (local 38). */
	add_n(&c, 1, 37);
	cr_assert_eq(tally_counter_read(&c), 33);
	cr_assert_eq(tally_counter_sum(&c), 70);
	tally_counter_add(&c, 1);
	cr_assert_eq(tally_counter_read(&c), 71);
	cr_assert_eq(tally_counter_sum(&c), 71);
	tally_counter_destroy(&c);
}

/* Adds on several CPUs: each slot keeps its own local count. */
Test(counter, several_cpus)
{
	struct tally_counter c;
	int cpus[CPU_SETSIZE];
	int k = harness_allowed_cpus(cpus, CPU_SETSIZE);
	tally_sword expect = 0;
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	for (int i = 0; i < k; i++) {
		cr_assert_eq(harness_pin(cpus[i]), 0);
		add_n(&c, 1, 31);
		expect += 31;
		cr_assert_eq(tally_counter_read(&c), 0);
		cr_assert_eq(tally_counter_sum(&c), expect);
	}
	tally_counter_fold_all(&c);
	cr_assert_eq(tally_counter_read(&c), expect);
	cr_assert_eq(tally_counter_sum(&c), expect);
	tally_counter_destroy(&c);
}

Test(counter, sum_across_wrap)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MAX - 5, 32), 0);
	tally_counter_add(&c, 10); /* local 10 */
	cr_assert_eq(tally_counter_read(&c), TALLY_SWORD_MAX - 5);
	cr_assert_eq(tally_counter_sum(&c), TALLY_SWORD_MIN + 4);
	cr_assert_eq(tally_counter_sum_positive(&c), 0);
	cr_assert_eq(U(tally_counter_sum(&c)), U(TALLY_SWORD_MAX) + 5u);
	tally_counter_add(&c, 30); /* local 40: folds across the wrap */
	cr_assert_eq(tally_counter_read(&c), TALLY_SWORD_MIN + 34);
	cr_assert_eq(tally_counter_sum(&c), TALLY_SWORD_MIN + 34);
	cr_assert_eq(tally_counter_read_positive(&c), 0);
	tally_counter_destroy(&c);

	/* Across 2^W: from -3 up by 10 is 7. */
	cr_assert_eq(tally_counter_init(&c, -3, 32), 0);
	tally_counter_add(&c, 10);
	cr_assert_eq(tally_counter_sum(&c), 7);
	cr_assert_eq(U(tally_counter_sum(&c)) - U(tally_counter_read(&c)), 10);
	tally_counter_fold_all(&c);
	cr_assert_eq(tally_counter_read(&c), 7);
	tally_counter_destroy(&c);
}

/* ---- the unsigned readers for event counters ------------------------------ */

/* 2^(W-1) as an unsigned word. */
#define HALF (U(TALLY_SWORD_MAX) + 1u)

Test(counter, monotonic_readers_exact_values)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 1000, 32), 0);
	cr_assert_eq(tally_counter_sum_monotonic(&c), 1000);
	cr_assert_eq(tally_counter_read_monotonic(&c), 1000u + TALLY_MONOTONIC_BIAS);
	add_n(&c, 3, 10); /* w 30, local 30: no fold */
	cr_assert_eq(tally_counter_sum_monotonic(&c), 1030);
	cr_assert_eq(tally_counter_read_monotonic(&c), 1000u + TALLY_MONOTONIC_BIAS);
	tally_counter_add(&c, 3); /* w 33 carries, local 33: fold */
	cr_assert_eq(tally_counter_sum_monotonic(&c), 1033);
	cr_assert_eq(tally_counter_read_monotonic(&c), 1033u + TALLY_MONOTONIC_BIAS);
	tally_counter_destroy(&c);

	/* A negative value is a large unsigned one, never clamped. */
	cr_assert_eq(tally_counter_init(&c, -5, 32), 0);
	cr_assert_eq(tally_counter_sum_monotonic(&c), TALLY_UWORD_MAX - 4u);
	cr_assert_eq(tally_counter_read_monotonic(&c), TALLY_UWORD_MAX - 4u + TALLY_MONOTONIC_BIAS);
	cr_assert_eq(tally_counter_sum_positive(&c), 0);
	tally_counter_destroy(&c);
}

/* Counting events one at a time across 2^(W-1): the signed readers turn
 * negative (the clamped ones read 0); the unsigned ones keep counting. */
Test(counter, monotonic_readers_across_the_signed_edge)
{
	struct tally_counter c;
	struct tally_sample exact = {0}, approx = {0};
	pin();
	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MAX - 99, 32), 0);
	exact.last = tally_counter_sum_monotonic(&c);
	approx.last = tally_counter_read_monotonic(&c);
	cr_assert_eq(exact.last, U(TALLY_SWORD_MAX) - 99u);
	add_n(&c, 1, 200); /* w 200: folds at 32, 64, ..., 192 */
	cr_assert_eq(tally_counter_sum(&c), TALLY_SWORD_MIN + 100);
	cr_assert_eq(tally_counter_sum_positive(&c), 0);
	cr_assert_eq(tally_counter_sum_monotonic(&c), HALF + 100u);
	cr_assert_eq(tally_counter_read_monotonic(&c), HALF + 92u + TALLY_MONOTONIC_BIAS);
	cr_assert_eq(tally_sample_advance(&exact, tally_counter_sum_monotonic(&c)), 200);
	cr_assert_eq(tally_sample_advance(&approx, tally_counter_read_monotonic(&c)), 192);
	tally_counter_fold_all(&c);
	cr_assert_eq(tally_sample_advance(&approx, tally_counter_read_monotonic(&c)), 8);
	cr_assert_eq(tally_counter_read_monotonic(&c) - TALLY_MONOTONIC_BIAS,
		     tally_counter_sum_monotonic(&c));
	tally_counter_destroy(&c);
}

/* Across 2^W: from 2^W - 500 up by 1000 events, then a big step. */
Test(counter, monotonic_readers_across_the_unsigned_edge)
{
	struct tally_counter c;
	struct tally_sample exact = {0}, approx = {0};
	tally_uword prev;
	pin();
	cr_assert_eq(tally_counter_init(&c, -500, 64), 0);
	exact.last = tally_counter_sum_monotonic(&c);
	approx.last = prev = tally_counter_read_monotonic(&c);
	cr_assert_eq(exact.last, TALLY_UWORD_MAX - 499u);
	for (int i = 0; i < 1000; i++) {
		tally_uword now;
		tally_counter_add(&c, 1);
		cr_assert_eq(tally_counter_sum_monotonic(&c), TALLY_UWORD_MAX - 499u + U(i + 1));
		/* Never goes back, lags by less than the bound. */
		now = tally_counter_read_monotonic(&c);
		cr_assert(!tally_after(prev, now), "read_monotonic went back at %d", i);
		cr_assert_lt(tally_delta(now - TALLY_MONOTONIC_BIAS, tally_counter_sum_monotonic(&c)),
			     U(tally_counter_error_bound(&c)));
		prev = now;
	}
	cr_assert_eq(tally_counter_sum_monotonic(&c), 500);
	cr_assert_eq(tally_sample_advance(&exact, tally_counter_sum_monotonic(&c)), 1000);
	/* 15 batches of 64 folded. */
	cr_assert_eq(tally_counter_read_monotonic(&c), 460u + TALLY_MONOTONIC_BIAS);
	cr_assert_eq(tally_sample_advance(&approx, tally_counter_read_monotonic(&c)), 960);

	/* One add of TALLY_SWORD_MAX folds at once: 500 + 2^(W-1) - 1. */
	tally_counter_add(&c, TALLY_SWORD_MAX);
	cr_assert_eq(tally_counter_sum_monotonic(&c), HALF + 499u);
	cr_assert_eq(tally_sample_advance(&exact, tally_counter_sum_monotonic(&c)),
		     U(TALLY_SWORD_MAX));
	cr_assert_eq(tally_sample_advance(&approx, tally_counter_read_monotonic(&c)),
		     U(TALLY_SWORD_MAX) + 40u);
	/* And across 2^W again: 2^(W-1) + 499 + 2^(W-1) - 1 = 498. */
	tally_counter_add(&c, TALLY_SWORD_MAX);
	cr_assert_eq(tally_counter_sum_monotonic(&c), 498);
	cr_assert_eq(tally_counter_read_monotonic(&c), 498u + TALLY_MONOTONIC_BIAS);
	cr_assert_eq(tally_sample_advance(&exact, tally_counter_sum_monotonic(&c)),
		     U(TALLY_SWORD_MAX));
	tally_counter_destroy(&c);
}

Test(counter, monotonic_readers_null)
{
	cr_assert_eq(tally_counter_sum_monotonic(NULL), 0);
	cr_assert_eq(tally_counter_read_monotonic(NULL), 0);
}

/*
 * A fold check that runs late - its add landed, then the thread was
 * preempted while other threads on the same CPU added and folded - must not
 * move the slot's base backwards: read() must not drop (for a counter that
 * only grows, read would go back and a sampler would see a huge delta).
 * The interleaving is replayed step by step with the private calls.
 */
Test(counter, late_fold_check_does_not_go_back)
{
	struct tally_counter c;
	unsigned s;
	pin();
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	/* Thread A: its add of 1 lands; A stops before its fold check. */
	tally__pcpu_add(&c.tally__pcpu, 0, 1, &s);
	/* Thread B, same CPU: 1000 adds, folding at w = 32, 64, ..., 992. */
	add_n(&c, 1, 1000);
	cr_assert_eq(tally_counter_read(&c), 992);
	cr_assert_eq(tally_counter_sum(&c), 1001);
	/* A resumes: its fold check sees the slot as it is now. */
	tally__counter_fold_slot(&c, s, 32);
	cr_assert_eq(tally_counter_read(&c), 992);
	cr_assert_eq(tally_counter_sum(&c), 1001);
	tally_counter_add(&c, 1); /* local 10: no fold */
	cr_assert_eq(tally_counter_read(&c), 992);
	tally_counter_fold_all(&c);
	cr_assert_eq(tally_counter_read(&c), 1002);
	tally_counter_destroy(&c);
}

/* compare(): from the exact sum when |read - rhs| <= bound. */
Test(counter, compare_decided_by_sum)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	tally_counter_add(&c, 31); /* read 0, sum 31 */
	cr_assert_eq(tally_counter_read(&c), 0);
	/* read says "below" for these rhs; the exact sum decides. */
	cr_assert_eq(tally_counter_compare(&c, 20), 1);
	cr_assert_eq(tally_counter_compare(&c, 30), 1);
	cr_assert_eq(tally_counter_compare(&c, 31), 0);
	cr_assert_eq(tally_counter_compare(&c, 32), -1);
	cr_assert_eq(tally_counter_compare(&c, 0), 1);
	cr_assert_eq(tally_counter_compare(&c, -5), 1);
	tally_counter_destroy(&c);

	cr_assert_eq(tally_counter_init(&c, 100, 32), 0);
	tally_counter_add(&c, -31); /* read 100, sum 69 */
	cr_assert_eq(tally_counter_compare(&c, 69), 0);
	cr_assert_eq(tally_counter_compare(&c, 70), -1);
	cr_assert_eq(tally_counter_compare(&c, 68), 1);
	cr_assert_eq(tally_counter_compare(&c, 100), -1);
	tally_counter_destroy(&c);
}

/*
 * compare(): from read when |read - rhs| > bound. Quiescent and honest,
 * read is always within the bound of the sum, so both paths agree; to see
 * which value compare consults, the private initial term (which only sum
 * uses) is shifted so that the exact sum disagrees with read.
 */
Test(counter, compare_decided_by_read)
{
	struct tally_counter c;
	tally_sword e;
	pin();
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	e = tally_counter_error_bound(&c);
	cr_assert_eq(e, bound_for(32));
	c.tally__initial = U(10 * e); /* sum = 10e, read = 0 */
	cr_assert_eq(tally_counter_read(&c), 0);
	cr_assert_eq(tally_counter_sum(&c), 10 * e);
	/* |0 - (e + 1)| > e: decided by read (0 < rhs), not by the sum. */
	cr_assert_eq(tally_counter_compare(&c, e + 1), -1);
	cr_assert_eq(tally_counter_compare(&c, 5 * e), -1);
	/* |0 - e| == e: not beyond the bound, so the sum decides. */
	cr_assert_eq(tally_counter_compare(&c, e), 1);
	cr_assert_eq(tally_counter_compare(&c, 1), 1);
	/* rhs == the exact sum, but far from read: read decides. */
	cr_assert_eq(tally_counter_compare(&c, 10 * e), -1);

	c.tally__initial = U(-10 * e); /* sum = -10e, read = 0 */
	cr_assert_eq(tally_counter_compare(&c, -e - 1), 1);
	cr_assert_eq(tally_counter_compare(&c, -e), -1);
	cr_assert_eq(tally_counter_compare(&c, -10 * e), 1);
	c.tally__initial = 0;
	tally_counter_destroy(&c);
}

Test(counter, compare_extremes)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MAX - 10, 32), 0);
	/* count - rhs overflows a signed word: still 1. */
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MIN), 1);
	cr_assert_eq(tally_counter_compare(&c, -1), 1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MAX), -1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MAX - 10), 0);
	tally_counter_destroy(&c);

	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MIN + 10, 32), 0);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MAX), -1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MIN), 1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MIN + 10), 0);
	tally_counter_destroy(&c);
}

/*
 * compare() near the signed wrap point: the value is within the error bound
 * of TALLY_SWORD_MAX / TALLY_SWORD_MIN, so read() and the exact sum lie on
 * opposite sides of the wrap and read() is "far" from rhs only modulo 2^W.
 * Honest states (quiescent, read within the bound of the sum), pinned slot.
 */
Test(counter, compare_near_the_signed_wrap)
{
	struct tally_counter c;
	pin();
	/* read SWORD_MIN + 12, local -18: value SWORD_MAX - 5 (the fuzzer's
	 * 2^63 - 6 with read -2^63 + 12). */
	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MIN + 12, 32), 0);
	tally_counter_add(&c, -18); /* carries (0 -> -18), local -18: no fold */
	cr_assert_eq(tally_counter_read(&c), TALLY_SWORD_MIN + 12);
	cr_assert_eq(tally_counter_sum(&c), TALLY_SWORD_MAX - 5);
	cr_assert_eq(tally_counter_compare(&c, 0), 1);
	cr_assert_eq(tally_counter_compare(&c, -1), 1);
	cr_assert_eq(tally_counter_compare(&c, 1000), 1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MIN), 1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MIN + 12), 1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MAX - 6), 1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MAX - 5), 0);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MAX), -1);
	tally_counter_destroy(&c);

	/* The mirror: read SWORD_MAX - 10, local +20: value SWORD_MIN + 9. */
	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MAX - 10, 32), 0);
	tally_counter_add(&c, 20); /* no carry: local 20 */
	cr_assert_eq(tally_counter_read(&c), TALLY_SWORD_MAX - 10);
	cr_assert_eq(tally_counter_sum(&c), TALLY_SWORD_MIN + 9);
	cr_assert_eq(tally_counter_compare(&c, 0), -1);
	cr_assert_eq(tally_counter_compare(&c, 1), -1);
	cr_assert_eq(tally_counter_compare(&c, -1000), -1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MAX), -1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MAX - 10), -1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MIN + 10), -1);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MIN + 9), 0);
	cr_assert_eq(tally_counter_compare(&c, TALLY_SWORD_MIN), 1);
	tally_counter_destroy(&c);
}

/*
 * compare() against the exact sign for every honest state near both wrap
 * points: read r within 3 * batch of the edge (either side), every local
 * count the pinned slot can hold without folding (-batch, batch), and rhs
 * at the edges, near r, near the value and at 0.
 */
Test(counter, compare_exact_sign_around_the_wraps)
{
	const tally_sword batch = 32;
	unsigned checked = 0;
	pin();
	for (unsigned k = 0; k < 2; k++) {
		/* From SWORD_MAX - 96 up (across 2^(W-1)), and from -96 up
		 * (across 2^W: the signed value passes 0, no wrap there). */
		tally_uword first = k == 0 ? U(TALLY_SWORD_MAX) - 96u : U(0) - 96u;
		for (tally_uword r = first; r != first + 192u; r += 8u) {
			for (tally_sword local = -(batch - 1); local < batch; local += 5) {
				struct tally_counter c;
				tally_uword v = r + U(local);
				tally_sword sv = tally__to_signed(v), sr = tally__to_signed(r);
				/* value - 1 and + 1, saturated at the edges. */
				tally_sword below = sv == TALLY_SWORD_MIN ? sv : sv - 1;
				tally_sword above = sv == TALLY_SWORD_MAX ? sv : sv + 1;
				tally_sword rhs[] = {0, 1, -1, TALLY_SWORD_MAX, TALLY_SWORD_MIN,
						     sr, sv, below, above};
				unsigned nr = sizeof(rhs) / sizeof(rhs[0]);
				cr_assert_eq(tally_counter_init(&c, sr, batch), 0);
				/* Move w by local without a fold: a local count under
				 * batch never folds, whatever the carries. */
				tally_counter_add(&c, local);
				cr_assert_eq(tally_counter_read(&c), sr);
				cr_assert_eq(U(tally_counter_sum(&c)), v);
				for (unsigned j = 0; j < nr; j++) {
					int want = sv > rhs[j] ? 1 : sv < rhs[j] ? -1 : 0;
					cr_assert_eq(tally_counter_compare(&c, rhs[j]), want,
						     "value %lld read %lld rhs %lld",
						     (long long)sv, (long long)sr, (long long)rhs[j]);
					checked++;
				}
				tally_counter_destroy(&c);
			}
		}
	}
	cr_assert_gt(checked, 1000);
}

/*
 * Where compare() may still decide from read() near the wrap: read at least
 * the bound below TALLY_SWORD_MAX (or above TALLY_SWORD_MIN) and more than
 * the bound from rhs. As in compare_decided_by_read, the initial term that
 * only sum() uses is shifted so the two paths give different answers.
 */
Test(counter, compare_read_path_stops_at_the_bound_from_the_wrap)
{
	struct tally_counter c;
	tally_sword e;
	pin();
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	e = tally_counter_error_bound(&c);
	tally_counter_destroy(&c);

	/* read = SWORD_MAX - e: every value within the bound is <= SWORD_MAX,
	 * so read decides (1); the shifted sum would say -1. */
	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MAX - e, 32), 0);
	c.tally__initial = U(-5);
	cr_assert_eq(tally_counter_sum(&c), -5);
	cr_assert_eq(tally_counter_compare(&c, 0), 1);
	tally_counter_destroy(&c);
	/* One closer: a value within the bound could have wrapped, so the sum
	 * decides. */
	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MAX - e + 1, 32), 0);
	c.tally__initial = U(-5);
	cr_assert_eq(tally_counter_compare(&c, 0), -1);
	tally_counter_destroy(&c);

	/* The mirror at SWORD_MIN. */
	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MIN + e, 32), 0);
	c.tally__initial = U(5);
	cr_assert_eq(tally_counter_compare(&c, 0), -1);
	tally_counter_destroy(&c);
	cr_assert_eq(tally_counter_init(&c, TALLY_SWORD_MIN + e - 1, 32), 0);
	c.tally__initial = U(5);
	cr_assert_eq(tally_counter_compare(&c, 0), 1);
	tally_counter_destroy(&c);
}

/* The batch is rounded up to a power of two. */
Test(counter, batch_rounded_to_power_of_two)
{
	static const tally_sword in[] = {1, 2, 3, 32, 33, 1000, 1024, 1025};
	static const tally_sword out[] = {1, 2, 4, 32, 64, 1024, 1024, 2048};
	struct tally_counter c;
	for (unsigned i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		cr_assert_eq(tally_counter_init(&c, 0, in[i]), 0);
		cr_assert_eq(tally_counter_batch(&c), out[i], "batch %lld", (long long)in[i]);
		cr_assert_eq(tally_counter_error_bound(&c), bound_for(out[i]));
		tally_counter_destroy(&c);
	}
	cr_assert_eq(tally_counter_batch(NULL), 0);
}

/* A count that wanders around a multiple of batch carries on every step
 * but folds only once its local count reaches batch (the kernel's
 * hysteresis), and stays within the bound. */
Test(counter, wandering_across_a_carry_does_not_fold)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	add_n(&c, 1, 32); /* w 32: fold, base 32 */
	cr_assert_eq(tally_counter_read(&c), 32);
	for (int i = 0; i < 1000; i++) {
		tally_counter_add(&c, -1); /* w 31: carries, local -1 */
		tally_counter_add(&c, 1);  /* w 32: carries, local 0 */
	}
	cr_assert_eq(tally_counter_read(&c), 32);
	cr_assert_eq(tally_counter_sum(&c), 32);
	/* The largest local a slot can hold without a carry check: from base
	 * 32, w down to 1 (carry at 31, local -1), then to -32 (carry at -1,
	 * local -33: fold). Up from base 26 (after a fold_all), w to 63: local
	 * 37, under 2 * batch. */
	add_n(&c, -1, 31);
	cr_assert_eq(tally_counter_read(&c), 32);
	tally_counter_add(&c, -1); /* w 0: same block as 1 */
	cr_assert_eq(tally_counter_read(&c), 32);
	tally_counter_add(&c, -1); /* w -1: carries, local -33 */
	cr_assert_eq(tally_counter_read(&c), -1);
	tally_counter_destroy(&c);

	cr_assert_eq(tally_counter_init(&c, 0, 32), 0);
	add_n(&c, 1, 26);
	tally_counter_fold_all(&c); /* base 26 */
	add_n(&c, 1, 37);           /* w 63 */
	cr_assert_eq(tally_counter_read(&c), 26);
	cr_assert_eq(tally_counter_sum(&c), 63);
	cr_assert_lt(tally_counter_sum(&c) - tally_counter_read(&c), 2 * 32);
	tally_counter_destroy(&c);
}

/* ---- bad input ------------------------------------------------------------ */


Test(counter, init_rejects_bad_batch)
{
	struct tally_counter c, copy;
	memset(&c, 0xa5, sizeof(c));
	memcpy(&copy, &c, sizeof(c));
	cr_assert_eq(tally_counter_init(NULL, 0, 0), -EINVAL);
	cr_assert_eq(tally_counter_init(NULL, 0, -1), -EINVAL);
	cr_assert_eq(tally_counter_init(&c, 0, -1), -EINVAL);
	cr_assert_eq(tally_counter_init(&c, 0, TALLY_SWORD_MIN), -EINVAL);
	cr_assert_eq(tally_counter_init(&c, 0, TALLY_SWORD_MAX / 2 + 1), -EINVAL);
	cr_assert_eq(tally_counter_init(&c, 0, tally_counter_max_batch() + 1), -EINVAL);
	cr_assert_eq(tally_counter_init(&c, 0, TALLY_SWORD_MAX), -EINVAL);
	cr_assert_eq(memcmp(&c, &copy, sizeof(c)), 0, "a rejected init wrote to c");
}

Test(counter, bad_init_leaves_live_counter_alone)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 40, 32), 0);
	tally_counter_add(&c, 5);
	expect_state(&c, 40, 45);
	cr_assert_eq(tally_counter_init(&c, 0, -3), -EINVAL);
	expect_state(&c, 40, 45);
	cr_assert_eq(tally_counter_init(&c, 0, TALLY_SWORD_MAX / 2 + 1), -EINVAL);
	expect_state(&c, 40, 45);
	tally_counter_destroy(&c); /* ASan: the original area is still owned */
}

Test(counter, null_object)
{
	struct tally_counter c;
	pin();
	cr_assert_eq(tally_counter_init(&c, 3, 32), 0);
	tally_counter_add(&c, 4);
	tally_counter_add(NULL, 5);
	tally_counter_fold_all(NULL);
	tally_counter_destroy(NULL);
	cr_assert_eq(tally_counter_read(NULL), 0);
	cr_assert_eq(tally_counter_read_positive(NULL), 0);
	cr_assert_eq(tally_counter_sum(NULL), 0);
	cr_assert_eq(tally_counter_sum_positive(NULL), 0);
	cr_assert_eq(tally_counter_compare(NULL, 5), 0);
	cr_assert_eq(tally_counter_compare(NULL, -5), 0);
	cr_assert_eq(tally_counter_error_bound(NULL), 0);
	expect_state(&c, 3, 7);
	tally_counter_destroy(&c);
}

Test(counter, batch_limits_accepted)
{
	struct tally_counter c;
	tally_sword max = tally_counter_max_batch();
	tally_sword slots = (tally_sword)tally__nr_cpu_slots() + 1;
	pin();
	/* The largest batch: a power of two whose bound fits, twice it not. */
	cr_assert_eq(max & (max - 1), 0);
	cr_assert_leq(max, TALLY_SWORD_MAX / (2 * slots));
	cr_assert_gt(2 * max, TALLY_SWORD_MAX / (2 * slots));
	cr_assert_eq(tally_counter_init(&c, 0, max + 1), -EINVAL);
	cr_assert_eq(tally_counter_init(&c, 0, max / 2 + 1), 0);
	cr_assert_eq(tally_counter_batch(&c), max);
	cr_assert_eq(tally_counter_error_bound(&c), 2 * max * slots);
	tally_counter_add(&c, max - 1);
	expect_state(&c, 0, max - 1);
	tally_counter_add(&c, 1); /* w = batch: carries, local = batch */
	expect_state(&c, max, max);
	tally_counter_destroy(&c);
}
