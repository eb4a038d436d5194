/**
 * @file
 * tally/shm/objects.h - the directory's writers: finding and creating
 * objects, and the add's out-of-line path (private; include <tally/shm.h>).
 *
 * Finding a name is lock-free (the name index, then the published entries
 * it may not cover yet); creating one takes the region's lock and is
 * crash-consistent: entry written, space reserved (data_used), entry
 * published (count, release), then indexed. The add's slow path raises
 * the region's written bound, or adds atomically (an atomic region, no
 * rseq, a CPU past the slots).
 */
#ifndef TALLY_SHM_OBJECTS_H
#define TALLY_SHM_OBJECTS_H

#if !defined(TALLY__SHM_INSIDE)
#  error "tally/shm/objects.h is private: include <tally/shm.h>"
#endif

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

/* Find name in r: its validated entry in *e and its number in *idx, 1;
 * 0 if absent; < 0 if the region is corrupted. Lock-free: the index, then
 * the published entries it may not cover yet. */
static inline int tally__shm_find(struct tally_shm *r, const char *name, size_t len,
				  struct tally__shm_entry *e, unsigned *idx)
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
		if (e->name_len == len && !memcmp(e->name, name, len)) {
			*idx = v - 1u;
			return 1;
		}
	}
	for (i = indexed < st.count ? indexed : st.count; i < st.count; i++) {
		err = tally__shm_entry_get(r->tally__map, L, &st, i, e, why, wn);
		if (err)
			return err;
		if (e->name_len == len && !memcmp(e->name, name, len)) {
			*idx = i;
			return 1;
		}
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

/* Does histogram entry e of r have descriptor hd and bounds? */
static inline int tally__shm_hist_same(const struct tally_shm *r, const struct tally__shm_entry *e,
				       const struct tally__shm_hist_desc *hd, const uint64_t *bounds)
{
	const unsigned char *blk = r->tally__map + r->tally__lay.shared_off + (uint64_t)e->aux * 64u;
	struct tally__shm_hist_desc d;
	memcpy(&d, blk, sizeof(d));
	return tally__shm_hist_desc_eq(&d, hd) &&
	       (!hd->nr_bounds ||
		!memcmp(blk + TALLY__SHM_HIST_CARRY + 16u * (size_t)hd->nr_buckets, bounds,
			hd->nr_bounds * sizeof(uint64_t)));
}

/*
 * Reserve a new object of kind for r (the lock held, st loaded): its place
 * in every slot's region (a word, or a histogram's 64-aligned chunk) or
 * every process row, and a histogram's block in the shared area (zeroed,
 * then its descriptor hd and bounds written); *e filled. 0 or -ENOSPC.
 */
static inline int tally__shm_place(struct tally_shm *r, const struct tally__shm_state *st,
				   unsigned kind, const struct tally__shm_hist_desc *hd,
				   const uint64_t *bounds, struct tally__shm_entry *e)
{
	const struct tally__shm_layout *L = &r->tally__lay;
	int per_proc = kind == TALLY_SHM_PROC_GAUGE, hist = kind == TALLY_SHM_HIST;
	uint64_t used = per_proc ? st->pused : st->used, room, size, sat = 0, blk = 0;
	uint64_t align = hist ? 64u : sizeof(tally_uword);
	uint64_t off = (used + align - 1) / align * align;
	room = (uint64_t)1 << (per_proc ? L->pshift : L->shift);
	size = hist ? tally__shm_hist_chunk(hd->nr_buckets) : sizeof(tally_uword);
	if (hist) {
		sat = (st->sused + 63u) / 64u * 64u;
		blk = tally__shm_hist_block(hd->nr_buckets, hd->nr_bounds);
	}
	if (st->count >= L->dir_cap || off > room || room - off < size ||
	    sat + blk > L->total - L->shared_off)
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -ENOSPC,
				       "the region is full (%u objects of %u; %llu bytes of %llu per "
				       "%s; %llu of %llu shared bytes): this object needs %llu%s%s",
				       st->count, L->dir_cap, (unsigned long long)used,
				       (unsigned long long)room, per_proc ? "process row" : "slot",
				       (unsigned long long)st->sused,
				       (unsigned long long)(L->total - L->shared_off),
				       (unsigned long long)size, hist ? " and " : "",
				       hist ? "a shared block (struct tally_shm_opts: slot_bytes, "
					      "shared_bytes)"
					    : "");
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->words = hist ? (uint32_t)(size / 8u) : 1u; /* (a word: 1, of either width) */
	e->off = off;
	if (hist) {
		unsigned char *b = r->tally__map + L->shared_off + sat;
		e->aux = (uint32_t)(sat / 64u);
		/* Unreserved space: no reader or record looks here yet. */
		memset(b, 0, (size_t)blk);
		memcpy(b, hd, sizeof(*hd));
		if (hd->nr_bounds)
			memcpy(b + TALLY__SHM_HIST_CARRY + 16u * (size_t)hd->nr_buckets, bounds,
			       hd->nr_bounds * sizeof(uint64_t));
	}
	return 0;
}

/* The entry called name, of kind (a histogram: with descriptor hd and
 * bounds), in r: found, or created; its number in *idx. 0 or -errno. */
static inline int tally__shm_object_ex(struct tally_shm *r, const char *name, unsigned kind,
				       const struct tally__shm_hist_desc *hd,
				       const uint64_t *bounds, struct tally__shm_entry *ep,
				       unsigned *idx)
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
	found = tally__shm_find(r, name, len, &e, idx);
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
			found = tally__shm_find(r, name, len, &e, idx);
		if (found == 0) {
			found = tally__shm_place(r, &st, kind, hd, bounds, &e);
			if (!found) {
				struct tally__shm_entry *d =
					(struct tally__shm_entry *)(void *)(r->tally__map +
									    r->tally__lay.dir_off) +
					st.count;
				e.name_len = (uint32_t)len;
				memcpy(e.name, name, len);
				memcpy(d, &e, sizeof(e));
				TALLY__SHM_CREATE_HOOK(0);
				/* Reserve, then publish: a holder that dies in
				 * between leaks the space, never gives it twice. */
				__atomic_store_n(kind == TALLY_SHM_PROC_GAUGE ? &h->proc_used
									      : &h->data_used,
						 e.off + (kind == TALLY_SHM_HIST
								  ? 8u * (uint64_t)e.words
								  : sizeof(tally_uword)),
						 __ATOMIC_RELEASE);
				if (kind == TALLY_SHM_HIST)
					__atomic_store_n(&h->shared_used,
							 (uint64_t)e.aux * 64u +
								 tally__shm_hist_block(
									 hd->nr_buckets,
									 hd->nr_bounds),
							 __ATOMIC_RELEASE);
				TALLY__SHM_CREATE_HOOK(1);
				/* release: the entry before the count a reader
				 * acquires */
				__atomic_store_n(&h->count, st.count + 1u, __ATOMIC_RELEASE);
				TALLY__SHM_CREATE_HOOK(2);
				tally__shm_index(r, st.count, name, len);
				__atomic_store_n(&h->indexed, st.count + 1u, __ATOMIC_RELEASE);
				*idx = st.count;
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
				       : e.kind == TALLY_SHM_HIST  ? "histogram"
								   : "per-process gauge");
	if (kind == TALLY_SHM_HIST && !tally__shm_hist_same(r, &e, hd, bounds))
		return tally__shm_fail(r->tally__error, sizeof(r->tally__error), -EEXIST,
				       "'%.120s' exists as a histogram with other buckets or "
				       "another scale",
				       name);
	*ep = e;
	return 0;
}

/* The entry called name, of kind (not a histogram), in r. */
static inline int tally__shm_object(struct tally_shm *r, const char *name, unsigned kind,
				    struct tally__shm_entry *ep)
{
	unsigned idx;
	return tally__shm_object_ex(r, name, kind, NULL, NULL, ep, &idx);
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

#endif /* TALLY_SHM_OBJECTS_H */
