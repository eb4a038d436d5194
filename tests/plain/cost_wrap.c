/*
 * cost_wrap: tally_cost and tally_scan_fraction across the wrap points of
 * the word, without Criterion (runs in the -m32 build too).
 *
 * - The 32-bit hazard that the _monotonic vmstat readers fix: a monotonic input that passes TALLY_SWORD_MAX
 *   and then 2^W folds the true delta; a clamped read of the same counter
 *   would have folded a ~2^(W-1) spurious one.
 * - Fold and note sequences against a model written here (carry-out sum
 *   comparison, no shared code with the header), with notes whose weighted
 *   cost is 0 modulo 2^W (lru_note_cost() returns before the decay).
 * - Scan fraction: golden values and a sweep against the formula in 64-bit
 *   arithmetic, exact for these inputs.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <string.h>
#include <tally/cost.h>

#define W TALLY_WORD_BITS
#define U(x) ((tally_uword)(x))

struct model {
	tally_uword count[2], last_rot[2], last_io[2];
};

/* a + f > limit, from the carry out of the word-sized sum. */
static int over(tally_uword a, tally_uword f, tally_uword limit)
{
	tally_uword s = (tally_uword)(a + f);
	return s < a || s > limit;
}

static void model_fold(struct model *m, const tally_uword rot[2], const tally_uword io[2],
		       tally_uword lru)
{
	for (int i = 0; i < 2; i++) {
		tally_uword d = U(U(io[i] - m->last_io[i]) * 32u) + U(rot[i] - m->last_rot[i]);
		m->count[i] = U(m->count[i] + d);
		m->last_rot[i] = rot[i];
		m->last_io[i] = io[i];
	}
	for (int k = 0; k <= W; k++) {
		tally_uword a = k < W ? m->count[0] >> k : 0, f = k < W ? m->count[1] >> k : 0;
		if (!over(a, f, lru / 4) || k == W) {
			m->count[0] = a;
			m->count[1] = f;
			break;
		}
	}
}

static void model_note(struct model *m, int side, tally_uword nio, tally_uword nrot,
		       tally_uword lru)
{
	tally_uword cost = U(U(nio * 32u) + nrot);
	if (!cost) /* lru_note_cost(): no cost, no decay */
		return;
	m->count[side] = U(m->count[side] + cost);
	if (over(m->count[0], m->count[1], lru / 4)) {
		m->count[0] /= 2;
		m->count[1] /= 2;
	}
}

static void check_signed_wrap(void)
{
	/* A rotation counter crossing TALLY_SWORD_MAX, then 2^W. */
	const tally_uword start = (tally_uword)TALLY_SWORD_MAX - 40u;
	const tally_uword big = TALLY_UWORD_MAX; /* nothing decays */
	struct tally_cost c;
	tally_uword out[2], expect = 0;
	struct tally_cost_input in[2] = {{start, 0}, {0, 0}};
	tally_cost_init(&c);
	tally_cost_fold(&c, in, big, out); /* baseline: start folds in */
	tally_cost_fold(&c, in, 0, out);   /* decay it away */
	CHECK_EQ(out[0], 0);
	for (tally_uword step = 0; step < 8; step++) {
		in[0].rotated = U(in[0].rotated + 25u); /* passes SWORD_MAX at step 1 */
		expect += 25u;
		tally_cost_fold(&c, in, big, out);
		CHECK_EQ(out[0], expect);
		/* At the crossing a clamped reader sees 0 while its last sample is
		 * the pre-wrap value: 0 - last is the spurious ~2^(W-1). */
		tally_uword prev = U(in[0].rotated - 25u);
		if (tally__to_signed(prev) >= 0 && tally__to_signed(in[0].rotated) < 0)
			CHECK(U(tally_clamp(tally__to_signed(in[0].rotated)) - prev) >
				      U(TALLY_SWORD_MAX),
			      "the clamped delta is the spurious ~2^(W-1)");
	}
	/* Now across 2^W: io and rotations from just below zero to above. */
	tally_cost_init(&c);
	in[1].rotated = U(U(0) - 7u);
	in[1].io = U(U(0) - 2u);
	tally_cost_fold(&c, in, 0, out);
	in[1].rotated = 3u;
	in[1].io = 1u;
	tally_cost_fold(&c, in, big, out);
	CHECK_EQ(out[1], 10u + 3u * 32u);
	CHECK_EQ(out[0], 0u);
}

static void check_sequences(void)
{
	struct harness_rng r = {12345};
	for (int seq = 0; seq < 200; seq++) {
		struct tally_cost c, cn;
		struct model m, n;
		tally_uword rot[2], io[2];
		memset(&m, 0, sizeof(m));
		memset(&n, 0, sizeof(n));
		tally_cost_init(&c);
		tally_cost_init(&cn);
		for (int i = 0; i < 2; i++) {
			rot[i] = U(0u - (tally_uword)harness_range(&r, 1, 64));
			io[i] = U(0u - (tally_uword)harness_range(&r, 1, 64));
		}
		for (int step = 0; step < 300; step++) {
			tally_uword lru, out[2];
			for (int i = 0; i < 2; i++) {
				uint64_t k = harness_next(&r) % 4;
				rot[i] = U(rot[i] + (k == 3 ? U(harness_next(&r)) : U(harness_next(&r) % 3000)));
				io[i] = U(io[i] + (k == 2 ? U(harness_next(&r)) : U(harness_next(&r) % 50)));
			}
			switch (harness_next(&r) % 4) {
			case 0: lru = U(harness_next(&r) % 8); break;
			case 1: lru = U(harness_next(&r) % 400000); break;
			case 2: lru = U(TALLY_UWORD_MAX - harness_next(&r) % 8); break;
			default: lru = U(harness_next(&r)); break;
			}
			if (harness_next(&r) % 2 == 0) { /* a note on the note pair */
				int side = (int)(harness_next(&r) & 1);
				tally_uword nio = U(harness_next(&r) % 100), nrot = U(harness_next(&r));
				/* One note in four weighs 0 modulo 2^W (often only
				 * after wrapping): it must not decay anything. */
				if (harness_next(&r) % 4 == 0)
					nrot = U(U(0) - U(nio * 32u));
				tally_cost_note(&cn, side, nio, nrot, lru);
				model_note(&n, side, nio, nrot, lru);
				tally_cost_read(&cn, out);
				CHECK(out[0] == n.count[0] && out[1] == n.count[1], "note seq %d step %d",
				      seq, step);
			}
			struct tally_cost_input in[2] = {{rot[0], io[0]}, {rot[1], io[1]}};
			tally_cost_fold(&c, in, lru, out);
			model_fold(&m, rot, io, lru);
			CHECK(out[0] == m.count[0] && out[1] == m.count[1],
			      "seq %d step %d: %llu %llu, model %llu %llu", seq, step,
			      (unsigned long long)out[0], (unsigned long long)out[1],
			      (unsigned long long)m.count[0], (unsigned long long)m.count[1]);
			if (harness_failures)
				return;
		}
	}
}

static void fraction64(uint64_t a, uint64_t f, unsigned sw, uint64_t *ap, uint64_t *fp)
{
	uint64_t total = a + f, apc = total + a, fpc = total + f;
	total = apc + fpc;
	*ap = sw * (total + 1) / (apc + 1);
	*fp = (200 - sw) * (total + 1) / (fpc + 1);
}

static void check_fraction(void)
{
	uint64_t fr[2], d, ap, fp;
	tally_scan_fraction(0, 0, 60, fr, &d);
	CHECK(fr[0] == 60 && fr[1] == 140 && d == 200, "golden (0, 0, 60)");
	tally_scan_fraction(100, 300, 100, fr, &d);
	CHECK(fr[0] == 239 && fr[1] == 171 && d == 410, "golden (100, 300, 100)");
	/* Exact in 64 bits while a, f < 2^50 (sw * (3 * 2^51 + 1) < 2^60). */
	const uint64_t lim = W == 32 ? ((uint64_t)1 << 32) - 1 : ((uint64_t)1 << 50) - 1;
	const uint64_t fixed[] = {0, 1, 2, 99, 1u << 16, (1ull << 31) - 1, 1ull << 31, lim - 1, lim};
	struct harness_rng r = {777};
	for (unsigned sw = 0; sw <= 200; sw++) {
		for (int i = 0; i < 30; i++) {
			for (int j = 0; j < 30; j++) {
				uint64_t a = i < 9 ? fixed[i] : (harness_next(&r) & lim) >> (i % 40);
				uint64_t f = j < 9 ? fixed[j] : (harness_next(&r) & lim) >> (j % 40);
				tally_scan_fraction(U(a), U(f), sw, fr, &d);
				fraction64(a, f, sw, &ap, &fp);
				if (fr[0] != ap || fr[1] != fp || d != ap + fp) {
					CHECK(0, "(%llu, %llu, %u): %llu %llu, expected %llu %llu",
					      (unsigned long long)a, (unsigned long long)f, sw,
					      (unsigned long long)fr[0], (unsigned long long)fr[1],
					      (unsigned long long)ap, (unsigned long long)fp);
					return;
				}
			}
		}
	}
	/* The largest words: 100 * (6M + 1) / (3M + 1) = 199; 200 * (3M + 1) /
	 * (2M + 1) = 299. */
	tally_scan_fraction(TALLY_UWORD_MAX, TALLY_UWORD_MAX, 100, fr, &d);
	CHECK(fr[0] == 199 && fr[1] == 199, "max, max: %llu %llu", (unsigned long long)fr[0],
	      (unsigned long long)fr[1]);
	tally_scan_fraction(TALLY_UWORD_MAX, 0, 200, fr, &d);
	CHECK(fr[0] == 299 && fr[1] == 0, "max, 0: %llu %llu", (unsigned long long)fr[0],
	      (unsigned long long)fr[1]);
}

int main(void)
{
	check_signed_wrap();
	check_sequences();
	check_fraction();
	return harness_exit("cost_wrap");
}
