/**
 * @file
 * tally/export/names.h - family names and help texts (private; include <tally/export.h>):
 * the error message, UTF-8 validation, the name rules of the header comment
 * (promtool's lint), the label rules (reserved names; an empty value is no
 * label), the hash of names, and building the families' names and helps.
 */
#ifndef TALLY_EXPORT_NAMES_H
#define TALLY_EXPORT_NAMES_H

#if !defined(TALLY__EXPORT_INSIDE)
#  error "tally/export/names.h is private: include <tally/export.h>"
#endif

/* Set e's message (printf-like, %s and %u only, to stay allocation-free and
 * free of locale); returns err. */
static inline int tally__export_fail(struct tally_export *e, int err, const char *fmt,
				     const char *s, unsigned u)
{
	char *o = e->tally__error, *end = e->tally__error + sizeof(e->tally__error) - 1;
	const char *p;
	for (p = fmt; *p && o < end; p++) {
		if (p[0] == '%' && p[1] == 's') {
			const char *q = s ? s : "(null)";
			size_t n = 0;
			/* Quote at most 60 bytes of the offending string. */
			for (; *q && o < end && n < 60; q++, n++) {
				/* As unsigned char: the same on every target
				 * whatever the signedness of char (bytes of
				 * UTF-8 pass, control characters do not). */
				unsigned char ch = (unsigned char)*q;
				if (ch >= 0x20 && ch != 0x7f)
					*o++ = *q;
				else
					*o++ = '?'; /* a control character */
			}
			if (*q && o + 3 <= end) {
				memcpy(o, "...", 3);
				o += 3;
			}
			p++;
		} else if (p[0] == '%' && p[1] == 'u') {
			char d[12];
			int n = 0;
			unsigned v = u;
			do
				d[n++] = (char)('0' + v % 10);
			while ((v /= 10) && n < 12);
			while (n && o < end)
				*o++ = d[--n];
			p++;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return err;
}


/* The name rules' word lists (promtool's lint), each an X-macro: a list
 * expands into the tests of a word against its words. */
#define TALLY__EXPORT_TYPES(X)                                                                    \
	X("counter") X("gauge") X("histogram") X("summary") X("info") X("stateset") X("untyped") \
	X("gaugehistogram")
#define TALLY__EXPORT_ABBREV(X)                                                                   \
	X("s") X("ms") X("us") X("ns") X("sec") X("b") X("kb") X("mb") X("gb") X("tb") X("pb")   \
	X("m") X("h") X("d")
/* Units promtool knows: base units may stand alone, not prefixed. */
#define TALLY__EXPORT_BASE(X)                                                                     \
	X("amperes") X("bytes") X("celsius") X("grams") X("joules") X("kelvin") X("meters")      \
	X("metres") X("seconds") X("volts")
#define TALLY__EXPORT_NONBASE(X)                                                                  \
	X("minutes") X("hours") X("days") X("weeks") X("kelvins") X("fahrenheit") X("rankine")   \
	X("inches") X("yards") X("miles") X("bits") X("calories") X("pounds") X("ounces")        \
	X("years")
#define TALLY__EXPORT_PREFIXES(X)                                                                 \
	X("pico") X("nano") X("micro") X("milli") X("centi") X("deci") X("deca") X("hecto")      \
	X("kilo") X("kibi") X("mega") X("mibi") X("mebi") X("giga") X("gibi") X("tera")          \
	X("tebi") X("peta") X("pebi") X("exa") X("exbi")
#define TALLY__EXPORT_SUFFIXES(X)                                                                 \
	X("_total") X("_created") X("_count") X("_sum") X("_bucket") X("_info") X("_gcount")     \
	X("_gsum")

/* A match of the word w[0..k) against a listed word: the length first (a
 * constant), then a memcmp of a constant length, which compilers make a
 * compare or two: a word is tested against a list in a few instructions
 * per listed word, with no strlen and no loop over a table (that was most
 * of registering 100,000 families). */
#define TALLY__EXPORT_IS(s)                                                                        \
	if (k == sizeof(s) - 1u && !memcmp(w, s, sizeof(s) - 1u))                                 \
		return true;
/* A prefix match: w is the prefix s and a unit after it. */
#define TALLY__EXPORT_IS_PREFIXED(s)                                                               \
	if (k > sizeof(s) - 1u && !memcmp(w, s, sizeof(s) - 1u) &&                                 \
	    (tally__export_is_base(w + sizeof(s) - 1u, k - (sizeof(s) - 1u)) ||                     \
	     tally__export_is_nonbase(w + sizeof(s) - 1u, k - (sizeof(s) - 1u))))                   \
		return true;

/* Is the word w[0..k) a metric type, an abbreviated unit, a base unit, a
 * non-base unit, a unit with a prefix? */
static inline bool tally__export_is_type(const char *w, size_t k)
{
	TALLY__EXPORT_TYPES(TALLY__EXPORT_IS)
	return false;
}

static inline bool tally__export_is_abbrev(const char *w, size_t k)
{
	TALLY__EXPORT_ABBREV(TALLY__EXPORT_IS)
	return false;
}

static inline bool tally__export_is_base(const char *w, size_t k)
{
	TALLY__EXPORT_BASE(TALLY__EXPORT_IS)
	return false;
}

static inline bool tally__export_is_nonbase(const char *w, size_t k)
{
	TALLY__EXPORT_NONBASE(TALLY__EXPORT_IS)
	return false;
}

static inline bool tally__export_is_prefixed(const char *w, size_t k)
{
	TALLY__EXPORT_PREFIXES(TALLY__EXPORT_IS_PREFIXED)
	return false;
}

/* Is the name n[0..len) ending with a reserved suffix ('_' and a word)? */
static inline bool tally__export_is_suffixed(const char *n, size_t len)
{
	const char *w;
	size_t k;
	for (w = n + len; w > n && w[-1] != '_'; w--)
		;
	if (w == n)
		return false; /* no '_': no suffix */
	w--;              /* the suffix's '_' */
	k = (size_t)(n + len - w);
	TALLY__EXPORT_SUFFIXES(TALLY__EXPORT_IS)
	return false;
}

/*
 * tally__export_check_name - 0 if name is a valid family name (see the header
 * comment), else -EINVAL with e's message set. what names the caller's
 * argument in the message. O(length of name).
 */
static inline int tally__export_check_name(struct tally_export *e, const char *name)
{
	const char *p, *w;
	size_t n;
	if (!name)
		return tally__export_fail(e, -EINVAL, "metric name is NULL", NULL, 0);
	n = strlen(name);
	if (!n)
		return tally__export_fail(e, -EINVAL, "metric name is empty", NULL, 0);
	if (n > TALLY_EXPORT_NAME_MAX)
		return tally__export_fail(e, -EINVAL, "metric name '%s' is longer than %u bytes",
					  name, TALLY_EXPORT_NAME_MAX);
	if (name[0] >= '0' && name[0] <= '9')
		return tally__export_fail(e, -EINVAL, "metric name '%s' starts with a digit", name,
					  0);
	if (name[0] == '_' && name[1] == '_')
		return tally__export_fail(
			e, -EINVAL, "metric name '%s' starts with '__' (reserved by Prometheus)",
			name, 0);
	for (p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return tally__export_fail(e, -EINVAL,
						  "metric name '%s' is not lowercase snake_case "
						  "([a-z_][a-z0-9_]*)",
						  name, 0);
	/* Each suffix is '_' and a word: only the last word can be one. */
	if (tally__export_is_suffixed(name, n))
		return tally__export_fail(e, -EINVAL,
					  "metric name '%s' ends with a reserved suffix "
					  "(_total, _created, _count, _sum, _bucket, _info, _gcount, "
					  "_gsum; counters get _total in the output)",
					  name, 0);
	for (w = name; *w;) {
		size_t k = 0;
		while (w[k] && w[k] != '_')
			k++;
		if (tally__export_is_type(w, k))
			return tally__export_fail(
				e, -EINVAL, "metric name '%s' contains a metric type as a word",
				name, 0);
		if (tally__export_is_abbrev(w, k))
			return tally__export_fail(
				e, -EINVAL,
				"metric name '%s' contains an abbreviated unit as a word "
				"(spell out a base unit: seconds, bytes)",
				name, 0);
		if (tally__export_is_nonbase(w, k))
			return tally__export_fail(
				e, -EINVAL,
				"metric name '%s' contains a non-base unit (use seconds, "
				"bytes, meters, grams, joules, celsius)",
				name, 0);
		/* (a prefixed unit is 7 letters or more: exa and days, the
		 * shortest prefix and unit; most words are shorter) */
		if (k >= 7 && tally__export_is_prefixed(w, k))
			return tally__export_fail(
				e, -EINVAL,
				"metric name '%s' contains a prefixed unit (use "
				"the base unit: seconds, bytes, ...)",
				name, 0);
		w += k;
		if (*w == '_')
			w++;
	}
	return 0;
}

/* tally__export_check_help - 0 if help is a valid help text, else -EINVAL. */
static inline int tally__export_check_help(struct tally_export *e, const char *name,
					   const char *help)
{
	size_t n = strlen(help);
	if (n > TALLY_EXPORT_HELP_MAX)
		return tally__export_fail(e, -EINVAL, "help text of '%s' is longer than %u bytes",
					  name, TALLY_EXPORT_HELP_MAX);
	if (!tally__utf8_ok(help, n))
		return tally__export_fail(e, -EINVAL, "help text of '%s' is not valid UTF-8", name,
					  0);
	return 0;
}

/* A help text with nothing but blanks is no help text: parsers trim it
 * away and promtool reports "no help text". */
static inline bool tally__export_help_given(const char *h)
{
	return h && h[strspn(h, " \t")] != '\0';
}

static inline char *tally__export_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = (char *)malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* Concatenate a, "_", b and c (any may be NULL) into a new string. */
static inline char *tally__export_join(const char *a, const char *b, const char *c)
{
	size_t na = a ? strlen(a) : 0, nb = b ? strlen(b) : 0, nc = c ? strlen(c) : 0;
	char *d = (char *)malloc(na + nb + nc + 2), *o = d;
	if (!d)
		return NULL;
	if (na) {
		memcpy(o, a, na);
		o += na;
		if (nb)
			*o++ = '_';
	}
	if (nb)
		memcpy(o, b, nb);
	o += nb;
	if (nc)
		memcpy(o, c, nc);
	o[nc] = '\0';
	return d;
}

/* Free what f owns (its name unless name_const, help unless help_const,
 * and series). */
static inline void tally__export_family_free(struct tally__export_family *f)
{
	unsigned c;
	if (!f->name_const)
		free(f->name);
	if (!f->help_const)
		free(f->help);
	for (c = 0; c < f->nr_cols; c++)
		free(f->col_labels[c]);
	free(f->cols);
	free(f->col_labels);
	f->name = f->help = NULL;
	f->help_const = f->name_const = 0;
	f->cols = NULL;
	f->col_labels = NULL;
	f->nr_cols = f->cap_cols = 0;
}

/* Append to e's message (cut where it is full). */
static inline void tally__export_fail_more(struct tally_export *e, const char *more)
{
	size_t n = strlen(e->tally__error), m = strlen(more);
	if (n + m >= sizeof(e->tally__error))
		m = sizeof(e->tally__error) - 1 - n;
	memcpy(e->tally__error + n, more, m);
	e->tally__error[n + m] = '\0';
}

/* Length of a packed label list "n\0v\0...\0" with its final NUL. */
static inline size_t tally__export_labels_len(const char *l)
{
	const char *p = l;
	while (*p)
		p += strlen(p) + 1; /* a name, then its value */
	return (size_t)(p - l) + 1;
}

/* FNV-1a over p[0..n), from h (a seed, or the hash so far). */
static inline uint64_t tally__export_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	size_t i;
	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#define TALLY__EXPORT_HASH_SEED 0xcbf29ce484222325ull

/* Do two packed label lists (NULL: none) name the same series? */
static inline bool tally__export_labels_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return tally__export_labels_len(a) == tally__export_labels_len(b) &&
	       !memcmp(a, b, tally__export_labels_len(a));
}

static inline bool tally__export_label_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/*
 * Why label name l[0..n) cannot label a counter or gauge, or NULL if it
 * can: le belongs to histograms' buckets and quantile to summaries
 * (promtool rejects the whole page for a counter or gauge with one).
 */
static inline const char *tally__export_label_reserved(const char *l, size_t n)
{
	if (n == 2 && !memcmp(l, "le", 2))
		return "a label named le is a histogram bucket's own, written by the export "
		       "(promtool rejects a counter or gauge with one)";
	if (n == 8 && !memcmp(l, "quantile", 8))
		return "a label named quantile is for summaries only (promtool rejects a "
		       "counter or gauge with one)";
	return NULL;
}

/*
 * Split the name of vector item `item`, "base" or
 * "base{name=\"value\",...}", into its base (*base_len bytes) and its
 * labels, packed and sorted by name into *out (malloc'd; NULL when there
 * are no braces, or every value is empty). Label names are
 * [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved by
 * Prometheus), not le or quantile (tally__export_label_reserved), each
 * once; values are quoted UTF-8 with \\, \" and \n escaped (the text
 * format's escapes); no blanks, no trailing comma; nothing after the '}'.
 * A label whose value is empty is dropped (Prometheus and OpenMetrics read
 * it as the label's absence), and *dropped (if not NULL) says whether one
 * was. Returns 0, -EINVAL (e's message says what is wrong, quoting the
 * name, and item unless it is ~0u) or -ENOMEM.
 */
static inline int tally__export_parse_labels(struct tally_export *e, const char *name,
					     unsigned item, size_t *base_len, char **out,
					     bool *dropped)
{
	const char *brace = strchr(name, '{'), *p;
	const char *why = NULL;
	char *buf, *o, *sorted, **pairs;
	size_t n = strlen(name);
	unsigned nr = 0, i, j, kept = 0;
	*out = NULL;
	if (dropped)
		*dropped = false;
	*base_len = brace ? (size_t)(brace - name) : n;
	if (!brace)
		return 0;
	/* Unescaped values are never longer than their source. */
	buf = (char *)malloc(n + 2);
	pairs = (char **)malloc((n / 4 + 1) * sizeof(char *));
	if (!buf || !pairs) {
		free(buf);
		free(pairs);
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	}
	o = buf;
	p = brace + 1;
	for (;;) {
		char *v;
		pairs[nr] = o;
		if (!tally__export_label_start(*p)) {
			why = "a label name must start with a letter or '_'";
			break;
		}
		if (p[0] == '_' && p[1] == '_') {
			why = "a label name starts with '__' (reserved by Prometheus)";
			break;
		}
		while (tally__export_label_start(*p) || (*p >= '0' && *p <= '9'))
			*o++ = *p++;
		why = tally__export_label_reserved(pairs[nr], (size_t)(o - pairs[nr]));
		if (why)
			break;
		*o++ = '\0';
		if (p[0] != '=' || p[1] != '"') {
			why = "a label name must be followed by =\"value\"";
			break;
		}
		p += 2;
		v = o;
		while (*p && *p != '"') {
			if (*p == '\\') {
				if (p[1] == '\\' || p[1] == '"')
					*o++ = p[1];
				else if (p[1] == 'n')
					*o++ = '\n';
				else
					break;
				p += 2;
			} else {
				*o++ = *p++;
			}
		}
		if (*p != '"') {
			why = *p ? "a label value has an escape other than \\\\, \\\" or \\n"
				 : "a label value has no closing quote";
			break;
		}
		if (!tally__utf8_ok(v, (size_t)(o - v))) {
			why = "a label value is not valid UTF-8";
			break;
		}
		*o++ = '\0';
		nr++;
		p++;
		if (*p == ',') {
			p++;
			continue;
		}
		if (p[0] != '}' || p[1]) {
			why = "labels must be name=\"value\" pairs separated by ',' and end "
			      "with the name's last '}'";
			break;
		}
		break;
	}
	/* Sorted by name (insertion: few labels), each name once. */
	for (i = 1; !why && i < nr; i++) {
		char *x = pairs[i];
		for (j = i; j > 0 && strcmp(pairs[j - 1], x) > 0; j--)
			pairs[j] = pairs[j - 1];
		pairs[j] = x;
	}
	for (i = 1; !why && i < nr; i++)
		if (!strcmp(pairs[i - 1], pairs[i]))
			why = "a label name appears twice";
	/* An empty value is no label: dropped (after the check above, so
	 * a="",a="1" is still a name twice). */
	for (i = 0; !why && i < nr; i++) {
		if (pairs[i][strlen(pairs[i]) + 1])
			pairs[kept++] = pairs[i];
		else if (dropped)
			*dropped = true;
	}
	sorted = why || !kept ? NULL : (char *)malloc((size_t)(o - buf) + 1);
	if (!why && sorted) {
		char *q = sorted;
		for (i = 0; i < kept; i++) {
			size_t a = strlen(pairs[i]) + 1, b = strlen(pairs[i] + a) + 1;
			memcpy(q, pairs[i], a + b);
			q += a + b;
		}
		*q = '\0';
	}
	free(buf);
	free(pairs);
	if (why) {
		if (item == ~0u)
			tally__export_fail(e, -EINVAL, "name '%s': ", name, 0);
		else
			tally__export_fail(e, -EINVAL, "item %u's name '%s': ", name, item);
		/* The name was quoted first; then the reason. */
		tally__export_fail_more(e, why);
		return -EINVAL;
	}
	if (kept && !sorted)
		return tally__export_fail(e, -ENOMEM, "out of memory", NULL, 0);
	*out = sorted;
	return 0;
}

/* v in decimal at d (room for 11 bytes), NUL-ended; returns d. */
static inline char *tally__export_utoa(char *d, unsigned v)
{
	unsigned len = 0, x = v, m;
	do
		len++;
	while ((x /= 10));
	for (m = 0; m < len; m++, v /= 10)
		d[len - 1 - m] = (char)('0' + v % 10);
	d[len] = '\0';
	return d;
}

/* The name of unnamed item i, "item<i>", at d (room for 16 bytes). */
static inline const char *tally__export_item_name(char *d, unsigned i)
{
	strcpy(d, "item");
	tally__export_utoa(d + 4, i);
	return d;
}

/* Fill fams[0..n) for items of a source: name prefix_item[suffix], help,
 * kind. names/helps/kinds may be NULL. */
static inline void tally__export_fill_families(struct tally__export_family *fams, unsigned n,
					       const char *prefix, const char *const *names,
					       const char *const *helps, const unsigned char *kinds,
					       const char *what, const struct tally_vec *vec)
{
	unsigned i;
	for (i = 0; i < n; i++) {
		char num[16 + 12];
		const char *nm = names ? names[i] : NULL;
		if (!nm && !names && vec)
			nm = tally_vec_item_name(vec, i);
		if (!nm)
			nm = tally__export_item_name(num, i);
		fams[i].name = tally__export_join(prefix, nm, NULL);
		if (helps && tally__export_help_given(helps[i]))
			fams[i].help = tally__export_strdup(helps[i]);
		else
			fams[i].help = tally__export_join(what, NULL, NULL);
		fams[i].kind = kinds ? kinds[i] : (unsigned char)TALLY_EXPORT_COUNTER;
		fams[i].column = i;
		fams[i].in_stat = 1;
	}
}

#endif /* TALLY_EXPORT_NAMES_H */
