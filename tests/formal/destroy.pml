/*
 * destroy.pml - tally_group_mod() racing tally_group_destroy(): the
 * hand-over of a destroyed group's counts to its parent. Sequentially
 * consistent memory (the word/dirty-bit barrier pairs are bitmap.pml's
 * subject); here the question is who moves which delta, and when.
 *
 * The mod here is the one before issue 29, which refused a group whose
 * destroy it could see (-EINVAL); the mod that counts on a dying group,
 * a chain of them and the destroy's retire are modelled in dying.pml.
 *
 * One group g (one CPU slot) under a parent. Its word (never reset), prev
 * (what flushes already handed to the parent), and its dirty bit (the leaf
 * bit of bitmap.pml: set by mod, taken by a drain).
 *   mod (a registered thread, inside tally_tree_read_lock()):
 *        read_lock; if (dead) { read_unlock; return -EINVAL }
 *        word += d; dirty = 1; read_unlock; return 0
 *   flush (a concurrent root flush, flush lock held):
 *        if (dirty) { dirty = 0; [g must not be freed]
 *                     parent += word - prev; prev = word }
 *   destroy (flush lock held): dirty = 0; parent += word - prev;
 *        prev = word; dead = 1; unlock; call_rcu(callback)
 *   callback, after a grace period (every read-side section that began
 *        before call_rcu() has ended):
 *     NEW design (default): under the flush lock, dirty = 0 (g leaves the
 *        slot's bitmap / updated tree), parent += word - prev; prev = word;
 *        free g.                                        expected: PASS
 *     OLD design (-DOLD: as the code was): free g, no second hand-over.
 *                                                       expected: FAIL
 *     -DCB_NOLOCK: the new hand-over without the flush lock (it races with
 *        a concurrent flush of g: both move word - prev). expected: FAIL
 *   -DNFLUSH=n: at most n concurrent root flushes (default 2); -DOLD
 *   -DNFLUSH=0 shows the lost delta alone.
 * Grace period: per reader an epoch counter, odd while inside its section;
 * the grace period snapshots each and waits until the snapshot is even or
 * the counter moved (urcu's scheme, sequentially consistent).
 *
 * Processes: readers R1 (mod +1, then mod +4) and R2 (mod +2), destroy D,
 * a root flusher P (any moment, any number of times up to 2), and a final
 * check after all of them: a last flush (which takes a still-dirty g only if
 * g is not freed: a freed group is a use-after-free, asserted in flush),
 * then
 *   assert(parent == sum of the deltas of the mods that returned 0).
 * Assertions: no flush touches a freed g (use-after-free); nothing lost.
 *
 * Trails of -DOLD (spin -t -p -DOLD destroy.pml), summarized:
 *   use-after-free (the shortest, pan -i):
 *     D: takes the lock, dirty = 0.  R1: read_lock; dead == 0; word += 1.
 *     D: v = word (1): parent += 1; dead = 1; unlock.
 *     P: takes the lock.  R1: dirty = 1; read_unlock; returns 0.
 *     P: sees dirty, takes it.  The grace period ends (R1 left), the old
 *     callback frees g.  P touches g: assertion !freed violated.
 *   lost delta (-DOLD -DNFLUSH=0):
 *     D: takes the lock, flushes g (word 0: parent += 0).
 *     R1: read_lock; dead == 0 ... preempted before its add.
 *     D: dead = 1, unlock, call_rcu: the grace period waits for R1.
 *     R1: word += 1; dirty = 1; read_unlock; returns 0.
 *     The grace period ends; g is freed with its delta: parent 0 != 1.
 */

#define NR 2 /* readers */
#ifndef NFLUSH
#define NFLUSH 2 /* concurrent root flushes, at most */
#endif

byte word = 0, prev = 0;
bit dirty = 0, dead = 0, freed = 0;
byte parent = 0;  /* what g handed to its parent */
byte ok_sum = 0;  /* deltas of mods that returned 0 */
byte rd[NR];      /* read-side epoch: odd inside a section */
bit lock = 0;     /* the tree's flush lock */
byte done = 0;    /* processes finished */

inline lock_acquire() { atomic { lock == 0 -> lock = 1 } }
inline lock_release() { lock = 0 }

inline mod(me, d)
{
	rd[me]++;              /* tally_tree_read_lock() */
	if
	:: dead -> rd[me]++     /* -EINVAL: nothing changed */
	:: else ->
		assert(!freed);  /* inside the section g cannot be freed */
		word = word + d;
		dirty = 1;
		rd[me]++;
		ok_sum = ok_sum + d /* returned 0 */
	fi
}

inline flush_g()
{
	if
	:: dirty ->
		dirty = 0;
		assert(!freed);  /* use-after-free */
		v = word;        /* one load, as tally__rstat_flush_one() */
		parent = parent + (v - prev);
		prev = v
	:: else -> skip
	fi
}

inline grace_period()
{
	byte snap, k = 0;
	do
	:: k < NR ->
		snap = rd[k];
		(snap % 2 == 0 || rd[k] != snap);
		k++
	:: else -> break
	od
}

proctype reader1()
{
	mod(0, 1);
	mod(0, 4);
	done++
}

proctype reader2()
{
	mod(1, 2);
	done++
}

proctype destroyer()
{
	byte v;
	lock_acquire();
	dirty = 0;
	v = word;
	parent = parent + (v - prev);
	prev = v;
	dead = 1;
	lock_release();
	grace_period();
#if defined(OLD)
	freed = 1
#elif defined(CB_NOLOCK)
	dirty = 0;
	v = word;
	parent = parent + (v - prev);
	prev = v;
	freed = 1
#else
	lock_acquire();
	dirty = 0;
	v = word;
	parent = parent + (v - prev);
	prev = v;
	freed = 1;
	lock_release()
#endif
	;
	done++
}

proctype flusher()
{
	byte n = 0, v;
	do
	:: n < NFLUSH -> lock_acquire(); flush_g(); lock_release(); n++
	:: break
	od;
	done++
}

init
{
	byte v;
	atomic {
		run reader1();
		run reader2();
		run destroyer();
		run flusher()
	}
	done == 4;
	/* the final flush: a freed g is no longer in any bitmap it may see */
	if
	:: !freed -> flush_g()
	:: else -> skip
	fi;
	assert(parent == ok_sum)
}
