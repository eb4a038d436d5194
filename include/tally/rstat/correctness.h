/**
 * @file
 * tally/rstat/correctness.h - tally/rstat.h's model, and why the updated
 * set of tally/rstat/updated.h, the threshold settle of
 * tally/rstat/threshold.h and the destroy of tally/rstat/lifetime.h are
 * correct
 * (private; documentation only: no code, and nothing includes it). The
 * terms are updated.h's: dirty records (a leaf and a summary per block
 * and CPU slot; the shared half and the mark half), drains, and the
 * barrier pair BARRIER_U / BARRIER_F.
 *
 * ---- The model ------------------------------------------------------------
 * Every group has N items. Per group and CPU slot: a never-reset word per
 * item (the updates) and a prev snapshot per item (the word's value at the
 * last flush that consumed it). Per group: state (hierarchical: the group
 * and everything below it), local (the group alone) and pending (deltas
 * handed up by flushed or destroyed children, not yet in state). Readers
 * read state and local: the values as of the last flush that covered the
 * group.
 *
 * Update (tally_group_mod): add to this CPU slot's word; then, ordered
 * after the add (rstat.h, Memory ordering), mark the group dirty in the
 * slot's dirty record (on x86_64 with rseq: two plain 32-bit stores in
 * the mark half of the slot's record, right after the add's restartable
 * section; elsewhere: in the shared half, a load and an atomic OR only if
 * the bit is clear); then count |delta| toward the flush thresholds of
 * the group and its ancestors (memcg_rstat_updated()). A group record
 * (tally_group_record) is two such adds, the sum's and the bucket's, in
 * one section on x86_64 with rseq (rstat/record.h): its marks follow
 * both, or, when the section aborts between them, the sum's alone (the
 * bucket's + 1 is then a fenced update of its own).
 *
 * Flush of the subtree at g, under the tree's flush lock: drain every
 * slot's dirty bitmap into the slot's updated tree (link each dirty group
 * and its ancestors under their parents, stopping at the first one already
 * linked), then the flush's barrier; per slot, detach g's part of the
 * updated tree and visit it children before parents; then drain every
 * slot again (and the barrier) and visit what came meanwhile.
 * For each visited group x and item i, with the slot's word v:
 *     delta = pending[i]; pending[i] = 0;
 *     if (v != prev[i]) { d = v - prev[i]; delta += d; prev[i] = v; local[i] += d; }
 *     if (delta) { state[i] += delta; parent->pending[i] += delta; }
 * Groups outside g's subtree stay linked for a later flush. All arithmetic
 * is modular in 2^TALLY_WORD_BITS, so totals are exact across wraps.
 *
 * Thresholds ("mm: memcg: make stats flushing threshold per-memcg", Yosry
 * Ahmed, 2023): tally_group_flush(g) flushes only when needs_flush(g):
 * g's count, the sum of |delta| of updates in its subtree since its last
 * flush, moved into it in per-CPU batches (64), exceeds batch * ncpus
 * (online CPUs when the tree was created); a flush lowers it by what it
 * took at its start, but leaves it past the threshold (at threshold + 1)
 * when updates counted while it ran took g past it (they may have come
 * after its last drain). If an update by this thread finds g below its
 * threshold and takes it past, tally_group_flush(g) afterwards returns
 * with that update and every earlier one of this thread reflected,
 * whether it flushed or another flush (forced, periodic or thresholded,
 * running at the same time included) got there first. See
 * tally/rstat/threshold.h; the argument is below.
 *
 * ---- Why a flush that starts after an update returned reflects it -----
 * The argument. Per group, CPU slot and block of 4096 groups, the dirty
 * record has a leaf bit (the group) and a summary bit (its leaf word); an
 * update does
 *     word += d;  BARRIER_U;  if (!(leaf & bit)) leaf |= bit;
 *                             if (!(summ & sbit)) summ |= sbit;
 * and a drain (flush lock held) does
 *     x = xchg(summ, 0); for each bit of x: y = xchg(leaf, 0); link ...;
 *     BARRIER_F;  then the flush loads words.
 * All bit accesses are sequentially consistent, so they have one total
 * order S. Take U's leaf load and the first leaf xchg after it in S, X:
 * X reads the bit set (U set it, or read it set, and nothing cleared it in
 * between), and links the group. U's word add / BARRIER_U / leaf load and
 * X / BARRIER_F / word load are a store-buffering pair: since U's load
 * precedes X, the flush's word load reads U's add. It remains that X
 * happens, and no later than the drain of a flush that starts after U
 * returned. U's summary load comes after its leaf load in S. If a drain
 * cleared the summary in between, that drain's leaf xchg is X or after it,
 * done before the next flush takes the lock. Otherwise U leaves the
 * summary bit set by a write after the last summary clear before its leaf
 * load (it sets the bit itself, or reads it set); the next drain that
 * clears the summary, at the latest the later flush's, reads that bit and
 * goes on to the leaf: X. Neither step waits for another updater, so a
 * preempted or stopped one (between its leaf and its summary, say)
 * delays nobody: there is no claim to hold, and every step is idempotent.
 *
 * The barrier pair: two full fences, or, with TALLY_RSTAT_MEMBARRIER 1
 * where the kernel has private expedited membarrier(), a compiler barrier
 * in updates and membarrier() in flushes that cleared a bit of a shared
 * half (the urcu-memb scheme); a tree picks one at creation and keeps it
 * (tally/rstat/updated.h).
 *
 * The mark half (x86_64 with rseq, tally__rstat_rseq_mod()): no barrier
 * in the update, and no section for the marking. Each slot's record has a
 * second summary and leaf, a 32-bit mark per group and per 64 groups,
 * which an update whose rseq add landed on the slot sets to 1 with two
 * plain 32-bit stores, leaf then summary, right after the add (on the CPU
 * of the add, or on another one if the thread migrated in between). A
 * store of a constant to a mark reads nothing, so writers need no
 * exclusion: none undoes another's, and a drain's exchange of the aligned
 * 64-bit word around a mark either reads it or leaves it set for the next
 * drain. The update stores the marks every time, after its word add, and
 * x86 keeps a thread's stores in order (a context switch between them is
 * a full barrier): a drain exchange (a full barrier) that reads the mark
 * reads the add after it. That is message passing, not store buffering:
 * the update never acts on a load that may pass its own add (skipping the
 * stores when both marks are already set would: tests/formal/bitmap.pml
 * -DBYTES -DBYTES_SKIP fails, as does storing them before the add,
 * -DBYTES -DBYTES_FIRST; -DBYTES passes).
 *
 * ---- Why tally_group_flush(g) reflects an update that took g past its
 * ---- threshold
 * An update U does, in order: word add, its dirty bits (above), then its
 * count (tally/rstat/threshold.h: release adds of |delta| into g's count,
 * stopping at a group already past its threshold). A flush F of a subtree
 * holding g takes g's count (acquire) once, at its start for the flushed
 * group and right after its first drain for the others, before any of
 * its word loads; drains and walks twice; then settles: lowers the count
 * by what it took. Say U finds g's count at or below the threshold and
 * its add takes it past, and U's thread calls tally_group_flush(g) after
 * U returned. Three cases, by where U's count add falls against F:
 *   - before F's take: the take reads it (acquire), so U's bits, set
 *     before its count (release), are seen by F's drains after the take
 *     (the second one, at the latest, for a group taken after the first):
 *     F reflects U, and U's thread, finding g lowered by F's settle,
 *     finds F's values published (the settle's release, the needs_flush
 *     acquire), or finds g flushable and flushes itself;
 *   - after F's settle: F is not involved; g stays past its threshold
 *     until a later flush, which starts after U's bits were set and so
 *     reflects U, or is the flush U's thread makes;
 *   - between F's take and its settle: U's bits may come after F's last
 *     drain, so F may miss U. The count F settles then holds U's add on
 *     top of what F took, so it is past the threshold; subtracting only
 *     what F took can bring it back to or below it (100 taken of a 128
 *     threshold, U adds 100: 200 - 100). So the settle re-arms: when the
 *     count is past the threshold and subtracting what F took would not
 *     leave it past, it leaves threshold + 1 instead, in one atomic step
 *     (only flushes lower counts, under the flush lock; updates only add).
 *     g stays flushable, so U's thread's tally_group_flush(g) flushes,
 *     after F (the flush lock), and reflects U (a flush that starts after
 *     U returned). The settle then makes a re-armed group's ancestors
 *     flushable too, once all counts are settled.
 * A re-arm costs at most one extra flush, made by whoever next flushes
 * g on its threshold, for counts that crossed during a flush. SPIN model:
 * tests/formal/threshold.pml (-DOLD, the plain subtraction, fails);
 * tests: test_rstat_hooks.c (an update at this window, forced) and
 * stress_rstat_threshold.c.
 *
 * ---- Destroy, and updates on a group being destroyed ----------------------
 * Under the flush lock,
 * destroy retires g: one flush of g alone, no drain (every slot's word -
 * prev into g's local and state and its parent's pending, g's pending
 * into its state and the parent's pending, the parent linked on slot 0),
 * g out of every slot's updated tree (O(1) each: a group's updated
 * children are live, and g has none); then marks it dead (its fast path
 * closed) and unlinks it from its parent's children. It is freed once
 * a grace period has passed since then (call_rcu()) and the last
 * reference on it is put, whichever comes last (rstat/lifetime.h).
 * Meanwhile g keeps its id, its dirty
 * bits and its per-CPU words, and tally_group_mod() on it counts as on a
 * live group (tally__rstat_mod_dying(): the word add, BARRIER_U, the
 * shared half's marking; the threshold count goes to the nearest live
 * ancestor). A destroyed group is never linked again: a drain that finds
 * its bit hands that slot's word - prev, after BARRIER_F, to the pending
 * of its nearest live ancestor and links that ancestor instead; the
 * call_rcu callback (flush lock) hands over, slot by slot, what no drain
 * did, releases the id, and frees g once no destroyed child still needs
 * it (a reference count: 1 for the group, 1 per child not yet freed,
 * since a child's hand-over walks up through destroyed ancestors).
 * Why an update U on g, made while g's destroy is under way or after it
 * is visible, reaches g's nearest live ancestor exactly once:
 *   - Once: per group and slot, prev is the one record of what has been
 *     consumed of the word. Every consumer (a flush's visit, the retire,
 *     a drain's hand-over, the late hand-over) moves exactly word - prev
 *     and sets prev = word, under the flush lock; so no delta moves twice.
 *   - Never lost: U runs while g is held (the rule for a group another
 *     thread may destroy): inside a read-side section that began before
 *     call_rcu(), or between a get and a put of a reference. The late
 *     hand-over runs after both the grace period and the last put (the
 *     put's release, or the kill's fold after membarrier(), orders U's
 *     add before it), so its loads take whatever word - prev is left.
 *     Nothing else discards a word.
 *   - Where to: each consumer after the destroy moves the delta into the
 *     pending of the nearest live ancestor at that moment (alive while
 *     the lock is held: destroys take it), linked on that slot. A live
 *     group's pending reaches its state at its next flush and its
 *     parent's pending, or, if it is destroyed first, its retire moves it
 *     on to its parent: a delta sits in exactly one group's pending and
 *     only climbs, through chains of dying groups as well (destroy_subtree
 *     retires children first, each into a parent not yet dead).
 *   - In time: a flush F of a live ancestor A of g that starts after U
 *     returned reflects U. U set g's dirty bit after its add; by the
 *     argument above, the first drain exchange X
 *     after U's bit access reads it, and X comes no later than F's first
 *     drain, and every word load after X's BARRIER_F reads U's add. If g
 *     was alive at X, X linked g on that slot, and g stays linked until
 *     a consumer takes the slot: a flush's visit (F's own at the latest,
 *     g being in A's subtree), which moves U's delta into g's state and
 *     its parent's pending, the parent next in the same walk; or g's
 *     retire, which moves it into the parent's pending and links the
 *     parent. If g was dead at X, X's hand-over moved it into the nearest
 *     live ancestor's pending, linked. Either way U's delta is in F's walk
 *     or, before it, in the pending of a live group linked on some slot,
 *     between g and A (A is alive and an ancestor of g), so F's walk of
 *     A's subtree carries it into A's state. tests/formal/dying.pml
 *     checks this with a chain of
 *     two dying groups, a flush and the deferred frees (each of its
 *     defective variants, the old refusal included, fails).
 *   - Thresholds: U counts |delta| toward the nearest live ancestor and
 *     its ancestors, after its dirty bit, as any update in their subtree;
 *     a flush takes a count (acquire) before a drain that sees the bit,
 *     whose hand-over links a group inside the flushed subtree, so
 *     "tally_group_flush(a) reflects an update that took a past its
 *     threshold" holds for that ancestor a.
 *   - Resets: a reset is a flush of its subtree and its baselines under
 *     the lock; by the cursor U's delta is in that flush (the baseline)
 *     or in a later one (every later since-reset value), never both.
 *   - Readers stay O(1) loads of state and local; a destroyed group's own
 *     values stay as its retire left them.
 * Cost: destroy is O(slots written * items), the retire, whatever else
 * the tree holds: no drain, so no scan of the dirty bitmaps (about 1,100
 * instructions per destroy among 10,000 siblings or 100,000, callgrind).
 * Finding the dead groups' bits is left to the drains of later flushes,
 * which scan the bitmaps anyway, and each dead group found dirty costs a
 * hand-over of O(items) on that slot; the deferred free costs one more
 * retire's worth, under the lock.
 */
#ifndef TALLY_RSTAT_CORRECTNESS_H
#define TALLY_RSTAT_CORRECTNESS_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/correctness.h holds no code (documentation only): include <tally/rstat.h>"
#endif

#endif /* TALLY_RSTAT_CORRECTNESS_H */
