/*
 * Many CPUs on two: built with TALLY_CPU_SLOTS=256 and TALLY_PCPU_MODE=3,
 * so 256 threads act as 256 distinct CPU slots. Checks, through the public
 * calls, that every per-CPU structure is sized for 256 slots and that each
 * thread lands in a slot of its own (no fold happens while each slot stays
 * below its threshold, one happens in every slot once each crosses it), and
 * that the sums are exact. Runs under ThreadSanitizer (the updates are
 * atomic RMWs in this mode).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <tally/counter.h>
#include <tally/vec.h>

#if TALLY_CPU_SLOTS != 256 || TALLY_PCPU_MODE != 3
#  error "build with -DTALLY_CPU_SLOTS=256 -DTALLY_PCPU_MODE=3"
#endif

#define SLOTS 256
#define BATCH 64

static struct tally_counter counter;
static struct tally_vec vec;
static int vec_t; /* the vector's threshold */
static pthread_barrier_t phase;

static void *worker(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	int k;
	tally__thread_slot_set(i);
	/* Phase 1: stay within the threshold in this thread's slot. */
	for (k = 0; k < BATCH - 1; k++)
		tally_counter_add(&counter, 1);
	for (k = 0; k < vec_t; k++)
		tally_vec_mod(&vec, 0, 1);
	pthread_barrier_wait(&phase);
	pthread_barrier_wait(&phase); /* main checks */
	/* Phase 2: one more each: every slot crosses its threshold. */
	tally_counter_add(&counter, 1);
	tally_vec_mod(&vec, 0, 1);
	return NULL;
}

int main(void)
{
	pthread_t th[SLOTS];
	unsigned i;
	CHECK_EQ(tally_cpu_slots(), 256u);
	CHECK_EQ(tally_counter_init(&counter, 0, BATCH), 0);
	CHECK_EQ(tally_vec_init(&vec, 1, 0), 0);
	vec_t = tally_vec_threshold(&vec);
	CHECK(vec_t > 0, "threshold %d", vec_t);
	CHECK_EQ(pthread_barrier_init(&phase, NULL, SLOTS + 1), 0);
	for (i = 0; i < SLOTS; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i), 0);
	pthread_barrier_wait(&phase);
	/* 256 slots each just below their threshold: nothing folded. Threads
	 * sharing a slot would have carried it past and folded. */
	CHECK_EQ(tally_counter_read(&counter), 0);
	CHECK_EQ(tally_counter_sum(&counter), (tally_sword)SLOTS * (BATCH - 1));
	CHECK_EQ(tally_vec_read(&vec, 0), 0u);
	CHECK_EQ(tally_vec_read_exact(&vec, 0), (tally_sword)SLOTS * vec_t);
	pthread_barrier_wait(&phase);
	for (i = 0; i < SLOTS; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
	/* Every slot crossed: the vector folded each slot's t + 1 (vmstat's
	 * mod folds all of x once |x| > t). */
	CHECK_EQ(tally_vec_read(&vec, 0), (tally_uword)SLOTS * (tally_uword)(vec_t + 1));
	CHECK_EQ(tally_vec_read_exact(&vec, 0), (tally_sword)SLOTS * (vec_t + 1));
	CHECK_EQ(tally_counter_sum(&counter), (tally_sword)SLOTS * BATCH);
	CHECK(tally_counter_read(&counter) > 0, "read %lld", (long long)tally_counter_read(&counter));
	tally_counter_fold_all(&counter);
	CHECK_EQ(tally_counter_read(&counter), (tally_sword)SLOTS * BATCH);
	tally_vec_destroy(&vec);
	tally_counter_destroy(&counter);
	pthread_barrier_destroy(&phase);
	return harness_exit("slots");
}
