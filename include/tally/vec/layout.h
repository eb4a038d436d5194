/**
 * @file
 * tally/vec/layout.h - where tally_vec keeps its words (private; include
 * <tally/vec.h>): the per-CPU chunk of each slot, the words of one item in
 * it, a slot's value of an item, the exact sum over slots, the reset
 * baseline, and the vector's lock.
 *
 * A slot's chunk: item_stride bytes per item, then the banks of the
 * items that take part in multi-item updates (bank_of[item] numbers
 * them), then the slot's two in-flight counters (banks only where some
 * item has them: TALLY_VEC_MULTI, TALLY_VEC_ITEM_MULTI):
 *   item 0: w, base
 *   item 1: ...
 *   banks 0 (of item j with bank_of[j] == 0): bank[0], bank[1],
 *            bank_base[0], bank_base[1]
 *   banks 1: ...
 *   in-flight[0], in-flight[1]
 * w and the bank words are written by tally__pcpu_add only; their bases
 * by tally__pcpu_fold's CAS only (tally/pcpu.h, "the fold").
 *
 * The object is tracked (tally/pcpu.h, "the written bound"): no CPU slot
 * at or above lim holds a nonzero word, and readers, folds and the free
 * visit only the slots below it and the shared slot. Who keeps it so:
 * tally__pcpu_add* raise lim before they write w or a bank word (the
 * rseq section's lim check, the atomic paths' cover); a base changes only
 * by a fold of a slot whose w or bank an add wrote (the updater's check
 * on the slot its add landed in, tally_vec_fold on the slots below lim);
 * an in-flight counter's slot is raised before its increment
 * (tally__vec_add_multi, banks.h, which says why the cut sees it).
 */
#ifndef TALLY_VEC_LAYOUT_H
#define TALLY_VEC_LAYOUT_H

#if !defined(TALLY__VEC_INSIDE)
#  error "tally/vec/layout.h is private: include <tally/vec.h>"
#endif

/* A slot's first two words for one item; with TALLY_VEC_MULTI the bank
 * words and their bases follow (tally__vec_bank, tally__vec_bank_base). */
struct tally__vec_pcpu {
	tally_uword w;    /* never reset; written by tally__pcpu_add only */
	tally_uword base; /* w - the slot's unfolded diff; changed by CAS only */
};

/* Words per item in a slot's chunk; words of one item's banks. */
#define TALLY__VEC_WORDS 2u
#define TALLY__VEC_BANK_WORDS 4u
/* bank_of[item] of an item without banks. */
#define TALLY__VEC_NO_BANKS (~0u)

TALLY__INLINE struct tally__vec_pcpu *tally__vec_slot(const struct tally_vec *v, unsigned s,
						      unsigned item)
{
	return (struct tally__vec_pcpu *)tally__pcpu_at(&v->tally__pcpu, s,
							(size_t)item * v->tally__item_stride);
}

/* Does item take part in multi-item updates (has banks)? */
TALLY__INLINE bool tally__vec_has_banks(const struct tally_vec *v, unsigned item)
{
	return v->tally__bank_of[item] != TALLY__VEC_NO_BANKS;
}

/* Byte offset of item's banks in a slot's chunk (item has banks). */
TALLY__INLINE size_t tally__vec_banks_off(const struct tally_vec *v, unsigned item)
{
	return v->tally__banks_off +
	       (size_t)v->tally__bank_of[item] * TALLY__VEC_BANK_WORDS * sizeof(tally_uword);
}

/* Byte offset of item's bank word k in a slot's chunk (item has banks). */
TALLY__INLINE size_t tally__vec_bank_off(const struct tally_vec *v, unsigned item, unsigned k)
{
	return tally__vec_banks_off(v, item) + k * sizeof(tally_uword);
}

/* The bank words bank[0], bank[1] of item in slot s (item has banks). */
TALLY__INLINE tally_uword *tally__vec_bank(const struct tally_vec *v, unsigned s, unsigned item)
{
	return (tally_uword *)tally__pcpu_at(&v->tally__pcpu, s, tally__vec_banks_off(v, item));
}

/* The bases of the bank words (item has banks). */
TALLY__INLINE tally_uword *tally__vec_bank_base(const struct tally_vec *v, unsigned s,
						unsigned item)
{
	return tally__vec_bank(v, s, item) + 2;
}

/* Slot s's in-flight counters of multi-item updates, one per bank (a vec
 * with banks). */
TALLY__INLINE tally_uword *tally__vec_inflight(const struct tally_vec *v, unsigned s)
{
	return (tally_uword *)tally__pcpu_at(&v->tally__pcpu, s,
					     v->tally__banks_off + (size_t)v->tally__nr_banked *
									   TALLY__VEC_BANK_WORDS *
									   sizeof(tally_uword));
}

/* Slot s's raw value of item: w (+ both banks where it has them). */
TALLY__INLINE tally_uword tally__vec_value(const struct tally_vec *v, unsigned s, unsigned item)
{
	tally_uword x = tally__load(&tally__vec_slot(v, s, item)->w);
	if (tally__vec_has_banks(v, item)) {
		const tally_uword *bank = tally__vec_bank(v, s, item);
		x += tally__load(&bank[0]) + tally__load(&bank[1]);
	}
	return x;
}

/* item's raw exact value: the sum over the slots written (those below
 * the written bound and the shared slot, tally/pcpu.h: no other slot
 * holds anything; w, and banks). */
static inline tally_uword tally__vec_raw(const struct tally_vec *v, unsigned item)
{
	const struct tally__pcpu *p = &v->tally__pcpu;
	unsigned s, lim = tally__pcpu_lim(p);
	tally_uword sum = 0;
	for (s = tally__pcpu_first(p, lim); s <= p->nr; s = tally__pcpu_next(p, s, lim))
		sum += tally__vec_value(v, s, item);
	return sum;
}

/* item's reset baseline. acquire: pairs with the release store in reset,
 * so the words summed after it are at least as new as those the reset
 * summed (a since-reset value is never from before the baseline's cut). */
TALLY__INLINE tally_uword tally__vec_baseline(const struct tally_vec *v, unsigned item)
{
	return tally__load_acq(&v->tally__baseline[item]);
}

/* Set item's reset baseline to raw. release: pairs with
 * tally__vec_baseline()'s acquire load. Under the lock. */
TALLY__INLINE void tally__vec_set_baseline(struct tally_vec *v, unsigned item, tally_uword raw)
{
	tally__store_rel(&v->tally__baseline[item], raw);
}

/* The lock of snapshots of MULTI vecs and of resets. A reader holds it
 * too: the lock is not part of the vector's value (hence the cast). */
TALLY__INLINE void tally__vec_lock(const struct tally_vec *v)
{
	pthread_mutex_lock(&((struct tally_vec *)v)->tally__lock);
}

TALLY__INLINE void tally__vec_unlock(const struct tally_vec *v)
{
	pthread_mutex_unlock(&((struct tally_vec *)v)->tally__lock);
}

#endif /* TALLY_VEC_LAYOUT_H */
