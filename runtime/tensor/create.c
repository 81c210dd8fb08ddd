/*
 * create.c - public tensor creation: empty, zeros, full, arange, from a
 * caller's buffer, over an existing storage.
 */
#include <string.h>

#include "core/error.h"
#include "tensor/dtype.h"
#include "tensor/ext.h"
#include "tensor/kernels.h"
#include "tensor/shape.h"
#include "storage/storage.h"
#include "tensor/tensor.h"

/* The calling thread's creation extension (ext.h), NULL: plain. */
static _Thread_local const struct cow__tensor_ext *creating;

void
cow__tensor_ext_creating_set(const struct cow__tensor_ext *ext)
{
	creating = ext;
}

/*
 * The extension step of a creation: when the calling thread creates an
 * extension's tensors, run the creation once more plainly (into a local
 * `plain`, with the thread's extension cleared meanwhile) and hand its
 * result to the extension: @adopt_call, which names `ext` (the table),
 * `fst` (the plain call's status), `plain`, `out` and `__func__`.
 */
#define CREATE_VIA_EXT(plain_call, adopt_call)                              \
	do {                                                                \
		const struct cow__tensor_ext *ext = creating;               \
                                                                            \
		if (ext != NULL) {                                          \
			cow_tensor_t *plain = NULL;                         \
			cow_status_t fst;                                   \
                                                                            \
			creating = NULL;                                    \
			fst = (plain_call);                                 \
			creating = ext;                                     \
			return (adopt_call);                                \
		}                                                           \
	} while (0)

/* A new tensor on a new storage. @value: the fill value the extension is
 * told (NULL: none). */
#define CREATE_ADOPT(plain_call, value)                                     \
	CREATE_VIA_EXT(plain_call,                                          \
	    ext->adopt(fst, plain, (value), out, __func__))

cow_status_t
cow_tensor_empty(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    cow_allocator_t *allocator, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(out);
	CREATE_ADOPT(cow_tensor_empty(dtype, ndim, sizes, allocator,
	    &plain), NULL);
	return cow__tensor_new_contiguous(dtype, ndim, sizes, allocator, out,
	    __func__);
}

cow_status_t
cow_tensor_zeros(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    cow_allocator_t *allocator, cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(out);
	CREATE_ADOPT(cow_tensor_zeros(dtype, ndim, sizes, allocator,
	    &plain), NULL);
	/* New storages are zero-filled (cow_storage_new), and all-zero bytes
	 * are 0 in every dtype. */
	return cow__tensor_new_contiguous(dtype, ndim, sizes, allocator, out,
	    __func__);
}

cow_status_t
cow_tensor_full(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    double value, cow_allocator_t *allocator, cow_tensor_t **out)
{
	cow_tensor_t *t;
	cow_status_t st;

	COW__RETURN_IF_NULL(out);
	CREATE_ADOPT(cow_tensor_full(dtype, ndim, sizes, value,
	    allocator, &plain), &value);
	/* The fill writes every element: no zero fill first. */
	if ((st = cow__tensor_new_output(dtype, ndim, sizes, allocator, &t,
	    __func__)) != COW_OK)
		return st;
	if ((st = cow__kernel_fill(t, value, __func__)) != COW_OK) {
		cow_tensor_release(t);
		return st;
	}
	*out = t;
	return COW_OK;
}

cow_status_t
cow_tensor_arange(cow_dtype_t dtype, int64_t n, cow_allocator_t *allocator,
    cow_tensor_t **out)
{
	cow_tensor_t *t;
	cow_status_t st;
	char *p;

	COW__RETURN_IF_NULL(out);
	CREATE_ADOPT(cow_tensor_arange(dtype, n, allocator, &plain),
	    NULL);
	if (n < 0)
		return cow__error(COW_EINVAL, __func__,
		    "n %lld is negative", (long long)n);
	if ((st = cow__tensor_new_contiguous(dtype, 1, &n, allocator, &t,
	    __func__)) != COW_OK)
		return st;
	if (n > 0) {
		if ((st = cow__tensor_write_data(t, &p, __func__)) != COW_OK) {
			cow_tensor_release(t);
			return st;
		}
		for (int64_t i = 0; i < n; i++)
			cow__store_i64(dtype, p + i * (int64_t)t->itemsize, i);
	}
	*out = t;
	return COW_OK;
}

cow_status_t
cow_tensor_from_data(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    const void *data, cow_allocator_t *allocator, cow_tensor_t **out)
{
	cow_tensor_t *t;
	cow_status_t st;
	int64_t numel;
	size_t nbytes;
	char *p;

	COW__RETURN_IF_NULL(out);
	CREATE_ADOPT(cow_tensor_from_data(dtype, ndim, sizes, data,
	    allocator, &plain), NULL);
	if ((st = cow__dtype_check(dtype, __func__)) != COW_OK ||
	    (st = cow__shape_check(ndim, sizes, cow_dtype_size(dtype), &numel,
	    &nbytes, __func__)) != COW_OK)
		return st;
	if (data == NULL && numel > 0)
		return cow__error(COW_EINVAL, __func__,
		    "data is NULL but the shape has %lld elements",
		    (long long)numel);
	/* The copy below writes every byte: no zero fill first. */
	if ((st = cow__tensor_new_output(dtype, ndim, sizes, allocator, &t,
	    __func__)) != COW_OK)
		return st;
	if (numel > 0) {
		if ((st = cow__tensor_write_data(t, &p, __func__)) != COW_OK) {
			cow_tensor_release(t);
			return st;
		}
		memcpy(p, data, nbytes);
	}
	*out = t;
	return COW_OK;
}

cow_status_t
cow_tensor_from_storage(cow_storage_t *storage, cow_dtype_t dtype, int ndim,
    const int64_t *sizes, const int64_t *strides, int64_t offset,
    cow_tensor_t **out)
{
	struct cow__layout l;
	cow_status_t st;

	COW__RETURN_IF_NULL(storage);
	COW__RETURN_IF_NULL(out);
	/* Over the caller's storage (a functional one joins the storage's
	 * alias group). */
	CREATE_VIA_EXT(cow_tensor_from_storage(storage, dtype,
	    ndim, sizes, strides, offset, &plain),
	    ext->adopt_storage(fst, plain, out, __func__));
	if ((st = cow__dtype_check(dtype, __func__)) != COW_OK ||
	    (st = cow__shape_check(ndim, sizes, cow_dtype_size(dtype), NULL,
	    NULL, __func__)) != COW_OK)
		return st;
	cow__layout_init(&l, ndim, sizes, strides, offset);
	if ((st = cow__layout_check(l.ndim, l.sizes, l.strides, l.offset,
	    cow_dtype_size(dtype), cow_storage_nbytes(storage), __func__)) !=
	    COW_OK)
		return st;
	return cow__tensor_new(storage, dtype, &l, out, __func__);
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
	struct cow__layout l;
	size_t itemsize, align;
	int64_t end;
	cow_storage_t *storage;
	cow_status_t st;

	if ((st = cow__dtype_check(dtype, func)) != COW_OK ||
	    (st = cow__shape_check(ndim, sizes, cow_dtype_size(dtype), NULL,
	    NULL, func)) != COW_OK)
		return st;
	itemsize = cow_dtype_size(dtype);
	cow__layout_init(&l, ndim, sizes, strides, offset);
	/* The storage spans from @data to the last byte the layout reaches. */
	if ((st = cow__layout_extent(l.ndim, l.sizes, l.strides, l.offset,
	    itemsize, &end, func)) != COW_OK)
		return st;
	if ((uint64_t)end > COW_STORAGE_MAX_NBYTES)
		return cow__error(COW_EOVERFLOW, func,
		    "the layout reaches %lld bytes, above the maximum of %zu",
		    (long long)end, (size_t)COW_STORAGE_MAX_NBYTES);
	if (data == NULL && end > 0)
		return cow__error(COW_EINVAL, func,
		    "data is NULL but the layout reaches %lld bytes",
		    (long long)end);
	align = element_alignment(dtype);
	if ((uintptr_t)data % align != 0)
		return cow__error(COW_EINVAL, func,
		    "data %p is not aligned to %zu bytes, as %s elements need",
		    data, align, cow_dtype_name(dtype));
	if ((st = cow__storage_external(data, (size_t)end, deleter,
	    deleter_ctx, flags, alloc, &storage, func)) != COW_OK)
		return st;
	/* A thread that creates functional tensors gets one in the storage's
	 * alias group, as from cow_tensor_from_storage. */
	if (creating != NULL)
		st = cow_tensor_from_storage(storage, dtype, l.ndim, l.sizes,
		    l.strides, l.offset, out);
	else
		st = cow__tensor_new(storage, dtype, &l, out, func);
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
	return cow__tensor_over_external(data, dtype, ndim, sizes, strides,
	    offset, deleter, deleter_ctx, flags, allocator, out, __func__);
}
