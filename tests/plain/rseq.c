/*
 * rseq.c - the per-CPU update paths of pcpu.h, checked to the last unit.
 *
 *   rseq                    where the rseq fast path is compiled in, glibc
 *                           must have registered rseq and the fast path
 *                           must be taken: adds land in the slot of the CPU
 *                           the thread is pinned to, a CPU beyond the slots
 *                           (rseq_slots1: built with TALLY_CPU_SLOTS=1)
 *                           goes to the shared slot, and sums stay exact
 *                           with many threads preempted and signalled in
 *                           the middle of their critical sections.
 *                           Exit 77 (skip) if rseq is not registered.
 *   rseq --expect-fallback  run with GLIBC_TUNABLES=glibc.pthread.rseq=0:
 *                           rseq must be unregistered, the fast path must
 *                           decline, and the atomic fallback must put adds
 *                           in CPU slots (never the shared slot), exactly.
 *
 * Plain C, no Criterion: it also runs under TSan and in the -m32 build
 * (where there is no fast path and only the fallback is checked).
 */
#define _GNU_SOURCE
#include <tally/counter.h>
#include <tally/pcpu.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "rseq.c:%d: FAIL %s: ", __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			failures++;                                            \
		}                                                              \
	} while (0)

static int rseq_registered(void)
{
#if TALLY__HAVE_RSEQ_AREA
	return tally__rseq_registered();
#else
	return 0;
#endif
}

static tally_uword word(const struct tally__pcpu *p, unsigned s)
{
	return tally__load((const tally_uword *)tally__pcpu_at(p, s, 0));
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* ---- 1: where single adds land, CPU by CPU ------------------------------- */
static void check_placement(int fast)
{
	struct tally__pcpu p;
	cpu_set_t allowed;
	int cpu, pinned = 0;
	CHECK(tally__pcpu_alloc(&p, sizeof(tally_uword)) == 0, "alloc");
	CHECK(sched_getaffinity(0, sizeof(allowed), &allowed) == 0, "getaffinity");
	for (cpu = 0; cpu < CPU_SETSIZE && (unsigned)cpu < p.nr; cpu++) {
		unsigned slot = 12345;
		tally_uword before[2], nv;
		if (!CPU_ISSET(cpu, &allowed) || pin(cpu) != 0)
			continue;
		pinned++;
		before[0] = word(&p, (unsigned)cpu);
		before[1] = word(&p, p.nr);
		nv = tally__pcpu_add(&p, 0, 7, &slot);
		CHECK(slot == (unsigned)cpu, "pinned to %d, add landed in slot %u", cpu, slot);
		CHECK(nv == before[0] + 7, "new value %lu, expected %lu", (unsigned long)nv,
		      (unsigned long)(before[0] + 7));
		CHECK(word(&p, (unsigned)cpu) == before[0] + 7, "CPU %d slot", cpu);
		CHECK(word(&p, p.nr) == before[1], "shared slot moved");
#if TALLY__HAVE_RSEQ
		/* The fast path itself: taken iff rseq is registered. */
		before[0] = word(&p, (unsigned)cpu);
		nv = 0;
		slot = 12345;
		{
			tally_uword *w = NULL;
			bool took = tally__rseq_add(p.base, p.shift, p.nr, 5, &nv, &w);
			CHECK(took == (bool)fast, "fast path %s on CPU %d",
			      took ? "taken" : "declined", cpu);
			if (took) {
				slot = tally__pcpu_slot_of(&p, w, 0);
				CHECK(w == (tally_uword *)tally__pcpu_at(&p, (unsigned)cpu, 0),
				      "rseq word address");
				CHECK(slot == (unsigned)cpu, "rseq slot %u on CPU %d", slot, cpu);
				CHECK(nv == before[0] + 5, "rseq new value");
				CHECK(word(&p, (unsigned)cpu) == before[0] + 5, "rseq word");
			} else {
				CHECK(word(&p, (unsigned)cpu) == before[0], "declined yet wrote");
			}
#  if TALLY_CPU_SLOTS
			/* A CPU beyond the slots: declined, nothing written. */
			before[0] = word(&p, (unsigned)cpu);
			took = tally__rseq_add(p.base, p.shift, (unsigned)cpu, 5, &nv, &w);
			CHECK(!took, "CPU %d >= nr %d must decline", cpu, cpu);
			CHECK(word(&p, (unsigned)cpu) == before[0], "bound fail wrote");
#  endif
		}
#else
		(void)fast;
#endif
#if TALLY_CPU_SLOTS || !TALLY__HAVE_RSEQ
		/* A view with fewer CPU slots than this CPU's number: with rseq
		 * registered the add must go to the view's shared slot (others
		 * may add plainly to CPU slots), without it to cpu % nr. (With
		 * detected slots and rseq the section tests only the sign of
		 * the CPU number: no CPU is past the slots, see below.) */
		if (cpu >= 1) {
			unsigned want;
			struct tally__pcpu view = p;
			view.nr = 1;
			want = rseq_registered() && TALLY__HAVE_RSEQ ? 1u : (unsigned)cpu % 1u;
			before[0] = word(&view, want);
			tally__pcpu_add(&view, 0, 3, &slot);
			CHECK(slot == want, "CPU %d with nr 1: slot %u, want %u", cpu, slot, want);
			CHECK(word(&view, want) == before[0] + 3, "view word");
		}
#endif
	}
	CHECK(pinned > 0, "could not pin to any CPU");
#if TALLY_CPU_SLOTS
	/* Built with fewer slots than CPUs (the rseq_slots1 test): a thread
	 * pinned to a CPU past them is declined by the section, and its add
	 * goes to the shared slot (rseq registered) or to cpu % nr. */
	int beyond = 0;
	for (cpu = (int)p.nr; cpu < CPU_SETSIZE; cpu++) {
		unsigned slot = 12345, want;
		tally_uword was;
		if (!CPU_ISSET(cpu, &allowed) || pin(cpu))
			continue;
		want = rseq_registered() && TALLY__HAVE_RSEQ ? p.nr : (unsigned)cpu % p.nr;
		was = word(&p, want);
		tally__pcpu_add(&p, 0, 11, &slot);
		CHECK(slot == want, "CPU %d past %u slots: slot %u, want %u", cpu, p.nr, slot, want);
		CHECK(word(&p, want) == was + 11, "CPU %d past the slots: word", cpu);
#  if TALLY__HAVE_RSEQ
		{
			tally_uword nv2 = 0, *w2 = NULL;
			CHECK(!tally__rseq_add(p.base, p.shift, p.nr, 5, &nv2, &w2),
			      "CPU %d >= nr %u must decline", cpu, p.nr);
		}
#  endif
		beyond++;
	}
	printf("rseq: %d CPUs past the %u slots checked\n", beyond, p.nr);
#else
	/* Detected slots cover every CPU id the kernel can report (the rseq
	 * section relies on it: tally/rseq.h, TALLY__RSEQ_CPU_CHECK): every
	 * CPU this thread may run on is below nr. */
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			CHECK((unsigned)cpu < p.nr, "CPU %d has no slot (nr %u)", cpu, p.nr);
	CHECK(p.nr >= tally__os_possible_cpus(), "nr %u below the possible CPUs %u", p.nr,
	      tally__os_possible_cpus());
#endif
	sched_setaffinity(0, sizeof(allowed), &allowed);
	tally__pcpu_free(&p);
}

/* ---- 2: exact sums with many threads, preemption and signals ------------- */
#define THREADS 12
#define ADDS 150000

static struct tally_counter ctr;
static struct tally__pcpu raw;
static __thread tally_uword handler_sum;

static void on_signal(int sig)
{
	(void)sig;
	/* A nested critical section: the interrupted one is aborted by the
	 * kernel and retries after this handler returns. */
	tally_counter_add(&ctr, 3);
	{
		unsigned s;
		tally__pcpu_add(&raw, 0, 3, &s);
	}
	handler_sum += 3;
}

struct worker {
	pthread_t tid;
	int id;
	tally_uword sum; /* what this thread added, handler included */
	int started, done;
};

static void *work(void *arg)
{
	struct worker *w = (struct worker *)arg;
	tally_uword sum = 0;
	int i;
	__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	for (i = 0; i < ADDS; i++) {
		/* Mixed signs and sizes; batch folds happen along the way. */
		tally_sword d = (tally_sword)((i * 7 + w->id) % 11) - 4;
		unsigned s;
		tally_counter_add(&ctr, d);
		tally__pcpu_add(&raw, 0, (tally_uword)d, &s);
		sum += (tally_uword)d;
		if ((i & 1023) == 0)
			sched_yield();
	}
	/* Signals are blocked before the handler total is read. */
	{
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	w->sum = sum + handler_sum;
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void check_threads(void)
{
	static struct worker ws[THREADS];
	struct sigaction sa;
	tally_uword expect = 0;
	unsigned long signals = 0;
	int i, live;
	/* Under qemu-i386, which loses atomic adds made in signal handlers
	 * (tests/CMakeLists.txt), the threads run without signals. */
	const char *nosig = getenv("TALLY_TEST_NO_SIGNALS");
	int send = !(nosig && *nosig == '1');
	if (!send)
		printf("rseq: TALLY_TEST_NO_SIGNALS=1: no signals (the emulator loses handlers' adds)\n");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	CHECK(tally_counter_init(&ctr, 0, 0) == 0, "counter init");
	CHECK(tally__pcpu_alloc(&raw, sizeof(tally_uword)) == 0, "raw alloc");
	for (i = 0; i < THREADS; i++) {
		ws[i].id = i;
		CHECK(pthread_create(&ws[i].tid, NULL, work, &ws[i]) == 0, "create");
	}
	/* Signal the workers while they run. A worker blocks SIGUSR1 before
	 * it reads its handler total, so a late signal is never handled. */
	do {
		struct timespec ts = {0, 20000};
		live = 0;
		for (i = 0; i < THREADS; i++) {
			if (!__atomic_load_n(&ws[i].started, __ATOMIC_ACQUIRE) ||
			    __atomic_load_n(&ws[i].done, __ATOMIC_ACQUIRE))
				continue;
			live++;
			if (send && pthread_kill(ws[i].tid, SIGUSR1) == 0)
				signals++;
		}
		nanosleep(&ts, NULL);
	} while (live && (!send || signals < 40000));
	for (i = 0; i < THREADS; i++) {
		pthread_join(ws[i].tid, NULL);
		expect += ws[i].sum;
	}
	CHECK((tally_uword)tally_counter_sum(&ctr) == expect, "counter sum %ld, expected %ld",
	      (long)tally_counter_sum(&ctr), (long)tally__to_signed(expect));
	tally_counter_fold_all(&ctr);
	CHECK((tally_uword)tally_counter_read(&ctr) == expect, "read after fold_all %ld",
	      (long)tally_counter_read(&ctr));
	CHECK(tally__pcpu_sum(&raw, 0) == expect, "raw sum %lu, expected %lu",
	      (unsigned long)tally__pcpu_sum(&raw, 0), (unsigned long)expect);
	/* Every CPU has a slot (unless built with fewer), so nothing may have
	 * used the shared slot. */
	if (raw.nr >= tally__os_possible_cpus())
		CHECK(word(&raw, raw.nr) == 0, "shared slot holds %lu",
		      (unsigned long)word(&raw, raw.nr));
	printf("rseq: %d threads x %d adds, %lu signals sent, total %ld exact\n", THREADS, ADDS,
	       signals, (long)tally__to_signed(expect));
	tally_counter_destroy(&ctr);
	tally__pcpu_free(&raw);
}

int main(int argc, char **argv)
{
	int fallback = argc > 1 && strcmp(argv[1], "--expect-fallback") == 0;
	int reg = rseq_registered();
	printf("rseq: fast path %s, rseq %s, mode %s\n",
	       TALLY__HAVE_RSEQ ? "compiled in" : "not compiled in",
	       reg ? "registered" : "not registered", fallback ? "fallback" : "default");
	if (fallback) {
		CHECK(!reg, "GLIBC_TUNABLES=glibc.pthread.rseq=0 should leave rseq unregistered");
	} else if (TALLY__HAVE_RSEQ && !reg) {
		printf("rseq: SKIP: glibc did not register rseq here\n");
		return 77;
	}
	check_placement(TALLY__HAVE_RSEQ && reg);
	check_threads();
	if (failures)
		fprintf(stderr, "rseq: %d checks failed\n", failures);
	return failures ? 1 : 0;
}
