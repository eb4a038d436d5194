/* inflight_clock: the calls each translation unit of the test provides. */
#ifndef INFLIGHT_CLOCK_H
#define INFLIGHT_CLOCK_H

#include <tally/inflight.h>

/* Built with -std=c11 (no POSIX feature macros): strict_c11.c. */
int strict_init(struct tally_inflight *f, uint64_t wait_ns);
unsigned strict_allowed(struct tally_inflight *f, tally_inflight_evictable_fn ev, void *arg);

#endif
