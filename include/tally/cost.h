/**
 * @file
 * tally/cost.h - tally_cost: the anon/file scan-balance cost accumulator
 * with lrusize/4 halving, and get_scan_count()'s scan fraction (the
 * read-side fold of "reduce lru_lock contention via vmstat-derived
 * scan-balance cost", Usama Arif, 2026; the classic lru_note_cost()).
 *
 * Two ways to feed one accumulator (pick one per accumulator):
 *
 *  - Read side (the patch, tally_cost_fold): producers only count events
 *    in monotonic statistics (rotations, refaults, pageouts: a tally_vec or
 *    a tally_group). The consumer samples the raw monotonic values and
 *    folds the deltas since its last fold:
 *
 *      struct tally_cost_input in[2];
 *      in[TALLY_ANON].rotated = PGROTATE_ANON;
 *      in[TALLY_ANON].io = WORKINGSET_RESTORE_ANON + NR_VMSCAN_WRITE;
 *      in[TALLY_FILE].rotated = PGROTATE_FILE;
 *      in[TALLY_FILE].io = WORKINGSET_RESTORE_FILE;
 *      tally_cost_fold(&c, in, lrusize, cost);
 *
 *    per side: count += (io - last_io) * 32 + (rotated - last_rotated),
 *    modulo 2^W, then last_* = the inputs; then, while anon + file >
 *    lrusize / 4, both counts are halved (lrusize / 4 == 0: both reach 0).
 *    The whole delta since the last fold decays in one go, so anon and
 *    file keep their proportions across a reclaim gap.
 *
 *  - Producer side (classic lru_note_cost, tally_cost_note): every event
 *    adds cost = nr_io * 32 + nr_rotated (modulo 2^W) to its side, then,
 *    if anon + file > lrusize / 4, halves both once. A zero cost changes
 *    nothing (no decay either: lru_note_cost() returns at once). The
 *    kernel repeats this at every ancestor lruvec, each under its own
 *    lru_lock.
 *
 * Arithmetic: counts, inputs and deltas are tally_uword, modulo 2^W like
 * the kernel's unsigned long. The comparison anon + file > lrusize / 4 is
 * made without overflow (the kernel's sum could wrap only for counts that
 * no real LRU produces; here a wrapped sum can never stop the halving).
 *
 * Concurrency. Every mutator (fold, note) runs under the accumulator's own
 * cost lock (a spinlock word inside struct tally_cost, taken by nothing
 * else): blocking and unfair (no FIFO order); waiters spin, then yield.
 * tally_cost_read never takes it: the lock word doubles as a sequence
 * count (odd while a writer holds it), so readers retry around a
 * concurrent fold and always see one fold's complete result, never anon
 * from one fold and file from another. Readers block only while a fold or
 * note is in progress (a seqlock reader), and never delay a writer.
 *
 *   call                        beside                      progress
 *   tally_cost_init             nothing on c                wait-free
 *   tally_cost_fold, _note      every call but init         blocking (cost lock;
 *                                                           a zero-cost note
 *                                                           returns at once)
 *   tally_cost_lock             every call but init         blocking (spins,
 *                                                           then yields)
 *   tally_cost_unlock,          every call but init, by     wait-free
 *   _fold_locked, _note_locked  the thread holding the lock
 *   tally_cost_read, _last      every call but init         blocking reader:
 *                                                           retries over a fold
 *   tally_cost_trylock          every call but init         wait-free
 *   tally_scan_fraction         anything (pure)             wait-free
 * Ordering: the cost lock is acquire/release; a read that returns after a
 * fold's unlock (happens-after it) sees that fold or a later one.
 *
 * Why the fold is not lock-free. The state a fold must change atomically is
 * four words (two counts and, per side, the combined weighted input
 * last_io * 32 + last_rotated; the fold depends on last_* only through that
 * sum). No portable instruction swaps four words; a double-width CAS holds
 * two, and not at all on -m32 with 64-bit words. The remaining lock-free
 * designs swap a pointer to an immutable snapshot, which needs safe memory
 * reclamation (hazard pointers or RCU) or per-thread node pools with
 * version tags that callers would have to pass in; either would drag
 * liburcu or a new argument into a header that must stay dependency-free.
 * Skipping or combining folds instead is not equivalent to any sequential
 * order: halving truncates, so fold(a) then fold(b) differs from fold(b)
 * alone. And the fold runs once per reclaim pass on a lock that producers
 * never touch (that is the point of the patch), so the lock is contended
 * only between reclaimers of the same lruvec. A short critical section
 * under a dedicated lock, read without it, is the honest design;
 * stress_cost.c checks that every concurrent fold's result equals the
 * sequential replay of the folds in lock order.
 *
 * Input order. A fold's inputs must be no older than those of the fold
 * before it (in lock order): an older sample gives a negative delta, which
 * modular arithmetic reads as a huge one. When several threads fold the
 * same accumulator, read the inputs under the cost lock:
 *
 *      tally_cost_lock(&c);
 *      ... read in[] ...
 *      tally_cost_fold_locked(&c, in, lrusize, cost);
 *      tally_cost_unlock(&c);
 *
 * A single folding thread (or folds serialised by the caller) may call
 * tally_cost_fold() with inputs read anywhere.
 */
#ifndef TALLY_COST_H
#define TALLY_COST_H

#include <tally/monotonic.h>
#include <tally/os.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { TALLY_ANON = 0, TALLY_FILE = 1 };

/** The weight of one IO event against one rotation (SWAP_CLUSTER_MAX). */
#define TALLY_SWAP_CLUSTER_MAX 32
/** The largest swappiness (MAX_SWAPPINESS). */
#define TALLY_MAX_SWAPPINESS 200

/** One side's raw monotonic inputs, as read (never clamped). */
struct tally_cost_input {
	tally_uword rotated; /**< rotations: one unit of cost each */
	tally_uword io;      /**< IO events: TALLY_SWAP_CLUSTER_MAX units each */
};

struct tally__cost_side {
	tally_uword count;        /* the decayed cost */
	tally_uword last_rotated; /* inputs at the last fold */
	tally_uword last_io;
};

/** A scan-balance cost accumulator (anon and file sides): see the
 * top of this file. Opaque: set up with tally_cost_init(), then only the
 * tally_cost_* calls. */
struct tally_cost {
	/* private: use the tally_cost_* calls */
	struct tally__cost_side tally__side[2];
	/* The cost lock and the readers' sequence count in one word: even
	 * when free, odd while a writer holds it; +1 to take, +1 to drop. */
	unsigned tally__seq;
};

/* Spins before a waiter yields its CPU (the holder may be preempted). */
#define TALLY__COST_SPINS 64

/* Tests only: TALLY__COST_READ_HOOK(c) runs in the window of a seqlock
 * read of c (const) where a writer makes a torn read: in tally_cost_read
 * between the anon and file count loads, in tally_cost_last after each
 * side's loads. A test folds or notes there (tests/plain/cost_seqlock.c)
 * so the read must retry every time, not when a schedule happens to put
 * a writer there. Nothing by default. */
#ifndef TALLY__COST_READ_HOOK
#  define TALLY__COST_READ_HOOK(c) ((void)0)
#endif

/**
 * tally_cost_init - both counts and all last_* inputs 0, lock free.
 * NULL is a no-op. Not concurrent with any other call on c.
 */
static inline void tally_cost_init(struct tally_cost *c)
{
	if (tally__bad(!c))
		return;
	memset(c, 0, sizeof(*c));
}

/**
 * tally_cost_trylock - take c's cost lock if it is free. True if taken.
 * Acquire ordering on success (pairs with tally_cost_unlock's release).
 * Wait-free. NULL: false.
 */
TALLY__INLINE bool tally_cost_trylock(struct tally_cost *c)
{
	unsigned s;
	if (tally__bad(!c))
		return false;
	s = tally__load(&c->tally__seq);
	if (s & 1u)
		return false;
	return __atomic_compare_exchange_n(&c->tally__seq, &s, s + 1u, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* One round of waiting for the cost lock: spin, and every
 * TALLY__COST_SPINS rounds yield the CPU (the holder may be preempted). */
TALLY__INLINE void tally__cost_backoff(unsigned *spins)
{
	if (++*spins < TALLY__COST_SPINS) {
		tally__cpu_relax();
	} else {
		*spins = 0;
		tally__os_yield();
	}
}

/**
 * tally_cost_lock - take c's cost lock, spinning then yielding while it is
 * held. Blocking. Acquire ordering. Not recursive. NULL: no-op.
 */
static inline void tally_cost_lock(struct tally_cost *c)
{
	unsigned spins = 0;
	if (tally__bad(!c))
		return;
	while (!tally_cost_trylock(c))
		tally__cost_backoff(&spins);
}

/**
 * tally_cost_unlock - drop c's cost lock (held by the caller). Release
 * ordering: pairs with the acquire in tally_cost_trylock and with the
 * first sequence load in tally_cost_read. NULL: no-op.
 */
TALLY__INLINE void tally_cost_unlock(struct tally_cost *c)
{
	if (tally__bad(!c))
		return;
	__atomic_store_n(&c->tally__seq, tally__load(&c->tally__seq) + 1u, __ATOMIC_RELEASE);
}

/*
 * The fields readers see are stored with release and loaded with acquire
 * (no fences: TSan does not model them). A reader that loads a value
 * stored inside a critical section synchronises with that store, so the
 * odd sequence the writer set before it is visible to the reader's second
 * sequence load, and the reader retries.
 */
#define tally__cost_put(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define tally__cost_get(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

/* a + b > limit, without overflow. */
TALLY__INLINE bool tally__cost_over(tally_uword a, tally_uword b, tally_uword limit)
{
	return a > limit || b > limit - a;
}

/* Store both counts (cost lock held). */
TALLY__INLINE void tally__cost_store(struct tally_cost *c, tally_uword a, tally_uword f)
{
	tally__cost_put(&c->tally__side[TALLY_ANON].count, a);
	tally__cost_put(&c->tally__side[TALLY_FILE].count, f);
}

/**
 * tally_cost_fold_locked - tally_cost_fold for a caller that holds c's cost
 * lock (so it can read the inputs under it). Same arguments and rules.
 */
static inline void tally_cost_fold_locked(struct tally_cost *c,
					  const struct tally_cost_input in[2],
					  tally_uword lrusize, tally_uword cost[2])
{
	tally_uword n[2], limit = lrusize / 4u;
	int i;
	if (tally__bad(!c || !in)) {
		if (cost)
			cost[0] = cost[1] = 0;
		return;
	}
	for (i = 0; i < 2; i++) {
		struct tally__cost_side *s = &c->tally__side[i];
		tally_uword d = (tally_uword)((tally_uword)(in[i].io - s->last_io) *
						      (tally_uword)TALLY_SWAP_CLUSTER_MAX +
					      (tally_uword)(in[i].rotated - s->last_rotated));
		n[i] = (tally_uword)(s->count + d);
		tally__cost_put(&s->last_rotated, in[i].rotated);
		tally__cost_put(&s->last_io, in[i].io);
	}
	/* Halving both k times gives (a >> k, f >> k); at most W + 1 rounds. */
	while (tally__cost_over(n[0], n[1], limit)) {
		n[0] >>= 1;
		n[1] >>= 1;
	}
	tally__cost_store(c, n[0], n[1]);
	if (cost) {
		cost[0] = n[0];
		cost[1] = n[1];
	}
}

/**
 * tally_cost_fold - the read-side fold (prepare_scan_control()).
 * in: the raw monotonic inputs per side (rotations and IO events);
 * lrusize: the LRU size the counts decay against; cost: if not NULL,
 * receives the counts after the fold ([TALLY_ANON], [TALLY_FILE]).
 * Per side count += (io - last_io) * 32 + (rotated - last_rotated)
 * (modular), last_* = in; then while anon + file > lrusize / 4, both are
 * halved. NULL c or in: nothing changes, cost reads {0, 0}.
 * Takes c's cost lock: blocking; any thread; see "Input order" above for
 * concurrent folders. Its result is the result of folding in the order the
 * lock was taken.
 */
static inline void tally_cost_fold(struct tally_cost *c, const struct tally_cost_input in[2],
				   tally_uword lrusize, tally_uword cost[2])
{
	if (tally__bad(!c || !in)) {
		if (cost)
			cost[0] = cost[1] = 0;
		return;
	}
	tally_cost_lock(c);
	tally_cost_fold_locked(c, in, lrusize, cost);
	tally_cost_unlock(c);
}

/* nr_io * SWAP_CLUSTER_MAX + nr_rotated, modulo 2^W (the kernel's
 * unsigned long cost). */
TALLY__INLINE tally_uword tally__cost_weigh(tally_uword nr_io, tally_uword nr_rotated)
{
	return (tally_uword)((tally_uword)(nr_io * (tally_uword)TALLY_SWAP_CLUSTER_MAX) +
			     nr_rotated);
}

/**
 * tally_cost_note_locked - tally_cost_note for a caller that holds c's
 * cost lock. Same arguments and rules.
 */
static inline void tally_cost_note_locked(struct tally_cost *c, int side, tally_uword nr_io,
					  tally_uword nr_rotated, tally_uword lrusize)
{
	tally_uword n[2], limit = lrusize / 4u;
	tally_uword cost = tally__cost_weigh(nr_io, nr_rotated);
	if (tally__bad(!c || (side != TALLY_ANON && side != TALLY_FILE)))
		return;
	/* lru_note_cost(): no cost, no decay. */
	if (!cost)
		return;
	n[0] = c->tally__side[0].count;
	n[1] = c->tally__side[1].count;
	n[side] = (tally_uword)(n[side] + cost);
	if (tally__cost_over(n[0], n[1], limit)) {
		n[0] >>= 1;
		n[1] >>= 1;
	}
	tally__cost_store(c, n[0], n[1]);
}

/**
 * tally_cost_note - the classic producer-side update (lru_note_cost()) for
 * one lruvec: cost = nr_io * 32 + nr_rotated (modular); if cost is 0,
 * nothing changes and the lock is not taken (lru_note_cost()'s early
 * return: no decay without a cost). Otherwise side's count += cost; then
 * if anon + file > lrusize / 4, both are halved once. The caller walks the
 * ancestors itself. Bad c or side (not TALLY_ANON/TALLY_FILE): nothing
 * changes. Takes c's cost lock (uncontended when the caller already
 * serialises notes, as the kernel does with lru_lock): blocking.
 */
static inline void tally_cost_note(struct tally_cost *c, int side, tally_uword nr_io,
				   tally_uword nr_rotated, tally_uword lrusize)
{
	if (tally__bad(!c || (side != TALLY_ANON && side != TALLY_FILE)))
		return;
	if (!tally__cost_weigh(nr_io, nr_rotated))
		return;
	tally_cost_lock(c);
	tally_cost_note_locked(c, side, nr_io, nr_rotated, lrusize);
	tally_cost_unlock(c);
}

/**
 * tally_cost_read - the current counts, cost[TALLY_ANON], cost[TALLY_FILE],
 * both from one fold or note (never mixed). Never takes the cost lock:
 * retries while a writer holds it (a seqlock reader), so it may spin for
 * the length of one fold. Any thread. NULL c: {0, 0}; NULL cost: no-op.
 */
static inline void tally_cost_read(const struct tally_cost *c, tally_uword cost[2])
{
	unsigned s1, s2, spins = 0;
	tally_uword a, f;
	if (tally__bad(!cost))
		return;
	if (tally__bad(!c)) {
		cost[0] = cost[1] = 0;
		return;
	}
	for (;;) {
		/* Pairs with the release in tally_cost_unlock. */
		s1 = tally__load_acq(&c->tally__seq);
		if (s1 & 1u) {
			tally__cost_backoff(&spins);
			continue;
		}
		a = tally__cost_get(&c->tally__side[TALLY_ANON].count);
		TALLY__COST_READ_HOOK(c);
		f = tally__cost_get(&c->tally__side[TALLY_FILE].count);
		/* After the acquire loads: sees the odd sequence of any writer
		 * whose stores they saw. */
		s2 = tally__load(&c->tally__seq);
		if (s1 == s2)
			break;
	}
	cost[0] = a;
	cost[1] = f;
}

/**
 * tally_cost_last - the inputs of the last fold (what the next fold
 * subtracts), for inspection. Same contract as tally_cost_read. NULL c:
 * zeros; NULL last: no-op.
 */
static inline void tally_cost_last(const struct tally_cost *c, struct tally_cost_input last[2])
{
	unsigned s1, s2, spins = 0;
	int i;
	if (tally__bad(!last))
		return;
	if (tally__bad(!c)) {
		memset(last, 0, 2 * sizeof(*last));
		return;
	}
	for (;;) {
		s1 = tally__load_acq(&c->tally__seq); /* as in tally_cost_read */
		if (s1 & 1u) {
			tally__cost_backoff(&spins);
			continue;
		}
		for (i = 0; i < 2; i++) {
			last[i].rotated = tally__cost_get(&c->tally__side[i].last_rotated);
			last[i].io = tally__cost_get(&c->tally__side[i].last_io);
			TALLY__COST_READ_HOOK(c);
		}
		s2 = tally__load(&c->tally__seq);
		if (s1 == s2)
			return;
	}
}

/* ---- tally_scan_fraction: exact 128-bit arithmetic in 64-bit halves ---- */
struct tally__u128 {
	uint64_t hi, lo;
};

TALLY__INLINE struct tally__u128 tally__u128_of(uint64_t v)
{
	struct tally__u128 r = {0, v};
	return r;
}

TALLY__INLINE struct tally__u128 tally__u128_add(struct tally__u128 a, struct tally__u128 b)
{
	struct tally__u128 r;
	r.lo = a.lo + b.lo;
	r.hi = a.hi + b.hi + (r.lo < a.lo);
	return r;
}

/* a * k for k < 2^32. */
TALLY__INLINE struct tally__u128 tally__u128_mul32(struct tally__u128 a, uint32_t k)
{
	struct tally__u128 r;
	uint64_t l0 = (a.lo & 0xffffffffu) * k, l1 = (a.lo >> 32) * k;
	r.lo = l0 + (l1 << 32);
	r.hi = a.hi * k + (l1 >> 32) + (r.lo < l0);
	return r;
}

TALLY__INLINE struct tally__u128 tally__u128_shl(struct tally__u128 a, unsigned n)
{
	struct tally__u128 r = a;
	if (n) { /* 0 < n < 64 */
		r.hi = (a.hi << n) | (a.lo >> (64 - n));
		r.lo = a.lo << n;
	}
	return r;
}

TALLY__INLINE bool tally__u128_le(struct tally__u128 a, struct tally__u128 b)
{
	return a.hi < b.hi || (a.hi == b.hi && a.lo <= b.lo);
}

TALLY__INLINE struct tally__u128 tally__u128_sub(struct tally__u128 a, struct tally__u128 b)
{
	struct tally__u128 r;
	r.lo = a.lo - b.lo;
	r.hi = a.hi - b.hi - (a.lo < b.lo);
	return r;
}

/* floor(n / d) for d > 0, d < 2^117 and a quotient below 2^11. */
TALLY__INLINE uint64_t tally__u128_div_small(struct tally__u128 n, struct tally__u128 d)
{
	uint64_t q = 0;
	int b;
	for (b = 10; b >= 0; b--) {
		struct tally__u128 t = tally__u128_shl(d, (unsigned)b);
		if (tally__u128_le(t, n)) {
			n = tally__u128_sub(n, t);
			q |= (uint64_t)1 << b;
		}
	}
	return q;
}

/**
 * tally_scan_fraction - get_scan_count()'s SCAN_FRACT split of the scan
 * between anon and file:
 *   total = a + f; a' = total + a; f' = total + f; total = a' + f';
 *   fraction[0] = sw * (total + 1) / (a' + 1);
 *   fraction[1] = (200 - sw) * (total + 1) / (f' + 1);
 *   denominator = fraction[0] + fraction[1]
 * with truncating division, computed exactly for every input (the
 * intermediates need up to W + 10 bits; each fraction is at most 3 * 200,
 * so the kernel's unsigned long arithmetic gives the same result whenever
 * it does not overflow). Scan fraction[i] / denominator of list i.
 * Bad input (swappiness > TALLY_MAX_SWAPPINESS): both fractions and the
 * denominator 0 (a valid split always has denominator > 0). NULL outputs
 * are skipped. Pure: wait-free, any thread.
 */
static inline void tally_scan_fraction(tally_uword anon_cost, tally_uword file_cost,
				       unsigned swappiness, uint64_t fraction[2],
				       uint64_t *denominator)
{
	struct tally__u128 a = tally__u128_of(anon_cost), f = tally__u128_of(file_cost);
	struct tally__u128 total, ap_cost, fp_cost, one = tally__u128_of(1);
	uint64_t ap, fp;
	if (tally__bad(swappiness > TALLY_MAX_SWAPPINESS)) {
		ap = fp = 0;
	} else {
		total = tally__u128_add(a, f);
		ap_cost = tally__u128_add(total, a);
		fp_cost = tally__u128_add(total, f);
		total = tally__u128_add(tally__u128_add(ap_cost, fp_cost), one);
		ap = tally__u128_div_small(tally__u128_mul32(total, swappiness),
					   tally__u128_add(ap_cost, one));
		fp = tally__u128_div_small(
			tally__u128_mul32(total, TALLY_MAX_SWAPPINESS - swappiness),
			tally__u128_add(fp_cost, one));
	}
	if (fraction) {
		fraction[0] = ap;
		fraction[1] = fp;
	}
	if (denominator)
		*denominator = ap + fp;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_COST_H */
