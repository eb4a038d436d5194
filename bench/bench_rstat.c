/*
 * bench/bench_rstat.c - tally_tree / tally_group, compiled as C: update
 * cost by tree depth (the legacy lock-and-walk producer it is compared
 * with is in bench_rstat_base.cc, C++, through the same cbench interface),
 * flush cost by number of updated groups and by subtree size, read cost,
 * and the latency of a thresholded flush plus read on a 5,000-group tree
 * with a writer beside.
 *
 * Depth D: the updated group sits D levels below the root (D = 1: a child
 * of the root); an update's ancestor walk covers D + 1 groups. Each
 * benchmark thread updates its own group; all of them share the chain of
 * ancestors (sibling cgroups under one parent).
 *
 *   group_mod/tally            tally_group_mod, nothing flushing (the
 *                              threshold walk stops at the first group that
 *                              already needs a flush)
 *   group_mod_flushed/tally    the same beside a thread that does a
 *                              thresholded root flush every 50 us, so the
 *                              threshold walk keeps going up the tree
 *   group_mod/legacy           bench_rstat_base.cc
 *   pcpu_add/tally             the bare per-CPU add, the reference
 *                              (pcpu_ref.h)
 *   counter_add/tally          tally_counter_add(c, 1) with batch 2^24
 *                              (folds once per 16M adds per CPU): the
 *                              cheapest update a user calls
 *   counter_add/tally_default  the same with the default batch: the
 *                              baseline for group_mod's ratio in the same
 *                              run (what a user calls beside it)
 *   group_record/tally         tally_group_record(g, 0, v) on each thread's
 *                              own group, v from a table of latencies
 *                              (300 ns .. 1 ms): issue 28's target, within
 *                              1.5x of the flat record beside it
 *   hist_record/flat           tally_hist_record(h, v), the same values,
 *                              one tally_hist with the same buckets
 *   group_get_put/tally        tally_group_get(g) then tally_group_put(g)
 *                              on each thread's own live group: two items
 *                              per pair (issue 29's target: each within
 *                              2x counter_add/tally_default)
 *
 * Every update benchmark checks the root's total after a final flush.
 */
#define _GNU_SOURCE
#include "cbench.h"

#include <tally/counter.h>
#include <tally/rstat.h>

#include "pcpu_ref.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ITEMS 8u
#define UNROLL 8

/* ---- update by depth ------------------------------------------------------ */

struct mod_case {
	int flusher_on;
	struct tally_tree *tree;
	struct tally_group **leaf; /* one per thread */
	struct cbench_writers *flusher;
};

static struct mod_case mod_plain = {0, NULL, NULL, NULL};
static struct mod_case mod_flushed = {1, NULL, NULL, NULL};

static void flusher_fn(void *arg)
{
	struct timespec ts = {0, 50000};
	tally_group_flush((struct tally_group *)arg);
	nanosleep(&ts, NULL);
}

/* Root, a chain of depth - 1 groups, and one group per thread at the end. */
static int mod_setup(struct cbench_state *s, void *arg)
{
	struct mod_case *m = (struct mod_case *)arg;
	int depth = (int)cbench_range(s, 0), threads = cbench_nthreads(s), i;
	struct tally_group *p;
	m->tree = tally_tree_create(ITEMS);
	m->leaf = (struct tally_group **)calloc((size_t)threads, sizeof(*m->leaf));
	if (!m->tree || !m->leaf)
		return -1;
	p = tally_tree_root(m->tree);
	for (i = 1; i < depth && p; i++)
		p = tally_group_create(p);
	for (i = 0; i < threads && p; i++)
		if (!(m->leaf[i] = tally_group_create(p)))
			return -1;
	if (!p)
		return -1;
	m->flusher = m->flusher_on ? cbench_writers_start(1, flusher_fn, tally_tree_root(m->tree))
				   : NULL;
	return 0;
}

static void mod_teardown(struct cbench_state *s, void *arg)
{
	struct mod_case *m = (struct mod_case *)arg;
	struct tally_group *root = tally_tree_root(m->tree);
	uint64_t want = cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s);
	tally_sword sum = 0;
	unsigned i;
	if (m->flusher)
		cbench_writers_stop(m->flusher);
	m->flusher = NULL;
	tally_group_flush_force(root);
	for (i = 0; i < ITEMS; i++)
		sum += tally_group_read(root, i);
	cbench_check(s, (tally_uword)sum == (tally_uword)want, "root total after flush");
	tally_tree_destroy(m->tree);
	free(m->leaf);
	m->tree = NULL;
	m->leaf = NULL;
}

static void mod_body(struct cbench_state *s, void *arg)
{
	struct mod_case *m = (struct mod_case *)arg;
	struct tally_group *g = NULL;
	uint64_t n, i;
	unsigned k = 0;
	while (cbench_batch(s, &n)) {
		/* leaf[] is ready once the start barrier is passed */
		g = m->leaf[cbench_thread_index(s)];
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++)
				tally_group_mod(g, k++ % ITEMS, 1);
	}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

static struct cbench *depths(struct cbench *b)
{
	return cbench_arg(cbench_arg(cbench_arg(cbench_arg_name(cbench_env_threads(b), "depth"), 1),
				     4),
			  8);
}

/* ---- histograms per group ------------------------------------------------- */

static int64_t lat_table[1024]; /* latencies in ns, 300 .. 1,000,000 */
static struct tally_hist flat;

static void lat_fill(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned i;
	for (i = 0; i < 1024; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* log-uniform: 300 ns .. about 1 ms */
		lat_table[i] = (int64_t)(300u << (x % 12)) + (int64_t)(x >> 40) % 300;
	}
}

static int group_record_setup(struct cbench_state *s, void *arg)
{
	struct mod_case *m = (struct mod_case *)arg;
	static struct tally_hist_opts h; /* precision 0: the group default */
	struct tally_tree_opts o;
	int threads = cbench_nthreads(s), i;
	lat_fill();
	memset(&o, 0, sizeof(o));
	o.nr_items = ITEMS;
	o.hists = &h;
	o.nr_hists = 1;
	m->tree = tally_tree_create_opts(&o);
	m->leaf = (struct tally_group **)calloc((size_t)threads, sizeof(*m->leaf));
	if (!m->tree || !m->leaf)
		return -1;
	for (i = 0; i < threads; i++)
		if (!(m->leaf[i] = tally_group_create(tally_tree_root(m->tree))))
			return -1;
	m->flusher = NULL;
	return 0;
}

/* The root's histogram holds every record. */
static void group_record_teardown(struct cbench_state *s, void *arg)
{
	struct mod_case *m = (struct mod_case *)arg;
	uint64_t want = cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s);
	struct tally_hist_snap sn = {0};
	int ok;
	tally_group_flush_force(tally_tree_root(m->tree));
	ok = !tally_group_hist_snap_init(&sn, m->tree, 0) &&
	     !tally_group_hist_snapshot(tally_tree_root(m->tree), 0, &sn) &&
	     (tally_uword)sn.count == (tally_uword)want;
	tally_hist_snap_destroy(&sn);
	cbench_check(s, ok, "root histogram count after flush");
	tally_tree_destroy(m->tree);
	free(m->leaf);
	m->tree = NULL;
	m->leaf = NULL;
}

static void group_record_body(struct cbench_state *s, void *arg)
{
	struct mod_case *m = (struct mod_case *)arg;
	struct tally_group *g = NULL;
	uint64_t n, i;
	unsigned k = (unsigned)cbench_thread_index(s) * 97u;
	while (cbench_batch(s, &n)) {
		g = m->leaf[cbench_thread_index(s)];
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++)
				tally_group_record(g, 0, lat_table[k++ & 1023u]);
	}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

static int flat_setup(struct cbench_state *s, void *arg)
{
	struct tally_hist_opts o;
	(void)s;
	(void)arg;
	lat_fill();
	memset(&o, 0, sizeof(o));
	o.precision = TALLY_GROUP_HIST_PRECISION_DEFAULT; /* the same buckets */
	return tally_hist_init(&flat, &o);
}

static void flat_teardown(struct cbench_state *s, void *arg)
{
	uint64_t want = cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s);
	struct tally_hist_snap sn = {0};
	int ok;
	(void)arg;
	ok = !tally_hist_snap_init(&sn, &flat) && !tally_hist_snapshot(&flat, &sn) &&
	     sn.count == want;
	tally_hist_snap_destroy(&sn);
	cbench_check(s, ok, "flat histogram count");
	tally_hist_destroy(&flat);
}

static void flat_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i;
	unsigned k = (unsigned)cbench_thread_index(s) * 97u;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++)
				tally_hist_record(&flat, lat_table[k++ & 1023u]);
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* A reference taken and dropped on the thread's own group. */
static void get_put_body(struct cbench_state *s, void *arg)
{
	struct mod_case *m = (struct mod_case *)arg;
	struct tally_group *g = NULL;
	uint64_t n, i;
	while (cbench_batch(s, &n)) {
		g = m->leaf[cbench_thread_index(s)];
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL / 2; j++) {
				tally_group_get(g);
				tally_group_put(g);
			}
	}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* Every pair balanced: each group's destroy releases it at once (its
 * count 0 after the kill); else the tree is leaked, not waited for. */
static void get_put_teardown(struct cbench_state *s, void *arg)
{
	struct mod_case *m = (struct mod_case *)arg;
	int i, bad = 0;
	urcu_memb_register_thread();
	for (i = 0; i < cbench_nthreads(s); i++) {
		bad |= tally_group_destroy(m->leaf[i]) != 0;
		bad |= __atomic_load_n(&m->leaf[i]->tally__ref.tally__count, __ATOMIC_RELAXED) != 0;
	}
	urcu_memb_unregister_thread();
	cbench_check(s, !bad, "references not balanced");
	if (!bad)
		tally_tree_destroy(m->tree);
	free(m->leaf);
	m->tree = NULL;
	m->leaf = NULL;
}

/* ---- the counter add, the baseline ------------------------------------------ */

static struct tally_counter counter_ref;
static int counter_default = 1; /* arg: the default batch; NULL: 2^24 */

static int counter_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	return tally_counter_init(&counter_ref, 0, arg ? 0 : (tally_sword)1 << 24);
}

static void counter_teardown(struct cbench_state *s, void *arg)
{
	uint64_t want = cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s);
	(void)arg;
	cbench_check(s, (uint64_t)tally_counter_sum(&counter_ref) == want, "counter sum");
	tally_counter_destroy(&counter_ref);
}

static void counter_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++)
				tally_counter_add(&counter_ref, 1);
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* ---- flush cost ------------------------------------------------------------ */

/* Make a tree of ITEMS items; its groups in *all (the root not among
 * them): nc children of the root, each with per grandchildren. */
static struct tally_tree *make_tree(unsigned nc, unsigned per, struct tally_group ***all,
				    size_t *nall)
{
	struct tally_tree *t = tally_tree_create(ITEMS);
	struct tally_group *root;
	size_t k = 0;
	unsigned i, j;
	*all = NULL;
	if (!t)
		return NULL;
	root = tally_tree_root(t);
	*all = (struct tally_group **)calloc((size_t)nc * (per + 1u), sizeof(**all));
	if (!*all) {
		tally_tree_destroy(t);
		return NULL;
	}
	for (i = 0; i < nc; i++) {
		struct tally_group *c = tally_group_create(root);
		(*all)[k++] = c;
		for (j = 0; j < per; j++)
			(*all)[k++] = tally_group_create(c);
	}
	for (i = 0; i < k; i++)
		if (!(*all)[i]) {
			free(*all);
			*all = NULL;
			tally_tree_destroy(t);
			return NULL;
		}
	*nall = k;
	return t;
}

static tally_sword read_total(struct tally_group *g)
{
	tally_sword sum = 0;
	unsigned i;
	for (i = 0; i < ITEMS; i++)
		sum += tally_group_read(g, i);
	return sum;
}

/*
 * flush/updated_groups:K - a 1,011-group tree (root, 10 children, 100
 * grandchildren each); K groups spread over it get one update each, then a
 * forced root flush is timed.
 */
static void flush_updated(struct cbench_state *s, void *arg)
{
	struct tally_group **all, *root;
	struct tally_tree *t;
	size_t nall, k = (size_t)cbench_range(s, 0), stride, i;
	uint64_t n, it, updates = 0, ns = 0;
	(void)arg;
	cbench_pin(0);
	t = make_tree(10, 100, &all, &nall);
	if (!t) {
		cbench_skip(s, "tree");
		return;
	}
	root = tally_tree_root(t);
	stride = nall / k;
	while (cbench_batch(s, &n))
		for (it = 0; it < n; it++) {
			uint64_t t0;
			for (i = 0; i < k; i++)
				tally_group_mod(all[i * stride], (unsigned)i % ITEMS, 1);
			updates += k;
			t0 = cbench_now_ns();
			tally_group_flush_force(root);
			ns += cbench_now_ns() - t0;
		}
	cbench_add_time(s, ns);
	cbench_check(s, (uint64_t)read_total(root) == updates, "root total");
	cbench_counter(s, "groups", (double)nall + 1, 0);
	cbench_counter(s, "group_bytes", (double)tally_tree_group_bytes(t), 0);
	tally_tree_destroy(t);
	free(all);
}

/*
 * flush_subtree/size:S - a group with S - 1 children (S groups), beside a
 * sibling subtree of the same size; every group of both gets one update,
 * then a forced flush of the first subtree alone is timed.
 */
static void flush_subtree(struct cbench_state *s, void *arg)
{
	struct tally_group **all, *sub0;
	struct tally_tree *t;
	size_t nall, i;
	uint64_t n, it, updates = 0, ns = 0;
	(void)arg;
	cbench_pin(0);
	t = make_tree(2, (unsigned)cbench_range(s, 0) - 1u, &all, &nall);
	if (!t) {
		cbench_skip(s, "tree");
		return;
	}
	sub0 = all[0];
	while (cbench_batch(s, &n))
		for (it = 0; it < n; it++) {
			uint64_t t0;
			for (i = 0; i < nall; i++)
				tally_group_mod(all[i], (unsigned)i % ITEMS, 1);
			updates += nall / 2;
			t0 = cbench_now_ns();
			tally_group_flush_force(sub0);
			ns += cbench_now_ns() - t0;
		}
	cbench_add_time(s, ns);
	cbench_check(s, (uint64_t)read_total(sub0) == updates, "subtree total");
	tally_tree_destroy(t);
	free(all);
}

/* ---- reads ------------------------------------------------------------------ */

struct one_writer {
	struct tally_group *g;
	unsigned n;
};

static void group_writer(void *arg)
{
	struct one_writer *w = (struct one_writer *)arg;
	tally_group_mod(w->g, w->n++ % ITEMS, 1);
}

/* group_read: the O(1) hierarchical read; a writer (Arg 1) updates it. */
static void group_read(struct cbench_state *s, void *arg)
{
	struct tally_tree *t;
	struct one_writer w;
	struct cbench_writers *ws;
	uint64_t n, i;
	unsigned k = 0;
	(void)arg;
	cbench_pin(0);
	t = tally_tree_create(ITEMS);
	if (!t || !(w.g = tally_group_create(tally_tree_root(t)))) {
		tally_tree_destroy(t);
		cbench_skip(s, "tree");
		return;
	}
	w.n = 0;
	ws = cbench_writers_start((int)cbench_range(s, 0), group_writer, &w);
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++) {
				tally_sword v = tally_group_read(w.g, k++ % ITEMS);
				CBENCH_KEEP(v);
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
	cbench_writers_stop(ws);
	tally_tree_destroy(t);
}

/* xorshift64*: the writer's and the reader's picks. */
static uint32_t rng_next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return (uint32_t)((*x * 0x2545f4914f6cdd1dull) >> 32);
}

struct rf_writer {
	struct tally_group **all;
	size_t nall;
	uint64_t rng;
	uint64_t gap;
};

static void rf_write(void *arg)
{
	struct rf_writer *w = (struct rf_writer *)arg;
	uint32_t r = rng_next(&w->rng);
	tally_group_mod(w->all[r % w->nall], (r >> 16) % ITEMS, 1);
	if (w->gap) {
		uint64_t t0 = cbench_now_ns();
		while (cbench_now_ns() - t0 < w->gap)
			tally__cpu_relax();
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Percentile p (0..100) of v[0..n), sorted; 0 if empty. */
static double pct(const uint64_t *v, size_t n, double p)
{
	size_t i;
	if (!n)
		return 0;
	i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return (double)v[i < n ? i : n - 1];
}

#define LAT_CAP ((size_t)1 << 20)
#define FLUSH_LAT_CAP ((size_t)1 << 16)

/*
 * read_flush_5000 - the read path on a 5,000-group tree (root, 50
 * children, 99 grandchildren each) while a writer updates random groups: a
 * thresholded flush of a group's subtree and a read of its items, timed one
 * by one. Args: writers (0 or 1) and writer_gap_ns, the writer's other work
 * between two updates (0: updates flat out, ~10 M/s; 1000: ~1 M/s, a
 * producer that does something besides counting).
 *   /random  each read picks a random group and reads are paced 20 us
 *            apart (many readers of many cgroups, each reading every so
 *            often), with the 2 s periodic flusher on.
 *   /root    the worst case: the root, read in a tight loop, so nearly
 *            every flush finds thousands of updated groups.
 * Counters: latency percentiles of all reads in microseconds, how many
 * reads flushed, and the percentiles of those reads alone.
 */
static void read_flush_5000(struct cbench_state *s, void *arg)
{
	int root_only = arg != NULL;
	struct rf_writer w;
	struct tally_group **all, *root;
	struct tally_tree *t;
	struct cbench_writers *ws;
	uint64_t *lat, *flat, n, it, writes, rrng = 7;
	size_t nall, nlat = 0, nflat = 0;
	cbench_pin(0);
	t = make_tree(50, 99, &all, &nall);
	lat = (uint64_t *)malloc(LAT_CAP * sizeof(*lat));
	flat = (uint64_t *)malloc(FLUSH_LAT_CAP * sizeof(*flat));
	if (!t || !lat || !flat) {
		if (t) {
			tally_tree_destroy(t);
			free(all);
		}
		free(lat);
		free(flat);
		cbench_skip(s, "tree");
		return;
	}
	root = tally_tree_root(t);
	if (!root_only)
		tally_tree_start_flusher(t, 0);
	w.all = all;
	w.nall = nall;
	w.rng = 42;
	w.gap = (uint64_t)cbench_range(s, 1);
	ws = cbench_writers_start((int)cbench_range(s, 0), rf_write, &w);
	while (cbench_batch(s, &n))
		for (it = 0; it < n; it++) {
			/* the root or one of all[] */
			uint32_t r = rng_next(&rrng) % (uint32_t)(nall + 1);
			struct tally_group *g = root_only || !r ? root : all[r - 1];
			uint64_t t0 = cbench_now_ns(), t1;
			bool need = tally_group_needs_flush(g);
			unsigned i;
			tally_group_flush(g);
			for (i = 0; i < ITEMS; i++)
				cbench_use((uint64_t)tally_group_read(g, i));
			t1 = cbench_now_ns();
			if (nlat < LAT_CAP)
				lat[nlat++] = t1 - t0;
			if (need && nflat < FLUSH_LAT_CAP)
				flat[nflat++] = t1 - t0;
			if (!root_only)
				while (cbench_now_ns() - t1 < 20000)
					tally__cpu_relax();
		}
	writes = cbench_writers_stop(ws);
	tally_tree_stop_flusher(t);
	tally_group_flush_force(root);
	cbench_check(s, (uint64_t)read_total(root) == writes, "root total");
	cbench_items(s, (int64_t)cbench_iterations(s));
	qsort(lat, nlat, sizeof(*lat), cmp_u64);
	qsort(flat, nflat, sizeof(*flat), cmp_u64);
	cbench_counter(s, "groups", (double)nall + 1, 0);
	cbench_counter(s, "flushes", (double)nflat, 0);
	cbench_counter(s, "p50_us", pct(lat, nlat, 50) / 1e3, 0);
	cbench_counter(s, "p99_us", pct(lat, nlat, 99) / 1e3, 0);
	cbench_counter(s, "p99.9_us", pct(lat, nlat, 99.9) / 1e3, 0);
	cbench_counter(s, "p99.99_us", pct(lat, nlat, 99.99) / 1e3, 0);
	cbench_counter(s, "max_us", pct(lat, nlat, 100) / 1e3, 0);
	/* The reads that flushed, alone. */
	cbench_counter(s, "flush_p50_us", pct(flat, nflat, 50) / 1e3, 0);
	cbench_counter(s, "flush_p99_us", pct(flat, nflat, 99) / 1e3, 0);
	cbench_counter(s, "flush_max_us", pct(flat, nflat, 100) / 1e3, 0);
	tally_tree_destroy(t);
	free(all);
	free(lat);
	free(flat);
}

static struct cbench *sizes(struct cbench *b, const long *v, int n)
{
	int i;
	for (i = 0; i < n; i++)
		cbench_arg(b, v[i]);
	return cbench_manual_time(b);
}

static struct cbench *read_args(struct cbench *b)
{
	static const char *const names[2] = {"writers", "writer_gap_ns"};
	static const long a[3][2] = {{0, 0}, {1, 0}, {1, 1000}};
	int i;
	cbench_arg_names(b, 2, names);
	for (i = 0; i < 3; i++)
		cbench_args(b, 2, a[i]);
	return b;
}

CBENCH_INIT(register_rstat)
{
	static const long updated[] = {1, 10, 100, 1000};
	static const long subtree[] = {1, 10, 100, 1000, 5000};
	static int root_only = 1;
	depths(cbench_setup(cbench_register("group_mod/tally", mod_body, &mod_plain), mod_setup,
			    mod_teardown));
	depths(cbench_setup(cbench_register("group_mod_flushed/tally", mod_body, &mod_flushed),
			    mod_setup, mod_teardown));
	cbench_env_threads(cbench_setup(cbench_register("group_record/tally", group_record_body,
							&mod_plain),
					group_record_setup, group_record_teardown));
	cbench_env_threads(cbench_setup(cbench_register("hist_record/flat", flat_body, NULL),
					flat_setup, flat_teardown));
	cbench_arg(cbench_arg_name(cbench_env_threads(cbench_setup(
					   cbench_register("group_get_put/tally", get_put_body, &mod_plain),
					   mod_setup, get_put_teardown)),
				   "depth"),
		   1);
	pcpu_ref_register();
	cbench_env_threads(cbench_setup(cbench_register("counter_add/tally", counter_body, NULL),
					counter_setup, counter_teardown));
	cbench_env_threads(cbench_setup(cbench_register("counter_add/tally_default", counter_body,
							&counter_default),
					counter_setup, counter_teardown));
	sizes(cbench_arg_name(cbench_register("flush/tally", flush_updated, NULL),
			      "updated_groups"),
	      updated, 4);
	sizes(cbench_arg_name(cbench_register("flush_subtree/tally", flush_subtree, NULL), "size"),
	      subtree, 5);
	cbench_arg(cbench_arg(cbench_arg_name(cbench_register("group_read/tally", group_read, NULL),
					      "writers"),
			      0),
		   1);
	read_args(cbench_register("read_flush_5000/random", read_flush_5000, NULL));
	read_args(cbench_register("read_flush_5000/root", read_flush_5000, &root_only));
}
