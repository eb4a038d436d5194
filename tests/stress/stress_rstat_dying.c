/*
 * Tenants that come and go (issue 29, item 1): updates on a group whose
 * destroy is under way or done are never lost. A request router's
 * pattern: workers serve requests on tenant groups (an in-flight gauge
 * +1 at the start and -1 at the end, a request count, bytes in and out)
 * while other threads destroy the tenants and create new ones. A request
 * holds one read-side section from its first update to its last, so its
 * tenant's memory stays valid, and every update of it must count: its
 * delta reaches the nearest live ancestor exactly once.
 *
 * Tree: root - NORG orgs (permanent) - tenants - one child each (a
 * "connection" group). A table of NSLOTS slots holds each tenant and its
 * child, published with release stores; slot k's tenants are under org
 * k % NORG. Threads:
 *   - NWORKERS workers (registered), each request inside one read-side
 *     section: load a slot's tenant or its child, +1 in flight, +1
 *     request, + bytes in; then either wait (one request in 6) until that
 *     group's destroy has returned (at most 10 ms), or read and spin a
 *     little; then + bytes out, -1 in flight. Every update must return 0.
 *     The worker counts every delta it made, per org (the program's own
 *     counts), and how many of its requests made their last updates on a
 *     group whose destroy had returned before them (the case:
 *     before the fix each of those -1s was refused and the gauge kept the
 *     +1; so this test fails on that code whenever the count is not 0,
 *     and it requires the count to be positive);
 *   - NDESTROYERS destroyers (registered), each owning some slots: create
 *     a new tenant and child, publish them, destroy the old pair (the
 *     whole subtree in one call, or the child and then the tenant: a chain
 *     of dying groups, the child's late updates walking up through its
 *     destroyed parent), then publish the old pair's destroy as done;
 *   - a flusher: forced, thresholded and ratelimited flushes of orgs and
 *     the root, and resets of an org or the root (the gauge is flagged
 *     TALLY_GROUP_ITEM_GAUGE, so a reset leaves it; the counters are
 *     checked raw, tally_group_read_monotonic());
 *   - perturbation (perturb.h) of the workers and destroyers.
 * Each request also records its bytes in into the groups' histogram
 * (tally_group_record()), before its last updates: each org's histogram
 * must hold one value per request, their sum the bytes in.
 * At quiesce (workers joined): a forced root flush; every live tenant and
 * child, every org and the root must read 0 in flight; each org's raw
 * requests and bytes must equal the workers' counts for it, and the
 * root's their sum. Then the last tenants are destroyed and the same
 * holds before and after the deferred frees have all run: the
 * frees hand over what no drain did, nothing twice.
 *
 * Built with STRESS_REFS (stress_rstat_refs), a request holds a reference
 * instead of a read-side section (tally_group_get() / _put(), the way a
 * server holds a tenant across a request that sleeps): the workers never
 * register with liburcu. The table holds a reference on each published
 * group; a worker takes its own under the slot's mutex, and the destroyer
 * swaps the pair under it, destroys the old one and puts the table's
 * references. Every update, the ones after the destroy included, must
 * count; ASan sees a group freed while a reference was held.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "perturb.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <tally/rstat.h>

#define U(x) ((tally_uword)(x))
#define NORG 2
#define NSLOTS 6
#define NWORKERS 3
#define NDESTROYERS 2

enum { INFLIGHT = 0, REQUESTS = 1, BYTES = 2, NITEMS = 3 };

static struct tally_tree *tree;
static struct tally_group *root, *org[NORG];

#ifdef STRESS_REFS
#  define NAME "stress_rstat_refs"
#else
#  define NAME "stress_rstat_dying"
#endif

struct slot {
	struct tally_group *g[2]; /* the tenant and its child; release-published */
	pthread_mutex_t mu;       /* STRESS_REFS: g[] changes under it */
	/* the largest serial of this slot's groups whose destroy has
	 * returned; release */
	uint64_t destroyed;
};
static struct slot slots[NSLOTS];
static int stop;

struct worker {
	pthread_t tid;
	int id;
	tally_uword requests[NORG], bytes[NORG]; /* in flight: +1 - 1 per request, 0 */
	tally_uword bytes_in[NORG];              /* the histogram's sum */
	unsigned long long n, after_destroy, waited, refused;
};
static struct worker ws[NWORKERS];
static unsigned long long nr_destroys[NDESTROYERS], nr_flushes, nr_resets;

static int mod(struct worker *w, struct tally_group *g, unsigned item, tally_sword d)
{
	int e = tally_group_mod(g, item, d);
	if (e) {
		/* Counted as the program's own all the same: the test then
		 * shows what was lost (the figures of the issue). */
		if (!w->refused++)
			fprintf(stderr, NAME ": tally_group_mod() returned %d on a "
					"group that is being destroyed\n",
				e);
	}
	return e;
}

static void *worker_main(void *arg)
{
	struct worker *w = (struct worker *)arg;
	struct harness_rng rng = {0xd1e5u + (uint64_t)w->id * 7919u};
	tally_uword sink = 0;
#ifndef STRESS_REFS
	urcu_memb_register_thread();
#endif
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int k = (int)harness_range(&rng, 0, NSLOTS - 1), o = k % NORG;
		tally_uword in = (tally_uword)harness_range(&rng, 1, 4000);
		tally_uword out = (tally_uword)harness_range(&rng, 1, 100000);
		struct tally_group *g;
		uint64_t serial;
#ifdef STRESS_REFS
		pthread_mutex_lock(&slots[k].mu);
		g = slots[k].g[harness_range(&rng, 0, 1)];
		tally_group_get(g); /* the table holds one */
		pthread_mutex_unlock(&slots[k].mu);
#else
		tally_tree_read_lock(tree);
		g = __atomic_load_n(&slots[k].g[harness_range(&rng, 0, 1)], __ATOMIC_ACQUIRE);
#endif
		serial = tally_group_serial(g);
		mod(w, g, INFLIGHT, 1);
		mod(w, g, REQUESTS, 1);
		mod(w, g, BYTES, (tally_sword)in);
		if (harness_range(&rng, 0, 5) == 0) {
			/* A request that outlives its tenant: wait (in the
			 * section) until the tenant's destroy has returned. */
			double end = harness_now() + 0.01;
			while (__atomic_load_n(&slots[k].destroyed, __ATOMIC_ACQUIRE) < serial &&
			       harness_now() < end &&
			       !__atomic_load_n(&stop, __ATOMIC_RELAXED))
				sched_yield();
			w->waited++;
		} else {
			int n;
			for (n = (int)harness_range(&rng, 0, 3); n > 0; n--)
				sink += U(tally_group_read(g, BYTES)) +
					U(tally_group_read(org[o], INFLIGHT));
			if (harness_range(&rng, 0, 31) == 0)
				tally_group_flush_force(g); /* errno EINVAL once destroyed */
		}
		/* Acquire: pairs with the destroyer's release after the
		 * destroy returned; the updates below then find g destroyed. */
		if (__atomic_load_n(&slots[k].destroyed, __ATOMIC_ACQUIRE) >= serial)
			w->after_destroy++;
		if (tally_group_record(g, 0, (int64_t)in))
			w->refused++;
		mod(w, g, BYTES, (tally_sword)out);
		mod(w, g, INFLIGHT, -1);
#ifdef STRESS_REFS
		tally_group_put(g);
#else
		tally_tree_read_unlock(tree);
#endif
		w->requests[o] += 1;
		w->bytes[o] += in + out;
		w->bytes_in[o] += in;
		w->n++;
	}
	__atomic_store_n(&w->n, w->n + (sink & 0), __ATOMIC_RELAXED);
	perturb_unregister();
#ifndef STRESS_REFS
	urcu_memb_unregister_thread();
#endif
	return NULL;
}

/* A new tenant and child for slot k (with the table's references,
 * STRESS_REFS); 0 or -1. */
static int slot_fill(int k, struct tally_group **t, struct tally_group **c)
{
	*t = tally_group_create(org[k % NORG]);
	*c = *t ? tally_group_create(*t) : NULL;
	CHECK(*t && *c, "create: errno %d", errno);
#ifdef STRESS_REFS
	CHECK(*t && *c && tally_group_tryget(*t) && tally_group_tryget(*c), "tryget");
#endif
	return *t && *c ? 0 : -1;
}

/* The table's references on a destroyed pair (STRESS_REFS). */
static void slot_put(struct tally_group *t, struct tally_group *c)
{
#ifdef STRESS_REFS
	tally_group_put(c);
	tally_group_put(t);
#else
	(void)t, (void)c;
#endif
}

static void *destroyer_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct harness_rng rng = {0xde57u + (uint64_t)id};
	unsigned long long n = 0;
	urcu_memb_register_thread();
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		/* slots id, id + NDESTROYERS, ...: this thread's alone */
		int k = id + NDESTROYERS * (int)harness_range(&rng, 0, NSLOTS / NDESTROYERS - 1);
		struct tally_group *t, *c, *ot, *oc;
		uint64_t ser;
		if (slot_fill(k, &t, &c))
			break;
		pthread_mutex_lock(&slots[k].mu);
		ot = slots[k].g[0];
		oc = slots[k].g[1];
		__atomic_store_n(&slots[k].g[1], c, __ATOMIC_RELEASE);
		__atomic_store_n(&slots[k].g[0], t, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&slots[k].mu);
		ser = tally_group_serial(oc); /* the child: created after its tenant */
		if (harness_range(&rng, 0, 1)) {
			CHECK(tally_group_destroy_subtree(ot) == 0, "destroy_subtree");
		} else {
			CHECK(tally_group_destroy(oc) == 0, "destroy of a child");
			/* Updates of oc now walk up through a dying ot. */
			if (harness_range(&rng, 0, 3) == 0)
				sched_yield();
			CHECK(tally_group_destroy(ot) == 0, "destroy of a tenant");
		}
		slot_put(ot, oc);
		/* Release: a worker that sees it finds both destroyed. */
		__atomic_store_n(&slots[k].destroyed, ser, __ATOMIC_RELEASE);
		n++;
		if (harness_range(&rng, 0, 3) == 0)
			usleep((useconds_t)harness_range(&rng, 0, 300));
	}
	nr_destroys[id] = n;
	perturb_unregister();
	urcu_memb_unregister_thread();
	return NULL;
}

static void *flusher_main(void *arg)
{
	struct harness_rng rng = {0xf1u};
	unsigned long long f = 0, r = 0;
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int o = (int)harness_range(&rng, 0, NORG - 1);
		switch (harness_range(&rng, 0, 7)) {
		case 0:
			CHECK(tally_group_reset(harness_range(&rng, 0, 1) ? org[o] : root) == 0, "reset");
			r++;
			break;
		case 1:
			tally_group_flush_force(root);
			f++;
			break;
		case 2:
			tally_group_flush_ratelimited(root);
			break;
		case 3:
			tally_group_flush(org[o]);
			break;
		default:
			tally_group_flush_force(org[o]);
			f++;
		}
		usleep((useconds_t)harness_range(&rng, 0, 300));
	}
	nr_flushes = f;
	nr_resets = r;
	return NULL;
}

/* tally_group_read_monotonic() without the bias: the raw word. */
static tally_uword raw(struct tally_group *g, unsigned item)
{
	return (tally_uword)(tally_group_read_monotonic(g, item) - TALLY_MONOTONIC_BIAS);
}

static struct tally_hist_snap snap; /* the histogram's, for check_totals() */

/* Every org and the root: 0 in flight, raw counters exact, histograms
 * exact. */
static void check_totals(const char *when)
{
	tally_uword req_all = 0, bytes_all = 0;
	int o, k;
	for (o = 0; o < NORG; o++) {
		tally_uword req = 0, bytes = 0;
		for (k = 0; k < NWORKERS; k++) {
			req += ws[k].requests[o];
			bytes += ws[k].bytes[o];
		}
		if (tally_group_read(org[o], INFLIGHT) != 0 || raw(org[o], REQUESTS) != req ||
		    raw(org[o], BYTES) != bytes)
			fprintf(stderr,
				NAME ": %s: org %d reads in flight %lld, requests %llu, "
				"bytes %llu; the workers counted 0, %llu, %llu\n",
				when, o, (long long)tally_group_read(org[o], INFLIGHT),
				(unsigned long long)raw(org[o], REQUESTS),
				(unsigned long long)raw(org[o], BYTES), (unsigned long long)req,
				(unsigned long long)bytes);
		CHECK_EQ(tally_group_read(org[o], INFLIGHT), 0);
		CHECK_EQ(raw(org[o], REQUESTS), req);
		CHECK_EQ(raw(org[o], BYTES), bytes);
		CHECK_EQ(tally_group_read_local(org[o], INFLIGHT), 0);
		{
			tally_uword in = 0;
			for (k = 0; k < NWORKERS; k++)
				in += ws[k].bytes_in[o];
			CHECK_EQ(tally_group_hist_snapshot_raw(org[o], 0, &snap, false), 0);
			CHECK_EQ((tally_uword)snap.count, req);
			CHECK_EQ((tally_uword)snap.sum, in);
		}
		req_all += req;
		bytes_all += bytes;
	}
	CHECK_EQ(tally_group_read(root, INFLIGHT), 0);
	CHECK_EQ(raw(root, REQUESTS), req_all);
	CHECK_EQ(raw(root, BYTES), bytes_all);
	printf(NAME ": %s: root in flight %lld, requests %llu (counted %llu), bytes "
	       "%llu (counted %llu)\n",
	       when, (long long)tally_group_read(root, INFLIGHT),
	       (unsigned long long)raw(root, REQUESTS), (unsigned long long)req_all,
	       (unsigned long long)raw(root, BYTES), (unsigned long long)bytes_all);
}

int main(void)
{
	static const unsigned char flags[NITEMS] = {TALLY_GROUP_ITEM_GAUGE, 0, 0};
	static const uint64_t bounds[] = {100, 1000, 3000};
	struct tally_hist_opts hopts = {0, 0, 0, bounds, 3};
	struct tally_tree_opts opts;
	struct perturb_opts po;
	pthread_t d[NDESTROYERS], fl;
	unsigned long long n = 0, after = 0, waited = 0, refused = 0, destroys = 0;
	double secs = harness_seconds();
	int cpus[2], k, o;

	urcu_memb_register_thread(); /* the final destroys */
	perturb_init();
	memset(&opts, 0, sizeof(opts));
	opts.nr_items = NITEMS;
	opts.item_flags = flags;
	opts.hists = &hopts;
	opts.nr_hists = 1;
	opts.batch = 8;          /* thresholded flushes happen */
	opts.period_ns = 100000; /* ratelimited ones too */
	tree = tally_tree_create_opts(&opts);
	CHECK(tree != NULL, "tree");
	if (!tree)
		return harness_exit(NAME);
	root = tally_tree_root(tree);
	CHECK_EQ(tally_group_hist_snap_init(&snap, tree, 0), 0);
	for (o = 0; o < NORG; o++)
		org[o] = tally_group_create(root);
	for (k = 0; k < NSLOTS; k++) {
		pthread_mutex_init(&slots[k].mu, NULL);
		if (slot_fill(k, &slots[k].g[0], &slots[k].g[1]))
			return harness_exit(NAME);
	}

	for (k = 0; k < NWORKERS; k++) {
		ws[k].id = k;
		pthread_create(&ws[k].tid, NULL, worker_main, &ws[k]);
	}
	for (k = 0; k < NDESTROYERS; k++)
		pthread_create(&d[k], NULL, destroyer_main, (void *)(intptr_t)k);
	pthread_create(&fl, NULL, flusher_main, NULL);
	perturb_defaults(&po, harness_allowed_cpus(cpus, 2) >= 2 ? cpus[1] : -1);
	perturb_start(&po);

	usleep((useconds_t)(secs * 1e6));
	perturb_stop();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (k = 0; k < NWORKERS; k++)
		pthread_join(ws[k].tid, NULL);
	for (k = 0; k < NDESTROYERS; k++)
		pthread_join(d[k], NULL);
	pthread_join(fl, NULL);

	/* Quiesced: every update has returned, so a flush that starts now
	 * shows them all, without waiting for the deferred frees. */
	tally_group_flush_force(root);
	for (k = 0; k < NSLOTS; k++) {
		CHECK_EQ(tally_group_read(slots[k].g[0], INFLIGHT), 0);
		CHECK_EQ(tally_group_read(slots[k].g[1], INFLIGHT), 0);
	}
	check_totals("quiesced");
	for (k = 0; k < NSLOTS; k++) {
		CHECK(tally_group_destroy_subtree(slots[k].g[0]) == 0, "final destroy");
		slot_put(slots[k].g[0], slots[k].g[1]);
	}
	tally_group_flush_force(root);
	check_totals("tenants destroyed");
	/* The deferred frees, all done (what tally_tree_destroy() waits
	 * for; urcu_memb_barrier() would do, but TSan cannot see its
	 * hand-off to the call_rcu thread). */
	tally__rstat_flusher_wait_deferred(tree);
	tally_group_flush_force(root);
	check_totals("after the deferred frees");
	CHECK_EQ(tally_tree_nr_groups(tree), 1 + NORG);

	for (k = 0; k < NWORKERS; k++) {
		n += ws[k].n;
		after += ws[k].after_destroy;
		waited += ws[k].waited;
		refused += ws[k].refused;
	}
	for (k = 0; k < NDESTROYERS; k++)
		destroys += nr_destroys[k];
	printf(NAME ": %.1f s: %llu requests, %llu of them ended on a tenant whose "
	       "destroy had returned (%llu waited for it), %llu updates refused, %llu tenant "
	       "destroys, %llu forced flushes, %llu resets\n",
	       secs, n, after, waited, refused, destroys, nr_flushes, nr_resets);
	perturb_report(NAME);
	CHECK(refused == 0, "%llu updates on destroyed groups refused", refused);
	/* The case under test must have happened, or the run shows nothing. */
	CHECK(after > 0, "no request ended on a destroyed tenant");
	CHECK(destroys > 0, "no tenant was destroyed");
	tally_hist_snap_destroy(&snap);
	tally_tree_destroy(tree);
	urcu_memb_unregister_thread();
	return harness_exit(NAME);
}
