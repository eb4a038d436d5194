/**
 * @file
 * tally/export_rstat.h - render a tally_tree through a tally_export: every
 * group a row, its path a label, hierarchical and local values as separate
 * families. Needs rstat.h (liburcu); counters and vectors alone need only
 * <tally/export.h>.
 *
 *   struct tally_export_tree_opts o = {.prefix = "memcg",
 *                                      .flags = TALLY_EXPORT_TREE_FLUSH};
 *   tally_export_add_tree(&e, t, &o);   // the tree's item names and kinds
 *
 * For item i named n, two families:
 *   prefix_n{group="/a/b"}        hierarchical: the group and its subtree
 *   prefix_n_local{group="/a/b"}  local: the group alone
 * so sum() over one family never counts an event twice. Items named
 * "n{k=\"v\",...}" (tally_export_name() builds such names) are series of
 * one family n, each row's group label first: requests{method="get"}
 * and requests{method="set"} give prefix_requests{group="/a",method="get"}
 * and so on. The label rules are the vectors' (export.h: an empty value is
 * no label, equal label sets refused, no le or quantile, one kind per
 * family), and no item may take the label group. What the locals
 * add up to: the root's hierarchical value counts every update of every
 * group ever in the tree (a destroyed group hands its counts to its
 * parent), the locals only the groups alive now (every one has a row: see
 * Paths). So, once updates pause, sum(prefix_n_local) of a counter equals
 * prefix_n{group="/"} as long as no group of the tree was ever destroyed,
 * and falls short of it by what the destroyed groups counted themselves;
 * while updates run, two rows may come from two flushes. Counters get _total
 * in the output. The flat-keyed TALLY_EXPORT_STAT text has the root's
 * hierarchical values.
 *
 * Histograms (tally_tree_opts.hists): histogram h is one family,
 * prefix_\<name\> (tally_export_tree_opts.hist_names; hist\<h\> by
 * default), of type histogram, with a row per group labelled as the
 * items' rows: x_bucket{group="/a",le="0.005"}, x_sum{group="/a"},
 * x_count{group="/a"}; each row is the group's subtree (the hierarchical
 * words: a group's histogram includes its descendants', so aggregate over
 * one depth, never over the whole tree). Its `le` set is fixed when the
 * export is set up, chosen as tally_export_add_hist() chooses it
 * (tally_export_tree_opts.hist_opts: scale, bounds, max_buckets;
 * export_hist.h), and never changes between scrapes. Values are raw
 * (resets do not move them) and widened as counters; _count is the sum
 * of the buckets, and the row's sum may lag or lead its buckets by the
 * records that raced with the flush (tally_group_hist_snapshot()).
 * TALLY_EXPORT_STAT writes the root's x_count and x_sum.
 *
 * Paths: the root is "/", its child named a is "/a", a's child b "/a/b".
 * Names come from name_fn(group, name_arg), called while rendering for
 * every group but the root, or, with name_fn NULL, from the groups' own
 * names (tally_group_set_name()). A group without a name (name_fn returns
 * NULL, or it has no own name yet) is rendered as "#N", N its
 * tally_group_serial(): every live group has a row, and that name is
 * stable for the group's life. A name must be non-empty valid UTF-8
 * without '/'; a bad name, or two siblings with one name (a group named
 * "#N" beside the unnamed group with serial N included), fails the render
 * with -EINVAL, and a path longer than TALLY_EXPORT_PATH_MAX bytes with
 * -E2BIG; tally_export_error() names the place.
 *
 * The walk is iterative (an explicit stack, no recursion) and writes each
 * row once: a render costs O(groups x (items + path length)) whatever the
 * depth.
 *
 * Values are raw, as tally_export_add_vec's: what tally_group_read_monotonic()
 * reads (less its bias), and for a _local row the group's own raw value,
 * which tally_group_reset() and tally_tree_reset() never move. So an
 * exported counter never goes back whatever resets the program does (a
 * "stats reset" command): Prometheus sees no counter reset, and rate()
 * and increase() count every update once. The since-reset readers
 * (tally_group_read(), read_local()) are for the program's own views. A
 * gauge (TALLY_GROUP_ITEM_GAUGE) has no baseline, as resets leave it
 * alone: its raw value is its level, signed.
 *
 * Values are as of a flush: with TALLY_EXPORT_TREE_FLUSH every render
 * first forces a flush of the root (tally_group_flush_force), so the rows
 * are the exact sums of every update completed before the render. Without
 * it, rows show the last flush (a periodic flusher's). Counters are widened
 * per (group, item) as in export.h. The widened state of a row is keyed by
 * the group's serial and its path, and is dropped once the group is no
 * longer rendered: a new group never inherits a destroyed one's totals,
 * even at its address and under its name (restarted jobs). Such a row
 * starts from the new group's own count; when that is below what the
 * last scrape saw, Prometheus sees a counter reset (rate() and increase()
 * handle it); when the new group counted more before the next scrape, a
 * Prometheus that keeps no creation time cannot tell, and reads the
 * difference as an increase: scrape more often than groups are replaced.
 *
 * The rendering thread walks children (tally_group_for_each_child), so it
 * must be registered with the tree's RCU flavor (urcu_memb_register_thread()
 * for the default), as rstat.h requires of walkers; a render holds one
 * read-side section for its walk. Groups may be created and destroyed
 * meanwhile: a render sees each such group or not.
 */
#ifndef TALLY_EXPORT_RSTAT_H
#define TALLY_EXPORT_RSTAT_H

#include <tally/export.h>
#include <tally/export_hist.h>
#include <tally/rstat.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Force a flush of the root before each render (exact values). */
#define TALLY_EXPORT_TREE_FLUSH 1u

/**
 * Longest group path a tree source renders, in bytes ("/a/b" is 4): a
 * group deeper than that fails the render with -E2BIG. It bounds what one
 * row costs (its label holds the whole path), so a render writes O(groups)
 * bytes however deep the tree. Within rstat.h's TALLY_RSTAT_DEPTH_MAX
 * (1024) every path fits while names have at most 3 bytes; longer names
 * fit less deep.
 */
#define TALLY_EXPORT_PATH_MAX 4096

/**
 * tally_export_group_name_fn - names a group for a tree source: returns
 * g's path component (any valid UTF-8 but "" and '/'; read before the call
 * returns, not kept), or NULL for the group's generated name "#N" (N its
 * tally_group_serial()). Called with arg, on the rendering thread, inside
 * the tree's read-side section, for every group but the root; it may call
 * any tally read call on g.
 */
typedef const char *(*tally_export_group_name_fn)(const struct tally_group *g, void *arg);

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

/**
 * struct tally_export_tree_opts - how tally_export_add_tree() names and
 * renders a tree: zero-initialise and set what you need (every member 0 or
 * NULL is its default; NULL options are all defaults). Members added
 * later go at the end.
 */
struct tally_export_tree_opts {
	/** Family names' prefix: prefix_\<name\>; NULL or "": \<name\> alone. */
	const char *prefix;
	/** NULL: the tree's own item names (tally_tree_item_name()), item\<i\>
	 * for an unnamed item; or one per item, NULL entries item\<i\>. */
	const char *const *names;
	/** NULL, or one per item (a NULL entry: a generic help), as in
	 * tally_export_add_vec; at most TALLY_EXPORT_HELP_MAX bytes each. */
	const char *const *helps;
	/** NULL (recommended): each item's kind from the tree,
	 * tally_tree_opts.item_flags (TALLY_GROUP_ITEM_GAUGE: a gauge, else a
	 * counter); or one per item, TALLY_EXPORT_COUNTER or
	 * TALLY_EXPORT_GAUGE, for this export only (the tree's resets still
	 * follow its own flags). */
	const unsigned char *kinds;
	/** Names the groups (NULL: their own names, tally_group_set_name();
	 * see the top of this file). */
	tally_export_group_name_fn name_fn;
	/** Passed to name_fn. */
	void *name_arg;
	/** TALLY_EXPORT_TREE_FLUSH or 0. */
	unsigned flags;
	/** The tree's histograms (tally_tree_opts.hists), each a histogram
	 * family prefix_\<name\> with a row per group (its subtree's
	 * histogram: tally_group_hist_snapshot_raw()): NULL, or one name
	 * per histogram (a NULL entry, or NULL: hist\<h\>). */
	const char *const *hist_names;
	/** NULL, or one help per histogram (NULL entries: a generic one). */
	const char *const *hist_helps;
	/** How each histogram is shown, as tally_export_add_hist() takes it
	 * (scale, le set: export_hist.h): NULL (scale 1, the default grid,
	 * at most 40 series), or one per histogram. */
	const struct tally_export_hist_opts *hist_opts;
};

/**
 * tally_export_add_tree - export every item of t's groups: for item i,
 * families prefix_\<name\> (hierarchical) and prefix_\<name\>_local (local),
 * with rows labelled group="\<path\>", named, kinded and rendered as
 * o says (struct tally_export_tree_opts; NULL: every default). The local
 * family's help gets " (this group alone)" appended, the other's " (this
 * group and its descendants)". Values are raw: exported counters never
 * go back, whatever tally_group_reset() or tally_tree_reset() do (see the
 * top of this file).
 * @param e the exporter
 * @param t the tree; it must outlive e
 * @param o the options, read during the call only (its arrays are copied)
 * @return 0; -EINVAL (NULL e or t, a bad name, help, kind or flag: nothing
 *         registered; see tally_export_error()); -ENOMEM.
 * Not beside other calls on e; beside any call on t but
 * tally_tree_destroy() and tally_tree_set_item_names() (the names are
 * copied here).
 */
static inline int tally_export_add_tree(struct tally_export *e, struct tally_tree *t,
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

#ifdef __cplusplus
}
#endif

#endif /* TALLY_EXPORT_RSTAT_H */
