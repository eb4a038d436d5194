/*
 * fold.pml - tally_counter's w/b fold (counter.h, pcpu.h) against an add on
 * the rseq fast path: is the store of w ordered before the adder's load of
 * b, and does it matter?
 *
 * Per CPU slot a never-reset word w and a base b; the shared count. The
 * original design (the default here; one CPU slot modelled, slot 0, batch
 * BATCH):
 *   tally_counter_add(d) on CPU 0, rseq path (tally__rseq_add): a plain
 *     load, add and store of w (no lock prefix, no fence), then always
 *   tally__counter_fold_slot(0, batch):
 *     loop { b0 = load_acquire(b); w0 = load(w); lc = w0 - b0;
 *            if (|lc| < limit) return;
 *            if (CAS_release(b, b0 -> w0)) count += lc;   (lock cmpxchg,
 *          }                                                lock xadd)
 *   a fold of slot 0 from another CPU, concurrently: fold_all
 *     (tally__counter_fold_slot(0, 1)), or with -DMIGRATED an adder that
 *     added batch on CPU 0 (its store visible: migration passes a full
 *     barrier) and, migrated, folds slot 0 with limit batch.
 * Memory (sbuf.pml, x86 TSO): the adder's plain store of w waits in its
 * store buffer; its load of b may be satisfied before that store is
 * visible; lock-prefixed CAS and add are full barriers.
 *
 * The adder makes NA adds, each delta chosen by SPIN from -2..2 but 0
 * (-3..3 with -DBIG); the folder folds once (NF times with -DNF=n). At the
 * end (everything returned, buffers empty) the model asserts
 *   count == b - b_start     no fold lost or doubled a count
 *                            (count - sum(b) never changes)
 *   w - w_start == deltas    the exact sum (tally_counter_sum) is exact
 *   |w - b| < BOUND          the slot's share of read()'s error (BOUND =
 *                            batch: what the original documented bound,
 *                            batch * slots while adds are quiescent, is
 *                            made of)
 * (w and b start at OFF, not 0, so that values stay positive for the carry
 * test below; the trails are given relative to it.)
 *
 * Result for the original design: sums stay exact and no count is lost or
 * doubled under any interleaving and store buffering (-DEXACT_ONLY), but
 * the error bound does not hold: a fold from another CPU racing an rseq
 * add can leave a slot at |w - b| >= batch after every call returned, and
 * each further race can add up to batch - 1 more (-DBIG ... -DBOUND=3), so
 * read() and tally_counter_compare() (which trusts read() outside the
 * bound) can be wrong by more than the documented bound. Sequentially
 * consistent memory keeps the bound (-DSC), and so does a lock-prefixed
 * add (-DLOCKED_ADD) or a membarrier() by remote folders (-DFIX_MEMB).
 *
 * Variants (spin -D...):
 *   (default)      fold_all vs the rseq add.          expected: FAIL (bound)
 *   -DMIGRATED     migrated adder's fold vs the add.   expected: FAIL (bound)
 *   -DEXACT_ONLY   only the first two assertions.     expected: PASS
 *   -DSC           the adder's store visible at once. expected: PASS
 *   -DLOCKED_ADD   the add is a lock-prefixed RMW (the atomic path on x86:
 *                  TALLY_PCPU_MODE=1, the shared slot). expected: PASS
 *   -DFIX_MEMB     a remote folder, after a successful CAS, issues
 *                  membarrier() (every buffer empty at one instant) before
 *                  it re-checks.                       expected: PASS
 * The carry-checked design (-DCARRY; tally_counter_add() checks only when
 * its add moved w across a multiple of batch, a power of two, and then
 * runs a fence before it folds with limit batch; every fold runs a fence
 * before its loads (fold_all) and after each successful CAS; documented
 * bound 2 * batch per slot):
 *   -DCARRY -DBATCH=4 -DBOUND=8 -DBIG -DNA=3 -DNF=2    expected: PASS
 *   -DCARRY -DBATCH=4 -DBOUND=8 -DMIGRATED -DBIG -DNA=3 expected: PASS
 *   -DCARRY -DCARRY_NOFENCE -DBATCH=2 -DBOUND=4 -DBIG -DNA=4 -DNF=3: the
 *                  slow path without its fence.        expected: FAIL
 *   -DCARRY -DBATCH=4 -DBOUND=4 -DBIG -DNA=3 -DNF=2 -DSC: a bound of batch
 *                  (not 2 * batch) fails even sequentially consistent:
 *                  the carry check lets a slot hold up to 2 * batch - 2.
 *                                                      expected: FAIL
 *   -DCARRY -DBATCH=2 -DBOUND=4 -DBIG -DNA=4 -DNF=3: 2.9 million states,
 *                  check.sh runs it when FORMAL_LONG=1. expected: PASS
 * Old design, more variants:
 *   -DBIG -DNA=3 -DNF=2 -DBOUND=3: deltas up to 3, two folds: a second
 *                  race takes the slot to |local| 3 (each race can add
 *                  batch - 1 more).                    expected: FAIL
 *
 * The vector's rule (-DVEC; tally_vec_mod, vec.h and vec/fold.h): the
 * adder checks after every add, vmstat's way: fold while |w - b| > THR
 * (TALLY__FOLD_PAST, limit THR + 1 here); the folder is tally_vec_fold
 * (fold_all, every fold followed by a fence and a re-check). The
 * documented per-slot bound is what the rule keeps sequentially:
 * |w - b| <= THR (BOUND = THR + 1).
 *   -DVEC -DTHR=1 -DBIG -DNA=3    no fence between the add and the check
 *                  (the code before the carry fence). expected: FAIL
 *   the same with -DMIGRATED (a migrated adder's fold). expected: FAIL
 *   -DVEC -DTHR=1 -DBIG -DNA=3 -DNF=2 -DBOUND=3: with repeated races even
 *                  2 * THR is passed (each race can add up to THR).
 *                                                      expected: FAIL
 *   -DVEC -DVEC_CARRY -DTHR=2 -DBATCH=2 -DBOUND=4 -DBIG -DNA=3 -DNF=2: an
 *                  add that moves w across a multiple of BATCH (P, the
 *                  largest power of two <= THR: tally__vec_carried)
 *                  runs a fence before its check. Bound THR + P - 1 per
 *                  slot (BOUND = THR + P).              expected: PASS
 *   -DVEC -DVEC_CARRY -DTHR=3 -DBATCH=2 -DBOUND=5 -DBIG -DNA=3 -DMIGRATED:
 *                  the same against a migrated fold.   expected: PASS
 *   -DVEC -DVEC_CARRY -DTHR=1 -DBATCH=1 -DBOUND=2 ... -DSC: sequentially
 *                  consistent, the rule's own bound THR. expected: PASS
 *   -DVEC -DVEC_CARRY -DVEC_NOFENCE -DTHR=2 -DBATCH=2 -DBOUND=4 ...: the
 *                  carry check without its fence.       expected: FAIL
 * Why the carry fence bounds it (the argument in vec/fold.h): let X be the
 * slot's last successful fold (base T) and w_X the w its re-check after
 * its fence loaded (|w_X - T| <= THR, or 0 for fold_all). An add whose
 * store is not in w_X and that carried ran "store w; fence; load b"
 * against X's "CAS b; fence; load w": it saw T, and its check kept
 * |w - T| <= THR (a fold would come after X). The final w is in the
 * BATCH-aligned block of the last such add, or of w_X: within BATCH - 1
 * of a value within THR of T.
 *
 * The counter tree (-DTREE; tally/counter/tree.h, percpu_counter_tree):
 * two CPUs' words (rseq: plain load, add, store, buffered), one level-1
 * node they share and the top. An add passes the change of its word's
 * batch-aligned part (batch B0 = 2) to the node with one atomic add, and
 * the node passes the change of its aligned part (B1 = 2 * B0 here: two
 * children) to the top the same way, each computed from the value the
 * add itself returned. At the end the model asserts that the node and
 * the top hold exactly what the rule gives from the final words (node =
 * sum of their aligned parts, top = the node's aligned part), that the
 * exact sum is exact, and 0 <= sum - top < E = 1 + 2 * (B0 - 1) + (B1 -
 * B0) (the header's bound).
 *   -DTREE -DBIG -DNA=2            expected: PASS (and with NA=3, the
 *                  default, 14 million states: FORMAL_LONG=1)
 *   -DTREE -DBIG -DNA=2 -DTREE_RELAXED   the node's add a relaxed RMW (weak
 *                  memory: later loads may pass it): no fence is part of
 *                  the argument.                        expected: PASS
 *   -DTREE -DBIG -DNA=2 -DTREE_RELOAD    the node's carry computed from a fresh
 *                  load of the node instead of its add's result (two
 *                  carriers can both pass one crossing, or neither).
 *                                                      expected: FAIL
 *   -DTREE -DBIG -DNA=2 -DTREE_BOUND=4   a bound one tighter than the header's
 *                  E is reached.                        expected: FAIL
 *
 * Trail of the default variant (spin -t -p fold.pml), summarized, batch 2,
 * values relative to the start:
 *   A: add -1: w = -1 (visible), its fold sees local -1: |-1| < 2, returns.
 *   A: add +2: w = 1 goes into A's store buffer.
 *   F (fold_all): loads b = 0, w = -1 (A's store not visible): local -1.
 *   A: its fold loads b = 0 (F's CAS not done) and w = 1 (its own store,
 *      forwarded): local 1 < 2: returns without folding.
 *   F: CAS b 0 -> -1 succeeds; count += -1; re-checks: b = -1, w = -1
 *      (A's store still buffered): local 0: returns.
 *   A's store lands: w = 1, b = -1: the slot holds local 2 = batch at
 *   quiescence, which no fold will take until the slot's next add.
 * Sequentially consistent memory (-DSC) cannot do this: A's store precedes
 * its load of b, which precedes F's CAS, so F's re-check sees w = 1 and
 * folds it. It is the store-buffering pair
 *     adder:  store w;   load b        folder: CAS b;   load w
 * and only the folder side has a barrier (the lock-prefixed CAS).
 */

#ifdef TREE
#define SBUF_T short
#define L0 0
#define L1 1
#define NODE 2
#define TOP 3
#define NV 4
#define NP 2
#define BUFSZ 2
#define B0 2
#define B1 4
#ifndef NA
#define NA 3
#endif
#ifndef TREE_BOUND
#define TREE_BOUND (1 + 2 * (B0 - 1) + (B1 - B0))
#endif

#include "sbuf.pml"

short total = 0;
byte done = 0;

/* x aligned down to a multiple of b (a power of two; two's complement) */
#define ALIGN(x, b) ((x) & ~((b) - 1))

proctype tadder(byte id)
{
	short t, d, c, nv;
	byte k = 0;
	do
	:: k < NA ->
		if
		:: d = -2
		:: d = -1
		:: d = 1
		:: d = 2
#ifdef BIG
		:: d = -3
		:: d = 3
#endif
		fi;
		load(id, id, t);          /* rseq: plain load, add, store */
		bstore(id, id, t + d);
		total = total + d;
		c = ALIGN(t + d, B0) - ALIGN(t, B0);
		if
		:: c != 0 ->
#if defined(TREE_RELAXED)
			rmw_add_buf(id, NODE, c, nv);
			nv = nv + c;
#elif defined(TREE_RELOAD)
			rmw_add_mem(id, NODE, c);
			load(id, NODE, nv);
#else
			atomic { buf[id].n == 0 && inbuf[NODE] == 0 ->
				 nv = mem[NODE] + c; mem[NODE] = nv }
#endif
			c = ALIGN(nv, B1) - ALIGN(nv - c, B1);
			if
			:: c != 0 -> rmw_add_mem(id, TOP, c)
			:: else -> skip
			fi
		:: else -> skip
		fi;
		k++
	:: else -> break
	od;
	done++
}

init
{
	atomic {
		run drainer(0);
		run drainer(1);
		run tadder(0);
		run tadder(1)
	}
	done == 2 && buf[0].n == 0 && buf[1].n == 0;
	assert(mem[L0] + mem[L1] == total);
	assert(mem[NODE] == ALIGN(mem[L0], B0) + ALIGN(mem[L1], B0));
	assert(mem[TOP] == ALIGN(mem[NODE], B1));
	assert(total - mem[TOP] >= 0 && total - mem[TOP] < TREE_BOUND)
}
#else
#define SBUF_T short
#define W 0
#define B 1
#define COUNT 2
#define NV 3
#define PA 0 /* the adder, on CPU 0 */
#define PF 1 /* the folder, on another CPU */
#define NP 2
#define BUFSZ 2
#ifndef BATCH
#define BATCH 2
#endif
#define OFF 16 /* w and b start here, so the words stay positive (carry test) */
#ifndef NA
#define NA 2
#endif
#ifndef NF
#define NF 1
#endif
#ifndef THR
#define THR 1
#endif
#ifndef BOUND
#ifdef VEC
#define BOUND (THR + 1)
#else
#define BOUND BATCH
#endif
#endif
/* The adder's fold check: the counter's limit is batch (fold at |local| >=
 * batch), the vector's THR + 1 (fold past THR). */
#ifdef VEC
#define ADD_LIMIT (THR + 1)
#else
#define ADD_LIMIT BATCH
#endif

#include "sbuf.pml"

#ifdef CARRY_NOFENCE
#define CARRY_FENCE(me) skip
#else
#define CARRY_FENCE(me) barrier(me)
#endif
#ifdef VEC_NOFENCE
#define VEC_FENCE(me) skip
#else
#define VEC_FENCE(me) barrier(me)
#endif

short total = 0; /* the deltas added (ghost) */
byte done = 0;
bit m_added = 0;

inline fold_slot(me, limit, remote)
{
	do
	:: load(me, B, b0);
	   load(me, W, w0);
	   lc = w0 - b0;
	   if
	   :: lc < limit && lc > -limit -> break
	   :: else ->
		rmw_cas_mem(me, B, b0, w0, ok);
		if
		:: ok ->
			rmw_add_mem(me, COUNT, lc);
#if defined(CARRY) || defined(VEC)
			barrier(me); /* the fence after a successful CAS */
#endif
#ifdef FIX_MEMB
			if
			:: remote -> (buf[PA].n == 0 && buf[PF].n == 0)
			:: else -> skip
			fi
#endif
		:: else -> skip
		fi
	   fi
	od
}

proctype adder()
{
	short t, d, b0, w0, lc;
	bit ok;
	byte k = 0;
	m_added == 1;
	do
	:: k < NA ->
		if
		:: d = -2
		:: d = -1
		:: d = 1
		:: d = 2
#ifdef BIG
		:: d = -3
		:: d = 3
#endif
		fi;
#ifdef LOCKED_ADD
		rmw_add_mem(PA, W, d);
#else
		load(PA, W, t);          /* rseq: plain load, add, store */
		bstore(PA, W, t + d);
#ifdef SC
		barrier(PA);
#endif
#endif
		total = total + d;
#if defined(VEC)
		/* vmstat's rule: the check after every add; with VEC_CARRY an
		 * add whose w crossed a multiple of BATCH fences first */
#ifdef VEC_CARRY
		if
		:: (t + d) / BATCH != t / BATCH -> VEC_FENCE(PA)
		:: else -> skip
		fi;
#endif
		fold_slot(PA, ADD_LIMIT, 0);
#elif defined(CARRY)
		/* only an add whose w crossed a multiple of batch: fence, fold */
		if
		:: (t + d) / BATCH != t / BATCH -> CARRY_FENCE(PA); fold_slot(PA, BATCH, 0)
		:: else -> skip
		fi;
#else
		fold_slot(PA, BATCH, 0);
#endif
		k++
	:: else -> break
	od;
	done++
}

proctype folder()
{
	short b0, w0, lc;
	bit ok;
	byte k = 0;
#ifdef MIGRATED
	/* added batch on CPU 0 before A's adds, then migrated (full barrier) */
	rmw_add_mem(PF, W, BATCH);
	total = total + BATCH;
	m_added = 1;
	fold_slot(PF, ADD_LIMIT, 1);
#else
	m_added = 1;
	do
	:: k < NF ->
#ifdef CARRY
		barrier(PF); /* tally__counter_fold_slot's fence */
#endif
		fold_slot(PF, 1, 1); k++ /* fold_all */
	:: else -> break
	od;
#endif
	done++
}

init
{
	mem[W] = OFF;
	mem[B] = OFF;
	atomic {
		run drainer(PA);
		run drainer(PF);
		run adder();
		run folder()
	}
	done == 2 && buf[PA].n == 0 && buf[PF].n == 0;
	assert(mem[COUNT] == mem[B] - OFF);
	assert(mem[W] - OFF == total);
#ifndef EXACT_ONLY
	assert(mem[W] - mem[B] < BOUND && mem[W] - mem[B] > -BOUND)
#endif
}
#endif /* TREE */
