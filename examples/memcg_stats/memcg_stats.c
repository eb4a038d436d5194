/*
 * memcg_stats: the experiment behind the 6.6.y backport of "mm: memcg:
 * subtree stats flushing and thresholds" (Yosry Ahmed, 2023; backported by
 * Leon Huang Fu, whose LTP memcontrol02 runs on 256 cores read stale
 * memory.stat values), scaled to a small machine. A tree of
 * groups shaped like a cgroup hierarchy (root, 10 slices, 10 services
 * each, the rest leaves under the services), writer threads charging
 * pages to random leaves, reader threads reading a group's stats after a
 * flush, under two flush policies in one run:
 *
 *   6.6  one global threshold (per-thread counts of |delta| moved into a
 *        global atomic in batches of 64; flush when it exceeds ncpus), the
 *        flush is always of the whole tree, and a reader that finds a flush
 *        in progress skips it and reads at once. The periodic flusher
 *        (every 2 s) skips the same way.
 *   6.8  per-group thresholds (tally_group_flush: the group's own count
 *        exceeds 64 * ncpus), a flush of the read group's subtree only, no
 *        skipping (a reader waits for the flush lock). The periodic flusher
 *        is tally_tree_start_flusher().
 *
 * Writers charge 1..32 pages of a random item to a random leaf, paced at
 * --rate updates per second each (in bursts of about 1 ms; 0: flat out,
 * which on a 2-core machine leaves the readers preempted, lock holders
 * included). Readers run flat out (or pause --interval-us between reads).
 *
 * A read: pick a random leaf; by default first charge an event of --event
 * pages to it (that series' case of "userspace reads stats after an event
 * occurs": a proactive reclaimer or an OOM handler reading after the
 * change it acts on); then read the leaf or its parent (even odds): take
 * the exact values, flush by the policy, read every item.
 *
 *   latency    time of the policy's flush plus the reads of every item.
 *   staleness  sum over items of max(0, exact - read), where exact is the
 *              group's true hierarchical value taken just before the flush:
 *              every thread publishes its own per-group, per-item totals
 *              (release) after each update returns, and the reader sums
 *              them (acquire). Every update counted in exact completed
 *              before the flush began, so a flush that covered the group
 *              reflects it: staleness counts pages that had been charged
 *              before the read began and that the read did not show.
 *
 * Options: --groups N (5000) --writers N (2) --readers N (2) --seconds S
 * per policy (4) --event PAGES (1024; 0: plain reads, no event) --rate
 * UPDATES_PER_S per writer (1000000; 0: flat out) --interval-us US (0)
 * --seed N --json. After each policy the tree is checked exactly against
 * the totals (exit 1 on a mismatch).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tally/tally.h>
#include <tally/rstat.h>

enum { NR_ANON, NR_FILE, PGFAULT, PGSTEAL, NR_ITEMS };
static const char *const item_name[NR_ITEMS] = {"anon", "file", "pgfault", "pgsteal"};

#define MEMCG_CHARGE_BATCH 64
#define MAX_THREADS 64

struct cfg {
	unsigned groups, writers, readers;
	double seconds;
	unsigned long event;
	double rate; /* updates per second per writer; 0: flat out */
	double interval_us; /* a reader's pause between reads; 0: none */
	uint64_t seed;
	int json;
};

/* ---- the tree ---------------------------------------------------------- */

static struct tally_tree *tree;
static struct tally_group **grp; /* by index; 0 is the root */
static unsigned *parent_of;      /* index of the parent; root: itself */
static unsigned *leaves, nr_leaves, nr_groups, depth;
static unsigned ncpus;

/* Per thread, per group, per item: everything that thread added in the
 * group's subtree (hierarchical). Written by its owner with release
 * stores after the update returned; summed by readers with acquire. */
static uint64_t *truth;
static unsigned nr_threads;

static uint64_t *truth_at(unsigned thread, unsigned g)
{
	return truth + ((size_t)thread * nr_groups + g) * NR_ITEMS;
}

static void charge(unsigned thread, unsigned leaf, unsigned item, uint64_t pages)
{
	unsigned g = leaf;
	tally_group_mod(grp[leaf], item, (tally_sword)pages);
	for (;;) {
		uint64_t *t = truth_at(thread, g) + item;
		/* Owner-only: a plain read, a release store for the readers. */
		__atomic_store_n(t, *t + pages, __ATOMIC_RELEASE);
		if (g == 0)
			break;
		g = parent_of[g];
	}
}

static uint64_t exact(unsigned g, unsigned item)
{
	uint64_t sum = 0;
	for (unsigned th = 0; th < nr_threads; th++)
		sum += __atomic_load_n(truth_at(th, g) + item, __ATOMIC_ACQUIRE);
	return sum;
}

static int build_tree(unsigned n)
{
	unsigned l1, l2, next = 1, i;
	tree = tally_tree_create(NR_ITEMS);
	if (!tree)
		return -errno;
	grp = calloc(n, sizeof(*grp));
	parent_of = calloc(n, sizeof(*parent_of));
	leaves = calloc(n, sizeof(*leaves));
	if (!grp || !parent_of || !leaves)
		return -ENOMEM;
	grp[0] = tally_tree_root(tree);
	l1 = n - 1 < 10 ? n - 1 : 10;
	l2 = n - 1 - l1 < 10 * l1 ? n - 1 - l1 : 10 * l1;
	/* slices under the root, services under the slices, leaves under the
	 * services (or under the deepest level there is). */
	for (i = 0; i < l1; i++, next++)
		parent_of[next] = 0;
	for (i = 0; i < l2; i++, next++)
		parent_of[next] = 1 + i % l1;
	for (; next < n; next++)
		parent_of[next] = l2 ? 1 + l1 + (next - 1 - l1 - l2) % l2 : l1 ? 1 + next % l1 : 0;
	for (i = 1; i < n; i++) {
		grp[i] = tally_group_create(grp[parent_of[i]]);
		if (!grp[i])
			return -errno;
	}
	/* Leaves: groups nobody names as parent. */
	{
		char *has_kid = calloc(n, 1);
		if (!has_kid)
			return -ENOMEM;
		for (i = 1; i < n; i++)
			has_kid[parent_of[i]] = 1;
		for (i = 0; i < n; i++)
			if (!has_kid[i])
				leaves[nr_leaves++] = i;
		free(has_kid);
	}
	depth = l2 && n > 1 + l1 + l2 ? 3 : l2 ? 2 : l1 ? 1 : 0;
	nr_groups = n;
	return 0;
}

/* ---- the 6.6 policy: one global threshold, whole tree, skip if busy ------ */

static uint64_t global_updates; /* stats_flush_threshold */
static int flush_ongoing;       /* stats_flush_ongoing */
static unsigned long long skipped_66, flushed_66;

/* memcg_rstat_updated() of 6.6, with a thread's own count as "this CPU". */
static void count_66(uint64_t *mine, uint64_t pages)
{
	uint64_t x = *mine += pages;
	if (x > MEMCG_CHARGE_BATCH) {
		if (__atomic_load_n(&global_updates, __ATOMIC_RELAXED) <= ncpus)
			__atomic_add_fetch(&global_updates, x / MEMCG_CHARGE_BATCH, __ATOMIC_RELAXED);
		*mine = 0;
	}
}

/* do_flush_stats() of 6.6. */
static void do_flush_66(void)
{
	if (__atomic_load_n(&flush_ongoing, __ATOMIC_RELAXED) ||
	    __atomic_exchange_n(&flush_ongoing, 1, __ATOMIC_ACQUIRE)) {
		__atomic_add_fetch(&skipped_66, 1, __ATOMIC_RELAXED);
		return;
	}
	tally_group_flush_force(grp[0]);
	__atomic_store_n(&global_updates, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&flush_ongoing, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&flushed_66, 1, __ATOMIC_RELAXED);
}

/* mem_cgroup_flush_stats() of 6.6: the group is ignored. */
static void flush_66(void)
{
	if (__atomic_load_n(&global_updates, __ATOMIC_RELAXED) > ncpus)
		do_flush_66();
}

/* ---- threads --------------------------------------------------------------- */

enum policy { P66, P68 };
static enum policy policy;
static int stop;

struct rng {
	uint64_t s;
};

static uint64_t next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct vec {
	uint64_t *v;
	size_t n, cap;
};

static int vec_push(struct vec *v, uint64_t x)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 1 << 16;
		uint64_t *p = realloc(v->v, cap * sizeof(*p));
		if (!p)
			return -1;
		v->v = p;
		v->cap = cap;
	}
	v->v[v->n++] = x;
	return 0;
}

struct thread {
	pthread_t tid;
	unsigned id; /* index into truth */
	struct rng rng;
	uint64_t count66; /* 6.6's per-CPU stats_updates */
	unsigned long long ops;
	struct vec lat, stale;
	unsigned long event;
};

static double writer_rate, reader_interval_us;

/* Sleep until the monotonic time due (ns). */
static void sleep_until(uint64_t due)
{
	uint64_t now = now_ns();
	if (due > now) {
		struct timespec ts = {(time_t)((due - now) / 1000000000ull),
				      (long)((due - now) % 1000000000ull)};
		nanosleep(&ts, NULL);
	}
}

static void *writer_main(void *arg)
{
	struct thread *t = arg;
	uint64_t start = now_ns();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (writer_rate > 0) {
			/* Paced in bursts of about 1 ms of updates: sleep while
			 * ahead of rate * elapsed by a burst or more (few
			 * wake-ups, so readers are rarely preempted). */
			uint64_t burst = (uint64_t)(writer_rate / 1000) + 64;
			uint64_t due = start + (uint64_t)((double)t->ops * 1e9 / writer_rate);
			if (due > now_ns() + (uint64_t)(burst * 1e9 / writer_rate)) {
				sleep_until(due);
				continue;
			}
		}
		for (int k = 0; k < 64; k++) {
			uint64_t r = next(&t->rng);
			unsigned leaf = leaves[r % nr_leaves];
			unsigned item = (unsigned)(r >> 32) % NR_ITEMS;
			uint64_t pages = 1 + (r >> 40) % 32;
			charge(t->id, leaf, item, pages);
			if (policy == P66)
				count_66(&t->count66, pages);
		}
		t->ops += 64;
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct thread *t = arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t r = next(&t->rng), want[NR_ITEMS], t0, t1, stale = 0;
		unsigned leaf = leaves[r % nr_leaves];
		unsigned g = (r >> 40) & 1 ? parent_of[leaf] : leaf;
		tally_sword got[NR_ITEMS];
		if (t->event) {
			charge(t->id, leaf, PGSTEAL, t->event);
			if (policy == P66)
				count_66(&t->count66, t->event);
		}
		for (unsigned i = 0; i < NR_ITEMS; i++)
			want[i] = exact(g, i);
		t0 = now_ns();
		if (policy == P66)
			flush_66();
		else
			tally_group_flush(grp[g]);
		for (unsigned i = 0; i < NR_ITEMS; i++)
			got[i] = tally_group_read(grp[g], i);
		t1 = now_ns();
		/* Modulo 2^TALLY_WORD_BITS: a read is a word, the truth 64 bits. */
		for (unsigned i = 0; i < NR_ITEMS; i++) {
			tally_sword lag = (tally_sword)((tally_uword)want[i] - (tally_uword)got[i]);
			if (lag > 0)
				stale += (uint64_t)lag;
		}
		if (vec_push(&t->lat, t1 - t0) || vec_push(&t->stale, stale)) {
			fprintf(stderr, "memcg_stats: out of memory\n");
			exit(2);
		}
		t->ops++;
		if (reader_interval_us > 0)
			sleep_until(t1 + (uint64_t)(reader_interval_us * 1e3));
	}
	return NULL;
}

/* The 6.6 periodic flusher: do_flush_stats() every period, skipping too. */
static pthread_mutex_t p66_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t p66_cond = PTHREAD_COND_INITIALIZER;

static void *periodic_66(void *arg)
{
	uint64_t period = tally_tree_period_ns(tree);
	(void)arg;
	pthread_mutex_lock(&p66_lock);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(period / 1000000000ull);
		ts.tv_nsec += (long)(period % 1000000000ull);
		if (ts.tv_nsec >= 1000000000l) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000l;
		}
		if (pthread_cond_timedwait(&p66_cond, &p66_lock, &ts) == ETIMEDOUT &&
		    !__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
			pthread_mutex_unlock(&p66_lock);
			do_flush_66();
			pthread_mutex_lock(&p66_lock);
		}
	}
	pthread_mutex_unlock(&p66_lock);
	return NULL;
}

/* ---- statistics -------------------------------------------------------------- */

struct result {
	unsigned long long reads, writes, flushes, skipped;
	double lat_us[4]; /* p50, p99, p99.9, max */
	double stale_mean;
	uint64_t stale_p50, stale_p99, stale_max;
	unsigned long long stale_reads;
	int exact_ok;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	size_t i;
	if (!n)
		return 0;
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static void merge(struct vec *all, struct vec *part)
{
	for (size_t i = 0; i < part->n; i++)
		if (vec_push(all, part->v[i]))
			exit(2);
	free(part->v);
	memset(part, 0, sizeof(*part));
}

/* Stop everything, flush all, compare the tree with the totals exactly. */
static int check_exact(void)
{
	int ok = 1;
	tally_group_flush_force(grp[0]);
	for (unsigned g = 0; g < nr_groups; g++)
		for (unsigned i = 0; i < NR_ITEMS; i++)
			/* Modulo 2^TALLY_WORD_BITS: the read is a sign-extended
			 * word, the truth a 64-bit sum (past 2^31 with 32-bit
			 * words they differ in the high bits). */
			if ((tally_uword)tally_group_read(grp[g], i) != (tally_uword)exact(g, i)) {
				if (ok)
					fprintf(stderr,
						"memcg_stats: group %u %s: read %lld, exact %llu\n", g,
						item_name[i], (long long)tally_group_read(grp[g], i),
						(unsigned long long)exact(g, i));
				ok = 0;
			}
	return ok;
}

static void run(const struct cfg *c, enum policy p, struct result *res)
{
	static struct thread th[MAX_THREADS];
	struct vec lat = {0}, stale = {0};
	pthread_t per66;
	unsigned k, n = c->writers + c->readers;
	memset(res, 0, sizeof(*res));
	policy = p;
	stop = 0;
	skipped_66 = flushed_66 = 0;
	global_updates = 0;
	for (k = 0; k < n; k++) {
		memset(&th[k], 0, sizeof(th[k]));
		th[k].id = k;
		th[k].rng.s = c->seed * 1000003u + k * 7919u + (unsigned)p;
		th[k].event = c->event;
	}
	if (p == P66)
		pthread_create(&per66, NULL, periodic_66, NULL);
	else if (tally_tree_start_flusher(tree, 0)) {
		fprintf(stderr, "memcg_stats: cannot start the flusher\n");
		exit(2);
	}
	for (k = 0; k < n; k++)
		pthread_create(&th[k].tid, NULL, k < c->writers ? writer_main : reader_main, &th[k]);
	usleep((useconds_t)(c->seconds * 1e6));
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (k = 0; k < n; k++)
		pthread_join(th[k].tid, NULL);
	if (p == P66) {
		pthread_mutex_lock(&p66_lock);
		pthread_cond_broadcast(&p66_cond);
		pthread_mutex_unlock(&p66_lock);
		pthread_join(per66, NULL);
	} else {
		tally_tree_stop_flusher(tree);
	}
	for (k = 0; k < n; k++) {
		if (k < c->writers)
			res->writes += th[k].ops;
		else
			res->reads += th[k].ops;
		merge(&lat, &th[k].lat);
		merge(&stale, &th[k].stale);
	}
	res->flushes = flushed_66;
	res->skipped = skipped_66;
	qsort(lat.v, lat.n, sizeof(uint64_t), cmp_u64);
	res->lat_us[0] = (double)pct(lat.v, lat.n, 0.50) / 1e3;
	res->lat_us[1] = (double)pct(lat.v, lat.n, 0.99) / 1e3;
	res->lat_us[2] = (double)pct(lat.v, lat.n, 0.999) / 1e3;
	res->lat_us[3] = lat.n ? (double)lat.v[lat.n - 1] / 1e3 : 0;
	{
		double sum = 0;
		for (size_t i = 0; i < stale.n; i++) {
			sum += (double)stale.v[i];
			res->stale_reads += stale.v[i] != 0;
		}
		res->stale_mean = stale.n ? sum / (double)stale.n : 0;
	}
	qsort(stale.v, stale.n, sizeof(uint64_t), cmp_u64);
	res->stale_p50 = pct(stale.v, stale.n, 0.50);
	res->stale_p99 = pct(stale.v, stale.n, 0.99);
	res->stale_max = stale.n ? stale.v[stale.n - 1] : 0;
	res->exact_ok = check_exact();
	free(lat.v);
	free(stale.v);
}

static void usage(void)
{
	fprintf(stderr, "usage: memcg_stats [--groups N] [--writers N] [--readers N] "
			"[--seconds S] [--event PAGES] [--rate UPDATES_PER_S] "
			"[--interval-us US] [--seed N] [--json]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct cfg c = {5000, 2, 2, 4.0, 1024, 1e6, 0, 1, 0};
	struct result res[2];
	const char *name[2] = {"6.6", "6.8"};
	int err;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json")) {
			c.json = 1;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--groups"))
			c.groups = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--writers"))
			c.writers = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--readers"))
			c.readers = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--seconds"))
			c.seconds = atof(v);
		else if (!strcmp(a, "--event"))
			c.event = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--rate"))
			c.rate = atof(v);
		else if (!strcmp(a, "--interval-us"))
			c.interval_us = atof(v);
		else if (!strcmp(a, "--seed"))
			c.seed = strtoull(v, NULL, 0);
		else
			usage();
	}
	if (c.groups < 2 || c.groups > 1000000 || !c.readers || c.writers + c.readers > MAX_THREADS ||
	    c.seconds <= 0 || c.seconds > 3600 || c.event > 1000000 || c.rate < 0 ||
	    c.interval_us < 0 || c.interval_us > 1e6)
		usage();
	writer_rate = c.rate;
	reader_interval_us = c.interval_us;
	nr_threads = c.writers + c.readers;
	if ((double)nr_threads * c.groups * NR_ITEMS * 8 > 1e9) {
		fprintf(stderr, "memcg_stats: too many groups x threads\n");
		return 2;
	}
	truth = calloc((size_t)nr_threads * c.groups * NR_ITEMS, sizeof(*truth));
	if (!truth)
		return 2;
	err = build_tree(c.groups);
	if (err) {
		fprintf(stderr, "memcg_stats: building the tree: %s\n", strerror(-err));
		return 2;
	}
	{
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		ncpus = n > 0 ? (unsigned)n : 1;
	}
	/* Both policies on one tree, one after the other: values carry over,
	 * and so do the totals. */
	run(&c, P66, &res[0]);
	run(&c, P68, &res[1]);

	if (c.json) {
		printf("{\"groups\": %u, \"leaves\": %u, \"depth\": %u, \"cpus\": %u, "
		       "\"writers\": %u, \"readers\": %u, \"seconds\": %g, \"event\": %lu, "
		       "\"rate\": %g, \"interval_us\": %g, "
		       "\"threshold_66\": %u, \"threshold_68\": %llu, \"group_bytes\": %zu,\n"
		       " \"policies\": {",
		       nr_groups, nr_leaves, depth, ncpus, c.writers, c.readers, c.seconds, c.event,
		       c.rate, c.interval_us,
		       MEMCG_CHARGE_BATCH * ncpus,
		       (unsigned long long)tally_tree_flush_threshold(tree),
		       tally_tree_group_bytes(tree));
		for (int p = 0; p < 2; p++) {
			struct result *r = &res[p];
			printf("%s\n  \"%s\": {\"reads\": %llu, \"writer_updates\": %llu, "
			       "\"latency_us\": {\"p50\": %.3f, \"p99\": %.3f, \"p99.9\": %.3f, "
			       "\"max\": %.3f}, \"staleness_pages\": {\"mean\": %.3f, \"p50\": %llu, "
			       "\"p99\": %llu, \"max\": %llu, \"stale_reads\": %llu}, "
			       "\"whole_tree_flushes\": %llu, \"skipped_flushes\": %llu, "
			       "\"exact_after_run\": %s}",
			       p ? "," : "", name[p], r->reads, r->writes, r->lat_us[0], r->lat_us[1],
			       r->lat_us[2], r->lat_us[3], r->stale_mean,
			       (unsigned long long)r->stale_p50, (unsigned long long)r->stale_p99,
			       (unsigned long long)r->stale_max, r->stale_reads, r->flushes,
			       r->skipped, r->exact_ok ? "true" : "false");
		}
		printf("}}\n");
	} else {
		printf("memcg_stats: %u groups (%u leaves, depth %u), %u CPUs, %u writers "
		       "(%g updates/s each, 0: flat out), %u readers (pause %g us), %g s per "
		       "policy, event %lu pages before each read\n",
		       nr_groups, nr_leaves, depth, ncpus, c.writers, c.rate, c.readers,
		       c.interval_us, c.seconds, c.event);
		printf("thresholds: 6.6 global > %u pages since the last flush, 6.8 per group > "
		       "%llu; %zu bytes per group\n",
		       MEMCG_CHARGE_BATCH * ncpus,
		       (unsigned long long)tally_tree_flush_threshold(tree),
		       tally_tree_group_bytes(tree));
		printf("latency: flush + read of %d items; staleness: pages charged before the "
		       "read began that it did not show\n\n",
		       NR_ITEMS);
		printf("policy      reads  writer Mupd |  latency us: p50     p99   p99.9      max |"
		       "  staleness: mean   p99      max  stale reads\n");
		for (int p = 0; p < 2; p++) {
			struct result *r = &res[p];
			printf("%-6s %10llu %12.1f | %15.2f %7.2f %7.2f %8.1f | %16.1f %5llu %8llu "
			       "%6.2f%%\n",
			       name[p], r->reads, (double)r->writes / 1e6, r->lat_us[0], r->lat_us[1],
			       r->lat_us[2], r->lat_us[3], r->stale_mean,
			       (unsigned long long)r->stale_p99, (unsigned long long)r->stale_max,
			       r->reads ? 100.0 * (double)r->stale_reads / (double)r->reads : 0);
		}
		printf("\n6.6: %llu whole-tree flushes, %llu skipped because one was running\n",
		       res[0].flushes, res[0].skipped);
	}
	err = !(res[0].exact_ok && res[1].exact_ok);
	tally_tree_destroy(tree);
	free(truth);
	free(grp);
	free(parent_of);
	free(leaves);
	if (err)
		fprintf(stderr, "memcg_stats: the tree disagrees with the totals\n");
	return err;
}
