/**
 * @file
 * tally/vec/banks.h - multi-item updates seen whole (private; include
 * <tally/vec.h>): the two banks of TALLY_VEC_MULTI / TALLY_VEC_ITEM_MULTI,
 * the update that adds to the active one, and the cut that snapshots and
 * resets take.
 *
 * Each CPU slot and item that takes part has two bank words, bank[0] and
 * bank[1], beside its word w. A multi-item update adds all of its deltas to the bank that
 * is active when it starts (tally__active_bank), announcing itself in the
 * slot's in-flight counter for that bank while it adds. A cut (under the
 * vector's lock) reads every w and the idle bank, makes the idle bank the
 * active one, waits until no update is in flight into the bank that was
 * active, and then reads that one too. So each multi-item update is in a
 * cut wholly or not at all (see tally__vec_cut).
 *
 * Ordering: the update's increment of its in-flight counter and its
 * re-load of the active bank are seq_cst, as are the cut's store of the
 * active bank and its loads of the in-flight counters (store buffering:
 * one of the two sees the other). The cut also runs a full fence
 * between its store and its loads (tally__vec_cut says why). The update's
 * decrement is a release, so its adds come before the cut's (seq_cst, so
 * acquire) load that sees the counter drained.
 */
#ifndef TALLY_VEC_BANKS_H
#define TALLY_VEC_BANKS_H

#if !defined(TALLY__VEC_INSIDE)
#  error "tally/vec/banks.h is private: include <tally/vec.h>"
#endif

/* The body of tally_vec_mod_multi (arguments checked, n > 0, some item
 * of v has banks). The parts whose items have banks go to the active bank
 * as one update; the others (no TALLY_VEC_ITEM_MULTI) are applied after
 * it as single updates (tally_vec_mod's), each seen on its own: a count
 * is never dropped, but only the banked parts are seen whole. */
static inline void tally__vec_add_multi(struct tally_vec *v, const struct tally_vec_delta *d,
					unsigned n)
{
	unsigned i, s, k, single = 0;
	tally_uword *in;
	/* The in-flight counters take atomic RMWs only, so any slot's is
	 * correct; the current CPU's keeps the line local. The adds go
	 * through tally__pcpu_add like single updates (rseq where it can)
	 * and may land on other slots if the thread migrates: the cut
	 * drains every slot's counter before it reads any slot's bank. */
	s = tally__cpu() % v->tally__pcpu.nr;
	in = tally__vec_inflight(v, s);
	for (;;) {
		k = tally__load(&v->tally__active_bank);
		/* seq_cst increment, then seq_cst re-load of the active bank:
		 * pairs with the cut's seq_cst store of it and then seq_cst
		 * load of this counter (store buffering). Either this re-load
		 * sees the new active bank, or the cut sees this increment and
		 * waits for the decrement below. */
		__atomic_fetch_add(&in[k], 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&v->tally__active_bank, __ATOMIC_SEQ_CST) == k)
			break;
		/* A cut switched banks: nothing was added to bank k. */
		__atomic_fetch_sub(&in[k], 1, __ATOMIC_RELAXED);
	}
	for (i = 0; i < n; i++) {
		unsigned at;
		tally_uword nv;
		if (tally__unlikely(!tally__vec_has_banks(v, d[i].item))) {
			single++;
			continue;
		}
		nv = tally__pcpu_add(&v->tally__pcpu, tally__vec_bank_off(v, d[i].item, k),
				     (tally_uword)d[i].delta, &at);
		if (tally__unlikely(tally__vec_carried(nv, (tally_uword)d[i].delta,
						       v->tally__item_threshold[d[i].item])))
			tally__vec_fold_bank_carried(v, at, d[i].item, k);
		else
			tally__vec_fold_bank(v, at, d[i].item, k);
	}
	/* release: the adds above come before the decrement, which the cut's
	 * drain loads (seq_cst, so acquire) before it reads bank k. */
	__atomic_fetch_sub(&in[k], 1, __ATOMIC_RELEASE);
	for (i = 0; single && i < n; i++)
		if (!tally__vec_has_banks(v, d[i].item)) {
			(void)tally__vec_add(v, d[i].item, d[i].delta, TALLY__FOLD_PAST);
			single--;
		}
}

/* Wait until no slot has a multi-item update in flight into bank k. */
static inline void tally__vec_drain(const struct tally_vec *v, unsigned k)
{
	unsigned s, slots = tally__pcpu_slots(&v->tally__pcpu);
	/* Every slot's counter: an update's adds may have landed on other
	 * slots than its counter's. */
	for (s = 0; s < slots; s++) {
		tally_uword *in = tally__vec_inflight(v, s);
		unsigned spins = 0;
		/* seq_cst (so acquire): pairs with the update's release
		 * decrement, so its adds to bank k are seen after this. */
		while (__atomic_load_n(&in[k], __ATOMIC_SEQ_CST)) {
			if (++spins < 128) {
				tally__cpu_relax();
			} else {
				tally__os_yield(); /* an updater was preempted mid-update */
				spins = 0;
			}
		}
	}
}

/*
 * Every item's raw exact value into out[0..nr_items-1]: one pass over each
 * CPU's chunk. With TALLY_VEC_MULTI (caller holds the lock): the pass
 * reads w and the idle bank, then the idle bank becomes the active one
 * and, once no CPU has an update in flight into the bank that was active,
 * that bank's words are added too. Every multi-item update went wholly to
 * one bank: to the idle one before the previous switch (read in the pass),
 * or to the active one before this switch (read after it drained), or
 * after this switch (in neither: the idle bank was read before it).
 */
static inline void tally__vec_cut(const struct tally_vec *v, tally_uword *out)
{
	struct tally_vec *m = (struct tally_vec *)v; /* the active bank only */
	unsigned s, i, nr = v->tally__nr_items, slots = tally__pcpu_slots(&v->tally__pcpu);
	unsigned active, idle;
	memset(out, 0, (size_t)nr * sizeof(*out));
	if (!(v->tally__flags & TALLY_VEC_MULTI)) {
		for (s = 0; s < slots; s++)
			for (i = 0; i < nr; i++)
				out[i] += tally__load(&tally__vec_slot(v, s, i)->w);
		return;
	}
	active = tally__load(&v->tally__active_bank); /* only lock holders store it */
	idle = active ^ 1u;
	for (s = 0; s < slots; s++)
		for (i = 0; i < nr; i++) {
			out[i] += tally__load(&tally__vec_slot(v, s, i)->w);
			if (tally__vec_has_banks(v, i))
				out[i] += tally__load(&tally__vec_bank(v, s, i)[idle]);
		}
	/* seq_cst: pairs with the update's seq_cst increment and re-load
	 * (tally__vec_add_multi). */
	__atomic_store_n(&m->tally__active_bank, idle, __ATOMIC_SEQ_CST);
	/*
	 * A full fence: the store above before the drain's loads of the
	 * in-flight counters (store buffering, against the update's
	 * "increment; re-load"). C11 orders a seq_cst store before a later
	 * seq_cst load already, but on aarch64 only through STLR -> LDAR
	 * being ordered (RCsc), and not every machine that runs the code
	 * keeps that: qemu-user (7.2 here) on an x86_64 host translates STLR as
	 * "fence; store" and LDAR as "load; fence", so the host's store
	 * buffer let the drain load a counter as 0 while an update that had
	 * just incremented it re-loaded the old bank: the update added to
	 * the bank this cut then read, and the cut held part of it
	 * (stress_vec_multi, aarch64 under qemu: "cmd_get 4 != get_hits 3 +
	 * get_misses 0" in 5-9 runs of 12; tests/plain/vec_cut_order.c).
	 * The fence does not rest on the mapping (dmb ish on aarch64, a
	 * locked RMW on x86), as the kernel's smp_mb() between a store and
	 * a load; one per cut, under the lock. The update's side keeps its
	 * order through its increment, an atomic RMW: a locked instruction
	 * on x86 and under qemu-user, and on aarch64 a release (LDADDAL,
	 * STLXR) that its LDAR re-load stays after.
	 */
	tally__fence();
	tally__vec_drain(v, active);
	for (s = 0; s < slots; s++)
		for (i = 0; i < nr; i++)
			if (tally__vec_has_banks(v, i))
				out[i] += tally__load(&tally__vec_bank(v, s, i)[active]);
}

#endif /* TALLY_VEC_BANKS_H */
