/*
 * Unit tests for tally/vec.h beyond the vmstat rules (test_vec.c): options
 * (per-item thresholds, exact-only items and vecs, names), the unsigned
 * exact reader, snapshots, reset and multi-item updates. Exact values; the
 * test thread is pinned so every update lands in one per-CPU slot.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <string.h>
#include <tally/counter.h>
#include <tally/vec.h>

#define U(x) ((tally_uword)(x))
#define B TALLY_MONOTONIC_BIAS
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void pin(void)
{
	cr_assert_geq(harness_pin_here(), 0, "cannot pin the test thread");
}

/* The global of item (monotonic read without the bias). */
static tally_sword global(const struct tally_vec *v, unsigned item)
{
	return tally__to_signed(tally_vec_read_monotonic(v, item) - B);
}

/* Every reader of one item, with no reset: g the global, e the exact. */
static void expect(const struct tally_vec *v, unsigned item, tally_sword g, tally_sword e)
{
	tally_uword snap[64];
	cr_assert_eq(global(v, item), g, "item %u: global %lld, expected %lld", item,
		     (long long)global(v, item), (long long)g);
	cr_assert_eq(tally_vec_read(v, item), g < 0 ? 0 : U(g));
	cr_assert_eq(tally_vec_read_exact(v, item), e, "item %u: exact %lld, expected %lld",
		     item, (long long)tally_vec_read_exact(v, item), (long long)e);
	cr_assert_eq(tally_vec_sum(v, item), U(e));
	cr_assert_leq(tally_vec_nr_items(v), N_OF(snap));
	cr_assert_eq(tally_vec_snapshot(v, snap, N_OF(snap)), 0);
	cr_assert_eq(snap[item], U(e));
}

/* ---- options ---------------------------------------------------------- */

Test(vec_api, init_opts_like_init)
{
	struct tally_vec v;
	struct tally_vec_opts o = {3, 10, NULL, 0, NULL, NULL};
	pin();
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_assert_eq(tally_vec_nr_items(&v), 3);
	cr_assert_eq(tally_vec_threshold(&v), 10);
	for (unsigned i = 0; i < 3; i++) {
		cr_assert_eq(tally_vec_item_threshold(&v, i), 10);
		cr_assert_null(tally_vec_item_name(&v, i));
	}
	tally_vec_mod(&v, 1, 10);
	expect(&v, 1, 0, 10);
	tally_vec_mod(&v, 1, 1);
	expect(&v, 1, 11, 11);
	tally_vec_destroy(&v);

	o.threshold = 0; /* vmstat's default */
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_assert_eq(tally_vec_threshold(&v), tally_vec_default_threshold());
	cr_assert_eq(tally_vec_item_threshold(&v, 2), tally_vec_default_threshold());
	tally_vec_destroy(&v);
}

Test(vec_api, per_item_thresholds)
{
	static const int thr[4] = {0, 1000, TALLY_VEC_EXACT, 1};
	struct tally_vec v;
	struct tally_vec_opts o = {4, 10, thr, 0, NULL, NULL};
	pin();
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_assert_eq(tally_vec_item_threshold(&v, 0), 10); /* 0: the vec's */
	cr_assert_eq(tally_vec_item_threshold(&v, 1), 1000);
	cr_assert_eq(tally_vec_item_threshold(&v, 2), TALLY_VEC_EXACT);
	cr_assert_eq(tally_vec_item_threshold(&v, 3), 1);
	cr_assert_eq(tally_vec_threshold(&v), 10);

	/* Item 0 folds past 10, item 1 only past 1000. */
	tally_vec_mod(&v, 0, 11);
	expect(&v, 0, 11, 11);
	tally_vec_mod(&v, 1, 600);
	expect(&v, 1, 0, 600);
	tally_vec_mod(&v, 1, 400);
	expect(&v, 1, 0, 1000);
	tally_vec_mod(&v, 1, 1);
	expect(&v, 1, 1001, 1001);
	/* inc overstep uses the item's own threshold: t/2 = 500. */
	for (int n = 0; n < 1001; n++)
		tally_vec_inc(&v, 1);
	expect(&v, 1, 1001 + 1001 + 500, 2002);
	/* Item 3, threshold 1: inc folds every second step (t/2 = 0). */
	tally_vec_inc(&v, 3);
	expect(&v, 3, 0, 1);
	tally_vec_inc(&v, 3);
	expect(&v, 3, 2, 2);

	/* Item 2 never folds; its O(1) readers are exact. */
	for (int n = 0; n < 100; n++)
		tally_vec_mod(&v, 2, 16384);
	expect(&v, 2, 100 * 16384, 100 * 16384);
	tally_vec_mod(&v, 2, -100 * 16384 - 7);
	expect(&v, 2, -7, -7);
	cr_assert_eq(tally_vec_read(&v, 2), 0);
	cr_assert_eq(tally_vec_read_monotonic(&v, 2), U(-7) + B);
	/* Its base never moved: no fold happened. */
	cr_assert_eq(tally__vec_slot(&v, 0, 2)->base, 0);
	for (unsigned s = 0; s < tally__pcpu_slots(&v.tally__pcpu); s++)
		cr_assert_eq(tally__vec_slot(&v, s, 2)->base, 0);
	cr_assert_eq(v.tally__global[2], 0);
	tally_vec_fold(&v); /* leaves it alone */
	cr_assert_eq(v.tally__global[2], 0);
	expect(&v, 2, -7, -7);
	tally_vec_destroy(&v);
}

Test(vec_api, exact_only)
{
	struct tally_vec v;
	struct tally_vec_opts o = {3, 0, NULL, TALLY_VEC_EXACT_ONLY, NULL, NULL};
	pin();
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_assert_eq(tally_vec_threshold(&v), TALLY_VEC_EXACT);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(tally_vec_item_threshold(&v, i), TALLY_VEC_EXACT);
	for (int n = 1; n <= 300; n++) {
		tally_vec_inc(&v, 0);
		tally_vec_dec(&v, 1);
		tally_vec_mod(&v, 2, 4096);
		expect(&v, 0, n, n);
		expect(&v, 1, -n, -n);
		expect(&v, 2, 4096 * n, 4096 * n);
	}
	for (unsigned s = 0; s < tally__pcpu_slots(&v.tally__pcpu); s++)
		for (unsigned i = 0; i < 3; i++)
			cr_assert_eq(tally__vec_slot(&v, s, i)->base, 0, "a fold ran");
	tally_vec_fold(&v);
	expect(&v, 0, 300, 300);
	tally_vec_destroy(&v);
}

Test(vec_api, names_copied)
{
	char a[8] = "hits", c[8] = "bytes";
	const char *names[4] = {a, NULL, c, ""};
	struct tally_vec v;
	struct tally_vec_opts o = {4, 0, NULL, 0, names, NULL};
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	/* The caller's strings may change or go away after init. */
	strcpy(a, "XXXX");
	strcpy(c, "YYYYY");
	names[0] = "other";
	cr_assert_str_eq(tally_vec_item_name(&v, 0), "hits");
	cr_assert_null(tally_vec_item_name(&v, 1));
	cr_assert_str_eq(tally_vec_item_name(&v, 2), "bytes");
	cr_assert_str_eq(tally_vec_item_name(&v, 3), "");
	cr_assert_null(tally_vec_item_name(&v, 4));
	cr_assert_null(tally_vec_item_name(&v, UINT_MAX));
	cr_assert_null(tally_vec_item_name(NULL, 0));
	cr_assert_eq(tally_vec_nr_items(&v), 4);
	cr_assert_eq(tally_vec_nr_items(NULL), 0);
	tally_vec_destroy(&v);
	tally_vec_destroy(&v);
}

Test(vec_api, init_opts_rejects_bad_args)
{
	static const int bad_thr[][2] = {{-2, 0}, {0, TALLY_VEC_THRESHOLD_MAX + 1}, {INT_MIN, 1},
					 {1, INT_MAX}};
	static const int good_thr[2] = {TALLY_VEC_THRESHOLD_MAX, TALLY_VEC_EXACT};
	struct tally_vec v, copy;
	struct tally_vec_opts o;
	const struct tally_vec_opts ok = {2, 5, NULL, 0, NULL, NULL};
	memset(&v, 0x5a, sizeof(v));
	memcpy(&copy, &v, sizeof(v));

	cr_assert_eq(tally_vec_init_opts(&v, NULL), -EINVAL);
	cr_assert_eq(tally_vec_init_opts(NULL, &ok), -EINVAL);
	o = ok, o.nr_items = 0;
	cr_assert_eq(tally_vec_init_opts(&v, &o), -EINVAL);
	o = ok, o.nr_items = TALLY_VEC_ITEMS_MAX + 1;
	cr_assert_eq(tally_vec_init_opts(&v, &o), -EINVAL);
	o = ok, o.threshold = -1;
	cr_assert_eq(tally_vec_init_opts(&v, &o), -EINVAL);
	o = ok, o.threshold = TALLY_VEC_THRESHOLD_MAX + 1;
	cr_assert_eq(tally_vec_init_opts(&v, &o), -EINVAL);
	for (unsigned k = 0; k < N_OF(bad_thr); k++) {
		o = ok, o.thresholds = bad_thr[k];
		cr_assert_eq(tally_vec_init_opts(&v, &o), -EINVAL, "thresholds %u", k);
	}
	o = ok, o.flags = 0x4;
	cr_assert_eq(tally_vec_init_opts(&v, &o), -EINVAL);
	o = ok, o.flags = ~0u;
	cr_assert_eq(tally_vec_init_opts(&v, &o), -EINVAL);
	/* Exact-only contradicts any threshold. */
	o = ok, o.flags = TALLY_VEC_EXACT_ONLY;
	cr_assert_eq(tally_vec_init_opts(&v, &o), -EINVAL);
	o = ok, o.threshold = 0, o.thresholds = good_thr, o.flags = TALLY_VEC_EXACT_ONLY;
	cr_assert_eq(tally_vec_init_opts(&v, &o), -EINVAL);
	cr_assert_eq(memcmp(&v, &copy, sizeof(v)), 0, "a rejected init wrote to v");

	/* The limits themselves are accepted. */
	o = ok, o.thresholds = good_thr, o.flags = TALLY_VEC_MULTI;
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_assert_eq(tally_vec_item_threshold(&v, 0), TALLY_VEC_THRESHOLD_MAX);
	cr_assert_eq(tally_vec_item_threshold(&v, 1), TALLY_VEC_EXACT);
	tally_vec_destroy(&v);
}

/* ---- unsigned reader, snapshot ---------------------------------------- */

Test(vec_api, sum_is_modular_unsigned)
{
	struct tally_vec v;
	pin();
	cr_assert_eq(tally_vec_init(&v, 2, 10), 0);
	tally_vec_mod(&v, 0, -5);
	cr_assert_eq(tally_vec_sum(&v, 0), TALLY_UWORD_MAX - 4u);
	cr_assert_eq(tally_vec_read_exact(&v, 0), -5);
	/* An event count past TALLY_SWORD_MAX: the signed reader goes
	 * negative, the unsigned one stays right (until 2^W). */
	tally_vec_mod(&v, 1, TALLY_SWORD_MAX);
	tally_vec_mod(&v, 1, 7);
	cr_assert_eq(tally_vec_sum(&v, 1), U(TALLY_SWORD_MAX) + 7u);
	cr_assert_lt(tally_vec_read_exact(&v, 1), 0);
	tally_vec_mod(&v, 1, TALLY_SWORD_MAX);
	tally_vec_mod(&v, 1, 1); /* 2 * MAX + 8 = 2^W + 6 */
	cr_assert_eq(tally_vec_sum(&v, 1), 6);
	cr_assert_eq(tally_vec_sum(&v, 2), 0);
	cr_assert_eq(tally_vec_sum(NULL, 0), 0);
	tally_vec_destroy(&v);
}

static void snapshot_case(unsigned flags)
{
	struct tally_vec v;
	struct tally_vec_opts o = {5, (flags & TALLY_VEC_EXACT_ONLY) ? 0 : 10, NULL, flags, NULL, NULL};
	tally_uword out[8], want[5] = {0};
	int cpus[CPU_SETSIZE];
	int k = harness_allowed_cpus(cpus, CPU_SETSIZE);
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	/* Updates on every allowed CPU, some folded, some not. */
	for (int c = 0; c < k; c++) {
		cr_assert_eq(harness_pin(cpus[c]), 0);
		for (unsigned i = 0; i < 5; i++) {
			tally_sword d = (tally_sword)(i * 7) - 12 + c;
			cr_assert_eq(tally_vec_mod(&v, i, d), 0);
			want[i] += U(d);
		}
		tally_vec_inc(&v, 4);
		want[4] += 1;
	}
	for (unsigned j = 0; j < N_OF(out); j++)
		out[j] = 0xdead;
	cr_assert_eq(tally_vec_snapshot(&v, out, 5), 0);
	for (unsigned i = 0; i < 5; i++)
		cr_assert_eq(out[i], want[i], "item %u", i);
	cr_assert_eq(out[5], 0xdead, "wrote past nr_items");
	/* Bigger buffers are fine; only nr_items entries are written. */
	cr_assert_eq(tally_vec_snapshot(&v, out, 8), 0);
	cr_assert_eq(out[5], 0xdead);
	/* Bad input: out untouched. */
	for (unsigned j = 0; j < N_OF(out); j++)
		out[j] = 0xbeef;
	cr_assert_eq(tally_vec_snapshot(&v, out, 4), -EINVAL);
	cr_assert_eq(tally_vec_snapshot(&v, out, 0), -EINVAL);
	cr_assert_eq(tally_vec_snapshot(&v, NULL, 5), -EINVAL);
	cr_assert_eq(tally_vec_snapshot(NULL, out, 5), -EINVAL);
	cr_assert_eq(tally_vec_snapshot_since_reset(&v, out, 4), -EINVAL);
	cr_assert_eq(tally_vec_snapshot_since_reset(&v, NULL, 5), -EINVAL);
	cr_assert_eq(tally_vec_snapshot_since_reset(NULL, out, 5), -EINVAL);
	for (unsigned j = 0; j < N_OF(out); j++)
		cr_assert_eq(out[j], 0xbeef);
	/* Folding changes no exact value. */
	tally_vec_fold(&v);
	cr_assert_eq(tally_vec_snapshot(&v, out, 5), 0);
	for (unsigned i = 0; i < 5; i++) {
		cr_assert_eq(out[i], want[i]);
		cr_assert_eq(tally_vec_sum(&v, i), want[i]);
		cr_assert_eq(tally_vec_read_monotonic(&v, i), want[i] + B);
	}
	tally_vec_destroy(&v);
}

Test(vec_api, snapshot_every_cpu)
{
	snapshot_case(0);
}

Test(vec_api, snapshot_every_cpu_multi)
{
	snapshot_case(TALLY_VEC_MULTI);
}

Test(vec_api, snapshot_exact_only)
{
	snapshot_case(TALLY_VEC_EXACT_ONLY);
}

/* ---- reset ------------------------------------------------------------ */

static void reset_case(unsigned flags)
{
	struct tally_vec v;
	struct tally_vec_opts o = {3, (flags & TALLY_VEC_EXACT_ONLY) ? 0 : 10, NULL, flags, NULL, NULL};
	tally_uword raw[3], since[3];
	pin();
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	tally_vec_mod(&v, 0, 25); /* folded: global 25 */
	tally_vec_mod(&v, 1, -4); /* diff -4 */
	tally_vec_mod(&v, 2, 9);
	cr_assert_eq(tally_vec_reset(&v), 0);
	for (unsigned i = 0; i < 3; i++) {
		cr_assert_eq(tally_vec_read_exact(&v, i), 0);
		cr_assert_eq(tally_vec_sum(&v, i), 0);
	}
	/* The clamped global, minus the baseline: 25 - 25, 0 - (-4), 0 - 9. */
	if (!(flags & TALLY_VEC_EXACT_ONLY)) {
		cr_assert_eq(tally_vec_read(&v, 0), 0);
		cr_assert_eq(tally_vec_read(&v, 1), 4);
		cr_assert_eq(tally_vec_read(&v, 2), 0);
	} else {
		for (unsigned i = 0; i < 3; i++)
			cr_assert_eq(tally_vec_read(&v, i), 0);
	}
	/* Raw readers do not move. */
	cr_assert_eq(tally_vec_snapshot(&v, raw, 3), 0);
	cr_assert_eq(raw[0], 25);
	cr_assert_eq(raw[1], U(-4));
	cr_assert_eq(raw[2], 9);
	cr_assert_eq(tally_vec_snapshot_since_reset(&v, since, 3), 0);
	cr_assert_eq(since[0], 0);
	cr_assert_eq(since[1], 0);
	cr_assert_eq(since[2], 0);
	if (!(flags & TALLY_VEC_EXACT_ONLY))
		cr_assert_eq(tally_vec_read_monotonic(&v, 0), 25 + B);

	/* Updates after the reset count from 0. */
	tally_vec_mod(&v, 0, 3);
	tally_vec_mod(&v, 1, 4);
	tally_vec_dec(&v, 2);
	cr_assert_eq(tally_vec_read_exact(&v, 0), 3);
	cr_assert_eq(tally_vec_read_exact(&v, 1), 4);
	cr_assert_eq(tally_vec_read_exact(&v, 2), -1);
	cr_assert_eq(tally_vec_sum(&v, 2), TALLY_UWORD_MAX);
	cr_assert_eq(tally_vec_snapshot_since_reset(&v, since, 3), 0);
	cr_assert_eq(since[0], 3);
	cr_assert_eq(since[1], 4);
	cr_assert_eq(since[2], U(-1));
	cr_assert_eq(tally_vec_snapshot(&v, raw, 3), 0);
	cr_assert_eq(raw[0], 28);
	cr_assert_eq(raw[1], 0);
	cr_assert_eq(raw[2], 8);
	tally_vec_fold(&v);
	cr_assert_eq(tally_vec_read(&v, 0), 3);
	cr_assert_eq(tally_vec_read(&v, 1), 4);
	cr_assert_eq(tally_vec_read(&v, 2), 0); /* -1 clamped */

	/* One item alone. */
	cr_assert_eq(tally_vec_reset_item(&v, 1), 0);
	cr_assert_eq(tally_vec_read_exact(&v, 0), 3);
	cr_assert_eq(tally_vec_read_exact(&v, 1), 0);
	cr_assert_eq(tally_vec_read_exact(&v, 2), -1);
	/* Bad input changes nothing. */
	cr_assert_eq(tally_vec_reset_item(&v, 3), -EINVAL);
	cr_assert_eq(tally_vec_reset_item(&v, UINT_MAX), -EINVAL);
	cr_assert_eq(tally_vec_reset_item(NULL, 0), -EINVAL);
	cr_assert_eq(tally_vec_reset(NULL), -EINVAL);
	cr_assert_eq(tally_vec_read_exact(&v, 0), 3);
	cr_assert_eq(tally_vec_read_exact(&v, 2), -1);
	/* A second reset is from the current values. */
	cr_assert_eq(tally_vec_reset(&v), 0);
	tally_vec_mod(&v, 2, 2);
	cr_assert_eq(tally_vec_read_exact(&v, 2), 2);
	cr_assert_eq(tally_vec_read_exact(&v, 0), 0);
	tally_vec_destroy(&v);
}

Test(vec_api, reset)
{
	reset_case(0);
}

Test(vec_api, reset_multi)
{
	reset_case(TALLY_VEC_MULTI);
}

Test(vec_api, reset_exact_only)
{
	reset_case(TALLY_VEC_EXACT_ONLY);
}

/* ---- gauges, hidden items, renaming ------------------------------------ */

/* A gauge keeps its level across resets; counters start again from 0. The
 * README's CURR_BYTES: after a reset and an eviction, the old code read
 * 2^64 - 4096 (a reset had made the level 0 before the eviction). */
static void gauge_case(unsigned flags)
{
	enum { GETS, CURR_BYTES, CONNS, NR };
	static const unsigned char fl[NR] = {0, TALLY_VEC_ITEM_GAUGE,
					     TALLY_VEC_ITEM_GAUGE | TALLY_VEC_ITEM_HIDDEN};
	struct tally_vec v;
	struct tally_vec_opts o = {.nr_items = NR, .threshold = (flags & TALLY_VEC_EXACT_ONLY) ? 0 : 10,
				   .flags = flags, .item_flags = fl};
	struct tally_vec_delta d[2] = {{GETS, 1}, {CURR_BYTES, 8192}};
	tally_uword since[NR], raw[NR];
	tally_sword sg[NR + 1];
	pin();
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	/* A TALLY_VEC_MULTI vec: every item takes part. */
	unsigned m = (flags & TALLY_VEC_MULTI) ? TALLY_VEC_ITEM_MULTI : 0;
	cr_assert_eq(tally_vec_item_flags(&v, GETS), m);
	cr_assert_eq(tally_vec_item_flags(&v, CURR_BYTES), TALLY_VEC_ITEM_GAUGE | m);
	cr_assert_eq(tally_vec_item_flags(&v, CONNS),
		     TALLY_VEC_ITEM_GAUGE | TALLY_VEC_ITEM_HIDDEN | m);
	cr_assert_eq(tally_vec_item_flags(&v, NR), 0);
	cr_assert_eq(tally_vec_item_flags(NULL, 0), 0);
	if (flags & TALLY_VEC_MULTI)
		cr_assert_eq(tally_vec_mod_multi(&v, d, 2), 0);
	else {
		tally_vec_inc(&v, GETS);
		tally_vec_mod(&v, CURR_BYTES, 8192);
	}
	tally_vec_mod(&v, CURR_BYTES, 4096);
	tally_vec_inc(&v, CONNS);
	tally_vec_inc(&v, CONNS);
	cr_assert_eq(tally_vec_reset(&v), 0);
	/* "stats reset": the counter is 0, the gauges keep their levels. */
	cr_assert_eq(tally_vec_sum(&v, GETS), 0);
	cr_assert_eq(tally_vec_sum(&v, CURR_BYTES), 12288);
	cr_assert_eq(tally_vec_read_exact(&v, CONNS), 2);
	/* An eviction of 16384 bytes and three closes: below zero, signed. */
	tally_vec_mod(&v, CURR_BYTES, -16384);
	for (int k = 0; k < 3; k++)
		tally_vec_dec(&v, CONNS);
	tally_vec_inc(&v, GETS);
	cr_assert_eq(tally_vec_read_exact(&v, CURR_BYTES), -4096);
	cr_assert_eq(tally_vec_read_exact(&v, CONNS), -1);
	cr_assert_eq(tally_vec_snapshot_since_reset(&v, since, NR), 0);
	cr_assert_eq(since[GETS], 1);
	cr_assert_eq(since[CURR_BYTES], U(-4096));
	cr_assert_eq(since[CONNS], U(-1));
	memset(sg, 0x5a, sizeof(sg));
	cr_assert_eq(tally_vec_snapshot_signed(&v, sg, NR + 1), 0);
	cr_assert_eq(sg[GETS], 1);
	cr_assert_eq(sg[CURR_BYTES], -4096);
	cr_assert_eq(sg[CONNS], -1);
	cr_assert_eq(sg[NR], (tally_sword)U(0x5a5a5a5a5a5a5a5aull), "wrote past nr_items");
	/* Raw values: a gauge's raw value is its level. */
	cr_assert_eq(tally_vec_snapshot(&v, raw, NR), 0);
	cr_assert_eq(raw[GETS], 2);
	cr_assert_eq(raw[CURR_BYTES], U(-4096));
	/* A second reset: still the level. reset_item refuses a gauge. */
	cr_assert_eq(tally_vec_reset(&v), 0);
	cr_assert_eq(tally_vec_read_exact(&v, CURR_BYTES), -4096);
	cr_assert_eq(tally_vec_sum(&v, GETS), 0);
	cr_assert_eq(tally_vec_reset_item(&v, CURR_BYTES), -EINVAL);
	cr_assert_eq(tally_vec_read_exact(&v, CURR_BYTES), -4096);
	tally_vec_inc(&v, GETS);
	cr_assert_eq(tally_vec_reset_item(&v, GETS), 0);
	cr_assert_eq(tally_vec_sum(&v, GETS), 0);
	tally_vec_fold(&v);
	if (!(flags & TALLY_VEC_EXACT_ONLY))
		cr_assert_eq(tally_vec_read(&v, CONNS), 0); /* -1, clamped */
	cr_assert_eq(tally_vec_read_exact(&v, CONNS), -1);
	/* Bad input. */
	cr_assert_eq(tally_vec_snapshot_signed(NULL, sg, NR), -EINVAL);
	cr_assert_eq(tally_vec_snapshot_signed(&v, NULL, NR), -EINVAL);
	sg[0] = 77;
	cr_assert_eq(tally_vec_snapshot_signed(&v, sg, NR - 1), -EINVAL);
	cr_assert_eq(sg[0], 77, "out written on -EINVAL");
	tally_vec_destroy(&v);
}

Test(vec_api, gauges_survive_reset)
{
	gauge_case(0);
}

Test(vec_api, gauges_survive_reset_multi)
{
	gauge_case(TALLY_VEC_MULTI);
}

Test(vec_api, gauges_survive_reset_exact_only)
{
	gauge_case(TALLY_VEC_EXACT_ONLY);
}

Test(vec_api, item_flags_rejected)
{
	static const unsigned char bad[][2] = {{0, 0x8}, {0x80, 0}, {0xff, 1}};
	struct tally_vec v, copy;
	memset(&v, 0x5a, sizeof(v));
	memcpy(&copy, &v, sizeof(v));
	for (unsigned k = 0; k < N_OF(bad); k++) {
		struct tally_vec_opts o = {.nr_items = 2, .item_flags = bad[k]};
		cr_assert_eq(tally_vec_init_opts(&v, &o), -EINVAL, "flags %u", k);
		cr_assert_eq(memcmp(&v, &copy, sizeof(v)), 0, "v changed on -EINVAL");
	}
}

Test(vec_api, set_item_name)
{
	const char *names[3] = {"cmd_get", "response_obj_count", NULL};
	char mine[32] = "response_objs";
	struct tally_vec v, w;
	struct tally_vec_opts o = {.nr_items = 3, .names = names};
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_assert_eq(tally_vec_set_item_name(&v, 1, mine), 0);
	strcpy(mine, "XXXX"); /* copied */
	cr_assert_str_eq(tally_vec_item_name(&v, 0), "cmd_get");
	cr_assert_str_eq(tally_vec_item_name(&v, 1), "response_objs");
	cr_assert_null(tally_vec_item_name(&v, 2));
	cr_assert_eq(tally_vec_set_item_name(&v, 2, "slab_get_hits{class=\"1\"}"), 0);
	cr_assert_str_eq(tally_vec_item_name(&v, 2), "slab_get_hits{class=\"1\"}");
	cr_assert_eq(tally_vec_set_item_name(&v, 0, NULL), 0);
	cr_assert_null(tally_vec_item_name(&v, 0));
	cr_assert_str_eq(tally_vec_item_name(&v, 1), "response_objs");
	/* Bad input changes nothing. */
	cr_assert_eq(tally_vec_set_item_name(&v, 3, "x"), -EINVAL);
	cr_assert_eq(tally_vec_set_item_name(&v, UINT_MAX, "x"), -EINVAL);
	cr_assert_eq(tally_vec_set_item_name(NULL, 0, "x"), -EINVAL);
	cr_assert_str_eq(tally_vec_item_name(&v, 1), "response_objs");
	tally_vec_destroy(&v);
	/* A vec made without names gets them one at a time. */
	cr_assert_eq(tally_vec_init(&w, 2, 0), 0);
	cr_assert_null(tally_vec_item_name(&w, 1));
	cr_assert_eq(tally_vec_set_item_name(&w, 1, "b"), 0);
	cr_assert_null(tally_vec_item_name(&w, 0));
	cr_assert_str_eq(tally_vec_item_name(&w, 1), "b");
	cr_assert_eq(tally_vec_set_item_name(&w, 1, "c"), 0);
	cr_assert_str_eq(tally_vec_item_name(&w, 1), "c");
	tally_vec_destroy(&w);
}

/* ---- multi-item updates ----------------------------------------------- */

Test(vec_api, mod_multi_values_and_folds)
{
	struct tally_vec v;
	struct tally_vec_opts o = {3, 10, NULL, TALLY_VEC_MULTI, NULL, NULL};
	struct tally_vec_delta a[2] = {{0, 6}, {1, -4}};
	struct tally_vec_delta dup[3] = {{2, 1}, {2, 1}, {2, 1}};
	pin();
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_assert_eq(tally_vec_mod_multi(&v, a, 2), 0);
	expect(&v, 0, 0, 6);
	expect(&v, 1, 0, -4);
	/* Multi updates fold by the item's threshold, as mod does. */
	cr_assert_eq(tally_vec_mod_multi(&v, a, 2), 0);
	expect(&v, 0, 12, 12);
	expect(&v, 1, 0, -8);
	/* Single updates on the same item have their own word and base:
	 * bank diff -8 and word diff -3 each stay within 10. */
	tally_vec_mod(&v, 1, -3);
	expect(&v, 1, 0, -11);
	tally_vec_mod(&v, 1, -8); /* word diff -11: fold */
	expect(&v, 1, -11, -19);
	tally_vec_mod_multi(&v, &a[1], 1); /* bank diff -12: fold */
	expect(&v, 1, -23, -23);
	cr_assert_eq(tally_vec_mod_multi(&v, dup, 3), 0);
	expect(&v, 2, 0, 3);
	cr_assert_eq(tally_vec_mod_multi(&v, NULL, 0), 0); /* nothing */
	cr_assert_eq(tally_vec_mod_multi(&v, dup, 0), 0);
	expect(&v, 2, 0, 3);
	tally_vec_fold(&v);
	expect(&v, 0, 12, 12);
	expect(&v, 2, 3, 3);
	tally_vec_destroy(&v);
}

/* Snapshots switch banks: updates between many snapshots stay exact. */
Test(vec_api, mod_multi_across_snapshots)
{
	struct tally_vec v;
	struct tally_vec_opts o = {3, 0, NULL, TALLY_VEC_MULTI, NULL, NULL};
	tally_uword out[3];
	long long want[3] = {0, 0, 0};
	pin();
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	for (int n = 0; n < 1000; n++) {
		struct tally_vec_delta d[3] = {{0, 1}, {(unsigned)(1 + n % 2), 1}, {2, -n}};
		cr_assert_eq(tally_vec_mod_multi(&v, d, 3), 0);
		want[0] += 1;
		want[1 + n % 2] += 1;
		want[2] -= n;
		if (n % 3 == 0) {
			cr_assert_eq(tally_vec_snapshot(&v, out, 3), 0);
			for (unsigned i = 0; i < 3; i++)
				cr_assert_eq(out[i], U(want[i]), "n %d item %u", n, i);
			cr_assert_eq(out[0], out[1] + out[2] + U(n * (n + 1) / 2));
		}
		if (n % 7 == 0)
			tally_vec_fold(&v);
	}
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(tally_vec_sum(&v, i), U(want[i]));
	/* No update is left in flight. */
	for (unsigned s = 0; s < tally__pcpu_slots(&v.tally__pcpu); s++) {
		cr_assert_eq(tally__vec_inflight(&v, s)[0], 0);
		cr_assert_eq(tally__vec_inflight(&v, s)[1], 0);
	}
	tally_vec_destroy(&v);
}

/* Banks only for the items that take part: 802 items of which 10 have
 * TALLY_VEC_ITEM_MULTI cost 2 words per CPU each, the 10 four more and the
 * vector two more (all 802 with TALLY_VEC_MULTI: 6 each). Multi-item
 * updates of those items stay whole and exact beside single updates of
 * every item, folds, snapshots and resets; others are refused. */
Test(vec_api, multi_items_only)
{
	enum { NR = 802, NM = 10 };
	static unsigned char fl[NR];
	struct tally_vec v, all;
	struct tally_vec_opts o = {.nr_items = NR, .threshold = 10, .item_flags = fl};
	struct tally_vec_opts oa = {.nr_items = NR, .threshold = 10, .flags = TALLY_VEC_MULTI};
	long long want[NR];
	tally_uword out[NR];
	struct tally_vec_delta bad[2] = {{5, 1}, {7, 1}}; /* 5 takes part, 7 does not */
	pin();
	memset(want, 0, sizeof(want));
	for (unsigned j = 0; j < NM; j++)
		fl[5 + 80 * j] = TALLY_VEC_ITEM_MULTI; /* items 5, 85, ..., 725 */
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_assert_eq(tally_vec_init_opts(&all, &oa), 0);
	cr_assert_eq((char *)tally__vec_inflight(&v, 0) - (char *)tally__vec_slot(&v, 0, 0),
		     (NR * 2 + NM * 4) * (long)sizeof(tally_uword));
	cr_assert_eq((char *)tally__vec_inflight(&all, 0) - (char *)tally__vec_slot(&all, 0, 0),
		     NR * 6 * (long)sizeof(tally_uword));
	cr_assert_eq(tally_vec_item_flags(&v, 5), TALLY_VEC_ITEM_MULTI);
	cr_assert_eq(tally_vec_item_flags(&v, 6), 0);
	cr_assert_eq(tally_vec_item_flags(&all, 6), TALLY_VEC_ITEM_MULTI);
	for (int n = 0; n < 500; n++) {
		struct tally_vec_delta d[3] = {{5, 1}, {(unsigned)(85 + 80 * (n % 9)), 1}, {725, -n}};
		cr_assert_eq(tally_vec_mod_multi(&v, d, 3), 0);
		want[5] += 1;
		want[85 + 80 * (n % 9)] += 1;
		want[725] -= n;
		tally_vec_mod(&v, (unsigned)(n % NR), 3);
		want[n % NR] += 3;
		tally_vec_inc(&v, 5);
		want[5] += 1;
		if (n % 5 == 0) {
			cr_assert_eq(tally_vec_snapshot(&v, out, NR), 0);
			for (unsigned i = 0; i < NR; i++)
				cr_assert_eq(out[i], U(want[i]), "n %d item %u", n, i);
		}
		if (n % 7 == 0)
			tally_vec_fold(&v);
		if (n == 250) {
			cr_assert_eq(tally_vec_reset(&v), 0);
			for (unsigned i = 0; i < NR; i++)
				cr_assert_eq(tally_vec_sum(&v, i), 0);
		}
	}
	cr_assert_eq(tally_vec_snapshot(&v, out, NR), 0);
	for (unsigned i = 0; i < NR; i++)
		cr_assert_eq(out[i], U(want[i]), "item %u", i);
	tally_vec_fold(&v);
	for (unsigned i = 0; i < NR; i++)
		cr_assert_eq(global(&v, i), (tally_sword)want[i], "folded item %u", i);
	/* An item without banks in a multi-item update: still counted (as
	 * a single update of its own), never dropped. */
	cr_assert_eq(tally_vec_mod_multi(&v, bad, 2), 0);
	cr_assert_eq(tally_vec_snapshot(&v, out, NR), 0);
	cr_assert_eq(out[5], U(want[5] + 1));
	cr_assert_eq(out[7], U(want[7] + 1));
	tally_vec_destroy(&v);
	tally_vec_destroy(&all);
}

Test(vec_api, mod_multi_rejects_bad_args)
{
	struct tally_vec v, plain;
	struct tally_vec_opts o = {3, 10, NULL, TALLY_VEC_MULTI, NULL, NULL};
	struct tally_vec_delta bad[3] = {{0, 5}, {3, 5}, {1, 5}};
	struct tally_vec_delta bad2[2] = {{UINT_MAX, 1}, {0, 1}};
	struct tally_vec_delta ok[1] = {{0, 5}};
	tally_uword before[3], after[3];
	pin();
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_assert_eq(tally_vec_mod_multi(&v, ok, 1), 0);
	cr_assert_eq(tally_vec_snapshot(&v, before, 3), 0);
	cr_assert_eq(tally_vec_mod_multi(&v, bad, 3), -EINVAL);
	cr_assert_eq(tally_vec_mod_multi(&v, bad2, 2), -EINVAL);
	cr_assert_eq(tally_vec_mod_multi(&v, NULL, 1), -EINVAL);
	cr_assert_eq(tally_vec_mod_multi(&v, ok, TALLY_VEC_ITEMS_MAX + 1), -EINVAL);
	cr_assert_eq(tally_vec_mod_multi(NULL, ok, 1), -EINVAL);
	cr_assert_eq(tally_vec_snapshot(&v, after, 3), 0);
	cr_assert_eq(memcmp(before, after, sizeof(before)), 0, "a rejected update changed a count");
	cr_assert_eq(after[0], 5);
	/* A vec without TALLY_VEC_MULTI has no banks: each part applied on
	 * its own, never dropped. */
	cr_assert_eq(tally_vec_init(&plain, 3, 10), 0);
	cr_assert_eq(tally_vec_mod_multi(&plain, ok, 1), 0);
	cr_assert_eq(tally_vec_sum(&plain, 0), 5);
	tally_vec_destroy(&plain);
	tally_vec_destroy(&v);
}

/* Every in-flight counter of v back at 0 (no update left announced). */
static void inflight_idle(const struct tally_vec *v)
{
	for (unsigned s = 0; s < tally__pcpu_slots(&v->tally__pcpu); s++)
		for (unsigned k = 0; k < 2; k++)
			cr_assert_eq(tally__vec_inflight(v, s)[k], 0, "slot %u bank %u", s, k);
}

/* Issue 27 item 5: a multi-item update never drops a count. Parts whose
 * items lack banks (no TALLY_VEC_ITEM_MULTI) are applied as single updates
 * beside the banked parts, repeated, of either sign, folding past the
 * threshold as tally_vec_mod does; an update of unbanked parts alone, and
 * one on a vector with no banks at all, count too. (Before: -EINVAL and
 * nothing counted.) */
Test(vec_api, mod_multi_counts_parts_without_banks)
{
	enum { NR = 4 };
	static const unsigned char fl[NR] = {TALLY_VEC_ITEM_MULTI, TALLY_VEC_ITEM_MULTI, 0, 0};
	struct tally_vec_opts o = {.nr_items = NR, .threshold = 4, .item_flags = fl};
	/* 0 and 1 take part; 2 and 3 do not (2 twice, 3 negative). */
	struct tally_vec_delta mix[5] = {{2, 3}, {0, 1}, {3, -7}, {2, 2}, {1, 1}};
	struct tally_vec_delta alone[2] = {{3, 4}, {2, -1}};
	struct tally_vec v, plain;
	long long want[NR] = {0};
	tally_uword out[NR];
	pin();
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	for (int n = 1; n <= 40; n++) {
		cr_assert_eq(tally_vec_mod_multi(&v, mix, 5), 0, "n %d", n);
		for (unsigned j = 0; j < 5; j++)
			want[mix[j].item] += mix[j].delta;
		if (n % 3 == 0) {
			cr_assert_eq(tally_vec_mod_multi(&v, alone, 2), 0);
			want[3] += 4;
			want[2] -= 1;
		}
		cr_assert_eq(tally_vec_snapshot(&v, out, NR), 0);
		for (unsigned i = 0; i < NR; i++)
			cr_assert_eq(out[i], U(want[i]), "n %d item %u: %lld, want %lld", n, i,
				     (long long)out[i], want[i]);
		cr_assert_eq(tally_vec_read_exact(&v, 3), (tally_sword)want[3]);
		inflight_idle(&v);
	}
	/* The unbanked parts went to w as tally_vec_mod's: their folds kept
	 * each diff within the threshold (one slot: the thread is pinned). */
	for (unsigned i = 2; i < NR; i++) {
		tally_sword g = global(&v, i);
		cr_assert_leq(want[i] - g, 4, "item %u: global %lld, exact %lld", i, (long long)g,
			      want[i]);
		cr_assert_geq(want[i] - g, -4, "item %u: global %lld, exact %lld", i, (long long)g,
			      want[i]);
	}
	tally_vec_fold(&v);
	for (unsigned i = 0; i < NR; i++)
		cr_assert_eq(global(&v, i), (tally_sword)want[i], "folded item %u", i);
	/* Since a reset: every part counted again. */
	cr_assert_eq(tally_vec_reset(&v), 0);
	cr_assert_eq(tally_vec_mod_multi(&v, mix, 5), 0);
	cr_assert_eq(tally_vec_snapshot_since_reset(&v, out, NR), 0);
	cr_assert_eq(out[0], 1);
	cr_assert_eq(out[1], 1);
	cr_assert_eq(out[2], 5);
	cr_assert_eq(out[3], U(-7));
	tally_vec_destroy(&v);

	/* No banked item at all: each part on its own, repeats and signs. */
	cr_assert_eq(tally_vec_init(&plain, NR, 4), 0);
	for (int n = 0; n < 10; n++)
		cr_assert_eq(tally_vec_mod_multi(&plain, mix, 5), 0);
	cr_assert_eq(tally_vec_sum(&plain, 0), 10);
	cr_assert_eq(tally_vec_sum(&plain, 1), 10);
	cr_assert_eq(tally_vec_sum(&plain, 2), 50);
	cr_assert_eq(tally_vec_read_exact(&plain, 3), -70);
	tally_vec_fold(&plain);
	cr_assert_eq(global(&plain, 2), 50);
	cr_assert_eq(global(&plain, 3), -70);
	/* Still refused whole: an item out of range (nothing counted). */
	mix[4].item = NR;
	cr_assert_eq(tally_vec_mod_multi(&plain, mix, 5), -EINVAL);
	cr_assert_eq(tally_vec_sum(&plain, 2), 50);
	tally_vec_destroy(&plain);
}

Test(vec_api, bad_item_readers)
{
	struct tally_vec v;
	struct tally_vec_opts o = {2, 0, NULL, TALLY_VEC_EXACT_ONLY, NULL, NULL};
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	tally_vec_mod(&v, 1, 3);
	cr_assert_eq(tally_vec_sum(&v, 2), 0);
	cr_assert_eq(tally_vec_read(&v, 2), 0);
	cr_assert_eq(tally_vec_read_monotonic(&v, 2), 0);
	cr_assert_eq(tally_vec_read_exact(&v, UINT_MAX), 0);
	cr_assert_eq(tally_vec_item_threshold(&v, 2), 0);
	cr_assert_eq(tally_vec_item_threshold(NULL, 0), 0);
	cr_assert_eq(tally_vec_sum(&v, 1), 3);
	tally_vec_destroy(&v);
}

/* Past 2^W: raw snapshots, sums and since-reset values stay modular, and
 * a reset taken just below the wrap gives the right count across it. */
Test(vec_api, wrap)
{
	struct tally_vec v;
	struct tally_vec_opts o = {2, 0, NULL, TALLY_VEC_MULTI, NULL, NULL};
	struct tally_vec_delta d[2] = {{0, TALLY_SWORD_MAX}, {1, TALLY_SWORD_MAX}};
	tally_uword raw[2], since[2], before;
	pin();
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	/* 2 * MAX = 2^W - 2 on both items. */
	cr_assert_eq(tally_vec_mod_multi(&v, d, 2), 0);
	cr_assert_eq(tally_vec_mod_multi(&v, d, 2), 0);
	cr_assert_eq(tally_vec_snapshot(&v, raw, 2), 0);
	cr_assert_eq(raw[0], TALLY_UWORD_MAX - 1u);
	cr_assert_eq(tally_vec_reset(&v), 0);
	before = raw[0];
	/* 5 more: the raw value wraps to 3, the since-reset value is 5. */
	tally_vec_mod(&v, 0, 5);
	d[0].delta = 5;
	d[1].delta = 5;
	cr_assert_eq(tally_vec_mod_multi(&v, &d[1], 1), 0);
	cr_assert_eq(tally_vec_snapshot(&v, raw, 2), 0);
	cr_assert_eq(raw[0], 3);
	cr_assert_eq(raw[1], 3);
	cr_assert_eq(tally_delta(before, raw[0]), 5);
	cr_assert_eq(tally_vec_snapshot_since_reset(&v, since, 2), 0);
	cr_assert_eq(since[0], 5);
	cr_assert_eq(since[1], 5);
	cr_assert_eq(tally_vec_sum(&v, 0), 5);
	cr_assert_eq(tally_vec_read_exact(&v, 1), 5);
	tally_vec_fold(&v);
	cr_assert_eq(tally_vec_read_monotonic(&v, 0), 3 + B);
	cr_assert_eq(tally_vec_read(&v, 0), 5);
	tally_vec_destroy(&v);
}

/* Every reader takes a const object: a program can hand out read-only
 * views (a build with the old non-const sum readers fails to compile this
 * with -Werror: "discards 'const' qualifier"). */
static tally_sword read_all(const struct tally_vec *v, const struct tally_counter *c)
{
	tally_uword out[2];
	tally_sword sg[2];
	cr_assert_eq(tally_vec_snapshot(v, out, 2), 0);
	cr_assert_eq(tally_vec_snapshot_since_reset(v, out, 2), 0);
	cr_assert_eq(tally_vec_snapshot_signed(v, sg, 2), 0);
	return tally_vec_read_exact(v, 0) + (tally_sword)tally_vec_sum(v, 1) + sg[1] +
	       tally_counter_sum(c) + (tally_sword)tally_counter_sum_monotonic(c) +
	       (tally_sword)tally_counter_sum_positive(c) + tally_counter_compare(c, 0);
}

Test(vec_api, const_readers)
{
	struct tally_vec v;
	struct tally_counter c;
	cr_assert_eq(tally_vec_init(&v, 2, 0), 0);
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	tally_vec_mod(&v, 0, 2);
	tally_vec_mod(&v, 1, 3);
	tally_counter_add(&c, 5);
	cr_assert_eq(read_all(&v, &c), 2 + 3 + 3 + 5 + 5 + 5 + 1);
	tally_counter_destroy(&c);
	tally_vec_destroy(&v);
}
