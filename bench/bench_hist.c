/*
 * bench/bench_hist.c - tally_hist, compiled as C: record at 1, 2 and 4
 * threads (or TALLY_BENCH_THREADS) beside tally_counter_add in the same
 * binary, a shared-atomic histogram and a mutex histogram (the same
 * bucket math, one shared array), and the read side: a snapshot, and a
 * p99 from a snapshot, at p = 7 (the default) and p = 10 (HdrHistogram's
 * 3 significant digits) over 1 ns .. 1 h.
 *
 *   hist_record/counter_add       tally_counter_add(c, 1): the baseline
 *   hist_record/counter_add_value the same beside the record's value load:
 *                                 v = vals[k++ & mask], tally_counter_add(c,
 *                                 1), v kept (CBENCH_KEEP), as the peers'
 *                                 driver's baseline row does
 *   hist_record/tally             tally_hist_record(h, v)
 *   hist_record/tally_one_value   the same, one value (one bucket: no cache misses)
 *   hist_record/shared_atomic     buckets and sum in one shared array,
 *                                 relaxed atomic adds (lock xadd)
 *   hist_record/mutex             the same array under a pthread mutex
 *   hist_record/plain             the same bucket math, a plain array per
 *                                 thread (single writer, no atomics, no
 *                                 per-CPU words), bucket, sum and count
 *                                 each a plain add
 *   hist_record/floor             the same with a compiler barrier after
 *                                 each record (its three adds made to
 *                                 memory): the floor the record is held to
 *   hist_record/floor_counter_add the floor and a tally_counter_add per
 *                                 record: the least a per-CPU record costs
 *   hist_read/snapshot/p:N        one record, then tally_hist_snapshot of
 *                                 a filled histogram (100,000 records)
 *   hist_read/p99/p:N             tally_hist_quantile(snap, 0.99)
 *   hist_read/snapshot_p99/p:N    both: a record, a snapshot, its p99
 *   hist_read/copy_floor/p:N      a memcpy of one slot's bucket words (8
 *                                 bytes per bucket): what a snapshot of
 *                                 one written slot moves at least
 *
 * With -DTALLY_BENCH_HDR=<HdrHistogram_c sources>, bench_hist_hdr.c adds
 * HdrHistogram_c's record and percentile to the same binary.
 *
 * Values cycle through 1024 latencies drawn once from an exponential
 * distribution (mean 50 us), so records spread over ~1,000 buckets as a
 * server's do. Every record benchmark checks its totals to the last unit.
 */
#include "cbench.h"
#include "bench_hist.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <tally/counter.h>
#include <tally/hist.h>

#define UNROLL BENCH_HIST_UNROLL
#define NVALS BENCH_HIST_NVALS
#define vals bench_hist_vals

int64_t bench_hist_vals[BENCH_HIST_NVALS];
static uint64_t vals_sum;

static void make_vals(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned i;
	vals_sum = 0;
	for (i = 0; i < NVALS; i++) {
		double u;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		u = ((double)(x >> 11) + 0.5) / 9007199254740992.0;
		vals[i] = 1 + (int64_t)(-log(u) * 50000.0);
		vals_sum += (uint64_t)vals[i];
	}
}

static uint64_t records(const struct cbench_state *s)
{
	return cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s);
}

/* The sum every thread's records add up to (each cycles through vals). */
static uint64_t expected_sum_of(const struct cbench_state *s, uint64_t mask)
{
	uint64_t per = cbench_iterations(s) * UNROLL, sum = 0, all = 0;
	uint64_t i;
	for (i = 0; i <= mask; i++)
		all += (uint64_t)vals[i];
	sum = per / (mask + 1) * all;
	for (i = 0; i < per % (mask + 1); i++)
		sum += (uint64_t)vals[i];
	return sum * (uint64_t)cbench_nthreads(s);
}

static uint64_t expected_sum(const struct cbench_state *s)
{
	return expected_sum_of(s, NVALS - 1);
}

/* ---- the baseline: tally_counter_add -------------------------------------- */
static struct tally_counter ctr;

static int ctr_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	return tally_counter_init(&ctr, 0, 0);
}

static void ctr_teardown(struct cbench_state *s, void *arg)
{
	(void)arg;
	cbench_check(s, (uint64_t)tally_counter_sum(&ctr) == records(s), "counter not exact");
	tally_counter_destroy(&ctr);
}

static void ctr_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++)
				tally_counter_add(&ctr, 1);
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* The add beside hist_body()'s load of the value: what the record does
 * but the histogram. */
static void ctr_value_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i, k = 0;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++) {
				int64_t v = vals[k++ & (NVALS - 1)];
				tally_counter_add(&ctr, 1);
				CBENCH_KEEP(v);
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* ---- tally_hist_record ------------------------------------------------------ */
static struct tally_hist hist;

static int hist_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	return tally_hist_init(&hist, NULL);
}

static void hist_teardown(struct cbench_state *s, void *arg)
{
	struct tally_hist_snap snap;
	uint64_t mask = arg ? *(const uint64_t *)arg : NVALS - 1;
	if (tally_hist_snap_init(&snap, &hist) == 0) {
		tally_hist_snapshot(&hist, &snap);
		cbench_check(s, snap.count == records(s) && snap.sum == expected_sum_of(s, mask),
			     "hist not exact");
		tally_hist_snap_destroy(&snap);
	}
	cbench_counter(s, "bytes_per_cpu", (double)(TALLY__HIST_BUCKETS_OFF + 8u * (size_t)hist.tally__l.nr), 0);
	tally_hist_destroy(&hist);
}

static void hist_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i, k = 0;
	/* arg: the values cycle through the first (mask + 1) of vals */
	uint64_t mask = arg ? *(const uint64_t *)arg : NVALS - 1;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++)
				tally_hist_record(&hist, vals[k++ & mask]);
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* ---- shared baselines: one array, the same bucket math ---------------------- */
struct shared_hist {
	struct tally__hist_layout l;
	uint64_t *counts; /* [nr], then the sum */
	pthread_mutex_t lock;
	int locked;
};

static struct shared_hist sh_atomic = {{0}, NULL, PTHREAD_MUTEX_INITIALIZER, 0};
static struct shared_hist sh_mutex = {{0}, NULL, PTHREAD_MUTEX_INITIALIZER, 1};

static int sh_setup(struct cbench_state *s, void *arg)
{
	struct shared_hist *h = (struct shared_hist *)arg;
	(void)s;
	if (tally__hist_opts_layout(NULL, &h->l))
		return -1;
	h->counts = (uint64_t *)calloc((size_t)h->l.nr + 1u, sizeof(uint64_t));
	return h->counts ? 0 : -1;
}

static void sh_teardown(struct cbench_state *s, void *arg)
{
	struct shared_hist *h = (struct shared_hist *)arg;
	uint64_t count = 0;
	unsigned j;
	for (j = 0; j < h->l.nr; j++)
		count += h->counts[j];
	cbench_check(s, count == records(s) && h->counts[h->l.nr] == expected_sum(s),
		     "not exact");
	free(h->counts);
	h->counts = NULL;
}

static void sh_body(struct cbench_state *s, void *arg)
{
	struct shared_hist *h = (struct shared_hist *)arg;
	uint64_t n, i, k = 0;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++) {
				int64_t v = vals[k++ & (NVALS - 1)];
				unsigned b = tally__hist_pos(&h->l, (uint64_t)v);
				if (h->locked) {
					pthread_mutex_lock(&h->lock);
					h->counts[b]++;
					h->counts[h->l.nr] += (uint64_t)v;
					pthread_mutex_unlock(&h->lock);
				} else {
					__atomic_fetch_add(&h->counts[b], 1, __ATOMIC_RELAXED);
					__atomic_fetch_add(&h->counts[h->l.nr], (uint64_t)v,
							   __ATOMIC_RELAXED);
				}
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* The floor under any histogram that keeps a sum and a count: one writer
 * per array, plain adds (what a single-threaded histogram does, and less
 * than HdrHistogram's record, which also tracks min and max). arg
 * PLAIN_FLOOR (hist_record/floor): a compiler barrier after each record,
 * so that each record's three adds are made to memory, as a record that
 * others read must (without it the compiler keeps the sum and count in
 * registers); PLAIN_FLOOR_ADD (hist_record/floor_counter_add): the same
 * and a tally_counter_add(c, 1) per record, the least any per-CPU record
 * adds to the floor (its section's arm, CPU lookup and slot address). */
enum { PLAIN, PLAIN_FLOOR, PLAIN_FLOOR_ADD };

static void plain_body(struct cbench_state *s, void *arg)
{
	struct tally__hist_layout l;
	uint64_t *counts, n, i, k = 0, count = 0;
	unsigned j;
	int what = *(const int *)arg, barrier = what != PLAIN;
	if (tally__hist_opts_layout(NULL, &l) ||
	    !(counts = (uint64_t *)calloc((size_t)l.nr + 2u, sizeof(uint64_t)))) {
		cbench_skip(s, "init");
		return;
	}
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int u = 0; u < UNROLL; u++) {
				int64_t v = vals[k++ & (NVALS - 1)];
				counts[tally__hist_pos(&l, (uint64_t)v)]++;
				counts[l.nr] += (uint64_t)v;
				counts[l.nr + 1]++;
				if (what == PLAIN_FLOOR_ADD)
					tally_counter_add(&ctr, 1);
				if (barrier)
					cbench_clobber();
			}
	for (j = 0; j < l.nr; j++)
		count += counts[j];
	cbench_check(s,
		     count == k && counts[l.nr + 1] == k &&
			     counts[l.nr] * (uint64_t)cbench_nthreads(s) == expected_sum(s),
		     "plain not exact");
	free(counts);
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* ---- the read side ------------------------------------------------------------ */
/* What any snapshot into counts[] moves at least: one slot's words (8 bytes
 * per bucket) read and the counts (8 bytes per bucket) written. A memcpy
 * of the bytes of a histogram's bucket words into a snapshot's counts. */
static void read_floor_body(struct cbench_state *s, void *arg)
{
	long p = cbench_range(s, 0);
	struct tally_hist_opts o = {0, 0, (unsigned)p, NULL, 0};
	struct tally__hist_layout l;
	uint64_t *src, *dst, n, i;
	(void)arg;
	if (tally__hist_opts_layout(&o, &l) ||
	    !(src = (uint64_t *)calloc(2 * (size_t)l.nr, sizeof(uint64_t)))) {
		cbench_skip(s, "init");
		while (cbench_batch(s, &n))
			;
		return;
	}
	dst = src + l.nr;
	for (i = 0; i < l.nr; i++)
		src[i] = i;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			memcpy(dst, src, (size_t)l.nr * sizeof(uint64_t));
			cbench_clobber();
		}
	cbench_counter(s, "buckets", (double)l.nr, 0);
	cbench_items(s, (int64_t)cbench_iterations(s));
	free(src);
}

/* arg: READ_SNAPSHOT, READ_P99 (a quantile of one snapshot) or READ_BOTH
 * (a snapshot, then its p99: what a reader of a live histogram pays). The
 * snapshot cases record one value before each snapshot, so that every cut
 * finds the histogram changed since the last one (its slot's words
 * rewritten): a snapshot of an idle histogram is not what is measured. */
enum { READ_SNAPSHOT, READ_P99, READ_BOTH };

static void read_body(struct cbench_state *s, void *arg)
{
	long p = cbench_range(s, 0);
	int what = *(const int *)arg;
	struct tally_hist_opts o = {0, 0, (unsigned)p, NULL, 0};
	struct tally_hist h;
	struct tally_hist_snap snap;
	uint64_t n, i, extra = 0;
	double q = 0;
	if (tally_hist_init(&h, &o) || tally_hist_snap_init(&snap, &h)) {
		cbench_skip(s, "init");
		while (cbench_batch(s, &n))
			;
		return;
	}
	for (i = 0; i < BENCH_HIST_READ_N; i++)
		tally_hist_record(&h, bench_hist_read_value(i));
	tally_hist_snapshot(&h, &snap);
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			if (what != READ_P99) {
				tally_hist_record(&h, bench_hist_read_value(extra++));
				tally_hist_snapshot(&h, &snap);
			}
			if (what != READ_SNAPSHOT) {
				q = tally_hist_quantile(&snap, 0.99);
				CBENCH_KEEP(q);
			}
		}
	cbench_check(s, snap.count == BENCH_HIST_READ_N + extra, "snapshot not exact");
	cbench_counter(s, "buckets", (double)snap.nr_buckets, 0);
	if (what != READ_SNAPSHOT)
		cbench_counter(s, "p99", q, 0);
	cbench_items(s, (int64_t)cbench_iterations(s));
	tally_hist_snap_destroy(&snap);
	tally_hist_destroy(&h);
}

CBENCH_INIT(register_hist)
{
	make_vals();
	cbench_env_threads(cbench_setup(cbench_register("hist_record/counter_add", ctr_body, NULL),
					ctr_setup, ctr_teardown));
	cbench_env_threads(cbench_setup(cbench_register("hist_record/counter_add_value",
							ctr_value_body, NULL),
					ctr_setup, ctr_teardown));
	static uint64_t one = 0;
	cbench_env_threads(cbench_setup(cbench_register("hist_record/tally", hist_body, NULL),
					hist_setup, hist_teardown));
	cbench_env_threads(cbench_setup(cbench_register("hist_record/tally_one_value", hist_body,
							&one),
					hist_setup, hist_teardown));
	cbench_env_threads(cbench_setup(
		cbench_register("hist_record/shared_atomic", sh_body, &sh_atomic), sh_setup,
		sh_teardown));
	cbench_env_threads(cbench_setup(cbench_register("hist_record/mutex", sh_body, &sh_mutex),
					sh_setup, sh_teardown));
	static const int plains[] = {PLAIN, PLAIN_FLOOR, PLAIN_FLOOR_ADD};
	cbench_env_threads(cbench_register("hist_record/plain", plain_body, (void *)&plains[0]));
	cbench_env_threads(cbench_register("hist_record/floor", plain_body, (void *)&plains[1]));
	cbench_env_threads(cbench_setup(cbench_register("hist_record/floor_counter_add", plain_body,
							(void *)&plains[2]),
					ctr_setup, ctr_teardown));
	static const int reads[] = {READ_SNAPSHOT, READ_P99, READ_BOTH};
	static const char *const read_names[] = {"hist_read/snapshot", "hist_read/p99",
						 "hist_read/snapshot_p99"};
	cbench_arg(cbench_arg(cbench_arg_name(cbench_register("hist_read/copy_floor", read_floor_body,
							       NULL),
					      "p"),
			      7),
		   10);
	for (unsigned r = 0; r < 3; r++)
		cbench_arg(cbench_arg(cbench_arg_name(cbench_register(read_names[r], read_body,
								       (void *)&reads[r]),
						      "p"),
				      7),
			   10);
}
