/*
 * error.c - status names, the thread-local error message, cow__die.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/die.h"
#include "core/error.h"

#define ERROR_MAX 256

static _Thread_local char error_buffer[ERROR_MAX];

const char *
cow_status_str(cow_status_t status)
{
	switch (status) {
	case COW_OK: return "COW_OK";
	case COW_EINVAL: return "COW_EINVAL";
	case COW_ENOMEM: return "COW_ENOMEM";
	case COW_EOVERFLOW: return "COW_EOVERFLOW";
	case COW_ERANGE: return "COW_ERANGE";
	case COW_ENOTSUP: return "COW_ENOTSUP";
	case COW_EBUSY: return "COW_EBUSY";
	case COW_ESHAPE: return "COW_ESHAPE";
	case COW_EDTYPE: return "COW_EDTYPE";
	case COW_EOVERLAP: return "COW_EOVERLAP";
	case COW_EALIASING: return "COW_EALIASING";
	case COW_ECANCELED: return "COW_ECANCELED";
	case COW_EIO: return "COW_EIO";
	case COW_ERELEASED: return "COW_ERELEASED";
	case COW_EFORMAT: return "COW_EFORMAT";
	}
	return "COW_E?";
}

const char *
cow_last_error(void)
{
	return error_buffer;
}

/* Whether the message in error_buffer still waits for its function's
 * name (cow__error_name). */
static _Thread_local bool error_unnamed;

cow_status_t
cow__error(cow_status_t status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(error_buffer, sizeof error_buffer, fmt, ap);
	va_end(ap);
	error_unnamed = true;
	return status;
}

cow_status_t
cow__error_wrap(cow_status_t status, const char *prefix)
{
	char why[ERROR_MAX];

	snprintf(why, sizeof why, "%s", error_buffer);
	return cow__error(status, "%s%s", prefix, why);
}

cow_status_t
cow__error_name(cow_status_t status, const char *name)
{
	size_t n = strlen(name), len = strlen(error_buffer);

	if (!error_unnamed)
		return status;
	error_unnamed = false;
	/* "name: message", cut to the buffer as one snprintf would. */
	if (n > ERROR_MAX - 3)
		n = ERROR_MAX - 3;
	if (len > ERROR_MAX - 1 - (n + 2))
		len = ERROR_MAX - 1 - (n + 2);
	memmove(error_buffer + n + 2, error_buffer, len);
	memcpy(error_buffer, name, n);
	error_buffer[n] = ':';
	error_buffer[n + 1] = ' ';
	error_buffer[n + 2 + len] = '\0';
	return status;
}

void
cow__die_at(const char *file, const char *func, int line, const char *cause)
{
	fprintf(stderr, "cowstore: (%s:%s@%d) unrecoverable error: %s\n", file,
	    func, line, cause);
	fflush(stderr);
	abort();
}
