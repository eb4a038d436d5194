/*
 * examples/reclaim/model.h - a userspace model of the kernel series
 * "mm/vmscan: reduce lru_lock contention via vmstat-derived scan-balance cost"
 * (Usama Arif, 2026): reclaim's anon/file scan-balance cost moved off
 * lru_lock.
 *
 * A memcg tree (tally groups) with an lruvec per memcg: four LRU lists of
 * folios under an lru_lock, per-lruvec statistics (LRU sizes, PGROTATE_*,
 * NR_VMSCAN_WRITE, WORKINGSET_RESTORE_*), a classic cost pair and a
 * read-side cost accumulator (tally_cost), and isolation gauges
 * (tally_inflight). Producer threads fault, refault and read page cache;
 * reclaimer threads run prepare_scan_control() and shrink the LRU lists.
 *
 * Two modes on the same seeded event stream:
 *   legacy  every cost event (a refault, the rotations and pageouts of a
 *           shrink) takes lru_lock on its lruvec and every ancestor in turn
 *           and calls tally_cost_note() there (lru_note_cost_unlock_irq(),
 *           lru_note_cost_refault()); prepare_scan_control() snapshots the
 *           costs under the target's lru_lock.
 *   vmstat  cost events only bump tally group statistics (no lock);
 *           prepare_scan_control() flushes (ratelimited), reads the
 *           monotonic statistics and folds them under the target's cost
 *           lock (tally_cost_fold_locked()).
 * Everything else (LRU adds, isolation, putback, the statistics flush) is
 * the same in both modes. Every lock acquisition is counted per call site,
 * and the time from a failed trylock to the acquisition is its wait (as
 * perf lock contention measures it).
 */
#ifndef RECLAIM_MODEL_H
#define RECLAIM_MODEL_H

#include <stdint.h>

enum model_mode { MODE_LEGACY = 0, MODE_VMSTAT = 1, NR_MODES };

/* Lock call sites, named after the kernel functions of the series' perf lock table. */
enum site {
	SITE_NOTE_COST_UNLOCK,  /* lru_note_cost_unlock_irq() after a shrink */
	SITE_REFAULT_NOTE_COST, /* lru_note_cost_refault() in workingset_refault() */
	SITE_PREPARE_SCAN,      /* prepare_scan_control() in shrink_node() */
	SITE_SHRINK_ACTIVE,     /* shrink_active_list(): isolate and putback */
	SITE_LRU_ADD_DRAIN,     /* lru_add_drain_cpu(): the folio batch */
	SITE_ISOLATE,           /* shrink_inactive_list(): isolate_lru_folios() */
	SITE_PUTBACK,           /* shrink_inactive_list(): move_folios_to_lru() */
	NR_SITES
};

extern const char *const site_key[NR_SITES];   /* JSON keys */
extern const char *const site_label[NR_SITES]; /* table rows */
/* Sites that exist only to record cost (the ones the patch removed). */
int site_is_producer(int site);

/*
 * The kernel's LRU lists (include/linux/mmzone.h): the list of a folio is
 * LRU_BASE + LRU_FILE * file + LRU_ACTIVE * active. The model keeps the
 * four evictable lists; LRU_UNEVICTABLE is named for completeness.
 */
#define LRU_BASE 0
#define LRU_ACTIVE 1
#define LRU_FILE 2

enum lru_list {
	LRU_INACTIVE_ANON = LRU_BASE,
	LRU_ACTIVE_ANON = LRU_BASE + LRU_ACTIVE,
	LRU_INACTIVE_FILE = LRU_BASE + LRU_FILE,
	LRU_ACTIVE_FILE = LRU_BASE + LRU_FILE + LRU_ACTIVE,
	LRU_UNEVICTABLE,
	NR_LRU_LISTS
};

#define NR_EVICTABLE_LRU LRU_UNEVICTABLE
#define for_each_evictable_lru(lru) for ((lru) = 0; (lru) < NR_EVICTABLE_LRU; (lru)++)

/* file: 0 anon (TALLY_ANON), 1 file (TALLY_FILE). */
static inline int is_file_lru(enum lru_list lru)
{
	return lru == LRU_INACTIVE_FILE || lru == LRU_ACTIVE_FILE;
}

static inline int is_active_lru(enum lru_list lru)
{
	return lru == LRU_ACTIVE_ANON || lru == LRU_ACTIVE_FILE;
}

/* The list of a folio of this type (0 anon, 1 file), active or not. */
static inline enum lru_list lru_of(int file, int active)
{
	return (enum lru_list)(LRU_BASE + (file ? LRU_FILE : 0) + (active ? LRU_ACTIVE : 0));
}

/* Per-lruvec statistics items of the tally tree. The LRU sizes are items
 * NR_LRU_BASE + lru (the kernel's NR_LRU_BASE + lru in enum
 * node_stat_item), and each per-type pair is anon, then file. */
enum item {
	NR_LRU_BASE,
	NR_INACTIVE_ANON = NR_LRU_BASE + LRU_INACTIVE_ANON,
	NR_ACTIVE_ANON = NR_LRU_BASE + LRU_ACTIVE_ANON,
	NR_INACTIVE_FILE = NR_LRU_BASE + LRU_INACTIVE_FILE,
	NR_ACTIVE_FILE = NR_LRU_BASE + LRU_ACTIVE_FILE,
	PGROTATE_ANON, PGROTATE_FILE, NR_VMSCAN_WRITE,
	WORKINGSET_RESTORE_ANON, WORKINGSET_RESTORE_FILE,
	NR_ITEMS
};

/* The item of an LRU list's size. */
static inline unsigned lru_item(enum lru_list lru)
{
	return NR_LRU_BASE + (unsigned)lru;
}

/* The order every index helper relies on. */
_Static_assert(LRU_ACTIVE_FILE + 1 == NR_EVICTABLE_LRU, "four evictable lists first");
_Static_assert(NR_ACTIVE_FILE == NR_LRU_BASE + LRU_ACTIVE_FILE &&
		       PGROTATE_ANON == NR_LRU_BASE + NR_EVICTABLE_LRU,
	       "one size item per evictable list, in list order");
_Static_assert(PGROTATE_FILE == PGROTATE_ANON + 1 &&
		       WORKINGSET_RESTORE_FILE == WORKINGSET_RESTORE_ANON + 1,
	       "per-type items: anon, then file");

/* Page-cache promotion events ("Promotion of Unmapped Page Cache
 * Folios", Gregory Price, 2025), node-wide, in a tally_vec. */
enum promo_item {
	NUMA_HINT_PAGE_CACHE,  /* hint events on lower-tier page cache */
	PGPROMOTE_CANDIDATE,   /* folios put on a task's promotion list */
	PGPROMOTE_SUCCESS,     /* promoted by the task work */
	PGPROMOTE_RATELIMITED, /* stopped by the per-task rate limit */
	NR_PROMO_ITEMS
};

/* A scripted start for replay scenarios: refaults on leaf 0, in order. */
struct model_script {
	unsigned anon_refaults, file_refaults;
};

/* One reclaim pass, reported in replay mode. */
struct pass_report {
	int mode;
	unsigned long pass;   /* 1-based, over the whole run */
	const char *target;   /* the lruvec whose cost set the balance */
	const char *leaf;     /* the lruvec shrunk */
	uint64_t cost[2];     /* anon, file */
	uint64_t fraction[2], denominator;
	int type;             /* the list type shrunk (0 anon, 1 file, -1 none) */
	unsigned scanned, reclaimed;
};

struct model_config {
	int mode;
	uint64_t seed;
	unsigned leaves;             /* leaf memcgs */
	unsigned depth;              /* leaf depth below the root (>= 1) */
	unsigned producers;          /* producer threads per leaf */
	unsigned reclaimers;         /* reclaimer threads per leaf */
	unsigned long events;        /* events per producer */
	unsigned long rate;          /* threads: events per second per producer
					(0: as fast as it can) */
	int hold_times;              /* time every lru_lock hold (two clock
					reads per acquisition) */
	int pin;                     /* threads: pin them round-robin over the
					allowed CPUs */
	unsigned alloc_per_pass;     /* threads: a reclaim pass is due on the
					leaf every this many allocations
					(faults + refaults) of a producer */
	unsigned folios;             /* folios per leaf, all resident at start */
	unsigned long lru_pad;       /* extra LRU pages per leaf (stats only) */
	unsigned swappiness;         /* 0..200 */
	unsigned parent_every;       /* every Nth pass takes the parent's cost
					(0: never) */
	unsigned rate_limit;         /* promotion candidates per task "syscall" */
	unsigned syscall_events;     /* producer events per "syscall" */
	unsigned user_work;          /* spin units per producer event */
	unsigned reclaim_work;       /* spin units per folio shrunk */
	uint64_t flush_period_ns;    /* periodic stats flush (threads only) */
	uint64_t throttle_wait_ns;   /* the isolation throttle's one wait */
	/* replay: one thread, deterministic */
	int replay;
	unsigned long rounds;        /* rounds of (events, then one pass each) */
	unsigned long round_events;  /* events per producer per round */
	const struct model_script *script;
	void (*on_pass)(void *arg, const struct pass_report *r);
	void *arg;
};

void model_default_config(struct model_config *c);

struct lruvec_report {
	char name[128];
	uint64_t cost[2], fraction[2], denominator;
	uint64_t lrusize;
};

#define MODEL_MAX_LRUVECS 64
#define LONG_WAIT_NS 100000u /* 100 us */

struct model_result {
	int mode;
	uint64_t elapsed_ns;
	uint64_t acquisitions[NR_SITES], wait_ns[NR_SITES], contended[NR_SITES];
	/* contended_by[s][h]: failed trylocks at site s while the lock's last
	 * taker was at site h (who held it up; a hint read without the lock) */
	uint64_t contended_by[NR_SITES][NR_SITES];
	/* Waits over LONG_WAIT_NS, and their time: far longer than any hold
	 * of the model's locks (about a microsecond), so the holder or the
	 * waiter lost its CPU meanwhile (the scheduler's wait, not the lock's:
	 * a kernel spinlock holder cannot be preempted). */
	uint64_t long_waits[NR_SITES], long_wait_ns[NR_SITES];
	/* With hold_times: lru_lock held, per site of the acquisition. */
	uint64_t hold_ns[NR_SITES];
	uint64_t producer_lock_acquisitions, total_lock_wait_ns;
	/* work done */
	uint64_t faults, refaults, accesses, drains;
	uint64_t passes, passes_throttled, scanned, reclaimed, pageouts, rotated, deactivated;
	uint64_t passes_due; /* threads: passes the producers asked for */
	/* throttle, summed over leaves */
	uint64_t throttled, throttle_woken, throttle_timeouts, throttle_gave_up;
	/* page-cache promotion */
	uint64_t promo[NR_PROMO_ITEMS], promo_syscalls, promo_max_per_syscall;
	/* costs at the end (vmstat: one last fold after a forced flush) */
	unsigned nr_lruvecs;
	struct lruvec_report lruvec[MODEL_MAX_LRUVECS];
};

/* Run the model. 0, or a negative errno (bad config, no memory). */
int model_run(const struct model_config *cfg, struct model_result *res);

#endif /* RECLAIM_MODEL_H */
