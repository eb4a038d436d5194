/**
 * @file
 * tally/shm/read.h - the reader: errors, names, and the validation of
 * untrusted bytes (private; include <tally/shm.h>).
 *
 * What a snapshot checks and reads: the header checked into a layout
 * (tally__shm_check), the mutable fields loaded once and checked
 * (tally__shm_state), each entry copied and checked (tally__shm_entry_get;
 * a histogram's block by tally/shm/cut.h, which also assembles snapshots),
 * the words summed over the slots written (tally__shm_sum_at), and the
 * per-process rows' liveness tested through their locks (F_OFD_GETLK;
 * the top of tally/shm.h says why a lock, never a pid). Each field is
 * loaded once, then checked, then used; a read never leaves the bytes the
 * checked layout covers (tests/plain/shm_fuzz.c). The error helpers and
 * the name grammar, shared by the writers, are here too.
 */
#ifndef TALLY_SHM_READ_H
#define TALLY_SHM_READ_H

#if !defined(TALLY__SHM_INSIDE)
#  error "tally/shm/read.h is private: include <tally/shm.h>"
#endif

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
	case EBUSY: return "Device or resource busy";
	default: return "unexpected error";
	}
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
	uint64_t max_off = (uint64_t)1 << 41;
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
	    h.pdata_off > max_off || h.pdata_off % 64 || h.shared_off < h.pdata_off + pdata_bytes ||
	    h.shared_off > max_off + max_off || h.shared_off % 64 ||
	    h.total_size < h.shared_off || h.total_size - h.shared_off > max_off)
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: offsets index %llu, directory %llu, processes "
				       "%llu, data %llu, process data %llu, shared %llu, size %llu "
				       "do not fit together",
				       (unsigned long long)h.index_off, (unsigned long long)h.dir_off,
				       (unsigned long long)h.proc_off, (unsigned long long)h.data_off,
				       (unsigned long long)h.pdata_off,
				       (unsigned long long)h.shared_off,
				       (unsigned long long)h.total_size);
	if (h.total_size > len)
		return tally__shm_fail(why, n, -EINVAL, "truncated: %zu bytes, the header says %llu",
				       len, (unsigned long long)h.total_size);
	L->proc_off = h.proc_off;
	L->pdata_off = h.pdata_off;
	L->shared_off = h.shared_off;
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
	uint64_t used, pused, sused;
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
	st->sused = __atomic_load_n(&h->shared_used, __ATOMIC_ACQUIRE);
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
	if (st->sused > L->total - L->shared_off)
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: %llu bytes used of a %llu-byte shared area",
				       (unsigned long long)st->sused,
				       (unsigned long long)(L->total - L->shared_off));
	return 0;
}

static inline int tally__shm_hist_desc_get(const unsigned char *map,
					   const struct tally__shm_layout *L,
					   const struct tally__shm_state *st,
					   const struct tally__shm_entry *e, unsigned i,
					   struct tally__shm_hist_desc *d, char *why, size_t n);

/* Entry i (< a validated count), copied and checked into *e; with names
 * 0, all but its name (e->name is then ""): a render's values need its
 * kind and place only, and the name was checked when it was taken. */
static inline int tally__shm_entry_get_ex(const unsigned char *map,
					  const struct tally__shm_layout *L,
					  const struct tally__shm_state *st, unsigned i,
					  struct tally__shm_entry *e, int names, char *why, size_t n)
{
	const unsigned char *at = map + L->dir_off + (uint64_t)i * sizeof(*e);
	struct tally__shm_hist_desc d;
	uint64_t used;
	/* The fixed fields, then the name's bytes only (and its NUL): the
	 * rest of the entry is padding (a directory of 100,000 names is 25
	 * MB of entries, of which a render's registration reads ~1 MB). */
	memcpy(e, at, offsetof(struct tally__shm_entry, name));
	e->name[0] = '\0';
	if (names && e->name_len <= TALLY_SHM_NAME_MAX)
		memcpy(e->name, at + offsetof(struct tally__shm_entry, name), e->name_len + 1u);
	if (e->kind != TALLY_SHM_COUNTER && e->kind != TALLY_SHM_GAUGE &&
	    e->kind != TALLY_SHM_PROC_GAUGE && e->kind != TALLY_SHM_HIST)
		return tally__shm_fail(why, n, -EINVAL, "corrupted: object %u has kind %u", i,
				       (unsigned)e->kind);
	if (names && (e->name_len < 1 || e->name_len > TALLY_SHM_NAME_MAX ||
		      e->name[e->name_len] != '\0' || tally__shm_name_ok(e->name) != e->name_len))
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: object %u's name (%u bytes) is not a valid name",
				       i, (unsigned)e->name_len);
	if (e->kind == TALLY_SHM_HIST)
		return tally__shm_hist_desc_get(map, L, st, e, i, &d, why, n);
	used = e->kind == TALLY_SHM_PROC_GAUGE ? st->pused : st->used;
	if (e->words != 1 || e->aux || e->off % sizeof(tally_uword) || e->off > used ||
	    used - e->off < sizeof(tally_uword))
		return tally__shm_fail(why, n, -EINVAL,
				       "corrupted: object %u ('%s') at offset %llu, %u words, past "
				       "the %llu bytes reserved",
				       i, e->name, (unsigned long long)e->off, (unsigned)e->words,
				       (unsigned long long)used);
	return 0;
}

/* Entry i (< a validated count), copied and checked into *e. */
static inline int tally__shm_entry_get(const unsigned char *map, const struct tally__shm_layout *L,
				       const struct tally__shm_state *st, unsigned i,
				       struct tally__shm_entry *e, char *why, size_t n)
{
	return tally__shm_entry_get_ex(map, L, st, i, e, 1, why, n);
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

#endif /* TALLY_SHM_READ_H */
