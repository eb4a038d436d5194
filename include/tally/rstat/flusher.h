/*
 * tally/rstat/flusher.h - the clock, the ratelimit and the periodic flusher
 * thread of tally/rstat.h (private; include <tally/rstat.h>): the kernel's
 * flush_memcg_stats_dwork() and mem_cgroup_flush_stats_ratelimited() in
 * mm/memcontrol.c.
 *
 * The thread sleeps on a condition variable (on CLOCK_MONOTONIC where
 * pthread_condattr_setclock() takes it, recorded in the tree, so every
 * translation unit computes its deadlines on the clock the tree's
 * condition variable uses), runs a forced root flush every period, and
 * stops when asked. Its lock (tally__rstat_flusher.lock) is not the flush
 * lock: the thread takes the flush lock only inside each flush.
 */
#ifndef TALLY_RSTAT_FLUSHER_H
#define TALLY_RSTAT_FLUSHER_H

#if !defined(TALLY__RSTAT_INSIDE)
#  error "tally/rstat/flusher.h is private: include <tally/rstat.h>"
#endif

/* Strict ISO C (-std=c11) hides glibc's POSIX clock calls; the ABI is the
 * same either way (like sched_getcpu in arch.h). */
#if defined(__GLIBC__) && !defined(__USE_POSIX199309)
extern int clock_gettime(__clockid_t clock_id, struct timespec *tp);
#  define TALLY__CLOCK_MONOTONIC 1 /* CLOCK_MONOTONIC's value in glibc */
#elif defined(CLOCK_MONOTONIC)
#  define TALLY__CLOCK_MONOTONIC CLOCK_MONOTONIC
#endif
#if defined(__GLIBC__) && !defined(__USE_XOPEN2K) && defined(TALLY__CLOCK_MONOTONIC)
extern int pthread_condattr_setclock(pthread_condattr_t *attr, __clockid_t clock_id);
#endif

enum { TALLY__FLUSHER_IDLE, TALLY__FLUSHER_RUNNING, TALLY__FLUSHER_STOPPING };

/* Defined in tally/rstat/flush.h. */
static inline void tally__rstat_flush(struct tally_group *g);

static inline uint64_t tally__rstat_mono_ns(void)
{
	struct timespec ts;
#if defined(TALLY__CLOCK_MONOTONIC)
	if (clock_gettime(TALLY__CLOCK_MONOTONIC, &ts) == 0)
		return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
	timespec_get(&ts, TIME_UTC);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The tree's ratelimit clock. */
TALLY__INLINE uint64_t tally__rstat_now(const struct tally_tree *t)
{
	return t->tally__clock.now ? t->tally__clock.now(t->tally__clock.arg)
				   : tally__rstat_mono_ns();
}

/* The root was last flushed more than 2 periods ago (time_after()). */
TALLY__INLINE bool tally__rstat_ratelimit_passed(const struct tally_tree *t)
{
	uint64_t last = tally__load(&t->tally__clock.last_root_flush);
	return (int64_t)(last + 2 * t->tally__clock.period_ns - tally__rstat_now(t)) < 0;
}

/* The largest time_t (signed, as POSIX systems have it). */
#define TALLY__TIME_T_MAX ((uint64_t)(((uint64_t)1 << (sizeof(time_t) * 8 - 1)) - 1))

/*
 * *ts = now + ns, where now is sec + nsec, clamped to tmax seconds: a
 * 2^62 ns period (146 years) overflows a 32-bit time_t from 2038 on, and
 * a wrapped deadline would lie in the past (a busy loop). The clamped one
 * lies in 2038, which is as good as never for a flusher.
 */
static inline void tally__rstat_deadline_at(struct timespec *ts, uint64_t sec, uint64_t nsec,
					    uint64_t ns, uint64_t tmax)
{
	ns += nsec;
	sec += ns / 1000000000ull;
	if (sec > tmax) {
		ts->tv_sec = (time_t)tmax;
		ts->tv_nsec = 999999999L;
		return;
	}
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* ns from now on the clock of the tree's condition variable. */
static inline void tally__rstat_deadline(const struct tally_tree *t, struct timespec *ts,
					 uint64_t ns)
{
	struct timespec now;
#if defined(TALLY__CLOCK_MONOTONIC)
	if (t->tally__flusher.monotonic)
		clock_gettime(TALLY__CLOCK_MONOTONIC, &now);
	else
#endif
		timespec_get(&now, TIME_UTC);
	(void)t;
	tally__rstat_deadline_at(ts, (uint64_t)now.tv_sec, (uint64_t)now.tv_nsec, ns,
				 TALLY__TIME_T_MAX);
}

/* The flusher's lock and condition variable. 0 or -1. */
static inline int tally__rstat_flusher_init(struct tally_tree *t)
{
	struct tally__rstat_flusher *f = &t->tally__flusher;
	pthread_condattr_t a;
	int ok;
	if (pthread_mutex_init(&f->lock, NULL))
		return -1;
	ok = !pthread_condattr_init(&a);
#if defined(TALLY__CLOCK_MONOTONIC)
	f->monotonic = ok && !pthread_condattr_setclock(&a, TALLY__CLOCK_MONOTONIC);
#endif
	if (!ok || pthread_cond_init(&f->cond, &a)) {
		if (ok)
			pthread_condattr_destroy(&a);
		pthread_mutex_destroy(&f->lock);
		return -1;
	}
	pthread_condattr_destroy(&a);
	f->state = TALLY__FLUSHER_IDLE;
	return 0;
}

static inline void tally__rstat_flusher_fini(struct tally_tree *t)
{
	pthread_cond_destroy(&t->tally__flusher.cond);
	pthread_mutex_destroy(&t->tally__flusher.lock);
}

static inline void *tally__rstat_flusher_main(void *arg)
{
	struct tally_tree *t = (struct tally_tree *)arg;
	struct tally__rstat_flusher *f = &t->tally__flusher;
	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		struct timespec ts;
		int r = 0;
		tally__rstat_deadline(t, &ts, f->period_ns);
		while (!f->stop && r != ETIMEDOUT)
			r = pthread_cond_timedwait(&f->cond, &f->lock, &ts);
		if (f->stop)
			break;
		pthread_mutex_unlock(&f->lock);
		tally__rstat_flush(t->tally__root);
		pthread_mutex_lock(&f->lock);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* Start the thread: 0, -EBUSY (running or being stopped), -errno. */
static inline int tally__rstat_flusher_start(struct tally_tree *t, uint64_t period_ns)
{
	struct tally__rstat_flusher *f = &t->tally__flusher;
	int r;
	pthread_mutex_lock(&f->lock);
	if (f->state != TALLY__FLUSHER_IDLE) {
		pthread_mutex_unlock(&f->lock);
		return -EBUSY;
	}
	f->period_ns = period_ns;
	f->stop = 0;
	r = pthread_create(&f->thread, NULL, tally__rstat_flusher_main, t);
	if (!r)
		f->state = TALLY__FLUSHER_RUNNING;
	pthread_mutex_unlock(&f->lock);
	return -r;
}

/*
 * Stop the thread and join it. One caller joins (RUNNING -> STOPPING);
 * any other caller meanwhile waits until it has (STOPPING -> IDLE, a
 * broadcast), so every caller returns with the thread gone and nobody
 * joins twice.
 */
static inline void tally__rstat_flusher_stop(struct tally_tree *t)
{
	struct tally__rstat_flusher *f = &t->tally__flusher;
	pthread_t th;
	pthread_mutex_lock(&f->lock);
	while (f->state == TALLY__FLUSHER_STOPPING)
		pthread_cond_wait(&f->cond, &f->lock);
	if (f->state == TALLY__FLUSHER_IDLE) {
		pthread_mutex_unlock(&f->lock);
		return;
	}
	f->state = TALLY__FLUSHER_STOPPING;
	f->stop = 1;
	th = f->thread;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	pthread_join(th, NULL);
	pthread_mutex_lock(&f->lock);
	f->state = TALLY__FLUSHER_IDLE;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/*
 * Wait for the deferred frees of destroyed groups (they touch t). Not
 * rcu_barrier(): liburcu's own barrier bookkeeping is invisible to
 * ThreadSanitizer, this count is not. A timed wait on the flusher's (idle)
 * condition variable is the sleep.
 */
static inline void tally__rstat_flusher_wait_deferred(struct tally_tree *t)
{
	struct tally__rstat_flusher *f = &t->tally__flusher;
	if (!tally__load_acq(&t->tally__rcu.deferred))
		return;
	pthread_mutex_lock(&f->lock);
	while (tally__load_acq(&t->tally__rcu.deferred)) {
		struct timespec ts;
		tally__rstat_deadline(t, &ts, 200000);
		pthread_cond_timedwait(&f->cond, &f->lock, &ts);
	}
	pthread_mutex_unlock(&f->lock);
}

#endif /* TALLY_RSTAT_FLUSHER_H */
