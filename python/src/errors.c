/*
 * errors.c - library statuses as Python exceptions, and the reshape-alias
 * warnings as Python warnings.
 *
 * The library calls its warning handler from inside an operation, perhaps
 * with the GIL released and a library lock held, so the handler calls no
 * Python: it records the event in a per-thread queue, and pycow_check()
 * raises the queued warnings through the warnings module once the call has
 * returned on the same thread, with the GIL held.
 */
#include "pycow.h"

PyObject *pycow_aliasing_warning;
PyObject *pycow_aliasing_error;
PyObject *pycow_safetensor_error;
PyObject *pycow_cancelled_error;
PyObject *pycow_released_error;

#define PENDING_MAX 8

struct pending_warning {
	cow_shadow_kind_t kind;
	const char *func;          /* a static string of the library's */
	uint64_t physical, shadow;
};

static _Thread_local struct {
	unsigned count;            /* events recorded, perhaps > PENDING_MAX */
	struct pending_warning ev[PENDING_MAX];
} pending;

void
pycow_shadow_handler(const cow_shadow_event_t *event, void *ctx)
{
	(void)ctx;
	if (pending.count < PENDING_MAX) {
		struct pending_warning *w = &pending.ev[pending.count];
		w->kind = event->kind;
		w->func = event->func;
		w->physical = event->physical_generation;
		w->shadow = event->shadow_generation;
	}
	pending.count++;
}

int
pycow_flush_warnings(void)
{
	unsigned n = pending.count, shown = n < PENDING_MAX ? n : PENDING_MAX;
	int rc = 0;

	if (n == 0)
		return 0;
	pending.count = 0;
	for (unsigned i = 0; i < shown && rc == 0; i++) {
		const struct pending_warning *w = &pending.ev[i];
		if (PyErr_WarnFormat(pycow_aliasing_warning, 1,
		    "%s: %s through a reshape that aliases its input "
		    "(storage generation %llu, this tensor's %llu): with "
		    "reshape as a lazy copy the result would differ",
		    w->func, w->kind == COW_SHADOW_READ_AFTER_WRITE ?
		    "read after a write" : "write after a write",
		    (unsigned long long)w->physical,
		    (unsigned long long)w->shadow) < 0)
			rc = -1;
	}
	if (rc == 0 && n > shown && PyErr_WarnFormat(pycow_aliasing_warning, 1,
	    "%u more reshape-alias warnings in the same call", n - shown) < 0)
		rc = -1;
	return rc;
}

static PyObject *
exception_for(cow_status_t status)
{
	switch (status) {
	case COW_EDTYPE:
		return PyExc_TypeError;
	case COW_ENOMEM:
		return PyExc_MemoryError;
	case COW_EOVERFLOW:
		return PyExc_OverflowError;
	case COW_ERANGE:
		return PyExc_IndexError;
	case COW_EBUSY:
		return PyExc_BufferError;
	case COW_ENOTSUP:
		return PyExc_NotImplementedError;
	case COW_EALIASING:
		return pycow_aliasing_error;
	case COW_EIO:
		return PyExc_OSError;
	case COW_EFORMAT:
		return pycow_safetensor_error;
	case COW_ECANCELED:
		return pycow_cancelled_error;
	case COW_ERELEASED:
		return pycow_released_error;
	default:
		return PyExc_ValueError;
	}
}

int
pycow_check(cow_status_t status)
{
	if (status == COW_OK)
		return pycow_flush_warnings();
	/* The message first: raising a warning may run Python code that
	 * calls the library and records another error on this thread. */
	PyObject *type = exception_for(status);
	PyObject *msg = PyUnicode_FromFormat("%s (%s)", cow_last_error(),
	    cow_status_str(status));
	if (pycow_flush_warnings() < 0) {
		Py_XDECREF(msg);
		return -1;
	}
	if (msg != NULL) {
		PyErr_SetObject(type, msg);
		Py_DECREF(msg);
	}
	return -1;
}
