/* bench/codesize/impl.c - with TALLY_EXTERN=1, the one translation unit
 * that holds tally's out-of-line definitions. */
#define TALLY_IMPLEMENTATION
#include "sites.h"
