/*
 * fuzz_tree.h - tally_tree / tally_group in fuzz_model: up to 16 groups
 * with local, inherited and since-reset values, names, subtree destroys
 * and read-side sections, checked after forced flushes; op_tree(), one
 * step.
 *
 * A part of fuzz_model.c, which includes every part into one translation
 * unit (every primitive's objects share that unit's per-CPU arenas, which
 * the corpus's coverage depends on); not a header of its own.
 */
#ifndef TALLY_FUZZ_MODEL
#  error "tests/fuzz/fuzz_tree.h is a part of tests/fuzz/fuzz_model.c"
#endif

/* ---- tally_tree / tally_group ------------------------------------------------ */
#define NR_GROUPS 16
#define TREE_ITEMS 4
static struct {
	struct tally_tree *t;
	unsigned nr;
	uint64_t now, period;
	int locked; /* read-side sections held */
	unsigned char flags[TREE_ITEMS]; /* item flags (TALLY_GROUP_ITEM_GAUGE) */
} tr;

static struct grp {
	struct tally_group *g;
	int parent; /* index, -1 for the root */
	int live;
	tally_uword local[TREE_ITEMS];     /* mods on this group */
	tally_uword inherited[TREE_ITEMS]; /* handed over by destroyed children */
	tally_uword base_h[TREE_ITEMS];    /* hierarchical value at the last reset */
	tally_uword base_l[TREE_ITEMS];    /* local value at the last reset */
	int name; /* 0..3 for a name "n0".."n3" given at creation; -1: none */
} grp[NR_GROUPS];

static const char *const group_names[4] = {"n0", "n1", "n2", "n3"};

static uint64_t fuzz_clock(void *arg)
{
	EXPECT(arg == &tr, "the clock gets its arg");
	return tr.now;
}

static tally_uword hier(int i, unsigned item)
{
	tally_uword v = UW(grp[i].local[item] + grp[i].inherited[item]);
	for (int j = 0; j < NR_GROUPS; j++)
		if (grp[j].live && grp[j].parent == i)
			v = UW(v + hier(j, item));
	return v;
}

static int in_subtree(int j, int i)
{
	for (; j >= 0; j = grp[j].parent)
		if (j == i)
			return 1;
	return 0;
}

static int nr_children(int i)
{
	int n = 0;
	for (int j = 0; j < NR_GROUPS; j++)
		n += grp[j].live && grp[j].parent == i;
	return n;
}

static int count_child(struct tally_group *child, void *arg)
{
	int *n = (int *)arg;
	int found = 0;
	for (int j = 0; j < NR_GROUPS; j++)
		found |= grp[j].live && grp[j].g == child;
	EXPECT(found, "for_each_child gave a group that is not live");
	(*n)++;
	return 0;
}

static int never_called(struct tally_group *child, void *arg)
{
	(void)child;
	(void)arg;
	fail("for_each_child called fn on a destroyed group");
}

/* After a flush that covered group i: every value is exact. */
static void group_check_exact(int i)
{
	struct tally_group *g = grp[i].g;
	for (unsigned it = 0; it < tr.nr; it++) {
		tally_uword raw = hier(i, it), h = UW(raw - grp[i].base_h[it]);
		tally_uword l = UW(grp[i].local[it] - grp[i].base_l[it]);
		EXPECT(tally_group_read(g, it) == sgn(h), "group %d item %u: %lld, model %lld", i, it,
		       LL(tally_group_read(g, it)), LL(sgn(h)));
		EXPECT(tally_group_read_positive(g, it) == clamp0(h), "group %d item %u", i, it);
		EXPECT(tally_group_read_monotonic(g, it) == UW(raw + TALLY_MONOTONIC_BIAS),
		       "group %d item %u", i, it);
		EXPECT(tally_group_read_local(g, it) == sgn(l),
		       "group %d item %u: local %lld, model %lld", i, it,
		       LL(tally_group_read_local(g, it)), LL(sgn(l)));
	}
}

static void group_check_bad_items(int i)
{
	struct tally_group *g = grp[i].g;
	for (unsigned it = tr.nr; it < tr.nr + 2u; it++)
		EXPECT(tally_group_read(g, it) == 0 && tally_group_read_positive(g, it) == 0 &&
			       tally_group_read_monotonic(g, it) == 0 &&
			       tally_group_read_local(g, it) == 0,
		       "group %d: bad item %u reads non-zero", i, it);
	EXPECT(tally_group_read(g, 0u - 1u) == 0, "group %d", i);
}

static void tree_destroy_all(void)
{
	while (tr.locked) {
		tally_tree_read_unlock(tr.t);
		tr.locked--;
	}
	if (tr.t)
		tally_tree_destroy(tr.t);
	memset(&tr, 0, sizeof(tr));
	memset(grp, 0, sizeof(grp));
}

/* A live group, by index from the input; -1 if none. */
static int pick_group(struct input *in)
{
	uint8_t k = u8(in);
	for (int n = 0; n < NR_GROUPS; n++) {
		int j = (k + n) % NR_GROUPS;
		if (grp[j].live)
			return j;
	}
	return -1;
}

static void op_tree_create(struct input *in)
{
	struct tally_tree_opts o;
	uint8_t a = u8(in), b = u8(in), c = u8(in);
	static const unsigned batches[] = {0, 1, 2, 64, TALLY_RSTAT_BATCH_MAX};
	static const uint64_t periods[] = {0, 1, 1000, 2000000000ull, TALLY_RSTAT_PERIOD_MAX};
	op_name = "tree_create";
	memset(&o, 0, sizeof(o));
	o.nr_items = 1u + a % TREE_ITEMS;
	o.batch = batches[b % 5];
	o.period_ns = periods[c % 5];
	o.clock = fuzz_clock;
	o.clock_arg = &tr;
	uint8_t f = u8(in);
	unsigned char flags[TREE_ITEMS];
	for (unsigned it = 0; it < TREE_ITEMS; it++)
		flags[it] = (f >> it) & 1 ? TALLY_GROUP_ITEM_GAUGE : 0;
	if (f & 0x80)
		o.item_flags = flags;
	if (f == 0x7f) { /* an unknown flag */
		flags[0] = 0x2;
		o.item_flags = flags;
		errno = 0;
		EXPECT(tally_tree_create_opts(&o) == NULL && errno == EINVAL, "item flag 0x2");
		return;
	}
	if (a >= 240 || b >= 240 || c >= 240) { /* each bad field alone */
		if (a >= 240)
			o.nr_items = (a & 1) ? 0u : TALLY_RSTAT_ITEMS_MAX + 1u;
		else if (b >= 240)
			o.batch = TALLY_RSTAT_BATCH_MAX + 1u + (b & 3);
		else
			o.period_ns = TALLY_RSTAT_PERIOD_MAX + 1u + (c & 3);
		errno = 0;
		EXPECT(tally_tree_create_opts(&o) == NULL && errno == EINVAL, "nr %u batch %u period %llu",
		       o.nr_items, o.batch, ULL(o.period_ns));
		return;
	}
	tree_destroy_all();
	tr.t = tally_tree_create_opts(&o);
	EXPECT(tr.t != NULL, "nr %u batch %u period %llu: errno %d", o.nr_items, o.batch,
	       ULL(o.period_ns), errno);
	tr.nr = o.nr_items;
	tr.period = o.period_ns ? o.period_ns : TALLY_RSTAT_PERIOD_NS;
	for (unsigned it = 0; it < TREE_ITEMS; it++)
		tr.flags[it] = o.item_flags ? flags[it] : 0;
	for (int j = 0; j < NR_GROUPS; j++)
		grp[j].name = -1;
	grp[0].g = tally_tree_root(tr.t);
	grp[0].parent = -1;
	grp[0].live = 1;
	EXPECT(grp[0].g != NULL, "");
	EXPECT(tally_tree_period_ns(tr.t) == tr.period, "");
	EXPECT(tally_tree_flush_threshold(tr.t) > 0 && tally_tree_group_bytes(tr.t) > 0, "");
	EXPECT(tally_tree_nr_groups(tr.t) == 1, "");
	group_check_exact(0);
}

/* Destroy group i, checking every call on it in the read-side section
 * that holds it. */
static void op_group_destroy(int i, int in_section)
{
	struct tally_group *g = grp[i].g, *parent = tally_group_parent(g);
	tally_uword want[TREE_ITEMS], local[TREE_ITEMS];
	int rc, n = 0;
	op_name = "group_destroy";
	if (i == 0) {
		EXPECT(tally_group_destroy(g) == -EINVAL, "the root");
		return;
	}
	if (nr_children(i)) {
		EXPECT(tally_group_destroy(g) == -EBUSY, "group %d has children", i);
		return;
	}
	for (unsigned it = 0; it < tr.nr; it++) {
		want[it] = UW(hier(i, it) - grp[i].base_h[it]);
		local[it] = UW(grp[i].local[it] - grp[i].base_l[it]);
	}
	if (in_section)
		tally_tree_read_lock(tr.t);
	rc = tally_group_destroy(g);
	EXPECT(rc == 0, "group %d: rc %d", i, rc);
	grp[i].live = 0;
	for (unsigned it = 0; it < tr.nr; it++)
		grp[grp[i].parent].inherited[it] =
			UW(grp[grp[i].parent].inherited[it] + grp[i].local[it] + grp[i].inherited[it]);
	if (!in_section)
		goto done;
	/* Inside the section: an update counts, for the nearest live
	 * ancestor (the parent); every other change fails cleanly. */
	op_name = "destroyed_group_calls";
	EXPECT(tally_group_mod(g, 0, 5) == 0, "mod on a destroyed group");
	grp[grp[i].parent].inherited[0] = UW(grp[grp[i].parent].inherited[0] + 5);
	EXPECT(tally_group_destroy(g) == -EINVAL, "destroy twice");
	errno = 0;
	EXPECT(tally_group_create(g) == NULL && errno == EINVAL, "create under a destroyed group");
	errno = 0;
	tally_group_flush_force(g);
	EXPECT(errno == EINVAL, "flush_force of a destroyed group: errno %d", errno);
	errno = 0;
	tally_group_flush(g);
	EXPECT(errno == EINVAL, "flush of a destroyed group: errno %d", errno);
	EXPECT(!tally_group_needs_flush(g), "");
	EXPECT(tally_group_parent(g) == parent && tally_group_tree(g) == tr.t, "");
	EXPECT(tally_group_for_each_child(g, never_called, &n) == 0, "");
	/* Reads: the values as of the destroy, which flushed the group for
	 * the hand-over: its exact values then. */
	for (unsigned it = 0; it < tr.nr; it++) {
		EXPECT(tally_group_read(g, it) == sgn(want[it]), "destroyed group %d item %u: %lld, "
		       "model %lld", i, it, LL(tally_group_read(g, it)), LL(sgn(want[it])));
		EXPECT(tally_group_read_local(g, it) == sgn(local[it]), "destroyed group %d item %u",
		       i, it);
	}
	tally_tree_read_unlock(tr.t);
done:
	grp[i].g = NULL;
	memset(grp[i].local, 0, sizeof(grp[i].local));
	memset(grp[i].inherited, 0, sizeof(grp[i].inherited));
	memset(grp[i].base_h, 0, sizeof(grp[i].base_h));
	memset(grp[i].base_l, 0, sizeof(grp[i].base_l));
	grp[i].parent = -1;
	grp[i].name = -1;
}

/* Destroy the subtree at group i in one call; the model hands every
 * group's counts to i's parent. */
static void op_group_destroy_subtree(int i, int in_section)
{
	struct tally_group *g = grp[i].g;
	int p = grp[i].parent, rc, live = 0, gone = 0;
	op_name = "group_destroy_subtree";
	if (i == 0) {
		EXPECT(tally_group_destroy_subtree(g) == -EINVAL, "the root");
		return;
	}
	if (in_section)
		tally_tree_read_lock(tr.t);
	rc = tally_group_destroy_subtree(g);
	EXPECT(rc == 0, "group %d: rc %d", i, rc);
	for (int j = 0; j < NR_GROUPS; j++) {
		live += grp[j].live;
		if (!grp[j].live || !in_subtree(j, i))
			continue;
		for (unsigned it = 0; it < tr.nr; it++)
			grp[p].inherited[it] =
				UW(grp[p].inherited[it] + grp[j].local[it] + grp[j].inherited[it]);
		gone++;
	}
	for (int j = 0; j < NR_GROUPS; j++)
		if (grp[j].live && in_subtree(j, i))
			grp[j].live = 0;
	EXPECT(tally_tree_nr_groups(tr.t) == (unsigned long)(live - gone), "%lu groups, model %d",
	       tally_tree_nr_groups(tr.t), live - gone);
	if (in_section) {
		EXPECT(tally_group_destroy_subtree(g) == -EINVAL, "destroyed twice");
		EXPECT(tally_group_reset(g) == -EINVAL, "reset of a destroyed group");
		EXPECT(tally_group_mod(g, 0, 1) == 0, "mod of a destroyed group");
		grp[p].inherited[0] = UW(grp[p].inherited[0] + 1); /* the nearest live ancestor */
		tally_tree_read_unlock(tr.t);
	}
	for (int j = 0; j < NR_GROUPS; j++)
		if (!grp[j].live && grp[j].g) {
			grp[j].g = NULL;
			memset(grp[j].local, 0, sizeof(grp[j].local));
			memset(grp[j].inherited, 0, sizeof(grp[j].inherited));
			memset(grp[j].base_h, 0, sizeof(grp[j].base_h));
			memset(grp[j].base_l, 0, sizeof(grp[j].base_l));
			grp[j].parent = -1;
			grp[j].name = -1;
		}
}

/* Reset the subtree at group i (the tree, for the root through
 * tally_tree_reset): its since-reset values start from 0 but gauges'. */
static void op_group_reset(int i, int whole_tree)
{
	op_name = whole_tree ? "tree_reset" : "group_reset";
	if (whole_tree)
		i = 0;
	EXPECT((whole_tree ? tally_tree_reset(tr.t) : tally_group_reset(grp[i].g)) == 0, "");
	for (int j = 0; j < NR_GROUPS; j++) {
		if (!grp[j].live || !in_subtree(j, i))
			continue;
		for (unsigned it = 0; it < tr.nr; it++) {
			if (tr.flags[it] & TALLY_GROUP_ITEM_GAUGE)
				continue;
			grp[j].base_h[it] = hier(j, it);
			grp[j].base_l[it] = grp[j].local[it];
		}
	}
	/* The reset flushed its subtree: exact there. */
	for (int j = 0; j < NR_GROUPS; j++)
		if (grp[j].live && in_subtree(j, i))
			group_check_exact(j);
}

/* The live child of p named name k, or -1 (the model's find). */
static int model_find(int p, int k)
{
	for (int j = 0; j < NR_GROUPS; j++)
		if (grp[j].live && grp[j].parent == p && grp[j].name == k)
			return j;
	return -1;
}

static void op_tree(struct input *in)
{
	uint8_t k = u8(in);
	int i;
	if (k % 16 == 0 || (!tr.t && k % 16 != 15)) {
		op_tree_create(in);
		return;
	}
	switch (k % 16) {
	case 1: /* destroy the tree (rarely) */
		op_name = "tree_destroy";
		if (u8(in) % 4 == 0)
			tree_destroy_all();
		break;
	case 2:
	case 3: { /* create a group */
		int p = pick_group(in), slot = -1;
		op_name = "group_create";
		for (int j = 1; j < NR_GROUPS && slot < 0; j++)
			if (!grp[j].live && !grp[j].g)
				slot = j;
		if (p < 0 || slot < 0)
			break;
		if (k % 16 == 3) { /* with a name: one per parent */
			int name = u8(in) % 4, other = model_find(p, name);
			op_name = "group_create_named";
			errno = 0;
			grp[slot].g = tally_group_create_named(grp[p].g, group_names[name]);
			if (other >= 0) {
				EXPECT(grp[slot].g == NULL && errno == EEXIST, "name n%d taken: errno %d",
				       name, errno);
				break;
			}
			EXPECT(grp[slot].g != NULL, "errno %d", errno);
			EXPECT(!strcmp(tally_group_name(grp[slot].g), group_names[name]), "");
			grp[slot].name = name;
		} else {
			grp[slot].g = tally_group_create(grp[p].g);
			grp[slot].name = -1;
		}
		EXPECT(grp[slot].g != NULL, "errno %d", errno);
		grp[slot].parent = p;
		grp[slot].live = 1;
		EXPECT(tally_group_parent(grp[slot].g) == grp[p].g, "");
		EXPECT(tally_group_tree(grp[slot].g) == tr.t, "");
		break;
	}
	case 4: {
		uint8_t h;
		i = pick_group(in);
		h = u8(in);
		if (i < 0)
			break;
		if (h & 2)
			op_group_destroy_subtree(i, h % 2);
		else
			op_group_destroy(i, h % 2);
		break;
	}
	case 5:
	case 6:
	case 7: { /* mod, repeated; bad items refused */
		unsigned it, reps;
		tally_sword d;
		i = pick_group(in);
		it = pick_item(in, tr.nr);
		d = pick_sword(in);
		reps = 1u + u8(in) % 8;
		op_name = "group_mod";
		if (i < 0)
			break;
		for (unsigned r = 0; r < reps; r++) {
			int rc = tally_group_mod(grp[i].g, it, d);
			if (it >= tr.nr) {
				EXPECT(rc == -EINVAL, "item %u: rc %d", it, rc);
			} else {
				EXPECT(rc == 0, "group %d item %u: rc %d", i, it, rc);
				grp[i].local[it] = UW(grp[i].local[it] + UW(d));
			}
		}
		break;
	}
	case 8: /* a forced flush: its subtree is exact */
		i = pick_group(in);
		op_name = "group_flush_force";
		if (i < 0)
			break;
		tally_group_flush_force(grp[i].g);
		for (int j = 0; j < NR_GROUPS; j++)
			if (grp[j].live && in_subtree(j, i))
				group_check_exact(j);
		break;
	case 9: { /* flushes that may or may not run; the clock moves */
		uint8_t h = u8(in);
		i = pick_group(in);
		op_name = "group_flush";
		tr.now += (h & 0xf0) ? (uint64_t)(h >> 4) * (tr.period / 4u + 1u) : 0;
		if (i < 0)
			break;
		(void)tally_group_needs_flush(grp[i].g);
		if (h & 1)
			tally_group_flush(grp[i].g);
		else
			tally_group_flush_ratelimited(grp[i].g);
		break;
	}
	case 10: /* the periodic flush: the root, all exact */
		op_name = "tree_flush_periodic";
		tally_tree_flush_periodic(tr.t);
		for (int j = 0; j < NR_GROUPS; j++)
			if (grp[j].live)
				group_check_exact(j);
		break;
	case 11: { /* structure */
		int n = 0, live = 0;
		i = pick_group(in);
		op_name = "group_structure";
		if (i < 0)
			break;
		EXPECT(tally_group_for_each_child(grp[i].g, count_child, &n) == 0, "");
		EXPECT(n == nr_children(i), "group %d: %d children, model %d", i, n, nr_children(i));
		EXPECT(tally_group_parent(grp[i].g) == (i ? grp[grp[i].parent].g : NULL), "");
		EXPECT(tally_group_tree(grp[i].g) == tr.t, "");
		EXPECT(tally_group_for_each_child(grp[i].g, NULL, NULL) == -EINVAL, "");
		for (int j = 0; j < NR_GROUPS; j++)
			live += grp[j].live;
		EXPECT(tally_tree_nr_groups(tr.t) == (unsigned long)live, "%lu groups, model %d",
		       tally_tree_nr_groups(tr.t), live);
		group_check_bad_items(i);
		break;
	}
	case 12: { /* the flusher thread: start, refuse a second, stop */
		uint8_t h = u8(in);
		op_name = "tree_flusher";
		if (h % 4 == 0) {
			EXPECT(tally_tree_start_flusher(tr.t, TALLY_RSTAT_PERIOD_MAX + 1u) == -EINVAL, "");
			break;
		}
		EXPECT(tally_tree_start_flusher(tr.t, 3600000000000ull) == 0, "");
		EXPECT(tally_tree_start_flusher(tr.t, 3600000000000ull) == -EBUSY, "");
		tally_tree_stop_flusher(tr.t);
		tally_tree_stop_flusher(tr.t);
		break;
	}
	case 14: { /* reset, or find by name */
		uint8_t h = u8(in);
		i = pick_group(in);
		if (i < 0)
			break;
		if (h % 4 < 2) {
			op_group_reset(i, h % 4 == 1);
			break;
		}
		int name = (h >> 2) % 5, want = name < 4 ? model_find(i, name) : -1;
		struct tally_group *got;
		op_name = "group_find_child";
		errno = 0;
		got = tally_group_find_child(grp[i].g, name < 4 ? group_names[name] : "nope");
		EXPECT(got == (want >= 0 ? grp[want].g : NULL), "group %d name %d: model %d", i, name,
		       want);
		EXPECT(got || errno == ENOENT, "errno %d", errno);
		break;
	}
	case 13: /* nested read-side sections */
		op_name = "tree_read_lock";
		if (u8(in) % 2 && tr.locked < 3) {
			tally_tree_read_lock(tr.t);
			tr.locked++;
		} else if (tr.locked) {
			tally_tree_read_unlock(tr.t);
			tr.locked--;
		}
		break;
	default: { /* NULL */
		uint8_t s = u8(in);
		struct tally_group *root = tr.t ? grp[0].g : NULL;
		errno = 0;
		switch (s % 30) {
		case 22: op_name = "group_reset(NULL)";
			EXPECT(tally_group_reset(NULL) == -EINVAL && tally_tree_reset(NULL) == -EINVAL, "");
			break;
		case 23: op_name = "group_create_named(NULL)";
			EXPECT(tally_group_create_named(NULL, "a") == NULL && errno == EINVAL, "");
			if (root) {
				errno = 0;
				EXPECT(tally_group_create_named(root, NULL) == NULL && errno == EINVAL, "");
			}
			break;
		case 24: op_name = "group_create_named(bad name)";
			if (root) {
				static const char *const bad[] = {"", "a/b", "\xc3", "/"};
				const char *name = bad[s & 3];
				EXPECT(tally_group_create_named(root, name) == NULL && errno == EINVAL,
				       "name %d", s & 3);
			}
			break;
		case 25: op_name = "group_find_child(NULL)";
			EXPECT(tally_group_find_child(NULL, "a") == NULL && errno == EINVAL, "");
			if (root) {
				errno = 0;
				EXPECT(tally_group_find_child(root, NULL) == NULL && errno == EINVAL, "");
			}
			break;
		case 26: op_name = "group_destroy_subtree(NULL)";
			EXPECT(tally_group_destroy_subtree(NULL) == -EINVAL, "");
			break;
		case 27: op_name = "tree_register_thread(NULL)";
			EXPECT(tally_tree_register_thread(NULL) == -EINVAL, "");
			tally_tree_unregister_thread(NULL);
			break;
		case 0: op_name = "tree_create_opts(NULL)";
			EXPECT(tally_tree_create_opts(NULL) == NULL && errno == EINVAL, "");
			break;
		case 1: op_name = "tree_create(0)";
			EXPECT(tally_tree_create(0) == NULL && errno == EINVAL, "");
			break;
		case 2: op_name = "tree_root(NULL)"; EXPECT(tally_tree_root(NULL) == NULL, ""); break;
		case 3: op_name = "tree_flush_threshold(NULL)";
			EXPECT(tally_tree_flush_threshold(NULL) == 0 && tally_tree_period_ns(NULL) == 0, "");
			break;
		case 4: op_name = "tree_group_bytes(NULL)";
			EXPECT(tally_tree_group_bytes(NULL) == 0 && tally_tree_nr_groups(NULL) == 0, "");
			break;
		case 5: op_name = "tree_read_lock(NULL)"; tally_tree_read_lock(NULL); break;
		case 6: op_name = "tree_read_unlock(NULL)"; tally_tree_read_unlock(NULL); break;
		case 7: op_name = "group_create(NULL)";
			EXPECT(tally_group_create(NULL) == NULL && errno == EINVAL, "");
			break;
		case 8: op_name = "group_destroy(NULL)"; EXPECT(tally_group_destroy(NULL) == -EINVAL, ""); break;
		case 9: op_name = "group_parent(NULL)";
			EXPECT(tally_group_parent(NULL) == NULL && tally_group_tree(NULL) == NULL, "");
			break;
		case 10: op_name = "group_for_each_child(NULL)";
			EXPECT(tally_group_for_each_child(NULL, count_child, NULL) == -EINVAL, "");
			if (root)
				EXPECT(tally_group_for_each_child(root, NULL, NULL) == -EINVAL, "");
			break;
		case 11: op_name = "group_mod(NULL)"; EXPECT(tally_group_mod(NULL, 0, 1) == -EINVAL, ""); break;
		case 12: op_name = "group_needs_flush(NULL)"; EXPECT(!tally_group_needs_flush(NULL), ""); break;
		case 13: op_name = "group_flush(NULL)";
			tally_group_flush(NULL);
			EXPECT(errno == EINVAL, "");
			break;
		case 14: op_name = "group_flush_force(NULL)";
			tally_group_flush_force(NULL);
			EXPECT(errno == EINVAL, "");
			break;
		case 15: op_name = "group_flush_ratelimited(NULL)";
			tally_group_flush_ratelimited(NULL);
			EXPECT(errno == EINVAL, "");
			break;
		case 16: op_name = "tree_flush_periodic(NULL)";
			tally_tree_flush_periodic(NULL);
			EXPECT(errno == EINVAL, "");
			break;
		case 17: op_name = "group_read(NULL)";
			EXPECT(tally_group_read(NULL, 0) == 0 && tally_group_read_positive(NULL, 0) == 0 &&
				       tally_group_read_monotonic(NULL, 0) == 0 &&
				       tally_group_read_local(NULL, 0) == 0, "");
			break;
		case 18: op_name = "tree_start_flusher(NULL)";
			EXPECT(tally_tree_start_flusher(NULL, 0) == -EINVAL, "");
			break;
		case 19: op_name = "tree_stop_flusher(NULL)"; tally_tree_stop_flusher(NULL); break;
		case 20: op_name = "tree_destroy(NULL)"; tally_tree_destroy(NULL); break;
		default: op_name = "tree_create(huge)";
			EXPECT(tally_tree_create(TALLY_RSTAT_ITEMS_MAX + 1u) == NULL && errno == EINVAL, "");
			break;
		}
	}
	}
}
