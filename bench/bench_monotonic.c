/*
 * bench/bench_monotonic.c - 32-bit wraparound, compiled as C: the cost of
 * monotonic vs clamped reads and of the deltas taken from them, and what
 * each reader sees when a counter is driven through 2^31 and 2^32.
 *
 * Compiled twice, into bench_monotonic_w32 (TALLY_WORD_BITS=32) and
 * bench_monotonic_w64 (TALLY_WORD_BITS=64); names end in /w32 or /w64.
 *
 * wrap_drive: a tally_vec item grows by STEP (2^26) per iteration, 72
 * iterations: reaching 2^31 at iteration 32 and 2^32 at 64. After each
 * step one sampler takes the delta of the clamped read (tally_vec_read,
 * node_page_state()) and another of the monotonic read
 * (tally_vec_read_monotonic). Counters reported: the true step, each
 * reader's delta at the step that reached 2^31 and at the one that
 * reached 2^32, its largest delta and how many of its deltas were wrong.
 * With 32-bit words the clamped reader sees one spurious 2^31 + step
 * delta at 2^31 and then zeros until the value wraps; the monotonic reader
 * is exact every time. With 64-bit words both are.
 */
#include "cbench.h"

#include <string.h>

#include <tally/vec.h>

#define STR2(x) #x
#define STR(x) STR2(x)
#define W "/w" STR(TALLY_WORD_BITS)

#define ITEMS 16u
#define UNROLL 8

struct mono_case {
	int monotonic, delta;
};

static const struct mono_case cases[4] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};

struct mono_writer {
	struct tally_vec *v;
	unsigned item;
};

static void mono_write(void *arg)
{
	struct mono_writer *w = (struct mono_writer *)arg;
	tally_vec_mod(w->v, w->item++ % ITEMS, 1);
}

/* Reads of 16 items in turn; writers (Arg 0 or 1) mod beside the reader. */
static void mono_read(struct cbench_state *s, void *arg)
{
	const struct mono_case *c = (const struct mono_case *)arg;
	struct tally_vec v;
	struct mono_writer w = {&v, 0};
	struct tally_sample smp[ITEMS];
	struct cbench_writers *ws;
	tally_uword seen = 0;
	uint64_t n, i;
	unsigned item = 0;
	cbench_pin(0);
	if (tally_vec_init(&v, ITEMS, 0) != 0) {
		cbench_skip(s, "init");
		return;
	}
	memset(smp, 0, sizeof(smp));
	ws = cbench_writers_start((int)cbench_range(s, 0), mono_write, &w);
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++) {
				unsigned it = item++ % ITEMS;
				tally_uword x = c->monotonic ? tally_vec_read_monotonic(&v, it)
							     : tally_vec_read(&v, it);
				if (c->delta)
					seen += tally_sample_advance(&smp[it], x);
				else
					CBENCH_KEEP(x);
			}
	CBENCH_KEEP(seen);
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
	cbench_writers_stop(ws);
	tally_vec_destroy(&v);
}

#define STEP ((tally_sword)1 << 26)
#define DRIVE_STEPS 72 /* 2^31 at 32, 2^32 at 64 */

static double dmax(double a, double b)
{
	return a > b ? a : b;
}

static void wrap_drive(struct cbench_state *s, void *arg)
{
	struct tally_vec v;
	struct tally_sample clamped, mono;
	double clamped_max = 0, mono_max = 0, clamped_wrong = 0, mono_wrong = 0;
	double clamped_at31 = -1, mono_at31 = -1, clamped_at32 = -1, mono_at32 = -1;
	uint64_t exact = 0, n, i; /* exact: the true value, in 64 bits */
	(void)arg;
	/* A threshold below the step: every mod folds into the global. */
	if (tally_vec_init(&v, 1, 1) != 0) {
		cbench_skip(s, "init");
		return;
	}
	clamped.last = tally_vec_read(&v, 0);
	mono.last = tally_vec_read_monotonic(&v, 0);
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			tally_uword dc, dm;
			tally_vec_mod(&v, 0, STEP);
			exact += (uint64_t)STEP;
			dc = tally_sample_advance(&clamped, tally_vec_read(&v, 0));
			dm = tally_sample_advance(&mono, tally_vec_read_monotonic(&v, 0));
			clamped_max = dmax(clamped_max, (double)dc);
			mono_max = dmax(mono_max, (double)dm);
			clamped_wrong += dc != (tally_uword)STEP;
			mono_wrong += dm != (tally_uword)STEP;
			/* The step that reaches 2^31 (signed overflow at 32 bits)
			 * and the one that reaches 2^32 (the unsigned wrap). */
			if (exact == (uint64_t)1 << 31) {
				clamped_at31 = (double)dc;
				mono_at31 = (double)dm;
			}
			if (exact == (uint64_t)1 << 32) {
				clamped_at32 = (double)dc;
				mono_at32 = (double)dm;
			}
		}
	tally_vec_destroy(&v);
	cbench_counter(s, "step", (double)STEP, 0);
	cbench_counter(s, "clamped_delta_at_2^31", clamped_at31, 0);
	cbench_counter(s, "clamped_delta_at_2^32", clamped_at32, 0);
	cbench_counter(s, "clamped_max_delta", clamped_max, 0);
	cbench_counter(s, "clamped_wrong_deltas", clamped_wrong, 0);
	cbench_counter(s, "monotonic_delta_at_2^31", mono_at31, 0);
	cbench_counter(s, "monotonic_delta_at_2^32", mono_at32, 0);
	cbench_counter(s, "monotonic_max_delta", mono_max, 0);
	cbench_counter(s, "monotonic_wrong_deltas", mono_wrong, 0);
	/* The monotonic reader must be exact at any width; the run must have
	 * reached both points (at least DRIVE_STEPS iterations). */
	cbench_check(s, mono_wrong == 0 && mono_at31 >= 0 && mono_at32 >= 0,
		     "monotonic reader was wrong, or the drive stopped short");
}

static struct cbench *writers_arg(struct cbench *b)
{
	return cbench_arg(cbench_arg(cbench_arg_name(b, "writers"), 0), 1);
}

CBENCH_INIT(register_monotonic)
{
	writers_arg(cbench_register("mono_read/clamped" W, mono_read, (void *)&cases[0]));
	writers_arg(cbench_register("mono_read/monotonic" W, mono_read, (void *)&cases[1]));
	writers_arg(cbench_register("mono_delta/clamped" W, mono_read, (void *)&cases[2]));
	writers_arg(cbench_register("mono_delta/monotonic" W, mono_read, (void *)&cases[3]));
	cbench_fixed_iterations(cbench_register("wrap_drive" W, wrap_drive, NULL), DRIVE_STEPS);
}
