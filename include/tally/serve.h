/**
 * @file tally/serve.h
 * Serve an exporter's /metrics over HTTP in one call, with libmicrohttpd
 * (Debian: libmicrohttpd-dev; CMake target tally::serve, pkg-config
 * tally-serve). Optional: nothing else in tally needs it.
 *
 *   struct tally_serve_opts o = {0};
 *   struct tally_serve *srv;
 *   char why[TALLY_SERVE_ERROR_MAX];
 *   o.listen = "127.0.0.1:9464";
 *   o.thread_start = my_register;   // for trees: void my_register(void *a)
 *   o.thread_stop = my_unregister;  // { (void)a; urcu_memb_register_thread(); }
 *   if (tally_serve_start(&srv, &e, &o, why, sizeof(why)))
 *           fprintf(stderr, "%s\n", why);
 *   ...
 *   tally_serve_stop(srv);
 *
 * GET or HEAD /metrics answers OpenMetrics 1.0 when the Accept header asks
 * for it (tally_export_negotiate(), as Prometheus does), else Prometheus
 * text 0.0.4; ?format=openmetrics, prometheus, json or stat picks one.
 * Other paths: 404; other methods: 405; a request whose headers do not fit
 * in max_request_bytes: 431 (a long URL 414); a render that could not
 * take *lock within render_timeout_ms of its batch's start (held elsewhere
 * all that time), or a failed render: 503 (the render's error on stderr).
 *
 * Renders run on one thread of the server's own, one at a time, in
 * batches: a batch is every request waiting when it starts, and it renders
 * each format they asked for once and answers all of them with that page
 * (a request that arrives during a render waits for the next batch, so its
 * page is never older than its request). The exporter is never used by two
 * threads at once, so any number of concurrent scrapes is safe, and a
 * flood of them costs a render per batch, not one per request. A request
 * waits for its batch suspended: no server thread waits with it. The
 * render thread calls thread_start(thread_arg) first and
 * thread_stop(thread_arg) last, so that it can register with the RCU
 * flavor of a tree it renders (rstat.h requires it of threads that walk
 * groups). A render takes *lock if lock is not NULL, for programs that use
 * the exporter elsewhere too (by trylock and naps of 1 to 8 ms while it is
 * held, so that render_timeout_ms can pass).
 *
 * Slow and idle clients cannot lock a scraper out:
 *   - a request must arrive whole (its headers) within request_timeout_s
 *     of the connection's start or the end of its last answer, and its
 *     answer must be sent within request_timeout_s of that; else the
 *     connection is closed, however steadily it trickles bytes;
 *   - a connection with no progress for idle_timeout_s is closed;
 *   - at most max_conns connections are kept while some are not being
 *     answered: when another one arrives past max_conns, the oldest
 *     connections that are not being answered are closed to make room (a
 *     connection is being answered from the moment its request's headers
 *     are in until its answer is sent, so the ones that wait, idle or
 *     trickling, go first); when every other one is being answered, the
 *     new one is kept too, past max_conns (libmicrohttpd refuses more
 *     than max_conns + max_conns / 2 + 16), and the next one to arrive
 *     closes those that are done by then; there is no limit per address
 *     (Prometheus and an attacker on one host share one).
 * So a new scrape waits for at most two batches (the one rendering when it
 * arrives, and its own; a render per format asked for in each), then for
 * its sending, while any number of clients trickle, sit idle or scrape at
 * once. Everything is event-driven on `threads` threads (epoll where there
 * is one): waiting connections and waiting requests cost no thread.
 *
 * Concurrency: tally_serve_start and tally_serve_stop on one server are
 * not called beside each other; between them, the exporter must not be
 * used by other threads except under *lock, and its registered objects
 * must stay alive. tally_serve_stats may be called beside anything but
 * tally_serve_stop. Blocking (threads, locks, sockets).
 */
#ifndef TALLY_SERVE_H
#define TALLY_SERVE_H

#include <tally/export.h>
#include <tally/os.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The size of the message buffer tally_serve_start() fills on failure. */
#define TALLY_SERVE_ERROR_MAX 256

/**
 * Options for tally_serve_start(). Zero-initialise and set what you need:
 * every zero field means its default.
 */
struct tally_serve_opts {
	/** "HOST:PORT": HOST an IPv4 address, "localhost" (127.0.0.1), "*"
	 * or "" (every IPv4 address), or an IPv6 address in brackets
	 * ("[::1]:9464"); PORT 0..65535, 0 for a free one (see
	 * tally_serve_port()). NULL: "127.0.0.1:9464". */
	const char *listen;
	/** Server threads (event loops); 0: 2. */
	unsigned threads;
	/** Connections kept at once; 0: 64. See the header comment. */
	unsigned max_conns;
	/** Seconds without progress before a connection is closed; 0: 5. */
	unsigned idle_timeout_s;
	/** Seconds a request may take to arrive, and then to be answered;
	 * 0: 10. */
	unsigned request_timeout_s;
	/** Milliseconds a batch's render may wait for *lock before its
	 * requests get 503; 0: 2000. */
	unsigned render_timeout_ms;
	/** Bytes a request's line and headers may take; 0: 16384. */
	size_t max_request_bytes;
	/** Held around each render if not NULL. */
	pthread_mutex_t *lock;
	/** Called on the render thread first, with thread_arg (NULL: nothing). */
	void (*thread_start)(void *arg);
	/** Called on the render thread last, with thread_arg (NULL: nothing). */
	void (*thread_stop)(void *arg);
	/** The argument of thread_start and thread_stop. */
	void *thread_arg;
};

/** What a server did so far (tally_serve_stats()). */
struct tally_serve_stats {
	unsigned long renders;  /**< renders done */
	unsigned long evicted;  /**< connections closed to make room */
	unsigned long expired;  /**< connections closed by request_timeout_s */
	unsigned open;          /**< connections open now */
	unsigned waiting;       /**< requests waiting for their render now */
};


/* Private: one open connection, in order of since (oldest first). */
struct tally__serve_conn {
	struct tally__serve_conn *prev, *next;
	int fd;
	int busy;       /* its request is being answered */
	int closing;    /* shut down by the server; MHD closes it */
	uint64_t since; /* ns: start, last answer, or this request's headers */
};

/* Private: one rendered page, shared by the requests of one batch that
 * asked for its format; the last of them destroys r (each queued it). */
struct tally__serve_page {
	struct MHD_Response *r;
	unsigned refs;
};

/* Private: a request waiting (suspended) for its render. */
struct tally__serve_job {
	struct tally__serve_job *next;
	struct MHD_Connection *mc;
	struct tally__serve_page *page; /* done: the answer; NULL: 503 */
	uint64_t deadline;              /* ns: its render must take *lock by then */
	int fmt;
	int state; /* TALLY__SERVE_QUEUED, _BATCHED, _DONE */
	int gone;  /* its request ended first: the render thread frees it */
};
enum { TALLY__SERVE_QUEUED = 1, TALLY__SERVE_BATCHED, TALLY__SERVE_DONE };

/** A running server (tally_serve_start()); private members. */
struct tally_serve {
	struct tally_export *tally__e;
	struct tally_serve_opts tally__o;
	struct MHD_Daemon *tally__d;
	pthread_t tally__thread;
	pthread_mutex_t tally__mu;
	struct tally__os_cond tally__cv_job, tally__cv_done;
	unsigned tally__jobs_live; /* jobs not freed yet (cv_done: none left) */
	struct tally__serve_job *tally__jobs, *tally__jobs_tail;
	struct tally__serve_conn *tally__conns, *tally__conns_tail;
	unsigned tally__open; /* connections not closing */
	unsigned tally__port;
	int tally__stop;
	struct tally_serve_stats tally__stats;
};

static inline uint64_t tally__serve_now(void)
{
	return tally__os_mono_ns();
}

static inline int tally__serve_fail(char *why, size_t n, int err, const char *a, const char *b,
				    const char *c)
{
	if (why && n)
		(void)snprintf(why, n, "%s%s%s", a, b ? b : "", c ? c : ""); /* may cut */
	return err;
}

/* Parse o->listen into ss; 0 or -EINVAL with why set. */
static inline int tally__serve_parse_listen(const char *l, struct sockaddr_storage *ss,
					    socklen_t *sl, unsigned *port, char *why, size_t n)
{
	char host[64];
	const char *colon, *h = l, *p;
	size_t hl;
	unsigned long v = 0;
	memset(ss, 0, sizeof(*ss));
	colon = strrchr(l, ':');
	if (!colon)
		return tally__serve_fail(why, n, -EINVAL, "listen address '", l,
					 "' has no ':PORT'");
	for (p = colon + 1; *p; p++) {
		if (*p < '0' || *p > '9' || v > 65535)
			break;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (!colon[1] || *p || v > 65535)
		return tally__serve_fail(why, n, -EINVAL, "listen address '", l,
					 "': the port is not a number from 0 to 65535");
	hl = (size_t)(colon - l);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
		if (hl - 2 >= sizeof(host))
			goto bad_host;
		memcpy(host, h + 1, hl - 2);
		host[hl - 2] = '\0';
		if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
			goto bad_host;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)v);
		*sl = sizeof(*a6);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
		if (hl >= sizeof(host))
			goto bad_host;
		memcpy(host, h, hl);
		host[hl] = '\0';
		if (!strcmp(host, "localhost"))
			strcpy(host, "127.0.0.1");
		if (!hl || !strcmp(host, "*"))
			a4->sin_addr.s_addr = htonl(INADDR_ANY);
		else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			goto bad_host;
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)v);
		*sl = sizeof(*a4);
	}
	*port = (unsigned)v;
	return 0;
bad_host:
	return tally__serve_fail(why, n, -EINVAL, "listen address '", l,
				 "': the host is not an IPv4 address, [an IPv6 address], "
				 "localhost or *");
}

/* Close c (mu held): MHD sees the shut-down socket and closes it itself,
 * after the CLOSED notification, which takes mu: so c->fd is still c's. */
static inline void tally__serve_close(struct tally_serve *s, struct tally__serve_conn *c)
{
	shutdown(c->fd, SHUT_RDWR);
	c->closing = 1;
	s->tally__open--;
}

/* Past max_conns: close the oldest connections not being answered, but
 * never keep (the newest, arrived just now). mu held. */
static inline void tally__serve_evict(struct tally_serve *s, const struct tally__serve_conn *keep)
{
	while (s->tally__open > s->tally__o.max_conns) {
		struct tally__serve_conn *v = s->tally__conns;
		while (v && (v->busy || v->closing || v == keep))
			v = v->next;
		if (!v)
			return; /* every other one is being answered: keep them all */
		tally__serve_close(s, v);
		s->tally__stats.evicted++;
	}
}

/* Move c to the end of the list (the newest), since now. mu held. */
static inline void tally__serve_touch(struct tally_serve *s, struct tally__serve_conn *c,
				      uint64_t now)
{
	c->since = now;
	if (!c->next)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->tally__conns = c->next;
	c->next->prev = c->prev;
	c->prev = s->tally__conns_tail;
	c->next = NULL;
	s->tally__conns_tail->next = c;
	s->tally__conns_tail = c;
}

static inline void tally__serve_notify(void *cls, struct MHD_Connection *mc, void **ctx,
				       enum MHD_ConnectionNotificationCode toe)
{
	struct tally_serve *s = (struct tally_serve *)cls;
	struct tally__serve_conn *c = (struct tally__serve_conn *)*ctx;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *i =
			MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!i)
			return;
		c = (struct tally__serve_conn *)calloc(1, sizeof(*c));
		if (!c) {
			shutdown(i->connect_fd, SHUT_RDWR); /* refused: no memory */
			return;
		}
		c->fd = i->connect_fd;
		c->since = tally__serve_now();
		pthread_mutex_lock(&s->tally__mu);
		c->prev = s->tally__conns_tail;
		if (c->prev)
			c->prev->next = c;
		else
			s->tally__conns = c;
		s->tally__conns_tail = c;
		s->tally__open++;
		s->tally__stats.open++;
		tally__serve_evict(s, c);
		pthread_mutex_unlock(&s->tally__mu);
		*ctx = c;
	} else if (c) {
		pthread_mutex_lock(&s->tally__mu);
		if (c->prev)
			c->prev->next = c->next;
		else
			s->tally__conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		else
			s->tally__conns_tail = c->prev;
		if (!c->closing)
			s->tally__open--;
		s->tally__stats.open--;
		pthread_mutex_unlock(&s->tally__mu);
		free(c);
		*ctx = NULL;
	}
}

static inline struct tally__serve_conn *tally__serve_conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? (struct tally__serve_conn *)i->socket_context : NULL;
}

/* Drop one reference to p (mu held); the last one's response, if any, is
 * the caller's to destroy: returned. */
static inline struct MHD_Response *tally__serve_unref(struct tally__serve_page *p)
{
	struct MHD_Response *r = NULL;
	if (p && --p->refs == 0) {
		r = p->r;
		free(p);
	}
	return r;
}

/* A request is done (answered or not): its connection waits again (the
 * next connection to arrive closes the oldest waiting ones while more than
 * max_conns are open). */
static inline void tally__serve_completed(void *cls, struct MHD_Connection *mc, void **req,
					  enum MHD_RequestTerminationCode toe)
{
	struct tally_serve *s = (struct tally_serve *)cls;
	struct tally__serve_conn *c = tally__serve_conn_of(mc);
	struct tally__serve_job *j = *req == (void *)s ? NULL : (struct tally__serve_job *)*req;
	struct MHD_Response *r = NULL;
	(void)toe;
	*req = NULL;
	pthread_mutex_lock(&s->tally__mu);
	if (j && j->state == TALLY__SERVE_DONE) {
		r = tally__serve_unref(j->page);
		free(j);
		if (--s->tally__jobs_live == 0)
			tally__os_cond_broadcast(&s->tally__cv_done);
	} else if (j) {
		j->gone = 1; /* never so while it is suspended; for safety */
	}
	if (c) {
		c->busy = 0;
		tally__serve_touch(s, c, tally__serve_now());
	}
	pthread_mutex_unlock(&s->tally__mu);
	if (r)
		MHD_destroy_response(r);
}

/* Hand the jobs of list (linked by next, taken off the queue) their page p
 * (NULL: 503) and resume their connections; frees the gone ones. mu held on
 * entry, not on return. */
static inline void tally__serve_deliver(struct tally_serve *s, struct tally__serve_job *list,
					struct tally__serve_page *p)
{
	struct tally__serve_job *j, *nx, *wake = NULL;
	struct MHD_Response *r = NULL;
	for (j = list; j; j = nx) {
		nx = j->next;
		s->tally__stats.waiting--;
		if (j->gone) {
			free(j);
			if (--s->tally__jobs_live == 0)
				tally__os_cond_broadcast(&s->tally__cv_done);
			continue;
		}
		j->state = TALLY__SERVE_DONE;
		j->page = p;
		if (p)
			p->refs++;
		j->next = wake;
		wake = j;
	}
	if (p && !p->refs) { /* nobody left to take it */
		r = p->r;
		free(p);
	}
	/* Read each job before its resume: its request may end (and free
	 * it) as soon as its connection runs again. */
	for (j = wake; j; j = nx) {
		struct MHD_Connection *mc = j->mc;
		nx = j->next;
		j->next = NULL;
		pthread_mutex_unlock(&s->tally__mu);
		MHD_resume_connection(mc);
		pthread_mutex_lock(&s->tally__mu);
	}
	pthread_mutex_unlock(&s->tally__mu);
	if (r)
		MHD_destroy_response(r);
}

/* Take the jobs of *list whose deadline passed (all of them if all) into
 * a list of their own. mu held. */
static inline struct tally__serve_job *tally__serve_take(struct tally__serve_job **list,
							  uint64_t now, int all)
{
	struct tally__serve_job *out = NULL, **pp = list;
	while (*pp) {
		struct tally__serve_job *j = *pp;
		if (all || now > j->deadline) {
			*pp = j->next;
			j->next = out;
			out = j;
		} else {
			pp = &j->next;
		}
	}
	return out;
}

/* Close the connections past their request deadline. mu held. */
static inline void tally__serve_expire(struct tally_serve *s, uint64_t now)
{
	uint64_t limit = (uint64_t)s->tally__o.request_timeout_s * 1000000000u;
	struct tally__serve_conn *c;
	for (c = s->tally__conns; c; c = c->next)
		/* now > since: a connection may have come in after now was
		 * read (its since later), which must not look 2^64 ns old. */
		if (!c->closing && now > c->since && now - c->since > limit) {
			tally__serve_close(s, c);
			s->tally__stats.expired++;
		}
}

/* Take *lock for a render of batch (mu not held), failing with 503 the
 * jobs whose deadline passes meanwhile (all of them once the server
 * stops): 1 with the lock, 0 when *batch emptied first. Polls (1 to 8 ms
 * naps): the lock is held elsewhere only by programs that share the
 * exporter, and briefly; a timed lock is not everywhere. */
static inline int tally__serve_lock(struct tally_serve *s, struct tally__serve_job **batch)
{
	unsigned nap = 0;
	while (pthread_mutex_trylock(s->tally__o.lock) != 0) {
		struct timespec ts;
		uint64_t now;
		struct tally__serve_job *late;
		pthread_mutex_lock(&s->tally__mu);
		now = tally__serve_now();
		tally__serve_expire(s, now);
		late = tally__serve_take(batch, now, s->tally__stop); /* stop: all */
		if (late) {
			tally__serve_deliver(s, late, NULL); /* unlocks mu */
			pthread_mutex_lock(&s->tally__mu);
		}
		if (!*batch) {
			pthread_mutex_unlock(&s->tally__mu);
			return 0;
		}
		/* Nap 1, 2, .. 8 ms (cut short by a new request or the stop). */
		nap = nap < 8000000u ? nap + 1000000u : nap;
		tally__os_cond_deadline(&s->tally__cv_job, &ts, nap);
		if (!s->tally__stop)
			tally__os_cond_timedwait(&s->tally__cv_job, &s->tally__mu, &ts);
		pthread_mutex_unlock(&s->tally__mu);
	}
	return 1;
}

/* The render thread: renders a batch at a time, and closes connections
 * past their request deadline. A batch is every request waiting when it
 * starts; it renders each format they asked for once. */
static inline void *tally__serve_main(void *arg)
{
	struct tally_serve *s = (struct tally_serve *)arg;
	if (s->tally__o.thread_start)
		s->tally__o.thread_start(s->tally__o.thread_arg);
	pthread_mutex_lock(&s->tally__mu);
	while (!s->tally__stop) {
		struct tally__serve_job *batch = s->tally__jobs, *j;
		struct timespec ts;
		if (!batch) {
			tally__serve_expire(s, tally__serve_now());
			/* the next look at the deadlines: 200 ms */
			tally__os_cond_deadline(&s->tally__cv_job, &ts, 200000000u);
			tally__os_cond_timedwait(&s->tally__cv_job, &s->tally__mu, &ts);
			continue;
		}
		s->tally__jobs = s->tally__jobs_tail = NULL;
		for (j = batch; j; j = j->next) {
			j->state = TALLY__SERVE_BATCHED;
			j->deadline = tally__serve_now() +
				      (uint64_t)s->tally__o.render_timeout_ms * 1000000u;
		}
		pthread_mutex_unlock(&s->tally__mu);
		while (batch) {
			int fmt = batch->fmt, err;
			char *out = NULL;
			size_t len = 0;
			struct tally__serve_page *p = NULL;
			struct tally__serve_job *mine = NULL, **pp;
			if (s->tally__o.lock && !tally__serve_lock(s, &batch))
				break;
			err = tally_export_render_alloc(s->tally__e, fmt, &out, &len);
			if (err)
				(void)fprintf(stderr, "tally_serve: render: %s\n",
					      tally_export_error(s->tally__e));
			if (s->tally__o.lock)
				pthread_mutex_unlock(s->tally__o.lock);
			if (!err)
				p = (struct tally__serve_page *)calloc(1, sizeof(*p));
			if (p)
				p->r = MHD_create_response_from_buffer(len, out,
								       MHD_RESPMEM_MUST_FREE);
			if (p && p->r) {
				MHD_add_response_header(p->r, MHD_HTTP_HEADER_CONTENT_TYPE,
							tally_export_content_type(fmt));
			} else {
				free(out);
				free(p);
				p = NULL;
			}
			pthread_mutex_lock(&s->tally__mu);
			s->tally__stats.renders++;
			for (pp = &batch; *pp;) { /* this format's jobs */
				j = *pp;
				if (j->fmt == fmt) {
					*pp = j->next;
					j->next = mine;
					mine = j;
				} else {
					pp = &j->next;
				}
			}
			tally__serve_deliver(s, mine, p); /* unlocks mu */
		}
		pthread_mutex_lock(&s->tally__mu);
	}
	/* Stopping: the requests still waiting get 503. */
	{
		struct tally__serve_job *rest = s->tally__jobs;
		s->tally__jobs = s->tally__jobs_tail = NULL;
		tally__serve_deliver(s, rest, NULL); /* unlocks mu */
	}
	if (s->tally__o.thread_stop)
		s->tally__o.thread_stop(s->tally__o.thread_arg);
	return NULL;
}

#if MHD_VERSION < 0x00097002
typedef int tally__serve_result;
#else
typedef enum MHD_Result tally__serve_result;
#endif

static inline tally__serve_result tally__serve_reply(struct MHD_Connection *c, unsigned status,
						     const char *type, char *body, size_t len,
						     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	tally__serve_result ret;
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static inline tally__serve_result tally__serve_handle(void *cls, struct MHD_Connection *mc,
						      const char *url, const char *method,
						      const char *version, const char *upload,
						      size_t *upload_size, void **req)
{
	static char not_found[] = "not found: try /metrics\n";
	static char not_allowed[] = "method not allowed\n";
	static char bad_format[] = "unknown format: try prometheus, openmetrics, json or stat\n";
	static char unavailable[] = "render failed or timed out\n";
	struct tally_serve *s = (struct tally_serve *)cls;
	struct tally__serve_job *j;
	const char *q;
	int fmt;
	(void)version;
	(void)upload;
	if (!*req) {
		/* The headers are in: this connection is being answered. */
		struct tally__serve_conn *c = tally__serve_conn_of(mc);
		*req = s;
		if (c) {
			pthread_mutex_lock(&s->tally__mu);
			c->busy = 1;
			tally__serve_touch(s, c, tally__serve_now());
			pthread_mutex_unlock(&s->tally__mu);
		}
	}
	if (*req != (void *)s) { /* resumed: its render is done */
		struct MHD_Response *r;
		tally__serve_result ret;
		j = (struct tally__serve_job *)*req;
		if (!j->page)
			return tally__serve_reply(mc, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
						  unavailable, sizeof(unavailable) - 1,
						  MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_response(mc, MHD_HTTP_OK, j->page->r);
		pthread_mutex_lock(&s->tally__mu);
		r = tally__serve_unref(j->page);
		j->page = NULL;
		pthread_mutex_unlock(&s->tally__mu);
		if (r)
			MHD_destroy_response(r);
		return ret;
	}
	if (*upload_size) { /* a body we do not want: drop it */
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(url, "/metrics") != 0)
		return tally__serve_reply(mc, MHD_HTTP_NOT_FOUND, "text/plain", not_found,
					  sizeof(not_found) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return tally__serve_reply(mc, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
					  not_allowed, sizeof(not_allowed) - 1,
					  MHD_RESPMEM_PERSISTENT);
	fmt = tally_export_negotiate(MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Accept"));
	q = MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, "format");
	if (q) {
		if (!strcmp(q, "prometheus"))
			fmt = TALLY_EXPORT_PROMETHEUS;
		else if (!strcmp(q, "openmetrics"))
			fmt = TALLY_EXPORT_OPENMETRICS;
		else if (!strcmp(q, "json"))
			fmt = TALLY_EXPORT_JSON;
		else if (!strcmp(q, "stat"))
			fmt = TALLY_EXPORT_STAT;
		else
			return tally__serve_reply(mc, MHD_HTTP_BAD_REQUEST, "text/plain",
						  bad_format, sizeof(bad_format) - 1,
						  MHD_RESPMEM_PERSISTENT);
	}
	/* Wait for the next batch's render, suspended: no thread waits. The
	 * connection runs again (this call again, with *req = j) once the
	 * render thread resumes it; suspended before j is queued, and never
	 * under mu (MHD takes locks of its own around our callbacks). */
	j = (struct tally__serve_job *)calloc(1, sizeof(*j));
	if (!j)
		return tally__serve_reply(mc, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
					  unavailable, sizeof(unavailable) - 1,
					  MHD_RESPMEM_PERSISTENT);
	j->mc = mc;
	j->fmt = fmt;
	*req = j;
	MHD_suspend_connection(mc);
	pthread_mutex_lock(&s->tally__mu);
	s->tally__jobs_live++;
	if (s->tally__stop) { /* no render thread to resume it: 503 now */
		j->state = TALLY__SERVE_DONE;
		pthread_mutex_unlock(&s->tally__mu);
		MHD_resume_connection(mc);
		return MHD_YES;
	}
	j->state = TALLY__SERVE_QUEUED;
	if (s->tally__jobs_tail)
		s->tally__jobs_tail->next = j;
	else
		s->tally__jobs = j;
	s->tally__jobs_tail = j;
	s->tally__stats.waiting++;
	tally__os_cond_signal(&s->tally__cv_job);
	pthread_mutex_unlock(&s->tally__mu);
	return MHD_YES;
}


/**
 * tally_serve_start - serve e's /metrics as the header comment says, on
 * o->listen (o NULL: every default).
 * @param out the server, for tally_serve_port(), _stats() and _stop()
 * @param e an initialised exporter, its sources registered (it may get
 *        more only under o->lock)
 * @param o options, copied
 * @param why NULL or a buffer of why_size bytes (TALLY_SERVE_ERROR_MAX is
 *        enough) for a one-line message on failure
 * @param why_size the size of why
 * @return 0 once it accepts connections; -EINVAL (NULL out or e, a listen
 * address that does not parse, such as "127.0.0.1:abc"), -EADDRINUSE or
 * another -errno (the address cannot be bound: libmicrohttpd's own message
 * is on stderr), or -ENOMEM; *out is NULL on failure.
 */
static inline int tally_serve_start(struct tally_serve **out, struct tally_export *e,
				    const struct tally_serve_opts *o, char *why, size_t why_size)
{
	struct tally_serve *s;
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	struct MHD_OptionItem pool[2];
	unsigned flags, port = 0;
	int err;
	if (why && why_size)
		why[0] = '\0';
	if (!out || !e)
		return tally__serve_fail(why, why_size, -EINVAL, "tally_serve_start: ",
					 out ? "NULL exporter" : "NULL out", NULL);
	*out = NULL;
	s = (struct tally_serve *)calloc(1, sizeof(*s));
	if (!s)
		return tally__serve_fail(why, why_size, -ENOMEM, "out of memory", NULL, NULL);
	if (o)
		s->tally__o = *o;
	if (!s->tally__o.listen)
		s->tally__o.listen = "127.0.0.1:9464";
	if (!s->tally__o.threads)
		s->tally__o.threads = 2;
	if (!s->tally__o.max_conns)
		s->tally__o.max_conns = 64;
	if (!s->tally__o.idle_timeout_s)
		s->tally__o.idle_timeout_s = 5;
	if (!s->tally__o.request_timeout_s)
		s->tally__o.request_timeout_s = 10;
	if (!s->tally__o.render_timeout_ms)
		s->tally__o.render_timeout_ms = 2000;
	if (!s->tally__o.max_request_bytes)
		s->tally__o.max_request_bytes = 16384;
	err = tally__serve_parse_listen(s->tally__o.listen, &ss, &sl, &port, why, why_size);
	if (err) {
		free(s);
		return err;
	}
	s->tally__o.listen = NULL; /* the caller's string: not kept */
	s->tally__e = e;
	s->tally__port = port;
	if ((err = pthread_mutex_init(&s->tally__mu, NULL)) != 0) {
		free(s);
		return tally__serve_fail(why, why_size, -err, "cannot make a mutex", NULL, NULL);
	}
	if ((err = tally__os_cond_init(&s->tally__cv_job)) != 0) {
		pthread_mutex_destroy(&s->tally__mu);
		free(s);
		return tally__serve_fail(why, why_size, err, "cannot make a condition variable",
					 NULL, NULL);
	}
	if ((err = tally__os_cond_init(&s->tally__cv_done)) != 0) {
		tally__os_cond_destroy(&s->tally__cv_job);
		pthread_mutex_destroy(&s->tally__mu);
		free(s);
		return tally__serve_fail(why, why_size, err, "cannot make a condition variable",
					 NULL, NULL);
	}
	if ((err = pthread_create(&s->tally__thread, NULL, tally__serve_main, s)) != 0) {
		err = -err;
		tally__serve_fail(why, why_size, err, "cannot start the render thread", NULL,
				  NULL);
		goto fail;
	}
	/* One thread: no pool option at all (libmicrohttpd warns of a pool
	 * of 0 or 1 on every start). */
	pool[0].option = s->tally__o.threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END;
	pool[0].value = (intptr_t)s->tally__o.threads;
	pool[0].ptr_value = NULL;
	pool[1].option = MHD_OPTION_END;
	pool[1].value = 0;
	pool[1].ptr_value = NULL;
	flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	s->tally__d = MHD_start_daemon(
		flags, 0, NULL, NULL, tally__serve_handle, s, MHD_OPTION_SOCK_ADDR,
		(const struct sockaddr *)&ss, MHD_OPTION_ARRAY, pool,
		/* Room beyond max_conns for connections that are being closed
		 * while new ones arrive: eviction keeps below it. */
		MHD_OPTION_CONNECTION_LIMIT, s->tally__o.max_conns + s->tally__o.max_conns / 2 + 16,
		MHD_OPTION_CONNECTION_TIMEOUT, s->tally__o.idle_timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, s->tally__o.max_request_bytes,
		MHD_OPTION_LISTEN_BACKLOG_SIZE, s->tally__o.max_conns + 16,
		MHD_OPTION_NOTIFY_CONNECTION, tally__serve_notify, s,
		MHD_OPTION_NOTIFY_COMPLETED, tally__serve_completed, s, MHD_OPTION_END);
	if (!s->tally__d) {
		err = errno ? -errno : -EADDRINUSE;
		tally__serve_fail(why, why_size, err, "cannot listen on the address given ",
				  "(in use, not local, or not allowed)", NULL);
		pthread_mutex_lock(&s->tally__mu);
		s->tally__stop = 1;
		tally__os_cond_signal(&s->tally__cv_job);
		pthread_mutex_unlock(&s->tally__mu);
		pthread_join(s->tally__thread, NULL);
		goto fail;
	}
	{
		const union MHD_DaemonInfo *i =
			MHD_get_daemon_info(s->tally__d, MHD_DAEMON_INFO_BIND_PORT);
		if (i)
			s->tally__port = i->port;
	}
	*out = s;
	return 0;
fail:
	tally__os_cond_destroy(&s->tally__cv_job);
	tally__os_cond_destroy(&s->tally__cv_done);
	pthread_mutex_destroy(&s->tally__mu);
	free(s);
	return err;
}

/** tally_serve_port - the port s listens on (the one picked for port 0). */
static inline unsigned tally_serve_port(const struct tally_serve *s)
{
	return s ? s->tally__port : 0;
}

/** tally_serve_stats - what s did so far, into *st. -EINVAL for NULL. */
static inline int tally_serve_stats(struct tally_serve *s, struct tally_serve_stats *st)
{
	if (!s || !st)
		return -EINVAL;
	pthread_mutex_lock(&s->tally__mu);
	*st = s->tally__stats;
	pthread_mutex_unlock(&s->tally__mu);
	return 0;
}

/**
 * tally_serve_stop - stop s: stop the render thread (after the render it is
 * running, and thread_stop), answer 503 to the requests still waiting for
 * a render (a second at most for their sending), close the connections and
 * free s. The exporter is the caller's again. NULL: no-op.
 */
static inline void tally_serve_stop(struct tally_serve *s)
{
	if (!s)
		return;
	/* The render thread first: it answers (503) and resumes every
	 * request still waiting, so that no connection is suspended when the
	 * daemon stops; later ones get 503 at once. */
	pthread_mutex_lock(&s->tally__mu);
	s->tally__stop = 1;
	tally__os_cond_signal(&s->tally__cv_job);
	pthread_mutex_unlock(&s->tally__mu);
	pthread_join(s->tally__thread, NULL);
	/* Let the resumed ones send their 503 (a second at most: a client
	 * that does not read is not waited for). */
	pthread_mutex_lock(&s->tally__mu);
	{
		struct timespec ts;
		tally__os_cond_deadline(&s->tally__cv_done, &ts, 1000000000u);
		while (s->tally__jobs_live &&
		       tally__os_cond_timedwait(&s->tally__cv_done, &s->tally__mu, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&s->tally__mu);
	MHD_stop_daemon(s->tally__d);
	tally__os_cond_destroy(&s->tally__cv_job);
	tally__os_cond_destroy(&s->tally__cv_done);
	pthread_mutex_destroy(&s->tally__mu);
	free(s);
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_SERVE_H */
