/**
 * @file
 * tally/shm/pick.h - which objects of a region an exporter takes, and the
 * families they make (private; include <tally/shm/export.h>): the
 * objects' names and layouts copied once (a compact list, not a
 * snapshot), each name parsed and checked once, families and series found
 * by hash (O(1) each: 100,000 objects in one pass), the checks of
 * tally__export_item_families() made as it goes so registering refuses
 * nothing; and the source of a histogram family.
 */
#ifndef TALLY_SHM_PICK_H
#define TALLY_SHM_PICK_H

#if !defined(TALLY__SHM_EXPORT_INSIDE)
#  error "tally/shm/pick.h is private: include <tally/shm/export.h>"
#endif

/* An open-addressed set of keys (family names, or family + labels): the
 * item that holds each, found by hash. */
struct tally__shm_keys {
	size_t mask;
	unsigned *slot;     /* item + 1, 0 empty */
	char **key;         /* [items] */
	size_t *key_len;    /* [items] */
};

static inline unsigned *tally__shm_keys_slot(struct tally__shm_keys *k, const char *key, size_t len)
{
	size_t j = (size_t)tally__export_hash(TALLY__EXPORT_HASH_SEED, key, len) & k->mask;
	while (k->slot[j] && (k->key_len[k->slot[j] - 1] != len ||
			      memcmp(k->key[k->slot[j] - 1], key, len) != 0))
		j = (j + 1) & k->mask;
	return &k->slot[j];
}

/* What registering needs of an object: its name, kind, and a histogram's
 * layout (an empty snapshot of it) and scale. */
struct tally__shm_export_obj {
	const char *name; /* in its list's names (at name_at) */
	size_t name_at;
	unsigned kind;
	double scale;
	struct tally_hist_snap *hist;
};

/* The objects of a region, for registering: names copied once, compactly
 * (a snapshot would copy 232-byte name fields, and cut histograms). */
struct tally__shm_export_list {
	struct tally__shm_export_obj *v;
	size_t n;
	char *names;
	size_t names_len; /* bytes used at names: each name and its NUL */
	uint64_t *buf;
	size_t buf_cap;
};

static inline void tally__shm_export_list_free(struct tally__shm_export_list *l)
{
	size_t i;
	for (i = 0; l->v && i < l->n; i++)
		if (l->v[i].hist) {
			tally_hist_snap_destroy(l->v[i].hist);
			free(l->v[i].hist);
		}
	free(l->v);
	free(l->names);
	free(l->buf);
	memset(l, 0, sizeof(*l));
}

/* r's published objects into l (their entries checked as a snapshot
 * checks them). 0, -EINVAL or -ENOMEM with r's error set. */
static inline int tally__shm_export_list_get(struct tally_shm *r, struct tally__shm_export_list *l)
{
	const struct tally__shm_layout *L = &r->tally__lay;
	struct tally__shm_state st;
	struct tally__shm_entry en;
	struct tally__shm_hist_desc d;
	struct tally__hist_layout hl;
	size_t used = 0, cap = 0, i;
	char *why = r->tally__error;
	size_t wn = sizeof(r->tally__error);
	int err = tally__shm_state(r->tally__map, L, &st, why, wn);
	memset(l, 0, sizeof(*l));
	if (err)
		return err;
	l->v = (struct tally__shm_export_obj *)calloc(st.count ? st.count : 1, sizeof(*l->v));
	if (!l->v)
		return tally__shm_fail(why, wn, -ENOMEM, "out of memory");
	for (i = 0; i < st.count; i++) {
		struct tally__shm_export_obj *o = &l->v[i];
		err = tally__shm_entry_get(r->tally__map, L, &st, (unsigned)i, &en, why, wn);
		if (err)
			break;
		if (used + en.name_len + 1u > cap) {
			char *nb;
			cap = 2 * cap + 4096 + en.name_len;
			nb = (char *)realloc(l->names, cap);
			if (!nb) {
				err = tally__shm_fail(why, wn, -ENOMEM, "out of memory");
				break;
			}
			l->names = nb;
		}
		memcpy(l->names + used, en.name, en.name_len + 1u);
		o->name_at = used; /* (the buffer may move until the end) */
		used += en.name_len + 1u;
		o->kind = en.kind;
		o->scale = 1.0;
		l->n = i + 1;
		if (en.kind != TALLY_SHM_HIST)
			continue;
		err = tally__shm_hist_prepare(r->tally__map, L, &st, &en, (unsigned)i, &d, &hl,
					      &l->buf, &l->buf_cap, why, wn);
		if (!err && tally__shm_hist_snap_for(&o->hist, &hl))
			err = tally__shm_fail(why, wn, -ENOMEM, "out of memory");
		if (err)
			break;
		o->scale = d.scale;
	}
	for (i = 0; i < l->n; i++)
		l->v[i].name = l->names + l->v[i].name_at;
	l->names_len = used;
	if (err)
		tally__shm_export_list_free(l);
	return err;
}

/* The kind pick gives a histogram's family (split out before registering). */
#define TALLY__SHM_EXPORT_HIST 2

/*
 * Which objects of l (vals[0..n)) the exporter takes (hidden[i] = 0),
 * their kinds (a histogram's: TALLY__SHM_EXPORT_HIST), and the families
 * they make, into fams (room for n; *nfam set):
 * an object named base{labels} is a series of family base at column i
 * (labels with empty values dropped, as tally__export_parse_labels()
 * gives them); a family of one unlabelled object has no series list,
 * its value at its column; helps are left to the caller. The same
 * families tally__export_item_families() builds from these names with
 * hidden set, in one pass: each name is parsed and checked once, and
 * nothing is left for that pass to refuse. The others counted in
 * *skipped when at or past counted_from (e's error says why for the
 * last). r: the region (e's families of r's sources, about to be
 * replaced, are no conflict). The families' names lie in one block,
 * *names (no malloc per family: name_const set; at most l->names_len
 * bytes, a family's name being a prefix of its first object's), that
 * the caller owns and frees after the families (with their source). On
 * failure nothing is left allocated in fams, and *names is NULL.
 */
static inline int tally__shm_export_pick(struct tally_export *e,
					 const struct tally__shm_export_list *l,
					 const struct tally_shm *r, unsigned char *kinds,
					 unsigned char *hidden, size_t counted_from,
					 unsigned *skipped, struct tally__export_family *fams,
					 unsigned *nfam, char **names)
{
	const struct tally__shm_export_obj *vals = l->v;
	struct tally__shm_keys fk, sk;
	size_t cap = 16, i, n = l->n, used = 0; /* (bytes of pool taken) */
	unsigned nf = 0, j;
	unsigned char *in_sk = NULL; /* family j's first series is in sk */
	char *pool = (char *)malloc(l->names_len ? l->names_len : 1);
	int err = 0;
	while (cap < 2 * n)
		cap *= 2;
	fk.mask = sk.mask = cap - 1;
	fk.slot = (unsigned *)calloc(cap, sizeof(unsigned));
	sk.slot = (unsigned *)calloc(cap, sizeof(unsigned));
	fk.key = (char **)calloc(n ? n : 1, sizeof(char *));
	sk.key = (char **)calloc(n ? n : 1, sizeof(char *));
	fk.key_len = (size_t *)calloc(n ? n : 1, sizeof(size_t));
	sk.key_len = (size_t *)calloc(n ? n : 1, sizeof(size_t));
	in_sk = (unsigned char *)calloc(n ? n : 1, 1);
	if (!fk.slot || !sk.slot || !fk.key || !sk.key || !fk.key_len || !sk.key_len || !in_sk ||
	    !pool)
		err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	for (i = 0; i < n && !err; i++) {
		char *labels = NULL, *fam = NULL;
		size_t blen = 0, llen = 0;
		bool dropped;
		unsigned *slot;
		long f;
		int bad = 0;
		if (i + 16 < n) {
			/* The family's slot of an object 16 on, fetched ahead: the
			 * set outgrows the caches, and each lookup would wait. */
			const char *nm = vals[i + 16].name;
			size_t bl = strcspn(nm, "{");
			__builtin_prefetch(&fk.slot[(size_t)tally__export_hash(TALLY__EXPORT_HASH_SEED,
									       nm, bl) &
						    fk.mask]);
		}
		kinds[i] = vals[i].kind == TALLY_SHM_COUNTER ? (unsigned char)TALLY_EXPORT_COUNTER
			   : vals[i].kind == TALLY_SHM_HIST  ? (unsigned char)TALLY__SHM_EXPORT_HIST
							     : (unsigned char)TALLY_EXPORT_GAUGE;
		hidden[i] = 1;
		bad = tally__export_parse_labels(e, vals[i].name, ~0u, &blen, &labels, &dropped);
		if (bad == -ENOMEM) {
			err = bad;
			break;
		}
		if (!bad) {
			llen = labels ? tally__export_labels_len(labels) : 0;
			/* fk: family name -> family + 1 (its first object's kind) */
			slot = tally__shm_keys_slot(&fk, vals[i].name, blen);
			if (*slot && fams[*slot - 1].kind != kinds[i])
				bad = tally__export_fail(e, -EINVAL,
							 "'%s': its family's first object is of "
							 "another kind",
							 vals[i].name, 0);
			if (!bad && *slot && kinds[i] == TALLY__SHM_EXPORT_HIST) {
				/* one le set per family: its first member's */
				const struct tally__shm_export_obj *v0 = &vals[fams[*slot - 1].column];
				if (!vals[i].hist || !v0->hist || vals[i].scale != v0->scale ||
				    !tally__hist_layout_eq(&vals[i].hist->tally__l,
							   &v0->hist->tally__l))
					bad = tally__export_fail(e, -EINVAL,
								 "'%s': its family's first histogram "
								 "has other buckets or another scale",
								 vals[i].name, 0);
			}
			if (!bad && !*slot) {
				/* A new family: its name checked (a family already
				 * taken passed these checks), and no series of it
				 * can be in sk yet. Its name goes to the pool (taken
				 * there only if the family is): the names before
				 * it took at most their objects' bytes, so there is
				 * room (the check only guards that sum). */
				if (used + blen + 1 > l->names_len) {
					free(labels);
					err = tally__export_fail(e, -EINVAL, "'%s': a family name past "
								 "the names copied", vals[i].name, 0);
					break;
				}
				fam = pool + used;
				memcpy(fam, vals[i].name, blen);
				fam[blen] = '\0';
				bad = tally__export_check_name(e, fam);
				f = bad ? -1 : tally__export_find(e, fam);
				if (!bad && f >= 0 && !tally__shm_export_mine(e, f, r))
					bad = tally__export_fail(e, -EINVAL,
								 "metric name '%s' is already "
								 "registered (by another source)",
								 fam, 0);
			}
			if (!bad && *slot) {
				/* Another series of family j: its series keys (the
				 * family's name, a NUL, its packed labels) in sk,
				 * the first one's put there now if it is not yet. */
				char *ser;
				j = *slot - 1;
				for (ser = NULL; !in_sk[j] || !ser;) {
					unsigned at = in_sk[j] ? (unsigned)i : fams[j].column;
					const char *l = in_sk[j] ? labels
						      : fams[j].nr_cols ? fams[j].col_labels[0]
									: NULL;
					size_t ll = l ? tally__export_labels_len(l) : 0;
					ser = (char *)malloc(blen + 1 + ll);
					if (!ser)
						break;
					memcpy(ser, vals[i].name, blen);
					ser[blen] = '\0';
					if (l)
						memcpy(ser + blen + 1, l, ll);
					if (in_sk[j])
						break; /* object i's, checked below */
					sk.key[at] = ser;
					sk.key_len[at] = blen + 1 + ll;
					*tally__shm_keys_slot(&sk, ser, blen + 1 + ll) = at + 1u;
					in_sk[j] = 1;
					ser = NULL;
				}
				if (!ser) {
					free(labels);
					err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
					break;
				}
				if (*tally__shm_keys_slot(&sk, ser, blen + 1 + llen)) {
					bad = tally__export_fail(e, -EINVAL,
								 "'%s': a series its family has "
								 "already (an empty label value is "
								 "the label's absence)",
								 vals[i].name, 0);
					free(ser);
				} else {
					sk.key[i] = ser;
					sk.key_len[i] = blen + 1 + llen;
					*tally__shm_keys_slot(&sk, ser, blen + 1 + llen) = (unsigned)i + 1;
				}
			}
			if (!bad) {
				hidden[i] = 0;
				if (!*slot) {
					/* A new family: one value at column i, or
					 * labelled series. */
					j = nf++;
					memset(&fams[j], 0, sizeof(fams[j]));
					fams[j].name = fam;
					fams[j].name_const = 1; /* pool's */
					used += blen + 1;
					fams[j].kind = kinds[i];
					fams[j].column = (unsigned)i;
					fams[j].in_stat = 1;
					fk.key[j] = fam;
					fk.key_len[j] = blen;
					*slot = j + 1;
					fam = NULL;
					if (labels)
						err = tally__export_add_series(&fams[j], (unsigned)i,
									       labels);
				} else {
					j = *slot - 1;
					if (!fams[j].nr_cols) /* its first, unlabelled */
						err = tally__export_add_series(
							&fams[j], fams[j].column, NULL);
					if (!err)
						err = tally__export_add_series(&fams[j], (unsigned)i,
									       labels);
					else
						free(labels);
				}
				labels = NULL; /* the family's now (freed on failure) */
				if (err)
					err = tally__export_fail(e, err, "out of memory", NULL, 0);
			}
		}
		free(labels); /* (fam, not taken: the pool's next bytes) */
		if (hidden[i] && i >= counted_from)
			++*skipped;
	}
	for (i = 0; sk.key && i < n; i++)
		free(sk.key[i]);
	free(fk.slot);
	free(sk.slot);
	free(fk.key); /* (the names are the families') */
	free(sk.key);
	free(fk.key_len);
	free(sk.key_len);
	free(in_sk);
	if (err) {
		for (j = 0; j < nf; j++)
			tally__export_family_free(&fams[j]);
		nf = 0;
		free(pool);
		pool = NULL;
	}
	*nfam = nf;
	*names = pool;
	return err;
}

/* A source for histogram family f (picked: its series are objects of
 * vals; kind TALLY__SHM_EXPORT_HIST), into *s; f's series renumbered as
 * members. 0 or -ENOMEM (with e's message; f untouched then). */
static inline int tally__shm_export_hist_source(struct tally_export *e, struct tally_shm *r,
						const struct tally__shm_export_obj *vals,
						struct tally__export_family *f,
						struct tally__export_source *s)
{
	struct tally__shm_export_hist *h;
	const struct tally__shm_export_obj *v0 = &vals[f->column];
	unsigned c, nm = f->nr_cols ? f->nr_cols : 1u;
	const char *why = NULL;
	int n;
	memset(s, 0, sizeof(*s));
	h = (struct tally__shm_export_hist *)calloc(1, sizeof(*h));
	if (h) {
		h->x.m = (struct tally__export_hist_member *)calloc(nm, sizeof(*h->x.m));
		h->x.edges = (unsigned *)malloc(v0->hist->nr_buckets * sizeof(unsigned));
		h->obj = (unsigned *)malloc(nm * sizeof(unsigned));
	}
	s->priv = h;
	s->release = tally__shm_export_hist_release;
	if (!h || !h->x.m || !h->x.edges || !h->obj) {
		tally__export_source_free(s);
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	}
	h->r = r;
	h->x.cap = nm;
	h->x.scale = v0->scale;
	tally__shm_hist_describe(&v0->hist->tally__l, v0->scale, &h->d);
	/* the default grid of the layout: fixed from here on */
	n = tally__export_hist_edges(&v0->hist->tally__l, NULL, h->x.edges, &why);
	h->x.nr_edges = n > 0 ? (unsigned)n : 0u;
	for (c = 0; c < nm; c++) {
		h->obj[c] = f->nr_cols ? f->cols[c] : f->column;
		if (tally__shm_hist_snap_init(&h->x.m[c].snap, &v0->hist->tally__l)) {
			tally__export_source_free(s);
			return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		}
		h->x.nr = c + 1u;
		if (f->nr_cols)
			f->cols[c] = c; /* the series of member c */
	}
	f->column = 0;
	f->kind = TALLY_EXPORT_COUNTER; /* unused: the source writes its family */
	s->obj = r;
	s->nr_items = nm;
	s->collect = tally__shm_export_collect_hist;
	s->write = tally__export_write_hist;
	return 0;
}

#endif /* TALLY_SHM_PICK_H */
