/*
 * cowstore reshape mode: what cow_tensor_reshape() (tensor.h) returns when
 * the strides allow a view, process-wide and per thread (docs/reshape.md).
 * The warn mode's reports are shadow.h's.
 *
 * Errors follow common.h.
 */
#ifndef COWSTORE_RESHAPE_H
#define COWSTORE_RESHAPE_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What cow_tensor_reshape() returns when the strides allow a view.
 * - COW_RESHAPE_ALIAS (the default, legacy): an aliasing view, as
 *   cow_tensor_view() (same storage).
 * - COW_RESHAPE_LAZY_COPY: a lazy copy viewed with the new shape: a new
 *   storage sharing the data, no byte copied, about as cheap as a view (a
 *   tensor's lazy clone, 38 ns, against a view's 35.5 ns), but writes
 *   through the result never reach the input and vice versa.
 * - COW_RESHAPE_WARN: the legacy aliasing view, which also records what a
 *   lazy copy would have done (a new shadow storage) and reports the reads
 *   and writes whose result depends on the aliasing (cowstore/shadow.h,
 *   docs/reshape.md).
 * - COW_RESHAPE_INHERIT: only for the thread-local override: no override,
 *   follow the process-wide mode.
 */
typedef enum cow_reshape_mode {
	COW_RESHAPE_INHERIT = -1,
	COW_RESHAPE_ALIAS = 0,
	COW_RESHAPE_LAZY_COPY = 1,
	COW_RESHAPE_WARN = 2
} cow_reshape_mode_t;

/**
 * cow_reshape_mode_set - set the process-wide mode. Thread-safety: any
 * thread; an atomic store. Every call ordered after its return sees the
 * new mode: a later call of the calling thread, or of a thread that
 * synchronised with it afterwards, such as one it then creates. Calls not so
 * ordered, such as those already running in other threads, may use the old
 * mode or the new one. Errors: COW_EINVAL (COW_RESHAPE_INHERIT or an unknown
 * value). On error the mode is unchanged.
 */
COW_API cow_status_t cow_reshape_mode_set(cow_reshape_mode_t mode);

/**
 * cow_reshape_mode_get - the process-wide mode (ignores thread overrides).
 * Thread-safety: any thread (an atomic load). Errors: none.
 */
COW_API cow_reshape_mode_t cow_reshape_mode_get(void);

/**
 * cow_reshape_mode_set_thread - override the mode for the calling thread
 * only (tests, or a caller that needs one mode locally);
 * COW_RESHAPE_INHERIT removes the override. @previous (may be NULL) receives
 * the old override (COW_RESHAPE_INHERIT if there was none), so a caller can
 * restore it.
 * Thread-safety: affects only the calling thread.
 * Errors: COW_EINVAL (unknown value; nothing changed, *previous untouched).
 */
COW_API cow_status_t cow_reshape_mode_set_thread(cow_reshape_mode_t mode,
    cow_reshape_mode_t *previous);

/**
 * cow_reshape_mode_get_thread - the calling thread's override, or
 * COW_RESHAPE_INHERIT. Thread-safety: reads the calling thread's own setting.
 * Errors: none.
 */
COW_API cow_reshape_mode_t cow_reshape_mode_get_thread(void);

/**
 * cow_reshape_mode_effective - the mode reshape uses on the calling thread:
 * the thread override if set, else the process-wide mode. Thread-safety: any
 * thread. Errors: none.
 */
COW_API cow_reshape_mode_t cow_reshape_mode_effective(void);

#ifdef __cplusplus
}
#endif
#endif
