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
 *
 * The written bound (lim). Most of an object's CPU slots are never written
 * where the slots outnumber the CPUs that run (TALLY_CPU_SLOTS, or the
 * possible CPUs of a VM against its online ones), and a read of such a
 * slot's region maps the shared zero page at another address: 1-9 us a
 * read on a VM (issue 30), for a slot that holds nothing. So an object
 * allocated with tally__pcpu_alloc_tracked() keeps lim: every CPU slot
 * that may have been written is below it (0 at allocation). A writer
 * raises it (tally__pcpu_raise(): atomic max, to slot + 1, never past nr)
 * before its first write to a slot at or above it; the rseq section's
 * slot check compares the CPU with lim instead of with nr (the same
 * instruction, TALLY__RSEQ_LIM_CHECK), and a CPU at or above lim leaves
 * the section for the out-of-line path, which raises lim and goes back
 * in. Readers and the free visit the slots below lim and the shared slot
 * (tally__pcpu_first() / tally__pcpu_next()), so a read costs the slots
 * written, not the slots there are. Exact: an add that happened before a
 * read loaded lim > s before it wrote slot s; lim only grows, so the
 * read's later load of lim (coherence) is > s too and the read visits s.
 * An add racing with the read may be missed, as it may be today.
 * Untracked objects (tally__pcpu_alloc(), _alloc_kind(): writers that do
 * not raise lim) get lim = nr: every slot is visited, as before.
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
	/* The written bound: no CPU slot >= lim has been written (<= nr).
	 * Raised with an atomic max (tally__pcpu_raise), loaded acquire by
	 * readers, relaxed by writers' checks; nr if untracked. */
	unsigned lim;
};

/* The written bound, for a reader (acquire: a reader's loads of the slots
 * come after it; what makes a read exact is coherence, see above). */
TALLY__INLINE unsigned tally__pcpu_lim(const struct tally__pcpu *p)
{
	return __atomic_load_n(&p->lim, __ATOMIC_ACQUIRE);
}

/* The first and the next slot a reader of p visits, lim its written bound
 * (tally__pcpu_lim()): 0 .. lim - 1, then the shared slot nr; past it,
 * nr + 1. A loop over them:
 *   unsigned s, lim = tally__pcpu_lim(p);
 *   for (s = tally__pcpu_first(p, lim); s <= p->nr; s = tally__pcpu_next(p, s, lim))
 */
TALLY__INLINE unsigned tally__pcpu_first(const struct tally__pcpu *p, unsigned lim)
{
	return lim ? 0u : p->nr;
}

TALLY__INLINE unsigned tally__pcpu_next(const struct tally__pcpu *p, unsigned s, unsigned lim)
{
	return s + 1u < lim ? s + 1u : s < p->nr ? p->nr : p->nr + 1u;
}

/*
 * tally__pcpu_raise - make p's written bound cover CPU slot s (< nr)
 * before a write to it: an atomic max of lim to s + 1. Lock-free (the CAS
 * fails only when another raise moved lim; each retry sees lim closer to
 * or past s + 1). Relaxed: what orders it before the write is program
 * order on the writer, and a reader needs only coherence (see above).
 */
TALLY__COLD void tally__pcpu_raise(const struct tally__pcpu *p, unsigned s)
{
	unsigned *lim = (unsigned *)&p->lim; /* mutable: the written bound */
	unsigned old = __atomic_load_n(lim, __ATOMIC_RELAXED);
	while (old <= s &&
	       !__atomic_compare_exchange_n(lim, &old, s + 1u, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Make lim cover slot s if it does not yet (the atomic paths' check). */
TALLY__INLINE void tally__pcpu_cover(const struct tally__pcpu *p, unsigned s)
{
	if (tally__unlikely(s >= __atomic_load_n(&p->lim, __ATOMIC_RELAXED)) && s < p->nr)
		tally__pcpu_raise(p, s);
}

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
	p->lim = p->nr; /* untracked: every slot may be written */
	return 0;
}

/*
 * tally__pcpu_alloc_tracked - tally__pcpu_alloc_kind() for an object whose
 * every writer raises its written bound (tally__pcpu_add*(), or
 * tally__pcpu_cover() / tally__pcpu_raise() before an atomic on a CPU
 * slot): lim starts at 0, and reads and the free visit only the slots
 * written (see the top of this file). Its space is zero in every slot,
 * the ones >= lim included (the free zeroed every slot it wrote).
 */
static inline int tally__pcpu_alloc_tracked(struct tally__pcpu *p, size_t size, unsigned kind)
{
	int err = tally__pcpu_alloc_kind(p, size, kind);
	if (!err)
		p->lim = 0;
	return err;
}

/* Allocate a zeroed per-CPU area of size bytes per slot in the hot arena.
 * 0 or -ENOMEM. */
static inline int tally__pcpu_alloc(struct tally__pcpu *p, size_t size)
{
	return tally__pcpu_alloc_kind(p, size, TALLY__ARENA_HOT);
}

/* Free p's object (its space zeroed for reuse: the slots below its
 * written bound and the shared slot, the only ones written). Not
 * allocated (zeroed struct, or freed): a no-op. Not concurrent with
 * writers of p. */
static inline void tally__pcpu_free(struct tally__pcpu *p)
{
	if (!p->chunk)
		return;
	tally__arena_free(p->chunk, (size_t)(p->base - p->chunk->map), tally__pcpu_lim(p));
	p->base = NULL;
	p->chunk = NULL;
}

/* Number of slots to visit when summing an untracked object: every CPU
 * plus the shared slot (a tracked one: tally__pcpu_first/next). */
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
	if (tally__rseq_registered()) {
		/* The section left: a CPU at or above the written bound (raise
		 * it and go back in: plain adds and atomics must never meet on
		 * a CPU slot's word), or one past the slots or no registration
		 * for this thread (the shared slot). Each time round needs a
		 * migration to a CPU above the bound. */
		int cpu;
		while ((cpu = tally__rseq_cpu()) >= 0 && (unsigned)cpu < p->nr) {
			tally__pcpu_raise(p, (unsigned)cpu);
			if (tally__rseq_add(p->base + off, p->shift,
					    __atomic_load_n(&p->lim, __ATOMIC_RELAXED), d, &r.nv,
					    &r.word))
				return r;
		}
		s = p->nr;
	} else {
		s = tally__cpu() % p->nr;
		tally__pcpu_cover(p, s);
	}
#else
	s = tally__cpu() % p->nr;
	tally__pcpu_cover(p, s);
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
	if (tally__likely(tally__rseq_add(p->base + off, p->shift,
					  __atomic_load_n(&p->lim, __ATOMIC_RELAXED), d, &nv, &w))) {
		*word = w;
		return nv;
	}
	r = tally__pcpu_add_atomic(p, off, d);
	*word = r.word;
	return r.nv;
#else
	unsigned s = tally__cpu() % p->nr;
	tally__pcpu_cover(p, s);
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
	if (tally__likely(tally__rseq_add_small(p->base + off,
						__atomic_load_n(&p->lim, __ATOMIC_RELAXED), d, &nv,
						&w))) {
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

/* Modular sum over the slots of the word at offset off (relaxed loads):
 * those below the written bound and the shared slot. */
TALLY__INLINE tally_uword tally__pcpu_sum(const struct tally__pcpu *p, size_t off)
{
	tally_uword sum = 0;
	unsigned s, lim = tally__pcpu_lim(p);
	for (s = 0; s < lim; s++)
		sum += tally__load((const tally_uword *)tally__pcpu_at(p, s, off));
	return sum + tally__load((const tally_uword *)tally__pcpu_at(p, p->nr, off));
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_PCPU_H */
