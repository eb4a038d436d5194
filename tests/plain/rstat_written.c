/*
 * rstat_written.c - a group's flushes, destroy and free visit only the CPU
 * slots its chunk was written on (issue 30; the groups' side of
 * vec_written.c). Before, a destroy read every slot's words (its retire
 * and the deferred free's late hand-over) and the free zeroed every
 * slot's chunk: with 256 slots on a 2-CPU host, 4,000 destroys took 0.19 s
 * against 0.005 s at 2 slots, each never-written region's page read
 * through the kernel's zero page.
 *
 * Deterministic, no timing: the program pins itself to one CPU (slot u),
 * makes a tree (counters, a gauge, a histogram) of N tenants with a child
 * each, updates and records into the children (so the threshold counts
 * and the flushes' links write the parents' chunks on u too), flushes
 * (forced and thresholded), resets, then destroys them every way there
 * is (destroy_subtree; child then parent; a group held by a reference,
 * updated after its destroy and put after its grace period), waits for
 * the deferred frees and checks the root's totals exact. mincore() must
 * find no page mapped in any group's chunk on slots u + 1 .. nr - 1 (the
 * pages of the tree's dirty records excepted: every drain reads those on
 * every slot, a cost per flush, not per group) after the updates and
 * flushes, and after the destroys, whose retires read the words: another
 * thread holds a read-side section meanwhile, so no deferred free has run
 * (a free may give the pages back, which would hide a read). Built with
 * TALLY_CPU_SLOTS=256, on the rseq and the atomic path
 * (tests/CMakeLists.txt).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <string.h>
#include <sys/mman.h>
#include <tally/rstat.h>
#include "written.h"
#include <unistd.h>

#define N 600
enum { REQ, BYTES, INFLIGHT, NITEMS };

struct range {
	unsigned char *slot0; /* the chunk on slot 0 */
	size_t bytes;
	unsigned shift;
};

static struct range ranges[2 * N + 1];
static unsigned nranges;

static void keep_range(const struct tally_tree *t, struct tally_group *g)
{
	ranges[nranges].slot0 = (unsigned char *)tally__pcpu_at(&g->tally__pcpu, 0, 0);
	ranges[nranges].bytes = t->tally__prev_off + t->tally__nr_items * sizeof(tally_uword);
	ranges[nranges].shift = g->tally__pcpu.shift;
	nranges++;
}

/* Whether [p, p + len) meets one of the tree's dirty records on slot s. */
static int in_dirty(const struct tally_tree *t, uintptr_t p, size_t len, unsigned s)
{
	unsigned b;
	for (b = 0; b < t->tally__ids.nr_blocks; b++) {
		const struct tally__pcpu *d = &t->tally__ids.blocks[b];
		uintptr_t lo = (uintptr_t)tally__pcpu_at(d, s, 0);
		uintptr_t hi = lo + sizeof(struct tally__rstat_dirty);
		if (p < hi && lo < p + len)
			return 1;
	}
	return 0;
}

/* Pages of the kept chunks mapped on slots u + 1 .. nr - 1. */
static long chunk_pages_mapped(const struct tally_tree *t, unsigned u, unsigned nr, int thp)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	long mapped = 0;
	unsigned i, s;
	unsigned char vec[64];
	for (i = 0; i < nranges; i++)
		for (s = u + 1u; s < nr; s++) {
			uintptr_t a = (uintptr_t)ranges[i].slot0 + ((uintptr_t)s << ranges[i].shift);
			uintptr_t lo = a & ~(uintptr_t)(page - 1), hi = a + ranges[i].bytes, pg;
			size_t np = (hi - lo + page - 1) / page, k;
			if (np > sizeof(vec) || mincore((void *)lo, np * page, vec))
				return -1;
			for (k = 0, pg = lo; k < np; k++, pg += page) {
				/* with THP always, a written page maps the 2 MiB
				 * around it: the chunk's written slots and the
				 * shared one */
				uintptr_t huge = (uintptr_t)2 << 20, w0 = (uintptr_t)ranges[i].slot0;
				uintptr_t w1 = w0 + ((uintptr_t)(u + 1u) << ranges[i].shift);
				uintptr_t sh = w0 + ((uintptr_t)nr << ranges[i].shift);
				if (thp && ((pg / huge >= w0 / huge && pg / huge <= (w1 - 1) / huge) ||
					    pg / huge == sh / huge ||
					    pg / huge == (sh + ranges[i].bytes - 1) / huge))
					continue;
				if ((vec[k] & 1) && !in_dirty(t, pg, page, s))
					mapped++;
			}
		}
	return mapped;
}

static int held; /* 1: the holder is in its section; 2: leave it */

static void *hold_main(void *arg)
{
	struct tally_tree *t = (struct tally_tree *)arg;
	tally_tree_register_thread(t);
	tally_tree_read_lock(t);
	__atomic_store_n(&held, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&held, __ATOMIC_ACQUIRE) != 2)
		usleep(1000);
	tally_tree_read_unlock(t);
	tally_tree_unregister_thread(t);
	return NULL;
}

int main(void)
{
	pthread_t holder;
	static const uint64_t bounds[] = {10, 100, 1000};
	static const unsigned char flags[NITEMS] = {0, 0, TALLY_GROUP_ITEM_GAUGE};
	struct tally_hist_opts h = {0, 0, 0, bounds, 3};
	struct tally_tree_opts o;
	struct tally_tree *t;
	struct tally_group *root, *ten[N], *kid[N];
	struct tally_hist_snap snap;
	int cpus[1] = {0}, thp = thp_always();
	unsigned u, nr, i;
	long m;
	tally_uword req = 0, bytes = 0;

	CHECK(harness_allowed_cpus(cpus, 1) == 1 && harness_pin(cpus[0]) == 0, "pin");
	u = (unsigned)cpus[0];
	urcu_memb_register_thread();
	memset(&o, 0, sizeof(o));
	o.nr_items = NITEMS;
	o.item_flags = flags;
	o.hists = &h;
	o.nr_hists = 1;
	o.batch = 4; /* thresholded flushes, threshold counts on the parents */
	t = tally_tree_create_opts(&o);
	CHECK(t != NULL, "tree");
	if (!t)
		return harness_exit("rstat_written");
	root = tally_tree_root(t);
	nr = root->tally__pcpu.nr;
	CHECK(u + 1u < nr, "CPU %u is the last of %u slots: nothing above it to check", u, nr);
	keep_range(t, root);
	for (i = 0; i < N; i++) {
		ten[i] = tally_group_create(root);
		kid[i] = ten[i] ? tally_group_create(ten[i]) : NULL;
		CHECK(ten[i] && kid[i], "create %u", i);
		if (!ten[i] || !kid[i])
			return harness_exit("rstat_written");
		keep_range(t, ten[i]);
		keep_range(t, kid[i]);
	}
	for (i = 0; i < 3 * N; i++) {
		struct tally_group *g = i % 3 ? kid[i % N] : ten[i % N];
		tally_group_mod(g, INFLIGHT, 1);
		tally_group_mod(g, REQ, 1);
		tally_group_mod(g, BYTES, (tally_sword)i);
		tally_group_record(g, 0, (int64_t)(i % 2000));
		tally_group_mod(g, INFLIGHT, -1);
		req += 1;
		bytes += (tally_uword)i;
		if (i % 97 == 0)
			tally_group_flush(ten[i % N]);
	}
	tally_group_flush_force(root);
	CHECK_EQ(tally_group_read(root, REQ), (tally_sword)req);
	CHECK_EQ(tally_group_reset(ten[0]), 0);
	CHECK_EQ(tally_group_read(ten[0], REQ), 0);
	m = chunk_pages_mapped(t, u, nr, thp);
	CHECK(m == 0, "%ld pages of the groups' chunks mapped on slots above %u after the updates "
		      "and flushes",
	      m, u);
	/* Destroy every way, no grace period ending meanwhile. */
	pthread_create(&holder, NULL, hold_main, t);
	while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		usleep(100);
	for (i = 0; i < N; i++) {
		switch (i % 3) {
		case 0:
			CHECK_EQ(tally_group_destroy_subtree(ten[i]), 0);
			break;
		case 1:
			CHECK_EQ(tally_group_destroy(kid[i]), 0);
			CHECK_EQ(tally_group_destroy(ten[i]), 0);
			break;
		default:
			CHECK(tally_group_tryget(kid[i]), "tryget");
			CHECK_EQ(tally_group_destroy_subtree(ten[i]), 0);
			tally_group_mod(kid[i], REQ, 1);
			req += 1;
			break;
		}
	}
	m = chunk_pages_mapped(t, u, nr, thp);
	CHECK(m == 0, "%ld pages of the groups' chunks mapped on slots above %u after the destroys",
	      m, u);
	__atomic_store_n(&held, 2, __ATOMIC_RELEASE);
	pthread_join(holder, NULL);
	for (i = 2; i < N; i += 3)
		tally_group_put(kid[i]); /* the last reference */
	/* Every deferred free done (what tally_tree_destroy() waits for;
	 * urcu_memb_barrier() would do, but TSan cannot see its hand-off to
	 * the call_rcu thread). */
	tally__rstat_flusher_wait_deferred(t);
	tally_group_flush_force(root);
	CHECK_EQ((tally_uword)(tally_group_read_monotonic(root, REQ) - TALLY_MONOTONIC_BIAS), req);
	CHECK_EQ((tally_uword)(tally_group_read_monotonic(root, BYTES) - TALLY_MONOTONIC_BIAS),
		 bytes);
	CHECK_EQ(tally_group_read(root, INFLIGHT), 0);
	CHECK_EQ(tally_group_hist_snap_init(&snap, t, 0), 0);
	CHECK_EQ(tally_group_hist_snapshot_raw(root, 0, &snap, false), 0);
	CHECK_EQ(snap.count, 3u * N);
	tally_hist_snap_destroy(&snap);
	CHECK_EQ(tally_tree_nr_groups(t), 1);
	printf("rstat_written: slot %u of %u, %u chunks%s: no page of an unwritten slot mapped\n",
	       u, nr, nranges, thp ? " (THP always: huge pages around written ones excepted)" : "");
	tally_tree_destroy(t);
	urcu_memb_unregister_thread();
	return harness_exit("rstat_written");
}
