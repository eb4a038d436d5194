/**
 * @file
 * tally/rstat/correctness.h - why the updated set of tally/rstat/updated.h
 * and the threshold settle of tally/rstat/threshold.h are correct
 * (private; documentation only: no code, and nothing includes it). The
 * terms are updated.h's: dirty records (a leaf and a summary per block
 * and CPU slot; the shared half and the mark half), drains, and the
 * barrier pair BARRIER_U / BARRIER_F.
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
 */
#ifndef TALLY_RSTAT_CORRECTNESS_H
#define TALLY_RSTAT_CORRECTNESS_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/correctness.h holds no code (documentation only): include <tally/rstat.h>"
#endif

#endif /* TALLY_RSTAT_CORRECTNESS_H */
