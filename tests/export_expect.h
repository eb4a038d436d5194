/*
 * tests/export_expect.h - the export unit tests' (Criterion) check of a
 * render: the whole output of one format, compared exactly.
 *
 *   #include <criterion/criterion.h>
 *   #include <tally/export.h>
 *   #include "export_expect.h"
 *
 * render(e, fmt): a fresh string (free() it), render_alloc's length
 * checked against it; expect(e, fmt, want): the render equals want.
 */
#ifndef TALLY_TESTS_EXPORT_EXPECT_H
#define TALLY_TESTS_EXPORT_EXPECT_H

#include <stdlib.h>
#include <string.h>

static char *render(struct tally_export *e, int fmt)
{
	char *out = NULL;
	size_t len = 0;
	int err = tally_export_render_alloc(e, fmt, &out, &len);
	cr_assert_eq(err, 0, "render: %d %s", err, tally_export_error(e));
	cr_assert_eq(strlen(out), len);
	return out;
}

static void expect(struct tally_export *e, int fmt, const char *want)
{
	char *got = render(e, fmt);
	cr_expect_str_eq(got, want, "format %d:\n--- got\n%s--- want\n%s", fmt, got, want);
	free(got);
}

#endif
