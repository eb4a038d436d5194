// The C++ twin of consumer.c: the same checks through the same headers.
#include <cstdio>
#include <tally/tally.h>

namespace {

struct counter_guard {
	tally_counter c;
	explicit counter_guard(tally_sword initial) : c() { ok = tally_counter_init(&c, initial, 0) == 0; }
	~counter_guard() { if (ok) tally_counter_destroy(&c); }
	bool ok;
};

struct vec_guard {
	tally_vec v;
	explicit vec_guard(unsigned n) : v() { ok = tally_vec_init(&v, n, 0) == 0; }
	~vec_guard() { if (ok) tally_vec_destroy(&v); }
	bool ok;
};

} // namespace

int main()
{
	counter_guard c(10);
	vec_guard v(4);
	if (!c.ok || !v.ok)
		return 1;
	for (int i = 0; i < 1000; i++)
		tally_counter_add(&c.c, 3);
	for (int i = 0; i < 500; i++)
		tally_vec_inc(&v.v, 2);
	tally_vec_mod(&v.v, 3, -7);
	tally_vec_fold(&v.v);
	tally_counter_fold_all(&c.c);
	const tally_sword sum = tally_counter_sum(&c.c);

	const bool ok = sum == 3010 && tally_counter_read(&c.c) == 3010 &&
			tally_vec_read(&v.v, 2) == 500 && tally_vec_read_exact(&v.v, 3) == -7 &&
			tally_vec_read(&v.v, 3) == 0;
	std::printf("consumer (C++, tally %d): counter %lld, vec[2] %llu: %s\n", TALLY_VERSION_NUMBER,
		    static_cast<long long>(sum),
		    static_cast<unsigned long long>(tally_vec_read(&v.v, 2)), ok ? "ok" : "WRONG");
	return ok ? 0 : 1;
}
