/*
 * tests/harness.h - helpers shared by tally's tests and stress programs.
 *
 * Include it first, after defining _GNU_SOURCE (CPU affinity calls need it):
 *
 *   #define _GNU_SOURCE
 *   #include "harness.h"
 *
 * - harness_pin_here(): pin the calling thread to the CPU it is running on,
 *   so every update lands in one per-CPU slot and fold points are exact.
 * - harness_allowed_cpus(): the CPUs the thread may run on (before pinning).
 * - CHECK / CHECK_EQ: for plain programs (no Criterion), from any thread:
 *   print the failed condition with both values and count the failure;
 *   harness_exit() ends the program non-zero if any check failed.
 * - harness_rng: a small per-thread PRNG (splitmix64) for stress programs.
 * - harness_seconds(): TALLY_STRESS_SECONDS (default 2).
 */
#ifndef TALLY_TESTS_HARNESS_H
#define TALLY_TESTS_HARNESS_H

#ifndef _GNU_SOURCE
#  error "define _GNU_SOURCE before including harness.h"
#endif

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Pin the calling thread to the CPU it runs on. Returns the CPU or -1. */
static inline int harness_pin_here(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();
	if (cpu < 0)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -1;
	/* The thread may have moved between the two calls: settle on the CPU
	 * it is pinned to now. */
	return sched_getcpu() == cpu ? cpu : -1;
}

/* Pin the calling thread to cpu. 0 or -1. */
static inline int harness_pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -1;
	return sched_getcpu() == cpu ? 0 : -1;
}

/* Store up to max allowed CPUs of the calling thread in cpus; the count. */
static inline int harness_allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int i, n = 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (i = 0; i < CPU_SETSIZE && n < max; i++)
		if (CPU_ISSET(i, &set))
			cpus[n++] = i;
	return n;
}

/* ---- checks for plain programs ------------------------------------------ */
static int harness_failures __attribute__((unused));

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, \
				__LINE__, #cond);                              \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			__atomic_fetch_add(&harness_failures, 1, __ATOMIC_RELAXED); \
		}                                                              \
	} while (0)

/* Compare as unsigned long long (words of either width, any sign: both
 * sides are converted the same way, so -1 == (tally_sword)-1 holds). */
#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		unsigned long long a_ = (unsigned long long)(a);               \
		unsigned long long b_ = (unsigned long long)(b);               \
		if (a_ != b_) {                                                \
			fprintf(stderr,                                        \
				"%s:%d: CHECK_EQ(%s, %s) failed: %llu (%lld) != " \
				"%llu (%lld)\n",                               \
				__FILE__, __LINE__, #a, #b, a_, (long long)a_, \
				b_, (long long)b_);                            \
			__atomic_fetch_add(&harness_failures, 1, __ATOMIC_RELAXED); \
		}                                                              \
	} while (0)

static inline int harness_exit(const char *name)
{
	int n = __atomic_load_n(&harness_failures, __ATOMIC_RELAXED);
	if (n) {
		fprintf(stderr, "%s: %d check(s) FAILED\n", name, n);
		return 1;
	}
	printf("%s: all checks passed\n", name);
	return 0;
}

/* ---- stress helpers ------------------------------------------------------- */
struct harness_rng {
	uint64_t s;
};

static inline uint64_t harness_next(struct harness_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi] (hi - lo < 2^32). */
static inline long long harness_range(struct harness_rng *r, long long lo, long long hi)
{
	return lo + (long long)(harness_next(r) % (uint64_t)(hi - lo + 1));
}

static inline double harness_seconds(void)
{
	const char *s = getenv("TALLY_STRESS_SECONDS");
	double v = s ? atof(s) : 0;
	return v > 0 ? v : 2.0;
}

static inline double harness_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* TALLY_TESTS_HARNESS_H */
