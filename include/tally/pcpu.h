/**
 * @file
 * tally/pcpu.h - per-CPU storage: allocation, the current slot, iteration.
 * Internal: included by the primitives, not by users.
 *
 * Objects live in the per-CPU arena (tally/pcpu/arena.h): CPU-major
 * regions 2^shift bytes apart, an object at the same offset in each, so
 * slot s's copy of an object is at base + (s << shift), and one CPU's
 * words of many objects are dense (one writer per line: no false
 * sharing). A struct tally__pcpu names one object: its slot-0 address, its
 * chunk's shift, the slot count and the chunk (for free).
 *
 * Slot 0..nr-1 belong to CPUs. Slot nr is the shared slot: it is only ever
 * updated with atomic RMWs, by threads that cannot use the rseq fast path
 * while other threads of the process do (plain rseq adds and atomic adds
 * must never meet on one word). It is a region of its own, so its lines
 * never hold a CPU's words.
 *
 * Writers of a slot word of the hot arena: tally__pcpu_add() only.
 * Readers (sums, flushes) load each word once with a relaxed atomic load;
 * a word is never reset, so a reader sees a value that some prefix of the
 * adds produced.
 */
#ifndef TALLY_PCPU_H
#define TALLY_PCPU_H

#include <tally/arch.h>
#include <tally/rseq.h>

#include <pthread.h>
#if defined(__unix__) || defined(__APPLE__)
#  include <sys/mman.h>
#  include <unistd.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define TALLY__PCPU_INSIDE 1
#include <tally/pcpu/arena.h>
#undef TALLY__PCPU_INSIDE

struct tally__pcpu {
	unsigned char *base; /* private: slot 0's copy; slot s's at base + (s << shift) */
	struct tally__arena_chunk *chunk; /* NULL: not allocated */
	unsigned nr;    /* CPU slots; slot nr is the shared slot (0: one region) */
	unsigned shift; /* log2 of the distance between slots */
};

/*
 * tally__pcpu_alloc_kind - a zeroed object of size bytes per slot in this
 * unit's arena of kind kind (TALLY__ARENA_HOT: words only the slot's CPU
 * writes, the default; _COLD: per-slot words other CPUs write too;
 * _SHARED: a single region, p->nr == 0, for words every CPU writes).
 * 0 or -ENOMEM (p untouched). Any thread (the arena lock).
 */
static inline int tally__pcpu_alloc_kind(struct tally__pcpu *p, size_t size, unsigned kind)
{
	struct tally__arena_chunk *c;
	size_t off;
	int err = tally__arena_alloc(kind, size ? size : 1, &c, &off);
	if (err)
		return err;
	p->base = c->map + off;
	p->chunk = c;
	p->nr = c->arena->regions - 1u;
	p->shift = c->shift;
	return 0;
}

/* Allocate a zeroed per-CPU area of size bytes per slot in the hot arena.
 * 0 or -ENOMEM. */
static inline int tally__pcpu_alloc(struct tally__pcpu *p, size_t size)
{
	return tally__pcpu_alloc_kind(p, size, TALLY__ARENA_HOT);
}

/* Free p's object (its space zeroed for reuse). Not allocated (zeroed
 * struct, or freed): a no-op. */
static inline void tally__pcpu_free(struct tally__pcpu *p)
{
	if (!p->chunk)
		return;
	tally__arena_free(p->chunk, (size_t)(p->base - p->chunk->map));
	p->base = NULL;
	p->chunk = NULL;
}

/* Number of slots to visit when summing: every CPU plus the shared slot. */
TALLY__INLINE unsigned tally__pcpu_slots(const struct tally__pcpu *p)
{
	return p->nr + 1u;
}

/* Address of byte offset off in slot s's copy. */
TALLY__INLINE void *tally__pcpu_at(const struct tally__pcpu *p, unsigned s, size_t off)
{
	return p->base + ((size_t)s << p->shift) + off;
}

/*
 * tally__cpu - the CPU this thread ran on a moment ago: glibc's registered
 * rseq area (one load), else sched_getcpu(), else a per-thread slot (the
 * only source with TALLY_PCPU_MODE 3). The thread may migrate right after;
 * callers use the value as a hint.
 */
TALLY__INLINE unsigned tally__cpu(void)
{
#if TALLY_PCPU_MODE == 3
	return tally__thread_slot();
#else
	int cpu = tally__rseq_cpu();
	if (tally__likely(cpu >= 0))
		return (unsigned)cpu;
#if TALLY__LINUX
	cpu = sched_getcpu();
	if (cpu >= 0)
		return (unsigned)cpu;
#endif
	return tally__thread_slot();
#endif
}

/* The slot of the word at w, a word at offset off of p's object. */
TALLY__INLINE unsigned tally__pcpu_slot_of(const struct tally__pcpu *p, const void *w, size_t off)
{
	return (unsigned)((size_t)((const unsigned char *)w - (p->base + off)) >> p->shift);
}

/* tally__pcpu_add_word()'s fallback: a relaxed atomic RMW, on the shared
 * slot if other threads may be adding plainly to the CPU slots. Returns
 * the new value and the word's address by value (so the caller's pointer
 * stays in a register on the fast path). */
struct tally__pcpu_added {
	tally_uword nv;
	tally_uword *word;
};

TALLY__COLD struct tally__pcpu_added tally__pcpu_add_atomic(const struct tally__pcpu *p,
							     size_t off, tally_uword d)
{
	struct tally__pcpu_added r;
	unsigned s;
#if TALLY__HAVE_RSEQ
	s = tally__rseq_registered() ? p->nr : tally__cpu() % p->nr;
#else
	s = tally__cpu() % p->nr;
#endif
	r.word = (tally_uword *)tally__pcpu_at(p, s, off);
	r.nv = tally__add(r.word, d);
	return r;
}

/*
 * tally__pcpu_add_word - add d to the word at offset off in the current
 * CPU's slot; return the word's new value and, in *word, the address of
 * the word it landed in (tally__pcpu_slot_of() gives its slot).
 *
 * Wait-free. With rseq, a plain add in a restartable critical section on
 * the CPU the thread is running on; otherwise a relaxed atomic RMW on the
 * slot of the CPU it ran on a moment ago (correct even if it migrated).
 * Relaxed: orders nothing; callers that publish with the add fence.
 */
TALLY__INLINE tally_uword tally__pcpu_add_word(const struct tally__pcpu *p, size_t off,
					       tally_uword d, tally_uword **word)
{
#if TALLY__HAVE_RSEQ
	tally_uword nv, *w;
	struct tally__pcpu_added r;
	if (tally__likely(tally__rseq_add(p->base + off, p->shift, p->nr, d, &nv, &w))) {
		*word = w;
		return nv;
	}
	r = tally__pcpu_add_atomic(p, off, d);
	*word = r.word;
	return r.nv;
#else
	unsigned s = tally__cpu() % p->nr;
	*word = (tally_uword *)tally__pcpu_at(p, s, off);
	return tally__add(*word, d);
#endif
}

/*
 * tally__pcpu_add_small - tally__pcpu_add_word() for an object allocated
 * with at most 2^TALLY_PCPU_REGION_SHIFT bytes per slot (a counter's
 * word), whose chunk's regions are exactly that far apart
 * (tally__arena_alloc()): the slot's address is a shift by a constant, no
 * load of the object's shift.
 */
TALLY__INLINE tally_uword tally__pcpu_add_small(const struct tally__pcpu *p, size_t off,
						tally_uword d, tally_uword **word)
{
#if TALLY__HAVE_RSEQ
	tally_uword nv, *w;
	struct tally__pcpu_added r;
	if (tally__likely(tally__rseq_add_small(p->base + off, p->nr, d, &nv, &w))) {
		*word = w;
		return nv;
	}
	r = tally__pcpu_add_atomic(p, off, d);
	*word = r.word;
	return r.nv;
#else
	return tally__pcpu_add_word(p, off, d, word);
#endif
}

/* tally__pcpu_add_word(), with the slot the add landed in in *slot. */
TALLY__INLINE tally_uword tally__pcpu_add(const struct tally__pcpu *p, size_t off,
					  tally_uword d, unsigned *slot)
{
	tally_uword *w;
	tally_uword nv = tally__pcpu_add_word(p, off, d, &w);
	*slot = tally__pcpu_slot_of(p, w, off);
	return nv;
}

/*
 * ---- the fold -----------------------------------------------------------
 * Every folding primitive keeps, per CPU slot and item, a never-reset word
 * w (written by tally__pcpu_add only) and a base: the value of w up to
 * which the slot's adds have been moved into a shared global. The slot's
 * local (unfolded) count is w - base. A fold moves a local count into the
 * global and advances the base; nothing else writes either.
 *
 * Conservation: the base changes only by a successful CAS, and the folder
 * whose CAS moved it from old to new adds exactly new - old to the global.
 * So global - sum(base) never changes, and since adds never move, the
 * exact value (initial + sum of every w) never depends on folds: nothing
 * is lost or counted twice whatever the interleaving, even when several
 * threads fold one slot at once.
 *
 * When a slot folds, and how far, is the fold kind's (t = threshold):
 *   TALLY__FOLD_ALL   local != 0:  base = w             (fold everything)
 *   TALLY__FOLD_AT    |local| >= t: base = w            (percpu_counter)
 *   TALLY__FOLD_PAST  |local| > t:  base = w            (vmstat's mod)
 *   TALLY__FOLD_UP    local > t:    base = w + t/2      (vmstat's inc: the
 *                     global gains local + t/2, local becomes -t/2)
 *   TALLY__FOLD_DOWN  local < -t:   base = w - t/2      (vmstat's dec)
 */
enum tally__fold_kind {
	TALLY__FOLD_ALL,
	TALLY__FOLD_AT,
	TALLY__FOLD_PAST,
	TALLY__FOLD_UP,
	TALLY__FOLD_DOWN
};

/*
 * tally__pcpu_fold - fold the slot whose words are *w and *base into
 * *global while the kind's rule says so. Returns the number of successful
 * folds (0 if the slot was within its threshold).
 *
 * Lock-free: a CAS is retried only after another fold of this slot
 * succeeded. The base is loaded (acquire) before w, pairing with the
 * release CAS of the fold that stored it, so the w seen is at least as new
 * as the one that fold read: a late folder never moves the base back past
 * a w that an earlier fold already covered. After each successful CAS a
 * full fence, then the loop re-checks with fresh loads; so the last
 * successful fold of a slot checks the w of every add that its fence does
 * not order after it (callers whose adders run a fence between their add
 * and their call pair with that fence: see tally_counter's argument).
 */
TALLY__INLINE unsigned tally__pcpu_fold(const tally_uword *w, tally_uword *base,
					tally_uword *global, tally_sword t,
					enum tally__fold_kind kind)
{
	unsigned folds = 0;
	for (;;) {
		tally_sword over = 0;
		tally_uword b = tally__load_acq(base);
		tally_uword v = tally__load(w);
		tally_sword local = tally__to_signed(v - b);
		switch (kind) {
		case TALLY__FOLD_ALL:
			if (local == 0)
				return folds;
			break;
		case TALLY__FOLD_AT:
			if (local < t && local > -t)
				return folds;
			break;
		case TALLY__FOLD_PAST:
			if (local <= t && local >= -t)
				return folds;
			break;
		case TALLY__FOLD_UP:
			if (local <= t)
				return folds;
			over = t / 2;
			break;
		case TALLY__FOLD_DOWN:
			if (local >= -t)
				return folds;
			over = -(t / 2);
			break;
		}
		/* New local is -over: base = w + over; the global gains local + over. */
		if (tally__cas_rel(base, &b, v + (tally_uword)over)) {
			tally__add(global, (tally_uword)local + (tally_uword)over);
			folds++;
			tally__fence();
		}
	}
}

/* Modular sum over all slots of the word at offset off (relaxed loads). */
TALLY__INLINE tally_uword tally__pcpu_sum(const struct tally__pcpu *p, size_t off)
{
	tally_uword sum = 0;
	unsigned s, n = tally__pcpu_slots(p);
	for (s = 0; s < n; s++)
		sum += tally__load((const tally_uword *)tally__pcpu_at(p, s, off));
	return sum;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_PCPU_H */
