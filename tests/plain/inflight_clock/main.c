/*
 * inflight_clock: a tally_inflight initialised in one translation unit and
 * waited on in another built with a different feature-test setting keeps
 * its wait bound (a regression test: the clock was once chosen per unit).
 *
 * main.c is built with _GNU_SOURCE (POSIX clocks visible), strict_c11.c
 * with -std=c11 (glibc hides them). The wait's clock is the one the
 * condition variable was created with, so it must be chosen once, at init,
 * and recorded in the object: a unit that picked its own clock for the
 * deadline turned the 20 ms bound into decades (monotonic condition
 * variable, wall-clock deadline) or into no wait at all (the reverse).
 *
 * Each pairing runs tally_inflight_allowed() with every type over-isolated,
 * so it waits exactly once for the bound and gives up: the call must take
 * at least the bound (no early timeout) and return well within 2 s (a hang
 * guard, not a timing test: the call runs in a thread and the program
 * fails if it has not returned after 2 s).
 */
#define _GNU_SOURCE
#include "../../harness.h"

#include <pthread.h>
#include <string.h>
#include <tally/inflight.h>
#include <unistd.h>

#include "inflight_clock.h"

#define WAIT_NS 20000000ull /* 20 ms, the default HZ/50 */
#define GUARD_S 2.0

static tally_uword evictable(void *arg, unsigned type)
{
	(void)arg;
	(void)type;
	return 100; /* threshold 100 / 2 = 50 for a restricted caller */
}

static int gnu_init(struct tally_inflight *f, uint64_t wait_ns)
{
	return tally_inflight_init(f, 1, wait_ns);
}

static unsigned gnu_allowed(struct tally_inflight *f, tally_inflight_evictable_fn ev, void *arg)
{
	static const struct tally_inflight_caller who = {false, false, NULL};
	return tally_inflight_allowed(f, 1u, ev, arg, &who, NULL);
}

struct call {
	struct tally_inflight *f;
	unsigned (*allowed)(struct tally_inflight *, tally_inflight_evictable_fn, void *);
	unsigned result;
	double seconds;
	int done;
};

static void *caller_main(void *arg)
{
	struct call *c = (struct call *)arg;
	double t0 = harness_now();
	c->result = c->allowed(c->f, evictable, NULL);
	c->seconds = harness_now() - t0;
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void pairing(const char *name, int (*init)(struct tally_inflight *, uint64_t),
		    unsigned (*allowed)(struct tally_inflight *, tally_inflight_evictable_fn,
					void *))
{
	struct tally_inflight f;
	struct tally_inflight_stats s;
	struct call c;
	pthread_t th;
	double t0;
	CHECK_EQ(init(&f, WAIT_NS), 0);
	CHECK_EQ(tally_inflight_isolate(&f, 0, 51), 0); /* 51 > 50: over */
	memset(&c, 0, sizeof(c));
	c.f = &f;
	c.allowed = allowed;
	CHECK_EQ(pthread_create(&th, NULL, caller_main, &c), 0);
	t0 = harness_now();
	while (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE)) {
		if (harness_now() - t0 > GUARD_S) {
			printf("inflight_clock: %s: tally_inflight_allowed() still waiting after "
			       "%.0f s (bound %.3f s): the wait's deadline is on another clock\n",
			       name, GUARD_S, WAIT_NS / 1e9);
			fflush(stdout);
			_exit(1); /* the waiter cannot be cancelled */
		}
		usleep(1000);
	}
	pthread_join(th, NULL);
	CHECK(c.result == 0u, "%s: over-isolated, gave up", name);
	CHECK(c.seconds >= WAIT_NS / 1e9 * 0.999, "%s: waited %.6f s, less than the bound %.3f s",
	      name, c.seconds, WAIT_NS / 1e9);
	tally_inflight_stats(&f, &s);
	CHECK(s.throttled == 1 && s.timeouts == 1 && s.gave_up == 1, "%s: one full wait", name);
	printf("inflight_clock: %s: waited %.4f s (bound %.3f s)\n", name, c.seconds, WAIT_NS / 1e9);
	tally_inflight_destroy(&f);
}

int main(void)
{
	pairing("init gnu11, wait gnu11", gnu_init, gnu_allowed);
	pairing("init c11, wait c11", strict_init, strict_allowed);
	pairing("init gnu11, wait c11", gnu_init, strict_allowed);
	pairing("init c11, wait gnu11", strict_init, gnu_allowed);
	return harness_exit("inflight_clock");
}
