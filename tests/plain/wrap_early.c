/*
 * TALLY_WRAP_EARLY (like the kernel's INITIAL_JIFFIES): raw monotonic values
 * start TALLY_WRAP_EARLY_OFFSET below the wrap point, so a consumer that
 * compares raw values instead of taking tally_delta() breaks within the
 * first few thousand events (vec's and counter's read_monotonic). Deltas,
 * exact and clamped reads are unaffected. A separate program: the bias is
 * a compile-time setting.
 */
#define _GNU_SOURCE
#define TALLY_WRAP_EARLY 1
#include "harness.h"

#include <tally/counter.h>
#include <tally/vec.h>

#define U(x) ((tally_uword)(x))

int main(void)
{
	struct tally_vec v;
	struct tally_counter c;
	struct tally_sample s = {0};
	tally_uword before;

	if (harness_pin_here() < 0) {
		fprintf(stderr, "wrap_early: cannot pin to a CPU\n");
		return 1;
	}
	CHECK_EQ(TALLY_WRAP_EARLY_OFFSET, 4096);
	CHECK_EQ(TALLY_MONOTONIC_BIAS, U(0) - 4096u);

	CHECK_EQ(tally_vec_init(&v, 2, 32), 0);
	/* A fresh item reads 2^W - 4096 raw; clamped and exact read 0. */
	CHECK_EQ(tally_vec_read_monotonic(&v, 0), TALLY_UWORD_MAX - 4095u);
	CHECK_EQ(tally_vec_read(&v, 0), 0);
	CHECK_EQ(tally_vec_read_exact(&v, 0), 0);
	before = s.last = tally_vec_read_monotonic(&v, 0);

	CHECK_EQ(tally_vec_mod(&v, 0, 5000), 0); /* > threshold: folds at once */
	CHECK_EQ(tally_vec_read_monotonic(&v, 0), 904);
	CHECK_EQ(tally_sample_advance(&s, tally_vec_read_monotonic(&v, 0)), 5000);
	CHECK_EQ(tally_vec_read(&v, 0), 5000);
	CHECK_EQ(tally_vec_read_exact(&v, 0), 5000);
	/* The raw values went "down": code that compares them breaks now,
	 * while tally_after() orders them right. */
	CHECK(tally_vec_read_monotonic(&v, 0) < before, "raw value should have wrapped");
	CHECK(tally_after(tally_vec_read_monotonic(&v, 0), before), "after across the wrap");

	/* Small steps with inc/dec and a fold keep the bias. */
	for (int i = 0; i < 100; i++)
		tally_vec_inc(&v, 1);
	tally_vec_fold(&v);
	CHECK_EQ(tally_vec_read_monotonic(&v, 1), TALLY_UWORD_MAX - 3995u);
	CHECK_EQ(tally_vec_read_exact(&v, 1), 100);
	CHECK_EQ(tally_vec_read(&v, 1), 100);
	tally_vec_destroy(&v);

	/* A counter's raw reader carries the bias; the exact readers do not
	 * (batch 32: the add folds). */
	CHECK_EQ(tally_counter_init(&c, 7, 32), 0);
	CHECK_EQ(tally_counter_read_monotonic(&c), TALLY_UWORD_MAX - 4088u);
	before = s.last = tally_counter_read_monotonic(&c);
	tally_counter_add(&c, 5000);
	CHECK_EQ(tally_counter_read(&c), 5007);
	CHECK_EQ(tally_counter_sum(&c), 5007);
	CHECK_EQ(tally_counter_sum_monotonic(&c), 5007);
	CHECK_EQ(tally_counter_read_monotonic(&c), 911);
	CHECK(tally_counter_read_monotonic(&c) < before, "raw counter value should have wrapped");
	CHECK_EQ(tally_sample_advance(&s, tally_counter_read_monotonic(&c)), 5000);
	tally_counter_destroy(&c);
	return harness_exit("wrap_early");
}
