/*
 * ref_free.pml - when a destroyed group may be freed (issue 29): groups
 * held by references (tally_group_tryget() / _put(), a tally_ref per
 * group) and by read-side sections at once. Sequentially consistent
 * memory; one group g under the root R, one CPU slot. How its deltas
 * climb through drains and flushes is dying.pml's subject; here the
 * destroy's retire hands g's words to R at once and the free's late
 * hand-over takes what came after.
 *
 *   reader:  a read-side section that found g reachable: mods g, ends.
 *   holder:  tryget (fails once the destroy's kill began, dead here),
 *            mods g any number of times, with no section, then puts.
 *   destroy: retire (word - prev into R), dead, unreachable; kill the
 *            ref: drop the tree's reference (release() at 0); call_rcu.
 *   callback, a grace period after call_rcu (the reader's section, if it
 *            began before, has ended): one step of free_wait.
 *   release() (the ref at 0, on whichever thread): one step of free_wait.
 *   free_wait starts at 2; the step that brings it to 0 finishes g: the
 *            late hand-over (word - prev into R) and the free.
 * Assertions: no mod on freed memory; at the end, g freed and R's state
 * equal to every delta made (nothing lost, nothing twice).
 * Variants, each a defect that must be found:
 *   -DFREE_AT_GP   the callback frees g whatever the references: a
 *                  holder's mod after the grace period uses freed memory
 *   -DFREE_AT_PUT  the last put frees g without waiting for the grace
 *                  period: the reader's mod in its section does
 *   -DNO_LATE      the finish frees without the late hand-over: a
 *                  holder's mod after the destroy is lost
 */

byte word, prev, stateR;
bit dead, freed, called;
byte refcnt = 1; /* the tree's reference, dropped by the destroy's kill */
byte free_wait = 2;
byte rd = 0; /* the reader's section: 0 before, 1 inside, 2 after */
byte total = 0, done = 0;

inline mod()
{
	atomic {
		assert(!freed);
		word++;
		total++
	}
}

inline finish()
{
#ifndef NO_LATE
	stateR = stateR + word - prev;
	prev = word;
#endif
	freed = 1
}

inline free_step()
{
	free_wait--;
	if
	:: free_wait == 0 -> finish()
	:: else -> skip
	fi
}

inline release()
{
#ifdef FREE_AT_PUT
	finish()
#elif defined(FREE_AT_GP)
	skip
#else
	free_step()
#endif
}

inline put()
{
	atomic {
		refcnt--;
		if
		:: refcnt == 0 -> release()
		:: else -> skip
		fi
	}
}

proctype reader()
{
	atomic {
		if
		:: !dead -> rd = 1 /* found g reachable */
		:: else -> rd = 2  /* too late: g is gone from the lookup */
		fi
	}
	if
	:: rd == 1 -> mod(); mod(); rd = 2
	:: else -> skip
	fi;
	done++
}

proctype holder()
{
	bit got = 0;
	atomic {
		if
		:: !dead -> refcnt++; got = 1
		:: else -> skip
		fi
	}
	if
	:: got -> mod(); mod(); put()
	:: else -> skip
	fi;
	done++
}

proctype destroyer()
{
	atomic {
		stateR = stateR + word - prev; /* the retire */
		prev = word;
		dead = 1
	}
	put(); /* the kill drops the tree's reference */
	called = 1;
	done++
}

proctype callback()
{
	/* a grace period after call_rcu: a section that began before it has
	 * ended (one that begins after cannot find g) */
	atomic {
		called && rd != 1 ->
#ifdef FREE_AT_GP
		finish()
#elif defined(FREE_AT_PUT)
		skip
#else
		free_step()
#endif
	}
	done++
}

init
{
	atomic {
		run reader();
		run holder();
		run holder();
		run destroyer();
		run callback()
	}
	done == 5;
	assert(freed);
	assert(stateR == total)
}
