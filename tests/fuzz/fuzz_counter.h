/*
 * fuzz_counter.h - tally_counter in fuzz_model: the model (the exact
 * value modulo 2^W, the batch, flat or tree) and op_counter(), one step.
 *
 * A part of fuzz_model.c, which includes every part into one translation
 * unit (every primitive's objects share that unit's per-CPU arenas, which
 * the corpus's coverage depends on); not a header of its own.
 */
#ifndef TALLY_FUZZ_MODEL
#  error "tests/fuzz/fuzz_counter.h is a part of tests/fuzz/fuzz_model.c"
#endif

/* ---- tally_counter ---------------------------------------------------------- */
#define NR_COUNTERS 2
static struct {
	struct tally_counter c;
	int live;
	tally_uword value; /* initial + every add, modulo 2^W */
	tally_sword batch;
	int tree;   /* a counter tree (tally_counter_init_tree) */
	int folded; /* a tree after fold_all: read may pass sum, by < bound */
} ctr[NR_COUNTERS];

static tally_sword pick_counter_batch(struct input *in, int *bad)
{
	const tally_sword valid[] = {0, 1, 2, 3, 32, 1000, tally_counter_max_batch()};
	uint8_t k = u8(in);
	*bad = 0;
	if (k % 8 == 7) {
		*bad = 1;
		return (k & 8) ? -1 - (tally_sword)(u8(in) % 4) : tally_counter_max_batch() + 1;
	}
	return valid[k % 7];
}

static void counter_check(int i)
{
	struct tally_counter *c = &ctr[i].c;
	tally_sword sum = tally_counter_sum(c), bound = tally_counter_error_bound(c);
	tally_sword read = tally_counter_read(c);
	EXPECT(sum == sgn(ctr[i].value), "counter %d: sum %lld, model %lld", i, LL(sum),
	       LL(sgn(ctr[i].value)));
	EXPECT(tally_counter_sum_positive(c) == clamp0(ctr[i].value), "counter %d", i);
	EXPECT(tally_counter_read_positive(c) == clamp0(UW(read)), "counter %d", i);
	EXPECT(tally_counter_batch(c) == ctr[i].batch, "counter %d: batch %lld, model %lld", i,
	       LL(tally_counter_batch(c)), LL(ctr[i].batch));
	EXPECT(bound > 0 && bound < TALLY_SWORD_MAX, "counter %d", i);
	{
		/* |read - sum| < bound, in modular distance. */
		tally_sword d = sgn(UW(UW(read) - UW(sum)));
		EXPECT(d < bound && d > -bound, "counter %d: read %lld sum %lld bound %lld", i,
		       LL(read), LL(sum), LL(bound));
		/* A tree reads at most its sum until a fold_all. */
		EXPECT(!ctr[i].tree || ctr[i].folded || d <= 0,
		       "tree %d: read %lld above sum %lld", i, LL(read), LL(sum));
	}
}

static int sign3(tally_sword a, tally_sword b)
{
	return a > b ? 1 : a < b ? -1 : 0;
}

static void op_counter(struct input *in)
{
	uint8_t k = u8(in);
	int i = (k >> 4) % NR_COUNTERS, bad;
	struct tally_counter *c = &ctr[i].c;
	switch (k % 8) {
	case 0: { /* init (bad batches leave a live counter untouched) */
		tally_sword initial = pick_sword(in), batch = pick_counter_batch(in, &bad);
		op_name = "counter_init";
		if (bad) {
			EXPECT(tally_counter_init(c, initial, batch) == -EINVAL, "batch %lld",
			       LL(batch));
			break;
		}
		if (ctr[i].live)
			tally_counter_destroy(c);
		ctr[i].live = 0;
		if (k & 8) { /* the counter tree: its largest batch is smaller */
			int r = tally_counter_init_tree(c, initial, batch);
			op_name = "counter_init_tree";
			EXPECT(r == 0 || (r == -EINVAL && batch > 1000), "tree batch %lld: %d",
			       LL(batch), r);
			if (r)
				break;
			EXPECT(tally_counter_is_tree(c), "init_tree made a flat counter");
			ctr[i].live = 1;
			ctr[i].tree = 1;
			ctr[i].folded = 0;
			ctr[i].value = UW(initial);
			ctr[i].batch = tally_counter_batch(c);
			EXPECT(batch ? ctr[i].batch >= batch && ctr[i].batch / 2 < batch
				     : ctr[i].batch == TALLY_COUNTER_TREE_BATCH,
			       "tree: asked for batch %lld, got %lld", LL(batch), LL(ctr[i].batch));
			break;
		}
		EXPECT(tally_counter_init(c, initial, batch) == 0, "batch %lld", LL(batch));
		ctr[i].live = 1;
		ctr[i].tree = tally_counter_is_tree(c);
		ctr[i].folded = 0;
		ctr[i].value = UW(initial);
		/* The batch in force: the default, or the one asked for (a
		 * counter may round it up, to less than twice as much). */
		ctr[i].batch = tally_counter_batch(c);
		if (batch)
			EXPECT(ctr[i].batch >= batch && ctr[i].batch / 2 < batch,
			       "asked for batch %lld, got %lld", LL(batch), LL(ctr[i].batch));
		else if (!ctr[i].tree)
			EXPECT(ctr[i].batch == tally_counter_default_batch(), "default batch %lld",
			       LL(ctr[i].batch));
		break;
	}
	case 1:
		op_name = "counter_destroy";
		if (ctr[i].live)
			tally_counter_destroy(c);
		ctr[i].live = 0;
		break;
	case 3: { /* set, or sum_and_reset: one cut */
		tally_sword v = pick_sword(in);
		if (!ctr[i].live)
			break;
		if (u8(in) % 2) {
			op_name = "counter_set";
			EXPECT(tally_counter_set(c, v) == 0, "");
			ctr[i].value = UW(v);
		} else {
			tally_sword got;
			op_name = "counter_sum_and_reset";
			got = tally_counter_sum_and_reset(c);
			EXPECT(got == sgn(ctr[i].value), "counter %d: returned %lld, model %lld", i,
			       LL(got), LL(sgn(ctr[i].value)));
			ctr[i].value = 0;
		}
		counter_check(i);
		break;
	}
	case 2: { /* add */
		tally_sword d = pick_sword(in);
		unsigned reps = 1u + u8(in) % 8;
		op_name = "counter_add";
		if (!ctr[i].live)
			break;
		for (unsigned r = 0; r < reps; r++) {
			tally_counter_add(c, d);
			ctr[i].value = UW(ctr[i].value + UW(d));
		}
		break;
	}
	case 4:
		op_name = "counter_check";
		if (ctr[i].live)
			counter_check(i);
		break;
	case 5:
		op_name = "counter_fold_all";
		if (!ctr[i].live)
			break;
		tally_counter_fold_all(c);
		ctr[i].folded = ctr[i].tree;
		EXPECT(tally_counter_read(c) == sgn(ctr[i].value), "counter %d: read %lld, model %lld",
		       i, LL(tally_counter_read(c)), LL(sgn(ctr[i].value)));
		counter_check(i);
		break;
	case 6: { /* compare: the sign of value - rhs */
		tally_sword rhs = pick_sword(in);
		op_name = "counter_compare";
		if (!ctr[i].live)
			break;
		int got = tally_counter_compare(c, rhs), want = sign3(sgn(ctr[i].value), rhs);
		tally_sword bound = tally_counter_error_bound(c);
		int near_wrap = sgn(ctr[i].value) > TALLY_SWORD_MAX - bound ||
				sgn(ctr[i].value) < TALLY_SWORD_MIN + bound;
		EXPECT(got == want || (FINDING_COMPARE_WRAP && near_wrap),
		       "counter %d: compare(%lld) %d, value %lld (read %lld, bound %lld)",
		       i, LL(rhs), got, LL(sgn(ctr[i].value)), LL(tally_counter_read(c)),
		       LL(tally_counter_error_bound(c)));
		break;
	}
	default: /* NULL */
		switch (u8(in) % 12) {
		case 10: op_name = "counter_set(NULL)";
			EXPECT(tally_counter_set(NULL, 3) == -EINVAL, "");
			break;
		case 11: op_name = "counter_sum_and_reset(NULL)";
			EXPECT(tally_counter_sum_and_reset(NULL) == 0, "");
			break;
		case 0: op_name = "counter_init(NULL)";
			EXPECT(tally_counter_init(NULL, 1, 0) == -EINVAL, "");
			break;
		case 1: op_name = "counter_destroy(NULL)"; tally_counter_destroy(NULL); break;
		case 2: op_name = "counter_add(NULL)"; tally_counter_add(NULL, 5); break;
		case 3: op_name = "counter_read(NULL)"; EXPECT(tally_counter_read(NULL) == 0, ""); break;
		case 4: op_name = "counter_sum(NULL)"; EXPECT(tally_counter_sum(NULL) == 0, ""); break;
		case 5: op_name = "counter_fold_all(NULL)"; tally_counter_fold_all(NULL); break;
		case 6: op_name = "counter_compare(NULL)";
			EXPECT(tally_counter_compare(NULL, 3) == 0, "");
			break;
		case 7: op_name = "counter_batch(NULL)";
			EXPECT(tally_counter_batch(NULL) == 0 && tally_counter_error_bound(NULL) == 0, "");
			break;
		case 8: op_name = "counter_read_positive(NULL)";
			EXPECT(tally_counter_read_positive(NULL) == 0, "");
			break;
		default: op_name = "counter_sum_positive(NULL)";
			EXPECT(tally_counter_sum_positive(NULL) == 0, "");
			break;
		}
	}
}
