/**
 * @file
 * tally/ref.h - tally_ref: a reference count whose get and put are per-CPU
 * adds while the object is live, after the kernel's percpu_ref
 * (lib/percpu-refcount.c). For objects that many threads take and drop
 * references to all the time and that die once (a tenant, a connection
 * pool, a cache shard): no shared cache line is written on the hot path,
 * and no read-side section is held between get and put.
 *
 *   struct tally_ref r;
 *   tally_ref_init(&r, release);        // count 1: the owner's reference
 *   if (tally_ref_tryget_live(&r)) {    // a lookup: fails once killed
 *           ... use the object ...
 *           tally_ref_put(&r);
 *   }
 *   tally_ref_kill(&r);                 // the owner: no new lookups; drops
 *                                       // its reference; release() runs
 *                                       // when the last put lands
 *
 * Modes. Live, the count is the sum of a word per CPU slot (get adds 1 on
 * the current CPU's word, put subtracts 1 on its own CPU's, wherever the
 * get was) and of an atomic count that holds the adds of threads with no
 * rseq registration, plus a bias of 2^(W-1) so that it never reads 0 while
 * live. tally_ref_kill() makes the ref atomic: it marks it dead, waits
 * until no get or put can still add to a CPU's word (below), adds the
 * words' sum, less the bias and the owner's reference, to the atomic
 * count, and from then on every get and put is an atomic RMW on that
 * count, and the one that brings it to 0 runs release() (the kernel's
 * percpu_ref_kill(): the switch to atomic mode after an RCU grace period,
 * then the put of the initial reference).
 *
 * Why no add is lost at the switch. On x86_64 with rseq (the fast path) a
 * get or put is one restartable section: it loads the CPU number, checks
 * it against the ref's written bound (tally/pcpu.h), loads the mode,
 * leaves if it is not live, and adds to the CPU's word, the commit. The
 * kill stores the mode (seq_cst), then calls
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ): it returns only once
 * every thread of the process that was inside a restartable section has
 * had it aborted (a full barrier on each CPU running one, then the abort),
 * and a thread that was not running had its section aborted when it was
 * preempted. So a section that loaded the live mode either committed
 * before the call returned (the kill's loads of the words, after it, see
 * its add) or restarts and loads the dead mode. That is the grace period;
 * no reader registers anywhere for it. tests/plain/ref_window.c kills the
 * ref from a signal taken inside the section (between the mode check and
 * the commit) and checks the count to the last unit; its twin without
 * the mode check in the section (ref_window_nocheck) must fail.
 *
 * Where that is not available the ref is atomic from the start (every
 * get and put an atomic RMW on the shared count, correct and slower):
 * other architectures, TALLY_PCPU_MODE 1 and 3, a kernel without
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ (Linux 5.10) or a sandbox that
 * refuses it (tally_ref_is_percpu() says which). Threads with no rseq
 * registration use the atomic count in either mode.
 *
 * Cost: live, get and put are each the counter add's section plus one
 * load and compare (bench/bench_ref.c); the kill is one system call and a
 * sum over the slots the ref was written on; memory: one word per CPU
 * slot that took a get or put (demand-zero, tally/pcpu.h) plus the struct.
 *
 * Contract. tally_ref_get() and tally_ref_put() need a reference held by
 * the caller (the put drops it); tally_ref_tryget_live() needs only the
 * object's memory to be valid (a lookup structure that keeps it until
 * release(), or the caller's own knowledge); a lookup racing with the kill
 * may still succeed (the kill had not begun when it looked), and the
 * reference it took then holds the object as any other. tally_ref_kill()
 * once, by the owner, who gives up its reference with it. release(r) runs
 * once, on the thread whose put (or kill) brought the count to 0; once no
 * thread can call tally_ref_* on r any more (it left the lookup structure,
 * and lookups that found it before are done), tally_ref_exit(r) frees its
 * words and r's memory may go (a release() that runs when nothing can
 * look r up any more may do both). A put with no reference held is
 * a bug: in atomic mode a count below 0 is caught by TALLY_DEBUG
 * (assert), else it is silent, as in the kernel.
 */
#ifndef TALLY_REF_H
#define TALLY_REF_H

#include <tally/pcpu.h>

#include <stdio.h>
#include <stdlib.h>
#if TALLY__HAVE_RSEQ
#  include <sys/syscall.h>
#  include <linux/membarrier.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** struct tally_ref - a reference count; members are private (tally_ref_* calls). */
struct tally_ref {
	/* private: use the tally_ref_* calls */
	struct tally__pcpu tally__pcpu; /* one word per CPU slot */
	unsigned tally__mode;           /* TALLY__REF_ATOMIC, TALLY__REF_DEAD */
	tally_uword tally__count;       /* the atomic count (+ the bias, live) */
	void (*tally__release)(struct tally_ref *r);
};

/* Mode bits: get and put take the atomic count; tryget_live fails. */
#define TALLY__REF_ATOMIC 1u
#define TALLY__REF_DEAD 2u
/* The atomic count's bias while the words count too. */
#define TALLY__REF_BIAS ((tally_uword)1 << (TALLY_WORD_BITS - 1))

/*
 * Test hook: an assembler string placed in the section between the load
 * and check of the mode and the commit (tests/plain/ref_window.c traps
 * there); TALLY__REF_NO_MODE_CHECK leaves the check out (the defect that
 * test must catch). Neither is set by default.
 */
#ifndef TALLY__REF_HOOK
#  define TALLY__REF_HOOK ""
#endif

#if TALLY__HAVE_RSEQ
/* membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) usable: 1, not: -1,
 * not asked yet: 0 (per unit; registering again is harmless). */
static int tally__ref_fence_state;

/* Register the process for the rseq fence; 1 if it can use it. */
static inline int tally__ref_fence_ok(void)
{
	int st = __atomic_load_n(&tally__ref_fence_state, __ATOMIC_RELAXED);
	if (!st) {
		long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
		st = q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) &&
				     syscall(__NR_membarrier,
					     MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0) == 0
			     ? 1
			     : -1;
		__atomic_store_n(&tally__ref_fence_state, st, __ATOMIC_RELAXED);
	}
	return st > 0;
}

/* Abort every restartable section of the process's other threads. */
static inline void tally__ref_fence(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0) == 0)
		return;
	/* Registration is per address space: lost only by an exec, which
	 * this process would not have survived. Register and try again. */
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0) ||
	    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0)) {
		/* The words can no longer be summed safely: nothing correct
		 * is left to do. */
		(void)fputs("tally_ref_kill: membarrier(PRIVATE_EXPEDITED_RSEQ) failed\n", stderr);
		abort();
	}
}

/*
 * The section: on the current CPU c, if c is below the ref's written
 * bound and the ref is live, word[c] += d, the commit. Returns 1 if done,
 * 0 to take the slow path (no registration, c not yet in the bound or past
 * the slots, or the ref not live). An abort anywhere restarts it: the
 * commit is its only store that counts.
 */
TALLY__INLINE int tally__ref_section(struct tally_ref *r, tally_uword d)
{
	const struct tally__pcpu *p = &r->tally__pcpu;
	uintptr_t a;
	/* relaxed: it only grows; a stale one only sends the thread out
	 * to raise it and back */
	unsigned lim = __atomic_load_n(&p->lim, __ATOMIC_RELAXED);
	__asm__ __volatile__ goto(
		".pushsection __tally_rseq_cs, \"aw?\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"
		".quad 1f, 2f - 1f, 4f\n\t"
		".popsection\n\t"
		"0:\n\t"
		"leaq 3b(%%rip), %q[a]\n\t"
		"movq %q[a], %%fs:%c[cs](%[rs])\n\t" /* arm */
		"1:\n\t"
		"movl %%fs:%c[id](%[rs]), %k[a]\n\t"
		TALLY__RSEQ_LIM_CHECK("%k[a]", "5f")
#ifndef TALLY__REF_NO_MODE_CHECK
		"cmpl $0, %[mode]\n\t" /* dying or atomic: leave */
		"jne 5f\n\t"
#endif
		"shlq %%cl, %q[a]\n\t"
		"addq %[base], %q[a]\n\t"
		TALLY__REF_HOOK
		"add %[d], (%q[a])\n\t" /* the commit */
		"2:\n\t" TALLY__RSEQ_CLEAR
		".subsection 1\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"4:\n\t"
		"jmp 0b\n\t"
		"5:\n\t" TALLY__RSEQ_CLEAR
		"jmp %l[slow]\n\t"
		".previous\n\t"
		: [a] "=&r"(a)
		: [rs] "r"(__rseq_offset), [cs] "i"(offsetof(struct rseq, rseq_cs)),
		  [id] "i"(offsetof(struct rseq, cpu_id)), [lim] TALLY__RSEQ_RM(lim),
		  [mode] "m"(r->tally__mode), [shift] "c"(p->shift), [base] TALLY__RSEQ_RM(p->base),
		  [d] "r"(d), [sig] "i"(RSEQ_SIG)
		: "memory", "cc"
		: slow);
	return 1;
slow:
	return 0;
}
#endif /* TALLY__HAVE_RSEQ */

/* Add d to the atomic count; the add that brings it to 0 releases. */
static inline void tally__ref_atomic(struct tally_ref *r, tally_uword d)
{
	/* acq_rel: every use before a put comes before release(), which
	 * runs after the last one */
	tally_uword nv = __atomic_add_fetch(&r->tally__count, d, __ATOMIC_ACQ_REL);
	if (tally__bad(nv == (tally_uword)-1 &&
		       (__atomic_load_n(&r->tally__mode, __ATOMIC_RELAXED) & TALLY__REF_ATOMIC)))
		return; /* a put with no reference held (TALLY_DEBUG asserts) */
	if (nv == 0)
		r->tally__release(r);
}

/*
 * Everything the section does not: d on the current CPU's word after
 * raising the written bound, or on the atomic count (no registration, a
 * CPU past the slots, the ref atomic). live: fail (return 0) when dead.
 */
TALLY__COLD int tally__ref_slow(struct tally_ref *r, tally_uword d, int live)
{
	for (;;) {
		unsigned m = __atomic_load_n(&r->tally__mode, __ATOMIC_ACQUIRE);
		if (live && (m & TALLY__REF_DEAD))
			return 0;
#if TALLY__HAVE_RSEQ
		if (!m) {
			int c = tally__rseq_cpu();
			if (c >= 0 && (unsigned)c < r->tally__pcpu.nr) {
				/* a CPU the bound does not cover yet */
				tally__pcpu_raise(&r->tally__pcpu, (unsigned)c);
				if (tally__ref_section(r, d))
					return 1;
				continue;
			}
		}
#endif
		/* Live, this is the atomic part of the count (the bias
		 * keeps it from 0); atomic, the whole count. */
		if (live) {
			/* A lookup: the kill may have begun since the mode
			 * was loaded, and its last put may have brought the
			 * count to 0 (release() ran or runs): take a
			 * reference only from a count above 0 (the kernel's
			 * atomic_long_inc_not_zero()). */
			tally_uword c = __atomic_load_n(&r->tally__count, __ATOMIC_RELAXED);
			do
				if (!c)
					return 0;
			while (!__atomic_compare_exchange_n(&r->tally__count, &c, c + 1u, 1,
							    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED));
			return 1;
		}
		tally__ref_atomic(r, d);
		return 1;
	}
}

TALLY__INLINE int tally__ref_add(struct tally_ref *r, tally_uword d, int live)
{
#if TALLY__HAVE_RSEQ
#  if TALLY__TSAN
	/* An atomic ref (tally__ref_init()) never enters the section, whose
	 * loads of the words' place ThreadSanitizer would pair with the
	 * free that the last atomic put orders after them. */
	if (!__atomic_load_n(&r->tally__mode, __ATOMIC_RELAXED))
#  endif
		if (tally__likely(tally__ref_section(r, d)))
			return 1;
#endif
	return tally__ref_slow(r, d, live);
}

/* tally_ref_init(); percpu 0: atomic from the start, whatever the path
 * (rstat.h's groups under ThreadSanitizer, which cannot see the order the
 * kill's membarrier() gives the per-CPU puts before a free). */
static inline int tally__ref_init(struct tally_ref *r, void (*release)(struct tally_ref *r),
				  int percpu)
{
	struct tally_ref n;
	if (tally__bad(!r || !release))
		return -EINVAL;
	memset(&n, 0, sizeof(n));
	n.tally__release = release;
	n.tally__mode = TALLY__REF_ATOMIC;
	n.tally__count = 1;
	(void)percpu;
#if TALLY__HAVE_RSEQ
	if (percpu && tally__rseq_registered() && tally__ref_fence_ok()) {
		if (tally__pcpu_alloc_tracked(&n.tally__pcpu, sizeof(tally_uword),
					      TALLY__ARENA_HOT))
			return -ENOMEM;
		n.tally__mode = 0;
		n.tally__count = TALLY__REF_BIAS + 1u;
	}
#endif
	*r = n;
	return 0;
}

/**
 * tally_ref_init - set r up live with a count of 1 (the caller's
 * reference); release(r) runs when the count comes to 0 after
 * tally_ref_kill().
 * Returns 0, -EINVAL (NULL r or release) or -ENOMEM (r untouched).
 * Not concurrent with other calls on r.
 */
static inline int tally_ref_init(struct tally_ref *r, void (*release)(struct tally_ref *r))
{
	return tally__ref_init(r, release, 1);
}

/** tally_ref_is_percpu - 1 while r's gets and puts are per-CPU adds (live,
 * on the rseq path), else 0. */
static inline int tally_ref_is_percpu(const struct tally_ref *r)
{
	return __atomic_load_n(&r->tally__mode, __ATOMIC_RELAXED) == 0;
}

/** tally_ref_is_dying - 1 once tally_ref_kill() has begun on r. */
static inline int tally_ref_is_dying(const struct tally_ref *r)
{
	return (__atomic_load_n(&r->tally__mode, __ATOMIC_RELAXED) & TALLY__REF_DEAD) != 0;
}

/**
 * tally_ref_get - take another reference; the caller holds one.
 * Wait-free while live (one restartable section on the current CPU's
 * word), else one atomic RMW.
 */
static inline void tally_ref_get(struct tally_ref *r)
{
	(void)tally__ref_add(r, 1, 0);
}

/**
 * tally_ref_tryget_live - take a reference unless r was killed: 1 if
 * taken, 0 if tally_ref_kill() had begun (the kernel's
 * percpu_ref_tryget_live()). r's memory must be valid (see the contract).
 * Wait-free while live, else one load.
 */
static inline int tally_ref_tryget_live(struct tally_ref *r)
{
	return tally__ref_add(r, 1, 1);
}

/**
 * tally_ref_put - drop a reference the caller holds; after
 * tally_ref_kill(), the put that brings the count to 0 runs release(r).
 * Wait-free while live, else one atomic RMW (and release()).
 */
static inline void tally_ref_put(struct tally_ref *r)
{
	(void)tally__ref_add(r, (tally_uword)-1, 0);
}

/**
 * tally_ref_kill - no tally_ref_tryget_live() on r succeeds once this
 * begins; drop the owner's reference; switch r to atomic mode (the sum of
 * the CPUs' words into the atomic count, after membarrier(): see the top
 * of this file). release(r) runs here if no other reference is held,
 * else at the last put. Once, by the owner (a second kill: -EINVAL,
 * TALLY_DEBUG asserts); returns 0.
 * Blocking: one system call (microseconds: it interrupts every CPU
 * running a thread of the process), none if no get or put ever took a
 * CPU's word; O(CPU slots the ref was written on).
 */
static inline int tally_ref_kill(struct tally_ref *r)
{
	unsigned m;
	tally_uword sum = 0, drop = 1;
	if (tally__bad(!r))
		return -EINVAL;
	m = __atomic_fetch_or(&r->tally__mode, TALLY__REF_ATOMIC | TALLY__REF_DEAD,
			      __ATOMIC_SEQ_CST);
	if (tally__bad(m & TALLY__REF_DEAD))
		return -EINVAL;
#if TALLY__HAVE_RSEQ
	if (!(m & TALLY__REF_ATOMIC)) {
		const struct tally__pcpu *p = &r->tally__pcpu;
		unsigned s, lim = tally__pcpu_lim(p);
		/* A ref no CPU's word took a get or put on needs no fence:
		 * a section runs only below lim, and a get that finds it 0
		 * raises it (a locked cmpxchg, x86_64 being the one rseq
		 * path) before its section loads the mode, while the kill
		 * set the mode (a locked RMW) before it loaded lim: one of
		 * the two sees the other's store, so a get either raised lim
		 * before this load (and the fence runs) or loads the dead
		 * mode and takes the atomic count. */
		if (lim)
			tally__ref_fence();
		lim = tally__pcpu_lim(p);
		for (s = 0; s < lim; s++)
			sum += __atomic_load_n((const tally_uword *)tally__pcpu_at(p, s, 0),
					       __ATOMIC_RELAXED);
		drop += TALLY__REF_BIAS;
	}
#endif
	tally__ref_atomic(r, sum - drop);
	return 0;
}

/**
 * tally_ref_exit - free r's per-CPU words: after release(r) ran, once no
 * thread can call tally_ref_* on r any more (see the top of this file), or
 * on a ref never shared. NULL is a no-op. Not concurrent with any other
 * call on r.
 */
static inline void tally_ref_exit(struct tally_ref *r)
{
	if (!r)
		return;
	tally__pcpu_free(&r->tally__pcpu);
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_REF_H */
