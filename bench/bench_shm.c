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
 *   shm_add/file_per_process   Python prometheus_client's multiprocess mode
 *                              in C: each writer adds to its own value in
 *                              its own mmap'd file (a double, load and
 *                              store: no atomics, nobody else writes it);
 *                              each thread stands for a process, with a
 *                              file of its own
 *   shm_read/snapshot          tally_shm_snapshot() of 100,000 counters,
 *                              each written by 64 forked processes (checked:
 *                              every counter is 64 x its number)
 *   shm_read/render_prometheus the same region rendered as Prometheus text
 *                              through tally/shm/export.h (what
 *                              tallystat --serve does per scrape)
 *   shm_read/register          tally_shm_export_add() of those 100,000
 *                              objects into a fresh exporter (tallystat's
 *                              start, and a new object's rebuild)
 *   shm_read/files_merge       the file-per-process reader of the same
 *                              data: 64 files (one per writer process) of
 *                              100,000 values, each entry its key and a
 *                              double as prometheus_client's mmap files
 *                              hold them; a scrape opens, maps and walks
 *                              every file and merges the values by key into
 *                              one table (prometheus_client's
 *                              MultiProcessCollector; checked exact)
 *   shm_read/files_sum         the least any file-per-process reader does:
 *                              the same 64 files opened, mapped and summed
 *                              position by position (as if every process
 *                              had the same keys in the same order)
 *   shm_attach/open_ro         tally_shm_open_ro() + tally_shm_close()
 *   shm_attach/open_rw         tally_shm_open() of an existing region +
 *                              tally_shm_close()
 *   shm_object/find            tally_shm_counter() of an existing name
 *
 * Histograms (tally/shm/hist.h), each record one of 1,024 latencies drawn
 * from an exponential distribution (mean 50 us, so records spread over
 * about 1,000 buckets as a server's do), tally_hist's default layout:
 *   shm_hist/hist_record       tally_hist_record(h, v): the in-process baseline
 *   shm_hist/tally_shm_hist_record  the same record on a region's words
 *   shm_hist/shared_atomic     nginx-style: one array of buckets and a sum
 *                              in the region for every thread and process,
 *                              the same bucket math, relaxed atomic adds
 *   shm_hist/file_per_process  prometheus_client's multiprocess Histogram
 *                              in C: each writer's own doubles in its own
 *                              mmap'd file, the bucket found by a linear
 *                              scan of the 39 upper bounds the exporter
 *                              would show (its observe()), then the
 *                              bucket's and the sum's double loaded and
 *                              stored (each thread stands for a process)
 *   shm_hist_read/hist_snapshot     tally_hist_snapshot() of an in-process
 *                              histogram of 100,000 records
 *   shm_hist_read/handle_snapshot   tally_shm_hist_snapshot() of the same in
 *                              a region (the writer's cut, steering records)
 *   shm_hist_read/ro_snapshot  tally_shm_snapshot() of a read-only attach of
 *                              that region (tallystat's cut)
 *
 * Every add and record benchmark checks its total to the unit.
 * BENCH_SHM_KEEP=1 keeps the 100,000-counter region (its path on stderr)
 * for timing tallystat.
 */
#define _GNU_SOURCE
#include "cbench.h"

#include <tally/counter.h>
#include <tally/shm.h>
#include <tally/shm/export.h>
#include <tally/shm/hist.h>

#include <dirent.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
	{
		/* room for a few default histograms (36.6 KB per slot each) */
		struct tally_shm_opts o = {0};
		o.slot_bytes = 256 * 1024;
		if (tally_shm_open(&region, path, &o, why, sizeof(why))) {
			fprintf(stderr, "bench_shm: %s\n", why);
			return -1;
		}
	}
	return 0;
}

static uint64_t adds(const struct cbench_state *s)
{
	return cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s);
}

/* ---- a file per process (prometheus_client's multiprocess mode) --------------- */
/*
 * A file of prometheus_client's mmap_dict format: 8 bytes (uint32 bytes
 * used, padding), then entries appended at first use: uint32 key length,
 * the key (its JSON: metric, sample name, labels, help), padded so the
 * values are 8-aligned, then the value and a timestamp (doubles). Only
 * its process writes it; a reader walks every file's entries.
 */
#define PF_MAX_THREADS 64
#define PF_ENTRY_MAX 128

struct pf_file {
	unsigned char *m;
	size_t cap, used;
};

/* Append key's entry with value v; the value's address, or NULL. */
static double *pf_append(struct pf_file *f, const char *key, double v)
{
	uint32_t len = (uint32_t)strlen(key);
	size_t pad = (8 - (4 + len) % 8) % 8, sz = 4 + len + pad + 16;
	double t = 0;
	unsigned char *e;
	if (f->used + sz > f->cap)
		return NULL;
	e = f->m + f->used;
	memcpy(e, &len, 4);
	memcpy(e + 4, key, len);
	memset(e + 4 + len, ' ', pad);
	memcpy(e + 4 + len + pad, &v, 8);
	memcpy(e + 4 + len + pad + 8, &t, 8);
	f->used += sz;
	memcpy(f->m, &(uint32_t){(uint32_t)f->used}, 4);
	return (double *)(void *)(e + 4 + len + pad);
}

/* Create and map the file at p with room for cap bytes. */
static int pf_create(struct pf_file *f, const char *p, size_t cap)
{
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	void *m;
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)cap)) {
		close(fd);
		return -1;
	}
	m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	f->m = (unsigned char *)m;
	f->cap = cap;
	f->used = 8;
	memcpy(f->m, &(uint32_t){8}, 4);
	return 0;
}

static void pf_key(char *k, size_t n, const char *name)
{
	snprintf(k, n, "[\"%s\", \"%s_total\", {}, \"\"]", name, name);
}

/* The writers' files of the add benchmark: one per thread. */
static struct pf_file pf_w[PF_MAX_THREADS];
static volatile double *pf_val[PF_MAX_THREADS];
static double pf_before[PF_MAX_THREADS];
static int pf_nw;

static int pf_setup(int threads)
{
	char p[320], k[PF_ENTRY_MAX];
	if (threads > PF_MAX_THREADS || region_get())
		return -1;
	for (; pf_nw < threads; pf_nw++) {
		snprintf(p, sizeof(p), "%s/counter_%d.db", dir, pf_nw);
		if (pf_create(&pf_w[pf_nw], p, 1 << 20))
			return -1;
		pf_key(k, sizeof(k), "bench_file");
		pf_val[pf_nw] = pf_append(&pf_w[pf_nw], k, 0);
		if (!pf_val[pf_nw])
			return -1;
	}
	for (int t = 0; t < pf_nw; t++)
		pf_before[t] = *pf_val[t];
	return 0;
}

/* What the writers added since pf_setup(). */
static double pf_total(void)
{
	double sum = 0;
	for (int t = 0; t < pf_nw; t++)
		sum += *pf_val[t] - pf_before[t];
	return sum;
}

/* ---- the adds ----------------------------------------------------------------- */
enum { W_COUNTER, W_SHM, W_ATOMIC, W_PROC, W_FILE };
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
	} else if (w == W_PROC) {
		if (tally_shm_proc_gauge(region, "bench_proc", &pg))
			return -1;
		before = (tally_uword)tally_shm_proc_mine(&pg);
	} else {
		return pf_setup(cbench_nthreads(s));
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
	if (w == W_FILE) {
		cbench_check(s, pf_total() == (double)adds(s), "file values not exact");
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
		} else if (w == W_PROC) {
			for (i = 0; i < n; i++)
				for (j = 0; j < UNROLL; j++)
					tally_shm_proc_add(&pg, 1);
		} else {
			/* the writer's own value in its own file */
			volatile double *v = pf_val[cbench_thread_index(s)];
			for (i = 0; i < n; i++)
				for (j = 0; j < UNROLL; j++)
					*v += 1.0;
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

/* ---- the file-per-process reader: 64 files of 100,000 values ------------------- */
static char files_dir[320];
static int files_made;

/* 64 processes, each writing its own file: value i for key c<i>. */
static int files_get(void)
{
	int p;
	if (files_made)
		return files_made > 0 ? 0 : -1;
	files_made = -1;
	if (region_get())
		return -1;
	snprintf(files_dir, sizeof(files_dir), "%s/files", dir);
	if (mkdir(files_dir, 0700))
		return -1;
	for (p = 0; p < WRITERS; p++) {
		pid_t pid = fork();
		if (pid == 0) {
			struct pf_file f;
			char fp[400], k[PF_ENTRY_MAX], nm[32];
			snprintf(fp, sizeof(fp), "%s/counter_%d.db", files_dir, (int)getpid());
			if (pf_create(&f, fp, (size_t)BIG * 64 + 4096))
				_exit(3);
			for (unsigned i = 0; i < BIG; i++) {
				snprintf(nm, sizeof(nm), "c%u", i);
				pf_key(k, sizeof(k), nm);
				if (!pf_append(&f, k, (double)i))
					_exit(3);
			}
			/* the file's length is what it used (as written) */
			if (truncate(fp, (off_t)f.used))
				_exit(3);
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
	files_made = 1;
	return 0;
}

/* The merge's table: key -> sum, built afresh per scrape (open addressing;
 * keys copied, as a collector's dict keeps them). */
#define PF_TAB (1u << 18)
struct pf_slot {
	uint64_t h;
	uint32_t off, len; /* the key in pf_keys; len 0: empty */
	double sum;
};
static struct pf_slot *pf_tab;
static char *pf_keys;
static size_t pf_keys_used, pf_keys_cap;
static unsigned pf_n;

static void pf_merge(const unsigned char *k, uint32_t len, double v)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ k[i]) * 0x100000001b3ull;
	h ^= h >> 33; /* FNV's low bits see only low bits: mix (murmur3's fmix64) */
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	for (uint32_t i = (uint32_t)h & (PF_TAB - 1);; i = (i + 1) & (PF_TAB - 1)) {
		struct pf_slot *sl = &pf_tab[i];
		if (!sl->len) {
			if (pf_keys_used + len > pf_keys_cap) {
				pf_keys_cap = 2 * pf_keys_cap + len;
				pf_keys = (char *)realloc(pf_keys, pf_keys_cap);
				if (!pf_keys)
					abort();
			}
			memcpy(pf_keys + pf_keys_used, k, len);
			sl->h = h;
			sl->off = (uint32_t)pf_keys_used;
			sl->len = len;
			sl->sum = v;
			pf_keys_used += len;
			pf_n++;
			return;
		}
		if (sl->h == h && sl->len == len && !memcmp(pf_keys + sl->off, k, len)) {
			sl->sum += v;
			return;
		}
	}
}

/* One scrape: every file in files_dir opened, mapped, walked; merged by
 * key into pf_tab, or summed by position into sums[] (merge = 0). The
 * number of files read, or -1. */
static int pf_scrape(int merge, double *sums)
{
	DIR *d = opendir(files_dir);
	struct dirent *de;
	int files = 0;
	if (!d)
		return -1;
	if (merge) {
		memset(pf_tab, 0, PF_TAB * sizeof(*pf_tab));
		pf_keys_used = 0;
		pf_n = 0;
	} else {
		memset(sums, 0, BIG * sizeof(*sums));
	}
	while ((de = readdir(d))) {
		char fp[700];
		struct stat sb;
		const unsigned char *m;
		uint32_t used, len;
		size_t pos, k = 0;
		void *mv;
		int fd;
		size_t nl = strlen(de->d_name);
		if (nl < 3 || strcmp(de->d_name + nl - 3, ".db"))
			continue;
		snprintf(fp, sizeof(fp), "%s/%s", files_dir, de->d_name);
		fd = open(fp, O_RDONLY);
		if (fd < 0 || fstat(fd, &sb) || sb.st_size < 8) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		mv = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (mv == MAP_FAILED)
			continue;
		m = (const unsigned char *)mv;
		memcpy(&used, m, 4);
		if (used > (uint64_t)sb.st_size)
			used = (uint32_t)sb.st_size;
		for (pos = 8; pos + 4 <= used; k++) {
			double v;
			size_t pad;
			memcpy(&len, m + pos, 4);
			pad = (8 - (4 + len) % 8) % 8;
			if (pos + 4 + len + pad + 16 > used)
				break;
			memcpy(&v, m + pos + 4 + len + pad, 8);
			if (merge)
				pf_merge(m + pos + 4, len, v);
			else if (k < BIG)
				sums[k] += v;
			pos += 4 + len + pad + 16;
		}
		munmap(mv, (size_t)sb.st_size);
		files++;
	}
	closedir(d);
	return files;
}

/* The merged table holds c<i> = 64 i for every i, and nothing else. */
static int pf_merge_exact(void)
{
	unsigned seen = 0;
	if (pf_n != BIG)
		return 0;
	for (uint32_t i = 0; i < PF_TAB; i++) {
		const struct pf_slot *sl = &pf_tab[i];
		unsigned long c;
		if (!sl->len)
			continue;
		if (sl->len < 3 || memcmp(pf_keys + sl->off, "[\"c", 3))
			return 0;
		c = strtoul(pf_keys + sl->off + 3, NULL, 10);
		if (c >= BIG || sl->sum != (double)c * WRITERS)
			return 0;
		seen++;
	}
	return seen == BIG;
}

static void files_body(struct cbench_state *s, void *arg)
{
	int merge = arg != NULL, files = 0, ok = 1;
	double *sums = NULL;
	uint64_t n, i;
	if (files_get() || !(sums = (double *)malloc(BIG * sizeof(*sums))) ||
	    (!pf_tab && !(pf_tab = (struct pf_slot *)malloc(PF_TAB * sizeof(*pf_tab))))) {
		cbench_skip(s, "setup");
		while (cbench_batch(s, &n))
			;
		free(sums);
		return;
	}
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			if ((files = pf_scrape(merge, sums)) != WRITERS)
				cbench_skip(s, "scrape failed");
	if (merge)
		ok = pf_merge_exact();
	else
		for (unsigned j = 0; j < BIG && ok; j++)
			ok = sums[j] == (double)j * WRITERS;
	cbench_check(s, ok, "file merge not exact");
	cbench_counter(s, "files", (double)files, 0);
	free(sums);
	cbench_items(s, (int64_t)(cbench_iterations(s) * BIG));
}

/* ---- histograms ------------------------------------------------------------------ */
#define NVALS 1024
static int64_t vals[NVALS];
static uint64_t vals_sum;

static void make_vals(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned i;
	if (vals_sum)
		return;
	for (i = 0; i < NVALS; i++) {
		double u;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		u = ((double)(x >> 11) + 0.5) / 9007199254740992.0;
		vals[i] = 1 + (int64_t)(-log(u) * 50000.0);
		vals_sum += (uint64_t)vals[i];
	}
}

/* What every thread's records add up to (each cycles through vals). */
static uint64_t vals_expected(const struct cbench_state *s)
{
	uint64_t per = cbench_iterations(s) * UNROLL, sum = per / NVALS * vals_sum;
	for (uint64_t i = 0; i < per % NVALS; i++)
		sum += (uint64_t)vals[i];
	return sum * (uint64_t)cbench_nthreads(s);
}

enum { HW_HIST, HW_SHM, HW_ATOMIC, HW_FILE };
static struct tally_hist hh;
static struct tally_shm_hist shh;
static struct tally_hist_snap hsnap0;
/* nginx-style: counts[nr] then the sum, in the region's shared slot of an
 * object of that many words (one array for everyone) */
static uint64_t *sh_counts;
static unsigned sh_nr;
static struct tally__hist_layout sh_layout; /* its bucket math: tally_hist's */
/* prometheus_client: per writer [40] bucket doubles, then the sum */
#define PF_LE 39
static uint64_t pf_le[PF_LE];
static volatile double *pf_hist[PF_MAX_THREADS][PF_LE + 2]; /* the buckets, +Inf, the sum */
static double pf_hist_before[PF_MAX_THREADS][PF_LE + 2];

static int hist_setup(struct cbench_state *s, void *arg)
{
	long w = (long)(intptr_t)arg;
	make_vals();
	if (w == HW_HIST)
		return tally_hist_init(&hh, NULL);
	if (region_get())
		return -1;
	if (w == HW_SHM) {
		if (tally_shm_hist(region, "bench_hist", NULL, 1e-9, &shh) ||
		    tally_shm_hist_snap_init(&hsnap0, &shh))
			return -1;
		return tally_shm_hist_snapshot(&shh, &hsnap0, NULL);
	}
	if (w == HW_ATOMIC) {
		struct tally_shm_hist tmp;
		if (sh_counts)
			return 0;
		/* the words: a histogram object's chunk (64 + 8 per bucket
		 * bytes per slot) is room for counts[nr] and a sum */
		if (tally_shm_hist(region, "bench_nginx_hist", NULL, 1e-9, &tmp) ||
		    tally__hist_opts_layout(NULL, &sh_layout))
			return -1;
		sh_nr = sh_layout.nr;
		sh_counts = (uint64_t *)(void *)(tmp.tally__h.tally__pcpu.base +
						 ((size_t)tmp.tally__h.tally__pcpu.nr
						  << tmp.tally__h.tally__pcpu.shift));
		memset(sh_counts, 0, ((size_t)sh_nr + 1) * sizeof(uint64_t));
		return 0;
	}
	/* file per process: the exporter's 1-2-5 grid of the default range */
	if (pf_setup(cbench_nthreads(s)))
		return -1;
	{
		struct tally__hist_layout l;
		unsigned edges[64], i, n;
		if (tally__hist_opts_layout(NULL, &l))
			return -1;
		n = tally__export_hist_grid(&l, edges, 40);
		for (i = 0; i < n && i < PF_LE; i++) {
			uint64_t lo, hi;
			tally__hist_pos_range(&l, edges[i], &lo, &hi);
			pf_le[i] = hi;
		}
	}
	for (int t = 0; t < cbench_nthreads(s); t++)
		for (int b = 0; b < PF_LE + 2; b++) {
			if (!pf_hist[t][b]) { /* an entry per bucket (its le), and the sum */
				char k[PF_ENTRY_MAX], nm[48];
				snprintf(nm, sizeof(nm), "bench_file_hist_b%d", b);
				pf_key(k, sizeof(k), nm);
				pf_hist[t][b] = pf_append(&pf_w[t], k, 0);
				if (!pf_hist[t][b])
					return -1;
			}
			pf_hist_before[t][b] = *pf_hist[t][b];
		}
	return 0;
}

static void hist_teardown(struct cbench_state *s, void *arg)
{
	long w = (long)(intptr_t)arg;
	uint64_t count = 0, sum = 0;
	if (w == HW_HIST || w == HW_SHM) {
		struct tally_hist_snap snap;
		int ok = w == HW_HIST ? !tally_hist_snap_init(&snap, &hh) &&
						!tally_hist_snapshot(&hh, &snap)
				      : !tally_shm_hist_snap_init(&snap, &shh) &&
						!tally_shm_hist_snapshot(&shh, &snap, NULL);
		if (ok) {
			count = snap.count - (w == HW_SHM ? hsnap0.count : 0);
			sum = snap.sum - (w == HW_SHM ? hsnap0.sum : 0);
			tally_hist_snap_destroy(&snap);
		}
		if (w == HW_HIST)
			tally_hist_destroy(&hh);
		else
			tally_hist_snap_destroy(&hsnap0);
	} else if (w == HW_ATOMIC) {
		for (unsigned j = 0; j < sh_nr; j++)
			count += __atomic_exchange_n(&sh_counts[j], 0, __ATOMIC_RELAXED);
		sum = __atomic_exchange_n(&sh_counts[sh_nr], 0, __ATOMIC_RELAXED);
	} else {
		double c = 0, sm = 0;
		for (int t = 0; t < cbench_nthreads(s); t++) {
			for (int b = 0; b < PF_LE + 1; b++)
				c += *pf_hist[t][b] - pf_hist_before[t][b];
			sm += *pf_hist[t][PF_LE + 1] - pf_hist_before[t][PF_LE + 1];
		}
		count = (uint64_t)c;
		sum = (uint64_t)sm;
	}
	cbench_check(s, count == cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s) &&
				sum == vals_expected(s),
		     "histogram not exact");
}

static void hist_body(struct cbench_state *s, void *arg)
{
	long w = (long)(intptr_t)arg;
	uint64_t n, i, k = 0;
	int j;
	while (cbench_batch(s, &n)) {
		if (w == HW_HIST) {
			for (i = 0; i < n; i++)
				for (j = 0; j < UNROLL; j++)
					tally_hist_record(&hh, vals[k++ & (NVALS - 1)]);
		} else if (w == HW_SHM) {
			for (i = 0; i < n; i++)
				for (j = 0; j < UNROLL; j++)
					tally_shm_hist_record(&shh, vals[k++ & (NVALS - 1)]);
		} else if (w == HW_ATOMIC) {
			const struct tally__hist_layout *l = &sh_layout;
			for (i = 0; i < n; i++)
				for (j = 0; j < UNROLL; j++) {
					int64_t v = vals[k++ & (NVALS - 1)];
					__atomic_fetch_add(&sh_counts[tally__hist_pos(l, (uint64_t)v)],
							   1, __ATOMIC_RELAXED);
					__atomic_fetch_add(&sh_counts[sh_nr], (uint64_t)v,
							   __ATOMIC_RELAXED);
				}
		} else {
			volatile double *const *d = pf_hist[cbench_thread_index(s)];
			for (i = 0; i < n; i++)
				for (j = 0; j < UNROLL; j++) {
					int64_t v = vals[k++ & (NVALS - 1)];
					unsigned b = 0;
					while (b < PF_LE && (uint64_t)v > pf_le[b])
						b++;
					*d[b] += 1.0;
					*d[PF_LE + 1] += (double)v;
				}
		}
	}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* The read side: one histogram of 100,000 records, cut. */
static void hist_read_body(struct cbench_state *s, void *arg)
{
	long w = (long)(intptr_t)arg;
	static struct tally_hist ih;
	static struct tally_shm_hist rh;
	static struct tally_shm *ro;
	static int made;
	struct tally_hist_snap snap;
	struct tally_shm_snap ss = {0};
	uint64_t n, i, count = 0;
	char why[TALLY_SHM_ERROR_MAX];
	make_vals();
	if (!made) {
		made = -1;
		if (!region_get() && !tally_hist_init(&ih, NULL) &&
		    !tally_shm_hist(region, "bench_read_hist", NULL, 1e-9, &rh) &&
		    !tally_shm_open_ro(&ro, path, 0, why, sizeof(why))) {
			for (i = 0; i < 100000; i++) {
				tally_hist_record(&ih, vals[i & (NVALS - 1)] * (int64_t)(1 + i % 7));
				tally_shm_hist_record(&rh, vals[i & (NVALS - 1)] * (int64_t)(1 + i % 7));
			}
			made = 1;
		}
	}
	if (made < 0 || (w == 0 ? tally_hist_snap_init(&snap, &ih)
				: tally_shm_hist_snap_init(&snap, &rh))) {
		cbench_skip(s, "setup");
		while (cbench_batch(s, &n))
			;
		return;
	}
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			if (w == 0)
				tally_hist_snapshot(&ih, &snap);
			else if (w == 1)
				tally_shm_hist_snapshot(&rh, &snap, NULL);
			else if (tally_shm_snapshot(ro, &ss))
				cbench_skip(s, "ro snapshot");
		}
	if (w < 2)
		count = snap.count;
	for (i = 0; w == 2 && i < ss.n; i++)
		if (!strcmp(ss.v[i].name, "bench_read_hist"))
			count = ss.v[i].hist->count;
	cbench_check(s, count == 100000, "histogram read not exact");
	tally_hist_snap_destroy(&snap);
	tally_shm_snap_free(&ss);
	cbench_items(s, (int64_t)cbench_iterations(s));
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
	for (int t = 0; t < pf_nw; t++) {
		char p[320];
		munmap(pf_w[t].m, pf_w[t].cap);
		snprintf(p, sizeof(p), "%s/counter_%d.db", dir, t);
		unlink(p);
	}
	if (files_dir[0]) {
		DIR *d = opendir(files_dir);
		struct dirent *de;
		char p[700];
		while (d && (de = readdir(d)))
			if (de->d_name[0] != '.') {
				snprintf(p, sizeof(p), "%s/%s", files_dir, de->d_name);
				unlink(p);
			}
		if (d)
			closedir(d);
		rmdir(files_dir);
	}
	free(pf_tab);
	free(pf_keys);
	if (big_path[0] && !getenv("BENCH_SHM_KEEP"))
		unlink(big_path);
	if (dir[0] && !getenv("BENCH_SHM_KEEP"))
		rmdir(dir);
}

CBENCH_INIT(register_shm)
{
	static const char *const add_names[] = {"shm_add/counter_add", "shm_add/tally_shm_add",
						"shm_add/shared_atomic", "shm_add/proc_gauge",
						"shm_add/file_per_process"};
	long w;
	for (w = 0; w < 5; w++)
		cbench_env_threads(cbench_setup(
			cbench_register(add_names[w], add_body, (void *)(intptr_t)w), add_setup,
			add_teardown));
	cbench_register("shm_read/snapshot", snapshot_body, NULL);
	cbench_register("shm_read/render_prometheus", render_body, NULL);
	cbench_register("shm_read/register", render_body, (void *)1);
	cbench_register("shm_read/files_merge", files_body, (void *)1);
	cbench_register("shm_read/files_sum", files_body, NULL);
	cbench_register("shm_attach/open_ro", attach_body, NULL);
	cbench_register("shm_attach/open_rw", attach_body, (void *)1);
	cbench_register("shm_object/find", find_body, NULL);
	{
		static const char *const hist_names[] = {
			"shm_hist/hist_record", "shm_hist/tally_shm_hist_record",
			"shm_hist/shared_atomic", "shm_hist/file_per_process"};
		for (w = 0; w < 4; w++)
			cbench_env_threads(cbench_setup(
				cbench_register(hist_names[w], hist_body, (void *)(intptr_t)w),
				hist_setup, hist_teardown));
		cbench_register("shm_hist_read/hist_snapshot", hist_read_body, (void *)0);
		cbench_register("shm_hist_read/handle_snapshot", hist_read_body, (void *)1);
		cbench_register("shm_hist_read/ro_snapshot", hist_read_body, (void *)2);
	}
}
