/*
 * examples/reclaim/report.c - what the demo prints: the workload and lock
 * tables with each site's change as the median and range over the repeats
 * (summary.c), the verdict, the long waits and who held lru_add_drain up;
 * or the same as JSON.
 */
#define _GNU_SOURCE
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The wait of the waits under LONG_WAIT_NS: the lock's own, as a spinlock
 * sees it (a longer one means the holder or the waiter lost its CPU). */
static uint64_t short_wait(const struct model_result *r)
{
	uint64_t w = r->total_lock_wait_ns;
	for (int s = 0; s < NR_SITES; s++)
		w -= r->long_wait_ns[s];
	return w;
}

/* "median (min .. max)" of a site's change, or why there is none. */
static void change_str(const struct demo *d, int site, char *buf, size_t len)
{
	struct change c;
	int both = d->ran[MODE_LEGACY] && d->ran[MODE_VMSTAT];
	uint64_t a = site < NR_SITES ? d->sum[MODE_VMSTAT].wait_ns[site] : 1;
	site_change(d, site, &c);
	if (!both)
		snprintf(buf, len, "%s", "");
	else if (!c.n)
		snprintf(buf, len, "%s", a ? "new" : "0%");
	else if (c.max == -100.0 && !a)
		snprintf(buf, len, "-100%% (eliminated)");
	else if (d->repeat == 1)
		snprintf(buf, len, "%+.0f%%", c.median);
	else
		snprintf(buf, len, "%+.0f%% (%+.0f .. %+.0f)", c.median, c.min, c.max);
}

/* ---- tables ------------------------------------------------------------------ */
static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static void pct(char *buf, size_t n, double before, double after)
{
	if (before == 0)
		snprintf(buf, n, "%s", after == 0 ? "0%" : "new");
	else if (after == 0)
		snprintf(buf, n, "-100%% (eliminated)");
	else
		snprintf(buf, n, "%+.0f%%", (after - before) / before * 100.0);
}

static double rate(uint64_t n, uint64_t ns)
{
	return ns ? (double)n * 1e9 / (double)ns : 0;
}

void print_tables(const struct demo *d)
{
	const struct model_config *cfg = &d->cfg;
	const struct model_result *res = d->sum;
	const int *ran = d->ran;
	const struct model_result *b = &res[MODE_LEGACY], *a = &res[MODE_VMSTAT];
	int both = ran[MODE_LEGACY] && ran[MODE_VMSTAT];
	char p[64], v[512];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	printf("reclaim: seed %llu, %u leaves x (%u producers + %u reclaimers), depth %u, "
	       "%ld CPUs\n",
	       (unsigned long long)cfg->seed, cfg->leaves, cfg->producers, cfg->reclaimers,
	       cfg->depth, cpus);
	printf("same seeded event stream in both modes: %lu events per producer at %lu/s, a "
	       "reclaim pass due every %u allocations;\n%u repeats, each runs both modes in "
	       "turn on %lu events per producer; counts added up,\nchanges as the median "
	       "(min .. max) over the repeats\n\n",
	       cfg->events, cfg->rate, cfg->alloc_per_pass, d->repeat,
	       cfg->events / d->repeat);

	for (int m = 0; m < NR_MODES; m++) {
		if (!ran[m])
			continue;
		printf("%s: %.2f s\n", mode_name[m], (double)res[m].elapsed_ns / 1e9);
	}
	printf("\nWorkload                      %14s %14s %10s\n", "legacy", "vmstat", "delta");
#define ROW(label, field)                                                                    \
	do {                                                                                 \
		pct(p, sizeof(p), (double)b->field, (double)a->field);                         \
		printf("  %-28s %14llu %14llu %10s\n", label, (unsigned long long)b->field,  \
		       (unsigned long long)a->field, both ? p : "");                          \
	} while (0)
	ROW("faults", faults);
	ROW("refaults", refaults);
	ROW("page-cache reads", accesses);
	ROW("reclaim passes", passes);
	ROW("folios scanned", scanned);
	ROW("folios reclaimed", reclaimed);
	ROW("anon pageouts", pageouts);
#undef ROW
	pct(p, sizeof(p), rate(b->refaults, b->elapsed_ns), rate(a->refaults, a->elapsed_ns));
	printf("  %-28s %14.0f %14.0f %10s\n", "refaults / s", rate(b->refaults, b->elapsed_ns),
	       rate(a->refaults, a->elapsed_ns), both ? p : "");
	pct(p, sizeof(p), rate(b->scanned, b->elapsed_ns), rate(a->scanned, a->elapsed_ns));
	printf("  %-28s %14.0f %14.0f %10s\n", "scanned / s", rate(b->scanned, b->elapsed_ns),
	       rate(a->scanned, a->elapsed_ns), both ? p : "");

	printf("\nLock contention (total wait)                 Before (legacy)"
	       "          After (vmstat)   %% change\n");
	printf("  %-40s %10s %10s %10s %10s\n", "lock site", "acq", "wait ms", "acq", "wait ms");
	for (int s = 0; s < NR_SITES; s++) {
		change_str(d, s, p, sizeof(p));
		printf("  %-40s %10llu %10.2f %10llu %10.2f   %s\n", site_label[s],
		       (unsigned long long)b->acquisitions[s], ms(b->wait_ns[s]),
		       (unsigned long long)a->acquisitions[s], ms(a->wait_ns[s]), p);
	}
	uint64_t tb = 0, ta = 0;
	for (int s = 0; s < NR_SITES; s++) {
		tb += b->acquisitions[s];
		ta += a->acquisitions[s];
	}
	change_str(d, SITE_TOTAL, p, sizeof(p));
	printf("  %-40s %10llu %10.2f %10llu %10.2f   %s\n", "Total lock wait",
	       (unsigned long long)tb, ms(b->total_lock_wait_ns), (unsigned long long)ta,
	       ms(a->total_lock_wait_ns), p);
	change_str(d, SITE_SHORT, p, sizeof(p));
	printf("  %-40s %10s %10.2f %10s %10.2f   %s\n", "  of it, waits under 100 us", "",
	       ms(short_wait(b)), "", ms(short_wait(a)), p);
	printf("  (prepare_scan_control takes lru_lock in legacy, the dedicated cost lock in "
	       "vmstat)\n");
	for (int m = 0; m < NR_MODES; m++) {
		const struct model_result *r = &res[m];
		if (!ran[m])
			continue;
		uint64_t lw = 0, lwn = 0;
		for (int s = 0; s < NR_SITES; s++) {
			lw += r->long_waits[s];
			lwn += r->long_wait_ns[s];
		}
		printf("  %s: %llu waits over %u us, %.2f ms of the %.2f ms\n", mode_name[m],
		       (unsigned long long)lw, LONG_WAIT_NS / 1000u, ms(lwn),
		       ms(r->total_lock_wait_ns));
		printf("  %s: lru_add_drain contended %llu times, %llu over %u us (%.2f of %.2f ms), "
		       "held up by",
		       mode_name[m], (unsigned long long)r->contended[SITE_LRU_ADD_DRAIN],
		       (unsigned long long)r->long_waits[SITE_LRU_ADD_DRAIN], LONG_WAIT_NS / 1000u,
		       ms(r->long_wait_ns[SITE_LRU_ADD_DRAIN]), ms(r->wait_ns[SITE_LRU_ADD_DRAIN]));
		for (int h = 0; h < NR_SITES; h++)
			if (r->contended_by[SITE_LRU_ADD_DRAIN][h])
				printf(" %s %llu", site_key[h],
				       (unsigned long long)r->contended_by[SITE_LRU_ADD_DRAIN][h]);
		printf("\n");
		if (!cfg->hold_times)
			continue;
		printf("  %s: lru_lock mean hold, ns:", mode_name[m]);
		for (int s = 0; s < NR_SITES; s++)
			/* vmstat's prepare_scan_control takes the cost lock, untimed */
			if (r->acquisitions[s] && !(m == MODE_VMSTAT && s == SITE_PREPARE_SCAN))
				printf(" %s %.0f", site_key[s],
				       (double)r->hold_ns[s] / (double)r->acquisitions[s]);
		printf("\n");
	}
	if (both) {
		verdict(d, v, sizeof(v));
		printf("\nVerdict: %s\n", v);
	}
	printf("\nCost-recording lock acquisitions (note_cost_unlock + refault_note_cost): "
	       "legacy %llu, vmstat %llu\n",
	       (unsigned long long)b->producer_lock_acquisitions,
	       (unsigned long long)a->producer_lock_acquisitions);

	printf("\nFinal costs and scan fraction (swappiness %u)\n", cfg->swappiness);
	for (int m = 0; m < NR_MODES; m++) {
		if (!ran[m])
			continue;
		for (unsigned i = 0; i < res[m].nr_lruvecs; i++) {
			const struct lruvec_report *r = &res[m].lruvec[i];
			printf("  %-6s %-14s anon %8llu file %8llu  fraction %3llu/%3llu of %3llu  "
			       "lrusize %llu\n",
			       mode_name[m], r->name, (unsigned long long)r->cost[0],
			       (unsigned long long)r->cost[1], (unsigned long long)r->fraction[0],
			       (unsigned long long)r->fraction[1], (unsigned long long)r->denominator,
			       (unsigned long long)r->lrusize);
		}
	}
	for (int m = 0; m < NR_MODES; m++) {
		if (!ran[m])
			continue;
		const struct model_result *r = &res[m];
		printf("\n%s: isolation throttle: %llu waits (%llu woken, %llu timed out), %llu "
		       "gave up, %llu passes skipped\n",
		       mode_name[m], (unsigned long long)r->throttled,
		       (unsigned long long)r->throttle_woken, (unsigned long long)r->throttle_timeouts,
		       (unsigned long long)r->throttle_gave_up, (unsigned long long)r->passes_throttled);
		printf("%s: promotion (rate limit %u per syscall): %llu hints, %llu candidates, "
		       "%llu promoted, %llu rate-limited, at most %llu per syscall\n",
		       mode_name[m], cfg->rate_limit, (unsigned long long)r->promo[NUMA_HINT_PAGE_CACHE],
		       (unsigned long long)r->promo[PGPROMOTE_CANDIDATE],
		       (unsigned long long)r->promo[PGPROMOTE_SUCCESS],
		       (unsigned long long)r->promo[PGPROMOTE_RATELIMITED],
		       (unsigned long long)r->promo_max_per_syscall);
	}
}

static const char *site_name(int s)
{
	return s < NR_SITES ? site_key[s] : s == SITE_TOTAL ? "total" : "total_short_waits";
}

void print_json(const struct demo *d)
{
	const struct model_config *cfg = &d->cfg;
	const struct model_result *res = d->sum;
	const int *ran = d->ran;
	int first = 1;
	char v[512];
	printf("{\n  \"config\": {\"seed\": %llu, \"leaves\": %u, \"depth\": %u, \"producers_per_leaf\": "
	       "%u, \"reclaimers_per_leaf\": %u, \"events_per_producer\": %lu, "
	       "\"repeat\": %u, \"rate\": %lu, \"alloc_per_pass\": %u, \"folios_per_leaf\": %u, \"swappiness\": %u, "
	       "\"cpus\": %ld},\n",
	       (unsigned long long)cfg->seed, cfg->leaves, cfg->depth, cfg->producers,
	       cfg->reclaimers, cfg->events, d->repeat, cfg->rate, cfg->alloc_per_pass, cfg->folios, cfg->swappiness,
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("  \"modes\": {");
	for (int m = 0; m < NR_MODES; m++) {
		const struct model_result *r = &res[m];
		if (!ran[m])
			continue;
		printf("%s\n    \"%s\": {\n", first ? "" : ",", mode_name[m]);
		first = 0;
		printf("      \"elapsed_ns\": %llu,\n      \"locks\": {",
		       (unsigned long long)r->elapsed_ns);
		for (int s = 0; s < NR_SITES; s++)
		{
			printf("%s\n        \"%s\": {\"acquisitions\": %llu, \"wait_ns\": %llu, "
			       "\"contended\": %llu, \"long_waits\": %llu, \"long_wait_ns\": %llu, "
			       "\"hold_ns\": %llu, \"contended_by\": {",
			       s ? "," : "", site_key[s], (unsigned long long)r->acquisitions[s],
			       (unsigned long long)r->wait_ns[s], (unsigned long long)r->contended[s],
			       (unsigned long long)r->long_waits[s],
			       (unsigned long long)r->long_wait_ns[s], (unsigned long long)r->hold_ns[s]);
			for (int h = 0; h < NR_SITES; h++)
				printf("%s\"%s\": %llu", h ? ", " : "", site_key[h],
				       (unsigned long long)r->contended_by[s][h]);
			printf("}}");
		}
		printf("\n      },\n");
		printf("      \"producer_lock_acquisitions\": %llu,\n",
		       (unsigned long long)r->producer_lock_acquisitions);
		printf("      \"total_lock_wait_ns\": %llu,\n", (unsigned long long)r->total_lock_wait_ns);
		/* The first leaf: the lruvec reclaim targets most. */
		const struct lruvec_report *leaf = &r->lruvec[r->nr_lruvecs - cfg->leaves];
		printf("      \"anon_cost\": %llu,\n      \"file_cost\": %llu,\n"
		       "      \"fraction\": [%llu, %llu],\n      \"denominator\": %llu,\n",
		       (unsigned long long)leaf->cost[0], (unsigned long long)leaf->cost[1],
		       (unsigned long long)leaf->fraction[0], (unsigned long long)leaf->fraction[1],
		       (unsigned long long)leaf->denominator);
		printf("      \"lruvecs\": {");
		for (unsigned i = 0; i < r->nr_lruvecs; i++) {
			const struct lruvec_report *l = &r->lruvec[i];
			printf("%s\n        \"%s\": {\"anon_cost\": %llu, \"file_cost\": %llu, "
			       "\"fraction\": [%llu, %llu], \"denominator\": %llu, \"lrusize\": %llu}",
			       i ? "," : "", l->name, (unsigned long long)l->cost[0],
			       (unsigned long long)l->cost[1], (unsigned long long)l->fraction[0],
			       (unsigned long long)l->fraction[1], (unsigned long long)l->denominator,
			       (unsigned long long)l->lrusize);
		}
		printf("\n      },\n");
		printf("      \"work\": {\"faults\": %llu, \"refaults\": %llu, \"page_cache_reads\": "
		       "%llu, \"drains\": %llu, \"passes\": %llu, \"scanned\": %llu, \"reclaimed\": "
		       "%llu, \"pageouts\": %llu, \"rotated\": %llu, \"deactivated\": %llu},\n",
		       (unsigned long long)r->faults, (unsigned long long)r->refaults,
		       (unsigned long long)r->accesses, (unsigned long long)r->drains,
		       (unsigned long long)r->passes, (unsigned long long)r->scanned,
		       (unsigned long long)r->reclaimed, (unsigned long long)r->pageouts,
		       (unsigned long long)r->rotated, (unsigned long long)r->deactivated);
		printf("      \"throttle\": {\"waits\": %llu, \"woken\": %llu, \"timeouts\": %llu, "
		       "\"gave_up\": %llu, \"passes_skipped\": %llu},\n",
		       (unsigned long long)r->throttled, (unsigned long long)r->throttle_woken,
		       (unsigned long long)r->throttle_timeouts, (unsigned long long)r->throttle_gave_up,
		       (unsigned long long)r->passes_throttled);
		printf("      \"promotion\": {\"rate_limit\": %u, \"hints\": %llu, \"candidates\": %llu, "
		       "\"promoted\": %llu, \"rate_limited\": %llu, \"syscalls\": %llu, "
		       "\"max_per_syscall\": %llu}\n    }",
		       cfg->rate_limit, (unsigned long long)r->promo[NUMA_HINT_PAGE_CACHE],
		       (unsigned long long)r->promo[PGPROMOTE_CANDIDATE],
		       (unsigned long long)r->promo[PGPROMOTE_SUCCESS],
		       (unsigned long long)r->promo[PGPROMOTE_RATELIMITED],
		       (unsigned long long)r->promo_syscalls,
		       (unsigned long long)r->promo_max_per_syscall);
	}
	printf("\n  }");
	if (ran[MODE_LEGACY] && ran[MODE_VMSTAT]) {
		/* Per site and in total: the median and range over the repeats of
		 * (vmstat - legacy) / legacy, null where legacy never waited. */
		printf(",\n  \"wait_change_pct\": {");
		for (int s = 0; s <= SITE_SHORT; s++) {
			struct change c;
			site_change(d, s, &c);
			printf("%s\n    \"%s\": ", s ? "," : "", site_name(s));
			if (c.n)
				printf("{\"median\": %.1f, \"ci95\": [%.1f, %.1f], \"min\": %.1f, "
				       "\"max\": %.1f, \"repeats\": %u}",
				       c.median, c.lo, c.hi, c.min, c.max, c.n);
			else
				printf("null");
		}
		struct change k;
		contended_change(d, &k);
		printf("\n  },\n  \"contended_change_pct\": ");
		if (k.n)
			printf("{\"median\": %.1f, \"ci95\": [%.1f, %.1f], \"min\": %.1f, "
			       "\"max\": %.1f, \"repeats\": %u}",
			       k.median, k.lo, k.hi, k.min, k.max, k.n);
		else
			printf("null");
		printf(",\n  \"repeats\": [");
		for (unsigned r = 0; r < d->repeat; r++) {
			printf("%s\n    {", r ? "," : "");
			for (int m = 0; m < NR_MODES; m++) {
				printf("%s\"%s_wait_ns\": {", m ? ", " : "", mode_name[m]);
				for (int s = 0; s <= SITE_SHORT; s++)
					printf("%s\"%s\": %llu", s ? ", " : "", site_name(s),
					       (unsigned long long)d->wait_ns[r][m][s]);
				printf("}");
			}
			printf(", \"legacy_contended\": %llu, \"vmstat_contended\": %llu}",
			       (unsigned long long)d->contended[r][MODE_LEGACY],
			       (unsigned long long)d->contended[r][MODE_VMSTAT]);
		}
		verdict(d, v, sizeof(v));
		printf("\n  ],\n  \"verdict\": \"%s\"", v);
	}
	printf("\n}\n");
}

