/**
 * @file
 * tally/monotonic.h - word types, modular deltas, clamped vs monotonic reads.
 *
 * Two ways to read a signed statistic ("mm/vmstat, mm/memcontrol: add
 * _monotonic vmstat readers", Usama Arif, 2026):
 *  - clamped (tally_clamp): a value below 0 reads as 0. Right for gauges
 *    such as "pages on this LRU", where a negative is transient per-CPU
 *    skew (the kernel's node_page_state()).
 *  - monotonic (the raw word as unsigned): right for event counters that
 *    are sampled and subtracted. tally_delta() of two monotonic samples is
 *    exact modulo 2^W as long as fewer than 2^W events happened between
 *    them. A clamped reader breaks here: once the signed value passes
 *    TALLY_SWORD_MAX it reads 0, and 0 - last gives a spurious ~2^(W-1).
 *
 * All calls here are pure functions of their arguments (tally_sample_advance
 * writes only *s): wait-free, no ordering, callable from any thread. NULL
 * pointers are accepted everywhere: tally_sample_advance(NULL, x) and
 * tally_sum_clamped(NULL, n) return 0.
 */
#ifndef TALLY_MONOTONIC_H
#define TALLY_MONOTONIC_H

#include <tally/arch.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Wrap-early bias (TALLY_WRAP_EARLY, like INITIAL_JIFFIES): added to every
 * raw monotonic value tally reports, so raw values start just below the
 * wrap point. Deltas of monotonic reads are unaffected.
 */
#if TALLY_WRAP_EARLY
#  define TALLY_MONOTONIC_BIAS ((tally_uword)0 - (tally_uword)(TALLY_WRAP_EARLY_OFFSET))
#else
#  define TALLY_MONOTONIC_BIAS ((tally_uword)0)
#endif

/** tally_delta - cur - prev modulo 2^W: events between two monotonic samples. */
TALLY__INLINE tally_uword tally_delta(tally_uword prev, tally_uword cur)
{
	return (tally_uword)(cur - prev);
}

/** tally_clamp - a signed gauge read as unsigned, negative values as 0. */
TALLY__INLINE tally_uword tally_clamp(tally_sword v)
{
	return v < 0 ? 0 : (tally_uword)v;
}

/** tally_after - true if monotonic value a is later than b (time_after()):
 * valid while they are less than 2^(W-1) apart. */
TALLY__INLINE bool tally_after(tally_uword a, tally_uword b)
{
	return tally__to_signed((tally_uword)(b - a)) < 0;
}

/** A monotonic sampler: the last raw value seen. Zero-initialise, or set
 * last to the first reading. Not shared between threads without a lock. */
struct tally_sample {
	tally_uword last; /**< the last raw value seen */
};

/** tally_sample_advance - the delta since the last sample; remembers now.
 * NULL s: returns 0 (no sampler, no events) and changes nothing. */
TALLY__INLINE tally_uword tally_sample_advance(struct tally_sample *s, tally_uword now)
{
	tally_uword d;
	if (tally__bad(!s))
		return 0;
	d = tally_delta(s->last, now);
	s->last = now;
	return d;
}

/**
 * tally_sum_clamped - sum of n signed counters, each clamped at 0 first
 * (per-generation sizes read with max(READ_ONCE(x), 0L), as in
 * "mm/mglru: consolidate common code for retrieving evictable size", Kairui
 * Song, 2026). The sum is modular; NULL v: 0. Loads are relaxed atomic, so
 * v may be updated concurrently.
 */
static inline tally_uword tally_sum_clamped(const tally_sword *v, size_t n)
{
	tally_uword sum = 0;
	size_t i;
	if (!v)
		return 0;
	for (i = 0; i < n; i++)
		sum += tally_clamp(tally__load(&v[i]));
	return sum;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_MONOTONIC_H */
