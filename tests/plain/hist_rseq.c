/*
 * hist_rseq.c - tally_hist_record()'s rseq section (x86_64) and each of
 * its exits, forced through the header's test hooks instead of waited for:
 *   - a trap before the half's add: the kernel aborts the section (the
 *     handler sees the abort handler's address, preceded by the
 *     signature), the section restarts, and the record counts once, all
 *     of it on the CPU's slot;
 *   - a trap after the half's add, before the sum's store: the abort
 *     handler finds the half's sentinel cleared and the sum's not moved,
 *     and finishes sum and done on the shared slot (the half stays on the
 *     CPU's slot, counted once); a cut of the CPU's slot at the trap sees
 *     neither the count nor the sum;
 *   - a trap after the sum's store, before the commit: the handler finds
 *     both sentinels moved and finishes done alone on the shared slot (the
 *     half and the sum stay on the CPU's slot); a cut of the CPU's slot at
 *     the trap sees the sum without its done (a read the add-up check
 *     rejects: the half is in); both with the thread moved to another CPU
 *     in the trap too;
 *   - a trap between a wrapping add and its carry test: the handler finds
 *     the wrap from the sentinel register, and the carry lands; the same
 *     wrap with no trap leaves through the carry test;
 *   - the written bound: a fresh histogram's is 0; the first record on a
 *     CPU leaves the section, raises it to cover the CPU's slot and goes
 *     back in (the record on that slot, not the shared one);
 *   - a CPU beyond the slots (the TALLY_CPU_SLOTS=1 build,
 *     hist_rseq_slots1, on CPU 1): nothing is added by the section, the
 *     whole record lands on the shared slot, the written bound untouched;
 *   - values inside and outside the fast window, each in its bucket;
 *   - threads recording while another sends them signals whose handler
 *     records too (the interrupted section aborted wherever the signal
 *     lands, the handler's own section nested in it): every bucket, the
 *     count and the sum exact at the end.
 * Every case checks the words where the record landed, then a snapshot:
 * its bucket, count (== the buckets) and sum, to the last unit.
 * The kernel may also preempt the thread inside a section, which aborts it
 * as a trap does (a busy machine does, now and then): a trial that finds
 * its record aborted where it planned no abort (a record on the shared
 * slot it did not expect, a trap never reached, a move that did not
 * happen) is retried, up to TRIES times, and the retries are counted and
 * printed; a trial that never comes out undisturbed fails.
 * Exit 77 (skip) where the rseq path is not compiled in, rseq is not
 * registered, or the thread cannot run on two CPUs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

/* Each hook traps when its flag is set (the handler clears it). The carry
 * hook traps only after a carry out of the half's add, and sets the carry
 * flag again after its own compare. */
volatile unsigned char hist_trap_add, hist_trap_carry, hist_trap_sum, hist_trap_commit;
#if defined(__x86_64__)
#  define HIST_HOOK(flag) "cmpb $0, " flag "(%%rip)\n\tje 88f\n\tint3\n\t88:\n\t"
#  define TALLY__HIST_HOOK_ADD HIST_HOOK("hist_trap_add")
#  define TALLY__HIST_HOOK_CARRY                                                               \
	"jnc 87f\n\tcmpb $0, hist_trap_carry(%%rip)\n\tje 86f\n\tint3\n\t86:\n\tstc\n\t87:\n\t"
#  define TALLY__HIST_HOOK_SUM HIST_HOOK("hist_trap_sum")
#  define TALLY__HIST_HOOK_COMMIT HIST_HOOK("hist_trap_commit")
#endif

#include "harness.h"

#include <tally/hist.h>

#if TALLY__HAVE_RSEQ
static volatile sig_atomic_t traps, aborted;
static int move_to = -1;
#define TRIES 100
static unsigned retries; /* trials preempted in their window, retried */
/* At the sum or commit trap: slot watch's record as a cut reads it. */
static const struct tally_hist *watch_h;
static unsigned watch_slot;
static uint64_t seen_done, seen_sum;

static uint64_t u64_at(const struct tally_hist *h, unsigned slot, size_t off)
{
	return __atomic_load_n((const uint64_t *)tally__pcpu_at(&h->tally__pcpu, slot, off),
			       __ATOMIC_RELAXED);
}

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
	if ((hist_trap_sum || hist_trap_commit) && watch_h) {
		unsigned k = tally__hist_bank(watch_h->tally__act);
		seen_done = seen_sum = 0;
		tally__hist_read_record(&watch_h->tally__pcpu, watch_slot, k, &seen_done, &seen_sum);
	}
	if (move_to >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(move_to, &set);
		sched_setaffinity(0, sizeof(set), &set); /* migrates before returning */
	}
	hist_trap_add = hist_trap_carry = hist_trap_sum = hist_trap_commit = 0;
}

static uint32_t half_at(const struct tally_hist *h, unsigned slot, unsigned j)
{
	return __atomic_load_n((const uint32_t *)tally__pcpu_at(
				       &h->tally__pcpu, slot,
				       tally__hist_half_off(j, tally__hist_bank(h->tally__act))),
			       __ATOMIC_RELAXED);
}

/* A fresh histogram, the thread on CPU a: its slot count, the active
 * bank's record offset and v's bucket. */
struct trial {
	struct tally_hist h;
	struct tally_hist_snap s;
	unsigned nr, j;
	size_t rec;
};

static void trial_init(struct trial *t, int a, int64_t v)
{
	CHECK_EQ(harness_pin(a), 0);
	CHECK_EQ(tally_hist_init(&t->h, NULL), 0);
	CHECK_EQ(tally_hist_snap_init(&t->s, &t->h), 0);
	t->nr = t->h.tally__pcpu.nr;
	t->rec = TALLY__HIST_BANK_BYTES * tally__hist_bank(t->h.tally__act);
	t->j = tally__hist_pos_slow(&t->h.tally__l, (uint64_t)v);
}

/* Where a trapped record's words must land (its half always on a's). */
enum land {
	LAND_CPU,  /* sum and done on a's slot: restarted, or no abort */
	LAND_HALF, /* sum and done on the shared slot: aborted after the half */
	LAND_SUM   /* sum on a's slot, done on the shared slot: aborted after
		      the sum's store */
};

/*
 * On CPU a, one record of v with trap *flag armed (moved to CPU b in the
 * trap if b >= 0); where it must land: land. The snapshot must hold it
 * once. 0: preempted in its window (the trap not reached, the thread not
 * moved, or done on the shared slot where none was planned): retry.
 */
static int trapped_record(volatile unsigned char *flag, const char *what, int a, int b,
			  enum land land)
{
	int done = 1;
	int64_t v = 123456; /* in the fast window */
	struct trial t;
	struct tally_hist *h = &t.h;
	struct tally_hist_snap *s = &t.s;
	unsigned slot, halves = 0, nr, j;
	size_t rec;
	uint64_t want_cpu_done = land == LAND_CPU, want_cpu_sum = land == LAND_HALF ? 0 : (uint64_t)v;
	trial_init(&t, a, v);
	nr = t.nr;
	j = t.j;
	rec = t.rec;
	traps = aborted = 0;
	watch_h = h;
	watch_slot = (unsigned)a;
	seen_done = seen_sum = 99;
	move_to = b;
	*flag = 1;
	CHECK_EQ(tally_hist_record(h, v), 0);
	move_to = -1;
	watch_h = NULL;
	*flag = 0;
	/* A preemption aborts the section as the trap does: before a sum or
	 * commit trap it leaves the trap unreached (the record's done on the
	 * shared slot); after a restart past the add trap, done on the
	 * shared slot. */
	if ((traps == 0 && flag != &hist_trap_add) || (b >= 0 && sched_getcpu() != b) ||
	    (land == LAND_CPU && u64_at(h, nr, rec) != 0)) {
		done = 0;
		goto out;
	}
	CHECK(traps == 1, "%s: %d traps, expected 1", what, (int)traps);
	CHECK(aborted, "%s: the section was not aborted", what);
	if (b >= 0)
		CHECK(sched_getcpu() == b, "%s: not moved: on CPU %d", what, sched_getcpu());
	/* The first record on CPU a raised the written bound to cover it. */
	CHECK(h->tally__pcpu.lim == (unsigned)a + 1u, "%s: the written bound is %u, want %u",
	      what, h->tally__pcpu.lim, (unsigned)a + 1u);
	/* The halves first: one counted twice would make the snapshot wait
	 * for a record that never completes. */
	for (slot = 0; slot <= nr; slot++)
		halves += half_at(h, slot, j);
	CHECK(halves == 1, "%s: the bucket's halves hold %u records", what, halves);
	CHECK(half_at(h, (unsigned)a, j) == 1, "%s: the half is not on CPU %d's slot", what, a);
	if (halves != 1)
		goto out;
	if (flag == &hist_trap_sum || flag == &hist_trap_commit)
		CHECK(seen_done == 0 && seen_sum == (flag == &hist_trap_commit ? (uint64_t)v : 0),
		      "%s: at the trap a cut of the slot read done %llu sum %llu", what,
		      (unsigned long long)seen_done, (unsigned long long)seen_sum);
	/* done and the sum on a's slot, and what the shared slot took */
	CHECK(u64_at(h, (unsigned)a, rec) == want_cpu_done &&
		      u64_at(h, (unsigned)a, rec + 8) == want_cpu_sum,
	      "%s: CPU slot done %llu sum %llu, want %llu %llu", what,
	      (unsigned long long)u64_at(h, (unsigned)a, rec),
	      (unsigned long long)u64_at(h, (unsigned)a, rec + 8),
	      (unsigned long long)want_cpu_done, (unsigned long long)want_cpu_sum);
	CHECK(u64_at(h, nr, rec) == 1 - want_cpu_done &&
		      u64_at(h, nr, rec + 8) == (uint64_t)v - want_cpu_sum,
	      "%s: shared slot done %llu sum %llu", what, (unsigned long long)u64_at(h, nr, rec),
	      (unsigned long long)u64_at(h, nr, rec + 8));
	CHECK_EQ(h->tally__used & TALLY__HIST_USED_SHARED,
		 land == LAND_CPU ? 0u : TALLY__HIST_USED_SHARED);
	if (b >= 0)
		CHECK_EQ(u64_at(h, (unsigned)b, rec), 0u);
	CHECK_EQ(tally_hist_snapshot_raw(h, s), 0);
	CHECK(s->count == 1 && s->counts[j] == 1 && s->sum == (uint64_t)v,
	      "%s: count %llu, bucket %llu, sum %llu", what, (unsigned long long)s->count,
	      (unsigned long long)s->counts[j], (unsigned long long)s->sum);
out:
	tally_hist_snap_destroy(s);
	tally_hist_destroy(h);
	return done;
}

/*
 * The written bound: a fresh histogram's is 0 (no slot written); a record
 * on CPU a leaves the section, raises it to a + 1 and lands on a's slot;
 * one on CPU b > a raises it to b + 1. Nothing on the shared slot. 0:
 * preempted (a record finished on the shared slot): retry.
 */
static int bound_records(int a, int b)
{
	int done = 1;
	struct trial t;
	struct tally_hist *h = &t.h;
	unsigned nr, j;
	size_t rec;
	trial_init(&t, a, 777);
	nr = t.nr;
	j = t.j;
	rec = t.rec;
	CHECK_EQ(h->tally__pcpu.lim, 0u);
	CHECK_EQ(tally_hist_record(h, 777), 0);
	if (u64_at(h, nr, rec) != 0 || sched_getcpu() != a) {
		done = 0;
		goto out;
	}
	CHECK_EQ(h->tally__pcpu.lim, (unsigned)a + 1u);
	CHECK(half_at(h, (unsigned)a, j) == 1 && u64_at(h, (unsigned)a, rec) == 1 &&
		      u64_at(h, (unsigned)a, rec + 8) == 777,
	      "bound: the record is not on CPU %d's slot", a);
	if ((unsigned)b < nr) {
		CHECK_EQ(harness_pin(b), 0);
		CHECK_EQ(tally_hist_record(h, 777), 0);
		if (u64_at(h, nr, rec) != 0 || sched_getcpu() != b) {
			done = 0;
			goto out;
		}
		CHECK_EQ(h->tally__pcpu.lim, (unsigned)b + 1u);
		CHECK(half_at(h, (unsigned)b, j) == 1 && u64_at(h, (unsigned)b, rec) == 1,
		      "bound: the record is not on CPU %d's slot", b);
	}
	CHECK_EQ(h->tally__used, 0u);
	CHECK_EQ(tally_hist_snapshot_raw(h, &t.s), 0);
	CHECK(t.s.count == 1u + ((unsigned)b < nr) && t.s.sum == 777u * t.s.count,
	      "bound: count %llu sum %llu", (unsigned long long)t.s.count,
	      (unsigned long long)t.s.sum);
out:
	tally_hist_snap_destroy(&t.s);
	tally_hist_destroy(h);
	return done;
}

/*
 * On CPU a: 2^32 - 1 records of v (one call), then one more, with the
 * carry trap armed or not: the half wraps, 2^32 goes to the carry, the
 * last record's sum and done to the shared slot (through the abort
 * handler, or the carry test's exit). 0: preempted in a window (the first
 * call's record on the shared slot, or the trap not reached): retry.
 */
static int wrapped_record(int trap, int a)
{
	int done = 1;
	const char *what = trap ? "aborted after a wrapping add" : "a wrapping add";
	int64_t v = 5000;
	struct trial t;
	struct tally_hist *h = &t.h;
	struct tally_hist_snap *s = &t.s;
	unsigned nr, j;
	size_t rec, k;
	uint64_t carry;
	trial_init(&t, a, v);
	nr = t.nr;
	j = t.j;
	rec = t.rec;
	k = rec / TALLY__HIST_BANK_BYTES;
	/* the section's record of n (tally_hist_record_n() sends n >= 16
	 * to the atomic path, which the cut counts in flight) */
	CHECK_EQ(tally__hist_record(h, v, (uint32_t)TALLY_HIST_N_MAX), 0);
	CHECK_EQ(half_at(h, (unsigned)a, j), UINT32_MAX);
	if (u64_at(h, nr, rec) != 0) { /* preempted before its commit */
		done = 0;
		goto out;
	}
	traps = aborted = 0;
	hist_trap_carry = (unsigned char)trap;
	CHECK_EQ(tally_hist_record(h, v), 0);
	hist_trap_carry = 0;
	if (traps < trap) { /* preempted between the add and the trap */
		done = 0;
		goto out;
	}
	CHECK(traps == trap && aborted == trap, "%s: %d traps, %s", what, (int)traps,
	      aborted ? "aborted" : "not aborted");
	carry = __atomic_load_n(&h->tally__carry[(size_t)k * h->tally__l.nr + j], __ATOMIC_RELAXED);
	CHECK(half_at(h, (unsigned)a, j) == 0 && carry == (uint64_t)1 << 32,
	      "%s: half %u, carry %llu", what, half_at(h, (unsigned)a, j),
	      (unsigned long long)carry);
	if (carry != (uint64_t)1 << 32)
		goto out; /* the snapshot would wait for it */
	CHECK(u64_at(h, nr, rec) == 1 && u64_at(h, nr, rec + 8) == (uint64_t)v,
	      "%s: shared slot done %llu sum %llu", what, (unsigned long long)u64_at(h, nr, rec),
	      (unsigned long long)u64_at(h, nr, rec + 8));
	CHECK_EQ(tally_hist_snapshot_raw(h, s), 0);
	CHECK(s->count == (uint64_t)1 << 32 && s->counts[j] == (uint64_t)1 << 32 &&
		      s->sum == (uint64_t)v << 32,
	      "%s: count %llu, bucket %llu, sum %llu", what, (unsigned long long)s->count,
	      (unsigned long long)s->counts[j], (unsigned long long)s->sum);
out:
	tally_hist_snap_destroy(s);
	tally_hist_destroy(h);
	return done;
}

/* Run a trial until it comes out undisturbed (TRIES at most). */
#define TRIAL(what, call)                                                                \
	do {                                                                             \
		int try_ = 0;                                                            \
		while (!(call) && ++try_ < TRIES)                                        \
			retries++;                                                       \
		CHECK(try_ < TRIES, "%s: preempted in its window %d times of %d", what, \
		      try_, TRIES);                                                      \
	} while (0)

/* ---- threads recording under a storm of signals --------------------------- */
#define STORM_THREADS 4
#define STORM_RECORDS 500000
#define STORM_VALUES 8
/* In and out of the fast window (the handler records the first). */
static const int64_t storm_vals[STORM_VALUES] = {7, 200, 5000, 123456, 99999999,
						 3600000000000ll, 3600000000001ll, 0};
static struct tally_hist storm_h;
static __thread uint64_t storm_in_handler;

static void on_storm(int sig)
{
	(void)sig;
	/* nested: the interrupted record's section was aborted */
	tally_hist_record(&storm_h, storm_vals[0]);
	storm_in_handler++;
}

struct storm_worker {
	pthread_t tid;
	int id, started, done;
	uint64_t n[STORM_VALUES]; /* records of each value, the handler's included */
};

static void *storm_work(void *arg)
{
	struct storm_worker *w = (struct storm_worker *)arg;
	sigset_t set;
	int i;
	__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	for (i = 0; i < STORM_RECORDS; i++) {
		unsigned x = (unsigned)(i * 5 + w->id) % STORM_VALUES;
		tally_hist_record(&storm_h, storm_vals[x]);
		w->n[x]++;
		if ((i & 4095) == 0)
			sched_yield();
	}
	/* no handler runs after its total is read */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	w->n[0] += storm_in_handler;
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void storm(void)
{
	static struct storm_worker ws[STORM_THREADS];
	struct tally_hist_snap s;
	struct sigaction sa;
	uint64_t want[STORM_VALUES] = {0}, count = 0, sum = 0, halves = 0;
	unsigned long signals = 0;
	unsigned i, x, slot, k, left;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_storm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	CHECK_EQ(tally_hist_init(&storm_h, NULL), 0);
	CHECK_EQ(tally_hist_snap_init(&s, &storm_h), 0);
	for (i = 0; i < STORM_THREADS; i++) {
		ws[i].id = (int)i;
		CHECK_EQ(pthread_create(&ws[i].tid, NULL, storm_work, &ws[i]), 0);
	}
	/* Signal the started workers until every one is done. */
	do {
		struct timespec ts = {0, 20000};
		left = 0;
		for (i = 0; i < STORM_THREADS; i++) {
			if (__atomic_load_n(&ws[i].done, __ATOMIC_ACQUIRE))
				continue;
			left++;
			if (__atomic_load_n(&ws[i].started, __ATOMIC_ACQUIRE) &&
			    pthread_kill(ws[i].tid, SIGUSR1) == 0)
				signals++;
		}
		nanosleep(&ts, NULL);
	} while (left && signals < 40000);
	for (i = 0; i < STORM_THREADS; i++) {
		CHECK_EQ(pthread_join(ws[i].tid, NULL), 0);
		for (x = 0; x < STORM_VALUES; x++)
			want[x] += ws[i].n[x];
	}
	for (x = 0; x < STORM_VALUES; x++) {
		count += want[x];
		sum += want[x] * (uint64_t)storm_vals[x];
	}
	/* The halves first (a half counted twice would make the snapshot
	 * wait): all records went to the active bank. */
	k = tally__hist_bank(storm_h.tally__act);
	for (slot = 0; slot < tally__pcpu_slots(&storm_h.tally__pcpu); slot++)
		for (i = 0; i < storm_h.tally__l.nr; i++)
			halves += __atomic_load_n(
				(const uint32_t *)tally__pcpu_at(&storm_h.tally__pcpu, slot,
								 tally__hist_half_off(i, k)),
				__ATOMIC_RELAXED);
	CHECK(halves == count, "storm: the halves hold %llu records, %llu made",
	      (unsigned long long)halves, (unsigned long long)count);
	if (halves == count) {
		uint64_t on_shared = __atomic_load_n(
			(const uint64_t *)tally__pcpu_at(&storm_h.tally__pcpu, storm_h.tally__pcpu.nr,
							 TALLY__HIST_BANK_BYTES * k),
			__ATOMIC_RELAXED);
		CHECK_EQ(tally_hist_snapshot_raw(&storm_h, &s), 0);
		CHECK_EQ(s.count, count);
		CHECK_EQ(s.sum, sum);
		for (x = 0; x < STORM_VALUES; x++) {
			/* the values' buckets are distinct */
			unsigned j = tally__hist_pos_slow(&storm_h.tally__l, (uint64_t)storm_vals[x]);
			CHECK(s.counts[j] == want[x], "storm: value %lld: bucket %llu, %llu made",
			      (long long)storm_vals[x], (unsigned long long)s.counts[j],
			      (unsigned long long)want[x]);
		}
		printf("hist_rseq: %d threads, %llu records, %lu signals, %llu finished on the "
		       "shared slot: exact\n",
		       STORM_THREADS, (unsigned long long)count, signals,
		       (unsigned long long)on_shared);
	}
	tally_hist_snap_destroy(&s);
	tally_hist_destroy(&storm_h);
}

int main(void)
{
	struct sigaction sa;
	struct tally_hist h;
	struct tally_hist_snap s;
	cpu_set_t allowed;
	int a = -1, b = -1, c;
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
	/* A CPU past the slots: the section declines, the atomic path puts
	 * the whole record on the shared slot (slot 1). */
	unsigned j, nr, k;
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
	CHECK_EQ(h.tally__pcpu.lim, 0u); /* no CPU slot written */
	CHECK_EQ(h.tally__used, TALLY__HIST_USED_SHARED);
	CHECK_EQ(tally_hist_snapshot_raw(&h, &s), 0);
	CHECK(s.count == 1 && s.counts[j] == 1 && s.sum == 777, "past the slots: count %llu",
	      (unsigned long long)s.count);
	tally_hist_snap_destroy(&s);
	tally_hist_destroy(&h);
	(void)trapped_record;
	(void)bound_records;
	(void)wrapped_record;
	(void)storm;
	return harness_exit("hist_rseq_slots1");
#endif
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);

	/* An abort before the half's add restarts; one after it finishes on
	 * the shared slot, wherever the thread runs by then. */
	TRIAL("add trap",
	      trapped_record(&hist_trap_add, "trap before the half's add", a, -1, LAND_CPU));
	TRIAL("sum trap",
	      trapped_record(&hist_trap_sum, "trap before the sum's store", a, -1, LAND_HALF));
	TRIAL("sum trap, moved", trapped_record(&hist_trap_sum, "trap before the sum's store, moved",
						a, b, LAND_HALF));
	TRIAL("commit trap",
	      trapped_record(&hist_trap_commit, "trap before the commit", a, -1, LAND_SUM));
	TRIAL("commit trap, moved",
	      trapped_record(&hist_trap_commit, "trap before the commit, moved", a, b, LAND_SUM));
	/* the written bound, raised on each CPU's first record */
	TRIAL("bound", bound_records(a, b));
	TRIAL("carry trap", wrapped_record(1, a));
	TRIAL("wrap", wrapped_record(0, a));
	printf("hist_rseq: the forced exits: %u trials preempted in their window, retried\n",
	       retries);
	CHECK_EQ(sched_setaffinity(0, sizeof(allowed), &allowed), 0); /* both CPUs */
	storm();

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
