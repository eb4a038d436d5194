/*
 * dying.pml - tally_group_mod() on groups whose destroy is under way or
 * already visible (issue 29), racing destroys of a chain of groups, root
 * flushes and the deferred frees. Sequentially consistent memory: the
 * word/dirty-bit barrier pairs are bitmap.pml's subject; here the
 * question is who moves which delta, when, and whether any is lost,
 * counted twice, or moved through freed memory.
 *
 * Groups: root R (never destroyed), q under R, g under q. One CPU slot.
 * Per group: word (the slot's never-reset word), prev (what was consumed
 * of it), pending (handed up, not yet in state), state, dirty (its bit in
 * the slot's bitmap), linked (in the slot's updated tree), dead, freed,
 * reachable (in its parent's child list), refs (1 + children not freed).
 *
 *   mod(x, d), in a read-side section that found x reachable:
 *        [x allocated] word[x] += d; dirty[x] = 1; and, when x is dead
 *        (tally__rstat_mod_dying()), the walk to the nearest live ancestor
 *        for the threshold count [every group passed allocated]. Returns 0.
 *   destroy(x) (flush lock; x has no live child): the retire, one flush
 *        of x without a drain: word - prev and pending into x's state and
 *        its parent's pending, parent linked, x unlinked; then dead = 1,
 *        x unreachable; call_rcu(callback).
 *   drain (flush lock): a dirty x: dirty = 0; alive: linked; dead: the
 *        hand-over: word - prev into the pending of x's nearest live
 *        ancestor, which is linked.
 *   root flush (flush lock): drain; flush each linked group, children
 *        first (word - prev + pending into state and the parent's
 *        pending); the root takes its pending.
 *   callback(x), a grace period after destroy(x) (every read-side section
 *        that began before call_rcu() has ended), flush lock: the late
 *        hand-over (as a drain's, whatever the bit), then drop the
 *        reference: free x at 0, then its parent if that was its last.
 * Assertions:
 *   - no use of freed memory (a mod, a drain, a hand-over's ancestor walk);
 *   - a root flush that starts after updates returned shows them (deltas
 *     are positive: state[R] >= what had returned when it started);
 *   - at the end (everything done, a last root flush): state[R] == every
 *     delta the program made (nothing lost, nothing twice).
 * Variants, each a defect that must be found:
 *   -DREFUSE      the old tally_group_mod(): -EINVAL once dead is
 *                 visible (the program still counted its update: lost)
 *   -DNO_LATE     the callback frees without the late hand-over: a mod
 *                 after the last drain is lost
 *   -DTO_PARENT   hand-overs to the parent, dead or not, instead of the
 *                 nearest live ancestor: lost in a dead parent's pending
 *   -DNO_REFS     a group freed at its own callback, children or not: the
 *                 child's hand-over walks through freed memory
 *   -DNO_RETIRE   destroy unlinks x without consuming its words: an update
 *                 drained (x linked) before the destroy waits for the
 *                 deferred free, and a root flush in between misses it
 *   -DLATE_NOLOCK the late hand-over without the flush lock: it and a
 *                 drain's hand-over both move word - prev (twice)
 *   -DNFLUSH=n    at most n concurrent root flushes (default 2)
 */

#define R 0
#define Q 1
#define G 2
#define NR 2 /* readers */
#ifndef NFLUSH
#define NFLUSH 2
#endif

byte word[3], prev[3], pending[3], state[3];
bit dirty[3], linked[3], dead[3], freed[3];
bit reachable[3] = 1;
byte refs[3];
byte total = 0;    /* every delta the program made */
byte returned = 0; /* deltas of mods that have returned */
byte rd[NR];       /* read-side sections: 0 before, 1 inside, 2 after */
byte done = 0;     /* processes finished */
/* Scratch for the steps made under the flush lock: each such step is one
 * atomic block (what matters is how the updates' two steps fall between
 * them), and zeroes these at its end so they add no states. */
byte ta, tv, td;

#define par(x) ((x) == G -> Q : R)

/* Link live x into the slot's updated tree with its ancestors
 * (tally__rstat_link(): a live group's ancestors are live). */
inline link(x)
{
	if
	:: x == G -> linked[G] = 1; linked[Q] = 1
	:: x == Q -> linked[Q] = 1
	:: else -> skip /* the root: every root flush takes it */
	fi
}

/* a = the nearest live ancestor of x (tally__rstat_live_ancestor()),
 * reading the dead flag of each group it passes */
inline live_ancestor(x, a)
{
	a = par(x);
	do
	:: a != R ->
		assert(!freed[a]);
		if
		:: dead[a] -> a = par(a)
		:: else -> break
		fi
	:: else -> break
	od
}

/* x's slot delta since its last consumption to its nearest live ancestor
 * (tally__rstat_hand_over_slot()), which is linked */
inline hand_over(x)
{
	assert(!freed[x]);
#ifdef TO_PARENT
	ta = par(x);
#else
	live_ancestor(x, ta);
#endif
	pending[ta] = pending[ta] + (word[x] - prev[x]);
	prev[x] = word[x];
	if
	:: !dead[ta] -> link(ta)
	:: else -> skip /* TO_PARENT: a dead parent is never linked again */
	fi
}

inline drain(x)
{
	if
	:: dirty[x] ->
		dirty[x] = 0;
		assert(!freed[x]);
		if
		:: !dead[x] -> link(x)
		:: else -> hand_over(x)
		fi
	:: else -> skip
	fi
}

inline flush_one(x)
{
	if
	:: linked[x] ->
		assert(!dead[x] && !freed[x]); /* dead groups are never linked */
		td = word[x] - prev[x] + pending[x];
		prev[x] = word[x];
		pending[x] = 0;
		state[x] = state[x] + td;
		pending[par(x)] = pending[par(x)] + td;
		linked[x] = 0
	:: else -> skip
	fi
}

/* A root flush: drain, then the linked groups children first. */
inline root_flush()
{
	drain(G);
	drain(Q);
	flush_one(G);
	flush_one(Q);
	state[R] = state[R] + pending[R];
	pending[R] = 0;
	ta = 0; td = 0
}

/* tally_group_mod(x, d) in a section that found x: the word add, then
 * (a second step) the dirty bit and, for a dead x, the ancestor walk of
 * the threshold count. */
inline mod(x, d)
{
	atomic {
		total = total + d;
		assert(!freed[x]);
		if
#ifdef REFUSE
		:: dead[x] -> goto refused /* -EINVAL: nothing counted */
#endif
		:: else -> word[x] = word[x] + d
		fi
	};
	atomic {
		dirty[x] = 1;
		if
		:: dead[x] -> live_ancestor(x, ta); ta = 0
		:: else -> skip
		fi;
		returned = returned + d
	};
#ifdef REFUSE
refused:
#endif
	skip
}

/* tally_group_destroy(x) under the flush lock: the retire (one flush of
 * x, no drain), dead, unlinked from its parent's children; then
 * call_rcu(): the callback waits for the readers inside a section now. */
inline destroy(x)
{
	atomic {
#ifndef NO_RETIRE
		td = word[x] - prev[x] + pending[x];
		prev[x] = word[x];
		pending[x] = 0;
		state[x] = state[x] + td;
		pending[par(x)] = pending[par(x)] + td;
		if
		:: td -> link(par(x))
		:: else -> skip
		fi;
		td = 0;
#endif
		linked[x] = 0;
		dead[x] = 1;
		reachable[x] = 0;
		run callback(x, rd[0] == 1, rd[1] == 1)
	}
}

/* References: drop x's; free it at 0, then its parent if that was the
 * parent's last (tally__rstat_put()). */
inline put(x)
{
#ifdef NO_REFS
	freed[x] = 1
#else
	ta = x;
	do
	:: ta != R ->
		refs[ta]--;
		if
		:: refs[ta] == 0 -> freed[ta] = 1; ta = par(ta)
		:: else -> break
		fi
	:: else -> break
	od;
	ta = 0
#endif
}

/* The deferred free, once every reader inside a section at the destroy
 * has left it (w0, w1): the late hand-over, whatever the dirty bit says
 * (a freed group's bit is ignored by drains: cleared here), then the
 * references. */
proctype callback(byte x; bit w0; bit w1)
{
	byte v, a;
	(!w0 || rd[0] == 2) && (!w1 || rd[1] == 2);
#ifdef LATE_NOLOCK
	/* the hand-over without the flush lock: its steps interleave with
	 * a flush's */
	live_ancestor(x, a);
	v = word[x];
	pending[a] = pending[a] + (v - prev[x]);
	prev[x] = v;
	atomic { dirty[x] = 0; put(x) }
#else
	atomic {
		assert(!freed[x]);
		dirty[x] = 0;
#ifndef NO_LATE
		hand_over(x);
		live_ancestor(x, ta);
		pending[ta] = pending[ta] + pending[x];
		pending[x] = 0;
		ta = 0;
#endif
		put(x)
	}
#endif
	v = 0;
	a = 0;
	done++
}

/* A request: in one section, find x and update it twice. */
proctype reader(byte me; byte x; byte d1; byte d2)
{
	rd[me] = 1;
	if
	:: reachable[x] ->
		mod(x, d1);
		mod(x, d2)
	:: else -> skip /* not found: nothing to do */
	fi;
	rd[me] = 2;
	done++
}

/* g, then its parent q: a chain of dying groups */
proctype destroyer()
{
	destroy(G);
	destroy(Q);
	done++
}

proctype flusher()
{
	byte n = 0, snap;
	do
	:: n < NFLUSH ->
		snap = returned;
		atomic {
			root_flush();
			/* a flush that starts after mods returned shows them */
			assert(state[R] >= snap);
			snap = 0
		};
		n++
	:: break
	od;
	done++
}

init
{
	refs[Q] = 2; /* itself and g */
	refs[G] = 1;
	atomic {
		run reader(0, G, 1, 4);
		run reader(1, Q, 8, 16);
		run destroyer();
		run flusher()
	}
	done == 6; /* 2 readers, the destroyer, the flusher, 2 callbacks */
	atomic {
		root_flush();
		assert(freed[G] && freed[Q]);
		assert(state[R] == total)
	}
}
