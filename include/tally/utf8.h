/**
 * @file
 * tally/utf8.h - a UTF-8 check shared by the headers that take names
 * (export.h for help texts and group names, rstat.h for group names).
 * Private: tally__ names only; needs nothing but the C library.
 */
#ifndef TALLY_UTF8_H
#define TALLY_UTF8_H

#include <tally/config.h>

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* tally__utf8_ok - s[0..n) is valid UTF-8 (no overlong forms, no
 * surrogates, nothing past U+10FFFF) and has no NUL. */
static inline bool tally__utf8_ok(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		unsigned c = *p, need, cp, i;
		if (c < 0x80) {
			if (!c)
				return false;
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3, cp = c & 0x07;
		else
			return false;
		if ((size_t)(end - p) <= need)
			return false;
		for (i = 1; i <= need; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += need + 1;
	}
	return true;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_UTF8_H */
