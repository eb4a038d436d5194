/*
 * tally/export.h - render counters and vectors, by name, as Prometheus text
 * 0.0.4, OpenMetrics 1.0, flat-keyed "name value" text (like cgroup's
 * memory.stat) and JSON. Trees: <tally/export_rstat.h>.
 *
 *   struct tally_export e;
 *   tally_export_init(&e);
 *   tally_export_add_counter(&e, "requests", "Requests served.", &c,
 *                            TALLY_EXPORT_COUNTER);
 *   tally_export_add_vec(&e, "vm", &v, names, helps, kinds);
 *   size_t len;
 *   int err = tally_export_render(&e, TALLY_EXPORT_OPENMETRICS, buf, sizeof(buf), &len);
 *   // -ENOSPC: len is the size needed (with the NUL); buf untouched
 *   tally_export_destroy(&e);
 *
 * The update path is untouched: the exporter only reads, at render time,
 * the exact sums (tally_counter_sum, the vector's exact per-item values;
 * never the approximate O(1) reads, whose lag can go backwards between two
 * scrapes and would look like a counter reset to Prometheus).
 *
 * Counters are widened to 64 bits. Per exported series the exporter keeps
 * the last raw word it read and a 64-bit total; each render adds
 * tally_delta(last, raw) to the total. So a counter never goes backwards
 * across a 2^W wrap (TALLY_WORD_BITS=32 wraps at 4 Gi events): the exported
 * value is exact as long as fewer than 2^(W-1) events pass between two
 * renders. A raw value that moved backwards (a "counter" that was
 * decremented) is held: the total stays put until the raw value passes the
 * last one again; it never jumps by ~2^W. Gauges are rendered as the signed
 * exact value, not widened.
 *
 * Names. A family name is lowercase snake_case, [a-z_][a-z0-9_]*, not
 * starting with "__", at most TALLY_EXPORT_NAME_MAX bytes, and passes
 * promtool's lint: no word (between underscores) that is a metric type
 * (counter, gauge, histogram, summary, info, stateset, untyped), an
 * abbreviated unit (s, ms, us, ns, sec, b, kb, mb, gb, tb, pb, m, h, d) or
 * a non-base unit (minutes, hours, days, weeks, bits, ..., or a prefixed
 * unit such as kilobytes or milliseconds); no reserved suffix (_total,
 * _created, _count, _sum, _bucket, _info, _gcount, _gsum). Counters get the
 * _total suffix in the output. Names must be unique in an exporter. Help
 * texts and label values are any valid UTF-8 (no NUL); they are escaped
 * (backslash, double quote, newline) as each format requires. A bad name or
 * help text is rejected with -EINVAL, nothing registered, and
 * tally_export_error() says why.
 *
 * Output (exact strings in tests/test_export.c):
 *   TALLY_EXPORT_PROMETHEUS  text 0.0.4: "# HELP x_total h", "# TYPE
 *                            x_total counter", "x_total 5"; gauges "x 5"
 *   TALLY_EXPORT_OPENMETRICS OpenMetrics 1.0: "# HELP x h", "# TYPE x
 *                            counter", "x_total 5", ..., "# EOF"
 *   TALLY_EXPORT_STAT        "x 5" per family (trees: the root group's
 *                            hierarchical values), like memory.stat
 *   TALLY_EXPORT_JSON        {"families":[{"name":"x","type":"counter",
 *                            "help":"h","samples":[{"labels":{},"value":5}]}]}
 * Values are integers, never with a decimal point. Prometheus stores
 * samples as float64: totals past 2^53 lose their low digits there.
 *
 * Concurrency: an exporter is one object with one owner: its calls must
 * not run beside each other (use a lock, or render from one thread). The
 * counters and vectors it renders may be updated by any thread meanwhile
 * (it calls their exact readers, which may run beside anything but
 * init/destroy); a registered object must outlive the exporter or its
 * registration. Rendering allocates (a snapshot of the values, grown as
 * needed) and costs O(series x CPU slots); updates cost nothing extra.
 */
#ifndef TALLY_EXPORT_H
#define TALLY_EXPORT_H

#include <tally/monotonic.h>
#include <tally/counter.h>
#include <tally/vec.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest family name, and longest help text, in bytes. */
#define TALLY_EXPORT_NAME_MAX 200
#define TALLY_EXPORT_HELP_MAX 4096

/* The formats tally_export_render() writes. */
enum tally_export_format {
	TALLY_EXPORT_PROMETHEUS = 0, /* Prometheus text exposition format 0.0.4 */
	TALLY_EXPORT_OPENMETRICS = 1, /* OpenMetrics 1.0 text */
	TALLY_EXPORT_STAT = 2,        /* "name value" lines (memory.stat) */
	TALLY_EXPORT_JSON = 3
};

/* What a series is: an event counter (widened, _total) or a gauge. */
enum tally_export_kind { TALLY_EXPORT_COUNTER = 0, TALLY_EXPORT_GAUGE = 1 };

#define TALLY_EXPORT_CONTENT_TYPE_PROMETHEUS "text/plain; version=0.0.4; charset=utf-8"
#define TALLY_EXPORT_CONTENT_TYPE_OPENMETRICS                                  \
	"application/openmetrics-text; version=1.0.0; charset=utf-8"

/* Widened state of one counter series. Private. */
struct tally__xseries {
	tally_uword last; /* raw word at the last render */
	uint64_t total;   /* widened value */
};

struct tally_export;

/*
 * One registered object (a counter, a vector, a tree). Its families are
 * contiguous in the exporter's family table. A render fills val with rows
 * of vstride values; a row may carry a label value (a group path). Private.
 */
struct tally__xsrc {
	void *obj;
	unsigned nr_items;
	unsigned first_fam, nr_fams;
	unsigned char *kinds;        /* [nr_items] */
	struct tally__xseries *ser;  /* [nr_items] counter/vec widening */
	uint64_t *val;               /* [nr_rows * vstride] this render */
	size_t nr_rows, vstride, cap_val;
	const char *label;           /* label name of rows, or NULL */
	char *lab;                   /* row label values, each NUL-ended */
	size_t *lab_off;             /* [nr_rows] offsets into lab */
	int (*collect)(struct tally_export *e, struct tally__xsrc *s);
	void (*release)(struct tally__xsrc *s);
	void *priv;
};

/* One metric family. Private. */
struct tally__xfam {
	char *name;
	char *help;
	unsigned src;       /* index of its source */
	unsigned voff;      /* offset of its value in a row */
	unsigned char kind; /* enum tally_export_kind */
	unsigned char stat; /* rendered in TALLY_EXPORT_STAT */
};

struct tally_export {
	/* private: use the tally_export_* calls */
	struct tally__xsrc *tally__src;
	unsigned tally__nr_src, tally__cap_src;
	struct tally__xfam *tally__fam;
	unsigned tally__nr_fam, tally__cap_fam;
	size_t tally__last_len; /* the last render_alloc's length: a size guess */
	char tally__err[256];
};

/* ---- errors ----------------------------------------------------------------- */

/* Set e's message (printf-like, %s and %u only, to stay allocation-free and
 * free of locale); returns err. */
static inline int tally__xerr(struct tally_export *e, int err, const char *fmt, const char *s,
			      unsigned u)
{
	char *o = e->tally__err, *end = e->tally__err + sizeof(e->tally__err) - 1;
	const char *p;
	for (p = fmt; *p && o < end; p++) {
		if (p[0] == '%' && p[1] == 's') {
			const char *q = s ? s : "(null)";
			size_t n = 0;
			/* Quote at most 60 bytes of the offending string. */
			for (; *q && o < end && n < 60; q++, n++)
				*o++ = (*q >= 0x20 && *q != 0x7f) ? *q : '?';
			if (*q && o + 3 <= end) {
				memcpy(o, "...", 3);
				o += 3;
			}
			p++;
		} else if (p[0] == '%' && p[1] == 'u') {
			char d[12];
			int n = 0;
			unsigned v = u;
			do
				d[n++] = (char)('0' + v % 10);
			while ((v /= 10) && n < 12);
			while (n && o < end)
				*o++ = d[--n];
			p++;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return err;
}

/*
 * tally_export_error - why the last failing call on e failed, as one line
 * of text ("" if none failed yet). Valid until the next call on e.
 */
static inline const char *tally_export_error(const struct tally_export *e)
{
	return e ? e->tally__err : "no exporter (NULL)";
}

/* ---- validation ------------------------------------------------------------ */

/*
 * tally__utf8_ok - s[0..n) is valid UTF-8 (no overlong forms, no
 * surrogates, nothing past U+10FFFF) and has no NUL.
 */
static inline bool tally__utf8_ok(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		unsigned c = *p, need, cp, i;
		if (c == 0)
			return false;
		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if ((size_t)(end - p) <= need)
			return false;
		for (i = 1; i <= need; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += need + 1;
	}
	return true;
}

/* Is w[0..n) one of the NULL-ended words? */
static inline bool tally__xword_in(const char *w, size_t n, const char *const *list)
{
	for (; *list; list++)
		if (strlen(*list) == n && !memcmp(*list, w, n))
			return true;
	return false;
}

/*
 * tally__xname_check - 0 if name is a valid family name (see the header
 * comment), else -EINVAL with e's message set. what names the caller's
 * argument in the message.
 */
static inline int tally__xname_check(struct tally_export *e, const char *name)
{
	static const char *const types[] = {"counter", "gauge", "histogram", "summary", "info",
					     "stateset", "untyped", "gaugehistogram", NULL};
	static const char *const abbrev[] = {"s",  "ms", "us", "ns", "sec", "b", "kb",
					      "mb", "gb", "tb", "pb", "m",  "h", "d", NULL};
	/* Units promtool knows: base units may stand alone, not prefixed. */
	static const char *const base[] = {"amperes", "bytes", "celsius", "grams", "joules",
					    "kelvin",  "meters", "metres", "seconds", "volts", NULL};
	static const char *const nonbase[] = {"minutes", "hours",  "days",   "weeks",    "kelvins",
					       "fahrenheit", "rankine", "inches", "yards", "miles",
					       "bits",    "calories", "pounds", "ounces", "years", NULL};
	static const char *const prefixes[] = {"pico", "nano", "micro", "milli", "centi", "deci",
						"deca", "hecto", "kilo",  "kibi",  "mega",  "mibi",
						"mebi", "giga", "gibi", "tera",  "tebi",  "peta",
						"pebi", "exa",  "exbi", NULL};
	static const char *const suffixes[] = {"_total", "_created", "_count", "_sum", "_bucket",
						"_info", "_gcount", "_gsum", NULL};
	const char *p, *w;
	const char *const *x;
	size_t n;
	if (!name)
		return tally__xerr(e, -EINVAL, "metric name is NULL", NULL, 0);
	n = strlen(name);
	if (!n)
		return tally__xerr(e, -EINVAL, "metric name is empty", NULL, 0);
	if (n > TALLY_EXPORT_NAME_MAX)
		return tally__xerr(e, -EINVAL, "metric name '%s' is longer than %u bytes", name,
				   TALLY_EXPORT_NAME_MAX);
	if (name[0] >= '0' && name[0] <= '9')
		return tally__xerr(e, -EINVAL, "metric name '%s' starts with a digit", name, 0);
	if (name[0] == '_' && name[1] == '_')
		return tally__xerr(e, -EINVAL,
				   "metric name '%s' starts with '__' (reserved by Prometheus)",
				   name, 0);
	for (p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return tally__xerr(e, -EINVAL,
					   "metric name '%s' is not lowercase snake_case "
					   "([a-z_][a-z0-9_]*)",
					   name, 0);
	for (x = suffixes; *x; x++) {
		size_t k = strlen(*x);
		if (n >= k && !memcmp(name + n - k, *x, k))
			return tally__xerr(e, -EINVAL,
					   "metric name '%s' ends with a reserved suffix "
					   "(_total, _created, _count, _sum, _bucket, _info, _gcount, "
					   "_gsum; counters get _total in the output)",
					   name, 0);
	}
	for (w = name; *w;) {
		size_t k = strcspn(w, "_");
		if (tally__xword_in(w, k, types))
			return tally__xerr(e, -EINVAL,
					   "metric name '%s' contains a metric type as a word", name,
					   0);
		if (tally__xword_in(w, k, abbrev))
			return tally__xerr(e, -EINVAL,
					   "metric name '%s' contains an abbreviated unit as a word "
					   "(spell out a base unit: seconds, bytes)",
					   name, 0);
		if (tally__xword_in(w, k, nonbase))
			return tally__xerr(e, -EINVAL,
					   "metric name '%s' contains a non-base unit (use seconds, "
					   "bytes, meters, grams, joules, celsius)",
					   name, 0);
		for (x = prefixes; *x; x++) {
			size_t pl = strlen(*x);
			if (k > pl && !memcmp(w, *x, pl) &&
			    (tally__xword_in(w + pl, k - pl, base) ||
			     tally__xword_in(w + pl, k - pl, nonbase)))
				return tally__xerr(e, -EINVAL,
						   "metric name '%s' contains a prefixed unit (use "
						   "the base unit: seconds, bytes, ...)",
						   name, 0);
		}
		w += k;
		if (*w == '_')
			w++;
	}
	return 0;
}

/* tally__xhelp_check - 0 if help is a valid help text, else -EINVAL. */
static inline int tally__xhelp_check(struct tally_export *e, const char *name, const char *help)
{
	size_t n = strlen(help);
	if (n > TALLY_EXPORT_HELP_MAX)
		return tally__xerr(e, -EINVAL, "help text of '%s' is longer than %u bytes", name,
				   TALLY_EXPORT_HELP_MAX);
	if (!tally__utf8_ok(help, n))
		return tally__xerr(e, -EINVAL, "help text of '%s' is not valid UTF-8", name, 0);
	return 0;
}

/* ---- registration ------------------------------------------------------------ */

/*
 * tally_export_init - an empty exporter. Returns 0 or -EINVAL (NULL e).
 * Allocates nothing until the first registration.
 */
static inline int tally_export_init(struct tally_export *e)
{
	if (tally__bad(!e))
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	return 0;
}

static inline void tally__xsrc_free(struct tally__xsrc *s)
{
	if (s->release)
		s->release(s);
	free(s->kinds);
	free(s->ser);
	free(s->val);
	free(s->lab);
	free(s->lab_off);
}

/*
 * tally_export_destroy - free everything e allocated (not the objects it
 * renders). NULL is a no-op. Not beside any other call on e.
 */
static inline void tally_export_destroy(struct tally_export *e)
{
	unsigned i;
	if (!e)
		return;
	for (i = 0; i < e->tally__nr_src; i++)
		tally__xsrc_free(&e->tally__src[i]);
	for (i = 0; i < e->tally__nr_fam; i++) {
		free(e->tally__fam[i].name);
		free(e->tally__fam[i].help);
	}
	free(e->tally__src);
	free(e->tally__fam);
	memset(e, 0, sizeof(*e));
}

/* A help text with nothing but blanks is no help text: parsers trim it
 * away and promtool reports "no help text". */
static inline bool tally__xhelp_given(const char *h)
{
	return h && h[strspn(h, " \t")] != '\0';
}

static inline char *tally__xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = (char *)malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* Concatenate a, "_", b and c (any may be NULL) into a new string. */
static inline char *tally__xjoin(const char *a, const char *b, const char *c)
{
	size_t na = a ? strlen(a) : 0, nb = b ? strlen(b) : 0, nc = c ? strlen(c) : 0;
	char *d = (char *)malloc(na + nb + nc + 2), *o = d;
	if (!d)
		return NULL;
	if (na) {
		memcpy(o, a, na);
		o += na;
		if (nb)
			*o++ = '_';
	}
	if (nb)
		memcpy(o, b, nb);
	o += nb;
	if (nc)
		memcpy(o, c, nc);
	o[nc] = '\0';
	return d;
}

/*
 * Append a source with nfam families (names, helps and kinds filled by the
 * caller through the returned pointer) to e, all or nothing. The families'
 * names and helps are checked and owned from here on; on failure they are
 * freed. Private.
 */
static inline int tally__xregister(struct tally_export *e, struct tally__xsrc *s,
				   struct tally__xfam *fams, unsigned nfam)
{
	unsigned i, j;
	int err = 0;
	for (i = 0; i < nfam && !err; i++) {
		if (!fams[i].name || !fams[i].help) {
			err = tally__xerr(e, -ENOMEM, "out of memory", NULL, 0);
			break;
		}
		err = tally__xname_check(e, fams[i].name);
		if (!err)
			err = tally__xhelp_check(e, fams[i].name, fams[i].help);
		for (j = 0; j < e->tally__nr_fam && !err; j++)
			if (!strcmp(e->tally__fam[j].name, fams[i].name))
				err = tally__xerr(e, -EINVAL, "metric name '%s' is already registered",
						  fams[i].name, 0);
		for (j = 0; j < i && !err; j++)
			if (!strcmp(fams[j].name, fams[i].name))
				err = tally__xerr(e, -EINVAL, "metric name '%s' appears twice",
						  fams[i].name, 0);
	}
	if (!err && e->tally__nr_src == e->tally__cap_src) {
		unsigned cap = e->tally__cap_src ? 2 * e->tally__cap_src : 4;
		struct tally__xsrc *n = (struct tally__xsrc *)realloc(e->tally__src, cap * sizeof(*n));
		if (!n)
			err = tally__xerr(e, -ENOMEM, "out of memory", NULL, 0);
		else {
			e->tally__src = n;
			e->tally__cap_src = cap;
		}
	}
	if (!err && e->tally__nr_fam + nfam > e->tally__cap_fam) {
		unsigned cap = e->tally__cap_fam ? 2 * e->tally__cap_fam : 8;
		struct tally__xfam *n;
		while (cap < e->tally__nr_fam + nfam)
			cap *= 2;
		n = (struct tally__xfam *)realloc(e->tally__fam, cap * sizeof(*n));
		if (!n)
			err = tally__xerr(e, -ENOMEM, "out of memory", NULL, 0);
		else {
			e->tally__fam = n;
			e->tally__cap_fam = cap;
		}
	}
	if (err) {
		for (i = 0; i < nfam; i++) {
			free(fams[i].name);
			free(fams[i].help);
		}
		tally__xsrc_free(s);
		return err;
	}
	s->first_fam = e->tally__nr_fam;
	s->nr_fams = nfam;
	for (i = 0; i < nfam; i++) {
		fams[i].src = e->tally__nr_src;
		e->tally__fam[e->tally__nr_fam++] = fams[i];
	}
	e->tally__src[e->tally__nr_src++] = *s;
	e->tally__err[0] = '\0';
	return 0;
}

/* Widen a counter's raw word: add the modular delta unless it is
 * negative (a decrement), which is held. Private. */
TALLY__INLINE uint64_t tally__xwiden(struct tally__xseries *s, tally_uword raw)
{
	tally_uword d = tally_delta(s->last, raw);
	if (tally__to_signed(d) >= 0) {
		s->total += d;
		s->last = raw;
	}
	return s->total;
}

/* The value to store for a raw word of the given kind. Private. */
TALLY__INLINE uint64_t tally__xvalue(struct tally__xseries *s, unsigned char kind, tally_uword raw)
{
	if (kind == TALLY_EXPORT_GAUGE)
		return (uint64_t)(int64_t)tally__to_signed(raw);
	return tally__xwiden(s, raw);
}

static inline int tally__xgrow_val(struct tally__xsrc *s, size_t n)
{
	if (n > s->cap_val) {
		uint64_t *v = (uint64_t *)realloc(s->val, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->val = v;
		s->cap_val = n;
	}
	return 0;
}

static inline int tally__xcollect_counter(struct tally_export *e, struct tally__xsrc *s)
{
	struct tally_counter *c = (struct tally_counter *)s->obj;
	(void)e;
	s->val[0] = tally__xvalue(&s->ser[0], s->kinds[0], (tally_uword)tally_counter_sum(c));
	s->nr_rows = 1;
	return 0;
}

/*
 * tally_export_add_counter - export c as one family called name (a
 * counter's samples are name_total), with help text help (NULL: a generic
 * one; also for "" or only blanks), as kind TALLY_EXPORT_COUNTER (widened exact sum; the counter must
 * only be added to) or TALLY_EXPORT_GAUGE (the signed exact sum).
 * Returns 0, -EINVAL (bad name, help or kind; NULL e or c; see
 * tally_export_error()) or -ENOMEM; nothing registered on failure. c must
 * stay initialised while e may render it.
 */
static inline int tally_export_add_counter(struct tally_export *e, const char *name,
					   const char *help, struct tally_counter *c, int kind)
{
	struct tally__xsrc s;
	struct tally__xfam f;
	if (tally__bad(!e))
		return -EINVAL;
	if (!c)
		return tally__xerr(e, -EINVAL, "counter '%s' is NULL", name, 0);
	if (kind != TALLY_EXPORT_COUNTER && kind != TALLY_EXPORT_GAUGE)
		return tally__xerr(e, -EINVAL, "kind of '%s' is neither counter nor gauge", name, 0);
	if (!name)
		return tally__xerr(e, -EINVAL, "metric name is NULL", NULL, 0);
	memset(&s, 0, sizeof(s));
	memset(&f, 0, sizeof(f));
	s.obj = c;
	s.nr_items = 1;
	s.vstride = 1;
	s.collect = tally__xcollect_counter;
	s.kinds = (unsigned char *)calloc(1, 1);
	s.ser = (struct tally__xseries *)calloc(1, sizeof(*s.ser));
	s.val = (uint64_t *)calloc(1, sizeof(*s.val));
	s.cap_val = 1;
	f.name = tally__xstrdup(name);
	f.help = tally__xhelp_given(help) ? tally__xstrdup(help)
					  : tally__xjoin("tally counter", NULL, NULL);
	f.kind = (unsigned char)kind;
	f.stat = 1;
	if (!s.kinds || !s.ser || !s.val) {
		free(f.name);
		free(f.help);
		tally__xsrc_free(&s);
		return tally__xerr(e, -ENOMEM, "out of memory", NULL, 0);
	}
	s.kinds[0] = (unsigned char)kind;
	return tally__xregister(e, &s, &f, 1);
}

static inline int tally__xcollect_vec(struct tally_export *e, struct tally__xsrc *s)
{
	struct tally_vec *v = (struct tally_vec *)s->obj;
	tally_uword *raw = (tally_uword *)s->priv;
	unsigned i;
	(void)e;
	/* Raw values, one pass over the CPUs: never moved by a reset. */
	if (tally_vec_snapshot(v, raw, s->nr_items))
		return tally__xerr(e, -EINVAL, "vec snapshot failed", NULL, 0);
	for (i = 0; i < s->nr_items; i++)
		s->val[i] = tally__xvalue(&s->ser[i], s->kinds[i], raw[i]);
	s->nr_rows = 1;
	return 0;
}

static inline void tally__xrelease_priv(struct tally__xsrc *s)
{
	free(s->priv);
	s->priv = NULL;
}

/* Fill fams[0..n) for items of a source: name prefix_item[suffix], help,
 * kind. names/helps/kinds may be NULL. Private. */
static inline void tally__xfams_fill(struct tally__xfam *fams, unsigned n, const char *prefix,
				     const char *const *names, const char *const *helps,
				     const unsigned char *kinds, const char *what,
				     const struct tally_vec *vec)
{
	unsigned i;
	for (i = 0; i < n; i++) {
		char num[16 + 12];
		const char *nm = names ? names[i] : NULL;
		if (!nm && !names && vec)
			nm = tally_vec_item_name(vec, i);
		if (!nm) {
			unsigned v = i, len = 0, m;
			do
				len++;
			while ((v /= 10));
			memcpy(num, "item", 4);
			for (v = i, m = 0; m < len; m++, v /= 10)
				num[4 + len - 1 - m] = (char)('0' + v % 10);
			num[4 + len] = '\0';
			nm = num;
		}
		fams[i].name = tally__xjoin(prefix, nm, NULL);
		if (helps && tally__xhelp_given(helps[i]))
			fams[i].help = tally__xstrdup(helps[i]);
		else
			fams[i].help = tally__xjoin(what, NULL, NULL);
		fams[i].kind = kinds ? kinds[i] : (unsigned char)TALLY_EXPORT_COUNTER;
		fams[i].voff = i;
		fams[i].stat = 1;
	}
}

/*
 * tally_export_add_vec - export every item of v as its own family called
 * prefix_<name> (prefix NULL or "": just <name>), where <name> is
 * names[item] (names NULL: the vector's own item name,
 * tally_vec_item_name()), else item<N>. helps[item] (NULL array or entry: a generic
 * help) and kinds[item] (NULL: every item a TALLY_EXPORT_COUNTER) as in
 * tally_export_add_counter. Values are the exact per-item raw sums of one
 * tally_vec_snapshot() (one pass over the CPUs; a reset of the vector
 * does not move them, so exported counters never go back). Returns 0,
 * -EINVAL (any bad name, help or kind: nothing registered; see
 * tally_export_error()) or -ENOMEM.
 */
static inline int tally_export_add_vec(struct tally_export *e, const char *prefix,
				       struct tally_vec *v, const char *const *names,
				       const char *const *helps, const unsigned char *kinds)
{
	struct tally__xsrc s;
	struct tally__xfam *fams;
	unsigned n, i;
	int err;
	if (tally__bad(!e))
		return -EINVAL;
	if (!v || !tally_vec_nr_items(v))
		return tally__xerr(e, -EINVAL, "vec '%s' is NULL or not initialised", prefix, 0);
	n = tally_vec_nr_items(v);
	for (i = 0; kinds && i < n; i++)
		if (kinds[i] != TALLY_EXPORT_COUNTER && kinds[i] != TALLY_EXPORT_GAUGE)
			return tally__xerr(e, -EINVAL, "kind of item %u is neither counter nor gauge",
					   NULL, i);
	memset(&s, 0, sizeof(s));
	s.obj = v;
	s.nr_items = n;
	s.vstride = n;
	s.collect = tally__xcollect_vec;
	s.kinds = (unsigned char *)calloc(n, 1);
	s.ser = (struct tally__xseries *)calloc(n, sizeof(*s.ser));
	s.val = (uint64_t *)calloc(n, sizeof(*s.val));
	s.cap_val = n;
	s.priv = calloc(n, sizeof(tally_uword));
	s.release = tally__xrelease_priv;
	fams = (struct tally__xfam *)calloc(n, sizeof(*fams));
	if (!s.kinds || !s.ser || !s.val || !s.priv || !fams) {
		free(fams);
		tally__xsrc_free(&s);
		return tally__xerr(e, -ENOMEM, "out of memory", NULL, 0);
	}
	tally__xfams_fill(fams, n, prefix, names, helps, kinds, "tally vector item", v);
	for (i = 0; i < n; i++)
		s.kinds[i] = fams[i].kind;
	err = tally__xregister(e, &s, fams, n);
	free(fams);
	return err;
}

/* ---- formatting --------------------------------------------------------------- */

/* Output that counts everything and copies only into a large enough
 * buffer. Private. */
struct tally__xsink {
	char *buf;
	size_t cap, len;
};

TALLY__INLINE void tally__xput(struct tally__xsink *k, const char *s, size_t n)
{
	if (k->buf && k->len + n <= k->cap)
		memcpy(k->buf + k->len, s, n);
	k->len += n;
}

TALLY__INLINE void tally__xputs(struct tally__xsink *k, const char *s)
{
	tally__xput(k, s, strlen(s));
}

static inline void tally__xput_u64(struct tally__xsink *k, uint64_t v)
{
	char d[24];
	int n = 24;
	do
		d[--n] = (char)('0' + v % 10);
	while ((v /= 10));
	tally__xput(k, d + n, (size_t)(24 - n));
}

static inline void tally__xput_value(struct tally__xsink *k, unsigned char kind, uint64_t v)
{
	if (kind == TALLY_EXPORT_GAUGE && (int64_t)v < 0) {
		tally__xput(k, "-", 1);
		tally__xput_u64(k, (uint64_t)0 - v);
	} else {
		tally__xput_u64(k, v);
	}
}

/*
 * Escaped text. mode 0: 0.0.4 help (\\ and \n); 1: label values and
 * OpenMetrics help (\\, \" and \n); 2: JSON strings.
 */
static inline void tally__xput_esc(struct tally__xsink *k, const char *s, int mode)
{
	const char *run = s;
	for (; *s; s++) {
		const char *rep = NULL;
		char u[7];
		unsigned char c = (unsigned char)*s;
		if (c == '\\')
			rep = "\\\\";
		else if (c == '\n')
			rep = "\\n";
		else if (c == '"' && mode >= 1)
			rep = "\\\"";
		else if (mode == 2 && c < 0x20) {
			static const char hex[] = "0123456789abcdef";
			memcpy(u, "\\u00", 4);
			u[4] = hex[c >> 4];
			u[5] = hex[c & 15];
			u[6] = '\0';
			rep = u;
		}
		if (rep) {
			tally__xput(k, run, (size_t)(s - run));
			tally__xputs(k, rep);
			run = s + 1;
		}
	}
	tally__xput(k, run, (size_t)(s - run));
}

/* The sample name of f in format fmt: name, plus _total for counters in
 * the Prometheus and OpenMetrics samples. */
static inline void tally__xput_sample_name(struct tally__xsink *k, const struct tally__xfam *f)
{
	tally__xputs(k, f->name);
	if (f->kind == TALLY_EXPORT_COUNTER)
		tally__xput(k, "_total", 6);
}

static inline void tally__xformat(const struct tally_export *e, int fmt, struct tally__xsink *k)
{
	unsigned fi;
	size_t r;
	int first_fam = 1;
	if (fmt == TALLY_EXPORT_JSON)
		tally__xputs(k, "{\"families\":[");
	for (fi = 0; fi < e->tally__nr_fam; fi++) {
		const struct tally__xfam *f = &e->tally__fam[fi];
		const struct tally__xsrc *s = &e->tally__src[f->src];
		const char *type = f->kind == TALLY_EXPORT_COUNTER ? "counter" : "gauge";
		switch (fmt) {
		case TALLY_EXPORT_PROMETHEUS:
		case TALLY_EXPORT_OPENMETRICS:
			tally__xputs(k, "# HELP ");
			if (fmt == TALLY_EXPORT_PROMETHEUS)
				tally__xput_sample_name(k, f);
			else
				tally__xputs(k, f->name);
			tally__xput(k, " ", 1);
			tally__xput_esc(k, f->help, fmt == TALLY_EXPORT_PROMETHEUS ? 0 : 1);
			tally__xputs(k, "\n# TYPE ");
			if (fmt == TALLY_EXPORT_PROMETHEUS)
				tally__xput_sample_name(k, f);
			else
				tally__xputs(k, f->name);
			tally__xput(k, " ", 1);
			tally__xputs(k, type);
			tally__xput(k, "\n", 1);
			for (r = 0; r < s->nr_rows; r++) {
				tally__xput_sample_name(k, f);
				if (s->label) {
					tally__xput(k, "{", 1);
					tally__xputs(k, s->label);
					tally__xput(k, "=\"", 2);
					tally__xput_esc(k, s->lab + s->lab_off[r], 1);
					tally__xput(k, "\"}", 2);
				}
				tally__xput(k, " ", 1);
				tally__xput_value(k, f->kind, s->val[r * s->vstride + f->voff]);
				tally__xput(k, "\n", 1);
			}
			break;
		case TALLY_EXPORT_STAT:
			/* One line per family; labelled sources give their first
			 * row (a tree's root). */
			if (!f->stat || !s->nr_rows)
				break;
			tally__xputs(k, f->name);
			tally__xput(k, " ", 1);
			tally__xput_value(k, f->kind, s->val[f->voff]);
			tally__xput(k, "\n", 1);
			break;
		default: /* JSON */
			if (!first_fam)
				tally__xput(k, ",", 1);
			first_fam = 0;
			tally__xputs(k, "{\"name\":\"");
			tally__xputs(k, f->name);
			tally__xputs(k, "\",\"type\":\"");
			tally__xputs(k, type);
			tally__xputs(k, "\",\"help\":\"");
			tally__xput_esc(k, f->help, 2);
			tally__xputs(k, "\",\"samples\":[");
			for (r = 0; r < s->nr_rows; r++) {
				if (r)
					tally__xput(k, ",", 1);
				tally__xputs(k, "{\"labels\":{");
				if (s->label) {
					tally__xput(k, "\"", 1);
					tally__xputs(k, s->label);
					tally__xputs(k, "\":\"");
					tally__xput_esc(k, s->lab + s->lab_off[r], 2);
					tally__xput(k, "\"", 1);
				}
				tally__xputs(k, "},\"value\":");
				tally__xput_value(k, f->kind, s->val[r * s->vstride + f->voff]);
				tally__xput(k, "}", 1);
			}
			tally__xputs(k, "]}");
			break;
		}
	}
	if (fmt == TALLY_EXPORT_OPENMETRICS)
		tally__xputs(k, "# EOF\n");
	else if (fmt == TALLY_EXPORT_JSON)
		tally__xputs(k, "]}\n");
}

/* Take a snapshot of every source (advancing the widened totals). */
static inline int tally__xcollect(struct tally_export *e)
{
	unsigned i;
	for (i = 0; i < e->tally__nr_src; i++) {
		int err = e->tally__src[i].collect(e, &e->tally__src[i]);
		if (err) {
			if (err == -ENOMEM)
				tally__xerr(e, err, "out of memory", NULL, 0);
			return err;
		}
	}
	return 0;
}

/*
 * tally_export_render - render every registered family in format fmt into
 * buf (size bytes), NUL-terminated.
 * Returns 0 with *len (if len is not NULL) the bytes written, without the
 * NUL; or -ENOSPC: buf is too small, *len is the size needed (with the
 * NUL) for this snapshot, and buf is left untouched (values can grow
 * between renders: leave slack, or use tally_export_render_alloc()); or
 * -EINVAL (NULL e, a bad format, buf NULL with size > 0, or a bad group
 * name or path met while rendering a tree; see tally_export_error()), or
 * -ENOMEM. Each call reads fresh exact values and advances the widened
 * totals, even when it fails for want of space. Not beside other calls on
 * e; the rendered objects may be updated meanwhile.
 */
static inline int tally_export_render(struct tally_export *e, int fmt, char *buf, size_t size,
				      size_t *len)
{
	struct tally__xsink k;
	int err;
	if (tally__bad(!e))
		return -EINVAL;
	if (fmt < TALLY_EXPORT_PROMETHEUS || fmt > TALLY_EXPORT_JSON)
		return tally__xerr(e, -EINVAL, "unknown format %u", NULL, (unsigned)fmt);
	if (!buf && size)
		return tally__xerr(e, -EINVAL, "buffer is NULL but its size is %u", NULL,
				   (unsigned)(size > 0xffffffffu ? 0xffffffffu : size));
	err = tally__xcollect(e);
	if (err)
		return err;
	k.buf = NULL;
	k.cap = 0;
	k.len = 0;
	tally__xformat(e, fmt, &k);
	if (k.len + 1 > size) {
		if (len)
			*len = k.len + 1;
		return tally__xerr(e, -ENOSPC, "buffer too small: %u bytes needed", NULL,
				   (unsigned)(k.len + 1 > 0xffffffffu ? 0xffffffffu : k.len + 1));
	}
	k.buf = buf;
	k.cap = size;
	k.len = 0;
	tally__xformat(e, fmt, &k);
	buf[k.len] = '\0';
	if (len)
		*len = k.len;
	return 0;
}

/*
 * tally_export_render_alloc - as tally_export_render, into a new buffer:
 * *out (free() it) holds *len bytes and a NUL. Returns 0, -EINVAL or
 * -ENOMEM (*out NULL).
 */
static inline int tally_export_render_alloc(struct tally_export *e, int fmt, char **out,
					    size_t *len)
{
	struct tally__xsink k;
	int err;
	if (tally__bad(!e || !out))
		return -EINVAL;
	*out = NULL;
	if (fmt < TALLY_EXPORT_PROMETHEUS || fmt > TALLY_EXPORT_JSON)
		return tally__xerr(e, -EINVAL, "unknown format %u", NULL, (unsigned)fmt);
	err = tally__xcollect(e);
	if (err)
		return err;
	/* One pass into a buffer the size of the last render plus slack; a
	 * second only if the output outgrew it. */
	k.cap = e->tally__last_len + e->tally__last_len / 8 + 4096;
	k.buf = (char *)malloc(k.cap);
	if (!k.buf)
		return tally__xerr(e, -ENOMEM, "out of memory", NULL, 0);
	k.len = 0;
	tally__xformat(e, fmt, &k);
	if (k.len + 1 > k.cap) {
		free(k.buf);
		k.cap = k.len + 1;
		k.buf = (char *)malloc(k.cap);
		if (!k.buf)
			return tally__xerr(e, -ENOMEM, "out of memory", NULL, 0);
		k.len = 0;
		tally__xformat(e, fmt, &k);
	}
	k.buf[k.len] = '\0';
	e->tally__last_len = k.len;
	*out = k.buf;
	if (len)
		*len = k.len;
	return 0;
}

/* tally_export_content_type - the HTTP Content-Type of a format. */
static inline const char *tally_export_content_type(int fmt)
{
	switch (fmt) {
	case TALLY_EXPORT_OPENMETRICS:
		return TALLY_EXPORT_CONTENT_TYPE_OPENMETRICS;
	case TALLY_EXPORT_JSON:
		return "application/json";
	case TALLY_EXPORT_STAT:
		return "text/plain; charset=utf-8";
	default:
		return TALLY_EXPORT_CONTENT_TYPE_PROMETHEUS;
	}
}

/*
 * tally_export_negotiate - the format to answer an HTTP Accept header
 * with: TALLY_EXPORT_OPENMETRICS if it lists application/openmetrics-text
 * with a non-zero q, else TALLY_EXPORT_PROMETHEUS (also for NULL).
 * Case-insensitive; pure.
 */
static inline int tally_export_negotiate(const char *accept)
{
	static const char om[] = "application/openmetrics-text";
	const char *p = accept;
	while (p && *p) {
		const char *end = strchr(p, ','), *q;
		size_t n, i;
		int match = 1;
		if (!end)
			end = p + strlen(p);
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		n = sizeof(om) - 1;
		if ((size_t)(end - p) < n)
			match = 0;
		for (i = 0; match && i < n; i++) {
			char c = p[i];
			if (c >= 'A' && c <= 'Z')
				c = (char)(c - 'A' + 'a');
			if (c != om[i])
				match = 0;
		}
		if (match && p + n < end && p[n] != ';' && p[n] != ' ' && p[n] != '\t')
			match = 0;
		if (match) {
			/* q=0 (q=0, q=0.0, q=0.00...) refuses it. */
			for (q = p + n; q < end; q++) {
				if (*q == ';') {
					const char *r = q + 1;
					while (r < end && (*r == ' ' || *r == '\t'))
						r++;
					if (r + 2 <= end && (r[0] == 'q' || r[0] == 'Q') && r[1] == '=') {
						const char *d = r + 2;
						int zero = d < end && *d == '0';
						if (zero)
							d++;
						if (zero && d < end && *d == '.')
							for (d++; d < end && *d == '0'; d++)
								;
						if (zero && (d == end || *d == ';' || *d == ' '))
							match = 0;
					}
				}
			}
			if (match)
				return TALLY_EXPORT_OPENMETRICS;
		}
		p = *end ? end + 1 : end;
	}
	return TALLY_EXPORT_PROMETHEUS;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_EXPORT_H */
