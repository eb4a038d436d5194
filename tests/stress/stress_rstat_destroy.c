/*
 * Destroy-under-use stress of tally_group (rstat.h): the read-side
 * section promise. A thread registered with the tree's RCU flavor may,
 * inside tally_tree_read_lock()/tally_tree_read_unlock(), use a group
 * that another thread destroys meanwhile: every call on it fails cleanly
 * or takes effect in full, never a dangling pointer, nothing lost; an
 * update that returned 0 counts in the destroyed group's parent.
 *
 * Tree: root - P0, P1 (permanent) - short-lived leaves, one per slot of
 * a small table (NSLOTS), published with release stores. Threads:
 *   - NUSERS users (registered with urcu-memb), pinned to one CPU where
 *     the machine has two: inside a read-side section, load a slot's
 *     group and update it (counted only if tally_group_mod() returned 0;
 *     -EINVAL is the only other answer allowed, for a destroyed group),
 *     read it, flush it (forced, thresholded, ratelimited), walk a
 *     permanent group's children (tally_group_for_each_child) and update
 *     and read each child met, or create a child under it (refused with
 *     EINVAL once it is destroyed), update the child and destroy it (its
 *     updates go up through the short-lived group); now and then update
 *     a permanent group;
 *   - a destroyer (registered), on the other CPU: creates a new leaf
 *     under a slot's permanent group, publishes it in the slot and
 *     destroys the old one (its updates go to the parent; -EBUSY, and a
 *     retry, while a user's child of it lives);
 *   - perturbation (perturb.h) of the users: a preempter on their CPU,
 *     a stopper that holds one in a signal handler for 20 us..1 ms (for
 *     instance between an update's check of the group and its add), and
 *     signal storms.
 * At the end: every leaf destroyed, a grace period, a forced root flush;
 * then each permanent group must read exactly the sum of every update that
 * returned 0 in its subtree (hierarchical) and of its own (local), and the
 * root the sum of all. Under ASan a use of freed memory ends the run
 * there; under TSan it shows as a race with the free.
 * TALLY_STRESS_SECONDS (default 2) sets the length.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "perturb.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <tally/rstat.h>

#define U(x) ((tally_uword)(x))
#define NPERM 2
#define NSLOTS 4
#define NUSERS 3
#define NITEMS 2

static struct tally_tree *tree;
static struct tally_group *root, *perm[NPERM];
static struct tally_group *slot[NSLOTS]; /* release-published, acquire-loaded */
static int stop;
static int user_cpu = -1, destroyer_cpu = -1;

struct user {
	pthread_t tid;
	int id;
	/* Deltas whose tally_group_mod() returned 0: to a permanent group's
	 * short-lived children, and to the permanent group itself. */
	tally_uword below[NPERM][NITEMS], own[NPERM][NITEMS];
	unsigned long long ok, rejected, walks, flushes, children;
};

static unsigned long long nr_destroys;

static int perm_of_slot(int k)
{
	return k % NPERM;
}

static tally_sword delta_for(struct harness_rng *r)
{
	if (harness_range(r, 0, 31) == 0)
		return (tally_sword)harness_range(r, -1000000, 1000000);
	return (tally_sword)harness_range(r, -20, 40);
}

/* Update g (a child of perm[p] that may be destroyed meanwhile) and count
 * the delta if the update took effect. */
static void update_child(struct user *u, struct tally_group *g, int p, struct harness_rng *r)
{
	unsigned item = (unsigned)harness_range(r, 0, NITEMS - 1);
	tally_sword d = delta_for(r);
	int err = tally_group_mod(g, item, d);
	if (err == 0) {
		u->below[p][item] += U(d);
		u->ok++;
	} else {
		CHECK(err == -EINVAL, "mod of a live or destroyed group returned %d", err);
		u->rejected++;
	}
}

struct walk_arg {
	struct user *u;
	struct harness_rng *r;
	int p;
	tally_uword sink;
};

static int walk_child(struct tally_group *c, void *arg)
{
	struct walk_arg *w = (struct walk_arg *)arg;
	CHECK(tally_group_parent(c) == perm[w->p], "a child of another group");
	update_child(w->u, c, w->p, w->r);
	w->sink += U(tally_group_read(c, 0)) + U(tally_group_read_local(c, 1));
	w->u->walks++;
	return 0;
}

static void *user_main(void *arg)
{
	struct user *u = (struct user *)arg;
	struct harness_rng rng = {0x51ceu + (uint64_t)u->id * 104729u};
	tally_uword sink = 0;
	if (user_cpu >= 0)
		harness_pin(user_cpu);
	urcu_memb_register_thread();
	perturb_register();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int k = (int)harness_range(&rng, 0, NSLOTS - 1), p = perm_of_slot(k), n;
		struct tally_group *g;
		tally_tree_read_lock(tree);
		g = __atomic_load_n(&slot[k], __ATOMIC_ACQUIRE);
		for (n = (int)harness_range(&rng, 1, 8); n > 0; n--) {
			switch (harness_range(&rng, 0, 15)) {
			case 0:
				tally_group_flush_force(g);
				u->flushes++;
				break;
			case 1:
				tally_group_flush(g);
				tally_group_flush_ratelimited(g);
				u->flushes++;
				break;
			case 2:
				sink += U(tally_group_read(g, 0)) + tally_group_read_positive(g, 1) +
					tally_group_read_monotonic(g, 0) + U(tally_group_read_local(g, 1)) +
					(tally_group_needs_flush(g) ? 1u : 0u);
				break;
			case 3: {
				struct walk_arg w = {u, &rng, p, 0};
				int r = tally_group_for_each_child(perm[p], walk_child, &w);
				CHECK(r == 0, "for_each_child returned %d", r);
				sink += w.sink;
				break;
			}
			case 5: { /* a child of g: refused if g is destroyed */
				struct tally_group *c = tally_group_create(g);
				int r;
				if (!c) {
					CHECK(errno == EINVAL, "create under a group: errno %d", errno);
					u->rejected++;
					break;
				}
				u->children++;
				update_child(u, c, p, &rng);
				update_child(u, c, p, &rng);
				/* c's updates go to g, then with g's to perm[p]. */
				r = tally_group_destroy(c);
				CHECK(r == 0, "destroy of a child returned %d", r);
				break;
			}
			case 4: { /* the permanent group itself */
				unsigned item = (unsigned)harness_range(&rng, 0, NITEMS - 1);
				tally_sword d = delta_for(&rng);
				int r = tally_group_mod(perm[p], item, d);
				CHECK(r == 0, "mod of a permanent group returned %d", r);
				u->own[p][item] += U(d);
				break;
			}
			default:
				update_child(u, g, p, &rng);
			}
		}
		tally_tree_read_unlock(tree);
	}
	/* Keep the reads from being optimised away without printing them. */
	__atomic_store_n(&u->walks, u->walks + (sink & 0), __ATOMIC_RELAXED);
	perturb_unregister(); /* after perturb_stop(): no signal comes now */
	urcu_memb_unregister_thread();
	return NULL;
}

static void *destroyer_main(void *arg)
{
	struct harness_rng rng = {0xde57u};
	unsigned long long n = 0;
	(void)arg;
	if (destroyer_cpu >= 0)
		harness_pin(destroyer_cpu);
	urcu_memb_register_thread(); /* tally_group_destroy uses call_rcu */
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int k = (int)harness_range(&rng, 0, NSLOTS - 1), r;
		struct tally_group *g = tally_group_create(perm[perm_of_slot(k)]), *old;
		CHECK(g != NULL, "create: errno %d", errno);
		if (!g)
			break;
		old = __atomic_exchange_n(&slot[k], g, __ATOMIC_ACQ_REL);
		/* -EBUSY while a user's child of old lives (users destroy
		 * theirs at once, but may be stopped in between). */
		while ((r = tally_group_destroy(old)) == -EBUSY)
			sched_yield();
		CHECK(r == 0, "destroy returned %d", r);
		n++;
		if (harness_range(&rng, 0, 3) == 0)
			sched_yield();
	}
	__atomic_store_n(&nr_destroys, n, __ATOMIC_RELAXED);
	urcu_memb_unregister_thread();
	return NULL;
}

int main(void)
{
	static struct user us[NUSERS];
	pthread_t d;
	struct tally_tree_opts o;
	struct perturb_opts po;
	int cpus[2], ncpus, k, p;
	unsigned i;
	unsigned long long ok = 0, rejected = 0, walks = 0, flushes = 0, children = 0;
	double secs = harness_seconds();

	memset(&o, 0, sizeof(o));
	o.nr_items = NITEMS;
	o.batch = 8; /* thresholded flushes happen */
	o.period_ns = 100000; /* ratelimited ones too */
	tree = tally_tree_create_opts(&o);
	CHECK(tree != NULL, "tree");
	if (!tree)
		return harness_exit("stress_rstat_destroy");
	urcu_memb_register_thread(); /* the final destroys */
	root = tally_tree_root(tree);
	for (p = 0; p < NPERM; p++) {
		perm[p] = tally_group_create(root);
		CHECK(perm[p] != NULL, "perm %d", p);
	}
	for (k = 0; k < NSLOTS; k++) {
		slot[k] = tally_group_create(perm[perm_of_slot(k)]);
		CHECK(slot[k] != NULL, "slot %d", k);
	}
	if (harness_failures)
		return harness_exit("stress_rstat_destroy");

	ncpus = harness_allowed_cpus(cpus, 2);
	if (ncpus >= 2) {
		user_cpu = cpus[1];
		destroyer_cpu = cpus[0];
	}
	perturb_init();
	for (k = 0; k < NUSERS; k++) {
		us[k].id = k;
		pthread_create(&us[k].tid, NULL, user_main, &us[k]);
	}
	pthread_create(&d, NULL, destroyer_main, NULL);
	perturb_defaults(&po, user_cpu);
	po.stopper_cpu = destroyer_cpu;
	perturb_start(&po);

	usleep((useconds_t)(secs * 1e6));
	perturb_stop();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (k = 0; k < NUSERS; k++)
		pthread_join(us[k].tid, NULL);
	pthread_join(d, NULL);

	/* The last destroys, a grace period, a forced root flush. */
	for (k = 0; k < NSLOTS; k++)
		CHECK(tally_group_destroy(slot[k]) == 0, "final destroy of slot %d", k);
	urcu_memb_synchronize_rcu();
	tally_group_flush_force(root);
	CHECK_EQ(tally_tree_nr_groups(tree), 1 + NPERM);

	for (i = 0; i < NITEMS; i++) {
		tally_uword all = 0;
		for (p = 0; p < NPERM; p++) {
			tally_uword hier = 0, local = 0;
			for (k = 0; k < NUSERS; k++) {
				hier += us[k].below[p][i] + us[k].own[p][i];
				local += us[k].own[p][i];
			}
			CHECK_EQ(U(tally_group_read(perm[p], i)), hier);
			CHECK_EQ(U(tally_group_read_local(perm[p], i)), local);
			all += hier;
		}
		CHECK_EQ(U(tally_group_read(root, i)), all);
		CHECK_EQ(U(tally_group_read_local(root, i)), 0);
	}
	for (k = 0; k < NUSERS; k++) {
		ok += us[k].ok;
		rejected += us[k].rejected;
		walks += us[k].walks;
		flushes += us[k].flushes;
		children += us[k].children;
	}
	perturb_report("stress_rstat_destroy");
	printf("stress_rstat_destroy: %.1f s, users on CPU %d, destroyer on CPU %d, %llu destroys, "
	       "%llu updates of short-lived groups taken, %llu calls rejected (destroyed), %llu "
	       "child visits, %llu flushes, %llu children created and destroyed by users\n",
	       secs, user_cpu, destroyer_cpu, nr_destroys, ok, rejected, walks, flushes, children);
	CHECK(nr_destroys > 0, "no group was destroyed");
	urcu_memb_unregister_thread();
	tally_tree_destroy(tree);
	return harness_exit("stress_rstat_destroy");
}
