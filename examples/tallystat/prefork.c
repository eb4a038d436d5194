/*
 * prefork - a prefork "server": N worker processes count requests, bytes
 * and latency into one shared region (tally/shm.h), the way nginx or
 * PHP-FPM workers would; tallystat reads it from outside.
 *
 *   prefork [-k MS] [-s US] [-e FILE] [-m METHOD] [-w FILE] REGION WORKERS SECONDS
 *
 * -w FILE: create the region, then wait (up to a minute) for FILE to exist
 * before starting the workers (a test lets a scraper see it first).
 *
 * Each worker attaches (an unrelated process would do the same) and
 * serves "requests" until the parent stops it after SECONDS. A request
 * holds inflight_requests +1 (a per-process gauge: its process's own row),
 * is served for US microseconds (-s; default 0, with -k 200), then counts
 *   requests{method="get"|"put"|"post"}            labelled counters, one family
 *                                                  (-m: a fourth method)
 *   response_bytes                                 a counter
 *   requests_by_latency{range="lt_250us"|...}      labelled counters: the
 *                                                  request's measured time
 * (names built with tally_export_name()) and acknowledges each add after
 * it returned, in memory the parent shares.
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
 *   expect requests{method="get"}=N ... response_bytes=M inflight_requests=0
 * and with -e FILE writes them as Prometheus samples
 * (requests_total{method="get"} N, ...), sorted, then says on stderr
 * "quiesced: K kills, R restarts".
 */
#define _GNU_SOURCE
#include <tally/export.h> /* tally_export_name() */
#include <tally/shm.h>

#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

enum { MAX_METHODS = 4, BINS = 4, MAX_WORKERS = 256 };
static const char *methods[MAX_METHODS] = {"get", "put", "post", NULL};
static unsigned METHODS = 3;
static const char *const bins[BINS] = {"lt_250us", "lt_1ms", "lt_4ms", "ge_4ms"};

/* One worker slot's acknowledgements: written by the slot's worker of the
 * moment, read by the parent while the worker is stopped or gone. */
struct ack {
	unsigned busy; /* an add is in flight: not to be killed now */
	unsigned long long req[MAX_METHODS], bytes, lat[BINS];
	char pad[64];
};

static struct ack *acks;
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
	struct tally_shm_counter req[MAX_METHODS], bytes, lat[BINS];
	struct tally_shm_proc_gauge inflight;
	struct ack *me = &acks[slot];
	char why[TALLY_SHM_ERROR_MAX], nm[128];
	unsigned i;
	int err;
	err = tally_shm_open(&r, region, NULL, why, sizeof(why));
	for (i = 0; !err && i < METHODS; i++)
		err = name(nm, sizeof(nm), "requests", "method", methods[i]) ||
		      tally_shm_counter(r, nm, &req[i]);
	for (i = 0; !err && i < BINS; i++)
		err = name(nm, sizeof(nm), "requests_by_latency", "range", bins[i]) ||
		      tally_shm_counter(r, nm, &lat[i]);
	if (!err)
		err = tally_shm_counter(r, "response_bytes", &bytes) ||
		      tally_shm_proc_gauge(r, "inflight_requests", &inflight);
	if (err) {
		fprintf(stderr, "prefork: %s\n", r ? tally_shm_error(r) : why);
		return 1;
	}
	while (!__atomic_load_n(stop_all, __ATOMIC_ACQUIRE)) {
		unsigned size = 100 + (seed = seed * 1103515245u + 12345u) % 4000;
		unsigned m = (seed >> 16) % METHODS, b;
		double t0 = now(), us;
		tally_shm_proc_add(&inflight, 1);
		if (serve_us) {
			struct timespec ts = {0, (long)((serve_us / 2 + (seed >> 8) % serve_us) * 1000)};
			nanosleep(&ts, NULL);
		}
		us = (now() - t0) * 1e6;
		b = us < 250 ? 0 : us < 1000 ? 1 : us < 4000 ? 2 : 3;
		__atomic_store_n(&me->busy, 1u, __ATOMIC_SEQ_CST);
		tally_shm_add(&req[m], 1);
		tally_shm_add(&bytes, (tally_sword)size);
		tally_shm_add(&lat[b], 1);
		me->req[m]++;
		me->bytes += size;
		me->lat[b]++;
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

int main(int argc, char **argv)
{
	struct tally_shm *r = NULL;
	char why[TALLY_SHM_ERROR_MAX];
	const char *region, *efile = NULL, *wfile = NULL;
	unsigned long long req[MAX_METHODS] = {0}, lat[BINS] = {0}, bytes = 0;
	pid_t pids[MAX_WORKERS];
	unsigned kills = 0, seed = 1, serve_us = 0, serve_set = 0;
	double secs, kill_ms = 0, until;
	int i, n, opt, bad = 0;
	while ((opt = getopt(argc, argv, "k:s:e:m:w:")) != -1) {
		if (opt == 'w')
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
		fprintf(stderr, "usage: prefork [-k MS] [-s US] [-e FILE] [-m METHOD] [-w FILE] REGION "
				"WORKERS "
				"SECONDS\n");
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
	/* The region exists before the first worker (a reader may attach). */
	if (tally_shm_open(&r, region, NULL, why, sizeof(why))) {
		fprintf(stderr, "prefork: %s\n", why);
		return 1;
	}
	for (i = 0; wfile && access(wfile, F_OK) && i < 6000; i++)
		usleep(10000);
	for (i = 0; i < n; i++)
		pids[i] = spawn(region, (unsigned)i, (unsigned)i * 7919u + 1, serve_us);
	until = now() + secs;
	while (kill_ms > 0 && now() < until) {
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
	while (now() < until)
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
		for (k = 0; k < BINS; k++)
			lat[k] += acks[i].lat[k];
		bytes += acks[i].bytes;
	}
	printf("expect");
	for (i = 0; i < (int)METHODS; i++)
		printf(" requests{method=\"%s\"}=%llu", methods[i], req[i]);
	for (i = 0; i < BINS; i++)
		printf(" requests_by_latency{range=\"%s\"}=%llu", bins[i], lat[i]);
	printf(" response_bytes=%llu inflight_requests=0\n", bytes);
	fflush(stdout);
	if (efile) {
		char *lines[MAX_METHODS + BINS + 2], buf[160];
		int k = 0;
		FILE *f = fopen(efile, "w");
		for (i = 0; i < (int)METHODS; i++) {
			snprintf(buf, sizeof(buf), "requests_total{method=\"%s\"} %llu", methods[i],
				 req[i]);
			lines[k++] = strdup(buf);
		}
		for (i = 0; i < BINS; i++) {
			snprintf(buf, sizeof(buf), "requests_by_latency_total{range=\"%s\"} %llu",
				 bins[i], lat[i]);
			lines[k++] = strdup(buf);
		}
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
	fprintf(stderr, "prefork: quiesced: %u kills, %u restarts\n", kills, kills);
	tally_shm_close(r);
	return bad;
}
