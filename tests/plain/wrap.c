/*
 * Wraparound checks without Criterion (so they also run in the real -m32
 * build): tally_counter and tally_vec values driven across 2^(W-1) and 2^W
 * (2^31 / 2^32 with 32-bit words, 2^63 / 2^64 with 64-bit words).
 *
 * Monotonic deltas must be exact across both edges. The clamped reader must
 * show the hazard of "mm/vmstat, mm/memcontrol: add _monotonic vmstat
 * readers" (Usama Arif, 2026), exactly: past TALLY_SWORD_MAX it reads 0, so the
 * delta from the last pre-wrap sample is 2^W - last, about 2^(W-1).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <tally/counter.h>
#include <tally/vec.h>

#define U(x) ((tally_uword)(x))
/* 2^(W-1) as an unsigned word. */
#define HALF (U(TALLY_SWORD_MAX) + 1u)

/* A counter counting one event at a time across 2^(W-1). */
static void counter_across_signed_edge(void)
{
	struct tally_counter c;
	struct tally_sample mono = {0}, clamped = {0};
	int i;
	CHECK_EQ(tally_counter_init(&c, TALLY_SWORD_MAX - 1000, 64), 0);
	mono.last = U(tally_counter_sum(&c));
	clamped.last = tally_counter_sum_positive(&c);
	CHECK_EQ(clamped.last, U(TALLY_SWORD_MAX) - 1000u);

	for (i = 0; i < 2000; i++)
		tally_counter_add(&c, 1);

	/* Exact value: TALLY_SWORD_MAX + 1000 = 2^(W-1) + 999. */
	CHECK_EQ(U(tally_counter_sum(&c)), HALF + 999u);
	CHECK_EQ(tally_counter_sum(&c), TALLY_SWORD_MIN + 999);
	/* Folded so far: 31 batches of 64 = 1984 on the one pinned slot. */
	CHECK_EQ(U(tally_counter_read(&c)), HALF + 983u);
	CHECK_EQ(tally_sample_advance(&mono, U(tally_counter_sum(&c))), 2000);
	/* The hazard: the clamped value drops to 0 and the delta is
	 * 0 - (2^(W-1) - 1001) = 2^(W-1) + 1001 instead of 2000. */
	CHECK_EQ(tally_counter_sum_positive(&c), 0);
	CHECK_EQ(tally_counter_read_positive(&c), 0);
	CHECK_EQ(tally_sample_advance(&clamped, tally_counter_sum_positive(&c)), HALF + 1001u);
	CHECK(tally_after(mono.last, U(TALLY_SWORD_MAX)), "sample order across 2^(W-1)");
	/* The unsigned readers: no cast, no clamp, no hazard. */
	CHECK_EQ(tally_counter_sum_monotonic(&c), HALF + 999u);
	CHECK_EQ(tally_counter_read_monotonic(&c), HALF + 983u);
	CHECK(tally_after(tally_counter_read_monotonic(&c), U(TALLY_SWORD_MAX) - 1000u),
	      "read_monotonic order across 2^(W-1)");

	tally_counter_fold_all(&c);
	CHECK_EQ(tally_counter_read(&c), tally_counter_sum(&c));
	tally_counter_destroy(&c);
}

/* A counter across 2^W: from -500 (2^W - 500 unsigned) up by 1000. */
static void counter_across_unsigned_edge(void)
{
	struct tally_counter c;
	struct tally_sample mono = {0}, clamped = {0};
	int i;
	CHECK_EQ(tally_counter_init(&c, -500, 64), 0);
	mono.last = U(tally_counter_sum(&c));
	clamped.last = tally_counter_sum_positive(&c);
	CHECK_EQ(mono.last, TALLY_UWORD_MAX - 499u);
	CHECK_EQ(clamped.last, 0);
	for (i = 0; i < 1000; i++)
		tally_counter_add(&c, 1);
	CHECK_EQ(tally_counter_sum(&c), 500);
	CHECK_EQ(tally_sample_advance(&mono, U(tally_counter_sum(&c))), 1000);
	/* Clamping a negative start loses the 500 below zero. */
	CHECK_EQ(tally_sample_advance(&clamped, tally_counter_sum_positive(&c)), 500);
	/* 15 batches of 64 folded: -500 + 960. */
	CHECK_EQ(tally_counter_read(&c), 460);
	CHECK_EQ(tally_counter_sum_monotonic(&c), 500);
	CHECK_EQ(tally_counter_read_monotonic(&c), 460);
	CHECK_EQ(tally_delta(TALLY_UWORD_MAX - 499u, tally_counter_read_monotonic(&c)), 960);
	tally_counter_destroy(&c);
}

/* Big deltas: the whole range in three adds, each folding at once. */
static void counter_big_deltas(void)
{
	struct tally_counter c;
	struct tally_sample mono = {0};
	CHECK_EQ(tally_counter_init(&c, 0, 0), 0);
	tally_counter_add(&c, TALLY_SWORD_MAX);
	CHECK_EQ(tally_sample_advance(&mono, U(tally_counter_sum(&c))), U(TALLY_SWORD_MAX));
	CHECK_EQ(tally_counter_read(&c), TALLY_SWORD_MAX);
	tally_counter_add(&c, TALLY_SWORD_MAX); /* 2^W - 2 */
	CHECK_EQ(tally_counter_sum(&c), -2);
	CHECK_EQ(tally_counter_read(&c), -2);
	CHECK_EQ(tally_sample_advance(&mono, U(tally_counter_sum(&c))), U(TALLY_SWORD_MAX));
	tally_counter_add(&c, 2); /* 2^W: back to 0, not folded (2 < batch) */
	CHECK_EQ(tally_counter_sum(&c), 0);
	CHECK_EQ(tally_counter_read(&c), -2);
	CHECK_EQ(tally_sample_advance(&mono, U(tally_counter_sum(&c))), 2);
	tally_counter_add(&c, TALLY_SWORD_MIN); /* a big negative add folds too */
	CHECK_EQ(tally_counter_sum(&c), TALLY_SWORD_MIN);
	CHECK_EQ(tally_counter_read(&c), TALLY_SWORD_MIN);
	CHECK_EQ(tally_counter_compare(&c, TALLY_SWORD_MIN), 0);
	CHECK_EQ(tally_counter_compare(&c, TALLY_SWORD_MAX), -1);
	tally_counter_destroy(&c);
}

/* A vec event counter (inc with overstep, periodic fold) across both edges. */
static void vec_across_edges(void)
{
	struct tally_vec v;
	struct tally_sample mono = {0}, clamped = {0};
	int i;
	CHECK_EQ(tally_vec_init(&v, 3, 32), 0);
	CHECK_EQ(tally_vec_mod(&v, 1, TALLY_SWORD_MAX - 300), 0); /* folds at once */
	CHECK_EQ(tally_vec_read(&v, 1), U(TALLY_SWORD_MAX) - 300u);
	mono.last = tally_vec_read_monotonic(&v, 1);
	clamped.last = tally_vec_read(&v, 1);

	/* 600 events across 2^(W-1). */
	for (i = 0; i < 600; i++)
		CHECK_EQ(tally_vec_inc(&v, 1), 0);
	tally_vec_fold(&v);
	CHECK_EQ(tally_vec_read_exact(&v, 1), TALLY_SWORD_MIN + 299);
	CHECK_EQ(tally_vec_read_monotonic(&v, 1), HALF + 299u + TALLY_MONOTONIC_BIAS);
	CHECK_EQ(tally_sample_advance(&mono, tally_vec_read_monotonic(&v, 1)), 600);
	/* The hazard, exactly: 0 - (2^(W-1) - 301). */
	CHECK_EQ(tally_vec_read(&v, 1), 0);
	CHECK_EQ(tally_sample_advance(&clamped, tally_vec_read(&v, 1)), HALF + 301u);

	/* TALLY_SWORD_MAX more, across 2^W: 2^(W-1) + 299 + 2^(W-1) - 1 = 298. */
	CHECK_EQ(tally_vec_mod(&v, 1, TALLY_SWORD_MAX), 0);
	CHECK_EQ(tally_vec_read_exact(&v, 1), 298);
	CHECK_EQ(tally_sample_advance(&mono, tally_vec_read_monotonic(&v, 1)), U(TALLY_SWORD_MAX));
	/* The clamped reader now undercounts: it saw 0 -> 298. */
	CHECK_EQ(tally_sample_advance(&clamped, tally_vec_read(&v, 1)), 298);

	/* Small steps across 2^W without a fold in between: decrements. */
	for (i = 0; i < 1000; i++)
		CHECK_EQ(tally_vec_dec(&v, 2), 0);
	CHECK_EQ(tally_vec_read_exact(&v, 2), -1000);
	tally_vec_fold(&v);
	CHECK_EQ(tally_vec_read_monotonic(&v, 2), TALLY_UWORD_MAX - 999u + TALLY_MONOTONIC_BIAS);
	CHECK_EQ(tally_vec_read(&v, 2), 0);
	for (i = 0; i < 1500; i++)
		CHECK_EQ(tally_vec_inc(&v, 2), 0);
	tally_vec_fold(&v);
	CHECK_EQ(tally_vec_read_exact(&v, 2), 500);
	CHECK_EQ(tally_vec_read(&v, 2), 500);

	/* Item 0 untouched. */
	CHECK_EQ(tally_vec_read_exact(&v, 0), 0);
	CHECK_EQ(tally_vec_read_monotonic(&v, 0), TALLY_MONOTONIC_BIAS);
	tally_vec_destroy(&v);
}

/* tally_delta / tally_after at the two edges for this width. */
static void deltas(void)
{
	CHECK_EQ(tally_delta(U(TALLY_SWORD_MAX) - 7u, HALF + 7u), 15);
	CHECK_EQ(tally_delta(TALLY_UWORD_MAX - 7u, 8), 16);
	CHECK(tally_after(8, TALLY_UWORD_MAX - 7u), "after across 2^W");
	CHECK(tally_after(HALF + 7u, U(TALLY_SWORD_MAX) - 7u), "after across 2^(W-1)");
	CHECK(!tally_after(TALLY_UWORD_MAX - 7u, 8), "not after across 2^W");
#if TALLY_WORD_BITS == 32
	CHECK_EQ(tally_delta(U(2147483000u), U(2147484000u)), 1000); /* 2^31 */
	CHECK_EQ(tally_delta(U(4294967000u), U(704u)), 1000);         /* 2^32 */
#else
	CHECK_EQ(tally_delta(U(9223372036854775000ull), U(9223372036854776000ull)), 1000);
	CHECK_EQ(tally_delta(U(18446744073709551000ull), U(384u)), 1000);
#endif
}

int main(void)
{
	if (harness_pin_here() < 0) {
		fprintf(stderr, "wrap: cannot pin to a CPU\n");
		return 1;
	}
	printf("wrap: TALLY_WORD_BITS=%d\n", TALLY_WORD_BITS);
	deltas();
	counter_across_signed_edge();
	counter_across_unsigned_edge();
	counter_big_deltas();
	vec_across_edges();
	return harness_exit("wrap");
}
