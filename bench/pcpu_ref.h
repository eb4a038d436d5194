/*
 * bench/pcpu_ref.h - the references that updates are measured against, in
 * the binaries whose updates are built on them (bench_counter, bench_rstat,
 * bench_vec), so each ratio comes from one run:
 *   pcpu_add/tally   tally__pcpu_add alone (no fold, no barrier, no dirty
 *                    mark): the primitive under every tally update
 *   rseq_add/bare    a bare rseq per-CPU add, as librseq's
 *                    rseq_load_add_store__ptr on a mempool pointer does it:
 *                    arm the section, read the CPU, address the slot with
 *                    a constant stride, check the CPU, load, add, store;
 *                    nothing else (no bound check, no registration check,
 *                    rseq_cs left set). Skipped where rseq is not
 *                    registered or not compiled in.
 * Include after cbench.h and a tally header; call pcpu_ref_register() from
 * a CBENCH_INIT function.
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
			_Pragma("GCC unroll 8") for (int j = 0; j < PCPU_REF_UNROLL; j++) {
				tally_uword v = tally__pcpu_add(&pcpu_ref, 0, 1, &slot);
				CBENCH_KEEP(v);
			}
	cbench_items(s, (int64_t)(cbench_iterations(s) * PCPU_REF_UNROLL));
}

#if TALLY__HAVE_RSEQ
/* The bare add's slots: 64 KiB apart (librseq's default mempool stride),
 * one word used in each; CPU slots as tally counts them. */
#  define BARE_SHIFT 16
static unsigned char *bare_base;
static size_t bare_bytes;

/* One load-add-store in a restartable section, on the slot of the CPU the
 * thread runs on. Registration is checked once, in setup. */
static inline void bare_rseq_add(unsigned char *base, uint64_t d)
{
	uint64_t addr, v;
	unsigned cpu;
	__asm__ __volatile__(
		".pushsection __tally_rseq_cs, \"aw?\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"
		".quad 1f, 2f - 1f, 4f\n\t"
		".popsection\n\t"
		"0:\n\t"
		"leaq 3b(%%rip), %[addr]\n\t"
		"movq %[addr], %%fs:%c[cs](%[rs])\n\t"
		"1:\n\t"
		"movl %%fs:%c[start](%[rs]), %[cpu]\n\t"
		"movl %[cpu], %k[addr]\n\t"
		"shlq $%c[shift], %[addr]\n\t"
		"addq %[base], %[addr]\n\t"
		"cmpl %%fs:%c[id](%[rs]), %[cpu]\n\t"
		"jne 4f\n\t"
		"movq (%[addr]), %[v]\n\t"
		"addq %[d], %[v]\n\t"
		"movq %[v], (%[addr])\n\t"
		"2:\n\t"
		".subsection 1\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"4:\n\t"
		"jmp 0b\n\t"
		".previous\n\t"
		: [cpu] "=&r"(cpu), [addr] "=&r"(addr), [v] "=&r"(v)
		: [rs] "r"(__rseq_offset), [cs] "i"(offsetof(struct rseq, rseq_cs)),
		  [start] "i"(offsetof(struct rseq, cpu_id_start)),
		  [id] "i"(offsetof(struct rseq, cpu_id)), [shift] "i"(BARE_SHIFT),
		  [base] "rm"(base), [d] "re"(d), [sig] "i"(RSEQ_SIG)
		: "memory", "cc");
}

static int bare_setup(struct cbench_state *s, void *arg)
{
	(void)arg;
	if (!tally__rseq_registered()) {
		cbench_skip(s, "rseq not registered");
		return 0;
	}
	bare_bytes = (size_t)tally__nr_cpu_slots() << BARE_SHIFT;
	bare_base = (unsigned char *)aligned_alloc(4096, bare_bytes);
	if (!bare_base)
		return -1;
	memset(bare_base, 0, bare_bytes);
	return 0;
}

static void bare_teardown(struct cbench_state *s, void *arg)
{
	uint64_t sum = 0;
	unsigned c;
	(void)arg;
	if (!bare_base)
		return;
	for (c = 0; c < tally__nr_cpu_slots(); c++)
		sum += __atomic_load_n((uint64_t *)(void *)(bare_base + ((size_t)c << BARE_SHIFT)),
				       __ATOMIC_RELAXED);
	cbench_check(s, sum == pcpu_ref_expected(s), "bare rseq sum is not exact");
	free(bare_base);
	bare_base = NULL;
}

static void bare_body(struct cbench_state *s, void *arg)
{
	uint64_t n, i;
	(void)arg;
	while (cbench_batch(s, &n))
		for (i = 0; i < n; i++)
			_Pragma("GCC unroll 8") for (int j = 0; j < PCPU_REF_UNROLL; j++)
				bare_rseq_add(bare_base, 1);
	cbench_items(s, (int64_t)(cbench_iterations(s) * PCPU_REF_UNROLL));
}
#endif

static void pcpu_ref_register(void)
{
	cbench_env_threads(cbench_setup(cbench_register("pcpu_add/tally", pcpu_ref_body, NULL),
					pcpu_ref_setup, pcpu_ref_teardown));
#if TALLY__HAVE_RSEQ
	cbench_env_threads(
		cbench_setup(cbench_register("rseq_add/bare", bare_body, NULL), bare_setup, bare_teardown));
#endif
}

#endif /* TALLY_BENCH_PCPU_REF_H */
