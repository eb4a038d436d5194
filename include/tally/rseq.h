/**
 * @file
 * tally/rseq.h - glibc's registered rseq area: the current CPU in one load,
 * and (where implemented) a restartable per-CPU add. Internal.
 *
 * tally never registers rseq itself and never writes a kernel-owned field;
 * it reads cpu_id / cpu_id_start and, in a critical section, stores only
 * the rseq_cs pointer, which belongs to user space.
 */
#ifndef TALLY_RSEQ_H
#define TALLY_RSEQ_H

#include <tally/arch.h>

#if TALLY__LINUX && defined(__has_include)
#  if __has_include(<sys/rseq.h>)
#    include <sys/rseq.h>
/* x32 (__x86_64__ with __ILP32__) is left out: its thread pointer is a
 * 32-bit load, and no kernel here runs x32 to test it. */
#    if defined(RSEQ_SIG) && ((defined(__x86_64__) && !defined(__ILP32__)) ||                   \
			      defined(__i386__) || defined(__aarch64__))
#      define TALLY__HAVE_RSEQ_AREA 1
#    endif
#  endif
#endif
#ifndef TALLY__HAVE_RSEQ_AREA
#  define TALLY__HAVE_RSEQ_AREA 0
#endif

/*
 * TALLY__HAVE_RSEQ: the restartable add below is compiled in. x86_64 only
 * (not x32), with a compiler that has asm goto with outputs; elsewhere, and with TALLY_PCPU_MODE 1 or 3, updates use a relaxed
 * atomic RMW on the current CPU's slot. (An aarch64 section would follow
 * the same plan; it is left out until it can be tested: qemu-user does not
 * implement rseq, so glibc leaves __rseq_size at 0 under it.)
 */
/* The section exits to its caller's fallback with asm goto, outputs
 * included: gcc 11 and clang 11 on. */
#if (defined(__clang__) && __clang_major__ >= 11) ||                                            \
	(!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11)
#  define TALLY__ASM_GOTO_OUTPUT 1
#else
#  define TALLY__ASM_GOTO_OUTPUT 0
#endif
#if (TALLY_PCPU_MODE == 0 || TALLY_PCPU_MODE == 2) && TALLY__HAVE_RSEQ_AREA &&                       \
	defined(__x86_64__) && !defined(__ILP32__) && TALLY_WORD_BITS <= 8 * __SIZEOF_POINTER__ &&    \
	TALLY__ASM_GOTO_OUTPUT
/* The commit is one store of the word: never where a word is wider than a
 * register (64-bit words on a 32-bit host take the atomic path). */
#  define TALLY__HAVE_RSEQ 1
#else
#  define TALLY__HAVE_RSEQ 0
#endif
#if TALLY_PCPU_MODE == 2 && !TALLY__HAVE_RSEQ
#  error "TALLY_PCPU_MODE 2: this build has no rseq fast path (x86_64 Linux, glibc 2.35+)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if TALLY__HAVE_RSEQ_AREA
TALLY__INLINE struct rseq *tally__rseq_area(void)
{
	void *tp;
#  if defined(__x86_64__)
	__asm__("movq %%fs:0, %0" : "=r"(tp));
#  elif defined(__i386__)
	__asm__("movl %%gs:0, %0" : "=r"(tp));
#  else
	tp = __builtin_thread_pointer();
#  endif
	return (struct rseq *)((char *)tp + __rseq_offset);
}

/* True when glibc registered rseq for the process's threads. */
TALLY__INLINE int tally__rseq_registered(void)
{
	return __rseq_size != 0;
}
#endif

/* This thread's CPU from its rseq area, or -1 if it has none. */
TALLY__INLINE int tally__rseq_cpu(void)
{
#if TALLY__HAVE_RSEQ_AREA
	/* The kernel writes cpu_id at return to user space; a relaxed load of
	 * our own thread's field. Negative means unregistered/failed. */
	return (int)__atomic_load_n(&tally__rseq_area()->cpu_id, __ATOMIC_RELAXED);
#else
	return -1;
#endif
}

#if TALLY__HAVE_RSEQ
/* After a section: clear rseq_cs, or leave it (TALLY_RSEQ_CLEAR_CS). */
#  if TALLY_RSEQ_CLEAR_CS
#    define TALLY__RSEQ_CLEAR "movq $0, %%fs:%c[cs](%[rs])\n\t"
#  else
#    define TALLY__RSEQ_CLEAR ""
#  endif
/* Operands that may be memory: clang turns "rm" into a spill to the stack. */
#  if defined(__clang__)
#    define TALLY__RSEQ_RM "r"
#  else
#    define TALLY__RSEQ_RM "rm"
#  endif
/*
 * The check of a section on an untracked object (every slot visited by
 * readers: tally/pcpu.h's written bound is nr; the histogram's and the
 * group's sections) of the CPU number it read from cpu_id (in register
 * reg), leaving to label for a thread with no registration or a CPU past
 * the slots. With slots detected (TALLY_CPU_SLOTS 0), nr covers every CPU
 * id the kernel can report (tally__nr_cpu_slots(): the possible CPUs, or
 * the kernel's cpumask size), so a registered thread's cpu_id is always
 * below it and only the unregistered values, negative as signed, leave: a
 * sign test, no load of nr. With TALLY_CPU_SLOTS set (tests, projections),
 * the slots may be fewer than the CPUs: an unsigned compare with nr, which
 * covers both. TALLY__RSEQ_NR(nr) is the asm operand nr, only where the
 * compare reads it.
 */
#  if TALLY_CPU_SLOTS
#    define TALLY__RSEQ_CPU_CHECK(reg, label) "cmpl %[nr], " reg "\n\t" "jae " label "\n\t"
#    define TALLY__RSEQ_NR(nr) [nr] TALLY__RSEQ_RM(nr)
#  else
#    define TALLY__RSEQ_CPU_CHECK(reg, label) "testl " reg ", " reg "\n\t" "js " label "\n\t"
#    define TALLY__RSEQ_NR(nr) [nr] "i"(0)
#  endif
/*
 * The check of tally__rseq_add()'s section: the CPU number against the
 * object's written bound lim (tally/pcpu.h), unsigned, so one compare
 * leaves for a thread with no registration (negative cpu_id), a CPU past
 * the slots (lim <= nr) and a CPU whose slot the object has not recorded
 * as written yet; the out-of-line path tells them apart. With slots
 * detected this costs a compare with lim where the sign test needed no
 * operand (bench/RESULTS.md, "Reads that cost what was written").
 */
#  define TALLY__RSEQ_LIM_CHECK(reg, label) "cmpl %[lim], " reg "\n\t" "jae " label "\n\t"
/* The section of tally__rseq_add(), with the shift of the CPU number as
 * an instruction and its operand: by a constant, or by %cl. */
#  define TALLY__RSEQ_ADD_ASM(shl, shift_operand)                                             \
	__asm__ __volatile__ goto(".pushsection __tally_rseq_cs, \"aw?\"\n\t"                               \
		     ".balign 32\n\t"                                                          \
		     "3:\n\t"                                                                  \
		     ".long 0, 0\n\t"            /* version, flags */                          \
		     ".quad 1f, 2f - 1f, 4f\n\t" /* start_ip, post_commit_offset, abort_ip */  \
		     ".popsection\n\t"                                                         \
		     "0:\n\t"                                                                  \
		     "leaq 3b(%%rip), %q[addr]\n\t"                                            \
		     "movq %q[addr], %%fs:%c[cs](%[rs])\n\t"                                   \
		     "1:\n\t"                                                                  \
		     "movl %%fs:%c[id](%[rs]), %k[addr]\n\t"                                   \
		     TALLY__RSEQ_LIM_CHECK("%k[addr]", "5f")                                   \
		     shl                                                                       \
		     "addq %[p], %q[addr]\n\t"                                                 \
		     "mov (%q[addr]), %[nv]\n\t"                                               \
		     "add %[d], %[nv]\n\t"                                                     \
		     "mov %[nv], (%q[addr])\n\t" /* commit */                                  \
		     "2:\n\t" TALLY__RSEQ_CLEAR                                                \
		     ".subsection 1\n\t"                                                       \
		     ".byte 0x0f, 0xb9, 0x3d\n\t"                                              \
		     ".long %c[sig]\n\t"                                                       \
		     "4:\n\t"                                                                  \
		     "jmp 0b\n\t"                                                              \
		     "5:\n\t" TALLY__RSEQ_CLEAR                                                \
		     "jmp %l[fallback]\n\t"                                                    \
		     ".previous\n\t"                                                           \
		     : [addr] "=&r"(addr), [nv] "=&r"(nv)                                      \
		     : [rs] "r"(__rseq_offset), [cs] "i"(offsetof(struct rseq, rseq_cs)),      \
		       [id] "i"(offsetof(struct rseq, cpu_id)), [lim] TALLY__RSEQ_RM(lim),     \
		       shift_operand, [p] TALLY__RSEQ_RM(p), [d] "re"(d), [sig] "i"(RSEQ_SIG)  \
		     : "memory", "cc"                                                          \
		     : fallback)

/*
 * tally__rseq_add - add d to the word at p + (cpu << shift), cpu the
 * current CPU, in a restartable critical section on glibc's registered
 * rseq area.
 *
 * Returns true with the word's new value in *newval and its address in
 * *word (the slot number, (word - p) >> shift, is left to the slow paths
 * that want it).
 * Returns false, having changed nothing, when the caller must take its
 * out-of-line path: this thread has no registration, or its CPU number is
 * >= lim, the object's written bound (tally/pcpu.h; at most nr, so a CPU
 * beyond the slots counted at allocation, which TALLY_CPU_SLOTS may make
 * fewer, leaves too). One unsigned compare decides all three
 * (TALLY__RSEQ_LIM_CHECK): the section reads cpu_id, which the kernel
 * keeps equal to cpu_id_start (the current CPU) for a registered thread
 * inside a section (a migration aborts the section), and which holds
 * RSEQ_CPU_ID_UNINITIALIZED (-1) or RSEQ_CPU_ID_REGISTRATION_FAILED (-2)
 * for a thread that has none (glibc registered nothing: valgrind,
 * GLIBC_TUNABLES=glibc.pthread.rseq=0): >= lim as unsigned. So the fast
 * path needs no load of __rseq_size: an unregistered thread stores to its
 * rseq_cs field (user space's, ignored by a kernel that has no
 * registration for it), fails the test and leaves; the caller's fallback
 * reads __rseq_size, raises lim for a CPU below nr and comes back, or
 * chooses the shared slot. lim may be a value loaded before the section:
 * it only grows, so a stale one can only send the thread out and back.

 * The section, in the kernel's terms: start_ip at 1, post_commit_ip at 2,
 * abort_ip at 4 (preceded by glibc's RSEQ_SIG, 0x0f 0xb9 0x3d then the
 * 4 signature bytes, so the bytes decode as ud1). Preemption, migration or
 * a signal between 1 and 2 sends the thread to 4 with rseq_cs cleared by
 * the kernel; 4 re-arms and retries. The store is the commit: one
 * instruction, so an abort either happened before it (nothing written) or
 * not at all. The abort and the exit to the fallback are out of line
 * (.subsection 1, then asm goto to the caller's fallback), so the path
 * taken is straight-line code.
 *
 * The instructions, and why each is there (the caller's loads of
 * __rseq_offset, p, shift and lim aside, which the compiler hoists or folds
 * where it can):
 *   lea desc; mov -> rseq_cs   arm the section: what makes it restartable
 *   mov cpu_id -> addr         which slot
 *   cmp lim; jae               no registration, a CPU past the slots, or
 *                              a slot not yet in the written bound: never
 *                              write past the regions, nor where a reader
 *                              would not look
 *   shl; add p                 the slot's address: no multiply, no table
 *                              (the slot number, wanted only on slow
 *                              paths, is computed there from the address)
 *   mov; add; mov              the update (its new value is what the
 *                              counter's carry check reads)
 * Ten with five loads (rseq_cs's descriptor is an address, not a load:
 * cpu_id, p, lim, the word), against a bare add's eleven with four
 * (librseq's rseq_load_add_store__ptr keeps the CPU in a register of its
 * own and compares cpu_id with a CPU read before the section, where this
 * compares it with lim; lim sits beside p in the object); with
 * TALLY_RSEQ_CLEAR_CS one store more: rseq_cs = 0.
 *
 * rseq_cs after the section: the kernel reads the descriptor it points to
 * at the thread's next preemption, migration or signal, and clears the
 * pointer then if the thread is outside the section. If the code that
 * holds the descriptor was unmapped in between (dlclose() of a shared
 * object that used tally), that read faults and the kernel kills the
 * thread with SIGSEGV; the uapi header says user space must clear rseq_cs
 * before reclaiming the memory of the descriptor it points to, and a
 * header cannot do that for other threads (a thread that added, then
 * blocked in a system call, wakes up after the dlclose() and dies).
 * librseq leaves it set and leaves that duty to its users. tally clears it
 * where the descriptor can go away (TALLY_RSEQ_CLEAR_CS, by default in
 * position-independent code that is not an executable: a shared object)
 * and leaves it set in executables, whose code is never unmapped: one
 * store per update saved where that is safe.
 *
 * The descriptor lives in section __tally_rseq_cs ("aw": it holds
 * absolute addresses, relocated at load time in PIE and shared objects)
 * and is reached with a RIP-relative lea. Every inlined copy of this asm
 * emits its own descriptor and its own local labels. The "?" flag puts the
 * descriptor in the section group of the code around it, so when a C++
 * inline function that inlines this is a COMDAT, the linker discards the
 * descriptor together with a discarded duplicate of the code.
 *
 * Wait-free apart from restarts (each needs a preemption, migration or
 * signal during a handful of instructions). Ordering: none beyond program
 * order on this CPU; readers load the words with relaxed atomic loads, and
 * an aligned word store is single-copy atomic on x86_64. Sanitizers do not
 * see the accesses inside the asm: ThreadSanitizer checks the atomic path
 * through the TALLY_PCPU_MODE=1 builds of the stress programs.
 */
TALLY__INLINE bool tally__rseq_add(unsigned char *p, unsigned shift, unsigned lim, tally_uword d,
				   tally_uword *newval, tally_uword **word)
{
	tally_uword *addr, nv;
	TALLY__RSEQ_ADD_ASM("shlq %%cl, %q[addr]\n\t", [shift] "c"(shift));
	*newval = nv;
	*word = addr;
	return true;
fallback:
	return false;
}

/* tally__rseq_add() for an object of at most 2^TALLY_PCPU_REGION_SHIFT
 * bytes per slot, whose chunk's shift is that constant (the arena
 * guarantees it): a shift by an immediate, one load fewer. */
TALLY__INLINE bool tally__rseq_add_small(unsigned char *p, unsigned lim, tally_uword d,
					 tally_uword *newval, tally_uword **word)
{
	tally_uword *addr, nv;
	TALLY__RSEQ_ADD_ASM("shlq %[shift], %q[addr]\n\t", [shift] "i"(TALLY_PCPU_REGION_SHIFT));
	*newval = nv;
	*word = addr;
	return true;
fallback:
	return false;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* TALLY_RSEQ_H */
