/**
 * @file
 * tally/export/sources.h - the registered objects (private; include
 * <tally/export.h>): the index of family names (a hash table, so
 * registering N families costs O(N)), adding a source and its families
 * all or nothing, freeing it, and collecting the values of counters and
 * vectors at render time (trees: <tally/export_rstat.h>).
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
 * The family index: an open-addressed hash table (linear probing) of
 * e's family names, tally__index[slot] = family + 1 (0: empty), with
 * tally__cap_index slots (a power of two, at least twice the names), so a
 * name is found in O(1) and registering N families costs O(N), not
 * O(N^2). A family number at or past tally__nr_families is one being
 * registered: its name is pending[number - tally__nr_families].
 */
static inline const char *tally__export_index_name(const struct tally_export *e, unsigned f,
						   const struct tally__export_family *pending)
{
	if (f < e->tally__nr_families || !pending) /* (no pending: none past) */
		return e->tally__families[f].name;
	return pending[f - e->tally__nr_families].name;
}

/* The slot of name in e's index, or the empty slot where it would go. */
static inline unsigned *tally__export_index_slot(const struct tally_export *e, const char *name,
						 const struct tally__export_family *pending)
{
	size_t mask = e->tally__cap_index - 1;
	size_t j = (size_t)tally__export_hash(TALLY__EXPORT_HASH_SEED, name, strlen(name)) & mask;
	while (e->tally__index[j] &&
	       strcmp(tally__export_index_name(e, e->tally__index[j] - 1, pending), name) != 0)
		j = (j + 1) & mask;
	return &e->tally__index[j];
}

/* The number of e's family called name, or -1. */
static inline long tally__export_find(const struct tally_export *e, const char *name)
{
	unsigned *slot;
	if (!e->tally__cap_index)
		return -1;
	slot = tally__export_index_slot(e, name, NULL);
	return *slot ? (long)*slot - 1 : -1;
}

/* Make room in e's index for n names (rebuilt from e's families); 0 or
 * -ENOMEM (the index unchanged). */
static inline int tally__export_index_room(struct tally_export *e, size_t n)
{
	size_t cap = e->tally__cap_index ? e->tally__cap_index : 64;
	unsigned *old = e->tally__index, i;
	while (cap < 2 * n)
		cap *= 2;
	if (cap == e->tally__cap_index)
		return 0;
	if (cap > 0xffffffffu)
		return -ENOMEM;
	e->tally__index = (unsigned *)calloc(cap, sizeof(unsigned));
	if (!e->tally__index) {
		e->tally__index = old;
		return -ENOMEM;
	}
	free(old);
	e->tally__cap_index = (unsigned)cap;
	for (i = 0; i < e->tally__nr_families; i++)
		*tally__export_index_slot(e, e->tally__families[i].name, NULL) = i + 1;
	return 0;
}

/*
 * Append source s with its nfam families (names, helps and kinds filled
 * in by the caller) to e, all or nothing. The families' names and helps
 * are checked (a help_const one is valid already; names_checked: the
 * caller passed every name through tally__export_check_name() itself),
 * and owned by e from here on; on failure they are freed, and so is s.
 * Names appearing twice, or already e's, are refused either way.
 * adopt_cap: 0, or fams is malloc'd with room for adopt_cap >= nfam
 * families, and e, if it has no family yet, takes it as its family table
 * (no copy; e->tally__families == fams after the call: the caller must
 * not free it then). O(nfam) (amortized): names are looked up in e's
 * index.
 */
static inline int tally__export_register_ex(struct tally_export *e,
					    struct tally__export_source *s,
					    struct tally__export_family *fams, unsigned nfam,
					    int names_checked, unsigned adopt_cap)
{
	unsigned i, indexed = 0, *slot;
	int err = 0;
	if ((size_t)e->tally__nr_families + nfam >= 0x7fffffffu ||
	    tally__export_index_room(e, (size_t)e->tally__nr_families + nfam))
		err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	for (i = 0; i < nfam && !err; i++) {
		if (!fams[i].name || !fams[i].help) {
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
			break;
		}
		if (!names_checked)
			err = tally__export_check_name(e, fams[i].name);
		if (!err && !fams[i].help_const)
			err = tally__export_check_help(e, fams[i].name, fams[i].help);
		if (err)
			break;
		slot = tally__export_index_slot(e, fams[i].name, fams);
		if (*slot)
			err = tally__export_fail(e, -EINVAL,
						 *slot <= e->tally__nr_families
							 ? "metric name '%s' is already registered"
							 : "metric name '%s' appears twice",
						 fams[i].name, 0);
		else
			*slot = e->tally__nr_families + i + 1;
		indexed += !err;
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
	if (!err && adopt_cap && adopt_cap >= nfam && !e->tally__nr_families &&
	    fams != e->tally__families) {
		free(e->tally__families);
		e->tally__families = fams; /* (its families copied onto themselves below) */
		e->tally__cap_families = adopt_cap;
	} else if (!err && e->tally__nr_families + nfam > e->tally__cap_families) {
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
		/* Out of the index, last in first out: linear probing then
		 * leaves it as it was before them. */
		while (indexed--)
			*tally__export_index_slot(e, fams[indexed].name, fams) = 0;
		for (i = 0; i < nfam; i++)
			tally__export_family_free(&fams[i]);
		tally__export_source_free(s);
		return err;
	}
	s->first_family = e->tally__nr_families;
	s->nr_families = nfam;
	for (i = 0; i < nfam; i++) {
		fams[i].source = e->tally__nr_sources;
		if (&e->tally__families[e->tally__nr_families] != &fams[i])
			e->tally__families[e->tally__nr_families] = fams[i];
		e->tally__nr_families++;
	}
	e->tally__sources[e->tally__nr_sources++] = *s;
	e->tally__error[0] = '\0';
	return 0;
}

/* tally__export_register_ex(), every name checked here. */
static inline int tally__export_register(struct tally_export *e, struct tally__export_source *s,
					 struct tally__export_family *fams, unsigned nfam)
{
	return tally__export_register_ex(e, s, fams, nfam, 0, 0);
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
 * What tally__export_item_families looks names up in, O(1) each: its
 * families by name (fam[slot] = family + 1) and its series by family and
 * labels (ser[slot] = item + 1, the item's family, labels and whether it
 * dropped an empty label in item_fam, item_labels, item_dropped), each
 * with mask + 1 slots (a power of two, at least twice the items).
 */
struct tally__export_vec_index {
	size_t mask;
	unsigned *fam, *ser, *item_fam;
	const char **item_labels;
	unsigned char *item_dropped;
};

static inline uint64_t tally__export_series_hash(unsigned fam, const char *labels)
{
	uint64_t h = tally__export_hash(TALLY__EXPORT_HASH_SEED, &fam, sizeof(fam));
	return labels ? tally__export_hash(h, labels, tally__export_labels_len(labels)) : h;
}

/* The slot of family name among fams[], or the empty one for it. */
static inline unsigned *tally__export_vec_fam_slot(struct tally__export_vec_index *x,
						   const struct tally__export_family *fams,
						   const char *name)
{
	size_t j = (size_t)tally__export_hash(TALLY__EXPORT_HASH_SEED, name, strlen(name)) &
		   x->mask;
	while (x->fam[j] && strcmp(fams[x->fam[j] - 1].name, name) != 0)
		j = (j + 1) & x->mask;
	return &x->fam[j];
}

/* The slot of the series of family f with labels, or the empty one. */
static inline unsigned *tally__export_vec_ser_slot(struct tally__export_vec_index *x, unsigned f,
						   const char *labels)
{
	size_t j = (size_t)tally__export_series_hash(f, labels) & x->mask;
	while (x->ser[j] && (x->item_fam[x->ser[j] - 1] != f ||
			     !tally__export_labels_eq(x->item_labels[x->ser[j] - 1], labels)))
		j = (j + 1) & x->mask;
	return &x->ser[j];
}

/* Where an item source's names come from, for its error messages. */
struct tally__export_items {
	unsigned n;                      /* items */
	const char *const *names;        /* [n], an entry NULL: item<i> */
	int given;                       /* names are the caller's array */
	const unsigned char *hidden;     /* [n] or NULL: left out where set */
	const unsigned char *kinds;      /* [n], TALLY_EXPORT_COUNTER / _GAUGE */
	const char *const *helps;        /* [n] or NULL */
	const char *what;                /* the default help, "tally vector item" */
	const char *owner;               /* "vector item", "tree item" */
	const char *rename;              /* the call that renames one */
	const char *own_label;           /* a label name items may not take, or NULL */
};

/*
 * The families of a source's items into fams (room for it->n; *nfam set):
 * hidden items left out; an item named "base{labels}" (names[i], else
 * item<N>) a series of family prefix_base at column i, whose items must
 * all have one kind and differ in their labels (empty values dropped:
 * tally__export_parse_labels; none named own_label); a family's help the
 * first one given among its items, else it->what. O(n): families and
 * series are looked up by hash. Returns 0, or -EINVAL / -ENOMEM with e's
 * message set and nothing left allocated in fams.
 */
static inline int tally__export_item_families(struct tally_export *e,
					      struct tally__export_family *fams, unsigned *nfam,
					      const char *prefix,
					      const struct tally__export_items *it)
{
	unsigned i, j, nf = 0, n = it->n, *slot;
	struct tally__export_vec_index x;
	size_t cap = 16;
	int err = 0;
	while (cap < 2 * (size_t)n)
		cap *= 2;
	x.mask = cap - 1;
	x.fam = (unsigned *)calloc(cap, sizeof(unsigned));
	x.ser = (unsigned *)calloc(cap, sizeof(unsigned));
	x.item_fam = (unsigned *)malloc(n * sizeof(unsigned));
	x.item_labels = (const char **)malloc(n * sizeof(char *));
	x.item_dropped = (unsigned char *)malloc(n);
	if (!x.fam || !x.ser || !x.item_fam || !x.item_labels || !x.item_dropped)
		err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	for (i = 0; i < n && !err; i++) {
		char num[16], *base, *fam, *labels;
		const char *nm = it->names[i], *l;
		const char *help = it->helps && tally__export_help_given(it->helps[i])
					   ? it->helps[i]
					   : NULL;
		size_t blen;
		unsigned char kind = it->kinds[i];
		bool dropped;
		if (it->hidden && it->hidden[i])
			continue;
		if (!nm)
			nm = tally__export_item_name(num, i);
		err = tally__export_parse_labels(e, nm, i, &blen, &labels, &dropped);
		if (err)
			break;
		for (l = labels; it->own_label && l && *l; l += strlen(l) + 1, l += strlen(l) + 1)
			if (!strcmp(l, it->own_label)) {
				free(labels);
				err = tally__export_fail(e, -EINVAL, "item %u's name '%s': ", nm, i);
				tally__export_fail_more(e, "its label name is the source's own "
							   "(a tree's group path)");
				break;
			}
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
			char more[128];
			strcpy(more, it->given ? " [names[" : " [");
			if (!it->given) {
				strcat(more, it->owner);
				strcat(more, " ");
			}
			tally__export_utoa(more + strlen(more), i);
			if (it->given) {
				strcat(more, "]]");
			} else {
				strcat(more, ": rename it with ");
				strcat(more, it->rename);
				strcat(more, "()]");
			}
			tally__export_fail_more(e, more);
			free(fam);
			free(labels);
			break;
		}
		slot = tally__export_vec_fam_slot(&x, fams, fam);
		j = *slot ? *slot - 1 : nf;
		if (j == nf) {
			/* A new family; its series: one at column i, or labelled. */
			memset(&fams[nf], 0, sizeof(fams[nf]));
			fams[nf].name = fam;
			fams[nf].kind = kind;
			fams[nf].column = i;
			fams[nf].in_stat = 1;
			*slot = ++nf;
			if (labels)
				err = tally__export_add_series(&fams[j], i, labels);
			if (!err && help && !(fams[j].help = tally__export_strdup(help)))
				err = -ENOMEM;
			if (err) {
				tally__export_fail(e, err, "out of memory", NULL, 0);
				break;
			}
		} else {
			unsigned other;
			free(fam);
			if (fams[j].kind != kind) {
				free(labels);
				err = tally__export_fail(e, -EINVAL, "metric name '%s': ",
							 fams[j].name, 0);
				tally__export_fail_more(e, "its items differ in kind (counter, gauge)");
				break;
			}
			slot = tally__export_vec_ser_slot(&x, j, labels);
			if (*slot) {
				other = *slot - 1;
				free(labels);
				err = tally__export_fail(
					e, -EINVAL, "item %u's name '%s' gives a series its family has",
					nm, i);
				tally__export_fail_more(
					e, dropped || x.item_dropped[other]
						   ? " already (an empty label value is the label's "
						     "absence)"
						   : " already (the same labels)");
				break;
			}
			if (!fams[j].nr_cols) /* its first series, unlabelled */
				err = tally__export_add_series(&fams[j], fams[j].column, NULL);
			if (!err)
				err = tally__export_add_series(&fams[j], i, labels);
			else
				free(labels);
			if (!err && help && !fams[j].help &&
			    !(fams[j].help = tally__export_strdup(help)))
				err = -ENOMEM;
			if (err) {
				tally__export_fail(e, err, "out of memory", NULL, 0);
				break;
			}
		}
		/* The series, for the items after it. */
		x.item_fam[i] = j;
		x.item_labels[i] = labels;
		x.item_dropped[i] = dropped;
		*tally__export_vec_ser_slot(&x, j, labels) = i + 1;
	}
	for (j = 0; j < nf && !err; j++)
		if (!fams[j].help && !(fams[j].help = tally__export_strdup(it->what)))
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	free(x.fam);
	free(x.ser);
	free(x.item_fam);
	free((void *)x.item_labels);
	free(x.item_dropped);
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
