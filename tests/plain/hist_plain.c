/*
 * tally_hist without Criterion (also run by the -m32 build and under qemu
 * for other architectures): exact bucket positions and counts, the 32-bit
 * carry in both banks, a quantile within its bound, reset, and a rendered
 * histogram's exact text.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <string.h>
#include <tally/export_hist.h>

int main(void)
{
	struct tally_hist h;
	struct tally_hist_snap s;
	struct tally_export e;
	static const uint64_t b[] = {10, 100};
	struct tally_hist_opts o = {0, 0, 0, b, 2};
	char *out = NULL;
	size_t len;
	uint64_t n = TALLY_HIST_N_MAX;
	double q;

	CHECK_EQ(tally_hist_init(&h, NULL), 0);
	CHECK_EQ(tally_hist_snap_init(&s, &h), 0);
	CHECK_EQ(tally_hist_buckets(&h), 4563u);
	CHECK_EQ(tally_hist_record(&h, 0), 0);   /* below */
	CHECK_EQ(tally_hist_record(&h, 257), 0); /* [256, 257]: position 256 */
	CHECK_EQ(tally_hist_record(&h, 256), 0);
	CHECK_EQ(tally_hist_record(&h, -3), -EINVAL);
	CHECK_EQ(tally_hist_record_n(&h, 3, n), 0);
	CHECK_EQ(tally_hist_record_n(&h, 3, n), 0); /* the half wraps: carried */
	CHECK_EQ(tally_hist_snapshot(&h, &s), 0);   /* switches banks */
	CHECK_EQ(s.counts[0], 1u);
	CHECK_EQ(s.counts[256], 2u);
	CHECK_EQ(s.counts[3], 2 * n);
	CHECK_EQ(s.count, 2 * n + 3);
	CHECK_EQ(s.sum, 513 + 6 * n);
	CHECK_EQ(tally_hist_record_n(&h, 3, n), 0);
	CHECK_EQ(tally_hist_record_n(&h, 3, n), 0); /* the other bank wraps */
	CHECK_EQ(tally_hist_snapshot(&h, &s), 0);
	CHECK_EQ(s.counts[3], 4 * n);
	q = tally_hist_quantile(&s, 0.5);
	CHECK(q == 3.0, "median %f, expected 3", q);
	CHECK_EQ(tally_hist_reset(&h), 0);
	CHECK_EQ(tally_hist_record(&h, 1000000), 0);
	CHECK_EQ(tally_hist_snapshot(&h, &s), 0);
	CHECK_EQ(s.count, 1u);
	q = tally_hist_quantile(&s, 0.99);
	CHECK(q >= 1000000 * (1 - tally_hist_error(&h)) && q <= 1000000 * (1 + tally_hist_error(&h)),
	      "p99 %f", q);
	tally_hist_snap_destroy(&s);
	tally_hist_destroy(&h);

	CHECK_EQ(tally_hist_init(&h, &o), 0);
	CHECK_EQ(tally_export_init(&e), 0);
	CHECK_EQ(tally_export_add_hist(&e, "sizes", "Sizes.", &h, NULL), 0);
	tally_hist_record(&h, 7);
	tally_hist_record(&h, 70);
	tally_hist_record(&h, 700);
	CHECK_EQ(tally_export_render_alloc(&e, TALLY_EXPORT_PROMETHEUS, &out, &len), 0);
	CHECK(out && !strcmp(out, "# HELP sizes Sizes.\n# TYPE sizes histogram\n"
				  "sizes_bucket{le=\"10\"} 1\nsizes_bucket{le=\"100\"} 2\n"
				  "sizes_bucket{le=\"+Inf\"} 3\nsizes_sum 777\nsizes_count 3\n"),
	      "render: %s", out ? out : "(null)");
	free(out);
	tally_export_destroy(&e);
	tally_hist_destroy(&h);
	return harness_exit("hist_plain");
}
