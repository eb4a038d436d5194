/**
 * @file
 * tally/shm/format.h - the region's format: the header, a directory entry,
 * a process row, and the layout a reader validates them into (private;
 * include <tally/shm.h>).
 *
 * Every field a process may read from a region is here; tally/shm/read.h
 * and tally/shm/cut.h check them (the region is untrusted input). The
 * sizes are fixed (256, 256, 64 and 64 bytes, checked at compile time): a
 * change to any of them is a new TALLY_SHM_VERSION. Version 2 added the
 * shared area (histograms' shared words) and the histogram kind.
 *
 * A region, in file order: the header; the name index; the directory; the
 * process rows' headers; the CPU slots' regions (nr_slots + 1 of
 * 2^shift bytes from data_off, the last the shared slot); the process
 * rows' words (proc_cap of 2^proc_shift bytes from pdata_off); the shared
 * area (from shared_off to total_size): words every writer shares, one
 * block per histogram.
 */
#ifndef TALLY_SHM_FORMAT_H
#define TALLY_SHM_FORMAT_H

#if !defined(TALLY__SHM_INSIDE)
#  error "tally/shm/format.h is private: include <tally/shm.h>"
#endif

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
	uint64_t shared_off;  /* the shared area, to total_size (64-aligned) */
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
	uint64_t shared_used; /* bytes reserved in the shared area */
	uint64_t pad3[3];
};

/* A directory entry: immutable once published. */
struct tally__shm_entry {
	uint32_t kind;     /* enum tally_shm_kind */
	uint32_t words;    /* words per slot or row: 1 (a tally_uword); a
			    * histogram: its chunk's 8-byte words,
			    * (64 + 8 nr_buckets) / 8 */
	uint64_t off;      /* byte offset in every slot's region (a
			    * per-process gauge: in every process row; a
			    * histogram: its chunk, 64-aligned) */
	uint32_t name_len; /* 1..TALLY_SHM_NAME_MAX */
	uint32_t aux;      /* a histogram: its block's offset in the shared
			    * area / 64; 0 otherwise */
	char name[TALLY_SHM_NAME_MAX + 1]; /* NUL-terminated, NUL-padded */
};

/*
 * A histogram's block in the shared area (at shared_off + 64 aux): this
 * descriptor (immutable once the entry is published), then on a line of
 * its own the bank word (4 k: the bank records add to; only cutters with
 * write access change it) and the counts of big records started and
 * finished (tally/hist/cut.h), then carry[2][nr_buckets] (u64: 2^32 per
 * wrapped half, tally/hist/layout.h), then the explicit bounds
 * (u64[nr_bounds]). Its chunk in every CPU slot's region is tally_hist's
 * (tally/hist/layout.h): two bank records, then two u32 halves per bucket.
 */
struct tally__shm_hist_desc {
	uint64_t lowest, highest; /* log-linear range; 0, 0 with explicit bounds */
	uint32_t precision;       /* log-linear p (1..14); 0 with explicit bounds */
	uint32_t nr_bounds;       /* explicit bounds (then precision 0), or 0 */
	uint32_t nr_buckets;      /* positions, below and above included */
	uint32_t pad0;
	double scale;             /* shown = recorded x scale (> 0, finite) */
	uint64_t pad[3];
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
typedef char tally__shm_hist_desc_size[sizeof(struct tally__shm_hist_desc) == 64 ? 1 : -1];

/* A histogram block's parts, in bytes from its start. */
#define TALLY__SHM_HIST_BANK 64u   /* uint32_t bank (4 k), then pad */
#define TALLY__SHM_HIST_BIG 72u    /* uint64_t big[2]: started, finished */
#define TALLY__SHM_HIST_CARRY 128u /* uint64_t carry[2][nr_buckets] */

#define TALLY__SHM_BOM 0x01020304u
#define TALLY__SHM_F_ATOMIC 1u
#define TALLY__SHM_MAX_SLOTS 65536u
#define TALLY__SHM_MAX_SHIFT 40u

/* The validated layout: copies of the header's immutable fields. */
struct tally__shm_layout {
	uint64_t index_off, dir_off, data_off, total, proc_off, pdata_off, shared_off;
	unsigned nr, shift, dir_cap, index_cap, flags, page, proc_cap, pshift;
	uint64_t created_ns;
};

#endif /* TALLY_SHM_FORMAT_H */
