/*
 * error.h - setting the thread-local error message (see common.h for the
 * error rule).
 */
#ifndef COW_CORE_ERROR_H
#define COW_CORE_ERROR_H

#include <cowstore/common.h>

/* Record "func: message" for cow_last_error() and return @status. */
cow_status_t cow__error(cow_status_t status, const char *func,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Record "func: <prefix><the calling thread's current message>", for a
 * function that reports the failure of a call it made, and return @status.
 * @prefix is a plain string ("" for none). */
cow_status_t cow__error_wrap(cow_status_t status, const char *func,
    const char *prefix);

/* The common NULL-argument check: when @arg is NULL, the calling function
 * returns COW_EINVAL, the message naming it and the argument. */
#define COW__RETURN_IF_NULL(arg)                                            \
	do {                                                                \
		if ((arg) == NULL)                                          \
			return cow__error(COW_EINVAL, __func__,             \
			    "argument '%s' is NULL", #arg);                 \
	} while (0)

#endif
