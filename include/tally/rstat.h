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
 * An update adds to its CPU's word for the item and marks the group dirty
 * there; a flush of g carries the words' deltas up g's subtree into each
 * group's hierarchical and own values, which readers load (modular in
 * 2^TALLY_WORD_BITS); tally_group_flush(g) flushes only past g's
 * threshold ("mm: memcg: make stats flushing threshold per-memcg", Yosry
 * Ahmed, 2023). Here: the public calls and their contracts; the machinery
 * is in tally/rstat/, split as the kernel splits it (each part refuses to
 * be included on its own):
 *   types.h      the two structs, a private struct per concern
 *   updated.h    dirty bitmaps, updated trees, ids, the update/flush
 *                barrier pair (css_rstat_updated())
 *   threshold.h  per-group flush thresholds (memcg_rstat_updated())
 *   flusher.h    clock, ratelimit, flusher (flush_memcg_stats_dwork())
 *   flush.h      the flush walk, the hand-over of destroyed groups'
 *                counts (css_rstat_flush(), mem_cgroup_css_rstat_flush())
 *   lifetime.h   creating, destroying, deferred frees (css_free_rwork_fn())
 *   lookup.h     root, parent, child walks, lookups by name, references
 *   mod.h        the update paths of tally_group_mod() and _record()
 *   hist.h       per-group histograms, as words after the items
 *   names.h      names: tally_group_name(), _set_name(), TALLY_GROUP_NAME_MAX,
 *                tally_tree_set_item_names(), tally_tree_item_name()
 *   reset.h      subtree resets: the baselines since-reset readers subtract
 *   rcu.h        the RCU rules, checked in TALLY_DEBUG builds
 *   correctness.h  the model in full, why each promise here holds
 *
 * ---- RCU: which threads must do what (default flavor: urcu-memb) -------
 * tally_group_destroy() flushes the group into its parent, unlinks it and
 * frees it with liburcu's call_rcu() after a grace period. A tree's flavor
 * is a `const struct rcu_flavor_struct *` (tally_tree_opts); the default,
 * urcu-memb (`urcu_memb_flavor`), is liburcu-memb, which the tally::rstat
 * CMake target and pkg-config's tally-rstat link (tally::tally and
 * tally.pc do not). With it:
 *   - Threads that only update, flush or read groups they hold (their own,
 *     or ones no other thread can destroy meanwhile) need nothing: no
 *     registration, no RCU calls. The periodic flusher thread needs none.
 *   - A thread that calls tally_group_destroy() must be registered with
 *     the flavor (urcu_memb_register_thread(), or flavor->register_thread())
 *     because call_rcu() requires it; for urcu-qsbr it must also be online.
 *     tally_group_for_each_child() needs a registered thread inside
 *     tally_tree_read_lock()/_unlock().
 *   - A thread that uses a group another thread may destroy meanwhile
 *     holds it: by a reference (tally_group_find_get() or _tryget(), then
 *     tally_group_put(): no section between, the way for a request that
 *     updates a tenant and may sleep; only the lookup needs registering)
 *     or inside a read-side section (a registered thread). Either way a
 *     destroyed group's memory stays valid and every call on it does what
 *     "Destroyed groups" says; it is freed after its last put and a grace
 *     period after its destroy, whichever is last (tests/formal/ref_free.pml).
 *   - tally_tree_destroy() waits for the deferred frees: call it outside
 *     read-side sections and not from a call_rcu callback (with urcu-qsbr:
 *     from an offline or unregistered thread).
 *   - Unregister (urcu_memb_unregister_thread()) before a registered thread
 *     exits. urcu-memb uses the membarrier() system call where the kernel
 *     has it, and falls back to memory barriers in the read lock otherwise.
 *   - Registering (tally_tree_register_thread()) and locking through
 *     tally's calls lets TALLY_DEBUG builds abort, naming the call, on an
 *     unregistered thread that locks, destroys or walks, or a call on a
 *     destroyed group not held (a use-after-free once the grace period ends).
 *   - urcu-bp (TALLY_URCU_BP 1, config.h; link liburcu-bp: CMake
 *     tally::rstat_bp, pkg-config tally-rstat-bp) registers each thread at
 *     its first read lock: no registering (read-side sections still); its
 *     read lock costs more than urcu-memb's (bench/RESULTS.md). Another
 *     flavor: TALLY_URCU_HEADER and TALLY_URCU_DEFAULT_FLAVOR (config.h).
 *
 * ---- Destroyed groups (held by a reference or a read-side section) -------
 *   tally_group_mod    0: counted as on a live group (the kernel keeps
 *                      charging a dying cgroup), for the nearest live
 *                      ancestor, exactly once, so a gauge raised before
 *                      the destroy and lowered after it comes back to 0;
 *                      not in the group's own values, fixed by the destroy
 *   create, create_named                      NULL, errno EINVAL
 *   destroy, destroy_subtree, reset, set_name -EINVAL
 *   find_child         NULL, errno ENOENT (no live children)
 *   flush, flush_force, flush_ratelimited     errno EINVAL, nothing done
 *                      (ratelimited: only when it would flush)
 *   needs_flush        false
 *   read, read_positive, read_monotonic, read_local: its values as of the
 *                      destroy
 *   parent, tree       as before (the parent, maybe destroyed, stays valid)
 *   for_each_child     0, fn never called (a destroyed group has no children)
 * Unheld, any call on a destroyed group is a use-after-free waiting to
 * happen; TALLY_DEBUG builds abort instead, naming the call.
 *
 * ---- Concurrency contract ------------------------------------------------
 *   call                                beside                progress
 *   tally_group_mod                     all but tree_destroy; wait-free
 *                                       a destroy of that group
 *                                       only holding it (a reference
 *                                       or a read-side section)
 *   read, read_positive, read_monotonic all but tree_destroy  wait-free
 *   read_local, needs_flush
 *   flush, flush_force,                 all but tree_destroy  blocking (flush
 *   flush_ratelimited, flush_periodic               lock; membarrier() [1])
 *   group_create, _create_named,        all but tree_destroy  blocking (flush
 *   group_destroy, _destroy_subtree,             lock); destroy defers free
 *   group_reset, tree_reset
 *   find_child, for_each_child          all but tree_destroy  lock-free (RCU)
 *   tree_register_thread, _unregister   everything            blocking
 *                                                  (liburcu's registry lock)
 *   start_flusher, stop_flusher         all but tree_destroy  blocking
 *   tree_create, tree_destroy           nothing on that tree  blocking
 * [1] only in trees created with TALLY_RSTAT_MEMBARRIER 1 (config.h) where
 *     the kernel offers private expedited membarrier(); by default a flush
 *     makes no system call but the lock's.
 *
 * ---- Memory ordering -----------------------------------------------------
 * A flush that starts after tally_group_mod() returned (happens-after it)
 * and covers the group reflects that update, whatever other threads are
 * doing (preempted or stopped in their own updates included). Readers see
 * the values of the group's last completed flush (relaxed loads: a reader
 * racing with a flush may see some items of it before others). A flush
 * serializes with create/destroy and other flushes on the same tree.
 * Updates on a group being destroyed reach its nearest live ancestor
 * exactly once (drains and the deferred free hand them over). Why, for the
 * dirty bitmaps' shared half (its barrier pair) and mark half (x86_64 with
 * rseq, no barrier), the thresholds and the destroy, and each step's
 * cost: tally/rstat/correctness.h; SPIN models tests/formal/bitmap.pml,
 * dying.pml, ref_free.pml.
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
#include TALLY_URCU_HEADER /* the liburcu flavor (config.h) */
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
/** Deepest group a tree holds: the root is at depth 0, a group one below
 * its parent; tally_group_create() refuses a deeper one with errno E2BIG.
 * An update counts toward the thresholds of its group and its ancestors
 * (memcg_rstat_updated()), so it touches at most TALLY_RSTAT_DEPTH_MAX + 1
 * groups; unbounded, a chain of n groups with one update each costs
 * O(n^2) (20,000 deep: 3.7 s). */
#define TALLY_RSTAT_DEPTH_MAX 1024u

/* struct tally_tree, struct tally_group: opaque (tally/rstat/types.h). */
#define TALLY__RSTAT_INSIDE 1
#include <tally/rstat/types.h>

/** Options for tally_tree_create_opts(). Zero-initialise and set what you
 * need: every zero field means its default. */
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

/** The precision of a group histogram made with precision 0: 2^3 buckets
 * per power of two, at most 2^-4 (6.25%) relative quantile error; the
 * default range (1 ns .. 1 h) then has 319 bucket positions, 320 words
 * per group with the sum (see tally_group_record() for what they cost). */
#define TALLY_GROUP_HIST_PRECISION_DEFAULT 3u

/** TALLY_GROUP_ITEM_GAUGE - tally_tree_opts.item_flags: the item is a
 * gauge, a level that goes up and down (bytes in use, open connections),
 * which tally_group_reset() leaves alone (it would make the level wrong);
 * else an event counter, which a reset starts from 0 again. */
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
#include <tally/rstat/mod.h>
#include <tally/rstat/record.h>
#include <tally/rstat/lookup.h>
#undef TALLY__RSTAT_INSIDE

/** tally_tree_create_opts - a tree with only its root group, all items 0;
 * its creation time counts as the last root flush. Returns it, or NULL
 * with errno EINVAL (NULL opts, nr_items, batch or period out of range,
 * an unknown item flag) or ENOMEM. With TALLY_RSTAT_MEMBARRIER 1
 * (config.h; default 0) the first call in a process (per translation
 * unit) registers it for membarrier() (Memory ordering), and the tree
 * keeps the answer; by default no system call: updates and flushes pair
 * full fences. Blocking; touches no other tree. */
static inline struct tally_tree *tally_tree_create_opts(const struct tally_tree_opts *o)
{
	return tally__rstat_tree_create_opts(o);
}

/** tally_tree_create - tally_tree_create_opts() with every default:
 * batch 64, urcu-memb, CLOCK_MONOTONIC, period 2 s. NULL, errno. */
static inline struct tally_tree *tally_tree_create(unsigned nr_items)
{
	return tally__rstat_tree_create_nr(nr_items);
}

/** tally_tree_root - the root group (never destroyed but with the tree);
 * NULL with errno EINVAL for a NULL tree. Wait-free. */
TALLY__INLINE struct tally_group *tally_tree_root(struct tally_tree *t)
{
	return tally__rstat_root(t);
}

/** tally_tree_flush_threshold - batch * ncpus: needs_flush(g) is true once
 * g's count exceeds it. 0 for NULL. */
TALLY__INLINE uint64_t tally_tree_flush_threshold(const struct tally_tree *t)
{
	return t ? t->tally__thr.threshold : 0;
}

/** tally_tree_period_ns - the periodic flush period (clock units); NULL: 0. */
TALLY__INLINE uint64_t tally_tree_period_ns(const struct tally_tree *t)
{
	return t ? t->tally__clock.period_ns : 0;
}

/** tally_tree_group_bytes - the most memory one group of t takes: the
 * struct and 3 words per item on the heap, a header and 2 words per item
 * per CPU slot (all possible CPUs and the shared slot) in the per-CPU
 * arena, and its share of the dirty bitmaps (roundings: rstat/lifetime.h).
 * The arena is demand-zero: a group costs about the struct plus (header +
 * 16 bytes per item) per CPU that updated it; a reset one's baselines (2
 * words per item) come on top. 0 for NULL. */
static inline size_t tally_tree_group_bytes(const struct tally_tree *t)
{
	return tally__rstat_group_bytes(t);
}

/** tally_tree_nr_groups - live groups, the root included; 0 for NULL.
 * Takes the flush lock. */
static inline unsigned long tally_tree_nr_groups(struct tally_tree *t)
{
	return tally__rstat_nr_groups(t);
}

/** tally_tree_register_thread - register the calling thread with t's RCU
 * flavor (flavor->register_thread(), e.g. urcu_memb_register_thread()), as
 * the RCU rules above ask, once per flavor (trees that share one share
 * it). 0, or -EINVAL for a NULL t. Through this call TALLY_DEBUG builds
 * check the rules (rstat/rcu.h); urcu-bp needs none. Unregister before
 * the thread exits. Any thread; blocking (liburcu's registry lock). */
static inline int tally_tree_register_thread(struct tally_tree *t)
{
	return tally__rstat_register_thread(t);
}

/** tally_tree_unregister_thread - undo tally_tree_register_thread(t): the
 * thread leaves t's flavor (flavor->unregister_thread()). Outside any
 * read-side section. NULL: no-op. Blocking (liburcu's registry lock). */
static inline void tally_tree_unregister_thread(struct tally_tree *t)
{
	tally__rstat_unregister_thread(t);
}

/** tally_tree_read_lock - enter a read-side section of t's RCU flavor
 * (annotated for ThreadSanitizer; nests; NULL t: no-op): groups reached
 * inside stay allocated, destroyed or not, until the matching unlock.
 * Registered threads only (TALLY_DEBUG aborts, naming this call; urcu-bp
 * needs none). Wait-free with urcu-memb where membarrier() exists (a few
 * loads and stores), else a full fence. */
static inline void tally_tree_read_lock(struct tally_tree *t)
{
	tally__rstat_read_lock(t);
}

/** tally_tree_read_unlock - leave the read-side section that the matching
 * tally_tree_read_lock(t) entered. NULL: no-op. Wait-free. */
static inline void tally_tree_read_unlock(struct tally_tree *t)
{
	tally__rstat_read_unlock(t);
}

/** tally_group_create - a new group under parent, all items 0, seen by
 * tally_group_for_each_child() at once. NULL with errno EINVAL (NULL or
 * destroyed parent), E2BIG (parent at depth TALLY_RSTAT_DEPTH_MAX; nothing
 * changed) or ENOMEM. Blocking (the flush lock). Any thread; under a
 * parent another thread may destroy, inside tally_tree_read_lock(). */
static inline struct tally_group *tally_group_create(struct tally_group *parent)
{
	return tally__rstat_create(parent);
}

/** tally_group_create_named - tally_group_create() and tally_group_set_name()
 * in one call: no walker or exporter sees the group unnamed (name:
 * 1..TALLY_GROUP_NAME_MAX bytes of valid UTF-8 without '/', copied). NULL
 * with errno EINVAL (NULL parent or name, a bad name, parent destroyed),
 * EEXIST (parent has a live child of that name, however named), E2BIG or
 * ENOMEM; nothing changed on failure. Checked under the flush lock: of
 * two threads creating one name under one parent, one gets EEXIST
 * (create-or-find: then tally_group_find_child(), in a read-side section
 * if the group may be destroyed). O(children of parent). Threads,
 * blocking: as tally_group_create(). */
static inline struct tally_group *tally_group_create_named(struct tally_group *parent,
							    const char *name)
{
	return tally__rstat_create_named(parent, name);
}

/** tally_group_destroy - remove g (a group with no children). Everything g
 * counted, flushed or not, goes to its parent, exactly: in its and its
 * ancestors' hierarchical values after their next flush (updates racing
 * or later: "Destroyed groups"). g leaves every updated tree at once; it
 * is freed by call_rcu() after a grace period. Cost: one flush of g alone,
 * O(slots * items), no drain, no bitmap scan (rstat/correctness.h). 0,
 * -EINVAL (NULL, the root, g destroyed) or -EBUSY (g has children; nothing
 * changed). Blocking (the flush lock; no grace-period wait); the caller
 * must be registered with the tree's RCU flavor. */
static inline int tally_group_destroy(struct tally_group *g)
{
	return tally__rstat_group_destroy(g);
}

/** tally_group_destroy_subtree - destroy g (not the root:
 * tally_tree_destroy()) and every group below it, children first, each as
 * tally_group_destroy(), under one hold of the flush lock: nothing is
 * created under it meanwhile, no flush sees it half gone. 0, -EINVAL (NULL
 * g, the root, g destroyed) or -ENOMEM (nothing changed). O(groups *
 * slots * items). Blocking (the flush lock; no grace-period wait); the
 * caller must be registered (TALLY_DEBUG checks). */
static inline int tally_group_destroy_subtree(struct tally_group *g)
{
	return tally__rstat_group_destroy_subtree(g);
}

/** tally_group_find_child - parent's live child named name (bytewise; of
 * two, the last created). NULL with errno EINVAL (NULL parent or name) or
 * ENOENT (none). Walks in a read-side section (registered thread:
 * TALLY_DEBUG checks); if another thread may destroy the result, call it
 * inside tally_tree_read_lock() and use the result before the unlock (or
 * tally_group_find_get()). Children created or destroyed meanwhile may or
 * may not be seen. O(children); lock-free. */
static inline struct tally_group *tally_group_find_child(struct tally_group *parent,
							  const char *name)
{
	return tally__rstat_find_child(parent, name);
}

/** tally_group_tryget - take a reference on g unless its destroy has begun:
 * true, or false with errno ENOENT (g destroyed or being destroyed) or
 * EINVAL (NULL). g must be valid (read-side section, or a reference held).
 * The reference holds g without a section until tally_group_put() (RCU
 * rules above); put each before tally_tree_destroy(). Wait-free while g
 * is alive (a per-CPU add: rstat/lookup.h); one atomic RMW after. */
static inline bool tally_group_tryget(struct tally_group *g)
{
	return tally__rstat_tryget(g);
}

/** tally_group_get - take another reference on g; the caller holds one
 * (to hand it to another thread, say). NULL: no-op. Wait-free while g is
 * alive; one atomic RMW after its destroy. */
static inline void tally_group_get(struct tally_group *g)
{
	tally__rstat_ref_get(g);
}

/** tally_group_put - drop a reference the caller holds (from tryget, get or
 * find_get, or handed over). A destroyed g may then go at any moment: the
 * last put after its grace period frees it (taking the flush lock once;
 * else wait-free). TALLY_DEBUG aborts on a later call on a destroyed g by
 * a thread holding neither a reference nor a section. NULL: no-op. */
static inline void tally_group_put(struct tally_group *g)
{
	tally__rstat_ref_put(g);
}

/** tally_group_find_get - find_child() and tryget() in one read-side
 * section: the child with a reference, to use without a section until
 * tally_group_put(). NULL with errno EINVAL (NULL parent or name) or
 * ENOENT (no such live child, or its destroy began). Registered thread
 * (TALLY_DEBUG checks); parent valid (never destroyed, like the root, or
 * held). O(children); lock-free. */
static inline struct tally_group *tally_group_find_get(struct tally_group *parent,
							const char *name)
{
	return tally__rstat_find_get(parent, name);
}

/** tally_group_parent - g's parent; NULL for the root (errno untouched),
 * NULL with errno EINVAL for a NULL g. Wait-free. */
TALLY__INLINE struct tally_group *tally_group_parent(const struct tally_group *g)
{
	return tally__rstat_parent(g);
}

/** tally_group_serial - g's creation number in its tree: 0 for the root,
 * then 1, 2, ..., never reused while the tree lives (a group made where a
 * destroyed one was, same address and name, has another): exporters key
 * per-group state by it. 0 for NULL. Wait-free, any thread (on a group
 * another thread may destroy, inside tally_tree_read_lock()). */
TALLY__INLINE uint64_t tally_group_serial(const struct tally_group *g)
{
	return g ? g->tally__serial : 0;
}

/** tally_group_tree - the tree g belongs to; NULL with errno EINVAL for a
 * NULL g. Wait-free. */
TALLY__INLINE struct tally_tree *tally_group_tree(const struct tally_group *g)
{
	return tally__rstat_tree(g);
}

/** tally_group_for_each_child - fn(child, arg) for each live child of g, in
 * a read-side section (registered thread); children created or destroyed
 * meanwhile may or may not be seen. fn's first non-zero return (which
 * stops it), else 0; -EINVAL for NULL g or fn. fn may make any call but
 * tally_group_destroy() and tally_tree_destroy(). Lock-free apart from fn. */
static inline int tally_group_for_each_child(struct tally_group *g,
					     int (*fn)(struct tally_group *child, void *arg),
					     void *arg)
{
	return tally__rstat_for_each_child(g, fn, arg);
}

/** tally_group_mod - add delta to item of g on this CPU. 0, or -EINVAL
 * (NULL g, item out of range; nothing changes). Any thread, beside every
 * call but tally_tree_destroy (beside destroy of g only holding g: a
 * reference or a read-side section). No lock, no syscall: wait-free. A flush
 * that starts after it returns and covers g reflects delta (Memory
 * ordering). On a held g whose destroy is under way or done it counts too
 * (0), for g's nearest live ancestor, exactly once: in its flushes that
 * start after the return ("Destroyed groups"). */
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

/** tally_group_record - record v into g's histogram h: bucket + 1, sum + v,
 * as two tally_group_mod() updates of g (any thread, wait-free; in
 * flushes that start after the return; on a held destroyed g, for the
 * nearest live ancestor); g's histogram is its subtree's. 0, or -EINVAL
 * (NULL g, h out of range, v < 0: nothing recorded). Cost: the bucket math
 * and one mod fast path, both adds in its section (bench_rstat.c). Memory:
 * per group 3 words per bucket position and 3 for the sum, per CPU slot
 * that recorded into it 2 each (demand-zero; rstat/record.h). */
static inline int tally_group_record(struct tally_group *g, unsigned h, int64_t v)
{
	return tally__rstat_record(g, h, v);
}

/** tally_tree_nr_hists - how many histograms t's groups have (0 for NULL). */
static inline unsigned tally_tree_nr_hists(const struct tally_tree *t)
{
	return t ? t->tally__nr_hists : 0u;
}

/** tally_group_hist_snap_init - set s up for histogram h of t's groups
 * (then any tally_hist snapshot call takes it). 0, -EINVAL (NULL s or t,
 * h out of range) or -ENOMEM (s zeroed). */
static inline int tally_group_hist_snap_init(struct tally_hist_snap *s, const struct tally_tree *t,
					     unsigned h)
{
	return tally__rstat_hist_snap_init(s, t, h);
}

/** tally_group_hist_snapshot - histogram h of g's subtree into s, as of
 * g's last flush (flush first for all records returned), since g's last
 * reset. One flush's values: count is the sum of the buckets; a record
 * racing with the flush may be in its bucket but not yet in sum, or the
 * reverse, until the next (rstat/hist.h). TALLY_WORD_BITS 32: modulo 2^32,
 * as items (exporters widen them). 0 or -EINVAL (NULL g or s, h out of
 * range, s for other buckets; s untouched). Blocking (the flush lock); a
 * destroyed g reads as its destroy left it. */
static inline int tally_group_hist_snapshot(struct tally_group *g, unsigned h,
					    struct tally_hist_snap *s)
{
	return tally__rstat_hist_snapshot(g, h, s, 0, 1);
}

/** tally_group_hist_snapshot_raw - as tally_group_hist_snapshot(), but all
 * records ever (resets do not move it: for exporters), hierarchical, or
 * g's own records alone when local is true. */
static inline int tally_group_hist_snapshot_raw(struct tally_group *g, unsigned h,
						struct tally_hist_snap *s, bool local)
{
	return tally__rstat_hist_snapshot(g, h, s, local, 0);
}

/** tally_group_needs_flush - g's threshold count exceeds batch * ncpus.
 * false for NULL or a destroyed g. Wait-free. */
TALLY__INLINE bool tally_group_needs_flush(const struct tally_group *g)
{
	return tally__rstat_needs_flush(g);
}

/** tally_group_flush - flush g's subtree if tally_group_needs_flush(g)
 * (mem_cgroup_flush_stats()). A NULL or destroyed g sets errno EINVAL and
 * does nothing. Blocking (the tree's flush lock) when it flushes. */
static inline void tally_group_flush(struct tally_group *g)
{
	tally__rstat_flush_call(g, 0, "tally_group_flush");
}

/** tally_group_flush_force - flush g's subtree whatever its count
 * (do_flush_stats()). NULL or destroyed g: errno EINVAL, nothing done. */
static inline void tally_group_flush_force(struct tally_group *g)
{
	tally__rstat_flush_call(g, 1, "tally_group_flush_force");
}

/** tally_group_flush_ratelimited - tally_group_flush(g), but only when the
 * root was last flushed more than 2 periods ago (time_after(now, last +
 * 2 * period): the periodic flusher is a full period late). NULL g: errno
 * EINVAL. Wait-free when it does nothing. */
static inline void tally_group_flush_ratelimited(struct tally_group *g)
{
	tally__rstat_flush_ratelimited(g);
}

/** tally_tree_flush_periodic - a forced flush of the root (the periodic
 * work item, flush_memcg_stats_dwork()); call it every
 * tally_tree_period_ns(t). NULL: errno EINVAL. Blocking. */
static inline void tally_tree_flush_periodic(struct tally_tree *t)
{
	tally__rstat_flush_periodic(t);
}

/** tally_group_reset - start the since-reset values of g's subtree from 0
 * with one cut, as tally_vec_reset(). 0, -EINVAL (NULL or destroyed g) or
 * -ENOMEM (nothing changed). Under the flush lock a flush of the subtree,
 * whose values become the baselines tally_group_read(), read_positive()
 * and read_local() subtract; gauges (TALLY_GROUP_ITEM_GAUGE) left alone.
 * Raw values (read_monotonic(), exported rows: counters never go back)
 * never move, nor do g's ancestors'. The cut has every update completed
 * before the call, none started after its return; a racing one is in the
 * baseline or in every later since-reset value (after a flush): never
 * lost or counted twice. A racing reader sees per item the value before
 * or since, never a mix (rstat/reset.h). Any thread, beside all but
 * tally_tree_destroy() (a group another may destroy: in a read-side
 * section). Blocking. The first reset allocates 2 words per item. */
static inline int tally_group_reset(struct tally_group *g)
{
	return tally__rstat_group_reset(g);
}

/** tally_tree_reset - tally_group_reset() of t's root: the whole tree.
 * 0, -EINVAL (NULL t) or -ENOMEM (nothing changed). */
static inline int tally_tree_reset(struct tally_tree *t)
{
	return tally__rstat_tree_reset(t);
}

/** Readers: the values as of the last flush that covered g. O(1), relaxed
 * loads, never blocked by a flush; any thread. A NULL g or an item out of
 * range reads 0.
 *   tally_group_read           hierarchical since g's last reset, signed
 *   tally_group_read_positive  the same, negative as 0 (for gauges)
 *   tally_group_read_monotonic hierarchical raw word + TALLY_MONOTONIC_BIAS,
 *                              never moved by a reset, for event counters
 *                              sampled and subtracted with tally_delta()
 *                              across a wrap (lruvec_page_state_monotonic())
 *   tally_group_read_local     g alone since its last reset, signed
 * Without a reset "since the last reset" is "ever". A reader racing with
 * a reset of g sees, per item, the value before it or one since it. */
TALLY__INLINE tally_sword tally_group_read(const struct tally_group *g, unsigned item)
{
	return tally__rstat_read(g, item);
}

/** tally_group_read_positive - tally_group_read(), negative values as 0. */
TALLY__INLINE tally_uword tally_group_read_positive(const struct tally_group *g, unsigned item)
{
	return tally_clamp(tally_group_read(g, item));
}

/** tally_group_read_monotonic - the raw unsigned value plus
 * TALLY_MONOTONIC_BIAS (see tally_group_read). */
TALLY__INLINE tally_uword tally_group_read_monotonic(const struct tally_group *g, unsigned item)
{
	return tally__rstat_read_monotonic(g, item);
}

/** tally_group_read_local - g's own value, without its descendants, signed
 * (see tally_group_read). */
TALLY__INLINE tally_sword tally_group_read_local(const struct tally_group *g, unsigned item)
{
	return tally__rstat_read_local(g, item);
}

/** tally_tree_start_flusher - start a thread (needing no RCU registration)
 * that runs tally_tree_flush_periodic(t) every period_ns of real time (0:
 * the tree's period). 0, -EINVAL (NULL t, period > TALLY_RSTAT_PERIOD_MAX),
 * -EBUSY (one is running or being stopped) or the pthread_create() error,
 * negated. Blocking. */
static inline int tally_tree_start_flusher(struct tally_tree *t, uint64_t period_ns)
{
	return tally__rstat_flusher_start(t, period_ns);
}

/** tally_tree_stop_flusher - stop the flusher thread and wait for it (a
 * flush in progress completes). Any number of threads may call it at once:
 * each returns once the thread has been joined. No-op if none runs or t is
 * NULL. Not from the flusher thread itself. Blocking. */
static inline void tally_tree_stop_flusher(struct tally_tree *t)
{
	tally__rstat_flusher_stop(t);
}

/** tally_tree_destroy - stop the flusher, wait for the deferred frees of
 * destroyed groups (their grace periods), free every group and t. NULL: a
 * no-op. Nothing else may use t or its groups beside or after it. Not in
 * a read-side section, nor from a call_rcu callback; with urcu-qsbr, from
 * a thread that is offline or not registered. Blocking. */
static inline void tally_tree_destroy(struct tally_tree *t)
{
	tally__rstat_tree_destroy(t);
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_RSTAT_H */
