/*
 * hist.pml - tally_hist's cut (hist/cut.h) against concurrent records:
 * is every cut exact (each record wholly in it or not at all: its bucket,
 * its count and its value in the sum), and between the records completed
 * before it began and those started before it ended?
 *
 * Two recorders make NR records each (default 1: 1.6 million states; 2
 * takes minutes), of value 1 (bucket 0) or 2 (bucket 1), chosen by SPIN. A record reads the active bank k, then adds to
 * half[k][bucket], sum[k] and done[k], in that order, each add one atomic
 * step on a CPU slot SPIN chooses (0 or 1) for each add: a record may
 * migrate between its adds. The cutter takes two cuts one after the other
 * (the lock serialises cuts): read the idle bank, switch the active bank,
 * read the bank that was active. Reading a bank: slot by slot its done,
 * then its sum; then every slot's halves (one load per step, records
 * interleaving anywhere), accepted when the halves add up to the done
 * total, else read again.
 * Sequentially consistent: the record's adds are ordered (release RMWs, or
 * x86's store order on the rseq path) and so are the cut's loads (acquire
 * loads of done and sum), which is what the code relies on. The 2^32
 * carry is not modelled (see hist/cut.h for its argument).
 *
 * Asserted for each cut: sum == count(bucket 0) + 2 count(bucket 1); the
 * cut's records >= those completed before it began and <= those started
 * before it ended; the second cut contains the first, bucket by bucket.
 *
 * Variants (spin -D...):
 *   (default)     the code's orders.                       expected: PASS
 *   -DBAD_ORDER   the cut reads halves, sums, then done.   expected: FAIL
 *   -DNO_CHECK    the cut accepts its first read.          expected: FAIL
 *   -DBAD_RECORD  the record adds done before sum.         expected: FAIL
 *   -DSPLIT_SLOTS a record's sum and done on two slots.    expected: FAIL
 *
 * -DRSEQ: the record as the x86_64 rseq path makes it (hist/record.h),
 * against the same cut. A record is one restartable section on the CPU it
 * runs on (0 or 1, chosen by SPIN at every start: a restart may migrate):
 * the half's add, which clears the sentinel r in the same step (xaddl);
 * the load of the sum; its store (stosq), which moves the second sentinel
 * w in the same step; the commit of done; one step each. The thread holds
 * its CPU for sections (own[c]): no other section runs on c until it
 * completes or aborts, and before each step SPIN may abort it (a
 * preemption, migration or signal). The abort handler restarts while r is
 * set; once clear, it finishes with atomic adds on the shared slot (slot
 * 2): the sum and then done while w is not moved, done alone once it is.
 * The cut reads the shared slot's done and sum first, then each CPU
 * slot's done and sum, then the halves. One cut runs beside the records
 * (the default model's second cut checks that cuts grow; here the states
 * go to the aborts); then, once every record completed, a second cut must
 * hold every record once. A read that begins with every record complete
 * and does not add up is a violation too (a quiescent histogram always
 * adds up).
 *   -DRSEQ                 the section as in the code.         expected: PASS
 *   -DRSEQ -DBAD_HANDLER   the handler restarts even after the
 *                          half's add.                         expected: FAIL
 *   -DRSEQ -DLATE_SENTINEL the sentinels moved by a step after
 *                          their store (an abort between).     expected: FAIL
 *   -DRSEQ -DNO_ABORT      sections on one CPU not exclusive
 *                          (no abort on preemption).           expected: FAIL
 *   -DRSEQ -DSHARED_LAST   the cut reads the shared slot's
 *                          done and sum after the CPU slots'.  expected: FAIL
 */
#ifndef NR
#define NR 1
#endif
#define NS 2

byte half[8]; /* [bank][bucket][slot]: k * 4 + b * 2 + s */
#ifndef RSEQ
byte sum[4];  /* [bank][slot] */
byte done[4];
#endif
bit bank;
byte started, completed;

#ifdef RSEQ
/* slots 0, 1 (CPUs): done, sum; slot 2 (shared): sdone, ssum; per bank */
byte dw[4];   /* [bank][slot] */
byte sw[4];   /* [bank][slot] */
byte sdone[2], ssum[2];
byte own[2];  /* the recorder running a section on CPU c, or 0 */

proctype recorder(byte me)
{
	byte i, k, v, c, r, w, t;
	for (i : 1 .. NR) {
		atomic {
			started++; k = bank;
			if
			:: v = 1
			:: v = 2
			fi
		}
		r = 1; /* the sentinels, set before the section */
		w = 0;
start:
		/* the section starts on CPU c: alone there until it ends */
		atomic {
			if
			:: c = 0
			:: c = 1
			fi;
#ifdef NO_ABORT
			true
#else
			own[c] == 0 -> own[c] = me
#endif
		}
		if
#ifdef LATE_SENTINEL
		:: half[k * 4 + (v - 1) * 2 + c]++
#else
		:: atomic { half[k * 4 + (v - 1) * 2 + c]++; r = 0 }
#endif
		:: goto abort
		fi;
#ifdef LATE_SENTINEL
		if
		:: r = 0
		:: goto abort
		fi;
#endif
		if
		:: t = sw[k * 2 + c]
		:: goto abort
		fi;
		if
#ifdef LATE_SENTINEL
		:: sw[k * 2 + c] = t + v
#else
		:: atomic { sw[k * 2 + c] = t + v; w = 1 }
#endif
		:: goto abort
		fi;
#ifdef LATE_SENTINEL
		if
		:: w = 1
		:: goto abort
		fi;
#endif
		if
		:: atomic {
			/* the commit */
			dw[k * 2 + c]++;
			completed++;
			own[c] = 0
		   }; goto next
		:: goto abort
		fi;
abort:
		own[c] = 0;
#ifdef BAD_HANDLER
		goto start;
#else
		if
		:: r == 1 -> goto start
		:: else
		fi;
#endif
		if
		:: w == 0 -> ssum[k] = ssum[k] + v
		:: else
		fi;
		atomic { sdone[k]++; completed++ };
next:
		skip
	}
}
#else
proctype recorder()
{
	byte i, k, v, s;
	for (i : 1 .. NR) {
		atomic {
			started++; k = bank;
			if
			:: v = 1
			:: v = 2
			fi
		}
		/* each add on slot 0 or 1: the record may migrate between adds */
		if
		:: half[k * 4 + (v - 1) * 2]++
		:: half[k * 4 + (v - 1) * 2 + 1]++
		fi;
#ifdef BAD_RECORD
		if
		:: done[k * 2]++
		:: done[k * 2 + 1]++
		fi;
		if
		:: sum[k * 2] = sum[k * 2] + v
		:: sum[k * 2 + 1] = sum[k * 2 + 1] + v
		fi;
		completed++
#elif defined(SPLIT_SLOTS)
		if
		:: sum[k * 2] = sum[k * 2] + v
		:: sum[k * 2 + 1] = sum[k * 2 + 1] + v
		fi;
		atomic {
			if
			:: done[k * 2]++
			:: done[k * 2 + 1]++
			fi;
			completed++
		}
#else
		/* the sum and done of a record land on one slot */
		if
		:: s = 0
		:: s = 1
		fi;
		sum[k * 2 + s] = sum[k * 2 + s] + v;
		atomic { done[k * 2 + s]++; completed++ }
#endif
	}
}

#endif

byte c0, c1, sm; /* the cut being taken */
byte d, x, y0, y1, kb;

/* one load per step, slot by slot (the cut's loop over the CPU slots):
 * each slot's done, then its sum */
#ifdef RSEQ
bit quiet;
/* the shared slot's done and sum first (a done there may be a record's
 * whose half and sum are on a CPU slot), then each CPU slot's */
inline read_records(kk)
{
#ifndef SHARED_LAST
	d = sdone[kk];
	x = ssum[kk];
#else
	d = 0; x = 0;
#endif
	d = d + dw[kk * 2];
	x = x + sw[kk * 2];
	d = d + dw[kk * 2 + 1];
	x = x + sw[kk * 2 + 1]
#ifdef SHARED_LAST
	;
	d = d + sdone[kk];
	x = x + ssum[kk]
#endif
}
#else
inline read_records(kk)
{
	d = done[kk * 2];
	x = sum[kk * 2];
	d = d + done[kk * 2 + 1];
	x = x + sum[kk * 2 + 1]
}
#endif

inline read_halves(kk)
{
	atomic { y0 = half[kk * 4]; y1 = half[kk * 4 + 2] };
	atomic { y0 = y0 + half[kk * 4 + 1]; y1 = y1 + half[kk * 4 + 3] }
}

inline read_bank(kk)
{
	do
	:: 
#ifdef RSEQ
		quiet = (completed == 2 * NR);
#endif
#ifdef BAD_ORDER
		read_halves(kk);
		read_records(kk);
#else
		read_records(kk);
		read_halves(kk);
#endif
		if
#ifdef NO_CHECK
		:: true ->
#else
		:: y0 + y1 == d ->
#endif
			atomic { c0 = c0 + y0; c1 = c1 + y1; sm = sm + x }; break
		:: else ->
#ifdef RSEQ
			/* every record was complete before the read began */
			assert(!quiet)
#else
			skip
#endif
		fi
	od
}

inline cut()
{
	atomic { c0 = 0; c1 = 0; sm = 0; before = completed };
	kb = 1 - bank;
	read_bank(kb);
	bank = 1 - bank;
	kb = 1 - bank;
	read_bank(kb);
	assert(sm == c0 + 2 * c1);
	assert(c0 + c1 >= before);
	assert(c0 + c1 <= started)
}

active proctype cutter()
{
	byte before, first0, first1;
#ifdef RSEQ
	run recorder(1);
	run recorder(2);
	cut();
	/* once every record completed: all of them, once each */
	completed == 2 * NR;
	cut();
	assert(c0 + c1 == 2 * NR)
#else
	run recorder();
	run recorder();
	cut();
	first0 = c0; first1 = c1;
	cut();
	assert(c0 >= first0 && c1 >= first1)
#endif
}
