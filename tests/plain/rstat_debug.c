/*
 * The TALLY_DEBUG checks of rstat.h's RCU rules (tally/rstat/rcu.h): each
 * mistake runs in a forked child, which must die of SIGABRT with a message
 * naming the call and the rule; the legal uses beside them must run to
 * the end silently. A mistake that is a use-after-free in a release build
 * is made deterministic here: a second thread holds a read-side section
 * throughout, so no grace period ends and the destroyed group stays
 * allocated while the child misuses it.
 *
 * References (tally_group_get()): a thread that holds one may use a
 * destroyed group outside any section; after its last put it may not
 * (use_after_put), and neither may a thread that never took one
 * (ref_held_elsewhere).
 */
#define _GNU_SOURCE
#undef TALLY_DEBUG /* the test build defines 0 */
#define TALLY_DEBUG 1
#include "harness.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <tally/rstat.h>

static struct tally_tree *tree;
static struct tally_group *g;
static int held, release;
static pthread_t holder;

/* Registered, inside a read-side section until released. */
static void *holder_main(void *arg)
{
	(void)arg;
	tally_tree_register_thread(tree);
	tally_tree_read_lock(tree);
	__atomic_store_n(&held, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&release, __ATOMIC_ACQUIRE))
		usleep(1000);
	tally_tree_read_unlock(tree);
	tally_tree_unregister_thread(tree);
	return NULL;
}

/* A tree, a group g under its root, and a holder thread in a read-side
 * section; with destroy, g destroyed by this (registered) thread, which
 * then unregisters unless keep. */
static void setup(int destroy, int keep)
{
	tree = tally_tree_create(2);
	g = tally_group_create_named(tally_tree_root(tree), "g");
	pthread_create(&holder, NULL, holder_main, NULL);
	while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		usleep(100);
	if (!destroy)
		return;
	tally_tree_register_thread(tree);
	if (tally_group_destroy(g))
		_exit(3);
	if (!keep)
		tally_tree_unregister_thread(tree);
}

static void read_lock_unregistered(void)
{
	setup(0, 0);
	tally_tree_read_lock(tree);
}

static void destroy_unregistered(void)
{
	setup(0, 0);
	tally_group_destroy(g);
}

static void destroy_subtree_unregistered(void)
{
	setup(0, 0);
	tally_group_destroy_subtree(g);
}

static int count_child(struct tally_group *c, void *arg)
{
	(void)c;
	++*(int *)arg;
	return 0;
}

static void for_each_child_unregistered(void)
{
	int n = 0;
	setup(0, 0);
	tally_group_for_each_child(tally_tree_root(tree), count_child, &n);
}

static void find_child_unregistered(void)
{
	setup(0, 0);
	tally_group_find_child(tally_tree_root(tree), "g");
}

static void mod_destroyed(void)
{
	setup(1, 1);
	tally_group_mod(g, 0, 1);
}

static void read_destroyed(void)
{
	setup(1, 1);
	(void)tally_group_read(g, 0);
}

static void flush_destroyed(void)
{
	setup(1, 1);
	tally_group_flush_force(g);
}

static void create_under_destroyed(void)
{
	setup(1, 1);
	tally_group_create_named(g, "child");
}

static void reset_destroyed(void)
{
	setup(1, 1);
	tally_group_reset(g);
}

/* A reference taken, the group destroyed, the reference put, then a use:
 * the holder thread's section keeps the memory, the check must fire. */
static void use_after_put(void)
{
	struct tally_group *x;
	setup(0, 0);
	tally_tree_register_thread(tree);
	x = tally_group_find_get(tally_tree_root(tree), "g");
	if (x != g || tally_group_destroy(g))
		_exit(3);
	if (tally_group_mod(g, 0, 1)) /* legal: the reference */
		_exit(4);
	tally_group_put(g);
	tally_group_mod(g, 0, -1);
}

static void *take_ref(void *arg)
{
	(void)arg;
	if (!tally_group_tryget(g)) /* g is never destroyed before this */
		_exit(5);
	return NULL;
}

/* Another thread holds a reference: this one holds none. */
static void ref_held_elsewhere(void)
{
	pthread_t th;
	setup(0, 0);
	pthread_create(&th, NULL, take_ref, NULL);
	pthread_join(th, NULL);
	tally_tree_register_thread(tree);
	if (tally_group_destroy(g))
		_exit(3);
	(void)tally_group_read(g, 0);
}

/* The legal uses: registered, destroyed groups only inside a section. */
static void legal(void)
{
	int n = 0;
	setup(0, 0);
	tally_tree_register_thread(tree);
	if (tally_group_mod(g, 1, 5))
		_exit(4);
	if (tally_group_for_each_child(tally_tree_root(tree), count_child, &n) || n != 1)
		_exit(5);
	tally_tree_read_lock(tree);
	if (tally_group_find_child(tally_tree_root(tree), "g") != g || tally_group_destroy(g))
		_exit(6);
	/* An update on a destroyed group counts (for its parent). */
	if (tally_group_mod(g, 0, 1) != 0 || tally_group_read(g, 1) != 5 ||
	    tally_group_reset(g) != -EINVAL || tally_group_create_named(g, "x") ||
	    tally_group_set_name(g, "y") != -EINVAL)
		_exit(7);
	tally_group_flush_force(g);
	tally_tree_read_unlock(tree);
	/* ... and outside any section while a reference is held. */
	{
		struct tally_group *h = tally_group_create_named(tally_tree_root(tree), "h");
		if (!h || !tally_group_tryget(h) || tally_group_destroy(h) ||
		    tally_group_mod(h, 0, 1) || tally_group_read(h, 0) != 0 ||
		    tally_group_tryget(h) || tally_group_find_get(tally_tree_root(tree), "h"))
			_exit(8);
		tally_group_put(h);
	}
	tally_tree_unregister_thread(tree);
	__atomic_store_n(&release, 1, __ATOMIC_RELEASE);
	pthread_join(holder, NULL);
	tally_tree_destroy(tree);
}

/* Run fn in a child; expect == NULL: it must exit 0 and print nothing;
 * else it must abort and print expect. */
static void run(const char *name, void (*fn)(void), const char *expect)
{
	char buf[4096];
	size_t len = 0;
	ssize_t k;
	int fd[2], status;
	pid_t pid;
	fflush(NULL);
	if (pipe(fd)) {
		CHECK(0, "pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		fn();
		_exit(0);
	}
	close(fd[1]);
	while (len < sizeof(buf) - 1 && (k = read(fd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)k;
	buf[len] = 0;
	close(fd[0]);
	waitpid(pid, &status, 0);
	if (!expect) {
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && !len,
		      "%s: status %#x, stderr: %s", name, status, buf);
		return;
	}
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "%s: not aborted (status %#x)",
	      name, status);
	CHECK(strstr(buf, expect) != NULL, "%s: stderr lacks \"%s\": %s", name, expect, buf);
}

#define NOT_REG ": this thread is not registered with the tree's RCU flavor"
#define DEAD ": the group is destroyed and this thread holds neither a tally_tree_read_lock()"

int main(void)
{
	run("read_lock", read_lock_unregistered, "tally: tally_tree_read_lock" NOT_REG);
	run("destroy", destroy_unregistered, "tally: tally_group_destroy" NOT_REG);
	run("destroy_subtree", destroy_subtree_unregistered,
	    "tally: tally_group_destroy_subtree" NOT_REG);
	run("for_each_child", for_each_child_unregistered,
	    "tally: tally_group_for_each_child" NOT_REG);
	run("find_child", find_child_unregistered, "tally: tally_group_find_child" NOT_REG);
	run("mod", mod_destroyed, "tally: tally_group_mod" DEAD);
	run("read", read_destroyed, "tally: tally_group_read" DEAD);
	run("flush_force", flush_destroyed, "tally: tally_group_flush_force" DEAD);
	run("create_named", create_under_destroyed, "tally: tally_group_create_named" DEAD);
	run("reset", reset_destroyed, "tally: tally_group_reset" DEAD);
	run("use_after_put", use_after_put, "tally: tally_group_mod" DEAD);
	run("ref_held_elsewhere", ref_held_elsewhere, "tally: tally_group_read" DEAD);
	run("legal", legal, NULL);
	return harness_exit("rstat_debug");
}
