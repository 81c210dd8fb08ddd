/*
 * cowstore reshape-alias simulation: the warnings of COW_RESHAPE_WARN and
 * introspection of shadow storages (docs/reshape.md).
 *
 * In COW_RESHAPE_WARN mode, cow_tensor_reshape() still returns an aliasing
 * view when the strides allow one (legacy behaviour), but records what would
 * have happened had it returned a lazy copy: the result gets its own SHADOW
 * storage, while views share their base's. Every read and write access of a
 * tensor is checked: a write through one shadow set followed by a read or a
 * write through a different shadow set on the same storage means the
 * program depends on reshape aliasing (under COW_RESHAPE_LAZY_COPY it would
 * compute something else). Such an access is reported to the warning
 * handler, or fails, as the policy says.
 *
 * Ordinary tensors carry no shadow: until the first simulated lazy copy of a
 * storage, its accesses allocate, count and bump nothing.
 *
 * Errors follow common.h.
 */
#ifndef COWSTORE_SHADOW_H
#define COWSTORE_SHADOW_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "storage.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A generation that does not exist: the storage was never shadowed, or the
 * tensor has no shadow (null shadow on such a storage). */
#define COW_GENERATION_NONE UINT64_MAX

/* What the reported access was. */
typedef enum cow_shadow_kind {
	/* A read after a write through another shadow set. */
	COW_SHADOW_READ_AFTER_WRITE = 0,
	/* A write after a write through another shadow set. */
	COW_SHADOW_WRITE_AFTER_WRITE = 1
} cow_shadow_kind_t;

/*
 * One reported access. Every pointer is borrowed for the duration of the
 * handler call only.
 */
typedef struct cow_shadow_event {
	cow_shadow_kind_t kind;
	const cow_storage_t *storage;  /* the physical storage of both sets */
	const cow_tensor_t *tensor;    /* the tensor being read or written */
	const char *func;              /* the cowstore function that accessed */
	/* The storage's physical generation (writes through any shadow since
	 * its first simulated lazy copy) at the access. */
	uint64_t physical_generation;
	/* The tensor's shadow generation: the physical generation after its
	 * set's last write (or when the set was created). It differs from the
	 * physical one, which is what the warning is about. */
	uint64_t shadow_generation;
} cow_shadow_event_t;

/* A warning handler. @ctx is the pointer given to cow_shadow_handler_set. */
typedef void (*cow_shadow_handler_fn)(const cow_shadow_event_t *event,
    void *ctx);

/* What happens on a reported access. */
typedef enum cow_shadow_policy {
	/* Call the handler for the first reported access of each storage
	 * (the default). */
	COW_SHADOW_WARN_ONCE = 0,
	/* Call the handler for every reported access. */
	COW_SHADOW_WARN_ALWAYS = 1,
	/* Fail the operation with COW_EALIASING instead (it changes nothing:
	 * no data, no generation); the handler is not called. */
	COW_SHADOW_ERROR = 2
} cow_shadow_policy_t;

/**
 * cow_shadow_policy_set - set the process-wide policy. Thread-safety: any
 * thread; an atomic store. Accesses already running may still use the old
 * policy. Errors: COW_EINVAL (unknown value; the policy is unchanged).
 */
COW_API cow_status_t cow_shadow_policy_set(cow_shadow_policy_t policy);

/**
 * cow_shadow_policy_get - the process-wide policy. Thread-safety: any thread.
 * Errors: none.
 */
COW_API cow_shadow_policy_t cow_shadow_policy_get(void);

/**
 * cow_shadow_handler_set - install @fn (called with @ctx) as the warning
 * handler; NULL restores cow_shadow_default_handler.
 * The handler may be called from any thread that accesses a tensor, and
 * from several at once; it may call cowstore functions, except
 * cow_shadow_handler_set (that deadlocks), and must return normally.
 * Re-entry: while a thread runs the handler, that thread's accesses never
 * call it. They are checked and counted as any others (a write moves the
 * generations, which judge the next access outside the handler), but one
 * out of sync is not reported and does not use up its storage's warn-once;
 * under COW_SHADOW_ERROR it still fails with COW_EALIASING. Reports from
 * other threads still call the handler meanwhile. A write-after-write is
 * reported when the write access is granted (it can no longer fail), before
 * anything is written through it and before the writer's generation moves:
 * the handler reads the old values.
 * Ownership: @ctx stays the caller's; it must stay valid until another
 * handler is installed.
 * Thread-safety: any thread. When it returns, no call of the previous
 * handler is running and none will start.
 * Errors: none.
 */
COW_API void cow_shadow_handler_set(cow_shadow_handler_fn fn, void *ctx);

/**
 * cow_shadow_handler_get - the installed handler and its context (either
 * out-parameter may be NULL). Ownership: *fn and *ctx are filled; *ctx
 * stays its installer's.
 * Thread-safety: any thread. Errors: none.
 */
COW_API void cow_shadow_handler_get(cow_shadow_handler_fn *fn, void **ctx);

/**
 * cow_shadow_default_handler - the default handler: prints one line to
 * stderr naming the function, the kind, the storage and both generations.
 * @ctx is ignored.
 * Thread-safety: any thread. Errors: none.
 */
COW_API void cow_shadow_default_handler(const cow_shadow_event_t *event,
    void *ctx);

/**
 * cow_storage_physical_generation - *out = the storage's physical
 * generation, or COW_GENERATION_NONE before its first simulated lazy copy.
 * Thread-safety: a read of @storage.
 * Errors: COW_EINVAL (NULL argument).
 */
COW_API cow_status_t cow_storage_physical_generation(
    const cow_storage_t *storage, uint64_t *out);

/**
 * cow_tensor_shadow_generation - *out = the generation of the tensor's
 * shadow storage (its own, or its storage's default one), or
 * COW_GENERATION_NONE when it has none: a null shadow on a storage that
 * was never shadowed.
 * Thread-safety: a read of @t.
 * Errors: COW_EINVAL (NULL argument).
 */
COW_API cow_status_t cow_tensor_shadow_generation(const cow_tensor_t *t,
    uint64_t *out);

/**
 * cow_tensor_shares_shadow - true when @a and @b share a shadow storage: they
 * view one storage and neither is a simulated lazy copy of the other (views
 * share their base's shadow). Thread-safety: a read of both. Errors: none;
 * NULL gives false.
 */
COW_API bool cow_tensor_shares_shadow(const cow_tensor_t *a,
    const cow_tensor_t *b);

#ifdef __cplusplus
}
#endif
#endif
