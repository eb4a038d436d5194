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
 *   0   bank 0's record: done, sum[0], sum[1]   (u64 each)
 *   24  bank 1's record: done, sum[0], sum[1]
 *   48  per bucket position j, at 48 + 8 j: two u32 halves, bank 0's
 *       count then bank 1's (8 bytes per bucket per CPU slot)
 * A bank's record has two formats. On a CPU slot written by rseq sections
 * (x86_64, rseq registered, slot < nr), done is 2 x (observations) plus a
 * parity bit that flips at every record, and the bank's sum is
 * sum[done & 1]: a record writes sum[parity ^ 1] = sum[parity] + v n
 * (repeatable: an abort before the commit leaves done as it was) and then
 * commits done + 2n with the parity flipped, one store for both. Elsewhere
 * (the atomic path, the shared slot nr) done counts observations and
 * sum[0] is the sum, each a plain atomic add. Either way a record's sum
 * and done land on one slot.
 * A half that wraps (2^32 records into one bucket of one bank on one
 * slot) is carried into the histogram's carry[bank][j] (shared, u64) by
 * the record that wrapped it, before that record's done.
 */
#ifndef TALLY_HIST_LAYOUT_H
#define TALLY_HIST_LAYOUT_H

#if !defined(TALLY__HIST_INSIDE)
#  error "tally/hist/layout.h is private: include <tally/hist.h>"
#endif

/* A bank's record (done, sum[0], sum[1]) at 24 k; the halves after both. */
#define TALLY__HIST_BANK_BYTES 24u
#define TALLY__HIST_BUCKETS_OFF 48u

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

/* The bucket position of v (v >= 0). */
TALLY__INLINE unsigned tally__hist_pos(const struct tally__hist_layout *l, uint64_t v)
{
	if (tally__unlikely(l->bounds != NULL))
		return tally__hist_pos_bounds(l, v);
	if (tally__unlikely(v < l->lowest))
		return 0u;
	if (tally__unlikely(v > l->highest))
		return l->nr - 1u;
	return (unsigned)(tally__hist_index(v, l->p) - l->first) + 1u;
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
