/*
 * Unit tests for tally/monotonic.h: modular deltas, clamping, time_after()
 * order, samplers, the clamped matrix sum, and clamped vs monotonic reads of
 * a vec item driven past TALLY_SWORD_MAX (the bug that "mm/vmstat,
 * mm/memcontrol: add _monotonic vmstat readers", Usama Arif, 2026, fixes).
 *
 * Every expectation is written for the word width in force
 * (TALLY_WORD_BITS: 64 by default on a 64-bit host, 32 in the w32 build).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <tally/monotonic.h>
#include <tally/vec.h>

#define U(x) ((tally_uword)(x))
#define S(x) ((tally_sword)(x))
/* 2^(W-1) as an unsigned word: the first value past TALLY_SWORD_MAX. */
#define HALF (U(TALLY_SWORD_MAX) + 1u)

Test(monotonic, word_width)
{
	cr_assert_eq(sizeof(tally_uword) * 8, (size_t)TALLY_WORD_BITS);
	cr_assert_eq(sizeof(tally_sword) * 8, (size_t)TALLY_WORD_BITS);
	cr_assert_eq(U(TALLY_UWORD_MAX), U(0) - 1u);
	cr_assert_eq(U(TALLY_SWORD_MAX), TALLY_UWORD_MAX >> 1);
	cr_assert_eq(S(TALLY_SWORD_MIN), -TALLY_SWORD_MAX - 1);
#if TALLY_WORD_BITS == 32
	cr_assert_eq(TALLY_UWORD_MAX, U(0xffffffffu));
#else
	cr_assert_eq(TALLY_UWORD_MAX, U(0xffffffffffffffffull));
#endif
}

Test(monotonic, to_signed)
{
	cr_assert_eq(tally__to_signed(0), 0);
	cr_assert_eq(tally__to_signed(5), 5);
	cr_assert_eq(tally__to_signed(U(TALLY_SWORD_MAX)), TALLY_SWORD_MAX);
	cr_assert_eq(tally__to_signed(HALF), TALLY_SWORD_MIN);
	cr_assert_eq(tally__to_signed(HALF + 9u), TALLY_SWORD_MIN + 9);
	cr_assert_eq(tally__to_signed(TALLY_UWORD_MAX), -1);
	cr_assert_eq(tally__to_signed(TALLY_UWORD_MAX - 41u), -42);
}

Test(monotonic, delta_plain)
{
	cr_assert_eq(tally_delta(0, 0), 0);
	cr_assert_eq(tally_delta(10, 25), 15);
	cr_assert_eq(tally_delta(1000, 1000), 0);
	/* Going backwards is a (huge) modular delta, not a negative one. */
	cr_assert_eq(tally_delta(5, 3), TALLY_UWORD_MAX - 1u);
}

Test(monotonic, delta_across_signed_wrap)
{
	/* 2^(W-1): 2^31 or 2^63. */
	cr_assert_eq(tally_delta(U(TALLY_SWORD_MAX) - 2u, HALF + 2u), 5);
	cr_assert_eq(tally_delta(U(TALLY_SWORD_MAX), HALF), 1);
	cr_assert_eq(tally_delta(HALF - 1000u, HALF + 1000u), 2000);
}

Test(monotonic, delta_across_unsigned_wrap)
{
	/* 2^W: 2^32 or 2^64. */
	cr_assert_eq(tally_delta(TALLY_UWORD_MAX - 5u, 10), 16);
	cr_assert_eq(tally_delta(TALLY_UWORD_MAX, 0), 1);
#if TALLY_WORD_BITS == 32
	cr_assert_eq(tally_delta(U(0xfffffff0u), U(0x10u)), 0x20);
	cr_assert_eq(tally_delta(U(4000000000u), U(705032704u)), 1000000000u);
#else
	cr_assert_eq(tally_delta(U(0xfffffffffffffff0ull), U(0x10u)), 0x20);
	cr_assert_eq(tally_delta(U(18446744000000000000ull), U(926290448384ull)),
		     U(1000000000000ull));
#endif
	/* The largest delta that is still exact: 2^W - 1 events. */
	cr_assert_eq(tally_delta(1, 0), TALLY_UWORD_MAX);
}

Test(monotonic, clamp)
{
	cr_assert_eq(tally_clamp(0), 0);
	cr_assert_eq(tally_clamp(7), 7);
	cr_assert_eq(tally_clamp(-1), 0);
	cr_assert_eq(tally_clamp(TALLY_SWORD_MIN), 0);
	cr_assert_eq(tally_clamp(TALLY_SWORD_MAX), U(TALLY_SWORD_MAX));
	cr_assert_eq(tally_clamp(TALLY_SWORD_MIN + 1), 0);
}

Test(monotonic, after)
{
	cr_assert(tally_after(1, 0));
	cr_assert(!tally_after(0, 1));
	cr_assert(!tally_after(5, 5));
	/* Across the unsigned wrap: 0 comes after UWORD_MAX. */
	cr_assert(tally_after(0, TALLY_UWORD_MAX));
	cr_assert(!tally_after(TALLY_UWORD_MAX, 0));
	cr_assert(tally_after(3, TALLY_UWORD_MAX - 3u));
	/* Across the signed wrap. */
	cr_assert(tally_after(HALF, U(TALLY_SWORD_MAX)));
	cr_assert(!tally_after(U(TALLY_SWORD_MAX), HALF));
	/* Valid up to 2^(W-1) - 1 apart. */
	cr_assert(tally_after(U(TALLY_SWORD_MAX), 0));
	cr_assert(!tally_after(0, U(TALLY_SWORD_MAX)));
	cr_assert(tally_after(U(TALLY_SWORD_MAX) + 10u, 10));
	/* Exactly 2^(W-1) apart, time_after() says "after" both ways. */
	cr_assert(tally_after(HALF, 0));
	cr_assert(tally_after(0, HALF));
}

Test(monotonic, sample_advance)
{
	struct tally_sample s = {0};
	cr_assert_eq(tally_sample_advance(&s, 10), 10);
	cr_assert_eq(s.last, 10);
	cr_assert_eq(tally_sample_advance(&s, 10), 0);
	cr_assert_eq(tally_sample_advance(&s, 25), 15);
	cr_assert_eq(s.last, 25);

	s.last = TALLY_UWORD_MAX - 3u;
	cr_assert_eq(tally_sample_advance(&s, 4), 8);
	cr_assert_eq(s.last, 4);

	s.last = U(TALLY_SWORD_MAX) - 99u;
	cr_assert_eq(tally_sample_advance(&s, HALF + 100u), 200);
	cr_assert_eq(s.last, HALF + 100u);
}

/* NULL anywhere: a documented no-op, never a crash. A NULL sampler has no
 * last value: it reports no events (0) and remembers nothing. */
Test(monotonic, null_sampler_is_a_no_op)
{
	struct tally_sample s = {7};
	cr_assert_eq(tally_sample_advance(NULL, 0), 0);
	cr_assert_eq(tally_sample_advance(NULL, 12345), 0);
	cr_assert_eq(tally_sample_advance(NULL, TALLY_UWORD_MAX), 0);
	/* A real sampler is unaffected by the NULL calls around it. */
	cr_assert_eq(tally_sample_advance(&s, 10), 3);
	cr_assert_eq(tally_sum_clamped(NULL, 3), 0);
}

Test(monotonic, sum_clamped)
{
	const tally_sword v[] = {3, -2, 5, TALLY_SWORD_MIN, 0, 1};
	const tally_sword wrap[] = {TALLY_SWORD_MAX, TALLY_SWORD_MAX, 2, 7};
	const tally_sword neg[] = {-1, -100, TALLY_SWORD_MIN};

	cr_assert_eq(tally_sum_clamped(NULL, 0), 0);
	cr_assert_eq(tally_sum_clamped(NULL, 5), 0);
	cr_assert_eq(tally_sum_clamped(v, 0), 0);
	cr_assert_eq(tally_sum_clamped(v, 1), 3);
	cr_assert_eq(tally_sum_clamped(v, 2), 3);
	cr_assert_eq(tally_sum_clamped(v, 3), 8);
	cr_assert_eq(tally_sum_clamped(v, 6), 9);
	cr_assert_eq(tally_sum_clamped(neg, 3), 0);
	/* Modular: 2 * (2^(W-1) - 1) + 2 = 2^W = 0, then + 7. */
	cr_assert_eq(tally_sum_clamped(wrap, 3), 0);
	cr_assert_eq(tally_sum_clamped(wrap, 4), 7);
	cr_assert_eq(tally_sum_clamped(wrap, 1), U(TALLY_SWORD_MAX));
}

Test(monotonic, bias_default)
{
#if TALLY_WRAP_EARLY
	cr_assert_eq(TALLY_MONOTONIC_BIAS, U(0) - U(TALLY_WRAP_EARLY_OFFSET));
#else
	cr_assert_eq(TALLY_MONOTONIC_BIAS, 0);
#endif
}

/*
 * The hazard of "add _monotonic vmstat readers": an event counter sampled
 * with the clamped reader breaks as the signed value passes
 * TALLY_SWORD_MAX; the monotonic reader stays exact.
 */
Test(monotonic, vec_item_past_sword_max)
{
	struct tally_vec v;
	struct tally_sample clamped = {0}, mono = {0};
	cr_assert_eq(harness_pin_here() >= 0, 1);
	cr_assert_eq(tally_vec_init(&v, 2, 1), 0);

	/* Threshold 1: every mod of more than 1 folds at once. */
	cr_assert_eq(tally_vec_mod(&v, 1, TALLY_SWORD_MAX - 10), 0);
	cr_assert_eq(tally_vec_read(&v, 1), U(TALLY_SWORD_MAX) - 10u);
	cr_assert_eq(tally_vec_read_monotonic(&v, 1),
		     U(TALLY_SWORD_MAX) - 10u + TALLY_MONOTONIC_BIAS);
	cr_assert_eq(tally_vec_read_exact(&v, 1), TALLY_SWORD_MAX - 10);
	tally_sample_advance(&clamped, tally_vec_read(&v, 1));
	tally_sample_advance(&mono, tally_vec_read_monotonic(&v, 1));

	/* 10 more: exactly TALLY_SWORD_MAX, both readers agree. */
	cr_assert_eq(tally_vec_mod(&v, 1, 10), 0);
	cr_assert_eq(tally_sample_advance(&clamped, tally_vec_read(&v, 1)), 10);
	cr_assert_eq(tally_sample_advance(&mono, tally_vec_read_monotonic(&v, 1)), 10);
	cr_assert_eq(clamped.last, U(TALLY_SWORD_MAX));

	/* 20 more: past TALLY_SWORD_MAX. */
	cr_assert_eq(tally_vec_mod(&v, 1, 20), 0);
	cr_assert_eq(tally_vec_read(&v, 1), 0);
	cr_assert_eq(tally_vec_read_monotonic(&v, 1), HALF + 19u + TALLY_MONOTONIC_BIAS);
	cr_assert_eq(tally_vec_read_exact(&v, 1), TALLY_SWORD_MIN + 19);
	/* Monotonic: the true 20. Clamped: 0 - (2^(W-1) - 1) = 2^(W-1) + 1. */
	cr_assert_eq(tally_sample_advance(&mono, tally_vec_read_monotonic(&v, 1)), 20);
	cr_assert_eq(tally_sample_advance(&clamped, tally_vec_read(&v, 1)), HALF + 1u);
	/* And then the clamped reader sees nothing for the next 2^(W-1) events. */
	cr_assert_eq(tally_vec_mod(&v, 1, 1000), 0);
	cr_assert_eq(tally_sample_advance(&clamped, tally_vec_read(&v, 1)), 0);
	cr_assert_eq(tally_sample_advance(&mono, tally_vec_read_monotonic(&v, 1)), 1000);

	/* Item 0 untouched throughout. */
	cr_assert_eq(tally_vec_read_exact(&v, 0), 0);
	cr_assert_eq(tally_vec_read(&v, 0), 0);
	tally_vec_destroy(&v);
}
