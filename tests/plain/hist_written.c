/*
 * hist_written.c - snapshots, resets and destroys of tally_hist visit only
 * the CPU slots that recorded into them (issue 30; the histogram's side of
 * vec_written.c: with 256 slots on a 2-CPU host every cut read every
 * slot's region, 36.6 KB of it per slot at the default buckets, and each
 * never-written region's pages, read, map the kernel's zero page).
 *
 * Deterministic, no timing check: the program pins itself to one CPU (slot
 * u), makes many histograms of four kinds (the default buckets; explicit
 * bounds, whose records all take the out-of-line path; p = 10 over a short
 * range; the default with big records, n >= 16, which take the atomic path
 * and the shared slot, and a half wrapped past 2^32, whose carry the cut
 * reads), records into them, then snapshots (since reset and raw), resets,
 * records again, snapshots, checks every count and sum, and destroys them;
 * mincore() must find no page of the regions of slots u + 1 .. nr - 1
 * mapped, after the snapshots and resets and after the frees. Then the
 * space is reused: new histograms snapshot empty (the free zeroed every
 * slot it wrote), record, snapshot and go again. It prints how long the
 * snapshots and the destroys took (bench/RESULTS.md quotes them: before
 * the written bound, these read every slot).
 * Built with TALLY_CPU_SLOTS=256, on the rseq and the atomic path
 * (tests/CMakeLists.txt).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <string.h>
#include <sys/mman.h>
#include <tally/hist.h>
#include <time.h>
#include "written.h"
#include <unistd.h>

#define N 200
#define KINDS 4

static struct tally_hist hists[N];
static struct tally_hist_snap snaps[N];
static const uint64_t bounds[] = {10, 100, 1000, 10000, 100000, 1000000};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int init_hist(unsigned i)
{
	struct tally_hist_opts o;
	memset(&o, 0, sizeof(o));
	switch (i % KINDS) {
	case 1:
		o.bounds = bounds;
		o.nr_bounds = sizeof(bounds) / sizeof(bounds[0]);
		break;
	case 2:
		o.lowest = 1000;
		o.highest = 1000000;
		o.precision = 10;
		break;
	}
	return tally_hist_init(&hists[i], i % KINDS == 1 || i % KINDS == 2 ? &o : NULL);
}

/* Round r's records of histogram i: their count and sum into *count and
 * *sum. */
static void record(unsigned i, unsigned r, uint64_t *count, uint64_t *sum)
{
	struct tally_hist *h = &hists[i];
	unsigned k;
	*count = *sum = 0;
	for (k = 0; k < 50; k++) {
		int64_t v = (int64_t)(1 + (i * 7919u + k * 104729u + r) % 2000000u);
		CHECK_EQ(tally_hist_record(h, v), 0);
		*count += 1;
		*sum += (uint64_t)v;
	}
	if (i % KINDS == 3) {
		/* the atomic path (n >= 16): on the shared slot where rseq is
		 * registered, else on this CPU's */
		CHECK_EQ(tally_hist_record_n(h, 4321, 1000 + r), 0);
		*count += 1000 + r;
		*sum += 4321u * (uint64_t)(1000 + r);
		if (r == 0 && i % (4 * KINDS) == 3) {
			/* a half wrapped: 2^32 - 1 records of one value, then
			 * one more (the section's path where it has one) */
			CHECK_EQ(tally__hist_record(h, 555, UINT32_MAX), 0);
			CHECK_EQ(tally_hist_record(h, 555), 0);
			*count += (uint64_t)1 << 32;
			*sum += 555u * ((uint64_t)1 << 32);
		}
	}
}

int main(void)
{
	unsigned i, nr = tally_cpu_slots(), u;
	static uint64_t c0[N], s0[N], c1[N], s1[N];
	int cpus[1], thp = thp_always();
	double t0, t_snap = 0, t_free;
	/* One CPU: the lowest allowed, so its slot is low and most are not. */
	if (harness_allowed_cpus(cpus, 1) == 1)
		(void)harness_pin(cpus[0]);
	u = tally__cpu() % nr;
	for (i = 0; i < N; i++) {
		CHECK_EQ(init_hist(i), 0);
		CHECK_EQ(tally_hist_snap_init(&snaps[i], &hists[i]), 0);
		record(i, 0, &c0[i], &s0[i]);
	}
	if (u != tally__cpu() % nr)
		printf("hist_written: the slot moved (%u, then %u): not pinned\n", u,
		       tally__cpu() % nr);
	if (tally__cpu() % nr > u)
		u = tally__cpu() % nr;
	t0 = now_s();
	for (i = 0; i < N; i++) {
		CHECK_EQ(tally_hist_snapshot(&hists[i], &snaps[i]), 0);
		CHECK(snaps[i].count == c0[i] && snaps[i].sum == s0[i],
		      "histogram %u: count %llu sum %llu, want %llu %llu", i,
		      (unsigned long long)snaps[i].count, (unsigned long long)snaps[i].sum,
		      (unsigned long long)c0[i], (unsigned long long)s0[i]);
		CHECK_EQ(tally_hist_reset(&hists[i]), 0);
	}
	t_snap += now_s() - t0;
	for (i = 0; i < N; i++) {
		record(i, 1, &c1[i], &s1[i]);
		c0[i] += c1[i];
		s0[i] += s1[i];
	}
	t0 = now_s();
	for (i = 0; i < N; i++) {
		CHECK_EQ(tally_hist_snapshot_raw(&hists[i], &snaps[i]), 0);
		CHECK(snaps[i].count == c0[i] && snaps[i].sum == s0[i],
		      "histogram %u raw: count %llu sum %llu, want %llu %llu", i,
		      (unsigned long long)snaps[i].count, (unsigned long long)snaps[i].sum,
		      (unsigned long long)c0[i], (unsigned long long)s0[i]);
		CHECK_EQ(tally_hist_snapshot(&hists[i], &snaps[i]), 0);
		/* since the reset: round 1's records alone */
		CHECK(snaps[i].count == c1[i] && snaps[i].sum == s1[i],
		      "histogram %u since the reset: count %llu sum %llu, want %llu %llu", i,
		      (unsigned long long)snaps[i].count, (unsigned long long)snaps[i].sum,
		      (unsigned long long)c1[i], (unsigned long long)s1[i]);
	}
	t_snap += now_s() - t0;
	check_unmapped(u, thp, "after the snapshots and resets");
	t0 = now_s();
	for (i = 0; i < N; i++)
		tally_hist_destroy(&hists[i]);
	t_free = now_s() - t0;
	check_unmapped(u, thp, "after the destroys");
	/* The space again: empty in every slot a histogram can see. */
	for (i = 0; i < N; i++) {
		CHECK_EQ(init_hist(i), 0);
		CHECK_EQ(tally_hist_snapshot_raw(&hists[i], &snaps[i]), 0);
		CHECK(snaps[i].count == 0 && snaps[i].sum == 0,
		      "histogram %u reused: count %llu sum %llu", i,
		      (unsigned long long)snaps[i].count, (unsigned long long)snaps[i].sum);
		CHECK_EQ(tally_hist_record(&hists[i], 42), 0);
		CHECK_EQ(tally_hist_snapshot(&hists[i], &snaps[i]), 0);
		CHECK(snaps[i].count == 1 && snaps[i].sum == 42, "histogram %u reused: count %llu",
		      i, (unsigned long long)snaps[i].count);
	}
	for (i = 0; i < N; i++) {
		tally_hist_destroy(&hists[i]);
		tally_hist_snap_destroy(&snaps[i]);
	}
	check_unmapped(u, thp, "after reuse");
	printf("hist_written: %u CPU slots, slot %u wrote, %d histograms: %.2f ms for their "
	       "%d snapshots and resets, %.2f ms for their destroys%s\n",
	       nr, u, N, 1e3 * t_snap, 4 * N, 1e3 * t_free,
	       thp ? " (huge pages: their neighbourhood skipped)" : "");
	return harness_exit("hist_written");
}
