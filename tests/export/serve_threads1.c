/*
 * tally/serve.h with threads = 1 starts, serves and stops without a word
 * on stderr (libmicrohttpd warned on every start when it was given a
 * thread pool of 0 or 1 instead of no pool option). stderr is a temporary
 * file around start, a scrape and stop; it must stay empty.
 */
#define _GNU_SOURCE
#include "serve_util.h"

#include <signal.h>

int main(void)
{
	static struct tally_counter c;
	struct tally_export ex;
	struct tally_serve_opts o;
	struct tally_serve *srv;
	char why[TALLY_SERVE_ERROR_MAX], said[512];
	FILE *f = tmpfile();
	int saved = dup(2), fd, err;
	const char *b;
	char *a;
	size_t n;
	long len;

	signal(SIGPIPE, SIG_IGN);
	if (!f || saved < 0 || tally_counter_init(&c, 0, 0) || tally_export_init(&ex) ||
	    tally_export_add_counter(&ex, "one", "Help.", &c, TALLY_EXPORT_COUNTER))
		return 1;
	memset(&o, 0, sizeof(o));
	o.listen = "127.0.0.1:0";
	o.threads = 1;
	fflush(stderr);
	dup2(fileno(f), 2);
	err = tally_serve_start(&srv, &ex, &o, why, sizeof(why));
	if (!err) {
		fd = su_dial(tally_serve_port(srv));
		if (fd >= 0 && !su_send_get(fd)) {
			a = su_read_all(fd, &n);
			b = su_body_200(a);
			if (!b || !strstr(b, "\none_total 0\n"))
				err = -EPROTO;
			free(a);
		} else {
			err = -EIO;
		}
		tally_serve_stop(srv);
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	if (err)
		su_fail("threads = 1: start or scrape failed", why);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	if (len != 0) {
		rewind(f);
		n = fread(said, 1, sizeof(said) - 1, f);
		said[n] = '\0';
		su_fail("threads = 1 wrote to stderr", said);
	}
	fclose(f);
	printf("serve_threads1: %s\n", su_failures ? "failed" : "quiet");
	tally_export_destroy(&ex);
	tally_counter_destroy(&c);
	return su_failures ? 1 : 0;
}
