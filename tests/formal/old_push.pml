/*
 * old_push.pml - the updated-list protocol of tally_group_mod() /
 * tally_group_flush_force() as it was before the two-level dirty bitmap
 * (tally__rstat_push(), tally__rstat_drain(), tally__rstat_flush_locked()).
 * Expected result: assertion VIOLATED. The model exists to show the defect.
 *
 * Per CPU slot a lockless list of (group, slot) nodes; a node's lnext == SELF
 * means "off the list". One slot, one group, so one node.
 *   updater: word += d;  fence;  if (lnext == SELF) push
 *   push:    CAS lnext SELF -> NIL (claim: one winner);
 *            loop { lnext = old head; CAS head old -> node }
 *   flusher: xchg(head, NIL); for each drained node: lnext = SELF, link it;
 *            fence; read the word of every linked node; (twice, as the
 *            flush drains every slot twice)
 * Updaters A and B update the same group on the same slot (same CPU under
 * rseq, the shared slot otherwise). The flusher starts after A's
 * tally_group_mod() returned (it waits for a_done, which A sets after
 * returning: happens-after). SPIN interleaves every step, so B may be
 * preempted anywhere, for ever. Memory is sequentially consistent here: the
 * defect needs no reordering.
 *
 * Property: the flush reflects A's delta (assertion in the flusher).
 *
 * Trail found by SPIN (spin -t -p old_push.pml), summarized:
 *   1. B: word += 2; fence; sees lnext == SELF; claims the node
 *         (CAS lnext SELF -> NIL succeeds); loads the head (NIL) and
 *         stores lnext = NIL; is preempted before its head CAS.
 *   2. A: word += 1; fence; sees lnext == NIL (not SELF): "already queued",
 *         skips the push and returns; sets a_done.
 *   3. F: xchg(head, NIL) returns NIL: nothing to drain, nothing linked,
 *         both drain passes; no word is read.
 *   4. F: flushed == 0, which misses A's delta: assertion violated.
 * The staleness lasts as long as B stays preempted (unbounded).
 *
 * With -DONE_UPDATER (B left out) the same flusher and assertion pass: the
 * violation comes from B's preempted push, not from the check.
 *
 * Run: spin -a old_push.pml && cc -O2 -o pan pan.c && ./pan
 *      (check.sh runs both variants)
 */

#define SELF 2
#define NIL 0
#define NODE 1 /* the one node's "address" */

#define DA 1 /* A's delta */
#define DB 2 /* B's delta */

byte head = NIL;  /* the slot's list head */
byte lnext = SELF; /* the node's link: SELF = off the list */
byte word = 0;    /* the group's word on this slot (never reset) */
bit a_done = 0;   /* A's mod returned */
bit linked = 0;   /* the node is in the slot's updated tree (flush lock) */
byte prev = 0;    /* the flusher's snapshot */
byte flushed = 0; /* what the flushes moved out of the word */

inline push()
{
	byte old;
	if
	:: atomic { lnext == SELF -> lnext = NIL }  /* claim */
		old = head;
		do
		:: lnext = old;
		   atomic {
			if
			:: head == old -> head = NODE; break
			:: else -> old = head
			fi
		   }
		od
	:: atomic { else -> skip } /* another updater claimed it */
	fi
}

inline mod(d)
{
	atomic { word = word + d };   /* rseq add / atomic RMW */
	/* full fence: SC model */
	if
	:: lnext == SELF -> push()
	:: else -> skip
	fi
}

inline drain()
{
	byte c;
	atomic { c = head; head = NIL };  /* xchg */
	if
	:: c == NODE ->
		c = lnext;      /* next (NIL: only one node) */
		lnext = SELF;   /* off the list */
		linked = 1
	:: else -> skip
	fi
}

inline flush_linked()
{
	byte v;
	if
	:: linked ->
		v = word;
		flushed = flushed + (v - prev);
		prev = v;
		linked = 0
	:: else -> skip
	fi
}

active proctype A()
{
	mod(DA);
	a_done = 1
}

#ifndef ONE_UPDATER
active proctype B()
{
	mod(DB)
}
#endif

active proctype F()
{
	a_done == 1;    /* the flush starts after A's mod returned */
	drain();
	/* fence */
	flush_linked();
	drain();
	/* fence */
	flush_linked();
	/* flushed is 0, DA or DA + DB: A's delta must be in it */
	assert(flushed == DA || flushed == DA + DB)
}
