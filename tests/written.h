/*
 * tests/written.h - what the tests of the written bound (tally/pcpu.h)
 * share: mincore() over the arenas' regions of the CPU slots above the one
 * that wrote, which must have no page mapped (reading a never-written page
 * maps the zero page). Include after harness.h and a tally header.
 */
#ifndef TALLY_TESTS_WRITTEN_H
#define TALLY_TESTS_WRITTEN_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* 1 when anonymous memory gets transparent huge pages without asking: a
 * write may then map the 2 MiB around it. */
static int thp_always(void)
{
	char buf[128] = {0};
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	size_t n;
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, "[always]") != NULL;
}

/* Pages of the regions of slots u + 1 .. nr - 1 of every chunk of arena
 * kind that are mapped (-1: mincore() failed). */
static long mapped_above(unsigned kind, unsigned u, int thp)
{
	struct tally__arena *a = tally__arena_get(kind);
	struct tally__arena_chunk *c;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), huge = (size_t)2 << 20;
	long mapped = 0;
	pthread_mutex_lock(&a->lock);
	for (c = a->chunks; c; c = c->next) {
		size_t region = (size_t)1 << c->shift, npages = region / page, i;
		unsigned r, last = a->regions - 1u;
		unsigned char *vec = (unsigned char *)malloc(npages ? npages : 1);
		uintptr_t lo = (uintptr_t)c->map, hi = lo + ((size_t)(u + 1u) << c->shift);
		uintptr_t shared = lo + ((size_t)last << c->shift);
		if (!vec)
			break;
		for (r = u + 1u; r < last; r++) {
			unsigned char *m = c->map + ((size_t)r << c->shift);
			if (mincore(m, region, vec)) {
				mapped = -1;
				break;
			}
			for (i = 0; i < npages; i++) {
				uintptr_t pg = (uintptr_t)m + i * page;
				/* a huge page around a written region's page */
				if (thp && ((pg / huge <= (hi - 1) / huge && pg / huge >= lo / huge) ||
					    pg / huge == shared / huge ||
					    pg / huge == (shared + region - 1) / huge))
					continue;
				mapped += vec[i] & 1;
			}
		}
		free(vec);
		if (mapped < 0)
			break;
	}
	pthread_mutex_unlock(&a->lock);
	return mapped;
}

static inline void check_unmapped(unsigned u, int thp, const char *when)
{
	static const unsigned kinds[] = {TALLY__ARENA_HOT, TALLY__ARENA_COLD, TALLY__ARENA_NODES};
	static const char *const names[] = {"hot", "cold", "nodes"};
	unsigned k;
	for (k = 0; k < 3; k++) {
		long m = mapped_above(kinds[k], u, thp);
		CHECK(m == 0,
		      "%s: %ld page(s) of the %s arena's regions of slots %u..%u mapped (slot %u "
		      "wrote)",
		      when, m, names[k], u + 1u, tally_cpu_slots() - 1u, u);
	}
}

#endif
