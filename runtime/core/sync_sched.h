/*
 * sync_sched.h - the interleaving checker's side of the synchronisation
 * headers (core/atomic.h, core/refcount.h, core/rwlock.h), included by
 * atomic.h in COW_SCHED builds only (tests/interleave/, docs/interleave.md).
 *
 * Every atomic access and fence of those headers is preceded by
 * COW__SCHED(op, addr, order): here a call of cow__sched_point, which the
 * checker defines (tests/interleave/sched.c). At a scheduling point a test
 * thread stops until the scheduler lets it perform @op; one test thread
 * runs at a time. The hooks that only describe (fences, initialisation and
 * the loads the headers explain need no choice) pass straight through the
 * sequentially consistent checker, which orders everything anyway: see
 * cow__sched_is_point. The shared/exclusive lock is not the library's: in
 * these builds core/rwlock.h makes it the scheduler's model of the default
 * lock, whose every operation is one of the hooks below.
 *
 * Never in an optimised or non-ASan build: the checker's verdict "no
 * AddressSanitizer report" needs ASan, and optimised builds ship.
 */
#ifndef COW_CORE_SYNC_SCHED_H
#define COW_CORE_SYNC_SCHED_H

#if defined(__OPTIMIZE__)
#error "COW_SCHED (the interleaving checker's build) is never optimised"
#endif
#if !defined(__SANITIZE_ADDRESS__)
#if !defined(__has_feature)
#error "COW_SCHED needs AddressSanitizer"
#elif !__has_feature(address_sanitizer)
#error "COW_SCHED needs AddressSanitizer"
#endif
#endif

/* What a thread is about to do at a hook. */
enum cow__sched_op {
	COW__SCHED_REF_INIT,
	COW__SCHED_REF_GET,
	COW__SCHED_REF_SUB,
	COW__SCHED_REF_LOAD,
	COW__SCHED_PIN_LOAD,
	COW__SCHED_PTR_LOAD,
	COW__SCHED_PTR_STORE,
	COW__SCHED_PTR_INSTALL,
	/* cow__atomic_* and cow__owned_* (a load, a store, a read-modify-write): scheduling
	 * points only in scenarios where a counter carries synchronisation
	 * (the warn-once claim); statistics commute with everything a test
	 * thread does. */
	COW__SCHED_COUNTER_LOAD,
	COW__SCHED_COUNTER_STORE,
	COW__SCHED_COUNTER_RMW,
	COW__SCHED_EPOCH_LOAD,
	/* A fence of the hook's order (addr: the location its primitive
	 * works on). */
	COW__SCHED_FENCE,
	/* cow__rwlock_init: the lock's plain initialisation. */
	COW__SCHED_LOCK_INIT,
	COW__SCHED_READ_LOCK,
	COW__SCHED_READ_UNLOCK,
	COW__SCHED_WRITE_LOCK,
	COW__SCHED_WRITE_UNLOCK,
	/* cow__rwlock_wait_readers: runnable once no reader is inside; it
	 * claims nothing. */
	COW__SCHED_WAIT_READERS,
	COW__SCHED_LOCK_DESTROY,
	/* Inside a fault switch's window (COW__FAULT_YIELD). */
	COW__SCHED_WINDOW,
	/* cow__backoff: a spin wait on the location of the thread's last
	 * load, runnable once another thread stored there (or, in the
	 * weak-memory mode, once it may read a newer store there). */
	COW__SCHED_SPIN,
	COW__SCHED_NOPS
};

/* Is @op a scheduling point of the sequentially consistent checker? */
static inline int
cow__sched_is_point(enum cow__sched_op op)
{
	return op != COW__SCHED_REF_INIT && op != COW__SCHED_PIN_LOAD &&
	    op != COW__SCHED_EPOCH_LOAD && op != COW__SCHED_FENCE &&
	    op != COW__SCHED_LOCK_INIT;
}

/* Is @op a cow__atomic_* and cow__owned_* operation? */
static inline int
cow__sched_is_counter(enum cow__sched_op op)
{
	return op == COW__SCHED_COUNTER_LOAD ||
	    op == COW__SCHED_COUNTER_STORE || op == COW__SCHED_COUNTER_RMW;
}

/* Stop until the scheduler lets the calling thread perform @op on @addr
 * with C11 order @order; for the lock operations, perform them. A thread
 * the checker does not run (set-up, tear-down) passes straight through. */
void cow__sched_point(enum cow__sched_op op, const void *addr,
    enum cow__mo order);

/* A plain (non-atomic) access of @n bytes at @addr that the protocol
 * orders through these headers (the data a copier reads, a context
 * freed): the weak-memory mode checks it for a data race under its
 * happens-before. */
void cow__sched_access(const void *addr, size_t n, int write);

#define COW__SCHED(op, addr, order) cow__sched_point((op), (addr), (order))
#define COW__SCHED_ACCESS(addr, n, write) cow__sched_access((addr), (n), (write))
#define COW__FAULT_YIELD() COW__SCHED(COW__SCHED_WINDOW, NULL, COW__MO_RELAXED)

#endif
