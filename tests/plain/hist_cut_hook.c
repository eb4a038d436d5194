/*
 * hist_cut_hook.c - a cut's read of a CPU slot's record (done, then the
 * sum) with records committing inside it, forced through hist/cut.h's test
 * hook (TALLY__HIST_READ_HOOK, defined here before the include) instead of
 * waited for. The thread is pinned; the hook, armed for its CPU's slot and
 * the active bank, makes two records there, as records in flight when the
 * cut began and committing now would. Their sums are then in the sum the
 * read loads next, their done not in the done it loaded: the read must not
 * be accepted (their halves are in, done is short: the add-up check), and
 * the cut must read again and hold them. A read that loaded the sum before
 * done would see their done without their sums, add up, and give a sum
 * short of both values: the snapshot's comparison catches it.
 *
 * Two kinds of trial, each checked against a reference histogram that
 * recorded the same values plainly (every bucket, count and sum exactly:
 * the after-state, the records completed before the read was retried):
 *   - the one read of both banks (a quiet histogram's cut): the hook fires
 *     in it; the read is refused, so the cut falls back to its two reads
 *     (the idle bank, the switch, the bank that was active) and marks the
 *     histogram busy (hist/cut.h's TALLY__HIST_BUSY_CUTS);
 *   - the two reads (a busy histogram's cut): the hook fires in the read
 *     of the bank that was active, after the switch (as records that read
 *     the bank before it would); that read is refused and repeated alone.
 *   - the one read of both banks, the hook firing at the other bank's
 *     record of the slot (after this bank's sum was loaded): a record as
 *     a section aborted after its sum's store leaves it (half and sum on
 *     the CPU's slot, done on the shared slot: tally__hist_record_atomic()
 *     from stage SUM). The cut reads the shared slot's done before any
 *     CPU slot's sum, so it sees the sum without the done or neither, and
 *     refuses the read; one that read the shared slot last would see the
 *     done without the sum (for the bank read first), add up, and give a
 *     sum short of the value.
 * Each counts the hook's calls for the slot per bank (one per read of the
 * slot's record) and checks them: a read accepted where it must not be,
 * or repeated more than it had to, fails. The kernel may preempt a
 * record's section (it then finishes on the shared slot, not committing
 * on the armed one): such a trial is retried, up to TRIES times, and the
 * retries are printed.
 * Plain C, one thread: runs under ASan and UBSan, and without rseq.
 */
#define _GNU_SOURCE
#include "harness.h"

struct tally__pcpu;
static void read_hook(const struct tally__pcpu *p, unsigned s, unsigned k);
#define TALLY__HIST_READ_HOOK(p, s, k) read_hook(p, s, k)

#include <string.h>
#include <tally/hist.h>

#define TRIALS 4
#define TRIES 100

/* The hook's records: outside the fast window and in it. */
static const int64_t hook_v[2] = {5, 100000};

static struct {
	struct tally_hist *h, *ref;
	unsigned slot, bank;
	int armed;       /* make the records at the next read of (slot, bank) */
	int aborted;     /* the record: as a section aborted after its sum */
	int ran;         /* times it made them */
	int landed;      /* the last time, both committed on the armed slot */
	unsigned calls[2]; /* reads of the slot's record, per bank */
} hk;

/* Word i of slot s's bank-k record: 0 done, 1 the sum. */
static uint64_t word_at(unsigned s, unsigned k, unsigned i)
{
	const uint64_t *r = (const uint64_t *)tally__pcpu_at(&hk.h->tally__pcpu, s,
							      (size_t)TALLY__HIST_BANK_BYTES * k);
	return __atomic_load_n(&r[i], __ATOMIC_RELAXED);
}

static void read_hook(const struct tally__pcpu *p, unsigned s, unsigned k)
{
	uint64_t d, sm;
	unsigned i;
	if (p != &hk.h->tally__pcpu || s != hk.slot)
		return; /* the reference's cuts, other slots */
	hk.calls[k]++;
	if (!hk.armed || k != hk.bank)
		return;
	hk.armed = 0;
	if (hk.aborted) {
		/* into the other bank, whose record this read has passed:
		 * its half and sum on this slot, its done on the shared one */
		unsigned j = tally__hist_pos_slow(&hk.h->tally__l, (uint64_t)hook_v[1]);
		size_t off = tally__hist_half_off(j, k ^ 1u);
		const struct tally__pcpu *q = &hk.h->tally__pcpu;
		__atomic_fetch_add((uint32_t *)tally__pcpu_at(q, s, off), 1u, __ATOMIC_RELAXED);
		__atomic_fetch_add((uint64_t *)tally__pcpu_at(q, s, TALLY__HIST_BANK_BYTES * (k ^ 1u) + 8u),
				   (uint64_t)hook_v[1], __ATOMIC_RELAXED);
		tally__hist_record_atomic(hk.h, off, 1u, (uint64_t)hook_v[1], TALLY__HIST_SUM);
		CHECK_EQ(tally_hist_record(hk.ref, hook_v[1]), 0);
		hk.landed = 1;
		hk.ran++;
		return;
	}
	/* what the interrupted read loaded, and the sum it loads next */
	d = word_at(s, k, 0);
	sm = word_at(s, k, 1);
	for (i = 0; i < 2; i++) {
		/* into bank k, the one being read */
		unsigned j = tally__hist_pos_slow(&hk.h->tally__l, (uint64_t)hook_v[i]);
		tally__hist_add(hk.h, tally__hist_half_off(j, k), 1u, (uint64_t)hook_v[i]);
		CHECK_EQ(tally_hist_record(hk.ref, hook_v[i]), 0);
	}
	/* both committed here: done + 2, and the sum it loads next holds both */
	hk.landed = word_at(s, k, 0) - d == 2u;
	if (hk.landed)
		CHECK(word_at(s, k, 1) - sm == (uint64_t)(hook_v[0] + hook_v[1]),
		      "the sum after done %llu: %llu, was %llu", (unsigned long long)d,
		      (unsigned long long)word_at(s, k, 1), (unsigned long long)sm);
	hk.ran++;
}

/* Snapshot h into s and the reference into rs; s must equal rs exactly. */
static void expect_snap(const char *what, struct tally_hist_snap *s, struct tally_hist_snap *rs)
{
	unsigned j;
	CHECK_EQ(tally_hist_snapshot(hk.h, s), 0);
	CHECK_EQ(tally_hist_snapshot(hk.ref, rs), 0);
	for (j = 0; j < s->nr_buckets; j++)
		CHECK(s->counts[j] == rs->counts[j], "%s: bucket %u: %llu, want %llu", what, j,
		      (unsigned long long)s->counts[j], (unsigned long long)rs->counts[j]);
	CHECK(s->count == rs->count && s->sum == rs->sum,
	      "%s: count %llu sum %llu, want count %llu sum %llu", what,
	      (unsigned long long)s->count, (unsigned long long)s->sum,
	      (unsigned long long)rs->count, (unsigned long long)rs->sum);
}

/* The last cut read the slot's bank-k record want_k times, the other
 * bank's want_o times. */
static void expect_calls(const char *what, unsigned k, unsigned want_k, unsigned want_o)
{
	CHECK(hk.calls[k] == want_k && hk.calls[k ^ 1u] == want_o,
	      "%s: bank %u read %u times (want %u), bank %u %u times (want %u)", what, k,
	      hk.calls[k], want_k, k ^ 1u, hk.calls[k ^ 1u], want_o);
	memset(hk.calls, 0, sizeof(hk.calls));
}

int main(void)
{
	struct tally_hist h, ref;
	struct tally_hist_snap s, rs;
	unsigned trial, retries = 0, k;
	int cpu = harness_pin_here();

	CHECK(cpu >= 0, "cannot pin the thread");
	CHECK_EQ(tally_hist_init(&h, NULL), 0);
	CHECK_EQ(tally_hist_init(&ref, NULL), 0);
	CHECK_EQ(tally_hist_snap_init(&s, &h), 0);
	CHECK_EQ(tally_hist_snap_init(&rs, &ref), 0);
	if (cpu < 0 || (unsigned)cpu >= h.tally__pcpu.nr) {
		printf("hist_cut_hook: SKIPPED: CPU %d has no slot of its own\n", cpu);
		return 77;
	}
	hk.h = &h;
	hk.ref = &ref;
	hk.slot = (unsigned)cpu;

	/* Nothing written: no slot to read. */
	expect_snap("empty", &s, &rs);
	expect_calls("empty", 0, 0, 0);

	for (trial = 0; trial < 3 * TRIALS; trial++) {
		int one_read = trial < TRIALS || trial >= 2 * TRIALS; /* else the two reads */
		const char *what = trial < TRIALS	    ? "one read, records inside it"
				   : trial < 2 * TRIALS ? "two reads, records inside the second"
							: "one read, an aborted section's record inside it";
		hk.aborted = trial >= 2 * TRIALS;
		if (trial == 2 * TRIALS) {
			/* the shared slot in use before the cut begins (else
			 * its first use makes the read start again: the
			 * written slots it saw grew) */
			unsigned j = tally__hist_pos_slow(&h.tally__l, 77);
			size_t off = tally__hist_half_off(j, 0);
			__atomic_fetch_add((uint32_t *)tally__pcpu_at(&h.tally__pcpu,
								      h.tally__pcpu.nr, off),
					   1u, __ATOMIC_RELAXED);
			tally__hist_record_atomic(&h, off, 1u, 77, TALLY__HIST_HALF);
			CHECK_EQ(tally_hist_record(&ref, 77), 0);
			expect_snap("half on the shared slot", &s, &rs);
			memset(hk.calls, 0, sizeof(hk.calls));
		}
		/* before-state: records in the active bank, on this slot too */
		CHECK_EQ(tally_hist_record_n(&h, 3, trial + 1u), 0);
		CHECK_EQ(tally_hist_record_n(&ref, 3, trial + 1u), 0);
		CHECK_EQ(tally_hist_record(&h, 1000), 0);
		CHECK_EQ(tally_hist_record(&ref, 1000), 0);
		CHECK_EQ(tally_hist_record(&h, (int64_t)1 << 50), 0); /* above */
		CHECK_EQ(tally_hist_record(&ref, (int64_t)1 << 50), 0);
		/* the kind of cut (white box: what a quiet or a busy
		 * histogram's last cuts left) */
		h.tally__busy = one_read ? 0u : 1u;
		k = tally__hist_bank(tally__load(&h.tally__act));
		/* the aborted record goes into the bank read first (bank 0)
		 * when the hook fires at bank 1's record, and the other way */
		hk.bank = hk.aborted ? trial & 1u : k;
		hk.armed = 1;
		memset(hk.calls, 0, sizeof(hk.calls));
		expect_snap(what, &s, &rs);
		CHECK_EQ(hk.armed, 0);
		CHECK_EQ(hk.ran, (int)(trial + retries + 1u));
		if (!hk.landed) {
			/* a section preempted: finished on the shared slot */
			if (++retries < TRIES) {
				trial--;
				continue;
			}
			CHECK(0, "trial %u: no record committed on slot %u in %d tries", trial,
			      hk.slot, TRIES);
			break;
		}
		if (one_read) {
			/* the one read refused (the busy mark says so), then the
			 * two reads: the idle bank, the bank that was active */
			CHECK_EQ(h.tally__busy, TALLY__HIST_BUSY_CUTS);
			expect_calls(what, 0, 2, 2);
		} else {
			/* the idle bank once; the bank that was active twice:
			 * refused, then read again alone */
			CHECK_EQ(h.tally__busy, 0u);
			expect_calls(what, k, 2, 1);
		}
		/* and the next cut, with nothing in flight: one read of both
		 * banks (quiet), or two reads that each add up (busy) */
		h.tally__busy = trial & 1u;
		expect_snap("after", &s, &rs);
		expect_calls("after", 0, 1, 1);
	}
	printf("hist_cut_hook: %s, slot %u, %u trials of each cut, %u retried\n",
#if TALLY__HAVE_RSEQ
	       tally__rseq_registered() ? "rseq sections" : "atomic records",
#else
	       "atomic records",
#endif
	       hk.slot, TRIALS, retries);
	tally_hist_snap_destroy(&s);
	tally_hist_snap_destroy(&rs);
	tally_hist_destroy(&h);
	tally_hist_destroy(&ref);
	return harness_exit("hist_cut_hook");
}
