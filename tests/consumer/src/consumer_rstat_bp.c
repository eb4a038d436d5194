/* An outside program using tally's hierarchy with liburcu's bulletproof
 * flavor (tally-rstat-bp): a thread that never registers walks the
 * children, destroys a subtree and reads inside read-side sections. Built
 * with TALLY_DEBUG, whose RCU checks would abort an unregistered thread
 * under the default flavor. */
#define TALLY_DEBUG 1
#include <pthread.h>
#include <stdio.h>
#include <tally/rstat.h>

static struct tally_tree *t;

static void *worker(void *arg)
{
	struct tally_group *x;
	(void)arg;
	tally_tree_read_lock(t);
	x = tally_group_find_child(tally_tree_root(t), "tenant");
	if (x)
		tally_group_mod(x, 0, 3);
	tally_tree_read_unlock(t);
	return x && tally_group_destroy_subtree(x) == 0 ? NULL : (void *)1;
}

int main(void)
{
	struct tally_group *x;
	pthread_t tid;
	void *ret = (void *)1;
	int ok;

	t = tally_tree_create(1);
	if (!t)
		return 1;
	x = tally_group_create_named(tally_tree_root(t), "tenant");
	if (!x || !tally_group_create(x) || pthread_create(&tid, NULL, worker, NULL))
		return 1;
	pthread_join(tid, &ret);
	tally_group_flush_force(tally_tree_root(t));
	ok = !ret && tally_group_read(tally_tree_root(t), 0) == 3 && tally_tree_nr_groups(t) == 1;
	printf("consumer (C, rstat with urcu-bp): root[0] %lld: %s\n",
	       (long long)tally_group_read(tally_tree_root(t), 0), ok ? "ok" : "WRONG");
	tally_tree_destroy(t);
	return ok ? 0 : 1;
}
