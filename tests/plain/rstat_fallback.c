/*
 * rstat_fallback: a process where membarrier() is unavailable. A seccomp
 * filter makes the system call fail with ENOSYS (as an old kernel or a
 * sandbox would) before the first tree is created; then:
 *   - the trees must not use membarrier() (their updates fence), the
 *     process-wide answer stays "no" for later trees;
 *   - two updater threads and a flusher thread run for a moment, and the
 *     tree reads exactly every delta after a final flush, and exactly what
 *     was flushed while they ran (the forced flushes of the updaters' own
 *     groups right after their updates).
 * Built with TALLY_RSTAT_MEMBARRIER=1 (the opt-in). The membarrier()
 * pairing itself is stressed by stress_rstat_membarrier, the default full
 * fence by stress_rstat.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <tally/rstat.h>

#define U(x) ((tally_uword)(x))
#define ROUNDS 20000

/* membarrier() fails with ENOSYS from now on, in every thread created
 * after this (the filter is inherited). Native ABI only: a test. */
static int block_membarrier(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static struct tally_group *root, *mid, *leaf[2];
static int stop;

static void *updater(void *arg)
{
	int k = (int)(intptr_t)arg;
	tally_uword want = 0;
	for (int n = 0; n < ROUNDS; n++) {
		tally_sword d = (tally_sword)(n % 7) - 2 + k;
		CHECK(tally_group_mod(leaf[k], 0, d) == 0, "mod");
		want += U(d);
		/* Only this thread updates leaf[k]: a forced flush of it
		 * reflects every update before it, fence against fence. */
		if (n % 64 == 0) {
			tally_group_flush_force(leaf[k]);
			CHECK_EQ(U(tally_group_read(leaf[k], 0)), want);
		}
	}
	return NULL;
}

static void *flusher(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		tally_group_flush_force(root);
	return NULL;
}

int main(void)
{
	struct tally_tree *t, *t2;
	pthread_t up[2], fl;
	tally_uword want[2] = {0, 0};
	long r;
	int k;

	CHECK(block_membarrier() == 0, "seccomp filter: %s", strerror(errno));
	errno = 0;
	r = syscall(__NR_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0);
	CHECK(r == -1 && errno == ENOSYS, "membarrier still answers: %ld", r);

	t = tally_tree_create(1);
	CHECK(t != NULL, "tree");
	if (!t)
		return harness_exit("rstat_fallback");
	CHECK_EQ(t->tally__memb, 0);
	root = tally_tree_root(t);
	mid = tally_group_create(root);
	leaf[0] = tally_group_create(mid);
	leaf[1] = tally_group_create(mid);
	CHECK(mid && leaf[0] && leaf[1], "groups");

	pthread_create(&fl, NULL, flusher, NULL);
	for (k = 0; k < 2; k++)
		pthread_create(&up[k], NULL, updater, (void *)(intptr_t)k);
	for (k = 0; k < 2; k++)
		pthread_join(up[k], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(fl, NULL);

	for (k = 0; k < 2; k++)
		for (int n = 0; n < ROUNDS; n++)
			want[k] += U((tally_sword)(n % 7) - 2 + k);
	tally_group_flush_force(root);
	CHECK_EQ(U(tally_group_read(leaf[0], 0)), want[0]);
	CHECK_EQ(U(tally_group_read(leaf[1], 0)), want[1]);
	CHECK_EQ(U(tally_group_read(mid, 0)), want[0] + want[1]);
	CHECK_EQ(U(tally_group_read(root, 0)), want[0] + want[1]);
	CHECK_EQ(U(tally_group_read_local(root, 0)), 0);

	/* The answer holds for later trees. */
	t2 = tally_tree_create(1);
	CHECK(t2 != NULL && t2->tally__memb == 0, "second tree");
	tally_tree_destroy(t2);
	tally_tree_destroy(t);
	return harness_exit("rstat_fallback");
}
