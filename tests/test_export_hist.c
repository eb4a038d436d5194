/*
 * Unit tests for tally/export_hist.h: a histogram rendered in every format,
 * exact strings; bounds at bucket edges, the cap, bad input.
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

/* Log-linear: edges of the non-empty buckets and of the ones just below,
 * the below bucket's edge, scaled to seconds. p = 7: 300 is in [300, 301],
 * 299 is [298, 299]'s upper edge. */
Test(export_hist, log_linear_edges_scaled)
{
	struct tally_hist_opts o = {100, 1000000, 7, NULL, 0};
	struct tally_export_hist_opts x = {1e-9, 0};
	cr_assert_eq(tally_export_init(&e), 0);
	cr_assert_eq(tally_hist_init(&h, &o), 0);
	cr_assert_eq(tally_export_add_hist(&e, "latency_seconds", "Latency.", &h, &x), 0);
	tally_hist_record(&h, 50);  /* below */
	tally_hist_record(&h, 300); /* [300, 301] */
	tally_hist_record(&h, 301);
	tally_hist_record(&h, 2000000); /* above */
	expect(TALLY_EXPORT_PROMETHEUS, "# HELP latency_seconds Latency.\n"
					"# TYPE latency_seconds histogram\n"
					"latency_seconds_bucket{le=\"0.000000099\"} 1\n"
					"latency_seconds_bucket{le=\"0.000000299\"} 1\n"
					"latency_seconds_bucket{le=\"0.000000301\"} 3\n"
					"latency_seconds_bucket{le=\"0.001\"} 3\n"
					"latency_seconds_bucket{le=\"+Inf\"} 4\n"
					"latency_seconds_sum 0.002000651\n"
					"latency_seconds_count 4\n");
	tally_export_destroy(&e);
	tally_hist_destroy(&h);
}

/* The cap thins the bounds evenly (keeping the last), never splits. */
Test(export_hist, cap)
{
	static const uint64_t b[] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct tally_hist_opts o = {0, 0, 0, b, 8};
	struct tally_export_hist_opts x = {0, 5};
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
	struct tally_export_hist_opts bad_scale = {-1.0, 0}, bad_cap = {1.0, 1};
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
	expect(TALLY_EXPORT_PROMETHEUS, "# HELP x tally histogram\n# TYPE x histogram\n"
					"x_bucket{le=\"+Inf\"} 0\nx_sum 0\nx_count 0\n");
	tally_export_destroy(&e);
	tally_hist_destroy(&h);
}
