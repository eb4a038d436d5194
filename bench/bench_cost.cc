/*
 * bench/bench_cost.cc - tally_cost: the read-side fold (seed 000's patch),
 * the classic producer-side note, the lock-free read, and
 * tally_scan_fraction().
 *
 * cost_fold: each thread, per iteration, counts one event in a shared
 * tally_vec (the monotonic statistics the patch reads) and then folds the
 * shared accumulator from that vec's raw values, reading them under the
 * cost lock (the documented pattern for several folders). At 2 threads the
 * folders contend on the cost lock, as reclaimers of one lruvec do.
 * cost_note: the classic lru_note_cost() step on one accumulator.
 * cost_read: the seqcount read, alone and beside a folding thread.
 * scan_fraction: get_scan_count()'s SCAN_FRACT arithmetic on varying costs.
 */
#include "harness.h"

#include <tally/cost.h>
#include <tally/vec.h>

namespace {

enum { kRotAnon, kRotFile, kIoAnon, kIoFile, kItems };
constexpr tally_uword kLruSize = 1u << 20;

struct tally_cost g_cost;
struct tally_vec g_events;

void fold_from(struct tally_cost *c, struct tally_vec *v, tally_uword out[2])
{
	tally_cost_lock(c);
	struct tally_cost_input in[2];
	in[TALLY_ANON].rotated = tally_vec_read_monotonic(v, kRotAnon);
	in[TALLY_ANON].io = tally_vec_read_monotonic(v, kIoAnon);
	in[TALLY_FILE].rotated = tally_vec_read_monotonic(v, kRotFile);
	in[TALLY_FILE].io = tally_vec_read_monotonic(v, kIoFile);
	tally_cost_fold_locked(c, in, kLruSize, out);
	tally_cost_unlock(c);
}

void cost_fold(benchmark::State &st)
{
	tb::pin(st);
	if (st.thread_index() == 0) {
		tally_cost_init(&g_cost);
		/* threshold 1: each event reaches the global the fold reads */
		if (tally_vec_init(&g_events, kItems, 1) != 0)
			st.SkipWithError("init");
	}
	tally_uword out[2] = {0, 0};
	unsigned n = 0;
	for (auto _ : st) {
		tally_vec_mod(&g_events, n++ % kItems, 2);
		fold_from(&g_cost, &g_events, out);
	}
	st.SetItemsProcessed(st.iterations());
	if (st.thread_index() == 0) {
		/* Quiescent now: one more fold sees every event; the stored
		 * counts are what that fold returned. */
		tally_uword after[2];
		fold_from(&g_cost, &g_events, out);
		tally_cost_read(&g_cost, after);
		tb::verify(st, after[0] == out[0] && after[1] == out[1] &&
				       out[0] + out[1] <= kLruSize / 4,
			   "cost fold result");
		tally_vec_destroy(&g_events);
	}
}

void cost_note(benchmark::State &st)
{
	tb::pin(st);
	if (st.thread_index() == 0)
		tally_cost_init(&g_cost);
	unsigned n = (unsigned)st.thread_index();
	for (auto _ : st) {
		tally_cost_note(&g_cost, (int)(n & 1), n & 3, 1, kLruSize);
		n++;
	}
	st.SetItemsProcessed(st.iterations());
	if (st.thread_index() == 0) {
		tally_uword c[2];
		tally_cost_read(&g_cost, c);
		tb::verify(st, c[0] + c[1] <= kLruSize / 4, "cost note bound");
	}
}

/* The reader is the benchmark thread; a writer (Arg 1) counts and folds. */
void cost_read(benchmark::State &st)
{
	struct tally_cost c;
	struct tally_vec ev;
	tb::pin(0);
	tally_cost_init(&c);
	if (tally_vec_init(&ev, kItems, 1) != 0) {
		st.SkipWithError("init");
		return;
	}
	unsigned n = 0;
	tb::Writers w((int)st.range(0), [&c, &ev, &n] {
		tally_uword out[2];
		tally_vec_mod(&ev, n++ % kItems, 5);
		fold_from(&c, &ev, out);
	});
	tally_uword v[2];
	for (auto _ : st) {
		tally_cost_read(&c, v);
		benchmark::DoNotOptimize(v);
	}
	st.SetItemsProcessed(st.iterations());
	w.stop();
	tally_vec_destroy(&ev);
}

void scan_fraction(benchmark::State &st)
{
	uint64_t f[2], d;
	/* The golden case first: costs (100, 300), swappiness 100. */
	tally_scan_fraction(100, 300, 100, f, &d);
	tb::verify(st, f[0] == 239 && f[1] == 171 && d == 410, "scan fraction golden");
	uint32_t x = 12345;
	for (auto _ : st) {
		x = x * 1664525u + 1013904223u;
		tally_scan_fraction((tally_uword)(x >> 8), (tally_uword)(x & 0xfffff), x % 201, f, &d);
		benchmark::DoNotOptimize(f);
		benchmark::DoNotOptimize(d);
	}
	st.SetItemsProcessed(st.iterations());
}

int registered = [] {
	auto two = [](benchmark::internal::Benchmark *b) {
		b->Threads(1)->Threads(2)->UseRealTime();
	};
	benchmark::RegisterBenchmark("cost_fold/tally", cost_fold)->Apply(two);
	benchmark::RegisterBenchmark("cost_note/tally", cost_note)->Apply(two);
	benchmark::RegisterBenchmark("cost_read/tally", cost_read)->Apply(tb::writers_args);
	benchmark::RegisterBenchmark("scan_fraction/tally", scan_fraction);
	return 0;
}();

} // namespace
