/*
 * reclaim - the reference consumer of tally: seed 000's lru_lock contention
 * experiment in userspace. Runs the model in legacy mode (cost recorded by
 * producers under lru_lock, up the memcg tree) and in vmstat mode (cost
 * folded by reclaim from tally statistics) on the same seeded event
 * stream, and prints a perf-lock-style table of lock waits per call site.
 *
 *   reclaim                      both modes, tables
 *   reclaim --json               the same as one JSON object
 *   reclaim --replay             one thread, deterministic: cost and scan
 *                                fraction after every reclaim pass
 *   reclaim --replay --scenario gap
 *                                seed 000's reclaim-gap case: many anon
 *                                refaults, then fewer file refaults, then
 *                                one reclaim pass
 *   reclaim --help               every option
 */
#define _GNU_SOURCE
#include "model.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const mode_name[NR_MODES] = {"legacy", "vmstat"};

#define DEFAULT_REPEAT 6u

static void usage(FILE *f)
{
	struct model_config d;
	model_default_config(&d);
	fprintf(f,
		"usage: reclaim [options]\n"
		"  --mode legacy|vmstat|both   modes to run (both)\n"
		"  --json                      one JSON object instead of tables\n"
		"  --replay                    one thread, deterministic, a line per pass\n"
		"  --scenario gap              (replay) anon refaults, then file refaults,\n"
		"                              then one pass on one leaf of 4000 folios\n"
		"  --check-equal               (replay, both modes) exit 1 unless every\n"
		"                              pass saw the same cost in both modes\n"
		"  --seed N                    event stream seed (%llu)\n"
		"  --leaves N                  leaf memcgs (%u)\n"
		"  --depth N                   leaf depth below the root (%u)\n"
		"  --producers N               producer threads per leaf (%u)\n"
		"  --reclaimers N              reclaimer threads per leaf (%u)\n"
		"  --events N                  events per producer (%lu), split over the\n"
		"                              repeats\n"
		"  --repeat N                  (threads) run the modes alternately N times\n"
		"                              each and add up the counts, so both see the\n"
		"                              same machine load (%u)\n"
		"  --no-pin                    let the scheduler place the threads (they\n"
		"                              are pinned round-robin over the CPUs)\n"
		"  --rate N                    events per second per producer, 0: flat\n"
		"                              out (%lu)\n"
		"  --alloc-per-pass N          (threads) a reclaim pass is due every N\n"
		"                              allocations of a producer (%u)\n"
		"  --folios N                  folios per leaf (%u)\n"
		"  --lru-pad N                 extra LRU pages per leaf, stats only (%lu)\n"
		"  --swappiness N              0..200 (%u)\n"
		"  --parent-every N            every Nth pass uses the parent's cost (%u)\n"
		"  --rate-limit N              promotion candidates per task syscall (%u)\n"
		"  --user-work N               spin units per producer event (%u)\n"
		"  --reclaim-work N            spin units per folio shrunk (%u)\n"
		"  --flush-period-ms N         periodic stats flush (%llu)\n"
		"  --throttle-wait-us N        isolation throttle wait (%llu)\n"
		"  --rounds N                  (replay) rounds (%lu)\n"
		"  --round-events N            (replay) events per producer per round (%lu)\n",
		(unsigned long long)d.seed, d.leaves, d.depth, d.producers, d.reclaimers, d.events,
		DEFAULT_REPEAT, d.rate, d.alloc_per_pass, d.folios, d.lru_pad, d.swappiness, d.parent_every, d.rate_limit,
		d.user_work, d.reclaim_work, (unsigned long long)(d.flush_period_ns / 1000000),
		(unsigned long long)(d.throttle_wait_ns / 1000), d.rounds, d.round_events);
}

static int parse_u64(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;
	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* ---- replay output ---------------------------------------------------------- */
#define MAX_PASSES 100000
struct replay_log {
	unsigned long n;
	uint64_t cost[MAX_PASSES][2];
	int printed;
};

static void on_pass(void *arg, const struct pass_report *r)
{
	struct replay_log *log = (struct replay_log *)arg;
	static const char *const tname[] = {"anon", "file"};
	if (log->printed)
		printf("%-6s pass %lu target %s leaf %s cost %llu %llu fraction %llu %llu / %llu "
		       "shrink %s scanned %u reclaimed %u\n",
		       mode_name[r->mode], r->pass, r->target, r->leaf,
		       (unsigned long long)r->cost[0], (unsigned long long)r->cost[1],
		       (unsigned long long)r->fraction[0], (unsigned long long)r->fraction[1],
		       (unsigned long long)r->denominator, r->type < 0 ? "none" : tname[r->type],
		       r->scanned, r->reclaimed);
	if (log->n < MAX_PASSES) {
		log->cost[log->n][0] = r->cost[0];
		log->cost[log->n][1] = r->cost[1];
	}
	log->n++;
}

/* Add run r's counts to sum; the final costs are those of the last run. */
static void accumulate(struct model_result *sum, const struct model_result *r)
{
	sum->elapsed_ns += r->elapsed_ns;
	for (int s = 0; s < NR_SITES; s++) {
		sum->acquisitions[s] += r->acquisitions[s];
		sum->wait_ns[s] += r->wait_ns[s];
		sum->contended[s] += r->contended[s];
	}
	sum->producer_lock_acquisitions += r->producer_lock_acquisitions;
	sum->total_lock_wait_ns += r->total_lock_wait_ns;
	sum->faults += r->faults;
	sum->refaults += r->refaults;
	sum->accesses += r->accesses;
	sum->drains += r->drains;
	sum->passes += r->passes;
	sum->passes_throttled += r->passes_throttled;
	sum->passes_due += r->passes_due;
	sum->scanned += r->scanned;
	sum->reclaimed += r->reclaimed;
	sum->pageouts += r->pageouts;
	sum->rotated += r->rotated;
	sum->deactivated += r->deactivated;
	sum->throttled += r->throttled;
	sum->throttle_woken += r->throttle_woken;
	sum->throttle_timeouts += r->throttle_timeouts;
	sum->throttle_gave_up += r->throttle_gave_up;
	for (int k = 0; k < NR_PROMO_ITEMS; k++)
		sum->promo[k] += r->promo[k];
	sum->promo_syscalls += r->promo_syscalls;
	if (r->promo_max_per_syscall > sum->promo_max_per_syscall)
		sum->promo_max_per_syscall = r->promo_max_per_syscall;
	sum->nr_lruvecs = r->nr_lruvecs;
	memcpy(sum->lruvec, r->lruvec, sizeof(r->lruvec));
}

static unsigned g_repeat = 1;

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

static void print_tables(const struct model_config *cfg, const struct model_result *res,
			 const int *ran)
{
	const struct model_result *b = &res[MODE_LEGACY], *a = &res[MODE_VMSTAT];
	int both = ran[MODE_LEGACY] && ran[MODE_VMSTAT];
	char p[32];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	printf("reclaim: seed %llu, %u leaves x (%u producers + %u reclaimers), depth %u, "
	       "%ld CPUs\n",
	       (unsigned long long)cfg->seed, cfg->leaves, cfg->producers, cfg->reclaimers,
	       cfg->depth, cpus);
	printf("same seeded event stream in both modes: %lu events per producer at %lu/s, a "
	       "reclaim pass due every %u allocations;\nmodes run alternately, %u times each, "
	       "counts added up\n\n",
	       cfg->events, cfg->rate, cfg->alloc_per_pass, g_repeat);

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
		pct(p, sizeof(p), (double)b->wait_ns[s], (double)a->wait_ns[s]);
		printf("  %-40s %10llu %10.2f %10llu %10.2f   %s\n", site_label[s],
		       (unsigned long long)b->acquisitions[s], ms(b->wait_ns[s]),
		       (unsigned long long)a->acquisitions[s], ms(a->wait_ns[s]), both ? p : "");
	}
	uint64_t tb = 0, ta = 0;
	for (int s = 0; s < NR_SITES; s++) {
		tb += b->acquisitions[s];
		ta += a->acquisitions[s];
	}
	pct(p, sizeof(p), (double)b->total_lock_wait_ns, (double)a->total_lock_wait_ns);
	printf("  %-40s %10llu %10.2f %10llu %10.2f   %s\n", "Total lock wait",
	       (unsigned long long)tb, ms(b->total_lock_wait_ns), (unsigned long long)ta,
	       ms(a->total_lock_wait_ns), both ? p : "");
	printf("  (prepare_scan_control takes lru_lock in legacy, the dedicated cost lock in "
	       "vmstat)\n");
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

static void print_json(const struct model_config *cfg, const struct model_result *res,
		       const int *ran)
{
	int first = 1;
	printf("{\n  \"config\": {\"seed\": %llu, \"leaves\": %u, \"depth\": %u, \"producers_per_leaf\": "
	       "%u, \"reclaimers_per_leaf\": %u, \"events_per_producer\": %lu, "
	       "\"repeat\": %u, \"rate\": %lu, \"alloc_per_pass\": %u, \"folios_per_leaf\": %u, \"swappiness\": %u, "
	       "\"cpus\": %ld},\n",
	       (unsigned long long)cfg->seed, cfg->leaves, cfg->depth, cfg->producers,
	       cfg->reclaimers, cfg->events, g_repeat, cfg->rate, cfg->alloc_per_pass, cfg->folios, cfg->swappiness,
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
			printf("%s\n        \"%s\": {\"acquisitions\": %llu, \"wait_ns\": %llu, "
			       "\"contended\": %llu}",
			       s ? "," : "", site_key[s], (unsigned long long)r->acquisitions[s],
			       (unsigned long long)r->wait_ns[s], (unsigned long long)r->contended[s]);
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
		const struct model_result *b = &res[MODE_LEGACY], *a = &res[MODE_VMSTAT];
		printf(",\n  \"wait_change_pct\": {");
		for (int s = 0; s < NR_SITES; s++) {
			if (b->wait_ns[s])
				printf("%s\"%s\": %.1f", s ? ", " : "", site_key[s],
				       ((double)a->wait_ns[s] - (double)b->wait_ns[s]) /
					       (double)b->wait_ns[s] * 100.0);
			else
				printf("%s\"%s\": null", s ? ", " : "", site_key[s]);
		}
		printf(", \"total\": ");
		if (b->total_lock_wait_ns)
			printf("%.1f}", ((double)a->total_lock_wait_ns - (double)b->total_lock_wait_ns) /
						(double)b->total_lock_wait_ns * 100.0);
		else
			printf("null}");
	}
	printf("\n}\n");
}

int main(int argc, char **argv)
{
	enum {
		O_MODE = 256, O_JSON, O_REPLAY, O_SCENARIO, O_CHECK, O_SEED, O_LEAVES, O_DEPTH,
		O_PROD, O_RECL, O_EVENTS, O_REPEAT, O_NOPIN, O_RATE_EV, O_APP, O_FOLIOS, O_PAD, O_SWAP, O_PARENT, O_RATE,
		O_UWORK, O_RWORK, O_FLUSH, O_TWAIT, O_ROUNDS, O_REVENTS, O_HELP
	};
	static const struct option opts[] = {
		{"mode", 1, 0, O_MODE},           {"json", 0, 0, O_JSON},
		{"replay", 0, 0, O_REPLAY},       {"scenario", 1, 0, O_SCENARIO},
		{"check-equal", 0, 0, O_CHECK},   {"seed", 1, 0, O_SEED},
		{"leaves", 1, 0, O_LEAVES},       {"depth", 1, 0, O_DEPTH},
		{"producers", 1, 0, O_PROD},      {"reclaimers", 1, 0, O_RECL},
		{"events", 1, 0, O_EVENTS},       {"alloc-per-pass", 1, 0, O_APP},
		{"rate", 1, 0, O_RATE_EV},        {"repeat", 1, 0, O_REPEAT},
		{"no-pin", 0, 0, O_NOPIN},
		{"folios", 1, 0, O_FOLIOS},       {"lru-pad", 1, 0, O_PAD},
		{"swappiness", 1, 0, O_SWAP},     {"parent-every", 1, 0, O_PARENT},
		{"rate-limit", 1, 0, O_RATE},     {"user-work", 1, 0, O_UWORK},
		{"reclaim-work", 1, 0, O_RWORK},  {"flush-period-ms", 1, 0, O_FLUSH},
		{"throttle-wait-us", 1, 0, O_TWAIT}, {"rounds", 1, 0, O_ROUNDS},
		{"round-events", 1, 0, O_REVENTS}, {"help", 0, 0, O_HELP},
		{0, 0, 0, 0},
	};
	struct model_config cfg;
	struct model_script gap = {100, 20};
	int run[NR_MODES] = {1, 1}, json = 0, check = 0, scenario = 0, c;
	unsigned repeat = DEFAULT_REPEAT;
	unsigned long long v;

	model_default_config(&cfg);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case O_MODE:
			run[MODE_LEGACY] = !strcmp(optarg, "legacy") || !strcmp(optarg, "both");
			run[MODE_VMSTAT] = !strcmp(optarg, "vmstat") || !strcmp(optarg, "both");
			bad = !run[MODE_LEGACY] && !run[MODE_VMSTAT];
			break;
		case O_JSON: json = 1; break;
		case O_REPLAY: cfg.replay = 1; break;
		case O_SCENARIO:
			bad = strcmp(optarg, "gap") != 0;
			scenario = 1;
			break;
		case O_CHECK: check = 1; break;
#define NUM(opt, field, max)                                                                 \
	case opt:                                                                            \
		bad = parse_u64(optarg, max, &v);                                           \
		cfg.field = v;                                                               \
		break
		NUM(O_SEED, seed, ~0ull);
		NUM(O_LEAVES, leaves, 32);
		NUM(O_DEPTH, depth, 16);
		NUM(O_PROD, producers, 64);
		NUM(O_RECL, reclaimers, 64);
		NUM(O_EVENTS, events, 1ull << 40);
		NUM(O_APP, alloc_per_pass, 1u << 30);
		NUM(O_RATE_EV, rate, 1ull << 32);
		NUM(O_FOLIOS, folios, 1u << 24);
		NUM(O_PAD, lru_pad, 1ull << 29);
		NUM(O_SWAP, swappiness, 200);
		NUM(O_PARENT, parent_every, 1u << 30);
		NUM(O_RATE, rate_limit, 1u << 30);
		NUM(O_UWORK, user_work, 1u << 20);
		NUM(O_RWORK, reclaim_work, 1u << 20);
		NUM(O_ROUNDS, rounds, 1u << 20);
		NUM(O_REVENTS, round_events, 1u << 24);
#undef NUM
		case O_NOPIN: cfg.pin = 0; break;
		case O_REPEAT:
			bad = parse_u64(optarg, 1000, &v) || !v;
			repeat = (unsigned)v;
			break;
		case O_FLUSH:
			bad = parse_u64(optarg, 1000000, &v) || !v;
			cfg.flush_period_ns = v * 1000000ull;
			break;
		case O_TWAIT:
			bad = parse_u64(optarg, 60000000, &v) || !v;
			cfg.throttle_wait_ns = v * 1000ull;
			break;
		case O_HELP: usage(stdout); return 0;
		default: bad = 1; break;
		}
		if (bad) {
			fprintf(stderr, "reclaim: bad option or value\n");
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (scenario) {
		if (!cfg.replay) {
			fprintf(stderr, "reclaim: --scenario needs --replay\n");
			return 2;
		}
		cfg.script = &gap;
		cfg.leaves = 1;
		cfg.depth = 1;
		cfg.producers = 1;
		cfg.reclaimers = 1;
		cfg.folios = 4000;
		cfg.rounds = 1;
		cfg.round_events = 0;
	}
	if (check && !(cfg.replay && run[MODE_LEGACY] && run[MODE_VMSTAT])) {
		fprintf(stderr, "reclaim: --check-equal needs --replay and both modes\n");
		return 2;
	}

	static struct model_result res[NR_MODES], one;
	static struct replay_log logs[NR_MODES];
	unsigned long total_events = cfg.events;
	if (cfg.replay)
		repeat = 1;
	if (repeat > total_events)
		repeat = total_events ? (unsigned)total_events : 1;
	for (unsigned r = 0; r < repeat; r++) {
		/* Split the events; the seed is the same, so is the stream. */
		cfg.events = total_events / repeat + (r < total_events % repeat);
		for (int m = 0; m < NR_MODES; m++) {
			int err;
			if (!run[m])
				continue;
			cfg.mode = m;
			if (cfg.replay) {
				logs[m].printed = !json;
				cfg.on_pass = on_pass;
				cfg.arg = &logs[m];
			}
			err = model_run(&cfg, r ? &one : &res[m]);
			if (err) {
				fprintf(stderr, "reclaim: %s mode: %s\n", mode_name[m], strerror(-err));
				return 1;
			}
			if (r)
				accumulate(&res[m], &one);
		}
	}
	cfg.events = total_events;
	g_repeat = repeat;
	if (json) {
		print_json(&cfg, res, run);
	} else if (cfg.replay) {
		for (int m = 0; m < NR_MODES; m++) {
			if (!run[m])
				continue;
			for (unsigned i = 0; i < res[m].nr_lruvecs; i++) {
				const struct lruvec_report *r = &res[m].lruvec[i];
				printf("%-6s final %s cost %llu %llu fraction %llu %llu / %llu\n",
				       mode_name[m], r->name, (unsigned long long)r->cost[0],
				       (unsigned long long)r->cost[1], (unsigned long long)r->fraction[0],
				       (unsigned long long)r->fraction[1],
				       (unsigned long long)r->denominator);
			}
			printf("%-6s promotion hints %llu candidates %llu promoted %llu rate_limited "
			       "%llu max_per_syscall %llu\n",
			       mode_name[m], (unsigned long long)res[m].promo[NUMA_HINT_PAGE_CACHE],
			       (unsigned long long)res[m].promo[PGPROMOTE_CANDIDATE],
			       (unsigned long long)res[m].promo[PGPROMOTE_SUCCESS],
			       (unsigned long long)res[m].promo[PGPROMOTE_RATELIMITED],
			       (unsigned long long)res[m].promo_max_per_syscall);
		}
	} else {
		print_tables(&cfg, res, run);
	}
	if (check) {
		unsigned long n = logs[0].n < logs[1].n ? logs[0].n : logs[1].n, diff = 0;
		if (n > MAX_PASSES)
			n = MAX_PASSES;
		for (unsigned long i = 0; i < n; i++)
			diff += logs[0].cost[i][0] != logs[1].cost[i][0] ||
				logs[0].cost[i][1] != logs[1].cost[i][1];
		if (logs[0].n != logs[1].n)
			diff++;
		printf("check-equal: %lu of %lu passes differ\n", diff, n);
		return diff ? 1 : 0;
	}
	return 0;
}
