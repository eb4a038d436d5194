/*
 * tallystat - print a tally shared region's counters, gauges and
 * histograms, from outside the processes that write them (like vmstat or
 * varnishstat). Attaches read-only: never writes, never locks, never
 * disturbs a writer, and treats the region as untrusted input.
 *
 *   tallystat [-f text|json|prometheus|openmetrics] [-i SECONDS [-n COUNT]]
 *             [--serve HOST:PORT] REGION
 *
 * REGION is a file path, or shm:/NAME for a POSIX shared-memory name.
 *   -f FORMAT   text (default: "name value", with -i also the rate per
 *               second), json (one object per sample, with -i rates), or
 *               Prometheus text 0.0.4 / OpenMetrics 1.0 (through
 *               tally/export.h: counters as name_total, widened;
 *               histograms as Prometheus histograms of a fixed le set)
 * A histogram (family{labels} or family) shows in text as the lines
 * family_count{labels} N, family_sum{labels} S and family{labels,
 * quantile="Q"} V for Q = 0.5, 0.9, 0.99 (its full precision: within
 * tally_hist_error() of the exact quantile), in its scale (seconds for
 * nanoseconds recorded with scale 1e-9); in JSON as an object with count,
 * sum, those quantiles and the buckets Prometheus gets (cumulative, by le),
 * and "stuck" when records were left in the middle (tally/shm/cut.h).
 *   -i SECONDS  print every SECONDS (a decimal) instead of once; rates are
 *               the change since the last print divided by the time
 *               between the two snapshots
 *   -n COUNT    with -i: stop after COUNT prints
 *   --serve A   serve /metrics on A (tally/serve.h) until SIGINT/SIGTERM;
 *               objects created later are added within a second
 * Exit: 0; 1 the region cannot be read (the reason on stderr: missing,
 * corrupted, incompatible, truncated, or a histogram whose records never
 * paused long enough for a read-only cut: tally/shm/cut.h), or (prometheus,
 * openmetrics) stdout cannot be written; 2 usage.
 */
#define _GNU_SOURCE
#include <tally/shm.h>
#include <tally/shm/export.h>
#if defined(TALLYSTAT_SERVE)
#  include <tally/serve.h>
#endif

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { F_TEXT, F_JSON, F_PROM, F_OM };

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

/* A read of a page past the end of a region truncated under us. */
static void on_bus(int sig)
{
	static const char m[] = "tallystat: the region was truncated while being read\n";
	(void)sig;
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* tally_export_render_write's output: all of buf to fd 1 (short writes
 * and EINTR retried); 0, or the errno, also left at *(int *)ctx. */
static int put_stdout(void *ctx, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(1, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*(int *)ctx = n < 0 ? errno : EIO;
			return *(int *)ctx;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int usage(void)
{
	fprintf(stderr, "usage: tallystat [-f text|json|prometheus|openmetrics] "
			"[-i SECONDS [-n COUNT]] [--serve HOST:PORT] REGION\n"
			"       REGION: a path, or shm:/NAME\n");
	return 2;
}

/* s as a JSON string (names carry labels: quotes and backslashes). */
static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static const char *type_of(unsigned kind)
{
	return kind == TALLY_SHM_COUNTER ? "counter"
	       : kind == TALLY_SHM_GAUGE ? "gauge"
	       : kind == TALLY_SHM_HIST  ? "histogram"
					 : "process_gauge";
}

/* v x scale: exact decimals for a scale of 10^-k (as the exporter writes
 * them; the 10^-k found through stored doubles, so x87's excess
 * precision cannot miss it), else the shortest %g that reads back. */
static void put_scaled(uint64_t v, double scale)
{
	uint64_t p = 1;
	int k;
	for (k = 0; k <= 18; k++, p *= 10u) {
		volatile double q = 1.0 / (double)p;
		if (scale == q)
			break;
	}
	if (k > 18) {
		char b[40];
		int prec;
		for (prec = 1; prec <= 17; prec++) {
			snprintf(b, sizeof(b), "%.*g", prec, (double)v * scale);
			if (strtod(b, NULL) == (double)v * scale)
				break;
		}
		fputs(b, stdout);
	} else if (!k) {
		printf("%llu", (unsigned long long)v);
	} else {
		char f[24];
		int n;
		snprintf(f, sizeof(f), "%0*llu", k, (unsigned long long)(v % p));
		for (n = k; n > 0 && f[n - 1] == '0'; n--)
			f[n - 1] = '\0'; /* no trailing zeros */
		printf("%llu%s%s", (unsigned long long)(v / p), n ? "." : "", f);
	}
}

static const double quantiles[] = {0.5, 0.9, 0.99};

/* A histogram's text lines: family_count{l} N, family_sum{l} S, then
 * family{l,quantile="Q"} V (rates of count and sum with prev). */
static void hist_text(const struct tally_shm_value *v, const struct tally_shm_value *prev,
		      double dt)
{
	const struct tally_hist_snap *h = v->hist;
	const char *brace = strchr(v->name, '{');
	int fl = brace ? (int)(brace - v->name) : (int)strlen(v->name);
	const char *lab = brace ? brace : "";
	size_t q;
	printf("%.*s_count%s %llu", fl, v->name, lab, (unsigned long long)h->count);
	if (prev && dt > 0)
		printf(" %.1f/s", (double)(h->count - prev->hist->count) / dt);
	printf("\n%.*s_sum%s ", fl, v->name, lab);
	put_scaled(h->sum, v->scale);
	if (prev && dt > 0)
		printf(" %.6g/s", (double)(h->sum - prev->hist->sum) * v->scale / dt);
	printf("\n");
	for (q = 0; q < sizeof(quantiles) / sizeof(quantiles[0]); q++) {
		if (brace)
			printf("%.*s%.*s,quantile=\"%g\"} ", fl, v->name,
			       (int)strlen(brace) - 1, brace, quantiles[q]);
		else
			printf("%s{quantile=\"%g\"} ", v->name, quantiles[q]);
		printf("%.6g\n", h->count ? tally_hist_quantile(h, quantiles[q]) * v->scale : 0.0);
	}
}

/* A histogram's JSON members after "type": count, sum, quantiles, and
 * the buckets Prometheus gets (the exporter's fixed le set). */
static void hist_json(const struct tally_shm_value *v)
{
	const struct tally_hist_snap *h = v->hist;
	unsigned *edges = (unsigned *)malloc(h->nr_buckets * sizeof(unsigned));
	const char *why = NULL;
	uint64_t cum = 0, lo = 0, hi = 0;
	unsigned i, j = 0;
	int n = edges ? tally__export_hist_edges(&h->tally__l, NULL, edges, &why) : -1;
	size_t q;
	printf(",\"count\":%llu,\"sum\":", (unsigned long long)h->count);
	put_scaled(h->sum, v->scale);
	printf(",\"quantiles\":{");
	for (q = 0; q < sizeof(quantiles) / sizeof(quantiles[0]); q++)
		printf("%s\"%g\":%.6g", q ? "," : "", quantiles[q],
		       h->count ? tally_hist_quantile(h, quantiles[q]) * v->scale : 0.0);
	printf("},\"buckets\":[");
	for (i = 0; n > 0 && i < (unsigned)n; i++) {
		for (; j <= edges[i]; j++)
			cum += h->counts[j];
		tally_hist_snap_bucket_range(h, edges[i], &lo, &hi);
		printf("{\"le\":");
		put_scaled(hi, v->scale);
		printf(",\"count\":%llu},", (unsigned long long)cum);
	}
	printf("{\"le\":\"+Inf\",\"count\":%llu}]", (unsigned long long)h->count);
	if (v->stuck) /* observations left in the middle of records (tally/shm/cut.h) */
		printf(",\"stuck\":%llu", (unsigned long long)v->stuck);
	free(edges);
}

/* The previous snapshot's value of v, by position (objects never move). */
static void print_text_json(int fmt, const struct tally_shm_snap *s, const struct tally_shm_snap *prev,
			    double dt, int first_line)
{
	size_t i;
	if (fmt == F_JSON) {
		printf("{\"slots\":%u,\"slots_written\":%u,\"processes\":%u,"
		       "\"processes_live\":%u,\"objects\":[",
		       s->nr_slots, s->lim, s->procs, s->procs_live);
		for (i = 0; i < s->n; i++) {
			const struct tally_shm_value *v = &s->v[i];
			int gauge = v->kind != TALLY_SHM_COUNTER;
			printf("%s{\"name\":", i ? "," : "");
			json_str(v->name);
			printf(",\"type\":\"%s\"", type_of(v->kind));
			if (v->hist) {
				hist_json(v);
				if (prev && i < prev->n && prev->v[i].hist && dt > 0)
					printf(",\"rate\":%.3f",
					       (double)(v->hist->count - prev->v[i].hist->count) / dt);
				printf("}");
				continue;
			}
			printf(",\"value\":");
			if (gauge)
				printf("%lld", (long long)tally__to_signed(v->raw));
			else
				printf("%llu", (unsigned long long)v->raw);
			if (prev && i < prev->n && dt > 0) {
				tally_uword d = v->raw - prev->v[i].raw;
				printf(",\"rate\":%.3f",
				       (gauge ? (double)tally__to_signed(d) : (double)d) / dt);
			}
			printf("}");
		}
		printf("]}\n");
	} else {
		if (!first_line)
			printf("\n");
		for (i = 0; i < s->n; i++) {
			const struct tally_shm_value *v = &s->v[i];
			int gauge = v->kind != TALLY_SHM_COUNTER;
			if (v->hist) {
				hist_text(v, prev && i < prev->n && prev->v[i].hist ? &prev->v[i] : NULL,
					  dt);
				continue;
			}
			if (gauge)
				printf("%s %lld", v->name, (long long)tally__to_signed(v->raw));
			else
				printf("%s %llu", v->name, (unsigned long long)v->raw);
			if (prev && i < prev->n && dt > 0) {
				tally_uword d = v->raw - prev->v[i].raw;
				printf(" %.1f/s", (gauge ? (double)tally__to_signed(d) : (double)d) / dt);
			}
			printf("\n");
		}
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *where = NULL, *serve = NULL;
	struct tally_shm *r = NULL;
	struct tally_shm_snap snap[2];
	struct tally_export e;
	char why[TALLY_SHM_ERROR_MAX];
	unsigned flags = 0, skipped = 0;
	double interval = 0, t_prev = 0;
	long count = -1, printed = 0;
	int fmt = F_TEXT, i, cur = 0, have_prev = 0, err;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f") && i + 1 < argc) {
			const char *f = argv[++i];
			if (!strcmp(f, "text"))
				fmt = F_TEXT;
			else if (!strcmp(f, "json"))
				fmt = F_JSON;
			else if (!strcmp(f, "prometheus"))
				fmt = F_PROM;
			else if (!strcmp(f, "openmetrics"))
				fmt = F_OM;
			else
				return usage();
		} else if (!strcmp(argv[i], "-i") && i + 1 < argc) {
			interval = atof(argv[++i]);
			if (!(interval > 0))
				return usage();
		} else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			count = atol(argv[++i]);
			if (count < 1)
				return usage();
		} else if (!strcmp(argv[i], "--serve") && i + 1 < argc) {
			serve = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return usage();
		} else if (!where) {
			where = argv[i];
		} else {
			return usage();
		}
	}
	if (!where)
		return usage();
	if (!strncmp(where, "shm:", 4)) {
		where += 4;
		flags = TALLY_SHM_POSIX;
	}
	signal(SIGBUS, on_bus);
	if ((err = tally_shm_open_ro(&r, where, flags, why, sizeof(why)))) {
		fprintf(stderr, "tallystat: %s: %s\n", where, why);
		return 1;
	}
	memset(snap, 0, sizeof(snap));
	tally_export_init(&e);
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);

	if (serve) {
#if defined(TALLYSTAT_SERVE)
		struct tally_serve_opts o;
		struct tally_serve *srv;
		pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
		char swhy[TALLY_SERVE_ERROR_MAX];
		if (tally_shm_export_add(&e, r, &skipped)) {
			fprintf(stderr, "tallystat: %s: %s\n", where, tally_shm_error(r));
			return 1;
		}
		memset(&o, 0, sizeof(o));
		o.listen = serve;
		o.lock = &mu;
		if (tally_serve_start(&srv, &e, &o, swhy, sizeof(swhy))) {
			fprintf(stderr, "tallystat: %s\n", swhy);
			return 1;
		}
		{
			/* "listening on HOST:PORT" (the port chosen for :0) */
			const char *colon = strrchr(serve, ':');
			int hl = colon ? (int)(colon - serve) : 0;
			fprintf(stderr, "tallystat: listening on %.*s:%u, serving %s\n", hl, serve,
				tally_serve_port(srv), where);
		}
		while (!stop) {
			sleep(1);
			pthread_mutex_lock(&mu);
			if (tally_shm_export_add(&e, r, &skipped))
				fprintf(stderr, "tallystat: %s: %s\n", where, tally_shm_error(r));
			pthread_mutex_unlock(&mu);
		}
		tally_serve_stop(srv);
		tally_export_destroy(&e);
		tally_shm_close(r);
		return 0;
#else
		fprintf(stderr, "tallystat: built without libmicrohttpd: no --serve\n");
		return 2;
#endif
	}

	for (;;) {
		double t = now();
		if (fmt == F_PROM || fmt == F_OM) {
			unsigned before = skipped;
			int werr = 0;
			if (tally_shm_export_add(&e, r, &skipped)) {
				fprintf(stderr, "tallystat: %s: %s\n", where, tally_shm_error(r));
				return 1;
			}
			if (skipped > before)
				fprintf(stderr, "tallystat: %u object(s) not exported: %s\n",
					skipped - before, tally_export_error(&e));
			/* Streamed to stdout through one 64 KiB buffer (the
			 * values all read first: a bad region prints nothing). */
			fflush(stdout);
			if (tally_export_render_write(&e, fmt == F_OM ? TALLY_EXPORT_OPENMETRICS
								      : TALLY_EXPORT_PROMETHEUS,
						      put_stdout, &werr)) {
				if (werr)
					fprintf(stderr, "tallystat: writing the output: %s\n",
						strerror(werr));
				else
					fprintf(stderr, "tallystat: %s: %s\n", where,
						tally_export_error(&e));
				tally_export_destroy(&e);
				tally_shm_close(r);
				return 1;
			}
		} else {
			if (tally_shm_snapshot(r, &snap[cur])) {
				fprintf(stderr, "tallystat: %s: %s\n", where, tally_shm_error(r));
				return 1;
			}
			print_text_json(fmt, &snap[cur], have_prev ? &snap[!cur] : NULL, t - t_prev,
					!printed);
			have_prev = 1;
			cur = !cur;
		}
		t_prev = t;
		printed++;
		if (!interval || (count > 0 && printed >= count) || stop)
			break;
		{
			struct timespec ts;
			ts.tv_sec = (time_t)interval;
			ts.tv_nsec = (long)((interval - (double)ts.tv_sec) * 1e9);
			while (nanosleep(&ts, &ts) && !stop)
				;
		}
		if (stop)
			break;
	}
	tally_shm_snap_free(&snap[0]);
	tally_shm_snap_free(&snap[1]);
	tally_export_destroy(&e);
	tally_shm_close(r);
	return 0;
}
