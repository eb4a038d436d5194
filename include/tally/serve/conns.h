/**
 * @file
 * tally/serve/conns.h - the connections of tally/serve.h (private; include
 * <tally/serve.h>): a list of the open ones, oldest first, kept by
 * libmicrohttpd's connection notifications; eviction past max_conns (the
 * oldest not being answered first) and the close that eviction and
 * request_timeout_s use. Every list operation holds the server's mu.
 */
#ifndef TALLY_SERVE_CONNS_H
#define TALLY_SERVE_CONNS_H

#if !defined(TALLY__SERVE_INSIDE)
#  error "tally/serve/conns.h is private: include <tally/serve.h>"
#endif

/* Private: one open connection, in order of since (oldest first). */
struct tally__serve_conn {
	struct tally__serve_conn *prev, *next;
	int fd;
	int busy;       /* its request is being answered */
	int closing;    /* shut down by the server; MHD closes it */
	uint64_t since; /* ns: start, last answer, or this request's headers */
};

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

#endif /* TALLY_SERVE_CONNS_H */
