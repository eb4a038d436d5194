/*
 * Unit tests for exports that Prometheus takes whole (issue 27): a tree's
 * gauges rendered as gauges when the caller gives no kinds (the tree's
 * TALLY_GROUP_ITEM_GAUGE), a tree's exported counters raw and monotonic
 * across tally_group_reset() and tally_tree_reset() (rstat.h: the raw
 * values never move) and tally_export_add_tree()'s options (NULL:
 * defaults). Exact output lines throughout, as tests/test_export.c.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <tally/rstat.h> /* also tells the build to link liburcu */
#include <tally/export_rstat.h>
#include "export_expect.h"

#include <stdio.h>

static struct tally_export E;

static void setup(void)
{
	cr_assert_eq(tally_export_init(&E), 0);
	urcu_memb_register_thread();
}

static void teardown(void)
{
	tally_export_destroy(&E);
	urcu_memb_unregister_thread();
}

TestSuite(export_tree, .init = setup, .fini = teardown);

/* A tree of two items, requests (a counter) and inflight_requests (a
 * gauge by the tree's own flags), and one group "a" under the root. */
static struct tally_tree *two_items(struct tally_group **a)
{
	static const char *const items[] = {"requests", "inflight_requests"};
	static const unsigned char flags[] = {0, TALLY_GROUP_ITEM_GAUGE};
	struct tally_tree_opts o;
	struct tally_tree *t;
	memset(&o, 0, sizeof(o));
	o.nr_items = 2;
	o.item_flags = flags;
	t = tally_tree_create_opts(&o);
	cr_assert(t);
	cr_assert_eq(tally_tree_set_item_names(t, items), 0);
	*a = tally_group_create(tally_tree_root(t));
	cr_assert(*a);
	cr_assert_eq(tally_group_set_name(*a, "a"), 0);
	return t;
}

static void done(struct tally_tree *t, struct tally_group *a)
{
	tally_export_destroy(&E);
	tally_export_init(&E);
	cr_assert_eq(tally_group_destroy(a), 0);
	tally_tree_destroy(t);
}

/* Export t as prefix x, the tree's own names and kinds, flushed first. */
static void export_x(struct tally_tree *t)
{
	struct tally_export_tree_opts o;
	memset(&o, 0, sizeof(o));
	o.prefix = "x";
	o.flags = TALLY_EXPORT_TREE_FLUSH;
	cr_assert_eq(tally_export_add_tree(&E, t, &o), 0, "%s", tally_export_error(&E));
}

/* ---- 3: kinds NULL takes the tree's TALLY_GROUP_ITEM_GAUGE ------------- */

Test(export_tree, gauge_flag_without_kinds)
{
	struct tally_group *a;
	struct tally_tree *t = two_items(&a);
	export_x(t);
	tally_group_mod(a, 0, 5);
	tally_group_mod(a, 1, 3);
	expect(&E, TALLY_EXPORT_STAT, "x_requests 5\nx_inflight_requests 3\n");
	/* The level comes down: a gauge follows it (a counter would hold
	 * its maximum, 3). */
	tally_group_mod(a, 1, -2);
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP x_requests_total tally tree item (this group and its descendants)\n"
	       "# TYPE x_requests_total counter\n"
	       "x_requests_total{group=\"/\"} 5\n"
	       "x_requests_total{group=\"/a\"} 5\n"
	       "# HELP x_requests_local_total tally tree item (this group alone)\n"
	       "# TYPE x_requests_local_total counter\n"
	       "x_requests_local_total{group=\"/\"} 0\n"
	       "x_requests_local_total{group=\"/a\"} 5\n"
	       "# HELP x_inflight_requests tally tree item (this group and its descendants)\n"
	       "# TYPE x_inflight_requests gauge\n"
	       "x_inflight_requests{group=\"/\"} 1\n"
	       "x_inflight_requests{group=\"/a\"} 1\n"
	       "# HELP x_inflight_requests_local tally tree item (this group alone)\n"
	       "# TYPE x_inflight_requests_local gauge\n"
	       "x_inflight_requests_local{group=\"/\"} 0\n"
	       "x_inflight_requests_local{group=\"/a\"} 1\n");
	/* Below zero, as a gauge may go. */
	tally_group_mod(a, 1, -4);
	expect(&E, TALLY_EXPORT_STAT, "x_requests 5\nx_inflight_requests -3\n");
	done(t, a);
}

/* Kinds given win over the tree's flags (the caller's choice). */
Test(export_tree, kinds_given_win)
{
	static const unsigned char kinds[] = {TALLY_EXPORT_GAUGE, TALLY_EXPORT_COUNTER};
	struct tally_group *a;
	struct tally_tree *t = two_items(&a);
	struct tally_export_tree_opts o;
	char *out;
	memset(&o, 0, sizeof(o));
	o.prefix = "y";
	o.kinds = kinds;
	o.flags = TALLY_EXPORT_TREE_FLUSH;
	cr_assert_eq(tally_export_add_tree(&E, t, &o), 0, "%s", tally_export_error(&E));
	tally_group_mod(a, 0, 2);
	tally_group_mod(a, 1, 1);
	out = render(&E, TALLY_EXPORT_PROMETHEUS);
	cr_expect(strstr(out, "# TYPE y_requests gauge\ny_requests{group=\"/\"} 2\n"), "%s", out);
	cr_expect(strstr(out, "# TYPE y_inflight_requests_total counter\n"
			      "y_inflight_requests_total{group=\"/\"} 1\n"),
		  "%s", out);
	free(out);
	done(t, a);
}

/* ---- 4: exported counters raw and monotonic across resets --------------- */

Test(export_tree, counters_raw_across_group_resets)
{
	struct tally_group *a;
	struct tally_tree *t = two_items(&a);
	export_x(t);
	tally_group_mod(a, 0, 4);
	tally_group_mod(a, 1, 2);
	expect(&E, TALLY_EXPORT_STAT, "x_requests 4\nx_inflight_requests 2\n");
	cr_assert_eq(tally_group_reset(a), 0);
	cr_assert_eq(tally_group_read(a, 0), 0); /* since the reset */
	tally_group_mod(a, 0, 3);
	free(render(&E, TALLY_EXPORT_PROMETHEUS)); /* a scrape between the resets */
	cr_assert_eq(tally_group_reset(a), 0);
	tally_group_mod(a, 0, 1);
	tally_group_mod(a, 1, -1);
	/* Everything ever counted, 4 + 3 + 1, on every row of the counter;
	 * the gauge's level (2 - 1: a reset leaves gauges alone). */
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP x_requests_total tally tree item (this group and its descendants)\n"
	       "# TYPE x_requests_total counter\n"
	       "x_requests_total{group=\"/\"} 8\n"
	       "x_requests_total{group=\"/a\"} 8\n"
	       "# HELP x_requests_local_total tally tree item (this group alone)\n"
	       "# TYPE x_requests_local_total counter\n"
	       "x_requests_local_total{group=\"/\"} 0\n"
	       "x_requests_local_total{group=\"/a\"} 8\n"
	       "# HELP x_inflight_requests tally tree item (this group and its descendants)\n"
	       "# TYPE x_inflight_requests gauge\n"
	       "x_inflight_requests{group=\"/\"} 1\n"
	       "x_inflight_requests{group=\"/a\"} 1\n"
	       "# HELP x_inflight_requests_local tally tree item (this group alone)\n"
	       "# TYPE x_inflight_requests_local gauge\n"
	       "x_inflight_requests_local{group=\"/\"} 0\n"
	       "x_inflight_requests_local{group=\"/a\"} 1\n");
	/* The since-reset readers still read since the reset. */
	cr_expect_eq(tally_group_read(a, 0), 1);
	cr_expect_eq(tally_group_read_local(a, 0), 1);
	done(t, a);
}

/* A reset of the whole tree, before the first render and between renders:
 * the root's rows too stay raw. */
Test(export_tree, counters_raw_across_tree_resets)
{
	struct tally_group *a;
	struct tally_tree *t = two_items(&a);
	char *out;
	tally_group_mod(a, 0, 6);
	tally_group_mod(tally_tree_root(t), 0, 1);
	cr_assert_eq(tally_tree_reset(t), 0);
	export_x(t);
	expect(&E, TALLY_EXPORT_STAT, "x_requests 7\nx_inflight_requests 0\n");
	tally_group_mod(a, 0, 2);
	cr_assert_eq(tally_tree_reset(t), 0);
	tally_group_mod(tally_tree_root(t), 0, 1);
	out = render(&E, TALLY_EXPORT_OPENMETRICS);
	cr_expect(strstr(out, "x_requests_total{group=\"/\"} 10\n"
			      "x_requests_total{group=\"/a\"} 8\n"),
		  "%s", out);
	cr_expect(strstr(out, "x_requests_local_total{group=\"/\"} 2\n"
			      "x_requests_local_total{group=\"/a\"} 8\n"),
		  "%s", out);
	free(out);
	cr_expect_eq(tally_group_read(tally_tree_root(t), 0), 1);
	done(t, a);
}

/* ---- 13: the options struct --------------------------------------------- */

/* NULL options: no prefix, the tree's names and kinds, no flush (rows as
 * of the last flush). */
Test(export_tree, null_opts_defaults)
{
	struct tally_group *a;
	struct tally_tree *t = two_items(&a);
	cr_assert_eq(tally_export_add_tree(&E, t, NULL), 0, "%s", tally_export_error(&E));
	tally_group_mod(a, 0, 3);
	tally_group_mod(a, 1, 2);
	expect(&E, TALLY_EXPORT_STAT, "requests 0\ninflight_requests 0\n");
	tally_group_flush_force(tally_tree_root(t));
	expect(&E, TALLY_EXPORT_STAT, "requests 3\ninflight_requests 2\n");
	done(t, a);
}

static const char *upper(const struct tally_group *g, void *arg)
{
	(void)g;
	return (const char *)arg;
}

Test(export_tree, opts_every_member)
{
	static const char *const names[] = {"req", "busy"};
	static const char *const helps[] = {"Requests.", "Busy workers."};
	struct tally_group *a;
	struct tally_tree *t = two_items(&a);
	struct tally_export_tree_opts o;
	memset(&o, 0, sizeof(o));
	o.prefix = "p";
	o.names = names;
	o.helps = helps;
	o.name_fn = upper;
	o.name_arg = (void *)"A";
	o.flags = TALLY_EXPORT_TREE_FLUSH;
	cr_assert_eq(tally_export_add_tree(&E, t, &o), 0, "%s", tally_export_error(&E));
	tally_group_mod(a, 0, 1);
	tally_group_mod(a, 1, 1);
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP p_req_total Requests. (this group and its descendants)\n"
	       "# TYPE p_req_total counter\n"
	       "p_req_total{group=\"/\"} 1\n"
	       "p_req_total{group=\"/A\"} 1\n"
	       "# HELP p_req_local_total Requests. (this group alone)\n"
	       "# TYPE p_req_local_total counter\n"
	       "p_req_local_total{group=\"/\"} 0\n"
	       "p_req_local_total{group=\"/A\"} 1\n"
	       "# HELP p_busy Busy workers. (this group and its descendants)\n"
	       "# TYPE p_busy gauge\n"
	       "p_busy{group=\"/\"} 1\n"
	       "p_busy{group=\"/A\"} 1\n"
	       "# HELP p_busy_local Busy workers. (this group alone)\n"
	       "# TYPE p_busy_local gauge\n"
	       "p_busy_local{group=\"/\"} 0\n"
	       "p_busy_local{group=\"/A\"} 1\n");
	/* Bad flags and bad kinds: -EINVAL, nothing registered. */
	o.prefix = "q";
	o.flags = 8;
	cr_expect_eq(tally_export_add_tree(&E, t, &o), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E), "tree 'q': unknown flags");
	{
		static const unsigned char bad[] = {0, 7};
		o.flags = 0;
		o.kinds = bad;
		cr_expect_eq(tally_export_add_tree(&E, t, &o), -EINVAL);
		cr_expect_str_eq(tally_export_error(&E),
				 "kind of item 1 is neither counter nor gauge");
	}
	cr_expect_eq(tally_export_add_tree(&E, NULL, &o), -EINVAL);
	cr_expect_eq(tally_export_add_tree(NULL, t, &o), -EINVAL);
	expect(&E, TALLY_EXPORT_STAT, "p_req 1\np_busy 1\n");
	done(t, a);
}

/* ---- issue 29, item 4: labels on tree items ------------------------------ */

/* Items named "requests{method=\"get\"}" and "requests{method=\"set\"}"
 * are two series of one family requests, hierarchical and local, each row
 * with its group label first; the vectors' label rules hold, and the
 * label group is the tree's own. */
Test(export_tree, item_labels)
{
	static const char *const items[] = {"requests{method=\"get\"}", "requests{method=\"set\"}",
					    "bytes"};
	static const char *const dup[] = {"requests{method=\"get\"}", "requests{method=\"get\"}",
					  "bytes"};
	static const char *const empty[] = {"requests{method=\"\"}", "requests", "bytes"};
	static const char *const own[] = {"requests{group=\"x\"}", "requests", "bytes"};
	static const char *const le[] = {"requests{le=\"1\"}", "requests", "bytes"};
	static const unsigned char mixed[] = {TALLY_EXPORT_COUNTER, TALLY_EXPORT_GAUGE,
					      TALLY_EXPORT_COUNTER};
	struct tally_export_tree_opts o;
	struct tally_tree_opts to;
	struct tally_tree *t;
	struct tally_group *a;
	memset(&to, 0, sizeof(to));
	to.nr_items = 3;
	t = tally_tree_create_opts(&to);
	cr_assert(t);
	cr_assert_eq(tally_tree_set_item_names(t, items), 0);
	a = tally_group_create(tally_tree_root(t));
	cr_assert(a);
	cr_assert_eq(tally_group_set_name(a, "a"), 0);
	memset(&o, 0, sizeof(o));
	o.prefix = "x";
	o.flags = TALLY_EXPORT_TREE_FLUSH;
	/* refused, nothing registered: one series twice (also once an empty
	 * value is dropped), the label group, le, two kinds in one family */
	o.names = dup;
	cr_assert_eq(tally_export_add_tree(&E, t, &o), -EINVAL);
	cr_assert(strstr(tally_export_error(&E), "gives a series its family has already (the same "
						  "labels)"),
		  "%s", tally_export_error(&E));
	o.names = empty;
	cr_assert_eq(tally_export_add_tree(&E, t, &o), -EINVAL);
	cr_assert(strstr(tally_export_error(&E), "an empty label value is the label's absence"),
		  "%s", tally_export_error(&E));
	o.names = own;
	cr_assert_eq(tally_export_add_tree(&E, t, &o), -EINVAL);
	cr_assert(strstr(tally_export_error(&E), "the source's own (a tree's group path)"), "%s",
		  tally_export_error(&E));
	o.names = le;
	cr_assert_eq(tally_export_add_tree(&E, t, &o), -EINVAL);
	o.names = NULL;
	o.kinds = mixed;
	cr_assert_eq(tally_export_add_tree(&E, t, &o), -EINVAL);
	cr_assert(strstr(tally_export_error(&E), "differ in kind"), "%s", tally_export_error(&E));
	expect(&E, TALLY_EXPORT_STAT, "");
	/* the tree's own names, labelled */
	o.kinds = NULL;
	cr_assert_eq(tally_export_add_tree(&E, t, &o), 0, "%s", tally_export_error(&E));
	tally_group_mod(a, 0, 5);
	tally_group_mod(a, 1, 2);
	tally_group_mod(tally_tree_root(t), 1, 1);
	tally_group_mod(a, 2, 100);
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP x_requests_total tally tree item (this group and its descendants)\n"
	       "# TYPE x_requests_total counter\n"
	       "x_requests_total{group=\"/\",method=\"get\"} 5\n"
	       "x_requests_total{group=\"/\",method=\"set\"} 3\n"
	       "x_requests_total{group=\"/a\",method=\"get\"} 5\n"
	       "x_requests_total{group=\"/a\",method=\"set\"} 2\n"
	       "# HELP x_requests_local_total tally tree item (this group alone)\n"
	       "# TYPE x_requests_local_total counter\n"
	       "x_requests_local_total{group=\"/\",method=\"get\"} 0\n"
	       "x_requests_local_total{group=\"/\",method=\"set\"} 1\n"
	       "x_requests_local_total{group=\"/a\",method=\"get\"} 5\n"
	       "x_requests_local_total{group=\"/a\",method=\"set\"} 2\n"
	       "# HELP x_bytes_total tally tree item (this group and its descendants)\n"
	       "# TYPE x_bytes_total counter\n"
	       "x_bytes_total{group=\"/\"} 100\n"
	       "x_bytes_total{group=\"/a\"} 100\n"
	       "# HELP x_bytes_local_total tally tree item (this group alone)\n"
	       "# TYPE x_bytes_local_total counter\n"
	       "x_bytes_local_total{group=\"/\"} 0\n"
	       "x_bytes_local_total{group=\"/a\"} 100\n");
	expect(&E, TALLY_EXPORT_STAT,
	       "x_requests{method=\"get\"} 5\nx_requests{method=\"set\"} 3\nx_bytes 100\n");
	done(t, a);
}

/* ---- issue 28: a histogram per group, a family with a row per group ---- */

Test(export_tree, group_histograms)
{
	static const uint64_t bounds[] = {1000, 5000, 20000};
	static const char *const items[] = {"requests"};
	static const char *const hnames[] = {"latency_seconds"};
	static const char *const hhelps[] = {"Request latency."};
	struct tally_hist_opts h = {0, 0, 0, bounds, 3};
	struct tally_export_hist_opts eo = {1e-6, 0, NULL, 0}; /* us recorded */
	struct tally_export_tree_opts xo;
	struct tally_tree_opts o;
	struct tally_tree *t;
	struct tally_group *a, *b;
	memset(&o, 0, sizeof(o));
	o.nr_items = 1;
	o.hists = &h;
	o.nr_hists = 1;
	t = tally_tree_create_opts(&o);
	cr_assert(t);
	cr_assert_eq(tally_tree_set_item_names(t, items), 0);
	a = tally_group_create_named(tally_tree_root(t), "a");
	b = tally_group_create_named(a, "b");
	memset(&xo, 0, sizeof(xo));
	xo.prefix = "x";
	xo.flags = TALLY_EXPORT_TREE_FLUSH;
	xo.hist_names = hnames;
	xo.hist_helps = hhelps;
	xo.hist_opts = &eo;
	cr_assert_eq(tally_export_add_tree(&E, t, &xo), 0, "%s", tally_export_error(&E));
	tally_group_record(a, 0, 700);
	tally_group_record(b, 0, 3000);
	tally_group_record(b, 0, 3000);
	tally_group_record(b, 0, 90000);
	tally_group_mod(b, 0, 4);
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP x_requests_total tally tree item (this group and its descendants)\n"
	       "# TYPE x_requests_total counter\n"
	       "x_requests_total{group=\"/\"} 4\n"
	       "x_requests_total{group=\"/a\"} 4\n"
	       "x_requests_total{group=\"/a/b\"} 4\n"
	       "# HELP x_requests_local_total tally tree item (this group alone)\n"
	       "# TYPE x_requests_local_total counter\n"
	       "x_requests_local_total{group=\"/\"} 0\n"
	       "x_requests_local_total{group=\"/a\"} 0\n"
	       "x_requests_local_total{group=\"/a/b\"} 4\n"
	       "# HELP x_latency_seconds Request latency.\n"
	       "# TYPE x_latency_seconds histogram\n"
	       "x_latency_seconds_bucket{group=\"/\",le=\"0.001\"} 1\n"
	       "x_latency_seconds_bucket{group=\"/\",le=\"0.005\"} 3\n"
	       "x_latency_seconds_bucket{group=\"/\",le=\"0.02\"} 3\n"
	       "x_latency_seconds_bucket{group=\"/\",le=\"+Inf\"} 4\n"
	       "x_latency_seconds_sum{group=\"/\"} 0.0967\n"
	       "x_latency_seconds_count{group=\"/\"} 4\n"
	       "x_latency_seconds_bucket{group=\"/a\",le=\"0.001\"} 1\n"
	       "x_latency_seconds_bucket{group=\"/a\",le=\"0.005\"} 3\n"
	       "x_latency_seconds_bucket{group=\"/a\",le=\"0.02\"} 3\n"
	       "x_latency_seconds_bucket{group=\"/a\",le=\"+Inf\"} 4\n"
	       "x_latency_seconds_sum{group=\"/a\"} 0.0967\n"
	       "x_latency_seconds_count{group=\"/a\"} 4\n"
	       "x_latency_seconds_bucket{group=\"/a/b\",le=\"0.001\"} 0\n"
	       "x_latency_seconds_bucket{group=\"/a/b\",le=\"0.005\"} 2\n"
	       "x_latency_seconds_bucket{group=\"/a/b\",le=\"0.02\"} 2\n"
	       "x_latency_seconds_bucket{group=\"/a/b\",le=\"+Inf\"} 3\n"
	       "x_latency_seconds_sum{group=\"/a/b\"} 0.096\n"
	       "x_latency_seconds_count{group=\"/a/b\"} 3\n");
	expect(&E, TALLY_EXPORT_STAT,
	       "x_requests 4\nx_latency_seconds_count 4\nx_latency_seconds_sum 0.0967\n");
	{
		char *js = render(&E, TALLY_EXPORT_JSON);
		cr_assert(strstr(js, "{\"name\":\"x_latency_seconds\",\"type\":\"histogram\",\"help\":"
				     "\"Request latency.\",\"samples\":[{\"labels\":{\"group\":\"/\"},"
				     "\"count\":4,\"sum\":0.0967,\"buckets\":[{\"le\":0.001,\"count\":1},"),
			  "%s", js);
		free(js);
	}
	/* A reset moves nothing exported; a destroyed group's records stay
	 * in its parent's row. */
	cr_assert_eq(tally_tree_reset(t), 0);
	cr_assert_eq(tally_group_destroy(b), 0);
	tally_group_record(a, 0, 20000);
	expect(&E, TALLY_EXPORT_STAT,
	       "x_requests 4\nx_latency_seconds_count 5\nx_latency_seconds_sum 0.1167\n");
	/* bad options: nothing registered */
	{
		struct tally_export_hist_opts bad = {-1.0, 0, NULL, 0};
		static const uint64_t notours[] = {1500};
		struct tally_export_hist_opts bad2 = {0, 0, notours, 1};
		xo.prefix = "y";
		xo.hist_opts = &bad;
		cr_assert_eq(tally_export_add_tree(&E, t, &xo), -EINVAL);
		xo.hist_opts = &bad2; /* not one of the explicit bounds */
		cr_assert_eq(tally_export_add_tree(&E, t, &xo), -EINVAL);
		cr_assert(strstr(tally_export_error(&E), "not one of the histogram's bounds"), "%s",
			  tally_export_error(&E));
	}
	tally_export_destroy(&E);
	tally_export_init(&E);
	cr_assert_eq(tally_group_destroy(a), 0);
	tally_tree_destroy(t);
}
