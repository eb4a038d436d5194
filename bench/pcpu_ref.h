/*
 * bench/pcpu_ref.h - pcpu_add/tally, the bare per-CPU add (tally__pcpu_add:
 * no fold, no barrier, no dirty mark), as a reference inside the binaries
 * whose updates are built on it (bench_rstat, bench_vec), so the ratio of
 * an update to the bare add comes from one run. The same benchmark as
 * bench_counter's pcpu_add/tally. Include after cbench.h and a tally
 * header; call pcpu_ref_register() from a CBENCH_INIT function.
 */
#ifndef TALLY_BENCH_PCPU_REF_H
#define TALLY_BENCH_PCPU_REF_H

#define PCPU_REF_UNROLL 8

static struct tally__pcpu pcpu_ref;

static uint64_t pcpu_ref_expected(const struct cbench_state *s)
{
	return cbench_iterations(s) * PCPU_REF_UNROLL * (uint64_t)cbench_nthreads(s);
}

static int pcpu_ref_setup(struct cbench_state *s, void *arg)
{
	(void)s;
	(void)arg;
	return tally__pcpu_alloc(&pcpu_ref, sizeof(tally_uword));
}

static void pcpu_ref_teardown(struct cbench_state *s, void *arg)
{
	(void)arg;
	cbench_check(s, (uint64_t)tally__pcpu_sum(&pcpu_ref, 0) == pcpu_ref_expected(s),
		     "per-CPU sum is not exact");
	tally__pcpu_free(&pcpu_ref);
}

static void pcpu_ref_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i;
	unsigned slot;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			for (int j = 0; j < PCPU_REF_UNROLL; j++) {
				tally_uword v = tally__pcpu_add(&pcpu_ref, 0, 1, &slot);
				CBENCH_KEEP(v);
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * PCPU_REF_UNROLL));
}

static void pcpu_ref_register(void)
{
	cbench_env_threads(cbench_setup(cbench_register("pcpu_add/tally", pcpu_ref_body, NULL),
					pcpu_ref_setup, pcpu_ref_teardown));
}

#endif /* TALLY_BENCH_PCPU_REF_H */
