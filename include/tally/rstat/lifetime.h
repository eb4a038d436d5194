/**
 * @file
 * tally/rstat/lifetime.h - creating and destroying trees and groups for
 * tally/rstat.h (private; include <tally/rstat.h>): allocation, group ids,
 * the O(1) unlink of a destroyed group (after its retire, one flush of the
 * group alone: tally__rstat_retire()), its deferred free through the
 * tree's RCU flavor (call_rcu()) with the late hand-over of its counts
 * (updates on a dying group count until then: rstat/correctness.h,
 * "Destroy"), and the reference counts that keep destroyed
 * ancestors allocated while a destroyed child may still hand over to
 * them or an update on it walks up through them.
 *
 * A destroyed group is freed once two things have happened, in either
 * order: a grace period since its destroy (no read-side section holds it:
 * the call_rcu() callback) and the last put of its tally_ref (no thread
 * holds a reference: the ref's release(), which tally_ref_kill() in the
 * destroy runs itself when nobody holds one). Each drops one of the two
 * counts of free_wait; the one that brings it to 0 does the late
 * hand-over and the free (tally__group_finish()), under the flush lock:
 * the call_rcu() worker, or the thread of that last put.
 *
 * Everything that changes the tree runs under the flush lock.
 */
#ifndef TALLY_RSTAT_LIFETIME_H
#define TALLY_RSTAT_LIFETIME_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/lifetime.h is private: include <tally/rstat.h>"
#endif

/* ---- allocation ------------------------------------------------------------ */

/* Free a group's memory (no unlinking: see tally_group_destroy()). */
static inline void tally__group_free(struct tally_group *g)
{
	free(g->tally__name.p);
	free(g->tally__base.p);
	tally_ref_exit(&g->tally__ref);
	tally__pcpu_free(&g->tally__pcpu);
	free(g);
}

static inline void tally__group_ref_release(struct tally_ref *r);

/* Allocate and initialise a group (no id yet, not linked into the tree). */
static inline struct tally_group *tally__group_alloc(struct tally_tree *t,
						     struct tally_group *parent)
{
	size_t n = t->tally__nr_items;
	size_t chunk = t->tally__prev_off + n * sizeof(tally_uword);
	size_t bytes = sizeof(struct tally_group) + 3 * n * sizeof(tally_uword);
	struct tally_group *g;
	/* Cache-line aligned (the 64-bit atomics and the item arrays are
	 * aligned within the struct: see the static assertions in rstat/types.h);
	 * C11 aligned_alloc wants the size a multiple of the alignment. */
	bytes = (bytes + TALLY_CACHELINE - 1) / TALLY_CACHELINE * TALLY_CACHELINE;
	g = (struct tally_group *)aligned_alloc(TALLY_CACHELINE, bytes);
	if (!g)
		return NULL;
	memset(g, 0, bytes);
	/* In the cold per-CPU arena: flushes on other CPUs write a slot's
	 * links and prev snapshots beside its words, so its lines must not
	 * hold another object's hot words (tally/pcpu/arena.h). Zeroed in
	 * every slot, and left so: a slot's zero state is a valid one (no
	 * updated children, not in the updated tree, anc_gen 0, which no
	 * flush generation equals: tally__rstat_gen_next()), so a CPU that
	 * never updates g never touches its page of the arena. */
	if (tally__pcpu_alloc_tracked(&g->tally__pcpu, chunk, TALLY__ARENA_COLD)) {
		free(g);
		return NULL;
	}
	if (tally__ref_init(&g->tally__ref, tally__group_ref_release, !TALLY__TSAN)) {
		tally__pcpu_free(&g->tally__pcpu);
		free(g);
		return NULL;
	}
	g->tally__tree = t;
	g->tally__links.parent = parent;
	g->tally__links.refs = 1;
	g->tally__links.depth = parent ? parent->tally__links.depth + 1u : 0u;
	g->tally__nr_items = (unsigned)n;
#if TALLY__HAVE_RSEQ
	/* the byte path reaches the chunk with a constant shift */
	g->tally__fast_items = g->tally__pcpu.shift == TALLY_PCPU_REGION_SHIFT ? t->tally__nr_user : 0u;
#else
	g->tally__fast_items = t->tally__nr_user;
#endif
	g->tally__state = (tally_uword *)(g + 1);
	g->tally__local = g->tally__state + n;
	g->tally__pending = g->tally__local + n;
	return g;
}

/* ---- the deferred free ------------------------------------------------------------ */

/*
 * The late hand-over, a grace period after g's destroy: every update that
 * found g alive has returned; whatever no drain handed over yet goes to
 * the nearest live ancestor.
 */
static inline void tally__rstat_late_hand_over(struct tally_tree *t, struct tally_group *g)
{
	unsigned s, lim = tally__pcpu_lim(&g->tally__pcpu);
	tally__rstat_for_slots(g, s, lim)
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

/*
 * The late hand-over and the free of a destroyed g, once no read-side
 * section and no reference holds it (both counts of free_wait dropped).
 */
static inline void tally__group_finish(struct tally_group *g)
{
	struct tally_tree *t = g->tally__tree;
	/* Pairs with the release in every tally_group_put(). */
	tally__tsan_acquire(&g->tally__ref);
	pthread_mutex_lock(&t->tally__flush.lock);
	tally__rstat_late_hand_over(t, g);
	tally__rstat_id_release(t, g);
	tally__rstat_put(g);
	pthread_mutex_unlock(&t->tally__flush.lock);
	/* The last touch of t: release, pairs with the acquire wait in
	 * tally_tree_destroy(), which may free t as soon as this is 0. */
	__atomic_sub_fetch(&t->tally__rcu.deferred, 1ul, __ATOMIC_RELEASE);
}

/* Drop one of the two counts of g's free_wait; finish g at 0. acq_rel:
 * whatever the grace period or the last put ordered before it (every
 * update on g, every reader's section) comes before the finish. */
static inline void tally__group_free_step(struct tally_group *g)
{
	if (__atomic_sub_fetch(&g->tally__free_wait, 1u, __ATOMIC_ACQ_REL) == 0)
		tally__group_finish(g);
}

/* g's tally_ref came to 0 after its kill (the destroy): no thread holds a
 * reference. Runs on the thread of the last put, or in the destroy. */
static inline void tally__group_ref_release(struct tally_ref *r)
{
	tally__group_free_step((struct tally_group *)(void *)((char *)r -
							       offsetof(struct tally_group, tally__ref)));
}

/* The call_rcu callback: a grace period has passed since g's destroy, so
 * no reader holds g. */
static inline void tally__group_free_rcu(struct rcu_head *head)
{
	struct tally_group *g =
		(struct tally_group *)((char *)head - offsetof(struct tally_group, tally__rcu));
	/* Pairs with tally__tsan_release(g) in tally_group_destroy() ... */
	tally__tsan_acquire(g);
	/* ... and with every reader's release in tally_tree_read_unlock(). */
	tally__tsan_acquire(&g->tally__tree->tally__rcu.tsan_token);
	tally__group_free_step(g);
}

/* ---- trees and groups ---------------------------------------------------- */

/* tally_tree_create_opts(), valid options. */
static inline struct tally_tree *tally__rstat_tree_create(const struct tally_tree_opts *o)
{
	struct tally_tree *t;
	size_t hdr;
	t = (struct tally_tree *)calloc(1, sizeof(*t));
	if (!t)
		goto nomem;
	/* The items, then each histogram's words (tally__rstat_hists_setup()). */
	if (tally__rstat_hists_setup(t, o)) {
		free(t);
		goto nomem;
	}
	t->tally__flush.gen = tally__rstat_gen_next(0); /* never 0: see anc_gen */
	t->tally__thr.batch = o->batch ? o->batch : TALLY_RSTAT_BATCH;
	t->tally__thr.threshold = (uint64_t)t->tally__thr.batch * tally__rstat_online_cpus();
	/* Before any group of t exists, fixed for t's life: updaters never
	 * meet a flush that assumes the other barrier. */
#if TALLY__RSTAT_MEMB && TALLY_RSTAT_MEMBARRIER
	t->tally__flush.memb = tally__rstat_memb_setup();
#endif
	hdr = TALLY__RSTAT_WORD_OFF;
	t->tally__word_off = hdr;
	t->tally__prev_off = hdr + t->tally__nr_items * sizeof(tally_uword);
	t->tally__rcu.flavor = o->flavor ? o->flavor : &TALLY_URCU_DEFAULT_FLAVOR;
	t->tally__rcu.auto_register =
		TALLY__URCU_AUTO_REGISTER && t->tally__rcu.flavor == &TALLY_URCU_DEFAULT_FLAVOR;
	if (o->item_flags) {
		/* a histogram's words: counters (0) */
		t->tally__item_flags = (unsigned char *)calloc(t->tally__nr_items, 1);
		if (!t->tally__item_flags)
			goto nomem_t;
		memcpy(t->tally__item_flags, o->item_flags, o->nr_items);
	}
	t->tally__clock.now = o->clock;
	t->tally__clock.arg = o->clock_arg;
	t->tally__clock.period_ns = o->period_ns ? o->period_ns : (uint64_t)TALLY_RSTAT_PERIOD_NS;
	if (tally__rstat_ids_init(&t->tally__ids))
		goto nomem_t;
	t->tally__flush.lists = (struct tally_group **)calloc(t->tally__ids.nr_slots,
							      sizeof(struct tally_group *));
	if (!t->tally__flush.lists)
		goto nomem_ids;
	t->tally__root = tally__group_alloc(t, NULL);
	if (!t->tally__root)
		goto nomem_ids;
	if (tally__rstat_id_alloc(t, t->tally__root))
		goto nomem_root;
	if (pthread_mutex_init(&t->tally__flush.lock, NULL))
		goto nomem_root;
	if (tally__rstat_flusher_init(t))
		goto nomem_lock;
	t->tally__flush.nr_groups = 1;
	t->tally__clock.last_root_flush = tally__rstat_now(t);
	return t;
nomem_lock:
	pthread_mutex_destroy(&t->tally__flush.lock);
nomem_root:
	tally__group_free(t->tally__root);
nomem_ids:
	free(t->tally__flush.lists);
	tally__rstat_ids_free(&t->tally__ids);
nomem_t:
	free(t->tally__item_flags);
	tally__rstat_hists_free(t);
	free(t);
nomem:
	errno = ENOMEM;
	return NULL;
}

/* Whether parent has a live child named name (flush lock). */
static inline int tally__rstat_child_named(const struct tally_group *parent, const char *name)
{
	const struct tally_group *c;
	for (c = parent->tally__links.first_child; c; c = c->tally__links.next_sibling)
		if (!c->tally__dead && c->tally__name.p && !strcmp(c->tally__name.p, name))
			return 1;
	return 0;
}

/* tally_group_create() and tally_group_create_named(), parent not NULL;
 * name: the group's own copy (freed here on failure) or NULL. A named
 * group is published with its name: no walker sees it unnamed. */
static inline struct tally_group *tally__rstat_group_create(struct tally_group *parent, char *name)
{
	struct tally_tree *t;
	struct tally_group *g, *first;
	int err = 0;
	t = parent->tally__tree;
	/* The depth bound (rstat.h): before anything is allocated. A
	 * destroyed parent is refused with EINVAL below, whatever its depth. */
	if (parent->tally__links.depth >= TALLY_RSTAT_DEPTH_MAX && !tally__load(&parent->tally__dead)) {
		free(name);
		errno = E2BIG;
		return NULL;
	}
	g = tally__group_alloc(t, parent);
	if (!g) {
		free(name);
		errno = ENOMEM;
		return NULL;
	}
	g->tally__name.p = name;
	pthread_mutex_lock(&t->tally__flush.lock);
	if (tally__load(&parent->tally__dead))
		err = tally__rcu_dead(parent, name ? "tally_group_create_named" : "tally_group_create");
	else if (name && tally__rstat_child_named(parent, name))
		err = -EEXIST;
	else if (tally__rstat_id_alloc(t, g))
		err = -ENOMEM;
	if (err) {
		pthread_mutex_unlock(&t->tally__flush.lock);
		tally__group_free(g);
		errno = -err;
		return NULL;
	}
	g->tally__serial = ++t->tally__last_serial; /* before the publish below */
	first = parent->tally__links.first_child;
	g->tally__links.next_sibling = first;
	if (first)
		first->tally__links.prev_sibling = g;
	/* Release: a walker that loads g (acquire) sees it initialised. */
	tally__store_rel(&parent->tally__links.first_child, g);
	parent->tally__links.nr_children++;
	parent->tally__links.refs++;
	t->tally__flush.nr_groups++;
	pthread_mutex_unlock(&t->tally__flush.lock);
	return g;
}

/* Destroy g (alive, not the root, no live children) under the flush
 * lock; its deferred free is tally__rstat_defer_free(), after the unlock. */
static inline void tally__rstat_destroy_locked(struct tally_tree *t, struct tally_group *g)
{
	struct tally_group *p = g->tally__links.parent, *prev, *next;
	/* Everything so far into p's pending (one flush of g, no drain);
	 * g leaves every updated tree. */
	tally__rstat_retire(t, g);
	/* From here on drains hand g's later deltas to its nearest live
	 * ancestor (tally__rstat_drain_all_settled()), and so does the
	 * deferred free (tally__rstat_late_hand_over()); updates on g go on
	 * (tally__rstat_mod_dying()). */
	tally__store(&g->tally__fast_items, 0u);
	tally__store(&g->tally__dead, 1);
	/* RCU unlink, O(1): walkers already at g go on from its next. */
	prev = g->tally__links.prev_sibling;
	next = g->tally__links.next_sibling;
	if (prev)
		tally__store_rel(&prev->tally__links.next_sibling, next);
	else
		tally__store_rel(&p->tally__links.first_child, next);
	if (next)
		next->tally__links.prev_sibling = prev;
	p->tally__links.nr_children--;
	t->tally__flush.nr_groups--;
	tally__add(&t->tally__rcu.deferred, 1ul);
}

/* Free a destroyed g once a grace period has passed and no reference is
 * held (outside the flush lock: the kill may finish g, see above). */
static inline void tally__rstat_defer_free(struct tally_tree *t, struct tally_group *g)
{
	__atomic_store_n(&g->tally__free_wait, 2u, __ATOMIC_RELAXED);
	/* No tally_group_tryget() succeeds from here on; drops the tree's
	 * reference, and drops a count of free_wait now if no other is held. */
	(void)tally_ref_kill(&g->tally__ref);
	/* Pairs with tally__tsan_acquire(g) in tally__group_free_rcu(). */
	tally__tsan_release(g);
	t->tally__rcu.flavor->update_call_rcu(&g->tally__rcu, tally__group_free_rcu);
}

/* tally_group_destroy(). */
static inline int tally__rstat_group_destroy(struct tally_group *g)
{
	struct tally_tree *t;
	if (tally__bad(!g))
		return -EINVAL;
	t = g->tally__tree;
	if (tally__bad(!g->tally__links.parent))
		return -EINVAL;
	tally__rcu_need_registered(t, "tally_group_destroy");
	pthread_mutex_lock(&t->tally__flush.lock);
	if (tally__load(&g->tally__dead)) {
		pthread_mutex_unlock(&t->tally__flush.lock);
		return tally__rcu_dead(g, "tally_group_destroy");
	}
	if (g->tally__links.nr_children) {
		pthread_mutex_unlock(&t->tally__flush.lock);
		return -EBUSY;
	}
	tally__rstat_destroy_locked(t, g);
	pthread_mutex_unlock(&t->tally__flush.lock);
	tally__rstat_defer_free(t, g);
	return 0;
}

/*
 * g's live subtree, children before parents, into *out (malloc'd;
 * the caller frees it); the count, or 0 with *out NULL when out of
 * memory. Flush lock. Reversed pre-order: every group comes after all
 * of its descendants.
 */
static inline size_t tally__rstat_subtree(struct tally_group *g, struct tally_group ***out)
{
	struct tally_group **v, *stack, *x, *c;
	size_t n = 0, i;
	/* Count (walk_next as the stack). */
	g->tally__walk_next = NULL;
	for (stack = g; stack;) {
		x = stack;
		stack = x->tally__walk_next;
		n++;
		for (c = x->tally__links.first_child; c; c = c->tally__links.next_sibling) {
			c->tally__walk_next = stack;
			stack = c;
		}
	}
	*out = v = (struct tally_group **)malloc(n * sizeof(struct tally_group *));
	if (!v)
		return 0;
	i = n;
	g->tally__walk_next = NULL;
	for (stack = g; stack;) {
		x = stack;
		stack = x->tally__walk_next;
		v[--i] = x;
		for (c = x->tally__links.first_child; c; c = c->tally__links.next_sibling) {
			c->tally__walk_next = stack;
			stack = c;
		}
	}
	return n;
}

/* tally_group_destroy_subtree(). */
static inline int tally__rstat_group_destroy_subtree(struct tally_group *g)
{
	struct tally_tree *t;
	struct tally_group **v;
	size_t i, n;
	if (tally__bad(!g))
		return -EINVAL;
	t = g->tally__tree;
	if (tally__bad(!g->tally__links.parent))
		return -EINVAL;
	tally__rcu_need_registered(t, "tally_group_destroy_subtree");
	pthread_mutex_lock(&t->tally__flush.lock);
	if (tally__load(&g->tally__dead)) {
		pthread_mutex_unlock(&t->tally__flush.lock);
		return tally__rcu_dead(g, "tally_group_destroy_subtree");
	}
	n = tally__rstat_subtree(g, &v);
	if (!n) {
		pthread_mutex_unlock(&t->tally__flush.lock);
		return -ENOMEM;
	}
	/* Children first: each hands its counts to its parent, which is
	 * destroyed next and hands them on; g's go to its live parent. */
	for (i = 0; i < n; i++)
		tally__rstat_destroy_locked(t, v[i]);
	pthread_mutex_unlock(&t->tally__flush.lock);
	/* Dead now, and freed only by the callbacks queued here. */
	for (i = 0; i < n; i++)
		tally__rstat_defer_free(t, v[i]);
	free(v);
	return 0;
}

/* tally_tree_destroy(); NULL: nothing. */
static inline void tally__rstat_tree_destroy(struct tally_tree *t)
{
	struct tally_group *stack;
	if (!t)
		return;
	tally__rstat_flusher_stop(t);
	tally__rstat_flusher_wait_deferred(t);
	/* Every live group, depth-first: push x's children, then free x. */
	stack = t->tally__root;
	stack->tally__walk_next = NULL;
	while (stack) {
		struct tally_group *x = stack, *c;
		stack = x->tally__walk_next;
		for (c = x->tally__links.first_child; c; c = c->tally__links.next_sibling) {
			c->tally__walk_next = stack;
			stack = c;
		}
		tally__group_free(x);
	}
	tally__rstat_flusher_fini(t);
	pthread_mutex_destroy(&t->tally__flush.lock);
	free(t->tally__flush.lists);
	tally__rstat_ids_free(&t->tally__ids);
	tally__rstat_names_free(t);
	free(t->tally__item_flags);
	tally__rstat_hists_free(t);
	free(t);
}

/* ---- the bodies of rstat.h's calls ---------------------------------------- */

/* tally_tree_create_opts(): the checks of o, then the tree. */
static inline struct tally_tree *tally__rstat_tree_create_opts(const struct tally_tree_opts *o)
{
	unsigned i;
	if (tally__bad(!o || !o->nr_items || o->nr_items > TALLY_RSTAT_ITEMS_MAX ||
		       o->batch > TALLY_RSTAT_BATCH_MAX || o->period_ns > TALLY_RSTAT_PERIOD_MAX)) {
		errno = EINVAL;
		return NULL;
	}
	for (i = 0; o->item_flags && i < o->nr_items; i++)
		if (tally__bad(o->item_flags[i] & ~TALLY_GROUP_ITEM_GAUGE)) {
			errno = EINVAL;
			return NULL;
		}
	{
		size_t words;
		if (tally__bad(tally__rstat_hists_check(o, &words))) {
			errno = EINVAL;
			return NULL;
		}
	}
	return tally__rstat_tree_create(o);
}

/* tally_tree_group_bytes(): what tally__group_alloc() and the arena take
 * for one group at most: the struct and 3 words per item (state, local,
 * pending) on the heap, rounded up to TALLY_CACHELINE; per CPU slot, for
 * every possible CPU plus the shared slot, a chunk of the per-CPU arena
 * (the slot header, struct tally__rstat_cpu, then 2 words per item: the
 * word and its prev snapshot), rounded up to 16 bytes; and its share of
 * the dirty bitmaps (a record per slot for TALLY__RSTAT_BLOCK_IDS (4096)
 * groups), rounded up to a byte. The arena's part is demand-zero: a slot
 * no CPU updated the group on costs nothing resident. A group that has
 * been reset also holds its baselines, 2 words per item (not counted). */
static inline size_t tally__rstat_group_bytes(const struct tally_tree *t)
{
	size_t chunk, fixed;
	if (!t)
		return 0;
	chunk = t->tally__prev_off + t->tally__nr_items * sizeof(tally_uword);
	chunk = (chunk + 15u) / 16u * 16u;
	fixed = sizeof(struct tally_group) + 3u * t->tally__nr_items * sizeof(tally_uword);
	fixed = (fixed + TALLY_CACHELINE - 1) / TALLY_CACHELINE * TALLY_CACHELINE;
	return fixed + chunk * t->tally__ids.nr_slots +
	       (sizeof(struct tally__rstat_dirty) * t->tally__ids.nr_slots +
		TALLY__RSTAT_BLOCK_IDS - 1) /
		       TALLY__RSTAT_BLOCK_IDS;
}

/* tally_tree_nr_groups(). */
static inline unsigned long tally__rstat_nr_groups(struct tally_tree *t)
{
	unsigned long n;
	if (!t)
		return 0;
	pthread_mutex_lock(&t->tally__flush.lock);
	n = t->tally__flush.nr_groups;
	pthread_mutex_unlock(&t->tally__flush.lock);
	return n;
}

/* tally_tree_create(): every default. */
static inline struct tally_tree *tally__rstat_tree_create_nr(unsigned nr_items)
{
	struct tally_tree_opts o;
	memset(&o, 0, sizeof(o));
	o.nr_items = nr_items;
	return tally__rstat_tree_create_opts(&o);
}

/* tally_group_create(). */
static inline struct tally_group *tally__rstat_create(struct tally_group *parent)
{
	if (tally__bad(!parent)) {
		errno = EINVAL;
		return NULL;
	}
	return tally__rstat_group_create(parent, NULL);
}

/* tally_group_create_named(): the name checked and copied, then the
 * create, which checks it is free under the flush lock (EEXIST: a live
 * child of that name, named either way; O(children of parent)). */
static inline struct tally_group *tally__rstat_create_named(struct tally_group *parent,
							     const char *name)
{
	char *copy;
	size_t len;
	if (tally__bad(!parent || !name) || !tally__rstat_name_ok(name, &len)) {
		errno = EINVAL;
		return NULL;
	}
	copy = (char *)malloc(len + 1);
	if (!copy) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(copy, name, len + 1);
	return tally__rstat_group_create(parent, copy);
}

#endif /* TALLY_RSTAT_LIFETIME_H */
