/*
 * examples/exporter - a small workload whose statistics a Prometheus can
 * scrape: a tree of groups (tally_tree) and a vector (tally_vec) updated
 * by writer threads, a counter, and request latency histograms
 * (tally_hist, one labelled family: result="hit" and "miss"), rendered by <tally/export_rstat.h> and
 * <tally/export_hist.h> and served over HTTP by <tally/serve.h>
 * (libmicrohttpd) on loopback.
 *
 *   exporter --listen 127.0.0.1:PORT --seconds S --quiesce-after Q
 *            [--writers N] [--conn-timeout T] [--request-timeout R]
 *            [--max-conns M] [--expect-file PATH] [--reset-every R]
 *            [--wait-first-scrape]
 *
 * GET /metrics answers OpenMetrics 1.0 when the Accept header asks for
 * application/openmetrics-text, else Prometheus text 0.0.4; ?format=json
 * and ?format=stat give the other two formats. Anything else: 404 (unknown
 * path) or 405 (not GET/HEAD). Prints a line with "listening" once it
 * accepts connections; the writers stop after Q seconds, after which the
 * exact totals no longer change (it prints "quiesced" and, with
 * --expect-file, writes every counter sample's value as counted by the
 * writers themselves, independently of tally, in text 0.0.4 sample
 * syntax, and in PATH.p99 each latency histogram's tally_hist_quantile()
 * at 0.99, in seconds, and its count); it exits after S
 * seconds. PORT 0 picks a free port (printed).
 *
 * --reset-every R: while the writers run, every R seconds reset the
 * since-reset values of the tree, a service's subtree (tally_group_reset)
 * and the whole tree (tally_tree_reset) in turn, as a "stats reset"
 * command would; the exported counters, raw, must not move back (it
 * prints "N resets" with "quiesced"). --wait-first-scrape: start the
 * writers (and the clock of --seconds and --quiesce-after) only once the
 * server has answered its first scrape, so a scraper's first sample of
 * every counter is 0. The tree's inflight item is a gauge by the tree's
 * own flags (TALLY_GROUP_ITEM_GAUGE), which the export takes. The
 * vector's hits and misses are one family, cache_gets_total{result="hit"}
 * and {result="miss"}, their names built by tally_export_name(); each
 * vector family has one help text, set by tally_export_set_help().
 *
 * Bounds (tally/serve.h): loopback addresses only; at most M connections
 * (default 64; the oldest waiting one is closed to make room for a new
 * one); a connection with no progress for T seconds (default 5) is closed,
 * and one whose request has not arrived whole within R seconds (default
 * 10), however steadily it trickles; a request's headers must fit in
 * 16 KiB. Renders happen on the server's render thread, registered with
 * liburcu (walking a tree's children requires it); scrapes that arrive
 * during a render share the next one.
 */
#define _GNU_SOURCE
#include <tally/rstat.h>
#include <tally/export_rstat.h>
#include <tally/export_hist.h>
#include <tally/serve.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the workload ---------------------------------------------------------- */

enum { REQUESTS, READ_BYTES, ERRORS, INFLIGHT, NR_ITEMS };
static const char *const item_names[NR_ITEMS] = {"requests", "read_bytes", "errors", "inflight"};
static const char *const item_helps[NR_ITEMS] = {
	"Requests handled.", "Bytes read by requests.", "Requests that failed.",
	"Requests in progress."};
static const unsigned char item_kinds[NR_ITEMS] = {TALLY_EXPORT_COUNTER, TALLY_EXPORT_COUNTER,
						   TALLY_EXPORT_COUNTER, TALLY_EXPORT_GAUGE};
static const unsigned char item_flags[NR_ITEMS] = {[INFLIGHT] = TALLY_GROUP_ITEM_GAUGE};

enum { CMD_GET, GET_HITS, GET_MISSES, CURR_CONNECTIONS, NR_VEC };
/* The vector's item names: hits and misses are one family, gets, told
 * apart by a label (built by tally_export_name() in main). */
static char vec_name_buf[NR_VEC][64];
static const char *vec_names[NR_VEC];
static const unsigned char vec_kinds[NR_VEC] = {TALLY_EXPORT_COUNTER, TALLY_EXPORT_COUNTER,
						TALLY_EXPORT_COUNTER, TALLY_EXPORT_GAUGE};

#define NR_SVC 3
#define NR_JOB 3
#define NR_GROUPS (1 + NR_SVC + NR_SVC * NR_JOB) /* root, services, jobs */
#define MAX_WRITERS 16

static struct tally_tree *tree;
static struct tally_group *groups[NR_GROUPS];
static char group_names[NR_GROUPS][16];
static int group_parent[NR_GROUPS];
static struct tally_vec vec;
static struct tally_counter batches;
/* Request latency, ns: the request's measured update time plus a
 * simulated service time (a base, the bytes at ~33 MB/s, and a tail), one
 * histogram per result (a miss takes longer): one labelled family. */
enum { HIT, MISS, NR_RESULTS };
static const char *const result_names[NR_RESULTS] = {"hit", "miss"};
static struct tally_hist latency[NR_RESULTS];
/* The same latencies per group too, in the tree: a group's histogram is
 * its subtree's (the default group layout, 2^-4 relative error). */
static const struct tally_hist_opts group_latency_opts = {0, 0, 0, NULL, 0};

/* What each writer did, counted by itself (its own memory, no sharing):
 * the independent truth the Prometheus test compares against. */
struct writer {
	pthread_t thread;
	uint64_t seed;
	uint64_t group_items[NR_GROUPS][NR_ITEMS];
	uint64_t vec_items[NR_VEC];
	uint64_t batches;
};
static struct writer writers[MAX_WRITERS];
static int nr_writers = 2;
static int stop_writers;

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void *writer_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
	unsigned long n = 0;
	while (!__atomic_load_n(&stop_writers, __ATOMIC_ACQUIRE)) {
		uint64_t r = rng(&w->seed);
		struct timespec t0, t1;
		int64_t ns;
		int miss;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		/* A leaf job, sometimes a service, gets a request. */
		int g = 1 + NR_SVC + (int)(r % (NR_SVC * NR_JOB));
		tally_sword bytes = (tally_sword)(16 + (r >> 8) % 16369); /* 16..16384 */
		if ((r >> 40) % 8 == 0)
			g = group_parent[g];
		tally_group_mod(groups[g], INFLIGHT, 1);
		tally_group_mod(groups[g], REQUESTS, 1);
		tally_group_mod(groups[g], READ_BYTES, bytes);
		w->group_items[g][REQUESTS]++;
		w->group_items[g][READ_BYTES] += (uint64_t)bytes;
		if ((r >> 20) % 50 == 0) {
			tally_group_mod(groups[g], ERRORS, 1);
			w->group_items[g][ERRORS]++;
		}
		tally_group_mod(groups[g], INFLIGHT, -1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ns = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
		ns += 20000 + 30 * (int64_t)bytes;
		if ((r >> 30) % 100 == 0)
			ns += (int64_t)((r >> 33) % 50000000); /* 1%: up to 50 ms more */
		miss = (r >> 50) % 4 == 0;
		tally_hist_record(&latency[miss], miss ? 3 * ns : ns);
		tally_group_record(groups[g], 0, miss ? 3 * ns : ns);
		tally_vec_inc(&vec, CMD_GET);
		tally_vec_inc(&vec, miss ? GET_MISSES : GET_HITS);
		w->vec_items[CMD_GET]++;
		w->vec_items[miss ? GET_MISSES : GET_HITS]++;
		if (++n % 256 == 0) {
			struct timespec ts = {0, 1000 * 1000}; /* leave CPU to others */
			tally_counter_add(&batches, 1);
			w->batches++;
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void group_path(int g, char *out, size_t size)
{
	if (g == 0) {
		snprintf(out, size, "/");
		return;
	}
	if (group_parent[g] == 0)
		snprintf(out, size, "/%s", group_names[g]);
	else
		snprintf(out, size, "/%s/%s", group_names[group_parent[g]], group_names[g]);
}

/* PATH.p99: per result, "result p99 count": the latency histogram's p99
 * in seconds and its observations; then per group, the same of the
 * group's histogram, "group=PATH p99 count". */
static int write_p99(const char *path)
{
	struct tally_hist_snap s;
	char name[4096];
	FILE *f;
	int err = 0, i;
	snprintf(name, sizeof(name), "%s.p99", path);
	f = fopen(name, "w");
	if (!f)
		return -errno;
	for (i = 0; i < NR_RESULTS && !err; i++) {
		err = tally_hist_snap_init(&s, &latency[i]);
		if (!err)
			err = tally_hist_snapshot(&latency[i], &s);
		if (!err)
			fprintf(f, "%s %.9g %llu\n", result_names[i],
				tally_hist_quantile(&s, 0.99) * 1e-9, (unsigned long long)s.count);
		tally_hist_snap_destroy(&s);
	}
	/* and per service group: "group=PATH p99 count", raw (every record
	 * since the start, as exported: resets do not move it) */
	tally_group_flush_force(groups[0]);
	for (i = 0; i <= NR_SVC && !err; i++) {
		char p[64];
		group_path(i, p, sizeof(p));
		err = tally_group_hist_snap_init(&s, tree, 0);
		if (!err)
			err = tally_group_hist_snapshot_raw(groups[i], 0, &s, false);
		if (!err)
			fprintf(f, "group=%s %.9g %llu\n", p, tally_hist_quantile(&s, 0.99) * 1e-9,
				(unsigned long long)s.count);
		tally_hist_snap_destroy(&s);
	}
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* Every counter sample's value from the writers' own counts. */
static int write_expected(const char *path)
{
	uint64_t local[NR_GROUPS][NR_ITEMS], hier[NR_GROUPS][NR_ITEMS], vsum[NR_VEC], b = 0;
	int g, i, w;
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	memset(local, 0, sizeof(local));
	memset(vsum, 0, sizeof(vsum));
	for (w = 0; w < nr_writers; w++) {
		for (g = 0; g < NR_GROUPS; g++)
			for (i = 0; i < NR_ITEMS; i++)
				local[g][i] += writers[w].group_items[g][i];
		for (i = 0; i < NR_VEC; i++)
			vsum[i] += writers[w].vec_items[i];
		b += writers[w].batches;
	}
	memcpy(hier, local, sizeof(hier));
	for (g = NR_GROUPS - 1; g > 0; g--) /* children have higher indexes */
		for (i = 0; i < NR_ITEMS; i++)
			hier[group_parent[g]][i] += hier[g][i];
	for (i = 0; i < NR_ITEMS; i++) {
		if (item_kinds[i] != TALLY_EXPORT_COUNTER)
			continue;
		for (g = 0; g < NR_GROUPS; g++) {
			char p[64];
			group_path(g, p, sizeof(p));
			fprintf(f, "demo_%s_total{group=\"%s\"} %llu\n", item_names[i], p,
				(unsigned long long)hier[g][i]);
			fprintf(f, "demo_%s_local_total{group=\"%s\"} %llu\n", item_names[i], p,
				(unsigned long long)local[g][i]);
		}
	}
	for (i = 0; i < NR_VEC; i++) {
		/* family{labels} -> cache_family_total{labels} */
		const char *lb = strchr(vec_names[i], '{');
		int flen = lb ? (int)(lb - vec_names[i]) : (int)strlen(vec_names[i]);
		if (vec_kinds[i] == TALLY_EXPORT_COUNTER)
			fprintf(f, "cache_%.*s_total%s %llu\n", flen, vec_names[i], lb ? lb : "",
				(unsigned long long)vsum[i]);
	}
	fprintf(f, "writer_batches_total %llu\n", (unsigned long long)b);
	if (fclose(f))
		return -errno;
	return write_p99(path);
}

/* ---- serving ---------------------------------------------------------------------- */

static struct tally_export exporter;

/* The server's render thread walks the tree: register it with liburcu. */
static void render_thread_start(void *arg)
{
	(void)arg;
	urcu_memb_register_thread();
}

static void render_thread_stop(void *arg)
{
	(void)arg;
	urcu_memb_unregister_thread();
}

/* Is HOST of "HOST:PORT" a loopback address? (The port is checked by
 * tally_serve_start.) */
static int loopback(const char *listen)
{
	return !strncmp(listen, "127.", 4) || !strncmp(listen, "localhost:", 10) ||
	       !strncmp(listen, "[::1]:", 6);
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: exporter --listen 127.0.0.1:PORT --seconds S --quiesce-after Q\n"
			"                [--writers N] [--conn-timeout T] [--request-timeout R]\n"
			"                [--max-conns M] [--expect-file PATH] [--reset-every R]\n"
			"                [--wait-first-scrape]\n");
	exit(2);
}

static void sleep_until(const struct timespec *start, double s)
{
	struct timespec now;
	for (;;) {
		double left;
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = s - ((double)(now.tv_sec - start->tv_sec) +
			    (double)(now.tv_nsec - start->tv_nsec) / 1e9);
		if (left <= 0)
			return;
		if (left > 0.2)
			left = 0.2;
		{
			struct timespec ts = {0, (long)(left * 1e9)};
			nanosleep(&ts, NULL);
		}
	}
}

/* A whole number in [lo, hi] from s, or usage(). */
static unsigned number(const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (!*s || *end || v < lo || v > hi)
		usage();
	return (unsigned)v;
}

int main(int argc, char **argv)
{
	const char *listen = NULL, *expect_file = NULL;
	double seconds = -1, quiesce = -1, reset_every = 0;
	int wait_first_scrape = 0, resets = 0;
	struct tally_tree_opts to;
	struct tally_serve_opts o;
	struct tally_serve *srv;
	struct timespec start;
	char why[TALLY_SERVE_ERROR_MAX];
	int i, g, err;

	memset(&o, 0, sizeof(o));
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait-first-scrape")) {
			wait_first_scrape = 1;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--listen"))
			listen = argv[++i];
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--quiesce-after"))
			quiesce = atof(argv[++i]);
		else if (!strcmp(argv[i], "--writers"))
			nr_writers = (int)number(argv[++i], 1, MAX_WRITERS);
		else if (!strcmp(argv[i], "--conn-timeout"))
			o.idle_timeout_s = number(argv[++i], 1, 600);
		else if (!strcmp(argv[i], "--request-timeout"))
			o.request_timeout_s = number(argv[++i], 1, 600);
		else if (!strcmp(argv[i], "--max-conns"))
			o.max_conns = number(argv[++i], 1, 4096);
		else if (!strcmp(argv[i], "--expect-file"))
			expect_file = argv[++i];
		else if (!strcmp(argv[i], "--reset-every"))
			reset_every = atof(argv[++i]);
		else
			usage();
	}
	if (!listen || seconds <= 0 || seconds > 3600 || quiesce < 0 || quiesce > seconds ||
	    reset_every < 0)
		usage();
	if (!loopback(listen)) {
		fprintf(stderr, "exporter: --listen must be a loopback address and port "
				"(127.x.y.z:PORT, localhost:PORT or [::1]:PORT)\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);

	/* The workload's objects, their names, and the exporter. */
	memset(&to, 0, sizeof(to));
	to.nr_items = NR_ITEMS;
	to.item_flags = item_flags;
	to.hists = &group_latency_opts; /* one histogram per group */
	to.nr_hists = 1;
	tree = tally_tree_create_opts(&to);
	if (!tree || tally_vec_init(&vec, NR_VEC, 0) || tally_counter_init(&batches, 0, 0) ||
	    tally_hist_init(&latency[HIT], NULL) || tally_hist_init(&latency[MISS], NULL)) {
		fprintf(stderr, "exporter: out of memory\n");
		return 1;
	}
	groups[0] = tally_tree_root(tree);
	for (g = 1; g < NR_GROUPS; g++) {
		if (g <= NR_SVC) {
			group_parent[g] = 0;
			snprintf(group_names[g], sizeof(group_names[g]), "svc%d", g - 1);
		} else {
			group_parent[g] = 1 + (g - 1 - NR_SVC) / NR_JOB;
			snprintf(group_names[g], sizeof(group_names[g]), "job%d",
				 (g - 1 - NR_SVC) % NR_JOB);
		}
		groups[g] = tally_group_create(groups[group_parent[g]]);
		if (!groups[g] || tally_group_set_name(groups[g], group_names[g])) {
			fprintf(stderr, "exporter: group: %s\n", strerror(errno));
			return 1;
		}
	}
	/* Names live with the tree: the exporter renders paths from them. */
	if (tally_tree_set_item_names(tree, item_names)) {
		fprintf(stderr, "exporter: item names\n");
		return 1;
	}
	{
		static const char *const hit[] = {"result", "hit", NULL};
		static const char *const miss[] = {"result", "miss", NULL};
		if (tally_export_name(vec_name_buf[CMD_GET], 64, "cmd_get", NULL) ||
		    tally_export_name(vec_name_buf[GET_HITS], 64, "gets", hit) ||
		    tally_export_name(vec_name_buf[GET_MISSES], 64, "gets", miss) ||
		    tally_export_name(vec_name_buf[CURR_CONNECTIONS], 64, "curr_connections",
				      NULL)) {
			fprintf(stderr, "exporter: item names\n");
			return 1;
		}
		for (i = 0; i < NR_VEC; i++)
			vec_names[i] = vec_name_buf[i];
	}
	tally_export_init(&exporter);
	{
		/* Kinds from the tree's item flags; names its own. */
		static const char *const hn[] = {"group_latency_seconds"};
		static const char *const hh[] = {"Request latency, per group and its subtree."};
		static const struct tally_export_hist_opts ns = {1e-9, 0, NULL, 0};
		struct tally_export_tree_opts eo = {"demo", NULL, item_helps, NULL, NULL,
						    NULL, TALLY_EXPORT_TREE_FLUSH, hn, hh, &ns};
		err = tally_export_add_tree(&exporter, tree, &eo);
	}
	if (!err)
		err = tally_export_add_vec(&exporter, "cache", &vec, vec_names, NULL, vec_kinds);
	/* One help per family, whatever its series. */
	if (!err)
		err = tally_export_set_help(&exporter, "cache_cmd_get", "Gets asked for.");
	if (!err)
		err = tally_export_set_help(&exporter, "cache_gets", "Gets by result: hit or miss.");
	if (!err)
		err = tally_export_set_help(&exporter, "cache_curr_connections",
					    "Connections open now.");
	if (!err)
		err = tally_export_add_counter(&exporter, "writer_batches",
					       "Batches of 256 requests the writers finished.",
					       &batches, TALLY_EXPORT_COUNTER);
	/* The latency family: a histogram per result, ns recorded, seconds
	 * exported, the default bounds (fixed: 40 series per result). */
	for (i = 0; i < NR_RESULTS && !err; i++) {
		struct tally_export_hist_opts seconds_from_ns = {1e-9, 0, NULL, 0};
		const char *kv[3] = {"result", result_names[i], NULL};
		char name[128];
		err = tally_export_name(name, sizeof(name), "demo_request_latency_seconds", kv);
		if (!err)
			err = tally_export_add_hist(&exporter, name,
						    "Request latency by result: the update time "
						    "plus a simulated service time.",
						    &latency[i], &seconds_from_ns);
	}
	if (err) {
		fprintf(stderr, "exporter: %s\n", tally_export_error(&exporter));
		return 1;
	}

	/* One call serves /metrics; its render thread registers with liburcu. */
	o.listen = listen;
	o.thread_start = render_thread_start;
	o.thread_stop = render_thread_stop;
	err = tally_serve_start(&srv, &exporter, &o, why, sizeof(why));
	if (err) {
		fprintf(stderr, "exporter: %s\n", why);
		return err == -EINVAL ? 2 : 1;
	}
	printf("exporter: listening on http://%.*s:%u/metrics\n",
	       (int)(strrchr(listen, ':') - listen), listen, tally_serve_port(srv));
	fflush(stdout);

	for (i = 0; wait_first_scrape && i < 6000; i++) {
		struct tally_serve_stats st = {0};
		struct timespec ts = {0, 10 * 1000 * 1000};
		tally_serve_stats(srv, &st);
		if (st.renders)
			break;
		nanosleep(&ts, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 0; i < nr_writers; i++) {
		writers[i].seed = 0x5eed0000u + (uint64_t)i;
		if (pthread_create(&writers[i].thread, NULL, writer_main, &writers[i]))
			return 1;
	}
	/* Resets while the writers run: the service svc0's subtree, then
	 * the whole tree, in turn. */
	while (reset_every > 0 && (resets + 1) * reset_every < quiesce) {
		sleep_until(&start, (resets + 1) * reset_every);
		err = resets % 2 ? tally_tree_reset(tree) : tally_group_reset(groups[1]);
		if (err) {
			fprintf(stderr, "exporter: reset: %s\n", strerror(-err));
			return 1;
		}
		resets++;
	}
	sleep_until(&start, quiesce);
	__atomic_store_n(&stop_writers, 1, __ATOMIC_RELEASE);
	for (i = 0; i < nr_writers; i++)
		pthread_join(writers[i].thread, NULL);
	if (expect_file && (err = write_expected(expect_file)) != 0) {
		fprintf(stderr, "exporter: %s: %s\n", expect_file, strerror(-err));
		return 1;
	}
	printf("exporter: quiesced, %d resets\n", resets);
	fflush(stdout);
	sleep_until(&start, seconds);

	{
		struct tally_serve_stats st = {0};
		tally_serve_stats(srv, &st);
		printf("exporter: %lu renders, %lu connections closed to make room, %lu past "
		       "their request deadline\n",
		       st.renders, st.evicted, st.expired);
	}
	tally_serve_stop(srv);
	tally_export_destroy(&exporter);
	tally_tree_destroy(tree);
	tally_vec_destroy(&vec);
	tally_counter_destroy(&batches);
	tally_hist_destroy(&latency[HIT]);
	tally_hist_destroy(&latency[MISS]);
	printf("exporter: done\n");
	return 0;
}
