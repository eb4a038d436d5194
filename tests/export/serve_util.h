/*
 * Helpers of the tally/serve.h tests (serve_batch.c, serve_cap.c,
 * serve_threads1.c, serve_timeout.c, serve_concurrent.c): loopback connections, whole answers, and waiting for
 * the server's stats to reach a state (generous deadlines: a loaded
 * machine only makes them slower, never wrong).
 */
#ifndef TALLY_TEST_SERVE_UTIL_H
#define TALLY_TEST_SERVE_UTIL_H

#include <tally/serve.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int su_failures __attribute__((unused));

static inline void su_fail(const char *what, const char *detail)
{
	su_failures++;
	fprintf(stderr, "FAIL: %s%s%.300s\n", what, detail ? ": " : "", detail ? detail : "");
}

static inline double su_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void su_nap_ms(long ms)
{
	struct timespec ts;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
}

/* A connection to 127.0.0.1:port (reads time out after 60 s: a hang
 * guard, not a measurement), or -1. */
static inline int su_dial(unsigned port)
{
	struct sockaddr_in a;
	struct timeval tv = {60, 0};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Send a whole GET /metrics (HTTP/1.0: the server closes after it). */
static inline int su_send_get(int fd)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n";
	return write(fd, req, sizeof(req) - 1) == (ssize_t)(sizeof(req) - 1) ? 0 : -1;
}

/* Read fd to its end; the answer (malloc'd, NUL-terminated) and its length
 * in *n. Closes fd. */
static inline char *su_read_all(int fd, size_t *n)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = (char *)malloc(cap);
	for (;;) {
		ssize_t r;
		if (len + 1 == cap)
			buf = (char *)realloc(buf, cap *= 2);
		r = read(fd, buf + len, cap - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	close(fd);
	*n = len;
	return buf;
}

/* The body of a 200 answer (a pointer into a), or NULL. */
static inline const char *su_body_200(const char *a)
{
	const char *b = strstr(a, "\r\n\r\n");
	if (strncmp(a, "HTTP/1.", 7) || strncmp(a + 9, "200", 3) || !b)
		return NULL;
	return b + 4;
}

static inline struct tally_serve_stats su_stats(struct tally_serve *s)
{
	struct tally_serve_stats st;
	memset(&st, 0, sizeof(st));
	tally_serve_stats(s, &st);
	return st;
}

/* Wait (up to 60 s) until the stat member field of s is want: 0 once it is,
 * -1 (reported) on the deadline. */
#define su_wait_stat(s, field, want)                                                        \
	su_wait_stat_((s), offsetof(struct tally_serve_stats, field),                       \
		      sizeof(((struct tally_serve_stats *)0)->field), (unsigned long)(want), #field)

static inline int su_wait_stat_(struct tally_serve *s, size_t off, size_t size, unsigned long want,
			 const char *name)
{
	double end = su_now() + 60;
	unsigned long v = 0;
	char msg[128];
	do {
		struct tally_serve_stats st = su_stats(s);
		if (size == sizeof(unsigned))
			v = *(unsigned *)(void *)((char *)&st + off);
		else
			v = *(unsigned long *)(void *)((char *)&st + off);
		if (v == want)
			return 0;
		su_nap_ms(2);
	} while (su_now() < end);
	snprintf(msg, sizeof(msg), "%s is %lu after 60 s, want %lu", name, v, want);
	su_fail("waiting for the server", msg);
	return -1;
}

#endif
