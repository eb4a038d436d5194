/**
 * @file
 * tally/rstat/flusher.h - the clock, the ratelimit and the periodic flusher
 * thread of tally/rstat.h (private; include <tally/rstat.h>): the kernel's
 * flush_memcg_stats_dwork() and mem_cgroup_flush_stats_ratelimited() in
 * mm/memcontrol.c.
 *
 * The thread sleeps on os.h's condition variable (on CLOCK_MONOTONIC where
 * the platform allows it; the choice is recorded in the tree, so every
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

enum { TALLY__FLUSHER_IDLE, TALLY__FLUSHER_RUNNING, TALLY__FLUSHER_STOPPING };

/* Defined in tally/rstat/flush.h. */
static inline void tally__rstat_flush(struct tally_group *g);

/* The tree's ratelimit clock. */
TALLY__INLINE uint64_t tally__rstat_now(const struct tally_tree *t)
{
	return t->tally__clock.now ? t->tally__clock.now(t->tally__clock.arg)
				   : tally__os_mono_ns();
}

/* The root was last flushed more than 2 periods ago (time_after()). */
TALLY__INLINE bool tally__rstat_ratelimit_passed(const struct tally_tree *t)
{
	uint64_t last = tally__load(&t->tally__clock.last_root_flush);
	return (int64_t)(last + 2 * t->tally__clock.period_ns - tally__rstat_now(t)) < 0;
}

/* ns from now on the clock of the flusher's condition variable (recorded
 * in it when the tree was created, whatever this unit's feature macros),
 * saturating at the largest time_t: a 2^62 ns period does not fit a
 * 32-bit time_t, and a wrapped deadline would lie in the past. */
static inline void tally__rstat_deadline(const struct tally_tree *t, struct timespec *ts,
					 uint64_t ns)
{
	tally__os_cond_deadline(&t->tally__flusher.cond, ts, ns);
}

/* The flusher's lock and condition variable. 0 or -1. */
static inline int tally__rstat_flusher_init(struct tally_tree *t)
{
	struct tally__rstat_flusher *f = &t->tally__flusher;
	if (pthread_mutex_init(&f->lock, NULL))
		return -1;
	if (tally__os_cond_init(&f->cond)) {
		pthread_mutex_destroy(&f->lock);
		return -1;
	}
	f->state = TALLY__FLUSHER_IDLE;
	return 0;
}

static inline void tally__rstat_flusher_fini(struct tally_tree *t)
{
	tally__os_cond_destroy(&t->tally__flusher.cond);
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
			r = tally__os_cond_timedwait(&f->cond, &f->lock, &ts);
		if (f->stop)
			break;
		pthread_mutex_unlock(&f->lock);
		tally__rstat_flush(t->tally__root);
		pthread_mutex_lock(&f->lock);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* tally_tree_start_flusher(): start the thread (period_ns 0: the tree's
 * period). 0, -EINVAL, -EBUSY (running or being stopped), -errno. */
static inline int tally__rstat_flusher_start(struct tally_tree *t, uint64_t period_ns)
{
	struct tally__rstat_flusher *f;
	int r;
	if (tally__bad(!t || period_ns > TALLY_RSTAT_PERIOD_MAX))
		return -EINVAL;
	f = &t->tally__flusher;
	pthread_mutex_lock(&f->lock);
	if (f->state != TALLY__FLUSHER_IDLE) {
		pthread_mutex_unlock(&f->lock);
		return -EBUSY;
	}
	f->period_ns = period_ns ? period_ns : t->tally__clock.period_ns;
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
 * joins twice. NULL t: nothing (tally_tree_stop_flusher()).
 */
static inline void tally__rstat_flusher_stop(struct tally_tree *t)
{
	struct tally__rstat_flusher *f;
	pthread_t th;
	if (!t)
		return;
	f = &t->tally__flusher;
	pthread_mutex_lock(&f->lock);
	while (f->state == TALLY__FLUSHER_STOPPING)
		pthread_cond_wait(&f->cond.cond, &f->lock);
	if (f->state == TALLY__FLUSHER_IDLE) {
		pthread_mutex_unlock(&f->lock);
		return;
	}
	f->state = TALLY__FLUSHER_STOPPING;
	f->stop = 1;
	th = f->thread;
	tally__os_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	pthread_join(th, NULL);
	pthread_mutex_lock(&f->lock);
	f->state = TALLY__FLUSHER_IDLE;
	tally__os_cond_broadcast(&f->cond);
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
		tally__os_cond_timedwait(&f->cond, &f->lock, &ts);
	}
	pthread_mutex_unlock(&f->lock);
}

#endif /* TALLY_RSTAT_FLUSHER_H */
