/**
 * @file
 * tally/rstat/reset.h - resets of a group's subtree for tally/rstat.h
 * (private; include <tally/rstat.h>), as tally_vec_reset() resets a vector:
 * a reset takes a cut and makes it the baseline that the since-reset
 * readers (tally_group_read, read_positive, read_local) subtract; the raw
 * values (state, local, tally_group_read_monotonic) never move.
 *
 * The cut: under the flush lock, a flush of the subtree (which reflects
 * every update completed before it started), then each group's state and
 * local become its baselines. Nothing else writes state or local while
 * the lock is held, so the baselines are the values of one instant of the
 * subtree: an update is either in that flush (in the baseline) or in a
 * later one (in every later since-reset value), never both, never lost.
 * So at any quiescent point, after a flush, baseline + since-reset value
 * = raw value for every group and item, and the values of the subtree's
 * groups agree with each other as they did (a parent's since-reset value
 * is its local's plus its children's). The ancestors of the subtree keep
 * their values: what the subtree counted before the reset stays counted
 * above it. Gauges (TALLY_GROUP_ITEM_GAUGE) are left alone: their
 * baselines stay 0.
 *
 * The baselines of a group are allocated by its first reset (a group
 * never reset costs nothing and its readers load one NULL pointer),
 * published with a release store and freed with the group. A reader loads
 * the pointer and then the item's baseline with acquire, pairing with the
 * release stores here, and only then the value: a reader that sees a new
 * baseline sees a value at least as new as the cut (coherence), so the
 * since-reset value of a growing item is never negative.
 */
#ifndef TALLY_RSTAT_RESET_H
#define TALLY_RSTAT_RESET_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/reset.h is private: include <tally/rstat.h>"
#endif

/* g's baseline k (item k of state, or nr_items + k of local); 0 before g's
 * first reset. Acquire: pairs with the release stores in
 * tally__rstat_reset(). */
TALLY__INLINE tally_uword tally__rstat_baseline(const struct tally_group *g, unsigned k)
{
	const tally_uword *b = __atomic_load_n(&g->tally__base.p, __ATOMIC_ACQUIRE);
	return b ? tally__load_acq(&b[k]) : 0;
}

/* tally_group_reset(), g not NULL. */
static inline int tally__rstat_reset(struct tally_group *g)
{
	struct tally_tree *t = g->tally__tree;
	const unsigned char *flags = t->tally__item_flags;
	unsigned i, n = t->tally__nr_items;
	struct tally_group **v;
	size_t k, nr;
	pthread_mutex_lock(&t->tally__flush.lock);
	if (tally__load(&g->tally__dead)) {
		pthread_mutex_unlock(&t->tally__flush.lock);
		return tally__rcu_dead(g, "tally_group_reset");
	}
	nr = tally__rstat_subtree(g, &v);
	if (!nr) {
		pthread_mutex_unlock(&t->tally__flush.lock);
		return -ENOMEM;
	}
	/* Every group's baselines first, so that running out of memory
	 * changes nothing. Zero: the first reset moves them from 0. */
	for (k = 0; k < nr; k++) {
		tally_uword *b;
		if (v[k]->tally__base.p)
			continue;
		b = (tally_uword *)calloc(2u * n, sizeof(*b));
		if (!b) {
			pthread_mutex_unlock(&t->tally__flush.lock);
			free(v);
			return -ENOMEM;
		}
		/* Release: a reader that loads the pointer sees the zeros. */
		__atomic_store_n(&v[k]->tally__base.p, b, __ATOMIC_RELEASE);
	}
	tally__rstat_flush_locked(t, g);
	if (!g->tally__links.parent)
		tally__store(&t->tally__clock.last_root_flush, tally__rstat_now(t));
	for (k = 0; k < nr; k++) {
		struct tally_group *x = v[k];
		tally_uword *b = x->tally__base.p;
		for (i = 0; i < n; i++) {
			if (flags && (flags[i] & TALLY_GROUP_ITEM_GAUGE))
				continue;
			/* Release: pairs with tally__rstat_baseline(). */
			tally__store_rel(&b[i], x->tally__state[i]);
			tally__store_rel(&b[n + i], x->tally__local[i]);
		}
	}
	pthread_mutex_unlock(&t->tally__flush.lock);
	free(v);
	return 0;
}

/* ---- the bodies of rstat.h's resets and readers ----------------------------- */

/* tally_group_reset(). */
static inline int tally__rstat_group_reset(struct tally_group *g)
{
	if (tally__bad(!g))
		return -EINVAL;
	return tally__rstat_reset(g);
}

/* tally_tree_reset(). */
static inline int tally__rstat_tree_reset(struct tally_tree *t)
{
	if (tally__bad(!t))
		return -EINVAL;
	return tally__rstat_reset(t->tally__root);
}

/* tally_group_read(): state less its baseline. */
TALLY__INLINE tally_sword tally__rstat_read(const struct tally_group *g, unsigned item)
{
	tally_uword base;
	if (tally__bad(!g || item >= g->tally__nr_items))
		return 0;
	tally__rcu_check_alive(g, "tally_group_read");
	base = tally__rstat_baseline(g, item);
	return tally__to_signed(tally__load(&g->tally__state[item]) - base);
}

/* tally_group_read_monotonic(): state, raw. */
TALLY__INLINE tally_uword tally__rstat_read_monotonic(const struct tally_group *g, unsigned item)
{
	if (tally__bad(!g || item >= g->tally__nr_items))
		return 0;
	tally__rcu_check_alive(g, "tally_group_read_monotonic");
	return (tally_uword)(tally__load(&g->tally__state[item]) + TALLY_MONOTONIC_BIAS);
}

/* tally_group_read_local(): local less its baseline. */
TALLY__INLINE tally_sword tally__rstat_read_local(const struct tally_group *g, unsigned item)
{
	tally_uword base;
	if (tally__bad(!g || item >= g->tally__nr_items))
		return 0;
	tally__rcu_check_alive(g, "tally_group_read_local");
	base = tally__rstat_baseline(g, g->tally__nr_items + item);
	return tally__to_signed(tally__load(&g->tally__local[item]) - base);
}

#endif /* TALLY_RSTAT_RESET_H */
