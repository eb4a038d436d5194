/*
 * stress_cost: concurrent folds, notes and reads of tally_cost.
 *
 * - Producers bump four shared monotonic inputs (anon/file rotations and
 *   IO), as vmstat counters would be bumped.
 * - Folders fold accumulator A under its cost lock with inputs read under
 *   the lock and a random LRU size (often small: heavy decay), logging
 *   (order taken under the lock, inputs, LRU size, result). Afterwards the
 *   log is sorted by that order and replayed on a fresh accumulator by one
 *   thread: every concurrent result and the final state must equal the
 *   sequential replay (the folds are linearisable in lock order).
 * - The same folders fold accumulator B with equal inputs on both sides,
 *   so anon == file after every fold; readers check tally_cost_read never
 *   returns a pair that differs (a torn read across a fold).
 * - Folders also fold accumulator C with an LRU so large nothing decays;
 *   at the end, after a last fold, C holds exactly io * 32 + rotations of
 *   every input bumped (every delta accounted once, none twice).
 * - Noters add known weights to accumulator D concurrently (tally_cost_note
 *   takes the cost lock); its final counts equal the sums of the weights.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <string.h>
#include <tally/cost.h>

enum { PRODUCERS = 2, FOLDERS = 3, READERS = 1, NOTERS = 2, LOG_MAX = 100000 };

/* Producers stop here so that C's totals stay below a 32-bit word / 4. */
#define ROT_CAP ((tally_uword)1 << 22)
#define IO_CAP ((tally_uword)1 << 20)

static tally_uword in_rot[2], in_io[2]; /* the shared monotonic inputs */
static struct tally_cost A, B, C, D;
static unsigned long long order; /* guarded by A's cost lock */
static int stop;

struct rec {
	unsigned long long order;
	struct tally_cost_input in[2];
	tally_uword lru, out[2];
};

struct folder {
	struct harness_rng rng;
	struct rec *log;
	size_t n;
};

static void *producer(void *arg)
{
	struct harness_rng r = {(uint64_t)(uintptr_t)arg};
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int side = (int)(harness_next(&r) & 1);
		if (__atomic_load_n(&in_rot[side], __ATOMIC_RELAXED) < ROT_CAP)
			__atomic_add_fetch(&in_rot[side], (tally_uword)(harness_next(&r) % 5),
					   __ATOMIC_RELAXED);
		if (__atomic_load_n(&in_io[side], __ATOMIC_RELAXED) < IO_CAP)
			__atomic_add_fetch(&in_io[side], (tally_uword)(harness_next(&r) % 2),
					   __ATOMIC_RELAXED);
	}
	return NULL;
}

static void read_inputs(struct tally_cost_input in[2])
{
	for (int i = 0; i < 2; i++) {
		in[i].rotated = __atomic_load_n(&in_rot[i], __ATOMIC_RELAXED);
		in[i].io = __atomic_load_n(&in_io[i], __ATOMIC_RELAXED);
	}
}

static tally_uword random_lru(struct harness_rng *r)
{
	switch (harness_next(r) % 4) {
	case 0: return (tally_uword)(harness_next(r) % 16);
	case 1: return (tally_uword)(harness_next(r) % 100000);
	case 2: return (tally_uword)harness_next(r);
	default: return TALLY_UWORD_MAX;
	}
}

static void *folder(void *arg)
{
	struct folder *f = (struct folder *)arg;
	tally_uword out[2];
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && f->n < LOG_MAX) {
		struct rec *r = &f->log[f->n++];
		r->lru = random_lru(&f->rng);
		tally_cost_lock(&A);
		read_inputs(r->in); /* under the lock: never older than the last fold's */
		r->order = order++;
		tally_cost_fold_locked(&A, r->in, r->lru, r->out);
		tally_cost_unlock(&A);

		struct tally_cost_input same[2];
		tally_cost_lock(&B);
		read_inputs(same);
		same[1] = same[0];
		tally_cost_fold_locked(&B, same, random_lru(&f->rng), out);
		tally_cost_unlock(&B);
		if (out[0] != out[1]) {
			fprintf(stderr, "B: fold returned %llu != %llu\n", (unsigned long long)out[0],
				(unsigned long long)out[1]);
			__atomic_store_n(&stop, 2, __ATOMIC_RELAXED);
		}

		struct tally_cost_input cin[2];
		tally_cost_lock(&C);
		read_inputs(cin);
		tally_cost_fold_locked(&C, cin, TALLY_UWORD_MAX, out);
		tally_cost_unlock(&C);
	}
	return NULL;
}

static unsigned long long torn;

static void *reader(void *arg)
{
	(void)arg;
	tally_uword v[2];
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		tally_cost_read(&B, v);
		if (v[0] != v[1])
			torn++;
		struct tally_cost_input last[2];
		tally_cost_last(&B, last);
		if (last[0].rotated != last[1].rotated || last[0].io != last[1].io)
			torn++;
	}
	return NULL;
}

static tally_uword noted[NOTERS][2];

static void *noter(void *arg)
{
	int id = (int)(uintptr_t)arg;
	struct harness_rng r = {1000u + (uint64_t)id};
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int side = (int)(harness_next(&r) & 1);
		tally_uword nio = (tally_uword)(harness_next(&r) % 3);
		tally_uword nrot = (tally_uword)(harness_next(&r) % 7);
		/* Bounded: the sum stays far below TALLY_UWORD_MAX / 4. */
		if (noted[id][side] > ((tally_uword)1 << 26))
			continue;
		tally_cost_note(&D, side, nio, nrot, TALLY_UWORD_MAX);
		noted[id][side] += nio * 32u + nrot;
	}
	return NULL;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = (const struct rec *)a, *y = (const struct rec *)b;
	return x->order < y->order ? -1 : x->order > y->order;
}

int main(void)
{
	pthread_t p[PRODUCERS], f[FOLDERS], rd[READERS], nt[NOTERS];
	struct folder fs[FOLDERS];
	double secs = harness_seconds();

	tally_cost_init(&A);
	tally_cost_init(&B);
	tally_cost_init(&C);
	tally_cost_init(&D);
	for (int i = 0; i < FOLDERS; i++) {
		fs[i].rng.s = 77u + (uint64_t)i;
		fs[i].log = (struct rec *)calloc(LOG_MAX, sizeof(struct rec));
		fs[i].n = 0;
		if (!fs[i].log)
			return 2;
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_create(&p[i], NULL, producer, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < FOLDERS; i++)
		pthread_create(&f[i], NULL, folder, &fs[i]);
	for (int i = 0; i < READERS; i++)
		pthread_create(&rd[i], NULL, reader, NULL);
	for (int i = 0; i < NOTERS; i++)
		pthread_create(&nt[i], NULL, noter, (void *)(uintptr_t)i);

	double t0 = harness_now();
	while (harness_now() - t0 < secs && !__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	if (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(p[i], NULL);
	for (int i = 0; i < FOLDERS; i++)
		pthread_join(f[i], NULL);
	for (int i = 0; i < READERS; i++)
		pthread_join(rd[i], NULL);
	for (int i = 0; i < NOTERS; i++)
		pthread_join(nt[i], NULL);
	CHECK(__atomic_load_n(&stop, __ATOMIC_RELAXED) == 1, "a fold of B returned a torn pair");
	CHECK_EQ(torn, 0);

	/* A: replay the log in lock order. */
	size_t total = 0;
	for (int i = 0; i < FOLDERS; i++)
		total += fs[i].n;
	struct rec *all = (struct rec *)malloc((total ? total : 1) * sizeof(*all));
	if (!all)
		return 2;
	total = 0;
	for (int i = 0; i < FOLDERS; i++) {
		memcpy(all + total, fs[i].log, fs[i].n * sizeof(*all));
		total += fs[i].n;
	}
	qsort(all, total, sizeof(*all), cmp_rec);
	struct tally_cost replay;
	tally_cost_init(&replay);
	size_t bad = 0, decayed = 0;
	for (size_t k = 0; k < total; k++) {
		tally_uword out[2];
		CHECK_EQ(all[k].order, k);
		tally_cost_fold(&replay, all[k].in, all[k].lru, out);
		if (out[0] != all[k].out[0] || out[1] != all[k].out[1])
			bad++;
		if (all[k].lru < 16)
			decayed++;
	}
	CHECK_EQ(bad, 0);
	tally_uword ra[2], rr[2];
	tally_cost_read(&A, ra);
	tally_cost_read(&replay, rr);
	CHECK(ra[0] == rr[0] && ra[1] == rr[1], "A's final state differs from the replay");

	/* C: one last fold sees the final inputs; nothing decayed. */
	struct tally_cost_input fin[2];
	tally_uword c[2];
	read_inputs(fin);
	tally_cost_fold(&C, fin, TALLY_UWORD_MAX, c);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(c[i], (tally_uword)(fin[i].io * 32u + fin[i].rotated));

	/* D: every note accounted. */
	tally_uword d[2], want[2] = {0, 0};
	for (int i = 0; i < NOTERS; i++) {
		want[0] += noted[i][0];
		want[1] += noted[i][1];
	}
	tally_cost_read(&D, d);
	CHECK_EQ(d[0], want[0]);
	CHECK_EQ(d[1], want[1]);

	printf("stress_cost: %zu folds replayed (%zu with lrusize < 16), inputs rot %llu/%llu "
	       "io %llu/%llu, notes %llu/%llu\n",
	       total, decayed, (unsigned long long)fin[0].rotated,
	       (unsigned long long)fin[1].rotated, (unsigned long long)fin[0].io,
	       (unsigned long long)fin[1].io, (unsigned long long)want[0],
	       (unsigned long long)want[1]);
	CHECK(total > 100, "too few folds: %zu", total);
	for (int i = 0; i < FOLDERS; i++)
		free(fs[i].log);
	free(all);
	return harness_exit("stress_cost");
}
