/*
 * What tests/codegen/fences.sh disassembles: the update calls as a user
 * compiles them, so their out-of-line slow paths are emitted.
 */
#include <tally/counter.h>
#include <tally/vec.h>

void fences_counter_add(struct tally_counter *c, tally_sword d);
int fences_vec_mod(struct tally_vec *v, unsigned item, tally_sword d);
int fences_vec_mod_multi(struct tally_vec *v, const struct tally_vec_delta *d, unsigned n);

void fences_counter_add(struct tally_counter *c, tally_sword d)
{
	tally_counter_add(c, d);
}

int fences_vec_mod(struct tally_vec *v, unsigned item, tally_sword d)
{
	return tally_vec_mod(v, item, d);
}

int fences_vec_mod_multi(struct tally_vec *v, const struct tally_vec_delta *d, unsigned n)
{
	return tally_vec_mod_multi(v, d, n);
}
