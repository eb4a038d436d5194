/*
 * ref.c - tally_ref's contract, single-threaded and exact:
 *   ref                  where the rseq path and membarrier()'s rseq fence
 *                        are available, the ref is per-CPU while live:
 *                        gets and puts land in the current CPU's word (the
 *                        atomic count keeps its bias and the owner's 1);
 *   ref --expect-atomic  run with GLIBC_TUNABLES=glibc.pthread.rseq=0: the
 *                        ref is atomic from the start, every get and put
 *                        on the shared count.
 * Both: tryget_live succeeds while live and fails once killed; kill drops
 * the owner's reference and release() runs exactly at the put that brings
 * the count to 0 (never before, never twice), here after 1,000 gets and
 * puts; a ref nobody else holds is released by the kill itself; gets after
 * the kill (by a holder) are counted; a second kill is refused; bad
 * arguments are refused.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <string.h>
#include <tally/ref.h>

static int released;
static struct tally_ref *expect_r;

static void release(struct tally_ref *r)
{
	CHECK(r == expect_r, "release of another ref");
	released++;
	tally_ref_exit(r);
}

int main(int argc, char **argv)
{
	int expect_atomic = argc > 1 && !strcmp(argv[1], "--expect-atomic");
	struct tally_ref r, q;
	int i, percpu;

	CHECK_EQ(tally_ref_init(NULL, release), -EINVAL);
	CHECK_EQ(tally_ref_init(&r, NULL), -EINVAL);
	CHECK_EQ(tally_ref_init(&r, release), 0);
	expect_r = &r;
	percpu = tally_ref_is_percpu(&r);
	if (expect_atomic)
		CHECK(!percpu, "rseq disabled, yet the ref is per-CPU");
	printf("ref: %s\n", percpu ? "per-CPU while live" : "atomic from the start");
	if (percpu)
		CHECK(r.tally__count == TALLY__REF_BIAS + 1u, "live count %llx",
		      (unsigned long long)r.tally__count);

	for (i = 0; i < 1000; i++)
		tally_ref_get(&r);
	CHECK_EQ(tally_ref_tryget_live(&r), 1);
	for (i = 0; i < 1000; i++)
		tally_ref_put(&r);
	if (percpu) /* the adds went to the CPU words, not the shared count */
		CHECK(r.tally__count == TALLY__REF_BIAS + 1u, "live count %llx",
		      (unsigned long long)r.tally__count);
	CHECK_EQ(tally_ref_is_dying(&r), 0);
	/* one reference left beside the owner's: the tryget's */
	CHECK_EQ(tally_ref_kill(&r), 0);
	CHECK_EQ(tally_ref_is_dying(&r), 1);
	CHECK_EQ(tally_ref_is_percpu(&r), 0);
	CHECK_EQ(tally_ref_tryget_live(&r), 0);
	CHECK_EQ(released, 0);
	CHECK(r.tally__count == 1u, "count after the kill %llu", (unsigned long long)r.tally__count);
	tally_ref_get(&r); /* a holder's get: atomic now */
	CHECK(r.tally__count == 2u, "count %llu", (unsigned long long)r.tally__count);
	tally_ref_put(&r);
	CHECK_EQ(released, 0);
	tally_ref_put(&r);
	CHECK_EQ(released, 1);

	/* killed with no other reference: released by the kill */
	CHECK_EQ(tally_ref_init(&q, release), 0);
	expect_r = &q;
	released = 0;
	tally_ref_get(&q);
	tally_ref_put(&q);
	CHECK_EQ(tally_ref_kill(&q), 0);
	CHECK_EQ(released, 1);
	/* a second kill is refused (the struct is still readable here) */
#if !TALLY_DEBUG
	CHECK_EQ(tally_ref_kill(&q), -EINVAL);
	CHECK_EQ(released, 1);
#endif
	CHECK_EQ(tally_ref_kill(NULL), -EINVAL);
	tally_ref_exit(NULL);
	return harness_exit("ref");
}
