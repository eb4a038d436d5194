/*
 * Unit tests for tally/hist.h: exact bucket positions and counts, bucket
 * edges, quantiles against exact sorted samples, merge, delta, reset, the
 * 32-bit carry, bad input, and a record caught mid-way by a snapshot.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <tally/hist.h>
#include <time.h>

#define HIGHEST TALLY_HIST_HIGHEST_DEFAULT

static struct tally_hist h;
static struct tally_hist_snap s;

static void snap(void)
{
	cr_assert_eq(tally_hist_snapshot(&h, &s), 0);
}

static void setup(const struct tally_hist_opts *o)
{
	cr_assert_eq(tally_hist_init(&h, o), 0);
	cr_assert_eq(tally_hist_snap_init(&s, &h), 0);
}

static void teardown(void)
{
	tally_hist_snap_destroy(&s);
	tally_hist_destroy(&h);
}

/* Expect exactly these (position, count) pairs and nothing else. */
static void expect_counts(const unsigned *pos, const uint64_t *cnt, unsigned n)
{
	unsigned j, i;
	uint64_t total = 0;
	for (j = 0; j < s.nr_buckets; j++) {
		uint64_t want = 0;
		for (i = 0; i < n; i++)
			if (pos[i] == j)
				want += cnt[i];
		cr_assert_eq(s.counts[j], want, "bucket %u: %llu, expected %llu", j,
			     (unsigned long long)s.counts[j], (unsigned long long)want);
		total += want;
	}
	cr_assert_eq(s.count, total);
}

Test(hist, default_layout)
{
	setup(NULL);
	/* p = 7: indices 1 .. (34 << 7) + (3.6e12 >> 34) = 4561, plus below and above */
	cr_assert_eq(tally_hist_buckets(&h), 4563u);
	cr_assert_eq(tally_hist_error(&h), 1.0 / 256);
	/* Each slot's copy fits its region (slots are 2^shift bytes apart). */
	cr_assert_geq((size_t)1 << h.tally__pcpu.shift, 48u + 8u * 4563u);
	teardown();
}

Test(hist, p10_layout_and_hdr_sized)
{
	struct tally_hist_opts o = {0, 0, 10, NULL, 0};
	setup(&o);
	cr_assert_eq(tally_hist_buckets(&h), 33422u);
	teardown();
}

Test(hist, exact_positions)
{
	static const int64_t v[] = {0, 1, 2, 255, 256, 257, 258, 511, 512, 515, 516,
				    (int64_t)HIGHEST, (int64_t)HIGHEST + 1, INT64_MAX};
	/* p = 7: exact below 256; [256, 512) in buckets of 2; [512, 1024) of 4 */
	static const unsigned pos[] = {0, 1, 2, 255, 256, 256, 257, 383, 384, 384, 385,
				       4561, 4562, 4562};
	static const uint64_t cnt[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	uint64_t sum = 0;
	unsigned i;
	setup(NULL);
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cr_assert_eq(tally_hist_record(&h, v[i]), 0);
		sum += (uint64_t)v[i];
	}
	snap();
	expect_counts(pos, cnt, sizeof(pos) / sizeof(pos[0]));
	cr_assert_eq(s.sum, sum);
	teardown();
}

Test(hist, bucket_edges_contiguous_and_within_error)
{
	uint64_t lo, hi, prev_hi = 0;
	unsigned j;
	setup(NULL);
	cr_assert_eq(tally_hist_snap_bucket_range(&s, 0, &lo, &hi), 0);
	cr_assert_eq(lo, 0u);
	cr_assert_eq(hi, 0u); /* below: v < 1 */
	for (j = 1; j + 1 < s.nr_buckets; j++) {
		cr_assert_eq(tally_hist_snap_bucket_range(&s, j, &lo, &hi), 0);
		cr_assert_eq(lo, prev_hi + 1, "bucket %u starts at %llu", j, (unsigned long long)lo);
		cr_assert_geq(hi, lo);
		/* width at most 2^-7 of the lower edge (exact below 256) */
		cr_assert(hi - lo + 1 == 1 || (hi - lo + 1) * 128 <= lo, "bucket %u [%llu, %llu]", j,
			  (unsigned long long)lo, (unsigned long long)hi);
		cr_assert_eq(tally__hist_pos(&h.tally__l, lo), j);
		cr_assert_eq(tally__hist_pos(&h.tally__l, hi), j);
		prev_hi = hi;
	}
	cr_assert_eq(prev_hi, HIGHEST);
	cr_assert_eq(tally_hist_snap_bucket_range(&s, j, &lo, &hi), 1);
	cr_assert_eq(lo, HIGHEST + 1);
	cr_assert_eq(tally_hist_snap_bucket_range(&s, j + 1, &lo, &hi), -EINVAL);
	teardown();
}

Test(hist, range_with_lowest_and_precision)
{
	struct tally_hist_opts o = {1000, 1000000, 4, NULL, 0};
	uint64_t lo, hi;
	setup(&o);
	/* 1000: e = 9, sh = 5, idx = (5 << 4) + 31 = 111; 1e6: e = 19, sh = 15,
	 * idx = (15 << 4) + 30 = 270; positions 1..160, below, above */
	cr_assert_eq(s.nr_buckets, 162u);
	cr_assert_eq(tally_hist_snap_bucket_range(&s, 1, &lo, &hi), 0);
	cr_assert_eq(lo, 1000u); /* clipped to lowest: the bucket is [992, 1023] */
	cr_assert_eq(hi, 1023u);
	cr_assert_eq(tally_hist_snap_bucket_range(&s, 0, &lo, &hi), 0);
	cr_assert_eq(hi, 999u);
	cr_assert_eq(tally_hist_record(&h, 999), 0);
	cr_assert_eq(tally_hist_record(&h, 1000), 0);
	cr_assert_eq(tally_hist_record(&h, 1000000), 0);
	cr_assert_eq(tally_hist_record(&h, 1000001), 0);
	snap();
	{
		static const unsigned pos[] = {0, 1, 160, 161};
		static const uint64_t cnt[] = {1, 1, 1, 1};
		expect_counts(pos, cnt, 4);
	}
	cr_assert_eq(s.sum, 999u + 1000u + 1000000u + 1000001u);
	teardown();
}

Test(hist, explicit_bounds)
{
	static const uint64_t b[] = {10, 100, 1000};
	struct tally_hist_opts o = {0, 0, 0, b, 3};
	static const unsigned pos[] = {1, 2, 3, 4};
	static const uint64_t cnt[] = {2, 2, 1, 3};
	uint64_t lo, hi;
	setup(&o);
	cr_assert_eq(s.nr_buckets, 5u);
	cr_assert_eq(tally_hist_error(&h) != tally_hist_error(&h), 1); /* NAN */
	cr_assert_eq(tally_hist_record(&h, 0), 0);
	cr_assert_eq(tally_hist_record(&h, 10), 0);
	cr_assert_eq(tally_hist_record(&h, 11), 0);
	cr_assert_eq(tally_hist_record(&h, 100), 0);
	cr_assert_eq(tally_hist_record(&h, 1000), 0);
	cr_assert_eq(tally_hist_record_n(&h, 1001, 3), 0);
	snap();
	expect_counts(pos, cnt, 4);
	cr_assert_eq(s.sum, 0u + 10 + 11 + 100 + 1000 + 3 * 1001);
	cr_assert_eq(tally_hist_snap_bucket_range(&s, 0, &lo, &hi), -ENOENT);
	cr_assert_eq(tally_hist_snap_bucket_range(&s, 2, &lo, &hi), 0);
	cr_assert_eq(lo, 11u);
	cr_assert_eq(hi, 100u);
	/* rank ceil(0.3 * 8) = 3: first of bucket (10, 100], 2 in it: halfway */
	cr_assert_float_eq(tally_hist_quantile(&s, 0.3), 55.0, 1e-9);
	/* rank 8: above, the last finite bound */
	cr_assert_float_eq(tally_hist_quantile(&s, 1.0), 1000.0, 1e-9);
	teardown();
}

Test(hist, bad_input)
{
	static const uint64_t up[] = {5, 5};
	static const uint64_t big[] = {(uint64_t)INT64_MAX + 1};
	struct tally_hist_opts bad[] = {
		{0, 0, TALLY_HIST_PRECISION_MAX + 1, NULL, 0},
		{10, 5, 0, NULL, 0},
		{0, (uint64_t)INT64_MAX + 1, 0, NULL, 0},
		{0, 0, 0, up, 2},
		{0, 0, 0, big, 1},
		{0, 0, 7, up, 1},
		{0, 0, 0, NULL, 3},
		{0, 0, 0, up, 0},
		{0, 0, 0, up, TALLY_HIST_BUCKETS_MAX - 1}, /* too many buckets */
	};
	unsigned i;
	struct tally_hist x;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&x, 0x5a, sizeof(x));
		cr_assert_eq(tally_hist_init(&x, &bad[i]), -EINVAL, "opts %u", i);
		cr_assert_eq(((unsigned char *)&x)[0], 0x5a, "opts %u: h touched", i);
	}
	cr_assert_eq(tally_hist_init(NULL, NULL), -EINVAL);
	setup(NULL);
	cr_assert_eq(tally_hist_record(&h, 5), 0);
	cr_assert_eq(tally_hist_record(&h, -1), -EINVAL);
	cr_assert_eq(tally_hist_record(NULL, 1), -EINVAL);
	cr_assert_eq(tally_hist_record_n(&h, -5, 1), -EINVAL);
	cr_assert_eq(tally_hist_record_n(&h, 5, TALLY_HIST_N_MAX + 1), -EINVAL);
	cr_assert_eq(tally_hist_record_n(NULL, 5, 1), -EINVAL);
	cr_assert_eq(tally_hist_record_n(&h, 7, 0), 0);
	snap();
	cr_assert_eq(s.count, 1u); /* nothing lost, nothing added */
	cr_assert_eq(s.sum, 5u);
	cr_assert_eq(tally_hist_snapshot(NULL, &s), -EINVAL);
	cr_assert_eq(tally_hist_snapshot(&h, NULL), -EINVAL);
	cr_assert_eq(tally_hist_reset(NULL), -EINVAL);
	cr_assert_eq(tally_hist_snap_init(NULL, &h), -EINVAL);
	cr_assert(isnan(tally_hist_quantile(NULL, 0.5)));
	cr_assert(isnan(tally_hist_quantile(&s, NAN)));
	cr_assert(isnan(tally_hist_quantile(&s, -0.01)));
	cr_assert(isnan(tally_hist_quantile(&s, 1.01)));
	cr_assert_eq(tally_hist_quantile(&s, 0.5), 5.0);
	tally_hist_destroy(NULL);
	tally_hist_snap_destroy(NULL);
	{
		/* a snapshot sized for other buckets is refused, untouched */
		struct tally_hist other;
		struct tally_hist_opts o = {0, 0, 6, NULL, 0};
		cr_assert_eq(tally_hist_init(&other, &o), 0);
		cr_assert_eq(tally_hist_snapshot(&other, &s), -EINVAL);
		cr_assert_eq(s.count, 1u);
		tally_hist_destroy(&other);
	}
	teardown();
}

/* ---- quantiles against exact sorted samples ------------------------------ */

static struct harness_rng rng = {42};
static uint64_t rnd(void)
{
	return harness_next(&rng);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#define NS 20000
static uint64_t sample[NS];

static void check_quantiles(const char *what)
{
	static const double qs[] = {0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1};
	double err = tally_hist_error(&h);
	unsigned i;
	qsort(sample, NS, sizeof(sample[0]), cmp_u64);
	snap();
	cr_assert_eq(s.count, (uint64_t)NS);
	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t rank = (uint64_t)ceil(qs[i] * NS);
		double exact, got;
		if (rank < 1)
			rank = 1;
		exact = (double)sample[rank - 1];
		got = tally_hist_quantile(&s, qs[i]);
		cr_assert_leq(fabs(got - exact), err * exact, "%s q=%g: %f, exact %f (bound %g)",
			      what, qs[i], got, exact, err);
	}
}

static void fill(uint64_t (*gen)(void))
{
	unsigned i;
	for (i = 0; i < NS; i++) {
		sample[i] = gen();
		cr_assert_eq(tally_hist_record(&h, (int64_t)sample[i]), 0);
	}
}

static uint64_t gen_uniform(void)
{
	return 1 + rnd() % 10000000; /* 1 ns .. 10 ms */
}

static uint64_t gen_exponential(void)
{
	double u = ((double)(rnd() >> 11) + 0.5) / 9007199254740992.0;
	return 1 + (uint64_t)(-log(u) * 50000.0); /* mean 50 us */
}

static uint64_t gen_bimodal(void)
{
	uint64_t r = rnd();
	return r & 1 ? 100 + r % 900 : 20000000 + (r >> 1) % 5000000; /* 100 ns-1 us, 20-25 ms */
}

static uint64_t gen_one(void)
{
	return 123456789;
}

Test(hist, quantiles_uniform)
{
	setup(NULL);
	fill(gen_uniform);
	check_quantiles("uniform");
	teardown();
}

Test(hist, quantiles_exponential)
{
	setup(NULL);
	fill(gen_exponential);
	check_quantiles("exponential");
	teardown();
}

Test(hist, quantiles_bimodal)
{
	struct tally_hist_opts o = {0, 0, 10, NULL, 0};
	setup(&o);
	fill(gen_bimodal);
	check_quantiles("bimodal p=10");
	teardown();
}

Test(hist, quantiles_one_value)
{
	setup(NULL);
	fill(gen_one);
	check_quantiles("one value");
	/* one value: every quantile is that bucket's midpoint */
	cr_assert_eq(tally_hist_quantile(&s, 0.0), tally_hist_quantile(&s, 1.0));
	teardown();
}

Test(hist, quantile_outside_range)
{
	struct tally_hist_opts o = {100, 1000, 3, NULL, 0};
	setup(&o);
	cr_assert(isnan(tally_hist_quantile(&s, 0.5))); /* empty */
	cr_assert_eq(tally_hist_record(&h, 5), 0);
	cr_assert_eq(tally_hist_record(&h, 5000), 0);
	snap();
	cr_assert_eq(tally_hist_quantile(&s, 0.5), 100.0);  /* below: lowest */
	cr_assert_eq(tally_hist_quantile(&s, 1.0), 1000.0); /* above: highest */
	teardown();
}

/* ---- merge, delta, reset --------------------------------------------------- */

Test(hist, merge_two_histograms)
{
	struct tally_hist h2, all;
	struct tally_hist_snap s2, sall;
	unsigned i, j;
	setup(NULL);
	cr_assert_eq(tally_hist_init(&h2, NULL), 0);
	cr_assert_eq(tally_hist_init(&all, NULL), 0);
	cr_assert_eq(tally_hist_snap_init(&s2, &h2), 0);
	cr_assert_eq(tally_hist_snap_init(&sall, &all), 0);
	for (i = 0; i < 5000; i++) {
		uint64_t v = gen_exponential();
		cr_assert_eq(tally_hist_record(i & 1 ? &h : &h2, (int64_t)v), 0);
		cr_assert_eq(tally_hist_record(&all, (int64_t)v), 0);
	}
	snap();
	cr_assert_eq(tally_hist_snapshot(&h2, &s2), 0);
	cr_assert_eq(tally_hist_snapshot(&all, &sall), 0);
	cr_assert_eq(tally_hist_snap_merge(&s, &s2), 0);
	cr_assert_eq(s.count, sall.count);
	cr_assert_eq(s.sum, sall.sum);
	for (j = 0; j < s.nr_buckets; j++)
		cr_assert_eq(s.counts[j], sall.counts[j], "bucket %u", j);
	cr_assert_eq(tally_hist_quantile(&s, 0.99), tally_hist_quantile(&sall, 0.99));
	{
		struct tally_hist other;
		struct tally_hist_snap so;
		struct tally_hist_opts o = {0, 0, 8, NULL, 0};
		cr_assert_eq(tally_hist_init(&other, &o), 0);
		cr_assert_eq(tally_hist_snap_init(&so, &other), 0);
		cr_assert_eq(tally_hist_snap_merge(&s, &so), -EINVAL);
		cr_assert_eq(s.count, sall.count);
		tally_hist_snap_destroy(&so);
		tally_hist_destroy(&other);
	}
	tally_hist_snap_destroy(&s2);
	tally_hist_snap_destroy(&sall);
	tally_hist_destroy(&h2);
	tally_hist_destroy(&all);
	teardown();
}

/* Values below, inside and above the range, split between two histograms:
 * their merged snapshot must equal one histogram that recorded them all,
 * every position (below and above too), count, sum and quantile. Log-linear
 * 100 .. 1000 (p = 3), and explicit bounds, whose above is +Inf. */
Test(hist, merge_below_and_above)
{
	static const uint64_t b[] = {10, 100};
	static const int64_t v[] = {0, 5, 99, 100, 500, 1000, 1001, 5000, (int64_t)1 << 40};
	const struct tally_hist_opts opts[2] = {{100, 1000, 3, NULL, 0}, {0, 0, 0, b, 2}};
	struct tally_hist h2, all;
	struct tally_hist_snap s2, sall;
	unsigned i, j, o;
	for (o = 0; o < 2; o++) {
		setup(&opts[o]);
		cr_assert_eq(tally_hist_init(&h2, &opts[o]), 0);
		cr_assert_eq(tally_hist_init(&all, &opts[o]), 0);
		cr_assert_eq(tally_hist_snap_init(&s2, &h2), 0);
		cr_assert_eq(tally_hist_snap_init(&sall, &all), 0);
		/* value i, i + 1 times: h gets the even i, h2 the odd */
		for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			cr_assert_eq(tally_hist_record_n(i & 1 ? &h2 : &h, v[i], i + 1u), 0);
			cr_assert_eq(tally_hist_record_n(&all, v[i], i + 1u), 0);
		}
		snap();
		cr_assert_eq(tally_hist_snapshot(&h2, &s2), 0);
		cr_assert_eq(tally_hist_snapshot(&all, &sall), 0);
		/* the reference itself: 45 observations, 1 + 2 + 3 below
		 * (log-linear; nothing is below explicit bounds), 7 + 8 + 9
		 * above (explicit bounds: 5 + 6 more, over 100) */
		cr_assert_eq(sall.count, 45u);
		cr_assert_eq(sall.sum, 9 * ((uint64_t)1 << 40) + 56214u);
		cr_assert_eq(sall.counts[0], o ? 0u : 6u, "opts %u: below %llu", o,
			     (unsigned long long)sall.counts[0]);
		cr_assert_eq(sall.counts[sall.nr_buckets - 1u], o ? 35u : 24u,
			     "opts %u: above %llu", o,
			     (unsigned long long)sall.counts[sall.nr_buckets - 1u]);
		cr_assert_eq(tally_hist_snap_merge(&s, &s2), 0);
		for (j = 0; j < s.nr_buckets; j++)
			cr_assert_eq(s.counts[j], sall.counts[j],
				     "opts %u: bucket %u of %u: merged %llu, all %llu", o, j,
				     s.nr_buckets, (unsigned long long)s.counts[j],
				     (unsigned long long)sall.counts[j]);
		cr_assert_eq(s.count, 45u, "opts %u: merged count %llu", o,
			     (unsigned long long)s.count);
		cr_assert_eq(s.sum, sall.sum, "opts %u: merged sum %llu, all %llu", o,
			     (unsigned long long)s.sum, (unsigned long long)sall.sum);
		for (i = 0; i <= 20; i++)
			cr_assert_eq(tally_hist_quantile(&s, i / 20.0),
				     tally_hist_quantile(&sall, i / 20.0), "opts %u: q %.2f: %f, %f",
				     o, i / 20.0, tally_hist_quantile(&s, i / 20.0),
				     tally_hist_quantile(&sall, i / 20.0));
		tally_hist_snap_destroy(&s2);
		tally_hist_snap_destroy(&sall);
		tally_hist_destroy(&h2);
		tally_hist_destroy(&all);
		teardown();
	}
}

Test(hist, delta_between_snapshots)
{
	struct tally_hist_snap s1, d;
	setup(NULL);
	cr_assert_eq(tally_hist_snap_init(&s1, &h), 0);
	cr_assert_eq(tally_hist_snap_init(&d, &h), 0);
	cr_assert_eq(tally_hist_record_n(&h, 1000, 7), 0);
	cr_assert_eq(tally_hist_snapshot(&h, &s1), 0);
	cr_assert_eq(tally_hist_record_n(&h, 1000, 2), 0);
	cr_assert_eq(tally_hist_record(&h, 50), 0);
	snap();
	cr_assert_eq(tally_hist_snap_delta(&d, &s, &s1), 0);
	cr_assert_eq(d.count, 3u);
	cr_assert_eq(d.sum, 2050u);
	cr_assert_eq(d.counts[50], 1u);
	cr_assert_eq(d.counts[tally__hist_pos(&h.tally__l, 1000)], 2u);
	/* the wrong way round: refused, d untouched */
	cr_assert_eq(tally_hist_snap_delta(&d, &s1, &s), -ERANGE);
	cr_assert_eq(d.count, 3u);
	/* in place */
	cr_assert_eq(tally_hist_snap_delta(&s, &s, &s1), 0);
	cr_assert_eq(s.count, 3u);
	tally_hist_snap_destroy(&s1);
	tally_hist_snap_destroy(&d);
	teardown();
}

Test(hist, reset_takes_one_cut)
{
	setup(NULL);
	cr_assert_eq(tally_hist_record_n(&h, 300, 4), 0);
	cr_assert_eq(tally_hist_reset(&h), 0);
	snap();
	cr_assert_eq(s.count, 0u);
	cr_assert_eq(s.sum, 0u);
	cr_assert_eq(tally_hist_record(&h, 7), 0);
	snap();
	cr_assert_eq(s.count, 1u);
	cr_assert_eq(s.sum, 7u);
	cr_assert_eq(s.counts[7], 1u);
	cr_assert_eq(tally_hist_snapshot_raw(&h, &s), 0);
	cr_assert_eq(s.count, 5u);
	cr_assert_eq(s.sum, 1207u);
	teardown();
}

/* The 32-bit halves wrap: the carry keeps the counts exact, in both banks. */
Test(hist, carry_past_32_bits)
{
	uint64_t n = TALLY_HIST_N_MAX;
	unsigned j;
	setup(NULL);
	j = tally__hist_pos(&h.tally__l, 3);
	cr_assert_eq(tally_hist_record_n(&h, 3, n), 0);
	cr_assert_eq(tally_hist_record_n(&h, 3, n), 0); /* wraps the half */
	cr_assert_eq(tally_hist_record_n(&h, 3, 5), 0);
	snap(); /* switches banks */
	cr_assert_eq(s.counts[j], 2 * n + 5);
	cr_assert_eq(s.count, 2 * n + 5);
	cr_assert_eq(s.sum, 3 * (2 * n + 5));
	cr_assert_eq(tally_hist_record_n(&h, 3, n), 0);
	cr_assert_eq(tally_hist_record_n(&h, 3, n), 0);
	snap();
	cr_assert_eq(s.counts[j], 4 * n + 5);
	cr_assert_eq(s.sum, 3 * (4 * n + 5));
	teardown();
}

/* ---- a record caught mid-way ----------------------------------------------
 * The bucket's half is added by hand (a record's first add), and a thread
 * finishes the record (sum and done) 100 ms later. A snapshot taken in
 * between must wait for it and then hold it whole: bucket, count and sum.
 */
struct finisher {
	size_t off; /* the half's byte offset, bank included */
};

static void *finish_later(void *arg)
{
	struct finisher *f = (struct finisher *)arg;
	struct timespec ts = {0, 100 * 1000 * 1000};
	nanosleep(&ts, NULL);
	tally__hist_record_atomic(&h, f->off, 1, 77, TALLY__HIST_HALF);
	return NULL;
}

Test(hist, snapshot_waits_for_record_in_flight)
{
	struct finisher f;
	unsigned j;
	pthread_t t;
	struct timespec a, b;
	double ms;
	setup(NULL);
	cr_assert_eq(tally_hist_record(&h, 5), 0);
	j = tally__hist_pos(&h.tally__l, 77);
	f.off = tally__hist_half_off(j, tally__hist_bank(h.tally__act));
	__atomic_add_fetch((uint32_t *)tally__pcpu_at(&h.tally__pcpu, 0, f.off), 1u,
			   __ATOMIC_RELAXED);
	cr_assert_eq(pthread_create(&t, NULL, finish_later, &f), 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	snap();
	clock_gettime(CLOCK_MONOTONIC, &b);
	pthread_join(t, NULL);
	ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	cr_assert_geq(ms, 50.0, "the snapshot returned after %.1f ms, before the record ended", ms);
	cr_assert_eq(s.count, 2u);
	cr_assert_eq(s.counts[j], 1u);
	cr_assert_eq(s.sum, 82u);
	teardown();
}
