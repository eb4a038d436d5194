/*
 * Stress test of tally_counter: writers add random signed deltas while
 * readers read, sum, compare and fold_all concurrently. More threads than
 * cores, so threads share CPU slots and get preempted mid-update.
 *
 * At the end every counter's exact value must equal its initial value plus
 * every delta, to the last unit (each writer keeps its own running total),
 * and after fold_all read == sum.
 *
 * During the run, on a counter that only ever grows ("mono"), these must hold
 * whatever the interleaving:
 *   - read() and sum() never go backwards (seen by one reader);
 *   - a read() taken before a sum() is not above it;
 *   - compare(read_before - 1) is 1; compare(upper bound + 1) is -1.
 * Two more grow-only event counters get the same deltas from just below
 * 2^W and 2^(W-1): read through the unsigned readers (sum_monotonic,
 * read_monotonic) as events since the start (tally_delta), they never go
 * backwards and a read_monotonic taken before a sum_monotonic is not
 * ahead of it, across either wrap; at the end sum_monotonic is exact.
 * Once the writers stop, |read - sum| stays below the error bound
 * (2 * batch * slots), for every counter.
 *
 * TALLY_STRESS_SECONDS sets the run time (default 2).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <tally/counter.h>

#define U(x) ((tally_uword)(x))
#define NWRITERS 4
#define NREADERS 2
#define NCOUNTERS 3
#define CHUNK 256 /* writer ops between looks at the stop flag */

/* Signed random walks: batch 1 (folds on every add), the default batch,
 * and batch 1000 starting just below TALLY_SWORD_MAX (crosses the wrap). */
static struct tally_counter ctr[NCOUNTERS];
static const tally_sword batches[NCOUNTERS] = {1, 0, 1000};
static tally_sword initial[NCOUNTERS];

/* Grows only: deltas 0..3, each writer stops adding at mono_cap. */
static struct tally_counter mono;
static long long mono_cap;

/* Grow-only event counters with mono's deltas, crossing 2^W and 2^(W-1). */
#define NEVENTS 2
static struct tally_counter event[NEVENTS];
static tally_uword event_start[NEVENTS];

static int stop;

struct writer {
	pthread_t tid;
	int id;
	long long total[NCOUNTERS];
	long long mono_total;
	unsigned long long ops;
};

static void *writer_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
	struct harness_rng rng = {0x1234u + (uint64_t)w->id * 7919u};
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < CHUNK; i++) {
			uint64_t r = harness_next(&rng);
			int k = (int)(r % NCOUNTERS);
			long long d;
			if ((r >> 8) % 32 == 0)
				d = harness_range(&rng, -5000, 5000);
			else
				d = harness_range(&rng, -64, 64);
			tally_counter_add(&ctr[k], (tally_sword)d);
			w->total[k] += d;
			if (w->mono_total < mono_cap) {
				long long m = (long long)((r >> 16) % 4);
				tally_counter_add(&mono, (tally_sword)m);
				for (int e = 0; e < NEVENTS; e++)
					tally_counter_add(&event[e], (tally_sword)m);
				w->mono_total += m;
			}
		}
		w->ops += CHUNK;
	}
	return NULL;
}

struct reader {
	pthread_t tid;
	int id;
	unsigned long long ops;
};

/* Bounds of mono's value: it starts at 0 and no writer adds past cap + 3. */
static tally_sword mono_max(void)
{
	return (tally_sword)(NWRITERS * (mono_cap + 3));
}

static void *reader_main(void *arg)
{
	struct reader *rd = (struct reader *)arg;
	tally_sword last_read = 0, last_sum = 0;
	tally_uword ev_read[NEVENTS] = {0}, ev_sum[NEVENTS] = {0};
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		tally_sword r = tally_counter_read(&mono);
		tally_sword s = tally_counter_sum(&mono);
		CHECK(r >= last_read, "mono read went back: %lld after %lld", (long long)r,
		      (long long)last_read);
		CHECK(s >= last_sum, "mono sum went back: %lld after %lld", (long long)s,
		      (long long)last_sum);
		CHECK(r <= s, "mono read %lld above a later sum %lld", (long long)r, (long long)s);
		CHECK(s <= mono_max(), "mono sum %lld above its bound", (long long)s);
		CHECK_EQ(tally_counter_compare(&mono, r - 1), 1);
		CHECK_EQ(tally_counter_compare(&mono, mono_max() + 1), -1);
		/* Never negative: the clamped readers equal the plain ones. */
		CHECK(tally_counter_read_positive(&mono) >= U(r), "read_positive below read");
		CHECK(tally_counter_sum_positive(&mono) >= U(s), "sum_positive below sum");
		last_read = r;
		last_sum = s;

		/* Event counters: events since the start, through the unsigned
		 * readers (modular: right across 2^W and 2^(W-1)). */
		for (int e = 0; e < NEVENTS; e++) {
			tally_uword er = tally_delta(event_start[e],
						     tally_counter_read_monotonic(&event[e]) -
							     TALLY_MONOTONIC_BIAS);
			tally_uword es = tally_delta(event_start[e],
						     tally_counter_sum_monotonic(&event[e]));
			CHECK(er >= ev_read[e], "event %d: read_monotonic went back: %llu after %llu",
			      e, (unsigned long long)er, (unsigned long long)ev_read[e]);
			CHECK(es >= ev_sum[e], "event %d: sum_monotonic went back: %llu after %llu",
			      e, (unsigned long long)es, (unsigned long long)ev_sum[e]);
			CHECK(er <= es, "event %d: read_monotonic %llu ahead of a later sum %llu", e,
			      (unsigned long long)er, (unsigned long long)es);
			CHECK(es <= U(mono_max()), "event %d: %llu events, above the bound", e,
			      (unsigned long long)es);
			ev_read[e] = er;
			ev_sum[e] = es;
		}

		/* The signed counters: exercise every reader beside the writers. */
		for (int k = 0; k < NCOUNTERS; k++) {
			tally_sword v = tally_counter_read(&ctr[k]);
			tally_uword p = tally_counter_read_positive(&ctr[k]);
			tally_uword sp = tally_counter_sum_positive(&ctr[k]);
			int c = tally_counter_compare(&ctr[k], v);
			(void)tally_counter_sum(&ctr[k]);
			CHECK(c >= -1 && c <= 1, "compare returned %d", c);
			CHECK(p == 0 || p <= U(TALLY_SWORD_MAX), "read_positive %llu",
			      (unsigned long long)p);
			CHECK(sp == 0 || sp <= U(TALLY_SWORD_MAX), "sum_positive %llu",
			      (unsigned long long)sp);
		}
		if (rd->id == 1) {
			for (int k = 0; k < NCOUNTERS; k++)
				tally_counter_fold_all(&ctr[k]);
			tally_counter_fold_all(&mono);
			for (int e = 0; e < NEVENTS; e++)
				tally_counter_fold_all(&event[e]);
		}
		rd->ops++;
	}
	return NULL;
}

int main(void)
{
	struct writer w[NWRITERS];
	struct reader rd[NREADERS];
	double secs = harness_seconds();
	unsigned long long wops = 0, rops = 0;

	initial[0] = 12345;
	initial[1] = -777;
	initial[2] = TALLY_SWORD_MAX - 50000;
	for (int k = 0; k < NCOUNTERS; k++)
		CHECK_EQ(tally_counter_init(&ctr[k], initial[k], batches[k]), 0);
	CHECK_EQ(tally_counter_init(&mono, 0, 0), 0);
	/* Batch 64: folds often enough that read_monotonic crosses the wrap too. */
	CHECK_EQ(tally_counter_init(&event[0], -20000, 64), 0);
	CHECK_EQ(tally_counter_init(&event[1], TALLY_SWORD_MAX - 20000, 64), 0);
	for (int e = 0; e < NEVENTS; e++)
		event_start[e] = tally_counter_sum_monotonic(&event[e]);
	/* Keep mono far below TALLY_SWORD_MAX on 32-bit words too. */
	mono_cap = (long long)(TALLY_SWORD_MAX / 4) / NWRITERS;

	memset(w, 0, sizeof(w));
	memset(rd, 0, sizeof(rd));
	for (int i = 0; i < NWRITERS; i++) {
		w[i].id = i;
		if (pthread_create(&w[i].tid, NULL, writer_main, &w[i]))
			return fprintf(stderr, "pthread_create failed\n"), 1;
	}
	for (int i = 0; i < NREADERS; i++) {
		rd[i].id = i;
		if (pthread_create(&rd[i].tid, NULL, reader_main, &rd[i]))
			return fprintf(stderr, "pthread_create failed\n"), 1;
	}
	usleep((useconds_t)(secs * 1e6));
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NWRITERS; i++) {
		pthread_join(w[i].tid, NULL);
		wops += w[i].ops;
	}
	for (int i = 0; i < NREADERS; i++) {
		pthread_join(rd[i].tid, NULL);
		rops += rd[i].ops;
	}

	/* Quiescent: exact values to the last unit. */
	for (int k = 0; k < NCOUNTERS; k++) {
		tally_uword expect = U(initial[k]);
		for (int i = 0; i < NWRITERS; i++)
			expect += U(w[i].total[k]);
		CHECK_EQ(U(tally_counter_sum(&ctr[k])), expect);
		{
			/* Quiescent, before any fold_all: within the bound. */
			tally_sword d = tally__to_signed(expect - U(tally_counter_read(&ctr[k])));
			CHECK(d < tally_counter_error_bound(&ctr[k]) &&
				      d > -tally_counter_error_bound(&ctr[k]),
			      "counter %d: sum - read = %lld, bound %lld", k, (long long)d,
			      (long long)tally_counter_error_bound(&ctr[k]));
		}
		tally_counter_fold_all(&ctr[k]);
		CHECK_EQ(U(tally_counter_read(&ctr[k])), expect);
		CHECK_EQ(U(tally_counter_sum(&ctr[k])), expect);
		CHECK_EQ(tally_counter_compare(&ctr[k], tally__to_signed(expect)), 0);
		if (tally__to_signed(expect) < TALLY_SWORD_MAX)
			CHECK_EQ(tally_counter_compare(&ctr[k], tally__to_signed(expect) + 1), -1);
		if (tally__to_signed(expect) > TALLY_SWORD_MIN)
			CHECK_EQ(tally_counter_compare(&ctr[k], tally__to_signed(expect) - 1), 1);
	}
	{
		long long expect = 0;
		tally_sword r = tally_counter_read(&mono), s = tally_counter_sum(&mono);
		for (int i = 0; i < NWRITERS; i++)
			expect += w[i].mono_total;
		CHECK_EQ(s, expect);
		CHECK(s - r >= 0 && s - r < tally_counter_error_bound(&mono),
		      "quiescent: sum %lld - read %lld beyond the bound %lld", (long long)s,
		      (long long)r, (long long)tally_counter_error_bound(&mono));
		tally_counter_fold_all(&mono);
		CHECK_EQ(tally_counter_read(&mono), expect);
		for (int e = 0; e < NEVENTS; e++) {
			tally_uword es = tally_counter_sum_monotonic(&event[e]);
			tally_uword er = tally_counter_read_monotonic(&event[e]) - TALLY_MONOTONIC_BIAS;
			CHECK_EQ(es, event_start[e] + U(expect));
			CHECK(tally_delta(er, es) < U(tally_counter_error_bound(&event[e])),
			      "event %d quiescent: sum %llu - read %llu beyond the bound", e,
			      (unsigned long long)es, (unsigned long long)er);
			tally_counter_fold_all(&event[e]);
			CHECK_EQ(tally_counter_read_monotonic(&event[e]) - TALLY_MONOTONIC_BIAS, es);
			if (expect > 20000)
				printf("stress_counter: event counter %d crossed 2^%d\n", e,
				       e == 0 ? TALLY_WORD_BITS : TALLY_WORD_BITS - 1);
		}
	}
	for (int k = 0; k < NCOUNTERS; k++)
		tally_counter_destroy(&ctr[k]);
	tally_counter_destroy(&mono);
	for (int e = 0; e < NEVENTS; e++)
		tally_counter_destroy(&event[e]);

	printf("stress_counter: %.1f s, %d writers, %d readers: %llu adds, %llu reader rounds\n",
	       secs, NWRITERS, NREADERS, wops, rops);
	return harness_exit("stress_counter");
}
