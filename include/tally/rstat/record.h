/**
 * @file
 * tally/rstat/record.h - tally_group_record() for tally/rstat.h (private;
 * include <tally/rstat.h>): the bucket's word + 1 and the sum's + v, as two
 * updates of g would add them (tally_group_mod()'s paths, rstat/mod.h), so
 * after a flush g's histogram is that of every value recorded into g's
 * subtree, as an item is the sum of its subtree's updates. On x86_64 with
 * rseq both adds share one restartable section and one dirty marking
 * (tally__rstat_rseq_record()); elsewhere, and when the section cannot be
 * taken, they are two updates.
 *
 * Memory: per group, 3 words per bucket position and 3 for the sum
 * (state, local, pending), and per CPU slot that recorded into it 2 words
 * each (the slot's word and its flush snapshot), in the arena's
 * demand-zero pages: a CPU that never recorded into g costs nothing
 * resident; a flush visits every word of a group a slot updated.
 */
#ifndef TALLY_RSTAT_RECORD_H
#define TALLY_RSTAT_RECORD_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/record.h is private: include <tally/rstat.h>"
#endif

/*
 * Test hooks: assembler strings placed in the record's section, for tests
 * that trap there (tests/test_rstat_hooks.c); empty by default.
 *   TALLY__RSTAT_REC_HOOK_SUM     before the sum's store (an abort
 *                                 restarts the section)
 *   TALLY__RSTAT_REC_HOOK_COMMIT  after the sum's store, before the
 *                                 bucket's add, the commit (an abort
 *                                 leaves the bucket's + 1 to the fenced
 *                                 update)
 * A hook may change the flags, nothing else.
 */
#ifndef TALLY__RSTAT_REC_HOOK_SUM
#  define TALLY__RSTAT_REC_HOOK_SUM ""
#endif
#ifndef TALLY__RSTAT_REC_HOOK_COMMIT
#  define TALLY__RSTAT_REC_HOOK_COMMIT ""
#endif

#if TALLY__HAVE_RSEQ
/* The sum's store: stos of the word's size, and its register. */
#  if TALLY_WORD_BITS == 32
#    define TALLY__RSTAT_STOS "stosl"
#  else
#    define TALLY__RSTAT_STOS "stosq"
#  endif

/* How far tally__rstat_rseq_record() got. */
enum tally__rstat_rec_stage {
	TALLY__RSTAT_REC_NOTHING, /* nothing added: not in the section */
	TALLY__RSTAT_REC_SUM,     /* the sum added and marked, the bucket not */
	TALLY__RSTAT_REC_DONE     /* both added and marked */
};

/*
 * tally__rstat_rseq_record - a group record's two adds and one dirty
 * marking on x86_64 with rseq: one restartable section on glibc's rseq
 * area (tally__rstat_rseq_mod()'s, rstat/updated.h), on the current CPU c
 * (registered and below g's written bound), whose two stores are the
 * sum's word += v and then the bucket's word + 1, the commit; then g's
 * marks in slot c's record, as tally__rstat_rseq_mod() stores them. The
 * words are at sum0 and bkt0 + TALLY__RSTAT_WORD_OFF in slot c's chunk
 * (sum0, bkt0: g's slot 0 chunk + the word's index times its size).
 * Returns DONE with *soff = c << TALLY_PCPU_REGION_SHIFT; SUM (the section
 * aborted after the sum's store: the sum is on slot c and marked there,
 * the bucket's + 1 is the caller's); NOTHING (not registered, or c past
 * the slots or g's written bound: nothing done).
 *
 * An abort between the two stores must not restart (the sum would count
 * twice), and the kernel says only that the section aborted, not where
 * (tally/hist/record.h, tally__hist_section()). So the sum's store leaves
 * its mark in a register: rdi holds the sum's address (0 before it is
 * known; zeroed on every start and restart) and stos stores the new sum
 * there and moves rdi one word on, in one instruction. The abort handler
 * finds rdi one word past slot c's sum exactly once the store has run:
 * it then stores the marks of slot c (any thread may store a mark, and
 * TSO keeps them after the sum's store: the argument at
 * tally__rstat_rseq_mod()) and leaves with SUM; otherwise it restarts.
 * With no abort, the section never left c: the sum's load, add and store
 * are one update, and the bucket's add commits the record.
 *
 * The instructions beyond tally__rstat_rseq_mod()'s: the zeroing of rdi,
 * the sum's address, its load and add, and stos (the sum not counted
 * toward the thresholds: a record is one event).
 */
TALLY__INLINE enum tally__rstat_rec_stage
tally__rstat_rseq_record(const struct tally_group *g, unsigned char *sum0, unsigned char *bkt0,
			 tally_uword v, size_t *soff)
{
	unsigned lim = __atomic_load_n(&g->tally__pcpu.lim, __ATOMIC_RELAXED); /* as in rseq_mod */
	size_t off;
	tally_uword t;
	void *w;
	__asm__ __volatile__ goto(
		".pushsection __tally_rseq_cs, \"aw?\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"
		".quad 1f, 2f - 1f, 4f\n\t"
		".popsection\n\t"
		"0:\n\t"
		"xorl %%edi, %%edi\n\t" /* no sum stored */
		"leaq 3b(%%rip), %%rax\n\t"
		"movq %%rax, %%fs:%c[cs](%[rs])\n\t"
		"1:\n\t"
		"movl %%fs:%c[id](%[rs]), %k[off]\n\t"
		TALLY__RSEQ_LIM_CHECK("%k[off]", "6f")
		"shlq %[rshift], %q[off]\n\t"
		"leaq %c[woff](%[s0], %q[off]), %%rdi\n\t"
		"mov (%%rdi), %" TALLY__RSTAT_WREG "[t]\n\t"
		"add %" TALLY__RSTAT_WREG "[v], %" TALLY__RSTAT_WREG "[t]\n\t"
		TALLY__RSTAT_REC_HOOK_SUM
		TALLY__RSTAT_STOS "\n\t" /* the sum; rdi past it from here */
		TALLY__RSTAT_REC_HOOK_COMMIT
		TALLY__RSTAT_WADD " $1, %c[woff](%[b0], %q[off])\n\t" /* the bucket: commit */
		"2:\n\t"
		TALLY__RSEQ_CLEAR
		TALLY__RSTAT_RSEQ_HOOK
		"movl $1, (%[leaf], %q[off])\n\t"
		"movl $1, (%[summ], %q[off])\n\t"
		".subsection 1\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"4:\n\t"
		"leaq %c[woff] + %c[wsz](%[s0], %q[off]), %%rax\n\t"
		"cmpq %%rax, %%rdi\n\t" /* the sum stored? */
		"jne 0b\n\t"
		"movl $1, (%[leaf], %q[off])\n\t"
		"movl $1, (%[summ], %q[off])\n\t"
		"jmp %l[sum]\n\t"
		"6:\n\t"
		TALLY__RSEQ_CLEAR
		"jmp %l[none]\n\t"
		".previous\n\t"
		: [off] "=&r"(off), [t] "=&a"(t), "=&D"(w)
		: [rs] "r"(__rseq_offset), [cs] "i"(offsetof(struct rseq, rseq_cs)),
		  [id] "i"(offsetof(struct rseq, cpu_id)), [lim] TALLY__RSEQ_RM(lim),
		  [s0] "r"(sum0), [b0] "r"(bkt0), [woff] "i"(TALLY__RSTAT_WORD_OFF),
		  [wsz] "i"(sizeof(tally_uword)), [v] "r"(v), [rshift] "i"(TALLY_PCPU_REGION_SHIFT),
		  [leaf] "r"(g->tally__dirty.mark_leaf), [summ] "r"(g->tally__dirty.mark_summary),
		  [sig] "i"(RSEQ_SIG)
		: "memory", "cc"
		: sum, none);
	(void)t;
	(void)w;
	*soff = off;
	return TALLY__RSTAT_REC_DONE;
sum:
	return TALLY__RSTAT_REC_SUM;
none:
	return TALLY__RSTAT_REC_NOTHING;
}
#endif

/*
 * tally_group_record()'s body. The sum's add is not counted toward the
 * thresholds: a record is one event (the bucket's + 1), whatever its
 * value.
 */
static inline int tally__rstat_record(struct tally_group *g, unsigned h, int64_t v)
{
	const struct tally__rstat_hist *x;
	unsigned w, sw;
	if (tally__bad(!g || h >= g->tally__tree->tally__nr_hists || v < 0))
		return -EINVAL;
	x = &g->tally__tree->tally__hists[h];
	w = x->first + tally__hist_pos(&x->l, (uint64_t)v);
	sw = x->first + x->l.nr;
	if (tally__unlikely(!tally__load(&g->tally__fast_items))) {
		tally__rstat_mod_other(g, sw, (tally_sword)v);
		tally__rstat_mod_other(g, w, 1);
		return 0;
	}
#if TALLY__HAVE_RSEQ
	{
		unsigned char *base = g->tally__pcpu.base;
		size_t soff;
		switch (tally__rstat_rseq_record(g, base + (size_t)sw * sizeof(tally_uword),
						 base + (size_t)w * sizeof(tally_uword),
						 (tally_uword)v, &soff)) {
		case TALLY__RSTAT_REC_DONE:
			tally__rstat_rseq_count(g, base, soff, 1); /* the bucket's */
			return 0;
		case TALLY__RSTAT_REC_SUM:
			tally__rstat_mod_fenced(g, w, 1);
			return 0;
		case TALLY__RSTAT_REC_NOTHING:
			break;
		}
	}
#endif
	if (v)
		tally__rstat_mod_fenced_counted(g, sw, (tally_sword)v, 0);
	tally__rstat_mod_fenced(g, w, 1);
	return 0;
}

#endif /* TALLY_RSTAT_RECORD_H */
