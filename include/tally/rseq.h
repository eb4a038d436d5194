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
 * (not x32); elsewhere, and with TALLY_PCPU_MODE 1 or 3, updates use a relaxed
 * atomic RMW on the current CPU's slot. (An aarch64 section would follow
 * the same plan; it is left out until it can be tested: qemu-user does not
 * implement rseq, so glibc leaves __rseq_size at 0 under it.)
 */
#if (TALLY_PCPU_MODE == 0 || TALLY_PCPU_MODE == 2) && TALLY__HAVE_RSEQ_AREA &&                       \
	defined(__x86_64__) && !defined(__ILP32__) && TALLY_WORD_BITS <= 8 * __SIZEOF_POINTER__
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
/*
 * tally__rseq_add - add d to the word at byte offset off of the current
 * CPU's chunk (chunk c at base + c * stride), in a restartable critical
 * section on glibc's registered rseq area.
 *
 * Returns true with the word's new value in *newval and the CPU in *slot.
 * Returns false, having changed nothing, when the caller must use an
 * atomic RMW instead: rseq is not registered (__rseq_size == 0: valgrind,
 * GLIBC_TUNABLES=glibc.pthread.rseq=0), the CPU number is >= nr (a CPU
 * beyond the slots counted at allocation), or this thread's registration
 * failed (cpu_id != cpu_id_start; the process-wide __rseq_size says
 * other threads may be in critical sections, so use the shared slot).
 *
 * The section, in the kernel's terms: start_ip at 1, post_commit_ip at 2,
 * abort_ip at 4 (preceded by glibc's RSEQ_SIG, 0x0f 0xb9 0x3d then the
 * 4 signature bytes, so the bytes decode as ud1). Preemption, migration or
 * a signal between 1 and 2 sends the thread to 4 with rseq_cs cleared by
 * the kernel; 4 re-arms and retries. Inside: load cpu_id_start, bound-check
 * it, compute the slot address, check cpu_id == cpu_id_start, then load,
 * add and store the word. The store is the commit: one instruction, so an
 * abort either happened before it (nothing written) or not at all.
 *
 * After the section rseq_cs is set back to 0, so no thread keeps a pointer
 * to a descriptor that a dlclose() could unmap (the kernel reads it at the
 * next preemption). Only rseq_cs is written; cpu_id_start and cpu_id
 * belong to the kernel and are only read.
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
TALLY__INLINE bool tally__rseq_add(unsigned char *base, size_t stride, unsigned nr, size_t off,
				   tally_uword d, tally_uword *newval, unsigned *slot)
{
	unsigned cpu;
	uintptr_t addr;
	tally_uword nv;
	if (tally__unlikely(__rseq_size == 0))
		return false;
	__asm__ __volatile__(
		".pushsection __tally_rseq_cs, \"aw?\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"             /* version, flags */
		".quad 1f, 2f - 1f, 4f\n\t"  /* start_ip, post_commit_offset, abort_ip */
		".popsection\n\t"
		"0:\n\t"
		"leaq 3b(%%rip), %[addr]\n\t"
		"movq %[addr], %%fs:%c[cs](%[rs])\n\t"
		"1:\n\t"
		"movl %%fs:%c[start](%[rs]), %[cpu]\n\t"
		"cmpl %[nr], %[cpu]\n\t"
		"jae 5f\n\t"
		"movl %[cpu], %k[addr]\n\t"
		"imulq %[stride], %[addr]\n\t"
		"addq %[base], %[addr]\n\t"
		"cmpl %%fs:%c[id](%[rs]), %[cpu]\n\t"
		"jne 6f\n\t"
		"mov (%[addr]), %[nv]\n\t"
		"add %[d], %[nv]\n\t"
		"mov %[nv], (%[addr])\n\t"  /* commit */
		"2:\n\t"
		"jmp 5f\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"4:\n\t"
		"jmp 0b\n\t"
		"6:\n\t"
		"movl $-1, %[cpu]\n\t"
		"5:\n\t"
		"movq $0, %%fs:%c[cs](%[rs])\n\t"
		: [cpu] "=&r"(cpu), [addr] "=&r"(addr), [nv] "=&r"(nv)
		: [rs] "r"(__rseq_offset), [cs] "i"(offsetof(struct rseq, rseq_cs)),
		  [start] "i"(offsetof(struct rseq, cpu_id_start)),
		  [id] "i"(offsetof(struct rseq, cpu_id)), [nr] "r"(nr), [stride] "r"(stride),
		  [base] "r"(base + off), [d] "re"(d), [sig] "i"(RSEQ_SIG)
		: "memory", "cc");
	if (tally__unlikely(cpu >= nr))
		return false;
	*newval = nv;
	*slot = cpu;
	return true;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* TALLY_RSEQ_H */
