/*
 * bench/bench_monotonic.cc - 32-bit wraparound: the cost of monotonic vs
 * clamped reads and of the deltas taken from them, and what each reader
 * sees when a counter is driven through 2^31 and 2^32.
 *
 * Compiled twice, into bench_monotonic_w32 (TALLY_WORD_BITS=32) and
 * bench_monotonic_w64 (TALLY_WORD_BITS=64); names end in /w32 or /w64.
 *
 * wrap_drive: a tally_vec item grows by kStep (2^26) per iteration, 72
 * iterations: reaching 2^31 at iteration 32 and 2^32 at 64. After each
 * step one sampler takes the delta of the clamped read (tally_vec_read,
 * node_page_state()) and another of the monotonic read
 * (tally_vec_read_monotonic). Counters reported: the true step, each
 * reader's delta at the step that reached 2^31 and at the one that
 * reached 2^32, its largest delta and how many of its deltas were wrong.
 * With 32-bit words the clamped reader sees one spurious 2^31 + step
 * delta at 2^31 (seed 000's bug) and then zeros until the value wraps;
 * the monotonic reader is exact every time. With 64-bit words both are.
 */
#include "harness.h"

#include <tally/vec.h>

#include <string>

namespace {

#define STR2(x) #x
#define STR(x) STR2(x)
const std::string kW = "/w" STR(TALLY_WORD_BITS);

constexpr unsigned kItems = 16;

/* Reads of 16 items in turn; writers (Arg 0 or 1) mod beside the reader. */
template <bool Monotonic, bool Delta> void mono_read(benchmark::State &st)
{
	struct tally_vec v;
	tb::pin(0);
	if (tally_vec_init(&v, kItems, 0) != 0) {
		st.SkipWithError("init");
		return;
	}
	unsigned witem = 0;
	tb::Writers w((int)st.range(0), [&v, &witem] { tally_vec_mod(&v, witem++ % kItems, 1); });
	struct tally_sample s[kItems] = {};
	unsigned item = 0;
	tally_uword seen = 0;
	for (auto _ : st) {
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++) {
			unsigned it = item++ % kItems;
			tally_uword x = Monotonic ? tally_vec_read_monotonic(&v, it) : tally_vec_read(&v, it);
			if (Delta)
				seen += tally_sample_advance(&s[it], x);
			else
				benchmark::DoNotOptimize(x);
		}
	}
	benchmark::DoNotOptimize(seen);
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	w.stop();
	tally_vec_destroy(&v);
}

constexpr tally_sword kStep = (tally_sword)1 << 26;
constexpr int kDriveSteps = 72; /* 2^31 at 32, 2^32 at 64 */

void wrap_drive(benchmark::State &st)
{
	struct tally_vec v;
	/* A threshold below the step: every mod folds into the global. */
	if (tally_vec_init(&v, 1, 1) != 0) {
		st.SkipWithError("init");
		return;
	}
	struct tally_sample clamped = {tally_vec_read(&v, 0)};
	struct tally_sample mono = {tally_vec_read_monotonic(&v, 0)};
	double clamped_max = 0, mono_max = 0, clamped_wrong = 0, mono_wrong = 0;
	double clamped_at31 = -1, mono_at31 = -1, clamped_at32 = -1, mono_at32 = -1;
	uint64_t exact = 0; /* the true value, in 64 bits */
	for (auto _ : st) {
		tally_vec_mod(&v, 0, kStep);
		exact += (uint64_t)kStep;
		tally_uword dc = tally_sample_advance(&clamped, tally_vec_read(&v, 0));
		tally_uword dm = tally_sample_advance(&mono, tally_vec_read_monotonic(&v, 0));
		clamped_max = std::max(clamped_max, (double)dc);
		mono_max = std::max(mono_max, (double)dm);
		clamped_wrong += dc != (tally_uword)kStep;
		mono_wrong += dm != (tally_uword)kStep;
		/* The step that reaches 2^31 (signed overflow at 32 bits) and
		 * the one that reaches 2^32 (the unsigned wrap). */
		if (exact == (uint64_t)1 << 31) {
			clamped_at31 = (double)dc;
			mono_at31 = (double)dm;
		}
		if (exact == (uint64_t)1 << 32) {
			clamped_at32 = (double)dc;
			mono_at32 = (double)dm;
		}
	}
	tally_vec_destroy(&v);
	st.counters["step"] = (double)kStep;
	st.counters["clamped_delta_at_2^31"] = clamped_at31;
	st.counters["clamped_delta_at_2^32"] = clamped_at32;
	st.counters["clamped_max_delta"] = clamped_max;
	st.counters["clamped_wrong_deltas"] = clamped_wrong;
	st.counters["monotonic_delta_at_2^31"] = mono_at31;
	st.counters["monotonic_delta_at_2^32"] = mono_at32;
	st.counters["monotonic_max_delta"] = mono_max;
	st.counters["monotonic_wrong_deltas"] = mono_wrong;
	/* The monotonic reader must be exact at any width; the run must have
	 * reached both points (at least kDriveSteps iterations). */
	tb::verify(st, mono_wrong == 0 && mono_at31 >= 0 && mono_at32 >= 0,
		   "monotonic reader was wrong, or the drive stopped short");
}

int registered = [] {
	benchmark::RegisterBenchmark(("mono_read/clamped" + kW).c_str(), mono_read<false, false>)
		->Apply(tb::writers_args);
	benchmark::RegisterBenchmark(("mono_read/monotonic" + kW).c_str(), mono_read<true, false>)
		->Apply(tb::writers_args);
	benchmark::RegisterBenchmark(("mono_delta/clamped" + kW).c_str(), mono_read<false, true>)
		->Apply(tb::writers_args);
	benchmark::RegisterBenchmark(("mono_delta/monotonic" + kW).c_str(), mono_read<true, true>)
		->Apply(tb::writers_args);
	benchmark::RegisterBenchmark(("wrap_drive" + kW).c_str(), wrap_drive)
		->Iterations(kDriveSteps);
	return 0;
}();

} // namespace
