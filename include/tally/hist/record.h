/**
 * @file
 * tally/hist/record.h - a record's adds (private; include <tally/hist.h>):
 * the bucket's half in the active bank, then the bank's sum and done
 * count, each step one committing store.
 *
 * x86_64 with rseq: one asm block of two restartable sections on glibc's
 * registered rseq area, in tally__rseq_add()'s form (tally/rseq.h: one
 * test of cpu_id, TALLY__RSEQ_CPU_CHECK, covers "not registered" and
 * "past the slots", a shift, asm goto to out-of-line exits, rseq_cs left
 * set where TALLY__RSEQ_CLEAR says so):
 *   section 1: on the current CPU c, half += n (32-bit): the commit. A
 *              carry out of the add (the half wrapped) leaves the asm: the
 *              carry must land before done, so C does carry, sum and done.
 *   section 2: if still on c, the bank's record (hist/layout.h): with
 *              d = done and s = d >> 63, sum[s ^ 1] = sum[s] + v n
 *              (repeatable), then done = d + n + 2^63, the commit (the
 *              count gains n, the parity bit flips).
 * Each commit is one add to memory (an interruption finds it done or not
 * begun). An abort restarts only its own section (which re-checks the CPU). A
 * thread that left c between the sections, or could not start, finishes
 * with atomic RMWs on the shared slot (below). Every inlined copy carries
 * its own two descriptors in __tally_rseq_cs, as tally__rseq_add() does.
 *
 * Elsewhere (TALLY_PCPU_MODE 1 or 3, no rseq, other architectures): a
 * relaxed atomic RMW on the bucket half, then release RMWs on sum[0] and
 * done, on the slot of the CPU the thread ran on a moment ago, or on the
 * shared slot when the process has rseq but this thread could not use it
 * (plain rseq stores and atomic adds never meet on one word). The sum and
 * done of one record always land on one slot (the cut relies on it).
 */
#ifndef TALLY_HIST_RECORD_H
#define TALLY_HIST_RECORD_H

#if !defined(TALLY__HIST_INSIDE)
#  error "tally/hist/record.h is private: include <tally/hist.h>"
#endif

/* The slot for a record's atomic adds (see tally__pcpu_add()). */
TALLY__INLINE unsigned tally__hist_atomic_slot(const struct tally__pcpu *p)
{
#if TALLY__HAVE_RSEQ
	if (tally__rseq_registered())
		return p->nr;
#endif
	return tally__cpu() % p->nr;
}

/* How far a record got before it left the rseq sections. */
enum tally__hist_stage {
	TALLY__HIST_NOTHING, /* nothing added */
	TALLY__HIST_HALF,    /* the half added on some slot, no carry out */
	TALLY__HIST_WRAPPED  /* the half added and wrapped: 2^32 to carry */
};

/*
 * Finish a record with atomic RMWs: n observations, their values' sum sv,
 * into the half at byte offset off of a slot's chunk (whose bit 2 is its
 * bank's: tally__hist_half_off()), from stage on.
 */
TALLY__INLINE void tally__hist_record_atomic(struct tally_hist *h, size_t off, uint32_t n,
					     uint64_t sv, enum tally__hist_stage stage)
{
	const struct tally__pcpu *p = &h->tally__pcpu;
	unsigned k = (unsigned)(off >> 2) & 1u;
	unsigned s = tally__hist_atomic_slot(p);
	unsigned char *c = (unsigned char *)tally__pcpu_at(p, s, 0);
	if (stage == TALLY__HIST_NOTHING &&
	    tally__unlikely(__atomic_add_fetch((uint32_t *)(c + off), n, __ATOMIC_RELAXED) < n))
		stage = TALLY__HIST_WRAPPED;
	if (tally__unlikely(stage == TALLY__HIST_WRAPPED)) {
		/* the half wrapped: carry 2^32 into carry[k][j] */
		size_t j = (off - TALLY__HIST_BUCKETS_OFF) / 8u;
		__atomic_fetch_add(&h->tally__carry[(size_t)k * h->tally__l.nr + j],
				   (uint64_t)1 << 32, __ATOMIC_RELAXED);
	}
	c += TALLY__HIST_BANK_BYTES * k;
	/* release: the half's add (and a carry) come before the sum's; pairs
	 * with the cut's acquire load of the sum (hist/cut.h). */
	__atomic_fetch_add((uint64_t *)(c + 8), sv, __ATOMIC_RELEASE);
	/* release: everything above comes before done; pairs with the cut's
	 * acquire load of done. */
	__atomic_fetch_add((uint64_t *)c, (uint64_t)n, __ATOMIC_RELEASE);
}

/* The rseq path's leftovers, out of line. */
TALLY__COLD void tally__hist_record_slow(struct tally_hist *h, size_t off, uint32_t n, uint64_t sv,
					 enum tally__hist_stage stage)
{
	tally__hist_record_atomic(h, off, n, sv, stage);
}

/*
 * Test hooks: assembler strings placed in the rseq path, for tests that
 * trap there (tests/plain/hist_rseq.c); empty by default.
 *   TALLY__HIST_HOOK_S1       in section 1, before the half's add
 *   TALLY__HIST_HOOK_BETWEEN  between the sections (after the carry test)
 *   TALLY__HIST_HOOK_S2       in section 2, after the repeatable sum store,
 *                             before the commit
 * A hook may change the flags, nothing else.
 */
#ifndef TALLY__HIST_HOOK_S1
#  define TALLY__HIST_HOOK_S1 ""
#endif
#ifndef TALLY__HIST_HOOK_BETWEEN
#  define TALLY__HIST_HOOK_BETWEEN ""
#endif
#ifndef TALLY__HIST_HOOK_S2
#  define TALLY__HIST_HOOK_S2 ""
#endif

/*
 * A record's adds: n (1..UINT32_MAX) observations, their values' sum sv
 * (modulo 2^64), into the half at byte offset off of a slot's chunk (off
 * names the bank too: its bit 2 is 4 k, tally__hist_half_off()).
 *
 * The rseq path, instruction by instruction (the caller's loads of h's
 * fields and of __rseq_offset aside, which the compiler hoists or folds
 * into operands where it can):
 *   lea desc; mov -> rseq_cs         arm section 1
 *   mov cpu_id; test; js             which slot; unregistered (or, with
 *                                    TALLY_CPU_SLOTS, cmp nr; jae: past
 *                                    the slots): leave (tally__rseq_add())
 *   mov; shl; add base               the slot's chunk (the CPU number is
 *                                    kept for section 2's check)
 *   add to memory                    the half += n: the commit (one
 *                                    instruction: an interruption finds
 *                                    it done or not begun)
 *   jc                               its carry flag: a wrap leaves
 *   lea                              the bank's record, chunk + 32 k
 *   lea desc; mov -> rseq_cs         arm section 2
 *   cmp cpu_id; jne                  still on that CPU (else the shared
 *                                    slot, in C)
 *   mov done; mov; shr $63           d, and its parity s
 *   mov; add; xor; mov               sum[s ^ 1] = sum[s] + sv
 *   add to memory                    done += n + 2^63: the commit
 * 23 instructions: 6 loads (cpu_id twice, base, the half, done, a sum;
 * nr too with TALLY_CPU_SLOTS; the half and done by their adds) and 5
 * stores (rseq_cs twice, the half, a sum, done);
 * TALLY_RSEQ_CLEAR_CS adds a store. Before them (tally__hist_record()):
 * the value's bucket (pxor; cvtsi2sd; movq; a load of the shift; shr),
 * the window check (sub; cmp; jae), the active bank word (a load; lea
 * for the half's offset; and for 4 k) and the loads of the chunk's shift
 * and __rseq_offset: 13 more, with 6 loads; tally_hist_record()'s NULL
 * test adds 2 where a loop does not hoist it: 36 to 38 in all (gcc 12
 * -O2), against about 90 before this form. The two sections are the price of the
 * exact sum: a section commits only its last store, and the half and the
 * bank's record are two words.
 */
TALLY__INLINE void tally__hist_add(struct tally_hist *h, size_t off, uint32_t n, uint64_t sv)
{
#if TALLY__HAVE_RSEQ
	const struct tally__pcpu *p = &h->tally__pcpu;
	size_t kb = off & 4u; /* 4 k: the record is at 8 kb = 32 k */
	uint64_t dn = (uint64_t)n + ((uint64_t)1 << 63);
	uintptr_t a;
	uint64_t t, d, s;
	unsigned cpu, nr = p->nr;
	(void)nr; /* read by the section only with TALLY_CPU_SLOTS */
	__asm__ __volatile__ goto(
		".pushsection __tally_rseq_cs, \"aw?\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"
		".quad 1f, 2f - 1f, 4f\n\t"
		".balign 32\n\t"
		"13:\n\t"
		".long 0, 0\n\t"
		".quad 11f, 12f - 11f, 14f\n\t"
		".popsection\n\t"
		/* section 1: the bucket's half */
		"0:\n\t"
		"leaq 3b(%%rip), %q[a]\n\t"
		"movq %q[a], %%fs:%c[cs](%[rs])\n\t"
		"1:\n\t"
		"movl %%fs:%c[id](%[rs]), %k[cpu]\n\t"
		TALLY__RSEQ_CPU_CHECK("%k[cpu]", "5f")
		"movl %k[cpu], %k[a]\n\t"
		"shlq %%cl, %q[a]\n\t"
		"addq %[base], %q[a]\n\t"
		TALLY__HIST_HOOK_S1
		"addl %k[n], (%q[a],%[off])\n\t" /* commit 1 */
		"2:\n\t"
		"jc 6f\n\t" /* wrapped: the carry goes before sum and done */
		TALLY__HIST_HOOK_BETWEEN
		"leaq (%q[a],%[kb],8), %q[a]\n\t" /* the bank's record */
		/* section 2: sum[s ^ 1] = sum[s] + sv; done = d + n + 2^63 */
		"10:\n\t"
		"leaq 13b(%%rip), %q[t]\n\t"
		"movq %q[t], %%fs:%c[cs](%[rs])\n\t"
		"11:\n\t"
		"cmpl %%fs:%c[id](%[rs]), %k[cpu]\n\t"
		"jne 7f\n\t"
		"movq (%q[a]), %q[d]\n\t" /* d: its parity picks the sum */
		"movq %q[d], %q[s]\n\t"
		"shrq $63, %q[s]\n\t"
		"movq 8(%q[a],%q[s],8), %q[t]\n\t"
		"addq %[sv], %q[t]\n\t"
		"xorl $1, %k[s]\n\t"
		"movq %q[t], 8(%q[a],%q[s],8)\n\t" /* repeatable */
		TALLY__HIST_HOOK_S2
		"addq %[dn], (%q[a])\n\t" /* commit 2 */
		"12:\n\t" TALLY__RSEQ_CLEAR
		".subsection 1\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"4:\n\t"
		"jmp 0b\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"14:\n\t"
		"jmp 10b\n\t"
		"5:\n\t" TALLY__RSEQ_CLEAR
		"jmp %l[nothing]\n\t"
		"6:\n\t" TALLY__RSEQ_CLEAR
		"jmp %l[wrapped]\n\t"
		"7:\n\t" TALLY__RSEQ_CLEAR
		"jmp %l[half]\n\t"
		".previous\n\t"
		: [cpu] "=&r"(cpu), [a] "=&r"(a), [t] "=&r"(t), [d] "=&r"(d), [s] "=&r"(s)
		: [rs] "r"(__rseq_offset), [cs] "i"(offsetof(struct rseq, rseq_cs)),
		  [id] "i"(offsetof(struct rseq, cpu_id)), TALLY__RSEQ_NR(nr),
		  [shift] "c"(p->shift), [base] TALLY__RSEQ_RM(p->base), [off] "r"(off),
		  [kb] "r"(kb), [n] "ri"(n), [sv] "r"(sv), [dn] "r"(dn), [sig] "i"(RSEQ_SIG)
		: "memory", "cc"
		: nothing, half, wrapped);
	return;
nothing:
	tally__hist_record_slow(h, off, n, sv, TALLY__HIST_NOTHING);
	return;
half:
	tally__hist_record_slow(h, off, n, sv, TALLY__HIST_HALF);
	return;
wrapped:
	tally__hist_record_slow(h, off, n, sv, TALLY__HIST_WRAPPED);
#else
	tally__hist_record_atomic(h, off, n, sv, TALLY__HIST_NOTHING);
#endif
}

/* A record of a value outside the fast window (hist/layout.h), or of a
 * negative one: out of line. */
TALLY__COLD int tally__hist_record_other(struct tally_hist *h, int64_t v, uint32_t n)
{
	/* Relaxed: which bank a record lands in does not matter for its
	 * exactness, only for how soon a cut finds the old bank quiet. */
	unsigned act = tally__load(&h->tally__act);
	if (tally__bad(v < 0))
		return -EINVAL;
	tally__hist_add(h,
			tally__hist_half_off(tally__hist_pos_slow(&h->tally__l, (uint64_t)v),
					     tally__hist_bank(act)),
			n, (uint64_t)v * n);
	return 0;
}

/*
 * tally_hist_record_n()'s body, n in 1..UINT32_MAX. In the fast window
 * (hist/layout.h) the half's offset is act + 8 r, r the value's place in
 * the window: act holds the window's first half in the active bank.
 */
TALLY__INLINE int tally__hist_record(struct tally_hist *h, int64_t v, uint32_t n)
{
	const struct tally__hist_layout *l = &h->tally__l;
	uint64_t r = tally__hist_fast_bits(v, l->fast_shift) - l->fast_lo;
	unsigned act;
	if (tally__unlikely(r >= l->fast_n))
		return tally__hist_record_other(h, v, n);
	act = tally__load(&h->tally__act); /* relaxed: as above */
	tally__hist_add(h, act + 8u * (size_t)r, n, (uint64_t)v * n);
	return 0;
}

#endif /* TALLY_HIST_RECORD_H */
