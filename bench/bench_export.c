/*
 * bench/bench_export.c - registering with an exporter (tally/export.h),
 * compiled as C: the time to register N families or series into an empty
 * exporter, which must grow as N (names are found by hash), not N^2:
 *
 *   export_register/counters/N      N tally_export_add_counter calls,
 *                                   names c0 .. c<N-1>, one family each
 *   export_register/vec_families/N  one tally_export_add_vec of a vector
 *                                   of N items f0 .. f<N-1>: N families
 *   export_register/vec_series/N    one tally_export_add_vec of N items
 *                                   f{i="0"} ..: one family, N series
 *
 * N: 10,000, 40,000 and 100,000 counters; vectors hold at most
 * TALLY_VEC_ITEMS_MAX (65,536) items, so 10,000, 40,000 and 65,536 items.
 * Only the registration is timed (manual time; the exporter's init and
 * destroy and the vector's are not). Read time per N, and the ratios
 * between Ns: linear is 4x from 10k to 40k and 10x to 100k, quadratic 16x
 * and 100x. Each run checks that all N are registered (a render's length).
 *   bench_export --benchmark_repetitions=3
 */
#include "cbench.h"

#include <stdio.h>
#include <stdlib.h>
#include <tally/export.h>

/* Bytes of the stat format of N series "<name><i> 0\n", name 1 byte. */
static size_t stat_len(long n, size_t extra)
{
	size_t len = 0;
	for (long i = 0; i < n; i++) {
		char d[24];
		len += (size_t)snprintf(d, sizeof(d), "%ld", i) + 4 + extra;
	}
	return len;
}

static void check_render(struct cbench_state *s, struct tally_export *e, size_t want)
{
	char *out = NULL;
	size_t len = 0;
	cbench_check(s, !tally_export_render_alloc(e, TALLY_EXPORT_STAT, &out, &len) && len == want,
		     "every family registered");
	free(out);
}

static void counters(struct cbench_state *s, void *arg)
{
	long n = cbench_range(s, 0);
	struct tally_counter c;
	char (*names)[32] = (char (*)[32])malloc((size_t)n * 32);
	uint64_t it, b, ns = 0;
	(void)arg;
	cbench_pin(0);
	if (!names || tally_counter_init(&c, 0, 0)) {
		free(names);
		cbench_skip(s, "setup");
		return;
	}
	for (long i = 0; i < n; i++)
		snprintf(names[i], 32, "c%ld", i);
	while (cbench_batch(s, &b))
		for (it = 0; it < b; it++) {
			struct tally_export e;
			uint64_t t0;
			int err = 0;
			tally_export_init(&e);
			t0 = cbench_now_ns();
			for (long i = 0; i < n && !err; i++)
				err = tally_export_add_counter(&e, names[i], NULL, &c,
							       TALLY_EXPORT_COUNTER);
			ns += cbench_now_ns() - t0;
			cbench_check(s, !err, "add_counter");
			if (it == 0)
				check_render(s, &e, stat_len(n, 0));
			tally_export_destroy(&e);
		}
	cbench_add_time(s, ns);
	cbench_items(s, (int64_t)cbench_iterations(s) * n);
	tally_counter_destroy(&c);
	free(names);
}

/* One vector of n items, named f<i> (labelled 0) or f{i="<i>"}. */
static void vec_items(struct cbench_state *s, int labelled)
{
	long n = cbench_range(s, 0);
	char (*buf)[32] = (char (*)[32])malloc((size_t)n * 32);
	const char **names = (const char **)malloc((size_t)n * sizeof(*names));
	struct tally_vec v;
	struct tally_vec_opts o = {.nr_items = (unsigned)n};
	uint64_t it, b, ns = 0;
	cbench_pin(0);
	if (!buf || !names) {
		free(buf);
		free((void *)names);
		cbench_skip(s, "setup");
		return;
	}
	for (long i = 0; i < n; i++) {
		snprintf(buf[i], 32, labelled ? "f{i=\"%ld\"}" : "f%ld", i);
		names[i] = buf[i];
	}
	o.names = names;
	if (tally_vec_init_opts(&v, &o)) {
		free(buf);
		free((void *)names);
		cbench_skip(s, "vec");
		return;
	}
	while (cbench_batch(s, &b))
		for (it = 0; it < b; it++) {
			struct tally_export e;
			uint64_t t0;
			int err;
			tally_export_init(&e);
			t0 = cbench_now_ns();
			err = tally_export_add_vec(&e, NULL, &v, NULL, NULL, NULL);
			ns += cbench_now_ns() - t0;
			cbench_check(s, !err, "add_vec");
			if (it == 0) /* f{i="<i>"} is 6 bytes more than f<i> */
				check_render(s, &e, stat_len(n, labelled ? 6 : 0));
			tally_export_destroy(&e);
		}
	cbench_add_time(s, ns);
	cbench_items(s, (int64_t)cbench_iterations(s) * n);
	tally_vec_destroy(&v);
	free(buf);
	free((void *)names);
}

static void vec_families(struct cbench_state *s, void *arg)
{
	(void)arg;
	vec_items(s, 0);
}

static void vec_series(struct cbench_state *s, void *arg)
{
	(void)arg;
	vec_items(s, 1);
}

static struct cbench *sizes(struct cbench *b, long last)
{
	cbench_arg(b, 10000);
	cbench_arg(b, 40000);
	cbench_arg(b, last);
	return cbench_manual_time(b);
}

CBENCH_INIT(register_export)
{
	sizes(cbench_register("export_register/counters", counters, NULL), 100000);
	sizes(cbench_register("export_register/vec_families", vec_families, NULL),
	      TALLY_VEC_ITEMS_MAX);
	sizes(cbench_register("export_register/vec_series", vec_series, NULL),
	      TALLY_VEC_ITEMS_MAX);
}
