/*
 * hist_weight.pml - tally_hist's read of a bank (hist/cut.h) against
 * records of several observations each (tally_hist_record_n), with the
 * bucket halves' wrap and carry: is an accepted read exact?
 *
 * Scaled down: a half counts modulo M = 4 (2^32 in the code) and a wrap
 * adds M to the bucket's carry; done and the sum count in full. One slot,
 * one bank (hist.pml checks slots, banks and the rseq section; here the
 * weights). Bucket 0 already holds M - 1 observations of value 1 (its
 * half one short of wrapping). Two recorders make one record each: a
 * bucket b (value b + 1) and a weight n in 1 .. M - 1, chosen by SPIN.
 * A record adds its half (one step, noting a wrap), then a carry if it
 * wrapped, then its sum, then its done: one atomic step each, in that
 * order, sequentially consistent (the code's release RMWs).
 * With -DBIG, records of n >= L (the code's TALLY__HIST_BIG_N) first raise
 * started and end by raising finished (tally__hist_record_big()), and a
 * read must find finished == started before its passes and started
 * unchanged after them.
 *
 * The reader reads, one load per step: done (with a ghost copy of the
 * completed records' buckets and sum, taken in the same step: exactly
 * the records the read must hold), the sum, each half, each carry; and
 * accepts when halves and carries add up to done. Asserted on accept:
 * every bucket and the sum equal the ghost copy.
 *
 * Variants (spin -D...):
 *   (default)            the add-up check alone (one observation
 *                        per record assumed).                 expected: FAIL
 *   -DBIG -DL=2          big records counted in flight; the small
 *                        ones' weights in flight (2 x 1) < M.  expected: PASS
 *   -DBIG -DL=3          weights up to 2 left small: 2 x 2 = M. expected: FAIL
 *   -DBIG -DL=2 -DNO_RECHECK  started not read again after the
 *                        passes.                               expected: FAIL
 *   -DBIG -DL=2 -DNO_IDLE     no wait for finished == started
 *                        before the passes.                    expected: FAIL
 */
#define M 4
#ifndef L
#define L M
#endif

byte half[2];
byte carry[2];       /* in units of M */
byte done = M - 1;
byte sum = M - 1;
byte started, finished;
byte gb[2];          /* ghost: the completed records' buckets */
byte gs = M - 1;     /* ghost: their sum */

proctype recorder()
{
	byte b, n, wrapped;
	bool big;
	if
	:: b = 0
	:: b = 1
	fi;
	if
	:: n = 1
	:: n = 2
	:: n = 3
	fi;
#ifdef BIG
	big = n >= L;
#else
	big = 0;
#endif
	if
	:: big -> started++
	:: else
	fi;
	atomic {
		wrapped = half[b] + n >= M;
		half[b] = (half[b] + n) % M
	}
	if
	:: wrapped -> carry[b]++
	:: else
	fi;
	sum = sum + n * (b + 1);
	atomic {
		done = done + n;
		gb[b] = gb[b] + n;
		gs = gs + n * (b + 1)
	}
	if
	:: big -> finished++
	:: else
	fi
}

proctype reader()
{
	byte d, s, h0, h1, c0, c1, e0, e1, es, s0, f0;
again:
#if defined(BIG) && !defined(NO_IDLE)
	f0 = finished;
	s0 = started;
	if
	:: f0 != s0 -> goto again
	:: else
	fi;
#elif defined(BIG)
	s0 = started;
#endif
	atomic { d = done; e0 = gb[0]; e1 = gb[1]; es = gs }
	s = sum;
	h0 = half[0];
	h1 = half[1];
	c0 = carry[0];
	c1 = carry[1];
#if defined(BIG) && !defined(NO_RECHECK)
	if
	:: started != s0 -> goto again
	:: else
	fi;
#endif
	if
	:: h0 + M * c0 + h1 + M * c1 != d -> goto again
	:: else
	fi;
	assert(h0 + M * c0 == e0 && h1 + M * c1 == e1 && s == es)
}

init {
	half[0] = M - 1;
	gb[0] = M - 1;
	atomic {
		run recorder();
		run recorder();
		run reader()
	}
}
