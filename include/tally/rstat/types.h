/**
 * @file
 * tally/rstat/types.h - struct tally_tree and struct tally_group (private;
 * include <tally/rstat.h>): their private parts, one struct per concern
 * (the updated set: dirty records, per-slot headers, ids; the flush, the
 * thresholds, the clock, the flusher thread, RCU, the tree shape), the two
 * structs themselves with the static assertions on their layout, and the
 * macros they and the machinery use: TALLY__RSTAT_A8, the static
 * assertion and the test hooks.
 */
#ifndef TALLY_RSTAT_TYPES_H
#define TALLY_RSTAT_TYPES_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/types.h is private: include <tally/rstat.h>"
#endif

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
 * before including <tally/rstat.h> to run code at a named window of the
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

/* Group ids come in blocks of this many; one dirty record per block and
 * CPU slot. */
#define TALLY__RSTAT_BLOCK_IDS 4096u

struct tally_group;

/*
 * The dirty record of one block of 4096 group ids on one CPU slot, in two
 * halves:
 *   summary, leaf          the shared half: a leaf bit per group (id & 63
 *                          of leaf[(id >> 6) & 63]) and a summary bit per
 *                          leaf word ((id >> 6) & 63); set by any thread
 *                          with sequentially consistent loads and ORs after
 *                          a barrier (the fenced protocol)
 *   mark_summary,          the mark half (x86_64 with rseq): a 32-bit
 *   mark_leaf              mark per group (mark id & 4095 of mark_leaf)
 *                          and a summary mark per 64 of them (mark
 *                          (id >> 6) & 63 of mark_summary), set to 1 with
 *                          plain 32-bit stores by an update whose rseq add
 *                          landed on this slot, after that add
 *                          (tally__rstat_rseq_mod()): no mask to load, no
 *                          read-modify-write, no exclusion. 32 bits, not
 *                          a byte: some x86 cores (AMD Zen 3) take
 *                          about a nanosecond more per update for a byte
 *                          store that follows another to the same byte
 *                          (bench/RESULTS.md)
 * Drains exchange both halves to 0, 64 bits at a time (a 32-bit store and
 * a locked exchange of the aligned word around it are ordered on x86: the
 * mark is in what the exchange read, or set after it). See the argument in
 * rstat/correctness.h.
 * A block's records are one object of the cold per-CPU arena (slot s's in
 * CPU s's region: no two slots share a line). Private.
 */
struct tally__rstat_dirty {
	uint64_t mark_summary[32]; /* 64 marks, two to a word */
	uint64_t summary;
	uint64_t leaf[64];
	uint64_t mark_leaf[TALLY__RSTAT_BLOCK_IDS / 2]; /* two marks to a word */
};

/*
 * Per group and CPU slot, at the start of the slot's chunk; the words and
 * prev snapshots follow it (items dense, as the kernel's percpu layout).
 * The updated-tree links are under the tree's flush lock. Private.
 */
struct tally__rstat_cpu {
	/* The slot's updated tree: this group's updated children, linked by
	 * upd_next and ended by this group itself (upd_children == the group,
	 * or NULL as a slot starts zeroed, when none), doubly linked by upd_prev (NULL for the first child) so
	 * a detach is O(1). upd_next == NULL: not in the updated tree; the
	 * root links to itself. */
	struct tally_group *upd_children;
	struct tally_group *upd_next;
	struct tally_group *upd_prev;
	/* the next group to visit in this slot's flush list */
	struct tally_group *flush_next;
	/* |delta| counted on this slot since the group's last flush, tagged
	 * with the group's count epoch (tally/rstat/threshold.h). */
	TALLY__RSTAT_A8 uint64_t stats_updates;
	/* The tree's flush generation at which an update on this slot,
	 * finding the group flushable, last found every ancestor flushable
	 * too (at creation: one that is not current); while no flush has
	 * started since, the next such update skips the ancestor walk
	 * (tally/rstat/threshold.h). Relaxed loads and stores. */
	unsigned long anc_gen;
};

/* Where a slot chunk's words start (word[0]): right after its header. */
#define TALLY__RSTAT_WORD_OFF                                                                  \
	((sizeof(struct tally__rstat_cpu) + sizeof(tally_uword) - 1) / sizeof(tally_uword) *        \
	 sizeof(tally_uword))

/* ---- struct tally_tree: one sub-struct per concern (all private) -------- */

/* The flush: its lock and the state it guards. Every flush, create and
 * destroy writes the lock's line; updates read the tree's head (item
 * offsets, thresholds) and gen on every call, so padding keeps those on
 * lines of their own (a line per flush, not per lock, moves to updaters). */
struct tally__rstat_flushing {
	char pad_head[TALLY_CACHELINE];
	pthread_mutex_t lock; /* the flush lock: flushes, create, destroy, ids */
	unsigned long nr_groups; /* live groups, the root included */
	/* 1 if updates of this tree rely on the flush's membarrier()
	 * (compiler barrier only), 0 if they fence. Set at creation. */
	int memb;
	int memb_owed; /* a drain's membarrier() is still due */
	struct tally_group **lists; /* per slot: the list being flushed */
	/* destroyed groups a drain found dirty, linked by handover_next */
	struct tally_group *handover;
	struct tally_group *taken;  /* groups whose counts this flush took */
	char pad_gen[TALLY_CACHELINE];
	unsigned long gen; /* flushes so far; atomic stores, updaters load it */
	char pad_tail[TALLY_CACHELINE];
};

/* Group ids and the dirty bitmaps; under the flush lock. Updaters reach
 * their block through their group (tally__rstat_gdirty), never through
 * these growable tables. */
struct tally__rstat_ids {
	struct tally_group **group; /* [cap] id -> live or dead group; NULL: free */
	unsigned *free_ids;         /* [cap] released ids, a stack */
	unsigned nr_free;
	unsigned nr_ids; /* ids handed out so far: the next new id */
	unsigned cap;
	struct tally__pcpu *blocks; /* [blocks_cap] per block: a record per slot (cold arena) */
	unsigned nr_blocks, blocks_cap;
	size_t stride;     /* bytes from one slot's record to the next: 1 << TALLY_PCPU_REGION_SHIFT */
	unsigned nr_slots; /* CPU slots + the shared slot */
};

/* Thresholds; read-only after creation. */
struct tally__rstat_thresholds {
	unsigned batch;
	uint64_t threshold; /* batch * ncpus */
};

/* The ratelimit clock. */
struct tally__rstat_clock {
	uint64_t (*now)(void *arg); /* NULL: CLOCK_MONOTONIC */
	void *arg;
	uint64_t period_ns;
	TALLY__RSTAT_A8 uint64_t last_root_flush; /* atomic */
};

/* The optional flusher thread, under its own lock (not the flush lock). */
struct tally__rstat_flusher {
	pthread_mutex_t lock;
	struct tally__os_cond cond; /* wakes the thread, and waiters for its stop */
	pthread_t thread;
	uint64_t period_ns;
	int state; /* TALLY__FLUSHER_IDLE, _RUNNING, _STOPPING */
	int stop;  /* asks the thread to return */
};

/* Deferred frees. */
struct tally__rstat_rcu {
	const struct rcu_flavor_struct *flavor;
	unsigned long deferred; /* call_rcu frees not yet done; atomic */
	int tsan_token;         /* ThreadSanitizer's grace-period token */
	/* The flavor registers threads by itself (urcu-bp): TALLY_DEBUG's
	 * registration checks are skipped (rstat/rcu.h). Set at creation. */
	int auto_register;
};

/* ---- struct tally_group ---------------------------------------------------- */

/* Where the group's dirty bits are: set at creation, then read-only. */
struct tally__rstat_gdirty {
	unsigned char *block; /* the block's record for slot 0 */
	size_t stride;        /* bytes from one slot's record to the next */
	size_t leaf_off;      /* bytes from a record to the group's leaf word */
	uint64_t bit, sbit;   /* the group's leaf bit and its summary bit */
	/* Slot 0's marks of the mark half that the rseq update sets: the
	 * group's in mark_leaf, and its 64 ids' in mark_summary. */
	unsigned char *mark_leaf, *mark_summary;
	unsigned id;
};

/* The tree shape. first_child/next_sibling are an RCU list: stores are
 * release, walkers load acquire; the rest is under the flush lock. */
struct tally__rstat_links {
	struct tally_group *parent; /* NULL for the root */
	struct tally_group *first_child;
	struct tally_group *next_sibling;
	struct tally_group *prev_sibling; /* for an O(1) unlink; not for walkers */
	unsigned long nr_children; /* live children */
	unsigned long refs; /* 1 until its deferred free, + children not freed */
	unsigned depth; /* the root: 0; a child: its parent's + 1; set at creation */
};

/* The threshold count. */
struct tally__rstat_gcount {
	TALLY__RSTAT_A8 uint64_t count; /* the group's count; atomic */
	TALLY__RSTAT_A8 uint64_t taken; /* what a flush took; flush lock */
	unsigned long taken_gen;        /* which flush took it; flush lock */
	struct tally_group *taken_next; /* in tally__rstat_flushing.taken */
	uint32_t epoch;                 /* a flush bumps it; atomic */
};

/* ---- the two structs ------------------------------------------------------ */

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

#endif /* TALLY_RSTAT_TYPES_H */
