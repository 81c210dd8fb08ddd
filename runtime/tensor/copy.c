/*
 * copy.c - eager and lazy copies of a tensor, and the contiguous forms
 * (cow_tensor_contiguous, cow_tensor_expect_contiguous).
 */

#include <cowstore/maybe_owned.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "tensor/impl.h"
#include "tensor/kernels.h"
#include "tensor/tensor.h"

cow_status_t
cow__strided_clone(const cow_tensor_t *t, cow_tensor_t **out,
    const char *func)
{
	return cow__kernel_clone(t, out, func);
}

cow_status_t
cow__tensor_clone(const cow_tensor_t *t, cow_tensor_t **out, const char *func)
{
	return t->impl->clone(t, out, func);
}

cow_status_t
cow_tensor_clone(const cow_tensor_t *t, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(cow__tensor_clone(t, out, __func__));
}

cow_status_t
cow_tensor_contiguous(cow_tensor_t *t, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	if (t->contiguous) {
		cow_tensor_retain(t);
		*out = t;
		return COW_OK;
	}
	return COW__NAMED(cow__tensor_clone(t, out, __func__));
}

cow_status_t
cow__strided_lazy_clone(cow_tensor_t *t, cow_tensor_t **out)
{
	struct cow__layout l;
	cow_tensor_t *c;
	cow_storage_t *s;
	cow_status_t st;

	/* The struct first: if it cannot be allocated, t's storage has not
	 * been made copy-on-write. */
	if ((c = cow__tensor_alloc(cow__tensor_allocator(t))) == NULL)
		return COW_ENOMEM;
	if ((st = cow_storage_lazy_clone(t->storage, &s)) != COW_OK) {
		cow__tensor_free(c);
		return cow__error_wrap(st, "");
	}
	cow__layout_of(t, &l);
	cow__tensor_init(c, s, t->dtype, &l);
	*out = c;
	return COW_OK;
}

cow_status_t
cow_tensor_lazy_clone(cow_tensor_t *t, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(t->impl->lazy_clone(t, out));
}

cow_status_t
cow_tensor_expect_contiguous_at(cow_tensor_t *t, cow_maybe_owned_t *out,
    const char *file, int line)
{
	cow_tensor_t *c;
	cow_status_t st;

	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	if (t->contiguous) {
		*out = cow_maybe_owned_borrowed_at(t, file, line);
		return COW_OK;
	}
	if ((st = cow__tensor_clone(t, &c, "cow_tensor_expect_contiguous")) !=
	    COW_OK)
		return COW__NAMED(st);
	*out = cow_maybe_owned_owned(c);
	return COW_OK;
}
