/*
 * bench/bench_rstat.cc - tally_tree / tally_group: update cost by tree
 * depth beside the legacy lock-and-walk producer, flush cost by number of
 * updated groups and by subtree size, read cost, and the latency of a
 * thresholded flush plus read on a 5,000-group tree with a writer beside.
 *
 * Depth D: the updated group sits D levels below the root (D = 1: a child
 * of the root); an update's ancestor walk covers D + 1 groups. Each
 * benchmark thread updates its own group; all of them share the chain of
 * ancestors (sibling cgroups under one parent), so the legacy producer's
 * locks are contended from 2 threads on.
 *
 *   group_mod/tally            tally_group_mod, nothing flushing (the
 *                              threshold walk stops at the first group that
 *                              already needs a flush)
 *   group_mod_flushed/tally    the same beside a thread that does a
 *                              thresholded root flush every 50 us, so the
 *                              threshold walk keeps going up the tree
 *   group_mod/legacy           lock, lru_note_cost step, unlock at the
 *                              group and at every ancestor (baselines.h)
 *
 * Every update benchmark checks the root's total after a final flush.
 */
#include "harness.h"
#include "baselines.h"

#include <tally/rstat.h>

#include <cstdio>
#include <ctime>
#include <random>

namespace {

constexpr unsigned kItems = 8;

/* ---- update by depth ------------------------------------------------------ */

struct tally_tree *g_tree;
std::vector<struct tally_group *> g_leaf;

/* Root, a chain of depth - 1 groups, and one group per thread at the end. */
bool build_chain(int depth, int threads)
{
	g_tree = tally_tree_create(kItems);
	if (!g_tree)
		return false;
	struct tally_group *p = tally_tree_root(g_tree);
	for (int i = 1; i < depth && p; i++)
		p = tally_group_create(p);
	g_leaf.assign((size_t)threads, nullptr);
	for (int t = 0; t < threads && p; t++)
		g_leaf[(size_t)t] = tally_group_create(p);
	return p && g_leaf.back();
}

template <bool Flusher> void tally_mod_depth(benchmark::State &st)
{
	tb::pin(st);
	if (st.thread_index() == 0 && !build_chain((int)st.range(0), st.threads()))
		st.SkipWithError("tree");
	std::unique_ptr<tb::Writers> flusher;
	if (Flusher && st.thread_index() == 0) {
		struct tally_group *root = tally_tree_root(g_tree);
		flusher.reset(new tb::Writers(1, [root] {
			tally_group_flush(root);
			struct timespec ts = {0, 50000};
			nanosleep(&ts, nullptr);
		}));
	}
	/* g_leaf is ready once every thread has passed the start barrier. */
	struct tally_group *g = nullptr;
	unsigned n = 0;
	for (auto _ : st) {
		if (!g)
			g = g_leaf[(size_t)st.thread_index()];
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++)
			tally_group_mod(g, n++ % kItems, 1);
	}
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	if (st.thread_index() == 0) {
		flusher.reset();
		struct tally_group *root = tally_tree_root(g_tree);
		tally_group_flush_force(root);
		tally_sword sum = 0;
		for (unsigned i = 0; i < kItems; i++)
			sum += tally_group_read(root, i);
		uint64_t want = (uint64_t)st.iterations() * TALLY_BENCH_UNROLL * st.threads();
		tb::verify(st, (tally_uword)sum == (tally_uword)want, "root total after flush");
		tally_tree_destroy(g_tree);
		g_tree = nullptr;
	}
}

std::vector<std::unique_ptr<tb::LegacyNode>> g_legacy;
std::vector<tb::LegacyNode *> g_legacy_leaf;

void legacy_mod_depth(benchmark::State &st)
{
	tb::pin(st);
	if (st.thread_index() == 0) {
		g_legacy.clear();
		g_legacy.emplace_back(new tb::LegacyNode());
		for (int i = 1; i < (int)st.range(0); i++) {
			g_legacy.emplace_back(new tb::LegacyNode());
			g_legacy.back()->parent = g_legacy[g_legacy.size() - 2].get();
		}
		tb::LegacyNode *p = g_legacy.back().get();
		g_legacy_leaf.clear();
		for (int t = 0; t < st.threads(); t++) {
			g_legacy.emplace_back(new tb::LegacyNode());
			g_legacy.back()->parent = p;
			g_legacy_leaf.push_back(g_legacy.back().get());
		}
	}
	tb::LegacyNode *g = nullptr;
	unsigned n = 0;
	/* lrusize large enough that nothing halves: the root's costs stay an
	 * exact count of the updates. */
	const uint64_t lrusize = (uint64_t)1 << 62;
	for (auto _ : st) {
		if (!g)
			g = g_legacy_leaf[(size_t)st.thread_index()];
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++)
			tb::legacy_note_cost(g, (int)(n++ & 1), 0, 1, lrusize);
	}
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	if (st.thread_index() == 0) {
		tb::LegacyNode *root = g_legacy.front().get();
		uint64_t want = (uint64_t)st.iterations() * TALLY_BENCH_UNROLL * st.threads();
		tb::verify(st, root->cost[0] + root->cost[1] == want, "legacy root total");
		g_legacy.clear();
	}
}

void depths(benchmark::internal::Benchmark *b)
{
	tb::threads(b);
	b->ArgName("depth")->Arg(1)->Arg(4)->Arg(8);
}

/* ---- flush cost ------------------------------------------------------------ */

/*
 * flush/updated_groups:K - a 1,011-group tree (root, 10 children, 100
 * grandchildren each); K groups spread over it get one update each, then a
 * forced root flush is timed.
 */
void flush_updated(benchmark::State &st)
{
	tb::pin(0);
	struct tally_tree *t = tally_tree_create(kItems);
	if (!t) {
		st.SkipWithError("tree");
		return;
	}
	struct tally_group *root = tally_tree_root(t);
	std::vector<struct tally_group *> all;
	for (int i = 0; i < 10; i++) {
		struct tally_group *c = tally_group_create(root);
		all.push_back(c);
		for (int j = 0; j < 100; j++)
			all.push_back(tally_group_create(c));
	}
	size_t k = (size_t)st.range(0), stride = all.size() / k;
	uint64_t updates = 0;
	for (auto _ : st) {
		for (size_t i = 0; i < k; i++)
			tally_group_mod(all[i * stride], (unsigned)i % kItems, 1);
		updates += k;
		uint64_t t0 = tb::now_ns();
		tally_group_flush_force(root);
		st.SetIterationTime((double)(tb::now_ns() - t0) * 1e-9);
	}
	tally_sword sum = 0;
	for (unsigned i = 0; i < kItems; i++)
		sum += tally_group_read(root, i);
	tb::verify(st, (uint64_t)sum == updates, "root total");
	st.counters["groups"] = (double)all.size() + 1;
	st.counters["group_bytes"] = (double)tally_tree_group_bytes(t);
	tally_tree_destroy(t);
}

/*
 * flush_subtree/size:S - a group with S - 1 children (S groups), beside a
 * sibling subtree of the same size; every group of both gets one update,
 * then a forced flush of the first subtree alone is timed.
 */
void flush_subtree(benchmark::State &st)
{
	tb::pin(0);
	struct tally_tree *t = tally_tree_create(kItems);
	if (!t) {
		st.SkipWithError("tree");
		return;
	}
	struct tally_group *root = tally_tree_root(t);
	std::vector<struct tally_group *> all;
	struct tally_group *sub[2];
	for (int s = 0; s < 2; s++) {
		sub[s] = tally_group_create(root);
		all.push_back(sub[s]);
		for (int64_t j = 1; j < st.range(0); j++)
			all.push_back(tally_group_create(sub[s]));
	}
	uint64_t updates = 0;
	for (auto _ : st) {
		for (size_t i = 0; i < all.size(); i++)
			tally_group_mod(all[i], (unsigned)i % kItems, 1);
		updates += all.size() / 2;
		uint64_t t0 = tb::now_ns();
		tally_group_flush_force(sub[0]);
		st.SetIterationTime((double)(tb::now_ns() - t0) * 1e-9);
	}
	tally_sword sum = 0;
	for (unsigned i = 0; i < kItems; i++)
		sum += tally_group_read(sub[0], i);
	tb::verify(st, (uint64_t)sum == updates, "subtree total");
	tally_tree_destroy(t);
}

/* ---- reads ------------------------------------------------------------------ */

/* group_read: the O(1) hierarchical read; a writer (Arg 1) updates it. */
void group_read(benchmark::State &st)
{
	tb::pin(0);
	struct tally_tree *t = tally_tree_create(kItems);
	if (!t) {
		st.SkipWithError("tree");
		return;
	}
	struct tally_group *g = tally_group_create(tally_tree_root(t));
	unsigned wn = 0;
	tb::Writers w((int)st.range(0), [g, &wn] { tally_group_mod(g, wn++ % kItems, 1); });
	unsigned n = 0;
	for (auto _ : st)
		for (int i = 0; i < TALLY_BENCH_UNROLL; i++)
			benchmark::DoNotOptimize(tally_group_read(g, n++ % kItems));
	st.SetItemsProcessed(st.iterations() * TALLY_BENCH_UNROLL);
	w.stop();
	tally_tree_destroy(t);
}

/*
 * read_flush_5000 - seed 003's read path on a 5,000-group tree (root, 50
 * children, 99 grandchildren each) while a writer updates random groups: a
 * thresholded flush of a group's subtree and a read of its items, timed one
 * by one. Args: writers (0 or 1) and writer_gap_ns, the writer's other work
 * between two updates (0: updates flat out, ~10 M/s; 1000: ~1 M/s, a
 * producer that does something besides counting).
 *   /random  each read picks a random group and reads are paced 20 us
 *            apart (the seed's test: many readers of many cgroups, each
 *            reading every so often), with the 2 s periodic flusher on.
 *   /root    the worst case: the root, read in a tight loop, so nearly
 *            every flush finds thousands of updated groups.
 * Counters: latency percentiles of all reads in microseconds, how many
 * reads flushed, and the percentiles of those reads alone.
 */
template <bool Root> void read_flush_5000(benchmark::State &st)
{
	tb::pin(0);
	struct tally_tree *t = tally_tree_create(kItems);
	if (!t) {
		st.SkipWithError("tree");
		return;
	}
	struct tally_group *root = tally_tree_root(t);
	std::vector<struct tally_group *> all;
	all.push_back(root);
	for (int i = 0; i < 50; i++) {
		struct tally_group *c = tally_group_create(root);
		all.push_back(c);
		for (int j = 0; j < 99; j++)
			all.push_back(tally_group_create(c));
	}
	if (!Root)
		tally_tree_start_flusher(t, 0);
	std::mt19937 wrng(42);
	const uint64_t gap = (uint64_t)st.range(1);
	tb::Writers w((int)st.range(0), [&all, &wrng, gap] {
		uint32_t r = (uint32_t)wrng();
		tally_group_mod(all[r % all.size()], (r >> 16) % kItems, 1);
		if (gap)
			for (uint64_t t0 = tb::now_ns(); tb::now_ns() - t0 < gap;)
				tally__cpu_relax();
	});
	std::mt19937 rrng(7);
	std::vector<uint64_t> lat, flush_lat;
	lat.reserve(1 << 20);
	flush_lat.reserve(1 << 16);
	for (auto _ : st) {
		struct tally_group *g = Root ? root : all[rrng() % all.size()];
		uint64_t t0 = tb::now_ns();
		bool need = tally_group_needs_flush(g);
		tally_group_flush(g);
		for (unsigned i = 0; i < kItems; i++)
			benchmark::DoNotOptimize(tally_group_read(g, i));
		uint64_t t1 = tb::now_ns();
		if (lat.size() < lat.capacity())
			lat.push_back(t1 - t0);
		if (need && flush_lat.size() < flush_lat.capacity())
			flush_lat.push_back(t1 - t0);
		if (!Root)
			while (tb::now_ns() - t1 < 20000)
				tally__cpu_relax();
	}
	uint64_t writes = w.stop();
	tally_tree_stop_flusher(t);
	tally_group_flush_force(root);
	tally_sword sum = 0;
	for (unsigned i = 0; i < kItems; i++)
		sum += tally_group_read(root, i);
	tb::verify(st, (uint64_t)sum == writes, "root total");
	st.SetItemsProcessed(st.iterations());
	st.counters["groups"] = (double)all.size();
	st.counters["flushes"] = (double)flush_lat.size();
	st.counters["p50_us"] = tb::percentile(lat, 50) / 1e3;
	st.counters["p99_us"] = tb::percentile(lat, 99) / 1e3;
	st.counters["p99.9_us"] = tb::percentile(lat, 99.9) / 1e3;
	st.counters["p99.99_us"] = tb::percentile(lat, 99.99) / 1e3;
	st.counters["max_us"] = tb::percentile(lat, 100) / 1e3;
	/* The reads that flushed, alone. */
	st.counters["flush_p50_us"] = tb::percentile(flush_lat, 50) / 1e3;
	st.counters["flush_p99_us"] = tb::percentile(flush_lat, 99) / 1e3;
	st.counters["flush_max_us"] = tb::percentile(flush_lat, 100) / 1e3;
	tally_tree_destroy(t);
}

int registered = [] {
	benchmark::RegisterBenchmark("group_mod/tally", tally_mod_depth<false>)->Apply(depths);
	benchmark::RegisterBenchmark("group_mod_flushed/tally", tally_mod_depth<true>)
		->Apply(depths);
	benchmark::RegisterBenchmark("group_mod/legacy", legacy_mod_depth)->Apply(depths);
	benchmark::RegisterBenchmark("flush/tally", flush_updated)
		->ArgName("updated_groups")
		->Arg(1)
		->Arg(10)
		->Arg(100)
		->Arg(1000)
		->UseManualTime();
	benchmark::RegisterBenchmark("flush_subtree/tally", flush_subtree)
		->ArgName("size")
		->Arg(1)
		->Arg(10)
		->Arg(100)
		->Arg(1000)
		->Arg(5000)
		->UseManualTime();
	benchmark::RegisterBenchmark("group_read/tally", group_read)->Apply(tb::writers_args);
	auto read_args = [](benchmark::internal::Benchmark *b) {
		b->ArgNames({"writers", "writer_gap_ns"})
			->Args({0, 0})
			->Args({1, 0})
			->Args({1, 1000});
	};
	benchmark::RegisterBenchmark("read_flush_5000/random", read_flush_5000<false>)
		->Apply(read_args);
	benchmark::RegisterBenchmark("read_flush_5000/root", read_flush_5000<true>)
		->Apply(read_args);
	return 0;
}();

} // namespace
