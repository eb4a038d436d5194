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
 *     group and update it (tally_group_mod() must return 0, destroyed
 *     group or not: its delta then goes to the nearest live ancestor),
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
 *   - a checker, on the destroyer's CPU: loads the users' published
 *     totals of item 0 (positive deltas; published after each update
 *     that returned 0), forces a flush of a permanent group or the root
 *     and asserts it shows at least that much (an update of a group
 *     destroyed meanwhile is reflected by a flush of its live ancestor
 *     that starts after the update returned) and no more than what
 *     returned by the time it read, plus one update in progress per user
 *     (nothing counted twice).
 * Two phases of TALLY_STRESS_SECONDS / 2 (default 2 s in all), each on a
 * new tree: the first without the checker (nothing flushes the ancestors
 * until the end, so what a destroy left behind stays there), the second
 * with it. At the end of each: every leaf destroyed, a grace period, a forced root flush;
 * then each permanent group must read exactly the sum of every update that
 * returned 0 in its subtree (hierarchical) and of its own (local), and the
 * root the sum of all. Under ASan a use of freed memory ends the run
 * there; under TSan it shows as a race with the free.
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

enum { GROW = 0 }; /* item 0: positive deltas only (the checker's); item 1: any */
#define GROW_MAX 40

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
	/* below + own of item GROW, published (release) after each update
	 * of it returned 0, for the checker */
	tally_uword pub[NPERM];
	unsigned long long ok, rejected, walks, flushes, children;
};

static struct user us[NUSERS];
static unsigned long long nr_destroys, nr_checks, nr_violations;

/* Publish u's total of item GROW under perm[p] (u's thread only). */
static void publish(struct user *u, int p)
{
	__atomic_store_n(&u->pub[p], u->below[p][GROW] + u->own[p][GROW], __ATOMIC_RELEASE);
}

static int perm_of_slot(int k)
{
	return k % NPERM;
}

static tally_sword delta_for(struct harness_rng *r, unsigned item)
{
	if (item == GROW)
		return (tally_sword)harness_range(r, 1, GROW_MAX);
	if (harness_range(r, 0, 31) == 0)
		return (tally_sword)harness_range(r, -1000000, 1000000);
	return (tally_sword)harness_range(r, -20, 40);
}

/* Update g (a child of perm[p] that may be destroyed meanwhile) and count
 * the delta: the update counts whether or not g is destroyed by now. */
static void update_child(struct user *u, struct tally_group *g, int p, struct harness_rng *r)
{
	unsigned item = (unsigned)harness_range(r, 0, NITEMS - 1);
	tally_sword d = delta_for(r, item);
	int err = tally_group_mod(g, item, d);
	CHECK(err == 0, "mod of a live or destroyed group returned %d", err);
	u->below[p][item] += U(d);
	if (item == GROW)
		publish(u, p);
	u->ok++;
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
				tally_sword d = delta_for(&rng, item);
				int r = tally_group_mod(perm[p], item, d);
				CHECK(r == 0, "mod of a permanent group returned %d", r);
				u->own[p][item] += U(d);
				if (item == GROW)
					publish(u, p);
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

/*
 * The ordering promise across a destroy: an update that returned 0, on a
 * group destroyed meanwhile or not, is reflected by a flush of its
 * permanent ancestor (or of the root) that starts after it returned.
 * Positive deltas (item GROW): the flush may show more, never less.
 */
static void *checker_main(void *arg)
{
	struct harness_rng rng = {0xc4ecu};
	unsigned long long n = 0;
	(void)arg;
	if (destroyer_cpu >= 0)
		harness_pin(destroyer_cpu);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int p = (int)harness_range(&rng, -1, NPERM - 1), q, k;
		struct tally_group *g = p < 0 ? root : perm[p];
		tally_uword want = 0, most = 0, got;
		for (k = 0; k < NUSERS; k++)
			for (q = 0; q < NPERM; q++)
				if (p < 0 || q == p)
					want += __atomic_load_n(&us[k].pub[q], __ATOMIC_ACQUIRE);
		tally_group_flush_force(g);
		got = U(tally_group_read(g, GROW));
		/* At most what returned by now, and one update in progress
		 * per user (added, not yet published): nothing twice. */
		for (k = 0; k < NUSERS; k++)
			for (q = 0; q < NPERM; q++)
				if (p < 0 || q == p)
					most += __atomic_load_n(&us[k].pub[q], __ATOMIC_ACQUIRE);
		most += U(GROW_MAX * NUSERS);
		n++;
		/* Leave the CPU to the destroyer, and the updated lists to
		 * pile up: a destroyed group left queued must meet the next
		 * drain after its free (use after free) or never (lost). */
		usleep((useconds_t)harness_range(&rng, 0, 200));
		/* Modular: got in [want, most] on the circle. */
		if ((tally_uword)(got - want) <= (tally_uword)(most - want))
			continue;
		if (!__atomic_fetch_add(&nr_violations, 1, __ATOMIC_RELAXED))
			fprintf(stderr,
				"stress_rstat_destroy: ORDERING VIOLATION: a forced flush of %s started "
				"after updates totalling %llu had returned 0, and reads %llu (at most "
				"%llu could show)\n",
				p < 0 ? "the root" : p ? "P1" : "P0", (unsigned long long)want,
				(unsigned long long)got, (unsigned long long)most);
	}
	__atomic_store_n(&nr_checks, n, __ATOMIC_RELAXED);
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

/*
 * One phase on a new tree. Without the checker, nothing flushes the
 * permanent groups or the root until the end, so a destroyed group left
 * queued or linked stays there past its free (use after free at the next
 * walk) or its late updates are never handed up (lost); with it, flushes
 * of the ancestors run all along and check the ordering promise.
 */
static void run_phase(double secs, int with_checker)
{
	pthread_t d, chk;
	struct tally_tree_opts o;
	struct perturb_opts po;
	int k, p;
	unsigned i;
	unsigned long long ok = 0, rejected = 0, walks = 0, flushes = 0, children = 0;

	memset(us, 0, sizeof(us));
	stop = 0;
	nr_destroys = nr_checks = nr_violations = 0;
	memset(&o, 0, sizeof(o));
	o.nr_items = NITEMS;
	o.batch = 8; /* thresholded flushes happen */
	o.period_ns = 100000; /* ratelimited ones too */
	tree = tally_tree_create_opts(&o);
	CHECK(tree != NULL, "tree");
	if (!tree)
		return;
	root = tally_tree_root(tree);
	for (p = 0; p < NPERM; p++) {
		perm[p] = tally_group_create(root);
		CHECK(perm[p] != NULL, "perm %d", p);
		if (!perm[p])
			return;
	}
	for (k = 0; k < NSLOTS; k++) {
		slot[k] = tally_group_create(perm[perm_of_slot(k)]);
		CHECK(slot[k] != NULL, "slot %d", k);
		if (!slot[k])
			return;
	}

	for (k = 0; k < NUSERS; k++) {
		us[k].id = k;
		pthread_create(&us[k].tid, NULL, user_main, &us[k]);
	}
	pthread_create(&d, NULL, destroyer_main, NULL);
	if (with_checker)
		pthread_create(&chk, NULL, checker_main, NULL);
	perturb_defaults(&po, user_cpu);
	po.stopper_cpu = destroyer_cpu;
	perturb_start(&po);

	usleep((useconds_t)(secs * 1e6));
	perturb_stop();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (k = 0; k < NUSERS; k++)
		pthread_join(us[k].tid, NULL);
	pthread_join(d, NULL);
	if (with_checker)
		pthread_join(chk, NULL);

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
	printf("stress_rstat_destroy: %s: %.1f s, users on CPU %d, destroyer on CPU %d, %llu "
	       "destroys, %llu updates of short-lived groups, %llu creates refused "
	       "(parent destroyed), %llu child visits, %llu flushes, %llu children created and destroyed "
	       "by users\n",
	       with_checker ? "with the checker" : "no ancestor flushes", secs, user_cpu,
	       destroyer_cpu, nr_destroys, ok, rejected, walks, flushes, children);
	if (with_checker)
		printf("stress_rstat_destroy: %llu checker flushes, %llu ordering violations\n",
		       nr_checks, nr_violations);
	CHECK(nr_destroys > 0, "no group was destroyed");
	CHECK(nr_violations == 0, "%llu flushes missed updates that returned 0 before they started",
	      nr_violations);
	tally_tree_destroy(tree);
}

int main(void)
{
	int cpus[2], ncpus;
	double secs = harness_seconds() / 2;

	if (secs < 0.5)
		secs = 0.5;
	ncpus = harness_allowed_cpus(cpus, 2);
	if (ncpus >= 2) {
		user_cpu = cpus[1];
		destroyer_cpu = cpus[0];
	}
	urcu_memb_register_thread(); /* the final destroys */
	perturb_init();
	run_phase(secs, 0);
	run_phase(secs, 1);
	perturb_report("stress_rstat_destroy");
	urcu_memb_unregister_thread();
	return harness_exit("stress_rstat_destroy");
}
