/*
 * weak.h - the weak-memory mode of the interleaving checker
 * (docs/interleave.md, "The weak-memory mode").
 *
 * C11's memory model, after loom and CDSChecker: every atomic location
 * keeps a bounded history of its stores, each with the vector clock it
 * releases (its message); a load may return any store that coherence and
 * happens-before allow, the stale ones included, by the scheduler's choice
 * (a read decision); acquire loads and fences join the messages they read
 * into the thread's clock, release stores and fences publish it. Plain
 * accesses that the protocol orders through core/atomic.h, refcount.h and
 * rwlock.h (COW__SCHED_ACCESS) are
 * checked for data races under that happens-before, and so is every atomic
 * access against the plain initialisation of its location (cow__ref_init,
 * cow__rwlock_init). The scheduler (sched.c) calls in here; one test thread
 * runs at a time, so nothing below needs a lock.
 */
#ifndef ILV_WEAK_H
#define ILV_WEAK_H

#include <stdbool.h>
#include <stddef.h>

#include "core/refcount.h"
#include "core/rwlock.h"
#include "sched.h"

/* Stores kept per location (the bound on history). */
#define ILV_HISTORY_MAX 8

/* Forget every location and clock: a new execution of @nthreads threads,
 * keeping @history stores per location. */
void ilv_weak_reset(int nthreads, int history);

/* Thread @t finishes its previous hooked access: records the value a
 * store left in memory, and puts the newest value back where a stale load
 * had put an older one. Called at every hook and when the thread ends. */
void ilv_weak_settle(int t);

/* Thread @t performs the hooked @op on @addr with order @mo (its turn has
 * come): chooses what a load reads, and prepares a store's record. The
 * lock operations go to ilv_weak_lock instead. */
void ilv_weak_atomic(int t, enum cow__sched_op op, const void *addr,
    enum cow__mo mo);

/* A spin wait (cow__backoff) of thread @t on @addr, the location of its
 * last load: may a load there read a newer store than that load did? */
bool ilv_weak_may_read_newer(int t, const void *addr);

/* Thread @t resumes its spin wait on @addr: its next load there reads a
 * newer store than its last (re-reading that one would spin again, a step
 * that changes nothing), the next newer one at the oldest. */
void ilv_weak_spin_resume(int t, const void *addr);

/* May thread @t's wait for readers of @l return now: has it a store of
 * "no reader inside" that it may read? */
bool ilv_weak_may_wait_readers(int t, const cow__rwlock_t *l);

/* Thread @t performs the lock operation @op (the exclusive lock's @phase:
 * 0 the claim, 1 the wait for readers) on @l, before the scheduler
 * changes the lock's state. */
void ilv_weak_lock(int t, enum cow__sched_op op, const cow__rwlock_t *l,
    int phase);

/* Thread @t's plain access of @n bytes at @addr. */
void ilv_weak_access(int t, const void *addr, size_t n, bool write);

/* The scheduler's read decision among the stores in @mask (bit k: the
 * k-th newest store); returns k. Defined by sched.c. */
int ilv_choose_read(unsigned mask);

/* --trace: a load read store @k of @n, the only one it might. */
void ilv_note_read(int k, int n);

#endif
