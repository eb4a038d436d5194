/*
 * fuzz_export - the exporter's renderers fed arbitrary metric names, help
 * texts, item names and group names (bytes that include quotes,
 * backslashes, newlines, slashes, invalid UTF-8, units, reserved suffixes,
 * uppercase and empty strings), from a fixed-seed PRNG.
 *
 * Every call must either succeed or fail with -EINVAL and a message. Every
 * successful render is checked by a parser written here from the formats'
 * grammars (not by the renderer's code): OpenMetrics 1.0 (metadata then
 * samples per family, _total samples for counters, only \\ \" \n escapes,
 * valid UTF-8, integer values, "# EOF" last) and text 0.0.4 (HELP/TYPE name
 * the sample, \\ and \n escapes in help); label values decode to exactly
 * the group paths the tree has, no series twice. With an output directory
 * it also writes the first renders as files (text 0.0.4 and JSON) for
 * promtool and jq (tests/export/fuzz.sh).
 *
 *   fuzz_export [ITERATIONS [SEED [OUTDIR [NFILES]]]]
 *
 * Exit 0 when every check held; 1 with the failing input printed.
 */
#define _GNU_SOURCE
#include <tally/rstat.h>
#include <tally/export_rstat.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static int failures;
static unsigned long iteration;
static unsigned long renders_ok, renders_failed, regs_ok, regs_failed, labelled;

static void fail(const char *out, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fuzz_export: iteration %lu: ", iteration);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (out)
		fprintf(stderr, "---- output\n%s---- end\n", out);
	failures++;
}

/* ---- input generators -------------------------------------------------------- */

static void gen_name(char *out, size_t size)
{
	static const char *const valid[] = {"a", "b", "requests", "x9", "bytes", "seconds",
					     "local", "thermometers", "io", "page_faults", "_"};
	static const char *const pieces[] = {
		"a", "b", "requests", "x9", "_", "__", "bytes", "seconds", "ms", "kilo",
		"kilobytes", "total", "count", "sum", "Upper", "camelCase", "-", ":", "\xc3\xa9",
		"9", "0", "counter", "gauge", "info", "local", "s", "minutes", "bits", " ",
		"created", "bucket", "thermometers", "millis", "nano", "\"", "\\", "\n", "",
	};
	size_t n = 0;
	unsigned k = 1 + below(4), i, adversarial = !below(3);
	out[0] = '\0';
	for (i = 0; i < k; i++) {
		const char *p = adversarial ? pieces[below(sizeof(pieces) / sizeof(pieces[0]))]
					    : valid[below(sizeof(valid) / sizeof(valid[0]))];
		size_t l = strlen(p);
		if (i && below(2) && n + 1 < size)
			out[n++] = '_';
		if (n + l + 1 >= size)
			break;
		memcpy(out + n, p, l);
		n += l;
		out[n] = '\0';
	}
	out[n] = '\0';
}

/* Arbitrary text: printable ASCII, the characters formats escape, control
 * characters, valid multi-byte UTF-8 and invalid bytes. */
static void gen_text(char *out, size_t size, unsigned maxlen, int clean)
{
	/* clean: what a group name may hold (no '/', no invalid UTF-8, not
	 * empty) but still everything the formats must escape. */
	static const char *const ok[] = {"a", "Z", " ", "\"", "\\", "\n", "\r", "\t", "{",
					  "}", "=", ",", "#", "\xc3\xa9", "\xf0\x9f\x98\x80", "\\n",
					  "}\"", "0"};
	static const char *const pieces[] = {
		"a", "Z", " ", "\"", "\\", "\n", "\r", "\t", "/", "{", "}", "=", ",", "#",
		"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff", "\xc3", "\xed\xa0\x80",
		"\xc0\xaf", "\\n", "\x7f", "\x01", "}\"", "0",
	};
	size_t n = 0;
	unsigned k = below(maxlen + 1) + (clean ? 1 : 0), i;
	for (i = 0; i < k; i++) {
		const char *p = clean ? ok[below(sizeof(ok) / sizeof(ok[0]))]
				      : pieces[below(sizeof(pieces) / sizeof(pieces[0]))];
		size_t l = strlen(p);
		if (n + l + 1 >= size)
			break;
		memcpy(out + n, p, l);
		n += l;
	}
	out[n] = '\0';
}

/* ---- a checker for the two text formats ---------------------------------- */

static int utf8_ok(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n;
	while (p < e) {
		unsigned c = *p, need, cp, i;
		if (c < 0x80) {
			if (!c)
				return 0;
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3, cp = c & 0x07;
		else
			return 0;
		if ((size_t)(e - p) <= need)
			return 0;
		for (i = 1; i <= need; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		p += need + 1;
	}
	return 1;
}

static int is_name_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

/* Length of a metric name at s (0: none). */
static size_t name_len(const char *s)
{
	size_t n = 0;
	while (is_name_char(s[n], n == 0))
		n++;
	return n;
}

/* Decode an escaped string at s up to the end char stop; the escapes
 * allowed are in esc ("\\\"n" or "\\n"). Returns the length consumed, or 0
 * on a bad escape or a raw newline; *out holds the decoded text. */
static size_t unescape(const char *s, char stop, const char *esc, char *out, size_t size)
{
	size_t i = 0, o = 0;
	for (; s[i] && s[i] != stop; i++) {
		char c = s[i];
		if (c == '\n')
			return 0;
		if (c == '\\') {
			char d = s[++i];
			if (!d || !strchr(esc, d))
				return 0;
			c = d == 'n' ? '\n' : d;
		}
		if (o + 1 < size)
			out[o++] = c;
	}
	out[o] = '\0';
	return s[i] == stop ? i : 0;
}

struct expect {
	char paths[64][400];
	int nr_paths;
};

#define MAXLINE 8192

/*
 * Check text in format fmt (OpenMetrics or 0.0.4). Labelled samples must
 * decode to the expected paths, each exactly once per family.
 */
static void check_text(const char *text, int om, const struct expect *x)
{
	char fam[256] = "", type[16] = "", seen_fams[64][256], line[MAXLINE], val[MAXLINE];
	int nr_seen = 0, have_help = 0, have_type = 0, eof = 0, samples = 0, seen_path[64];
	const char *p = text;
	memset(seen_path, 0, sizeof(seen_path));
	if (*text && text[strlen(text) - 1] != '\n')
		fail(text, "output does not end with a newline");
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p), n;
		if (len >= sizeof(line)) {
			fail(text, "line too long");
			return;
		}
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (nl ? 1 : 0);
		if (eof) {
			fail(text, "content after # EOF");
			return;
		}
		if (!utf8_ok(line, len)) {
			fail(text, "line is not valid UTF-8: %s", line);
			return;
		}
		if (!strcmp(line, "# EOF")) {
			if (!om)
				fail(text, "# EOF in text 0.0.4");
			eof = 1;
			continue;
		}
		if (!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7)) {
			int help = line[2] == 'H';
			const char *q = line + 7;
			n = name_len(q);
			if (!n || q[n] != ' ') {
				fail(text, "bad metadata line: %s", line);
				return;
			}
			if (strncmp(q, fam, n) || fam[n]) {
				int i;
				/* a new family: the previous one must have had samples */
				if (fam[0] && !samples)
					fail(text, "family %s has no samples", fam);
				memcpy(fam, q, n);
				fam[n] = '\0';
				for (i = 0; i < nr_seen; i++)
					if (!strcmp(seen_fams[i], fam))
						fail(text, "family %s appears twice", fam);
				if (nr_seen < 64)
					strcpy(seen_fams[nr_seen++], fam);
				have_help = have_type = 0;
				samples = 0;
				memset(seen_path, 0, sizeof(seen_path));
			}
			if (samples)
				fail(text, "metadata after samples: %s", line);
			q += n + 1;
			if (help) {
				if (have_help++)
					fail(text, "two HELP lines for %s", fam);
				/* Parsers trim blanks: promtool would see no help. */
				if (!q[strspn(q, " \t")])
					fail(text, "blank help for %s: %s", fam, line);
				if (!*q)
					continue;
				if (!unescape(q, '\0', om ? "\\\"n" : "\\n", val, sizeof(val)))
					fail(text, "bad escape in help: %s", line);
				/* OpenMetrics: a quote in help must be escaped. */
				for (n = 0; om && q[n]; n++) {
					if (q[n] == '\\' && q[n + 1])
						n++;
					else if (q[n] == '"')
						fail(text, "raw quote in OpenMetrics help: %s", line);
				}
			} else {
				if (have_type++)
					fail(text, "two TYPE lines for %s", fam);
				if (strcmp(q, "counter") && strcmp(q, "gauge"))
					fail(text, "bad type: %s", line);
				snprintf(type, sizeof(type), "%s", q);
				if (!om && !strcmp(type, "counter") &&
				    (strlen(fam) < 6 || strcmp(fam + strlen(fam) - 6, "_total")))
					fail(text, "0.0.4 counter %s without _total", fam);
			}
			continue;
		}
		if (line[0] == '#') {
			fail(text, "unknown comment: %s", line);
			return;
		}
		/* a sample */
		n = name_len(line);
		{
			char want[300];
			const char *q = line + n;
			if (!have_type) {
				fail(text, "sample without TYPE: %s", line);
				return;
			}
			snprintf(want, sizeof(want), "%s%s", fam,
				 om && !strcmp(type, "counter") ? "_total" : "");
			if (strncmp(line, want, n) || want[n])
				fail(text, "sample %s not of family %s", line, fam);
			if (*q == '{') {
				size_t used;
				int i, found = -1;
				if (strncmp(q, "{group=\"", 8)) {
					fail(text, "bad label set: %s", line);
					return;
				}
				q += 8;
				used = unescape(q, '"', "\\\"n", val, sizeof(val));
				if (!used && *q != '"') {
					fail(text, "bad label value: %s", line);
					return;
				}
				q += used;
				if (strncmp(q, "\"}", 2)) {
					fail(text, "label not closed: %s", line);
					return;
				}
				q += 2;
				if (!utf8_ok(val, strlen(val)))
					fail(text, "label value not UTF-8: %s", line);
				for (i = 0; i < x->nr_paths; i++)
					if (!strcmp(x->paths[i], val))
						found = i;
				if (found < 0)
					fail(text, "label value '%s' is no group's path", val);
				else if (seen_path[found]++)
					fail(text, "series %s{group=\"%s\"} twice", fam, val);
			}
			if (*q != ' ') {
				fail(text, "no value: %s", line);
				return;
			}
			q++;
			if (*q == '-')
				q++;
			if (!*q || strspn(q, "0123456789") != strlen(q))
				fail(text, "value is not an integer: %s", line);
			samples++;
		}
	}
	if (fam[0] && !samples)
		fail(text, "family %s has no samples", fam);
	if (om && !eof)
		fail(text, "OpenMetrics output without # EOF");
}

/* ---- one iteration ------------------------------------------------------------ */

struct gnames {
	struct tally_group *g[64];
	char name[64][40];
	int nil[64];
	int n;
};

static const char *gname(const struct tally_group *g, void *arg)
{
	struct gnames *ns = (struct gnames *)arg;
	int i;
	for (i = 0; i < ns->n; i++)
		if (ns->g[i] == g)
			return ns->nil[i] ? NULL : ns->name[i];
	return NULL;
}

static void expect_err(struct tally_export *e, int err, const char *what)
{
	const char *m = tally_export_error(e);
	if (strcmp(what, "render"))
		regs_failed++;
	else
		renders_failed++;
	if (err != -EINVAL)
		fail(NULL, "%s returned %d, not 0 or -EINVAL", what, err);
	else if (!m || strlen(m) < 10)
		fail(NULL, "%s failed without a message", what);
}

/* Paths of every group; an unnamed one is "#N", N its serial. */
static void build_paths(struct gnames *ns, int *parent, struct expect *x)
{
	int i;
	x->nr_paths = 1;
	strcpy(x->paths[0], "/");
	for (i = 0; i < ns->n; i++) {
		char path[400] = "";
		int chain[64], k = 0, j;
		for (j = i; j >= 0; j = parent[j])
			chain[k++] = j;
		while (k--) {
			size_t l = strlen(path);
			if (ns->nil[chain[k]])
				snprintf(path + l, sizeof(path) - l, "/#%llu",
					 (unsigned long long)tally_group_serial(ns->g[chain[k]]));
			else
				snprintf(path + l, sizeof(path) - l, "/%s", ns->name[chain[k]]);
		}
		snprintf(x->paths[x->nr_paths++], sizeof(x->paths[0]), "%s", path);
	}
}

static int files_written;

static void save(const char *dir, int limit, const char *ext, const char *text)
{
	char path[512];
	FILE *f;
	if (!dir || files_written >= limit)
		return;
	snprintf(path, sizeof(path), "%s/%06lu.%s", dir, iteration, ext);
	f = fopen(path, "w");
	if (!f) {
		fail(NULL, "cannot write %s", path);
		return;
	}
	fputs(text, f);
	fclose(f);
}

static void one(const char *dir, int limit)
{
	struct tally_export e;
	struct tally_counter c[3];
	struct tally_vec v;
	struct tally_tree *t;
	struct gnames ns;
	struct expect x;
	int parent[64], i, nc = (int)below(3), fmt, err, tree_ok = 0, saved = 0, clean_groups;
	unsigned items = 1 + below(3);
	char name[128], help[256], *inames[3], ibuf[3][64], *helps[3], hbuf[3][256];
	tally_export_init(&e);
	for (i = 0; i < nc; i++) {
		tally_counter_init(&c[i], (tally_sword)below(1000) - 100, 0);
		tally_counter_add(&c[i], (tally_sword)below(100000));
		gen_name(name, sizeof(name));
		gen_text(help, sizeof(help), 12, 0);
		err = tally_export_add_counter(&e, below(8) ? name : NULL, below(6) ? help : NULL,
					       &c[i], (int)below(2));
		if (err)
			expect_err(&e, err, "add_counter");
		else
			regs_ok++;
	}
	/* A vector with its own (arbitrary) item names. */
	{
		char vb[3][64];
		const char *vn[3];
		struct tally_vec_opts o;
		memset(&o, 0, sizeof(o));
		o.nr_items = 1 + below(3);
		for (i = 0; i < (int)o.nr_items; i++) {
			gen_name(vb[i], sizeof(vb[i]));
			vn[i] = below(5) ? vb[i] : NULL;
		}
		o.names = vn;
		if (tally_vec_init_opts(&v, &o))
			fail(NULL, "tally_vec_init_opts");
		for (i = 0; i < (int)o.nr_items; i++)
			tally_vec_mod(&v, (unsigned)i, (tally_sword)below(100000) - 50000);
		gen_name(name, sizeof(name));
		err = tally_export_add_vec(&e, below(4) ? name : NULL, &v, NULL, NULL, NULL);
		if (err)
			expect_err(&e, err, "add_vec");
		else
			regs_ok++;
	}
	t = tally_tree_create(items);
	memset(&ns, 0, sizeof(ns));
	clean_groups = below(4) != 0;
	ns.n = (int)below(12);
	for (i = 0; i < ns.n; i++) {
		parent[i] = i ? (int)below((unsigned)i + 1) - 1 : -1;
		ns.g[i] = tally_group_create(parent[i] < 0 ? tally_tree_root(t) : ns.g[parent[i]]);
		gen_text(ns.name[i], sizeof(ns.name[i]), 4, clean_groups);
		if (!below(clean_groups ? 40 : 6))
			strcpy(ns.name[i], i ? ns.name[i - 1] : "a"); /* maybe a sibling's */
		ns.nil[i] = !below(10);
		tally_group_mod(ns.g[i], below(items), (tally_sword)below(5000));
	}
	for (i = 0; i < (int)items; i++) {
		gen_name(ibuf[i], sizeof(ibuf[i]));
		inames[i] = ibuf[i];
		gen_text(hbuf[i], sizeof(hbuf[i]), 10, 0);
		helps[i] = hbuf[i];
	}
	gen_name(name, sizeof(name));
	err = tally_export_add_tree(&e, t,
				    &(struct tally_export_tree_opts){.prefix = below(5) ? name : NULL,
				    .names = below(5) ? (const char *const *)inames : NULL,
				    .helps = below(2) ? (const char *const *)helps : NULL,
				    .name_fn = gname, .name_arg = &ns,
				    .flags = TALLY_EXPORT_TREE_FLUSH});
	if (err)
		expect_err(&e, err, "add_tree");
	else
		tree_ok = 1, regs_ok++;
	build_paths(&ns, parent, &x);
	for (fmt = TALLY_EXPORT_PROMETHEUS; fmt <= TALLY_EXPORT_JSON; fmt++) {
		char *out = NULL;
		size_t len = 0;
		err = tally_export_render_alloc(&e, fmt, &out, &len);
		if (err) {
			/* Only tree group names can fail a render. */
			if (!tree_ok)
				fail(NULL, "render failed without a tree: %s", tally_export_error(&e));
			expect_err(&e, err, "render");
			continue;
		}
		renders_ok++;
		if (tree_ok && fmt == TALLY_EXPORT_OPENMETRICS && x.nr_paths > 1)
			labelled++;
		if (strlen(out) != len)
			fail(out, "length %zu but strlen %zu", len, strlen(out));
		if (fmt == TALLY_EXPORT_PROMETHEUS || fmt == TALLY_EXPORT_OPENMETRICS)
			check_text(out, fmt == TALLY_EXPORT_OPENMETRICS, &x);
		if (fmt == TALLY_EXPORT_PROMETHEUS && *out && dir && files_written < limit) {
			save(dir, limit, "prom", out);
			saved = 1;
		}
		if (fmt == TALLY_EXPORT_JSON && saved)
			save(dir, limit, "json", out);
		/* A buffer one byte short: -ENOSPC and the size, nothing written. */
		if (len) {
			char *b = (char *)malloc(len);
			size_t need = 0;
			memset(b, 'X', len);
			err = tally_export_render(&e, fmt, b, len, &need);
			if (err != -ENOSPC && !(err == 0 && need < len))
				fail(NULL, "short buffer: %d", err);
			if (err == -ENOSPC && (need < len + 1 || b[0] != 'X'))
				fail(NULL, "short buffer: need %zu, wrote %c", need, b[0]);
			free(b);
		}
		free(out);
	}
	if (saved && dir)
		files_written++;
	tally_export_destroy(&e);
	tally_vec_destroy(&v);
	tally_tree_destroy(t);
	for (i = 0; i < nc; i++)
		tally_counter_destroy(&c[i]);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 2000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 20261130;
	const char *dir = argc > 3 ? argv[3] : NULL;
	int limit = argc > 4 ? atoi(argv[4]) : 150;
	urcu_memb_register_thread();
	rng_state = seed;
	for (iteration = 0; iteration < n && failures < 10; iteration++)
		one(dir, limit);
	urcu_memb_unregister_thread();
	printf("fuzz_export: %lu iterations, seed %llu: registrations %lu accepted, %lu rejected; "
	       "renders %lu checked (%lu OpenMetrics with group labels), %lu rejected; %d saved; "
	       "%d failures\n",
	       iteration, (unsigned long long)seed, regs_ok, regs_failed, renders_ok, labelled,
	       renders_failed, files_written, failures);
	/* A run that accepts nothing tests nothing. */
	if (n >= 100 && (regs_ok < n / 10 || labelled < n / 50 || regs_failed < n / 10)) {
		fprintf(stderr, "fuzz_export: the generators are off: too little accepted or "
				"rejected\n");
		return 1;
	}
	return failures ? 1 : 0;
}
