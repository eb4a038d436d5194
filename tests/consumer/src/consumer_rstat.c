/* An outside program using tally's hierarchy (tally/rstat.h, liburcu):
 * a root, a child and two leaves, checked after a forced flush. */
#include <stdio.h>
#include <tally/rstat.h>

int main(void)
{
	struct tally_tree *t = tally_tree_create(2);
	struct tally_group *mid, *a, *b;
	int i, ok;

	if (!t)
		return 1;
	mid = tally_group_create(tally_tree_root(t));
	a = tally_group_create(mid);
	b = tally_group_create(mid);
	if (!mid || !a || !b)
		return 1;
	for (i = 0; i < 100; i++) {
		tally_group_mod(a, 0, 2);
		tally_group_mod(b, 1, -1);
	}
	tally_group_mod(b, 0, 5);
	tally_group_flush_force(tally_tree_root(t));
	ok = tally_group_read(a, 0) == 200 && tally_group_read(mid, 0) == 205 &&
	     tally_group_read(tally_tree_root(t), 1) == -100 && tally_group_read_local(mid, 0) == 0;
	printf("consumer (C, rstat): root[0] %lld, root[1] %lld: %s\n",
	       (long long)tally_group_read(tally_tree_root(t), 0),
	       (long long)tally_group_read(tally_tree_root(t), 1), ok ? "ok" : "WRONG");
	tally_tree_destroy(t);
	return ok ? 0 : 1;
}
