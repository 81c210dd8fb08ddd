/*
 * lockrank.h - the order of the library's locks (jemalloc's witness.h):
 * every lock has a rank, and a thread that holds a lock may take one of a
 * later rank, never one of an earlier rank (docs/design.md, "Locks"). A
 * fork takes them all in this order (core/fork.h).
 *
 * Debug builds (COW__DEBUG, core/die.h) check the order on every
 * acquisition: each thread records the locks it holds, and taking a lock
 * whose rank is not later than that of every lock held dies with a message
 * that names both locks and their ranks. The check runs before the
 * acquisition blocks, so an order that could deadlock is reported even when
 * this run would not have deadlocked. Two ranks hold several locks that
 * one thread may take together (a fork takes every bucket; a Python op
 * several stripes): within them a thread takes locks in address order. A
 * second lock of any other rank, or a lock the thread already holds, is a
 * violation. Release builds keep no record: the calls below are empty.
 *
 * The locks themselves: core/mutex.h (pthread mutexes and rwlocks with a
 * rank) and core/rwlock.h (a COW context's lock, rank COW__RANK_CTX).
 */
#ifndef COW_CORE_LOCKRANK_H
#define COW_CORE_LOCKRANK_H

#include <stdbool.h>

#include "core/die.h"

/* Outermost first. */
enum cow__lock_rank {
	COW__RANK_PY_STRIPES,     /* python/src/guard.c: the 64 stripes; an
				   * op holds its stripes while it calls the
				   * library; several, in address order */
	COW__RANK_FORK,           /* core/fork.c: from a fork's prepare to
				   * its parent or child handler */
	COW__RANK_SHADOW_HANDLER, /* tensor/shadow.c: held shared while a
				   * reshape-alias handler (user code) runs */
	COW__RANK_SNAPSHOT_SAVES, /* snapshot/save.c: the saves and jobs
				   * running */
	COW__RANK_SNAPSHOT_JOB,   /* snapshot/save.c: a job's state */
	COW__RANK_STORAGE_HOOKS,  /* storage/storage.c: adding write hooks */
	COW__RANK_FN_BUCKETS,     /* functional/storage_group.c: 16 buckets;
				   * several, in address (index) order */
	COW__RANK_BORROWS,        /* tensor/maybe_owned.c (borrow checks) */
	COW__RANK_STATS,          /* storage/stats.c */
	COW__RANK_THREADS,        /* core/tcounter.c's thread list, and the
				   * copy sections (fork.c) */
	COW__RANK_CTX,            /* storage/cow_ctx.h: a COW context's
				   * shared/exclusive lock; at most one */
	COW__RANK_ALLOCATOR,      /* alloc/jemalloc.c: the private jemalloc's
				   * own locks (its fork hooks only; jemalloc
				   * keeps no record of ours) */
	COW__RANK_COUNT
};

#ifdef COW__DEBUG

/* Taking @lock of @rank now keeps the order: return, or die naming the
 * lock held that it breaks the order against. Before the lock blocks. */
void cow__lock_check(const void *lock, enum cow__lock_rank rank);
/* Record @lock (of @rank) as held by the calling thread. */
void cow__lock_hold(const void *lock, enum cow__lock_rank rank);
/* Remove @lock from the record; dies when the thread does not hold it. */
void cow__lock_drop(const void *lock);
/* Whether the calling thread holds @lock (for the asserts). */
bool cow__lock_held(const void *lock);
/* A fork's child makes @lock anew: it is held no more, if it was. */
void cow__lock_forget(const void *lock);
/* From a fork's prepare handler to its parent or child handler: the locks
 * the forking thread held before are not compared with the ones the fork
 * takes. A handler skips a lock its thread already holds (a fork from a
 * reshape-alias handler, which holds its lock shared, core/fork.h); the
 * fork's own locks still go in rank order. */
void cow__lock_fork_begin(void);
void cow__lock_fork_end(void);

#else

#define cow__lock_check(lock, rank) ((void)0)
#define cow__lock_hold(lock, rank) ((void)0)
#define cow__lock_drop(lock) ((void)0)
#define cow__lock_forget(lock) ((void)0)
#define cow__lock_fork_begin() ((void)0)
#define cow__lock_fork_end() ((void)0)
/* Only inside COW__ASSERT, which does not evaluate it here. */
static inline bool
cow__lock_held(const void *lock)
{
	(void)lock;
	return true;
}

#endif /* COW__DEBUG */

#endif
