/*
 * impl.h - a tensor's implementation: the table of functions that does
 * everything a tensor's kind decides. Today's two: the strided
 * implementation (cow__tensor_strided_impl: a layout over a storage, the
 * code of runtime/tensor/), and functionalization's (cow__fn_impl,
 * runtime/functional/dispatch.c). The tensor layer knows no table but its
 * own; a layer above brings its table and attaches it
 * (cow__tensor_impl_attach), as the functional layer's backends do one
 * level down (struct cow__backend_ops).
 *
 * Every tensor carries @impl (never NULL) and @impl_state, the
 * implementation's per-tensor state (cow_tensor_t, tensor.h; the strided
 * implementation keeps none). A public function of tensor.h and ops.h
 * that reads or writes elements, makes a view or a tensor checks its
 * arguments, then makes one call through its tensor's table; the entry
 * keeps the public function's contract (validation, statuses, messages).
 * A call with two tensor arguments goes to the table cow__impl_of2()
 * picks, the one place that compares implementations. The accessors of a
 * tensor's own fields (cow_tensor_ndim, _dtype, _numel, _offset, _sizes,
 * _size, _strides, _stride, _is_contiguous, _storage, _refcount) read the
 * fields, which every implementation's tensors carry, and
 * cow_tensor_const_data reads a strided tensor's data directly
 * (cow__tensor_is_strided); neither calls the table.
 *
 * Creation: the thread's creation implementation (set by the layer that
 * owns the thread's mode and backend: cow__tensor_impl_creating_set) is
 * asked once by each creation function, which calls its @create.
 * Functionalization's @create calls the strided one and adopts its
 * result.
 *
 * Tables are static, const and live as long as the program; tests/layers
 * (layers.impl) fails a comparison of implementations anywhere else.
 */
#ifndef COW_TENSOR_IMPL_H
#define COW_TENSOR_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/tensor.h>

#include "tensor/kernels.h"
#include "tensor/tensor.h"
#include "tensor/view_step.h"

/* What a creation function asks for: its arguments. */
enum cow__create_kind {
	COW__CREATE_EMPTY,
	COW__CREATE_ZEROS,
	COW__CREATE_FULL,         /* @value */
	COW__CREATE_ARANGE,       /* @n */
	COW__CREATE_FROM_DATA,    /* @data */
	COW__CREATE_FROM_STORAGE, /* @storage, @strides, @offset */
	/* cow_tensor_from_storage's, the layout already checked against
	 * @storage (cow__tensor_over_external). */
	COW__CREATE_OVER_STORAGE
};

struct cow__create {
	enum cow__create_kind kind;
	cow_dtype_t dtype;
	int ndim;
	const int64_t *sizes;
	const int64_t *strides;
	int64_t offset;
	double value;
	int64_t n;
	const void *data;
	cow_storage_t *storage;   /* borrowed */
	cow_allocator_t *allocator;
};

struct cow__tensor_impl {
	/* Creation: the tensor @c asks for. @func, here and below: the
	 * public function, for a reshape-alias event (tensor.h). */
	cow_status_t (*create)(const struct cow__create *c, cow_tensor_t **out,
	    const char *func);
	/* The last reference of @t went: drop its state (NULL: none). */
	void (*destroy)(cow_tensor_t *t);

	/* Views: the view of @t by the step @s, whose arguments the view
	 * function @func has set but not yet checked (view_step.h). */
	cow_status_t (*view)(cow_tensor_t *t, struct cow__view_step *s,
	    cow_tensor_t **out, const char *func);
	cow_status_t (*reshape)(cow_tensor_t *t, int ndim,
	    const int64_t *sizes, cow_tensor_t **out);

	/* Copies (cow_tensor_clone and the layer's internal clone;
	 * cow_tensor_lazy_clone). */
	cow_status_t (*clone)(const cow_tensor_t *t, cow_tensor_t **out,
	    const char *func);
	cow_status_t (*lazy_clone)(cow_tensor_t *t, cow_tensor_t **out);

	/* Element access. read_data: cow_tensor_read_data's contract (it
	 * serves cow_tensor_const_data too). pin,
	 * unpin: cow_tensor_pin's and _unpin's. get: *f when @f is set, else
	 * *i. set: the value in *f when @f is set, else in *i. */
	cow_status_t (*read_data)(const cow_tensor_t *t, const void **out,
	    const char *func);
	cow_status_t (*mutable_data)(cow_tensor_t *t, void **out);
	cow_status_t (*pin)(cow_tensor_t *t, void **out);
	cow_status_t (*unpin)(cow_tensor_t *t);
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

/* The strided implementation (tensor.c): a plain tensor's. */
extern const struct cow__tensor_impl cow__tensor_strided_impl;

/* Its entries, defined next to their public functions. */
cow_status_t cow__strided_create(const struct cow__create *c,
    cow_tensor_t **out, const char *func);
cow_status_t cow__strided_view(cow_tensor_t *t, struct cow__view_step *s,
    cow_tensor_t **out, const char *func);
cow_status_t cow__strided_reshape(cow_tensor_t *t, int ndim,
    const int64_t *sizes, cow_tensor_t **out);
cow_status_t cow__strided_clone(const cow_tensor_t *t, cow_tensor_t **out,
    const char *func);
cow_status_t cow__strided_lazy_clone(cow_tensor_t *t, cow_tensor_t **out);
cow_status_t cow__strided_read_data(const cow_tensor_t *t, const void **out,
    const char *func);
cow_status_t cow__strided_mutable_data(cow_tensor_t *t, void **out);
cow_status_t cow__strided_pin(cow_tensor_t *t, void **out);
cow_status_t cow__strided_unpin(cow_tensor_t *t);
cow_status_t cow__strided_get(const cow_tensor_t *t, const int64_t *index,
    double *f, int64_t *i, const char *func);
cow_status_t cow__strided_set(cow_tensor_t *t, const int64_t *index,
    const double *f, const int64_t *i, const char *func);
cow_status_t cow__strided_fill_(cow_tensor_t *t, double value);
cow_status_t cow__strided_binary_scalar_(enum cow__binop op, cow_tensor_t *t,
    double value, const char *func);
cow_status_t cow__strided_binary_(enum cow__binop op, cow_tensor_t *t,
    const cow_tensor_t *other, const char *func);
cow_status_t cow__strided_copy_(cow_tensor_t *dst, const cow_tensor_t *src);
cow_status_t cow__strided_binary(enum cow__binop op, const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out, const char *func);
cow_status_t cow__strided_neg(const cow_tensor_t *a, cow_tensor_t **out);
cow_status_t cow__strided_sum(const cow_tensor_t *a, bool all, int dim,
    bool keepdim, cow_tensor_t **out, const char *func);
cow_status_t cow__strided_equal(const cow_tensor_t *a, const cow_tensor_t *b,
    bool *out);
cow_status_t cow__strided_matmul(const cow_tensor_t *a, const cow_tensor_t *b,
    cow_tensor_t **out);

/* The public in-place binary op (cow_tensor_add_, cow_tensor_sub_, ...)
 * by @op. */
cow_status_t cow__tensor_binary_(enum cow__binop op, cow_tensor_t *t,
    const cow_tensor_t *other, const char *func);

/*
 * The comparisons of implementations: only these two (layers.impl).
 *
 * cow__tensor_is_strided: whether @t is a plain tensor, for the direct
 * reads that skip the table (cow_tensor_const_data) and for the layers
 * that take only tensors with a storage of their own (DLPack export,
 * snapshots). The strided implementation keeps no state and every other
 * keeps some (cow__tensor_impl_attach's contract), so the test reads
 * @impl_state: one compare with 0, where comparing @impl with the
 * table's address would take a lea more (26 instructions per
 * cow_tensor_const_data against 25, scripts/instr-counts.sh).
 *
 * cow__impl_of2: the table a call with the tensor arguments @a and @b
 * goes to. The rule: @a's, unless @a is strided, then @b's; so a call
 * with any non-strided argument goes to the first non-strided one's
 * table, which takes plain tensors among its arguments as its own
 * (functionalization wraps them), and two plain tensors go to the strided
 * table.
 */
static inline bool
cow__tensor_is_strided(const cow_tensor_t *t)
{
	return t->impl_state == NULL;
}

static inline const struct cow__tensor_impl *
cow__impl_of2(const cow_tensor_t *a, const cow_tensor_t *b)
{
	return cow__tensor_is_strided(a) ? b->impl : a->impl;
}

/* Make @impl the calling thread's creation implementation: the tensors
 * the thread creates from now on are @impl's. */
void cow__tensor_impl_creating_set(const struct cow__tensor_impl *impl);

/* Hand @t (just made by the strided implementation, no other reference
 * yet) to @impl, not the strided one, with its state @state (not NULL). */
void cow__tensor_impl_attach(cow_tensor_t *t,
    const struct cow__tensor_impl *impl, void *state);

#endif
