/**
 * @file
 * tally/rstat/mod.h - the paths of tally_group_mod() for tally/rstat.h
 * (private; include <tally/rstat.h>): the fast path (the rseq add and
 * marks, updated.h), the fenced one, the update of a group being
 * destroyed, and the threshold count (threshold.h) after each; and the
 * checks of the group histogram snapshots.
 */
#ifndef TALLY_RSTAT_MOD_H
#define TALLY_RSTAT_MOD_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/mod.h is private: include <tally/rstat.h>"
#endif

/*
 * The update's threshold count (tally/rstat/threshold.h), once the slot-s
 * add and its dirty marking are done and tally__rstat_count_settled()
 * said no at generation gen.
 */
static inline void tally__rstat_mod_count(struct tally_group *g, unsigned s, tally_sword delta,
					  unsigned long gen)
{
	const struct tally_tree *t = g->tally__tree;
	/* |delta| without overflow; capped at threshold + 1, which already
	 * makes any group flushable (and at 2^38, so a slot's count, below
	 * batch + cap, fits its 40 bits). */
	uint64_t mag = delta < 0 ? (uint64_t)0 - (uint64_t)(int64_t)delta : (uint64_t)delta;
	if (mag > t->tally__thr.threshold + 1)
		mag = t->tally__thr.threshold + 1;
	if (mag > (1ull << 38))
		mag = 1ull << 38;
	tally__rstat_count(t, g, s, mag, gen);
}

/*
 * tally_group_mod() without the mark half: the add (rseq or atomic, on
 * any chunk), BARRIER_U, the shared half's marking, the threshold count.
 * g alive, item in range, delta != 0.
 */
static inline void tally__rstat_mod_fenced_counted(struct tally_group *g, unsigned item,
						   tally_sword delta, int count)
{
	struct tally_tree *t = g->tally__tree;
	unsigned long gen;
	unsigned s;
	tally__pcpu_add(&g->tally__pcpu, TALLY__RSTAT_WORD_OFF + (size_t)item * sizeof(tally_uword),
			(tally_uword)delta, &s);
	/* BARRIER_U: the word add before the dirty-bit loads. */
	tally__rstat_barrier_update(t);
	tally__rstat_mark_dirty(g, s);
	if (!count)
		return;
	gen = tally__rstat_gen(t);
	if (tally__likely(tally__rstat_count_settled(g, s, gen)))
		return;
	tally__rstat_mod_count(g, s, delta, gen);
}

static inline void tally__rstat_mod_fenced(struct tally_group *g, unsigned item, tally_sword delta)
{
	tally__rstat_mod_fenced_counted(g, item, delta, 1);
}

/*
 * tally_group_mod() on a destroyed g (inside a read-side section that
 * holds it): the update of a live group, on g's own slot word and dirty
 * bits (the fenced marking: g's fast path is closed), whose delta a
 * drain or g's deferred free hands to the nearest live ancestor (see
 * "Destroy" under Memory ordering); its threshold count goes to that
 * ancestor, whose flush will show it (g has no flush of its own any
 * more). The ancestor walk reads parent pointers, fixed at creation, and
 * dead flags: every ancestor of g stays allocated while g is (each child
 * holds a reference on its parent). An ancestor destroyed meanwhile gets
 * the count for nothing, as the count of any update racing with a
 * destroy.
 */
static inline void tally__rstat_mod_dying(struct tally_group *g, unsigned item, tally_sword delta)
{
	struct tally_tree *t = g->tally__tree;
	struct tally_group *a;
	unsigned long gen;
	unsigned s;
	tally__pcpu_add(&g->tally__pcpu, TALLY__RSTAT_WORD_OFF + (size_t)item * sizeof(tally_uword),
			(tally_uword)delta, &s);
	/* BARRIER_U: the word add before the dirty-bit loads. */
	tally__rstat_barrier_update(t);
	tally__rstat_mark_dirty(g, s);
	a = tally__rstat_live_ancestor(g);
	gen = tally__rstat_gen(t);
	if (tally__rstat_count_settled(a, s, gen))
		return;
	tally__rstat_mod_count(a, s, delta, gen);
}

/*
 * An update of a valid item that the fast path does not take: g destroyed
 * (the dying update; TALLY_DEBUG builds abort outside a read-side section
 * and without a reference), or a live g whose chunk the mark path cannot
 * reach (fast_items 0: the fenced update).
 */
static inline void tally__rstat_mod_other(struct tally_group *g, unsigned item, tally_sword delta)
{
	if (tally__unlikely(tally__load(&g->tally__dead))) {
		tally__rcu_dead_use(g, "tally_group_mod");
		if (delta)
			tally__rstat_mod_dying(g, item, delta);
		return;
	}
	if (delta)
		tally__rstat_mod_fenced(g, item, delta);
}

/*
 * tally_group_mod() for what its first check turns away: NULL g or a bad
 * item (-EINVAL, an assertion in TALLY_DEBUG builds; a histogram's words,
 * past the tree's items, are not the caller's), or what
 * tally__rstat_mod_other() takes.
 */
static inline int tally__rstat_mod_slow(struct tally_group *g, unsigned item, tally_sword delta)
{
	if (tally__bad(!g || item >= g->tally__tree->tally__nr_user))
		return -EINVAL;
	tally__rstat_mod_other(g, item, delta);
	return 0;
}

#if TALLY__HAVE_RSEQ
/* After an rseq add of delta on the slot whose chunk is base + soff:
 * tally__rstat_count_settled() there (its regions are one region apart),
 * then the threshold count if it says no. */
TALLY__INLINE void tally__rstat_rseq_count(struct tally_group *g, unsigned char *base, size_t soff,
					   tally_sword delta)
{
	unsigned long gen = tally__rstat_gen(g->tally__tree);
	if (tally__unlikely(tally__load(&((struct tally__rstat_cpu *)(void *)(base + soff))->anc_gen) !=
			    gen))
		tally__rstat_mod_count(g, (unsigned)(soff >> TALLY_PCPU_REGION_SHIFT), delta, gen);
}
#endif

/*
 * The update of word item (an item, or a histogram's word) of a live g
 * that the mark path reaches (fast_items not 0), delta != 0: the rseq add
 * and marks where there are, else the fenced update.
 */
TALLY__INLINE void tally__rstat_mod_fast_counted(struct tally_group *g, unsigned item,
						tally_sword delta, int count)
{
#if TALLY__HAVE_RSEQ
	/* The add and the dirty marks, no barrier (updated.h). */
	unsigned char *base = g->tally__pcpu.base;
	size_t soff;
	if (tally__likely(tally__rstat_rseq_mod(g, base + (size_t)item * sizeof(tally_uword),
						 (tally_uword)delta, &soff))) {
		if (count)
			tally__rstat_rseq_count(g, base, soff, delta);
		return;
	}
#endif
	tally__rstat_mod_fenced_counted(g, item, delta, count);
}

/* The same, counted toward the thresholds: tally_group_mod()'s. */
TALLY__INLINE void tally__rstat_mod_fast(struct tally_group *g, unsigned item, tally_sword delta)
{
	tally__rstat_mod_fast_counted(g, item, delta, 1);
}

/* The checks of the snapshot calls; 0 or -EINVAL. */
static inline int tally__group_hist_args(const struct tally_group *g, unsigned h,
					 const struct tally_hist_snap *s)
{
	if (tally__bad(!g || !s || !s->counts || h >= g->tally__tree->tally__nr_hists ||
		       !tally__hist_layout_eq(&g->tally__tree->tally__hists[h].l, &s->tally__l)))
		return -EINVAL;
	tally__rcu_check_alive(g, "tally_group_hist_snapshot");
	return 0;
}

/* tally_group_hist_snap_init(). */
static inline int tally__rstat_hist_snap_init(struct tally_hist_snap *s, const struct tally_tree *t,
					      unsigned h)
{
	if (tally__bad(!s || !t || h >= t->tally__nr_hists))
		return -EINVAL;
	return tally__hist_snap_init_layout(s, &t->tally__hists[h].l);
}

/* tally_group_hist_snapshot() (local 0, since_reset 1) and
 * tally_group_hist_snapshot_raw() (since_reset 0). */
static inline int tally__rstat_hist_snapshot(struct tally_group *g, unsigned h,
					     struct tally_hist_snap *s, int local, int since_reset)
{
	if (tally__group_hist_args(g, h, s))
		return -EINVAL;
	tally__rstat_hist_read(g, &g->tally__tree->tally__hists[h], s, local, since_reset);
	return 0;
}

#endif /* TALLY_RSTAT_MOD_H */
