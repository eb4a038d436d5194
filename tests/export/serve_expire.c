/*
 * tally/serve.h's request deadline (request_timeout_s), checked on the
 * render thread's pass over the connections itself (tally__serve_expire),
 * with times chosen instead of waited for:
 *   - a connection whose since is later than the pass's clock reading (it
 *     came in after the render thread read the clock, before it took the
 *     lock) is not expired: its age is not now - since taken modulo 2^64;
 *   - one inside its deadline is kept, one past it is closed and counted.
 * A busy run once closed fresh connections so (serve_cap: "open is 2 after
 * 60 s, want 4"); this shows it every run.
 */
#define _GNU_SOURCE
#include "serve_util.h"

int main(void)
{
	static struct tally_serve s;
	struct tally__serve_conn c[3];
	const uint64_t sec = 1000000000u, now = 1000 * sec;
	unsigned i;
	memset(c, 0, sizeof(c));
	s.tally__o.request_timeout_s = 10;
	c[0].since = now - 11 * sec; /* past its deadline */
	c[1].since = now - 9 * sec;  /* inside it */
	c[2].since = now + 5000;     /* came in after now was read */
	for (i = 0; i < 3; i++) {
		c[i].fd = -1; /* the close's shutdown() does nothing */
		c[i].prev = i ? &c[i - 1] : NULL;
		c[i].next = i < 2 ? &c[i + 1] : NULL;
	}
	s.tally__conns = &c[0];
	s.tally__conns_tail = &c[2];
	s.tally__open = 3;
	tally__serve_expire(&s, now);
	if (!c[0].closing)
		su_fail("a connection 11 s old (deadline 10 s) was not closed", NULL);
	if (c[1].closing)
		su_fail("a connection 9 s old (deadline 10 s) was closed", NULL);
	if (c[2].closing)
		su_fail("a connection newer than the clock reading was closed as expired", NULL);
	if (s.tally__stats.expired != 1 || s.tally__open != 2)
		su_fail("not exactly one expired", NULL);
	printf("serve_expire: %lu expired, %u open\n", s.tally__stats.expired, s.tally__open);
	return su_failures ? 1 : 0;
}
