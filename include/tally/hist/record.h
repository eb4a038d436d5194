/**
 * @file
 * tally/hist/record.h - a record's adds (private; include <tally/hist.h>):
 * the bucket's half in the active bank, then the bank's sum, then its done
 * count, each step one store.
 *
 * x86_64 with rseq: one restartable section on glibc's registered rseq
 * area, in tally__rseq_add()'s form (tally/rseq.h: one compare of cpu_id
 * with the histogram's written bound, TALLY__RSEQ_LIM_CHECK, covers "not
 * registered", "past the slots" and "not yet in the bound", a shift, asm
 * goto to out-of-line exits, rseq_cs left set where TALLY__RSEQ_CLEAR says
 * so): on the current CPU c, half += n (32-bit xaddl: it also clears a
 * sentinel bit in a register), sum += v n (a load, an add and stosq: the
 * store also moves rdi, the second sentinel), then done += n, the commit.
 * An abort before the half's add restarts the section; one after it (the
 * sentinels say how far it got) finishes with atomic RMWs on the shared
 * slot: the sum and done, or done alone, as does a carry out of the half's
 * add (the carry must land before done).
 *
 * Elsewhere (TALLY_PCPU_MODE 1 or 3, no rseq, other architectures): a
 * relaxed atomic RMW on the bucket half, then release RMWs on the sum and
 * done, on the slot of the CPU the thread ran on a moment ago (its written
 * bound raised first), or on the shared slot when the process has rseq
 * but this thread could not use it (plain rseq stores and atomic adds never
 * meet on one word).
 *
 * Where a record's words land: all three on one slot, except a section
 * aborted after its half's add, whose sum and done (or done alone) go to
 * the shared slot; so a done on a CPU slot always has its sum on that slot,
 * and the cut reads the shared slot's done first (hist/cut.h). Every write
 * to a CPU slot s comes after the histogram's written bound covers s
 * (tally/pcpu.h), every write to the shared slot after the histogram
 * notes it used (TALLY__HIST_USED_SHARED), every carry after
 * TALLY__HIST_USED_CARRY: a cut reads only what was written.
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

/* Note a use of the histogram (TALLY__HIST_USED_*) before the write it
 * announces. Relaxed: the record's release of done orders it before that
 * done, and a cut that saw the done sees it (hist/cut.h); once set, a
 * load, no store. */
TALLY__INLINE void tally__hist_use(struct tally_hist *h, unsigned what)
{
	if (tally__unlikely(!(__atomic_load_n(&h->tally__used, __ATOMIC_RELAXED) & what)))
		__atomic_fetch_or(&h->tally__used, what, __ATOMIC_RELAXED);
}

/* Tests only: TALLY__HIST_RECORD_HOOK(h, n) runs in a record's atomic
 * path right after the half's add, before its carry, sum and done: a
 * test holds records there (tests/plain/hist_big.c). Nothing by default. */
#ifndef TALLY__HIST_RECORD_HOOK
#  define TALLY__HIST_RECORD_HOOK(h, n) ((void)0)
#endif

/* How far a record got before it left the rseq section. */
enum tally__hist_stage {
	TALLY__HIST_NOTHING, /* nothing added */
	TALLY__HIST_HALF,    /* the half added on some slot, no carry out */
	TALLY__HIST_WRAPPED, /* the half added and wrapped: 2^32 to carry */
	TALLY__HIST_SUM,     /* the half (no carry out) and the sum added on a
				CPU slot: done left to add */
	TALLY__HIST_DONE     /* the section committed: the whole record */
};

/*
 * Finish a record with atomic RMWs: n observations, their values' sum sv,
 * into the half at byte offset off of a slot's chunk (whose bit 2 is its
 * bank's: tally__hist_half_off()), from stage on (not DONE). From NOTHING,
 * on the slot tally__hist_atomic_slot() picks (its written bound raised
 * first); from a later stage (a section's leftovers), on the shared slot.
 */
TALLY__INLINE void tally__hist_record_atomic(struct tally_hist *h, size_t off, uint32_t n,
					     uint64_t sv, enum tally__hist_stage stage)
{
	const struct tally__pcpu *p = &h->tally__pcpu;
	unsigned k = (unsigned)(off >> 2) & 1u;
	unsigned s = stage == TALLY__HIST_NOTHING ? tally__hist_atomic_slot(p) : p->nr;
	unsigned char *c;
	if (s < p->nr)
		tally__pcpu_cover(p, s);
	else
		tally__hist_use(h, TALLY__HIST_USED_SHARED);
	c = (unsigned char *)tally__pcpu_at(p, s, 0);
	if (stage == TALLY__HIST_NOTHING &&
	    tally__unlikely(__atomic_add_fetch((uint32_t *)(c + off), n, __ATOMIC_RELAXED) < n))
		stage = TALLY__HIST_WRAPPED;
	TALLY__HIST_RECORD_HOOK(h, n);
	if (tally__unlikely(stage == TALLY__HIST_WRAPPED)) {
		/* the half wrapped: carry 2^32 into carry[k][j] */
		size_t j = (off - TALLY__HIST_BUCKETS_OFF) / 8u;
		tally__hist_use(h, TALLY__HIST_USED_CARRY);
		__atomic_fetch_add(&h->tally__carry[(size_t)k * h->tally__l.nr + j],
				   (uint64_t)1 << 32, __ATOMIC_RELAXED);
	}
	c += TALLY__HIST_BANK_BYTES * k;
	/* release: the half's add (and a carry) come before the sum's; pairs
	 * with the cut's acquire load of the sum (hist/cut.h). A section
	 * that stopped at SUM added its sum on its CPU slot already. */
	if (stage != TALLY__HIST_SUM)
		__atomic_fetch_add((uint64_t *)(c + 8), sv, __ATOMIC_RELEASE);
	/* release: everything above (and the section's half and sum) comes
	 * before done; pairs with the cut's acquire load of done. */
	__atomic_fetch_add((uint64_t *)c, (uint64_t)n, __ATOMIC_RELEASE);
}

/*
 * Test hooks: assembler strings placed in the rseq section, for tests that
 * trap there (tests/plain/hist_rseq.c); empty by default.
 *   TALLY__HIST_HOOK_ADD     before the half's add (an abort restarts)
 *   TALLY__HIST_HOOK_CARRY   between the half's add and its carry test: it
 *                            must leave the carry flag as it found it
 *   TALLY__HIST_HOOK_SUM     after the carry test, before the sum's store
 *                            (an abort finishes sum and done on the
 *                            shared slot)
 *   TALLY__HIST_HOOK_COMMIT  after the sum's store, before the commit (an
 *                            abort finishes done on the shared slot)
 * A hook may change the flags (TALLY__HIST_HOOK_CARRY: but the carry),
 * nothing else.
 */
#ifndef TALLY__HIST_HOOK_ADD
#  define TALLY__HIST_HOOK_ADD ""
#endif
#ifndef TALLY__HIST_HOOK_CARRY
#  define TALLY__HIST_HOOK_CARRY ""
#endif
#ifndef TALLY__HIST_HOOK_SUM
#  define TALLY__HIST_HOOK_SUM ""
#endif
#ifndef TALLY__HIST_HOOK_COMMIT
#  define TALLY__HIST_HOOK_COMMIT ""
#endif

#if TALLY__HAVE_RSEQ
/*
 * The section: n (1..UINT32_MAX) observations, their values' sum sv
 * (modulo 2^64), into the half at byte offset off of a slot's chunk (off
 * names the bank too: its bit 2 is 4 k, tally__hist_half_off()). Returns
 * DONE, or the stage it left at for tally__hist_record_slow().
 *
 * One restartable section on glibc's registered rseq area, from the
 * cpu_id load (start_ip, 1) to after the commit of done (post_commit_ip,
 * 2), with three stores that count: the half's add, the sum's store, then
 * done's add. An abort between them must not restart (a store would count
 * twice), and the kernel does not say where the section was interrupted:
 * on an abort it sets only the instruction pointer, to abort_ip (and
 * clears rseq_cs); every other register is the interrupted thread's
 * (kernel/rseq.c, rseq_ip_fixup()). So each of the first two stores
 * leaves its mark in a register in the same instruction:
 *  - the half: r enters as 2^32 + n, and the unlocked xaddl adds its low
 *    32 bits (n) to the half and puts the half's old value, zero-extended,
 *    in r: bit 32 of r is set exactly while the add has not run;
 *  - the sum: rdi holds the sum's address (set before the half's add),
 *    and stosq stores rax (the loaded sum plus sv) there and moves rdi
 *    8 bytes on: rdi past the sum exactly once the store has run.
 * The abort handler (after the signature, at 4): r's bit 32 set, restart
 * from the top (nothing counted yet); else if the old half plus n carried
 * out of 32 bits (the handler adds n to r: the add's carry again, since
 * the flags may have changed since), WRAPPED (the section leaves before
 * the sum on a wrap); else rdi past the sum, SUM (done left), or HALF. With
 * no abort the thread never left the CPU whose cpu_id it read at
 * start_ip, so one lookup of the CPU covers the half, the sum and done
 * (the words of slot c are written only by sections running on CPU c,
 * one at a time, once c is in the written bound), and the sum's load, add
 * and store are one update. A carry out of the half's add leaves the
 * section (jc 6): the carry must land before done, so C does carry, sum
 * and done on the shared slot. Every inlined copy carries its own
 * descriptor in __tally_rseq_cs, as tally__rseq_add() does.
 *
 * Why not the sum and done in one commit (a parity bit in done picking
 * one of two sum words, each record writing the other: the section before
 * this one): the sum word a record writes is the one the next record
 * reads, at an address chosen by done's parity, so each record's sum
 * waited for the last record's done and sum through memory; it cost 2.4 ns
 * a record here (7.1 against 4.7 ns in a scratch driver, bench/RESULTS.md).
 * stosq's second sentinel costs 0.55 ns over a plain add of the sum, which
 * could not tell an abort after it from one before.
 *
 * The instructions (the caller's loads of h's fields and of __rseq_offset
 * aside, which the compiler hoists or folds into operands where it can):
 *   movabs 2^32 + n -> r           the sentinel and the addend (before the
 *                                  section: a restart finds it unchanged)
 *   lea desc; mov -> rseq_cs       arm the section
 *   mov cpu_id; cmp lim; jae       which slot; unregistered, past the
 *                                  slots or not in the written bound: leave
 *   shl; add base                  the slot's chunk
 *   lea -> rdi                     the sum's address, the second sentinel
 *   xaddl r -> half                the half += n, and the sentinel cleared
 *   jc                             its carry: a wrap leaves
 *   mov sum -> rax; add sv         the new sum
 *   stosq                          the sum stored, rdi moved
 *   add n to done                  the commit
 * 15 instructions with the movabs: 5 loads (cpu_id, base, the half, the
 * sum, done; the half and done by their RMWs; lim is the caller's load)
 * and 4 stores (rseq_cs, the half, the sum, done); TALLY_RSEQ_CLEAR_CS
 * adds a store, rseq_cs = 0.
 * Before the section (tally__hist_record()): the value's bucket (pxor;
 * cvtsi2sd; movq; a load of the shift; shr), the window check (sub; cmp;
 * jae), the active bank word (a load; lea for the half's offset; and for
 * 4 k), the loads of the chunk's shift and __rseq_offset.
 */
TALLY__INLINE enum tally__hist_stage tally__hist_section(struct tally_hist *h, size_t off,
							  uint32_t n, uint64_t sv)
{
	const struct tally__pcpu *p = &h->tally__pcpu;
	size_t kb = off & 4u; /* 4 k: the bank's record is at 8 kb = 32 k */
	uint64_t r = ((uint64_t)1 << 32) + n; /* bit 32: the half's add has not run */
	uint64_t dn = n;
	/* relaxed: it only grows; a stale one only sends the thread out to
	 * raise it and back (tally/pcpu.h) */
	unsigned lim = __atomic_load_n(&p->lim, __ATOMIC_RELAXED);
	uintptr_t a;
	uint64_t t, *w;
	__asm__ __volatile__ goto(
		".pushsection __tally_rseq_cs, \"aw?\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"
		".quad 1f, 2f - 1f, 4f\n\t"
		".popsection\n\t"
		"0:\n\t"
		"leaq 3b(%%rip), %%rax\n\t"
		"movq %%rax, %%fs:%c[cs](%[rs])\n\t" /* arm */
		"1:\n\t"
		"movl %%fs:%c[id](%[rs]), %k[a]\n\t"
		TALLY__RSEQ_LIM_CHECK("%k[a]", "5f")
		"shlq %%cl, %q[a]\n\t"
		"addq %[base], %q[a]\n\t"
		"leaq 8(%q[a],%[kb],8), %[w]\n\t" /* the sum: rdi moves when it is stored */
		TALLY__HIST_HOOK_ADD
		"xaddl %k[r], (%q[a],%[off])\n\t" /* the half; r < 2^32 from here */
		TALLY__HIST_HOOK_CARRY
		"jc 6f\n\t" /* wrapped: the carry goes before sum and done */
		"movq 8(%q[a],%[kb],8), %%rax\n\t"
		"addq %[sv], %%rax\n\t"
		TALLY__HIST_HOOK_SUM
		"stosq\n\t" /* the sum; rdi past it from here */
		TALLY__HIST_HOOK_COMMIT
		"addq %[dn], (%q[a],%[kb],8)\n\t" /* done: the commit */
		"2:\n\t" TALLY__RSEQ_CLEAR
		".subsection 1\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"4:\n\t"
		"btq $32, %q[r]\n\t" /* the half's add has not run: restart */
		"jc 0b\n\t"
		"addl %k[dn], %k[r]\n\t" /* old half + n: did it wrap? */
		"jc %l[wrapped]\n\t"
		"leaq 16(%q[a],%[kb],8), %%rax\n\t"
		"cmpq %%rax, %[w]\n\t" /* the sum stored? */
		"je %l[sum]\n\t"
		"jmp %l[half]\n\t"
		"5:\n\t" TALLY__RSEQ_CLEAR
		"jmp %l[nothing]\n\t"
		"6:\n\t" TALLY__RSEQ_CLEAR
		"jmp %l[wrapped]\n\t"
		".previous\n\t"
		: [a] "=&r"(a), [t] "=&a"(t), [w] "=&D"(w), [r] "+&r"(r)
		: [rs] "r"(__rseq_offset), [cs] "i"(offsetof(struct rseq, rseq_cs)),
		  [id] "i"(offsetof(struct rseq, cpu_id)), [lim] TALLY__RSEQ_RM(lim),
		  [shift] "c"(p->shift), [base] TALLY__RSEQ_RM(p->base), [off] "r"(off),
		  [kb] "r"(kb), [sv] "r"(sv), [dn] "er"(dn), [sig] "i"(RSEQ_SIG)
		: "memory", "cc"
		: nothing, half, sum, wrapped);
	(void)t;
	(void)w;
	return TALLY__HIST_DONE;
nothing:
	return TALLY__HIST_NOTHING;
half:
	return TALLY__HIST_HALF;
sum:
	return TALLY__HIST_SUM;
wrapped:
	return TALLY__HIST_WRAPPED;
}
#endif

/*
 * The section's leftovers, out of line: from NOTHING, a CPU not yet in
 * the written bound raises it and goes back in (each time round needs a
 * migration to another CPU outside it); a thread with no registration or
 * a CPU past the slots takes the atomic path; a later stage finishes on
 * the shared slot.
 */
TALLY__COLD void tally__hist_record_slow(struct tally_hist *h, size_t off, uint32_t n, uint64_t sv,
					 enum tally__hist_stage stage)
{
#if TALLY__HAVE_RSEQ
	const struct tally__pcpu *p = &h->tally__pcpu;
	int c;
	while (stage == TALLY__HIST_NOTHING && tally__rseq_registered() &&
	       (c = tally__rseq_cpu()) >= 0 && (unsigned)c < p->nr) {
		tally__pcpu_raise(p, (unsigned)c);
		stage = tally__hist_section(h, off, n, sv);
		if (stage == TALLY__HIST_DONE)
			return;
	}
#endif
	tally__hist_record_atomic(h, off, n, sv, stage);
}

/*
 * A record's adds: n (1..UINT32_MAX) observations, their values' sum sv
 * (modulo 2^64), into the half at byte offset off of a slot's chunk.
 * x86_64 with rseq: tally__hist_section(), its exits out of line;
 * elsewhere: tally__hist_record_atomic() from stage NOTHING.
 */
TALLY__INLINE void tally__hist_add(struct tally_hist *h, size_t off, uint32_t n, uint64_t sv)
{
#if TALLY__HAVE_RSEQ
	enum tally__hist_stage st = tally__hist_section(h, off, n, sv);
	if (tally__unlikely(st != TALLY__HIST_DONE))
		tally__hist_record_slow(h, off, n, sv, st);
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
 * A record of n >= TALLY__HIST_BIG_N observations (tally_hist_record_n()
 * only), out of line: announced in the histogram's big-record counts, so
 * that no cut accepts a read while one is in flight (hist/cut.h: the
 * add-up check alone cannot tell such records apart from a wrapped half).
 * started is raised before the half's add (the release fence orders it
 * before every add of the record, for the cut's acquire fence), finished
 * after done's (release: the cut that reads it sees the whole record).
 */
TALLY__COLD int tally__hist_record_big(struct tally_hist *h, int64_t v, uint32_t n)
{
	unsigned act;
	if (tally__bad(v < 0))
		return -EINVAL;
	__atomic_fetch_add(&h->tally__big[0], 1, __ATOMIC_RELAXED);
	tally__thread_fence(__ATOMIC_RELEASE);
	act = tally__load(&h->tally__act); /* relaxed: as in tally__hist_record_other() */
	tally__hist_record_atomic(h,
				  tally__hist_half_off(tally__hist_pos_slow(&h->tally__l, (uint64_t)v),
						       tally__hist_bank(act)),
				  n, (uint64_t)v * n, TALLY__HIST_NOTHING);
	__atomic_fetch_add(&h->tally__big[1], 1, __ATOMIC_RELEASE);
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
