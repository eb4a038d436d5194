/**
 * @file
 * tally/export/tree.h - the tree source of tally/export_rstat.h (private;
 * include <tally/export_rstat.h>): its render state (rows keyed by group
 * serial and path, the previous render's rows for the widening, the walk's
 * stack), the iterative walk that writes each group's row once, the
 * collect, release and write callbacks of the source, and
 * tally__export_tree_add(), the body of tally_export_add_tree(): the
 * checks of its options, the families (hierarchical and _local per item,
 * one per histogram) and their registration.
 */
#ifndef TALLY_EXPORT_TREE_H
#define TALLY_EXPORT_TREE_H

#if !defined(TALLY__EXPORT_INSIDE)
#  error "tally/export/tree.h is private: include <tally/export_rstat.h>"
#endif

/* Private: one row's identity (the group's serial: a new group at a
 * destroyed one's address and path is another row), and the tree
 * source's render state. */
struct tally__export_row_key {
	uint64_t serial; /* tally_group_serial() */
	uint64_t h;      /* hash of its path */
};

/* A group waiting for its row on the walk's stack. */
struct tally__export_pending {
	struct tally_group *g;
	size_t parent; /* row of its parent */
};

/* One of the tree's histograms as a family: its buckets, where its words
 * sit among a row's histogram words, its le set. */
struct tally__export_tree_hist {
	const struct tally__hist_layout *l; /* the tree's */
	unsigned off;
	double scale;
	unsigned *edges, nr_edges;
};

/* The column of histogram h's family: past every item column. */
#define TALLY__EXPORT_TREE_HIST 0x40000000u

struct tally__export_tree {
	struct tally_tree *tree;
	const struct tally__export_source *src; /* set by each collect */
	struct tally__export_tree_hist *hists;
	unsigned nr_hists, hwords; /* histograms, their words per row */
	uint64_t *hvals;           /* [rows][hwords] this render's, widened */
	size_t stride;             /* series per row: 2 nr_items + hwords */
	tally_export_group_name_fn name_fn;
	void *name_arg;
	unsigned flags;
	/* this render's rows */
	struct tally__export_row_key *keys;
	struct tally__export_series *series; /* [rows][2 * nr_items] */
	size_t cap_rows;                     /* keys, series */
	size_t cap_label_rows;               /* the source's label_at and values */
	size_t labels_len, labels_cap;
	uint32_t *path_set; /* hash set of rows by path; cap_path_set slots */
	size_t cap_path_set;
	struct tally__export_pending *stack; /* the walk: groups not yet rowed */
	size_t cap_stack;
	/* the previous render's rows, indexed by key */
	struct tally__export_row_key *prev_keys;
	struct tally__export_series *prev_series;
	size_t prev_nr, prev_cap_rows;
	uint32_t *prev_index; /* slots: row + 1, 0 empty */
	size_t prev_cap_index;
};

static inline uint64_t tally__export_tree_hash(const char *s, size_t n, uint64_t h)
{
	size_t i;
	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static inline uint64_t tally__export_row_key_hash(const struct tally__export_row_key *k)
{
	uint64_t h = k->h ^ (k->serial * 0x9e3779b97f4a7c15ull);
	return h ^ (h >> 29);
}

static inline void tally__export_tree_release(struct tally__export_source *s)
{
	struct tally__export_tree *x = (struct tally__export_tree *)s->priv;
	if (!x)
		return;
	free(x->keys);
	free(x->series);
	free(x->path_set);
	free(x->stack);
	free(x->prev_keys);
	free(x->prev_series);
	free(x->prev_index);
	free(x->hvals);
	while (x->hists && x->nr_hists--)
		free(x->hists[x->nr_hists].edges);
	free(x->hists);
	free(x);
	s->priv = NULL;
}

/* Grow the per-row arrays to hold row r. */
static inline int tally__export_tree_grow(struct tally__export_source *s,
					  struct tally__export_tree *x, size_t r)
{
	size_t n = 2u * s->nr_items;
	if (r >= x->cap_rows) {
		size_t cap = x->cap_rows ? 2 * x->cap_rows : 64;
		struct tally__export_row_key *k =
			(struct tally__export_row_key *)realloc(x->keys, cap * sizeof(*k));
		struct tally__export_series *se;
		uint64_t *hv;
		if (!k)
			return -ENOMEM;
		x->keys = k;
		se = (struct tally__export_series *)realloc(x->series,
							     cap * x->stride * sizeof(*se));
		if (!se)
			return -ENOMEM;
		x->series = se;
		if (x->hwords) {
			hv = (uint64_t *)realloc(x->hvals, cap * x->hwords * sizeof(*hv));
			if (!hv)
				return -ENOMEM;
			x->hvals = hv;
		}
		x->cap_rows = cap;
	}
	if (r >= x->cap_label_rows) {
		size_t cap = x->cap_label_rows ? 2 * x->cap_label_rows : 64;
		size_t *lo = (size_t *)realloc(s->label_at, cap * sizeof(*lo));
		if (!lo)
			return -ENOMEM;
		s->label_at = lo;
		if (tally__export_grow_values(s, cap * n))
			return -ENOMEM;
		x->cap_label_rows = cap;
	}
	return 0;
}

/* Insert row r into the path set; -EEXIST if an equal path is there. */
static inline int tally__export_tree_path_add(struct tally__export_source *s,
					      struct tally__export_tree *x, size_t r)
{
	size_t i, mask;
	if (2 * (r + 1) > x->cap_path_set) {
		size_t cap = x->cap_path_set ? 2 * x->cap_path_set : 128, j;
		uint32_t *p = (uint32_t *)calloc(cap, sizeof(*p));
		if (!p)
			return -ENOMEM;
		for (j = 0; j < r; j++) {
			size_t k = (size_t)(x->keys[j].h & (cap - 1));
			while (p[k])
				k = (k + 1) & (cap - 1);
			p[k] = (uint32_t)(j + 1);
		}
		free(x->path_set);
		x->path_set = p;
		x->cap_path_set = cap;
	}
	mask = x->cap_path_set - 1;
	for (i = (size_t)(x->keys[r].h & mask); x->path_set[i]; i = (i + 1) & mask) {
		size_t o = x->path_set[i] - 1;
		if (x->keys[o].h == x->keys[r].h &&
		    !strcmp(s->labels + s->label_at[o], s->labels + s->label_at[r]))
			return -EEXIST;
	}
	x->path_set[i] = (uint32_t)(r + 1);
	return 0;
}

/* Add a row for g with path parent_path + "/" + name (name NULL: the
 * root, path "/"); fills its values. Returns 0 or -errno. */
static inline int tally__export_tree_row(struct tally_export *e, struct tally__export_source *s,
					 struct tally__export_tree *x, const struct tally_group *g,
					 size_t parent, const char *name)
{
	size_t r = s->nr_rows, plen = 0, nlen = name ? strlen(name) : 0, need, i, n;
	size_t at = x->labels_len;
	char *path;
	const struct tally__export_series *old = NULL;
	struct tally__export_series *nw;
	uint64_t *values;
	if (name) {
		plen = strlen(s->labels + s->label_at[parent]);
		if (plen == 1)
			plen = 0; /* the root's "/" */
	}
	if (plen + 1 + nlen > TALLY_EXPORT_PATH_MAX)
		return tally__export_fail(e, -E2BIG,
					  "the path of a group under '%s' is longer than %u bytes "
					  "(TALLY_EXPORT_PATH_MAX)",
					  s->labels + s->label_at[parent], TALLY_EXPORT_PATH_MAX);
	if (tally__export_tree_grow(s, x, r))
		return -ENOMEM;
	need = plen + 1 + nlen + 1;
	if (x->labels_len + need > x->labels_cap) {
		size_t cap = x->labels_cap ? 2 * x->labels_cap : 4096;
		char *l;
		while (cap < x->labels_len + need)
			cap *= 2;
		l = (char *)realloc(s->labels, cap);
		if (!l)
			return -ENOMEM;
		s->labels = l;
		x->labels_cap = cap;
	}
	path = s->labels + at;
	if (plen)
		memcpy(path, s->labels + s->label_at[parent], plen);
	path[plen] = '/';
	memcpy(path + plen + 1, name ? name : "", nlen);
	path[plen + 1 + nlen] = '\0';
	x->labels_len += need;
	s->label_at[r] = at;
	x->keys[r].serial = tally_group_serial(g);
	x->keys[r].h = tally__export_tree_hash(path, plen + 1 + nlen, 0xcbf29ce484222325ull);
	if (tally__export_tree_path_add(s, x, r) == -EEXIST)
		return tally__export_fail(e, -EINVAL, "two groups have the path '%s'", path, 0);
	/* The previous render's state of this (group, path). */
	if (x->prev_cap_index) {
		size_t mask = x->prev_cap_index - 1, j;
		for (j = (size_t)(tally__export_row_key_hash(&x->keys[r]) & mask); x->prev_index[j];
		     j = (j + 1) & mask) {
			size_t o = x->prev_index[j] - 1;
			if (x->prev_keys[o].serial == x->keys[r].serial &&
			    x->prev_keys[o].h == x->keys[r].h) {
				old = &x->prev_series[o * x->stride];
				break;
			}
		}
	}
	n = s->nr_items;
	nw = &x->series[r * x->stride];
	if (old)
		memcpy(nw, old, x->stride * sizeof(*nw));
	else
		memset(nw, 0, x->stride * sizeof(*nw));
	values = &s->values[r * 2u * n];
	/* The raw words, which no reset moves (rstat/reset.h keeps its
	 * baselines beside them): a counter's row never goes back, and a
	 * gauge, never reset, reads its level. */
	for (i = 0; i < n; i++) {
		values[2 * i] = tally__export_value(&nw[2 * i], s->kinds[i],
						    tally__load(&g->tally__state[i]));
		values[2 * i + 1] = tally__export_value(&nw[2 * i + 1], s->kinds[i],
							tally__load(&g->tally__local[i]));
	}
	/* The histograms' words (after the items'): hierarchical, counters. */
	for (i = 0; i < x->hwords; i++)
		x->hvals[r * x->hwords + i] =
			tally__export_value(&nw[2 * n + i], TALLY_EXPORT_COUNTER,
					    tally__load(&g->tally__state[n + i]));
	s->nr_rows = r + 1;
	return 0;
}

/* tally_group_for_each_child callback: push child c onto the walk's
 * stack (parent row in the walk's top entry template). */
struct tally__export_push {
	struct tally__export_tree *x;
	size_t top, parent;
	int err;
};

static inline int tally__export_tree_push(struct tally_group *c, void *arg)
{
	struct tally__export_push *p = (struct tally__export_push *)arg;
	struct tally__export_tree *x = p->x;
	if (p->top == x->cap_stack) {
		size_t cap = x->cap_stack ? 2 * x->cap_stack : 64;
		struct tally__export_pending *st = (struct tally__export_pending *)realloc(
			x->stack, cap * sizeof(*st));
		if (!st) {
			p->err = -ENOMEM;
			return 1;
		}
		x->stack = st;
		x->cap_stack = cap;
	}
	x->stack[p->top].g = c;
	x->stack[p->top].parent = p->parent;
	p->top++;
	return 0;
}

/*
 * The rows of every group, depth first, children in
 * tally_group_for_each_child() order, as the old recursive walk wrote them,
 * but with an explicit stack: no recursion, so any depth costs the same
 * per group. The whole walk is one read-side section: the groups on the
 * stack stay allocated until it ends, even if destroyed meanwhile.
 */
static inline int tally__export_tree_walk(struct tally_export *e, struct tally__export_source *s,
					  struct tally__export_tree *x, struct tally_group *root)
{
	struct tally__export_push p;
	struct tally__export_pending next;
	int err;
	p.x = x;
	p.top = 0;
	p.err = 0;
	next.g = root;
	next.parent = 0;
	for (;;) {
		const char *name = NULL;
		char gen[24];
		size_t n, lo, hi;
		if (next.g != root) {
			name = x->name_fn ? x->name_fn(next.g, x->name_arg)
					  : tally_group_name(next.g);
			if (!name) {
				/** "#N": stable, and tells the group apart. */
				uint64_t v = tally_group_serial(next.g);
				char d[21];
				int k = 0, m = 0;
				do
					d[k++] = (char)('0' + v % 10);
				while ((v /= 10));
				gen[m++] = '#';
				while (k)
					gen[m++] = d[--k];
				gen[m] = '\0';
				name = gen;
			}
			n = strlen(name);
			if (!n || memchr(name, '/', n) || !tally__utf8_ok(name, n))
				return tally__export_fail(e, -EINVAL,
							  "a group under '%s' has an empty, "
							  "non-UTF-8 or '/'-holding name",
							  s->labels + s->label_at[next.parent], 0);
		}
		err = tally__export_tree_row(e, s, x, next.g, next.parent, name);
		if (err)
			return err;
		/* Its children on top, reversed so the first is taken first. */
		lo = p.top;
		p.parent = s->nr_rows - 1;
		tally_group_for_each_child(next.g, tally__export_tree_push, &p);
		if (p.err)
			return p.err;
		for (hi = p.top; hi > lo + 1; lo++, hi--) {
			struct tally__export_pending t = x->stack[lo];
			x->stack[lo] = x->stack[hi - 1];
			x->stack[hi - 1] = t;
		}
		if (!p.top)
			return 0;
		next = x->stack[--p.top];
	}
}

static inline int tally__export_collect_tree(struct tally_export *e, struct tally__export_source *s)
{
	struct tally__export_tree *x = (struct tally__export_tree *)s->priv;
	struct tally_group *root = tally_tree_root(x->tree);
	size_t cap, r;
	int err;
	if (x->flags & TALLY_EXPORT_TREE_FLUSH)
		tally_group_flush_force(root);
	x->src = s;
	s->nr_rows = 0;
	x->labels_len = 0;
	if (x->path_set)
		memset(x->path_set, 0, x->cap_path_set * sizeof(*x->path_set));
	tally_tree_read_lock(x->tree);
	err = tally__export_tree_walk(e, s, x, root);
	tally_tree_read_unlock(x->tree);
	if (err) {
		/* Keep the previous state: nothing of this render counts. */
		if (err == -ENOMEM)
			tally__export_fail(e, err, "out of memory", NULL, 0);
		s->nr_rows = 0;
		return err;
	}
	/* This render's rows become the state the next one starts from. */
	for (cap = 64; cap < 2 * s->nr_rows; cap *= 2)
		;
	if (cap > x->prev_cap_index) {
		uint32_t *idx = (uint32_t *)calloc(cap, sizeof(*idx));
		if (!idx) {
			s->nr_rows = 0;
			return -ENOMEM;
		}
		free(x->prev_index);
		x->prev_index = idx;
		x->prev_cap_index = cap;
	} else {
		memset(x->prev_index, 0, x->prev_cap_index * sizeof(*x->prev_index));
	}
	{
		struct tally__export_row_key *k = x->prev_keys;
		struct tally__export_series *se = x->prev_series;
		size_t c = x->prev_cap_rows;
		x->prev_keys = x->keys;
		x->prev_series = x->series;
		x->prev_cap_rows = x->cap_rows;
		x->keys = k;
		x->series = se;
		x->cap_rows = c;
	}
	x->prev_nr = s->nr_rows;
	for (r = 0; r < s->nr_rows; r++) {
		size_t j = (size_t)(tally__export_row_key_hash(&x->prev_keys[r]) &
				    (x->prev_cap_index - 1));
		while (x->prev_index[j])
			j = (j + 1) & (x->prev_cap_index - 1);
		x->prev_index[j] = (uint32_t)(r + 1);
	}
	return 0;
}

/* Row c of histogram family f: the group's path, its words. */
static inline void tally__export_tree_hist_view(const struct tally__export_source *src,
						const struct tally__export_family *f, unsigned c,
						struct tally__export_hist_view *v)
{
	const struct tally__export_tree *x = (const struct tally__export_tree *)src->priv;
	const struct tally__export_tree_hist *th = &x->hists[f->column - TALLY__EXPORT_TREE_HIST];
	const uint64_t *w = x->hvals + (size_t)c * x->hwords + th->off;
	unsigned j;
	v->row_name = src->label_name;
	v->row_value = src->labels + src->label_at[c];
	v->col_labels = NULL;
	v->counts = w;
	v->sum = w[th->l->nr];
	for (v->count = 0, j = 0; j < th->l->nr; j++)
		v->count += w[j];
}

/* The tree source's families: the items' as every source's, the
 * histograms' (column TALLY__EXPORT_TREE_HIST + h) by export_hist.h's
 * writer, a row per group (TALLY_EXPORT_STAT: the root's). */
static inline void tally__export_tree_write(struct tally__export_sink *k, int fmt,
					    const struct tally__export_family *f,
					    const struct tally__export_source *s)
{
	const struct tally__export_tree *x = (const struct tally__export_tree *)s->priv;
	if (f->column >= TALLY__EXPORT_TREE_HIST) {
		const struct tally__export_tree_hist *th =
			&x->hists[f->column - TALLY__EXPORT_TREE_HIST];
		tally__export_hist_family(k, fmt, f, s, tally__export_tree_hist_view,
					  (unsigned)s->nr_rows, s->nr_rows ? 1u : 0u, th->l, th->scale,
					  th->edges, th->nr_edges);
		return;
	}
	switch (fmt) {
	case TALLY_EXPORT_PROMETHEUS:
	case TALLY_EXPORT_OPENMETRICS:
		tally__export_write_text(k, fmt, f, s);
		break;
	case TALLY_EXPORT_STAT:
		tally__export_write_stat(k, f, s);
		break;
	default: /* JSON: the comma is written before the call */
		tally__export_write_json(k, f, s);
		break;
	}
}

/* tally_export_add_tree(): see there. */
static inline int tally__export_tree_add(struct tally_export *e, struct tally_tree *t,
					 const struct tally_export_tree_opts *o)
{
	static const struct tally_export_tree_opts none = {NULL, NULL, NULL, NULL, NULL,
							    NULL, 0,	NULL, NULL, NULL};
	struct tally__export_source s;
	struct tally__export_tree *x;
	struct tally__export_family *fams, *one;
	const char *prefix;
	const char *const *names;
	const char *const *helps;
	const unsigned char *kinds;
	unsigned char *tree_kinds = NULL;
	const char **own;
	char **full;
	unsigned n, i, nf = 0, nh;
	int err;
	if (tally__bad(!e))
		return -EINVAL;
	if (!o)
		o = &none;
	prefix = o->prefix;
	names = o->names;
	helps = o->helps;
	kinds = o->kinds;
	if (!t)
		return tally__export_fail(e, -EINVAL, "tree '%s' is NULL", prefix, 0);
	if (o->flags & ~TALLY_EXPORT_TREE_FLUSH)
		return tally__export_fail(e, -EINVAL, "tree '%s': unknown flags", prefix, 0);
	n = t->tally__nr_user;
	for (i = 0; kinds && i < n; i++)
		if (kinds[i] != TALLY_EXPORT_COUNTER && kinds[i] != TALLY_EXPORT_GAUGE)
			return tally__export_fail(e, -EINVAL,
						  "kind of item %u is neither counter nor gauge",
						  NULL, i);
	nh = t->tally__nr_hists;
	for (i = 0; o->hist_opts && i < nh; i++) {
		double sc = o->hist_opts[i].scale;
		if (sc < 0.0 || sc != sc || sc > 1e300 || o->hist_opts[i].max_buckets == 1u)
			return tally__export_fail(e, -EINVAL,
						  "histogram %u: scale must be finite and > 0, "
						  "max_buckets 0 or 2 and up",
						  NULL, i);
	}
	if (!kinds) {
		/* The tree's own kinds, as tally_export_add_vec takes the
		 * vector's: a gauge must not be widened as a counter (that
		 * holds its maximum). */
		tree_kinds = (unsigned char *)malloc(n);
		if (!tree_kinds)
			return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		for (i = 0; i < n; i++)
			tree_kinds[i] = (t->tally__item_flags &&
					 (t->tally__item_flags[i] & TALLY_GROUP_ITEM_GAUGE))
						? (unsigned char)TALLY_EXPORT_GAUGE
						: (unsigned char)TALLY_EXPORT_COUNTER;
		kinds = tree_kinds;
	}
	memset(&s, 0, sizeof(s));
	x = (struct tally__export_tree *)calloc(1, sizeof(*x));
	s.obj = t;
	s.nr_items = n;
	s.row_len = 2u * n;
	s.label_name = "group";
	s.collect = tally__export_collect_tree;
	s.release = tally__export_tree_release;
	s.write = tally__export_tree_write;
	s.priv = x;
	s.kinds = (unsigned char *)calloc(n, 1);
	one = (struct tally__export_family *)calloc(n, sizeof(*one));
	fams = (struct tally__export_family *)calloc(2u * n + nh, sizeof(*fams));
	if (x) {
		x->stride = 2u * n + (t->tally__nr_items - n);
		x->hwords = t->tally__nr_items - n;
		x->hists = nh ? (struct tally__export_tree_hist *)calloc(nh, sizeof(*x->hists)) : NULL;
		x->nr_hists = x->hists ? nh : 0u;
	}
	own = (const char **)calloc(n, sizeof(*own));
	err = !x || !s.kinds || !one || !fams || !own || (nh && !x->hists)
		      ? tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0)
		      : 0;
	/* The histograms' le sets (export_hist.h's rules). */
	for (i = 0; !err && i < nh; i++) {
		struct tally__export_tree_hist *th = &x->hists[i];
		const char *why = NULL;
		int ne;
		th->l = &t->tally__hists[i].l;
		th->off = t->tally__hists[i].first - n;
		th->scale = o->hist_opts && o->hist_opts[i].scale != 0.0 ? o->hist_opts[i].scale
									   : 1.0;
		th->edges = (unsigned *)malloc(th->l->nr * sizeof(unsigned));
		if (!th->edges) {
			err = tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
			break;
		}
		ne = tally__export_hist_edges(th->l, o->hist_opts ? &o->hist_opts[i] : NULL,
					      th->edges, &why);
		if (ne < 0) {
			err = tally__export_fail(e, -EINVAL, "tree '%s', histogram ", prefix, 0);
			tally__export_fail_more(e, why);
			break;
		}
		th->nr_edges = (unsigned)ne;
	}
	if (!err) {
		struct tally__export_items it = {n,	   NULL,	names != NULL,
						 NULL,	   kinds,	helps,
						 "tally tree item", "tree item",
						 "tally_tree_set_item_names", "group"};
		x->tree = t;
		x->name_fn = o->name_fn;
		x->name_arg = o->name_arg;
		x->flags = o->flags;
		memcpy(s.kinds, kinds, n);
		/* The caller's names, or the tree's own (NULL: item<i>). */
		for (i = 0; i < n; i++)
			own[i] = names ? names[i] : tally_tree_item_name(t, i);
		it.names = own;
		err = tally__export_item_families(e, one, &nf, prefix, &it);
	}
	free((void *)own);
	free(tree_kinds); /* copied into s.kinds */
	/* Each family twice: hierarchical at the row's column 2 c, local
	 * (name_local) at 2 c + 1, c its item (or each series' item). The
	 * helps are checked as given (TALLY_EXPORT_HELP_MAX applies to the
	 * caller's text) and get their suffix once registered: full[] is
	 * made first, so nothing can fail after the registration. */
	full = err ? NULL : (char **)calloc(2u * nf, sizeof(*full));
	for (i = 0; !err && i < nf; i++) {
		struct tally__export_family *h = &fams[2 * i], *l = &fams[2 * i + 1];
		unsigned c;
		*h = one[i];
		*l = one[i];
		l->name = tally__export_join(one[i].name, NULL, "_local");
		l->help = one[i].help ? tally__export_strdup(one[i].help) : NULL;
		l->in_stat = 0;
		l->cols = NULL;
		l->col_labels = NULL;
		l->nr_cols = l->cap_cols = 0;
		h->column = 2 * one[i].column;
		l->column = h->column + 1;
		for (c = 0; c < h->nr_cols; c++) {
			char *lab = NULL;
			if (h->col_labels[c]) {
				size_t len = tally__export_labels_len(h->col_labels[c]);
				lab = (char *)malloc(len);
				if (lab)
					memcpy(lab, h->col_labels[c], len);
			}
			h->cols[c] *= 2;
			if ((h->col_labels[c] && !lab) ||
			    tally__export_add_series(l, h->cols[c] + 1, lab)) {
				free(l->help);
				l->help = NULL; /* the registration fails and frees */
			}
		}
		if (full && one[i].help) {
			full[2 * i] = tally__export_join(one[i].help, NULL,
							 " (this group and its descendants)");
			full[2 * i + 1] = tally__export_join(one[i].help, NULL, " (this group alone)");
		}
	}
	free(one);
	if (err) {
		free(fams);
		tally__export_source_free(&s);
		return err;
	}
	for (i = 0; i < 2u * nf; i++)
		if (!full || !full[i]) {
			/* out of memory: the registration fails and frees */
			free(fams[i].help);
			fams[i].help = NULL;
		}
	/* A family per histogram, after the items'. */
	for (i = 0; i < nh; i++) {
		struct tally__export_family *f = &fams[2u * nf + i];
		const char *hn = o->hist_names ? o->hist_names[i] : NULL;
		const char *hh = o->hist_helps ? o->hist_helps[i] : NULL;
		char gen[24];
		if (!hn) {
			(void)snprintf(gen, sizeof(gen), "hist%u", i);
			hn = gen;
		}
		f->name = tally__export_join(prefix && *prefix ? prefix : NULL, hn, NULL);
		f->help = tally__export_strdup(tally__export_help_given(hh) ? hh
									   : TALLY__EXPORT_HIST_HELP);
		f->kind = TALLY_EXPORT_COUNTER; /* unused: the source writes it */
		f->column = TALLY__EXPORT_TREE_HIST + i;
		f->in_stat = 1;
	}
	err = tally__export_register(e, &s, fams, 2u * nf + nh);
	free(fams);
	for (i = 0; full && i < 2u * nf; i++) {
		if (!err) {
			struct tally__export_family *f =
				&e->tally__families[e->tally__nr_families - (2u * nf + nh) + i];
			free(f->help);
			f->help = full[i];
		} else {
			free(full[i]);
		}
	}
	free(full);
	return err;
}

#endif /* TALLY_EXPORT_TREE_H */
