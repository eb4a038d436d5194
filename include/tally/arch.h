/**
 * @file
 * tally/arch.h - the compiler and the CPU: compiler and sanitizer
 * detection, inlining and branch hints, the word types, atomics and
 * fences, and which CPU slot a thread is on (the CPU id, the number of
 * slots, a per-thread fallback slot).
 *
 * What the operating system provides (clocks and deadlines, a condition
 * variable, yielding, counting CPUs and memory) is os.h's, the platform
 * layer this header builds on: the slot count here is os.h's count of
 * possible CPUs, cached. The rseq fast path is rseq.h's. Atomics are the
 * __atomic builtins on plain fields, so the headers compile as C11 and as
 * C++11 and up with gcc and clang, inline on -m32, and are understood by
 * ThreadSanitizer.
 */
#ifndef TALLY_ARCH_H
#define TALLY_ARCH_H

#include <tally/config.h>
#include <tally/os.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if TALLY_DEBUG
#  include <assert.h>
#endif

#if defined(__linux__)
#  include <sched.h>
#  define TALLY__LINUX 1
#else
#  define TALLY__LINUX 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(__GNUC__) && !defined(__clang__)
#  error "tally needs gcc or clang (__atomic builtins)"
#endif

#if !defined(__cplusplus)
#  include <stdbool.h>
#endif

/* ---- sanitizers -------------------------------------------------------- */
#if defined(__SANITIZE_THREAD__)
#  define TALLY__TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define TALLY__TSAN 1
#  endif
#endif
#ifndef TALLY__TSAN
#  define TALLY__TSAN 0
#endif

#define TALLY__INLINE static inline __attribute__((always_inline))
#define TALLY__UNUSED __attribute__((unused))
/* Slow paths: kept out of line (one copy per translation unit), so the
 * inlined fast path around them stays small. Used as "TALLY__COLD void f()". */
#define TALLY__COLD static __attribute__((noinline, cold, unused))

/*
 * TALLY__API: how the update calls that are inlined at every call site
 * (tally_counter_add, tally_vec_mod/_inc/_dec/_mod_multi, tally_group_mod)
 * are compiled; config.h's TALLY_INLINE and
 * TALLY_EXTERN choose:
 *   default           forced inline at every call site (fastest; each site
 *                     carries its own copy, rseq descriptor included)
 *   TALLY_INLINE 0    one static out-of-line copy per translation unit
 *   TALLY_EXTERN 1    declarations only; the one translation unit that
 *                     defines TALLY_IMPLEMENTATION before including the
 *                     headers holds the only (external) definitions
 * A header declares each such call under TALLY_EXTERN ("TALLY__API int
 * f(...);", so that the one external definition has a prototype) and
 * defines it in "#if TALLY__API_BODY". (Only there: a declaration ahead
 * of the forced-inline definition changes the generated code.)
 */
#if TALLY_EXTERN
#  define TALLY__API
#  ifdef TALLY_IMPLEMENTATION
#    define TALLY__API_BODY 1
#  else
#    define TALLY__API_BODY 0
#  endif
#elif TALLY_INLINE
#  define TALLY__API TALLY__INLINE
#  define TALLY__API_BODY 1
#else
#  define TALLY__API static __attribute__((noinline, unused))
#  define TALLY__API_BODY 1
#endif
#define tally__likely(x) __builtin_expect(!!(x), 1)
#define tally__unlikely(x) __builtin_expect(!!(x), 0)

#if TALLY_DEBUG
#  define tally__bad(cond) (assert(!(cond)), tally__unlikely(cond))
#else
#  define tally__bad(cond) tally__unlikely(cond)
#endif

/* ---- word types -------------------------------------------------------- */
#if TALLY_WORD_BITS == 64
/** Aligned to 8 even where the ABI aligns 64-bit members to 4 (i386): a
 * 64-bit atomic load or store there (SSE or x87 move, cmpxchg8b) is
 * single-copy atomic only on an aligned word. */
typedef uint64_t tally_uword __attribute__((aligned(8)));
typedef int64_t tally_sword __attribute__((aligned(8)));
/** The largest tally_sword: 2^(W-1) - 1. */
#  define TALLY_SWORD_MAX INT64_MAX
/** The smallest tally_sword: -2^(W-1). */
#  define TALLY_SWORD_MIN INT64_MIN
/** The largest tally_uword: 2^W - 1. */
#  define TALLY_UWORD_MAX UINT64_MAX
#else
typedef uint32_t tally_uword;
typedef int32_t tally_sword;
/** The largest tally_sword: 2^(W-1) - 1. */
#  define TALLY_SWORD_MAX INT32_MAX
/** The smallest tally_sword: -2^(W-1). */
#  define TALLY_SWORD_MIN INT32_MIN
/** The largest tally_uword: 2^W - 1. */
#  define TALLY_UWORD_MAX UINT32_MAX
#endif

typedef char tally__word_is_aligned[__alignof__(tally_uword) == sizeof(tally_uword) ? 1 : -1];

/*
 * Unsigned to signed without implementation-defined conversion: values past
 * TALLY_SWORD_MAX map to their two's-complement negative.
 */
TALLY__INLINE tally_sword tally__to_signed(tally_uword u)
{
	if (u <= (tally_uword)TALLY_SWORD_MAX)
		return (tally_sword)u;
	return (tally_sword)(u - (tally_uword)TALLY_SWORD_MAX - 1u) + TALLY_SWORD_MIN;
}

/* ---- atomics ------------------------------------------------------------
 * Relaxed unless named otherwise; every stronger order at a call site
 * carries a comment naming the access it pairs with.
 */
#define tally__load(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define tally__load_acq(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define tally__store(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define tally__store_rel(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define tally__add(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
#define tally__fetch_add(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define tally__xchg(p, v) __atomic_exchange_n((p), (v), __ATOMIC_RELAXED)
#define tally__cas(p, oldp, v)                                                 \
	__atomic_compare_exchange_n((p), (oldp), (v), 0, __ATOMIC_RELAXED,     \
				    __ATOMIC_RELAXED)
/* CAS whose success publishes what came before it (pairs with load_acq). */
#define tally__cas_rel(p, oldp, v)                                             \
	__atomic_compare_exchange_n((p), (oldp), (v), 0, __ATOMIC_RELEASE,     \
				    __ATOMIC_RELAXED)
/* A fence of memory order mo (__ATOMIC_ACQUIRE, _RELEASE, _SEQ_CST).
 * gcc >= 12 warns (-Wtsan) that ThreadSanitizer does not model fences;
 * the fence still runs, and tally orders only atomic accesses with one
 * (nothing TSan could report), so say nothing. */
#if TALLY__TSAN && !defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12
#  define tally__thread_fence(mo)                                              \
	do {                                                                   \
		_Pragma("GCC diagnostic push")                                 \
		_Pragma("GCC diagnostic ignored \"-Wtsan\"")                   \
		__atomic_thread_fence(mo);                                     \
		_Pragma("GCC diagnostic pop")                                  \
	} while (0)
#else
#  define tally__thread_fence(mo) __atomic_thread_fence(mo)
#endif

/* A full fence (smp_mb()). */
#if TALLY__TSAN && !defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12
#  define tally__fence() tally__thread_fence(__ATOMIC_SEQ_CST)
#elif !TALLY__TSAN && defined(__x86_64__)
/* x86: a locked RMW orders every earlier load and store before every later
 * one, as mfence does for the write-back memory tally uses, at a fraction
 * of its cost (2.7 against 20 ns on the AMD EPYC guest of RESULTS.md).
 * The kernel's smp_mb() made the same change ("locking/x86: Use LOCK ADD
 * for smp_mb() instead of MFENCE"). An OR of 0 into the top of the stack:
 * this thread's own word, left as it was. */
#  define tally__fence() __asm__ __volatile__("lock orl $0, (%%rsp)" ::: "memory", "cc")
#elif !TALLY__TSAN && defined(__i386__)
#  define tally__fence() __asm__ __volatile__("lock orl $0, (%%esp)" ::: "memory", "cc")
#else
#  define tally__fence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

/* The atomics tally uses must be lock-free (no libatomic locks). */
#if __GCC_ATOMIC_POINTER_LOCK_FREE != 2 || __GCC_ATOMIC_INT_LOCK_FREE != 2 ||    \
	(TALLY_WORD_BITS == 64 && __GCC_ATOMIC_LLONG_LOCK_FREE != 2)
#  error "tally needs lock-free atomics on pointers and its word type"
#endif

#if TALLY__LINUX && !defined(__USE_GNU)
/* glibc declares it only for _GNU_SOURCE; the ABI is the same either way. */
extern int sched_getcpu(void);
#endif

TALLY__INLINE void tally__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* ---- process facts ------------------------------------------------------
 * Computed lazily and idempotently: every thread that races to compute one
 * computes the same value, so a relaxed store is enough.
 */

/*
 * tally__nr_cpu_slots - number of per-CPU slots: TALLY_CPU_SLOTS when set,
 * else every possible CPU id, whether online or not, so a CPU coming
 * online later has a slot (tally__os_possible_cpus());
 * TALLY_FALLBACK_NCPUS when the OS cannot tell.
 */
static inline unsigned tally__nr_cpu_slots(void)
{
#if TALLY_CPU_SLOTS
	return TALLY_CPU_SLOTS;
#else
	static unsigned cached;
	unsigned n = tally__load(&cached);
	if (tally__likely(n))
		return n;
	n = tally__os_possible_cpus();
	if (!n)
		n = TALLY_FALLBACK_NCPUS;
	tally__store(&cached, n);
	return n;
#endif
}

/**
 * tally_cpu_slots - how many CPU slots tally sizes its per-CPU structures
 * for: TALLY_CPU_SLOTS when the build sets it, else every CPU id this
 * machine may ever use (online or not). Error bounds and memory scale with
 * it: a counter's bound is 2 * batch * (tally_cpu_slots() + 1), the extra
 * slot being the shared one (tally_counter_error_bound()). Always >= 1.
 * Any thread; wait-free after the first call (which may read sysfs).
 */
static inline unsigned tally_cpu_slots(void)
{
	return tally__nr_cpu_slots();
}

/* This thread's slot number plus one; 0 until it first asks. */
static inline unsigned *tally__thread_slot_var(void)
{
	static __thread unsigned slot_plus_one;
	return &slot_plus_one;
}

/*
 * tally__thread_slot - a stable per-thread slot number, for platforms with
 * no way to ask for the current CPU and for TALLY_PCPU_MODE 3. Threads are
 * numbered round-robin from 0 in the order they first ask.
 */
static inline unsigned tally__thread_slot(void)
{
	static unsigned next;
	unsigned *v = tally__thread_slot_var();
	unsigned s = *v;
	if (tally__unlikely(!s)) {
		s = tally__fetch_add(&next, 1u) + 1u;
		*v = s;
	}
	return s - 1u;
}

/*
 * tally__thread_slot_set - give this thread slot number s from now on (for
 * tests with TALLY_PCPU_MODE 3 that want a thread on a chosen slot; taken
 * modulo the slot count where it is used).
 */
static inline void tally__thread_slot_set(unsigned s)
{
	*tally__thread_slot_var() = s + 1u;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_ARCH_H */
