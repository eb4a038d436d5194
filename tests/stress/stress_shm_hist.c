/*
 * stress_shm_hist - tally/shm/hist.h: 8 processes x 2 threads recording
 * into two histograms of one region (tally_hist's default layout, and
 * explicit bounds), while the parent cuts them; then the same while
 * workers are killed (SIGKILL) and restarted.
 *
 * Half of the workers re-execute this program with glibc's rseq
 * registration off (GLIBC_TUNABLES=glibc.pthread.rseq=0): in a region of
 * the rseq discipline they record with atomic adds on the shared slot
 * while the others record in restartable sections on the CPU slots. Each
 * record is of one of 8 values per histogram, each in a bucket of its own,
 * one observation or n of 2..40 (big records from 16: atomic adds on the
 * shared slot, counted in flight).
 *
 * Each thread acknowledges every record after it returned, per histogram
 * and value, in a file of its own slots (pending = n; record; acked += n;
 * pending = 0). Phase 1 (every worker exits): every bucket, the count and
 * the sum equal what was acknowledged, to the unit; while the workers
 * ran, every cut the parent took (a read-write attach's snapshot, which
 * steers records away from the bank it reads, and the handle's) was a
 * cut: no bucket but the 8 values' holds anything, the sum is exactly the
 * buckets' values unless the cut says records were left in the middle
 * (stuck, bounded by the records in flight), and each cut contains the
 * previous one; a read-only attach's snapshots either are such cuts or
 * -EBUSY. Phase 2 (kills): each bucket, the count and the sum hold every
 * record acknowledged and at most the records pending in killed workers.
 *
 *   stress_shm_hist [--worker PATH INCARNATION SECONDS]
 */
#define _GNU_SOURCE
#include "harness.h"

#include <tally/shm/hist.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

enum { P = 8, T = 2, H = 2, V = 8, MAX_INC = 2048 };

static const char *const names[H] = {"lat_seconds", "size_bytes"};
/* Each histogram's values, one per bucket. */
static const int64_t values[H][V] = {
	{3, 100, 1500, 70000, 2500000, 45000000, 900000000, 3599000000ll},
	{1, 64, 100, 512, 4000, 32768, 40000, 1000000}};
static const uint64_t bounds[] = {1, 64, 100, 512, 4000, 32768, 40000};

/* One incarnation-thread's acknowledgements (own lines). */
struct ack {
	uint64_t acked[H][V];
	uint64_t pending;
	unsigned pending_h, pending_v;
	unsigned started;
	char pad[64 - (8 + 3 * 4) % 64];
};

static struct ack *acks; /* [MAX_INC * T] */
static char region[256], ackpath[300];

static int open_hists(struct tally_shm *r, struct tally_shm_hist *h)
{
	struct tally_hist_opts ex = {0};
	ex.bounds = bounds;
	ex.nr_bounds = sizeof(bounds) / sizeof(bounds[0]);
	if (tally_shm_hist(r, names[0], NULL, 1e-9, &h[0]) ||
	    tally_shm_hist(r, names[1], &ex, 0, &h[1])) {
		fprintf(stderr, "stress_shm_hist: %s\n", tally_shm_error(r));
		return -1;
	}
	return 0;
}

struct worker_arg {
	struct tally_shm *r;
	unsigned inc, t;
	double until;
};

static void *worker_thread(void *p)
{
	struct worker_arg *a = (struct worker_arg *)p;
	struct ack *me = &acks[a->inc * T + a->t];
	struct tally_shm_hist h[H];
	struct harness_rng rng = {a->inc * 1000003u + a->t};
	unsigned n = 0;
	if (open_hists(a->r, h))
		exit(3);
	__atomic_store_n(&me->started, 1u, __ATOMIC_RELEASE);
	while ((n++ & 255) || harness_now() < a->until) {
		uint64_t x = harness_next(&rng), c = (x >> 16) % 8 ? 1 : 2 + (x >> 24) % 39;
		unsigned k = (unsigned)(x % H), v = (unsigned)((x >> 8) % V);
		__atomic_store_n(&me->pending_h, k, __ATOMIC_RELAXED);
		__atomic_store_n(&me->pending_v, v, __ATOMIC_RELAXED);
		__atomic_store_n(&me->pending, c, __ATOMIC_RELEASE);
		if (c == 1)
			tally_shm_hist_record(&h[k], values[k][v]);
		else
			tally_shm_hist_record_n(&h[k], values[k][v], c);
		__atomic_store_n(&me->acked[k][v], me->acked[k][v] + c, __ATOMIC_RELEASE);
		__atomic_store_n(&me->pending, (uint64_t)0, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int map_acks(void)
{
	int fd = open(ackpath, O_RDWR);
	if (fd < 0)
		return -1;
	acks = (struct ack *)mmap(NULL, MAX_INC * T * sizeof(*acks), PROT_READ | PROT_WRITE,
				  MAP_SHARED, fd, 0);
	close(fd);
	return acks == MAP_FAILED ? -1 : 0;
}

static int worker(unsigned inc, double seconds)
{
	struct tally_shm *r = NULL;
	struct worker_arg a[T];
	pthread_t th[T];
	char why[TALLY_SHM_ERROR_MAX];
	unsigned t;
	if (!acks && map_acks())
		return 3;
	if (tally_shm_open(&r, region, NULL, why, sizeof(why))) {
		fprintf(stderr, "stress_shm_hist: worker %u: %s\n", inc, why);
		return 3;
	}
	for (t = 0; t < T; t++) {
		a[t].r = r;
		a[t].inc = inc;
		a[t].t = t;
		a[t].until = harness_now() + seconds;
		pthread_create(&th[t], NULL, worker_thread, &a[t]);
	}
	for (t = 0; t < T; t++)
		pthread_join(th[t], NULL);
	tally_shm_close(r);
	return 0;
}

static int execed, exec_failed;

static pid_t spawn(const char *self, unsigned inc, double seconds)
{
	pid_t p = fork();
	if (p == 0) {
		if (inc % 2) {
			char a1[16], a2[32];
			char *argv[] = {(char *)self, (char *)"--worker", region, a1, a2, NULL};
			snprintf(a1, sizeof(a1), "%u", inc);
			snprintf(a2, sizeof(a2), "%.3f", seconds);
			setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
			execv("/proc/self/exe", argv);
			__atomic_store_n(&exec_failed, 1, __ATOMIC_RELAXED); /* this copy only */
		}
		_exit(worker(inc, seconds));
	}
	if (inc % 2)
		execed++;
	return p;
}

/* The bucket position of each value (distinct, checked). */
static unsigned pos[H][V];

static void positions(const struct tally_hist_snap *s, unsigned k)
{
	unsigned v, j;
	for (v = 0; v < V; v++) {
		uint64_t lo, hi;
		for (j = 0; j < s->nr_buckets; j++) {
			int rc = tally_hist_snap_bucket_range(s, j, &lo, &hi);
			if (rc >= 0 && (uint64_t)values[k][v] >= lo && (uint64_t)values[k][v] <= hi)
				break;
		}
		pos[k][v] = j;
		CHECK(j < s->nr_buckets && (!v || pos[k][v - 1] < j), "%s: value %u's bucket",
		      names[k], v);
	}
}

/* A cut of histogram k: only the values' buckets hold anything; its sum
 * is theirs (less at most the stuck records', bounded by the threads that
 * may be in one); *prev (when it has a count) is contained in it. */
static unsigned long cuts, stuck_cuts;

static void check_cut(const char *what, unsigned k, const struct tally_hist_snap *s,
		      uint64_t stuck, struct tally_hist_snap *prev)
{
	uint64_t sum = 0, in_values = 0, maxv = 0;
	unsigned v, j, other = 0, shrunk = 0;
	for (v = 0; v < V; v++) {
		sum += s->counts[pos[k][v]] * (uint64_t)values[k][v];
		in_values += s->counts[pos[k][v]];
		if ((uint64_t)values[k][v] > maxv)
			maxv = (uint64_t)values[k][v];
	}
	for (j = 0; j < s->nr_buckets; j++)
		shrunk += prev->count && s->counts[j] < prev->counts[j];
	other = in_values != s->count;
	CHECK(!other, "%s: %s: %llu observations outside the values' buckets", what, names[k],
	      (unsigned long long)(s->count - in_values));
	if (!stuck)
		CHECK(s->sum == sum, "%s: %s: sum %llu, the buckets make %llu (an exact cut)", what,
		      names[k], (unsigned long long)s->sum, (unsigned long long)sum);
	else
		CHECK(s->sum <= sum && sum - s->sum <= stuck * maxv && stuck <= (uint64_t)P * T * 40,
		      "%s: %s: sum %llu, buckets %llu, %llu stuck", what, names[k],
		      (unsigned long long)s->sum, (unsigned long long)sum,
		      (unsigned long long)stuck);
	CHECK(!shrunk && s->count >= prev->count, "%s: %s: a later cut lost %u buckets", what,
	      names[k], shrunk);
	cuts++;
	stuck_cuts += stuck != 0;
	memcpy(prev->counts, s->counts, s->nr_buckets * sizeof(*s->counts));
	prev->sum = s->sum;
	prev->count = s->count;
}

static void check_totals(const char *phase, struct tally_shm_hist *h, unsigned incs, int exact)
{
	unsigned k, v, i;
	for (k = 0; k < H; k++) {
		struct tally_hist_snap s;
		uint64_t count = 0, sum = 0, pend_n = 0, pend_v = 0;
		CHECK_EQ(tally_shm_hist_snap_init(&s, &h[k]), 0);
		CHECK_EQ(tally_shm_hist_snapshot(&h[k], &s, NULL), 0);
		for (v = 0; v < V; v++) {
			uint64_t acked = 0, pending = 0;
			for (i = 0; i < incs * T; i++) {
				acked += __atomic_load_n(&acks[i].acked[k][v], __ATOMIC_ACQUIRE);
				if (acks[i].pending && acks[i].pending_h == k && acks[i].pending_v == v)
					pending += acks[i].pending;
			}
			count += acked;
			sum += acked * (uint64_t)values[k][v];
			pend_n += pending;
			pend_v += pending * (uint64_t)values[k][v];
			if (exact)
				CHECK(s.counts[pos[k][v]] == acked, "%s: %s: value %u: %llu, acked %llu",
				      phase, names[k], v, (unsigned long long)s.counts[pos[k][v]],
				      (unsigned long long)acked);
			else
				CHECK(s.counts[pos[k][v]] >= acked &&
					      s.counts[pos[k][v]] - acked <= pending,
				      "%s: %s: value %u: %llu, acked %llu, pending %llu", phase,
				      names[k], v, (unsigned long long)s.counts[pos[k][v]],
				      (unsigned long long)acked, (unsigned long long)pending);
		}
		if (exact) {
			CHECK_EQ(s.count, count);
			CHECK_EQ(s.sum, sum);
		} else {
			CHECK(s.count >= count && s.count - count <= pend_n,
			      "%s: %s: count %llu, acked %llu, pending %llu", phase, names[k],
			      (unsigned long long)s.count, (unsigned long long)count,
			      (unsigned long long)pend_n);
			CHECK(s.sum >= sum && s.sum - sum <= pend_v,
			      "%s: %s: sum %llu, acked %llu, pending %llu", phase, names[k],
			      (unsigned long long)s.sum, (unsigned long long)sum,
			      (unsigned long long)pend_v);
		}
		printf("stress_shm_hist: %s: %s: count %llu (acknowledged %llu), sum %llu\n", phase,
		       names[k], (unsigned long long)s.count, (unsigned long long)count,
		       (unsigned long long)s.sum);
		tally_hist_snap_destroy(&s);
	}
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/tally-stress-shm-hist.XXXXXX", cmd[300];
	struct tally_shm *r = NULL, *ro = NULL;
	struct tally_shm_hist h[H];
	struct tally_hist_snap prev[3][H];
	struct tally_shm_snap snap = {0};
	char why[TALLY_SHM_ERROR_MAX];
	double secs = harness_seconds();
	unsigned long ro_busy = 0, ro_cuts = 0;
	pid_t pids[P];
	unsigned i, k, inc = 0, kills = 0;
	int fd, alive;
	if (argc == 5 && !strcmp(argv[1], "--worker")) {
		snprintf(region, sizeof(region), "%s", argv[2]);
		snprintf(ackpath, sizeof(ackpath), "%s.acks", region);
		return worker((unsigned)atoi(argv[3]), atof(argv[4]));
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(region, sizeof(region), "%s/region", dir);
	snprintf(ackpath, sizeof(ackpath), "%s.acks", region);
	fd = open(ackpath, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)(MAX_INC * T * sizeof(struct ack))))
		return 1;
	close(fd);
	if (map_acks() || tally_shm_open(&r, region, NULL, why, sizeof(why)) || open_hists(r, h) ||
	    tally_shm_open_ro(&ro, region, 0, why, sizeof(why))) {
		fprintf(stderr, "stress_shm_hist: %s\n", why);
		return 1;
	}
	for (i = 0; i < 3; i++)
		for (k = 0; k < H; k++)
			CHECK_EQ(tally_shm_hist_snap_init(&prev[i][k], &h[k]), 0);
	for (k = 0; k < H; k++)
		positions(&prev[0][k], k);

	/* Phase 1: every worker runs to its end; the parent cuts meanwhile. */
	for (i = 0; i < P; i++)
		pids[i] = spawn(argv[0], inc++, secs / 2);
	do {
		struct tally_hist_snap s;
		uint64_t stuck = 0;
		int err;
		alive = 0;
		for (i = 0; i < P; i++)
			alive += waitpid(pids[i], NULL, WNOHANG) == 0;
		for (k = 0; k < H; k++) { /* the handle's cut */
			CHECK_EQ(tally_shm_hist_snap_init(&s, &h[k]), 0);
			err = tally_shm_hist_snapshot(&h[k], &s, &stuck);
			CHECK(err == 0, "handle cut: %d %s", err, tally_shm_error(r));
			if (!err)
				check_cut("handle", k, &s, stuck, &prev[0][k]);
			tally_hist_snap_destroy(&s);
		}
		err = tally_shm_snapshot(r, &snap); /* a read-write attach's */
		CHECK(err == 0, "rw snapshot: %d %s", err, tally_shm_error(r));
		for (i = 0; !err && i < snap.n; i++)
			for (k = 0; k < H; k++)
				if (!strcmp(snap.v[i].name, names[k]))
					check_cut("rw", k, snap.v[i].hist, snap.v[i].stuck,
						  &prev[1][k]);
		err = tally_shm_snapshot(ro, &snap); /* a read-only one's: or -EBUSY */
		CHECK(err == 0 || err == -EBUSY, "ro snapshot: %d %s", err, tally_shm_error(ro));
		ro_busy += err == -EBUSY;
		ro_cuts += !err;
		for (i = 0; !err && i < snap.n; i++)
			for (k = 0; k < H; k++)
				if (!strcmp(snap.v[i].name, names[k]))
					check_cut("ro", k, snap.v[i].hist, snap.v[i].stuck,
						  &prev[2][k]);
		usleep(20000);
	} while (alive);
	for (i = 0; i < P; i++) {
		int st = 0;
		waitpid(pids[i], &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker %u: status %d", i, st);
	}
	check_totals("phase 1", h, inc, 1);

	/* Phase 2: kill a started worker every 20-60 ms, start another. */
	for (i = 0; i < P; i++)
		pids[i] = spawn(argv[0], inc++, secs);
	{
		double until = harness_now() + secs / 2;
		struct harness_rng rng = {7};
		while (harness_now() < until && inc < MAX_INC) {
			unsigned v = (unsigned)harness_range(&rng, 0, P - 1);
			usleep((useconds_t)harness_range(&rng, 20000, 60000));
			kill(pids[v], SIGKILL);
			waitpid(pids[v], NULL, 0);
			kills++;
			pids[v] = spawn(argv[0], inc++, secs);
		}
		for (i = 0; i < P; i++) {
			int st = 0;
			waitpid(pids[i], &st, 0);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker %u: status %d", i, st);
		}
	}
	check_totals("phase 2", h, inc, 0);
	printf("stress_shm_hist: %u workers, %u killed, %d started without rseq%s; %lu cuts "
	       "checked (%lu with records stuck), read-only: %lu cuts, %lu busy\n",
	       inc, kills, execed, exec_failed ? " (exec failed: they kept rseq)" : "", cuts,
	       stuck_cuts, ro_cuts, ro_busy);
	tally_shm_snap_free(&snap);
	for (i = 0; i < 3; i++)
		for (k = 0; k < H; k++)
			tally_hist_snap_destroy(&prev[i][k]);
	tally_shm_close(ro);
	tally_shm_close(r);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "stress_shm_hist: could not remove %s\n", dir);
	return harness_exit("stress_shm_hist");
}
