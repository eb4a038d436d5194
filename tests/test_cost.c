/*
 * Unit tests for tally/cost.h: the lrusize/4 halving cost accumulator
 * (read-side fold and producer-side note) and get_scan_count()'s scan
 * fraction, with exact values.
 *
 * The fold and note are checked against a plain model written here on
 * 64-bit integers with explicit carries (no shared code with the header,
 * no __int128, so it also builds for 32-bit targets), on sequences whose
 * inputs start just below the wrap point of the word, with deltas from 0
 * to 2^W - 1 and LRU sizes from 0 to the largest word.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <string.h>
#include <tally/cost.h>

#define U(x) ((tally_uword)(x))
#define W TALLY_WORD_BITS
#define MASK ((uint64_t)TALLY_UWORD_MAX)

/* a + b > limit for 64-bit a, b: the sum with its carry bit. */
static bool sum_over(uint64_t a, uint64_t b, uint64_t limit)
{
	uint64_t s = a + b;
	return s < a || s > limit;
}

/* ---- the plain model ---------------------------------------------------- */
struct model {
	uint64_t count[2], last_rot[2], last_io[2];
};

static void model_fold(struct model *m, const uint64_t rot[2], const uint64_t io[2],
		       uint64_t lrusize)
{
	uint64_t limit = (lrusize & MASK) / 4;
	for (int i = 0; i < 2; i++) {
		uint64_t d = ((((io[i] - m->last_io[i]) & MASK) * 32) +
			      ((rot[i] - m->last_rot[i]) & MASK)) & MASK;
		m->count[i] = (m->count[i] + d) & MASK;
		m->last_rot[i] = rot[i] & MASK;
		m->last_io[i] = io[i] & MASK;
	}
	/* The fewest halvings k with (a >> k) + (f >> k) <= limit. */
	int k = 0;
	while (k < 64 && sum_over(m->count[0] >> k, m->count[1] >> k, limit))
		k++;
	m->count[0] = k < 64 ? m->count[0] >> k : 0;
	m->count[1] = k < 64 ? m->count[1] >> k : 0;
}

static void model_note(struct model *m, int side, uint64_t nr_io, uint64_t nr_rot,
		       uint64_t lrusize)
{
	uint64_t cost = (nr_io * 32 + nr_rot) & MASK;
	/* lru_note_cost(): no cost, no decay (an early return). */
	if (!cost)
		return;
	m->count[side] = (m->count[side] + cost) & MASK;
	if (sum_over(m->count[0], m->count[1], (lrusize & MASK) / 4)) {
		m->count[0] /= 2;
		m->count[1] /= 2;
	}
}

static void expect_cost(const struct tally_cost *c, uint64_t a, uint64_t f)
{
	tally_uword got[2];
	tally_cost_read(c, got);
	cr_assert_eq(got[0], U(a), "anon %llu, expected %llu", (unsigned long long)got[0],
		     (unsigned long long)a);
	cr_assert_eq(got[1], U(f), "file %llu, expected %llu", (unsigned long long)got[1],
		     (unsigned long long)f);
}

static void fold(struct tally_cost *c, uint64_t ar, uint64_t aio, uint64_t fr, uint64_t fio,
		 uint64_t lrusize, tally_uword out[2])
{
	struct tally_cost_input in[2] = {{U(ar), U(aio)}, {U(fr), U(fio)}};
	tally_cost_fold(c, in, U(lrusize), out);
}

/* ---- fold --------------------------------------------------------------- */
Test(cost, init_is_zero)
{
	struct tally_cost c;
	struct tally_cost_input last[2];
	memset(&c, 0xa5, sizeof(c));
	tally_cost_init(&c);
	expect_cost(&c, 0, 0);
	tally_cost_last(&c, last);
	cr_assert(last[0].rotated == 0 && last[0].io == 0 && last[1].rotated == 0 &&
		  last[1].io == 0);
}

Test(cost, first_fold_weighs_io_32)
{
	struct tally_cost c;
	tally_uword out[2];
	tally_cost_init(&c);
	fold(&c, 5, 2, 7, 1, TALLY_UWORD_MAX, out);
	cr_assert_eq(out[0], 2 * 32 + 5);
	cr_assert_eq(out[1], 1 * 32 + 7);
	expect_cost(&c, 69, 39);
	/* Same inputs again: zero delta, nothing changes. */
	fold(&c, 5, 2, 7, 1, TALLY_UWORD_MAX, out);
	cr_assert(out[0] == 69 && out[1] == 39);
	/* Only the delta since the last fold counts. */
	fold(&c, 8, 4, 7, 3, TALLY_UWORD_MAX, out);
	cr_assert_eq(out[0], 69 + 3 + 2 * 32);
	cr_assert_eq(out[1], 39 + 2 * 32);
	struct tally_cost_input last[2];
	tally_cost_last(&c, last);
	cr_assert(last[0].rotated == 8 && last[0].io == 4 && last[1].rotated == 7 &&
		  last[1].io == 3);
}

Test(cost, fold_delta_across_the_wrap)
{
	struct tally_cost c;
	tally_uword out[2];
	tally_cost_init(&c);
	/* Inputs just below the wrap point: from last = 0 the delta is huge
	 * and decays to the model's value. */
	fold(&c, MASK - 9, MASK - 1, MASK, MASK - 2, TALLY_UWORD_MAX, out);
	struct model m = {{0}, {0}, {0}};
	uint64_t rot[2] = {MASK - 9, MASK}, io[2] = {MASK - 1, MASK - 2};
	model_fold(&m, rot, io, MASK);
	cr_assert(out[0] == U(m.count[0]) && out[1] == U(m.count[1]));
	/* Halve them away with a tiny LRU, then cross the wrap. */
	fold(&c, MASK - 9, MASK - 1, MASK, MASK - 2, 0, out);
	cr_assert(out[0] == 0 && out[1] == 0);
	fold(&c, 5, 3, 1, 0, TALLY_UWORD_MAX, out);
	cr_assert_eq(out[0], 15 + 5 * 32); /* rot: -10 -> 5, io: -2 -> 3 */
	cr_assert_eq(out[1], 2 + 3 * 32);  /* rot: -1 -> 1, io: -3 -> 0 */
}

Test(cost, quarter_lrusize_zero_empties_both)
{
	for (uint64_t lru = 0; lru < 4; lru++) {
		struct tally_cost c;
		tally_uword out[2] = {1, 1};
		tally_cost_init(&c);
		fold(&c, 1000, 1000, 12345, 0, lru, out);
		cr_assert(out[0] == 0 && out[1] == 0, "lrusize %llu", (unsigned long long)lru);
		expect_cost(&c, 0, 0);
	}
	/* lrusize 4: limit 1. 33 and 2 -> halve 5 times -> 1 and 0. */
	struct tally_cost c;
	tally_uword out[2];
	tally_cost_init(&c);
	fold(&c, 1, 1, 2, 0, 4, out);
	cr_assert(out[0] == 1 && out[1] == 0);
}

Test(cost, strict_comparison_at_the_limit)
{
	struct tally_cost c;
	tally_uword out[2];
	tally_cost_init(&c);
	/* 60 + 40 == 400 / 4: not over, no halving. */
	fold(&c, 60, 0, 40, 0, 400, out);
	cr_assert(out[0] == 60 && out[1] == 40);
	/* One more: 101 > 100 -> 30, 20. */
	fold(&c, 61, 0, 40, 0, 400, out);
	cr_assert(out[0] == 30 && out[1] == 20);
	/* lrusize 403 still gives limit 100 (integer division). */
	fold(&c, 61 + 50, 0, 40 + 1, 0, 403, out);
	cr_assert(out[0] == 40 && out[1] == 10, "%llu %llu", (unsigned long long)out[0],
		  (unsigned long long)out[1]);
}

Test(cost, huge_delta_needs_many_halvings)
{
	struct tally_cost c;
	tally_uword out[2];
	tally_cost_init(&c);
	/* anon 2^(W-1) (io 2^(W-6) weighted 32), file 2^(W-2), limit 2:
	 * after k halvings 2^(W-1-k) + 2^(W-2-k) <= 2 first at k = W - 1. */
	uint64_t half = (uint64_t)1 << (W - 1);
	fold(&c, 0, half / 32, half / 2, 0, 8, out);
	cr_assert(out[0] == 1 && out[1] == 0, "%llu %llu", (unsigned long long)out[0],
		  (unsigned long long)out[1]);
	/* Counts whose sum does not fit a word: 2^(W-1) + 2^(W-1) would wrap
	 * to 0; the halving must still run: limit 100 -> 32 + 32. */
	tally_cost_init(&c);
	fold(&c, half, 0, half, 0, 400, out);
	cr_assert(out[0] == 32 && out[1] == 32, "%llu %llu", (unsigned long long)out[0],
		  (unsigned long long)out[1]);
	/* The largest delta on both sides, LRU of every size. */
	tally_cost_init(&c);
	fold(&c, MASK, 0, MASK, 0, MASK, out);
	struct model m = {{0}, {0}, {0}};
	uint64_t rot[2] = {MASK, MASK}, io[2] = {0, 0};
	model_fold(&m, rot, io, MASK);
	cr_assert(out[0] == U(m.count[0]) && out[1] == U(m.count[1]));
	cr_assert(!sum_over(out[0], out[1], MASK / 4));
}

Test(cost, fold_decays_in_proportion_across_a_gap)
{
	/* The reclaim gap of the series' cover letter: 100 anon refaults,
	 * then 20 file refaults, then reclaim. lrusize 4000 (limit 1000). The read-side fold sees 3200 : 640 at
	 * once and halves both twice: 800 : 160, the events' 5 : 1. */
	struct tally_cost c;
	tally_uword out[2];
	tally_cost_init(&c);
	fold(&c, 0, 100, 0, 20, 4000, out);
	cr_assert(out[0] == 800 && out[1] == 160);
	/* Producer-side notes decay at every event: the file refaults that
	 * came later age the anon ones out: 320 : 448. */
	tally_cost_init(&c);
	for (int i = 0; i < 100; i++)
		tally_cost_note(&c, TALLY_ANON, 1, 0, 4000);
	expect_cost(&c, 640, 0);
	for (int i = 0; i < 20; i++)
		tally_cost_note(&c, TALLY_FILE, 1, 0, 4000);
	expect_cost(&c, 320, 448);
	uint64_t fr[2], d;
	tally_scan_fraction(800, 160, 60, fr, &d);
	cr_assert(fr[0] == 60 * 2881 / 1761 && fr[1] == 140 * 2881 / 1121);
	tally_scan_fraction(320, 448, 60, fr, &d);
	cr_assert(fr[0] == 60 * 2305 / 1089 && fr[1] == 140 * 2305 / 1217);
}

/* Random monotonic inputs near the wrap point, random LRU sizes. */
static uint64_t rnd_delta(struct harness_rng *r)
{
	switch (harness_next(r) % 6) {
	case 0: return 0;
	case 1: return harness_next(r) % 8;
	case 2: return harness_next(r) % 5000;
	case 3: return harness_next(r) % ((uint64_t)1 << (W / 2));
	case 4: return harness_next(r) & MASK; /* any delta is a valid one */
	default: return MASK - harness_next(r) % 4;
	}
}

static uint64_t rnd_lru(struct harness_rng *r)
{
	switch (harness_next(r) % 6) {
	case 0: return harness_next(r) % 8;
	case 1: return harness_next(r) % 100000;
	case 2: return harness_next(r) % ((uint64_t)1 << (W / 2));
	case 3: return MASK - harness_next(r) % 16;
	default: return harness_next(r) & MASK;
	}
}

Test(cost, fold_sequences_match_the_model)
{
	for (uint64_t seed = 1; seed <= 300; seed++) {
		struct harness_rng r = {seed * 7919};
		struct tally_cost c;
		struct model m = {{0}, {0}, {0}};
		uint64_t rot[2], io[2];
		tally_cost_init(&c);
		for (int i = 0; i < 2; i++) { /* start just below the wrap */
			rot[i] = (MASK - harness_next(&r) % 100) & MASK;
			io[i] = (MASK - harness_next(&r) % 100) & MASK;
		}
		for (int step = 0; step < 200; step++) {
			for (int i = 0; i < 2; i++) {
				rot[i] = (rot[i] + rnd_delta(&r)) & MASK;
				io[i] = (io[i] + rnd_delta(&r)) & MASK;
			}
			uint64_t lru = rnd_lru(&r);
			tally_uword out[2];
			fold(&c, rot[0], io[0], rot[1], io[1], lru, out);
			model_fold(&m, rot, io, lru);
			cr_assert(out[0] == U(m.count[0]) && out[1] == U(m.count[1]),
				  "seed %llu step %d: %llu %llu, model %llu %llu",
				  (unsigned long long)seed, step, (unsigned long long)out[0],
				  (unsigned long long)out[1], (unsigned long long)m.count[0],
				  (unsigned long long)m.count[1]);
			cr_assert(!sum_over(out[0], out[1], (lru & MASK) / 4));
			expect_cost(&c, m.count[0], m.count[1]);
		}
	}
}

/* ---- note --------------------------------------------------------------- */
Test(cost, note_adds_and_halves_once)
{
	struct tally_cost c;
	tally_cost_init(&c);
	tally_cost_note(&c, TALLY_ANON, 1, 0, TALLY_UWORD_MAX);
	expect_cost(&c, 32, 0);
	tally_cost_note(&c, TALLY_FILE, 0, 5, TALLY_UWORD_MAX);
	expect_cost(&c, 32, 5);
	tally_cost_note(&c, TALLY_FILE, 2, 3, TALLY_UWORD_MAX);
	expect_cost(&c, 32, 5 + 64 + 3);
	/* No cost (nr_io * 32 + nr_rotated == 0): lru_note_cost() returns at
	 * once, nothing decays although 32 + 72 = 104 > 100. */
	tally_cost_note(&c, TALLY_ANON, 0, 0, 400);
	expect_cost(&c, 32, 72);
	/* Sum 33 + 72 = 105 > 100: halve once. */
	tally_cost_note(&c, TALLY_ANON, 0, 1, 400);
	expect_cost(&c, 16, 36);
	/* Sum == limit: no halving. */
	tally_cost_note(&c, TALLY_ANON, 0, 48, 400);
	expect_cost(&c, 64, 36);
	/* Far over the limit: still halved only once. */
	tally_cost_note(&c, TALLY_FILE, 100, 0, 4);
	expect_cost(&c, 32, (36 + 3200) / 2);
	/* The fold's inputs are untouched by notes. */
	struct tally_cost_input last[2];
	tally_cost_last(&c, last);
	cr_assert(last[0].rotated == 0 && last[1].io == 0);
}

/* lru_note_cost() computes cost = nr_io * SWAP_CLUSTER_MAX + nr_rotated in
 * unsigned long and returns before the decay when it is 0: a zero note
 * changes nothing, whatever the LRU size, locked or not, even when the
 * weighted sum wraps to 0. */
Test(cost, zero_cost_note_does_not_decay)
{
	struct tally_cost c;
	tally_cost_init(&c);
	tally_cost_note(&c, TALLY_ANON, 3, 4, TALLY_UWORD_MAX);
	tally_cost_note(&c, TALLY_FILE, 1, 1, TALLY_UWORD_MAX);
	expect_cost(&c, 100, 33);
	/* Far over every limit below: one non-zero note would halve. */
	for (uint64_t lru = 0; lru < 8; lru++) {
		tally_cost_note(&c, TALLY_ANON, 0, 0, U(lru));
		tally_cost_note(&c, TALLY_FILE, 0, 0, U(lru));
		expect_cost(&c, 100, 33);
	}
	tally_cost_lock(&c);
	tally_cost_note_locked(&c, TALLY_FILE, 0, 0, 0);
	tally_cost_unlock(&c);
	expect_cost(&c, 100, 33);
	/* 2^(W-5) IO events weigh 2^W: the modular cost is 0, as in the
	 * kernel's unsigned long. */
	tally_cost_note(&c, TALLY_ANON, U((uint64_t)1 << (W - 5)), 0, 0);
	expect_cost(&c, 100, 33);
	/* Rotations that complete the wrap: also 0. */
	tally_cost_note(&c, TALLY_FILE, U(MASK / 32), 32, 0);
	expect_cost(&c, 100, 33);
	/* The smallest cost decays as usual: 101 + 33 > 0 -> 50, 16. */
	tally_cost_note(&c, TALLY_ANON, 0, 1, 0);
	expect_cost(&c, 50, 16);
}

Test(cost, note_sequences_match_the_model)
{
	for (uint64_t seed = 1; seed <= 300; seed++) {
		struct harness_rng r = {seed * 104729};
		struct tally_cost c;
		struct model m = {{0}, {0}, {0}};
		tally_cost_init(&c);
		for (int step = 0; step < 300; step++) {
			int side = (int)(harness_next(&r) & 1);
			uint64_t nio = rnd_delta(&r), nrot = rnd_delta(&r), lru = rnd_lru(&r);
			tally_cost_note(&c, side, U(nio), U(nrot), U(lru));
			model_note(&m, side, nio & MASK, nrot & MASK, lru);
			tally_uword got[2];
			tally_cost_read(&c, got);
			cr_assert(got[0] == U(m.count[0]) && got[1] == U(m.count[1]),
				  "seed %llu step %d", (unsigned long long)seed, step);
		}
	}
}

Test(cost, bad_input_changes_nothing)
{
	struct tally_cost c;
	tally_uword out[2] = {7, 7};
	struct tally_cost_input in[2] = {{1, 1}, {1, 1}};
	tally_cost_init(&c);
	fold(&c, 3, 0, 4, 0, 1000, out);
	tally_cost_note(&c, 2, 5, 5, 1000);
	tally_cost_note(&c, -1, 5, 5, 1000);
	tally_cost_note(NULL, TALLY_ANON, 5, 5, 1000);
	expect_cost(&c, 3, 4);
	tally_cost_fold(&c, NULL, 1000, out);
	cr_assert(out[0] == 0 && out[1] == 0);
	expect_cost(&c, 3, 4);
	out[0] = out[1] = 7;
	tally_cost_fold(NULL, in, 1000, out);
	cr_assert(out[0] == 0 && out[1] == 0);
	tally_cost_read(NULL, out);
	cr_assert(out[0] == 0 && out[1] == 0);
	tally_cost_read(&c, NULL);
	tally_cost_fold(&c, in, 1000, NULL); /* NULL cost: folds, reports nothing */
	expect_cost(&c, 3 - 3 + 1 + 32, 4 - 4 + 1 + 32);
	tally_cost_init(NULL);
}

/* NULL anywhere: every public call is a no-op or reads zeros. */
Test(cost, null_anywhere)
{
	struct tally_cost c;
	struct tally_cost_input in[2] = {{5, 1}, {6, 2}}, last[2];
	tally_uword out[2] = {7, 7};
	uint64_t fr[2] = {9, 9}, d = 9;
	tally_cost_init(&c);
	tally_cost_init(NULL);
	cr_assert(!tally_cost_trylock(NULL));
	tally_cost_lock(NULL);
	tally_cost_unlock(NULL);
	tally_cost_fold_locked(NULL, in, 100, out);
	cr_assert(out[0] == 0 && out[1] == 0);
	out[0] = out[1] = 7;
	tally_cost_fold_locked(&c, NULL, 100, out);
	cr_assert(out[0] == 0 && out[1] == 0);
	tally_cost_fold_locked(NULL, NULL, 100, NULL);
	tally_cost_fold(NULL, NULL, 100, NULL);
	tally_cost_note_locked(NULL, TALLY_ANON, 1, 1, 100);
	tally_cost_note(NULL, TALLY_FILE, 1, 1, 100);
	memset(last, 0xa5, sizeof(last));
	tally_cost_last(NULL, last);
	cr_assert(last[0].rotated == 0 && last[0].io == 0 && last[1].rotated == 0 &&
		  last[1].io == 0);
	tally_cost_last(&c, NULL);
	tally_cost_read(NULL, NULL);
	tally_scan_fraction(1, 2, 60, NULL, NULL);
	tally_scan_fraction(1, 2, 60, fr, &d);
	cr_assert(fr[0] == 120 && fr[1] == 233 && d == 353);
	/* c itself never changed, and its lock is free. */
	expect_cost(&c, 0, 0);
	tally_cost_last(&c, last);
	cr_assert(last[0].rotated == 0 && last[1].io == 0);
	cr_assert(tally_cost_trylock(&c));
	tally_cost_unlock(&c);
}

Test(cost, lock_api)
{
	struct tally_cost c;
	tally_uword out[2];
	struct tally_cost_input in[2] = {{10, 0}, {0, 1}};
	tally_cost_init(&c);
	cr_assert(tally_cost_trylock(&c));
	cr_assert(!tally_cost_trylock(&c));
	tally_cost_fold_locked(&c, in, 1000, out);
	tally_cost_note_locked(&c, TALLY_ANON, 0, 1, 1000);
	tally_cost_unlock(&c);
	expect_cost(&c, 11, 32);
	tally_cost_lock(&c);
	cr_assert(!tally_cost_trylock(&c));
	tally_cost_unlock(&c);
	cr_assert(tally_cost_trylock(&c));
	tally_cost_unlock(&c);
	cr_assert(!tally_cost_trylock(NULL));
}

/* ---- scan fraction ------------------------------------------------------- */
static void expect_fraction(uint64_t a, uint64_t f, unsigned sw, uint64_t ap, uint64_t fp)
{
	uint64_t fr[2] = {9, 9}, d = 9;
	tally_scan_fraction(U(a), U(f), sw, fr, &d);
	cr_assert(fr[0] == ap && fr[1] == fp && d == ap + fp,
		  "(%llu, %llu, %u): %llu %llu %llu, expected %llu %llu",
		  (unsigned long long)a, (unsigned long long)f, sw, (unsigned long long)fr[0],
		  (unsigned long long)fr[1], (unsigned long long)d, (unsigned long long)ap,
		  (unsigned long long)fp);
}

Test(scan_fraction, golden)
{
	expect_fraction(0, 0, 60, 60, 140);
	expect_fraction(100, 300, 100, 239, 171);
	expect_fraction(0, 0, 0, 0, 200);
	expect_fraction(0, 0, 200, 200, 0);
	/* Only anon cost: anon scanned less. total = 3a + 1, a' = 2a. */
	expect_fraction(1000, 0, 100, 100 * 3001 / 2001, 100 * 3001 / 1001);
}

/* The formula in 128-bit arithmetic written out on 64-bit halves (no
 * __int128, which 32-bit targets lack), with a plain shift-and-subtract
 * long division: a different algorithm from the header's. */
struct wide {
	uint64_t hi, lo;
};

static struct wide wide_add(struct wide a, struct wide b)
{
	struct wide r = {a.hi + b.hi, a.lo + b.lo};
	r.hi += r.lo < a.lo;
	return r;
}

static struct wide wide_of(uint64_t v)
{
	struct wide r = {0, v};
	return r;
}

/* a * k by repeated doubling (k small). */
static struct wide wide_mul(struct wide a, unsigned k)
{
	struct wide r = {0, 0};
	for (; k; k >>= 1) {
		if (k & 1)
			r = wide_add(r, a);
		a = wide_add(a, a);
	}
	return r;
}

/* floor(n / d), d > 0; the quotient must fit 64 bits. */
static uint64_t wide_div(struct wide n, struct wide d)
{
	struct wide rem = {0, 0};
	uint64_t q = 0;
	for (int b = 127; b >= 0; b--) {
		uint64_t bit = b >= 64 ? (n.hi >> (b - 64)) & 1 : (n.lo >> b) & 1;
		rem.hi = (rem.hi << 1) | (rem.lo >> 63);
		rem.lo = (rem.lo << 1) | bit;
		if (rem.hi > d.hi || (rem.hi == d.hi && rem.lo >= d.lo)) {
			uint64_t borrow = rem.lo < d.lo;
			rem.lo -= d.lo;
			rem.hi -= d.hi + borrow;
			if (b < 64)
				q |= (uint64_t)1 << b;
		}
	}
	return q;
}

/* The formula as written in get_scan_count(), in exact arithmetic. */
static void formula(uint64_t a, uint64_t f, unsigned sw, uint64_t *ap, uint64_t *fp)
{
	struct wide total = wide_add(wide_of(a), wide_of(f));
	struct wide ap_cost = wide_add(total, wide_of(a)), fp_cost = wide_add(total, wide_of(f));
	struct wide one = wide_of(1);
	total = wide_add(wide_add(ap_cost, fp_cost), one);
	*ap = wide_div(wide_mul(total, sw), wide_add(ap_cost, one));
	*fp = wide_div(wide_mul(total, 200 - sw), wide_add(fp_cost, one));
}

Test(scan_fraction, sweep_matches_128_bit_formula)
{
	const uint64_t fixed[] = {0, 1, 2, 3, 31, 32, 100, 1000, 65535, 65536,
				  (1ull << 31) - 1, 1ull << 31, (1ull << 32) - 1, 1ull << 62,
				  (1ull << 63) - 1, 1ull << 63, UINT64_MAX - 1, UINT64_MAX};
	const size_t nf = sizeof(fixed) / sizeof(fixed[0]);
	struct harness_rng r = {42};
	for (unsigned sw = 0; sw <= 200; sw++) {
		for (size_t i = 0; i < nf + 20; i++) {
			for (size_t j = 0; j < nf + 20; j++) {
				uint64_t a = (i < nf ? fixed[i] : harness_next(&r) >> (i % 64)) & MASK;
				uint64_t f = (j < nf ? fixed[j] : harness_next(&r) >> (j % 64)) & MASK;
				uint64_t ap, fp, fr[2], d;
				formula(a, f, sw, &ap, &fp);
				tally_scan_fraction(U(a), U(f), sw, fr, &d);
				cr_assert(fr[0] == ap && fr[1] == fp && d == ap + fp,
					  "(%llu, %llu, %u)", (unsigned long long)a,
					  (unsigned long long)f, sw);
				cr_assert(ap <= 3 * sw && fp <= 3 * (200 - sw) && d > 0);
			}
		}
	}
}

Test(scan_fraction, bad_swappiness_gives_zero)
{
	uint64_t fr[2] = {5, 5}, d = 5;
	tally_scan_fraction(1, 2, 201, fr, &d);
	cr_assert(fr[0] == 0 && fr[1] == 0 && d == 0);
	tally_scan_fraction(1, 2, 60, NULL, &d); /* NULL outputs are skipped */
	cr_assert_eq(d, 60 * 10 / 5 + 140 * 10 / 6);
	tally_scan_fraction(1, 2, 60, fr, NULL);
	cr_assert(fr[0] == 120 && fr[1] == 233);
}
