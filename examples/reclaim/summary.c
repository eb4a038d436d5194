/*
 * examples/reclaim/summary.c - the demo's repeats summed up: counts added
 * over the repeats, each lock site's change as the median and range over
 * them (a busy machine makes single runs swing widely), and the verdict.
 */
#define _GNU_SOURCE
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mode_name[NR_MODES] = {"legacy", "vmstat"};

/* The kernel patch's measurement (perf lock, 176 cores): total LRU lock
 * wait 4.23 s -> 1.66 s. */
#define KERNEL_TOTAL_CHANGE_PCT (-61.0)

/* Add run r's counts to sum; the final costs are those of the last run. */
static void accumulate(struct model_result *sum, const struct model_result *r)
{
	sum->mode = r->mode;
	sum->elapsed_ns += r->elapsed_ns;
	for (int s = 0; s < NR_SITES; s++) {
		sum->acquisitions[s] += r->acquisitions[s];
		sum->wait_ns[s] += r->wait_ns[s];
		sum->contended[s] += r->contended[s];
		sum->long_waits[s] += r->long_waits[s];
		sum->long_wait_ns[s] += r->long_wait_ns[s];
		sum->hold_ns[s] += r->hold_ns[s];
		for (int h = 0; h < NR_SITES; h++)
			sum->contended_by[s][h] += r->contended_by[s][h];
	}
	sum->producer_lock_acquisitions += r->producer_lock_acquisitions;
	sum->total_lock_wait_ns += r->total_lock_wait_ns;
	sum->faults += r->faults;
	sum->refaults += r->refaults;
	sum->accesses += r->accesses;
	sum->drains += r->drains;
	sum->passes += r->passes;
	sum->passes_throttled += r->passes_throttled;
	sum->passes_due += r->passes_due;
	sum->scanned += r->scanned;
	sum->reclaimed += r->reclaimed;
	sum->pageouts += r->pageouts;
	sum->rotated += r->rotated;
	sum->deactivated += r->deactivated;
	sum->throttled += r->throttled;
	sum->throttle_woken += r->throttle_woken;
	sum->throttle_timeouts += r->throttle_timeouts;
	sum->throttle_gave_up += r->throttle_gave_up;
	for (int k = 0; k < NR_PROMO_ITEMS; k++)
		sum->promo[k] += r->promo[k];
	sum->promo_syscalls += r->promo_syscalls;
	if (r->promo_max_per_syscall > sum->promo_max_per_syscall)
		sum->promo_max_per_syscall = r->promo_max_per_syscall;
	sum->nr_lruvecs = r->nr_lruvecs;
	memcpy(sum->lruvec, r->lruvec, sizeof(r->lruvec));
}

void demo_add(struct demo *d, unsigned r, const struct model_result *one)
{
	uint64_t *w = d->wait_ns[r][one->mode];
	for (int s = 0; s < NR_SITES; s++)
		w[s] = one->wait_ns[s];
	d->contended[r][one->mode] = 0;
	for (int s = 0; s < NR_SITES; s++)
		d->contended[r][one->mode] += one->contended[s];
	w[SITE_TOTAL] = one->total_lock_wait_ns;
	w[SITE_SHORT] = one->total_lock_wait_ns;
	for (int s = 0; s < NR_SITES; s++)
		w[SITE_SHORT] -= one->long_wait_ns[s];
	if (r == 0)
		d->sum[one->mode] = *one;
	else
		accumulate(&d->sum[one->mode], one);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The largest k >= 1 with P(Binomial(n, 1/2) < k) <= 2.5%, else 1: the
 * sorted values k and n + 1 - k (1-based) bound the median with at least
 * 95% confidence whatever the distribution (the sign test's interval;
 * n = 20: the 6th and the 15th, n = 40: the 14th and the 27th). It is the
 * range up to n = 8, and under 5 repeats even the range holds the median
 * with less than 95% (n = 5: 93.75%). */
static unsigned median_ci_rank(unsigned n)
{
	double p = 1.0, cdf = 0.0; /* p = P(X = j), cdf = P(X <= j) */
	unsigned k = 1;
	for (unsigned i = 0; i < n; i++)
		p *= 0.5;
	for (unsigned j = 0; j < n / 2; j++) {
		cdf += p;
		if (cdf > 0.025)
			break;
		k = j + 1;
		p = p * (double)(n - j) / (double)(j + 1);
	}
	return k;
}

/* The median, range and the median's 95% interval of (after - before) /
 * before over the repeats where before is not 0; stride: the distance
 * between repeats' values. */
static void change_of(const struct demo *d, const uint64_t *before, const uint64_t *after,
		      size_t stride, struct change *c)
{
	static double v[MAX_REPEAT];
	unsigned n = 0, k;
	memset(c, 0, sizeof(*c));
	if (!d->ran[MODE_LEGACY] || !d->ran[MODE_VMSTAT])
		return;
	for (unsigned r = 0; r < d->repeat; r++) {
		double b = (double)before[r * stride];
		double a = (double)after[r * stride];
		if (b > 0)
			v[n++] = (a - b) / b * 100.0;
	}
	if (!n)
		return;
	qsort(v, n, sizeof(v[0]), cmp_double);
	c->n = n;
	c->min = v[0];
	c->max = v[n - 1];
	c->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	k = median_ci_rank(n);
	c->lo = v[k - 1];
	c->hi = v[n - k];
}

void site_change(const struct demo *d, int site, struct change *c)
{
	change_of(d, &d->wait_ns[0][MODE_LEGACY][site], &d->wait_ns[0][MODE_VMSTAT][site],
		  NR_MODES * (NR_SITES + 2), c);
}

void contended_change(const struct demo *d, struct change *c)
{
	change_of(d, &d->contended[0][MODE_LEGACY], &d->contended[0][MODE_VMSTAT], NR_MODES, c);
}

/* How many repeats saw the total wait fall. */
static unsigned total_fell(const struct demo *d)
{
	unsigned k = 0;
	for (unsigned r = 0; r < d->repeat; r++)
		k += d->wait_ns[r][MODE_VMSTAT][SITE_TOTAL] < d->wait_ns[r][MODE_LEGACY][SITE_TOTAL];
	return k;
}

/* One line: did the total lock wait fall, by how much, how surely: the
 * verdict is the median's 95% interval's (below 0: vmstat waits less;
 * above: more), and the interval is wide (noisy) past 30 points. */
void verdict(const struct demo *d, char *buf, size_t len)
{
	struct change c, k;
	unsigned fell = total_fell(d);
	site_change(d, SITE_TOTAL, &c);
	contended_change(d, &k);
	if (!c.n) {
		snprintf(buf, len, "no lock wait measured in legacy mode: nothing to compare");
		return;
	}
	snprintf(buf, len,
		 "%s: total lock wait fell in %u of %u repeats, median %+.0f%% (95%% interval "
		 "%+.0f%% to %+.0f%%; single repeats %+.0f%% to %+.0f%%)%s; contended acquisitions "
		 "%+.0f%% (95%% interval %+.0f%% to %+.0f%%); the kernel patch measured %+.0f%% on "
		 "176 cores",
		 c.hi < 0 ? "vmstat waits less" : c.lo > 0 ? "vmstat waits more" : "no clear change",
		 fell, d->repeat, c.median, c.lo, c.hi, c.min, c.max,
		 c.hi - c.lo > 30 ? ", noisy: more repeats (--repeat) narrow the interval" : "",
		 k.median, k.lo, k.hi, KERNEL_TOTAL_CHANGE_PCT);
}
