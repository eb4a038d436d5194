/*
 * Unit tests for tally/rstat.h's owner path (x86_64 with rseq: an update
 * stores its dirty bits with plain stores in its CPU's own half of the
 * slot's record, in a restartable section after the word add; see Memory
 * ordering in rstat.h). Where the path is not compiled in or rseq is not
 * registered (valgrind, qemu-user, GLIBC_TUNABLES=glibc.pthread.rseq=0)
 * the tests still check the flush, through the fenced path.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <tally/rstat.h>

static int owner_path(void)
{
#if TALLY__HAVE_RSEQ
	return __rseq_size != 0;
#else
	return 0;
#endif
}

static struct tally__rstat_dirty *rec(const struct tally_group *g, unsigned s)
{
	return tally__rstat_dirty_at(g->tally__dirty.block, g->tally__dirty.stride, s);
}

static uint64_t *own_leaf(const struct tally_group *g, unsigned s)
{
	return &rec(g, s)->own_leaf[(g->tally__dirty.id >> 6) & 63u];
}

/* An update marks its group in the owner's half of a slot, and a flush
 * exchanges both halves of every slot to 0. */
Test(rstat_owner, update_marks_the_owner_half_and_a_flush_clears_it)
{
	struct tally_tree *t = tally_tree_create(2);
	struct tally_group *root = tally_tree_root(t), *g = tally_group_create(root);
	unsigned s, marked = 0;
	cr_assert_not_null(g);
	cr_assert_eq(tally_group_mod(g, 1, 7), 0);
	for (s = 0; s < t->tally__ids.nr_slots; s++)
		if (__atomic_load_n(own_leaf(g, s), __ATOMIC_RELAXED) & g->tally__dirty.bit) {
			cr_assert(__atomic_load_n(&rec(g, s)->own_summary, __ATOMIC_RELAXED) &
				  g->tally__dirty.sbit);
			marked++;
		}
	if (owner_path())
		cr_assert_eq(marked, 1, "the update did not mark the owner's half");
	else
		cr_assert_eq(marked, 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 1), 7);
	for (s = 0; s < t->tally__ids.nr_slots; s++) {
		cr_assert_eq(__atomic_load_n(&rec(g, s)->own_summary, __ATOMIC_RELAXED), 0);
		cr_assert_eq(__atomic_load_n(own_leaf(g, s), __ATOMIC_RELAXED), 0);
		cr_assert_eq(__atomic_load_n(&rec(g, s)->summary, __ATOMIC_RELAXED), 0);
	}
	tally_tree_destroy(t);
}

/*
 * Updater B of the same CPU was interrupted in its section after storing
 * its leaf bit and before its summary store (it restarts later), and a
 * drain has cleared the summary since: the leaf bit is set under a clear
 * summary. Updater A then updates the same group on that CPU and returns;
 * a flush after that must show A's delta. It does because A stores both
 * bits every time: an update that skipped its stores when it found its
 * leaf bit already set would leave the summary clear and the flush would
 * miss A. Made by hand in every slot, three rounds.
 */
Test(rstat_owner, update_beside_an_interrupted_owner_of_the_same_slot)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t), *g = tally_group_create(root);
	unsigned s, round;
	for (round = 1; round <= 3; round++) {
		for (s = 0; s < t->tally__ids.nr_slots; s++) {
			__atomic_fetch_or(own_leaf(g, s), g->tally__dirty.bit, __ATOMIC_SEQ_CST);
			__atomic_store_n(&rec(g, s)->own_summary, 0, __ATOMIC_SEQ_CST);
		}
		cr_assert_eq(tally_group_mod(g, 0, 5), 0); /* A */
		tally_group_flush_force(root);
		cr_assert_eq(tally_group_read(root, 0), 5 * (tally_sword)round,
			     "round %u: the flush missed A's update", round);
		cr_assert_eq(tally_group_read_local(g, 0), 5 * (tally_sword)round);
	}
	tally_tree_destroy(t);
}

/* Many updates of many groups from this thread, then one flush: exact,
 * and the records clean afterwards. */
Test(rstat_owner, many_groups_exact)
{
	enum { N = 300 };
	struct tally_tree *t = tally_tree_create(3);
	struct tally_group *root = tally_tree_root(t), *g[N];
	unsigned i, s;
	tally_sword want = 0;
	for (i = 0; i < N; i++) {
		g[i] = tally_group_create(i < 10 ? root : g[i % 10]);
		cr_assert_not_null(g[i]);
	}
	for (i = 0; i < 20 * N; i++) {
		tally_sword d = (tally_sword)(i % 7) - 3;
		cr_assert_eq(tally_group_mod(g[(i * 37u) % N], i % 3u, d), 0);
		want += d;
	}
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 0) + tally_group_read(root, 1) +
			     tally_group_read(root, 2),
		     want);
	for (i = 0; i < N; i++)
		for (s = 0; s < t->tally__ids.nr_slots; s++)
			cr_assert_eq(__atomic_load_n(own_leaf(g[i], s), __ATOMIC_RELAXED) &
					     g[i]->tally__dirty.bit,
				     0);
	tally_tree_destroy(t);
}
