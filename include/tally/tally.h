/**
 * @file
 * tally/tally.h - the umbrella header: the version, and the counters,
 * vectors, monotonic readers, cost and inflight.
 *
 * tally is a header-only C11 (and C++11) library of lock-free statistics
 * and cost primitives: per-CPU counters folded past a threshold
 * (tally_counter, tally_vec), hierarchical totals flushed on demand
 * (tally_tree / tally_group), wraparound-safe monotonic readers, the
 * lrusize/4 halving cost accumulator (tally_cost) and the isolation
 * throttle (tally_inflight). See README.md for the guide; these header
 * comments are the reference.
 *
 * It includes config.h, arch.h, monotonic.h, pcpu.h, counter.h, vec.h,
 * cost.h and inflight.h (and through them os.h and rseq.h). It leaves out:
 *   - <tally/hist.h>, the per-CPU histogram (tally_hist; the C library
 *     only): include it where you record;
 *   - <tally/export.h>, the renderers (Prometheus text, OpenMetrics,
 *     memory.stat text, JSON; the C library only): include it where you
 *     render;
 *   - the hierarchy, which needs liburcu: <tally/rstat.h> (tally_tree /
 *     tally_group) and <tally/export_rstat.h> (trees through an
 *     exporter); link liburcu-memb (CMake target tally::rstat, pkg-config
 *     module tally-rstat);
 *   - <tally/export_hist.h>, histograms through an exporter;
 *   - <tally/serve.h>, the /metrics server (libmicrohttpd: CMake target
 *     tally::serve, pkg-config module tally-serve);
 *   - <tally/ref.h>, per-CPU reference counts (tally_ref);
 *   - <tally/shm.h>, counters shared by processes through a region;
 *   - <tally/utf8.h>, the UTF-8 check the exporter uses.
 */
#ifndef TALLY_TALLY_H
#define TALLY_TALLY_H

/** The major version: incompatible API changes. CMake reads it here. */
#define TALLY_VERSION_MAJOR 0
/** The minor version: compatible additions. */
#define TALLY_VERSION_MINOR 1
/** The patch version: fixes. */
#define TALLY_VERSION_PATCH 0
/** The version as one number, major x 10000 + minor x 100 + patch, for
 * `#if TALLY_VERSION_NUMBER >= ...`. */
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
