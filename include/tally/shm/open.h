/**
 * @file
 * tally/shm/open.h - creating and attaching a region (private; include
 * <tally/shm.h>).
 *
 * A creator lays the region out in an empty (or abandoned) file under the
 * region's lock (flock(2) on a fresh open file description), the magic
 * stored last (release); an attach maps the file and validates its header
 * (tally__shm_check) after an acquire load of the magic. A creation whose
 * creator died before the magic is redone by the next opener.
 */
#ifndef TALLY_SHM_OPEN_H
#define TALLY_SHM_OPEN_H

#if !defined(TALLY__SHM_INSIDE)
#  error "tally/shm/open.h is private: include <tally/shm.h>"
#endif

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
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), slot, objs, icap, procs, pbytes, sbytes;
	if (page < 4096 || (page & (page - 1)))
		page = 4096;
	objs = o->max_objects ? o->max_objects : TALLY_SHM_DEFAULT_OBJECTS;
	slot = o->slot_bytes ? o->slot_bytes : TALLY_SHM_DEFAULT_SLOT_BYTES;
	procs = o->max_procs ? o->max_procs : TALLY_SHM_DEFAULT_PROCS;
	pbytes = o->proc_bytes ? o->proc_bytes : TALLY_SHM_DEFAULT_PROC_BYTES;
	sbytes = o->shared_bytes ? o->shared_bytes : TALLY_SHM_DEFAULT_SHARED_BYTES;
	if (objs > TALLY_SHM_MAX_OBJECTS || slot > ((uint64_t)1 << TALLY__SHM_MAX_SHIFT) ||
	    procs > TALLY_SHM_MAX_PROCS || pbytes > ((uint64_t)1 << 24) ||
	    sbytes > ((uint64_t)1 << 38))
		return tally__shm_fail(why, n, -EINVAL,
				       "max_objects %llu (at most %u), slot_bytes %llu, max_procs "
				       "%llu (at most %u), proc_bytes %llu (at most 16 MiB) or "
				       "shared_bytes %llu (at most 256 GiB) too large",
				       (unsigned long long)objs, TALLY_SHM_MAX_OBJECTS,
				       (unsigned long long)slot, (unsigned long long)procs,
				       TALLY_SHM_MAX_PROCS, (unsigned long long)pbytes,
				       (unsigned long long)sbytes);
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
	h.shared_off = h.pdata_off + (procs << h.proc_shift);
	h.total_size = h.shared_off + (sbytes + page - 1) / page * page;
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


/* tally_shm_open(): create or attach, under the region's lock. */
static inline int tally__shm_open_rw(struct tally_shm **out, const char *where,
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

/* tally_shm_open_ro(): attach read-only; no lock, no write. */
static inline int tally__shm_open_ro(struct tally_shm **out, const char *where, unsigned flags,
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

#endif /* TALLY_SHM_OPEN_H */
