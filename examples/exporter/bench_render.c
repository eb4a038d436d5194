/*
 * bench_render - what one scrape costs the exporter: a tree of G groups
 * (a root, sqrt(G) parents, the rest leaves under them) with 8 items each,
 * every item of every group updated, then R renders of each format.
 * Prints, per format, the median render time, the bytes and the series;
 * the forced root flush each render starts with is timed on its own.
 * No timing assertions: the smoke test only checks the line counts.
 *
 *   bench_render [--groups G] [--renders R]
 */
#define _GNU_SOURCE
#include <tally/rstat.h>
#include <tally/export_rstat.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NR_ITEMS 8

static struct tally_group **groups;
/* "svc" or "job", a size_t in decimal (up to 20 digits), NUL */
static char (*names)[24];
static size_t nr_groups;

/* Groups are found by a binary search over their addresses (sorted). */
static struct {
	const struct tally_group *g;
	size_t i;
} *by_addr;

static int cmp_addr(const void *a, const void *b)
{
	const struct tally_group *x = *(const struct tally_group *const *)a;
	const struct tally_group *y = *(const struct tally_group *const *)b;
	return x < y ? -1 : x > y;
}

static const char *name_of(const struct tally_group *g, void *arg)
{
	size_t lo = 0, hi = nr_groups;
	(void)arg;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (by_addr[mid].g == g)
			return names[by_addr[mid].i];
		if ((const void *)by_addr[mid].g < (const void *)g)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const items[NR_ITEMS] = {"pgfault", "pgmajfault", "read_bytes",
						    "write_bytes", "requests", "errors",
						    "usage_bytes", "inflight"};
	static const unsigned char kinds[NR_ITEMS] = {0, 0, 0, 0, 0, 0, 1, 1};
	static const char *const fmt_names[] = {"text 0.0.4", "OpenMetrics", "stat", "JSON"};
	size_t want_groups = 10000, parents, i;
	int renders = 5, r, f, it;
	struct tally_tree *t;
	struct tally_export e;
	double *times;

	for (it = 1; it + 1 < argc; it += 2) {
		if (!strcmp(argv[it], "--groups"))
			want_groups = strtoul(argv[it + 1], NULL, 10);
		else if (!strcmp(argv[it], "--renders"))
			renders = atoi(argv[it + 1]);
	}
	if (want_groups < 2 || renders < 1) {
		fprintf(stderr, "usage: bench_render [--groups G>=2] [--renders R>=1]\n");
		return 2;
	}
	urcu_memb_register_thread();
	t = tally_tree_create(NR_ITEMS);
	parents = (size_t)sqrt((double)want_groups);
	groups = (struct tally_group **)calloc(want_groups, sizeof(*groups));
	names = (char (*)[24])calloc(want_groups, sizeof(*names));
	by_addr = calloc(want_groups, sizeof(*by_addr));
	times = (double *)calloc((size_t)renders, sizeof(double));
	if (!t || !groups || !names || !by_addr || !times)
		return 1;
	/* groups[0..parents) under the root, the rest spread under them */
	for (i = 0; i < want_groups; i++) {
		struct tally_group *parent =
			i < parents ? tally_tree_root(t) : groups[(i - parents) % parents];
		groups[i] = tally_group_create(parent);
		if (!groups[i])
			return 1;
		snprintf(names[i], sizeof(names[i]), i < parents ? "svc%zu" : "job%zu", i);
		nr_groups++;
	}
	{
		struct tally_group **sorted = (struct tally_group **)malloc(nr_groups * sizeof(*sorted));
		memcpy(sorted, groups, nr_groups * sizeof(*sorted));
		qsort(sorted, nr_groups, sizeof(*sorted), cmp_addr);
		for (i = 0; i < nr_groups; i++) {
			size_t j;
			by_addr[i].g = sorted[i];
			for (j = 0; groups[j] != sorted[i]; j++)
				;
			by_addr[i].i = j;
		}
		free(sorted);
	}
	for (i = 0; i < nr_groups; i++)
		for (it = 0; it < NR_ITEMS; it++)
			tally_group_mod(groups[i], (unsigned)it, (tally_sword)(1 + i % 1000));

	tally_export_init(&e);
	if (tally_export_add_tree(&e, t, &(struct tally_export_tree_opts){.prefix = "memcg",
				  .names = items, .kinds = kinds, .name_fn = name_of,
				  .flags = TALLY_EXPORT_TREE_FLUSH})) {
		fprintf(stderr, "bench_render: %s\n", tally_export_error(&e));
		return 1;
	}
	printf("bench_render: %zu groups (+ root) x %d items = %zu series per render "
	       "(hierarchical and local)\n",
	       nr_groups, NR_ITEMS, (nr_groups + 1) * NR_ITEMS * 2);
	{
		double t0, best = 1e9;
		for (r = 0; r < renders; r++) {
			for (i = 0; i < nr_groups; i++)
				tally_group_mod(groups[i], 0, 1);
			t0 = now_s();
			tally_group_flush_force(tally_tree_root(t));
			t0 = now_s() - t0;
			if (t0 < best)
				best = t0;
		}
		printf("  forced root flush after every group was updated: %.2f ms (best of %d)\n",
		       best * 1e3, renders);
	}
	for (f = TALLY_EXPORT_PROMETHEUS; f <= TALLY_EXPORT_JSON; f++) {
		size_t len = 0, lines = 0;
		char *out = NULL;
		for (r = 0; r < renders; r++) {
			double t0;
			free(out);
			out = NULL;
			/* Some updates between scrapes, as in life. */
			for (i = 0; i < nr_groups; i += 7)
				tally_group_mod(groups[i], 1, 1);
			t0 = now_s();
			if (tally_export_render_alloc(&e, f, &out, &len)) {
				fprintf(stderr, "bench_render: %s\n", tally_export_error(&e));
				return 1;
			}
			times[r] = now_s() - t0;
		}
		qsort(times, (size_t)renders, sizeof(double), cmp_double);
		for (i = 0; i < len; i++)
			lines += out[i] == '\n';
		printf("  %-11s: %8.2f ms per render (median of %d, flush included), %zu bytes, "
		       "%zu lines\n",
		       fmt_names[f], times[renders / 2] * 1e3, renders, len, lines);
		free(out);
	}
	tally_export_destroy(&e);
	tally_tree_destroy(t);
	urcu_memb_unregister_thread();
	free(groups);
	free(names);
	free(by_addr);
	free(times);
	return 0;
}
