/**
 * @file
 * tally/pcpu.h - per-CPU storage: allocation, the current slot, iteration.
 * Internal: included by the primitives, not by users.
 *
 * An object's per-CPU area is one block of (CPU slots + 1) chunks. Each
 * chunk holds that CPU's words densely (the kernel's percpu layout: a
 * group's N items for one CPU sit together) and is rounded up to
 * TALLY_CACHELINE, so no two CPUs' words share a line.
 *
 * Slot 0..nr-1 belong to CPUs. Slot nr is the shared slot: it is only ever
 * updated with atomic RMWs, by threads that cannot use the rseq fast path
 * while other threads of the process do (plain rseq adds and atomic adds
 * must never meet on one word).
 *
 * Writers of a slot word: tally__pcpu_add() only. Readers (sums, flushes)
 * load each word once with a relaxed atomic load; a word is never reset,
 * so a reader sees a value that some prefix of the adds produced.
 */
#ifndef TALLY_PCPU_H
#define TALLY_PCPU_H

#include <tally/arch.h>
#include <tally/rseq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally__pcpu {
	unsigned char *base; /* private: (nr + 1) chunks of stride bytes */
	size_t stride;
	unsigned nr; /* CPU slots; slot nr is the shared slot */
};

/* Allocate a zeroed per-CPU area of size bytes per slot. 0 or -ENOMEM. */
static inline int tally__pcpu_alloc(struct tally__pcpu *p, size_t size)
{
	unsigned nr = tally__nr_cpu_slots();
	size_t stride = (size + TALLY_CACHELINE - 1) / TALLY_CACHELINE * TALLY_CACHELINE;
	if (!stride)
		stride = TALLY_CACHELINE;
	if (stride > ((size_t)-1) / (nr + 1u))
		return -ENOMEM;
	/* C11 aligned_alloc: the size is a multiple of the alignment. */
	p->base = (unsigned char *)aligned_alloc(TALLY_CACHELINE, stride * (nr + 1u));
	if (!p->base)
		return -ENOMEM;
	memset(p->base, 0, stride * (nr + 1u));
	p->stride = stride;
	p->nr = nr;
	return 0;
}

static inline void tally__pcpu_free(struct tally__pcpu *p)
{
	free(p->base);
	p->base = NULL;
}

/* Number of slots to visit when summing: every CPU plus the shared slot. */
TALLY__INLINE unsigned tally__pcpu_slots(const struct tally__pcpu *p)
{
	return p->nr + 1u;
}

/* Address of byte offset off in slot s's chunk. */
TALLY__INLINE void *tally__pcpu_at(const struct tally__pcpu *p, unsigned s, size_t off)
{
	return p->base + (size_t)s * p->stride + off;
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

/*
 * tally__pcpu_add - add d to the word at offset off in the current CPU's
 * chunk; return the word's new value and, in *slot, the slot it landed in.
 *
 * Wait-free. With rseq, a plain add in a restartable critical section on
 * the CPU the thread is running on; otherwise a relaxed atomic RMW on the
 * slot of the CPU it ran on a moment ago (correct even if it migrated).
 * Relaxed: orders nothing; callers that publish with the add fence.
 */
TALLY__INLINE tally_uword tally__pcpu_add(const struct tally__pcpu *p, size_t off,
					  tally_uword d, unsigned *slot)
{
	unsigned s;
#if TALLY__HAVE_RSEQ
	tally_uword nv;
	if (tally__likely(tally__rseq_add(p->base, p->stride, p->nr, off, d, &nv, slot)))
		return nv;
	/* Other threads may be adding plainly to the CPU slots. */
	s = tally__rseq_registered() ? p->nr : tally__cpu() % p->nr;
#else
	s = tally__cpu() % p->nr;
#endif
	*slot = s;
	return tally__add((tally_uword *)tally__pcpu_at(p, s, off), d);
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
