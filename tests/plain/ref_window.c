/*
 * ref_window.c - tally_ref_kill() while a get is inside its restartable
 * section, between the section's check of the mode and its commit, forced
 * through ref.h's test hook (TALLY__REF_HOOK: int3 when armed) instead of
 * waited for. The SIGTRAP handler kills the ref there (mode dead, the
 * membarrier() fence, the CPU words summed into the atomic count); the
 * signal's delivery aborts the section, which restarts, finds the ref
 * dead and takes the atomic count. So the count stays exact: the holder's
 * two puts bring it to 0 and only the second releases.
 *
 * Built twice: ref_window (must pass), and ref_window_nocheck with
 * TALLY__REF_NO_MODE_CHECK, the section without its mode check, which
 * must fail (ctest WILL_FAIL): its restarted get adds to a CPU word the
 * kill has already summed, so the count reads 1 where 2 references are
 * held (and its puts, with no check either, never reach the count: no
 * release at all).
 * Exit 77 (skip) where the ref is not per-CPU (no rseq path, rseq not
 * registered, no membarrier() rseq fence).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>

volatile unsigned char ref_trap;
#if defined(__x86_64__)
#  define TALLY__REF_HOOK "cmpb $0, ref_trap(%%rip)\n\tje 88f\n\tint3\n\t88:\n\t"
#endif

#include "harness.h"

#include <tally/ref.h>

static struct tally_ref r;
static int released, traps, kill_rc = -1;

static void release(struct tally_ref *x)
{
	(void)x;
	released++;
}

static void on_trap(int sig)
{
	(void)sig;
	traps++;
	ref_trap = 0;
	kill_rc = tally_ref_kill(&r);
}

int main(void)
{
	struct sigaction sa;
	CHECK_EQ(tally_ref_init(&r, release), 0);
	if (!tally_ref_is_percpu(&r)) {
		printf("ref_window: SKIPPED: the ref is atomic here (no rseq fence)\n");
		tally_ref_exit(&r);
		return 77;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_trap;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGTRAP, &sa, NULL), 0);

	tally_ref_get(&r); /* the holder's reference: on a CPU word */
	ref_trap = 1;
	tally_ref_get(&r); /* killed inside its section */
	CHECK_EQ(traps, 1);
	CHECK_EQ(kill_rc, 0);
	CHECK_EQ(tally_ref_is_dying(&r), 1);
	/* the owner's reference dropped; the holder's two remain */
	CHECK(r.tally__count == 2u, "count after the kill and the get: %llu, want 2",
	      (unsigned long long)r.tally__count);
	tally_ref_put(&r);
	CHECK(released == 0, "released with a reference still held");
	tally_ref_put(&r);
	CHECK(released == 1, "released %d times at the last put, want 1", released);
	tally_ref_exit(&r);
	return harness_exit("ref_window");
}
