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
 *
 * The machinery (the render state, the walk, the families' set-up) is in
 * tally/export/tree.h, which refuses to be included on its own.
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

#define TALLY__EXPORT_INSIDE 1
#include <tally/export/tree.h>
#undef TALLY__EXPORT_INSIDE

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
	return tally__export_tree_add(e, t, o);
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_EXPORT_RSTAT_H */
