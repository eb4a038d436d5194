/*
 * examples/reclaim/producer.c - a task faulting memory (like usemem):
 *
 *   fault     a new folio goes to the task's folio batch (15 entries); a
 *             full batch drains into the leaf's LRU under lru_lock
 *             (lru_add_drain_cpu()).
 *   refault   workingset_refault(): WORKINGSET_RESTORE_{ANON,FILE} += 1;
 *             legacy: lru_note_cost_refault(), lru_lock and a note on the
 *             leaf and on every ancestor in turn; then the folio goes to
 *             the active list through the batch.
 *   access    a page-cache read ("Promotion of Unmapped Page Cache
 *             Folios", Gregory Price, 2025): a lower-tier folio counts a
 *             NUMA_HINT_PAGE_CACHE event and becomes a promotion candidate
 *             unless the task's budget for this "syscall" is spent (the
 *             rate limit); the task work at the end of the syscall
 *             promotes the list and resets the budget.
 *   pressure  every alloc_per_pass allocations (faults and refaults) one
 *             reclaim pass is due on the leaf (see reclaimer.c).
 */
#define _GNU_SOURCE
#include "model_impl.h"

#include <errno.h>
#include <time.h>

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

/* lru_add_drain_cpu(): the batch onto the leaf's lists. */
void drain(struct producer *p)
{
	struct lruvec *lv = p->leaf;
	lru_delta d = {0};
	if (!p->nbatch)
		return;
	lock_at(&lv->lru_lock, &p->ts, SITE_LRU_ADD_DRAIN);
	for (unsigned i = 0; i < p->nbatch; i++) {
		enum lru_list lru = (enum lru_list)p->batch[i];
		int type = is_file_lru(lru);
		struct folio *f = list_tail(&lv->evicted[type]);
		if (!f) {
			/* Nothing evicted to fault back in: the batch entry
			 * activates an inactive folio instead (same work). */
			f = list_tail(&lv->lists[lru_of(type, 0)]);
			if (!f)
				continue;
			d[lru_of(type, 0)]--;
			lru = lru_of(type, 1);
		}
		list_del(f);
		f->lru = (unsigned char)lru;
		list_add(&lv->lists[lru], f);
		d[lru]++;
	}
	lru_apply(lv, d);
	unlock(&lv->lru_lock);
	p->nbatch = 0;
	p->ts.drains++;
}

static void batch_add(struct producer *p, int type, int active)
{
	p->batch[p->nbatch++] = (unsigned char)lru_of(type, active);
	if (p->nbatch == FOLIO_BATCH)
		drain(p);
}

void refault(struct producer *p, int type)
{
	struct model *m = p->m;
	tally_group_mod(p->leaf->g, WORKINGSET_RESTORE_ANON + (unsigned)type, 1);
	if (m->cfg->mode == MODE_LEGACY)
		note_walk(p->leaf, type, 1, 0, SITE_REFAULT_NOTE_COST, &p->ts);
	batch_add(p, type, 1);
	p->ts.refaults++;
	charge(p);
}

/* promotion_candidate() for a page-cache access. */
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
void task_work(struct producer *p)
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

void producer_event(struct producer *p)
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

void *producer_main(void *arg)
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
		/* Open loop: the same event rate in both modes (the patch's
		 * benchmark drives the same pressure on both kernels). At the
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
