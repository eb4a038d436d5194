/*
 * bench/bench_vec.c - tally_vec, compiled as C: mod and inc at 1, 2 and 4
 * threads (one hot item, and spread over 16 items), and the reader costs:
 * the clamped and monotonic O(1) reads, the exact read (every CPU) and a
 * full fold. Every update benchmark checks the exact totals at the end.
 *
 *   vec_mod/tally            tally_vec_mod(v, 0, 1)
 *   vec_inc/tally            tally_vec_inc(v, 0)
 *   vec_mod_spread16/tally   tally_vec_mod over 16 items in turn
 *   vec_{mod,inc}/tally_nofold  the same as vec_{mod,inc}/tally with the
 *                            largest threshold: no fold (the per-item
 *                            global is never touched), the update's own
 *                            cost beside the bare per-CPU add
 *   vec_read/{clamped,monotonic,exact}, vec_fold/16items: the reader is
 *                            the benchmark thread, writers (0 or 1) mod
 *                            beside it, spread over the items
 *   vec_{mod,inc}/no_carry_fence  vec_{mod,inc}/tally without the carry
 *                            check and its fence (the update before the
 *                            O(1) readers' bound needed them): the
 *                            baseline of their cost, in the same run
 *   pcpu_add/tally           the bare per-CPU add, the reference the
 *                            updates' scaling is held to (pcpu_ref.h)
 */
#include "cbench.h"

#include <tally/vec.h>

#include "pcpu_ref.h"

#define ITEMS 16u
#define UNROLL 8

enum op { OP_MOD, OP_INC, OP_SPREAD, OP_MOD_NOCARRY, OP_INC_NOCARRY };
enum reader { RD_READ, RD_MONOTONIC, RD_EXACT, RD_FOLD };

struct update_case {
	enum op op;
	int threshold; /* 0: the default */
};

static struct tally_vec g_vec;
static const struct update_case ops[7] = {
	{OP_MOD, 0}, {OP_INC, 0}, {OP_SPREAD, 0},
	{OP_MOD, TALLY_VEC_THRESHOLD_MAX}, {OP_INC, TALLY_VEC_THRESHOLD_MAX},
	{OP_MOD_NOCARRY, 0}, {OP_INC_NOCARRY, 0}};

/* The update without the carry check and its fence (what tally_vec_mod
 * and tally_vec_inc were before it): the baseline of its cost. */
static inline int update_nocarry(struct tally_vec *v, unsigned item, tally_sword d,
				 enum tally__fold_kind kind)
{
	unsigned s;
	if (tally__bad(!v || item >= v->tally__nr_items))
		return -EINVAL;
	tally__pcpu_add(&v->tally__pcpu, (size_t)item * v->tally__item_stride, (tally_uword)d, &s);
	tally__vec_fold_slot(v, s, item, kind);
	return 0;
}
static const enum reader readers[4] = {RD_READ, RD_MONOTONIC, RD_EXACT, RD_FOLD};

static int update_setup(struct cbench_state *s, void *arg)
{
	const struct update_case *c = (const struct update_case *)arg;
	int r = tally_vec_init(&g_vec, ITEMS, c->threshold);
	if (!r)
		cbench_counter(s, "threshold", (double)tally_vec_threshold(&g_vec), 0);
	return r;
}

static void update_teardown(struct cbench_state *s, void *arg)
{
	uint64_t want = cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s);
	tally_sword total = 0;
	unsigned i;
	(void)arg;
	for (i = 0; i < ITEMS; i++)
		total += tally_vec_read_exact(&g_vec, i);
	cbench_check(s, (tally_uword)total == (tally_uword)want, "vec total");
	tally_vec_fold(&g_vec);
	cbench_check(s, tally__to_signed(tally_vec_read_monotonic(&g_vec, 0) -
					 TALLY_MONOTONIC_BIAS) == tally_vec_read_exact(&g_vec, 0),
		     "read after fold");
	tally_vec_destroy(&g_vec);
}

static void update_body(struct cbench_state *s, void *arg)
{
	enum op o = ((const struct update_case *)arg)->op;
	uint64_t n, i;
	unsigned item = 0;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++) {
				if (o == OP_MOD)
					tally_vec_mod(&g_vec, 0, 1);
				else if (o == OP_INC)
					tally_vec_inc(&g_vec, 0);
				else if (o == OP_MOD_NOCARRY)
					update_nocarry(&g_vec, 0, 1, TALLY__FOLD_PAST);
				else if (o == OP_INC_NOCARRY)
					update_nocarry(&g_vec, 0, 1, TALLY__FOLD_UP);
				else
					tally_vec_mod(&g_vec, item++ % ITEMS, 1);
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

struct vec_writer {
	struct tally_vec *v;
	unsigned item;
};

static void vec_write(void *arg)
{
	struct vec_writer *w = (struct vec_writer *)arg;
	tally_vec_mod(w->v, w->item++ % ITEMS, 1);
}

static void read_body(struct cbench_state *s, void *arg)
{
	enum reader r = *(const enum reader *)arg;
	struct tally_vec v;
	struct vec_writer w = {&v, 0};
	struct cbench_writers *ws;
	uint64_t n, i, mods;
	unsigned item = 0;
	tally_sword total = 0;
	cbench_pin(0);
	if (tally_vec_init(&v, ITEMS, 0) != 0) {
		cbench_skip(s, "init");
		return;
	}
	ws = cbench_writers_start((int)cbench_range(s, 0), vec_write, &w);
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++) {
				unsigned it = item++ % ITEMS;
				if (r == RD_READ) {
					tally_uword x = tally_vec_read(&v, it);
					CBENCH_KEEP(x);
				} else if (r == RD_MONOTONIC) {
					tally_uword x = tally_vec_read_monotonic(&v, it);
					CBENCH_KEEP(x);
				} else if (r == RD_EXACT) {
					tally_sword x = tally_vec_read_exact(&v, it);
					CBENCH_KEEP(x);
				} else {
					tally_vec_fold(&v);
				}
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
	mods = cbench_writers_stop(ws);
	for (item = 0; item < ITEMS; item++)
		total += tally_vec_read_exact(&v, item);
	cbench_check(s, (tally_uword)total == (tally_uword)mods, "vec total");
	tally_vec_destroy(&v);
}

static struct cbench *writers_arg(struct cbench *b)
{
	return cbench_arg(cbench_arg(cbench_arg_name(b, "writers"), 0), 1);
}

static void update(const char *name, const struct update_case *o)
{
	cbench_env_threads(
		cbench_setup(cbench_register(name, update_body, (void *)o), update_setup,
			     update_teardown));
}

CBENCH_INIT(register_vec)
{
	update("vec_mod/tally", &ops[0]);
	update("vec_inc/tally", &ops[1]);
	update("vec_mod_spread16/tally", &ops[2]);
	update("vec_mod/tally_nofold", &ops[3]);
	update("vec_inc/tally_nofold", &ops[4]);
	update("vec_mod/no_carry_fence", &ops[5]);
	update("vec_inc/no_carry_fence", &ops[6]);
	pcpu_ref_register();
	writers_arg(cbench_register("vec_read/clamped", read_body, (void *)&readers[0]));
	writers_arg(cbench_register("vec_read/monotonic", read_body, (void *)&readers[1]));
	writers_arg(cbench_register("vec_read/exact", read_body, (void *)&readers[2]));
	writers_arg(cbench_register("vec_fold/16items", read_body, (void *)&readers[3]));
}
