/**
 * @file
 * tally/pcpu/arena.h - the per-CPU arena under every primitive (private;
 * include <tally/pcpu.h>): CPU-major regions, objects at one offset in
 * every region, allocation and free under a lock, growth by new chunks.
 *
 * Layout. A chunk is one mapping of R regions, each 2^shift bytes
 * (shift >= TALLY_PCPU_REGION_SHIFT, larger only for an object that does
 * not fit): region r holds slot r's copy of every object of the chunk, and
 * an object takes the same offset in each. So slot s's copy of the object
 * at offset off is at map + (s << shift) + off: the fast path computes it
 * with a shift and an add (no multiply, no table), and one slot's words of
 * many objects are dense: a counter costs its words per slot and nothing
 * more (the kernel's percpu allocator, mm/percpu.c, and librseq's
 * rseq_mempool are laid out the same way).
 *
 * Demand-zero. Chunks are anonymous private mappings (MAP_NORESERVE where
 * the platform has it), so a page that no slot has written costs no memory:
 * a CPU that never touched an object's page costs nothing, whatever the
 * number of slots (reading such a page maps the shared zero page). The
 * kernel populates every possible CPU's unit; librseq's pools are
 * populated per CPU too. Reads and frees of a tracked object visit only
 * the regions below its written bound (tally/pcpu.h), so they never map
 * the zero page into a region no slot wrote. Freed space is zeroed again (whole pages returned
 * to the system with MADV_DONTNEED, partial ones cleared only where
 * non-zero, so an untouched page stays untouched), so every allocation
 * starts zeroed. fork(): the child keeps the mappings, copy-on-write; the
 * arena's locks are taken around fork() (pthread_atfork), so a child can
 * allocate even if another thread of the parent was allocating.
 *
 * Four arenas, by who writes the words, so that no line mixes a slot's
 * hot words with words other CPUs write:
 *   TALLY__ARENA_HOT     CPU slots + the shared slot: words written by the
 *                        slot's own CPU (rseq plain stores, or atomics on
 *                        that CPU's slot). Lines of region r are written
 *                        from CPU r only: no false sharing however densely
 *                        objects pack. The shared slot (region nr) takes
 *                        atomics from many threads; it is a region of its
 *                        own, so it never shares a line with a CPU's words.
 *   TALLY__ARENA_COLD    CPU slots + the shared slot: per-slot words that
 *                        other CPUs write too: a counter's fold bases
 *                        (fold_all moves them from any thread), a group's
 *                        slot (words beside the links and prev snapshots
 *                        that flushes write), the dirty records. A write
 *                        here never evicts a line that a counter's or a
 *                        vector's add needs.
 *   TALLY__ARENA_NODES   CPU slots + the shared slot: a counter tree's
 *                        node words (tally/counter/tree.h), node k of a
 *                        level in region k (the first slot it covers),
 *                        written with atomics by the CPUs of its span when
 *                        they carry: lines of region r take writes from
 *                        the CPUs of its nodes' spans only, and a region no
 *                        CPU carried into costs no page.
 *   TALLY__ARENA_SHARED  one region: words every CPU writes with atomics
 *                        (a counter's shared count), packed among
 *                        themselves, away from the heap and from per-CPU
 *                        words.
 *
 * A vector keeps each item's fold base beside its word (16 bytes per
 * item and slot, in the hot arena): the update that folds is on the
 * slot's CPU, and only tally_vec_fold() (refresh_cpu_vm_stats(), an
 * explicit, rare call) moves other CPUs' bases, one line transfer per
 * line it folds.
 *
 * Allocation: first fit in a per-chunk bitmap of 8-byte granules (objects
 * of 16 bytes or more 16-byte aligned), under the arena's lock; a chunk is
 * added when none fits, and an allocated object never moves. Free clears
 * the bits and zeroes the object in every region its owner may have
 * written (below the object's written bound, tally/pcpu.h, and the shared
 * slot's: never reading a region no slot wrote); an empty chunk other
 * than the arena's first is unmapped.
 *
 * Each translation unit has its own four arenas (a header-only library has
 * no process-wide storage of its own), created on first use and kept for
 * the life of the process; an object remembers its chunk and its chunk its
 * arena, so a destroy in another unit frees into the right one. The arena
 * state is heap memory, never a unit's static data, so it survives a
 * dlclose() of the unit that made it.
 */
#ifndef TALLY_PCPU_ARENA_H
#define TALLY_PCPU_ARENA_H

#if !defined(TALLY__PCPU_INSIDE)
#  error "tally/pcpu/arena.h is private: include <tally/pcpu.h>"
#endif

/* How chunks are mapped: anonymous private memory where the platform
 * names it (strict ISO C hides MAP_ANONYMOUS in glibc and musl: the Linux
 * ABI's value), else aligned heap memory, zeroed (no demand-zero). */
#if defined(__unix__) || defined(__APPLE__)
#  if defined(MAP_ANONYMOUS)
#    define TALLY__MAP_ANON MAP_ANONYMOUS
#  elif defined(MAP_ANON)
#    define TALLY__MAP_ANON MAP_ANON
#  elif defined(__linux__)
#    if defined(__MAP_ANONYMOUS)
#      define TALLY__MAP_ANON __MAP_ANONYMOUS
#    elif defined(__mips__)
#      define TALLY__MAP_ANON 0x800
#    elif defined(__alpha__) || defined(__hppa__)
#      define TALLY__MAP_ANON 0x10
#    else
#      define TALLY__MAP_ANON 0x20
#    endif
#  endif
#endif
#if defined(TALLY__MAP_ANON)
#  define TALLY__ARENA_MMAP 1
#  if defined(MAP_NORESERVE)
#    define TALLY__MAP_NORESERVE MAP_NORESERVE
#  else
#    define TALLY__MAP_NORESERVE 0
#  endif
#else
#  define TALLY__ARENA_MMAP 0
#endif

enum {
	TALLY__ARENA_HOT,
	TALLY__ARENA_COLD,
	TALLY__ARENA_NODES,
	TALLY__ARENA_SHARED,
	TALLY__ARENA_KINDS
};

/* Allocation unit and the alignment of objects of 16 bytes or more. */
#define TALLY__ARENA_GRANULE 8u

struct tally__arena;

/* One mapping of regions regions of 2^shift bytes. Under the arena lock
 * but for map, shift and arena, which never change. */
struct tally__arena_chunk {
	unsigned char *map; /* region 0; region r at map + (r << shift) */
	struct tally__arena *arena;
	struct tally__arena_chunk *next;
	uint64_t *used;  /* a bit per granule: allocated */
	uint64_t *ends;  /* a bit per granule: the last of an allocation */
	size_t granules; /* per region */
	size_t nr_used;  /* granules allocated */
	size_t hint;     /* no free granule below it */
	unsigned shift;
	int mapped; /* 1: mmap()ed, 0: heap */
};

struct tally__arena {
	pthread_mutex_t lock;
	struct tally__arena_chunk *chunks; /* the first is kept when empty */
	unsigned regions; /* per chunk: CPU slots + 1, or 1 (shared) */
};

/* Tests only: a nonzero TALLY__ARENA_FAIL_HOOK(a) makes a new chunk of
 * arena a fail as an exhausted mmap() and heap would (tests/plain/arena.c). */
#ifndef TALLY__ARENA_FAIL_HOOK
#  define TALLY__ARENA_FAIL_HOOK(a) 0
#endif

/* ---- the translation unit's arenas ---------------------------------------- */

TALLY__INLINE struct tally__arena **tally__arenas_var(void)
{
	static struct tally__arena *arenas; /* [TALLY__ARENA_KINDS], heap */
	return &arenas;
}

static inline void tally__arenas_lock(void)
{
	struct tally__arena *a = __atomic_load_n(tally__arenas_var(), __ATOMIC_ACQUIRE);
	unsigned k;
	for (k = 0; a && k < TALLY__ARENA_KINDS; k++)
		pthread_mutex_lock(&a[k].lock);
}

static inline void tally__arenas_unlock(void)
{
	struct tally__arena *a = __atomic_load_n(tally__arenas_var(), __ATOMIC_ACQUIRE);
	unsigned k;
	for (k = TALLY__ARENA_KINDS; a && k-- > 0;)
		pthread_mutex_unlock(&a[k].lock);
}

/* This unit's arena of kind kind, created on first use (racing creators:
 * one publishes, the others free theirs). NULL only without memory. */
static inline struct tally__arena *tally__arena_get(unsigned kind)
{
	struct tally__arena **var = tally__arenas_var(), *a, *none = NULL;
	unsigned k;
	/* acquire: pairs with the release CAS that published the arenas */
	a = __atomic_load_n(var, __ATOMIC_ACQUIRE);
	if (tally__likely(a != NULL))
		return &a[kind];
	a = (struct tally__arena *)calloc(TALLY__ARENA_KINDS, sizeof(*a));
	if (!a)
		return NULL;
	for (k = 0; k < TALLY__ARENA_KINDS; k++) {
		if (pthread_mutex_init(&a[k].lock, NULL)) {
			while (k-- > 0)
				pthread_mutex_destroy(&a[k].lock);
			free(a);
			return NULL;
		}
		a[k].regions = k == TALLY__ARENA_SHARED ? 1u : tally__nr_cpu_slots() + 1u;
	}
	if (!__atomic_compare_exchange_n(var, &none, a, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		for (k = 0; k < TALLY__ARENA_KINDS; k++)
			pthread_mutex_destroy(&a[k].lock);
		free(a);
		return &none[kind];
	}
	/* A child of fork() must not inherit a lock held by a thread that
	 * is not copied: hold every lock across fork(). Best effort (the
	 * registration can only fail for want of memory). */
	(void)pthread_atfork(tally__arenas_lock, tally__arenas_unlock, tally__arenas_unlock);
	return &a[kind];
}

/* ---- chunks (arena lock) ---------------------------------------------------- */

static inline size_t tally__arena_page(void)
{
#if defined(_SC_PAGESIZE)
	long p = sysconf(_SC_PAGESIZE);
	if (p > 0)
		return (size_t)p;
#endif
	return 4096;
}

static inline int tally__arena_bit(const uint64_t *map, size_t i)
{
	return (int)((map[i / 64] >> (i % 64)) & 1u);
}

static inline void tally__arena_set_bits(uint64_t *map, size_t i, size_t n, int on)
{
	for (; n; n--, i++) {
		if (on)
			map[i / 64] |= (uint64_t)1 << (i % 64);
		else
			map[i / 64] &= ~((uint64_t)1 << (i % 64));
	}
}

/* A new chunk whose regions hold at least bytes; NULL without memory. */
static inline struct tally__arena_chunk *tally__arena_chunk_new(struct tally__arena *a,
								  size_t bytes)
{
	struct tally__arena_chunk *c;
	unsigned shift = TALLY_PCPU_REGION_SHIFT;
	size_t page = tally__arena_page(), region, total, words;
	/* Exactly TALLY_PCPU_REGION_SHIFT for every object that fits it
	 * (tally__pcpu_add_small() relies on it), whatever the page size. */
	while (((size_t)1 << shift) < bytes) {
		if (shift + 2u >= 8u * sizeof(size_t))
			return NULL;
		shift++;
	}
	region = (size_t)1 << shift;
	if (a->regions > ((size_t)-1 >> shift) || TALLY__ARENA_FAIL_HOOK(a))
		return NULL;
	total = ((size_t)a->regions << shift) + page - 1;
	if (total < page)
		return NULL;
	total = total / page * page;
	words = (region / TALLY__ARENA_GRANULE + 63) / 64;
	c = (struct tally__arena_chunk *)calloc(1, sizeof(*c) + 2 * words * sizeof(uint64_t));
	if (!c)
		return NULL;
	c->used = (uint64_t *)(void *)(c + 1);
	c->ends = c->used + words;
	c->granules = region / TALLY__ARENA_GRANULE;
	c->shift = shift;
	c->arena = a;
#if TALLY__ARENA_MMAP
	{
		void *m = mmap(NULL, total, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | TALLY__MAP_ANON | TALLY__MAP_NORESERVE, -1, 0);
		if (m != MAP_FAILED) {
			c->map = (unsigned char *)m;
			c->mapped = 1;
		}
	}
#endif
	if (!c->map) {
		/* C11 aligned_alloc: total is a multiple of the page size. */
		c->map = (unsigned char *)aligned_alloc(page, total);
		if (!c->map) {
			free(c);
			return NULL;
		}
		memset(c->map, 0, total);
	}
	c->next = a->chunks;
	a->chunks = c;
	return c;
}

/* The bytes of c's mapping: its regions, rounded up to a page. */
static inline size_t tally__arena_map_bytes(const struct tally__arena *a,
					    const struct tally__arena_chunk *c)
{
	size_t page = tally__arena_page();
	return (((size_t)a->regions << c->shift) + page - 1) / page * page;
}

static inline void tally__arena_chunk_delete(struct tally__arena *a, struct tally__arena_chunk *c)
{
	struct tally__arena_chunk **pp = &a->chunks;
	while (*pp != c)
		pp = &(*pp)->next;
	*pp = c->next;
#if TALLY__ARENA_MMAP
	if (c->mapped)
		munmap(c->map, tally__arena_map_bytes(a, c));
	else
#endif
		free(c->map);
	free(c);
}

/* First fit: the first run of n free granules at a multiple of align at
 * or after the hint, or (size_t)-1. */
static inline size_t tally__arena_find(const struct tally__arena_chunk *c, size_t n, size_t align)
{
	size_t i = (c->hint + align - 1) / align * align;
	while (i + n <= c->granules) {
		size_t j = i;
		if (c->used[j / 64] == ~(uint64_t)0) { /* a full word: skip it */
			i = (j / 64 + 1) * 64;
			continue;
		}
		while (j < i + n && !tally__arena_bit(c->used, j))
			j++;
		if (j == i + n)
			return i;
		i = (j + align) / align * align;
	}
	return (size_t)-1;
}

/* Clear len bytes at p where any is set (reading an untouched page of a
 * mapping maps the zero page: it stays free). */
static inline void tally__arena_clear(unsigned char *p, size_t len)
{
	size_t i;
	for (i = 0; i < len; i++)
		if (p[i]) {
			memset(p + i, 0, len - i);
			return;
		}
}

/* Zero len bytes at p: the whole pages of a mapped chunk go back to the
 * system (MADV_DONTNEED: zero-filled on the next touch), the rest is
 * cleared where set. */
static inline void tally__arena_zero(const struct tally__arena_chunk *c, unsigned char *p,
				     size_t len)
{
#if TALLY__ARENA_MMAP && defined(MADV_DONTNEED)
	if (c->mapped) {
		size_t page = tally__arena_page();
		uintptr_t b = (uintptr_t)p, e = b + len;
		uintptr_t lo = (b + page - 1) / page * page, hi = e / page * page;
		if (lo < hi && madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0) {
			tally__arena_clear(p, lo - b);
			tally__arena_clear((unsigned char *)hi, e - hi);
			return;
		}
	}
#else
	(void)c;
#endif
	tally__arena_clear(p, len);
}

/* ---- allocation and free ----------------------------------------------------- */

/*
 * Allocate size bytes (> 0) in every region of an arena of kind kind: the
 * chunk and offset into *chunk and *off. Zeroed. 0 or -ENOMEM. Takes the
 * arena lock.
 */
static inline int tally__arena_alloc(unsigned kind, size_t size, struct tally__arena_chunk **chunk,
				     size_t *off)
{
	struct tally__arena *a = tally__arena_get(kind);
	struct tally__arena_chunk *c;
	size_t n, align, i = (size_t)-1;
	if (!a || size > ((size_t)-1 >> 2))
		return -ENOMEM;
	n = (size + TALLY__ARENA_GRANULE - 1) / TALLY__ARENA_GRANULE;
	align = size >= 2 * TALLY__ARENA_GRANULE ? 2u : 1u;
	pthread_mutex_lock(&a->lock);
	for (c = a->chunks; c; c = c->next) {
		/* An object that fits a default region goes only where regions
		 * are exactly that far apart: tally__pcpu_add_small() reaches
		 * its slots with the constant shift, not the chunk's. */
		if (size <= ((size_t)1 << TALLY_PCPU_REGION_SHIFT) &&
		    c->shift != TALLY_PCPU_REGION_SHIFT)
			continue;
		if (c->granules - c->nr_used >= n && (i = tally__arena_find(c, n, align)) != (size_t)-1)
			break;
	}
	if (!c) {
		c = tally__arena_chunk_new(a, n * TALLY__ARENA_GRANULE);
		if (c)
			i = tally__arena_find(c, n, align);
	}
	if (!c || i == (size_t)-1) {
		pthread_mutex_unlock(&a->lock);
		return -ENOMEM;
	}
	tally__arena_set_bits(c->used, i, n, 1);
	tally__arena_set_bits(c->ends, i + n - 1, 1, 1);
	c->nr_used += n;
	if (i == c->hint)
		while (c->hint < c->granules && tally__arena_bit(c->used, c->hint))
			c->hint++;
	pthread_mutex_unlock(&a->lock);
	*chunk = c;
	*off = i * TALLY__ARENA_GRANULE;
	return 0;
}

/* Free the allocation at off of chunk c: zero it in the regions below
 * lim (the object's written bound, tally/pcpu.h: no region at or above it
 * was written) and in the last (the shared slot's), and unmap c if it is
 * empty and not its arena's first. Takes the lock. Regions are
 * 2^c->shift apart: an object larger than a default region is in a chunk
 * of larger ones. */
static inline void tally__arena_free(struct tally__arena_chunk *c, size_t off, unsigned lim)
{
	struct tally__arena *a = c->arena;
	size_t i = off / TALLY__ARENA_GRANULE, n = 1;
	unsigned r, last = a->regions - 1u;
	pthread_mutex_lock(&a->lock);
	while (!tally__arena_bit(c->ends, i + n - 1))
		n++;
#if TALLY_DEBUG
	/* Nothing was written above the bound (a writer that skipped
	 * tally__pcpu_raise() would leave a dirty object to the next owner).
	 * Debug builds read every region here: no longer what was written. */
	{
		unsigned char dirty = 0;
		for (r = lim; r < last; r++) {
			const unsigned char *q = c->map + ((size_t)r << c->shift) + off;
			size_t k;
			for (k = 0; k < n * TALLY__ARENA_GRANULE; k++)
				dirty |= q[k];
		}
		assert(!dirty && "tally: a slot above the written bound was written");
		(void)dirty;
	}
#endif
	for (r = lim ? 0u : last; r <= last; r = r + 1u < lim ? r + 1u : r < last ? last : last + 1u)
		tally__arena_zero(c, c->map + ((size_t)r << c->shift) + off,
				  n * TALLY__ARENA_GRANULE);
	tally__arena_set_bits(c->used, i, n, 0);
	tally__arena_set_bits(c->ends, i + n - 1, 1, 0);
	c->nr_used -= n;
	if (i < c->hint)
		c->hint = i;
	if (!c->nr_used && c->next)
		tally__arena_chunk_delete(a, c);
	pthread_mutex_unlock(&a->lock);
}

#endif /* TALLY_PCPU_ARENA_H */
