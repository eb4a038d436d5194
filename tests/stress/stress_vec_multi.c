/*
 * Stress test of tally_vec's multi-item updates, snapshots and reset: the
 * memcached case. Writers count each "get" as one multi-item update,
 * cmd_get + 1 with get_hits + 1 or get_misses + 1 (memcached does both
 * under one lock), and add byte counts (16..16384) to a byte counter with
 * a per-item threshold and to an exact-only one, with single updates.
 * More threads than cores, so updaters are preempted mid-update. Only
 * the items that take part in multi-item updates have banks
 * (TALLY_VEC_ITEM_MULTI; bytes_read has none). Connections: an open is
 * one multi-item update, total_connections + 1 with curr_connections + 1
 * (a gauge, TALLY_VEC_ITEM_GAUGE), a close closed_connections + 1 with
 * curr_connections - 1; curr_bytes is a gauge too.
 *
 * Checked during the run:
 *  - every snapshot (raw, and since reset) has
 *    cmd_get == get_hits + get_misses: a multi-item update is seen whole
 *    or not at all;
 *  - raw snapshots never go back (cmd_get, hits, misses);
 *  - each reset's baseline of cmd_get lies between the gets completed
 *    before the reset was called and those started before it returned
 *    (nothing lost, nothing counted twice);
 *  - resets leave the gauges alone, at one cut with the counters: every
 *    since-reset snapshot has curr_connections == (total_connections +
 *    its baseline) - (closed_connections + its baseline), and no reset
 *    gives a gauge a baseline.
 * At the end (quiescent): every item's raw value equals the sum of every
 * update to the last unit, and baseline + since-reset value = raw value.
 *
 * STRESS_VEC_MULTI_SPLIT=1 makes the writers count a get as two single
 * updates instead (what a program without multi-item updates does): the
 * first check must then fail, which shows it can. Not a registered test.
 * STRESS_VEC_MULTI_RESET_GAUGES=1 leaves out TALLY_VEC_ITEM_GAUGE, so
 * resets reset the gauges (what every reset did before the vector knew
 * kinds): the gauge check must then fail. Not a registered test either.
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

enum {
	CMD_GET,
	GET_HITS,
	GET_MISSES,
	BYTES_READ,
	CURR_BYTES,
	CMD_SET,
	TOTAL_CONNS,
	CLOSED_CONNS,
	CURR_CONNS,
	NR_ITEMS
};

static const char *const names[NR_ITEMS] = {
	"cmd_get", "get_hits",          "get_misses",         "bytes_read",      "curr_bytes",
	"cmd_set", "total_connections", "closed_connections", "curr_connections"};
/* bytes_read: ~100x the mean delta; curr_bytes: never folds. */
static const int thresholds[NR_ITEMS] = {0, 0, 0, 800000, TALLY_VEC_EXACT, 0, 0, 0, 0};
#define M TALLY_VEC_ITEM_MULTI
#define G TALLY_VEC_ITEM_GAUGE
static unsigned char item_flags[NR_ITEMS] = {M, M, M, 0, M | G, M, M, M, M | G};

static struct tally_vec vec;
static int stop, split;

struct writer {
	pthread_t tid;
	int id;
	long long total[NR_ITEMS];
	/* Gets started / completed, published for the resetter. */
	unsigned long long started, completed;
	unsigned long long ops;
};

static void *writer_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
	struct harness_rng rng = {0x5eedu + (uint64_t)w->id * 7919u};
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 64; i++) {
			uint64_t r = harness_next(&rng);
			unsigned hit = (r & 3) != 0 ? GET_HITS : GET_MISSES;
			long long bytes = 16 + (long long)((r >> 8) % 16369);
			/* The store of started comes before the update's adds,
			 * the store of completed after they returned. */
			__atomic_store_n(&w->started, w->started + 1, __ATOMIC_RELEASE);
			if (!split) {
				struct tally_vec_delta d[2] = {{CMD_GET, 1}, {hit, 1}};
				CHECK_EQ(tally_vec_mod_multi(&vec, d, 2), 0);
			} else {
				CHECK_EQ(tally_vec_inc(&vec, CMD_GET), 0);
				CHECK_EQ(tally_vec_inc(&vec, hit), 0);
			}
			__atomic_store_n(&w->completed, w->completed + 1, __ATOMIC_RELEASE);
			w->total[CMD_GET]++;
			w->total[hit]++;
			if (hit == GET_HITS) {
				CHECK_EQ(tally_vec_mod(&vec, BYTES_READ, (tally_sword)bytes), 0);
				w->total[BYTES_READ] += bytes;
			}
			if ((r >> 40) % 4 == 0) {
				/* a set: bytes come and go */
				long long d = (r >> 42) & 1 ? bytes : -bytes;
				struct tally_vec_delta s[2] = {{CMD_SET, 1}, {CURR_BYTES, (tally_sword)d}};
				CHECK_EQ(tally_vec_mod_multi(&vec, s, 2), 0);
				w->total[CMD_SET]++;
				w->total[CURR_BYTES] += d;
			}
			if ((r >> 44) % 8 == 0) {
				/* a connection opens, or one of this writer's closes */
				int close = (r >> 47) & 1 && w->total[CURR_CONNS] > 0;
				struct tally_vec_delta c[2] = {
					{close ? CLOSED_CONNS : TOTAL_CONNS, 1},
					{CURR_CONNS, close ? -1 : 1}};
				CHECK_EQ(tally_vec_mod_multi(&vec, c, 2), 0);
				w->total[close ? CLOSED_CONNS : TOTAL_CONNS]++;
				w->total[CURR_CONNS] += close ? -1 : 1;
			}
		}
		w->ops += 64;
	}
	return NULL;
}

static unsigned long long rounds[2], resets, mismatches, gauge_mismatches;

/* The gauge at one cut with its counters, since-reset values s: the
 * counters' baselines added back (only reader_reset resets: they are the
 * last reset's), the gauge's own value taken as it is. */
static void check_conns(const tally_uword *s)
{
	tally_uword total = s[TOTAL_CONNS] + tally__load(&vec.tally__baseline[TOTAL_CONNS]);
	tally_uword closed = s[CLOSED_CONNS] + tally__load(&vec.tally__baseline[CLOSED_CONNS]);
	if (s[CURR_CONNS] != total - closed) {
		if (__atomic_add_fetch(&gauge_mismatches, 1, __ATOMIC_RELAXED) <= 5)
			CHECK(0, "since-reset snapshot: curr_connections %lld != total %llu - "
				 "closed %llu",
			      (long long)tally__to_signed(s[CURR_CONNS]), (unsigned long long)total,
			      (unsigned long long)closed);
		else
			__atomic_fetch_add(&harness_failures, 1, __ATOMIC_RELAXED);
	}
}

static void check_gets(const tally_uword *s, const char *what)
{
	if (s[CMD_GET] != s[GET_HITS] + s[GET_MISSES]) {
		/* Print the first few; count every one as a failure. */
		if (__atomic_add_fetch(&mismatches, 1, __ATOMIC_RELAXED) <= 5)
			CHECK(0, "%s snapshot: cmd_get %llu != get_hits %llu + get_misses %llu",
			      what, (unsigned long long)s[CMD_GET],
			      (unsigned long long)s[GET_HITS], (unsigned long long)s[GET_MISSES]);
		else
			__atomic_fetch_add(&harness_failures, 1, __ATOMIC_RELAXED);
	}
}

/* Reader 0: raw snapshots, and each item's O(1) and exact readers. */
static void *reader_raw(void *arg)
{
	tally_uword last[NR_ITEMS] = {0}, s[NR_ITEMS];
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		CHECK_EQ(tally_vec_snapshot(&vec, s, NR_ITEMS), 0);
		check_gets(s, "raw");
		for (unsigned i = CMD_GET; i <= GET_MISSES; i++) {
			CHECK(s[i] >= last[i], "raw item %u went back: %llu after %llu", i,
			      (unsigned long long)s[i], (unsigned long long)last[i]);
			last[i] = s[i];
		}
		for (unsigned i = 0; i < NR_ITEMS; i++) {
			(void)tally_vec_read(&vec, i);
			(void)tally_vec_read_monotonic(&vec, i);
			(void)tally_vec_sum(&vec, i);
		}
		rounds[0]++;
	}
	return NULL;
}

/* Reader 1: since-reset snapshots, resets, folds. */
static void *reader_reset(void *arg)
{
	struct writer *w = (struct writer *)arg;
	tally_uword s[NR_ITEMS];
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		CHECK_EQ(tally_vec_snapshot_since_reset(&vec, s, NR_ITEMS), 0);
		check_gets(s, "since-reset");
		check_conns(s);
		if (rounds[1] % 16 == 0) {
			unsigned long long before = 0, after = 0;
			tally_uword base;
			for (int j = 0; j < NWRITERS; j++)
				before += __atomic_load_n(&w[j].completed, __ATOMIC_ACQUIRE);
			CHECK_EQ(tally_vec_reset(&vec), 0);
			for (int j = 0; j < NWRITERS; j++)
				after += __atomic_load_n(&w[j].started, __ATOMIC_ACQUIRE);
			/* Only this thread resets: the baseline is the cut's. */
			base = tally__load(&vec.tally__baseline[CMD_GET]);
			if (!split)
				CHECK(U(before) <= base && base <= U(after),
				      "reset's cmd_get baseline %llu outside [%llu, %llu]",
				      (unsigned long long)base, before, after);
			if (item_flags[CURR_CONNS] & G)
				CHECK(!tally__load(&vec.tally__baseline[CURR_CONNS]) &&
					      !tally__load(&vec.tally__baseline[CURR_BYTES]),
				      "a reset gave a gauge a baseline");
			resets++;
		}
		if (rounds[1] % 5 == 0)
			tally_vec_fold(&vec);
		rounds[1]++;
	}
	return NULL;
}

int main(void)
{
	struct writer w[NWRITERS];
	pthread_t rd[2];
	double secs = harness_seconds();
	unsigned long long ops = 0;
	struct tally_vec_opts o = {.nr_items = NR_ITEMS,
				   .thresholds = thresholds,
				   .names = names,
				   .item_flags = item_flags};
	tally_uword raw[NR_ITEMS], since[NR_ITEMS];
	const char *e = getenv("STRESS_VEC_MULTI_SPLIT");
	const char *g = getenv("STRESS_VEC_MULTI_RESET_GAUGES");

	split = e && *e == '1';
	if (g && *g == '1') {
		item_flags[CURR_BYTES] &= (unsigned char)~G;
		item_flags[CURR_CONNS] &= (unsigned char)~G;
	}
	CHECK_EQ(tally_vec_init_opts(&vec, &o), 0);
	memset(w, 0, sizeof(w));
	for (int i = 0; i < NWRITERS; i++) {
		w[i].id = i;
		if (pthread_create(&w[i].tid, NULL, writer_main, &w[i]))
			return fprintf(stderr, "pthread_create failed\n"), 1;
	}
	if (pthread_create(&rd[0], NULL, reader_raw, NULL) ||
	    pthread_create(&rd[1], NULL, reader_reset, w))
		return fprintf(stderr, "pthread_create failed\n"), 1;
	usleep((useconds_t)(secs * 1e6));
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NWRITERS; i++) {
		pthread_join(w[i].tid, NULL);
		ops += w[i].ops;
	}
	pthread_join(rd[0], NULL);
	pthread_join(rd[1], NULL);

	/* Quiescent: exact to the last unit. */
	CHECK_EQ(tally_vec_snapshot(&vec, raw, NR_ITEMS), 0);
	CHECK_EQ(tally_vec_snapshot_since_reset(&vec, since, NR_ITEMS), 0);
	for (unsigned i = 0; i < NR_ITEMS; i++) {
		tally_uword expect = 0;
		for (int j = 0; j < NWRITERS; j++)
			expect += U(w[j].total[i]);
		CHECK(raw[i] == expect, "item %s: raw %llu, expected %llu", names[i],
		      (unsigned long long)raw[i], (unsigned long long)expect);
		CHECK_EQ(tally_vec_sum(&vec, i), since[i]);
		CHECK_EQ(since[i] + tally__load(&vec.tally__baseline[i]), raw[i]);
		CHECK(!strcmp(tally_vec_item_name(&vec, i), names[i]), "name %u", i);
	}
	check_gets(since, "final since-reset");
	check_conns(since);
	if (item_flags[CURR_CONNS] & G) {
		CHECK_EQ(since[CURR_CONNS], raw[CURR_CONNS]);
		CHECK_EQ(since[CURR_BYTES], raw[CURR_BYTES]);
	}
	CHECK(!tally_vec_item_flags(&vec, BYTES_READ), "bytes_read has banks");
	tally_vec_fold(&vec);
	for (unsigned i = 0; i < NR_ITEMS; i++)
		CHECK_EQ(tally_vec_read_monotonic(&vec, i), raw[i] + TALLY_MONOTONIC_BIAS);
	tally_vec_destroy(&vec);

	printf("stress_vec_multi%s%s: %.1f s, %d writers: %llu gets, %llu raw and %llu "
	       "since-reset snapshots, %llu resets, %llu mismatches, %llu gauge mismatches\n",
	       split ? " (split updates)" : "", item_flags[CURR_CONNS] & G ? "" : " (gauges reset)",
	       secs, NWRITERS, ops, rounds[0], rounds[1], resets, mismatches, gauge_mismatches);
	return harness_exit("stress_vec_multi");
}
