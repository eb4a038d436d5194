/*
 * fuzz_hist.h - tally_hist in fuzz_model: every record kept (up to
 * HIST_MAX), its own bucket function; snapshots (since reset and raw)
 * checked bucket by bucket with their counts, sums and quantiles; op_hist(),
 * one step.
 *
 * A part of fuzz_model.c, which includes every part into one translation
 * unit (every primitive's objects share that unit's per-CPU arenas, which
 * the corpus's coverage depends on); not a header of its own.
 */
#ifndef TALLY_FUZZ_MODEL
#  error "tests/fuzz/fuzz_hist.h is a part of tests/fuzz/fuzz_model.c"
#endif

/* ---- tally_hist -------------------------------------------------------------
 * The model: the layout's options and every (value, n) recorded since init
 * (up to HIST_MAX entries; further records are refused by the fuzzer, not
 * the library), a reset mark, and its own bucket function. */
#define HIST_MAX 512
static struct {
	int live;
	struct tally_hist h;
	uint64_t lowest, highest; /* log-linear */
	unsigned p;
	uint64_t bounds[8];
	unsigned nr_bounds;
	int64_t v[HIST_MAX];
	uint64_t n[HIST_MAX];
	unsigned nr, reset_at; /* entries; the first after the last reset */
} hm;

/* The model's bucket position of v (written apart from hist/layout.h). */
static unsigned hist_model_pos(uint64_t v)
{
	unsigned e = 0, sh, i;
	uint64_t idx, first;
	if (hm.nr_bounds) {
		for (i = 0; i < hm.nr_bounds; i++)
			if (v <= hm.bounds[i])
				return i + 1;
		return hm.nr_bounds + 1;
	}
	if (v < hm.lowest)
		return 0;
	if (v > hm.highest) {
		uint64_t x = hm.highest;
		while (x >> (e + 1))
			e++;
		sh = e > hm.p ? e - hm.p : 0;
		idx = ((uint64_t)sh << hm.p) + (x >> sh);
		e = 0;
		x = hm.lowest;
		while (x >> (e + 1))
			e++;
		sh = e > hm.p ? e - hm.p : 0;
		first = ((uint64_t)sh << hm.p) + (x >> sh);
		return (unsigned)(idx - first) + 2;
	}
	while (v >> (e + 1))
		e++;
	sh = e > hm.p ? e - hm.p : 0;
	idx = ((uint64_t)sh << hm.p) + (v >> sh);
	e = 0;
	{
		uint64_t x = hm.lowest;
		while (x >> (e + 1))
			e++;
		sh = e > hm.p ? e - hm.p : 0;
		first = ((uint64_t)sh << hm.p) + (x >> sh);
	}
	return (unsigned)(idx - first) + 1;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* A snapshot (since reset, or raw) against the model; q checked too. */
static void hist_check(int raw, double q)
{
	struct tally_hist_snap s;
	unsigned i, from = raw ? 0 : hm.reset_at;
	uint64_t count = 0, sum = 0;
	EXPECT(tally_hist_snap_init(&s, &hm.h) == 0, "");
	EXPECT((raw ? tally_hist_snapshot_raw(&hm.h, &s) : tally_hist_snapshot(&hm.h, &s)) == 0, "");
	{
		uint64_t *want = (uint64_t *)calloc(s.nr_buckets, sizeof(uint64_t));
		EXPECT(want != NULL, "");
		for (i = from; i < hm.nr; i++) {
			unsigned j = hist_model_pos((uint64_t)hm.v[i]);
			EXPECT(j < s.nr_buckets, "value %lld: position %u of %u", LL(hm.v[i]), j,
			       s.nr_buckets);
			want[j] += hm.n[i];
			count += hm.n[i];
			sum += (uint64_t)hm.v[i] * hm.n[i];
		}
		for (i = 0; i < s.nr_buckets; i++)
			EXPECT(s.counts[i] == want[i], "bucket %u: %llu, model %llu", i,
			       (unsigned long long)s.counts[i], (unsigned long long)want[i]);
		free(want);
	}
	EXPECT(s.count == count && s.sum == sum, "count %llu sum %llu, model %llu %llu",
	       (unsigned long long)s.count, (unsigned long long)s.sum,
	       (unsigned long long)count, (unsigned long long)sum);
	if (!(q >= 0 && q <= 1) || !count) {
		EXPECT(isnan(tally_hist_quantile(&s, q)), "q %g", q);
	} else if (!hm.nr_bounds) {
		/* the exact sample quantile: rank ceil(q count) in sorted order */
		int64_t *sorted = (int64_t *)malloc((hm.nr - from) * sizeof(int64_t));
		uint64_t rank = (uint64_t)ceil(q * (double)count), cum = 0;
		double got = tally_hist_quantile(&s, q), x = 0;
		unsigned nv = hm.nr - from;
		EXPECT(sorted != NULL, "");
		memcpy(sorted, hm.v + from, nv * sizeof(int64_t));
		/* the n of each value: sort (value, n) by value through indexes */
		qsort(sorted, nv, sizeof(int64_t), cmp_i64);
		if (rank < 1)
			rank = 1;
		for (i = 0; i < nv && cum < rank; i++) {
			uint64_t n = 0;
			for (unsigned k = from; k < hm.nr; k++)
				if (hm.v[k] == sorted[i])
					n += hm.n[k];
			/* equal values appear once per entry in sorted: count them once */
			if (i && sorted[i] == sorted[i - 1])
				continue;
			cum += n;
			x = (double)sorted[i];
		}
		if (x >= (double)hm.lowest && x <= (double)hm.highest)
			EXPECT(fabs(got - x) <= ldexp(x, -(int)hm.p - 1), "q %g: %f, exact %f", q,
			       got, x);
		else
			EXPECT(got == (double)(x < (double)hm.lowest ? hm.lowest : hm.highest),
			       "q %g outside the range: %f", q, got);
		free(sorted);
	}
	tally_hist_snap_destroy(&s);
}

static int64_t pick_hist_value(struct input *in)
{
	uint8_t k = u8(in);
	int64_t small = u8(in);
	switch (k % 8) {
	case 0: return small;
	case 1: return -1 - small;
	case 2: return (int64_t)hm.lowest - small % 3 + 1;
	case 3: return (int64_t)(hm.nr_bounds ? hm.bounds[small % hm.nr_bounds] : hm.highest) +
		       small % 3 - 1;
	case 4: return INT64_MAX - small;
	case 5: return (int64_t)1 << (u8(in) % 63);
	default: return (int64_t)(bytes(in, 5));
	}
}

static void op_hist(struct input *in)
{
	uint8_t k = u8(in);
	switch (k % 8) {
	case 0: { /* init: log-linear or bounds, sometimes invalid */
		struct tally_hist_opts o;
		struct tally_hist fresh;
		uint64_t b[8];
		unsigned nb = 0, i;
		int want;
		memset(&o, 0, sizeof(o));
		op_name = "hist_init";
		if (u8(in) % 3 == 0) {
			nb = u8(in) % 9; /* 0: invalid */
			for (i = 0; i < nb; i++)
				b[i] = (i ? b[i - 1] : 0) + u8(in) % 100; /* maybe not increasing */
			o.bounds = b;
			o.nr_bounds = nb;
			want = nb ? 0 : -EINVAL;
			for (i = 1; i < nb; i++)
				if (b[i] <= b[i - 1])
					want = -EINVAL;
		} else {
			o.lowest = (uint64_t)u8(in) * (u8(in) % 2 ? 1000 : 1);
			o.highest = o.lowest + bytes(in, 4);
			o.precision = u8(in) % 16; /* 15: invalid */
			if (u8(in) % 8 == 0)
				o.lowest = o.highest + 1; /* invalid unless both wrap to 0 */
			want = o.precision > TALLY_HIST_PRECISION_MAX || o.lowest > o.highest ? -EINVAL : 0;
		}
		EXPECT(tally_hist_init(&fresh, &o) == want, "opts");
		if (want)
			break;
		if (hm.live)
			tally_hist_destroy(&hm.h);
		hm.h = fresh;
		hm.live = 1;
		hm.nr = hm.reset_at = 0;
		hm.nr_bounds = nb;
		memcpy(hm.bounds, b, nb * sizeof(uint64_t));
		hm.lowest = o.lowest;
		hm.highest = o.highest;
		hm.p = o.precision ? o.precision : TALLY_HIST_PRECISION_DEFAULT;
		if (!nb && !o.lowest && !o.highest) {
			hm.lowest = TALLY_HIST_LOWEST_DEFAULT;
			hm.highest = TALLY_HIST_HIGHEST_DEFAULT;
		}
		break;
	}
	case 1:
	case 2: { /* record, record_n */
		int64_t v = pick_hist_value(in);
		uint64_t n = 1;
		int r, want = v < 0 ? -EINVAL : 0;
		if (!hm.live || hm.nr == HIST_MAX)
			break;
		if (k % 8 == 2) {
			uint8_t c = u8(in);
			n = c % 4 == 0 ? 0 : c % 4 == 1 ? TALLY_HIST_N_MAX + (c >> 7) : c;
			if (n > TALLY_HIST_N_MAX)
				want = -EINVAL;
			op_name = "hist_record_n";
			r = tally_hist_record_n(&hm.h, v, n);
		} else {
			op_name = "hist_record";
			r = tally_hist_record(&hm.h, v);
		}
		EXPECT(r == want, "record %lld x %llu: %d", LL(v), (unsigned long long)n, r);
		if (!want && n) {
			hm.v[hm.nr] = v;
			hm.n[hm.nr++] = n;
		}
		break;
	}
	case 3:
	case 4: { /* snapshot (since reset or raw) and a quantile */
		uint8_t c = u8(in);
		double q = c < 8 ? (c == 0 ? NAN : c == 1 ? -0.5 : 1.5) : (double)(c - 8) / 247.0;
		if (!hm.live)
			break;
		op_name = k % 8 == 3 ? "hist_snapshot" : "hist_snapshot_raw";
		hist_check(k % 8 == 4, q);
		break;
	}
	case 5: /* reset */
		if (!hm.live)
			break;
		op_name = "hist_reset";
		EXPECT(tally_hist_reset(&hm.h) == 0, "");
		hm.reset_at = hm.nr;
		break;
	case 6: { /* delta of two snapshots around records */
		struct tally_hist_snap a, b, d;
		if (!hm.live)
			break;
		op_name = "hist_snap_delta";
		EXPECT(tally_hist_snap_init(&a, &hm.h) == 0 && tally_hist_snap_init(&b, &hm.h) == 0 &&
			       tally_hist_snap_init(&d, &hm.h) == 0,
		       "");
		EXPECT(tally_hist_snapshot_raw(&hm.h, &a) == 0, "");
		if (hm.nr < HIST_MAX && tally_hist_record(&hm.h, 7) == 0) {
			hm.v[hm.nr] = 7;
			hm.n[hm.nr++] = 1;
		}
		EXPECT(tally_hist_snapshot_raw(&hm.h, &b) == 0, "");
		EXPECT(tally_hist_snap_delta(&d, &b, &a) == 0, "");
		EXPECT(d.count == b.count - a.count && d.sum == b.sum - a.sum, "");
		EXPECT(tally_hist_snap_delta(&d, &a, &b) == (b.count > a.count ? -ERANGE : 0), "");
		EXPECT(tally_hist_snap_merge(&d, &a) == 0, "");
		tally_hist_snap_destroy(&a);
		tally_hist_snap_destroy(&b);
		tally_hist_snap_destroy(&d);
		break;
	}
	default: /* NULL everywhere */
		switch (u8(in) % 8) {
		case 0: op_name = "hist_init(NULL)"; EXPECT(tally_hist_init(NULL, NULL) == -EINVAL, ""); break;
		case 1: op_name = "hist_record(NULL)"; EXPECT(tally_hist_record(NULL, 1) == -EINVAL, ""); break;
		case 2: op_name = "hist_record_n(NULL)";
			EXPECT(tally_hist_record_n(NULL, 1, 1) == -EINVAL, "");
			break;
		case 3: op_name = "hist_reset(NULL)"; EXPECT(tally_hist_reset(NULL) == -EINVAL, ""); break;
		case 4: op_name = "hist_snapshot(NULL)";
			EXPECT(tally_hist_snapshot(NULL, NULL) == -EINVAL, "");
			break;
		case 5: op_name = "hist_quantile(NULL)"; EXPECT(isnan(tally_hist_quantile(NULL, 0.5)), ""); break;
		case 6: op_name = "hist_snap_merge(NULL)";
			EXPECT(tally_hist_snap_merge(NULL, NULL) == -EINVAL, "");
			break;
		default: op_name = "hist_destroy(NULL)"; tally_hist_destroy(NULL); break;
		}
	}
}
