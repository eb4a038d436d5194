/*
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
 * Fold slot s's diff of item (its word w) while it is past the item's
 * threshold, by kind (TALLY__FOLD_PAST, _UP or _DOWN). Never folds an
 * item with threshold TALLY_VEC_EXACT.
 */
TALLY__INLINE void tally__vec_fold_slot(struct tally_vec *v, unsigned s, unsigned item,
					enum tally__fold_kind kind)
{
	struct tally__vec_pcpu *p = tally__vec_slot(v, s, item);
	tally_sword t = v->tally__item_threshold[item];
	if (t < 0)
		return;
	tally__pcpu_fold(&p->w, &p->base, &v->tally__global[item], t, kind);
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

/* A single update: the per-CPU add, then the fold check of its slot. */
TALLY__INLINE int tally__vec_add(struct tally_vec *v, unsigned item, tally_sword d,
				 enum tally__fold_kind kind)
{
	unsigned s;
	if (tally__bad(!v || item >= v->tally__nr_items))
		return -EINVAL;
	tally__pcpu_add(&v->tally__pcpu, (size_t)item * v->tally__item_stride, (tally_uword)d, &s);
	tally__vec_fold_slot(v, s, item, kind);
	return 0;
}

/* Fold every slot's diffs (w, and both banks) of every item that folds. */
static inline void tally__vec_fold_all(struct tally_vec *v)
{
	unsigned s, i, k, n = tally__pcpu_slots(&v->tally__pcpu);
	for (s = 0; s < n; s++) {
		for (i = 0; i < v->tally__nr_items; i++) {
			struct tally__vec_pcpu *p = tally__vec_slot(v, s, i);
			if (v->tally__item_threshold[i] < 0)
				continue;
			tally__pcpu_fold(&p->w, &p->base, &v->tally__global[i], 0, TALLY__FOLD_ALL);
			if (!(v->tally__flags & TALLY_VEC_MULTI))
				continue;
			for (k = 0; k < 2; k++)
				tally__pcpu_fold(&tally__vec_bank(v, s, i)[k],
						 &tally__vec_bank_base(v, s, i)[k],
						 &v->tally__global[i], 0, TALLY__FOLD_ALL);
		}
	}
}

#endif /* TALLY_VEC_FOLD_H */
