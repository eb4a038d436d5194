/**
 * @file
 * tally/hist/record.h - a record's adds (private; include <tally/hist.h>):
 * the bucket's half in the active bank, then the bank's sum and done
 * count, each step one committing store.
 *
 * x86_64 with rseq: one asm block of two restartable sections on glibc's
 * registered rseq area, sharing one CPU lookup and one chunk address:
 *   section 1: on the current CPU c (< nr, registered), half += n (32-bit);
 *              a wrap (new half < n) leaves the asm: the carry must land
 *              before done, so C does carry, sum and done.
 *   section 2: if still on c, the bank's record (hist/layout.h): with
 *              d = done, sum[(d & 1) ^ 1] = sum[d & 1] + v n (repeatable),
 *              then done = (d + 2n) ^ 1, the commit.
 * An abort restarts only its own section (which re-checks that the thread
 * is still on c). A thread that left c, or could not start, finishes with
 * atomic RMWs on the shared slot (below). Every inlined copy carries its
 * own two descriptors in __tally_rseq_cs, as tally__rseq_add() does (see
 * tally/rseq.h for the section's rules).
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

/*
 * Finish a record from stage (0: nothing done; 1: the half added on some
 * slot, nv its new value) with atomic RMWs.
 */
TALLY__INLINE void tally__hist_record_atomic(struct tally_hist *h, unsigned j, unsigned k,
					     uint32_t n, uint64_t sv, int stage, uint32_t nv)
{
	const struct tally__pcpu *p = &h->tally__pcpu;
	unsigned s = tally__hist_atomic_slot(p);
	unsigned char *c = (unsigned char *)tally__pcpu_at(p, s, 0);
	if (stage == 0)
		nv = __atomic_add_fetch((uint32_t *)(c + tally__hist_half_off(j, k)), n,
					__ATOMIC_RELAXED);
	if (tally__unlikely(nv < n)) /* the half wrapped: carry 2^32 */
		__atomic_fetch_add(&h->tally__carry[(size_t)k * h->tally__l.nr + j],
				   (uint64_t)1 << 32, __ATOMIC_RELAXED);
	c += TALLY__HIST_BANK_BYTES * k;
	/* release: the half's add (and a carry) come before the sum's; pairs
	 * with the cut's acquire load of the sum (hist/cut.h). */
	__atomic_fetch_add((uint64_t *)(c + 8), sv, __ATOMIC_RELEASE);
	/* release: everything above comes before done; pairs with the cut's
	 * acquire load of done. */
	__atomic_fetch_add((uint64_t *)c, (uint64_t)n, __ATOMIC_RELEASE);
}

/* The rseq path's leftovers, out of line. */
TALLY__COLD void tally__hist_record_slow(struct tally_hist *h, unsigned j, unsigned k,
					 uint32_t n, uint64_t sv, int stage, uint32_t nv)
{
	tally__hist_record_atomic(h, j, k, n, sv, stage, nv);
}

#if TALLY__HAVE_RSEQ
/*
 * The two sections. Returns the stage reached: 2 (all done), 1 (half
 * only: migrated, or the half wrapped; *nv is its new value) or 0
 * (nothing: no rseq, or a CPU beyond the slots).
 */
TALLY__INLINE int tally__hist_rseq_record(const struct tally__pcpu *p, size_t boff, size_t kb,
					  uint64_t n, uint64_t sv, uint32_t *nv)
{
	unsigned cpu;
	uintptr_t addr;
	uint64_t tmp, sel;
	if (tally__unlikely(__rseq_size == 0))
		return 0;
	__asm__ __volatile__(
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
		"leaq 3b(%%rip), %[tmp]\n\t"
		"movq %[tmp], %%fs:%c[cs](%[rs])\n\t"
		"1:\n\t"
		"movl %%fs:%c[start](%[rs]), %[cpu]\n\t"
		"cmpl %[nr], %[cpu]\n\t"
		"jae 6f\n\t"
		"movl %[cpu], %k[addr]\n\t"
		"imulq %[stride], %[addr]\n\t"
		"addq %[base], %[addr]\n\t"
		"cmpl %%fs:%c[id](%[rs]), %[cpu]\n\t"
		"jne 6f\n\t"
		"movl (%[addr],%[boff]), %k[sel]\n\t"
		"addl %k[n], %k[sel]\n\t"
		"movl %k[sel], (%[addr],%[boff])\n\t" /* commit 1 */
		"2:\n\t"
		"movl %k[sel], %k[boff]\n\t" /* the new half, for *nv */
		"cmpl %k[n], %k[sel]\n\t"
		"jb 7f\n\t" /* wrapped: the carry goes before sum and done */
		"addq %[kb], %[addr]\n\t" /* the bank's record */
		/* section 2: sum[sel ^ 1] = sum[sel] + sv; done = (d + 2n) ^ 1 */
		"10:\n\t"
		"leaq 13b(%%rip), %[tmp]\n\t"
		"movq %[tmp], %%fs:%c[cs](%[rs])\n\t"
		"11:\n\t"
		"cmpl %%fs:%c[id](%[rs]), %[cpu]\n\t"
		"jne 8f\n\t"
		"movq (%[addr]), %[tmp]\n\t"
		"movl %k[tmp], %k[sel]\n\t"
		"andl $1, %k[sel]\n\t"
		"movq 8(%[addr],%[sel],8), %[boff]\n\t"
		"addq %[sv], %[boff]\n\t"
		"xorl $1, %k[sel]\n\t"
		"movq %[boff], 8(%[addr],%[sel],8)\n\t" /* repeatable */
		"leaq (%[tmp],%[n],2), %[tmp]\n\t"
		"xorq $1, %[tmp]\n\t"
		"movq %[tmp], (%[addr])\n\t" /* commit 2 */
		"12:\n\t"
		"movl $2, %k[addr]\n\t"
		"jmp 5f\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"4:\n\t"
		"jmp 0b\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"14:\n\t"
		"jmp 10b\n\t"
		"6:\n\t"
		"movl $0, %k[addr]\n\t"
		"jmp 5f\n\t"
		"8:\n\t" /* migrated before section 2: boff may hold a sum; */
		"movl %k[n], %k[boff]\n\t" /* the half did not wrap */
		"7:\n\t"
		"movl $1, %k[addr]\n\t"
		"5:\n\t"
		"movq $0, %%fs:%c[cs](%[rs])\n\t"
		: [cpu] "=&r"(cpu), [addr] "=&r"(addr), [tmp] "=&r"(tmp), [sel] "=&r"(sel),
		  [boff] "+r"(boff)
		: [rs] "r"(__rseq_offset), [cs] "i"(offsetof(struct rseq, rseq_cs)),
		  [start] "i"(offsetof(struct rseq, cpu_id_start)),
		  [id] "i"(offsetof(struct rseq, cpu_id)), [nr] "rm"(p->nr),
		  [stride] "rm"((size_t)1 << p->shift), [base] "rm"(p->base), [kb] "r"(kb), [n] "r"(n),
		  [sv] "r"(sv), [sig] "i"(RSEQ_SIG)
		: "memory", "cc");
	*nv = (uint32_t)boff;
	return (int)addr;
}
#endif

/* A record's adds: n (1..UINT32_MAX) observations in bucket position j,
 * their values' sum sv (modulo 2^64). */
TALLY__INLINE void tally__hist_add(struct tally_hist *h, unsigned j, uint32_t n, uint64_t sv)
{
	/* Relaxed: which bank a record lands in does not matter for its
	 * exactness, only for how soon a cut finds the old bank quiet. */
	unsigned k = tally__load(&h->tally__active);
#if TALLY__HAVE_RSEQ
	uint32_t nv = 0;
	int stage = tally__hist_rseq_record(&h->tally__pcpu, tally__hist_half_off(j, k),
					    (size_t)TALLY__HIST_BANK_BYTES * k, n, sv, &nv);
	if (tally__likely(stage == 2))
		return;
	tally__hist_record_slow(h, j, k, n, sv, stage, nv);
#else
	tally__hist_record_atomic(h, j, k, n, sv, 0, 0);
#endif
}

#endif /* TALLY_HIST_RECORD_H */
