/**
 * @file
 * tally/hist/cut.h - the cut that snapshots and resets take (private;
 * include <tally/hist.h>), and why it is exact.
 *
 * A record R adds, into the bank k it read as active: (1) its bucket's
 * half, (1') a carry if that half wrapped, (2) its value to the bank's
 * sum and (3) n to its done count, in that order (release RMWs off the
 * rseq path, x86's store order on it), each step one store, so nothing is
 * counted twice and each lands whole on some slot. (2) and (3) land on
 * R's slot, except after an aborted section (hist/record.h), which adds
 * (2) and (3), or (3) alone, to the shared slot: so a done on a CPU slot
 * has its sum on that slot, and a done on the shared slot has its sum
 * there or on a CPU slot. A write to CPU slot s comes after the written
 * bound lim covers s; a write to the shared slot after the histogram's
 * TALLY__HIST_USED_SHARED; a carry after TALLY__HIST_USED_CARRY.
 *
 * Reading banks (tally__hist_read; both banks at once, or one): the
 * visited slots are the CPU slots below lim and the shared slot if it
 * was used (both loaded first, acquire). Pass 1: the shared slot's done
 * and sum, then each CPU slot's (done first, acquire, then the sum,
 * acquire); lim and the used bits loaded again, unchanged, or the read is
 * retried. Pass 2: every visited slot's halves (each bucket's two halves,
 * one per bank, in one word), then the carries if a carry was ever made.
 * Let D be the records whose done pass 1 saw, B those whose half pass 2
 * saw. D is within B: R's half (and carry, and the lim raise or the used
 * bit before them) comes before its done, which the acquire load saw, so
 * pass 2 visits R's half's slot (lim or the used bits grew otherwise,
 * and the read was retried) and sees the half. The sum read is exactly
 * D's if B = D: R in D has its sum on the slot of its done or on a CPU
 * slot read after the shared one, written before its done; a sum seen
 * without its done belongs to a record whose half came first, so to B \
 * D. The halves and carries read add up to the done total plus S -
 * 2^32 (x - y): S the observations of the records of B \ D, x those of
 * its records whose half wrapped and whose carry was not seen yet, y
 * carries seen without their record's half (records not in B). Counted
 * in observations, not records: a record_n() of n adds n to S.
 *
 * So a bank's read is accepted only if they add up (modulo 2^64) and no
 * record of n >= TALLY__HIST_BIG_N (16) was in flight: those announce
 * themselves in big[0] (started) before their half and in big[1]
 * (finished) after their done (tally__hist_record_big()); the read loads
 * finished (acquire) then started, equal: none in flight, every one
 * started has finished and is seen; then after the passes, past an
 * acquire fence, started again, unchanged: none whose add the passes saw
 * began since (its release fence orders the raise of started before its
 * adds). Then every record of B \ D has n <= 15, and there are fewer
 * than 2^28 of them (at most 2^22 threads, Linux's PID_MAX_LIMIT, each
 * inside at most 64 records at once, one per nested signal handler), so
 * 0 <= S < 2^32 and S = 0 only if B = D. Adding up then means S =
 * 2^32 (x - y) with x <= |B \ D|: x = y gives S = 0, so B = D and x = y =
 * 0; x > y needs S >= 2^32; x < y makes S negative. Either way B = D, no
 * carry is missing, and the bank is read exactly: every record in it
 * wholly or not at all, its bucket, count and sum together. Otherwise the
 * read is retried. Without the big-record counts two records of 2^31, one
 * unfinished (S = 2^31) and one that wrapped its half (x = 1), add up
 * (2^31 - 2^32 + 2^31 = 0) with both half seen (tests/plain/hist_big.c
 * holds such records in flight; tests/formal/hist_weight.pml).
 *
 * The cut (under the histogram's lock, one at a time) first reads both
 * banks at once: a histogram with no record in flight adds up in both,
 * and one read of every visited slot's words is the whole cut. A bank
 * that records keep landing in would rarely add up, so when that read
 * fails (and for the next TALLY__HIST_BUSY_CUTS cuts) the cut reads the
 * idle bank, makes it the active one, and then reads the bank that was
 * active: only records that read the old active bank before the switch
 * still land there, so it adds up once they finish (the cut waits: a
 * recorder preempted mid-record delays it). The cut is the sum of the
 * exact reads; each bank only grows and a later read of it holds every
 * record an earlier one held (done words only grow), so later cuts
 * contain earlier ones. tests/formal/hist.pml checks the two-read cut
 * with SPIN, and that it fails with the halves read before done, without
 * the add-up check, with done added before the sum, or with a record's
 * sum and done on two slots in any order.
 */
#ifndef TALLY_HIST_CUT_H
#define TALLY_HIST_CUT_H

#if !defined(TALLY__HIST_INSIDE)
#  error "tally/hist/cut.h is private: include <tally/hist.h>"
#endif

/* Tests only: TALLY__HIST_READ_HOOK(p, s, k) runs in the window of a
 * cut's read of slot s's bank-k record (p: the histogram's tally__pcpu),
 * between the load of done and the load of the sum. Records that commit
 * there have their sum seen without their done: the bank's halves do not
 * add up (their halves are in), and the read is retried. A test records
 * there (tests/plain/hist_cut_hook.c) instead of waiting for a schedule
 * that does. Nothing by default. */
#ifndef TALLY__HIST_READ_HOOK
#  define TALLY__HIST_READ_HOOK(p, s, k) ((void)0)
#endif

/* Cuts after a failed read of both banks that go straight to the two
 * reads (records were in flight: they likely still are). */
#define TALLY__HIST_BUSY_CUTS 8u

/* Add slot s's bank-k done and sum to *done and *sum. */
TALLY__INLINE void tally__hist_read_record(const struct tally__pcpu *p, unsigned s, unsigned k,
					   uint64_t *done, uint64_t *sum)
{
	const uint64_t *r =
		(const uint64_t *)tally__pcpu_at(p, s, (size_t)TALLY__HIST_BANK_BYTES * k);
	/* acquire: pairs with the record's release add of done (or the
	 * section's store order, x86: stores in order), so the sum and
	 * halves read after it include that record's */
	*done += __atomic_load_n(&r[0], __ATOMIC_ACQUIRE);
	TALLY__HIST_READ_HOOK(p, s, k);
	/* acquire: pairs with the record's release add of the sum (or the
	 * section's store order), so the halves read after it include the
	 * records of the sums seen */
	*sum += __atomic_load_n(&r[1], __ATOMIC_ACQUIRE);
}

/* How a cut reads a slot's halves: on a 64-bit host both halves of a
 * bucket in one load (their u64 word; bank 0's half at the lower address,
 * so the word's high half is bank 1's on a little-endian host, bank 0's
 * on a big-endian one); elsewhere one load per half. */
#if UINTPTR_MAX > 0xffffffffu
#  define TALLY__HIST_WORDS 1
#  if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#    define TALLY__HIST_HIGH_BANK 0u
#  else
#    define TALLY__HIST_HIGH_BANK 1u
#  endif
#else
#  define TALLY__HIST_WORDS 0
#endif

/*
 * x86_64 (SSE2): two buckets' words in one 16-byte load (movdqu, through
 * asm: the words are written concurrently, and an aligned 8-byte access,
 * each word here, is single-copy atomic on x86), summed two at a time.
 * Not under ThreadSanitizer, which must see the loads (it checks the
 * atomic path's reads): there, one atomic load per word.
 */
#if TALLY__HIST_WORDS && defined(__x86_64__) && defined(__SSE2__) && !TALLY__TSAN
#  define TALLY__HIST_SSE2 1
#  include <emmintrin.h>
TALLY__INLINE __m128i tally__hist_load2(const void *p)
{
	__m128i v;
	/* volatile: memory that other CPUs write; read it each time */
	__asm__ __volatile__("movdqu %1, %0" : "=x"(v) : "m"(*(const __m128i *)p));
	return v;
}

/* The sum of v's two 64-bit lanes, modulo 2^64. */
TALLY__INLINE uint64_t tally__hist_lanes(__m128i v)
{
	return (uint64_t)_mm_cvtsi128_si64(v) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
}
#else
#  define TALLY__HIST_SSE2 0
#endif

/*
 * One slot's halves into out[0..nr): bank 0's plus bank 1's (mask 3), or
 * one bank's (mask 1 or 2); stored if first, else added. t[k] gains bank
 * k's total (modulo 2^64). mask and first are constants at every call
 * (tally__hist_read_slot()), so each is a loop of its own.
 */
TALLY__INLINE void tally__hist_read_slot_(const unsigned char *c, unsigned nr, unsigned mask,
					  int first, uint64_t *out, uint64_t *t)
{
	unsigned j = 0;
#if TALLY__HIST_WORDS
	const uint64_t *x = (const uint64_t *)(const void *)c;
	uint64_t tw = 0, th = 0;
#  if TALLY__HIST_SSE2
	{
		/* little-endian: the high half is bank 1's */
		const __m128i low = _mm_set1_epi64x(0xffffffff);
		__m128i tl = _mm_setzero_si128(), tv = _mm_setzero_si128();
		for (; j + 2u <= nr; j += 2u) {
			__m128i v = tally__hist_load2(x + j), hi = _mm_srli_epi64(v, 32);
			__m128i lo = _mm_and_si128(v, low);
			__m128i b = mask == 3u ? _mm_add_epi64(lo, hi) : mask == 1u ? lo : hi;
			tl = _mm_add_epi64(tl, lo);
			tv = _mm_add_epi64(tv, hi);
			if (!first)
				b = _mm_add_epi64(b, _mm_loadu_si128((const __m128i *)(void *)(out + j)));
			_mm_storeu_si128((__m128i *)(void *)(out + j), b);
		}
		/* as the loop below counts them: the words' total, the high
		 * halves' */
		th = tally__hist_lanes(tv);
		tw = tally__hist_lanes(tl) + (th << 32);
	}
#  endif
	for (; j < nr; j++) {
		/* relaxed: pass 1's acquire loads order it after the dones */
		uint64_t v = __atomic_load_n(&x[j], __ATOMIC_RELAXED), hi = v >> 32;
		uint64_t lo = v & 0xffffffffu;
		uint64_t b = mask == 3u ? lo + hi : (mask == 2u) == (TALLY__HIST_HIGH_BANK == 1u) ? hi : lo;
		tw += v;
		th += hi;
		if (first)
			out[j] = b;
		else
			out[j] += b;
	}
	/* the low halves' total: the words' less the high halves' */
	t[TALLY__HIST_HIGH_BANK] += th;
	t[TALLY__HIST_HIGH_BANK ^ 1u] += tw - (th << 32);
#else
	const uint32_t *x = (const uint32_t *)(const void *)c;
	uint64_t t0 = 0, t1 = 0;
	for (j = 0; j < nr; j++) {
		/* relaxed: pass 1's acquire loads order it after the dones */
		uint64_t b0 = __atomic_load_n(&x[2 * j], __ATOMIC_RELAXED);
		uint64_t b1 = __atomic_load_n(&x[2 * j + 1], __ATOMIC_RELAXED);
		uint64_t b = mask == 3u ? b0 + b1 : mask == 1u ? b0 : b1;
		t0 += b0;
		t1 += b1;
		if (first)
			out[j] = b;
		else
			out[j] += b;
	}
	t[0] += t0;
	t[1] += t1;
#endif
}

/* tally__hist_read_slot_() with mask and first as constants. */
static inline void tally__hist_read_slot(const unsigned char *c, unsigned nr, unsigned mask,
					 int first, uint64_t *out, uint64_t *t)
{
	switch (mask * 2u + (first != 0)) {
	case 2:
		tally__hist_read_slot_(c, nr, 1u, 0, out, t);
		break;
	case 3:
		tally__hist_read_slot_(c, nr, 1u, 1, out, t);
		break;
	case 4:
		tally__hist_read_slot_(c, nr, 2u, 0, out, t);
		break;
	case 5:
		tally__hist_read_slot_(c, nr, 2u, 1, out, t);
		break;
	case 6:
		tally__hist_read_slot_(c, nr, 3u, 0, out, t);
		break;
	default:
		tally__hist_read_slot_(c, nr, 3u, 1, out, t);
		break;
	}
}

/*
 * Read the banks of mask (1: bank 0, 2: bank 1, 3: both) once: if each
 * adds up, their counts into out[0..nr) (stored), their sums into *sum,
 * and 1; else 0 (out and *sum garbage). Lock held.
 */
static inline int tally__hist_read(const struct tally_hist *h, unsigned mask, uint64_t *out,
				   uint64_t *sum)
{
	const struct tally__pcpu *p = &h->tally__pcpu;
	unsigned nr = h->tally__l.nr, s, k, j, lim, used, used2;
	uint64_t done[2] = {0, 0}, sm[2] = {0, 0}, tot[2] = {0, 0}, big;
	int big_busy, first = 1;
	/* acquire: the slots to visit (tally/pcpu.h's written bound, and the
	 * shared slot's use), before their words */
	lim = tally__pcpu_lim(p);
	used = __atomic_load_n(&h->tally__used, __ATOMIC_ACQUIRE);
	/* acquire: every big record counted finished is seen whole */
	big = __atomic_load_n(&h->tally__big[1], __ATOMIC_ACQUIRE);
	big_busy = __atomic_load_n(&h->tally__big[0], __ATOMIC_RELAXED) != big;
	/* pass 1: the shared slot's records first (a done there may be a
	 * record's whose half and sum are on a CPU slot), then each CPU's */
	for (k = 0; k < 2; k++)
		if ((mask >> k) & 1u && (used & TALLY__HIST_USED_SHARED))
			tally__hist_read_record(p, p->nr, k, &done[k], &sm[k]);
	for (s = 0; s < lim; s++)
		for (k = 0; k < 2; k++)
			if ((mask >> k) & 1u)
				tally__hist_read_record(p, s, k, &done[k], &sm[k]);
	/* acquire: a record whose done pass 1 saw raised these first */
	used2 = __atomic_load_n(&h->tally__used, __ATOMIC_ACQUIRE);
	if (tally__pcpu_lim(p) != lim ||
	    ((used2 ^ used) & TALLY__HIST_USED_SHARED) != 0)
		return 0; /* a slot more to visit: again */
	/* pass 2: the halves of the slots visited, then the carries */
	if (used & TALLY__HIST_USED_SHARED) {
		tally__hist_read_slot((const unsigned char *)tally__pcpu_at(p, p->nr,
									    TALLY__HIST_BUCKETS_OFF),
				      nr, mask, first, out, tot);
		first = 0;
	}
	for (s = 0; s < lim; s++) {
		tally__hist_read_slot(
			(const unsigned char *)tally__pcpu_at(p, s, TALLY__HIST_BUCKETS_OFF), nr,
			mask, first, out, tot);
		first = 0;
	}
	if (first)
		memset(out, 0, (size_t)nr * sizeof(*out));
	if (used2 & TALLY__HIST_USED_CARRY) {
		for (k = 0; k < 2; k++) {
			const uint64_t *carry = h->tally__carry + (size_t)k * nr;
			if (!((mask >> k) & 1u))
				continue;
			for (j = 0; j < nr; j++) {
				uint64_t c = __atomic_load_n(&carry[j], __ATOMIC_RELAXED);
				out[j] += c;
				tot[k] += c;
			}
		}
	}
	/* acquire: pairs with a big record's release fence, so started
	 * counts every big record whose add the passes saw */
	tally__thread_fence(__ATOMIC_ACQUIRE);
	if (big_busy || __atomic_load_n(&h->tally__big[0], __ATOMIC_RELAXED) != big)
		return 0;
	for (k = 0; k < 2; k++)
		if ((mask >> k) & 1u && tot[k] != done[k])
			return 0; /* records in flight: let them finish */
	*sum = sm[0] + sm[1];
	return 1;
}

/* A read that did not add up: wait a little for records in flight. */
TALLY__INLINE void tally__hist_wait(unsigned *tries)
{
	if (++*tries % 64u)
		tally__cpu_relax();
	else
		tally__os_yield();
}

/* The cut: every record so far, raw (since init), into out (stored) and
 * *sum. Lock held. */
static inline void tally__hist_cut(struct tally_hist *h, uint64_t *out, uint64_t *sum)
{
	unsigned act = tally__load(&h->tally__act); /* only lock holders store it */
	unsigned k = tally__hist_bank(act), j, nr = h->tally__l.nr, tries = 0;
	uint64_t s2;
	if (!h->tally__busy) {
		if (tally__hist_read(h, 3u, out, sum))
			return;
		h->tally__busy = TALLY__HIST_BUSY_CUTS;
	} else {
		h->tally__busy--;
	}
	while (!tally__hist_read(h, 1u << (k ^ 1u), out, sum))
		tally__hist_wait(&tries);
	/* Relaxed: the switch only steers new records away from bank k so
	 * that its read adds up; exactness never depends on when they see it. */
	tally__store(&h->tally__act, act ^ 4u);
	while (!tally__hist_read(h, 1u << k, h->tally__scratch, &s2))
		tally__hist_wait(&tries);
	for (j = 0; j < nr; j++)
		out[j] += h->tally__scratch[j];
	*sum += s2;
}

TALLY__INLINE void tally__hist_lock(const struct tally_hist *h)
{
	pthread_mutex_lock(&((struct tally_hist *)h)->tally__lock);
}

TALLY__INLINE void tally__hist_unlock(const struct tally_hist *h)
{
	pthread_mutex_unlock(&((struct tally_hist *)h)->tally__lock);
}

/* The snapshot's derived parts: count and the group totals (each summed
 * in registers: a total kept in memory would be a store-to-load chain per
 * bucket, 2.6 ns each here). */
static inline void tally__hist_snap_finish(struct tally_hist_snap *s)
{
	unsigned j = 0, g, nr = s->tally__l.nr;
	uint64_t count = 0;
	for (g = 0; g < s->tally__nr_groups; g++) {
		unsigned end = (g + 1u) << s->tally__group_shift;
		uint64_t t = 0;
		if (end > nr || end == 0)
			end = nr;
#if TALLY__HIST_SSE2
		{
			__m128i a = _mm_setzero_si128(), b = _mm_setzero_si128();
			for (; j + 4u <= end; j += 4u) {
				a = _mm_add_epi64(a, _mm_loadu_si128((const __m128i *)(const void *)(s->counts + j)));
				b = _mm_add_epi64(b, _mm_loadu_si128((const __m128i *)(const void *)(s->counts + j + 2)));
			}
			t = tally__hist_lanes(_mm_add_epi64(a, b));
		}
#endif
		for (; j < end; j++)
			t += s->counts[j];
		s->tally__groups[g] = t;
		count += t;
	}
	s->count = count;
}

#endif /* TALLY_HIST_CUT_H */
