/*
 * bench/bench_shm.c - a shared region (tally/shm.h), compiled as C: the
 * add beside the in-process add and beside nginx's shared atomics, at 1, 2
 * and 4 threads (or TALLY_BENCH_THREADS); the per-process gauge's add; the
 * read side at 100,000 counters written by 64 processes; attach, detach
 * and finding an object.
 *
 *   shm_add/counter_add        tally_counter_add(c, 1): the in-process baseline
 *   shm_add/tally_shm_add      tally_shm_add(c, 1): the same rseq add on the
 *                              region's per-CPU words (a region of the
 *                              default, rseq, discipline)
 *   shm_add/shared_atomic      one word of the region every thread and
 *                              process adds to with a relaxed atomic RMW
 *                              (lock xadd: nginx's stub_status counters)
 *   shm_add/proc_gauge         tally_shm_proc_add(g, 1): the process's own
 *                              row (a relaxed atomic add its threads share)
 *   shm_read/snapshot          tally_shm_snapshot() of 100,000 counters,
 *                              each written by 64 forked processes (checked:
 *                              every counter is 64 x its number)
 *   shm_read/render_prometheus the same region rendered as Prometheus text
 *                              through tally/shm/export.h (what
 *                              tallystat --serve does per scrape)
 *   shm_read/register          tally_shm_export_add() of those 100,000
 *                              objects into a fresh exporter (tallystat's
 *                              start, and a new object's rebuild)
 *   shm_attach/open_ro         tally_shm_open_ro() + tally_shm_close()
 *   shm_attach/open_rw         tally_shm_open() of an existing region +
 *                              tally_shm_close()
 *   shm_object/find            tally_shm_counter() of an existing name
 *
 * Every add benchmark checks its total to the unit. BENCH_SHM_KEEP=1 keeps
 * the 100,000-counter region (its path on stderr) for timing tallystat.
 */
#define _GNU_SOURCE
#include "cbench.h"

#include <tally/counter.h>
#include <tally/shm.h>
#include <tally/shm/export.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#define UNROLL 8
#define BIG 100000u
#define WRITERS 64

static char dir[] = "/tmp/bench-shm.XXXXXX";
static char path[300], big_path[300];
static struct tally_shm *region;

/* The region of the add benchmarks, made once. */
static int region_get(void)
{
	char why[TALLY_SHM_ERROR_MAX];
	if (region)
		return 0;
	if (!path[0]) {
		if (!mkdtemp(dir))
			return -1;
		snprintf(path, sizeof(path), "%s/region", dir);
	}
	if (tally_shm_open(&region, path, NULL, why, sizeof(why))) {
		fprintf(stderr, "bench_shm: %s\n", why);
		return -1;
	}
	return 0;
}

static uint64_t adds(const struct cbench_state *s)
{
	return cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s);
}

/* ---- the adds ----------------------------------------------------------------- */
enum { W_COUNTER, W_SHM, W_ATOMIC, W_PROC };
static struct tally_counter ctr;
static struct tally_shm_counter shc, atomic_c;
static tally_uword *atomic_word;
static struct tally_shm_proc_gauge pg;
static tally_uword before;

static int add_setup(struct cbench_state *s, void *arg)
{
	long w = (long)(intptr_t)arg;
	(void)s;
	if (w == W_COUNTER)
		return tally_counter_init(&ctr, 0, 0);
	if (region_get())
		return -1;
	if (w == W_SHM) {
		if (tally_shm_counter(region, "bench_add", &shc))
			return -1;
		before = tally_shm_sum(&shc);
	} else if (w == W_ATOMIC) {
		if (tally_shm_counter(region, "bench_nginx_style", &atomic_c))
			return -1;
		/* its shared slot: one word for everyone */
		atomic_word = (tally_uword *)(void *)(atomic_c.tally__base +
						       ((size_t)atomic_c.tally__nr
							<< atomic_c.tally__shift));
		before = tally_shm_sum(&atomic_c);
	} else {
		if (tally_shm_proc_gauge(region, "bench_proc", &pg))
			return -1;
		before = (tally_uword)tally_shm_proc_mine(&pg);
	}
	return 0;
}

static void add_teardown(struct cbench_state *s, void *arg)
{
	long w = (long)(intptr_t)arg;
	tally_uword got;
	if (w == W_COUNTER) {
		cbench_check(s, (uint64_t)tally_counter_sum(&ctr) == adds(s), "counter not exact");
		tally_counter_destroy(&ctr);
		return;
	}
	got = w == W_SHM      ? tally_shm_sum(&shc)
	      : w == W_ATOMIC ? tally_shm_sum(&atomic_c)
			      : (tally_uword)tally_shm_proc_mine(&pg);
	cbench_check(s, got - before == (tally_uword)adds(s), "shared total not exact");
}

static void add_body(struct cbench_state *s, void *arg)
{
	long w = (long)(intptr_t)arg;
	uint64_t n, i;
	int j;
	while (cbench_batch(s, &n)) {
		if (w == W_COUNTER) {
			for (i = 0; i < n; i++)
				for (j = 0; j < UNROLL; j++)
					tally_counter_add(&ctr, 1);
		} else if (w == W_SHM) {
			for (i = 0; i < n; i++)
				for (j = 0; j < UNROLL; j++)
					tally_shm_add(&shc, 1);
		} else if (w == W_ATOMIC) {
			for (i = 0; i < n; i++)
				for (j = 0; j < UNROLL; j++)
					__atomic_fetch_add(atomic_word, (tally_uword)1,
							   __ATOMIC_RELAXED);
		} else {
			for (i = 0; i < n; i++)
				for (j = 0; j < UNROLL; j++)
					tally_shm_proc_add(&pg, 1);
		}
	}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* ---- the read side: 100,000 counters, 64 writers ------------------------------- */
static struct tally_shm *big_ro;

static int big_get(void)
{
	struct tally_shm_opts o = {0};
	struct tally_shm *w = NULL;
	char why[TALLY_SHM_ERROR_MAX];
	int p;
	if (big_ro)
		return 0;
	if (region_get())
		return -1;
	snprintf(big_path, sizeof(big_path), "%s/big", dir);
	o.max_objects = BIG + 8;
	o.slot_bytes = (size_t)(BIG + 64) * sizeof(tally_uword);
	if (tally_shm_open(&w, big_path, &o, why, sizeof(why))) {
		fprintf(stderr, "bench_shm: %s\n", why);
		return -1;
	}
	/* The objects, then 64 processes each adding i to counter i. */
	for (unsigned i = 0; i < BIG; i++) {
		struct tally_shm_counter c;
		char nm[32];
		snprintf(nm, sizeof(nm), "c%u", i);
		if (tally_shm_counter(w, nm, &c))
			return -1;
	}
	for (p = 0; p < WRITERS; p++) {
		pid_t pid = fork();
		if (pid == 0) {
			struct tally_shm *mine = NULL;
			if (tally_shm_open(&mine, big_path, NULL, NULL, 0))
				_exit(3);
			for (unsigned i = 0; i < BIG; i++) {
				struct tally_shm_counter c;
				char nm[32];
				snprintf(nm, sizeof(nm), "c%u", i);
				if (tally_shm_counter(mine, nm, &c))
					_exit(3);
				tally_shm_add(&c, (tally_sword)i);
			}
			_exit(0);
		}
		if (pid < 0)
			return -1;
	}
	for (p = 0; p < WRITERS; p++) {
		int st = 0;
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			return -1;
	}
	tally_shm_close(w);
	if (tally_shm_open_ro(&big_ro, big_path, 0, why, sizeof(why)))
		return -1;
	if (getenv("BENCH_SHM_KEEP"))
		fprintf(stderr, "bench_shm: region of %u counters kept: %s\n", BIG, big_path);
	return 0;
}

static int big_exact(const struct tally_shm_snap *s)
{
	if (s->n != BIG)
		return 0;
	for (unsigned i = 0; i < BIG; i++)
		if (s->v[i].raw != (tally_uword)i * WRITERS)
			return 0;
	return 1;
}

static void snapshot_body(struct cbench_state *s, void *arg)
{
	struct tally_shm_snap snap = {0};
	uint64_t n, i;
	(void)arg;
	if (big_get()) {
		cbench_skip(s, "setup");
		while (cbench_batch(s, &n))
			;
		return;
	}
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			if (tally_shm_snapshot(big_ro, &snap))
				cbench_skip(s, "snapshot failed");
	cbench_check(s, big_exact(&snap), "snapshot not exact");
	cbench_counter(s, "slots_written", (double)snap.lim, 0);
	tally_shm_snap_free(&snap);
	cbench_items(s, (int64_t)(cbench_iterations(s) * BIG));
}

static void render_body(struct cbench_state *s, void *arg)
{
	struct tally_export e;
	char *out = NULL;
	size_t len = 0;
	uint64_t n, i;
	int reg = arg != NULL;
	if (big_get()) {
		cbench_skip(s, "setup");
		while (cbench_batch(s, &n))
			;
		return;
	}
	tally_export_init(&e);
	if (!reg && tally_shm_export_add(&e, big_ro, NULL))
		cbench_skip(s, "export_add");
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			if (reg) {
				tally_export_destroy(&e);
				tally_export_init(&e);
				if (tally_shm_export_add(&e, big_ro, NULL))
					cbench_skip(s, "export_add");
				continue;
			}
			free(out);
			out = NULL;
			if (tally_export_render_alloc(&e, TALLY_EXPORT_PROMETHEUS, &out, &len))
				cbench_skip(s, "render");
		}
	if (!reg)
		cbench_check(s, out && strstr(out, "\nc99999_total 6399936\n"), "render not exact");
	cbench_counter(s, "bytes", (double)len, 0);
	free(out);
	tally_export_destroy(&e);
	cbench_items(s, (int64_t)(cbench_iterations(s) * BIG));
}

/* ---- attach, detach, find ------------------------------------------------------ */
static void attach_body(struct cbench_state *s, void *arg)
{
	char why[TALLY_SHM_ERROR_MAX];
	uint64_t n, i;
	int rw = arg != NULL;
	if (region_get()) {
		cbench_skip(s, "setup");
		while (cbench_batch(s, &n))
			;
		return;
	}
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			struct tally_shm *r = NULL;
			if (rw ? tally_shm_open(&r, path, NULL, why, sizeof(why))
			       : tally_shm_open_ro(&r, path, 0, why, sizeof(why)))
				cbench_skip(s, "attach");
			tally_shm_close(r);
		}
	cbench_items(s, (int64_t)cbench_iterations(s));
}

static void find_body(struct cbench_state *s, void *arg)
{
	struct tally_shm_counter c;
	uint64_t n, i;
	(void)arg;
	if (region_get() || tally_shm_counter(region, "bench_find", &c)) {
		cbench_skip(s, "setup");
		while (cbench_batch(s, &n))
			;
		return;
	}
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			if (tally_shm_counter(region, "bench_find", &c))
				cbench_skip(s, "find");
	cbench_items(s, (int64_t)cbench_iterations(s));
}

static void cleanup(void) __attribute__((destructor));
static void cleanup(void)
{
	tally_shm_close(big_ro);
	tally_shm_close(region);
	if (path[0])
		unlink(path);
	if (big_path[0] && !getenv("BENCH_SHM_KEEP")) {
		unlink(big_path);
		rmdir(dir);
	}
}

CBENCH_INIT(register_shm)
{
	static const char *const add_names[] = {"shm_add/counter_add", "shm_add/tally_shm_add",
						"shm_add/shared_atomic", "shm_add/proc_gauge"};
	long w;
	for (w = 0; w < 4; w++)
		cbench_env_threads(cbench_setup(
			cbench_register(add_names[w], add_body, (void *)(intptr_t)w), add_setup,
			add_teardown));
	cbench_register("shm_read/snapshot", snapshot_body, NULL);
	cbench_register("shm_read/render_prometheus", render_body, NULL);
	cbench_register("shm_read/register", render_body, (void *)1);
	cbench_register("shm_attach/open_ro", attach_body, NULL);
	cbench_register("shm_attach/open_rw", attach_body, (void *)1);
	cbench_register("shm_object/find", find_body, NULL);
}
