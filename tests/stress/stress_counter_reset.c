/*
 * Stress test of tally_counter_sum_and_reset and tally_counter_set beside
 * adds: writers add random deltas while two resetters take the value and
 * reset it, a setter sets a counter of its own, and a reader sums. The
 * threads are stopped and preempted at random points (perturb.h), also
 * inside a reset's cut and while it holds the set lock.
 *
 * One cut: every add is in exactly one of the values the resets returned
 * or the counter afterwards. So at the end, for each counter,
 *   (sum of every value returned) + tally_counter_sum() == initial + adds
 * to the last unit (modular in 2^W: one counter starts just below
 * TALLY_SWORD_MAX and crosses the wrap). During the run, on a counter
 * that only grows from 0:
 *   - tally_counter_sum() is never negative: a sum racing with a reset
 *     sees the value from before it or one since it, never the new offset
 *     with words older than the reset's cut;
 *   - a reset returns at least what a sum by the same thread just before
 *     it saw (one resetter resets this counter; both reset the others);
 * and on the set counter (set to SET_TO again and again, adds >= 0) a sum
 * is never below SET_TO. Once the writers stop, |read - sum| is below the
 * error bound for every counter.
 *
 * TALLY_STRESS_SECONDS sets the run time (default 2).
 */
#define _GNU_SOURCE
#include "harness.h"
#include "perturb.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <tally/counter.h>

#define U(x) ((tally_uword)(x))
#define NWRITERS 3
#define NRESETTERS 2
#define NCOUNTERS 3 /* 0: signed walk, batch 1; 1: grows, default batch; 2: wraps */
#define GROW 1
#define CHUNK 256
#define SET_TO 1000

static struct tally_counter ctr[NCOUNTERS];
static const tally_sword batches[NCOUNTERS] = {1, 0, 1000};
static tally_sword initial[NCOUNTERS];
static struct tally_counter setc; /* set by the setter; adds >= 0 */
static int stop;

struct writer {
	pthread_t tid;
	int id;
	tally_uword total[NCOUNTERS]; /* modular, as the counter */
	unsigned long long ops;
};

static void *writer_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
	struct harness_rng rng = {0x5eedu + (uint64_t)w->id * 7919u};
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < CHUNK; i++) {
			uint64_t r = harness_next(&rng);
			int k = (int)(r % NCOUNTERS);
			long long d = k == GROW ? (long long)((r >> 8) % 4)
						: harness_range(&rng, -3000, 3000);
			tally_counter_add(&ctr[k], (tally_sword)d);
			w->total[k] += (tally_uword)d;
			tally_counter_add(&setc, (tally_sword)((r >> 20) % 4));
		}
		w->ops += CHUNK;
	}
	perturb_unregister();
	return NULL;
}

struct resetter {
	pthread_t tid;
	int id;
	tally_uword got[NCOUNTERS];
	unsigned long long resets;
};

static void *resetter_main(void *arg)
{
	struct resetter *rs = (struct resetter *)arg;
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int k = 0; k < NCOUNTERS; k++) {
			if (k == GROW && rs->id)
				continue;
			tally_sword before = k == GROW ? tally_counter_sum(&ctr[k]) : 0;
			tally_sword v = tally_counter_sum_and_reset(&ctr[k]);
			if (k == GROW)
				CHECK(v >= before, "reset returned %lld below a sum before it %lld",
				      (long long)v, (long long)before);
			rs->got[k] += (tally_uword)v;
		}
		rs->resets++;
	}
	perturb_unregister();
	return NULL;
}

static void *setter_main(void *arg)
{
	unsigned long long *sets = (unsigned long long *)arg;
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		CHECK_EQ(tally_counter_set(&setc, SET_TO), 0);
		++*sets;
	}
	perturb_unregister();
	return NULL;
}

static void *reader_main(void *arg)
{
	unsigned long long *reads = (unsigned long long *)arg;
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		tally_sword g = tally_counter_sum(&ctr[GROW]);
		tally_sword s = tally_counter_sum(&setc);
		CHECK(g >= 0, "growing counter's sum %lld is negative", (long long)g);
		CHECK(s >= SET_TO, "set counter's sum %lld below %d", (long long)s, SET_TO);
		++*reads;
	}
	perturb_unregister();
	return NULL;
}

int main(void)
{
	struct writer w[NWRITERS];
	struct resetter rs[NRESETTERS];
	pthread_t st, rd;
	unsigned long long sets = 0, reads = 0, wops = 0, resets = 0;
	struct perturb_opts po;

	initial[0] = -4242;
	initial[1] = 0;
	initial[2] = TALLY_SWORD_MAX - 30000;
	for (int k = 0; k < NCOUNTERS; k++)
		CHECK_EQ(tally_counter_init(&ctr[k], initial[k], batches[k]), 0);
	CHECK_EQ(tally_counter_init(&setc, SET_TO, 64), 0);

	memset(w, 0, sizeof(w));
	memset(rs, 0, sizeof(rs));
	perturb_init();
	for (int i = 0; i < NWRITERS; i++) {
		w[i].id = i;
		if (pthread_create(&w[i].tid, NULL, writer_main, &w[i]))
			return fprintf(stderr, "pthread_create failed\n"), 1;
	}
	for (int i = 0; i < NRESETTERS; i++)
		if ((rs[i].id = i, pthread_create(&rs[i].tid, NULL, resetter_main, &rs[i])))
			return fprintf(stderr, "pthread_create failed\n"), 1;
	if (pthread_create(&st, NULL, setter_main, &sets) ||
	    pthread_create(&rd, NULL, reader_main, &reads))
		return fprintf(stderr, "pthread_create failed\n"), 1;
	perturb_defaults(&po, -1);
	perturb_start(&po);
	usleep((useconds_t)(harness_seconds() * 1e6));
	perturb_stop();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NWRITERS; i++) {
		pthread_join(w[i].tid, NULL);
		wops += w[i].ops;
	}
	for (int i = 0; i < NRESETTERS; i++) {
		pthread_join(rs[i].tid, NULL);
		resets += rs[i].resets;
	}
	pthread_join(st, NULL);
	pthread_join(rd, NULL);

	for (int k = 0; k < NCOUNTERS; k++) {
		tally_uword want = U(initial[k]), got = U(tally_counter_sum(&ctr[k]));
		tally_sword e = tally_counter_error_bound(&ctr[k]);
		tally_sword diff = tally__to_signed(U(tally_counter_read(&ctr[k])) - got);
		for (int i = 0; i < NWRITERS; i++)
			want += w[i].total[k];
		for (int i = 0; i < NRESETTERS; i++)
			got += rs[i].got[k];
		CHECK(got == want, "counter %d: resets + final sum %llu, adds %llu (off by %lld)", k,
		      (unsigned long long)got, (unsigned long long)want,
		      (long long)tally__to_signed(got - want));
		CHECK(diff < e && diff > -e, "counter %d: |read - sum| = %lld, bound %lld", k,
		      (long long)diff, (long long)e);
		tally_counter_fold_all(&ctr[k]);
		CHECK_EQ(tally_counter_read(&ctr[k]), tally_counter_sum(&ctr[k]));
		tally_counter_destroy(&ctr[k]);
	}
	CHECK(tally_counter_sum(&setc) >= SET_TO, "set counter below %d", SET_TO);
	tally_counter_destroy(&setc);
	printf("stress_counter_reset: %llu adds, %llu resets, %llu sets, %llu sums\n", wops,
	       resets, sets, reads);
	perturb_report("stress_counter_reset");
	CHECK(resets > 0 && sets > 0, "no reset or set ran");
	return harness_exit("stress_counter_reset");
}
