/*
 * bench/arena_reads.c - what reads and frees of counters cost against the
 * CPU slots written (issue 30): one pinned thread adds to N default
 * counters (flat at 2 slots, a counter tree from 64), then is timed:
 *   sum       tally_counter_sum of each of the N counters (one pass)
 *   destroy   tally_counter_destroy of the N
 *   render    a tally_export_render_alloc (Prometheus text) of 8,000
 *             counters: the body of a serve.h scrape (what the server adds
 *             around it, HTTP, does not depend on the slots)
 * plus the resident memory the N counters added (VmRSS, after the adds,
 * per counter). Wall time, best of R rounds, each round fresh counters.
 * Built once per TALLY_CPU_SLOTS by bench/arena_reads.sh, which runs the
 * builds one after the other in one run and prints the ratios.
 *
 *   cc -std=gnu11 -O2 -DTALLY_CPU_SLOTS=256 -Iinclude bench/arena_reads.c -o ar -pthread
 *   ./ar [R]       (default 3)
 * Prints one line per N: "arena_reads: slots=S n=N sum_s=... destroy_s=...
 * rss_per=..." and one for the render: "arena_reads: slots=S render_n=8000
 * render_s=...".
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tally/counter.h>
#include <tally/export.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb;
}

static void pin_first_cpu(void)
{
	cpu_set_t set;
	int i;
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set)) {
			CPU_ZERO(&set);
			CPU_SET(i, &set);
			(void)sched_setaffinity(0, sizeof(set), &set);
			return;
		}
}

static volatile tally_sword sink;

/* One round at n counters: sum and destroy times, RSS per counter. */
static void round_n(long n, double *sum_s, double *destroy_s, double *rss_per)
{
	struct tally_counter *c = (struct tally_counter *)calloc((size_t)n, sizeof(*c));
	long i, r0;
	double t;
	tally_sword total = 0;
	if (!c) {
		perror("calloc");
		exit(1);
	}
	r0 = rss_kb();
	for (i = 0; i < n; i++)
		if (tally_counter_init(&c[i], 0, 0)) {
			fprintf(stderr, "init failed\n");
			exit(1);
		}
	for (i = 0; i < n; i++)
		tally_counter_add(&c[i], i + 1);
	*rss_per = (double)(rss_kb() - r0) * 1024.0 / (double)n;
	t = now();
	for (i = 0; i < n; i++)
		total += tally_counter_sum(&c[i]);
	*sum_s = now() - t;
	sink = total;
	if (total != (tally_sword)(n * (n + 1) / 2)) {
		fprintf(stderr, "arena_reads: wrong total %lld\n", (long long)total);
		exit(1);
	}
	t = now();
	for (i = 0; i < n; i++)
		tally_counter_destroy(&c[i]);
	*destroy_s = now() - t;
	free(c);
}

/* One render of n counters registered with an exporter: seconds. */
static double round_render(long n)
{
	struct tally_counter *c = (struct tally_counter *)calloc((size_t)n, sizeof(*c));
	struct tally_export e;
	char name[32], *out = NULL;
	size_t len = 0;
	double t;
	long i;
	if (!c || tally_export_init(&e)) {
		fprintf(stderr, "arena_reads: export setup\n");
		exit(1);
	}
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "c%ld", i);
		if (tally_counter_init(&c[i], 0, 0) ||
		    tally_export_add_counter(&e, name, "A counter.", &c[i], TALLY_EXPORT_COUNTER)) {
			fprintf(stderr, "arena_reads: registration\n");
			exit(1);
		}
		tally_counter_add(&c[i], 1);
	}
	t = now();
	if (tally_export_render_alloc(&e, TALLY_EXPORT_PROMETHEUS, &out, &len)) {
		fprintf(stderr, "arena_reads: render\n");
		exit(1);
	}
	t = now() - t;
	free(out);
	tally_export_destroy(&e);
	for (i = 0; i < n; i++)
		tally_counter_destroy(&c[i]);
	free(c);
	return t;
}

int main(int argc, char **argv)
{
	static const long ns[] = {4000, 16000};
	int rounds = argc > 1 ? atoi(argv[1]) : 3, r;
	unsigned k;
	pin_first_cpu();
	for (k = 0; k < 2; k++) {
		double best_sum = 1e9, best_destroy = 1e9, rss = 0;
		for (r = 0; r < rounds; r++) {
			double s, d, m;
			round_n(ns[k], &s, &d, &m);
			best_sum = s < best_sum ? s : best_sum;
			best_destroy = d < best_destroy ? d : best_destroy;
			if (!r)
				rss = m; /* the first round: fresh pages */
		}
		printf("arena_reads: slots=%u n=%ld sum_s=%.6f destroy_s=%.6f rss_per=%.1f\n",
		       tally_cpu_slots(), ns[k], best_sum, best_destroy, rss);
	}
	{
		double best = 1e9;
		for (r = 0; r < rounds; r++) {
			double t = round_render(8000);
			best = t < best ? t : best;
		}
		printf("arena_reads: slots=%u render_n=8000 render_s=%.6f\n", tally_cpu_slots(), best);
	}
	return 0;
}
