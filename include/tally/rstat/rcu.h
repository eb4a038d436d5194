/**
 * @file
 * tally/rstat/rcu.h - the RCU rules of tally/rstat.h checked in
 * TALLY_DEBUG builds (private; include <tally/rstat.h>).
 *
 * A thread that uses a group another thread may destroy must be
 * registered with the tree's RCU flavor and hold a read-side section; a
 * thread that destroys must be registered. Broken, either rule is a
 * use-after-free some time later, far from the mistake. In TALLY_DEBUG
 * builds tally keeps, per thread, how many flavors it registered through
 * tally_tree_register_thread() and how deep it is in
 * tally_tree_read_lock() sections, and the calls check them:
 *   - tally_tree_read_lock(), tally_group_destroy(),
 *     tally_group_destroy_subtree(), tally_group_for_each_child() and
 *     tally_group_find_child() need a registered thread;
 *   - a call on a destroyed group needs a read-side section or a
 *     reference to the group held by this thread (tally_group_get(),
 *     tally_group_tryget(), tally_group_find_get()): without either the
 *     group may be freed at any moment, and the call was a use-after-free
 *     that happened to come early (a use after the thread's last put).
 * The references a thread holds are kept in a small per-thread table (16
 * groups); a thread holding more than that is not checked for the ones
 * past it.
 * A broken rule aborts with a message that names the call and the rule.
 * With a flavor that registers threads by itself (urcu-bp, see
 * TALLY_URCU_BP in config.h) the registration checks are skipped.
 * The per-thread record is one weak thread-local symbol, so every
 * translation unit of a program shares it; they must agree on
 * TALLY_DEBUG, and threads must register and lock through tally's calls
 * (urcu_memb_register_thread() directly is not seen). Release builds keep
 * nothing and check nothing.
 */
#ifndef TALLY_RSTAT_RCU_H
#define TALLY_RSTAT_RCU_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/rcu.h is private: include <tally/rstat.h>"
#endif

/* Whether this translation unit's default flavor registers threads by
 * itself (liburcu's bulletproof flavor, urcu-bp). */
#if defined(_URCU_BP_H)
#  define TALLY__URCU_AUTO_REGISTER 1
#else
#  define TALLY__URCU_AUTO_REGISTER 0
#endif

/* ThreadSanitizer does not see liburcu's grace periods: a reader releases
 * the tree's token before its read unlock, a deferred free acquires it.
 * No-ops otherwise. */
#if TALLY__TSAN
#  define tally__tsan_release(p) __tsan_release((void *)(p))
#  define tally__tsan_acquire(p) __tsan_acquire((void *)(p))
#else
#  define tally__tsan_release(p) ((void)(p))
#  define tally__tsan_acquire(p) ((void)(p))
#endif

#if TALLY_DEBUG
#  include <stdio.h>

/* What this thread did through tally's RCU calls (TALLY_DEBUG). */
#  define TALLY__RCU_HELD 16
struct tally__rcu_thread {
	unsigned registered; /* flavors registered through tally */
	unsigned nest;       /* read-side sections entered through tally */
	unsigned overflow;   /* references not in held[] */
	const void *held[TALLY__RCU_HELD]; /* groups this thread holds */
	unsigned held_n[TALLY__RCU_HELD];  /* how many references on each */
};

/* One per program and thread: weak, so that every translation unit's
 * definition is the same object. */
__attribute__((weak)) __thread struct tally__rcu_thread tally__rcu_self;

TALLY__COLD void tally__rcu_abort(const char *call, const char *why)
{
	fprintf(stderr, "tally: %s: %s\n", call, why);
	fflush(stderr);
	abort();
}

/* The calling thread must be registered with t's flavor. */
static inline void tally__rcu_need_registered(const struct tally_tree *t, const char *call)
{
	if (!t->tally__rcu.auto_register && !tally__rcu_self.registered)
		tally__rcu_abort(call, "this thread is not registered with the tree's RCU "
				       "flavor: call tally_tree_register_thread() first");
}

/* Whether this thread holds a reference to g (or may: the table is full). */
static inline int tally__rcu_holds(const void *g)
{
	unsigned i;
	for (i = 0; i < TALLY__RCU_HELD; i++)
		if (tally__rcu_self.held[i] == g)
			return 1;
	return tally__rcu_self.overflow != 0;
}

/* This thread took (d 1) or dropped (d -1) a reference to g. */
static inline void tally__rcu_note_ref(const void *g, int d)
{
	unsigned i, fr = TALLY__RCU_HELD;
	for (i = 0; i < TALLY__RCU_HELD; i++) {
		if (tally__rcu_self.held[i] == g) {
			if ((tally__rcu_self.held_n[i] += (unsigned)d) == 0)
				tally__rcu_self.held[i] = NULL;
			return;
		}
		if (!tally__rcu_self.held[i] && fr == TALLY__RCU_HELD)
			fr = i;
	}
	if (d > 0 && fr < TALLY__RCU_HELD) {
		tally__rcu_self.held[fr] = g;
		tally__rcu_self.held_n[fr] = 1;
	} else {
		/* not in the table: a put of a reference another thread took
		 * (handed over), or the table was full when it was taken */
		tally__rcu_self.overflow += (unsigned)d;
	}
}

/* g is destroyed: using it is safe only inside a read-side section or
 * with a reference held. */
static inline void tally__rcu_dead_use(const void *g, const char *call)
{
	if (!tally__rcu_self.nest && !tally__rcu_holds(g))
		tally__rcu_abort(call, "the group is destroyed and this thread holds neither "
				       "a tally_tree_read_lock() nor a reference to it "
				       "(tally_group_get()): it may be freed at any moment (a "
				       "use-after-free); use a group another thread may destroy "
				       "only inside a read-side section or between a get and its put");
}

TALLY__INLINE void tally__rcu_note_register(int d)
{
	tally__rcu_self.registered += (unsigned)d;
}

TALLY__INLINE void tally__rcu_note_lock(int d)
{
	tally__rcu_self.nest += (unsigned)d;
}
/* Readers: a destroyed g outside a read-side section is a use-after-free
 * waiting to happen (TALLY_DEBUG only: release readers load nothing more). */
#  define tally__rcu_check_alive(g, call)                                      \
	do {                                                                   \
		if (tally__load(&(g)->tally__dead))                            \
			tally__rcu_dead_use(g, call);                          \
	} while (0)
#else
#  define tally__rcu_check_alive(g, call) ((void)(g), (void)(call))
#  define tally__rcu_need_registered(t, call) ((void)(t), (void)(call))
#  define tally__rcu_dead_use(g, call) ((void)(g), (void)(call))
#  define tally__rcu_note_ref(g, d) ((void)(g))
#  define tally__rcu_note_register(d) ((void)0)
#  define tally__rcu_note_lock(d) ((void)0)
#endif

/* A destroyed group: check the rule (TALLY_DEBUG) and answer -EINVAL, the
 * documented result of a call on a destroyed group. */
#define tally__rcu_dead(g, call) (tally__rcu_dead_use(g, call), -EINVAL)

/* ---- the bodies of rstat.h's RCU calls ------------------------------------ */

/* tally_tree_register_thread(). */
static inline int tally__rstat_register_thread(struct tally_tree *t)
{
	if (tally__bad(!t))
		return -EINVAL;
	t->tally__rcu.flavor->register_thread();
	tally__rcu_note_register(1);
	return 0;
}

/* tally_tree_unregister_thread(). */
static inline void tally__rstat_unregister_thread(struct tally_tree *t)
{
	if (tally__bad(!t))
		return;
	t->tally__rcu.flavor->unregister_thread();
	tally__rcu_note_register(-1);
}

/* tally_tree_read_lock(). */
static inline void tally__rstat_read_lock(struct tally_tree *t)
{
	if (tally__bad(!t))
		return;
	tally__rcu_need_registered(t, "tally_tree_read_lock");
	t->tally__rcu.flavor->read_lock();
	tally__rcu_note_lock(1);
}

/* tally_tree_read_unlock(). */
static inline void tally__rstat_read_unlock(struct tally_tree *t)
{
	if (tally__bad(!t))
		return;
	tally__rcu_note_lock(-1);
	/* Pairs with the acquire in tally__group_free_rcu(). */
	tally__tsan_release(&t->tally__rcu.tsan_token);
	t->tally__rcu.flavor->read_unlock();
}

#endif /* TALLY_RSTAT_RCU_H */
