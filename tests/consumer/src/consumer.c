/* An outside program using tally as installed (or bundled): a counter and a
 * vec, checked to the last unit. Exit 0 when every value is right. */
#include <stdio.h>
#include <tally/tally.h>

int main(void)
{
	struct tally_counter c;
	struct tally_vec v;
	tally_sword sum;
	int i, ok;

	if (tally_counter_init(&c, 10, 0) || tally_vec_init(&v, 4, 0))
		return 1;
	for (i = 0; i < 1000; i++)
		tally_counter_add(&c, 3);
	for (i = 0; i < 500; i++)
		tally_vec_inc(&v, 2);
	tally_vec_mod(&v, 3, -7);
	tally_vec_fold(&v);
	tally_counter_fold_all(&c);
	sum = tally_counter_sum(&c);

	ok = sum == 3010 && tally_counter_read(&c) == 3010 && tally_vec_read(&v, 2) == 500 &&
	     tally_vec_read_exact(&v, 3) == -7 && tally_vec_read(&v, 3) == 0;
	printf("consumer (C, tally %d.%d.%d): counter %lld, vec[2] %llu, vec[3] %lld: %s\n",
	       TALLY_VERSION_MAJOR, TALLY_VERSION_MINOR, TALLY_VERSION_PATCH, (long long)sum,
	       (unsigned long long)tally_vec_read(&v, 2), (long long)tally_vec_read_exact(&v, 3),
	       ok ? "ok" : "WRONG");
	tally_vec_destroy(&v);
	tally_counter_destroy(&c);
	return ok ? 0 : 1;
}
