/*
 * create.c - public tensor creation: empty, zeros, full, arange, from a
 * caller's buffer, over an existing storage. Each creation function checks
 * its pointers, asks the thread's creation implementation once and calls
 * its constructor (tensor/impl.h); the strided constructor is below.
 */
#include <string.h>

#include "core/error.h"
#include "tensor/dtype.h"
#include "tensor/impl.h"
#include "tensor/kernels.h"
#include "tensor/shape.h"
#include "storage/storage.h"
#include "tensor/tensor.h"

/* The calling thread's creation implementation (impl.h). */
static _Thread_local const struct cow__tensor_impl *creating =
    &cow__tensor_strided_impl;

void
cow__tensor_impl_creating_set(const struct cow__tensor_impl *impl)
{
	creating = impl;
}

static cow_status_t
strided_full(const struct cow__create *c, cow_tensor_t **out,
    const char *func)
{
	cow_tensor_t *t;
	cow_status_t st;

	/* The fill writes every element: no zero fill first. */
	if ((st = cow__tensor_new_output(c->dtype, c->ndim, c->sizes,
	    c->allocator, &t)) != COW_OK)
		return st;
	if ((st = cow__kernel_fill(t, c->value, func)) != COW_OK) {
		cow_tensor_release(t);
		return st;
	}
	*out = t;
	return COW_OK;
}

static cow_status_t
strided_arange(const struct cow__create *c, cow_tensor_t **out,
    const char *func)
{
	int64_t n = c->n;
	cow_tensor_t *t;
	cow_status_t st;
	char *p;

	if (n < 0)
		return cow__error(COW_EINVAL,
		    "n %lld is negative", (long long)n);
	if ((st = cow__tensor_new_contiguous(c->dtype, 1, &n, c->allocator,
	    &t)) != COW_OK)
		return st;
	if (n > 0) {
		if ((st = cow__tensor_write_data(t, &p, func)) != COW_OK) {
			cow_tensor_release(t);
			return st;
		}
		for (int64_t i = 0; i < n; i++)
			cow__store_i64(c->dtype, p + i * (int64_t)t->itemsize,
			    i);
	}
	*out = t;
	return COW_OK;
}

static cow_status_t
strided_from_data(const struct cow__create *c, cow_tensor_t **out,
    const char *func)
{
	cow_tensor_t *t;
	cow_status_t st;
	int64_t numel;
	size_t nbytes;
	char *p;

	if ((st = cow__dtype_check(c->dtype)) != COW_OK ||
	    (st = cow__shape_check(c->ndim, c->sizes, cow_dtype_size(c->dtype),
	    &numel, &nbytes)) != COW_OK)
		return st;
	if (c->data == NULL && numel > 0)
		return cow__error(COW_EINVAL,
		    "data is NULL but the shape has %lld elements",
		    (long long)numel);
	/* The copy below writes every byte: no zero fill first. */
	if ((st = cow__tensor_new_output(c->dtype, c->ndim, c->sizes,
	    c->allocator, &t)) != COW_OK)
		return st;
	if (numel > 0) {
		if ((st = cow__tensor_write_data(t, &p, func)) != COW_OK) {
			cow_tensor_release(t);
			return st;
		}
		memcpy(p, c->data, nbytes);
	}
	*out = t;
	return COW_OK;
}

static cow_status_t
strided_from_storage(const struct cow__create *c, cow_tensor_t **out)
{
	struct cow__layout l;
	cow_status_t st;

	if (c->kind == COW__CREATE_OVER_STORAGE) {
		cow__layout_init(&l, c->ndim, c->sizes, c->strides, c->offset);
		return cow__tensor_new(c->storage, c->dtype, &l, out);
	}
	if ((st = cow__dtype_check(c->dtype)) != COW_OK ||
	    (st = cow__shape_check(c->ndim, c->sizes, cow_dtype_size(c->dtype),
	    NULL, NULL)) != COW_OK)
		return st;
	cow__layout_init(&l, c->ndim, c->sizes, c->strides, c->offset);
	if ((st = cow__layout_check(l.ndim, l.sizes, l.strides, l.offset,
	    cow_dtype_size(c->dtype), cow_storage_nbytes(c->storage))) !=
	    COW_OK)
		return st;
	return cow__tensor_new(c->storage, c->dtype, &l, out);
}

/* The strided implementation's constructor. */
cow_status_t
cow__strided_create(const struct cow__create *c, cow_tensor_t **out,
    const char *func)
{
	switch (c->kind) {
	case COW__CREATE_EMPTY:
	case COW__CREATE_ZEROS:
		/* New storages are zero-filled (cow_storage_new), and all-zero
		 * bytes are 0 in every dtype. */
		return cow__tensor_new_contiguous(c->dtype, c->ndim, c->sizes,
		    c->allocator, out);
	case COW__CREATE_FULL:
		return strided_full(c, out, func);
	case COW__CREATE_ARANGE:
		return strided_arange(c, out, func);
	case COW__CREATE_FROM_DATA:
		return strided_from_data(c, out, func);
	case COW__CREATE_FROM_STORAGE:
	case COW__CREATE_OVER_STORAGE:
		return strided_from_storage(c, out);
	}
	return cow__error(COW_EINVAL, "unknown creation %d", (int)c->kind);
}

cow_status_t
cow_tensor_empty(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    cow_allocator_t *allocator, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(creating->create(&(struct cow__create){
	    .kind = COW__CREATE_EMPTY, .dtype = dtype, .ndim = ndim,
	    .sizes = sizes, .allocator = allocator }, out, __func__));
}

cow_status_t
cow_tensor_zeros(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    cow_allocator_t *allocator, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(creating->create(&(struct cow__create){
	    .kind = COW__CREATE_ZEROS, .dtype = dtype, .ndim = ndim,
	    .sizes = sizes, .allocator = allocator }, out, __func__));
}

cow_status_t
cow_tensor_full(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    double value, cow_allocator_t *allocator, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(creating->create(&(struct cow__create){
	    .kind = COW__CREATE_FULL, .dtype = dtype, .ndim = ndim,
	    .sizes = sizes, .value = value,
	    .allocator = allocator }, out, __func__));
}

cow_status_t
cow_tensor_arange(cow_dtype_t dtype, int64_t n, cow_allocator_t *allocator,
    cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(creating->create(&(struct cow__create){
	    .kind = COW__CREATE_ARANGE, .dtype = dtype, .n = n,
	    .allocator = allocator }, out, __func__));
}

cow_status_t
cow_tensor_from_data(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    const void *data, cow_allocator_t *allocator, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(creating->create(&(struct cow__create){
	    .kind = COW__CREATE_FROM_DATA, .dtype = dtype, .ndim = ndim,
	    .sizes = sizes, .data = data,
	    .allocator = allocator }, out, __func__));
}

cow_status_t
cow_tensor_from_storage(cow_storage_t *storage, cow_dtype_t dtype, int ndim,
    const int64_t *sizes, const int64_t *strides, int64_t offset,
    cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(storage);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(creating->create(&(struct cow__create){
	    .kind = COW__CREATE_FROM_STORAGE, .dtype = dtype, .ndim = ndim,
	    .sizes = sizes, .strides = strides, .offset = offset,
	    .storage = storage }, out, __func__));
}

/* The alignment element data needs: the element's size, or for a complex
 * dtype the size of one of its two parts. */
static size_t
element_alignment(cow_dtype_t dtype)
{
	size_t size = cow_dtype_size(dtype);

	return cow__dtype_is_complex(dtype) ? size / 2 : size;
}

cow_status_t
cow__tensor_over_external(void *data, cow_dtype_t dtype, int ndim,
    const int64_t *sizes, const int64_t *strides, int64_t offset,
    cow_deleter_fn deleter, void *deleter_ctx, unsigned flags,
    cow_allocator_t *alloc, cow_tensor_t **out, const char *func)
{
	struct cow__create c = { .kind = COW__CREATE_OVER_STORAGE };
	struct cow__layout l;
	size_t itemsize, align;
	int64_t end;
	cow_storage_t *storage;
	cow_status_t st;

	if ((st = cow__dtype_check(dtype)) != COW_OK ||
	    (st = cow__shape_check(ndim, sizes, cow_dtype_size(dtype), NULL,
	    NULL)) != COW_OK)
		return st;
	itemsize = cow_dtype_size(dtype);
	cow__layout_init(&l, ndim, sizes, strides, offset);
	/* The storage spans from @data to the last byte the layout reaches. */
	if ((st = cow__layout_extent(l.ndim, l.sizes, l.strides, l.offset,
	    itemsize, &end)) != COW_OK)
		return st;
	if ((uint64_t)end > COW_STORAGE_MAX_NBYTES)
		return cow__error(COW_EOVERFLOW,
		    "the layout reaches %lld bytes, above the maximum of %zu",
		    (long long)end, (size_t)COW_STORAGE_MAX_NBYTES);
	if (data == NULL && end > 0)
		return cow__error(COW_EINVAL,
		    "data is NULL but the layout reaches %lld bytes",
		    (long long)end);
	align = element_alignment(dtype);
	if ((uintptr_t)data % align != 0)
		return cow__error(COW_EINVAL,
		    "data %p is not aligned to %zu bytes, as %s elements need",
		    data, align, cow_dtype_name(dtype));
	if ((st = cow__storage_external(data, (size_t)end, deleter,
	    deleter_ctx, flags, alloc, &storage)) != COW_OK)
		return st;
	/* The thread's implementation makes the tensor over the storage, as
	 * for cow_tensor_from_storage (a functional one joins the storage's
	 * alias group), the layout checked. */
	c.dtype = dtype;
	c.ndim = l.ndim;
	c.sizes = l.sizes;
	c.strides = l.strides;
	c.offset = l.offset;
	c.storage = storage;
	st = creating->create(&c, out, func);
	if (st != COW_OK)
		cow__storage_disown(storage); /* @data stays the caller's */
	cow_storage_release(storage);
	return st;
}

cow_status_t
cow_tensor_from_external(void *data, cow_dtype_t dtype, int ndim,
    const int64_t *sizes, const int64_t *strides, int64_t offset,
    cow_deleter_fn deleter, void *deleter_ctx, unsigned flags,
    cow_allocator_t *allocator, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(cow__tensor_over_external(data, dtype, ndim, sizes,
	    strides,
	    offset, deleter, deleter_ctx, flags, allocator, out, __func__));
}
