/**
 * @file
 * tally/serve/render.h - the render thread of tally/serve.h (private;
 * include <tally/serve.h>): waiting requests (jobs) taken a batch at a
 * time, a render per format asked for, each page shared by the batch's
 * requests of that format (reference counted) and handed back by resuming
 * their connections; the wait for the program's lock with
 * render_timeout_ms, and the closing of connections past their request
 * deadline.
 */
#ifndef TALLY_SERVE_RENDER_H
#define TALLY_SERVE_RENDER_H

#if !defined(TALLY__SERVE_INSIDE)
#  error "tally/serve/render.h is private: include <tally/serve.h>"
#endif

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

#endif /* TALLY_SERVE_RENDER_H */
