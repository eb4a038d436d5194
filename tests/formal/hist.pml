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
 */
#ifndef NR
#define NR 1
#endif
#define NS 2

byte half[8]; /* [bank][bucket][slot]: k * 4 + b * 2 + s */
byte sum[4];  /* [bank][slot] */
byte done[4];
bit bank;
byte started, completed;

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

byte c0, c1, sm; /* the cut being taken */
byte d, x, y0, y1, kb;

/* one load per step, slot by slot (the cut's loop over the CPU slots):
 * each slot's done, then its sum */
inline read_records(kk)
{
	d = done[kk * 2];
	x = sum[kk * 2];
	d = d + done[kk * 2 + 1];
	x = x + sum[kk * 2 + 1]
}

inline read_halves(kk)
{
	atomic { y0 = half[kk * 4]; y1 = half[kk * 4 + 2] };
	atomic { y0 = y0 + half[kk * 4 + 1]; y1 = y1 + half[kk * 4 + 3] }
}

inline read_bank(kk)
{
	do
	:: 
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
		:: else -> skip
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
	run recorder();
	run recorder();
	cut();
	first0 = c0; first1 = c1;
	cut();
	assert(c0 >= first0 && c1 >= first1)
}
