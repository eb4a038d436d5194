/*
 * vec_cut_order.c - a TALLY_VEC_MULTI cut's switch of the active bank
 * against multi-item updates announcing themselves (tally/vec/banks.h),
 * placed where only the pair's store-buffering order keeps a snapshot
 * whole.
 *
 * The cut stores the new active bank, then loads each slot's in-flight
 * counter of the old one; an update increments its slot's counter, then
 * re-loads the active bank. One of the two must see the other's write.
 * If the cut's load could pass its own store (a store buffer), the cut
 * would find the counter still 0 while the update re-loads the old bank
 * and adds to it: the cut then reads that bank while the update's adds
 * land, and the snapshot holds part of an update.
 *
 * The updater is pinned to the first CPU the thread may use and the
 * snapshotter to the second, so the updater's counter is in the slot
 * whose counter the drain loads first, right after the store (under
 * qemu-user the only load that can pass the store: each LDAR is followed
 * by a host fence, see below). Each update adds 1 to both items, item 1
 * first, the opposite of the cut's order within a slot, so a cut that
 * overlaps an update's adds sees the items apart; two items keep updates
 * and cuts short, so they meet often. Checked: in every snapshot both
 * items equal (an update seen whole or not at all) and item 0 never going
 * back; at the end both equal to the number of updates.
 *
 * Why: qemu-aarch64 7.2 on an x86_64 host translates STLR as "fence;
 * store" and LDAR as "load; fence", so the host's store buffer lets a
 * seq_cst store pass a later seq_cst load (C11 and ARMv8 forbid it;
 * aarch64 hardware orders STLR -> LDAR). Without the full fence after the
 * cut's store (tally__vec_cut) this program failed 6 runs of 10 there
 * (2 s each; 1-6 torn snapshots in a failing run), and stress_vec_multi
 * failed up to 9 of 24 after unrelated layout changes; with it, 0 of 10
 * and 0 of 30. Natively on x86_64 it cannot fail (seq_cst stores are
 * locked there). A one-thread test hook cannot stand in for a store
 * buffer, hence two pinned threads.
 * On one CPU (nothing to pin apart) it says so and passes.
 * TALLY_STRESS_SECONDS sets the run time (default 2).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <tally/vec.h>

#define NR 2

static struct tally_vec vec;
static int stop, cpu[2];
static unsigned long long updates;

static void *updater(void *arg)
{
	struct tally_vec_delta d[NR];
	unsigned long long n = 0;
	(void)arg;
	if (harness_pin(cpu[0]))
		fprintf(stderr, "vec_cut_order: could not pin the updater to CPU %d\n", cpu[0]);
	for (unsigned i = 0; i < NR; i++) {
		d[i].item = NR - 1 - i;
		d[i].delta = 1;
	}
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		CHECK_EQ(tally_vec_mod_multi(&vec, d, NR), 0);
		n++;
	}
	updates = n;
	return NULL;
}

int main(void)
{
	struct tally_vec_opts o = {.nr_items = NR, .threshold = 1000, .flags = TALLY_VEC_MULTI};
	tally_uword s[NR], last = 0;
	unsigned long long cuts = 0, torn = 0;
	double end;
	pthread_t t;

	if (harness_allowed_cpus(cpu, 2) < 2) {
		printf("vec_cut_order: one CPU allowed: nothing to place apart, skipped\n");
		return 0;
	}
	CHECK_EQ(tally_vec_init_opts(&vec, &o), 0);
	if (pthread_create(&t, NULL, updater, NULL))
		return fprintf(stderr, "pthread_create failed\n"), 1;
	if (harness_pin(cpu[1]))
		fprintf(stderr, "vec_cut_order: could not pin the snapshotter to CPU %d\n", cpu[1]);
	end = harness_now() + harness_seconds();
	while (harness_now() < end) {
		for (int r = 0; r < 64; r++, cuts++) {
			CHECK_EQ(tally_vec_snapshot(&vec, s, NR), 0);
			for (unsigned i = 1; i < NR; i++)
				if (s[i] != s[0]) {
					if (++torn <= 5)
						CHECK(0, "snapshot %llu: item %u %llu != "
							 "item 0 %llu",
						      cuts, i, (unsigned long long)s[i],
						      (unsigned long long)s[0]);
					else
						__atomic_fetch_add(&harness_failures, 1,
								   __ATOMIC_RELAXED);
					break;
				}
			CHECK(s[0] >= last, "item 0 went back: %llu after %llu",
			      (unsigned long long)s[0], (unsigned long long)last);
			last = s[0];
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	CHECK_EQ(tally_vec_snapshot(&vec, s, NR), 0);
	for (unsigned i = 0; i < NR; i++)
		CHECK(s[i] == (tally_uword)updates, "item %u: %llu, %llu updates", i,
		      (unsigned long long)s[i], updates);
	tally_vec_destroy(&vec);
	printf("vec_cut_order: CPUs %d and %d: %llu updates, %llu snapshots, %llu torn\n", cpu[0],
	       cpu[1], updates, cuts, torn);
	return harness_exit("vec_cut_order");
}
