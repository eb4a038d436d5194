/*
 * bench/cbench.cc - the C interface of cbench.h over Google Benchmark.
 * Thread counts and pinning are harness.h's (one implementation for the
 * C and the C++ benchmarks).
 */
#include "cbench.h"
#include "harness.h"

#include <atomic>
#include <string>
#include <vector>

struct cbench {
	benchmark::internal::Benchmark *bm;
	cbench_fn fn;
	void *arg;
	cbench_setup_fn setup;
	cbench_fn teardown;
	/* Set by thread 0 before the start barrier of each run. */
	std::atomic<int> setup_ok{1};
};

struct cbench_state {
	benchmark::State *st;
	struct cbench *b;
	int started;
};

namespace {

void run(benchmark::State &st, struct cbench *b)
{
	struct cbench_state s = {&st, b, 0};
	tb::pin(st.thread_index());
	if (st.thread_index() == 0) {
		int ok = !b->setup || b->setup(&s, b->arg) == 0;
		if (!ok && !st.error_occurred())
			st.SkipWithError("setup failed");
		b->setup_ok.store(ok, std::memory_order_relaxed);
	}
	b->fn(&s, b->arg);
	if (!s.started) {
		/* The body never reached the start barrier: pass both barriers so
		 * the other threads are not left waiting. */
		uint64_t n;
		while (cbench_batch(&s, &n))
			;
	}
	if (st.thread_index() == 0 && b->teardown && b->setup_ok.load(std::memory_order_relaxed))
		b->teardown(&s, b->arg);
}

} // namespace

extern "C" {

struct cbench *cbench_register(const char *name, cbench_fn fn, void *arg)
{
	struct cbench *b = new struct cbench;
	b->fn = fn;
	b->arg = arg;
	b->setup = nullptr;
	b->teardown = nullptr;
	b->bm = benchmark::RegisterBenchmark(name, [b](benchmark::State &st) { run(st, b); });
	return b;
}

struct cbench *cbench_arg(struct cbench *b, long a)
{
	b->bm->Arg(a);
	return b;
}

struct cbench *cbench_arg_name(struct cbench *b, const char *name)
{
	b->bm->ArgName(name);
	return b;
}

struct cbench *cbench_thread_range(struct cbench *b, int lo, int hi)
{
	for (int t = lo; t <= hi; t++)
		b->bm->Threads(t);
	return b;
}

struct cbench *cbench_threads(struct cbench *b, int n)
{
	b->bm->Threads(n);
	return b;
}

struct cbench *cbench_real_time(struct cbench *b)
{
	b->bm->UseRealTime();
	return b;
}

struct cbench *cbench_env_threads(struct cbench *b)
{
	tb::threads(b->bm);
	return b;
}

struct cbench *cbench_args(struct cbench *b, int n, const long *v)
{
	std::vector<int64_t> a(v, v + n);
	b->bm->Args(a);
	return b;
}

struct cbench *cbench_arg_names(struct cbench *b, int n, const char *const *names)
{
	std::vector<std::string> a(names, names + n);
	b->bm->ArgNames(a);
	return b;
}

struct cbench *cbench_fixed_iterations(struct cbench *b, uint64_t n)
{
	b->bm->Iterations((benchmark::IterationCount)n);
	return b;
}

struct cbench *cbench_manual_time(struct cbench *b)
{
	b->bm->UseManualTime();
	return b;
}

struct cbench *cbench_setup(struct cbench *b, cbench_setup_fn setup, cbench_fn teardown)
{
	b->setup = setup;
	b->teardown = teardown;
	return b;
}

/*
 * The whole run is one batch of max_iterations: the first call starts the
 * timer (and waits at the start barrier), the second stops it (stop
 * barrier). A thread that finds thread 0's setup failed after the start
 * barrier runs no iteration.
 */
int cbench_batch(struct cbench_state *s, uint64_t *n)
{
	benchmark::State &st = *s->st;
	if (!s->started) {
		s->started = 1;
		if (st.KeepRunningBatch(st.max_iterations)) {
			if (s->b->setup_ok.load(std::memory_order_relaxed)) {
				*n = (uint64_t)st.max_iterations;
				return 1;
			}
			if (!st.error_occurred())
				st.SkipWithError("setup failed");
		} else {
			return 0; /* already stopped (an error before the start) */
		}
	}
	st.KeepRunningBatch(st.max_iterations); /* stop: returns false */
	return 0;
}

long cbench_range(const struct cbench_state *s, int i)
{
	return (long)s->st->range((size_t)i);
}

int cbench_thread_index(const struct cbench_state *s)
{
	return s->st->thread_index();
}

int cbench_nthreads(const struct cbench_state *s)
{
	return s->st->threads();
}

uint64_t cbench_iterations(const struct cbench_state *s)
{
	return (uint64_t)s->st->iterations();
}

void cbench_items(struct cbench_state *s, int64_t n)
{
	s->st->SetItemsProcessed(n);
}

void cbench_add_time(struct cbench_state *s, uint64_t ns)
{
	s->st->SetIterationTime((double)ns * 1e-9);
}

void cbench_counter(struct cbench_state *s, const char *name, double v, int flags)
{
	int f = benchmark::Counter::kDefaults;
	if (flags & CBENCH_RATE)
		f |= benchmark::Counter::kIsRate;
	if (flags & CBENCH_AVG_THREADS)
		f |= benchmark::Counter::kAvgThreads;
	s->st->counters[name] = benchmark::Counter(v, (benchmark::Counter::Flags)f);
}

void cbench_skip(struct cbench_state *s, const char *why)
{
	if (!s->st->error_occurred())
		s->st->SkipWithError(why);
}

int cbench_pin(int index)
{
	return tb::pin(index);
}

int cbench_nr_allowed_cpus(void)
{
	return (int)tb::allowed_cpus().size();
}

uint64_t cbench_now_ns(void)
{
	return tb::now_ns();
}

struct cbench_writers {
	tb::Writers w;
	cbench_writers(int n, void (*fn)(void *), void *arg) : w(n, [fn, arg] { fn(arg); }) {}
};

struct cbench_writers *cbench_writers_start(int n, void (*fn)(void *), void *arg)
{
	return new cbench_writers(n, fn, arg);
}

uint64_t cbench_writers_stop(struct cbench_writers *w)
{
	uint64_t n = w->w.stop();
	delete w;
	return n;
}

} // extern "C"
