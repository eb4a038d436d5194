/**
 * @file
 * tally/export/sources.h - the registered objects (private; include
 * <tally/export.h>): adding a source and its families all or nothing,
 * freeing it, and collecting the values of counters and vectors at render
 * time (trees: <tally/export_rstat.h>).
 */
#ifndef TALLY_EXPORT_SOURCES_H
#define TALLY_EXPORT_SOURCES_H

#if !defined(TALLY__EXPORT_INSIDE)
#  error "tally/export/sources.h is private: include <tally/export.h>"
#endif

static inline void tally__export_source_free(struct tally__export_source *s)
{
	if (s->release)
		s->release(s);
	free(s->kinds);
	free(s->series);
	free(s->values);
	free(s->labels);
	free(s->label_at);
}

/*
 * Append source s with its nfam families (names, helps and kinds filled
 * in by the caller) to e, all or nothing. The families' names and helps
 * are checked, and owned by e from here on; on failure they are freed,
 * and so is s.
 */
static inline int tally__export_register(struct tally_export *e, struct tally__export_source *s,
					 struct tally__export_family *fams, unsigned nfam)
{
	unsigned i, j;
	int err = 0;
	for (i = 0; i < nfam && !err; i++) {
		if (!fams[i].name || !fams[i].help) {
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
			break;
		}
		err = tally__export_check_name(e, fams[i].name);
		if (!err)
			err = tally__export_check_help(e, fams[i].name, fams[i].help);
		for (j = 0; j < e->tally__nr_families && !err; j++)
			if (!strcmp(e->tally__families[j].name, fams[i].name))
				err = tally__export_fail(e, -EINVAL,
							 "metric name '%s' is already registered",
							 fams[i].name, 0);
		for (j = 0; j < i && !err; j++)
			if (!strcmp(fams[j].name, fams[i].name))
				err = tally__export_fail(e, -EINVAL,
							 "metric name '%s' appears twice",
							 fams[i].name, 0);
	}
	if (!err && e->tally__nr_sources == e->tally__cap_sources) {
		unsigned cap = e->tally__cap_sources ? 2 * e->tally__cap_sources : 4;
		struct tally__export_source *n =
			(struct tally__export_source *)realloc(e->tally__sources, cap * sizeof(*n));
		if (!n)
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		else {
			e->tally__sources = n;
			e->tally__cap_sources = cap;
		}
	}
	if (!err && e->tally__nr_families + nfam > e->tally__cap_families) {
		unsigned cap = e->tally__cap_families ? 2 * e->tally__cap_families : 8;
		struct tally__export_family *n;
		while (cap < e->tally__nr_families + nfam)
			cap *= 2;
		n = (struct tally__export_family *)realloc(e->tally__families, cap * sizeof(*n));
		if (!n)
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		else {
			e->tally__families = n;
			e->tally__cap_families = cap;
		}
	}
	if (err) {
		for (i = 0; i < nfam; i++) {
			free(fams[i].name);
			free(fams[i].help);
		}
		tally__export_source_free(s);
		return err;
	}
	s->first_family = e->tally__nr_families;
	s->nr_families = nfam;
	for (i = 0; i < nfam; i++) {
		fams[i].source = e->tally__nr_sources;
		e->tally__families[e->tally__nr_families++] = fams[i];
	}
	e->tally__sources[e->tally__nr_sources++] = *s;
	e->tally__error[0] = '\0';
	return 0;
}

static inline int tally__export_grow_values(struct tally__export_source *s, size_t n)
{
	if (n > s->cap_values) {
		uint64_t *v = (uint64_t *)realloc(s->values, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->values = v;
		s->cap_values = n;
	}
	return 0;
}

static inline int tally__export_collect_counter(struct tally_export *e,
						struct tally__export_source *s)
{
	struct tally_counter *c = (struct tally_counter *)s->obj;
	(void)e;
	s->values[0] =
		tally__export_value(&s->series[0], s->kinds[0], (tally_uword)tally_counter_sum(c));
	s->nr_rows = 1;
	return 0;
}

static inline int tally__export_collect_vec(struct tally_export *e, struct tally__export_source *s)
{
	struct tally_vec *v = (struct tally_vec *)s->obj;
	tally_uword *raw = (tally_uword *)s->priv;
	unsigned i;
	(void)e;
	/* Raw values, one pass over the CPUs: never moved by a reset. */
	if (tally_vec_snapshot(v, raw, s->nr_items))
		return tally__export_fail(e, -EINVAL, "vec snapshot failed", NULL, 0);
	for (i = 0; i < s->nr_items; i++)
		s->values[i] = tally__export_value(&s->series[i], s->kinds[i], raw[i]);
	s->nr_rows = 1;
	return 0;
}

static inline void tally__export_release_priv(struct tally__export_source *s)
{
	free(s->priv);
	s->priv = NULL;
}

/* Take a snapshot of every source (advancing the widened totals). */
static inline int tally__export_collect_all(struct tally_export *e)
{
	unsigned i;
	for (i = 0; i < e->tally__nr_sources; i++) {
		int err = e->tally__sources[i].collect(e, &e->tally__sources[i]);
		if (err) {
			if (err == -ENOMEM)
				tally__export_fail(e, err, "out of memory", NULL, 0);
			return err;
		}
	}
	return 0;
}

#endif /* TALLY_EXPORT_SOURCES_H */
