/**
 * @file
 * tally/shm/export.h - a shared region's objects through an exporter
 * (tally/export.h), so that its four formats, and tally/serve.h's
 * /metrics, render a region attached read-only: counters as Prometheus
 * counters (name_total, widened to 64 bits across wraps as every exported
 * counter is), gauges and per-process gauges as gauges, histograms
 * (tally/shm/hist.h) as Prometheus histograms, as
 * tally_export_add_hist() renders an in-process one (tally/export_hist.h):
 * name_bucket{le="..."}, name_sum, name_count, with the `le` set fixed
 * when the family is set up (the default grid: the 1-2-5 bounds of each
 * power of ten over the histogram's range, at most
 * TALLY_EXPORT_HIST_BUCKETS_DEFAULT series with +Inf; explicit bounds:
 * each of them), values shown in the histogram's scale (1e-9: seconds).
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
 * label values are dropped, is skipped); a histogram family's members
 * must also have the first one's buckets and scale (others are skipped:
 * Prometheus' sum by (le) needs one `le` set).
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
 * checks, per-process gauges over the live processes, each histogram's
 * exact cut: a region corrupted since, or a histogram whose cut a
 * read-only attach could not take (-EBUSY, tally/shm/cut.h), fails the
 * render with the reason). Objects whose names the
 * exporter refuses (its family names are lowercase snake_case and pass
 * promtool's lint; a region's may be wider), and names of families that
 * other sources of the exporter have, are skipped and counted. This file
 * is the one place that knows the exporter's private structure for
 * regions: a region is one source of its counters and gauges, and one
 * source per histogram family (tally/export_hist.h's writer renders it).
 */
#ifndef TALLY_SHM_EXPORT_H
#define TALLY_SHM_EXPORT_H

#include <tally/export.h>
#include <tally/export_hist.h>
#include <tally/shm.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A region's source of counters and gauges: its objects [0, n), item i =
 * object i (a histogram's item hidden). */
struct tally__shm_export {
	struct tally_shm *r;
	size_t n;
	tally_uword *raw;     /* [n] */
	unsigned char *alive; /* [the region's process rows] */
	char *names;          /* its families' names (name_const: freed here) */
};

static inline void tally__shm_export_release(struct tally__export_source *s)
{
	struct tally__shm_export *x = (struct tally__shm_export *)s->priv;
	if (x) {
		free(x->raw);
		free(x->alive);
		free(x->names);
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
	if (tally__shm_values(r->tally__map, &r->tally__lay, r->tally__fd, x->alive, x->n, x->raw,
			      &got, why, sizeof(why)))
		return tally__export_fail(e, -EINVAL, "shared region: %s", why, 0);
	if (got < x->n)
		return tally__export_fail(e, -EINVAL, "shared region: %s",
					  "objects vanished (corrupted)", 0);
	for (i = 0; i < x->n; i++)
		s->values[i] = tally__export_value(&s->series[i], s->kinds[i], x->raw[i]);
	s->nr_rows = 1;
	return 0;
}

/* A region's histogram family: x first (tally__export_write_hist() reads
 * it: its members' snapshots, le positions and scale), then which objects
 * the members are and the descriptor they were registered with. */
struct tally__shm_export_hist {
	struct tally__export_hist x;
	struct tally_shm *r;
	unsigned *obj;                  /* [x.nr]: member i's object */
	struct tally__shm_hist_desc d;  /* every member's */
	uint64_t *buf;                  /* the cuts' scratch */
	size_t buf_cap;
};

static inline void tally__shm_export_hist_release(struct tally__export_source *s)
{
	struct tally__shm_export_hist *h = (struct tally__shm_export_hist *)s->priv;
	unsigned i;
	if (!h)
		return;
	for (i = 0; i < h->x.nr; i++)
		tally_hist_snap_destroy(&h->x.m[i].snap);
	free(h->x.m);
	free(h->x.edges);
	free(h->obj);
	free(h->buf);
	free(h);
	s->priv = NULL;
}

/* Each member's exact cut: its entry checked again, its descriptor the one
 * registered. */
static inline int tally__shm_export_collect_hist(struct tally_export *e,
						 struct tally__export_source *s)
{
	struct tally__shm_export_hist *h = (struct tally__shm_export_hist *)s->priv;
	struct tally_shm *r = h->r;
	const struct tally__shm_layout *L = &r->tally__lay;
	struct tally__shm_state st;
	struct tally__shm_entry en;
	struct tally__shm_hist_desc d;
	struct tally__hist_layout l;
	struct stat sb;
	char why[TALLY_SHM_ERROR_MAX];
	uint64_t stuck;
	unsigned i;
	int err;
	if (fstat(r->tally__fd, &sb) || (uint64_t)sb.st_size < L->total)
		return tally__export_fail(e, -EINVAL, "shared region: %s",
					  "truncated since it was attached", 0);
	err = tally__shm_state(r->tally__map, L, &st, why, sizeof(why));
	for (i = 0; !err && i < h->x.nr; i++) {
		if (h->obj[i] >= st.count) {
			err = tally__shm_fail(why, sizeof(why), -EINVAL, "objects vanished (corrupted)");
			break;
		}
		err = tally__shm_entry_get(r->tally__map, L, &st, h->obj[i], &en, why, sizeof(why));
		if (!err && en.kind != TALLY_SHM_HIST)
			err = tally__shm_fail(why, sizeof(why), -EINVAL,
					      "corrupted: object %u is no longer a histogram",
					      h->obj[i]);
		if (!err)
			err = tally__shm_hist_prepare(r->tally__map, L, &st, &en, h->obj[i], &d, &l,
						      &h->buf, &h->buf_cap, why, sizeof(why));
		if (!err && (!tally__shm_hist_desc_eq(&d, &h->d) ||
			     !tally__hist_layout_eq(&l, &h->x.m[i].snap.tally__l)))
			err = tally__shm_fail(why, sizeof(why), -EINVAL,
					      "corrupted: histogram '%s' changed its buckets",
					      en.name);
		if (!err)
			err = tally__shm_hist_fill(r->tally__map, r->tally__ro ? NULL : r->tally__map,
						   L, &en, &d, 1, &h->x.m[i].snap, &stuck,
						   h->buf, why, sizeof(why));
	}
	if (err)
		return tally__export_fail(e, err == -ENOMEM ? -ENOMEM : -EINVAL, "shared region: %s",
					  why, 0);
	s->nr_rows = 1;
	return 0;
}

/* Does family f of e belong to one of r's sources? */
static inline int tally__shm_export_mine(const struct tally_export *e, long f,
					 const struct tally_shm *r)
{
	const struct tally__export_source *s;
	if (f < 0)
		return 0;
	s = &e->tally__sources[e->tally__families[f].source];
	if (s->collect == tally__shm_export_collect)
		return ((const struct tally__shm_export *)s->priv)->r == r;
	if (s->collect == tally__shm_export_collect_hist)
		return ((const struct tally__shm_export_hist *)s->priv)->r == r;
	return 0;
}

/* The index of e's source of r's counters, or -1. */
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
}

/* Remove every source of r from e; the name index rebuilt. */
static inline void tally__shm_export_drop_all(struct tally_export *e, const struct tally_shm *r)
{
	unsigned i;
	for (i = e->tally__nr_sources; i-- > 0;) {
		const struct tally__export_source *s = &e->tally__sources[i];
		if ((s->collect == tally__shm_export_collect &&
		     ((const struct tally__shm_export *)s->priv)->r == r) ||
		    (s->collect == tally__shm_export_collect_hist &&
		     ((const struct tally__shm_export_hist *)s->priv)->r == r))
			tally__shm_export_drop(e, i);
	}
	if (e->tally__index) {
		memset(e->tally__index, 0, e->tally__cap_index * sizeof(unsigned));
		for (i = 0; i < e->tally__nr_families; i++)
			*tally__export_index_slot(e, e->tally__families[i].name, NULL) = i + 1;
	}
}

#define TALLY__SHM_EXPORT_INSIDE 1
#include <tally/shm/pick.h>
#undef TALLY__SHM_EXPORT_INSIDE

/* e's sources for r: every object of snap, replacing r's sources when own
 * (its counters' source) is >= 0: its counters keep their widening, its
 * families their helps. */
static inline int tally__shm_export_source(struct tally_export *e, struct tally_shm *r,
					   const struct tally__shm_export_list *snap, long own,
					   unsigned *skipped)
{
	struct tally__export_source s, *hs = NULL;
	struct tally__export_family *fams = NULL;
	struct tally__shm_export *x;
	unsigned char *hidden = NULL;
	size_t n = snap->n, old_n = 0, m = n ? n : 1, i;
	unsigned nfam = 0, ncf = 0, nhf = 0, j;
	int err = 0;
	memset(&s, 0, sizeof(s));
	x = (struct tally__shm_export *)calloc(1, sizeof(*x));
	s.kinds = (unsigned char *)calloc(m, 1);
	s.series = (struct tally__export_series *)calloc(m, sizeof(*s.series));
	s.values = (uint64_t *)calloc(m, sizeof(*s.values));
	s.priv = x;
	s.release = tally__shm_export_release;
	if (x) {
		x->raw = (tally_uword *)calloc(m, sizeof(*x->raw));
		x->alive = (unsigned char *)calloc(r->tally__lay.proc_cap, 1);
	}
	hidden = (unsigned char *)calloc(m, 1);
	fams = (struct tally__export_family *)calloc(m, sizeof(*fams));
	if (!x || !s.kinds || !s.series || !s.values || !x->raw || !x->alive || !hidden ||
	    !fams)
		err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	if (!err && own >= 0)
		old_n = ((const struct tally__shm_export *)e->tally__sources[own].priv)->n;
	/* (the families' names: one block, x->names, freed with s after
	 * them, whichever way they go) */
	if (!err)
		err = tally__shm_export_pick(e, snap, r, s.kinds, hidden, old_n, skipped, fams,
					     &nfam, &x->names);
	for (i = 0; i < n && s.kinds; i++) /* (a histogram's item: no counter) */
		if (s.kinds[i] == TALLY__SHM_EXPORT_HIST)
			s.kinds[i] = (unsigned char)TALLY_EXPORT_GAUGE;
	/* Helps by kind; a help the replaced sources' family had, kept.
	 * A counter's or gauge's constant help is pointed to, not copied
	 * (help_const: 100,000 families, no malloc each); a histogram
	 * family's, and one given (tally_export_set_help()), are copied. */
	for (j = 0; !err && j < nfam; j++) {
		unsigned k = snap->v[fams[j].column].kind;
		const char *help = k == TALLY_SHM_COUNTER ? "tally shared counter"
				   : k == TALLY_SHM_GAUGE ? "tally shared gauge"
				   : k == TALLY_SHM_HIST  ? "tally shared histogram"
							  : "tally per-process gauge, summed over the "
							    "live processes";
		long f = own >= 0 ? tally__export_find(e, fams[j].name) : -1;
		int cst = fams[j].kind != TALLY__SHM_EXPORT_HIST;
		char *d;
		if (tally__shm_export_mine(e, f, r)) {
			help = e->tally__families[f].help;
			cst = cst && e->tally__families[f].help_const;
		}
		if (cst) {
			fams[j].help = (char *)(uintptr_t)help;
			fams[j].help_const = 1;
			continue;
		}
		d = tally__export_strdup(help);
		if (!d)
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		else {
			free(fams[j].help);
			fams[j].help = d;
		}
	}
	/* Counters' and gauges' families first (one source), then one
	 * source per histogram family (moved to the end of fams), which owns
	 * its name (a copy: not in s's block). */
	for (j = 0; !err && j < nfam; j++) {
		char *d;
		if (fams[j].kind != TALLY__SHM_EXPORT_HIST)
			continue;
		nhf++;
		if (!(d = tally__export_strdup(fams[j].name))) {
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
			break;
		}
		fams[j].name = d;
		fams[j].name_const = 0;
	}
	if (!err && nhf) {
		struct tally__export_family *hf =
			(struct tally__export_family *)malloc(nhf * sizeof(*hf));
		unsigned h = 0;
		if (!hf)
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		for (j = 0; hf && j < nfam; j++) {
			if (fams[j].kind == TALLY__SHM_EXPORT_HIST)
				hf[h++] = fams[j];
			else
				fams[ncf++] = fams[j];
		}
		if (hf) {
			memcpy(&fams[ncf], hf, nhf * sizeof(*hf));
			free(hf);
		}
	} else {
		ncf = nfam;
	}
	if (!err && nhf &&
	    !(hs = (struct tally__export_source *)calloc(nhf, sizeof(*hs))))
		err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	for (j = 0; !err && j < nhf; j++) {
		err = tally__shm_export_hist_source(e, r, snap->v, &fams[ncf + j], &hs[j]);
		while (err && j-- > 0)
			tally__export_source_free(&hs[j]);
	}
	if (err) {
		for (j = 0; j < nfam; j++)
			tally__export_family_free(&fams[j]);
		free(fams);
		free(hidden);
		free(hs);
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
		tally__shm_export_drop_all(e, r);
	}
	free(hidden);
	/* (registered even with no family: it remembers the objects seen;
	 * every name passed tally__export_check_name() in the pick; an e
	 * with no other family takes fams as its table, room for all) */
	err = tally__export_register_ex(e, &s, fams, ncf, 1, (unsigned)m);
	for (j = 0; j < nhf; j++) {
		if (err) {
			tally__export_family_free(&fams[ncf + j]);
			tally__export_source_free(&hs[j]);
			continue;
		}
		err = tally__export_register_ex(e, &hs[j], &fams[ncf + j], 1, 1, 0);
	}
	free(hs);
	if (fams != e->tally__families)
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
	struct tally__shm_export_list snap;
	unsigned dummy = 0;
	long own;
	int err;
	if (!e || !r)
		return -EINVAL;
	memset(&snap, 0, sizeof(snap));
	if (!skipped)
		skipped = &dummy;
	own = tally__shm_export_find(e, r);
	if (own >= 0) {
		/* Nothing new: no snapshot (a histogram's cut costs its buckets). */
		struct tally__shm_state st;
		err = tally__shm_state(r->tally__map, &r->tally__lay, &st, r->tally__error,
				       sizeof(r->tally__error));
		if (err || st.count <=
				   ((const struct tally__shm_export *)e->tally__sources[own].priv)->n)
			return err;
	}
	/* Names, kinds and layouts: the values are read by each render. */
	err = tally__shm_export_list_get(r, &snap);
	if (!err && snap.n > (own >= 0 ? ((const struct tally__shm_export *)e->tally__sources[own]
						  .priv)
						 ->n
				       : 0))
		err = tally__shm_export_source(e, r, &snap, own, skipped);
	tally__shm_export_list_free(&snap);
	return err;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_SHM_EXPORT_H */
