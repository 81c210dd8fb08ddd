/*
 * tensor.c - tensor lifecycle, internal constructors and accessors, and
 * the strided implementation's table (tensor/impl.h). A plain tensor's
 * metadata is immutable after initialisation; only the refcount changes.
 * Another implementation may change its tensors' layout
 * (cow__tensor_set_layout).
 */
#include <string.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "storage/shadow.h"
#include "tensor/dtype.h"
#include "tensor/impl.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

cow_tensor_t *
cow__tensor_alloc(cow_allocator_t *alloc)
{
	cow_tensor_t *t = cow__alloc(alloc, sizeof *t);

	if (t != NULL)
		t->alloc = alloc;
	return t;
}

void
cow__tensor_free(cow_tensor_t *t)
{
	cow__free(t->alloc, t, sizeof *t);
}

void
cow__layout_init(struct cow__layout *l, int ndim, const int64_t *sizes,
    const int64_t *strides, int64_t offset)
{
	l->ndim = ndim;
	l->offset = offset;
	for (int d = 0; d < ndim; d++)
		l->sizes[d] = sizes[d];
	if (strides != NULL)
		for (int d = 0; d < ndim; d++)
			l->strides[d] = strides[d];
	else
		cow__contiguous_strides(ndim, sizes, l->strides);
}

void
cow__tensor_init(cow_tensor_t *t, cow_storage_t *storage, cow_dtype_t dtype,
    const struct cow__layout *l)
{
	cow__ref_init(&t->refs, 1);
	t->dtype = dtype;
	t->itemsize = cow_dtype_size(dtype);
	t->storage = storage;
	t->shadow = NULL;
	t->borrows = NULL;
	t->impl = &cow__tensor_strided_impl;
	t->impl_state = NULL;
	cow__tensor_set_layout(t, l);
	t->numel = cow__shape_numel(l->ndim, l->sizes);
}

/* The strided implementation: the code of runtime/tensor/. */
const struct cow__tensor_impl cow__tensor_strided_impl = {
	.create = cow__strided_create,
	.destroy = NULL,
	.view = cow__strided_view,
	.reshape = cow__strided_reshape,
	.clone = cow__strided_clone,
	.lazy_clone = cow__strided_lazy_clone,
	.read_data = cow__strided_read_data,
	.mutable_data = cow__strided_mutable_data,
	.pin = cow__strided_pin,
	.unpin = cow__strided_unpin,
	.get = cow__strided_get,
	.set = cow__strided_set,
	.fill_ = cow__strided_fill_,
	.binary_scalar_ = cow__strided_binary_scalar_,
	.binary_ = cow__strided_binary_,
	.copy_ = cow__strided_copy_,
	.binary = cow__strided_binary,
	.neg = cow__strided_neg,
	.sum = cow__strided_sum,
	.equal = cow__strided_equal,
	.matmul = cow__strided_matmul,
};

void
cow__tensor_impl_attach(cow_tensor_t *t, const struct cow__tensor_impl *impl,
    void *state)
{
	t->impl = impl;
	t->impl_state = state;
}

void
cow__tensor_set_layout(cow_tensor_t *t, const struct cow__layout *l)
{
	t->ndim = l->ndim;
	t->offset = l->offset;
	for (int d = 0; d < l->ndim; d++) {
		t->sizes[d] = l->sizes[d];
		t->strides[d] = l->strides[d];
	}
	t->contiguous = cow__is_contiguous(t->ndim, t->sizes, t->strides);
}

cow_status_t
cow__tensor_new(cow_storage_t *storage, cow_dtype_t dtype,
    const struct cow__layout *l, cow_tensor_t **out)
{
	cow_tensor_t *t = cow__tensor_alloc(cow_storage_allocator(storage));

	if (t == NULL)
		return COW_ENOMEM;
	cow_storage_retain(storage);
	cow__tensor_init(t, storage, dtype, l);
	*out = t;
	return COW_OK;
}

cow_status_t
cow__tensor_new_view(const cow_tensor_t *base, const struct cow__layout *l,
    cow_tensor_t **out)
{
	cow_status_t st;

	st = cow__tensor_new(base->storage, base->dtype, l, out);
	if (st == COW_OK && base->shadow != NULL) {
		/* Views share their base's shadow (docs/reshape.md). */
		cow__shadow_retain(base->shadow);
		(*out)->shadow = base->shadow;
	}
	return st;
}

static cow_status_t
tensor_new_dense(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    cow_allocator_t *alloc, bool zeroed, cow_tensor_t **out)
{
	struct cow__layout l;
	cow_storage_t *s;
	cow_status_t st;
	size_t nbytes;

	if ((st = cow__dtype_check(dtype)) != COW_OK ||
	    (st = cow__shape_check(ndim, sizes, cow_dtype_size(dtype), NULL,
	    &nbytes)) != COW_OK)
		return st;
	if ((st = zeroed ? cow_storage_new(nbytes, alloc, &s) :
	    cow__storage_new_uninit(nbytes, alloc, &s)) != COW_OK)
		return cow__error_wrap(st, "");
	cow__layout_contiguous(&l, ndim, sizes);
	st = cow__tensor_new(s, dtype, &l, out);
	cow_storage_release(s);
	return st;
}

cow_status_t
cow__tensor_new_contiguous(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    cow_allocator_t *alloc, cow_tensor_t **out)
{
	return tensor_new_dense(dtype, ndim, sizes, alloc, true, out);
}

cow_status_t
cow__tensor_new_output(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    cow_allocator_t *alloc, cow_tensor_t **out)
{
	/* A zeroed allocation may hand back fresh pages (jemalloc), each of
	 * which then faults on the kernel's first write: measured 257 faults
	 * per 1 MiB clone (docs/performance.md, "From Python"). */
	return tensor_new_dense(dtype, ndim, sizes, alloc, false, out);
}

cow_allocator_t *
cow__tensor_allocator(const cow_tensor_t *t)
{
	return cow_storage_allocator(t->storage);
}

cow_status_t
cow__wrap_dim(int dim, int ndim, int *out)
{
	/* Written on every path (internal helper), so that callers that
	 * inline it see an initialised value. */
	*out = 0;
	if (ndim == 0)
		return cow__error(COW_ERANGE,
		    "dim %d out of range: the tensor has no dimensions", dim);
	if (dim < -ndim || dim >= ndim)
		return cow__error(COW_ERANGE,
		    "dim %d out of range [%d, %d)", dim, -ndim, ndim);
	*out = dim < 0 ? dim + ndim : dim;
	return COW_OK;
}

cow_status_t
cow__check_tensor(const cow_tensor_t *t, const char *name)
{
	if (t == NULL)
		return cow__error(COW_EINVAL, "argument '%s' is NULL", name);
	return COW_OK;
}

void
cow_tensor_retain(cow_tensor_t *t)
{
	if (t == NULL)
		return;
	cow__ref_get(&t->refs);
}

void
cow_tensor_release(cow_tensor_t *t)
{
	if (t == NULL || !cow__ref_put(&t->refs))
		return;
	cow__borrow_check_release(t);
	if (t->impl->destroy != NULL)
		t->impl->destroy(t);
	cow__shadow_release(t->shadow);
	cow_storage_release(t->storage);
	cow__tensor_free(t);
}

unsigned
cow_tensor_refcount(const cow_tensor_t *t)
{
	return t == NULL ? 0 : cow__ref_load(&t->refs);
}

int
cow_tensor_ndim(const cow_tensor_t *t)
{
	return t == NULL ? 0 : t->ndim;
}

cow_dtype_t
cow_tensor_dtype(const cow_tensor_t *t)
{
	return t == NULL ? COW_DTYPE_INVALID : t->dtype;
}

int64_t
cow_tensor_numel(const cow_tensor_t *t)
{
	return t == NULL ? 0 : t->numel;
}

int64_t
cow_tensor_offset(const cow_tensor_t *t)
{
	return t == NULL ? 0 : t->offset;
}

size_t
cow_tensor_nbytes(const cow_tensor_t *t)
{
	int64_t end;

	/* The layout's extent from offset 0. It cannot fail: the layout lies
	 * inside its storage (a functional tensor's, inside its base). */
	if (t == NULL || t->numel == 0 ||
	    cow__layout_extent(t->ndim, t->sizes, t->strides, 0, t->itemsize,
	    &end) != COW_OK)
		return 0;
	return (size_t)end;
}

const int64_t *
cow_tensor_sizes(const cow_tensor_t *t)
{
	return t == NULL ? NULL : t->sizes;
}

const int64_t *
cow_tensor_strides(const cow_tensor_t *t)
{
	return t == NULL ? NULL : t->strides;
}

/* *@out = @per_dim[@dim] of an @ndim-dimensional tensor, @dim wrapped
 * (negative: from the end). */
static cow_status_t
tensor_dim_entry(const int64_t *per_dim, int ndim, int dim, int64_t *out)
{
	cow_status_t st;
	int d;

	if ((st = cow__wrap_dim(dim, ndim, &d)) != COW_OK)
		return st;
	*out = per_dim[d];
	return COW_OK;
}

cow_status_t
cow_tensor_size(const cow_tensor_t *t, int dim, int64_t *out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(tensor_dim_entry(t->sizes, t->ndim, dim, out));
}

cow_status_t
cow_tensor_stride(const cow_tensor_t *t, int dim, int64_t *out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(tensor_dim_entry(t->strides, t->ndim, dim, out));
}

bool
cow_tensor_is_contiguous(const cow_tensor_t *t)
{
	return t != NULL && t->contiguous;
}

cow_storage_t *
cow_tensor_storage(const cow_tensor_t *t)
{
	return t == NULL ? NULL : t->storage;
}
