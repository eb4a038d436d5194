/*
 * shm_hist - histograms in a shared region (tally/shm/hist.h).
 *   - same name, same histogram (another attach, a forked child); other
 *     buckets, another scale or another kind refused (-EEXIST), bad
 *     options (-EINVAL), a read-only attach (-EROFS);
 *   - exact against an in-process tally_hist of the same options fed the
 *     same values (every bucket, count, sum, quantiles): records of the
 *     parent and of forked children, record_n (small and big), values
 *     below and above the range, explicit bounds, an atomic region; read
 *     through a read-only attach, a read-write one and the handle; the
 *     snapshots merge with in-process ones;
 *   - a half that wraps (2^32 - 1 observations twice into one bucket):
 *     the carry lands, the count is exact;
 *   - children killed (SIGKILL) mid-load: count and sum hold every record
 *     that returned (each acknowledged after it returned: the difference
 *     is 0 or the one record in flight);
 *   - a cut that records keep landing in (a hook records inside the cut):
 *     a read-write cut steers them away and is exact (count, sum and the
 *     bucket agree); a read-only one gives -EBUSY with its reason, never
 *     a wrong cut;
 *   - corrupted histograms (block offset, chunk, bucket count, range,
 *     scale) refused with their reason; a bucket's half raised (what a
 *     record stuck in the middle leaves) read as it stands;
 *   - export (tally/shm/export.h): Prometheus histograms with the fixed
 *     le set (exact lines), labelled families, members of other buckets
 *     and name clashes skipped, helps kept across a rebuild, JSON;
 *     every render also streamed (render_write): the same bytes;
 *     histograms alone into an empty exporter (it takes their family
 *     table), and again when a member joins.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "streamed.h"

#include <float.h>
#include <signal.h>
#include <sys/wait.h>

/* The hook: record inside the cut (busy()). */
static volatile int hook_on;
static unsigned long hook_n;
static void hook_record(void);
#define TALLY_SHM_HIST_TRIES 100u
#define TALLY__SHM_HIST_READ_HOOK(s)                                                               \
	do {                                                                                       \
		if (hook_on)                                                                       \
			hook_record();                                                             \
	} while (0)
#include <tally/shm/hist.h>
#include <tally/shm/export.h>

static struct tally_shm_hist *hook_h;

static void hook_record(void)
{
	tally_shm_hist_record(hook_h, 1000);
	hook_n++;
}

#include <stddef.h>

static char dir[] = "/tmp/tally-shm-hist.XXXXXX";

static struct tally_shm *open_rw(const char *p, const struct tally_shm_opts *o)
{
	struct tally_shm *r = NULL;
	char why[TALLY_SHM_ERROR_MAX];
	int err = tally_shm_open(&r, p, o, why, sizeof(why));
	CHECK(err == 0, "tally_shm_open(%s): %d %s", p, err, why);
	return r;
}

static struct tally_shm *open_ro(const char *p)
{
	struct tally_shm *r = NULL;
	char why[TALLY_SHM_ERROR_MAX];
	int err = tally_shm_open_ro(&r, p, 0, why, sizeof(why));
	CHECK(err == 0, "tally_shm_open_ro(%s): %d %s", p, err, why);
	return r;
}

/* The value named name in a snapshot of r, or NULL. */
static const struct tally_shm_value *find(const struct tally_shm_snap *s, const char *name)
{
	size_t i;
	for (i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].name, name))
			return &s->v[i];
	return NULL;
}

/* a and b hold the same observations, bucket by bucket. */
static void same_snap(const char *what, const struct tally_hist_snap *a,
		      const struct tally_hist_snap *b)
{
	unsigned j, diff = 0;
	CHECK(a && b, "%s: no snapshot", what);
	if (!a || !b)
		return;
	CHECK_EQ(a->nr_buckets, b->nr_buckets);
	CHECK(a->count == b->count, "%s: count %llu, expected %llu", what,
	      (unsigned long long)a->count, (unsigned long long)b->count);
	CHECK(a->sum == b->sum, "%s: sum %llu, expected %llu", what, (unsigned long long)a->sum,
	      (unsigned long long)b->sum);
	for (j = 0; j < a->nr_buckets && j < b->nr_buckets; j++)
		diff += a->counts[j] != b->counts[j];
	CHECK(diff == 0, "%s: %u buckets differ", what, diff);
	{
		/* (stored: x87's excess precision must not tell them apart) */
		volatile double qa = tally_hist_quantile(a, 0.5), qb = tally_hist_quantile(b, 0.5);
		volatile double ra = tally_hist_quantile(a, 0.99), rb = tally_hist_quantile(b, 0.99);
		CHECK(qa == qb && ra == rb, "%s: quantiles differ", what);
	}
}

static void kinds_and_names(void)
{
	char p[300], why[TALLY_SHM_ERROR_MAX];
	struct tally_shm *a, *b, *ro;
	struct tally_shm_hist h1, h2;
	struct tally_shm_counter c;
	struct tally_hist_opts o = {0};
	struct tally_hist_snap s;
	snprintf(p, sizeof(p), "%s/kinds", dir);
	a = open_rw(p, NULL);
	b = open_rw(p, NULL);
	ro = open_ro(p);
	if (!a || !b || !ro)
		return;
	CHECK_EQ(tally_shm_hist(a, "lat", NULL, 1e-9, &h1), 0);
	CHECK_EQ(tally_shm_hist(b, "lat", NULL, 1e-9, &h2), 0); /* the same one */
	CHECK_EQ(tally_shm_hist_record(&h1, 1500), 0);
	CHECK_EQ(tally_shm_hist_record(&h2, 2500), 0);
	CHECK_EQ(tally_shm_hist_record(&h2, -1), -EINVAL);
	CHECK_EQ(tally_shm_hist_record_n(&h2, 5, TALLY_HIST_N_MAX + 1), -EINVAL);
	CHECK_EQ(tally_shm_hist_record_n(&h2, 5, 0), 0);
	CHECK_EQ(tally_shm_hist_snap_init(&s, &h1), 0);
	CHECK_EQ(tally_shm_hist_snapshot(&h1, &s, NULL), 0);
	CHECK_EQ(s.count, 2);
	CHECK_EQ(s.sum, 4000);
	tally_hist_snap_destroy(&s);
	/* Other buckets, another scale, other kinds. */
	o.precision = 3;
	CHECK_EQ(tally_shm_hist(a, "lat", &o, 1e-9, &h2), -EEXIST);
	CHECK(strstr(tally_shm_error(a), "other buckets") != NULL, "%s", tally_shm_error(a));
	CHECK_EQ(tally_shm_hist(a, "lat", NULL, 1e-6, &h2), -EEXIST);
	CHECK_EQ(tally_shm_counter(a, "lat", &c), -EEXIST);
	CHECK(strstr(tally_shm_error(a), "exists as a histogram") != NULL, "%s",
	      tally_shm_error(a));
	CHECK_EQ(tally_shm_counter(a, "n", &c), 0);
	CHECK_EQ(tally_shm_hist(a, "n", NULL, 0, &h2), -EEXIST);
	CHECK(strstr(tally_shm_error(a), "exists as a counter") != NULL, "%s", tally_shm_error(a));
	/* Bad options and names; read-only. */
	o.precision = TALLY_HIST_PRECISION_MAX + 1;
	CHECK_EQ(tally_shm_hist(a, "x", &o, 0, &h2), -EINVAL);
	CHECK_EQ(tally_shm_hist(a, "x", NULL, -1.0, &h2), -EINVAL);
	CHECK_EQ(tally_shm_hist(a, "x", NULL, 1.0 / 0.0, &h2), -EINVAL);
	CHECK_EQ(tally_shm_hist(a, "9x", NULL, 0, &h2), -EINVAL);
	CHECK_EQ(tally_shm_hist(ro, "y", NULL, 0, &h2), -EROFS);
	/* A region too small for one says so. */
	{
		struct tally_shm_opts so = {0};
		struct tally_shm *sm;
		snprintf(p, sizeof(p), "%s/small", dir);
		so.slot_bytes = 4096;
		sm = open_rw(p, &so);
		if (sm) {
			CHECK_EQ(tally_shm_hist(sm, "big", NULL, 0, &h2), -ENOSPC);
			CHECK(strstr(tally_shm_error(sm), "slot_bytes") != NULL, "%s",
			      tally_shm_error(sm));
			o.precision = 2;
			o.lowest = 1;
			o.highest = 1000;
			CHECK_EQ(tally_shm_hist(sm, "small", &o, 0, &h2), 0);
			tally_shm_close(sm);
		}
	}
	(void)why;
	tally_shm_close(a);
	tally_shm_close(b);
	tally_shm_close(ro);
}

/* The values of exact(): v(k) for the k-th record of writer w. */
static int64_t value(unsigned w, unsigned k)
{
	static const int64_t edge[] = {0, 1, 2, 255, 256, 257, 1000, 4095, 4096, 123456789,
				       3600000000000ll, 3600000000001ll, INT64_MAX};
	if (k % 7 == 0)
		return edge[(w + k) % (sizeof(edge) / sizeof(edge[0]))];
	return (int64_t)((uint64_t)(w * 7919u + k) * 2654435761u % 50000000u);
}

#define WRITERS 3
#define PER 20000

/* Writer w's records into h (and, when ref is not NULL, into ref). */
static void write_all(unsigned w, struct tally_shm_hist *h, struct tally_hist *ref)
{
	unsigned k;
	for (k = 0; k < PER; k++) {
		int64_t v = value(w, k);
		if (k % 1000 == 999) { /* n of 3 and of 20 (a big record) */
			uint64_t n = k % 2000 == 999 ? 3 : 20;
			tally_shm_hist_record_n(h, v, n);
			tally_hist_record_n(ref, v, n);
		} else {
			tally_shm_hist_record(h, v);
			tally_hist_record(ref, v);
		}
	}
}

/* Parent and forked children record; every reader's cut equals ref's. */
static void exact_one(const char *tag, const struct tally_shm_opts *ro_opts,
		      const struct tally_hist_opts *ho)
{
	char p[300];
	struct tally_shm *r, *ro;
	struct tally_shm_hist h;
	struct tally_hist ref;
	struct tally_hist_snap want, got;
	struct tally_shm_snap s = {0};
	const struct tally_shm_value *v;
	unsigned w;
	snprintf(p, sizeof(p), "%s/exact-%s", dir, tag);
	r = open_rw(p, ro_opts);
	if (!r)
		return;
	CHECK_EQ(tally_shm_hist(r, "lat", ho, 1e-9, &h), 0);
	CHECK_EQ(tally_hist_init(&ref, ho), 0);
	for (w = 1; w <= WRITERS; w++) {
		pid_t pid = fork();
		if (pid == 0) {
			/* a child of fork(): the parent's handle (w odd), or its
			 * own attach (w even), as an unrelated process */
			struct tally_shm *mine = NULL;
			struct tally_shm_hist hh = h;
			if (w % 2 == 0) {
				if (tally_shm_open(&mine, p, NULL, NULL, 0) ||
				    tally_shm_hist(mine, "lat", ho, 1e-9, &hh))
					_exit(3);
			}
			{
				unsigned k;
				for (k = 0; k < PER; k++) {
					int64_t x = value(w, k);
					if (k % 1000 == 999)
						tally_shm_hist_record_n(&hh, x,
									k % 2000 == 999 ? 3 : 20);
					else
						tally_shm_hist_record(&hh, x);
				}
			}
			tally_shm_close(mine);
			_exit(0);
		}
		CHECK(pid > 0, "fork");
	}
	write_all(0, &h, &ref);
	for (w = 1; w <= WRITERS; w++) {
		int st = 0;
		CHECK(wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d", st);
	}
	/* the children's values, into the reference */
	for (w = 1; w <= WRITERS; w++) {
		unsigned k;
		for (k = 0; k < PER; k++) {
			int64_t x = value(w, k);
			if (k % 1000 == 999)
				tally_hist_record_n(&ref, x, k % 2000 == 999 ? 3 : 20);
			else
				tally_hist_record(&ref, x);
		}
	}
	CHECK_EQ(tally_hist_snap_init(&want, &ref), 0);
	CHECK_EQ(tally_hist_snapshot_raw(&ref, &want), 0);
	CHECK_EQ(want.count, (WRITERS + 1) * (PER - PER / 1000 + 10 * 3 + 10 * 20));
	/* the handle's cut */
	CHECK_EQ(tally_shm_hist_snap_init(&got, &h), 0);
	CHECK_EQ(tally_shm_hist_snapshot(&h, &got, NULL), 0);
	same_snap("handle", &got, &want);
	/* a read-write attach's snapshot, then a read-only one's */
	CHECK_EQ(tally_shm_snapshot(r, &s), 0);
	v = find(&s, "lat");
	CHECK(v && v->kind == TALLY_SHM_HIST && v->scale == 1e-9 && v->stuck == 0,
	      "rw: kind/scale");
	if (v) {
		same_snap("rw snapshot", v->hist, &want);
		CHECK_EQ(v->raw, (tally_uword)want.count);
	}
	ro = open_ro(p);
	if (ro) {
		CHECK_EQ(tally_shm_snapshot(ro, &s), 0); /* reused */
		v = find(&s, "lat");
		if (v)
			same_snap("ro snapshot", v->hist, &want);
		/* merge with an in-process snapshot of the same options */
		if (v && v->hist) {
			CHECK_EQ(tally_hist_snap_merge(v->hist, &want), 0);
			CHECK_EQ(v->hist->count, 2 * want.count);
		}
		tally_shm_close(ro);
	}
	tally_shm_snap_free(&s);
	tally_hist_snap_destroy(&want);
	tally_hist_snap_destroy(&got);
	tally_hist_destroy(&ref);
	tally_shm_close(r);
}

static void exact(void)
{
	static const uint64_t bounds[] = {1, 100, 1000, 4096, 1000000, 50000000};
	struct tally_hist_opts ex = {0}, small = {0};
	struct tally_shm_opts at = {0};
	exact_one("default", NULL, NULL);
	ex.bounds = bounds;
	ex.nr_bounds = sizeof(bounds) / sizeof(bounds[0]);
	exact_one("bounds", NULL, &ex);
	small.lowest = 10;
	small.highest = 1000000;
	small.precision = 4;
	exact_one("small", NULL, &small);
	at.flags = TALLY_SHM_ATOMIC;
	exact_one("atomic", &at, NULL);
}

/* 2 x (2^32 - 1) observations of one value: one bucket's half wraps (the
 * shared slot's, atomic adds: big records), its carry lands. */
static void carry(void)
{
	char p[300];
	struct tally_shm *r;
	struct tally_shm_hist h;
	struct tally_hist_snap s;
	struct tally_hist_opts o = {0};
	uint64_t lo, hi;
	unsigned j;
	snprintf(p, sizeof(p), "%s/carry", dir);
	r = open_rw(p, NULL);
	o.lowest = 1;
	o.highest = 1000;
	o.precision = 2;
	if (!r || tally_shm_hist(r, "c", &o, 0, &h))
		return;
	CHECK_EQ(tally_shm_hist_record_n(&h, 77, TALLY_HIST_N_MAX), 0);
	CHECK_EQ(tally_shm_hist_record_n(&h, 77, TALLY_HIST_N_MAX), 0);
	CHECK_EQ(tally_shm_hist_record(&h, 77), 0);
	CHECK_EQ(tally_shm_hist_snap_init(&s, &h), 0);
	CHECK_EQ(tally_shm_hist_snapshot(&h, &s, NULL), 0);
	CHECK_EQ(s.count, 2 * TALLY_HIST_N_MAX + 1);
	CHECK_EQ(s.sum, 77 * (2 * TALLY_HIST_N_MAX + 1));
	for (j = 0; j < s.nr_buckets; j++)
		if (s.counts[j]) {
			CHECK_EQ(tally_hist_snap_bucket_range(&s, j, &lo, &hi), 0);
			CHECK(lo <= 77 && 77 <= hi, "bucket %u: %llu..%llu", j,
			      (unsigned long long)lo, (unsigned long long)hi);
			CHECK_EQ(s.counts[j], 2 * TALLY_HIST_N_MAX + 1);
		}
	tally_hist_snap_destroy(&s);
	tally_shm_close(r);
}

/* Children record and acknowledge; they are killed at any point. An
 * acknowledgement is committed by one store (which of two copies is
 * current), so it is whole whenever the child dies. */
struct ack {
	uint64_t n[2], sum[2];
	unsigned cur;
	uint64_t pending_n, pending_v;
	char pad[16];
};

static void killed(void)
{
	enum { K = 6 };
	char p[300];
	struct tally_shm *r;
	struct tally_shm_hist h;
	struct tally_hist_snap s;
	struct ack *acks;
	uint64_t n = 0, sum = 0, pn[K], pv[K];
	pid_t pids[K];
	unsigned i, mask, found = 0;
	snprintf(p, sizeof(p), "%s/killed", dir);
	r = open_rw(p, NULL);
	acks = (struct ack *)mmap(NULL, K * sizeof(*acks), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!r || acks == MAP_FAILED || tally_shm_hist(r, "k", NULL, 0, &h))
		return;
	for (i = 0; i < K; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct ack *me = &acks[i];
			struct harness_rng rng = {i + 1};
			for (;;) {
				int64_t v = (int64_t)(harness_next(&rng) % 10000000u);
				uint64_t c = harness_next(&rng) % 8 ? 1 : 1 + harness_next(&rng) % 40;
				unsigned k = me->cur;
				__atomic_store_n(&me->pending_v, (uint64_t)v * c, __ATOMIC_RELAXED);
				__atomic_store_n(&me->pending_n, c, __ATOMIC_RELEASE);
				tally_shm_hist_record_n(&h, v, c);
				me->n[k ^ 1] = me->n[k] + c;
				me->sum[k ^ 1] = me->sum[k] + (uint64_t)v * c;
				__atomic_store_n(&me->cur, k ^ 1, __ATOMIC_RELEASE); /* the commit */
				__atomic_store_n(&me->pending_n, 0, __ATOMIC_RELEASE);
			}
		}
	}
	usleep(200000);
	for (i = 0; i < K; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
		n += acks[i].n[acks[i].cur];
		sum += acks[i].sum[acks[i].cur];
		pn[i] = acks[i].pending_n;
		pv[i] = pn[i] ? acks[i].pending_v : 0;
	}
	CHECK_EQ(tally_shm_hist_snap_init(&s, &h), 0);
	CHECK_EQ(tally_shm_hist_snapshot(&h, &s, NULL), 0);
	/* What the region holds beyond the acknowledged: some of the records
	 * pending when the children died, in the count (their half landed),
	 * and of those some in the sum (a record killed in the middle has its
	 * bucket, maybe not its sum: tally/shm/cut.h). */
	for (mask = 0; mask < 1u << K && !found; mask++) {
		uint64_t dn = 0;
		unsigned sub;
		for (i = 0; i < K; i++)
			dn += mask >> i & 1 ? pn[i] : 0;
		if (s.count != n + dn)
			continue;
		for (sub = mask;; sub = (sub - 1) & mask) { /* every subset of mask */
			uint64_t dv = 0;
			for (i = 0; i < K; i++)
				dv += sub >> i & 1 ? pv[i] : 0;
			found |= s.sum == sum + dv;
			if (!sub || found)
				break;
		}
	}
	CHECK(found, "count %llu, sum %llu: acknowledged %llu, %llu, and no set of the records "
		     "pending makes up the difference",
	      (unsigned long long)s.count, (unsigned long long)s.sum, (unsigned long long)n,
	      (unsigned long long)sum);
	CHECK(n > 1000, "only %llu records", (unsigned long long)n);
	/* A snapshot says how many observations were left in the middle. */
	{
		struct tally_shm_snap ss = {0};
		const struct tally_shm_value *v;
		uint64_t pend = 0;
		for (i = 0; i < K; i++)
			pend += pn[i];
		CHECK_EQ(tally_shm_snapshot(r, &ss), 0);
		v = find(&ss, "k");
		CHECK(v && v->hist && v->hist->count == s.count && v->stuck <= pend,
		      "stuck %llu, pending %llu", v ? (unsigned long long)v->stuck : 0ull,
		      (unsigned long long)pend);
		tally_shm_snap_free(&ss);
	}
	printf("shm_hist: killed: %llu records acknowledged, %llu counted\n",
	       (unsigned long long)n, (unsigned long long)s.count);
	tally_hist_snap_destroy(&s);
	munmap(acks, K * sizeof(*acks));
	tally_shm_close(r);
}

/* Records landing inside the cut (the hook, this CPU pinned). */
static void busy(void)
{
	char p[300];
	struct tally_shm *r, *ro;
	struct tally_shm_hist h;
	struct tally_shm_snap s = {0};
	const struct tally_shm_value *v;
	struct tally_hist_snap base;
	unsigned j;
	int err;
	snprintf(p, sizeof(p), "%s/busy", dir);
	r = open_rw(p, NULL);
	if (!r || tally_shm_hist(r, "b", NULL, 0, &h))
		return;
	for (j = 0; j < 100; j++)
		tally_shm_hist_record(&h, 5 + j);
	hook_h = &h;
	CHECK_EQ(tally_shm_hist_snap_init(&base, &h), 0);
	CHECK_EQ(tally_shm_hist_snapshot(&h, &base, NULL), 0);
	if (harness_pin_here() < 0) {
		printf("shm_hist: busy: could not pin this thread: skipped\n");
		tally_hist_snap_destroy(&base);
		tally_shm_close(r);
		return;
	}
	/* Read-write: the cut steers the hook's records to the other bank,
	 * and its cut is some prefix of them, whole. */
	hook_n = 0;
	hook_on = 1;
	err = tally_shm_snapshot(r, &s);
	hook_on = 0;
	CHECK(err == 0, "rw snapshot under records: %d %s", err, tally_shm_error(r));
	v = find(&s, "b");
	CHECK(hook_n > 0, "the hook never ran");
	if (!err && v && v->hist) {
		uint64_t m = v->hist->count - base.count;
		unsigned pos = 0;
		for (j = 0; j < base.nr_buckets; j++) {
			uint64_t lo, hi;
			if (tally_hist_snap_bucket_range(v->hist, j, &lo, &hi) >= 0 && lo <= 1000 &&
			    1000 <= hi)
				pos = j;
		}
		CHECK(m <= hook_n, "%llu records in the cut, %lu made",
		      (unsigned long long)m, hook_n);
		CHECK_EQ(v->hist->sum, base.sum + 1000 * m);
		CHECK_EQ(v->hist->counts[pos], base.counts[pos] + m);
	}
	/* Read-only: nothing steers them: -EBUSY, with the reason. */
	ro = open_ro(p);
	if (ro) {
		hook_on = 1;
		err = tally_shm_snapshot(ro, &s);
		hook_on = 0;
		CHECK(err == -EBUSY, "ro snapshot under records: %d %s", err, tally_shm_error(ro));
		CHECK(strstr(tally_shm_error(ro), "did not add up") != NULL, "%s",
		      tally_shm_error(ro));
		/* quiet again: it reads */
		CHECK_EQ(tally_shm_snapshot(ro, &s), 0);
		v = find(&s, "b");
		CHECK(v && v->hist && v->hist->count == base.count + hook_n, "quiet ro count");
		tally_shm_close(ro);
	}
	tally_shm_snap_free(&s);
	tally_hist_snap_destroy(&base);
	tally_shm_close(r);
}

/* Corrupted histograms: refused with the reason. */
static unsigned char *load(const char *p, size_t *len)
{
	int fd = open(p, O_RDONLY);
	struct stat sb;
	unsigned char *b = NULL;
	if (fd >= 0 && !fstat(fd, &sb) && (b = (unsigned char *)malloc((size_t)sb.st_size)) &&
	    pread(fd, b, (size_t)sb.st_size, 0) == sb.st_size)
		*len = (size_t)sb.st_size;
	if (fd >= 0)
		close(fd);
	return b;
}

static void hostile(void)
{
	char p[300], why[TALLY_SHM_ERROR_MAX];
	struct tally_shm_opts o = {0};
	struct tally_hist_opts ho = {0};
	struct tally_shm *r, *ro;
	struct tally_shm_hist h;
	struct tally_shm_snap s = {0};
	struct tally__shm_header hd;
	struct tally__shm_entry e;
	unsigned char *img, *work;
	size_t len = 0;
	uint64_t blk;
	int err;
	snprintf(p, sizeof(p), "%s/hostile", dir);
	o.max_objects = 8;
	o.shared_bytes = 8192;
	ho.lowest = 1;
	ho.highest = 100000;
	ho.precision = 3;
	r = open_rw(p, &o);
	if (!r || tally_shm_hist(r, "h", &ho, 0, &h))
		return;
	tally_shm_hist_record(&h, 42);
	tally_shm_hist_record(&h, 4242);
	img = load(p, &len);
	work = (unsigned char *)malloc(len);
	if (!img || !work)
		return;
	memcpy(&hd, img, sizeof(hd));
	memcpy(&e, img + hd.dir_off, sizeof(e));
	blk = hd.shared_off + (uint64_t)e.aux * 64u;
	CHECK_EQ(tally_shm_read_image(img, len, &s, why, sizeof(why)), 0);
#define BAD(off, type, val, what)                                                                  \
	do {                                                                                       \
		type v_ = (val);                                                                   \
		memcpy(work, img, len);                                                            \
		memcpy(work + (off), &v_, sizeof(v_));                                             \
		err = tally_shm_read_image(work, len, &s, why, sizeof(why));                       \
		CHECK(err == -EINVAL && strstr(why, what), "line %d: %d '%s', expected '%s'",      \
		      __LINE__, err, why, what);                                                   \
	} while (0)
	BAD(hd.dir_off + offsetof(struct tally__shm_entry, aux), uint32_t, 1000, "block at");
	BAD(hd.dir_off + offsetof(struct tally__shm_entry, words), uint32_t, 3, "chunk at");
	BAD(hd.dir_off + offsetof(struct tally__shm_entry, off), uint64_t, 1ull << 40, "chunk at");
	BAD(blk + offsetof(struct tally__shm_hist_desc, nr_buckets), uint32_t, 1u << 30, "buckets");
	BAD(blk + offsetof(struct tally__shm_hist_desc, nr_buckets), uint32_t, 70, "chunk at");
	BAD(blk + offsetof(struct tally__shm_hist_desc, precision), uint32_t, 0, "precision 0");
	BAD(blk + offsetof(struct tally__shm_hist_desc, highest), uint64_t, 1, "make no");
	BAD(blk + offsetof(struct tally__shm_hist_desc, scale), double, -1.0, "scale");
	BAD(offsetof(struct tally__shm_header, shared_used), uint64_t, 1ull << 40, "shared area");
	BAD(offsetof(struct tally__shm_header, shared_off), uint64_t, 3, "do not fit");
#undef BAD
	/* A bucket's half in CPU slot 0, bank 0, raised by 9 (or a record
	 * stuck there in the middle: the same words): read as it stands, as
	 * an image and live. */
	{
		uint32_t nine = 9;
		const struct tally_shm_value *v;
		size_t at = (size_t)(hd.data_off + e.off + TALLY__HIST_BUCKETS_OFF + 8 * 5);
		int fd;
		memcpy(work, img, len);
		memcpy(work + at, &nine, 4);
		CHECK_EQ(tally_shm_read_image(work, len, &s, why, sizeof(why)), 0);
		v = find(&s, "h");
		CHECK(v && v->hist && v->hist->count == 11 && v->hist->sum == 42 + 4242 &&
			      v->stuck == 9,
		      "image: count %llu", v && v->hist ? (unsigned long long)v->hist->count : 0ull);
		fd = open(p, O_RDWR);
		CHECK(fd >= 0 && pwrite(fd, &nine, 4, (off_t)at) == 4, "poke");
		if (fd >= 0)
			close(fd);
		ro = open_ro(p);
		if (ro) {
			CHECK_EQ(tally_shm_snapshot(ro, &s), 0);
			v = find(&s, "h");
			CHECK(v && v->hist && v->hist->count == 11 && v->stuck == 9, "live: count");
			tally_shm_close(ro);
		}
	}
	tally_shm_snap_free(&s);
	free(img);
	free(work);
	tally_shm_close(r);
}

/* e's output in fmt (render_alloc); streamed (render_write), the same. */
static char *render(struct tally_export *e, int fmt)
{
	struct streamed s = {NULL, 0, 0};
	char *out = NULL;
	size_t len = 0;
	int err = tally_export_render_alloc(e, fmt, &out, &len);
	CHECK(err == 0, "render: %d %s", err, tally_export_error(e));
	err = tally_export_render_write(e, fmt, streamed, &s);
	CHECK(!err && out && s.len == len && (!len || !memcmp(s.b, out, len)),
	      "render_write: %d %s (%zu bytes)", err, tally_export_error(e), s.len);
	free(s.b);
	return out;
}

static void has(const char *page, const char *line)
{
	CHECK(page && strstr(page, line), "no line '%s' in:\n%s", line, page ? page : "(null)");
}

static void exported(void)
{
	static const uint64_t bounds[] = {1000000, 10000000, 100000000};
	char p[300], nm[128];
	struct tally_shm *r, *ro;
	struct tally_shm_hist a, b, c, d, x;
	struct tally_shm_counter cnt;
	struct tally_hist_opts ex = {0}, other = {0};
	struct tally_export e;
	unsigned skipped = 0;
	char *page;
	const char *get[] = {"method", "get", NULL}, *put[] = {"method", "put", NULL};
	snprintf(p, sizeof(p), "%s/export", dir);
	r = open_rw(p, NULL);
	ex.bounds = bounds;
	ex.nr_bounds = 3;
	other.bounds = bounds;
	other.nr_bounds = 2;
	if (!r)
		return;
	CHECK_EQ(tally_export_name(nm, sizeof(nm), "rpc_seconds", get), 0);
	CHECK_EQ(tally_shm_hist(r, nm, &ex, 1e-9, &a), 0);
	CHECK_EQ(tally_export_name(nm, sizeof(nm), "rpc_seconds", put), 0);
	CHECK_EQ(tally_shm_hist(r, nm, &ex, 1e-9, &b), 0);
	CHECK_EQ(tally_shm_hist(r, "rpc_seconds{method=\"del\"}", &other, 1e-9, &x), 0); /* skipped */
	CHECK_EQ(tally_shm_hist(r, "wait_seconds", NULL, 1e-9, &c), 0);
	CHECK_EQ(tally_shm_counter(r, "jobs", &cnt), 0);
	CHECK_EQ(tally_shm_hist(r, "jobs{k=\"1\"}", &other, 0, &d), 0); /* a counter's family */
	tally_shm_add(&cnt, 3);
	tally_shm_hist_record(&a, 500000);
	tally_shm_hist_record_n(&a, 2000000, 2);
	tally_shm_hist_record(&a, 50000000);
	tally_shm_hist_record(&a, 2000000000);
	tally_shm_hist_record(&b, 7);
	tally_shm_hist_record(&c, 1500);
	ro = open_ro(p);
	if (!ro)
		return;
	tally_export_init(&e);
	CHECK_EQ(tally_shm_export_add(&e, ro, &skipped), 0);
	CHECK_EQ(skipped, 2);
	CHECK_EQ(tally_export_set_help(&e, "rpc_seconds", "RPC latency."), 0);
	page = render(&e, TALLY_EXPORT_PROMETHEUS);
	has(page, "# HELP rpc_seconds RPC latency.\n# TYPE rpc_seconds histogram\n"
		  "rpc_seconds_bucket{method=\"get\",le=\"0.001\"} 1\n"
		  "rpc_seconds_bucket{method=\"get\",le=\"0.01\"} 3\n"
		  "rpc_seconds_bucket{method=\"get\",le=\"0.1\"} 4\n"
		  "rpc_seconds_bucket{method=\"get\",le=\"+Inf\"} 5\n"
		  "rpc_seconds_sum{method=\"get\"} 2.0545\n"
		  "rpc_seconds_count{method=\"get\"} 5\n"
		  "rpc_seconds_bucket{method=\"put\",le=\"0.001\"} 1\n");
	has(page, "rpc_seconds_count{method=\"put\"} 1\n");
	has(page, "# TYPE jobs_total counter\njobs_total 3\n");
	has(page, "# TYPE wait_seconds histogram\n");
	/* the default grid: 39 bounds and +Inf, 1 ns .. 1 h, exact decimals
	 * (x87's excess precision included: gcc -m32) */
	has(page, "wait_seconds_bucket{le=\"0.000000001\"} 0\n");
	has(page, "wait_seconds_bucket{le=\"0.000001003\"} 0\n");
	has(page, "wait_seconds_bucket{le=\"0.000002007\"} 1\n");
	has(page, "wait_seconds_bucket{le=\"3600\"} 1\n");
	has(page, "wait_seconds_sum 0.0000015\nwait_seconds_count 1\n");
	{
		const char *q = page;
		unsigned n = 0;
		while (q && (q = strstr(q, "wait_seconds_bucket{"))) {
			n++;
			q++;
		}
		CHECK_EQ(n, TALLY_EXPORT_HIST_BUCKETS_DEFAULT);
	}
	CHECK(!strstr(page, "del") && !strstr(page, "jobs_bucket"), "skipped ones rendered");
	free(page);
	page = render(&e, TALLY_EXPORT_JSON);
	has(page, "{\"name\":\"rpc_seconds\",\"type\":\"histogram\",\"help\":\"RPC latency.\"");
	free(page);
	/* A new member after the first export: rebuilt, help kept. */
	CHECK_EQ(tally_shm_hist(r, "rpc_seconds{method=\"post\"}", &ex, 1e-9, &x), 0);
	tally_shm_hist_record(&x, 20000000);
	skipped = 0;
	CHECK_EQ(tally_shm_export_add(&e, ro, &skipped), 0);
	CHECK_EQ(skipped, 0);
	page = render(&e, TALLY_EXPORT_PROMETHEUS);
	has(page, "# HELP rpc_seconds RPC latency.\n");
	has(page, "rpc_seconds_bucket{method=\"post\",le=\"0.1\"} 1\n");
	has(page, "rpc_seconds_count{method=\"get\"} 5\n");
	has(page, "jobs_total 3\n");
	free(page);
	tally_export_destroy(&e);
	tally_shm_close(ro);
	tally_shm_close(r);
}

/* Histograms alone, into an exporter with nothing else: it takes the
 * region's family table, their families registered in it (ASan: none
 * freed twice), and again when a member joins. */
static void exported_alone(void)
{
	static const uint64_t bounds[] = {1000, 1000000};
	char p[300], *page;
	struct tally_shm *r, *ro;
	struct tally_shm_hist a, b;
	struct tally_hist_opts o = {0};
	struct tally_export e;
	unsigned skipped = 0;
	snprintf(p, sizeof(p), "%s/alone", dir);
	r = open_rw(p, NULL);
	o.bounds = bounds;
	o.nr_bounds = 2;
	if (!r)
		return;
	CHECK_EQ(tally_shm_hist(r, "job_seconds", &o, 1e-9, &a), 0);
	CHECK_EQ(tally_shm_hist(r, "queue_seconds{k=\"1\"}", &o, 1e-9, &b), 0);
	tally_shm_hist_record(&a, 1500);
	ro = open_ro(p);
	if (!ro)
		return;
	tally_export_init(&e);
	CHECK_EQ(tally_shm_export_add(&e, ro, &skipped), 0);
	CHECK_EQ(skipped, 0);
	page = render(&e, TALLY_EXPORT_PROMETHEUS);
	has(page, "# HELP job_seconds tally shared histogram\n# TYPE job_seconds histogram\n");
	has(page, "job_seconds_bucket{le=\"0.000001\"} 0\njob_seconds_bucket{le=\"0.001\"} 1\n");
	has(page, "job_seconds_sum 0.0000015\njob_seconds_count 1\n");
	has(page, "queue_seconds_count{k=\"1\"} 0\n");
	free(page);
	CHECK_EQ(tally_shm_hist(r, "queue_seconds{k=\"2\"}", &o, 1e-9, &b), 0);
	CHECK_EQ(tally_shm_export_add(&e, ro, &skipped), 0);
	CHECK_EQ(skipped, 0);
	page = render(&e, TALLY_EXPORT_PROMETHEUS);
	has(page, "queue_seconds_count{k=\"1\"} 0\n");
	has(page, "queue_seconds_count{k=\"2\"} 0\n");
	free(page);
	tally_export_destroy(&e);
	tally_shm_close(ro);
	tally_shm_close(r);
}

int main(void)
{
	char p[300];
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	kinds_and_names();
	exact();
	carry();
	killed();
	hostile();
	exported();
	exported_alone();
	busy();
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	if (system(p))
		fprintf(stderr, "shm_hist: could not remove %s\n", dir);
	return harness_exit("shm_hist");
}
