/*
 * examples/tenants - per-tenant statistics for tenants that come and go,
 * the way a multi-tenant server keeps them with tally: one tree of groups
 * (tally_tree), a group per tenant under the root, named after it; per
 * tenant a request counter, a byte counter, an in-flight gauge and a
 * request latency histogram (tally_tree_opts.hists); served to Prometheus
 * by <tally/serve.h> through <tally/export_rstat.h>.
 *
 *   tenants [--listen HOST:PORT] [--seconds S] [--quiesce-after Q]
 *           [--workers N] [--tenants T] [--churn-us U] [--expect-file PATH]
 *
 * The pattern:
 *   - a worker serving a request looks its tenant up by name and takes a
 *     reference (tally_group_find_get(): one short RCU read-side section
 *     for the lookup), updates the group as often as the request needs,
 *     sleeps if it must, and drops the reference (tally_group_put()): no
 *     read-side section is held across the request;
 *   - a tenant is replaced at any time (tally_group_destroy(), then a new
 *     group of the same name): what it counted, and what requests still
 *     holding it count after the destroy (the in-flight -1 included), goes
 *     to the root, exactly once, so the root's values are the totals over
 *     live and destroyed tenants and the in-flight gauges come back to 0;
 *   - the exporter flushes before each render: every row is exact as of
 *     the scrape.
 *
 * Workers run for Q seconds (default 3), or until the process gets
 * SIGUSR1, while a churner replaces a tenant every U microseconds
 * (default 2000); then the program checks, in
 * process, that the root's totals equal the workers' own counts (kept
 * apart from tally) and that every in-flight gauge is 0, prints
 * "quiesced" and the figures ("exact" or the mismatch), writes the
 * expected samples to PATH, and with --listen keeps serving until S
 * seconds (default Q) have passed. Exit status 1 on a mismatch.
 */
#define _GNU_SOURCE
#include <tally/export_rstat.h>
#include <tally/rstat.h>
#ifdef TENANTS_SERVE
#  include <tally/serve.h>
#endif

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { REQUESTS, BYTES, INFLIGHT, NITEMS };
enum { LATENCY }; /* the tree's histogram */

static struct tally_tree *tree;
static struct tally_group *root;
static unsigned nr_tenants = 8;
static int stop;

struct worker {
	pthread_t tid;
	uint64_t seed;
	/* the program's own counts, apart from tally */
	uint64_t requests, bytes, latency_ns, misses;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One request on tenant k: look it up, hold it, update it, drop it. */
static void serve_request(struct worker *w, unsigned k)
{
	char name[32];
	struct tally_group *g;
	uint64_t t0, bytes, lat;
	snprintf(name, sizeof(name), "tenant-%u", k);
	g = tally_group_find_get(root, name);
	if (!g) { /* being replaced right now */
		w->misses++;
		return;
	}
	tally_group_mod(g, INFLIGHT, 1);
	tally_group_mod(g, REQUESTS, 1);
	t0 = now_ns();
	if (rnd(&w->seed) % 4 == 0)
		usleep((useconds_t)(rnd(&w->seed) % 200)); /* a request that waits */
	bytes = 100 + rnd(&w->seed) % 5000;
	tally_group_mod(g, BYTES, (tally_sword)bytes);
	lat = now_ns() - t0 + 1;
	tally_group_record(g, LATENCY, (int64_t)lat);
	tally_group_mod(g, INFLIGHT, -1);
	tally_group_put(g);
	w->requests++;
	w->bytes += bytes;
	w->latency_ns += lat;
}

static void *worker_main(void *arg)
{
	struct worker *w = (struct worker *)arg;
	tally_tree_register_thread(tree); /* the lookups' read-side sections */
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		serve_request(w, (unsigned)(rnd(&w->seed) % nr_tenants));
	tally_tree_unregister_thread(tree);
	return NULL;
}

/* Tenant k's group, named "tenant-k" (the churner owns the array). */
static struct tally_group **tenant;

static void *churner_main(void *arg)
{
	useconds_t us = (useconds_t)(uintptr_t)arg;
	uint64_t seed = 0x7e4a47u;
	unsigned long replaced = 0;
	tally_tree_register_thread(tree); /* destroy: call_rcu() */
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned k = (unsigned)(rnd(&seed) % nr_tenants);
		char name[32];
		snprintf(name, sizeof(name), "tenant-%u", k);
		if (tally_group_destroy(tenant[k]) == 0)
			replaced++;
		tenant[k] = tally_group_create_named(root, name);
		if (!tenant[k]) {
			perror("tenants: tally_group_create_named");
			exit(1);
		}
		usleep(us);
	}
	tally_tree_unregister_thread(tree);
	return (void *)(uintptr_t)replaced;
}

#ifdef TENANTS_SERVE
static void render_thread_start(void *arg)
{
	tally_tree_register_thread((struct tally_tree *)arg);
}

static void render_thread_stop(void *arg)
{
	tally_tree_unregister_thread((struct tally_tree *)arg);
}
#endif

/* An item's raw count: every update ever, resets or not. */
static tally_uword raw(struct tally_group *g, unsigned item)
{
	return (tally_uword)(tally_group_read_monotonic(g, item) - TALLY_MONOTONIC_BIAS);
}

/* Every live tenant's in-flight gauge and the root's; the number not 0. */
static unsigned inflight_nonzero(void)
{
	unsigned k, bad = tally_group_read(root, INFLIGHT) != 0;
	for (k = 0; k < nr_tenants; k++)
		bad += tally_group_read(tenant[k], INFLIGHT) != 0;
	return bad;
}

int main(int argc, char **argv)
{
	static const char *const items[NITEMS] = {"requests", "bytes", "inflight"};
	static const unsigned char flags[NITEMS] = {0, 0, TALLY_GROUP_ITEM_GAUGE};
	static const char *const hist_names[] = {"request_duration_seconds"};
	static const char *const hist_helps[] = {"Time to serve a request."};
	struct tally_hist_opts lat = {0, 0, 0, NULL, 0}; /* the group default */
	struct tally_export_hist_opts shown = {1e-9, 0, NULL, 0}; /* ns kept, s shown */
	struct tally_export_tree_opts xo;
	struct tally_tree_opts o;
	struct tally_export e;
	struct tally_hist_snap snap;
	struct worker *ws;
	struct timespec q;
	sigset_t quiesce_now;
	pthread_t churner;
	const char *listen = NULL, *expect_file = NULL;
	char path[4096];
	double seconds = -1, quiesce = 3;
	unsigned nw = 2, k, churn_us = 2000;
	uint64_t req = 0, bytes = 0, lat_ns = 0, misses = 0;
	unsigned long replaced;
	void *ret;
	int i, exact;
#ifdef TENANTS_SERVE
	struct tally_serve *srv = NULL;
#endif

	for (i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			goto usage;
		if (!strcmp(a, "--listen"))
			listen = v;
		else if (!strcmp(a, "--seconds"))
			seconds = atof(v);
		else if (!strcmp(a, "--quiesce-after"))
			quiesce = atof(v);
		else if (!strcmp(a, "--workers"))
			nw = (unsigned)atoi(v);
		else if (!strcmp(a, "--tenants"))
			nr_tenants = (unsigned)atoi(v);
		else if (!strcmp(a, "--churn-us"))
			churn_us = (unsigned)atoi(v);
		else if (!strcmp(a, "--expect-file"))
			expect_file = v;
		else
			goto usage;
	}
	if (!nw || !nr_tenants || quiesce <= 0)
		goto usage;
	if (seconds < quiesce)
		seconds = quiesce;
	/* Blocked in every thread (they inherit the mask); main waits for it. */
	sigemptyset(&quiesce_now);
	sigaddset(&quiesce_now, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &quiesce_now, NULL);

	memset(&o, 0, sizeof(o));
	o.nr_items = NITEMS;
	o.item_flags = flags;
	o.hists = &lat;
	o.nr_hists = 1;
	tree = tally_tree_create_opts(&o);
	if (!tree || tally_tree_set_item_names(tree, items)) {
		perror("tenants: tally_tree_create_opts");
		return 1;
	}
	root = tally_tree_root(tree);
	tally_tree_register_thread(tree);
	tenant = (struct tally_group **)calloc(nr_tenants, sizeof(*tenant));
	for (k = 0; k < nr_tenants; k++) {
		char name[32];
		snprintf(name, sizeof(name), "tenant-%u", k);
		tenant[k] = tally_group_create_named(root, name);
		if (!tenant[k]) {
			perror("tenants: tally_group_create_named");
			return 1;
		}
	}

	/* Every render flushes first: the rows are exact as of the scrape. */
	tally_export_init(&e);
	memset(&xo, 0, sizeof(xo));
	xo.prefix = "tenants";
	xo.flags = TALLY_EXPORT_TREE_FLUSH;
	xo.hist_names = hist_names;
	xo.hist_helps = hist_helps;
	xo.hist_opts = &shown;
	if (tally_export_add_tree(&e, tree, &xo)) {
		fprintf(stderr, "tenants: %s\n", tally_export_error(&e));
		return 1;
	}
	if (listen) {
#ifdef TENANTS_SERVE
		struct tally_serve_opts so;
		char why[TALLY_SERVE_ERROR_MAX];
		memset(&so, 0, sizeof(so));
		so.listen = listen;
		so.thread_start = render_thread_start;
		so.thread_stop = render_thread_stop;
		so.thread_arg = tree;
		if (tally_serve_start(&srv, &e, &so, why, sizeof(why))) {
			fprintf(stderr, "tenants: %s\n", why);
			return 1;
		}
		printf("tenants: listening on http://127.0.0.1:%u/metrics\n", tally_serve_port(srv));
		fflush(stdout);
#else
		fprintf(stderr, "tenants: built without libmicrohttpd: no --listen\n");
		return 1;
#endif
	}

	ws = (struct worker *)calloc(nw, sizeof(*ws));
	for (k = 0; k < nw; k++) {
		ws[k].seed = 0x9e3779b97f4a7c15ull * (k + 1);
		pthread_create(&ws[k].tid, NULL, worker_main, &ws[k]);
	}
	pthread_create(&churner, NULL, churner_main, (void *)(uintptr_t)churn_us);
	q.tv_sec = (time_t)quiesce;
	q.tv_nsec = (long)((quiesce - (double)q.tv_sec) * 1e9);
	while (sigtimedwait(&quiesce_now, NULL, &q) < 0 && errno == EINTR)
		;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (k = 0; k < nw; k++) {
		pthread_join(ws[k].tid, NULL);
		req += ws[k].requests;
		bytes += ws[k].bytes;
		lat_ns += ws[k].latency_ns;
		misses += ws[k].misses;
	}
	pthread_join(churner, &ret);
	replaced = (unsigned long)(uintptr_t)ret;

	/* Quiesced: every update has returned, so a flush now shows them all,
	 * the destroyed tenants' included. */
	tally_group_flush_force(root);
	tally_group_hist_snap_init(&snap, tree, LATENCY);
	tally_group_hist_snapshot(root, LATENCY, &snap);
	exact = raw(root, REQUESTS) == (tally_uword)req && raw(root, BYTES) == (tally_uword)bytes &&
		(tally_uword)snap.count == (tally_uword)req &&
		(tally_uword)snap.sum == (tally_uword)lat_ns && inflight_nonzero() == 0;
	printf("tenants: quiesced: %llu requests (%llu missed a tenant being replaced), %llu bytes, "
	       "%lu tenants replaced; root: %llu requests, %llu bytes, %llu latencies, p99 %.0f ns, "
	       "in flight %lld: %s\n",
	       (unsigned long long)req, (unsigned long long)misses, (unsigned long long)bytes,
	       replaced, (unsigned long long)raw(root, REQUESTS),
	       (unsigned long long)raw(root, BYTES), (unsigned long long)snap.count,
	       tally_hist_quantile(&snap, 0.99), (long long)tally_group_read(root, INFLIGHT),
	       exact ? "exact" : "MISMATCH");
	fflush(stdout);
	if (expect_file) {
		FILE *f = fopen(expect_file, "w");
		if (!f) {
			perror(expect_file);
			return 1;
		}
		fprintf(f, "tenants_requests_total{group=\"/\"} %llu\n", (unsigned long long)req);
		fprintf(f, "tenants_bytes_total{group=\"/\"} %llu\n", (unsigned long long)bytes);
		fprintf(f, "tenants_request_duration_seconds_count{group=\"/\"} %llu\n",
			(unsigned long long)req);
		fclose(f);
		/* tally's own p99 of every request, in seconds */
		snprintf(path, sizeof(path), "%s.p99", expect_file);
		f = fopen(path, "w");
		if (!f) {
			perror(path);
			return 1;
		}
		fprintf(f, "%.9f\n", tally_hist_quantile(&snap, 0.99) * 1e-9);
		fclose(f);
	}
	tally_hist_snap_destroy(&snap);
	if (seconds > quiesce)
		usleep((useconds_t)((seconds - quiesce) * 1e6));
#ifdef TENANTS_SERVE
	tally_serve_stop(srv);
#endif
	tally_export_destroy(&e);
	for (k = 0; k < nr_tenants; k++)
		tally_group_destroy(tenant[k]);
	tally_tree_unregister_thread(tree);
	tally_tree_destroy(tree);
	free(tenant);
	free(ws);
	return exact ? 0 : 1;
usage:
	fprintf(stderr, "usage: tenants [--listen HOST:PORT] [--seconds S] [--quiesce-after Q]\n"
			"               [--workers N] [--tenants T] [--churn-us U] "
			"[--expect-file PATH]\n");
	return 2;
}
