/*
 * bench/cbench.h - a C interface to Google Benchmark, so benchmark bodies
 * are C and the headers under test are compiled as C, as their users
 * compile them. Implemented once, in C++, in cbench.cc; link with
 * benchmark::benchmark_main.
 *
 *   static void body(struct cbench_state *s, void *arg)
 *   {
 *           uint64_t n;
 *           while (cbench_batch(s, &n))          // one call per batch
 *                   for (uint64_t i = 0; i < n; i++)
 *                           work(arg);
 *           cbench_items(s, (int64_t)cbench_iterations(s));
 *   }
 *   CBENCH_INIT(register_mine)
 *   {
 *           cbench_env_threads(cbench_register("mine/work", body, NULL));
 *   }
 *
 * Threads: each benchmark thread runs the body; every thread must call
 * cbench_batch() until it returns 0 (its first and last calls are the
 * start and stop barriers of all threads, even after cbench_skip()).
 * Thread i is pinned to the i-th allowed CPU (modulo their number) unless
 * TALLY_BENCH_PIN=0. cbench_env_threads() registers the thread counts of
 * TALLY_BENCH_THREADS ("1,2,4" by default; lists and ranges such as
 * "1-16", "max" = every allowed CPU) and real time, so items per second is
 * the rate of all threads together.
 *
 * Setup and teardown per run: cbench_setup(b, setup, teardown) has thread
 * 0 call setup before the other threads pass the start barrier and
 * teardown after every thread passed the stop barrier. A setup that
 * returns non-zero skips the run (the other threads run no iteration).
 * So a body may use what setup made only after its first cbench_batch()
 * call returned: before it, thread 0 may still be in setup.
 *
 * Everything here is the harness's, not tally's: no tally header is
 * included, so a user can benchmark any C code the same way.
 */
#ifndef TALLY_CBENCH_H
#define TALLY_CBENCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cbench;
struct cbench_state;

typedef void (*cbench_fn)(struct cbench_state *s, void *arg);
/* Setup: 0 to run the benchmark, non-zero to skip this run. */
typedef int (*cbench_setup_fn)(struct cbench_state *s, void *arg);

/* ---- registration (at load time, from CBENCH_INIT functions) ---------- */
struct cbench *cbench_register(const char *name, cbench_fn fn, void *arg);
struct cbench *cbench_arg(struct cbench *b, long a);              /* ->Arg(a) */
struct cbench *cbench_arg_name(struct cbench *b, const char *name); /* ->ArgName */
struct cbench *cbench_thread_range(struct cbench *b, int lo, int hi);
struct cbench *cbench_threads(struct cbench *b, int n);
struct cbench *cbench_real_time(struct cbench *b);
/* Every count of TALLY_BENCH_THREADS, and real time. */
struct cbench *cbench_env_threads(struct cbench *b);
/* ->Args({v[0], ..}) and ->ArgNames({names[0], ..}), n values each. */
struct cbench *cbench_args(struct cbench *b, int n, const long *v);
struct cbench *cbench_arg_names(struct cbench *b, int n, const char *const *names);
/* ->Iterations(n): exactly n iterations per run. */
struct cbench *cbench_fixed_iterations(struct cbench *b, uint64_t n);
/* ->UseManualTime(): the run's time is what cbench_add_time() adds up. */
struct cbench *cbench_manual_time(struct cbench *b);
struct cbench *cbench_setup(struct cbench *b, cbench_setup_fn setup, cbench_fn teardown);

/* Run fn at load time (before main), to register benchmarks. */
#define CBENCH_INIT(name)                                                      \
	static void name(void) __attribute__((constructor));                   \
	static void name(void)

/* ---- inside a benchmark ----------------------------------------------- */
/* Next batch of *n iterations to run; 0 when the run is over. */
int cbench_batch(struct cbench_state *s, uint64_t *n);
long cbench_range(const struct cbench_state *s, int i);
int cbench_thread_index(const struct cbench_state *s);
int cbench_nthreads(const struct cbench_state *s);
/* Iterations this thread ran (after the loop). */
uint64_t cbench_iterations(const struct cbench_state *s);
void cbench_items(struct cbench_state *s, int64_t n);
/* Manual time (cbench_manual_time): add ns of timed work to this run. */
void cbench_add_time(struct cbench_state *s, uint64_t ns);
#define CBENCH_RATE 1        /* divide by the run's time */
#define CBENCH_AVG_THREADS 2 /* divide by the number of threads */
void cbench_counter(struct cbench_state *s, const char *name, double v, int flags);
/* Mark the run as failed (it is reported as an error). */
void cbench_skip(struct cbench_state *s, const char *why);
static inline void cbench_check(struct cbench_state *s, int ok, const char *what)
{
	if (!ok)
		cbench_skip(s, what);
}

/* ---- helpers ------------------------------------------------------------ */
/* Pin the calling thread to the (index mod n)-th allowed CPU unless
 * TALLY_BENCH_PIN=0. Returns the CPU or -1. */
int cbench_pin(int index);
/* Number of CPUs this process may run on. */
int cbench_nr_allowed_cpus(void);
/* Monotonic clock, ns. */
uint64_t cbench_now_ns(void);

/* Background writers for "read beside writers" benchmarks: n threads,
 * writer i pinned like benchmark thread i + 1, each calling fn(arg) in a
 * loop until stopped. stop joins them and returns the number of calls. */
struct cbench_writers;
struct cbench_writers *cbench_writers_start(int n, void (*fn)(void *), void *arg);
uint64_t cbench_writers_stop(struct cbench_writers *w);

/* Keep the value of a C lvalue (word-sized) from the optimizer, and make
 * the compiler assume it changed (Google Benchmark's DoNotOptimize). */
#define CBENCH_KEEP(x) __asm__ __volatile__("" : "+r,m"(x) : : "memory")
/* Keep an rvalue's computation. */
static inline void cbench_use(uint64_t v)
{
	__asm__ __volatile__("" : : "r,m"(v) : "memory");
}
/* Every write before it happens (Google Benchmark's ClobberMemory). */
static inline void cbench_clobber(void)
{
	__asm__ __volatile__("" : : : "memory");
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_CBENCH_H */
