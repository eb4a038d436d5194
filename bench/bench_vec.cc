/*
 * bench/bench_vec.cc - tally_vec: mod and inc at 1, 2 and 4 threads (one hot
 * item, and spread over 16 items), and the reader costs: the clamped and
 * monotonic O(1) reads, the exact read (every CPU) and a full fold.
 * Every update benchmark checks the exact totals at the end.
 */
#include "harness.h"

#include <tally/vec.h>

namespace {

constexpr unsigned kItems = 16;
struct tally_vec g_vec;

enum Op { kMod, kInc, kModSpread };

template <Op O> void vec_update(benchmark::State &st)
{
	tb::pin(st);
	if (st.thread_index() == 0 && tally_vec_init(&g_vec, kItems, 0) != 0)
		st.SkipWithError("init");
	unsigned item = 0;
	for (auto _ : st) {
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++) {
			if (O == kMod)
				tally_vec_mod(&g_vec, 0, 1);
			else if (O == kInc)
				tally_vec_inc(&g_vec, 0);
			else
				tally_vec_mod(&g_vec, item++ % kItems, 1);
		}
	}
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	if (st.thread_index() == 0) {
		tally_sword total = 0;
		for (unsigned i = 0; i < kItems; i++)
			total += tally_vec_read_exact(&g_vec, i);
		uint64_t want = (uint64_t)st.iterations() * TALLY_BENCH_UNROLL * st.threads();
		tb::verify(st, (uint64_t)total == (uint64_t)(tally_uword)want, "vec total");
		tally_vec_fold(&g_vec);
		tb::verify(st, tally__to_signed(tally_vec_read_monotonic(&g_vec, 0) -
						TALLY_MONOTONIC_BIAS) == tally_vec_read_exact(&g_vec, 0),
			   "read after fold");
		tally_vec_destroy(&g_vec);
	}
}

enum Reader { kRead, kReadMonotonic, kReadExact, kFold };

/* The reader is the benchmark thread; writers (Arg 0 or 1) mod beside it,
 * spread over the items. */
template <Reader R> void vec_read(benchmark::State &st)
{
	struct tally_vec v;
	tb::pin(0);
	if (tally_vec_init(&v, kItems, 0) != 0) {
		st.SkipWithError("init");
		return;
	}
	unsigned witem = 0;
	tb::Writers w((int)st.range(0), [&v, &witem] { tally_vec_mod(&v, witem++ % kItems, 1); });
	unsigned item = 0;
	for (auto _ : st) {
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++) {
			unsigned it = item++ % kItems;
			if (R == kRead)
				benchmark::DoNotOptimize(tally_vec_read(&v, it));
			else if (R == kReadMonotonic)
				benchmark::DoNotOptimize(tally_vec_read_monotonic(&v, it));
			else if (R == kReadExact)
				benchmark::DoNotOptimize(tally_vec_read_exact(&v, it));
			else
				tally_vec_fold(&v);
		}
	}
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	uint64_t mods = w.stop();
	tally_sword total = 0;
	for (unsigned i = 0; i < kItems; i++)
		total += tally_vec_read_exact(&v, i);
	tb::verify(st, (tally_uword)total == (tally_uword)mods, "vec total");
	tally_vec_destroy(&v);
}

int registered = [] {
	benchmark::RegisterBenchmark("vec_mod/tally", vec_update<kMod>)->Apply(tb::threads);
	benchmark::RegisterBenchmark("vec_inc/tally", vec_update<kInc>)->Apply(tb::threads);
	benchmark::RegisterBenchmark("vec_mod_spread16/tally", vec_update<kModSpread>)
		->Apply(tb::threads);
	benchmark::RegisterBenchmark("vec_read/clamped", vec_read<kRead>)->Apply(tb::writers_args);
	benchmark::RegisterBenchmark("vec_read/monotonic", vec_read<kReadMonotonic>)
		->Apply(tb::writers_args);
	benchmark::RegisterBenchmark("vec_read/exact", vec_read<kReadExact>)->Apply(tb::writers_args);
	benchmark::RegisterBenchmark("vec_fold/16items", vec_read<kFold>)->Apply(tb::writers_args);
	return 0;
}();

} // namespace
