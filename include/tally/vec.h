/**
 * @file
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
 *   // Byte counters, names, gauges, multi-item updates:
 *   static const int thr[NR] = {[BYTES_READ] = 800000, [CURR_BYTES] = TALLY_VEC_EXACT};
 *   static const unsigned char fl[NR] = {[CURR_BYTES] = TALLY_VEC_ITEM_GAUGE};
 *   struct tally_vec_opts o = {.nr_items = NR, .thresholds = thr,
 *                              .flags = TALLY_VEC_MULTI, .names = names,
 *                              .item_flags = fl};
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
 * As in tally_counter, per CPU and item a never-reset word w and a base
 * (diff = w - base); a fold (tally__pcpu_fold) moves diff into the global
 * and advances the base by CAS, so the exact value (the sum of every w)
 * never depends on folds. With TALLY_VEC_MULTI (every item) or
 * TALLY_VEC_ITEM_MULTI (that item) each CPU and such an item also has
 * two bank words bank[0], bank[1] that multi-item updates add to (through
 * the same per-CPU add as single updates), each with its own base, folded
 * past the item's threshold as mod folds; the CPU's value of the item is
 * w + bank[0] + bank[1], still never reset, and exact sums use that.
 * The vector is tracked (tally/pcpu.h, the written bound): exact reads,
 * snapshots, resets, tally_vec_fold and destroy visit only the CPU slots
 * that have written it (and the shared slot), so "O(CPUs)" below means
 * the CPUs that updated v, not the slots there are (TALLY_CPU_SLOTS, a
 * VM's possible CPUs); updates raise the bound off their fast path.
 *
 * The O(1) readers' bound (read, read_monotonic), while updates are
 * quiescent: |global - exact| <= (t + P - 1) * S, S the CPU slots + the
 * shared slot, P the largest power of two <= t (so under 2t per slot);
 * three times that for a MULTI vec (each of the three words on its own).
 * Sequentially the rules keep every diff within t; the P - 1 covers a
 * fold from another CPU (tally_vec_fold, a migrated thread) racing with
 * an update whose add it cannot see yet (vec/fold.h: an update that moves
 * its word across a multiple of P runs a fence first). Either direction:
 * a diff is the CPU's part not yet in the global, so the global lags a
 * growing item by up to it, and runs ahead after an inc's overstep (diff
 * -t/2: threshold 10, eleven incs on one CPU read 16, exact 11).
 *
 * Values come in two kinds:
 *   raw:          everything ever added, modulo 2^W; never moved by a
 *                 reset (read_monotonic, snapshot). For deltas, exporters.
 *   since reset:  raw minus the item's reset baseline (read, read_exact,
 *                 sum, snapshot_since_reset, snapshot_signed). Without a
 *                 reset, the same; for a gauge (TALLY_VEC_ITEM_GAUGE),
 *                 which no reset moves, always the same.
 *
 * This header holds the structures and the public calls with their
 * contracts. The machinery sits beside it (each refuses to be included on
 * its own):
 *   tally/vec/layout.h    the per-CPU words of an item, a slot's value,
 *                         exact sums, the reset baselines, the lock
 *   tally/vec/fold.h      the default threshold, the fold check after an
 *                         update, folding everything
 *   tally/vec/banks.h     TALLY_VEC_MULTI's two banks: multi-item updates
 *                         and the cut that snapshots and resets take
 *   tally/vec/lifetime.h  checking the options, allocating, freeing
 */
#ifndef TALLY_VEC_H
#define TALLY_VEC_H

#include <tally/os.h>
#include <tally/monotonic.h>
#include <tally/pcpu.h>

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/**@{*/
/** Largest threshold accepted. */
#define TALLY_VEC_THRESHOLD_MAX (1 << 20)
/** Most items per vector. */
#define TALLY_VEC_ITEMS_MAX (1u << 16)
/**@}*/

/** A per-item threshold (tally_vec_opts.thresholds) meaning: never fold. */
#define TALLY_VEC_EXACT (-1)

/* tally_vec_opts.flags */
/** No item folds (as if every threshold were TALLY_VEC_EXACT). */
#define TALLY_VEC_EXACT_ONLY 0x1u
/** Multi-item updates (tally_vec_mod_multi) and snapshots that see each
 * one whole, for every item (as if each had TALLY_VEC_ITEM_MULTI): four
 * more words per CPU and item, two per CPU for the vector; the O(1)
 * readers' bound triples (see the top of this file). */
#define TALLY_VEC_MULTI 0x2u
#define TALLY__VEC_FLAGS (TALLY_VEC_EXACT_ONLY | TALLY_VEC_MULTI)

/** @name Per-item flags (tally_vec_opts.item_flags)
 * @{ */
/**
 * The item is a gauge (a level that goes up and down: open connections,
 * bytes in use), not an event counter. tally_vec_reset() leaves it alone,
 * so every since-reset reader gives its current value, and exporters
 * render it as a gauge (the signed value). Without it an item is an event
 * counter.
 */
#define TALLY_VEC_ITEM_GAUGE 0x1u
/** Exporters leave the item out; it counts, and every reader reads it. */
#define TALLY_VEC_ITEM_HIDDEN 0x2u
/**
 * The item takes part in multi-item updates (tally_vec_mod_multi): it
 * alone gets the two banks, four more words per CPU slot (plus two per
 * slot for the vector, once), and its O(1) readers' bound is 3 *
 * threshold per CPU slot. Items without it cost two words per CPU slot
 * and keep the bound of one threshold; a multi-item update still counts
 * their parts, each as a single update of its own (not seen whole with
 * the rest). (TALLY_VEC_MULTI: every item.)
 */
#define TALLY_VEC_ITEM_MULTI 0x4u
/** @} */
#define TALLY__VEC_ITEM_FLAGS (TALLY_VEC_ITEM_GAUGE | TALLY_VEC_ITEM_HIDDEN | TALLY_VEC_ITEM_MULTI)

/**
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
 *             validated here (any bytes but NUL); exporters check them
 *             (an exporter reads "family{label=\"value\"}" as a series
 *             of family with that label: tally/export.h).
 * item_flags: NULL (every item an event counter), or nr_items entries,
 *             each 0 or TALLY_VEC_ITEM_GAUGE, TALLY_VEC_ITEM_HIDDEN and
 *             TALLY_VEC_ITEM_MULTI OR'd; any other bit is -EINVAL. Copied.
 * Members added later go at the end: an initialiser that names the
 * first ones leaves the rest 0 (NULL).
 */
struct tally_vec_opts {
	unsigned nr_items;          /**< 1..TALLY_VEC_ITEMS_MAX */
	int threshold;              /**< the items' default; 0: vmstat's */
	const int *thresholds;      /**< NULL, or one per item (see above) */
	unsigned flags;             /**< TALLY_VEC_EXACT_ONLY, TALLY_VEC_MULTI */
	const char *const *names;   /**< NULL, or one per item, copied */
	const unsigned char *item_flags; /**< NULL, or one per item: TALLY_VEC_ITEM_* */
};

/** One item's part of a multi-item update (tally_vec_mod_multi). */
struct tally_vec_delta {
	unsigned item;     /**< the item, below the vector's nr_items */
	tally_sword delta; /**< added to it (any sign) */
};

/** An N-item statistics vector (vmstat's per-CPU diffs and
 * thresholds): see the top of this file. Opaque: set up with
 * tally_vec_init() or tally_vec_init_opts(), then only the tally_vec_*
 * calls. */
struct tally_vec {
	/* private: use the tally_vec_* calls */
	tally_uword *tally__global;     /* per item: everything folded */
	tally_uword *tally__baseline;   /* per item: reset baseline (raw) */
	tally_uword *tally__reset_cut;  /* per item: reset's cut, under the lock */
	int *tally__item_threshold;     /* per item: threshold, or TALLY_VEC_EXACT */
	unsigned char *tally__item_flags; /* per item: TALLY_VEC_ITEM_* */
	unsigned *tally__bank_of;       /* per item: its banks' index, or ~0u (none) */
	unsigned tally__nr_banked;      /* items with banks */
	size_t tally__banks_off;        /* bytes: the banks in a CPU's chunk */
	char **tally__names;            /* NULL, or per item: a copy or NULL */
	unsigned tally__nr_items;
	int tally__threshold;           /* the items' default */
	unsigned tally__flags;          /* TALLY_VEC_MULTI: some item has banks */
	unsigned tally__active_bank;    /* MULTI: the bank updates add to */
	size_t tally__item_stride;      /* bytes per item in a CPU's chunk */
	pthread_mutex_t tally__lock;    /* snapshots of MULTI vecs, resets */
	struct tally__pcpu tally__pcpu; /* per CPU: the items' words (vec/layout.h) */
};

#define TALLY__VEC_INSIDE 1
#include <tally/vec/layout.h>
#include <tally/vec/fold.h>
#include <tally/vec/banks.h>
#include <tally/vec/lifetime.h>
#undef TALLY__VEC_INSIDE

/* ---- setting up ---------------------------------------------------------- */

/**
 * tally_vec_default_threshold - calculate_normal_threshold():
 * min(125, 2 * fls(cpus) * (1 + fls(memory in 128 MiB units))), with
 * TALLY_VEC_MAX_THRESHOLD (config.h) for 125; memory the OS cannot tell
 * counts as 0. Any thread; reads the CPU count and the physical memory.
 */
static inline int tally_vec_default_threshold(void)
{
	return tally__vec_calc_threshold();
}

/**
 * tally_vec_init_opts - set v up as o says, every item 0.
 * Returns 0, -EINVAL (o invalid, see struct tally_vec_opts; v untouched)
 * or -ENOMEM (v untouched). Not concurrent with any other call on v.
 */
static inline int tally_vec_init_opts(struct tally_vec *v, const struct tally_vec_opts *o)
{
	if (tally__bad(!v || !tally__vec_opts_ok(o)))
		return -EINVAL;
	return tally__vec_setup(v, o);
}

/**
 * tally_vec_init - set v up with nr_items items, all 0, every item with
 * the same threshold and no names (tally_vec_init_opts with only these).
 * nr_items: 1..TALLY_VEC_ITEMS_MAX. threshold: 1..TALLY_VEC_THRESHOLD_MAX,
 * or 0 for tally_vec_default_threshold().
 * Returns 0, -EINVAL (v untouched) or -ENOMEM. Not concurrent with any
 * other call on v.
 */
static inline int tally_vec_init(struct tally_vec *v, unsigned nr_items, int threshold)
{
	struct tally_vec_opts o = {nr_items, threshold, NULL, 0, NULL, NULL};
	return tally_vec_init_opts(v, &o);
}

/** tally_vec_destroy - free v. NULL (or a destroyed v) is a no-op. Not
 * concurrent with any other call on v. */
static inline void tally_vec_destroy(struct tally_vec *v)
{
	if (!v || !v->tally__global)
		return;
	tally__vec_teardown(v);
}

/* ---- properties ---------------------------------------------------------- */

/** tally_vec_threshold - the items' default threshold (TALLY_VEC_EXACT for
 * an exact-only vec). NULL v: 0. */
TALLY__INLINE int tally_vec_threshold(const struct tally_vec *v)
{
	return v ? v->tally__threshold : 0;
}

/** tally_vec_item_threshold - item's threshold, or TALLY_VEC_EXACT when it
 * never folds. Bad v or item: 0. */
TALLY__INLINE int tally_vec_item_threshold(const struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	return v->tally__item_threshold[item];
}

/** tally_vec_nr_items - the number of items. NULL v: 0. */
TALLY__INLINE unsigned tally_vec_nr_items(const struct tally_vec *v)
{
	return v ? v->tally__nr_items : 0;
}

/**
 * tally_vec_item_name - item's name (v's own copy, valid until destroy or
 * the item's rename), or NULL when the item is unnamed or out of range.
 * Any thread, beside any call but init/destroy and
 * tally_vec_set_item_name() of the same item.
 */
TALLY__INLINE const char *tally_vec_item_name(const struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items) || !v->tally__names)
		return NULL;
	return v->tally__names[item];
}

/**
 * tally_vec_item_flags - item's flags (tally_vec_opts.item_flags):
 * TALLY_VEC_ITEM_GAUGE and TALLY_VEC_ITEM_HIDDEN OR'd.
 * @return the flags; 0 (an event counter, exported) for a bad v or item.
 * Any thread, beside any call but init/destroy. Pure read.
 */
TALLY__INLINE unsigned tally_vec_item_flags(const struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	return v->tally__item_flags[item];
}

/**
 * tally_vec_set_item_name - give item a new name (a copy of name; NULL:
 * unnamed), leaving every other item's name as it was.
 * @return 0; -EINVAL (NULL v, item out of range: nothing changed);
 *         -ENOMEM (the old name kept).
 * Not beside tally_vec_item_name() of the same item, nor beside an
 * exporter registering v (tally_export_add_vec() copies the names it
 * exports, so rename before registering): the old name is freed here.
 * Beside updates, readers, snapshots and other items' names and renames
 * of v: any thread (each item's name is its own allocation). Blocking
 * (malloc and free).
 */
static inline int tally_vec_set_item_name(struct tally_vec *v, unsigned item, const char *name)
{
	char *d;
	if (tally__bad(!v || item >= v->tally__nr_items))
		return -EINVAL;
	if (tally__vec_dup_name(name, &d))
		return -ENOMEM;
	free(v->tally__names[item]);
	v->tally__names[item] = d;
	return 0;
}

/* ---- updates ------------------------------------------------------------- */

/*
 * The update calls below are inlined at every call site unless config.h's
 * TALLY_INLINE / TALLY_EXTERN say otherwise (tally/arch.h, TALLY__API).
 */
#if TALLY_EXTERN /* a prototype for the one definition (TALLY_IMPLEMENTATION) */
TALLY__API int tally_vec_mod(struct tally_vec *v, unsigned item, tally_sword d);
TALLY__API int tally_vec_inc(struct tally_vec *v, unsigned item);
TALLY__API int tally_vec_dec(struct tally_vec *v, unsigned item);
TALLY__API int tally_vec_mod_multi(struct tally_vec *v, const struct tally_vec_delta *d,
				  unsigned n);
#endif
#if TALLY__API_BODY
/**
 * tally_vec_mod - add d (any sign) to item (mod_node_page_state()).
 * Returns 0, or -EINVAL for a NULL v or item out of range (nothing
 * changed). Any thread, beside every call but init/destroy. Wait-free on
 * the common path (one per-CPU RMW); an update that moves its CPU's word
 * across a multiple of P (the largest power of two <= the threshold) runs
 * a full fence before its fold check (the readers' bound needs it); a
 * fold is tally__pcpu_fold's lock-free CAS loop (a CAS, an atomic add on
 * the item's global, a fence); never a fold for an item with threshold
 * TALLY_VEC_EXACT. Relaxed.
 */
TALLY__API int tally_vec_mod(struct tally_vec *v, unsigned item, tally_sword d)
{
	return tally__vec_add(v, item, d, TALLY__FOLD_PAST);
}

/** tally_vec_inc - add 1 with overstep (inc_node_state()); as tally_vec_mod. */
TALLY__API int tally_vec_inc(struct tally_vec *v, unsigned item)
{
	return tally__vec_add(v, item, 1, TALLY__FOLD_UP);
}

/** tally_vec_dec - subtract 1 with overstep (dec_node_state()); as mod. */
TALLY__API int tally_vec_dec(struct tally_vec *v, unsigned item)
{
	return tally__vec_add(v, item, -1, TALLY__FOLD_DOWN);
}

/**
 * tally_vec_mod_multi - add d[i].delta to item d[i].item for i < n, as one
 * update: a snapshot (tally_vec_snapshot*, tally_vec_reset) includes all
 * of it or none of it. For counters that must agree, e.g. cmd_get and
 * get_hits + get_misses. Items may repeat; n = 0 does nothing.
 * Only the items that take part (TALLY_VEC_MULTI, or their
 * TALLY_VEC_ITEM_MULTI) are seen whole. A part whose item does not take
 * part is still counted, as a tally_vec_mod() of its own after the rest:
 * never dropped, but not atomic with the others (a snapshot or reset may
 * see it apart from them; in a vector with no such item at all, every
 * part is its own update). So a forgotten flag costs the pair's
 * atomicity, never counts; flag every item of a pair that must agree.
 * Returns 0, or -EINVAL (NULL v, d NULL with n > 0, n >
 * TALLY_VEC_ITEMS_MAX, an item out of range: nothing changed).
 * Any thread, beside every call but init/destroy. Lock-free: n per-CPU
 * adds to bank words (as tally_vec_mod's: rseq where available), each
 * with the bank word's fold check (as tally_vec_mod), bracketed by an
 * atomic increment and decrement of the current CPU's in-flight counter
 * for the bank; retried only when a snapshot switched banks between
 * reading the active bank and announcing itself (tally/vec/banks.h);
 * then one tally_vec_mod per part without banks (wait-free, as it says).
 * Other readers (read_exact, sum) see each item's part on its own.
 */
TALLY__API int tally_vec_mod_multi(struct tally_vec *v, const struct tally_vec_delta *d,
				  unsigned n)
{
	unsigned i;
	if (tally__bad(!v || (n && !d) || n > TALLY_VEC_ITEMS_MAX))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (tally__bad(d[i].item >= v->tally__nr_items))
			return -EINVAL;
	if (!n)
		return 0;
	if (!(v->tally__flags & TALLY_VEC_MULTI)) {
		/* No item has banks: each part on its own. */
		for (i = 0; i < n; i++)
			(void)tally__vec_add(v, d[i].item, d[i].delta, TALLY__FOLD_PAST);
		return 0;
	}
	tally__vec_add_multi(v, d, n);
	return 0;
}
#endif

/* ---- readers ------------------------------------------------------------- */

/**
 * tally_vec_read_monotonic - the raw global of item as unsigned, never
 * clamped and never moved by a reset (node_page_state_monotonic()), plus
 * TALLY_MONOTONIC_BIAS. For event counters: subtract two samples with
 * tally_delta(). Within the O(1) readers' bound of the raw exact value
 * ((t + P - 1) * S, see the top of this file; + updates in flight), on
 * either side: it lags what mods added, and runs ahead by up to t/2 per
 * slot after inc oversteps (behind by as much after dec's). O(1),
 * wait-free, any thread. An item with threshold TALLY_VEC_EXACT: the raw
 * exact value (+ bias), O(CPUs). Bad item: 0.
 */
TALLY__INLINE tally_uword tally_vec_read_monotonic(const struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	if (v->tally__item_threshold[item] < 0)
		return tally__vec_raw(v, item) + TALLY_MONOTONIC_BIAS;
	return tally__load(&v->tally__global[item]) + TALLY_MONOTONIC_BIAS;
}

/**
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
	base = tally__vec_baseline(v, item);
	return tally__to_signed(tally__vec_raw(v, item) - base);
}

/**
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
	base = tally__vec_baseline(v, item);
	return tally__vec_raw(v, item) - base;
}

/**
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
	base = tally__vec_baseline(v, item);
	if (v->tally__item_threshold[item] < 0)
		return tally_clamp(tally__to_signed(tally__vec_raw(v, item) - base));
	return tally_clamp(tally__to_signed(tally__load(&v->tally__global[item]) - base));
}

/* ---- snapshots and resets ------------------------------------------------ */

/**
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

/**
 * tally_vec_snapshot_since_reset - as tally_vec_snapshot, but every value
 * since its item's last reset (out[i] as tally_vec_sum(v, i) would give at
 * one instant; a gauge's current value): what a "stats" command shows
 * after "stats reset". Under
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
		out[i] -= tally__load(&v->tally__baseline[i]);
	tally__vec_unlock(v);
	return 0;
}

/**
 * tally_vec_snapshot_signed - as tally_vec_snapshot_since_reset, each
 * value as signed: the reader of gauges (TALLY_VEC_ITEM_GAUGE, which no
 * reset moves: their current values, negative ones included), and of
 * event counters since their last reset (modulo 2^W, as signed).
 * @param v   the vector
 * @param out nr_items values, signed
 * @param n   room in out, at least tally_vec_nr_items(v).
 * @return 0, or -EINVAL (NULL v or out, n too small: out untouched).
 * Same contract as tally_vec_snapshot_since_reset (blocking: v's lock).
 */
static inline int tally_vec_snapshot_signed(const struct tally_vec *v, tally_sword *out,
					    unsigned n)
{
	unsigned i;
	/* tally_sword and tally_uword are the signed and unsigned types of
	 * one width: out may be read as either. */
	int err = tally_vec_snapshot_since_reset(v, (tally_uword *)out, n);
	if (err)
		return err;
	for (i = 0; i < v->tally__nr_items; i++)
		out[i] = tally__to_signed((tally_uword)out[i]);
	return 0;
}

/**
 * tally_vec_reset - start every event counter's since-reset value from 0:
 * take a cut as tally_vec_snapshot does and make it the items' baselines,
 * which the since-reset readers subtract. Gauges (TALLY_VEC_ITEM_GAUGE)
 * are left alone: their since-reset value stays their current value.
 * Raw readers (read_monotonic, snapshot) are not moved. Returns 0, or
 * -EINVAL for a NULL v.
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
	tally__vec_cut(v, v->tally__reset_cut);
	for (i = 0; i < v->tally__nr_items; i++)
		if (!(v->tally__item_flags[i] & TALLY_VEC_ITEM_GAUGE))
			tally__vec_set_baseline(v, i, v->tally__reset_cut[i]);
	tally__vec_unlock(v);
	return 0;
}

/**
 * tally_vec_reset_item - reset one item: as tally_vec_reset, for item
 * alone (its cut is that item's exact sum at the call; a multi-item
 * update racing with it may be in this item's baseline and not in
 * another item's: use tally_vec_reset for items that must agree).
 * Returns 0, or -EINVAL (NULL v, item out of range, item a gauge
 * (TALLY_VEC_ITEM_GAUGE: a reset would make its level wrong): nothing
 * changed). Blocking (v's lock); any thread, beside every call but
 * init/destroy.
 */
static inline int tally_vec_reset_item(struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items ||
		       (v->tally__item_flags[item] & TALLY_VEC_ITEM_GAUGE)))
		return -EINVAL;
	tally__vec_lock(v);
	tally__vec_set_baseline(v, item, tally__vec_raw(v, item));
	tally__vec_unlock(v);
	return 0;
}

/* ---- folding ------------------------------------------------------------- */

/**
 * tally_vec_fold - fold every CPU's diffs into the globals
 * (refresh_cpu_vm_stats()): afterwards read == exact while updates are
 * quiescent. Items with threshold TALLY_VEC_EXACT are left alone (their
 * readers are exact already). Lock-free; any thread, beside every call
 * but init/destroy.
 */
static inline void tally_vec_fold(struct tally_vec *v)
{
	if (tally__bad(!v))
		return;
	tally__vec_fold_all(v);
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_VEC_H */
