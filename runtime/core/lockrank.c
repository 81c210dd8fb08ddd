/*
 * lockrank.c - the debug record of the locks each thread holds, and the
 * order check (core/lockrank.h). Debug builds only; a release build
 * compiles nothing here.
 */
#include <stdint.h>
#include <stdio.h>

#include "core/lockrank.h"

#ifdef COW__DEBUG

/* Each rank's name for the messages, and whether a thread may hold several
 * locks of it (taken in address order). */
static const struct {
	const char *name;
	bool several;
} rank_info[COW__RANK_COUNT] = {
	[COW__RANK_PY_STRIPES] = {"a Python module stripe", true},
	[COW__RANK_FORK] = {"the fork lock", false},
	[COW__RANK_SHADOW_HANDLER] = {"the reshape-alias handler lock", false},
	[COW__RANK_SNAPSHOT_SAVES] = {"the snapshot saves lock", false},
	[COW__RANK_SNAPSHOT_JOB] = {"a snapshot job's lock", false},
	[COW__RANK_STORAGE_HOOKS] = {"the storage write-hooks lock", false},
	[COW__RANK_FN_BUCKETS] = {"a storage-group bucket", true},
	[COW__RANK_BORROWS] = {"the borrow records lock", false},
	[COW__RANK_STATS] = {"the statistics lock", false},
	[COW__RANK_THREADS] = {"the counter threads lock", false},
	[COW__RANK_CTX] = {"a COW context's lock", false},
	[COW__RANK_ALLOCATOR] = {"the allocator's locks", false},
};

/* Enough for a fork from a Python thread: 64 stripes, then every library
 * lock (16 buckets among them). */
#define HOLDS 128

struct hold {
	const void *lock;
	enum cow__lock_rank rank;
};

/* The calling thread's locks, in the order taken; the entries from @base
 * on are compared (0 but during a fork, see cow__lock_fork_begin). */
static _Thread_local struct {
	unsigned n;
	unsigned base;
	unsigned forks;
	struct hold held[HOLDS];
} holds;

static _Noreturn void
order_broken(const struct hold *h, const void *lock, enum cow__lock_rank rank)
{
	/* Thread-local: the message outlives this frame (cow__die prints it)
	 * and another thread's does not overwrite it. */
	static _Thread_local char why[320];
	const char *how;

	if (h->lock == lock)
		how = "which it holds already";
	else if (h->rank == rank && rank_info[rank].several)
		how = "a later address of the same rank (take them in "
		    "address order)";
	else if (h->rank == rank)
		how = "of the same rank (at most one at a time)";
	else
		how = "of a later rank";
	snprintf(why, sizeof why, "lock order broken: takes %s %p (rank %d) "
	    "while holding %s %p (rank %d), %s", rank_info[rank].name, lock,
	    (int)rank, rank_info[h->rank].name, h->lock, (int)h->rank, how);
	cow__die(why);
}

void
cow__lock_check(const void *lock, enum cow__lock_rank rank)
{
	for (unsigned i = holds.base; i < holds.n; i++) {
		const struct hold *h = &holds.held[i];

		if (h->rank < rank)
			continue;
		if (h->rank == rank && rank_info[rank].several &&
		    (uintptr_t)h->lock < (uintptr_t)lock)
			continue;
		order_broken(h, lock, rank);
	}
}

void
cow__lock_hold(const void *lock, enum cow__lock_rank rank)
{
	if (holds.n == HOLDS)
		cow__die("a thread holds more locks than the record keeps");
	holds.held[holds.n++] = (struct hold){lock, rank};
}

/* The index of @lock in the record (the newest entry), or -1. */
static int
hold_index(const void *lock)
{
	for (unsigned i = holds.n; i-- > 0;)
		if (holds.held[i].lock == lock)
			return (int)i;
	return -1;
}

static void
hold_remove(unsigned i)
{
	if (i < holds.base)
		holds.base--;
	for (; i + 1 < holds.n; i++)
		holds.held[i] = holds.held[i + 1];
	holds.n--;
}

void
cow__lock_drop(const void *lock)
{
	int i = hold_index(lock);

	if (i < 0)
		cow__die("a lock is released by a thread that does not "
		    "hold it");
	hold_remove((unsigned)i);
}

bool
cow__lock_held(const void *lock)
{
	return hold_index(lock) >= 0;
}

void
cow__lock_forget(const void *lock)
{
	int i = hold_index(lock);

	if (i >= 0)
		hold_remove((unsigned)i);
}

void
cow__lock_fork_begin(void)
{
	if (holds.forks++ == 0)
		holds.base = holds.n;
}

void
cow__lock_fork_end(void)
{
	if (holds.forks > 0 && --holds.forks == 0)
		holds.base = 0;
}

#else

/* A release build has nothing here (ISO C wants a declaration). */
typedef int cow__lockrank_release_t;

#endif /* COW__DEBUG */
