/*
 * fuzz_model - a model-based fuzzer of tally's public API.
 *
 * Each input is a program: a sequence of calls on tally_counter, tally_vec,
 * tally_tree/tally_group, tally_cost, tally_inflight, tally_hist and the
 * monotonic helpers, made from one thread, with arguments chosen to hit the edges
 * (0, 1, -1, the word's wrap points, out-of-range items, batches and
 * thresholds, NULL for every pointer of every public call). A plain
 * sequential model written here (no code shared with the headers) says
 * what each call must return and what every reader must show: exact sums
 * (through sets and read-and-resets), exact vec values, group values after
 * a forced flush or a reset (since-reset and raw), local values, groups
 * created by name, found by name and destroyed by subtree, the
 * cost fold and note arithmetic, in-flight gauges and throttle statistics;
 * -EINVAL, 0, NULL or a no-op for bad input, and nothing changed by a
 * rejected call. Any difference aborts with the step and the values.
 *
 * Runs here (the build's test "fuzz_model" runs 1 and 2 below with a fixed
 * seed; "fuzz_model_replay" runs 3):
 *  1. libFuzzer with clang, in a scratch build folder:
 *       tests/fuzz/run.sh --out /tmp/tally-fuzz -- -runs=2000 -seed=1
 *  2. Long, on demand (a new corpus grows in <out>/corpus):
 *       tests/fuzz/run.sh --out /tmp/tally-fuzz -- -max_total_time=3600 -jobs=2
 *     and add to tests/fuzz/corpus/ only the inputs that reach an edge it
 *     does not (every flavour replays it, so keep it small):
 *       /tmp/tally-fuzz/fuzz_model -merge=1 -use_counters=0 \
 *           tests/fuzz/corpus /tmp/tally-fuzz/corpus
 *     With 32-bit words: TALLY_FUZZ_WORD_BITS=32 tests/fuzz/run.sh ...
 *     Reproduce a crash: /tmp/tally-fuzz/fuzz_model crash-<hash>
 *  3. Without libFuzzer (any compiler): build with
 *     -DTALLY_FUZZ_STANDALONE=1 and run
 *       fuzz_model_replay [file or folder ...]
 *     It runs each input, then TALLY_FUZZ_RUNS (default 2000) random inputs
 *     from TALLY_FUZZ_SEED (default 1). TALLY_FUZZ_VERBOSE=1 prints the
 *     calls as they run (also under libFuzzer).
 *
 * The flusher thread is started and stopped within one step (its period is
 * far longer), so every check runs with no other thread touching tally.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>
#include <tally/cost.h>
#include <tally/counter.h>
#include <tally/hist.h>
#include <tally/inflight.h>
#include <tally/monotonic.h>
#include <tally/rstat.h>
#include <tally/vec.h>

/*
 * Known findings: deviations from the documentation that this fuzzer found
 * and that are not fixed yet. Each is tolerated while its macro is 1, so
 * the suite stays green; whoever fixes one sets it to 0 here, and the
 * fuzzer then guards the fix.
 *  FINDING_COMPARE_WRAP: tally_counter_compare() decides from read() when
 *    |read - rhs| > the error bound, "which cannot flip it"; but when the
 *    value is within the error bound of the signed wrap point, read() and
 *    sum() can lie on either side of it, and the sign comes out wrong
 *    (value 2^63 - 6, read -2^63 + 12, bound 96: compare(0) = -1).
 *    Fixed (compare() now also keeps read's window off the wrap): 0.
 */
#ifndef FINDING_COMPARE_WRAP
#  define FINDING_COMPARE_WRAP 0
#endif
#define W TALLY_WORD_BITS
#define UW(x) ((tally_uword)(x))

/* ---- reporting ------------------------------------------------------------- */
static unsigned step;
static const char *op_name = "start";
static int verbose;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fuzz_model: step %u (%s): ", step, op_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

#define EXPECT(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond))                                                   \
			fail("expected " #cond ": " __VA_ARGS__);              \
	} while (0)

#define LL(x) ((long long)(x))
#define ULL(x) ((unsigned long long)(x))

/* Two's complement view of a word, without implementation-defined casts. */
static tally_sword sgn(tally_uword u)
{
	tally_sword s;
	memcpy(&s, &u, sizeof(s));
	return s;
}

static tally_uword clamp0(tally_uword u)
{
	return sgn(u) < 0 ? 0 : u;
}

/* ---- the input ------------------------------------------------------------- */
struct input {
	const uint8_t *p;
	size_t n;
};

static uint8_t u8(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint64_t bytes(struct input *in, unsigned k)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < k; i++)
		v |= (uint64_t)u8(in) << (8 * i);
	return v;
}

/* A word near an edge: small, small negative, around the signed and the
 * unsigned wrap points, a power of two, or any value. */
static tally_uword pick_word(struct input *in)
{
	uint8_t k = u8(in);
	tally_uword small = UW(u8(in) % 64);
	switch (k % 8) {
	case 0: return small;
	case 1: return UW(0u - small);
	case 2: return UW((tally_uword)TALLY_SWORD_MAX - small);
	case 3: return UW((tally_uword)TALLY_SWORD_MAX + 1u + small);
	case 4: return UW(TALLY_UWORD_MAX - small);
	case 5: return UW((tally_uword)1 << (u8(in) % W));
	case 6: return UW(bytes(in, W / 8));
	default: return UW(small % 4);
	}
}

static tally_sword pick_sword(struct input *in)
{
	return sgn(pick_word(in));
}

/* ---- tally_counter ---------------------------------------------------------- */
#define NR_COUNTERS 2
static struct {
	struct tally_counter c;
	int live;
	tally_uword value; /* initial + every add, modulo 2^W */
	tally_sword batch;
	int tree;   /* a counter tree (tally_counter_init_tree) */
	int folded; /* a tree after fold_all: read may pass sum, by < bound */
} ctr[NR_COUNTERS];

static tally_sword pick_counter_batch(struct input *in, int *bad)
{
	const tally_sword valid[] = {0, 1, 2, 3, 32, 1000, tally_counter_max_batch()};
	uint8_t k = u8(in);
	*bad = 0;
	if (k % 8 == 7) {
		*bad = 1;
		return (k & 8) ? -1 - (tally_sword)(u8(in) % 4) : tally_counter_max_batch() + 1;
	}
	return valid[k % 7];
}

static void counter_check(int i)
{
	struct tally_counter *c = &ctr[i].c;
	tally_sword sum = tally_counter_sum(c), bound = tally_counter_error_bound(c);
	tally_sword read = tally_counter_read(c);
	EXPECT(sum == sgn(ctr[i].value), "counter %d: sum %lld, model %lld", i, LL(sum),
	       LL(sgn(ctr[i].value)));
	EXPECT(tally_counter_sum_positive(c) == clamp0(ctr[i].value), "counter %d", i);
	EXPECT(tally_counter_read_positive(c) == clamp0(UW(read)), "counter %d", i);
	EXPECT(tally_counter_batch(c) == ctr[i].batch, "counter %d: batch %lld, model %lld", i,
	       LL(tally_counter_batch(c)), LL(ctr[i].batch));
	EXPECT(bound > 0 && bound < TALLY_SWORD_MAX, "counter %d", i);
	{
		/* |read - sum| < bound, in modular distance. */
		tally_sword d = sgn(UW(UW(read) - UW(sum)));
		EXPECT(d < bound && d > -bound, "counter %d: read %lld sum %lld bound %lld", i,
		       LL(read), LL(sum), LL(bound));
		/* A tree reads at most its sum until a fold_all. */
		EXPECT(!ctr[i].tree || ctr[i].folded || d <= 0,
		       "tree %d: read %lld above sum %lld", i, LL(read), LL(sum));
	}
}

static int sign3(tally_sword a, tally_sword b)
{
	return a > b ? 1 : a < b ? -1 : 0;
}

static void op_counter(struct input *in)
{
	uint8_t k = u8(in);
	int i = (k >> 4) % NR_COUNTERS, bad;
	struct tally_counter *c = &ctr[i].c;
	switch (k % 8) {
	case 0: { /* init (bad batches leave a live counter untouched) */
		tally_sword initial = pick_sword(in), batch = pick_counter_batch(in, &bad);
		op_name = "counter_init";
		if (bad) {
			EXPECT(tally_counter_init(c, initial, batch) == -EINVAL, "batch %lld",
			       LL(batch));
			break;
		}
		if (ctr[i].live)
			tally_counter_destroy(c);
		ctr[i].live = 0;
		if (k & 8) { /* the counter tree: its largest batch is smaller */
			int r = tally_counter_init_tree(c, initial, batch);
			op_name = "counter_init_tree";
			EXPECT(r == 0 || (r == -EINVAL && batch > 1000), "tree batch %lld: %d",
			       LL(batch), r);
			if (r)
				break;
			EXPECT(tally_counter_is_tree(c), "init_tree made a flat counter");
			ctr[i].live = 1;
			ctr[i].tree = 1;
			ctr[i].folded = 0;
			ctr[i].value = UW(initial);
			ctr[i].batch = tally_counter_batch(c);
			EXPECT(batch ? ctr[i].batch >= batch && ctr[i].batch / 2 < batch
				     : ctr[i].batch == TALLY_COUNTER_TREE_BATCH,
			       "tree: asked for batch %lld, got %lld", LL(batch), LL(ctr[i].batch));
			break;
		}
		EXPECT(tally_counter_init(c, initial, batch) == 0, "batch %lld", LL(batch));
		ctr[i].live = 1;
		ctr[i].tree = tally_counter_is_tree(c);
		ctr[i].folded = 0;
		ctr[i].value = UW(initial);
		/* The batch in force: the default, or the one asked for (a
		 * counter may round it up, to less than twice as much). */
		ctr[i].batch = tally_counter_batch(c);
		if (batch)
			EXPECT(ctr[i].batch >= batch && ctr[i].batch / 2 < batch,
			       "asked for batch %lld, got %lld", LL(batch), LL(ctr[i].batch));
		else if (!ctr[i].tree)
			EXPECT(ctr[i].batch == tally_counter_default_batch(), "default batch %lld",
			       LL(ctr[i].batch));
		break;
	}
	case 1:
		op_name = "counter_destroy";
		if (ctr[i].live)
			tally_counter_destroy(c);
		ctr[i].live = 0;
		break;
	case 3: { /* set, or sum_and_reset: one cut */
		tally_sword v = pick_sword(in);
		if (!ctr[i].live)
			break;
		if (u8(in) % 2) {
			op_name = "counter_set";
			EXPECT(tally_counter_set(c, v) == 0, "");
			ctr[i].value = UW(v);
		} else {
			tally_sword got;
			op_name = "counter_sum_and_reset";
			got = tally_counter_sum_and_reset(c);
			EXPECT(got == sgn(ctr[i].value), "counter %d: returned %lld, model %lld", i,
			       LL(got), LL(sgn(ctr[i].value)));
			ctr[i].value = 0;
		}
		counter_check(i);
		break;
	}
	case 2: { /* add */
		tally_sword d = pick_sword(in);
		unsigned reps = 1u + u8(in) % 8;
		op_name = "counter_add";
		if (!ctr[i].live)
			break;
		for (unsigned r = 0; r < reps; r++) {
			tally_counter_add(c, d);
			ctr[i].value = UW(ctr[i].value + UW(d));
		}
		break;
	}
	case 4:
		op_name = "counter_check";
		if (ctr[i].live)
			counter_check(i);
		break;
	case 5:
		op_name = "counter_fold_all";
		if (!ctr[i].live)
			break;
		tally_counter_fold_all(c);
		ctr[i].folded = ctr[i].tree;
		EXPECT(tally_counter_read(c) == sgn(ctr[i].value), "counter %d: read %lld, model %lld",
		       i, LL(tally_counter_read(c)), LL(sgn(ctr[i].value)));
		counter_check(i);
		break;
	case 6: { /* compare: the sign of value - rhs */
		tally_sword rhs = pick_sword(in);
		op_name = "counter_compare";
		if (!ctr[i].live)
			break;
		int got = tally_counter_compare(c, rhs), want = sign3(sgn(ctr[i].value), rhs);
		tally_sword bound = tally_counter_error_bound(c);
		int near_wrap = sgn(ctr[i].value) > TALLY_SWORD_MAX - bound ||
				sgn(ctr[i].value) < TALLY_SWORD_MIN + bound;
		EXPECT(got == want || (FINDING_COMPARE_WRAP && near_wrap),
		       "counter %d: compare(%lld) %d, value %lld (read %lld, bound %lld)",
		       i, LL(rhs), got, LL(sgn(ctr[i].value)), LL(tally_counter_read(c)),
		       LL(tally_counter_error_bound(c)));
		break;
	}
	default: /* NULL */
		switch (u8(in) % 12) {
		case 10: op_name = "counter_set(NULL)";
			EXPECT(tally_counter_set(NULL, 3) == -EINVAL, "");
			break;
		case 11: op_name = "counter_sum_and_reset(NULL)";
			EXPECT(tally_counter_sum_and_reset(NULL) == 0, "");
			break;
		case 0: op_name = "counter_init(NULL)";
			EXPECT(tally_counter_init(NULL, 1, 0) == -EINVAL, "");
			break;
		case 1: op_name = "counter_destroy(NULL)"; tally_counter_destroy(NULL); break;
		case 2: op_name = "counter_add(NULL)"; tally_counter_add(NULL, 5); break;
		case 3: op_name = "counter_read(NULL)"; EXPECT(tally_counter_read(NULL) == 0, ""); break;
		case 4: op_name = "counter_sum(NULL)"; EXPECT(tally_counter_sum(NULL) == 0, ""); break;
		case 5: op_name = "counter_fold_all(NULL)"; tally_counter_fold_all(NULL); break;
		case 6: op_name = "counter_compare(NULL)";
			EXPECT(tally_counter_compare(NULL, 3) == 0, "");
			break;
		case 7: op_name = "counter_batch(NULL)";
			EXPECT(tally_counter_batch(NULL) == 0 && tally_counter_error_bound(NULL) == 0, "");
			break;
		case 8: op_name = "counter_read_positive(NULL)";
			EXPECT(tally_counter_read_positive(NULL) == 0, "");
			break;
		default: op_name = "counter_sum_positive(NULL)";
			EXPECT(tally_counter_sum_positive(NULL) == 0, "");
			break;
		}
	}
}

/* ---- tally_vec -------------------------------------------------------------- */
#define NR_VECS 2
#define VEC_ITEMS 6
static struct {
	struct tally_vec v;
	int live;
	unsigned nr;
	int threshold;
	tally_uword value[VEC_ITEMS];
} vec[NR_VECS];

/* An item index: valid, or one of the first few out of range, or huge. */
static unsigned pick_item(struct input *in, unsigned nr)
{
	uint8_t k = u8(in);
	if (k % 8 == 7)
		return (k & 8) ? nr + (k >> 4) % 3 : 0u - 1u - (k >> 4);
	return k % (nr ? nr : 1);
}

static void vec_check(int i, int folded)
{
	struct tally_vec *v = &vec[i].v;
	/* Lag of the global: threshold per slot, t/2 more after an inc/dec
	 * overstep (every CPU slot and the shared one). */
	tally_uword slots = UW(tally__nr_cpu_slots() + 1u);
	tally_uword t = UW(vec[i].threshold);
	tally_uword lag = UW(slots * (t + t / 2u + 1u));
	EXPECT(tally_vec_threshold(v) == vec[i].threshold, "vec %d: threshold %d, model %d", i,
	       tally_vec_threshold(v), vec[i].threshold);
	for (unsigned it = 0; it < vec[i].nr; it++) {
		tally_uword m = vec[i].value[it];
		tally_uword mono = tally_vec_read_monotonic(v, it);
		EXPECT(tally_vec_read_exact(v, it) == sgn(m), "vec %d item %u: exact %lld, model %lld",
		       i, it, LL(tally_vec_read_exact(v, it)), LL(sgn(m)));
		if (folded) {
			EXPECT(mono == UW(m + TALLY_MONOTONIC_BIAS),
			       "vec %d item %u: monotonic %llu, model %llu", i, it, ULL(mono),
			       ULL(m + TALLY_MONOTONIC_BIAS));
			EXPECT(tally_vec_read(v, it) == clamp0(m), "vec %d item %u", i, it);
		} else {
			tally_sword d = sgn(UW(mono - TALLY_MONOTONIC_BIAS - m));
			EXPECT(UW(d < 0 ? -(tally_uword)d : (tally_uword)d) <= lag,
			       "vec %d item %u: global %llu lags model %llu by more than %llu", i,
			       it, ULL(mono - TALLY_MONOTONIC_BIAS), ULL(m), ULL(lag));
			EXPECT(tally_vec_read(v, it) == clamp0(UW(mono - TALLY_MONOTONIC_BIAS)),
			       "vec %d item %u", i, it);
		}
	}
	for (unsigned b = vec[i].nr; b < vec[i].nr + 3u; b++)
		EXPECT(tally_vec_read(v, b) == 0 && tally_vec_read_exact(v, b) == 0 &&
			       tally_vec_read_monotonic(v, b) == 0,
		       "vec %d: bad item %u reads non-zero", i, b);
}

/* A vector made with tally_vec_opts: per-item thresholds and flags
 * (gauge, hidden, multi), names; reset, snapshots, multi-item updates. */
#define XV_ITEMS 6
static struct {
	struct tally_vec v;
	int live, all_multi;
	unsigned nr;
	unsigned char flags[XV_ITEMS]; /* as the vector reports them */
	tally_uword raw[XV_ITEMS], base[XV_ITEMS];
	char names[XV_ITEMS][8];
	int named[XV_ITEMS];
} xv;

static void xv_check(void)
{
	tally_uword out[XV_ITEMS + 1], since[XV_ITEMS + 1];
	tally_sword sg[XV_ITEMS + 1];
	EXPECT(tally_vec_snapshot(&xv.v, out, XV_ITEMS + 1) == 0, "");
	EXPECT(tally_vec_snapshot_since_reset(&xv.v, since, XV_ITEMS) == 0, "");
	EXPECT(tally_vec_snapshot_signed(&xv.v, sg, XV_ITEMS) == 0, "");
	for (unsigned it = 0; it < xv.nr; it++) {
		tally_uword d = UW(xv.raw[it] - xv.base[it]);
		EXPECT(out[it] == xv.raw[it], "item %u: raw %llu, model %llu", it, ULL(out[it]),
		       ULL(xv.raw[it]));
		EXPECT(since[it] == d, "item %u: since %llu, model %llu", it, ULL(since[it]), ULL(d));
		EXPECT(sg[it] == sgn(d), "item %u: signed %lld, model %lld", it, LL(sg[it]),
		       LL(sgn(d)));
		EXPECT(tally_vec_sum(&xv.v, it) == d, "item %u", it);
		EXPECT(tally_vec_read_exact(&xv.v, it) == sgn(d), "item %u", it);
		EXPECT(tally_vec_item_flags(&xv.v, it) == xv.flags[it], "item %u: flags %u, model %u",
		       it, tally_vec_item_flags(&xv.v, it), xv.flags[it]);
		if (xv.named[it])
			EXPECT(tally_vec_item_name(&xv.v, it) &&
				       !strcmp(tally_vec_item_name(&xv.v, it), xv.names[it]),
			       "item %u: name", it);
		else
			EXPECT(!tally_vec_item_name(&xv.v, it), "item %u: a name", it);
	}
	EXPECT(tally_vec_item_flags(&xv.v, xv.nr) == 0, "");
}

static void op_vec_api_one(struct input *in)
{
	uint8_t k = u8(in);
	unsigned it;
	if (!xv.live && k % 8 != 7)
		k = 0; /* make one first */
	switch (k % 8) {
	case 0: { /* init_opts: valid, or one bad member (nothing changed) */
		static const int thr[] = {0, 1, 3, 125, TALLY_VEC_EXACT, TALLY_VEC_THRESHOLD_MAX};
		int thresholds[XV_ITEMS];
		unsigned char fl[XV_ITEMS];
		const char *nm[XV_ITEMS];
		struct tally_vec_opts o;
		uint8_t a = u8(in), bad = u8(in);
		struct tally_vec scratch;
		op_name = "vec_init_opts";
		memset(&o, 0, sizeof(o));
		o.nr_items = 1u + a % XV_ITEMS;
		o.flags = (a >> 3) & 3; /* EXACT_ONLY, MULTI */
		if (!(o.flags & TALLY_VEC_EXACT_ONLY)) {
			o.threshold = thr[(a >> 5) % 4];
			o.thresholds = thresholds;
		}
		for (unsigned i = 0; i < XV_ITEMS; i++) {
			uint8_t b = u8(in);
			thresholds[i] = thr[b % 6];
			fl[i] = (unsigned char)((b >> 3) & 7); /* gauge, hidden, multi */
			nm[i] = (b & 0x40) ? NULL : "item";
		}
		o.item_flags = (a & 0x80) ? NULL : fl;
		o.names = nm;
		if (bad % 4 == 0) { /* one bad member, where there is one to spoil */
			struct tally_vec copy;
			unsigned at = bad % o.nr_items;
			if ((bad & 4) && o.item_flags)
				fl[at] |= (unsigned char)(8u << (bad >> 6)); /* an unknown flag */
			else if ((bad & 8) && o.thresholds)
				thresholds[at] = -2;
			else
				o.nr_items = 0;
			memset(&scratch, 0x5a, sizeof(scratch));
			memcpy(&copy, &scratch, sizeof(copy));
			EXPECT(tally_vec_init_opts(&scratch, &o) == -EINVAL, "bad %u", bad);
			EXPECT(!memcmp(&copy, &scratch, sizeof(copy)), "bad %u: v changed", bad);
			break;
		}
		if (xv.live)
			tally_vec_destroy(&xv.v);
		xv.live = 0;
		EXPECT(tally_vec_init_opts(&xv.v, &o) == 0, "");
		xv.live = 1;
		xv.nr = o.nr_items;
		xv.all_multi = (o.flags & TALLY_VEC_MULTI) != 0;
		for (unsigned i = 0; i < XV_ITEMS; i++) {
			unsigned char f = o.item_flags ? fl[i] : 0;
			xv.flags[i] = (unsigned char)(f | (xv.all_multi ? TALLY_VEC_ITEM_MULTI : 0));
			xv.raw[i] = xv.base[i] = 0;
			xv.named[i] = nm[i] != NULL;
			strcpy(xv.names[i], "item");
		}
		break;
	}
	case 1: { /* mod, inc, dec */
		uint8_t how = u8(in) % 3;
		tally_sword d = how == 0 ? pick_sword(in) : how == 1 ? 1 : -1;
		int rc;
		op_name = how == 0 ? "xvec_mod" : how == 1 ? "xvec_inc" : "xvec_dec";
		if (!xv.live)
			break;
		it = pick_item(in, xv.nr);
		rc = how == 0 ? tally_vec_mod(&xv.v, it, d)
		     : how == 1 ? tally_vec_inc(&xv.v, it) : tally_vec_dec(&xv.v, it);
		EXPECT(rc == (it < xv.nr ? 0 : -EINVAL), "item %u: rc %d", it, rc);
		if (it < xv.nr)
			xv.raw[it] = UW(xv.raw[it] + UW(d));
		break;
	}
	case 2: { /* mod_multi: all or nothing; parts without banks counted alone */
		struct tally_vec_delta d[4];
		unsigned n = u8(in) % 5, ok = 1;
		int rc;
		op_name = "vec_mod_multi";
		if (!xv.live)
			break;
		for (unsigned j = 0; j < n; j++) {
			d[j].item = pick_item(in, xv.nr);
			d[j].delta = pick_sword(in);
			if (d[j].item >= xv.nr)
				ok = 0;
		}
		rc = tally_vec_mod_multi(&xv.v, n ? d : NULL, n);
		EXPECT(rc == (ok ? 0 : -EINVAL), "n %u: rc %d", n, rc);
		for (unsigned j = 0; ok && j < n; j++)
			xv.raw[d[j].item] = UW(xv.raw[d[j].item] + UW(d[j].delta));
		break;
	}
	case 3:
		op_name = "vec_reset";
		if (!xv.live)
			break;
		EXPECT(tally_vec_reset(&xv.v) == 0, "");
		for (unsigned i = 0; i < xv.nr; i++)
			if (!(xv.flags[i] & TALLY_VEC_ITEM_GAUGE))
				xv.base[i] = xv.raw[i];
		break;
	case 4: {
		int rc;
		op_name = "vec_reset_item";
		if (!xv.live)
			break;
		it = pick_item(in, xv.nr);
		rc = tally_vec_reset_item(&xv.v, it);
		if (it >= xv.nr || (xv.flags[it] & TALLY_VEC_ITEM_GAUGE)) {
			EXPECT(rc == -EINVAL, "item %u: rc %d", it, rc);
		} else {
			EXPECT(rc == 0, "item %u: rc %d", it, rc);
			xv.base[it] = xv.raw[it];
		}
		break;
	}
	case 5: { /* rename one item */
		uint8_t c = u8(in);
		char name[8];
		int rc;
		op_name = "vec_set_item_name";
		if (!xv.live)
			break;
		it = pick_item(in, xv.nr);
		snprintf(name, sizeof(name), "n%u", c);
		rc = tally_vec_set_item_name(&xv.v, it, (c & 1) ? NULL : name);
		EXPECT(rc == (it < xv.nr ? 0 : -EINVAL), "item %u: rc %d", it, rc);
		if (it < xv.nr) {
			xv.named[it] = !(c & 1);
			strcpy(xv.names[it], name);
		}
		break;
	}
	case 6:
		op_name = "xvec_check";
		if (!xv.live)
			break;
		if (u8(in) & 1) {
			tally_vec_fold(&xv.v);
			for (unsigned i = 0; i < xv.nr; i++)
				EXPECT(tally_vec_read_monotonic(&xv.v, i) ==
					       UW(xv.raw[i] + TALLY_MONOTONIC_BIAS),
				       "folded item %u", i);
		}
		xv_check();
		break;
	default: { /* NULL and bad arguments */
		tally_uword out[XV_ITEMS];
		tally_sword sg[XV_ITEMS];
		op_name = "vec_api(NULL)";
		EXPECT(tally_vec_snapshot_signed(NULL, sg, XV_ITEMS) == -EINVAL, "");
		EXPECT(tally_vec_set_item_name(NULL, 0, "x") == -EINVAL, "");
		EXPECT(tally_vec_item_flags(NULL, 0) == 0, "");
		EXPECT(tally_vec_reset(NULL) == -EINVAL && tally_vec_reset_item(NULL, 0) == -EINVAL, "");
		EXPECT(tally_vec_mod_multi(NULL, NULL, 0) == -EINVAL, "");
		if (!xv.live)
			break;
		EXPECT(tally_vec_snapshot_signed(&xv.v, NULL, XV_ITEMS) == -EINVAL, "");
		EXPECT(tally_vec_snapshot(&xv.v, out, xv.nr - 1) == -EINVAL, "");
		EXPECT(tally_vec_snapshot_signed(&xv.v, sg, xv.nr - 1) == -EINVAL, "");
		EXPECT(tally_vec_mod_multi(&xv.v, NULL, 1) == -EINVAL, "");
		xv_check();
		break;
	}
	}
}

/* A few calls on the options vector in a row (its calls are a small part
 * of the op mix), then every reader against the model. */
static void op_vec_api(struct input *in)
{
	unsigned reps = 1u + u8(in) % 8;
	for (unsigned r = 0; r < reps; r++)
		op_vec_api_one(in);
	op_name = "xvec_check";
	if (xv.live)
		xv_check();
}

static void op_vec(struct input *in)
{
	uint8_t k = u8(in);
	int i = (k >> 4) % NR_VECS;
	struct tally_vec *v = &vec[i].v;
	switch (k % 8) {
	case 0: { /* init */
		static const int thr[] = {0, 1, 2, 3, 125, TALLY_VEC_THRESHOLD_MAX};
		uint8_t a = u8(in), b = u8(in);
		unsigned nr = 1u + a % VEC_ITEMS;
		int t = thr[b % 6];
		op_name = "vec_init";
		if (a >= 240) { /* bad item count */
			nr = (a & 1) ? 0u : TALLY_VEC_ITEMS_MAX + 1u;
			EXPECT(tally_vec_init(v, nr, t) == -EINVAL, "nr %u", nr);
			break;
		}
		if (b >= 240) { /* bad threshold */
			t = (b & 1) ? -1 : TALLY_VEC_THRESHOLD_MAX + 1;
			EXPECT(tally_vec_init(v, nr, t) == -EINVAL, "threshold %d", t);
			break;
		}
		if (vec[i].live)
			tally_vec_destroy(v);
		vec[i].live = 0;
		EXPECT(tally_vec_init(v, nr, t) == 0, "nr %u threshold %d", nr, t);
		vec[i].live = 1;
		vec[i].nr = nr;
		vec[i].threshold = t ? t : tally_vec_default_threshold();
		memset(vec[i].value, 0, sizeof(vec[i].value));
		break;
	}
	case 1:
		op_name = "vec_destroy";
		if (vec[i].live)
			tally_vec_destroy(v);
		vec[i].live = 0;
		break;
	case 2:
	case 3: { /* mod, inc, dec, repeated */
		unsigned it = pick_item(in, vec[i].nr), reps = 1u + u8(in) % 16;
		uint8_t how = u8(in) % 3;
		tally_sword d = how == 0 ? pick_sword(in) : how == 1 ? 1 : -1;
		op_name = how == 0 ? "vec_mod" : how == 1 ? "vec_inc" : "vec_dec";
		if (!vec[i].live)
			break;
		for (unsigned r = 0; r < reps; r++) {
			int rc = how == 0 ? tally_vec_mod(v, it, d)
				 : how == 1 ? tally_vec_inc(v, it) : tally_vec_dec(v, it);
			if (it >= vec[i].nr) {
				EXPECT(rc == -EINVAL, "vec %d item %u: rc %d", i, it, rc);
			} else {
				EXPECT(rc == 0, "vec %d item %u: rc %d", i, it, rc);
				vec[i].value[it] = UW(vec[i].value[it] + UW(d));
			}
		}
		break;
	}
	case 4:
	case 5:
		op_name = "vec_check";
		if (vec[i].live)
			vec_check(i, 0);
		break;
	case 6:
		op_name = "vec_fold";
		if (!vec[i].live)
			break;
		tally_vec_fold(v);
		vec_check(i, 1);
		break;
	default:
		if (k & 8) { /* bit 3 is free: the options API */
			op_vec_api(in);
			break;
		}
		switch (u8(in) % 9) {
		case 0: op_name = "vec_init(NULL)"; EXPECT(tally_vec_init(NULL, 1, 0) == -EINVAL, ""); break;
		case 1: op_name = "vec_destroy(NULL)"; tally_vec_destroy(NULL); break;
		case 2: op_name = "vec_mod(NULL)"; EXPECT(tally_vec_mod(NULL, 0, 1) == -EINVAL, ""); break;
		case 3: op_name = "vec_inc(NULL)"; EXPECT(tally_vec_inc(NULL, 0) == -EINVAL, ""); break;
		case 4: op_name = "vec_dec(NULL)"; EXPECT(tally_vec_dec(NULL, 0) == -EINVAL, ""); break;
		case 5: op_name = "vec_read(NULL)";
			EXPECT(tally_vec_read(NULL, 0) == 0 && tally_vec_read_monotonic(NULL, 0) == 0, "");
			break;
		case 6: op_name = "vec_read_exact(NULL)"; EXPECT(tally_vec_read_exact(NULL, 0) == 0, ""); break;
		case 7: op_name = "vec_fold(NULL)"; tally_vec_fold(NULL); break;
		default: op_name = "vec_threshold(NULL)"; EXPECT(tally_vec_threshold(NULL) == 0, ""); break;
		}
	}
}

/* ---- tally_cost and tally_scan_fraction ------------------------------------ */
static struct {
	struct tally_cost c;
	tally_uword count[2], last_rot[2], last_io[2];
	tally_uword rot[2], io[2]; /* the monotonic inputs now */
} cost;

/* a + b > limit, from the carry out of the sum. */
static int over(tally_uword a, tally_uword b, tally_uword limit)
{
	tally_uword s = UW(a + b);
	return s < a || s > limit;
}

static void model_fold(tally_uword lru)
{
	for (int i = 0; i < 2; i++) {
		tally_uword d = UW(UW(UW(cost.io[i] - cost.last_io[i]) * 32u) +
				   UW(cost.rot[i] - cost.last_rot[i]));
		cost.count[i] = UW(cost.count[i] + d);
		cost.last_rot[i] = cost.rot[i];
		cost.last_io[i] = cost.io[i];
	}
	while (over(cost.count[0], cost.count[1], UW(lru / 4u))) {
		cost.count[0] >>= 1;
		cost.count[1] >>= 1;
	}
}

static void model_note(int side, tally_uword nio, tally_uword nrot, tally_uword lru)
{
	tally_uword w = UW(UW(nio * 32u) + nrot);
	if (!w) /* lru_note_cost(): no cost, no decay */
		return;
	cost.count[side] = UW(cost.count[side] + w);
	if (over(cost.count[0], cost.count[1], UW(lru / 4u))) {
		cost.count[0] >>= 1;
		cost.count[1] >>= 1;
	}
}

static void cost_check(void)
{
	tally_uword got[2] = {1, 1};
	struct tally_cost_input last[2];
	tally_cost_read(&cost.c, got);
	EXPECT(got[0] == cost.count[0] && got[1] == cost.count[1], "read %llu %llu, model %llu %llu",
	       ULL(got[0]), ULL(got[1]), ULL(cost.count[0]), ULL(cost.count[1]));
	tally_cost_last(&cost.c, last);
	for (int i = 0; i < 2; i++)
		EXPECT(last[i].rotated == cost.last_rot[i] && last[i].io == cost.last_io[i],
		       "side %d: last %llu %llu, model %llu %llu", i, ULL(last[i].rotated),
		       ULL(last[i].io), ULL(cost.last_rot[i]), ULL(cost.last_io[i]));
}

/* Exact 128-bit arithmetic on 64-bit halves for the scan fraction. */
struct wide {
	uint64_t hi, lo;
};

static struct wide wadd(struct wide a, struct wide b)
{
	struct wide r = {a.hi + b.hi, a.lo + b.lo};
	r.hi += r.lo < a.lo;
	return r;
}

static struct wide wof(uint64_t v)
{
	struct wide r = {0, v};
	return r;
}

static struct wide wmul(struct wide a, unsigned k)
{
	struct wide r = {0, 0};
	for (; k; k >>= 1) {
		if (k & 1)
			r = wadd(r, a);
		a = wadd(a, a);
	}
	return r;
}

static uint64_t wdiv(struct wide n, struct wide d)
{
	struct wide rem = {0, 0};
	uint64_t q = 0;
	for (int b = 127; b >= 0; b--) {
		uint64_t bit = b >= 64 ? (n.hi >> (b - 64)) & 1 : (n.lo >> b) & 1;
		rem.hi = (rem.hi << 1) | (rem.lo >> 63);
		rem.lo = (rem.lo << 1) | bit;
		if (rem.hi > d.hi || (rem.hi == d.hi && rem.lo >= d.lo)) {
			uint64_t borrow = rem.lo < d.lo;
			rem.lo -= d.lo;
			rem.hi -= d.hi + borrow;
			if (b < 64)
				q |= (uint64_t)1 << b;
		}
	}
	return q;
}

static void op_cost(struct input *in)
{
	uint8_t k = u8(in);
	switch (k % 10) {
	case 0:
		op_name = "cost_init";
		tally_cost_init(&cost.c);
		memset(cost.count, 0, sizeof(cost.count));
		memset(cost.last_rot, 0, sizeof(cost.last_rot));
		memset(cost.last_io, 0, sizeof(cost.last_io));
		break;
	case 1:
	case 2: { /* fold, or lock + fold_locked + unlock */
		tally_uword lru = pick_word(in), out[2] = {7, 7};
		int locked = k % 10 == 2, nul = u8(in) % 8 == 0;
		for (int i = 0; i < 2; i++) {
			cost.rot[i] = UW(cost.rot[i] + pick_word(in));
			cost.io[i] = UW(cost.io[i] + pick_word(in));
		}
		struct tally_cost_input inp[2] = {{cost.rot[0], cost.io[0]}, {cost.rot[1], cost.io[1]}};
		op_name = locked ? "cost_fold_locked" : "cost_fold";
		if (locked) {
			EXPECT(tally_cost_trylock(&cost.c), "the cost lock is free");
			tally_cost_fold_locked(&cost.c, nul ? NULL : inp, lru, out);
			tally_cost_unlock(&cost.c);
		} else {
			tally_cost_fold(&cost.c, nul ? NULL : inp, lru, out);
		}
		if (nul) { /* NULL in: nothing changes, cost reads {0, 0} */
			EXPECT(out[0] == 0 && out[1] == 0, "");
		} else {
			model_fold(lru);
			EXPECT(out[0] == cost.count[0] && out[1] == cost.count[1],
			       "fold %llu %llu, model %llu %llu", ULL(out[0]), ULL(out[1]),
			       ULL(cost.count[0]), ULL(cost.count[1]));
		}
		cost_check();
		break;
	}
	case 3:
	case 4: { /* note, or note_locked; sides 0, 1 or bad */
		uint8_t s = u8(in);
		int side = s % 8 < 3 ? 0 : s % 8 < 6 ? 1 : (s & 8) ? 2 : -1;
		tally_uword nio = pick_word(in), nrot = pick_word(in), lru = pick_word(in);
		if (u8(in) % 4 == 0) /* a cost that wraps to 0 */
			nrot = UW(0u - UW(nio * 32u));
		op_name = k % 10 == 4 ? "cost_note_locked" : "cost_note";
		if (k % 10 == 4) {
			tally_cost_lock(&cost.c);
			tally_cost_note_locked(&cost.c, side, nio, nrot, lru);
			tally_cost_unlock(&cost.c);
		} else {
			tally_cost_note(&cost.c, side, nio, nrot, lru);
		}
		if (side == 0 || side == 1)
			model_note(side, nio, nrot, lru);
		cost_check();
		break;
	}
	case 5:
		op_name = "cost_trylock";
		EXPECT(tally_cost_trylock(&cost.c), "free lock");
		EXPECT(!tally_cost_trylock(&cost.c), "held lock");
		tally_cost_unlock(&cost.c);
		cost_check();
		break;
	case 6:
	case 7: { /* scan fraction against the formula */
		tally_uword a = pick_word(in), f = pick_word(in);
		uint8_t s = u8(in);
		unsigned sw = s <= 200 ? s : s % 4 == 0 ? 201u + s : s % 201u;
		uint64_t fr[2] = {9, 9}, d = 9, ap = 0, fp = 0;
		op_name = "scan_fraction";
		if (u8(in) % 3 == 0) { /* from the live accumulator */
			a = cost.count[0];
			f = cost.count[1];
		}
		tally_scan_fraction(a, f, sw, fr, &d);
		if (sw <= TALLY_MAX_SWAPPINESS) {
			struct wide total = wadd(wof(a), wof(f));
			struct wide apc = wadd(total, wof(a)), fpc = wadd(total, wof(f));
			total = wadd(wadd(apc, fpc), wof(1));
			ap = wdiv(wmul(total, sw), wadd(apc, wof(1)));
			fp = wdiv(wmul(total, TALLY_MAX_SWAPPINESS - sw), wadd(fpc, wof(1)));
			EXPECT(ap + fp > 0, "a valid split has a denominator");
		}
		EXPECT(fr[0] == ap && fr[1] == fp && d == ap + fp,
		       "(%llu, %llu, %u): %llu %llu %llu, formula %llu %llu", ULL(a), ULL(f), sw,
		       ULL(fr[0]), ULL(fr[1]), ULL(d), ULL(ap), ULL(fp));
		break;
	}
	case 8:
		op_name = "cost_check";
		cost_check();
		break;
	default: {
		tally_uword out[2] = {7, 7};
		struct tally_cost_input last[2], inp[2] = {{1, 1}, {1, 1}};
		uint64_t fr[2], d;
		switch (u8(in) % 12) {
		case 0: op_name = "cost_init(NULL)"; tally_cost_init(NULL); break;
		case 1: op_name = "cost_trylock(NULL)"; EXPECT(!tally_cost_trylock(NULL), ""); break;
		case 2: op_name = "cost_lock(NULL)"; tally_cost_lock(NULL); tally_cost_unlock(NULL); break;
		case 3: op_name = "cost_fold(NULL)";
			tally_cost_fold(NULL, inp, 100, out);
			EXPECT(out[0] == 0 && out[1] == 0, "");
			tally_cost_fold(NULL, NULL, 100, NULL);
			break;
		case 4: op_name = "cost_fold_locked(NULL)";
			tally_cost_fold_locked(NULL, inp, 100, out);
			EXPECT(out[0] == 0 && out[1] == 0, "");
			break;
		case 5: op_name = "cost_note(NULL)"; tally_cost_note(NULL, 0, 1, 1, 100); break;
		case 6: op_name = "cost_note_locked(NULL)"; tally_cost_note_locked(NULL, 1, 1, 1, 100); break;
		case 7: op_name = "cost_read(NULL)";
			tally_cost_read(NULL, out);
			EXPECT(out[0] == 0 && out[1] == 0, "");
			tally_cost_read(&cost.c, NULL);
			break;
		case 8: op_name = "cost_last(NULL)";
			memset(last, 0xa5, sizeof(last));
			tally_cost_last(NULL, last);
			EXPECT(last[0].rotated == 0 && last[0].io == 0 && last[1].rotated == 0 &&
				       last[1].io == 0, "");
			tally_cost_last(&cost.c, NULL);
			break;
		case 9: op_name = "cost_fold(c, NULL, NULL)";
			tally_cost_fold(&cost.c, NULL, 100, NULL);
			break;
		case 10: op_name = "scan_fraction(NULL)";
			tally_scan_fraction(1, 2, 60, NULL, NULL);
			tally_scan_fraction(1, 2, 60, fr, NULL);
			EXPECT(fr[0] == 120 && fr[1] == 233, "");
			tally_scan_fraction(1, 2, 60, NULL, &d);
			EXPECT(d == 353, "");
			break;
		default: op_name = "cost_unlock(NULL)"; tally_cost_unlock(NULL); break;
		}
		cost_check();
	}
	}
}

/* ---- tally_inflight ---------------------------------------------------------- */
#define LONG_WAIT_NS 200000u /* skip allowed() calls that would wait longer */
static struct {
	struct tally_inflight f;
	int live;
	unsigned nr;
	uint64_t wait_ns;
	tally_uword isolated[TALLY_INFLIGHT_TYPES_MAX];
	struct tally_inflight_stats st;
} fl;

/* The evictable callback: ev[0][t] on the first pass over the types,
 * ev[1][t] after that. */
static struct {
	tally_uword ev[2][TALLY_INFLIGHT_TYPES_MAX];
	unsigned per_pass, calls;
} pool;

static tally_uword pool_evictable(void *arg, unsigned type)
{
	EXPECT(arg == &pool, "the callback gets its arg");
	EXPECT(type < fl.nr, "type %u of %u", type, fl.nr);
	return pool.ev[pool.calls++ < pool.per_pass ? 0 : 1][type];
}

static int model_over(tally_uword iso, tally_uword ev, const struct tally_inflight_caller *who)
{
	if (who && who->exempt)
		return 0;
	if (!who || who->io_fs)
		ev >>= 3;
	return iso > ev / 2u;
}

static unsigned model_mask(unsigned types, int pass, const struct tally_inflight_caller *who,
			   int *has)
{
	unsigned m = 0;
	*has = 0;
	for (unsigned t = 0; t < fl.nr; t++) {
		if (!(types & (1u << t)) || !pool.ev[pass][t])
			continue;
		*has = 1;
		if (!model_over(fl.isolated[t], pool.ev[pass][t], who))
			m |= 1u << t;
	}
	return m;
}

static void inflight_check(void)
{
	struct tally_inflight_stats s;
	for (unsigned t = 0; t < fl.nr; t++)
		EXPECT(tally_inflight_read(&fl.f, t) == fl.isolated[t], "type %u: %llu, model %llu", t,
		       ULL(tally_inflight_read(&fl.f, t)), ULL(fl.isolated[t]));
	for (unsigned t = fl.nr; t < fl.nr + 2u; t++)
		EXPECT(tally_inflight_read(&fl.f, t) == 0, "bad type %u", t);
	EXPECT(tally_inflight_waiters(&fl.f) == 0, "");
	EXPECT(tally_inflight_wait_ns(&fl.f) == fl.wait_ns, "");
	tally_inflight_stats(&fl.f, &s);
	EXPECT(s.throttled == fl.st.throttled && s.woken == fl.st.woken &&
		       s.timeouts == fl.st.timeouts && s.gave_up == fl.st.gave_up &&
		       s.fatal == fl.st.fatal,
	       "stats %llu %llu %llu %llu %llu, model %llu %llu %llu %llu %llu", ULL(s.throttled),
	       ULL(s.woken), ULL(s.timeouts), ULL(s.gave_up), ULL(s.fatal), ULL(fl.st.throttled),
	       ULL(fl.st.woken), ULL(fl.st.timeouts), ULL(fl.st.gave_up), ULL(fl.st.fatal));
}

static void op_inflight(struct input *in)
{
	uint8_t k = u8(in);
	switch (k % 8) {
	case 0: { /* init */
		static const uint64_t waits[] = {1, 10, 1000, 100000, 0,
						 TALLY_INFLIGHT_WAIT_MAX_NS};
		uint8_t a = u8(in), b = u8(in);
		unsigned nr = 1u + a % TALLY_INFLIGHT_TYPES_MAX;
		uint64_t w = waits[b % 6];
		op_name = "inflight_init";
		if (a >= 240 || b >= 240) {
			if (a >= 240)
				nr = (a & 1) ? 0u : TALLY_INFLIGHT_TYPES_MAX + 1u;
			else
				w = TALLY_INFLIGHT_WAIT_MAX_NS + 1u + (b & 3);
			/* Refused: a live f is untouched (checked below). */
			EXPECT(tally_inflight_init(fl.live ? &fl.f : NULL, nr, w) == -EINVAL,
			       "nr %u wait %llu", nr, ULL(w));
			struct tally_inflight scratch;
			EXPECT(tally_inflight_init(&scratch, nr, w) == -EINVAL, "nr %u wait %llu", nr,
			       ULL(w));
			if (fl.live)
				inflight_check();
			break;
		}
		if (fl.live)
			tally_inflight_destroy(&fl.f);
		fl.live = 0;
		EXPECT(tally_inflight_init(&fl.f, nr, w) == 0, "nr %u wait %llu", nr, ULL(w));
		fl.live = 1;
		fl.nr = nr;
		fl.wait_ns = w ? w : TALLY_INFLIGHT_WAIT_NS;
		memset(fl.isolated, 0, sizeof(fl.isolated));
		memset(&fl.st, 0, sizeof(fl.st));
		inflight_check();
		break;
	}
	case 1:
		op_name = "inflight_destroy";
		if (fl.live)
			tally_inflight_destroy(&fl.f);
		fl.live = 0;
		break;
	case 2:
	case 3: { /* isolate / putback */
		unsigned t = pick_item(in, fl.nr);
		tally_uword n = pick_word(in);
		int put = k % 8 == 3, rc;
		op_name = put ? "inflight_putback" : "inflight_isolate";
		if (!fl.live)
			break;
		if (put && t < fl.nr && u8(in) % 2) /* often exactly what is there */
			n = fl.isolated[t];
		rc = put ? tally_inflight_putback(&fl.f, t, n) : tally_inflight_isolate(&fl.f, t, n);
		if (t >= fl.nr || (put ? n > fl.isolated[t] : UW(fl.isolated[t] + n) < n)) {
			EXPECT(rc == -EINVAL, "type %u n %llu: rc %d", t, ULL(n), rc);
		} else {
			EXPECT(rc == 0, "type %u n %llu: rc %d", t, ULL(n), rc);
			fl.isolated[t] = put ? UW(fl.isolated[t] - n) : UW(fl.isolated[t] + n);
		}
		inflight_check();
		break;
	}
	case 4: { /* too_many */
		static const struct tally_inflight_caller who[3] = {
			{true, true, NULL}, {false, true, NULL}, {false, false, NULL}};
		unsigned t = pick_item(in, fl.nr);
		tally_uword ev = pick_word(in);
		uint8_t w = u8(in) % 4;
		const struct tally_inflight_caller *c = w == 3 ? NULL : &who[w];
		op_name = "inflight_too_many";
		if (!fl.live)
			break;
		int want = t < fl.nr && model_over(fl.isolated[t], ev, c);
		EXPECT(tally_inflight_too_many(&fl.f, t, ev, c) == want, "type %u ev %llu who %u", t,
		       ULL(ev), w);
		break;
	}
	case 5: { /* allowed */
		int dying = 0, has0, has1;
		struct tally_inflight_caller who = {false, false, &dying};
		uint8_t w = u8(in), sel = u8(in);
		unsigned types = u8(in);
		bool fatal_out = true, *fatal = (sel & 1) ? NULL : &fatal_out;
		op_name = "inflight_allowed";
		if (!fl.live)
			break;
		who.exempt = (w & 3) == 0;
		who.io_fs = (w & 4) != 0;
		dying = (w & 8) != 0;
		const struct tally_inflight_caller *c = (w & 16) ? NULL : &who;
		pool.per_pass = 0;
		pool.calls = 0;
		for (unsigned t = 0; t < fl.nr; t++) {
			for (int p = 0; p < 2; p++) {
				uint8_t e = u8(in);
				pool.ev[p][t] = e % 4 == 0 ? 0 : e % 4 == 1 ? pick_word(in) : UW(e);
			}
			if (types & (1u << t))
				pool.per_pass++;
		}
		/* The model: check, then at most one wait and one more check. */
		unsigned want = model_mask(types, 0, c, &has0), calls = pool.per_pass;
		int wait = has0 && !want, want_fatal = 0;
		if (wait) {
			if (fl.wait_ns > LONG_WAIT_NS)
				break; /* a real wait: not in a fuzzer */
			fl.st.throttled++;
			fl.st.timeouts++; /* nobody wakes it */
			if (c && dying) {
				fl.st.fatal++;
				want_fatal = 1;
			} else {
				calls += pool.per_pass;
				want = model_mask(types, 1, c, &has1);
				if (has1 && !want)
					fl.st.gave_up++;
			}
		}
		unsigned got = tally_inflight_allowed(&fl.f, types, pool_evictable, &pool, c, fatal);
		EXPECT(got == want, "types %#x who %u: %#x, model %#x", types, w, got, want);
		EXPECT(pool.calls == calls, "evictable called %u times, model %u", pool.calls, calls);
		if (fatal)
			EXPECT(*fatal == (bool)want_fatal, "fatal %d, model %d", *fatal, want_fatal);
		inflight_check();
		break;
	}
	case 6:
		op_name = "inflight_check";
		if (fl.live) {
			tally_inflight_wake(&fl.f);
			inflight_check();
		}
		break;
	default: {
		struct tally_inflight_stats s;
		bool fatal = true;
		switch (u8(in) % 12) {
		case 0: op_name = "inflight_init(NULL)"; EXPECT(tally_inflight_init(NULL, 1, 0) == -EINVAL, ""); break;
		case 1: op_name = "inflight_destroy(NULL)"; tally_inflight_destroy(NULL); break;
		case 2: op_name = "inflight_wait_ns(NULL)"; EXPECT(tally_inflight_wait_ns(NULL) == 0, ""); break;
		case 3: op_name = "inflight_read(NULL)"; EXPECT(tally_inflight_read(NULL, 0) == 0, ""); break;
		case 4: op_name = "inflight_waiters(NULL)"; EXPECT(tally_inflight_waiters(NULL) == 0, ""); break;
		case 5: op_name = "inflight_wake(NULL)"; tally_inflight_wake(NULL); break;
		case 6: op_name = "inflight_isolate(NULL)"; EXPECT(tally_inflight_isolate(NULL, 0, 1) == -EINVAL, ""); break;
		case 7: op_name = "inflight_putback(NULL)"; EXPECT(tally_inflight_putback(NULL, 0, 0) == -EINVAL, ""); break;
		case 8: op_name = "inflight_too_many(NULL)"; EXPECT(!tally_inflight_too_many(NULL, 0, 0, NULL), ""); break;
		case 9: op_name = "inflight_allowed(NULL)";
			EXPECT(tally_inflight_allowed(NULL, 1u, pool_evictable, &pool, NULL, &fatal) == 0 && !fatal, "");
			if (fl.live) {
				fatal = true;
				EXPECT(tally_inflight_allowed(&fl.f, 1u, NULL, &pool, NULL, &fatal) == 0 && !fatal, "");
			}
			break;
		case 10: op_name = "inflight_stats(NULL)";
			memset(&s, 0xa5, sizeof(s));
			tally_inflight_stats(NULL, &s);
			EXPECT(s.throttled == 0 && s.woken == 0 && s.timeouts == 0 && s.gave_up == 0 && s.fatal == 0, "");
			if (fl.live)
				tally_inflight_stats(&fl.f, NULL);
			break;
		default: op_name = "inflight_wake(destroyed)";
			if (!fl.live) { /* a destroyed gauge set: every call fails cleanly */
				static struct tally_inflight gone;
				static int made;
				if (!made) {
					EXPECT(tally_inflight_init(&gone, 2, 1) == 0, "");
					tally_inflight_destroy(&gone);
					made = 1;
				}
				EXPECT(tally_inflight_isolate(&gone, 0, 1) == -EINVAL, "");
				EXPECT(tally_inflight_read(&gone, 0) == 0, "");
				EXPECT(tally_inflight_allowed(&gone, 3u, pool_evictable, &pool, NULL, NULL) == 0, "");
				tally_inflight_wake(&gone);
				tally_inflight_destroy(&gone);
			}
			break;
		}
		if (fl.live)
			inflight_check();
	}
	}
}

/* ---- monotonic.h -------------------------------------------------------------- */
static struct tally_sample sampler;
static tally_uword sampler_last;

static void op_monotonic(struct input *in)
{
	uint8_t k = u8(in);
	tally_uword a = pick_word(in), b = pick_word(in);
	switch (k % 4) {
	case 0:
		op_name = "sample_advance";
		EXPECT(tally_sample_advance(&sampler, a) == UW(a - sampler_last), "");
		sampler_last = a;
		EXPECT(sampler.last == a, "");
		break;
	case 1:
		op_name = "sample_advance(NULL)";
		EXPECT(tally_sample_advance(NULL, a) == 0, "");
		break;
	case 2: {
		op_name = "delta_clamp_after";
		tally_sword s = sgn(b);
		EXPECT(tally_delta(a, b) == UW(b - a), "");
		EXPECT(tally_clamp(s) == (s < 0 ? 0 : b), "");
		EXPECT(tally_after(a, b) == (sgn(UW(b - a)) < 0), "");
		break;
	}
	default: {
		tally_sword v[4];
		tally_uword want = 0;
		size_t n = u8(in) % 5;
		op_name = "sum_clamped";
		for (size_t i = 0; i < 4; i++) {
			v[i] = pick_sword(in);
			if (i < n)
				want = UW(want + (v[i] < 0 ? 0 : UW(v[i])));
		}
		EXPECT(tally_sum_clamped(v, n) == want, "");
		EXPECT(tally_sum_clamped(NULL, n) == 0, "");
	}
	}
}

/* ---- tally_tree / tally_group ------------------------------------------------ */
#define NR_GROUPS 16
#define TREE_ITEMS 4
static struct {
	struct tally_tree *t;
	unsigned nr;
	uint64_t now, period;
	int locked; /* read-side sections held */
	unsigned char flags[TREE_ITEMS]; /* item flags (TALLY_GROUP_ITEM_GAUGE) */
} tr;

static struct grp {
	struct tally_group *g;
	int parent; /* index, -1 for the root */
	int live;
	tally_uword local[TREE_ITEMS];     /* mods on this group */
	tally_uword inherited[TREE_ITEMS]; /* handed over by destroyed children */
	tally_uword base_h[TREE_ITEMS];    /* hierarchical value at the last reset */
	tally_uword base_l[TREE_ITEMS];    /* local value at the last reset */
	int name; /* 0..3 for a name "n0".."n3" given at creation; -1: none */
} grp[NR_GROUPS];

static const char *const group_names[4] = {"n0", "n1", "n2", "n3"};

static uint64_t fuzz_clock(void *arg)
{
	EXPECT(arg == &tr, "the clock gets its arg");
	return tr.now;
}

static tally_uword hier(int i, unsigned item)
{
	tally_uword v = UW(grp[i].local[item] + grp[i].inherited[item]);
	for (int j = 0; j < NR_GROUPS; j++)
		if (grp[j].live && grp[j].parent == i)
			v = UW(v + hier(j, item));
	return v;
}

static int in_subtree(int j, int i)
{
	for (; j >= 0; j = grp[j].parent)
		if (j == i)
			return 1;
	return 0;
}

static int nr_children(int i)
{
	int n = 0;
	for (int j = 0; j < NR_GROUPS; j++)
		n += grp[j].live && grp[j].parent == i;
	return n;
}

static int count_child(struct tally_group *child, void *arg)
{
	int *n = (int *)arg;
	int found = 0;
	for (int j = 0; j < NR_GROUPS; j++)
		found |= grp[j].live && grp[j].g == child;
	EXPECT(found, "for_each_child gave a group that is not live");
	(*n)++;
	return 0;
}

static int never_called(struct tally_group *child, void *arg)
{
	(void)child;
	(void)arg;
	fail("for_each_child called fn on a destroyed group");
}

/* After a flush that covered group i: every value is exact. */
static void group_check_exact(int i)
{
	struct tally_group *g = grp[i].g;
	for (unsigned it = 0; it < tr.nr; it++) {
		tally_uword raw = hier(i, it), h = UW(raw - grp[i].base_h[it]);
		tally_uword l = UW(grp[i].local[it] - grp[i].base_l[it]);
		EXPECT(tally_group_read(g, it) == sgn(h), "group %d item %u: %lld, model %lld", i, it,
		       LL(tally_group_read(g, it)), LL(sgn(h)));
		EXPECT(tally_group_read_positive(g, it) == clamp0(h), "group %d item %u", i, it);
		EXPECT(tally_group_read_monotonic(g, it) == UW(raw + TALLY_MONOTONIC_BIAS),
		       "group %d item %u", i, it);
		EXPECT(tally_group_read_local(g, it) == sgn(l),
		       "group %d item %u: local %lld, model %lld", i, it,
		       LL(tally_group_read_local(g, it)), LL(sgn(l)));
	}
}

static void group_check_bad_items(int i)
{
	struct tally_group *g = grp[i].g;
	for (unsigned it = tr.nr; it < tr.nr + 2u; it++)
		EXPECT(tally_group_read(g, it) == 0 && tally_group_read_positive(g, it) == 0 &&
			       tally_group_read_monotonic(g, it) == 0 &&
			       tally_group_read_local(g, it) == 0,
		       "group %d: bad item %u reads non-zero", i, it);
	EXPECT(tally_group_read(g, 0u - 1u) == 0, "group %d", i);
}

static void tree_destroy_all(void)
{
	while (tr.locked) {
		tally_tree_read_unlock(tr.t);
		tr.locked--;
	}
	if (tr.t)
		tally_tree_destroy(tr.t);
	memset(&tr, 0, sizeof(tr));
	memset(grp, 0, sizeof(grp));
}

/* A live group, by index from the input; -1 if none. */
static int pick_group(struct input *in)
{
	uint8_t k = u8(in);
	for (int n = 0; n < NR_GROUPS; n++) {
		int j = (k + n) % NR_GROUPS;
		if (grp[j].live)
			return j;
	}
	return -1;
}

static void op_tree_create(struct input *in)
{
	struct tally_tree_opts o;
	uint8_t a = u8(in), b = u8(in), c = u8(in);
	static const unsigned batches[] = {0, 1, 2, 64, TALLY_RSTAT_BATCH_MAX};
	static const uint64_t periods[] = {0, 1, 1000, 2000000000ull, TALLY_RSTAT_PERIOD_MAX};
	op_name = "tree_create";
	memset(&o, 0, sizeof(o));
	o.nr_items = 1u + a % TREE_ITEMS;
	o.batch = batches[b % 5];
	o.period_ns = periods[c % 5];
	o.clock = fuzz_clock;
	o.clock_arg = &tr;
	uint8_t f = u8(in);
	unsigned char flags[TREE_ITEMS];
	for (unsigned it = 0; it < TREE_ITEMS; it++)
		flags[it] = (f >> it) & 1 ? TALLY_GROUP_ITEM_GAUGE : 0;
	if (f & 0x80)
		o.item_flags = flags;
	if (f == 0x7f) { /* an unknown flag */
		flags[0] = 0x2;
		o.item_flags = flags;
		errno = 0;
		EXPECT(tally_tree_create_opts(&o) == NULL && errno == EINVAL, "item flag 0x2");
		return;
	}
	if (a >= 240 || b >= 240 || c >= 240) { /* each bad field alone */
		if (a >= 240)
			o.nr_items = (a & 1) ? 0u : TALLY_RSTAT_ITEMS_MAX + 1u;
		else if (b >= 240)
			o.batch = TALLY_RSTAT_BATCH_MAX + 1u + (b & 3);
		else
			o.period_ns = TALLY_RSTAT_PERIOD_MAX + 1u + (c & 3);
		errno = 0;
		EXPECT(tally_tree_create_opts(&o) == NULL && errno == EINVAL, "nr %u batch %u period %llu",
		       o.nr_items, o.batch, ULL(o.period_ns));
		return;
	}
	tree_destroy_all();
	tr.t = tally_tree_create_opts(&o);
	EXPECT(tr.t != NULL, "nr %u batch %u period %llu: errno %d", o.nr_items, o.batch,
	       ULL(o.period_ns), errno);
	tr.nr = o.nr_items;
	tr.period = o.period_ns ? o.period_ns : TALLY_RSTAT_PERIOD_NS;
	for (unsigned it = 0; it < TREE_ITEMS; it++)
		tr.flags[it] = o.item_flags ? flags[it] : 0;
	for (int j = 0; j < NR_GROUPS; j++)
		grp[j].name = -1;
	grp[0].g = tally_tree_root(tr.t);
	grp[0].parent = -1;
	grp[0].live = 1;
	EXPECT(grp[0].g != NULL, "");
	EXPECT(tally_tree_period_ns(tr.t) == tr.period, "");
	EXPECT(tally_tree_flush_threshold(tr.t) > 0 && tally_tree_group_bytes(tr.t) > 0, "");
	EXPECT(tally_tree_nr_groups(tr.t) == 1, "");
	group_check_exact(0);
}

/* Destroy group i, checking every call on it in the read-side section
 * that holds it. */
static void op_group_destroy(int i, int in_section)
{
	struct tally_group *g = grp[i].g, *parent = tally_group_parent(g);
	tally_uword want[TREE_ITEMS], local[TREE_ITEMS];
	int rc, n = 0;
	op_name = "group_destroy";
	if (i == 0) {
		EXPECT(tally_group_destroy(g) == -EINVAL, "the root");
		return;
	}
	if (nr_children(i)) {
		EXPECT(tally_group_destroy(g) == -EBUSY, "group %d has children", i);
		return;
	}
	for (unsigned it = 0; it < tr.nr; it++) {
		want[it] = UW(hier(i, it) - grp[i].base_h[it]);
		local[it] = UW(grp[i].local[it] - grp[i].base_l[it]);
	}
	if (in_section)
		tally_tree_read_lock(tr.t);
	rc = tally_group_destroy(g);
	EXPECT(rc == 0, "group %d: rc %d", i, rc);
	grp[i].live = 0;
	for (unsigned it = 0; it < tr.nr; it++)
		grp[grp[i].parent].inherited[it] =
			UW(grp[grp[i].parent].inherited[it] + grp[i].local[it] + grp[i].inherited[it]);
	if (!in_section)
		goto done;
	/* Inside the section: an update counts, for the nearest live
	 * ancestor (the parent); every other change fails cleanly. */
	op_name = "destroyed_group_calls";
	EXPECT(tally_group_mod(g, 0, 5) == 0, "mod on a destroyed group");
	grp[grp[i].parent].inherited[0] = UW(grp[grp[i].parent].inherited[0] + 5);
	EXPECT(tally_group_destroy(g) == -EINVAL, "destroy twice");
	errno = 0;
	EXPECT(tally_group_create(g) == NULL && errno == EINVAL, "create under a destroyed group");
	errno = 0;
	tally_group_flush_force(g);
	EXPECT(errno == EINVAL, "flush_force of a destroyed group: errno %d", errno);
	errno = 0;
	tally_group_flush(g);
	EXPECT(errno == EINVAL, "flush of a destroyed group: errno %d", errno);
	EXPECT(!tally_group_needs_flush(g), "");
	EXPECT(tally_group_parent(g) == parent && tally_group_tree(g) == tr.t, "");
	EXPECT(tally_group_for_each_child(g, never_called, &n) == 0, "");
	/* Reads: the values as of the destroy, which flushed the group for
	 * the hand-over: its exact values then. */
	for (unsigned it = 0; it < tr.nr; it++) {
		EXPECT(tally_group_read(g, it) == sgn(want[it]), "destroyed group %d item %u: %lld, "
		       "model %lld", i, it, LL(tally_group_read(g, it)), LL(sgn(want[it])));
		EXPECT(tally_group_read_local(g, it) == sgn(local[it]), "destroyed group %d item %u",
		       i, it);
	}
	tally_tree_read_unlock(tr.t);
done:
	grp[i].g = NULL;
	memset(grp[i].local, 0, sizeof(grp[i].local));
	memset(grp[i].inherited, 0, sizeof(grp[i].inherited));
	memset(grp[i].base_h, 0, sizeof(grp[i].base_h));
	memset(grp[i].base_l, 0, sizeof(grp[i].base_l));
	grp[i].parent = -1;
	grp[i].name = -1;
}

/* Destroy the subtree at group i in one call; the model hands every
 * group's counts to i's parent. */
static void op_group_destroy_subtree(int i, int in_section)
{
	struct tally_group *g = grp[i].g;
	int p = grp[i].parent, rc, live = 0, gone = 0;
	op_name = "group_destroy_subtree";
	if (i == 0) {
		EXPECT(tally_group_destroy_subtree(g) == -EINVAL, "the root");
		return;
	}
	if (in_section)
		tally_tree_read_lock(tr.t);
	rc = tally_group_destroy_subtree(g);
	EXPECT(rc == 0, "group %d: rc %d", i, rc);
	for (int j = 0; j < NR_GROUPS; j++) {
		live += grp[j].live;
		if (!grp[j].live || !in_subtree(j, i))
			continue;
		for (unsigned it = 0; it < tr.nr; it++)
			grp[p].inherited[it] =
				UW(grp[p].inherited[it] + grp[j].local[it] + grp[j].inherited[it]);
		gone++;
	}
	for (int j = 0; j < NR_GROUPS; j++)
		if (grp[j].live && in_subtree(j, i))
			grp[j].live = 0;
	EXPECT(tally_tree_nr_groups(tr.t) == (unsigned long)(live - gone), "%lu groups, model %d",
	       tally_tree_nr_groups(tr.t), live - gone);
	if (in_section) {
		EXPECT(tally_group_destroy_subtree(g) == -EINVAL, "destroyed twice");
		EXPECT(tally_group_reset(g) == -EINVAL, "reset of a destroyed group");
		EXPECT(tally_group_mod(g, 0, 1) == 0, "mod of a destroyed group");
		grp[p].inherited[0] = UW(grp[p].inherited[0] + 1); /* the nearest live ancestor */
		tally_tree_read_unlock(tr.t);
	}
	for (int j = 0; j < NR_GROUPS; j++)
		if (!grp[j].live && grp[j].g) {
			grp[j].g = NULL;
			memset(grp[j].local, 0, sizeof(grp[j].local));
			memset(grp[j].inherited, 0, sizeof(grp[j].inherited));
			memset(grp[j].base_h, 0, sizeof(grp[j].base_h));
			memset(grp[j].base_l, 0, sizeof(grp[j].base_l));
			grp[j].parent = -1;
			grp[j].name = -1;
		}
}

/* Reset the subtree at group i (the tree, for the root through
 * tally_tree_reset): its since-reset values start from 0 but gauges'. */
static void op_group_reset(int i, int whole_tree)
{
	op_name = whole_tree ? "tree_reset" : "group_reset";
	if (whole_tree)
		i = 0;
	EXPECT((whole_tree ? tally_tree_reset(tr.t) : tally_group_reset(grp[i].g)) == 0, "");
	for (int j = 0; j < NR_GROUPS; j++) {
		if (!grp[j].live || !in_subtree(j, i))
			continue;
		for (unsigned it = 0; it < tr.nr; it++) {
			if (tr.flags[it] & TALLY_GROUP_ITEM_GAUGE)
				continue;
			grp[j].base_h[it] = hier(j, it);
			grp[j].base_l[it] = grp[j].local[it];
		}
	}
	/* The reset flushed its subtree: exact there. */
	for (int j = 0; j < NR_GROUPS; j++)
		if (grp[j].live && in_subtree(j, i))
			group_check_exact(j);
}

/* The live child of p named name k, or -1 (the model's find). */
static int model_find(int p, int k)
{
	for (int j = 0; j < NR_GROUPS; j++)
		if (grp[j].live && grp[j].parent == p && grp[j].name == k)
			return j;
	return -1;
}

static void op_tree(struct input *in)
{
	uint8_t k = u8(in);
	int i;
	if (k % 16 == 0 || (!tr.t && k % 16 != 15)) {
		op_tree_create(in);
		return;
	}
	switch (k % 16) {
	case 1: /* destroy the tree (rarely) */
		op_name = "tree_destroy";
		if (u8(in) % 4 == 0)
			tree_destroy_all();
		break;
	case 2:
	case 3: { /* create a group */
		int p = pick_group(in), slot = -1;
		op_name = "group_create";
		for (int j = 1; j < NR_GROUPS && slot < 0; j++)
			if (!grp[j].live && !grp[j].g)
				slot = j;
		if (p < 0 || slot < 0)
			break;
		if (k % 16 == 3) { /* with a name: one per parent */
			int name = u8(in) % 4, other = model_find(p, name);
			op_name = "group_create_named";
			errno = 0;
			grp[slot].g = tally_group_create_named(grp[p].g, group_names[name]);
			if (other >= 0) {
				EXPECT(grp[slot].g == NULL && errno == EEXIST, "name n%d taken: errno %d",
				       name, errno);
				break;
			}
			EXPECT(grp[slot].g != NULL, "errno %d", errno);
			EXPECT(!strcmp(tally_group_name(grp[slot].g), group_names[name]), "");
			grp[slot].name = name;
		} else {
			grp[slot].g = tally_group_create(grp[p].g);
			grp[slot].name = -1;
		}
		EXPECT(grp[slot].g != NULL, "errno %d", errno);
		grp[slot].parent = p;
		grp[slot].live = 1;
		EXPECT(tally_group_parent(grp[slot].g) == grp[p].g, "");
		EXPECT(tally_group_tree(grp[slot].g) == tr.t, "");
		break;
	}
	case 4: {
		uint8_t h;
		i = pick_group(in);
		h = u8(in);
		if (i < 0)
			break;
		if (h & 2)
			op_group_destroy_subtree(i, h % 2);
		else
			op_group_destroy(i, h % 2);
		break;
	}
	case 5:
	case 6:
	case 7: { /* mod, repeated; bad items refused */
		unsigned it, reps;
		tally_sword d;
		i = pick_group(in);
		it = pick_item(in, tr.nr);
		d = pick_sword(in);
		reps = 1u + u8(in) % 8;
		op_name = "group_mod";
		if (i < 0)
			break;
		for (unsigned r = 0; r < reps; r++) {
			int rc = tally_group_mod(grp[i].g, it, d);
			if (it >= tr.nr) {
				EXPECT(rc == -EINVAL, "item %u: rc %d", it, rc);
			} else {
				EXPECT(rc == 0, "group %d item %u: rc %d", i, it, rc);
				grp[i].local[it] = UW(grp[i].local[it] + UW(d));
			}
		}
		break;
	}
	case 8: /* a forced flush: its subtree is exact */
		i = pick_group(in);
		op_name = "group_flush_force";
		if (i < 0)
			break;
		tally_group_flush_force(grp[i].g);
		for (int j = 0; j < NR_GROUPS; j++)
			if (grp[j].live && in_subtree(j, i))
				group_check_exact(j);
		break;
	case 9: { /* flushes that may or may not run; the clock moves */
		uint8_t h = u8(in);
		i = pick_group(in);
		op_name = "group_flush";
		tr.now += (h & 0xf0) ? (uint64_t)(h >> 4) * (tr.period / 4u + 1u) : 0;
		if (i < 0)
			break;
		(void)tally_group_needs_flush(grp[i].g);
		if (h & 1)
			tally_group_flush(grp[i].g);
		else
			tally_group_flush_ratelimited(grp[i].g);
		break;
	}
	case 10: /* the periodic flush: the root, all exact */
		op_name = "tree_flush_periodic";
		tally_tree_flush_periodic(tr.t);
		for (int j = 0; j < NR_GROUPS; j++)
			if (grp[j].live)
				group_check_exact(j);
		break;
	case 11: { /* structure */
		int n = 0, live = 0;
		i = pick_group(in);
		op_name = "group_structure";
		if (i < 0)
			break;
		EXPECT(tally_group_for_each_child(grp[i].g, count_child, &n) == 0, "");
		EXPECT(n == nr_children(i), "group %d: %d children, model %d", i, n, nr_children(i));
		EXPECT(tally_group_parent(grp[i].g) == (i ? grp[grp[i].parent].g : NULL), "");
		EXPECT(tally_group_tree(grp[i].g) == tr.t, "");
		EXPECT(tally_group_for_each_child(grp[i].g, NULL, NULL) == -EINVAL, "");
		for (int j = 0; j < NR_GROUPS; j++)
			live += grp[j].live;
		EXPECT(tally_tree_nr_groups(tr.t) == (unsigned long)live, "%lu groups, model %d",
		       tally_tree_nr_groups(tr.t), live);
		group_check_bad_items(i);
		break;
	}
	case 12: { /* the flusher thread: start, refuse a second, stop */
		uint8_t h = u8(in);
		op_name = "tree_flusher";
		if (h % 4 == 0) {
			EXPECT(tally_tree_start_flusher(tr.t, TALLY_RSTAT_PERIOD_MAX + 1u) == -EINVAL, "");
			break;
		}
		EXPECT(tally_tree_start_flusher(tr.t, 3600000000000ull) == 0, "");
		EXPECT(tally_tree_start_flusher(tr.t, 3600000000000ull) == -EBUSY, "");
		tally_tree_stop_flusher(tr.t);
		tally_tree_stop_flusher(tr.t);
		break;
	}
	case 14: { /* reset, or find by name */
		uint8_t h = u8(in);
		i = pick_group(in);
		if (i < 0)
			break;
		if (h % 4 < 2) {
			op_group_reset(i, h % 4 == 1);
			break;
		}
		int name = (h >> 2) % 5, want = name < 4 ? model_find(i, name) : -1;
		struct tally_group *got;
		op_name = "group_find_child";
		errno = 0;
		got = tally_group_find_child(grp[i].g, name < 4 ? group_names[name] : "nope");
		EXPECT(got == (want >= 0 ? grp[want].g : NULL), "group %d name %d: model %d", i, name,
		       want);
		EXPECT(got || errno == ENOENT, "errno %d", errno);
		break;
	}
	case 13: /* nested read-side sections */
		op_name = "tree_read_lock";
		if (u8(in) % 2 && tr.locked < 3) {
			tally_tree_read_lock(tr.t);
			tr.locked++;
		} else if (tr.locked) {
			tally_tree_read_unlock(tr.t);
			tr.locked--;
		}
		break;
	default: { /* NULL */
		uint8_t s = u8(in);
		struct tally_group *root = tr.t ? grp[0].g : NULL;
		errno = 0;
		switch (s % 30) {
		case 22: op_name = "group_reset(NULL)";
			EXPECT(tally_group_reset(NULL) == -EINVAL && tally_tree_reset(NULL) == -EINVAL, "");
			break;
		case 23: op_name = "group_create_named(NULL)";
			EXPECT(tally_group_create_named(NULL, "a") == NULL && errno == EINVAL, "");
			if (root) {
				errno = 0;
				EXPECT(tally_group_create_named(root, NULL) == NULL && errno == EINVAL, "");
			}
			break;
		case 24: op_name = "group_create_named(bad name)";
			if (root) {
				static const char *const bad[] = {"", "a/b", "\xc3", "/"};
				const char *name = bad[s & 3];
				EXPECT(tally_group_create_named(root, name) == NULL && errno == EINVAL,
				       "name %d", s & 3);
			}
			break;
		case 25: op_name = "group_find_child(NULL)";
			EXPECT(tally_group_find_child(NULL, "a") == NULL && errno == EINVAL, "");
			if (root) {
				errno = 0;
				EXPECT(tally_group_find_child(root, NULL) == NULL && errno == EINVAL, "");
			}
			break;
		case 26: op_name = "group_destroy_subtree(NULL)";
			EXPECT(tally_group_destroy_subtree(NULL) == -EINVAL, "");
			break;
		case 27: op_name = "tree_register_thread(NULL)";
			EXPECT(tally_tree_register_thread(NULL) == -EINVAL, "");
			tally_tree_unregister_thread(NULL);
			break;
		case 0: op_name = "tree_create_opts(NULL)";
			EXPECT(tally_tree_create_opts(NULL) == NULL && errno == EINVAL, "");
			break;
		case 1: op_name = "tree_create(0)";
			EXPECT(tally_tree_create(0) == NULL && errno == EINVAL, "");
			break;
		case 2: op_name = "tree_root(NULL)"; EXPECT(tally_tree_root(NULL) == NULL, ""); break;
		case 3: op_name = "tree_flush_threshold(NULL)";
			EXPECT(tally_tree_flush_threshold(NULL) == 0 && tally_tree_period_ns(NULL) == 0, "");
			break;
		case 4: op_name = "tree_group_bytes(NULL)";
			EXPECT(tally_tree_group_bytes(NULL) == 0 && tally_tree_nr_groups(NULL) == 0, "");
			break;
		case 5: op_name = "tree_read_lock(NULL)"; tally_tree_read_lock(NULL); break;
		case 6: op_name = "tree_read_unlock(NULL)"; tally_tree_read_unlock(NULL); break;
		case 7: op_name = "group_create(NULL)";
			EXPECT(tally_group_create(NULL) == NULL && errno == EINVAL, "");
			break;
		case 8: op_name = "group_destroy(NULL)"; EXPECT(tally_group_destroy(NULL) == -EINVAL, ""); break;
		case 9: op_name = "group_parent(NULL)";
			EXPECT(tally_group_parent(NULL) == NULL && tally_group_tree(NULL) == NULL, "");
			break;
		case 10: op_name = "group_for_each_child(NULL)";
			EXPECT(tally_group_for_each_child(NULL, count_child, NULL) == -EINVAL, "");
			if (root)
				EXPECT(tally_group_for_each_child(root, NULL, NULL) == -EINVAL, "");
			break;
		case 11: op_name = "group_mod(NULL)"; EXPECT(tally_group_mod(NULL, 0, 1) == -EINVAL, ""); break;
		case 12: op_name = "group_needs_flush(NULL)"; EXPECT(!tally_group_needs_flush(NULL), ""); break;
		case 13: op_name = "group_flush(NULL)";
			tally_group_flush(NULL);
			EXPECT(errno == EINVAL, "");
			break;
		case 14: op_name = "group_flush_force(NULL)";
			tally_group_flush_force(NULL);
			EXPECT(errno == EINVAL, "");
			break;
		case 15: op_name = "group_flush_ratelimited(NULL)";
			tally_group_flush_ratelimited(NULL);
			EXPECT(errno == EINVAL, "");
			break;
		case 16: op_name = "tree_flush_periodic(NULL)";
			tally_tree_flush_periodic(NULL);
			EXPECT(errno == EINVAL, "");
			break;
		case 17: op_name = "group_read(NULL)";
			EXPECT(tally_group_read(NULL, 0) == 0 && tally_group_read_positive(NULL, 0) == 0 &&
				       tally_group_read_monotonic(NULL, 0) == 0 &&
				       tally_group_read_local(NULL, 0) == 0, "");
			break;
		case 18: op_name = "tree_start_flusher(NULL)";
			EXPECT(tally_tree_start_flusher(NULL, 0) == -EINVAL, "");
			break;
		case 19: op_name = "tree_stop_flusher(NULL)"; tally_tree_stop_flusher(NULL); break;
		case 20: op_name = "tree_destroy(NULL)"; tally_tree_destroy(NULL); break;
		default: op_name = "tree_create(huge)";
			EXPECT(tally_tree_create(TALLY_RSTAT_ITEMS_MAX + 1u) == NULL && errno == EINVAL, "");
			break;
		}
	}
	}
}

/* ---- tally_hist -------------------------------------------------------------
 * The model: the layout's options and every (value, n) recorded since init
 * (up to HIST_MAX entries; further records are refused by the fuzzer, not
 * the library), a reset mark, and its own bucket function. */
#define HIST_MAX 512
static struct {
	int live;
	struct tally_hist h;
	uint64_t lowest, highest; /* log-linear */
	unsigned p;
	uint64_t bounds[8];
	unsigned nr_bounds;
	int64_t v[HIST_MAX];
	uint64_t n[HIST_MAX];
	unsigned nr, reset_at; /* entries; the first after the last reset */
} hm;

/* The model's bucket position of v (written apart from hist/layout.h). */
static unsigned hist_model_pos(uint64_t v)
{
	unsigned e = 0, sh, i;
	uint64_t idx, first;
	if (hm.nr_bounds) {
		for (i = 0; i < hm.nr_bounds; i++)
			if (v <= hm.bounds[i])
				return i + 1;
		return hm.nr_bounds + 1;
	}
	if (v < hm.lowest)
		return 0;
	if (v > hm.highest) {
		uint64_t x = hm.highest;
		while (x >> (e + 1))
			e++;
		sh = e > hm.p ? e - hm.p : 0;
		idx = ((uint64_t)sh << hm.p) + (x >> sh);
		e = 0;
		x = hm.lowest;
		while (x >> (e + 1))
			e++;
		sh = e > hm.p ? e - hm.p : 0;
		first = ((uint64_t)sh << hm.p) + (x >> sh);
		return (unsigned)(idx - first) + 2;
	}
	while (v >> (e + 1))
		e++;
	sh = e > hm.p ? e - hm.p : 0;
	idx = ((uint64_t)sh << hm.p) + (v >> sh);
	e = 0;
	{
		uint64_t x = hm.lowest;
		while (x >> (e + 1))
			e++;
		sh = e > hm.p ? e - hm.p : 0;
		first = ((uint64_t)sh << hm.p) + (x >> sh);
	}
	return (unsigned)(idx - first) + 1;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* A snapshot (since reset, or raw) against the model; q checked too. */
static void hist_check(int raw, double q)
{
	struct tally_hist_snap s;
	unsigned i, from = raw ? 0 : hm.reset_at;
	uint64_t count = 0, sum = 0;
	EXPECT(tally_hist_snap_init(&s, &hm.h) == 0, "");
	EXPECT((raw ? tally_hist_snapshot_raw(&hm.h, &s) : tally_hist_snapshot(&hm.h, &s)) == 0, "");
	{
		uint64_t *want = (uint64_t *)calloc(s.nr_buckets, sizeof(uint64_t));
		EXPECT(want != NULL, "");
		for (i = from; i < hm.nr; i++) {
			unsigned j = hist_model_pos((uint64_t)hm.v[i]);
			EXPECT(j < s.nr_buckets, "value %lld: position %u of %u", LL(hm.v[i]), j,
			       s.nr_buckets);
			want[j] += hm.n[i];
			count += hm.n[i];
			sum += (uint64_t)hm.v[i] * hm.n[i];
		}
		for (i = 0; i < s.nr_buckets; i++)
			EXPECT(s.counts[i] == want[i], "bucket %u: %llu, model %llu", i,
			       (unsigned long long)s.counts[i], (unsigned long long)want[i]);
		free(want);
	}
	EXPECT(s.count == count && s.sum == sum, "count %llu sum %llu, model %llu %llu",
	       (unsigned long long)s.count, (unsigned long long)s.sum,
	       (unsigned long long)count, (unsigned long long)sum);
	if (!(q >= 0 && q <= 1) || !count) {
		EXPECT(isnan(tally_hist_quantile(&s, q)), "q %g", q);
	} else if (!hm.nr_bounds) {
		/* the exact sample quantile: rank ceil(q count) in sorted order */
		int64_t *sorted = (int64_t *)malloc((hm.nr - from) * sizeof(int64_t));
		uint64_t rank = (uint64_t)ceil(q * (double)count), cum = 0;
		double got = tally_hist_quantile(&s, q), x = 0;
		unsigned nv = hm.nr - from;
		EXPECT(sorted != NULL, "");
		memcpy(sorted, hm.v + from, nv * sizeof(int64_t));
		/* the n of each value: sort (value, n) by value through indexes */
		qsort(sorted, nv, sizeof(int64_t), cmp_i64);
		if (rank < 1)
			rank = 1;
		for (i = 0; i < nv && cum < rank; i++) {
			uint64_t n = 0;
			for (unsigned k = from; k < hm.nr; k++)
				if (hm.v[k] == sorted[i])
					n += hm.n[k];
			/* equal values appear once per entry in sorted: count them once */
			if (i && sorted[i] == sorted[i - 1])
				continue;
			cum += n;
			x = (double)sorted[i];
		}
		if (x >= (double)hm.lowest && x <= (double)hm.highest)
			EXPECT(fabs(got - x) <= ldexp(x, -(int)hm.p - 1), "q %g: %f, exact %f", q,
			       got, x);
		else
			EXPECT(got == (double)(x < (double)hm.lowest ? hm.lowest : hm.highest),
			       "q %g outside the range: %f", q, got);
		free(sorted);
	}
	tally_hist_snap_destroy(&s);
}

static int64_t pick_hist_value(struct input *in)
{
	uint8_t k = u8(in);
	int64_t small = u8(in);
	switch (k % 8) {
	case 0: return small;
	case 1: return -1 - small;
	case 2: return (int64_t)hm.lowest - small % 3 + 1;
	case 3: return (int64_t)(hm.nr_bounds ? hm.bounds[small % hm.nr_bounds] : hm.highest) +
		       small % 3 - 1;
	case 4: return INT64_MAX - small;
	case 5: return (int64_t)1 << (u8(in) % 63);
	default: return (int64_t)(bytes(in, 5));
	}
}

static void op_hist(struct input *in)
{
	uint8_t k = u8(in);
	switch (k % 8) {
	case 0: { /* init: log-linear or bounds, sometimes invalid */
		struct tally_hist_opts o;
		struct tally_hist fresh;
		uint64_t b[8];
		unsigned nb = 0, i;
		int want;
		memset(&o, 0, sizeof(o));
		op_name = "hist_init";
		if (u8(in) % 3 == 0) {
			nb = u8(in) % 9; /* 0: invalid */
			for (i = 0; i < nb; i++)
				b[i] = (i ? b[i - 1] : 0) + u8(in) % 100; /* maybe not increasing */
			o.bounds = b;
			o.nr_bounds = nb;
			want = nb ? 0 : -EINVAL;
			for (i = 1; i < nb; i++)
				if (b[i] <= b[i - 1])
					want = -EINVAL;
		} else {
			o.lowest = (uint64_t)u8(in) * (u8(in) % 2 ? 1000 : 1);
			o.highest = o.lowest + bytes(in, 4);
			o.precision = u8(in) % 16; /* 15: invalid */
			if (u8(in) % 8 == 0)
				o.lowest = o.highest + 1; /* invalid unless both wrap to 0 */
			want = o.precision > TALLY_HIST_PRECISION_MAX || o.lowest > o.highest ? -EINVAL : 0;
		}
		EXPECT(tally_hist_init(&fresh, &o) == want, "opts");
		if (want)
			break;
		if (hm.live)
			tally_hist_destroy(&hm.h);
		hm.h = fresh;
		hm.live = 1;
		hm.nr = hm.reset_at = 0;
		hm.nr_bounds = nb;
		memcpy(hm.bounds, b, nb * sizeof(uint64_t));
		hm.lowest = o.lowest;
		hm.highest = o.highest;
		hm.p = o.precision ? o.precision : TALLY_HIST_PRECISION_DEFAULT;
		if (!nb && !o.lowest && !o.highest) {
			hm.lowest = TALLY_HIST_LOWEST_DEFAULT;
			hm.highest = TALLY_HIST_HIGHEST_DEFAULT;
		}
		break;
	}
	case 1:
	case 2: { /* record, record_n */
		int64_t v = pick_hist_value(in);
		uint64_t n = 1;
		int r, want = v < 0 ? -EINVAL : 0;
		if (!hm.live || hm.nr == HIST_MAX)
			break;
		if (k % 8 == 2) {
			uint8_t c = u8(in);
			n = c % 4 == 0 ? 0 : c % 4 == 1 ? TALLY_HIST_N_MAX + (c >> 7) : c;
			if (n > TALLY_HIST_N_MAX)
				want = -EINVAL;
			op_name = "hist_record_n";
			r = tally_hist_record_n(&hm.h, v, n);
		} else {
			op_name = "hist_record";
			r = tally_hist_record(&hm.h, v);
		}
		EXPECT(r == want, "record %lld x %llu: %d", LL(v), (unsigned long long)n, r);
		if (!want && n) {
			hm.v[hm.nr] = v;
			hm.n[hm.nr++] = n;
		}
		break;
	}
	case 3:
	case 4: { /* snapshot (since reset or raw) and a quantile */
		uint8_t c = u8(in);
		double q = c < 8 ? (c == 0 ? NAN : c == 1 ? -0.5 : 1.5) : (double)(c - 8) / 247.0;
		if (!hm.live)
			break;
		op_name = k % 8 == 3 ? "hist_snapshot" : "hist_snapshot_raw";
		hist_check(k % 8 == 4, q);
		break;
	}
	case 5: /* reset */
		if (!hm.live)
			break;
		op_name = "hist_reset";
		EXPECT(tally_hist_reset(&hm.h) == 0, "");
		hm.reset_at = hm.nr;
		break;
	case 6: { /* delta of two snapshots around records */
		struct tally_hist_snap a, b, d;
		if (!hm.live)
			break;
		op_name = "hist_snap_delta";
		EXPECT(tally_hist_snap_init(&a, &hm.h) == 0 && tally_hist_snap_init(&b, &hm.h) == 0 &&
			       tally_hist_snap_init(&d, &hm.h) == 0,
		       "");
		EXPECT(tally_hist_snapshot_raw(&hm.h, &a) == 0, "");
		if (hm.nr < HIST_MAX && tally_hist_record(&hm.h, 7) == 0) {
			hm.v[hm.nr] = 7;
			hm.n[hm.nr++] = 1;
		}
		EXPECT(tally_hist_snapshot_raw(&hm.h, &b) == 0, "");
		EXPECT(tally_hist_snap_delta(&d, &b, &a) == 0, "");
		EXPECT(d.count == b.count - a.count && d.sum == b.sum - a.sum, "");
		EXPECT(tally_hist_snap_delta(&d, &a, &b) == (b.count > a.count ? -ERANGE : 0), "");
		EXPECT(tally_hist_snap_merge(&d, &a) == 0, "");
		tally_hist_snap_destroy(&a);
		tally_hist_snap_destroy(&b);
		tally_hist_snap_destroy(&d);
		break;
	}
	default: /* NULL everywhere */
		switch (u8(in) % 8) {
		case 0: op_name = "hist_init(NULL)"; EXPECT(tally_hist_init(NULL, NULL) == -EINVAL, ""); break;
		case 1: op_name = "hist_record(NULL)"; EXPECT(tally_hist_record(NULL, 1) == -EINVAL, ""); break;
		case 2: op_name = "hist_record_n(NULL)";
			EXPECT(tally_hist_record_n(NULL, 1, 1) == -EINVAL, "");
			break;
		case 3: op_name = "hist_reset(NULL)"; EXPECT(tally_hist_reset(NULL) == -EINVAL, ""); break;
		case 4: op_name = "hist_snapshot(NULL)";
			EXPECT(tally_hist_snapshot(NULL, NULL) == -EINVAL, "");
			break;
		case 5: op_name = "hist_quantile(NULL)"; EXPECT(isnan(tally_hist_quantile(NULL, 0.5)), ""); break;
		case 6: op_name = "hist_snap_merge(NULL)";
			EXPECT(tally_hist_snap_merge(NULL, NULL) == -EINVAL, "");
			break;
		default: op_name = "hist_destroy(NULL)"; tally_hist_destroy(NULL); break;
		}
	}
}

/* ---- one input -------------------------------------------------------------- */
static void reset_all(void)
{
	for (int i = 0; i < NR_COUNTERS; i++) {
		if (ctr[i].live)
			tally_counter_destroy(&ctr[i].c);
		ctr[i].live = 0;
	}
	if (xv.live)
		tally_vec_destroy(&xv.v);
	xv.live = 0;
	for (int i = 0; i < NR_VECS; i++) {
		if (vec[i].live)
			tally_vec_destroy(&vec[i].v);
		vec[i].live = 0;
	}
	if (fl.live)
		tally_inflight_destroy(&fl.f);
	fl.live = 0;
	tree_destroy_all();
	if (hm.live)
		tally_hist_destroy(&hm.h);
	hm.live = 0;
	memset(&cost, 0, sizeof(cost));
	tally_cost_init(&cost.c);
	memset(&sampler, 0, sizeof(sampler));
	sampler_last = 0;
}

static void run_one(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	step = 0;
	op_name = "start";
	reset_all();
	while (in.n && step < 4096) {
		uint8_t op = u8(&in);
		step++;
		switch (op % 7) {
		case 0: op_counter(&in); break;
		case 1: op_vec(&in); break;
		case 2: op_cost(&in); break;
		case 3: op_inflight(&in); break;
		case 4: op_monotonic(&in); break;
		case 5: op_hist(&in); break;
		default: op_tree(&in); break;
		}
		if (verbose)
			fprintf(stderr, "fuzz_model: step %u: %s\n", step, op_name);
	}
	reset_all();
}

static void setup(void)
{
	const char *v = getenv("TALLY_FUZZ_VERBOSE");
	verbose = v && *v && *v != '0';
	/* The fuzzing thread makes read-side sections and destroys groups:
	 * it is registered with the default flavor for the whole run. */
	urcu_memb_register_thread();
}

#if !TALLY_FUZZ_STANDALONE
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run_one(data, size);
	return 0;
}
#else
/* ---- the standalone driver: files, folders, then random inputs ---------------- */
#include <dirent.h>
#include <sys/stat.h>

static unsigned long ran;

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "fuzz_model: cannot read %s\n", path);
		exit(2);
	}
	buf = (uint8_t *)malloc((size_t)n + 1u);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "fuzz_model: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	if (verbose)
		fprintf(stderr, "fuzz_model: %s\n", path);
	run_one(buf, (size_t)n);
	free(buf);
	ran++;
}

static void run_path(const char *path)
{
	struct stat st;
	if (stat(path, &st)) {
		fprintf(stderr, "fuzz_model: no such file or folder: %s\n", path);
		exit(2);
	}
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		if (!d)
			exit(2);
		while ((e = readdir(d))) {
			char sub[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			run_path(sub);
		}
		closedir(d);
	} else {
		run_file(path);
	}
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
	const char *r = getenv("TALLY_FUZZ_RUNS"), *s = getenv("TALLY_FUZZ_SEED");
	unsigned long runs = r ? strtoul(r, NULL, 10) : 2000ul;
	uint64_t seed = s ? strtoull(s, NULL, 10) : 1u;
	static uint8_t buf[1024];
	setup();
	for (int i = 1; i < argc; i++)
		run_path(argv[i]);
	for (unsigned long n = 0; n < runs; n++) {
		size_t len = (size_t)(splitmix(&seed) % sizeof(buf));
		for (size_t j = 0; j < len; j++)
			buf[j] = (uint8_t)splitmix(&seed);
		run_one(buf, len);
		ran++;
	}
	printf("fuzz_model: %lu inputs passed\n", ran);
	return 0;
}
#endif
