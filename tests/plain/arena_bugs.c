/*
 * arena_bugs.c - two arena mistakes the rest of the suite let through
 * (issue 30), each checked deterministically through the arena's private
 * calls:
 *   big_free    two objects larger than a region (5x and 2x) in one chunk
 *               of larger regions: freeing the first must zero it at its
 *               chunk's own region spacing, in every slot, and leave the
 *               second intact (zeroing at the default spacing would hit
 *               the second's slot-0 copy and leave the first's other
 *               copies dirty);
 *   region_end  a region filled with one-granule objects, frees in the
 *               middle and at the end: an allocation must not run past
 *               the region's end (into the next slot's first object and
 *               past the used bitmap into the end markers).
 * Each scenario works in an arena kind nothing else in this program uses,
 * so its first chunk starts empty and every offset is known.
 * Plain C: runs under ASan, TSan, -m32 and with 32-bit words.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <string.h>
#include <tally/pcpu.h>

#define GRAN TALLY__ARENA_GRANULE
#define REGION ((size_t)1 << TALLY_PCPU_REGION_SHIFT)

static size_t off_of(const struct tally__pcpu *p)
{
	return (size_t)(p->base - p->chunk->map);
}

/* Byte i of slot s's copy of p's object is v, for every i < size and
 * every slot; reports the first mismatch. */
static int all_are(const struct tally__pcpu *p, size_t size, unsigned char v, const char *what)
{
	unsigned s;
	size_t i;
	for (s = 0; s < tally__pcpu_slots(p); s++)
		for (i = 0; i < size; i++) {
			unsigned char b = ((const unsigned char *)tally__pcpu_at(p, s, 0))[i];
			if (b != v) {
				fprintf(stderr, "%s: slot %u byte %zu is 0x%02x, not 0x%02x\n", what,
					s, i, b, v);
				return 0;
			}
		}
	return 1;
}

static void fill(const struct tally__pcpu *p, size_t size, unsigned char v)
{
	unsigned s;
	for (s = 0; s < tally__pcpu_slots(p); s++)
		memset(tally__pcpu_at(p, s, 0), v, size);
}

/* ---- big_free ------------------------------------------------------------------ */
static void check_big_free(void)
{
	const size_t big = 5 * REGION, second = 2 * REGION;
	struct tally__pcpu a, b, c;
	/* 5 regions' worth takes a chunk of regions 8x the default (the
	 * next power of two); the 2x object fits after it in that chunk. */
	CHECK_EQ(tally__pcpu_alloc_kind(&a, big, TALLY__ARENA_COLD), 0);
	CHECK_EQ(tally__pcpu_alloc_kind(&b, second, TALLY__ARENA_COLD), 0);
	CHECK(a.chunk == b.chunk, "both big objects in one chunk");
	CHECK_EQ(a.shift, TALLY_PCPU_REGION_SHIFT + 3);
	CHECK_EQ(off_of(&a), 0);
	CHECK_EQ(off_of(&b), big);
	fill(&a, big, 0xa5);
	fill(&b, second, 0xb6);
	tally__pcpu_free(&a);
	CHECK(all_are(&b, second, 0xb6, "big_free: the second object after the first's free"),
	      "the second object is intact in every slot");
	/* The first's space again: zero in every slot. */
	CHECK_EQ(tally__pcpu_alloc_kind(&c, big, TALLY__ARENA_COLD), 0);
	CHECK(c.chunk == b.chunk && off_of(&c) == 0, "the freed space is reused");
	CHECK(all_are(&c, big, 0, "big_free: the reused object"), "reused space zero in every slot");
	tally__pcpu_free(&c);
	tally__pcpu_free(&b);
}

/* ---- region_end -------------------------------------------------------------- */
/*
 * One scenario: a fresh chunk of kind kind whose region is filled with
 * one-granule objects (the first is first_units granules long), the ones
 * at the granules in freed[] freed, then an allocation of size bytes.
 * It must land wholly inside a region, and leave every other object's
 * bytes, in every slot, as they were.
 */
static void check_region_end_case(unsigned kind, size_t first_units, const size_t *freed,
				  unsigned nr_freed, size_t size)
{
	const size_t granules = REGION / GRAN;
	struct tally__pcpu *objs, x;
	struct tally__arena_chunk *chunk;
	size_t i, n = 0;
	unsigned f, s;
	objs = (struct tally__pcpu *)calloc(granules, sizeof(*objs));
	CHECK(objs != NULL, "calloc");
	if (!objs)
		return;
	/* Fill the region: object k starts at granule k (the first at 0,
	 * first_units long). */
	for (i = 0; i < granules; n++) {
		size_t units = i ? 1 : first_units;
		CHECK_EQ(tally__pcpu_alloc_kind(&objs[i], units * GRAN, kind), 0);
		CHECK_EQ(off_of(&objs[i]), i * GRAN);
		for (s = 0; s < tally__pcpu_slots(&objs[i]); s++)
			memset(tally__pcpu_at(&objs[i], s, 0), (int)(1 + (i + s) % 251), units * GRAN);
		i += units;
	}
	chunk = objs[0].chunk;
	CHECK(objs[granules - 1].chunk == chunk, "one chunk holds the region's objects");
	for (f = 0; f < nr_freed; f++)
		tally__pcpu_free(&objs[freed[f]]);
	CHECK_EQ(tally__pcpu_alloc_kind(&x, size, kind), 0);
	CHECK(x.chunk != chunk || off_of(&x) + size <= REGION,
	      "an allocation of %zu bytes at offset %zu runs past the region's end (%zu)", size,
	      off_of(&x), REGION);
	/* Write it in every slot, then every other live object is intact
	 * (a straddling object's tail is the next slot's first object). */
	fill(&x, size, 0xee);
	for (i = 0; i < granules;) {
		size_t units = i ? 1 : first_units, k;
		int live = 1;
		for (f = 0; f < nr_freed; f++)
			live &= freed[f] != i;
		if (live && (x.chunk != objs[i].chunk || off_of(&objs[i]) != off_of(&x)))
			for (s = 0; s < tally__pcpu_slots(&objs[i]); s++)
				for (k = 0; k < units * GRAN; k++)
					if (((unsigned char *)tally__pcpu_at(&objs[i], s, 0))[k] !=
					    (unsigned char)(1 + (i + s) % 251)) {
						CHECK(0, "object at granule %zu, slot %u, byte %zu overwritten",
						      i, s, k);
						s = ~0u - 1u; /* one report per object */
						break;
					}
		i += units;
	}
	/* The end markers still describe the objects: free and reallocate
	 * the first, whose end bit is granule first_units - 1 (x first: a
	 * chunk added for it goes, and the search starts at the first one). */
	tally__pcpu_free(&x);
	tally__pcpu_free(&objs[0]);
	CHECK_EQ(tally__pcpu_alloc_kind(&objs[0], first_units * GRAN, kind), 0);
	CHECK(objs[0].chunk == chunk && off_of(&objs[0]) == 0, "the first object's space again");
	CHECK(all_are(&objs[0], first_units * GRAN, 0, "region_end: the first object, reused"),
	      "zero");
	for (i = 0; i < granules;) {
		size_t units = i ? 1 : first_units;
		tally__pcpu_free(&objs[i]); /* freed ones: no-ops */
		i += units;
	}
	free(objs);
}

static void check_region_end(void)
{
	const size_t granules = REGION / GRAN;
	/* 12 bytes: two granules, any alignment. The first object is two
	 * granules, so the end-marker bit just past the used bitmap is clear:
	 * a search that looks one granule too far finds the last granule
	 * (freed) and that bit both free. */
	const size_t two[] = {granules / 2 + 1, granules - 1};
	/* 24 bytes: three granules, 16-byte aligned, after the last two are
	 * freed; the first object freed too, so that bit is clear. */
	const size_t three[] = {0, granules / 2 + 1, granules / 2 + 2, granules - 2, granules - 1};
	check_region_end_case(TALLY__ARENA_NODES, 2, two, 2, 12);
	check_region_end_case(TALLY__ARENA_HOT, 1, three, 5, 24);
}

int main(void)
{
	check_big_free();
	check_region_end();
	printf("arena_bugs: %u CPU slots, regions of %zu bytes\n", tally_cpu_slots(), REGION);
	return harness_exit("arena_bugs");
}
