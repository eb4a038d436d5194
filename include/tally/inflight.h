/**
 * @file
 * tally/inflight.h - tally_inflight: per-type in-flight gauges and the
 * isolation throttle (MGLRU's too_many_isolated(), from "mm/vmscan:
 * throttle MGLRU eviction when isolated folios pile up", Hui Zhu, v7).
 *
 * A reclaimer isolates items of some type (anon, file, ...) from a shared
 * pool, works on them without the pool's lock, and puts them back. When
 * concurrent reclaimers isolate too much at once, they trample the same
 * items and thrash; the throttle makes a reclaimer wait once for others to
 * put items back, then give up.
 *
 *   struct tally_inflight f;
 *   tally_inflight_init(&f, 2, 0);               // 2 types, wait 20 ms
 *   struct tally_inflight_caller who = { .io_fs = true };
 *   bool fatal;
 *   unsigned allowed = tally_inflight_allowed(&f, 3u, evictable, pool,
 *                                             &who, &fatal);
 *   if (!allowed) return;                        // stop reclaim
 *   // ... isolate n items of a type in allowed under the pool's lock
 *   tally_inflight_isolate(&f, type, n);
 *   // ... work, put back under the pool's lock
 *   tally_inflight_putback(&f, type, n);         // wakes throttled waiters
 *
 * The rules (lru_gen_too_many_isolated(), throttle_evictable_types()):
 *  - too_many(type): false for exempt callers (kswapd, callers whose
 *    writeback throttling is not sane). Otherwise, with evictable the
 *    type's evictable size: evictable >>= 3 first for callers allowed to do
 *    IO and FS (restricted GFP_NOIO/GFP_NOFS callers get 8x the room, so
 *    they are not blocked by ordinary reclaimers, which would deadlock);
 *    then too many when isolated > evictable / TALLY_MIN_NR_GENS.
 *  - allowed(types): a type with no evictable items is never allowed
 *    (empty is not over-isolated). If no type has items: return 0 at once,
 *    never wait. If some types are allowed: wake the waiters, return them.
 *    If every type with items is over-isolated: wait once (bounded, like
 *    reclaim_throttle()'s HZ/50; woken early by a putback or a caller that
 *    finds a type allowed), check again, and give up with 0 if nothing
 *    changed. A caller whose fatal flag is set after the wait gets 0 and
 *    *fatal = true (the kernel's fatal_signal_pending(): the caller should
 *    pretend progress and unwind).
 *
 * Concurrency: read, too_many, waiters and wait_ns are wait-free (a load);
 * isolate and putback are lock-free (a CAS loop; putback then wakes, as
 * wake does); wake is one load when nobody waits, else it takes the
 * waiters' mutex; stats copies relaxed counters (each exact, not one
 * instant). allowed blocks only in its one bounded wait (and on the
 * waiters' mutex, and in the caller's evictable callback). The wait uses a
 * pthread mutex and a condition variable on the monotonic clock (the wall
 * clock where the platform cannot wait on another, e.g. macOS); nothing
 * else does. The clock is chosen once by tally_inflight_init and recorded
 * in the object, so translation units built with different feature-test
 * macros (-std=c11 beside -std=gnu11) agree on every deadline. Every call
 * but init/destroy may run beside every other.
 * Ordering: the gauge updates and the waiters count are sequentially
 * consistent, so a putback that races with a reclaimer going to sleep
 * either sees it waiting (and wakes it) or is seen by its last check.
 */
#ifndef TALLY_INFLIGHT_H
#define TALLY_INFLIGHT_H

#include <tally/monotonic.h>
#include <tally/os.h>

#include <pthread.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most types one gauge set tracks (the allowed mask is an unsigned). */
#define TALLY_INFLIGHT_TYPES_MAX 8
/** The fewest generations MGLRU keeps: the threshold divisor. */
#define TALLY_MIN_NR_GENS 2
/* The default bound of the one wait: TALLY_INFLIGHT_WAIT_NS (config.h). */
/** Longest wait accepted by tally_inflight_init (one hour). */
#define TALLY_INFLIGHT_WAIT_MAX_NS 3600000000000ull

/** Who asks (the fields of scan_control the throttle looks at). */
struct tally_inflight_caller {
	bool exempt;      /**< never over-isolated: kswapd, !writeback_throttling_sane */
	bool io_fs;       /**< may do IO and FS (GFP_KERNEL): 8x less room */
	const int *fatal; /**< NULL, or an int the caller sets nonzero when it is about
			   to die (a fatal signal); read before and after the wait */
};

/** Evictable size of a type, as the caller measures it (for example
 * tally_sum_clamped() over per-generation counters):
 * `tally_uword fn(void *arg, unsigned type)`, called by
 * tally_inflight_allowed() from the calling thread with its arg, for each
 * type in the mask, before and again after a wait. */
typedef tally_uword (*tally_inflight_evictable_fn)(void *arg, unsigned type);

/** Throttle statistics (monotonic, relaxed; for reports and tests). */
struct tally_inflight_stats {
	tally_uword throttled; /**< waits started (mm_vmscan_throttled) */
	tally_uword woken;     /**< waits ended early by a wake or a putback */
	tally_uword timeouts;  /**< waits that ran their full bound */
	tally_uword gave_up;   /**< allowed() returned 0 after its wait */
	tally_uword fatal;     /**< allowed() returned 0 for the fatal flag */
};

/** Per-type in-flight gauges and the isolation throttle: see the
 * top of this file. Opaque: set up with tally_inflight_init(), then only
 * the tally_inflight_* calls. */
struct tally_inflight {
	/* private: use the tally_inflight_* calls */
	tally_uword tally__isolated[TALLY_INFLIGHT_TYPES_MAX];
	unsigned tally__nr_types;
	unsigned tally__waiters;  /* threads in (or entering) the wait */
	uint64_t tally__wake_seq; /* bumped by every wake, under tally__lock */
	uint64_t tally__wait_ns;
	struct tally_inflight_stats tally__stats;
	pthread_mutex_t tally__lock;
	struct tally__os_cond tally__cond; /* its clock recorded at init */
};

/**
 * tally_inflight_init - nr_types gauges (1..TALLY_INFLIGHT_TYPES_MAX) at 0.
 * wait_ns: the bound of the one wait, 1..TALLY_INFLIGHT_WAIT_MAX_NS, or 0
 * for TALLY_INFLIGHT_WAIT_NS. Returns 0, -EINVAL (f untouched) or the
 * negative error of pthread_*_init (then destroy is a no-op). Not
 * concurrent with any call on f.
 */
static inline int tally_inflight_init(struct tally_inflight *f, unsigned nr_types,
				      uint64_t wait_ns)
{
	int err;
	if (tally__bad(!f || !nr_types || nr_types > TALLY_INFLIGHT_TYPES_MAX ||
		       wait_ns > TALLY_INFLIGHT_WAIT_MAX_NS))
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	f->tally__nr_types = nr_types;
	f->tally__wait_ns = wait_ns ? wait_ns : TALLY_INFLIGHT_WAIT_NS;
	err = pthread_mutex_init(&f->tally__lock, NULL);
	if (err) {
		f->tally__nr_types = 0; /* destroy is a no-op */
		return -err;
	}
	/* The wait's clock is chosen here, once, and recorded in f. */
	err = tally__os_cond_init(&f->tally__cond);
	if (err) {
		pthread_mutex_destroy(&f->tally__lock);
		f->tally__nr_types = 0;
		return err;
	}
	return 0;
}

/** tally_inflight_destroy - release f's mutex and condition variable. NULL
 * is a no-op. No thread may be in a call on f. */
static inline void tally_inflight_destroy(struct tally_inflight *f)
{
	if (!f || !f->tally__nr_types)
		return;
	tally__os_cond_destroy(&f->tally__cond);
	pthread_mutex_destroy(&f->tally__lock);
	f->tally__nr_types = 0;
}

/** tally_inflight_wait_ns - the bound of f's one wait. NULL: 0. */
TALLY__INLINE uint64_t tally_inflight_wait_ns(const struct tally_inflight *f)
{
	return f ? f->tally__wait_ns : 0;
}

/**
 * tally_inflight_read - items of type isolated now. Lock-free, any thread.
 * Bad f or type: 0.
 */
TALLY__INLINE tally_uword tally_inflight_read(const struct tally_inflight *f, unsigned type)
{
	if (tally__bad(!f || type >= f->tally__nr_types))
		return 0;
	return __atomic_load_n(&f->tally__isolated[type], __ATOMIC_SEQ_CST);
}

/** tally_inflight_waiters - threads in the throttle's wait now. */
TALLY__INLINE unsigned tally_inflight_waiters(const struct tally_inflight *f)
{
	return f ? __atomic_load_n(&f->tally__waiters, __ATOMIC_SEQ_CST) : 0;
}

/**
 * tally_inflight_wake - wake every thread in the throttle's wait (they
 * check again at once). Cheap when nobody waits (one load). Any thread.
 */
static inline void tally_inflight_wake(struct tally_inflight *f)
{
	if (tally__bad(!f))
		return;
	/* Seq-cst: pairs with the waiter's increment before its last check
	 * (a Dekker pair with the gauge update that preceded this call). */
	if (!__atomic_load_n(&f->tally__waiters, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&f->tally__lock);
	tally__store(&f->tally__wake_seq, tally__load(&f->tally__wake_seq) + 1u);
	tally__os_cond_broadcast(&f->tally__cond);
	pthread_mutex_unlock(&f->tally__lock);
}

/**
 * tally_inflight_isolate - n more items of type are in flight (after
 * isolating them). Returns 0, or -EINVAL for bad f/type or an n that
 * would wrap the gauge (nothing changes). Lock-free.
 */
static inline int tally_inflight_isolate(struct tally_inflight *f, unsigned type, tally_uword n)
{
	tally_uword old;
	if (tally__bad(!f || type >= f->tally__nr_types))
		return -EINVAL;
	old = __atomic_load_n(&f->tally__isolated[type], __ATOMIC_RELAXED);
	do {
		if (tally__bad(old + n < old))
			return -EINVAL;
	} while (!__atomic_compare_exchange_n(&f->tally__isolated[type], &old, old + n, 0,
					      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return 0;
}

/**
 * tally_inflight_putback - n items of type are back (or gone); wakes the
 * throttled waiters. Returns 0, or -EINVAL for bad f/type or n larger than
 * the gauge (nothing changes). Lock-free unless a thread waits (then it
 * takes the waiters' mutex briefly).
 */
static inline int tally_inflight_putback(struct tally_inflight *f, unsigned type, tally_uword n)
{
	tally_uword old;
	if (tally__bad(!f || type >= f->tally__nr_types))
		return -EINVAL;
	old = __atomic_load_n(&f->tally__isolated[type], __ATOMIC_RELAXED);
	do {
		if (tally__bad(n > old))
			return -EINVAL;
	} while (!__atomic_compare_exchange_n(&f->tally__isolated[type], &old, old - n, 0,
					      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	tally_inflight_wake(f);
	return 0;
}

/* The rule of too_many, on an evictable size already read. */
TALLY__INLINE bool tally__inflight_over(tally_uword isolated, tally_uword evictable,
					const struct tally_inflight_caller *who)
{
	if (who && who->exempt)
		return false;
	if (!who || who->io_fs)
		evictable >>= 3;
	return isolated > evictable / TALLY_MIN_NR_GENS;
}

/**
 * tally_inflight_too_many - lru_gen_too_many_isolated(): are too many items
 * of type in flight for who, given the type's evictable size? False for
 * exempt callers; else isolated > (io_fs ? evictable >> 3 : evictable) /
 * TALLY_MIN_NR_GENS. who NULL: an ordinary caller (io_fs, not exempt).
 * Bad f or type: false. Lock-free.
 */
TALLY__INLINE bool tally_inflight_too_many(const struct tally_inflight *f, unsigned type,
					   tally_uword evictable,
					   const struct tally_inflight_caller *who)
{
	if (tally__bad(!f || type >= f->tally__nr_types))
		return false;
	if (who && who->exempt)
		return false;
	return tally__inflight_over(tally_inflight_read(f, type), evictable, who);
}

/* The allowed mask from evictable sizes already read; *has: any type has
 * items. */
TALLY__INLINE unsigned tally__inflight_mask(const struct tally_inflight *f, unsigned types,
					    const tally_uword *ev,
					    const struct tally_inflight_caller *who, bool *has)
{
	unsigned t, allowed = 0;
	*has = false;
	for (t = 0; t < f->tally__nr_types; t++) {
		if (!(types & (1u << t)) || !ev[t])
			continue;
		*has = true;
		if (!tally__inflight_over(tally_inflight_read(f, t), ev[t], who))
			allowed |= 1u << t;
	}
	return allowed;
}

/*
 * The one wait: register as a waiter, check the gauges once more against
 * the evictable sizes of the check that decided to wait (a putback that
 * raced with that check and saw no waiter is seen here), then sleep until
 * a wake or the bound. The evictable callback is not called under the
 * waiters' mutex.
 */
static inline void tally__inflight_throttle(struct tally_inflight *f, unsigned types,
					    const tally_uword *ev,
					    const struct tally_inflight_caller *who)
{
	struct timespec deadline;
	uint64_t seq;
	bool has, early = false;
	int rc = 0;
	tally__add(&f->tally__stats.throttled, 1u);
	/* On the clock recorded at init, whatever this unit's macros say. */
	tally__os_cond_deadline(&f->tally__cond, &deadline, f->tally__wait_ns);
	pthread_mutex_lock(&f->tally__lock);
	/* Seq-cst: pairs with the load in tally_inflight_wake. */
	__atomic_add_fetch(&f->tally__waiters, 1u, __ATOMIC_SEQ_CST);
	seq = tally__load(&f->tally__wake_seq);
	if (tally__inflight_mask(f, types, ev, who, &has)) {
		early = true;
	} else {
		while (tally__load(&f->tally__wake_seq) == seq && rc != ETIMEDOUT)
			rc = tally__os_cond_timedwait(&f->tally__cond, &f->tally__lock, &deadline);
		early = tally__load(&f->tally__wake_seq) != seq;
	}
	__atomic_sub_fetch(&f->tally__waiters, 1u, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&f->tally__lock);
	tally__add(early ? &f->tally__stats.woken : &f->tally__stats.timeouts, 1u);
}

/**
 * tally_inflight_allowed - throttle_evictable_types(): the mask of types
 * (bit t for type t, among those set in types) that who may isolate now,
 * or 0 if reclaim should stop. evictable(arg, t) gives type t's evictable
 * size; it is called again after the wait. fatal (may be NULL) is set
 * true when 0 is returned because who->fatal was set after the wait.
 * Rules: see the top of this file. Bad f or evictable NULL: 0.
 * Blocking: at most one wait of tally_inflight_wait_ns(f), only when every
 * type with items is over-isolated. Any thread.
 */
static inline unsigned tally_inflight_allowed(struct tally_inflight *f, unsigned types,
					      tally_inflight_evictable_fn evictable, void *arg,
					      const struct tally_inflight_caller *who, bool *fatal)
{
	tally_uword ev[TALLY_INFLIGHT_TYPES_MAX];
	bool stalled = false, has;
	unsigned t, allowed;
	if (fatal)
		*fatal = false;
	if (tally__bad(!f || !evictable))
		return 0;
	for (;;) {
		for (t = 0; t < f->tally__nr_types; t++)
			ev[t] = (types & (1u << t)) ? evictable(arg, t) : 0;
		allowed = tally__inflight_mask(f, types, ev, who, &has);
		/* Nothing evictable is not over-isolation: stop, don't wait. */
		if (!has)
			return 0;
		if (allowed) {
			tally_inflight_wake(f);
			return allowed;
		}
		if (stalled) {
			tally__add(&f->tally__stats.gave_up, 1u);
			return 0;
		}
		stalled = true;
		tally__inflight_throttle(f, types, ev, who);
		if (who && who->fatal && __atomic_load_n(who->fatal, __ATOMIC_ACQUIRE)) {
			tally__add(&f->tally__stats.fatal, 1u);
			if (fatal)
				*fatal = true;
			return 0;
		}
	}
}

/** tally_inflight_stats - a copy of f's throttle statistics. */
static inline void tally_inflight_stats(const struct tally_inflight *f,
					struct tally_inflight_stats *s)
{
	if (tally__bad(!s))
		return;
	if (tally__bad(!f)) {
		memset(s, 0, sizeof(*s));
		return;
	}
	s->throttled = tally__load(&f->tally__stats.throttled);
	s->woken = tally__load(&f->tally__stats.woken);
	s->timeouts = tally__load(&f->tally__stats.timeouts);
	s->gave_up = tally__load(&f->tally__stats.gave_up);
	s->fatal = tally__load(&f->tally__stats.fatal);
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_INFLIGHT_H */
