/*
 * Exported tree counters across group reuse (restarted jobs): 64 groups
 * count 1000 each and are scraped; all are destroyed and, after a grace
 * period, 64 new groups get the same names and count 5 each; and so on.
 * Every new group must export its own count (5, below the old 1000:
 * Prometheus sees a counter reset), never the old group's total, also
 * where the allocator placed it at a destroyed group's address with the
 * same path.
 *
 * The case needs reused addresses, so this program asks AddressSanitizer
 * for no quarantine (a quarantine never hands a freed block back) and
 * checks that some addresses were reused, so that it cannot pass without
 * exercising the case.
 */
#define _GNU_SOURCE
#include <tally/rstat.h>
#include <tally/export_rstat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#  define REUSE_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define REUSE_ASAN 1
#  endif
#endif
#ifdef REUSE_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=0:thread_local_quarantine_size_kb=0";
}
#endif

#define NR 64
#define ROUNDS 6

static int failures;

static void check(int ok, const char *what, unsigned long long a, unsigned long long b)
{
	if (!ok) {
		if (failures < 10)
			fprintf(stderr, "FAIL: %s: %llu, want %llu\n", what, a, b);
		failures++;
	}
}

/* The value of the sample "family{group="/gI"}" in out, or ~0. */
static unsigned long long sample(const char *out, const char *family, int i)
{
	char key[96];
	const char *p;
	snprintf(key, sizeof(key), "\n%s{group=\"/g%d\"} ", family, i);
	p = strstr(out, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : ~0ull;
}

int main(void)
{
	static const char *const items[] = {"requests"};
	struct tally_export e;
	struct tally_tree *t;
	struct tally_group *g[NR];
	const void *old[NR];
	char name[16];
	int round, i, j, reused = 0, wrong = 0;

	urcu_memb_register_thread();
	t = tally_tree_create(1);
	if (!t || tally_tree_set_item_names(t, items) || tally_export_init(&e) ||
	    tally_export_add_tree(&e, t, &(struct tally_export_tree_opts){.prefix = "job",
				  .flags = TALLY_EXPORT_TREE_FLUSH})) {
		fprintf(stderr, "setup failed: %s\n", tally_export_error(&e));
		return 1;
	}
	for (round = 0; round < ROUNDS; round++) {
		/* Each round a restart of the jobs under the same names;
		 * even rounds count 1000 per group, odd ones 5 (less than
		 * the old groups counted: an inherited state would show). */
		tally_sword n = round % 2 ? 5 : 1000;
		char *out = NULL;
		size_t len;
		struct tally_group *fresh[NR];
		int taken[NR];
		memset(taken, 0, sizeof(taken));
		for (i = 0; i < NR; i++)
			if (!(fresh[i] = tally_group_create(tally_tree_root(t))))
				return 1;
		/* The worst case, whatever order the allocator hands blocks
		 * back in: a new group at a destroyed one's address takes
		 * that one's name (so its path too). */
		for (i = 0; i < NR; i++)
			for (j = 0; round && j < NR; j++)
				if ((const void *)fresh[i] == old[j] && !taken[j]) {
					g[j] = fresh[i];
					fresh[i] = NULL;
					taken[j] = 1;
					reused++;
					break;
				}
		for (i = 0, j = 0; i < NR; i++) {
			if (!fresh[i])
				continue;
			while (taken[j])
				j++;
			g[j] = fresh[i];
			taken[j] = 1;
		}
		for (i = 0; i < NR; i++) {
			snprintf(name, sizeof(name), "g%d", i);
			if (tally_group_set_name(g[i], name))
				return 1;
			tally_group_mod(g[i], 0, n);
		}
		if (tally_export_render_alloc(&e, TALLY_EXPORT_PROMETHEUS, &out, &len)) {
			fprintf(stderr, "render: %s\n", tally_export_error(&e));
			return 1;
		}
		for (i = 0; i < NR; i++) {
			unsigned long long v = sample(out, "job_requests_total", i),
					   l = sample(out, "job_requests_local_total", i);
			wrong += (v != (unsigned long long)n) + (l != (unsigned long long)n);
			check(v == (unsigned long long)n, "hierarchical", v, (unsigned long long)n);
			check(l == (unsigned long long)n, "local", l, (unsigned long long)n);
		}
		free(out);
		for (i = 0; i < NR; i++) {
			old[i] = g[i];
			if (tally_group_destroy(g[i]))
				return 1;
		}
		urcu_memb_barrier(); /* the destroyed groups are freed */
	}
	printf("export_reuse: %d rounds of %d groups, %d groups at a destroyed one's address and path, %d rows wrong\n",
	       ROUNDS, NR, reused, wrong);
	if (!reused) {
		fprintf(stderr, "FAIL: no group got a destroyed one's address and path: the test saw nothing\n");
		failures++;
	}
	tally_export_destroy(&e);
	tally_tree_destroy(t);
	urcu_memb_unregister_thread();
	return failures ? 1 : 0;
}
