/**
 * @file
 * tally/serve/http.h - the requests of tally/serve.h (private; include
 * <tally/serve.h>): libmicrohttpd's request callback (the path, method
 * and format; a request suspended and queued for the render thread, then
 * answered with its batch's page or 503) and its completion callback.
 */
#ifndef TALLY_SERVE_HTTP_H
#define TALLY_SERVE_HTTP_H

#if !defined(TALLY__SERVE_INSIDE)
#  error "tally/serve/http.h is private: include <tally/serve.h>"
#endif

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

#endif /* TALLY_SERVE_HTTP_H */
