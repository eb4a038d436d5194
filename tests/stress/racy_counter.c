/*
 * A deliberately racy program: two threads increment one plain, non-atomic
 * shared counter. It proves the TSan harness works: built only in the TSan
 * trees, registered WILL_FAIL, and TSAN_OPTIONS=halt_on_error=1 makes the
 * race a non-zero exit. Without TSan it would run to completion (and
 * usually print a total below the expected one: lost updates).
 */
#include <pthread.h>
#include <stdio.h>

#define ITERS 1000000

/* volatile: every increment stays a separate load and store, so the race
 * is real and cannot be folded into one add per thread. */
static volatile long shared_count;
static pthread_barrier_t start;

static void *bump(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start); /* run the two loops at the same time */
	for (long i = 0; i < ITERS; i++)
		shared_count = shared_count + 1; /* the race */
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	pthread_barrier_init(&start, NULL, 2);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, bump, NULL))
			return fprintf(stderr, "pthread_create failed\n"), 2;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	printf("racy_counter: %ld of %ld increments survived\n", (long)shared_count,
	       2L * ITERS);
	return 0;
}
