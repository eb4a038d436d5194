/**
 * @file
 * tally/shm/procs.h - per-process gauges' process rows: claiming,
 * releasing, fork() (private; include <tally/shm.h>).
 *
 * A row is claimed under the region's lock (zeroed, then locked with an
 * open file description lock kept while the handle is attached); a child
 * of fork() drops its parent's rows (pthread_atfork) and claims its own
 * at its first add. The top of tally/shm.h has the liveness rules.
 */
#ifndef TALLY_SHM_PROCS_H
#define TALLY_SHM_PROCS_H

#if !defined(TALLY__SHM_INSIDE)
#  error "tally/shm/procs.h is private: include <tally/shm.h>"
#endif

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


/* The modular sum of the per-process word at off over the rows of r held
 * by a live process (tally_shm_proc_sum()). */
static inline tally_uword tally__shm_proc_sum(const struct tally_shm *r, uint64_t off)
{
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
									      off));
	return sum;
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

#endif /* TALLY_SHM_PROCS_H */
