/*
 * tally/serve.h when the exporter lock (opts.lock) is held elsewhere:
 *   - render_timeout_ms = 200 and the lock held: 4 waiting scrapes each get
 *     503, with no render; once the lock is free, a scrape gets its 200;
 *   - render_timeout_ms = 120 s and the lock held: tally_serve_stop returns
 *     without the lock (the render thread gives up its batch), and each of
 *     4 waiting scrapes ends without a render: 503 (or, if the machine is
 *     too busy to send it within stop's second, closed), never a hang.
 * Deterministic: the test waits on the server's stats (60 s deadlines),
 * not on time.
 */
#define _GNU_SOURCE
#include "serve_util.h"

#include <pthread.h>
#include <signal.h>

#define N 4

static int is_503(const char *a)
{
	return !strncmp(a, "HTTP/1.", 7) && !strncmp(a + 9, "503", 3);
}

/* N connections, each sending a whole GET: 0, or -1. */
static int send_gets(struct tally_serve *srv, int *fd)
{
	unsigned i;
	for (i = 0; i < N; i++) {
		fd[i] = su_dial(tally_serve_port(srv));
		if (fd[i] < 0 || su_send_get(fd[i]))
			return -1;
	}
	return 0;
}

int main(void)
{
	static struct tally_counter c;
	struct tally_export ex;
	struct tally_serve_opts o;
	struct tally_serve *srv;
	pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
	char why[TALLY_SERVE_ERROR_MAX];
	int fd[N];
	unsigned i;
	size_t n;
	char *a;

	signal(SIGPIPE, SIG_IGN);
	if (tally_counter_init(&c, 0, 0) || tally_export_init(&ex) ||
	    tally_export_add_counter(&ex, "held", "Help.", &c, TALLY_EXPORT_COUNTER))
		return 1;
	memset(&o, 0, sizeof(o));
	o.listen = "127.0.0.1:0";
	o.lock = &lk;
	o.render_timeout_ms = 200;
	if (tally_serve_start(&srv, &ex, &o, why, sizeof(why))) {
		fprintf(stderr, "serve: %s\n", why);
		return 1;
	}
	pthread_mutex_lock(&lk);
	if (send_gets(srv, fd))
		return 1;
	for (i = 0; i < N; i++) {
		a = su_read_all(fd[i], &n);
		if (!is_503(a))
			su_fail("lock held past render_timeout_ms: not 503", n ? a : "(closed)");
		free(a);
	}
	if (su_stats(srv).renders != 0)
		su_fail("a render ran while the lock was held", NULL);
	su_wait_stat(srv, waiting, 0);
	pthread_mutex_unlock(&lk);
	fd[0] = su_dial(tally_serve_port(srv));
	if (fd[0] < 0 || su_send_get(fd[0]))
		return 1;
	a = su_read_all(fd[0], &n);
	if (!su_body_200(a) || !strstr(a, "\nheld_total 0\n"))
		su_fail("the lock free again: no 200", n ? a : "(closed)");
	free(a);
	tally_serve_stop(srv);

	o.render_timeout_ms = 120000;
	if (tally_serve_start(&srv, &ex, &o, why, sizeof(why))) {
		fprintf(stderr, "serve: %s\n", why);
		return 1;
	}
	pthread_mutex_lock(&lk);
	if (send_gets(srv, fd))
		return 1;
	su_wait_stat(srv, waiting, N);
	tally_serve_stop(srv); /* with the lock still held here */
	for (i = 0; i < N; i++) {
		a = su_read_all(fd[i], &n);
		if (n && !is_503(a))
			su_fail("stopped while waiting: neither 503 nor closed", a);
		free(a);
	}
	pthread_mutex_unlock(&lk);
	printf("serve_timeout: %s\n", su_failures ? "failed" : "503s as expected");
	tally_export_destroy(&ex);
	tally_counter_destroy(&c);
	return su_failures ? 1 : 0;
}
