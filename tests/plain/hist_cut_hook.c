/*
 * hist_cut_hook.c - a cut's read of a CPU slot's record (done, then the
 * sum) with records committing inside it, forced through hist/cut.h's test
 * hook (TALLY__HIST_READ_HOOK, defined here before the include) instead of
 * waited for. The thread is pinned; the hook, armed for its CPU's slot and
 * the bank the cut reads second (the one that was active), makes two
 * records there, as records that read the active bank before the cut
 * switched it and commit now would. In the rseq format the two commits
 * flip done's parity twice, so the sum word the first done load picked
 * now holds both records' values: a torn pair, which the re-check of done
 * must reject, retrying that slot's pair alone. In the atomic format
 * (no rseq) the sum read after the records includes them and done does
 * not, so the bank's halves do not add up and the whole bank is read
 * again.
 * Each trial checks that the pair was torn (the picked sum word grew by
 * both values), the snapshot against a reference histogram that recorded
 * the same values plainly, every bucket, count and sum exactly (the
 * after-state: the records completed before the read was retried), and
 * counts the hook's calls per slot and bank (one per read of a record):
 * the armed slot's pair read twice, every other once (rseq), or every
 * slot's twice (atomic). A read that did not retry, or retried more than
 * it had to, fails: without the re-check the snapshot stays exact (the
 * add-up check catches the torn pair, see hist/cut.h) but the whole bank
 * is read again, which the counts catch. The kernel may preempt a
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
	unsigned slot, bank, slots;
	int armed;       /* make the records at the next read of (slot, bank) */
	int ran;         /* times it made them */
	int landed;      /* the last time, both committed on the armed slot */
	unsigned *calls; /* [2][slots]: reads of each bank's record of a slot */
} hk;

/* Word i of slot s's bank-k record: 0 done, 1 + parity its sums. */
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
	if (p != &hk.h->tally__pcpu)
		return; /* the reference's cuts */
	hk.calls[k * hk.slots + s]++;
	if (!hk.armed || s != hk.slot || k != hk.bank)
		return;
	hk.armed = 0;
	/* what the interrupted read loaded, and the sum it would pick:
	 * the atomic format's done has no parity bit, so sum[0] */
	d = word_at(s, k, 0);
	sm = word_at(s, k, 1u + (unsigned)(d >> 63));
	for (i = 0; i < 2; i++) {
		/* into bank k, the one being read: tally_hist_record() would
		 * land in the bank the cut just made active */
		unsigned j = tally__hist_pos_slow(&hk.h->tally__l, (uint64_t)hook_v[i]);
		tally__hist_add(hk.h, tally__hist_half_off(j, k), 1u, (uint64_t)hook_v[i]);
		CHECK_EQ(tally_hist_record(hk.ref, hook_v[i]), 0);
	}
	/* both committed here (the count's 63 bits + 2, the parity back
	 * where it was), and the picked sum word holds both: torn */
	hk.landed = ((word_at(s, k, 0) - d) << 1) == 4u;
	if (hk.landed)
		CHECK(word_at(s, k, 1u + (unsigned)(d >> 63)) - sm ==
			      (uint64_t)(hook_v[0] + hook_v[1]),
		      "the sum word done %llu picks: %llu, was %llu", (unsigned long long)d,
		      (unsigned long long)word_at(s, k, 1u + (unsigned)(d >> 63)),
		      (unsigned long long)sm);
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

/* The last cut read bank k's slot `twice` twice, the rest of bank k
 * `others` times each, and every slot of the other bank once. */
static void expect_calls(const char *what, unsigned k, unsigned twice, unsigned others)
{
	unsigned s, b;
	for (b = 0; b < 2; b++)
		for (s = 0; s < hk.slots; s++) {
			unsigned want = b != k ? 1u : s == twice ? 2u : others;
			CHECK(hk.calls[b * hk.slots + s] == want,
			      "%s: bank %u slot %u read %u times, want %u", what, b, s,
			      hk.calls[b * hk.slots + s], want);
		}
	memset(hk.calls, 0, 2 * (size_t)hk.slots * sizeof(*hk.calls));
}

int main(void)
{
	struct tally_hist h, ref;
	struct tally_hist_snap s, rs;
	unsigned trial, retries = 0, k, others;
	int cpu = harness_pin_here(), rseq_format = 0;

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
	hk.slots = tally__pcpu_slots(&h.tally__pcpu);
	hk.calls = (unsigned *)calloc(2 * (size_t)hk.slots, sizeof(*hk.calls));
	CHECK(hk.calls != NULL, "calloc");
	if (!hk.calls)
		return harness_exit("hist_cut_hook");
#if TALLY__HAVE_RSEQ
	rseq_format = tally__rseq_registered();
#endif
	/* rseq: the re-check retries the armed slot's pair alone; atomic:
	 * the add-up check retries the whole bank */
	others = rseq_format ? 1u : 2u;

	/* Nothing in flight: every read takes one try. */
	expect_snap("empty", &s, &rs);
	expect_calls("empty", 0, UINT32_MAX, 1);

	for (trial = 0; trial < TRIALS; trial++) {
		/* before-state: records in the active bank, on this slot too */
		CHECK_EQ(tally_hist_record_n(&h, 3, trial + 1u), 0);
		CHECK_EQ(tally_hist_record_n(&ref, 3, trial + 1u), 0);
		CHECK_EQ(tally_hist_record(&h, 1000), 0);
		CHECK_EQ(tally_hist_record(&ref, 1000), 0);
		CHECK_EQ(tally_hist_record(&h, (int64_t)1 << 50), 0); /* above */
		CHECK_EQ(tally_hist_record(&ref, (int64_t)1 << 50), 0);
		/* the cut reads the idle bank, switches, then reads this one */
		k = tally__hist_bank(tally__load(&h.tally__act));
		hk.bank = k;
		hk.armed = 1;
		expect_snap("records inside the read", &s, &rs);
		CHECK_EQ(hk.armed, 0);
		CHECK_EQ(hk.ran, (int)(trial + retries + 1u));
		if (!hk.landed) {
			/* a section preempted: finished on the shared slot */
			memset(hk.calls, 0, 2 * (size_t)hk.slots * sizeof(*hk.calls));
			if (++retries < TRIES) {
				trial--;
				continue;
			}
			CHECK(0, "trial %u: no record committed on slot %u in %d tries", trial,
			      hk.slot, TRIES);
			break;
		}
		expect_calls("records inside the read", k, hk.slot, others);
		/* and the next cut, with nothing in flight, one try each */
		expect_snap("after", &s, &rs);
		expect_calls("after", 0, UINT32_MAX, 1);
		if (!(trial & 1u)) {
			/* one more: the next trial reads the other bank */
			expect_snap("between", &s, &rs);
			expect_calls("between", 0, UINT32_MAX, 1);
		}
	}
	printf("hist_cut_hook: %s format, slot %u, %u trials, %u retried\n",
	       rseq_format ? "rseq" : "atomic", hk.slot, TRIALS, retries);
	free(hk.calls);
	tally_hist_snap_destroy(&s);
	tally_hist_snap_destroy(&rs);
	tally_hist_destroy(&h);
	tally_hist_destroy(&ref);
	return harness_exit("hist_cut_hook");
}
