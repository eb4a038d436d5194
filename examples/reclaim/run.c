/*
 * examples/reclaim/run.c - model_run(): build the memcg tree and the
 * threads' state, run them (one thread, in rounds, for a replay; real
 * threads otherwise), collect the counts and the final costs.
 */
#define _GNU_SOURCE
#include "model_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int config_ok(const struct model_config *c)
{
	return (c->mode == MODE_LEGACY || c->mode == MODE_VMSTAT) && c->leaves >= 1 &&
	       c->depth >= 1 && c->depth + c->leaves <= MODEL_MAX_LRUVECS && c->producers >= 1 &&
	       c->reclaimers >= 1 && c->producers * c->leaves <= 1024 &&
	       c->reclaimers * c->leaves <= 1024 && c->swappiness <= TALLY_MAX_SWAPPINESS &&
	       c->syscall_events >= 1 && c->alloc_per_pass >= 1 &&
	       c->lru_pad <= (unsigned long)TALLY_SWORD_MAX / 4 && c->folios <= (1u << 24) &&
	       c->throttle_wait_ns <= TALLY_INFLIGHT_WAIT_MAX_NS && c->throttle_wait_ns >= 1;
}

/* Everything one run holds. */
struct run {
	const struct model_config *cfg;
	struct model m;
	struct producer *prod;
	struct reclaimer *recl;
	unsigned np, nr;
};

/* The tree, then every producer and reclaimer with its own seeded stream. */
static int run_build(struct run *r)
{
	const struct model_config *cfg = r->cfg;
	int err = model_build(&r->m);
	if (err)
		return err;
	r->np = cfg->producers * r->m.nr_leaves;
	r->nr = cfg->reclaimers * r->m.nr_leaves;
	r->prod = (struct producer *)calloc(r->np, sizeof(*r->prod));
	r->recl = (struct reclaimer *)calloc(r->nr, sizeof(*r->recl));
	if (!r->prod || !r->recl)
		return -ENOMEM;
	for (unsigned i = 0; i < r->np; i++) {
		struct producer *p = &r->prod[i];
		p->m = &r->m;
		p->id = i;
		p->leaf = r->m.leaf[i / cfg->producers];
		p->rng = rng_for(cfg->seed, 1, i / cfg->producers, i % cfg->producers);
		p->ts.hold_times = cfg->hold_times;
	}
	for (unsigned i = 0; i < r->nr; i++) {
		struct reclaimer *rc = &r->recl[i];
		rc->m = &r->m;
		rc->id = r->np + i;
		rc->leaf = r->m.leaf[i / cfg->reclaimers];
		rc->rng = rng_for(cfg->seed, 2, i / cfg->reclaimers, i % cfg->reclaimers);
		rc->ts.hold_times = cfg->hold_times;
	}
	return 0;
}

/* One thread, deterministic: the script, then rounds of events from every
 * producer and one pass from every reclaimer. */
static void run_replay(struct run *r)
{
	const struct model_config *cfg = r->cfg;
	unsigned long pass = 0;
	if (cfg->script) {
		for (unsigned k = 0; k < cfg->script->anon_refaults; k++)
			refault(&r->prod[0], TALLY_ANON);
		for (unsigned k = 0; k < cfg->script->file_refaults; k++)
			refault(&r->prod[0], TALLY_FILE);
		drain(&r->prod[0]);
	}
	for (unsigned long round = 0; round < cfg->rounds; round++) {
		for (unsigned i = 0; i < r->np; i++)
			for (unsigned long e = 0; e < cfg->round_events; e++)
				producer_event(&r->prod[i]);
		for (unsigned i = 0; i < r->nr; i++)
			reclaim_pass(&r->recl[i], ++pass);
	}
	for (unsigned i = 0; i < r->np; i++) {
		drain(&r->prod[i]);
		task_work(&r->prod[i]);
	}
}

/* Real threads and the periodic flusher; 0 or a negative errno. */
static int run_threads(struct run *r)
{
	unsigned started_p = 0, started_r = 0, i;
	int err = tally_tree_start_flusher(r->m.tree, 0);
	if (err)
		return err;
	while (!err && started_p < r->np) {
		err = -pthread_create(&r->prod[started_p].th, NULL, producer_main, &r->prod[started_p]);
		started_p += !err;
	}
	while (!err && started_r < r->nr) {
		err = -pthread_create(&r->recl[started_r].th, NULL, reclaimer_main, &r->recl[started_r]);
		started_r += !err;
	}
	/* On a failed start the producers started still finish their events
	 * and post the stops; the reclaimers started take them. */
	for (i = 0; i < started_p; i++)
		pthread_join(r->prod[i].th, NULL);
	for (i = 0; i < started_r; i++)
		pthread_join(r->recl[i].th, NULL);
	tally_tree_stop_flusher(r->m.tree);
	return err;
}

static void add_stats(struct model_result *res, const struct tstats *ts)
{
	for (int s = 0; s < NR_SITES; s++) {
		res->acquisitions[s] += ts->acq[s];
		res->wait_ns[s] += ts->wait_ns[s];
		res->contended[s] += ts->contended[s];
		res->long_waits[s] += ts->long_waits[s];
		res->long_wait_ns[s] += ts->long_wait_ns[s];
		res->hold_ns[s] += ts->hold_ns[s];
		for (int h = 0; h < NR_SITES; h++)
			res->contended_by[s][h] += ts->contended_by[s][h];
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

/* Final costs per lruvec: legacy as noted; vmstat after a forced flush and
 * one last fold, so every event is in. */
static void collect_costs(struct run *r, struct model_result *res)
{
	const struct model_config *cfg = r->cfg;
	tally_group_flush_force(r->m.lv[0]->g);
	res->nr_lruvecs = r->m.nr_lruvecs;
	for (unsigned i = 0; i < r->m.nr_lruvecs; i++) {
		struct lruvec *lv = r->m.lv[i];
		struct lruvec_report *rep = &res->lruvec[i];
		tally_uword c[2];
		snprintf(rep->name, sizeof(rep->name), "%s", lv->name);
		rep->lrusize = lrusize(lv);
		if (cfg->mode == MODE_LEGACY) {
			tally_cost_read(&lv->classic, c);
		} else {
			struct tally_cost_input in[2];
			tally_cost_lock(&lv->cost);
			read_inputs(lv, in);
			tally_cost_fold_locked(&lv->cost, in, rep->lrusize, c);
			tally_cost_unlock(&lv->cost);
		}
		rep->cost[0] = c[0];
		rep->cost[1] = c[1];
		tally_scan_fraction(c[0], c[1], cfg->swappiness, rep->fraction, &rep->denominator);
	}
}

/* The threads' counts, the throttle's and the promotion vector's. */
static void run_collect(struct run *r, struct model_result *res)
{
	unsigned i;
	for (i = 0; i < r->np; i++) {
		add_stats(res, &r->prod[i].ts);
		res->passes_due += r->prod[i].passes_due;
	}
	for (i = 0; i < r->nr; i++)
		add_stats(res, &r->recl[i].ts);
	for (int s = 0; s < NR_SITES; s++) {
		if (site_is_producer(s))
			res->producer_lock_acquisitions += res->acquisitions[s];
		res->total_lock_wait_ns += res->wait_ns[s];
	}
	for (i = 0; i < r->m.nr_leaves; i++) {
		struct tally_inflight_stats s;
		tally_inflight_stats(&r->m.leaf[i]->inflight, &s);
		res->throttled += s.throttled;
		res->throttle_woken += s.woken;
		res->throttle_timeouts += s.timeouts;
		res->throttle_gave_up += s.gave_up;
	}
	for (int k = 0; k < NR_PROMO_ITEMS; k++)
		res->promo[k] = (uint64_t)tally_vec_read_exact(&r->m.promo, (unsigned)k);
	collect_costs(r, res);
}

int model_run(const struct model_config *cfg, struct model_result *res)
{
	struct run r;
	uint64_t t0;
	int err;

	if (!cfg || !res || !config_ok(cfg))
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	memset(res, 0, sizeof(*res));
	r.cfg = cfg;
	r.m.cfg = cfg;
	res->mode = cfg->mode;
	err = run_build(&r);
	if (!err) {
		t0 = now_ns();
		if (cfg->replay)
			run_replay(&r);
		else
			err = run_threads(&r);
		res->elapsed_ns = now_ns() - t0;
	}
	if (!err)
		run_collect(&r, res);
	free(r.prod);
	free(r.recl);
	model_free(&r.m);
	return err;
}
