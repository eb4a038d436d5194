/**
 * @file
 * tally/config.h - every tuning knob, each an `#ifndef` default.
 *
 * Define any of these before including a tally header (or on the compiler
 * command line) to override it. All translation units of one program must
 * agree on TALLY_WORD_BITS, TALLY_PCPU_MODE and TALLY_CACHELINE, since they
 * change the layout of tally's structs.
 */
#ifndef TALLY_CONFIG_H
#define TALLY_CONFIG_H

/*
 * The language: C11 or C++11 and later. Every tally header includes this
 * one first, so an older standard stops here with one clear message
 * instead of compiling (aligned_alloc undeclared before C11, a truncated
 * pointer) and crashing at run time.
 */
#if defined(__cplusplus)
#  if __cplusplus < 201103L
#    error "tally requires C11 or C++11 (or later): compile with -std=c++11 or newer"
#  endif
#elif !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L
#  error "tally requires C11 or C++11 (or later): compile with -std=c11 (or -std=gnu11) or newer"
#endif

/**
 * TALLY_WORD_BITS: width of tally_uword / tally_sword, 32 or 64.
 * Default: 64 on every host, 32-bit ones included. The kernel's counters
 * are unsigned long, 32 bits there, but a byte counter that wraps at 4 GiB
 * surprises users of a library. On a 32-bit host a 64-bit word costs a
 * cmpxchg8b loop (i386) or ldrexd/strexd (arm) per add, about twice the
 * time of a 32-bit add, and never the rseq path. Define 32 for the
 * kernel's behaviour and cheaper adds there; on a 64-bit host 32
 * reproduces 32-bit wraparound in seconds.
 */
#ifndef TALLY_WORD_BITS
#  define TALLY_WORD_BITS 64
#endif
#if TALLY_WORD_BITS != 32 && TALLY_WORD_BITS != 64
#  error "TALLY_WORD_BITS must be 32 or 64"
#endif

/**
 * TALLY_CACHELINE: the alignment and padding of the shared structures that
 * different CPUs write (a tree's group structs, its flush state), so no two
 * such share a line. Per-CPU words need none: each CPU slot has its own
 * region of the arena (tally/pcpu/arena.h), so two CPUs' words never
 * share a line. 128 covers adjacent-line prefetch on x86 and the 128-byte
 * lines of some arm64 parts.
 */
#ifndef TALLY_CACHELINE
#  define TALLY_CACHELINE 128
#endif

/**
 * TALLY_PCPU_REGION_SHIFT: log2 of the bytes each CPU slot has in one
 * chunk of the per-CPU arena (tally/pcpu/arena.h): 16, 64 KiB, holds the
 * per-CPU words of 8,192 counters. A chunk reserves (CPU slots + 1) such
 * regions of address space; only the pages a CPU writes become resident.
 * An object larger than a region gets a chunk with larger regions.
 */
#ifndef TALLY_PCPU_REGION_SHIFT
#  define TALLY_PCPU_REGION_SHIFT 16
#endif
#if TALLY_PCPU_REGION_SHIFT < 12 || TALLY_PCPU_REGION_SHIFT > 26
#  error "TALLY_PCPU_REGION_SHIFT must be 12..26"
#endif

/**
 * TALLY_RSEQ_CLEAR_CS: whether the rseq fast path sets the thread's
 * rseq_cs pointer back to 0 after each critical section (tally/rseq.h).
 *   1  clear it: no thread keeps a pointer to a section descriptor, so
 *      the code that holds it may be unloaded (dlclose()) at any time
 *   0  leave it set, as librseq does (one store less per update); the
 *      kernel clears it at the thread's next preemption or signal. Only
 *      where the descriptors can never be unmapped: the executable
 * Default: 1 when compiling position-independent code that is not an
 * executable (__PIC__ without __PIE__: a shared object, which dlclose()
 * may unmap), else 0.
 */
#ifndef TALLY_RSEQ_CLEAR_CS
#  if defined(__PIC__) && !defined(__PIE__)
#    define TALLY_RSEQ_CLEAR_CS 1
#  else
#    define TALLY_RSEQ_CLEAR_CS 0
#  endif
#endif

/**
 * TALLY_PCPU_MODE: how an update reaches the current CPU's slot.
 *   0  auto: rseq critical section where the platform has one and glibc
 *      registered rseq, else a relaxed atomic RMW (default)
 *   1  always the relaxed atomic RMW on the current CPU's slot
 *   2  rseq only where available, as 0, but a build that lacks rseq support
 *      is a compile error (for tests that must exercise the rseq path)
 *   3  thread slots: every thread is its own slot (numbered round-robin
 *      from 0 in the order threads first update, modulo the slot count),
 *      updated with relaxed atomic RMWs. With TALLY_CPU_SLOTS = N and N
 *      threads, the threads act as N distinct CPUs: how tests exercise
 *      many-CPU behaviour (a 256-slot counter, vector or tree) exactly on a
 *      small machine, under ThreadSanitizer too. Not for production: a
 *      thread keeps its slot wherever it runs.
 */
#ifndef TALLY_PCPU_MODE
#  define TALLY_PCPU_MODE 0
#endif
#if TALLY_PCPU_MODE < 0 || TALLY_PCPU_MODE > 3
#  error "TALLY_PCPU_MODE must be 0, 1, 2 or 3"
#endif

/**
 * TALLY_CPU_SLOTS: how many CPU slots every per-CPU structure is sized
 * for (tally_cpu_slots() tells at run time).
 *   0  every CPU id the machine may ever use, online or not (default)
 *   N  N slots whatever the machine has (1..65536): for tests and for
 *      projections of memory and error bounds at other CPU counts. Sums
 *      stay exact with any N: an update from a CPU numbered N or more goes
 *      to a slot it shares (an atomic RMW), never to a missing one.
 * Every translation unit of a program must agree on it.
 */
#ifndef TALLY_CPU_SLOTS
#  define TALLY_CPU_SLOTS 0
#endif
#if TALLY_CPU_SLOTS < 0 || TALLY_CPU_SLOTS > 65536
#  error "TALLY_CPU_SLOTS must be 0 (detect) or 1..65536"
#endif

/**
 * TALLY_WRAP_EARLY: like the kernel's INITIAL_JIFFIES. When 1, monotonic
 * per-CPU words start just below the unsigned wrap point, so a consumer
 * that uses raw monotonic values instead of tally_delta() breaks at once.
 * Exact, hierarchical and clamped values are unaffected: the start offset
 * is subtracted by every reader that is not documented as raw.
 */
#ifndef TALLY_WRAP_EARLY
#  define TALLY_WRAP_EARLY 0
#endif
/** Distance below the wrap point where wrap-early words start. */
#ifndef TALLY_WRAP_EARLY_OFFSET
#  define TALLY_WRAP_EARLY_OFFSET 4096u
#endif

/** TALLY_DEBUG: assert on bad input as well as returning -EINVAL. */
#ifndef TALLY_DEBUG
#  define TALLY_DEBUG 0
#endif

/** tally_counter: minimum default batch (percpu_counter_batch: max(32, 2n)). */
#ifndef TALLY_COUNTER_MIN_BATCH
#  define TALLY_COUNTER_MIN_BATCH 32
#endif

/** tally_vec: ceiling of the default fold threshold (vmstat's 125). */
#ifndef TALLY_VEC_MAX_THRESHOLD
#  define TALLY_VEC_MAX_THRESHOLD 125
#endif

/** rstat: per-CPU update batch before a group's flush count moves
 * (MEMCG_CHARGE_BATCH). */
#ifndef TALLY_RSTAT_BATCH
#  define TALLY_RSTAT_BATCH 64
#endif

/** rstat: default periodic flush period in nanoseconds (2 s, FLUSH_TIME). */
#ifndef TALLY_RSTAT_PERIOD_NS
#  define TALLY_RSTAT_PERIOD_NS 2000000000ull
#endif

/**
 * TALLY_RSTAT_MEMBARRIER: how tally_group_mod() orders its word add before
 * its dirty-bit check against a concurrent flush, where the update cannot
 * use the mark half of the dirty record (that half, written with plain
 * 32-bit stores after an rseq add on x86_64, needs no barrier): the atomic
 * path, other architectures.
 *   0  a full fence in such updates, paired with one after every drain
 *      pass (default: flushes stay cheap, which readers that flush need)
 *   1  asymmetric: where the kernel has
 *      membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), the update has only a
 *      compiler barrier and a flush whose drain cleared a shared-half bit
 *      calls membarrier() (microseconds: an IPI to every CPU running a
 *      thread of the process); elsewhere, as 0. For update-heavy trees
 *      that rarely flush, on platforms without the mark half.
 * Decided per tree when it is created; translation units may differ.
 */
#ifndef TALLY_RSTAT_MEMBARRIER
#  define TALLY_RSTAT_MEMBARRIER 0
#endif

/** Fallback number of CPU slots when the OS cannot tell. */
#ifndef TALLY_FALLBACK_NCPUS
#  define TALLY_FALLBACK_NCPUS 64
#endif

/**@{*/
/** ---- the liburcu flavor of rstat.h ------------------------------------
 * TALLY_URCU_HEADER: the flavor header rstat.h includes (liburcu 0.13
 * allows one flavor header per translation unit); TALLY_URCU_DEFAULT_FLAVOR:
 * the flavor a tree uses when tally_tree_opts.flavor is NULL. Define both
 * (e.g. <urcu/urcu-qsbr.h>, urcu_qsbr_flavor) and link that flavor.
 */
/** TALLY_URCU_BP: 1 picks liburcu's bulletproof flavor, which registers
 * every thread by itself: TALLY_URCU_HEADER <urcu/urcu-bp.h> and
 * TALLY_URCU_DEFAULT_FLAVOR urcu_bp_flavor (link liburcu-bp; the CMake
 * target tally::rstat_bp and pkg-config tally-rstat-bp define it). */
#ifndef TALLY_URCU_BP
#  define TALLY_URCU_BP 0
#endif
#if TALLY_URCU_BP && !defined(TALLY_URCU_HEADER)
#  define TALLY_URCU_HEADER <urcu/urcu-bp.h>
#endif
#if TALLY_URCU_BP && !defined(TALLY_URCU_DEFAULT_FLAVOR)
#  define TALLY_URCU_DEFAULT_FLAVOR urcu_bp_flavor
#endif
#ifndef TALLY_URCU_HEADER
#  define TALLY_URCU_HEADER <urcu/urcu-memb.h>
#endif
#ifndef TALLY_URCU_DEFAULT_FLAVOR
#  define TALLY_URCU_DEFAULT_FLAVOR urcu_memb_flavor
#endif
/**@}*/

/** ---- tally_inflight (inflight.h) -------------------------------------
 * TALLY_INFLIGHT_WAIT_NS: the default bound of the throttle's one wait,
 * reclaim_throttle()'s HZ/50 at HZ=1000 (20 ms); tally_inflight_init's
 * wait_ns overrides it per object.
 */
#ifndef TALLY_INFLIGHT_WAIT_NS
#  define TALLY_INFLIGHT_WAIT_NS 20000000ull
#endif

/** ---- tally_counter's default batch (counter.h) ------------------------
 * TALLY_COUNTER_BATCH_FLOOR: the smallest default batch, a power of two.
 * The default batch is max(TALLY_COUNTER_MIN_BATCH, 2 * CPU slots, this),
 * rounded up to a power of two. A fold moves the shared count's cache line
 * between CPUs; at the kernel's 32 on a 2-CPU machine that transfer cost
 * as much as the adds between folds, so the floor keeps folds rare on
 * small machines (read()'s bound is 2 * batch * (CPU slots + 1)).
 */
#ifndef TALLY_COUNTER_BATCH_FLOOR
#  define TALLY_COUNTER_BATCH_FLOOR 1024
#endif

/**@{*/
/** ---- code size: inlining of the update calls (arch.h, TALLY__API) ------
 * The update calls: tally_counter_add, tally_vec_mod, tally_vec_inc,
 * tally_vec_dec, tally_vec_mod_multi, tally_group_mod. (Readers and slow
 * paths are not affected: readers are a few loads, slow paths are out of
 * line already.)
 * TALLY_INLINE: 1 (default) forces the update calls inline at every call
 * site (fastest; each site carries its own copy, about 300-900 bytes with
 * its rseq descriptor); 0 gives each translation unit one static
 * out-of-line copy of each call it uses (a call per update, about 1-2 ns).
 * TALLY_EXTERN: 1 makes the headers declare those calls only; exactly one
 * translation unit of the program defines TALLY_IMPLEMENTATION before it
 * includes the headers (all that the program uses: rstat.h's
 * tally_group_mod is defined only where rstat.h is included) and holds
 * the definitions (stb style). Every translation unit must then agree on
 * TALLY_EXTERN. TALLY_EXTERN=1 takes precedence: with it, TALLY_INLINE
 * changes nothing.
 */
#ifndef TALLY_INLINE
#  define TALLY_INLINE 1
#endif
#ifndef TALLY_EXTERN
#  define TALLY_EXTERN 0
#endif
/**@}*/

#endif /* TALLY_CONFIG_H */
