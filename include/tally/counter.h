/*
 * tally/counter.h - tally_counter: one per-CPU counter with percpu_counter
 * semantics (kernel lib/percpu_counter.c).
 *
 *   struct tally_counter c;
 *   tally_counter_init(&c, 0, 0);     // batch 0: max(32, 2 * ncpus)
 *   tally_counter_add(&c, 5);         // any thread, wait-free
 *   tally_counter_read(&c);           // O(1), within batch * ncpus
 *   tally_counter_sum(&c);            // exact, O(CPUs)
 *   tally_counter_destroy(&c);
 *
 * Layout: per CPU a never-reset word w (every add lands in exactly one w)
 * and a base b, the value of w when that CPU last folded. The CPU's local
 * count is w - b. An add that makes |w - b| >= batch folds: it moves w - b
 * into the shared count and sets b = w, exactly the kernel's
 * "count += local; local = 0". Because adds never move, sum = initial +
 * sum of w over CPUs is exact whatever folds are running: nothing can be
 * lost or counted twice, and sum needs no lock.
 */
#ifndef TALLY_COUNTER_H
#define TALLY_COUNTER_H

#include <tally/monotonic.h>
#include <tally/pcpu.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally__counter_pcpu {
	tally_uword w; /* never reset; written by tally__pcpu_add only */
	tally_uword b; /* w at this CPU's last fold; changed by CAS only */
	/* The shared count (initial + everything folded) lives here in the
	 * shared slot's chunk only: on a line of its own, away from the
	 * struct's read-mostly fields that every add loads, so a fold on one
	 * CPU does not evict them from the others. */
	tally_uword count;
};

struct tally_counter {
	/* private: use the tally_counter_* calls */
	tally_uword tally__initial; /* initial value */
	tally_sword tally__batch;
	struct tally__pcpu tally__pcpu;
};

TALLY__INLINE struct tally__counter_pcpu *tally__counter_slot(const struct tally_counter *c,
							      unsigned s)
{
	return (struct tally__counter_pcpu *)tally__pcpu_at(&c->tally__pcpu, s, 0);
}

/* The shared count: in the shared slot's chunk (see tally__counter_pcpu). */
TALLY__INLINE tally_uword *tally__counter_count(const struct tally_counter *c)
{
	return &tally__counter_slot(c, c->tally__pcpu.nr)->count;
}

/* The default batch for this machine: max(32, 2 * CPU slots). */
static inline tally_sword tally_counter_default_batch(void)
{
	unsigned n = 2u * tally__nr_cpu_slots();
	return n > TALLY_COUNTER_MIN_BATCH ? (tally_sword)n : TALLY_COUNTER_MIN_BATCH;
}

/*
 * tally_counter_init - set c up with value initial.
 * batch: fold threshold, 1..TALLY_SWORD_MAX/2, or 0 for the default.
 * Returns 0, -EINVAL (NULL c, batch out of range; c untouched) or -ENOMEM.
 * Not concurrent with any other call on c.
 */
static inline int tally_counter_init(struct tally_counter *c, tally_sword initial,
				     tally_sword batch)
{
	int err;
	if (tally__bad(!c || batch < 0 || batch > TALLY_SWORD_MAX / 2))
		return -EINVAL;
	if (!batch)
		batch = tally_counter_default_batch();
	err = tally__pcpu_alloc(&c->tally__pcpu, sizeof(struct tally__counter_pcpu));
	if (err)
		return err;
	*tally__counter_count(c) = (tally_uword)initial;
	c->tally__initial = (tally_uword)initial;
	c->tally__batch = batch;
	return 0;
}

/* tally_counter_destroy - free c's per-CPU area. NULL is a no-op.
 * Not concurrent with any other call on c. */
static inline void tally_counter_destroy(struct tally_counter *c)
{
	if (c)
		tally__pcpu_free(&c->tally__pcpu);
}

/*
 * Fold slot s's local count into the shared count while |w - b| >= limit.
 * Lock-free: a CAS on b lets exactly one folder move each local count, and
 * every successful CAS moves exactly (new b - old b) into the count, so
 * count - sum(b) never changes and nothing is lost or counted twice.
 * b is loaded before w, acquire, pairing with the release CAS of an
 * earlier fold: the w seen is at least as new as the w that fold stored.
 * The loop re-checks after every attempt, so a folder that lost its CAS
 * to a fold of an older w, or whose CAS won on a stale (ABA) b, leaves
 * the slot within the bound: it retries only when some fold succeeded.
 */
TALLY__INLINE void tally__counter_fold_slot(struct tally_counter *c, unsigned s,
					    tally_sword limit)
{
	struct tally__counter_pcpu *p = tally__counter_slot(c, s);
	for (;;) {
		tally_uword b = tally__load_acq(&p->b);
		tally_uword w = tally__load(&p->w);
		tally_sword local = tally__to_signed(w - b);
		if (local < limit && local > -limit)
			return;
		if (tally__cas_rel(&p->b, &b, w))
			tally__add(tally__counter_count(c), (tally_uword)local);
	}
}

/*
 * tally_counter_add - add delta (any sign) to c.
 * Any thread, concurrently with every call but init/destroy. Wait-free on
 * the common path (one per-CPU RMW); a fold adds a CAS and an atomic add
 * (lock-free: a CAS is retried only after another fold of this slot).
 * Relaxed: orders nothing around it. A NULL c is ignored.
 */
TALLY__INLINE void tally_counter_add(struct tally_counter *c, tally_sword delta)
{
	unsigned s;
	if (tally__bad(!c))
		return;
	tally__pcpu_add(&c->tally__pcpu, offsetof(struct tally__counter_pcpu, w),
			(tally_uword)delta, &s);
	tally__counter_fold_slot(c, s, c->tally__batch);
}

/*
 * tally_counter_read - the approximate value, O(1): what has been folded.
 * Error: |read - sum| < tally_counter_error_bound(c), plus the adds in
 * flight (threads sharing a CPU can each be mid-add). Any thread; wait-free.
 */
TALLY__INLINE tally_sword tally_counter_read(const struct tally_counter *c)
{
	if (tally__bad(!c))
		return 0;
	return tally__to_signed(tally__load(tally__counter_count(c)));
}

/* tally_counter_error_bound - batch * slots: the most read() can be off by
 * while adds are quiescent (saturates at TALLY_SWORD_MAX). NULL c: 0. */
TALLY__INLINE tally_sword tally_counter_error_bound(const struct tally_counter *c)
{
	tally_sword n;
	if (tally__bad(!c))
		return 0;
	n = (tally_sword)tally__pcpu_slots(&c->tally__pcpu);
	if (c->tally__batch > TALLY_SWORD_MAX / n)
		return TALLY_SWORD_MAX;
	return c->tally__batch * n;
}

/* tally_counter_batch - the fold threshold c uses. NULL c: 0. */
TALLY__INLINE tally_sword tally_counter_batch(const struct tally_counter *c)
{
	return tally__bad(!c) ? 0 : c->tally__batch;
}

/* tally_counter_read_positive - read, negative values as 0. */
TALLY__INLINE tally_uword tally_counter_read_positive(const struct tally_counter *c)
{
	return tally_clamp(tally_counter_read(c));
}

/*
 * tally_counter_sum - the exact value: initial plus every completed add.
 * Wait-free (one relaxed load per CPU slot); any thread, beside any call
 * but init/destroy. With adds running it returns initial plus a set of
 * adds that includes every add completed before the call and none that
 * started after it returned. Modular in 2^W.
 */
static inline tally_sword tally_counter_sum(struct tally_counter *c)
{
	if (tally__bad(!c))
		return 0;
	return tally__to_signed(c->tally__initial +
				tally__pcpu_sum(&c->tally__pcpu,
						offsetof(struct tally__counter_pcpu, w)));
}

/* tally_counter_sum_positive - sum, negative values as 0. */
static inline tally_uword tally_counter_sum_positive(struct tally_counter *c)
{
	return tally_clamp(tally_counter_sum(c));
}

/*
 * tally_counter_fold_all - fold every CPU's local count into the shared
 * count, so read == sum while adds are quiescent. Lock-free; any thread.
 */
static inline void tally_counter_fold_all(struct tally_counter *c)
{
	unsigned s, n;
	if (tally__bad(!c))
		return;
	n = tally__pcpu_slots(&c->tally__pcpu);
	for (s = 0; s < n; s++)
		tally__counter_fold_slot(c, s, 1);
}

/*
 * tally_counter_compare - sign of (value - rhs): -1, 0 or 1.
 * Decides from read() when |read - rhs| > the error bound (which cannot
 * flip it), else from the exact sum (__percpu_counter_compare).
 * Any thread; wait-free. A NULL c compares as 0.
 */
static inline int tally_counter_compare(struct tally_counter *c, tally_sword rhs)
{
	tally_sword count, bound;
	if (tally__bad(!c))
		return 0;
	count = tally_counter_read(c);
	bound = tally_counter_error_bound(c);
	/* Compare in the unsigned domain: count - rhs may overflow a sword. */
	if (count > rhs ? (tally_uword)count - (tally_uword)rhs > (tally_uword)bound
			: (tally_uword)rhs - (tally_uword)count > (tally_uword)bound)
		return count > rhs ? 1 : -1;
	count = tally_counter_sum(c);
	return count > rhs ? 1 : count < rhs ? -1 : 0;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_COUNTER_H */
