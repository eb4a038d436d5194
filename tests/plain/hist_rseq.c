/*
 * hist_rseq.c - tally_hist_record()'s two rseq sections (x86_64) and each
 * of their exits, forced through the header's test hooks instead of
 * waited for:
 *   - a trap in section 1 before the half's add, and one in section 2
 *     between the repeatable sum store and the commit: the kernel aborts
 *     the section (the handler sees the abort handler's address, preceded
 *     by the signature), the section restarts, and the record counts once
 *     (its bucket, the count and the sum exact);
 *   - a trap between the sections whose handler moves the thread to
 *     another CPU: section 2 sees the CPU change, and the record's sum and
 *     count land on the shared slot (its half stays on the first CPU's);
 *   - a CPU beyond the slots (the TALLY_CPU_SLOTS=1 build,
 *     hist_rseq_slots1, on CPU 1): nothing is added by the sections, the
 *     whole record lands on the shared slot, in the atomic format;
 *   - values inside and outside the fast window, each in its bucket.
 * Exit 77 (skip) where the rseq path is not compiled in, rseq is not
 * registered, or the thread cannot run on two CPUs.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

/* Each hook traps when its flag is set (the handler clears it). */
volatile unsigned char hist_trap_s1, hist_trap_between, hist_trap_s2;
#if defined(__x86_64__)
#  define HIST_HOOK(flag) "cmpb $0, " flag "(%%rip)\n\tje 88f\n\tint3\n\t88:\n\t"
#  define TALLY__HIST_HOOK_S1 HIST_HOOK("hist_trap_s1")
#  define TALLY__HIST_HOOK_BETWEEN HIST_HOOK("hist_trap_between")
#  define TALLY__HIST_HOOK_S2 HIST_HOOK("hist_trap_s2")
#endif

#include "harness.h"

#include <tally/hist.h>

#if TALLY__HAVE_RSEQ
static volatile sig_atomic_t traps, aborted;
static int move_to;

static void on_trap(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = (ucontext_t *)uc_;
	const unsigned char *ip = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
	uint32_t sigword;
	(void)sig;
	(void)si;
	traps++;
	/* An aborted section resumes at its abort handler, which follows
	 * the 4-byte signature. */
	memcpy(&sigword, ip - 4, sizeof(sigword));
	aborted = sigword == RSEQ_SIG;
	if (hist_trap_between) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(move_to, &set);
		sched_setaffinity(0, sizeof(set), &set); /* migrates before returning */
	}
	hist_trap_s1 = hist_trap_between = hist_trap_s2 = 0;
}

static uint64_t u64_at(const struct tally_hist *h, unsigned slot, size_t off)
{
	return __atomic_load_n((const uint64_t *)tally__pcpu_at(&h->tally__pcpu, slot, off),
			       __ATOMIC_RELAXED);
}

static uint32_t half_at(const struct tally_hist *h, unsigned slot, unsigned j)
{
	return __atomic_load_n((const uint32_t *)tally__pcpu_at(
				       &h->tally__pcpu, slot,
				       tally__hist_half_off(j, tally__hist_bank(h->tally__act))),
			       __ATOMIC_RELAXED);
}

/* One record of v with trap *flag armed; the snapshot must hold it once. */
static void trapped_record(volatile unsigned char *flag, const char *what, int want_abort)
{
	struct tally_hist h;
	struct tally_hist_snap s;
	int64_t v = 123456; /* in the fast window */
	unsigned j, slot, halves = 0;
	CHECK_EQ(tally_hist_init(&h, NULL), 0);
	CHECK_EQ(tally_hist_snap_init(&s, &h), 0);
	j = tally__hist_pos_slow(&h.tally__l, (uint64_t)v);
	traps = aborted = 0;
	*flag = 1;
	CHECK_EQ(tally_hist_record(&h, v), 0);
	CHECK(traps == 1, "%s: %d traps, expected 1", what, (int)traps);
	CHECK(aborted == want_abort, "%s: section %s", what, aborted ? "aborted" : "not aborted");
	/* The halves first: one counted twice would make the snapshot wait
	 * for a record that never completes. */
	for (slot = 0; slot < tally__pcpu_slots(&h.tally__pcpu); slot++)
		halves += half_at(&h, slot, j);
	CHECK(halves == 1, "%s: the bucket's halves hold %u records", what, halves);
	if (halves != 1)
		return;
	CHECK_EQ(tally_hist_snapshot_raw(&h, &s), 0);
	CHECK(s.count == 1 && s.counts[j] == 1 && s.sum == (uint64_t)v,
	      "%s: count %llu, bucket %llu, sum %llu", what, (unsigned long long)s.count,
	      (unsigned long long)s.counts[j], (unsigned long long)s.sum);
	tally_hist_snap_destroy(&s);
	tally_hist_destroy(&h);
}

int main(void)
{
	struct sigaction sa;
	struct tally_hist h;
	struct tally_hist_snap s;
	cpu_set_t allowed;
	int a = -1, b = -1, c;
	unsigned j, nr, k;
	if (!tally__rseq_registered()) {
		printf("hist_rseq: SKIP: rseq is not registered\n");
		return 77;
	}
	CHECK_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	for (c = 0; c < CPU_SETSIZE && b < 0; c++)
		if (CPU_ISSET(c, &allowed)) {
			if (a < 0)
				a = c;
			else
				b = c;
		}
	if (b < 0) {
		printf("hist_rseq: SKIP: one CPU\n");
		return 77;
	}
#if TALLY_CPU_SLOTS == 1
	/* A CPU past the slots: the sections decline, the atomic path puts
	 * the whole record on the shared slot (slot 1). */
	CHECK_EQ(harness_pin(b), 0);
	CHECK_EQ(tally_hist_init(&h, NULL), 0);
	CHECK_EQ(tally_hist_snap_init(&s, &h), 0);
	nr = h.tally__pcpu.nr;
	CHECK_EQ(nr, 1u);
	k = tally__hist_bank(h.tally__act);
	j = tally__hist_pos_slow(&h.tally__l, 777);
	CHECK_EQ(tally_hist_record(&h, 777), 0);
	CHECK_EQ(half_at(&h, nr, j), 1u);
	CHECK_EQ(u64_at(&h, nr, TALLY__HIST_BANK_BYTES * k), 1u); /* atomic format */
	CHECK_EQ(u64_at(&h, nr, TALLY__HIST_BANK_BYTES * k + 8), 777u);
	CHECK_EQ(half_at(&h, 0, j), 0u);
	CHECK_EQ(tally_hist_snapshot_raw(&h, &s), 0);
	CHECK(s.count == 1 && s.counts[j] == 1 && s.sum == 777, "past the slots: count %llu",
	      (unsigned long long)s.count);
	tally_hist_snap_destroy(&s);
	tally_hist_destroy(&h);
	(void)trapped_record;
	return harness_exit("hist_rseq_slots1");
#endif
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);

	/* Restarts: each section aborted once, the record counted once. */
	trapped_record(&hist_trap_s1, "trap in section 1", 1);
	trapped_record(&hist_trap_s2, "trap in section 2", 1);

	/* Moved between the sections: sum and count on the shared slot. */
	CHECK_EQ(harness_pin(a), 0);
	move_to = b;
	trapped_record(&hist_trap_between, "moved between the sections", 0);
	CHECK_EQ(harness_pin(a), 0);
	CHECK_EQ(tally_hist_init(&h, NULL), 0);
	CHECK_EQ(tally_hist_snap_init(&s, &h), 0);
	nr = h.tally__pcpu.nr;
	k = tally__hist_bank(h.tally__act);
	j = tally__hist_pos_slow(&h.tally__l, 5000);
	hist_trap_between = 1;
	CHECK_EQ(tally_hist_record(&h, 5000), 0);
	CHECK(sched_getcpu() == b, "not moved: on CPU %d", sched_getcpu());
	CHECK_EQ(half_at(&h, (unsigned)a, j), 1u);
	CHECK_EQ(u64_at(&h, nr, TALLY__HIST_BANK_BYTES * k), 1u);     /* done, atomic format */
	CHECK_EQ(u64_at(&h, nr, TALLY__HIST_BANK_BYTES * k + 8), 5000u); /* sum[0] */
	CHECK_EQ(u64_at(&h, (unsigned)b, TALLY__HIST_BANK_BYTES * k), 0u);
	CHECK_EQ(tally_hist_snapshot_raw(&h, &s), 0);
	CHECK(s.count == 1 && s.counts[j] == 1 && s.sum == 5000, "moved: count %llu sum %llu",
	      (unsigned long long)s.count, (unsigned long long)s.sum);
	tally_hist_snap_destroy(&s);
	tally_hist_destroy(&h);

	/* Every exit, then values in and out of the fast window, exactly. */
	CHECK_EQ(tally_hist_init(&h, NULL), 0);
	CHECK_EQ(tally_hist_snap_init(&s, &h), 0);
	{
		static const int64_t vals[] = {0, 1, 127, 128, 255, 256, 257, 1000, 123456,
					       3599999999999ll, 3600000000000ll, 3600000000001ll,
					       (int64_t)1 << 53, INT64_MAX};
		uint64_t sum = 0;
		unsigned i;
		for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
			CHECK_EQ(tally_hist_record(&h, vals[i]), 0);
			sum += (uint64_t)vals[i];
		}
		CHECK_EQ(tally_hist_record(&h, -1), -EINVAL);
		CHECK_EQ(tally_hist_record(&h, INT64_MIN), -EINVAL);
		CHECK_EQ(tally_hist_snapshot_raw(&h, &s), 0);
		CHECK_EQ(s.count, (uint64_t)(sizeof(vals) / sizeof(vals[0])));
		CHECK_EQ(s.sum, sum);
		for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
			CHECK(s.counts[tally__hist_pos_slow(&h.tally__l, (uint64_t)vals[i])] >= 1,
			      "value %lld not in its bucket", (long long)vals[i]);
		CHECK_EQ(s.counts[0], 1u);               /* 0: below */
		CHECK_EQ(s.counts[s.nr_buckets - 1], 3u); /* past the hour */
	}
	tally_hist_snap_destroy(&s);
	tally_hist_destroy(&h);
	return harness_exit("hist_rseq");
}
#else
int main(void)
{
	printf("hist_rseq: SKIP: no rseq fast path in this build\n");
	return 77;
}
#endif
