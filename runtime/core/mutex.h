/*
 * mutex.h - the library's pthread locks, each with its rank
 * (core/lockrank.h): a mutex (cow__mutex_t) and a shared/exclusive lock
 * (cow__rwmutex_t). In debug builds every acquisition checks the rank
 * order first and records the hold; in release builds each call is the
 * pthread call alone. The rank is fixed when the lock is made.
 *
 * ThreadSanitizer sees pthread locks by itself: nothing to annotate here.
 */
#ifndef COW_CORE_MUTEX_H
#define COW_CORE_MUTEX_H

#include <pthread.h>
#include <stdbool.h>

#include "core/die.h"
#include "core/lockrank.h"

typedef struct cow__mutex {
	pthread_mutex_t pt;
	enum cow__lock_rank rank; /* Read-only after init. */
} cow__mutex_t;

#define COW__MUTEX_INITIALIZER(rank) {PTHREAD_MUTEX_INITIALIZER, (rank)}

static inline void
cow__mutex_init(cow__mutex_t *m, enum cow__lock_rank rank)
{
	if (pthread_mutex_init(&m->pt, NULL) != 0)
		cow__die("pthread_mutex_init");
	m->rank = rank;
}

static inline void
cow__mutex_destroy(cow__mutex_t *m)
{
	pthread_mutex_destroy(&m->pt);
}

static inline void
cow__mutex_lock(cow__mutex_t *m)
{
	cow__lock_check(m, m->rank);
	if (pthread_mutex_lock(&m->pt) != 0)
		cow__die("pthread_mutex_lock");
	cow__lock_hold(m, m->rank);
}

static inline void
cow__mutex_unlock(cow__mutex_t *m)
{
	cow__lock_drop(m);
	if (pthread_mutex_unlock(&m->pt) != 0)
		cow__die("pthread_mutex_unlock");
}

/* Wait on @cond: @m is released meanwhile and held again on return, so
 * the record keeps it. */
static inline void
cow__mutex_wait(cow__mutex_t *m, pthread_cond_t *cond)
{
	if (pthread_cond_wait(cond, &m->pt) != 0)
		cow__die("pthread_cond_wait");
}

/* A fork's child makes @m anew (its owner's thread id is the parent's). */
static inline void
cow__mutex_reinit(cow__mutex_t *m)
{
	cow__lock_forget(m);
	cow__mutex_init(m, m->rank);
}

typedef struct cow__rwmutex {
	pthread_rwlock_t pt;
	enum cow__lock_rank rank; /* Read-only after init. */
} cow__rwmutex_t;

#define COW__RWMUTEX_INITIALIZER(rank) {PTHREAD_RWLOCK_INITIALIZER, (rank)}

/* Take @l exclusively (@write) or shared. Each call below returns the
 * pthread call's result (0: done); the hold is recorded only when it is
 * 0. */
static inline int
cow__rwmutex_lock(cow__rwmutex_t *l, bool write)
{
	int rc;

	cow__lock_check(l, l->rank);
	rc = write ? pthread_rwlock_wrlock(&l->pt) :
	    pthread_rwlock_rdlock(&l->pt);
	if (rc == 0)
		cow__lock_hold(l, l->rank);
	return rc;
}

static inline int
cow__rwmutex_unlock(cow__rwmutex_t *l)
{
	cow__lock_drop(l);
	return pthread_rwlock_unlock(&l->pt);
}

/* A fork's child makes @l anew, unlocked. */
static inline int
cow__rwmutex_reinit(cow__rwmutex_t *l)
{
	cow__lock_forget(l);
	return pthread_rwlock_init(&l->pt, NULL);
}

#endif
