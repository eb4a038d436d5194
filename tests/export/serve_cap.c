/*
 * tally/serve.h keeps max_conns connections, at both edges, and never
 * evicts one that is being answered. max_conns = 8; the exporter lock
 * (opts.lock) is held so that the oldest connection's scrape waits for
 * its render, being answered, the whole time:
 *   - A (oldest) sends a whole GET; the server reports it waiting;
 *   - B..H connect one at a time (each counted open before the next
 *     dials, so the server sees them in this order): 8 open, exactly
 *     max_conns, none evicted;
 *   - I connects: exactly one evicted, and it is B, the oldest that is
 *     not being answered (B reads end-of-file; C..I read nothing yet:
 *     still open);
 *   - the lock is let go: A gets its whole 200, and no more evictions.
 * Deterministic, not timed (stats are polled with 60 s deadlines). Fails
 * if the cap is off by one either way or if eviction may pick a
 * connection being answered.
 */
#define _GNU_SOURCE
#include "serve_util.h"

#include <pthread.h>
#include <signal.h>

#define CAP 8

int main(void)
{
	static struct tally_counter c;
	struct tally_export ex;
	struct tally_serve_opts o;
	struct tally_serve *srv;
	struct tally_serve_stats st;
	pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
	char why[TALLY_SERVE_ERROR_MAX], msg[128], byte;
	int fd[CAP + 1]; /* A = fd[0], B = fd[1], ..., I = fd[CAP] */
	const char *b;
	char *a;
	size_t n;
	unsigned i;

	signal(SIGPIPE, SIG_IGN);
	if (tally_counter_init(&c, 0, 0) || tally_export_init(&ex) ||
	    tally_export_add_counter(&ex, "capped", "Help.", &c, TALLY_EXPORT_COUNTER))
		return 1;
	tally_counter_add(&c, 42);
	memset(&o, 0, sizeof(o));
	o.listen = "127.0.0.1:0";
	o.max_conns = CAP;
	o.lock = &lk;
	o.idle_timeout_s = 120; /* nothing may expire meanwhile */
	o.request_timeout_s = 120;
	o.render_timeout_ms = 120000;
	if (tally_serve_start(&srv, &ex, &o, why, sizeof(why))) {
		fprintf(stderr, "serve: %s\n", why);
		return 1;
	}
	pthread_mutex_lock(&lk);
	fd[0] = su_dial(tally_serve_port(srv));
	if (fd[0] < 0 || su_send_get(fd[0]))
		return 1;
	su_wait_stat(srv, waiting, 1);
	for (i = 1; i < CAP; i++) {
		fd[i] = su_dial(tally_serve_port(srv));
		if (fd[i] < 0)
			return 1;
		su_wait_stat(srv, open, i + 1);
	}
	st = su_stats(srv);
	if (st.evicted != 0) {
		snprintf(msg, sizeof(msg), "%lu evicted", st.evicted);
		su_fail("max_conns connections open (one being answered): none may be evicted",
			msg);
	}
	fd[CAP] = su_dial(tally_serve_port(srv));
	if (fd[CAP] < 0)
		return 1;
	if (su_wait_stat(srv, evicted, 1) == 0) {
		/* The eviction shut B down before it was counted. */
		if (read(fd[1], &byte, 1) != 0)
			su_fail("B, the oldest not being answered, is not the one closed", NULL);
		for (i = 2; i <= CAP; i++) {
			errno = 0;
			if (recv(fd[i], &byte, 1, MSG_DONTWAIT) != -1 ||
			    (errno != EAGAIN && errno != EWOULDBLOCK)) {
				snprintf(msg, sizeof(msg), "connection %c", 'A' + i);
				su_fail("a connection other than B was closed", msg);
			}
		}
	}
	pthread_mutex_unlock(&lk);
	a = su_read_all(fd[0], &n);
	b = su_body_200(a);
	if (!b || !strstr(b, "\ncapped_total 42\n"))
		su_fail("A, being answered, got no whole 200", n ? a : "(0 bytes: closed)");
	free(a);
	st = su_stats(srv);
	printf("serve_cap: max_conns %d: %lu evicted, %lu renders\n", CAP, st.evicted,
	       st.renders);
	if (st.evicted != 1) {
		snprintf(msg, sizeof(msg), "%lu evicted", st.evicted);
		su_fail("one past max_conns: not exactly one evicted", msg);
	}
	for (i = 1; i <= CAP; i++)
		close(fd[i]);
	tally_serve_stop(srv);
	tally_export_destroy(&ex);
	tally_counter_destroy(&c);
	return su_failures ? 1 : 0;
}
