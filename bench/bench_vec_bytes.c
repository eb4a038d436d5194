/*
 * bench/bench_vec_bytes.c - byte counters: every update adds a byte-sized
 * delta (uniform in 16..16384, from a precomputed table, mean ~8200) to
 * one counter, at 1 and 2 threads, side by side in one binary:
 *
 *   vec_bytes/tally_item_threshold  a tally_vec item with a per-item
 *                                   threshold of 100x the mean delta
 *                                   (819200): a fold every ~100 updates
 *   vec_bytes/tally_exact           a tally_vec item that never folds
 *                                   (TALLY_VEC_EXACT): reads are O(CPUs)
 *   vec_bytes/tally_default         the trap: vmstat's default threshold
 *                                   (at most 125, in bytes): every
 *                                   update folds (a CAS and an atomic add
 *                                   on the shared global)
 *   vec_bytes/mutex_per_thread      memcached's pattern: each thread's
 *                                   stats in its own struct under its own
 *                                   mutex (aggregated under the locks)
 *   vec_bytes/shared_atomic         one relaxed atomic add on a shared word
 *
 * And a memcached "get" as counted by its stats: cmd_get + 1 with get_hits
 * + 1 or get_misses + 1 (from the table) as one update, 1 and 2 threads:
 *
 *   vec_gets/tally_multi            tally_vec_mod_multi on a TALLY_VEC_MULTI
 *                                   vec (snapshots see it whole)
 *   vec_gets/tally_two_incs         two tally_vec_inc (snapshots may see
 *                                   one without the other)
 *   vec_gets/mutex_per_thread       both fields under the thread's mutex
 *
 * Compare within one run (the ratios); run the repetitions interleaved:
 *   bench_vec_bytes --benchmark_repetitions=5 \
 *     --benchmark_enable_random_interleaving=true
 * Every case checks its total to the last byte.
 */
#include "cbench.h"

#include <pthread.h>
#include <string.h>
#include <tally/vec.h>

#define TABLE 4096 /* deltas, a power of two */
#define UNROLL 8   /* updates per inner loop */
#define MAX_THREADS 64
#define MEAN_DELTA 8200 /* (16 + 16384) / 2 */

static tally_sword table[TABLE];
static uint64_t expected; /* bytes added in the current run */

static void fill_table(void)
{
	uint64_t x = 0x243f6a8885a308d3ull;
	for (int i = 0; i < TABLE; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		table[i] = 16 + (tally_sword)(x % 16369);
	}
}

/* Each thread walks the table from its own offset, and accounts each
 * batch before the next cbench_batch() call (the last one is the stop
 * barrier, after which the teardown checks the total). */
#define FOR_EACH_DELTA(s, d, body)                                                  \
	do {                                                                        \
		uint64_t n_, i_;                                                    \
		unsigned k_ = (unsigned)cbench_thread_index(s) * 977u;              \
		while (cbench_batch(s, &n_)) {                                      \
			uint64_t sum_ = 0;                                          \
			for (i_ = 0; i_ < n_; i_++)                                 \
				for (int j_ = 0; j_ < UNROLL; j_++) {               \
					tally_sword d = table[k_++ & (TABLE - 1)];  \
					sum_ += (uint64_t)d;                        \
					body;                                       \
				}                                                   \
			__atomic_add_fetch(&expected, sum_, __ATOMIC_RELAXED);      \
		}                                                                   \
		cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));          \
	} while (0)

/* ---- tally_vec --------------------------------------------------------- */
enum { ITEM_OTHER, ITEM_BYTES, NR_ITEMS };

struct vec_case {
	int threshold; /* the byte item's: 0 for the vec's default */
	struct tally_vec v;
};

static struct vec_case vec_item_threshold = {100 * MEAN_DELTA, {0}};
static struct vec_case vec_exact = {TALLY_VEC_EXACT, {0}};
static struct vec_case vec_default = {0, {0}};

static int vec_setup(struct cbench_state *s, void *arg)
{
	struct vec_case *c = (struct vec_case *)arg;
	int thr[NR_ITEMS] = {0, c->threshold};
	struct tally_vec_opts o = {NR_ITEMS, 0, thr, 0, NULL, NULL};
	(void)s;
	expected = 0;
	return tally_vec_init_opts(&c->v, &o);
}

static void vec_teardown(struct cbench_state *s, void *arg)
{
	struct vec_case *c = (struct vec_case *)arg;
	cbench_check(s, tally_vec_sum(&c->v, ITEM_BYTES) == (tally_uword)expected,
		     "tally_vec_sum is not exact");
	cbench_counter(s, "threshold", (double)tally_vec_item_threshold(&c->v, ITEM_BYTES), 0);
	tally_vec_destroy(&c->v);
}

static void vec_body(struct cbench_state *s, void *arg)
{
	struct tally_vec *v = &((struct vec_case *)arg)->v;
	FOR_EACH_DELTA(s, d, tally_vec_mod(v, ITEM_BYTES, d));
}

/* ---- memcached: per-thread stats under per-thread mutexes --------------- */
struct thread_stats {
	pthread_mutex_t lock;
	uint64_t bytes_read;
	uint64_t other;
} __attribute__((aligned(128)));

static struct thread_stats stats[MAX_THREADS];

static int mutex_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	expected = 0;
	for (int i = 0; i < MAX_THREADS; i++) {
		if (pthread_mutex_init(&stats[i].lock, NULL))
			return 1;
		stats[i].bytes_read = stats[i].other = 0;
	}
	return 0;
}

static void mutex_teardown(struct cbench_state *s, void *arg)
{
	uint64_t total = 0;
	(void)arg;
	/* Aggregation as memcached's threadlocal_stats_aggregate(). */
	for (int i = 0; i < MAX_THREADS; i++) {
		pthread_mutex_lock(&stats[i].lock);
		total += stats[i].bytes_read;
		pthread_mutex_unlock(&stats[i].lock);
		pthread_mutex_destroy(&stats[i].lock);
	}
	cbench_check(s, total == expected, "per-thread total is not exact");
}

static void mutex_body(struct cbench_state *s, void *arg)
{
	struct thread_stats *t = &stats[cbench_thread_index(s) % MAX_THREADS];
	(void)arg;
	FOR_EACH_DELTA(s, d, {
		pthread_mutex_lock(&t->lock);
		t->bytes_read += (uint64_t)d;
		pthread_mutex_unlock(&t->lock);
	});
}

/* ---- one shared atomic ------------------------------------------------- */
static uint64_t shared __attribute__((aligned(128)));

static int atomic_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	expected = 0;
	shared = 0;
	return 0;
}

static void atomic_teardown(struct cbench_state *s, void *arg)
{
	(void)arg;
	cbench_check(s, __atomic_load_n(&shared, __ATOMIC_RELAXED) == expected,
		     "shared atomic is not exact");
}

static void atomic_body(struct cbench_state *s, void *arg)
{
	(void)arg;
	FOR_EACH_DELTA(s, d, __atomic_fetch_add(&shared, (uint64_t)d, __ATOMIC_RELAXED));
}

/* ---- gets: two counters as one update ----------------------------------- */
enum { CMD_GET, GET_HITS, GET_MISSES, NR_GETS };

static struct tally_vec gets_vec;
static uint64_t gets_expected;

static int gets_setup(struct cbench_state *s, void *arg)
{
	struct tally_vec_opts o = {NR_GETS, 0, NULL, arg ? TALLY_VEC_MULTI : 0, NULL, NULL};
	(void)s;
	gets_expected = 0;
	return tally_vec_init_opts(&gets_vec, &o);
}

static void gets_teardown(struct cbench_state *s, void *arg)
{
	tally_uword v[NR_GETS];
	(void)arg;
	cbench_check(s, tally_vec_snapshot(&gets_vec, v, NR_GETS) == 0 &&
				v[CMD_GET] == (tally_uword)gets_expected &&
				v[CMD_GET] == v[GET_HITS] + v[GET_MISSES],
		     "get counts are not exact");
	tally_vec_destroy(&gets_vec);
}

#define FOR_EACH_GET(s, hit, ...)                                                   \
	do {                                                                        \
		uint64_t n_, i_;                                                    \
		unsigned k_ = (unsigned)cbench_thread_index(s) * 977u;              \
		while (cbench_batch(s, &n_)) {                                      \
			for (i_ = 0; i_ < n_; i_++)                                 \
				for (int j_ = 0; j_ < UNROLL; j_++) {               \
					unsigned hit = (table[k_++ & (TABLE - 1)] & 3) \
							       ? GET_HITS             \
							       : GET_MISSES;          \
					__VA_ARGS__;                                \
				}                                                   \
			__atomic_add_fetch(&gets_expected, n_ * UNROLL,             \
					   __ATOMIC_RELAXED);                       \
		}                                                                   \
		cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));          \
	} while (0)

static void gets_multi_body(struct cbench_state *s, void *arg)
{
	(void)arg;
	FOR_EACH_GET(s, hit, {
		struct tally_vec_delta d[2] = {{CMD_GET, 1}, {hit, 1}};
		tally_vec_mod_multi(&gets_vec, d, 2);
	});
}

static void gets_incs_body(struct cbench_state *s, void *arg)
{
	(void)arg;
	FOR_EACH_GET(s, hit, {
		tally_vec_inc(&gets_vec, CMD_GET);
		tally_vec_inc(&gets_vec, hit);
	});
}

struct get_stats {
	pthread_mutex_t lock;
	uint64_t v[NR_GETS];
} __attribute__((aligned(128)));

static struct get_stats gstats[MAX_THREADS];

static int gets_mutex_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	gets_expected = 0;
	memset(gstats, 0, sizeof(gstats));
	for (int i = 0; i < MAX_THREADS; i++)
		if (pthread_mutex_init(&gstats[i].lock, NULL))
			return 1;
	return 0;
}

static void gets_mutex_teardown(struct cbench_state *s, void *arg)
{
	uint64_t v[NR_GETS] = {0, 0, 0};
	(void)arg;
	for (int i = 0; i < MAX_THREADS; i++) {
		pthread_mutex_lock(&gstats[i].lock);
		for (int k = 0; k < NR_GETS; k++)
			v[k] += gstats[i].v[k];
		pthread_mutex_unlock(&gstats[i].lock);
		pthread_mutex_destroy(&gstats[i].lock);
	}
	cbench_check(s, v[CMD_GET] == gets_expected && v[CMD_GET] == v[GET_HITS] + v[GET_MISSES],
		     "get counts are not exact");
}

static void gets_mutex_body(struct cbench_state *s, void *arg)
{
	struct get_stats *t = &gstats[cbench_thread_index(s) % MAX_THREADS];
	(void)arg;
	FOR_EACH_GET(s, hit, {
		pthread_mutex_lock(&t->lock);
		t->v[CMD_GET]++;
		t->v[hit]++;
		pthread_mutex_unlock(&t->lock);
	});
}

static void reg(const char *name, cbench_fn fn, void *arg, cbench_setup_fn setup,
		cbench_fn teardown)
{
	cbench_real_time(cbench_thread_range(cbench_setup(cbench_register(name, fn, arg),
							  setup, teardown),
					     1, 2));
}

CBENCH_INIT(register_vec_bytes)
{
	fill_table();
	reg("vec_bytes/tally_item_threshold", vec_body, &vec_item_threshold, vec_setup,
	    vec_teardown);
	reg("vec_bytes/tally_exact", vec_body, &vec_exact, vec_setup, vec_teardown);
	reg("vec_bytes/tally_default", vec_body, &vec_default, vec_setup, vec_teardown);
	reg("vec_bytes/mutex_per_thread", mutex_body, NULL, mutex_setup, mutex_teardown);
	reg("vec_bytes/shared_atomic", atomic_body, NULL, atomic_setup, atomic_teardown);
	reg("vec_gets/tally_multi", gets_multi_body, &gets_vec, gets_setup, gets_teardown);
	reg("vec_gets/tally_two_incs", gets_incs_body, NULL, gets_setup, gets_teardown);
	reg("vec_gets/mutex_per_thread", gets_mutex_body, NULL, gets_mutex_setup,
	    gets_mutex_teardown);
}
