/**
 * @file
 * tally/export/widen.h - counters widened to 64 bits (private; include
 * <tally/export.h>): per series the last raw word and a 64-bit total; a
 * render adds the modular delta, and holds a decrement (see the header
 * comment of <tally/export.h>).
 */
#ifndef TALLY_EXPORT_WIDEN_H
#define TALLY_EXPORT_WIDEN_H

#if !defined(TALLY__EXPORT_INSIDE)
#  error "tally/export/widen.h is private: include <tally/export.h>"
#endif

/* Widen a counter's raw word: add the modular delta unless it is
 * negative (a decrement), which is held. */
TALLY__INLINE uint64_t tally__export_widen(struct tally__export_series *s, tally_uword raw)
{
	tally_uword d = tally_delta(s->last, raw);
	if (tally__to_signed(d) >= 0) {
		s->total += d;
		s->last = raw;
	}
	return s->total;
}

/* The value to store for a raw word of the given kind. */
TALLY__INLINE uint64_t tally__export_value(struct tally__export_series *s, unsigned char kind,
					   tally_uword raw)
{
	if (kind == TALLY_EXPORT_GAUGE)
		return (uint64_t)(int64_t)tally__to_signed(raw);
	return tally__export_widen(s, raw);
}

#endif /* TALLY_EXPORT_WIDEN_H */
