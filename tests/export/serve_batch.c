/*
 * tally/serve.h batches renders: the requests waiting when a render starts
 * share it (one render per format per batch, not one per request), and a
 * scrape that arrives while every kept connection is being answered is
 * kept, not closed. The load of issue 27: 64 clients send whole GETs at
 * once to an exporter of 80,000 series (about 2 MB a page), then a real
 * scrape arrives in the middle. Deterministic, not timed: the test holds
 * the exporter lock (opts.lock) until the server reports all 65 requests
 * waiting (tally_serve_stats' waiting), then lets go. Every one of the 65
 * must get a whole 200 answer, byte for byte the page of a scrape alone,
 * after at most 2 renders (the one that may have started before the real
 * scrape came, and the one after it); nobody is evicted. Before batching,
 * the real scrape was closed with 0 bytes and 65 renders ran.
 * The times printed (render alone, real scrape after the release) are for
 * reading, not asserted.
 */
#define _GNU_SOURCE
#include "serve_util.h"

#include <pthread.h>
#include <signal.h>

#define FLOOD 64
#define VECS 2
#define ITEMS 40000

int main(void)
{
	static struct tally_vec v[VECS];
	static char *names[ITEMS];
	static int flood[FLOOD];
	static const char *const prefixes[VECS] = {"big", "large"};
	struct tally_export ex;
	struct tally_serve_opts o;
	struct tally_serve *srv;
	struct tally_serve_stats st;
	pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
	char why[TALLY_SERVE_ERROR_MAX];
	char *alone, *a;
	const char *alone_body, *b;
	size_t alone_len, n;
	unsigned long renders0;
	double t0, t_alone, t_real;
	unsigned i;
	int real, k;

	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < ITEMS; i++) {
		names[i] = (char *)malloc(32);
		/* 100 families of 400 series: registration stays fast */
		snprintf(names[i], 32, "s%u{i=\"%u\"}", i / 400, i);
	}
	if (tally_export_init(&ex))
		return 1;
	for (k = 0; k < VECS; k++) {
		struct tally_vec_opts vo;
		memset(&vo, 0, sizeof(vo));
		vo.nr_items = ITEMS;
		vo.names = (const char *const *)names;
		if (tally_vec_init_opts(&v[k], &vo) ||
		    tally_export_add_vec(&ex, prefixes[k], &v[k], NULL, NULL, NULL)) {
			fprintf(stderr, "setup: %s\n", tally_export_error(&ex));
			return 1;
		}
	}
	memset(&o, 0, sizeof(o));
	o.listen = "127.0.0.1:0";
	o.max_conns = FLOOD; /* the flood fills it exactly */
	o.lock = &lk;
	o.idle_timeout_s = 120; /* nothing may expire while the lock is held */
	o.request_timeout_s = 120;
	o.render_timeout_ms = 120000;
	if (tally_serve_start(&srv, &ex, &o, why, sizeof(why))) {
		fprintf(stderr, "serve: %s\n", why);
		return 1;
	}

	/* A scrape alone: the page every later one must equal. */
	t0 = su_now();
	k = su_dial(tally_serve_port(srv));
	if (k < 0 || su_send_get(k))
		return 1;
	alone = su_read_all(k, &alone_len);
	t_alone = su_now() - t0;
	alone_body = su_body_200(alone);
	if (!alone_body || alone_len < 1000000) {
		su_fail("the scrape alone is not a 200 of at least 1 MB", alone);
		return 1;
	}
	su_wait_stat(srv, open, 0); /* its connection gone: not an eviction later */
	renders0 = su_stats(srv).renders;

	/* The flood, then the real scrape, all waiting behind the held lock. */
	pthread_mutex_lock(&lk);
	for (i = 0; i < FLOOD; i++) {
		flood[i] = su_dial(tally_serve_port(srv));
		if (flood[i] < 0 || su_send_get(flood[i]))
			su_fail("flood client cannot connect or send", NULL);
	}
	su_wait_stat(srv, waiting, FLOOD);
	real = su_dial(tally_serve_port(srv));
	if (real < 0 || su_send_get(real))
		su_fail("the real scrape cannot connect or send", NULL);
	su_wait_stat(srv, waiting, FLOOD + 1);
	t0 = su_now();
	pthread_mutex_unlock(&lk);

	a = su_read_all(real, &n);
	t_real = su_now() - t0;
	b = su_body_200(a);
	if (!b)
		su_fail("the real scrape got no 200", n ? a : "(0 bytes: closed)");
	else if (strcmp(b, alone_body))
		su_fail("the real scrape's page differs from the scrape alone", NULL);
	free(a);
	for (i = 0; i < FLOOD; i++) {
		if (flood[i] < 0)
			continue;
		a = su_read_all(flood[i], &n);
		b = su_body_200(a);
		if (!b || strcmp(b, alone_body)) {
			char msg[64];
			snprintf(msg, sizeof(msg), "flood client %u: %zu bytes", i, n);
			su_fail("a flood client got no whole 200", msg);
		}
		free(a);
	}
	st = su_stats(srv);
	printf("serve_batch: page %zu bytes; alone %.3f s; real scrape %.3f s after the "
	       "release; %lu renders for %d requests, %lu evicted\n",
	       alone_len, t_alone, t_real, st.renders - renders0, FLOOD + 1, st.evicted);
	if (st.renders - renders0 < 1 || st.renders - renders0 > 2)
		su_fail("not 1 or 2 renders for the 65 requests", NULL);
	if (st.evicted != 0)
		su_fail("a connection was evicted", NULL);
	if (st.waiting != 0)
		su_fail("requests still waiting", NULL);
	tally_serve_stop(srv);
	free(alone);
	tally_export_destroy(&ex);
	for (k = 0; k < VECS; k++)
		tally_vec_destroy(&v[k]);
	for (i = 0; i < ITEMS; i++)
		free(names[i]);
	return su_failures ? 1 : 0;
}
