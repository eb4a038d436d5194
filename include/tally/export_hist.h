/**
 * @file
 * tally/export_hist.h - render a tally_hist through a tally_export as a
 * Prometheus / OpenMetrics histogram (and in JSON and memory.stat text).
 *
 *   struct tally_export_hist_opts o = {1e-9, 0};   // ns recorded, seconds shown
 *   tally_export_add_hist(&e, "request_latency_seconds", "Request latency.", &h, &o);
 *
 * Output for a family named x (exact strings in tests/test_export_hist.c):
 *   TALLY_EXPORT_PROMETHEUS, TALLY_EXPORT_OPENMETRICS:
 *     # HELP x h
 *     # TYPE x histogram
 *     x_bucket{le="0.000000512"} 3     cumulative counts (exact decimals)
 *     ...
 *     x_bucket{le="+Inf"} 10
 *     x_sum 0.0123                     the values' sum, scaled
 *     x_count 10
 *   TALLY_EXPORT_STAT   "x_count 10", "x_sum 0.0123"
 *   TALLY_EXPORT_JSON   {"name":"x","type":"histogram","help":"h","samples":
 *                       [{"labels":{},"count":10,"sum":0.0123,"buckets":
 *                       [{"le":0.000512,"count":3},...,{"le":"+Inf","count":10}]}]}
 *
 * Values are one raw snapshot per render (tally_hist_snapshot_raw(): a
 * reset does not move them, so the exported counts never go back), exact
 * and in one cut: the buckets, _count and _sum agree.
 *
 * Bucket bounds. Every `le` is the upper edge of one of the histogram's
 * buckets (an integer, times the scale), so no bucket is split: a count at
 * le is exactly the observations <= le. Explicit bounds export every
 * bound. Log-linear histograms export the upper edge of every bucket that
 * has an observation and of the bucket just below it (so a quantile
 * interpolated inside a bucket, as Prometheus' histogram_quantile() does,
 * spans that bucket alone), plus the below bucket's (lowest - 1) when it
 * has any; since the counts only grow, the set of bounds only grows. A cap
 * (max_buckets, +Inf included) thins the bounds evenly when there are
 * more: buckets are then merged (never split), and a quantile's error
 * grows to the merged bucket's width.
 *
 * Concurrency: as export.h's (renders are the exporter owner's; the
 * histogram may be recorded into meanwhile). A render takes the
 * histogram's snapshot (its lock; blocking as tally_hist_snapshot()).
 */
#ifndef TALLY_EXPORT_HIST_H
#define TALLY_EXPORT_HIST_H

#include <tally/export.h>
#include <tally/hist.h>

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tally_export_hist_opts - how tally_export_add_hist() shows a
 * histogram.
 * @p scale: exported value = recorded value x scale (1e-9: nanoseconds
 *   recorded, seconds exported, Prometheus' base unit); 0 means 1. Must be
 *   finite and > 0 otherwise.
 * @p max_buckets: most buckets exported, +Inf included: 0 for no cap, else
 *   2..TALLY_HIST_BUCKETS_MAX.
 */
struct tally_export_hist_opts {
	double scale;         /**< exported = recorded x scale; 0 means 1 */
	unsigned max_buckets; /**< most buckets exported, +Inf included; 0: no cap */
};

/* private: a histogram source's state */
struct tally__export_hist {
	struct tally_hist *h;
	struct tally_hist_snap snap;
	double scale;
	unsigned cap;
	unsigned *edges; /* positions whose upper edge is exported (this render) */
	unsigned nr_edges;
};

/* The shortest %g form of v that reads back as v. */
static inline void tally__export_put_double(struct tally__export_sink *k, double v)
{
	char b[40];
	int prec, n = 0;
	for (prec = 1; prec <= 17; prec++) {
		n = snprintf(b, sizeof(b), "%.*g", prec, v);
		if (strtod(b, NULL) == v)
			break;
	}
	tally__export_put(k, b, (size_t)n);
}

/* The k of a scale of 10^-k (k = 0..18), or -1. */
static inline int tally__export_decimal_shift(double scale)
{
	uint64_t p = 1;
	int k;
	for (k = 0; k <= 18; k++, p *= 10u)
		if (scale == 1.0 / (double)p)
			return k;
	return -1;
}

/* v x scale: exactly, in decimal, when the scale is 10^-k (integers stay
 * integers; "0.000512" for 512 ns in seconds); else the shortest %g. */
static inline void tally__export_put_scaled(struct tally__export_sink *k, uint64_t v, double scale)
{
	int shift = tally__export_decimal_shift(scale);
	char d[48];
	int n = 0, i, frac;
	if (shift < 0) {
		tally__export_put_double(k, (double)v * scale);
		return;
	}
	do /* the digits, least significant first */
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n <= shift)
		d[n++] = '0';
	for (i = n - 1; i >= shift; i--)
		tally__export_put(k, &d[i], 1);
	for (frac = 0; frac < shift && d[frac] == '0'; frac++)
		; /* trailing zeros of the fraction */
	if (frac < shift) {
		tally__export_put(k, ".", 1);
		for (i = shift - 1; i >= frac; i--)
			tally__export_put(k, &d[i], 1);
	}
}

/* The exported edges of this render's snapshot. */
static inline void tally__export_hist_edges(struct tally__export_hist *x)
{
	const struct tally_hist_snap *s = &x->snap;
	unsigned j, n = 0, top = s->nr_buckets - 1u; /* top: above, no edge */
	uint64_t lo = 0, hi = 0;
	for (j = 0; j < top; j++) {
		int has = s->tally__l.bounds ? j > 0 : s->counts[j] || s->counts[j + 1u];
		if (has && tally_hist_snap_bucket_range(s, j, &lo, &hi) == 0)
			x->edges[n++] = j;
	}
	if (x->cap && n + 1u > x->cap) {
		/* keep cap - 1 of them, evenly, the last included */
		unsigned m = x->cap - 1u, i;
		for (i = 0; i < m; i++)
			x->edges[i] = x->edges[(unsigned)(((uint64_t)(i + 1u) * n) / m) - 1u];
		n = m;
	}
	x->nr_edges = n;
}

static inline int tally__export_collect_hist(struct tally_export *e,
					     struct tally__export_source *s)
{
	struct tally__export_hist *x = (struct tally__export_hist *)s->priv;
	if (tally_hist_snapshot_raw(x->h, &x->snap))
		return tally__export_fail(e, -EINVAL, "histogram snapshot failed", NULL, 0);
	tally__export_hist_edges(x);
	s->nr_rows = 1;
	return 0;
}

static inline void tally__export_release_hist(struct tally__export_source *s)
{
	struct tally__export_hist *x = (struct tally__export_hist *)s->priv;
	if (!x)
		return;
	tally_hist_snap_destroy(&x->snap);
	free(x->edges);
	free(x);
	s->priv = NULL;
}

static inline void tally__export_write_hist(struct tally__export_sink *k, int fmt,
					    const struct tally__export_family *f,
					    const struct tally__export_source *src)
{
	const struct tally__export_hist *x = (const struct tally__export_hist *)src->priv;
	const struct tally_hist_snap *s = &x->snap;
	unsigned i, j = 0;
	uint64_t cum = 0, lo = 0, hi = 0;
	if (fmt == TALLY_EXPORT_STAT) {
		tally__export_puts(k, f->name);
		tally__export_put(k, "_count ", 7);
		tally__export_put_u64(k, s->count);
		tally__export_put(k, "\n", 1);
		tally__export_puts(k, f->name);
		tally__export_put(k, "_sum ", 5);
		tally__export_put_scaled(k, s->sum, x->scale);
		tally__export_put(k, "\n", 1);
		return;
	}
	if (fmt == TALLY_EXPORT_JSON) {
		tally__export_puts(k, "{\"name\":\"");
		tally__export_puts(k, f->name);
		tally__export_puts(k, "\",\"type\":\"histogram\",\"help\":\"");
		tally__export_put_escaped(k, f->help, TALLY__EXPORT_ESC_JSON);
		tally__export_puts(k, "\",\"samples\":[{\"labels\":{},\"count\":");
		tally__export_put_u64(k, s->count);
		tally__export_puts(k, ",\"sum\":");
		tally__export_put_scaled(k, s->sum, x->scale);
		tally__export_puts(k, ",\"buckets\":[");
	} else {
		int om = fmt == TALLY_EXPORT_OPENMETRICS;
		tally__export_puts(k, "# HELP ");
		tally__export_puts(k, f->name);
		tally__export_put(k, " ", 1);
		tally__export_put_escaped(k, f->help,
					  om ? TALLY__EXPORT_ESC_QUOTED : TALLY__EXPORT_ESC_HELP_004);
		tally__export_puts(k, "\n# TYPE ");
		tally__export_puts(k, f->name);
		tally__export_puts(k, " histogram\n");
	}
	for (i = 0; i < x->nr_edges; i++) {
		for (; j <= x->edges[i]; j++)
			cum += s->counts[j];
		tally_hist_snap_bucket_range(s, x->edges[i], &lo, &hi);
		if (fmt == TALLY_EXPORT_JSON) {
			tally__export_puts(k, i ? ",{\"le\":" : "{\"le\":");
			tally__export_put_scaled(k, hi, x->scale);
			tally__export_puts(k, ",\"count\":");
			tally__export_put_u64(k, cum);
			tally__export_put(k, "}", 1);
		} else {
			tally__export_puts(k, f->name);
			tally__export_puts(k, "_bucket{le=\"");
			tally__export_put_scaled(k, hi, x->scale);
			tally__export_puts(k, "\"} ");
			tally__export_put_u64(k, cum);
			tally__export_put(k, "\n", 1);
		}
	}
	if (fmt == TALLY_EXPORT_JSON) {
		tally__export_puts(k, x->nr_edges ? ",{\"le\":\"+Inf\",\"count\":"
						  : "{\"le\":\"+Inf\",\"count\":");
		tally__export_put_u64(k, s->count);
		tally__export_puts(k, "}]}]}");
		return;
	}
	tally__export_puts(k, f->name);
	tally__export_puts(k, "_bucket{le=\"+Inf\"} ");
	tally__export_put_u64(k, s->count);
	tally__export_put(k, "\n", 1);
	tally__export_puts(k, f->name);
	tally__export_put(k, "_sum ", 5);
	tally__export_put_scaled(k, s->sum, x->scale);
	tally__export_put(k, "\n", 1);
	tally__export_puts(k, f->name);
	tally__export_put(k, "_count ", 7);
	tally__export_put_u64(k, s->count);
	tally__export_put(k, "\n", 1);
}

/**
 * tally_export_add_hist - export h as one histogram family called name
 * (samples name_bucket{le="..."}, name_sum, name_count), with help text
 * help (NULL or blank: a generic one), shown as o says (NULL: scale 1, no
 * cap). See the top of this header for the bounds and the formats.
 * Returns 0, -EINVAL (NULL e or h, a bad name or help, o out of bounds;
 * see tally_export_error()) or -ENOMEM; nothing registered on failure.
 * h must stay initialised while e may render it. Not beside other calls
 * on e.
 */
static inline int tally_export_add_hist(struct tally_export *e, const char *name,
					const char *help, struct tally_hist *h,
					const struct tally_export_hist_opts *o)
{
	struct tally__export_source s;
	struct tally__export_family f;
	struct tally__export_hist *x;
	double scale = o && o->scale != 0.0 ? o->scale : 1.0;
	unsigned cap = o ? o->max_buckets : 0u;
	if (tally__bad(!e))
		return -EINVAL;
	if (!name)
		return tally__export_fail(e, -EINVAL, "metric name is NULL", NULL, 0);
	if (!h || !tally_hist_buckets(h))
		return tally__export_fail(e, -EINVAL, "histogram '%s' is NULL or not initialised",
					  name, 0);
	if (!(scale > 0.0) || scale > 1e300 || cap == 1u || cap > TALLY_HIST_BUCKETS_MAX)
		return tally__export_fail(e, -EINVAL,
					  "histogram '%s': scale must be finite and > 0, "
					  "max_buckets 0 or 2 and up",
					  name, 0);
	memset(&s, 0, sizeof(s));
	memset(&f, 0, sizeof(f));
	x = (struct tally__export_hist *)calloc(1, sizeof(*x));
	if (x) {
		x->h = h;
		x->scale = scale;
		x->cap = cap;
		x->edges = (unsigned *)malloc(tally_hist_buckets(h) * sizeof(unsigned));
		if (!x->edges || tally_hist_snap_init(&x->snap, h)) {
			free(x->edges);
			free(x);
			x = NULL;
		}
	}
	s.obj = h;
	s.nr_items = 1;
	s.collect = tally__export_collect_hist;
	s.release = tally__export_release_hist;
	s.write = tally__export_write_hist;
	s.priv = x;
	f.name = tally__export_strdup(name);
	f.help = tally__export_help_given(help) ? tally__export_strdup(help)
						: tally__export_join("tally histogram", NULL, NULL);
	f.kind = TALLY_EXPORT_COUNTER; /* unused: the source writes its family */
	f.in_stat = 1;
	if (!x) {
		free(f.name);
		free(f.help);
		tally__export_source_free(&s);
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	}
	return tally__export_register(e, &s, &f, 1);
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_EXPORT_HIST_H */
