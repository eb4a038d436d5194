/*
 * Stress test of tally_vec: writers mod/inc/dec random items while readers
 * read (clamped, monotonic, exact) and fold concurrently. More threads than
 * cores, so threads share CPU slots and get preempted mid-update.
 *
 * At the end every item's exact value must equal the sum of every update,
 * to the last unit (each writer keeps its own running totals), and after
 * fold() the monotonic and clamped readers agree with it.
 *
 * Items with a known direction give invariants that must hold during the
 * run, whatever the interleaving (g: the global, e: a later exact read):
 *   GROW (mod by 0..4 only):  g and e never go back; g <= e
 *   INC  (inc only):          e never goes back; g <= e + slots * t/2
 *   DEC  (dec only):          e never goes up;   g >= e - slots * t/2
 * (inc/dec overstep by t/2 per slot; mod never oversteps.) The third vec
 * has per-item thresholds, with items that never fold (their "global" is
 * the exact value), and multi-item banks beside the single-item words.
 *
 * TALLY_STRESS_SECONDS sets the run time (default 2).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <tally/vec.h>

#define U(x) ((tally_uword)(x))
#define NWRITERS 4
#define NREADERS 2
#define NVECS 3
#define NITEMS 8
#define CHUNK 256

enum { WALK = 0, GROW = 1, INC = 2, DEC = 3 }; /* items 4..7: big walks */

static struct tally_vec vec[NVECS];
static const int thresholds[NVECS] = {4, 0, 0}; /* small; vmstat's default */
/* vec 2: per-item thresholds, two items that never fold, multi-item banks. */
static const int item_thresholds[NITEMS] = {TALLY_VEC_EXACT, 1000, 7, TALLY_VEC_EXACT,
					    100000, TALLY_VEC_EXACT, 0, 50};
static long long cap;                         /* per writer, GROW/INC/DEC */
static int stop;

struct writer {
	pthread_t tid;
	int id;
	long long total[NVECS][NITEMS];
	unsigned long long ops;
};

static void *writer_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
	struct harness_rng rng = {0xabcdu + (uint64_t)w->id * 104729u};
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < CHUNK; i++) {
			uint64_t r = harness_next(&rng);
			int k = (int)(r % NVECS);
			unsigned item = (unsigned)((r >> 8) % NITEMS);
			struct tally_vec *v = &vec[k];
			long long *t = &w->total[k][item];
			int err = 0;
			switch (item) {
			case WALK:
				switch ((r >> 16) % 3) {
				case 0:
					err = tally_vec_inc(v, item);
					*t += 1;
					break;
				case 1:
					err = tally_vec_dec(v, item);
					*t -= 1;
					break;
				default: {
					long long d = harness_range(&rng, -20, 20);
					err = tally_vec_mod(v, item, (tally_sword)d);
					*t += d;
				}
				}
				break;
			case GROW:
				if (*t < cap) {
					long long d = (long long)((r >> 16) % 5);
					err = tally_vec_mod(v, item, (tally_sword)d);
					*t += d;
				}
				break;
			case INC:
				if (*t < cap) {
					err = tally_vec_inc(v, item);
					*t += 1;
				}
				break;
			case DEC:
				if (*t > -cap) {
					err = tally_vec_dec(v, item);
					*t -= 1;
				}
				break;
			default: {
				long long d = harness_range(&rng, -100000, 100000);
				if (k == NVECS - 1 && (r >> 20) & 1) {
					/* a multi-item update, on words beside the
					 * single updates of the same items */
					struct tally_vec_delta m[2] = {{item, (tally_sword)d},
								       {item ^ 1u, (tally_sword)-d}};
					err = tally_vec_mod_multi(v, m, 2);
					w->total[k][item ^ 1u] -= d;
				} else {
					err = tally_vec_mod(v, item, (tally_sword)d);
				}
				*t += d;
			}
			}
			if (err)
				CHECK_EQ(err, 0);
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

/* The global of item without the wrap-early bias, as a signed value. */
static tally_sword global_of(const struct tally_vec *v, unsigned item)
{
	return tally__to_signed(tally_vec_read_monotonic(v, item) - TALLY_MONOTONIC_BIAS);
}

static void *reader_main(void *arg)
{
	struct reader *rd = (struct reader *)arg;
	tally_sword last_g[NVECS] = {0}, last_e[NVECS] = {0};
	tally_sword last_inc[NVECS] = {0}, last_dec[NVECS] = {0};
	unsigned slots = tally__nr_cpu_slots() + 1u;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int k = 0; k < NVECS; k++) {
			struct tally_vec *v = &vec[k];
			tally_sword g, e, over;

			g = global_of(v, GROW);
			e = tally_vec_read_exact(v, GROW);
			CHECK(g >= last_g[k], "vec %d GROW global went back: %lld after %lld", k,
			      (long long)g, (long long)last_g[k]);
			CHECK(e >= last_e[k], "vec %d GROW exact went back: %lld after %lld", k,
			      (long long)e, (long long)last_e[k]);
			CHECK(g <= e, "vec %d GROW global %lld above a later exact %lld", k,
			      (long long)g, (long long)e);
			CHECK(tally_vec_read(v, GROW) >= U(g), "vec %d GROW clamped read went back", k);
			last_g[k] = g;
			last_e[k] = e;

			over = (tally_sword)slots * (tally_clamp(tally_vec_item_threshold(v, INC)) / 2);
			g = global_of(v, INC);
			e = tally_vec_read_exact(v, INC);
			CHECK(e >= last_inc[k], "vec %d INC exact went back", k);
			CHECK(g <= e + over, "vec %d INC global %lld beyond exact %lld + %lld", k,
			      (long long)g, (long long)e, (long long)over);
			last_inc[k] = e;

			over = (tally_sword)slots * (tally_clamp(tally_vec_item_threshold(v, DEC)) / 2);
			g = global_of(v, DEC);
			e = tally_vec_read_exact(v, DEC);
			CHECK(e <= last_dec[k], "vec %d DEC exact went up", k);
			CHECK(g >= e - over, "vec %d DEC global %lld beyond exact %lld - %lld", k,
			      (long long)g, (long long)e, (long long)over);
			last_dec[k] = e;

			/* Every reader on every item, beside the writers. */
			for (unsigned i = 0; i < NITEMS; i++) {
				tally_uword c = tally_vec_read(v, i);
				(void)tally_vec_read_monotonic(v, i);
				(void)tally_vec_read_exact(v, i);
				/* A clamped read is 0 or a non-negative global. */
				CHECK(c <= U(TALLY_SWORD_MAX), "read %llu", (unsigned long long)c);
			}
			if (rd->id == 1)
				tally_vec_fold(v);
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

	for (int k = 0; k < NVECS - 1; k++)
		CHECK_EQ(tally_vec_init(&vec[k], NITEMS, thresholds[k]), 0);
	{
		struct tally_vec_opts o = {NITEMS, 10, item_thresholds, TALLY_VEC_MULTI, NULL, NULL};
		CHECK_EQ(tally_vec_init_opts(&vec[NVECS - 1], &o), 0);
	}
	/* Keep the directed items far from TALLY_SWORD_MAX on 32-bit words. */
	cap = (long long)(TALLY_SWORD_MAX / 4) / NWRITERS;

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

	/* Quiescent: exact values to the last unit, before and after fold. */
	for (int k = 0; k < NVECS; k++) {
		struct tally_vec *v = &vec[k];
		for (unsigned i = 0; i < NITEMS; i++) {
			tally_uword expect = 0;
			for (int j = 0; j < NWRITERS; j++)
				expect += U(w[j].total[k][i]);
			CHECK_EQ(U(tally_vec_read_exact(v, i)), expect);
			/* The O(1) readers' bound (vec.h): (t + P - 1) per slot,
			 * P the largest power of two <= t; three words with MULTI. */
			int t = tally_vec_item_threshold(v, i);
			if (t > 0) {
				tally_sword p = 1, d;
				while (p * 2 <= t)
					p *= 2;
				d = tally__to_signed(tally_vec_read_monotonic(v, i) -
						     TALLY_MONOTONIC_BIAS - expect);
				p = (t + p - 1) * (tally_sword)(tally__nr_cpu_slots() + 1u) *
				    (k == NVECS - 1 ? 3 : 1);
				CHECK(d <= p && d >= -p, "vec %d item %u: global - exact %lld, bound %lld",
				      k, i, (long long)d, (long long)p);
			}
		}
		tally_vec_fold(v);
		for (unsigned i = 0; i < NITEMS; i++) {
			tally_uword expect = 0;
			for (int j = 0; j < NWRITERS; j++)
				expect += U(w[j].total[k][i]);
			CHECK_EQ(U(tally_vec_read_exact(v, i)), expect);
			CHECK_EQ(tally_vec_read_monotonic(v, i), expect + TALLY_MONOTONIC_BIAS);
			CHECK_EQ(tally_vec_read(v, i), tally_clamp(tally__to_signed(expect)));
		}
		tally_vec_destroy(v);
	}

	printf("stress_vec: %.1f s, %d writers, %d readers: %llu updates, %llu reader rounds\n",
	       secs, NWRITERS, NREADERS, wops, rops);
	return harness_exit("stress_vec");
}
