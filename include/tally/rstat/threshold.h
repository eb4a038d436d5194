/**
 * @file
 * tally/rstat/threshold.h - the per-group flush thresholds of
 * tally/rstat.h (private; include <tally/rstat.h>): the kernel's
 * memcg_rstat_updated() and memcg_vmstats_needs_flush() in mm/memcontrol.c,
 * after "mm: memcg: make stats flushing threshold per-memcg" (Yosry
 * Ahmed, 2023).
 *
 * Per group and CPU slot a stats_updates count. An update walks the group
 * and its ancestors, stops at the first that already needs a flush, else
 * adds |delta| to that group's count for this slot and, once the count
 * reaches the batch (64, MEMCG_CHARGE_BATCH), moves it into the group's
 * atomic count. The walk also keeps "a flushable group's ancestors are
 * flushable", which the early stop relies on and per-CPU batching alone
 * does not keep (see tally__rstat_count()).
 * needs_flush(g) = count > batch * ncpus (ncpus: online CPUs when the tree
 * was created). A flush zeroes both counts of every group it visits: the
 * per-slot ones on every slot (a new count epoch), and the atomic by
 * subtracting what it held when the flush began (tally__rstat_count_take()),
 * once the flush is done (tally__rstat_count_settle()); where updates
 * counted meanwhile took the group past its threshold, the settle leaves
 * it past (re-armed: they may have come after the flush's last drain).
 * So whoever finds a count lowered finds the flushed values published, a
 * count the flush takes belongs to updates it reflects, and one added
 * during the flush that crossed the threshold keeps the group flushable
 * (the kernel zeroes during the flush, and can zero the count of an
 * update it missed or has not published yet). The argument: "Why
 * tally_group_flush(g) reflects an update that took g past its
 * threshold" in tally/rstat/correctness.h. Hence: if an update by
 * this thread finds g below its threshold and takes it past (it is
 * counted in g, or marks g flushable), tally_group_flush(g) afterwards
 * returns with that update and every earlier one of this thread
 * reflected, whether it flushed or another flush got there first. (An
 * update that finds g already flushable is not counted in g; only a
 * forced flush is sure to show it.)
 */
#ifndef TALLY_RSTAT_THRESHOLD_H
#define TALLY_RSTAT_THRESHOLD_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/threshold.h is private: include <tally/rstat.h>"
#endif

/* Per-slot counts: (epoch << 40) | count. */
#define TALLY__RSTAT_CNT_BITS 40
#define TALLY__RSTAT_CNT_MASK ((1ull << TALLY__RSTAT_CNT_BITS) - 1)
#define TALLY__RSTAT_EPOCH_MASK ((1u << (64 - TALLY__RSTAT_CNT_BITS)) - 1)

/* Online CPUs (num_online_cpus()), for the flush threshold. */
static inline unsigned tally__rstat_online_cpus(void)
{
#if defined(_SC_NPROCESSORS_ONLN)
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n > 0)
		return (unsigned)n;
#endif
	return tally__nr_cpu_slots();
}

/* needs_flush: g's count is past the tree's threshold. Acquire: pairs with
 * the release in tally__rstat_count_settle(): a count lowered by a flush
 * comes with that flush's values. */
TALLY__INLINE bool tally__rstat_count_over(const struct tally_group *g)
{
	return __atomic_load_n(&g->tally__cnt.count, __ATOMIC_ACQUIRE) >
	       g->tally__tree->tally__thr.threshold;
}

/*
 * Make g and all its ancestors flushable: loads only for those that are
 * already, an add of threshold + 1 for any that is not. See
 * tally__rstat_count().
 */
static inline void tally__rstat_mark_flushable(const struct tally_tree *t, struct tally_group *g)
{
	for (; g; g = g->tally__links.parent)
		if (tally__unlikely(tally__load(&g->tally__cnt.count) <= t->tally__thr.threshold))
			__atomic_add_fetch(&g->tally__cnt.count, t->tally__thr.threshold + 1,
					   __ATOMIC_RELEASE);
}

/*
 * Take group x's count: once per flush, before any word of the flush is
 * read, parents before children (the flush walk calls it on its
 * parents-first lists). Acquire: pairs with the release adds in
 * tally__rstat_count(), so the dirty bits of the updates behind the count
 * (set before their count) are seen by the flush's second drain. The count
 * is subtracted only when the flush is done, so whoever sees it lowered
 * sees the flushed values. Parents first: an update counted in a child
 * after the child's take is counted in the parent after the parent's, so
 * no child keeps a count its parent lost. Flush lock held.
 */
static inline void tally__rstat_count_take(struct tally_tree *t, struct tally_group *x)
{
	struct tally__rstat_gcount *c = &x->tally__cnt;
	if (c->taken_gen == t->tally__flush.gen)
		return;
	c->taken_gen = t->tally__flush.gen;
	c->taken = __atomic_load_n(&c->count, __ATOMIC_ACQUIRE);
	c->taken_next = t->tally__flush.taken;
	t->tally__flush.taken = x;
}

/*
 * Lower x's count by what the flush took, in one atomic step, unless
 * updates counted since the take have taken x past its threshold: then
 * leave it past (at threshold + 1 if subtracting all it took would not),
 * and return 1 (re-armed). Such an update may have set its dirty bit
 * after the flush's last drain, so the flush may not reflect it, and its
 * thread's next tally_group_flush(x) must flush (the argument: "Why
 * tally_group_flush(g) reflects an update that took g past its
 * threshold" in tally/rstat/correctness.h). Only flushes lower a
 * count, under the flush lock, so the CAS loop races only with adds.
 * Release: pairs with the acquire in tally__rstat_count_over().
 */
static inline int tally__rstat_count_lower(const struct tally_tree *t,
					   struct tally__rstat_gcount *c)
{
	uint64_t thr = t->tally__thr.threshold, old = tally__load(&c->count), sub;
	int rearm;
	do {
		/* old > thr >= old - taken: some of it came after the take */
		rearm = old != c->taken && old > thr && old - c->taken <= thr;
		sub = rearm ? old - (thr + 1) : c->taken;
	} while (!__atomic_compare_exchange_n(&c->count, &old, old - sub, 0, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	return rearm;
}

/*
 * The end of a flush: lower each group's count by what the flush took
 * (tally__rstat_count_lower(); children before parents: the list is in
 * reverse order of taking), and restart its per-slot counts with a new
 * epoch: O(1) for every slot (the kernel zeroes only the CPU it flushes,
 * leaving a child remainders its parent lost). A group left flushable
 * (re-armed) then makes its ancestors flushable, once every count is
 * settled (an ancestor settled after it could otherwise drop below its
 * threshold): "a flushable group's ancestors are flushable" holds again.
 * Flush lock held.
 */
static inline void tally__rstat_count_settle(struct tally_tree *t)
{
	struct tally_group *x = t->tally__flush.taken, *next, *rearmed = NULL;
	t->tally__flush.taken = NULL;
	for (; x; x = next) {
		struct tally__rstat_gcount *c = &x->tally__cnt;
		next = c->taken_next;
		tally__store(&c->epoch, (c->epoch + 1u) & TALLY__RSTAT_EPOCH_MASK);
		if (c->taken && tally__unlikely(tally__rstat_count_lower(t, c))) {
			c->taken_next = rearmed;
			rearmed = x;
		}
	}
	for (x = rearmed; x; x = x->tally__cnt.taken_next)
		tally__rstat_mark_flushable(t, x->tally__links.parent);
}

/*
 * g is flushable: make its ancestors so too (tally__rstat_mark_flushable),
 * unless an update on slot s already found them all flushable at the
 * generation gen (loaded before g's count: tally__rstat_gen()). Only a
 * flush lowers a count, and every flush bumps the tree's generation
 * before it takes any count and again (release) once it has lowered them,
 * so an update that loads (acquire) the generation a walk was recorded at
 * finds g and every ancestor still past their thresholds; one that loads
 * a generation recorded mid-flush finds the end's bump and walks again.
 * (Loaded after g's count instead, the generation could be a flush's end
 * that lowered g's count below its threshold after the load saw it over:
 * the record would then skip counting g's later updates until the next
 * flush, and an update taking g past its threshold would go unseen.)
 * Only an update racing with a flush it does not see yet may skip a mark
 * that the walk would have made; like any update that finds g flushable
 * (see tally__rstat_count()) it promises nothing for g's ancestors, and
 * the next update on s that finds g flushable makes the mark. Saves the
 * walk (a load per ancestor) on almost every update of a busy group.
 */
TALLY__INLINE void tally__rstat_ancestors_flushable(const struct tally_tree *t,
						    struct tally_group *g, unsigned s,
						    unsigned long gen)
{
	struct tally__rstat_cpu *c = tally__rstat_cpu(g, s);
	if (tally__load(&c->anc_gen) == gen)
		return;
	tally__rstat_mark_flushable(t, g->tally__links.parent);
	tally__pcpu_cover(&g->tally__pcpu, s); /* before the store to g's slot s */
	tally__store(&c->anc_gen, gen);
}

/*
 * The tree's flush generation, for tally__rstat_count_settled() and
 * tally__rstat_count(): loaded (acquire) before any count they load, so a
 * count seen over the threshold was over it at this generation or a later
 * one (a flush that lowers it bumps the generation after, with release).
 */
TALLY__INLINE unsigned long tally__rstat_gen(const struct tally_tree *t)
{
	return __atomic_load_n(&t->tally__flush.gen, __ATOMIC_ACQUIRE);
}

/*
 * Whether an update of g on slot s has nothing to count: an update on s
 * found g and every ancestor flushable at generation gen, the current one
 * (anc_gen == gen), and no flush has lowered a count since (each bumps the
 * generation), so tally__rstat_count() would stop at g and skip the walk.
 * The update path's common case once a group is busy: two loads and a
 * compare instead of the count and |delta| arithmetic.
 */
TALLY__INLINE bool tally__rstat_count_settled(const struct tally_group *g, unsigned s,
					      unsigned long gen)
{
	return tally__load(&tally__rstat_cpu(g, s)->anc_gen) == gen;
}

/*
 * Count mag toward the thresholds of g and its ancestors on slot s
 * (memcg_rstat_updated()), stopping at the first flushable one. The
 * per-slot count is a relaxed load and store, not an RMW: two threads on
 * one slot can lose a few counts, which only delays a thresholded flush
 * (the periodic flush bounds that).
 *
 * The early stop relies on "a flushable group's ancestors are flushable"
 * (the kernel's comment says so), which does not hold by itself: a
 * parent's per-slot counts move into its atomic at other times than its
 * child's (it can lag by batch - 1 per slot), and a flush clears the
 * counts of the groups it visits, not those of descendants it did not
 * visit, which may keep a count whose updates it already reflected.
 * Stopping at such a child for good would leave the parent below its
 * threshold, however much changes under it. So when the walk stops at a
 * flushable group, or makes one flushable, it checks every ancestor (loads
 * of read-mostly lines) and marks flushable any that is not: their
 * subtrees hold the group's updates. The marks are release adds after this
 * update's dirty bits, like the counts.
 */
TALLY__INLINE void tally__rstat_count(const struct tally_tree *t, struct tally_group *g, unsigned s,
				      uint64_t mag, unsigned long gen)
{
	for (; g; g = g->tally__links.parent) {
		struct tally__rstat_cpu *c;
		uint64_t x, v, e;
		if (tally__load(&g->tally__cnt.count) > t->tally__thr.threshold) {
			tally__rstat_ancestors_flushable(t, g, s, gen);
			break;
		}
		c = tally__rstat_cpu(g, s);
		e = (uint64_t)tally__load(&g->tally__cnt.epoch) << TALLY__RSTAT_CNT_BITS;
		v = tally__load(&c->stats_updates);
		x = ((v & ~TALLY__RSTAT_CNT_MASK) == e ? v & TALLY__RSTAT_CNT_MASK : 0) + mag;
		tally__pcpu_cover(&g->tally__pcpu, s); /* before the store to g's slot s */
		if (x < t->tally__thr.batch) {
			tally__store(&c->stats_updates, e | x);
			continue;
		}
		tally__store(&c->stats_updates, e);
		/* Release: pairs with the acquire in tally__rstat_count_take(). */
		if (__atomic_add_fetch(&g->tally__cnt.count, x, __ATOMIC_RELEASE) >
		    t->tally__thr.threshold) {
			tally__rstat_mark_flushable(t, g->tally__links.parent);
			break;
		}
	}
}

#endif /* TALLY_RSTAT_THRESHOLD_H */
