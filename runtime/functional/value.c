/*
 * value.c - immutable backend values, reference counted (shared by the
 * tensors of a group, its pending updates, and other groups' bases after
 * a clone).
 */
#include "alloc/allocator.h"
#include "functional/functional.h"
#include "tensor/shape.h"

struct cow__fval *
cow__fval_new(const cow_backend_t *be, cow_allocator_t *alloc,
    cow_dtype_t dtype, int ndim, const int64_t *sizes)
{
	struct cow__fval *v = cow__alloc(alloc, sizeof *v);

	if (v == NULL)
		return NULL;
	cow__ref_init(&v->refs, 1);
	v->id = cow__fn_tls.next_id++;
	v->be = be;
	v->alloc = alloc;
	v->dtype = dtype;
	v->ndim = ndim;
	for (int d = 0; d < ndim; d++)
		v->sizes[d] = sizes[d];
	v->numel = cow__shape_numel(ndim, sizes);
	v->itemsize = cow_dtype_size(dtype);
	v->strided = NULL;
	v->data = NULL;
	v->nbytes = 0;
	return v;
}

void
cow__fval_free_struct(struct cow__fval *v)
{
	cow__free(v->alloc, v, sizeof *v);
}

void
cow__fval_retain(struct cow__fval *v)
{
	cow__ref_get(&v->refs);
}

void
cow__fval_release(struct cow__fval *v)
{
	if (v == NULL || !cow__ref_put(&v->refs))
		return;
	v->be->ops->destroy(v);
	cow__fval_free_struct(v);
}

size_t
cow__fval_nbytes(const struct cow__fval *v)
{
	return (size_t)v->numel * v->itemsize;
}
