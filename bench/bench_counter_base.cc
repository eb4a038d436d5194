/*
 * bench/bench_counter_base.cc - the counters tally_counter is compared
 * with (baselines.h: std::atomic, std::mutex, liburcu, LongAdder-style,
 * ThreadCachedInt-style), registered through cbench.h beside the C
 * benchmarks of bench_counter.c, with the same names and checks as ever:
 *
 *   counter_add/{thread_local,shared_atomic,mutex,urcu_uatomic,striped,
 *                thread_cached,thread_cached_exact}
 *   counter_read/{shared_atomic,thread_cached}, counter_sum/{striped,
 *   thread_cached,thread_cached_exact}
 *
 * Every add benchmark checks its total to the last unit.
 */
#include "cbench.h"
#include "baselines.h"

namespace {

constexpr int kUnroll = 8;

uint64_t expected_total(const struct cbench_state *s)
{
	return cbench_iterations(s) * kUnroll * (uint64_t)cbench_nthreads(s);
}

void thread_local_add(struct cbench_state *s, void *)
{
	uint64_t start = tb::ThreadLocalCount::word(), n;
	while (cbench_batch(s, &n))
		for (uint64_t i = 0; i < n; i++)
			for (int j = 0; j < kUnroll; j++)
				tb::ThreadLocalCount::add(1);
	cbench_items(s, (int64_t)(cbench_iterations(s) * kUnroll));
	cbench_check(s, tb::ThreadLocalCount::word() - start == cbench_iterations(s) * kUnroll,
		     "thread-local count is not exact");
}

template <class T> T *make() { return new T(); }
template <> tb::StripedCounter *make<tb::StripedCounter>()
{
	return new tb::StripedCounter((unsigned)cbench_nr_allowed_cpus());
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
uint64_t total(tb::ThreadCachedExact *c) { return c->sum(); }

/* One object per run, made by thread 0 before the start barrier. */
template <class T> struct Shared {
	static T *obj;
	static int setup(struct cbench_state *, void *)
	{
		obj = make<T>();
		return 0;
	}
	static void teardown(struct cbench_state *s, void *)
	{
		cbench_check(s, total(obj) == expected_total(s), "baseline total");
		delete obj;
		obj = nullptr;
	}
	static void add(struct cbench_state *s, void *)
	{
		uint64_t n;
		/* obj is set once every thread passed the start barrier. */
		while (cbench_batch(s, &n)) {
			T *o = obj;
			for (uint64_t i = 0; i < n; i++)
				for (int j = 0; j < kUnroll; j++)
					o->add(1);
		}
		cbench_items(s, (int64_t)(cbench_iterations(s) * kUnroll));
	}
	static void register_add(const char *name)
	{
		cbench_env_threads(cbench_setup(cbench_register(name, add, nullptr), setup, teardown));
	}
};
template <class T> T *Shared<T>::obj;

/* The reader is the benchmark thread; writers (Arg 0 or 1) add beside it. */
template <class T, uint64_t (*Read)(T *)> void baseline_read(struct cbench_state *s, void *)
{
	T *obj = make<T>();
	struct cbench_writers *w = cbench_writers_start(
		(int)cbench_range(s, 0), [](void *o) { static_cast<T *>(o)->add(1); }, obj);
	uint64_t n;
	while (cbench_batch(s, &n))
		for (uint64_t i = 0; i < n; i++)
			for (int j = 0; j < kUnroll; j++) {
				uint64_t v = Read(obj);
				CBENCH_KEEP(v);
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * kUnroll));
	uint64_t adds = cbench_writers_stop(w);
	cbench_check(s, total(obj) == adds, "baseline total");
	delete obj;
}

uint64_t atomic_read(tb::SharedAtomic *c) { return c->read(); }
uint64_t striped_sum(tb::StripedCounter *c) { return (uint64_t)c->sum(); }
uint64_t cached_fast(tb::ThreadCachedCounter *c) { return (uint64_t)c->read_fast(); }
uint64_t cached_full(tb::ThreadCachedCounter *c) { return (uint64_t)c->read_full(); }
uint64_t exact_sum(tb::ThreadCachedExact *c) { return c->sum(); }

struct cbench *writers_arg(struct cbench *b)
{
	return cbench_arg(cbench_arg(cbench_arg_name(b, "writers"), 0), 1);
}

} // namespace

CBENCH_INIT(register_counter_baselines)
{
	cbench_env_threads(cbench_register("counter_add/thread_local", thread_local_add, nullptr));
	Shared<tb::SharedAtomic>::register_add("counter_add/shared_atomic");
	Shared<tb::MutexCounter>::register_add("counter_add/mutex");
	Shared<tb::UatomicCounter>::register_add("counter_add/urcu_uatomic");
	Shared<tb::StripedCounter>::register_add("counter_add/striped");
	Shared<tb::ThreadCachedCounter>::register_add("counter_add/thread_cached");
	Shared<tb::ThreadCachedExact>::register_add("counter_add/thread_cached_exact");
	writers_arg(cbench_register("counter_read/shared_atomic",
				    baseline_read<tb::SharedAtomic, atomic_read>, nullptr));
	writers_arg(cbench_register("counter_sum/striped",
				    baseline_read<tb::StripedCounter, striped_sum>, nullptr));
	writers_arg(cbench_register("counter_read/thread_cached",
				    baseline_read<tb::ThreadCachedCounter, cached_fast>, nullptr));
	writers_arg(cbench_register("counter_sum/thread_cached",
				    baseline_read<tb::ThreadCachedCounter, cached_full>, nullptr));
	writers_arg(cbench_register("counter_sum/thread_cached_exact",
				    baseline_read<tb::ThreadCachedExact, exact_sum>, nullptr));
}
