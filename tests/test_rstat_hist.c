/*
 * Unit tests for tally/rstat.h's histograms per group (issue 28):
 * tally_group_record(), tally_group_hist_snapshot() and _raw(). A group's
 * histogram after a flush is its subtree's: the same counts, bucket by
 * bucket, as a plain tally_hist with the same buckets that got every
 * value recorded anywhere in the subtree (the model), and the same sum.
 */
#define _GNU_SOURCE
#include "test_rstat_model.h"

#include <tally/rstat.h> /* also tells the build to link liburcu */

TestSuite(rstat_hist, .init = rstat_setup, .fini = rstat_teardown);

enum { REQUESTS = 0, NITEMS = 1 };
enum { LAT = 0, SIZE = 1 };

static const uint64_t size_bounds[] = {64, 512, 4096, 32768};

static struct tally_tree *hist_tree(void)
{
	static struct tally_hist_opts h[2];
	struct tally_tree_opts o;
	memset(h, 0, sizeof(h));
	h[SIZE].bounds = size_bounds;
	h[SIZE].nr_bounds = 4;
	memset(&o, 0, sizeof(o));
	o.nr_items = NITEMS;
	o.hists = h;
	o.nr_hists = 2;
	return tally_tree_create_opts(&o);
}

/* The model: a plain histogram with hist LAT's buckets (precision 3). */
static void model_init(struct tally_hist *m, int which)
{
	struct tally_hist_opts o;
	memset(&o, 0, sizeof(o));
	if (which == SIZE) {
		o.bounds = size_bounds;
		o.nr_bounds = 4;
	} else {
		o.precision = TALLY_GROUP_HIST_PRECISION_DEFAULT;
	}
	cr_assert_eq(tally_hist_init(m, &o), 0);
}

static void expect_same(struct tally_group *g, unsigned h, struct tally_hist *model, int raw)
{
	struct tally_hist_snap a, b;
	unsigned j;
	cr_assert_eq(tally_group_hist_snap_init(&a, tally_group_tree(g), h), 0);
	cr_assert_eq(tally_hist_snap_init(&b, model), 0);
	cr_assert_eq(a.nr_buckets, b.nr_buckets);
	cr_assert_eq(raw ? tally_group_hist_snapshot_raw(g, h, &a, false)
			 : tally_group_hist_snapshot(g, h, &a),
		     0);
	cr_assert_eq(tally_hist_snapshot(model, &b), 0);
	for (j = 0; j < a.nr_buckets; j++)
		cr_assert_eq(a.counts[j], b.counts[j], "bucket %u: %llu, model %llu", j,
			     (unsigned long long)a.counts[j], (unsigned long long)b.counts[j]);
	cr_assert_eq(a.count, b.count);
	cr_assert_eq(a.sum & (tally_uword)-1, b.sum & (tally_uword)-1);
	cr_assert_eq(tally_hist_quantile(&a, 0.99), tally_hist_quantile(&b, 0.99));
	tally_hist_snap_destroy(&a);
	tally_hist_snap_destroy(&b);
}

Test(rstat_hist, default_layout_size)
{
	struct tally_tree *t = hist_tree();
	struct tally_hist_snap s;
	cr_assert_not_null(t);
	cr_assert_eq(tally_tree_nr_hists(t), 2);
	cr_assert_eq(tally_group_hist_snap_init(&s, t, LAT), 0);
	/* the figure TALLY_GROUP_HIST_PRECISION_DEFAULT's comment states */
	cr_assert_eq(s.nr_buckets, 319, "%u", s.nr_buckets);
	tally_hist_snap_destroy(&s);
	cr_assert_eq(tally_group_hist_snap_init(&s, t, SIZE), 0);
	cr_assert_eq(s.nr_buckets, 6);
	tally_hist_snap_destroy(&s);
	tally_tree_destroy(t);
}

/* Three groups, values in each; the parent is their merge, the root too. */
Test(rstat_hist, parent_is_the_subtree_histogram)
{
	struct tally_tree *t = hist_tree();
	struct tally_group *root = tally_tree_root(t), *p = tally_group_create(root);
	struct tally_group *c[3];
	struct tally_hist all, one, sizes;
	struct harness_rng rng = {42};
	int i, k;
	model_init(&all, LAT);
	model_init(&one, LAT);
	model_init(&sizes, SIZE);
	for (k = 0; k < 3; k++)
		c[k] = tally_group_create(p);
	for (i = 0; i < 30000; i++) {
		int64_t v = (int64_t)harness_range(&rng, 0, 1) ? (int64_t)harness_range(&rng, 0, 5000)
								: (int64_t)harness_range(&rng, 0, 1ull << 40);
		k = (int)harness_range(&rng, 0, 3);
		cr_assert_eq(tally_group_record(k < 3 ? c[k] : p, LAT, v), 0);
		cr_assert_eq(tally_hist_record(&all, v), 0);
		if (k == 0)
			cr_assert_eq(tally_hist_record(&one, v), 0);
		cr_assert_eq(tally_group_record(root, SIZE, v % 70000), 0);
		cr_assert_eq(tally_hist_record(&sizes, v % 70000), 0);
	}
	tally_group_flush_force(root);
	expect_same(p, LAT, &all, 0);
	expect_same(root, LAT, &all, 1);
	expect_same(c[0], LAT, &one, 0);
	expect_same(root, SIZE, &sizes, 0);
	/* local: the parent's own records are not its children's */
	{
		struct tally_hist_snap a, b;
		cr_assert_eq(tally_group_hist_snap_init(&a, t, LAT), 0);
		cr_assert_eq(tally_group_hist_snap_init(&b, t, LAT), 0);
		cr_assert_eq(tally_group_hist_snapshot_raw(c[0], LAT, &a, true), 0);
		cr_assert_eq(tally_group_hist_snapshot_raw(c[0], LAT, &b, false), 0);
		cr_assert_eq(a.count, b.count);
		cr_assert_eq(tally_group_hist_snapshot_raw(p, LAT, &a, true), 0);
		cr_assert_eq(tally_group_hist_snapshot_raw(p, LAT, &b, false), 0);
		cr_assert_lt(a.count, b.count);
		cr_assert_gt(a.count, 0);
		tally_hist_snap_destroy(&a);
		tally_hist_snap_destroy(&b);
	}
	tally_hist_destroy(&all);
	tally_hist_destroy(&one);
	tally_hist_destroy(&sizes);
	tally_tree_destroy(t);
}

/* A destroyed group's records, before and after its destroy, reach its
 * parent; a reset starts the since-reset histogram afresh, not the raw. */
Test(rstat_hist, destroy_and_reset)
{
	struct tally_tree *t = hist_tree();
	struct tally_group *root = tally_tree_root(t), *p = tally_group_create(root);
	struct tally_group *c = tally_group_create(p);
	struct tally_hist_snap s;
	cr_assert(tally_group_tryget(c));
	cr_assert_eq(tally_group_record(c, LAT, 1000), 0);
	cr_assert_eq(tally_group_destroy(c), 0);
	cr_assert_eq(tally_group_record(c, LAT, 3000), 0); /* counts for p */
	tally_group_put(c);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_hist_snap_init(&s, t, LAT), 0);
	cr_assert_eq(tally_group_hist_snapshot(p, LAT, &s), 0);
	cr_assert_eq(s.count, 2);
	cr_assert_eq(s.sum, 4000);
	cr_assert_eq(tally_group_reset(root), 0);
	cr_assert_eq(tally_group_record(p, LAT, 7), 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_hist_snapshot(p, LAT, &s), 0);
	cr_assert_eq(s.count, 1);
	cr_assert_eq(s.sum, 7);
	cr_assert_eq(s.counts[tally__hist_pos(&s.tally__l, 7)], 1);
	cr_assert_eq(tally_group_hist_snapshot_raw(root, LAT, &s, false), 0);
	cr_assert_eq(s.count, 3);
	cr_assert_eq(s.sum, 4007);
	tally_hist_snap_destroy(&s);
	tally_tree_destroy(t);
}

/* Bad input: a clear error, nothing recorded; a histogram's words are not
 * items. */
Test(rstat_hist, bad_input)
{
	struct tally_tree *t = hist_tree();
	struct tally_group *root = tally_tree_root(t);
	struct tally_hist_snap s, other;
	struct tally_hist_opts bad = {0, 0, 0, NULL, 0};
	struct tally_tree_opts o;
	static const uint64_t down[] = {5, 3};
	cr_assert_eq(tally_group_record(root, LAT, -1), -EINVAL);
	cr_assert_eq(tally_group_record(root, 2, 1), -EINVAL);
	cr_assert_eq(tally_group_record(NULL, LAT, 1), -EINVAL);
	cr_assert_eq(tally_group_mod(root, NITEMS, 1), -EINVAL); /* LAT's first word */
	cr_assert_eq(tally_group_mod(root, NITEMS + 100, 1), -EINVAL);
	cr_assert_null(tally_tree_item_name(t, NITEMS));
	cr_assert_eq(tally_group_hist_snap_init(&s, t, 2), -EINVAL);
	cr_assert_eq(tally_group_hist_snap_init(&s, t, LAT), 0);
	cr_assert_eq(tally_group_hist_snap_init(&other, t, SIZE), 0);
	cr_assert_eq(tally_group_hist_snapshot(root, SIZE, &s), -EINVAL); /* other buckets */
	cr_assert_eq(tally_group_hist_snapshot(root, LAT, &s), 0);
	cr_assert_eq(s.count, 0);
	tally_hist_snap_destroy(&s);
	tally_hist_snap_destroy(&other);
	tally_tree_destroy(t);
	memset(&o, 0, sizeof(o));
	o.nr_items = 1;
	o.hists = &bad;
	o.nr_hists = 1;
	bad.bounds = down;
	bad.nr_bounds = 2;
	errno = 0;
	cr_assert_null(tally_tree_create_opts(&o)); /* bounds that do not increase */
	cr_assert_eq(errno, EINVAL);
	bad.bounds = NULL;
	bad.nr_bounds = 0;
	bad.precision = 14; /* 30,000+ words: past TALLY_RSTAT_ITEMS_MAX */
	cr_assert_null(tally_tree_create_opts(&o));
	cr_assert_eq(errno, EINVAL);
	o.hists = NULL;
	cr_assert_null(tally_tree_create_opts(&o)); /* nr_hists without hists */
	cr_assert_eq(errno, EINVAL);
}

/* A record is one event for the flush thresholds, whatever its value: a
 * 1 s latency does not make the group flushable (its bucket's + 1 is
 * counted, not its sum's + 10^9), while a mod of the same size does. Both
 * ways in: a group's first record on a CPU (the fenced updates: the slot
 * not yet in the written bound) and the next, pinned there (x86_64 with
 * rseq: the record's section). */
Test(rstat_hist, record_counts_one_event_toward_the_threshold)
{
	struct tally_tree *t = hist_tree();
	struct tally_group *a = tally_group_create(tally_tree_root(t));
	struct tally_group *b = tally_group_create(tally_tree_root(t));
	cr_assert_geq(harness_pin_here(), 0);
	cr_assert_eq(tally_group_record(a, LAT, 1000000000), 0);
	cr_assert_not(tally_group_needs_flush(a));
	cr_assert_eq(tally_group_record(a, LAT, 1000000000), 0);
	cr_assert_not(tally_group_needs_flush(a));
	cr_assert_eq(tally_group_mod(b, REQUESTS, 1000000000), 0);
	cr_assert(tally_group_needs_flush(b));
	tally_tree_destroy(t);
}
