/*
 * arena.c - the per-CPU arena of pcpu.h (tally/pcpu/arena.h), checked
 * through its private calls:
 *   offsets     exact offsets and alignment of consecutive objects, slot s
 *               at base + (s << shift), shift and slot count as promised
 *   reuse       a freed object's space is handed out again, zeroed in
 *               every slot; a run of freed objects takes a larger one
 *   growth      a full chunk adds a chunk; objects already allocated keep
 *               their addresses and values; an emptied extra chunk goes
 *   big         an object larger than a region gets larger regions
 *   demand-zero one slot written costs one slot's pages (VmRSS), and a
 *               freed object's whole pages go back
 *   threads     threads allocating, writing and freeing at once never get
 *               overlapping objects (ThreadSanitizer checks the locking)
 *   fork        a child keeps the values and can allocate, even while a
 *               thread of the parent was inside the allocator at fork()
 * Plain C: runs under ASan, TSan, -m32 and with 32-bit words.
 */
#define _GNU_SOURCE
#include "harness.h"

/* Fail a new chunk of the cold arena on demand (check_init_failure). */
static int fail_cold;
struct tally__arena;
static int arena_fails(const struct tally__arena *a);
#define TALLY__ARENA_FAIL_HOOK(a) arena_fails(a)

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <tally/counter.h>
#include <tally/pcpu.h>
#include <unistd.h>

#define GRAN TALLY__ARENA_GRANULE
#define REGION ((size_t)1 << TALLY_PCPU_REGION_SHIFT)

static size_t off_of(const struct tally__pcpu *p)
{
	return (size_t)(p->base - p->chunk->map);
}

static unsigned nr_chunks(unsigned kind)
{
	struct tally__arena *a = tally__arena_get(kind);
	struct tally__arena_chunk *c;
	unsigned n = 0;
	pthread_mutex_lock(&a->lock);
	for (c = a->chunks; c; c = c->next)
		n++;
	pthread_mutex_unlock(&a->lock);
	return n;
}

/* Every byte of every slot of p's object (size bytes) is zero. */
static int all_zero(const struct tally__pcpu *p, size_t size)
{
	unsigned s;
	size_t i;
	for (s = 0; s < tally__pcpu_slots(p); s++)
		for (i = 0; i < size; i++)
			if (((const unsigned char *)tally__pcpu_at(p, s, 0))[i])
				return 0;
	return 1;
}

static void fill(const struct tally__pcpu *p, size_t size, unsigned char v)
{
	unsigned s;
	for (s = 0; s < tally__pcpu_slots(p); s++)
		memset(tally__pcpu_at(p, s, 0), v, size);
}

/* ---- offsets, reuse ---------------------------------------------------------- */
static void check_offsets_and_reuse(void)
{
	struct tally__pcpu a, b, c, d, e, f, sh;
	unsigned s;
	/* The cold arena is untouched by anything else in this program: its
	 * first chunk starts empty, so offsets are exact. */
	CHECK_EQ(tally__pcpu_alloc_kind(&a, 8, TALLY__ARENA_COLD), 0);
	CHECK_EQ(tally__pcpu_alloc_kind(&b, 8, TALLY__ARENA_COLD), 0);
	CHECK_EQ(tally__pcpu_alloc_kind(&c, 16, TALLY__ARENA_COLD), 0);
	CHECK_EQ(tally__pcpu_alloc_kind(&d, 24, TALLY__ARENA_COLD), 0);
	CHECK_EQ(tally__pcpu_alloc_kind(&e, 3, TALLY__ARENA_COLD), 0);
	CHECK_EQ(off_of(&a), 0);
	CHECK_EQ(off_of(&b), 8);
	CHECK_EQ(off_of(&c), 16); /* 16 bytes or more: 16-byte aligned */
	CHECK_EQ(off_of(&d), 32);
	CHECK_EQ(off_of(&e), 56); /* 3 bytes take one granule */
	CHECK(a.chunk == e.chunk, "one chunk");
	CHECK_EQ(a.nr, tally_cpu_slots());
	CHECK_EQ(a.shift, TALLY_PCPU_REGION_SHIFT);
	for (s = 0; s < tally__pcpu_slots(&a); s++)
		CHECK((unsigned char *)tally__pcpu_at(&d, s, 4) ==
			      a.chunk->map + ((size_t)s << TALLY_PCPU_REGION_SHIFT) + 32 + 4,
		      "slot %u address", s);
	CHECK(all_zero(&a, 8) && all_zero(&d, 24), "fresh objects are zero");
	fill(&b, 8, 0xb1);
	fill(&c, 16, 0xc1);
	/* b and c freed: their 24 bytes (8..32) take a 24-byte object at 16
	 * (16-aligned; 8 + 24 overlaps nothing but 8 is not 16-aligned) only
	 * if it fits: 16 + 24 = 40 > 32 (d), so it goes after e, at 64. An
	 * 8-byte one goes back to 8. */
	tally__pcpu_free(&b);
	tally__pcpu_free(&c);
	CHECK(b.chunk == NULL && b.base == NULL, "freed struct cleared");
	tally__pcpu_free(&b); /* twice: a no-op */
	CHECK_EQ(tally__pcpu_alloc_kind(&f, 24, TALLY__ARENA_COLD), 0);
	CHECK_EQ(off_of(&f), 64);
	CHECK_EQ(tally__pcpu_alloc_kind(&b, 8, TALLY__ARENA_COLD), 0);
	CHECK_EQ(off_of(&b), 8);
	CHECK_EQ(tally__pcpu_alloc_kind(&c, 16, TALLY__ARENA_COLD), 0);
	CHECK_EQ(off_of(&c), 16);
	CHECK(all_zero(&b, 8) && all_zero(&c, 16), "reused space zeroed in every slot");
	/* The shared arena: one region. */
	CHECK_EQ(tally__pcpu_alloc_kind(&sh, 8, TALLY__ARENA_SHARED), 0);
	CHECK_EQ(sh.nr, 0);
	CHECK_EQ(tally__pcpu_slots(&sh), 1);
	tally__pcpu_free(&sh);
	tally__pcpu_free(&a);
	tally__pcpu_free(&b);
	tally__pcpu_free(&c);
	tally__pcpu_free(&d);
	tally__pcpu_free(&e);
	tally__pcpu_free(&f);
	CHECK_EQ(tally__pcpu_alloc_kind(&a, 40, TALLY__ARENA_COLD), 0);
	CHECK_EQ(off_of(&a), 0); /* everything freed: back to the start */
	tally__pcpu_free(&a);
}

/* ---- growth, big objects --------------------------------------------------- */
static void check_growth(void)
{
	size_t n = REGION / GRAN, i;
	struct tally__pcpu *objs = (struct tally__pcpu *)calloc(n + 1, sizeof(*objs));
	struct tally__pcpu big;
	unsigned char *first;
	unsigned chunks = nr_chunks(TALLY__ARENA_COLD), s;
	CHECK(objs != NULL, "calloc");
	if (!objs)
		return;
	for (i = 0; i < n; i++) {
		CHECK_EQ(tally__pcpu_alloc_kind(&objs[i], GRAN, TALLY__ARENA_COLD), 0);
		*(uint64_t *)tally__pcpu_at(&objs[i], tally__pcpu_slots(&objs[i]) - 1, 0) = i;
	}
	first = objs[0].base;
	CHECK_EQ(nr_chunks(TALLY__ARENA_COLD), chunks); /* exactly one region full */
	CHECK(objs[n - 1].chunk == objs[0].chunk, "one chunk holds a region's worth");
	CHECK_EQ(tally__pcpu_alloc_kind(&objs[n], GRAN, TALLY__ARENA_COLD), 0);
	CHECK_EQ(nr_chunks(TALLY__ARENA_COLD), chunks + 1);
	CHECK(objs[n].chunk != objs[0].chunk, "a new chunk");
	CHECK_EQ(off_of(&objs[n]), 0);
	CHECK(objs[0].base == first, "an allocated object never moves");
	for (i = 0; i < n; i++)
		if (*(uint64_t *)tally__pcpu_at(&objs[i], tally__pcpu_slots(&objs[i]) - 1, 0) != i) {
			CHECK(0, "object %zu lost its value", i);
			break;
		}
	tally__pcpu_free(&objs[n]);
	CHECK_EQ(nr_chunks(TALLY__ARENA_COLD), chunks); /* the emptied new chunk went */
	for (i = 0; i < n; i++)
		tally__pcpu_free(&objs[i]);
	free(objs);
	/* Bigger than a region: its own, larger regions. */
	CHECK_EQ(tally__pcpu_alloc_kind(&big, 3 * REGION, TALLY__ARENA_COLD), 0);
	CHECK_EQ(big.shift, TALLY_PCPU_REGION_SHIFT + 2);
	CHECK_EQ(off_of(&big), 0);
	for (s = 0; s < tally__pcpu_slots(&big); s++) {
		unsigned char *p = (unsigned char *)tally__pcpu_at(&big, s, 0);
		CHECK(p[0] == 0 && p[3 * REGION - 1] == 0, "big object zero");
		p[0] = p[3 * REGION - 1] = 1;
	}
	tally__pcpu_free(&big);
	CHECK_EQ(nr_chunks(TALLY__ARENA_COLD), chunks);
}

/* A small object never lands in a big object's chunk (whose regions are
 * further apart): tally__pcpu_add_small() reaches a small object's slots
 * with the default shift. With a big chunk holding free space and the
 * default chunks full, the next small object must get a chunk of its own
 * (before the fix it went into the big chunk, and a counter's adds there
 * landed outside its slots: a fuzzer run found sums missing adds). */
static void check_small_never_in_big(void)
{
	size_t n = REGION / GRAN + 1, i;
	struct tally__pcpu *objs = (struct tally__pcpu *)calloc(n, sizeof(*objs));
	struct tally__pcpu big;
	CHECK(objs != NULL, "calloc");
	if (!objs)
		return;
	CHECK_EQ(tally__pcpu_alloc_kind(&big, 3 * REGION, TALLY__ARENA_COLD), 0);
	for (i = 0; i < n; i++) {
		CHECK_EQ(tally__pcpu_alloc_kind(&objs[i], GRAN, TALLY__ARENA_COLD), 0);
		CHECK_EQ(objs[i].shift, TALLY_PCPU_REGION_SHIFT);
		CHECK(objs[i].chunk != big.chunk, "object %zu in the big object's chunk", i);
	}
	for (i = 0; i < n; i++)
		tally__pcpu_free(&objs[i]);
	tally__pcpu_free(&big);
	free(objs);
}

/* ---- demand-zero --------------------------------------------------------------- */
#if TALLY__ARENA_MMAP && defined(MADV_DONTNEED) && !TALLY__TSAN
static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}
#endif

static void check_demand_zero(void)
{
#if TALLY__ARENA_MMAP && defined(MADV_DONTNEED) && !TALLY__TSAN
	/* (Not under ThreadSanitizer: its shadow of the written pages counts
	 * too.) */
	const size_t size = 8u << 20; /* 8 MiB per slot */
	struct tally__pcpu p;
	long before, written, freed;
	if (rss_kib() < 0)
		return;
	CHECK_EQ(tally__pcpu_alloc_kind(&p, size, TALLY__ARENA_COLD), 0);
	if (!p.chunk || !p.chunk->mapped)
		return;
	before = rss_kib();
	memset(tally__pcpu_at(&p, 0, 0), 1, size); /* slot 0 only */
	/* Reading another slot maps the zero page: no memory either. */
	CHECK_EQ(*(volatile unsigned char *)tally__pcpu_at(&p, p.nr, size / 2), 0);
	written = rss_kib();
	/* One slot's 8 MiB, not (slots + 1) * 8 MiB: at most 12 MiB more. */
	CHECK(written - before >= 7 * 1024 && written - before <= 12 * 1024,
	      "slot 0 written: RSS +%ld KiB (expected about 8192 of %u slots' %ld)",
	      written - before, tally__pcpu_slots(&p), (long)tally__pcpu_slots(&p) * 8192);
	tally__pcpu_free(&p);
	freed = rss_kib();
	CHECK(written - freed >= 7 * 1024, "free gave back %ld KiB of 8192", written - freed);
#endif
}

/* ---- threads ------------------------------------------------------------------- */
#define THREADS 4
static void *churn(void *arg)
{
	struct harness_rng r = {(uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1};
	struct tally__pcpu live[32];
	size_t sizes[32];
	unsigned char tag = (unsigned char)(uintptr_t)arg;
	int n = 0, i, rounds = 3000;
	while (rounds--) {
		if (n < 32 && (n == 0 || harness_range(&r, 0, 1))) {
			size_t size = (size_t)harness_range(&r, 1, 300);
			unsigned kind = (unsigned)harness_range(&r, 0, 1) ? TALLY__ARENA_HOT
									 : TALLY__ARENA_COLD;
			if (tally__pcpu_alloc_kind(&live[n], size, kind)) {
				CHECK(0, "alloc failed");
				break;
			}
			CHECK(all_zero(&live[n], size), "a fresh object is not zero");
			fill(&live[n], size, tag);
			sizes[n++] = size;
		} else {
			i = (int)harness_range(&r, 0, n - 1);
			{
				/* Nobody else wrote into it: no overlap. */
				unsigned s;
				size_t k;
				for (s = 0; s < tally__pcpu_slots(&live[i]); s++)
					for (k = 0; k < sizes[i]; k++)
						if (((unsigned char *)tally__pcpu_at(&live[i], s, 0))[k] != tag) {
							CHECK(0, "object overwritten (overlap)");
							s = ~0u - 1;
							break;
						}
			}
			tally__pcpu_free(&live[i]);
			live[i] = live[--n];
			sizes[i] = sizes[n];
		}
	}
	while (n)
		tally__pcpu_free(&live[--n]);
	return NULL;
}

static void check_threads(void)
{
	pthread_t t[THREADS];
	int i;
	for (i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1)), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
}

/* ---- fork --------------------------------------------------------------------- */
static int stop_alloc;
static void *alloc_loop(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_alloc, __ATOMIC_RELAXED)) {
		struct tally__pcpu p;
		if (tally__pcpu_alloc_kind(&p, 64, TALLY__ARENA_HOT) == 0)
			tally__pcpu_free(&p);
	}
	return NULL;
}

static void check_fork(void)
{
	struct tally__pcpu p;
	pthread_t t;
	int round, status;
	CHECK_EQ(tally__pcpu_alloc(&p, 16), 0);
	*(uint64_t *)tally__pcpu_at(&p, 0, 0) = 42;
	*(uint64_t *)tally__pcpu_at(&p, p.nr, 8) = 43;
	CHECK_EQ(pthread_create(&t, NULL, alloc_loop, NULL), 0);
	for (round = 0; round < 20; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			struct tally__pcpu q;
			int ok;
			alarm(10); /* a lock inherited held would hang here */
			ok = *(uint64_t *)tally__pcpu_at(&p, 0, 0) == 42 &&
			     *(uint64_t *)tally__pcpu_at(&p, p.nr, 8) == 43;
			ok = ok && tally__pcpu_alloc(&q, 16) == 0 && all_zero(&q, 16);
			if (ok)
				*(uint64_t *)tally__pcpu_at(&p, 0, 0) = 7; /* copy-on-write */
			tally__pcpu_free(&q);
			_exit(ok ? 0 : 1);
		}
		CHECK(pid > 0, "fork");
		if (pid < 0)
			break;
		CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			      WEXITSTATUS(status) == 0,
		      "child %d: status %d", round, status);
	}
	__atomic_store_n(&stop_alloc, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	CHECK_EQ(*(uint64_t *)tally__pcpu_at(&p, 0, 0), 42); /* the child's write stayed there */
	tally__pcpu_free(&p);
}

static int arena_fails(const struct tally__arena *a)
{
	return fail_cold && a == tally__arena_get(TALLY__ARENA_COLD);
}

/* ---- init that runs out of memory -------------------------------------------- *
 * tally_counter_init on a struct full of garbage (a stack variable), when
 * its second allocation (the cold arena's fold bases) finds no memory:
 * -ENOMEM, and nothing freed that it did not allocate. */
static void check_init_failure(void)
{
	struct tally_counter c;
	int i;
	for (i = 0; i < 2; i++) {
		memset(&c, 0xa5, sizeof(c)); /* what an uninitialised struct holds */
		fail_cold = 1;
		CHECK_EQ(tally_counter_init(&c, 5, i ? 64 : 0), -ENOMEM);
		fail_cold = 0;
	}
	CHECK_EQ(tally_counter_init(&c, 5, 0), 0);
	tally_counter_add(&c, 2);
	CHECK_EQ(tally_counter_sum(&c), 7);
	tally_counter_destroy(&c);
}

int main(void)
{
	check_init_failure();
	check_offsets_and_reuse();
	check_growth();
	check_small_never_in_big();
	check_demand_zero();
	check_threads();
	check_fork();
	printf("arena: %u CPU slots, regions of %zu bytes\n", tally_cpu_slots(), REGION);
	return harness_exit("arena");
}
