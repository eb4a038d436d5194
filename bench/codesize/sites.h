/* bench/codesize/sites.h - the call sites of sites.c. */
#ifndef CODESIZE_SITES_H
#define CODESIZE_SITES_H

#include <tally/counter.h>

#define NR_SITES 100
typedef void site_fn(struct tally_counter *c);
extern site_fn *const sites[NR_SITES];
long site_delta(int i);

#endif
