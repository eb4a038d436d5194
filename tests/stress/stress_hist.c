/*
 * Stress test of tally_hist: recorders, snapshots and resets at once.
 * Writers record values 1..255 (each its own bucket at the default
 * precision, so a bucket's values are known exactly) one at a time or a
 * few at once (record_n), and now and then 2^31 or 2^32 - 1 at once into
 * one bucket (its halves wrap). More threads than cores, so recorders are
 * preempted between their three adds.
 *
 * Checked during the run:
 *  - every snapshot (raw, and since reset) has sum == sum over buckets of
 *    value x count, and count == the buckets' total: no observation is in
 *    the buckets without its value in the sum, or the reverse;
 *  - raw snapshots never go back, bucket by bucket;
 *  - each reset's baseline count lies between the records completed
 *    before the reset was called and those started before it returned.
 * At the end (quiescent): every bucket's raw count and the raw sum equal
 * what the writers recorded, to the last unit, and baseline + since-reset
 * = raw.
 * Writers come in waves: each thread records for a while and exits, and a
 * new one takes its place (and its tallies), so threads on new CPU slots
 * begin recording while cuts run: built with TALLY_CPU_SLOTS=64 and
 * TALLY_PCPU_MODE=3 (stress_hist_slots, tests/CMakeLists.txt), every new
 * thread is a new slot, and the histogram's written bound (tally/pcpu.h),
 * which cuts read before and after their first pass, grows through the
 * run.
 * TALLY_STRESS_SECONDS sets the run time (default 2).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <tally/hist.h>

#define NWRITERS 4
#define VMAX 255

static struct tally_hist h;
static int stop;

/* Outer loops of a writer thread before it exits and a new one follows. */
#define WAVE 2000

struct writer {
	pthread_t tid;
	int id, exited;
	uint64_t count[VMAX + 1], sum;
	unsigned long long started, completed; /* observations, for the resetter */
};

static void *writer_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
	struct harness_rng rng = {0x415u + (uint64_t)w->id * 7919u + w->started};
	unsigned wave = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && wave++ < WAVE) {
		for (int i = 0; i < 64; i++) {
			uint64_t r = harness_next(&rng);
			int64_t v = 1 + (int64_t)(r % VMAX);
			uint64_t n = (r >> 20) % 8 == 0 ? 1 + (r >> 24) % 3 : 1;
			/* Now and then a record of 2^31 or 2^32 - 1 observations
			 * (writers 0 and 1, into one bucket): halves wrap, and an
			 * unfinished big record can cancel a wrapped half's
			 * missing carry in the add-up check (hist/cut.h). */
			if (w->id < 2 && (r >> 40) % 4 == 0) {
				v = 7;
				n = (r >> 46) % 4 ? (uint64_t)1 << 31 : TALLY_HIST_N_MAX;
			}
			/* started before the adds, completed after they returned */
			__atomic_store_n(&w->started, w->started + n, __ATOMIC_RELEASE);
			if (n == 1)
				CHECK_EQ(tally_hist_record(&h, v), 0);
			else
				CHECK_EQ(tally_hist_record_n(&h, v, n), 0);
			__atomic_store_n(&w->completed, w->completed + n, __ATOMIC_RELEASE);
			w->count[v] += n;
			w->sum += (uint64_t)v * n;
		}
	}
	__atomic_store_n(&w->exited, 1, __ATOMIC_RELEASE);
	return NULL;
}

static unsigned long long rounds[2], resets, bad_cuts, waves;

/* The cut: sum == value x count over the buckets, count == their total. */
static void check_cut(const struct tally_hist_snap *s, const char *what)
{
	uint64_t sum = 0, count = 0;
	for (unsigned j = 0; j < s->nr_buckets; j++) {
		count += s->counts[j];
		sum += (uint64_t)j * s->counts[j]; /* position j holds value j here */
	}
	if (sum != s->sum || count != s->count) {
		if (__atomic_add_fetch(&bad_cuts, 1, __ATOMIC_RELAXED) <= 5)
			CHECK(0, "%s snapshot: sum %llu, buckets say %llu; count %llu, buckets %llu",
			      what, (unsigned long long)s->sum, (unsigned long long)sum,
			      (unsigned long long)s->count, (unsigned long long)count);
		else
			__atomic_fetch_add(&harness_failures, 1, __ATOMIC_RELAXED);
	}
}

static void *reader_raw(void *arg)
{
	struct tally_hist_snap s, last;
	(void)arg;
	CHECK_EQ(tally_hist_snap_init(&s, &h), 0);
	CHECK_EQ(tally_hist_snap_init(&last, &h), 0);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		CHECK_EQ(tally_hist_snapshot_raw(&h, &s), 0);
		check_cut(&s, "raw");
		for (unsigned j = 0; j < s.nr_buckets; j++)
			CHECK(s.counts[j] >= last.counts[j], "bucket %u went back: %llu after %llu",
			      j, (unsigned long long)s.counts[j], (unsigned long long)last.counts[j]);
		memcpy(last.counts, s.counts, s.nr_buckets * sizeof(uint64_t));
		(void)tally_hist_quantile(&s, 0.99);
		rounds[0]++;
	}
	tally_hist_snap_destroy(&s);
	tally_hist_snap_destroy(&last);
	return NULL;
}

static void *reader_reset(void *arg)
{
	struct writer *w = (struct writer *)arg;
	struct tally_hist_snap s;
	CHECK_EQ(tally_hist_snap_init(&s, &h), 0);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		CHECK_EQ(tally_hist_snapshot(&h, &s), 0);
		check_cut(&s, "since-reset");
		if (rounds[1] % 16 == 0) {
			unsigned long long before = 0, after = 0, base = 0;
			for (int j = 0; j < NWRITERS; j++)
				before += __atomic_load_n(&w[j].completed, __ATOMIC_ACQUIRE);
			CHECK_EQ(tally_hist_reset(&h), 0);
			for (int j = 0; j < NWRITERS; j++)
				after += __atomic_load_n(&w[j].started, __ATOMIC_ACQUIRE);
			/* Only this thread resets: the baseline is the cut's. */
			for (unsigned j = 0; j < s.nr_buckets; j++)
				base += h.tally__base[j];
			CHECK(base >= before && base <= after,
			      "reset's cut has %llu records: completed before %llu, started after %llu",
			      base, before, after);
			resets++;
		}
		rounds[1]++;
	}
	tally_hist_snap_destroy(&s);
	return NULL;
}

int main(void)
{
	static struct writer w[NWRITERS];
	pthread_t r0, r1;
	struct tally_hist_snap raw, since;
	uint64_t want_sum = 0;
	CHECK_EQ(tally_hist_init(&h, NULL), 0);
	for (int i = 0; i < NWRITERS; i++) {
		w[i].id = i;
		pthread_create(&w[i].tid, NULL, writer_main, &w[i]);
	}
	pthread_create(&r0, NULL, reader_raw, NULL);
	pthread_create(&r1, NULL, reader_reset, w);
	for (double t = 0; t < harness_seconds(); t += 0.005) {
		usleep(5000);
		/* the next wave: a new thread where one finished */
		for (int i = 0; i < NWRITERS; i++)
			if (__atomic_load_n(&w[i].exited, __ATOMIC_ACQUIRE)) {
				pthread_join(w[i].tid, NULL);
				w[i].exited = 0;
				waves++;
				pthread_create(&w[i].tid, NULL, writer_main, &w[i]);
			}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NWRITERS; i++)
		pthread_join(w[i].tid, NULL);
	pthread_join(r0, NULL);
	pthread_join(r1, NULL);

	CHECK_EQ(tally_hist_snap_init(&raw, &h), 0);
	CHECK_EQ(tally_hist_snap_init(&since, &h), 0);
	CHECK_EQ(tally_hist_snapshot_raw(&h, &raw), 0);
	CHECK_EQ(tally_hist_snapshot(&h, &since), 0);
	for (unsigned v = 0; v <= VMAX; v++) {
		uint64_t want = 0;
		for (int i = 0; i < NWRITERS; i++)
			want += w[i].count[v];
		CHECK_EQ(raw.counts[v], want);
		CHECK_EQ(since.counts[v] + h.tally__base[v], want);
	}
	for (int i = 0; i < NWRITERS; i++)
		want_sum += w[i].sum;
	CHECK_EQ(raw.sum, want_sum);
	CHECK_EQ(since.sum + h.tally__base[raw.nr_buckets], want_sum);
	printf("stress_hist: %llu records, %llu raw and %llu since-reset snapshots, %llu resets, "
	       "%llu writer threads after the first, written bound %u of %u slots\n",
	       (unsigned long long)raw.count, rounds[0], rounds[1], resets, waves,
	       h.tally__pcpu.lim, h.tally__pcpu.nr);
	tally_hist_snap_destroy(&raw);
	tally_hist_snap_destroy(&since);
	tally_hist_destroy(&h);
	return harness_exit("stress_hist");
}
