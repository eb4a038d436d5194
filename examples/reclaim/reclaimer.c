/*
 * examples/reclaim/reclaimer.c - shrink_lruvec() on one leaf, on demand:
 *
 *   pressure  every alloc_per_pass allocations a producer makes one reclaim
 *             pass due on its leaf and posts a semaphore; the leaf's
 *             reclaimers run the passes due (so both modes do exactly the
 *             same number of passes, and reclaim keeps pace with the
 *             faults) and stop when the producers are done and no pass is
 *             due.
 *   prepare_scan_control(target): target is the leaf, or its parent every
 *             parent_every passes (a limit hit higher up). Flush the
 *             target's stats (ratelimited). legacy: read the classic costs
 *             under the target's lru_lock. vmstat: under the target's cost
 *             lock, read the monotonic inputs and fold. get_scan_count()'s
 *             fraction picks anon or file.
 *   throttle  tally_inflight_allowed() on the leaf ("mm/vmscan: throttle
 *             MGLRU eviction when isolated folios pile up", Hui Zhu); the
 *             type falls back to the other one when it is not allowed.
 *   shrink_active_list: isolate up to 32 active folios under lru_lock,
 *             rotate (keep active) referenced file folios, deactivate the
 *             rest, put back under lru_lock; legacy: note (0, rotated) with
 *             lru_lock on the leaf and every ancestor; vmstat: PGROTATE +=
 *             rotated.
 *   shrink_inactive_list: isolate up to 32 inactive folios (isolate),
 *             shrink them outside the lock: reclaimed (evicted, later
 *             refaulted), paged out (anon: stays inactive, NR_VMSCAN_WRITE)
 *             or kept (activated); put back (putback); legacy: note
 *             (pageouts, scanned - reclaimed) up the tree; vmstat: PGROTATE
 *             += scanned - reclaimed, NR_VMSCAN_WRITE += pageouts.
 */
#define _GNU_SOURCE
#include "model_impl.h"

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
		unlock(&target->lru_lock);
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

/* Isolate up to NR_SCAN folios from one list (lru_lock taken at site). */
static unsigned isolate(struct reclaimer *rc, struct lruvec *lv, enum lru_list lru, int site,
			struct folio **iso)
{
	lru_delta d = {0};
	unsigned n = 0;
	struct folio *f;
	lock_at(&lv->lru_lock, &rc->ts, site);
	while (n < NR_SCAN && (f = list_tail(&lv->lists[lru]))) {
		list_del(f);
		f->lru = LRU_NONE;
		iso[n++] = f;
	}
	d[lru] = -(tally_sword)n;
	lru_apply(lv, d);
	unlock(&lv->lru_lock);
	if (n)
		tally_inflight_isolate(&lv->inflight, (unsigned)is_file_lru(lru), n);
	return n;
}

/* Put folios back: dest[i] is an enum lru_list, or LRU_NONE for evicted. */
static void putback(struct reclaimer *rc, struct lruvec *lv, int type, int site,
		    struct folio **iso, const unsigned char *dest, unsigned n)
{
	lru_delta d = {0};
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
	unlock(&lv->lru_lock);
	if (n)
		tally_inflight_putback(&lv->inflight, (unsigned)type, n);
}

static void shrink_active_list(struct reclaimer *rc, struct lruvec *lv, int type)
{
	const struct model_config *cfg = rc->m->cfg;
	struct folio *iso[NR_SCAN];
	unsigned char dest[NR_SCAN];
	unsigned n, rotated = 0;
	n = isolate(rc, lv, lru_of(type, 1), SITE_SHRINK_ACTIVE, iso);
	for (unsigned i = 0; i < n; i++) {
		int keep = type == TALLY_FILE && rnd(&rc->rng) % 100 < 10; /* referenced exec */
		burn(cfg->reclaim_work);
		dest[i] = (unsigned char)lru_of(type, keep);
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
	unsigned char dest[NR_SCAN] = {0}; /* gcc 12 -O3 cannot see n <= NR_SCAN */
	unsigned n, nr_reclaimed = 0, nr_pageout = 0;
	n = isolate(rc, lv, lru_of(type, 0), SITE_ISOLATE, iso);
	/* Like memory.max: folios are freed only while the leaf is above its
	 * limit (7/8 of its folios resident); below it they are kept. */
	tally_uword nr_resident = resident(lv) + n;
	tally_uword limit = (tally_uword)cfg->folios / 8u * 7u;
	for (unsigned i = 0; i < n; i++) {
		unsigned r = (unsigned)(rnd(&rc->rng) % 100);
		burn(cfg->reclaim_work);
		if (r < 40) {
			if (nr_resident > limit) {
				nr_resident--;
				dest[i] = LRU_NONE; /* reclaimed */
				nr_reclaimed++;
			} else {
				dest[i] = (unsigned char)lru_of(type, 0); /* kept: under the limit */
			}
		} else if (type == TALLY_ANON && r < 60) {
			dest[i] = (unsigned char)lru_of(type, 0); /* under writeback */
			nr_pageout++;
		} else {
			dest[i] = (unsigned char)lru_of(type, 1); /* referenced: activate */
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

void reclaim_pass(struct reclaimer *rc, unsigned long global_pass)
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
void *reclaimer_main(void *arg)
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

