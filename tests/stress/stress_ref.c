/*
 * Stress test of tally_ref: lookups racing with the kill, round after round.
 * Each round a fresh object (a ref and an alive flag) is published; worker
 * threads (more than cores, so gets and puts are preempted inside their
 * sections) take references with tally_ref_tryget_live(), check the
 * object is alive while they hold one, sometimes take a second with
 * tally_ref_get(), and drop them; after a random moment the owner kills
 * the ref. The workers stop once tryget_live fails.
 *
 * Checked each round: release() runs exactly once; no worker held a
 * reference when it ran (the alive flag it clears is never seen clear by
 * a holder, and no put comes after it); once the workers are done, the
 * count is 0 (every get matched by a put that reached the count). Run
 * also with rseq off (stress_ref_atomic: the ref atomic from the start,
 * where a lookup racing with the kill must not revive a count of 0).
 * TALLY_STRESS_SECONDS sets the run time (default 2).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <unistd.h>
#include <tally/ref.h>

#define NWORKERS 4

struct object {
	struct tally_ref ref;
	int alive;    /* cleared by release() */
	int releases; /* release() calls */
};

static struct object obj;
static unsigned gen, done, stop;
static unsigned long long held_total, rounds;

static void release(struct tally_ref *r)
{
	struct object *o = (struct object *)((char *)r - offsetof(struct object, ref));
	__atomic_store_n(&o->alive, 0, __ATOMIC_RELAXED);
	__atomic_fetch_add(&o->releases, 1, __ATOMIC_RELAXED);
	/* the workers may still look it up: the owner exits it later */
}

static void *worker(void *arg)
{
	struct harness_rng rng = {0x5eedu + (uint64_t)(uintptr_t)arg * 7919u};
	unsigned seen = 0;
	unsigned long long held = 0;
	for (;;) {
		unsigned g;
		while ((g = __atomic_load_n(&gen, __ATOMIC_ACQUIRE)) == seen)
			if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
				goto out;
			else
				sched_yield();
		seen = g;
		while (tally_ref_tryget_live(&obj.ref)) {
			int two = harness_next(&rng) % 4 == 0;
			held++;
			if (two)
				tally_ref_get(&obj.ref);
			CHECK(__atomic_load_n(&obj.alive, __ATOMIC_RELAXED),
			      "round %u: released while a reference is held", g);
			if (two)
				tally_ref_put(&obj.ref);
			tally_ref_put(&obj.ref);
		}
		__atomic_fetch_add(&done, 1, __ATOMIC_ACQ_REL);
	}
out:
	__atomic_fetch_add(&held_total, held, __ATOMIC_RELAXED);
	return NULL;
}

int main(void)
{
	pthread_t t[NWORKERS];
	struct harness_rng rng = {42};
	double end = harness_now() + harness_seconds();
	int percpu = 0;
	for (uintptr_t i = 0; i < NWORKERS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
	while (harness_now() < end) {
		struct timespec ts = {0, (long)(harness_next(&rng) % 2000000)};
		CHECK_EQ(tally_ref_init(&obj.ref, release), 0);
		percpu |= tally_ref_is_percpu(&obj.ref);
		obj.alive = 1;
		obj.releases = 0;
		__atomic_store_n(&done, 0, __ATOMIC_RELAXED);
		__atomic_fetch_add(&gen, 1, __ATOMIC_RELEASE);
		nanosleep(&ts, NULL);
		CHECK_EQ(tally_ref_kill(&obj.ref), 0);
		while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < NWORKERS)
			sched_yield();
		CHECK(obj.releases == 1, "round %llu: %d releases", rounds, obj.releases);
		CHECK(obj.ref.tally__count == 0, "round %llu: count %llu at the end", rounds,
		      (unsigned long long)obj.ref.tally__count);
		tally_ref_exit(&obj.ref); /* no lookup reaches it any more */
		rounds++;
		if (harness_failures > 5)
			break;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(t[i], NULL);
	printf("stress_ref: %s, %llu rounds, %llu references taken by lookups\n",
	       percpu ? "per-CPU" : "atomic", rounds, held_total);
	return harness_exit("stress_ref");
}
