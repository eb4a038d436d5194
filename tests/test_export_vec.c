/*
 * Unit tests for exporting a tally_vec (tally/export.h): items named
 * "family{label=\"value\"}" as series of one family, hidden items left
 * out, kinds taken from the vector (and the deprecated kinds argument),
 * bad labels and names refused with a message that names the fix and
 * nothing registered. Exact output in every format.
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

TestSuite(export_vec, .init = setup, .fini = teardown);

static unsigned count(const char *s, const char *what)
{
	unsigned n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* Labels, a gauge and a hidden item, from the vector's own names and
 * flags, in every format. Labels come out sorted by name, values escaped
 * as each format wants. */
Test(export_vec, labels_gauges_hidden_every_format)
{
	static const char *const names[] = {
		"get_hits{class=\"1\"}", "get_hits{class=\"2\"}", "curr_items",
		"secret",                "get_hits",             "evictions{why=\"a\\\"b\\\\c\\nd\",class=\"1\"}",
	};
	static const char *const helps[] = {NULL, "Hits.", "Items stored.", NULL, NULL, NULL};
	static const unsigned char fl[] = {0, 0, TALLY_VEC_ITEM_GAUGE, TALLY_VEC_ITEM_HIDDEN, 0, 0};
	struct tally_vec v;
	struct tally_vec_opts o = {.nr_items = 6, .names = names, .item_flags = fl};
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	tally_vec_mod(&v, 0, 5);
	tally_vec_mod(&v, 1, 7);
	tally_vec_mod(&v, 2, -3);
	tally_vec_mod(&v, 3, 99);
	tally_vec_mod(&v, 4, 1);
	tally_vec_mod(&v, 5, 2);
	cr_assert_eq(tally_export_add_vec(&E, "mc", &v, NULL, helps, NULL), 0, "%s",
		     tally_export_error(&E));
	expect(&E, TALLY_EXPORT_PROMETHEUS,
	       "# HELP mc_get_hits_total Hits.\n# TYPE mc_get_hits_total counter\n"
	       "mc_get_hits_total{class=\"1\"} 5\nmc_get_hits_total{class=\"2\"} 7\n"
	       "mc_get_hits_total 1\n"
	       "# HELP mc_curr_items Items stored.\n# TYPE mc_curr_items gauge\n"
	       "mc_curr_items -3\n"
	       "# HELP mc_evictions_total tally vector item\n"
	       "# TYPE mc_evictions_total counter\n"
	       "mc_evictions_total{class=\"1\",why=\"a\\\"b\\\\c\\nd\"} 2\n");
	expect(&E, TALLY_EXPORT_OPENMETRICS,
	       "# HELP mc_get_hits Hits.\n# TYPE mc_get_hits counter\n"
	       "mc_get_hits_total{class=\"1\"} 5\nmc_get_hits_total{class=\"2\"} 7\n"
	       "mc_get_hits_total 1\n"
	       "# HELP mc_curr_items Items stored.\n# TYPE mc_curr_items gauge\n"
	       "mc_curr_items -3\n"
	       "# HELP mc_evictions tally vector item\n# TYPE mc_evictions counter\n"
	       "mc_evictions_total{class=\"1\",why=\"a\\\"b\\\\c\\nd\"} 2\n# EOF\n");
	expect(&E, TALLY_EXPORT_STAT,
	       "mc_get_hits{class=\"1\"} 5\nmc_get_hits{class=\"2\"} 7\nmc_get_hits 1\n"
	       "mc_curr_items -3\nmc_evictions{class=\"1\",why=\"a\\\"b\\\\c\\nd\"} 2\n");
	expect(&E, TALLY_EXPORT_JSON,
	       "{\"families\":["
	       "{\"name\":\"mc_get_hits\",\"type\":\"counter\",\"help\":\"Hits.\",\"samples\":["
	       "{\"labels\":{\"class\":\"1\"},\"value\":5},{\"labels\":{\"class\":\"2\"},\"value\":7},"
	       "{\"labels\":{},\"value\":1}]},"
	       "{\"name\":\"mc_curr_items\",\"type\":\"gauge\",\"help\":\"Items stored.\",\"samples\":["
	       "{\"labels\":{},\"value\":-3}]},"
	       "{\"name\":\"mc_evictions\",\"type\":\"counter\",\"help\":\"tally vector item\","
	       "\"samples\":[{\"labels\":{\"class\":\"1\",\"why\":\"a\\\"b\\\\c\\nd\"},\"value\":2}]}"
	       "]}\n");
	/* A reset of the vector moves neither the counters nor the gauge. */
	cr_assert_eq(tally_vec_reset(&v), 0);
	tally_vec_mod(&v, 2, 1);
	expect(&E, TALLY_EXPORT_STAT,
	       "mc_get_hits{class=\"1\"} 5\nmc_get_hits{class=\"2\"} 7\nmc_get_hits 1\n"
	       "mc_curr_items -2\nmc_evictions{class=\"1\",why=\"a\\\"b\\\\c\\nd\"} 2\n");
	tally_export_destroy(&E);
	tally_vec_destroy(&v);
}

/* memcached's shape: 12 stats x 64 slab classes, plus 3 global stats and
 * a hidden one: 15 families, 12 x 64 + 3 series, every value exact. */
Test(export_vec, memcached_slabs_are_twelve_families)
{
	enum { STATS = 12, CLASSES = 64, NR = STATS * CLASSES + 4 };
	static const char *const stat[STATS] = {
		"get_hits",    "cmd_set",    "delete_hits", "incr_hits", "decr_hits", "cas_hits",
		"cas_badval",  "touch_hits", "used_chunks", "free_chunks", "mem_requested",
		"total_pages"};
	char **names = calloc(NR, sizeof(char *));
	unsigned char *fl = calloc(NR, 1);
	struct tally_vec v;
	struct tally_vec_opts o = {.nr_items = NR, .names = (const char *const *)names,
				   .item_flags = fl};
	char want[96], *text;
	cr_assert(names && fl);
	for (unsigned s = 0; s < STATS; s++)
		for (unsigned c = 0; c < CLASSES; c++) {
			cr_assert_neq(asprintf(&names[s * CLASSES + c], "slab_%s{class=\"%u\"}",
					       stat[s], c + 1),
				      -1);
			if (s >= 8) /* the memory stats are levels */
				fl[s * CLASSES + c] = TALLY_VEC_ITEM_GAUGE;
		}
	names[NR - 4] = strdup("cmd_get");
	names[NR - 3] = strdup("curr_connections");
	fl[NR - 3] = TALLY_VEC_ITEM_GAUGE;
	names[NR - 2] = strdup("get_misses");
	names[NR - 1] = strdup("lru_crawler_debug");
	fl[NR - 1] = TALLY_VEC_ITEM_HIDDEN;
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	for (unsigned i = 0; i < NR; i++)
		tally_vec_mod(&v, i, (tally_sword)i);
	cr_assert_eq(tally_export_add_vec(&E, "memcached", &v, NULL, NULL, NULL), 0, "%s",
		     tally_export_error(&E));
	text = render(&E, TALLY_EXPORT_PROMETHEUS);
	cr_assert_eq(count(text, "# TYPE "), STATS + 3, "%u families", count(text, "# TYPE "));
	cr_assert_eq(count(text, " counter\n"), 8 + 2);
	cr_assert_eq(count(text, " gauge\n"), 4 + 1);
	cr_assert_eq(count(text, "\n") - 2 * (STATS + 3), STATS * CLASSES + 3);
	cr_assert_null(strstr(text, "lru_crawler"));
	snprintf(want, sizeof(want), "\nmemcached_slab_get_hits_total{class=\"12\"} %u\n", 11u);
	cr_assert_not_null(strstr(text, want), "%s", want);
	snprintf(want, sizeof(want), "\nmemcached_slab_total_pages{class=\"64\"} %u\n",
		 11u * CLASSES + 63);
	cr_assert_not_null(strstr(text, want), "%s", want);
	cr_assert_not_null(strstr(text, "\nmemcached_curr_connections 769\n"));
	free(text);
	tally_export_destroy(&E);
	tally_vec_destroy(&v);
	for (unsigned i = 0; i < NR; i++)
		free(names[i]);
	free(names);
	free(fl);
}

/* The deprecated kinds argument still works and overrides the vector's
 * kinds for the export; NULL takes them from the vector. */
Test(export_vec, kinds_from_vector_or_argument)
{
	static const char *const names[] = {"conns", "reqs"};
	static const unsigned char fl[] = {TALLY_VEC_ITEM_GAUGE, 0};
	static const unsigned char all_counters[] = {TALLY_EXPORT_COUNTER, TALLY_EXPORT_COUNTER};
	static const unsigned char all_gauges[] = {TALLY_EXPORT_GAUGE, TALLY_EXPORT_GAUGE};
	struct tally_vec v;
	struct tally_vec_opts o = {.nr_items = 2, .names = names, .item_flags = fl};
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	tally_vec_mod(&v, 0, 2);
	tally_vec_mod(&v, 1, 3);
	cr_assert_eq(tally_export_add_vec(&E, "a", &v, NULL, NULL, NULL), 0);
	cr_assert_eq(tally_export_add_vec(&E, "x", &v, NULL, NULL, all_counters), 0);
	cr_assert_eq(tally_export_add_vec(&E, "y", &v, NULL, NULL, all_gauges), 0);
	expect(&E, TALLY_EXPORT_STAT, "a_conns 2\na_reqs 3\nx_conns 2\nx_reqs 3\ny_conns 2\ny_reqs 3\n");
	{
		char *t = render(&E, TALLY_EXPORT_OPENMETRICS);
		cr_assert_not_null(strstr(t, "# TYPE a_conns gauge\na_conns 2\n"));
		cr_assert_not_null(strstr(t, "# TYPE a_reqs counter\na_reqs_total 3\n"));
		cr_assert_not_null(strstr(t, "# TYPE x_conns counter\nx_conns_total 2\n"));
		cr_assert_not_null(strstr(t, "# TYPE y_reqs gauge\ny_reqs 3\n"));
		free(t);
	}
	tally_export_destroy(&E);
	tally_vec_destroy(&v);
}

/* Every malformed label is refused with its reason; nothing registered. */
Test(export_vec, bad_labels_refused)
{
	static const struct {
		const char *name, *error;
	} bad[] = {
		{"x{}", "a label name must start with a letter or '_'"},
		{"x{1a=\"v\"}", "a label name must start with a letter or '_'"},
		{"x{__a=\"v\"}", "a label name starts with '__' (reserved by Prometheus)"},
		{"x{a}", "a label name must be followed by =\"value\""},
		{"x{a=v}", "a label name must be followed by =\"value\""},
		{"x{a-b=\"v\"}", "a label name must be followed by =\"value\""},
		{"x{a=\"v}", "a label value has no closing quote"},
		{"x{a=\"v\\t\"}", "a label value has an escape other than \\\\, \\\" or \\n"},
		{"x{a=\"\xff\"}", "a label value is not valid UTF-8"},
		{"x{a=\"1\",}", "a label name must start with a letter or '_'"},
		{"x{a=\"1\" }", "labels must be name=\"value\" pairs separated by ',' and end with "
				"the name's last '}'"},
		{"x{a=\"1\"}y", "labels must be name=\"value\" pairs separated by ',' and end with "
				 "the name's last '}'"},
		{"x{a=\"1\",a=\"2\"}", "a label name appears twice"},
	};
	for (unsigned k = 0; k < N_OF(bad); k++) {
		const char *names[2] = {"fine", bad[k].name};
		char want[512];
		struct tally_vec v;
		struct tally_vec_opts o = {.nr_items = 2, .names = names};
		cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
		cr_expect_eq(tally_export_add_vec(&E, NULL, &v, NULL, NULL, NULL), -EINVAL, "%s",
			     bad[k].name);
		snprintf(want, sizeof(want), "item 1's name '%s': %s", bad[k].name, bad[k].error);
		if (k == 8) /* a byte that is not UTF-8 is quoted as it is */
			cr_expect_not_null(strstr(tally_export_error(&E), bad[k].error));
		else
			cr_expect_str_eq(tally_export_error(&E), want);
		tally_vec_destroy(&v);
	}
	/* Nothing registered. */
	expect(&E, TALLY_EXPORT_STAT, "");
	expect(&E, TALLY_EXPORT_OPENMETRICS, "# EOF\n");
}

/* Two items with one series, items of one family with two kinds, a label
 * on a bad family name. */
Test(export_vec, bad_families_refused)
{
	const char *dup[] = {"a{x=\"1\"}", "other", "a{x=\"1\"}"};
	const char *dup_plain[] = {"a", "a"};
	const char *order[] = {"a{x=\"1\",y=\"2\"}", "a{y=\"2\",x=\"1\"}"};
	const char *kinds[] = {"a{x=\"1\"}", "a{x=\"2\"}"};
	const char *badfam[] = {"a_count{x=\"1\"}"};
	const unsigned char gauge2[] = {0, TALLY_VEC_ITEM_GAUGE};
	struct tally_vec v;
	struct tally_vec_opts o = {.nr_items = 3, .names = dup};
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_expect_eq(tally_export_add_vec(&E, NULL, &v, NULL, NULL, NULL), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E),
			 "item 2's name 'a{x=\"1\"}' gives a series its family has already (the "
			 "same labels)");
	tally_vec_destroy(&v);
	o = (struct tally_vec_opts){.nr_items = 2, .names = dup_plain};
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_expect_eq(tally_export_add_vec(&E, NULL, &v, NULL, NULL, NULL), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E),
			 "item 1's name 'a' gives a series its family has already (the same labels)");
	tally_vec_destroy(&v);
	/* Label order does not make another series. */
	o.names = order;
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_expect_eq(tally_export_add_vec(&E, NULL, &v, NULL, NULL, NULL), -EINVAL);
	tally_vec_destroy(&v);
	o = (struct tally_vec_opts){.nr_items = 2, .names = kinds, .item_flags = gauge2};
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_expect_eq(tally_export_add_vec(&E, NULL, &v, NULL, NULL, NULL), -EINVAL);
	cr_expect_str_eq(tally_export_error(&E),
			 "metric name 'a': its items differ in kind (counter, gauge)");
	tally_vec_destroy(&v);
	o = (struct tally_vec_opts){.nr_items = 1, .names = badfam};
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	cr_expect_eq(tally_export_add_vec(&E, "p", &v, NULL, NULL, NULL), -EINVAL);
	cr_expect_not_null(strstr(tally_export_error(&E), "metric name 'p_a_count' ends with a "
							  "reserved suffix"));
	tally_vec_destroy(&v);
	expect(&E, TALLY_EXPORT_STAT, "");
}

/* memcached's response_obj_count: refused, the message names the item
 * and the fix; renaming that one item fixes it. */
Test(export_vec, reserved_suffix_names_the_fix)
{
	static const char *const names[] = {"cmd_get", "response_obj_count", "get_hits"};
	struct tally_vec v;
	struct tally_vec_opts o = {.nr_items = 3, .names = names};
	const char *err;
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	tally_vec_mod(&v, 1, 4);
	cr_assert_eq(tally_export_add_vec(&E, "memcached", &v, NULL, NULL, NULL), -EINVAL);
	err = tally_export_error(&E);
	cr_expect_not_null(strstr(err, "metric name 'memcached_response_obj_count' ends with a "
				       "reserved suffix"),
			   "%s", err);
	cr_expect_not_null(strstr(err, " [vector item 1: rename it with tally_vec_set_item_name()]"),
			   "%s", err);
	cr_assert_eq(tally_vec_set_item_name(&v, 1, "response_objs"), 0);
	cr_assert_eq(tally_export_add_vec(&E, "memcached", &v, NULL, NULL, NULL), 0, "%s",
		     tally_export_error(&E));
	expect(&E, TALLY_EXPORT_STAT,
	       "memcached_cmd_get 0\nmemcached_response_objs 4\nmemcached_get_hits 0\n");
	tally_export_destroy(&E);
	tally_vec_destroy(&v);
}

/* Every item hidden: nothing exported, and the render still works. */
Test(export_vec, all_hidden)
{
	static const unsigned char fl[] = {TALLY_VEC_ITEM_HIDDEN, TALLY_VEC_ITEM_HIDDEN};
	struct tally_vec v;
	struct tally_vec_opts o = {.nr_items = 2, .item_flags = fl};
	cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
	tally_vec_mod(&v, 0, 1);
	cr_assert_eq(tally_export_add_vec(&E, "h", &v, NULL, NULL, NULL), 0);
	expect(&E, TALLY_EXPORT_PROMETHEUS, "");
	expect(&E, TALLY_EXPORT_JSON, "{\"families\":[]}\n");
	tally_export_destroy(&E);
	tally_vec_destroy(&v);
}

static uint64_t next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* Random item names built from the pieces labels are made of (braces,
 * quotes, escapes, commas, UTF-8 and bytes that are not): each is either
 * refused with -EINVAL, a message and nothing registered, or exported as
 * a series whose rendered key (stat format: family{labels}) is canonical:
 * used as an item name in turn, it is accepted and renders to itself. */
Test(export_vec, label_names_fuzzed)
{
	static const char *const pieces[] = {
		"a", "class", "_x", "Z9", "__", "1", "{", "}", "=", "\"", "\\\"", "\\\\", "\\n",
		"\\t", ",", " ", "\xc3\xa9", "\xff", "\n", "x=\"1\"", "b=\"", "\"}", "{a=\"",
	};
	static const char *const lnames[] = {"a", "class", "_x", "Z9", "le", "a", "__a", "1a", ""};
	static const char *const values[] = {"1",  "12", "\\\"", "\\\\", "\\n", "\xc3\xa9", ",",
					     "}", "{", "=",  " ",   "\\t",  "\xff", "\""};
	uint64_t seed = 0x7a11e5u;
	unsigned accepted = 0, labelled = 0, refused = 0;
	for (unsigned n = 0; n < 4000; n++) {
		char name[96] = "hits";
		const char *names[1] = {name};
		struct tally_vec v;
		struct tally_vec_opts o = {.nr_items = 1, .names = names};
		struct tally_export e;
		unsigned k = 1 + (unsigned)(seed % 7);
		int err;
		if (n % 2) { /* any pieces */
			for (unsigned i = 0; i < k; i++)
				strncat(name, pieces[next(&seed) % N_OF(pieces)],
					sizeof(name) - strlen(name) - 1);
		} else { /* label sets, now and then spoilt */
			strcat(name, "{");
			for (unsigned i = 0; i < 1 + k % 3; i++) {
				if (i)
					strcat(name, ",");
				strcat(name, lnames[next(&seed) % N_OF(lnames)]);
				strcat(name, "=\"");
				for (unsigned j = next(&seed) % 4; j; j--)
					strcat(name, values[next(&seed) % N_OF(values)]);
				strcat(name, "\"");
			}
			strcat(name, "}");
		}
		next(&seed);
		cr_assert_eq(tally_vec_init_opts(&v, &o), 0);
		tally_vec_mod(&v, 0, (tally_sword)n);
		cr_assert_eq(tally_export_init(&e), 0);
		err = tally_export_add_vec(&e, NULL, &v, NULL, NULL, NULL);
		if (err) {
			char *t;
			size_t len = 0;
			refused++;
			cr_assert_eq(err, -EINVAL, "'%s': %d", name, err);
			cr_assert_neq(tally_export_error(&e)[0], '\0', "'%s': no message", name);
			cr_assert_eq(tally_export_render_alloc(&e, TALLY_EXPORT_STAT, &t, &len), 0);
			cr_assert_eq(len, 0, "'%s' refused but rendered: %s", name, t);
			free(t);
		} else {
			char *t, *u, key[256];
			const char *again[1] = {key};
			struct tally_vec w;
			struct tally_vec_opts ow = {.nr_items = 1, .names = again};
			struct tally_export f;
			size_t len = 0;
			accepted++;
			labelled += strchr(name, '{') != NULL;
			cr_assert_eq(tally_export_render_alloc(&e, TALLY_EXPORT_STAT, &t, &len), 0);
			cr_assert(len > 2 && t[len - 1] == '\n' && strchr(t, '\n') == t + len - 1,
				  "'%s': not one line: %s", name, t);
			cr_assert(strrchr(t, ' ') && strtoull(strrchr(t, ' ') + 1, NULL, 10) == n,
				  "'%s': %s", name, t);
			cr_assert_lt((size_t)(strrchr(t, ' ') - t), sizeof(key));
			memcpy(key, t, (size_t)(strrchr(t, ' ') - t));
			key[strrchr(t, ' ') - t] = '\0';
			cr_assert_eq(tally_vec_init_opts(&w, &ow), 0);
			tally_vec_mod(&w, 0, (tally_sword)n);
			cr_assert_eq(tally_export_init(&f), 0);
			cr_assert_eq(tally_export_add_vec(&f, NULL, &w, NULL, NULL, NULL), 0,
				     "'%s' rendered as '%s', which is refused: %s", name, key,
				     tally_export_error(&f));
			cr_assert_eq(tally_export_render_alloc(&f, TALLY_EXPORT_STAT, &u, &len), 0);
			cr_assert_str_eq(u, t, "'%s': not canonical", name);
			free(u);
			free(t);
			tally_export_destroy(&f);
			tally_vec_destroy(&w);
		}
		tally_export_destroy(&e);
		tally_vec_destroy(&v);
	}
	/* Both outcomes are common, so the test exercises both. */
	cr_assert_gt(labelled, 200, "accepted %u, %u with labels", accepted, labelled);
	cr_assert_gt(refused, 200, "refused %u", refused);
}
