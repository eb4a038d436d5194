/*
 * bench/codesize/sites.c - 100 call sites of one update call (sites.h:
 * CODESIZE_PRIM), each in a function of its own, as an integration that
 * counts events in many places would have them. Built in the three modes
 * of config.h's TALLY_INLINE / TALLY_EXTERN; codesize.sh reports this
 * object's text size in each, main.c the time per update.
 */
#include "sites.h"

#define SITE(i)                                                                \
	static void site_##i(obj_t *o)                                         \
	{                                                                      \
		CODESIZE_UPDATE(o, i);                                         \
	}
#define SITES10(t)                                                             \
	SITE(t##0) SITE(t##1) SITE(t##2) SITE(t##3) SITE(t##4) SITE(t##5)      \
	SITE(t##6) SITE(t##7) SITE(t##8) SITE(t##9)
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7) SITE(8) SITE(9)
SITES10(1) SITES10(2) SITES10(3) SITES10(4) SITES10(5) SITES10(6) SITES10(7)
SITES10(8) SITES10(9)

#define REF(i) site_##i,
#define REFS10(t)                                                              \
	REF(t##0) REF(t##1) REF(t##2) REF(t##3) REF(t##4) REF(t##5) REF(t##6)  \
	REF(t##7) REF(t##8) REF(t##9)
site_fn *const sites[NR_SITES] = {REF(0) REF(1) REF(2) REF(3) REF(4) REF(5) REF(6) REF(7)
					  REF(8) REF(9) REFS10(1) REFS10(2) REFS10(3)
					  REFS10(4) REFS10(5) REFS10(6) REFS10(7)
					  REFS10(8) REFS10(9)};

/* What site i adds. */
long site_delta(int i)
{
#if CODESIZE_PRIM == 2
	(void)i;
	return 1;
#else
	return i + 1;
#endif
}
