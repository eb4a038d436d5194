/**
 * @file
 * tally/serve/listen.h - the listen address of tally/serve.h (private;
 * include <tally/serve.h>): "HOST:PORT" parsed into a socket address,
 * and the clock and the failure message every part of the server uses.
 */
#ifndef TALLY_SERVE_LISTEN_H
#define TALLY_SERVE_LISTEN_H

#if !defined(TALLY__SERVE_INSIDE)
#  error "tally/serve/listen.h is private: include <tally/serve.h>"
#endif

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

#endif /* TALLY_SERVE_LISTEN_H */
