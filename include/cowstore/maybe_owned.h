/*
 * cowstore MaybeOwned: a tensor reference that is either owned (it holds a
 * count, dropped on release) or borrowed (it holds nothing: the caller
 * promises that an owner outlives it). docs/tensor.md.
 *
 * Use it only on hot paths where a refcount round trip matters, such as
 * cow_tensor_expect_contiguous(): it borrows the tensor when it is already
 * contiguous and returns an owned contiguous copy otherwise. When in doubt,
 * own (cow_maybe_owned_owned() after cow_tensor_retain()): that is never
 * wrong, only slower (a retain and release, 13.8 ns, against 1.9 ns for a
 * borrow).
 *
 * The hazard: a borrow whose owner drops the last reference while the
 * borrow is still in use (a use after free). Debug mode catches it.
 *
 * Debug mode (COW_DEBUG_BORROWS defined; the CMake option of that name, on
 * in the dev and asan presets, makes it a PUBLIC definition of the library
 * target, so the library and its CMake users agree):
 * - every borrow taken through cow_maybe_owned_borrowed() or
 *   cow_tensor_expect_contiguous() records the file:line of the call;
 * - cow_tensor_release() of the LAST reference of a tensor with an
 *   outstanding recorded borrow aborts, printing where the borrow was taken;
 * - a borrow ends at cow_maybe_owned_release().
 * Release mode: cow_maybe_owned_borrowed() is an inline function that fills
 * the struct's three fields (tensor, owned = false, debug_borrow = NULL): a
 * few stores, no refcount, no atomic, no library call, no allocation, no
 * record.
 *
 * ABI rule (debug library with release users, or the reverse):
 * - cow_maybe_owned_t has the same size and layout in every build; the
 *   debug_borrow field is always present and is NULL unless a debug build
 *   recorded the borrow.
 * - The library exports cow_borrow_debug_begin/end/enabled/outstanding in
 *   every build (begin and end are declared below, for the inline
 *   functions; enabled and outstanding, test hooks, in testing.h). A
 *   library built without COW_DEBUG_BORROWS records nothing (begin returns
 *   NULL), so a debug user of a release library still runs, unchecked.
 * - A release user of a debug library takes unrecorded borrows, which are
 *   never checked: the library aborts only for borrows it recorded.
 * - cow_maybe_owned_release() ends a recorded borrow in every build, so a
 *   value made in a debug translation unit may be released in a release one.
 * - The internal tensor layout is private (opaque type), so its debug
 *   bookkeeping field never reaches the ABI.
 *
 * Value semantics: a cow_maybe_owned_t is released exactly once. Copying
 * the struct by assignment moves it: release only one of the copies.
 *
 * Thread-safety: borrowing is a read of the tensor (any number of threads);
 * the debug records are protected by a lock inside the library.
 */
#ifndef COWSTORE_MAYBE_OWNED_H
#define COWSTORE_MAYBE_OWNED_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cow_maybe_owned_s {
	cow_tensor_t *tensor; /* the tensor (NULL once released) */
	bool owned;           /* true: holds one reference on tensor */
	void *debug_borrow;   /* private: the debug record, or NULL */
} cow_maybe_owned_t;

/**
 * cow_borrow_debug_begin - record a borrow of @t taken at @file:@line and
 * return the record (or NULL when the library was built without
 * COW_DEBUG_BORROWS, or @t is NULL). Used by the inline functions and
 * macros below, which is why it is declared here; not meant to be called
 * directly. @file must be a string that lives forever (__FILE__). The
 * test hooks that read the records, cow_borrow_debug_enabled() and
 * cow_borrow_debug_outstanding(), are in testing.h.
 * Ownership: the record belongs to the caller until cow_borrow_debug_end()
 * frees it; @t is not retained. Thread-safety: any thread (the records are
 * under a library lock).
 * Errors: none; aborts if the record cannot be allocated (debug builds only).
 */
COW_API void *cow_borrow_debug_begin(cow_tensor_t *t, const char *file,
    int line);

/**
 * cow_borrow_debug_end - end a borrow recorded by cow_borrow_debug_begin
 * (called by cow_maybe_owned_release, inline).
 * Ownership: frees @record. Thread-safety: any thread.
 * Errors: none; NULL does nothing.
 */
COW_API void cow_borrow_debug_end(void *record);

/**
 * cow_maybe_owned_owned - wrap a reference the caller owns (inline).
 * Ownership: the reference is moved into the result (released by
 * cow_maybe_owned_release). Thread-safety: any thread; @t is stored, not
 * read. Errors: none.
 */
static inline cow_maybe_owned_t
cow_maybe_owned_owned(cow_tensor_t *t)
{
	cow_maybe_owned_t mo;

	mo.tensor = t;
	mo.owned = true;
	mo.debug_borrow = NULL;
	return mo;
}

/**
 * cow_maybe_owned_borrowed - borrow @t without taking a reference: the
 * caller guarantees that an owner keeps @t alive until the result is
 * released. Debug builds record the call site (use the macro, which passes
 * __FILE__ and __LINE__). Inline.
 * Ownership: nothing is taken: the result borrows @t.
 * Thread-safety: a read of @t (debug records: under the library's lock).
 * Errors: none (debug builds abort if the record cannot be allocated).
 */
static inline cow_maybe_owned_t
cow_maybe_owned_borrowed_at(cow_tensor_t *t, const char *file, int line)
{
	cow_maybe_owned_t mo;

	mo.tensor = t;
	mo.owned = false;
#ifdef COW_DEBUG_BORROWS
	mo.debug_borrow = cow_borrow_debug_begin(t, file, line);
#else
	(void)file;
	(void)line;
	mo.debug_borrow = NULL;
#endif
	return mo;
}

#define cow_maybe_owned_borrowed(t)                                         \
	cow_maybe_owned_borrowed_at((t), __FILE__, __LINE__)

/**
 * cow_maybe_owned_get - the tensor (inline).
 * Ownership: borrowed from @mo either way: do not release it; retain it to
 * keep it past cow_maybe_owned_release. Thread-safety: a read of *mo.
 * Errors: none; NULL after release (@mo itself must not be NULL).
 */
static inline cow_tensor_t *
cow_maybe_owned_get(const cow_maybe_owned_t *mo)
{
	return mo->tensor;
}

/**
 * cow_maybe_owned_is_owned - true when @mo holds a reference (inline).
 * Thread-safety: a read of *mo.
 * Errors: none (@mo must not be NULL).
 */
static inline bool
cow_maybe_owned_is_owned(const cow_maybe_owned_t *mo)
{
	return mo->owned;
}

/**
 * cow_maybe_owned_release - drop the reference if owned; end the borrow if
 * borrowed (inline). @mo is then empty (tensor NULL) and releasing it again
 * does nothing.
 * Ownership: the owned reference or the borrow is gone.
 * Thread-safety: a write of *mo; releasing the reference as
 * cow_tensor_release. Errors: none (@mo must not be NULL).
 */
static inline void
cow_maybe_owned_release(cow_maybe_owned_t *mo)
{
	if (mo->owned)
		cow_tensor_release(mo->tensor);
	else if (mo->debug_borrow != NULL)
		cow_borrow_debug_end(mo->debug_borrow);
	mo->tensor = NULL;
	mo->owned = false;
	mo->debug_borrow = NULL;
}

/**
 * cow_tensor_expect_contiguous - a contiguous version of @t: a borrow of @t
 * itself when it is contiguous (no count taken), else an owned contiguous
 * copy (cow_tensor_clone). Release the result with cow_maybe_owned_release.
 * A borrow must not outlive the caller's reference on @t (debug builds check
 * it and name this call site).
 * Ownership: *out is a borrow of @t or holds one reference on a new tensor;
 * either way release it (once) with cow_maybe_owned_release.
 * Thread-safety: a read of @t.
 * Errors: COW_EINVAL (NULL), COW_ENOMEM (the copy failed; *out untouched).
 */
COW_API cow_status_t cow_tensor_expect_contiguous_at(cow_tensor_t *t,
    cow_maybe_owned_t *out, const char *file, int line);

#define cow_tensor_expect_contiguous(t, out)                                \
	cow_tensor_expect_contiguous_at((t), (out), __FILE__, __LINE__)

#ifdef __cplusplus
}
#endif
#endif
