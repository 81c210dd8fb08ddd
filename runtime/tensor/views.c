/*
 * views.c - views: new tensors over the SAME storage with a derived layout.
 * Nothing is copied, read or written. Every view of a valid tensor stays
 * inside its storage, except as_strided, which is checked against it.
 *
 * Each view function turns its arguments into a view step (checking what
 * only the raw arguments show: NULL arrays, the count of entries) and hands
 * it to its tensor's table (tensor/impl.h); the strided implementation
 * applies it (view_step.h: the rules of every view, shared with the
 * functionalization layer).
 */
#include "core/error.h"
#include "tensor/impl.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tensor/view_step.h"

/* The strided view of @t by the step @s (arguments set, not yet
 * checked). */
cow_status_t
cow__strided_view(cow_tensor_t *t, struct cow__view_step *s,
    cow_tensor_t **out, const char *func)
{
	enum cow__step_kind kind = s->kind;
	struct cow__layout l;
	cow_status_t st;
	size_t nbytes;

	(void)func;
	/* Only as_strided is bounded by the storage. */
	nbytes = kind == COW__STEP_AS_STRIDED ?
	    cow_storage_nbytes(t->storage) : 0;
	cow__layout_of(t, &l);
	if ((st = cow__step_apply(kind, s, &l, t->itemsize, nbytes)) !=
	    COW_OK)
		return st;
	return cow__tensor_new_view(t, &l, out);
}

#define VIEW_ARGS(t, out)                                                   \
	do {                                                                \
		COW__RETURN_IF_NULL(t);                                     \
		COW__RETURN_IF_NULL(out);                                   \
	} while (0)

cow_status_t
cow_tensor_view(cow_tensor_t *t, int ndim, const int64_t *sizes,
    cow_tensor_t **out)
{
	struct cow__view_step s;
	cow_status_t st;

	VIEW_ARGS(t, out);
	cow__view_step_init(&s, COW__STEP_VIEW);
	if ((st = cow__shape_infer(t->numel, ndim, sizes, s.sizes)) !=
	    COW_OK)
		return COW__NAMED(st);
	s.ndim = ndim;
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_select(cow_tensor_t *t, int dim, int64_t index, cow_tensor_t **out)
{
	struct cow__view_step s;

	VIEW_ARGS(t, out);
	cow__view_step_init(&s, COW__STEP_SELECT);
	s.dim = dim;
	s.a = index;
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_slice(cow_tensor_t *t, int dim, int64_t start, int64_t end,
    int64_t step, cow_tensor_t **out)
{
	struct cow__view_step s;

	VIEW_ARGS(t, out);
	cow__view_step_init(&s, COW__STEP_SLICE);
	s.dim = dim;
	s.a = start;
	s.b = end;
	s.c = step;
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_narrow(cow_tensor_t *t, int dim, int64_t start, int64_t length,
    cow_tensor_t **out)
{
	struct cow__view_step s;

	VIEW_ARGS(t, out);
	cow__view_step_init(&s, COW__STEP_NARROW);
	s.dim = dim;
	s.a = start;
	s.b = length;
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_transpose(cow_tensor_t *t, int dim0, int dim1, cow_tensor_t **out)
{
	struct cow__view_step s;

	VIEW_ARGS(t, out);
	cow__view_step_init(&s, COW__STEP_TRANSPOSE);
	s.dim = dim0;
	s.dim2 = dim1;
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_permute(cow_tensor_t *t, int ndim, const int *dims,
    cow_tensor_t **out)
{
	struct cow__view_step s;

	VIEW_ARGS(t, out);
	if (ndim != t->ndim)
		return COW__NAMED(cow__error(COW_ESHAPE,
		    "%d dims given for a tensor with %d dimensions", ndim,
		    t->ndim));
	if (ndim > 0 && dims == NULL)
		return COW__NAMED(cow__error(COW_EINVAL, "argument 'dims' is "
		    "NULL"));
	cow__view_step_init(&s, COW__STEP_PERMUTE);
	s.ndim = ndim;
	for (int d = 0; d < ndim; d++)
		s.perm[d] = dims[d];
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_unsqueeze(cow_tensor_t *t, int dim, cow_tensor_t **out)
{
	struct cow__view_step s;

	VIEW_ARGS(t, out);
	cow__view_step_init(&s, COW__STEP_UNSQUEEZE);
	s.dim = dim;
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_squeeze(cow_tensor_t *t, int dim, cow_tensor_t **out)
{
	struct cow__view_step s;

	VIEW_ARGS(t, out);
	cow__view_step_init(&s, COW__STEP_SQUEEZE);
	s.dim = dim;
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_squeeze_all(cow_tensor_t *t, cow_tensor_t **out)
{
	struct cow__view_step s;

	VIEW_ARGS(t, out);
	cow__view_step_init(&s, COW__STEP_SQUEEZE_ALL);
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_expand(cow_tensor_t *t, int ndim, const int64_t *sizes,
    cow_tensor_t **out)
{
	struct cow__view_step s;

	VIEW_ARGS(t, out);
	if (ndim < t->ndim || ndim > COW_TENSOR_MAX_NDIM)
		return COW__NAMED(cow__error(COW_ERANGE,
		    "ndim %d out of range [%d, %d]", ndim, t->ndim,
		    COW_TENSOR_MAX_NDIM));
	if (ndim > 0 && sizes == NULL)
		return COW__NAMED(cow__error(COW_EINVAL,
		    "sizes is NULL but ndim is %d", ndim));
	cow__view_step_init(&s, COW__STEP_EXPAND);
	s.ndim = ndim;
	for (int d = 0; d < ndim; d++)
		s.sizes[d] = sizes[d];
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_diagonal(cow_tensor_t *t, int64_t offset, int dim1, int dim2,
    cow_tensor_t **out)
{
	struct cow__view_step s;

	VIEW_ARGS(t, out);
	cow__view_step_init(&s, COW__STEP_DIAGONAL);
	s.a = offset;
	s.dim = dim1;
	s.dim2 = dim2;
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}

cow_status_t
cow_tensor_as_strided(cow_tensor_t *t, int ndim, const int64_t *sizes,
    const int64_t *strides, int64_t storage_offset, cow_tensor_t **out)
{
	struct cow__view_step s;
	cow_status_t st;

	VIEW_ARGS(t, out);
	if ((st = cow__shape_check(ndim, sizes, t->itemsize, NULL,
	    NULL)) != COW_OK)
		return COW__NAMED(st);
	if (ndim > 0 && strides == NULL)
		return COW__NAMED(cow__error(COW_EINVAL,
		    "strides is NULL but ndim is %d", ndim));
	cow__view_step_init(&s, COW__STEP_AS_STRIDED);
	s.ndim = ndim;
	for (int d = 0; d < ndim; d++) {
		s.sizes[d] = sizes[d];
		s.strides[d] = strides[d];
	}
	s.a = storage_offset;
	return COW__NAMED(t->impl->view(t, &s, out, __func__));
}
