/*
 * examples/reclaim/model_impl.h - what the model's files share: folios and
 * LRU lists, the lruvec and the memcg tree, per-thread statistics, the
 * producer and reclaimer threads, the seeded random streams.
 *
 *   lock.c      lock sites, instrumented acquisitions, clocks, pinning
 *   memcg.c     the memcg tree: lruvecs, LRU sizes and statistics, the
 *               legacy cost walk
 *   producer.c  tasks faulting, refaulting and reading page cache
 *   reclaimer.c prepare_scan_control() and the shrinkers
 *   run.c       model_run(): build, replay or threads, collect
 * (the demo's summary and output: report.h, summary.c, report.c)
 */
#ifndef RECLAIM_MODEL_IMPL_H
#define RECLAIM_MODEL_IMPL_H

#include "model.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <tally/tally.h>
#include <tally/rstat.h>

#define NR_SCAN 32     /* SWAP_CLUSTER_MAX folios per isolation */
#define FOLIO_BATCH 15 /* PAGEVEC_SIZE - 1 */
#define LRU_NONE 0xff  /* folio::lru of an isolated or evicted folio */

_Static_assert(TALLY_ANON == 0 && TALLY_FILE == 1, "type: 0 anon, 1 file, as lru_of() takes it");

/* ---- seeded random streams ------------------------------------------------ */
/* splitmix64: one stream per thread, derived from the seed and the
 * thread's place, so both modes replay the same streams. */
struct rng {
	uint64_t s;
};

static inline uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline struct rng rng_for(uint64_t seed, unsigned kind, unsigned leaf, unsigned idx)
{
	struct rng r = {seed};
	r.s ^= rnd(&r) + kind * 0x100000001b3ull + leaf * 0x9e3779b1ull + idx * 0x85ebca6bull;
	rnd(&r);
	return r;
}

/* ---- per-thread statistics (lock.c) ---------------------------------------- */
struct tstats {
	uint64_t acq[NR_SITES], wait_ns[NR_SITES], contended[NR_SITES];
	/* contended_by[s][h]: failed trylocks at site s while the lock's
	 * last taker was at site h (who held it up) */
	uint64_t contended_by[NR_SITES][NR_SITES];
	uint64_t long_waits[NR_SITES], long_wait_ns[NR_SITES]; /* over LONG_WAIT_NS */
	uint64_t hold_ns[NR_SITES]; /* with hold_times */
	int hold_times;
	uint64_t faults, refaults, accesses, drains;
	uint64_t passes, passes_throttled, scanned, reclaimed, pageouts, rotated, deactivated;
	uint64_t promo_syscalls, promo_max;
};

/* An lru_lock: the mutex and the site of its last acquisition. */
struct site_lock {
	pthread_mutex_t m;
	int holder_site; /* atomic, relaxed: a diagnostic only */
	/* with hold_times, under the lock: the holder and when it took it */
	struct tstats *holder;
	uint64_t t_acquired;
};

uint64_t now_ns(void);
void burn(unsigned units);
void pin_nth(unsigned k);
int lock_init(struct site_lock *l);
void lock_destroy(struct site_lock *l);
void lock_at(struct site_lock *l, struct tstats *ts, int site);
void unlock(struct site_lock *l);
void cost_lock_at(struct tally_cost *c, struct tstats *ts, int site);

/* ---- folios and LRU lists ---------------------------------------------------- */
struct folio {
	struct folio *prev, *next;
	unsigned char type;      /* TALLY_ANON or TALLY_FILE */
	unsigned char lru;       /* enum lru_list, or LRU_NONE */
};

static inline void list_init(struct folio *h)
{
	h->prev = h->next = h;
}

static inline struct folio *list_tail(struct folio *h)
{
	return h->prev == h ? NULL : h->prev;
}

static inline void list_del(struct folio *f)
{
	f->prev->next = f->next;
	f->next->prev = f->prev;
}

static inline void list_add(struct folio *h, struct folio *f)
{
	f->next = h->next;
	f->prev = h;
	h->next->prev = f;
	h->next = f;
}

/* ---- the memcg tree (memcg.c) -------------------------------------------------- */
struct lruvec {
	char name[128];
	struct lruvec *parent;
	struct tally_group *g;
	struct site_lock lru_lock;
	struct folio lists[NR_EVICTABLE_LRU]; /* under lru_lock */
	struct folio evicted[2];              /* per type: not resident, awaiting a fault */
	/* Pages per list: stored under lru_lock, read locklessly with
	 * tally_sum_clamped() by the throttle. */
	tally_sword nr_pages[NR_EVICTABLE_LRU];
	struct tally_cost classic; /* legacy: anon_cost/file_cost */
	struct tally_cost cost;    /* vmstat: the read-side accumulator */
	struct tally_inflight inflight;
	struct folio *folios;
	/* leaves, threads mode: reclaim passes due and their wake-ups */
	sem_t pass_sem;
	int has_sem;
	unsigned long due;        /* atomic */
	unsigned producers_left;  /* atomic */
};

struct model {
	const struct model_config *cfg;
	struct tally_tree *tree;
	struct tally_vec promo;
	unsigned nr_lruvecs, nr_leaves;
	struct lruvec *lv[MODEL_MAX_LRUVECS];
	struct lruvec *leaf[MODEL_MAX_LRUVECS];
};

/* LRU size deltas per list, applied under lru_lock by lru_apply(). */
typedef tally_sword lru_delta[NR_EVICTABLE_LRU];

int model_build(struct model *m);
void model_free(struct model *m);
void lru_apply(struct lruvec *lv, const lru_delta d);
tally_uword lrusize(const struct lruvec *lv);
tally_uword evictable(void *arg, unsigned type);
tally_uword resident(const struct lruvec *lv);
void read_inputs(const struct lruvec *lv, struct tally_cost_input in[2]);
void note_walk(struct lruvec *lv, int type, tally_uword io, tally_uword rot, int site,
	       struct tstats *ts);

/* ---- threads (producer.c, reclaimer.c) ------------------------------------------ */
struct producer {
	struct model *m;
	struct lruvec *leaf;
	struct rng rng;
	struct tstats ts;
	unsigned char batch[FOLIO_BATCH]; /* enum lru_list of each queued folio */
	unsigned nbatch;
	unsigned promo_count, promo_list; /* the task's promotion budget, list */
	unsigned long syscall_events;
	unsigned long events;
	unsigned long allocs; /* faults + refaults */
	unsigned id;
	uint64_t passes_due;
	pthread_t th;
};

struct reclaimer {
	struct model *m;
	struct lruvec *leaf;
	struct rng rng;
	struct tstats ts;
	unsigned long pass_no;
	int dying;
	unsigned id;
	pthread_t th;
};

void producer_event(struct producer *p);
void refault(struct producer *p, int type);
void drain(struct producer *p);
void task_work(struct producer *p);
void *producer_main(void *arg);

void reclaim_pass(struct reclaimer *rc, unsigned long global_pass);
void *reclaimer_main(void *arg);

#endif /* RECLAIM_MODEL_IMPL_H */
