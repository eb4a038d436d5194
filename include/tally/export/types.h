/**
 * @file
 * tally/export/types.h - the private parts of an exporter (private; include
 * <tally/export.h>): a registered source, its families, the widened
 * state of a counter series, and the output sink of a render.
 */
#ifndef TALLY_EXPORT_TYPES_H
#define TALLY_EXPORT_TYPES_H

#if !defined(TALLY__EXPORT_INSIDE)
#  error "tally/export/types.h is private: include <tally/export.h>"
#endif

struct tally_export;
struct tally__export_family;

/* Output that counts everything and copies only into a large enough
 * buffer (cap > 0 only with buf); with grow set, buf is malloc'd and
 * realloc'd, doubled, when a write would not fit (render_alloc's one
 * pass), grow cleared if that fails (the rest is then counted only).
 * With flush set (render_write), buf is a fixed buffer of cap bytes whose
 * len bytes are handed to flush(ctx, ...) when a write would not fit
 * (and at the end: tally__export_sink_flush()), len then back to 0; a
 * write longer than cap goes to flush as it is. flush's first nonzero
 * return is kept in err, and nothing is written after it. Set up with
 * every field zero but those it uses. */
struct tally__export_sink {
	char *buf;
	size_t cap, len;
	int grow;
	int err;
	int (*flush)(void *ctx, const char *buf, size_t len);
	void *ctx;
};

/* Widened state of one counter series. */
struct tally__export_series {
	tally_uword last; /* raw word at the last render */
	uint64_t total;   /* widened value */
};

/*
 * One registered object (a counter, a vector, a tree). Its families are
 * contiguous in the exporter's family table. A render fills values with
 * rows of row_len values; a row may carry a label value (a group path).
 */
struct tally__export_source {
	void *obj;
	unsigned nr_items;
	unsigned first_family, nr_families;
	unsigned char *kinds;                /* [nr_items] */
	struct tally__export_series *series; /* [nr_items] counter/vec widening */
	uint64_t *values;                    /* [nr_rows * row_len] this render */
	size_t nr_rows, row_len, cap_values;
	const char *label_name; /* label name of rows, or NULL */
	char *labels;           /* row label values, each NUL-ended */
	size_t *label_at;       /* [nr_rows] offsets into labels */
	int (*collect)(struct tally_export *e, struct tally__export_source *s);
	void (*release)(struct tally__export_source *s);
	/* A source whose families are not rows of values (a histogram)
	 * writes them itself, in every format; NULL for the others. */
	void (*write)(struct tally__export_sink *k, int fmt, const struct tally__export_family *f,
		      const struct tally__export_source *s);
	void *priv;
};

/*
 * One metric family. Its series in a row: one at column without labels of
 * its own (nr_cols 0), or nr_cols of them (a vector's items named
 * "family{label=\"value\"}"), series c at cols[c] with the labels
 * col_labels[c] (NULL: none; else "name\0value\0...name\0value\0\0",
 * values unescaped, sorted by name). A row's label (a tree's group) comes
 * first.
 */
struct tally__export_family {
	char *name;
	char *help;
	unsigned source;       /* index of its source */
	unsigned column;       /* offset of its value in a row (nr_cols 0) */
	unsigned char kind;    /* enum tally_export_kind */
	unsigned char in_stat; /* rendered in TALLY_EXPORT_STAT */
	/* help is a string constant of the library's, valid UTF-8 within
	 * TALLY_EXPORT_HELP_MAX: not owned (never freed), not checked by
	 * registering; 0: help is malloc'd and owned. */
	unsigned char help_const;
	/* name is not owned (never freed with the family): it lies in a
	 * block its source owns (a region's family names, one allocation,
	 * tally/shm/pick.h), freed with that source; 0: name is malloc'd
	 * and owned. */
	unsigned char name_const;
	unsigned nr_cols, cap_cols;
	unsigned *cols;
	char **col_labels;
};


#endif /* TALLY_EXPORT_TYPES_H */
