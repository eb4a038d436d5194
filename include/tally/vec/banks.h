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
 *
 * The written bound (tally/pcpu.h): the drain loads only the in-flight
 * counters of the slots below lim, so an update's counter must be in the
 * bound the drain loads whenever the cut has to wait for it. The update
 * makes it so before its increment and checks it with a seq_cst load of
 * lim; the cut loads lim after its full fence (tally__vec_add_multi says
 * why that pair cannot miss). The adds themselves raise lim for their
 * slots (tally__pcpu_add), before the decrement that the drain acquires,
 * so the cut's pass over the drained bank, which loads lim again after
 * the drain, visits every slot they wrote.
 */
#ifndef TALLY_VEC_BANKS_H
#define TALLY_VEC_BANKS_H

#if !defined(TALLY__VEC_INSIDE)
#  error "tally/vec/banks.h is private: include <tally/vec.h>"
#endif

/* Raise v's written bound over CPU slot s (< nr), whose in-flight
 * counters a multi-item update is about to increment, then a full fence:
 * the cut's drain must see the raise if it must see the increment
 * (tally__vec_add_multi says why). Once per slot and vector. */
TALLY__COLD void tally__vec_cover_inflight(struct tally_vec *v, unsigned s)
{
	tally__pcpu_raise(&v->tally__pcpu, s);
	tally__fence();
}

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
	/*
	 * The counter's slot in the written bound before the increment, so
	 * that the cut, whose drain loads only the counters below lim, sees
	 * it. The pair (C11's seq_cst total order S; F the cut's fence, then
	 * its load of lim, L): say this update re-loads the old bank (so the
	 * cut must wait for it) and L misses the raise that covers s.
	 *   This load of lim is seq_cst and reads lim > s: L reads an older
	 *   value, so L is coherence-ordered before this load, and F happens
	 *   before L: F precedes this load in S. But this load, the
	 *   increment and the re-load are seq_cst in program order, and the
	 *   re-load reads the active bank before the cut's seq_cst store of
	 *   it, which comes before F: this load precedes F in S.
	 *   Or it reads lim <= s: the raise (relaxed) is followed by a
	 *   seq_cst fence Y (tally__vec_cover_inflight); L is coherence-
	 *   ordered before the raise, so F precedes Y in S; and Y precedes
	 *   the re-load, hence the cut's store and F, in S.
	 * Both are cycles, so L sees lim > s. On the fast path one load (on
	 * x86 a plain mov; LDAR on aarch64, ordered before the increment's
	 * LDADDAL as the re-load after it is); a raise once per slot and
	 * vector. Single updates pay nothing: their lim check is the rseq
	 * section's (tally__pcpu_add).
	 */
	if (tally__unlikely(__atomic_load_n(&v->tally__pcpu.lim, __ATOMIC_SEQ_CST) <= s))
		tally__vec_cover_inflight(v, s);
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

/* Wait until no slot has a multi-item update in flight into bank k.
 * After the cut's full fence (lim loaded here, after it: see
 * tally__vec_add_multi). */
static inline void tally__vec_drain(const struct tally_vec *v, unsigned k)
{
	unsigned s, lim = tally__pcpu_lim(&v->tally__pcpu);
	/* Every written CPU slot's counter (no update increments the shared
	 * slot's, nor one at or above lim: it raised lim over its slot
	 * first): an update's adds may have landed on other slots than its
	 * counter's. */
	for (s = 0; s < lim; s++) {
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
	const struct tally__pcpu *p = &v->tally__pcpu;
	unsigned s, i, nr = v->tally__nr_items, lim = tally__pcpu_lim(p);
	unsigned active, idle;
	memset(out, 0, (size_t)nr * sizeof(*out));
	if (!(v->tally__flags & TALLY_VEC_MULTI)) {
		for (s = tally__pcpu_first(p, lim); s <= p->nr; s = tally__pcpu_next(p, s, lim))
			for (i = 0; i < nr; i++)
				out[i] += tally__load(&tally__vec_slot(v, s, i)->w);
		return;
	}
	active = tally__load(&v->tally__active_bank); /* only lock holders store it */
	idle = active ^ 1u;
	/* The slots written (the written bound, tally/pcpu.h): an update that
	 * completed before the cut, or went to the idle bank (drained by an
	 * earlier cut, whose lock this cut took after), raised lim over its
	 * slots before it wrote them. */
	for (s = tally__pcpu_first(p, lim); s <= p->nr; s = tally__pcpu_next(p, s, lim))
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
	/* lim again, after the drain: the adds of the updates it waited for
	 * raised lim over their slots before the decrements it acquired. */
	lim = tally__pcpu_lim(p);
	for (s = tally__pcpu_first(p, lim); s <= p->nr; s = tally__pcpu_next(p, s, lim))
		for (i = 0; i < nr; i++)
			if (tally__vec_has_banks(v, i))
				out[i] += tally__load(&tally__vec_bank(v, s, i)[active]);
}

#endif /* TALLY_VEC_BANKS_H */
