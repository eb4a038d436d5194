/**
 * @file
 * tally/vec/lifetime.h - setting a tally_vec up and tearing it down
 * (private; include <tally/vec.h>): checking the options, copying the item
 * names, allocating the globals, baselines and per-CPU chunks.
 */
#ifndef TALLY_VEC_LIFETIME_H
#define TALLY_VEC_LIFETIME_H

#if !defined(TALLY__VEC_INSIDE)
#  error "tally/vec/lifetime.h is private: include <tally/vec.h>"
#endif

/* Is the input of tally_vec_init_opts() valid? */
static inline int tally__vec_opts_ok(const struct tally_vec_opts *o)
{
	unsigned i;
	if (!o || !o->nr_items || o->nr_items > TALLY_VEC_ITEMS_MAX || o->threshold < 0 ||
	    o->threshold > TALLY_VEC_THRESHOLD_MAX || (o->flags & ~TALLY__VEC_FLAGS))
		return 0;
	if ((o->flags & TALLY_VEC_EXACT_ONLY) && (o->threshold || o->thresholds))
		return 0;
	if (o->thresholds)
		for (i = 0; i < o->nr_items; i++)
			if (o->thresholds[i] != TALLY_VEC_EXACT &&
			    (o->thresholds[i] < 0 || o->thresholds[i] > TALLY_VEC_THRESHOLD_MAX))
				return 0;
	if (o->item_flags)
		for (i = 0; i < o->nr_items; i++)
			if (o->item_flags[i] & ~TALLY__VEC_ITEM_FLAGS)
				return 0;
	return 1;
}

/* A copy of name (NULL for NULL) into *out; -ENOMEM leaves *out alone. */
static inline int tally__vec_dup_name(const char *name, char **out)
{
	char *d = NULL;
	if (name) {
		size_t n = strlen(name) + 1;
		d = (char *)malloc(n);
		if (!d)
			return -ENOMEM;
		memcpy(d, name, n);
	}
	*out = d;
	return 0;
}

static inline void tally__vec_free_names(char **names, unsigned nr)
{
	unsigned i;
	if (!names)
		return;
	for (i = 0; i < nr; i++)
		free(names[i]);
	free(names);
}

/* Copy names: nr pointers, each to a string of its own (so one can be
 * replaced, tally_vec_set_item_name) or NULL. names NULL: all NULL. */
static inline char **tally__vec_copy_names(const char *const *names, unsigned nr)
{
	unsigned i;
	char **out = (char **)calloc(nr, sizeof(char *));
	if (!out)
		return NULL;
	for (i = 0; names && i < nr; i++) {
		if (tally__vec_dup_name(names[i], &out[i])) {
			tally__vec_free_names(out, i);
			return NULL;
		}
	}
	return out;
}

/* The body of tally_vec_init_opts (o checked): v untouched on failure. */
static inline int tally__vec_setup(struct tally_vec *v, const struct tally_vec_opts *o)
{
	unsigned i, nr = o->nr_items;
	int t, err = -ENOMEM;
	size_t chunk;
	struct tally_vec n;
	memset(&n, 0, sizeof(n));
	if (o->flags & TALLY_VEC_EXACT_ONLY)
		t = TALLY_VEC_EXACT;
	else
		t = o->threshold ? o->threshold : tally__vec_calc_threshold();
	n.tally__nr_items = nr;
	n.tally__threshold = t;
	n.tally__flags = o->flags;
	n.tally__item_stride = TALLY__VEC_WORDS * sizeof(tally_uword);
	/* One block: the globals, the baselines, reset's cut. */
	n.tally__global = (tally_uword *)calloc(3 * (size_t)nr, sizeof(tally_uword));
	/* One block: the thresholds, the bank numbers, the item flags. */
	n.tally__item_threshold =
		(int *)malloc((size_t)nr * (sizeof(int) + sizeof(unsigned) + 1));
	/* Always an array (of NULLs without names): a rename later writes
	 * its item's entry alone. */
	n.tally__names = tally__vec_copy_names(o->names, nr);
	if (!n.tally__global || !n.tally__item_threshold || !n.tally__names)
		goto fail;
	n.tally__baseline = n.tally__global + nr;
	n.tally__reset_cut = n.tally__global + 2 * (size_t)nr;
	n.tally__bank_of = (unsigned *)(n.tally__item_threshold + nr);
	n.tally__item_flags = (unsigned char *)(n.tally__bank_of + nr);
	for (i = 0; i < nr; i++) {
		unsigned char f = o->item_flags ? o->item_flags[i] : 0;
		n.tally__item_threshold[i] =
			o->thresholds && o->thresholds[i] ? o->thresholds[i] : t;
		if (o->flags & TALLY_VEC_MULTI)
			f |= TALLY_VEC_ITEM_MULTI;
		n.tally__item_flags[i] = f;
		n.tally__bank_of[i] =
			(f & TALLY_VEC_ITEM_MULTI) ? n.tally__nr_banked++ : TALLY__VEC_NO_BANKS;
	}
	/* Banks: after the items' words, then two in-flight counters. */
	chunk = (size_t)nr * n.tally__item_stride;
	n.tally__banks_off = chunk;
	if (n.tally__nr_banked) {
		n.tally__flags |= TALLY_VEC_MULTI;
		chunk += ((size_t)n.tally__nr_banked * TALLY__VEC_BANK_WORDS + 2) *
			 sizeof(tally_uword);
	}
	/* Tracked (tally/pcpu.h, the written bound): every writer of a CPU
	 * slot's words raises lim first (the adds through tally__pcpu_add*,
	 * the in-flight counters in tally__vec_add_multi; a base is written
	 * only in a slot an add wrote), so reads and the free visit the
	 * slots written, not the slots there are. */
	err = tally__pcpu_alloc_tracked(&n.tally__pcpu, chunk, TALLY__ARENA_HOT);
	if (err)
		goto fail;
	{
		/* A mutex may not be copied: initialise it in place, and put v
		 * back as it was if that fails. */
		struct tally_vec old = *v;
		*v = n;
		if (!pthread_mutex_init(&v->tally__lock, NULL))
			return 0;
		*v = old;
		tally__pcpu_free(&n.tally__pcpu);
		err = -ENOMEM;
	}
fail:
	free(n.tally__global);
	free(n.tally__item_threshold);
	tally__vec_free_names(n.tally__names, nr);
	return err;
}

/* The body of tally_vec_destroy (v initialised). */
static inline void tally__vec_teardown(struct tally_vec *v)
{
	free(v->tally__global);
	free(v->tally__item_threshold);
	tally__vec_free_names(v->tally__names, v->tally__nr_items);
	v->tally__global = v->tally__baseline = v->tally__reset_cut = NULL;
	v->tally__item_threshold = NULL;
	v->tally__item_flags = NULL;
	v->tally__bank_of = NULL;
	v->tally__names = NULL;
	pthread_mutex_destroy(&v->tally__lock);
	tally__pcpu_free(&v->tally__pcpu);
}

#endif /* TALLY_VEC_LIFETIME_H */
