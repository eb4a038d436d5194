/*
 * cost_seqlock: tally_cost_read and tally_cost_last with a writer inside
 * the read, forced through cost.h's test hook (TALLY__COST_READ_HOOK,
 * defined here before the include) instead of waited for:
 *   - a fold between tally_cost_read's anon and file loads: that try reads
 *     the old anon and the new file; the sequence re-check must see the
 *     fold, and the retry returns the new pair;
 *   - likewise a note (the other writer), one that halves both counts;
 *   - a fold between tally_cost_last's anon and file loads: the retry
 *     returns the new inputs of both sides;
 *   - folds and notes between reads (the hook idle): each read returns the
 *     last write's values at its first try.
 * Every read counts the hook's calls (one per window per try), so a read
 * that did not retry, or retried for nothing, fails. Without the re-check
 * the hooked reads fail every run; stress_cost.c's threads find it only
 * now and then. Expected values follow the arithmetic at the top of
 * cost.h. Plain C, one thread: runs under ASan, TSan, -m32 and with
 * 32-bit words.
 */
#define _GNU_SOURCE
#include "harness.h"

struct tally_cost;
static void read_hook(const struct tally_cost *c);
#define TALLY__COST_READ_HOOK(c) read_hook(c)

#include <string.h>
#include <tally/cost.h>

#define U(x) ((tally_uword)(x))
#define NOTHING_DECAYS TALLY_UWORD_MAX

enum { IDLE, FOLD, NOTE };

/* What the hook does when armed (once: it disarms itself). */
static struct {
	struct tally_cost *c; /* the accumulator the reads read */
	int armed;            /* IDLE, FOLD (in, lru) or NOTE (side, nr_io, lru) */
	struct tally_cost_input in[2];
	tally_uword lru, nr_io;
	int side;
	int calls; /* hook calls, armed or not */
	int ran;   /* writes the hook made */
} hk;

static void read_hook(const struct tally_cost *c)
{
	int what = hk.armed;
	hk.calls++;
	if (what == IDLE)
		return;
	hk.armed = IDLE;
	CHECK(c == hk.c, "the hook ran on another accumulator");
	if (what == FOLD)
		tally_cost_fold(hk.c, hk.in, hk.lru, NULL);
	else
		tally_cost_note(hk.c, hk.side, hk.nr_io, 0, hk.lru);
	hk.ran++;
}

/* tally_cost_read must return (a, f) after `tries` tries. */
static void expect_read(const char *what, tally_uword a, tally_uword f, int tries)
{
	tally_uword out[2] = {U(-1), U(-1)};
	int calls = hk.calls;
	tally_cost_read(hk.c, out);
	CHECK(out[0] == a && out[1] == f, "%s: read (%llu, %llu), want (%llu, %llu)", what,
	      (unsigned long long)out[0], (unsigned long long)out[1], (unsigned long long)a,
	      (unsigned long long)f);
	CHECK(hk.calls - calls == tries, "%s: %d tries, want %d", what, hk.calls - calls, tries);
}

/* tally_cost_last must return want after `tries` tries (two windows each). */
static void expect_last(const char *what, const struct tally_cost_input want[2], int tries)
{
	struct tally_cost_input out[2];
	int calls = hk.calls, i;
	tally_cost_last(hk.c, out);
	for (i = 0; i < 2; i++)
		CHECK(out[i].rotated == want[i].rotated && out[i].io == want[i].io,
		      "%s: side %d last (%llu, %llu), want (%llu, %llu)", what, i,
		      (unsigned long long)out[i].rotated, (unsigned long long)out[i].io,
		      (unsigned long long)want[i].rotated, (unsigned long long)want[i].io);
	CHECK(hk.calls - calls == 2 * tries, "%s: %d windows, want %d", what, hk.calls - calls,
	      2 * tries);
}

int main(void)
{
	static struct tally_cost c;
	/* Each side: {rotated, io}. */
	const struct tally_cost_input in1[2] = {{3, 1}, {5, 2}};
	const struct tally_cost_input in2[2] = {{10, 1}, {6, 3}};
	const struct tally_cost_input in3[2] = {{12, 2}, {6, 4}};
	tally_uword a, f;

	tally_cost_init(&c);
	hk.c = &c;

	/* Plain interleavings: a write, then a read that needs one try. */
	expect_read("init", 0, 0, 1);
	tally_cost_fold(&c, in1, NOTHING_DECAYS, NULL);
	a = U(1 * 32 + 3);
	f = U(2 * 32 + 5);
	expect_read("fold in1", a, f, 1);
	expect_last("fold in1", in1, 1);
	tally_cost_note(&c, TALLY_ANON, 0, 1, NOTHING_DECAYS);
	a += 1;
	expect_read("note", a, f, 1);

	/* A fold between the count loads. in2 adds (7, 33): (43, 102), whose
	 * sum passes 400 / 4, so both halve once, to (21, 51). The first try
	 * reads anon 36 (old) and file 51 (new); only the re-check rejects
	 * that pair. */
	hk.armed = FOLD;
	memcpy(hk.in, in2, sizeof(hk.in));
	hk.lru = 400;
	a = (a + (10 - 3)) / 2;
	f = (f + (3 - 2) * 32 + (6 - 5)) / 2;
	expect_read("fold in2 inside the read", a, f, 2);
	CHECK_EQ(hk.ran, 1);

	/* A note between the count loads: file + 32 = 83; 21 + 83 passes
	 * 400 / 4: both halve once, to (10, 41). The torn try: (21, 41). */
	hk.armed = NOTE;
	hk.side = TALLY_FILE;
	hk.nr_io = 1;
	a = a / 2;
	f = (f + 32) / 2;
	expect_read("note inside the read", a, f, 2);
	CHECK_EQ(hk.ran, 2);
	expect_last("after the note", in2, 1); /* a note leaves last_* alone */

	/* A fold between tally_cost_last's anon and file loads: the torn try
	 * returns in2's anon inputs with in3's file inputs. */
	hk.armed = FOLD;
	memcpy(hk.in, in3, sizeof(hk.in));
	hk.lru = NOTHING_DECAYS;
	a += (2 - 1) * 32 + (12 - 10);
	f += (4 - 3) * 32 + (6 - 6);
	expect_last("fold in3 inside last", in3, 2);
	CHECK_EQ(hk.ran, 3);
	expect_read("after fold in3", a, f, 1);

	CHECK_EQ(hk.armed, IDLE);
	return harness_exit("cost_seqlock");
}
