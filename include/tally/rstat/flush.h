/**
 * @file
 * tally/rstat/flush.h - the flush walk and group lifetimes of
 * tally/rstat.h (private; include <tally/rstat.h>): the kernel's
 * css_rstat_flush() (kernel/cgroup/rstat.c) with
 * mem_cgroup_css_rstat_flush()'s arithmetic (mm/memcontrol.c), and the
 * hand-over of destroyed groups' counts to their nearest live ancestor.
 *
 * Everything here runs under the tree's flush lock.
 */
#ifndef TALLY_RSTAT_FLUSH_H
#define TALLY_RSTAT_FLUSH_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/flush.h is private: include <tally/rstat.h>"
#endif

/* ---- hand-overs of destroyed groups --------------------------------------------- */

/*
 * Move g's pending into a's (a live ancestor) and link a on slot 0 so its
 * next flush takes it. Returns whether anything moved.
 */
static inline int tally__rstat_hand_over(struct tally_tree *t, struct tally_group *g,
					 struct tally_group *a)
{
	unsigned i;
	int any = 0;
	(void)t;
	for (i = 0; i < g->tally__nr_items; i++) {
		tally_uword d = g->tally__pending[i];
		if (!d)
			continue;
		a->tally__pending[i] += d;
		g->tally__pending[i] = 0;
		any = 1;
	}
	if (any)
		tally__rstat_link(a, 0);
	return any;
}

/* The nearest live ancestor of g (the root is never destroyed; destroyed
 * ancestors are still allocated: g holds a reference on its parent). */
static inline struct tally_group *tally__rstat_live_ancestor(struct tally_group *g)
{
	struct tally_group *a = g->tally__links.parent;
	while (tally__load(&a->tally__dead))
		a = a->tally__links.parent;
	return a;
}

/*
 * A destroyed group's slot-s delta since its last flush (word - prev),
 * into the pending of its nearest live ancestor, which is linked on s for
 * its next flush. After BARRIER_F, like any word load.
 */
static inline void tally__rstat_hand_over_slot(struct tally_tree *t, struct tally_group *g,
					       unsigned s)
{
	struct tally_group *a = tally__rstat_live_ancestor(g);
	struct tally__rstat_cpu *c = tally__rstat_cpu(g, s);
	unsigned i;
	int any = 0;
	for (i = 0; i < g->tally__nr_items; i++) {
		tally_uword v = tally__load(tally__rstat_word(t, c, i));
		tally_uword *prev = tally__rstat_prev(t, c, i);
		if (v != *prev) {
			a->tally__pending[i] += v - *prev;
			*prev = v;
			any = 1;
		}
	}
	if (any)
		tally__rstat_link(a, s);
}

/*
 * Destroy's one flush of g (alive, no live children, not the root):
 * every slot's delta since its last flush (word - prev) into g's local
 * and state and into its parent's pending, g's pending into its state and
 * the parent's pending, then g out of every slot's updated tree (O(1)
 * each: a group's updated children are live groups, and g has none). The
 * parent is linked on slot 0 if anything moved, so its next flush takes
 * it. No drain: O(slots * items), whatever else the tree holds; g's dirty
 * bits stay as they are, and a drain that later finds one set hands
 * over what came since (tally__rstat_drain_all_settled(): the word -
 * prev of a group that is dead by then). Flush lock held, before g is
 * marked dead.
 */
static inline void tally__rstat_retire(struct tally_tree *t, struct tally_group *g)
{
	struct tally_group *p = g->tally__links.parent;
	unsigned s, i, n = g->tally__nr_items, lim;
	int any = 0;
	/* An owed membarrier() before the word loads (BARRIER_F). */
	tally__rstat_barrier_flush(t);
	lim = tally__pcpu_lim(&g->tally__pcpu);
	tally__rstat_for_slots(g, s, lim) {
		struct tally__rstat_cpu *c = tally__rstat_cpu(g, s);
		for (i = 0; i < n; i++) {
			tally_uword v = tally__load(tally__rstat_word(t, c, i));
			tally_uword *prev = tally__rstat_prev(t, c, i), d;
			if (v == *prev)
				continue;
			d = v - *prev;
			*prev = v;
			tally__store(&g->tally__local[i], g->tally__local[i] + d);
			tally__store(&g->tally__state[i], g->tally__state[i] + d);
			p->tally__pending[i] += d;
			any = 1;
		}
		if (c->upd_next)
			tally__rstat_unlink(g, s);
	}
	for (i = 0; i < n; i++) {
		tally_uword d = g->tally__pending[i];
		if (!d)
			continue;
		g->tally__pending[i] = 0;
		tally__store(&g->tally__state[i], g->tally__state[i] + d);
		p->tally__pending[i] += d;
		any = 1;
	}
	if (any)
		tally__rstat_link(p, 0);
}

/*
 * Drain every slot; then hand over every slot's delta of each destroyed
 * group whose bit the drain cleared (updates that raced with its
 * destroy), so that, as for a live group, such an update is reflected by
 * any flush that starts after it returned and covers the ancestor.
 */
static inline void tally__rstat_drain_all_settled(struct tally_tree *t)
{
	struct tally_group *g;
	unsigned s, lim;
	tally__rstat_drain_all(t);
	g = t->tally__flush.handover;
	if (!g)
		return;
	t->tally__flush.handover = NULL;
	tally__rstat_barrier_flush(t);
	for (;;) {
		struct tally_group *next = g->tally__handover_next;
		g->tally__handover_next = NULL;
		lim = tally__pcpu_lim(&g->tally__pcpu);
		tally__rstat_for_slots(g, s, lim)
			tally__rstat_hand_over_slot(t, g, s);
		if (next == g)
			break;
		g = next;
	}
}

/* ---- the flush walk -------------------------------------------------------- */

/* Flush group x on slot s: the arithmetic of rstat/correctness.h's model. */
static inline void tally__rstat_flush_one(struct tally_tree *t, struct tally_group *x, unsigned s)
{
	struct tally__rstat_cpu *c = tally__rstat_cpu(x, s);
	struct tally_group *p = x->tally__links.parent;
	unsigned i, n = x->tally__nr_items;
	tally__rstat_barrier_flush(t);
	for (i = 0; i < n; i++) {
		tally_uword delta = x->tally__pending[i];
		tally_uword v = tally__load(tally__rstat_word(t, c, i));
		tally_uword *prev = tally__rstat_prev(t, c, i);
		x->tally__pending[i] = 0;
		if (v != *prev) {
			tally_uword d = v - *prev;
			delta += d;
			*prev = v;
			/* Single writer (the lock); readers load relaxed. */
			tally__store(&x->tally__local[i], x->tally__local[i] + d);
		}
		if (delta) {
			tally__store(&x->tally__state[i], x->tally__state[i] + delta);
			if (p)
				p->tally__pending[i] += delta;
		}
	}
}

/*
 * Flush g's subtree on every slot.
 * 1. Take g's count; drain every slot; every slot: detach g's part, take
 *    the counts of the groups met (parents first), flush it (children
 *    first).
 * 2. Drain every slot again, and flush what came (updates marked since
 *    step 1, among them every one whose count step 1 took, and those
 *    marked while step 1 flushed: leaving those to the next flush lets a
 *    busy tree's flushes grow without bound, each leaving more to the
 *    next; measured with whole-tree flushes under steady updates).
 * 3. Settle the counts taken.
 * The tree's flush generation is bumped before step 1 and after step 3.
 * Each drain pass is followed by BARRIER_F before any word load.
 */
static inline void tally__rstat_flush_locked(struct tally_tree *t, struct tally_group *g)
{
	struct tally_group **lists = t->tally__flush.lists, *x;
	unsigned s, lim;
	/* Atomic: updaters compare it with their anc_gen (threshold.h). A
	 * flush bumps it at its start and at its end. */
	tally__store(&t->tally__flush.gen, tally__rstat_gen_next(t->tally__flush.gen));
	/* g's count first, linked or not: a count can outlive the marking of
	 * its updates (counted after an earlier flush's take, drained by its
	 * second drain), and a flush of g must still clear it. */
	tally__rstat_count_take(t, g);
	tally__rstat_drain_all_settled(t);
	TALLY__TEST_HOOK(rstat_flush_drained, g);
	/* The slots g's subtree is linked on: below g's written bound (a
	 * link covers every group it links) or the shared one; the visit
	 * below takes the lists of these slots alone (lim kept: concurrent
	 * updates may raise the bound meanwhile). */
	lim = tally__pcpu_lim(&g->tally__pcpu);
	tally__rstat_for_slots(g, s, lim) {
		/* Parents first: take each count, and reverse the list as we go
		 * (children first, for the visit). */
		struct tally_group *rev = NULL, *next;
		for (x = tally__rstat_detach(g, s); x; x = next) {
			struct tally__rstat_cpu *c = tally__rstat_cpu(x, s);
			tally__rstat_count_take(t, x);
			next = c->flush_next;
			c->flush_next = rev;
			rev = x;
		}
		lists[s] = rev;
	}
	tally__rstat_for_slots(g, s, lim)
		for (x = lists[s]; x; x = tally__rstat_cpu(x, s)->flush_next)
			tally__rstat_flush_one(t, x, s);
	tally__rstat_drain_all_settled(t);
	/* g's bound again: the drain may have linked more */
	lim = tally__pcpu_lim(&g->tally__pcpu);
	tally__rstat_for_slots(g, s, lim)
		for (x = tally__rstat_reverse(tally__rstat_detach(g, s), s); x;
		     x = tally__rstat_cpu(x, s)->flush_next)
			tally__rstat_flush_one(t, x, s);
	TALLY__TEST_HOOK(rstat_flush_walked, g);
	tally__rstat_count_settle(t);
	/* Again, now that the counts are lowered. Release: an update that
	 * loads this generation (acquire) sees the lowered counts, and one
	 * that loaded the first walks again (threshold.h). */
	__atomic_store_n(&t->tally__flush.gen, tally__rstat_gen_next(t->tally__flush.gen),
			 __ATOMIC_RELEASE);
}

/* Flush g (forced) if it is alive; record the time for the root. */
static inline void tally__rstat_flush(struct tally_group *g)
{
	struct tally_tree *t = g->tally__tree;
	pthread_mutex_lock(&t->tally__flush.lock);
	if (tally__load(&g->tally__dead)) {
		pthread_mutex_unlock(&t->tally__flush.lock);
		errno = EINVAL;
		return;
	}
	if (!g->tally__links.parent)
		tally__store(&t->tally__clock.last_root_flush, tally__rstat_now(t));
	tally__rstat_flush_locked(t, g);
	pthread_mutex_unlock(&t->tally__flush.lock);
}

/* ---- the bodies of rstat.h's flush calls ----------------------------------- */

/* tally_group_needs_flush(). */
TALLY__INLINE bool tally__rstat_needs_flush(const struct tally_group *g)
{
	if (tally__bad(!g) || tally__load(&g->tally__dead))
		return false;
	return tally__rstat_count_over(g);
}

/* tally_group_flush() (force 0) and tally_group_flush_force() (force 1);
 * call names it for TALLY_DEBUG's checks. */
static inline void tally__rstat_flush_call(struct tally_group *g, int force, const char *call)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return;
	}
	if (tally__load(&g->tally__dead)) {
		errno = -tally__rcu_dead(g, call);
		return;
	}
	if (force || tally__rstat_needs_flush(g))
		tally__rstat_flush(g);
}

/* tally_group_flush_ratelimited(). */
static inline void tally__rstat_flush_ratelimited(struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return;
	}
	if (tally__rstat_ratelimit_passed(g->tally__tree))
		tally__rstat_flush_call(g, 0, "tally_group_flush");
}

/* tally_tree_flush_periodic(). */
static inline void tally__rstat_flush_periodic(struct tally_tree *t)
{
	if (tally__bad(!t)) {
		errno = EINVAL;
		return;
	}
	tally__rstat_flush(t->tally__root);
}

#endif /* TALLY_RSTAT_FLUSH_H */
