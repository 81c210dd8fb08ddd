/*
 * cowstore functionalization: an opt-in layer that removes views and
 * in-place ops, so that a backend that cannot alias memory runs programs
 * that use both (docs/functionalization.md).
 *
 * A FUNCTIONAL tensor is an ordinary cow_tensor_t handle whose ops (every
 * function of tensor.h and ops.h) are routed by a dispatch step to the
 * layer instead of the strided kernels. The layer keeps, per alias group
 * (a base tensor and every view of it, or every tensor made over one
 * caller's storage and their views: below), the base's current value, an
 * ordered list of pending updates and a generation; per tensor, the
 * reified path of view steps from the base, its current value and the
 * generation that value reflects. Values are immutable buffers of a
 * backend: views and in-place ops become out-of-place ops on them
 * (view_copy, select_scatter, add, ...), which a trace can record.
 *
 * - A view op never syncs: it records its step and computes its value.
 * - An in-place op computes its out-of-place result, replaces the tensor's
 *   value and queues (value, path) on the group (generation + 1).
 * - Any other read syncs: queued updates are applied to the base in order
 *   (scattered back through the inverse of each view step), then the
 *   reader's path is replayed on the new base.
 * - as_strided is absolute over the base (the base's elements in row-major
 *   order, as the strided runtime's storage of a fresh tensor).
 * - Writes to a view whose elements overlap are refused (COW_EOVERLAP), as
 *   in the strided runtime.
 *
 * Values and results are exactly those of the strided runtime for the same
 * program, but for these limits:
 * - the two on tensors over a caller's storage below (another dtype is
 *   refused; a write that bypasses the group is not seen by it);
 * - the reshape-alias simulation (COW_RESHAPE_WARN, shadow.h) does not
 *   check functional tensors: a reshape aliases as in the strided runtime,
 *   no access is reported to the handler, and COW_SHADOW_ERROR refuses
 *   none (where the strided runtime returns COW_EALIASING, the functional
 *   program goes on with the aliased values);
 * - a backend that cannot alias (cow_backend_opaque_test, testing.h)
 *   holds every view's elements in a buffer of its own, so a view the
 *   strided runtime makes without copying (an expand to 2^40 elements)
 *   allocates its whole size there, and can fail with COW_ENOMEM.
 * A functional tensor reports the sizes, strides, offset and contiguity
 * that the strided runtime would give it (strides describe its place in
 * the base; the backend need not have strides at all).
 *
 * Differences from plain tensors: cow_tensor_storage() gives NULL (the
 * values belong to the layer), cow_tensor_mutable_data() is refused with
 * COW_ENOTSUP, and cow_tensor_read_data() and cow_tensor_const_data() give
 * a contiguous row-major copy's address (valid until the next op on any
 * tensor of the group).
 *
 * Tensors over a caller's storage (cow_tensor_from_storage while the
 * thread creates functional tensors): all the functional tensors over one
 * storage, and their views, are one alias group, whatever order and
 * thread they are made and released in, as they alias in the strided
 * runtime. The group's base is the storage's elements in the tensors'
 * dtype (its size rounded down to whole elements), and a tensor's place
 * in it (sizes, strides, offset, as_strided) is its place in the storage.
 * The storage is the program's input and receives its mutations: every
 * write through the group reaches the storage's bytes before the op
 * returns, so the storage holds them after any cow_functional_sync() of a
 * tensor of the group and after the release of its last tensor (which
 * then has nothing to write and cannot fail). A write that cannot reach
 * the storage (COW_ENOMEM materialising a copy-on-write storage) is
 * refused and changes nothing. Limits: a group has one dtype and one
 * backend, so while it lives a tensor over its storage with another dtype
 * is refused (COW_EDTYPE), on another backend too (COW_EINVAL); write the
 * storage only through the group meanwhile (a write through a plain tensor
 * or cow_storage_mutable_data() is not seen by the group's tensors);
 * cow_functional_wrap() of a plain tensor over it takes a copy of its
 * current values in a new group, as for any plain tensor.
 *
 * Memory bound: a group holds at most COW_FUNCTIONAL_MAX_UPDATES pending
 * updates, whose values together take at most the base's size in bytes;
 * writes through one path replace that path's earlier update, and a write
 * that would exceed either limit applies the queue to the base at once.
 * While that cannot allocate, the queue holds at most one update past
 * either limit: the next write applies it first or fails with COW_ENOMEM.
 *
 * Thread-safety: the tensors of one alias group are one object for the
 * threading contract: the user serialises every use of them, reads
 * included (a read may apply queued updates), and their releases. Making
 * a functional tensor over a storage is a use of that storage's group (and
 * of the storage: it is read when the group is made, written by the
 * group's writes). Different groups may be used, made and released by
 * different threads at once (values shared between groups are immutable
 * and reference counted atomically; the table that finds a storage's group
 * has its own locks). The mode, the backend choice and the trace are per
 * thread.
 *
 * Errors follow common.h.
 */
#ifndef COWSTORE_FUNCTIONAL_H
#define COWSTORE_FUNCTIONAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most pending updates one alias group holds (see the memory bound above). */
#define COW_FUNCTIONAL_MAX_UPDATES 16

/* ------------------------------------------------------------------ */
/* Backends.                                                             */

/*
 * A backend computes values. Built-ins only:
 * - cow_backend_strided(): the ordinary strided runtime (views alias,
 *   lazy clones). It does not need functionalization.
 * - cow_backend_opaque_test(): a test backend for devices that cannot alias:
 *   every value is a contiguous buffer it owns (no strides, no sharing, no
 *   views). It declares that it needs functionalization. A test hook:
 *   declared in testing.h, which cowstore.h does not include.
 */
typedef struct cow_backend_s cow_backend_t;

/**
 * cow_backend_strided - the built-in strided backend (the other built-in,
 * cow_backend_opaque_test, is in testing.h).
 * Ownership: a static object; never free it. Thread-safety: any thread.
 * Errors: none.
 */
COW_API const cow_backend_t *cow_backend_strided(void);

/**
 * cow_backend_name - "strided" or "opaque_test"; NULL gives "none".
 * cow_backend_needs_functionalization - true when every program on the
 * backend must go through the layer (NULL gives false).
 * Ownership: the name is a static string; never free it.
 * Thread-safety: any thread. Errors: none.
 */
COW_API const char *cow_backend_name(const cow_backend_t *backend);
COW_API bool cow_backend_needs_functionalization(const cow_backend_t *backend);

/**
 * cow_backend_set_thread - the backend that tensors created on the calling
 * thread use (cow_tensor_empty, zeros, full, arange, from_data,
 * from_storage). NULL means cow_backend_strided(). When the backend needs
 * functionalization, every tensor the thread creates is functional.
 * @previous (may be NULL) receives the old choice, for restoring it.
 * Ownership: *previous receives a static object; never free it.
 * Thread-safety: affects only the calling thread. Errors: none (COW_OK).
 */
COW_API cow_status_t cow_backend_set_thread(const cow_backend_t *backend,
    const cow_backend_t **previous);

/**
 * cow_backend_get_thread - the calling thread's backend (never NULL).
 * Ownership: a static object. Thread-safety: the calling thread's own
 * setting. Errors: none.
 */
COW_API const cow_backend_t *cow_backend_get_thread(void);

/* ------------------------------------------------------------------ */
/* The thread-local mode.                                                */

/**
 * cow_functional_mode_set_thread - when @on, every tensor the calling thread
 * creates is functional (on the thread's backend), even on a backend that
 * does not need it. Tensors made from functional tensors (views, op
 * results, copies) are functional whatever the mode; plain tensors stay
 * plain (cow_functional_wrap converts one). @previous may be NULL.
 * Thread-safety: the calling thread only.
 * Errors: none (COW_OK).
 */
COW_API cow_status_t cow_functional_mode_set_thread(bool on, bool *previous);

/**
 * cow_functional_mode_get_thread - the calling thread's mode.
 * Thread-safety: the calling thread's own setting. Errors: none.
 */
COW_API bool cow_functional_mode_get_thread(void);

/* ------------------------------------------------------------------ */
/* Functional tensors.                                                   */

/**
 * cow_tensor_is_functional - true when @t's ops go through the layer (NULL
 * gives false). Thread-safety: any thread holding a reference. Errors: none.
 */
COW_API bool cow_tensor_is_functional(const cow_tensor_t *t);

/**
 * cow_functional_backend - @t's backend; NULL for a plain or NULL tensor.
 * Ownership: a static object. Thread-safety: any thread holding a
 * reference (a tensor's backend never changes). Errors: none.
 */
COW_API const cow_backend_t *cow_functional_backend(const cow_tensor_t *t);

/**
 * cow_functional_wrap - a new functional tensor on @backend (NULL: the
 * thread's backend) with @t's dtype, sizes and current values, in a new
 * alias group of its own. @t is only read: on the strided backend the base
 * is a lazy clone of @t (no bytes copied) but for a non-contiguous @t or one
 * over borrowed memory (storage.h), copied once; on the opaque backend a
 * copy. A functional @t is cloned (cow_tensor_clone) when the backend is the
 * same.
 * Ownership: *out holds one reference.
 * Thread-safety: a read of @t.
 * Errors: COW_EINVAL (NULL t or out; a functional @t on another backend),
 * COW_ENOMEM (nothing changed).
 */
COW_API cow_status_t cow_functional_wrap(cow_tensor_t *t,
    const cow_backend_t *backend, cow_tensor_t **out);

/**
 * cow_functional_to_plain - a plain contiguous tensor holding @t's current
 * values (syncs @t). On the strided backend it shares the value's bytes
 * (a lazy clone); on the opaque backend it is a copy. A plain @t gives a
 * lazy clone of itself.
 * Ownership: *out holds one reference. Thread-safety: a use of @t's group.
 * Errors: COW_EINVAL (NULL), COW_ENOMEM (nothing observable changed).
 */
COW_API cow_status_t cow_functional_to_plain(cow_tensor_t *t,
    cow_tensor_t **out);

/**
 * cow_functional_sync - apply @t's group's pending updates to the base and
 * bring @t's value up to date (what every non-view read does first).
 * A plain tensor: nothing to do. A group over a caller's storage has
 * already written every update to the storage (see above): syncing does
 * not write it again.
 * Thread-safety: a use of @t's group. Errors: COW_EINVAL (NULL),
 * COW_ENOMEM (the updates applied so far stay applied, the rest stay
 * queued: no value anyone can read changed).
 */
COW_API cow_status_t cow_functional_sync(cow_tensor_t *t);

/**
 * cow_functional_transpose_ - the in-place view op: @t itself becomes its
 * transpose of @dim0 and @dim1. Only @t's path, value and metadata change
 * (the group's other tensors and its base do not). Plain tensors have
 * immutable metadata: refused.
 * The layer drops @t's old path and value.
 * Thread-safety: a use of @t's group; no other thread may read @t's sizes
 * meanwhile. Errors: COW_EINVAL (NULL), COW_ENOTSUP (plain @t),
 * COW_ERANGE (a dim), COW_ENOMEM (nothing changed).
 */
COW_API cow_status_t cow_functional_transpose_(cow_tensor_t *t, int dim0,
    int dim1);

/* Diagnostics of one functional tensor and its group. */
typedef struct cow_functional_info {
	uint64_t generation;      /* the group's: updates queued so far */
	uint64_t tensor_generation; /* the generation @t's value reflects */
	size_t pending_updates;   /* queued, not yet applied to the base */
	size_t pending_bytes;     /* bytes of their values */
	size_t base_bytes;        /* bytes of the base */
	size_t path_length;       /* view steps from the base to @t */
	uint64_t updates_applied; /* scattered into the base so far */
	uint64_t updates_coalesced; /* replaced by a later write, same path */
	uint64_t eager_flushes;   /* queue applied because of the bound */
} cow_functional_info_t;

/**
 * cow_functional_info - fill @out for the functional tensor @t. Reads only
 * (nothing is synced).
 * Thread-safety: a use of @t's group.
 * Errors: COW_EINVAL (NULL, or @t is plain).
 */
COW_API cow_status_t cow_functional_info(const cow_tensor_t *t,
    cow_functional_info_t *out);

/* ------------------------------------------------------------------ */
/* The trace: the program the layer executed, as out-of-place ops.       */

typedef struct cow_functional_trace_s cow_functional_trace_t;

/**
 * cow_functional_trace_start - start recording, on the calling thread,
 * every out-of-place op the layer executes, one line each, e.g.
 * "%4 = select_scatter(%0, %3, dim=0, index=1)".
 * Ownership: the recording belongs to the thread until
 * cow_functional_trace_stop; a thread that exits while recording frees it.
 * Thread-safety: per thread. Errors: COW_EBUSY (already recording),
 * COW_ENOMEM.
 */
COW_API cow_status_t cow_functional_trace_start(void);

/**
 * cow_functional_trace_stop - stop recording and hand over the trace.
 * Ownership: *out belongs to the caller (cow_functional_trace_free).
 * Thread-safety: the calling thread's recording. A stopped trace is
 * immutable: any thread may read it, while nobody frees it.
 * Errors: COW_EINVAL (out NULL, or the thread is not recording).
 */
COW_API cow_status_t cow_functional_trace_stop(cow_functional_trace_t **out);

/**
 * cow_functional_trace_length / cow_functional_trace_line - the number of
 * lines, and line @i ("" when out of range). A line that could not be
 * recorded (out of memory) ends the trace: cow_functional_trace_complete()
 * is then false. Ownership: lines belong to the trace (valid until
 * cow_functional_trace_free). Thread-safety: reads of a stopped trace.
 * Errors: none; NULL gives 0 / "" / false.
 */
COW_API size_t cow_functional_trace_length(const cow_functional_trace_t *tr);
COW_API const char *cow_functional_trace_line(const cow_functional_trace_t *tr,
    size_t i);
COW_API bool cow_functional_trace_complete(const cow_functional_trace_t *tr);

/**
 * cow_functional_trace_print - write every line to @f, one per line (and a
 * last line saying so when the trace is incomplete). Thread-safety: a read
 * of a stopped trace. Errors: COW_EINVAL (NULL).
 */
COW_API cow_status_t cow_functional_trace_print(
    const cow_functional_trace_t *tr, FILE *f);

/**
 * cow_functional_trace_free - free a stopped trace. NULL does nothing.
 * Ownership: @tr is gone. Thread-safety: no other use of @tr at the same
 * time. Errors: none.
 */
COW_API void cow_functional_trace_free(cow_functional_trace_t *tr);

#ifdef __cplusplus
}
#endif
#endif
