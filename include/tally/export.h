/**
 * @file
 * tally/export.h - render counters and vectors, by name, as Prometheus text
 * 0.0.4, OpenMetrics 1.0, flat-keyed "name value" text (like cgroup's
 * memory.stat) and JSON. Trees: <tally/export_rstat.h>.
 *
 *   struct tally_export e;
 *   tally_export_init(&e);
 *   tally_export_add_counter(&e, "requests", "Requests served.", &c,
 *                            TALLY_EXPORT_COUNTER);
 *   tally_export_add_vec(&e, "vm", &v, names, helps, kinds);
 *   tally_export_set_help(&e, "vm_pgfault", "Page faults."); // one per family
 *   size_t len;
 *   int err = tally_export_render(&e, TALLY_EXPORT_OPENMETRICS, buf, sizeof(buf), &len);
 *   // -ENOSPC: len is the size needed (with the NUL); buf untouched
 *   // or streamed through 64 KiB: tally_export_render_write(&e, fmt, out, ctx)
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
 * Labels (a vector's items, tally_export_add_vec; tally_export_name()
 * builds such names). Prometheus and OpenMetrics read a label whose value
 * is empty as no label at all: x{a="1",b=""} is the series x{a="1"}. So a
 * label with an empty value is never rendered, and two items whose labels
 * are equal once empty values are dropped are one series twice: refused
 * (a real Prometheus would keep one of the two values and drop the other
 * without a word). Counters and gauges may not carry the labels le
 * (histograms' buckets) or quantile (summaries'): promtool rejects the
 * whole page for one, so registration refuses them with the reason.
 *
 * Registration costs O(1) per family and series (amortized; names are
 * found by hash), so 100,000 counters register in O(100,000), not
 * O(100,000^2) (bench/bench_export.c).
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
 * Counter and gauge values are integers (a histogram's le and _sum are
 * exact decimals: export_hist.h). Prometheus stores samples as float64:
 * totals past 2^53 lose their low digits there.
 *
 * Concurrency: an exporter is one object with one owner: its calls must
 * not run beside each other (use a lock, or render from one thread). The
 * counters and vectors it renders may be updated by any thread meanwhile
 * (it calls their exact readers, which may run beside anything but
 * init/destroy); a registered object must outlive the exporter or its
 * registration. Rendering allocates (a snapshot of the values, grown as
 * needed) and costs O(series x CPU slots); updates cost nothing extra.
 * tally_export_name() touches no exporter: any thread, any time.
 *
 * This header holds the public structure and calls with their contracts.
 * The machinery sits beside it (each refuses to be included on its own):
 *   tally/export/types.h    the private structs: sources, families, the
 *                           widened series, the output sink
 *   tally/export/names.h    error messages, name and help-text rules,
 *                           UTF-8 validation, building family names
 *   tally/export/widen.h    widening counters to 64 bits
 *   tally/export/sources.h  registering and freeing sources, collecting
 *                           counters' and vectors' values at render time
 *   tally/export/formats.h  escaping, the writers of the four formats,
 *                           the streamed render's buffer
 * Trees add their source in <tally/export_rstat.h>.
 */
#ifndef TALLY_EXPORT_H
#define TALLY_EXPORT_H

#include <tally/monotonic.h>
#include <tally/counter.h>
#include <tally/vec.h>
#include <tally/utf8.h>

#ifdef __cplusplus
extern "C" {
#endif

/**@{*/
/** Longest family name, and longest help text, in bytes. */
#define TALLY_EXPORT_NAME_MAX 200
#define TALLY_EXPORT_HELP_MAX 4096
/**@}*/

/** The formats tally_export_render() writes. */
enum tally_export_format {
	TALLY_EXPORT_PROMETHEUS = 0, /**< Prometheus text exposition format 0.0.4 */
	TALLY_EXPORT_OPENMETRICS = 1, /**< OpenMetrics 1.0 text */
	TALLY_EXPORT_STAT = 2,        /**< "name value" lines (memory.stat) */
	TALLY_EXPORT_JSON = 3         /**< one JSON object of families */
};

/** What a series is: an event counter (widened, _total) or a gauge. */
enum tally_export_kind { TALLY_EXPORT_COUNTER = 0, TALLY_EXPORT_GAUGE = 1 };

/** The Content-Type of TALLY_EXPORT_PROMETHEUS output. */
#define TALLY_EXPORT_CONTENT_TYPE_PROMETHEUS "text/plain; version=0.0.4; charset=utf-8"
/** The Content-Type of TALLY_EXPORT_OPENMETRICS output. */
#define TALLY_EXPORT_CONTENT_TYPE_OPENMETRICS                                  \
	"application/openmetrics-text; version=1.0.0; charset=utf-8"

#define TALLY__EXPORT_INSIDE 1
#include <tally/export/types.h>

/** An exporter: the registered counters, vectors and trees and each
 * counter series' widening state. Opaque: set up with tally_export_init(),
 * then only the tally_export_* calls, one at a time. */
struct tally_export {
	/* private: use the tally_export_* calls */
	struct tally__export_source *tally__sources;
	unsigned tally__nr_sources, tally__cap_sources;
	struct tally__export_family *tally__families;
	unsigned tally__nr_families, tally__cap_families;
	size_t tally__last_len; /* the last render_alloc's length: a size guess */
	unsigned *tally__index; /* the family names' hash table (sources.h) */
	unsigned tally__cap_index;
	char tally__error[512];
};

#include <tally/export/names.h>
#include <tally/export/widen.h>
#include <tally/export/sources.h>
#include <tally/export/formats.h>
#undef TALLY__EXPORT_INSIDE

/* ---- errors -------------------------------------------------------------- */

/**
 * tally_export_error - why the last failing call on e failed, as one line
 * of text ("" if none failed yet). Valid until the next call on e.
 */
static inline const char *tally_export_error(const struct tally_export *e)
{
	return e ? e->tally__error : "no exporter (NULL)";
}

/* ---- exporters ----------------------------------------------------------- */

/**
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

/**
 * tally_export_destroy - free everything e allocated (not the objects it
 * renders). NULL is a no-op. Not beside any other call on e.
 */
static inline void tally_export_destroy(struct tally_export *e)
{
	unsigned i;
	if (!e)
		return;
	for (i = 0; i < e->tally__nr_sources; i++)
		tally__export_source_free(&e->tally__sources[i]);
	for (i = 0; i < e->tally__nr_families; i++)
		tally__export_family_free(&e->tally__families[i]);
	free(e->tally__sources);
	free(e->tally__families);
	free(e->tally__index);
	memset(e, 0, sizeof(*e));
}

/* ---- registration -------------------------------------------------------- */

/**
 * tally_export_add_counter - export c as one family called name (a
 * counter's samples are name_total), with help text help (NULL: a generic
 * one; also for "" or only blanks), as kind TALLY_EXPORT_COUNTER (widened
 * exact sum; the counter must only be added to) or TALLY_EXPORT_GAUGE (the
 * signed exact sum).
 * Returns 0, -EINVAL (bad name, help or kind; NULL e or c; see
 * tally_export_error()) or -ENOMEM; nothing registered on failure. c must
 * stay initialised while e may render it.
 */
static inline int tally_export_add_counter(struct tally_export *e, const char *name,
					   const char *help, struct tally_counter *c, int kind)
{
	struct tally__export_source s;
	struct tally__export_family f;
	if (tally__bad(!e))
		return -EINVAL;
	if (!c)
		return tally__export_fail(e, -EINVAL, "counter '%s' is NULL", name, 0);
	if (kind != TALLY_EXPORT_COUNTER && kind != TALLY_EXPORT_GAUGE)
		return tally__export_fail(e, -EINVAL, "kind of '%s' is neither counter nor gauge",
					  name, 0);
	if (!name)
		return tally__export_fail(e, -EINVAL, "metric name is NULL", NULL, 0);
	memset(&s, 0, sizeof(s));
	memset(&f, 0, sizeof(f));
	s.obj = c;
	s.nr_items = 1;
	s.row_len = 1;
	s.collect = tally__export_collect_counter;
	s.kinds = (unsigned char *)calloc(1, 1);
	s.series = (struct tally__export_series *)calloc(1, sizeof(*s.series));
	s.values = (uint64_t *)calloc(1, sizeof(*s.values));
	s.cap_values = 1;
	f.name = tally__export_strdup(name);
	f.help = tally__export_help_given(help) ? tally__export_strdup(help)
						: tally__export_join("tally counter", NULL, NULL);
	f.kind = (unsigned char)kind;
	f.in_stat = 1;
	if (!s.kinds || !s.series || !s.values) {
		free(f.name);
		free(f.help);
		tally__export_source_free(&s);
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	}
	s.kinds[0] = (unsigned char)kind;
	return tally__export_register(e, &s, &f, 1);
}

/**
 * tally_export_add_vec - export the items of v, each named prefix_\<name\>
 * (prefix NULL or "": just \<name\>), where \<name\> is names[item] (names
 * NULL: the vector's own item name, tally_vec_item_name()), else item\<N\>.
 *
 * Labels: an item named "base{label=\"value\",...}" is a series of the
 * family prefix_base with those labels, so 12 stats x 64 slab classes
 * named "slab_get_hits{class=\"12\"}" ... are 12 families of 64 series.
 * Label names are [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__", not le
 * or quantile, each once per item; values are quoted UTF-8 with \\, \"
 * and \n escaped as in the text format; no blanks, nothing after the '}'.
 * tally_export_name() builds such a name from pairs. A label whose value
 * is empty is the label's absence (see Labels in the header comment): not
 * rendered, so "y{code=\"\"}" is the series y. The items of one family
 * must have one kind and differ in their labels once empty values are
 * dropped.
 * Hidden items (TALLY_VEC_ITEM_HIDDEN) are left out.
 *
 * helps[item] (NULL array or entry: a generic help; a family takes the
 * first one given among its items). One help per family, without an
 * array of nr_items: tally_export_set_help() after this call.
 * kinds: NULL (recommended) takes each item's kind from v
 * (TALLY_VEC_ITEM_GAUGE: a gauge, else a counter); deprecated: an array
 * of nr_items TALLY_EXPORT_COUNTER / TALLY_EXPORT_GAUGE overrides them
 * for this export only (a reset of v still follows v's own kinds).
 *
 * Values are the exact per-item raw sums of one tally_vec_snapshot() (one
 * pass over the CPUs; a reset of the vector does not move them, so
 * exported counters never go back; a gauge's raw value is its level).
 * @return 0; -EINVAL (a bad name, label, help or kind, two items with one
 *         series (also once empty label values are dropped), a reserved
 *         label (le, quantile), NULL or uninitialised v; nothing
 *         registered; the message, tally_export_error(), quotes the
 *         name, and for a name the
 *         exporter cannot take, such as a reserved suffix
 *         ("response_obj_count"), names the item to rename with
 *         tally_vec_set_item_name() or through names); -ENOMEM.
 * Not beside other calls on e, nor beside tally_vec_set_item_name() on v
 * (the names are copied here: renaming v later does not rename exported
 * families).
 */
static inline int tally_export_add_vec(struct tally_export *e, const char *prefix,
				       struct tally_vec *v, const char *const *names,
				       const char *const *helps, const unsigned char *kinds)
{
	struct tally__export_source s;
	struct tally__export_family *fams;
	unsigned n, i, nfam;
	int err;
	if (tally__bad(!e))
		return -EINVAL;
	if (!v || !tally_vec_nr_items(v))
		return tally__export_fail(e, -EINVAL, "vec '%s' is NULL or not initialised", prefix,
					  0);
	n = tally_vec_nr_items(v);
	for (i = 0; kinds && i < n; i++)
		if (kinds[i] != TALLY_EXPORT_COUNTER && kinds[i] != TALLY_EXPORT_GAUGE)
			return tally__export_fail(e, -EINVAL,
						  "kind of item %u is neither counter nor gauge",
						  NULL, i);
	memset(&s, 0, sizeof(s));
	s.obj = v;
	s.nr_items = n;
	s.row_len = n;
	s.collect = tally__export_collect_vec;
	s.kinds = (unsigned char *)calloc(n, 1);
	s.series = (struct tally__export_series *)calloc(n, sizeof(*s.series));
	s.values = (uint64_t *)calloc(n, sizeof(*s.values));
	s.cap_values = n;
	s.priv = calloc(n, sizeof(tally_uword));
	s.release = tally__export_release_priv;
	fams = (struct tally__export_family *)calloc(n, sizeof(*fams));
	if (!s.kinds || !s.series || !s.values || !s.priv || !fams) {
		free(fams);
		tally__export_source_free(&s);
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	}
	{
		struct tally__export_items it = {n, NULL, names != NULL, NULL, s.kinds, helps,
						 "tally vector item", "vector item",
						 "tally_vec_set_item_name", NULL};
		const char **own = (const char **)malloc(n * sizeof(*own));
		unsigned char *hidden = (unsigned char *)malloc(n);
		err = own && hidden ? 0 : tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		for (i = 0; !err && i < n; i++) {
			unsigned fl = tally_vec_item_flags(v, i);
			own[i] = names ? names[i] : tally_vec_item_name(v, i);
			hidden[i] = (fl & TALLY_VEC_ITEM_HIDDEN) != 0;
			s.kinds[i] = kinds ? kinds[i]
				    : (fl & TALLY_VEC_ITEM_GAUGE) ? (unsigned char)TALLY_EXPORT_GAUGE
								  : (unsigned char)TALLY_EXPORT_COUNTER;
		}
		it.names = own;
		it.hidden = hidden;
		if (!err)
			err = tally__export_item_families(e, fams, &nfam, prefix, &it);
		free((void *)own);
		free(hidden);
	}
	if (err) {
		free(fams);
		tally__export_source_free(&s);
		return err;
	}
	err = tally__export_register(e, &s, fams, nfam);
	free(fams);
	return err;
}

/**
 * tally_export_set_help - set the help text of e's registered family
 * called family (its name as registered: a counter's without _total; a
 * vector's prefix_base, without labels; a tree's prefix_\<name\> or
 * prefix_\<name\>_local) to help, replacing the one it had (given or
 * generic). So the 7 families of an 806-item vector get their 7 helps by
 * name, with no array of 806. help is taken as it is (a tree family's
 * help gets no suffix here).
 * @return 0; -EINVAL (NULL e or family; help NULL, empty or only blanks,
 *         longer than TALLY_EXPORT_HELP_MAX or not valid UTF-8; see
 *         tally_export_error()); -ENOENT (no family of that name, message
 *         set); -ENOMEM (the old help kept). O(1): the name is found by
 *         hash.
 * Not beside other calls on e (a render reads the help).
 */
static inline int tally_export_set_help(struct tally_export *e, const char *family,
					const char *help)
{
	long f;
	char *d;
	int err;
	if (tally__bad(!e))
		return -EINVAL;
	if (!family)
		return tally__export_fail(e, -EINVAL, "metric name is NULL", NULL, 0);
	if (!tally__export_help_given(help))
		return tally__export_fail(e, -EINVAL, "help text of '%s' is NULL, empty or blank",
					  family, 0);
	err = tally__export_check_help(e, family, help);
	if (err)
		return err;
	f = tally__export_find(e, family);
	if (f < 0)
		return tally__export_fail(e, -ENOENT, "metric name '%s' is not registered",
					  family, 0);
	d = tally__export_strdup(help);
	if (!d)
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	if (!e->tally__families[f].help_const)
		free(e->tally__families[f].help);
	e->tally__families[f].help = d;
	e->tally__families[f].help_const = 0;
	return 0;
}

/* ---- names of labelled items --------------------------------------------- */

/**
 * tally_export_name - write the labelled item name
 * family{k1="v1",k2="v2",...} into buf (size bytes, NUL-terminated), for
 * tally_export_add_vec's names or tally_vec_set_item_name(), so callers
 * need not escape by hand.
 * @param buf    where the name goes (NULL only with size 0).
 * @param size   bytes at buf, the NUL included.
 * @param family a valid family name itself (the rules under Names in the
 *        header comment; tally_export_add_vec may still add its prefix).
 * @param pairs  label names and values, k1, v1, k2, v2, ..., then NULL
 *        (pairs NULL: no labels). A name is [a-zA-Z_][a-zA-Z0-9_]*, not
 *        starting with "__", not le or quantile, each once; a value is any
 *        valid UTF-8 (not NULL), written with backslash, double quote and
 *        newline escaped (\\, \", \n). Labels come out in the order given
 *        (tally_export_add_vec sorts them); a label whose value is "" is left
 *        out (an empty value is the label's absence), and with no label
 *        left the name is just family.
 * @return 0; -EINVAL (NULL family, buf NULL with size > 0, a bad family
 *         name, a bad, reserved or repeated label name, a NULL value or one
 *         that is not UTF-8); -ENOSPC (buf too small for the name and its
 *         NUL). On failure buf holds "" (when size > 0).
 * Pure: it reads only its arguments; any thread, any time.
 */
static inline int tally_export_name(char *buf, size_t size, const char *family,
				    const char *const *pairs)
{
	struct tally_export scratch; /* check_name's message, unread */
	struct tally__export_sink k;
	size_t i, j;
	int any = 0;
	if (!buf && size)
		return -EINVAL;
	if (size)
		buf[0] = '\0';
	memset(&scratch, 0, sizeof(scratch));
	if (!family || tally__export_check_name(&scratch, family))
		return -EINVAL;
	for (i = 0; pairs && pairs[i]; i += 2) {
		const char *l = pairs[i], *p;
		if (!pairs[i + 1] || !tally__export_label_start(l[0]) ||
		    (l[0] == '_' && l[1] == '_') ||
		    !tally__utf8_ok(pairs[i + 1], strlen(pairs[i + 1])))
			return -EINVAL;
		for (p = l; tally__export_label_start(*p) || (*p >= '0' && *p <= '9'); p++)
			;
		if (*p || tally__export_label_reserved(l, (size_t)(p - l)))
			return -EINVAL;
		for (j = 0; j < i; j += 2)
			if (!strcmp(pairs[j], l))
				return -EINVAL;
	}
	memset(&k, 0, sizeof(k));
	k.buf = buf;
	k.cap = size;
	tally__export_puts(&k, family);
	for (i = 0; pairs && pairs[i]; i += 2) {
		if (!pairs[i + 1][0])
			continue;
		tally__export_put(&k, any ? "," : "{", 1);
		any = 1;
		tally__export_puts(&k, pairs[i]);
		tally__export_put(&k, "=\"", 2);
		tally__export_put_escaped(&k, pairs[i + 1], TALLY__EXPORT_ESC_QUOTED);
		tally__export_put(&k, "\"", 1);
	}
	if (any)
		tally__export_put(&k, "}", 1);
	if (k.len + 1 > size) {
		if (size)
			buf[0] = '\0';
		return -ENOSPC;
	}
	buf[k.len] = '\0';
	return 0;
}

/* ---- rendering ----------------------------------------------------------- */

/**
 * tally_export_render - render every registered family in format fmt into
 * buf (size bytes), NUL-terminated.
 * Returns 0 with *len (if len is not NULL) the bytes written, without the
 * NUL; or -ENOSPC: buf is too small, *len is the size needed (with the
 * NUL) for this snapshot, and buf is left untouched (values can grow
 * between renders: leave slack, or use tally_export_render_alloc()); or
 * -EINVAL (NULL e, a bad format, buf NULL with size > 0, or a bad group
 * name or path met while rendering a tree; see tally_export_error()),
 * -E2BIG (a tree's group path longer than TALLY_EXPORT_PATH_MAX), or
 * -ENOMEM. Each call reads fresh exact values and advances the widened
 * totals, even when it fails for want of space. Not beside other calls on
 * e; the rendered objects may be updated meanwhile.
 */
static inline int tally_export_render(struct tally_export *e, int fmt, char *buf, size_t size,
				      size_t *len)
{
	struct tally__export_sink k;
	int err;
	if (tally__bad(!e))
		return -EINVAL;
	if (fmt < TALLY_EXPORT_PROMETHEUS || fmt > TALLY_EXPORT_JSON)
		return tally__export_fail(e, -EINVAL, "unknown format %u", NULL, (unsigned)fmt);
	if (!buf && size)
		return tally__export_fail(e, -EINVAL, "buffer is NULL but its size is %u", NULL,
					  (unsigned)(size > 0xffffffffu ? 0xffffffffu : size));
	err = tally__export_collect_all(e);
	if (err)
		return err;
	memset(&k, 0, sizeof(k));
	tally__export_write(e, fmt, &k);
	if (k.len + 1 > size) {
		if (len)
			*len = k.len + 1;
		return tally__export_fail(
			e, -ENOSPC, "buffer too small: %u bytes needed", NULL,
			(unsigned)(k.len + 1 > 0xffffffffu ? 0xffffffffu : k.len + 1));
	}
	k.buf = buf;
	k.cap = size;
	k.len = 0;
	tally__export_write(e, fmt, &k);
	buf[k.len] = '\0';
	if (len)
		*len = k.len;
	return 0;
}

/**
 * tally_export_render_alloc - as tally_export_render, into a new buffer:
 * *out (free() it) holds *len bytes and a NUL. Returns 0, -EINVAL, -E2BIG
 * or -ENOMEM (*out NULL).
 */
static inline int tally_export_render_alloc(struct tally_export *e, int fmt, char **out,
					    size_t *len)
{
	struct tally__export_sink k;
	int err;
	if (tally__bad(!e || !out))
		return -EINVAL;
	*out = NULL;
	if (fmt < TALLY_EXPORT_PROMETHEUS || fmt > TALLY_EXPORT_JSON)
		return tally__export_fail(e, -EINVAL, "unknown format %u", NULL, (unsigned)fmt);
	err = tally__export_collect_all(e);
	if (err)
		return err;
	/* One pass into a buffer the size of the last render plus slack,
	 * doubled as the output outgrows it; a second pass, into a buffer of
	 * the size counted, only if growing it failed. */
	memset(&k, 0, sizeof(k));
	k.cap = e->tally__last_len + e->tally__last_len / 8 + 4096;
	k.buf = (char *)malloc(k.cap);
	if (!k.buf)
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	k.grow = 1;
	tally__export_write(e, fmt, &k);
	tally__export_put(&k, "", 1); /* the NUL */
	if (k.len > k.cap) {
		free(k.buf);
		k.cap = k.len;
		k.buf = (char *)malloc(k.cap);
		if (!k.buf)
			return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		k.len = 0;
		k.grow = 0;
		tally__export_write(e, fmt, &k);
		tally__export_put(&k, "", 1);
	}
	k.len--; /* (not counting the NUL) */
	if (k.cap - k.len > k.cap / 4 + 4096) { /* doubled past it: give the rest back */
		char *b = (char *)realloc(k.buf, k.len + 1);
		if (b)
			k.buf = b;
	}
	e->tally__last_len = k.len;
	*out = k.buf;
	if (len)
		*len = k.len;
	return 0;
}

/**
 * tally_export_render_write - as tally_export_render, streamed: the output
 * (no NUL) goes to out(ctx, buf, len) in pieces of 1 to 64 KiB (longer
 * only for one string longer than that), in order, through one 64 KiB
 * buffer: a render of megabytes is never held whole. out returns 0 to
 * go on; any other value (a negative errno, say) stops the render: no
 * more calls, and that value is returned. The values are all collected
 * before the first call, so a failure of the render itself (a corrupted
 * region, a bad tree) comes before any output.
 * @return 0; out's first nonzero value; -EINVAL (NULL e or out, a bad
 *         format, a bad group name or path in a tree; see
 *         tally_export_error()), -E2BIG or -ENOMEM, before any call of out.
 * Not beside other calls on e; the rendered objects may be updated
 * meanwhile.
 */
static inline int tally_export_render_write(struct tally_export *e, int fmt,
					    int (*out)(void *ctx, const char *buf, size_t len),
					    void *ctx)
{
	if (tally__bad(!e))
		return -EINVAL;
	if (fmt < TALLY_EXPORT_PROMETHEUS || fmt > TALLY_EXPORT_JSON)
		return tally__export_fail(e, -EINVAL, "unknown format %u", NULL, (unsigned)fmt);
	if (!out)
		return tally__export_fail(e, -EINVAL, "the output call is NULL", NULL, 0);
	return tally__export_render_write(e, fmt, out, ctx);
}

/* ---- HTTP ---------------------------------------------------------------- */

/** tally_export_content_type - the HTTP Content-Type of a format. */
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

/**
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
					if (r + 2 <= end && (r[0] == 'q' || r[0] == 'Q') &&
					    r[1] == '=') {
						const char *d = r + 2;
						int zero = d < end && *d == '0';
						if (zero)
							d++;
						if (zero && d < end && *d == '.')
							for (d++; d < end && *d == '0'; d++)
								;
						/* then the end, or OWS (space or
						 * tab) or the next parameter */
						if (zero && (d == end || *d == ';' || *d == ' ' ||
							     *d == '\t'))
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
