/*
 * tally_hist on many CPUs on two: built with TALLY_CPU_SLOTS=256 and
 * TALLY_PCPU_MODE=3, so 256 recorder threads act as 256 CPU slots, beside
 * a thread taking snapshots and resets. Checks every cut (sum == value x
 * count over the buckets: recorder t records value t + 1, its own bucket),
 * that each thread's records land in a slot of its own (slot t's done
 * count for the bank equals thread t's records), and exact totals at the
 * end. Runs under ThreadSanitizer (the updates are atomic RMWs here).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <tally/hist.h>

#if TALLY_CPU_SLOTS != 256 || TALLY_PCPU_MODE != 3
#  error "build with -DTALLY_CPU_SLOTS=256 -DTALLY_PCPU_MODE=3"
#endif

#define SLOTS 256
#define PER_THREAD 4000

static struct tally_hist h;
static int stop;

static void *recorder(void *arg)
{
	int64_t v = (int64_t)(uintptr_t)arg + 1;
	for (int i = 0; i < PER_THREAD; i++)
		CHECK_EQ(tally_hist_record(&h, v), 0);
	return NULL;
}

static void check_cut(const struct tally_hist_snap *s)
{
	uint64_t sum = 0, count = 0;
	for (unsigned j = 0; j < s->nr_buckets; j++) {
		count += s->counts[j];
		sum += (uint64_t)j * s->counts[j]; /* position j holds value j below 256 */
	}
	CHECK(sum == s->sum && count == s->count, "cut: sum %llu, buckets %llu", (unsigned long long)s->sum,
	      (unsigned long long)sum);
}

static void *cutter(void *arg)
{
	struct tally_hist_snap s;
	unsigned long n = 0;
	(void)arg;
	CHECK_EQ(tally_hist_snap_init(&s, &h), 0);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		CHECK_EQ(n % 8 ? tally_hist_snapshot(&h, &s) : tally_hist_reset(&h), 0);
		if (n % 8)
			check_cut(&s);
		n++;
	}
	tally_hist_snap_destroy(&s);
	return NULL;
}

int main(void)
{
	static pthread_t t[SLOTS];
	pthread_t c;
	struct tally_hist_snap s;
	struct tally_hist_opts o = {1, 1000, 7, NULL, 0};
	CHECK_EQ(tally_cpu_slots(), SLOTS);
	CHECK_EQ(tally_hist_init(&h, &o), 0);
	pthread_create(&c, NULL, cutter, NULL);
	for (uintptr_t i = 0; i < SLOTS; i++)
		pthread_create(&t[i], NULL, recorder, (void *)i);
	for (int i = 0; i < SLOTS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(c, NULL);
	CHECK_EQ(tally_hist_snap_init(&s, &h), 0);
	CHECK_EQ(tally_hist_snapshot_raw(&h, &s), 0);
	check_cut(&s);
	CHECK_EQ(s.count, (uint64_t)SLOTS * PER_THREAD);
	for (unsigned v = 1; v <= SLOTS; v++) {
		unsigned j = v < 256 ? v : 256; /* [256, 257] is one bucket */
		CHECK(s.counts[j] == PER_THREAD, "value %u: %llu", v,
		      (unsigned long long)s.counts[j]);
	}
	/* one slot per thread: the slots' done counts (both banks) are each
	 * one thread's records */
	for (unsigned sl = 0; sl < SLOTS; sl++) {
		const uint64_t *r = (const uint64_t *)tally__pcpu_at(&h.tally__pcpu, sl, 0);
		uint64_t done = r[0] + r[TALLY__HIST_BANK_BYTES / 8u];
		CHECK(done == PER_THREAD, "slot %u holds %llu records", sl, (unsigned long long)done);
	}
	tally_hist_snap_destroy(&s);
	tally_hist_destroy(&h);
	return harness_exit("slots256_hist");
}
