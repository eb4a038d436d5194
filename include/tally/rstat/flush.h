/*
 * tally/rstat/flush.h - the flush walk and group lifetimes of
 * tally/rstat.h (private; include <tally/rstat.h>): the kernel's
 * css_rstat_flush() (kernel/cgroup/rstat.c) with
 * mem_cgroup_css_rstat_flush()'s arithmetic (mm/memcontrol.c), and the
 * hand-over of a destroyed group's counts to its parent.
 *
 * Everything here runs under the tree's flush lock.
 */
#ifndef TALLY_RSTAT_FLUSH_H
#define TALLY_RSTAT_FLUSH_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/flush.h is private: include <tally/rstat.h>"
#endif

/* ---- allocation ------------------------------------------------------------ */

/* Free a group's memory (no unlinking: see tally_group_destroy()). */
static inline void tally__group_free(struct tally_group *g)
{
	tally__pcpu_free(&g->tally__pcpu);
	free(g);
}

/* Allocate and initialise a group (no id yet, not linked into the tree). */
static inline struct tally_group *tally__group_alloc(struct tally_tree *t,
						     struct tally_group *parent)
{
	size_t n = t->tally__nr_items;
	size_t chunk = t->tally__prev_off + n * sizeof(tally_uword);
	size_t bytes = sizeof(struct tally_group) + 3 * n * sizeof(tally_uword);
	struct tally_group *g;
	unsigned s;
	/* Cache-line aligned (the 64-bit atomics and the item arrays are
	 * aligned within the struct: see the static assertions in rstat.h);
	 * C11 aligned_alloc wants the size a multiple of the alignment. */
	bytes = (bytes + TALLY_CACHELINE - 1) / TALLY_CACHELINE * TALLY_CACHELINE;
	g = (struct tally_group *)aligned_alloc(TALLY_CACHELINE, bytes);
	if (!g)
		return NULL;
	memset(g, 0, bytes);
	if (tally__pcpu_alloc(&g->tally__pcpu, chunk)) {
		free(g);
		return NULL;
	}
	g->tally__tree = t;
	g->tally__links.parent = parent;
	g->tally__links.refs = 1;
	g->tally__nr_items = (unsigned)n;
	g->tally__state = (tally_uword *)(g + 1);
	g->tally__local = g->tally__state + n;
	g->tally__pending = g->tally__local + n;
	for (s = 0; s < tally__pcpu_slots(&g->tally__pcpu); s++) {
		struct tally__rstat_cpu *c = tally__rstat_cpu(g, s);
		c->upd_children = g; /* empty */
		c->upd_next = NULL;  /* not in the updated tree */
	}
	return g;
}

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
 * Drain every slot; then hand over the deltas of destroyed groups whose
 * bits the drain cleared (updates that raced with their destroy), so
 * that, like a live group's, such an update is reflected by any flush
 * that starts after it returned and covers the ancestor.
 */
static inline void tally__rstat_drain_all_settled(struct tally_tree *t)
{
	unsigned s;
	tally__rstat_drain_all(t);
	for (s = 0; s < t->tally__ids.nr_slots; s++) {
		struct tally_group *g = t->tally__flush.dead[s];
		if (!g)
			continue;
		tally__rstat_barrier_flush(t);
		t->tally__flush.dead[s] = NULL;
		while (g) {
			struct tally_group *next = tally__rstat_cpu(g, s)->flush_next;
			tally__rstat_hand_over_slot(t, g, s);
			g = next;
		}
	}
}

/* ---- the flush walk -------------------------------------------------------- */

/* Flush group x on slot s: the arithmetic in rstat.h's Model. */
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
 * Each drain pass is followed by BARRIER_F before any word load.
 */
static inline void tally__rstat_flush_locked(struct tally_tree *t, struct tally_group *g)
{
	struct tally_group **lists = t->tally__flush.lists, *x;
	unsigned s, n = t->tally__ids.nr_slots;
	t->tally__flush.gen++;
	/* g's count first, linked or not: a count can outlive the marking of
	 * its updates (counted after an earlier flush's take, drained by its
	 * second drain), and a flush of g must still clear it. */
	tally__rstat_count_take(t, g);
	tally__rstat_drain_all_settled(t);
	for (s = 0; s < n; s++) {
		lists[s] = tally__rstat_detach(g, s);
		for (x = lists[s]; x; x = tally__rstat_cpu(x, s)->flush_next)
			tally__rstat_count_take(t, x);
		lists[s] = tally__rstat_reverse(lists[s], s);
	}
	for (s = 0; s < n; s++)
		for (x = lists[s]; x; x = tally__rstat_cpu(x, s)->flush_next)
			tally__rstat_flush_one(t, x, s);
	tally__rstat_drain_all_settled(t);
	for (s = 0; s < n; s++)
		for (x = tally__rstat_reverse(tally__rstat_detach(g, s), s); x;
		     x = tally__rstat_cpu(x, s)->flush_next)
			tally__rstat_flush_one(t, x, s);
	tally__rstat_count_settle(t);
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

/* ---- the deferred free ------------------------------------------------------------ */

/*
 * The late hand-over, a grace period after g's destroy: every update that
 * found g alive has returned; whatever no drain handed over yet goes to
 * the nearest live ancestor.
 */
static inline void tally__rstat_late_hand_over(struct tally_tree *t, struct tally_group *g)
{
	unsigned s;
	for (s = 0; s < t->tally__ids.nr_slots; s++)
		tally__rstat_hand_over_slot(t, g, s);
	tally__rstat_hand_over(t, g, tally__rstat_live_ancestor(g));
}

/* Drop a reference to g; free g, and then its destroyed ancestors, as
 * their counts reach 0. */
static inline void tally__rstat_put(struct tally_group *g)
{
	while (g && --g->tally__links.refs == 0) {
		struct tally_group *p = g->tally__links.parent;
		tally__group_free(g);
		g = p;
	}
}

/* The call_rcu callback: a grace period has passed since g's destroy, so
 * no reader holds g and every update that found it alive has returned. */
static inline void tally__group_free_rcu(struct rcu_head *head)
{
	struct tally_group *g =
		(struct tally_group *)((char *)head - offsetof(struct tally_group, tally__rcu));
	struct tally_tree *t;
	/* Pairs with tally__tsan_release(g) in tally_group_destroy() ... */
	tally__tsan_acquire(g);
	t = g->tally__tree;
	/* ... and with every reader's release in tally_tree_read_unlock(). */
	tally__tsan_acquire(&t->tally__rcu.tsan_token);
	pthread_mutex_lock(&t->tally__flush.lock);
	tally__rstat_late_hand_over(t, g);
	tally__rstat_id_release(t, g);
	tally__rstat_put(g);
	pthread_mutex_unlock(&t->tally__flush.lock);
	/* The last touch of t: release, pairs with the acquire wait in
	 * tally_tree_destroy(), which may free t as soon as this is 0. */
	__atomic_sub_fetch(&t->tally__rcu.deferred, 1ul, __ATOMIC_RELEASE);
}

#endif /* TALLY_RSTAT_FLUSH_H */
