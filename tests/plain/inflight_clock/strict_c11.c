/*
 * The strict ISO C half of inflight_clock (built with -std=c11, where glibc
 * hides CLOCK_MONOTONIC, clock_gettime and pthread_condattr_setclock): the
 * same calls as main.c's, compiled with the other feature-test setting.
 */
#include <tally/inflight.h>

#include "inflight_clock.h"

/* The point of this unit: glibc must not show it POSIX. */
#if defined(__GLIBC__) && defined(_POSIX_C_SOURCE)
#  error "build strict_c11.c with -std=c11 (no POSIX feature macros)"
#endif

int strict_init(struct tally_inflight *f, uint64_t wait_ns)
{
	return tally_inflight_init(f, 1, wait_ns);
}

unsigned strict_allowed(struct tally_inflight *f, tally_inflight_evictable_fn ev, void *arg)
{
	static const struct tally_inflight_caller who = {false, false, NULL};
	return tally_inflight_allowed(f, 1u, ev, arg, &who, NULL);
}
