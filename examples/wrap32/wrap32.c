/*
 * wrap32 - why event counters need monotonic readers: the hazard that
 * "mm/vmstat, mm/memcontrol: add _monotonic vmstat readers" (Usama Arif,
 * 2026; patch 1 of "mm/vmscan: reduce lru_lock contention via
 * vmstat-derived scan-balance cost") fixes.
 *
 * An event counter (say PGROTATE) lives in a tally_vec with 32-bit words
 * and is sampled every tick; the sampler subtracts the last sample. Once the
 * count passes 2^31 - 1 its signed value is negative:
 *   - the clamped reader (tally_vec_read, like node_page_state()) reads 0,
 *     and 0 - last is a spurious delta of about 2^31; after that it reports
 *     nothing until the count climbs back;
 *   - the monotonic reader (tally_vec_read_monotonic) returns the raw word,
 *     and tally_delta() of two raw samples is exact across any wrap.
 *
 * Exit status 0 when the monotonic deltas are exact and the clamped reader
 * showed the spurious jump, so the smoke test checks the demo's claim.
 */
#define TALLY_WORD_BITS 32 /* every translation unit of a program must agree */
#include <stdio.h>
#include <tally/vec.h>

enum { PGROTATE, NR_ITEMS };
#define TICKS 6
#define EVENTS_PER_TICK 600

int main(void)
{
	struct tally_vec v;
	struct tally_sample clamped, mono;
	int tick, mono_exact = 1, spurious_at = 0;

	if (tally_vec_init(&v, NR_ITEMS, 0))
		return 1;
	/* The counter has been running a while: 1500 events short of 2^31 - 1. */
	tally_vec_mod(&v, PGROTATE, TALLY_SWORD_MAX - 1500);
	clamped.last = tally_vec_read(&v, PGROTATE);
	mono.last = tally_vec_read_monotonic(&v, PGROTATE);

	printf("32-bit event counter sampled every tick, %d events per tick\n\n", EVENTS_PER_TICK);
	printf("tick  events | clamped read  clamped delta | monotonic read  monotonic delta\n");
	printf("   0       - | %12llu              - | %14llu                -\n",
	       (unsigned long long)clamped.last, (unsigned long long)mono.last);
	for (tick = 1; tick <= TICKS; tick++) {
		tally_uword c, m, dc, dm;
		int i;
		for (i = 0; i < EVENTS_PER_TICK; i++)
			tally_vec_inc(&v, PGROTATE);
		tally_vec_fold(&v); /* the periodic refresh (vmstat's) */

		c = tally_vec_read(&v, PGROTATE);
		m = tally_vec_read_monotonic(&v, PGROTATE);
		dc = tally_sample_advance(&clamped, c);
		dm = tally_sample_advance(&mono, m);
		if (dm != EVENTS_PER_TICK)
			mono_exact = 0;
		if (dc > TALLY_UWORD_MAX / 4 && !spurious_at)
			spurious_at = tick;
		printf("%4d %7d | %12llu %14llu | %14llu %16llu%s\n", tick, EVENTS_PER_TICK,
		       (unsigned long long)c, (unsigned long long)dc, (unsigned long long)m,
		       (unsigned long long)dm,
		       dc == EVENTS_PER_TICK ? "" : dc ? "  <- spurious jump" : "  <- lost events");
	}
	tally_vec_destroy(&v);

	printf("\nmonotonic deltas: %s\n", mono_exact ? "exact every tick" : "WRONG");
	if (spurious_at)
		printf("clamped deltas: a spurious jump at tick %d (the count passed 2^31 - 1), "
		       "then nothing\n",
		       spurious_at);
	else
		printf("clamped deltas: no spurious jump (unexpected)\n");
	return mono_exact && spurious_at ? 0 : 1;
}
