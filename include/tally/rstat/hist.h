/**
 * @file
 * tally/rstat/hist.h - histograms per group for tally/rstat.h (private;
 * include <tally/rstat.h>): each histogram of a tree (tally_tree_opts.hists)
 * is a run of words after the tree's items, one per bucket position of its
 * layout (tally/hist.h's bucket math) and one for the values' sum, updated
 * and flushed as items are: tally_group_record() adds 1 to the value's
 * bucket word and the value to the sum word, two updates of the group;
 * a flush carries both up the tree, so a group's hierarchical words are
 * its subtree's histogram, and a destroyed group's records reach its
 * nearest live ancestor as its items' updates do.
 */
#ifndef TALLY_RSTAT_HIST_H
#define TALLY_RSTAT_HIST_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/hist.h is private: include <tally/rstat.h>"
#endif

/* One histogram of a tree: its buckets, and where its words start. */
struct tally__rstat_hist {
	struct tally__hist_layout l; /* bounds: an owned copy, or NULL */
	unsigned first;              /* word of bucket position 0; the sum at first + l.nr */
};

/* The layout a tree's histogram h gets from its options (precision 0:
 * TALLY_GROUP_HIST_PRECISION_DEFAULT, not tally_hist's 7). 0 or -EINVAL. */
static inline int tally__rstat_hist_layout(const struct tally_hist_opts *h,
					   struct tally__hist_layout *l)
{
	struct tally_hist_opts o = *h;
	if (!o.bounds && !o.precision)
		o.precision = TALLY_GROUP_HIST_PRECISION_DEFAULT;
	return tally__hist_opts_layout(&o, l);
}

/* Check o's histograms; their words, with the items', in *words.
 * 0 or -EINVAL. */
static inline int tally__rstat_hists_check(const struct tally_tree_opts *o, size_t *words)
{
	unsigned i;
	*words = o->nr_items;
	if (o->nr_hists && !o->hists)
		return -EINVAL;
	for (i = 0; i < o->nr_hists; i++) {
		struct tally__hist_layout l;
		if (tally__rstat_hist_layout(&o->hists[i], &l))
			return -EINVAL;
		*words += (size_t)l.nr + 1u;
		if (*words > TALLY_RSTAT_ITEMS_MAX)
			return -EINVAL;
	}
	return 0;
}

static inline void tally__rstat_hists_free(struct tally_tree *t)
{
	unsigned i;
	for (i = 0; t->tally__hists && i < t->tally__nr_hists; i++)
		free(t->tally__hists[i].l.bounds);
	free(t->tally__hists);
	t->tally__hists = NULL;
}

/* t's items and histograms from o (checked): 0 or -ENOMEM. */
static inline int tally__rstat_hists_setup(struct tally_tree *t, const struct tally_tree_opts *o)
{
	size_t words;
	unsigned i, w;
	(void)tally__rstat_hists_check(o, &words);
	t->tally__nr_user = o->nr_items;
	t->tally__nr_items = (unsigned)words;
	if (!o->nr_hists)
		return 0;
	t->tally__hists = (struct tally__rstat_hist *)calloc(o->nr_hists, sizeof(*t->tally__hists));
	if (!t->tally__hists)
		return -ENOMEM;
	t->tally__nr_hists = o->nr_hists;
	for (i = 0, w = o->nr_items; i < o->nr_hists; i++) {
		struct tally__rstat_hist *h = &t->tally__hists[i];
		(void)tally__rstat_hist_layout(&o->hists[i], &h->l);
		if (h->l.nr_bounds) {
			h->l.bounds = (uint64_t *)malloc(h->l.nr_bounds * sizeof(uint64_t));
			if (!h->l.bounds) {
				tally__rstat_hists_free(t);
				return -ENOMEM;
			}
			memcpy(h->l.bounds, o->hists[i].bounds, h->l.nr_bounds * sizeof(uint64_t));
		}
		h->first = w;
		w += h->l.nr + 1u;
	}
	return 0;
}

/* Histogram h of g into s (sized for it): the hierarchical words, or the
 * group's own (local), less the reset baselines if since_reset (a reset
 * starts histograms from 0, as counters); under the flush lock, so one
 * flush's values: count is the sum of the buckets, but a record that raced
 * with that flush may have its bucket in it and its value not yet in sum,
 * or the reverse, until the next flush (the two are separate updates;
 * tally_hist's snapshots are whole records, at a cost the group path does
 * not pay). With TALLY_WORD_BITS 32 each bucket and the sum are counted
 * modulo 2^32, as items are (exporters widen them). */
static inline void tally__rstat_hist_read(struct tally_group *g, const struct tally__rstat_hist *h,
					  struct tally_hist_snap *s, int local, int since_reset)
{
	struct tally_tree *t = g->tally__tree;
	const tally_uword *w = local ? g->tally__local : g->tally__state;
	const tally_uword *base;
	unsigned j, n = h->l.nr, k = local ? t->tally__nr_items : 0u;
	pthread_mutex_lock(&t->tally__flush.lock);
	/* the reset baselines (rstat/reset.h): acquire, as its readers */
	base = since_reset ? __atomic_load_n(&g->tally__base.p, __ATOMIC_ACQUIRE) : NULL;
	for (j = 0; j <= n; j++) {
		tally_uword v = tally__load(&w[h->first + j]);
		if (base)
			v -= tally__load_acq(&base[k + h->first + j]);
		if (j < n)
			s->counts[j] = (uint64_t)v;
		else
			s->sum = (uint64_t)v;
	}
	pthread_mutex_unlock(&t->tally__flush.lock);
	tally__hist_snap_finish(s);
}

#endif /* TALLY_RSTAT_HIST_H */
