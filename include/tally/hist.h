/**
 * @file
 * tally/hist.h - tally_hist: a per-CPU histogram of non-negative integer
 * values (latencies in nanoseconds, sizes in bytes) with a stated quantile
 * error, exact consistent snapshots, reset, and merging.
 *
 *   struct tally_hist h;
 *   tally_hist_init(&h, NULL);          // log-linear, 1 .. 3.6e12 (1 h in ns), p = 7
 *   tally_hist_record(&h, ns);          // any thread, wait-free
 *   struct tally_hist_snap s;
 *   tally_hist_snap_init(&s, &h);       // buckets sized for h
 *   tally_hist_snapshot(&h, &s);        // one exact cut
 *   double p99 = tally_hist_quantile(&s, 0.99);
 *   tally_hist_snap_destroy(&s);
 *   tally_hist_destroy(&h);
 *
 * Buckets. Log-linear by default (HdrHistogram's scheme): every power of
 * two split into 2^p buckets (p = precision, 1..TALLY_HIST_PRECISION_MAX),
 * over the range lowest .. highest the caller sets; below 2^(p+1) every
 * value has a bucket of its own. Or explicit upper bounds (Prometheus'
 * `le`: bucket j holds bounds[j-1] < v <= bounds[j]). Values outside the
 * range are counted, not lost: in the "below" bucket (position 0, v <
 * lowest) or the "above" bucket (the last position, v > highest, or over
 * the last explicit bound: the +Inf bucket). A snapshot's counts[] has
 * every position; tally_hist_snap_bucket_range() says what each holds.
 *
 * Quantile error: a log-linear bucket [lo, hi] is at most 2^-p * lo wide,
 * and tally_hist_quantile() answers its midpoint, so for a rank that falls
 * in the range the answer is within tally_hist_error() = 2^-(p+1) of the
 * exact sample quantile, relative (exact below 2^(p+1)). A rank in the
 * below or above bucket answers lowest or highest: no bound holds there.
 * Explicit bounds interpolate linearly inside the bucket (as Prometheus'
 * histogram_quantile() does): the error is the bucket's width.
 *
 * Memory: per CPU slot 8 bytes per bucket (a 32-bit count for each of two
 * banks) and 64 bytes, in the per-CPU arena's demand-zero pages: only the
 * pages a CPU's records touched are resident, and snapshots, resets and
 * the destroy read only the slots of CPUs that recorded (the written
 * bound, tally/pcpu.h), so a CPU that never recorded costs neither
 * memory nor time. The default layout has
 * 4,563 buckets (36.6 KB per CPU slot at most; a server's latencies touch
 * about 16 KB of it); p = 10 over the same range, HdrHistogram's 3
 * significant digits, has 33,422 (267 KB). Beside it, per histogram, 32
 * bytes per bucket of carries, reset baseline and the cut's scratch.
 *
 * Record: the bucket's count in the active bank, then the bank's sum and
 * done count, on the current CPU's words: on x86_64 with rseq one
 * restartable section (the counter add's form, tally/rseq.h; its first
 * two stores mark registers, so an abort after them finishes the record
 * rather than repeating it); elsewhere three relaxed/release atomic
 * RMWs. In bench_hist's loop of records it costs 1.5-1.6x
 * tally_counter_add and 0.7-1.0x HdrHistogram_c's single-writer
 * hdr_record_value, 1.6-1.75x a plain single-writer histogram's record
 * (bench/RESULTS.md). The bucket of a value from 2^p up is read off its
 * double's bits (hist/layout.h). No shared line is written, except once
 * per CPU slot (its first record raises the written bound), once every
 * 2^32 records of one bucket on one CPU (a carry), and by a
 * tally_hist_record_n() of 16 or more (two atomic adds to shared counts
 * of such records in flight, which cuts wait for). The count is derived
 * from the buckets (count == sum of counts in every snapshot), and the sum
 * is exact (modulo 2^64) and in the same cut: see tally/hist/cut.h for
 * the cut and why it is exact.
 *
 * This header holds the structures and the public calls with their
 * contracts. The machinery sits beside it (each refuses to be included on
 * its own):
 *   tally/hist/layout.h   bucket math, the per-CPU words
 *   tally/hist/record.h   the record's adds (rseq sections, atomics)
 *   tally/hist/cut.h      the cut of snapshots and resets, and its proof
 */
#ifndef TALLY_HIST_H
#define TALLY_HIST_H

#include <tally/os.h>
#include <tally/pcpu.h>

#include <math.h> /* NAN (no libm call) */
#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest precision p (2^p buckets per power of two). */
#define TALLY_HIST_PRECISION_MAX 14u
/** The precision of tally_hist_opts.precision = 0: 2^-8 relative error. */
#define TALLY_HIST_PRECISION_DEFAULT 7u
/** Most bucket positions a histogram may have (below and above included). */
#define TALLY_HIST_BUCKETS_MAX (1u << 20)
/**@{*/
/** The default range, lowest .. highest: 1 ns .. 1 hour in nanoseconds. */
#define TALLY_HIST_LOWEST_DEFAULT 1u
#define TALLY_HIST_HIGHEST_DEFAULT 3600000000000ull
/**@}*/
/** Most equal observations one tally_hist_record_n() takes. */
#define TALLY_HIST_N_MAX 0xffffffffull

/**
 * struct tally_hist_opts - the buckets tally_hist_init() sets up.
 * @p lowest, @p highest: the log-linear range (values outside it go to the
 *   below / above buckets); both 0: the default 1 .. 3.6e12. Otherwise
 *   lowest <= highest <= INT64_MAX (lowest may be 0).
 * @p precision: p, 1..TALLY_HIST_PRECISION_MAX; 0: the default (7).
 * @p bounds, @p nr_bounds: explicit upper bounds instead (bounds NULL: log-
 *   linear): 1..TALLY_HIST_BUCKETS_MAX - 2 strictly increasing values <=
 *   INT64_MAX, copied; lowest, highest and precision must then be 0.
 */
struct tally_hist_opts {
	uint64_t lowest;         /**< the log-linear range's low end (see above) */
	uint64_t highest;        /**< its high end; both 0: the default */
	unsigned precision;      /**< p, 1..TALLY_HIST_PRECISION_MAX; 0: 7 */
	const uint64_t *bounds;  /**< explicit upper bounds, or NULL: log-linear */
	unsigned nr_bounds;      /**< how many bounds */
};

/* private: the buckets of a histogram or a snapshot */
struct tally__hist_layout {
	/* The fast window (hist/layout.h): values whose double's bits,
	 * shifted right by fast_shift, minus fast_lo, are below fast_n have
	 * position (that difference) + fast_pos. fast_n 0: no window. */
	uint64_t fast_lo, fast_n;
	unsigned fast_shift, fast_pos;
	uint64_t lowest, highest; /* log-linear range */
	uint64_t first;           /* log-linear index of lowest */
	uint64_t *bounds;         /* explicit bounds (owned copy), or NULL */
	unsigned nr_bounds;
	unsigned p;  /* precision (log-linear) */
	unsigned nr; /* bucket positions, below and above included */
};

/** struct tally_hist - a histogram; members are private (tally_hist_* calls). */
struct tally_hist {
	/* private: use the tally_hist_* calls */
	struct tally__pcpu tally__pcpu; /* per CPU: done, sum, bucket halves */
	/* The bank records add to, k, as 4 k + the byte offset of the fast
	 * window's first half in bank 0 (a multiple of 8): one load gives a
	 * record both its half's offset and its bank (hist/layout.h). */
	unsigned tally__act;
	struct tally__hist_layout tally__l;
	uint64_t *tally__carry;    /* [2][nr]: 2^32 per wrapped half */
	uint64_t *tally__base;     /* [nr + 1]: reset baseline (counts, then sum) */
	uint64_t *tally__scratch;  /* [nr]: the cut's, under the lock */
	uint64_t *tally__big;      /* [2]: big records started, finished (hist/cut.h) */
	/* TALLY__HIST_USED_*: the shared slot written, a carry made (set by
	 * records before those writes, read by cuts: hist/record.h) */
	unsigned tally__used;
	unsigned tally__busy;      /* cuts left that skip the one-read cut (hist/cut.h) */
	unsigned tally__reset;     /* a reset was taken: the baseline is not 0 */
	pthread_mutex_t tally__lock; /* cuts: snapshots and resets */
};

/**
 * struct tally_hist_snap - one cut of a histogram (or a merge or delta of
 * cuts). @p count: observations (always the sum of counts[]); @p sum: their
 * values' sum, modulo 2^64; @p counts: per bucket position, @p nr_buckets of
 * them (0: below, nr_buckets - 1: above). Other members are private.
 */
struct tally_hist_snap {
	uint64_t count;      /**< observations: the sum of counts[] */
	uint64_t sum;        /**< their values' sum, modulo 2^64 */
	uint64_t *counts;    /**< per bucket position, nr_buckets of them */
	unsigned nr_buckets; /**< positions: 0 below the range, nr_buckets - 1 above */
	/* private */
	struct tally__hist_layout tally__l;
	uint64_t *tally__groups; /* totals of 2^group_shift positions */
	unsigned tally__nr_groups, tally__group_shift;
};

#define TALLY__HIST_INSIDE 1
#include <tally/hist/layout.h>
#include <tally/hist/record.h>
#include <tally/hist/cut.h>
#undef TALLY__HIST_INSIDE

/* ---- setting up ---------------------------------------------------------- */

/* The layout o asks for, checked (bounds not copied yet). */
static inline int tally__hist_opts_layout(const struct tally_hist_opts *o,
					  struct tally__hist_layout *l)
{
	static const struct tally_hist_opts def = {0, 0, 0, NULL, 0};
	uint64_t last;
	unsigned i;
	memset(l, 0, sizeof(*l));
	if (!o)
		o = &def;
	if (o->bounds) {
		if (o->lowest || o->highest || o->precision || !o->nr_bounds ||
		    o->nr_bounds > TALLY_HIST_BUCKETS_MAX - 2u)
			return -EINVAL;
		for (i = 0; i < o->nr_bounds; i++)
			if (o->bounds[i] > (uint64_t)INT64_MAX ||
			    (i && o->bounds[i] <= o->bounds[i - 1u]))
				return -EINVAL;
		l->nr_bounds = o->nr_bounds;
		l->nr = o->nr_bounds + 2u;
		l->highest = o->bounds[o->nr_bounds - 1u];
		return 0;
	}
	if (o->nr_bounds)
		return -EINVAL;
	l->lowest = o->lowest;
	l->highest = o->highest;
	if (!l->lowest && !l->highest) {
		l->lowest = TALLY_HIST_LOWEST_DEFAULT;
		l->highest = TALLY_HIST_HIGHEST_DEFAULT;
	}
	l->p = o->precision ? o->precision : TALLY_HIST_PRECISION_DEFAULT;
	if (l->p > TALLY_HIST_PRECISION_MAX || l->lowest > l->highest ||
	    l->highest > (uint64_t)INT64_MAX)
		return -EINVAL;
	l->first = tally__hist_index(l->lowest, l->p);
	last = tally__hist_index(l->highest, l->p);
	if (last - l->first + 3u > TALLY_HIST_BUCKETS_MAX)
		return -EINVAL;
	l->nr = (unsigned)(last - l->first) + 3u;
	tally__hist_fast_window(l);
	return 0;
}

/**
 * tally_hist_init - set h up with the buckets o asks for (NULL: the
 * defaults), every count 0.
 * Returns 0, -EINVAL (NULL h; o out of bounds, see struct
 * tally_hist_opts; h untouched) or -ENOMEM (h untouched).
 * Not concurrent with any other call on h.
 */
static inline int tally_hist_init(struct tally_hist *h, const struct tally_hist_opts *o)
{
	struct tally_hist n;
	int err;
	if (tally__bad(!h))
		return -EINVAL;
	memset(&n, 0, sizeof(n));
	err = tally__hist_opts_layout(o, &n.tally__l);
	if (tally__bad(err))
		return err;
	err = -ENOMEM;
	if (n.tally__l.nr_bounds) {
		n.tally__l.bounds = (uint64_t *)malloc(n.tally__l.nr_bounds * sizeof(uint64_t));
		if (!n.tally__l.bounds)
			goto fail;
		memcpy(n.tally__l.bounds, o->bounds, n.tally__l.nr_bounds * sizeof(uint64_t));
	}
	/* One block: carries [2][nr], baseline [nr + 1], scratch [nr], the
	 * big-record counts [2]. */
	n.tally__carry = (uint64_t *)calloc(4 * (size_t)n.tally__l.nr + 3u, sizeof(uint64_t));
	if (!n.tally__carry)
		goto fail;
	n.tally__base = n.tally__carry + 2 * (size_t)n.tally__l.nr;
	n.tally__act = tally__hist_act0(&n.tally__l);
	n.tally__scratch = n.tally__base + n.tally__l.nr + 1u;
	n.tally__big = n.tally__scratch + n.tally__l.nr;
	/* tracked: records raise the written bound before they write a CPU
	 * slot, so cuts and the free visit only the slots written */
	if (tally__pcpu_alloc_tracked(&n.tally__pcpu,
				      TALLY__HIST_BUCKETS_OFF + 8u * (size_t)n.tally__l.nr,
				      TALLY__ARENA_HOT))
		goto fail;
	if (pthread_mutex_init(&n.tally__lock, NULL)) {
		tally__pcpu_free(&n.tally__pcpu);
		goto fail;
	}
	*h = n;
	return 0;
fail:
	free(n.tally__carry);
	free(n.tally__l.bounds);
	return err;
}

/**
 * tally_hist_destroy - free h. NULL (or a destroyed h) is a no-op.
 * Not concurrent with any other call on h. O(buckets x CPU slots recorded
 * into): it zeroes the slots written, no other.
 */
static inline void tally_hist_destroy(struct tally_hist *h)
{
	if (!h || !h->tally__carry)
		return;
	pthread_mutex_destroy(&h->tally__lock);
	tally__pcpu_free(&h->tally__pcpu);
	free(h->tally__carry);
	free(h->tally__l.bounds);
	memset(h, 0, sizeof(*h));
}

/* ---- recording ----------------------------------------------------------- */

/**
 * tally_hist_record_n - record n observations of value v (one call, as n
 * tally_hist_record(h, v)).
 * @p v: >= 0, in the histogram's unit. @p n: 0..TALLY_HIST_N_MAX (0 records
 * nothing). The sum gains v * n (modulo 2^64).
 * Returns 0, or -EINVAL (NULL h, v < 0, n too large: nothing recorded).
 *
 * Any thread, concurrently with every call but init/destroy. Wait-free:
 * adds to words of the current CPU's slot (x86_64 with rseq: one
 * restartable section, one CPU lookup, whose three counting stores are
 * each one instruction; an abort restarts it only before the first, and
 * the first two leave marks in registers, after which the record
 * finishes on the shared slot, so nothing is counted twice; elsewhere
 * three atomic RMWs); no shared cache line is written except one atomic
 * carry per 2^32 observations of one bucket on one CPU slot, once per CPU
 * slot the histogram's written bound (a CPU's first record), once each
 * of its used bits (the first record on the shared slot, the first
 * carry), and, for n
 * >= 16, two atomic adds to the histogram's counts of such records in
 * flight (then the three adds are atomic RMWs on any slot). Orders nothing
 * around it (its adds are ordered among themselves for the cut). A
 * snapshot or reset taken meanwhile has the call wholly or not at all.
 * Inlined at every call site unless TALLY_INLINE / TALLY_EXTERN say
 * otherwise (config.h).
 */
#if TALLY_EXTERN /* a prototype for the one definition (TALLY_IMPLEMENTATION) */
TALLY__API int tally_hist_record_n(struct tally_hist *h, int64_t v, uint64_t n);
#endif
#if TALLY__API_BODY
TALLY__API int tally_hist_record_n(struct tally_hist *h, int64_t v, uint64_t n)
{
	if (tally__bad(!h || v < 0 || n > TALLY_HIST_N_MAX))
		return -EINVAL;
	if (tally__unlikely(n == 0))
		return 0;
	if (tally__unlikely(n >= TALLY__HIST_BIG_N))
		return tally__hist_record_big(h, v, (uint32_t)n);
	return tally__hist_record(h, v, (uint32_t)n);
}
#endif

/**
 * tally_hist_record - record one observation of value v (>= 0, in the
 * histogram's unit: nanoseconds for the default range).
 * Returns 0, or -EINVAL (NULL h, or v < 0: nothing recorded).
 * Contract as tally_hist_record_n(): any thread, wait-free, no shared line
 * written, seen whole or not at all by a snapshot. Inlined unless
 * TALLY_INLINE / TALLY_EXTERN say otherwise.
 */
#if TALLY_EXTERN /* a prototype for the one definition (TALLY_IMPLEMENTATION) */
TALLY__API int tally_hist_record(struct tally_hist *h, int64_t v);
#endif
#if TALLY__API_BODY
TALLY__API int tally_hist_record(struct tally_hist *h, int64_t v)
{
	if (tally__bad(!h))
		return -EINVAL;
	return tally__hist_record(h, v, 1u); /* v < 0: -EINVAL, out of line */
}
#endif

/* ---- properties ---------------------------------------------------------- */

/** tally_hist_buckets - how many bucket positions h has (below and above
 * included); 0 for NULL. Pure. */
static inline unsigned tally_hist_buckets(const struct tally_hist *h)
{
	return h ? h->tally__l.nr : 0u;
}

/** tally_hist_error - the relative quantile error bound of h's range,
 * 2^-(precision+1); NAN for explicit bounds (no relative bound) or NULL.
 * Pure. */
static inline double tally_hist_error(const struct tally_hist *h)
{
	if (!h || h->tally__l.bounds)
		return NAN;
	return 1.0 / (double)((uint64_t)2 << h->tally__l.p);
}

/* ---- snapshots ----------------------------------------------------------- */

/* tally_hist_snap_init() for the buckets of layout l (a histogram's, or a
 * group histogram's: tally/rstat.h). 0 or -ENOMEM (s zeroed). */
static inline int tally__hist_snap_init_layout(struct tally_hist_snap *s,
					       const struct tally__hist_layout *l)
{
	struct tally_hist_snap n;
	unsigned nr;
	memset(s, 0, sizeof(*s));
	memset(&n, 0, sizeof(n));
	n.tally__l = *l;
	nr = n.tally__l.nr;
	n.tally__group_shift = n.tally__l.p > 6u ? n.tally__l.p : 6u;
	n.tally__nr_groups = ((nr - 1u) >> n.tally__group_shift) + 1u;
	n.counts = (uint64_t *)calloc((size_t)nr + n.tally__nr_groups + n.tally__l.nr_bounds,
				      sizeof(uint64_t));
	if (!n.counts)
		return -ENOMEM;
	n.tally__groups = n.counts + nr;
	if (n.tally__l.bounds) {
		n.tally__l.bounds = n.tally__groups + n.tally__nr_groups;
		memcpy(n.tally__l.bounds, l->bounds, n.tally__l.nr_bounds * sizeof(uint64_t));
	}
	n.nr_buckets = nr;
	*s = n;
	return 0;
}

/**
 * tally_hist_snap_init - size s for h's buckets, every count 0 (s then
 * takes h's snapshots, and merges with snapshots of histograms set up with
 * the same options).
 * Returns 0, -EINVAL (NULL s or h) or -ENOMEM (s zeroed: destroy is safe).
 * Any thread; reads only h's fixed layout.
 */
static inline int tally_hist_snap_init(struct tally_hist_snap *s, const struct tally_hist *h)
{
	if (tally__bad(!s || !h || !h->tally__carry))
		return -EINVAL;
	return tally__hist_snap_init_layout(s, &h->tally__l);
}

/** tally_hist_snap_destroy - free s's arrays. NULL (or a destroyed s) is a
 * no-op. */
static inline void tally_hist_snap_destroy(struct tally_hist_snap *s)
{
	if (!s)
		return;
	free(s->counts);
	memset(s, 0, sizeof(*s));
}

/* Fill s (layout checked) with h's cut, minus the baseline if since_reset. */
static inline void tally__hist_snapshot(struct tally_hist *h, struct tally_hist_snap *s,
					int since_reset)
{
	unsigned j, nr = h->tally__l.nr;
	uint64_t sum;
	tally__hist_lock(h);
	tally__hist_cut(h, s->counts, &sum);
	if (since_reset && h->tally__reset) {
		for (j = 0; j < nr; j++)
			s->counts[j] -= h->tally__base[j];
		sum -= h->tally__base[nr];
	}
	tally__hist_unlock(h);
	s->sum = sum;
	tally__hist_snap_finish(s);
}

/**
 * tally_hist_snapshot - one exact cut of h since its last reset (since
 * init without one) into s (set up by tally_hist_snap_init() for h, or
 * for a histogram with the same options).
 * Returns 0, or -EINVAL (NULL h or s, or s sized for other buckets: s
 * untouched).
 *
 * Any thread, beside records (any number) and other snapshots and resets
 * (the histogram's lock serialises cuts). Blocking: takes the lock, and
 * waits for records in flight into the bank it reads (a recorder
 * preempted mid-record delays it until it runs again); so never call it
 * from a signal handler that may have interrupted a record. Exact: every
 * record is in it wholly (bucket, count and value in the sum) or not at
 * all; a record that returned before the call began is in it; a later
 * snapshot contains an earlier one (unless a reset came between).
 * O(buckets x CPU slots recorded into): the slots no record wrote are
 * not read (tally/pcpu.h's written bound). At the default buckets (4,563)
 * and one slot written, about 5 us; at p = 10 (33,422) about 31 us
 * (bench/RESULTS.md); a histogram with records in flight takes two reads
 * (hist/cut.h), twice that.
 */
static inline int tally_hist_snapshot(struct tally_hist *h, struct tally_hist_snap *s)
{
	if (tally__bad(!h || !s || !s->counts || !tally__hist_layout_eq(&h->tally__l, &s->tally__l)))
		return -EINVAL;
	tally__hist_snapshot(h, s, 1);
	return 0;
}

/**
 * tally_hist_snapshot_raw - as tally_hist_snapshot(), but everything since
 * init: a reset does not move it (for exporters, whose counters must never
 * go back). Same returns and contract.
 */
static inline int tally_hist_snapshot_raw(struct tally_hist *h, struct tally_hist_snap *s)
{
	if (tally__bad(!h || !s || !s->counts || !tally__hist_layout_eq(&h->tally__l, &s->tally__l)))
		return -EINVAL;
	tally__hist_snapshot(h, s, 0);
	return 0;
}

/**
 * tally_hist_reset - start h's since-reset values afresh: the baseline
 * becomes one cut (the same cut a snapshot takes), so every record is
 * before the reset or after it, wholly.
 * Returns 0 or -EINVAL (NULL h). Contract as tally_hist_snapshot(): any
 * thread, beside records, snapshots and resets; blocking. Records are
 * never lost: tally_hist_snapshot_raw() still has them.
 */
static inline int tally_hist_reset(struct tally_hist *h)
{
	uint64_t sum;
	if (tally__bad(!h || !h->tally__carry))
		return -EINVAL;
	tally__hist_lock(h);
	tally__hist_cut(h, h->tally__base, &sum);
	h->tally__base[h->tally__l.nr] = sum;
	h->tally__reset = 1;
	tally__hist_unlock(h);
	return 0;
}

/* ---- reading snapshots (pure: any thread, on a snapshot nobody writes) --- */

/**
 * tally_hist_snap_bucket_range - the values bucket position j of s holds,
 * [*lo, *hi], integers, inclusive.
 * Returns 0; 1 for the above bucket (no upper edge: *hi = UINT64_MAX);
 * -EINVAL (NULL s, lo or hi; j >= s->nr_buckets); -ENOENT for a bucket
 * that can hold nothing (below, when lowest is 0 or the bounds are
 * explicit).
 */
static inline int tally_hist_snap_bucket_range(const struct tally_hist_snap *s, unsigned j,
					       uint64_t *lo, uint64_t *hi)
{
	if (tally__bad(!s || !lo || !hi || !s->counts || j >= s->tally__l.nr))
		return -EINVAL;
	if (j == 0 && (s->tally__l.bounds || !s->tally__l.lowest))
		return -ENOENT;
	return tally__hist_pos_range(&s->tally__l, j, lo, hi) ? 1 : 0;
}

/**
 * tally_hist_quantile - the value at quantile q (0..1) of s: the estimate
 * of the observation of rank ceil(q * count) (at least 1) in sorted order.
 * Log-linear: that bucket's midpoint, within tally_hist_error() of the
 * exact value (relative) when the rank falls in the range; lowest or
 * highest when it falls below or above. Explicit bounds: interpolated
 * linearly inside the bucket (the last finite bound above it).
 * Returns NAN for NULL s, q outside 0..1 or NaN, or an empty s.
 * Pure; O(buckets / 2^p + 2^p).
 */
static inline double tally_hist_quantile(const struct tally_hist_snap *s, double q)
{
	uint64_t rank, cum = 0, lo = 0, hi = 0;
	unsigned g, j, end;
	double r;
	if (!s || !s->counts || !(q >= 0.0 && q <= 1.0) || !s->count)
		return NAN;
	r = q * (double)s->count; /* rank: ceil(r), within 1..count */
	if (r >= (double)s->count)
		rank = s->count;
	else {
		rank = (uint64_t)r;
		rank += (double)rank < r;
		if (!rank)
			rank = 1;
	}
	for (g = 0; g + 1u < s->tally__nr_groups && cum + s->tally__groups[g] < rank; g++)
		cum += s->tally__groups[g];
	j = g << s->tally__group_shift;
	end = s->tally__l.nr - 1u;
	while (j < end && cum + s->counts[j] < rank)
		cum += s->counts[j++];
	if (j == 0)
		return (double)s->tally__l.lowest;
	if (j == end)
		return (double)s->tally__l.highest;
	tally__hist_pos_range(&s->tally__l, j, &lo, &hi);
	if (s->tally__l.bounds) {
		double lower = j == 1u ? 0.0 : (double)s->tally__l.bounds[j - 2u];
		return lower + ((double)hi - lower) * (double)(rank - cum) / (double)s->counts[j];
	}
	return ((double)lo + (double)hi) / 2.0;
}

/**
 * tally_hist_snap_merge - add src into dst (several histograms with the
 * same options, or several intervals): counts, count and sum add up.
 * Returns 0, or -EINVAL (NULL, or other buckets: dst untouched). Pure.
 */
static inline int tally_hist_snap_merge(struct tally_hist_snap *dst,
					const struct tally_hist_snap *src)
{
	unsigned j;
	if (tally__bad(!dst || !src || !dst->counts || !src->counts ||
		       !tally__hist_layout_eq(&dst->tally__l, &src->tally__l)))
		return -EINVAL;
	for (j = 0; j < dst->tally__l.nr; j++)
		dst->counts[j] += src->counts[j];
	dst->sum += src->sum;
	tally__hist_snap_finish(dst);
	return 0;
}

/**
 * tally_hist_snap_delta - dst = newer - older: the observations recorded
 * between two snapshots of one histogram (for rates). dst may be newer or
 * older itself.
 * Returns 0; -EINVAL (NULL, or other buckets); -ERANGE (older has more in
 * some bucket than newer: not an earlier snapshot of the same histogram,
 * or a reset came between). dst untouched on error. Pure.
 */
static inline int tally_hist_snap_delta(struct tally_hist_snap *dst,
					const struct tally_hist_snap *newer,
					const struct tally_hist_snap *older)
{
	unsigned j;
	if (tally__bad(!dst || !newer || !older || !dst->counts || !newer->counts ||
		       !older->counts || !tally__hist_layout_eq(&dst->tally__l, &newer->tally__l) ||
		       !tally__hist_layout_eq(&dst->tally__l, &older->tally__l)))
		return -EINVAL;
	for (j = 0; j < dst->tally__l.nr; j++)
		if (older->counts[j] > newer->counts[j])
			return -ERANGE;
	for (j = 0; j < dst->tally__l.nr; j++)
		dst->counts[j] = newer->counts[j] - older->counts[j];
	dst->sum = newer->sum - older->sum;
	tally__hist_snap_finish(dst);
	return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_HIST_H */
