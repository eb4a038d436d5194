/*
 * tally/tally.h - the umbrella header: version, and every public header.
 *
 * tally is a header-only C11 (and C++11) library of lock-free statistics
 * and cost primitives: per-CPU counters folded past a threshold
 * (tally_counter, tally_vec), hierarchical totals flushed on demand
 * (tally_tree / tally_group), wraparound-safe monotonic readers, the
 * lrusize/4 halving cost accumulator (tally_cost) and the isolation
 * throttle (tally_inflight). See README.md for the manual.
 *
 * It includes every public header but the hierarchy, which needs liburcu:
 * include <tally/rstat.h> for tally_tree / tally_group and link
 * liburcu-memb (CMake target tally::rstat, pkg-config module tally-rstat).
 * Everything here needs only the C library and threads.
 */
#ifndef TALLY_TALLY_H
#define TALLY_TALLY_H

#define TALLY_VERSION_MAJOR 0
#define TALLY_VERSION_MINOR 1
#define TALLY_VERSION_PATCH 0
#define TALLY_VERSION_NUMBER                                                   \
	(TALLY_VERSION_MAJOR * 10000 + TALLY_VERSION_MINOR * 100 + TALLY_VERSION_PATCH)

#include <tally/config.h>
#include <tally/arch.h>
#include <tally/monotonic.h>
#include <tally/pcpu.h>
#include <tally/counter.h>
#include <tally/vec.h>
#include <tally/cost.h>
#include <tally/inflight.h>

#endif /* TALLY_TALLY_H */
