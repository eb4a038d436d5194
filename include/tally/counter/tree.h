/**
 * @file
 * tally/counter/tree.h - the counter tree (private; include
 * <tally/counter.h>): percpu_counter_tree's carry propagation (Mathieu
 * Desnoyers, 2025; the kernel series "mm: Fix OOM killer inaccuracy on
 * large many-core systems"), under tally_counter's per-CPU words.
 *
 * Level 0 is the counter's per-CPU words w (never reset), batch b = 2^k.
 * Above them, levels of shared node words, one cache line each: CPU slot
 * s's level-1 node is s >> 3 (eight CPUs share a line; the shared slot
 * joins node 0), a level-l node's parent is its index >> 3, up to the
 * first level with at most eight nodes, whose parent is the top word.
 * Level l carries in units of b_l = b * 8^l (b_0 = b).
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
 * the same crossing; tests/formal/tree.pml shows it), and an add returns
 * only after its carries reached the top.
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

/* Words per node: one cache line each (no two nodes' writers share one). */
#define TALLY__TREE_STRIDE (TALLY_CACHELINE / sizeof(tally_uword))

struct tally__counter_tree {
	tally_uword *nodes;                      /* every level's nodes, then the top */
	unsigned levels;                         /* node levels (0: flat counter) */
	unsigned first[TALLY__TREE_LEVELS + 1];  /* index of level l + 1's node 0; [levels]: top */
};

/* Node levels for n CPU slots: up to the first level with <= 8 nodes. */
TALLY__INLINE unsigned tally__tree_levels(unsigned n)
{
	unsigned l = 0;
	do {
		n = (n + (1u << TALLY__TREE_SHIFT) - 1u) >> TALLY__TREE_SHIFT;
		l++;
	} while (n > (1u << TALLY__TREE_SHIFT) && l < TALLY__TREE_LEVELS);
	return l;
}

/* Lay out t's nodes for n CPU slots and error bound E for batch b; the
 * nodes are allocated by the caller (tally__tree_nodes(t) of them). 0, or
 * -EINVAL when the top unit or E would not fit a tally_sword. */
static inline int tally__tree_layout(struct tally__counter_tree *t, unsigned n, tally_sword b,
				     tally_sword *bound)
{
	unsigned l, nodes = n, at = 0;
	tally_sword unit = b, e;
	t->levels = tally__tree_levels(n);
	/* E = 1 + (n + 1) * (b - 1) + sum of nodes_l * (b_l - b_(l-1)) */
	if (b > TALLY_SWORD_MAX / ((tally_sword)n + 1))
		return -EINVAL;
	e = 1 + ((tally_sword)n + 1) * (b - 1);
	for (l = 0; l < t->levels; l++) {
		nodes = (nodes + (1u << TALLY__TREE_SHIFT) - 1u) >> TALLY__TREE_SHIFT;
		t->first[l] = at;
		at += nodes;
		if (unit > TALLY_SWORD_MAX / 8 / (tally_sword)nodes)
			return -EINVAL;
		e += (tally_sword)nodes * 7 * unit; /* b_l - b_(l-1) = 7 * b_(l-1) */
		if (e < 0 || e > TALLY_SWORD_MAX / 2)
			return -EINVAL;
		unit *= 8;
	}
	t->first[t->levels] = at;
	*bound = e;
	return 0;
}

/* Nodes of t, the top included. */
TALLY__INLINE unsigned tally__tree_nodes(const struct tally__counter_tree *t)
{
	return t->first[t->levels] + 1u;
}

TALLY__INLINE tally_uword *tally__tree_node(const struct tally__counter_tree *t, unsigned i)
{
	return t->nodes + (size_t)i * TALLY__TREE_STRIDE;
}

/* The top word: the approximate sum (without the counter's initial). */
TALLY__INLINE tally_uword *tally__tree_top(const struct tally__counter_tree *t)
{
	return tally__tree_node(t, t->first[t->levels]);
}

/*
 * Pass the carry of an add on slot s (of nr CPU slots; s == nr is the
 * shared slot) that left its word at nv after adding d, with mask =
 * ~(b - 1), up the tree. Lock-free (one atomic add per level it reaches);
 * relaxed: each carry is computed from its own RMW's result.
 */
static inline void tally__tree_carry(const struct tally__counter_tree *t, unsigned s,
				     unsigned nr, tally_uword nv, tally_uword d, tally_uword mask)
{
	tally_uword carry = (nv & mask) - ((nv - d) & mask);
	unsigned l, idx = s < nr ? s : 0u;
	for (l = 0; l < t->levels && carry; l++) {
		idx >>= TALLY__TREE_SHIFT;
		nv = tally__add(tally__tree_node(t, t->first[l] + idx), carry);
		mask <<= TALLY__TREE_SHIFT;
		carry = (nv & mask) - ((nv - carry) & mask);
	}
	if (carry)
		tally__add(tally__tree_top(t), carry);
}

#endif /* TALLY_COUNTER_TREE_H */
