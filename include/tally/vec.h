/*
 * tally/vec.h - tally_vec: an N-item stat vector with per-CPU diffs folded
 * into per-item globals past a threshold (kernel mm/vmstat.c), plus what
 * programs need around it: per-item thresholds, an exact-only mode, reset,
 * snapshots, multi-item updates seen whole, item names.
 *
 *   struct tally_vec v;
 *   tally_vec_init(&v, NR_ITEMS, 0);    // threshold 0: vmstat's default
 *   tally_vec_mod(&v, ITEM, -3);        // any thread, wait-free
 *   tally_vec_inc(&v, ITEM);
 *   tally_vec_read(&v, ITEM);           // clamped global, O(1)
 *   tally_vec_read_monotonic(&v, ITEM); // raw global, for deltas
 *   tally_vec_read_exact(&v, ITEM);     // global + every CPU's diff
 *   tally_vec_sum(&v, ITEM);            // the same, unsigned: event counters
 *   tally_vec_destroy(&v);
 *
 *   // Byte counters, names, multi-item updates:
 *   static const int thr[NR] = {[BYTES_READ] = 800000, [CURR_BYTES] = TALLY_VEC_EXACT};
 *   struct tally_vec_opts o = {NR, 0, thr, TALLY_VEC_MULTI, names};
 *   tally_vec_init_opts(&v, &o);
 *   struct tally_vec_delta hit[2] = {{CMD_GET, 1}, {GET_HITS, 1}};
 *   tally_vec_mod_multi(&v, hit, 2);    // a snapshot sees both or neither
 *   tally_vec_snapshot(&v, out, NR);    // every item, one pass over CPUs
 *
 * Fold rules, as the kernel's (t = the item's threshold):
 *   mod(d): x = diff + d; if |x| > t: global += x, diff = 0.
 *   inc:    v = diff + 1; if v > t:   global += v + t/2, diff = -t/2.
 *   dec:    v = diff - 1; if v < -t:  global += v - t/2, diff = t/2.
 * The overstep keeps a run in one direction folding half as often. An
 * item whose threshold is TALLY_VEC_EXACT never folds: updates touch only
 * the CPU's words, and its O(1) readers return the exact value (O(CPUs)).
 *
 * As in tally_counter, per CPU and item a never-reset word w and a base b
 * (diff = w - b); a fold (tally__pcpu_fold) moves diff into the global and
 * advances b by CAS, so the exact value (the sum of every w) never depends
 * on folds. With TALLY_VEC_MULTI each CPU and item also has two bank words
 * g[0], g[1] that multi-item updates add to (through the same per-CPU add
 * as single updates), each with its own base, folded past the item's threshold as
 * mod folds; the CPU's value of the item is w + g[0] + g[1], still never
 * reset, and exact sums use that. (So for a MULTI vec the O(1) readers'
 * bound is three times the threshold per CPU slot: each word's diff stays
 * within it on its own.)
 *
 * Values come in two kinds:
 *   raw:          everything ever added, modulo 2^W; never moved by a
 *                 reset (read_monotonic, snapshot). For deltas, exporters.
 *   since reset:  raw minus the item's reset baseline (read, read_exact,
 *                 sum, snapshot_since_reset). Without a reset, the same.
 */
#ifndef TALLY_VEC_H
#define TALLY_VEC_H

#include <tally/monotonic.h>
#include <tally/pcpu.h>

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest threshold accepted; items per vector. */
#define TALLY_VEC_THRESHOLD_MAX (1 << 20)
#define TALLY_VEC_ITEMS_MAX (1u << 16)

/* A per-item threshold (tally_vec_opts.thresholds) meaning: never fold. */
#define TALLY_VEC_EXACT (-1)

/* tally_vec_opts.flags */
/* No item folds (as if every threshold were TALLY_VEC_EXACT). */
#define TALLY_VEC_EXACT_ONLY 0x1u
/* Multi-item updates (tally_vec_mod_multi) and snapshots that see each
 * one whole: four more words per CPU and item; the O(1) readers' bound
 * triples (3 * threshold per CPU slot). */
#define TALLY_VEC_MULTI 0x2u
#define TALLY__VEC_FLAGS (TALLY_VEC_EXACT_ONLY | TALLY_VEC_MULTI)

/*
 * struct tally_vec_opts - everything tally_vec_init_opts() takes.
 * nr_items:   1..TALLY_VEC_ITEMS_MAX.
 * threshold:  0..TALLY_VEC_THRESHOLD_MAX, the items' default threshold
 *             (0: tally_vec_default_threshold()).
 * thresholds: NULL, or nr_items entries: 1..TALLY_VEC_THRESHOLD_MAX, 0 for
 *             the default above, or TALLY_VEC_EXACT (that item never
 *             folds). Copied.
 * flags:      TALLY_VEC_EXACT_ONLY (then threshold must be 0 and
 *             thresholds NULL), TALLY_VEC_MULTI.
 * names:      NULL, or nr_items entries, each a string or NULL (unnamed).
 *             Copied: the caller's strings may go away after init. Not
 *             validated here (any bytes but NUL); exporters check them.
 */
struct tally_vec_opts {
	unsigned nr_items;
	int threshold;
	const int *thresholds;
	unsigned flags;
	const char *const *names;
};

/* One item's part of a multi-item update (tally_vec_mod_multi). */
struct tally_vec_delta {
	unsigned item;
	tally_sword delta;
};

/* A CPU's words for one item: w, b, then (TALLY_VEC_MULTI) the banks
 * g[0], g[1] and their bases gb[0], gb[1]. */
struct tally__vec_pcpu {
	tally_uword w; /* never reset; written by tally__pcpu_add only */
	tally_uword b; /* value - diff; changed by CAS only */
};

struct tally_vec {
	/* private: use the tally_vec_* calls */
	tally_uword *tally__global;  /* per item: everything folded */
	tally_uword *tally__base;    /* per item: reset baseline (raw) */
	tally_uword *tally__scratch; /* per item: reset's cut, under the lock */
	int *tally__thr;             /* per item: threshold, or TALLY_VEC_EXACT */
	char **tally__names;         /* NULL, or per item: a copy or NULL */
	unsigned tally__nr_items;
	int tally__threshold;        /* the items' default */
	unsigned tally__flags;
	unsigned tally__phase;       /* MULTI: the bank updates add to */
	size_t tally__istride;       /* bytes per item in a CPU's chunk */
	pthread_mutex_t tally__lock; /* snapshots of MULTI vecs, resets */
	struct tally__pcpu tally__pcpu;
};

/* fls(): 1-based index of the highest set bit, 0 for 0. */
TALLY__INLINE int tally__fls(unsigned long x)
{
	return x ? (int)(sizeof(x) * 8) - __builtin_clzl(x) : 0;
}

/*
 * tally_vec_default_threshold - calculate_normal_threshold():
 * min(125, 2 * fls(cpus) * (1 + fls(memory in 128 MiB units))).
 */
static inline int tally_vec_default_threshold(void)
{
	unsigned long mem128 = 0;
	int t;
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
	{
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		if (pages > 0 && psz > 0)
			mem128 = (unsigned long)pages / ((128ul << 20) / (unsigned long)psz);
	}
#endif
	t = 2 * tally__fls(tally__nr_cpu_slots()) * (1 + tally__fls(mem128));
	return t < TALLY_VEC_MAX_THRESHOLD ? t : TALLY_VEC_MAX_THRESHOLD;
}

/* Is the input of tally_vec_init_opts() valid? */
static inline int tally__vec_opts_ok(const struct tally_vec_opts *o)
{
	unsigned i;
	if (!o || !o->nr_items || o->nr_items > TALLY_VEC_ITEMS_MAX || o->threshold < 0 ||
	    o->threshold > TALLY_VEC_THRESHOLD_MAX || (o->flags & ~TALLY__VEC_FLAGS))
		return 0;
	if ((o->flags & TALLY_VEC_EXACT_ONLY) && (o->threshold || o->thresholds))
		return 0;
	if (o->thresholds)
		for (i = 0; i < o->nr_items; i++)
			if (o->thresholds[i] != TALLY_VEC_EXACT &&
			    (o->thresholds[i] < 0 || o->thresholds[i] > TALLY_VEC_THRESHOLD_MAX))
				return 0;
	return 1;
}

/* Copy names into one block: nr pointers, then the strings. */
static inline char **tally__vec_copy_names(const char *const *names, unsigned nr)
{
	size_t len = (size_t)nr * sizeof(char *);
	unsigned i;
	char **out, *p;
	for (i = 0; i < nr; i++)
		if (names[i])
			len += strlen(names[i]) + 1;
	out = (char **)malloc(len);
	if (!out)
		return NULL;
	p = (char *)(out + nr);
	for (i = 0; i < nr; i++) {
		out[i] = NULL;
		if (names[i]) {
			size_t n = strlen(names[i]) + 1;
			memcpy(p, names[i], n);
			out[i] = p;
			p += n;
		}
	}
	return out;
}

/*
 * tally_vec_init_opts - set v up as o says, every item 0.
 * Returns 0, -EINVAL (o invalid, see struct tally_vec_opts; v untouched)
 * or -ENOMEM (v untouched). Not concurrent with any other call on v.
 */
static inline int tally_vec_init_opts(struct tally_vec *v, const struct tally_vec_opts *o)
{
	unsigned i, nr;
	int t, err = -ENOMEM;
	size_t words;
	struct tally_vec n;
	if (tally__bad(!v || !tally__vec_opts_ok(o)))
		return -EINVAL;
	memset(&n, 0, sizeof(n));
	nr = o->nr_items;
	t = (o->flags & TALLY_VEC_EXACT_ONLY) ? TALLY_VEC_EXACT
	    : o->threshold			   ? o->threshold
						   : tally_vec_default_threshold();
	n.tally__nr_items = nr;
	n.tally__threshold = t;
	n.tally__flags = o->flags;
	words = (o->flags & TALLY_VEC_MULTI) ? 6 : 2;
	n.tally__istride = words * sizeof(tally_uword);
	n.tally__global = (tally_uword *)calloc(3 * (size_t)nr, sizeof(tally_uword));
	n.tally__thr = (int *)malloc((size_t)nr * sizeof(int));
	if (o->names)
		n.tally__names = tally__vec_copy_names(o->names, nr);
	if (!n.tally__global || !n.tally__thr || (o->names && !n.tally__names))
		goto fail;
	n.tally__base = n.tally__global + nr;
	n.tally__scratch = n.tally__global + 2 * (size_t)nr;
	for (i = 0; i < nr; i++)
		n.tally__thr[i] = o->thresholds && o->thresholds[i] ? o->thresholds[i] : t;
	/* MULTI: two in-flight counters per CPU after the items' words. */
	err = tally__pcpu_alloc(&n.tally__pcpu, (size_t)nr * n.tally__istride +
							((o->flags & TALLY_VEC_MULTI) ? 2 * sizeof(tally_uword) : 0));
	if (err)
		goto fail;
	{
		/* A mutex may not be copied: initialise it in place, and put v
		 * back as it was if that fails. */
		struct tally_vec old = *v;
		*v = n;
		if (!pthread_mutex_init(&v->tally__lock, NULL))
			return 0;
		*v = old;
		tally__pcpu_free(&n.tally__pcpu);
		err = -ENOMEM;
	}
fail:
	free(n.tally__global);
	free(n.tally__thr);
	free(n.tally__names);
	return err;
}

/*
 * tally_vec_init - set v up with nr_items items, all 0, every item with
 * the same threshold and no names (tally_vec_init_opts with only these).
 * nr_items: 1..TALLY_VEC_ITEMS_MAX. threshold: 1..TALLY_VEC_THRESHOLD_MAX,
 * or 0 for tally_vec_default_threshold().
 * Returns 0, -EINVAL (v untouched) or -ENOMEM. Not concurrent with any
 * other call on v.
 */
static inline int tally_vec_init(struct tally_vec *v, unsigned nr_items, int threshold)
{
	struct tally_vec_opts o = {nr_items, threshold, NULL, 0, NULL};
	return tally_vec_init_opts(v, &o);
}

/* tally_vec_destroy - free v. NULL (or a destroyed v) is a no-op. Not
 * concurrent with any other call on v. */
static inline void tally_vec_destroy(struct tally_vec *v)
{
	if (!v || !v->tally__global)
		return;
	free(v->tally__global);
	free(v->tally__thr);
	free(v->tally__names);
	v->tally__global = v->tally__base = v->tally__scratch = NULL;
	v->tally__thr = NULL;
	v->tally__names = NULL;
	pthread_mutex_destroy(&v->tally__lock);
	tally__pcpu_free(&v->tally__pcpu);
}

/* tally_vec_threshold - the items' default threshold (TALLY_VEC_EXACT for
 * an exact-only vec). NULL v: 0. */
TALLY__INLINE int tally_vec_threshold(const struct tally_vec *v)
{
	return v ? v->tally__threshold : 0;
}

/* tally_vec_item_threshold - item's threshold, or TALLY_VEC_EXACT when it
 * never folds. Bad v or item: 0. */
TALLY__INLINE int tally_vec_item_threshold(const struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	return v->tally__thr[item];
}

/* tally_vec_nr_items - the number of items. NULL v: 0. */
TALLY__INLINE unsigned tally_vec_nr_items(const struct tally_vec *v)
{
	return v ? v->tally__nr_items : 0;
}

/*
 * tally_vec_item_name - item's name (v's own copy, valid until destroy),
 * or NULL when v has no names, the item is unnamed or out of range.
 * Any thread, beside any call but init/destroy.
 */
TALLY__INLINE const char *tally_vec_item_name(const struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items) || !v->tally__names)
		return NULL;
	return v->tally__names[item];
}

TALLY__INLINE struct tally__vec_pcpu *tally__vec_slot(const struct tally_vec *v, unsigned s,
						      unsigned item)
{
	return (struct tally__vec_pcpu *)tally__pcpu_at(&v->tally__pcpu, s,
							(size_t)item * v->tally__istride);
}

/* The bank words g[0], g[1] of item in slot s (TALLY_VEC_MULTI only). */
TALLY__INLINE tally_uword *tally__vec_bank(const struct tally_vec *v, unsigned s, unsigned item)
{
	return (tally_uword *)tally__vec_slot(v, s, item) + 2;
}

/* The bases of the bank words (TALLY_VEC_MULTI only). */
TALLY__INLINE tally_uword *tally__vec_bank_base(const struct tally_vec *v, unsigned s,
						unsigned item)
{
	return (tally_uword *)tally__vec_slot(v, s, item) + 4;
}

/* Slot s's in-flight counters of multi-item updates, per bank. */
TALLY__INLINE tally_uword *tally__vec_inflight(const struct tally_vec *v, unsigned s)
{
	return (tally_uword *)tally__pcpu_at(&v->tally__pcpu, s,
					     (size_t)v->tally__nr_items * v->tally__istride);
}

/* Slot s's raw value of item: w (+ both banks with TALLY_VEC_MULTI). */
TALLY__INLINE tally_uword tally__vec_value(const struct tally_vec *v,
					   const struct tally__vec_pcpu *p)
{
	tally_uword x = tally__load(&p->w);
	if (v->tally__flags & TALLY_VEC_MULTI) {
		const tally_uword *g = (const tally_uword *)p + 2;
		x += tally__load(&g[0]) + tally__load(&g[1]);
	}
	return x;
}

/*
 * Fold slot s's diff of item (its word w) while it is past the item's
 * threshold: tally__pcpu_fold, lock-free and conserving. kind: 0 for mod
 * (|diff| > t, no overstep), +1 for inc, -1 for dec (overstep t/2). Never
 * folds an item with threshold TALLY_VEC_EXACT.
 */
TALLY__INLINE void tally__vec_fold_slot(struct tally_vec *v, unsigned s, unsigned item, int kind)
{
	struct tally__vec_pcpu *p = tally__vec_slot(v, s, item);
	tally_sword t = v->tally__thr[item];
	if (t < 0)
		return;
	tally__pcpu_fold(&p->w, &p->b, &v->tally__global[item], t,
			 kind > 0   ? TALLY__FOLD_UP
			 : kind < 0 ? TALLY__FOLD_DOWN
				    : TALLY__FOLD_PAST);
}

/* The same for bank k of item in slot s (as mod: no overstep). */
TALLY__INLINE void tally__vec_fold_bank(struct tally_vec *v, unsigned s, unsigned item, unsigned k)
{
	tally_sword t = v->tally__thr[item];
	if (t < 0)
		return;
	tally__pcpu_fold(&tally__vec_bank(v, s, item)[k], &tally__vec_bank_base(v, s, item)[k],
			 &v->tally__global[item], t, TALLY__FOLD_PAST);
}

TALLY__INLINE int tally__vec_add(struct tally_vec *v, unsigned item, tally_sword d, int kind)
{
	unsigned s;
	if (tally__bad(!v || item >= v->tally__nr_items))
		return -EINVAL;
	tally__pcpu_add(&v->tally__pcpu, (size_t)item * v->tally__istride, (tally_uword)d, &s);
	tally__vec_fold_slot(v, s, item, kind);
	return 0;
}

/*
 * tally_vec_mod - add d (any sign) to item (mod_node_page_state()).
 * Returns 0, or -EINVAL for a NULL v or item out of range (nothing
 * changed). Any thread, beside every call but init/destroy. Wait-free on
 * the common path (one per-CPU RMW); a fold is tally__pcpu_fold's
 * lock-free CAS loop (a CAS, an atomic add on the item's global, a fence);
 * never a fold for an item with threshold TALLY_VEC_EXACT. Relaxed.
 */
TALLY__INLINE int tally_vec_mod(struct tally_vec *v, unsigned item, tally_sword d)
{
	return tally__vec_add(v, item, d, 0);
}

/* tally_vec_inc - add 1 with overstep (inc_node_state()); as tally_vec_mod. */
TALLY__INLINE int tally_vec_inc(struct tally_vec *v, unsigned item)
{
	return tally__vec_add(v, item, 1, 1);
}

/* tally_vec_dec - subtract 1 with overstep (dec_node_state()); as mod. */
TALLY__INLINE int tally_vec_dec(struct tally_vec *v, unsigned item)
{
	return tally__vec_add(v, item, -1, -1);
}

/*
 * tally_vec_mod_multi - add d[i].delta to item d[i].item for i < n, as one
 * update: a snapshot (tally_vec_snapshot*, tally_vec_reset) includes all
 * of it or none of it. For counters that must agree, e.g. cmd_get and
 * get_hits + get_misses. Items may repeat; n = 0 does nothing.
 * Needs TALLY_VEC_MULTI. Returns 0, or -EINVAL (NULL v, a vec without
 * TALLY_VEC_MULTI, d NULL with n > 0, n > TALLY_VEC_ITEMS_MAX, an item out
 * of range: nothing changed).
 * Any thread, beside every call but init/destroy. Lock-free: n per-CPU
 * adds to bank words (as tally_vec_mod's: rseq where available), each
 * with the bank word's fold check (as tally_vec_mod), bracketed by an
 * atomic increment and decrement of the current CPU's in-flight counter
 * for the bank; retried only when a snapshot switched banks between
 * reading the bank and announcing itself.
 * Other readers (read_exact, sum) see each item's part on its own.
 */
static inline int tally_vec_mod_multi(struct tally_vec *v, const struct tally_vec_delta *d,
				      unsigned n)
{
	unsigned i, s, p;
	tally_uword *in;
	if (tally__bad(!v || !(v->tally__flags & TALLY_VEC_MULTI) || (n && !d) ||
		       n > TALLY_VEC_ITEMS_MAX))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (tally__bad(d[i].item >= v->tally__nr_items))
			return -EINVAL;
	if (!n)
		return 0;
	/* The in-flight counters take atomic RMWs only, so any slot's is
	 * correct; the current CPU's keeps the line local. The adds go
	 * through tally__pcpu_add like single updates (rseq where it can)
	 * and may land on other slots if the thread migrates: the snapshot
	 * drains every slot's counter before it reads any slot's bank. */
	s = tally__cpu() % v->tally__pcpu.nr;
	in = tally__vec_inflight(v, s);
	for (;;) {
		p = tally__load(&v->tally__phase);
		/* seq_cst increment, then seq_cst re-load of the phase: pairs
		 * with the snapshot's seq_cst store of the phase and then
		 * seq_cst load of this counter (store buffering). Either this
		 * re-load sees the new phase, or the snapshot sees this
		 * increment and waits for the decrement below. */
		__atomic_fetch_add(&in[p], 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&v->tally__phase, __ATOMIC_SEQ_CST) == p)
			break;
		/* A snapshot switched banks: nothing was added to bank p. */
		__atomic_fetch_sub(&in[p], 1, __ATOMIC_RELAXED);
	}
	for (i = 0; i < n; i++) {
		unsigned at;
		tally__pcpu_add(&v->tally__pcpu,
				(size_t)d[i].item * v->tally__istride + (2 + p) * sizeof(tally_uword),
				(tally_uword)d[i].delta, &at);
		tally__vec_fold_bank(v, at, d[i].item, p);
	}
	/* release: the adds above come before the decrement, which the
	 * snapshot's drain loads (seq_cst, so acquire) before it reads bank p. */
	__atomic_fetch_sub(&in[p], 1, __ATOMIC_RELEASE);
	return 0;
}

/* item's raw exact value: the sum over every slot (w, and banks). */
static inline tally_uword tally__vec_raw(const struct tally_vec *v, unsigned item)
{
	unsigned s, n = tally__pcpu_slots(&v->tally__pcpu);
	tally_uword sum = 0;
	for (s = 0; s < n; s++)
		sum += tally__vec_value(v, tally__vec_slot(v, s, item));
	return sum;
}

/* item's reset baseline. acquire: pairs with the release store in reset,
 * so the words summed after it are at least as new as those the reset
 * summed (a since-reset value is never from before the baseline's cut). */
TALLY__INLINE tally_uword tally__vec_base(const struct tally_vec *v, unsigned item)
{
	return tally__load_acq(&v->tally__base[item]);
}

/*
 * tally_vec_read_monotonic - the raw global of item as unsigned, never
 * clamped and never moved by a reset (node_page_state_monotonic()), plus
 * TALLY_MONOTONIC_BIAS. For event counters: subtract two samples with
 * tally_delta(). Lags the raw exact value by at most threshold * CPU slots
 * (+ t/2 per slot after inc/dec oversteps, + adds in flight). O(1),
 * wait-free, any thread. An item with threshold TALLY_VEC_EXACT: the raw
 * exact value (+ bias), O(CPUs). Bad item: 0.
 */
TALLY__INLINE tally_uword tally_vec_read_monotonic(const struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	if (v->tally__thr[item] < 0)
		return tally__vec_raw(v, item) + TALLY_MONOTONIC_BIAS;
	return tally__load(&v->tally__global[item]) + TALLY_MONOTONIC_BIAS;
}

/*
 * tally_vec_read_exact - the exact value of item since its last reset:
 * every completed mod, folded or not (the sum of every CPU's never-reset
 * words, minus the reset baseline). O(CPUs), wait-free, any thread; with
 * updates running it includes every update completed before the call.
 * Modular in 2^W, as a signed value (gauges). Bad item: 0.
 */
static inline tally_sword tally_vec_read_exact(const struct tally_vec *v, unsigned item)
{
	tally_uword base;
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	base = tally__vec_base(v, item);
	return tally__to_signed(tally__vec_raw(v, item) - base);
}

/*
 * tally_vec_sum - the exact value of item since its last reset, unsigned
 * modulo 2^W: (tally_uword)tally_vec_read_exact(). The reader for event
 * counters (no cast, no clamping: a count past TALLY_SWORD_MAX stays
 * right until it wraps at 2^W). Contract as tally_vec_read_exact.
 */
static inline tally_uword tally_vec_sum(const struct tally_vec *v, unsigned item)
{
	tally_uword base;
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	base = tally__vec_base(v, item);
	return tally__vec_raw(v, item) - base;
}

/*
 * tally_vec_read - the global of item since its last reset, negative as 0
 * (node_page_state()). For gauges. Same bound and contract as
 * tally_vec_read_monotonic (right after a reset of a growing item it may
 * read 0 until folds catch up). An item with threshold TALLY_VEC_EXACT:
 * the exact value clamped, O(CPUs).
 */
TALLY__INLINE tally_uword tally_vec_read(const struct tally_vec *v, unsigned item)
{
	tally_uword base;
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	base = tally__vec_base(v, item);
	if (v->tally__thr[item] < 0)
		return tally_clamp(tally__to_signed(tally__vec_raw(v, item) - base));
	return tally_clamp(tally__to_signed(tally__load(&v->tally__global[item]) - base));
}

/*
 * Every item's raw exact value into out[0..nr_items-1]: one pass over each
 * CPU's chunk. With TALLY_VEC_MULTI (caller holds the lock): the pass
 * reads w and the idle bank, then the phase flips and, once no CPU has an
 * update in flight into the bank updates were adding to, that bank's
 * words are added too. Every multi-item update went wholly to one bank: to the idle
 * one before the previous flip (read in the pass), or to the busy one
 * before this flip (read after it drained), or after this flip (in
 * neither: the idle bank was read before the flip).
 */
static inline void tally__vec_cut(const struct tally_vec *v, tally_uword *out)
{
	struct tally_vec *m = (struct tally_vec *)v; /* the phase only */
	unsigned s, i, nr = v->tally__nr_items, slots = tally__pcpu_slots(&v->tally__pcpu);
	unsigned p, q;
	memset(out, 0, (size_t)nr * sizeof(*out));
	if (!(v->tally__flags & TALLY_VEC_MULTI)) {
		for (s = 0; s < slots; s++)
			for (i = 0; i < nr; i++)
				out[i] += tally__load(&tally__vec_slot(v, s, i)->w);
		return;
	}
	p = tally__load(&v->tally__phase); /* only lock holders store it */
	q = p ^ 1u;
	for (s = 0; s < slots; s++)
		for (i = 0; i < nr; i++)
			out[i] += tally__load(&tally__vec_slot(v, s, i)->w) +
				  tally__load(&tally__vec_bank(v, s, i)[q]);
	/* seq_cst: pairs with the update's seq_cst increment and re-load
	 * (see tally_vec_mod_multi). */
	__atomic_store_n(&m->tally__phase, q, __ATOMIC_SEQ_CST);
	/* Every slot's counter first: an update's adds may have landed on
	 * other slots than its counter's. */
	for (s = 0; s < slots; s++) {
		tally_uword *in = tally__vec_inflight(v, s);
		unsigned spins = 0;
		/* seq_cst (so acquire): pairs with the update's release
		 * decrement, so its adds to bank p are seen below. */
		while (__atomic_load_n(&in[p], __ATOMIC_SEQ_CST)) {
			if (++spins < 128) {
				tally__cpu_relax();
			} else {
#if TALLY__LINUX
				sched_yield(); /* an updater was preempted mid-update */
#endif
				spins = 0;
			}
		}
	}
	for (s = 0; s < slots; s++)
		for (i = 0; i < nr; i++)
			out[i] += tally__load(&tally__vec_bank(v, s, i)[p]);
}

TALLY__INLINE void tally__vec_lock(const struct tally_vec *v)
{
	pthread_mutex_lock(&((struct tally_vec *)v)->tally__lock);
}

TALLY__INLINE void tally__vec_unlock(const struct tally_vec *v)
{
	pthread_mutex_unlock(&((struct tally_vec *)v)->tally__lock);
}

/*
 * tally_vec_snapshot - every item's raw exact value: out[i] = everything
 * ever added to item i, modulo 2^W, never moved by a reset and without
 * TALLY_MONOTONIC_BIAS (the value tally_vec_sum would give with no reset).
 * For exporters: a counter sampled this way never goes back (across a wrap
 * at 2^W, widen with tally_delta of two snapshots).
 * n: room in out, at least tally_vec_nr_items(v); nr_items entries are
 * written. Returns 0, or -EINVAL (NULL v or out, n too small: out
 * untouched).
 * One pass over each CPU's dense chunk. Each item's value includes every
 * update completed before the call and none that started after it
 * returned. With TALLY_VEC_MULTI every multi-item update is in it whole
 * or not at all: the values are those of one instant, as far as
 * multi-item updates go (single-item updates are each atomic on their
 * own, so no invariant between two items can hold for them).
 * Any thread, beside every call but init/destroy. Without TALLY_VEC_MULTI:
 * wait-free, relaxed loads. With it: blocking: snapshots and resets of v
 * take v's lock, and each waits, per CPU, for the multi-item updates that
 * were in flight when it switched banks (a few atomic adds each; longer
 * only if such an updater is preempted mid-update).
 */
static inline int tally_vec_snapshot(const struct tally_vec *v, tally_uword *out, unsigned n)
{
	if (tally__bad(!v || !out || n < v->tally__nr_items))
		return -EINVAL;
	if (!(v->tally__flags & TALLY_VEC_MULTI)) {
		tally__vec_cut(v, out);
		return 0;
	}
	tally__vec_lock(v);
	tally__vec_cut(v, out);
	tally__vec_unlock(v);
	return 0;
}

/*
 * tally_vec_snapshot_since_reset - as tally_vec_snapshot, but every value
 * since its item's last reset (out[i] as tally_vec_sum(v, i) would give at
 * one instant): what a "stats" command shows after "stats reset". Under
 * v's lock, so it sees a tally_vec_reset() whole or not at all. Same
 * contract and errors as tally_vec_snapshot (blocking: takes v's lock).
 */
static inline int tally_vec_snapshot_since_reset(const struct tally_vec *v, tally_uword *out,
						 unsigned n)
{
	unsigned i;
	if (tally__bad(!v || !out || n < v->tally__nr_items))
		return -EINVAL;
	tally__vec_lock(v);
	tally__vec_cut(v, out);
	for (i = 0; i < v->tally__nr_items; i++)
		out[i] -= tally__load(&v->tally__base[i]);
	tally__vec_unlock(v);
	return 0;
}

/*
 * tally_vec_reset - start every item's since-reset value from 0: take a
 * cut as tally_vec_snapshot does and make it the items' baselines, which
 * the since-reset readers subtract. Raw readers (read_monotonic, snapshot)
 * are not moved. Returns 0, or -EINVAL for a NULL v.
 *
 * Contract, with X the set of updates in the cut: X includes every update
 * completed before the call, none that started after it returned, and
 * (TALLY_VEC_MULTI) each multi-item update whole or not at all. Updates
 * racing with the reset are neither lost nor counted twice: each is
 * either in X (counted before the reset, in the baseline) or, once it
 * completes, in every later since-reset value; so at any quiescent point
 * baseline + since-reset value = raw value, for every item, and a
 * multi-item invariant (cmd_get == get_hits + get_misses) holds for the
 * since-reset values as it does for the raw ones.
 * A reader racing with the reset sees, per item, the value from before it
 * (old baseline) or one since it (new baseline, and words at least as new
 * as the cut's), never a mix: a growing item's since-reset value is never
 * negative. tally_vec_snapshot_since_reset sees all items' baselines from
 * one reset. tally_vec_read (O(1), from the globals) may read 0 after a
 * reset until folds catch up.
 * Any thread, beside every call but init/destroy. Blocking (v's lock;
 * with TALLY_VEC_MULTI it waits as a snapshot does). Never allocates.
 */
static inline int tally_vec_reset(struct tally_vec *v)
{
	unsigned i;
	if (tally__bad(!v))
		return -EINVAL;
	tally__vec_lock(v);
	tally__vec_cut(v, v->tally__scratch);
	for (i = 0; i < v->tally__nr_items; i++)
		/* release: pairs with tally__vec_base()'s acquire load. */
		tally__store_rel(&v->tally__base[i], v->tally__scratch[i]);
	tally__vec_unlock(v);
	return 0;
}

/*
 * tally_vec_reset_item - reset one item: as tally_vec_reset, for item
 * alone (its cut is that item's exact sum at the call; a multi-item
 * update racing with it may be in this item's baseline and not in
 * another item's: use tally_vec_reset for items that must agree).
 * Returns 0, or -EINVAL (NULL v, item out of range: nothing changed).
 * Blocking (v's lock); any thread, beside every call but init/destroy.
 */
static inline int tally_vec_reset_item(struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items))
		return -EINVAL;
	tally__vec_lock(v);
	/* release: pairs with tally__vec_base()'s acquire load. */
	tally__store_rel(&v->tally__base[item], tally__vec_raw(v, item));
	tally__vec_unlock(v);
	return 0;
}

TALLY__INLINE void tally__vec_fold_bank_all(struct tally_vec *v, unsigned s, unsigned i,
					    unsigned k)
{
	tally__pcpu_fold(&tally__vec_bank(v, s, i)[k], &tally__vec_bank_base(v, s, i)[k],
			 &v->tally__global[i], 0, TALLY__FOLD_ALL);
}

/*
 * tally_vec_fold - fold every CPU's diffs into the globals
 * (refresh_cpu_vm_stats()): afterwards read == exact while updates are
 * quiescent. Items with threshold TALLY_VEC_EXACT are left alone (their
 * readers are exact already). Lock-free; any thread, beside every call
 * but init/destroy.
 */
static inline void tally_vec_fold(struct tally_vec *v)
{
	unsigned s, n, i;
	if (tally__bad(!v))
		return;
	n = tally__pcpu_slots(&v->tally__pcpu);
	for (s = 0; s < n; s++) {
		for (i = 0; i < v->tally__nr_items; i++) {
			struct tally__vec_pcpu *p = tally__vec_slot(v, s, i);
			if (v->tally__thr[i] < 0)
				continue;
			tally__pcpu_fold(&p->w, &p->b, &v->tally__global[i], 0, TALLY__FOLD_ALL);
			if (v->tally__flags & TALLY_VEC_MULTI) {
				tally__vec_fold_bank_all(v, s, i, 0);
				tally__vec_fold_bank_all(v, s, i, 1);
			}
		}
	}
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_VEC_H */
