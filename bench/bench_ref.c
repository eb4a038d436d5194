/*
 * bench/bench_ref.c - tally_ref, compiled as C: a get and a put at 1, 2 and
 * 4 threads (or TALLY_BENCH_THREADS) beside tally_counter_add in the same
 * binary, and the kill.
 *
 *   ref/counter_add   tally_counter_add(c, 1): the baseline
 *   ref/get_put       tally_ref_get(r) then tally_ref_put(r): two
 *                     items per pair (the target: each within 2x the add)
 *   ref/tryget_put    tally_ref_tryget_live(r) then tally_ref_put(r)
 *   ref/get_put_atomic the same pair on a ref killed first (every get and
 *                     put one atomic RMW on the shared count)
 *   ref/kill          init, one get and put, kill (the membarrier()
 *                     fence and the sum), exit
 * Every case checks the count to the last unit: after the run the ref is
 * killed and must be released by that kill (per-CPU cases) or hold the
 * count it should (atomic).
 */
#include "cbench.h"

#include <tally/counter.h>
#include <tally/ref.h>

#define UNROLL 8

static struct tally_counter ctr;
static struct tally_ref ref;
static int released;

static void release(struct tally_ref *r)
{
	(void)r;
	released++;
}

static int ctr_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	return tally_counter_init(&ctr, 0, 0);
}

static void ctr_teardown(struct cbench_state *s, void *arg)
{
	uint64_t want = cbench_iterations(s) * UNROLL * (uint64_t)cbench_nthreads(s);
	(void)arg;
	cbench_check(s, (uint64_t)tally_counter_sum(&ctr) == want, "counter not exact");
	tally_counter_destroy(&ctr);
}

static void ctr_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL; j++)
				tally_counter_add(&ctr, 1);
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

/* arg: 1 for the atomic case (the ref killed before the run, held by one
 * extra reference so the run's puts never reach 0). */
static int ref_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	released = 0;
	if (tally_ref_init(&ref, release))
		return -1;
	if (arg) {
		tally_ref_get(&ref);
		tally_ref_kill(&ref);
	}
	return 0;
}

static void ref_teardown(struct cbench_state *s, void *arg)
{
	if (arg) {
		cbench_check(s, ref.tally__count == 1u, "atomic count not exact");
		tally_ref_put(&ref);
	} else {
		tally_ref_kill(&ref);
	}
	cbench_check(s, released == 1, "not released exactly once at the end");
	tally_ref_exit(&ref);
}

static void get_put_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL / 2; j++) {
				tally_ref_get(&ref);
				tally_ref_put(&ref);
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

static void tryget_put_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i;
	int ok = 1;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < UNROLL / 2; j++) {
				ok &= tally_ref_tryget_live(&ref);
				tally_ref_put(&ref);
			}
	cbench_check(s, ok, "tryget_live failed on a live ref");
	cbench_items(s, (int64_t)(cbench_iterations(s) * UNROLL));
}

static void kill_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i;
	struct tally_ref r;
	int bad = 0;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++) {
			released = 0;
			bad |= tally_ref_init(&r, release);
			tally_ref_get(&r);
			tally_ref_put(&r);
			tally_ref_kill(&r);
			bad |= released != 1;
			tally_ref_exit(&r);
		}
	cbench_check(s, !bad, "kill did not release");
	cbench_items(s, (int64_t)cbench_iterations(s));
}

CBENCH_INIT(register_ref)
{
	static int atomic = 1;
	cbench_env_threads(cbench_setup(cbench_register("ref/counter_add", ctr_body, NULL),
					ctr_setup, ctr_teardown));
	cbench_env_threads(cbench_setup(cbench_register("ref/get_put", get_put_body, NULL),
					ref_setup, ref_teardown));
	cbench_env_threads(cbench_setup(cbench_register("ref/tryget_put", tryget_put_body, NULL),
					ref_setup, ref_teardown));
	cbench_env_threads(cbench_setup(cbench_register("ref/get_put_atomic", get_put_body,
							&atomic),
					ref_setup, ref_teardown));
	cbench_register("ref/kill", kill_body, NULL);
}
