/*
 * bench/bench_counter.cc - tally_counter against the baselines: add at 1, 2
 * and 4 threads (or TALLY_BENCH_THREADS), and the cost of the approximate
 * read and the exact sum, alone and beside writers.
 *
 * This file is compiled twice into one binary: once as it is (the default
 * per-CPU path: rseq where available) and once with TALLY_PCPU_MODE=1 and
 * TALLY_BENCH_ATOMIC_TU (the relaxed atomic RMW on the CPU's slot), whose
 * benchmarks are named tally_pcpu_atomic. Each TU uses its own counters,
 * so the two paths never meet on one word.
 *
 * counter_add/tally_batch1024 is tally_counter with batch 1024 instead of
 * the default: folds (a shared atomic add each) 32 times rarer. pcpu_add is
 * the per-CPU add alone, without the fold check, on both paths.
 *
 * Every add benchmark checks the total it produced to the last unit.
 */
#include "harness.h"
#include "baselines.h"

#include <tally/counter.h>

#include <string>

namespace {

#ifdef TALLY_BENCH_ATOMIC_TU
const char *const kTally = "tally_pcpu_atomic";
#else
const char *const kTally = "tally";
#endif

struct tally_counter g_counter;

uint64_t expected_total(const benchmark::State &st)
{
	return (uint64_t)st.iterations() * TALLY_BENCH_UNROLL * (uint64_t)st.threads();
}

/* Batch 0 is the default, max(32, 2 * CPU slots). */
template <int Batch> void tally_add(benchmark::State &st)
{
	tb::pin(st);
	if (st.thread_index() == 0 && tally_counter_init(&g_counter, 0, Batch) != 0)
		st.SkipWithError("init");
	for (auto _ : st)
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++)
			tally_counter_add(&g_counter, 1);
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	if (st.thread_index() == 0) {
		tb::verify(st, (uint64_t)tally_counter_sum(&g_counter) == expected_total(st),
			   "tally_counter_sum is not exact");
		tally_counter_destroy(&g_counter);
	}
}

/* The per-CPU add alone (tally__pcpu_add: no fold), the primitive under
 * every tally update: the rseq critical section or the atomic RMW. */
struct tally__pcpu g_raw;

void pcpu_add(benchmark::State &st)
{
	tb::pin(st);
	if (st.thread_index() == 0 && tally__pcpu_alloc(&g_raw, sizeof(tally_uword)) != 0)
		st.SkipWithError("init");
	unsigned slot;
	for (auto _ : st)
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++)
			benchmark::DoNotOptimize(tally__pcpu_add(&g_raw, 0, 1, &slot));
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	if (st.thread_index() == 0) {
		tb::verify(st, (uint64_t)tally__pcpu_sum(&g_raw, 0) == expected_total(st),
			   "per-CPU sum is not exact");
		tally__pcpu_free(&g_raw);
	}
}

/* The reader is the benchmark thread; writers (Arg 0 or 1) add beside it. */
template <bool Exact> void tally_read(benchmark::State &st)
{
	struct tally_counter c;
	tb::pin(0);
	if (tally_counter_init(&c, 0, 0) != 0) {
		st.SkipWithError("init");
		return;
	}
	tb::Writers w((int)st.range(0), [&c] { tally_counter_add(&c, 1); });
	for (auto _ : st)
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++)
			benchmark::DoNotOptimize(Exact ? tally_counter_sum(&c) : tally_counter_read(&c));
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	uint64_t adds = w.stop();
	tb::verify(st, (uint64_t)tally_counter_sum(&c) == adds, "tally_counter_sum is not exact");
	tally_counter_destroy(&c);
}

#ifndef TALLY_BENCH_ATOMIC_TU
/* ---- baselines (registered once, from the default TU) -------------------- */

void thread_local_add(benchmark::State &st)
{
	tb::pin(st);
	uint64_t start = tb::ThreadLocalCount::word();
	for (auto _ : st)
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++)
			tb::ThreadLocalCount::add(1);
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	tb::verify(st, tb::ThreadLocalCount::word() - start ==
			       (uint64_t)st.iterations() * TALLY_BENCH_UNROLL,
		   "thread-local count is not exact");
}

/* Every shared baseline: one object, made by thread 0, checked at the end. */
template <class T> struct Shared {
	static T *obj;
};
template <class T> T *Shared<T>::obj;

template <class T> T *make() { return new T(); }
template <> tb::StripedCounter *make<tb::StripedCounter>()
{
	return new tb::StripedCounter((unsigned)tb::allowed_cpus().size());
}
template <> tb::ThreadCachedCounter *make<tb::ThreadCachedCounter>()
{
	return new tb::ThreadCachedCounter(1000);
}

uint64_t total(tb::SharedAtomic *c) { return c->read(); }
uint64_t total(tb::MutexCounter *c) { return c->read(); }
uint64_t total(tb::UatomicCounter *c) { return c->read(); }
uint64_t total(tb::StripedCounter *c) { return (uint64_t)c->sum(); }
uint64_t total(tb::ThreadCachedCounter *c) { return (uint64_t)c->read_full(); }

template <class T> void baseline_add(benchmark::State &st)
{
	tb::pin(st);
	if (st.thread_index() == 0)
		Shared<T>::obj = make<T>();
	for (auto _ : st)
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++)
			Shared<T>::obj->add(1);
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	if (st.thread_index() == 0) {
		tb::verify(st, total(Shared<T>::obj) == expected_total(st), "baseline total");
		delete Shared<T>::obj;
		Shared<T>::obj = nullptr;
	}
}

/* The reader is the benchmark thread; writers (Arg 0 or 1) add beside it. */
template <class T, uint64_t (*Read)(T *)> void baseline_read(benchmark::State &st)
{
	tb::pin(0);
	T *obj = make<T>();
	tb::Writers w((int)st.range(0), [obj] { obj->add(1); });
	for (auto _ : st)
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++)
			benchmark::DoNotOptimize(Read(obj));
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	uint64_t adds = w.stop();
	tb::verify(st, total(obj) == adds, "baseline total");
	delete obj;
}

uint64_t atomic_read(tb::SharedAtomic *c) { return c->read(); }
uint64_t striped_sum(tb::StripedCounter *c) { return (uint64_t)c->sum(); }
uint64_t cached_fast(tb::ThreadCachedCounter *c) { return (uint64_t)c->read_fast(); }
uint64_t cached_full(tb::ThreadCachedCounter *c) { return (uint64_t)c->read_full(); }
#endif

int registered = [] {
	std::string t = kTally;
	benchmark::RegisterBenchmark(("counter_add/" + t).c_str(), tally_add<0>)->Apply(tb::threads);
	benchmark::RegisterBenchmark(("pcpu_add/" + t).c_str(), pcpu_add)->Apply(tb::threads);
	benchmark::RegisterBenchmark(("counter_read/" + t).c_str(), tally_read<false>)
		->Apply(tb::writers_args);
	benchmark::RegisterBenchmark(("counter_sum/" + t).c_str(), tally_read<true>)
		->Apply(tb::writers_args);
#ifndef TALLY_BENCH_ATOMIC_TU
	benchmark::RegisterBenchmark("counter_add/tally_batch1024", tally_add<1024>)
		->Apply(tb::threads);
	benchmark::RegisterBenchmark("counter_add/thread_local", thread_local_add)
		->Apply(tb::threads);
	benchmark::RegisterBenchmark("counter_add/shared_atomic", baseline_add<tb::SharedAtomic>)
		->Apply(tb::threads);
	benchmark::RegisterBenchmark("counter_add/mutex", baseline_add<tb::MutexCounter>)
		->Apply(tb::threads);
	benchmark::RegisterBenchmark("counter_add/urcu_uatomic", baseline_add<tb::UatomicCounter>)
		->Apply(tb::threads);
	benchmark::RegisterBenchmark("counter_add/striped", baseline_add<tb::StripedCounter>)
		->Apply(tb::threads);
	benchmark::RegisterBenchmark("counter_add/thread_cached",
				     baseline_add<tb::ThreadCachedCounter>)
		->Apply(tb::threads);
	benchmark::RegisterBenchmark("counter_read/shared_atomic",
				     baseline_read<tb::SharedAtomic, atomic_read>)
		->Apply(tb::writers_args);
	benchmark::RegisterBenchmark("counter_sum/striped",
				     baseline_read<tb::StripedCounter, striped_sum>)
		->Apply(tb::writers_args);
	benchmark::RegisterBenchmark("counter_read/thread_cached",
				     baseline_read<tb::ThreadCachedCounter, cached_fast>)
		->Apply(tb::writers_args);
	benchmark::RegisterBenchmark("counter_sum/thread_cached",
				     baseline_read<tb::ThreadCachedCounter, cached_full>)
		->Apply(tb::writers_args);
#endif
	return 0;
}();

} // namespace
