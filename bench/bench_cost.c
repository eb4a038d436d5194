/*
 * bench/bench_cost.c - tally_cost, compiled as C: the read-side fold, the
 * classic producer-side note, the lock-free read, and
 * tally_scan_fraction().
 *
 * cost_fold: each thread, per iteration, counts one event in a shared
 * tally_vec (the monotonic statistics the fold reads) and then folds the
 * shared accumulator from that vec's raw values, reading them under the
 * cost lock (the documented pattern for several folders). At 2 threads the
 * folders contend on the cost lock, as reclaimers of one lruvec do.
 * cost_note: the classic lru_note_cost() step on one accumulator.
 * cost_read: the seqcount read, alone and beside a folding thread.
 * scan_fraction: get_scan_count()'s SCAN_FRACT arithmetic on varying costs.
 */
#include "cbench.h"

#include <tally/cost.h>
#include <tally/vec.h>

enum { ROT_ANON, ROT_FILE, IO_ANON, IO_FILE, ITEMS };
#define LRU_SIZE ((tally_uword)1 << 20)

static struct tally_cost g_cost;
static struct tally_vec g_events;

static void fold_from(struct tally_cost *c, struct tally_vec *v, tally_uword out[2])
{
	struct tally_cost_input in[2];
	tally_cost_lock(c);
	in[TALLY_ANON].rotated = tally_vec_read_monotonic(v, ROT_ANON);
	in[TALLY_ANON].io = tally_vec_read_monotonic(v, IO_ANON);
	in[TALLY_FILE].rotated = tally_vec_read_monotonic(v, ROT_FILE);
	in[TALLY_FILE].io = tally_vec_read_monotonic(v, IO_FILE);
	tally_cost_fold_locked(c, in, LRU_SIZE, out);
	tally_cost_unlock(c);
}

static int fold_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	tally_cost_init(&g_cost);
	/* threshold 1: each event reaches the global the fold reads */
	return tally_vec_init(&g_events, ITEMS, 1);
}

static void fold_teardown(struct cbench_state *s, void *arg)
{
	tally_uword out[2], after[2];
	(void)arg;
	/* Quiescent now: one more fold sees every event; the stored counts
	 * are what that fold returned. */
	fold_from(&g_cost, &g_events, out);
	tally_cost_read(&g_cost, after);
	cbench_check(s, after[0] == out[0] && after[1] == out[1] && out[0] + out[1] <= LRU_SIZE / 4,
		     "cost fold result");
	tally_vec_destroy(&g_events);
}

static void fold_body(struct cbench_state *s, void *arg)
{
	tally_uword out[2] = {0, 0};
	uint64_t n, i;
	unsigned k = 0;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			tally_vec_mod(&g_events, k++ % ITEMS, 2);
			fold_from(&g_cost, &g_events, out);
		}
	CBENCH_KEEP(out[0]);
	cbench_items(s, (int64_t)cbench_iterations(s));
}

static int note_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	tally_cost_init(&g_cost);
	return 0;
}

static void note_teardown(struct cbench_state *s, void *arg)
{
	tally_uword c[2];
	(void)arg;
	tally_cost_read(&g_cost, c);
	cbench_check(s, c[0] + c[1] <= LRU_SIZE / 4, "cost note bound");
}

static void note_body(struct cbench_state *s, void *arg)
{
	unsigned k = (unsigned)cbench_thread_index(s);
	uint64_t n, i;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			tally_cost_note(&g_cost, (int)(k & 1), k & 3, 1, LRU_SIZE);
			k++;
		}
	cbench_items(s, (int64_t)cbench_iterations(s));
}

struct fold_writer {
	struct tally_cost *c;
	struct tally_vec *ev;
	unsigned n;
};

static void fold_write(void *arg)
{
	struct fold_writer *w = (struct fold_writer *)arg;
	tally_uword out[2];
	tally_vec_mod(w->ev, w->n++ % ITEMS, 5);
	fold_from(w->c, w->ev, out);
}

/* The reader is the benchmark thread; a writer (Arg 1) counts and folds. */
static void read_body(struct cbench_state *s, void *arg)
{
	struct tally_cost c;
	struct tally_vec ev;
	struct fold_writer w = {&c, &ev, 0};
	struct cbench_writers *ws;
	tally_uword v[2];
	uint64_t n, i;
	(void)arg;
	cbench_pin(0);
	tally_cost_init(&c);
	if (tally_vec_init(&ev, ITEMS, 1) != 0) {
		cbench_skip(s, "init");
		return;
	}
	ws = cbench_writers_start((int)cbench_range(s, 0), fold_write, &w);
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			tally_cost_read(&c, v);
			cbench_clobber();
		}
	cbench_items(s, (int64_t)cbench_iterations(s));
	cbench_writers_stop(ws);
	tally_vec_destroy(&ev);
}

static void scan_body(struct cbench_state *s, void *arg)
{
	uint64_t f[2], d, n, i;
	uint32_t x = 12345;
	(void)arg;
	/* The golden case first: costs (100, 300), swappiness 100. */
	tally_scan_fraction(100, 300, 100, f, &d);
	cbench_check(s, f[0] == 239 && f[1] == 171 && d == 410, "scan fraction golden");
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			x = x * 1664525u + 1013904223u;
			tally_scan_fraction((tally_uword)(x >> 8), (tally_uword)(x & 0xfffff), x % 201,
					    f, &d);
			CBENCH_KEEP(f[0]);
			CBENCH_KEEP(f[1]);
			CBENCH_KEEP(d);
		}
	cbench_items(s, (int64_t)cbench_iterations(s));
}

static struct cbench *one_two(struct cbench *b)
{
	return cbench_real_time(cbench_threads(cbench_threads(b, 1), 2));
}

CBENCH_INIT(register_cost)
{
	one_two(cbench_setup(cbench_register("cost_fold/tally", fold_body, NULL), fold_setup,
			     fold_teardown));
	one_two(cbench_setup(cbench_register("cost_note/tally", note_body, NULL), note_setup,
			     note_teardown));
	cbench_arg(cbench_arg(cbench_arg_name(cbench_register("cost_read/tally", read_body, NULL),
					      "writers"),
			      0),
		   1);
	cbench_register("scan_fraction/tally", scan_body, NULL);
}
