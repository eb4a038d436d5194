/*
 * Unit tests for tally/cost.h: the lrusize/4 halving cost accumulator
 * (read-side fold and producer-side note) and get_scan_count()'s scan
 * fraction, with exact values.
 *
 * The fold and note are checked against a plain model written here on
 * 128-bit integers (no shared code with the header), on sequences whose
 * inputs start just below the wrap point of the word, with deltas from 0
 * to 2^W - 1 and LRU sizes from 0 to the largest word.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <string.h>
#include <tally/cost.h>

__extension__ typedef unsigned __int128 u128;

#define U(x) ((tally_uword)(x))
#define W TALLY_WORD_BITS
#define MASK ((uint64_t)TALLY_UWORD_MAX)

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
	while (k < 64 && (u128)(m->count[0] >> k) + (m->count[1] >> k) > limit)
		k++;
	m->count[0] = k < 64 ? m->count[0] >> k : 0;
	m->count[1] = k < 64 ? m->count[1] >> k : 0;
}

static void model_note(struct model *m, int side, uint64_t nr_io, uint64_t nr_rot,
		       uint64_t lrusize)
{
	m->count[side] = (m->count[side] + ((nr_io * 32 + nr_rot) & MASK)) & MASK;
	if ((u128)m->count[0] + m->count[1] > (lrusize & MASK) / 4) {
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
	cr_assert_leq((u128)out[0] + out[1], (u128)(MASK / 4));
}

Test(cost, fold_decays_in_proportion_across_a_gap)
{
	/* Seed 000: 100 anon refaults, then 20 file refaults, then reclaim.
	 * lrusize 4000 (limit 1000). The read-side fold sees 3200 : 640 at
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
			cr_assert_leq((u128)out[0] + out[1], (u128)((lru & MASK) / 4));
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
	/* Sum 32 + 72 = 104 > 100: halve once. */
	tally_cost_note(&c, TALLY_ANON, 0, 0, 400);
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

/* The formula on 128-bit integers, as written in get_scan_count(). */
static void formula(uint64_t a, uint64_t f, unsigned sw, uint64_t *ap, uint64_t *fp)
{
	u128 total = (u128)a + f;
	u128 ap_cost = total + a, fp_cost = total + f;
	total = ap_cost + fp_cost;
	*ap = (uint64_t)((u128)sw * (total + 1) / (ap_cost + 1));
	*fp = (uint64_t)((u128)(200 - sw) * (total + 1) / (fp_cost + 1));
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
