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
 *
 * The machinery is in private headers under tally/serve/: listen.h (the
 * address), conns.h (connections, eviction, deadlines), render.h (the
 * render thread and its batches) and http.h (libmicrohttpd's callbacks).
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

/* Private: an open connection (tally/serve/conns.h) and a request waiting
 * for its render (tally/serve/render.h). */
struct tally__serve_conn;
struct tally__serve_job;

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

#define TALLY__SERVE_INSIDE 1
#include <tally/serve/listen.h>
#include <tally/serve/conns.h>
#include <tally/serve/render.h>
#include <tally/serve/http.h>
#undef TALLY__SERVE_INSIDE

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
