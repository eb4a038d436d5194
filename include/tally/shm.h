/**
 * @file
 * tally/shm.h - per-CPU counters and gauges shared by many processes
 * through a region (a file or a POSIX shared-memory name), read from
 * outside like /proc/vmstat: a reader never writes, never locks and never
 * trusts what it reads.
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
 * named objects, a name index, a process table (per-process gauges'
 * rows, below), and per-CPU storage laid out CPU-major as
 * tally's in-process arena (tally/pcpu/arena.h): nr_slots + 1 regions of
 * 2^shift bytes, region s holding CPU slot s's word of every object (the
 * last, slot nr_slots, is the shared slot), an object at one offset in
 * each, so slot s's word of an object is base + (s << shift) + off. No
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
 * characters, terminator) and offset against the space reserved, the
 * written bound against the slot count; each field is loaded once, then
 * checked, then used. A truncated, corrupted or hostile region gets -EINVAL
 * and a one-line reason (tally_shm_error()), never a read out of bounds;
 * an incompatible one (byte order, version, word size; for writers also
 * the slot count) gets -EPROTO and the reason. tally_shm_read_image()
 * runs the same reader on bytes in memory (tests/plain/shm_fuzz.c fuzzes
 * it, also as a libFuzzer target). One hazard is outside a reader's reach: a process with write access
 * that truncates the file while a reader has it mapped makes the reader's
 * next load of a page past the end fault (SIGBUS). Snapshots check the
 * file's size first, so only a truncation racing with a snapshot can do
 * that; tallystat catches SIGBUS and reports it.
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
 * rows of TALLY_SHM_DEFAULT_PROC_BYTES by default); a region is refused by
 * writers whose word size, byte order or CPU slot count differ from its
 * creator's. Histograms are not in regions yet: tally/hist.h's record is
 * a restartable section over a bucket layout of its own (a few hundred
 * buckets per CPU, a record of n >= 16 in flight tracked for its cut), and
 * its per-CPU storage comes from the in-process arena; in a region it
 * would be an object of many words per slot, with its layout (sub-bucket
 * precision, range) in the entry, validated by readers like an entry's
 * offset, its record section pointed at the region's words, and the
 * exporter's histogram source (tally/export_hist.h) fed from a snapshot of
 * those words. That needs hist.h's record and snapshot to take storage
 * they do not own (a change to hist*.h, which this header does not make);
 * until then, a latency distribution in a region is a labelled counter
 * per range (examples/tallystat/prefork.c: requests_by_latency{range=...}).
 * Groups (the hierarchy of tally/rstat.h) stay in-process: sharing them
 * would need their updated lists, flush lock and RCU-protected links in
 * the region, addressed by offsets, with a grace-period mechanism across
 * processes (liburcu's flavours are per process), and a rule for a flush
 * whose holder dies; a shared group can instead be a family of labelled
 * counters (path="/a/b"), summed by the reader.
 *
 * Concurrency. tally_shm_add() on any object: any thread of any attached
 * process, beside everything (wait-free apart from restarts).
 * tally_shm_proc_add(): any thread, beside everything (lock-free; the
 * first in a process, or in a child of fork(), claims a row: blocking).
 * tally_shm_counter()/gauge(): any thread, beside everything (blocking on
 * the region's lock when it creates). Snapshots: any thread of any
 * process, beside everything; they never block a writer. A handle (struct
 * tally_shm) may be used by several threads at once except for
 * tally_shm_close(), and its error text is the last failure's of any of
 * them. fork(): the child may use the parent's handle and objects.
 */
#ifndef TALLY_SHM_H
#define TALLY_SHM_H

#include <tally/arch.h>
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

/* Strict ISO C (-std=c11) hides these POSIX calls in glibc: compatible
 * redeclarations (C++ compilers define _GNU_SOURCE). Elsewhere, build with
 * POSIX visible (_POSIX_C_SOURCE 200809L, or the compiler's gnu modes). */
#if !defined(__cplusplus) && defined(__GLIBC__)
#  if !defined(__USE_XOPEN_EXTENDED) && !defined(__USE_XOPEN2K)
extern int ftruncate(int fd, __off_t length);
#  endif
#  if !defined(__USE_POSIX)
extern int fchmod(int fd, __mode_t mode);
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** The format version a region is written in and this header reads. */
#define TALLY_SHM_VERSION 1
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

/** Object kinds. */
enum tally_shm_kind {
	TALLY_SHM_COUNTER = 1, /**< an event counter: unsigned, modular */
	TALLY_SHM_GAUGE = 2,   /**< a signed value that goes up and down */
	/** a gauge each process keeps in its own row: its value is the sum
	 * over the live processes only (see "Per-process gauges") */
	TALLY_SHM_PROC_GAUGE = 3
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
};

/* ---- the format (little or big endian: the creator's) ------------------- */

/* The header: immutable fields, then the mutable ones on their own lines. */
struct tally__shm_header {
	char magic[8];        /* "TALLYSHM", stored last at creation (release) */
	uint32_t bom;         /* 0x01020304 in the creator's byte order */
	uint32_t version;     /* TALLY_SHM_VERSION */
	uint32_t header_size; /* sizeof(struct tally__shm_header) */
	uint32_t word_bits;   /* TALLY_WORD_BITS of the creator */
	uint32_t page_size;   /* the creator's (informative) */
	uint32_t nr_slots;    /* CPU slots; slot nr_slots is the shared slot */
	uint32_t shift;       /* log2 of the distance between slots' regions */
	uint32_t dir_cap;     /* directory entries */
	uint32_t entry_size;  /* sizeof(struct tally__shm_entry) */
	uint32_t index_cap;   /* name index slots, a power of two >= 2 dir_cap */
	uint32_t flags;       /* TALLY__SHM_F_* */
	uint32_t pad0;
	uint64_t index_off;   /* uint32_t[index_cap]: entry + 1, 0 empty */
	uint64_t dir_off;     /* struct tally__shm_entry[dir_cap] */
	uint64_t data_off;    /* slot 0's region, page aligned */
	uint64_t total_size;  /* the file's size */
	uint64_t created_ns;  /* CLOCK_REALTIME at creation (informative) */
	uint32_t proc_cap;    /* process rows */
	uint32_t proc_shift;  /* log2 of a process row's bytes of words */
	uint64_t proc_off;    /* struct tally__shm_row[proc_cap]: rows' headers */
	uint64_t pdata_off;   /* the rows' words, row i at pdata_off + (i << proc_shift) */
	uint64_t pad1;
	/* offset 128: the written bound, loaded by every add (raised rarely) */
	uint32_t lim;
	uint32_t pad2[15];
	/* offset 192: the directory's state (under the lock; count release) */
	uint32_t count;     /* published entries */
	uint32_t indexed;   /* entries in the name index */
	uint64_t data_used; /* bytes reserved in each slot's region */
	uint64_t proc_used; /* bytes reserved in each process row */
	uint32_t procs;     /* rows ever claimed: rows at or above it never were */
	uint32_t pad4;
	uint64_t pad3[4];
};

/* A directory entry: immutable once published. */
struct tally__shm_entry {
	uint32_t kind;     /* enum tally_shm_kind */
	uint32_t words;    /* words per slot or row (1) */
	uint64_t off;      /* byte offset in every slot's region (a
			    * per-process gauge: in every process row) */
	uint32_t name_len; /* 1..TALLY_SHM_NAME_MAX */
	uint32_t pad;
	char name[TALLY_SHM_NAME_MAX + 1]; /* NUL-terminated, NUL-padded */
};

/* A process row's header (informative: liveness is the lock on its first
 * byte, never these fields). */
struct tally__shm_row {
	uint32_t pid;        /* the last claimer's */
	uint32_t claims;     /* times the row was claimed */
	uint64_t claimed_ns; /* CLOCK_REALTIME of the last claim */
	uint64_t pad[6];
};

typedef char tally__shm_header_size[sizeof(struct tally__shm_header) == 256 ? 1 : -1];
typedef char tally__shm_entry_size[sizeof(struct tally__shm_entry) == 256 ? 1 : -1];
typedef char tally__shm_row_size[sizeof(struct tally__shm_row) == 64 ? 1 : -1];

#define TALLY__SHM_BOM 0x01020304u
#define TALLY__SHM_F_ATOMIC 1u
#define TALLY__SHM_MAX_SLOTS 65536u
#define TALLY__SHM_MAX_SHIFT 40u

/* The validated layout: copies of the header's immutable fields. */
struct tally__shm_layout {
	uint64_t index_off, dir_off, data_off, total, proc_off, pdata_off;
	unsigned nr, shift, dir_cap, index_cap, flags, page, proc_cap, pshift;
	uint64_t created_ns;
};

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
			  * a per-process gauge: over the live processes' rows) */
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
};

/* ---- errors --------------------------------------------------------------- */

static inline int tally__shm_fail(char *why, size_t n, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline int tally__shm_fail(char *why, size_t n, int err, const char *fmt, ...)
{
	va_list ap;
	if (why && n) {
		va_start(ap, fmt);
		(void)vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* The text of an errno value this header reports (tally__shm_errstr() is not
 * thread-safe, and strerror_r() differs between C libraries). */
static inline const char *tally__shm_errstr(int e)
{
	switch (e) {
	case ENOENT: return "No such file or directory";
	case EACCES: return "Permission denied";
	case EPERM: return "Operation not permitted";
	case EEXIST: return "File exists";
	case ENOTDIR: return "Not a directory";
	case EISDIR: return "Is a directory";
	case ENAMETOOLONG: return "File name too long";
	case ELOOP: return "Too many levels of symbolic links";
	case EROFS: return "Read-only file system";
	case ENOSPC: return "No space left on device";
	case ENOMEM: return "Cannot allocate memory";
	case EMFILE: return "Too many open files";
	case ENFILE: return "Too many open files in system";
	case EINVAL: return "Invalid argument";
	case EBADF: return "Bad file descriptor";
	case EAGAIN: return "Resource temporarily unavailable";
	case EINTR: return "Interrupted system call";
	case ENOLCK: return "No locks available";
	case EDEADLK: return "Resource deadlock avoided";
	case ENODEV: return "No such device";
	case EFBIG: return "File too large";
	case EOVERFLOW: return "Value too large for defined data type";
	case ENOSYS: return "Function not implemented";
	case EIO: return "Input/output error";
	case ESTALE: return "Stale file handle";
	default: return "unexpected error";
	}
}

/** tally_shm_error - why the last failing call on r failed ("" if none). */
static inline const char *tally_shm_error(const struct tally_shm *r)
{
	return r ? r->tally__error : "NULL region";
}

/* ---- names ----------------------------------------------------------------- */

TALLY__INLINE int tally__shm_name_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

TALLY__INLINE int tally__shm_label_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

/*
 * The length of the valid name at s, or 0. A name is a family,
 * [a-zA-Z_:][a-zA-Z0-9_:]*, optionally followed by labels as
 * tally_export_name() writes them: {k="v",...}, label names
 * [a-zA-Z_][a-zA-Z0-9_]*, values UTF-8 without control characters, with
 * \\, \" and \n escaped; 1..TALLY_SHM_NAME_MAX bytes in all. Reads at most
 * TALLY_SHM_NAME_MAX + 1 bytes (an entry's name field), whatever s holds.
 */
static inline size_t tally__shm_name_ok(const char *s)
{
	const size_t max = TALLY_SHM_NAME_MAX;
	size_t i, v;
	if (!tally__shm_name_char(s[0], 1))
		return 0;
	for (i = 1; i <= max && tally__shm_name_char(s[i], 0); i++)
		;
	if (i > max)
		return 0;
	if (!s[i])
		return i;
	if (s[i] != '{')
		return 0;
	for (i++;;) {
		if (i > max || !tally__shm_label_char(s[i], 1))
			return 0;
		while (i <= max && tally__shm_label_char(s[i], 0))
			i++;
		if (i + 2 > max || s[i] != '=' || s[i + 1] != '"')
			return 0;
		for (v = i += 2; i <= max && s[i] != '"'; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c < 0x20 || c == 0x7f)
				return 0; /* the NUL too: no closing quote */
			if (c == '\\') {
				if (i + 1 > max ||
				    (s[i + 1] != '\\' && s[i + 1] != '"' && s[i + 1] != 'n'))
					return 0;
				i++;
			}
		}
		if (i + 1 > max || !tally__utf8_ok(s + v, i - v))
			return 0;
		i++; /* the closing quote */
		if (s[i] == ',') {
			i++;
			continue;
		}
		if (s[i] != '}' || i + 1 > max || s[i + 1])
			return 0;
		return i + 1;
	}
}

static inline uint64_t tally__shm_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	while (n--)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

/* ---- the reader: validation of untrusted bytes ------------------------------ */

/*
 * tally__shm_check - validate the header of the len bytes at map into *L.
 * 0, -EINVAL (not a region, truncated, corrupted) or -EPROTO (a region
 * this build cannot read), with the reason in why. Loads each field once.
 */
static inline int tally__shm_check(const unsigned char *map, size_t len,
				   struct tally__shm_layout *L, char *why, size_t n)
{
	struct tally__shm_header h;
	uint64_t dir_end, slots_bytes, proc_end, pdata_bytes;
	if (len < sizeof(h))
		return tally__shm_fail(why, n, -EINVAL,
				       "truncated: %zu bytes, a region's header takes %zu", len,
				       sizeof(h));
	memcpy(&h, map, sizeof(h));
	if (memcmp(h.magic, "TALLYSHM", 8) != 0) {
		static const char zero[8] = {0};
		if (!memcmp(h.magic, zero, 8))
			return tally__shm_fail(why, n, -EINVAL,
					       "not initialised (no magic: being created, or "
					       "its creator died before finishing)");
		return tally__shm_fail(why, n, -EINVAL, "not a tally region (bad magic)");
	}
	if (h.bom == 0x04030201u)
		return tally__shm_fail(why, n, -EPROTO, "byte order differs from this machine's");
	if (h.bom != TALLY__SHM_BOM)
		return tally__shm_fail(why, n, -EINVAL, "corrupted: byte-order mark 0x%08x",
				       (unsigned)h.bom);
	if (h.version != TALLY_SHM_VERSION)
		return tally__shm_fail(why, n, -EPROTO,
				       "format version %u, this build reads version %u",
				       (unsigned)h.version, (unsigned)TALLY_SHM_VERSION);
	if (h.word_bits != TALLY_WORD_BITS)
		return tally__shm_fail(why, n, -EPROTO,
				       "word size %u bits, this build uses %u (TALLY_WORD_BITS)",
				       (unsigned)h.word_bits, (unsigned)TALLY_WORD_BITS);
	if (h.header_size != sizeof(h) || h.entry_size != sizeof(struct tally__shm_entry))
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: header size %u, entry size %u (version %u has "
				       "%zu and %zu)",
				       (unsigned)h.header_size, (unsigned)h.entry_size,
				       (unsigned)h.version, sizeof(h), sizeof(struct tally__shm_entry));
	if (h.nr_slots < 1 || h.nr_slots > TALLY__SHM_MAX_SLOTS)
		return tally__shm_fail(why, n, -EINVAL, "corrupted: %u CPU slots (1..%u)",
				       (unsigned)h.nr_slots, TALLY__SHM_MAX_SLOTS);
	if (h.shift < 12 || h.shift > TALLY__SHM_MAX_SHIFT)
		return tally__shm_fail(why, n, -EINVAL, "corrupted: slot shift %u (12..%u)",
				       (unsigned)h.shift, TALLY__SHM_MAX_SHIFT);
	if (h.dir_cap < 1 || h.dir_cap > TALLY_SHM_MAX_OBJECTS ||
	    h.index_cap < 2 * (uint64_t)h.dir_cap || h.index_cap > 2 * TALLY_SHM_MAX_OBJECTS ||
	    (h.index_cap & (h.index_cap - 1)))
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: directory of %u entries, index of %u slots",
				       (unsigned)h.dir_cap, (unsigned)h.index_cap);
	if (h.flags & ~TALLY__SHM_F_ATOMIC)
		return tally__shm_fail(why, n, -EPROTO, "unknown flags 0x%x", (unsigned)h.flags);
	if (h.proc_cap < 1 || h.proc_cap > TALLY_SHM_MAX_PROCS || h.proc_shift < 12 ||
	    h.proc_shift > 24)
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: %u process rows (1..%u) of shift %u (12..24)",
				       (unsigned)h.proc_cap, TALLY_SHM_MAX_PROCS,
				       (unsigned)h.proc_shift);
	/* The parts in order, each inside the next's start: all sizes here
	 * are below 2^41, so no sum overflows 64 bits. */
	slots_bytes = ((uint64_t)h.nr_slots + 1) << h.shift;
	dir_end = h.dir_off + (uint64_t)h.dir_cap * sizeof(struct tally__shm_entry);
	proc_end = h.proc_off + (uint64_t)h.proc_cap * sizeof(struct tally__shm_row);
	pdata_bytes = (uint64_t)h.proc_cap << h.proc_shift;
	if (h.index_off < sizeof(h) || h.index_off > ((uint64_t)1 << 40) || h.index_off % 8 ||
	    h.dir_off < h.index_off + 4 * (uint64_t)h.index_cap || h.dir_off > ((uint64_t)1 << 40) ||
	    h.dir_off % 8 || h.proc_off < dir_end || h.proc_off > ((uint64_t)1 << 40) ||
	    h.proc_off % 64 || h.data_off < proc_end || h.data_off > ((uint64_t)1 << 40) ||
	    h.data_off % 64 || h.pdata_off < h.data_off + slots_bytes ||
	    h.pdata_off > ((uint64_t)1 << 41) || h.pdata_off % 64 ||
	    h.total_size < h.pdata_off + pdata_bytes)
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: offsets index %llu, directory %llu, processes "
				       "%llu, data %llu, process data %llu, size %llu do not fit "
				       "together",
				       (unsigned long long)h.index_off, (unsigned long long)h.dir_off,
				       (unsigned long long)h.proc_off, (unsigned long long)h.data_off,
				       (unsigned long long)h.pdata_off,
				       (unsigned long long)h.total_size);
	if (h.total_size > len)
		return tally__shm_fail(why, n, -EINVAL, "truncated: %zu bytes, the header says %llu",
				       len, (unsigned long long)h.total_size);
	L->proc_off = h.proc_off;
	L->pdata_off = h.pdata_off;
	L->proc_cap = h.proc_cap;
	L->pshift = h.proc_shift;
	L->index_off = h.index_off;
	L->dir_off = h.dir_off;
	L->data_off = h.data_off;
	L->total = h.total_size;
	L->nr = h.nr_slots;
	L->shift = h.shift;
	L->dir_cap = h.dir_cap;
	L->index_cap = h.index_cap;
	L->flags = h.flags;
	L->page = h.page_size;
	L->created_ns = h.created_ns;
	return 0;
}

/* The header's mutable fields, loaded once each (acquire: pairs with the
 * release stores of a creator and of a raise's program order), checked. */
struct tally__shm_state {
	unsigned count, lim, procs;
	uint64_t used, pused;
};

static inline int tally__shm_state(const unsigned char *map, const struct tally__shm_layout *L,
				   struct tally__shm_state *st, char *why, size_t n)
{
	const struct tally__shm_header *h = (const struct tally__shm_header *)(const void *)map;
	st->count = __atomic_load_n(&h->count, __ATOMIC_ACQUIRE);
	st->lim = __atomic_load_n(&h->lim, __ATOMIC_ACQUIRE);
	st->used = __atomic_load_n(&h->data_used, __ATOMIC_ACQUIRE);
	st->pused = __atomic_load_n(&h->proc_used, __ATOMIC_ACQUIRE);
	st->procs = __atomic_load_n(&h->procs, __ATOMIC_ACQUIRE);
	if (st->count > L->dir_cap)
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: %u objects in a directory of %u", st->count,
				       L->dir_cap);
	if (st->lim > L->nr)
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: written bound %u past the %u CPU slots", st->lim,
				       L->nr);
	if (st->used > ((uint64_t)1 << L->shift))
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: %llu bytes used of a %llu-byte slot",
				       (unsigned long long)st->used,
				       (unsigned long long)1 << L->shift);
	if (st->pused > ((uint64_t)1 << L->pshift) || st->procs > L->proc_cap)
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: %llu bytes used of a %llu-byte process row, %u "
				       "rows claimed of %u",
				       (unsigned long long)st->pused,
				       (unsigned long long)1 << L->pshift, st->procs,
				       L->proc_cap);
	return 0;
}

/* Entry i (< a validated count), copied and checked into *e. */
static inline int tally__shm_entry_get(const unsigned char *map, const struct tally__shm_layout *L,
				       const struct tally__shm_state *st, unsigned i,
				       struct tally__shm_entry *e, char *why, size_t n)
{
	uint64_t used;
	memcpy(e, map + L->dir_off + (uint64_t)i * sizeof(*e), sizeof(*e));
	if (e->kind != TALLY_SHM_COUNTER && e->kind != TALLY_SHM_GAUGE &&
	    e->kind != TALLY_SHM_PROC_GAUGE)
		return tally__shm_fail(why, n, -EINVAL, "corrupted: object %u has kind %u", i,
				       (unsigned)e->kind);
	if (e->name_len < 1 || e->name_len > TALLY_SHM_NAME_MAX || e->name[e->name_len] != '\0' ||
	    tally__shm_name_ok(e->name) != e->name_len)
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: object %u's name (%u bytes) is not a valid name",
				       i, (unsigned)e->name_len);
	used = e->kind == TALLY_SHM_PROC_GAUGE ? st->pused : st->used;
	if (e->words != 1 || e->off % sizeof(tally_uword) || e->off > used ||
	    used - e->off < sizeof(tally_uword))
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: object %u ('%s') at offset %llu, %u words, past "
				       "the %llu bytes reserved",
				       i, e->name, (unsigned long long)e->off, (unsigned)e->words,
				       (unsigned long long)used);
	return 0;
}

/* The modular sum of the word at offset off over the slots below lim and
 * the shared slot (off validated against the reserved space). */
static inline tally_uword tally__shm_sum_at(const unsigned char *map,
					    const struct tally__shm_layout *L, unsigned lim,
					    uint64_t off)
{
	const unsigned char *b = map + L->data_off + off;
	tally_uword sum = 0;
	unsigned s;
	for (s = 0; s < lim; s++)
		sum += tally__load((const tally_uword *)(const void *)(b + ((size_t)s << L->shift)));
	return sum + tally__load((const tally_uword *)(const void *)(b + ((size_t)L->nr << L->shift)));
}

/* ---- process rows: liveness --------------------------------------------------- */

/* Open file description locks (Linux 3.15; their numbers are the same on
 * every architecture), named here because strict ISO C hides them. */
#if defined(__linux__)
#  define TALLY__SHM_OFD_GETLK 36
#  define TALLY__SHM_OFD_SETLK 37
#endif

static inline void tally__shm_flock_at(struct flock *fl, short type, uint64_t at)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = (off_t)at;
	fl->l_len = 1;
}

/* Is the byte at `at` of fd's file write-locked by a lock owner other
 * than this descriptor's (an open file description lock), or, where those
 * are missing, by another process (a POSIX lock)? 1, 0, or -errno.
 * Needs no write access; changes nothing. */
static inline int tally__shm_row_held(int fd, uint64_t at)
{
	struct flock fl;
#ifdef TALLY__SHM_OFD_GETLK
	tally__shm_flock_at(&fl, F_WRLCK, at);
	if (!fcntl(fd, TALLY__SHM_OFD_GETLK, &fl))
		return fl.l_type != F_UNLCK;
	if (errno != EINVAL)
		return -errno;
#endif
	tally__shm_flock_at(&fl, F_WRLCK, at);
	if (fcntl(fd, F_GETLK, &fl))
		return -errno;
	return fl.l_type != F_UNLCK;
}

/*
 * Which of the first procs process rows are held by a live process, into
 * alive[0..procs) (1 or 0); the count. fd < 0 (an image in memory, with no
 * locks to test): every claimed row counts as it was left. A row whose
 * lock cannot be tested counts as dead.
 */
static inline unsigned tally__shm_liveness(int fd, const struct tally__shm_layout *L,
					   unsigned procs, unsigned char *alive)
{
	unsigned i, live = 0;
	for (i = 0; i < procs; i++) {
		alive[i] = fd < 0 ? 1
				  : tally__shm_row_held(fd, L->proc_off + (uint64_t)i *
									   sizeof(struct tally__shm_row)) == 1;
		live += alive[i];
	}
	return live;
}

/* A per-process gauge's value: the modular sum of its word at off (validated
 * against the reserved row bytes) over the rows alive. */
static inline tally_uword tally__shm_psum_at(const unsigned char *map,
					     const struct tally__shm_layout *L, unsigned procs,
					     const unsigned char *alive, uint64_t off)
{
	const unsigned char *b = map + L->pdata_off + off;
	tally_uword sum = 0;
	unsigned i;
	for (i = 0; i < procs; i++)
		if (alive[i])
			sum += tally__load((const tally_uword *)(const void *)(b + ((size_t)i
										  << L->pshift)));
	return sum;
}

/*
 * tally__shm_collect - objects [first, first + n) of the region at map
 * (header validated into L) into out[0..n), or as many as are published
 * (*got); *lim the written bound, *procs and *live the process rows
 * claimed and alive, tested through fd (< 0: an image). alive: room for
 * L->proc_cap bytes. 0 or -EINVAL with the reason.
 */
static inline int tally__shm_collect(const unsigned char *map, const struct tally__shm_layout *L,
				     int fd, unsigned char *alive, unsigned first, size_t n,
				     struct tally_shm_value *out, size_t *got, unsigned *lim,
				     unsigned *procs, unsigned *live, char *why, size_t wn)
{
	struct tally__shm_state st;
	struct tally__shm_entry e;
	size_t i;
	unsigned nlive = 0;
	int err = tally__shm_state(map, L, &st, why, wn), rows = 0;
	*got = 0;
	if (err)
		return err;
	if (lim)
		*lim = st.lim;
	for (i = 0; i < n && first + i < st.count; i++) {
		err = tally__shm_entry_get(map, L, &st, (unsigned)(first + i), &e, why, wn);
		if (err)
			return err;
		memcpy(out[i].name, e.name, e.name_len + 1u);
		out[i].kind = e.kind;
		if (e.kind != TALLY_SHM_PROC_GAUGE) {
			out[i].raw = tally__shm_sum_at(map, L, st.lim, e.off);
			continue;
		}
		if (!rows++) /* once per snapshot: a syscall per row */
			nlive = tally__shm_liveness(fd, L, st.procs, alive);
		out[i].raw = tally__shm_psum_at(map, L, st.procs, alive, e.off);
	}
	if (!rows && (procs || live))
		nlive = tally__shm_liveness(fd, L, st.procs, alive);
	if (procs)
		*procs = st.procs;
	if (live)
		*live = nlive;
	*got = i;
	return 0;
}

/* Every published object of the region at map into s (fd: as above). */
static inline int tally__shm_snap_into(const unsigned char *map, int fd,
				       const struct tally__shm_layout *L, struct tally_shm_snap *s,
				       char *why, size_t wn)
{
	struct tally__shm_state st;
	size_t got;
	int err = tally__shm_state(map, L, &st, why, wn);
	if (err)
		return err;
	if (st.count > s->cap) {
		size_t cap = st.count;
		struct tally_shm_value *v =
			(struct tally_shm_value *)realloc(s->v, cap * sizeof(*v));
		if (!v)
			return tally__shm_fail(why, wn, -ENOMEM, "out of memory");
		s->v = v;
		s->cap = cap;
	}
	if (L->proc_cap > s->alive_cap) {
		unsigned char *a = (unsigned char *)realloc(s->alive, L->proc_cap);
		if (!a)
			return tally__shm_fail(why, wn, -ENOMEM, "out of memory");
		s->alive = a;
		s->alive_cap = L->proc_cap;
	}
	s->n = 0;
	s->nr_slots = L->nr;
	s->created_ns = L->created_ns;
	err = tally__shm_collect(map, L, fd, s->alive, 0, st.count, s->v, &got, &s->lim, &s->procs,
				 &s->procs_live, why, wn);
	if (!err)
		s->n = got;
	return err;
}

/** tally_shm_snap_free - free what s holds (s may be reused after). */
static inline void tally_shm_snap_free(struct tally_shm_snap *s)
{
	if (!s)
		return;
	free(s->v);
	free(s->alive);
	memset(s, 0, sizeof(*s));
}

/**
 * tally_shm_read_image - read a region's image of len bytes at buf (a
 * copy of a region file, or untrusted bytes) into s: the reader of
 * tally_shm_snapshot(), on memory. buf must be aligned for 8-byte loads.
 * Returns 0, -EINVAL (not a region, truncated or corrupted), -EPROTO
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
	return tally__shm_snap_into((const unsigned char *)buf, -1, &L, s, why, why_size);
}

/* ---- opening ------------------------------------------------------------------ */

static inline int tally__shm_openfd(const char *where, unsigned flags, int oflag, unsigned mode)
{
	int fd;
	if (flags & TALLY_SHM_POSIX)
		fd = shm_open(where, oflag, (mode_t)mode);
	else
		fd = open(where, oflag, (mode_t)mode);
	if (fd < 0)
		return -errno;
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC); /* (shm_open sets it already) */
	return fd;
}

static inline int tally__shm_flock(int fd, int op)
{
	while (flock(fd, op))
		if (errno != EINTR)
			return -errno;
	return 0;
}

static inline void tally__shm_row_release(struct tally_shm *r);

static inline void tally__shm_free(struct tally_shm *r)
{
	tally__shm_row_release(r);
	if (r->tally__map)
		munmap(r->tally__map, r->tally__len);
	if (r->tally__fd >= 0)
		close(r->tally__fd);
	free(r->tally__where);
	free(r);
}

static inline unsigned tally__shm_log2_ceil(uint64_t v)
{
	unsigned s = 0;
	while (((uint64_t)1 << s) < v)
		s++;
	return s;
}

/* Lay a new region out in the file fd (locked, empty or abandoned). */
static inline int tally__shm_init(int fd, const struct tally_shm_opts *o, unsigned nr, char *why,
				  size_t n)
{
	struct tally__shm_header h;
	struct timespec ts;
	unsigned char *m;
	void *mv;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), slot, objs, icap, procs, pbytes;
	if (page < 4096 || (page & (page - 1)))
		page = 4096;
	objs = o->max_objects ? o->max_objects : TALLY_SHM_DEFAULT_OBJECTS;
	slot = o->slot_bytes ? o->slot_bytes : TALLY_SHM_DEFAULT_SLOT_BYTES;
	procs = o->max_procs ? o->max_procs : TALLY_SHM_DEFAULT_PROCS;
	pbytes = o->proc_bytes ? o->proc_bytes : TALLY_SHM_DEFAULT_PROC_BYTES;
	if (objs > TALLY_SHM_MAX_OBJECTS || slot > ((uint64_t)1 << TALLY__SHM_MAX_SHIFT) ||
	    procs > TALLY_SHM_MAX_PROCS || pbytes > ((uint64_t)1 << 24))
		return tally__shm_fail(why, n, -EINVAL,
				       "max_objects %llu (at most %u), slot_bytes %llu, max_procs "
				       "%llu (at most %u) or proc_bytes %llu (at most 16 MiB) too "
				       "large",
				       (unsigned long long)objs, TALLY_SHM_MAX_OBJECTS,
				       (unsigned long long)slot, (unsigned long long)procs,
				       TALLY_SHM_MAX_PROCS, (unsigned long long)pbytes);
	memset(&h, 0, sizeof(h));
	h.bom = TALLY__SHM_BOM;
	h.version = TALLY_SHM_VERSION;
	h.header_size = sizeof(h);
	h.word_bits = TALLY_WORD_BITS;
	h.page_size = (uint32_t)page;
	h.nr_slots = nr;
	h.shift = tally__shm_log2_ceil(slot < page ? page : slot);
	if (h.shift < 12)
		h.shift = 12;
	h.dir_cap = (uint32_t)objs;
	h.entry_size = sizeof(struct tally__shm_entry);
	icap = (uint64_t)1 << tally__shm_log2_ceil(2 * objs);
	h.index_cap = (uint32_t)icap;
	h.flags = (o->flags & TALLY_SHM_ATOMIC) || !TALLY__HAVE_RSEQ
#if TALLY__HAVE_RSEQ
			  || !tally__rseq_registered()
#endif
			  ? TALLY__SHM_F_ATOMIC
			  : 0;
	h.proc_cap = (uint32_t)procs;
	h.proc_shift = tally__shm_log2_ceil(pbytes < page ? page : pbytes);
	if (h.proc_shift < 12)
		h.proc_shift = 12;
	h.index_off = sizeof(h);
	h.dir_off = (h.index_off + 4 * icap + 63) / 64 * 64;
	h.proc_off = (h.dir_off + objs * sizeof(struct tally__shm_entry) + 63) / 64 * 64;
	h.data_off = (h.proc_off + procs * sizeof(struct tally__shm_row) + page - 1) / page * page;
	h.pdata_off = h.data_off + (((uint64_t)nr + 1) << h.shift);
	h.total_size = h.pdata_off + (procs << h.proc_shift);
	if (h.total_size > (uint64_t)(SIZE_MAX / 2) || (uint64_t)(off_t)h.total_size != h.total_size)
		return tally__shm_fail(why, n, -EINVAL, "a region of %llu bytes cannot be mapped here",
				       (unsigned long long)h.total_size);
	tally__os_now_utc(&ts);
	h.created_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	/* An abandoned image (its creator died before the magic) is cleared:
	 * the data must start zeroed. */
	if (ftruncate(fd, 0) || ftruncate(fd, (off_t)h.total_size))
		return tally__shm_fail(why, n, -errno, "cannot size the region to %llu bytes: %s",
				       (unsigned long long)h.total_size, tally__shm_errstr(errno));
	mv = mmap(NULL, sizeof(h), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mv == MAP_FAILED)
		return tally__shm_fail(why, n, -errno, "cannot map the region: %s",
				       tally__shm_errstr(errno));
	m = (unsigned char *)mv;
	memcpy(m, &h, sizeof(h));
	{
		/* The magic last, release: pairs with the acquire fence after a
		 * reader's copy of the header (tally_shm_open*: under the lock,
		 * or after a size check), so a region with the magic has the
		 * rest of its header. */
		uint64_t magic;
		memcpy(&magic, "TALLYSHM", 8);
		__atomic_store_n((uint64_t *)(void *)m, magic, __ATOMIC_RELEASE);
	}
	munmap(m, sizeof(h));
	return 0;
}

static inline int tally__shm_map(struct tally_shm *r, size_t len, int prot, char *why, size_t n)
{
	void *m = mmap(NULL, len, prot, MAP_SHARED, r->tally__fd, 0);
	if (m == MAP_FAILED)
		return tally__shm_fail(why, n, -errno, "cannot map %zu bytes: %s", len,
				       tally__shm_errstr(errno));
	r->tally__map = (unsigned char *)m;
	r->tally__len = len;
	r->tally__hdr = (struct tally__shm_header *)m;
	return 0;
}

static inline int tally__shm_new(struct tally_shm **out, const char *where, char *why, size_t n)
{
	struct tally_shm *r;
	*out = NULL;
	if (!where || !*where)
		return tally__shm_fail(why, n, -EINVAL, "no region path or name given");
	r = (struct tally_shm *)calloc(1, sizeof(*r));
	if (r)
		r->tally__where = (char *)malloc(strlen(where) + 1);
	if (!r || !r->tally__where) {
		free(r);
		return tally__shm_fail(why, n, -ENOMEM, "out of memory");
	}
	memcpy(r->tally__where, where, strlen(where) + 1);
	r->tally__fd = -1;
	r->tally__row_fd = -1;
	*out = r;
	return 0;
}

/* Map the validated region of r (size st_size) and check it; prot. */
static inline int tally__shm_attach(struct tally_shm *r, size_t size, int prot, char *why, size_t n)
{
	int err;
	if (size < sizeof(struct tally__shm_header))
		return tally__shm_fail(why, n, -EINVAL,
				       size ? "truncated: %zu bytes, a region's header takes 256"
					    : "empty file (%zu bytes): not initialised, or being created",
				       size);
	err = tally__shm_map(r, size, prot, why, n);
	if (err)
		return err;
	/* acquire: pairs with the creator's release store of the magic, so
	 * the header copied after it is whole */
	(void)__atomic_load_n((const uint64_t *)(const void *)r->tally__map, __ATOMIC_ACQUIRE);
	return tally__shm_check(r->tally__map, size, &r->tally__lay, why, n);
}

/* A creation abandoned by a creator that died holding the lock: no magic,
 * and a header of ours without it, or nothing written at all (the size
 * was set). Anything else is not ours to overwrite. */
static inline int tally__shm_abandoned(int fd)
{
	struct tally__shm_header h, zero;
	void *m = mmap(NULL, sizeof(h), PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 0;
	memcpy(&h, m, sizeof(h));
	munmap(m, sizeof(h));
	memset(&zero, 0, sizeof(zero));
	if (memcmp(h.magic, zero.magic, sizeof(h.magic)) != 0)
		return 0;
	return !memcmp(&h, &zero, sizeof(h)) ||
	       (h.bom == TALLY__SHM_BOM && h.header_size == sizeof(h));
}

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
	struct tally_shm_opts def;
	struct tally_shm *r;
	struct stat sb;
	unsigned nr = tally__nr_cpu_slots(), mode;
	int err, fd, created = 0;
	if (why && why_size)
		why[0] = '\0';
	if (!out)
		return tally__shm_fail(why, why_size, -EINVAL, "NULL out");
	if (!o) {
		memset(&def, 0, sizeof(def));
		o = &def;
	}
	mode = o->mode ? o->mode : 0600;
	err = tally__shm_new(out, where, why, why_size);
	if (err)
		return err;
	r = *out;
	*out = NULL;
	r->tally__flags = o->flags;
	fd = -ENOENT;
	if (!(o->flags & TALLY_SHM_NOCREATE)) {
		fd = tally__shm_openfd(where, o->flags, O_RDWR | O_CREAT | O_EXCL, mode);
		if (fd >= 0) {
			created = 1;
			(void)fchmod(fd, (mode_t)mode); /* as given, not through the umask */
		} else if (fd == -EEXIST && (o->flags & TALLY_SHM_EXCL)) {
			tally__shm_free(r);
			return tally__shm_fail(why, why_size, -EEXIST, "%s exists", where);
		}
	}
	if (fd < 0 && (fd == -EEXIST || (o->flags & TALLY_SHM_NOCREATE)))
		fd = tally__shm_openfd(where, o->flags, O_RDWR, 0);
	if (fd < 0) {
		tally__shm_free(r);
		return tally__shm_fail(why, why_size, fd, "cannot open %s: %s", where, tally__shm_errstr(-fd));
	}
	r->tally__fd = fd;
	/* The lock: this fd is a fresh open file description of ours. */
	err = tally__shm_flock(fd, LOCK_EX);
	if (!err && fstat(fd, &sb))
		err = -errno;
	if (err) {
		tally__shm_free(r);
		return tally__shm_fail(why, why_size, err, "cannot lock %s: %s", where, tally__shm_errstr(-err));
	}
	(void)created;
	/* A new file, or a creation abandoned (redone). */
	if (sb.st_size == 0 ||
	    (sb.st_size >= (off_t)sizeof(struct tally__shm_header) && tally__shm_abandoned(fd)))
		err = tally__shm_init(fd, o, nr, why, why_size);
	if (!err && fstat(fd, &sb))
		err = -errno;
	if (!err)
		err = tally__shm_attach(r, (size_t)sb.st_size, PROT_READ | PROT_WRITE, why, why_size);
	if (!err && r->tally__lay.nr != nr)
		err = tally__shm_fail(why, why_size, -EPROTO,
				      "the region has %u CPU slots, this process has %u",
				      r->tally__lay.nr, nr);
	(void)tally__shm_flock(fd, LOCK_UN);
	if (err) {
		tally__shm_free(r);
		return err;
	}
	r->tally__dev = (uint64_t)sb.st_dev;
	r->tally__ino = (uint64_t)sb.st_ino;
	*out = r;
	return 0;
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
	struct tally_shm *r;
	struct stat sb;
	int err, fd;
	if (why && why_size)
		why[0] = '\0';
	if (!out)
		return tally__shm_fail(why, why_size, -EINVAL, "NULL out");
	err = tally__shm_new(out, where, why, why_size);
	if (err)
		return err;
	r = *out;
	*out = NULL;
	r->tally__ro = 1;
	r->tally__flags = flags & TALLY_SHM_POSIX;
	fd = tally__shm_openfd(where, r->tally__flags, O_RDONLY, 0);
	if (fd < 0) {
		tally__shm_free(r);
		return tally__shm_fail(why, why_size, fd, "cannot open %s: %s", where, tally__shm_errstr(-fd));
	}
	r->tally__fd = fd;
	if (fstat(fd, &sb))
		err = tally__shm_fail(why, why_size, -errno, "cannot stat %s: %s", where,
				      tally__shm_errstr(errno));
	else if (!S_ISREG(sb.st_mode))
		err = tally__shm_fail(why, why_size, -EINVAL, "%s is not a regular file", where);
	else if ((uint64_t)sb.st_size > (uint64_t)(SIZE_MAX / 2))
		err = tally__shm_fail(why, why_size, -EINVAL, "%s is too large to map", where);
	else
		err = tally__shm_attach(r, (size_t)sb.st_size, PROT_READ, why, why_size);
	if (err) {
		tally__shm_free(r);
		return err;
	}
	r->tally__dev = (uint64_t)sb.st_dev;
	r->tally__ino = (uint64_t)sb.st_ino;
	*out = r;
	return 0;
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
 * reused). Validates the region as untrusted input (the top of the file).
 * @return 0, -EINVAL (corrupted or truncated: tally_shm_error(r) says how),
 * -ENOMEM. Wait-free on the region (no lock, no write); O(objects x CPU
 * slots written). Any thread.
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
	return tally__shm_snap_into(r->tally__map, r->tally__fd, &r->tally__lay, s, r->tally__error,
				    sizeof(r->tally__error));
}

/* ---- objects (writers) ------------------------------------------------------- */

/* The handle of validated entry e of writable region r. */
static inline void tally__shm_handle(struct tally_shm *r, const struct tally__shm_entry *e,
				     struct tally_shm_counter *c)
{
	const struct tally__shm_layout *L = &r->tally__lay;
	c->tally__base = r->tally__map + L->data_off + e->off;
	c->tally__bound = &r->tally__hdr->lim;
	c->tally__atomic = (L->flags & TALLY__SHM_F_ATOMIC) != 0;
	/* An atomic region's handle never enters a section: it sees bound 0. */
	c->tally__lim = c->tally__atomic ? &r->tally__no_plain : &r->tally__hdr->lim;
	c->tally__nr = L->nr;
	c->tally__shift = L->shift;
}

/* Find name in r: its validated entry in *e, 1; 0 if absent; < 0 if the
 * region is corrupted. Lock-free: the index, then the published entries it
 * may not cover yet. */
static inline int tally__shm_find(struct tally_shm *r, const char *name, size_t len,
				  struct tally__shm_entry *e)
{
	const struct tally__shm_layout *L = &r->tally__lay;
	const uint32_t *index = (const uint32_t *)(const void *)(r->tally__map + L->index_off);
	struct tally__shm_state st;
	uint64_t h = tally__shm_hash(name, len);
	unsigned i, k, mask = L->index_cap - 1u, indexed;
	char *why = r->tally__error;
	size_t wn = sizeof(r->tally__error);
	int err = tally__shm_state(r->tally__map, L, &st, why, wn);
	if (err)
		return err;
	indexed = __atomic_load_n(&r->tally__hdr->indexed, __ATOMIC_ACQUIRE);
	for (k = 0, i = (unsigned)h & mask; k <= mask; k++, i = (i + 1u) & mask) {
		/* acquire: pairs with the release store that indexed it */
		uint32_t v = __atomic_load_n(&index[i], __ATOMIC_ACQUIRE);
		if (!v)
			break;
		if (v - 1u >= st.count)
			continue; /* not published (a creator died): never used */
		err = tally__shm_entry_get(r->tally__map, L, &st, v - 1u, e, why, wn);
		if (err)
			return err;
		if (e->name_len == len && !memcmp(e->name, name, len))
			return 1;
	}
	for (i = indexed < st.count ? indexed : st.count; i < st.count; i++) {
		err = tally__shm_entry_get(r->tally__map, L, &st, i, e, why, wn);
		if (err)
			return err;
		if (e->name_len == len && !memcmp(e->name, name, len))
			return 1;
	}
	return 0;
}

static inline void tally__shm_index(struct tally_shm *r, unsigned entry, const char *name,
				    size_t len)
{
	const struct tally__shm_layout *L = &r->tally__lay;
	uint32_t *index = (uint32_t *)(void *)(r->tally__map + L->index_off);
	unsigned i, k, mask = L->index_cap - 1u;
	for (k = 0, i = (unsigned)tally__shm_hash(name, len) & mask; k <= mask;
	     k++, i = (i + 1u) & mask)
		if (!__atomic_load_n(&index[i], __ATOMIC_RELAXED)) {
			/* release: the entry (published before) before its slot */
			__atomic_store_n(&index[i], entry + 1u, __ATOMIC_RELEASE);
			return;
		}
}

/* Take the region's lock: flock on a fresh open file description of the
 * same file (checked: a renamed or replaced path is refused). The fd, or
 * -errno. */
static inline int tally__shm_lock(struct tally_shm *r)
{
	struct stat sb;
	int err, fd = tally__shm_openfd(r->tally__where, r->tally__flags & TALLY_SHM_POSIX,
					 O_RDONLY, 0);
	if (fd < 0)
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), fd,
				       "cannot open %s to lock it: %s", r->tally__where,
				       tally__shm_errstr(-fd));
	if (fstat(fd, &sb) || (uint64_t)sb.st_dev != r->tally__dev || (uint64_t)sb.st_ino != r->tally__ino) {
		close(fd);
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -ESTALE,
				       "%s is no longer the region attached (renamed, removed or "
				       "replaced): objects cannot be created",
				       r->tally__where);
	}
	err = tally__shm_flock(fd, LOCK_EX);
	if (err) {
		close(fd);
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), err,
				       "cannot lock %s: %s", r->tally__where, tally__shm_errstr(-err));
	}
	return fd;
}

/* Tests only: called with the lock held, between the steps of a creation
 * (0: entry written, 1: space reserved, 2: published). */
#ifndef TALLY__SHM_CREATE_HOOK
#  define TALLY__SHM_CREATE_HOOK(step) ((void)0)
#endif

/* The entry called name, of kind, in r: found, or created. 0 or -errno. */
static inline int tally__shm_object(struct tally_shm *r, const char *name, unsigned kind,
				    struct tally__shm_entry *ep)
{
	struct tally__shm_header *h;
	struct tally__shm_state st;
	struct tally__shm_entry e;
	size_t len;
	int found, lk;
	if (!r)
		return -EINVAL;
	if (r->tally__ro)
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -EROFS,
				       "attached read-only");
	len = name ? tally__shm_name_ok(name) : 0;
	if (!len)
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -EINVAL,
				       "bad object name '%.120s': [a-zA-Z_:][a-zA-Z0-9_:]*, labels "
				       "{k=\"v\",...} optional, 1..%u bytes",
				       name ? name : "(null)", TALLY_SHM_NAME_MAX);
	found = tally__shm_find(r, name, len, &e);
	if (found == 0) {
		lk = tally__shm_lock(r);
		if (lk < 0)
			return lk;
		h = r->tally__hdr;
		found = tally__shm_state(r->tally__map, &r->tally__lay, &st, r->tally__error,
					 sizeof(r->tally__error));
		/* Repair: index what a dead creator published but did not. */
		while (found == 0) {
			/* written only under the lock: relaxed */
			unsigned ix = __atomic_load_n(&h->indexed, __ATOMIC_RELAXED);
			if (ix >= st.count)
				break;
			found = tally__shm_entry_get(r->tally__map, &r->tally__lay, &st, ix, &e,
						     r->tally__error, sizeof(r->tally__error));
			if (!found) {
				tally__shm_index(r, ix, e.name, e.name_len);
				__atomic_store_n(&h->indexed, ix + 1u, __ATOMIC_RELEASE);
			}
		}
		if (found == 0)
			found = tally__shm_find(r, name, len, &e);
		if (found == 0) {
			int per_proc = kind == TALLY_SHM_PROC_GAUGE;
			uint64_t used = per_proc ? st.pused : st.used;
			unsigned shift = per_proc ? r->tally__lay.pshift : r->tally__lay.shift;
			uint64_t off = (used + sizeof(tally_uword) - 1) / sizeof(tally_uword) *
				       sizeof(tally_uword);
			if (st.count >= r->tally__lay.dir_cap ||
			    off + sizeof(tally_uword) > ((uint64_t)1 << shift))
				found = tally__shm_fail(
					r->tally__error, sizeof(r->tally__error), -ENOSPC,
					"the region is full (%u objects of %u, %llu bytes of %llu per "
					"%s)",
					st.count, r->tally__lay.dir_cap, (unsigned long long)used,
					(unsigned long long)1 << shift,
					per_proc ? "process row" : "slot");
			else {
				struct tally__shm_entry *d =
					(struct tally__shm_entry *)(void *)(r->tally__map +
									    r->tally__lay.dir_off) +
					st.count;
				memset(&e, 0, sizeof(e));
				e.kind = kind;
				e.words = 1;
				e.off = off;
				e.name_len = (uint32_t)len;
				memcpy(e.name, name, len);
				memcpy(d, &e, sizeof(e));
				TALLY__SHM_CREATE_HOOK(0);
				/* Reserve, then publish: a holder that dies in
				 * between leaks the word, never gives it twice. */
				__atomic_store_n(per_proc ? &h->proc_used : &h->data_used,
						 off + sizeof(tally_uword), __ATOMIC_RELEASE);
				TALLY__SHM_CREATE_HOOK(1);
				/* release: the entry before the count a reader
				 * acquires */
				__atomic_store_n(&h->count, st.count + 1u, __ATOMIC_RELEASE);
				TALLY__SHM_CREATE_HOOK(2);
				tally__shm_index(r, st.count, name, len);
				__atomic_store_n(&h->indexed, st.count + 1u, __ATOMIC_RELEASE);
				found = 1;
			}
		}
		(void)tally__shm_flock(lk, LOCK_UN);
		close(lk);
	}
	if (found < 0)
		return found;
	if (e.kind != kind)
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -EEXIST,
				       "'%.120s' exists as a %s", name,
				       e.kind == TALLY_SHM_COUNTER ? "counter"
				       : e.kind == TALLY_SHM_GAUGE ? "gauge"
								   : "per-process gauge");
	*ep = e;
	return 0;
}

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

/* ---- per-process gauges: process rows ------------------------------------------ */

/* The regions of this program whose handles hold a process row. A child
 * of fork() closes those rows' descriptors (it must not keep its parent's
 * rows alive: an open file description lock lives while any descriptor of
 * it is open) and claims a row of its own at its first add. One list per
 * program (weak: every translation unit's definition is this object); its
 * lock is held across fork() and around every claim and release. */
struct tally__shm_procs {
	pthread_mutex_t mu;
	struct tally_shm *head;
	int registered;
};
#if !defined(TALLY__DOXYGEN) /* (Doxygen reads the attribute as a name) */
__attribute__((weak)) struct tally__shm_procs tally__shm_procs = {PTHREAD_MUTEX_INITIALIZER,
								 NULL, 0};
#endif

static inline void tally__shm_fork_prepare(void)
{
	pthread_mutex_lock(&tally__shm_procs.mu);
}

static inline void tally__shm_fork_parent(void)
{
	pthread_mutex_unlock(&tally__shm_procs.mu);
}

/* The child: its only thread; no row is its own yet. */
static inline void tally__shm_fork_child(void)
{
	struct tally_shm *r, *next;
	for (r = tally__shm_procs.head; r; r = next) {
		next = r->tally__row_next;
		__atomic_store_n(&r->tally__row, (unsigned char *)NULL, __ATOMIC_RELAXED);
		if (r->tally__row_fd >= 0)
			close(r->tally__row_fd);
		r->tally__row_fd = -1;
		r->tally__row_next = NULL;
		r->tally__on_list = 0;
	}
	tally__shm_procs.head = NULL;
	pthread_mutex_unlock(&tally__shm_procs.mu);
}

/* Give r's row back (its lock goes with the descriptor). Idempotent. */
static inline void tally__shm_row_release(struct tally_shm *r)
{
	struct tally_shm **p;
	if (r->tally__row_fd < 0 && !r->tally__on_list)
		return;
	pthread_mutex_lock(&tally__shm_procs.mu);
	for (p = &tally__shm_procs.head; *p; p = &(*p)->tally__row_next)
		if (*p == r) {
			*p = r->tally__row_next;
			break;
		}
	r->tally__on_list = 0;
	__atomic_store_n(&r->tally__row, (unsigned char *)NULL, __ATOMIC_RELAXED);
	if (r->tally__row_fd >= 0)
		close(r->tally__row_fd);
	r->tally__row_fd = -1;
	pthread_mutex_unlock(&tally__shm_procs.mu);
}

/* Tests only: called while a claim holds the region's lock, after the
 * row's words were zeroed and before its lock is taken. */
#ifndef TALLY__SHM_CLAIM_HOOK
#  define TALLY__SHM_CLAIM_HOOK(row) ((void)0)
#endif

/*
 * Claim a process row for r (tally__shm_procs.mu held, r has none): on a
 * fresh open file description of the region, under the region's lock
 * (flock on that description), the first row whose lock no one holds
 * (F_OFD_GETLK: a lock of any other description or process is seen; a
 * row of another handle of this process too); its words zeroed (its last
 * holder is dead: what it held must not be summed again), its header
 * written, the claimed count raised, then its lock taken (F_OFD_SETLK) and
 * kept for as long as r is attached. All under the region's lock, so two
 * claimers never zero each other's rows. 0 or -errno with r's error set.
 */
static inline int tally__shm_row_claim(struct tally_shm *r)
{
	const struct tally__shm_layout *L = &r->tally__lay;
	struct tally__shm_header *h = r->tally__hdr;
	struct stat sb;
	struct flock fl;
	struct timespec ts;
	unsigned i, procs, posix = 0;
	uint64_t pused;
	int fd, err = -ENOSPC;
	fd = tally__shm_openfd(r->tally__where, r->tally__flags & TALLY_SHM_POSIX, O_RDWR, 0);
	if (fd < 0)
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), fd,
				       "cannot open %s for a process row: %s", r->tally__where,
				       tally__shm_errstr(-fd));
	if (fstat(fd, &sb) || (uint64_t)sb.st_dev != r->tally__dev ||
	    (uint64_t)sb.st_ino != r->tally__ino) {
		close(fd);
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -ESTALE,
				       "%s is no longer the region attached (renamed, removed or "
				       "replaced): no process row can be claimed",
				       r->tally__where);
	}
	err = tally__shm_flock(fd, LOCK_EX);
	if (err) {
		close(fd);
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), err,
				       "cannot lock %s: %s", r->tally__where, tally__shm_errstr(-err));
	}
	err = -ENOSPC;
	/* written only under the lock: relaxed */
	procs = __atomic_load_n(&h->procs, __ATOMIC_RELAXED);
	pused = __atomic_load_n(&h->proc_used, __ATOMIC_RELAXED);
	if (pused > ((uint64_t)1 << L->pshift))
		pused = (uint64_t)1 << L->pshift;
	for (i = 0; i < L->proc_cap; i++) {
		uint64_t at = L->proc_off + (uint64_t)i * sizeof(struct tally__shm_row), k;
		struct tally__shm_row *row = (struct tally__shm_row *)(void *)(r->tally__map + at);
		tally_uword *w = (tally_uword *)(void *)(r->tally__map + L->pdata_off +
							 ((size_t)i << L->pshift));
		const struct tally_shm *o;
		int held = tally__shm_row_held(fd, at);
		if (held < 0) {
			err = tally__shm_fail(r->tally__error, sizeof(r->tally__error), held,
					      "cannot test process row %u's lock: %s", i,
					      tally__shm_errstr(-held));
			break;
		}
		/* (a POSIX lock of this process is not seen by F_GETLK: the
		 * rows of this process's other handles are skipped by name) */
		for (o = tally__shm_procs.head; o && !held; o = o->tally__row_next)
			held = o->tally__dev == r->tally__dev && o->tally__ino == r->tally__ino &&
			       o->tally__row_idx == i;
		if (held)
			continue;
		for (k = 0; k < pused / sizeof(tally_uword); k++)
			__atomic_store_n(&w[k], (tally_uword)0, __ATOMIC_RELAXED);
		tally__os_now_utc(&ts);
		__atomic_store_n(&row->pid, (uint32_t)getpid(), __ATOMIC_RELAXED);
		__atomic_store_n(&row->claims, __atomic_load_n(&row->claims, __ATOMIC_RELAXED) + 1u,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&row->claimed_ns,
				 (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
				 __ATOMIC_RELAXED);
		if (i >= procs) /* release: readers test the rows below it */
			__atomic_store_n(&h->procs, i + 1u, __ATOMIC_RELEASE);
		TALLY__SHM_CLAIM_HOOK(i);
#ifdef TALLY__SHM_OFD_SETLK
		tally__shm_flock_at(&fl, F_WRLCK, at);
		if (!fcntl(fd, TALLY__SHM_OFD_SETLK, &fl)) {
			err = 0;
			break;
		}
		if (errno == EAGAIN || errno == EACCES)
			continue; /* taken by a process outside this protocol */
		if (errno != EINVAL) {
			err = tally__shm_fail(r->tally__error, sizeof(r->tally__error), -errno,
					      "cannot lock process row %u: %s", i, tally__shm_errstr(errno));
			break;
		}
#endif
		tally__shm_flock_at(&fl, F_WRLCK, at);
		if (!fcntl(fd, F_SETLK, &fl)) {
			err = 0;
			posix = 1;
			break;
		}
		if (errno == EAGAIN || errno == EACCES)
			continue;
		err = tally__shm_fail(r->tally__error, sizeof(r->tally__error), -errno,
				      "cannot lock process row %u: %s", i, tally__shm_errstr(errno));
		break;
	}
	(void)tally__shm_flock(fd, LOCK_UN);
	if (err == -ENOSPC)
		tally__shm_fail(r->tally__error, sizeof(r->tally__error), -ENOSPC,
				"no free process row: all %u are held by live processes "
				"(struct tally_shm_opts.max_procs)",
				L->proc_cap);
	if (err) {
		close(fd);
		return err;
	}
	if (!tally__shm_procs.registered) {
		/* Best effort: fails only for want of memory. */
		(void)pthread_atfork(tally__shm_fork_prepare, tally__shm_fork_parent,
				     tally__shm_fork_child);
		tally__shm_procs.registered = 1;
	}
	r->tally__row_fd = fd;
	r->tally__row_idx = i;
	r->tally__row_posix = (int)posix;
	r->tally__row_next = tally__shm_procs.head;
	tally__shm_procs.head = r;
	r->tally__on_list = 1;
	/* release: the zeroed words before the row a thread adds to */
	__atomic_store_n(&r->tally__row, r->tally__map + L->pdata_off + ((size_t)i << L->pshift),
			 __ATOMIC_RELEASE);
	return 0;
}

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

/* The per-process add's first in this process (a child of fork()): claim
 * a row, then add; with no row to be had, the add is lost and counted
 * (tally_shm_proc_lost()). */
TALLY__COLD void tally__shm_proc_add_slow(const struct tally_shm_proc_gauge *g, tally_uword d)
{
	struct tally_shm *r = g->tally__r;
	unsigned char *row;
	pthread_mutex_lock(&tally__shm_procs.mu);
	row = __atomic_load_n(&r->tally__row, __ATOMIC_RELAXED);
	if (!row && !tally__shm_row_claim(r))
		row = __atomic_load_n(&r->tally__row, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&tally__shm_procs.mu);
	if (!row) {
		__atomic_add_fetch(&r->tally__row_lost, 1ul, __ATOMIC_RELAXED);
		return;
	}
	__atomic_fetch_add((tally_uword *)(void *)(row + g->tally__off), d, __ATOMIC_RELAXED);
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
	const struct tally_shm *r = g->tally__r;
	const struct tally__shm_layout *L = &r->tally__lay;
	unsigned i, procs = __atomic_load_n(&r->tally__hdr->procs, __ATOMIC_ACQUIRE);
	tally_uword sum = 0;
	for (i = 0; i < procs && i < L->proc_cap; i++)
		if (tally__shm_row_held(r->tally__fd, L->proc_off + (uint64_t)i *
							       sizeof(struct tally__shm_row)) == 1 ||
		    (r->tally__row_posix && i == r->tally__row_idx && r->tally__row))
			sum += tally__load((const tally_uword *)(const void *)(r->tally__map +
									      L->pdata_off +
									      ((size_t)i << L->pshift) +
									      g->tally__off));
	return tally__to_signed(sum);
}

/** tally_shm_proc_lost - per-process adds of r's handles in this process
 * that found no row to add to (a child of fork() whose claim failed:
 * tally_shm_error(r) says why). */
static inline unsigned long tally_shm_proc_lost(const struct tally_shm *r)
{
	return __atomic_load_n(&r->tally__row_lost, __ATOMIC_RELAXED);
}

/* Raise the region's written bound b to cover CPU slot s (< nr). */
static inline void tally__shm_raise(uint32_t *b, unsigned s)
{
	uint32_t old = __atomic_load_n(b, __ATOMIC_RELAXED);
	while (old <= s &&
	       !__atomic_compare_exchange_n(b, &old, s + 1u, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* The add's out-of-line path: an atomic region (the slot of the CPU the
 * thread ran on, atomically), a CPU above the written bound (raise it,
 * back into the section), or no rseq / a CPU past the slots (the shared
 * slot, atomically). */
TALLY__COLD void tally__shm_add_slow(const struct tally_shm_counter *c, tally_uword d)
{
	unsigned s = c->tally__nr;
	if (c->tally__atomic) {
		s = tally__cpu() % c->tally__nr;
		if (s >= __atomic_load_n(c->tally__bound, __ATOMIC_RELAXED))
			tally__shm_raise(c->tally__bound, s);
	} else {
#if TALLY__HAVE_RSEQ
		if (tally__rseq_registered()) {
			tally_uword nv, *w;
			int cpu;
			/* Each time round needs a migration to a CPU above the
			 * bound. */
			while ((cpu = tally__rseq_cpu()) >= 0 && (unsigned)cpu < c->tally__nr) {
				tally__shm_raise(c->tally__bound, (unsigned)cpu);
				if (tally__rseq_add(c->tally__base, c->tally__shift,
						    __atomic_load_n(c->tally__lim, __ATOMIC_RELAXED), d,
						    &nv, &w))
					return;
			}
		}
#endif
	}
	tally__add((tally_uword *)(void *)(c->tally__base + ((size_t)s << c->tally__shift)), d);
}

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
