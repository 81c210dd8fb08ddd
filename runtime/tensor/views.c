/*
 * views.c - views: new tensors over the SAME storage with a derived layout.
 * Nothing is copied, read or written. Every view of a valid tensor stays
 * inside its storage, except as_strided, which is checked against it.
 *
 * Stride and offset arithmetic saturates (cow__sat_mul/add): a view of a
 * tensor with no elements, or along a size-1 dimension, may meet huge values
 * that are never applied. An empty view keeps its base's offset.
 */
#include "core/error.h"
#include "functional/dispatch.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

/* A layout being built from @t's. */
struct cow_layout {
	int ndim;
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int64_t strides[COW_TENSOR_MAX_NDIM];
	int64_t offset;
};

static void
cow_layout_of(const cow_tensor_t *t, struct cow_layout *l)
{
	l->ndim = t->ndim;
	l->offset = t->offset;
	for (int d = 0; d < t->ndim; d++) {
		l->sizes[d] = t->sizes[d];
		l->strides[d] = t->strides[d];
	}
}

static void
cow_layout_remove(struct cow_layout *l, int dim)
{
	for (int d = dim; d + 1 < l->ndim; d++) {
		l->sizes[d] = l->sizes[d + 1];
		l->strides[d] = l->strides[d + 1];
	}
	l->ndim--;
}

static cow_status_t
cow_view_make(cow_tensor_t *t, const struct cow_layout *l, cow_tensor_t **out,
    const char *func)
{
	int64_t offset = l->offset;

	for (int d = 0; d < l->ndim; d++)
		if (l->sizes[d] == 0)
			offset = t->offset;
	return cow__tensor_new_view(t, l->ndim, l->sizes, l->strides, offset,
	    out, func);
}

#define COW_VIEW_ARGS(t, out)                                               \
	do {                                                                \
		COW__CHECK_NOT_NULL(t);                                     \
		COW__CHECK_NOT_NULL(out);                                   \
	} while (0)

cow_status_t
cow_tensor_view(cow_tensor_t *t, int ndim, const int64_t *sizes,
    cow_tensor_t **out)
{
	struct cow_layout l;
	cow_status_t st;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_view(t, ndim, sizes, out);
	if ((st = cow__shape_infer(t->numel, ndim, sizes, l.sizes, __func__)) !=
	    COW_OK)
		return st;
	if (!cow__view_strides(t->ndim, t->sizes, t->strides, ndim, l.sizes,
	    l.strides)) {
		char a[COW__SHAPE_STR_MAX], b[COW__SHAPE_STR_MAX];
		char c[COW__SHAPE_STR_MAX];

		return cow__error(COW_ESHAPE, __func__,
		    "shape %s is not compatible with sizes %s and strides %s "
		    "(a dimension spans non-contiguous memory; use reshape)",
		    cow__shape_str(a, ndim, l.sizes),
		    cow__shape_str(b, t->ndim, t->sizes),
		    cow__shape_str(c, t->ndim, t->strides));
	}
	l.ndim = ndim;
	l.offset = t->offset;
	return cow_view_make(t, &l, out, __func__);
}

cow_status_t
cow_tensor_select(cow_tensor_t *t, int dim, int64_t index, cow_tensor_t **out)
{
	struct cow_layout l;
	cow_status_t st;
	int d;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_select(t, dim, index, out);
	if ((st = cow__wrap_dim(dim, t->ndim, &d, __func__)) != COW_OK)
		return st;
	if (index < -t->sizes[d] || index >= t->sizes[d])
		return cow__error(COW_ERANGE, __func__,
		    "index %lld out of range for dim %d of size %lld",
		    (long long)index, d, (long long)t->sizes[d]);
	if (index < 0)
		index += t->sizes[d];
	cow_layout_of(t, &l);
	l.offset = cow__sat_add(l.offset, cow__sat_mul(index, t->strides[d]));
	cow_layout_remove(&l, d);
	return cow_view_make(t, &l, out, __func__);
}

/* Python's slice bound: negative counts from the end, then clamp. */
static int64_t
cow_slice_bound(int64_t v, int64_t size)
{
	if (v < 0)
		v = v < -size ? 0 : v + size;
	return v > size ? size : v;
}

cow_status_t
cow_tensor_slice(cow_tensor_t *t, int dim, int64_t start, int64_t end,
    int64_t step, cow_tensor_t **out)
{
	struct cow_layout l;
	cow_status_t st;
	int64_t n;
	int d;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_slice(t, dim, start, end, step, out);
	if ((st = cow__wrap_dim(dim, t->ndim, &d, __func__)) != COW_OK)
		return st;
	if (step <= 0)
		return cow__error(COW_EINVAL, __func__,
		    "step %lld must be positive", (long long)step);
	start = cow_slice_bound(start, t->sizes[d]);
	end = cow_slice_bound(end, t->sizes[d]);
	n = end > start ? (end - start - 1) / step + 1 : 0;
	cow_layout_of(t, &l);
	/* An empty slice keeps the offset: start may be one past the end. */
	if (n > 0)
		l.offset = cow__sat_add(l.offset,
		    cow__sat_mul(start, t->strides[d]));
	l.sizes[d] = n;
	l.strides[d] = cow__sat_mul(t->strides[d], n > 1 ? step : 1);
	return cow_view_make(t, &l, out, __func__);
}

cow_status_t
cow_tensor_narrow(cow_tensor_t *t, int dim, int64_t start, int64_t length,
    cow_tensor_t **out)
{
	struct cow_layout l;
	cow_status_t st;
	int64_t size;
	int d;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_narrow(t, dim, start, length, out);
	if ((st = cow__wrap_dim(dim, t->ndim, &d, __func__)) != COW_OK)
		return st;
	size = t->sizes[d];
	if (start < -size || start > size)
		return cow__error(COW_ERANGE, __func__,
		    "start %lld out of range [%lld, %lld] for dim %d",
		    (long long)start, (long long)-size, (long long)size, d);
	if (start < 0)
		start += size;
	if (length < 0 || length > size - start)
		return cow__error(COW_ERANGE, __func__,
		    "length %lld out of range [0, %lld] for start %lld of dim "
		    "%d", (long long)length, (long long)(size - start),
		    (long long)start, d);
	cow_layout_of(t, &l);
	if (length > 0)
		l.offset = cow__sat_add(l.offset,
		    cow__sat_mul(start, t->strides[d]));
	l.sizes[d] = length;
	return cow_view_make(t, &l, out, __func__);
}

cow_status_t
cow_tensor_transpose(cow_tensor_t *t, int dim0, int dim1, cow_tensor_t **out)
{
	struct cow_layout l;
	cow_status_t st;
	int a, b;
	int64_t x;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_transpose(t, dim0, dim1, out);
	if ((st = cow__wrap_dim(dim0, t->ndim, &a, __func__)) != COW_OK ||
	    (st = cow__wrap_dim(dim1, t->ndim, &b, __func__)) != COW_OK)
		return st;
	cow_layout_of(t, &l);
	x = l.sizes[a];
	l.sizes[a] = l.sizes[b];
	l.sizes[b] = x;
	x = l.strides[a];
	l.strides[a] = l.strides[b];
	l.strides[b] = x;
	return cow_view_make(t, &l, out, __func__);
}

cow_status_t
cow_tensor_permute(cow_tensor_t *t, int ndim, const int *dims,
    cow_tensor_t **out)
{
	struct cow_layout l;
	bool seen[COW_TENSOR_MAX_NDIM] = {false};
	cow_status_t st;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_permute(t, ndim, dims, out);
	if (ndim != t->ndim)
		return cow__error(COW_ESHAPE, __func__,
		    "%d dims given for a tensor with %d dimensions", ndim,
		    t->ndim);
	if (ndim > 0 && dims == NULL)
		return cow__error(COW_EINVAL, __func__, "argument 'dims' is "
		    "NULL");
	cow_layout_of(t, &l);
	for (int i = 0; i < ndim; i++) {
		int d;

		if ((st = cow__wrap_dim(dims[i], ndim, &d, __func__)) != COW_OK)
			return st;
		if (seen[d])
			return cow__error(COW_EINVAL, __func__,
			    "dim %d appears twice in the permutation", dims[i]);
		seen[d] = true;
		l.sizes[i] = t->sizes[d];
		l.strides[i] = t->strides[d];
	}
	return cow_view_make(t, &l, out, __func__);
}

cow_status_t
cow_tensor_unsqueeze(cow_tensor_t *t, int dim, cow_tensor_t **out)
{
	struct cow_layout l;
	cow_status_t st;
	int d;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_unsqueeze(t, dim, out);
	if (t->ndim == COW_TENSOR_MAX_NDIM)
		return cow__error(COW_ERANGE, __func__,
		    "the tensor already has the maximum of %d dimensions",
		    COW_TENSOR_MAX_NDIM);
	if ((st = cow__wrap_dim(dim, t->ndim + 1, &d, __func__)) != COW_OK)
		return st;
	cow_layout_of(t, &l);
	for (int i = l.ndim; i > d; i--) {
		l.sizes[i] = l.sizes[i - 1];
		l.strides[i] = l.strides[i - 1];
	}
	l.sizes[d] = 1;
	/* The stride a dense layout would give it (any value is valid). */
	l.strides[d] = d < t->ndim ? cow__sat_mul(t->sizes[d], t->strides[d]) :
	    1;
	l.ndim++;
	return cow_view_make(t, &l, out, __func__);
}

cow_status_t
cow_tensor_squeeze(cow_tensor_t *t, int dim, cow_tensor_t **out)
{
	struct cow_layout l;
	cow_status_t st;
	int d;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_squeeze(t, dim, out);
	if ((st = cow__wrap_dim(dim, t->ndim, &d, __func__)) != COW_OK)
		return st;
	cow_layout_of(t, &l);
	if (t->sizes[d] == 1)
		cow_layout_remove(&l, d);
	return cow_view_make(t, &l, out, __func__);
}

cow_status_t
cow_tensor_squeeze_all(cow_tensor_t *t, cow_tensor_t **out)
{
	struct cow_layout l;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_squeeze_all(t, out);
	cow_layout_of(t, &l);
	for (int d = l.ndim - 1; d >= 0; d--)
		if (l.sizes[d] == 1)
			cow_layout_remove(&l, d);
	return cow_view_make(t, &l, out, __func__);
}

cow_status_t
cow_tensor_expand(cow_tensor_t *t, int ndim, const int64_t *sizes,
    cow_tensor_t **out)
{
	char a[COW__SHAPE_STR_MAX], b[COW__SHAPE_STR_MAX];
	struct cow_layout l = {0}; /* gcc cannot see every size is set */
	cow_status_t st;
	int lead;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_expand(t, ndim, sizes, out);
	if (ndim < t->ndim || ndim > COW_TENSOR_MAX_NDIM)
		return cow__error(COW_ERANGE, __func__,
		    "ndim %d out of range [%d, %d]", ndim, t->ndim,
		    COW_TENSOR_MAX_NDIM);
	if (ndim > 0 && sizes == NULL)
		return cow__error(COW_EINVAL, __func__,
		    "sizes is NULL but ndim is %d", ndim);
	lead = ndim - t->ndim;
	for (int d = 0; d < ndim; d++) {
		int od = d - lead;
		int64_t want = sizes[d];

		if (want == -1 && od >= 0)
			want = t->sizes[od];
		if (want < 0)
			return cow__error(COW_EINVAL, __func__,
			    "size %lld at dim %d is invalid%s",
			    (long long)sizes[d], d, sizes[d] == -1 ?
			    " (-1 is only allowed for existing dims)" : "");
		l.sizes[d] = want;
		if (od < 0)
			l.strides[d] = 0;
		else if (t->sizes[od] == want)
			l.strides[d] = t->strides[od];
		else if (t->sizes[od] == 1)
			l.strides[d] = 0;
		else
			return cow__error(COW_ESHAPE, __func__,
			    "cannot expand shape %s to %s: dim %d has size "
			    "%lld, not 1", cow__shape_str(a, t->ndim, t->sizes),
			    cow__shape_str(b, ndim, sizes), od,
			    (long long)t->sizes[od]);
	}
	if ((st = cow__shape_check(ndim, l.sizes, t->itemsize, NULL, NULL,
	    __func__)) != COW_OK)
		return st;
	l.ndim = ndim;
	l.offset = t->offset;
	return cow_view_make(t, &l, out, __func__);
}

cow_status_t
cow_tensor_diagonal(cow_tensor_t *t, int64_t offset, int dim1, int dim2,
    cow_tensor_t **out)
{
	struct cow_layout l;
	cow_status_t st;
	int64_t n1, n2, len;
	int a, b;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_diagonal(t, offset, dim1, dim2, out);
	if ((st = cow__wrap_dim(dim1, t->ndim, &a, __func__)) != COW_OK ||
	    (st = cow__wrap_dim(dim2, t->ndim, &b, __func__)) != COW_OK)
		return st;
	if (a == b)
		return cow__error(COW_EINVAL, __func__,
		    "dim1 %d and dim2 %d are the same dimension", dim1, dim2);
	n1 = t->sizes[a];
	n2 = t->sizes[b];
	/* Element k of the diagonal is [k, k + offset] (offset >= 0) or
	 * [k - offset, k] (offset < 0) in (dim1, dim2). */
	if (offset >= 0)
		len = offset >= n2 ? 0 : (n1 < n2 - offset ? n1 : n2 - offset);
	else
		len = offset <= -n1 ? 0 :
		    (n1 + offset < n2 ? n1 + offset : n2);
	cow_layout_of(t, &l);
	if (len > 0)
		l.offset = cow__sat_add(l.offset, offset >= 0 ?
		    cow__sat_mul(offset, t->strides[b]) :
		    cow__sat_mul(-offset, t->strides[a]));
	cow_layout_remove(&l, a > b ? a : b);
	cow_layout_remove(&l, a > b ? b : a);
	l.sizes[l.ndim] = len;
	l.strides[l.ndim] = cow__sat_add(t->strides[a], t->strides[b]);
	l.ndim++;
	return cow_view_make(t, &l, out, __func__);
}

cow_status_t
cow_tensor_as_strided(cow_tensor_t *t, int ndim, const int64_t *sizes,
    const int64_t *strides, int64_t storage_offset, cow_tensor_t **out)
{
	cow_status_t st;

	COW_VIEW_ARGS(t, out);
	if (COW__FN_ON(t))
		return cow__fn_as_strided(t, ndim, sizes, strides,
		    storage_offset, out);
	if ((st = cow__shape_check(ndim, sizes, t->itemsize, NULL, NULL,
	    __func__)) != COW_OK)
		return st;
	if (ndim > 0 && strides == NULL)
		return cow__error(COW_EINVAL, __func__,
		    "strides is NULL but ndim is %d", ndim);
	if ((st = cow__layout_check(ndim, sizes, strides, storage_offset,
	    t->itemsize, cow_storage_nbytes(t->storage), __func__)) != COW_OK)
		return st;
	return cow__tensor_new_view(t, ndim, sizes, strides, storage_offset,
	    out, __func__);
}
