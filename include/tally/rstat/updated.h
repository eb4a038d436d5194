/**
 * @file
 * tally/rstat/updated.h - the updated set of tally/rstat.h (private; include
 * <tally/rstat.h>): which groups have updates a flush has not consumed.
 * The kernel keeps this in css_rstat_updated() and the per-CPU updated
 * trees of kernel/cgroup/rstat.c.
 *
 *   group ids        dense, allocated and released under the flush lock,
 *                    4096 to a block; a growable id -> group table used
 *                    only by flushes
 *   dirty bitmaps    per block and CPU slot, two halves (struct
 *                    tally__rstat_dirty): a summary word and 64 leaf words
 *                    (the shared half: tally__rstat_mark_dirty()), and
 *                    the same as 32-bit marks (the mark half, x86_64 with rseq:
 *                    tally__rstat_rseq_mod()); set by updates, cleared by
 *                    drains (tally__rstat_drain())
 *   updated trees    per slot, under the flush lock: the dirty groups and
 *                    their ancestors, each under its parent, doubly linked
 *                    (tally__rstat_link(), _unlink(), _detach())
 *   the barrier pair BARRIER_U in updates (tally__rstat_barrier_update())
 *                    and BARRIER_F in flushes (tally__rstat_barrier_drained()
 *                    after a drain pass, tally__rstat_barrier_flush() before
 *                    a word load): full fences, or a compiler barrier and
 *                    membarrier().
 *
 * Why this is correct (a flush that starts after an update returned
 * reflects it; tally_group_flush(g) reflects an update that took g past
 * its threshold, the barrier pair included): the two arguments, step by
 * step with their SPIN models and tests, in tally/rstat/correctness.h.
 */
#ifndef TALLY_RSTAT_UPDATED_H
#define TALLY_RSTAT_UPDATED_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/updated.h is private: include <tally/rstat.h>"
#endif

/* membarrier(2), through syscall(): glibc 2.36 has no wrapper. The command
 * numbers are the kernel's ABI (linux/membarrier.h). Compiled in wherever
 * the platform has it, whatever TALLY_RSTAT_MEMBARRIER says: a flush must
 * honour a tree that another translation unit created with it. */
#if TALLY__LINUX && defined(__NR_membarrier)
#  define TALLY__RSTAT_MEMB 1
#  define TALLY__MEMB_CMD_QUERY 0
#  define TALLY__MEMB_CMD_PRIVATE_EXPEDITED (1 << 3)
#  define TALLY__MEMB_CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)
/* Strict ISO C hides syscall(); compatible redeclaration (C only: C++
 * compilers define _GNU_SOURCE, and C++ would object to the exception
 * specification). */
#  if !defined(__cplusplus) && (!defined(__GLIBC__) || !defined(__USE_MISC))
extern long syscall(long number, ...);
#  endif
#else
#  define TALLY__RSTAT_MEMB 0
#endif

/* The flush generation after gen, skipping 0: a group's per-slot anc_gen
 * starts at 0 (the arena's zero page, left untouched), and must not equal
 * the generation of any flush (tally/rstat/threshold.h). */
TALLY__INLINE unsigned long tally__rstat_gen_next(unsigned long gen)
{
	return gen + 1ul ? gen + 1ul : 1ul;
}

/*
 * The slots a reader of g visits: those below g's written bound (tally/
 * pcpu.h: every CPU slot an update, a link or a threshold count wrote g's
 * chunk on; each covers the slot before it writes) and the shared slot:
 *   lim = tally__pcpu_lim(&g->tally__pcpu);
 *   tally__rstat_for_slots(g, s, lim) ...
 * so that retiring, handing over, flushing and freeing a group cost the
 * slots it was written on, not the slots there are (issue 30).
 */
#define tally__rstat_for_slots(g, s, lim)                                                  \
	for ((s) = tally__pcpu_first(&(g)->tally__pcpu, (lim)); (s) <= (g)->tally__pcpu.nr; \
	     (s) = tally__pcpu_next(&(g)->tally__pcpu, (s), (lim)))

TALLY__INLINE struct tally__rstat_cpu *tally__rstat_cpu(const struct tally_group *g, unsigned s)
{
	return (struct tally__rstat_cpu *)tally__pcpu_at(&g->tally__pcpu, s, 0);
}

TALLY__INLINE tally_uword *tally__rstat_word(const struct tally_tree *t, struct tally__rstat_cpu *c,
					     unsigned i)
{
	return (tally_uword *)((unsigned char *)c + t->tally__word_off) + i;
}

TALLY__INLINE tally_uword *tally__rstat_prev(const struct tally_tree *t, struct tally__rstat_cpu *c,
					     unsigned i)
{
	return (tally_uword *)((unsigned char *)c + t->tally__prev_off) + i;
}

/* ---- group ids and dirty blocks (flush lock) ------------------------------- */

static inline int tally__rstat_ids_init(struct tally__rstat_ids *ids)
{
	memset(ids, 0, sizeof(*ids));
	ids->nr_slots = tally__nr_cpu_slots() + 1u;
	/* A block's records are one object of the cold per-CPU arena: slot
	 * s's at (s << TALLY_PCPU_REGION_SHIFT) from slot 0's (a record fits
	 * a region), demand-zero, so a CPU that never updated costs nothing. */
	ids->stride = (size_t)1 << TALLY_PCPU_REGION_SHIFT;
	return 0;
}

static inline void tally__rstat_ids_free(struct tally__rstat_ids *ids)
{
	unsigned b;
	for (b = 0; b < ids->nr_blocks; b++)
		tally__pcpu_free(&ids->blocks[b]);
	free(ids->blocks);
	free(ids->group);
	free(ids->free_ids);
	memset(ids, 0, sizeof(*ids));
}

/* Make room for one more new id (a new block included). 0 or -ENOMEM. */
static inline int tally__rstat_ids_grow(struct tally__rstat_ids *ids)
{
	if (ids->nr_ids == ids->cap) {
		unsigned cap = ids->cap ? ids->cap * 2u : 64u;
		struct tally_group **g;
		unsigned *f;
		if (ids->cap >= (1u << 30))
			return -ENOMEM;
		g = (struct tally_group **)realloc(ids->group, cap * sizeof(*g));
		if (!g)
			return -ENOMEM;
		ids->group = g;
		f = (unsigned *)realloc(ids->free_ids, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		ids->free_ids = f;
		ids->cap = cap;
	}
	if (ids->nr_ids == ids->nr_blocks * TALLY__RSTAT_BLOCK_IDS) {
		if (ids->nr_blocks == ids->blocks_cap) {
			unsigned cap = ids->blocks_cap ? ids->blocks_cap * 2u : 4u;
			struct tally__pcpu *b =
				(struct tally__pcpu *)realloc(ids->blocks, cap * sizeof(*b));
			if (!b)
				return -ENOMEM;
			ids->blocks = b;
			ids->blocks_cap = cap;
		}
		if (tally__pcpu_alloc_kind(&ids->blocks[ids->nr_blocks],
					   sizeof(struct tally__rstat_dirty), TALLY__ARENA_COLD))
			return -ENOMEM;
		ids->nr_blocks++;
	}
	return 0;
}

/* Give g an id (a released one first) and its block. 0 or -ENOMEM. */
static inline int tally__rstat_id_alloc(struct tally_tree *t, struct tally_group *g)
{
	struct tally__rstat_ids *ids = &t->tally__ids;
	unsigned id;
	if (ids->nr_free) {
		id = ids->free_ids[--ids->nr_free];
	} else {
		if (tally__rstat_ids_grow(ids))
			return -ENOMEM;
		id = ids->nr_ids++;
	}
	ids->group[id] = g;
	g->tally__dirty.id = id;
	g->tally__dirty.block = ids->blocks[id / TALLY__RSTAT_BLOCK_IDS].base;
	g->tally__dirty.stride = ids->stride;
	g->tally__dirty.leaf_off = offsetof(struct tally__rstat_dirty, leaf) +
				   ((id >> 6) & 63u) * sizeof(uint64_t);
	g->tally__dirty.mark_leaf = g->tally__dirty.block +
				   offsetof(struct tally__rstat_dirty, mark_leaf) +
				   (id & (TALLY__RSTAT_BLOCK_IDS - 1u)) * sizeof(uint32_t);
	g->tally__dirty.mark_summary = g->tally__dirty.block +
				      offsetof(struct tally__rstat_dirty, mark_summary) +
				      ((id >> 6) & 63u) * sizeof(uint32_t);
	g->tally__dirty.bit = 1ull << (id & 63u);
	g->tally__dirty.sbit = 1ull << ((id >> 6) & 63u);
	return 0;
}

/* Release g's id: at its final free, a grace period after its destroy, so
 * no update can set its bits any more. Bits it left set are harmless: a
 * drain skips a free id, and links a new owner of the id once, for
 * nothing. */
static inline void tally__rstat_id_release(struct tally_tree *t, const struct tally_group *g)
{
	struct tally__rstat_ids *ids = &t->tally__ids;
	ids->group[g->tally__dirty.id] = NULL;
	ids->free_ids[ids->nr_free++] = g->tally__dirty.id;
}

TALLY__INLINE struct tally__rstat_dirty *tally__rstat_dirty_at(unsigned char *block, size_t stride,
							      unsigned s)
{
	(void)stride; /* always 1 << TALLY_PCPU_REGION_SHIFT */
	return (struct tally__rstat_dirty *)(block + ((size_t)s << TALLY_PCPU_REGION_SHIFT));
}

/* ---- the barrier pair ------------------------------------------------------ */

#if TALLY__RSTAT_MEMB
/*
 * Decide once (per translation unit; the kernel's registration is per
 * process, idempotent, and kept across fork()) whether trees created now
 * use membarrier(): the kernel must list PRIVATE_EXPEDITED and its
 * registration in MEMBARRIER_CMD_QUERY, and the registration must
 * succeed. No: ENOSYS (an old kernel, a seccomp filter, an emulator such
 * as some valgrind versions), a failed registration. The first answer
 * stays (a CAS from "unknown"): an answer of "no" never turns into "yes"
 * for later trees, and racing first callers agree. errno is kept.
 */
static inline int tally__rstat_memb_setup(void)
{
	static int state; /* 0: unknown, 1: use membarrier(), -1: fence */
	int st = tally__load(&state), unknown = 0, e;
	long q;
	if (tally__likely(st))
		return st > 0;
	e = errno;
	st = -1;
	q = syscall(__NR_membarrier, TALLY__MEMB_CMD_QUERY, 0);
	if (q >= 0 && (q & TALLY__MEMB_CMD_PRIVATE_EXPEDITED) &&
	    (q & TALLY__MEMB_CMD_REGISTER_PRIVATE_EXPEDITED) &&
	    syscall(__NR_membarrier, TALLY__MEMB_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0)
		st = 1;
	errno = e;
	if (!tally__cas(&state, &unknown, st))
		st = unknown; /* another thread answered first: its answer holds */
	return st > 0;
}

/*
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): when it returns, every
 * thread of the process that was running has executed a full memory
 * barrier (an IPI to its CPU), and every other one will pass a context
 * switch (a full barrier) before it runs again. The caller's own accesses
 * are ordered around the call too. Once the process is registered (the
 * registration is kept across fork()), it can fail only for want of
 * memory (ENOMEM: newer kernels allocate a CPU mask per call): retry.
 * Anything else would break the pairing the updates rely on: abort.
 */
static inline void tally__rstat_membarrier(void)
{
	int e = errno;
	while (syscall(__NR_membarrier, TALLY__MEMB_CMD_PRIVATE_EXPEDITED, 0) != 0) {
		if (errno != ENOMEM && errno != EAGAIN && errno != EINTR)
			abort();
		sched_yield();
	}
	errno = e;
}
#endif

/*
 * BARRIER_U, in tally_group_mod() between the word add and the dirty-bit
 * loads. Trees that use membarrier() need only a compiler barrier: the
 * flush's membarrier() lands somewhere in this thread's program order,
 * before its leaf load (which then sees the drain's clear, or a later
 * set) or after it, hence after its word add, which the flush then reads.
 * Other trees, and builds with TALLY_RSTAT_MEMBARRIER 0: a full fence.
 */
TALLY__INLINE void tally__rstat_barrier_update(const struct tally_tree *t)
{
#if TALLY__RSTAT_MEMB && TALLY_RSTAT_MEMBARRIER
	if (tally__likely(t->tally__flush.memb))
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	else
		tally__fence();
#else
	(void)t;
	tally__fence();
#endif
}

/*
 * BARRIER_F, first half: after a drain pass. With fences, a full fence now.
 * With membarrier(), which costs microseconds (an IPI to every CPU running
 * a thread of the process), a pass that cleared a bit of a shared half
 * leaves one owed (flush lock), paid before the next word load
 * (tally__rstat_barrier_flush()). A pass that cleared nothing there pairs
 * with no fenced update (the mark halves need none); a barrier owed by an
 * earlier flush is still owed (the flush lock orders them), so every word
 * load comes after a barrier that follows every clear made before it.
 */
static inline void tally__rstat_barrier_drained(struct tally_tree *t, int cleared)
{
#if TALLY__RSTAT_MEMB
	if (t->tally__flush.memb) {
		t->tally__flush.memb_owed |= cleared;
		return;
	}
#endif
	(void)cleared;
	(void)t;
	tally__fence();
}

/* BARRIER_F, second half: before a flush loads a word, pay an owed
 * membarrier(). Flush lock held. */
TALLY__INLINE void tally__rstat_barrier_flush(struct tally_tree *t)
{
#if TALLY__RSTAT_MEMB
	if (tally__unlikely(t->tally__flush.memb_owed)) {
		tally__rstat_membarrier();
		t->tally__flush.memb_owed = 0;
	}
#else
	(void)t;
#endif
}

/* ---- updates: mark dirty ---------------------------------------------------- */

/*
 * Set g's leaf and summary bits on slot s, each only if clear: wait-free,
 * idempotent, no claim (see the argument at the top of this file). Sequentially
 * consistent loads and ORs: the argument needs one total order of every
 * bit access (an acquire/release pair is not enough). After BARRIER_U.
 */
TALLY__INLINE void tally__rstat_mark_dirty(const struct tally_group *g, unsigned s)
{
	/* The record, leaf word and bits as tally__rstat_id_alloc() laid
	 * them out: no shifts on the update path. */
	unsigned char *rec = g->tally__dirty.block + ((size_t)s << TALLY_PCPU_REGION_SHIFT);
	uint64_t *leaf = (uint64_t *)(void *)(rec + g->tally__dirty.leaf_off);
	uint64_t *summary = &((struct tally__rstat_dirty *)(void *)rec)->summary;
	uint64_t bit = g->tally__dirty.bit, sbit = g->tally__dirty.sbit;
	if (!(__atomic_load_n(leaf, __ATOMIC_SEQ_CST) & bit))
		__atomic_fetch_or(leaf, bit, __ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(summary, __ATOMIC_SEQ_CST) & sbit))
		__atomic_fetch_or(summary, sbit, __ATOMIC_SEQ_CST);
}

#if TALLY__HAVE_RSEQ
/* The word add's operand size (32- or 64-bit words). */
#  if TALLY_WORD_BITS == 32
#    define TALLY__RSTAT_WREG "k"
#    define TALLY__RSTAT_WADD "addl"
#  else
#    define TALLY__RSTAT_WREG "q"
#    define TALLY__RSTAT_WADD "addq"
#  endif
/*
 * tally__rstat_rseq_mod - tally_group_mod()'s word add and dirty marking
 * on x86_64 with rseq, without a barrier: one restartable section on
 * glibc's rseq area (tally__rseq_add()'s, see tally/rseq.h, with the add
 * as one instruction: no new value is wanted), then two plain 32-bit
 * stores.
 *   section:  on the current CPU c (registered and below g's written
 *             bound: TALLY__RSEQ_LIM_CHECK, see tally__rseq_add(); g's regions
 *             are 2^TALLY_PCPU_REGION_SHIFT apart, which tally_group_mod()
 *             checked: fast_items), word += d (the commit: one
 *             add to memory), the word at item0 + TALLY__RSTAT_WORD_OFF in
 *             slot c's chunk (item0: g's slot 0 chunk + item * the word's
 *             size).
 *   then:     g's mark_leaf mark = 1, then its mark_summary mark = 1, in
 *             slot c's record (the add's slot, wherever the thread runs
 *             by now).
 * Returns true with *soff = c << TALLY_PCPU_REGION_SHIFT (the offset of
 * slot c's chunk and record from slot 0's); false, nothing done (use
 * tally__pcpu_add() and the fenced marking), through an out-of-line exit
 * (asm goto).
 *
 * Why no barrier, and no section for the marks: a store of the constant 1
 * to a mark needs no exclusion (any number of threads, on any CPU, leave
 * the mark 1; nothing is read, so no store of one thread undoes
 * another's, and a drain's exchange either reads the mark or comes before
 * it and leaves it set for the next drain). x86 keeps a thread's stores
 * in order (TSO), across a migration too (the context switch is a full
 * barrier): whoever sees a mark this update stored (the drain's exchange,
 * a full barrier) sees the word add before it. The update stores its
 * marks every time, never "already set: skip", so it never relies on a
 * load passing its own word store (the store-buffering pair the fenced
 * protocol pays its fence for). The argument and its SPIN model
 * (tests/formal/bitmap.pml, -DBYTES): the argument at the top of this
 * file. The marks are 32 bits wide, not bytes: on AMD Zen 3 a byte store
 * right after another to the same byte costs about a nanosecond more per
 * update in a loop on one group; 32- and 64-bit stores do not.
 *
 * The section is armed by storing the descriptor's address into rseq_cs
 * every time, as tally__rseq_add() does (one store, and no branch; a
 * compare that stored only when rseq_cs differed cost an instruction more
 * and was no faster once the marks were 32-bit stores).
 *
 * The instructions (g's fields are loaded before, where the compiler
 * hoists or folds them): the section as tally__rseq_add()'s, with one add
 * to memory for its load, add and store (8: arm in two, cpu_id, test,
 * exit, the slot's offset, the add); then the two mark stores. With the
 * threshold check after it (tally_group_mod()), what the update path adds
 * to the counter add's.
 */
TALLY__INLINE bool tally__rstat_rseq_mod(const struct tally_group *g, unsigned char *item0,
					 tally_uword d, size_t *soff)
{
	/* relaxed: it only grows; a stale one sends the thread out to raise
	 * it (tally__pcpu_add()) and back */
	unsigned lim = __atomic_load_n(&g->tally__pcpu.lim, __ATOMIC_RELAXED);
	size_t off;
	uint64_t tmp;
	__asm__ __volatile__ goto(
		".pushsection __tally_rseq_cs, \"aw?\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"
		".quad 1f, 2f - 1f, 4f\n\t"
		".popsection\n\t"
		"0:\n\t"
		"leaq 3b(%%rip), %q[tmp]\n\t"
		"movq %q[tmp], %%fs:%c[cs](%[rs])\n\t"
		"1:\n\t"
		"movl %%fs:%c[id](%[rs]), %k[off]\n\t"
		TALLY__RSEQ_LIM_CHECK("%k[off]", "6f")
		"shlq %[rshift], %q[off]\n\t"
		TALLY__RSTAT_WADD " %" TALLY__RSTAT_WREG "[d], %c[woff](%[w0], %q[off])\n\t" /* commit */
		"2:\n\t"
		TALLY__RSEQ_CLEAR
		TALLY__RSTAT_RSEQ_HOOK /* tests only: see rstat/types.h */
		/* the marks in slot cpu's record (records one region apart,
		 * like the chunks: the same offset) */
		"movl $1, (%[leaf], %q[off])\n\t"
		"movl $1, (%[summ], %q[off])\n\t"
		/* out of line: the abort, and the exit with nothing done */
		".subsection 1\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"4:\n\t"
		"jmp 0b\n\t"
		"6:\n\t"
		TALLY__RSEQ_CLEAR
		"jmp %l[none]\n\t"
		".previous\n\t"
		: [off] "=&r"(off), [tmp] "=&r"(tmp)
		: [rs] "r"(__rseq_offset), [cs] "i"(offsetof(struct rseq, rseq_cs)),
		  [id] "i"(offsetof(struct rseq, cpu_id)), [lim] TALLY__RSEQ_RM(lim),
		  [w0] "r"(item0), [woff] "i"(TALLY__RSTAT_WORD_OFF), [d] "re"(d),
		  [rshift] "i"(TALLY_PCPU_REGION_SHIFT), [leaf] "r"(g->tally__dirty.mark_leaf),
		  [summ] "r"(g->tally__dirty.mark_summary), [sig] "i"(RSEQ_SIG)
		: "memory", "cc"
		: none);
	*soff = off;
	return true;
none:
	return false;
}
#endif

/* ---- updated trees (flush lock) ------------------------------------------- */

/*
 * Link g and its ancestors into slot s's updated tree, stopping at the
 * first one already linked (css_rstat_updated()'s walk). g is put first
 * among its parent's updated children.
 */
static inline void tally__rstat_link(struct tally_group *g, unsigned s)
{
	for (;;) {
		struct tally__rstat_cpu *c = tally__rstat_cpu(g, s), *pc;
		struct tally_group *p = g->tally__links.parent, *first;
		/* g's slot s is written now, and so is p's below: their
		 * written bounds cover s first (tally__rstat_for_slots()) */
		tally__pcpu_cover(&g->tally__pcpu, s);
		if (p)
			tally__pcpu_cover(&p->tally__pcpu, s);
		if (c->upd_next)
			break;
		if (!p) {
			c->upd_next = g; /* the root is linked to itself */
			break;
		}
		pc = tally__rstat_cpu(p, s);
		first = pc->upd_children;
		if (!first)
			first = p; /* a zero slot (never linked): no children */
		c->upd_next = first;
		c->upd_prev = NULL;
		if (first != p)
			tally__rstat_cpu(first, s)->upd_prev = g;
		pc->upd_children = g;
		g = p;
	}
}

/* Take g (linked, not the root) out of its parent's updated children on
 * slot s, in O(1). Its own updated children stay with it. */
static inline void tally__rstat_unlink(struct tally_group *g, unsigned s)
{
	struct tally__rstat_cpu *c = tally__rstat_cpu(g, s);
	struct tally_group *p = g->tally__links.parent, *next = c->upd_next, *prev = c->upd_prev;
	if (prev)
		tally__rstat_cpu(prev, s)->upd_next = next;
	else
		tally__rstat_cpu(p, s)->upd_children = next;
	if (next != p)
		tally__rstat_cpu(next, s)->upd_prev = prev;
	c->upd_next = NULL;
	c->upd_prev = NULL;
}

/*
 * Detach g's subtree from slot s's updated tree and return it as a list
 * (the slots' flush_next) in which every group comes after its parent
 * (depth-first, parents first); NULL if g is not linked on s.
 */
static inline struct tally_group *tally__rstat_detach(struct tally_group *g, unsigned s)
{
	struct tally__rstat_cpu *c = tally__rstat_cpu(g, s);
	struct tally_group *head = NULL, **tail = &head, *stack;
	if (!c->upd_next)
		return NULL; /* nothing below g was updated on this slot */
	if (g->tally__links.parent)
		tally__rstat_unlink(g, s);
	else
		c->upd_next = NULL;
	g->tally__walk_next = NULL;
	stack = g;
	while (stack) {
		struct tally_group *x = stack, *ch;
		struct tally__rstat_cpu *xc = tally__rstat_cpu(x, s);
		stack = x->tally__walk_next;
		*tail = x;
		tail = &xc->flush_next;
		for (ch = xc->upd_children ? xc->upd_children : x; ch != x;) {
			struct tally__rstat_cpu *cc = tally__rstat_cpu(ch, s);
			struct tally_group *next = cc->upd_next;
			cc->upd_next = NULL;
			cc->upd_prev = NULL;
			ch->tally__walk_next = stack;
			stack = ch;
			ch = next;
		}
		xc->upd_children = x;
	}
	*tail = NULL;
	return head;
}

/* Reverse a slot-s list: children before parents. */
static inline struct tally_group *tally__rstat_reverse(struct tally_group *x, unsigned s)
{
	struct tally_group *out = NULL;
	while (x) {
		struct tally__rstat_cpu *c = tally__rstat_cpu(x, s);
		struct tally_group *next = c->flush_next;
		c->flush_next = out;
		out = x;
		x = next;
	}
	return out;
}

/* ---- drains (flush lock) --------------------------------------------------- */

/*
 * A drain found group id's bit set on slot s: link the group into the
 * slot's updated tree if it is alive; a destroyed group goes on the
 * flush's hand-over list, a free id is skipped.
 */
static inline void tally__rstat_drain_link(struct tally_tree *t, unsigned s, unsigned id)
{
	struct tally__rstat_ids *ids = &t->tally__ids;
	struct tally_group *g = id < ids->nr_ids ? ids->group[id] : NULL;
	if (!g)
		return; /* a free id */
	if (!tally__load(&g->tally__dead)) {
		tally__rstat_link(g, s);
	} else if (!g->tally__handover_next) {
		/* Destroyed: its deltas go to an ancestor after BARRIER_F
		 * (tally/rstat/flush.h). */
		struct tally_group *h = t->tally__flush.handover;
		g->tally__handover_next = h ? h : g;
		t->tally__flush.handover = g;
	}
}

/*
 * Move every dirty group of the shared half of block b's record of slot s
 * into the slot's updated tree: clear the summary, then each leaf word it
 * names (summary first: see the argument at the top of this file), and
 * link each group whose bit was set (tally__rstat_drain_link()). Returns
 * whether it cleared any bit.
 */
static inline int tally__rstat_drain_half(struct tally_tree *t, unsigned s, unsigned b,
					  uint64_t *summary, uint64_t *leaf)
{
	int cleared = 0;
	uint64_t x;
	if (!__atomic_load_n(summary, __ATOMIC_SEQ_CST))
		return 0;
	x = __atomic_exchange_n(summary, (uint64_t)0, __ATOMIC_SEQ_CST);
	while (x) {
		unsigned j = (unsigned)__builtin_ctzll(x);
		uint64_t y = __atomic_exchange_n(&leaf[j], (uint64_t)0, __ATOMIC_SEQ_CST);
		x &= x - 1;
		cleared |= y != 0;
		while (y) {
			tally__rstat_drain_link(t, s, b * TALLY__RSTAT_BLOCK_IDS + j * 64u +
							      (unsigned)__builtin_ctzll(y));
			y &= y - 1;
		}
	}
	return cleared;
}

/* Mark k (0: the one at the lower address) of a 64-bit word of the mark
 * half, whatever the byte order. */
TALLY__INLINE uint32_t tally__rstat_mark_of(uint64_t w, unsigned k)
{
	uint32_t m[2];
	memcpy(m, &w, sizeof(m));
	return m[k];
}

/*
 * The mark half of block b's record of slot s, for its first nr_ids ids
 * (no mark is ever set past the ids handed out): for each set summary mark
 * (exchanged 64 bits, two marks, at a time), exchange the 64 group marks
 * it stands for (summary first, as for the shared half), and link each
 * live group whose mark was set (tally__rstat_drain_link()).
 */
static inline void tally__rstat_drain_marks(struct tally_tree *t, unsigned s, unsigned b,
					    unsigned nr_ids, struct tally__rstat_dirty *d)
{
	unsigned q, w, nq = (nr_ids + 127u) / 128u;
	for (q = 0; q < nq; q++) {
		uint64_t x;
		unsigned h;
		if (!__atomic_load_n(&d->mark_summary[q], __ATOMIC_SEQ_CST))
			continue;
		x = __atomic_exchange_n(&d->mark_summary[q], (uint64_t)0, __ATOMIC_SEQ_CST);
		for (h = 0; h < 2; h++) {
			/* summary mark j: groups j * 64 .. j * 64 + 63, two to a word */
			unsigned j = q * 2u + h;
			if (!tally__rstat_mark_of(x, h))
				continue;
			for (w = 0; w < 32; w++) {
				uint64_t *lw = &d->mark_leaf[j * 32u + w], y;
				unsigned id = b * TALLY__RSTAT_BLOCK_IDS + j * 64u + w * 2u;
				if (!__atomic_load_n(lw, __ATOMIC_SEQ_CST))
					continue;
				y = __atomic_exchange_n(lw, (uint64_t)0, __ATOMIC_SEQ_CST);
				if (tally__rstat_mark_of(y, 0))
					tally__rstat_drain_link(t, s, id);
				if (tally__rstat_mark_of(y, 1))
					tally__rstat_drain_link(t, s, id + 1u);
			}
		}
	}
}

/*
 * Drain slot s: both halves of every block's record. Returns whether it
 * cleared any bit of a shared half (the fenced protocol, which BARRIER_F
 * pairs with); the mark halves need no barrier beyond the exchanges
 * (see tally__rstat_rseq_mod()). BARRIER_F must come between this and any
 * load of a word.
 */
static inline int tally__rstat_drain(struct tally_tree *t, unsigned s)
{
	struct tally__rstat_ids *ids = &t->tally__ids;
	unsigned b;
	int cleared = 0;
	for (b = 0; b < ids->nr_blocks; b++) {
		struct tally__rstat_dirty *d =
			tally__rstat_dirty_at(ids->blocks[b].base, ids->stride, s);
		unsigned in_block = ids->nr_ids - b * TALLY__RSTAT_BLOCK_IDS;
		cleared |= tally__rstat_drain_half(t, s, b, &d->summary, d->leaf);
		tally__rstat_drain_marks(t, s, b,
					 in_block < TALLY__RSTAT_BLOCK_IDS ? in_block
									   : TALLY__RSTAT_BLOCK_IDS,
					 d);
	}
	return cleared;
}

/* Drain every slot, then the first half of BARRIER_F. */
static inline void tally__rstat_drain_all(struct tally_tree *t)
{
	unsigned s;
	int cleared = 0;
	for (s = 0; s < t->tally__ids.nr_slots; s++)
		cleared |= tally__rstat_drain(t, s);
	tally__rstat_barrier_drained(t, cleared);
}

#endif /* TALLY_RSTAT_UPDATED_H */
