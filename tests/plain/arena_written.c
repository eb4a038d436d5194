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
#include "written.h"
#include <unistd.h>

#define N 4000

static struct tally_counter flat[N], dflt[N];


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
