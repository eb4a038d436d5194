/*
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
#    if defined(RSEQ_SIG) && (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__))
#      define TALLY__HAVE_RSEQ_AREA 1
#    endif
#  endif
#endif
#ifndef TALLY__HAVE_RSEQ_AREA
#  define TALLY__HAVE_RSEQ_AREA 0
#endif

/* The restartable add: not yet implemented on any architecture. */
#define TALLY__HAVE_RSEQ 0

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

#ifdef __cplusplus
}
#endif

#endif /* TALLY_RSEQ_H */
