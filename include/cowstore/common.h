/*
 * cowstore: status codes, thread-local error messages, export macro.
 *
 * Error rule (one rule for the whole library): every public function that
 * can fail returns a cow_status_t. COW_OK is 0 and every error is negative.
 * On failure, out-parameters are left untouched and cow_last_error() names
 * the function and the offending value. A failed call leaves every object it
 * was given exactly as it was.
 *
 * Ownership rule: a function borrows its arguments only while it runs, and
 * leaves the caller nothing to free or release, unless its comment says
 * otherwise under "Ownership:" (a reference or a buffer it keeps, consumes
 * or hands out, and how long a pointer it returns stays valid). Filling an
 * out-parameter moves nothing.
 *
 * docs/claims.md names the tests and measurements behind what these
 * headers promise.
 */
#ifndef COWSTORE_COMMON_H
#define COWSTORE_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(COW_BUILDING_LIBRARY) && defined(__GNUC__)
#define COW_API __attribute__((visibility("default")))
#else
#define COW_API
#endif

typedef enum cow_status {
	COW_OK = 0,
	COW_EINVAL = -1,     /* an argument is invalid (NULL, unknown flag, ...) */
	COW_ENOMEM = -2,     /* an allocation failed; nothing was changed */
	COW_EOVERFLOW = -3,  /* a size computation would overflow */
	COW_ERANGE = -4,     /* an index, dimension or offset is out of range */
	COW_ENOTSUP = -5,    /* not available in this build or configuration */
	COW_EBUSY = -6,      /* the object is still in use */
	COW_ESHAPE = -7,     /* shapes or strides are incompatible */
	COW_EDTYPE = -8,     /* dtypes are incompatible */
	COW_EOVERLAP = -9,   /* a write into a tensor whose elements overlap */
	COW_EALIASING = -10, /* reshape-alias warning turned into an error */
	COW_ECANCELED = -11, /* the operation was cancelled (snapshot.h) */
	COW_EIO = -12,       /* a read or write of a file or callback failed */
	COW_ERELEASED = -13, /* the snapshot's tensor was released already */
	COW_EFORMAT = -14    /* a file breaks a rule of its format */
} cow_status_t;

/**
 * cow_status_str - a short constant name for a status ("COW_ENOMEM").
 * Ownership: the string is static; never free it. Thread-safety: any thread.
 * Errors: none; an unknown value gives "COW_E?".
 */
COW_API const char *cow_status_str(cow_status_t status);

/**
 * cow_last_error - the message of the last error recorded on the calling
 * thread, e.g. "cow_storage_new: nbytes 18446744073709551615 exceeds the
 * maximum 9223372036854775807". Read it right after a call that failed
 * (a call that succeeds records nothing, so the message of an earlier
 * failure stays until the next one).
 * Ownership: thread-local buffer owned by the library; its contents change
 * with the next error recorded on the same thread. Never free it.
 * Thread-safety: per thread; other threads' errors are not visible.
 * Errors: none; "" when nothing has been recorded on this thread yet.
 */
COW_API const char *cow_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
