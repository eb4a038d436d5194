/**
 * @file
 * tally/shm/hist.h - histograms in a shared region (tally/shm.h):
 * tally_hist's buckets and record (tally/hist.h) on the region's words, so
 * forked and unrelated processes record into one histogram, and a reader
 * outside them (tallystat, tally/shm/export.h) shows it.
 *
 *   struct tally_shm_hist lat;
 *   tally_shm_hist(r, "request_latency_seconds", NULL, 1e-9, &lat);
 *                                        // tally_hist's default layout,
 *                                        // ns recorded, seconds shown
 *   tally_shm_hist_record(&lat, ns);     // any thread of any process
 *   ...
 *   tally_shm_snapshot(ro, &snap);       // snap.v[i].hist: its exact cut
 *   tally_hist_quantile(snap.v[i].hist, 0.99) * snap.v[i].scale;
 *
 * Same name, same histogram: every process that asks for name with the
 * same buckets (struct tally_hist_opts) and scale gets it; other buckets
 * or another scale are refused (-EEXIST), as a counter of that name is.
 * Labelled names (family{k="v"}) make a family of histograms for the
 * exporter, as they make labelled series of counters.
 *
 * The buckets are tally_hist's (tally/hist.h: log-linear with a stated
 * quantile error, or explicit upper bounds), and so are the record and
 * the snapshot: struct tally_hist_snap, read with tally_hist_quantile(),
 * tally_hist_snap_bucket_range(), merged and subtracted with
 * tally_hist_snap_merge() and _delta() (also with snapshots of
 * in-process histograms of the same options).
 *
 * Where the words are: a chunk in every CPU slot's region and the shared
 * slot's (tally_hist's: 64 bytes and 8 per bucket; 36,568 for the
 * default layout, against struct tally_shm_opts.slot_bytes), and a block
 * in the region's shared area (128 bytes and 16 per bucket, 8 per
 * explicit bound: the layout, the bank word, the counts of big records
 * in flight, the carries; against struct tally_shm_opts.shared_bytes).
 *
 * The record is tally_hist's fast path on those words: the bucket from the
 * value's double (hist/layout.h), the region's bank word loaded, then
 * tally_hist's restartable section (the half, the sum and done on this
 * CPU's chunk; an abort after the half, or a record of n >= 16, finishes
 * with atomic adds on the shared slot). As tally_shm_add() it obeys the
 * region's discipline (tally/shm.h): in a region of the rseq discipline
 * a process without the rseq path records with atomic adds on the shared
 * slot only; in an atomic region every record is atomic adds (on the
 * shared slot for a process with rseq, else on its CPU's slot). Wait-free
 * apart from restarts, relaxed, and a record that returned is in the
 * shared mapping: it survives its process (kill -9 included).
 *
 * Reading: tally_shm_snapshot() (any attach) and tally_shm_hist_snapshot()
 * (the writer's handle) take the cut of tally/shm/cut.h: exact, every
 * record wholly in it or not at all. A handle, or any read-write attach,
 * steers records to the other bank while it reads one (one relaxed store
 * to the bank word, as tally_hist's cut does), so it completes once the
 * records in flight finish; a read-only attach writes nothing and may get
 * -EBUSY under a sustained record rate (tally/shm/cut.h).
 *
 * Concurrency: tally_shm_hist() as tally_shm_counter(); records: any
 * thread of any attached process, beside every call; snapshots: any
 * thread, beside records and other snapshots (several cutters at once
 * may delay each other, never err).
 */
#ifndef TALLY_SHM_HIST_H
#define TALLY_SHM_HIST_H

#include <tally/hist.h>
#include <tally/shm.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A histogram in a region (tally_shm_hist()): a value the caller keeps,
 * copied freely, valid while its region is attached. Opaque. */
struct tally_shm_hist {
	/* private: the record's view of the region's words, as tally_hist's
	 * own code reads it: tally__pcpu at the chunks (or only the shared
	 * slot's), tally__carry and tally__big in the block, the layout (a
	 * fast window of 0 where every record must be atomic) */
	struct tally_hist tally__h;
	const uint32_t *tally__bank; /* the region's bank word: 4 k */
	unsigned tally__act0;        /* the fast window's first half in bank 0 */
	unsigned tally__atomic;      /* every record atomic (tally/shm.h's rules) */
	struct tally_shm *tally__r;
	unsigned tally__idx;         /* its entry */
	struct tally__shm_hist_desc tally__d;
};

/**
 * tally_shm_hist - the histogram called name in r (attached read-write),
 * created (empty) if the region has none: every process that asks for
 * name gets the same one.
 * @param r a region attached read-write
 * @param name its name, as tally_shm_counter() takes them (labels make a
 *        family of histograms for the exporter)
 * @param o its buckets, as tally_hist_init() takes them (NULL: tally_hist's
 *        default, 1 .. 3.6e12 at precision 7)
 * @param scale the unit a reader shows: shown = recorded x scale (1e-9:
 *        nanoseconds recorded, seconds shown, Prometheus' base unit); 0
 *        means 1; else finite and > 0
 * @param h set to the histogram (a value the caller keeps)
 * @return 0 with *h set; -EINVAL (bad name, o or scale, NULL, corrupted
 * region), -EEXIST (name is another kind, or a histogram of other buckets
 * or scale), -ENOSPC (no room: slot_bytes, shared_bytes or objects of
 * struct tally_shm_opts), -EROFS, -ESTALE, or an -errno of the lock;
 * tally_shm_error(r) says why. Any thread; lock-free when name exists,
 * else blocking (the region's lock).
 */
static inline int tally_shm_hist(struct tally_shm *r, const char *name,
				 const struct tally_hist_opts *o, double scale,
				 struct tally_shm_hist *h)
{
	struct tally__hist_layout l;
	struct tally__shm_entry e;
	struct tally__shm_hist_desc d;
	const struct tally__shm_layout *L;
	unsigned char *blk;
	unsigned idx = 0;
	int err;
	if (!r || !h)
		return -EINVAL;
	scale = scale == 0.0 ? 1.0 : scale;
	if (tally__hist_opts_layout(o, &l) || !(scale > 0.0 && scale < 1e300))
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -EINVAL,
				       "histogram '%.120s': buckets out of bounds (struct "
				       "tally_hist_opts), or a scale not finite and > 0",
				       name ? name : "(null)");
	tally__shm_hist_describe(&l, scale, &d);
	memset(&e, 0, sizeof(e));
	err = tally__shm_object_ex(r, name, TALLY_SHM_HIST, &d, o ? o->bounds : NULL, &e, &idx);
	if (err)
		return err;
	L = &r->tally__lay;
	blk = r->tally__map + L->shared_off + (uint64_t)e.aux * 64u;
	memset(h, 0, sizeof(*h));
	h->tally__h.tally__l = l;
	/* explicit bounds: the region's copy (valid while attached) */
	h->tally__h.tally__l.bounds =
		l.nr_bounds ? (uint64_t *)(void *)(blk + TALLY__SHM_HIST_CARRY + 16u * (size_t)l.nr)
			    : NULL;
	h->tally__h.tally__carry = (uint64_t *)(void *)(blk + TALLY__SHM_HIST_CARRY);
	h->tally__h.tally__big = (uint64_t *)(void *)(blk + TALLY__SHM_HIST_BIG);
	h->tally__h.tally__pcpu.base = r->tally__map + L->data_off + e.off;
	h->tally__h.tally__pcpu.shift = L->shift;
	h->tally__h.tally__pcpu.nr = L->nr;
	h->tally__h.tally__pcpu.lim = L->nr;
	h->tally__bank = (const uint32_t *)(const void *)(blk + TALLY__SHM_HIST_BANK);
	h->tally__act0 = tally__hist_act0(&l);
	h->tally__h.tally__act = h->tally__act0;
	h->tally__r = r;
	h->tally__d = d;
	h->tally__idx = idx;
	if (L->flags & TALLY__SHM_F_ATOMIC) {
		h->tally__atomic = 1; /* every writer atomic, on any slot */
	} else {
#if TALLY__HAVE_RSEQ
		h->tally__atomic = !tally__rseq_registered();
#else
		h->tally__atomic = 1;
#endif
		if (h->tally__atomic) {
			/* No rseq path here: the shared slot only (never an
			 * atomic on a CPU slot that sections write). */
			h->tally__h.tally__pcpu.base += (size_t)L->nr << L->shift;
			h->tally__h.tally__pcpu.nr = 1;
			h->tally__h.tally__pcpu.lim = 1;
		}
	}
	if (h->tally__atomic)
		h->tally__h.tally__l.fast_n = 0; /* every record out of line */
	return 0;
}

/* A record the fast window does not take (out of the window, negative,
 * every record of an atomic handle, n >= TALLY__HIST_BIG_N): out of line,
 * as tally_hist's own. */
TALLY__COLD int tally__shm_hist_record_other(struct tally_shm_hist *h, int64_t v, uint32_t n)
{
	struct tally_hist *t = &h->tally__h;
	unsigned k, big;
	size_t off;
	if (tally__bad(v < 0))
		return -EINVAL;
	big = n >= TALLY__HIST_BIG_N;
	if (big) {
		/* announced before its adds (hist/record.h's big record) */
		__atomic_fetch_add(&t->tally__big[0], 1, __ATOMIC_RELAXED);
		tally__thread_fence(__ATOMIC_RELEASE);
	}
	/* relaxed: which bank a record lands in never decides exactness */
	k = (__atomic_load_n(h->tally__bank, __ATOMIC_RELAXED) >> 2) & 1u;
	off = tally__hist_half_off(tally__hist_pos_slow(&t->tally__l, (uint64_t)v), k);
	if (big || h->tally__atomic)
		tally__hist_record_atomic(t, off, n, (uint64_t)v * n, TALLY__HIST_NOTHING);
	else
		tally__hist_add(t, off, n, (uint64_t)v * n);
	if (big) /* release: the cut that reads it sees the whole record */
		__atomic_fetch_add(&t->tally__big[1], 1, __ATOMIC_RELEASE);
	return 0;
}

/* tally_shm_hist_record_n()'s body, n in 1..UINT32_MAX. */
TALLY__INLINE int tally__shm_hist_record(struct tally_shm_hist *h, int64_t v, uint32_t n)
{
	const struct tally__hist_layout *l = &h->tally__h.tally__l;
	uint64_t r = tally__hist_fast_bits(v, l->fast_shift) - l->fast_lo;
	if (tally__likely(r < l->fast_n && n < TALLY__HIST_BIG_N)) {
		/* relaxed: as in tally__shm_hist_record_other() */
		unsigned k = __atomic_load_n(h->tally__bank, __ATOMIC_RELAXED) & 4u;
		tally__hist_add(&h->tally__h, h->tally__act0 + k + 8u * (size_t)r, n,
				(uint64_t)v * n);
		return 0;
	}
	return tally__shm_hist_record_other(h, v, n);
}

/**
 * tally_shm_hist_record - record one observation of value v (>= 0, in the
 * histogram's unit) into h. Returns 0, or -EINVAL (v < 0: nothing
 * recorded). Any thread of any attached process, beside every call;
 * wait-free apart from restarts; relaxed. Once it returns, the record is
 * in the shared mapping (it survives the process), and a snapshot has it
 * wholly or not at all.
 */
TALLY__INLINE int tally_shm_hist_record(struct tally_shm_hist *h, int64_t v)
{
	return tally__shm_hist_record(h, v, 1u);
}

/**
 * tally_shm_hist_record_n - record n observations of v (as n
 * tally_shm_hist_record(h, v)); n 0..TALLY_HIST_N_MAX (0 records nothing).
 * Returns 0, or -EINVAL (v < 0, n too large: nothing recorded). Contract
 * as tally_shm_hist_record(); n >= 16 takes atomic adds on the shared
 * slot (tally_hist_record_n()'s big records).
 */
static inline int tally_shm_hist_record_n(struct tally_shm_hist *h, int64_t v, uint64_t n)
{
	if (tally__bad(v < 0 || n > TALLY_HIST_N_MAX))
		return -EINVAL;
	if (!n)
		return 0;
	return tally__shm_hist_record(h, v, (uint32_t)n);
}

/** tally_shm_hist_snap_init - size s for h's buckets (as
 * tally_hist_snap_init()). 0, -EINVAL or -ENOMEM. Any thread. */
static inline int tally_shm_hist_snap_init(struct tally_hist_snap *s, const struct tally_shm_hist *h)
{
	if (!s || !h)
		return -EINVAL;
	return tally_hist_snap_init(s, &h->tally__h);
}

/**
 * tally_shm_hist_snapshot - one exact cut of h (everything recorded into
 * it by every process) into s (sized by tally_shm_hist_snap_init(), or
 * for another histogram of the same buckets).
 * @param h a histogram of a region attached read-write
 * @param s where the cut goes
 * @param stuck NULL, or set to 0 for an exact cut, else to the
 *        observations in s's buckets whose records were left in the middle
 *        (a process killed or stopped inside one for
 *        TALLY_SHM_HIST_STUCK_MS: in the count, not in the sum;
 *        tally/shm/cut.h)
 * @return 0, -EINVAL (NULL, s of other buckets, or a corrupted region:
 * tally_shm_error() of h's region), -EBUSY (records all along: not
 * expected here), -ENOMEM. Any thread, beside records and snapshots;
 * steers records away from the bank it reads (h's region is writable),
 * so it waits only for records in flight (one preempted inside its
 * record delays it). O(buckets x CPU slots).
 */
static inline int tally_shm_hist_snapshot(struct tally_shm_hist *h, struct tally_hist_snap *s,
					  uint64_t *stuck)
{
	struct tally_shm *r;
	struct tally__shm_entry e;
	uint64_t *buf, st = 0;
	int err;
	if (!h || !s || !s->counts || !tally__hist_layout_eq(&h->tally__h.tally__l, &s->tally__l))
		return -EINVAL;
	r = h->tally__r;
	memcpy(&e, (const struct tally__shm_entry *)(const void *)(r->tally__map +
								   r->tally__lay.dir_off) +
			   h->tally__idx,
	       sizeof(e));
	e.name[TALLY_SHM_NAME_MAX] = '\0';
	buf = (uint64_t *)malloc(3u * (size_t)h->tally__d.nr_buckets * sizeof(uint64_t));
	if (!buf)
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -ENOMEM,
				       "out of memory");
	err = tally__shm_hist_fill(r->tally__map, r->tally__map, &r->tally__lay, &e, &h->tally__d,
				   1, s, &st, buf, r->tally__error, sizeof(r->tally__error));
	free(buf);
	if (stuck)
		*stuck = st;
	return err;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_SHM_HIST_H */
