/*
 * error.h - setting the thread-local error message (see common.h for the
 * error rule).
 *
 * Internal code records only what went wrong (cow__error, cow__error_wrap);
 * the public function's name is added once, where the public call returns
 * (COW__NAMED). A message is named once: the first public function on the
 * way out names it, so one that calls another public function keeps the
 * inner one's name (unless it wraps the message: cow__error_wrap).
 */
#ifndef COW_CORE_ERROR_H
#define COW_CORE_ERROR_H

#include <cowstore/common.h>

/* Record the message, not yet named, and return @status. */
cow_status_t cow__error(cow_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Record "<prefix><the calling thread's current message>", not yet named,
 * for a function that reports the failure of a call it made, and return
 * @status. @prefix is a plain string ("" for none). */
cow_status_t cow__error_wrap(cow_status_t status, const char *prefix);

/* Out of line: prefix the message not yet named with "@name: ". */
__attribute__((cold)) cow_status_t cow__error_name(cow_status_t status,
    const char *name);

/* Return @status from the function @name: a failure names the message it
 * recorded (none named yet: nothing changes). Success touches nothing. */
static inline cow_status_t
cow__named(cow_status_t status, const char *name)
{
	if (__builtin_expect(status != COW_OK, 0))
		return cow__error_name(status, name);
	return COW_OK;
}

/* Where a public function returns @st: cow__named by its own name. */
#define COW__NAMED(st) cow__named((st), __func__)

/* The common NULL-argument check: when @arg is NULL, the calling function
 * returns COW_EINVAL, the message naming it and the argument. */
#define COW__RETURN_IF_NULL(arg)                                            \
	do {                                                                \
		if ((arg) == NULL)                                          \
			return COW__NAMED(cow__error(COW_EINVAL,            \
			    "argument '%s' is NULL", #arg));                \
	} while (0)

#endif
