/*
 * bench/group_reads.c - what a tree's flushes and group destroys cost
 * against the CPU slots written (issue 30, the groups' side of
 * bench/arena_reads.c): one pinned thread makes N groups under the root,
 * updates each once, then is timed:
 *   flush     tally_group_flush_force of the root (every group dirty)
 *   destroy   tally_group_destroy of the N, then urcu_memb_barrier(): the
 *             retires, the deferred frees' late hand-overs and the frees
 * Wall time, best of R rounds, each round a fresh tree. Built once per
 * TALLY_CPU_SLOTS by bench/arena_reads.sh, beside arena_reads.c.
 *
 *   cc -std=gnu11 -O2 -DTALLY_CPU_SLOTS=256 -Iinclude bench/group_reads.c -o gr \
 *      -pthread -lurcu-memb
 *   ./gr [R]       (default 3)
 * Prints one line per N: "group_reads: slots=S n=N flush_s=... destroy_s=...".
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <tally/rstat.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	static const int sizes[] = {4000, 16000};
	int rounds = argc > 1 ? atoi(argv[1]) : 3, k, r, i;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	urcu_memb_register_thread();
	for (k = 0; k < 2; k++) {
		int n = sizes[k];
		double best_f = 1e9, best_d = 1e9;
		for (r = 0; r < rounds; r++) {
			struct tally_tree *t = tally_tree_create(4);
			struct tally_group **g = (struct tally_group **)calloc((size_t)n, sizeof(*g));
			double t0, t1, t2;
			if (!t || !g)
				return 1;
			for (i = 0; i < n; i++)
				if (!(g[i] = tally_group_create(tally_tree_root(t))))
					return 1;
			for (i = 0; i < n; i++)
				tally_group_mod(g[i], (unsigned)i & 3u, 1);
			t0 = now();
			tally_group_flush_force(tally_tree_root(t));
			t1 = now();
			for (i = 0; i < n; i++)
				tally_group_destroy(g[i]);
			urcu_memb_barrier();
			t2 = now();
			if (tally_group_read(tally_tree_root(t), 0) != n / 4) {
				fprintf(stderr, "group_reads: root reads %lld, want %d\n",
					(long long)tally_group_read(tally_tree_root(t), 0), n / 4);
				return 1;
			}
			if (t1 - t0 < best_f)
				best_f = t1 - t0;
			if (t2 - t1 < best_d)
				best_d = t2 - t1;
			tally_tree_destroy(t);
			free(g);
		}
		printf("group_reads: slots=%u n=%d flush_s=%.6f destroy_s=%.6f\n",
		       (unsigned)TALLY_CPU_SLOTS, n, best_f, best_d);
	}
	urcu_memb_unregister_thread();
	return 0;
}
