/*
 * prefork - a prefork "server": N worker processes count requests, bytes
 * and latency into one shared region (tally/shm.h), the way nginx or
 * PHP-FPM workers would; tallystat reads it from outside.
 *
 *   prefork [-k MS] [-s US] [-e FILE] [-q FILE] [-m METHOD] [-w FILE] [-x FILE]
 *           REGION WORKERS SECONDS
 *
 * -w FILE: create the region, say so on stderr ("region ready"), then wait
 * (up to a minute) for FILE to exist before starting the workers (a test
 * lets a scraper see it first).
 * -x FILE: after SECONDS, go on (kills included) until FILE exists, for a
 * minute at most (a test stops the load once its scraper saw it move).
 *
 * Each worker attaches (an unrelated process would do the same) and
 * serves "requests" until the parent stops it after SECONDS. A request
 * holds inflight_requests +1 (a per-process gauge: its process's own row),
 * is served for US microseconds (-s; default 0, with -k 200), then counts
 *   requests{method="get"|"put"|"post"}            labelled counters, one family
 *                                                  (-m: a fourth method)
 *   response_bytes                                 a counter
 *   request_latency_seconds                        a histogram (tally/shm/hist.h):
 *                                                  the request's measured time,
 *                                                  in ns, shown in seconds
 * (names built with tally_export_name()) and acknowledges each add after
 * it returned, in memory the parent shares, and logs each latency there
 * (up to 2^17 per worker slot) for the exact quantiles.
 *
 * -k MS: about every MS milliseconds (0.5x to 1.5x, at random) the parent
 * kills a random worker with SIGKILL and starts another in its place (same
 * acknowledgements, a new process: a new row). The kill lands wherever
 * the worker is except between an add and its acknowledgement: the parent
 * stops the worker (SIGSTOP), and kills it only if no add is in flight,
 * else lets it go on and tries again a moment later. So a worker is
 * usually killed in a request, holding inflight_requests +1, and what
 * the workers acknowledged is exactly what the region must hold: a count
 * the region loses, or a +1 of a dead process still summed, shows.
 * (tests/plain/shm_basic.c and tests/stress/stress_shm.c kill at any
 * point: every add that returned is counted, at most the one in flight
 * more.)
 *
 * At the end the parent prints the totals the region must hold,
 *   expect requests{method="get"}=N ... response_bytes=M
 *     request_latency_seconds_count=C request_latency_seconds_sum=S inflight_requests=0
 * and with -e FILE writes them as Prometheus samples
 * (requests_total{method="get"} N, ..., request_latency_seconds_count C),
 * sorted; with -q FILE the exact quantiles of every latency acknowledged,
 * "Q SECONDS" for Q = 0.5, 0.9, 0.99 (the observation of rank ceil(Q n)),
 * or nothing if a worker's log filled; then says on stderr "quiesced: K
 * kills, R restarts".
 */
#define _GNU_SOURCE
#include <tally/export.h> /* tally_export_name() */
#include <tally/shm/hist.h>

#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

enum { MAX_METHODS = 4, MAX_WORKERS = 256, LOG = 1 << 17 };
static const char *methods[MAX_METHODS] = {"get", "put", "post", NULL};
static unsigned METHODS = 3;

/* One worker slot's acknowledgements: written by the slot's worker of the
 * moment, read by the parent while the worker is stopped or gone. */
struct ack {
	unsigned busy; /* an add is in flight: not to be killed now */
	unsigned long long req[MAX_METHODS], bytes, lat_n, lat_sum;
	char pad[64];
};

static struct ack *acks;
static uint64_t *lat_log; /* [MAX_WORKERS][LOG]: each slot's latencies (ns) */
static volatile unsigned *stop_all; /* shared: the parent's "stop" */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int name(char *buf, size_t n, const char *family, const char *label, const char *value)
{
	const char *pairs[] = {label, value, NULL};
	return tally_export_name(buf, n, family, label ? pairs : NULL);
}

static int worker(const char *region, unsigned slot, unsigned seed, unsigned serve_us)
{
	struct tally_shm *r = NULL;
	struct tally_shm_counter req[MAX_METHODS], bytes;
	struct tally_shm_hist lat;
	struct tally_shm_proc_gauge inflight;
	struct ack *me = &acks[slot];
	char why[TALLY_SHM_ERROR_MAX], nm[128];
	unsigned i;
	int err;
	err = tally_shm_open(&r, region, NULL, why, sizeof(why));
	for (i = 0; !err && i < METHODS; i++)
		err = name(nm, sizeof(nm), "requests", "method", methods[i]) ||
		      tally_shm_counter(r, nm, &req[i]);
	if (!err) /* tally_hist's default buckets: 1 ns .. 1 h, 2^-8 */
		err = tally_shm_hist(r, "request_latency_seconds", NULL, 1e-9, &lat);
	if (!err)
		err = tally_shm_counter(r, "response_bytes", &bytes) ||
		      tally_shm_proc_gauge(r, "inflight_requests", &inflight);
	if (err) {
		fprintf(stderr, "prefork: %s\n", r ? tally_shm_error(r) : why);
		return 1;
	}
	while (!__atomic_load_n(stop_all, __ATOMIC_ACQUIRE)) {
		unsigned size = 100 + (seed = seed * 1103515245u + 12345u) % 4000;
		unsigned m = (seed >> 16) % METHODS;
		double t0 = now();
		int64_t ns;
		tally_shm_proc_add(&inflight, 1);
		if (serve_us) {
			struct timespec ts = {0, (long)((serve_us / 2 + (seed >> 8) % serve_us) * 1000)};
			nanosleep(&ts, NULL);
		}
		ns = (int64_t)((now() - t0) * 1e9);
		__atomic_store_n(&me->busy, 1u, __ATOMIC_SEQ_CST);
		tally_shm_add(&req[m], 1);
		tally_shm_add(&bytes, (tally_sword)size);
		tally_shm_hist_record(&lat, ns);
		me->req[m]++;
		me->bytes += size;
		if (me->lat_n < LOG)
			lat_log[(size_t)slot * LOG + me->lat_n] = (uint64_t)ns;
		me->lat_n++;
		me->lat_sum += (unsigned long long)ns;
		__atomic_store_n(&me->busy, 0u, __ATOMIC_SEQ_CST);
		tally_shm_proc_add(&inflight, -1);
	}
	tally_shm_close(r);
	return 0;
}

static pid_t spawn(const char *region, unsigned slot, unsigned seed, unsigned serve_us)
{
	pid_t parent = getpid(), p = fork();
	if (p == 0) {
		/* A worker does not outlive its parent (a test that fails and
		 * kills the parent leaves no workers behind). */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		_exit(worker(region, slot, seed, serve_us));
	}
	return p;
}

/* SIGKILL p where its slot has no add in flight: 1 killed, 0 not now. */
static int kill_safely(pid_t p, const struct ack *a)
{
	int st = 0;
	if (kill(p, SIGSTOP) || waitpid(p, &st, WUNTRACED) != p)
		return 0;
	if (!WIFSTOPPED(st))
		return 0; /* it ended */
	if (__atomic_load_n(&a->busy, __ATOMIC_SEQ_CST)) {
		kill(p, SIGCONT);
		return 0;
	}
	kill(p, SIGKILL);
	waitpid(p, &st, 0);
	return 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ns as seconds, exactly ("12.3456789", no trailing zeros). */
static void seconds(char *b, size_t n, unsigned long long ns)
{
	int k = snprintf(b, n, "%llu.%09llu", ns / 1000000000ull, ns % 1000000000ull);
	while (k > 0 && b[k - 1] == '0')
		b[--k] = '\0';
	if (k > 0 && b[k - 1] == '.')
		b[--k] = '\0';
}

/* Before SECONDS, or after it until -x's file exists (a minute at most). */
static int running(double until, const char *xfile)
{
	double t = now();
	return t < until || (xfile && access(xfile, F_OK) && t < until + 60);
}

int main(int argc, char **argv)
{
	struct tally_shm *r = NULL;
	char why[TALLY_SHM_ERROR_MAX];
	const char *region, *efile = NULL, *wfile = NULL, *xfile = NULL, *qfile = NULL;
	unsigned long long req[MAX_METHODS] = {0}, lat_n = 0, lat_sum = 0, bytes = 0;
	char secs_buf[48];
	int logged_all = 1;
	pid_t pids[MAX_WORKERS];
	unsigned kills = 0, seed = 1, serve_us = 0, serve_set = 0;
	double secs, kill_ms = 0, until;
	int i, n, opt, bad = 0;
	while ((opt = getopt(argc, argv, "k:s:e:q:m:w:x:")) != -1) {
		if (opt == 'q')
			qfile = optarg;
		else if (opt == 'x')
			xfile = optarg;
		else if (opt == 'w')
			wfile = optarg;
		else if (opt == 'm')
			methods[METHODS = MAX_METHODS - 1] = optarg, METHODS = MAX_METHODS;
		else if (opt == 'k')
			kill_ms = atof(optarg);
		else if (opt == 's')
			serve_us = (unsigned)atoi(optarg), serve_set = 1;
		else if (opt == 'e')
			efile = optarg;
		else
			return 2;
	}
	if (argc - optind != 3 || (n = atoi(argv[optind + 1])) < 1 || n > MAX_WORKERS ||
	    (secs = atof(argv[optind + 2])) <= 0 || kill_ms < 0) {
		fprintf(stderr, "usage: prefork [-k MS] [-s US] [-e FILE] [-q FILE] [-m METHOD] [-w FILE] "
				"[-x FILE] REGION WORKERS SECONDS\n");
		return 2;
	}
	region = argv[optind];
	if (kill_ms > 0 && !serve_set)
		serve_us = 200;
	acks = (struct ack *)mmap(NULL, MAX_WORKERS * sizeof(*acks) + 64, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (acks == MAP_FAILED)
		return 1;
	stop_all = (volatile unsigned *)(void *)(acks + MAX_WORKERS);
	lat_log = (uint64_t *)mmap(NULL, (size_t)MAX_WORKERS * LOG * sizeof(uint64_t),
				   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
				   -1, 0);
	if (lat_log == MAP_FAILED)
		return 1;
	/* The region exists before the first worker (a reader may attach). */
	if (tally_shm_open(&r, region, NULL, why, sizeof(why))) {
		fprintf(stderr, "prefork: %s\n", why);
		return 1;
	}
	if (wfile)
		fprintf(stderr, "prefork: region ready, waiting for %s\n", wfile);
	for (i = 0; wfile && access(wfile, F_OK) && i < 6000; i++)
		usleep(10000);
	for (i = 0; i < n; i++)
		pids[i] = spawn(region, (unsigned)i, (unsigned)i * 7919u + 1, serve_us);
	until = now() + secs;
	while (kill_ms > 0 && running(until, xfile)) {
		unsigned v;
		int tries;
		seed = seed * 1103515245u + 12345u;
		usleep((useconds_t)(kill_ms * 1000 * (0.5 + (double)((seed >> 8) % 1000) / 1000)));
		v = (seed >> 20) % (unsigned)n;
		for (tries = 0; tries < 1000 && !kill_safely(pids[v], &acks[v]); tries++)
			usleep(100);
		if (tries == 1000) {
			fprintf(stderr, "prefork: worker %u was never idle\n", v);
			bad = 1;
			break;
		}
		kills++;
		pids[v] = spawn(region, v, seed, serve_us);
	}
	while (running(until, xfile))
		usleep(10000);
	__atomic_store_n(stop_all, 1u, __ATOMIC_RELEASE);
	for (i = 0; i < n; i++) {
		int st = 0;
		waitpid(pids[i], &st, 0);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	for (i = 0; i < n; i++) {
		int k;
		for (k = 0; k < (int)METHODS; k++)
			req[k] += acks[i].req[k];
		lat_n += acks[i].lat_n;
		lat_sum += acks[i].lat_sum;
		logged_all &= acks[i].lat_n <= LOG;
		bytes += acks[i].bytes;
	}
	seconds(secs_buf, sizeof(secs_buf), lat_sum);
	printf("expect");
	for (i = 0; i < (int)METHODS; i++)
		printf(" requests{method=\"%s\"}=%llu", methods[i], req[i]);
	printf(" response_bytes=%llu request_latency_seconds_count=%llu "
	       "request_latency_seconds_sum=%s inflight_requests=0\n",
	       bytes, lat_n, secs_buf);
	fflush(stdout);
	if (efile) {
		char *lines[MAX_METHODS + 4], buf[160];
		int k = 0;
		FILE *f = fopen(efile, "w");
		for (i = 0; i < (int)METHODS; i++) {
			snprintf(buf, sizeof(buf), "requests_total{method=\"%s\"} %llu", methods[i],
				 req[i]);
			lines[k++] = strdup(buf);
		}
		snprintf(buf, sizeof(buf), "request_latency_seconds_count %llu", lat_n);
		lines[k++] = strdup(buf);
		snprintf(buf, sizeof(buf), "request_latency_seconds_sum %s", secs_buf);
		lines[k++] = strdup(buf);
		snprintf(buf, sizeof(buf), "response_bytes_total %llu", bytes);
		lines[k++] = strdup(buf);
		lines[k++] = strdup("inflight_requests 0");
		qsort(lines, (size_t)k, sizeof(*lines), cmp_str);
		for (i = 0; f && i < k; i++)
			fprintf(f, "%s\n", lines[i]);
		for (i = 0; i < k; i++)
			free(lines[i]);
		if (!f || fclose(f))
			bad = 1;
	}
	if (qfile) {
		/* The exact quantiles of every latency acknowledged. */
		FILE *f = fopen(qfile, "w");
		uint64_t *all = logged_all && lat_n ? (uint64_t *)malloc(lat_n * sizeof(uint64_t))
						    : NULL;
		size_t m = 0;
		static const double qs[] = {0.5, 0.9, 0.99};
		for (i = 0; all && i < n; i++) {
			memcpy(all + m, lat_log + (size_t)i * LOG, acks[i].lat_n * sizeof(uint64_t));
			m += acks[i].lat_n;
		}
		if (all)
			qsort(all, m, sizeof(*all), cmp_u64);
		for (i = 0; all && f && i < 3; i++) {
			double want = qs[i] * (double)m; /* rank ceil(q m), at least 1 */
			uint64_t rank = (uint64_t)want;
			rank += (double)rank < want;
			seconds(secs_buf, sizeof(secs_buf), all[(rank ? rank : 1) - 1]);
			fprintf(f, "%g %s\n", qs[i], secs_buf);
		}
		free(all);
		if (!f || fclose(f))
			bad = 1;
	}
	fprintf(stderr, "prefork: quiesced: %u kills, %u restarts\n", kills, kills);
	tally_shm_close(r);
	return bad;
}
