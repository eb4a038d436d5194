/*
 * fuzz_vec.h - tally_vec in fuzz_model: two vectors made by tally_vec_init
 * (updates, reads, folds) and one by tally_vec_opts (xv: per-item
 * thresholds, flags, names, reset, snapshots, multi-item updates), each
 * against a per-item model; op_vec(), one step.
 *
 * A part of fuzz_model.c, which includes every part into one translation
 * unit (every primitive's objects share that unit's per-CPU arenas, which
 * the corpus's coverage depends on); not a header of its own.
 */
#ifndef TALLY_FUZZ_MODEL
#  error "tests/fuzz/fuzz_vec.h is a part of tests/fuzz/fuzz_model.c"
#endif

/* ---- tally_vec -------------------------------------------------------------- */
#define NR_VECS 2
#define VEC_ITEMS 6
static struct {
	struct tally_vec v;
	int live;
	unsigned nr;
	int threshold;
	tally_uword value[VEC_ITEMS];
} vec[NR_VECS];

static void vec_check(int i, int folded)
{
	struct tally_vec *v = &vec[i].v;
	/* Lag of the global: threshold per slot, t/2 more after an inc/dec
	 * overstep (every CPU slot and the shared one). */
	tally_uword slots = UW(tally__nr_cpu_slots() + 1u);
	tally_uword t = UW(vec[i].threshold);
	tally_uword lag = UW(slots * (t + t / 2u + 1u));
	EXPECT(tally_vec_threshold(v) == vec[i].threshold, "vec %d: threshold %d, model %d", i,
	       tally_vec_threshold(v), vec[i].threshold);
	for (unsigned it = 0; it < vec[i].nr; it++) {
		tally_uword m = vec[i].value[it];
		tally_uword mono = tally_vec_read_monotonic(v, it);
		EXPECT(tally_vec_read_exact(v, it) == sgn(m), "vec %d item %u: exact %lld, model %lld",
		       i, it, LL(tally_vec_read_exact(v, it)), LL(sgn(m)));
		if (folded) {
			EXPECT(mono == UW(m + TALLY_MONOTONIC_BIAS),
			       "vec %d item %u: monotonic %llu, model %llu", i, it, ULL(mono),
			       ULL(m + TALLY_MONOTONIC_BIAS));
			EXPECT(tally_vec_read(v, it) == clamp0(m), "vec %d item %u", i, it);
		} else {
			tally_sword d = sgn(UW(mono - TALLY_MONOTONIC_BIAS - m));
			EXPECT(UW(d < 0 ? -(tally_uword)d : (tally_uword)d) <= lag,
			       "vec %d item %u: global %llu lags model %llu by more than %llu", i,
			       it, ULL(mono - TALLY_MONOTONIC_BIAS), ULL(m), ULL(lag));
			EXPECT(tally_vec_read(v, it) == clamp0(UW(mono - TALLY_MONOTONIC_BIAS)),
			       "vec %d item %u", i, it);
		}
	}
	for (unsigned b = vec[i].nr; b < vec[i].nr + 3u; b++)
		EXPECT(tally_vec_read(v, b) == 0 && tally_vec_read_exact(v, b) == 0 &&
			       tally_vec_read_monotonic(v, b) == 0,
		       "vec %d: bad item %u reads non-zero", i, b);
}

/* A vector made with tally_vec_opts: per-item thresholds and flags
 * (gauge, hidden, multi), names; reset, snapshots, multi-item updates. */
#define XV_ITEMS 6
static struct {
	struct tally_vec v;
	int live, all_multi;
	unsigned nr;
	unsigned char flags[XV_ITEMS]; /* as the vector reports them */
	tally_uword raw[XV_ITEMS], base[XV_ITEMS];
	char names[XV_ITEMS][8];
	int named[XV_ITEMS];
} xv;

static void xv_check(void)
{
	tally_uword out[XV_ITEMS + 1], since[XV_ITEMS + 1];
	tally_sword sg[XV_ITEMS + 1];
	EXPECT(tally_vec_snapshot(&xv.v, out, XV_ITEMS + 1) == 0, "");
	EXPECT(tally_vec_snapshot_since_reset(&xv.v, since, XV_ITEMS) == 0, "");
	EXPECT(tally_vec_snapshot_signed(&xv.v, sg, XV_ITEMS) == 0, "");
	for (unsigned it = 0; it < xv.nr; it++) {
		tally_uword d = UW(xv.raw[it] - xv.base[it]);
		EXPECT(out[it] == xv.raw[it], "item %u: raw %llu, model %llu", it, ULL(out[it]),
		       ULL(xv.raw[it]));
		EXPECT(since[it] == d, "item %u: since %llu, model %llu", it, ULL(since[it]), ULL(d));
		EXPECT(sg[it] == sgn(d), "item %u: signed %lld, model %lld", it, LL(sg[it]),
		       LL(sgn(d)));
		EXPECT(tally_vec_sum(&xv.v, it) == d, "item %u", it);
		EXPECT(tally_vec_read_exact(&xv.v, it) == sgn(d), "item %u", it);
		EXPECT(tally_vec_item_flags(&xv.v, it) == xv.flags[it], "item %u: flags %u, model %u",
		       it, tally_vec_item_flags(&xv.v, it), xv.flags[it]);
		if (xv.named[it])
			EXPECT(tally_vec_item_name(&xv.v, it) &&
				       !strcmp(tally_vec_item_name(&xv.v, it), xv.names[it]),
			       "item %u: name", it);
		else
			EXPECT(!tally_vec_item_name(&xv.v, it), "item %u: a name", it);
	}
	EXPECT(tally_vec_item_flags(&xv.v, xv.nr) == 0, "");
}

static void op_vec_api_one(struct input *in)
{
	uint8_t k = u8(in);
	unsigned it;
	if (!xv.live && k % 8 != 7)
		k = 0; /* make one first */
	switch (k % 8) {
	case 0: { /* init_opts: valid, or one bad member (nothing changed) */
		static const int thr[] = {0, 1, 3, 125, TALLY_VEC_EXACT, TALLY_VEC_THRESHOLD_MAX};
		int thresholds[XV_ITEMS];
		unsigned char fl[XV_ITEMS];
		const char *nm[XV_ITEMS];
		struct tally_vec_opts o;
		uint8_t a = u8(in), bad = u8(in);
		struct tally_vec scratch;
		op_name = "vec_init_opts";
		memset(&o, 0, sizeof(o));
		o.nr_items = 1u + a % XV_ITEMS;
		o.flags = (a >> 3) & 3; /* EXACT_ONLY, MULTI */
		if (!(o.flags & TALLY_VEC_EXACT_ONLY)) {
			o.threshold = thr[(a >> 5) % 4];
			o.thresholds = thresholds;
		}
		for (unsigned i = 0; i < XV_ITEMS; i++) {
			uint8_t b = u8(in);
			thresholds[i] = thr[b % 6];
			fl[i] = (unsigned char)((b >> 3) & 7); /* gauge, hidden, multi */
			nm[i] = (b & 0x40) ? NULL : "item";
		}
		o.item_flags = (a & 0x80) ? NULL : fl;
		o.names = nm;
		if (bad % 4 == 0) { /* one bad member, where there is one to spoil */
			struct tally_vec copy;
			unsigned at = bad % o.nr_items;
			if ((bad & 4) && o.item_flags)
				fl[at] |= (unsigned char)(8u << (bad >> 6)); /* an unknown flag */
			else if ((bad & 8) && o.thresholds)
				thresholds[at] = -2;
			else
				o.nr_items = 0;
			memset(&scratch, 0x5a, sizeof(scratch));
			memcpy(&copy, &scratch, sizeof(copy));
			EXPECT(tally_vec_init_opts(&scratch, &o) == -EINVAL, "bad %u", bad);
			EXPECT(!memcmp(&copy, &scratch, sizeof(copy)), "bad %u: v changed", bad);
			break;
		}
		if (xv.live)
			tally_vec_destroy(&xv.v);
		xv.live = 0;
		EXPECT(tally_vec_init_opts(&xv.v, &o) == 0, "");
		xv.live = 1;
		xv.nr = o.nr_items;
		xv.all_multi = (o.flags & TALLY_VEC_MULTI) != 0;
		for (unsigned i = 0; i < XV_ITEMS; i++) {
			unsigned char f = o.item_flags ? fl[i] : 0;
			xv.flags[i] = (unsigned char)(f | (xv.all_multi ? TALLY_VEC_ITEM_MULTI : 0));
			xv.raw[i] = xv.base[i] = 0;
			xv.named[i] = nm[i] != NULL;
			strcpy(xv.names[i], "item");
		}
		break;
	}
	case 1: { /* mod, inc, dec */
		uint8_t how = u8(in) % 3;
		tally_sword d = how == 0 ? pick_sword(in) : how == 1 ? 1 : -1;
		int rc;
		op_name = how == 0 ? "xvec_mod" : how == 1 ? "xvec_inc" : "xvec_dec";
		if (!xv.live)
			break;
		it = pick_item(in, xv.nr);
		rc = how == 0 ? tally_vec_mod(&xv.v, it, d)
		     : how == 1 ? tally_vec_inc(&xv.v, it) : tally_vec_dec(&xv.v, it);
		EXPECT(rc == (it < xv.nr ? 0 : -EINVAL), "item %u: rc %d", it, rc);
		if (it < xv.nr)
			xv.raw[it] = UW(xv.raw[it] + UW(d));
		break;
	}
	case 2: { /* mod_multi: all or nothing; parts without banks counted alone */
		struct tally_vec_delta d[4];
		unsigned n = u8(in) % 5, ok = 1;
		int rc;
		op_name = "vec_mod_multi";
		if (!xv.live)
			break;
		for (unsigned j = 0; j < n; j++) {
			d[j].item = pick_item(in, xv.nr);
			d[j].delta = pick_sword(in);
			if (d[j].item >= xv.nr)
				ok = 0;
		}
		rc = tally_vec_mod_multi(&xv.v, n ? d : NULL, n);
		EXPECT(rc == (ok ? 0 : -EINVAL), "n %u: rc %d", n, rc);
		for (unsigned j = 0; ok && j < n; j++)
			xv.raw[d[j].item] = UW(xv.raw[d[j].item] + UW(d[j].delta));
		break;
	}
	case 3:
		op_name = "vec_reset";
		if (!xv.live)
			break;
		EXPECT(tally_vec_reset(&xv.v) == 0, "");
		for (unsigned i = 0; i < xv.nr; i++)
			if (!(xv.flags[i] & TALLY_VEC_ITEM_GAUGE))
				xv.base[i] = xv.raw[i];
		break;
	case 4: {
		int rc;
		op_name = "vec_reset_item";
		if (!xv.live)
			break;
		it = pick_item(in, xv.nr);
		rc = tally_vec_reset_item(&xv.v, it);
		if (it >= xv.nr || (xv.flags[it] & TALLY_VEC_ITEM_GAUGE)) {
			EXPECT(rc == -EINVAL, "item %u: rc %d", it, rc);
		} else {
			EXPECT(rc == 0, "item %u: rc %d", it, rc);
			xv.base[it] = xv.raw[it];
		}
		break;
	}
	case 5: { /* rename one item */
		uint8_t c = u8(in);
		char name[8];
		int rc;
		op_name = "vec_set_item_name";
		if (!xv.live)
			break;
		it = pick_item(in, xv.nr);
		snprintf(name, sizeof(name), "n%u", c);
		rc = tally_vec_set_item_name(&xv.v, it, (c & 1) ? NULL : name);
		EXPECT(rc == (it < xv.nr ? 0 : -EINVAL), "item %u: rc %d", it, rc);
		if (it < xv.nr) {
			xv.named[it] = !(c & 1);
			strcpy(xv.names[it], name);
		}
		break;
	}
	case 6:
		op_name = "xvec_check";
		if (!xv.live)
			break;
		if (u8(in) & 1) {
			tally_vec_fold(&xv.v);
			for (unsigned i = 0; i < xv.nr; i++)
				EXPECT(tally_vec_read_monotonic(&xv.v, i) ==
					       UW(xv.raw[i] + TALLY_MONOTONIC_BIAS),
				       "folded item %u", i);
		}
		xv_check();
		break;
	default: { /* NULL and bad arguments */
		tally_uword out[XV_ITEMS];
		tally_sword sg[XV_ITEMS];
		op_name = "vec_api(NULL)";
		EXPECT(tally_vec_snapshot_signed(NULL, sg, XV_ITEMS) == -EINVAL, "");
		EXPECT(tally_vec_set_item_name(NULL, 0, "x") == -EINVAL, "");
		EXPECT(tally_vec_item_flags(NULL, 0) == 0, "");
		EXPECT(tally_vec_reset(NULL) == -EINVAL && tally_vec_reset_item(NULL, 0) == -EINVAL, "");
		EXPECT(tally_vec_mod_multi(NULL, NULL, 0) == -EINVAL, "");
		if (!xv.live)
			break;
		EXPECT(tally_vec_snapshot_signed(&xv.v, NULL, XV_ITEMS) == -EINVAL, "");
		EXPECT(tally_vec_snapshot(&xv.v, out, xv.nr - 1) == -EINVAL, "");
		EXPECT(tally_vec_snapshot_signed(&xv.v, sg, xv.nr - 1) == -EINVAL, "");
		EXPECT(tally_vec_mod_multi(&xv.v, NULL, 1) == -EINVAL, "");
		xv_check();
		break;
	}
	}
}

/* A few calls on the options vector in a row (its calls are a small part
 * of the op mix), then every reader against the model. */
static void op_vec_api(struct input *in)
{
	unsigned reps = 1u + u8(in) % 8;
	for (unsigned r = 0; r < reps; r++)
		op_vec_api_one(in);
	op_name = "xvec_check";
	if (xv.live)
		xv_check();
}

static void op_vec(struct input *in)
{
	uint8_t k = u8(in);
	int i = (k >> 4) % NR_VECS;
	struct tally_vec *v = &vec[i].v;
	switch (k % 8) {
	case 0: { /* init */
		static const int thr[] = {0, 1, 2, 3, 125, TALLY_VEC_THRESHOLD_MAX};
		uint8_t a = u8(in), b = u8(in);
		unsigned nr = 1u + a % VEC_ITEMS;
		int t = thr[b % 6];
		op_name = "vec_init";
		if (a >= 240) { /* bad item count */
			nr = (a & 1) ? 0u : TALLY_VEC_ITEMS_MAX + 1u;
			EXPECT(tally_vec_init(v, nr, t) == -EINVAL, "nr %u", nr);
			break;
		}
		if (b >= 240) { /* bad threshold */
			t = (b & 1) ? -1 : TALLY_VEC_THRESHOLD_MAX + 1;
			EXPECT(tally_vec_init(v, nr, t) == -EINVAL, "threshold %d", t);
			break;
		}
		if (vec[i].live)
			tally_vec_destroy(v);
		vec[i].live = 0;
		EXPECT(tally_vec_init(v, nr, t) == 0, "nr %u threshold %d", nr, t);
		vec[i].live = 1;
		vec[i].nr = nr;
		vec[i].threshold = t ? t : tally_vec_default_threshold();
		memset(vec[i].value, 0, sizeof(vec[i].value));
		break;
	}
	case 1:
		op_name = "vec_destroy";
		if (vec[i].live)
			tally_vec_destroy(v);
		vec[i].live = 0;
		break;
	case 2:
	case 3: { /* mod, inc, dec, repeated */
		unsigned it = pick_item(in, vec[i].nr), reps = 1u + u8(in) % 16;
		uint8_t how = u8(in) % 3;
		tally_sword d = how == 0 ? pick_sword(in) : how == 1 ? 1 : -1;
		op_name = how == 0 ? "vec_mod" : how == 1 ? "vec_inc" : "vec_dec";
		if (!vec[i].live)
			break;
		for (unsigned r = 0; r < reps; r++) {
			int rc = how == 0 ? tally_vec_mod(v, it, d)
				 : how == 1 ? tally_vec_inc(v, it) : tally_vec_dec(v, it);
			if (it >= vec[i].nr) {
				EXPECT(rc == -EINVAL, "vec %d item %u: rc %d", i, it, rc);
			} else {
				EXPECT(rc == 0, "vec %d item %u: rc %d", i, it, rc);
				vec[i].value[it] = UW(vec[i].value[it] + UW(d));
			}
		}
		break;
	}
	case 4:
	case 5:
		op_name = "vec_check";
		if (vec[i].live)
			vec_check(i, 0);
		break;
	case 6:
		op_name = "vec_fold";
		if (!vec[i].live)
			break;
		tally_vec_fold(v);
		vec_check(i, 1);
		break;
	default:
		if (k & 8) { /* bit 3 is free: the options API */
			op_vec_api(in);
			break;
		}
		switch (u8(in) % 9) {
		case 0: op_name = "vec_init(NULL)"; EXPECT(tally_vec_init(NULL, 1, 0) == -EINVAL, ""); break;
		case 1: op_name = "vec_destroy(NULL)"; tally_vec_destroy(NULL); break;
		case 2: op_name = "vec_mod(NULL)"; EXPECT(tally_vec_mod(NULL, 0, 1) == -EINVAL, ""); break;
		case 3: op_name = "vec_inc(NULL)"; EXPECT(tally_vec_inc(NULL, 0) == -EINVAL, ""); break;
		case 4: op_name = "vec_dec(NULL)"; EXPECT(tally_vec_dec(NULL, 0) == -EINVAL, ""); break;
		case 5: op_name = "vec_read(NULL)";
			EXPECT(tally_vec_read(NULL, 0) == 0 && tally_vec_read_monotonic(NULL, 0) == 0, "");
			break;
		case 6: op_name = "vec_read_exact(NULL)"; EXPECT(tally_vec_read_exact(NULL, 0) == 0, ""); break;
		case 7: op_name = "vec_fold(NULL)"; tally_vec_fold(NULL); break;
		default: op_name = "vec_threshold(NULL)"; EXPECT(tally_vec_threshold(NULL) == 0, ""); break;
		}
	}
}
