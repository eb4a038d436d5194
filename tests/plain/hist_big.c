/*
 * hist_big.c - records of many observations (tally_hist_record_n) held in
 * flight while a snapshot cuts: the cut must wait for them, never accept
 * a read whose mismatches cancel (hist/cut.h). The records are held by
 * hist/record.h's test hook (TALLY__HIST_RECORD_HOOK, defined here), right
 * after their half's add, before the carry, sum and done; every thread is
 * pinned to one CPU, so every record lands on one slot (the atomic path,
 * TALLY_PCPU_MODE 1: the hook's path for every record).
 *
 * Two schedules, each on a fresh histogram, a = 1000 and b = 2000:
 *  1. record_n(b, 2^31) done; then record_n(a, 2^31) held after its half
 *     (+2^31 unfinished) and record_n(b, 2^31) held after its half wrapped
 *     (b's half 0, its carry not added): the halves add up to the done
 *     total, 2^31, with a's record in and b's first record out;
 *  2. record(b) done; then record(a) held (+1) and record_n(b, 2^32 - 1)
 *     held after wrapping b's half (1 + 2^32 - 1): again they add up.
 * A snapshot taken meanwhile (its own thread) must not return while the
 * records are held (checked after 50 ms, and it cannot return early on the
 * code under test, so this never depends on a schedule), and once they are
 * let go it must hold both, exactly: bucket by bucket, count and sum. On
 * the acceptance rule that counted one observation per record it returned
 * at once with a = 2^31 and b = 0 (schedule 1).
 */
#define _GNU_SOURCE
#define TALLY_PCPU_MODE 1
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

struct tally_hist;
static void record_hook(void);
#define TALLY__HIST_RECORD_HOOK(h, n) record_hook()

#include <tally/hist.h>

static __thread int hold;   /* this thread's records stop in the hook */
static int held, released;  /* records stopped; let them go */

static void record_hook(void)
{
	if (!hold)
		return;
	__atomic_fetch_add(&held, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&released, __ATOMIC_ACQUIRE))
		sched_yield();
}

struct rec {
	struct tally_hist *h;
	int64_t v;
	uint64_t n;
	pthread_t tid;
};

static void *held_record(void *arg)
{
	struct rec *r = (struct rec *)arg;
	hold = 1;
	CHECK_EQ(tally_hist_record_n(r->h, r->v, r->n), 0);
	return NULL;
}

static struct tally_hist_snap snap;
static int snap_done;

static void *snapshot_thread(void *arg)
{
	CHECK_EQ(tally_hist_snapshot_raw((struct tally_hist *)arg, &snap), 0);
	__atomic_store_n(&snap_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void wait_held(int n)
{
	while (__atomic_load_n(&held, __ATOMIC_SEQ_CST) < n)
		sched_yield();
}

static void schedule(const char *name, uint64_t n_first, uint64_t n_a, uint64_t n_b)
{
	const int64_t a = 1000, b = 2000;
	struct tally_hist h;
	struct rec ra, rb;
	pthread_t st;
	unsigned ja, jb, j;
	struct timespec ms50 = {0, 50 * 1000 * 1000};

	CHECK_EQ(tally_hist_init(&h, NULL), 0);
	CHECK_EQ(tally_hist_snap_init(&snap, &h), 0);
	ja = tally__hist_pos_slow(&h.tally__l, (uint64_t)a);
	jb = tally__hist_pos_slow(&h.tally__l, (uint64_t)b);
	__atomic_store_n(&held, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&released, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&snap_done, 0, __ATOMIC_SEQ_CST);

	CHECK_EQ(tally_hist_record_n(&h, b, n_first), 0);
	ra = (struct rec){&h, a, n_a, 0};
	rb = (struct rec){&h, b, n_b, 0};
	CHECK_EQ(pthread_create(&ra.tid, NULL, held_record, &ra), 0);
	wait_held(1);
	CHECK_EQ(pthread_create(&rb.tid, NULL, held_record, &rb), 0);
	wait_held(2);
	CHECK_EQ(pthread_create(&st, NULL, snapshot_thread, &h), 0);
	nanosleep(&ms50, NULL);
	CHECK(!__atomic_load_n(&snap_done, __ATOMIC_ACQUIRE),
	      "%s: the snapshot returned with records in flight: a %llu, b %llu", name,
	      (unsigned long long)snap.counts[ja], (unsigned long long)snap.counts[jb]);
	__atomic_store_n(&released, 1, __ATOMIC_RELEASE);
	CHECK_EQ(pthread_join(ra.tid, NULL), 0);
	CHECK_EQ(pthread_join(rb.tid, NULL), 0);
	CHECK_EQ(pthread_join(st, NULL), 0);

	for (j = 0; j < snap.nr_buckets; j++) {
		uint64_t want = j == ja ? n_a : j == jb ? n_first + n_b : 0;
		CHECK(snap.counts[j] == want, "%s: bucket %u: %llu, want %llu", name, j,
		      (unsigned long long)snap.counts[j], (unsigned long long)want);
	}
	CHECK(snap.count == n_first + n_a + n_b, "%s: count %llu", name,
	      (unsigned long long)snap.count);
	CHECK(snap.sum == (uint64_t)a * n_a + (uint64_t)b * (n_first + n_b),
	      "%s: sum %llu", name, (unsigned long long)snap.sum);
	tally_hist_snap_destroy(&snap);
	tally_hist_destroy(&h);
}

int main(void)
{
	CHECK(harness_pin_here() >= 0, "cannot pin the thread");
	schedule("two records of 2^31", (uint64_t)1 << 31, (uint64_t)1 << 31,
		 (uint64_t)1 << 31);
	schedule("one of 2^32 - 1 beside one of 1", 1, 1, TALLY_HIST_N_MAX);
	return harness_exit("hist_big");
}
