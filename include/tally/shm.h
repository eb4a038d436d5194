/**
 * @file
 * tally/shm.h - per-CPU counters, gauges and histograms shared by many
 * processes through a region (a file or a POSIX shared-memory name), read
 * from outside like /proc/vmstat: a reader never writes, never locks and
 * never trusts what it reads. Histograms: tally/shm/hist.h.
 *
 *   struct tally_shm *r;
 *   struct tally_shm_counter reqs;
 *   char why[TALLY_SHM_ERROR_MAX];
 *   if (tally_shm_open(&r, "/run/app/stats", NULL, why, sizeof(why)))
 *           die(why);                        // created, or attached
 *   tally_shm_counter(r, "http_requests", &reqs); // same name: same object
 *   tally_shm_counter(r, "requests{method=\"get\"}", &get); // labelled
 *   tally_shm_proc_gauge(r, "inflight", &inflight); // this process's row
 *   if (fork() == 0) {                       // workers share the region
 *           tally_shm_proc_add(&inflight, 1); // leaves the sum if killed
 *           tally_shm_add(&reqs, 1);         // the per-CPU fast path
 *           tally_shm_proc_add(&inflight, -1);
 *           _exit(0);
 *   }
 *   ...
 *   // any process, read-only, e.g. the tallystat tool:
 *   tally_shm_open_ro(&ro, "/run/app/stats", 0, why, sizeof(why));
 *   tally_shm_snapshot(ro, &snap);           // names, kinds, exact values
 *
 * What is shared. The region is the whole state: a header, a directory of
 * named objects, a name index, a process table (per-process gauges' rows,
 * below), a shared area (histograms' shared words), and per-CPU storage
 * laid out CPU-major as tally's in-process arena (tally/pcpu/arena.h):
 * nr_slots + 1 regions of 2^shift bytes, region s holding CPU slot s's
 * word of every object (the last, slot nr_slots, is the shared slot), an
 * object at one offset in each, so slot s's word of an object is
 * base + (s << shift) + off. No
 * process keeps a copy or a cache: an add that returned is in the shared
 * mapping, so it outlives its process (exit, crash, kill -9), and the
 * region outlives every process (unlink it with tally_shm_unlink()).
 * Objects are never freed (the region is a ledger, as Varnish's shared
 * statistics are); a region is sized at creation and never grows.
 *
 * The update. tally_shm_add() is tally's in-process fast path on the
 * shared words: the restartable per-CPU add of tally/rseq.h
 * (tally__rseq_add: a plain add in a critical section on the CPU the
 * thread runs on) where this build and process have it, else a relaxed
 * atomic RMW. No atomics across processes on the CPU slots: a restartable
 * section on CPU c cannot interleave with another section on c, whichever
 * process it belongs to. What must never happen is a plain add and an
 * atomic meeting on one word, so every region has one discipline, chosen
 * at creation (struct tally_shm_opts.flags) and obeyed by every writer:
 *   rseq    (the default where the creator has the rseq path): a CPU
 *           slot's word takes only plain adds in sections on its CPU;
 *           atomics go to the shared slot only. A writer without the rseq
 *           path (valgrind, GLIBC_TUNABLES=glibc.pthread.rseq=0, a
 *           TALLY_PCPU_MODE=1 build, another architecture) adds
 *           atomically to the shared slot: correct, but one contended
 *           line, like nginx's shared atomics.
 *   atomic  (TALLY_SHM_ATOMIC, or a creator without the rseq path): every
 *           writer adds with a relaxed atomic RMW to the slot of the CPU
 *           it ran on a moment ago, rseq or not.
 * An add is wait-free apart from restarts, relaxed (it orders nothing),
 * and costs what tally_counter_add() costs without its carry check
 * (bench/bench_shm.c). The region keeps a written bound like tally's
 * in-process objects (tally/pcpu.h): no CPU slot at or above it has been
 * written; a writer raises it (an atomic max) before its first write to a
 * slot above it, and readers visit only the slots below it plus the
 * shared slot, so a read costs the CPUs that wrote, not the possible CPUs
 * (an unwritten region of a tmpfs file would otherwise be paged in). The
 * bound is one per region, not per object.
 *
 * Values. A counter's value is the modular sum of its words over the
 * slots (an event counter: unsigned, tally_delta() between samples); a
 * gauge is the same sum read as signed. Exact once the writers are
 * quiescent: every add that returned before a snapshot began is in it
 * (each word is loaded with a single-copy-atomic relaxed load after the
 * bound, acquire). With adds running, a snapshot holds each add or not,
 * per object; there is no cut across objects. There is no O(1)
 * approximate read and no fold: the reader sums (lim + 1) words per
 * object.
 *
 * The directory. Creating an object (tally_shm_counter() or
 * tally_shm_gauge() with a new name) takes the region's lock; finding an
 * existing one does not (the index and the published entries are read
 * with acquire loads). The lock is flock(2) on a fresh open file
 * description of the region, taken for each change and closed after: the
 * kernel drops it when its holder dies, whatever the death, forked
 * children and threads exclude each other (each lock is its own open file
 * description), and it has no state in the region for a crash or a
 * hostile writer to corrupt. A change is crash-consistent: the entry is
 * written, then the storage it takes is reserved (data_used), then the
 * entry is published (count, release); a holder killed midway leaves at
 * worst reserved space that no entry uses, or an unpublished entry that
 * the next creator overwrites. The name index is repaired under the lock
 * (entries published but not yet indexed are indexed first).
 *
 * Readers. tally_shm_open_ro() maps the region read-only; every snapshot
 * validates what it uses: the header (magic, byte order, format version,
 * word size, sizes and offsets against the file's size), the published
 * count against the directory's capacity, each entry's kind, name (length,
 * characters, terminator) and offset against the space reserved, a
 * histogram's block (its layout, bucket count, bounds and scale) against
 * the shared space reserved, the written bound against the slot count;
 * each field is loaded once, then checked, then used, and no loop runs on
 * what it reads (tally/shm/cut.h). A truncated, corrupted or hostile region gets -EINVAL
 * and a one-line reason (tally_shm_error()), never a read out of bounds;
 * an incompatible one (byte order, version, word size; for writers also
 * the slot count) gets -EPROTO and the reason. tally_shm_read_image()
 * runs the same reader on bytes in memory (tests/plain/shm_fuzz.c fuzzes
 * it, also as a libFuzzer target). One hazard is outside a reader's
 * reach: a process with write access that truncates the file while a
 * reader has it mapped makes the reader's next load of a page past the
 * end fault (SIGBUS). Snapshots check the file's size first, so only a
 * truncation racing with a snapshot can do that; tallystat catches SIGBUS
 * and reports it.
 *
 * Per-process gauges and liveness. A gauge (tally_shm_gauge()) is one
 * value shared by every writer, as a counter is: a process that dies
 * holding +3 in-flight requests leaves +3 behind. A per-process gauge
 * (tally_shm_proc_gauge(), tally_shm_proc_add()) is kept in rows: each
 * process that uses one claims a row of the region's process table
 * (max_procs rows, proc_bytes of words each, fixed at creation) and adds
 * to its own word there (a relaxed atomic add: its threads share it; no
 * other process writes it); a reader sums the words of live processes'
 * rows only. Liveness is judged by a lock, never by a pid: the claimer
 * holds an open file description lock (fcntl F_OFD_SETLK, a write lock on
 * its row's first byte of the region file) on a descriptor it keeps for as
 * long as the handle is attached; the kernel drops the lock when the
 * process dies, whatever the death (kill -9 included), and a reader tests
 * it with F_OFD_GETLK, which needs no write access and changes nothing.
 * A recycled pid therefore never looks alive (the row's pid is
 * informative), and a row is dead the moment its process is. Claims take
 * the region's lock: the first row nobody holds is zeroed (its dead
 * owner's values must not come back), then locked, so a reader never sums
 * a dead process's words. fork(): record locks are not inherited, but an
 * open file description is shared with a child, and its lock with it: so
 * a child of fork() closes its copies at once (pthread_atfork; the
 * regions holding rows are on one list per program) and claims its own
 * row at its first per-process add, starting from 0; it never keeps its
 * parent's row alive. Where open file description locks are missing
 * (before Linux 3.15, other systems) a classic POSIX lock (F_SETLK) is
 * used: per process, so a process loses it when it closes any descriptor
 * of the region file (creating an object does): create every object
 * before the first per-process add there. A reader costs one fcntl() per
 * row ever claimed (the table's high-water mark) per snapshot.
 *
 * Labels (vectors). An object's name may carry labels as
 * tally_export_name() writes them, family{k="v",...}: each such object is
 * an independent counter or gauge with its own word, and the exporter
 * (tally/shm/export.h, tallystat) renders the objects of one family as
 * one family of labelled series. A vector is thus a set of names, created
 * on first use by any process (requests{method="get"} by one worker,
 * requests{method="put"} by another); there is no fixed item list.
 *
 * Limits. Names are [a-zA-Z_:][a-zA-Z0-9_:]* with optional labels
 * ({k="v",...}: label names [a-zA-Z_][a-zA-Z0-9_]*, values UTF-8 without
 * control characters, \\, \" and \n escaped), 1..TALLY_SHM_NAME_MAX bytes.
 * Capacity is fixed at creation (TALLY_SHM_DEFAULT_OBJECTS objects,
 * TALLY_SHM_DEFAULT_SLOT_BYTES per slot, TALLY_SHM_DEFAULT_PROCS process
 * rows of TALLY_SHM_DEFAULT_PROC_BYTES, TALLY_SHM_DEFAULT_SHARED_BYTES of
 * shared area by default); a region is refused by writers whose word
 * size, byte order or CPU slot count differ from its creator's.
 *
 * Histograms (tally/shm/hist.h) are tally_hist's buckets and record on
 * the region's words: a chunk per CPU slot (64 + 8 bytes per bucket) and a
 * block in the shared area (the layout, the bank word, 16 bytes of
 * carries per bucket); a snapshot holds each one's exact cut (struct
 * tally_hist_snap: buckets, count and sum of one instant). A reader
 * attached read-only may get -EBUSY where records never pause, and a
 * record left in the middle by a process killed inside it is counted in
 * its bucket, maybe not in the sum (struct tally_shm_value.stuck says so;
 * tally/shm/cut.h says when and why). Their reads visit every CPU slot
 * (the record's section does not raise the region's written bound).
 * Groups (the hierarchy of tally/rstat.h) stay in-process: sharing them
 * would need their updated lists, flush lock and RCU-protected links in
 * the region, addressed by offsets, with a grace-period mechanism across
 * processes (liburcu's flavours are per process), and a rule for a flush
 * whose holder dies; a shared group can instead be a family of labelled
 * counters (path="/a/b"), summed by the reader.
 *
 * Concurrency. tally_shm_add(), tally_shm_hist_record(): any thread of
 * any attached process, beside everything (wait-free apart from restarts).
 * tally_shm_proc_add(): any thread, beside everything (lock-free; the
 * first in a process, or in a child of fork(), claims a row: blocking).
 * tally_shm_counter()/gauge()/hist(): any thread, beside everything
 * (blocking on the region's lock when it creates). Snapshots: any thread
 * of any process, beside everything; they never block a writer (a
 * histogram's cut waits for records in flight, tally/shm/cut.h). A handle (struct
 * tally_shm) may be used by several threads at once except for
 * tally_shm_close(), and its error text is the last failure's of any of
 * them. fork(): the child may use the parent's handle and objects.
 *
 * This header holds the structures and the public calls with their
 * contracts. The machinery sits beside it (each refuses to be included on
 * its own):
 *   tally/shm/format.h    the region's header, entries and rows
 *   tally/shm/read.h      errors, names, the validating reader, liveness
 *   tally/shm/open.h      creating and attaching a region
 *   tally/shm/objects.h   finding and creating objects, the add's slow path
 *   tally/shm/procs.h     per-process rows: claims, releases, fork()
 *   tally/shm/cut.h       histograms read: their blocks checked, their
 *                         cuts taken; the snapshot
 * tally/shm/export.h (public) feeds a region to tally/export.h;
 * tally/shm/hist.h (public) puts histograms in regions.
 */
#ifndef TALLY_SHM_H
#define TALLY_SHM_H

#include <tally/arch.h>
#include <tally/hist.h>
#include <tally/monotonic.h>
#include <tally/pcpu.h>
#include <tally/rseq.h>
#include <tally/utf8.h>

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The format version a region is written in and this header reads. */
#define TALLY_SHM_VERSION 2
/** Longest object name, in bytes, labels included. */
#define TALLY_SHM_NAME_MAX 231
/** The size of the buffers that take a one-line error. */
#define TALLY_SHM_ERROR_MAX 256
/** Objects a region holds unless the creator says otherwise. */
#ifndef TALLY_SHM_DEFAULT_OBJECTS
#  define TALLY_SHM_DEFAULT_OBJECTS 4096
#endif
/** Bytes of words each CPU slot holds unless the creator says otherwise
 * (a word per counter or gauge). */
#ifndef TALLY_SHM_DEFAULT_SLOT_BYTES
#  define TALLY_SHM_DEFAULT_SLOT_BYTES 65536
#endif
/** Most objects a region may hold (a reader refuses more). */
#define TALLY_SHM_MAX_OBJECTS (1u << 24)
/** Process rows (per-process gauges' owners) unless the creator says
 * otherwise. */
#ifndef TALLY_SHM_DEFAULT_PROCS
#  define TALLY_SHM_DEFAULT_PROCS 256
#endif
/** Bytes of per-process gauges each process row holds unless the creator
 * says otherwise (a word per per-process gauge). */
#ifndef TALLY_SHM_DEFAULT_PROC_BYTES
#  define TALLY_SHM_DEFAULT_PROC_BYTES 4096
#endif
/** Most process rows a region may have (a reader refuses more). */
#define TALLY_SHM_MAX_PROCS 65536u
/** Bytes of the shared area unless the creator says otherwise (a
 * histogram's block takes 128 + 16 per bucket + 8 per explicit bound,
 * rounded up to 64: 73,152 for tally_hist's default layout). */
#ifndef TALLY_SHM_DEFAULT_SHARED_BYTES
#  define TALLY_SHM_DEFAULT_SHARED_BYTES (1u << 20)
#endif

/** Object kinds. */
enum tally_shm_kind {
	TALLY_SHM_COUNTER = 1, /**< an event counter: unsigned, modular */
	TALLY_SHM_GAUGE = 2,   /**< a signed value that goes up and down */
	/** a gauge each process keeps in its own row: its value is the sum
	 * over the live processes only (see "Per-process gauges") */
	TALLY_SHM_PROC_GAUGE = 3,
	/** a histogram (tally/shm/hist.h): buckets, count and sum */
	TALLY_SHM_HIST = 4
};

/** tally_shm_open() flags. */
enum {
	/** where is a POSIX shared-memory name ("/name", shm_open()), not a
	 * path. */
	TALLY_SHM_POSIX = 1,
	/** Attach only: fail with -ENOENT if the region does not exist. */
	TALLY_SHM_NOCREATE = 2,
	/** Create only: fail with -EEXIST if it exists. */
	TALLY_SHM_EXCL = 4,
	/** A new region's writers all use atomics (see the top of the file). */
	TALLY_SHM_ATOMIC = 8
};

/** Options for tally_shm_open(): zero-initialise; every zero is a default. */
struct tally_shm_opts {
	/** TALLY_SHM_* flags. */
	unsigned flags;
	/** A new region's file mode, applied as given (not filtered by the
	 * umask); 0: 0600. */
	unsigned mode;
	/** A new region's object capacity; 0: TALLY_SHM_DEFAULT_OBJECTS. */
	unsigned max_objects;
	/** A new region's bytes per CPU slot, rounded up to a power of two of
	 * at least a page; 0: TALLY_SHM_DEFAULT_SLOT_BYTES. */
	size_t slot_bytes;
	/** A new region's process rows (processes that may hold per-process
	 * gauges at once); 0: TALLY_SHM_DEFAULT_PROCS. */
	unsigned max_procs;
	/** A new region's bytes per process row, rounded up to a power of
	 * two of at least a page; 0: TALLY_SHM_DEFAULT_PROC_BYTES. */
	size_t proc_bytes;
	/** A new region's bytes of shared area (histograms' blocks), rounded
	 * up to a page; 0: TALLY_SHM_DEFAULT_SHARED_BYTES. */
	size_t shared_bytes;
};

#define TALLY__SHM_INSIDE 1
#include <tally/shm/format.h>
#undef TALLY__SHM_INSIDE

/** A region attached with tally_shm_open() or tally_shm_open_ro(). Opaque. */
struct tally_shm {
	/* private: use the tally_shm_* calls */
	unsigned char *tally__map;
	size_t tally__len;
	struct tally__shm_header *tally__hdr;
	struct tally__shm_layout tally__lay;
	int tally__fd;
	int tally__ro;
	unsigned tally__flags;
	uint32_t tally__no_plain; /* 0: the bound an atomic-region handle's sections see */
	uint64_t tally__dev;
	uint64_t tally__ino;
	char *tally__where;
	/* This process's row (per-process gauges): its words, NULL until
	 * claimed (and again in a child of fork()); the descriptor whose
	 * lock holds it, the row's number, the link in the process's list
	 * of regions holding rows (for fork), adds that found no row. */
	unsigned char *tally__row;
	int tally__row_fd;
	unsigned tally__row_idx;
	int tally__row_posix;        /* the lock is a classic POSIX one */
	struct tally_shm *tally__row_next;
	int tally__on_list;
	unsigned long tally__row_lost;
	char tally__error[TALLY_SHM_ERROR_MAX];
};

/** A counter or gauge in a region: a small value the caller keeps (copy it
 * freely; valid while its region is attached). Opaque. */
struct tally_shm_counter {
	/* private */
	unsigned char *tally__base;     /* slot 0's word */
	const uint32_t *tally__lim;     /* what the section compares: the bound, or 0 */
	uint32_t *tally__bound;         /* the region's written bound */
	unsigned tally__nr, tally__shift;
	unsigned tally__atomic;         /* the region's discipline is atomic */
};

/** A per-process gauge in a region (tally_shm_proc_gauge()): a small
 * value the caller keeps; valid while its region is attached. Opaque. */
struct tally_shm_proc_gauge {
	/* private */
	struct tally_shm *tally__r;
	uint64_t tally__off; /* in every process row */
};

/** One object's value in a snapshot. */
struct tally_shm_value {
	char name[TALLY_SHM_NAME_MAX + 1]; /**< its name (labels included) */
	unsigned kind;                     /**< enum tally_shm_kind */
	tally_uword raw; /**< modular sum of its words (a gauge: tally__to_signed;
			  * a per-process gauge: over the live processes' rows;
			  * a histogram: its count, modulo 2^TALLY_WORD_BITS) */
	/** a histogram: one exact cut (count, sum and buckets of one instant;
	 * tally/hist.h's readers apply: tally_hist_quantile(), ...), owned by
	 * the snapshot; NULL for the other kinds */
	struct tally_hist_snap *hist;
	/** a histogram: the unit readers show, shown = recorded x scale (1e-9:
	 * nanoseconds recorded, seconds shown); 1 for the other kinds */
	double scale;
	/** a histogram: 0 when its cut is exact; else the observations its
	 * buckets (and count) hold whose records had not finished, left in the
	 * middle by a process killed or stopped inside them (not in the sum:
	 * tally/shm/cut.h) */
	uint64_t stuck;
};

/** What a snapshot found: zero-initialise, reuse, free with
 * tally_shm_snap_free(). */
struct tally_shm_snap {
	struct tally_shm_value *v; /**< the objects, in creation order */
	size_t n;                  /**< how many */
	size_t cap;                /**< private: room in v */
	unsigned nr_slots;         /**< the region's CPU slots */
	unsigned lim;              /**< CPU slots written so far */
	uint64_t created_ns;       /**< the region's creation time */
	unsigned procs;            /**< process rows ever claimed */
	unsigned procs_live;       /**< of those, held by a live process now */
	unsigned char *alive;      /**< private: [procs] */
	size_t alive_cap;          /**< private */
	uint64_t *scratch;         /**< private: histograms' cuts */
	size_t scratch_cap;        /**< private */
};

#define TALLY__SHM_INSIDE 1
#include <tally/shm/read.h>
#include <tally/shm/cut.h>
#include <tally/shm/open.h>
#include <tally/shm/objects.h>
#include <tally/shm/procs.h>
#undef TALLY__SHM_INSIDE

/* ---- errors, snapshots ------------------------------------------------------ */

/** tally_shm_error - why the last failing call on r failed ("" if none). */
static inline const char *tally_shm_error(const struct tally_shm *r)
{
	return r ? r->tally__error : "NULL region";
}

/** tally_shm_snap_free - free what s holds (s may be reused after). */
static inline void tally_shm_snap_free(struct tally_shm_snap *s)
{
	size_t i;
	if (!s)
		return;
	for (i = 0; i < s->cap; i++)
		if (s->v[i].hist) {
			tally_hist_snap_destroy(s->v[i].hist);
			free(s->v[i].hist);
		}
	free(s->v);
	free(s->alive);
	free(s->scratch);
	memset(s, 0, sizeof(*s));
}

/**
 * tally_shm_read_image - read a region's image of len bytes at buf (a
 * copy of a region file, or untrusted bytes) into s: the reader of
 * tally_shm_snapshot(), on memory. buf must be aligned for 8-byte loads.
 * Returns 0, -EINVAL (not a region, truncated or corrupted: also a
 * histogram whose buckets do not add up to its count, read once), -EPROTO
 * (incompatible) or -ENOMEM, with a one-line reason in why. Never reads
 * outside [buf, buf + len). An image has no locks to test: its
 * per-process gauges sum every process row ever claimed, as the image
 * left it (a post-mortem view; tally_shm_snapshot() sums the live ones).
 * Any thread; buf must not change meanwhile unless it is a live region
 * (then values are as tally_shm_snapshot's).
 */
static inline int tally_shm_read_image(const void *buf, size_t len, struct tally_shm_snap *s,
				       char *why, size_t why_size)
{
	struct tally__shm_layout L;
	int err;
	memset(&L, 0, sizeof(L));
	if (why && why_size)
		why[0] = '\0';
	if (!buf || !s)
		return tally__shm_fail(why, why_size, -EINVAL, "NULL image or snapshot");
	err = tally__shm_check((const unsigned char *)buf, len, &L, why, why_size);
	if (err)
		return err;
	return tally__shm_snap_into((const unsigned char *)buf, NULL, -1, &L, s, why, why_size);
}

/* ---- opening ------------------------------------------------------------------ */

/**
 * tally_shm_open - attach the region at where read-write, creating it if
 * it does not exist (TALLY_SHM_NOCREATE: only attach; TALLY_SHM_EXCL:
 * only create). where is a path, or a POSIX shared-memory name ("/name")
 * with TALLY_SHM_POSIX. o: NULL for every default.
 * @return 0 with *out set; -EINVAL (bad arguments, or a corrupted region:
 * the reason in why), -EPROTO (a region this process cannot write: another
 * word size, byte order, format version or CPU slot count), -ENOENT,
 * -EEXIST, -ENOMEM or another -errno of open/mmap. *out is NULL on failure.
 * Blocking (the region's lock). Any thread.
 */
static inline int tally_shm_open(struct tally_shm **out, const char *where,
				 const struct tally_shm_opts *o, char *why, size_t why_size)
{
	return tally__shm_open_rw(out, where, o, why, why_size);
}

/**
 * tally_shm_open_ro - attach the region at where read-only (flags:
 * TALLY_SHM_POSIX or 0). Writes nothing, takes no lock. The header is
 * validated now and at every snapshot.
 * @return 0 with *out set; -EINVAL (corrupted, truncated, not a region),
 * -EPROTO (incompatible), -ENOENT, -EACCES, -ENOMEM..., with the reason in
 * why. Any thread.
 */
static inline int tally_shm_open_ro(struct tally_shm **out, const char *where, unsigned flags,
				    char *why, size_t why_size)
{
	return tally__shm_open_ro(out, where, flags, why, why_size);
}

/** tally_shm_close - detach r (NULL: nothing). Objects of r become
 * invalid in this process; the region and its counts stay. Not beside
 * other calls on r. */
static inline void tally_shm_close(struct tally_shm *r)
{
	if (r)
		tally__shm_free(r);
}

/** tally_shm_unlink - remove the region's name (flags: TALLY_SHM_POSIX or
 * 0); processes attached keep their mappings. 0 or -errno. */
static inline int tally_shm_unlink(const char *where, unsigned flags)
{
	if (!where)
		return -EINVAL;
	if ((flags & TALLY_SHM_POSIX) ? shm_unlink(where) : unlink(where))
		return -errno;
	return 0;
}

/**
 * tally_shm_snapshot - every object of r (attached either way), with its
 * exact value once writers are quiescent, into s (zero-initialised or
 * reused; a histogram's cut reuses the tally_hist_snap it had there).
 * Validates the region as untrusted input (the top of the file).
 * @return 0, -EINVAL (corrupted or truncated: tally_shm_error(r) says how),
 * -EBUSY (a histogram's records never paused for TALLY_SHM_HIST_TRIES
 * reads: r attached read-only, tally/shm/cut.h), -ENOMEM. Never blocks a
 * writer; a read-write r writes one word per histogram (its bank word,
 * which steers records away from the bank its cut reads). Counters:
 * O(objects x CPU slots written); a histogram: O(buckets x CPU slots),
 * and waits for a record preempted inside it. Any thread.
 */
static inline int tally_shm_snapshot(struct tally_shm *r, struct tally_shm_snap *s)
{
	struct stat sb;
	if (!r || !s)
		return -EINVAL;
	/* A region truncated since the attach would fault (SIGBUS): check. */
	if (fstat(r->tally__fd, &sb))
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -errno,
				       "cannot stat the region: %s", tally__shm_errstr(errno));
	if ((uint64_t)sb.st_size < r->tally__lay.total)
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -EINVAL,
				       "truncated since it was attached: %llu bytes, was %llu",
				       (unsigned long long)sb.st_size,
				       (unsigned long long)r->tally__lay.total);
	return tally__shm_snap_into(r->tally__map, r->tally__ro ? NULL : r->tally__map, r->tally__fd,
				    &r->tally__lay, s, r->tally__error,
				    sizeof(r->tally__error));
}

/* ---- objects ------------------------------------------------------------------ */

/**
 * tally_shm_counter - the counter called name in r (attached read-write),
 * created (zero) if the region has none: every process that asks for name
 * gets the same one. name: [a-zA-Z_:][a-zA-Z0-9_:]*, 1..TALLY_SHM_NAME_MAX
 * bytes (tallystat exports it as a Prometheus counter, name_total).
 * @return 0 with *c set; -EINVAL (bad name, NULL, corrupted region),
 * -EEXIST (name is a gauge), -ENOSPC (the region is full), -EROFS
 * (attached read-only), -ESTALE (the path no longer names the region), or
 * another -errno of taking the lock; tally_shm_error(r) says why.
 * Any thread; lock-free when name exists, else blocking (the lock).
 */
static inline int tally_shm_counter(struct tally_shm *r, const char *name,
				    struct tally_shm_counter *c)
{
	struct tally__shm_entry e;
	int err = c ? tally__shm_object(r, name, TALLY_SHM_COUNTER, &e) : -EINVAL;
	if (!err)
		tally__shm_handle(r, &e, c);
	return err;
}

/** tally_shm_gauge - tally_shm_counter() for a gauge (a signed value that
 * goes up and down: tally_shm_add() with either sign). One value shared by
 * every process: what a process that dies holds stays in it (a
 * process's own gauges: tally_shm_proc_gauge()). */
static inline int tally_shm_gauge(struct tally_shm *r, const char *name,
				  struct tally_shm_counter *c)
{
	struct tally__shm_entry e;
	int err = c ? tally__shm_object(r, name, TALLY_SHM_GAUGE, &e) : -EINVAL;
	if (!err)
		tally__shm_handle(r, &e, c);
	return err;
}

/* ---- per-process gauges -------------------------------------------------------- */

/**
 * tally_shm_proc_gauge - the per-process gauge called name in r (attached
 * read-write), created if the region has none (same names and errors as
 * tally_shm_counter(); -EEXIST if name is another kind). Each process adds
 * to its own row of it (tally_shm_proc_add()); a reader sums the rows of
 * live processes only, so what a process held when it died (kill -9
 * included) leaves the sum with it. The first call in a process claims
 * its row: also -ENOSPC (every row held by a live process: see
 * struct tally_shm_opts.max_procs) or an -errno of locking it. A child of
 * fork() claims its own row at its first add, starting from 0.
 * Any thread; blocking (the region's lock) when it creates or claims.
 */
static inline int tally_shm_proc_gauge(struct tally_shm *r, const char *name,
				       struct tally_shm_proc_gauge *g)
{
	struct tally__shm_entry e;
	int err = g ? tally__shm_object(r, name, TALLY_SHM_PROC_GAUGE, &e) : -EINVAL;
	if (err)
		return err;
	g->tally__r = r;
	g->tally__off = e.off;
	pthread_mutex_lock(&tally__shm_procs.mu);
	if (!__atomic_load_n(&r->tally__row, __ATOMIC_RELAXED))
		err = tally__shm_row_claim(r);
	pthread_mutex_unlock(&tally__shm_procs.mu);
	return err;
}

/**
 * tally_shm_proc_add - add delta (any sign) to this process's row of a
 * per-process gauge. Any thread of the process; lock-free: one relaxed
 * atomic add on a word of the process's own row (its threads share it;
 * no other process writes it). Once it returns, the value is in the
 * shared mapping; it counts while the process lives (its row's lock).
 */
TALLY__INLINE void tally_shm_proc_add(const struct tally_shm_proc_gauge *g, tally_sword delta)
{
	/* acquire: pairs with the claim's release (the zeroed words) */
	unsigned char *row = __atomic_load_n(&g->tally__r->tally__row, __ATOMIC_ACQUIRE);
	if (tally__likely(row != NULL)) {
		__atomic_fetch_add((tally_uword *)(void *)(row + g->tally__off), (tally_uword)delta,
				   __ATOMIC_RELAXED);
		return;
	}
	tally__shm_proc_add_slow(g, (tally_uword)delta);
}

/** tally_shm_proc_mine - this process's own value of g (0 before its
 * first add in a child of fork()). Any thread; wait-free. */
static inline tally_sword tally_shm_proc_mine(const struct tally_shm_proc_gauge *g)
{
	unsigned char *row = __atomic_load_n(&g->tally__r->tally__row, __ATOMIC_ACQUIRE);
	return row ? tally__to_signed(tally__load((const tally_uword *)(const void *)(row +
										    g->tally__off)))
		   : 0;
}

/** tally_shm_proc_sum - g's value over the live processes (this one
 * included), as a snapshot reads it: a lock test per process row ever
 * claimed. Any thread. */
static inline tally_sword tally_shm_proc_sum(const struct tally_shm_proc_gauge *g)
{
	return tally__to_signed(tally__shm_proc_sum(g->tally__r, g->tally__off));
}

/** tally_shm_proc_lost - per-process adds of r's handles in this process
 * that found no row to add to (a child of fork() whose claim failed:
 * tally_shm_error(r) says why). */
static inline unsigned long tally_shm_proc_lost(const struct tally_shm *r)
{
	return __atomic_load_n(&r->tally__row_lost, __ATOMIC_RELAXED);
}

/* ---- the add ------------------------------------------------------------------- */

/**
 * tally_shm_add - add delta (any sign) to a shared counter or gauge.
 * Any thread of any attached process, beside every call; wait-free apart
 * from rseq restarts. The rseq per-CPU add of tally/rseq.h on this CPU's
 * word of the shared region, or the atomic fallback (see the top of the
 * file). Relaxed. Once it returns, the add is in the shared mapping: it
 * survives the process.
 */
TALLY__INLINE void tally_shm_add(const struct tally_shm_counter *c, tally_sword delta)
{
#if TALLY__HAVE_RSEQ
	tally_uword nv, *w;
	if (tally__likely(tally__rseq_add(c->tally__base, c->tally__shift,
					  __atomic_load_n(c->tally__lim, __ATOMIC_RELAXED),
					  (tally_uword)delta, &nv, &w)))
		return;
#endif
	tally__shm_add_slow(c, (tally_uword)delta);
}

/** tally_shm_sum - c's exact value (modular; cast to tally_sword for a
 * gauge) from this process's mapping: the slots written and the shared
 * slot. Any thread; wait-free. */
static inline tally_uword tally_shm_sum(const struct tally_shm_counter *c)
{
	tally_uword sum = 0;
	unsigned s, lim = __atomic_load_n(c->tally__bound, __ATOMIC_ACQUIRE);
	for (s = 0; s < lim && s < c->tally__nr; s++)
		sum += tally__load((const tally_uword *)(const void *)(c->tally__base +
								      ((size_t)s << c->tally__shift)));
	return sum + tally__load((const tally_uword *)(const void *)(c->tally__base +
								   ((size_t)c->tally__nr
								    << c->tally__shift)));
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_SHM_H */
