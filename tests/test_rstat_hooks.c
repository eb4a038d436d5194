/*
 * Unit tests for tally/rstat.h that force the interleavings its promises
 * are about, through the header's test hooks (TALLY__TEST_HOOK and
 * TALLY__RSTAT_RSEQ_HOOK, defined here before the include), instead of
 * waiting for a schedule to produce them:
 *   - an update that migrates between its word add and its dirty marks
 *     (x86_64 with rseq): a trap between the add's section and the mark
 *     stores whose handler moves the thread to another CPU; the update
 *     must still mark its group in the record of the slot its add landed
 *     on, and a flush must reflect it;
 *   - a group record (x86_64 with rseq) trapped before its sum's store and
 *     between that store and its bucket's add, moved in the trap: the
 *     section restarts, or leaves the bucket to the fenced update, and
 *     the record counts once;
 *   - an update counted after a flush's first drain, on a CPU slot that
 *     drain had passed: only the flush's second drain and walk reflect it
 *     before the settle clears its count;
 *   - an update counted after a flush's second drain and walk, before its
 *     settle, taking the group past its threshold: the settle must leave
 *     the group flushable, so that tally_group_flush() shows the update.
 * Each would pass without its part of the protocol only by luck; here it
 * fails every time.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <ucontext.h>

struct tally_group;
static void test_hook_rstat_flush_drained(struct tally_group *g);
static void test_hook_rstat_flush_walked(struct tally_group *g);
#define TALLY__TEST_HOOK(name, group) test_hook_##name(group)
#if defined(__x86_64__)
/* A trap between the rseq word add and the dirty-bit section. */
#  define TALLY__RSTAT_RSEQ_HOOK "int3\n\t"
/* Traps in tally_group_record()'s section when their flag is set (the
 * handler clears it): before the sum's store, and between it and the
 * bucket's add. */
volatile unsigned char rec_trap_sum, rec_trap_commit;
#  define REC_HOOK(flag) "cmpb $0, " flag "(%%rip)\n\tje 88f\n\tint3\n\t88:\n\t"
#  define TALLY__RSTAT_REC_HOOK_SUM REC_HOOK("rec_trap_sum")
#  define TALLY__RSTAT_REC_HOOK_COMMIT REC_HOOK("rec_trap_commit")
#endif

#include "test_rstat_model.h"

#include <tally/rstat.h> /* also tells the build to link liburcu */

/* ---- the hooks ------------------------------------------------------------ */

/* What a hook does when armed (once; each hook disarms itself). */
static struct {
	struct tally_group *g; /* the group to update */
	tally_sword d;         /* by this much */
	int cpu;               /* from this CPU (rstat_flush_drained), then back */
	int back;
	int drained, walked;   /* armed */
	int ran;               /* how many hooks ran armed */
} hk;

static void test_hook_rstat_flush_drained(struct tally_group *g)
{
	(void)g;
	if (!hk.drained)
		return;
	hk.drained = 0;
	/* Another CPU slot, whose drain is done: only the second drain sees
	 * this update's bit; its count is taken with the group's. */
	cr_assert_eq(harness_pin(hk.cpu), 0);
	cr_assert_eq(tally_group_mod(hk.g, 0, hk.d), 0);
	cr_assert_eq(harness_pin(hk.back), 0);
	hk.ran++;
}

static void test_hook_rstat_flush_walked(struct tally_group *g)
{
	(void)g;
	if (!hk.walked)
		return;
	hk.walked = 0;
	/* After the last drain: this flush does not see the update. */
	cr_assert_eq(tally_group_mod(hk.g, 0, hk.d), 0);
	hk.ran++;
}

/* The trap between the rseq sections: when armed, move the thread to
 * trap_cpu (sched_setaffinity() migrates the caller before it returns). */
static volatile sig_atomic_t trap_armed, trap_moved, trap_aborted;
static int trap_cpu;

static void on_trap(int sig, siginfo_t *si, void *uc_)
{
	cpu_set_t set;
	(void)sig;
	(void)si;
#if defined(__x86_64__) && TALLY__HAVE_RSEQ
	if (trap_armed) {
		/* An aborted section resumes at its abort handler, which
		 * follows the 4-byte signature. */
		const unsigned char *ip =
			(const unsigned char *)((ucontext_t *)uc_)->uc_mcontext.gregs[REG_RIP];
		uint32_t sigword;
		memcpy(&sigword, ip - 4, sizeof(sigword));
		trap_aborted = sigword == RSEQ_SIG;
	}
	rec_trap_sum = rec_trap_commit = 0;
#else
	(void)uc_;
#endif
	if (!trap_armed)
		return;
	trap_armed = 0;
	CPU_ZERO(&set);
	CPU_SET(trap_cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) == 0 && sched_getcpu() == trap_cpu)
		trap_moved = 1;
}

static void hooks_setup(void)
{
	struct sigaction sa;
	rstat_setup();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	memset(&hk, 0, sizeof(hk));
}

TestSuite(rstat_hooks, .init = hooks_setup, .fini = rstat_teardown);

/* Two CPUs the test may use, or skip. */
static void two_cpus(int *a, int *b)
{
	int cpus[2];
	if (harness_allowed_cpus(cpus, 2) < 2)
		cr_skip_test("needs two CPUs");
	*a = cpus[0];
	*b = cpus[1];
}

/* ---- an update that migrates between its word add and its marking ---------- */

/*
 * The rseq update adds on CPU a's slot, traps, is moved to CPU b, and
 * stores its dirty marks from b: they must land in a's record (the add's
 * slot), not b's, and nothing in b's record may claim the group (the
 * trap hit the window). A forced flush then reflects the update, in g and
 * the root. An update that marked the slot of the CPU it runs on after
 * the add would mark b: the flush never visits g on a's slot and reads 0.
 */
Test(rstat_hooks, update_migrated_between_add_and_marking_is_flushed)
{
	struct tally_tree *t;
	struct tally_group *root, *g;
	tally_sword sum = 0;
	int a, b, k;
#if !TALLY__HAVE_RSEQ
	cr_skip_test("the rseq update is not compiled in (x86_64, TALLY_PCPU_MODE != 1)");
#else
	if (__rseq_size == 0)
		cr_skip_test("rseq is not registered (valgrind, glibc.pthread.rseq=0)");
#endif
	two_cpus(&a, &b);
	t = tally_tree_create(1);
	root = tally_tree_root(t);
	g = tally_group_create(root);
	cr_assert_not_null(g);
	/* A first update on a: it raises g's written bound to cover a's slot
	 * (outside the section), so the rounds' updates take the section. */
	cr_assert_eq(harness_pin(a), 0);
	cr_assert_eq(tally_group_mod(g, 0, 100), 0);
	sum = 100;
	tally_group_flush_force(root); /* its marks drained */
	for (k = 1; k <= 3; k++) {
		unsigned s = (unsigned)a;
		/* g's mark: two to a 64-bit word (x86_64: the lower address is
		 * the low half) */
		unsigned m = g->tally__dirty.id & 4095u, shift = 32u * (m & 1u);
		uint64_t *mark_a = &tally__rstat_dirty_at(g->tally__dirty.block,
							  g->tally__dirty.stride, s)
					    ->mark_leaf[m / 2u];
		uint64_t *mark_b = &tally__rstat_dirty_at(g->tally__dirty.block,
							  g->tally__dirty.stride, (unsigned)b)
					    ->mark_leaf[m / 2u];
		cr_assert_eq(harness_pin(a), 0);
		trap_cpu = b;
		trap_moved = 0;
		trap_armed = 1;
		cr_assert_eq(tally_group_mod(g, 0, k), 0);
		cr_assert(trap_moved, "round %d: the trap did not move the thread", k);
		cr_assert_eq(sched_getcpu(), b);
		cr_assert_lt(s, tally__pcpu_slots(&g->tally__pcpu) - 1u);
		cr_assert_eq((uint32_t)(__atomic_load_n(mark_a, __ATOMIC_RELAXED) >> shift), 1,
			     "round %d: the update did not mark the slot of its add", k);
		cr_assert_eq((uint32_t)(__atomic_load_n(mark_b, __ATOMIC_RELAXED) >> shift), 0,
			     "round %d: the update marked the slot it migrated to", k);
		sum += k;
		tally_group_flush_force(root);
		cr_assert_eq(tally_group_read(g, 0), sum, "round %d: g reads %lld, updates %lld", k,
			     (long long)tally_group_read(g, 0), (long long)sum);
		cr_assert_eq(tally_group_read(root, 0), sum);
	}
	tally_tree_destroy(t);
}

/* ---- a record aborted inside its section ----------------------------------------- */

#if defined(__x86_64__) && TALLY__HAVE_RSEQ
/* Word item of g on slot s. */
static tally_uword word_at(struct tally_group *g, unsigned s, unsigned item)
{
	return __atomic_load_n((tally_uword *)tally__pcpu_at(&g->tally__pcpu, s,
							      TALLY__RSTAT_WORD_OFF +
								      (size_t)item *
									      sizeof(tally_uword)),
			       __ATOMIC_RELAXED);
}

/* Slot s's mark of g (the leaf's, as the test above reads it). */
static uint32_t mark_at(struct tally_group *g, unsigned s)
{
	unsigned m = g->tally__dirty.id & 4095u;
	return (uint32_t)(__atomic_load_n(&tally__rstat_dirty_at(g->tally__dirty.block,
								  g->tally__dirty.stride, s)
						   ->mark_leaf[m / 2u],
					  __ATOMIC_RELAXED) >>
			  (32u * (m & 1u)));
}

/*
 * tally_group_record() on CPU a, trapped inside its section and moved to
 * CPU b in the trap: before the sum's store (commit 0) the kernel's abort
 * restarts the section on b, so the whole record lands on b's slot; after
 * it (commit 1) the sum stays on a's slot and is marked there, and the
 * bucket's + 1 is added once, by the fenced update. Either way a flush
 * shows the record exactly once, in g and the root. A handler that
 * restarted after the sum's store counts the sum twice; one that left
 * without marking a's slot loses it from the flush.
 */
static void record_aborted(int commit)
{
	static struct tally_hist_opts ho; /* the default layout */
	struct tally_tree_opts o;
	struct tally_tree *t;
	struct tally_group *root, *g;
	struct tally_hist_snap snap;
	uint64_t sum = 0, count = 0;
	const int64_t v = 1000003;
	unsigned sw, bw, k, tries = 0;
	int a, b;
	if (__rseq_size == 0)
		cr_skip_test("rseq is not registered (valgrind, glibc.pthread.rseq=0)");
	two_cpus(&a, &b);
	memset(&o, 0, sizeof(o));
	o.nr_items = 1;
	o.hists = &ho;
	o.nr_hists = 1;
	t = tally_tree_create_opts(&o);
	cr_assert_not_null(t);
	root = tally_tree_root(t);
	g = tally_group_create(root);
	cr_assert_not_null(g);
	sw = t->tally__hists[0].first + t->tally__hists[0].l.nr;
	bw = t->tally__hists[0].first + tally__hist_pos(&t->tally__hists[0].l, (uint64_t)v);
	/* A first record on each CPU raises g's written bound over both
	 * slots, so the trapped records take the section. */
	cr_assert_eq(harness_pin(b), 0);
	cr_assert_eq(tally_group_record(g, 0, v), 0);
	cr_assert_eq(harness_pin(a), 0);
	cr_assert_eq(tally_group_record(g, 0, v), 0);
	sum = 2 * (uint64_t)v;
	count = 2;
	cr_assert_eq(tally_group_hist_snap_init(&snap, t, 0), 0);
	for (k = 1; k <= 3; tries++) {
		tally_uword sa = word_at(g, (unsigned)a, sw), ba = word_at(g, (unsigned)a, bw);
		tally_uword sb = word_at(g, (unsigned)b, sw), bb = word_at(g, (unsigned)b, bw);
		tally_group_flush_force(root); /* the marks drained */
		cr_assert_eq(mark_at(g, (unsigned)a), 0);
		cr_assert_eq(harness_pin(a), 0);
		trap_cpu = b;
		trap_moved = trap_aborted = 0;
		trap_armed = 1;
		if (commit)
			rec_trap_commit = 1;
		else
			rec_trap_sum = 1;
		cr_assert_eq(tally_group_record(g, 0, v), 0);
		trap_armed = 0;
		sum += (uint64_t)v;
		count++;
		if (!trap_moved) {
			/* Preempted in the few instructions before the trap:
			 * the kernel's abort came first. Counted all the same
			 * (checked below); the trial again. */
			rec_trap_sum = rec_trap_commit = 0;
			cr_assert_lt(tries, 100, "no trial reached its trap undisturbed");
		} else if (commit) {
			cr_assert(trap_aborted, "round %u: the trap did not abort the section", k);
			cr_assert_eq(word_at(g, (unsigned)a, sw), sa + (tally_uword)v,
				     "round %u: the sum is not on a's slot once", k);
			cr_assert_eq(word_at(g, (unsigned)a, bw), ba,
				     "round %u: the bucket's add ran on a", k);
			cr_assert_eq(mark_at(g, (unsigned)a), 1,
				     "round %u: the sum's slot is not marked", k);
		} else {
			cr_assert(trap_aborted, "round %u: the trap did not abort the section", k);
			cr_assert_eq(word_at(g, (unsigned)a, sw), sa);
			cr_assert_eq(word_at(g, (unsigned)a, bw), ba);
			cr_assert_eq(word_at(g, (unsigned)b, sw), sb + (tally_uword)v,
				     "round %u: the restarted section's sum is not on b", k);
			cr_assert_eq(word_at(g, (unsigned)b, bw), bb + 1);
		}
		k += trap_moved ? 1u : 0u;
		tally_group_flush_force(root);
		cr_assert_eq(tally_group_hist_snapshot(g, 0, &snap), 0);
		cr_assert_eq(snap.count, count, "round %u: count %llu, records %llu", k,
			     (unsigned long long)snap.count, (unsigned long long)count);
		cr_assert_eq(snap.sum & (tally_uword)-1, sum & (tally_uword)-1,
			     "round %u: sum %llu, recorded %llu", k, (unsigned long long)snap.sum,
			     (unsigned long long)sum);
		cr_assert_eq(tally_group_hist_snapshot(root, 0, &snap), 0);
		cr_assert_eq(snap.count, count);
		cr_assert_eq(snap.sum & (tally_uword)-1, sum & (tally_uword)-1);
	}
	if (tries > 3)
		fprintf(stderr, "record_aborted: %u trials preempted before the trap, retried\n",
			tries - 3);
	tally_hist_snap_destroy(&snap);
	tally_tree_destroy(t);
}
#endif

Test(rstat_hooks, record_aborted_before_its_sum_restarts)
{
#if defined(__x86_64__) && TALLY__HAVE_RSEQ
	record_aborted(0);
#else
	cr_skip_test("the rseq record is not compiled in (x86_64, TALLY_PCPU_MODE != 1)");
#endif
}

Test(rstat_hooks, record_aborted_after_its_sum_adds_the_bucket_once)
{
#if defined(__x86_64__) && TALLY__HAVE_RSEQ
	record_aborted(1);
#else
	cr_skip_test("the rseq record is not compiled in (x86_64, TALLY_PCPU_MODE != 1)");
#endif
}

/* ---- a flush's second drain and walk --------------------------------------------- */

/*
 * g's first update (CPU a) links g; during a forced root flush, after its
 * first drain, g is updated on CPU b by threshold + 1 (below it before,
 * past it after). The flush takes that count with g's (g is linked on
 * a), so only its second drain (of b's slot) and walk can reflect the
 * update before the settle clears the count. tally_group_flush(g)
 * afterwards must show both updates.
 */
Test(rstat_hooks, update_after_the_first_drain_is_flushed_by_the_second)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t), *g = tally_group_create(root);
	tally_sword big = (tally_sword)tally_tree_flush_threshold(t) + 1;
	int a, b;
#if TALLY_PCPU_MODE == 3
	cr_skip_test("thread slots: a thread keeps its slot on every CPU");
#endif
	two_cpus(&a, &b);
	cr_assert_eq(harness_pin(a), 0);
	cr_assert_eq(tally_group_mod(g, 0, 1), 0);
	cr_assert(!tally_group_needs_flush(g));
	hk.g = g;
	hk.d = big;
	hk.cpu = b;
	hk.back = a;
	hk.drained = 1;
	tally_group_flush_force(root);
	cr_assert_eq(hk.ran, 1);
	tally_group_flush(g);
	cr_assert_eq(tally_group_read(g, 0), 1 + big, "g reads %lld, updates %lld",
		     (long long)tally_group_read(g, 0), (long long)(1 + big));
	tally_group_flush(root);
	cr_assert_eq(tally_group_read(root, 0), 1 + big);
	tally_tree_destroy(t);
}

/* ---- a crossing update between a flush's last drain and its settle ---------------- */

/*
 * g holds a count of one batch (below its threshold) when a forced root
 * flush takes it; after the flush's second walk, before its settle, an
 * update of one threshold takes g past (batch + threshold). The flush
 * does not see that update's bit; subtracting only what it took would
 * leave g at the threshold, not past it, and tally_group_flush(g) would
 * do nothing. The settle must leave g flushable: the thresholded flush
 * then shows the update, and so does the root's (marked flushable by the
 * update).
 */
Test(rstat_hooks, crossing_update_before_a_flush_settles_keeps_the_group_flushable)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t), *g = tally_group_create(root);
	tally_sword batch = 64, thr = (tally_sword)tally_tree_flush_threshold(t);
	cr_assert_geq(harness_pin_here(), 0);
	cr_assert_geq(thr, batch);
	cr_assert_eq(tally_group_mod(g, 0, batch), 0); /* one batch: into g's count */
	cr_assert(!tally_group_needs_flush(g));
	hk.g = g;
	hk.d = thr;
	hk.walked = 1;
	tally_group_flush_force(root);
	cr_assert_eq(hk.ran, 1);
	cr_assert_eq(tally_group_read(g, 0), batch); /* the flush missed the update */
	cr_assert(tally_group_needs_flush(g), "the settle left g below its threshold");
	tally_group_flush(g);
	cr_assert_eq(tally_group_read(g, 0), batch + thr, "g reads %lld, updates %lld",
		     (long long)tally_group_read(g, 0), (long long)(batch + thr));
	cr_assert(!tally_group_needs_flush(g));
	cr_assert(tally_group_needs_flush(root));
	tally_group_flush(root);
	cr_assert_eq(tally_group_read(root, 0), batch + thr);
	tally_tree_destroy(t);
}
