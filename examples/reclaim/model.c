/*
 * examples/reclaim/model.c - the reclaim model (see model.h).
 *
 * Kernel correspondence, per thread kind:
 *
 * producer (a task faulting memory, like usemem):
 *   fault     a new folio goes to the task's folio batch (15 entries);
 *             a full batch drains into the leaf's LRU under lru_lock
 *             (lru_add_drain_cpu).
 *   refault   workingset_refault(): WORKINGSET_RESTORE_{ANON,FILE} += 1,
 *             legacy: lru_note_cost_refault() = lru_lock + note on the leaf
 *             and on every ancestor, each under its own lru_lock; then the
 *             folio is added to the active list through the batch.
 *   access    a page-cache read (seed 002): a lower-tier folio counts a
 *             NUMA_HINT_PAGE_CACHE event and becomes a promotion candidate
 *             unless the task's promotion budget for this "syscall" is
 *             spent (the rate limit); the task work at the end of the
 *             syscall promotes the list and resets the budget.
 * reclaimer (shrink_lruvec on one leaf, on demand):
 *   pressure  every alloc_per_pass allocations (faults and refaults) a
 *             producer makes one reclaim pass due on its leaf and posts a
 *             semaphore; the leaf's reclaimers run the passes due (so
 *             both modes do exactly the same number of passes, and
 *             reclaim keeps pace with the faults) and stop when the
 *             producers are done and no pass is due.
 *   prepare_scan_control(target): target is the leaf, or its parent every
 *             parent_every passes (a limit hit higher up). Flush the
 *             target's stats (ratelimited). legacy: read the classic
 *             costs under the target's lru_lock. vmstat: under the
 *             target's cost lock, read the monotonic inputs and fold.
 *             get_scan_count()'s fraction picks anon or file.
 *   throttle  tally_inflight_allowed() on the leaf (seed 001); the type
 *             falls back to the other one when it is not allowed.
 *   shrink_active_list: isolate up to 32 active folios under lru_lock,
 *             rotate (keep active) referenced file folios, deactivate the
 *             rest, put back under lru_lock; legacy: note (0, rotated)
 *             with lru_lock on the leaf and every ancestor; vmstat:
 *             PGROTATE += rotated.
 *   shrink_inactive_list: isolate up to 32 inactive folios (isolate),
 *             shrink them outside the lock: reclaimed (evicted, later
 *             refaulted), paged out (anon: stays inactive, NR_VMSCAN_WRITE)
 *             or kept (activated); put back (putback); legacy: note
 *             (pageouts, scanned - reclaimed) up the tree; vmstat:
 *             PGROTATE += scanned - reclaimed, NR_VMSCAN_WRITE +=
 *             pageouts.
 * A flusher thread flushes the tree's stats every flush_period_ns.
 */
#define _GNU_SOURCE
#include "model.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tally/tally.h>
#include <tally/rstat.h>

const char *const site_key[NR_SITES] = {
	"note_cost_unlock", "refault_note_cost", "prepare_scan_control",
	"shrink_active_list", "lru_add_drain", "isolate", "putback",
};

const char *const site_label[NR_SITES] = {
	"note_cost_unlock (shrink_lruvec)",
	"refault_note_cost (workingset_refault)",
	"prepare_scan_control (shrink_node)",
	"shrink_active_list",
	"lru_add_drain",
	"isolate (shrink_inactive_list)",
	"putback (shrink_inactive_list)",
};

int site_is_producer(int site)
{
	return site == SITE_NOTE_COST_UNLOCK || site == SITE_REFAULT_NOTE_COST;
}

#define NR_SCAN 32     /* SWAP_CLUSTER_MAX folios per isolation */
#define FOLIO_BATCH 15 /* PAGEVEC_SIZE - 1 */
#define LRU_NONE 0xff

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64: one stream per thread, derived from the seed and the
 * thread's place, so both modes replay the same streams. */
struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static struct rng rng_for(uint64_t seed, unsigned kind, unsigned leaf, unsigned idx)
{
	struct rng r = {seed};
	r.s ^= rnd(&r) + kind * 0x100000001b3ull + leaf * 0x9e3779b1ull + idx * 0x85ebca6bull;
	rnd(&r);
	return r;
}

/* CPU work that stands for touching memory or shrinking a folio. */
static void burn(unsigned units)
{
	uint64_t h = units;
	for (unsigned i = 0; i < units * 16u; i++) {
		h = h * 6364136223846793005ull + i;
		__asm__ __volatile__("" : "+r"(h));
	}
}

/* Pin the calling thread to the k-th CPU it may run on (round-robin), so
 * the scheduler cannot pack every thread onto one CPU of a busy machine
 * and hide the contention. */
static void pin_nth(unsigned k)
{
	cpu_set_t allowed, one;
	int n = 0, i;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	n = CPU_COUNT(&allowed);
	if (n <= 1)
		return;
	k %= (unsigned)n;
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &allowed))
			continue;
		if (k-- == 0) {
			CPU_ZERO(&one);
			CPU_SET(i, &one);
			sched_setaffinity(0, sizeof(one), &one);
			return;
		}
	}
}

/* ---- per-thread statistics ---------------------------------------------- */
struct tstats {
	uint64_t acq[NR_SITES], wait_ns[NR_SITES], contended[NR_SITES];
	uint64_t faults, refaults, accesses, drains;
	uint64_t passes, passes_throttled, scanned, reclaimed, pageouts, rotated, deactivated;
	uint64_t promo_syscalls, promo_max;
};

/*
 * lru_lock is a spinlock in the kernel: waiters spin for the (short) hold
 * time. The closest userspace lock that stays fair to a preempted holder
 * is glibc's adaptive mutex: it spins a little, then sleeps in the kernel.
 */
static int lock_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int err = pthread_mutexattr_init(&a);
	if (err)
		return err;
#if defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
	err = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return err;
}

/* An instrumented acquisition: a failed trylock starts the wait clock. */
static void lock_at(pthread_mutex_t *m, struct tstats *ts, int site)
{
	if (pthread_mutex_trylock(m)) {
		uint64_t t0 = now_ns();
		pthread_mutex_lock(m);
		ts->wait_ns[site] += now_ns() - t0;
		ts->contended[site]++;
	}
	ts->acq[site]++;
}

static void cost_lock_at(struct tally_cost *c, struct tstats *ts, int site)
{
	if (!tally_cost_trylock(c)) {
		uint64_t t0 = now_ns();
		tally_cost_lock(c);
		ts->wait_ns[site] += now_ns() - t0;
		ts->contended[site]++;
	}
	ts->acq[site]++;
}

/* ---- folios and LRU lists --------------------------------------------------- */
struct folio {
	struct folio *prev, *next;
	unsigned char type, lru;
};

static void list_init(struct folio *h)
{
	h->prev = h->next = h;
}

static struct folio *list_tail(struct folio *h)
{
	return h->prev == h ? NULL : h->prev;
}

static void list_del(struct folio *f)
{
	f->prev->next = f->next;
	f->next->prev = f->prev;
}

static void list_add(struct folio *h, struct folio *f)
{
	f->next = h->next;
	f->prev = h;
	h->next->prev = f;
	h->next = f;
}

struct lruvec {
	char name[128];
	struct lruvec *parent;
	struct tally_group *g;
	pthread_mutex_t lru_lock;
	struct folio lists[4];   /* [type * 2 + active], under lru_lock */
	struct folio evicted[2]; /* not resident, awaiting a fault */
	/* Pages per [type][active]: stored under lru_lock, read locklessly
	 * with tally_sum_clamped() (seed 004) by the throttle. */
	tally_sword nr_pages[2][2];
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

/* Apply LRU size deltas (lru_lock held): page counts and the stats. */
static void lru_apply(struct lruvec *lv, const tally_sword d[4])
{
	for (int l = 0; l < 4; l++) {
		if (!d[l])
			continue;
		tally_sword *np = &lv->nr_pages[l / 2][l % 2];
		__atomic_store_n(np, *np + d[l], __ATOMIC_RELAXED);
		tally_group_mod(lv->g, (unsigned)l, d[l]);
	}
}

/* The LRU size the costs decay against (lruvec_page_state() of the four
 * lists: flushed hierarchical values). */
static tally_uword lrusize(const struct lruvec *lv)
{
	tally_uword s = 0;
	for (unsigned i = NR_INACTIVE_ANON; i <= NR_ACTIVE_FILE; i++)
		s += tally_group_read_positive(lv->g, i);
	return s;
}

static tally_uword evictable(void *arg, unsigned type)
{
	struct lruvec *lv = (struct lruvec *)arg;
	return tally_sum_clamped(lv->nr_pages[type], 2);
}

static void read_inputs(const struct lruvec *lv, struct tally_cost_input in[2])
{
	const struct tally_group *g = lv->g;
	in[TALLY_ANON].rotated = tally_group_read_monotonic(g, PGROTATE_ANON);
	in[TALLY_ANON].io = tally_group_read_monotonic(g, WORKINGSET_RESTORE_ANON) +
			    tally_group_read_monotonic(g, NR_VMSCAN_WRITE);
	in[TALLY_FILE].rotated = tally_group_read_monotonic(g, PGROTATE_FILE);
	in[TALLY_FILE].io = tally_group_read_monotonic(g, WORKINGSET_RESTORE_FILE);
}

/* legacy: lru_note_cost_unlock_irq() / lru_note_cost_refault(): the note
 * on this lruvec and on every ancestor, each under its own lru_lock. */
static void note_walk(struct lruvec *lv, int type, tally_uword io, tally_uword rot, int site,
		      struct tstats *ts)
{
	for (; lv; lv = lv->parent) {
		lock_at(&lv->lru_lock, ts, site);
		tally_cost_note(&lv->classic, type, io, rot, lrusize(lv));
		pthread_mutex_unlock(&lv->lru_lock);
	}
}

/* ---- producers ---------------------------------------------------------------- */
struct producer {
	struct model *m;
	struct lruvec *leaf;
	struct rng rng;
	struct tstats ts;
	unsigned char batch[FOLIO_BATCH]; /* lru index of each queued folio */
	unsigned nbatch;
	unsigned promo_count, promo_list; /* seed 002: the task's budget, list */
	unsigned long syscall_events;
	unsigned long events;
	unsigned long allocs; /* faults + refaults */
	unsigned id;
	uint64_t passes_due;
	pthread_t th;
};

/* Memory pressure: every alloc_per_pass allocations, one pass is due. */
static void charge(struct producer *p)
{
	const struct model_config *cfg = p->m->cfg;
	if (++p->allocs % cfg->alloc_per_pass || cfg->replay)
		return;
	p->passes_due++;
	__atomic_add_fetch(&p->leaf->due, 1ul, __ATOMIC_RELAXED);
	sem_post(&p->leaf->pass_sem); /* after the increment: see reclaimer_main */
}

static void drain(struct producer *p)
{
	struct lruvec *lv = p->leaf;
	tally_sword d[4] = {0, 0, 0, 0};
	if (!p->nbatch)
		return;
	lock_at(&lv->lru_lock, &p->ts, SITE_LRU_ADD_DRAIN);
	for (unsigned i = 0; i < p->nbatch; i++) {
		int l = p->batch[i], type = l / 2;
		struct folio *f = list_tail(&lv->evicted[type]);
		if (!f) {
			/* Nothing evicted to fault back in: the batch entry
			 * activates an inactive folio instead (same work). */
			f = list_tail(&lv->lists[type * 2]);
			if (!f)
				continue;
			d[type * 2]--;
			l = type * 2 + 1;
		}
		list_del(f);
		f->lru = (unsigned char)l;
		list_add(&lv->lists[l], f);
		d[l]++;
	}
	lru_apply(lv, d);
	pthread_mutex_unlock(&lv->lru_lock);
	p->nbatch = 0;
	p->ts.drains++;
}

static void batch_add(struct producer *p, int type, int active)
{
	p->batch[p->nbatch++] = (unsigned char)(type * 2 + active);
	if (p->nbatch == FOLIO_BATCH)
		drain(p);
}

static void refault(struct producer *p, int type)
{
	struct model *m = p->m;
	tally_group_mod(p->leaf->g, WORKINGSET_RESTORE_ANON + (unsigned)type, 1);
	if (m->cfg->mode == MODE_LEGACY)
		note_walk(p->leaf, type, 1, 0, SITE_REFAULT_NOTE_COST, &p->ts);
	batch_add(p, type, 1);
	p->ts.refaults++;
	charge(p);
}

/* seed 002: promotion_candidate() for a page-cache access. */
static void access_page_cache(struct producer *p, int lower_tier)
{
	struct model *m = p->m;
	p->ts.accesses++;
	if (!lower_tier)
		return; /* top-tier folios are not promoted */
	if (p->promo_count >= m->cfg->rate_limit) {
		tally_vec_inc(&m->promo, PGPROMOTE_RATELIMITED);
		return;
	}
	tally_vec_inc(&m->promo, NUMA_HINT_PAGE_CACHE);
	tally_vec_inc(&m->promo, PGPROMOTE_CANDIDATE);
	p->promo_list++;
	p->promo_count++;
}

/* task_numa_promotion_work() at the end of a "syscall". */
static void task_work(struct producer *p)
{
	if (p->promo_list)
		tally_vec_mod(&p->m->promo, PGPROMOTE_SUCCESS, (tally_sword)p->promo_list);
	if (p->promo_list > p->ts.promo_max)
		p->ts.promo_max = p->promo_list;
	p->promo_list = 0;
	p->promo_count = 0;
	p->syscall_events = 0;
	p->ts.promo_syscalls++;
}

static void producer_event(struct producer *p)
{
	const struct model_config *cfg = p->m->cfg;
	uint64_t r = rnd(&p->rng);
	unsigned kind = (unsigned)(r % 100);
	r >>= 8;
	if (kind < 45) { /* fault: 70% anon */
		batch_add(p, r % 10 < 7 ? TALLY_ANON : TALLY_FILE, 0);
		p->ts.faults++;
		charge(p);
	} else if (kind < 70) { /* refault: 75% anon */
		refault(p, r % 4 < 3 ? TALLY_ANON : TALLY_FILE);
	} else { /* page-cache read: half on a lower tier */
		access_page_cache(p, (int)(r & 1));
	}
	burn(cfg->user_work);
	p->events++;
	if (++p->syscall_events == cfg->syscall_events)
		task_work(p);
}

static void *producer_main(void *arg)
{
	struct producer *p = (struct producer *)arg;
	const struct model_config *cfg = p->m->cfg;
	struct lruvec *leaf = p->leaf;
	struct timespec start;
	if (cfg->pin)
		pin_nth(p->id);
	clock_gettime(CLOCK_MONOTONIC, &start);
	if (cfg->rate) {
		/* A seeded random phase within one syscall period, so that the
		 * producers do not wake in lockstep. */
		struct rng ph = rng_for(cfg->seed, 3, p->id, 0);
		uint64_t period = (uint64_t)cfg->syscall_events * 1000000000ull / cfg->rate;
		uint64_t ns = (uint64_t)start.tv_nsec + (period ? rnd(&ph) % period : 0);
		start.tv_sec += (time_t)(ns / 1000000000u);
		start.tv_nsec = (long)(ns % 1000000000u);
	}
	while (p->events < cfg->events) {
		producer_event(p);
		/* Open loop: the same event rate in both modes (the seed's
		 * workload drives the same pressure on both kernels). At the
		 * end of each "syscall", sleep until the schedule says the
		 * next one is due; a producer that falls behind runs flat out. */
		if (cfg->rate && p->syscall_events == 0) {
			uint64_t due = (uint64_t)start.tv_nsec +
				       (uint64_t)((double)p->events * 1e9 / (double)cfg->rate);
			struct timespec ts = start;
			ts.tv_sec += (time_t)(due / 1000000000u);
			ts.tv_nsec = (long)(due % 1000000000u);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
		}
	}
	drain(p);
	task_work(p);
	/* The leaf's last producer wakes every reclaimer to stop. */
	if (__atomic_sub_fetch(&leaf->producers_left, 1u, __ATOMIC_ACQ_REL) == 0)
		for (unsigned i = 0; i < p->m->cfg->reclaimers; i++)
			sem_post(&leaf->pass_sem);
	return NULL;
}

/* ---- reclaimers ----------------------------------------------------------- */
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

static void prepare_scan_control(struct reclaimer *rc, struct lruvec *target, uint64_t cost[2])
{
	const struct model_config *cfg = rc->m->cfg;
	tally_uword c[2];
	if (cfg->replay)
		tally_group_flush_force(target->g);
	else
		tally_group_flush_ratelimited(target->g);
	if (cfg->mode == MODE_LEGACY) {
		lock_at(&target->lru_lock, &rc->ts, SITE_PREPARE_SCAN);
		tally_cost_read(&target->classic, c);
		pthread_mutex_unlock(&target->lru_lock);
	} else {
		struct tally_cost_input in[2];
		cost_lock_at(&target->cost, &rc->ts, SITE_PREPARE_SCAN);
		read_inputs(target, in); /* under the lock: never older than the last fold's */
		tally_cost_fold_locked(&target->cost, in, lrusize(target), c);
		tally_cost_unlock(&target->cost);
	}
	cost[0] = c[0];
	cost[1] = c[1];
}

/* Isolate up to NR_SCAN folios from list l (lru_lock taken at site). */
static unsigned isolate(struct reclaimer *rc, struct lruvec *lv, int l, int site,
			struct folio **iso)
{
	tally_sword d[4] = {0, 0, 0, 0};
	unsigned n = 0;
	struct folio *f;
	lock_at(&lv->lru_lock, &rc->ts, site);
	while (n < NR_SCAN && (f = list_tail(&lv->lists[l]))) {
		list_del(f);
		f->lru = LRU_NONE;
		iso[n++] = f;
	}
	d[l] = -(tally_sword)n;
	lru_apply(lv, d);
	pthread_mutex_unlock(&lv->lru_lock);
	if (n)
		tally_inflight_isolate(&lv->inflight, (unsigned)(l / 2), n);
	return n;
}

/* Put folios back: dest[i] is a list index or LRU_NONE for evicted. */
static void putback(struct reclaimer *rc, struct lruvec *lv, int type, int site,
		    struct folio **iso, const unsigned char *dest, unsigned n)
{
	tally_sword d[4] = {0, 0, 0, 0};
	lock_at(&lv->lru_lock, &rc->ts, site);
	for (unsigned i = 0; i < n; i++) {
		iso[i]->lru = dest[i];
		if (dest[i] == LRU_NONE) {
			list_add(&lv->evicted[type], iso[i]);
		} else {
			list_add(&lv->lists[dest[i]], iso[i]);
			d[dest[i]]++;
		}
	}
	lru_apply(lv, d);
	pthread_mutex_unlock(&lv->lru_lock);
	if (n)
		tally_inflight_putback(&lv->inflight, (unsigned)type, n);
}

static void shrink_active_list(struct reclaimer *rc, struct lruvec *lv, int type)
{
	const struct model_config *cfg = rc->m->cfg;
	struct folio *iso[NR_SCAN];
	unsigned char dest[NR_SCAN];
	unsigned n, rotated = 0;
	n = isolate(rc, lv, type * 2 + 1, SITE_SHRINK_ACTIVE, iso);
	for (unsigned i = 0; i < n; i++) {
		int keep = type == TALLY_FILE && rnd(&rc->rng) % 100 < 10; /* referenced exec */
		burn(cfg->reclaim_work);
		dest[i] = (unsigned char)(type * 2 + keep);
		rotated += (unsigned)keep;
	}
	putback(rc, lv, type, SITE_SHRINK_ACTIVE, iso, dest, n);
	rc->ts.rotated += rotated;
	rc->ts.deactivated += n - rotated;
	if (cfg->mode == MODE_VMSTAT) {
		if (rotated)
			tally_group_mod(lv->g, PGROTATE_ANON + (unsigned)type, (tally_sword)rotated);
	} else {
		note_walk(lv, type, 0, rotated, SITE_NOTE_COST_UNLOCK, &rc->ts);
	}
}

static void shrink_inactive_list(struct reclaimer *rc, struct lruvec *lv, int type,
				 unsigned *scanned, unsigned *reclaimed)
{
	const struct model_config *cfg = rc->m->cfg;
	struct folio *iso[NR_SCAN];
	unsigned char dest[NR_SCAN];
	unsigned n, nr_reclaimed = 0, nr_pageout = 0;
	n = isolate(rc, lv, type * 2, SITE_ISOLATE, iso);
	/* Like memory.max: folios are freed only while the leaf is above its
	 * limit (7/8 of its folios resident); below it they are kept. */
	tally_uword resident = tally_sum_clamped(&lv->nr_pages[0][0], 4) + n;
	tally_uword limit = (tally_uword)cfg->folios / 8u * 7u;
	for (unsigned i = 0; i < n; i++) {
		unsigned r = (unsigned)(rnd(&rc->rng) % 100);
		burn(cfg->reclaim_work);
		if (r < 40) {
			if (resident > limit) {
				resident--;
				dest[i] = LRU_NONE; /* reclaimed */
				nr_reclaimed++;
			} else {
				dest[i] = (unsigned char)(type * 2); /* kept: under the limit */
			}
		} else if (type == TALLY_ANON && r < 60) {
			dest[i] = (unsigned char)(type * 2); /* under writeback */
			nr_pageout++;
		} else {
			dest[i] = (unsigned char)(type * 2 + 1); /* referenced: activate */
		}
	}
	putback(rc, lv, type, SITE_PUTBACK, iso, dest, n);
	rc->ts.scanned += n;
	rc->ts.reclaimed += nr_reclaimed;
	rc->ts.pageouts += nr_pageout;
	if (cfg->mode == MODE_VMSTAT) {
		if (n - nr_reclaimed)
			tally_group_mod(lv->g, PGROTATE_ANON + (unsigned)type,
					(tally_sword)(n - nr_reclaimed));
		if (nr_pageout)
			tally_group_mod(lv->g, NR_VMSCAN_WRITE, (tally_sword)nr_pageout);
	} else {
		note_walk(lv, type, nr_pageout, n - nr_reclaimed, SITE_NOTE_COST_UNLOCK, &rc->ts);
	}
	*scanned = n;
	*reclaimed = nr_reclaimed;
}

static void reclaim_pass(struct reclaimer *rc, unsigned long global_pass)
{
	const struct model_config *cfg = rc->m->cfg;
	struct lruvec *leaf = rc->leaf, *target = leaf;
	struct pass_report rep;
	uint64_t cost[2], fr[2], denom;
	struct tally_inflight_caller who = {false, true, &rc->dying};
	bool fatal;
	unsigned allowed, scanned = 0, reclaimed = 0;
	int type;

	rc->pass_no++;
	if (cfg->parent_every && rc->pass_no % cfg->parent_every == 0 && leaf->parent)
		target = leaf->parent;
	prepare_scan_control(rc, target, cost);
	tally_scan_fraction((tally_uword)cost[0], (tally_uword)cost[1], cfg->swappiness, fr, &denom);
	type = rnd(&rc->rng) % denom < fr[0] ? TALLY_ANON : TALLY_FILE;
	allowed = tally_inflight_allowed(&leaf->inflight, 3u, evictable, leaf, &who, &fatal);
	if (allowed && !(allowed & (1u << type)))
		type = !type; /* like isolate_folios(): start from the allowed one */
	rc->ts.passes++;
	if (!allowed) {
		rc->ts.passes_throttled++;
		type = -1;
	} else {
		shrink_active_list(rc, leaf, type);
		shrink_inactive_list(rc, leaf, type, &scanned, &reclaimed);
	}
	if (cfg->on_pass) {
		rep.mode = cfg->mode;
		rep.pass = global_pass;
		rep.target = target->name;
		rep.leaf = leaf->name;
		rep.cost[0] = cost[0];
		rep.cost[1] = cost[1];
		rep.fraction[0] = fr[0];
		rep.fraction[1] = fr[1];
		rep.denominator = denom;
		rep.type = type;
		rep.scanned = scanned;
		rep.reclaimed = reclaimed;
		cfg->on_pass(cfg->arg, &rep);
	}
}

/*
 * Every post of the leaf's semaphore is a pass due (posted after due was
 * incremented) or, once the producers are done, one stop per reclaimer.
 * A wake-up takes a pass if one is due, else it is a stop: before the
 * stops are posted every wake-up finds a pass, so each reclaimer stops
 * exactly once and the passes run are exactly the passes due.
 */
static void *reclaimer_main(void *arg)
{
	struct reclaimer *rc = (struct reclaimer *)arg;
	struct lruvec *leaf = rc->leaf;
	if (rc->m->cfg->pin)
		pin_nth(rc->id);
	for (;;) {
		unsigned long d;
		while (sem_wait(&leaf->pass_sem))
			; /* EINTR */
		d = __atomic_load_n(&leaf->due, __ATOMIC_RELAXED);
		while (d && !__atomic_compare_exchange_n(&leaf->due, &d, d - 1, 0,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		if (!d)
			break;
		reclaim_pass(rc, 0);
	}
	return NULL;
}

/* ---- setup and teardown ------------------------------------------------------ */
static struct lruvec *lruvec_new(struct model *m, struct lruvec *parent, const char *name)
{
	struct lruvec *lv;
	if (m->nr_lruvecs == MODEL_MAX_LRUVECS)
		return NULL;
	lv = (struct lruvec *)calloc(1, sizeof(*lv));
	if (!lv)
		return NULL;
	snprintf(lv->name, sizeof(lv->name), "%s", name);
	lv->parent = parent;
	lv->g = parent ? tally_group_create(parent->g) : tally_tree_root(m->tree);
	if (!lv->g || lock_init(&lv->lru_lock) ||
	    tally_inflight_init(&lv->inflight, 2, m->cfg->throttle_wait_ns)) {
		free(lv);
		return NULL;
	}
	for (int l = 0; l < 4; l++)
		list_init(&lv->lists[l]);
	list_init(&lv->evicted[0]);
	list_init(&lv->evicted[1]);
	tally_cost_init(&lv->classic);
	tally_cost_init(&lv->cost);
	m->lv[m->nr_lruvecs++] = lv;
	return lv;
}

static int leaf_fill(struct model *m, struct lruvec *lv)
{
	const struct model_config *cfg = m->cfg;
	tally_sword d[4] = {0, 0, 0, 0};
	lv->folios = (struct folio *)calloc(cfg->folios ? cfg->folios : 1, sizeof(struct folio));
	if (!lv->folios)
		return -ENOMEM;
	for (unsigned i = 0; i < cfg->folios; i++) {
		struct folio *f = &lv->folios[i];
		f->type = (unsigned char)(i & 1);
		f->lru = (unsigned char)(f->type * 2);
		list_add(&lv->lists[f->lru], f);
		d[f->lru]++;
	}
	lru_apply(lv, d);
	/* Pages the model does not simulate one by one (stats only). */
	if (cfg->lru_pad)
		tally_group_mod(lv->g, NR_INACTIVE_FILE, (tally_sword)cfg->lru_pad);
	return 0;
}

static void model_free(struct model *m)
{
	for (unsigned i = 0; i < m->nr_lruvecs; i++) {
		struct lruvec *lv = m->lv[i];
		pthread_mutex_destroy(&lv->lru_lock);
		tally_inflight_destroy(&lv->inflight);
		if (lv->has_sem)
			sem_destroy(&lv->pass_sem);
		free(lv->folios);
		free(lv);
	}
	tally_vec_destroy(&m->promo);
	tally_tree_destroy(m->tree);
}

static int model_build(struct model *m)
{
	const struct model_config *cfg = m->cfg;
	struct tally_tree_opts o;
	struct lruvec *root, *mid;
	char name[128];
	memset(&o, 0, sizeof(o));
	o.nr_items = NR_ITEMS;
	if (cfg->flush_period_ns)
		o.period_ns = cfg->flush_period_ns;
	m->tree = tally_tree_create_opts(&o);
	if (!m->tree)
		return -errno;
	if (tally_vec_init(&m->promo, NR_PROMO_ITEMS, 0))
		return -ENOMEM;
	root = lruvec_new(m, NULL, "root");
	if (!root)
		return -ENOMEM;
	/* A chain of depth - 1 ancestors, then the leaves. */
	mid = root;
	for (unsigned d = 1; d < cfg->depth; d++) {
		snprintf(name, sizeof(name), "%.100s/%c", mid->name, 'A' + (int)(d - 1) % 26);
		mid = lruvec_new(m, mid, name);
		if (!mid)
			return -ENOMEM;
	}
	for (unsigned i = 0; i < cfg->leaves; i++) {
		struct lruvec *lv;
		snprintf(name, sizeof(name), "%.100s/%u", mid->name, i);
		lv = lruvec_new(m, mid, name);
		if (!lv || leaf_fill(m, lv))
			return -ENOMEM;
		if (sem_init(&lv->pass_sem, 0, 0))
			return -errno;
		lv->has_sem = 1;
		lv->producers_left = cfg->producers;
		m->leaf[m->nr_leaves++] = lv;
	}
	tally_group_flush_force(root->g);
	/* Prime the read-side accumulators with the first readings, so that
	 * a wrap-early start (TALLY_WRAP_EARLY) does not fold as a delta. */
	for (unsigned i = 0; i < m->nr_lruvecs; i++) {
		struct tally_cost_input in[2];
		read_inputs(m->lv[i], in);
		tally_cost_fold(&m->lv[i]->cost, in, 0, NULL);
	}
	return 0;
}

void model_default_config(struct model_config *c)
{
	memset(c, 0, sizeof(*c));
	c->mode = MODE_VMSTAT;
	c->seed = 1;
	c->leaves = 2;
	c->depth = 2;
	c->producers = 3;
	c->reclaimers = 1;
	c->events = 150000;
	c->rate = 50000;
	c->pin = 1;
	c->alloc_per_pass = 12;
	c->folios = 8192;
	c->swappiness = 60;
	c->parent_every = 4;
	c->rate_limit = 8;
	c->syscall_events = 64;
	c->user_work = 8;
	c->reclaim_work = 2;
	c->flush_period_ns = 50000000; /* 50 ms */
	c->throttle_wait_ns = 20000000; /* 20 ms, HZ/50 */
	c->rounds = 40;
	c->round_events = 40;
}

static void add_stats(struct model_result *res, const struct tstats *ts)
{
	for (int s = 0; s < NR_SITES; s++) {
		res->acquisitions[s] += ts->acq[s];
		res->wait_ns[s] += ts->wait_ns[s];
		res->contended[s] += ts->contended[s];
	}
	res->faults += ts->faults;
	res->refaults += ts->refaults;
	res->accesses += ts->accesses;
	res->drains += ts->drains;
	res->passes += ts->passes;
	res->passes_throttled += ts->passes_throttled;
	res->scanned += ts->scanned;
	res->reclaimed += ts->reclaimed;
	res->pageouts += ts->pageouts;
	res->rotated += ts->rotated;
	res->deactivated += ts->deactivated;
	res->promo_syscalls += ts->promo_syscalls;
	if (ts->promo_max > res->promo_max_per_syscall)
		res->promo_max_per_syscall = ts->promo_max;
}

static int config_ok(const struct model_config *c)
{
	return (c->mode == MODE_LEGACY || c->mode == MODE_VMSTAT) && c->leaves >= 1 &&
	       c->depth >= 1 && c->depth + c->leaves <= MODEL_MAX_LRUVECS && c->producers >= 1 &&
	       c->reclaimers >= 1 && c->producers * c->leaves <= 1024 &&
	       c->reclaimers * c->leaves <= 1024 && c->swappiness <= TALLY_MAX_SWAPPINESS &&
	       c->syscall_events >= 1 && c->alloc_per_pass >= 1 && c->lru_pad <= (unsigned long)TALLY_SWORD_MAX / 4 &&
	       c->folios <= (1u << 24) && c->throttle_wait_ns <= TALLY_INFLIGHT_WAIT_MAX_NS &&
	       c->throttle_wait_ns >= 1;
}

int model_run(const struct model_config *cfg, struct model_result *res)
{
	struct model m;
	struct producer *prod = NULL;
	struct reclaimer *recl = NULL;
	unsigned np, nr, i;
	int err;

	if (!cfg || !res || !config_ok(cfg))
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	memset(res, 0, sizeof(*res));
	m.cfg = cfg;
	res->mode = cfg->mode;
	err = model_build(&m);
	np = cfg->producers * m.nr_leaves;
	nr = cfg->reclaimers * m.nr_leaves;
	if (!err) {
		prod = (struct producer *)calloc(np, sizeof(*prod));
		recl = (struct reclaimer *)calloc(nr, sizeof(*recl));
		if (!prod || !recl)
			err = -ENOMEM;
	}
	if (err)
		goto out;
	for (i = 0; i < np; i++) {
		prod[i].m = &m;
		prod[i].id = i;
		prod[i].leaf = m.leaf[i / cfg->producers];
		prod[i].rng = rng_for(cfg->seed, 1, i / cfg->producers, i % cfg->producers);
	}
	for (i = 0; i < nr; i++) {
		recl[i].m = &m;
		recl[i].id = np + i;
		recl[i].leaf = m.leaf[i / cfg->reclaimers];
		recl[i].rng = rng_for(cfg->seed, 2, i / cfg->reclaimers, i % cfg->reclaimers);
	}

	uint64_t t0 = now_ns();
	if (cfg->replay) {
		unsigned long pass = 0;
		if (cfg->script) {
			for (unsigned k = 0; k < cfg->script->anon_refaults; k++)
				refault(&prod[0], TALLY_ANON);
			for (unsigned k = 0; k < cfg->script->file_refaults; k++)
				refault(&prod[0], TALLY_FILE);
			drain(&prod[0]);
		}
		for (unsigned long r = 0; r < cfg->rounds; r++) {
			for (i = 0; i < np; i++)
				for (unsigned long e = 0; e < cfg->round_events; e++)
					producer_event(&prod[i]);
			for (i = 0; i < nr; i++)
				reclaim_pass(&recl[i], ++pass);
		}
		for (i = 0; i < np; i++) {
			drain(&prod[i]);
			task_work(&prod[i]);
		}
	} else {
		err = tally_tree_start_flusher(m.tree, 0);
		if (err)
			goto out;
		unsigned started_p = 0, started_r = 0;
		while (!err && started_p < np) {
			err = -pthread_create(&prod[started_p].th, NULL, producer_main, &prod[started_p]);
			started_p += !err;
		}
		while (!err && started_r < nr) {
			err = -pthread_create(&recl[started_r].th, NULL, reclaimer_main, &recl[started_r]);
			started_r += !err;
		}
		for (i = 0; i < started_p; i++)
			pthread_join(prod[i].th, NULL);
		for (i = 0; i < started_r; i++)
			pthread_join(recl[i].th, NULL);
		tally_tree_stop_flusher(m.tree);
		if (err)
			goto out;
	}
	res->elapsed_ns = now_ns() - t0;

	for (i = 0; i < np; i++) {
		add_stats(res, &prod[i].ts);
		res->passes_due += prod[i].passes_due;
	}
	for (i = 0; i < nr; i++)
		add_stats(res, &recl[i].ts);
	for (int s = 0; s < NR_SITES; s++) {
		if (site_is_producer(s))
			res->producer_lock_acquisitions += res->acquisitions[s];
		res->total_lock_wait_ns += res->wait_ns[s];
	}
	for (i = 0; i < m.nr_leaves; i++) {
		struct tally_inflight_stats s;
		tally_inflight_stats(&m.leaf[i]->inflight, &s);
		res->throttled += s.throttled;
		res->throttle_woken += s.woken;
		res->throttle_timeouts += s.timeouts;
		res->throttle_gave_up += s.gave_up;
	}
	for (int k = 0; k < NR_PROMO_ITEMS; k++)
		res->promo[k] = (uint64_t)tally_vec_read_exact(&m.promo, (unsigned)k);

	/* Final costs: legacy as noted; vmstat after a forced flush and one
	 * last fold, so every event is in. */
	tally_group_flush_force(m.lv[0]->g);
	res->nr_lruvecs = m.nr_lruvecs;
	for (i = 0; i < m.nr_lruvecs; i++) {
		struct lruvec *lv = m.lv[i];
		struct lruvec_report *r = &res->lruvec[i];
		tally_uword c[2];
		snprintf(r->name, sizeof(r->name), "%s", lv->name);
		r->lrusize = lrusize(lv);
		if (cfg->mode == MODE_LEGACY) {
			tally_cost_read(&lv->classic, c);
		} else {
			struct tally_cost_input in[2];
			tally_cost_lock(&lv->cost);
			read_inputs(lv, in);
			tally_cost_fold_locked(&lv->cost, in, r->lrusize, c);
			tally_cost_unlock(&lv->cost);
		}
		r->cost[0] = c[0];
		r->cost[1] = c[1];
		tally_scan_fraction(c[0], c[1], cfg->swappiness, r->fraction, &r->denominator);
	}
out:
	free(prod);
	free(recl);
	model_free(&m);
	return err;
}
