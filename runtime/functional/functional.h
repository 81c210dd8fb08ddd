/*
 * functional.h - internal data model of the functionalization layer
 * (docs/functionalization.md, "The model": ViewInfo, Alias, View).
 *
 * - struct cow__fval: an immutable value of a backend (a plain tensor on
 *   the strided backend, an owned contiguous buffer on the opaque one).
 * - struct cow__view_step: one reified view op (tagged by kind); a path is
 *   a reference-counted immutable array of steps from the base.
 * - struct cow__fn_group: an alias group (base value, ordered pending
 *   updates, generation).
 * - struct cow__fn: the per-tensor state, a functional tensor's implementation
 *   state (tensor/impl.h: cow_tensor_t::impl is &cow__fn_impl).
 *
 * Synchronization: a group and its tensors' states are used by one thread
 * at a time (the user serialises, functional.h). Values and paths may be
 * shared between groups: their reference counts are atomic and their
 * contents read-only after creation.
 */
#ifndef COW_FUNCTIONAL_FUNCTIONAL_H
#define COW_FUNCTIONAL_FUNCTIONAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cowstore/functional.h>
#include <cowstore/tensor.h>

#include "core/refcount.h"
#include "tensor/impl.h"
#include "tensor/kernels.h"
#include "tensor/tensor.h"
#include "tensor/view_step.h"

#define COW__FN_MAXD COW_TENSOR_MAX_NDIM

/* ------------------------------------------------------------------ */
/* Paths (view_path.c): the view steps (tensor/view_step.h) from a     */
/* group's base to a tensor.                                            */

struct cow__fn_path {
	cow__refcount_t refs;   /* Synchronization: atomic. */
	cow_allocator_t *alloc; /* Read-only after creation, like the rest. */
	size_t len;
	struct cow__view_step steps[];
};

/* The empty path (a static object; retain/release are no-ops on it). */
struct cow__fn_path *cow__fn_path_empty(void);
/* @p followed by @s (a new path; as_strided starts a path of its own). */
cow_status_t cow__fn_path_append(const struct cow__fn_path *p,
    const struct cow__view_step *s, cow_allocator_t *alloc,
    struct cow__fn_path **out);
/* A path of the one step @s. */
cow_status_t cow__fn_path_one(const struct cow__view_step *s,
    cow_allocator_t *alloc, struct cow__fn_path **out);
void cow__fn_path_retain(struct cow__fn_path *p);
void cow__fn_path_release(struct cow__fn_path *p);
bool cow__fn_path_equal(const struct cow__fn_path *a,
    const struct cow__fn_path *b);

/* ------------------------------------------------------------------ */
/* Values and backends (value.c, backend_strided.c, backend_opaque.c).  */

struct cow__fval {
	cow__refcount_t refs;    /* Synchronization: atomic. */
	/* Everything below is read-only after creation. */
	uint64_t id;             /* trace label (%id) */
	const cow_backend_t *be;
	cow_allocator_t *alloc;
	cow_dtype_t dtype;
	int ndim;
	int64_t sizes[COW__FN_MAXD];
	int64_t numel;
	size_t itemsize;
	cow_tensor_t *strided;   /* strided backend: a plain tensor */
	char *data;              /* opaque backend: row-major, owned */
	size_t nbytes;           /* opaque backend: bytes of data */
};

/* A scalar for fill: f64, or an exact int64 (set_i64). */
struct cow__fn_scalar {
	bool is_int;
	double f;
	int64_t i;
};

/*
 * What a backend computes. Every function makes a NEW value (its inputs
 * are immutable), validates nothing the layer has already validated, and
 * on failure returns the status with the message recorded. @func: the
 * public function, for a reshape-alias event (tensor.h). Shapes given are
 * the result's.
 */
struct cow__backend_ops {
	/* A value holding @t's elements (@t plain). @owned: the caller hands
	 * over its reference and nobody else can write @t. */
	cow_status_t (*import)(const cow_backend_t *be, cow_tensor_t *t,
	    bool owned, struct cow__fval **out, const char *func);
	/* A plain tensor with the value's elements. */
	cow_status_t (*export_plain)(struct cow__fval *v, cow_tensor_t **out,
	    const char *func);
	/* Is the value a canonical base (row-major, offset 0, no slack)? */
	bool (*canonical)(const struct cow__fval *v);
	cow_status_t (*view_copy)(const struct cow__view_step *s,
	    struct cow__fval *in, struct cow__fval **out, const char *func);
	cow_status_t (*scatter)(const struct cow__view_step *s,
	    struct cow__fval *parent, struct cow__fval *src,
	    struct cow__fval **out, const char *func);
	cow_status_t (*full)(const cow_backend_t *be,
	    cow_allocator_t *alloc, cow_dtype_t dtype, int ndim,
	    const int64_t *sizes, const struct cow__fn_scalar *x,
	    struct cow__fval **out, const char *func);
	cow_status_t (*binary)(enum cow__binop op, struct cow__fval *a,
	    struct cow__fval *b, int ndim, const int64_t *sizes,
	    struct cow__fval **out, const char *func);
	cow_status_t (*binary_scalar)(enum cow__binop op, struct cow__fval *a,
	    double x, struct cow__fval **out, const char *func);
	cow_status_t (*neg)(struct cow__fval *a, struct cow__fval **out,
	    const char *func);
	/* @src broadcast to (@ndim, @sizes) and converted to @dtype. */
	cow_status_t (*convert)(struct cow__fval *src, cow_dtype_t dtype,
	    int ndim, const int64_t *sizes, struct cow__fval **out,
	    const char *func);
	/* Sum over the dimensions in @mask into (@ndim, @sizes), in ops.h's
	 * order for the layout the tensor presents, whatever the value's:
	 * @run is 0 for a sum over one dimension (its order does not depend
	 * on the layout), and for a sum of every element the length of the
	 * layout's runs (cow__sum_run), consecutive in row-major order. */
	cow_status_t (*sum)(struct cow__fval *a, uint32_t mask, int64_t run,
	    int ndim, const int64_t *sizes, struct cow__fval **out,
	    const char *func);
	cow_status_t (*equal)(struct cow__fval *a, struct cow__fval *b,
	    bool *out, const char *func);
	/* Address of element @index (in range) for reading. */
	const char *(*element)(struct cow__fval *v, const int64_t *index);
	/* A contiguous row-major address of the elements (NULL when empty),
	 * or NULL with *need_copy = true when the value is not dense. */
	const void *(*dense_data)(struct cow__fval *v, bool *need_copy);
	/* Contents of a value being freed. */
	void (*destroy)(struct cow__fval *v);
};

struct cow_backend_s {
	const char *name;
	bool needs_functionalization;
	const struct cow__backend_ops *ops;
};

extern const struct cow_backend_s cow__backend_strided;
extern const struct cow_backend_s cow__backend_opaque;

/* A new value struct (refcount 1, a fresh id) for @be with the shape. */
struct cow__fval *cow__fval_new(const cow_backend_t *be,
    cow_allocator_t *alloc, cow_dtype_t dtype, int ndim, const int64_t *sizes);
void cow__fval_free_struct(struct cow__fval *v);
void cow__fval_retain(struct cow__fval *v);
void cow__fval_release(struct cow__fval *v);
size_t cow__fval_nbytes(const struct cow__fval *v);

/* The backend ops of a value. */
#define COW__FV_OPS(v) ((v)->be->ops)

/* ------------------------------------------------------------------ */
/* Alias groups and functional tensor state (group.c).                  */

struct cow__fn_update {
	struct cow__fval *value;     /* one reference */
	struct cow__fn_path *path;   /* one reference */
};

struct cow__fn_group {
	/* Tensors of the group. Synchronization: atomic; for a storage
	 * group, the drop to zero happens under its table lock
	 * (storage_group.c). */
	cow__refcount_t refs;
	const cow_backend_t *be;     /* Read-only after creation. */
	cow_allocator_t *alloc;      /* Read-only after creation. */
	cow_dtype_t dtype;           /* Read-only after creation. */
	int ndim;                    /* base shape. Read-only. */
	int64_t sizes[COW__FN_MAXD];
	size_t base_nbytes;          /* Read-only after creation. */
	/*
	 * A storage group (tensors made by cow_tensor_from_storage): a plain
	 * 1-d tensor of @dtype over the whole user's storage (its first
	 * nbytes / itemsize elements), one reference; NULL for every other
	 * group. Read-only after creation. The base was read from it, every
	 * tensor's layout is its place in it, and every write is also
	 * written through it to the storage (cow__fn_commit_write).
	 */
	cow_tensor_t *input;
	/* Next group in the storage's table bucket. Synchronization: that
	 * bucket's lock (storage_group.c). */
	struct cow__fn_group *next;
	/* Below: the user serialises uses of the group (functional.h). */
	struct cow__fval *base;      /* canonical, one reference */
	struct cow__fn_update upd[COW_FUNCTIONAL_MAX_UPDATES + 1];
	size_t nupd;
	size_t pending_bytes;
	uint64_t generation;
	uint64_t applied, coalesced, flushes;
};

/* Generation of a tensor whose value must be recomputed on its next read. */
#define COW__FN_STALE UINT64_MAX

struct cow__fn {
	struct cow__fn_group *group; /* one reference */
	struct cow__fn_path *path;   /* one reference */
	struct cow__fval *value;     /* one reference */
	uint64_t generation;
};

/* The layer's tensor implementation (dispatch.c): a functional tensor is
 * one whose implementation it is. */
extern const struct cow__tensor_impl cow__fn_impl;

/* @t's layer state; NULL for a plain tensor. */
static inline struct cow__fn *
cow__fn_of(const cow_tensor_t *t)
{
	return t->impl == &cow__fn_impl ? t->impl_state : NULL;
}

/* A new group over @base (canonical; the group takes the reference). */
cow_status_t cow__fn_group_new(struct cow__fval *base,
    struct cow__fn_group **out);
/* A new group whose base is @v (reference consumed; copied once when it
 * is not canonical). */
cow_status_t cow__fn_group_fresh(struct cow__fval *v,
    struct cow__fn_group **out, const char *func);
void cow__fn_group_release(struct cow__fn_group *g);

/*
 * Storage groups (storage_group.c): one alias group per storage, found in
 * a table keyed by the storage's address.
 *
 * cow__fn_group_put - drop one reference of @g; true when it was the last
 * (a storage group has then left its table, so no lookup can find it).
 */
bool cow__fn_group_put(struct cow__fn_group *g);

/*
 * A new functional tensor in @g (one new group reference) with @path
 * (retained), @value (the reference is handed over), @generation and the
 * virtual layout @l. On failure @value's reference is dropped.
 */
cow_status_t cow__fn_tensor_new(struct cow__fn_group *g,
    struct cow__fn_path *path, struct cow__fval *value, uint64_t generation,
    const struct cow__layout *l, cow_tensor_t **out);

/* A functional tensor in a new group whose base is @v (reference
 * consumed; copied once when it is not canonical), with an empty path. */
cow_status_t cow__fn_tensor_fresh(struct cow__fval *v, cow_tensor_t **out,
    const char *func);

/* Apply every pending update of @g to its base, in order. */
cow_status_t cow__fn_group_flush(struct cow__fn_group *g, const char *func);

/* Bring @t's value up to date (flush, then replay its path). */
cow_status_t cow__fn_sync(cow_tensor_t *t, const char *func);

/* @t was written: its new value is @value (reference handed over). */
cow_status_t cow__fn_commit_write(cow_tensor_t *t, struct cow__fval *value,
    const char *func);

/* A view step's value (trace + backend). */
cow_status_t cow__fn_view_copy(const struct cow__view_step *s,
    struct cow__fval *in, struct cow__fval **out, const char *func);

/* Replace *slot's reference by @v's (the caller's reference moves). */
static inline void
cow__fval_assign(struct cow__fval **slot, struct cow__fval *v)
{
	struct cow__fval *old = *slot;

	*slot = v;
	cow__fval_release(old);
}

/* ------------------------------------------------------------------ */
/* Thread state (thread.c): read and written by its own thread only.      */

struct cow__fn_thread {
	const cow_backend_t *backend;  /* NULL: strided */
	bool mode;
	uint64_t next_id;              /* value ids */
	struct cow_functional_trace_s *trace;
};

extern _Thread_local struct cow__fn_thread cow__fn_tls;

/* The thread's backend (never NULL). */
static inline const cow_backend_t *
cow__fn_thread_backend(void)
{
	return cow__fn_tls.backend != NULL ? cow__fn_tls.backend :
	    &cow__backend_strided;
}

/* ------------------------------------------------------------------ */
/* Dispatch (dispatch.c).                                               */

/* Import a plain tensor into @be transiently (retained / copied). */
cow_status_t cow__fn_import_plain(const cow_backend_t *be, cow_tensor_t *t,
    struct cow__fval **out, const char *func);

/* ------------------------------------------------------------------ */
/* Trace (trace.c).                                                      */

/* Record one line if the thread is recording (printf-style). */
void cow__fn_trace(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static inline bool
cow__fn_tracing(void)
{
	return cow__fn_tls.trace != NULL;
}
/* "[2, 3]" of a shape into @buf (COW__SHAPE_STR_MAX bytes). */
const char *cow__fn_step_args(const struct cow__view_step *s, char *buf,
    size_t n);

#endif
