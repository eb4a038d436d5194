/*
 * tally/rstat.h - tally_tree / tally_group: hierarchical statistics with
 * subtree flushing, per-group flush thresholds, ratelimited and periodic
 * flushing (kernel cgroup rstat and memcg stats, seed 003).
 *
 *   struct tally_tree *t = tally_tree_create(NR_ITEMS);   // NULL, errno
 *   struct tally_group *a = tally_group_create(tally_tree_root(t));
 *   struct tally_group *b = tally_group_create(a);
 *   tally_group_mod(b, ITEM, +3);          // any thread: no lock, no syscall
 *   tally_group_flush(a);                  // a's subtree, if it needs it
 *   tally_group_read(a, ITEM);             // hierarchical, O(1)
 *   tally_group_read_local(b, ITEM);       // b alone
 *   tally_tree_start_flusher(t, 0);        // root flush every 2 s
 *   tally_group_destroy(b);                // deltas go to a; freed after RCU
 *   tally_tree_destroy(t);
 *
 * Model. Every group has N items. Per group and CPU slot: a never-reset
 * word per item (the updates) and a prev snapshot per item (what flushes
 * consumed). Per group: state (hierarchical: the group and everything
 * below it), local (the group alone) and pending (deltas handed up by
 * flushed or destroyed children, not yet in state). Readers read state and
 * local: the values as of the last flush that covered the group.
 *
 * Update (tally_group_mod): add to this CPU's word; then, ordered after
 * the add (see Memory ordering), if the group is not on this CPU's
 * lockless "updated" list, push it there (one winner by CAS, as
 * css_rstat_updated()); then count |delta| toward the flush thresholds of
 * the group and its ancestors (memcg_rstat_updated()).
 *
 * Flush of the subtree at g, under the tree's flush lock: drain every CPU
 * slot's lockless list into the slot's updated tree (link each queued
 * group and its ancestors under their parents, stopping at the first one
 * already linked; the group is marked off the list), then the flusher's
 * barrier; per slot, detach g's part of the updated tree and visit it
 * children before parents; then drain every slot again (and the barrier)
 * and visit what came meanwhile.
 * For each visited group x and item i, with the CPU word v:
 *     delta = pending[i]; pending[i] = 0;
 *     if (v != prev[i]) { d = v - prev[i]; delta += d; prev[i] = v; local[i] += d; }
 *     if (delta) { state[i] += delta; parent->pending[i] += delta; }
 * Groups outside g's subtree stay queued for a later flush. All arithmetic
 * is modular in 2^TALLY_WORD_BITS, so totals are exact across wraps.
 *
 * Thresholds (seed 003, "make stats flushing threshold per-memcg"): per
 * group and CPU slot a stats_updates count. An update walks the group and
 * its ancestors, stops at the first that already needs a flush, else adds
 * |delta| to that group's count for this CPU and, once the count reaches
 * the batch (64, MEMCG_CHARGE_BATCH), moves it into the group's atomic.
 * The walk also keeps "a flushable group's ancestors are flushable", which
 * the early stop relies on and per-CPU batching alone does not keep (see
 * tally__rstat_count()).
 * needs_flush(g) = atomic > batch * ncpus (ncpus: online CPUs when the
 * tree was created). A flush zeroes both counts of every group it visits:
 * the per-CPU ones on every CPU (a new count epoch), and the atomic by
 * subtracting what it held when the flush began, once the flush is done.
 * So whoever finds a count lowered finds the flushed values published,
 * and a count the flush takes belongs to updates it reflects (the kernel
 * zeroes during the flush, and can zero the count of an update it missed
 * or has not published yet). Hence: if an update by this thread finds g
 * below its threshold and takes it past (it is counted in g, or marks g
 * flushable), tally_group_flush(g) afterwards returns with that update and
 * every earlier one of this thread reflected, whether it flushed or
 * another flush got there first. (An update that finds g already
 * flushable is not counted in g; only a forced flush is sure to show it.)
 *
 * Flush calls:
 *   tally_group_flush(g)              g's subtree, only if needs_flush(g)
 *   tally_group_flush_force(g)        g's subtree, always
 *   tally_group_flush_ratelimited(g)  tally_group_flush(g), only if the root
 *                                     was last flushed more than 2 periods
 *                                     ago (the periodic flusher is a full
 *                                     period late)
 *   tally_tree_flush_periodic(t)      a forced root flush: call it every
 *                                     period from an event loop, or run
 *   tally_tree_start_flusher(t, ns)   a thread that does it
 * Any flush of the root records the time (the injectable clock).
 *
 * ---- RCU: which threads must do what (default flavor: urcu-memb) -------
 *
 * Groups are freed through liburcu: tally_group_destroy() unlinks the
 * group, hands everything it counted to its parent, removes it from every
 * CPU's updated list, and frees it with call_rcu() after a grace period. A
 * tree takes its flavor as a `const struct rcu_flavor_struct *` (see
 * tally_tree_opts); the default is urcu-memb (`urcu_memb_flavor`, from
 * liburcu-memb: pkg-config liburcu-memb, which the tally::tally CMake
 * target links). With the default flavor:
 *   - Threads that only update, flush or read groups they hold (their own,
 *     or ones no other thread can destroy meanwhile) need nothing: no
 *     registration, no RCU calls. The periodic flusher thread needs none.
 *   - A thread that calls tally_group_destroy() must be registered with
 *     the flavor (urcu_memb_register_thread(), or flavor->register_thread())
 *     because call_rcu() requires it; for urcu-qsbr it must also be online.
 *   - A thread that calls tally_group_for_each_child(), or that reads,
 *     updates or creates under a group that another thread may destroy
 *     meanwhile, must be registered and do it inside
 *     tally_tree_read_lock()/tally_tree_read_unlock() (the flavor's read
 *     lock, annotated for ThreadSanitizer). Inside such a section a
 *     destroyed group's memory stays valid and every call on it fails
 *     cleanly (-EINVAL, NULL with errno EINVAL, reads of its last values).
 *   - tally_tree_destroy() waits for the grace periods of pending frees:
 *     call it outside read-side sections and not from a call_rcu callback
 *     (with urcu-qsbr: from an offline or unregistered thread).
 *   - Unregister (urcu_memb_unregister_thread()) before a registered thread
 *     exits. urcu-memb uses the membarrier() system call where the kernel
 *     has it, and falls back to memory barriers in the read lock otherwise.
 * liburcu 0.13 lets one translation unit include one flavor header. This
 * header includes TALLY_URCU_HEADER (default <urcu/urcu-memb.h>); to use
 * another flavor in the same file, define TALLY_URCU_HEADER (for example
 * <urcu/urcu-qsbr.h>) and TALLY_URCU_DEFAULT_FLAVOR (urcu_qsbr_flavor)
 * before including tally, and link that flavor's library.
 *
 * ---- Concurrency contract ------------------------------------------------
 *   call                          beside                    progress
 *   tally_group_mod               everything but destroy    wait-free but one
 *                                 of that group and           lock-free push
 *                                 tally_tree_destroy
 *   read, read_positive,          everything but            wait-free
 *   read_monotonic, read_local,   tally_tree_destroy
 *   needs_flush
 *   flush, flush_force,           everything but            blocking (the
 *   flush_ratelimited,            tally_tree_destroy        tree's flush lock;
 *   flush_periodic                                          membarrier())
 *   group_create, group_destroy   everything but mod of     blocking (the
 *                                 the destroyed group and   flush lock);
 *                                 tally_tree_destroy        destroy defers free
 *   tree_create, tree_destroy     nothing on that tree      blocking
 * Memory ordering: a flush that starts after tally_group_mod() returned
 * (happens-after it) reflects that update. Readers see the values of the
 * last completed flush of the group (relaxed loads: a reader racing with a
 * flush may see some items of it before others). A flush serializes with
 * create/destroy and other flushes on the same tree.
 * An update racing with a flush is reflected by that flush or leaves its
 * group queued for the next one, never neither: the update's word add and
 * its on-list check, against the drain's "off list" marks and the flush's
 * word loads, are a store-buffering pair, which needs a barrier on each
 * side. Where the kernel has membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
 * (and TALLY_RSTAT_MEMBARRIER is 1; the default is 0), the update has only a
 * compiler barrier and a flush calls membarrier() between a drain that
 * found queued groups and its next load of a word (the urcu-memb scheme;
 * at most two per flush, one per drain pass): updates stay free of fences
 * and system calls, flushes pay the IPIs (microseconds each).
 * Otherwise (no membarrier, a failed registration, or
 * TALLY_RSTAT_MEMBARRIER 0) the update has a full fence, paired with one
 * after each drain pass. A tree takes one of the two when it is created
 * (the first creation registers the process with membarrier) and keeps
 * it; see tally__rstat_drain_all().
 *
 * Memory per group: tally_tree_group_bytes(t) = a fixed part (the struct
 * plus 3 words per item for state, local, pending) plus, per CPU slot
 * (every possible CPU and one shared slot), a chunk of 48 bytes + 2 words
 * per item (the word and its prev) rounded up to TALLY_CACHELINE.
 */
#ifndef TALLY_RSTAT_H
#define TALLY_RSTAT_H

#include <tally/monotonic.h>
#include <tally/pcpu.h>

#include <pthread.h>
#include <time.h>
#if TALLY__LINUX
#  include <sys/syscall.h>
#endif

/* The liburcu flavor header this file includes, and the flavor a tree uses
 * when tally_tree_opts.flavor is NULL. One flavor header per translation
 * unit (a liburcu 0.13 limit). */
#ifndef TALLY_URCU_HEADER
#  define TALLY_URCU_HEADER <urcu/urcu-memb.h>
#endif
#ifndef TALLY_URCU_DEFAULT_FLAVOR
#  define TALLY_URCU_DEFAULT_FLAVOR urcu_memb_flavor
#endif
#include TALLY_URCU_HEADER

#if TALLY__TSAN
#  include <sanitizer/tsan_interface.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Strict ISO C (-std=c11) hides glibc's POSIX clock calls; the ABI is the
 * same either way (like sched_getcpu in arch.h). */
#if defined(__GLIBC__) && !defined(__USE_POSIX199309)
extern int clock_gettime(__clockid_t clock_id, struct timespec *tp);
#  define TALLY__CLOCK_MONOTONIC 1 /* CLOCK_MONOTONIC's value in glibc */
#elif defined(CLOCK_MONOTONIC)
#  define TALLY__CLOCK_MONOTONIC CLOCK_MONOTONIC
#endif
#if defined(__GLIBC__) && !defined(__USE_XOPEN2K) && defined(TALLY__CLOCK_MONOTONIC)
extern int pthread_condattr_setclock(pthread_condattr_t *attr, __clockid_t clock_id);
#endif

/* membarrier(2), through syscall(): glibc 2.36 has no wrapper. The command
 * numbers are the kernel's ABI (linux/membarrier.h). Compiled in wherever
 * the platform has it, whatever TALLY_RSTAT_MEMBARRIER says: a flush must
 * honour a tree that another translation unit created with it. */
#if TALLY__LINUX && defined(__NR_membarrier)
#  define TALLY__RSTAT_MEMB 1
#  define TALLY__MEMB_CMD_QUERY 0
#  define TALLY__MEMB_CMD_PRIVATE_EXPEDITED (1 << 3)
#  define TALLY__MEMB_CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)
/* Strict ISO C hides syscall(); compatible redeclaration (C only: C++
 * compilers define _GNU_SOURCE, and C++ would object to the exception
 * specification). */
#  if !defined(__cplusplus) && (!defined(__GLIBC__) || !defined(__USE_MISC))
extern long syscall(long number, ...);
#  endif
#else
#  define TALLY__RSTAT_MEMB 0
#endif

/* Largest item count and stats_updates batch a tree accepts. */
#define TALLY_RSTAT_ITEMS_MAX (1u << 16)
#define TALLY_RSTAT_BATCH_MAX (1u << 20)
/* Largest period: 2^62 ns (146 years), so 2 periods never overflow. */
#define TALLY_RSTAT_PERIOD_MAX (1ull << 62)

/* ThreadSanitizer does not see liburcu's grace periods: a reader releases
 * the tree's token before its read unlock, a deferred free acquires it
 * (TOOLCHAIN.md's recipe). No-ops otherwise. */
#if TALLY__TSAN
#  define tally__tsan_release(p) __tsan_release((void *)(p))
#  define tally__tsan_acquire(p) __tsan_acquire((void *)(p))
#else
#  define tally__tsan_release(p) ((void)(p))
#  define tally__tsan_acquire(p) ((void)(p))
#endif

struct tally_group;

/*
 * Per group and CPU slot, at the start of the slot's chunk; the words and
 * prev snapshots follow it (items dense, as the kernel's percpu layout).
 * Private.
 */
struct tally__rstat_cpu {
	/* Lockless updated list link: points to itself when the group is off
	 * this slot's list, else the next node (NULL ends the list). Written
	 * by CAS (updater claims it), store before a release push, and by the
	 * flusher when it drains the list. */
	struct tally__rstat_cpu *lnext;
	struct tally_group *group; /* owner; set at creation */
	/* The slot's updated tree, under the tree's flush lock: children that
	 * have updates, linked by upd_next and ended by the parent itself;
	 * upd_children == the group itself when empty. upd_next == NULL: the
	 * group is not in the updated tree (the root points to itself). */
	struct tally_group *upd_children;
	struct tally_group *upd_next;
	/* next in this slot's flush list; under the flush lock */
	struct tally_group *flush_next;
	/* |delta| counted on this slot since the group's last flush, tagged
	 * with the group's count epoch: (epoch << 40) | count; a count from an
	 * older epoch reads as 0. Relaxed load and store: a threshold
	 * heuristic, see tally__rstat_count(). */
	uint64_t stats_updates;
};

struct tally_tree {
	/* private: use the tally_tree_* calls */
	unsigned tally__nr_items;
	unsigned tally__batch;
	/* Set at creation, then read-only: 1 if updates of this tree rely on
	 * the flush's membarrier() (compiler barrier only), 0 if they fence.
	 * See tally__rstat_drain_all(). */
	int tally__memb;
	uint64_t tally__threshold; /* batch * ncpus */
	size_t tally__w_off;       /* byte offset of word[0] in a slot chunk */
	size_t tally__prev_off;    /* byte offset of prev[0] */
	struct tally__pcpu tally__heads; /* per slot: the lockless list head */
	struct tally_group *tally__root;
	const struct rcu_flavor_struct *tally__flavor;
	uint64_t (*tally__clock)(void *arg);
	void *tally__clock_arg;
	uint64_t tally__period_ns;
	uint64_t tally__flush_last; /* clock at the last root flush; atomic */
	pthread_mutex_t tally__lock; /* flushes, create, destroy */
	unsigned long tally__nr_groups; /* under the lock */
	unsigned long tally__flush_gen; /* flushes so far; under the lock */
	int tally__memb_owed; /* a drain's membarrier() is still due; lock */
	struct tally_group **tally__lists;  /* per slot: the flush list; lock */
	struct tally_group *tally__snapped; /* groups whose counts a flush took */
	unsigned long tally__deferred;  /* call_rcu frees not yet done; atomic */
	int tally__rcu_token;           /* TSan grace-period token */
	/* the optional flusher thread */
	pthread_mutex_t tally__fl_lock;
	pthread_cond_t tally__fl_cond;
	pthread_t tally__fl_thread;
	uint64_t tally__fl_period;
	int tally__fl_running; /* under tally__fl_lock */
	int tally__fl_stop;    /* under tally__fl_lock */
	int tally__fl_monotonic; /* the cond var waits on the monotonic clock */
};

struct tally_group {
	/* private: use the tally_group_* calls */
	struct tally_tree *tally__tree;
	struct tally__pcpu tally__pcpu; /* slot chunks: tally__rstat_cpu + words */
	struct tally_group *tally__parent; /* NULL for the root */
	unsigned tally__nr_items;
	int tally__dead;           /* set by destroy under the lock; atomic */
	uint64_t tally__stats_updates; /* the group's threshold count; atomic */
	uint32_t tally__epoch;         /* count epoch; a flush bumps it; atomic */
	/* under the lock: the count a flush took, and which flush took it */
	uint64_t tally__snap;
	unsigned long tally__snap_gen;
	tally_uword *tally__state;   /* [nr_items] hierarchical; atomic stores */
	tally_uword *tally__local;   /* [nr_items] self only; atomic stores */
	tally_uword *tally__pending; /* [nr_items] from children; under the lock */
	/* RCU list of children: release-published, acquire-walked. */
	struct tally_group *tally__first_child;
	struct tally_group *tally__next_sibling;
	unsigned long tally__nr_children; /* under the lock */
	/* flush scratch, under the lock */
	struct tally_group *tally__snap_next;
	struct tally_group *tally__stack_next;
	struct rcu_head tally__rcu;
};

/*
 * Options for tally_tree_create_opts(). Zero-initialise and set what you
 * need: every zero field means its default.
 */
struct tally_tree_opts {
	unsigned nr_items; /* items per group: 1..TALLY_RSTAT_ITEMS_MAX */
	/* per-CPU stats_updates batch: 1..TALLY_RSTAT_BATCH_MAX;
	 * 0: TALLY_RSTAT_BATCH (64, MEMCG_CHARGE_BATCH) */
	unsigned batch;
	/* RCU flavor for deferred frees and read-side sections; NULL: the
	 * default (TALLY_URCU_DEFAULT_FLAVOR, urcu-memb). */
	const struct rcu_flavor_struct *flavor;
	/* Clock for the ratelimit, in ns, any origin, must not go backwards;
	 * called with clock_arg. NULL: CLOCK_MONOTONIC. */
	uint64_t (*clock)(void *arg);
	void *clock_arg;
	/* Periodic flush period in clock units (ns): 1..TALLY_RSTAT_PERIOD_MAX;
	 * 0: TALLY_RSTAT_PERIOD_NS (2 s, FLUSH_TIME). */
	uint64_t period_ns;
};

/* ---- private helpers ----------------------------------------------------- */

static inline uint64_t tally__rstat_mono_ns(void)
{
	struct timespec ts;
#if defined(TALLY__CLOCK_MONOTONIC)
	if (clock_gettime(TALLY__CLOCK_MONOTONIC, &ts) == 0)
		return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
	timespec_get(&ts, TIME_UTC);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

TALLY__INLINE uint64_t tally__rstat_now(const struct tally_tree *t)
{
	return t->tally__clock ? t->tally__clock(t->tally__clock_arg) : tally__rstat_mono_ns();
}

TALLY__INLINE struct tally__rstat_cpu *tally__rstat_cpu(const struct tally_group *g, unsigned s)
{
	return (struct tally__rstat_cpu *)tally__pcpu_at(&g->tally__pcpu, s, 0);
}

TALLY__INLINE tally_uword *tally__rstat_word(const struct tally_tree *t, struct tally__rstat_cpu *c,
					     unsigned i)
{
	return (tally_uword *)((unsigned char *)c + t->tally__w_off) + i;
}

TALLY__INLINE tally_uword *tally__rstat_prev(const struct tally_tree *t, struct tally__rstat_cpu *c,
					     unsigned i)
{
	return (tally_uword *)((unsigned char *)c + t->tally__prev_off) + i;
}

TALLY__INLINE struct tally__rstat_cpu **tally__rstat_head(const struct tally_tree *t, unsigned s)
{
	return (struct tally__rstat_cpu **)tally__pcpu_at(&t->tally__heads, s, 0);
}

/* Online CPUs (num_online_cpus()), for the flush threshold. */
static inline unsigned tally__rstat_online_cpus(void)
{
#if defined(_SC_NPROCESSORS_ONLN)
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n > 0)
		return (unsigned)n;
#endif
	return tally__nr_cpu_slots();
}

/* Free a group's memory (no unlinking: see tally_group_destroy()). */
static inline void tally__group_free(struct tally_group *g)
{
	tally__pcpu_free(&g->tally__pcpu);
	free(g);
}

/* The call_rcu callback: a grace period has passed since the group was
 * unlinked, so no reader can still hold it. */
static inline void tally__group_free_rcu(struct rcu_head *head)
{
	struct tally_group *g =
		(struct tally_group *)((char *)head - offsetof(struct tally_group, tally__rcu));
	struct tally_tree *t;
	/* Pairs with tally__tsan_release(g) in tally_group_destroy() ... */
	tally__tsan_acquire(g);
	t = g->tally__tree;
	/* ... and with every reader's release in tally_tree_read_unlock(). */
	tally__tsan_acquire(&t->tally__rcu_token);
	tally__group_free(g);
	/* The last touch of t: release, pairs with the acquire wait in
	 * tally_tree_destroy(), which may free t as soon as this is 0. */
	__atomic_sub_fetch(&t->tally__deferred, 1ul, __ATOMIC_RELEASE);
}

/* Allocate and initialise a group (not yet linked into the tree). */
static inline struct tally_group *tally__group_alloc(struct tally_tree *t,
						     struct tally_group *parent)
{
	size_t n = t->tally__nr_items;
	size_t chunk = t->tally__prev_off + n * sizeof(tally_uword);
	struct tally_group *g;
	unsigned s;
	/* The struct is pointer-aligned and a multiple of 8 bytes, so the item
	 * arrays right after it are aligned for tally_uword. */
	g = (struct tally_group *)calloc(1, sizeof(*g) + 3 * n * sizeof(tally_uword));
	if (!g)
		return NULL;
	if (tally__pcpu_alloc(&g->tally__pcpu, chunk)) {
		free(g);
		return NULL;
	}
	g->tally__tree = t;
	g->tally__parent = parent;
	g->tally__nr_items = (unsigned)n;
	g->tally__state = (tally_uword *)(g + 1);
	g->tally__local = g->tally__state + n;
	g->tally__pending = g->tally__local + n;
	for (s = 0; s < tally__pcpu_slots(&g->tally__pcpu); s++) {
		struct tally__rstat_cpu *c = tally__rstat_cpu(g, s);
		c->lnext = c; /* off list */
		c->group = g;
		c->upd_children = g; /* empty */
		c->upd_next = NULL;  /* not in the updated tree */
	}
	return g;
}

/*
 * Link g and its ancestors into slot s's updated tree, stopping at the
 * first one already linked (css_rstat_updated()'s walk). Flush lock held.
 */
static inline void tally__rstat_link(struct tally_group *g, unsigned s)
{
	for (;;) {
		struct tally__rstat_cpu *c = tally__rstat_cpu(g, s), *pc;
		struct tally_group *p = g->tally__parent;
		if (c->upd_next)
			break;
		if (!p) {
			c->upd_next = g; /* the root is linked to itself */
			break;
		}
		pc = tally__rstat_cpu(p, s);
		c->upd_next = pc->upd_children;
		pc->upd_children = g;
		g = p;
	}
}

/*
 * Move every group queued on slot s's lockless list into the slot's
 * updated tree and mark it off the list. Returns whether the list held
 * any. Flush lock held; the flusher's barrier (see tally__rstat_drain_all())
 * must come between this and any load of a word.
 */
static inline int tally__rstat_drain(struct tally_tree *t, unsigned s)
{
	/* Acquire: pairs with the release push in tally__rstat_push(), so the
	 * nodes' lnext values are visible. */
	struct tally__rstat_cpu *c =
		__atomic_exchange_n(tally__rstat_head(t, s), (struct tally__rstat_cpu *)NULL,
				    __ATOMIC_ACQUIRE);
	int any = c != NULL;
	while (c) {
		struct tally__rstat_cpu *next = tally__load(&c->lnext);
		tally__store(&c->lnext, c); /* off list: a later update pushes it again */
		tally__rstat_link(c->group, s);
		c = next;
	}
	return any;
}

#if TALLY__RSTAT_MEMB
/*
 * Decide once (per translation unit; the kernel's registration is per
 * process, idempotent, and kept across fork()) whether trees created now
 * use membarrier(): the kernel must list PRIVATE_EXPEDITED and its
 * registration in MEMBARRIER_CMD_QUERY, and the registration must
 * succeed. No: ENOSYS (an old kernel, a seccomp filter, an emulator such
 * as some valgrind versions), a failed registration. The first answer
 * stays (a CAS from "unknown"): an answer of "no" never turns into "yes"
 * for later trees, and racing first callers agree. errno is kept.
 */
static inline int tally__rstat_memb_setup(void)
{
	static int state; /* 0: unknown, 1: use membarrier(), -1: fence */
	int st = tally__load(&state), unknown = 0, e;
	long q;
	if (tally__likely(st))
		return st > 0;
	e = errno;
	st = -1;
	q = syscall(__NR_membarrier, TALLY__MEMB_CMD_QUERY, 0);
	if (q >= 0 && (q & TALLY__MEMB_CMD_PRIVATE_EXPEDITED) &&
	    (q & TALLY__MEMB_CMD_REGISTER_PRIVATE_EXPEDITED) &&
	    syscall(__NR_membarrier, TALLY__MEMB_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0)
		st = 1;
	errno = e;
	if (!tally__cas(&state, &unknown, st))
		st = unknown; /* another thread answered first: its answer holds */
	return st > 0;
}

/*
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): when it returns, every
 * thread of the process that was running has executed a full memory
 * barrier (an IPI to its CPU), and every other one will pass a context
 * switch (a full barrier) before it runs again. The caller's own accesses
 * are ordered around the call too. Once the process is registered (the
 * registration is kept across fork()), it can fail only for want of
 * memory (ENOMEM: newer kernels allocate a CPU mask per call): retry.
 * Anything else would break the pairing the updates rely on: abort.
 */
static inline void tally__rstat_membarrier(void)
{
	int e = errno;
	while (syscall(__NR_membarrier, TALLY__MEMB_CMD_PRIVATE_EXPEDITED, 0) != 0) {
		if (errno != ENOMEM && errno != EAGAIN && errno != EINTR)
			abort();
		sched_yield();
	}
	errno = e;
}
#endif

/*
 * The flusher's half of the barrier pair that orders each update's word
 * add before its on-list check (tally_group_mod()): between a drain's
 * "off list" marks (lnext = self) and the flush's loads of the words. A
 * store-buffering pattern:
 *     updater: word += d;  BARRIER_U;  if (lnext == self) push;
 *     flusher: lnext = self (drain);  BARRIER_F;  v = word;
 * Without a barrier on both sides each could miss the other's store: the
 * updater would take the group for still queued and the flush would read
 * the word without d, leaving d unflushed until the group's next update.
 * With them, either the updater sees "off list" (or a later push) and
 * queues the group again, or the flush reads d. The pairs:
 *   t->tally__memb == 1: BARRIER_U is a compiler barrier only, BARRIER_F is
 *     membarrier() (tally__rstat_membarrier()), as urcu-memb's read side.
 *     The IPI's barrier falls somewhere in the updater's program order:
 *     before its lnext load, which then sees self, or after it, hence
 *     after its word add, which the flush then reads. membarrier() costs
 *     microseconds (an IPI to every CPU running a thread of the process),
 *     so it is issued lazily: a drain pass that drained anything leaves
 *     one owed (tally__memb_owed, under the flush lock), and the first
 *     word load after that pays it (tally__rstat_read_barrier()). A flush
 *     whose second drain finds only groups outside its subtree reads no
 *     word after it and leaves the barrier to the next flush that reads
 *     one: at most one membarrier() per drain pass that found something,
 *     and none for a pass that found nothing.
 *   t->tally__memb == 0: both are full fences (tally__fence()), one after
 *     every drain pass.
 * Either way every word load comes after a barrier that follows every
 * "off list" mark made before it: a group drained by an earlier flush was
 * covered by the barrier that flush paid or left owed (the flush lock
 * orders them).
 */
static inline void tally__rstat_drain_all(struct tally_tree *t)
{
	unsigned s, n = tally__pcpu_slots(&t->tally__heads);
	int any = 0;
	for (s = 0; s < n; s++)
		any |= tally__rstat_drain(t, s);
#if TALLY__RSTAT_MEMB
	if (t->tally__memb) {
		t->tally__memb_owed |= any;
		return;
	}
#endif
	(void)any;
	tally__fence();
}

/* Before a flush loads a word: pay an owed membarrier(). Flush lock held. */
TALLY__INLINE void tally__rstat_read_barrier(struct tally_tree *t)
{
#if TALLY__RSTAT_MEMB
	if (tally__unlikely(t->tally__memb_owed)) {
		tally__rstat_membarrier();
		t->tally__memb_owed = 0;
	}
#else
	(void)t;
#endif
}

/* Per-slot threshold counts: (epoch << 40) | count. */
#define TALLY__RSTAT_CNT_BITS 40
#define TALLY__RSTAT_CNT_MASK ((1ull << TALLY__RSTAT_CNT_BITS) - 1)
#define TALLY__RSTAT_EPOCH_MASK ((1u << (64 - TALLY__RSTAT_CNT_BITS)) - 1)

/*
 * Take group x's threshold count: once per flush, at x's first visit, from
 * tally__rstat_detach() (parents before children), before any word of the
 * flush is read. Acquire: pairs with the release adds in
 * tally__rstat_count(), so the pushes of the updates behind the count (a
 * push comes before its count) are seen by the flush's second drain of
 * every slot. The count is subtracted only when the flush is done
 * (tally__rstat_settle()), so whoever sees it lowered sees the flushed
 * values. Parents first: an update counted in a child after the child's
 * snapshot is counted in the parent after the parent's, so no child keeps
 * a count its parent lost. Flush lock held.
 */
static inline void tally__rstat_snap(struct tally_tree *t, struct tally_group *x)
{
	if (x->tally__snap_gen == t->tally__flush_gen)
		return;
	x->tally__snap_gen = t->tally__flush_gen;
	x->tally__snap = __atomic_load_n(&x->tally__stats_updates, __ATOMIC_ACQUIRE);
	x->tally__snap_next = t->tally__snapped;
	t->tally__snapped = x;
}

/*
 * The end of a flush: subtract each visited group's snapshot from its
 * count (children before parents: the list is in reverse visiting order),
 * and restart its per-CPU counts with a new epoch: O(1) for every CPU (the
 * kernel zeroes only the CPU it flushes, leaving a child remainders its
 * parent lost). Release: pairs with the acquire in
 * tally_group_needs_flush(). Flush lock held.
 */
static inline void tally__rstat_settle(struct tally_tree *t)
{
	struct tally_group *x = t->tally__snapped;
	t->tally__snapped = NULL;
	for (; x; x = x->tally__snap_next) {
		tally__store(&x->tally__epoch, (x->tally__epoch + 1u) & TALLY__RSTAT_EPOCH_MASK);
		if (x->tally__snap)
			__atomic_sub_fetch(&x->tally__stats_updates, x->tally__snap,
					   __ATOMIC_RELEASE);
	}
}

/*
 * Detach g's subtree from slot s's updated tree and return it as a list
 * (the slots' flush_next) in which every group comes after all its
 * descendants; with snap, take the counts of groups visited first (see
 * tally__rstat_snap()). Flush lock held.
 */
static inline struct tally_group *tally__rstat_detach(struct tally_tree *t, struct tally_group *g,
						      unsigned s, int snap)
{
	struct tally__rstat_cpu *c = tally__rstat_cpu(g, s);
	struct tally_group *p = g->tally__parent, *head = NULL, *stack;
	if (!c->upd_next)
		return NULL; /* nothing below g was updated on this slot */
	if (p) {
		struct tally_group **pp = &tally__rstat_cpu(p, s)->upd_children;
		while (*pp != g)
			pp = &tally__rstat_cpu(*pp, s)->upd_next;
		*pp = c->upd_next;
	}
	c->upd_next = NULL;
	/* Depth-first: a group is popped after its parent, and prepended to
	 * the result, so it ends up in front of its parent. */
	g->tally__stack_next = NULL;
	stack = g;
	while (stack) {
		struct tally_group *x = stack, *ch;
		struct tally__rstat_cpu *xc = tally__rstat_cpu(x, s);
		stack = x->tally__stack_next;
		if (snap)
			tally__rstat_snap(t, x);
		xc->flush_next = head;
		head = x;
		for (ch = xc->upd_children; ch != x;) {
			struct tally__rstat_cpu *cc = tally__rstat_cpu(ch, s);
			struct tally_group *next = cc->upd_next;
			cc->upd_next = NULL;
			ch->tally__stack_next = stack;
			stack = ch;
			ch = next;
		}
		xc->upd_children = x;
	}
	return head;
}

/* Flush group x on slot s: the arithmetic of DESIGN.md. Flush lock held. */
static inline void tally__rstat_flush_one(struct tally_tree *t, struct tally_group *x, unsigned s)
{
	struct tally__rstat_cpu *c = tally__rstat_cpu(x, s);
	struct tally_group *p = x->tally__parent;
	unsigned i, n = x->tally__nr_items;
	tally__rstat_read_barrier(t);
	for (i = 0; i < n; i++) {
		tally_uword delta = x->tally__pending[i];
		tally_uword v = tally__load(tally__rstat_word(t, c, i));
		tally_uword *prev = tally__rstat_prev(t, c, i);
		x->tally__pending[i] = 0;
		if (v != *prev) {
			tally_uword d = v - *prev;
			delta += d;
			*prev = v;
			/* Single writer (the lock); readers load relaxed. */
			tally__store(&x->tally__local[i], x->tally__local[i] + d);
		}
		if (delta) {
			tally__store(&x->tally__state[i], x->tally__state[i] + delta);
			if (p)
				p->tally__pending[i] += delta;
		}
	}
}

/*
 * Flush g's subtree on every slot. Flush lock held.
 * 1. Take g's count; drain every slot; every slot: detach, take the counts
 *    of the groups met, flush its list.
 * 2. Drain every slot again, and flush what came (updates queued since
 *    step 1, among them every one whose count step 1 took, and those
 *    queued while step 1 flushed: leaving those to the next flush lets a
 *    busy tree's flushes grow without bound, each leaving more to the
 *    next; measured with whole-tree flushes under steady updates).
 * 3. Subtract the counts taken.
 * Each drain pass is followed by the flusher's barrier before any word
 * load (see tally__rstat_drain_all()).
 */
static inline void tally__rstat_flush_locked(struct tally_tree *t, struct tally_group *g)
{
	unsigned s, n = tally__pcpu_slots(&t->tally__heads);
	struct tally_group *x;
	t->tally__flush_gen++;
	/* g's count first, linked or not: a count can outlive the queueing
	 * of its updates (counted after an earlier flush's snapshot, drained
	 * by its second drain), and a flush of g must still clear it. */
	tally__rstat_snap(t, g);
	tally__rstat_drain_all(t);
	for (s = 0; s < n; s++)
		t->tally__lists[s] = tally__rstat_detach(t, g, s, 1);
	for (s = 0; s < n; s++)
		for (x = t->tally__lists[s]; x; x = tally__rstat_cpu(x, s)->flush_next)
			tally__rstat_flush_one(t, x, s);
	tally__rstat_drain_all(t);
	for (s = 0; s < n; s++)
		for (x = tally__rstat_detach(t, g, s, 0); x; x = tally__rstat_cpu(x, s)->flush_next)
			tally__rstat_flush_one(t, x, s);
	tally__rstat_settle(t);
}

/* Flush g (forced) if it is alive; record the time for the root. */
static inline void tally__rstat_flush(struct tally_group *g)
{
	struct tally_tree *t = g->tally__tree;
	pthread_mutex_lock(&t->tally__lock);
	if (tally__load(&g->tally__dead)) {
		pthread_mutex_unlock(&t->tally__lock);
		errno = EINVAL;
		return;
	}
	if (!g->tally__parent)
		tally__store(&t->tally__flush_last, tally__rstat_now(t));
	tally__rstat_flush_locked(t, g);
	pthread_mutex_unlock(&t->tally__lock);
}

/* Claim c (slot s of its group) and push it on slot s's lockless list. */
static inline void tally__rstat_push(struct tally_tree *t, struct tally__rstat_cpu *c, unsigned s)
{
	struct tally__rstat_cpu *expect = c, **head = tally__rstat_head(t, s), *old;
	/* One winner: the CAS from "off list" (self) to "being pushed". */
	if (!tally__cas(&c->lnext, &expect, (struct tally__rstat_cpu *)NULL))
		return;
	old = tally__load(head);
	do {
		tally__store(&c->lnext, old);
		/* Release: pairs with the acquire exchange in tally__rstat_drain(). */
	} while (!__atomic_compare_exchange_n(head, &old, c, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/*
 * Make g and all its ancestors flushable: loads only for those that are
 * already, an add of threshold + 1 for any that is not. See
 * tally__rstat_count().
 */
static inline void tally__rstat_mark_flushable(const struct tally_tree *t, struct tally_group *g)
{
	for (; g; g = g->tally__parent)
		if (tally__unlikely(tally__load(&g->tally__stats_updates) <= t->tally__threshold))
			__atomic_add_fetch(&g->tally__stats_updates, t->tally__threshold + 1,
					   __ATOMIC_RELEASE);
}

/*
 * Count mag toward the thresholds of g and its ancestors on slot s
 * (memcg_rstat_updated()), stopping at the first flushable one. The
 * per-slot count is a relaxed load and store, not an RMW: two threads on
 * one slot can lose a few counts, which only delays a thresholded flush
 * (the periodic flush bounds that).
 *
 * The early stop relies on "a flushable group's ancestors are flushable"
 * (the kernel's comment says so), which does not hold by itself: a
 * parent's per-CPU counts move into its atomic at other times than its
 * child's (it can lag by batch - 1 per CPU), and a flush clears the counts
 * of the groups it visits, not those of descendants it did not visit,
 * which may keep a count whose updates it already reflected. Stopping at
 * such a child for good would leave the parent below its threshold,
 * however much changes under it. So when the walk stops at a flushable
 * group, or makes one flushable, it checks every ancestor (loads of
 * read-mostly lines) and marks flushable any that is not: their subtrees
 * hold the group's updates. The marks are release adds after this
 * update's push, like the counts.
 */
TALLY__INLINE void tally__rstat_count(const struct tally_tree *t, struct tally_group *g, unsigned s,
				      uint64_t mag)
{
	for (; g; g = g->tally__parent) {
		struct tally__rstat_cpu *c;
		uint64_t x, v, e;
		if (tally__load(&g->tally__stats_updates) > t->tally__threshold) {
			tally__rstat_mark_flushable(t, g->tally__parent);
			break;
		}
		c = tally__rstat_cpu(g, s);
		e = (uint64_t)tally__load(&g->tally__epoch) << TALLY__RSTAT_CNT_BITS;
		v = tally__load(&c->stats_updates);
		x = ((v & ~TALLY__RSTAT_CNT_MASK) == e ? v & TALLY__RSTAT_CNT_MASK : 0) + mag;
		if (x < t->tally__batch) {
			tally__store(&c->stats_updates, e | x);
			continue;
		}
		tally__store(&c->stats_updates, e);
		/* Release: pairs with the acquire in tally__rstat_snap(). */
		if (__atomic_add_fetch(&g->tally__stats_updates, x, __ATOMIC_RELEASE) >
		    t->tally__threshold) {
			tally__rstat_mark_flushable(t, g->tally__parent);
			break;
		}
	}
}

/* ---- trees ---------------------------------------------------------------- */

/*
 * tally_tree_create_opts - a tree with only its root group, all items 0.
 * Returns the tree, or NULL with errno EINVAL (NULL opts, nr_items, batch
 * or period out of range) or ENOMEM. Records the creation time as the last
 * root flush. The first call in a process (per translation unit) asks the
 * kernel for membarrier() and registers the process for it (see Memory
 * ordering above); the tree keeps the answer. Blocking; touches no other
 * tree.
 */
static inline struct tally_tree *tally_tree_create_opts(const struct tally_tree_opts *o)
{
	struct tally_tree *t;
	size_t hdr;
	unsigned s;
	if (tally__bad(!o || !o->nr_items || o->nr_items > TALLY_RSTAT_ITEMS_MAX ||
		       o->batch > TALLY_RSTAT_BATCH_MAX || o->period_ns > TALLY_RSTAT_PERIOD_MAX)) {
		errno = EINVAL;
		return NULL;
	}
	t = (struct tally_tree *)calloc(1, sizeof(*t));
	if (!t)
		goto nomem;
	t->tally__nr_items = o->nr_items;
	t->tally__batch = o->batch ? o->batch : TALLY_RSTAT_BATCH;
	/* Before any group of t exists, fixed for t's life: updaters never
	 * meet a flush that assumes the other barrier. */
#if TALLY__RSTAT_MEMB && TALLY_RSTAT_MEMBARRIER
	t->tally__memb = tally__rstat_memb_setup();
#endif
	t->tally__threshold = (uint64_t)t->tally__batch * tally__rstat_online_cpus();
	hdr = (sizeof(struct tally__rstat_cpu) + sizeof(tally_uword) - 1) / sizeof(tally_uword) *
	      sizeof(tally_uword);
	t->tally__w_off = hdr;
	t->tally__prev_off = hdr + o->nr_items * sizeof(tally_uword);
	t->tally__flavor = o->flavor ? o->flavor : &TALLY_URCU_DEFAULT_FLAVOR;
	t->tally__clock = o->clock;
	t->tally__clock_arg = o->clock_arg;
	t->tally__period_ns = o->period_ns ? o->period_ns : (uint64_t)TALLY_RSTAT_PERIOD_NS;
	if (tally__pcpu_alloc(&t->tally__heads, sizeof(struct tally__rstat_cpu *)))
		goto nomem_t;
	t->tally__lists = (struct tally_group **)calloc(tally__pcpu_slots(&t->tally__heads),
							sizeof(struct tally_group *));
	if (!t->tally__lists)
		goto nomem_heads;
	for (s = 0; s < tally__pcpu_slots(&t->tally__heads); s++)
		*tally__rstat_head(t, s) = NULL;
	t->tally__root = tally__group_alloc(t, NULL);
	if (!t->tally__root)
		goto nomem_heads;
	if (pthread_mutex_init(&t->tally__lock, NULL))
		goto nomem_root;
	if (pthread_mutex_init(&t->tally__fl_lock, NULL))
		goto nomem_lock;
	{
		pthread_condattr_t a;
		int ok = !pthread_condattr_init(&a);
#if defined(TALLY__CLOCK_MONOTONIC)
		t->tally__fl_monotonic = ok && !pthread_condattr_setclock(&a, TALLY__CLOCK_MONOTONIC);
#endif
		if (!ok || pthread_cond_init(&t->tally__fl_cond, &a)) {
			if (ok)
				pthread_condattr_destroy(&a);
			goto nomem_fl;
		}
		pthread_condattr_destroy(&a);
	}
	t->tally__nr_groups = 1;
	t->tally__flush_last = tally__rstat_now(t);
	return t;
nomem_fl:
	pthread_mutex_destroy(&t->tally__fl_lock);
nomem_lock:
	pthread_mutex_destroy(&t->tally__lock);
nomem_root:
	tally__group_free(t->tally__root);
nomem_heads:
	free(t->tally__lists);
	tally__pcpu_free(&t->tally__heads);
nomem_t:
	free(t);
nomem:
	errno = ENOMEM;
	return NULL;
}

/* tally_tree_create - tally_tree_create_opts() with every default:
 * batch 64, urcu-memb, CLOCK_MONOTONIC, period 2 s. NULL, errno. */
static inline struct tally_tree *tally_tree_create(unsigned nr_items)
{
	struct tally_tree_opts o;
	memset(&o, 0, sizeof(o));
	o.nr_items = nr_items;
	return tally_tree_create_opts(&o);
}

/* tally_tree_root - the root group (never destroyed but with the tree);
 * NULL with errno EINVAL for a NULL tree. Wait-free. */
TALLY__INLINE struct tally_group *tally_tree_root(struct tally_tree *t)
{
	if (tally__bad(!t)) {
		errno = EINVAL;
		return NULL;
	}
	return t->tally__root;
}

/* tally_tree_flush_threshold - batch * ncpus: needs_flush(g) is true once
 * g's count exceeds it. 0 for NULL. */
TALLY__INLINE uint64_t tally_tree_flush_threshold(const struct tally_tree *t)
{
	return t ? t->tally__threshold : 0;
}

/* tally_tree_period_ns - the periodic flush period (clock units). */
TALLY__INLINE uint64_t tally_tree_period_ns(const struct tally_tree *t)
{
	return t ? t->tally__period_ns : 0;
}

/* tally_tree_group_bytes - heap bytes one group of t takes: the struct,
 * 3 words per item, and a chunk per CPU slot (header + 2 words per item,
 * rounded up to TALLY_CACHELINE) for every possible CPU plus the shared
 * slot. 0 for NULL. */
static inline size_t tally_tree_group_bytes(const struct tally_tree *t)
{
	size_t chunk;
	if (!t)
		return 0;
	chunk = t->tally__prev_off + t->tally__nr_items * sizeof(tally_uword);
	chunk = (chunk + TALLY_CACHELINE - 1) / TALLY_CACHELINE * TALLY_CACHELINE;
	return sizeof(struct tally_group) + 3u * t->tally__nr_items * sizeof(tally_uword) +
	       chunk * tally__pcpu_slots(&t->tally__heads);
}

/* tally_tree_nr_groups - live groups, the root included. Takes the lock. */
static inline unsigned long tally_tree_nr_groups(struct tally_tree *t)
{
	unsigned long n;
	if (!t)
		return 0;
	pthread_mutex_lock(&t->tally__lock);
	n = t->tally__nr_groups;
	pthread_mutex_unlock(&t->tally__lock);
	return n;
}

/* tally_tree_read_lock / _unlock - the tree's RCU flavor read-side section,
 * annotated for ThreadSanitizer. The thread must be registered with the
 * flavor. Groups reached inside stay allocated until the unlock. Nests. */
static inline void tally_tree_read_lock(struct tally_tree *t)
{
	t->tally__flavor->read_lock();
}

static inline void tally_tree_read_unlock(struct tally_tree *t)
{
	/* Pairs with the acquire in tally__group_free_rcu(). */
	tally__tsan_release(&t->tally__rcu_token);
	t->tally__flavor->read_unlock();
}

/* ---- groups ----------------------------------------------------------------- */

/*
 * tally_group_create - a new group under parent, all items 0.
 * Returns it, or NULL with errno EINVAL (NULL parent, parent destroyed) or
 * ENOMEM. The child is visible to tally_group_for_each_child() at once.
 * Blocking (the flush lock). Any thread; under a parent another thread may
 * destroy, call it inside tally_tree_read_lock().
 */
static inline struct tally_group *tally_group_create(struct tally_group *parent)
{
	struct tally_tree *t;
	struct tally_group *g;
	if (tally__bad(!parent)) {
		errno = EINVAL;
		return NULL;
	}
	t = parent->tally__tree;
	g = tally__group_alloc(t, parent);
	if (!g) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&t->tally__lock);
	if (tally__bad(tally__load(&parent->tally__dead))) {
		pthread_mutex_unlock(&t->tally__lock);
		tally__group_free(g);
		errno = EINVAL;
		return NULL;
	}
	g->tally__next_sibling = parent->tally__first_child;
	/* Release: a walker that loads g (acquire) sees it initialised. */
	tally__store_rel(&parent->tally__first_child, g);
	parent->tally__nr_children++;
	t->tally__nr_groups++;
	pthread_mutex_unlock(&t->tally__lock);
	return g;
}

/*
 * tally_group_destroy - remove g (a group with no children) from its tree.
 * Everything g counted, flushed or not, is handed to its parent: the
 * parent's and its ancestors' hierarchical values include it after their
 * next flush, exactly. g leaves every CPU's updated list and tree, then is
 * freed by call_rcu() after a grace period.
 * Returns 0, -EINVAL (NULL, the root, g already destroyed) or -EBUSY (g has
 * children; nothing changed). Blocking (the flush lock; no grace-period
 * wait). The caller must be registered with the tree's RCU flavor, and no
 * tally_group_mod(g) may run beside or after it.
 */
static inline int tally_group_destroy(struct tally_group *g)
{
	struct tally_tree *t;
	struct tally_group *p, **pp;
	unsigned i;
	if (tally__bad(!g || !g->tally__parent))
		return -EINVAL;
	t = g->tally__tree;
	p = g->tally__parent;
	pthread_mutex_lock(&t->tally__lock);
	if (tally__bad(tally__load(&g->tally__dead))) {
		pthread_mutex_unlock(&t->tally__lock);
		return -EINVAL;
	}
	if (g->tally__nr_children) {
		pthread_mutex_unlock(&t->tally__lock);
		return -EBUSY;
	}
	/* Drain every slot's list and flush g: its words' deltas and its
	 * pending move into p's pending, and g leaves every updated list and
	 * tree (it has no children, so its subtree is g). */
	tally__rstat_flush_locked(t, g);
	/* A leftover pending can only come from a child destroyed while g was
	 * unlinked; hand it up too and queue p so its next flush takes it. */
	for (i = 0; i < g->tally__nr_items; i++) {
		if (g->tally__pending[i]) {
			p->tally__pending[i] += g->tally__pending[i];
			tally__store(&g->tally__state[i], g->tally__state[i] + g->tally__pending[i]);
			g->tally__pending[i] = 0;
			tally__rstat_link(p, 0);
		}
	}
	tally__store(&g->tally__dead, 1);
	/* RCU unlink: walkers already at g keep going from its next sibling. */
	for (pp = &p->tally__first_child; *pp != g; pp = &(*pp)->tally__next_sibling)
		;
	tally__store_rel(pp, g->tally__next_sibling);
	p->tally__nr_children--;
	t->tally__nr_groups--;
	tally__add(&t->tally__deferred, 1ul);
	pthread_mutex_unlock(&t->tally__lock);
	/* Pairs with tally__tsan_acquire(g) in tally__group_free_rcu(). */
	tally__tsan_release(g);
	t->tally__flavor->update_call_rcu(&g->tally__rcu, tally__group_free_rcu);
	return 0;
}

/* tally_group_parent - g's parent, NULL for the root (or NULL g). */
TALLY__INLINE struct tally_group *tally_group_parent(const struct tally_group *g)
{
	return g ? g->tally__parent : NULL;
}

/* tally_group_tree - the tree g belongs to (NULL for NULL). */
TALLY__INLINE struct tally_tree *tally_group_tree(const struct tally_group *g)
{
	return g ? g->tally__tree : NULL;
}

/*
 * tally_group_for_each_child - call fn(child, arg) for each live child of
 * g, inside a read-side section of the tree's flavor (the calling thread
 * must be registered). Children created or destroyed meanwhile may or may
 * not be seen. Stops at the first non-zero return of fn and returns it;
 * 0 otherwise, -EINVAL for NULL g or fn. fn may call any tally call but
 * tally_group_destroy() and tally_tree_destroy(). Lock-free apart from fn.
 */
static inline int tally_group_for_each_child(struct tally_group *g,
					     int (*fn)(struct tally_group *child, void *arg),
					     void *arg)
{
	struct tally_group *c;
	int r = 0;
	if (tally__bad(!g || !fn))
		return -EINVAL;
	tally_tree_read_lock(g->tally__tree);
	/* Acquire: pairs with the release publish in tally_group_create(). */
	for (c = tally__load_acq(&g->tally__first_child); c;
	     c = tally__load_acq(&c->tally__next_sibling)) {
		if (tally__load(&c->tally__dead))
			continue;
		r = fn(c, arg);
		if (r)
			break;
	}
	tally_tree_read_unlock(g->tally__tree);
	return r;
}

/*
 * tally_group_mod - add delta to item of g on this CPU.
 * Returns 0, or -EINVAL (NULL g, item out of range, g destroyed; nothing
 * changes). Any thread, beside every call but destroy of g and
 * tally_tree_destroy. No lock, no system call: wait-free apart from the
 * lock-free push of g on this CPU's updated list (once per flush and CPU).
 * Ordering: a flush that starts after the call returns reflects delta.
 */
static inline int tally_group_mod(struct tally_group *g, unsigned item, tally_sword delta)
{
	struct tally_tree *t;
	struct tally__rstat_cpu *c;
	uint64_t mag;
	unsigned s;
	if (tally__bad(!g || item >= g->tally__nr_items || tally__load(&g->tally__dead)))
		return -EINVAL;
	if (!delta)
		return 0;
	t = g->tally__tree;
	tally__pcpu_add(&g->tally__pcpu, t->tally__w_off + item * sizeof(tally_uword),
			(tally_uword)delta, &s);
	c = tally__rstat_cpu(g, s);
	/* The word add before the lnext load: pairs with the barrier after the
	 * flush's drain pass (tally__rstat_drain_all(), which explains the
	 * store buffering). Trees that use membarrier() need only a compiler
	 * barrier here (the flush's membarrier() orders this CPU); others, and
	 * builds with TALLY_RSTAT_MEMBARRIER 0, a full fence. */
#if TALLY__RSTAT_MEMB && TALLY_RSTAT_MEMBARRIER
	if (tally__likely(t->tally__memb))
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	else
		tally__fence();
#else
	tally__fence();
#endif
	if (tally__load(&c->lnext) == c)
		tally__rstat_push(t, c, s);
	/* |delta| without overflow; capped at threshold + 1, which already
	 * makes any group flushable (and at 2^38, so a slot's count, below
	 * batch + cap, fits its 40 bits). */
	mag = delta < 0 ? (uint64_t)0 - (uint64_t)(int64_t)delta : (uint64_t)delta;
	if (mag > t->tally__threshold + 1)
		mag = t->tally__threshold + 1;
	if (mag > (1ull << 38))
		mag = 1ull << 38;
	tally__rstat_count(t, g, s, mag);
	return 0;
}

/* tally_group_needs_flush - g's threshold count exceeds batch * ncpus.
 * false for NULL. Wait-free. */
TALLY__INLINE bool tally_group_needs_flush(const struct tally_group *g)
{
	if (tally__bad(!g))
		return false;
	/* Acquire: pairs with the release in tally__rstat_settle(): a count
	 * lowered by a flush comes with that flush's values. */
	return __atomic_load_n(&g->tally__stats_updates, __ATOMIC_ACQUIRE) >
	       g->tally__tree->tally__threshold;
}

/*
 * tally_group_flush - flush g's subtree if tally_group_needs_flush(g)
 * (mem_cgroup_flush_stats()). A NULL or destroyed g sets errno EINVAL and
 * does nothing. Blocking (the tree's flush lock) when it flushes.
 */
static inline void tally_group_flush(struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return;
	}
	if (tally_group_needs_flush(g))
		tally__rstat_flush(g);
}

/* tally_group_flush_force - flush g's subtree whatever its count
 * (do_flush_stats()). NULL or destroyed g: errno EINVAL, nothing done. */
static inline void tally_group_flush_force(struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return;
	}
	tally__rstat_flush(g);
}

/*
 * tally_group_flush_ratelimited - tally_group_flush(g), but only when the
 * root was last flushed more than 2 periods ago (time_after(now, last +
 * 2 * period): the periodic flusher is a full period late). NULL g: errno
 * EINVAL. Wait-free when it does nothing.
 */
static inline void tally_group_flush_ratelimited(struct tally_group *g)
{
	struct tally_tree *t;
	uint64_t last;
	if (tally__bad(!g)) {
		errno = EINVAL;
		return;
	}
	t = g->tally__tree;
	last = tally__load(&t->tally__flush_last);
	if ((int64_t)(last + 2 * t->tally__period_ns - tally__rstat_now(t)) < 0)
		tally_group_flush(g);
}

/* tally_tree_flush_periodic - a forced flush of the root (the periodic
 * work item, flush_memcg_stats_dwork()); call it every
 * tally_tree_period_ns(t). NULL: errno EINVAL. Blocking. */
static inline void tally_tree_flush_periodic(struct tally_tree *t)
{
	if (tally__bad(!t)) {
		errno = EINVAL;
		return;
	}
	tally__rstat_flush(t->tally__root);
}

/*
 * Readers: the values as of the last flush that covered g. O(1), relaxed
 * loads, never blocked by a flush; any thread. A NULL g or an item out of
 * range reads 0.
 *   tally_group_read           hierarchical, signed
 *   tally_group_read_positive  hierarchical, negative as 0 (for gauges)
 *   tally_group_read_monotonic hierarchical raw word + TALLY_MONOTONIC_BIAS
 *                              (lruvec_page_state_monotonic(): for event
 *                              counters sampled and subtracted with
 *                              tally_delta(), right across a wrap)
 *   tally_group_read_local     g alone, signed
 */
TALLY__INLINE tally_sword tally_group_read(const struct tally_group *g, unsigned item)
{
	if (tally__bad(!g || item >= g->tally__nr_items))
		return 0;
	return tally__to_signed(tally__load(&g->tally__state[item]));
}

TALLY__INLINE tally_uword tally_group_read_positive(const struct tally_group *g, unsigned item)
{
	return tally_clamp(tally_group_read(g, item));
}

TALLY__INLINE tally_uword tally_group_read_monotonic(const struct tally_group *g, unsigned item)
{
	if (tally__bad(!g || item >= g->tally__nr_items))
		return 0;
	return (tally_uword)(tally__load(&g->tally__state[item]) + TALLY_MONOTONIC_BIAS);
}

TALLY__INLINE tally_sword tally_group_read_local(const struct tally_group *g, unsigned item)
{
	if (tally__bad(!g || item >= g->tally__nr_items))
		return 0;
	return tally__to_signed(tally__load(&g->tally__local[item]));
}

/* ---- the periodic flusher thread ---------------------------------------- */

static inline void tally__rstat_deadline(const struct tally_tree *t, struct timespec *ts,
					 uint64_t ns)
{
#if defined(TALLY__CLOCK_MONOTONIC)
	if (t->tally__fl_monotonic)
		clock_gettime(TALLY__CLOCK_MONOTONIC, ts);
	else
#endif
		timespec_get(ts, TIME_UTC);
	ns += (uint64_t)ts->tv_nsec;
	ts->tv_sec += (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

static inline void *tally__rstat_flusher_main(void *arg)
{
	struct tally_tree *t = (struct tally_tree *)arg;
	pthread_mutex_lock(&t->tally__fl_lock);
	while (!t->tally__fl_stop) {
		struct timespec ts;
		int r = 0;
		tally__rstat_deadline(t, &ts, t->tally__fl_period);
		while (!t->tally__fl_stop && r != ETIMEDOUT)
			r = pthread_cond_timedwait(&t->tally__fl_cond, &t->tally__fl_lock, &ts);
		if (t->tally__fl_stop)
			break;
		pthread_mutex_unlock(&t->tally__fl_lock);
		tally_tree_flush_periodic(t);
		pthread_mutex_lock(&t->tally__fl_lock);
	}
	pthread_mutex_unlock(&t->tally__fl_lock);
	return NULL;
}

/*
 * tally_tree_start_flusher - start a thread that runs
 * tally_tree_flush_periodic(t) every period_ns of real time (0: the tree's
 * period). Returns 0, -EINVAL (NULL t, period > TALLY_RSTAT_PERIOD_MAX),
 * -EBUSY (already running) or the pthread_create() error, negated.
 * The thread needs no RCU registration. Blocking.
 */
static inline int tally_tree_start_flusher(struct tally_tree *t, uint64_t period_ns)
{
	int r;
	if (tally__bad(!t || period_ns > TALLY_RSTAT_PERIOD_MAX))
		return -EINVAL;
	pthread_mutex_lock(&t->tally__fl_lock);
	if (t->tally__fl_running) {
		pthread_mutex_unlock(&t->tally__fl_lock);
		return -EBUSY;
	}
	t->tally__fl_period = period_ns ? period_ns : t->tally__period_ns;
	t->tally__fl_stop = 0;
	r = pthread_create(&t->tally__fl_thread, NULL, tally__rstat_flusher_main, t);
	if (!r)
		t->tally__fl_running = 1;
	pthread_mutex_unlock(&t->tally__fl_lock);
	return -r;
}

/* tally_tree_stop_flusher - stop the flusher thread and wait for it (a
 * flush in progress completes). No-op if none runs or t is NULL. Not from
 * the flusher thread itself. Blocking. */
static inline void tally_tree_stop_flusher(struct tally_tree *t)
{
	pthread_t th;
	if (!t)
		return;
	pthread_mutex_lock(&t->tally__fl_lock);
	if (!t->tally__fl_running) {
		pthread_mutex_unlock(&t->tally__fl_lock);
		return;
	}
	t->tally__fl_stop = 1;
	th = t->tally__fl_thread;
	pthread_cond_broadcast(&t->tally__fl_cond);
	pthread_mutex_unlock(&t->tally__fl_lock);
	pthread_join(th, NULL);
	pthread_mutex_lock(&t->tally__fl_lock);
	t->tally__fl_running = 0;
	pthread_mutex_unlock(&t->tally__fl_lock);
}

/*
 * tally_tree_destroy - stop the flusher, wait for the deferred frees of
 * destroyed groups (their grace periods), free every group and t. NULL is
 * a no-op. Nothing else may use t or its groups beside or after it. Not
 * inside a read-side section, nor from a call_rcu callback; with urcu-qsbr,
 * from a thread that is offline or not registered. Blocking.
 */
static inline void tally_tree_destroy(struct tally_tree *t)
{
	struct tally_group *stack, *all = NULL;
	if (!t)
		return;
	tally_tree_stop_flusher(t);
	/* Wait for the deferred frees of destroyed groups (they touch t). Not
	 * rcu_barrier(): liburcu's own barrier bookkeeping is invisible to
	 * ThreadSanitizer, this count is not. A timed wait on the flusher's
	 * (idle) condition variable is the sleep. */
	if (tally__load_acq(&t->tally__deferred)) {
		pthread_mutex_lock(&t->tally__fl_lock);
		while (tally__load_acq(&t->tally__deferred)) {
			struct timespec ts;
			tally__rstat_deadline(t, &ts, 200000);
			pthread_cond_timedwait(&t->tally__fl_cond, &t->tally__fl_lock, &ts);
		}
		pthread_mutex_unlock(&t->tally__fl_lock);
	}
	/* Collect every live group, depth-first, then free them. */
	stack = t->tally__root;
	stack->tally__stack_next = NULL;
	while (stack) {
		struct tally_group *x = stack, *c;
		stack = x->tally__stack_next;
		x->tally__snap_next = all;
		all = x;
		for (c = x->tally__first_child; c; c = c->tally__next_sibling) {
			c->tally__stack_next = stack;
			stack = c;
		}
	}
	while (all) {
		struct tally_group *next = all->tally__snap_next;
		tally__group_free(all);
		all = next;
	}
	pthread_cond_destroy(&t->tally__fl_cond);
	pthread_mutex_destroy(&t->tally__fl_lock);
	pthread_mutex_destroy(&t->tally__lock);
	free(t->tally__lists);
	tally__pcpu_free(&t->tally__heads);
	free(t);
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_RSTAT_H */
