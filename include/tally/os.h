/**
 * @file
 * tally/os.h - the platform layer: clocks and deadlines, a condition
 * variable whose clock is chosen once and recorded in it, yielding the CPU,
 * counting CPUs and memory. Private to tally (tally__os_* names); the
 * public headers build on it.
 *
 * Why a layer. Which clocks and calls a translation unit can see depends on
 * its feature-test macros: with glibc, strict ISO C (-std=c11) hides
 * CLOCK_MONOTONIC, clock_gettime() and pthread_condattr_setclock(), which
 * -std=gnu11 and every C++ compiler show. Code that chose its clock with
 * `#if` would make two units of one program disagree about one object's
 * condition variable (a wall-clock deadline on a monotonic condition
 * variable waits for decades). Here:
 *  - the calls glibc hides are redeclared (the ABI is the same whatever the
 *    macros), so every unit sees the same clocks;
 *  - struct tally__os_cond records, at init, the clock its condition
 *    variable waits on and the function that reads that clock; every
 *    deadline for it is computed from the record, never from the calling
 *    unit's macros;
 *  - deadlines saturate instead of overflowing time_t (32 bits on some
 *    targets: 2^62 ns from now does not fit).
 *
 * Everything here is safe from any thread; nothing keeps state except the
 * condition variable and, for CPU counts, nothing at all (callers cache).
 * This header includes only config.h and system headers, so arch.h and the
 * rest may build on it.
 */
#ifndef TALLY_OS_H
#define TALLY_OS_H

#include <tally/config.h>

#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <time.h>
#if defined(__unix__) || defined(__APPLE__)
#  include <fcntl.h>
#  include <sched.h>
#  include <unistd.h>
#endif
#if defined(__linux__)
#  include <sys/syscall.h>
/* Strict ISO C hides syscall(); a compatible redeclaration (C only: C++
 * compilers define _GNU_SOURCE). */
#  if !defined(__cplusplus) && (!defined(__GLIBC__) || !defined(__USE_MISC))
extern long syscall(long number, ...);
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- clocks ---------------------------------------------------------------
 * TALLY__OS_CLOCK_MONOTONIC: the monotonic clock's id where this unit can
 * read it. glibc hides clock_gettime() and CLOCK_MONOTONIC from strict ISO
 * C; redeclare them (CLOCK_MONOTONIC is 1 in every glibc ABI). */
#if defined(__GLIBC__) && !defined(__USE_POSIX199309)
extern int clock_gettime(__clockid_t clock_id, struct timespec *tp);
#  define TALLY__OS_CLOCK_MONOTONIC 1
#elif defined(CLOCK_MONOTONIC)
#  define TALLY__OS_CLOCK_MONOTONIC CLOCK_MONOTONIC
#endif

/* A condition variable can wait on the monotonic clock where the platform
 * has pthread_condattr_setclock() (not macOS). glibc hides it from strict
 * ISO C: redeclare it. */
#if defined(TALLY__OS_CLOCK_MONOTONIC) && !defined(__APPLE__)
#  define TALLY__OS_COND_MONOTONIC 1
#  if defined(__GLIBC__) && !defined(__USE_XOPEN2K)
extern int pthread_condattr_setclock(pthread_condattr_t *attr, __clockid_t clock_id);
#  endif
#else
#  define TALLY__OS_COND_MONOTONIC 0
#endif

/* Now on the wall clock (C11's TIME_UTC): may jump. */
static inline void tally__os_now_utc(struct timespec *ts)
{
	if (!timespec_get(ts, TIME_UTC)) {
		ts->tv_sec = 0;
		ts->tv_nsec = 0;
	}
}

/* Now on the monotonic clock, or on the wall clock where the platform
 * has no monotonic one. */
static inline void tally__os_now_mono(struct timespec *ts)
{
#if defined(TALLY__OS_CLOCK_MONOTONIC)
	if (clock_gettime(TALLY__OS_CLOCK_MONOTONIC, ts) == 0)
		return;
#endif
	tally__os_now_utc(ts);
}

/* tally__os_mono_ns - the monotonic clock in nanoseconds (wall clock where
 * there is none). Wraps after 584 years of uptime. */
static inline uint64_t tally__os_mono_ns(void)
{
	struct timespec ts;
	tally__os_now_mono(&ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The largest time_t (signed: 2^31 - 1 or 2^63 - 1), without overflow. */
#define TALLY__OS_TIME_T_MAX                                                   \
	((time_t)((((time_t)1 << (sizeof(time_t) * 8u - 2u)) - 1) * 2 + 1))

/*
 * tally__os_timespec_add - *ts += ns, normalised (0 <= tv_nsec < 10^9),
 * saturating at the largest time_t instead of overflowing it: a deadline
 * that far away reads as "never" on every clock. ts must be normalised.
 */
static inline void tally__os_timespec_add(struct timespec *ts, uint64_t ns)
{
	uint64_t nsec = (uint64_t)ts->tv_nsec + ns % 1000000000ull;
	uint64_t secs = ns / 1000000000ull + nsec / 1000000000ull;
	/* Seconds left before time_t overflows (conservative for a negative
	 * tv_sec, which no clock tally reads returns). */
	uint64_t room = ts->tv_sec < 0 ? (uint64_t)TALLY__OS_TIME_T_MAX
				       : (uint64_t)(TALLY__OS_TIME_T_MAX - ts->tv_sec);
	if (secs > room) {
		ts->tv_sec = TALLY__OS_TIME_T_MAX;
		ts->tv_nsec = 999999999L;
		return;
	}
	ts->tv_sec = (time_t)(ts->tv_sec + (time_t)secs);
	ts->tv_nsec = (long)(nsec % 1000000000ull);
}

/* ---- a condition variable on a recorded clock ---------------------------- */
struct tally__os_cond {
	pthread_cond_t cond;
	/* Reads the clock cond waits on: chosen by tally__os_cond_init() and
	 * used by every unit that computes a deadline for cond (a unit that
	 * cannot see that clock itself still reads it right). It points into
	 * the unit that ran init: an object must not outlive the shared
	 * library that initialised it. */
	void (*now)(struct timespec *ts);
	int monotonic; /* cond waits on the monotonic clock */
};

/*
 * tally__os_cond_init - a condition variable on the monotonic clock where
 * the platform allows it (else the wall clock); records the choice. 0 or
 * the negative error of pthread_cond_init (then c holds no condition
 * variable and must not be destroyed).
 */
static inline int tally__os_cond_init(struct tally__os_cond *c)
{
	pthread_condattr_t a;
	int err = pthread_condattr_init(&a);
	if (err)
		return -err;
	c->monotonic = 0;
	c->now = tally__os_now_utc;
#if TALLY__OS_COND_MONOTONIC
	if (pthread_condattr_setclock(&a, TALLY__OS_CLOCK_MONOTONIC) == 0) {
		c->monotonic = 1;
		c->now = tally__os_now_mono;
	}
#endif
	err = pthread_cond_init(&c->cond, &a);
	pthread_condattr_destroy(&a);
	return -err;
}

static inline void tally__os_cond_destroy(struct tally__os_cond *c)
{
	pthread_cond_destroy(&c->cond);
}

/* tally__os_cond_deadline - *ts = now + ns on c's clock (saturating). */
static inline void tally__os_cond_deadline(const struct tally__os_cond *c, struct timespec *ts,
					   uint64_t ns)
{
	c->now(ts);
	tally__os_timespec_add(ts, ns);
}

/* tally__os_cond_timedwait - pthread_cond_timedwait on c until *deadline
 * (from tally__os_cond_deadline): 0 when woken (or spuriously), ETIMEDOUT,
 * or another pthread error. m held by the caller. */
static inline int tally__os_cond_timedwait(struct tally__os_cond *c, pthread_mutex_t *m,
					   const struct timespec *deadline)
{
	return pthread_cond_timedwait(&c->cond, m, deadline);
}

static inline void tally__os_cond_broadcast(struct tally__os_cond *c)
{
	pthread_cond_broadcast(&c->cond);
}

static inline void tally__os_cond_signal(struct tally__os_cond *c)
{
	pthread_cond_signal(&c->cond);
}

/* ---- the scheduler --------------------------------------------------------- */

/* tally__os_yield - give the CPU to another runnable thread (a spinning
 * waiter whose lock holder may be preempted). No-op where there is none. */
static inline void tally__os_yield(void)
{
#if defined(__unix__) || defined(__APPLE__)
	sched_yield();
#endif
}

/* ---- CPUs and memory ------------------------------------------------------- */

/* The highest CPU number in a list like "0-3,8-11"; -1 if malformed. */
static inline long tally__os_cpu_list_max(const char *s)
{
	long max = -1, v = -1;
	for (;; s++) {
		if (*s >= '0' && *s <= '9') {
			v = (v < 0 ? 0 : v * 10) + (*s - '0');
			if (v > 1L << 20)
				return -1;
		} else {
			if (v > max)
				max = v;
			v = -1;
			if (*s == '\0' || *s == '\n')
				break;
			if (*s != ',' && *s != '-')
				return -1;
		}
	}
	return max;
}

/*
 * tally__os_possible_cpus - how many CPU ids the system may ever use
 * (Linux: /sys/devices/system/cpu/possible, highest id + 1, so a CPU that
 * comes online later is counted; without sysfs, the size of the kernel's
 * CPU mask), at least sysconf(_SC_NPROCESSORS_CONF): on Linux, above every
 * CPU id the kernel can report. 0 when the OS cannot tell. Reads a file: callers cache the result.
 */
static inline unsigned tally__os_possible_cpus(void)
{
	long max = -1;
#if defined(__linux__)
	{
		char buf[256];
		/* open/read without stdio: no locale, no allocation. */
		int fd = open("/sys/devices/system/cpu/possible", O_RDONLY);
		if (fd >= 0) {
			ssize_t r = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (r > 0) {
				buf[r] = '\0';
				max = tally__os_cpu_list_max(buf);
			}
		}
	}
#endif
#if defined(__linux__) && defined(SYS_sched_getaffinity)
	if (max < 0) {
		/* No sysfs: the raw system call copies the kernel's whole CPU
		 * mask, whose size in bits covers every id the kernel can ever
		 * report (nr_cpu_ids rounded up to a long), and returns that
		 * size. The rseq add relies on every id being below the count
		 * (tally/rseq.h: TALLY__RSEQ_CPU_CHECK). */
		unsigned long mask[8192 / (8 * sizeof(unsigned long))];
		long r = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
		if (r > 0)
			max = 8 * r - 1;
	}
#endif
#if defined(_SC_NPROCESSORS_CONF)
	{
		long c = sysconf(_SC_NPROCESSORS_CONF);
		if (c > max + 1)
			max = c - 1;
	}
#endif
	return max >= 0 ? (unsigned)max + 1u : 0u;
}

/* tally__os_online_cpus - CPUs online now (num_online_cpus()); 0 when the
 * OS cannot tell. */
static inline unsigned tally__os_online_cpus(void)
{
#if defined(_SC_NPROCESSORS_ONLN)
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n > 0)
		return (unsigned)n;
#endif
	return 0;
}

/* tally__os_memory - physical memory in units of unit_bytes (> 0),
 * rounded down and saturating; 0 when the OS cannot tell. */
static inline unsigned long tally__os_memory(unsigned long unit_bytes)
{
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	if (pages > 0 && psz > 0 && unit_bytes) {
		unsigned long p = (unsigned long)pages, z = (unsigned long)psz;
		if (z >= unit_bytes) {
			unsigned long k = z / unit_bytes;
			return p > (unsigned long)-1 / k ? (unsigned long)-1 : p * k;
		}
		return p / (unit_bytes / z);
	}
#else
	(void)unit_bytes;
#endif
	return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_OS_H */
