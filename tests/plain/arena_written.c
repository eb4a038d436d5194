/*
 * arena_written.c - reads and frees of counters visit only the CPU slots
 * that wrote them (issue 30: with 256 slots on a 2-CPU host a sum or a
 * destroy read every slot's region, and each never-written region's page,
 * read, maps the kernel's zero page at another address: 1-9 us a read
 * there, 7-22 s for 4,000 destroys).
 *
 * Deterministic, no timing: the program pins itself to one CPU (slot u),
 * adds to 4,000 flat counters and 4,000 default ones (a counter tree from
 * 64 slots), sums, compares, folds, resets and destroys them all, and then
 * asks mincore() which pages of the arena's chunks are mapped. A read of a
 * never-written page maps the zero page, which mincore() reports as
 * resident; so every page of the regions of slots u + 1 .. nr - 1 must
 * still be unmapped, after the reads and after the frees. Then the space is
 * reused: new counters start at 0 (the free zeroed every slot it wrote).
 * Built at the default slots and with TALLY_CPU_SLOTS=256, on the rseq and
 * the atomic path (tests/CMakeLists.txt).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <string.h>
#include <sys/mman.h>
#include <tally/counter.h>
#include <unistd.h>

#define N 4000

static struct tally_counter flat[N], dflt[N];

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

static void check_unmapped(unsigned u, int thp, const char *when)
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

int main(void)
{
	unsigned i, nr = tally_cpu_slots(), u;
	int cpus[1], thp = thp_always();
	/* One CPU: the lowest allowed, so its slot is low and most are not. */
	if (harness_allowed_cpus(cpus, 1) == 1)
		(void)harness_pin(cpus[0]);
	u = tally__cpu() % nr;
	for (i = 0; i < N; i++) {
		CHECK_EQ(tally_counter_init(&flat[i], 0, 64), 0);
		CHECK_EQ(tally_counter_init(&dflt[i], 0, 0), 0);
	}
	for (i = 0; i < N; i++) {
		unsigned k;
		/* Each crosses its batch: folds (flat) and carries (tree). */
		for (k = 0; k < 3; k++) {
			tally_counter_add(&flat[i], (tally_sword)(i % 97) + 70);
			tally_counter_add(&dflt[i], (tally_sword)(i % 89) + 40);
		}
	}
	if (u != tally__cpu() % nr)
		printf("arena_written: the slot moved (%u, then %u): not pinned\n", u,
		       tally__cpu() % nr);
	if (tally__cpu() % nr > u)
		u = tally__cpu() % nr;
	for (i = 0; i < N; i++) {
		CHECK_EQ(tally_counter_sum(&flat[i]), 3 * ((i % 97) + 70));
		CHECK_EQ(tally_counter_sum(&dflt[i]), 3 * ((i % 89) + 40));
		CHECK_EQ(tally_counter_compare(&flat[i], 0), 1);
		tally_counter_fold_all(&flat[i]);
		tally_counter_fold_all(&dflt[i]);
		CHECK_EQ(tally_counter_read(&flat[i]), 3 * ((i % 97) + 70));
		if (i % 2)
			CHECK_EQ(tally_counter_sum_and_reset(&flat[i]), 3 * ((i % 97) + 70));
	}
	check_unmapped(u, thp, "after the sums");
	for (i = 0; i < N; i++) {
		tally_counter_destroy(&flat[i]);
		tally_counter_destroy(&dflt[i]);
	}
	check_unmapped(u, thp, "after the destroys");
	/* The space again: zero in every slot a counter can see. */
	for (i = 0; i < N; i++) {
		CHECK_EQ(tally_counter_init(&flat[i], 0, 64), 0);
		CHECK_EQ(tally_counter_init(&dflt[i], 0, 0), 0);
		CHECK_EQ(tally_counter_sum(&flat[i]), 0);
		CHECK_EQ(tally_counter_sum(&dflt[i]), 0);
		tally_counter_add(&flat[i], 1);
		tally_counter_add(&dflt[i], 1);
		CHECK_EQ(tally_counter_sum(&flat[i]), 1);
		CHECK_EQ(tally_counter_sum(&dflt[i]), 1);
	}
	for (i = 0; i < N; i++) {
		tally_counter_destroy(&flat[i]);
		tally_counter_destroy(&dflt[i]);
	}
	check_unmapped(u, thp, "after reuse");
	printf("arena_written: %u CPU slots, slot %u wrote, %d counters of each kind%s\n", nr, u,
	       N, thp ? " (huge pages: their neighbourhood skipped)" : "");
	return harness_exit("arena_written");
}
