/*
 * arena_tree_bound.c - tally_counter_init_tree()'s refusal of a batch whose
 * error bound would not fit, computed without signed overflow (issue 30:
 * at 24 slots, batch 2^58, the bound's running sum wrapped before the
 * check that relied on the wrap; UBSan reported it at counter/tree.h).
 * Every power-of-two batch from 1 to TALLY_SWORD_MAX / 2 is tried, and the
 * result compared with the bound computed in wider arithmetic: accepted
 * exactly when each level's unit fits (unit * 8 * nodes <= TALLY_SWORD_MAX),
 * (slots + 1) * batch fits and the bound E is at most TALLY_SWORD_MAX / 2,
 * with tally_counter_error_bound() == E. Built at the default slots and
 * with TALLY_CPU_SLOTS=24 (tests/CMakeLists.txt); under UBSan (asan, w32
 * flavours) an overflow aborts the run.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <tally/counter.h>

#if defined(__SIZEOF_INT128__)
__extension__ typedef __int128 wide;
#  define HAVE_WIDE (TALLY_WORD_BITS <= 64)
#else
typedef long long wide;
#  define HAVE_WIDE (TALLY_WORD_BITS <= 32)
#endif

/* The bound for n CPU slots and batch b, or -1 if init must refuse it. */
static wide expected_bound(unsigned n, wide b)
{
	const wide max = (wide)TALLY_SWORD_MAX;
	wide e, unit = b;
	unsigned l, levels = tally__tree_levels(n), nodes = n;
	if (b * ((wide)n + 1) > max)
		return -1;
	e = 1 + ((wide)n + 1) * (b - 1);
	for (l = 0; l < levels; l++) {
		nodes = tally__tree_up(nodes);
		if (unit * 8 * nodes > max)
			return -1;
		e += (wide)nodes * 7 * unit;
		unit *= 8;
	}
	return e > max / 2 ? -1 : e;
}

int main(void)
{
	unsigned n = tally_cpu_slots(), k, accepted = 0, refused = 0;
	for (k = 0; k <= TALLY_WORD_BITS - 2; k++) {
		struct tally_counter c;
		tally_sword b = (tally_sword)1 << k;
		int err = tally_counter_init_tree(&c, 0, b);
		CHECK(err == 0 || err == -EINVAL, "batch 2^%u: %d", k, err);
		if (HAVE_WIDE) {
			wide e = expected_bound(n, (wide)b);
			CHECK(err == (e < 0 ? -EINVAL : 0), "batch 2^%u at %u slots: %d, expected %s", k,
			      n, err, e < 0 ? "-EINVAL" : "0");
			if (!err && e >= 0)
				CHECK((wide)tally_counter_error_bound(&c) == e, "batch 2^%u: bound", k);
		}
		if (!err) {
			tally_counter_add(&c, 3);
			CHECK_EQ(tally_counter_sum(&c), 3);
			tally_counter_destroy(&c);
			accepted++;
		} else {
			refused++;
		}
	}
	/* The case: 24 slots, batch 2^58, refused. */
	if (n == 24 && TALLY_WORD_BITS == 64) {
		struct tally_counter c;
		CHECK_EQ(tally_counter_init_tree(&c, 0, (tally_sword)1 << (TALLY_WORD_BITS - 6)),
			 -EINVAL);
	}
	CHECK(accepted > 0 && refused > 0, "some batches fit, the largest do not");
	printf("arena_tree_bound: %u CPU slots, %u batches accepted, %u refused\n", n, accepted,
	       refused);
	return harness_exit("arena_tree_bound");
}
