/*
 * tally_counter's error bound at the largest batches: deterministic
 * checks (no timing), built at every word width the suite has (W=64,
 * TALLY_WORD_BITS=32, -m32) and on both update paths.
 *
 * A batch whose bound 2 * batch * slots does not fit a tally_sword would
 * make tally_counter_error_bound() saturate, and a saturated value is no
 * bound: with batch 2^(W-2), adds of -(batch - 1) then -1 on two CPUs leave
 * read = 0 and sum = TALLY_SWORD_MIN (no add folds: each slot's local
 * count is -batch, reached without a carry), and compare() trusted the
 * read. So:
 *   - init refuses every batch above tally_counter_max_batch(), and that
 *     one gives an exact, unsaturated bound: 2 * batch * slots;
 *   - at the largest batch, every CPU the thread may run on (pinned, one
 *     after the other) takes its slot's local count to -batch or to
 *     batch - 1 without a fold: read stays 0, the bound still covers
 *     |read - sum|, and compare() gives the exact sign around the sum.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <tally/counter.h>

/* The largest batch the counter took before it checked the bound:
 * 2^(W-1) - 1 / 2, rounded up to 2^(W-2). */
#define OLD_MAX (TALLY_SWORD_MAX / 2)

static void check_compare_around(struct tally_counter *c)
{
	tally_sword s = tally_counter_sum(c);
	CHECK_EQ(tally_counter_compare(c, s), 0);
	if (s > TALLY_SWORD_MIN)
		CHECK_EQ(tally_counter_compare(c, s - 1), 1);
	if (s < TALLY_SWORD_MAX)
		CHECK_EQ(tally_counter_compare(c, s + 1), -1);
	CHECK(tally_counter_compare(c, TALLY_SWORD_MIN) == (s > TALLY_SWORD_MIN ? 1 : 0),
	      "compare(SWORD_MIN) = %d with sum %lld", tally_counter_compare(c, TALLY_SWORD_MIN),
	      (long long)s);
	CHECK(tally_counter_compare(c, TALLY_SWORD_MAX) == (s < TALLY_SWORD_MAX ? -1 : 0),
	      "compare(SWORD_MAX) = %d with sum %lld", tally_counter_compare(c, TALLY_SWORD_MAX),
	      (long long)s);
}

/* |read - sum| < bound, the bound exact (not saturated). */
static void check_bound(struct tally_counter *c, tally_sword batch)
{
	tally_sword e = tally_counter_error_bound(c);
	tally_uword d = (tally_uword)tally_counter_read(c) - (tally_uword)tally_counter_sum(c);
	tally_uword mag = tally__to_signed(d) < 0 ? (tally_uword)0 - d : d;
	CHECK(e / 2 / batch == (tally_sword)tally__nr_cpu_slots() + 1 && e % (2 * batch) == 0,
	      "bound %lld is not 2 * %lld * %u", (long long)e, (long long)batch,
	      tally__nr_cpu_slots() + 1);
	CHECK(mag < (tally_uword)e, "|read - sum| = %llu, bound %lld", (unsigned long long)mag,
	      (long long)e);
}

/* Every allowed CPU's slot at local count -batch (d1 < 0: adds of
 * -(batch - 1) and d2 = -1) or batch - 1 (batch - 2 and d2 = 1), each add
 * landing on it. */
static void walk_cpus(tally_sword batch, tally_sword d1, tally_sword d2)
{
	struct tally_counter c;
	int cpus[CPU_SETSIZE];
	int k = harness_allowed_cpus(cpus, CPU_SETSIZE), pinned = 0;
	if (tally_counter_init(&c, 0, batch)) {
		CHECK(0, "batch %lld is refused", (long long)batch);
		return;
	}
	batch = tally_counter_batch(&c);
	d1 = d1 < 0 ? -(batch - 1) : batch - 2;
	for (int i = 0; i < k; i++) {
		if (harness_pin(cpus[i]))
			continue;
		pinned++;
		tally_counter_add(&c, d1);
		tally_counter_add(&c, d2);
		CHECK_EQ(tally_counter_read(&c), 0); /* |local| <= batch: no fold */
		check_bound(&c, batch);
		check_compare_around(&c);
	}
	CHECK(pinned >= 1, "could not pin to any CPU");
	tally_counter_destroy(&c);
}

int main(void)
{
	tally_sword max = tally_counter_max_batch();
	struct tally_counter c;
	/* The old limit, and anything above the largest batch: refused (c
	 * untouched); the largest and anything rounding up to it: taken. */
	CHECK(max <= OLD_MAX / 2, "largest batch %lld", (long long)max);
	CHECK_EQ(tally_counter_init(&c, 0, OLD_MAX), -EINVAL);
	CHECK_EQ(tally_counter_init(&c, 0, max + 1), -EINVAL);
	CHECK_EQ(tally_counter_init(&c, 0, 2 * max), -EINVAL);
	if (tally_counter_init(&c, 0, max) == 0) {
		CHECK_EQ(tally_counter_batch(&c), max);
		check_bound(&c, max);
		tally_counter_destroy(&c);
	} else {
		CHECK(0, "the largest batch %lld is refused", (long long)max);
	}
	if (tally_counter_init(&c, 0, max / 2 + 1) == 0) {
		CHECK_EQ(tally_counter_batch(&c), max);
		tally_counter_destroy(&c);
	} else {
		CHECK(0, "batch %lld is refused", (long long)(max / 2 + 1));
	}

	/* The walk that broke the old bound, at the largest batch:
	 * -(batch - 1), then -1 per CPU; and the positive side, batch - 2
	 * then 1. */
	walk_cpus(max, -1, -1);
	walk_cpus(max, 1, 1);
	return harness_exit("stress_counter_bound");
}
