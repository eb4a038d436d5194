/*
 * examples/reclaim/report.h - the demo's repeats (summary.c) and what it
 * prints of them (report.c): the workload and lock tables, the change per
 * lock site as the median and range over the repeats, a verdict, or the
 * same as JSON.
 */
#ifndef RECLAIM_REPORT_H
#define RECLAIM_REPORT_H

#include "model.h"

#include <stddef.h>

#define MAX_REPEAT 1000u
#define SITE_TOTAL NR_SITES           /* the total lock wait, after the sites */
#define SITE_SHORT (NR_SITES + 1)      /* the total of the waits under LONG_WAIT_NS */

extern const char *const mode_name[NR_MODES];

struct demo {
	struct model_config cfg;    /* events: per producer, over all repeats */
	int ran[NR_MODES];
	unsigned repeat;            /* repeats run (each: both modes, in turn) */
	struct model_result sum[NR_MODES]; /* counts added up over the repeats;
					      final costs of the last */
	/* wait per repeat, per mode, per site, in total, in short waits */
	uint64_t wait_ns[MAX_REPEAT][NR_MODES][NR_SITES + 2];
	/* contended acquisitions per repeat, per mode, every site together:
	 * how often a lock was found held, whatever the wait then cost */
	uint64_t contended[MAX_REPEAT][NR_MODES];
};

/* The change of one site's wait (vmstat vs legacy, percent) over the
 * repeats where legacy waited at all: n of them, the median, the range,
 * and a 95% confidence interval of the median [lo, hi]: the order
 * statistics k and n + 1 - k (1-based) for the largest k with
 * P(Binomial(n, 1/2) < k) <= 2.5% (the range up to n = 8). */
struct change {
	unsigned n;
	double median, min, max;
	double lo, hi;
};

/* Add one run's counts (repeat r, its mode) to the demo. */
void demo_add(struct demo *d, unsigned r, const struct model_result *one);
void site_change(const struct demo *d, int site, struct change *c);
/* The same for the contended acquisitions of every site together. */
void contended_change(const struct demo *d, struct change *c);
/* One line: did the total lock wait fall, by how much, how steadily. */
void verdict(const struct demo *d, char *buf, size_t len);
void print_tables(const struct demo *d);
void print_json(const struct demo *d);

#endif /* RECLAIM_REPORT_H */
