/*
 * Unit tests for tally/rstat.h's owner path (x86_64 with rseq: an update
 * stores its dirty marks with plain stores in its CPU's own half of the
 * slot's record, in a restartable section after the word add; see Memory
 * ordering in rstat.h). Where the path is not compiled in or rseq is not
 * registered (valgrind, qemu-user, GLIBC_TUNABLES=glibc.pthread.rseq=0)
 * the tests still check the flush, through the fenced path.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>

#include <tally/counter.h>
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

/* The 64-bit word that holds g's mark (two marks to a word), and the
 * mark's shift in it (the mark at the lower address is the low half on a
 * little-endian machine): in the owner's half of slot s. */
static uint64_t *mark_word(const struct tally_group *g, unsigned s, int summary, unsigned *shift)
{
	unsigned id = g->tally__dirty.id, m = summary ? (id >> 6) & 63u : id & 4095u;
	unsigned little = tally__rstat_mark_of(1, 0) == 1;
	*shift = 32u * ((m & 1u) ^ !little);
	return summary ? &rec(g, s)->mark_summary[m / 2u] : &rec(g, s)->mark_leaf[m / 2u];
}

/* g's mark, or its summary mark, in the owner's half of slot s */
static uint32_t mark(const struct tally_group *g, unsigned s, int summary)
{
	unsigned shift;
	uint64_t *w = mark_word(g, s, summary, &shift);
	return (uint32_t)(__atomic_load_n(w, __ATOMIC_RELAXED) >> shift);
}

/* Set g's mark, or its summary mark, in slot s to v (the other mark of
 * the word unchanged). */
static void set_mark(const struct tally_group *g, unsigned s, int summary, uint32_t v)
{
	unsigned shift;
	uint64_t *w = mark_word(g, s, summary, &shift);
	__atomic_fetch_and(w, ~((uint64_t)0xffffffffu << shift), __ATOMIC_SEQ_CST);
	__atomic_fetch_or(w, (uint64_t)v << shift, __ATOMIC_SEQ_CST);
}

/* every word of the owner's half of slot s is 0 */
static int own_clean(const struct tally_group *g, unsigned s)
{
	const struct tally__rstat_dirty *d = rec(g, s);
	unsigned i;
	for (i = 0; i < 32; i++)
		if (__atomic_load_n(&d->mark_summary[i], __ATOMIC_RELAXED))
			return 0;
	for (i = 0; i < TALLY__RSTAT_BLOCK_IDS / 2; i++)
		if (__atomic_load_n(&d->mark_leaf[i], __ATOMIC_RELAXED))
			return 0;
	return 1;
}

/* An update marks its group in the owner's half of a slot, and a flush
 * exchanges both halves of every slot to 0. */
Test(rstat_owner, update_marks_the_owner_half_and_a_flush_clears_it)
{
	struct tally_tree *t = tally_tree_create(2);
	struct tally_group *root = tally_tree_root(t), *g = tally_group_create(root);
	unsigned s, marked = 0;
	cr_assert_not_null(g);
	/* Pinned, a first update raises g's written bound to this CPU's slot
	 * (outside the section: the shared half), and a flush clears it; the
	 * next one takes the section. */
	cr_assert_geq(harness_pin_here(), 0);
	cr_assert_eq(tally_group_mod(g, 1, 3), 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_mod(g, 1, 4), 0);
	for (s = 0; s < t->tally__ids.nr_slots; s++)
		if (mark(g, s, 0)) {
			cr_assert_eq(mark(g, s, 0), 1);
			cr_assert_eq(mark(g, s, 1), 1);
			marked++;
		}
	if (owner_path())
		cr_assert_eq(marked, 1, "the update did not mark the owner's half");
	else
		cr_assert_eq(marked, 0);
	tally_group_flush_force(root);
	cr_assert_eq(tally_group_read(root, 1), 7);
	for (s = 0; s < t->tally__ids.nr_slots; s++) {
		cr_assert(own_clean(g, s), "slot %u: the owner's half is not clean", s);
		cr_assert_eq(__atomic_load_n(&rec(g, s)->summary, __ATOMIC_RELAXED), 0);
	}
	tally_tree_destroy(t);
}

/*
 * Updater B of the same CPU was interrupted in its section after storing
 * its leaf mark and before its summary store (it restarts later), and a
 * drain has cleared the summary since: the leaf mark is set under a clear
 * summary. Updater A then updates the same group on that CPU and returns;
 * a flush after that must show A's delta. It does because A stores both
 * bits every time: an update that skipped its stores when it found its
 * leaf mark already set would leave the summary clear and the flush would
 * miss A. Made by hand in every slot, three rounds.
 */
Test(rstat_owner, update_beside_an_interrupted_owner_of_the_same_slot)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t), *g = tally_group_create(root);
	unsigned s, round;
	for (round = 1; round <= 3; round++) {
		for (s = 0; s < t->tally__ids.nr_slots; s++) {
			set_mark(g, s, 0, 1);
			set_mark(g, s, 1, 0);
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
			cr_assert_eq(mark(g[i], s, 0), 0);
	tally_tree_destroy(t);
}

/*
 * A drain reads the mark half only as far as the ids handed out: the
 * groups at the ends of that range (ids 127, 128, 4095 and 4096: the two
 * marks of one summary word, the last of the first block, the first of
 * the second) and the last id handed out, one update each, are all
 * flushed, exactly, and their marks cleared.
 */
Test(rstat_owner, marks_at_the_ends_of_the_ids_handed_out)
{
	enum { N = 4100 };
	static struct tally_group *g[N + 1];
	static const unsigned ids[] = {127, 128, 255, 4095, 4096, N};
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root = tally_tree_root(t);
	unsigned i, k, s;
	cr_assert_eq(root->tally__dirty.id, 0);
	for (i = 1; i <= N; i++) {
		g[i] = tally_group_create(root);
		cr_assert_not_null(g[i]);
		cr_assert_eq(g[i]->tally__dirty.id, i);
	}
	cr_assert_eq(t->tally__ids.nr_ids, N + 1u);
	for (k = 0; k < sizeof(ids) / sizeof(ids[0]); k++)
		cr_assert_eq(tally_group_mod(g[ids[k]], 0, (tally_sword)k + 1), 0);
	tally_group_flush_force(root);
	for (k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) {
		cr_assert_eq(tally_group_read_local(g[ids[k]], 0), (tally_sword)k + 1,
			     "the flush missed id %u", ids[k]);
		for (s = 0; s < t->tally__ids.nr_slots; s++)
			cr_assert_eq(mark(g[ids[k]], s, 0), 0);
	}
	cr_assert_eq(tally_group_read(root, 0), 21);
	tally_tree_destroy(t);
}

/*
 * With rseq_cs left set after a section (TALLY_RSEQ_CLEAR_CS 0): after
 * another site's section (a counter add) or a clear (what the kernel does
 * at a preemption outside a section), the next update must arm its own
 * descriptor again, and every update must count once.
 */
/* one call site: one descriptor */
__attribute__((noinline)) static int mod_one(struct tally_group *g)
{
	return tally_group_mod(g, 0, 1);
}

Test(rstat_owner, update_arms_its_section_after_another_site_or_a_clear)
{
#if TALLY__HAVE_RSEQ && !TALLY_RSEQ_CLEAR_CS
	struct tally_tree *t;
	struct tally_group *g;
	struct tally_counter c;
	uint64_t *cs, mine;
	unsigned i;
	if (!owner_path())
		cr_skip_test("rseq is not registered");
	cs = (uint64_t *)(void *)&tally__rseq_area()->rseq_cs;
	t = tally_tree_create(1);
	g = tally_group_create(tally_tree_root(t));
	cr_assert_eq(tally_counter_init(&c, 0, 0), 0);
	/* pinned: the first update raises g's written bound, the second
	 * takes the section */
	cr_assert_geq(harness_pin_here(), 0);
	cr_assert_eq(mod_one(g), 0);
	cr_assert_eq(mod_one(g), 0);
	mine = __atomic_load_n(cs, __ATOMIC_RELAXED);
	cr_assert_neq(mine, 0);
	for (i = 0; i < 1000; i++) {
		if (i % 2) {
			tally_counter_add(&c, 1);
			cr_assert_neq(__atomic_load_n(cs, __ATOMIC_RELAXED), mine);
		} else {
			__atomic_store_n(cs, (uint64_t)0, __ATOMIC_RELAXED);
		}
		cr_assert_eq(mod_one(g), 0);
		cr_assert_eq(__atomic_load_n(cs, __ATOMIC_RELAXED), mine,
			     "update %u did not arm its own section", i);
	}
	tally_group_flush_force(tally_tree_root(t));
	cr_assert_eq(tally_group_read(g, 0), 1002);
	cr_assert_eq(tally_counter_sum(&c), 500);
	tally_counter_destroy(&c);
	tally_tree_destroy(t);
#else
	cr_skip_test("the update's section is armed by a store every time here");
#endif
}
