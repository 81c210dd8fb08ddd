/*
 * atomic.h - atomic words and fences: the memory orders, pointer
 * publication (cow__atomic_ptr_t), 64-bit words (cow__atomic_u64_t), words
 * with one writer (cow__owned_u64_t) and the spin wait (cow__backoff). With
 * core/refcount.h (reference and pin counts) and core/rwlock.h (a COW
 * context's lock), the only headers through which cowstore uses
 * ConcurrencyKit: no other file includes a ck_*.h header (ctest
 * layers.includes checks it).
 *
 * ThreadSanitizer: Debian's ck_pr on x86_64 is inline assembly that TSan does
 * not see (tests/tsan/ shows it). In TSan builds every primitive of these
 * headers tells TSan about the happens-before edge it creates, with
 * __tsan_acquire/__tsan_release for atomics and __tsan_mutex_* for the lock,
 * so the TSan run checks the same ck code that ships. No suppressions. The
 * switches for it (COW__TSAN_*) are here, for all three headers.
 *
 * Fault points (core/fault.h) name the steps that negative controls break:
 * the fences that the weak-memory controls drop (only the checker's
 * weak-memory mode can see that; here the install's release, the others
 * in core/refcount.h) and the share increment (core/refcount.h).
 *
 * Interleaving checker (tests/interleave/, docs/interleave.md): every
 * atomic access and every fence of these headers is preceded by a line
 * COW__SCHED(op, addr, order) that names it and its C11 memory order
 * (enum cow__mo): a hook in COW_SCHED builds (debug + ASan only;
 * core/sync_sched.h; core/rwlock.h then replaces the lock by the
 * scheduler's model of it) and nothing otherwise: the cost test
 * cost.sync_hooks_compile_to_nothing checks that the headers then compile
 * to the same instructions as with the COW__SCHED lines blanked. The
 * checker's weak-memory mode (--weak) reads the orders: a load may return
 * any store C11 allows for them, so a missing fence is found there.
 *
 * The orders are what the code guarantees on every target, not what x86
 * adds: ck's atomic operations (ck_pr_faa, ck_pr_cas, ck_pr_fas, loads and
 * stores) are relaxed on weakly ordered machines (on x86 a locked
 * instruction happens to be a full barrier), and only the ck_pr_fence_*
 * calls order memory. So an access that needs order is a relaxed access
 * next to a fence, and both are named: e.g. a release fence, then a
 * relaxed read-modify-write.
 */
#ifndef COW_CORE_ATOMIC_H
#define COW_CORE_ATOMIC_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ck_pr.h>

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
/* Spin waits. A waiter spins briefly, then yields: with more threads
 * than cores a waiter that only spins burns the time slice of the thread
 * it waits for.
 *
 * The interleaving checker sees a backoff as a spin wait: the caller
 * loaded one location with these headers, found the value it waits to
 * change, and will load it again, with no other effect in between (the
 * loops it runs all have that shape; the lock's loops are replaced by its
 * model of the lock). Its thread is not runnable until another thread
 * stores there (docs/interleave.md, "Spin waits"), so the search neither
 * loops nor misses an outcome.                                          */

static inline void
cow__backoff(unsigned *spins)
{
	COW__SCHED(COW__SCHED_SPIN, spins, COW__MO_RELAXED);
	if (++*spins < 64)
		ck_pr_stall();
	else
		sched_yield();
}

#endif
