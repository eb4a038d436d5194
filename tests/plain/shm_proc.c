/*
 * shm_proc - tally/shm.h's per-process gauges and labelled names.
 *   - a process killed (SIGKILL) while holding +1 leaves the sum; the
 *     live ones stay, read from another process's read-only handle;
 *   - liveness is the row's lock, never its pid: a dead row that names a
 *     live pid (a reused pid) is not summed;
 *   - fork(): a child claims its own row at its first add (the parent's
 *     row untouched), and does not keep its parent's row alive (the parent
 *     killed, its child still running: the parent's value leaves);
 *   - a dead row is reclaimed zeroed; a full table refuses with -ENOSPC;
 *     a claimer killed inside its claim leaves nothing held;
 *   - labelled names: accepted as tally_export_name() writes them, refused
 *     otherwise; exported as one family (tally/shm/export.h), a family
 *     growing after its first export, kind conflicts and duplicate series
 *     skipped; an exporter with nothing else taking the region's family
 *     table, helps kept across rebuilds, render_alloc's one growing pass
 *     and render_write's stream the same bytes as tally_export_render.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "streamed.h"

#include <signal.h>
#include <sys/wait.h>

static volatile int kill_in_claim;
#define TALLY__SHM_CLAIM_HOOK(row)                                                                 \
	do {                                                                                       \
		if (kill_in_claim)                                                                 \
			raise(SIGKILL);                                                            \
	} while (0)
#include <tally/shm.h>
#include <tally/shm/export.h>

static char dir[] = "/tmp/tally-shm-proc.XXXXXX";
static char path[256];

/* g's value as a read-only attach in this process sees it. */
static tally_sword ro_value(const char *name, unsigned *live)
{
	struct tally_shm *ro = NULL;
	struct tally_shm_snap s = {0};
	char why[TALLY_SHM_ERROR_MAX];
	tally_sword v = -999;
	size_t i;
	CHECK_EQ(tally_shm_open_ro(&ro, path, 0, why, sizeof(why)), 0);
	if (!ro)
		return v;
	CHECK_EQ(tally_shm_snapshot(ro, &s), 0);
	for (i = 0; i < s.n; i++)
		if (!strcmp(s.v[i].name, name)) {
			CHECK_EQ(s.v[i].kind, TALLY_SHM_PROC_GAUGE);
			v = tally__to_signed(s.v[i].raw);
		}
	if (live)
		*live = s.procs_live;
	tally_shm_snap_free(&s);
	tally_shm_close(ro);
	return v;
}

/* A child that adds d to "inflight" (through its own attach, or through
 * g inherited when g is not NULL), says so on fd, and waits to be killed. */
static pid_t holder(tally_sword d, const struct tally_shm_proc_gauge *g, int fd)
{
	pid_t p = fork();
	if (p == 0) {
		struct tally_shm *r = NULL;
		struct tally_shm_proc_gauge mine;
		char c = 'x';
		if (g)
			mine = *g;
		else if (tally_shm_open(&r, path, NULL, NULL, 0) ||
			 tally_shm_proc_gauge(r, "inflight", &mine))
			_exit(3);
		tally_shm_proc_add(&mine, d);
		if (tally_shm_proc_mine(&mine) != d || write(fd, &c, 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	return p;
}

static void wait_ready(int fd, int n)
{
	char c;
	while (n-- > 0)
		CHECK(read(fd, &c, 1) == 1, "a holder did not start");
}

static void killed_holders(void)
{
	struct tally_shm_opts o = {0};
	struct tally_shm *r = NULL;
	struct tally_shm_proc_gauge g;
	char why[TALLY_SHM_ERROR_MAX];
	pid_t p[4];
	unsigned live = 0;
	int fds[2], i, st;
	o.max_procs = 8;
	snprintf(path, sizeof(path), "%s/procs", dir);
	CHECK_EQ(tally_shm_open(&r, path, &o, why, sizeof(why)), 0);
	if (!r || pipe(fds))
		return;
	CHECK_EQ(tally_shm_proc_gauge(r, "inflight", &g), 0);
	tally_shm_proc_add(&g, 3);
	CHECK_EQ(tally_shm_proc_mine(&g), 3);
	CHECK_EQ(tally_shm_proc_sum(&g), 3);
	CHECK_EQ(ro_value("inflight", &live), 3);
	CHECK_EQ(live, 1);
	/* Three holders of +1 (one through the inherited handle: its own
	 * row, claimed at its first add), one of +10. */
	p[0] = holder(1, NULL, fds[1]);
	p[1] = holder(1, &g, fds[1]);
	p[2] = holder(1, NULL, fds[1]);
	p[3] = holder(10, NULL, fds[1]);
	wait_ready(fds[0], 4);
	CHECK_EQ(tally_shm_proc_mine(&g), 3); /* the child did not add to our row */
	CHECK_EQ(ro_value("inflight", &live), 16);
	CHECK_EQ(live, 5);
	CHECK_EQ(tally_shm_proc_sum(&g), 16);
	/* kill -9 while holding +1: gone from the sum; the others stay. */
	kill(p[1], SIGKILL);
	waitpid(p[1], &st, 0);
	CHECK_EQ(ro_value("inflight", &live), 15);
	CHECK_EQ(live, 4);
	kill(p[3], SIGKILL);
	waitpid(p[3], &st, 0);
	CHECK_EQ(ro_value("inflight", &live), 5);
	CHECK_EQ(live, 3);
	/* A reused pid: a dead row naming a live process (ours) still does
	 * not count. */
	{
		unsigned k;
		struct tally__shm_row *rows =
			(struct tally__shm_row *)(void *)(r->tally__map + r->tally__lay.proc_off);
		for (k = 0; k < r->tally__hdr->procs; k++)
			rows[k].pid = (uint32_t)getpid();
		CHECK_EQ(ro_value("inflight", &live), 5);
		CHECK_EQ(live, 3);
	}
	/* The dead rows are reclaimed, zeroed: the table does not grow. */
	{
		unsigned procs = r->tally__hdr->procs;
		p[1] = holder(2, NULL, fds[1]);
		p[3] = holder(2, NULL, fds[1]);
		wait_ready(fds[0], 2);
		CHECK_EQ(r->tally__hdr->procs, procs);
		CHECK_EQ(ro_value("inflight", &live), 9);
	}
	for (i = 0; i < 4; i++) {
		kill(p[i], SIGKILL);
		waitpid(p[i], &st, 0);
	}
	CHECK_EQ(ro_value("inflight", &live), 3);
	CHECK_EQ(live, 1);
	/* An image (a copy of the file) has no locks: every claimed row as
	 * it was left. */
	{
		struct tally_shm_snap s = {0};
		char w[TALLY_SHM_ERROR_MAX];
		void *img = malloc(r->tally__len);
		if (img) {
			memcpy(img, r->tally__map, r->tally__len);
			CHECK_EQ(tally_shm_read_image(img, r->tally__len, &s, w, sizeof(w)), 0);
			CHECK_EQ(s.procs_live, s.procs);
			tally_shm_snap_free(&s);
			free(img);
		}
	}
	close(fds[0]);
	close(fds[1]);
	tally_shm_close(r);
	CHECK_EQ(ro_value("inflight", &live), 0);
	CHECK_EQ(live, 0);
}

/* A child does not keep its parent's row alive. */
static void fork_does_not_keep_alive(void)
{
	int fds[2], hold[2], st;
	pid_t a;
	unsigned live = 0;
	if (pipe(fds) || pipe(hold))
		return;
	a = fork();
	if (a == 0) {
		struct tally_shm *r = NULL;
		struct tally_shm_proc_gauge g;
		char c = 'x';
		if (tally_shm_open(&r, path, NULL, NULL, 0) ||
		    tally_shm_proc_gauge(r, "inflight", &g))
			_exit(3);
		tally_shm_proc_add(&g, 5);
		if (fork() == 0) { /* the grandchild: never adds; ends at EOF */
			close(hold[1]);
			if (write(fds[1], &c, 1) != 1)
				_exit(4);
			while (read(hold[0], &c, 1) > 0)
				;
			_exit(0);
		}
		if (write(fds[1], &c, 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	wait_ready(fds[0], 2);
	CHECK_EQ(ro_value("inflight", &live), 5);
	CHECK_EQ(live, 1);
	kill(a, SIGKILL);
	waitpid(a, &st, 0);
	/* The grandchild still runs, holding a descriptor it inherited: the
	 * row is not alive for it. */
	CHECK_EQ(ro_value("inflight", &live), 0);
	CHECK_EQ(live, 0);
	close(hold[1]); /* the grandchild ends */
	close(hold[0]);
	close(fds[0]);
	close(fds[1]);
}

/* A full table; a claimer killed in its claim. */
static void full_and_killed_claimer(void)
{
	struct tally_shm_opts o = {0};
	struct tally_shm *r = NULL, *r2 = NULL, *r3 = NULL;
	struct tally_shm_proc_gauge g, g2, g3;
	char why[TALLY_SHM_ERROR_MAX], p2[300];
	pid_t p;
	int st = 0;
	o.max_procs = 2;
	snprintf(p2, sizeof(p2), "%s/full", dir);
	CHECK_EQ(tally_shm_open(&r, p2, &o, why, sizeof(why)), 0);
	if (!r)
		return;
	p = fork();
	if (p == 0) {
		struct tally_shm_proc_gauge x;
		kill_in_claim = 1;
		tally_shm_proc_gauge(r, "g", &x);
		_exit(0); /* not reached */
	}
	waitpid(p, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "claimer status %d", st);
	/* Its row was never locked: two handles of this process take both. */
	CHECK_EQ(tally_shm_proc_gauge(r, "g", &g), 0);
	CHECK_EQ(tally_shm_open(&r2, p2, NULL, why, sizeof(why)), 0);
	CHECK_EQ(tally_shm_proc_gauge(r2, "g", &g2), 0);
	CHECK_EQ(tally_shm_open(&r3, p2, NULL, why, sizeof(why)), 0);
	CHECK_EQ(tally_shm_proc_gauge(r3, "g", &g3), -ENOSPC);
	CHECK(strstr(tally_shm_error(r3), "no free process row") != NULL, "%s", tally_shm_error(r3));
	tally_shm_proc_add(&g, 1);
	tally_shm_proc_add(&g2, 2);
	CHECK_EQ(tally_shm_proc_sum(&g), 3);
	tally_shm_close(r2); /* its row back; r's stays */
	CHECK_EQ(tally_shm_proc_sum(&g), 1);
	CHECK_EQ(tally_shm_proc_gauge(r3, "g", &g3), 0);
	CHECK_EQ(tally_shm_proc_mine(&g3), 0); /* reclaimed zeroed */
	CHECK_EQ(tally_shm_gauge(r, "g", NULL), -EINVAL);
	{
		struct tally_shm_counter c;
		CHECK_EQ(tally_shm_gauge(r, "g", &c), -EEXIST);
		CHECK(strstr(tally_shm_error(r), "per-process gauge") != NULL, "%s",
		      tally_shm_error(r));
	}
	tally_shm_close(r3);
	tally_shm_close(r);
}

static void names(void)
{
	struct tally_shm *r = NULL;
	struct tally_shm_counter c;
	char why[TALLY_SHM_ERROR_MAX], nm[TALLY_SHM_NAME_MAX + 8], p2[300];
	static const char *const good[] = {"x{a=\"1\"}", "x{a=\"1\",b=\"2\"}",
					   "x{a=\"q\\\"u\\\\o\\nte\"}", "x{a=\"\"}",
					   "x{a=\"h\xc3\xa9\"}", "Up:Case{_b9=\"v\"}"};
	static const char *const bad[] = {"x{}",         "x{a=1}",      "x{a=\"1\"}y",
					  "x{a=\"1\"",   "x{a=\"1\",}", "x{9a=\"1\"}",
					  "x{a=\"\t\"}", "x{a=\"\\t\"}", "x{a=\"\xc3\"}",
					  "x {a=\"1\"}", "{a=\"1\"}",   "x{a=\"1\"}}"};
	const char *pairs[] = {"path", "/a \"b\"\n", "code", "200", NULL};
	size_t i;
	snprintf(p2, sizeof(p2), "%s/names", dir);
	CHECK_EQ(tally_shm_open(&r, p2, NULL, why, sizeof(why)), 0);
	if (!r)
		return;
	for (i = 0; i < sizeof(good) / sizeof(*good); i++)
		CHECK(tally_shm_counter(r, good[i], &c) == 0, "refused '%s': %s", good[i],
		      tally_shm_error(r));
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		CHECK(tally_shm_counter(r, bad[i], &c) == -EINVAL, "took '%s'", bad[i]);
	CHECK_EQ(tally_export_name(nm, sizeof(nm), "http_requests", pairs), 0);
	CHECK(tally_shm_counter(r, nm, &c) == 0, "refused '%s'", nm);
	/* The length limit, labels included. */
	memset(nm, 'n', sizeof(nm));
	memcpy(nm + TALLY_SHM_NAME_MAX - 7, "{a=\"1\"}", 8);
	CHECK_EQ(strlen(nm), TALLY_SHM_NAME_MAX);
	CHECK_EQ(tally_shm_counter(r, nm, &c), 0);
	memset(nm, 'n', sizeof(nm));
	memcpy(nm + TALLY_SHM_NAME_MAX - 6, "{a=\"1\"}", 8);
	CHECK_EQ(tally_shm_counter(r, nm, &c), -EINVAL);
	tally_shm_close(r);
}

/* Render a region's Prometheus text through e. */
static char *render(struct tally_export *e)
{
	char *out = NULL;
	size_t len = 0;
	int err = tally_export_render_alloc(e, TALLY_EXPORT_PROMETHEUS, &out, &len);
	CHECK(err == 0, "render: %d %s", err, tally_export_error(e));
	return out;
}

static void exported(void)
{
	struct tally_shm *r = NULL, *ro = NULL;
	struct tally_shm_counter get, put, del, other;
	struct tally_shm_proc_gauge g;
	struct tally_export e;
	struct tally_counter mine;
	char why[TALLY_SHM_ERROR_MAX], p2[300], *out;
	unsigned skipped = 0;
	snprintf(p2, sizeof(p2), "%s/export", dir);
	CHECK_EQ(tally_shm_open(&r, p2, NULL, why, sizeof(why)), 0);
	CHECK_EQ(tally_shm_open_ro(&ro, p2, 0, why, sizeof(why)), 0);
	if (!r || !ro)
		return;
	CHECK_EQ(tally_shm_counter(r, "requests{method=\"get\"}", &get), 0);
	CHECK_EQ(tally_shm_counter(r, "bytes", &other), 0);
	CHECK_EQ(tally_shm_counter(r, "requests{method=\"put\"}", &put), 0);
	CHECK_EQ(tally_shm_proc_gauge(r, "inflight", &g), 0);
	tally_shm_add(&get, 5);
	tally_shm_add(&put, 7);
	tally_shm_proc_add(&g, 2);
	tally_export_init(&e);
	tally_counter_init(&mine, 0, 0);
	CHECK_EQ(tally_export_add_counter(&e, "local", "A local counter.", &mine,
					  TALLY_EXPORT_COUNTER),
		 0);
	CHECK_EQ(tally_shm_export_add(&e, ro, &skipped), 0);
	CHECK_EQ(skipped, 0);
	CHECK_EQ(tally_export_set_help(&e, "requests", "Requests served."), 0);
	out = render(&e);
	if (out) {
		CHECK(strstr(out, "# HELP requests_total Requests served.\n# TYPE requests_total "
				  "counter\nrequests_total{method=\"get\"} 5\n"
				  "requests_total{method=\"put\"} 7\n") != NULL,
		      "%s", out);
		CHECK(strstr(out, "\ninflight 2\n") != NULL, "%s", out);
		CHECK(strstr(out, "# TYPE inflight gauge\n") != NULL, "%s", out);
		free(out);
	}
	/* The family grows after its first export; conflicts are skipped. */
	CHECK_EQ(tally_shm_counter(r, "requests{method=\"delete\"}", &del), 0);
	CHECK_EQ(tally_shm_gauge(r, "requests{method=\"head\"}", &other), 0);     /* a kind */
	CHECK_EQ(tally_shm_counter(r, "requests{method=\"get\",x=\"\"}", &other), 0); /* twice */
	CHECK_EQ(tally_shm_counter(r, "Bad", &other), 0);                        /* a name */
	CHECK_EQ(tally_shm_counter(r, "local", &other), 0); /* another source's family */
	tally_shm_add(&del, 1);
	tally_shm_add(&get, 1);
	CHECK_EQ(tally_shm_export_add(&e, ro, &skipped), 0);
	CHECK_EQ(skipped, 4);
	CHECK_EQ(tally_shm_export_add(&e, ro, &skipped), 0); /* nothing new */
	CHECK_EQ(skipped, 4);
	out = render(&e);
	if (out) {
		CHECK(strstr(out, "# HELP requests_total Requests served.\n# TYPE requests_total "
				  "counter\nrequests_total{method=\"get\"} 6\n"
				  "requests_total{method=\"put\"} 7\n"
				  "requests_total{method=\"delete\"} 1\n") != NULL,
		      "%s", out);
		CHECK(strstr(out, "# HELP local_total A local counter.") != NULL, "%s", out);
		CHECK(strstr(out, "head") == NULL && strstr(out, "Bad") == NULL, "%s", out);
		free(out);
	}
	tally_export_destroy(&e);
	tally_counter_destroy(&mine);
	tally_shm_close(ro);
	tally_shm_close(r);
}

/* An exporter with nothing else takes the region's family table (no
 * copy): the region's source replaced (the table taken again; a help set
 * kept, the constant ones pointed to), another source after it (the
 * table grown), replaced beside it (copied); render_alloc's one growing
 * pass (past its first 4 KiB guess) gives what tally_export_render does. */
static void exported_alone(void)
{
	static const char head[] = "# HELP local tally counter\n# TYPE local gauge\nlocal 0\n"
				   "# HELP c0 tally shared counter\n# TYPE c0 counter\n"
				   "c0_total{k=\"x\"} 0\n# HELP c1 ",
			  tail[] = "c300_total 0\n# EOF\n";
	struct tally_shm *r = NULL, *ro = NULL;
	struct tally_shm_counter c;
	struct tally_counter mine;
	struct tally_export e;
	char why[TALLY_SHM_ERROR_MAX], p2[300], nm[32], *out = NULL, *buf;
	size_t len = 0, need = 0, len2 = 0;
	unsigned i, skipped = 0;
	snprintf(p2, sizeof(p2), "%s/alone", dir);
	CHECK_EQ(tally_shm_open(&r, p2, NULL, why, sizeof(why)), 0);
	CHECK_EQ(tally_shm_open_ro(&ro, p2, 0, why, sizeof(why)), 0);
	if (!r || !ro)
		return;
	for (i = 0; i < 300; i++) {
		snprintf(nm, sizeof(nm), i % 3 ? "c%u" : "c%u{k=\"x\"}", i);
		CHECK_EQ(tally_shm_counter(r, nm, &c), 0);
		tally_shm_add(&c, i);
	}
	tally_export_init(&e);
	tally_counter_init(&mine, 0, 0);
	CHECK_EQ(tally_shm_export_add(&e, ro, &skipped), 0);
	CHECK_EQ(tally_export_set_help(&e, "c7", "Seven \\ \"7\"."), 0);
	CHECK_EQ(tally_shm_gauge(r, "g", &c), 0);
	CHECK_EQ(tally_shm_export_add(&e, ro, &skipped), 0); /* e had r's alone */
	CHECK_EQ(tally_export_add_counter(&e, "local", NULL, &mine, TALLY_EXPORT_GAUGE), 0);
	CHECK_EQ(tally_shm_counter(r, "c300", &c), 0);
	CHECK_EQ(tally_shm_export_add(&e, ro, &skipped), 0); /* beside local */
	CHECK_EQ(skipped, 0);
	CHECK_EQ(tally_export_render_alloc(&e, TALLY_EXPORT_OPENMETRICS, &out, &len), 0);
	CHECK(out && len > 4096 && strlen(out) == len, "%zu bytes", len);
	CHECK(out && !strncmp(out, head, sizeof(head) - 1), "%s", out);
	CHECK(out && strstr(out, "# HELP c7 Seven \\\\ \\\"7\\\".\n# TYPE c7 counter\nc7_total 7\n"), "%s",
	      out);
	CHECK(out && strstr(out, "\n# HELP g tally shared gauge\n# TYPE g gauge\ng 0\n"), "%s", out);
	CHECK(out && len > sizeof(tail) && !strcmp(out + len - (sizeof(tail) - 1), tail), "%s",
	      out);
	CHECK_EQ(tally_export_render(&e, TALLY_EXPORT_OPENMETRICS, NULL, 0, &need), -ENOSPC);
	CHECK_EQ(need, len + 1);
	buf = (char *)malloc(need);
	CHECK_EQ(tally_export_render(&e, TALLY_EXPORT_OPENMETRICS, buf, need, &len2), 0);
	CHECK(buf && out && len2 == len && !memcmp(buf, out, len + 1), "render and render_alloc");
	free(out);
	CHECK_EQ(tally_export_render_alloc(&e, TALLY_EXPORT_OPENMETRICS, &out, &len2), 0);
	CHECK(buf && out && len2 == len && !memcmp(buf, out, len + 1), "the second render_alloc");
	free(out);
	{
		/* Streamed (render_write): the same bytes. */
		struct streamed s = {NULL, 0, 0};
		CHECK_EQ(tally_export_render_write(&e, TALLY_EXPORT_OPENMETRICS, streamed, &s), 0);
		CHECK(buf && s.b && s.len == len && s.calls == 1 && !memcmp(buf, s.b, len),
		      "render_write: %zu bytes in %u calls", s.len, s.calls);
		free(s.b);
	}
	free(buf);
	tally_export_destroy(&e);
	tally_counter_destroy(&mine);
	tally_shm_close(ro);
	tally_shm_close(r);
}

int main(void)
{
	char p[300];
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	killed_holders();
	fork_does_not_keep_alive();
	full_and_killed_claimer();
	names();
	exported();
	exported_alone();
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	if (system(p))
		fprintf(stderr, "shm_proc: could not remove %s\n", dir);
	return harness_exit("shm_proc");
}
