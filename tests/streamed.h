/*
 * tests/streamed.h - a tally_export_render_write() callback for the plain
 * tests: the pieces appended at *(struct streamed *)ctx, counted.
 *
 *   struct streamed s = {NULL, 0, 0};
 *   err = tally_export_render_write(e, fmt, streamed, &s);   (then free(s.b))
 */
#ifndef TALLY_TESTS_STREAMED_H
#define TALLY_TESTS_STREAMED_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct streamed {
	char *b;
	size_t len;
	unsigned calls;
};

static int streamed(void *ctx, const char *buf, size_t len)
{
	struct streamed *s = (struct streamed *)ctx;
	char *nb = (char *)realloc(s->b, s->len + len);
	if (!nb)
		return -ENOMEM;
	memcpy(nb + s->len, buf, len);
	s->b = nb;
	s->len += len;
	s->calls++;
	return 0;
}

#endif
