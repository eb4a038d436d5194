/*
 * tally/serve.h under concurrent scrapes (built for ThreadSanitizer too):
 * a tree, a vector and a counter updated by a writer thread, served on a
 * free loopback port; client threads scrape it at once, in every format
 * and by Accept header, beside connections that sit idle and one that
 * trickles. Every answer must be complete (200, the content type of its
 * format, OpenMetrics ending in "# EOF"), the exported counters must
 * never go down from one scrape to the next, and after the writer stops
 * a scrape must show its exact count. The render thread is the only one
 * registered with liburcu. TALLY_STRESS_SECONDS sets how long clients
 * run (2 by default).
 */
#define _GNU_SOURCE
#include <tally/rstat.h>
#include <tally/export_rstat.h>
#include <tally/serve.h>
#include "serve_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CLIENTS 4
#define IDLE 8

static struct tally_export ex;
static struct tally_tree *tree;
static struct tally_group *grp;
static struct tally_counter hits;
static unsigned port;
static int stop_writer, stop_clients;
static unsigned long written;
static int failures;

static void failf(const char *what, const char *detail)
{
	if (__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED) < 10)
		fprintf(stderr, "FAIL: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

/* GET target with the Accept header accept (or none); the whole answer
 * into a malloc'd string (NULL on a transport error). */
static char *get(const char *target, const char *accept)
{
	char req[256];
	size_t len;
	int fd = su_dial(port);
	if (fd < 0)
		return NULL;
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: x\r\n%s%s%s\r\n", target,
		 accept ? "Accept: " : "", accept ? accept : "", accept ? "\r\n" : "");
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return NULL;
	}
	return su_read_all(fd, &len);
}

/* The value of "name value" at the start of a line in text, or ~0. */
static unsigned long long value_of(const char *text, const char *name)
{
	char key[128];
	const char *p;
	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(text, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : ~0ull;
}

static void *writer_main(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_writer, __ATOMIC_ACQUIRE)) {
		tally_group_mod(grp, 0, 1);
		tally_counter_add(&hits, 1);
		__atomic_store_n(&written, written + 1, __ATOMIC_RELAXED);
		if (written % 64 == 0)
			usleep(100);
	}
	return NULL;
}

static void *client_main(void *arg)
{
	static const char *const accepts[] = {NULL, "application/openmetrics-text;version=1.0.0",
					      "text/plain;version=0.0.4", "*/*"};
	unsigned long k = (unsigned long)(uintptr_t)arg;
	unsigned long long last = 0;
	while (!__atomic_load_n(&stop_clients, __ATOMIC_ACQUIRE)) {
		const char *acc = accepts[k % 4];
		int json = k % 5 == 4;
		char *r = get(json ? "/metrics?format=json" : "/metrics", json ? NULL : acc);
		k++;
		if (!r) {
			failf("transport error", NULL);
			continue;
		}
		if (strncmp(r, "HTTP/1.", 7) || strncmp(r + 9, "200", 3)) {
			failf("not 200", r);
		} else if (json) {
			if (!strstr(r, "application/json") || !strstr(r, "]}\n"))
				failf("JSON answer incomplete", NULL);
		} else if (acc && strstr(acc, "openmetrics")) {
			size_t n = strlen(r);
			if (!strstr(r, "application/openmetrics-text") || n < 6 ||
			    strcmp(r + n - 6, "# EOF\n"))
				failf("OpenMetrics answer incomplete", NULL);
		} else {
			unsigned long long v = value_of(r, "served_hits_total");
			if (!strstr(r, "text/plain; version=0.0.4"))
				failf("text answer without its content type", NULL);
			if (v == ~0ull)
				failf("no served_hits_total", NULL);
			else if (v < last)
				failf("a counter went down between two scrapes", NULL);
			else
				last = v;
		}
		free(r);
	}
	return NULL;
}

static void reg(void *arg)
{
	(void)arg;
	urcu_memb_register_thread();
}

static void unreg(void *arg)
{
	(void)arg;
	urcu_memb_unregister_thread();
}

int main(void)
{
	static const char *const items[] = {"requests"};
	struct tally_serve_opts o;
	struct tally_serve *srv;
	pthread_t w, c[CLIENTS];
	char why[TALLY_SERVE_ERROR_MAX];
	const char *env = getenv("TALLY_STRESS_SECONDS");
	double secs = env ? atof(env) : 2;
	int idle[IDLE], trickle, i;
	char *r;

	signal(SIGPIPE, SIG_IGN);
	urcu_memb_register_thread(); /* destroys groups at the end */
	tree = tally_tree_create(1);
	if (!tree || tally_tree_set_item_names(tree, items) || tally_counter_init(&hits, 0, 0))
		return 1;
	grp = tally_group_create(tally_tree_root(tree));
	if (!grp || tally_group_set_name(grp, "a") || tally_export_init(&ex) ||
	    tally_export_add_tree(&ex, tree, &(struct tally_export_tree_opts){.prefix = "served",
				  .flags = TALLY_EXPORT_TREE_FLUSH}) ||
	    tally_export_add_counter(&ex, "served_hits", "Hits.", &hits, TALLY_EXPORT_COUNTER))
		return 1;
	memset(&o, 0, sizeof(o));
	o.listen = "127.0.0.1:0";
	o.max_conns = 16;
	o.request_timeout_s = 3;
	o.thread_start = reg;
	o.thread_stop = unreg;
	if (tally_serve_start(&srv, &ex, &o, why, sizeof(why))) {
		fprintf(stderr, "serve: %s\n", why);
		return 1;
	}
	port = tally_serve_port(srv);
	for (i = 0; i < IDLE; i++)
		idle[i] = su_dial(port);
	trickle = su_dial(port);
	if (trickle >= 0 && write(trickle, "GET /metrics HTTP/1.1\r\nX: ", 26) != 26)
		failf("trickle", NULL);
	pthread_create(&w, NULL, writer_main, NULL);
	for (i = 0; i < CLIENTS; i++)
		pthread_create(&c[i], NULL, client_main, (void *)(uintptr_t)i);
	{
		struct timespec ts;
		ts.tv_sec = (time_t)secs;
		ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
		nanosleep(&ts, NULL);
	}
	__atomic_store_n(&stop_clients, 1, __ATOMIC_RELEASE);
	for (i = 0; i < CLIENTS; i++)
		pthread_join(c[i], NULL);
	__atomic_store_n(&stop_writer, 1, __ATOMIC_RELEASE);
	pthread_join(w, NULL);
	/* Quiescent: exact. */
	r = get("/metrics", NULL);
	if (!r || value_of(r, "served_hits_total") != written ||
	    value_of(r, "served_requests_local_total{group=\"/a\"}") != written)
		failf("the final scrape is not exact", r);
	free(r);
	{
		struct tally_serve_stats st = {0};
		tally_serve_stats(srv, &st);
		printf("serve_concurrent: %lu renders, %lu updates, %lu evicted, %lu expired\n",
		       st.renders, written, st.evicted, st.expired);
		if (st.renders < CLIENTS)
			failf("too few renders", NULL);
	}
	for (i = 0; i < IDLE; i++)
		if (idle[i] >= 0)
			close(idle[i]);
	if (trickle >= 0)
		close(trickle);
	tally_serve_stop(srv);
	tally_export_destroy(&ex);
	tally_group_destroy(grp);
	tally_tree_destroy(tree);
	tally_counter_destroy(&hits);
	urcu_memb_unregister_thread();
	return failures ? 1 : 0;
}
