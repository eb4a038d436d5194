/**
 * @file
 * tally/export/formats.h - the renderers (private; include <tally/export.h>):
 * output that counts what it would write (or grows, or is handed on as a
 * fixed buffer fills: render_write), escaping, and one writer per
 * format: Prometheus text 0.0.4, OpenMetrics 1.0, memory.stat-like text
 * and JSON.
 */
#ifndef TALLY_EXPORT_FORMATS_H
#define TALLY_EXPORT_FORMATS_H

#if !defined(TALLY__EXPORT_INSIDE)
#  error "tally/export/formats.h is private: include <tally/export.h>"
#endif

/* Make room in k (grow set) for n more bytes: cap doubled (at least);
 * 0, or -ENOMEM with grow cleared (buf kept as it is). */
static inline int tally__export_sink_grow(struct tally__export_sink *k, size_t n)
{
	size_t cap = k->cap ? k->cap : 4096;
	char *b;
	while (cap < k->len + n && cap <= (size_t)-1 / 2)
		cap *= 2;
	b = cap >= k->len + n ? (char *)realloc(k->buf, cap) : NULL;
	if (!b) {
		k->grow = 0;
		return -ENOMEM;
	}
	k->buf = b;
	k->cap = cap;
	return 0;
}

/* Hand k's pending bytes to its flush (nothing after an error; err kept). */
static inline int tally__export_sink_flush(struct tally__export_sink *k)
{
	if (!k->err && k->len)
		k->err = k->flush(k->ctx, k->buf, k->len);
	k->len = 0;
	if (k->err)
		k->cap = 0; /* every write from here on comes to _more, dropped */
	return k->err;
}

/* A write that does not fit in k's buffer (len + n > cap): grown into
 * (grow), handed on (flush), or counted only. */
TALLY__COLD void tally__export_put_more(struct tally__export_sink *k, const char *s, size_t n)
{
	if (k->flush) {
		if (tally__export_sink_flush(k))
			return;
		if (n > k->cap) { /* longer than the buffer: handed on as it is */
			if ((k->err = k->flush(k->ctx, s, n)) != 0)
				k->cap = 0;
			return;
		}
		memcpy(k->buf, s, n);
		k->len = n;
		return;
	}
	if (k->grow && !tally__export_sink_grow(k, n))
		memcpy(k->buf + k->len, s, n);
	k->len += n;
}

TALLY__INLINE void tally__export_put(struct tally__export_sink *k, const char *s, size_t n)
{
	if (k->len + n <= k->cap) {
		if (n) /* (cap may be 0 with no buf) */
			memcpy(k->buf + k->len, s, n);
		k->len += n;
	} else if (!k->buf) {
		k->len += n; /* counted only */
	} else {
		tally__export_put_more(k, s, n);
	}
}

TALLY__INLINE void tally__export_puts(struct tally__export_sink *k, const char *s)
{
	tally__export_put(k, s, strlen(s));
}

static inline void tally__export_put_u64(struct tally__export_sink *k, uint64_t v)
{
	char d[24];
	int n = 24;
	do
		d[--n] = (char)('0' + v % 10);
	while ((v /= 10));
	tally__export_put(k, d + n, (size_t)(24 - n));
}

static inline void tally__export_put_value(struct tally__export_sink *k, unsigned char kind,
					   uint64_t v)
{
	if (kind == TALLY_EXPORT_GAUGE && (int64_t)v < 0) {
		tally__export_put(k, "-", 1);
		tally__export_put_u64(k, (uint64_t)0 - v);
	} else {
		tally__export_put_u64(k, v);
	}
}

/* How tally__export_put_escaped escapes. */
enum tally__export_escape {
	TALLY__EXPORT_ESC_HELP_004, /* Prometheus 0.0.4 help: \\ and \n */
	TALLY__EXPORT_ESC_QUOTED,   /* label values, OpenMetrics help: \\, \" and \n */
	TALLY__EXPORT_ESC_JSON      /* JSON strings: \\, \", \n, control characters */
};

/* s, escaped as mode says. */
static inline void tally__export_put_escaped(struct tally__export_sink *k, const char *s,
					     enum tally__export_escape mode)
{
	const char *run = s;
	if (mode != TALLY__EXPORT_ESC_JSON) {
		/* Runs of bytes kept as they are, found by strcspn() (the C
		 * library's: many bytes a step), then one escape. */
		const char *stop = mode == TALLY__EXPORT_ESC_QUOTED ? "\\\n\"" : "\\\n";
		for (;;) {
			size_t n = strcspn(s, stop);
			tally__export_put(k, s, n);
			s += n;
			if (!*s)
				return;
			tally__export_put(k, *s == '\\' ? "\\\\" : *s == '\n' ? "\\n" : "\\\"", 2);
			s++;
		}
	}
	for (;; s++) {
		const char *rep = NULL;
		char u[7];
		unsigned char c = (unsigned char)*s;
		/* JSON. Past '"', only the backslash is escaped (most bytes:
		 * one test); below it, '"' and the control characters (the
		 * NUL ends s). */
		if (c > '"' && c != '\\')
			continue;
		if (!c)
			break;
		if (c == '\\')
			rep = "\\\\";
		else if (c == '\n')
			rep = "\\n";
		else if (c == '"')
			rep = "\\\"";
		else if (c < 0x20) {
			static const char hex[] = "0123456789abcdef";
			memcpy(u, "\\u00", 4);
			u[4] = hex[c >> 4];
			u[5] = hex[c & 15];
			u[6] = '\0';
			rep = u;
		}
		if (rep) {
			tally__export_put(k, run, (size_t)(s - run));
			tally__export_puts(k, rep);
			run = s + 1;
		}
	}
	tally__export_put(k, run, (size_t)(s - run));
}

/* How many series f has in a row (see struct tally__export_family). */
TALLY__INLINE unsigned tally__export_nr_series(const struct tally__export_family *f)
{
	return f->nr_cols ? f->nr_cols : 1;
}

/* The value of f's series c in row r. */
TALLY__INLINE uint64_t tally__export_at(const struct tally__export_source *s,
					const struct tally__export_family *f, size_t r, unsigned c)
{
	return s->values[r * s->row_len + (f->nr_cols ? f->cols[c] : f->column)];
}

/*
 * The labels of row r, series c of f: {row="...",name="value",...} for the
 * text formats (nothing when there are none), "row":"...","name":"value"
 * for JSON (mode TALLY__EXPORT_ESC_JSON), values escaped as mode says.
 */
static inline void tally__export_put_labels(struct tally__export_sink *k,
					    const struct tally__export_source *s,
					    const struct tally__export_family *f, size_t r,
					    unsigned c, enum tally__export_escape mode)
{
	const char *l = f->nr_cols ? f->col_labels[c] : NULL;
	int json = mode == TALLY__EXPORT_ESC_JSON, first = 1;
	if (!s->label_name && !l)
		return;
	if (!json)
		tally__export_put(k, "{", 1);
	if (s->label_name) {
		if (json)
			tally__export_put(k, "\"", 1);
		tally__export_puts(k, s->label_name);
		tally__export_puts(k, json ? "\":\"" : "=\"");
		tally__export_put_escaped(k, s->labels + s->label_at[r], mode);
		tally__export_put(k, "\"", 1);
		first = 0;
	}
	for (; l && *l; l += strlen(l) + 1, l += strlen(l) + 1) {
		if (!first)
			tally__export_put(k, ",", 1);
		first = 0;
		if (json)
			tally__export_put(k, "\"", 1);
		tally__export_puts(k, l);
		tally__export_puts(k, json ? "\":\"" : "=\"");
		tally__export_put_escaped(k, l + strlen(l) + 1, mode);
		tally__export_put(k, "\"", 1);
	}
	if (!json)
		tally__export_put(k, "}", 1);
}

/* Prometheus text 0.0.4 (fmt TALLY_EXPORT_PROMETHEUS: HELP and TYPE name
 * the samples, with _total) or OpenMetrics 1.0 (they name the family):
 * one family, its HELP and TYPE lines and one sample per row. */
static inline void tally__export_write_text(struct tally__export_sink *k, int fmt,
					    const struct tally__export_family *f,
					    const struct tally__export_source *s)
{
	int om = fmt == TALLY_EXPORT_OPENMETRICS, counter = f->kind == TALLY_EXPORT_COUNTER;
	size_t nl = strlen(f->name), r; /* (the sample name: name, _total for counters) */
	unsigned c;
	tally__export_put(k, "# HELP ", 7);
	tally__export_put(k, f->name, nl);
	if (!om && counter)
		tally__export_put(k, "_total", 6);
	tally__export_put(k, " ", 1);
	tally__export_put_escaped(k, f->help,
				  om ? TALLY__EXPORT_ESC_QUOTED : TALLY__EXPORT_ESC_HELP_004);
	tally__export_put(k, "\n# TYPE ", 8);
	tally__export_put(k, f->name, nl);
	if (!om && counter)
		tally__export_put(k, "_total", 6);
	if (counter)
		tally__export_put(k, " counter\n", 9);
	else
		tally__export_put(k, " gauge\n", 7);
	for (r = 0; r < s->nr_rows; r++) {
		for (c = 0; c < tally__export_nr_series(f); c++) {
			tally__export_put(k, f->name, nl);
			if (counter)
				tally__export_put(k, "_total", 6);
			tally__export_put_labels(k, s, f, r, c, TALLY__EXPORT_ESC_QUOTED);
			tally__export_put(k, " ", 1);
			tally__export_put_value(k, f->kind, tally__export_at(s, f, r, c));
			tally__export_put(k, "\n", 1);
		}
	}
}

/* memory.stat-like text: one "name value" line per family; labelled
 * sources give their first row (a tree's root) without its label; a
 * family of labelled vector items one line per series,
 * name{label="value"} value. */
static inline void tally__export_write_stat(struct tally__export_sink *k,
					    const struct tally__export_family *f,
					    const struct tally__export_source *s)
{
	unsigned c;
	if (!f->in_stat || !s->nr_rows)
		return;
	for (c = 0; c < tally__export_nr_series(f); c++) {
		tally__export_puts(k, f->name);
		if (f->nr_cols && f->col_labels[c]) {
			struct tally__export_source bare = *s;
			bare.label_name = NULL; /* the row is the root: no label */
			tally__export_put_labels(k, &bare, f, 0, c, TALLY__EXPORT_ESC_QUOTED);
		}
		tally__export_put(k, " ", 1);
		tally__export_put_value(k, f->kind, tally__export_at(s, f, 0, c));
		tally__export_put(k, "\n", 1);
	}
}

/* JSON: one family object, its samples with their labels. */
static inline void tally__export_write_json(struct tally__export_sink *k,
					    const struct tally__export_family *f,
					    const struct tally__export_source *s)
{
	unsigned c;
	size_t r;
	tally__export_puts(k, "{\"name\":\"");
	tally__export_puts(k, f->name);
	tally__export_puts(k, "\",\"type\":\"");
	tally__export_puts(k, f->kind == TALLY_EXPORT_COUNTER ? "counter" : "gauge");
	tally__export_puts(k, "\",\"help\":\"");
	tally__export_put_escaped(k, f->help, TALLY__EXPORT_ESC_JSON);
	tally__export_puts(k, "\",\"samples\":[");
	for (r = 0; r < s->nr_rows; r++) {
		for (c = 0; c < tally__export_nr_series(f); c++) {
			if (r || c)
				tally__export_put(k, ",", 1);
			tally__export_puts(k, "{\"labels\":{");
			tally__export_put_labels(k, s, f, r, c, TALLY__EXPORT_ESC_JSON);
			tally__export_puts(k, "},\"value\":");
			tally__export_put_value(k, f->kind, tally__export_at(s, f, r, c));
			tally__export_put(k, "}", 1);
		}
	}
	tally__export_puts(k, "]}");
}

/* Every family of e in format fmt (checked) into k (stopped after the
 * family where k's flush failed). */
static inline void tally__export_write(const struct tally_export *e, int fmt,
				       struct tally__export_sink *k)
{
	unsigned i;
	if (fmt == TALLY_EXPORT_JSON)
		tally__export_puts(k, "{\"families\":[");
	for (i = 0; i < e->tally__nr_families && !k->err; i++) {
		const struct tally__export_family *f = &e->tally__families[i];
		const struct tally__export_source *s = &e->tally__sources[f->source];
		if (s->write) {
			if (fmt == TALLY_EXPORT_JSON && i)
				tally__export_put(k, ",", 1);
			s->write(k, fmt, f, s);
			continue;
		}
		switch (fmt) {
		case TALLY_EXPORT_PROMETHEUS:
		case TALLY_EXPORT_OPENMETRICS:
			tally__export_write_text(k, fmt, f, s);
			break;
		case TALLY_EXPORT_STAT:
			tally__export_write_stat(k, f, s);
			break;
		default: /* JSON */
			if (i)
				tally__export_put(k, ",", 1);
			tally__export_write_json(k, f, s);
			break;
		}
	}
	if (fmt == TALLY_EXPORT_OPENMETRICS)
		tally__export_puts(k, "# EOF\n");
	else if (fmt == TALLY_EXPORT_JSON)
		tally__export_puts(k, "]}\n");
}

/* tally_export_render_write's buffer, in bytes. */
#define TALLY__EXPORT_WRITE_BUF 65536

/* tally_export_render_write (e, fmt and out checked): e's output through
 * one TALLY__EXPORT_WRITE_BUF buffer, handed to out as it fills. */
static inline int tally__export_render_write(struct tally_export *e, int fmt,
					     int (*out)(void *ctx, const char *buf, size_t len),
					     void *ctx)
{
	struct tally__export_sink k;
	int err = tally__export_collect_all(e);
	if (err)
		return err;
	memset(&k, 0, sizeof(k));
	k.buf = (char *)malloc(TALLY__EXPORT_WRITE_BUF);
	if (!k.buf)
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	k.cap = TALLY__EXPORT_WRITE_BUF;
	k.flush = out;
	k.ctx = ctx;
	tally__export_write(e, fmt, &k);
	err = tally__export_sink_flush(&k);
	free(k.buf);
	if (err)
		tally__export_fail(e, err, "the output call returned %s%u", err < 0 ? "-" : "",
				   err < 0 ? 0u - (unsigned)err : (unsigned)err);
	return err;
}

#endif /* TALLY_EXPORT_FORMATS_H */
