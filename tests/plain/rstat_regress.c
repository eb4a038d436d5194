/*
 * Regression checks for rstat.h calls that hung or crashed:
 *   - two (and three) threads calling tally_tree_stop_flusher() on the
 *     same tree at once: each must return, the flusher must be stopped
 *     once, and the tree must take a new flusher afterwards (both callers
 *     used to see it running, drop the lock and pthread_join() the same
 *     thread: a hang or a crash);
 *   - tally_tree_read_lock(NULL) / tally_tree_read_unlock(NULL): no-ops
 *     (they dereferenced NULL).
 * Each check runs in a child process of its own, so one hang or crash
 * does not hide the others; a watchdog (alarm()) turns a hang into a
 * failure that names the call, and a crash prints which call crashed.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <tally/rstat.h>

#define ROUNDS 300
#define MAX_STOPPERS 3

static const char *volatile phase = "start";

static void say(const char *a, const char *b)
{
	/* async-signal-safe output */
	ssize_t r = write(2, a, strlen(a));
	r = write(2, b, strlen(b));
	r = write(2, "\n", 1);
	(void)r;
}

static void on_alarm(int sig)
{
	(void)sig;
	say("rstat_regress: FAILED: watchdog: hung in ", phase);
	_exit(1);
}

static void on_crash(int sig)
{
	(void)sig;
	say("rstat_regress: FAILED: crashed (SIGSEGV or SIGBUS) in ", phase);
	_exit(1);
}

static struct tally_tree *tree;
static pthread_barrier_t gate;

static void *stopper(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&gate);
	tally_tree_stop_flusher(tree);
	return NULL;
}

/* nr threads stop the flusher at once, ROUNDS times. */
static void concurrent_stops(int nr)
{
	pthread_t th[MAX_STOPPERS];
	int round, k, r;
	for (round = 0; round < ROUNDS; round++) {
		/* A long period: the flusher sleeps, each stop wakes it. */
		r = tally_tree_start_flusher(tree, 1000000000ull);
		CHECK(r == 0, "round %d: start_flusher returned %d (flusher not stopped?)", round, r);
		if (r)
			return;
		pthread_barrier_init(&gate, NULL, (unsigned)nr);
		for (k = 0; k < nr; k++)
			pthread_create(&th[k], NULL, stopper, NULL);
		for (k = 0; k < nr; k++)
			pthread_join(th[k], NULL);
		pthread_barrier_destroy(&gate);
		/* Stopped: the next round's start must not find it running. */
	}
	tally_tree_stop_flusher(tree); /* a stopped flusher: a no-op */
}

static void null_read_lock(void)
{
	phase = "tally_tree_read_lock(NULL)";
	tally_tree_read_lock(NULL);
	phase = "tally_tree_read_unlock(NULL)";
	tally_tree_read_unlock(NULL);
}

static void stop_flusher_races(void)
{
	phase = "tally_tree_create";
	tree = tally_tree_create(1);
	CHECK(tree != NULL, "tree");
	if (!tree)
		return;
	phase = "two concurrent tally_tree_stop_flusher() calls";
	concurrent_stops(2);
	phase = "three concurrent tally_tree_stop_flusher() calls";
	concurrent_stops(3);
	phase = "the flusher after concurrent stops";
	CHECK(tally_tree_start_flusher(tree, 1000000) == 0, "start after the stops");
	CHECK(tally_tree_start_flusher(tree, 1000000) == -EBUSY, "second start");
	tally_tree_stop_flusher(tree);
	tally_tree_stop_flusher(tree);
	phase = "tally_tree_destroy";
	tally_tree_destroy(tree);
}

/* Run fn in a child with a watchdog and crash handlers; 0 if it passed. */
static int run_check(const char *name, void (*fn)(void))
{
	pid_t pid;
	int st;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sigemptyset(&sa.sa_mask);
		sa.sa_handler = on_alarm;
		sigaction(SIGALRM, &sa, NULL);
		sa.sa_handler = on_crash;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		alarm(30); /* the checks take well under a second, even under TSan */
		fn();
		alarm(0);
		fflush(NULL);
		_exit(harness_failures ? 1 : 0);
	}
	while (waitpid(pid, &st, 0) < 0)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		printf("rstat_regress: %s: passed\n", name);
		return 0;
	}
	if (WIFEXITED(st))
		fprintf(stderr, "rstat_regress: %s: FAILED (exit %d)\n", name, WEXITSTATUS(st));
	else
		fprintf(stderr, "rstat_regress: %s: FAILED (signal %d)\n", name,
			WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return 1;
}

int main(void)
{
	int failed = 0;
	failed += run_check("read lock/unlock of a NULL tree", null_read_lock);
	failed += run_check("concurrent tally_tree_stop_flusher()", stop_flusher_races);
	CHECK(failed == 0, "%d of 2 checks failed", failed);
	return harness_exit("rstat_regress");
}
