/**
 * @file
 * tally/counter/tree.h - the counter tree (private; include
 * <tally/counter.h>): percpu_counter_tree's carry propagation (Mathieu
 * Desnoyers, 2025; the kernel series "mm: Fix OOM killer inaccuracy on
 * large many-core systems"), under tally_counter's per-CPU words.
 *
 * Level 0 is the counter's per-CPU words w (never reset), batch b = 2^k.
 * Above them, levels of shared node words, n_1 = ceil(slots / 8) nodes at
 * level 1 and n_l = ceil(n_(l-1) / 8) at level l, up to the first level
 * with at most eight nodes, whose parent is the top word (the counter's
 * shared count). Level l carries in units of b_l = b * 8^l (b_0 = b). The
 * nodes interleave: CPU slot s's level-1 node is s mod n_1 (the shared
 * slot joins node 0), a level-l node k's parent is k mod n_(l+1). Each
 * node has at most eight children (s < slots <= 8 n_1), as when
 * consecutive CPUs are grouped (s >> 3, this tree's mapping before), and
 * the bound below depends only on the levels' node counts, so it is the
 * same; what changes is which CPUs share a node. Consecutive CPUs are the
 * ones that run together: a cpuset or a taskset range is a run of CPU
 * numbers, and a small machine's CPUs are all consecutive. Grouped,
 * CPUs 0 and 1 carry into one level-1 node every b adds each, and
 * that contended line made a two-thread add at 256 slots 1.5-1.9x the
 * flat add on a two-CPU machine; interleaved, 1.1x (bench_counter256,
 * bench/RESULTS.md). Interleaved, any n_1 consecutive CPUs carry into
 * different level-1 nodes, any n_2 into different level-2 nodes, and so
 * on: any n_L consecutive CPUs (L levels; 8 at 64 slots, 4 at 256) meet
 * only at the top, which a CPU reaches once per b * 8^L units. The price
 * is on the other side: the CPUs that share a level-1 node are n_1 apart
 * (0, 32, 64, ... at 256 slots), often another core complex or socket, so
 * a host whose CPUs all add to one counter moves its level-1 lines
 * farther than grouping consecutive CPUs would (at the same rate, 1/b of
 * the adds).
 *
 * Where the nodes are: in the per-CPU arena's node arena
 * (TALLY__ARENA_NODES, tally/pcpu/arena.h), one object of a word per node
 * level in every region, and node k of level l (l = 1..levels) in region
 * k, the region of the first slot it covers, at word l - 1. So a node
 * costs memory only once a CPU carried into it (demand-zero pages: a
 * region's page is resident only where some CPU wrote it), and at 256
 * slots the nodes take 16 bytes in each of 32 regions (512 bytes when
 * every CPU carried; the level-2 words of regions 4 and up are never
 * written) instead of a cache line each. The node words of many counters
 * pack into the lines of one region, and so do one counter's levels in
 * regions 0 .. n_L - 1. A line of region r is written only by the CPUs of
 * its nodes' spans (the slots s with s mod n_1 = r at level 1, with (s
 * mod n_1) mod n_2 = r at level 2, ...) and only when they carry: as many
 * node writes as with a line per node (at most U / b + U / 8b + ... < 8U
 * / 7b for U units of one sign on a CPU), but writes to different
 * counters' nodes, or to one counter's levels, can now meet on one line.
 * That false sharing is among CPUs that share a node anyway, at the rate
 * of carries, 1/b of the adds: at worst, counters each added to by
 * another CPU of one node's span carry as if those CPUs added to one
 * counter (bench/RESULTS.md, counter_add/tally_tree32_own). A node word
 * never shares a line with a CPU's own words (the hot arena) nor with the
 * cold arena's bases and group slots (whose lines keep only their CPU's
 * and fold_all's writes). Against that, a line per node cost 128 bytes
 * for each node of every counter, resident from init: 4,736 bytes at 256
 * slots.
 *
 * The carry rule: an add that moves a word v across a multiple of b_l,
 * from old to new (the value its own RMW returned: the rseq add, or the
 * atomic add on a node), passes (new & ~(b_l - 1)) - (old & ~(b_l - 1))
 * (modular: a multiple of b_l, of either sign) to the parent with one
 * atomic add, whose returned value decides the next carry the same way.
 * Nothing else writes a node or the top. So, once every add has
 * returned, by induction from the leaves (each word starts at 0 and every
 * change of its aligned part was passed up exactly once):
 *   node = sum over its children c of (c & ~(b_child - 1))    (mod 2^W)
 *   top  = sum of w over every slot - sum of the residues,
 * where a word's residue is v & (b_l - 1): in [0, b) for a CPU word, and
 * a multiple of b_(l-1) below b_l, so at most b_l - b_(l-1), for a node.
 * Hence 0 <= sum - read <= E - 1 with
 *   E = 1 + slots * (b - 1) + sum over levels l >= 1 of nodes_l * (b_l - b_(l-1))
 * (tally_counter_error_bound()): the O(1) read never exceeds the exact
 * value, whatever the signs of the adds, and trails it by less than E.
 * At 256 CPU slots, b = 32: 257 * 31 + 32 * 224 + 4 * 1792 + 1 = 22,304
 * (percpu_counter_tree states levels * N * b = 24,576 for it). No fence
 * is needed: every carry is computed from the value its own RMW returned
 * (a reload would let two carriers of one node both pass, or neither,
 * the same crossing; tests/formal/fold.pml -DTREE -DTREE_RELOAD shows
 * it), and an add returns only after its carries reached the top.
 *
 * Writes to the top line: a level-L node (L levels of nodes) passes a
 * carry only when it moves across a multiple of b * 8^L; for adds of one
 * sign that is at most (adds' total) / (b * 8^L) writes: for unit adds at
 * 256 slots, b = 32 (L = 2), at most 1e6 / 2048 = 488 per million adds
 * (the flat counter at batch 32: 31,250; at its default batch 1024 for
 * 256 slots, 977, with a bound of 526,336).
 *
 * tally_counter_fold_all() cannot move a residue (the words belong to
 * their CPUs' adds), so a tree counter adds a correction to its read: the
 * fold sets it to sum - top, clamped to [0, E - 1], which is exact while
 * adds are quiescent and keeps |read - sum| < E whatever runs beside it.
 */
#ifndef TALLY_COUNTER_TREE_H
#define TALLY_COUNTER_TREE_H

#if !defined(TALLY__COUNTER_INSIDE)
#  error "tally/counter/tree.h is private: include <tally/counter.h>"
#endif

/* Children per node (as a shift), node levels at most. */
#define TALLY__TREE_SHIFT 3u
#define TALLY__TREE_LEVELS 6u

struct tally__counter_tree {
	struct tally__pcpu nodes; /* node arena: a word per level in every region */
	unsigned levels;          /* node levels (0: flat counter) */
};

/* The nodes of the level above one of n nodes (or CPU slots). */
TALLY__INLINE unsigned tally__tree_up(unsigned n)
{
	return (n + (1u << TALLY__TREE_SHIFT) - 1u) >> TALLY__TREE_SHIFT;
}

/* Node levels for n CPU slots: up to the first level with <= 8 nodes. */
TALLY__INLINE unsigned tally__tree_levels(unsigned n)
{
	unsigned l = 0;
	do {
		n = tally__tree_up(n);
		l++;
	} while (n > (1u << TALLY__TREE_SHIFT) && l < TALLY__TREE_LEVELS);
	return l;
}

/* The levels of a tree for n CPU slots and its error bound E for batch b
 * (t->nodes is allocated by the caller: t->levels words per region). 0,
 * or -EINVAL when the top unit or E would not fit a tally_sword. */
static inline int tally__tree_layout(struct tally__counter_tree *t, unsigned n, tally_sword b,
				     tally_sword *bound)
{
	unsigned l, nodes = n;
	tally_sword unit = b, e;
	t->levels = tally__tree_levels(n);
	/* E = 1 + (n + 1) * (b - 1) + sum of nodes_l * (b_l - b_(l-1)) */
	if (b > TALLY_SWORD_MAX / ((tally_sword)n + 1))
		return -EINVAL;
	e = 1 + ((tally_sword)n + 1) * (b - 1);
	for (l = 0; l < t->levels; l++) {
		tally_sword share;
		nodes = tally__tree_up(nodes);
		if (unit > TALLY_SWORD_MAX / 8 / (tally_sword)nodes)
			return -EINVAL;
		share = (tally_sword)nodes * 7 * unit; /* b_l - b_(l-1) = 7 * b_(l-1) */
		/* e + share <= TALLY_SWORD_MAX / 2, tested without forming the
		 * sum (a signed overflow; e <= TALLY_SWORD_MAX here). */
		if (e > TALLY_SWORD_MAX / 2 || share > TALLY_SWORD_MAX / 2 - e)
			return -EINVAL;
		e += share;
		unit *= 8;
	}
	*bound = e;
	return 0;
}

/* Node k of node level l (0: the level above the CPU words): in region
 * k, the region of the first slot it covers, at word l. */
TALLY__INLINE tally_uword *tally__tree_node(const struct tally__counter_tree *t, unsigned l,
					    unsigned k)
{
	return (tally_uword *)tally__pcpu_at(&t->nodes, k, (size_t)l * sizeof(tally_uword));
}

/*
 * Pass the carry of an add on slot s (s == t->nodes.nr: the shared slot)
 * that left its word at nv after adding d, with mask = ~(b - 1), up the
 * tree to top. Lock-free (one atomic add and one division per level it
 * reaches; a division is a few ns beside the atomic's 5-20, once per b
 * adds); relaxed: each carry is computed from its own RMW's result.
 */
static inline void tally__tree_carry(const struct tally__counter_tree *t, tally_uword *top,
				     unsigned s, tally_uword nv, tally_uword d, tally_uword mask)
{
	tally_uword carry = (nv & mask) - ((nv - d) & mask);
	unsigned l, n = t->nodes.nr, idx = s < n ? s : 0u;
	for (l = 0; l < t->levels && carry; l++) {
		n = tally__tree_up(n);
		idx %= n; /* interleaved: consecutive CPUs, different nodes */
		nv = tally__add(tally__tree_node(t, l, idx), carry);
		mask <<= TALLY__TREE_SHIFT;
		carry = (nv & mask) - ((nv - carry) & mask);
	}
	if (carry)
		tally__add(top, carry);
}

#endif /* TALLY_COUNTER_TREE_H */
