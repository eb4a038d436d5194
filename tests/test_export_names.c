/*
 * Unit tests for the names of exported series (tally/export.h): an empty
 * label value is the label's absence (never rendered; two label sets equal
 * once empty values are dropped are one series, refused), the label names
 * Prometheus reserves (le, quantile) refused on counters and gauges,
 * registration that stays linear at 100,000 families and series, building
 * a labelled item name (tally_export_name) and one help per family
 * (tally_export_set_help). Exact output and messages.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <tally/export.h>
#include "export_expect.h"

#include <stdio.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static struct tally_export E;

static void setup(void)
{
	cr_assert_eq(tally_export_init(&E), 0);
}

static void teardown(void)
{
	tally_export_destroy(&E);
}

TestSuite(export_names, .init = setup, .fini = teardown);

/* Export a vector of n items named names[] (values 1, 2, ...) into E;
 * returns add_vec's result. *v is left initialised. */
static int add_named(struct tally_vec *v, unsigned n, const char *const *names)
{
	struct tally_vec_opts o = {.nr_items = n, .names = names};
	cr_assert_eq(tally_vec_init_opts(v, &o), 0);
	for (unsigned i = 0; i < n; i++)
		tally_vec_mod(v, i, (tally_sword)(i + 1));
	return tally_export_add_vec(&E, NULL, v, NULL, NULL, NULL);
}

/* ---- 1. an empty label value is the label's absence ---------------------- */

/* Prometheus and OpenMetrics read code2="" as no code2 label: these pairs
 * would be one series twice (a real Prometheus keeps one value and drops
 * the other without a word). Refused, nothing registered. */
Test(export_names, empty_label_value_clash_refused)
{
	static const struct {
		const char *a, *b, *error;
	} clash[] = {
		{"req{code=\"ok\"}", "req{code=\"ok\",code2=\"\"}",
		 "item 1's name 'req{code=\"ok\",code2=\"\"}' gives a series its family has "
		 "already (an empty label value is the label's absence)"},
		{"y", "y{code=\"\"}",
		 "item 1's name 'y{code=\"\"}' gives a series its family has already (an "
		 "empty label value is the label's absence)"},
		{"y{code=\"\"}", "y",
		 "item 1's name 'y' gives a series its family has already (an empty label "
		 "value is the label's absence)"},
		{"z{a=\"\",b=\"1\"}", "z{b=\"1\",c=\"\"}",
		 "item 1's name 'z{b=\"1\",c=\"\"}' gives a series its family has already (an "
		 "empty label value is the label's absence)"},
	};
	for (unsigned k = 0; k < N_OF(clash); k++) {
		const char *names[2] = {clash[k].a, clash[k].b};
		struct tally_vec v;
		cr_expect_eq(add_named(&v, 2, names), -EINVAL, "%s beside %s", clash[k].a,
			     clash[k].b);
		cr_expect_str_eq(tally_export_error(&E), clash[k].error);
		expect(&E, TALLY_EXPORT_STAT, ""); /* nothing registered */
		tally_export_destroy(&E);
		tally_vec_destroy(&v);
	}
}

/* A label whose value is empty is never rendered: y{code=""} is y, and
 * req{code="ok",code2=""} is req{code="ok"}, in every format. */
Test(export_names, empty_label_value_not_rendered)
{
	static const char *const names[] = {"y{code=\"\"}", "req{code=\"ok\",code2=\"\"}",
					    "req{code=\"err\"}"};
	struct tally_vec v;
	cr_assert_eq(add_named(&v, 3, names), 0, "%s", tally_export_error(&E));
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP y_total tally vector item\n# TYPE y_total counter\ny_total 1\n"
	       "# HELP req_total tally vector item\n# TYPE req_total counter\n"
	       "req_total{code=\"ok\"} 2\nreq_total{code=\"err\"} 3\n");
	expect(&E, TALLY_EXPORT_STAT, "y 1\nreq{code=\"ok\"} 2\nreq{code=\"err\"} 3\n");
	expect(&E, TALLY_EXPORT_JSON,
	       "{\"families\":[{\"name\":\"y\",\"type\":\"counter\",\"help\":\"tally vector "
	       "item\",\"samples\":[{\"labels\":{},\"value\":1}]},{\"name\":\"req\",\"type\":"
	       "\"counter\",\"help\":\"tally vector item\",\"samples\":[{\"labels\":{\"code\":"
	       "\"ok\"},\"value\":2},{\"labels\":{\"code\":\"err\"},\"value\":3}]}]}\n");
	tally_export_destroy(&E);
	tally_vec_destroy(&v);
}

/* ---- 2. reserved label names --------------------------------------------- */

/* promtool rejects the whole page for a counter or gauge labelled le
 * ("non-histogram metrics should not have \"le\" label"), and quantile
 * belongs to summaries: both refused with the reason. */
Test(export_names, reserved_label_names_refused)
{
	static const struct {
		const char *name, *error;
	} bad[] = {
		{"x{le=\"1\"}", "item 1's name 'x{le=\"1\"}': a label named le is a histogram "
				"bucket's own, written by the export (promtool rejects a counter or "
				"gauge with one)"},
		{"x{a=\"1\",quantile=\"0.5\"}",
		 "item 1's name 'x{a=\"1\",quantile=\"0.5\"}': a label named quantile is for "
		 "summaries only (promtool rejects a counter or gauge with one)"},
		{"x{le=\"\"}", "item 1's name 'x{le=\"\"}': a label named le is a histogram "
			       "bucket's own, written by the export (promtool rejects a counter or "
			       "gauge with one)"},
	};
	static const unsigned char gauge[] = {0, TALLY_VEC_ITEM_GAUGE};
	for (unsigned k = 0; k < N_OF(bad); k++) {
		for (unsigned g = 0; g < 2; g++) {
			const char *names[2] = {"fine", bad[k].name};
			struct tally_vec v;
			struct tally_vec_opts o = {
				.nr_items = 2, .names = names, .item_flags = g ? gauge : NULL};
			cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
			cr_expect_eq(tally_export_add_vec(&E, NULL, &v, NULL, NULL, NULL), -EINVAL,
				     "%s", bad[k].name);
			cr_expect_str_eq(tally_export_error(&E), bad[k].error);
			expect(&E, TALLY_EXPORT_STAT, ""); /* nothing registered */
			tally_export_destroy(&E);
			tally_vec_destroy(&v);
		}
	}
	/* Other spellings are other names: LE, le_x, quantiles. */
	{
		static const char *const ok[] = {"x{LE=\"1\",le_x=\"2\",quantiles=\"3\"}"};
		struct tally_vec v;
		cr_assert_eq(add_named(&v, 1, ok), 0, "%s", tally_export_error(&E));
		expect(&E, TALLY_EXPORT_STAT, "x{LE=\"1\",le_x=\"2\",quantiles=\"3\"} 1\n");
		tally_export_destroy(&E);
		tally_vec_destroy(&v);
	}
}

/* ---- 6. registration stays linear ---------------------------------------- */

/* How fast registration is, is measured in bench/bench_export.c, not
 * here: these run 100,000 registrations, which the quadratic registration
 * took over 300 s for (past the timeout), and check what they did. */
#define MANY 100000u

/* 100,000 counters, one family each: every name still unique (a
 * duplicate is found among them), and a failed registration leaves
 * nothing behind (its names may be registered after). */
Test(export_names, many_counters_register_linearly, .timeout = 120)
{
	struct tally_counter c;
	struct tally_vec v;
	static const char *const late[] = {"late_one", "c99999"};
	char name[32];
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	tally_counter_add(&c, 3);
	for (unsigned i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		cr_assert_eq(tally_export_add_counter(&E, name, NULL, &c, TALLY_EXPORT_COUNTER),
			     0, "%s: %s", name, tally_export_error(&E));
	}
	cr_expect_eq(tally_export_add_counter(&E, "c54321", NULL, &c, TALLY_EXPORT_GAUGE),
		     -EINVAL);
	cr_expect_str_eq(tally_export_error(&E), "metric name 'c54321' is already registered");
	/* late_one is new, c99999 is not: nothing of the vector stays. */
	cr_expect_eq(add_named(&v, 2, late), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E), "metric name 'c99999' is already registered");
	cr_expect_eq(tally_export_add_counter(&E, "late_one", "Late.", &c, TALLY_EXPORT_GAUGE), 0,
		     "%s", tally_export_error(&E));
	{
		char *out = render(&E, TALLY_EXPORT_STAT);
		cr_expect_eq(strlen(out), 888890u + 11u, "%zu", strlen(out));
		cr_expect_str_eq(out + strlen(out) - 20, "c99999 3\nlate_one 3\n");
		free(out);
	}
	tally_export_destroy(&E);
	tally_vec_destroy(&v);
	tally_counter_destroy(&c);
}

/* Two vectors of 50,000 items (a vector has at most TALLY_VEC_ITEMS_MAX):
 * 100,000 families, or two families of 50,000 labelled series each; a
 * duplicate among them is still found. */
#define HALF (MANY / 2)
Test(export_names, many_vec_items_register_linearly, .timeout = 120)
{
	static char buf[2][HALF][32];
	static const char *names[2][HALF];
	struct tally_vec v[2];
	for (int labelled = 0; labelled < 2; labelled++) {
		struct tally_export e;
		for (unsigned h = 0; h < 2; h++) {
			struct tally_vec_opts o = {.nr_items = HALF, .names = names[h]};
			for (unsigned i = 0; i < HALF; i++) {
				snprintf(buf[h][i], sizeof(buf[h][i]),
					 labelled ? "%s{i=\"%u\"}" : "%s%u", h ? "g" : "f", i);
				names[h][i] = buf[h][i];
			}
			cr_assert_eq(tally_vec_init_opts(&v[h], &o), 0);
		}
		cr_assert_eq(tally_export_init(&e), 0);
		for (unsigned h = 0; h < 2; h++)
			cr_assert_eq(tally_export_add_vec(&e, "p", &v[h], NULL, NULL, NULL), 0,
				     "%s", tally_export_error(&e));
		tally_export_destroy(&e);
		/* The last item repeats one in the middle: refused. */
		tally_vec_destroy(&v[1]);
		strcpy(buf[1][HALF - 1], buf[1][HALF / 2]);
		{
			struct tally_vec_opts o = {.nr_items = HALF, .names = names[1]};
			cr_assert_eq(tally_vec_init_opts(&v[1], &o), 0);
		}
		cr_assert_eq(tally_export_init(&e), 0);
		cr_expect_eq(tally_export_add_vec(&e, "p", &v[1], NULL, NULL, NULL), -EINVAL);
		cr_expect_str_eq(tally_export_error(&e),
				 labelled ? "item 49999's name 'g{i=\"25000\"}' gives a series its "
					    "family has already (the same labels)"
					  : "item 49999's name 'g25000' gives a series its family "
					    "has already (the same labels)");
		tally_export_destroy(&e);
		tally_vec_destroy(&v[0]);
		tally_vec_destroy(&v[1]);
	}
}

/* ---- 10. tally_export_name ----------------------------------------------- */

/* Labels in the order given, values escaped as the text format wants
 * (backslash, quote, newline), empty values left out. */
Test(export_names, name_built_and_escaped)
{
	const struct {
		const char *family;
		const char *const *pairs;
		const char *want;
	} ok[] = {
		{"slab_get_hits", (const char *const[]){"class", "12", NULL}, "slab_get_hits{class=\"12\"}"},
		{"x", NULL, "x"},
		{"x", (const char *const[]){NULL}, "x"},
		{"x", (const char *const[]){"why", "a\\b\"c\nd", NULL}, "x{why=\"a\\\\b\\\"c\\nd\"}"},
		{"x", (const char *const[]){"b", "2", "a", "1", "_Z9", "\xc3\xa9", NULL},
		 "x{b=\"2\",a=\"1\",_Z9=\"\xc3\xa9\"}"},
		{"x", (const char *const[]){"a", "", "b", "1", "c", "", NULL}, "x{b=\"1\"}"},
		{"x", (const char *const[]){"a", "", NULL}, "x"},
		{"x", (const char *const[]){"LE", "1", "le_x", "2", "quantiles", "3", NULL},
		 "x{LE=\"1\",le_x=\"2\",quantiles=\"3\"}"},
	};
	for (unsigned k = 0; k < N_OF(ok); k++) {
		char buf[128];
		memset(buf, 'Z', sizeof(buf));
		cr_expect_eq(tally_export_name(buf, sizeof(buf), ok[k].family, ok[k].pairs), 0,
			     "%s", ok[k].want);
		cr_expect_str_eq(buf, ok[k].want);
	}
}

/* Bad family names, label names and values: -EINVAL and "" in buf. */
Test(export_names, name_bad_inputs)
{
	const struct {
		const char *family;
		const char *const *pairs;
	} bad[] = {
		{NULL, NULL},
		{"", NULL},
		{"Hits", NULL},
		{"hits_total", NULL},
		{"x{a=\"1\"}", NULL},
		{"x", (const char *const[]){"", "1", NULL}},
		{"x", (const char *const[]){"1a", "1", NULL}},
		{"x", (const char *const[]){"__a", "1", NULL}},
		{"x", (const char *const[]){"a-b", "1", NULL}},
		{"x", (const char *const[]){"a b", "1", NULL}},
		{"x", (const char *const[]){"le", "1", NULL}},
		{"x", (const char *const[]){"quantile", "0.5", NULL}},
		{"x", (const char *const[]){"le", "", NULL}},
		{"x", (const char *const[]){"a", "1", "a", "2", NULL}},
		{"x", (const char *const[]){"a", "", "a", "2", NULL}},
		{"x", (const char *const[]){"a", NULL}},
		{"x", (const char *const[]){"a", "\xff", NULL}},
		{"x", (const char *const[]){"a", "\xc3", NULL}},
	};
	for (unsigned k = 0; k < N_OF(bad); k++) {
		char buf[64] = "untouched?";
		cr_expect_eq(tally_export_name(buf, sizeof(buf), bad[k].family, bad[k].pairs),
			     -EINVAL, "case %u", k);
		cr_expect_str_eq(buf, "", "case %u", k);
	}
	cr_expect_eq(tally_export_name(NULL, 1, "x", NULL), -EINVAL);
}

/* -ENOSPC below the name's length plus its NUL, 0 at it. */
Test(export_names, name_buffer_too_small)
{
	static const char *const pairs[] = {"class", "a\"b", NULL};
	static const char want[] = "hits{class=\"a\\\"b\"}";
	char buf[sizeof(want)];
	for (size_t size = 0; size < sizeof(want); size++) {
		memset(buf, 'Z', sizeof(buf));
		cr_expect_eq(tally_export_name(size ? buf : NULL, size, "hits", pairs), -ENOSPC,
			     "size %zu", size);
		if (size)
			cr_expect_eq(buf[0], '\0', "size %zu", size);
	}
	cr_expect_eq(tally_export_name(buf, sizeof(want), "hits", pairs), 0);
	cr_expect_str_eq(buf, want);
}

/* Names built by tally_export_name are taken by tally_export_add_vec as
 * the series they say, values unescaped and escaped again as each format
 * wants. */
Test(export_names, name_round_trip_through_add_vec)
{
	static const char *const p0[] = {"class", "1", "why", "a\\b\"c\nd", NULL};
	static const char *const p1[] = {"why", "", "class", "2", NULL};
	static const char *const p2[] = {"class", "\xc3\xa9", NULL};
	static const char *const *pairs[] = {p0, p1, p2, NULL};
	char buf[4][96];
	const char *names[4];
	struct tally_vec v;
	for (unsigned i = 0; i < 4; i++) {
		cr_assert_eq(tally_export_name(buf[i], sizeof(buf[i]), i < 3 ? "hits" : "total_hits",
					       pairs[i]),
			     0);
		names[i] = buf[i];
	}
	cr_expect_str_eq(buf[0], "hits{class=\"1\",why=\"a\\\\b\\\"c\\nd\"}");
	cr_expect_str_eq(buf[1], "hits{class=\"2\"}");
	cr_assert_eq(add_named(&v, 4, names), 0, "%s", tally_export_error(&E));
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP hits_total tally vector item\n# TYPE hits_total counter\n"
	       "hits_total{class=\"1\",why=\"a\\\\b\\\"c\\nd\"} 1\nhits_total{class=\"2\"} 2\n"
	       "hits_total{class=\"\xc3\xa9\"} 3\n"
	       "# HELP total_hits_total tally vector item\n"
	       "# TYPE total_hits_total counter\ntotal_hits_total 4\n");
	expect(&E, TALLY_EXPORT_JSON,
	       "{\"families\":[{\"name\":\"hits\",\"type\":\"counter\",\"help\":\"tally vector "
	       "item\",\"samples\":[{\"labels\":{\"class\":\"1\",\"why\":\"a\\\\b\\\"c\\nd\"},"
	       "\"value\":1},{\"labels\":{\"class\":\"2\"},\"value\":2},{\"labels\":{\"class\":"
	       "\"\xc3\xa9\"},\"value\":3}]},{\"name\":\"total_hits\",\"type\":\"counter\","
	       "\"help\":\"tally vector item\",\"samples\":[{\"labels\":{},\"value\":4}]}]}\n");
	tally_export_destroy(&E);
	tally_vec_destroy(&v);
}

/* ---- 12. one help per family --------------------------------------------- */

/* 7 families of 12 labelled items each get their helps by name; a
 * counter's too (its name without _total); the last help set wins. */
Test(export_names, set_help_by_family)
{
	static const char *const fam[7] = {"get_hits", "get_misses", "set_cmds", "evictions",
					   "reclaimed", "used_chunks", "free_chunks"};
	char buf[84][48];
	const char *names[84];
	struct tally_vec v;
	struct tally_counter c;
	char want[8192] = "", *got;
	for (unsigned i = 0; i < 84; i++) {
		char cls[8];
		const char *pairs[] = {"class", cls, NULL};
		snprintf(cls, sizeof(cls), "%u", i % 12);
		cr_assert_eq(tally_export_name(buf[i], sizeof(buf[i]), fam[i / 12], pairs), 0);
		names[i] = buf[i];
	}
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	tally_counter_add(&c, 9);
	cr_assert_eq(tally_export_add_counter(&E, "requests", NULL, &c, TALLY_EXPORT_COUNTER), 0);
	cr_assert_eq(add_named(&v, 84, names), 0, "%s", tally_export_error(&E));
	for (unsigned f = 0; f < 7; f++) {
		char help[64];
		snprintf(help, sizeof(help), "Help of %s, \\ \"%u\"\nend.", fam[f], f);
		cr_expect_eq(tally_export_set_help(&E, fam[f], help), 0, "%s",
			     tally_export_error(&E));
	}
	cr_expect_eq(tally_export_set_help(&E, "requests", "First."), 0);
	cr_expect_eq(tally_export_set_help(&E, "requests", "Requests served."), 0);
	/* Every family's HELP line, escaped; each of the 84 samples. */
	strcat(want, "# HELP requests Requests served.\n# TYPE requests counter\n"
		     "requests_total 9\n");
	for (unsigned f = 0; f < 7; f++) {
		size_t n = strlen(want);
		n += (size_t)snprintf(want + n, sizeof(want) - n,
				      "# HELP %s Help of %s, \\\\ \\\"%u\\\"\\nend.\n# TYPE %s "
				      "counter\n",
				      fam[f], fam[f], f, fam[f]);
		for (unsigned i = 0; i < 12; i++)
			n += (size_t)snprintf(want + n, sizeof(want) - n,
					      "%s_total{class=\"%u\"} %u\n", fam[f], i,
					      f * 12 + i + 1);
	}
	strcat(want, "# EOF\n");
	expect(&E, TALLY_EXPORT_OPENMETRICS, want);
	got = render(&E, TALLY_EXPORT_PROMETHEUS);
	cr_expect_not_null(strstr(got, "# HELP get_misses_total Help of get_misses, \\\\ \"1\"\\nend.\n"
				       "# TYPE get_misses_total counter\n"
				       "get_misses_total{class=\"0\"} 13\n"),
			   "%s", got);
	free(got);
	tally_export_destroy(&E);
	tally_vec_destroy(&v);
	tally_counter_destroy(&c);
}

/* Unknown families, labelled names and bad helps are refused with a
 * message; the help stays as it was. */
Test(export_names, set_help_refused)
{
	struct tally_counter c;
	char big[TALLY_EXPORT_HELP_MAX + 2];
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	cr_assert_eq(tally_export_add_counter(&E, "requests", "Served.", &c, TALLY_EXPORT_GAUGE), 0);
	cr_expect_eq(tally_export_set_help(&E, "request", "X."), -ENOENT);
	cr_expect_str_eq(tally_export_error(&E), "metric name 'request' is not registered");
	cr_expect_eq(tally_export_set_help(&E, "requests_total", "X."), -ENOENT);
	cr_expect_eq(tally_export_set_help(&E, "requests{a=\"1\"}", "X."), -ENOENT);
	cr_expect_eq(tally_export_set_help(&E, NULL, "X."), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E), "metric name is NULL");
	cr_expect_eq(tally_export_set_help(&E, "requests", NULL), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E),
			 "help text of 'requests' is NULL, empty or blank");
	cr_expect_eq(tally_export_set_help(&E, "requests", " \t"), -EINVAL);
	cr_expect_eq(tally_export_set_help(&E, "requests", "\xff"), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E), "help text of 'requests' is not valid UTF-8");
	memset(big, 'h', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_expect_eq(tally_export_set_help(&E, "requests", big), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E),
			 "help text of 'requests' is longer than 4096 bytes");
	big[TALLY_EXPORT_HELP_MAX] = '\0';
	cr_expect_eq(tally_export_set_help(&E, "requests", big + 1), 0);
	cr_expect_eq(tally_export_set_help(NULL, "requests", "X."), -EINVAL);
	cr_expect_eq(tally_export_set_help(&E, "requests", "Still."), 0);
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP requests Still.\n# TYPE requests gauge\nrequests 0\n");
	tally_export_destroy(&E);
	tally_counter_destroy(&c);
}
