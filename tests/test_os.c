/*
 * Unit tests for tally/os.h, the platform layer: saturating deadlines (a
 * 32-bit time_t cannot hold 2^62 ns from now), the condition variable that
 * records its clock, the monotonic clock, yield, and CPU and memory counts.
 * The cross-unit clock check (init in a -std=gnu11 unit, wait in a -std=c11
 * one) is the plain program tests/plain/inflight_clock/.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <tally/os.h>

#define NS 1000000000ull

static struct timespec ts_of(time_t s, long ns)
{
	struct timespec t;
	t.tv_sec = s;
	t.tv_nsec = ns;
	return t;
}

Test(os, time_t_max)
{
	/* The largest value: one more wraps to the smallest (checked in
	 * unsigned arithmetic of the same width). */
	if (sizeof(time_t) == 8)
		cr_assert_eq((int64_t)TALLY__OS_TIME_T_MAX, INT64_MAX);
	else
		cr_assert_eq((int64_t)TALLY__OS_TIME_T_MAX, (int64_t)INT32_MAX);
}

Test(os, timespec_add_normalises)
{
	struct timespec t = ts_of(10, 999999999L);
	tally__os_timespec_add(&t, 1);
	cr_assert(t.tv_sec == 11 && t.tv_nsec == 0);
	t = ts_of(10, 500000000L);
	tally__os_timespec_add(&t, 0);
	cr_assert(t.tv_sec == 10 && t.tv_nsec == 500000000L);
	tally__os_timespec_add(&t, 2 * NS + 600000000ull);
	cr_assert(t.tv_sec == 13 && t.tv_nsec == 100000000L);
	t = ts_of(0, 0);
	tally__os_timespec_add(&t, 20000000ull); /* 20 ms */
	cr_assert(t.tv_sec == 0 && t.tv_nsec == 20000000L);
}

Test(os, timespec_add_saturates)
{
	const time_t max = TALLY__OS_TIME_T_MAX;
	/* 2^62 ns (146 years) from a 2026 clock: past 2038 on a 32-bit
	 * time_t, fine on a 64-bit one. */
	struct timespec t = ts_of((time_t)1795000000, 5);
	tally__os_timespec_add(&t, (uint64_t)1 << 62);
	if (sizeof(time_t) == 4) {
		cr_assert(t.tv_sec == max && t.tv_nsec == 999999999L);
	} else {
		cr_assert_eq((int64_t)t.tv_sec, 1795000000ll + (int64_t)(((uint64_t)1 << 62) / NS));
		cr_assert_eq(t.tv_nsec, 5 + (long)(((uint64_t)1 << 62) % NS));
	}
	/* The largest wait from the last second: saturates, never wraps. */
	t = ts_of(max - 1, 999999999L);
	tally__os_timespec_add(&t, UINT64_MAX);
	cr_assert(t.tv_sec == max && t.tv_nsec == 999999999L);
	/* Exactly reaching max is not an overflow; one nanosecond more is. */
	t = ts_of(max - 2, 0);
	tally__os_timespec_add(&t, 2 * NS + 7);
	cr_assert(t.tv_sec == max && t.tv_nsec == 7);
	t = ts_of(max, 999999999L);
	tally__os_timespec_add(&t, 1);
	cr_assert(t.tv_sec == max && t.tv_nsec == 999999999L);
	/* nsec carry into the last second. */
	t = ts_of(max - 1, 600000000L);
	tally__os_timespec_add(&t, 500000000ull);
	cr_assert(t.tv_sec == max && t.tv_nsec == 100000000L);
}

Test(os, mono_ns_never_goes_back)
{
	uint64_t a = tally__os_mono_ns(), b;
	for (int i = 0; i < 1000; i++) {
		b = tally__os_mono_ns();
		cr_assert_geq(b, a);
		a = b;
	}
	cr_assert_gt(a, 0);
}

Test(os, cond_records_the_monotonic_clock)
{
	struct tally__os_cond c;
	struct timespec now, dl;
	cr_assert_eq(tally__os_cond_init(&c), 0);
	/* Linux with glibc can always wait on CLOCK_MONOTONIC. */
	cr_assert_eq(c.monotonic, 1);
	clock_gettime(CLOCK_MONOTONIC, &now);
	tally__os_cond_deadline(&c, &dl, 5 * NS);
	/* The deadline is on the monotonic clock: 5 s after now, give or
	 * take the calls between (generously: a hang guard, not timing). */
	double d = (double)(dl.tv_sec - now.tv_sec) + (double)(dl.tv_nsec - now.tv_nsec) / 1e9;
	cr_assert(d >= 5.0 && d < 65.0, "deadline %f s ahead on CLOCK_MONOTONIC", d);
	tally__os_cond_destroy(&c);
}

Test(os, cond_timedwait_times_out_and_wakes)
{
	struct tally__os_cond c;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct timespec dl;
	int rc = 0;
	cr_assert_eq(tally__os_cond_init(&c), 0);
	pthread_mutex_lock(&m);
	double t0 = harness_now();
	tally__os_cond_deadline(&c, &dl, 10000000ull); /* 10 ms */
	while (rc != ETIMEDOUT) {
		rc = tally__os_cond_timedwait(&c, &m, &dl);
		cr_assert(rc == 0 || rc == ETIMEDOUT, "rc %d", rc);
		cr_assert_lt(harness_now() - t0, 30.0, "a 10 ms wait never timed out");
	}
	cr_assert_geq(harness_now() - t0, 0.0099);
	/* A saturated deadline is valid (no EINVAL): a broadcast from
	 * nobody never comes, so only check the call is accepted by
	 * signalling first and waiting on an already-past deadline. */
	tally__os_cond_broadcast(&c);
	tally__os_cond_signal(&c);
	dl.tv_sec = 0;
	dl.tv_nsec = 0;
	cr_assert_eq(tally__os_cond_timedwait(&c, &m, &dl), ETIMEDOUT);
	pthread_mutex_unlock(&m);
	tally__os_cond_destroy(&c);
}

Test(os, cpu_list_parse)
{
	cr_assert_eq(tally__os_cpu_list_max("0"), 0);
	cr_assert_eq(tally__os_cpu_list_max("0-3\n"), 3);
	cr_assert_eq(tally__os_cpu_list_max("0-3,8-11"), 11);
	cr_assert_eq(tally__os_cpu_list_max("5,2"), 5);
	cr_assert_eq(tally__os_cpu_list_max("0-3;"), -1);
	cr_assert_eq(tally__os_cpu_list_max("99999999"), -1);
	cr_assert_eq(tally__os_cpu_list_max(""), -1);
}

Test(os, counts)
{
	unsigned possible = tally__os_possible_cpus(), online = tally__os_online_cpus();
	cr_assert_geq(online, 1u);
	cr_assert_geq(possible, online);
	cr_assert_geq(possible, (unsigned)sysconf(_SC_NPROCESSORS_CONF));
	unsigned long mib = tally__os_memory(1ul << 20), pages = tally__os_memory(4096);
	cr_assert_gt(mib, 0);
	cr_assert_geq(pages, mib * 256 - 256);
	cr_assert_leq(pages, mib * 256 + 256);
	cr_assert_eq(tally__os_memory(0), 0);
	tally__os_yield();
}
