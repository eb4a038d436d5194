/*
 * vec_written.c - reads, folds, resets and frees of tally_vec visit only
 * the CPU slots that wrote them (issue 30; the vector's side of
 * arena_written.c: with 256 slots on a 2-CPU host every sum, snapshot,
 * reset, fold and destroy read every slot's region, and each
 * never-written region's page, read, maps the kernel's zero page).
 *
 * Deterministic, no timing: the program pins itself to one CPU (slot u),
 * makes many vectors of four kinds (plain; TALLY_VEC_MULTI; some items
 * TALLY_VEC_ITEM_MULTI and one TALLY_VEC_EXACT; exact-only), updates them
 * (mod, inc, dec past the thresholds, so the updates fold; multi-item
 * updates into the banks, with their in-flight counters), then reads
 * every way there is (sum, read_exact, read, read_monotonic, snapshot,
 * snapshot_since_reset, snapshot_signed), resets (whole and one item),
 * folds, checks every value, and destroys them; mincore() must find no
 * page of the regions of slots u + 1 .. nr - 1 mapped, after the reads and
 * after the frees. Then the space is reused: new vectors read 0 (the free
 * zeroed every slot it wrote), add, read and go again.
 * Built with TALLY_CPU_SLOTS=256, on the rseq and the atomic path
 * (tests/CMakeLists.txt).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <string.h>
#include <sys/mman.h>
#include <tally/vec.h>
#include "written.h"
#include <unistd.h>

#define N 1200
#define ITEMS 6

static struct tally_vec vecs[N];


static const int thr[ITEMS] = {4, 0, TALLY_VEC_EXACT, 7, 0, 3};
static const unsigned char some_multi[ITEMS] = {TALLY_VEC_ITEM_MULTI, 0, TALLY_VEC_ITEM_MULTI,
						TALLY_VEC_ITEM_MULTI | TALLY_VEC_ITEM_GAUGE, 0, 0};

/* Vector i's kind: 0 plain, 1 TALLY_VEC_MULTI, 2 some items multi (one
 * exact, one gauge), 3 exact-only. */
static int init_vec(unsigned i)
{
	struct tally_vec_opts o;
	memset(&o, 0, sizeof(o));
	o.nr_items = ITEMS;
	o.threshold = 5;
	switch (i % 4) {
	case 1:
		o.flags = TALLY_VEC_MULTI;
		break;
	case 2:
		o.thresholds = thr;
		o.item_flags = some_multi;
		break;
	case 3:
		o.threshold = 0;
		o.flags = TALLY_VEC_EXACT_ONLY;
		break;
	}
	return tally_vec_init_opts(&vecs[i], &o);
}

/* What the updates below leave in item it of vector i (raw). */
static tally_sword expect(unsigned i, unsigned it)
{
	tally_sword x = (tally_sword)((i + it) % 13) * 3 + 20; /* mods */
	x += 9;                                                 /* incs */
	if (it % 2)
		x -= 4; /* decs */
	x += 2 * ((tally_sword)it + 1); /* two multi-item updates */
	return x;
}

static void update(unsigned i)
{
	unsigned it, k;
	struct tally_vec *v = &vecs[i];
	struct tally_vec_delta d[ITEMS];
	for (it = 0; it < ITEMS; it++) {
		for (k = 0; k < 3; k++)
			CHECK_EQ(tally_vec_mod(v, it, (tally_sword)((i + it) % 13) + (k ? 0 : 20)), 0);
		for (k = 0; k < 9; k++)
			CHECK_EQ(tally_vec_inc(v, it), 0);
		for (k = 0; it % 2 && k < 4; k++)
			CHECK_EQ(tally_vec_dec(v, it), 0);
		d[it].item = it;
		d[it].delta = (tally_sword)it + 1;
	}
	for (k = 0; k < 2; k++)
		CHECK_EQ(tally_vec_mod_multi(v, d, ITEMS), 0);
}

static void read_all(unsigned i)
{
	struct tally_vec *v = &vecs[i];
	tally_uword out[ITEMS];
	tally_sword sout[ITEMS];
	unsigned it;
	for (it = 0; it < ITEMS; it++) {
		tally_sword e = expect(i, it);
		CHECK_EQ(tally_vec_sum(v, it), (tally_uword)e);
		CHECK_EQ(tally_vec_read_exact(v, it), e);
		(void)tally_vec_read(v, it);
		(void)tally_vec_read_monotonic(v, it);
	}
	CHECK_EQ(tally_vec_snapshot(v, out, ITEMS), 0);
	for (it = 0; it < ITEMS; it++)
		CHECK_EQ(out[it], (tally_uword)expect(i, it));
	CHECK_EQ(tally_vec_snapshot_since_reset(v, out, ITEMS), 0);
	for (it = 0; it < ITEMS; it++)
		CHECK_EQ(out[it], (tally_uword)expect(i, it));
	tally_vec_fold(v);
	for (it = 0; it < ITEMS; it++)
		if (tally_vec_item_threshold(v, it) >= 0)
			CHECK_EQ(tally_vec_read_monotonic(v, it),
				 (tally_uword)((tally_uword)expect(i, it) + TALLY_MONOTONIC_BIAS));
	if (i % 3 == 0) {
		CHECK_EQ(tally_vec_reset(v), 0);
		CHECK_EQ(tally_vec_snapshot_signed(v, sout, ITEMS), 0);
		for (it = 0; it < ITEMS; it++)
			CHECK_EQ(sout[it], (tally_vec_item_flags(v, it) & TALLY_VEC_ITEM_GAUGE)
						   ? expect(i, it)
						   : 0);
	} else if (i % 3 == 1) {
		CHECK_EQ(tally_vec_reset_item(v, 1), 0);
		CHECK_EQ(tally_vec_sum(v, 1), 0);
		CHECK_EQ(tally_vec_sum(v, 0), (tally_uword)expect(i, 0));
	}
}

int main(void)
{
	unsigned i, it, nr = tally_cpu_slots(), u;
	int cpus[1], thp = thp_always();
	/* One CPU: the lowest allowed, so its slot is low and most are not. */
	if (harness_allowed_cpus(cpus, 1) == 1)
		(void)harness_pin(cpus[0]);
	u = tally__cpu() % nr;
	for (i = 0; i < N; i++)
		CHECK_EQ(init_vec(i), 0);
	for (i = 0; i < N; i++)
		update(i);
	if (u != tally__cpu() % nr)
		printf("vec_written: the slot moved (%u, then %u): not pinned\n", u,
		       tally__cpu() % nr);
	if (tally__cpu() % nr > u)
		u = tally__cpu() % nr;
	for (i = 0; i < N; i++)
		read_all(i);
	check_unmapped(u, thp, "after the reads, folds and resets");
	for (i = 0; i < N; i++)
		tally_vec_destroy(&vecs[i]);
	check_unmapped(u, thp, "after the destroys");
	/* The space again: zero in every slot a vector can see. */
	for (i = 0; i < N; i++) {
		tally_uword out[ITEMS];
		struct tally_vec_delta d[2] = {{0, 1}, {2, 1}};
		CHECK_EQ(init_vec(i), 0);
		CHECK_EQ(tally_vec_snapshot(&vecs[i], out, ITEMS), 0);
		for (it = 0; it < ITEMS; it++) {
			CHECK_EQ(out[it], 0);
			CHECK_EQ(tally_vec_sum(&vecs[i], it), 0);
		}
		CHECK_EQ(tally_vec_mod_multi(&vecs[i], d, 2), 0);
		CHECK_EQ(tally_vec_inc(&vecs[i], 1), 0);
		CHECK_EQ(tally_vec_sum(&vecs[i], 0), 1);
		CHECK_EQ(tally_vec_sum(&vecs[i], 1), 1);
		CHECK_EQ(tally_vec_sum(&vecs[i], 2), 1);
		tally_vec_fold(&vecs[i]);
	}
	for (i = 0; i < N; i++)
		tally_vec_destroy(&vecs[i]);
	check_unmapped(u, thp, "after reuse");
	printf("vec_written: %u CPU slots, slot %u wrote, %d vectors of %d items%s\n", nr, u, N,
	       ITEMS, thp ? " (huge pages: their neighbourhood skipped)" : "");
	return harness_exit("vec_written");
}
