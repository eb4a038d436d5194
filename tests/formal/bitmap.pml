/*
 * bitmap.pml - the updated-group protocol of tally_group_mod() and the
 * flush with a two-level dirty bitmap per CPU slot (the fix for the
 * preempted-push miss shown by old_push.pml): no list, no claim, so no
 * updater can hold the group "half queued".
 *
 * Per slot: a summary bit (some leaf of this slot may be set) and per group
 * a leaf bit. Locations: the groups' words, their leaf bits, the summary.
 *   updater:  word += d;  BARRIER_U;
 *             if (!leaf) leaf = 1;   (a load, then an atomic OR/xchg)
 *             if (!summ) summ = 1;   (likewise)
 *   drain (flush lock held):
 *             if (summ) { xchg(summ, 0);
 *                         for each group: if (leaf) { if (xchg(leaf, 0))
 *                                                       link the group } }
 *   flush:    drain; BARRIER_F; read the word of every linked group;
 *             drain; BARRIER_F; read again (the flush drains twice)
 * Processes: updaters A and B on group 0, C on group 1 (C's update sets the
 * summary bit, which group 0 shares), and one flusher that flushes twice:
 * F0, at any moment, then F1, which starts after A's tally_group_mod() returned (A
 * publishes a_done after returning; its stores land in order, so F1 sees
 * them: happens-after). SPIN interleaves every step (any preemption).
 *
 * Property (assertion at the end of F1): F1, or F0 before it, read group
 * 0's word with A's delta in it.
 *
 * Memory (sbuf.pml): each process has a FIFO store buffer; a load may pass
 * the process's earlier stores (store->load reordering). The word add
 * (a plain store under rseq, a relaxed RMW otherwise) always goes through
 * the buffer. Variants, chosen with spin -D...:
 *   (default)        bit ORs and xchgs are full barriers (x86 lock-prefixed
 *                    instructions; seq_cst RMWs); BARRIER_U, BARRIER_F full
 *                    fences.                               expected: PASS
 *   -DNOBARRIER      no BARRIER_U / BARRIER_F: the pair
 *                      updater: word += d; load leaf (sees it still set)
 *                      flusher: xchg(leaf, 0); load word (misses d)
 *                    is store buffering.                   expected: FAIL
 *   -DRELAXED_RMW    the bit ORs and xchgs are relaxed (their stores go
 *                    through the buffer), barriers kept. expected: FAIL
 *                    (a second store-buffering pair, on the two bits:
 *                      updater: leaf = 1;  load summ (still 1: the clear
 *                               is buffered) -> skips the summary
 *                      drain:   summ = 0;  load leaf (still 0)
 *                    leaves leaf set under a clear summary: no drain looks
 *                    at the group again.)
 *   -DRELAXED_RMW -DBIT_FENCES  relaxed RMWs plus a full fence between the
 *                    updater's leaf OR and its summary load and between the
 *                    drain's summary xchg and its leaf load. expected: PASS
 *   -DMEMBARRIER     the opt-in asymmetric pairing (TALLY_RSTAT_MEMBARRIER=1):
 *                    BARRIER_U a compiler barrier only, BARRIER_F
 *                    membarrier() (every thread passes a full barrier
 *                    while it runs: all buffers empty at one instant).
 *                                                          expected: PASS
 *   -DLEAF_WORD      as tally__rstat_mark_dirty() / tally__rstat_drain()
 *                    lay the bits out: groups 0 and 1 share one leaf word
 *                    (bits 1 << g) under one summary bit; an update ORs its
 *                    bit in only if clear; the drain exchanges the summary,
 *                    then the whole leaf word (no load first), and links
 *                    the groups whose bits it took. Combines with the
 *                    flags above; check.sh runs it alone (PASS), with
 *                    -DNOBARRIER (FAIL), -DMEMBARRIER (PASS). With
 *                    -DRELAXED_RMW it passes here only because this memory
 *                    model keeps a process's stores in order (TSO) and the
 *                    drain's leaf clear then waits behind its summary
 *                    clear: no evidence for relaxed bit RMWs on CPUs that
 *                    reorder stores (not modelled).
 *   -DBYTES          the rseq path of x86_64 (tally__rstat_rseq_mod()):
 *                    each slot's record has a mark half (a 32-bit mark
 *                    per group, a summary mark; bytes in the model: the
 *                    width changes nothing here) that an update whose rseq add landed
 *                    on the slot sets with two plain stores of 1,
 *                    leaf then summary, right after the add's section,
 *                    outside any section (on another CPU if it migrated:
 *                    no exclusion, nothing read), every time, no barrier.
 *                    A and C do that; B does it or (a group whose chunk
 *                    is too big for it) the fenced protocol on the shared
 *                    half after its section's add. The drain
 *                    exchanges the summary byte, then both groups' bytes
 *                    in one step (one 64-bit exchange around them); its
 *                    exchanges do not wait for a buffered byte store.
 *                    Alone (PASS), with -DMEMBARRIER (PASS), with
 *                    -DBYTES_SKIP, where the update skips its stores when
 *                    both bytes are already set: the store-buffering pair
 *                    again (FAIL), and with -DBYTES_FIRST, where the bytes
 *                    are stored before the add (the drain takes them and
 *                    reads the word before the add lands: FAIL).
 *   -DSC             sequentially consistent: every store visible at once.
 *                                                          expected: PASS
 *   -DSC -DNOBARRIER passes too: the barriers matter only because stores
 *                    can be buffered.                      expected: PASS
 *
 * Trail of -DNOBARRIER (spin -t -p -DNOBARRIER bitmap.pml), summarized:
 *   B: word += 2 (visible), leaf0 = 1, summ = 1.
 *   A: word += 1 into its store buffer; loads leaf0 == 1 and summ == 1 (B's):
 *      skips both, returns.
 *   F0: xchg(summ, 0), xchg(leaf0, 0): links group 0; loads the word: 2,
 *      without A's delta (still buffered).
 *   A's store lands: word = 3; A's a_done lands after it.
 *   F1: summ == 0: nothing to drain, no word read: A's delta is missed.
 * Trail of -DRELAXED_RMW (shortest, pan -i), summarized:
 *   C: word1 += 4; leaf1 = 1; summ = 1 (all visible).
 *   F0's drain: xchg(summ, 0): the clear sits in F's buffer; loads
 *      leaf0 == 0; takes leaf1 and links group 1.
 *   A: word0 += 1; barrier; leaf0 == 0, so leaf0 = 1; loads summ == 1
 *      (F's clear still buffered): skips the summary; returns.
 *   F's clear lands: leaf0 == 1 under summ == 0.
 *   F1: summ == 0, nothing drained: A's delta is missed (and stays missed
 *      until some update of the slot sets the summary again).
 *
 * State counts and times: check.sh prints them for every variant.
 */

#define NG 2     /* groups */
#define WORD0 0  /* WORD0 + g: group g's word on this slot */
#define LEAF0 2  /* LEAF0 + g: group g's leaf bit */
#define LEAFW 2  /* with -DLEAF_WORD: one leaf word, bit 1 << g for group g */
#define SUMM 4
#define ADONE 5  /* A's mod returned */
#if defined(BYTES)
#define LEAF_WORD 1
#define OLEAF0 6 /* the byte half: OLEAF0 + g, group g's byte; the summary */
#define OSUMM 8
#define NV 9
#else
#define NV 6
#endif

#define PA 0
#define PB 1
#define PC 2
#define PF 3
#define NP 4
#define BUFSZ 3

#define DA 1
#define DB 2
#define DC 4

#include "sbuf.pml"

bit linked[NG];  /* in the slot's updated tree (flush lock) */
byte seen0;      /* group 0's word as last read by a flush */

#if defined(NOBARRIER)
#define BARRIER_U(me) skip
#define BARRIER_F(me) skip
#elif defined(MEMBARRIER) && defined(BYTES)
/* membarrier() only when the drain cleared a bit of the shared half */
#define BARRIER_U(me) skip
#define BARRIER_F(me) \
	if \
	:: sh -> (buf[PA].n == 0 && buf[PB].n == 0 && buf[PC].n == 0 && buf[PF].n == 0) \
	:: else -> skip \
	fi
#elif defined(MEMBARRIER)
/* membarrier(): every other thread executes a full barrier somewhere in
 * its program while the call runs: at one instant all buffers are empty */
#define BARRIER_U(me) skip
#define BARRIER_F(me) (buf[PA].n == 0 && buf[PB].n == 0 && buf[PC].n == 0 && buf[PF].n == 0)
#else
#define BARRIER_U(me) barrier(me)
#define BARRIER_F(me) barrier(me)
#endif

#ifdef RELAXED_RMW
#define BIT_XCHG(me, v, x, r) rmw_xchg_buf(me, v, x, r)
#define BIT_OR(me, v, x, r) rmw_or_buf(me, v, x, r)
#else
#define BIT_XCHG(me, v, x, r) rmw_xchg_mem(me, v, x, r)
#define BIT_OR(me, v, x, r) rmw_or_mem(me, v, x, r)
#endif

#ifdef BIT_FENCES
#define BIT_FENCE(me) barrier(me)
#else
#define BIT_FENCE(me) skip
#endif

#ifdef SC
/* every store visible at once: drain the buffer right after each step */
#define SETTLE(me) barrier(me)
#else
#define SETTLE(me) skip
#endif

proctype updater(byte me; byte g; byte d)
{
	byte r;
	rmw_add_buf(me, WORD0 + g, d, r);
	SETTLE(me);
	BARRIER_U(me);
#ifdef LEAF_WORD
	/* tally__rstat_mark_dirty(): bit 1 << g of the shared leaf word */
	load(me, LEAFW, r);
	if
	:: (r & (1 << g)) == 0 -> BIT_OR(me, LEAFW, 1 << g, r); SETTLE(me)
	:: else -> skip
	fi;
#else
	load(me, LEAF0 + g, r);
	if
	:: r == 0 -> BIT_XCHG(me, LEAF0 + g, 1, r); SETTLE(me)
	:: else -> skip
	fi;
#endif
	BIT_FENCE(me);
	load(me, SUMM, r);
	if
	:: r == 0 -> BIT_XCHG(me, SUMM, 1, r); SETTLE(me)
	:: else -> skip
	fi;
	if
	:: me == PA -> bstore(me, ADONE, 1) /* returned; lands after its stores */
	:: else -> skip
	fi
}

#ifdef BYTES
byte cpu = 255;  /* the process in a section on the slot's CPU; 255: none */
byte last = 255; /* the last one that ran there */
bit sh;          /* the flusher's last drain cleared a shared-half bit */

/* Run on the slot's CPU: once no section runs there and the previous
 * thread's stores are visible (a context switch is a full barrier). */
inline cpu_take(me)
{
	atomic {
		cpu == 255 && (last == 255 || last == me || buf[last].n == 0) ->
		cpu = me;
		last = me
	}
}

inline cpu_give(me)
{
	cpu = 255
}

/* The dirty bytes: plain stores of 1, no load, no section. */
inline byte_store(me, g)
{
	bstore(me, OLEAF0 + g, 1);
	bstore(me, OSUMM, 1)
}

#ifdef BYTES_SKIP
inline byte_marks(me, g)
{
	load(me, OLEAF0 + g, r);
	load(me, OSUMM, r2);
	if
	:: r && r2 -> skip
	:: else -> byte_store(me, g)
	fi
}
#else
#define byte_marks(me, g) byte_store(me, g)
#endif

/* the fenced protocol on the shared half (tally__rstat_mark_dirty()) */
inline shared_marks(me, g)
{
	BARRIER_U(me);
	load(me, LEAFW, r);
	if
	:: (r & (1 << g)) == 0 -> rmw_or_mem(me, LEAFW, 1 << g, r)
	:: else -> skip
	fi;
	load(me, SUMM, r);
	if
	:: r == 0 -> rmw_xchg_mem(me, SUMM, 1, r)
	:: else -> skip
	fi
}

proctype owner(byte me; byte g; byte d)
{
	byte r, r2;
	if
	:: me == PB ->
		/* the group's chunk is too big for the byte path: the add in
		 * tally__rseq_add()'s section (a plain store), then the fenced
		 * marking. (Without rseq the atomic add goes to the shared
		 * slot, a word and record of its own: the default models.) */
		cpu_take(me);
		load(me, WORD0 + g, r);
		bstore(me, WORD0 + g, r + d);
		cpu_give(me);
		shared_marks(me, g)
	:: true ->
#ifdef BYTES_FIRST
		byte_marks(me, g);
#endif
		/* the section: the word add, committed by a plain store */
		cpu_take(me);
		load(me, WORD0 + g, r);
		bstore(me, WORD0 + g, r + d);
#ifndef BYTES_FIRST
		/* then the bytes: still on this CPU (the next thread to run
		 * here finds them visible: a context switch), or preempted
		 * right after the section (the switch makes the add visible)
		 * and migrated: the bytes are stored from another CPU, and
		 * other threads run sections here meanwhile */
		if
		:: byte_marks(me, g); cpu_give(me)
		:: atomic { buf[me].n == 0 -> cpu = 255; last = 255 };
		   byte_marks(me, g)
		fi
#else
		cpu_give(me)
#endif
	fi;
	if
	:: me == PA -> bstore(me, ADONE, 1) /* returned; lands after its stores */
	:: else -> skip
	fi
}

/* the drain's exchange of the summary byte's word: a full barrier for the
 * flusher, but a plain byte store buffered elsewhere may land after it */
inline xchg_own(v, r)
{
	atomic {
		buf[PF].n == 0 ->
		r = mem[v];
		mem[v] = 0
	}
}

inline link_bits(r)
{
	if
	:: r & 1 -> linked[0] = 1
	:: else -> skip
	fi;
	if
	:: r & 2 -> linked[1] = 1
	:: else -> skip
	fi
}

/* the drain's 64-bit exchange around both groups' bytes, in one step */
inline xchg_bytes(r)
{
	atomic {
		buf[PF].n == 0 ->
		r = (mem[OLEAF0] != 0) | ((mem[OLEAF0 + 1] != 0) << 1);
		mem[OLEAF0] = 0;
		mem[OLEAF0 + 1] = 0
	}
}

/* tally__rstat_drain(): the shared half, then the byte half */
inline drain()
{
	sh = 0;
	load(PF, SUMM, r);
	if
	:: r ->
		BIT_XCHG(PF, SUMM, 0, r);
		if
		:: r ->
			BIT_XCHG(PF, LEAFW, 0, r);
			sh = r != 0;
			link_bits(r)
		:: else -> skip
		fi
	:: else -> skip
	fi;
	load(PF, OSUMM, r);
	if
	:: r ->
		xchg_own(OSUMM, r);
		if
		:: r ->
			xchg_bytes(r);
			link_bits(r)
		:: else -> skip
		fi
	:: else -> skip
	fi
}
#elif defined(LEAF_WORD)
/* tally__rstat_drain(): if (summary) { x = xchg(summary, 0);
 * if (x) { y = xchg(leaf word, 0); link every group whose bit is in y } } */
inline drain()
{
	load(PF, SUMM, r);
	if
	:: r ->
		BIT_XCHG(PF, SUMM, 0, r);
		SETTLE(PF);
		BIT_FENCE(PF);
		if
		:: r ->
			BIT_XCHG(PF, LEAFW, 0, r);
			SETTLE(PF);
			if
			:: r & 1 -> linked[0] = 1
			:: else -> skip
			fi;
			if
			:: r & 2 -> linked[1] = 1
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: else -> skip
	fi
}
#else
inline drain()
{
	load(PF, SUMM, r);
	if
	:: r ->
		BIT_XCHG(PF, SUMM, 0, r);
		SETTLE(PF);
		BIT_FENCE(PF);
		g = 0;
		do
		:: g < NG ->
			load(PF, LEAF0 + g, r);
			if
			:: r ->
				BIT_XCHG(PF, LEAF0 + g, 0, r);
				SETTLE(PF);
				if
				:: r -> linked[g] = 1
				:: else -> skip
				fi
			:: else -> skip
			fi;
			g++
		:: else -> break
		od
	:: else -> skip
	fi
}
#endif

inline flush_linked()
{
	if
	:: linked[0] -> load(PF, WORD0, r); seen0 = r; linked[0] = 0
	:: else -> skip
	fi;
	linked[1] = 0 /* group 1's word is not checked */
}

inline flush()
{
	drain();
	BARRIER_F(PF);
	flush_linked();
	drain();
	BARRIER_F(PF);
	flush_linked()
}

proctype flusher()
{
	byte r, g;
	flush();        /* F0: concurrent with the updates */
	mem[ADONE] == 1; /* F1 starts after A's mod returned */
	flush();        /* F1 */
	assert(seen0 & DA)
}

init
{
#ifdef BYTES
	atomic {
		run drainer(PA);
		run drainer(PB);
		run drainer(PF);
		run owner(PA, 0, DA);
		run owner(PB, 0, DB);
		run drainer(PC);
		run owner(PC, 1, DC);
		run flusher()
	}
#else
	atomic {
		run drainer(PA);
		run drainer(PB);
		run drainer(PF);
		run updater(PA, 0, DA);
		run updater(PB, 0, DB);
		run drainer(PC);
		run updater(PC, 1, DC);
		run flusher()
	}
#endif
}
