/*
 * ops.c - the public ops: argument checks, then the call through the
 * tensor's table (tensor/impl.h); and the strided implementation's ops:
 * result allocation, then the kernel (kernels.c). No op touches data
 * except through a kernel.
 */
#include "core/error.h"
#include "tensor/impl.h"
#include "tensor/kernels.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

#include <cowstore/ops.h>

cow_status_t
cow__strided_fill_(cow_tensor_t *t, double value)
{
	return cow__kernel_fill(t, value, "cow_tensor_fill_");
}

cow_status_t
cow_tensor_fill_(cow_tensor_t *t, double value)
{
	COW__RETURN_IF_NULL(t);
	return COW__NAMED(t->impl->fill_(t, value));
}

cow_status_t
cow__strided_binary_scalar_(enum cow__binop op, cow_tensor_t *t,
    double value, const char *func)
{
	return cow__kernel_binary_scalar(op, t, t, value, func);
}

cow_status_t
cow_tensor_add_scalar_(cow_tensor_t *t, double value)
{
	COW__RETURN_IF_NULL(t);
	return COW__NAMED(t->impl->binary_scalar_(COW__BINOP_ADD, t, value,
	    __func__));
}

cow_status_t
cow_tensor_mul_scalar_(cow_tensor_t *t, double value)
{
	COW__RETURN_IF_NULL(t);
	return COW__NAMED(t->impl->binary_scalar_(COW__BINOP_MUL, t, value,
	    __func__));
}

cow_status_t
cow__strided_binary_(enum cow__binop op, cow_tensor_t *t,
    const cow_tensor_t *other, const char *func)
{
	cow_status_t st;

	/* The kernel's order (dtypes first); then the in-place form: t's
	 * dtype must be the op's result (not for div of integers). */
	if (t->dtype == other->dtype &&
	    (st = cow__binop_check_inplace(op, t->dtype)) != COW_OK)
		return st;
	return cow__kernel_binary(op, t, t, other, func);
}

cow_status_t
cow__tensor_binary_(enum cow__binop op, cow_tensor_t *t,
    const cow_tensor_t *other, const char *func)
{
	if (t == NULL || other == NULL)
		return cow__error(COW_EINVAL, "argument '%s' is NULL",
		    t == NULL ? "t" : "other");
	return cow__impl_of2(t, other)->binary_(op, t, other, func);
}

cow_status_t
cow_tensor_add_(cow_tensor_t *t, const cow_tensor_t *other)
{
	return COW__NAMED(cow__tensor_binary_(COW__BINOP_ADD, t, other,
	    __func__));
}

cow_status_t
cow_tensor_mul_(cow_tensor_t *t, const cow_tensor_t *other)
{
	return COW__NAMED(cow__tensor_binary_(COW__BINOP_MUL, t, other,
	    __func__));
}

cow_status_t
cow_tensor_sub_(cow_tensor_t *t, const cow_tensor_t *other)
{
	return COW__NAMED(cow__tensor_binary_(COW__BINOP_SUB, t, other,
	    __func__));
}

cow_status_t
cow_tensor_div_(cow_tensor_t *t, const cow_tensor_t *other)
{
	return COW__NAMED(cow__tensor_binary_(COW__BINOP_DIV, t, other,
	    __func__));
}

cow_status_t
cow_tensor_floor_div_(cow_tensor_t *t, const cow_tensor_t *other)
{
	return COW__NAMED(cow__tensor_binary_(COW__BINOP_FLOOR_DIV, t, other,
	    __func__));
}

cow_status_t
cow_tensor_mod_(cow_tensor_t *t, const cow_tensor_t *other)
{
	return COW__NAMED(cow__tensor_binary_(COW__BINOP_MOD, t, other,
	    __func__));
}

cow_status_t
cow__strided_copy_(cow_tensor_t *dst, const cow_tensor_t *src)
{
	return cow__kernel_copy(dst, src, "cow_tensor_copy_");
}

cow_status_t
cow_tensor_copy_(cow_tensor_t *dst, const cow_tensor_t *src)
{
	COW__RETURN_IF_NULL(dst);
	COW__RETURN_IF_NULL(src);
	return COW__NAMED(cow__impl_of2(dst, src)->copy_(dst, src));
}

cow_status_t
cow__strided_binary(enum cow__binop op, const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out, const char *func)
{
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	cow_tensor_t *r;
	cow_status_t st;
	int ndim;

	/* Validate before allocating: the kernel would refuse the same. */
	if (cow_tensor_dtype(a) != cow_tensor_dtype(b))
		return cow__error(COW_EDTYPE, "operands: dtypes %s and %s "
		    "differ (no type promotion)",
		    cow_dtype_name(cow_tensor_dtype(a)),
		    cow_dtype_name(cow_tensor_dtype(b)));
	if ((st = cow__binop_check(op, a->dtype)) != COW_OK ||
	    (st = cow__broadcast_shape(a->ndim, a->sizes, b->ndim, b->sizes,
	    &ndim, sizes)) != COW_OK ||
	    (st = cow__tensor_new_output(cow__binop_result_dtype(op, a->dtype),
	    ndim, sizes, cow__tensor_allocator(a), &r)) != COW_OK)
		return st;
	if ((st = cow__kernel_binary(op, r, a, b, func)) != COW_OK) {
		cow_tensor_release(r);
		return st;
	}
	*out = r;
	return COW_OK;
}

static cow_status_t
binary_out(enum cow__binop op, const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out, const char *func)
{
	cow_status_t st;

	if ((st = cow__check_tensor(a, "a")) != COW_OK ||
	    (st = cow__check_tensor(b, "b")) != COW_OK)
		return st;
	if (out == NULL)
		return cow__error(COW_EINVAL, "argument 'out' is NULL");
	return cow__impl_of2(a, b)->binary(op, a, b, out, func);
}

cow_status_t
cow_tensor_add(const cow_tensor_t *a, const cow_tensor_t *b,
    cow_tensor_t **out)
{
	return COW__NAMED(binary_out(COW__BINOP_ADD, a, b, out, __func__));
}

cow_status_t
cow_tensor_mul(const cow_tensor_t *a, const cow_tensor_t *b,
    cow_tensor_t **out)
{
	return COW__NAMED(binary_out(COW__BINOP_MUL, a, b, out, __func__));
}

#define BINARY_OUT(name, OP)                                                \
cow_status_t                                                                \
name(const cow_tensor_t *a, const cow_tensor_t *b, cow_tensor_t **out)      \
{                                                                           \
	return COW__NAMED(binary_out(OP, a, b, out, __func__));             \
}
BINARY_OUT(cow_tensor_sub, COW__BINOP_SUB)
BINARY_OUT(cow_tensor_div, COW__BINOP_DIV)
BINARY_OUT(cow_tensor_floor_div, COW__BINOP_FLOOR_DIV)
BINARY_OUT(cow_tensor_mod, COW__BINOP_MOD)
BINARY_OUT(cow_tensor_eq, COW__BINOP_EQ)
BINARY_OUT(cow_tensor_ne, COW__BINOP_NE)
BINARY_OUT(cow_tensor_lt, COW__BINOP_LT)
BINARY_OUT(cow_tensor_le, COW__BINOP_LE)
BINARY_OUT(cow_tensor_gt, COW__BINOP_GT)
BINARY_OUT(cow_tensor_ge, COW__BINOP_GE)
#undef BINARY_OUT

cow_status_t
cow__strided_neg(const cow_tensor_t *a, cow_tensor_t **out)
{
	cow_tensor_t *r;
	cow_status_t st;

	if (a->dtype == COW_DTYPE_BOOL)
		return cow__error(COW_EDTYPE,
		    "negation is not defined for dtype bool");
	if ((st = cow__tensor_new_output(a->dtype, a->ndim, a->sizes,
	    cow__tensor_allocator(a), &r)) != COW_OK)
		return st;
	if ((st = cow__kernel_neg(r, a, "cow_tensor_neg")) != COW_OK) {
		cow_tensor_release(r);
		return st;
	}
	*out = r;
	return COW_OK;
}

cow_status_t
cow_tensor_neg(const cow_tensor_t *a, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(a);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(a->impl->neg(a, out));
}

/* Sum @a over the dimensions in @mask into a new tensor of @ndim, @sizes. */
static cow_status_t
sum_out(const cow_tensor_t *a, uint32_t mask, int ndim,
    const int64_t *sizes, cow_tensor_t **out, const char *func)
{
	cow_tensor_t *r;
	cow_status_t st;

	if ((st = cow__tensor_new_contiguous(cow__sum_dtype(a->dtype), ndim,
	    sizes, cow__tensor_allocator(a), &r)) != COW_OK)
		return st;
	if ((st = cow__kernel_sum(r, a, mask, 0, func)) != COW_OK) {
		cow_tensor_release(r);
		return st;
	}
	*out = r;
	return COW_OK;
}

cow_status_t
cow__strided_sum(const cow_tensor_t *a, bool all, int dim, bool keepdim,
    cow_tensor_t **out, const char *func)
{
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	cow_status_t st;
	int d, n = 0;

	if (all)
		return sum_out(a, a->ndim == 0 ? 0 :
		    (uint32_t)((1ull << a->ndim) - 1), 0, NULL, out, func);
	if ((st = cow__wrap_dim(dim, a->ndim, &d)) != COW_OK)
		return st;
	for (int i = 0; i < a->ndim; i++) {
		if (i != d)
			sizes[n++] = a->sizes[i];
		else if (keepdim)
			sizes[n++] = 1;
	}
	return sum_out(a, 1u << d, n, sizes, out, func);
}

cow_status_t
cow_tensor_sum(const cow_tensor_t *a, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(a);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(a->impl->sum(a, true, 0, false, out, __func__));
}

cow_status_t
cow_tensor_sum_dim(const cow_tensor_t *a, int dim, bool keepdim,
    cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(a);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(a->impl->sum(a, false, dim, keepdim, out, __func__));
}

cow_status_t
cow__strided_equal(const cow_tensor_t *a, const cow_tensor_t *b, bool *out)
{
	return cow__kernel_equal(a, b, out, "cow_tensor_equal");
}

cow_status_t
cow_tensor_equal(const cow_tensor_t *a, const cow_tensor_t *b, bool *out)
{
	COW__RETURN_IF_NULL(a);
	COW__RETURN_IF_NULL(b);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(cow__impl_of2(a, b)->equal(a, b, out));
}

cow_status_t
cow__strided_matmul(const cow_tensor_t *a, const cow_tensor_t *b,
    cow_tensor_t **out)
{
	return cow__kernel_matmul(a, b, out, "cow_tensor_matmul");
}

cow_status_t
cow_tensor_matmul(const cow_tensor_t *a, const cow_tensor_t *b,
    cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(a);
	COW__RETURN_IF_NULL(b);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(cow__impl_of2(a, b)->matmul(a, b, out));
}
