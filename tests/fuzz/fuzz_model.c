/*
 * fuzz_model - a model-based fuzzer of tally's public API.
 *
 * Each input is a program: a sequence of calls on tally_counter, tally_vec,
 * tally_tree/tally_group, tally_cost, tally_inflight, tally_hist and the
 * monotonic helpers, made from one thread, with arguments chosen to hit the edges
 * (0, 1, -1, the word's wrap points, out-of-range items, batches and
 * thresholds, NULL for every pointer of every public call). A plain
 * sequential model written here (no code shared with the headers) says
 * what each call must return and what every reader must show: exact sums
 * (through sets and read-and-resets), exact vec values, group values after
 * a forced flush or a reset (since-reset and raw), local values, groups
 * created by name, found by name and destroyed by subtree, the
 * cost fold and note arithmetic, in-flight gauges and throttle statistics;
 * -EINVAL, 0, NULL or a no-op for bad input, and nothing changed by a
 * rejected call. Any difference aborts with the step and the values.
 *
 * Runs here (the build's test "fuzz_model" runs 1 and 2 below with a fixed
 * seed; "fuzz_model_replay" runs 3):
 *  1. libFuzzer with clang, in a scratch build folder:
 *       tests/fuzz/run.sh --out /tmp/tally-fuzz -- -runs=2000 -seed=1
 *  2. Long, on demand (a new corpus grows in <out>/corpus):
 *       tests/fuzz/run.sh --out /tmp/tally-fuzz -- -max_total_time=3600 -jobs=2
 *     and add to tests/fuzz/corpus/ only the inputs that reach an edge it
 *     does not (every flavour replays it, so keep it small):
 *       /tmp/tally-fuzz/fuzz_model -merge=1 -use_counters=0 \
 *           tests/fuzz/corpus /tmp/tally-fuzz/corpus
 *     With 32-bit words: TALLY_FUZZ_WORD_BITS=32 tests/fuzz/run.sh ...
 *     Reproduce a crash: /tmp/tally-fuzz/fuzz_model crash-<hash>
 *  3. Without libFuzzer (any compiler): build with
 *     -DTALLY_FUZZ_STANDALONE=1 and run
 *       fuzz_model_replay [file or folder ...]
 *     It runs each input, then TALLY_FUZZ_RUNS (default 2000) random inputs
 *     from TALLY_FUZZ_SEED (default 1). TALLY_FUZZ_VERBOSE=1 prints the
 *     calls as they run (also under libFuzzer).
 *
 * The flusher thread is started and stopped within one step (its period is
 * far longer), so every check runs with no other thread touching tally.
 *
 * The source, one translation unit: this file (the dispatch, the reset,
 * the libFuzzer entry and the standalone driver) includes fuzz.h (the
 * harness: reports, the input's reader, the argument pickers) and one part
 * per primitive, fuzz_<primitive>.h, each its model and its op_*() step.
 * The input's format: each step's first byte modulo 7 picks the primitive
 * (counter, vec, cost, inflight, monotonic, hist, tree), the bytes after
 * it that primitive's call and arguments (tests/fuzz/corpus keeps it).
 */
#define _GNU_SOURCE
#define TALLY_FUZZ_MODEL 1 /* the parts below refuse to be included elsewhere */
#include "fuzz.h"
#include "fuzz_counter.h"
#include "fuzz_vec.h"
#include "fuzz_cost.h"
#include "fuzz_inflight.h"
#include "fuzz_monotonic.h"
#include "fuzz_tree.h"
#include "fuzz_hist.h"

/* ---- one input -------------------------------------------------------------- */
static void reset_all(void)
{
	for (int i = 0; i < NR_COUNTERS; i++) {
		if (ctr[i].live)
			tally_counter_destroy(&ctr[i].c);
		ctr[i].live = 0;
	}
	if (xv.live)
		tally_vec_destroy(&xv.v);
	xv.live = 0;
	for (int i = 0; i < NR_VECS; i++) {
		if (vec[i].live)
			tally_vec_destroy(&vec[i].v);
		vec[i].live = 0;
	}
	if (fl.live)
		tally_inflight_destroy(&fl.f);
	fl.live = 0;
	tree_destroy_all();
	if (hm.live)
		tally_hist_destroy(&hm.h);
	hm.live = 0;
	memset(&cost, 0, sizeof(cost));
	tally_cost_init(&cost.c);
	memset(&sampler, 0, sizeof(sampler));
	sampler_last = 0;
}

static void run_one(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	step = 0;
	op_name = "start";
	reset_all();
	while (in.n && step < 4096) {
		uint8_t op = u8(&in);
		step++;
		switch (op % 7) {
		case 0: op_counter(&in); break;
		case 1: op_vec(&in); break;
		case 2: op_cost(&in); break;
		case 3: op_inflight(&in); break;
		case 4: op_monotonic(&in); break;
		case 5: op_hist(&in); break;
		default: op_tree(&in); break;
		}
		if (verbose)
			fprintf(stderr, "fuzz_model: step %u: %s\n", step, op_name);
	}
	reset_all();
}

static void setup(void)
{
	const char *v = getenv("TALLY_FUZZ_VERBOSE");
	verbose = v && *v && *v != '0';
	/* The fuzzing thread makes read-side sections and destroys groups:
	 * it is registered with the default flavor for the whole run. */
	urcu_memb_register_thread();
}

#if !TALLY_FUZZ_STANDALONE
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run_one(data, size);
	return 0;
}
#else
/* ---- the standalone driver: files, folders, then random inputs ---------------- */
#include <dirent.h>
#include <sys/stat.h>

static unsigned long ran;

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "fuzz_model: cannot read %s\n", path);
		exit(2);
	}
	buf = (uint8_t *)malloc((size_t)n + 1u);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "fuzz_model: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	if (verbose)
		fprintf(stderr, "fuzz_model: %s\n", path);
	run_one(buf, (size_t)n);
	free(buf);
	ran++;
}

static void run_path(const char *path)
{
	struct stat st;
	if (stat(path, &st)) {
		fprintf(stderr, "fuzz_model: no such file or folder: %s\n", path);
		exit(2);
	}
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		if (!d)
			exit(2);
		while ((e = readdir(d))) {
			char sub[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			run_path(sub);
		}
		closedir(d);
	} else {
		run_file(path);
	}
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
	const char *r = getenv("TALLY_FUZZ_RUNS"), *s = getenv("TALLY_FUZZ_SEED");
	unsigned long runs = r ? strtoul(r, NULL, 10) : 2000ul;
	uint64_t seed = s ? strtoull(s, NULL, 10) : 1u;
	static uint8_t buf[1024];
	setup();
	for (int i = 1; i < argc; i++)
		run_path(argv[i]);
	for (unsigned long n = 0; n < runs; n++) {
		size_t len = (size_t)(splitmix(&seed) % sizeof(buf));
		for (size_t j = 0; j < len; j++)
			buf[j] = (uint8_t)splitmix(&seed);
		run_one(buf, len);
		ran++;
	}
	printf("fuzz_model: %lu inputs passed\n", ran);
	return 0;
}
#endif
