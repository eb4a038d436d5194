/*
 * threshold.pml - the flush thresholds of tally/rstat.h: a flush's count
 * take and settle (tally/rstat/threshold.h) against the thresholded-flush
 * promise:
 *
 *   if an update by this thread finds g below its threshold and takes it
 *   past, tally_group_flush(g) afterwards returns with that update and
 *   every earlier one of this thread reflected.
 *
 * One group g, one updater U (the only writer of g's word), NFL forced
 * flushes F beside it (a periodic or forced root flush), threshold T.
 * U does NUPD updates of 1..T each ("at most one threshold"); after each
 * one that took g past T it calls tally_group_flush(g) (needs_flush, then
 * a flush under the lock) and asserts that the flushed value holds all of
 * its updates. A flush (tally__rstat_flush_locked()): bump the generation,
 * take g's count, drain (exchange the dirty bit), walk (load the word),
 * drain and walk again, settle, bump the generation. The update
 * (tally_group_mod()): word add, dirty bit, generation load, then the
 * count: nothing when an update found g flushable at this generation
 * (anc_gen), nothing but recording the generation when the count is past
 * T, else an atomic add. Sequentially consistent: the barrier pair of the
 * dirty bits is checked in bitmap.pml; this model is about the counts.
 * The per-CPU batching of counts is left out (a batch of 1: every update
 * reaches the atomic count), which only makes crossings more frequent.
 *
 *   (default)  the settle re-arms: when updates counted during the flush
 *              took g past T and subtracting what the flush took would
 *              leave it at or below T, the count is left at T + 1 (their
 *              bits may have been set after the flush's last drain)
 *   -DOLD      the settle subtracts what it took, nothing else: an update
 *              counted after the take whose bit the last drain missed is
 *              left with a count at or below T (the violation)
 */
#ifndef T
#define T 2
#endif
#ifndef NUPD
#define NUPD 2
#endif
#ifndef NFL
#define NFL 1
#endif

byte word = 0;    /* U's word: the sum of its deltas */
byte prev = 0;    /* the word at the last flush that consumed it */
byte state = 0;   /* g's flushed value (what readers see) */
bit dirty = 0;    /* g's dirty bit */
byte count = 0;   /* g's atomic count */
byte gen = 0;     /* the tree's flush generation */
byte anc_gen = 255; /* the generation an update last found g flushable at */
bit lock = 0;     /* the flush lock */

/* One flush of g under the lock. lk: linked by a drain; tk: the count
 * taken; old: the count at the settle. */
inline flush(lk, tk, old)
{
	atomic { lock == 0 -> lock = 1 };
	gen = gen + 1;
	tk = count;                           /* tally__rstat_count_take() */
	atomic { lk = dirty; dirty = 0 };     /* drain 1 */
	if
	:: lk -> atomic { state = state + word - prev; prev = word }; lk = 0
	:: else -> skip
	fi;
	atomic { lk = dirty; dirty = 0 };     /* drain 2 */
	if
	:: lk -> atomic { state = state + word - prev; prev = word }; lk = 0
	:: else -> skip
	fi;
	/* tally__rstat_count_settle(): one atomic step (a CAS loop in the
	 * code; only a flush lowers a count, and flushes hold the lock) */
#ifdef OLD
	count = count - tk;
#else
	d_step {
		old = count;
		if
		:: old != tk && old > T && old - tk <= T -> count = T + 1
		:: else -> count = old - tk
		fi;
		old = 0
	};
#endif
	gen = gen + 1;
	lock = 0
}

active proctype Updater()
{
	byte i = 0, m, g, c, lk, tk, old;
	bit crossed;
	do
	:: i < NUPD ->
		if
		:: m = 1
		:: m = 2
#if T > 2
		:: m = 3
#endif
		fi;
		word = word + m;          /* the word add */
		dirty = 1;                /* the dirty bit, after BARRIER_U */
		g = gen;                  /* tally__rstat_gen(), acquire */
		crossed = 0;
		if
		:: anc_gen == g -> skip   /* tally__rstat_count_settled() */
		:: else ->
			c = count;
			if
			:: c > T -> anc_gen = g /* found flushable: not counted */
			:: else ->
				d_step { count = count + m; crossed = (count > T) }
			fi
		fi;
		if
		:: crossed ->
			/* tally_group_flush(g): needs_flush(g), then a flush */
			if
			:: count > T -> flush(lk, tk, old)
			:: else -> skip
			fi;
			assert(state == word)
		:: else -> skip
		fi;
		i++
	:: else -> break
	od
}

active proctype Flusher()
{
	byte n = 0, lk, tk, old;
	do
	:: n < NFL -> flush(lk, tk, old); n++
	:: else -> break
	od
}
