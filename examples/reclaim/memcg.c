/*
 * examples/reclaim/memcg.c - the memcg tree: one lruvec per memcg (its LRU
 * lists under lru_lock, its statistics in a tally group, its two cost
 * accumulators, its isolation gauges), the LRU sizes the costs decay
 * against, and the legacy cost walk up the tree.
 */
#define _GNU_SOURCE
#include "model_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Apply LRU size deltas (lru_lock held): page counts and the stats. */
void lru_apply(struct lruvec *lv, const lru_delta d)
{
	int lru;
	for_each_evictable_lru(lru) {
		tally_sword *np = &lv->nr_pages[lru];
		if (!d[lru])
			continue;
		__atomic_store_n(np, *np + d[lru], __ATOMIC_RELAXED);
		tally_group_mod(lv->g, lru_item((enum lru_list)lru), d[lru]);
	}
}

/* The LRU size the costs decay against (lruvec_page_state() of the four
 * lists: flushed hierarchical values). */
tally_uword lrusize(const struct lruvec *lv)
{
	tally_uword s = 0;
	int lru;
	for_each_evictable_lru(lru)
		s += tally_group_read_positive(lv->g, lru_item((enum lru_list)lru));
	return s;
}

/* The throttle's evictable size of a type: its inactive and active lists
 * (adjacent), summed locklessly. */
tally_uword evictable(void *arg, unsigned type)
{
	struct lruvec *lv = (struct lruvec *)arg;
	_Static_assert(LRU_ACTIVE_ANON == LRU_INACTIVE_ANON + 1 &&
			       LRU_ACTIVE_FILE == LRU_INACTIVE_FILE + 1,
		       "a type's two lists are adjacent");
	return tally_sum_clamped(&lv->nr_pages[lru_of((int)type, 0)], 2);
}

/* Folios on the four lists, summed locklessly. */
tally_uword resident(const struct lruvec *lv)
{
	return tally_sum_clamped(lv->nr_pages, NR_EVICTABLE_LRU);
}

/* The read-side cost inputs, as in the patch's prepare_scan_control(). */
void read_inputs(const struct lruvec *lv, struct tally_cost_input in[2])
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
void note_walk(struct lruvec *lv, int type, tally_uword io, tally_uword rot, int site,
	       struct tstats *ts)
{
	for (; lv; lv = lv->parent) {
		lock_at(&lv->lru_lock, ts, site);
		tally_cost_note(&lv->classic, type, io, rot, lrusize(lv));
		unlock(&lv->lru_lock);
	}
}

static struct lruvec *lruvec_new(struct model *m, struct lruvec *parent, const char *name)
{
	struct lruvec *lv;
	int lru;
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
	for_each_evictable_lru(lru)
		list_init(&lv->lists[lru]);
	list_init(&lv->evicted[TALLY_ANON]);
	list_init(&lv->evicted[TALLY_FILE]);
	tally_cost_init(&lv->classic);
	tally_cost_init(&lv->cost);
	m->lv[m->nr_lruvecs++] = lv;
	return lv;
}

/* A leaf's folios, all resident at start, inactive, anon and file in turn. */
static int leaf_fill(struct model *m, struct lruvec *lv)
{
	const struct model_config *cfg = m->cfg;
	lru_delta d = {0};
	lv->folios = (struct folio *)calloc(cfg->folios ? cfg->folios : 1, sizeof(struct folio));
	if (!lv->folios)
		return -ENOMEM;
	for (unsigned i = 0; i < cfg->folios; i++) {
		struct folio *f = &lv->folios[i];
		f->type = (unsigned char)(i & 1);
		f->lru = (unsigned char)lru_of(f->type, 0);
		list_add(&lv->lists[f->lru], f);
		d[f->lru]++;
	}
	lru_apply(lv, d);
	/* Pages the model does not simulate one by one (stats only). */
	if (cfg->lru_pad)
		tally_group_mod(lv->g, NR_INACTIVE_FILE, (tally_sword)cfg->lru_pad);
	return 0;
}

void model_free(struct model *m)
{
	for (unsigned i = 0; i < m->nr_lruvecs; i++) {
		struct lruvec *lv = m->lv[i];
		lock_destroy(&lv->lru_lock);
		tally_inflight_destroy(&lv->inflight);
		if (lv->has_sem)
			sem_destroy(&lv->pass_sem);
		free(lv->folios);
		free(lv);
	}
	tally_vec_destroy(&m->promo);
	tally_tree_destroy(m->tree);
}

/* root -> a chain of depth - 1 ancestors -> the leaves. */
int model_build(struct model *m)
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
