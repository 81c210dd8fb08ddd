/*
 * cowstore testing hooks: what a test uses, not what an engine ships with.
 *
 * The functions declared here are for testing code that uses cowstore,
 * and cowstore itself:
 * - the fault allocator (cow_allocator_fault_*): an allocator that wraps
 *   another one and fails chosen allocations, to test your own out-of-
 *   memory paths (every cowstore call that allocates returns COW_ENOMEM
 *   and changes nothing when one of its allocations fails);
 * - borrow debugging (cow_borrow_debug_enabled, _outstanding): whether the
 *   library records MaybeOwned borrows, and how many recorded borrows of a
 *   tensor are outstanding (maybe_owned.h);
 * - the opaque test backend (cow_backend_opaque_test): a backend for
 *   devices that cannot alias memory, to run a program through the
 *   functionalization layer (functional.h) as such a device would.
 *
 * They are exported by the same library (libcowstore.so and libcowstore.a)
 * in every build, but only this header declares them: the umbrella header
 * cowstore.h does not include it (ctest install.public_headers_without_ck
 * checks that it includes every other public header and not this one).
 * Include <cowstore/testing.h> where you use them.
 *
 * maybe_owned.h keeps cow_borrow_debug_begin and cow_borrow_debug_end:
 * its inline functions call them (the ABI rule there), so they are not
 * test hooks but part of MaybeOwned.
 *
 * Errors follow common.h.
 */
#ifndef COWSTORE_TESTING_H
#define COWSTORE_TESTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "common.h"
#include "functional.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* The fault allocator.                                                  */

/**
 * cow_allocator_fault_new - a fault-injecting allocator around @inner.
 * Unarmed, it forwards every call to @inner's back end. Armed, it fails
 * chosen allocations (they return NULL without calling @inner). What goes
 * through it is counted and limited by the fault handle, not by @inner's
 * handle: @inner's statistics, limit and busy check do not see it.
 * Ownership: the caller owns the handle (cow_allocator_destroy); @inner must
 * outlive it. Thread-safety: any thread; arming is atomic.
 * Errors: COW_EINVAL (NULL), COW_ENOMEM.
 */
COW_API cow_status_t cow_allocator_fault_new(cow_allocator_t *inner,
    cow_allocator_t **out);

/**
 * cow_allocator_fault_fail_nth - fail the @n-th allocation from now (1 = the
 * next one), once; later allocations succeed. @n = 0 disarms.
 * Thread-safety: any thread (atomic stores); allocations that run during
 * the call may count from before or after it.
 * Errors: COW_EINVAL if @allocator is NULL or not a fault allocator.
 */
COW_API cow_status_t cow_allocator_fault_fail_nth(cow_allocator_t *allocator,
    uint64_t n);

/**
 * cow_allocator_fault_fail_random - fail each allocation with probability
 * @probability (0..1), decided by a deterministic generator seeded with
 * @seed: the k-th allocation after arming fails or not as a pure function of
 * (seed, k).
 * Thread-safety: as fault_fail_nth (with several allocating threads,
 * which allocation is the k-th depends on timing).
 * Errors: COW_EINVAL (bad handle, probability outside 0..1 or NaN).
 */
COW_API cow_status_t cow_allocator_fault_fail_random(
    cow_allocator_t *allocator, double probability, uint64_t seed);

/**
 * cow_allocator_fault_disarm - stop failing. Thread-safety: any thread (an
 * atomic store).
 * Errors: COW_EINVAL (bad handle).
 */
COW_API cow_status_t cow_allocator_fault_disarm(cow_allocator_t *allocator);

/**
 * cow_allocator_fault_injected - how many allocations this fault allocator
 * has failed on purpose since it was made. Thread-safety: any thread (an
 * atomic load). Errors: none; a NULL or non-fault handle gives 0.
 */
COW_API uint64_t cow_allocator_fault_injected(const cow_allocator_t *allocator);

/* ------------------------------------------------------------------ */
/* Borrow debugging (maybe_owned.h, debug mode).                          */

/**
 * cow_borrow_debug_enabled - true when the library records borrows (it was
 * built with COW_DEBUG_BORROWS). Thread-safety: any thread. Errors: none.
 */
COW_API bool cow_borrow_debug_enabled(void);

/**
 * cow_borrow_debug_outstanding - how many recorded borrows of @t are
 * outstanding (always 0 in a library built without COW_DEBUG_BORROWS). A
 * diagnostic for tests. Thread-safety: any thread holding a reference on @t
 * (takes the library's borrow lock). Errors: none; NULL gives 0.
 */
COW_API size_t cow_borrow_debug_outstanding(const cow_tensor_t *t);

/* ------------------------------------------------------------------ */
/* The opaque test backend (functional.h).                                */

/**
 * cow_backend_opaque_test - a backend for devices that cannot alias: every
 * value is a contiguous buffer it owns (no strides, no sharing, no views).
 * It needs functionalization (cow_backend_needs_functionalization), so
 * every tensor a thread creates after cow_backend_set_thread() with it is
 * functional. Its name is "opaque_test".
 * Ownership: a static object; never free it. Thread-safety: any thread.
 * Errors: none.
 */
COW_API const cow_backend_t *cow_backend_opaque_test(void);

#ifdef __cplusplus
}
#endif
#endif
