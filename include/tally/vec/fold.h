/**
 * @file
 * tally/vec/fold.h - when and how tally_vec folds (private; include
 * <tally/vec.h>): the default threshold (the kernel's
 * calculate_normal_threshold(), mm/vmstat.c), the fold check after each
 * update, and the fold of everything (refresh_cpu_vm_stats()).
 *
 * Every fold is tally__pcpu_fold (tally/pcpu.h, "the fold"): lock-free,
 * conserving (nothing lost or counted twice whatever the interleaving).
 * Its kind is vmstat's: TALLY__FOLD_PAST for mod (|diff| > t), UP for inc
 * and DOWN for dec (overstep t/2), ALL for tally_vec_fold. An item with
 * threshold TALLY_VEC_EXACT never folds.
 */
#ifndef TALLY_VEC_FOLD_H
#define TALLY_VEC_FOLD_H

#if !defined(TALLY__VEC_INSIDE)
#  error "tally/vec/fold.h is private: include <tally/vec.h>"
#endif

/* fls(): 1-based index of the highest set bit, 0 for 0. */
TALLY__INLINE int tally__fls(unsigned long x)
{
	return x ? (int)(sizeof(x) * 8) - __builtin_clzl(x) : 0;
}

/* calculate_normal_threshold(): min(TALLY_VEC_MAX_THRESHOLD, 2 * fls(cpus)
 * * (1 + fls(memory in 128 MiB units))). Memory the OS cannot tell
 * counts as 0. */
static inline int tally__vec_calc_threshold(void)
{
	unsigned long mem128 = tally__os_memory(128ul << 20);
	int t = 2 * tally__fls(tally__nr_cpu_slots()) * (1 + tally__fls(mem128));
	return t < TALLY_VEC_MAX_THRESHOLD ? t : TALLY_VEC_MAX_THRESHOLD;
}

/*
 * Fold a slot's diff of item (p: its words there) while it is past the item's
 * threshold, by kind (TALLY__FOLD_PAST, _UP or _DOWN). Never folds an
 * item with threshold TALLY_VEC_EXACT.
 */
TALLY__INLINE void tally__vec_fold_at(struct tally_vec *v, struct tally__vec_pcpu *p,
				      unsigned item, enum tally__fold_kind kind)
{
	tally_sword t = v->tally__item_threshold[item];
	if (t < 0)
		return;
	/* After an overstep fold (inc, dec), re-check with mod's two-sided
	 * rule: the overstep rule's own re-check is one-sided (inc stops at
	 * diff <= t), and a mod racing with it on this slot (a migrated
	 * thread) can leave the diff far below -t. Sequentially the overstep
	 * leaves diff = -+t/2, which mod's rule keeps: no change there. */
	if (tally__pcpu_fold(&p->w, &p->base, &v->tally__global[item], t, kind) &&
	    kind != TALLY__FOLD_PAST)
		tally__pcpu_fold(&p->w, &p->base, &v->tally__global[item], t, TALLY__FOLD_PAST);
}

/* tally__vec_fold_at() for slot s's words of item. */
TALLY__INLINE void tally__vec_fold_slot(struct tally_vec *v, unsigned s, unsigned item,
					enum tally__fold_kind kind)
{
	tally__vec_fold_at(v, tally__vec_slot(v, s, item), item, kind);
}

/* The same for bank k of item in slot s (as mod: TALLY__FOLD_PAST). */
TALLY__INLINE void tally__vec_fold_bank(struct tally_vec *v, unsigned s, unsigned item, unsigned k)
{
	tally_sword t = v->tally__item_threshold[item];
	if (t < 0)
		return;
	tally__pcpu_fold(&tally__vec_bank(v, s, item)[k], &tally__vec_bank_base(v, s, item)[k],
			 &v->tally__global[item], t, TALLY__FOLD_PAST);
}

/*
 * The carry check. vmstat checks its rule after every update; here that
 * check loads the base with no fence after the per-CPU add (a plain rseq
 * store), so a fold from another CPU (tally_vec_fold, a migrated thread's
 * check) that races with it can miss the add, and each such race could
 * leave the slot up to one more threshold past the rule (the
 * store-buffering pair: "store w; load base" against the fold's "CAS
 * base; fence; load w"). So an update whose add moves its word across a
 * multiple of P, the largest power of two <= t, runs a full fence before
 * its check (tally__vec_fold_carried): one fence per P units a slot moves
 * one way, none on the other updates.
 *
 * The test is on the bits the add changed: old ^ new > t / 2. If it is
 * false, old and new differ only below the highest bit of t / 2, so they
 * share their P-aligned block (P = 2^fls(t / 2), the largest power of two
 * <= t; P = 1 for t = 1: every add fences). It may also be true for an add
 * that stays in its block (an extra fence, harmless). An item that never
 * folds (t < 0, a huge bound as unsigned) takes it only when the top bit
 * changes, and its check returns at once.
 *
 * The bound it buys (tests/formal/fold.pml, -DVEC): while updates are
 * quiescent every slot's |diff| <= t + P - 1 <= 2t - 1 (sequentially the
 * rules keep |diff| <= t: mod's by its check, inc's and dec's overstep
 * leave -+t/2). Let X be the slot's last successful fold (base T) and w_X
 * the w its re-check after its fence loaded: |w_X - T| <= t (every fold's
 * last re-check is two-sided: mod's rule, or fold_all's). An add not in
 * w_X that carried ran "store w; fence; load base" against X's "CAS base;
 * fence; load w", so it saw T, and so did every later check on that CPU
 * (loads stay in order); their checks kept the rule against T (a fold
 * would come after X). Otherwise every add after w_X stayed in w_X's
 * P-aligned block: within P - 1 of it.
 */
TALLY__INLINE int tally__vec_carried(tally_uword nv, tally_uword d, tally_sword t)
{
	return (nv ^ (nv - d)) > ((tally_uword)t >> 1);
}

/* The slow path of an update whose add carried: the fence, then the fold
 * check (see tally__vec_carried). */
TALLY__COLD void tally__vec_fold_carried(struct tally_vec *v, struct tally__vec_pcpu *p,
					 unsigned item, enum tally__fold_kind kind)
{
	tally__fence(); /* pairs with tally__pcpu_fold's fence after its CAS */
	tally__vec_fold_at(v, p, item, kind);
}

/* The same for bank k (multi-item updates, folded as mod). */
TALLY__COLD void tally__vec_fold_bank_carried(struct tally_vec *v, unsigned s, unsigned item,
					      unsigned k)
{
	tally__fence(); /* pairs with tally__pcpu_fold's fence after its CAS */
	tally__vec_fold_bank(v, s, item, k);
}

/* A single update: the per-CPU add, then the fold check of its slot. */
TALLY__INLINE int tally__vec_add(struct tally_vec *v, unsigned item, tally_sword d,
				 enum tally__fold_kind kind)
{
	tally_uword nv, *w;
	struct tally__vec_pcpu *p;
	if (tally__bad(!v || item >= v->tally__nr_items))
		return -EINVAL;
	/* The fold check works on the words the add landed in (w is the
	 * first of them): no slot number to compute and turn back. */
	nv = tally__pcpu_add_word(&v->tally__pcpu, (size_t)item * v->tally__item_stride,
				  (tally_uword)d, &w);
	p = (struct tally__vec_pcpu *)(void *)w;
	if (tally__unlikely(tally__vec_carried(nv, (tally_uword)d,
					       v->tally__item_threshold[item])))
		tally__vec_fold_carried(v, p, item, kind);
	else
		tally__vec_fold_at(v, p, item, kind);
	return 0;
}

/* Fold every written slot's diffs (w, and both banks) of every item that
 * folds: the slots below the written bound and the shared slot, the only
 * ones whose words are not all 0 (a slot at or above the bound has
 * w == base everywhere, nothing to fold). An add racing with the fold
 * into a slot it has not loaded in the bound is left for a later fold,
 * as any add racing with a fold is. */
static inline void tally__vec_fold_all(struct tally_vec *v)
{
	const struct tally__pcpu *pc = &v->tally__pcpu;
	unsigned s, i, k, lim = tally__pcpu_lim(pc);
	for (s = tally__pcpu_first(pc, lim); s <= pc->nr; s = tally__pcpu_next(pc, s, lim)) {
		for (i = 0; i < v->tally__nr_items; i++) {
			struct tally__vec_pcpu *p = tally__vec_slot(v, s, i);
			if (v->tally__item_threshold[i] < 0)
				continue;
			tally__pcpu_fold(&p->w, &p->base, &v->tally__global[i], 0, TALLY__FOLD_ALL);
			if (!tally__vec_has_banks(v, i))
				continue;
			for (k = 0; k < 2; k++)
				tally__pcpu_fold(&tally__vec_bank(v, s, i)[k],
						 &tally__vec_bank_base(v, s, i)[k],
						 &v->tally__global[i], 0, TALLY__FOLD_ALL);
		}
	}
}

#endif /* TALLY_VEC_FOLD_H */
