/*
 * fuzz_monotonic.h - monotonic.h in fuzz_model: the sampler, deltas,
 * clamps, tally_after() and tally_sum_clamped() against modular arithmetic;
 * op_monotonic(), one step.
 *
 * A part of fuzz_model.c, which includes every part into one translation
 * unit (every primitive's objects share that unit's per-CPU arenas, which
 * the corpus's coverage depends on); not a header of its own.
 */
#ifndef TALLY_FUZZ_MODEL
#  error "tests/fuzz/fuzz_monotonic.h is a part of tests/fuzz/fuzz_model.c"
#endif

/* ---- monotonic.h -------------------------------------------------------------- */
static struct tally_sample sampler;
static tally_uword sampler_last;

static void op_monotonic(struct input *in)
{
	uint8_t k = u8(in);
	tally_uword a = pick_word(in), b = pick_word(in);
	switch (k % 4) {
	case 0:
		op_name = "sample_advance";
		EXPECT(tally_sample_advance(&sampler, a) == UW(a - sampler_last), "");
		sampler_last = a;
		EXPECT(sampler.last == a, "");
		break;
	case 1:
		op_name = "sample_advance(NULL)";
		EXPECT(tally_sample_advance(NULL, a) == 0, "");
		break;
	case 2: {
		op_name = "delta_clamp_after";
		tally_sword s = sgn(b);
		EXPECT(tally_delta(a, b) == UW(b - a), "");
		EXPECT(tally_clamp(s) == (s < 0 ? 0 : b), "");
		EXPECT(tally_after(a, b) == (sgn(UW(b - a)) < 0), "");
		break;
	}
	default: {
		tally_sword v[4];
		tally_uword want = 0;
		size_t n = u8(in) % 5;
		op_name = "sum_clamped";
		for (size_t i = 0; i < 4; i++) {
			v[i] = pick_sword(in);
			if (i < n)
				want = UW(want + (v[i] < 0 ? 0 : UW(v[i])));
		}
		EXPECT(tally_sum_clamped(v, n) == want, "");
		EXPECT(tally_sum_clamped(NULL, n) == 0, "");
	}
	}
}
