/*
 * Unit tests for tally/rstat.h: updates on a group whose destroy is under
 * way or already visible (issue 29, item 1). Inside a read-side section a
 * destroyed group's memory stays valid, and tally_group_mod() on it
 * counts: its delta reaches the nearest live ancestor exactly once (the
 * kernel keeps charging a dying cgroup and flushes it into its parent
 * when it is freed), so a gauge raised before a destroy and lowered after
 * it comes back to 0.
 */
#define _GNU_SOURCE
#include "test_rstat_model.h"

#include <tally/rstat.h> /* also tells the build to link liburcu */

TestSuite(rstat_dying, .init = rstat_setup, .fini = rstat_teardown);

enum { INFLIGHT = 0, BYTES = 1 };

static struct tally_tree *tenant_tree(void)
{
	static const unsigned char flags[2] = {TALLY_GROUP_ITEM_GAUGE, 0};
	struct tally_tree_opts o;
	memset(&o, 0, sizeof(o));
	o.nr_items = 2;
	o.item_flags = flags;
	return tally_tree_create_opts(&o);
}

/*
 * The probe: 1,000 times, create a tenant under p, +1 in flight,
 * +100 bytes, destroy it, then -1 in flight and +50 bytes inside the same
 * read-side section (where rstat.h says the memory is valid). p must read
 * 0 in flight and 150,000 bytes. Before the fix: 1,000 and 100,000 (each
 * mod after the destroy returned -EINVAL and counted nothing).
 */
Test(rstat_dying, probe_updates_after_destroy_reach_the_parent)
{
	struct tally_tree *t = tenant_tree();
	struct tally_group *root = tally_tree_root(t), *p = tally_group_create(root);
	int k, refused = 0;
	for (k = 0; k < 1000; k++) {
		struct tally_group *c;
		tally_tree_read_lock(t);
		c = tally_group_create(p);
		cr_assert_not_null(c);
		cr_assert_eq(tally_group_mod(c, INFLIGHT, 1), 0);
		cr_assert_eq(tally_group_mod(c, BYTES, 100), 0);
		cr_assert_eq(tally_group_destroy(c), 0);
		refused += tally_group_mod(c, INFLIGHT, -1) != 0;
		refused += tally_group_mod(c, BYTES, 50) != 0;
		tally_tree_read_unlock(t);
	}
	/* Every update has returned: a flush of p that starts now shows
	 * them, before any deferred free has run ... */
	tally_group_flush_force(p);
	fprintf(stderr, "rstat_dying probe: before the deferred frees: in flight %lld, bytes %lld, "
			"%d mods refused\n",
		(long long)tally_group_read(p, INFLIGHT), (long long)tally_group_read(p, BYTES),
		refused);
	cr_assert_eq(refused, 0, "%d mods on a destroyed group refused", refused);
	cr_assert_eq(tally_group_read(p, INFLIGHT), 0, "in flight %lld (should be 0)",
		     (long long)tally_group_read(p, INFLIGHT));
	cr_assert_eq(tally_group_read(p, BYTES), 150000, "bytes %lld (should be 150,000)",
		     (long long)tally_group_read(p, BYTES));
	/* ... and the deferred frees count nothing twice. */
	urcu_memb_barrier();
	tally_group_flush_force(root);
	fprintf(stderr, "rstat_dying probe: after the deferred frees: in flight %lld, bytes %lld\n",
		(long long)tally_group_read(root, INFLIGHT), (long long)tally_group_read(root, BYTES));
	cr_assert_eq(tally_group_read(root, INFLIGHT), 0);
	cr_assert_eq(tally_group_read(root, BYTES), 150000);
	cr_assert_eq(tally_group_read(p, BYTES), 150000);
	cr_assert_eq(tally_group_read_local(p, BYTES), 0);
	cr_assert_eq(tally_tree_nr_groups(t), 2);
	tally_tree_destroy(t);
}

/*
 * A chain of dying groups: root - a - b - c. Inside one section, c is
 * updated, destroyed, updated, then b and a are destroyed between further
 * updates of c: each update reaches the group that is the nearest live
 * ancestor when it is handed over (walking up through destroyed b and
 * a), so a root flush shows all of them, before any deferred free, and
 * the frees count nothing twice. A destroyed group keeps the values of its
 * destroy.
 */
Test(rstat_dying, chain_of_dying_groups_hands_up_to_the_nearest_live_ancestor)
{
	struct tally_tree *t = tenant_tree();
	struct tally_group *root = tally_tree_root(t);
	struct tally_group *a = tally_group_create(root), *b = tally_group_create(a);
	struct tally_group *c = tally_group_create(b);
	tally_tree_read_lock(t);
	cr_assert_eq(tally_group_mod(c, BYTES, 1), 0);
	cr_assert_eq(tally_group_destroy(c), 0);
	cr_assert_eq(tally_group_mod(c, BYTES, 2), 0);
	tally_group_flush_force(b); /* drains c's bit: c dead, so b gets it */
	cr_assert_eq(tally_group_read(b, BYTES), 3);
	cr_assert_eq(tally_group_read_local(b, BYTES), 0);
	cr_assert_eq(tally_group_destroy(b), 0);
	cr_assert_eq(tally_group_mod(c, BYTES, 4), 0); /* through dead b, to a */
	cr_assert_eq(tally_group_mod(c, INFLIGHT, 1), 0);
	tally_group_flush_force(a);
	cr_assert_eq(tally_group_read(a, BYTES), 7);
	cr_assert_eq(tally_group_read(a, INFLIGHT), 1);
	cr_assert_eq(tally_group_destroy(a), 0);
	cr_assert_eq(tally_group_mod(c, BYTES, 8), 0); /* through b and a, to the root */
	cr_assert_eq(tally_group_mod(c, INFLIGHT, -1), 0);
	/* The destroyed keep their values as of their destroys. */
	cr_assert_eq(tally_group_read(c, BYTES), 1);
	cr_assert_eq(tally_group_read(b, BYTES), 3);
	cr_assert_eq(tally_group_read(a, BYTES), 7);
	cr_assert_eq(tally_group_read(a, INFLIGHT), 1);
	tally_tree_read_unlock(t);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, BYTES), 15);
	cr_assert_eq(tally_group_read(root, INFLIGHT), 0);
	urcu_memb_barrier();
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, BYTES), 15);
	cr_assert_eq(tally_group_read(root, INFLIGHT), 0);
	cr_assert_eq(tally_group_read_local(root, BYTES), 0);
	cr_assert_eq(tally_tree_nr_groups(t), 1);
	tally_tree_destroy(t);
}

/* The same through tally_group_destroy_subtree(): every group of the
 * subtree dies at once; updates on any of them reach the subtree's parent. */
Test(rstat_dying, updates_after_destroy_subtree_reach_its_parent)
{
	struct tally_tree *t = tenant_tree();
	struct tally_group *root = tally_tree_root(t), *p = tally_group_create(root);
	struct tally_group *a = tally_group_create(p), *b = tally_group_create(a);
	struct tally_group *c = tally_group_create(b), *d = tally_group_create(a);
	tally_tree_read_lock(t);
	cr_assert_eq(tally_group_mod(c, INFLIGHT, 1), 0);
	cr_assert_eq(tally_group_mod(d, INFLIGHT, 1), 0);
	cr_assert_eq(tally_group_mod(a, INFLIGHT, 1), 0);
	cr_assert_eq(tally_group_destroy_subtree(a), 0);
	cr_assert_eq(tally_group_mod(c, INFLIGHT, -1), 0);
	cr_assert_eq(tally_group_mod(d, INFLIGHT, -1), 0);
	cr_assert_eq(tally_group_mod(a, INFLIGHT, -1), 0);
	cr_assert_eq(tally_group_mod(b, BYTES, 64), 0);
	tally_group_flush_force(p);
	cr_assert_eq(tally_group_read(p, INFLIGHT), 0);
	cr_assert_eq(tally_group_read(p, BYTES), 64);
	cr_assert_eq(tally_group_read(a, INFLIGHT), 3); /* as of its destroy */
	tally_tree_read_unlock(t);
	urcu_memb_barrier();
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, INFLIGHT), 0);
	cr_assert_eq(tally_group_read(root, BYTES), 64);
	cr_assert_eq(tally_tree_nr_groups(t), 2);
	tally_tree_destroy(t);
}

/*
 * Thresholds: an update on a destroyed group counts toward its nearest
 * live ancestor's threshold (the destroyed group has no flush of its
 * own): a big one makes the parent flushable, and the parent's
 * thresholded flush shows it.
 */
Test(rstat_dying, update_after_destroy_counts_toward_the_ancestor_threshold)
{
	static const unsigned char flags[2] = {TALLY_GROUP_ITEM_GAUGE, 0};
	struct tally_tree_opts o;
	struct tally_tree *t;
	struct tally_group *root, *p, *c;
	memset(&o, 0, sizeof(o));
	o.nr_items = 2;
	o.item_flags = flags;
	o.batch = 1;
	t = tally_tree_create_opts(&o);
	root = tally_tree_root(t);
	p = tally_group_create(root);
	c = tally_group_create(p);
	cr_assert_eq(tally_group_mod(c, BYTES, 1), 0);
	tally_group_flush_force(root);
	cr_assert(!tally_group_needs_flush(p));
	tally_tree_read_lock(t);
	cr_assert_eq(tally_group_destroy(c), 0);
	cr_assert_eq(tally_group_mod(c, BYTES, 1000000), 0);
	cr_assert(!tally_group_needs_flush(c));
	cr_assert(tally_group_needs_flush(p));
	cr_assert(tally_group_needs_flush(root));
	tally_group_flush(p);
	cr_assert_eq(tally_group_read(p, BYTES), 1000001);
	cr_assert(!tally_group_needs_flush(p));
	tally_tree_read_unlock(t);
	tally_tree_destroy(t);
}

/*
 * Resets: an update on a destroyed group is in the reset's cut or after
 * it, never both: baseline + since-reset value = raw value. The gauge is
 * left alone by the reset and comes back to 0.
 */
Test(rstat_dying, reset_cut_with_updates_after_destroy)
{
	struct tally_tree *t = tenant_tree();
	struct tally_group *root = tally_tree_root(t), *p = tally_group_create(root);
	struct tally_group *c = tally_group_create(p);
	tally_tree_read_lock(t);
	cr_assert_eq(tally_group_mod(c, INFLIGHT, 1), 0);
	cr_assert_eq(tally_group_mod(c, BYTES, 10), 0);
	cr_assert_eq(tally_group_destroy(c), 0);
	cr_assert_eq(tally_group_mod(c, BYTES, 5), 0);
	cr_assert_eq(tally_group_reset(p), 0); /* its flush takes the 5 */
	cr_assert_eq(tally_group_read(p, BYTES), 0);
	cr_assert_eq(tally_group_read(p, INFLIGHT), 1);
	cr_assert_eq(tally_group_read_monotonic(p, BYTES) - TALLY_MONOTONIC_BIAS, 15);
	cr_assert_eq(tally_group_mod(c, BYTES, 7), 0);
	cr_assert_eq(tally_group_mod(c, INFLIGHT, -1), 0);
	tally_tree_read_unlock(t);
	tally_group_flush_force(p);
	cr_assert_eq(tally_group_read(p, BYTES), 7);
	cr_assert_eq(tally_group_read(p, INFLIGHT), 0);
	cr_assert_eq(tally_group_read_monotonic(p, BYTES) - TALLY_MONOTONIC_BIAS, 22);
	urcu_memb_barrier();
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(p, BYTES), 7);
	cr_assert_eq(tally_group_read(root, BYTES), 22);
	cr_assert_eq(tally_group_read(root, INFLIGHT), 0);
	tally_tree_destroy(t);
}

/*
 * Destroy takes no drain: a sibling's dirty bits are left to the next
 * flush (which still reflects them), and the destroyed group's own later
 * bits are found by that flush's drain and handed to the parent.
 */
Test(rstat_dying, destroy_leaves_other_groups_bits_to_the_next_flush)
{
	struct tally_tree *t = tenant_tree();
	struct tally_group *root = tally_tree_root(t), *p = tally_group_create(root);
	struct tally_group *s = tally_group_create(p), *c = tally_group_create(p);
	tally_tree_read_lock(t);
	cr_assert_eq(tally_group_mod(s, BYTES, 100), 0);
	cr_assert_eq(tally_group_mod(c, BYTES, 10), 0);
	cr_assert_eq(tally_group_destroy(c), 0);
	/* The destroy flushed c alone: p has not flushed yet. */
	cr_assert_eq(tally_group_read(c, BYTES), 10);
	cr_assert_eq(tally_group_read(p, BYTES), 0);
	cr_assert_eq(tally_group_read(s, BYTES), 0);
	cr_assert_eq(tally_group_mod(c, BYTES, 1), 0);
	tally_tree_read_unlock(t);
	tally_group_flush_force(p);
	cr_assert_eq(tally_group_read(s, BYTES), 100);
	cr_assert_eq(tally_group_read(p, BYTES), 111);
	cr_assert_eq(tally_group_read_local(p, BYTES), 0);
	tally_tree_destroy(t);
}

/* ---- references (tally_group_get()): no read-side section held ---------- */

/*
 * The probe with references instead of a section: 1,000 times,
 * create a tenant, take a reference, +1 in flight, +100 bytes, destroy it,
 * then -1 in flight and +50 bytes outside any section, and put. The
 * parent reads 0 in flight and 150,000 bytes; the reference kept every
 * destroyed tenant allocated until its put (ASan would see a free
 * before it: the grace periods have all passed, urcu_memb_barrier()).
 */
Test(rstat_dying, probe_with_references)
{
	struct tally_tree *t = tenant_tree();
	struct tally_group *root = tally_tree_root(t), *p = tally_group_create(root);
	static struct tally_group *c[1000];
	int k;
	for (k = 0; k < 1000; k++) {
		c[k] = tally_group_create(p);
		cr_assert_not_null(c[k]);
		cr_assert(tally_group_tryget(c[k]));
		cr_assert_eq(tally_group_mod(c[k], INFLIGHT, 1), 0);
		cr_assert_eq(tally_group_mod(c[k], BYTES, 100), 0);
		cr_assert_eq(tally_group_destroy(c[k]), 0);
	}
	urcu_memb_barrier(); /* every grace period over: only the references hold */
	for (k = 0; k < 1000; k++) {
		cr_assert_eq(tally_group_mod(c[k], INFLIGHT, -1), 0);
		cr_assert_eq(tally_group_mod(c[k], BYTES, 50), 0);
		cr_assert_eq(tally_group_read(c[k], BYTES), 100); /* as its destroy left it */
	}
	tally_group_flush_force(p);
	cr_assert_eq(tally_group_read(p, INFLIGHT), 0);
	cr_assert_eq(tally_group_read(p, BYTES), 150000);
	for (k = 0; k < 1000; k++)
		tally_group_put(c[k]); /* each frees its group: the last put */
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, INFLIGHT), 0);
	cr_assert_eq(tally_group_read(root, BYTES), 150000);
	cr_assert_eq(tally_group_read(p, BYTES), 150000);
	cr_assert_eq(tally_tree_nr_groups(t), 2);
	tally_tree_destroy(t);
}

/* Lookups fail once the destroy began; get and put pair on live groups. */
Test(rstat_dying, lookups_fail_after_destroy)
{
	struct tally_tree *t = tenant_tree();
	struct tally_group *root = tally_tree_root(t);
	struct tally_group *a = tally_group_create_named(root, "a"), *x;
	cr_assert_not_null(a);
	x = tally_group_find_get(root, "a");
	cr_assert_eq(x, a);
	tally_group_get(a); /* a second one, e.g. for another thread */
	tally_group_put(a);
	errno = 0;
	cr_assert_null(tally_group_find_get(root, "b"));
	cr_assert_eq(errno, ENOENT);
	cr_assert_null(tally_group_find_get(NULL, "a"));
	cr_assert_eq(errno, EINVAL);
	cr_assert_not(tally_group_tryget(NULL));
	cr_assert_eq(tally_group_destroy(a), 0);
	errno = 0;
	cr_assert_not(tally_group_tryget(a)); /* legal: this thread holds one */
	cr_assert_eq(errno, ENOENT);
	cr_assert_null(tally_group_find_get(root, "a"));
	cr_assert_eq(errno, ENOENT);
	/* a name freed by a destroy can be taken again */
	x = tally_group_create_named(root, "a");
	cr_assert_not_null(x);
	cr_assert_neq(x, a);
	cr_assert_eq(tally_group_find_get(root, "a"), x);
	tally_group_put(x);
	tally_group_put(a);
	tally_tree_destroy(t);
}

struct holder {
	struct tally_group *g;
	int stage; /* 1: holding; 2: put now; 3: put done */
};

static void *hold_main(void *arg)
{
	struct holder *h = (struct holder *)arg;
	/* not registered with liburcu: a worker that only holds references */
	cr_assert_eq(tally_group_mod(h->g, BYTES, 5), 0);
	__atomic_store_n(&h->stage, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&h->stage, __ATOMIC_ACQUIRE) != 2)
		usleep(100);
	cr_assert_eq(tally_group_mod(h->g, BYTES, 7), 0); /* after the destroy */
	cr_assert_eq(tally_group_mod(h->g, INFLIGHT, -1), 0);
	tally_group_put(h->g); /* the last reference: the free runs here */
	__atomic_store_n(&h->stage, 3, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A reference handed to an unregistered thread outlives the group's
 * destroy and its grace period; that thread's put, the last, hands over
 * what is left and frees the group on its own thread.
 */
Test(rstat_dying, last_put_on_an_unregistered_thread_frees)
{
	struct tally_tree *t = tenant_tree();
	struct tally_group *root = tally_tree_root(t), *p = tally_group_create(root);
	struct holder h = {NULL, 0};
	pthread_t th;
	h.g = tally_group_create(p);
	cr_assert(tally_group_tryget(h.g));
	cr_assert_eq(tally_group_mod(h.g, INFLIGHT, 1), 0);
	pthread_create(&th, NULL, hold_main, &h);
	while (__atomic_load_n(&h.stage, __ATOMIC_ACQUIRE) != 1)
		usleep(100);
	cr_assert_eq(tally_group_destroy(h.g), 0);
	urcu_memb_barrier(); /* the grace period is over; the reference holds */
	__atomic_store_n(&h.stage, 2, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(p, BYTES), 12);
	cr_assert_eq(tally_group_read(root, INFLIGHT), 0);
	cr_assert_eq(tally_tree_nr_groups(t), 2);
	tally_tree_destroy(t); /* would wait forever for a free never run */
}
