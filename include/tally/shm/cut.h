/**
 * @file
 * tally/shm/cut.h - a histogram in a region, read: its block checked, its
 * layout rebuilt, and its cut taken from untrusted words (private;
 * include <tally/shm.h>).
 *
 * The words are tally_hist's (tally/hist/layout.h): in every CPU slot's
 * region and the shared slot's, a chunk of two bank records (done, sum[0],
 * sum[1]) and two u32 halves per bucket; in the shared area, the block
 * of tally/shm/format.h (descriptor, bank word, big-record counts,
 * carries, bounds). Records are tally_hist's (tally/hist/record.h), so a
 * bank's read is accepted on tally/hist/cut.h's rule and is exact for the
 * same reasons: every record wholly in it or not at all, bucket, count
 * and sum together. What differs:
 *
 * - Whose format a slot's record has is the region's, not the reader's:
 *   in a region of the rseq discipline the CPU slots take only rseq
 *   sections, in an atomic one only atomic adds; the shared slot takes
 *   only atomic adds in both (tally/shm/hist.h sends every atomic record
 *   of an rseq region there). A CPU slot of an rseq region is read as
 *   tally/hist/layout.h says every format its section has had is read
 *   (done's top bit masked, the sum at sum[done >> 63], done loaded
 *   again: a moved done is a torn pair); the others as done and sum[0].
 *   A sum seen without its done (the record in the middle of its adds)
 *   has its half seen too, and fails the add-up check below.
 * - The order of the reads: the shared slot's record first (a record
 *   whose done is there may have its half on any CPU slot: a section
 *   aborted after its half finishes on the shared slot), then each CPU
 *   slot's record and at once its halves, then the shared slot's halves
 *   and the carries. Every done read precedes the halves of the slots its
 *   record may have added to, so, as in tally/hist/cut.h, the records
 *   whose done was seen are among those whose half was seen, and the
 *   add-up check (modulo 2^63, no big record in flight) proves them the
 *   same set. A CPU slot whose done moved while its halves were read is
 *   read again (up to TALLY__SHM_HIST_SLOT_TRIES times): its read then
 *   lies between two equal loads of done, so only a record in the middle
 *   of its section on that CPU (a few instructions) can keep the bank
 *   from adding up; that, not the whole read's length, is the window a
 *   busy writer must hit.
 * - Records that never finish. A process can die (kill -9) or stop
 *   (SIGSTOP) in the middle of a record, its half added and its done
 *   not: that bank's halves then exceed its done for good (or for as
 *   long as it is stopped), and a big record's start without its finish
 *   holds the big-record check. So a bank is also taken when two reads
 *   in a row are the same (the same counts, done, sum and big counts:
 *   nothing moved between them, so they are one instant of the bank).
 *   Such a record is then in its bucket and the count, and not in the
 *   sum (unless it died between its sum and its done: atomic adds), a
 *   difference of one record's value per record stuck, never a record
 *   that returned lost. One case is beyond any reader: a process killed
 *   between a half's wrap (once per 2^32 records of one bucket on one CPU
 *   slot) and its carry leaves that bucket 2^32 short for good.
 * - The bank: records add to the bank the region's bank word names. A
 *   cutter that attached read-write steers them away from the bank it
 *   reads, as tally_hist's cut does (idle bank first, then the bank word
 *   flipped, then the other; flipped again before each retry), so it
 *   completes once the records in flight finish. A reader attached
 *   read-only writes nothing: it reads each bank as it is and retries
 *   until it adds up or stands still for two reads, which a record rate
 *   that keeps a CPU inside a record at every read (one every few hundred
 *   nanoseconds on a CPU, sustained) can prevent: then -EBUSY after
 *   TALLY_SHM_HIST_TRIES reads. Several read-write cutters at once are
 *   each exact; they may delay each other (each steers records away from
 *   its own bank).
 * - Bounded: nothing loops on what it reads. An image (a copy, read by
 *   tally_shm_read_image()) stands still: it is read twice at most, and
 *   halves that do not add up to its done are taken as they are (a
 *   record stuck in the middle looks the same).
 * - The slots: the record's section (tally/hist/record.h) writes the CPU
 *   slot it runs on without raising the region's written bound, so a
 *   histogram's cut visits every CPU slot (nr_slots + 1 chunks per bank):
 *   its pages in the slots of CPUs that never recorded are read (on
 *   tmpfs, allocated) by the first cut.
 */
#ifndef TALLY_SHM_CUT_H
#define TALLY_SHM_CUT_H

#if !defined(TALLY__SHM_INSIDE)
#  error "tally/shm/cut.h is private: include <tally/shm.h>"
#endif

/** Reads of a bank a cut tries before it gives up with -EBUSY (a reader
 * attached read-only, under a sustained record rate; or a corrupted
 * region). */
#ifndef TALLY_SHM_HIST_TRIES
#  define TALLY_SHM_HIST_TRIES 1000u
#endif
/** How long (ms) a bank must stand still without adding up before a cut
 * takes it as it stands (a record stuck in the middle: its process killed
 * or stopped inside it). Longer than a preempted record's wait for its
 * CPU, so that one finishes first. */
#ifndef TALLY_SHM_HIST_STUCK_MS
#  define TALLY_SHM_HIST_STUCK_MS 10u
#endif
/* Reads of one CPU slot within a bank's read while its done moves. */
#define TALLY__SHM_HIST_SLOT_TRIES 8u

/* Sleep about ns (a condition variable nobody signals: strict C has no
 * nanosleep). */
static inline void tally__shm_nap(uint64_t ns)
{
	struct tally__os_cond c;
	struct timespec dl;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	if (tally__os_cond_init(&c)) {
		tally__os_yield();
		return;
	}
	tally__os_cond_deadline(&c, &dl, ns);
	pthread_mutex_lock(&m);
	while (tally__os_cond_timedwait(&c, &m, &dl) == 0)
		; /* (spurious) */
	pthread_mutex_unlock(&m);
	tally__os_cond_destroy(&c);
	pthread_mutex_destroy(&m);
}

/* Tests only: TALLY__SHM_HIST_READ_HOOK(s) runs in a cut between the load
 * of CPU slot s's done and the read of its halves (a test records there:
 * tests/plain/shm_hist.c). Nothing by default. */
#ifndef TALLY__SHM_HIST_READ_HOOK
#  define TALLY__SHM_HIST_READ_HOOK(s) ((void)0)
#endif

/* The bytes of a histogram's block in the shared area (64-aligned). */
static inline uint64_t tally__shm_hist_block(uint64_t nr_buckets, uint64_t nr_bounds)
{
	return (TALLY__SHM_HIST_CARRY + 16u * nr_buckets + 8u * nr_bounds + 63u) / 64u * 64u;
}

/* The bytes of a histogram's chunk in every slot's region. */
static inline uint64_t tally__shm_hist_chunk(uint64_t nr_buckets)
{
	return TALLY__HIST_BUCKETS_OFF + 8u * nr_buckets;
}

/* The layout d describes, into *l, its bounds (explicit) read from bounds
 * (nr_bounds of them) into buf; 0 or -EINVAL (d is no layout tally_hist
 * takes, or not the one whose bucket count it gives). */
static inline int tally__shm_hist_layout(const struct tally__shm_hist_desc *d,
					 const uint64_t *bounds, uint64_t *buf,
					 struct tally__hist_layout *l)
{
	struct tally_hist_opts o;
	unsigned i;
	memset(&o, 0, sizeof(o));
	if (d->nr_bounds) {
		for (i = 0; i < d->nr_bounds; i++) /* copied once, then checked */
			buf[i] = __atomic_load_n(&bounds[i], __ATOMIC_RELAXED);
		o.bounds = buf;
		o.nr_bounds = d->nr_bounds;
	} else {
		if (!d->precision) /* (0 would ask for the default) */
			return -EINVAL;
		o.lowest = d->lowest;
		o.highest = d->highest;
		o.precision = d->precision;
	}
	if (tally__hist_opts_layout(&o, l) || l->nr != d->nr_buckets)
		return -EINVAL;
	l->bounds = d->nr_bounds ? buf : NULL;
	return 0;
}

/*
 * Check histogram entry e (number i, its kind, name and directory fields
 * checked) against the region's reserved space, and copy its descriptor
 * into *d. 0 or -EINVAL with the reason. The layout itself is checked by
 * tally__shm_hist_layout() (it needs room for the bounds).
 */
static inline int tally__shm_hist_desc_get(const unsigned char *map,
					   const struct tally__shm_layout *L,
					   const struct tally__shm_state *st,
					   const struct tally__shm_entry *e, unsigned i,
					   struct tally__shm_hist_desc *d, char *why, size_t n)
{
	uint64_t at = (uint64_t)e->aux * 64u, chunk;
	if (at > st->sused || st->sused - at < sizeof(*d))
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: histogram %u ('%s') has its block at %llu, past "
				       "the %llu bytes of shared words reserved",
				       i, e->name, (unsigned long long)at,
				       (unsigned long long)st->sused);
	memcpy(d, map + L->shared_off + at, sizeof(*d));
	if (d->nr_buckets < 3 || d->nr_buckets > TALLY_HIST_BUCKETS_MAX ||
	    (d->nr_bounds && (d->precision || d->nr_bounds + 2u != d->nr_buckets)) ||
	    (!d->nr_bounds && (d->precision < 1 || d->precision > TALLY_HIST_PRECISION_MAX)) ||
	    !(d->scale > 0.0 && d->scale < 1e300))
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: histogram %u ('%s'): %u buckets, %u bounds, "
				       "precision %u, or its scale, out of range",
				       i, e->name, (unsigned)d->nr_buckets, (unsigned)d->nr_bounds,
				       (unsigned)d->precision);
	chunk = tally__shm_hist_chunk(d->nr_buckets);
	if (st->sused - at < tally__shm_hist_block(d->nr_buckets, d->nr_bounds) ||
	    e->words != chunk / 8u || e->off % 64u || e->off > st->used ||
	    st->used - e->off < chunk)
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: histogram %u ('%s') of %u buckets: chunk at %llu "
				       "(%u words) or block at %llu past the space reserved",
				       i, e->name, (unsigned)d->nr_buckets,
				       (unsigned long long)e->off, (unsigned)e->words,
				       (unsigned long long)at);
	return 0;
}

/* Slot record r (bank k's: done, sum[0], sum[1]) into *done, *sum and
 * done's raw word *raw: the rseq format (a consistent pair, or -1 when
 * done moved between the loads) or the atomic one. */
static inline int tally__shm_hist_record_read(const uint64_t *r, int rseq_fmt, uint64_t *done,
					      uint64_t *sum, uint64_t *raw)
{
	/* acquire: pairs with the record's release add of done (atomic
	 * format) or its section's store order (x86: stores in order), so
	 * the sum and halves read after it include that record's */
	uint64_t d = __atomic_load_n(&r[0], __ATOMIC_ACQUIRE);
	if (rseq_fmt) {
		uint64_t sm = __atomic_load_n(&r[1 + (d >> 63)], __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r[0], __ATOMIC_RELAXED) != d)
			return -1;
		*done = d & (UINT64_MAX >> 1);
		*sum = sm;
	} else {
		*done = d;
		*sum = __atomic_load_n(&r[1], __ATOMIC_ACQUIRE);
	}
	*raw = d;
	return 0;
}

/* out[j] += the half at hv[2 j], j < nb (one bank's halves of a chunk),
 * each also kept in one[j] (one not NULL); undo: out[j] -= one[j]. Out of
 * line: inside the cut's loops the compiler kept this loop's index in
 * memory (20x slower, measured). */
#if defined(TALLY__DOXYGEN) /* (Doxygen reads the attribute as a name) */
#  define TALLY__SHM_NOINLINE static
#else
#  define TALLY__SHM_NOINLINE static __attribute__((noinline, unused))
#endif
TALLY__SHM_NOINLINE void tally__shm_hist_halves(uint64_t *out, uint32_t *one, const uint32_t *hv,
						unsigned nb, int undo)
{
	unsigned j;
	if (undo)
		for (j = 0; j < nb; j++)
			out[j] -= one[j];
	else if (one)
		for (j = 0; j < nb; j++) {
			uint32_t v = __atomic_load_n(&hv[2u * j], __ATOMIC_RELAXED);
			one[j] = v;
			out[j] += v;
		}
	else
		for (j = 0; j < nb; j++)
			out[j] += __atomic_load_n(&hv[2u * j], __ATOMIC_RELAXED);
}

/* Where a histogram's words are in a mapping: slot 0's chunk, the slots'
 * distance, the CPU slots, their records' format, the block. */
struct tally__shm_hist_at {
	const unsigned char *base;
	unsigned shift, nr, nb;
	int rseq_fmt;
	const unsigned char *blk;
};

/* One read of a bank: its counts are in the caller's array; these are
 * the rest, for the add-up check and for comparing two reads. */
struct tally__shm_bank_read {
	uint64_t done, sum, started, finished, total;
	int adds_up, torn; /* torn: a slot's done and sum were never a pair */
};

/*
 * Read bank k once (the order at the top of this file) into tmp[0..nb)
 * (its counts: halves and carries) and *rd. tmp: nb u64; one: nb u32 of
 * scratch.
 */
static inline void tally__shm_hist_read_bank(const struct tally__shm_hist_at *a, unsigned k,
					     uint64_t *tmp, uint32_t *one,
					     struct tally__shm_bank_read *rd)
{
	const uint64_t *big = (const uint64_t *)(const void *)(a->blk + TALLY__SHM_HIST_BIG);
	const uint64_t *carry =
		(const uint64_t *)(const void *)(a->blk + TALLY__SHM_HIST_CARRY) + (size_t)k * a->nb;
	const unsigned char *sh = a->base + ((size_t)a->nr << a->shift);
	const unsigned nb = a->nb, nr = a->nr, shift = a->shift;
	const size_t half0 = tally__hist_half_off(0, k); /* bucket j's: + 8 j */
	uint64_t done = 0, sm = 0, total = 0, d = 0, s_ = 0, raw = 0;
	/* acquire: every big record counted finished is seen whole */
	uint64_t b1 = __atomic_load_n(&big[1], __ATOMIC_ACQUIRE);
	uint64_t b0 = __atomic_load_n(&big[0], __ATOMIC_RELAXED);
	unsigned s, j, t;
	int torn = 0;
	memset(tmp, 0, (size_t)nb * sizeof(*tmp));
	(void)tally__shm_hist_record_read(
		(const uint64_t *)(const void *)(sh + TALLY__HIST_BANK_BYTES * k), 0, &done, &sm,
		&raw);
	for (s = 0; s < nr; s++) {
		const unsigned char *c = a->base + ((size_t)s << shift);
		const uint64_t *r = (const uint64_t *)(const void *)(c + TALLY__HIST_BANK_BYTES * k);
		const uint32_t *hv = (const uint32_t *)(const void *)(c + half0);
		for (t = 0;; t++) {
			int ok = !tally__shm_hist_record_read(r, a->rseq_fmt, &d, &s_, &raw);
			if (ok) {
				TALLY__SHM_HIST_READ_HOOK(s);
				tally__shm_hist_halves(tmp, one, hv, nb, 0);
				/* done unmoved: no record committed here meanwhile */
				if (__atomic_load_n(&r[0], __ATOMIC_RELAXED) == raw)
					break;
			}
			if (t + 1u >= TALLY__SHM_HIST_SLOT_TRIES) {
				torn |= !ok; /* (d, s_ are not a pair: no use) */
				break;   /* the add-up check decides */
			}
			if (ok) /* this slot again: its halves out */
				tally__shm_hist_halves(tmp, one, hv, nb, 1);
		}
		done += d;
		sm += s_;
	}
	tally__shm_hist_halves(tmp, NULL, (const uint32_t *)(const void *)(sh + half0), nb, 0);
	for (j = 0; j < nb; j++) {
		tmp[j] += __atomic_load_n(&carry[j], __ATOMIC_RELAXED);
		total += tmp[j];
	}
	/* acquire: pairs with a big record's release fence, so started counts
	 * every big record whose add the passes saw */
	tally__thread_fence(__ATOMIC_ACQUIRE);
	rd->done = done;
	rd->sum = sm;
	rd->finished = b1;
	rd->started = __atomic_load_n(&big[0], __ATOMIC_RELAXED);
	rd->total = total;
	rd->torn = torn;
	rd->adds_up = !torn && ((total - done) << 1) == 0 && b0 == b1 && rd->started == b1;
}

/*
 * The cut of a histogram: every record so far into counts[0..nb) and *sum
 * (both banks). steer: the bank word, when the cutter may write it (a
 * read-write attach), else NULL. live: 0 for an image (read twice at most,
 * taken as it stands), else 1. scratch: tmp, prev (nb u64 each) and one
 * (nb u32). A bank is taken when a read of it adds up (exact), or when it
 * has stood still, not adding up, for TALLY_SHM_HIST_STUCK_MS (two reads
 * in a row the same: nothing moved in between, so they are one instant of
 * it; a record stuck in the middle there is then in the buckets, maybe
 * not in the sum; *stuck gets their observations, the buckets' total
 * less the count done, modulo 2^63; 0 for an exact cut). 0, or -EBUSY
 * (live records all along: after TALLY_SHM_HIST_TRIES reads and twice the
 * stuck time) with the reason.
 */
static inline int tally__shm_hist_cut(const struct tally__shm_hist_at *a, uint32_t *steer,
				      int live, uint64_t *counts, uint64_t *sum, uint64_t *stuck,
				      uint64_t *tmp, uint64_t *prev, uint32_t *one,
				      const char *name, char *why, size_t n)
{
	const uint32_t *bank = (const uint32_t *)(const void *)(a->blk + TALLY__SHM_HIST_BANK);
	const uint64_t wait = live ? (uint64_t)TALLY_SHM_HIST_STUCK_MS * 1000000u : 0;
	unsigned k = (__atomic_load_n(bank, __ATOMIC_RELAXED) >> 2) & 1u, pass, t, b, j;
	struct tally__shm_bank_read rd, last;
	uint64_t t0 = 0, still = 0, now;
	memset(counts, 0, (size_t)a->nb * sizeof(*counts));
	memset(&last, 0, sizeof(last));
	*sum = 0;
	*stuck = 0;
	for (pass = 0; pass < 2; pass++) {
		b = pass ? k : k ^ 1u; /* the idle bank first */
		for (t = 0;; t++) {
			int same;
			/* Steer records to the other bank (relaxed: where a record
			 * lands never decides exactness, only how soon a bank
			 * adds up). */
			if (steer && ((__atomic_load_n(steer, __ATOMIC_RELAXED) >> 2) & 1u) == b)
				__atomic_store_n(steer, (b ^ 1u) << 2, __ATOMIC_RELAXED);
			tally__shm_hist_read_bank(a, b, tmp, one, &rd);
			same = !rd.adds_up && t && !rd.torn && !last.torn && rd.done == last.done &&
			       rd.sum == last.sum && rd.started == last.started &&
			       rd.finished == last.finished &&
			       !memcmp(tmp, prev, (size_t)a->nb * sizeof(*tmp));
			now = live && !rd.adds_up ? tally__os_mono_ns() : 0;
			if (!t)
				t0 = now;
			if (!same)
				still = now; /* standing still since */
			if (rd.adds_up || (same && now - still >= wait)) {
				for (j = 0; j < a->nb; j++)
					counts[j] += tmp[j];
				*sum += rd.sum;
				if (!rd.adds_up)
					*stuck += (rd.total - rd.done) & (UINT64_MAX >> 1);
				break;
			}
			if (live ? t + 1u >= TALLY_SHM_HIST_TRIES && now - t0 >= 2 * wait : t >= 1)
				return tally__shm_fail(
					why, n, -EBUSY,
					"histogram '%s': its buckets and count did not add up in "
					"%u reads, nor stood still (records kept landing in the "
					"bank read: a read-only reader cannot steer them away)",
					name, t + 1u);
			memcpy(prev, tmp, (size_t)a->nb * sizeof(*tmp));
			last = rd;
			if (same)
				tally__shm_nap(1000000); /* stuck, or nearly: wait for it */
			else if ((t + 1u) % 64u)
				tally__cpu_relax();
			else
				tally__os_yield();
		}
	}
	return 0;
}

/* ---- a histogram's cut into a snapshot ---------------------------------------- */

/* Scratch for a cut of nb buckets with nr_bounds bounds: *cap u64 words
 * at *buf, grown; 0 or -ENOMEM. */
static inline int tally__shm_scratch(uint64_t **buf, size_t *cap, size_t words)
{
	if (words > *cap) {
		uint64_t *b = (uint64_t *)realloc(*buf, words * sizeof(uint64_t));
		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = words;
	}
	return 0;
}

/*
 * Histogram entry e (number i, its directory fields checked) of the region
 * at map: its descriptor into *d and its layout into *l, whose bounds (if
 * explicit) are in the scratch at *buf (grown to hold the cut's scratch
 * too: see tally__shm_hist_fill()). 0, -EINVAL or -ENOMEM with the reason.
 */
static inline int tally__shm_hist_prepare(const unsigned char *map,
					  const struct tally__shm_layout *L,
					  const struct tally__shm_state *st,
					  const struct tally__shm_entry *e, unsigned i,
					  struct tally__shm_hist_desc *d, struct tally__hist_layout *l,
					  uint64_t **buf, size_t *cap, char *why, size_t n)
{
	const unsigned char *blk;
	int err = tally__shm_hist_desc_get(map, L, st, e, i, d, why, n);
	if (err)
		return err;
	if (tally__shm_scratch(buf, cap, 3u * (size_t)d->nr_buckets + d->nr_bounds))
		return tally__shm_fail(why, n, -ENOMEM, "out of memory");
	blk = map + L->shared_off + (uint64_t)e->aux * 64u;
	if (tally__shm_hist_layout(d,
				   (const uint64_t *)(const void *)(blk + TALLY__SHM_HIST_CARRY +
								    16u * (size_t)d->nr_buckets),
				   *buf + 3u * (size_t)d->nr_buckets, l))
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: histogram %u ('%s'): range %llu..%llu at "
				       "precision %u, or %u bounds, make no %u buckets (bounds must "
				       "increase, up to 2^63 - 1)",
				       i, e->name, (unsigned long long)d->lowest,
				       (unsigned long long)d->highest, (unsigned)d->precision,
				       (unsigned)d->nr_bounds, (unsigned)d->nr_buckets);
	return 0;
}

/*
 * Histogram entry e's cut (its layout prepared: d; buf as
 * tally__shm_hist_prepare() left it) into s, a snapshot of that layout.
 * wmap: the mapping again when it is writable (the cut steers records
 * away from the bank it reads), else NULL; live, *stuck: as
 * tally__shm_hist_cut().
 */
static inline int tally__shm_hist_fill(const unsigned char *map, unsigned char *wmap,
				       const struct tally__shm_layout *L,
				       const struct tally__shm_entry *e,
				       const struct tally__shm_hist_desc *d, int live,
				       struct tally_hist_snap *s, uint64_t *stuck, uint64_t *buf,
				       char *why, size_t n)
{
	struct tally__shm_hist_at a;
	uint64_t at = L->shared_off + (uint64_t)e->aux * 64u;
	int err;
	a.base = map + L->data_off + e->off;
	a.shift = L->shift;
	a.nr = L->nr;
	a.nb = d->nr_buckets;
	a.rseq_fmt = !(L->flags & TALLY__SHM_F_ATOMIC);
	a.blk = map + at;
	err = tally__shm_hist_cut(&a,
				  wmap ? (uint32_t *)(void *)(wmap + at + TALLY__SHM_HIST_BANK) : NULL,
				  live, s->counts, &s->sum, stuck, buf, buf + a.nb,
				  (uint32_t *)(void *)(buf + 2u * a.nb), e->name, why, n);
	if (!err)
		tally__hist_snap_finish(s);
	return err;
}

/* s sized for layout l (tally_hist_snap_init(), which sizes a snapshot
 * from a histogram's layout and wants it initialised: a carry array;
 * nothing else is read). 0 or -ENOMEM. */
static inline int tally__shm_hist_snap_init(struct tally_hist_snap *s,
					    const struct tally__hist_layout *l)
{
	struct tally_hist shape;
	uint64_t none = 0;
	memset(&shape, 0, sizeof(shape));
	shape.tally__l = *l;
	shape.tally__carry = &none;
	return tally_hist_snap_init(s, &shape);
}

/* *sp: a snapshot of layout l (the one there if it has l's buckets, else
 * a new one). 0 or -ENOMEM. */
static inline int tally__shm_hist_snap_for(struct tally_hist_snap **sp,
					   const struct tally__hist_layout *l)
{
	if (*sp && (*sp)->counts && tally__hist_layout_eq(&(*sp)->tally__l, l))
		return 0;
	if (*sp)
		tally_hist_snap_destroy(*sp);
	else if (!(*sp = (struct tally_hist_snap *)calloc(1, sizeof(**sp))))
		return -ENOMEM;
	return tally__shm_hist_snap_init(*sp, l);
}

/* The descriptor of layout l with scale (what a creator writes). */
static inline void tally__shm_hist_describe(const struct tally__hist_layout *l, double scale,
					    struct tally__shm_hist_desc *d)
{
	memset(d, 0, sizeof(*d));
	if (!l->nr_bounds) {
		d->lowest = l->lowest;
		d->highest = l->highest;
		d->precision = l->p;
	}
	d->nr_bounds = l->nr_bounds;
	d->nr_buckets = l->nr;
	d->scale = scale;
}

/* Do two descriptors describe the same buckets (bounds aside) and scale? */
static inline int tally__shm_hist_desc_eq(const struct tally__shm_hist_desc *a,
					  const struct tally__shm_hist_desc *b)
{
	return a->lowest == b->lowest && a->highest == b->highest && a->precision == b->precision &&
	       a->nr_bounds == b->nr_bounds && a->nr_buckets == b->nr_buckets &&
	       a->scale == b->scale;
}

/* ---- snapshots ------------------------------------------------------------------ */

/*
 * Every published object of the region at map into s: names, kinds,
 * values (per-process gauges over the rows alive, tested through fd; < 0:
 * an image, read at most twice), histograms' cuts (wmap: the mapping
 * again when writable, to steer records). 0, -EINVAL, -EBUSY or -ENOMEM.
 */
static inline int tally__shm_snap_into(const unsigned char *map, unsigned char *wmap, int fd,
				       const struct tally__shm_layout *L, struct tally_shm_snap *s,
				       char *why, size_t wn)
{
	struct tally__shm_state st;
	struct tally__shm_entry e;
	struct tally__shm_hist_desc d;
	struct tally__hist_layout l;
	unsigned i, rows = 0;
	int err = tally__shm_state(map, L, &st, why, wn);
	if (err)
		return err;
	if (st.count > s->cap) {
		struct tally_shm_value *v =
			(struct tally_shm_value *)realloc(s->v, st.count * sizeof(*v));
		if (!v)
			return tally__shm_fail(why, wn, -ENOMEM, "out of memory");
		memset(v + s->cap, 0, (st.count - s->cap) * sizeof(*v)); /* no hist yet */
		s->v = v;
		s->cap = st.count;
	}
	if (L->proc_cap > s->alive_cap) {
		unsigned char *a = (unsigned char *)realloc(s->alive, L->proc_cap);
		if (!a)
			return tally__shm_fail(why, wn, -ENOMEM, "out of memory");
		s->alive = a;
		s->alive_cap = L->proc_cap;
	}
	s->n = 0;
	s->nr_slots = L->nr;
	s->created_ns = L->created_ns;
	s->lim = st.lim;
	s->procs = st.procs;
	for (i = 0; i < st.count; i++) {
		struct tally_shm_value *v = &s->v[i];
		err = tally__shm_entry_get(map, L, &st, i, &e, why, wn);
		if (err)
			return err;
		memcpy(v->name, e.name, e.name_len + 1u);
		v->kind = e.kind;
		v->scale = 1.0;
		v->stuck = 0;
		if (e.kind != TALLY_SHM_HIST && v->hist) {
			tally_hist_snap_destroy(v->hist);
			free(v->hist);
			v->hist = NULL;
		}
		if (e.kind == TALLY_SHM_COUNTER || e.kind == TALLY_SHM_GAUGE) {
			v->raw = tally__shm_sum_at(map, L, st.lim, e.off);
		} else if (e.kind == TALLY_SHM_PROC_GAUGE) {
			if (!rows++) /* once per snapshot: a syscall per row */
				s->procs_live = tally__shm_liveness(fd, L, st.procs, s->alive);
			v->raw = tally__shm_psum_at(map, L, st.procs, s->alive, e.off);
		} else {
			err = tally__shm_hist_prepare(map, L, &st, &e, i, &d, &l, &s->scratch,
						      &s->scratch_cap, why, wn);
			if (!err && tally__shm_hist_snap_for(&v->hist, &l))
				err = tally__shm_fail(why, wn, -ENOMEM, "out of memory");
			if (!err)
				err = tally__shm_hist_fill(map, wmap, L, &e, &d, fd >= 0, v->hist,
							   &v->stuck, s->scratch, why, wn);
			if (err)
				return err;
			v->raw = (tally_uword)v->hist->count;
			v->scale = d.scale;
		}
	}
	s->n = st.count;
	if (!rows)
		s->procs_live = tally__shm_liveness(fd, L, st.procs, s->alive);
	return 0;
}

/*
 * The values of objects [0, n) of the region at map into raw[0..n) (a
 * histogram's: 0; its cut is tally__shm_hist_fill()'s): per-process gauges
 * over the rows alive (fd, alive: as tally__shm_snap_into()); *got how
 * many are published. Names are not read (they were checked when the
 * caller took them). 0 or -EINVAL with the reason.
 */
static inline int tally__shm_values(const unsigned char *map, const struct tally__shm_layout *L,
				    int fd, unsigned char *alive, size_t n, tally_uword *raw,
				    size_t *got, char *why, size_t wn)
{
	struct tally__shm_state st;
	struct tally__shm_entry e;
	size_t i;
	int err = tally__shm_state(map, L, &st, why, wn), rows = 0;
	*got = 0;
	if (err)
		return err;
	for (i = 0; i < n && i < st.count; i++) {
		err = tally__shm_entry_get_ex(map, L, &st, (unsigned)i, &e, 0, why, wn);
		if (err)
			return err;
		if (e.kind == TALLY_SHM_COUNTER || e.kind == TALLY_SHM_GAUGE) {
			raw[i] = tally__shm_sum_at(map, L, st.lim, e.off);
		} else if (e.kind == TALLY_SHM_PROC_GAUGE) {
			if (!rows++)
				(void)tally__shm_liveness(fd, L, st.procs, alive);
			raw[i] = tally__shm_psum_at(map, L, st.procs, alive, e.off);
		} else {
			raw[i] = 0;
		}
	}
	*got = i;
	return 0;
}

#endif /* TALLY_SHM_CUT_H */
