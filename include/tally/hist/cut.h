/**
 * @file
 * tally/hist/cut.h - the cut that snapshots and resets take (private;
 * include <tally/hist.h>), and why it is exact.
 *
 * A record R adds, into the bank k it read as active: (1) its bucket's
 * half, (1') a carry if that half wrapped, (2) its value to the bank's
 * sum and (3) n to its done count, (2) and (3) on one CPU slot, in that
 * order (release RMWs off the rseq path, x86's store order on it, where
 * (2) and (3) are one commit: hist/layout.h). Each step commits with one
 * store, so nothing is counted twice; each lands whole on some slot.
 *
 * Reading bank k (tally__hist_read_bank): every slot's done and sum
 * (done first, acquire; or the rseq format's consistent pair), then every
 * half of bank k and the carries. Let D be the records whose done the
 * first pass saw and B those whose half the second pass saw. D is within
 * B: a record's half (and carry) comes before its done, which the acquire
 * load saw. The halves and carries read add up to the done total plus
 * S - 2^32 (x - y): S the observations of the records of B \ D, x those
 * of its records whose half wrapped and whose carry was not seen yet, y
 * carries seen without their record's half (records not in B). Counted in
 * observations, not records: a record_n() of n adds n to S.
 *
 * So the read is accepted only if they add up (modulo 2^63: the rseq
 * format's done keeps its count in 63 bits) and no record of n >=
 * TALLY__HIST_BIG_N (16) was in flight: those announce themselves in
 * big[0] (started) before their half and in big[1] (finished) after their
 * done (tally__hist_record_big()); the read loads finished (acquire) then
 * started, equal: none in flight, every one started has finished and is
 * seen; then after the passes, past an acquire fence, started again,
 * unchanged: none whose add the passes saw began since (its release
 * fence orders the raise of started before its adds). Then every record
 * of B \ D has n <= 15, and there are fewer than 2^28 of them (at most
 * 2^22 threads, Linux's PID_MAX_LIMIT, each inside at most 64 records at
 * once, one per nested signal handler), so 0 <= S < 2^32 and S = 0 only
 * if B = D. Adding up then means S = 2^32 (x - y) with x <= |B \ D|:
 * x = y gives S = 0, so B = D and x = y = 0; x > y needs S >= 2^32; x < y
 * makes S negative. Either way B = D, no carry is missing, and the bank
 * is read exactly: every record in it wholly or not at all, its bucket,
 * count and sum together (a sum seen without its done, on the same slot
 * and read after it, belongs to a record of B, so not to an accepted
 * read). Otherwise the read is retried. Without the big-record counts two
 * records of 2^31, one unfinished (S = 2^31) and one that wrapped its half
 * (x = 1), add up (2^31 - 2^32 + 2^31 = 0) with both half seen: the
 * earlier rule, which assumed one observation per record, accepted that
 * (tests/plain/hist_big.c holds such records in flight).

 * A bank that records keep landing in would rarely add up, so the cut
 * (under the histogram's lock, one at a time) reads the idle bank, makes
 * it the active one, and then reads the bank that was active: only
 * records that read the old active bank before the switch still land
 * there, so it adds up once they finish (the cut waits: a recorder
 * preempted mid-record delays it). The cut is the sum of the two exact
 * reads; each bank only grows, so later cuts contain earlier ones.
 * tests/formal/hist.pml checks this with SPIN, and that it fails with the
 * halves read before done, without the add-up check, with done added
 * before the sum, or with a record's sum and done on two slots; -DRSEQ
 * checks it against the rseq path's record (hist/record.h), aborted
 * anywhere.
 */
#ifndef TALLY_HIST_CUT_H
#define TALLY_HIST_CUT_H

#if !defined(TALLY__HIST_INSIDE)
#  error "tally/hist/cut.h is private: include <tally/hist.h>"
#endif

/* Tests only: TALLY__HIST_READ_HOOK(p, s, k) runs in the window of a
 * cut's read of slot s's bank-k record (p: the histogram's tally__pcpu),
 * between the load of done and the load of the sum. Two records that
 * commit there tear the rseq format's pair (the sum done's parity picked
 * is rewritten); the re-check of done rejects it and reads that slot's
 * pair again. (Without the re-check the bank's add-up check would still
 * reject the read, their halves being in and their done not, and read
 * the whole bank again.) A test records there (tests/plain/hist_cut_hook.c)
 * instead of waiting for a schedule that does. Nothing by default. */
#ifndef TALLY__HIST_READ_HOOK
#  define TALLY__HIST_READ_HOOK(p, s, k) ((void)0)
#endif

/* Add slot s's bank-k record to *done and *sum: both of one instant. */
TALLY__INLINE void tally__hist_read_record(const struct tally__pcpu *p, unsigned s, unsigned k,
					   uint64_t *done, uint64_t *sum)
{
	const uint64_t *r =
		(const uint64_t *)tally__pcpu_at(p, s, (size_t)TALLY__HIST_BANK_BYTES * k);
#if TALLY__HAVE_RSEQ
	if (s < p->nr && tally__rseq_registered()) {
		/* The rseq format: sum[d >> 63] belongs to done d. A record
		 * writes only the other sum before it commits a new done, so
		 * if done still reads d after the sum, the sum was d's. */
		for (;;) {
			/* acquire, acquire: pair with the section's store
			 * order (x86: stores stay in order) */
			uint64_t d = __atomic_load_n(&r[0], __ATOMIC_ACQUIRE), sm;
			TALLY__HIST_READ_HOOK(p, s, k);
			sm = __atomic_load_n(&r[1 + (d >> 63)], __ATOMIC_ACQUIRE);
			if (__atomic_load_n(&r[0], __ATOMIC_RELAXED) == d) {
				*done += d & (UINT64_MAX >> 1);
				*sum += sm;
				return;
			}
		}
	}
#endif
	/* acquire: pairs with the record's release add of done, so the sum
	 * and halves read after it include that record's */
	*done += __atomic_load_n(&r[0], __ATOMIC_ACQUIRE);
	TALLY__HIST_READ_HOOK(p, s, k);
	/* acquire: pairs with the record's release add of the sum, so the
	 * halves read after it include the records of the sums seen */
	*sum += __atomic_load_n(&r[1], __ATOMIC_ACQUIRE);
}

/*
 * Read bank k exactly into out[0..nr-1] (added to) and *sum (added to);
 * tmp: nr words of scratch. Returns the number of retries. Lock held.
 */
static inline unsigned tally__hist_read_bank(const struct tally_hist *h, unsigned k,
					     uint64_t *out, uint64_t *sum, uint64_t *tmp)
{
	const struct tally__pcpu *p = &h->tally__pcpu;
	unsigned s, j, nr = h->tally__l.nr, slots = tally__pcpu_slots(p), tries = 0;
	const uint64_t *carry = h->tally__carry + (size_t)k * nr;
	for (;;) {
		uint64_t done = 0, sm = 0, total = 0;
		/* acquire: every big record counted finished is seen whole */
		uint64_t big = __atomic_load_n(&h->tally__big[1], __ATOMIC_ACQUIRE);
		int big_busy = __atomic_load_n(&h->tally__big[0], __ATOMIC_RELAXED) != big;
		for (s = 0; s < slots; s++)
			tally__hist_read_record(p, s, k, &done, &sm);
		memset(tmp, 0, (size_t)nr * sizeof(*tmp));
		for (s = 0; s < slots; s++) {
			const unsigned char *c = (const unsigned char *)tally__pcpu_at(p, s, 0);
			for (j = 0; j < nr; j++)
				tmp[j] += __atomic_load_n(
					(const uint32_t *)(c + tally__hist_half_off(j, k)),
					__ATOMIC_RELAXED);
		}
		for (j = 0; j < nr; j++) {
			tmp[j] += __atomic_load_n(&carry[j], __ATOMIC_RELAXED);
			total += tmp[j];
		}
		/* acquire: pairs with a big record's release fence, so started
		 * counts every big record whose add the passes saw */
		tally__thread_fence(__ATOMIC_ACQUIRE);
		/* Modulo 2^63: the rseq format's done keeps its count in 63
		 * bits. */
		if (((total - done) << 1) == 0 && !big_busy &&
		    __atomic_load_n(&h->tally__big[0], __ATOMIC_RELAXED) == big) {
			for (j = 0; j < nr; j++)
				out[j] += tmp[j];
			*sum += sm;
			return tries;
		}
		/* records in flight into bank k: let them finish */
		if (++tries % 64u)
			tally__cpu_relax();
		else
			tally__os_yield();
	}
}

/* The cut: every record so far, raw (since init), into out and *sum.
 * Lock held. */
static inline void tally__hist_cut(struct tally_hist *h, uint64_t *out, uint64_t *sum)
{
	unsigned act = tally__load(&h->tally__act); /* only lock holders store it */
	unsigned k = tally__hist_bank(act);
	memset(out, 0, (size_t)h->tally__l.nr * sizeof(*out));
	*sum = 0;
	tally__hist_read_bank(h, k ^ 1u, out, sum, h->tally__scratch);
	/* Relaxed: the switch only steers new records away from bank k so
	 * that its read adds up; exactness never depends on when they see it. */
	tally__store(&h->tally__act, act ^ 4u);
	tally__hist_read_bank(h, k, out, sum, h->tally__scratch);
}

TALLY__INLINE void tally__hist_lock(const struct tally_hist *h)
{
	pthread_mutex_lock(&((struct tally_hist *)h)->tally__lock);
}

TALLY__INLINE void tally__hist_unlock(const struct tally_hist *h)
{
	pthread_mutex_unlock(&((struct tally_hist *)h)->tally__lock);
}

/* The snapshot's derived parts: count and the group totals. */
static inline void tally__hist_snap_finish(struct tally_hist_snap *s)
{
	unsigned j, g = s->tally__group_shift;
	uint64_t count = 0;
	memset(s->tally__groups, 0, (size_t)s->tally__nr_groups * sizeof(uint64_t));
	for (j = 0; j < s->tally__l.nr; j++) {
		count += s->counts[j];
		s->tally__groups[j >> g] += s->counts[j];
	}
	s->count = count;
}

#endif /* TALLY_HIST_CUT_H */
