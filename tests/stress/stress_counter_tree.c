/*
 * Stress test of the counter tree (tally_counter_init_tree; tally/counter/
 * tree.h). Writers add random signed deltas (mostly small, some of many
 * batches) while a reader reads, compares and folds beside them. Built
 * as every stress program is, and once more with TALLY_CPU_SLOTS=256 and
 * TALLY_PCPU_MODE=3 (stress_counter_tree256): 256 threads act as 256 CPU
 * slots, so the 256-slot tree (two node levels) runs exactly, under
 * ThreadSanitizer too.
 *
 * Once the writers stop, to the last unit:
 *   - sum == initial + every delta;
 *   - every node and the top equal what the carry rule gives from the
 *     final per-CPU words alone (node = sum over its children of their
 *     batch-aligned parts, level by level), so read is that exact value;
 *   - 0 <= sum - read < tally_counter_error_bound() (22,304 at 256 slots,
 *     batch 32); after fold_all, read == sum.
 * Then unit adds, 2^18 of them spread over the slots: the top is written
 * once per b * 8^levels units (its value says how often), at most
 * 2^18 / (b * 8^levels) times; printed as writes per million adds.
 * A counter made with tally_counter_init(c, 0, 0) is a tree exactly when
 * there are TALLY_COUNTER_TREE_SLOTS slots or more.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <tally/counter.h>

#define U(x) ((tally_uword)(x))
#define MAXT 256
#define CHUNK 64

static struct tally_counter tree, dflt;
static tally_sword initial;
static int stop, nthreads;
static long long cap; /* adds per writer at most */

struct writer {
	pthread_t tid;
	unsigned id;
	long long total;
	long long ops;
	long long units; /* phase 2: unit adds to make */
};

static void *writer_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
	struct harness_rng rng = {0x9e37u + (uint64_t)w->id * 104729u};
#if TALLY_PCPU_MODE == 3
	tally__thread_slot_set(w->id);
#endif
	long long ops = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && ops < cap) {
		for (int i = 0; i < CHUNK; i++) {
			uint64_t r = harness_next(&rng);
			long long d = (r >> 8) % 64 == 0 ? harness_range(&rng, -20000, 20000)
							 : harness_range(&rng, -40, 40);
			tally_counter_add(&tree, (tally_sword)d);
			tally_counter_add(&dflt, (tally_sword)d);
			w->total += d;
		}
		ops += CHUNK;
		__atomic_store_n(&w->ops, ops, __ATOMIC_RELAXED); /* main polls it */
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		tally_sword r = tally_counter_read(&tree);
		(void)tally_counter_compare(&tree, r);
		(void)tally_counter_read_monotonic(&tree);
		(void)tally_counter_sum(&tree);
		tally_counter_fold_all(&dflt);
	}
	return NULL;
}

static void *unit_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
#if TALLY_PCPU_MODE == 3
	tally__thread_slot_set(w->id);
#endif
	for (long long i = 0; i < w->units; i++)
		tally_counter_add(&tree, 1);
	return NULL;
}

/* The tree's state as the carry rule gives it from the final per-CPU
 * words: every node, then the top; checked against the counter's. Returns
 * the expected top (with the initial value). */
static tally_uword check_nodes(struct tally_counter *c)
{
	const struct tally__counter_tree *t = &c->tally__tree;
	unsigned nr = c->tally__pcpu.nr, l, i, n;
	static tally_uword lvl[2][65536];
	tally_uword mask = ~c->tally__low, top = c->tally__initial;
	/* level 0: the CPU words; the shared slot's goes to node 0 */
	n = nr;
	for (i = 0; i < nr; i++)
		lvl[0][i] = tally__load(tally__counter_w(c, i));
	for (l = 0; l < t->levels; l++) {
		unsigned m = (n + 7u) >> 3;
		tally_uword *in = lvl[l & 1], *out = lvl[(l + 1) & 1];
		for (i = 0; i < m; i++)
			out[i] = 0;
		for (i = 0; i < n; i++)
			out[i % m] += in[i] & mask; /* interleaved */
		if (l == 0)
			out[0] += tally__load(tally__counter_w(c, nr)) & mask;
		for (i = 0; i < m; i++)
			CHECK_EQ(tally__load(tally__tree_node(t, l, i)), out[i]);
		mask <<= TALLY__TREE_SHIFT;
		n = m;
	}
	for (i = 0; i < n; i++)
		top += lvl[t->levels & 1][i] & mask;
	CHECK_EQ(tally__load(c->tally__top), top);
	return top;
}

int main(void)
{
	struct writer w[MAXT];
	pthread_t rd;
	unsigned slots = tally_cpu_slots();
	long long expect = 0, units;
	double secs = harness_seconds();
	tally_sword bound, levels_unit;

	nthreads = TALLY_PCPU_MODE == 3 ? (int)(slots < MAXT ? slots : MAXT) : 6;
	cap = (long long)(1000000 / nthreads);
	initial = TALLY_SWORD_MAX - 1000000; /* crosses the signed wrap */
	CHECK_EQ(tally_counter_init_tree(&tree, initial, 0), 0);
	CHECK(tally_counter_is_tree(&tree), "init_tree made a flat counter");
	CHECK_EQ(tally_counter_batch(&tree), TALLY_COUNTER_TREE_BATCH);
	CHECK_EQ(tally_counter_init(&dflt, 0, 0), 0);
	CHECK_EQ(tally_counter_is_tree(&dflt), slots >= TALLY_COUNTER_TREE_SLOTS);
	bound = tally_counter_error_bound(&tree);
	if (slots == 256) {
		CHECK_EQ(tree.tally__tree.levels, 2u);
		CHECK_EQ(bound, 22304);
	}
	CHECK(bound > 0 && bound <= TALLY_SWORD_MAX / 2, "bound %lld", (long long)bound);

	memset(w, 0, sizeof(w));
	for (int i = 0; i < nthreads; i++) {
		w[i].id = (unsigned)i;
		if (pthread_create(&w[i].tid, NULL, writer_main, &w[i]))
			return fprintf(stderr, "pthread_create failed\n"), 1;
	}
	if (pthread_create(&rd, NULL, reader_main, NULL))
		return fprintf(stderr, "pthread_create failed\n"), 1;
	{
		double t0 = harness_now();
		int done = 0;
		while (!done && harness_now() - t0 < secs) {
			usleep(20000);
			done = 1;
			for (int i = 0; i < nthreads; i++)
				if (__atomic_load_n(&w[i].ops, __ATOMIC_RELAXED) < cap)
					done = 0;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		expect += w[i].total;
	}
	pthread_join(rd, NULL);

	/* Quiescent: exact sum, nodes as the rule gives them, the bound. */
	CHECK_EQ(tally_counter_sum_monotonic(&tree), U(U(initial) + U(expect)));
	CHECK_EQ(tally_counter_sum_monotonic(&dflt), U(expect));
	CHECK_EQ(U(tally_counter_read(&tree)), check_nodes(&tree));
	{
		tally_sword gap = tally__to_signed(U(tally_counter_sum(&tree)) -
						   U(tally_counter_read(&tree)));
		CHECK(gap >= 0 && gap < bound, "sum - read = %lld, bound %lld", (long long)gap,
		      (long long)bound);
		CHECK_EQ(tally_counter_compare(&tree, tally_counter_sum(&tree)), 0);
	}
	tally_counter_fold_all(&tree);
	CHECK_EQ(tally_counter_read(&tree), tally_counter_sum(&tree));
	tally_counter_fold_all(&dflt);
	CHECK_EQ(tally_counter_read(&dflt), tally_counter_sum(&dflt));
	tally_counter_destroy(&tree);
	tally_counter_destroy(&dflt);

	/* Unit adds: how often the top is written. */
	CHECK_EQ(tally_counter_init_tree(&tree, 0, 0), 0);
	units = 1ll << 18;
	for (int i = 0; i < nthreads; i++) {
		w[i].units = units / nthreads + (i < units % nthreads);
		if (pthread_create(&w[i].tid, NULL, unit_main, &w[i]))
			return fprintf(stderr, "pthread_create failed\n"), 1;
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(w[i].tid, NULL);
	CHECK_EQ(tally_counter_sum_monotonic(&tree), U(units));
	CHECK_EQ(U(tally_counter_read(&tree)), check_nodes(&tree));
	levels_unit = tally_counter_batch(&tree) << (TALLY__TREE_SHIFT * tree.tally__tree.levels);
	{
		/* Unit adds carry one unit of each level at a time: the top
		 * moved by levels_unit per write. */
		tally_uword top = tally__load(tree.tally__top);
		long long writes = (long long)(top / U(levels_unit));
		CHECK_EQ(top % U(levels_unit), 0);
		CHECK(writes <= units / levels_unit, "%lld top writes for %lld adds", writes,
		      units);
		printf("stress_counter_tree: %u slots, %u levels, batch %lld, bound %lld: "
		       "%lld top-line writes for %lld unit adds (%.1f per million)\n",
		       slots, tree.tally__tree.levels, (long long)tally_counter_batch(&tree),
		       (long long)bound, writes, units, (double)writes * 1e6 / (double)units);
	}
	tally_counter_destroy(&tree);
	return harness_exit("stress_counter_tree");
}
