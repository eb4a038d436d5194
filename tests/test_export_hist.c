/*
 * Unit tests for tally/export_hist.h: a histogram rendered in every format,
 * exact strings; bounds at bucket edges, fixed at setup (the default grid,
 * the caller's, the cap), labelled families, bad input.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <string.h>
#include <tally/export_hist.h>

static struct tally_export e;
static struct tally_hist h;

static char *render(int fmt)
{
	char *out = NULL;
	size_t len;
	cr_assert_eq(tally_export_render_alloc(&e, fmt, &out, &len), 0, "%s", tally_export_error(&e));
	return out;
}

static void expect(int fmt, const char *want)
{
	char *got = render(fmt);
	cr_assert_str_eq(got, want);
	free(got);
}

Test(export_hist, explicit_bounds_every_format)
{
	static const uint64_t b[] = {10, 100, 1000};
	struct tally_hist_opts o = {0, 0, 0, b, 3};
	cr_assert_eq(tally_export_init(&e), 0);
	cr_assert_eq(tally_hist_init(&h, &o), 0);
	cr_assert_eq(tally_export_add_hist(&e, "request_bytes", "Request sizes.", &h, NULL), 0);
	tally_hist_record(&h, 5);
	tally_hist_record(&h, 50);
	tally_hist_record(&h, 50);
	tally_hist_record(&h, 5000);
	expect(TALLY_EXPORT_PROMETHEUS, "# HELP request_bytes Request sizes.\n"
					"# TYPE request_bytes histogram\n"
					"request_bytes_bucket{le=\"10\"} 1\n"
					"request_bytes_bucket{le=\"100\"} 3\n"
					"request_bytes_bucket{le=\"1000\"} 3\n"
					"request_bytes_bucket{le=\"+Inf\"} 4\n"
					"request_bytes_sum 5105\n"
					"request_bytes_count 4\n");
	expect(TALLY_EXPORT_OPENMETRICS, "# HELP request_bytes Request sizes.\n"
					 "# TYPE request_bytes histogram\n"
					 "request_bytes_bucket{le=\"10\"} 1\n"
					 "request_bytes_bucket{le=\"100\"} 3\n"
					 "request_bytes_bucket{le=\"1000\"} 3\n"
					 "request_bytes_bucket{le=\"+Inf\"} 4\n"
					 "request_bytes_sum 5105\n"
					 "request_bytes_count 4\n"
					 "# EOF\n");
	expect(TALLY_EXPORT_STAT, "request_bytes_count 4\nrequest_bytes_sum 5105\n");
	expect(TALLY_EXPORT_JSON,
	       "{\"families\":[{\"name\":\"request_bytes\",\"type\":\"histogram\",\"help\":"
	       "\"Request sizes.\",\"samples\":[{\"labels\":{},\"count\":4,\"sum\":5105,"
	       "\"buckets\":[{\"le\":10,\"count\":1},{\"le\":100,\"count\":3},{\"le\":1000,"
	       "\"count\":3},{\"le\":\"+Inf\",\"count\":4}]}]}]}\n");
	/* a reset does not move the exported counts */
	cr_assert_eq(tally_hist_reset(&h), 0);
	expect(TALLY_EXPORT_STAT, "request_bytes_count 4\nrequest_bytes_sum 5105\n");
	tally_export_destroy(&e);
	tally_hist_destroy(&h);
}

/* Log-linear, default bounds: the buckets of 1, 2, 5 x 10^k from lowest
 * to below highest, then highest's, scaled to seconds; below's values
 * under the first. p = 7: 100 and 200 have buckets of their own, 500 is in
 * [500, 501], 1000 in [1000, 1003], 2000 in [2000, 2007], 5000 in [4992,
 * 5023] ... 500000 in [499712, 501759]; highest 10^6 in [999424, 1003519],
 * its edge cut at highest. */
Test(export_hist, log_linear_default_grid_scaled)
{
	struct tally_hist_opts o = {100, 1000000, 7, NULL, 0};
	struct tally_export_hist_opts x = {1e-9, 0, NULL, 0};
	cr_assert_eq(tally_export_init(&e), 0);
	cr_assert_eq(tally_hist_init(&h, &o), 0);
	cr_assert_eq(tally_export_add_hist(&e, "latency_seconds", "Latency.", &h, &x), 0);
	tally_hist_record(&h, 50);  /* below */
	tally_hist_record(&h, 300); /* [300, 301] */
	tally_hist_record(&h, 501);
	tally_hist_record(&h, 502);
	tally_hist_record(&h, 2000000); /* above */
	expect(TALLY_EXPORT_PROMETHEUS, "# HELP latency_seconds Latency.\n"
					"# TYPE latency_seconds histogram\n"
					"latency_seconds_bucket{le=\"0.0000001\"} 1\n"
					"latency_seconds_bucket{le=\"0.0000002\"} 1\n"
					"latency_seconds_bucket{le=\"0.000000501\"} 3\n"
					"latency_seconds_bucket{le=\"0.000001003\"} 4\n"
					"latency_seconds_bucket{le=\"0.000002007\"} 4\n"
					"latency_seconds_bucket{le=\"0.000005023\"} 4\n"
					"latency_seconds_bucket{le=\"0.000010047\"} 4\n"
					"latency_seconds_bucket{le=\"0.000020095\"} 4\n"
					"latency_seconds_bucket{le=\"0.000050175\"} 4\n"
					"latency_seconds_bucket{le=\"0.000100351\"} 4\n"
					"latency_seconds_bucket{le=\"0.000200703\"} 4\n"
					"latency_seconds_bucket{le=\"0.000501759\"} 4\n"
					"latency_seconds_bucket{le=\"0.001\"} 4\n"
					"latency_seconds_bucket{le=\"+Inf\"} 5\n"
					"latency_seconds_sum 0.002001353\n"
					"latency_seconds_count 5\n");
	tally_export_destroy(&e);
	tally_hist_destroy(&h);
}

/* The default histogram's default export: at most 40 series. */
Test(export_hist, default_at_most_40)
{
	char *got, *p;
	unsigned lines = 0;
	cr_assert_eq(tally_export_init(&e), 0);
	cr_assert_eq(tally_hist_init(&h, NULL), 0);
	cr_assert_eq(tally_export_add_hist(&e, "x_seconds", NULL, &h, NULL), 0);
	for (int64_t v = 300; v < 1000000; v += 997)
		tally_hist_record(&h, v);
	got = render(TALLY_EXPORT_PROMETHEUS);
	for (p = got; (p = strstr(p, "x_seconds_bucket{")); p++)
		lines++;
	cr_assert_eq(lines, TALLY_EXPORT_HIST_BUCKETS_DEFAULT, "%u bucket series", lines);
	cr_assert(strstr(got, "x_seconds_bucket{le=\"3600000000000\"} 1003\n"), "%s", got);
	free(got);
	tally_export_destroy(&e);
	tally_hist_destroy(&h);
}

/* The le lines of a render, in order, one string. */
static char *le_set(void)
{
	char *got = render(TALLY_EXPORT_PROMETHEUS), *o = got, *p = got, *q;
	while ((p = strstr(p, "le=\""))) {
		q = strchr(p + 4, '"');
		memmove(o, p + 4, (size_t)(q - p - 4));
		o += q - p - 4;
		*o++ = ' ';
		p = q;
	}
	*o = '\0';
	return got;
}

/* Whatever is recorded, every render has the same le set (with a cap, the
 * set once thinned the non-empty buckets of each render: 260 series came
 * and went over 60 renders). */
Test(export_hist, bounds_fixed_across_renders)
{
	struct tally_export_hist_opts capped = {1e-9, 8, NULL, 0};
	struct tally_hist h2;
	char *first, *now;
	uint64_t r = 12345;
	cr_assert_eq(tally_export_init(&e), 0);
	cr_assert_eq(tally_hist_init(&h, NULL), 0);
	cr_assert_eq(tally_hist_init(&h2, NULL), 0);
	cr_assert_eq(tally_export_add_hist(&e, "lat_seconds", NULL, &h, &capped), 0);
	cr_assert_eq(tally_export_add_hist(&e, "wait_seconds", NULL, &h2, NULL), 0);
	first = le_set();
	for (int i = 0; i < 60; i++) {
		for (int k = 0; k < 50; k++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			tally_hist_record(&h, (int64_t)((r >> 20) % ((uint64_t)1 << (i % 40 + 2))));
			tally_hist_record(&h2, (int64_t)((r >> 24) % ((uint64_t)1 << (i % 40 + 2))));
		}
		now = le_set();
		cr_assert_str_eq(now, first, "render %d", i);
		free(now);
	}
	free(first);
	tally_export_destroy(&e);
	tally_hist_destroy(&h);
	tally_hist_destroy(&h2);
}

/* The caller's le list: rounded up to bucket edges (log-linear), each one
 * of the bounds (explicit); bad lists refused with the reason. */
Test(export_hist, caller_bounds)
{
	static const uint64_t le[] = {99, 100, 1000, 1001, 5000};
	static const uint64_t down[] = {1000, 100}, above[] = {2000000};
	static const uint64_t b[] = {10, 100, 1000}, in_b[] = {100, 1000}, not_b[] = {50};
	struct tally_hist_opts o = {100, 1000000, 7, NULL, 0}, ob = {0, 0, 0, b, 3};
	struct tally_export_hist_opts x = {0, 0, le, 5}, xd = {0, 0, down, 2},
				      xa = {0, 0, above, 1}, xin = {0, 0, in_b, 2},
				      xnot = {0, 0, not_b, 1}, xnull = {0, 0, NULL, 2};
	struct tally_hist hb;
	cr_assert_eq(tally_export_init(&e), 0);
	cr_assert_eq(tally_hist_init(&h, &o), 0);
	cr_assert_eq(tally_hist_init(&hb, &ob), 0);
	/* 99: below's edge; 1000 and 1001 one bucket [1000, 1003] */
	cr_assert_eq(tally_export_add_hist(&e, "x_bytes", NULL, &h, &x), 0);
	tally_hist_record(&h, 1002);
	expect(TALLY_EXPORT_PROMETHEUS, "# HELP x_bytes tally histogram\n"
					"# TYPE x_bytes histogram\n"
					"x_bytes_bucket{le=\"99\"} 0\n"
					"x_bytes_bucket{le=\"100\"} 0\n"
					"x_bytes_bucket{le=\"1003\"} 1\n"
					"x_bytes_bucket{le=\"5023\"} 1\n"
					"x_bytes_bucket{le=\"+Inf\"} 1\n"
					"x_bytes_sum 1002\n"
					"x_bytes_count 1\n");
	cr_assert_eq(tally_export_add_hist(&e, "size_bytes", NULL, &h, &xd), -EINVAL);
	cr_assert(strstr(tally_export_error(&e), "increase strictly"), "%s", tally_export_error(&e));
	cr_assert_eq(tally_export_add_hist(&e, "size_bytes", NULL, &h, &xa), -EINVAL);
	cr_assert(strstr(tally_export_error(&e), "+Inf"), "%s", tally_export_error(&e));
	cr_assert_eq(tally_export_add_hist(&e, "size_bytes", NULL, &h, &xnull), -EINVAL);
	cr_assert_eq(tally_export_add_hist(&e, "size_bytes", NULL, &hb, &xnot), -EINVAL);
	cr_assert(strstr(tally_export_error(&e), "not one of the histogram's bounds"), "%s",
		  tally_export_error(&e));
	cr_assert_eq(tally_export_add_hist(&e, "size_bytes", NULL, &hb, &xin), 0);
	tally_export_destroy(&e);
	tally_hist_destroy(&h);
	tally_hist_destroy(&hb);
}

/* A labelled family: two histograms told apart by a label, in every
 * format; the label rules of vectors. */
Test(export_hist, labelled_family)
{
	static const uint64_t b[] = {10, 100};
	static const uint64_t b2[] = {10, 200};
	struct tally_hist_opts o = {0, 0, 0, b, 2}, o2 = {0, 0, 0, b2, 2};
	struct tally_export_hist_opts x = {0, 0, NULL, 0}, xc = {0, 2, NULL, 0};
	struct tally_hist get, set, other, nolabel;
	struct tally_counter c;
	cr_assert_eq(tally_export_init(&e), 0);
	cr_assert_eq(tally_hist_init(&get, &o), 0);
	cr_assert_eq(tally_hist_init(&set, &o), 0);
	cr_assert_eq(tally_hist_init(&nolabel, &o), 0);
	cr_assert_eq(tally_hist_init(&other, &o2), 0);
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	cr_assert_eq(tally_export_add_hist(&e, "req_bytes{cmd=\"get\"}", "Sizes.", &get, &x), 0);
	cr_assert_eq(tally_export_add_hist(&e, "req_bytes{cmd=\"set\",z=\"\"}", NULL, &set, NULL),
		     0);
	/* refused: the same labels (an empty value is no label), le, other
	 * buckets or options, another help, a name taken by a counter */
	cr_assert_eq(tally_export_add_hist(&e, "req_bytes{cmd=\"get\"}", NULL, &nolabel, NULL),
		     -EINVAL);
	cr_assert(strstr(tally_export_error(&e), "these labels"), "%s", tally_export_error(&e));
	cr_assert_eq(tally_export_add_hist(&e, "req_bytes{cmd=\"set\"}", NULL, &nolabel, NULL),
		     -EINVAL);
	cr_assert_eq(tally_export_add_hist(&e, "req_bytes{le=\"1\"}", NULL, &nolabel, NULL),
		     -EINVAL);
	cr_assert_eq(tally_export_add_hist(&e, "req_bytes{cmd=\"x\"}", NULL, &other, NULL),
		     -EINVAL);
	cr_assert(strstr(tally_export_error(&e), "other buckets"), "%s", tally_export_error(&e));
	cr_assert_eq(tally_export_add_hist(&e, "req_bytes{cmd=\"x\"}", NULL, &nolabel, &xc),
		     -EINVAL);
	cr_assert(strstr(tally_export_error(&e), "other tally_export_hist_opts"), "%s",
		  tally_export_error(&e));
	cr_assert_eq(tally_export_add_hist(&e, "req_bytes{cmd=\"x\"}", "Other.", &nolabel, NULL),
		     -EINVAL);
	cr_assert_eq(tally_export_add_counter(&e, "n", NULL, &c, TALLY_EXPORT_COUNTER), 0);
	cr_assert_eq(tally_export_add_hist(&e, "n{cmd=\"x\"}", NULL, &nolabel, NULL), -EINVAL);
	cr_assert(strstr(tally_export_error(&e), "not as a histogram"), "%s",
		  tally_export_error(&e));
	cr_assert_eq(tally_export_add_counter(&e, "req_bytes", NULL, &c, TALLY_EXPORT_COUNTER),
		     -EINVAL);
	/* the family's third member: no labels at all */
	cr_assert_eq(tally_export_add_hist(&e, "req_bytes", NULL, &nolabel, NULL), 0);
	tally_hist_record(&get, 5);
	tally_hist_record(&get, 50);
	tally_hist_record(&set, 500);
	tally_counter_add(&c, 2);
	expect(TALLY_EXPORT_PROMETHEUS, "# HELP req_bytes Sizes.\n"
					"# TYPE req_bytes histogram\n"
					"req_bytes_bucket{cmd=\"get\",le=\"10\"} 1\n"
					"req_bytes_bucket{cmd=\"get\",le=\"100\"} 2\n"
					"req_bytes_bucket{cmd=\"get\",le=\"+Inf\"} 2\n"
					"req_bytes_sum{cmd=\"get\"} 55\n"
					"req_bytes_count{cmd=\"get\"} 2\n"
					"req_bytes_bucket{cmd=\"set\",le=\"10\"} 0\n"
					"req_bytes_bucket{cmd=\"set\",le=\"100\"} 0\n"
					"req_bytes_bucket{cmd=\"set\",le=\"+Inf\"} 1\n"
					"req_bytes_sum{cmd=\"set\"} 500\n"
					"req_bytes_count{cmd=\"set\"} 1\n"
					"req_bytes_bucket{le=\"10\"} 0\n"
					"req_bytes_bucket{le=\"100\"} 0\n"
					"req_bytes_bucket{le=\"+Inf\"} 0\n"
					"req_bytes_sum 0\n"
					"req_bytes_count 0\n"
					"# HELP n_total tally counter\n"
					"# TYPE n_total counter\n"
					"n_total 2\n");
	expect(TALLY_EXPORT_STAT, "req_bytes_count{cmd=\"get\"} 2\n"
				  "req_bytes_sum{cmd=\"get\"} 55\n"
				  "req_bytes_count{cmd=\"set\"} 1\n"
				  "req_bytes_sum{cmd=\"set\"} 500\n"
				  "req_bytes_count 0\n"
				  "req_bytes_sum 0\n"
				  "n 2\n");
	expect(TALLY_EXPORT_JSON,
	       "{\"families\":[{\"name\":\"req_bytes\",\"type\":\"histogram\",\"help\":\"Sizes.\","
	       "\"samples\":[{\"labels\":{\"cmd\":\"get\"},\"count\":2,\"sum\":55,\"buckets\":"
	       "[{\"le\":10,\"count\":1},{\"le\":100,\"count\":2},{\"le\":\"+Inf\",\"count\":2}]},"
	       "{\"labels\":{\"cmd\":\"set\"},\"count\":1,\"sum\":500,\"buckets\":"
	       "[{\"le\":10,\"count\":0},{\"le\":100,\"count\":0},{\"le\":\"+Inf\",\"count\":1}]},"
	       "{\"labels\":{},\"count\":0,\"sum\":0,\"buckets\":"
	       "[{\"le\":10,\"count\":0},{\"le\":100,\"count\":0},{\"le\":\"+Inf\",\"count\":0}]}]},"
	       "{\"name\":\"n\",\"type\":\"counter\",\"help\":\"tally counter\",\"samples\":"
	       "[{\"labels\":{},\"value\":2}]}]}\n");
	tally_export_destroy(&e);
	tally_hist_destroy(&get);
	tally_hist_destroy(&set);
	tally_hist_destroy(&nolabel);
	tally_hist_destroy(&other);
	tally_counter_destroy(&c);
}

/* The cap thins the bounds evenly (keeping the last), never splits. */
Test(export_hist, cap)
{
	static const uint64_t b[] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct tally_hist_opts o = {0, 0, 0, b, 8};
	struct tally_export_hist_opts x = {0, 5, NULL, 0};
	cr_assert_eq(tally_export_init(&e), 0);
	cr_assert_eq(tally_hist_init(&h, &o), 0);
	cr_assert_eq(tally_export_add_hist(&e, "sizes", NULL, &h, &x), 0);
	for (int v = 1; v <= 9; v++)
		tally_hist_record(&h, v);
	expect(TALLY_EXPORT_PROMETHEUS, "# HELP sizes tally histogram\n"
					"# TYPE sizes histogram\n"
					"sizes_bucket{le=\"2\"} 2\n"
					"sizes_bucket{le=\"4\"} 4\n"
					"sizes_bucket{le=\"6\"} 6\n"
					"sizes_bucket{le=\"8\"} 8\n"
					"sizes_bucket{le=\"+Inf\"} 9\n"
					"sizes_sum 45\n"
					"sizes_count 9\n");
	tally_export_destroy(&e);
	tally_hist_destroy(&h);
}

Test(export_hist, bad_input)
{
	struct tally_export_hist_opts bad_scale = {-1.0, 0, NULL, 0}, bad_cap = {1.0, 1, NULL, 0};
	cr_assert_eq(tally_export_init(&e), 0);
	cr_assert_eq(tally_hist_init(&h, NULL), 0);
	cr_assert_eq(tally_export_add_hist(NULL, "x", NULL, &h, NULL), -EINVAL);
	cr_assert_eq(tally_export_add_hist(&e, "x", NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(tally_export_add_hist(&e, NULL, NULL, &h, NULL), -EINVAL);
	cr_assert_eq(tally_export_add_hist(&e, "Bad-Name", NULL, &h, NULL), -EINVAL);
	cr_assert_eq(tally_export_add_hist(&e, "x_count", NULL, &h, NULL), -EINVAL);
	cr_assert_eq(tally_export_add_hist(&e, "x", NULL, &h, &bad_scale), -EINVAL);
	cr_assert_eq(tally_export_add_hist(&e, "x", NULL, &h, &bad_cap), -EINVAL);
	cr_assert_eq(tally_export_add_hist(&e, "x", NULL, &h, NULL), 0);
	cr_assert_eq(tally_export_add_hist(&e, "x", NULL, &h, NULL), -EINVAL); /* twice */
	{
		char *got = render(TALLY_EXPORT_PROMETHEUS);
		cr_assert(!strncmp(got, "# HELP x tally histogram\n# TYPE x histogram\n", 44) &&
				  strstr(got, "x_bucket{le=\"+Inf\"} 0\nx_sum 0\nx_count 0\n"),
			  "%s", got);
		free(got);
	}
	tally_export_destroy(&e);
	tally_hist_destroy(&h);
}
