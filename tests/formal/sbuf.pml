/*
 * sbuf.pml - a small out-of-order memory model for the tally models: every
 * process has a FIFO store buffer; a buffered store reaches memory when the
 * process's drainer commits it, at any later moment (TSO: stores leave in
 * program order, a load may be satisfied before an earlier store of the
 * same process is visible to others: store->load reordering, the
 * store-buffering pattern). Loads forward from the process's own buffer.
 *
 * Atomic RMWs:
 *   rmw_mem: performed on memory with the process's buffer empty: a full
 *     barrier (x86 lock-prefixed instructions, seq_cst RMWs).
 *   rmw_buf: reads memory and buffers its store (a relaxed RMW on a weakly
 *     ordered CPU: later loads may pass it). Atomicity is kept: no RMW
 *     (of any process) starts on a location while a store to it is
 *     buffered anywhere (the RMW owns the line until its store lands).
 * Not modelled: load->load and store->store reordering.
 *
 * The including model defines NV (locations), NP (processes with buffers)
 * and BUFSZ (buffer depth), and may define SBUF_T, the type of a value
 * (default byte).
 */

#ifndef SBUF_T
#define SBUF_T byte
#endif

typedef Buf {
	byte var[BUFSZ];
	SBUF_T val[BUFSZ];
	byte n
};

Buf buf[NP];
SBUF_T mem[NV];
byte inbuf[NV]; /* stores to each location buffered anywhere */

/* r = the value process me sees at location v */
inline load(me, v, r)
{
	atomic {
		byte _i = buf[me].n;
		r = mem[v];
		do
		:: _i > 0 && buf[me].var[_i - 1] != v -> _i--
		:: _i > 0 && buf[me].var[_i - 1] == v -> r = buf[me].val[_i - 1]; break
		:: _i == 0 -> break
		od;
		_i = 0
	}
}

/* append to me's buffer (waits while it is full) */
inline bstore(me, v, x)
{
	atomic {
		buf[me].n < BUFSZ ->
		buf[me].var[buf[me].n] = v;
		buf[me].val[buf[me].n] = x;
		buf[me].n++;
		inbuf[v]++
	}
}

/* full barrier: wait until me's stores are all visible */
inline barrier(me)
{
	buf[me].n == 0
}

/* r = old value; location v = old + add (add may wrap: byte) */
inline rmw_add_buf(me, v, add, r)
{
	atomic {
		inbuf[v] == 0 && buf[me].n < BUFSZ ->
		r = mem[v];
		buf[me].var[buf[me].n] = v;
		buf[me].val[buf[me].n] = r + add;
		buf[me].n++;
		inbuf[v]++
	}
}

/* exchange through the buffer: r = old value, location v = x */
inline rmw_xchg_buf(me, v, x, r)
{
	atomic {
		inbuf[v] == 0 && buf[me].n < BUFSZ ->
		r = mem[v];
		buf[me].var[buf[me].n] = v;
		buf[me].val[buf[me].n] = x;
		buf[me].n++;
		inbuf[v]++
	}
}

/* exchange on memory, buffer empty: a full barrier */
inline rmw_xchg_mem(me, v, x, r)
{
	atomic {
		buf[me].n == 0 && inbuf[v] == 0 ->
		r = mem[v];
		mem[v] = x
	}
}

/* The drainer of process me's buffer: commits the oldest store. */
proctype drainer(byte me)
{
	byte j;
end:	do
	:: atomic {
		buf[me].n > 0 ->
		mem[buf[me].var[0]] = buf[me].val[0];
		inbuf[buf[me].var[0]]--;
		j = 1;
		do
		:: j < buf[me].n ->
			buf[me].var[j - 1] = buf[me].var[j];
			buf[me].val[j - 1] = buf[me].val[j];
			j++
		:: else -> break
		od;
		buf[me].n--;
		buf[me].var[buf[me].n] = 0;
		buf[me].val[buf[me].n] = 0;
		j = 0
	   }
	od
}

/* compare-and-swap on memory, buffer empty (lock cmpxchg): ok = 1 if
 * location v held e (it now holds x), else ok = 0 */
inline rmw_cas_mem(me, v, e, x, ok)
{
	atomic {
		buf[me].n == 0 && inbuf[v] == 0 ->
		if
		:: mem[v] == e -> mem[v] = x; ok = 1
		:: else -> ok = 0
		fi
	}
}

/* atomic add on memory, buffer empty (lock xadd) */
inline rmw_add_mem(me, v, add)
{
	atomic {
		buf[me].n == 0 && inbuf[v] == 0 ->
		mem[v] = mem[v] + add
	}
}

/* atomic OR on memory, buffer empty (lock or): r = old value */
inline rmw_or_mem(me, v, x, r)
{
	atomic {
		buf[me].n == 0 && inbuf[v] == 0 ->
		r = mem[v];
		mem[v] = r | x
	}
}

/* atomic OR through the buffer (relaxed): r = old value */
inline rmw_or_buf(me, v, x, r)
{
	atomic {
		inbuf[v] == 0 && buf[me].n < BUFSZ ->
		r = mem[v];
		buf[me].var[buf[me].n] = v;
		buf[me].val[buf[me].n] = r | x;
		buf[me].n++;
		inbuf[v]++
	}
}
