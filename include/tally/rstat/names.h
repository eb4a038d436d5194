/**
 * @file
 * tally/rstat/names.h - item names for a tree and a name for each group
 * (private; include <tally/rstat.h>), so that a group has a path ("/",
 * "/a", "/a/b") and exporters can render trees by name.
 *
 * Each name is set once and then never changes until the object is freed:
 * a setter publishes its own copy with a release CAS, readers load it with
 * acquire, so readers need no lock and never see a copy being freed (a
 * group's name is freed with the group, after its RCU grace period when it
 * was destroyed; a tree's item names with the tree).
 */
#ifndef TALLY_RSTAT_NAMES_H
#define TALLY_RSTAT_NAMES_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/names.h is private: include <tally/rstat.h>"
#endif

/** Longest group name, in bytes. */
#define TALLY_GROUP_NAME_MAX 255


/* Free a tree's item names (tally_tree_destroy()). */
static inline void tally__rstat_names_free(struct tally_tree *t)
{
	char **names = t->tally__item_names;
	unsigned i;
	if (!names)
		return;
	for (i = 0; i < t->tally__nr_user; i++)
		free(names[i]);
	free(names);
	t->tally__item_names = NULL;
}

/**
 * tally_tree_set_item_names - give t's items names: names has one entry
 * per item, each a string or NULL (unnamed). Copied: the caller's strings
 * may go away afterwards. Not validated beyond that (any bytes but NUL):
 * exporters check what they need (tally/export_rstat.h).
 * Returns 0, -EINVAL (NULL t or names), -EBUSY (t has item names already:
 * they are set once; nothing changed) or -ENOMEM.
 * Any thread, beside any call but tally_tree_destroy(); lock-free (one
 * CAS publishes the copy, release).
 */
static inline int tally_tree_set_item_names(struct tally_tree *t, const char *const *names)
{
	char **copy, **expected = NULL;
	unsigned i, n;
	if (tally__bad(!t || !names))
		return -EINVAL;
	if (__atomic_load_n(&t->tally__item_names, __ATOMIC_ACQUIRE))
		return -EBUSY;
	n = t->tally__nr_user;
	copy = (char **)calloc(n, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		size_t len;
		if (!names[i])
			continue;
		len = strlen(names[i]) + 1;
		copy[i] = (char *)malloc(len);
		if (!copy[i]) {
			while (i--)
				free(copy[i]);
			free(copy);
			return -ENOMEM;
		}
		memcpy(copy[i], names[i], len);
	}
	/* Release: a reader that loads the array (acquire) sees the copies. */
	if (!__atomic_compare_exchange_n(&t->tally__item_names, &expected, copy, false,
					 __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
		for (i = 0; i < n; i++)
			free(copy[i]);
		free(copy);
		return -EBUSY;
	}
	return 0;
}

/**
 * tally_tree_item_name - item's name (t's own copy, valid until
 * tally_tree_destroy()), or NULL: no names set, the item unnamed or out
 * of range, NULL t. Wait-free; any thread.
 */
static inline const char *tally_tree_item_name(const struct tally_tree *t, unsigned item)
{
	char **names;
	if (tally__bad(!t) || item >= t->tally__nr_user)
		return NULL;
	/* Acquire: pairs with the release CAS in tally_tree_set_item_names(). */
	names = __atomic_load_n(&t->tally__item_names, __ATOMIC_ACQUIRE);
	return names ? names[item] : NULL;
}

/* A group name's rules: 1..TALLY_GROUP_NAME_MAX bytes of valid UTF-8,
 * without '/'. Its length in *len. */
static inline int tally__rstat_name_ok(const char *name, size_t *len)
{
	*len = strlen(name);
	return *len && *len <= TALLY_GROUP_NAME_MAX && !memchr(name, '/', *len) &&
	       tally__utf8_ok(name, *len);
}

/**
 * tally_group_set_name - name g (not the root: its path is "/"). The name
 * is one path component: 1..TALLY_GROUP_NAME_MAX bytes of valid UTF-8,
 * without '/'. Copied. Siblings with one name are not refused here (an
 * exporter refuses to render two groups with one path).
 * Returns 0, -EINVAL (NULL g or name, the root, a destroyed g, a bad
 * name), -EBUSY (g has a name already: names are set once; nothing
 * changed) or -ENOMEM.
 * Any thread, beside any call but destroy of g and tally_tree_destroy();
 * lock-free (one CAS publishes the copy, release). On a group another
 * thread may destroy, call it inside tally_tree_read_lock().
 */
static inline int tally_group_set_name(struct tally_group *g, const char *name)
{
	char *copy, *expected = NULL;
	size_t len;
	if (tally__bad(!g || !name || !g->tally__links.parent))
		return -EINVAL;
	if (tally__load(&g->tally__dead))
		return tally__rcu_dead(g, "tally_group_set_name");
	if (!tally__rstat_name_ok(name, &len))
		return -EINVAL;
	if (__atomic_load_n(&g->tally__name.p, __ATOMIC_ACQUIRE))
		return -EBUSY;
	copy = (char *)malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, name, len + 1);
	/* Release: a reader that loads the pointer (acquire) sees the copy. */
	if (!__atomic_compare_exchange_n(&g->tally__name.p, &expected, copy, false,
					 __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
		free(copy);
		return -EBUSY;
	}
	return 0;
}

/**
 * tally_group_name - g's name (g's own copy, valid while g is), or NULL:
 * unnamed, the root, NULL g. Wait-free; any thread (on a group another
 * thread may destroy: inside tally_tree_read_lock()).
 */
static inline const char *tally_group_name(const struct tally_group *g)
{
	if (tally__bad(!g))
		return NULL;
	/* Acquire: pairs with the release CAS in tally_group_set_name(). */
	return __atomic_load_n(&g->tally__name.p, __ATOMIC_ACQUIRE);
}

#endif /* TALLY_RSTAT_NAMES_H */
