/**
 * @file
 * tally/hist/layout.h - where a tally_hist keeps its words and which bucket
 * a value falls in (private; include <tally/hist.h>).
 *
 * Buckets are numbered by position: 0 is "below" (values under the
 * range's lowest), 1..nr-2 the range's buckets in value order, nr-1
 * "above" (values over the highest; the +Inf bucket of explicit bounds).
 *
 * Log-linear (HdrHistogram's scheme), precision p: a value v has
 * e = floor(log2(v)) (0 for v = 0) and sh = max(e - p, 0); its index is
 * (sh << p) + (v >> sh). Below 2^(p+1) every value has its own index;
 * above, each power of two [2^e, 2^(e+1)) is cut into 2^p buckets of
 * width 2^sh, so a bucket is at most 2^-p of its lower edge wide. The
 * range's buckets are the indices of lowest .. highest.
 *
 * Explicit bounds b[0] < ... < b[n-1]: position j (1..n) holds
 * b[j-2] < v <= b[j-1] (position 1: v <= b[0]); nothing is ever below.
 *
 * A CPU slot's chunk (tally__pcpu), byte offsets:
 *   0   bank 0's record: done, sum   (u64 each; 16 bytes spare)
 *   32  bank 1's record: done, sum   (at 32 k: 8 x (4 k))
 *   64  per bucket position j, at 64 + 8 j: two u32 halves, bank 0's
 *       count then bank 1's (8 bytes per bucket per CPU slot): bank k's
 *       half of j at 64 + 8 j + 4 k, so bit 2 of a half's offset is 4 k
 * A bank's record has one format on every slot: done counts the bank's
 * observations recorded on it (modulo 2^64), the sum their values (modulo
 * 2^64). A record's sum lands before its done, and on the same slot but
 * for a section aborted after its half (hist/record.h: its sum and done,
 * or its done alone, go to the shared slot). (Records of the section
 * before this one kept a parity in done's top bit and two sums; a reader
 * that masks done's top bit and picks sum[done >> 63] reads this format
 * right.)
 * A half that wraps (2^32 records into one bucket of one bank on one
 * slot) is carried into the histogram's carry[bank][j] (shared, u64) by
 * the record that wrapped it, before that record's done.
 */
#ifndef TALLY_HIST_LAYOUT_H
#define TALLY_HIST_LAYOUT_H

#if !defined(TALLY__HIST_INSIDE)
#  error "tally/hist/layout.h is private: include <tally/hist.h>"
#endif

/* A bank's record (done, sum) at 32 k; the halves after both. */
#define TALLY__HIST_BANK_BYTES 32u
#define TALLY__HIST_BUCKETS_OFF 64u
/* Records of this many observations or more (tally_hist_record_n) are
 * counted in flight by the histogram (hist/cut.h says why 16). */
#define TALLY__HIST_BIG_N 16u
/* A histogram's tally__used bits: its shared slot was written; a half
 * wrapped, a carry was made (hist/record.h). */
#define TALLY__HIST_USED_SHARED 1u
#define TALLY__HIST_USED_CARRY 2u

/* The log-linear index of v at precision p. */
TALLY__INLINE uint64_t tally__hist_index(uint64_t v, unsigned p)
{
	unsigned e = 63u - (unsigned)__builtin_clzll(v | 1u);
	unsigned sh = e > p ? e - p : 0u;
	return ((uint64_t)sh << p) + (v >> sh);
}

/* The values of log-linear index idx at precision p: [*lo, *hi]. */
TALLY__INLINE void tally__hist_index_range(uint64_t idx, unsigned p, uint64_t *lo, uint64_t *hi)
{
	uint64_t top = idx >> p;
	unsigned sh = top > 1u ? (unsigned)top - 1u : 0u;
	uint64_t m = idx - ((uint64_t)sh << p);
	*lo = m << sh;
	*hi = *lo + (((uint64_t)1 << sh) - 1u);
}

/* Explicit bounds: the position of v (binary search; 1..n). */
static inline unsigned tally__hist_pos_bounds(const struct tally__hist_layout *l, uint64_t v)
{
	unsigned lo = 0, hi = l->nr_bounds; /* first bound >= v is in [lo, hi] */
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2u;
		if (l->bounds[mid] < v)
			lo = mid + 1u;
		else
			hi = mid;
	}
	return lo + 1u; /* lo == n: above */
}

/*
 * The fast window: a record's bucket from v's double. For 2^p <= v < 2^53
 * the double is exact, with exponent e = floor(log2(v)) and mantissa
 * v - 2^e scaled to 52 bits, so its bits shifted right by 52 - p are
 * ((1023 + e) << p) + ((v - 2^e) >> (e - p)) = idx + ((1022 + p) << p),
 * idx the log-linear index above: a conversion, a move and a shift in
 * place of a bit scan and two variable shifts. The window is the indices
 * whose buckets lie wholly in [max(lowest, 2^p), min(highest, 2^53 - 1)];
 * one unsigned compare of the shifted bits minus its first index against
 * its length admits exactly those, and turns away every other value:
 * smaller ones, the buckets the range's ends cut, below and above,
 * negative values (the sign bit makes the bits huge) and values past 2^53
 * (their rounded doubles still land past the window). Those take
 * tally__hist_pos_slow(). Explicit bounds have no window (fast_n 0).
 */
TALLY__INLINE uint64_t tally__hist_fast_bits(int64_t v, unsigned shift)
{
	double d = (double)v;
	uint64_t b;
	memcpy(&b, &d, sizeof(b));
	return b >> shift;
}

/* Set l's window (log-linear l, its other fields set). */
static inline void tally__hist_fast_window(struct tally__hist_layout *l)
{
	uint64_t lo = l->lowest, hi = l->highest, a, b, elo, ehi;
	l->fast_lo = l->fast_n = 0;
	l->fast_shift = l->fast_pos = 0;
	if (lo < (uint64_t)1 << l->p)
		lo = (uint64_t)1 << l->p;
	if (hi > ((uint64_t)1 << 53) - 1u)
		hi = ((uint64_t)1 << 53) - 1u;
	if (lo > hi)
		return;
	a = tally__hist_index(lo, l->p);
	tally__hist_index_range(a, l->p, &elo, &ehi);
	if (elo < lo)
		a++;
	b = tally__hist_index(hi, l->p);
	tally__hist_index_range(b, l->p, &elo, &ehi);
	if (ehi > hi)
		b--;
	if (a > b)
		return;
	l->fast_shift = 52u - l->p;
	l->fast_lo = a + ((uint64_t)(1022u + l->p) << l->p);
	l->fast_pos = (unsigned)(a - l->first) + 1u;
	/* The identity above is IEEE 754 binary64's; a platform whose
	 * doubles differ gets no window rather than wrong buckets. */
	tally__hist_index_range(a, l->p, &elo, &ehi);
	if (tally__hist_fast_bits((int64_t)elo, l->fast_shift) != l->fast_lo)
		return;
	tally__hist_index_range(b, l->p, &elo, &ehi);
	if (tally__hist_fast_bits((int64_t)ehi, l->fast_shift) - l->fast_lo != b - a)
		return;
	l->fast_n = b - a + 1u;
}

/* The bucket position of v (v >= 0), outside the fast window too. */
static inline unsigned tally__hist_pos_slow(const struct tally__hist_layout *l, uint64_t v)
{
	if (l->bounds != NULL)
		return tally__hist_pos_bounds(l, v);
	if (v < l->lowest)
		return 0u;
	if (v > l->highest)
		return l->nr - 1u;
	return (unsigned)(tally__hist_index(v, l->p) - l->first) + 1u;
}

/* The bucket position of v (v >= 0). */
TALLY__INLINE unsigned tally__hist_pos(const struct tally__hist_layout *l, uint64_t v)
{
	uint64_t r = tally__hist_fast_bits((int64_t)v, l->fast_shift) - l->fast_lo;
	if (tally__likely(r < l->fast_n))
		return (unsigned)r + l->fast_pos;
	return tally__hist_pos_slow(l, v);
}

/*
 * The values bucket position j holds, [*lo, *hi] (integers, inclusive).
 * Returns 0, or -1 for a bucket with no upper edge (above); below's range
 * is [0, lowest - 1] (empty when lowest is 0: *hi is then UINT64_MAX).
 */
static inline int tally__hist_pos_range(const struct tally__hist_layout *l, unsigned j,
					uint64_t *lo, uint64_t *hi)
{
	if (j == 0u) {
		*lo = 0;
		*hi = l->lowest - 1u;
		return 0;
	}
	if (j >= l->nr - 1u) {
		*lo = l->bounds ? l->bounds[l->nr_bounds - 1u] + 1u : l->highest + 1u;
		*hi = UINT64_MAX;
		return -1;
	}
	if (l->bounds) {
		*lo = j == 1u ? 0 : l->bounds[j - 2u] + 1u;
		*hi = l->bounds[j - 1u];
		return 0;
	}
	tally__hist_index_range(l->first + j - 1u, l->p, lo, hi);
	if (*lo < l->lowest)
		*lo = l->lowest;
	if (*hi > l->highest)
		*hi = l->highest;
	return 0;
}

/* The bank of a tally_hist's tally__act word (the bit of 4 k). */
TALLY__INLINE unsigned tally__hist_bank(unsigned act)
{
	return (act >> 2) & 1u;
}

/* The tally__act word for bank 0: the fast window's first half. */
TALLY__INLINE unsigned tally__hist_act0(const struct tally__hist_layout *l)
{
	return TALLY__HIST_BUCKETS_OFF + 8u * l->fast_pos;
}

/* Byte offset of bucket position j's half for bank k in a slot's chunk. */
TALLY__INLINE size_t tally__hist_half_off(unsigned j, unsigned k)
{
	return TALLY__HIST_BUCKETS_OFF + 8u * (size_t)j + 4u * k;
}

/* Two layouts describe the same buckets. */
static inline int tally__hist_layout_eq(const struct tally__hist_layout *a,
					const struct tally__hist_layout *b)
{
	if (a->nr != b->nr || a->p != b->p || a->lowest != b->lowest ||
	    a->highest != b->highest || a->first != b->first || a->nr_bounds != b->nr_bounds ||
	    !a->bounds != !b->bounds)
		return 0;
	return !a->bounds || !memcmp(a->bounds, b->bounds, a->nr_bounds * sizeof(uint64_t));
}

#endif /* TALLY_HIST_LAYOUT_H */
