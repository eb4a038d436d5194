/*
 * test_model: exact checks of the reclaim model (plain C: it also runs
 * under ThreadSanitizer, where Criterion cannot).
 *
 * 1. No decay (a huge LRU): the vmstat mode's read-side costs equal the
 *    legacy mode's producer-side costs at every pass, the whole replay is
 *    identical, and the root's final cost accounts for every event once:
 *    32 * (refaults + pageouts) + (scanned - reclaimed) + rotated.
 * 2. The series' reclaim gap: 100 anon refaults, then 20 file refaults,
 *    then one pass on an LRU of 4000 (limit 1000). legacy decays at every
 *    event and the later file refaults age the anon ones out: 320 : 448.
 *    vmstat folds the whole gap at once and halves both: 800 : 160.
 * 3. With decay the two modes differ (and each replay is deterministic).
 * 4. Promotion ("Promotion of Unmapped Page Cache Folios"): hints =
 *    candidates = promoted, never more than
 *    the rate limit per syscall, the rest rate-limited.
 * 5. Threads, both modes: the same work; legacy takes exactly
 *    (refaults + 2 * passes) * (depth + 1) cost-recording lock
 *    acquisitions, vmstat none; every other site the same count.
 * 6. The demo's summary: per-site change as the median and range over the
 *    repeats where legacy waited, counts added up, exact on made-up runs.
 * 7. The LRU list helpers: lru_of() inverts is_file_lru()/is_active_lru().
 */
#define _GNU_SOURCE
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                     \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                        \
			fputc('\n', stderr);                                                 \
			failures++;                                                          \
		}                                                                            \
	} while (0)

#define CHECK_EQ(a, b)                                                                       \
	CHECK((unsigned long long)(a) == (unsigned long long)(b), "%llu != %llu",            \
	      (unsigned long long)(a), (unsigned long long)(b))

#define MAXP 4096
struct log {
	unsigned long n;
	struct pass_report p[MAXP];
	char target[MAXP][128];
};

static void on_pass(void *arg, const struct pass_report *r)
{
	struct log *l = (struct log *)arg;
	if (l->n < MAXP) {
		l->p[l->n] = *r;
		snprintf(l->target[l->n], sizeof(l->target[0]), "%s", r->target);
		l->p[l->n].target = l->target[l->n];
		l->p[l->n].leaf = NULL;
	}
	l->n++;
}

static struct log logs[2];
static struct model_result res[2];

static void replay(struct model_config *c, int mode, struct log *l, struct model_result *r)
{
	memset(l, 0, sizeof(*l));
	c->mode = mode;
	c->replay = 1;
	c->on_pass = on_pass;
	c->arg = l;
	int err = model_run(c, r);
	CHECK(err == 0, "model_run: %d", err);
}

static unsigned long count_diff(void)
{
	unsigned long diff = logs[0].n != logs[1].n;
	for (unsigned long i = 0; i < logs[0].n && i < logs[1].n && i < MAXP; i++) {
		const struct pass_report *a = &logs[0].p[i], *b = &logs[1].p[i];
		diff += a->cost[0] != b->cost[0] || a->cost[1] != b->cost[1] ||
			a->fraction[0] != b->fraction[0] || a->fraction[1] != b->fraction[1] ||
			a->type != b->type || a->scanned != b->scanned ||
			a->reclaimed != b->reclaimed || strcmp(a->target, b->target);
	}
	return diff;
}

static void test_no_decay(void)
{
	struct model_config c;
	model_default_config(&c);
	c.lru_pad = 1ul << 26; /* limit ~2^24 per leaf: nothing ever halves */
	c.rounds = 60;
	replay(&c, MODE_LEGACY, &logs[0], &res[0]);
	replay(&c, MODE_VMSTAT, &logs[1], &res[1]);
	CHECK_EQ(logs[0].n, 60 * 2);
	CHECK_EQ(count_diff(), 0);
	CHECK(logs[1].p[logs[1].n - 1].cost[0] > 1000 && logs[1].p[logs[1].n - 1].cost[1] > 1000,
	      "costs too small to mean anything");
	for (unsigned i = 0; i < res[0].nr_lruvecs; i++) {
		CHECK_EQ(res[0].lruvec[i].cost[0], res[1].lruvec[i].cost[0]);
		CHECK_EQ(res[0].lruvec[i].cost[1], res[1].lruvec[i].cost[1]);
	}
	/* Every event once, at the root. */
	for (int m = 0; m < 2; m++) {
		const struct model_result *r = &res[m];
		uint64_t want = 32 * (r->refaults + r->pageouts) + (r->scanned - r->reclaimed) + r->rotated;
		CHECK_EQ(r->lruvec[0].cost[0] + r->lruvec[0].cost[1], want);
		CHECK(r->refaults > 0 && r->pageouts > 0 && r->rotated > 0, "a kind of event is missing");
	}
	/* Some passes took the parent's cost. */
	unsigned long parent = 0;
	for (unsigned long i = 0; i < logs[0].n; i++)
		parent += strcmp(logs[0].p[i].target, "root/A") == 0;
	CHECK_EQ(parent, 60 * 2 / 4);
}

static void test_gap(void)
{
	struct model_config c;
	struct model_script gap = {100, 20};
	model_default_config(&c);
	c.script = &gap;
	c.leaves = 1;
	c.depth = 1;
	c.producers = 1;
	c.reclaimers = 1;
	c.folios = 4000;
	c.rounds = 1;
	c.round_events = 0;
	replay(&c, MODE_LEGACY, &logs[0], &res[0]);
	replay(&c, MODE_VMSTAT, &logs[1], &res[1]);
	CHECK_EQ(logs[0].n, 1);
	CHECK_EQ(logs[1].n, 1);
	CHECK(!strcmp(logs[0].p[0].target, "root/0"), "target %s", logs[0].p[0].target);
	/* legacy: anon 100 x 32, halving at every event over 1000 -> 640 : 0;
	 * then 20 file refaults: 320 : 448. */
	CHECK_EQ(logs[0].p[0].cost[0], 320);
	CHECK_EQ(logs[0].p[0].cost[1], 448);
	/* vmstat: 3200 : 640 at once, halved twice: 800 : 160 (5 : 1). */
	CHECK_EQ(logs[1].p[0].cost[0], 800);
	CHECK_EQ(logs[1].p[0].cost[1], 160);
	/* get_scan_count at swappiness 60. */
	CHECK_EQ(logs[0].p[0].fraction[0], 60 * 2305 / 1089);
	CHECK_EQ(logs[0].p[0].fraction[1], 140 * 2305 / 1217);
	CHECK_EQ(logs[1].p[0].fraction[0], 60 * 2881 / 1761);
	CHECK_EQ(logs[1].p[0].fraction[1], 140 * 2881 / 1121);
	/* The same events reached the root's classic cost through the walk. */
	CHECK_EQ(res[0].refaults, 120);
}

static void test_decay_differs(void)
{
	struct model_config c;
	model_default_config(&c);
	replay(&c, MODE_LEGACY, &logs[0], &res[0]);
	replay(&c, MODE_VMSTAT, &logs[1], &res[1]);
	CHECK(count_diff() > 0, "decay should make the modes differ");
	/* Deterministic: the same replay twice. */
	static struct log again;
	static struct model_result r2;
	replay(&c, MODE_VMSTAT, &again, &r2);
	CHECK_EQ(again.n, logs[1].n);
	unsigned long d = 0;
	for (unsigned long i = 0; i < again.n && i < MAXP; i++)
		d += again.p[i].cost[0] != logs[1].p[i].cost[0] ||
		     again.p[i].cost[1] != logs[1].p[i].cost[1] || again.p[i].type != logs[1].p[i].type;
	CHECK_EQ(d, 0);
	/* The last fold leaves every lruvec within lrusize / 4. */
	for (unsigned i = 0; i < res[1].nr_lruvecs; i++)
		CHECK(res[1].lruvec[i].cost[0] + res[1].lruvec[i].cost[1] <=
			      res[1].lruvec[i].lrusize / 4,
		      "%s over lrusize/4", res[1].lruvec[i].name);
}

static void check_promotion(const struct model_result *r, unsigned limit)
{
	CHECK_EQ(r->promo[NUMA_HINT_PAGE_CACHE], r->promo[PGPROMOTE_CANDIDATE]);
	CHECK_EQ(r->promo[PGPROMOTE_CANDIDATE], r->promo[PGPROMOTE_SUCCESS]);
	CHECK(r->promo[PGPROMOTE_RATELIMITED] > 0, "the rate limit never hit");
	CHECK(r->promo_max_per_syscall == limit, "max per syscall %llu, limit %u",
	      (unsigned long long)r->promo_max_per_syscall, limit);
	CHECK(r->promo[NUMA_HINT_PAGE_CACHE] + r->promo[PGPROMOTE_RATELIMITED] <= r->accesses,
	      "more promotion events than reads");
	CHECK(r->promo[PGPROMOTE_SUCCESS] <= (uint64_t)limit * r->promo_syscalls, "budget exceeded");
}

static void test_promotion(void)
{
	struct model_config c;
	model_default_config(&c);
	c.rate_limit = 3;
	replay(&c, MODE_VMSTAT, &logs[0], &res[0]);
	check_promotion(&res[0], 3);
}

static void test_threads(void)
{
	struct model_config c;
	model_default_config(&c);
	c.events = 4000;
	c.user_work = 1;
	c.throttle_wait_ns = 1000000;
	for (int m = 0; m < 2; m++) {
		c.mode = m;
		c.replay = 0;
		c.hold_times = m == MODE_VMSTAT; /* timed in one mode, not the other */
		int err = model_run(&c, &res[m]);
		CHECK(err == 0, "model_run: %d", err);
	}
	/* Hold times: every timed lru_lock site held for some time, the cost
	 * lock (vmstat's prepare_scan_control) and an untimed run not at all. */
	CHECK(res[MODE_VMSTAT].hold_ns[SITE_LRU_ADD_DRAIN] > 0 &&
		      res[MODE_VMSTAT].hold_ns[SITE_ISOLATE] > 0 &&
		      res[MODE_VMSTAT].hold_ns[SITE_PUTBACK] > 0,
	      "hold times missing");
	CHECK_EQ(res[MODE_VMSTAT].hold_ns[SITE_PREPARE_SCAN], 0);
	for (int s = 0; s < NR_SITES; s++)
		CHECK_EQ(res[MODE_LEGACY].hold_ns[s], 0);
	const struct model_result *b = &res[MODE_LEGACY], *a = &res[MODE_VMSTAT];
	CHECK_EQ(b->faults, a->faults);
	CHECK_EQ(b->refaults, a->refaults);
	CHECK_EQ(b->accesses, a->accesses);
	CHECK_EQ(b->drains, a->drains);
	CHECK_EQ(b->faults + b->refaults + b->accesses, 2ull * 3 * 4000);
	CHECK_EQ(b->passes, b->passes_due);
	CHECK_EQ(a->passes, a->passes_due);
	CHECK_EQ(b->passes, a->passes);
	CHECK(b->passes >= (b->faults + b->refaults) / c.alloc_per_pass - 2 * 3 &&
		      b->passes <= (b->faults + b->refaults) / c.alloc_per_pass,
	      "passes %llu for %llu allocations", (unsigned long long)b->passes,
	      (unsigned long long)(b->faults + b->refaults));
	for (int m = 0; m < 2; m++) {
		const struct model_result *r = &res[m];
		uint64_t shrinks = r->passes - r->passes_throttled;
		CHECK_EQ(r->acquisitions[SITE_PREPARE_SCAN], r->passes);
		CHECK_EQ(r->acquisitions[SITE_ISOLATE], shrinks);
		CHECK_EQ(r->acquisitions[SITE_PUTBACK], shrinks);
		CHECK_EQ(r->acquisitions[SITE_SHRINK_ACTIVE], 2 * shrinks);
		CHECK_EQ(r->acquisitions[SITE_LRU_ADD_DRAIN], r->drains);
		check_promotion(r, c.rate_limit);
	}
	CHECK_EQ(b->producer_lock_acquisitions, (b->refaults + 2 * (b->passes - b->passes_throttled)) *
							(c.depth + 1));
	CHECK_EQ(b->acquisitions[SITE_REFAULT_NOTE_COST], b->refaults * (c.depth + 1));
	CHECK_EQ(a->producer_lock_acquisitions, 0);
	CHECK_EQ(a->acquisitions[SITE_NOTE_COST_UNLOCK], 0);
	CHECK_EQ(a->acquisitions[SITE_REFAULT_NOTE_COST], 0);
	CHECK_EQ(a->wait_ns[SITE_NOTE_COST_UNLOCK] + a->wait_ns[SITE_REFAULT_NOTE_COST], 0);
	/* The last fold leaves every lruvec within lrusize / 4 (the legacy
	 * note halves only once, so it may end above). */
	for (unsigned i = 0; i < a->nr_lruvecs; i++)
		CHECK(a->lruvec[i].cost[0] + a->lruvec[i].cost[1] <= a->lruvec[i].lrusize / 4,
		      "%s over lrusize/4", a->lruvec[i].name);
}

static void fake_run(struct model_result *r, int mode, uint64_t drain_ns, uint64_t total_ns)
{
	memset(r, 0, sizeof(*r));
	r->mode = mode;
	r->wait_ns[SITE_LRU_ADD_DRAIN] = drain_ns;
	r->long_wait_ns[SITE_LRU_ADD_DRAIN] = drain_ns / 2;
	r->total_lock_wait_ns = total_ns;
	r->faults = 10;
}

static void test_summary(void)
{
	static struct demo d;
	static struct model_result r;
	struct change c;
	/* legacy/vmstat per repeat: drain 100/50 (-50%), 200/300 (+50%),
	 * 0/10 (no legacy wait: left out), 100/80 (-20%); total 1000/400
	 * (-60%), 1000/250 (-75%), 1000/900 (-10%), 1000/100 (-90%). */
	static const uint64_t drain[4][2] = {{100, 50}, {200, 300}, {0, 10}, {100, 80}};
	static const uint64_t total[4][2] = {{1000, 400}, {1000, 250}, {1000, 900}, {1000, 100}};
	memset(&d, 0, sizeof(d));
	d.repeat = 4;
	d.ran[MODE_LEGACY] = d.ran[MODE_VMSTAT] = 1;
	for (unsigned k = 0; k < 4; k++)
		for (int m = 0; m < 2; m++) {
			fake_run(&r, m, drain[k][m], total[k][m]);
			demo_add(&d, k, &r);
		}
	site_change(&d, SITE_LRU_ADD_DRAIN, &c);
	CHECK_EQ(c.n, 3);
	CHECK(c.median == -20.0 && c.min == -50.0 && c.max == 50.0, "drain %g %g %g", c.median,
	      c.min, c.max);
	site_change(&d, SITE_TOTAL, &c);
	CHECK_EQ(c.n, 4);
	CHECK(c.median == -67.5 && c.min == -90.0 && c.max == -10.0, "total %g %g %g", c.median,
	      c.min, c.max);
	/* 4 repeats: the median's interval is the range (no narrower one
	 * holds 95%) */
	CHECK(c.lo == -90.0 && c.hi == -10.0, "total interval %g %g", c.lo, c.hi);
	/* short waits: total minus the long ones (half of each drain wait) */
	CHECK_EQ(d.wait_ns[1][MODE_VMSTAT][SITE_SHORT], 250 - 150);
	site_change(&d, SITE_NOTE_COST_UNLOCK, &c);
	CHECK_EQ(c.n, 0);
	CHECK_EQ(d.sum[MODE_LEGACY].wait_ns[SITE_LRU_ADD_DRAIN], 400);
	CHECK_EQ(d.sum[MODE_VMSTAT].long_wait_ns[SITE_LRU_ADD_DRAIN], 25 + 150 + 5 + 40);
	CHECK_EQ(d.sum[MODE_VMSTAT].faults, 40);
	/* one mode only: no change to report */
	d.ran[MODE_VMSTAT] = 0;
	site_change(&d, SITE_TOTAL, &c);
	CHECK_EQ(c.n, 0);
	/* 20 repeats, legacy 1000, vmstat 10 (r + 1): changes -99 .. -80; the
	 * median's 95% interval is the 6th and the 15th value (P(X <= 5) =
	 * 2.1% for X ~ Binomial(20, 1/2), P(X <= 6) = 5.8%) */
	memset(&d, 0, sizeof(d));
	d.repeat = 20;
	d.ran[MODE_LEGACY] = d.ran[MODE_VMSTAT] = 1;
	for (unsigned k = 0; k < 20; k++) {
		fake_run(&r, MODE_LEGACY, 0, 1000);
		demo_add(&d, 19 - k, &r);
		fake_run(&r, MODE_VMSTAT, 0, 10 * (k + 1));
		demo_add(&d, 19 - k, &r);
	}
	site_change(&d, SITE_TOTAL, &c);
	CHECK_EQ(c.n, 20);
	CHECK(c.median == -89.5 && c.min == -99.0 && c.max == -80.0, "total20 %g %g %g", c.median,
	      c.min, c.max);
	CHECK(c.lo == -94.0 && c.hi == -85.0, "total20 interval %g %g", c.lo, c.hi);
	/* 40 repeats (the demo's default), vmstat 10 (r + 1): changes -99 ..
	 * -60; the interval is the 14th and the 27th (P(X <= 13) = 1.9%,
	 * P(X <= 14) = 4.0% for X ~ Binomial(40, 1/2)) */
	memset(&d, 0, sizeof(d));
	d.repeat = 40;
	d.ran[MODE_LEGACY] = d.ran[MODE_VMSTAT] = 1;
	for (unsigned k = 0; k < 40; k++) {
		fake_run(&r, MODE_LEGACY, 0, 1000);
		demo_add(&d, k, &r);
		fake_run(&r, MODE_VMSTAT, 0, 10 * (k + 1));
		demo_add(&d, k, &r);
	}
	site_change(&d, SITE_TOTAL, &c);
	CHECK_EQ(c.n, 40);
	CHECK(c.median == -79.5 && c.lo == -86.0 && c.hi == -73.0, "total40 %g [%g, %g]", c.median,
	      c.lo, c.hi);
}

/* The list helpers invert each other, and each list's size item follows
 * the list order. */
static void test_lru_helpers(void)
{
	static const unsigned item[NR_EVICTABLE_LRU] = {NR_INACTIVE_ANON, NR_ACTIVE_ANON,
							 NR_INACTIVE_FILE, NR_ACTIVE_FILE};
	int lru;
	for_each_evictable_lru(lru) {
		enum lru_list l = (enum lru_list)lru;
		CHECK_EQ(lru_of(is_file_lru(l), is_active_lru(l)), l);
		CHECK_EQ(lru_item(l), item[lru]);
	}
	CHECK_EQ(is_file_lru(LRU_INACTIVE_FILE), 1);
	CHECK_EQ(is_file_lru(LRU_ACTIVE_ANON), 0);
	CHECK_EQ(is_active_lru(LRU_ACTIVE_FILE), 1);
	CHECK_EQ(is_active_lru(LRU_INACTIVE_ANON), 0);
	CHECK_EQ(is_file_lru(LRU_UNEVICTABLE) + is_active_lru(LRU_UNEVICTABLE), 0);
}

static void test_bad_config(void)
{
	struct model_config c;
	struct model_result r;
	model_default_config(&c);
	c.swappiness = 201;
	CHECK(model_run(&c, &r) < 0, "swappiness 201 accepted");
	model_default_config(&c);
	c.leaves = 0;
	CHECK(model_run(&c, &r) < 0, "0 leaves accepted");
	CHECK(model_run(NULL, &r) < 0, "NULL config accepted");
}

int main(void)
{
	test_no_decay();
	test_gap();
	test_decay_differs();
	test_promotion();
	test_threads();
	test_bad_config();
	test_summary();
	test_lru_helpers();
	if (failures) {
		fprintf(stderr, "test_model: %d check(s) FAILED\n", failures);
		return 1;
	}
	printf("test_model: all checks passed\n");
	return 0;
}
