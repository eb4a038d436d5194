/*
 * fuzz_cost.h - tally_cost and tally_scan_fraction in fuzz_model: the
 * fold and note arithmetic, the scan fraction in exact 128-bit arithmetic;
 * op_cost(), one step.
 *
 * A part of fuzz_model.c, which includes every part into one translation
 * unit (every primitive's objects share that unit's per-CPU arenas, which
 * the corpus's coverage depends on); not a header of its own.
 */
#ifndef TALLY_FUZZ_MODEL
#  error "tests/fuzz/fuzz_cost.h is a part of tests/fuzz/fuzz_model.c"
#endif

/* ---- tally_cost and tally_scan_fraction ------------------------------------ */
static struct {
	struct tally_cost c;
	tally_uword count[2], last_rot[2], last_io[2];
	tally_uword rot[2], io[2]; /* the monotonic inputs now */
} cost;

/* a + b > limit, from the carry out of the sum. */
static int over(tally_uword a, tally_uword b, tally_uword limit)
{
	tally_uword s = UW(a + b);
	return s < a || s > limit;
}

static void model_fold(tally_uword lru)
{
	for (int i = 0; i < 2; i++) {
		tally_uword d = UW(UW(UW(cost.io[i] - cost.last_io[i]) * 32u) +
				   UW(cost.rot[i] - cost.last_rot[i]));
		cost.count[i] = UW(cost.count[i] + d);
		cost.last_rot[i] = cost.rot[i];
		cost.last_io[i] = cost.io[i];
	}
	while (over(cost.count[0], cost.count[1], UW(lru / 4u))) {
		cost.count[0] >>= 1;
		cost.count[1] >>= 1;
	}
}

static void model_note(int side, tally_uword nio, tally_uword nrot, tally_uword lru)
{
	tally_uword w = UW(UW(nio * 32u) + nrot);
	if (!w) /* lru_note_cost(): no cost, no decay */
		return;
	cost.count[side] = UW(cost.count[side] + w);
	if (over(cost.count[0], cost.count[1], UW(lru / 4u))) {
		cost.count[0] >>= 1;
		cost.count[1] >>= 1;
	}
}

static void cost_check(void)
{
	tally_uword got[2] = {1, 1};
	struct tally_cost_input last[2];
	tally_cost_read(&cost.c, got);
	EXPECT(got[0] == cost.count[0] && got[1] == cost.count[1], "read %llu %llu, model %llu %llu",
	       ULL(got[0]), ULL(got[1]), ULL(cost.count[0]), ULL(cost.count[1]));
	tally_cost_last(&cost.c, last);
	for (int i = 0; i < 2; i++)
		EXPECT(last[i].rotated == cost.last_rot[i] && last[i].io == cost.last_io[i],
		       "side %d: last %llu %llu, model %llu %llu", i, ULL(last[i].rotated),
		       ULL(last[i].io), ULL(cost.last_rot[i]), ULL(cost.last_io[i]));
}

/* Exact 128-bit arithmetic on 64-bit halves for the scan fraction. */
struct wide {
	uint64_t hi, lo;
};

static struct wide wadd(struct wide a, struct wide b)
{
	struct wide r = {a.hi + b.hi, a.lo + b.lo};
	r.hi += r.lo < a.lo;
	return r;
}

static struct wide wof(uint64_t v)
{
	struct wide r = {0, v};
	return r;
}

static struct wide wmul(struct wide a, unsigned k)
{
	struct wide r = {0, 0};
	for (; k; k >>= 1) {
		if (k & 1)
			r = wadd(r, a);
		a = wadd(a, a);
	}
	return r;
}

static uint64_t wdiv(struct wide n, struct wide d)
{
	struct wide rem = {0, 0};
	uint64_t q = 0;
	for (int b = 127; b >= 0; b--) {
		uint64_t bit = b >= 64 ? (n.hi >> (b - 64)) & 1 : (n.lo >> b) & 1;
		rem.hi = (rem.hi << 1) | (rem.lo >> 63);
		rem.lo = (rem.lo << 1) | bit;
		if (rem.hi > d.hi || (rem.hi == d.hi && rem.lo >= d.lo)) {
			uint64_t borrow = rem.lo < d.lo;
			rem.lo -= d.lo;
			rem.hi -= d.hi + borrow;
			if (b < 64)
				q |= (uint64_t)1 << b;
		}
	}
	return q;
}

static void op_cost(struct input *in)
{
	uint8_t k = u8(in);
	switch (k % 10) {
	case 0:
		op_name = "cost_init";
		tally_cost_init(&cost.c);
		memset(cost.count, 0, sizeof(cost.count));
		memset(cost.last_rot, 0, sizeof(cost.last_rot));
		memset(cost.last_io, 0, sizeof(cost.last_io));
		break;
	case 1:
	case 2: { /* fold, or lock + fold_locked + unlock */
		tally_uword lru = pick_word(in), out[2] = {7, 7};
		int locked = k % 10 == 2, nul = u8(in) % 8 == 0;
		for (int i = 0; i < 2; i++) {
			cost.rot[i] = UW(cost.rot[i] + pick_word(in));
			cost.io[i] = UW(cost.io[i] + pick_word(in));
		}
		struct tally_cost_input inp[2] = {{cost.rot[0], cost.io[0]}, {cost.rot[1], cost.io[1]}};
		op_name = locked ? "cost_fold_locked" : "cost_fold";
		if (locked) {
			EXPECT(tally_cost_trylock(&cost.c), "the cost lock is free");
			tally_cost_fold_locked(&cost.c, nul ? NULL : inp, lru, out);
			tally_cost_unlock(&cost.c);
		} else {
			tally_cost_fold(&cost.c, nul ? NULL : inp, lru, out);
		}
		if (nul) { /* NULL in: nothing changes, cost reads {0, 0} */
			EXPECT(out[0] == 0 && out[1] == 0, "");
		} else {
			model_fold(lru);
			EXPECT(out[0] == cost.count[0] && out[1] == cost.count[1],
			       "fold %llu %llu, model %llu %llu", ULL(out[0]), ULL(out[1]),
			       ULL(cost.count[0]), ULL(cost.count[1]));
		}
		cost_check();
		break;
	}
	case 3:
	case 4: { /* note, or note_locked; sides 0, 1 or bad */
		uint8_t s = u8(in);
		int side = s % 8 < 3 ? 0 : s % 8 < 6 ? 1 : (s & 8) ? 2 : -1;
		tally_uword nio = pick_word(in), nrot = pick_word(in), lru = pick_word(in);
		if (u8(in) % 4 == 0) /* a cost that wraps to 0 */
			nrot = UW(0u - UW(nio * 32u));
		op_name = k % 10 == 4 ? "cost_note_locked" : "cost_note";
		if (k % 10 == 4) {
			tally_cost_lock(&cost.c);
			tally_cost_note_locked(&cost.c, side, nio, nrot, lru);
			tally_cost_unlock(&cost.c);
		} else {
			tally_cost_note(&cost.c, side, nio, nrot, lru);
		}
		if (side == 0 || side == 1)
			model_note(side, nio, nrot, lru);
		cost_check();
		break;
	}
	case 5:
		op_name = "cost_trylock";
		EXPECT(tally_cost_trylock(&cost.c), "free lock");
		EXPECT(!tally_cost_trylock(&cost.c), "held lock");
		tally_cost_unlock(&cost.c);
		cost_check();
		break;
	case 6:
	case 7: { /* scan fraction against the formula */
		tally_uword a = pick_word(in), f = pick_word(in);
		uint8_t s = u8(in);
		unsigned sw = s <= 200 ? s : s % 4 == 0 ? 201u + s : s % 201u;
		uint64_t fr[2] = {9, 9}, d = 9, ap = 0, fp = 0;
		op_name = "scan_fraction";
		if (u8(in) % 3 == 0) { /* from the live accumulator */
			a = cost.count[0];
			f = cost.count[1];
		}
		tally_scan_fraction(a, f, sw, fr, &d);
		if (sw <= TALLY_MAX_SWAPPINESS) {
			struct wide total = wadd(wof(a), wof(f));
			struct wide apc = wadd(total, wof(a)), fpc = wadd(total, wof(f));
			total = wadd(wadd(apc, fpc), wof(1));
			ap = wdiv(wmul(total, sw), wadd(apc, wof(1)));
			fp = wdiv(wmul(total, TALLY_MAX_SWAPPINESS - sw), wadd(fpc, wof(1)));
			EXPECT(ap + fp > 0, "a valid split has a denominator");
		}
		EXPECT(fr[0] == ap && fr[1] == fp && d == ap + fp,
		       "(%llu, %llu, %u): %llu %llu %llu, formula %llu %llu", ULL(a), ULL(f), sw,
		       ULL(fr[0]), ULL(fr[1]), ULL(d), ULL(ap), ULL(fp));
		break;
	}
	case 8:
		op_name = "cost_check";
		cost_check();
		break;
	default: {
		tally_uword out[2] = {7, 7};
		struct tally_cost_input last[2], inp[2] = {{1, 1}, {1, 1}};
		uint64_t fr[2], d;
		switch (u8(in) % 12) {
		case 0: op_name = "cost_init(NULL)"; tally_cost_init(NULL); break;
		case 1: op_name = "cost_trylock(NULL)"; EXPECT(!tally_cost_trylock(NULL), ""); break;
		case 2: op_name = "cost_lock(NULL)"; tally_cost_lock(NULL); tally_cost_unlock(NULL); break;
		case 3: op_name = "cost_fold(NULL)";
			tally_cost_fold(NULL, inp, 100, out);
			EXPECT(out[0] == 0 && out[1] == 0, "");
			tally_cost_fold(NULL, NULL, 100, NULL);
			break;
		case 4: op_name = "cost_fold_locked(NULL)";
			tally_cost_fold_locked(NULL, inp, 100, out);
			EXPECT(out[0] == 0 && out[1] == 0, "");
			break;
		case 5: op_name = "cost_note(NULL)"; tally_cost_note(NULL, 0, 1, 1, 100); break;
		case 6: op_name = "cost_note_locked(NULL)"; tally_cost_note_locked(NULL, 1, 1, 1, 100); break;
		case 7: op_name = "cost_read(NULL)";
			tally_cost_read(NULL, out);
			EXPECT(out[0] == 0 && out[1] == 0, "");
			tally_cost_read(&cost.c, NULL);
			break;
		case 8: op_name = "cost_last(NULL)";
			memset(last, 0xa5, sizeof(last));
			tally_cost_last(NULL, last);
			EXPECT(last[0].rotated == 0 && last[0].io == 0 && last[1].rotated == 0 &&
				       last[1].io == 0, "");
			tally_cost_last(&cost.c, NULL);
			break;
		case 9: op_name = "cost_fold(c, NULL, NULL)";
			tally_cost_fold(&cost.c, NULL, 100, NULL);
			break;
		case 10: op_name = "scan_fraction(NULL)";
			tally_scan_fraction(1, 2, 60, NULL, NULL);
			tally_scan_fraction(1, 2, 60, fr, NULL);
			EXPECT(fr[0] == 120 && fr[1] == 233, "");
			tally_scan_fraction(1, 2, 60, NULL, &d);
			EXPECT(d == 353, "");
			break;
		default: op_name = "cost_unlock(NULL)"; tally_cost_unlock(NULL); break;
		}
		cost_check();
	}
	}
}
