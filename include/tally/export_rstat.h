/**
 * @file
 * tally/export_rstat.h - render a tally_tree through a tally_export: every
 * group a row, its path a label, hierarchical and local values as separate
 * families. Needs rstat.h (liburcu); counters and vectors alone need only
 * <tally/export.h>.
 *
 *   tally_export_add_tree(&e, "memcg", t, item_names, helps, kinds,
 *                         my_group_name, NULL, TALLY_EXPORT_TREE_FLUSH);
 *
 * For item i named n, two families:
 *   prefix_n{group="/a/b"}        hierarchical: the group and its subtree
 *   prefix_n_local{group="/a/b"}  local: the group alone
 * so sum(prefix_n_local) is the root's prefix_n and sum() over one family
 * never counts an event twice. Counters get _total in the output. The
 * flat-keyed TALLY_EXPORT_STAT text has the root's hierarchical values.
 *
 * Paths: the root is "/", its child named a is "/a", a's child b "/a/b".
 * Names come from name_fn(group, name_arg), called while rendering for
 * every group but the root, or, with name_fn NULL, from the groups' own
 * names (tally_group_set_name()): a NULL name leaves the group and its subtree
 * out of the rows (their counts still appear in the ancestors'
 * hierarchical values). A name must be non-empty valid UTF-8 without '/';
 * a bad name, or two siblings with the same name, fails the render with
 * -EINVAL and tally_export_error() names the path.
 *
 * Values are as of a flush: with TALLY_EXPORT_TREE_FLUSH every render
 * first forces a flush of the root (tally_group_flush_force), so the rows
 * are the exact sums of every update completed before the render. Without
 * it, rows show the last flush (a periodic flusher's). Counters are widened
 * per (group, item) as in export.h; the state of a group follows its
 * pointer and path, and is dropped once the group is no longer rendered.
 *
 * The rendering thread walks children (tally_group_for_each_child), so it
 * must be registered with the tree's RCU flavor (urcu_memb_register_thread()
 * for the default), as rstat.h requires of walkers. Groups may be created
 * and destroyed meanwhile: a render sees each such group or not.
 */
#ifndef TALLY_EXPORT_RSTAT_H
#define TALLY_EXPORT_RSTAT_H

#include <tally/export.h>
#include <tally/rstat.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Force a flush of the root before each render (exact values). */
#define TALLY_EXPORT_TREE_FLUSH 1u

/** Names a group for tally_export_add_tree():
 * `const char *fn(const struct tally_group *g, void *arg)` returns g's path
 * component (non-empty UTF-8 without '/'), or NULL to leave g and its
 * subtree out of the rows. Called with the name_arg given at registration,
 * for every group but the root, by the rendering thread during a render;
 * the string must stay valid until that render returns. */
typedef const char *(*tally_export_group_name_fn)(const struct tally_group *g, void *arg);

/* Private: one row's identity, and the tree source's render state. */
struct tally__export_row_key {
	const struct tally_group *g;
	uint64_t h; /* hash of its path */
};

struct tally__export_tree {
	struct tally_tree *tree;
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
	/* the previous render's rows, indexed by key */
	struct tally__export_row_key *prev_keys;
	struct tally__export_series *prev_series;
	size_t prev_nr, prev_cap_rows;
	uint32_t *prev_index; /* slots: row + 1, 0 empty */
	size_t prev_cap_index;
};

static inline uint64_t tally__export_hash(const char *s, size_t n, uint64_t h)
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
	uint64_t h = k->h ^ ((uint64_t)(uintptr_t)k->g * 0x9e3779b97f4a7c15ull);
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
	free(x->prev_keys);
	free(x->prev_series);
	free(x->prev_index);
	free(x);
	s->priv = NULL;
}

struct tally__export_walk {
	struct tally_export *e;
	struct tally__export_source *s;
	struct tally__export_tree *x;
	size_t parent; /* row of the parent */
	int err;
};

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
		if (!k)
			return -ENOMEM;
		x->keys = k;
		se = (struct tally__export_series *)realloc(x->series, cap * n * sizeof(*se));
		if (!se)
			return -ENOMEM;
		x->series = se;
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
	if (tally__export_tree_grow(s, x, r))
		return -ENOMEM;
	if (name) {
		plen = strlen(s->labels + s->label_at[parent]);
		if (plen == 1)
			plen = 0; /* the root's "/" */
	}
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
	x->keys[r].g = g;
	x->keys[r].h = tally__export_hash(path, plen + 1 + nlen, 0xcbf29ce484222325ull);
	if (tally__export_tree_path_add(s, x, r) == -EEXIST)
		return tally__export_fail(e, -EINVAL, "two groups have the path '%s'", path, 0);
	/* The previous render's state of this (group, path). */
	if (x->prev_cap_index) {
		size_t mask = x->prev_cap_index - 1, j;
		for (j = (size_t)(tally__export_row_key_hash(&x->keys[r]) & mask); x->prev_index[j];
		     j = (j + 1) & mask) {
			size_t o = x->prev_index[j] - 1;
			if (x->prev_keys[o].g == g && x->prev_keys[o].h == x->keys[r].h) {
				old = &x->prev_series[o * 2u * s->nr_items];
				break;
			}
		}
	}
	n = s->nr_items;
	nw = &x->series[r * 2u * n];
	if (old)
		memcpy(nw, old, 2u * n * sizeof(*nw));
	else
		memset(nw, 0, 2u * n * sizeof(*nw));
	values = &s->values[r * 2u * n];
	for (i = 0; i < n; i++) {
		values[2 * i] = tally__export_value(&nw[2 * i], s->kinds[i],
						    (tally_uword)tally_group_read(g, (unsigned)i));
		values[2 * i + 1] =
			tally__export_value(&nw[2 * i + 1], s->kinds[i],
					    (tally_uword)tally_group_read_local(g, (unsigned)i));
	}
	s->nr_rows = r + 1;
	return 0;
}

static inline int tally__export_tree_visit(struct tally_group *c, void *arg)
{
	struct tally__export_walk *w = (struct tally__export_walk *)arg, sub;
	const char *name =
		w->x->name_fn ? w->x->name_fn(c, w->x->name_arg) : tally_group_name(c);
	size_t n;
	if (!name)
		return 0;
	n = strlen(name);
	if (!n || memchr(name, '/', n) || !tally__utf8_ok(name, n)) {
		const char *pp = w->s->labels + w->s->label_at[w->parent];
		w->err = tally__export_fail(
			w->e, -EINVAL,
			"a group under '%s' has an empty, non-UTF-8 or '/'-holding name", pp, 0);
		return 1;
	}
	w->err = tally__export_tree_row(w->e, w->s, w->x, c, w->parent, name);
	if (w->err)
		return 1;
	sub = *w;
	sub.parent = w->s->nr_rows - 1;
	tally_group_for_each_child(c, tally__export_tree_visit, &sub);
	w->err = sub.err;
	return w->err ? 1 : 0;
}

static inline int tally__export_collect_tree(struct tally_export *e, struct tally__export_source *s)
{
	struct tally__export_tree *x = (struct tally__export_tree *)s->priv;
	struct tally_group *root = tally_tree_root(x->tree);
	struct tally__export_walk w;
	size_t cap, r;
	int err;
	if (x->flags & TALLY_EXPORT_TREE_FLUSH)
		tally_group_flush_force(root);
	s->nr_rows = 0;
	x->labels_len = 0;
	if (x->path_set)
		memset(x->path_set, 0, x->cap_path_set * sizeof(*x->path_set));
	err = tally__export_tree_row(e, s, x, root, 0, NULL);
	if (err) {
		s->nr_rows = 0;
		return err;
	}
	w.e = e;
	w.s = s;
	w.x = x;
	w.parent = 0;
	w.err = 0;
	tally_group_for_each_child(root, tally__export_tree_visit, &w);
	if (w.err) {
		/* Keep the previous state: nothing of this render counts. */
		s->nr_rows = 0;
		return w.err;
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

/**
 * tally_export_add_tree - export every item of t's groups: for item i,
 * families prefix_\<name\> (hierarchical) and prefix_\<name\>_local (local),
 * with rows labelled group="\<path\>". \<name\> is names[i] (names NULL: the
 * tree's own, tally_tree_item_name()), else item\<i\>;
 * helps[i] and kinds[i] as in tally_export_add_vec (the local family's
 * help gets " (this group alone)" appended, the other's " (this group and
 * its descendants)"). name_fn names groups (NULL: their own names; see
 * above); flags: TALLY_EXPORT_TREE_FLUSH or 0.
 * Returns 0, -EINVAL (NULL e or t, a bad name, help, kind or
 * flag; nothing registered; see tally_export_error()) or -ENOMEM. t must
 * outlive e.
 */
static inline int tally_export_add_tree(struct tally_export *e, const char *prefix,
					struct tally_tree *t, const char *const *names,
					const char *const *helps, const unsigned char *kinds,
					tally_export_group_name_fn name_fn, void *name_arg,
					unsigned flags)
{
	struct tally__export_source s;
	struct tally__export_tree *x;
	struct tally__export_family *fams, *one;
	unsigned n, i;
	int err;
	if (tally__bad(!e))
		return -EINVAL;
	if (!t)
		return tally__export_fail(e, -EINVAL, "tree '%s' is NULL", prefix, 0);
	if (flags & ~TALLY_EXPORT_TREE_FLUSH)
		return tally__export_fail(e, -EINVAL, "tree '%s': unknown flags", prefix, 0);
	n = t->tally__nr_items;
	for (i = 0; kinds && i < n; i++)
		if (kinds[i] != TALLY_EXPORT_COUNTER && kinds[i] != TALLY_EXPORT_GAUGE)
			return tally__export_fail(e, -EINVAL,
						  "kind of item %u is neither counter nor gauge",
						  NULL, i);
	memset(&s, 0, sizeof(s));
	x = (struct tally__export_tree *)calloc(1, sizeof(*x));
	s.obj = t;
	s.nr_items = n;
	s.row_len = 2u * n;
	s.label_name = "group";
	s.collect = tally__export_collect_tree;
	s.release = tally__export_tree_release;
	s.priv = x;
	s.kinds = (unsigned char *)calloc(n, 1);
	one = (struct tally__export_family *)calloc(n, sizeof(*one));
	fams = (struct tally__export_family *)calloc(2u * n, sizeof(*fams));
	if (!x || !s.kinds || !one || !fams) {
		free(one);
		free(fams);
		tally__export_source_free(&s);
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	}
	x->tree = t;
	x->name_fn = name_fn;
	x->name_arg = name_arg;
	x->flags = flags;
	if (!names) {
		/* The tree's own item names, if it has any. */
		const char **own = (const char **)calloc(n, sizeof(*own));
		if (!own) {
			free(one);
			free(fams);
			tally__export_source_free(&s);
			return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
		}
		for (i = 0; i < n; i++)
			own[i] = tally_tree_item_name(t, i);
		tally__export_fill_families(one, n, prefix, own, helps, kinds, "tally tree item",
					    NULL);
		free((void *)own);
	} else {
		tally__export_fill_families(one, n, prefix, names, helps, kinds, "tally tree item",
					    NULL);
	}
	for (i = 0; i < n; i++) {
		s.kinds[i] = one[i].kind;
		fams[2 * i] = one[i];
		fams[2 * i].column = 2 * i;
		fams[2 * i].help = one[i].help
					   ? tally__export_join(one[i].help, NULL,
								" (this group and its descendants)")
					   : NULL;
		fams[2 * i + 1] = one[i];
		fams[2 * i + 1].name =
			one[i].name ? tally__export_join(one[i].name, NULL, "_local") : NULL;
		fams[2 * i + 1].help =
			one[i].help ? tally__export_join(one[i].help, NULL, " (this group alone)")
				    : NULL;
		fams[2 * i + 1].column = 2 * i + 1;
		fams[2 * i + 1].in_stat = 0;
		free(one[i].help);
	}
	free(one);
	err = tally__export_register(e, &s, fams, 2u * n);
	free(fams);
	return err;
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_EXPORT_RSTAT_H */
