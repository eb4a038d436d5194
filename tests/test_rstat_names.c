/*
 * Unit tests for the rstat name calls (tally/rstat/names.h): a tree's item
 * names and a group's name, each set once (copied, -EBUSY the second
 * time), the checks on a group name (one path component of valid UTF-8),
 * the root and destroyed groups refused, and the names freed with their
 * objects (ASan's leak check in the asan build).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <tally/rstat.h> /* also tells the build to link liburcu */

static void setup(void)
{
	urcu_memb_register_thread();
}

static void teardown(void)
{
	urcu_memb_unregister_thread();
}

TestSuite(rstat_names, .init = setup, .fini = teardown);

Test(rstat_names, item_names_set_once_and_copied)
{
	struct tally_tree *t = tally_tree_create(3);
	char a[] = "pgfault", c[] = "usage";
	const char *names[] = {a, NULL, c};
	const char *other[] = {"x", "y", "z"};
	cr_assert(t);
	cr_expect_null(tally_tree_item_name(t, 0), "no names yet");
	cr_expect_eq(tally_tree_set_item_names(t, names), 0);
	a[0] = 'X'; /* the tree has its own copy */
	cr_expect_str_eq(tally_tree_item_name(t, 0), "pgfault");
	cr_expect_null(tally_tree_item_name(t, 1), "unnamed item");
	cr_expect_str_eq(tally_tree_item_name(t, 2), "usage");
	cr_expect_null(tally_tree_item_name(t, 3), "out of range");
	cr_expect_eq(tally_tree_set_item_names(t, other), -EBUSY);
	cr_expect_str_eq(tally_tree_item_name(t, 2), "usage", "unchanged by the refused call");
	cr_expect_eq(tally_tree_set_item_names(NULL, other), -EINVAL);
	cr_expect_eq(tally_tree_set_item_names(t, NULL), -EINVAL);
	cr_expect_null(tally_tree_item_name(NULL, 0));
	tally_tree_destroy(t);
}

Test(rstat_names, group_names)
{
	struct tally_tree *t = tally_tree_create(1);
	struct tally_group *root, *g, *h;
	char name[] = "svc\xc3\xa9";
	char longest[TALLY_GROUP_NAME_MAX + 2];
	cr_assert(t);
	root = tally_tree_root(t);
	g = tally_group_create(root);
	h = tally_group_create(g);
	cr_assert(g && h);
	cr_expect_null(tally_group_name(g));
	cr_expect_eq(tally_group_set_name(g, name), 0);
	name[0] = 'X';
	cr_expect_str_eq(tally_group_name(g), "svc\xc3\xa9");
	cr_expect_eq(tally_group_set_name(g, "other"), -EBUSY);
	cr_expect_str_eq(tally_group_name(g), "svc\xc3\xa9");
	/* The root's path is "/": it takes no name. */
	cr_expect_eq(tally_group_set_name(root, "root"), -EINVAL);
	cr_expect_null(tally_group_name(root));
	/* One path component of valid UTF-8, 1..TALLY_GROUP_NAME_MAX bytes. */
	cr_expect_eq(tally_group_set_name(h, ""), -EINVAL);
	cr_expect_eq(tally_group_set_name(h, "a/b"), -EINVAL);
	cr_expect_eq(tally_group_set_name(h, "bad \xff"), -EINVAL);
	cr_expect_eq(tally_group_set_name(h, "surrogate \xed\xa0\x80"), -EINVAL);
	cr_expect_eq(tally_group_set_name(h, "overlong \xc0\xaf"), -EINVAL);
	memset(longest, 'n', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	cr_expect_eq(tally_group_set_name(h, longest), -EINVAL, "256 bytes");
	longest[TALLY_GROUP_NAME_MAX] = '\0';
	cr_expect_eq(tally_group_set_name(h, longest), 0, "255 bytes");
	cr_expect_eq(strlen(tally_group_name(h)), TALLY_GROUP_NAME_MAX);
	cr_expect_eq(tally_group_set_name(NULL, "x"), -EINVAL);
	cr_expect_eq(tally_group_set_name(g, NULL), -EINVAL);
	cr_expect_null(tally_group_name(NULL));
	/* Quotes, backslashes, newlines are allowed: exporters escape them. */
	{
		struct tally_group *q = tally_group_create(root);
		cr_assert(q);
		cr_expect_eq(tally_group_set_name(q, "a \"b\"\\\n"), 0);
		/* A destroyed group takes no name; its own is freed with it. */
		cr_expect_eq(tally_group_destroy(q), 0);
	}
	/* Inside a read-side section a destroyed group stays valid memory. */
	tally_tree_read_lock(t);
	cr_expect_eq(tally_group_destroy(h), 0);
	cr_expect_eq(tally_group_set_name(h, "late"), -EINVAL, "destroyed");
	tally_tree_read_unlock(t);
	tally_tree_destroy(t);
}
