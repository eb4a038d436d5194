/*
 * memory.c - what a counter, a vector item, a group and a histogram cost
 * per CPU slot, measured, against the promise: a counter at most 16 bytes
 * per CPU slot (the shared one included) plus a small constant, resident
 * after every CPU has added to it; a group's per-CPU words only where a
 * CPU updated it; a histogram's 8 bytes per bucket only on the CPUs that
 * recorded (the pages their records touched: every bucket, or a server's
 * spread of latencies, exponential with mean 50 us).
 *
 * Every CPU this thread may run on (default mode: pinned to each in turn)
 * or every slot (TALLY_PCPU_MODE 3: one thread per slot) adds to every
 * object. Measured per object:
 *   arena   the arena's resident bytes (mincore() over its chunks: exact,
 *           and blind to sanitizer shadow memory), checked against the
 *           bound
 *   struct  the caller-owned struct (counter)
 *   heap    heap growth (mallinfo2): the group's struct and item arrays, a
 *           vector's globals, the arena's chunk bookkeeping; checked with
 *           the arena for counters (a counter tree's nodes are memory per
 *           counter wherever they live)
 *   rss     VmRSS growth of the process (includes the struct, allocator
 *           and sanitizer overheads: a reading, not checked)
 *   vmdata  VmData growth: address space reserved (the arena's chunks)
 * Built three ways (tests/CMakeLists.txt): this machine's slots, and 64 and
 * 256 slots with TALLY_PCPU_MODE 3, where 64 or 256 threads act as the CPUs.
 * bench/memory.sh runs them in a Release build for bench/RESULTS.md.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <string.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
#  include <malloc.h>
#  define HAVE_MALLINFO2 1
#else
#  define HAVE_MALLINFO2 0
#endif
#include <sys/mman.h>
#include <sys/wait.h>
#include <math.h>
#include <tally/counter.h>
#include <tally/hist.h>
#include <tally/rstat.h>
#include <tally/vec.h>
#include <unistd.h>

#define NCOUNTERS 4096
#define NITEMS 4096
#define NGROUPS 256
#define GROUP_ITEMS 8
#define NHISTS 4
#define NLATENCIES 1024

static struct tally_counter counters[NCOUNTERS];
static struct tally_vec vec;
static struct tally_tree *tree;
static struct tally_group *groups[NGROUPS];
static struct tally_hist hists[NHISTS];
static int64_t latencies[NLATENCIES];

/* Resident bytes of every chunk of this unit's arenas (mincore). Headers
 * without the arena (per-object heap blocks): -1, and the check reads the
 * process's RSS instead. */
#ifndef TALLY_PCPU_REGION_SHIFT
#  define NO_ARENA 1
static size_t arena_resident(void)
{
	return 0;
}
#else
#  define NO_ARENA 0
static size_t arena_resident(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), total = 0;
	unsigned k;
	for (k = 0; k < TALLY__ARENA_KINDS; k++) {
		struct tally__arena *a = tally__arena_get(k);
		struct tally__arena_chunk *c;
		pthread_mutex_lock(&a->lock);
		for (c = a->chunks; c; c = c->next) {
			size_t bytes = tally__arena_map_bytes(a, c), n = bytes / page, i;
			unsigned char *vec_ = (unsigned char *)malloc(n);
			if (vec_ && c->mapped && mincore(c->map, bytes, vec_) == 0) {
				for (i = 0; i < n; i++)
					total += (vec_[i] & 1) ? page : 0;
			} else if (vec_ && !c->mapped) {
				total += bytes; /* heap chunks: all of it */
			}
			free(vec_);
		}
		pthread_mutex_unlock(&a->lock);
	}
	return total;
}
#endif

static long status_kib(const char *key)
{
	char line[256];
	long kib = -1;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && sscanf(line + n, "%ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

struct snap {
	size_t arena, heap;
	long rss, data;
};

/* Heap bytes in use (glibc: mallinfo2; 0 elsewhere). */
static size_t heap_bytes(void)
{
#if HAVE_MALLINFO2
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
#else
	return 0;
#endif
}

static struct snap snap(void)
{
	struct snap s;
	s.arena = arena_resident();
	s.heap = heap_bytes();
	s.rss = status_kib("VmRSS:");
	s.data = status_kib("VmData:");
	return s;
}

/* ---- who adds: every CPU here, or every slot ------------------------------------ */

/* What each CPU adds to a counter: enough to write everything an add can,
 * the worst case (a flat counter's add folds, writing its base; a tree's
 * carries through every node level to the top). */
static tally_sword counter_delta(const struct tally_counter *c)
{
	return tally_counter_batch(c) << (TALLY__TREE_SHIFT * c->tally__tree.levels);
}

enum what { COUNTERS, VEC, GROUPS, HIST_ALL, HIST_SERVER };

static void add_all(enum what w)
{
	int i;
	switch (w) {
	case COUNTERS:
		for (i = 0; i < NCOUNTERS; i++)
			tally_counter_add(&counters[i], counter_delta(&counters[i]));
		break;
	case VEC:
		for (i = 0; i < NITEMS; i++)
			tally_vec_mod(&vec, (unsigned)i, 1);
		break;
	case GROUPS:
		for (i = 0; i < NGROUPS; i++) {
			unsigned k;
			for (k = 0; k < GROUP_ITEMS; k++)
				tally_group_mod(groups[i], k, 1);
		}
		break;
	case HIST_ALL: /* every bucket of the range once */
		for (i = 0; i < NHISTS; i++) {
			unsigned j;
			for (j = 1; j + 1 < tally_hist_buckets(&hists[i]); j++) {
				uint64_t lo, hi;
				tally__hist_pos_range(&hists[i].tally__l, j, &lo, &hi);
				tally_hist_record(&hists[i], (int64_t)lo);
			}
		}
		break;
	case HIST_SERVER:
		for (i = 0; i < NHISTS; i++) {
			unsigned j;
			for (j = 0; j < NLATENCIES; j++)
				tally_hist_record(&hists[i], latencies[j]);
		}
		break;
	}
}

#if TALLY_PCPU_MODE == 3
struct slot_arg {
	unsigned slot;
	enum what w;
};

static void *slot_thread(void *arg)
{
	struct slot_arg *a = (struct slot_arg *)arg;
	tally__thread_slot_set(a->slot);
	add_all(a->w);
	return NULL;
}

/* One thread per slot, a few at a time. Returns the slots touched. */
static unsigned touch(enum what w)
{
	unsigned s, n = tally_cpu_slots();
	for (s = 0; s < n; s += 16) {
		pthread_t t[16];
		struct slot_arg a[16];
		unsigned k, m = n - s < 16 ? n - s : 16;
		for (k = 0; k < m; k++) {
			a[k].slot = s + k;
			a[k].w = w;
			CHECK_EQ(pthread_create(&t[k], NULL, slot_thread, &a[k]), 0);
		}
		for (k = 0; k < m; k++)
			pthread_join(t[k], NULL);
	}
	return n;
}
#else
/* Pinned to each CPU this thread may use in turn. */
static unsigned touch(enum what w)
{
	int cpus[1024], n = harness_allowed_cpus(cpus, 1024), i, done = 0;
	cpu_set_t all;
	sched_getaffinity(0, sizeof(all), &all);
	for (i = 0; i < n; i++)
		if (harness_pin(cpus[i]) == 0) {
			add_all(w);
			done++;
		}
	sched_setaffinity(0, sizeof(all), &all);
	return (unsigned)done;
}
#endif

/* Prints the figures and checks arena + struct per object (+ heap, when
 * with_heap and the arena is measured apart from the RSS) against limit
 * (when > 0). */
static void report(const char *kind, unsigned n, unsigned touched, struct snap a, struct snap b,
		   size_t per_struct, long long bound, double limit, int with_heap)
{
	double arena = NO_ARENA ? (double)(b.rss - a.rss) * 1024.0 / n - (double)per_struct
				: (double)(b.arena - a.arena) / n;
	double heap = ((double)b.heap - (double)a.heap) / n;
	double checked = arena + (double)per_struct + (with_heap && !NO_ARENA ? heap : 0.0);
	printf("memory: slots=%u touched=%u kind=%s n=%u arena_per=%.1f struct_per=%zu "
	       "heap_per=%.1f rss_per=%.1f vmdata_per=%.1f bound=%lld limit=%.0f\n",
	       tally_cpu_slots(), touched, kind, n, arena, per_struct, heap,
	       (double)(b.rss - a.rss) * 1024.0 / n, (double)(b.data - a.data) * 1024.0 / n, bound,
	       limit);
	if (limit > 0)
		CHECK(checked <= limit, "%s: %.1f bytes per object (arena %.1f, struct %zu%s) > %.0f",
		      kind, checked, arena, per_struct, with_heap ? ", heap" : "", limit);
}

/* Each measurement in a child of its own (fork()): every phase starts from
 * untouched arenas (a freed object's check for set bytes maps the zero
 * page, which mincore() counts as resident). */
static void counters_phase(void)
{
	struct snap a, b;
	unsigned touched, i, slots = tally_cpu_slots() + 1u;
	long long bound;
	/* Counters: at most 16 bytes per slot (shared one included) plus a
	 * small constant: the struct and the shared count's word; the heap
	 * too (a tree's nodes), flat or tree (64 slots and more). */
	a = snap();
	for (i = 0; i < NCOUNTERS; i++)
		CHECK_EQ(tally_counter_init(&counters[i], 0, 0), 0);
	touched = touch(COUNTERS);
	b = snap();
	bound = (long long)tally_counter_error_bound(&counters[0]);
	report("counter", NCOUNTERS, touched, a, b, sizeof(struct tally_counter), bound,
	       16.0 * slots + (double)sizeof(struct tally_counter) + 16.0, 1);
	for (i = 0; i < NCOUNTERS; i++) {
		CHECK_EQ(tally_counter_sum(&counters[i]),
			 (tally_sword)touched * counter_delta(&counters[i]));
		tally_counter_destroy(&counters[i]);
	}
}

static void vec_phase(void)
{
	struct snap a, b;
	unsigned touched;
	/* Vector items: 2 words per item and slot touched. */
	a = snap();
	CHECK_EQ(tally_vec_init(&vec, NITEMS, 0), 0);
	touched = touch(VEC);
	b = snap();
	report("vec_item", NITEMS, touched, a, b, 0, 0,
	       2.0 * sizeof(tally_uword) * touched + 3.0 * sizeof(tally_uword) + 8.0, 0);
	CHECK_EQ(tally_vec_read_exact(&vec, 7), (tally_sword)touched);
	tally_vec_destroy(&vec);
}

static void groups_phase(void)
{
	struct snap a, b;
	unsigned touched, i;
	/* Groups: per slot that updated, a header and 2 words per item. */
	tree = tally_tree_create(GROUP_ITEMS);
	CHECK(tree != NULL, "tree");
	if (!tree)
		return;
	a = snap();
	for (i = 0; i < NGROUPS; i++)
		groups[i] = tally_group_create(tally_tree_root(tree));
	touched = touch(GROUPS);
	b = snap();
	{
		/* The arena part only, per slot that updated: the groups' slot
		 * copies and one dirty record, each rounded up to pages. */
		double page = (double)sysconf(_SC_PAGESIZE);
		double words = (double)NGROUPS * (sizeof(struct tally__rstat_cpu) +
						  2.0 * sizeof(tally_uword) * GROUP_ITEMS);
		double per_slot = ((double)(size_t)((words + page - 1) / page) + 1.0) * page + page;
		report("group", NGROUPS, touched, a, b, 0, 0, per_slot * touched / NGROUPS, 0);
	}
	tally_group_flush_force(tally_tree_root(tree));
	CHECK_EQ(tally_group_read(tally_tree_root(tree), 3), (tally_sword)(touched * NGROUPS));
	tally_tree_destroy(tree);
}

/* Histograms (default range and precision): per CPU slot that recorded,
 * at most the pages holding its 8 bytes per bucket and the bank records
 * (one page more for where the object starts in its region). */
static void hist_phase(enum what w, const char *kind)
{
	struct snap a, b;
	unsigned touched, i;
	double page = (double)sysconf(_SC_PAGESIZE), bytes;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (i = 0; i < NLATENCIES; i++) {
		double u;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		u = ((double)(x >> 11) + 0.5) / 9007199254740992.0;
		latencies[i] = 1 + (int64_t)(-log(u) * 50000.0);
	}
	a = snap();
	for (i = 0; i < NHISTS; i++)
		CHECK_EQ(tally_hist_init(&hists[i], NULL), 0);
	touched = touch(w);
	b = snap();
	bytes = (double)TALLY__HIST_BUCKETS_OFF + 8.0 * tally_hist_buckets(&hists[0]);
	report(kind, NHISTS, touched, a, b, sizeof(struct tally_hist), 0,
	       ((double)(size_t)((bytes + page - 1) / page) + 1.0) * page * touched +
		       (double)sizeof(struct tally_hist),
	       0);
	for (i = 0; i < NHISTS; i++) {
		struct tally_hist_snap s;
		CHECK_EQ(tally_hist_snap_init(&s, &hists[i]), 0);
		CHECK_EQ(tally_hist_snapshot(&hists[i], &s), 0);
		CHECK_EQ(s.count, (uint64_t)touched * (w == HIST_ALL ? tally_hist_buckets(&hists[i]) - 2u
								    : NLATENCIES));
		tally_hist_snap_destroy(&s);
		tally_hist_destroy(&hists[i]);
	}
}

static void hist_all_phase(void)
{
	hist_phase(HIST_ALL, "hist_all_buckets");
}

static void hist_server_phase(void)
{
	hist_phase(HIST_SERVER, "hist_latencies");
}

#if !NO_ARENA && TALLY_PCPU_MODE == 3
/* Resident bytes of region r of every chunk of this unit's node arena. */
static size_t nodes_resident(unsigned r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), total = 0;
	struct tally__arena *a = tally__arena_get(TALLY__ARENA_NODES);
	struct tally__arena_chunk *c;
	pthread_mutex_lock(&a->lock);
	for (c = a->chunks; c; c = c->next) {
		size_t bytes = (size_t)1 << c->shift, n = bytes / page, i;
		unsigned char *v = (unsigned char *)malloc(n);
		CHECK(c->mapped && v && mincore(c->map + ((size_t)r << c->shift), bytes, v) == 0,
		      "mincore");
		for (i = 0; v && i < n; i++)
			total += (v[i] & 1) ? page : 0;
		free(v);
	}
	pthread_mutex_unlock(&a->lock);
	return total;
}

static void *last_slot_adds(void *arg)
{
	unsigned i;
	(void)arg;
	tally__thread_slot_set(tally_cpu_slots() - 1u);
	for (i = 0; i < NCOUNTERS; i++)
		tally_counter_add(&counters[i], counter_delta(&counters[i]));
	return NULL;
}

/* A tree's nodes cost pages only in the regions of the nodes a CPU
 * carried into: node k of level l in region k. The last slot s carries to
 * the top of every counter: resident node pages are then exactly in the
 * regions of its nodes, s mod n_1 at level 1 (n_1 = ceil(slots / 8)
 * nodes), that mod n_2 at level 2, ... (interleaved: at 256 slots,
 * regions 31 and 3), nowhere else (none before). */
static void nodes_phase(void)
{
	unsigned i, r, l, levels, s = tally_cpu_slots() - 1u;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), most, obj;
	pthread_t t;
	if (tally_cpu_slots() < TALLY_COUNTER_TREE_SLOTS)
		return;
	for (i = 0; i < NCOUNTERS; i++)
		CHECK_EQ(tally_counter_init_tree(&counters[i], 0, 0), 0);
	levels = counters[0].tally__tree.levels;
	for (r = 0; r <= tally_cpu_slots(); r++)
		CHECK_EQ(nodes_resident(r), 0);
	CHECK_EQ(pthread_create(&t, NULL, last_slot_adds, NULL), 0);
	pthread_join(t, NULL);
	/* the pages of NCOUNTERS objects of a word per level (in granules,
	 * 16-byte aligned from 16 bytes), per region */
	obj = (levels * sizeof(tally_uword) + TALLY__ARENA_GRANULE - 1) / TALLY__ARENA_GRANULE *
	      TALLY__ARENA_GRANULE;
	obj = obj >= 2 * TALLY__ARENA_GRANULE ? (obj + 15) / 16 * 16 : obj;
	most = ((size_t)NCOUNTERS * obj + 2 * page - 1) / page * page;
	for (r = 0; r <= tally_cpu_slots(); r++) {
		int carried = 0;
		unsigned k = s, n = tally_cpu_slots();
		for (l = 1; l <= levels; l++) {
			n = (n + 7u) / 8u;
			k %= n;
			carried |= r == k;
		}
		if (carried)
			CHECK(nodes_resident(r) > 0 && nodes_resident(r) <= most,
			      "region %u: %zu bytes resident (at most %zu)", r, nodes_resident(r), most);
		else
			CHECK(nodes_resident(r) == 0, "region %u: %zu bytes resident, no carry", r,
			      nodes_resident(r));
	}
	for (i = 0; i < NCOUNTERS; i++) {
		CHECK_EQ(tally_counter_read(&counters[i]), counter_delta(&counters[i]));
		tally_counter_destroy(&counters[i]);
	}
	printf("memory: tree nodes at %u slots, %u levels: slot %u's carries made node pages "
	       "resident in %u regions only\n",
	       tally_cpu_slots(), levels, s, levels);
}
#endif

int main(void)
{
	void (*phase[])(void) = {
		counters_phase, vec_phase, groups_phase, hist_all_phase, hist_server_phase,
#if !NO_ARENA && TALLY_PCPU_MODE == 3
		nodes_phase,
#endif
	};
	unsigned k;
	for (k = 0; k < sizeof(phase) / sizeof(phase[0]); k++) {
		int status = 0;
		pid_t pid;
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			phase[k]();
			fflush(stdout);
			_exit(harness_exit("memory") ? 1 : 0);
		}
		CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			      WEXITSTATUS(status) == 0,
		      "phase %u failed (status %d)", k, status);
	}
	return harness_exit("memory");
}
