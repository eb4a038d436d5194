/*
 * bench/bench_rstat_base.cc - the producer tally_group_mod is compared
 * with (baselines.h: LegacyNode, a std::mutex per node), registered through
 * cbench.h beside the C benchmarks of bench_rstat.c, with the same name,
 * shape and check as ever:
 *
 *   group_mod/legacy   lock, lru_note_cost step, unlock at the group and at
 *                      every ancestor; depth D as in bench_rstat.c (each
 *                      thread its own group under a shared chain), so the
 *                      locks are contended from 2 threads on
 *
 * It checks the root's total (lrusize is large enough that nothing halves).
 */
#include "cbench.h"
#include "baselines.h"

#include <memory>
#include <vector>

namespace {

constexpr int kUnroll = 8;

std::vector<std::unique_ptr<tb::LegacyNode>> g_nodes;
std::vector<tb::LegacyNode *> g_leaf;

int legacy_setup(struct cbench_state *s, void *)
{
	g_nodes.clear();
	g_nodes.emplace_back(new tb::LegacyNode());
	for (long i = 1; i < cbench_range(s, 0); i++) {
		g_nodes.emplace_back(new tb::LegacyNode());
		g_nodes.back()->parent = g_nodes[g_nodes.size() - 2].get();
	}
	tb::LegacyNode *p = g_nodes.back().get();
	g_leaf.clear();
	for (int t = 0; t < cbench_nthreads(s); t++) {
		g_nodes.emplace_back(new tb::LegacyNode());
		g_nodes.back()->parent = p;
		g_leaf.push_back(g_nodes.back().get());
	}
	return 0;
}

void legacy_teardown(struct cbench_state *s, void *)
{
	tb::LegacyNode *root = g_nodes.front().get();
	uint64_t want = cbench_iterations(s) * kUnroll * (uint64_t)cbench_nthreads(s);
	cbench_check(s, root->cost[0] + root->cost[1] == want, "legacy root total");
	g_nodes.clear();
	g_leaf.clear();
}

void legacy_body(struct cbench_state *s, void *)
{
	/* lrusize large enough that nothing halves: the root's costs stay an
	 * exact count of the updates. */
	const uint64_t lrusize = (uint64_t)1 << 62;
	unsigned k = 0;
	uint64_t n;
	while (cbench_batch(s, &n)) {
		tb::LegacyNode *g = g_leaf[(size_t)cbench_thread_index(s)];
		for (uint64_t i = 0; i < n; i++)
			for (int j = 0; j < kUnroll; j++)
				tb::legacy_note_cost(g, (int)(k++ & 1), 0, 1, lrusize);
	}
	cbench_items(s, (int64_t)(cbench_iterations(s) * kUnroll));
}

} // namespace

CBENCH_INIT(register_rstat_baselines)
{
	struct cbench *b = cbench_setup(cbench_register("group_mod/legacy", legacy_body, nullptr),
					legacy_setup, legacy_teardown);
	cbench_arg(cbench_arg(cbench_arg(cbench_arg_name(cbench_env_threads(b), "depth"), 1), 4), 8);
}
