/*
 * Unit tests for tally/export.h and tally/export_rstat.h: exact output of
 * every format for counters, gauges, vectors and trees; escaping of help
 * texts and label values; a buffer too small (-ENOSPC, the size needed,
 * the buffer untouched); bad names, help texts and group names rejected
 * with a message; widening across a 2^W wrap (the w32 build wraps at 2^32)
 * and a decrement held, never a jump; streamed renders (render_write: the
 * bytes of render, below and far past its buffer; an output error stops
 * it); content negotiation.
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

TestSuite(export, .init = setup, .fini = teardown);

/* ---- counters and gauges ------------------------------------------------- */

Test(export, counter_and_gauge_every_format)
{
	struct tally_counter c, g;
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	cr_assert_eq(tally_counter_init(&g, 0, 0), 0);
	tally_counter_add(&c, 42);
	tally_counter_add(&g, -7);
	cr_assert_eq(tally_export_add_counter(&E, "requests", "Requests served.", &c,
					      TALLY_EXPORT_COUNTER), 0);
	cr_assert_eq(tally_export_add_counter(&E, "queue_depth", "Queued requests.", &g,
					      TALLY_EXPORT_GAUGE), 0);
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP requests_total Requests served.\n"
	       "# TYPE requests_total counter\n"
	       "requests_total 42\n"
	       "# HELP queue_depth Queued requests.\n"
	       "# TYPE queue_depth gauge\n"
	       "queue_depth -7\n");
	expect(&E, TALLY_EXPORT_OPENMETRICS,
	       "# HELP requests Requests served.\n"
	       "# TYPE requests counter\n"
	       "requests_total 42\n"
	       "# HELP queue_depth Queued requests.\n"
	       "# TYPE queue_depth gauge\n"
	       "queue_depth -7\n"
	       "# EOF\n");
	expect(&E, TALLY_EXPORT_STAT, "requests 42\nqueue_depth -7\n");
	expect(&E, TALLY_EXPORT_JSON,
	       "{\"families\":["
	       "{\"name\":\"requests\",\"type\":\"counter\",\"help\":\"Requests served.\","
	       "\"samples\":[{\"labels\":{},\"value\":42}]},"
	       "{\"name\":\"queue_depth\",\"type\":\"gauge\",\"help\":\"Queued requests.\","
	       "\"samples\":[{\"labels\":{},\"value\":-7}]}]}\n");
	tally_counter_destroy(&c);
	tally_counter_destroy(&g);
}

Test(export, help_escaping_per_format)
{
	struct tally_counter c;
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	cr_assert_eq(tally_export_add_counter(&E, "hits", "a\\b \"q\"\nnext\ttab \xc3\xa9", &c,
					      TALLY_EXPORT_COUNTER), 0);
	/* 0.0.4 escapes backslash and newline in help; a quote stays. */
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP hits_total a\\\\b \"q\"\\nnext\ttab \xc3\xa9\n"
	       "# TYPE hits_total counter\nhits_total 0\n");
	/* OpenMetrics escapes the quote too. */
	expect(&E, TALLY_EXPORT_OPENMETRICS,
	       "# HELP hits a\\\\b \\\"q\\\"\\nnext\ttab \xc3\xa9\n"
	       "# TYPE hits counter\nhits_total 0\n# EOF\n");
	/* JSON: control characters as \u00XX. */
	expect(&E, TALLY_EXPORT_JSON,
	       "{\"families\":[{\"name\":\"hits\",\"type\":\"counter\","
	       "\"help\":\"a\\\\b \\\"q\\\"\\nnext\\u0009tab \xc3\xa9\","
	       "\"samples\":[{\"labels\":{},\"value\":0}]}]}\n");
	tally_counter_destroy(&c);
}

Test(export, default_help_text)
{
	struct tally_counter c;
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	cr_assert_eq(tally_export_add_counter(&E, "hits", NULL, &c, TALLY_EXPORT_COUNTER), 0);
	/* Blanks only: parsers trim them away, promtool says "no help text"
	 * (found by the fuzzer): the default help too. */
	cr_assert_eq(tally_export_add_counter(&E, "misses", " \t ", &c, TALLY_EXPORT_COUNTER), 0);
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP hits_total tally counter\n# TYPE hits_total counter\nhits_total 0\n"
	       "# HELP misses_total tally counter\n# TYPE misses_total counter\nmisses_total 0\n");
	tally_counter_destroy(&c);
}

/* ---- widening ----------------------------------------------------------------- */

/* The largest add a word allows with 32-bit words (2^40 with 64-bit ones,
 * whose 64-bit totals cannot pass the wrap themselves). */
#define BIG_ADD (TALLY_WORD_BITS == 32 ? TALLY_SWORD_MAX : (tally_sword)((int64_t)1 << 40))

/* Three big adds with a render after each: the raw word wraps (at 2^32 in
 * the w32 build), the exported total does not. */
Test(export, counter_widened_across_wrap)
{
	struct tally_counter c;
	char buf[256];
	size_t len;
	uint64_t want = 0;
	int i;
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	cr_assert_eq(tally_export_add_counter(&E, "events", "Events.", &c, TALLY_EXPORT_COUNTER),
		     0);
	for (i = 0; i < 3; i++) {
		char line[64];
		tally_counter_add(&c, BIG_ADD);
		want += (uint64_t)BIG_ADD;
		cr_assert_eq(tally_export_render(&E, TALLY_EXPORT_STAT, buf, sizeof(buf), &len), 0);
		snprintf(line, sizeof(line), "events %llu\n", (unsigned long long)want);
		cr_expect_str_eq(buf, line);
	}
	if (TALLY_WORD_BITS == 32) {
		cr_expect_eq(want, 3ull * 2147483647ull, "the w32 build passes 2^32");
		/* The raw sum itself has wrapped: the widened total has not. */
		cr_expect_neq((uint64_t)(tally_uword)tally_counter_sum(&c), want);
	}
	tally_counter_destroy(&c);
}

/* A counter that goes back (decremented) is held, never a ~2^W jump, and
 * resumes once the raw value passes the last one again. */
Test(export, decrement_is_held)
{
	struct tally_counter c;
	char buf[128];
	size_t len;
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	cr_assert_eq(tally_export_add_counter(&E, "events", "Events.", &c, TALLY_EXPORT_COUNTER),
		     0);
	tally_counter_add(&c, 10);
	cr_assert_eq(tally_export_render(&E, TALLY_EXPORT_STAT, buf, sizeof(buf), &len), 0);
	cr_expect_str_eq(buf, "events 10\n");
	tally_counter_add(&c, -3);
	cr_assert_eq(tally_export_render(&E, TALLY_EXPORT_STAT, buf, sizeof(buf), &len), 0);
	cr_expect_str_eq(buf, "events 10\n");
	tally_counter_add(&c, 5); /* raw 12 */
	cr_assert_eq(tally_export_render(&E, TALLY_EXPORT_STAT, buf, sizeof(buf), &len), 0);
	cr_expect_str_eq(buf, "events 12\n");
	tally_counter_destroy(&c);
}

/* Exact sums, never the approximate read: one add below the batch is not
 * folded, so tally_counter_read() would still say 0. */
Test(export, exact_not_approximate)
{
	struct tally_counter c;
	char buf[128];
	size_t len;
	cr_assert_eq(tally_counter_init(&c, 0, 1000), 0);
	tally_counter_add(&c, 3);
	cr_assert_eq(tally_counter_read(&c), 0);
	cr_assert_eq(tally_export_add_counter(&E, "events", "Events.", &c, TALLY_EXPORT_COUNTER),
		     0);
	cr_assert_eq(tally_export_render(&E, TALLY_EXPORT_STAT, buf, sizeof(buf), &len), 0);
	cr_expect_str_eq(buf, "events 3\n");
	tally_counter_destroy(&c);
}

/* ---- buffers ---------------------------------------------------------------- */

Test(export, buffer_too_small)
{
	struct tally_counter c;
	const char *want = "# HELP hits_total Hits.\n# TYPE hits_total counter\nhits_total 5\n";
	char buf[128];
	size_t len = 0, i;
	cr_assert_eq(tally_counter_init(&c, 5, 0), 0);
	cr_assert_eq(tally_export_add_counter(&E, "hits", "Hits.", &c, TALLY_EXPORT_COUNTER), 0);
	for (i = 0; i <= strlen(want); i++) {
		memset(buf, 'X', sizeof(buf));
		cr_assert_eq(tally_export_render(&E, TALLY_EXPORT_PROMETHEUS, buf, i, &len), -ENOSPC,
			     "size %zu", i);
		cr_expect_eq(len, strlen(want) + 1, "needed: with the NUL");
		cr_expect_eq(buf[0], 'X', "nothing written");
		cr_expect_eq(buf[i > 0 ? i - 1 : 0], 'X', "nothing written");
		cr_expect(strstr(tally_export_error(&E), "bytes needed") != NULL);
	}
	cr_assert_eq(tally_export_render(&E, TALLY_EXPORT_PROMETHEUS, NULL, 0, &len), -ENOSPC);
	cr_expect_eq(len, strlen(want) + 1);
	memset(buf, 'X', sizeof(buf));
	cr_assert_eq(tally_export_render(&E, TALLY_EXPORT_PROMETHEUS, buf, strlen(want) + 1, &len),
		     0);
	cr_expect_eq(len, strlen(want));
	cr_expect_str_eq(buf, want);
	cr_expect_eq(buf[strlen(want) + 1], 'X');
	tally_counter_destroy(&c);
}

Test(export, bad_render_arguments)
{
	char buf[8];
	size_t len;
	cr_expect_eq(tally_export_render(NULL, 0, buf, sizeof(buf), &len), -EINVAL);
	cr_expect_eq(tally_export_render(&E, 9, buf, sizeof(buf), &len), -EINVAL);
	cr_expect(strstr(tally_export_error(&E), "unknown format") != NULL);
	cr_expect_eq(tally_export_render(&E, 0, NULL, 4, &len), -EINVAL);
	/* An empty exporter renders empty text (OpenMetrics: just # EOF). */
	cr_expect_eq(tally_export_render(&E, TALLY_EXPORT_PROMETHEUS, buf, sizeof(buf), &len), 0);
	cr_expect_str_eq(buf, "");
	cr_expect_eq(tally_export_render(&E, TALLY_EXPORT_OPENMETRICS, buf, sizeof(buf), &len), 0);
	cr_expect_str_eq(buf, "# EOF\n");
}

/* ---- names -------------------------------------------------------------------- */

Test(export, bad_names_rejected_with_message)
{
	static const char *const bad[] = {
		"",           "9lives",          "__reserved",     "Upper",     "camelCase",
		"has-dash",   "has:colon",       "has space",      "x_total",   "x_created",
		"x_count",    "x_sum",           "x_bucket",       "x_info",    "latency_ms",
		"size_kb",    "wait_s",          "time_minutes",   "pause_milliseconds",
		"size_kilobytes", "size_bits",   "hits_counter",   "queue_gauge_x",
		"caf\xc3\xa9",
	};
	struct tally_counter c;
	char buf[64];
	size_t len, i;
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(tally_export_add_counter(&E, bad[i], "h", &c, TALLY_EXPORT_COUNTER),
			     -EINVAL, "name '%s' accepted", bad[i]);
		cr_expect(strstr(tally_export_error(&E), "metric name") != NULL, "'%s': %s", bad[i],
			  tally_export_error(&E));
	}
	/* The message quotes the name byte for byte, whatever the signedness
	 * of char on the target (UTF-8 kept, control characters as '?'). */
	cr_expect_eq(tally_export_add_counter(&E, "caf\xc3\xa9", "h", &c, 0), -EINVAL);
	cr_expect(strstr(tally_export_error(&E), "'caf\xc3\xa9'") != NULL, "%s",
		  tally_export_error(&E));
	cr_expect_eq(tally_export_add_counter(&E, "a\tb", "h", &c, 0), -EINVAL);
	cr_expect(strstr(tally_export_error(&E), "'a?b'") != NULL, "%s", tally_export_error(&E));
	cr_expect_eq(tally_export_add_counter(&E, NULL, "h", &c, 0), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E), "metric name is NULL");
	cr_expect_eq(tally_export_add_counter(&E, "latency_ms", "h", &c, 0), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E),
			 "metric name 'latency_ms' contains an abbreviated unit as a word "
			 "(spell out a base unit: seconds, bytes)");
	/* Nothing was registered. */
	cr_expect_eq(tally_export_render(&E, TALLY_EXPORT_PROMETHEUS, buf, sizeof(buf), &len), 0);
	cr_expect_str_eq(buf, "");
	/* Good ones, including base units and words that only look like
	 * units. */
	cr_expect_eq(tally_export_add_counter(&E, "read_bytes", "h", &c, 0), 0);
	cr_expect_eq(tally_export_add_counter(&E, "cpu_seconds", "h", &c, 0), 0);
	cr_expect_eq(tally_export_add_counter(&E, "_private2", "h", &c, 0), 0);
	cr_expect_eq(tally_export_add_counter(&E, "thermometers", "h", &c, 0), 0);
	/* Duplicates. */
	cr_expect_eq(tally_export_add_counter(&E, "read_bytes", "h", &c, 0), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E), "metric name 'read_bytes' is already registered");
	/* Bad help and kind. */
	cr_expect_eq(tally_export_add_counter(&E, "other", "bad \xff utf-8", &c, 0), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E), "help text of 'other' is not valid UTF-8");
	cr_expect_eq(tally_export_add_counter(&E, "other", "surrogate \xed\xa0\x80", &c, 0),
		     -EINVAL);
	cr_expect_eq(tally_export_add_counter(&E, "other", "overlong \xc0\xaf", &c, 0), -EINVAL);
	cr_expect_eq(tally_export_add_counter(&E, "other", "h", &c, 7), -EINVAL);
	cr_expect_eq(tally_export_add_counter(&E, "other", "h", NULL, 0), -EINVAL);
	tally_counter_destroy(&c);
}

/* ---- vectors -------------------------------------------------------------------- */

Test(export, vec_names_kinds_and_defaults)
{
	static const char *const vnames[] = {"pgfault", NULL, "nr_free"};
	static const char *const helps[] = {"Page faults.", NULL, "Free pages."};
	static const unsigned char kinds[] = {TALLY_EXPORT_COUNTER, TALLY_EXPORT_COUNTER,
					      TALLY_EXPORT_GAUGE};
	struct tally_vec v, w;
	struct tally_vec_opts o;
	memset(&o, 0, sizeof(o));
	o.nr_items = 3;
	o.names = vnames;
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_assert_eq(tally_vec_init(&w, 2, 0), 0);
	tally_vec_mod(&v, 0, 11);
	tally_vec_mod(&v, 1, 2);
	tally_vec_mod(&v, 2, -4);
	tally_vec_mod(&w, 1, 9);
	/* names NULL: the vector's own names; item1 has none. */
	cr_assert_eq(tally_export_add_vec(&E, "vm", &v, NULL, helps, kinds), 0,
		     "%s", tally_export_error(&E));
	/* Explicit names, no prefix. */
	{
		static const char *const wn[] = {"alpha", "beta"};
		cr_assert_eq(tally_export_add_vec(&E, NULL, &w, wn, NULL, NULL), 0);
	}
	expect(&E, TALLY_EXPORT_OPENMETRICS,
	       "# HELP vm_pgfault Page faults.\n# TYPE vm_pgfault counter\nvm_pgfault_total 11\n"
	       "# HELP vm_item1 tally vector item\n# TYPE vm_item1 counter\nvm_item1_total 2\n"
	       "# HELP vm_nr_free Free pages.\n# TYPE vm_nr_free gauge\nvm_nr_free -4\n"
	       "# HELP alpha tally vector item\n# TYPE alpha counter\nalpha_total 0\n"
	       "# HELP beta tally vector item\n# TYPE beta counter\nbeta_total 9\n"
	       "# EOF\n");
	expect(&E, TALLY_EXPORT_STAT, "vm_pgfault 11\nvm_item1 2\nvm_nr_free -4\nalpha 0\nbeta 9\n");
	/* A bad item name rejects the whole vector. */
	{
		static const char *const bad[] = {"ok", "bad name"};
		cr_expect_eq(tally_export_add_vec(&E, "x", &w, bad, NULL, NULL), -EINVAL);
		cr_expect_str_eq(tally_export_error(&E),
				 "metric name 'x_bad name' is not lowercase snake_case "
				 "([a-z_][a-z0-9_]*) [names[1]]");
	}
	{
		static const unsigned char badk[] = {0, 5};
		cr_expect_eq(tally_export_add_vec(&E, "y", &w, NULL, NULL, badk), -EINVAL);
	}
	/* A reset of the vector does not move exported counters back. */
	tally_vec_destroy(&v);
	tally_vec_destroy(&w);
}

/* ---- trees ---------------------------------------------------------------------- */

struct names {
	struct tally_group *g[8];
	const char *n[8];
	int count;
};

static const char *group_name(const struct tally_group *g, void *arg)
{
	struct names *ns = (struct names *)arg;
	int i;
	for (i = 0; i < ns->count; i++)
		if (ns->g[i] == g)
			return ns->n[i];
	return NULL;
}

static struct tally_group *named(struct names *ns, struct tally_group *parent, const char *n)
{
	struct tally_group *g = tally_group_create(parent);
	cr_assert(g);
	ns->g[ns->count] = g;
	ns->n[ns->count++] = n;
	return g;
}

Test(export, tree_paths_hierarchical_and_local)
{
	static const char *const items[] = {"pgfault", "usage"};
	static const unsigned char kinds[] = {TALLY_EXPORT_COUNTER, TALLY_EXPORT_GAUGE};
	struct names ns;
	struct tally_tree *t = tally_tree_create(2);
	struct tally_group *a, *b, *c;
	memset(&ns, 0, sizeof(ns));
	cr_assert(t);
	a = named(&ns, tally_tree_root(t), "a");
	b = named(&ns, a, "b");
	c = named(&ns, tally_tree_root(t), "c");
	tally_group_mod(a, 0, 1);
	tally_group_mod(b, 0, 10);
	tally_group_mod(c, 0, 100);
	tally_group_mod(b, 1, -5);
	cr_assert_eq(tally_export_add_tree(&E, t, &(struct tally_export_tree_opts){.prefix = "cg",
					   .names = items, .kinds = kinds, .name_fn = group_name,
					   .name_arg = &ns,
					   .flags = TALLY_EXPORT_TREE_FLUSH}), 0, "%s",
		     tally_export_error(&E));
	/* Children come newest first. */
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP cg_pgfault_total tally tree item (this group and its descendants)\n"
	       "# TYPE cg_pgfault_total counter\n"
	       "cg_pgfault_total{group=\"/\"} 111\n"
	       "cg_pgfault_total{group=\"/c\"} 100\n"
	       "cg_pgfault_total{group=\"/a\"} 11\n"
	       "cg_pgfault_total{group=\"/a/b\"} 10\n"
	       "# HELP cg_pgfault_local_total tally tree item (this group alone)\n"
	       "# TYPE cg_pgfault_local_total counter\n"
	       "cg_pgfault_local_total{group=\"/\"} 0\n"
	       "cg_pgfault_local_total{group=\"/c\"} 100\n"
	       "cg_pgfault_local_total{group=\"/a\"} 1\n"
	       "cg_pgfault_local_total{group=\"/a/b\"} 10\n"
	       "# HELP cg_usage tally tree item (this group and its descendants)\n"
	       "# TYPE cg_usage gauge\n"
	       "cg_usage{group=\"/\"} -5\n"
	       "cg_usage{group=\"/c\"} 0\n"
	       "cg_usage{group=\"/a\"} -5\n"
	       "cg_usage{group=\"/a/b\"} -5\n"
	       "# HELP cg_usage_local tally tree item (this group alone)\n"
	       "# TYPE cg_usage_local gauge\n"
	       "cg_usage_local{group=\"/\"} 0\n"
	       "cg_usage_local{group=\"/c\"} 0\n"
	       "cg_usage_local{group=\"/a\"} 0\n"
	       "cg_usage_local{group=\"/a/b\"} -5\n");
	expect(&E, TALLY_EXPORT_STAT, "cg_pgfault 111\ncg_usage -5\n");
	/* Without a name (name_fn returns NULL), a group is exported as
	 * "#N", N its serial (a was the first group made in t): never left
	 * out. Its state starts afresh under its new path. */
	ns.n[0] = NULL;
	cr_expect_eq(tally_group_serial(a), 1);
	expect(&E, TALLY_EXPORT_OPENMETRICS,
	       "# HELP cg_pgfault tally tree item (this group and its descendants)\n"
	       "# TYPE cg_pgfault counter\n"
	       "cg_pgfault_total{group=\"/\"} 111\n"
	       "cg_pgfault_total{group=\"/c\"} 100\n"
	       "cg_pgfault_total{group=\"/#1\"} 11\n"
	       "cg_pgfault_total{group=\"/#1/b\"} 10\n"
	       "# HELP cg_pgfault_local tally tree item (this group alone)\n"
	       "# TYPE cg_pgfault_local counter\n"
	       "cg_pgfault_local_total{group=\"/\"} 0\n"
	       "cg_pgfault_local_total{group=\"/c\"} 100\n"
	       "cg_pgfault_local_total{group=\"/#1\"} 1\n"
	       "cg_pgfault_local_total{group=\"/#1/b\"} 10\n"
	       "# HELP cg_usage tally tree item (this group and its descendants)\n"
	       "# TYPE cg_usage gauge\n"
	       "cg_usage{group=\"/\"} -5\n"
	       "cg_usage{group=\"/c\"} 0\n"
	       "cg_usage{group=\"/#1\"} -5\n"
	       "cg_usage{group=\"/#1/b\"} -5\n"
	       "# HELP cg_usage_local tally tree item (this group alone)\n"
	       "# TYPE cg_usage_local gauge\n"
	       "cg_usage_local{group=\"/\"} 0\n"
	       "cg_usage_local{group=\"/c\"} 0\n"
	       "cg_usage_local{group=\"/#1\"} 0\n"
	       "cg_usage_local{group=\"/#1/b\"} -5\n"
	       "# EOF\n");
	tally_export_destroy(&E);
	tally_export_init(&E);
	cr_assert_eq(tally_group_destroy(b), 0);
	cr_assert_eq(tally_group_destroy(a), 0);
	cr_assert_eq(tally_group_destroy(c), 0);
	tally_tree_destroy(t);
}

Test(export, tree_label_escaping_and_bad_group_names)
{
	static const char *const items[] = {"hits"};
	struct names ns;
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *a, *b;
	char buf[64];
	size_t len;
	memset(&ns, 0, sizeof(ns));
	a = named(&ns, tally_tree_root(t), "q\"uote\\back\nline \xc3\xa9");
	b = named(&ns, tally_tree_root(t), "x");
	tally_group_mod(a, 0, 2);
	cr_assert_eq(tally_export_add_tree(&E, t, &(struct tally_export_tree_opts){.prefix = "svc",
					   .names = items, .name_fn = group_name, .name_arg = &ns,
					   .flags = TALLY_EXPORT_TREE_FLUSH}), 0);
	expect(&E, TALLY_EXPORT_OPENMETRICS,
	       "# HELP svc_hits tally tree item (this group and its descendants)\n"
	       "# TYPE svc_hits counter\n"
	       "svc_hits_total{group=\"/\"} 2\n"
	       "svc_hits_total{group=\"/x\"} 0\n"
	       "svc_hits_total{group=\"/q\\\"uote\\\\back\\nline \xc3\xa9\"} 2\n"
	       "# HELP svc_hits_local tally tree item (this group alone)\n"
	       "# TYPE svc_hits_local counter\n"
	       "svc_hits_local_total{group=\"/\"} 0\n"
	       "svc_hits_local_total{group=\"/x\"} 0\n"
	       "svc_hits_local_total{group=\"/q\\\"uote\\\\back\\nline \xc3\xa9\"} 2\n"
	       "# EOF\n");
	/* JSON escapes the newline its own way. */
	{
		char *j = render(&E, TALLY_EXPORT_JSON);
		cr_expect(strstr(j, "{\"labels\":{\"group\":\"/q\\\"uote\\\\back\\nline \xc3\xa9\"},"
				    "\"value\":2}") != NULL, "%s", j);
		free(j);
	}
	/* Two siblings with one name: an error naming the path, nothing
	 * written. */
	ns.n[1] = ns.n[0];
	memset(buf, 'X', sizeof(buf));
	cr_expect_eq(tally_export_render(&E, TALLY_EXPORT_PROMETHEUS, buf, sizeof(buf), &len),
		     -EINVAL);
	cr_expect_eq(buf[0], 'X');
	cr_expect(strstr(tally_export_error(&E), "two groups have the path '/q\"uote") != NULL,
		  "%s", tally_export_error(&E));
	/* A '/' in a name, an empty name, bad UTF-8. */
	ns.n[1] = "a/b";
	cr_expect_eq(tally_export_render(&E, TALLY_EXPORT_PROMETHEUS, buf, sizeof(buf), &len),
		     -EINVAL);
	cr_expect_str_eq(tally_export_error(&E),
			 "a group under '/' has an empty, non-UTF-8 or '/'-holding name");
	ns.n[1] = "";
	cr_expect_eq(tally_export_render(&E, TALLY_EXPORT_PROMETHEUS, buf, sizeof(buf), &len),
		     -EINVAL);
	ns.n[1] = "\xfe";
	cr_expect_eq(tally_export_render(&E, TALLY_EXPORT_PROMETHEUS, buf, sizeof(buf), &len),
		     -EINVAL);
	/* Fixed: renders again, widened state intact. */
	ns.n[1] = "x";
	tally_group_mod(a, 0, 1);
	cr_expect_eq(tally_export_render(&E, TALLY_EXPORT_STAT, buf, sizeof(buf), &len), 0);
	cr_expect_str_eq(buf, "svc_hits 3\n");
	tally_export_destroy(&E);
	tally_export_init(&E);
	cr_assert_eq(tally_group_destroy(a), 0);
	cr_assert_eq(tally_group_destroy(b), 0);
	tally_tree_destroy(t);
}

/* Group counters are widened per (group, item) across the 2^W wrap. */
Test(export, tree_widened_across_wrap)
{
	static const char *const items[] = {"bytes"};
	struct names ns;
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *a;
	char buf[128], line[128];
	uint64_t want = 0;
	size_t len;
	int i;
	memset(&ns, 0, sizeof(ns));
	a = named(&ns, tally_tree_root(t), "a");
	cr_assert_eq(tally_export_add_tree(&E, t, &(struct tally_export_tree_opts){.prefix = "io",
					   .names = items, .name_fn = group_name, .name_arg = &ns,
					   .flags = TALLY_EXPORT_TREE_FLUSH}), 0);
	for (i = 0; i < 5; i++) {
		char *out;
		tally_group_mod(a, 0, BIG_ADD);
		want += (uint64_t)BIG_ADD;
		out = render(&E, TALLY_EXPORT_PROMETHEUS);
		snprintf(line, sizeof(line), "io_bytes_local_total{group=\"/a\"} %llu\n",
			 (unsigned long long)want);
		cr_expect(strstr(out, line) != NULL, "%s", out);
		snprintf(line, sizeof(line), "io_bytes_total{group=\"/\"} %llu\n",
			 (unsigned long long)want);
		cr_expect(strstr(out, line) != NULL, "%s", out);
		free(out);
	}
	(void)buf;
	(void)len;
	tally_export_destroy(&E);
	tally_export_init(&E);
	cr_assert_eq(tally_group_destroy(a), 0);
	tally_tree_destroy(t);
}

Test(export, tree_bad_arguments)
{
	struct tally_tree *t = tally_tree_create(1);
	static const char *const items[] = {"bad-name"};
	cr_expect_eq(tally_export_add_tree(&E, NULL, &(struct tally_export_tree_opts){.prefix = "p",
					   .name_fn = group_name}),
		     -EINVAL);
	cr_expect_eq(tally_export_add_tree(&E, t, &(struct tally_export_tree_opts){.prefix = "p",
					   .name_fn = group_name, .flags = 8}),
		     -EINVAL);
	cr_expect_eq(tally_export_add_tree(&E, t, &(struct tally_export_tree_opts){.prefix = "p",
					   .names = items, .name_fn = group_name}),
		     -EINVAL);
	/* The hierarchical and local names collide with a counter's. */
	{
		struct tally_counter c;
		cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
		cr_assert_eq(tally_export_add_counter(&E, "p_item0_local", "h", &c, 0), 0);
		cr_expect_eq(tally_export_add_tree(&E, t,
						   &(struct tally_export_tree_opts){.prefix = "p",
						   .name_fn = group_name}), -EINVAL);
		cr_expect_str_eq(tally_export_error(&E),
				 "metric name 'p_item0_local' is already registered");
		tally_export_destroy(&E);
		tally_export_init(&E);
		tally_counter_destroy(&c);
	}
	tally_tree_destroy(t);
}

/* The tree's own names: tally_tree_set_item_names() and
 * tally_group_set_name() (name_fn and names NULL). */
Test(export, tree_own_names)
{
	static const char *const items[] = {"pgfault", NULL};
	struct tally_tree *t = tally_tree_create(2);
	struct tally_group *a, *b, *anon;
	cr_assert(t);
	cr_assert_eq(tally_tree_set_item_names(t, items), 0);
	a = tally_group_create(tally_tree_root(t));
	b = tally_group_create(a);
	anon = tally_group_create(tally_tree_root(t));
	cr_assert_eq(tally_group_set_name(a, "web"), 0);
	cr_assert_eq(tally_group_set_name(b, "worker \"1\""), 0);
	tally_group_mod(b, 0, 4);
	tally_group_mod(anon, 1, 9); /* unnamed: "#3", its serial */
	cr_assert_eq(tally_export_add_tree(&E, t, &(struct tally_export_tree_opts){.prefix = "cg",
					   .flags = TALLY_EXPORT_TREE_FLUSH}), 0, "%s",
		     tally_export_error(&E));
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP cg_pgfault_total tally tree item (this group and its descendants)\n"
	       "# TYPE cg_pgfault_total counter\n"
	       "cg_pgfault_total{group=\"/\"} 4\n"
	       "cg_pgfault_total{group=\"/#3\"} 0\n"
	       "cg_pgfault_total{group=\"/web\"} 4\n"
	       "cg_pgfault_total{group=\"/web/worker \\\"1\\\"\"} 4\n"
	       "# HELP cg_pgfault_local_total tally tree item (this group alone)\n"
	       "# TYPE cg_pgfault_local_total counter\n"
	       "cg_pgfault_local_total{group=\"/\"} 0\n"
	       "cg_pgfault_local_total{group=\"/#3\"} 0\n"
	       "cg_pgfault_local_total{group=\"/web\"} 0\n"
	       "cg_pgfault_local_total{group=\"/web/worker \\\"1\\\"\"} 4\n"
	       "# HELP cg_item1_total tally tree item (this group and its descendants)\n"
	       "# TYPE cg_item1_total counter\n"
	       "cg_item1_total{group=\"/\"} 9\n"
	       "cg_item1_total{group=\"/#3\"} 9\n"
	       "cg_item1_total{group=\"/web\"} 0\n"
	       "cg_item1_total{group=\"/web/worker \\\"1\\\"\"} 0\n"
	       "# HELP cg_item1_local_total tally tree item (this group alone)\n"
	       "# TYPE cg_item1_local_total counter\n"
	       "cg_item1_local_total{group=\"/\"} 0\n"
	       "cg_item1_local_total{group=\"/#3\"} 9\n"
	       "cg_item1_local_total{group=\"/web\"} 0\n"
	       "cg_item1_local_total{group=\"/web/worker \\\"1\\\"\"} 0\n");
	tally_export_destroy(&E);
	tally_export_init(&E);
	tally_tree_destroy(t);
}

/* A tree's help texts: TALLY_EXPORT_HELP_MAX bytes of the caller's text,
 * whatever the suffix the exporter appends. */
Test(export, tree_help_limit)
{
	static const char *const items[] = {"hits"};
	struct tally_tree *t = tally_tree_create(1);
	char *help = (char *)malloc(TALLY_EXPORT_HELP_MAX + 2);
	const char *helps[1];
	char *out;
	cr_assert(t && help);
	memset(help, 'h', TALLY_EXPORT_HELP_MAX + 1);
	help[TALLY_EXPORT_HELP_MAX] = '\0'; /* 4096 bytes: taken */
	helps[0] = help;
	cr_assert_eq(tally_export_add_tree(&E, t, &(struct tally_export_tree_opts){.prefix = "a",
					   .names = items, .helps = helps}), 0,
		     "%s", tally_export_error(&E));
	out = render(&E, TALLY_EXPORT_PROMETHEUS);
	cr_expect(strstr(out, "h (this group and its descendants)\n") != NULL);
	cr_expect(strstr(out, "h (this group alone)\n") != NULL);
	free(out);
	help[TALLY_EXPORT_HELP_MAX] = 'h'; /* 4097: refused, as the message says */
	help[TALLY_EXPORT_HELP_MAX + 1] = '\0';
	cr_expect_eq(tally_export_add_tree(&E, t, &(struct tally_export_tree_opts){.prefix = "c",
					   .names = items, .helps = helps}),
		     -EINVAL);
	cr_expect_str_eq(tally_export_error(&E),
			 "help text of 'c_hits' is longer than 4096 bytes");
	free(help);
	tally_export_destroy(&E);
	tally_export_init(&E);
	tally_tree_destroy(t);
}

/* A chain of groups: rendered without recursion, each row's path at most
 * TALLY_EXPORT_PATH_MAX bytes (else -E2BIG naming where), the output
 * linear in the rows. */
Test(export, tree_deep_chain)
{
	static const char *const items[] = {"hits"};
	/* Names of 4 bytes: 5 path bytes a level, so depth 820 (a path of
	 * 4,100 bytes) is past the limit within TALLY_RSTAT_DEPTH_MAX. */
	enum { DEEP = 1000, FITS = TALLY_EXPORT_PATH_MAX / 5 /* 819 */ };
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group **g = (struct tally_group **)calloc(DEEP + 1, sizeof(*g));
	char *out = NULL;
	size_t len = 0;
	int i;
	cr_assert(t && g);
	cr_assert_leq(DEEP, TALLY_RSTAT_DEPTH_MAX);
	g[0] = tally_tree_root(t);
	for (i = 1; i <= DEEP; i++) {
		g[i] = tally_group_create(g[i - 1]);
		cr_assert(g[i]);
		cr_assert_eq(tally_group_set_name(g[i], "abcd"), 0);
	}
	tally_group_mod(g[DEEP], 0, 3);
	cr_assert_eq(tally_export_add_tree(&E, t, &(struct tally_export_tree_opts){.prefix = "deep",
					   .names = items, .flags = TALLY_EXPORT_TREE_FLUSH}), 0);
	cr_expect_eq(tally_export_render_alloc(&E, TALLY_EXPORT_PROMETHEUS, &out, &len), -E2BIG);
	cr_expect_null(out);
	cr_expect(strstr(tally_export_error(&E), "the path of a group under '/abcd/abcd/") != NULL &&
			  strstr(tally_export_error(&E), "is longer than 4096 bytes "
							 "(TALLY_EXPORT_PATH_MAX)") != NULL,
		  "%s", tally_export_error(&E));
	/* Cut at depth 819 (a path of 4,095 bytes): it renders, every row,
	 * in depth order, in O(rows x TALLY_EXPORT_PATH_MAX) bytes. */
	for (i = DEEP; i > FITS; i--)
		cr_assert_eq(tally_group_destroy(g[i]), 0);
	tally_group_mod(g[FITS], 0, 4);
	out = render(&E, TALLY_EXPORT_PROMETHEUS);
	len = strlen(out);
	cr_expect(len < 2u * (FITS + 1u) * (TALLY_EXPORT_PATH_MAX + 64u), "%zu bytes", len);
	{
		/* Count by lines (strstr from each match would rescan the
		 * megabytes left under ASan's interceptor). */
		const char *p = out, *nl;
		int rows = 0, local_rows = 0;
		for (; *p; p = nl + 1) {
			rows += !strncmp(p, "deep_hits_total{", 16);
			local_rows += !strncmp(p, "deep_hits_local_total{", 22);
			nl = strchr(p, '\n');
			if (!nl)
				break;
		}
		cr_expect_eq(rows, FITS + 1);
		cr_expect_eq(local_rows, FITS + 1);
		cr_expect(strstr(out, "deep_hits_total{group=\"/\"} 7\n") != NULL);
		cr_expect(strstr(out, "/abcd\"} 7\ndeep_hits_total{group=\"/abcd/abcd\"} 7\n") !=
			  NULL);
	}
	free(out);
	tally_export_destroy(&E);
	tally_export_init(&E);
	for (i = FITS; i > 0; i--)
		cr_assert_eq(tally_group_destroy(g[i]), 0);
	free(g);
	tally_tree_destroy(t);
}

/* ---- streamed renders ------------------------------------------------------ */

/* What tally_export_render_write handed out: the bytes, the calls and the
 * longest piece; the call fail_at (from 1; 0: none) returns fail_with, and
 * no call may come after it. */
struct streamed {
	char *buf;
	size_t len, cap, longest;
	unsigned calls, fail_at;
	int fail_with;
};

static int stream_out(void *ctx, const char *buf, size_t len)
{
	struct streamed *s = (struct streamed *)ctx;
	s->calls++;
	cr_assert(buf && len > 0, "an empty piece");
	cr_assert(!s->fail_at || s->calls <= s->fail_at, "a call after the error");
	if (len > s->longest)
		s->longest = len;
	if (s->fail_at == s->calls)
		return s->fail_with;
	if (s->len + len > s->cap) {
		s->cap = 2 * (s->len + len);
		s->buf = (char *)realloc(s->buf, s->cap);
		cr_assert(s->buf);
	}
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	return 0;
}

/* e's output in fmt, streamed, is tally_export_render's, byte for byte, in
 * pieces of at most 64 KiB; its length (*calls: the pieces). */
static size_t same_streamed(struct tally_export *e, int fmt, unsigned *calls)
{
	struct streamed s;
	size_t need = 0, len = 0;
	char *want;
	int err;
	memset(&s, 0, sizeof(s));
	cr_assert_eq(tally_export_render(e, fmt, NULL, 0, &need), -ENOSPC);
	want = (char *)malloc(need);
	cr_assert(want);
	cr_assert_eq(tally_export_render(e, fmt, want, need, &len), 0);
	err = tally_export_render_write(e, fmt, stream_out, &s);
	cr_assert_eq(err, 0, "format %d: %d %s", fmt, err, tally_export_error(e));
	cr_expect_eq(s.len, len, "format %d: %zu bytes streamed, %zu rendered", fmt, s.len, len);
	cr_expect(s.len == len && (!len || !memcmp(s.buf, want, len)), "format %d: other bytes",
		  fmt);
	cr_expect_leq(s.longest, 65536);
	cr_expect(len || !s.calls, "format %d: a call for nothing", fmt);
	free(want);
	free(s.buf);
	*calls = s.calls;
	return len;
}

Test(export, render_write_small_every_format)
{
	static const char *const items[] = {"hits"};
	struct tally_counter c, g;
	struct tally_vec v;
	struct names ns;
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *a;
	char n0[64], n1[64];
	const char *vn[2];
	const char *p0[] = {"path", "a\\b \"q\"\nx \xc3\xa9", NULL}, *p1[] = {"path", "/", NULL};
	unsigned calls;
	int fmt;
	/* Empty: Prometheus is nothing (no call), OpenMetrics "# EOF\n". */
	for (fmt = TALLY_EXPORT_PROMETHEUS; fmt <= TALLY_EXPORT_JSON; fmt++)
		cr_expect_eq(same_streamed(&E, fmt, &calls) == 0, fmt == TALLY_EXPORT_PROMETHEUS ||
								 fmt == TALLY_EXPORT_STAT);
	memset(&ns, 0, sizeof(ns));
	cr_assert(t);
	a = named(&ns, tally_tree_root(t), "a");
	tally_group_mod(a, 0, 3);
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	cr_assert_eq(tally_counter_init(&g, 0, 0), 0);
	cr_assert_eq(tally_vec_init(&v, 2, 0), 0);
	tally_counter_add(&c, 42);
	tally_counter_add(&g, -7);
	tally_vec_mod(&v, 0, 5);
	tally_vec_mod(&v, 1, 6);
	cr_assert(!tally_export_name(n0, sizeof(n0), "req", p0) &&
		  !tally_export_name(n1, sizeof(n1), "req", p1));
	vn[0] = n0;
	vn[1] = n1;
	cr_assert_eq(tally_export_add_counter(&E, "requests", "a\\b \"q\"\nnext\ttab", &c,
					      TALLY_EXPORT_COUNTER), 0);
	cr_assert_eq(tally_export_add_counter(&E, "depth", NULL, &g, TALLY_EXPORT_GAUGE), 0);
	cr_assert_eq(tally_export_add_vec(&E, "v", &v, vn, NULL, NULL), 0, "%s",
		     tally_export_error(&E));
	cr_assert_eq(tally_export_add_tree(&E, t, &(struct tally_export_tree_opts){.prefix = "cg",
					   .names = items, .name_fn = group_name, .name_arg = &ns,
					   .flags = TALLY_EXPORT_TREE_FLUSH}), 0);
	for (fmt = TALLY_EXPORT_PROMETHEUS; fmt <= TALLY_EXPORT_JSON; fmt++) {
		size_t len = same_streamed(&E, fmt, &calls);
		cr_expect(len > 50 && len < 65536 && calls == 1, "format %d: %zu bytes, %u calls",
			  fmt, len, calls);
	}
	tally_export_destroy(&E);
	tally_export_init(&E);
	cr_assert_eq(tally_group_destroy(a), 0);
	tally_tree_destroy(t);
	tally_counter_destroy(&c);
	tally_counter_destroy(&g);
	tally_vec_destroy(&v);
}

enum { BIG_ITEMS = 4000 };

/* E with output of megabytes in every format: BIG_ITEMS vector items, a
 * quarter families of their own with long helps, the others series of
 * one labelled family (escaped values), and a counter whose help is the
 * longest there is, all backslashes, newlines and tabs. */
static void big_exporter(struct tally_vec *v, struct tally_counter *c, char **help)
{
	static char names[BIG_ITEMS][160], helps[BIG_ITEMS / 4][240];
	static const char *vn[BIG_ITEMS], *vh[BIG_ITEMS];
	unsigned i;
	cr_assert_eq(tally_vec_init(v, BIG_ITEMS, 0), 0);
	cr_assert_eq(tally_counter_init(c, 0, 0), 0);
	for (i = 0; i < BIG_ITEMS; i++) {
		char num[16];
		const char *pairs[] = {"code", num, "path",
				       "a\\b \"q\"\nx \xc3\xa9 ........................................",
				       NULL};
		snprintf(num, sizeof(num), "%u", i);
		vh[i] = NULL;
		if (i % 4) {
			cr_assert_eq(tally_export_name(names[i], sizeof(names[i]), "lab", pairs), 0);
		} else {
			snprintf(names[i], sizeof(names[i]), "fam%u", i);
			snprintf(helps[i / 4], sizeof(helps[i / 4]),
				 "Family %u: \\ \"quoted\"\n\tand \xc3\xa9 ...................."
				 "..................................................", i);
			vh[i] = helps[i / 4];
		}
		vn[i] = names[i];
		tally_vec_mod(v, i, (tally_sword)i * 7 - 3);
	}
	*help = (char *)malloc(TALLY_EXPORT_HELP_MAX + 1);
	cr_assert(*help);
	for (i = 0; i < TALLY_EXPORT_HELP_MAX; i++)
		(*help)[i] = "\\\n\tx"[i % 4];
	(*help)[TALLY_EXPORT_HELP_MAX] = '\0';
	cr_assert_eq(tally_export_add_vec(&E, "big", v, vn, vh, NULL), 0, "%s",
		     tally_export_error(&E));
	cr_assert_eq(tally_export_add_counter(&E, "escapes", *help, c, TALLY_EXPORT_COUNTER), 0,
		     "%s", tally_export_error(&E));
}

Test(export, render_write_large_every_format)
{
	struct tally_vec v;
	struct tally_counter c;
	char *help;
	unsigned calls;
	int fmt;
	big_exporter(&v, &c, &help);
	for (fmt = TALLY_EXPORT_PROMETHEUS; fmt <= TALLY_EXPORT_JSON; fmt++) {
		size_t len = same_streamed(&E, fmt, &calls);
		cr_expect(len > 2 * 65536 && calls > 2 && calls >= len / 65536,
			  "format %d: %zu bytes, %u calls", fmt, len, calls);
	}
	tally_export_destroy(&E);
	tally_export_init(&E);
	tally_vec_destroy(&v);
	tally_counter_destroy(&c);
	free(help);
}

/* An output call's error stops the render (no call after it) and is
 * returned; the pieces before it are the output's start. */
Test(export, render_write_error_stops)
{
	struct tally_vec v;
	struct tally_counter c;
	struct streamed s;
	char *help, *all = NULL;
	size_t len = 0;
	big_exporter(&v, &c, &help);
	cr_assert_eq(tally_export_render_alloc(&E, TALLY_EXPORT_OPENMETRICS, &all, &len), 0);
	memset(&s, 0, sizeof(s));
	s.fail_at = 3;
	s.fail_with = -EPIPE;
	cr_expect_eq(tally_export_render_write(&E, TALLY_EXPORT_OPENMETRICS, stream_out, &s),
		     -EPIPE);
	cr_expect(s.calls == 3 && s.len > 65536 && s.len < len && !memcmp(s.buf, all, s.len));
	cr_expect(strstr(tally_export_error(&E), "the output call returned -") != NULL, "%s",
		  tally_export_error(&E));
	free(s.buf);
	/* The first call failing, with a positive value: that value. */
	memset(&s, 0, sizeof(s));
	s.fail_at = 1;
	s.fail_with = 7;
	cr_expect_eq(tally_export_render_write(&E, TALLY_EXPORT_JSON, stream_out, &s), 7);
	cr_expect(s.calls == 1 && s.len == 0);
	free(s.buf);
	/* The last piece (the one flushed at the end) failing. */
	memset(&s, 0, sizeof(s));
	cr_assert_eq(tally_export_render_write(&E, TALLY_EXPORT_OPENMETRICS, stream_out, &s), 0);
	s.fail_at = s.calls;
	s.fail_with = -EIO;
	s.calls = 0;
	s.len = 0;
	cr_expect_eq(tally_export_render_write(&E, TALLY_EXPORT_OPENMETRICS, stream_out, &s), -EIO);
	cr_expect(s.calls == s.fail_at && s.len < len && !memcmp(s.buf, all, s.len));
	free(s.buf);
	memset(&s, 0, sizeof(s)); /* bad arguments: nothing called */
	cr_expect_eq(tally_export_render_write(NULL, 0, stream_out, &s), -EINVAL);
	cr_expect_eq(tally_export_render_write(&E, 9, stream_out, &s), -EINVAL);
	cr_expect(strstr(tally_export_error(&E), "unknown format") != NULL);
	cr_expect_eq(tally_export_render_write(&E, 0, NULL, &s), -EINVAL);
	cr_expect_eq(s.calls, 0);
	/* And a render after a failed one is whole. */
	memset(&s, 0, sizeof(s));
	cr_expect_eq(tally_export_render_write(&E, TALLY_EXPORT_OPENMETRICS, stream_out, &s), 0);
	cr_expect(s.len == len && !memcmp(s.buf, all, len));
	free(s.buf);
	free(all);
	tally_export_destroy(&E);
	tally_export_init(&E);
	tally_vec_destroy(&v);
	tally_counter_destroy(&c);
	free(help);
}

/* ---- negotiation ---------------------------------------------------------- */

Test(export, negotiate)
{
	cr_expect_eq(tally_export_negotiate(NULL), TALLY_EXPORT_PROMETHEUS);
	cr_expect_eq(tally_export_negotiate(""), TALLY_EXPORT_PROMETHEUS);
	cr_expect_eq(tally_export_negotiate("*/*"), TALLY_EXPORT_PROMETHEUS);
	cr_expect_eq(tally_export_negotiate("text/plain;version=0.0.4"), TALLY_EXPORT_PROMETHEUS);
	/* What Prometheus 2.42 sends. */
	cr_expect_eq(tally_export_negotiate("application/openmetrics-text;version=1.0.0,"
					    "application/openmetrics-text;version=0.0.1;q=0.75,"
					    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
		     TALLY_EXPORT_OPENMETRICS);
	cr_expect_eq(tally_export_negotiate("text/plain, Application/OpenMetrics-Text"),
		     TALLY_EXPORT_OPENMETRICS);
	cr_expect_eq(tally_export_negotiate("application/openmetrics-text; q=0"),
		     TALLY_EXPORT_PROMETHEUS);
	cr_expect_eq(tally_export_negotiate("application/openmetrics-text;q=0.000"),
		     TALLY_EXPORT_PROMETHEUS);
	/* Whitespace around parameters is OWS: a space or a tab. */
	cr_expect_eq(tally_export_negotiate("application/openmetrics-text;q=0\t,text/plain"),
		     TALLY_EXPORT_PROMETHEUS);
	cr_expect_eq(tally_export_negotiate("application/openmetrics-text\t;\tq=0.0\t"),
		     TALLY_EXPORT_PROMETHEUS);
	cr_expect_eq(tally_export_negotiate("\tapplication/openmetrics-text\t;\tq=0.5\t"),
		     TALLY_EXPORT_OPENMETRICS);
	cr_expect_eq(tally_export_negotiate("application/openmetrics-text;q=0.01\t"),
		     TALLY_EXPORT_OPENMETRICS);
	cr_expect_eq(tally_export_negotiate("application/openmetrics-textual"),
		     TALLY_EXPORT_PROMETHEUS);
	cr_expect_str_eq(tally_export_content_type(TALLY_EXPORT_OPENMETRICS),
			 "application/openmetrics-text; version=1.0.0; charset=utf-8");
	cr_expect_str_eq(tally_export_content_type(TALLY_EXPORT_PROMETHEUS),
			 "text/plain; version=0.0.4; charset=utf-8");
}
