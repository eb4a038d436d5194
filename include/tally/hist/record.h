/**
 * @file
 * tally/hist/record.h - a record's adds (private; include <tally/hist.h>):
 * the bucket's half in the active bank, then the bank's sum and done
 * count, each step one committing store.
 *
 * x86_64 with rseq: one restartable section on glibc's registered rseq
 * area, in tally__rseq_add()'s form (tally/rseq.h: one test of cpu_id,
 * TALLY__RSEQ_CPU_CHECK, covers "not registered" and "past the slots", a
 * shift, asm goto to out-of-line exits, rseq_cs left set where
 * TALLY__RSEQ_CLEAR says so): on the current CPU c, half += n (32-bit,
 * xaddl: it also clears a sentinel bit in a register), then the bank's
 * record (hist/layout.h): with d = done and s = d >> 63, sum[s ^ 1] =
 * sum[s] + v n (repeatable), then done = d + n + 2^63, the commit (the
 * count gains n, the parity bit flips). An abort before the half's add
 * restarts the section; one after it (the sentinel says which) finishes
 * with atomic RMWs on the shared slot, as does a carry out of the half's
 * add (the carry must land before done). Every inlined copy carries its
 * own descriptor in __tally_rseq_cs, as tally__rseq_add() does.
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
	TALLY__HIST_RECORD_HOOK(h, n);
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
 * Test hooks: assembler strings placed in the rseq section, for tests that
 * trap there (tests/plain/hist_rseq.c); empty by default.
 *   TALLY__HIST_HOOK_ADD     before the half's add (an abort restarts)
 *   TALLY__HIST_HOOK_CARRY   between the half's add and its carry test: it
 *                            must leave the carry flag as it found it
 *   TALLY__HIST_HOOK_COMMIT  after the repeatable sum store, before the
 *                            commit (an abort finishes on the shared slot)
 * A hook may change the flags (TALLY__HIST_HOOK_CARRY: but the carry),
 * nothing else.
 */
#ifndef TALLY__HIST_HOOK_ADD
#  define TALLY__HIST_HOOK_ADD ""
#endif
#ifndef TALLY__HIST_HOOK_CARRY
#  define TALLY__HIST_HOOK_CARRY ""
#endif
#ifndef TALLY__HIST_HOOK_COMMIT
#  define TALLY__HIST_HOOK_COMMIT ""
#endif

/*
 * A record's adds: n (1..UINT32_MAX) observations, their values' sum sv
 * (modulo 2^64), into the half at byte offset off of a slot's chunk (off
 * names the bank too: its bit 2 is 4 k, tally__hist_half_off()).
 *
 * x86_64 with rseq: one restartable section on glibc's registered rseq
 * area, from the cpu_id load (start_ip, 1) to after the commit of done
 * (post_commit_ip, 2), with two stores that count: the half's add, then
 * done's. An abort between them must not restart (the half would count
 * twice), and the kernel does not say where the section was interrupted:
 * on an abort it sets only the instruction pointer, to abort_ip (and
 * clears rseq_cs); every other register is the interrupted thread's
 * (kernel/rseq.c, rseq_ip_fixup()). So the half's add itself leaves the
 * mark: r enters as 2^32 + n, and the unlocked xaddl adds its low 32 bits
 * (n) to the half and puts the half's old value, zero-extended, in r. Bit
 * 32 of r is set exactly while the add has not run; the abort handler
 * (after the signature, at 4) tests it: set, restart from the top
 * (nothing was written that counts); clear, the half is in, so the
 * record finishes in C with atomic RMWs on the shared slot from stage
 * HALF, or WRAPPED when the old half plus n carried out of 32 bits (the
 * handler adds n, the low half of dn, to r: the add's carry again, since
 * the flags may have changed since). With no abort the thread never left
 * the CPU whose cpu_id it read at start_ip, so one lookup of the CPU
 * covers the half, the sum and done (the rseq format's words of slot c
 * are written only by sections running on CPU c, one at a time), and the
 * sum's store before the commit is repeatable: it writes the sum word
 * that done's parity does not pick (hist/layout.h). A carry out of the
 * half's add leaves the section (jc 6): the carry must land before done,
 * so C does carry, sum and done on the shared slot. Every inlined copy
 * carries its own descriptor in __tally_rseq_cs, as tally__rseq_add()
 * does.
 *
 * The instructions (the caller's loads of h's fields and of __rseq_offset
 * aside, which the compiler hoists or folds into operands where it can):
 *   movabs 2^32 + n -> r           the sentinel and the addend (before the
 *                                  section: a restart finds it unchanged)
 *   lea desc; mov -> rseq_cs       arm the section
 *   mov cpu_id; test; js           which slot; unregistered (or, with
 *                                  TALLY_CPU_SLOTS, cmp nr; jae: past
 *                                  the slots): leave (tally__rseq_add())
 *   shl; add base                  the slot's chunk
 *   xaddl r -> half                the half += n, and the sentinel cleared
 *   jc                             its carry: a wrap leaves
 *   lea                            the bank's record, chunk + 32 k
 *   mov done; shr $63              done's parity s
 *   mov; add; xor; mov             sum[s ^ 1] = sum[s] + sv (repeatable)
 *   add to memory                  done += n + 2^63: the commit (the
 *                                  count gains n, the parity flips)
 * 18 instructions with the movabs: 5 loads (cpu_id, base, the half, done,
 * a sum; nr too with TALLY_CPU_SLOTS; the half and done by their RMWs)
 * and 4 stores (rseq_cs, the half, a sum, done); TALLY_RSEQ_CLEAR_CS adds
 * a store, rseq_cs = 0. The two sections before were 23, with rseq_cs
 * stored twice and cpu_id loaded and checked twice; the xaddl costs
 * about what that saved (bench/RESULTS.md). Arming by compare then store
 * (as the group update does: a load in place of the store, the store out
 * of line when rseq_cs points elsewhere) measured no faster, so the
 * section stores. Before the section
 * (tally__hist_record()): the value's bucket (pxor; cvtsi2sd; movq; a
 * load of the shift; shr), the window check (sub; cmp; jae), the active
 * bank word (a load; lea for the half's offset; and for 4 k), the loads
 * of the chunk's shift and __rseq_offset and done's addend (movabs n +
 * 2^63): 14 more, 32 in all; tally_hist_record()'s NULL test adds 2
 * where a loop does not hoist it (gcc 12 -O2: 34 in a loop of records,
 * against 39 with the two sections; the loop's own and the value's load
 * aside).
 *
 * Elsewhere (TALLY_PCPU_MODE 1 or 3, no rseq, other architectures):
 * tally__hist_record_atomic() from stage NOTHING.
 */
TALLY__INLINE void tally__hist_add(struct tally_hist *h, size_t off, uint32_t n, uint64_t sv)
{
#if TALLY__HAVE_RSEQ
	const struct tally__pcpu *p = &h->tally__pcpu;
	size_t kb = off & 4u; /* 4 k: the record is at 8 kb = 32 k */
	uint64_t dn = (uint64_t)n + ((uint64_t)1 << 63);
	uint64_t r = ((uint64_t)1 << 32) + n; /* bit 32: the half's add has not run */
	uintptr_t a;
	uint64_t t, s;
	unsigned nr = p->nr;
	(void)nr; /* read by the section only with TALLY_CPU_SLOTS */
	__asm__ __volatile__ goto(
		".pushsection __tally_rseq_cs, \"aw?\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"
		".quad 1f, 2f - 1f, 4f\n\t"
		".popsection\n\t"
		"0:\n\t"
		"leaq 3b(%%rip), %q[t]\n\t"
		"movq %q[t], %%fs:%c[cs](%[rs])\n\t" /* arm */
		"1:\n\t"
		"movl %%fs:%c[id](%[rs]), %k[a]\n\t"
		TALLY__RSEQ_CPU_CHECK("%k[a]", "5f")
		"shlq %%cl, %q[a]\n\t"
		"addq %[base], %q[a]\n\t"
		TALLY__HIST_HOOK_ADD
		"xaddl %k[r], (%q[a],%[off])\n\t" /* the half; r < 2^32 from here */
		TALLY__HIST_HOOK_CARRY
		"jc 6f\n\t" /* wrapped: the carry goes before sum and done */
		"leaq (%q[a],%[kb],8), %q[a]\n\t" /* the bank's record */
		"movq (%q[a]), %q[s]\n\t"
		"shrq $63, %q[s]\n\t" /* done's parity picks the sum */
		"movq 8(%q[a],%q[s],8), %q[t]\n\t"
		"addq %[sv], %q[t]\n\t"
		"xorl $1, %k[s]\n\t"
		"movq %q[t], 8(%q[a],%q[s],8)\n\t" /* repeatable */
		TALLY__HIST_HOOK_COMMIT
		"addq %[dn], (%q[a])\n\t" /* the commit */
		"2:\n\t" TALLY__RSEQ_CLEAR
		".subsection 1\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"4:\n\t"
		"btq $32, %q[r]\n\t" /* the half's add has not run: restart */
		"jc 0b\n\t"
		"addl %k[dn], %k[r]\n\t" /* old half + n: did it wrap? */
		"jc %l[wrapped]\n\t"
		"jmp %l[half]\n\t"
		"5:\n\t" TALLY__RSEQ_CLEAR
		"jmp %l[nothing]\n\t"
		"6:\n\t" TALLY__RSEQ_CLEAR
		"jmp %l[wrapped]\n\t"
		".previous\n\t"
		: [a] "=&r"(a), [t] "=&r"(t), [s] "=&r"(s), [r] "+&r"(r)
		: [rs] "r"(__rseq_offset), [cs] "i"(offsetof(struct rseq, rseq_cs)),
		  [id] "i"(offsetof(struct rseq, cpu_id)), TALLY__RSEQ_NR(nr),
		  [shift] "c"(p->shift), [base] TALLY__RSEQ_RM(p->base), [off] "r"(off),
		  [kb] "r"(kb), [sv] "r"(sv), [dn] "r"(dn), [sig] "i"(RSEQ_SIG)
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
