/*
 * Unit tests for tally/vec.h: vmstat fold rules with exact values.
 *
 * Each test pins its thread to the CPU it runs on, so every update lands in
 * one per-CPU slot and the fold points are exact. The rules (t = threshold):
 *   mod(d): x = diff + d; if |x| > t: global += x, diff = 0; else diff = x
 *   inc:    v = diff + 1; if v > t:   global += v + t/2, diff = -t/2
 *   dec:    v = diff - 1; if v < -t:  global += v - t/2, diff = t/2
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <string.h>
#include <tally/vec.h>

#define U(x) ((tally_uword)(x))
#define B TALLY_MONOTONIC_BIAS

static void pin(void)
{
	cr_assert_geq(harness_pin_here(), 0, "cannot pin the test thread");
}

/* The global of item as a signed value (monotonic read without the bias). */
static tally_sword global(const struct tally_vec *v, unsigned item)
{
	return tally__to_signed(tally_vec_read_monotonic(v, item) - B);
}

/* All three readers of one item at once. */
static void expect(const struct tally_vec *v, unsigned item, tally_sword g, tally_sword exact)
{
	cr_assert_eq(global(v, item), g, "item %u: global %lld, expected %lld", item,
		     (long long)global(v, item), (long long)g);
	cr_assert_eq(tally_vec_read_monotonic(v, item), U(g) + B);
	cr_assert_eq(tally_vec_read(v, item), g < 0 ? 0 : U(g));
	cr_assert_eq(tally_vec_read_exact(v, item), exact, "item %u: exact %lld, expected %lld",
		     item, (long long)tally_vec_read_exact(v, item), (long long)exact);
}

Test(vec, init_all_zero)
{
	struct tally_vec v;
	cr_assert_eq(tally_vec_init(&v, 5, 10), 0);
	cr_assert_eq(tally_vec_threshold(&v), 10);
	for (unsigned i = 0; i < 5; i++)
		expect(&v, i, 0, 0);
	tally_vec_destroy(&v);
}

Test(vec, mod_no_overstep)
{
	struct tally_vec v;
	pin();
	cr_assert_eq(tally_vec_init(&v, 2, 10), 0);
	cr_assert_eq(tally_vec_mod(&v, 0, 10), 0); /* |10| <= 10: stays */
	expect(&v, 0, 0, 10);
	cr_assert_eq(tally_vec_mod(&v, 0, 1), 0); /* 11 > 10: fold, diff 0 */
	expect(&v, 0, 11, 11);
	cr_assert_eq(tally_vec_mod(&v, 0, 3), 0);
	expect(&v, 0, 11, 14);
	cr_assert_eq(tally_vec_mod(&v, 0, -14), 0); /* x = -11: fold */
	expect(&v, 0, 0, 0);
	cr_assert_eq(tally_vec_mod(&v, 0, -10), 0); /* stays */
	expect(&v, 0, 0, -10);
	cr_assert_eq(tally_vec_mod(&v, 0, -1), 0); /* -11: fold; a negative global */
	expect(&v, 0, -11, -11);
	cr_assert_eq(tally_vec_read(&v, 0), 0);
	cr_assert_eq(tally_vec_read_monotonic(&v, 0), TALLY_UWORD_MAX - 10u + B);
	/* A single big mod folds at once, with no overstep. */
	cr_assert_eq(tally_vec_mod(&v, 0, 1000), 0);
	expect(&v, 0, 989, 989);
	cr_assert_eq(tally_vec_mod(&v, 0, 5), 0);
	cr_assert_eq(tally_vec_mod(&v, 0, -5), 0); /* back to diff 0, no fold */
	expect(&v, 0, 989, 989);
	cr_assert_eq(tally_vec_mod(&v, 0, 0), 0);
	expect(&v, 0, 989, 989);
	expect(&v, 1, 0, 0);
	tally_vec_destroy(&v);
}

Test(vec, inc_overstep)
{
	struct tally_vec v;
	pin();
	cr_assert_eq(tally_vec_init(&v, 1, 10), 0);
	/* Fold at 11 (global 11 + 5 = 16, diff -5), then every 16 incs. */
	for (int n = 1; n <= 60; n++) {
		cr_assert_eq(tally_vec_inc(&v, 0), 0);
		expect(&v, 0, n < 11 ? 0 : 16 * ((n - 11) / 16 + 1), n);
	}
	/* Spot checks of the sequence above, written out. */
	expect(&v, 0, 64, 60); /* folds at 11, 27, 43, 59 */
	tally_vec_destroy(&v);

	cr_assert_eq(tally_vec_init(&v, 1, 10), 0);
	for (int n = 0; n < 10; n++)
		tally_vec_inc(&v, 0);
	expect(&v, 0, 0, 10);
	tally_vec_inc(&v, 0);
	expect(&v, 0, 16, 11);
	for (int n = 0; n < 15; n++)
		tally_vec_inc(&v, 0);
	expect(&v, 0, 16, 26);
	tally_vec_inc(&v, 0);
	expect(&v, 0, 32, 27);
	tally_vec_destroy(&v);
}

Test(vec, dec_overstep)
{
	struct tally_vec v;
	pin();
	cr_assert_eq(tally_vec_init(&v, 1, 10), 0);
	for (int n = 1; n <= 60; n++) {
		cr_assert_eq(tally_vec_dec(&v, 0), 0);
		expect(&v, 0, n < 11 ? 0 : -16 * ((n - 11) / 16 + 1), -n);
	}
	cr_assert_eq(tally_vec_read(&v, 0), 0);
	cr_assert_eq(tally_vec_read_monotonic(&v, 0), U(-64) + B);
	tally_vec_destroy(&v);
}

Test(vec, odd_threshold_overstep)
{
	struct tally_vec v;
	pin();
	cr_assert_eq(tally_vec_init(&v, 1, 7), 0);
	/* t/2 = 3: fold at 8 (global 11, diff -3), then every 11. */
	for (int n = 1; n <= 40; n++) {
		tally_vec_inc(&v, 0);
		expect(&v, 0, n < 8 ? 0 : 11 * ((n - 8) / 11 + 1), n);
	}
	expect(&v, 0, 33, 40); /* folds at 8, 19, 30 */
	tally_vec_destroy(&v);

	/* Threshold 1: t/2 = 0, inc folds every second step. */
	cr_assert_eq(tally_vec_init(&v, 1, 1), 0);
	tally_vec_inc(&v, 0);
	expect(&v, 0, 0, 1);
	tally_vec_inc(&v, 0);
	expect(&v, 0, 2, 2);
	tally_vec_dec(&v, 0);
	expect(&v, 0, 2, 1);
	tally_vec_dec(&v, 0); /* v = -2 < -1: global += -2, diff 0 */
	expect(&v, 0, 0, 0);
	tally_vec_dec(&v, 0);
	expect(&v, 0, 0, -1);
	tally_vec_destroy(&v);
}

Test(vec, inc_then_dec_then_mod)
{
	struct tally_vec v;
	pin();
	cr_assert_eq(tally_vec_init(&v, 1, 10), 0);
	for (int n = 0; n < 11; n++)
		tally_vec_inc(&v, 0);
	expect(&v, 0, 16, 11); /* diff -5 */
	for (int n = 0; n < 5; n++)
		tally_vec_dec(&v, 0);
	expect(&v, 0, 16, 6); /* diff -10 */
	tally_vec_dec(&v, 0); /* v = -11: global += -11 - 5, diff 5 */
	expect(&v, 0, 0, 5);
	tally_vec_mod(&v, 0, 5); /* x = 10: stays */
	expect(&v, 0, 0, 10);
	tally_vec_mod(&v, 0, -21); /* x = -11: fold, diff 0 */
	expect(&v, 0, -11, -11);
	tally_vec_inc(&v, 0);
	expect(&v, 0, -11, -10);
	tally_vec_destroy(&v);
}

/* A model of the rules, independent of the implementation. */
struct model {
	long long global, diff, t;
};

static void model_mod(struct model *m, long long d)
{
	long long x = m->diff + d;
	if (x > m->t || x < -m->t) {
		m->global += x;
		m->diff = 0;
	} else {
		m->diff = x;
	}
}

static void model_inc(struct model *m)
{
	long long x = m->diff + 1;
	if (x > m->t) {
		m->global += x + m->t / 2;
		m->diff = -(m->t / 2);
	} else {
		m->diff = x;
	}
}

static void model_dec(struct model *m)
{
	long long x = m->diff - 1;
	if (x < -m->t) {
		m->global += x - m->t / 2;
		m->diff = m->t / 2;
	} else {
		m->diff = x;
	}
}

Test(vec, random_ops_match_model)
{
	static const int thresholds[] = {1, 2, 7, 10, 125, 1000};
	for (unsigned k = 0; k < sizeof(thresholds) / sizeof(thresholds[0]); k++) {
		struct tally_vec v;
		struct model m[3];
		struct harness_rng rng = {k + 1};
		int t = thresholds[k];
		pin();
		cr_assert_eq(tally_vec_init(&v, 3, t), 0);
		memset(m, 0, sizeof(m));
		for (unsigned i = 0; i < 3; i++)
			m[i].t = t;
		for (int n = 0; n < 20000; n++) {
			unsigned item = (unsigned)harness_range(&rng, 0, 2);
			switch (harness_range(&rng, 0, 3)) {
			case 0:
				cr_assert_eq(tally_vec_inc(&v, item), 0);
				model_inc(&m[item]);
				break;
			case 1:
				cr_assert_eq(tally_vec_dec(&v, item), 0);
				model_dec(&m[item]);
				break;
			default: {
				long long d = harness_range(&rng, -2 * t, 2 * t);
				cr_assert_eq(tally_vec_mod(&v, item, (tally_sword)d), 0);
				model_mod(&m[item], d);
			}
			}
			cr_assert_eq(global(&v, item), (tally_sword)m[item].global,
				     "t %d op %d item %u", t, n, item);
			cr_assert_eq(tally_vec_read_exact(&v, item),
				     (tally_sword)(m[item].global + m[item].diff));
		}
		tally_vec_fold(&v);
		for (unsigned i = 0; i < 3; i++) {
			long long exact = m[i].global + m[i].diff;
			expect(&v, i, (tally_sword)exact, (tally_sword)exact);
		}
		tally_vec_destroy(&v);
	}
}

Test(vec, fold)
{
	struct tally_vec v;
	pin();
	cr_assert_eq(tally_vec_init(&v, 4, 10), 0);
	tally_vec_mod(&v, 0, 5);
	tally_vec_mod(&v, 1, -7);
	for (int n = 0; n < 3; n++)
		tally_vec_inc(&v, 2);
	expect(&v, 0, 0, 5);
	expect(&v, 1, 0, -7);
	expect(&v, 2, 0, 3);
	tally_vec_fold(&v);
	expect(&v, 0, 5, 5);
	expect(&v, 1, -7, -7);
	expect(&v, 2, 3, 3);
	expect(&v, 3, 0, 0);
	tally_vec_fold(&v); /* nothing left to fold */
	expect(&v, 0, 5, 5);
	expect(&v, 1, -7, -7);
	/* After an overstep the global is ahead; fold brings it back. */
	for (int n = 0; n < 11; n++)
		tally_vec_inc(&v, 3);
	expect(&v, 3, 16, 11);
	tally_vec_fold(&v);
	expect(&v, 3, 11, 11);
	/* The slot's diff restarts at 0: 10 more incs stay local. */
	for (int n = 0; n < 10; n++)
		tally_vec_inc(&v, 3);
	expect(&v, 3, 11, 21);
	tally_vec_inc(&v, 3);
	expect(&v, 3, 11 + 16, 22);
	tally_vec_destroy(&v);
}

/*
 * A fold check that runs late (its update landed, then the thread was
 * preempted while others updated and folded the same slot) must not move
 * the slot's base backwards: the global of an item that only grows must
 * not drop. The interleaving is replayed with the private calls.
 */
Test(vec, late_fold_check_does_not_go_back)
{
	struct tally_vec v;
	unsigned s;
	size_t off = 1 * sizeof(struct tally__vec_pcpu) + offsetof(struct tally__vec_pcpu, w);
	pin();
	cr_assert_eq(tally_vec_init(&v, 2, 10), 0);
	/* Thread A: mod(1, +1) lands; A stops before its fold check. */
	tally__pcpu_add(&v.tally__pcpu, off, 1, &s);
	/* Thread B, same CPU: 100 mods of +1 fold at x = 11: the global
	 * gets 11 at a time (w = 11, 22, ..., 99). */
	for (int n = 0; n < 100; n++)
		tally_vec_mod(&v, 1, 1);
	expect(&v, 1, 99, 101);
	/* A resumes: mod's check, then inc's and dec's. */
	tally__vec_fold_slot(&v, s, 1, TALLY__FOLD_PAST);
	expect(&v, 1, 99, 101);
	tally__vec_fold_slot(&v, s, 1, TALLY__FOLD_UP);
	expect(&v, 1, 99, 101);
	tally__vec_fold_slot(&v, s, 1, TALLY__FOLD_DOWN);
	expect(&v, 1, 99, 101);
	tally_vec_fold(&v);
	expect(&v, 1, 101, 101);
	expect(&v, 0, 0, 0);
	tally_vec_destroy(&v);
}

/*
 * The O(1) readers are off the exact value in either direction: a mod
 * run leaves the global behind (the diff not yet folded), an inc's
 * overstep puts it ahead by t/2 (dec's behind by as much), and the bound
 * (t + P - 1 per slot, P the largest power of two <= t) covers both.
 */
Test(vec, o1_readers_on_either_side_of_exact)
{
	struct tally_vec v;
	pin();
	cr_assert_eq(tally_vec_init(&v, 3, 10), 0);
	for (int n = 0; n < 11; n++)
		tally_vec_inc(&v, 0);
	/* Ahead: reads 16, exact 11. */
	expect(&v, 0, 16, 11);
	cr_assert_gt(tally_vec_read_monotonic(&v, 0) - B, U(tally_vec_read_exact(&v, 0)));
	cr_assert_eq(tally_vec_read_monotonic(&v, 0) - B - U(tally_vec_sum(&v, 0)), 5);
	/* Behind: ten mods of +1 are all in the diff. */
	for (int n = 0; n < 10; n++)
		tally_vec_mod(&v, 1, 1);
	expect(&v, 1, 0, 10);
	/* dec's overstep: the global below the exact value by t/2. */
	for (int n = 0; n < 11; n++)
		tally_vec_dec(&v, 2);
	expect(&v, 2, -16, -11);
	tally_vec_destroy(&v);
}

/* The carry check: an add that moves its word across a multiple of P, the
 * largest power of two <= t, always carries (and fences before its fold
 * check); one that does not carry stays in its P-aligned block. Checked
 * for every threshold up to 300 and every add of up to 2t from words
 * around 0 (both signs) and around 2^(W-1). */
Test(vec, carry_check)
{
	static const tally_uword around[] = {0, (tally_uword)1 << (TALLY_WORD_BITS - 1)};
	for (tally_sword t = 1; t <= 300; t++) {
		tally_uword p = 1;
		while (p * 2 <= (tally_uword)t)
			p *= 2;
		for (unsigned a = 0; a < 2; a++)
			for (tally_sword o = -600; o <= 600; o += 7)
				for (tally_sword d = -2 * t; d <= 2 * t; d++) {
					tally_uword old = around[a] + U(o), nv = old + U(d);
					if ((old & ~(p - 1)) != (nv & ~(p - 1)))
						cr_assert(tally__vec_carried(nv, U(d), t),
							  "t %lld: %lld + %lld crosses P %llu",
							  (long long)t, (long long)o, (long long)d,
							  (unsigned long long)p);
				}
	}
	/* Unit steps carry exactly at the multiples of P: t = 10, P = 8. */
	cr_assert(tally__vec_carried(8, 1, 10));
	cr_assert(!tally__vec_carried(9, 1, 10));
	cr_assert(tally__vec_carried(16, 1, 10));
	cr_assert(tally__vec_carried(U(-1), U(-1), 10)); /* 0 -> -1 */
	cr_assert(!tally__vec_carried(U(-2), U(-1), 10));
	/* An item that never folds: only a change of the top bit. */
	cr_assert(!tally__vec_carried(1000, 1000, TALLY_VEC_EXACT));
}

Test(vec, several_cpus)
{
	struct tally_vec v;
	int cpus[CPU_SETSIZE];
	int k = harness_allowed_cpus(cpus, CPU_SETSIZE);
	cr_assert_eq(tally_vec_init(&v, 2, 10), 0);
	for (int i = 0; i < k; i++) {
		cr_assert_eq(harness_pin(cpus[i]), 0);
		tally_vec_mod(&v, 0, 10);
		tally_vec_mod(&v, 1, -3);
		expect(&v, 0, 0, 10 * (i + 1));
		expect(&v, 1, 0, -3 * (i + 1));
	}
	tally_vec_fold(&v);
	expect(&v, 0, 10 * k, 10 * k);
	expect(&v, 1, -3 * k, -3 * k);
	tally_vec_destroy(&v);
}

static int fls_ref(unsigned long long x)
{
	int r = 0;
	while (x) {
		r++;
		x >>= 1;
	}
	return r;
}

/* calculate_normal_threshold(): 2 * fls(cpus) * (1 + fls(mem / 128 MiB)), at
 * most 125. */
static int threshold_ref(unsigned long long cpus, unsigned long long mem_bytes)
{
	int t = 2 * fls_ref(cpus) * (1 + fls_ref(mem_bytes >> 27));
	return t > 125 ? 125 : t;
}

Test(vec, default_threshold)
{
	struct tally_vec v;
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	unsigned long long mem = 0;
	int t;
	/* The formula, by hand. */
	cr_assert_eq(threshold_ref(2, 8ull << 30), 32);     /* 2 * 2 * (1 + 7) */
	cr_assert_eq(threshold_ref(4, 2ull << 30), 36);     /* 2 * 3 * (1 + 5) */
	cr_assert_eq(threshold_ref(1, 100ull << 20), 2);    /* 2 * 1 * (1 + 0) */
	cr_assert_eq(threshold_ref(16, 900ull << 20), 40);  /* 2 * 5 * (1 + 3) */
	cr_assert_eq(threshold_ref(64, 256ull << 30), 125); /* 2 * 7 * 13, capped */

	if (pages > 0 && psz > 0)
		mem = (unsigned long long)pages * (unsigned long long)psz;
	t = threshold_ref(tally__nr_cpu_slots(), mem);
	cr_assert_eq(tally_vec_default_threshold(), t);
	cr_assert_geq(t, 2);

	pin();
	cr_assert_eq(tally_vec_init(&v, 1, 0), 0);
	cr_assert_eq(tally_vec_threshold(&v), t);
	tally_vec_mod(&v, 0, t);
	expect(&v, 0, 0, t);
	tally_vec_mod(&v, 0, 1);
	expect(&v, 0, t + 1, t + 1);
	tally_vec_destroy(&v);
}

Test(vec, limits_accepted)
{
	struct tally_vec v;
	pin();
	cr_assert_eq(tally_vec_init(&v, TALLY_VEC_ITEMS_MAX, TALLY_VEC_THRESHOLD_MAX), 0);
	cr_assert_eq(tally_vec_threshold(&v), TALLY_VEC_THRESHOLD_MAX);
	cr_assert_eq(tally_vec_mod(&v, TALLY_VEC_ITEMS_MAX - 1, TALLY_VEC_THRESHOLD_MAX), 0);
	expect(&v, TALLY_VEC_ITEMS_MAX - 1, 0, TALLY_VEC_THRESHOLD_MAX);
	cr_assert_eq(tally_vec_inc(&v, TALLY_VEC_ITEMS_MAX - 1), 0);
	expect(&v, TALLY_VEC_ITEMS_MAX - 1, TALLY_VEC_THRESHOLD_MAX + 1 + TALLY_VEC_THRESHOLD_MAX / 2,
	       TALLY_VEC_THRESHOLD_MAX + 1);
	tally_vec_destroy(&v);
	cr_assert_eq(tally_vec_init(&v, 1, 1), 0);
	tally_vec_destroy(&v);
	tally_vec_destroy(&v); /* a second destroy is harmless */
}

/* ---- bad input ------------------------------------------------------------ */

Test(vec, init_rejects_bad_args)
{
	struct tally_vec v, copy;
	memset(&v, 0x5a, sizeof(v));
	memcpy(&copy, &v, sizeof(v));
	cr_assert_eq(tally_vec_init(NULL, 1, 0), -EINVAL);
	cr_assert_eq(tally_vec_init(&v, 0, 0), -EINVAL);
	cr_assert_eq(tally_vec_init(&v, TALLY_VEC_ITEMS_MAX + 1, 0), -EINVAL);
	cr_assert_eq(tally_vec_init(&v, UINT_MAX, 0), -EINVAL);
	cr_assert_eq(tally_vec_init(&v, 1, -1), -EINVAL);
	cr_assert_eq(tally_vec_init(&v, 1, INT_MIN), -EINVAL);
	cr_assert_eq(tally_vec_init(&v, 1, TALLY_VEC_THRESHOLD_MAX + 1), -EINVAL);
	cr_assert_eq(tally_vec_init(&v, 1, INT_MAX), -EINVAL);
	cr_assert_eq(memcmp(&v, &copy, sizeof(v)), 0, "a rejected init wrote to v");
}

/* Snapshot of every reader of every item. */
struct snap {
	tally_uword read[3], mono[3];
	tally_sword exact[3];
};

static void take(const struct tally_vec *v, struct snap *s)
{
	for (unsigned i = 0; i < 3; i++) {
		s->read[i] = tally_vec_read(v, i);
		s->mono[i] = tally_vec_read_monotonic(v, i);
		s->exact[i] = tally_vec_read_exact(v, i);
	}
}

static void same(const struct tally_vec *v, const struct snap *before)
{
	struct snap now;
	take(v, &now);
	cr_assert_eq(memcmp(&now, before, sizeof(now)), 0, "a rejected call changed a count");
}

Test(vec, bad_item_and_null)
{
	static const unsigned bad[] = {3, 4, 1000, TALLY_VEC_ITEMS_MAX, UINT_MAX};
	struct tally_vec v;
	struct snap s;
	pin();
	cr_assert_eq(tally_vec_init(&v, 3, 10), 0);
	tally_vec_mod(&v, 0, 25);  /* global 25 */
	tally_vec_mod(&v, 1, -4);  /* diff -4 */
	tally_vec_inc(&v, 2);      /* diff 1 */
	expect(&v, 0, 25, 25);
	expect(&v, 1, 0, -4);
	expect(&v, 2, 0, 1);
	take(&v, &s);

	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		cr_assert_eq(tally_vec_mod(&v, bad[k], 100), -EINVAL);
		cr_assert_eq(tally_vec_mod(&v, bad[k], -100), -EINVAL);
		cr_assert_eq(tally_vec_inc(&v, bad[k]), -EINVAL);
		cr_assert_eq(tally_vec_dec(&v, bad[k]), -EINVAL);
		cr_assert_eq(tally_vec_read(&v, bad[k]), 0);
		cr_assert_eq(tally_vec_read_monotonic(&v, bad[k]), 0);
		cr_assert_eq(tally_vec_read_exact(&v, bad[k]), 0);
		same(&v, &s);
	}
	cr_assert_eq(tally_vec_mod(NULL, 0, 1), -EINVAL);
	cr_assert_eq(tally_vec_inc(NULL, 0), -EINVAL);
	cr_assert_eq(tally_vec_dec(NULL, 0), -EINVAL);
	cr_assert_eq(tally_vec_read(NULL, 0), 0);
	cr_assert_eq(tally_vec_read_monotonic(NULL, 0), 0);
	cr_assert_eq(tally_vec_read_exact(NULL, 0), 0);
	cr_assert_eq(tally_vec_threshold(NULL), 0);
	tally_vec_fold(NULL);
	tally_vec_destroy(NULL);
	same(&v, &s);

	/* A rejected init on a live vec leaves it alone. */
	cr_assert_eq(tally_vec_init(&v, 0, 10), -EINVAL);
	cr_assert_eq(tally_vec_init(&v, 3, -1), -EINVAL);
	cr_assert_eq(tally_vec_init(&v, 3, TALLY_VEC_THRESHOLD_MAX + 1), -EINVAL);
	same(&v, &s);
	cr_assert_eq(tally_vec_threshold(&v), 10);

	/* Diffs survived too: the next updates fold from where they were. */
	tally_vec_mod(&v, 1, -7); /* x = -11: fold */
	expect(&v, 1, -11, -11);
	for (int n = 0; n < 10; n++)
		tally_vec_inc(&v, 2); /* v = 11 on the last: fold 16 */
	expect(&v, 2, 16, 11);
	tally_vec_destroy(&v);
}
