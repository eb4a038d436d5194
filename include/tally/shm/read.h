/**
 * @file
 * tally/shm/read.h - the reader: errors, names, and the validation of
 * untrusted bytes (private; include <tally/shm.h>).
 *
 * Everything a snapshot does: the header checked into a layout
 * (tally__shm_check), the mutable fields loaded once and checked
 * (tally__shm_state), each entry copied and checked (tally__shm_entry_get),
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

#endif /* TALLY_SHM_READ_H */
