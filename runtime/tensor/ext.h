/*
 * ext.h - the tensor layer's extension interface: how a layer above it
 * (functionalization) takes over the tensors it manages, without the
 * tensor layer knowing that layer. The same pattern the functional layer
 * uses going down to its backends (struct cow__backend_ops).
 *
 * A tensor carries @ext (NULL for a plain tensor) and @ext_state, the
 * extension's own per-tensor state (cow_tensor_t, tensor.h). Every public
 * entry point of tensor.h and ops.h that reads or writes elements, makes a
 * view or a tensor, makes one test after its argument checks: when a
 * tensor argument has an extension, the call goes to that extension's
 * hook, which keeps the public function's contract (the same validation,
 * statuses and messages). Plain tensors pay one load and one branch per
 * call. The accessors of a tensor's own fields (cow_tensor_ndim, _dtype,
 * _numel, _offset, _sizes, _size, _strides, _stride, _is_contiguous,
 * _storage, _refcount) make none: they read the fields, which an
 * extension's tensors carry like any other. A call with two tensor
 * arguments goes to the first extended one's table (cow__ext_of2).
 *
 * Creation: an extension that wants the tensors a thread creates installs
 * its table for that thread (cow__tensor_ext_creating_set). Each creation
 * function then runs once more plainly, with the thread's table cleared
 * while it does, and hands its plain result to @adopt (@adopt_storage for
 * cow_tensor_from_storage).
 *
 * Tables are static, const and live as long as the program.
 */
#ifndef COW_TENSOR_EXT_H
#define COW_TENSOR_EXT_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/tensor.h>

#include "tensor/kernels.h"
#include "tensor/view_step.h"

struct cow__tensor_ext {
	/*
	 * Creation. @st is the plain creation's status; when it is COW_OK,
	 * turn @plain (the caller's reference is handed over) into the
	 * extension's tensor in *out. @value: the fill value (NULL: none).
	 * Returns the status, with the message naming @func.
	 */
	cow_status_t (*adopt)(cow_status_t st, cow_tensor_t *plain,
	    const double *value, cow_tensor_t **out, const char *func);
	/* The same for cow_tensor_from_storage: @plain views the caller's
	 * storage. */
	cow_status_t (*adopt_storage)(cow_status_t st, cow_tensor_t *plain,
	    cow_tensor_t **out, const char *func);
	/* The last reference of @t went: drop its extension state. */
	void (*destroy)(cow_tensor_t *t);

	/* Views: the view of @t by the step @s, whose arguments the view
	 * function @func has set but not yet checked (view_step.h). */
	cow_status_t (*view)(cow_tensor_t *t, struct cow__view_step *s,
	    cow_tensor_t **out, const char *func);
	cow_status_t (*reshape)(cow_tensor_t *t, int ndim,
	    const int64_t *sizes, cow_tensor_t **out);

	/* Copies (cow_tensor_clone and the layer's internal clone, whose
	 * errors name @func; cow_tensor_lazy_clone). */
	cow_status_t (*clone)(const cow_tensor_t *t, cow_tensor_t **out,
	    const char *func);
	cow_status_t (*lazy_clone)(cow_tensor_t *t, cow_tensor_t **out);

	/* Element access. read_data: cow_tensor_read_data's contract, the
	 * errors naming @func (it serves cow_tensor_const_data too). get: *f
	 * when @f is set, else *i. set: the value in *f when @f is set, else
	 * in *i. */
	cow_status_t (*read_data)(const cow_tensor_t *t, const void **out,
	    const char *func);
	cow_status_t (*mutable_data)(cow_tensor_t *t, void **out);
	cow_status_t (*get)(const cow_tensor_t *t, const int64_t *index,
	    double *f, int64_t *i, const char *func);
	cow_status_t (*set)(cow_tensor_t *t, const int64_t *index,
	    const double *f, const int64_t *i, const char *func);

	/* Ops (ops.h). @t or @dst is the destination of an in-place op. */
	cow_status_t (*fill_)(cow_tensor_t *t, double value);
	cow_status_t (*binary_scalar_)(enum cow__binop op, cow_tensor_t *t,
	    double value, const char *func);
	cow_status_t (*binary_)(enum cow__binop op, cow_tensor_t *t,
	    const cow_tensor_t *other, const char *func);
	cow_status_t (*copy_)(cow_tensor_t *dst, const cow_tensor_t *src);
	cow_status_t (*binary)(enum cow__binop op, const cow_tensor_t *a,
	    const cow_tensor_t *b, cow_tensor_t **out, const char *func);
	cow_status_t (*neg)(const cow_tensor_t *a, cow_tensor_t **out);
	/* @all: over every dimension (@dim and @keepdim unused). */
	cow_status_t (*sum)(const cow_tensor_t *a, bool all, int dim,
	    bool keepdim, cow_tensor_t **out, const char *func);
	cow_status_t (*equal)(const cow_tensor_t *a, const cow_tensor_t *b,
	    bool *out);
	cow_status_t (*matmul)(const cow_tensor_t *a, const cow_tensor_t *b,
	    cow_tensor_t **out);
};

/* The public in-place binary op (cow_tensor_add_, cow_tensor_sub_, ...)
 * by @op, its errors naming @func: what a layer calls for a plain
 * destination. */
cow_status_t cow__tensor_binary_(enum cow__binop op, cow_tensor_t *t,
    const cow_tensor_t *other, const char *func);

/* The table a call with the tensor arguments @a and @b goes to: @a's, else
 * @b's (NULL: both are plain). */
#define cow__ext_of2(a, b) ((a)->ext != NULL ? (a)->ext : (b)->ext)

/* Install @ext (NULL: none) as the calling thread's creation extension:
 * the tensors the thread creates from now on are @ext's. */
void cow__tensor_ext_creating_set(const struct cow__tensor_ext *ext);

/* Hand @t (just allocated and initialised, no other reference yet) to
 * @ext with its state @state. */
void cow__tensor_ext_attach(cow_tensor_t *t, const struct cow__tensor_ext *ext,
    void *state);

#endif
