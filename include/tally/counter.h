/**
 * @file
 * tally/counter.h - tally_counter: one per-CPU counter with percpu_counter
 * semantics (kernel lib/percpu_counter.c), checked only where a carry
 * would happen (percpu_counter_tree, Mathieu Desnoyers, 2025).
 *
 *   struct tally_counter c;
 *   tally_counter_init(&c, 0, 0);     // batch 0: the default
 *   tally_counter_add(&c, 5);         // any thread, wait-free fast path
 *   tally_counter_read(&c);           // O(1), within the error bound
 *   tally_counter_sum(&c);            // exact, O(CPUs)
 *   tally_counter_sum_monotonic(&c);  // exact, unsigned: event counters
 *   tally_counter_read_monotonic(&c); // O(1), unsigned, raw: for deltas
 *   tally_counter_sum_and_reset(&c);  // exact, and 0 again: one cut
 *   tally_counter_set(&c, 100);       // percpu_counter_set, no add lost
 *   tally_counter_destroy(&c);
 *
 * Layout: per CPU a never-reset word w (every add lands in exactly one w)
 * and a base, the value of w up to which the CPU's adds were folded into
 * the shared count. The CPU's local count is w - base. Because adds never
 * move, sum = initial + sum of w over CPUs is exact whatever folds are
 * running: nothing can be lost or counted twice, and sum needs no lock
 * (the fold and its conservation argument: tally__pcpu_fold in pcpu.h).
 *
 * When an add looks at the base: the batch is a power of two, and an add
 * checks whether to fold only when it moves w across a multiple of batch
 * (a carry out of the low bits, as percpu_counter_tree propagates one).
 * The per-CPU add returns the word's new value, so the check is one XOR
 * and AND of values the add already has: no load of the base, no barrier
 * on the fast path. An add that carries runs the slow path: a full
 * fence, then the kernel's rule: fold if |w - base| >= batch (base = w,
 * count += local). So a counter moving one way folds every batch adds per
 * CPU, as the kernel's does, and one that wanders around a multiple of
 * batch does not fold on each crossing.
 *
 * Error bound (quiescent: every add has returned): for each slot,
 * |w - base| < 2 * batch, so |read - sum| < 2 * batch * S, S = CPU slots
 * + the shared slot (tally_counter_error_bound()). Why: let X be the last
 * successful fold of the slot (it set base = T) and w_X the value of w
 * its check after that fold loaded (pcpu.h: a fence, then fresh loads; X
 * returns only once |w_X - T| < its limit, batch or 1). Take any add A
 * whose store of w comes after w_X. A runs "store w; fence; load base" on
 * its slow path and X runs "CAS base; fence; load w": with the two
 * seq_cst fences, either X's load sees A's store (then A's store is not
 * after w_X) or A's load of base sees T (the store-buffering pair of the
 * plain rseq store and a fold from another CPU is closed by A's fence).
 * So every add after w_X that carries sees base = T, and does not fold (X
 * is the last fold): |w_A - T| < batch for the w_A it loaded. If no add
 * after w_X carried, the final w is in w_X's batch-aligned block; else it
 * is in the block of the last add that carried, whose w_A is in that
 * block too. Either way final w is within batch - 1 of a value within
 * batch - 1 of T. A slot never folded is the case T = 0, w_X = 0 (its
 * initial state, seen by every add after the allocation). The atomic
 * path (TALLY_PCPU_MODE=1, the shared slot) is the same with a locked
 * RMW as the store.
 * For a counter that only grows, base <= w always, so read <= sum and
 * read never goes back.
 *
 * A counter tree (tally_counter_init_tree(), and tally_counter_init()
 * with batch 0 from TALLY_COUNTER_TREE_SLOTS CPU slots up) keeps the same
 * per-CPU words and fast path, but an add that carries passes the change
 * of its word's batch-aligned part up a tree of shared words instead of
 * folding (tally/counter/tree.h: the rule, the bound and its argument,
 * the top's write rate). Its read never exceeds the exact value and
 * trails it by less than tally_counter_error_bound(): 0 <= sum - read < E,
 * whatever the signs of the adds, until a tally_counter_fold_all(), after
 * which |read - sum| < E.
 */
#ifndef TALLY_COUNTER_H
#define TALLY_COUNTER_H

#include <tally/monotonic.h>
#include <tally/pcpu.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * TALLY_COUNTER_TREE_SLOTS - from this many CPU slots (tally_cpu_slots())
 * up, tally_counter_init() with batch 0 makes a counter tree
 * (tally_counter_init_tree() with its default batch): its O(1) read stays
 * within a few levels x slots x 32, where the flat counter's default
 * batch would give 2 x 1024 x slots. Below it, the flat counter.
 */
#ifndef TALLY_COUNTER_TREE_SLOTS
#  define TALLY_COUNTER_TREE_SLOTS 64
#endif

/**
 * TALLY_COUNTER_TREE_BATCH - a counter tree's default level-0 batch (a
 * power of two): percpu_counter_tree's 32.
 */
#ifndef TALLY_COUNTER_TREE_BATCH
#  define TALLY_COUNTER_TREE_BATCH 32
#endif

#define TALLY__COUNTER_INSIDE 1
#include <tally/counter/tree.h>
#undef TALLY__COUNTER_INSIDE

/*
 * Where the words are (tally/pcpu/arena.h): per CPU slot, w in the hot
 * arena (8 bytes, written by tally__pcpu_add only: that CPU's line, dense
 * with other counters' w) and base in the cold arena (8 bytes, moved by
 * folds, which fold_all runs from any thread); the shared count (initial
 * + everything folded) in the shared arena, among other counts, which
 * folds on every CPU add to. So an add touches one line that only its CPU
 * writes, a fold from elsewhere never evicts it, and a counter costs
 * 16 bytes per slot plus one shared word. A counter tree has no bases:
 * its shared word is the top, and its nodes are in the node arena
 * (tally/counter/tree.h).
 */

/** A per-CPU counter (percpu_counter): see the top of this file.
 * Opaque: set up with tally_counter_init(), then only the tally_counter_*
 * calls. */
struct tally_counter {
	/* private: use the tally_counter_* calls */
	/* The offset: value = this + the sum of every slot's w. init's value,
	 * then what the last set or reset chose; stored release under the
	 * set lock, loaded acquire by sum. */
	tally_uword tally__initial;
	tally_sword tally__batch;   /* a power of two */
	tally_uword tally__low;     /* batch - 1: the bits below a carry */
	tally_sword tally__bound;   /* tally_counter_error_bound() */
	tally_uword *tally__top;    /* what read() loads: the shared count, or the tree's top */
	tally_uword tally__adj;     /* tree: fold_all's correction of read (flat: 0) */
	struct tally__pcpu tally__pcpu;   /* per slot: w, never reset; tracked (written bound) */
	struct tally__pcpu tally__shared; /* one word: the shared count, or the tree's top */
	/* levels 0: a flat counter, whose nodes object holds per slot the
	 * base (w up to the last fold; CAS only) in the cold arena; else the
	 * tree's nodes. A base or node is written only for a slot whose w was
	 * (or for the shared slot): their free uses w's written bound. */
	struct tally__counter_tree tally__tree;
	unsigned tally__setting; /* set/reset lock: 1 while one runs */
};

TALLY__INLINE tally_uword *tally__counter_w(const struct tally_counter *c, unsigned s)
{
	return (tally_uword *)tally__pcpu_at(&c->tally__pcpu, s, 0);
}

TALLY__INLINE tally_uword *tally__counter_base(const struct tally_counter *c, unsigned s)
{
	return (tally_uword *)tally__pcpu_at(&c->tally__tree.nodes, s, 0); /* flat: the bases */
}

/* The shared count (see above). */
TALLY__INLINE tally_uword *tally__counter_count(const struct tally_counter *c)
{
	return (tally_uword *)(void *)c->tally__shared.base;
}

/* Smallest power of two >= n (n <= 2^(W-2)). */
TALLY__INLINE tally_sword tally__pow2_ceil(tally_sword n)
{
	tally_sword p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

/**
 * tally_counter_default_batch - the batch for this machine: the kernel's
 * max(TALLY_COUNTER_MIN_BATCH, 2 * CPU slots), raised to
 * TALLY_COUNTER_BATCH_FLOOR, rounded up to a power of two.
 */
static inline tally_sword tally_counter_default_batch(void)
{
	tally_sword n = 2 * (tally_sword)tally__nr_cpu_slots();
	if (n < TALLY_COUNTER_MIN_BATCH)
		n = TALLY_COUNTER_MIN_BATCH;
	if (n < TALLY_COUNTER_BATCH_FLOOR)
		n = TALLY_COUNTER_BATCH_FLOOR;
	return tally__pow2_ceil(n);
}

/**
 * tally_counter_max_batch - the largest batch tally_counter_init() takes
 * on this machine: the largest power of two b whose error bound 2 * b *
 * slots (CPU slots + the shared slot) is at most TALLY_SWORD_MAX, so that
 * tally_counter_error_bound() is a bound and not a saturated value. About
 * 2^(W-2) / slots. Any thread; reads the CPU slot count.
 */
static inline tally_sword tally_counter_max_batch(void)
{
	tally_sword lim = TALLY_SWORD_MAX / (2 * ((tally_sword)tally__nr_cpu_slots() + 1));
	tally_sword b = 1;
	while (b <= lim / 2)
		b <<= 1;
	return b;
}

/**
 * tally_counter_init_tree - set c up as a counter tree with value initial
 * (percpu_counter_tree; tally/counter/tree.h): each CPU's word carries,
 * when an add moves it across a multiple of batch, into a word shared by
 * at most eight CPUs (interleaved: consecutive CPUs carry into different
 * words), which carries into the next level the same way (units of
 * batch * 8^l), up to the top word that read() loads. So the O(1) read is
 * never above the exact value and trails it by less than
 * tally_counter_error_bound(c) = 1 + slots * (batch - 1) + the nodes'
 * share (22,304 at 256 CPU slots, batch 32), few adds touch a shared line
 * (one per batch units on a CPU) and the top is written once per batch *
 * 8^levels units (488 times per million unit adds at 256 slots, batch
 * 32). The add's fast path is the flat counter's; tally_counter_fold_all
 * corrects read by a clamped amount (the residues stay in the words).
 * batch: 1.. (rounded up to a power of two; refused when the top's unit
 * or the bound would not fit a tally_sword), or 0 for
 * TALLY_COUNTER_TREE_BATCH. Memory: the per-CPU words and the shared
 * count (the top), plus a word per node level in the region of every
 * eighth slot, resident only where a CPU carried into it (at 256 slots:
 * 16 bytes in each of 32 regions, 512 bytes once every CPU carried).
 * Returns 0, -EINVAL (NULL c, batch out of range; c untouched) or -ENOMEM.
 * Not concurrent with any other call on c.
 */
static inline int tally_counter_init_tree(struct tally_counter *c, tally_sword initial,
					  tally_sword batch)
{
	struct tally__counter_tree t;
	tally_sword bound;
	int err;
	if (tally__bad(!c || batch < 0 || batch > TALLY_SWORD_MAX / 2))
		return -EINVAL;
	batch = batch ? tally__pow2_ceil(batch) : TALLY_COUNTER_TREE_BATCH;
	if (tally__bad(tally__tree_layout(&t, tally__nr_cpu_slots(), batch, &bound) != 0))
		return -EINVAL;
	memset(&t.nodes, 0, sizeof(t.nodes)); /* freed below if its allocation fails */
	err = tally__pcpu_alloc_tracked(&c->tally__pcpu, sizeof(tally_uword), TALLY__ARENA_HOT);
	if (err)
		return err;
	err = tally__pcpu_alloc_tracked(&t.nodes, t.levels * sizeof(tally_uword), TALLY__ARENA_NODES);
	if (!err)
		err = tally__pcpu_alloc_kind(&c->tally__shared, sizeof(tally_uword),
					     TALLY__ARENA_SHARED); /* the top */
	if (err) {
		tally__pcpu_free(&t.nodes);
		tally__pcpu_free(&c->tally__pcpu);
		return err;
	}
	c->tally__tree = t;
	c->tally__top = tally__counter_count(c);
	if (initial) /* else leave the shared arena's page untouched */
		*c->tally__top = (tally_uword)initial;
	c->tally__initial = (tally_uword)initial;
	c->tally__setting = 0;
	c->tally__batch = batch;
	c->tally__low = (tally_uword)batch - 1u;
	c->tally__bound = bound;
	c->tally__adj = 0;
	return 0;
}

/**
 * tally_counter_is_tree - 1 if c is a counter tree (tally_counter_init_tree,
 * or tally_counter_init with batch 0 on many CPUs), 0 if flat or NULL.
 */
TALLY__INLINE int tally_counter_is_tree(const struct tally_counter *c)
{
	return c && c->tally__tree.levels != 0;
}

/**
 * tally_counter_init - set c up with value initial.
 * batch: fold threshold, 1..tally_counter_max_batch(), rounded up to a
 * power of two (tally_counter_batch() tells), or 0 for the default. A
 * larger batch is refused: its error bound would not fit a tally_sword.
 * With batch 0 on a machine with at least TALLY_COUNTER_TREE_SLOTS CPU
 * slots, c is a counter tree (tally_counter_init_tree(c, initial, 0)):
 * every call works the same, with the tree's bound.
 * Returns 0, -EINVAL (NULL c, batch out of range; c untouched) or -ENOMEM.
 * Not concurrent with any other call on c.
 */
static inline int tally_counter_init(struct tally_counter *c, tally_sword initial,
				     tally_sword batch)
{
	int err;
	if (tally__bad(!c || batch < 0 || batch > tally_counter_max_batch()))
		return -EINVAL;
	if (!batch && tally__nr_cpu_slots() >= TALLY_COUNTER_TREE_SLOTS)
		return tally_counter_init_tree(c, initial, 0);
	batch = batch ? tally__pow2_ceil(batch) : tally_counter_default_batch();
	/* c may hold garbage: a failure below frees only what it allocated */
	memset(&c->tally__tree, 0, sizeof(c->tally__tree)); /* flat: levels 0 */
	memset(&c->tally__shared, 0, sizeof(c->tally__shared));
	err = tally__pcpu_alloc_tracked(&c->tally__pcpu, sizeof(tally_uword), TALLY__ARENA_HOT);
	if (err)
		return err;
	err = tally__pcpu_alloc_tracked(&c->tally__tree.nodes, sizeof(tally_uword), TALLY__ARENA_COLD);
	if (!err)
		err = tally__pcpu_alloc_kind(&c->tally__shared, sizeof(tally_uword),
					     TALLY__ARENA_SHARED);
	if (err) {
		tally__pcpu_free(&c->tally__tree.nodes);
		tally__pcpu_free(&c->tally__pcpu);
		return err;
	}
	c->tally__top = tally__counter_count(c);
	if (initial) /* else leave the shared arena's page untouched */
		*c->tally__top = (tally_uword)initial;
	c->tally__initial = (tally_uword)initial;
	c->tally__setting = 0;
	c->tally__batch = batch;
	c->tally__low = (tally_uword)batch - 1u;
	c->tally__bound = batch * 2 * (tally_sword)tally__pcpu_slots(&c->tally__pcpu);
	c->tally__adj = 0;
	return 0;
}

/** tally_counter_destroy - free c's per-CPU area. NULL is a no-op.
 * Not concurrent with any other call on c. Visits (and zeroes for reuse)
 * only the slots an add wrote and the shared slot: O(CPUs that added). */
static inline void tally_counter_destroy(struct tally_counter *c)
{
	unsigned lim;
	if (!c)
		return;
	lim = tally__pcpu_lim(&c->tally__pcpu);
	tally__pcpu_free(&c->tally__pcpu);
	tally__pcpu_free(&c->tally__shared);
	/* A base is written by a fold of its slot, a slot below lim or the
	 * shared one; a node k of a tree by a carry from a slot s >= k (k =
	 * s mod n_1, mod n_2, ...), or from the shared slot (node 0). */
	if (c->tally__tree.levels && !lim)
		lim = 1;
	if (c->tally__tree.nodes.chunk && lim > c->tally__tree.nodes.lim)
		__atomic_store_n(&c->tally__tree.nodes.lim, lim, __ATOMIC_RELAXED);
	tally__pcpu_free(&c->tally__tree.nodes);
}

/*
 * Fold slot s's local count into the shared count while |w - base| >=
 * limit (tally__pcpu_fold: lock-free, conserving). The slow path of an add
 * that carried (limit = batch) and of fold_all (limit 1). The fence orders
 * the caller's add before the loads of the fold (see the error bound at
 * the top of this file); it costs nothing on the fast path.
 */
TALLY__COLD void tally__counter_fold_slot(struct tally_counter *c, unsigned s,
					  tally_sword limit)
{
	tally__fence();
	tally__pcpu_fold(tally__counter_w(c, s), tally__counter_base(c, s), tally__counter_count(c), limit,
			 limit > 1 ? TALLY__FOLD_AT : TALLY__FOLD_ALL);
}

/* The slow path of an add that carried: the tree's carry, or the flat
 * counter's fence and fold. */
TALLY__COLD void tally__counter_carried(struct tally_counter *c, unsigned s, tally_uword nv,
					tally_uword delta)
{
	if (c->tally__tree.levels)
		tally__tree_carry(&c->tally__tree, c->tally__top, s, nv, delta, ~c->tally__low);
	else
		tally__counter_fold_slot(c, s, c->tally__batch);
}

/**
 * tally_counter_add - add delta (any sign) to c.
 * Any thread, concurrently with every call but init/destroy. Wait-free
 * unless it carries (one per-CPU add; the carry check uses the values the
 * add returned). An add that moves its CPU's word across a multiple of
 * batch runs the slow path: a fence and, when the local count reached
 * batch, a fold (a CAS and an atomic add on the shared count; lock-free:
 * the CAS is retried only after another fold of this slot succeeded).
 * Relaxed: orders nothing around it. A NULL c is ignored.
 * Inlined at every call site unless TALLY_INLINE / TALLY_EXTERN say
 * otherwise (config.h).
 */
#if TALLY_EXTERN /* a prototype for the one definition (TALLY_IMPLEMENTATION) */
TALLY__API void tally_counter_add(struct tally_counter *c, tally_sword delta);
#endif
#if TALLY__API_BODY
TALLY__API void tally_counter_add(struct tally_counter *c, tally_sword delta)
{
	tally_uword nv, *w, low;
	if (tally__bad(!c))
		return;
	low = c->tally__low; /* loaded before the section, beside its fields */
	nv = tally__pcpu_add_small(&c->tally__pcpu, 0, (tally_uword)delta, &w);
	/* Did w cross a multiple of batch? A bit above the low ones changed
	 * between old = nv - delta (modular) and nv; for an increment, nv is
	 * a multiple of batch (one test against the mask). */
	if (tally__unlikely(__builtin_constant_p(delta) && delta == 1
				    ? (nv & low) == 0
				    : (nv ^ (nv - (tally_uword)delta)) > low))
		tally__counter_carried(c, tally__pcpu_slot_of(&c->tally__pcpu, w, 0), nv,
				       (tally_uword)delta);
}
#endif

/**
 * tally_counter_read - the approximate value, O(1): what has been folded
 * (a tree: what reached the top).
 * Error: |read - sum| < tally_counter_error_bound(c) (flat: 2 * batch *
 * slots), plus the adds in flight (threads sharing a CPU can each be
 * mid-add). A flat counter that only grows reads at most its sum and
 * never goes back; a tree reads at most its sum whatever the signs, and
 * a grow-only tree never goes back, until a tally_counter_fold_all()
 * (which moves a tree's read by less than the bound, either way) or a
 * set or reset (which moves read with the value).
 * Any thread; wait-free.
 */
TALLY__INLINE tally_sword tally_counter_read(const struct tally_counter *c)
{
	if (tally__bad(!c))
		return 0;
	return tally__to_signed(tally__load(c->tally__top) + tally__load(&c->tally__adj));
}

/**
 * tally_counter_error_bound - while adds are quiescent |read - sum| is
 * below it. Flat: 2 * batch * slots (CPU slots + the shared slot; see the
 * top of this file), exact: init refuses a batch whose bound would not
 * fit (tally_counter_max_batch()). A tree: 1 + slots * (batch - 1) + the
 * nodes' share (tally/counter/tree.h; 22,304 at 256 CPU slots, batch 32).
 * NULL c: 0. Any thread; wait-free.
 */
TALLY__INLINE tally_sword tally_counter_error_bound(const struct tally_counter *c)
{
	if (tally__bad(!c))
		return 0;
	return c->tally__bound;
}

/** tally_counter_batch - the fold threshold c uses (a power of two).
 * NULL c: 0. */
TALLY__INLINE tally_sword tally_counter_batch(const struct tally_counter *c)
{
	return tally__bad(!c) ? 0 : c->tally__batch;
}

/** tally_counter_read_positive - read, negative values as 0. */
TALLY__INLINE tally_uword tally_counter_read_positive(const struct tally_counter *c)
{
	return tally_clamp(tally_counter_read(c));
}

/**
 * tally_counter_read_monotonic - read() as the raw unsigned word, never
 * clamped, plus TALLY_MONOTONIC_BIAS (0 unless TALLY_WRAP_EARLY): for event
 * counters sampled often and cheaply, subtracted with tally_delta(). O(1).
 * Bound, modulo 2^W: read_monotonic - TALLY_MONOTONIC_BIAS is within
 * tally_counter_error_bound(c) of tally_counter_sum_monotonic(c) while adds
 * are quiescent (plus the adds in flight otherwise), so the delta of two
 * samples is within the bound of the events between them. A counter that
 * only grows lags its exact value by less than the bound and never goes
 * back (tally_after() orders its samples while fewer than 2^(W-1) events
 * lie between them), across 2^(W-1) and 2^W alike (a tree: until a
 * tally_counter_fold_all(), see tally_counter_read()).
 * Any thread; wait-free; relaxed. NULL c: 0.
 */
TALLY__INLINE tally_uword tally_counter_read_monotonic(const struct tally_counter *c)
{
	if (tally__bad(!c))
		return 0;
	return tally__load(c->tally__top) + tally__load(&c->tally__adj) + TALLY_MONOTONIC_BIAS;
}

/**
 * tally_counter_sum_monotonic - the exact value as unsigned, modulo 2^W:
 * (tally_uword)tally_counter_sum(c). The reader for event counters: no
 * cast and no clamping, so a count past TALLY_SWORD_MAX stays right until
 * it wraps at 2^W, and tally_delta() of two samples is exactly the events
 * between them while fewer than 2^W happened. An exact value: no
 * TALLY_MONOTONIC_BIAS. Contract as tally_counter_sum (wait-free, O(CPU
 * slots that added), any thread). NULL c: 0.
 */
static inline tally_uword tally_counter_sum_monotonic(const struct tally_counter *c)
{
	if (tally__bad(!c))
		return 0;
	/* Acquire: pairs with the release store of a set or reset, so the
	 * words summed are at least as new as the ones its cut loaded. */
	return tally__load_acq(&c->tally__initial) + tally__pcpu_sum(&c->tally__pcpu, 0);
}

/**
 * tally_counter_sum - the exact value: initial plus every completed add.
 * Wait-free: one relaxed load per CPU slot that has added to c (below its
 * written bound, tally/pcpu.h) and one for the shared slot, so with many
 * slots and few CPUs a sum costs the CPUs that added, not the slots there
 * are. Any thread, beside any call but init/destroy. With adds running it returns initial plus a set of
 * adds that includes every add completed before the call and none that
 * started after it returned. Modular in 2^W.
 */
static inline tally_sword tally_counter_sum(const struct tally_counter *c)
{
	return tally__to_signed(tally_counter_sum_monotonic(c));
}

/** tally_counter_sum_positive - sum, negative values as 0. */
static inline tally_uword tally_counter_sum_positive(const struct tally_counter *c)
{
	return tally_clamp(tally_counter_sum(c));
}

/**
 * tally_counter_fold_all - fold every CPU's local count into the shared
 * count, so read == sum while adds are quiescent. Lock-free; any thread.
 * A tree's per-CPU and node residues cannot move: it sets read's
 * correction to sum - top, clamped to [0, bound - 1] (exact while adds
 * are quiescent; with adds beside it |read - sum| stays below the bound).
 */
static inline void tally_counter_fold_all(struct tally_counter *c)
{
	unsigned s, n;
	if (tally__bad(!c))
		return;
	if (c->tally__tree.levels) {
		/* The residues cannot move: correct read by them, clamped to
		 * [0, bound - 1] (tally/counter/tree.h). */
		tally_sword r = tally__to_signed(tally_counter_sum_monotonic(c) -
						 tally__load(c->tally__top));
		r = r < 0 ? 0 : r >= c->tally__bound ? c->tally__bound - 1 : r;
		tally__store(&c->tally__adj, (tally_uword)r);
		return;
	}
	/* The slots an add wrote, and the shared slot: a base moves only
	 * where its w did. */
	n = tally__pcpu_lim(&c->tally__pcpu);
	for (s = tally__pcpu_first(&c->tally__pcpu, n); s <= c->tally__pcpu.nr;
	     s = tally__pcpu_next(&c->tally__pcpu, s, n))
		tally__counter_fold_slot(c, s, 1);
}

/**
 * tally_counter_compare - sign of (value - rhs): -1, 0 or 1, where value
 * is tally_counter_sum()'s signed value.
 * Decides from read() when that cannot be wrong, else from the exact sum
 * (__percpu_counter_compare). While adds are quiescent the value lies
 * within the error bound e of read, modulo 2^W. In the signed order
 * (offset binary: x + 2^(W-1) as unsigned) that window can cross the wrap
 * from TALLY_SWORD_MAX to TALLY_SWORD_MIN, where "read is far above rhs"
 * says nothing: a value just past read can be the most negative one. So
 * read decides only when it is more than e away from rhs and at least e
 * away from the wrap on the side towards which the value could pass it
 * (a read more than e above rhs must be at most TALLY_SWORD_MAX - e; one
 * more than e below, at least TALLY_SWORD_MIN + e). Then every value in
 * the window has the sign read has; otherwise the exact sum decides.
 * Any thread; wait-free (O(CPUs) when the sum decides). A NULL c
 * compares as 0. The exact sign while adds are quiescent; with adds
 * running, read's window widens by the adds in flight (as read's bound
 * does), and the sum is what tally_counter_sum() would return.
 */
static inline int tally_counter_compare(const struct tally_counter *c, tally_sword rhs)
{
	/* Offset binary: the signed order as the unsigned order. */
	const tally_uword half = (tally_uword)TALLY_SWORD_MAX + 1u;
	tally_uword r, h, e;
	tally_sword sum;
	if (tally__bad(!c))
		return 0;
	r = (tally_uword)tally_counter_read(c) + half;
	h = (tally_uword)rhs + half;
	e = (tally_uword)tally_counter_error_bound(c);
	if (r > h && r - h > e && TALLY_UWORD_MAX - r >= e)
		return 1;
	if (r < h && h - r > e && r >= e)
		return -1;
	sum = tally_counter_sum(c);
	return sum > rhs ? 1 : sum < rhs ? -1 : 0;
}

/* ---- set and reset --------------------------------------------------------
 * The value is the offset (tally__initial) plus the sum of every slot's
 * never-reset word w. A set or reset takes a cut, one relaxed load of each
 * slot's w (as tally_counter_sum does), and moves the offset so that the
 * value at the cut becomes the new value: an add whose word the cut loaded
 * is in the old value, one it missed counts on top of the new. Words never
 * move, so nothing else changes; the shared count (read's value) moves by
 * the same amount as the offset (a tree's top: its residues stay), so
 * count - offset - sum(base) stays constant and read keeps its bound once
 * the call has returned.
 * Sets and resets of one counter are serialized (a spin lock, acquire and
 * release): the cuts of two of them never interleave, so successive cuts
 * are ordered slot by slot (coherence) and every add lies between exactly
 * two consecutive ones. (Without the lock, a CAS on the offset could
 * succeed with a stale cut when the offset came back to an old value: an
 * ABA that would give one add to two resets.)
 */
TALLY__COLD tally_uword tally__counter_exchange(struct tally_counter *c, tally_uword v)
{
	tally_uword cut, old, off;
	unsigned unlocked = 0;
	/* Acquire: pairs with the release at the end of the last holder, so
	 * this cut's loads come after that one's. */
	while (!__atomic_compare_exchange_n(&c->tally__setting, &unlocked, 1u, 0,
					    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		unlocked = 0;
		tally__os_yield();
	}
	cut = tally__pcpu_sum(&c->tally__pcpu, 0);
	old = tally__load(&c->tally__initial); /* written only under the lock */
	off = v - cut;
	/* Release: pairs with tally_counter_sum_monotonic()'s acquire load. */
	tally__store_rel(&c->tally__initial, off);
	/* What read() loads: the shared count, or a tree's top (its
	 * residues below the top do not move). */
	tally__add(c->tally__top, off - old);
	__atomic_store_n(&c->tally__setting, 0u, __ATOMIC_RELEASE);
	return old + cut;
}

/**
 * tally_counter_set - make c's value v (the kernel's percpu_counter_set()).
 *
 * @param c  the counter
 * @param v  its new value
 * @return 0, or -EINVAL for a NULL c (nothing changed).
 *
 * Takes a cut of c's per-CPU words, as tally_counter_sum() does, and moves
 * c's offset so that the value at the cut becomes v: every add completed
 * before the call is replaced by v, none that started after it returned
 * is, and an add racing with the call is either replaced (the cut saw it)
 * or counts on top of v, never both and never lost. So once the adds that
 * raced have completed, tally_counter_sum() is v plus exactly the adds the
 * cut missed. (The kernel's zeroes each CPU's count in turn under the
 * counter's lock and loses adds that race with it; here none is lost.)
 *
 * Concurrency: any thread, beside every call but init/destroy. Adds are
 * never blocked and never retry. Sets and resets of c are serialized by a
 * spin lock (blocking: each other set or reset of c waits, yielding,
 * while one takes its O(CPU slots) cut). A sum racing with the set returns
 * the value from before it (it may include adds the cut missed) or one
 * since it, never a mix; tally_counter_read() and tally_counter_compare()
 * may see the old value until the call returns, then the new one within
 * the usual bound.
 */
static inline int tally_counter_set(struct tally_counter *c, tally_sword v)
{
	if (tally__bad(!c))
		return -EINVAL;
	tally__counter_exchange(c, (tally_uword)v);
	return 0;
}

/**
 * tally_counter_sum_and_reset - c's exact value, and c set to 0, with one
 * cut (read-and-reset, as folly's readFullAndReset()).
 *
 * @param c  the counter
 * @return the value at the cut, signed and modular in 2^W like
 *         tally_counter_sum() (cast to tally_uword for an event counter);
 *         0 for a NULL c.
 *
 * Every add is in exactly one of: the value returned, or the counter
 * afterwards. An add completed before the call is in the value returned,
 * one that started after the call returned is in the counter afterwards,
 * one racing with the call is in one or the other. So the values returned
 * by successive resets plus the final tally_counter_sum() add up to the
 * initial value plus every add, exactly, whatever the interleaving; a
 * tally_counter_set() between them replaces what came before it. Same
 * cut, lock and contract as tally_counter_set(c, 0).
 */
static inline tally_sword tally_counter_sum_and_reset(struct tally_counter *c)
{
	if (tally__bad(!c))
		return 0;
	return tally__to_signed(tally__counter_exchange(c, 0));
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_COUNTER_H */
