/*
 * stress_shm - tally/shm.h: 8 processes x 2 threads adding to shared
 * counters and a gauge in one region, then the same while workers are
 * killed (SIGKILL) and restarted.
 *
 * Half of the workers re-execute this program with glibc's rseq
 * registration off (GLIBC_TUNABLES=glibc.pthread.rseq=0): in a region
 * whose discipline is rseq they add atomically to the shared slot while
 * the others add plainly in restartable sections on the CPU slots, the
 * mix the discipline must keep exact. (Where exec fails, under qemu-user
 * without binfmt_misc, the forked worker runs as it is and says so.)
 *
 * Each thread acknowledges every add in a file of its own slots after the
 * add returned (pending = d; add; acked += d; pending = 0). Phase 1 (every
 * worker exits): each counter's sum equals what was acknowledged, to the
 * unit. Phase 2 (kills): sum - acknowledged is between 0 and the adds
 * pending in killed workers: no add that returned is lost, none counted
 * twice.
 *
 *   stress_shm [--worker PATH INCARNATION SECONDS]
 */
#define _GNU_SOURCE
#include "harness.h"

#include <tally/shm.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

enum { P = 8, T = 2, K = 5, MAX_INC = 2048 };

/* One incarnation-thread's acknowledgements (its own line). */
struct ack {
	tally_uword acked[K];
	tally_uword pending;
	unsigned pending_k;
	unsigned started;
	char pad[64 - (K + 1) * sizeof(tally_uword) - 2 * sizeof(unsigned) > 0
			 ? 64 - (K + 1) * sizeof(tally_uword) - 2 * sizeof(unsigned)
			 : 8];
};

static struct ack *acks; /* [MAX_INC * T] */
static char region[256], ackpath[300];
static const char *const names[K] = {"req", "bytes", "errors", "inflight", "misc"};

struct worker_arg {
	struct tally_shm *r;
	unsigned inc, t;
	double until;
};

static void *worker_thread(void *p)
{
	struct worker_arg *a = (struct worker_arg *)p;
	struct ack *me = &acks[a->inc * T + a->t];
	struct tally_shm_counter c[K];
	struct harness_rng rng = {a->inc * 1000003u + a->t};
	unsigned k, n = 0;
	for (k = 0; k < K; k++) {
		int err = k == 3 ? tally_shm_gauge(a->r, names[k], &c[k])
				 : tally_shm_counter(a->r, names[k], &c[k]);
		if (err) {
			fprintf(stderr, "stress_shm: %s: %s\n", names[k], tally_shm_error(a->r));
			exit(3);
		}
	}
	__atomic_store_n(&me->started, 1u, __ATOMIC_RELEASE);
	while ((n++ & 255) || harness_now() < a->until) {
		uint64_t x = harness_next(&rng);
		tally_sword d;
		k = (unsigned)(x % K);
		d = (tally_sword)(1 + (x >> 8) % 7);
		if (k == 3 && (x >> 16) & 1)
			d = -d; /* the gauge goes both ways */
		__atomic_store_n(&me->pending_k, k, __ATOMIC_RELAXED);
		__atomic_store_n(&me->pending, (tally_uword)d, __ATOMIC_RELEASE);
		tally_shm_add(&c[k], d);
		__atomic_store_n(&me->acked[k], me->acked[k] + (tally_uword)d, __ATOMIC_RELEASE);
		__atomic_store_n(&me->pending, (tally_uword)0, __ATOMIC_RELEASE);
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
		fprintf(stderr, "stress_shm: worker %u: %s\n", inc, why);
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

static void check_totals(const char *phase, struct tally_shm *r, unsigned incs)
{
	struct tally_shm_snap s = {0};
	unsigned k, i;
	CHECK_EQ(tally_shm_snapshot(r, &s), 0);
	for (k = 0; k < K; k++) {
		tally_uword acked = 0, pending = 0, total = 0;
		size_t j;
		for (i = 0; i < incs * T; i++) {
			acked += __atomic_load_n(&acks[i].acked[k], __ATOMIC_ACQUIRE);
			if (__atomic_load_n(&acks[i].pending_k, __ATOMIC_RELAXED) == k)
				pending += __atomic_load_n(&acks[i].pending, __ATOMIC_ACQUIRE);
		}
		for (j = 0; j < s.n; j++)
			if (!strcmp(s.v[j].name, names[k]))
				total = s.v[j].raw;
		if (k == 3) { /* the gauge: pending may be negative */
			tally_sword diff = (tally_sword)(total - acked);
			tally_sword pend = 0;
			for (i = 0; i < incs * T; i++)
				if (__atomic_load_n(&acks[i].pending_k, __ATOMIC_RELAXED) == k) {
					tally_sword pv = (tally_sword)acks[i].pending;
					pend += pv < 0 ? -pv : pv;
				}
			CHECK(diff >= -pend && diff <= pend, "%s: gauge %lld, acked %lld, pending %lld",
			      phase, (long long)total, (long long)acked, (long long)pend);
		} else {
			CHECK(total - acked <= pending,
			      "%s: %s: total %llu, acknowledged %llu, pending at most %llu", phase,
			      names[k], (unsigned long long)total, (unsigned long long)acked,
			      (unsigned long long)pending);
		}
		if (!strcmp(phase, "phase 1"))
			CHECK_EQ(total, acked);
		printf("stress_shm: %s: %s = %lld (acknowledged %lld)\n", phase, names[k],
		       (long long)(tally_sword)total, (long long)(tally_sword)acked);
	}
	tally_shm_snap_free(&s);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/tally-stress-shm.XXXXXX", cmd[300];
	struct tally_shm *r = NULL;
	char why[TALLY_SHM_ERROR_MAX];
	double secs = harness_seconds();
	pid_t pids[P];
	unsigned i, inc = 0, kills = 0;
	int fd;
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
	if (map_acks() || tally_shm_open(&r, region, NULL, why, sizeof(why))) {
		fprintf(stderr, "stress_shm: %s\n", why);
		return 1;
	}

	/* Phase 1: every worker runs to its end. */
	for (i = 0; i < P; i++)
		pids[i] = spawn(argv[0], inc++, secs / 2);
	for (i = 0; i < P; i++) {
		int st = 0;
		waitpid(pids[i], &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker %u: status %d", i, st);
	}
	check_totals("phase 1", r, inc);

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
	check_totals("phase 2", r, inc);
	printf("stress_shm: %u workers, %u killed, %d started without rseq%s\n", inc, kills, execed,
	       exec_failed ? " (exec failed: they kept rseq)" : "");
	tally_shm_close(r);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "stress_shm: could not remove %s\n", dir);
	return harness_exit("stress_shm");
}
