/**
 * @file
 * tally/rstat/lookup.h - finding and holding groups for tally/rstat.h
 * (private; include <tally/rstat.h>): the root, parent and tree of a
 * group (tally_tree_root(), tally_group_parent(), tally_group_tree()),
 * the walks of a group's children
 * inside a read-side section (tally_group_for_each_child(),
 * tally_group_find_child()), and the references that keep a group's
 * memory valid without one (tally_group_tryget(), _get(), _put(),
 * tally_group_find_get(); tally/ref.h's percpu_ref, released by
 * rstat/lifetime.h's deferred free). The children lists are an RCU list:
 * tally_group_create() publishes a child with a release store, the walks
 * load with acquire.
 */
#ifndef TALLY_RSTAT_LOOKUP_H
#define TALLY_RSTAT_LOOKUP_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/lookup.h is private: include <tally/rstat.h>"
#endif

/* tally_tree_root(). */
TALLY__INLINE struct tally_group *tally__rstat_root(struct tally_tree *t)
{
	if (tally__bad(!t)) {
		errno = EINVAL;
		return NULL;
	}
	return t->tally__root;
}

/* tally_group_parent(). */
TALLY__INLINE struct tally_group *tally__rstat_parent(const struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return NULL;
	}
	return g->tally__links.parent;
}

/* tally_group_tree(). */
TALLY__INLINE struct tally_tree *tally__rstat_tree(const struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return NULL;
	}
	return g->tally__tree;
}

/* tally_group_for_each_child(). */
static inline int tally__rstat_for_each_child(struct tally_group *g,
					      int (*fn)(struct tally_group *child, void *arg),
					      void *arg)
{
	struct tally_group *c;
	int r = 0;
	if (tally__bad(!g || !fn))
		return -EINVAL;
	tally__rcu_need_registered(g->tally__tree, "tally_group_for_each_child");
	tally__rstat_read_lock(g->tally__tree);
	/* Acquire: pairs with the release publish in tally_group_create(). */
	for (c = tally__load_acq(&g->tally__links.first_child); c;
	     c = tally__load_acq(&c->tally__links.next_sibling)) {
		if (tally__load(&c->tally__dead))
			continue;
		r = fn(c, arg);
		if (r)
			break;
	}
	tally__rstat_read_unlock(g->tally__tree);
	return r;
}

/* tally_group_find_child(): the last-created live child of that name. */
static inline struct tally_group *tally__rstat_find_child(struct tally_group *parent,
							   const char *name)
{
	struct tally_group *c, *found = NULL;
	if (tally__bad(!parent || !name)) {
		errno = EINVAL;
		return NULL;
	}
	tally__rcu_need_registered(parent->tally__tree, "tally_group_find_child");
	tally__rstat_read_lock(parent->tally__tree);
	/* Acquire: pairs with the release publish in tally_group_create(). */
	for (c = tally__load_acq(&parent->tally__links.first_child); c;
	     c = tally__load_acq(&c->tally__links.next_sibling)) {
		const char *n = tally_group_name(c);
		if (!tally__load(&c->tally__dead) && n && !strcmp(n, name)) {
			found = c;
			break;
		}
	}
	tally__rstat_read_unlock(parent->tally__tree);
	if (!found)
		errno = ENOENT;
	return found;
}

/*
 * tally_group_tryget(). A reference is the kernel's percpu_ref
 * (tally/ref.h): while g is alive a get and a put are each one
 * restartable per-CPU add (the counter add's cost plus a load and
 * compare: bench/bench_rstat.c, group_get_put); the destroy switches g's
 * count to atomic mode (ThreadSanitizer builds: atomic from the start, as
 * TSan cannot see the order membarrier() gives). A worker looks a tenant
 * up (tally_group_find_get()), updates it any number of times, sleeps,
 * and puts it, and needs no RCU registration for any of that but the
 * lookup; an update made while holding a reference on a group destroyed
 * meanwhile counts for its nearest live ancestor, exactly once; the group
 * is freed after its last put and a grace period after its destroy,
 * whichever comes last (rstat/lifetime.h).
 */
static inline bool tally__rstat_tryget(struct tally_group *g)
{
	if (tally__bad(!g)) {
		errno = EINVAL;
		return false;
	}
	if (tally__load(&g->tally__dead) || !tally_ref_tryget_live(&g->tally__ref)) {
		errno = ENOENT;
		return false;
	}
	tally__rcu_note_ref(g, 1);
	return true;
}

/* tally_group_get(). */
static inline void tally__rstat_ref_get(struct tally_group *g)
{
	if (tally__bad(!g))
		return;
	tally_ref_get(&g->tally__ref);
	tally__rcu_note_ref(g, 1);
}

/* tally_group_put(). */
static inline void tally__rstat_ref_put(struct tally_group *g)
{
	if (tally__bad(!g))
		return;
	tally__rcu_note_ref(g, -1);
	/* For ThreadSanitizer, which sees no order through membarrier() (the
	 * kill's, after a per-CPU put): pairs with the acquire before the
	 * free (rstat/lifetime.h). */
	tally__tsan_release(&g->tally__ref);
	tally_ref_put(&g->tally__ref);
}

/* tally_group_find_get(): the lookup and the tryget in one section. */
static inline struct tally_group *tally__rstat_find_get(struct tally_group *parent,
							 const char *name)
{
	struct tally_group *c;
	int err = 0;
	if (tally__bad(!parent || !name)) {
		errno = EINVAL;
		return NULL;
	}
	tally__rstat_read_lock(parent->tally__tree);
	c = tally__rstat_find_child(parent, name);
	if (!c || !tally__rstat_tryget(c)) {
		err = c ? ENOENT : errno;
		c = NULL;
	}
	tally__rstat_read_unlock(parent->tally__tree);
	if (!c)
		errno = err;
	return c;
}

#endif /* TALLY_RSTAT_LOOKUP_H */
