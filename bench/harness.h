/*
 * bench/harness.h - what every tally benchmark shares: thread counts,
 * pinning, and the loop shapes that make results comparable.
 *
 * Thread counts: 1, 2 and 4 unless TALLY_BENCH_THREADS says otherwise,
 * as a list and/or ranges ("1,2,4", "1-16", "max" = every allowed CPU).
 * Pinning: benchmark thread i runs on the i-th allowed CPU (modulo their
 * number) unless TALLY_BENCH_PIN=0, or the affinity call is refused.
 * Output: Google Benchmark's own flags, e.g.
 *   --benchmark_out=results/counter.json --benchmark_out_format=json
 *
 * Throughput benchmarks use real time, so items_per_second is the rate of
 * all threads together, and unroll TALLY_BENCH_UNROLL operations per loop
 * iteration so the loop's own cost stays out of the ratios.
 */
#ifndef TALLY_BENCH_HARNESS_H
#define TALLY_BENCH_HARNESS_H

#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define TALLY_BENCH_UNROLL 8

namespace tb {

/* The CPUs this process may run on, in increasing order. */
inline const std::vector<int> &allowed_cpus()
{
	static const std::vector<int> cpus = [] {
		std::vector<int> v;
		cpu_set_t set;
		CPU_ZERO(&set);
		if (sched_getaffinity(0, sizeof(set), &set) == 0) {
			for (int c = 0; c < CPU_SETSIZE; c++)
				if (CPU_ISSET(c, &set))
					v.push_back(c);
		}
		if (v.empty())
			v.push_back(-1); /* unknown: never pin */
		return v;
	}();
	return cpus;
}

inline bool pin_enabled()
{
	const char *e = std::getenv("TALLY_BENCH_PIN");
	return !(e && std::strcmp(e, "0") == 0);
}

/*
 * pin - run the calling benchmark thread on allowed CPU (index mod n).
 * Call first thing in a benchmark function. Returns the CPU or -1.
 */
inline int pin(int index)
{
	const std::vector<int> &cpus = allowed_cpus();
	int cpu = cpus[(size_t)index % cpus.size()];
	if (!pin_enabled() || cpu < 0)
		return -1;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0 ? cpu : -1;
}

inline int pin(const benchmark::State &st)
{
	return pin(st.thread_index());
}

/* The thread counts to run, from TALLY_BENCH_THREADS (default 1,2,4). */
inline std::vector<int> thread_counts()
{
	const char *e = std::getenv("TALLY_BENCH_THREADS");
	std::string s = e && *e ? e : "1,2,4";
	int max = (int)allowed_cpus().size();
	std::vector<int> out;
	size_t i = 0;
	while (i < s.size()) {
		size_t j = s.find(',', i);
		std::string part = s.substr(i, j == std::string::npos ? std::string::npos : j - i);
		i = j == std::string::npos ? s.size() : j + 1;
		if (part == "max") {
			out.push_back(max);
			continue;
		}
		size_t dash = part.find('-');
		int lo = std::atoi(part.c_str());
		int hi = lo;
		if (dash != std::string::npos) {
			std::string h = part.substr(dash + 1);
			hi = h == "max" ? max : std::atoi(h.c_str());
		}
		for (int t = lo; t >= 1 && t <= hi && t <= 1024; t++)
			out.push_back(t);
	}
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	if (out.empty())
		out.push_back(1);
	return out;
}

/* Apply() helper: every thread count, real time (rates of all threads). */
inline void threads(benchmark::internal::Benchmark *b)
{
	for (int t : thread_counts())
		b->Threads(t);
	b->UseRealTime();
}

/*
 * Writers - background threads that run fn() in a loop until stopped, for
 * reader benchmarks "beside writers": the reader is the benchmark thread
 * (pinned to the first allowed CPU), writer i is pinned to CPU i + 1.
 * Register such benchmarks with writers_args (Arg 0 and 1, "writers").
 */
class Writers {
	std::vector<std::thread> threads_;
	std::atomic<bool> stop_{false};
	std::atomic<uint64_t> ops_{0};

public:
	template <class F> Writers(int n, F fn)
	{
		for (int i = 0; i < n; i++)
			threads_.emplace_back([this, i, fn] {
				pin(i + 1);
				uint64_t ops = 0;
				while (!stop_.load(std::memory_order_relaxed)) {
					fn();
					ops++;
				}
				ops_.fetch_add(ops, std::memory_order_relaxed);
			});
	}
	/* Stop and join; returns the number of fn() calls made. */
	uint64_t stop()
	{
		stop_.store(true, std::memory_order_relaxed);
		for (auto &t : threads_)
			t.join();
		threads_.clear();
		return ops_.load(std::memory_order_relaxed);
	}
	~Writers() { stop(); }
};

inline void writers_args(benchmark::internal::Benchmark *b)
{
	b->ArgName("writers")->Arg(0)->Arg(1);
}

/* A monotonic clock in nanoseconds, for latency distributions. */
inline uint64_t now_ns()
{
	return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

/* Percentile p (0..100) of samples, which it sorts. 0 if empty. */
inline double percentile(std::vector<uint64_t> &samples, double p)
{
	if (samples.empty())
		return 0;
	std::sort(samples.begin(), samples.end());
	size_t idx = (size_t)(p / 100.0 * (double)(samples.size() - 1) + 0.5);
	return (double)samples[std::min(idx, samples.size() - 1)];
}

/* Report a failed exactness check: the run is marked as an error. */
inline void verify(benchmark::State &st, bool ok, const char *what)
{
	if (!ok)
		st.SkipWithError(what);
}

} // namespace tb

#endif /* TALLY_BENCH_HARNESS_H */
