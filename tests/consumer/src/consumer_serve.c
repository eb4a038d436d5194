/* An outside program serving a counter with tally/serve.h (libmicrohttpd):
 * a free loopback port, one GET /metrics over a socket, checked. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <tally/serve.h>

int main(void)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	struct tally_counter c;
	struct tally_export e;
	struct tally_serve_opts o;
	struct tally_serve *s;
	struct sockaddr_in a;
	char why[TALLY_SERVE_ERROR_MAX], buf[4096];
	size_t len = 0;
	ssize_t n;
	int fd, ok;

	memset(&o, 0, sizeof(o));
	o.listen = "127.0.0.1:0";
	if (tally_counter_init(&c, 0, 0) || tally_export_init(&e) ||
	    tally_export_add_counter(&e, "served", "Served.", &c, TALLY_EXPORT_COUNTER))
		return 1;
	tally_counter_add(&c, 7);
	if (tally_serve_start(&s, &e, &o, why, sizeof(why))) {
		fprintf(stderr, "consumer (C, serve): %s\n", why);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)tally_serve_port(s));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
		return 1;
	while (len + 1 < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
	ok = strstr(buf, " 200 ") && strstr(buf, "\nserved_total 7\n");
	printf("consumer (C, serve): port %u: %s\n", tally_serve_port(s), ok ? "ok" : "WRONG");
	tally_serve_stop(s);
	tally_export_destroy(&e);
	tally_counter_destroy(&c);
	return ok ? 0 : 1;
}
