/*
 * rwlock.h - the shared/exclusive lock of a COW context (cow__rwlock_t).
 * Shared: copiers reading the original data. Exclusive: the last reference,
 * which must wait for pending copiers before it steals or frees the data
 * (cow__rwlock_wait_readers, below). Its rank is COW__RANK_CTX
 * (core/lockrank.h): a thread holds at most one, and debug builds check
 * the order and record the shared holds for the asserts.
 *
 * The implementation is chosen at build time (docs/performance.md has the
 * measurements): the library's own lock (default; ck_rwlock's algorithm on
 * ck_pr, write-biased, 8 bytes), ck_pflock (COW_LOCK_PFLOCK, phase-fair,
 * through its documented calls only) or pthread_rwlock (COW_LOCK_PTHREAD,
 * reference point). CMakeLists.txt's COW_LOCK_VARIANTS must list every
 * choice: each one runs the copier-versus-stealer stress scenarios under
 * ASan and TSan. In the interleaving checker's build (COW_SCHED) the lock
 * is the scheduler's model of the default one.
 *
 * What the protocol needs from a lock, beyond shared/exclusive: once the
 * exclusive lock is granted, no copier touches the lock again. The last
 * share holder frees the context (the lock inside it) as soon as its
 * exclusive lock returns, so a shared unlock's last access to the lock must
 * be the atomic step that lets the exclusive locker in. The default lock
 * and ck_pflock unlock with one atomic decrement; glibc's
 * pthread_rwlock_unlock may only call futex_wake afterwards. ck_brlock does
 * not qualify and was removed: a reader record registered for one critical
 * section must be unregistered after it, and ck_brlock_read_unregister
 * takes the writer flag of a lock that may already be freed
 * (docs/design.md). Rules for all: never take the shared lock twice in one
 * thread, never take the exclusive lock while holding the shared one.
 *
 * ThreadSanitizer cannot see ck's atomics (core/atomic.h): in TSan builds
 * each operation of the ck-based locks is annotated with __tsan_mutex_*.
 * Waits spin briefly, then yield (cow__backoff).
 */
#ifndef COW_CORE_RWLOCK_H
#define COW_CORE_RWLOCK_H

#include <stdbool.h>

#include <ck_pr.h>

#include "core/atomic.h"
#include "core/die.h"
#include "core/lockrank.h"

#if defined(COW_SCHED)

#if defined(COW_LOCK_PTHREAD) || defined(COW_LOCK_PFLOCK)
#error "COW_SCHED models the default lock only"
#endif

/* The scheduler's model of the default lock (core/sync_sched.h): state for
 * the scheduler, which alone reads and writes it (one test thread runs at
 * a time). Its semantics are the default lock's: write biased, the
 * exclusive side waits for the readers inside, so a thread that would wait
 * is not runnable and a deadlock is reported instead of spinning. The
 * state lives in the lock object itself, so a lock operation on a freed
 * context is an AddressSanitizer report. */
#define COW_LOCK_NAME "sched"
typedef struct cow__rwlock {
	unsigned writer;  /* 1 from the exclusive side's claim to its unlock */
	unsigned readers; /* shared holders inside */
} cow__rwlock_t;

static inline void
cow__rwlock_init(cow__rwlock_t *l)
{
	l->writer = 0;
	l->readers = 0;
	COW__SCHED(COW__SCHED_LOCK_INIT, l, COW__MO_RELAXED);
}

/* A scheduling point too: destroying a lock that is held is a violation. */
static inline void
cow__rwlock_destroy(cow__rwlock_t *l)
{
	COW__SCHED(COW__SCHED_LOCK_DESTROY, l, COW__MO_RELAXED);
}

static inline void
cow__rwlock_read_lock_impl(cow__rwlock_t *l)
{
	COW__SCHED(COW__SCHED_READ_LOCK, l, COW__MO_ACQUIRE);
}

static inline void
cow__rwlock_read_unlock_impl(cow__rwlock_t *l)
{
	COW__SCHED(COW__SCHED_READ_UNLOCK, l, COW__MO_RELEASE);
}

static inline void
cow__rwlock_write_lock_impl(cow__rwlock_t *l)
{
	COW__SCHED(COW__SCHED_WRITE_LOCK, l, COW__MO_ACQUIRE);
}

static inline void
cow__rwlock_write_unlock_impl(cow__rwlock_t *l)
{
	COW__SCHED(COW__SCHED_WRITE_UNLOCK, l, COW__MO_RELEASE);
}

static inline void
cow__rwlock_wait_readers_impl(cow__rwlock_t *l)
{
	COW__SCHED(COW__SCHED_WAIT_READERS, l, COW__MO_ACQUIRE);
}

#elif defined(COW_LOCK_PTHREAD)

#include <pthread.h>
#define COW_LOCK_NAME "pthread_rwlock"
typedef struct cow__rwlock {
	pthread_rwlock_t pt; /* Synchronization: pthread (TSan sees it). */
} cow__rwlock_t;
#define COW__LOCK(op) do { if ((op) != 0) cow__die(#op); } while (0)
static inline void cow__rwlock_init(cow__rwlock_t *l)
{ COW__LOCK(pthread_rwlock_init(&l->pt, NULL)); }
static inline void cow__rwlock_destroy(cow__rwlock_t *l)
{ COW__LOCK(pthread_rwlock_destroy(&l->pt)); }
static inline void cow__rwlock_read_lock_impl(cow__rwlock_t *l)
{ COW__LOCK(pthread_rwlock_rdlock(&l->pt)); }
static inline void cow__rwlock_read_unlock_impl(cow__rwlock_t *l)
{ COW__LOCK(pthread_rwlock_unlock(&l->pt)); }
static inline void cow__rwlock_write_lock_impl(cow__rwlock_t *l)
{ COW__LOCK(pthread_rwlock_wrlock(&l->pt)); }
static inline void cow__rwlock_write_unlock_impl(cow__rwlock_t *l)
{ COW__LOCK(pthread_rwlock_unlock(&l->pt)); }

#else /* the ck-based locks, annotated for TSan */

#if defined(COW_LOCK_PFLOCK)

#include <ck_pflock.h>
#define COW_LOCK_NAME "ck_pflock"
typedef struct cow__rwlock {
	ck_pflock_t ck; /* Synchronization: ck_pflock (its calls only). */
} cow__rwlock_t;
#define COW__CK_INIT(l) ck_pflock_init(&(l)->ck)
#define COW__CK_READ_LOCK(l) ck_pflock_read_lock(&(l)->ck)
#define COW__CK_READ_UNLOCK(l) ck_pflock_read_unlock(&(l)->ck)
#define COW__CK_WRITE_LOCK(l) ck_pflock_write_lock(&(l)->ck)
#define COW__CK_WRITE_UNLOCK(l) ck_pflock_write_unlock(&(l)->ck)

#else

/*
 * The default lock: a writer flag and a reader count on ck_pr, the
 * write-biased algorithm of ck_rwlock (ConcurrencyKit's ck_rwlock.h;
 * benchmarks label it ck_rwlock), with the library's own fields so that
 * the protocol's wait for readers (below) reads a field of its own. A
 * reader counts itself in and then looks at the flag; a writer sets the
 * flag and then looks at the count: a full fence between the store and
 * the load on each side, so at least one of the two sees the other (the
 * handshake of Dekker's algorithm) and they are never both inside.
 * docs/model.md models it step by step.
 */
#define COW_LOCK_NAME "cow_rwlock"
typedef struct cow__rwlock {
	/* 1 from the exclusive side's claim to its unlock. Synchronization:
	 * atomic (ck_pr; the fences below). */
	unsigned writer;
	/* Shared holders inside, and readers between counting themselves in
	 * and finding the flag set. Synchronization: atomic (ck_pr; the
	 * fences below). */
	unsigned readers;
} cow__rwlock_t;

/* One attempt at the shared lock: true when it is held. */
static inline bool
cow__rwlock_read_trylock(cow__rwlock_t *l)
{
	if (ck_pr_load_uint(&l->writer) != 0)
		return false;
	ck_pr_inc_uint(&l->readers);
	/* Full fence between the increment and the load of the flag: the
	 * writer sets the flag, fences, then loads the count. */
	ck_pr_fence_atomic_load();
	if (ck_pr_load_uint(&l->writer) == 0) {
		/* Acquire: the critical section comes after the lock. */
		ck_pr_fence_lock();
		return true;
	}
	/* A writer came in between: leave, and wait for it to finish. */
	ck_pr_dec_uint(&l->readers);
	return false;
}

static inline void
cow__rwlock_own_read_lock(cow__rwlock_t *l)
{
	unsigned spins = 0;

	while (!cow__rwlock_read_trylock(l))
		cow__backoff(&spins);
}

/* Release: the section's accesses happen before the decrement that may
 * let the exclusive side in, the last access to the lock (above). */
static inline void
cow__rwlock_own_read_unlock(cow__rwlock_t *l)
{
	ck_pr_fence_unlock();
	ck_pr_dec_uint(&l->readers);
}

/* Claim the flag (readers that arrive later wait: write bias), then wait
 * for the readers already inside. */
static inline void
cow__rwlock_own_write_lock(cow__rwlock_t *l)
{
	unsigned spins = 0;

	while (ck_pr_fas_uint(&l->writer, 1) != 0)
		cow__backoff(&spins);
	/* Full fence between the claim and the load of the count (the
	 * readers' side of the handshake is in cow__rwlock_read_trylock). */
	ck_pr_fence_atomic_load();
	spins = 0;
	while (ck_pr_load_uint(&l->readers) != 0)
		cow__backoff(&spins);
	ck_pr_fence_lock();
}

static inline void
cow__rwlock_own_write_unlock(cow__rwlock_t *l)
{
	ck_pr_fence_unlock();
	ck_pr_store_uint(&l->writer, 0);
}

/* Before the lock is shared (a new context, published later): plain
 * stores, kept in place by a compiler barrier. */
static inline void
cow__rwlock_own_init(cow__rwlock_t *l)
{
	l->writer = 0;
	l->readers = 0;
	ck_pr_barrier();
}

#define COW__CK_INIT(l) cow__rwlock_own_init(l)
#define COW__CK_READ_LOCK(l) cow__rwlock_own_read_lock(l)
#define COW__CK_READ_UNLOCK(l) cow__rwlock_own_read_unlock(l)
#define COW__CK_WRITE_LOCK(l) cow__rwlock_own_write_lock(l)
#define COW__CK_WRITE_UNLOCK(l) cow__rwlock_own_write_unlock(l)
#endif

static inline void
cow__rwlock_init(cow__rwlock_t *l)
{
	COW__CK_INIT(l);
	COW__TSAN_MUTEX(__tsan_mutex_create(l, __tsan_mutex_not_static));
}

static inline void
cow__rwlock_destroy(cow__rwlock_t *l)
{
	(void)l;
	COW__TSAN_MUTEX(__tsan_mutex_destroy(l, 0));
}

static inline void
cow__rwlock_read_lock_impl(cow__rwlock_t *l)
{
	COW__TSAN_MUTEX(__tsan_mutex_pre_lock(l, __tsan_mutex_read_lock));
	COW__CK_READ_LOCK(l);
	COW__TSAN_MUTEX(__tsan_mutex_post_lock(l, __tsan_mutex_read_lock, 0));
}

static inline void
cow__rwlock_read_unlock_impl(cow__rwlock_t *l)
{
	COW__TSAN_MUTEX(__tsan_mutex_pre_unlock(l, __tsan_mutex_read_lock));
	COW__CK_READ_UNLOCK(l);
	COW__TSAN_MUTEX(__tsan_mutex_post_unlock(l, __tsan_mutex_read_lock));
}

static inline void
cow__rwlock_write_lock_impl(cow__rwlock_t *l)
{
	COW__TSAN_MUTEX(__tsan_mutex_pre_lock(l, 0));
	COW__CK_WRITE_LOCK(l);
	COW__TSAN_MUTEX(__tsan_mutex_post_lock(l, 0, 0));
}

static inline void
cow__rwlock_write_unlock_impl(cow__rwlock_t *l)
{
	COW__TSAN_MUTEX(__tsan_mutex_pre_unlock(l, 0));
	COW__CK_WRITE_UNLOCK(l);
	COW__TSAN_MUTEX(__tsan_mutex_post_unlock(l, 0));
}
#endif /* ck-based locks */

/*
 * cow__rwlock_wait_readers - the exclusive lock taken and dropped at once,
 * for a caller that knows no reader can arrive any more: return when every
 * reader inside has unlocked, with their critical sections ordered before
 * the return. The last share holder of a COW context waits this way: only
 * a share holder can become a copier, and it holds the last one.
 *
 * The default lock: with no reader to keep out, claiming the writer flag
 * buys nothing; a load of the reader count until it is zero does the wait
 * without a locked instruction. Why that count shows every copier still
 * inside: a copier counts itself in (a locked increment) before it
 * decrements the shares, and the caller has seen every such decrement.
 * The other locks take the exclusive lock and drop it.
 */
#if defined(COW_SCHED)
/* Modelled above. */
#elif defined(COW_LOCK_PTHREAD) || defined(COW_LOCK_PFLOCK)
static inline void
cow__rwlock_wait_readers_impl(cow__rwlock_t *l)
{
	cow__rwlock_write_lock_impl(l);
	cow__rwlock_write_unlock_impl(l);
}
#else
static inline void
cow__rwlock_wait_readers_impl(cow__rwlock_t *l)
{
	unsigned spins = 0;

	COW__TSAN_MUTEX(__tsan_mutex_pre_lock(l, 0));
	while (ck_pr_load_uint(&l->readers) != 0)
		cow__backoff(&spins);
	/* Acquire: the readers' copies happen before what we do next. */
	ck_pr_fence_acquire();
	COW__TSAN_MUTEX(__tsan_mutex_post_lock(l, 0, 0));
	COW__TSAN_MUTEX(__tsan_mutex_pre_unlock(l, 0));
	COW__TSAN_MUTEX(__tsan_mutex_post_unlock(l, 0));
}
#endif

/* The calls, with the rank's check and record (core/lockrank.h; nothing
 * in release builds). A hold is dropped from the record before the unlock,
 * which is the last access to the lock. */

static inline void
cow__rwlock_read_lock(cow__rwlock_t *l)
{
	cow__lock_check(l, COW__RANK_CTX);
	cow__rwlock_read_lock_impl(l);
	cow__lock_hold(l, COW__RANK_CTX);
}

static inline void
cow__rwlock_read_unlock(cow__rwlock_t *l)
{
	cow__lock_drop(l);
	cow__rwlock_read_unlock_impl(l);
}

static inline void
cow__rwlock_write_lock(cow__rwlock_t *l)
{
	cow__lock_check(l, COW__RANK_CTX);
	cow__rwlock_write_lock_impl(l);
	cow__lock_hold(l, COW__RANK_CTX);
}

static inline void
cow__rwlock_write_unlock(cow__rwlock_t *l)
{
	cow__lock_drop(l);
	cow__rwlock_write_unlock_impl(l);
}

/* An acquisition too: the order is checked, and nothing is recorded. */
static inline void
cow__rwlock_wait_readers(cow__rwlock_t *l)
{
	cow__lock_check(l, COW__RANK_CTX);
	cow__rwlock_wait_readers_impl(l);
}

/* Whether the calling thread holds @l (debug builds; only inside
 * COW__ASSERT, which release builds do not evaluate). */
static inline bool
cow__rwlock_held_shared(const cow__rwlock_t *l)
{
	return cow__lock_held(l);
}

#endif
