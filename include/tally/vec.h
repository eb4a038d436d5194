/*
 * tally/vec.h - tally_vec: an N-item stat vector with per-CPU diffs folded
 * into per-item globals past a threshold (kernel mm/vmstat.c).
 *
 *   struct tally_vec v;
 *   tally_vec_init(&v, NR_ITEMS, 0);    // threshold 0: vmstat's default
 *   tally_vec_mod(&v, ITEM, -3);        // any thread, wait-free
 *   tally_vec_inc(&v, ITEM);
 *   tally_vec_read(&v, ITEM);           // clamped global, O(1)
 *   tally_vec_read_monotonic(&v, ITEM); // raw global, for deltas
 *   tally_vec_read_exact(&v, ITEM);     // global + every CPU's diff
 *   tally_vec_destroy(&v);
 *
 * Fold rules, as the kernel's (t = threshold):
 *   mod(d): x = diff + d; if |x| > t: global += x, diff = 0.
 *   inc:    v = diff + 1; if v > t:   global += v + t/2, diff = -t/2.
 *   dec:    v = diff - 1; if v < -t:  global += v - t/2, diff = t/2.
 * The overstep keeps a run in one direction folding half as often.
 *
 * As in tally_counter, per CPU and item a never-reset word w and a base b
 * (diff = w - b); a fold moves diff into the global and advances b by CAS,
 * so the exact value (the sum of every w) never depends on folds.
 */
#ifndef TALLY_VEC_H
#define TALLY_VEC_H

#include <tally/monotonic.h>
#include <tally/pcpu.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest threshold accepted; items per vector. */
#define TALLY_VEC_THRESHOLD_MAX (1 << 20)
#define TALLY_VEC_ITEMS_MAX (1u << 16)

struct tally__vec_pcpu {
	tally_uword w; /* never reset; written by tally__pcpu_add only */
	tally_uword b; /* w - diff; changed by CAS only */
};

struct tally_vec {
	/* private: use the tally_vec_* calls */
	tally_uword *tally__global; /* per item: everything folded */
	unsigned tally__nr_items;
	int tally__threshold;
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

/*
 * tally_vec_init - set v up with nr_items items, all 0.
 * nr_items: 1..TALLY_VEC_ITEMS_MAX. threshold: 1..TALLY_VEC_THRESHOLD_MAX,
 * or 0 for tally_vec_default_threshold().
 * Returns 0, -EINVAL (v untouched) or -ENOMEM. Not concurrent with any
 * other call on v.
 */
static inline int tally_vec_init(struct tally_vec *v, unsigned nr_items, int threshold)
{
	int err;
	if (tally__bad(!v || !nr_items || nr_items > TALLY_VEC_ITEMS_MAX || threshold < 0 ||
		       threshold > TALLY_VEC_THRESHOLD_MAX))
		return -EINVAL;
	v->tally__global = (tally_uword *)calloc(nr_items, sizeof(tally_uword));
	if (!v->tally__global)
		return -ENOMEM;
	err = tally__pcpu_alloc(&v->tally__pcpu, nr_items * sizeof(struct tally__vec_pcpu));
	if (err) {
		free(v->tally__global);
		v->tally__global = NULL;
		return err;
	}
	v->tally__nr_items = nr_items;
	v->tally__threshold = threshold ? threshold : tally_vec_default_threshold();
	return 0;
}

/* tally_vec_destroy - free v. NULL is a no-op. Not concurrent with any
 * other call on v. */
static inline void tally_vec_destroy(struct tally_vec *v)
{
	if (!v)
		return;
	free(v->tally__global);
	v->tally__global = NULL;
	tally__pcpu_free(&v->tally__pcpu);
}

/* tally_vec_threshold - the fold threshold v uses. */
TALLY__INLINE int tally_vec_threshold(const struct tally_vec *v)
{
	return v ? v->tally__threshold : 0;
}

TALLY__INLINE struct tally__vec_pcpu *tally__vec_slot(const struct tally_vec *v, unsigned s,
						      unsigned item)
{
	return (struct tally__vec_pcpu *)tally__pcpu_at(&v->tally__pcpu, s,
							item * sizeof(struct tally__vec_pcpu));
}

/*
 * Fold slot s's diff for item while it is past the threshold. kind: 0 for
 * mod (|diff| > t, no overstep), +1 for inc, -1 for dec (overstep t/2).
 * Lock-free, and conserving as in tally_counter: each successful CAS moves
 * exactly (new b - old b) into the global. b is loaded acquire before w,
 * pairing with the release CAS of the fold that stored it; the loop
 * re-checks after every attempt (see tally__counter_fold_slot).
 */
TALLY__INLINE void tally__vec_fold_slot(struct tally_vec *v, unsigned s, unsigned item, int kind)
{
	struct tally__vec_pcpu *p = tally__vec_slot(v, s, item);
	tally_sword t = v->tally__threshold;
	for (;;) {
		tally_sword over = 0;
		tally_uword b = tally__load_acq(&p->b);
		tally_uword w = tally__load(&p->w);
		tally_sword diff = tally__to_signed(w - b);
		if (kind > 0) {
			if (diff <= t)
				return;
			over = t / 2;
		} else if (kind < 0) {
			if (diff >= -t)
				return;
			over = -(t / 2);
		} else if (diff <= t && diff >= -t) {
			return;
		}
		/* New diff is -over: b = w + over; the global gains diff + over. */
		if (tally__cas_rel(&p->b, &b, w + (tally_uword)over))
			tally__add(&v->tally__global[item],
				   (tally_uword)diff + (tally_uword)over);
	}
}

TALLY__INLINE int tally__vec_add(struct tally_vec *v, unsigned item, tally_sword d, int kind)
{
	unsigned s;
	if (tally__bad(!v || item >= v->tally__nr_items))
		return -EINVAL;
	tally__pcpu_add(&v->tally__pcpu,
			item * sizeof(struct tally__vec_pcpu) + offsetof(struct tally__vec_pcpu, w),
			(tally_uword)d, &s);
	tally__vec_fold_slot(v, s, item, kind);
	return 0;
}

/*
 * tally_vec_mod - add d (any sign) to item (mod_node_page_state()).
 * Returns 0, or -EINVAL for a NULL v or item out of range (nothing
 * changed). Any thread, beside every call but init/destroy. Wait-free on
 * the common path (one per-CPU RMW), a CAS and an atomic add on a fold.
 * Relaxed.
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
 * tally_vec_read_monotonic - the raw global of item as unsigned, never
 * clamped (node_page_state_monotonic()), plus TALLY_MONOTONIC_BIAS. For
 * event counters: subtract two samples with tally_delta(). Lags the exact
 * value by at most threshold * CPU slots (+ t/2 per slot after inc/dec
 * oversteps, + adds in flight). O(1), wait-free, any thread. Bad item: 0.
 */
TALLY__INLINE tally_uword tally_vec_read_monotonic(const struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	return tally__load(&v->tally__global[item]) + TALLY_MONOTONIC_BIAS;
}

/*
 * tally_vec_read - the global of item, negative as 0 (node_page_state()).
 * For gauges. Same bound and contract as tally_vec_read_monotonic.
 */
TALLY__INLINE tally_uword tally_vec_read(const struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	return tally_clamp(tally__to_signed(tally__load(&v->tally__global[item])));
}

/*
 * tally_vec_read_exact - the exact value of item: every completed mod,
 * folded or not (the global plus every CPU's diff). O(CPUs), wait-free,
 * any thread; with updates running it includes every update completed
 * before the call. Modular in 2^W. Bad item: 0.
 */
static inline tally_sword tally_vec_read_exact(const struct tally_vec *v, unsigned item)
{
	if (tally__bad(!v || item >= v->tally__nr_items))
		return 0;
	return tally__to_signed(tally__pcpu_sum(&v->tally__pcpu,
						item * sizeof(struct tally__vec_pcpu) +
							offsetof(struct tally__vec_pcpu, w)));
}

/*
 * tally_vec_fold - fold every CPU's diffs into the globals
 * (refresh_cpu_vm_stats()): afterwards read == exact while updates are
 * quiescent. Lock-free; any thread, beside every call but init/destroy.
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
			tally_uword b = tally__load_acq(&p->b);
			tally_uword w = tally__load(&p->w);
			if (w != b && tally__cas_rel(&p->b, &b, w))
				tally__add(&v->tally__global[i], w - b);
		}
	}
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_VEC_H */
