/*
 * shm_basic - tally/shm.h: a region shared by processes.
 *   - create, attach again, same name = same object, kinds, names, -EROFS;
 *   - forked workers adding to shared counters: exact totals;
 *   - kill -9 of workers mid-load: every add that returned is counted
 *     (each worker acknowledges its adds in shared memory after they
 *     return: total - acked is 0 or 1, the add in flight);
 *   - a creator killed while it holds the region's lock, at each step of a
 *     creation: the lock is free again, nothing is given twice, a
 *     published entry is indexed by the next creator;
 *   - read-only attach and snapshots; hostile and incompatible regions
 *     (bad magic, version, word size, slot count, counts, offsets, names,
 *     truncation) refused with their reason.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <signal.h>
#include <sys/wait.h>

static volatile int kill_at_step = -1;
#define TALLY__SHM_CREATE_HOOK(step)                                                               \
	do {                                                                                       \
		if ((step) == kill_at_step)                                                        \
			raise(SIGKILL);                                                            \
	} while (0)
#include <tally/shm.h>

#include <stddef.h>

static char dir[] = "/tmp/tally-shm-basic.XXXXXX";
static char path[256];

static struct tally_shm *open_rw(const char *p, const struct tally_shm_opts *o)
{
	struct tally_shm *r = NULL;
	char why[TALLY_SHM_ERROR_MAX];
	int err = tally_shm_open(&r, p, o, why, sizeof(why));
	CHECK(err == 0, "tally_shm_open(%s): %d %s", p, err, why);
	return r;
}

static int snap_value(struct tally_shm *r, const char *name, tally_uword *v)
{
	struct tally_shm_snap s = {0};
	size_t i;
	int found = 0;
	int err = tally_shm_snapshot(r, &s);
	CHECK(err == 0, "snapshot: %d %s", err, tally_shm_error(r));
	for (i = 0; i < s.n; i++)
		if (!strcmp(s.v[i].name, name)) {
			*v = s.v[i].raw;
			found++;
		}
	tally_shm_snap_free(&s);
	return found;
}

static void basics(void)
{
	struct tally_shm_opts o = {0};
	struct tally_shm *a, *b, *ro = NULL;
	struct tally_shm_counter c1, c2, g, x;
	char why[TALLY_SHM_ERROR_MAX];
	struct stat sb;
	tally_uword v = 0;
	o.max_objects = 64;
	snprintf(path, sizeof(path), "%s/basic", dir);
	a = open_rw(path, &o);
	b = open_rw(path, NULL); /* attaches: the creator's sizes */
	if (!a || !b)
		return;
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600, "mode %o", sb.st_mode & 0777);
	CHECK_EQ(tally_shm_counter(a, "requests", &c1), 0);
	CHECK_EQ(tally_shm_counter(b, "requests", &c2), 0);
	tally_shm_add(&c1, 5);
	tally_shm_add(&c2, 7);
	CHECK_EQ(tally_shm_sum(&c1), 12);
	CHECK_EQ(tally_shm_sum(&c2), 12);
	CHECK_EQ(tally_shm_gauge(a, "inflight", &g), 0);
	tally_shm_add(&g, 3);
	tally_shm_add(&g, -5);
	CHECK_EQ((tally_sword)tally_shm_sum(&g), -2);
	CHECK_EQ(tally_shm_gauge(b, "requests", &x), -EEXIST);
	CHECK(strstr(tally_shm_error(b), "exists as a counter") != NULL, "%s", tally_shm_error(b));
	CHECK_EQ(tally_shm_counter(a, "", &x), -EINVAL);
	CHECK_EQ(tally_shm_counter(a, "9lives", &x), -EINVAL);
	CHECK_EQ(tally_shm_counter(a, "a b", &x), -EINVAL);
	CHECK_EQ(tally_shm_counter(a, NULL, &x), -EINVAL);
	{
		char longname[TALLY_SHM_NAME_MAX + 2];
		memset(longname, 'n', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		CHECK_EQ(tally_shm_counter(a, longname, &x), -EINVAL);
		longname[TALLY_SHM_NAME_MAX] = '\0';
		CHECK_EQ(tally_shm_counter(a, longname, &x), 0);
	}
	CHECK_EQ(tally_shm_open_ro(&ro, path, 0, why, sizeof(why)), 0);
	if (ro) {
		CHECK_EQ(snap_value(ro, "requests", &v), 1);
		CHECK_EQ(v, 12);
		CHECK_EQ(snap_value(ro, "inflight", &v), 1);
		CHECK_EQ((tally_sword)v, -2);
		CHECK_EQ(tally_shm_counter(ro, "more", &x), -EROFS);
		tally_shm_close(ro);
	}
	/* Exclusive creation and attach-only. */
	CHECK_EQ(tally_shm_open(&ro, path, &(struct tally_shm_opts){.flags = TALLY_SHM_EXCL}, why,
				sizeof(why)),
		 -EEXIST);
	CHECK_EQ(tally_shm_open(&ro, "/tmp/tally-shm-none/x",
				&(struct tally_shm_opts){.flags = TALLY_SHM_NOCREATE}, why, sizeof(why)),
		 -ENOENT);
	/* Full: 64 objects. */
	{
		int i, err = 0;
		char nm[32];
		for (i = 0; i < 70 && !err; i++) {
			snprintf(nm, sizeof(nm), "fill_%d", i);
			err = tally_shm_counter(a, nm, &x);
		}
		CHECK_EQ(err, -ENOSPC);
		CHECK(strstr(tally_shm_error(a), "full") != NULL, "%s", tally_shm_error(a));
	}
	tally_shm_close(a);
	tally_shm_close(b);
}

/* Forked workers, each adding to a shared counter and its own. */
static void workers(void)
{
	enum { W = 4, N = 20000 };
	struct tally_shm *r;
	struct tally_shm_counter all;
	tally_uword v = 0;
	int i;
	snprintf(path, sizeof(path), "%s/workers", dir);
	r = open_rw(path, NULL);
	if (!r || tally_shm_counter(r, "all", &all))
		return;
	for (i = 0; i < W; i++) {
		pid_t p = fork();
		if (p == 0) {
			/* A new attach, as an unrelated process would. */
			struct tally_shm *mine = NULL;
			struct tally_shm_counter own, shared;
			char nm[32];
			int k, err;
			err = tally_shm_open(&mine, path, NULL, NULL, 0);
			snprintf(nm, sizeof(nm), "worker_%d", i);
			if (err || tally_shm_counter(mine, nm, &own) ||
			    tally_shm_counter(mine, "all", &shared))
				_exit(3);
			for (k = 0; k < N; k++) {
				tally_shm_add(k & 1 ? &shared : &all, 1); /* both handles */
				tally_shm_add(&own, 2);
			}
			_exit(0);
		}
	}
	for (i = 0; i < W; i++) {
		int st = 0;
		wait(&st);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker status %d", st);
	}
	CHECK_EQ(tally_shm_sum(&all), (tally_uword)W * N);
	for (i = 0; i < W; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "worker_%d", i);
		CHECK_EQ(snap_value(r, nm, &v), 1);
		CHECK_EQ(v, 2 * N);
	}
	tally_shm_close(r);
}

/* kill -9 mid-load: acked adds are never lost. */
static void killed(void)
{
	enum { W = 3 };
	struct tally_shm *r;
	volatile tally_uword *acks;
	pid_t pids[W];
	int i, round;
	snprintf(path, sizeof(path), "%s/killed", dir);
	r = open_rw(path, NULL);
	acks = (volatile tally_uword *)mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!r || acks == MAP_FAILED)
		return;
	for (round = 0; round < 3; round++) {
		for (i = 0; i < W; i++) {
			pids[i] = fork();
			if (pids[i] == 0) {
				struct tally_shm_counter c;
				char nm[32];
				snprintf(nm, sizeof(nm), "killed_%d", i);
				if (tally_shm_counter(r, nm, &c))
					_exit(3);
				for (;;) {
					tally_shm_add(&c, 1);
					/* after the add returned; release: the
					 * ack is never seen before the add */
					__atomic_store_n(&acks[i], acks[i] + 1, __ATOMIC_RELEASE);
				}
			}
		}
		usleep(30000 + 20000 * (useconds_t)round);
		for (i = 0; i < W; i++)
			kill(pids[i], SIGKILL);
		for (i = 0; i < W; i++)
			waitpid(pids[i], NULL, 0);
		for (i = 0; i < W; i++) {
			struct tally_shm_counter c;
			char nm[32];
			tally_uword acked = __atomic_load_n(&acks[i], __ATOMIC_ACQUIRE), total;
			memset(&c, 0, sizeof(c)); /* (gcc -O2 cannot see the CHECK) */
			snprintf(nm, sizeof(nm), "killed_%d", i);
			CHECK_EQ(tally_shm_counter(r, nm, &c), 0);
			total = tally_shm_sum(&c);
			/* Every returned add is there; at most one more per
			 * kill (added, killed before its ack). */
			CHECK(total >= acked && total - acked <= (tally_uword)round + 1,
			      "round %d worker %d: total %llu, acked %llu", round, i,
			      (unsigned long long)total, (unsigned long long)acked);
			/* The next round's worker goes on from the same count:
			 * acknowledge the one in flight, if any. */
			acks[i] = total;
		}
		CHECK(acks[0] > 0, "round %d: the workers added nothing", round);
	}
	munmap((void *)acks, 4096);
	tally_shm_close(r);
}

/* A creator killed holding the lock, at each step of a creation. */
static void killed_creator(void)
{
	struct tally_shm *r;
	struct tally_shm_counter a, b;
	int step;
	snprintf(path, sizeof(path), "%s/creator", dir);
	r = open_rw(path, NULL);
	if (!r)
		return;
	for (step = 0; step < 3; step++) {
		char nm[32], other[32];
		pid_t p;
		int st = 0;
		snprintf(nm, sizeof(nm), "dying_%d", step);
		snprintf(other, sizeof(other), "after_%d", step);
		p = fork();
		if (p == 0) {
			struct tally_shm_counter c;
			kill_at_step = step;
			tally_shm_counter(r, nm, &c);
			_exit(0); /* not reached */
		}
		waitpid(p, &st, 0);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "step %d: status %d", step, st);
		/* The lock was dropped with its holder: this does not block. */
		CHECK_EQ(tally_shm_counter(r, other, &b), 0);
		CHECK_EQ(tally_shm_counter(r, nm, &a), 0);
		tally_shm_add(&a, 1);
		tally_shm_add(&b, 10);
		/* Two objects, two words: nothing was given twice. */
		CHECK_EQ(tally_shm_sum(&a), 1);
		CHECK_EQ(tally_shm_sum(&b), 10);
		{
			struct tally_shm_snap s = {0};
			size_t i, seen = 0;
			CHECK_EQ(tally_shm_snapshot(r, &s), 0);
			for (i = 0; i < s.n; i++)
				seen += !strcmp(s.v[i].name, nm);
			CHECK_EQ(seen, 1); /* step 2 published it; the others not */
			tally_shm_snap_free(&s);
		}
	}
	tally_shm_close(r);
}

/* Write len bytes at off of file p. */
static void poke(const char *p, off_t off, const void *v, size_t len)
{
	int fd = open(p, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, v, len, off) == (ssize_t)len, "poke %s", p);
	if (fd >= 0)
		close(fd);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(in >= 0 && out >= 0, "copy %s", from);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		CHECK(write(out, buf, (size_t)n) == n, "write");
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
}

/* Expect a read-only attach + snapshot of p to fail with err and a reason
 * containing what. */
static void expect_ro(const char *p, int err, const char *what, int line)
{
	struct tally_shm *r = NULL;
	struct tally_shm_snap s = {0};
	char why[TALLY_SHM_ERROR_MAX];
	int got = tally_shm_open_ro(&r, p, 0, why, sizeof(why));
	if (!got) {
		got = tally_shm_snapshot(r, &s);
		snprintf(why, sizeof(why), "%s", tally_shm_error(r));
		tally_shm_snap_free(&s);
		tally_shm_close(r);
	}
	CHECK(got == err && strstr(why, what), "line %d: got %d '%s', expected %d '%s'", line, got,
	      why, err, what);
}

#define FIELD(f) ((off_t)offsetof(struct tally__shm_header, f))

static void hostile(void)
{
	char good[300], bad[300];
	struct tally_shm *r;
	struct tally_shm_counter c;
	struct tally_shm_opts o = {0};
	uint32_t u32;
	uint64_t u64 = 0;
	o.max_objects = 8;
	snprintf(good, sizeof(good), "%s/good", dir);
	snprintf(bad, sizeof(bad), "%s/bad", dir);
	r = open_rw(good, &o);
	if (!r)
		return;
	CHECK_EQ(tally_shm_counter(r, "x", &c), 0);
	tally_shm_add(&c, 1);
	tally_shm_close(r);

#define CASE(off, val, err, what)                                                                  \
	do {                                                                                       \
		copy_file(good, bad);                                                              \
		poke(bad, off, &(val), sizeof(val));                                               \
		expect_ro(bad, err, what, __LINE__);                                               \
	} while (0)
	CASE(0, (uint64_t){0x4141414141414141ull}, -EINVAL, "bad magic");
	CASE(0, (uint64_t){0}, -EINVAL, "not initialised");
	CASE(FIELD(bom), (uint32_t){0x04030201u}, -EPROTO, "byte order");
	CASE(FIELD(version), (uint32_t){TALLY_SHM_VERSION + 1}, -EPROTO, "format version 3");
	CASE(FIELD(word_bits), (uint32_t){TALLY_WORD_BITS == 64 ? 32u : 64u}, -EPROTO, "word size");
	CASE(FIELD(nr_slots), (uint32_t){0}, -EINVAL, "CPU slots");
	CASE(FIELD(nr_slots), (uint32_t){70000}, -EINVAL, "CPU slots");
	CASE(FIELD(shift), (uint32_t){63}, -EINVAL, "slot shift");
	CASE(FIELD(dir_cap), (uint32_t){0xffffffffu}, -EINVAL, "directory");
	CASE(FIELD(index_cap), (uint32_t){3}, -EINVAL, "index");
	CASE(FIELD(dir_off), (uint64_t){0xfffffffffffff000ull}, -EINVAL, "offsets");
	CASE(FIELD(data_off), (uint64_t){8}, -EINVAL, "offsets");
	CASE(FIELD(total_size), (uint64_t){1ull << 40}, -EINVAL, "the header says");
	CASE(FIELD(total_size), (uint64_t){1ull << 50}, -EINVAL, "offsets");
	CASE(FIELD(shared_off), (uint64_t){8}, -EINVAL, "offsets");
	CASE(FIELD(shared_used), (uint64_t){1ull << 40}, -EINVAL, "shared area");
	CASE(FIELD(total_size), (uint64_t){4096}, -EINVAL, "offsets");
	CASE(FIELD(flags), (uint32_t){0x80}, -EPROTO, "flags");
	CASE(FIELD(count), (uint32_t){9}, -EINVAL, "9 objects in a directory of 8");
	CASE(FIELD(lim), (uint32_t){70000}, -EINVAL, "written bound");
	CASE(FIELD(data_used), (uint64_t){1ull << 40}, -EINVAL, "bytes used");
	/* The entry: read the directory's offset from the good file. */
	{
		int fd = open(good, O_RDONLY);
		off_t d;
		CHECK(fd >= 0 && pread(fd, &u64, 8, FIELD(dir_off)) == 8, "read dir_off");
		if (fd >= 0)
			close(fd);
		d = (off_t)u64;
		CASE(d + (off_t)offsetof(struct tally__shm_entry, kind), (uint32_t){7}, -EINVAL,
		     "kind 7");
		CASE(d + (off_t)offsetof(struct tally__shm_entry, off), (uint64_t){1ull << 40},
		     -EINVAL, "offset");
		CASE(d + (off_t)offsetof(struct tally__shm_entry, off), (uint64_t){3}, -EINVAL,
		     "offset");
		CASE(d + (off_t)offsetof(struct tally__shm_entry, name_len), (uint32_t){TALLY_SHM_NAME_MAX + 1},
		     -EINVAL, "name");
		CASE(d + (off_t)offsetof(struct tally__shm_entry, name_len), (uint32_t){5}, -EINVAL,
		     "name");
		CASE(d + (off_t)offsetof(struct tally__shm_entry, name), (char){'-'}, -EINVAL,
		     "name");
		CASE(d + (off_t)offsetof(struct tally__shm_entry, words), (uint32_t){2}, -EINVAL,
		     "words");
	}
	/* Truncated, and empty. */
	copy_file(good, bad);
	CHECK_EQ(truncate(bad, 4096), 0);
	expect_ro(bad, -EINVAL, "truncated", __LINE__);
	CHECK_EQ(truncate(bad, 100), 0);
	expect_ro(bad, -EINVAL, "truncated", __LINE__);
	CHECK_EQ(truncate(bad, 0), 0);
	expect_ro(bad, -EINVAL, "empty", __LINE__);
	/* A writer refuses another slot count (a reader takes it). */
	copy_file(good, bad);
	u32 = tally_cpu_slots() - 1u;
	if (u32 >= 1) {
		struct tally_shm *w = NULL;
		char why[TALLY_SHM_ERROR_MAX];
		poke(bad, FIELD(nr_slots), &u32, sizeof(u32));
		CHECK_EQ(tally_shm_open(&w, bad, NULL, why, sizeof(why)), -EPROTO);
		CHECK(strstr(why, "CPU slots") != NULL, "%s", why);
		CHECK_EQ(tally_shm_open_ro(&w, bad, 0, why, sizeof(why)), 0);
		tally_shm_close(w);
	}
	/* Truncated under a reader's feet: the next snapshot says so. */
	copy_file(good, bad);
	{
		struct tally_shm *w = NULL;
		struct tally_shm_snap s = {0};
		char why[TALLY_SHM_ERROR_MAX];
		CHECK_EQ(tally_shm_open_ro(&w, bad, 0, why, sizeof(why)), 0);
		CHECK_EQ(truncate(bad, 8192), 0);
		if (w) {
			CHECK_EQ(tally_shm_snapshot(w, &s), -EINVAL);
			CHECK(strstr(tally_shm_error(w), "truncated") != NULL, "%s", tally_shm_error(w));
			tally_shm_close(w);
		}
	}
	/* A file that is not ours is never overwritten by a writer. */
	{
		struct tally_shm *w = NULL;
		char why[TALLY_SHM_ERROR_MAX], buf[512];
		int fd = open(bad, O_WRONLY | O_TRUNC);
		memset(buf, 'z', sizeof(buf));
		CHECK(fd >= 0 && write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf), "write");
		if (fd >= 0)
			close(fd);
		CHECK_EQ(tally_shm_open(&w, bad, NULL, why, sizeof(why)), -EINVAL);
		CHECK(strstr(why, "bad magic") != NULL, "%s", why);
	}
#undef CASE
	unlink(bad);
}

/* A POSIX shared-memory name. */
static void posix_name(void)
{
	struct tally_shm_opts o = {0};
	struct tally_shm *r = NULL, *ro = NULL;
	struct tally_shm_counter c;
	char name[64], why[TALLY_SHM_ERROR_MAX];
	tally_uword v = 0;
	int err;
	snprintf(name, sizeof(name), "/tally-shm-basic-%d", (int)getpid());
	o.flags = TALLY_SHM_POSIX;
	err = tally_shm_open(&r, name, &o, why, sizeof(why));
	if (err == -ENOSYS || err == -EACCES || err == -ENOENT) {
		printf("shm_basic: POSIX shared memory unavailable here (%s): skipped\n", why);
		return;
	}
	CHECK_EQ(err, 0);
	if (!r)
		return;
	CHECK_EQ(tally_shm_counter(r, "posix", &c), 0);
	tally_shm_add(&c, 42);
	CHECK_EQ(tally_shm_open_ro(&ro, name, TALLY_SHM_POSIX, why, sizeof(why)), 0);
	if (ro) {
		CHECK_EQ(snap_value(ro, "posix", &v), 1);
		CHECK_EQ(v, 42);
		tally_shm_close(ro);
	}
	tally_shm_close(r);
	CHECK_EQ(tally_shm_unlink(name, TALLY_SHM_POSIX), 0);
}

int main(void)
{
	char p[300];
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	basics();
	workers();
	killed();
	killed_creator();
	hostile();
	posix_name();
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	if (system(p))
		fprintf(stderr, "shm_basic: could not remove %s\n", dir);
	return harness_exit("shm_basic");
}
