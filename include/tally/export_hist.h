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
 *     x_bucket{le="0.000000005"} 3     cumulative counts (exact decimals)
 *     ...
 *     x_bucket{le="+Inf"} 10
 *     x_sum 0.0123                     the values' sum, scaled
 *     x_count 10
 *   TALLY_EXPORT_STAT   "x_count 10", "x_sum 0.0123"
 *   TALLY_EXPORT_JSON   {"name":"x","type":"histogram","help":"h","samples":
 *                       [{"labels":{},"count":10,"sum":0.0123,"buckets":
 *                       [{"le":0.000000005,"count":3},...,{"le":"+Inf","count":10}]}]}
 * A labelled family (several histograms, name "x{cmd=\"get\"}" and so on)
 * writes each histogram's series with its labels, le last:
 * x_bucket{cmd="get",le="0.000000005"} 3, x_sum{cmd="get"} ...
 *
 * Values are one raw snapshot per histogram per render
 * (tally_hist_snapshot_raw(): a reset does not move them, so the exported
 * counts never go back), exact and in one cut: its buckets, _count and
 * _sum agree.
 *
 * Bucket bounds. The `le` set of a family is chosen when it is set up and
 * never changes, whatever is recorded (a bound that came and went between
 * scrapes would be a series Prometheus marks stale, and rate() and
 * histogram_quantile() would see another bucket set every scrape). Every
 * `le` is the upper edge of one of the histogram's buckets (an integer,
 * times the scale), so no bucket is split: the count at le is exactly the
 * observations <= le. Which ones:
 *   default, log-linear   the buckets of 1, 2 and 5 times each power of
 *                         ten from lowest to below highest, then highest's
 *                         own: the default range (1 ns .. 1 h) gives 39
 *                         bounds and +Inf (40 series, the most,
 *                         TALLY_EXPORT_HIST_BUCKETS_DEFAULT, else one per
 *                         power of ten, else thinned evenly). At the
 *                         default precision a bound sits within 0.8% above
 *                         its round value (5 us: le="0.000005023");
 *   default, explicit     every bound of the histogram;
 *   o->bounds             the caller's list, each rounded up to its
 *                         bucket's upper edge (explicit bounds: each must
 *                         be one of the histogram's);
 *   o->max_buckets        a cap on any of these, +Inf included: bounds
 *                         thinned evenly, the last kept (buckets merged,
 *                         never split).
 * In-process quantiles (tally_hist_quantile()) keep the histogram's full
 * precision; Prometheus' histogram_quantile() interpolates inside the
 * exported buckets, so its error is theirs.
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

/** The most `le` series (+Inf included) the default grid exports. */
#define TALLY_EXPORT_HIST_BUCKETS_DEFAULT 40u

/**
 * struct tally_export_hist_opts - how tally_export_add_hist() shows a
 * histogram. All zero (or NULL): scale 1, the default bounds.
 * @p scale: exported value = recorded value x scale (1e-9: nanoseconds
 *   recorded, seconds exported, Prometheus' base unit); 0 means 1. Must be
 *   finite and > 0 otherwise.
 * @p max_buckets: most buckets exported, +Inf included: 0 for the
 *   default (see the top of this header), else 2..TALLY_HIST_BUCKETS_MAX;
 *   more bounds than that are thinned evenly, the last kept.
 * @p bounds, @p nr_bounds: the `le` bounds to export, in the histogram's
 *   unit (before scale), strictly increasing (NULL, 0: the default).
 *   Log-linear: each within lowest - 1 .. highest, exported as the upper
 *   edge of its bucket (two in one bucket give one `le`). Explicit bounds:
 *   each one of the histogram's.
 */
struct tally_export_hist_opts {
	double scale;            /**< exported = recorded x scale; 0 means 1 */
	unsigned max_buckets;    /**< most buckets exported, +Inf included; 0: default */
	const uint64_t *bounds;  /**< `le` bounds (histogram unit), or NULL: default */
	unsigned nr_bounds;      /**< how many */
};

/* private: one histogram of a family (its labels are the family's
 * col_labels[i] for member i) */
struct tally__export_hist_member {
	struct tally_hist *h;
	struct tally_hist_snap snap;
};

/* private: a histogram family's state: its members, and the bucket
 * positions whose upper edge it exports, fixed when it was set up */
struct tally__export_hist {
	struct tally__export_hist_member *m;
	unsigned nr, cap;
	double scale;
	unsigned *edges;
	unsigned nr_edges;
};

/* The help of a family added with none. */
#define TALLY__EXPORT_HIST_HELP "tally histogram"

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

/* The k of a scale of 10^-k (k = 0..18), or -1. Within 1e-12 relative,
 * not ==: with x87's excess precision (gcc -m32) 1.0 / 1e9 need not equal
 * the double 1e-9 the caller wrote. */
static inline int tally__export_decimal_shift(double scale)
{
	uint64_t p = 1;
	int k;
	for (k = 0; k <= 18; k++, p *= 10u) {
		double d = scale * (double)p - 1.0;
		if (d < 1e-12 && d > -1e-12)
			return k;
	}
	return -1;
}

/* v x scale: exactly, in decimal, when the scale is 10^-k (integers stay
 * integers; "0.000000512" for 512 ns in seconds); else the shortest %g. */
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

/* Keep cap - 1 of edges[0..n) evenly, the last included; the count. */
static inline unsigned tally__export_hist_thin(unsigned *edges, unsigned n, unsigned cap)
{
	unsigned m = cap - 1u, i;
	if (n + 1u <= cap)
		return n;
	for (i = 0; i < m; i++)
		edges[i] = edges[(unsigned)(((uint64_t)(i + 1u) * n) / m) - 1u];
	return m;
}

/* The default grid of a log-linear layout: the buckets of 1, 2 and 5
 * times the powers of ten from lowest up to below highest, then highest's
 * (every value up to highest under some `le`; below's values are under
 * the first); per decade alone if that is more than cap allows. */
static inline unsigned tally__export_hist_grid(const struct tally__hist_layout *l, unsigned *edges,
					       unsigned cap)
{
	static const unsigned steps[2][4] = {{1, 2, 5, 0}, {1, 0, 0, 0}};
	unsigned n = 0, g, i, top = l->nr - 2u;
	for (g = 0; g < 2 && (!n || n + 1u > cap); g++) {
		uint64_t dec = 1;
		n = 0;
		for (;;) {
			for (i = 0; steps[g][i]; i++) {
				uint64_t t = dec * steps[g][i];
				unsigned j;
				if (t < l->lowest)
					continue;
				if (t >= l->highest)
					goto last;
				j = tally__hist_pos_slow(l, t);
				if (!n || edges[n - 1u] != j)
					edges[n++] = j;
			}
			if (dec > UINT64_MAX / 10u)
				break;
			dec *= 10u;
		}
last:
		if (!n || edges[n - 1u] != top)
			edges[n++] = top;
	}
	return tally__export_hist_thin(edges, n, cap);
}

/*
 * The positions whose upper edge a family of histograms of layout l
 * exports as o asks (NULL: the default), into edges (room for l->nr);
 * returns how many, or -1 with *why set.
 */
static inline int tally__export_hist_edges(const struct tally__hist_layout *l,
					   const struct tally_export_hist_opts *o, unsigned *edges,
					   const char **why)
{
	unsigned cap = o && o->max_buckets ? o->max_buckets : 0u, n = 0, i;
	uint64_t lo, hi;
	if (!o || !o->bounds) {
		if (o && o->nr_bounds) {
			*why = "bounds is NULL but nr_bounds is not 0";
			return -1;
		}
		if (!l->bounds)
			return (int)tally__export_hist_grid(
				l, edges, cap ? cap : TALLY_EXPORT_HIST_BUCKETS_DEFAULT);
		for (i = 1; i <= l->nr_bounds; i++)
			edges[n++] = i;
		return (int)(cap ? tally__export_hist_thin(edges, n, cap) : n);
	}
	if (!o->nr_bounds || o->nr_bounds > TALLY_HIST_BUCKETS_MAX) {
		*why = "nr_bounds must be 1..TALLY_HIST_BUCKETS_MAX";
		return -1;
	}
	for (i = 0; i < o->nr_bounds; i++) {
		uint64_t b = o->bounds[i];
		unsigned j = tally__hist_pos_slow(l, b);
		if (i && b <= o->bounds[i - 1u]) {
			*why = "the le bounds must increase strictly";
			return -1;
		}
		if (j == l->nr - 1u) {
			*why = "an le bound is above the histogram's range (the +Inf bucket)";
			return -1;
		}
		if (j == 0 && (l->bounds || !l->lowest)) {
			*why = "an le bound is below every bucket";
			return -1;
		}
		tally__hist_pos_range(l, j, &lo, &hi);
		if (l->bounds && hi != b) {
			*why = "an le bound is not one of the histogram's bounds";
			return -1;
		}
		if (!n || edges[n - 1u] != j)
			edges[n++] = j;
	}
	return (int)(cap ? tally__export_hist_thin(edges, n, cap) : n);
}

/* Would h (the family's buckets) added with o export x's le set? */
static inline int tally__export_hist_same_edges(const struct tally__export_hist *x,
						const struct tally_hist *h,
						const struct tally_export_hist_opts *o)
{
	unsigned *edges = (unsigned *)malloc(tally_hist_buckets(h) * sizeof(unsigned));
	const char *why = NULL;
	int n, same;
	if (!edges)
		return 0;
	n = tally__export_hist_edges(&h->tally__l, o, edges, &why);
	same = n >= 0 && (unsigned)n == x->nr_edges &&
	       (!n || memcmp(edges, x->edges, (size_t)n * sizeof(unsigned)) == 0);
	free(edges);
	return same;
}

static inline int tally__export_collect_hist(struct tally_export *e,
					     struct tally__export_source *s)
{
	struct tally__export_hist *x = (struct tally__export_hist *)s->priv;
	unsigned i;
	for (i = 0; i < x->nr; i++)
		if (tally_hist_snapshot_raw(x->m[i].h, &x->m[i].snap))
			return tally__export_fail(e, -EINVAL, "histogram snapshot failed", NULL, 0);
	s->nr_rows = 1;
	return 0;
}

static inline void tally__export_release_hist(struct tally__export_source *s)
{
	struct tally__export_hist *x = (struct tally__export_hist *)s->priv;
	unsigned i;
	if (!x)
		return;
	for (i = 0; i < x->nr; i++)
		tally_hist_snap_destroy(&x->m[i].snap);
	free(x->m);
	free(x->edges);
	free(x);
	s->priv = NULL;
}

#define TALLY__EXPORT_HIST_INF 0xffffffffu

/* How the writer sees member c of a histogram family: its labels (a
 * row's label first, a tree's group, then the series' own) and values. */
struct tally__export_hist_view {
	const char *row_name, *row_value; /* NULL: no row label */
	const char *col_labels;           /* "name\0value\0...\0", or NULL */
	const uint64_t *counts;           /* per bucket position */
	uint64_t count, sum;
};

typedef void (*tally__export_hist_view_fn)(const struct tally__export_source *src,
					   const struct tally__export_family *f, unsigned c,
					   struct tally__export_hist_view *v);

/* Member v's labels, then le (when le_at: the upper edge of position
 * le_pos of l, or "+Inf" when le_pos is TALLY__EXPORT_HIST_INF), as the
 * text formats write them ("{a=\"1\",le=\"0.5\"}"; nothing for no labels
 * at all), or JSON's members ("\"a\":\"1\""; mode TALLY__EXPORT_ESC_JSON). */
static inline void tally__export_hist_labels(struct tally__export_sink *k,
					     const struct tally__export_hist_view *v,
					     const struct tally__hist_layout *l, double scale,
					     int le_at, unsigned le_pos,
					     enum tally__export_escape mode)
{
	const char *lb = v->col_labels;
	int json = mode == TALLY__EXPORT_ESC_JSON, first = 1;
	uint64_t lo, hi;
	if (!le_at && !lb && !v->row_name)
		return;
	if (!json)
		tally__export_put(k, "{", 1);
	if (v->row_name) {
		tally__export_puts(k, json ? "\"" : "");
		tally__export_puts(k, v->row_name);
		tally__export_puts(k, json ? "\":\"" : "=\"");
		tally__export_put_escaped(k, v->row_value, mode);
		tally__export_put(k, "\"", 1);
		first = 0;
	}
	for (; lb && *lb; lb += strlen(lb) + 1, lb += strlen(lb) + 1) {
		tally__export_puts(k, first ? "" : ",");
		first = 0;
		tally__export_puts(k, json ? "\"" : "");
		tally__export_puts(k, lb);
		tally__export_puts(k, json ? "\":\"" : "=\"");
		tally__export_put_escaped(k, lb + strlen(lb) + 1, mode);
		tally__export_put(k, "\"", 1);
	}
	if (le_at) {
		tally__export_puts(k, first ? "le=\"" : ",le=\"");
		if (le_pos != TALLY__EXPORT_HIST_INF) {
			tally__hist_pos_range(l, le_pos, &lo, &hi);
			tally__export_put_scaled(k, hi, scale);
		} else {
			tally__export_puts(k, "+Inf");
		}
		tally__export_put(k, "\"", 1);
	}
	if (!json)
		tally__export_put(k, "}", 1);
}

/* One line "family suffix{labels} value" of member v (text formats). */
static inline void tally__export_hist_line(struct tally__export_sink *k,
					   const struct tally__export_family *f,
					   const struct tally__export_hist_view *v,
					   const struct tally__hist_layout *l, double scale,
					   const char *suffix, int le_at, unsigned le_pos,
					   uint64_t val, int scaled)
{
	tally__export_puts(k, f->name);
	tally__export_puts(k, suffix);
	tally__export_hist_labels(k, v, l, scale, le_at, le_pos, TALLY__EXPORT_ESC_QUOTED);
	tally__export_put(k, " ", 1);
	if (scaled)
		tally__export_put_scaled(k, val, scale);
	else
		tally__export_put_u64(k, val);
	tally__export_put(k, "\n", 1);
}

/*
 * A histogram family f in format fmt: nr members, member c seen through
 * view(src, c, ...), buckets of layout l, exported at the positions
 * edges[0..nr_edges) and +Inf, values times scale; TALLY_EXPORT_STAT
 * writes the first nr_stat members' _count and _sum.
 */
static inline void tally__export_hist_family(struct tally__export_sink *k, int fmt,
					     const struct tally__export_family *f,
					     const struct tally__export_source *src,
					     tally__export_hist_view_fn view, unsigned nr,
					     unsigned nr_stat, const struct tally__hist_layout *l,
					     double scale, const unsigned *edges, unsigned nr_edges)
{
	struct tally__export_hist_view v;
	unsigned c, i, j;
	uint64_t cum;
	if (fmt == TALLY_EXPORT_STAT) {
		for (c = 0; c < nr_stat; c++) {
			view(src, f, c, &v);
			v.row_name = NULL; /* flat keys: the first row alone */
			tally__export_hist_line(k, f, &v, l, scale, "_count", 0, 0, v.count, 0);
			tally__export_hist_line(k, f, &v, l, scale, "_sum", 0, 0, v.sum, 1);
		}
		return;
	}
	if (fmt == TALLY_EXPORT_JSON) {
		tally__export_puts(k, "{\"name\":\"");
		tally__export_puts(k, f->name);
		tally__export_puts(k, "\",\"type\":\"histogram\",\"help\":\"");
		tally__export_put_escaped(k, f->help, TALLY__EXPORT_ESC_JSON);
		tally__export_puts(k, "\",\"samples\":[");
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
	for (c = 0; c < nr; c++) {
		view(src, f, c, &v);
		if (fmt == TALLY_EXPORT_JSON) {
			tally__export_puts(k, c ? ",{\"labels\":{" : "{\"labels\":{");
			tally__export_hist_labels(k, &v, l, scale, 0, 0, TALLY__EXPORT_ESC_JSON);
			tally__export_puts(k, "},\"count\":");
			tally__export_put_u64(k, v.count);
			tally__export_puts(k, ",\"sum\":");
			tally__export_put_scaled(k, v.sum, scale);
			tally__export_puts(k, ",\"buckets\":[");
		}
		for (i = 0, j = 0, cum = 0; i < nr_edges; i++) {
			uint64_t lo, hi;
			for (; j <= edges[i]; j++)
				cum += v.counts[j];
			if (fmt != TALLY_EXPORT_JSON) {
				tally__export_hist_line(k, f, &v, l, scale, "_bucket", 1, edges[i], cum,
							0);
				continue;
			}
			tally__hist_pos_range(l, edges[i], &lo, &hi);
			tally__export_puts(k, i ? ",{\"le\":" : "{\"le\":");
			tally__export_put_scaled(k, hi, scale);
			tally__export_puts(k, ",\"count\":");
			tally__export_put_u64(k, cum);
			tally__export_put(k, "}", 1);
		}
		if (fmt == TALLY_EXPORT_JSON) {
			tally__export_puts(k, nr_edges ? ",{\"le\":\"+Inf\",\"count\":"
						       : "{\"le\":\"+Inf\",\"count\":");
			tally__export_put_u64(k, v.count);
			tally__export_puts(k, "}]}");
			continue;
		}
		tally__export_hist_line(k, f, &v, l, scale, "_bucket", 1, TALLY__EXPORT_HIST_INF,
					v.count, 0);
		tally__export_hist_line(k, f, &v, l, scale, "_sum", 0, 0, v.sum, 1);
		tally__export_hist_line(k, f, &v, l, scale, "_count", 0, 0, v.count, 0);
	}
	if (fmt == TALLY_EXPORT_JSON)
		tally__export_puts(k, "]}");
}

/* Member c of a tally_export_add_hist() family: its snapshot. */
static inline void tally__export_hist_view(const struct tally__export_source *src,
					   const struct tally__export_family *f, unsigned c,
					   struct tally__export_hist_view *v)
{
	const struct tally__export_hist *x = (const struct tally__export_hist *)src->priv;
	const struct tally_hist_snap *s = &x->m[c].snap;
	v->row_name = v->row_value = NULL;
	v->col_labels = f->nr_cols ? f->col_labels[c] : NULL;
	v->counts = s->counts;
	v->count = s->count;
	v->sum = s->sum;
}

static inline void tally__export_write_hist(struct tally__export_sink *k, int fmt,
					    const struct tally__export_family *f,
					    const struct tally__export_source *src)
{
	const struct tally__export_hist *x = (const struct tally__export_hist *)src->priv;
	tally__export_hist_family(k, fmt, f, src, tally__export_hist_view, x->nr, x->nr,
				  &x->m[0].snap.tally__l, x->scale, x->edges, x->nr_edges);
}

/* Add h as a member with labels (owned from here on) to histogram family
 * f (source s, state x): 0, or -ENOMEM with nothing changed. */
static inline int tally__export_hist_join(struct tally__export_hist *x,
					  struct tally__export_family *f, struct tally_hist *h,
					  char *labels)
{
	if (x->nr == x->cap) {
		unsigned cap = x->cap ? 2 * x->cap : 4;
		struct tally__export_hist_member *m = (struct tally__export_hist_member *)realloc(
			x->m, cap * sizeof(*m));
		if (!m) {
			free(labels);
			return -ENOMEM;
		}
		x->m = m;
		x->cap = cap;
	}
	memset(&x->m[x->nr], 0, sizeof(x->m[0]));
	if (tally_hist_snap_init(&x->m[x->nr].snap, h)) {
		free(labels);
		return -ENOMEM;
	}
	if (tally__export_add_series(f, x->nr, labels)) {
		tally_hist_snap_destroy(&x->m[x->nr].snap);
		return -ENOMEM;
	}
	x->m[x->nr++].h = h;
	return 0;
}

/**
 * tally_export_add_hist - export h as a histogram family called name
 * (samples name_bucket{le="..."}, name_sum, name_count), with help text
 * help (NULL or blank: a generic one), shown as o says (NULL: scale 1,
 * the default bounds). See the top of this header for the bounds and the
 * formats.
 * Labelled: a name "family{label=\"value\",...}" (tally_export_name()
 * builds one) adds h to family as the series with those labels, beside
 * the histograms added to it before; the label rules are the vectors'
 * (export.h: an empty value is no label, two equal label sets refused, no
 * le or quantile). The histograms of one family must have the same
 * buckets (tally_hist_opts) and be added with the same o (so every series
 * has the same `le` set, which Prometheus' sum by (le) needs); help: the
 * first one given (tally_export_set_help() changes it).
 * Returns 0, -EINVAL (NULL e or h, a bad name, labels or help, o out of
 * bounds, family registered as something else or with other buckets or
 * options; see tally_export_error()) or -ENOMEM; nothing registered on
 * failure. h must stay initialised while e may render it. Not beside other
 * calls on e. O(1) beside the bounds' setup (O(buckets), once per family).
 */
static inline int tally_export_add_hist(struct tally_export *e, const char *name,
					const char *help, struct tally_hist *h,
					const struct tally_export_hist_opts *o)
{
	static const struct tally_export_hist_opts none = {0, 0, NULL, 0}; /* the defaults */
	struct tally__export_source s;
	struct tally__export_family f;
	struct tally__export_hist *x;
	double scale;
	const char *why = NULL;
	char *labels = NULL, *base;
	size_t base_len;
	long fam;
	int n, err;
	if (tally__bad(!e))
		return -EINVAL;
	if (!name)
		return tally__export_fail(e, -EINVAL, "metric name is NULL", NULL, 0);
	if (!h || !tally_hist_buckets(h))
		return tally__export_fail(e, -EINVAL, "histogram '%s' is NULL or not initialised",
					  name, 0);
	if (!o)
		o = &none;
	scale = o->scale != 0.0 ? o->scale : 1.0;
	if (!(scale > 0.0) || scale > 1e300 || o->max_buckets == 1u ||
	    o->max_buckets > TALLY_HIST_BUCKETS_MAX)
		return tally__export_fail(e, -EINVAL,
					  "histogram '%s': scale must be finite and > 0, "
					  "max_buckets 0 or 2 and up",
					  name, 0);
	err = tally__export_parse_labels(e, name, ~0u, &base_len, &labels, NULL);
	if (err)
		return err;
	base = (char *)malloc(base_len + 1);
	if (!base) {
		free(labels);
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	}
	memcpy(base, name, base_len);
	base[base_len] = '\0';
	fam = tally__export_find(e, base);
	if (fam >= 0) {
		/* Another member of a family already registered. */
		struct tally__export_family *g = &e->tally__families[fam];
		struct tally__export_source *gs = &e->tally__sources[g->source];
		unsigned c;
		x = (struct tally__export_hist *)gs->priv;
		if (gs->write != tally__export_write_hist)
			why = "is registered, and not as a histogram";
		else if (!tally__hist_layout_eq(&h->tally__l, &x->m[0].h->tally__l))
			why = "has histograms with other buckets (tally_hist_opts)";
		else if (scale != x->scale || !tally__export_hist_same_edges(x, h, o))
			why = "was added with other tally_export_hist_opts (scale or le bounds)";
		for (c = 0; !why && c < g->nr_cols; c++)
			if (tally__export_labels_eq(g->col_labels[c], labels))
				why = "already has a histogram with these labels (empty values "
				      "dropped)";
		if (!why && tally__export_help_given(help) && strcmp(help, g->help) != 0 &&
		    strcmp(g->help, TALLY__EXPORT_HIST_HELP) != 0)
			why = "has another help text (tally_export_set_help() changes it)";
		if (why) {
			free(labels);
			err = tally__export_fail(e, -EINVAL, "histogram family '%s' ", base, 0);
			tally__export_fail_more(e, why);
			free(base);
			return err;
		}
		free(base);
		if (tally__export_help_given(help) && strcmp(help, g->help) != 0) {
			char *d = tally__export_strdup(help);
			if (!d) {
				free(labels);
				return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
			}
			free(g->help);
			g->help = d;
		}
		if (tally__export_hist_join(x, g, h, labels))
			return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		e->tally__error[0] = '\0';
		return 0;
	}
	memset(&s, 0, sizeof(s));
	memset(&f, 0, sizeof(f));
	x = (struct tally__export_hist *)calloc(1, sizeof(*x));
	if (x)
		x->edges = (unsigned *)malloc(tally_hist_buckets(h) * sizeof(unsigned));
	if (!x || !x->edges) {
		if (x)
			free(x);
		free(labels);
		free(base);
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	}
	n = tally__export_hist_edges(&h->tally__l, o, x->edges, &why);
	if (n < 0) {
		free(x->edges);
		free(x);
		free(labels);
		err = tally__export_fail(e, -EINVAL, "histogram '%s': ", base, 0);
		tally__export_fail_more(e, why);
		free(base);
		return err;
	}
	x->nr_edges = (unsigned)n;
	x->scale = scale;
	s.obj = h;
	s.nr_items = 1;
	s.collect = tally__export_collect_hist;
	s.release = tally__export_release_hist;
	s.write = tally__export_write_hist;
	s.priv = x;
	f.name = base;
	f.help = tally__export_help_given(help) ? tally__export_strdup(help)
						: tally__export_strdup(TALLY__EXPORT_HIST_HELP);
	f.kind = TALLY_EXPORT_COUNTER; /* unused: the source writes its family */
	f.in_stat = 1;
	if (tally__export_hist_join(x, &f, h, labels)) {
		free(f.help);
		f.help = NULL; /* register frees what is left and says -ENOMEM */
	}
	return tally__export_register(e, &s, &f, 1);
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_EXPORT_HIST_H */
