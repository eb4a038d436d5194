/*
 * bench/bench_hist_hdr.c - HdrHistogram_c beside tally_hist, in bench_hist's
 * binary and run (bench_hist.c's values, loop and thread counts), built only
 * when its public sources are given (HdrHistogram_c is not part of tally):
 *
 *   cmake ... -DTALLY_BUILD_BENCH=ON -DTALLY_BENCH_HDR=<HdrHistogram_c checkout>
 *
 * Its src/hdr_histogram.c is compiled into this file, so its record inlines
 * into the loop as tally's does (bench/RESULTS.md, the histogram section,
 * has the commit and the commands).
 *
 *   hist_record/hdr/digits:D    hdr_record_value(h, v), a histogram per
 *                               thread (its single-writer use), 1 .. 3.6e12
 *                               at D significant digits
 *   hist_record/hdr_atomic      hdr_record_value_atomic on one shared one
 *   hist_read/hdr_p99/digits:D  hdr_value_at_percentile(h, 99.0) of the
 *                               read side's data (bench_hist.c's read_body)
 *
 * Digits 2 has 2^7 buckets per power of two (tally's default p = 7), 3
 * has 2^10 (p = 10).
 */
#include "cbench.h"
#include "bench_hist.h"

#include <hdr_histogram.c>

/* One histogram per thread (single writer), or one shared (atomic). */
static struct hdr_histogram *hdrs[64];
static struct hdr_histogram *hdr_shared;

static void hdr_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i, k = 0, recorded = 0;
	int atomic = arg != NULL, t = cbench_thread_index(s);
	int digits = atomic ? 3 : (int)cbench_range(s, 0);
	struct hdr_histogram *h = NULL;
	if (!atomic && (t >= 64 || hdr_init(1, 3600000000000LL, digits, &hdrs[t]))) {
		cbench_skip(s, "hdr_init");
		hdrs[t < 64 ? t : 0] = NULL;
	}
	while (cbench_batch(s, &n)) {
		if (!h)
			h = atomic ? hdr_shared : hdrs[t];
		if (!h)
			continue;
		for (i = 0; i < n; i++)
			for (int j = 0; j < BENCH_HIST_UNROLL; j++) {
				int64_t v = bench_hist_vals[k++ & (BENCH_HIST_NVALS - 1)];
				if (atomic)
					recorded += hdr_record_value_atomic(h, v);
				else
					recorded += hdr_record_value(h, v);
			}
	}
	cbench_check(s, recorded == k, "hdr: a value not recorded");
	if (!atomic && t < 64 && hdrs[t]) {
		cbench_check(s, (uint64_t)hdrs[t]->total_count == k, "hdr: total_count");
		hdr_close(hdrs[t]);
		hdrs[t] = NULL;
	}
	cbench_items(s, (int64_t)(cbench_iterations(s) * BENCH_HIST_UNROLL));
}

static int hdr_shared_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	return hdr_init(1, 3600000000000LL, 3, &hdr_shared);
}

static void hdr_shared_teardown(struct cbench_state *s, void *arg)
{
	(void)arg;
	cbench_check(s,
		     (uint64_t)hdr_shared->total_count ==
			     cbench_iterations(s) * BENCH_HIST_UNROLL * (uint64_t)cbench_nthreads(s),
		     "hdr: shared total_count");
	hdr_close(hdr_shared);
	hdr_shared = NULL;
}

static void hdr_read_body(struct cbench_state *s, void *arg)
{
	struct hdr_histogram *h;
	uint64_t n, i;
	int64_t v = 0;
	(void)arg;
	if (hdr_init(1, 3600000000000LL, (int)cbench_range(s, 0), &h)) {
		cbench_skip(s, "hdr_init");
		while (cbench_batch(s, &n))
			;
		return;
	}
	for (i = 0; i < BENCH_HIST_READ_N; i++)
		hdr_record_value(h, bench_hist_read_value(i));
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			v = hdr_value_at_percentile(h, 99.0);
			CBENCH_KEEP(v);
		}
	cbench_check(s, h->total_count == BENCH_HIST_READ_N, "hdr: read side total_count");
	cbench_counter(s, "buckets", (double)h->counts_len, 0);
	cbench_counter(s, "p99", (double)v, 0);
	cbench_items(s, (int64_t)cbench_iterations(s));
	hdr_close(h);
}

CBENCH_INIT(register_hist_hdr)
{
	cbench_env_threads(cbench_arg(
		cbench_arg(cbench_arg_name(cbench_register("hist_record/hdr", hdr_body, NULL), "digits"),
			   2),
		3));
	cbench_env_threads(cbench_setup(cbench_register("hist_record/hdr_atomic", hdr_body, &hdrs),
					hdr_shared_setup, hdr_shared_teardown));
	cbench_arg(cbench_arg(cbench_arg_name(cbench_register("hist_read/hdr_p99", hdr_read_body,
							       NULL),
					      "digits"),
			      2),
		   3);
}
