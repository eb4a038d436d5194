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
 *
 * Where seccomp filters are unavailable (qemu-user refuses them; kernels
 * without CONFIG_SECCOMP_FILTER) it exits 77, which ctest counts as
 * skipped. The filter checks the architecture of each system call
 * (AUDIT_ARCH) as well as its number, so it blocks membarrier() of the ABI
 * this program was built for and nothing else.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <tally/rstat.h>

#define U(x) ((tally_uword)(x))
#define ROUNDS 20000

#define SKIP 77

/* The seccomp architecture of the ABI this program is built for: the
 * membarrier number below is that ABI's. */
#if defined(__x86_64__)
#  define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64 /* x32 too: its numbers carry __X32_SYSCALL_BIT */
#elif defined(__i386__)
#  define TEST_AUDIT_ARCH AUDIT_ARCH_I386
#elif defined(__aarch64__) && !defined(__AARCH64EB__)
#  define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__arm__) && !defined(__ARMEB__)
#  define TEST_AUDIT_ARCH AUDIT_ARCH_ARM
#elif defined(__riscv) && __riscv_xlen == 64
#  define TEST_AUDIT_ARCH AUDIT_ARCH_RISCV64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#  define TEST_AUDIT_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__powerpc64__)
#  define TEST_AUDIT_ARCH AUDIT_ARCH_PPC64
#elif defined(__s390x__)
#  define TEST_AUDIT_ARCH AUDIT_ARCH_S390X
#endif

/* membarrier() of this ABI fails with ENOSYS from now on, in every thread
 * created after this (the filter is inherited); every other call, and any
 * call through another ABI, is allowed. 0, or -1 with errno. */
static int block_membarrier(void)
{
#ifdef TEST_AUDIT_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
#else
	errno = ENOTSUP;
	return -1;
#endif
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

	if (block_membarrier()) {
		/* EINVAL: no seccomp filters here (qemu-user, or a kernel
		 * without them); ENOTSUP: an architecture this test does not
		 * know. Anything else is a failure. */
		int e = errno;
		printf("rstat_fallback: seccomp filter: %s\n", strerror(e));
		if (e == EINVAL || e == ENOTSUP) {
			printf("rstat_fallback: SKIPPED: cannot block membarrier() here\n");
			return SKIP;
		}
		CHECK(0, "seccomp filter: %s", strerror(e));
		return harness_exit("rstat_fallback");
	}
	errno = 0;
	r = syscall(__NR_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0);
	CHECK(r == -1 && errno == ENOSYS, "membarrier still answers: %ld", r);

	t = tally_tree_create(1);
	CHECK(t != NULL, "tree");
	if (!t)
		return harness_exit("rstat_fallback");
	CHECK_EQ(t->tally__flush.memb, 0);
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
	CHECK(t2 != NULL && t2->tally__flush.memb == 0, "second tree");
	tally_tree_destroy(t2);
	tally_tree_destroy(t);
	return harness_exit("rstat_fallback");
}
