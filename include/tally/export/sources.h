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
		for (i = 0; i < nfam; i++)
			tally__export_family_free(&fams[i]);
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

/* Add series column col with labels (owned from here on) to f. */
static inline int tally__export_add_series(struct tally__export_family *f, unsigned col,
					   char *labels)
{
	if (f->nr_cols == f->cap_cols) {
		unsigned cap = f->cap_cols ? 2 * f->cap_cols : 4;
		unsigned *c = (unsigned *)realloc(f->cols, cap * sizeof(*c));
		char **l;
		if (c)
			f->cols = c;
		l = c ? (char **)realloc(f->col_labels, cap * sizeof(*l)) : NULL;
		if (!l) {
			free(labels);
			return -ENOMEM;
		}
		f->col_labels = l;
		f->cap_cols = cap;
	}
	f->cols[f->nr_cols] = col;
	f->col_labels[f->nr_cols++] = labels;
	return 0;
}

/*
 * The families of vector v's items into fams (room for n = its items;
 * *nfam set), kinds[i] each item's kind: items that are hidden
 * (TALLY_VEC_ITEM_HIDDEN) left out; an item named "base{labels}" (names[i],
 * else the vector's name, else item<N>) a series of family prefix_base,
 * whose items must all have one kind and differ in their labels; a
 * family's help the first one given among its items. kinds_in NULL: the
 * vector's kinds (TALLY_VEC_ITEM_GAUGE). Returns 0, or -EINVAL / -ENOMEM
 * with e's message set and nothing left allocated in fams.
 */
static inline int tally__export_vec_families(struct tally_export *e,
					     struct tally__export_family *fams, unsigned *nfam,
					     unsigned char *kinds, const char *prefix,
					     const struct tally_vec *v, const char *const *names,
					     const char *const *helps,
					     const unsigned char *kinds_in)
{
	unsigned i, j, nf = 0, n = tally_vec_nr_items(v);
	int err = 0;
	for (i = 0; i < n && !err; i++) {
		char num[16], *base, *fam, *labels;
		const char *nm = names ? names[i] : tally_vec_item_name(v, i);
		const char *help = helps && tally__export_help_given(helps[i]) ? helps[i] : NULL;
		size_t blen;
		unsigned char kind;
		if (kinds_in)
			kind = kinds_in[i];
		else
			kind = (tally_vec_item_flags(v, i) & TALLY_VEC_ITEM_GAUGE)
				       ? (unsigned char)TALLY_EXPORT_GAUGE
				       : (unsigned char)TALLY_EXPORT_COUNTER;
		kinds[i] = kind;
		if (tally_vec_item_flags(v, i) & TALLY_VEC_ITEM_HIDDEN)
			continue;
		if (!nm)
			nm = tally__export_item_name(num, i);
		err = tally__export_parse_labels(e, nm, i, &blen, &labels);
		if (err)
			break;
		base = (char *)malloc(blen + 1);
		fam = NULL;
		if (base) {
			memcpy(base, nm, blen);
			base[blen] = '\0';
			fam = tally__export_join(prefix, base, NULL);
			free(base);
		}
		if (!fam) {
			free(labels);
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
			break;
		}
		err = tally__export_check_name(e, fam);
		if (err) {
			/* Say which item, and where its name comes from. */
			char more[96];
			strcpy(more, names ? " [names[" : " [vector item ");
			tally__export_utoa(more + strlen(more), i);
			strcat(more, names ? "]]" : ": rename it with tally_vec_set_item_name()]");
			tally__export_fail_more(e, more);
			free(fam);
			free(labels);
			break;
		}
		for (j = 0; j < nf && strcmp(fams[j].name, fam) != 0; j++)
			;
		if (j == nf) {
			/* A new family; its series: one at column i, or labelled. */
			memset(&fams[nf], 0, sizeof(fams[nf]));
			fams[nf].name = fam;
			fams[nf].kind = kind;
			fams[nf].column = i;
			fams[nf].in_stat = 1;
			nf++;
			if (labels)
				err = tally__export_add_series(&fams[j], i, labels);
			if (!err && help && !(fams[j].help = tally__export_strdup(help)))
				err = -ENOMEM;
			if (err)
				tally__export_fail(e, err, "out of memory", NULL, 0);
			continue;
		}
		free(fam);
		if (fams[j].kind != kind) {
			free(labels);
			err = tally__export_fail(e, -EINVAL, "metric name '%s': ", fams[j].name, 0);
			tally__export_fail_more(e, "its items differ in kind (counter, gauge)");
			break;
		}
		if (!fams[j].nr_cols) /* its first series, unlabelled */
			err = tally__export_add_series(&fams[j], fams[j].column, NULL);
		for (unsigned c = 0; !err && c < fams[j].nr_cols; c++)
			if (tally__export_labels_eq(fams[j].col_labels[c], labels)) {
				err = tally__export_fail(
					e, -EINVAL, "item %u's name '%s' gives a series its family has",
					nm, i);
				tally__export_fail_more(e, " already (the same labels)");
			}
		if (!err)
			err = tally__export_add_series(&fams[j], i, labels);
		else
			free(labels);
		if (err == -ENOMEM)
			tally__export_fail(e, err, "out of memory", NULL, 0);
		if (!err && help && !fams[j].help && !(fams[j].help = tally__export_strdup(help)))
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	}
	for (j = 0; j < nf && !err; j++)
		if (!fams[j].help && !(fams[j].help = tally__export_strdup("tally vector item")))
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	if (err) {
		for (j = 0; j < nf; j++)
			tally__export_family_free(&fams[j]);
		nf = 0;
	}
	*nfam = nf;
	return err;
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
