/*
 * bench/codesize/sites.h - the call sites of sites.c, for one update call
 * chosen by CODESIZE_PRIM: 0 tally_counter_add (default), 1 tally_vec_mod,
 * 2 tally_vec_inc, 3 tally_group_mod. The object type is obj_t, and
 * CODESIZE_UPDATE(o, i) the update of site i.
 */
#ifndef CODESIZE_SITES_H
#define CODESIZE_SITES_H

#ifndef CODESIZE_PRIM
#  define CODESIZE_PRIM 0
#endif

#if CODESIZE_PRIM == 0
#  include <tally/counter.h>
typedef struct tally_counter obj_t;
#  define CODESIZE_UPDATE(o, i) tally_counter_add(o, (i) + 1)
#elif CODESIZE_PRIM == 1 || CODESIZE_PRIM == 2
#  include <tally/vec.h>
typedef struct tally_vec obj_t;
#  if CODESIZE_PRIM == 1
#    define CODESIZE_UPDATE(o, i) tally_vec_mod(o, (i) % CODESIZE_ITEMS, (i) + 1)
#  else
#    define CODESIZE_UPDATE(o, i) tally_vec_inc(o, (i) % CODESIZE_ITEMS)
#  endif
#elif CODESIZE_PRIM == 3
#  include <tally/rstat.h>
typedef struct tally_group obj_t;
#  define CODESIZE_UPDATE(o, i) tally_group_mod(o, (i) % CODESIZE_ITEMS, (i) + 1)
#else
#  error "CODESIZE_PRIM: 0 counter, 1 vec_mod, 2 vec_inc, 3 group_mod"
#endif

/* Items of the vector and the group: site i updates item i, so no two
 * sites are the same code (the compiler would fold them into one). */
#define CODESIZE_ITEMS 100
#define NR_SITES 100
typedef void site_fn(obj_t *o);
extern site_fn *const sites[NR_SITES];
long site_delta(int i);

#endif
