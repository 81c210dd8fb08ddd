/*
 * sync.h - the one internal header through which cowstore uses
 * ConcurrencyKit: refcounts, pointer publication and the shared/exclusive
 * lock of a COW context. Nothing else includes a ck_*.h header.
 *
 * ThreadSanitizer: Debian's ck_pr on x86_64 is inline assembly that TSan does
 * not see (tests/tsan/ shows it). In TSan builds every primitive
 * below tells TSan about the happens-before edge it creates, with
 * __tsan_acquire/__tsan_release for atomics and __tsan_mutex_* for the lock,
 * so the TSan run checks the same ck code that ships. No suppressions.
 *
 * Fault points (core/fault.h) name the steps that negative controls break:
 * the fences that the weak-memory controls drop (only the checker's
 * weak-memory mode can see that) and the share increment.
 *
 * Interleaving checker (tests/interleave/, docs/interleave.md): every
 * atomic access and every fence below is preceded by a line
 * COW__SCHED(op, addr, order) that names it and its C11 memory order
 * (enum cow__mo): a hook in COW_SCHED builds (debug + ASan only;
 * core/sync_sched.h, which also replaces the lock by the scheduler's model
 * of it) and nothing otherwise: the cost test
 * cost.sync_hooks_compile_to_nothing checks that sync.h then compiles to
 * the same instructions as with the COW__SCHED lines blanked. The
 * checker's weak-memory mode (--weak) reads the orders: a load may return
 * any store C11 allows for them, so a missing fence below is found there.
 *
 * The orders are what the code guarantees on every target, not what x86
 * adds: ck's atomic operations (ck_pr_faa, ck_pr_cas, ck_pr_fas, loads and
 * stores) are relaxed on weakly ordered machines (on x86 a locked
 * instruction happens to be a full barrier), and only the ck_pr_fence_*
 * calls order memory. So an access that needs order is a relaxed access
 * next to a fence, and both are named: e.g. a release fence, then a
 * relaxed read-modify-write.
 */
#ifndef COW_CORE_SYNC_H
#define COW_CORE_SYNC_H

#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

#include <ck_pr.h>
#include <ck_rwlock.h>

#include "core/die.h"
#include "core/fault.h"

#if defined(__SANITIZE_THREAD__)
#define COW_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COW_TSAN 1
#endif
#endif

/* COW_TSAN_HIDE_SYNC (the negative control of tests/tsan/, never set
 * otherwise) drops the annotations: TSan then sees none of the
 * synchronisation below and must report the races it hides. */
#if defined(COW_TSAN) && !defined(COW_TSAN_HIDE_SYNC)
#include <sanitizer/tsan_interface.h>
#define COW__TSAN_ACQUIRE(addr) __tsan_acquire((void *)(addr))
#define COW__TSAN_RELEASE(addr) __tsan_release((void *)(addr))
#define COW__TSAN_MUTEX(call) call
#else
#define COW__TSAN_ACQUIRE(addr) ((void)0)
#define COW__TSAN_RELEASE(addr) ((void)0)
#define COW__TSAN_MUTEX(call) ((void)0)
#endif

/* C11's memory orders (<stdatomic.h> memory_order_*), as the hooks name
 * them. */
enum cow__mo {
	COW__MO_RELAXED,
	COW__MO_ACQUIRE,
	COW__MO_RELEASE,
	COW__MO_ACQ_REL,
	COW__MO_SEQ_CST
};

#if defined(COW_SCHED)
#include "core/sync_sched.h"
#else
#define COW__SCHED(op, addr, order) ((void)0)
#define COW__SCHED_ACCESS(addr, n, write) ((void)0)
/* A fault switch's window: lets other threads run in the middle of it. */
#define COW__FAULT_YIELD() sched_yield()
#endif

/* ------------------------------------------------------------------ */
/* Fences: C11's atomic_thread_fence, named for the checker (@addr is the
 * location whose accesses it orders).                                  */

static inline void
cow__fence_acquire(const void *addr)
{
	(void)addr;
	COW__SCHED(COW__SCHED_FENCE, addr, COW__MO_ACQUIRE);
	ck_pr_fence_acquire();
}

static inline void
cow__fence_release(const void *addr)
{
	(void)addr;
	COW__SCHED(COW__SCHED_FENCE, addr, COW__MO_RELEASE);
	ck_pr_fence_release();
}

/* A full fence between the atomic read-modify-writes before it and the
 * loads after it (C11: a seq_cst fence): the handshake of two threads that
 * each store, then load what the other stored (core/fork.h). */
static inline void
cow__fence_atomic_load(const void *addr)
{
	(void)addr;
	COW__SCHED(COW__SCHED_FENCE, addr, COW__MO_SEQ_CST);
	ck_pr_fence_atomic_load();
}

/* ------------------------------------------------------------------ */
/* Refcounts (urcu ref.h semantics: get aborts on overflow or on a dead
 * object, put reports the drop to zero).                              */

typedef struct cow__refcount {
	unsigned value; /* Synchronization: atomic (ck_pr). */
} cow__refcount_t;

static inline void
cow__ref_init(cow__refcount_t *ref, unsigned value)
{
	COW__SCHED(COW__SCHED_REF_INIT, ref, COW__MO_RELAXED);
	ck_pr_store_uint(&ref->value, value);
}

static inline unsigned
cow__ref_load(const cow__refcount_t *ref)
{
	unsigned v;

	COW__SCHED(COW__SCHED_REF_LOAD, ref, COW__MO_RELAXED);
	v = ck_pr_load_uint(&ref->value);
	/* Pairs with the release in cow__ref_sub: a reader that sees a count
	 * drop also sees what the droppers did before dropping. */
	COW__FAULT_POINT(ref_load_acquire, cow__fence_acquire(ref));
	COW__TSAN_ACQUIRE(ref);
	return v;
}

static inline void
cow__ref_get(cow__refcount_t *ref)
{
	unsigned old;

	/* Relaxed: a new reference is made from one the caller holds, which
	 * keeps the object alive; nothing is published through the count. */
	COW__SCHED(COW__SCHED_REF_GET, ref, COW__MO_RELAXED);
	COW__FAULT_POINT(ref_increment, old = ck_pr_faa_uint(&ref->value, 1));
	if (old == 0 || old == UINT_MAX)
		cow__die("refcount get on a dead or saturated object");
}

/* Subtract one; return the value before. The caller that sees 1 owns the
 * object. */
static inline unsigned
cow__ref_sub(cow__refcount_t *ref)
{
	unsigned old;

	/* Release: everything this thread did with the object happens before
	 * the thread that drops the count to zero frees or steals it. */
	COW__TSAN_RELEASE(ref);
	COW__FAULT_POINT(ref_sub_release, cow__fence_release(ref));
	COW__SCHED(COW__SCHED_REF_SUB, ref, COW__MO_RELAXED);
	old = ck_pr_faa_uint(&ref->value, UINT_MAX);
	if (old == 0)
		cow__die("refcount put below zero");
	if (old == 1) {
		/* Acquire: we are the last; see every earlier holder's work. */
		COW__FAULT_POINT(ref_last_acquire, cow__fence_acquire(ref));
		COW__TSAN_ACQUIRE(ref);
	}
	return old;
}

/* True when the count dropped to zero. */
static inline bool
cow__ref_put(cow__refcount_t *ref)
{
	return cow__ref_sub(ref) == 1;
}

/* ------------------------------------------------------------------ */
/* Pin counts (storage.h): unlike a refcount, zero is a live state. An
 * unpin may run on any thread (an export's deleter); what the unpinning
 * thread did before (a consumer's writes through the exported pointer)
 * happens before whatever follows a load that sees the count drop.     */

static inline void
cow__pin_get(cow__refcount_t *ref)
{
	/* Relaxed: the pin orders nothing by itself; the pinning thread's
	 * later writes are ordered by the user (storage.h). */
	COW__SCHED(COW__SCHED_REF_GET, ref, COW__MO_RELAXED);
	if (ck_pr_faa_uint(&ref->value, 1) == UINT_MAX)
		cow__die("pin count saturated");
}

/* Remove one pin; false (and nothing changes) when no more than @floor
 * pins are left (the pins nobody may remove). */
static inline bool
cow__pin_put(cow__refcount_t *ref, unsigned floor)
{
	unsigned seen;

	COW__TSAN_RELEASE(ref);
	cow__fence_release(ref);
	COW__SCHED(COW__SCHED_REF_SUB, ref, COW__MO_RELAXED);
	seen = ck_pr_load_uint(&ref->value);
	do {
		if (seen <= floor)
			return false;
	} while (!ck_pr_cas_uint_value(&ref->value, seen, seen - 1, &seen));
	return true;
}

/* The pin count, with acquire. Not a scheduling point of the sequentially
 * consistent checker (COW__SCHED_PIN_LOAD passes through): a pin is a
 * write of its storage, which the user orders against the lazy clone that
 * loads the count, and an unpin racing with that load is correct either
 * way (the clone copies or shares), so it has nothing to choose. */
static inline unsigned
cow__pin_load(const cow__refcount_t *ref)
{
	unsigned v;

	COW__SCHED(COW__SCHED_PIN_LOAD, ref, COW__MO_RELAXED);
	v = ck_pr_load_uint(&ref->value);
	cow__fence_acquire(ref);
	COW__TSAN_ACQUIRE(ref);
	return v;
}

/* ------------------------------------------------------------------ */
/* Pointer publication. A pointer that threads share without a lock has
 * the type cow__atomic_ptr_t: only cow__ptr_* read or write it.        */

typedef struct cow__atomic_ptr {
	void *value;
} cow__atomic_ptr_t;

/* Before the object holding @slot is shared: a plain store. */
static inline void
cow__ptr_init(cow__atomic_ptr_t *slot, void *value)
{
	slot->value = value;
}

static inline void *
cow__ptr_load(const cow__atomic_ptr_t *slot)
{
	void *p;

	COW__SCHED(COW__SCHED_PTR_LOAD, slot, COW__MO_RELAXED);
	p = ck_pr_md_load_ptr(&slot->value);
	/* Acquire: the pointee was initialised before it was published. */
	cow__fence_acquire(slot);
	COW__TSAN_ACQUIRE(slot);
	return p;
}

static inline void
cow__ptr_store(cow__atomic_ptr_t *slot, void *value)
{
	COW__TSAN_RELEASE(slot);
	/* Release: initialise the pointee before others can see it. */
	cow__fence_release(slot);
	COW__SCHED(COW__SCHED_PTR_STORE, slot, COW__MO_RELAXED);
	ck_pr_md_store_ptr(&slot->value, value);
}

/* Install @value if *slot is NULL. Returns the winner: @value or the pointer
 * another thread installed first. */
static inline void *
cow__ptr_install(cow__atomic_ptr_t *slot, void *value)
{
	void *seen;

	COW__TSAN_RELEASE(slot);
	COW__FAULT_POINT(install_release, cow__fence_release(slot));
	COW__SCHED(COW__SCHED_PTR_INSTALL, slot, COW__MO_RELAXED);
	if (ck_pr_cas_ptr_value(&slot->value, NULL, value, &seen))
		return value;
	/* Lost: acquire what the winner published. */
	cow__fence_acquire(slot);
	COW__TSAN_ACQUIRE(slot);
	return seen;
}

/* ------------------------------------------------------------------ */
/* Atomic words. A 64-bit field that threads share without a lock has the
 * type cow__atomic_u64_t: only the accessors below read or write it, and
 * each one names its memory order. Relaxed accesses order nothing: they
 * serve values whose readers need no other memory (statistics, modes,
 * generations, the warn-once flag, the budget's charged bytes).       */

typedef struct cow__atomic_u64 {
	uint64_t value;
} cow__atomic_u64_t;

static inline uint64_t
cow__atomic_load_relaxed(const cow__atomic_u64_t *w)
{
	COW__SCHED(COW__SCHED_COUNTER_LOAD, w, COW__MO_RELAXED);
	return ck_pr_load_64(&w->value);
}

static inline void
cow__atomic_store_relaxed(cow__atomic_u64_t *w, uint64_t v)
{
	COW__SCHED(COW__SCHED_COUNTER_STORE, w, COW__MO_RELAXED);
	ck_pr_store_64(&w->value, v);
}

static inline void
cow__atomic_add_relaxed(cow__atomic_u64_t *w, uint64_t n)
{
	COW__SCHED(COW__SCHED_COUNTER_RMW, w, COW__MO_RELAXED);
	ck_pr_add_64(&w->value, n);
}

/* The value before the add. */
static inline uint64_t
cow__atomic_fetch_add_relaxed(cow__atomic_u64_t *w, uint64_t n)
{
	COW__SCHED(COW__SCHED_COUNTER_RMW, w, COW__MO_RELAXED);
	return ck_pr_faa_64(&w->value, n);
}

/* True when *@w held @old and now holds @new_value. */
static inline bool
cow__atomic_cas_relaxed(cow__atomic_u64_t *w, uint64_t old,
    uint64_t new_value)
{
	COW__SCHED(COW__SCHED_COUNTER_RMW, w, COW__MO_RELAXED);
	return ck_pr_cas_64(&w->value, old, new_value);
}

/* Publishes what the writer did before: a release fence, then a relaxed
 * add. Pairs with cow__atomic_load_acquire. */
static inline void
cow__atomic_add_release(cow__atomic_u64_t *w, uint64_t n)
{
	COW__TSAN_RELEASE(w);
	cow__fence_release(w);
	COW__SCHED(COW__SCHED_COUNTER_RMW, w, COW__MO_RELAXED);
	ck_pr_add_64(&w->value, n);
}

/* A release fence, then a relaxed store: a reader that loads @v with
 * cow__atomic_load_acquire (or loads it, then fences) sees what the writer
 * did before. For a word whose writers are ordered otherwise (one owner). */
static inline void
cow__atomic_store_release(cow__atomic_u64_t *w, uint64_t v)
{
	COW__TSAN_RELEASE(w);
	cow__fence_release(w);
	COW__SCHED(COW__SCHED_COUNTER_STORE, w, COW__MO_RELAXED);
	ck_pr_store_64(&w->value, v);
}

/* A relaxed load, then an acquire fence: a reader that sees an add of
 * cow__atomic_add_release sees what its writer did before it. */
static inline uint64_t
cow__atomic_load_acquire(const cow__atomic_u64_t *w)
{
	uint64_t v;

	COW__SCHED(COW__SCHED_COUNTER_LOAD, w, COW__MO_RELAXED);
	v = ck_pr_load_64(&w->value);
	cow__fence_acquire(w);
	COW__TSAN_ACQUIRE(w);
	return v;
}

/* A relaxed load of a word that changes rarely and is read on a fast path
 * (a budget's epoch, alloc/budget.h), and no scheduling point of the
 * sequentially consistent checker (COW__SCHED_EPOCH_LOAD passes through),
 * so that the path stays free of shared writes and of checker steps. A
 * reader ordered after the write by other means (the caller's
 * synchronisation) sees it. */
static inline uint64_t
cow__atomic_load_relaxed_fast(const cow__atomic_u64_t *w)
{
	COW__SCHED(COW__SCHED_EPOCH_LOAD, w, COW__MO_RELAXED);
	return __atomic_load_n(&w->value, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* Words with one writer (the per-thread statistics of core/tcounter.h):
 * only the owning thread adds, with a plain load, add and store and no
 * locked instruction; any thread reads. The store releases and the load
 * acquires (plain moves on x86), so a reader that sees a count also sees
 * every count the writer had seen before it (a free is counted after its
 * allocation). Compiler atomics, which TSan sees.                      */

typedef struct cow__owned_u64 {
	uint64_t value;
} cow__owned_u64_t;

static inline void
cow__owned_add_release(cow__owned_u64_t *w, uint64_t n)
{
	/* The owner's own load (relaxed), then the store (release). */
	COW__SCHED(COW__SCHED_COUNTER_STORE, w, COW__MO_RELEASE);
	__atomic_store_n(&w->value,
	    __atomic_load_n(&w->value, __ATOMIC_RELAXED) + n, __ATOMIC_RELEASE);
}

static inline uint64_t
cow__owned_load_acquire(const cow__owned_u64_t *w)
{
	COW__SCHED(COW__SCHED_COUNTER_LOAD, w, COW__MO_ACQUIRE);
	return __atomic_load_n(&w->value, __ATOMIC_ACQUIRE);
}

/* Any thread, when the owner cannot be adding (a slot nobody counts in
 * any more, core/tcounter.c). */
static inline void
cow__owned_store_relaxed(cow__owned_u64_t *w, uint64_t v)
{
	COW__SCHED(COW__SCHED_COUNTER_STORE, w, COW__MO_RELAXED);
	__atomic_store_n(&w->value, v, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* Shared/exclusive lock of a COW context.
 * Shared: copiers reading the original data. Exclusive: the last reference,
 * which must wait for pending copiers before it steals or frees the data.
 *
 * The implementation is chosen at build time (docs/performance.md has the
 * measurements): ck_rwlock (default; write-biased, 8 bytes), ck_pflock
 * (COW_LOCK_PFLOCK, phase-fair) or pthread_rwlock (COW_LOCK_PTHREAD,
 * reference point). CMakeLists.txt's COW_LOCK_VARIANTS must list every
 * choice: each one runs the copier-versus-stealer stress scenarios under
 * ASan and TSan.
 *
 * What the protocol needs from a lock, beyond shared/exclusive: once the
 * exclusive lock is granted, no copier touches the lock again. The last
 * share holder frees the context (the lock inside it) as soon as its
 * exclusive lock returns, so a shared unlock's last access to the lock must
 * be the atomic step that lets the exclusive locker in. ck_rwlock and
 * ck_pflock unlock with one atomic decrement; glibc's pthread_rwlock_unlock
 * may only call futex_wake afterwards. ck_brlock does not qualify and was
 * removed: a reader record registered for one critical section must be
 * unregistered after it, and ck_brlock_read_unregister takes the writer
 * flag of a lock that may already be freed (docs/design.md).
 * Rules for all: never take the shared lock twice in one thread, never take
 * the exclusive lock while holding the shared one.
 *
 * ck waits spin briefly, then yield: with more threads than cores a waiter
 * that only spins burns the time slice the lock holder needs.
 *
 * The interleaving checker sees a backoff as a spin wait: the caller
 * loaded one location with sync.h, found the value it waits to change,
 * and will load it again, with no other effect in between (the loops it
 * runs all have that shape; ck's lock loops are replaced by its model of
 * the lock). Its thread is not runnable until another thread stores
 * there (docs/interleave.md, "Spin waits"), so the search neither loops
 * nor misses an outcome.                                              */

static inline void
cow__backoff(unsigned *spins)
{
	COW__SCHED(COW__SCHED_SPIN, spins, COW__MO_RELAXED);
	if (++*spins < 64)
		ck_pr_stall();
	else
		sched_yield();
}

#if defined(COW_SCHED)
/* The lock is the scheduler's model of ck_rwlock (core/sync_sched.h). */
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
static inline void cow__rwlock_write_lock(cow__rwlock_t *l)
{ COW__LOCK(pthread_rwlock_wrlock(&l->pt)); }
static inline void cow__rwlock_write_unlock(cow__rwlock_t *l)
{ COW__LOCK(pthread_rwlock_unlock(&l->pt)); }

#else /* the ck locks, annotated for TSan */

#if defined(COW_LOCK_PFLOCK)
#include <ck_pflock.h>
#define COW_LOCK_NAME "ck_pflock"
typedef struct cow__rwlock {
	ck_pflock_t ck; /* Synchronization: ck_pflock internals. */
} cow__rwlock_t;
#define COW__CK_INIT(l) ck_pflock_init(&(l)->ck)
#define COW__CK_READ_LOCK(l) ck_pflock_read_lock(&(l)->ck)
#define COW__CK_READ_UNLOCK(l) ck_pflock_read_unlock(&(l)->ck)
#define COW__CK_WRITE_LOCK(l) ck_pflock_write_lock(&(l)->ck)
#define COW__CK_WRITE_UNLOCK(l) ck_pflock_write_unlock(&(l)->ck)

#else
#define COW_LOCK_NAME "ck_rwlock"
typedef struct cow__rwlock {
	ck_rwlock_t ck; /* Synchronization: ck_rwlock internals. */
} cow__rwlock_t;

static inline void
cow__ck_rwlock_read_lock(ck_rwlock_t *ck)
{
	unsigned spins = 0;

	while (!ck_rwlock_read_trylock(ck))
		cow__backoff(&spins);
}

/* ck_rwlock_write_lock's two loops with backoff: claim the writer flag,
 * then wait for the readers already inside. Readers that arrive later see
 * the flag and wait (write bias). */
static inline void
cow__ck_rwlock_write_lock(ck_rwlock_t *ck)
{
	unsigned spins = 0;

	while (ck_pr_fas_uint(&ck->writer, 1) != 0)
		cow__backoff(&spins);
	ck_pr_fence_atomic_load();
	spins = 0;
	while (ck_pr_load_uint(&ck->n_readers) != 0)
		cow__backoff(&spins);
	ck_pr_fence_lock();
}

#define COW__CK_INIT(l) ck_rwlock_init(&(l)->ck)
#define COW__CK_READ_LOCK(l) cow__ck_rwlock_read_lock(&(l)->ck)
#define COW__CK_READ_UNLOCK(l) ck_rwlock_read_unlock(&(l)->ck)
#define COW__CK_WRITE_LOCK(l) cow__ck_rwlock_write_lock(&(l)->ck)
#define COW__CK_WRITE_UNLOCK(l) ck_rwlock_write_unlock(&(l)->ck)
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
cow__rwlock_write_lock(cow__rwlock_t *l)
{
	COW__TSAN_MUTEX(__tsan_mutex_pre_lock(l, 0));
	COW__CK_WRITE_LOCK(l);
	COW__TSAN_MUTEX(__tsan_mutex_post_lock(l, 0, 0));
}

static inline void
cow__rwlock_write_unlock(cow__rwlock_t *l)
{
	COW__TSAN_MUTEX(__tsan_mutex_pre_unlock(l, 0));
	COW__CK_WRITE_UNLOCK(l);
	COW__TSAN_MUTEX(__tsan_mutex_post_unlock(l, 0));
}
#endif /* ck locks */

/*
 * Debug builds (COW__DEBUG, core/die.h): the locks the calling thread holds
 * shared, for the asserts of the lock rules (docs/design.md): a copier
 * reads under its shared hold, and a waiter for readers holds none.
 * Release builds keep no record.
 */
#ifdef COW__DEBUG
#define COW__DEBUG_HOLDS 4
extern _Thread_local const void *cow__debug_held[COW__DEBUG_HOLDS];

/* The record's slot that holds @l (NULL: a free slot), or -1. */
static inline int
cow__debug_slot(const void *l)
{
	for (int i = 0; i < COW__DEBUG_HOLDS; i++)
		if (cow__debug_held[i] == l)
			return i;
	return -1;
}

static inline bool
cow__rwlock_held_shared(const cow__rwlock_t *l)
{
	return cow__debug_slot(l) >= 0;
}

/* Replace @from by @to in the record; @why when @from is not there. */
static inline void
cow__debug_record(const void *from, const void *to, const char *why)
{
	int i = cow__debug_slot(from);

	if (i < 0)
		cow__die(why);
	cow__debug_held[i] = to;
}

#define cow__debug_hold(l) \
	cow__debug_record(NULL, (l), "more shared holds than the protocol takes")
#define cow__debug_drop(l) \
	cow__debug_record((l), NULL, "a shared unlock without a shared hold")
#else
/* Only inside COW__ASSERT, which does not evaluate it here. */
static inline bool
cow__rwlock_held_shared(const cow__rwlock_t *l)
{
	(void)l;
	return true;
}
#define cow__debug_hold(l) ((void)0)
#define cow__debug_drop(l) ((void)0)
#endif

#if !defined(COW_SCHED)
static inline void
cow__rwlock_read_lock(cow__rwlock_t *l)
{
	cow__rwlock_read_lock_impl(l);
	cow__debug_hold(l);
}

static inline void
cow__rwlock_read_unlock(cow__rwlock_t *l)
{
	cow__debug_drop(l);
	cow__rwlock_read_unlock_impl(l);
}
#endif

/*
 * cow__rwlock_wait_readers - the exclusive lock taken and dropped at once,
 * for a caller that knows no reader can arrive any more: return when every
 * reader inside has unlocked, with their critical sections ordered before
 * the return. The last share holder of a COW context waits this way: only
 * a share holder can become a copier, and it holds the last one.
 *
 * ck_rwlock: with no reader to keep out, claiming the writer flag buys
 * nothing; a load of the reader count until it is zero does the wait
 * without a locked instruction. Why that count shows every copier still
 * inside: a copier counts itself in (a locked increment) before it
 * decrements the shares, and the caller has seen every such decrement.
 * The other locks take the exclusive lock and drop it.
 */
#if defined(COW_SCHED)
/* core/sync_sched.h models it. */
#elif defined(COW_LOCK_PTHREAD) || defined(COW_LOCK_PFLOCK)
static inline void
cow__rwlock_wait_readers(cow__rwlock_t *l)
{
	cow__rwlock_write_lock(l);
	cow__rwlock_write_unlock(l);
}
#else
static inline void
cow__rwlock_wait_readers(cow__rwlock_t *l)
{
	unsigned spins = 0;

	COW__TSAN_MUTEX(__tsan_mutex_pre_lock(l, 0));
	while (ck_pr_load_uint(&l->ck.n_readers) != 0)
		cow__backoff(&spins);
	/* Acquire: the readers' copies happen before what we do next. */
	ck_pr_fence_acquire();
	COW__TSAN_MUTEX(__tsan_mutex_post_lock(l, 0, 0));
	COW__TSAN_MUTEX(__tsan_mutex_pre_unlock(l, 0));
	COW__TSAN_MUTEX(__tsan_mutex_post_unlock(l, 0));
}
#endif

#endif
