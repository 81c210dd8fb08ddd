/*
 * dispatch.h - the layer's tensor implementation: the functions of its
 * table cow__fn_impl (tensor/impl.h), which the tensor API calls for a
 * functional tensor, each keeping its public function's contract. On a
 * thread whose mode is on, or whose backend needs functionalization, the
 * table is the thread's creation implementation: its constructor makes
 * the strided tensor and hands it to cow__fn_adopt()
 * (cow__fn_adopt_storage() for a tensor over the caller's storage).
 */
#ifndef COW_FUNCTIONAL_DISPATCH_H
#define COW_FUNCTIONAL_DISPATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/ops.h>
#include <cowstore/tensor.h>

#include "tensor/kernels.h"
#include "tensor/tensor.h"
#include "tensor/view_step.h"

/* Finish a creation (impl.h's @create): when @st is COW_OK, turn
 * @plain (owned) into a functional tensor in *out. @value: the fill value
 * the trace shows (NULL: none). Returns the status. */
cow_status_t cow__fn_adopt(cow_status_t st, cow_tensor_t *plain,
    const double *value, cow_tensor_t **out, const char *func);

/* cow__fn_adopt() for cow_tensor_from_storage: @plain (owned) is over a
 * user's storage, and the new tensor joins that storage's alias group
 * (storage_group.c). */
cow_status_t cow__fn_adopt_storage(cow_status_t st, cow_tensor_t *plain,
    cow_tensor_t **out, const char *func);

/* Release hook: drop a functional tensor's layer state. */
void cow__fn_tensor_destroy(cow_tensor_t *t);

/* Views: the view of @t by the step @s (view_step.h; arguments set by
 * the view function @func, not yet checked; @func for a reshape-alias
 * event of a copy the backend makes). */
cow_status_t cow__fn_view_step(cow_tensor_t *t, struct cow__view_step *s,
    cow_tensor_t **out, const char *func);
cow_status_t cow__fn_reshape(cow_tensor_t *t, int ndim, const int64_t *sizes,
    cow_tensor_t **out);

/* Copies. */
cow_status_t cow__fn_clone(const cow_tensor_t *t, cow_tensor_t **out,
    const char *func);
cow_status_t cow__fn_lazy_clone(cow_tensor_t *t, cow_tensor_t **out);

/* Element access. */
cow_status_t cow__fn_read_data(const cow_tensor_t *t, const void **out,
    const char *func);
cow_status_t cow__fn_mutable_data(cow_tensor_t *t, void **out);
cow_status_t cow__fn_get(const cow_tensor_t *t, const int64_t *index,
    double *f, int64_t *i, const char *func);
cow_status_t cow__fn_set(cow_tensor_t *t, const int64_t *index,
    const double *f, const int64_t *i, const char *func);

/* Ops (ops.h). */
cow_status_t cow__fn_fill_(cow_tensor_t *t, double value);
cow_status_t cow__fn_binary_scalar_(enum cow__binop op, cow_tensor_t *t,
    double value, const char *func);
cow_status_t cow__fn_binary_(enum cow__binop op, cow_tensor_t *t,
    const cow_tensor_t *other, const char *func);
cow_status_t cow__fn_copy_(cow_tensor_t *dst, const cow_tensor_t *src);
cow_status_t cow__fn_binary(enum cow__binop op, const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out, const char *func);
cow_status_t cow__fn_neg(const cow_tensor_t *a, cow_tensor_t **out);
cow_status_t cow__fn_matmul(const cow_tensor_t *a, const cow_tensor_t *b,
    cow_tensor_t **out);
cow_status_t cow__fn_sum(const cow_tensor_t *a, bool all, int dim,
    bool keepdim, cow_tensor_t **out, const char *func);
cow_status_t cow__fn_equal(const cow_tensor_t *a, const cow_tensor_t *b,
    bool *out);

#endif
