/*
 * fuzz_inflight.h - tally_inflight in fuzz_model: the per-type gauges,
 * the isolation throttle's verdicts and statistics against a model;
 * op_inflight(), one step.
 *
 * A part of fuzz_model.c, which includes every part into one translation
 * unit (every primitive's objects share that unit's per-CPU arenas, which
 * the corpus's coverage depends on); not a header of its own.
 */
#ifndef TALLY_FUZZ_MODEL
#  error "tests/fuzz/fuzz_inflight.h is a part of tests/fuzz/fuzz_model.c"
#endif

/* ---- tally_inflight ---------------------------------------------------------- */
#define LONG_WAIT_NS 200000u /* skip allowed() calls that would wait longer */
static struct {
	struct tally_inflight f;
	int live;
	unsigned nr;
	uint64_t wait_ns;
	tally_uword isolated[TALLY_INFLIGHT_TYPES_MAX];
	struct tally_inflight_stats st;
} fl;

/* The evictable callback: ev[0][t] on the first pass over the types,
 * ev[1][t] after that. */
static struct {
	tally_uword ev[2][TALLY_INFLIGHT_TYPES_MAX];
	unsigned per_pass, calls;
} pool;

static tally_uword pool_evictable(void *arg, unsigned type)
{
	EXPECT(arg == &pool, "the callback gets its arg");
	EXPECT(type < fl.nr, "type %u of %u", type, fl.nr);
	return pool.ev[pool.calls++ < pool.per_pass ? 0 : 1][type];
}

static int model_over(tally_uword iso, tally_uword ev, const struct tally_inflight_caller *who)
{
	if (who && who->exempt)
		return 0;
	if (!who || who->io_fs)
		ev >>= 3;
	return iso > ev / 2u;
}

static unsigned model_mask(unsigned types, int pass, const struct tally_inflight_caller *who,
			   int *has)
{
	unsigned m = 0;
	*has = 0;
	for (unsigned t = 0; t < fl.nr; t++) {
		if (!(types & (1u << t)) || !pool.ev[pass][t])
			continue;
		*has = 1;
		if (!model_over(fl.isolated[t], pool.ev[pass][t], who))
			m |= 1u << t;
	}
	return m;
}

static void inflight_check(void)
{
	struct tally_inflight_stats s;
	for (unsigned t = 0; t < fl.nr; t++)
		EXPECT(tally_inflight_read(&fl.f, t) == fl.isolated[t], "type %u: %llu, model %llu", t,
		       ULL(tally_inflight_read(&fl.f, t)), ULL(fl.isolated[t]));
	for (unsigned t = fl.nr; t < fl.nr + 2u; t++)
		EXPECT(tally_inflight_read(&fl.f, t) == 0, "bad type %u", t);
	EXPECT(tally_inflight_waiters(&fl.f) == 0, "");
	EXPECT(tally_inflight_wait_ns(&fl.f) == fl.wait_ns, "");
	tally_inflight_stats(&fl.f, &s);
	EXPECT(s.throttled == fl.st.throttled && s.woken == fl.st.woken &&
		       s.timeouts == fl.st.timeouts && s.gave_up == fl.st.gave_up &&
		       s.fatal == fl.st.fatal,
	       "stats %llu %llu %llu %llu %llu, model %llu %llu %llu %llu %llu", ULL(s.throttled),
	       ULL(s.woken), ULL(s.timeouts), ULL(s.gave_up), ULL(s.fatal), ULL(fl.st.throttled),
	       ULL(fl.st.woken), ULL(fl.st.timeouts), ULL(fl.st.gave_up), ULL(fl.st.fatal));
}

static void op_inflight(struct input *in)
{
	uint8_t k = u8(in);
	switch (k % 8) {
	case 0: { /* init */
		static const uint64_t waits[] = {1, 10, 1000, 100000, 0,
						 TALLY_INFLIGHT_WAIT_MAX_NS};
		uint8_t a = u8(in), b = u8(in);
		unsigned nr = 1u + a % TALLY_INFLIGHT_TYPES_MAX;
		uint64_t w = waits[b % 6];
		op_name = "inflight_init";
		if (a >= 240 || b >= 240) {
			if (a >= 240)
				nr = (a & 1) ? 0u : TALLY_INFLIGHT_TYPES_MAX + 1u;
			else
				w = TALLY_INFLIGHT_WAIT_MAX_NS + 1u + (b & 3);
			/* Refused: a live f is untouched (checked below). */
			EXPECT(tally_inflight_init(fl.live ? &fl.f : NULL, nr, w) == -EINVAL,
			       "nr %u wait %llu", nr, ULL(w));
			struct tally_inflight scratch;
			EXPECT(tally_inflight_init(&scratch, nr, w) == -EINVAL, "nr %u wait %llu", nr,
			       ULL(w));
			if (fl.live)
				inflight_check();
			break;
		}
		if (fl.live)
			tally_inflight_destroy(&fl.f);
		fl.live = 0;
		EXPECT(tally_inflight_init(&fl.f, nr, w) == 0, "nr %u wait %llu", nr, ULL(w));
		fl.live = 1;
		fl.nr = nr;
		fl.wait_ns = w ? w : TALLY_INFLIGHT_WAIT_NS;
		memset(fl.isolated, 0, sizeof(fl.isolated));
		memset(&fl.st, 0, sizeof(fl.st));
		inflight_check();
		break;
	}
	case 1:
		op_name = "inflight_destroy";
		if (fl.live)
			tally_inflight_destroy(&fl.f);
		fl.live = 0;
		break;
	case 2:
	case 3: { /* isolate / putback */
		unsigned t = pick_item(in, fl.nr);
		tally_uword n = pick_word(in);
		int put = k % 8 == 3, rc;
		op_name = put ? "inflight_putback" : "inflight_isolate";
		if (!fl.live)
			break;
		if (put && t < fl.nr && u8(in) % 2) /* often exactly what is there */
			n = fl.isolated[t];
		rc = put ? tally_inflight_putback(&fl.f, t, n) : tally_inflight_isolate(&fl.f, t, n);
		if (t >= fl.nr || (put ? n > fl.isolated[t] : UW(fl.isolated[t] + n) < n)) {
			EXPECT(rc == -EINVAL, "type %u n %llu: rc %d", t, ULL(n), rc);
		} else {
			EXPECT(rc == 0, "type %u n %llu: rc %d", t, ULL(n), rc);
			fl.isolated[t] = put ? UW(fl.isolated[t] - n) : UW(fl.isolated[t] + n);
		}
		inflight_check();
		break;
	}
	case 4: { /* too_many */
		static const struct tally_inflight_caller who[3] = {
			{true, true, NULL}, {false, true, NULL}, {false, false, NULL}};
		unsigned t = pick_item(in, fl.nr);
		tally_uword ev = pick_word(in);
		uint8_t w = u8(in) % 4;
		const struct tally_inflight_caller *c = w == 3 ? NULL : &who[w];
		op_name = "inflight_too_many";
		if (!fl.live)
			break;
		int want = t < fl.nr && model_over(fl.isolated[t], ev, c);
		EXPECT(tally_inflight_too_many(&fl.f, t, ev, c) == want, "type %u ev %llu who %u", t,
		       ULL(ev), w);
		break;
	}
	case 5: { /* allowed */
		int dying = 0, has0, has1;
		struct tally_inflight_caller who = {false, false, &dying};
		uint8_t w = u8(in), sel = u8(in);
		unsigned types = u8(in);
		bool fatal_out = true, *fatal = (sel & 1) ? NULL : &fatal_out;
		op_name = "inflight_allowed";
		if (!fl.live)
			break;
		who.exempt = (w & 3) == 0;
		who.io_fs = (w & 4) != 0;
		dying = (w & 8) != 0;
		const struct tally_inflight_caller *c = (w & 16) ? NULL : &who;
		pool.per_pass = 0;
		pool.calls = 0;
		for (unsigned t = 0; t < fl.nr; t++) {
			for (int p = 0; p < 2; p++) {
				uint8_t e = u8(in);
				pool.ev[p][t] = e % 4 == 0 ? 0 : e % 4 == 1 ? pick_word(in) : UW(e);
			}
			if (types & (1u << t))
				pool.per_pass++;
		}
		/* The model: check, then at most one wait and one more check. */
		unsigned want = model_mask(types, 0, c, &has0), calls = pool.per_pass;
		int wait = has0 && !want, want_fatal = 0;
		if (wait) {
			if (fl.wait_ns > LONG_WAIT_NS)
				break; /* a real wait: not in a fuzzer */
			fl.st.throttled++;
			fl.st.timeouts++; /* nobody wakes it */
			if (c && dying) {
				fl.st.fatal++;
				want_fatal = 1;
			} else {
				calls += pool.per_pass;
				want = model_mask(types, 1, c, &has1);
				if (has1 && !want)
					fl.st.gave_up++;
			}
		}
		unsigned got = tally_inflight_allowed(&fl.f, types, pool_evictable, &pool, c, fatal);
		EXPECT(got == want, "types %#x who %u: %#x, model %#x", types, w, got, want);
		EXPECT(pool.calls == calls, "evictable called %u times, model %u", pool.calls, calls);
		if (fatal)
			EXPECT(*fatal == (bool)want_fatal, "fatal %d, model %d", *fatal, want_fatal);
		inflight_check();
		break;
	}
	case 6:
		op_name = "inflight_check";
		if (fl.live) {
			tally_inflight_wake(&fl.f);
			inflight_check();
		}
		break;
	default: {
		struct tally_inflight_stats s;
		bool fatal = true;
		switch (u8(in) % 12) {
		case 0: op_name = "inflight_init(NULL)"; EXPECT(tally_inflight_init(NULL, 1, 0) == -EINVAL, ""); break;
		case 1: op_name = "inflight_destroy(NULL)"; tally_inflight_destroy(NULL); break;
		case 2: op_name = "inflight_wait_ns(NULL)"; EXPECT(tally_inflight_wait_ns(NULL) == 0, ""); break;
		case 3: op_name = "inflight_read(NULL)"; EXPECT(tally_inflight_read(NULL, 0) == 0, ""); break;
		case 4: op_name = "inflight_waiters(NULL)"; EXPECT(tally_inflight_waiters(NULL) == 0, ""); break;
		case 5: op_name = "inflight_wake(NULL)"; tally_inflight_wake(NULL); break;
		case 6: op_name = "inflight_isolate(NULL)"; EXPECT(tally_inflight_isolate(NULL, 0, 1) == -EINVAL, ""); break;
		case 7: op_name = "inflight_putback(NULL)"; EXPECT(tally_inflight_putback(NULL, 0, 0) == -EINVAL, ""); break;
		case 8: op_name = "inflight_too_many(NULL)"; EXPECT(!tally_inflight_too_many(NULL, 0, 0, NULL), ""); break;
		case 9: op_name = "inflight_allowed(NULL)";
			EXPECT(tally_inflight_allowed(NULL, 1u, pool_evictable, &pool, NULL, &fatal) == 0 && !fatal, "");
			if (fl.live) {
				fatal = true;
				EXPECT(tally_inflight_allowed(&fl.f, 1u, NULL, &pool, NULL, &fatal) == 0 && !fatal, "");
			}
			break;
		case 10: op_name = "inflight_stats(NULL)";
			memset(&s, 0xa5, sizeof(s));
			tally_inflight_stats(NULL, &s);
			EXPECT(s.throttled == 0 && s.woken == 0 && s.timeouts == 0 && s.gave_up == 0 && s.fatal == 0, "");
			if (fl.live)
				tally_inflight_stats(&fl.f, NULL);
			break;
		default: op_name = "inflight_wake(destroyed)";
			if (!fl.live) { /* a destroyed gauge set: every call fails cleanly */
				static struct tally_inflight gone;
				static int made;
				if (!made) {
					EXPECT(tally_inflight_init(&gone, 2, 1) == 0, "");
					tally_inflight_destroy(&gone);
					made = 1;
				}
				EXPECT(tally_inflight_isolate(&gone, 0, 1) == -EINVAL, "");
				EXPECT(tally_inflight_read(&gone, 0) == 0, "");
				EXPECT(tally_inflight_allowed(&gone, 3u, pool_evictable, &pool, NULL, NULL) == 0, "");
				tally_inflight_wake(&gone);
				tally_inflight_destroy(&gone);
			}
			break;
		}
		if (fl.live)
			inflight_check();
	}
	}
}
