/*
 * bench/bench_counter.c - tally_counter, compiled as C: add at 1, 2 and 4
 * threads (or TALLY_BENCH_THREADS), and the cost of the approximate read
 * and the exact sum, alone and beside a writer. The baselines it is
 * compared with are in bench_counter_base.cc (C++: std::atomic,
 * std::mutex), registered through the same cbench interface.
 *
 * This file is compiled twice into one binary: once as it is (the default
 * per-CPU path: rseq where available) and once with TALLY_PCPU_MODE=1 and
 * TALLY_BENCH_ATOMIC_TU (the relaxed atomic RMW on the CPU's slot), whose
 * benchmarks are named tally_pcpu_atomic. Each TU uses its own counters,
 * so the two paths never meet on one word. bench_counter256 is this file
 * alone, built with TALLY_CPU_SLOTS=256.
 *
 *   counter_add/tally           the default: tally_counter_init(c, 0, 0)
 *   counter_add/tally_flat      a flat counter at the default batch
 *                               (tally_counter_default_batch()): the
 *                               default below TALLY_COUNTER_TREE_SLOTS
 *                               slots, the flat add the tree is held to
 *                               in bench_counter256 (the file built for
 *                               256 CPU slots, where counter_add/tally is
 *                               a tree)
 *   counter_add/tally_batch32   batch 32 (the kernel's percpu_counter_batch
 *                               on a small machine): a fold every 32 adds
 *   counter_add/tally_nofold    the largest batch: never folds; the bare
 *                               per-CPU add plus the fold check
 *   counter_add/tally_tree32    a counter tree, batch 32 (the default on
 *                               64+ CPU slots): against tally_batch32, the
 *                               tree's carry up a shared line against the
 *                               flat fold, at the same carry rate
 *   counter_add/tally_tree32_own  each thread adds to a tree of its own,
 *                               the trees made one after the other: their
 *                               nodes share lines (the node arena packs
 *                               them), so each thread's carries meet the
 *                               other's on a line; against tally_tree32,
 *                               where both carry into one node
 *   pcpu_add/tally              tally__pcpu_add alone, no fold check
 *   rseq_add/bare               a bare rseq per-CPU add (pcpu_ref.h): the
 *                               floor the rseq path is held to
 *
 * Every add benchmark checks the total it produced to the last unit.
 */
#include "cbench.h"

#include <tally/counter.h>

#ifndef TALLY_BENCH_ATOMIC_TU
#  include "pcpu_ref.h"
#endif

#ifdef TALLY_BENCH_ATOMIC_TU
#  define TALLY_NAME "tally_pcpu_atomic"
#else
#  define TALLY_NAME "tally"
#endif

/* Adds per inner loop: the loop's own cost stays out of the ratios. */
#define UNROLL 8

struct add_case {
	tally_sword batch; /* 0: the default */
	struct tally_counter c;
	int tree; /* tally_counter_init_tree */
};

static struct add_case add_default = {0, {0}, 0};
#ifndef TALLY_BENCH_ATOMIC_TU
static struct add_case add_flat = {-2, {0}, 0}; /* -2: tally_counter_default_batch() */
static struct add_case add_batch32 = {32, {0}, 0};
static struct add_case add_nofold = {-1, {0}, 0}; /* -1: tally_counter_max_batch() */
static struct add_case add_tree32 = {32, {0}, 1};
#endif

static uint64_t expected_total(const struct cbench_state *s)
{
	return cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s);
}

static int add_setup(struct cbench_state *s, void *arg)
{
	struct add_case *a = (struct add_case *)arg;
	(void)s;
	if (a->tree)
		return tally_counter_init_tree(&a->c, 0, a->batch);
	return tally_counter_init(&a->c, 0,
				  a->batch == -1   ? tally_counter_max_batch()
				  : a->batch == -2 ? tally_counter_default_batch()
						   : a->batch);
}

static void add_teardown(struct cbench_state *s, void *arg)
{
	struct add_case *a = (struct add_case *)arg;
	cbench_check(s, (uint64_t)tally_counter_sum(&a->c) == expected_total(s),
		     "tally_counter_sum is not exact");
	cbench_counter(s, "batch", (double)tally_counter_batch(&a->c), 0);
	cbench_counter(s, "bound", (double)tally_counter_error_bound(&a->c), 0);
	tally_counter_destroy(&a->c);
}

#ifndef TALLY_BENCH_ATOMIC_TU
/* tally_tree32_own: a tree per thread. */
#  define OWN_MAX 64
static struct tally_counter own[OWN_MAX];

static int own_setup(struct cbench_state *s, void *arg)
{
	int i, err = 0;
	(void)arg;
	if (cbench_nthreads(s) > OWN_MAX)
		return -1;
	for (i = 0; i < cbench_nthreads(s) && !err; i++)
		err = tally_counter_init_tree(&own[i], 0, 32);
	return err;
}

static void own_teardown(struct cbench_state *s, void *arg)
{
	int i;
	(void)arg;
	for (i = 0; i < cbench_nthreads(s); i++) {
		cbench_check(s, (uint64_t)tally_counter_sum(&own[i]) * (uint64_t)cbench_nthreads(s) ==
					expected_total(s),
			     "tally_counter_sum is not exact");
		tally_counter_destroy(&own[i]);
	}
}

static void own_body(struct cbench_state *s, void *arg)
{
	struct tally_counter *c = &own[cbench_thread_index(s)];
	uint64_t n, i;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			_Pragma("GCC unroll 8") for (int j = 0; j < UNROLL; j++)
				tally_counter_add(c, 1);
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}
#endif

static void add_body(struct cbench_state *s, void *arg)
{
	struct tally_counter *c = &((struct add_case *)arg)->c;
	uint64_t n, i;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			_Pragma("GCC unroll 8") for (int j = 0; j < UNROLL; j++)
				tally_counter_add(c, 1);
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

#ifdef TALLY_BENCH_ATOMIC_TU
/* The per-CPU add alone (tally__pcpu_add: no fold), the primitive under
 * every tally update: the rseq critical section or the atomic RMW. */
static struct tally__pcpu raw;

static int raw_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	return tally__pcpu_alloc(&raw, sizeof(tally_uword));
}

static void raw_teardown(struct cbench_state *s, void *arg)
{
	(void)arg;
	cbench_check(s, (uint64_t)tally__pcpu_sum(&raw, 0) == expected_total(s),
		     "per-CPU sum is not exact");
	tally__pcpu_free(&raw);
}

static void raw_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i;
	unsigned slot;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++) {
				tally_uword v = tally__pcpu_add(&raw, 0, 1, &slot);
				CBENCH_KEEP(v);
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}
#endif

/* Reads: the reader is the benchmark thread; writers (Arg 0 or 1) add 1 in
 * a loop beside it. arg: 0 for read(), 1 for sum(). */
static void writer_add(void *c)
{
	tally_counter_add((struct tally_counter *)c, 1);
}

static void read_body(struct cbench_state *s, void *arg)
{
	struct tally_counter c;
	struct cbench_writers *w;
	int exact = arg != NULL;
	uint64_t n, i, adds;
	if (tally_counter_init(&c, 0, 0) != 0) {
		cbench_skip(s, "init");
		return;
	}
	w = cbench_writers_start((int)cbench_range(s, 0), writer_add, &c);
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++) {
				tally_sword v = exact ? tally_counter_sum(&c) : tally_counter_read(&c);
				CBENCH_KEEP(v);
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
	adds = cbench_writers_stop(w);
	cbench_check(s, (uint64_t)tally_counter_sum(&c) == adds, "tally_counter_sum is not exact");
	tally_counter_destroy(&c);
}

static struct cbench *writers_arg(struct cbench *b)
{
	return cbench_arg(cbench_arg(cbench_arg_name(b, "writers"), 0), 1);
}

CBENCH_INIT(register_counter)
{
	static int exact = 1;
	cbench_env_threads(cbench_setup(cbench_register("counter_add/" TALLY_NAME, add_body,
							&add_default),
					add_setup, add_teardown));
#ifndef TALLY_BENCH_ATOMIC_TU
	cbench_env_threads(cbench_setup(cbench_register("counter_add/tally_flat", add_body,
							&add_flat),
					add_setup, add_teardown));
	cbench_env_threads(cbench_setup(cbench_register("counter_add/tally_batch32", add_body,
							&add_batch32),
					add_setup, add_teardown));
	cbench_env_threads(cbench_setup(cbench_register("counter_add/tally_nofold", add_body,
							&add_nofold),
					add_setup, add_teardown));
	cbench_env_threads(cbench_setup(cbench_register("counter_add/tally_tree32", add_body,
							&add_tree32),
					add_setup, add_teardown));
	cbench_env_threads(cbench_setup(cbench_register("counter_add/tally_tree32_own", own_body,
							NULL),
					own_setup, own_teardown));
#endif
#ifndef TALLY_BENCH_ATOMIC_TU
	pcpu_ref_register(); /* pcpu_add/tally, rseq_add/bare */
#else
	cbench_env_threads(cbench_setup(cbench_register("pcpu_add/" TALLY_NAME, raw_body, NULL),
					raw_setup, raw_teardown));
#endif
	writers_arg(cbench_register("counter_read/" TALLY_NAME, read_body, NULL));
	writers_arg(cbench_register("counter_sum/" TALLY_NAME, read_body, &exact));
}
