/**
 * @file
 * tally/rstat.h - tally_tree / tally_group: hierarchical statistics with
 * subtree flushing, per-group flush thresholds, ratelimited and periodic
 * flushing: the kernel's cgroup rstat (kernel/cgroup/rstat.c) and memcg
 * stats (mm/memcontrol.c), after "mm: memcg: subtree stats flushing and
 * thresholds" (Yosry Ahmed, 2023).
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
 *   // Tenants by name, which other threads destroy and re-create
 *   // (examples/tenants): a request holds its tenant by a reference.
 *   tally_tree_register_thread(t);         // lookups, destroys: RCU
 *   struct tally_group *x = tally_group_create_named(root, "tenant-7");
 *   x = tally_group_find_get(root, "tenant-7");   // NULL: gone
 *   if (x) {
 *           tally_group_mod(x, INFLIGHT, +1);     // no section held:
 *           ... serve, sleep ...                  // x stays valid
 *           tally_group_record(x, LATENCY, ns);   // per-group histogram
 *           tally_group_mod(x, INFLIGHT, -1);     // counts even if x was
 *           tally_group_put(x);                   // destroyed meanwhile
 *   }
 *   tally_group_reset(x);                  // x's subtree reads 0, one cut
 *   tally_group_destroy_subtree(x);        // x and below; counts go up
 *
 * This header holds the structures and the public calls with their
 * contracts. The machinery sits beside it, split where the kernel splits
 * it (each refuses to be included on its own):
 *   tally/rstat/updated.h    the updated set (per-CPU dirty bitmaps, the
 *                            per-CPU updated trees), group ids, and the
 *                            barrier pair of updates and flushes
 *                            (css_rstat_updated(), cgroup rstat)
 *   tally/rstat/threshold.h  the per-group flush thresholds
 *                            (memcg_rstat_updated(), needs_flush)
 *   tally/rstat/flusher.h    the clock, the ratelimit deadline and the
 *                            periodic flusher thread (flush_memcg_stats_dwork())
 *   tally/rstat/flush.h      the flush walk and the hand-over of destroyed
 *                            groups' counts (css_rstat_flush(),
 *                            mem_cgroup_css_rstat_flush())
 *   tally/rstat/lifetime.h   creating and destroying trees and groups, the
 *                            deferred free (css_free_rwork_fn())
 *   tally/rstat/names.h      item names and group names
 *   tally/rstat/reset.h      resets of a subtree: the baselines the
 *                            since-reset readers subtract
 *   tally/rstat/rcu.h        the RCU rules, checked in TALLY_DEBUG builds
 *   tally/rstat/types.h      the private parts of the two structs, one
 *                            struct per concern
 *
 * ---- Model ----------------------------------------------------------------
 * Every group has N items. Per group and CPU slot: a never-reset word per
 * item (the updates) and a prev snapshot per item (the word's value at the
 * last flush that consumed it). Per group: state (hierarchical: the group
 * and everything below it), local (the group alone) and pending (deltas
 * handed up by flushed or destroyed children, not yet in state). Readers
 * read state and local: the values as of the last flush that covered the
 * group.
 *
 * Update (tally_group_mod): add to this CPU slot's word; then, ordered
 * after the add (see Memory ordering), mark the group dirty in the slot's
 * dirty record (on x86_64 with rseq: two plain 32-bit stores in the mark
 * half of the slot's record, right after the add's restartable section;
 * elsewhere: in the shared half, a load and an atomic OR only if the bit
 * is clear); then count |delta| toward the flush thresholds of the group
 * and its ancestors (memcg_rstat_updated()).
 *
 * Flush of the subtree at g, under the tree's flush lock: drain every
 * slot's dirty bitmap into the slot's updated tree (link each dirty group
 * and its ancestors under their parents, stopping at the first one already
 * linked), then the flush's barrier; per slot, detach g's part of the
 * updated tree and visit it children before parents; then drain every
 * slot again (and the barrier) and visit what came meanwhile.
 * For each visited group x and item i, with the slot's word v:
 *     delta = pending[i]; pending[i] = 0;
 *     if (v != prev[i]) { d = v - prev[i]; delta += d; prev[i] = v; local[i] += d; }
 *     if (delta) { state[i] += delta; parent->pending[i] += delta; }
 * Groups outside g's subtree stay linked for a later flush. All arithmetic
 * is modular in 2^TALLY_WORD_BITS, so totals are exact across wraps.
 *
 * Thresholds ("mm: memcg: make stats flushing threshold per-memcg", Yosry
 * Ahmed, 2023): tally_group_flush(g) flushes only when needs_flush(g):
 * g's count, the sum of |delta| of updates in its subtree since its last
 * flush, moved into it in per-CPU batches (64), exceeds batch * ncpus
 * (online CPUs when the tree was created); a flush lowers it by what it
 * took at its start, but leaves it past the threshold (at threshold + 1)
 * when updates counted while it ran took g past it (they may have come
 * after its last drain). If an update by this thread finds g below its
 * threshold and takes it past, tally_group_flush(g) afterwards returns
 * with that update and every earlier one of this thread reflected,
 * whether it flushed or another flush (forced, periodic or thresholded,
 * running at the same time included) got there first. See
 * tally/rstat/threshold.h; the argument is at the top of
 * tally/rstat/updated.h.
 *
 * ---- RCU: which threads must do what (default flavor: urcu-memb) -------
 * Groups are freed through liburcu: tally_group_destroy() flushes the
 * group into its parent, unlinks it and frees it with call_rcu() after a
 * grace period. A tree takes its flavor as a `const struct
 * rcu_flavor_struct *` (tally_tree_opts); the default is urcu-memb
 * (`urcu_memb_flavor`, from liburcu-memb: pkg-config liburcu-memb, which
 * the tally::rstat CMake target and pkg-config's tally-rstat link;
 * tally::tally and tally.pc do not). With the default flavor:
 *   - Threads that only update, flush or read groups they hold (their own,
 *     or ones no other thread can destroy meanwhile) need nothing: no
 *     registration, no RCU calls. The periodic flusher thread needs none.
 *   - A thread that calls tally_group_destroy() must be registered with
 *     the flavor (urcu_memb_register_thread(), or flavor->register_thread())
 *     because call_rcu() requires it; for urcu-qsbr it must also be online.
 *   - A thread that calls tally_group_for_each_child() must be
 *     registered and do it inside tally_tree_read_lock()/_unlock().
 *   - A thread that uses a group another thread may destroy meanwhile
 *     holds it, either by a reference (tally_group_find_get() or
 *     tally_group_tryget(), then tally_group_put(): no section between,
 *     the way for a request that updates a tenant and may sleep; only the
 *     lookup needs the registration) or inside a read-side section (a
 *     registered thread). Either way a destroyed group's memory stays
 *     valid, and every call on it does what "Destroyed groups" below
 *     says; it is freed after its last put and a grace period after its
 *     destroy, whichever comes last (tests/formal/ref_free.pml).
 *   - tally_tree_destroy() waits for the deferred frees: call it outside
 *     read-side sections and not from a call_rcu callback (with urcu-qsbr:
 *     from an offline or unregistered thread).
 *   - Unregister (urcu_memb_unregister_thread()) before a registered thread
 *     exits. urcu-memb uses the membarrier() system call where the kernel
 *     has it, and falls back to memory barriers in the read lock otherwise.
 *   - tally_tree_register_thread() / tally_tree_unregister_thread() do the
 *     registration through the tree's flavor. Registering and locking
 *     through tally's calls lets TALLY_DEBUG builds check these rules: an
 *     unregistered thread that locks, destroys or walks, or a call on a
 *     destroyed group outside a read-side section (a use-after-free once
 *     the grace period ends), aborts with a message naming the call
 *     (tally/rstat/rcu.h).
 *   - urcu-bp, liburcu's bulletproof flavor, registers every thread by
 *     itself at its first read lock: define TALLY_URCU_BP 1 (config.h)
 *     and link liburcu-bp (CMake: tally::rstat_bp; pkg-config
 *     tally-rstat-bp). No
 *     thread then needs registering (the read-side sections are still
 *     needed); its read lock costs more than urcu-memb's (bench/RESULTS.md).
 * liburcu 0.13 lets one translation unit include one flavor header. This
 * header includes TALLY_URCU_HEADER (default <urcu/urcu-memb.h>); to use
 * another flavor in the same file, define TALLY_URCU_HEADER (for example
 * <urcu/urcu-qsbr.h>) and TALLY_URCU_DEFAULT_FLAVOR (urcu_qsbr_flavor)
 * before including tally, and link that flavor's library.
 *
 * ---- Destroyed groups (held by a reference or a read-side section) -------
 *   tally_group_mod          0: counted, as on a live group, whether the
 *                            destroy is under way or done (the kernel keeps
 *                            charging a dying cgroup); its delta goes to
 *                            the nearest live ancestor: a flush of that
 *                            ancestor that starts after the mod returned
 *                            reflects it. Never lost, never counted twice,
 *                            so a gauge raised before the destroy and
 *                            lowered after it comes back to 0. Not in the
 *                            group's own values (read, below), which the
 *                            destroy fixed. (Before issue 29: -EINVAL once
 *                            the destroy was visible, and the update lost.)
 *   tally_group_create,      NULL, errno EINVAL
 *   tally_group_create_named
 *   tally_group_destroy,     -EINVAL
 *   tally_group_destroy_subtree,
 *   tally_group_reset,
 *   tally_group_set_name
 *   tally_group_find_child   NULL, errno ENOENT (no live children)
 *   flush, flush_force,      errno EINVAL, nothing done (ratelimited: only
 *   flush_ratelimited        when it would flush)
 *   needs_flush              false
 *   read, read_positive,     the group's values as of its destroy
 *   read_monotonic,
 *   read_local
 *   parent, tree             as before the destroy (the parent may be
 *                            destroyed too; its memory stays valid)
 *   for_each_child           0, fn never called (a destroyed group has no
 *                            children)
 * Without a reference or a read-side section any call on a destroyed
 * group is a use-after-free waiting to happen; TALLY_DEBUG builds abort
 * instead, naming the call.
 *
 * ---- Concurrency contract ------------------------------------------------
 *   call                          beside                    progress
 *   tally_group_mod               everything but            wait-free
 *                                 tally_tree_destroy; beside
 *                                 destroy of that group
 *                                 only inside a read-side
 *                                 section
 *   read, read_positive,          everything but            wait-free
 *   read_monotonic, read_local,   tally_tree_destroy
 *   needs_flush
 *   flush, flush_force,           everything but            blocking (the
 *   flush_ratelimited,            tally_tree_destroy        tree's flush lock;
 *   flush_periodic                                          membarrier() [1])
 *   group_create, _create_named,  everything but            blocking (the
 *   group_destroy,                tally_tree_destroy        flush lock);
 *   _destroy_subtree,                                       destroy defers free
 *   group_reset, tree_reset
 *   find_child, for_each_child    everything but            lock-free (RCU
 *                                 tally_tree_destroy        read side)
 *   tree_register_thread,         everything                blocking (liburcu's
 *   _unregister_thread                                      registry lock)
 *   start_flusher, stop_flusher   everything but            blocking
 *                                 tally_tree_destroy
 *   tree_create, tree_destroy     nothing on that tree      blocking
 * [1] only in trees created with TALLY_RSTAT_MEMBARRIER 1 (config.h) where
 *     the kernel offers private expedited membarrier(); by default a flush
 *     makes no system call but the lock's.
 * Creating a group, as tally_group_create() says, checks its depth
 * against TALLY_RSTAT_DEPTH_MAX; an update walks at most that many
 * ancestors for the thresholds.
 *
 * ---- Memory ordering -----------------------------------------------------
 * A flush that starts after tally_group_mod() returned (happens-after it)
 * and covers the group reflects that update, whatever other threads are
 * doing meanwhile (preempted or stopped in the middle of their own
 * updates included). Readers see the values of the last completed flush
 * of the group (relaxed loads: a reader racing with a flush may see some
 * items of it before others). A flush serializes with create/destroy and
 * other flushes on the same tree.
 *
 * Why this holds, for the shared half of the dirty bitmaps (its barrier
 * pair) and for the mark half (x86_64 with rseq, no barrier): the
 * argument at the top of tally/rstat/updated.h, checked by the SPIN
 * models in tests/formal/bitmap.pml.
 *
 * Destroy, and updates on a dying group (issue 29). Under the flush lock,
 * destroy retires g: one flush of g alone, no drain (every slot's word -
 * prev into g's local and state and its parent's pending, g's pending
 * into its state and the parent's pending, the parent linked on slot 0),
 * g out of every slot's updated tree (O(1) each: a group's updated
 * children are live, and g has none); then marks it dead (its fast path
 * closed) and unlinks it from its parent's children. It is freed by
 * call_rcu() after a grace period. Meanwhile g keeps its id, its dirty
 * bits and its per-CPU words, and tally_group_mod() on it counts as on a
 * live group (tally__rstat_mod_dying(): the word add, BARRIER_U, the
 * shared half's marking; the threshold count goes to the nearest live
 * ancestor). A destroyed group is never linked again: a drain that finds
 * its bit hands that slot's word - prev, after BARRIER_F, to the pending
 * of its nearest live ancestor and links that ancestor instead; the
 * call_rcu callback (flush lock) hands over, slot by slot, what no drain
 * did, releases the id, and frees g once no destroyed child still needs
 * it (a reference count: 1 for the group, 1 per child not yet freed,
 * since a child's hand-over walks up through destroyed ancestors).
 * Why an update U on g, made while g's destroy is under way or after it
 * is visible, reaches g's nearest live ancestor exactly once:
 *   - Once: per group and slot, prev is the one record of what has been
 *     consumed of the word. Every consumer (a flush's visit, the retire,
 *     a drain's hand-over, the late hand-over) moves exactly word - prev
 *     and sets prev = word, under the flush lock; so no delta moves twice.
 *   - Never lost: U runs inside a read-side section that holds g (the
 *     rule for a group another thread may destroy), which began before
 *     call_rcu(); the callback runs after a grace period, so U's add
 *     happens before the late hand-over's loads, which take whatever
 *     word - prev is left. Nothing else discards a word.
 *   - Where to: each consumer after the destroy moves the delta into the
 *     pending of the nearest live ancestor at that moment (alive while
 *     the lock is held: destroys take it), linked on that slot. A live
 *     group's pending reaches its state at its next flush and its
 *     parent's pending, or, if it is destroyed first, its retire moves it
 *     on to its parent: a delta sits in exactly one group's pending and
 *     only climbs, through chains of dying groups as well (destroy_subtree
 *     retires children first, each into a parent not yet dead).
 *   - In time: a flush F of a live ancestor A of g that starts after U
 *     returned reflects U. U set g's dirty bit after its add; by the
 *     argument in tally/rstat/updated.h, the first drain exchange X
 *     after U's bit access reads it, and X comes no later than F's first
 *     drain, and every word load after X's BARRIER_F reads U's add. If g
 *     was alive at X, X linked g on that slot, and g stays linked until
 *     a consumer takes the slot: a flush's visit (F's own at the latest,
 *     g being in A's subtree), which moves U's delta into g's state and
 *     its parent's pending, the parent next in the same walk; or g's
 *     retire, which moves it into the parent's pending and links the
 *     parent. If g was dead at X, X's hand-over moved it into the nearest
 *     live ancestor's pending, linked. Either way U's delta is in F's walk
 *     or, before it, in the pending of a live group linked on some slot,
 *     between g and A (A is alive and an ancestor of g), so F's walk of
 *     A's subtree carries it into A's state. tests/formal/dying.pml
 *     checks this with a chain of
 *     two dying groups, a flush and the deferred frees (each of its
 *     defective variants, the old refusal included, fails).
 *   - Thresholds: U counts |delta| toward the nearest live ancestor and
 *     its ancestors, after its dirty bit, as any update in their subtree;
 *     a flush takes a count (acquire) before a drain that sees the bit,
 *     whose hand-over links a group inside the flushed subtree, so
 *     "tally_group_flush(a) reflects an update that took a past its
 *     threshold" holds for that ancestor a.
 *   - Resets: a reset is a flush of its subtree and its baselines under
 *     the lock; by the cursor U's delta is in that flush (the baseline)
 *     or in a later one (every later since-reset value), never both.
 *   - Readers stay O(1) loads of state and local; a destroyed group's own
 *     values stay as its retire left them.
 * Cost: destroy is O(slots * items), the retire, whatever else the tree
 * holds: no drain, so no scan of the dirty bitmaps (before issue 29 its
 * flush drained every slot's bitmap of every block of ids, twice: 6,700
 * instructions per destroy among 10,000 siblings and 53,770 among
 * 100,000, callgrind; now about 1,100 in both). Finding the dead
 * groups' bits is left to the drains of later flushes, which scan the
 * bitmaps anyway, and each dead group found dirty costs a hand-over of
 * O(slots * items); the deferred free costs one more, under the lock.
 */
#ifndef TALLY_RSTAT_H
#define TALLY_RSTAT_H

#include <tally/hist.h>
#include <tally/monotonic.h>
#include <tally/pcpu.h>
#include <tally/ref.h>
#include <tally/utf8.h>

#include <pthread.h>
#include <time.h>
#if defined(__linux__)
#  include <sys/syscall.h>
#endif

/* The liburcu flavor (TALLY_URCU_HEADER, config.h). */
#include TALLY_URCU_HEADER

#if TALLY__TSAN
#  include <sanitizer/tsan_interface.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/**@{*/
/** Largest item count and stats_updates batch a tree accepts. */
#define TALLY_RSTAT_ITEMS_MAX (1u << 16)
#define TALLY_RSTAT_BATCH_MAX (1u << 20)
/**@}*/
/** Largest period: 2^62 ns (146 years), so 2 periods never overflow. */
#define TALLY_RSTAT_PERIOD_MAX (1ull << 62)
/**
 * Deepest group a tree holds: the root is at depth 0, a group one below
 * its parent; tally_group_create() refuses a group deeper than this with
 * errno E2BIG. An update counts toward the thresholds of its group and
 * its ancestors (memcg_rstat_updated()), so it touches at most
 * TALLY_RSTAT_DEPTH_MAX + 1 groups; unbounded, a chain of n groups with
 * one update each costs O(n^2) (20,000 deep: 3.7 s).
 */
#define TALLY_RSTAT_DEPTH_MAX 1024u

/* Every 64-bit field that is read or written atomically is 8-byte aligned,
 * also where the ABI aligns uint64_t to 4 (i386): a misaligned one could
 * straddle a cache line (split locks, torn 64-bit loads). */
#define TALLY__RSTAT_A8 __attribute__((aligned(8)))
#ifdef __cplusplus
#  define TALLY__RSTAT_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#  define TALLY__RSTAT_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/*
 * Test hooks (private): a test defines TALLY__TEST_HOOK(name, group)
 * before including this header to run code at a named window of the
 * protocol, so a test can force an interleaving instead of waiting for
 * one; the flushing thread calls it under the flush lock (it may update,
 * never flush). Windows: rstat_flush_drained (a flush's first drain is
 * done, no count but g's taken yet), rstat_flush_walked (its second walk
 * is done, the counts not yet settled). TALLY__RSTAT_RSEQ_HOOK is an
 * assembler string placed between the word add's section and the dirty
 * mark stores of the x86_64 rseq update (a test puts a trap there and
 * migrates the thread in its handler). Both expand to nothing by default.
 */
#ifndef TALLY__TEST_HOOK
#  define TALLY__TEST_HOOK(name, group) ((void)0)
#endif
#ifndef TALLY__RSTAT_RSEQ_HOOK
#  define TALLY__RSTAT_RSEQ_HOOK ""
#endif

#define TALLY__RSTAT_INSIDE 1
#include <tally/rstat/types.h>

/* ---- the structs: private members, one sub-struct per concern ----------- */

/** A tree of groups (cgroup rstat): its root, items, flush lock,
 * clock, flusher and RCU flavor. Opaque: made by tally_tree_create() or
 * tally_tree_create_opts(), then only the tally_tree_* and tally_group_*
 * calls. */
struct tally_tree {
	/* private: use the tally_tree_* calls */
	unsigned tally__nr_items; /* words per group: items, then histograms' */
	unsigned tally__nr_user;  /* items (tally_tree_opts.nr_items) */
	unsigned tally__nr_hists;
	struct tally__rstat_hist *tally__hists; /* [nr_hists], or NULL */
	size_t tally__word_off; /* byte offset of word[0] in a slot chunk */
	size_t tally__prev_off; /* byte offset of prev[0] */
	struct tally_group *tally__root;
	struct tally__rstat_thresholds tally__thr;
	struct tally__rstat_flushing tally__flush;
	struct tally__rstat_ids tally__ids;
	struct tally__rstat_clock tally__clock;
	struct tally__rstat_flusher tally__flusher;
	struct tally__rstat_rcu tally__rcu;
	char **tally__item_names; /* NULL, or set once: see rstat/names.h */
	unsigned char *tally__item_flags; /* NULL (all counters), or per item */
	uint64_t tally__last_serial; /* the last group's serial; flush lock */
};

/** A group of a tree: one node of the hierarchy, made by
 * tally_group_create(), gone with tally_group_destroy() (freed after an RCU
 * grace period). Opaque: use the tally_group_* calls. */
struct tally_group {
	/* private: use the tally_group_* calls */
	struct tally_tree *tally__tree;
	unsigned tally__nr_items;
	/* The items tally_group_mod()'s fast path serves: nr_items while g
	 * is alive, 0 from its destroy on (stored with dead), and 0 where the
	 * mark path cannot reach g's chunk (x86_64 with rseq, regions not
	 * 2^TALLY_PCPU_REGION_SHIFT apart: a chunk past 64 KiB); atomic */
	unsigned tally__fast_items;
	int tally__dead; /* set by destroy under the flush lock; atomic */
	union { char *p; uint64_t size; } tally__name; /* set once: rstat/names.h */
	/** The reset baselines: NULL until the first reset of g (rstat/reset.h),
	 * then state's [nr_items] and local's [nr_items]; atomic. */
	union { tally_uword *p; uint64_t size; } tally__base;
	uint64_t tally__serial; /* creation number in the tree, never reused */
	struct tally__pcpu tally__pcpu; /* slot chunks: tally__rstat_cpu, words, prev */
	struct tally__rstat_gdirty tally__dirty;
	struct tally__rstat_gcount tally__cnt;
	struct tally__rstat_links tally__links;
	tally_uword *tally__state;   /* [nr_items] hierarchical; atomic stores */
	tally_uword *tally__local;   /* [nr_items] self only; atomic stores */
	tally_uword *tally__pending; /* [nr_items] from children; flush lock */
	struct tally_group *tally__walk_next; /* depth-first walks; flush lock */
	/* On the flush's hand-over list (destroyed, found dirty): the next
	 * one, itself at the end; NULL when not on it. Flush lock. */
	struct tally_group *tally__handover_next;
	struct rcu_head tally__rcu;
	/* References (tally_group_get()): killed by the destroy. */
	struct tally_ref tally__ref;
	/* Destroyed: 2, less one at the grace period's end and one at the
	 * ref's release; the free at 0 (rstat/lifetime.h). Atomic. */
	unsigned tally__free_wait;
	unsigned tally__pad;
};

/* The item arrays follow the struct in one allocation: its size must keep
 * them aligned, and the 64-bit atomics must not straddle a line. */
TALLY__RSTAT_STATIC_ASSERT(sizeof(struct tally_group) % 8 == 0,
			   "tally_group: item arrays must stay 8-byte aligned");
TALLY__RSTAT_STATIC_ASSERT(offsetof(struct tally_group, tally__cnt) % 8 == 0,
			   "tally_group: the 64-bit count must be 8-byte aligned");
TALLY__RSTAT_STATIC_ASSERT(offsetof(struct tally__rstat_cpu, stats_updates) % 8 == 0,
			   "rstat: the per-slot count must be 8-byte aligned");
TALLY__RSTAT_STATIC_ASSERT(offsetof(struct tally_tree, tally__clock) % 8 == 0 &&
				   offsetof(struct tally__rstat_clock, last_root_flush) % 8 == 0,
			   "tally_tree: the last flush time must be 8-byte aligned");

/**
 * Options for tally_tree_create_opts(). Zero-initialise and set what you
 * need: every zero field means its default.
 */
struct tally_tree_opts {
	unsigned nr_items; /**< items per group: 1..TALLY_RSTAT_ITEMS_MAX */
	/** per-CPU stats_updates batch: 1..TALLY_RSTAT_BATCH_MAX;
	 * 0: TALLY_RSTAT_BATCH (64, MEMCG_CHARGE_BATCH) */
	unsigned batch;
	/** RCU flavor for deferred frees and read-side sections; NULL: the
	 * default (TALLY_URCU_DEFAULT_FLAVOR, urcu-memb). */
	const struct rcu_flavor_struct *flavor;
	/** Clock for the ratelimit and the flusher: `uint64_t clock(void *arg)`
	 * returns the time in ns (any origin, never going backwards), called
	 * with clock_arg from any thread that flushes or updates the
	 * ratelimit, so it must be thread-safe. NULL: CLOCK_MONOTONIC. */
	uint64_t (*clock)(void *arg);
	void *clock_arg; /**< passed to clock */
	/** Periodic flush period in clock units (ns): 1..TALLY_RSTAT_PERIOD_MAX;
	 * 0: TALLY_RSTAT_PERIOD_NS (2 s, FLUSH_TIME). */
	uint64_t period_ns;
	/** NULL, or nr_items entries, each 0 (an event counter) or
	 * TALLY_GROUP_ITEM_GAUGE. Copied. A reset leaves gauges alone. */
	const unsigned char *item_flags;
	/** Histograms per group (tally_group_record()): nr_hists bucket
	 * layouts, as tally_hist_init() takes them, but precision 0 means
	 * TALLY_GROUP_HIST_PRECISION_DEFAULT; copied. Histogram h of a
	 * group is its subtree's. NULL, 0: none. */
	const struct tally_hist_opts *hists;
	unsigned nr_hists; /**< how many; their words and the items at most
			    * TALLY_RSTAT_ITEMS_MAX */
};

/**
 * The precision of a group histogram made with precision 0: 2^3 buckets
 * per power of two, at most 2^-4 (6.25%) relative quantile error; the
 * default range (1 ns .. 1 h) then has 319 bucket positions, 320 words
 * per group with the sum (see tally_group_record() for what they cost).
 */
#define TALLY_GROUP_HIST_PRECISION_DEFAULT 3u

/**
 * TALLY_GROUP_ITEM_GAUGE - tally_tree_opts.item_flags: the item is a
 * gauge, a level that goes up and down (bytes in use, open connections),
 * not a count of events: tally_group_reset() leaves it alone, since a
 * reset would make its level wrong. Without it an item is an event
 * counter, which a reset starts from 0 again.
 */
#define TALLY_GROUP_ITEM_GAUGE 0x1u

#include <tally/rstat/rcu.h>
#include <tally/rstat/hist.h>
#include <tally/rstat/updated.h>
#include <tally/rstat/threshold.h>
#include <tally/rstat/flusher.h>
#include <tally/rstat/flush.h>
#include <tally/rstat/names.h>
#include <tally/rstat/lifetime.h>
#include <tally/rstat/reset.h>
#undef TALLY__RSTAT_INSIDE

/* ---- trees ---------------------------------------------------------------- */

/**
 * tally_tree_create_opts - a tree with only its root group, all items 0.
 * Returns the tree, or NULL with errno EINVAL (NULL opts, nr_items, batch
 * or period out of range, an unknown item flag) or ENOMEM. Records the
 * creation time as the last root flush. With TALLY_RSTAT_MEMBARRIER 1
 * (config.h; default 0), the first call in a process (per translation
 * unit) asks the kernel for membarrier() and registers the process for it
 * (see Memory ordering above); the tree keeps the answer. With the default, no system call:
 * updates and flushes pair full fences. Blocking; touches no other tree.
 */
static inline struct tally_tree *tally_tree_create_opts(const struct tally_tree_opts *o)
{
	unsigned i;
	if (tally__bad(!o || !o->nr_items || o->nr_items > TALLY_RSTAT_ITEMS_MAX ||
		       o->batch > TALLY_RSTAT_BATCH_MAX || o->period_ns > TALLY_RSTAT_PERIOD_MAX)) {
		errno = EINVAL;
		return NULL;
	}
	for (i = 0; o->item_flags && i < o->nr_items; i++)
		if (tally__bad(o->item_flags[i] & ~TALLY_GROUP_ITEM_GAUGE)) {
			errno = EINVAL;
			return NULL;
		}
	{
		size_t words;
		if (tally__bad(tally__rstat_hists_check(o, &words))) {
			errno = EINVAL;
			return NULL;
		}
	}
	return tally__rstat_tree_create(o);
}

/** tally_tree_create - tally_tree_create_opts() with every default:
 * batch 64, urcu-memb, CLOCK_MONOTONIC, period 2 s. NULL, errno. */
static inline struct tally_tree *tally_tree_create(unsigned nr_items)
{
	struct tally_tree_opts o;
	memset(&o, 0, sizeof(o));
	o.nr_items = nr_items;
	return tally_tree_create_opts(&o);
}

/** tally_tree_root - the root group (never destroyed but with the tree);
 * NULL with errno EINVAL for a NULL tree. Wait-free. */
TALLY__INLINE struct tally_group *tally_tree_root(struct tally_tree *t)
{
	if (tally__bad(!t)) {
		errno = EINVAL;
		return NULL;
	}
	return t->tally__root;
}

/** tally_tree_flush_threshold - batch * ncpus: needs_flush(g) is true once
 * g's count exceeds it. 0 for NULL. */
TALLY__INLINE uint64_t tally_tree_flush_threshold(const struct tally_tree *t)
{
	return t ? t->tally__thr.threshold : 0;
}

/** tally_tree_period_ns - the periodic flush period (clock units). 0 for
 * NULL. */
TALLY__INLINE uint64_t tally_tree_period_ns(const struct tally_tree *t)
{
	return t ? t->tally__clock.period_ns : 0;
}

/** tally_tree_group_bytes - the most memory one group of t takes: the
 * struct and 3 words per item (heap, rounded up to TALLY_CACHELINE), per
 * CPU slot a header and 2 words per item (rounded up to 16 bytes) in the
 * per-CPU arena for every possible CPU plus the shared slot, and its share
 * of the dirty bitmaps (a record per slot for 4096 groups, rounded up to a
 * byte). The arena's part is demand-zero: a slot no CPU updated the group
 * on costs nothing resident, so a group costs about the struct plus
 * (header + 16 bytes per item) per CPU that updated it. A group that has
 * been reset also holds its baselines, 2 words per item (not counted
 * here). 0 for NULL. */
static inline size_t tally_tree_group_bytes(const struct tally_tree *t)
{
	size_t chunk, fixed;
	if (!t)
		return 0;
	chunk = t->tally__prev_off + t->tally__nr_items * sizeof(tally_uword);
	chunk = (chunk + 15u) / 16u * 16u;
	fixed = sizeof(struct tally_group) + 3u * t->tally__nr_items * sizeof(tally_uword);
	fixed = (fixed + TALLY_CACHELINE - 1) / TALLY_CACHELINE * TALLY_CACHELINE;
	return fixed + chunk * t->tally__ids.nr_slots +
	       (sizeof(struct tally__rstat_dirty) * t->tally__ids.nr_slots +
		TALLY__RSTAT_BLOCK_IDS - 1) /
		       TALLY__RSTAT_BLOCK_IDS;
}

/** tally_tree_nr_groups - live groups, the root included; 0 for NULL.
 * Takes the flush lock. */
static inline unsigned long tally_tree_nr_groups(struct tally_tree *t)
{
	unsigned long n;
	if (!t)
		return 0;
	pthread_mutex_lock(&t->tally__flush.lock);
	n = t->tally__flush.nr_groups;
	pthread_mutex_unlock(&t->tally__flush.lock);
	return n;
}

/**
 * tally_tree_register_thread - register the calling thread with t's RCU
 * flavor (flavor->register_thread(), e.g. urcu_memb_register_thread()), as
 * every thread that destroys groups, walks children or uses a group
 * another thread may destroy must be.
 *
 * @param t  the tree (its flavor; trees that share a flavor share the
 *           registration: register once per flavor, not per tree)
 * @return 0, or -EINVAL for a NULL t.
 *
 * Calling this rather than liburcu directly lets TALLY_DEBUG builds check
 * the rules (tally/rstat/rcu.h): there, a broken rule aborts with the
 * call named instead of becoming a use-after-free. With urcu-bp
 * (registers by itself) it may be skipped. Pair it with
 * tally_tree_unregister_thread() before the thread exits. Any thread;
 * blocking (liburcu's registry lock).
 */
static inline int tally_tree_register_thread(struct tally_tree *t)
{
	if (tally__bad(!t))
		return -EINVAL;
	t->tally__rcu.flavor->register_thread();
	tally__rcu_note_register(1);
	return 0;
}

/**
 * tally_tree_unregister_thread - undo tally_tree_register_thread(t): the
 * thread leaves t's flavor (flavor->unregister_thread()). Outside any
 * read-side section. NULL: no-op. Blocking (liburcu's registry lock).
 */
static inline void tally_tree_unregister_thread(struct tally_tree *t)
{
	if (tally__bad(!t))
		return;
	t->tally__rcu.flavor->unregister_thread();
	tally__rcu_note_register(-1);
}

/**
 * tally_tree_read_lock - enter a read-side section of t's RCU flavor,
 * annotated for ThreadSanitizer. Groups reached inside stay allocated
 * until the matching tally_tree_read_unlock(), destroyed or not. Nests.
 *
 * @param t  the tree; NULL: no-op
 *
 * The thread must be registered with the flavor (TALLY_DEBUG builds
 * abort, naming this call, when it was not registered through
 * tally_tree_register_thread(); urcu-bp needs no registration).
 * Wait-free with urcu-memb where membarrier() exists (a few loads and
 * stores), else a full fence.
 */
static inline void tally_tree_read_lock(struct tally_tree *t)
{
	if (tally__bad(!t))
		return;
	tally__rcu_need_registered(t, "tally_tree_read_lock");
	t->tally__rcu.flavor->read_lock();
	tally__rcu_note_lock(1);
}

/**
 * tally_tree_read_unlock - leave the read-side section that the matching
 * tally_tree_read_lock(t) entered. NULL: no-op. Wait-free.
 */
static inline void tally_tree_read_unlock(struct tally_tree *t)
{
	if (tally__bad(!t))
		return;
	tally__rcu_note_lock(-1);
	/* Pairs with the acquire in tally__group_free_rcu(). */
	tally__tsan_release(&t->tally__rcu.tsan_token);
	t->tally__rcu.flavor->read_unlock();
}

/* ---- groups ----------------------------------------------------------------- */

/**
 * tally_group_create - a new group under parent, all items 0.
 * Returns it, or NULL with errno EINVAL (NULL parent, parent destroyed),
 * E2BIG (parent at depth TALLY_RSTAT_DEPTH_MAX: the group would be
 * deeper; nothing changed) or ENOMEM. The child is visible to tally_group_for_each_child() at once.
 * Blocking (the flush lock). Any thread; under a parent another thread may
 * destroy, call it inside tally_tree_read_lock().
 */
static inline struct tally_group *tally_group_create(struct tally_group *parent)
{
	if (tally__bad(!parent)) {
		errno = EINVAL;
		return NULL;
	}
	return tally__rstat_group_create(parent, NULL);
}

/**
 * tally_group_destroy - remove g (a group with no children) from its tree.
 * Everything g counted, flushed or not, is handed to its parent: the
 * parent's and its ancestors' hierarchical values include it after their
 * next flush, exactly (deltas of mods that race with the destroy: see
 * "Destroyed groups" above: updates on g while its destroy is under way
 * or done count, for its nearest live ancestor). g leaves every updated
 * tree at once and is freed by call_rcu() after a grace period. O(1)
 * apart from its one flush of g (O(slots * items): no drain, no scan of
 * the dirty bitmaps, whatever the number of groups; see "Destroy" under
 * Memory ordering).
 * Returns 0, -EINVAL (NULL, the root, g already destroyed) or -EBUSY (g has
 * children; nothing changed). Blocking (the flush lock; no grace-period
 * wait). The caller must be registered with the tree's RCU flavor.
 */
static inline int tally_group_destroy(struct tally_group *g)
{
	if (tally__bad(!g))
		return -EINVAL;
	return tally__rstat_group_destroy(g);
}

/**
 * tally_group_destroy_subtree - destroy g and every group below it, in one
 * call: children before parents, each as tally_group_destroy() does, all
 * under one hold of the flush lock (no group can be created under the
 * subtree meanwhile, and no flush sees it half gone).
 *
 * @param g  the top of the subtree (not the root: tally_tree_destroy())
 * @return 0, -EINVAL (NULL g, the root, g already destroyed) or -ENOMEM
 *         (nothing changed).
 *
 * Everything the subtree counted, flushed or not, is handed to g's parent
 * exactly, as for tally_group_destroy() of each group in turn (updates
 * racing with it: "Destroyed groups" above). Each group is freed by
 * call_rcu() after a grace period. O(groups * slots * items).
 * Blocking (the flush lock; no grace-period wait). The caller must be
 * registered with the tree's RCU flavor (TALLY_DEBUG checks).
 */
static inline int tally_group_destroy_subtree(struct tally_group *g)
{
	if (tally__bad(!g))
		return -EINVAL;
	return tally__rstat_group_destroy_subtree(g);
}

/**
 * tally_group_create_named - a new group under parent, all items 0, named
 * name from the start: create and tally_group_set_name() in one call, so
 * that no walker or exporter ever sees the group unnamed.
 *
 * @param parent  the parent group
 * @param name    one path component, as tally_group_set_name() takes:
 *                1..TALLY_GROUP_NAME_MAX bytes of valid UTF-8 without
 *                '/'. Copied.
 * @return the group, or NULL with errno EINVAL (NULL parent or name, a bad
 *         name, parent destroyed), EEXIST (parent has a live child of that
 *         name; a child named by tally_group_set_name() counts too), E2BIG
 *         (parent at TALLY_RSTAT_DEPTH_MAX, as tally_group_create()) or
 *         ENOMEM. Nothing changed on failure.
 *
 * Checked under the flush lock, so two threads that create one name under
 * one parent at once get one group and one EEXIST (create-or-find:
 * tally_group_find_child() after EEXIST, inside a read-side section if
 * the group may be destroyed meanwhile). O(children of parent) for the
 * check. Blocking (the flush lock). Any thread; under a parent another
 * thread may destroy, inside tally_tree_read_lock().
 */
static inline struct tally_group *tally_group_create_named(struct tally_group *parent,
							    const char *name)
{
	char *copy;
	size_t len;
	if (tally__bad(!parent || !name) || !tally__rstat_name_ok(name, &len)) {
		errno = EINVAL;
		return NULL;
	}
	copy = (char *)malloc(len + 1);
	if (!copy) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(copy, name, len + 1);
	return tally__rstat_group_create(parent, copy);
}

/**
 * tally_group_find_child - parent's live child named name.
 *
 * @param parent  the parent group
 * @param name    the name to look for (compared bytewise)
 * @return the child, or NULL with errno EINVAL (NULL parent or name) or
 *         ENOENT (no live child of that name; a destroyed parent has
 *         none). With two children of one name (set by
 *         tally_group_set_name(), which does not refuse), the one created
 *         last.
 *
 * Walks parent's children inside a read-side section of the tree's flavor
 * (the calling thread must be registered: TALLY_DEBUG checks). The group
 * returned stays allocated only while the caller holds a read-side
 * section of its own, if another thread may destroy it: call this inside
 * tally_tree_read_lock() and use the result before the unlock. Children
 * created or destroyed meanwhile may or may not be seen. O(children);
 * lock-free.
 */
static inline struct tally_group *tally_group_find_child(struct tally_group *parent,
							  const char *name)
{
	struct tally_group *c, *found = NULL;
	if (tally__bad(!parent || !name)) {
		errno = EINVAL;
		return NULL;
	}
	tally__rcu_need_registered(parent->tally__tree, "tally_group_find_child");
	tally_tree_read_lock(parent->tally__tree);
	/* Acquire: pairs with the release publish in tally_group_create(). */
	for (c = tally__load_acq(&parent->tally__links.first_child); c;
	     c = tally__load_acq(&c->tally__links.next_sibling)) {
		const char *n = tally_group_name(c);
		if (!tally__load(&c->tally__dead) && n && !strcmp(n, name)) {
			found = c;
			break;
		}
	}
	tally_tree_read_unlock(parent->tally__tree);
	if (!found)
		errno = ENOENT;
	return found;
}

/**
 * tally_group_tryget - take a reference on g unless its destroy has begun:
 * true if taken, false (errno ENOENT) if g is destroyed or being
 * destroyed, or NULL (errno EINVAL). g's memory must be valid: call it
 * inside tally_tree_read_lock() (on a group found there), or holding a
 * reference already.
 *
 * A reference keeps g's memory valid, destroyed or not, until the
 * matching tally_group_put(), with no read-side section held in between:
 * a worker looks a tenant up (tally_group_find_get()), updates it any
 * number of times, sleeps, and puts it, and needs no RCU registration
 * for any of that but the lookup. An update made while holding a
 * reference on a group destroyed meanwhile counts as "Destroyed groups"
 * above says (its nearest live ancestor, exactly once); the group is
 * freed after its last put and a grace period after its destroy,
 * whichever comes last. Every reference must be put before
 * tally_tree_destroy() (which waits for the frees).
 * The kernel's percpu_ref (tally/ref.h): while g is alive a get and a
 * put are each one restartable per-CPU add (the counter add's cost plus
 * a load and compare: bench/bench_rstat.c, group_get_put); the destroy
 * switches g's count to atomic mode (ThreadSanitizer builds: atomic from
 * the start, as TSan cannot see the order membarrier() gives). Wait-free
 * while g is alive; one atomic RMW after.
 */
static inline bool tally_group_tryget(struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return false;
	}
	if (tally__load(&g->tally__dead) || !tally_ref_tryget_live(&g->tally__ref)) {
		errno = ENOENT;
		return false;
	}
	tally__rcu_note_ref(g, 1);
	return true;
}

/**
 * tally_group_get - take another reference on g; the caller holds one
 * (to hand it to another thread, say). NULL: no-op. Wait-free while g is
 * alive; one atomic RMW after its destroy.
 */
static inline void tally_group_get(struct tally_group *g)
{
	if (tally__bad(!g))
		return;
	tally_ref_get(&g->tally__ref);
	tally__rcu_note_ref(g, 1);
}

/**
 * tally_group_put - drop a reference the caller holds (taken by
 * tally_group_tryget(), tally_group_get() or tally_group_find_get(), on
 * this thread or handed over). After it, g may be freed at any moment if
 * it is destroyed: the put that drops the last reference of a destroyed
 * group whose grace period has passed frees it (taking the flush lock
 * once; wait-free otherwise). TALLY_DEBUG builds abort on a later call
 * on a destroyed g by a thread that holds neither a reference nor a
 * read-side section. NULL: no-op.
 */
static inline void tally_group_put(struct tally_group *g)
{
	if (tally__bad(!g))
		return;
	tally__rcu_note_ref(g, -1);
	/* For ThreadSanitizer, which sees no order through membarrier() (the
	 * kill's, after a per-CPU put): pairs with the acquire before the
	 * free (rstat/lifetime.h). */
	tally__tsan_release(&g->tally__ref);
	tally_ref_put(&g->tally__ref);
}

/**
 * tally_group_find_get - tally_group_find_child() and tally_group_tryget()
 * in one read-side section: parent's live child named name with a
 * reference taken, to use without a section until tally_group_put().
 * NULL with errno EINVAL (NULL parent or name) or ENOENT (no live child
 * of that name, or its destroy began). The thread must be registered with
 * the tree's RCU flavor (TALLY_DEBUG checks); parent's memory must be
 * valid (a group that is never destroyed, such as the root, a reference,
 * or a read-side section). O(children); lock-free.
 */
static inline struct tally_group *tally_group_find_get(struct tally_group *parent,
							const char *name)
{
	struct tally_group *c;
	int err = 0;
	if (tally__bad(!parent || !name)) {
		errno = EINVAL;
		return NULL;
	}
	tally_tree_read_lock(parent->tally__tree);
	c = tally_group_find_child(parent, name);
	if (!c || !tally_group_tryget(c)) {
		err = c ? ENOENT : errno;
		c = NULL;
	}
	tally_tree_read_unlock(parent->tally__tree);
	if (!c)
		errno = err;
	return c;
}

/** tally_group_parent - g's parent; NULL for the root (errno untouched),
 * NULL with errno EINVAL for a NULL g. Wait-free. */
TALLY__INLINE struct tally_group *tally_group_parent(const struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return NULL;
	}
	return g->tally__links.parent;
}

/**
 * tally_group_serial - g's creation number in its tree: 0 for the root,
 * then 1, 2, ... in the order tally_group_create() made the groups. Never
 * reused while the tree lives (a group created where a destroyed one was,
 * at its address and under its name, has another serial), so it tells
 * groups apart where a pointer cannot: exporters key their per-group
 * state by it. 0 for NULL g.
 * Wait-free, any thread (set before the group is published, never
 * changed); on a group another thread may destroy, inside
 * tally_tree_read_lock().
 */
TALLY__INLINE uint64_t tally_group_serial(const struct tally_group *g)
{
	return g ? g->tally__serial : 0;
}

/** tally_group_tree - the tree g belongs to; NULL with errno EINVAL for a
 * NULL g. Wait-free. */
TALLY__INLINE struct tally_tree *tally_group_tree(const struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return NULL;
	}
	return g->tally__tree;
}

/**
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
	tally__rcu_need_registered(g->tally__tree, "tally_group_for_each_child");
	tally_tree_read_lock(g->tally__tree);
	/* Acquire: pairs with the release publish in tally_group_create(). */
	for (c = tally__load_acq(&g->tally__links.first_child); c;
	     c = tally__load_acq(&c->tally__links.next_sibling)) {
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
 * The update's threshold count (tally/rstat/threshold.h), once the slot-s
 * add and its dirty marking are done and tally__rstat_count_settled()
 * said no at generation gen.
 */
static inline void tally__rstat_mod_count(struct tally_group *g, unsigned s, tally_sword delta,
					  unsigned long gen)
{
	const struct tally_tree *t = g->tally__tree;
	/* |delta| without overflow; capped at threshold + 1, which already
	 * makes any group flushable (and at 2^38, so a slot's count, below
	 * batch + cap, fits its 40 bits). */
	uint64_t mag = delta < 0 ? (uint64_t)0 - (uint64_t)(int64_t)delta : (uint64_t)delta;
	if (mag > t->tally__thr.threshold + 1)
		mag = t->tally__thr.threshold + 1;
	if (mag > (1ull << 38))
		mag = 1ull << 38;
	tally__rstat_count(t, g, s, mag, gen);
}

/*
 * tally_group_mod() without the mark half: the add (rseq or atomic, on
 * any chunk), BARRIER_U, the shared half's marking, the threshold count.
 * g alive, item in range, delta != 0.
 */
static inline void tally__rstat_mod_fenced(struct tally_group *g, unsigned item, tally_sword delta)
{
	struct tally_tree *t = g->tally__tree;
	unsigned long gen;
	unsigned s;
	tally__pcpu_add(&g->tally__pcpu, TALLY__RSTAT_WORD_OFF + (size_t)item * sizeof(tally_uword),
			(tally_uword)delta, &s);
	/* BARRIER_U: the word add before the dirty-bit loads. */
	tally__rstat_barrier_update(t);
	tally__rstat_mark_dirty(g, s);
	gen = tally__rstat_gen(t);
	if (tally__likely(tally__rstat_count_settled(g, s, gen)))
		return;
	tally__rstat_mod_count(g, s, delta, gen);
}

/*
 * tally_group_mod() on a destroyed g (inside a read-side section that
 * holds it): the update of a live group, on g's own slot word and dirty
 * bits (the fenced marking: g's fast path is closed), whose delta a
 * drain or g's deferred free hands to the nearest live ancestor (see
 * "Destroy" under Memory ordering); its threshold count goes to that
 * ancestor, whose flush will show it (g has no flush of its own any
 * more). The ancestor walk reads parent pointers, fixed at creation, and
 * dead flags: every ancestor of g stays allocated while g is (each child
 * holds a reference on its parent). An ancestor destroyed meanwhile gets
 * the count for nothing, as the count of any update racing with a
 * destroy.
 */
static inline void tally__rstat_mod_dying(struct tally_group *g, unsigned item, tally_sword delta)
{
	struct tally_tree *t = g->tally__tree;
	struct tally_group *a;
	unsigned long gen;
	unsigned s;
	tally__pcpu_add(&g->tally__pcpu, TALLY__RSTAT_WORD_OFF + (size_t)item * sizeof(tally_uword),
			(tally_uword)delta, &s);
	/* BARRIER_U: the word add before the dirty-bit loads. */
	tally__rstat_barrier_update(t);
	tally__rstat_mark_dirty(g, s);
	a = tally__rstat_live_ancestor(g);
	gen = tally__rstat_gen(t);
	if (tally__rstat_count_settled(a, s, gen))
		return;
	tally__rstat_mod_count(a, s, delta, gen);
}

/*
 * An update of a valid item that the fast path does not take: g destroyed
 * (the dying update; TALLY_DEBUG builds abort outside a read-side section
 * and without a reference), or a live g whose chunk the mark path cannot
 * reach (fast_items 0: the fenced update).
 */
static inline void tally__rstat_mod_other(struct tally_group *g, unsigned item, tally_sword delta)
{
	if (tally__unlikely(tally__load(&g->tally__dead))) {
		tally__rcu_dead_use(g, "tally_group_mod");
		if (delta)
			tally__rstat_mod_dying(g, item, delta);
		return;
	}
	if (delta)
		tally__rstat_mod_fenced(g, item, delta);
}

/*
 * tally_group_mod() for what its first check turns away: NULL g or a bad
 * item (-EINVAL, an assertion in TALLY_DEBUG builds; a histogram's words,
 * past the tree's items, are not the caller's), or what
 * tally__rstat_mod_other() takes.
 */
static inline int tally__rstat_mod_slow(struct tally_group *g, unsigned item, tally_sword delta)
{
	if (tally__bad(!g || item >= g->tally__tree->tally__nr_user))
		return -EINVAL;
	tally__rstat_mod_other(g, item, delta);
	return 0;
}

/*
 * The update of word item (an item, or a histogram's word) of a live g
 * that the mark path reaches (fast_items not 0), delta != 0: the rseq add
 * and marks where there are, else the fenced update.
 */
TALLY__INLINE void tally__rstat_mod_fast(struct tally_group *g, unsigned item, tally_sword delta)
{
#if TALLY__HAVE_RSEQ
	/* The add and the dirty marks, no barrier (updated.h). */
	unsigned char *base = g->tally__pcpu.base;
	size_t soff;
	unsigned long gen;
	if (tally__likely(tally__rstat_rseq_mod(g, base + (size_t)item * sizeof(tally_uword),
						 (tally_uword)delta, &soff))) {
		/* tally__rstat_count_settled(), at the slot's chunk (base +
		 * soff: its regions are one region apart) */
		gen = tally__rstat_gen(g->tally__tree);
		if (tally__unlikely(tally__load(&((struct tally__rstat_cpu *)(void *)(base + soff))
							 ->anc_gen) != gen))
			tally__rstat_mod_count(g, (unsigned)(soff >> TALLY_PCPU_REGION_SHIFT), delta,
					       gen);
		return;
	}
#endif
	tally__rstat_mod_fenced(g, item, delta);
}

/**
 * tally_group_mod - add delta to item of g on this CPU.
 * Returns 0, or -EINVAL (NULL g, item out of range; nothing changes).
 * Any thread, beside every call but tally_tree_destroy (beside destroy of
 * g only inside a read-side section). No lock, no system call, no retry
 * loop: wait-free.
 * Ordering: a flush that starts after the call returns and covers g
 * reflects delta (see Memory ordering). On a g whose destroy is under way
 * or done (inside a read-side section that holds it) the update counts
 * too, returns 0, and its delta reaches g's nearest live ancestor exactly
 * once: a flush of that ancestor that starts after the call returned
 * shows it ("Destroyed groups" above).
 */
#if TALLY_EXTERN /* a prototype for the one definition (TALLY_IMPLEMENTATION) */
TALLY__API int tally_group_mod(struct tally_group *g, unsigned item, tally_sword delta);
#endif
#if TALLY__API_BODY
TALLY__API int tally_group_mod(struct tally_group *g, unsigned item, tally_sword delta)
{
	/* One compare turns away a bad item, a destroyed g and a g the mark
	 * path cannot reach (fast_items 0 for both). */
	if (tally__unlikely(!g || item >= tally__load(&g->tally__fast_items)))
		return tally__rstat_mod_slow(g, item, delta);
	if (delta)
		tally__rstat_mod_fast(g, item, delta);
	return 0;
}
#endif

/* ---- histograms per group ------------------------------------------------ */

/**
 * tally_group_record - record value v into histogram h of g
 * (tally_tree_opts.hists): the value's bucket gains 1 and the sum v, as
 * two updates of g, so everything tally_group_mod() says holds for each:
 * any thread, wait-free, no lock; a flush that starts after the call
 * returned and covers g reflects it; on a group being destroyed (held by
 * a read-side section or a reference) it counts for the nearest live
 * ancestor. g's histogram h is, after a flush, the histogram of every
 * value recorded into g's subtree (tally_group_hist_snapshot()), as an
 * item is the sum of its subtree's updates.
 * Returns 0, or -EINVAL (NULL g, h out of range, v < 0: nothing recorded).
 * Cost: the bucket math of tally_hist_record() and two tally_group_mod()
 * fast paths (bench/bench_rstat.c, group_record). Memory: per group, 3
 * words per bucket position and 3 for the sum (state, local, pending),
 * and per CPU slot that recorded into it 2 words each (the slot's word and
 * its flush snapshot), in the arena's demand-zero pages: a CPU that never
 * recorded into g costs nothing resident; a flush visits every word of
 * a group a slot updated.
 */
static inline int tally_group_record(struct tally_group *g, unsigned h, int64_t v)
{
	const struct tally__rstat_hist *x;
	unsigned w;
	if (tally__bad(!g || h >= g->tally__tree->tally__nr_hists || v < 0))
		return -EINVAL;
	x = &g->tally__tree->tally__hists[h];
	w = x->first + tally__hist_pos(&x->l, (uint64_t)v);
	if (tally__unlikely(!tally__load(&g->tally__fast_items))) {
		tally__rstat_mod_other(g, w, 1);
		tally__rstat_mod_other(g, x->first + x->l.nr, (tally_sword)v);
		return 0;
	}
	tally__rstat_mod_fast(g, w, 1);
	if (v)
		tally__rstat_mod_fast(g, x->first + x->l.nr, (tally_sword)v);
	return 0;
}

/** tally_tree_nr_hists - how many histograms t's groups have (0 for NULL). */
static inline unsigned tally_tree_nr_hists(const struct tally_tree *t)
{
	return t ? t->tally__nr_hists : 0u;
}

/**
 * tally_group_hist_snap_init - set s up for histogram h of t's groups
 * (then tally_hist_quantile(), _merge(), _delta(), bucket_range() and
 * tally_hist_snap_destroy() take it as any snapshot).
 * Returns 0, -EINVAL (NULL s or t, h out of range) or -ENOMEM (s zeroed).
 */
static inline int tally_group_hist_snap_init(struct tally_hist_snap *s, const struct tally_tree *t,
					     unsigned h)
{
	if (tally__bad(!s || !t || h >= t->tally__nr_hists))
		return -EINVAL;
	return tally__hist_snap_init_layout(s, &t->tally__hists[h].l);
}

/* The checks of the snapshot calls; 0 or -EINVAL. */
static inline int tally__group_hist_args(const struct tally_group *g, unsigned h,
					 const struct tally_hist_snap *s)
{
	if (tally__bad(!g || !s || !s->counts || h >= g->tally__tree->tally__nr_hists ||
		       !tally__hist_layout_eq(&g->tally__tree->tally__hists[h].l, &s->tally__l)))
		return -EINVAL;
	tally__rcu_check_alive(g, "tally_group_hist_snapshot");
	return 0;
}

/**
 * tally_group_hist_snapshot - histogram h of g's subtree, as of g's last
 * flush, since g's last reset (tally_group_reset(): histograms are
 * counters, a reset starts them from 0), into s (tally_group_hist_snap_init()).
 * Flush first (tally_group_flush_force()) for every record that returned
 * before. One flush's values (read under the flush lock): count is the sum
 * of the buckets; a record that raced with that flush may have its bucket
 * in it and its value not yet in sum, or the reverse, until the next
 * flush (the two are separate updates; tally_hist's snapshots are whole
 * records, at a cost the group path does not pay).
 * On a 32-bit-word build (TALLY_WORD_BITS 32) each bucket and the sum
 * are counted modulo 2^32, as items are (exporters widen them).
 * Returns 0 or -EINVAL (NULL g or s, h out of range, s sized for other
 * buckets; s untouched). Blocking (the flush lock); a destroyed g reads
 * as its destroy left it.
 */
static inline int tally_group_hist_snapshot(struct tally_group *g, unsigned h,
					    struct tally_hist_snap *s)
{
	if (tally__group_hist_args(g, h, s))
		return -EINVAL;
	tally__rstat_hist_read(g, &g->tally__tree->tally__hists[h], s, 0, 1);
	return 0;
}

/**
 * tally_group_hist_snapshot_raw - as tally_group_hist_snapshot(), but all
 * records ever (resets do not move it: for exporters), hierarchical, or
 * g's own records alone when local is true.
 */
static inline int tally_group_hist_snapshot_raw(struct tally_group *g, unsigned h,
						struct tally_hist_snap *s, bool local)
{
	if (tally__group_hist_args(g, h, s))
		return -EINVAL;
	tally__rstat_hist_read(g, &g->tally__tree->tally__hists[h], s, local, 0);
	return 0;
}

/** tally_group_needs_flush - g's threshold count exceeds batch * ncpus.
 * false for NULL or a destroyed g. Wait-free. */
TALLY__INLINE bool tally_group_needs_flush(const struct tally_group *g)
{
	if (tally__bad(!g) || tally__load(&g->tally__dead))
		return false;
	return tally__rstat_count_over(g);
}

/**
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
	if (tally__load(&g->tally__dead)) {
		errno = -tally__rcu_dead(g, "tally_group_flush");
		return;
	}
	if (tally_group_needs_flush(g))
		tally__rstat_flush(g);
}

/** tally_group_flush_force - flush g's subtree whatever its count
 * (do_flush_stats()). NULL or destroyed g: errno EINVAL, nothing done. */
static inline void tally_group_flush_force(struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return;
	}
	if (tally__load(&g->tally__dead)) {
		errno = -tally__rcu_dead(g, "tally_group_flush_force");
		return;
	}
	tally__rstat_flush(g);
}

/**
 * tally_group_flush_ratelimited - tally_group_flush(g), but only when the
 * root was last flushed more than 2 periods ago (time_after(now, last +
 * 2 * period): the periodic flusher is a full period late). NULL g: errno
 * EINVAL. Wait-free when it does nothing.
 */
static inline void tally_group_flush_ratelimited(struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return;
	}
	if (tally__rstat_ratelimit_passed(g->tally__tree))
		tally_group_flush(g);
}

/** tally_tree_flush_periodic - a forced flush of the root (the periodic
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

/**
 * tally_group_reset - start the since-reset values of g and of every group
 * below it from 0, with one cut, as tally_vec_reset() does for a vector.
 *
 * @param g  the top of the subtree (the root: the whole tree)
 * @return 0, -EINVAL (NULL g, g destroyed) or -ENOMEM (nothing changed).
 *
 * Under the flush lock: a flush of g's subtree, then every group's
 * hierarchical and local values become its baselines, which
 * tally_group_read(), read_positive() and read_local() subtract. Items
 * flagged TALLY_GROUP_ITEM_GAUGE (tally_tree_opts.item_flags) are left
 * alone. The raw values (tally_group_read_monotonic(), and the
 * hierarchical and local rows that tally_export_add_tree() exports: so an
 * exported counter never goes back) never move, and the ancestors of g
 * keep theirs: what the subtree counted before the reset stays counted
 * above it.
 *
 * Contract, with X the set of updates in the cut: X includes every update
 * completed before the call and none that started after it returned (the
 * flush's ordering, rstat.h's Memory ordering). An update racing with the
 * reset is either in X (in the baseline) or, once a later flush covers
 * it, in every later since-reset value: never lost, never counted twice.
 * So at any quiescent point, after a flush, baseline + since-reset value
 * = raw value for every group and item, and the values of the subtree's
 * groups agree with each other as they did (a parent's since-reset value
 * is its local's plus its children's). A reader racing with the reset
 * sees, per item, the value from before it or one since it, never a mix
 * (a growing item's since-reset value is never negative).
 * Any thread, beside every call but tally_tree_destroy(); on a group
 * another thread may destroy, inside tally_tree_read_lock(). Blocking
 * (the flush lock). Allocates a group's baselines (2 words per item) at
 * its first reset.
 */
static inline int tally_group_reset(struct tally_group *g)
{
	if (tally__bad(!g))
		return -EINVAL;
	return tally__rstat_reset(g);
}

/**
 * tally_tree_reset - tally_group_reset() of t's root: the whole tree.
 * @return 0, -EINVAL (NULL t) or -ENOMEM (nothing changed).
 */
static inline int tally_tree_reset(struct tally_tree *t)
{
	if (tally__bad(!t))
		return -EINVAL;
	return tally__rstat_reset(t->tally__root);
}

/**
 * Readers: the values as of the last flush that covered g. O(1), relaxed
 * loads, never blocked by a flush; any thread. A NULL g or an item out of
 * range reads 0.
 *   tally_group_read           hierarchical since g's last reset, signed
 *   tally_group_read_positive  hierarchical since g's last reset, negative
 *                              as 0 (for gauges)
 *   tally_group_read_monotonic hierarchical raw word + TALLY_MONOTONIC_BIAS,
 *                              never moved by a reset
 *                              (lruvec_page_state_monotonic(): for event
 *                              counters sampled and subtracted with
 *                              tally_delta(), right across a wrap)
 *   tally_group_read_local     g alone since its last reset, signed
 * Without a reset "since the last reset" is "ever". A reader racing with
 * a reset of g sees, per item, the value before it or one since it
 * (tally_group_reset()).
 */
TALLY__INLINE tally_sword tally_group_read(const struct tally_group *g, unsigned item)
{
	tally_uword base;
	if (tally__bad(!g || item >= g->tally__nr_items))
		return 0;
	tally__rcu_check_alive(g, "tally_group_read");
	base = tally__rstat_baseline(g, item);
	return tally__to_signed(tally__load(&g->tally__state[item]) - base);
}

/** tally_group_read_positive - tally_group_read(), negative values as 0. */
TALLY__INLINE tally_uword tally_group_read_positive(const struct tally_group *g, unsigned item)
{
	return tally_clamp(tally_group_read(g, item));
}

/** tally_group_read_monotonic - the raw unsigned value plus
 * TALLY_MONOTONIC_BIAS, for event counters sampled and subtracted with
 * tally_delta() (see tally_group_read). */
TALLY__INLINE tally_uword tally_group_read_monotonic(const struct tally_group *g, unsigned item)
{
	if (tally__bad(!g || item >= g->tally__nr_items))
		return 0;
	tally__rcu_check_alive(g, "tally_group_read_monotonic");
	return (tally_uword)(tally__load(&g->tally__state[item]) + TALLY_MONOTONIC_BIAS);
}

/** tally_group_read_local - g's own value, without its descendants, signed
 * (see tally_group_read). */
TALLY__INLINE tally_sword tally_group_read_local(const struct tally_group *g, unsigned item)
{
	tally_uword base;
	if (tally__bad(!g || item >= g->tally__nr_items))
		return 0;
	tally__rcu_check_alive(g, "tally_group_read_local");
	base = tally__rstat_baseline(g, g->tally__nr_items + item);
	return tally__to_signed(tally__load(&g->tally__local[item]) - base);
}

/* ---- the periodic flusher thread ---------------------------------------- */

/**
 * tally_tree_start_flusher - start a thread that runs
 * tally_tree_flush_periodic(t) every period_ns of real time (0: the tree's
 * period). Returns 0, -EINVAL (NULL t, period > TALLY_RSTAT_PERIOD_MAX),
 * -EBUSY (one is running or being stopped) or the pthread_create() error,
 * negated. The thread needs no RCU registration. Blocking.
 */
static inline int tally_tree_start_flusher(struct tally_tree *t, uint64_t period_ns)
{
	if (tally__bad(!t || period_ns > TALLY_RSTAT_PERIOD_MAX))
		return -EINVAL;
	return tally__rstat_flusher_start(t, period_ns ? period_ns : t->tally__clock.period_ns);
}

/** tally_tree_stop_flusher - stop the flusher thread and wait for it (a
 * flush in progress completes). Any number of threads may call it at once:
 * each returns once the thread has been joined. No-op if none runs or t is
 * NULL. Not from the flusher thread itself. Blocking. */
static inline void tally_tree_stop_flusher(struct tally_tree *t)
{
	if (!t)
		return;
	tally__rstat_flusher_stop(t);
}

/**
 * tally_tree_destroy - stop the flusher, wait for the deferred frees of
 * destroyed groups (their grace periods), free every group and t. NULL is
 * a no-op. Nothing else may use t or its groups beside or after it. Not
 * inside a read-side section, nor from a call_rcu callback; with urcu-qsbr,
 * from a thread that is offline or not registered. Blocking.
 */
static inline void tally_tree_destroy(struct tally_tree *t)
{
	if (!t)
		return;
	tally__rstat_tree_destroy(t);
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_RSTAT_H */
