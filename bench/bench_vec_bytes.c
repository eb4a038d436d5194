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
	struct tally_vec_opts o = {NR_ITEMS, 0, thr, 0, NULL};
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
}
