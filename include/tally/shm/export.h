/**
 * @file
 * tally/shm/export.h - a shared region's objects through an exporter
 * (tally/export.h), so that its four formats, and tally/serve.h's
 * /metrics, render a region attached read-only: counters as Prometheus
 * counters (name_total, widened to 64 bits across wraps as every exported
 * counter is), gauges and per-process gauges as gauges.
 *
 *   struct tally_export e;
 *   tally_export_init(&e);
 *   tally_shm_export_add(&e, ro, &skipped);  // the objects there now
 *   tally_export_render_alloc(&e, TALLY_EXPORT_PROMETHEUS, &text, &len);
 *   ...                                      // later, for new objects:
 *   tally_shm_export_add(&e, ro, &skipped);  // the region's source redone
 *
 * Labelled objects. An object named family{k="v",...} (tally_export_name()
 * builds such names; tally_shm_counter() takes them) is a series of the
 * family family, as a vector's items are (tally_export_add_vec()): the
 * objects requests{method="get"} and requests{method="put"} are one
 * family, requests_total, of two series, wherever in the region they were
 * created and by whichever process. The items of a family must have one
 * kind (the first object created decides; a later one of another kind is
 * skipped) and differ in their labels (a later duplicate, also once empty
 * label values are dropped, is skipped).
 *
 * One source per region. A region grows while it is exported (a worker
 * creates requests{method="post"} an hour in), and a new series may join
 * a family already rendered, so tally_shm_export_add() replaces the
 * region's source when the region has new objects: every object again,
 * each counter keeping its widened total (by object: objects never move),
 * each family the help text it was given (tally_export_set_help()). The
 * region's families move to the end of the exporter's order then.
 *
 * Each render reads the objects' exact values (tally_shm_snapshot()'s
 * checks, per-process gauges over the live processes: a region corrupted
 * since fails the render with the reason). Objects whose names the
 * exporter refuses (its family names are lowercase snake_case and pass
 * promtool's lint; a region's may be wider), and names of families that
 * other sources of the exporter have, are skipped and counted. This file
 * is the one place that knows the exporter's private structure for
 * regions.
 */
#ifndef TALLY_SHM_EXPORT_H
#define TALLY_SHM_EXPORT_H

#include <tally/export.h>
#include <tally/shm.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A region's source: its objects [0, n), item i = object i. */
struct tally__shm_export {
	struct tally_shm *r;
	size_t n;
	struct tally_shm_value *tmp; /* [n] */
	unsigned char *alive;        /* [the region's process rows] */
};

static inline void tally__shm_export_release(struct tally__export_source *s)
{
	struct tally__shm_export *x = (struct tally__shm_export *)s->priv;
	if (x) {
		free(x->tmp);
		free(x->alive);
		free(x);
	}
	s->priv = NULL;
}

static inline int tally__shm_export_collect(struct tally_export *e, struct tally__export_source *s)
{
	struct tally__shm_export *x = (struct tally__shm_export *)s->priv;
	struct tally_shm *r = x->r;
	struct stat sb;
	size_t got, i;
	char why[TALLY_SHM_ERROR_MAX];
	if (fstat(r->tally__fd, &sb) || (uint64_t)sb.st_size < r->tally__lay.total)
		return tally__export_fail(e, -EINVAL, "shared region: %s",
					  "truncated since it was attached", 0);
	if (tally__shm_collect(r->tally__map, &r->tally__lay, r->tally__fd, x->alive, 0, x->n,
			       x->tmp, &got, NULL, NULL, NULL, why, sizeof(why)))
		return tally__export_fail(e, -EINVAL, "shared region: %s", why, 0);
	if (got < x->n)
		return tally__export_fail(e, -EINVAL, "shared region: %s",
					  "objects vanished (corrupted)", 0);
	for (i = 0; i < x->n; i++)
		s->values[i] = tally__export_value(&s->series[i], s->kinds[i], x->tmp[i].raw);
	s->nr_rows = 1;
	return 0;
}

/* The index of e's source for r, or -1. */
static inline long tally__shm_export_find(const struct tally_export *e, const struct tally_shm *r)
{
	unsigned i;
	for (i = 0; i < e->tally__nr_sources; i++)
		if (e->tally__sources[i].collect == tally__shm_export_collect &&
		    ((const struct tally__shm_export *)e->tally__sources[i].priv)->r == r)
			return (long)i;
	return -1;
}

/* Remove source si and its families from e (the others keep their order;
 * the name index is rebuilt). */
static inline void tally__shm_export_drop(struct tally_export *e, unsigned si)
{
	struct tally__export_source *s = &e->tally__sources[si];
	struct tally__export_family *f = e->tally__families;
	unsigned first = s->first_family, nf = s->nr_families, i;
	for (i = first; i < first + nf; i++)
		tally__export_family_free(&f[i]);
	memmove(&f[first], &f[first + nf],
		(e->tally__nr_families - first - nf) * sizeof(*f));
	e->tally__nr_families -= nf;
	for (i = 0; i < e->tally__nr_families; i++)
		if (f[i].source > si)
			f[i].source--;
	tally__export_source_free(s);
	memmove(s, s + 1, (e->tally__nr_sources - si - 1) * sizeof(*s));
	e->tally__nr_sources--;
	for (i = si; i < e->tally__nr_sources; i++)
		e->tally__sources[i].first_family -= nf;
	if (e->tally__index) {
		memset(e->tally__index, 0, e->tally__cap_index * sizeof(unsigned));
		for (i = 0; i < e->tally__nr_families; i++)
			*tally__export_index_slot(e, f[i].name, NULL) = i + 1;
	}
}

/* An open-addressed set of keys (family names, or family + labels): the
 * item that holds each, found by hash. */
struct tally__shm_keys {
	size_t mask;
	unsigned *slot;     /* item + 1, 0 empty */
	char **key;         /* [items] */
	size_t *key_len;    /* [items] */
};

static inline unsigned *tally__shm_keys_slot(struct tally__shm_keys *k, const char *key, size_t len)
{
	size_t j = (size_t)tally__export_hash(TALLY__EXPORT_HASH_SEED, key, len) & k->mask;
	while (k->slot[j] && (k->key_len[k->slot[j] - 1] != len ||
			      memcmp(k->key[k->slot[j] - 1], key, len)))
		j = (j + 1) & k->mask;
	return &k->slot[j];
}

/*
 * Which objects of vals[0..n) the exporter takes (hidden[i] = 0), their
 * kinds, and the families they make, into fams (room for n; *nfam set):
 * an object named base{labels} is a series of family base at column i
 * (labels with empty values dropped, as tally__export_parse_labels()
 * gives them); a family of one unlabelled object has no series list,
 * its value at its column; helps are left to the caller. The same
 * families tally__export_item_families() builds from these names with
 * hidden set, in one pass: each name is parsed and checked once, and
 * nothing is left for that pass to refuse. The others counted in
 * *skipped when at or past counted_from (e's error says why for the
 * last). own: e's source for the region being replaced, or -1. On
 * failure nothing is left allocated in fams.
 */
static inline int tally__shm_export_pick(struct tally_export *e, const struct tally_shm_value *vals,
					 size_t n, long own, unsigned char *kinds,
					 unsigned char *hidden, size_t counted_from,
					 unsigned *skipped, struct tally__export_family *fams,
					 unsigned *nfam)
{
	struct tally__shm_keys fk, sk;
	size_t cap = 16, i;
	unsigned nf = 0, j;
	int err = 0;
	while (cap < 2 * n)
		cap *= 2;
	fk.mask = sk.mask = cap - 1;
	fk.slot = (unsigned *)calloc(cap, sizeof(unsigned));
	sk.slot = (unsigned *)calloc(cap, sizeof(unsigned));
	fk.key = (char **)calloc(n ? n : 1, sizeof(char *));
	sk.key = (char **)calloc(n ? n : 1, sizeof(char *));
	fk.key_len = (size_t *)calloc(n ? n : 1, sizeof(size_t));
	sk.key_len = (size_t *)calloc(n ? n : 1, sizeof(size_t));
	if (!fk.slot || !sk.slot || !fk.key || !sk.key || !fk.key_len || !sk.key_len)
		err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	for (i = 0; i < n && !err; i++) {
		char *labels = NULL, *fam = NULL, *ser = NULL;
		size_t blen = 0, llen;
		bool dropped;
		unsigned *slot;
		long f;
		int bad = 0;
		kinds[i] = vals[i].kind == TALLY_SHM_COUNTER ? (unsigned char)TALLY_EXPORT_COUNTER
							     : (unsigned char)TALLY_EXPORT_GAUGE;
		hidden[i] = 1;
		bad = tally__export_parse_labels(e, vals[i].name, ~0u, &blen, &labels, &dropped);
		if (bad == -ENOMEM) {
			err = bad;
			break;
		}
		if (!bad) {
			fam = (char *)malloc(blen + 1);
			llen = labels ? tally__export_labels_len(labels) : 0;
			ser = (char *)malloc(blen + 1 + llen);
			if (!fam || !ser) {
				free(fam);
				free(ser);
				free(labels);
				err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
				break;
			}
			memcpy(fam, vals[i].name, blen);
			fam[blen] = '\0';
			memcpy(ser, fam, blen + 1);
			if (labels)
				memcpy(ser + blen + 1, labels, llen);
			/* fk: family name -> family + 1 (its first object's kind) */
			slot = tally__shm_keys_slot(&fk, fam, blen);
			if (*slot && fams[*slot - 1].kind != kinds[i])
				bad = tally__export_fail(e, -EINVAL,
							 "'%s': its family's first object is of "
							 "another kind",
							 vals[i].name, 0);
			/* (a family already taken passed the checks below) */
			if (!bad && !*slot) {
				bad = tally__export_check_name(e, fam);
				f = bad ? -1 : tally__export_find(e, fam);
				if (!bad && f >= 0 && (long)e->tally__families[f].source != own)
					bad = tally__export_fail(e, -EINVAL,
								 "metric name '%s' is already "
								 "registered (by another source)",
								 fam, 0);
			}
			if (!bad && *tally__shm_keys_slot(&sk, ser, blen + 1 + llen))
				bad = tally__export_fail(e, -EINVAL,
							 "'%s': a series its family has already "
							 "(an empty label value is the label's "
							 "absence)",
							 vals[i].name, 0);
			if (!bad) {
				hidden[i] = 0;
				if (!*slot) {
					/* A new family: one value at column i, or
					 * labelled series. */
					j = nf++;
					memset(&fams[j], 0, sizeof(fams[j]));
					fams[j].name = fam;
					fams[j].kind = kinds[i];
					fams[j].column = (unsigned)i;
					fams[j].in_stat = 1;
					fk.key[j] = fam;
					fk.key_len[j] = blen;
					*slot = j + 1;
					fam = NULL;
					if (labels)
						err = tally__export_add_series(&fams[j], (unsigned)i,
									       labels);
				} else {
					j = *slot - 1;
					if (!fams[j].nr_cols) /* its first, unlabelled */
						err = tally__export_add_series(
							&fams[j], fams[j].column, NULL);
					if (!err)
						err = tally__export_add_series(&fams[j], (unsigned)i,
									       labels);
					else
						free(labels);
				}
				labels = NULL; /* the family's now (freed on failure) */
				sk.key[i] = ser;
				sk.key_len[i] = blen + 1 + llen;
				*tally__shm_keys_slot(&sk, ser, blen + 1 + llen) = (unsigned)i + 1;
				ser = NULL;
				if (err)
					err = tally__export_fail(e, err, "out of memory", NULL, 0);
			}
		}
		free(fam);
		free(ser);
		free(labels);
		if (hidden[i] && i >= counted_from)
			++*skipped;
	}
	for (i = 0; sk.key && i < n; i++)
		free(sk.key[i]);
	free(fk.slot);
	free(sk.slot);
	free(fk.key); /* (the names are the families') */
	free(sk.key);
	free(fk.key_len);
	free(sk.key_len);
	if (err) {
		for (j = 0; j < nf; j++)
			tally__export_family_free(&fams[j]);
		nf = 0;
	}
	*nfam = nf;
	return err;
}

/* e's source for r: every object of snap, replacing the source own (>= 0)
 * whose widening and helps it keeps. */
static inline int tally__shm_export_source(struct tally_export *e, struct tally_shm *r,
					   const struct tally_shm_snap *snap, long own,
					   unsigned *skipped)
{
	struct tally__export_source s;
	struct tally__export_family *fams = NULL;
	struct tally__shm_export *x;
	unsigned char *hidden = NULL;
	size_t n = snap->n, old_n = 0, m = n ? n : 1;
	unsigned nfam = 0, j;
	int err = 0;
	memset(&s, 0, sizeof(s));
	x = (struct tally__shm_export *)calloc(1, sizeof(*x));
	s.kinds = (unsigned char *)calloc(m, 1);
	s.series = (struct tally__export_series *)calloc(m, sizeof(*s.series));
	s.values = (uint64_t *)calloc(m, sizeof(*s.values));
	s.priv = x;
	s.release = tally__shm_export_release;
	if (x) {
		x->tmp = (struct tally_shm_value *)calloc(m, sizeof(*x->tmp));
		x->alive = (unsigned char *)calloc(r->tally__lay.proc_cap, 1);
	}
	hidden = (unsigned char *)calloc(m, 1);
	fams = (struct tally__export_family *)calloc(m, sizeof(*fams));
	if (!x || !s.kinds || !s.series || !s.values || !x->tmp || !x->alive || !hidden ||
	    !fams)
		err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	if (!err && own >= 0)
		old_n = ((const struct tally__shm_export *)e->tally__sources[own].priv)->n;
	if (!err)
		err = tally__shm_export_pick(e, snap->v, n, own, s.kinds, hidden, old_n, skipped,
					     fams, &nfam);
	/* Helps by kind; a help the replaced source's family had, kept. */
	for (j = 0; !err && j < nfam; j++) {
		unsigned k = snap->v[fams[j].column].kind;
		const char *help = k == TALLY_SHM_COUNTER ? "tally shared counter"
				   : k == TALLY_SHM_GAUGE ? "tally shared gauge"
							  : "tally per-process gauge, summed over the "
							    "live processes";
		long f = own >= 0 ? tally__export_find(e, fams[j].name) : -1;
		char *d;
		if (f >= 0 && (long)e->tally__families[f].source == own)
			help = e->tally__families[f].help;
		d = tally__export_strdup(help);
		if (!d)
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		else {
			free(fams[j].help);
			fams[j].help = d;
		}
	}
	if (err) {
		for (j = 0; j < nfam; j++)
			tally__export_family_free(&fams[j]);
		free(fams);
		free(hidden);
		tally__export_source_free(&s);
		return err;
	}
	x->r = r;
	x->n = n;
	s.obj = r;
	s.nr_items = (unsigned)n;
	s.row_len = n;
	s.cap_values = m;
	s.collect = tally__shm_export_collect;
	if (own >= 0) {
		/* Each counter keeps its widened total: item i is object i. */
		memcpy(s.series, e->tally__sources[own].series, old_n * sizeof(*s.series));
		tally__shm_export_drop(e, (unsigned)own);
	}
	free(hidden);
	if (!nfam) {
		free(fams);
		tally__export_source_free(&s);
		return 0;
	}
	err = tally__export_register(e, &s, fams, nfam);
	free(fams);
	return err;
}

/**
 * tally_shm_export_add - register r's objects with e, or, when r has new
 * objects since the last call for r, replace r's source with one of all
 * of them (see "One source per region" above; counters keep their
 * widened totals). Nothing to do when r has no new objects.
 * @param e an exporter
 * @param r a region attached (read-only or not) that outlives e's renders
 * @param skipped NULL, or incremented by the new objects e does not take
 *        (tally_export_error(e) says why for the last): a name the
 *        exporter refuses, a family another source has, a family's item
 *        of another kind, a series twice
 * @return 0, -EINVAL (the region is corrupted: tally_shm_error(r)),
 * -ENOMEM (r's source may then be gone until a later call succeeds).
 * Not beside other calls on e.
 */
static inline int tally_shm_export_add(struct tally_export *e, struct tally_shm *r,
				       unsigned *skipped)
{
	struct tally_shm_snap snap;
	unsigned dummy = 0;
	long own;
	int err;
	if (!e || !r)
		return -EINVAL;
	memset(&snap, 0, sizeof(snap));
	if (!skipped)
		skipped = &dummy;
	own = tally__shm_export_find(e, r);
	err = tally_shm_snapshot(r, &snap);
	if (!err && snap.n > (own >= 0 ? ((const struct tally__shm_export *)e->tally__sources[own]
						  .priv)
						 ->n
				       : 0))
		err = tally__shm_export_source(e, r, &snap, own, skipped);
	tally_shm_snap_free(&snap);
	return err;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_SHM_EXPORT_H */
