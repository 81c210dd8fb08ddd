/*
 * view_step.h - the rules of the view functions, written once: a view op
 * reified as a step (its kind and arguments), its validation and
 * normalisation against the parent's layout, and the layout it gives.
 *
 * The public view functions (views.c) build a step from their arguments
 * and apply it to the tensor's layout. The functionalization layer records
 * the same steps in its paths and replays them on values, so a functional
 * tensor reports the strides, offset and contiguity the strided runtime
 * would give it, and every view decides and fails the same way, with the
 * same messages, on both.
 */
#ifndef COW_TENSOR_VIEW_STEP_H
#define COW_TENSOR_VIEW_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cowstore/tensor.h>

#include "core/error.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

enum cow__step_kind {
	COW__STEP_VIEW,        /* view and reshape: sizes */
	COW__STEP_SELECT,      /* dim, a = index */
	COW__STEP_SLICE,       /* dim, a = start, b = end; normalised: b =
	                          length, c = step */
	COW__STEP_NARROW,      /* dim, a = start, b = length */
	COW__STEP_TRANSPOSE,   /* dim, dim2 */
	COW__STEP_PERMUTE,     /* perm[ndim] */
	COW__STEP_UNSQUEEZE,   /* dim */
	COW__STEP_SQUEEZE,     /* dim (removed only if its size is 1) */
	COW__STEP_SQUEEZE_ALL,
	COW__STEP_EXPAND,      /* sizes */
	COW__STEP_DIAGONAL,    /* a = offset, dim, dim2; normalised: b =
	                          length */
	COW__STEP_AS_STRIDED,  /* sizes, strides, a = storage offset
	                          (absolute) */
	COW__STEP_KIND_COUNT
};

/*
 * One view op. The array entries a kind does not use are never read (not
 * even by cow__view_step_equal), so they may stay uninitialised; the
 * scalars are set (cow__view_step_init).
 */
struct cow__view_step {
	enum cow__step_kind kind;
	int dim, dim2;
	int64_t a, b, c;
	int ndim;                        /* entries of sizes/strides/perm */
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int64_t strides[COW_TENSOR_MAX_NDIM];
	int perm[COW_TENSOR_MAX_NDIM];
	/* The parent's shape and the result's (cow__view_step_make). */
	int in_ndim, out_ndim;
	int64_t in_sizes[COW_TENSOR_MAX_NDIM];
	int64_t out_sizes[COW_TENSOR_MAX_NDIM];
};

/* A step of @kind with every scalar argument 0 and no array entries (the
 * shapes are recorded by cow__view_step_make). */
static inline void
cow__view_step_init(struct cow__view_step *s, enum cow__step_kind kind)
{
	s->kind = kind;
	s->dim = s->dim2 = 0;
	s->a = s->b = s->c = 0;
	s->ndim = 0;
}

/* "view", "select", ... */
const char *cow__step_kind_name(enum cow__step_kind kind);

/*
 * Validate the step @s against its parent's layout *@l, with the errors
 * and messages of its view function, normalise its arguments in
 * place, and turn *@l into the result's layout. On failure *@l is
 * unchanged. @itemsize and @nbytes (the bytes an as_strided layout must
 * stay inside: the storage's, or a functional group's base) bound the
 * shape and as_strided.
 *
 * The view function has already turned its arguments into the step (the
 * checks that need the raw arguments: NULL arrays, the count of entries,
 * a view's shape inferred for the parent's element count).
 */
cow_status_t cow__view_step_apply(struct cow__view_step *s,
    struct cow__layout *l, size_t itemsize, size_t nbytes);

/* cow__view_step_apply(), and the step records both shapes (in_ndim,
 * in_sizes, out_ndim, out_sizes): what a replay or an inversion needs. */
cow_status_t cow__view_step_make(struct cow__view_step *s,
    struct cow__layout *l, size_t itemsize, size_t nbytes);

/* Turn *@l, a layout of a validated step's parent shape, into the layout
 * of the step's result. as_strided ignores *@l: it is absolute. */
void cow__view_step_layout(const struct cow__view_step *s,
    struct cow__layout *l);

/* Do two validated steps make the same view of the same parent shape?
 * Compares what their kind uses. */
bool cow__view_step_equal(const struct cow__view_step *a,
    const struct cow__view_step *b);

/* ------------------------------------------------------------------ */
/* The rules. Inline, so that a view function (views.c), which knows its */
/* step's kind, compiles only that kind's rules; the out-of-line         */
/* functions above (view_step.c) take any kind. Stride and offset        */
/* arithmetic saturates (cow__sat_mul/add): a view of a tensor with no   */
/* elements, or along a size-1 dimension, may meet huge values that are  */
/* never applied. An empty view keeps its parent's offset.               */

#define COW__STEP_INLINE static inline __attribute__((always_inline))

COW__STEP_INLINE void
cow__step_remove_dim(struct cow__layout *l, int dim)
{
	for (int d = dim; d + 1 < l->ndim; d++) {
		l->sizes[d] = l->sizes[d + 1];
		l->strides[d] = l->strides[d + 1];
	}
	l->ndim--;
}

/* The layout of a view of @l at @offset more elements (saturating). */
COW__STEP_INLINE void
cow__step_shift(struct cow__layout *l, int64_t index, int64_t stride)
{
	l->offset = cow__sat_add(l->offset, cow__sat_mul(index, stride));
}

COW__STEP_INLINE void
cow__step_layout(enum cow__step_kind kind, const struct cow__view_step *s,
    struct cow__layout *l)
{
	int64_t sizes[COW_TENSOR_MAX_NDIM], strides[COW_TENSOR_MAX_NDIM];
	int64_t offset = l->offset, x;
	int d, a, b;

	switch (kind) {
	case COW__STEP_AS_STRIDED:
		/* Absolute: nothing of the parent's layout stays. */
		l->ndim = s->ndim;
		l->offset = s->a;
		for (d = 0; d < s->ndim; d++) {
			l->sizes[d] = s->sizes[d];
			l->strides[d] = s->strides[d];
		}
		return;
	case COW__STEP_VIEW:
		/* Validated: the strides exist. */
		(void)cow__view_strides(l->ndim, l->sizes, l->strides, s->ndim,
		    s->sizes, strides);
		l->ndim = s->ndim;
		for (d = 0; d < s->ndim; d++) {
			l->sizes[d] = s->sizes[d];
			l->strides[d] = strides[d];
		}
		break;
	case COW__STEP_SELECT:
		cow__step_shift(l, s->a, l->strides[s->dim]);
		cow__step_remove_dim(l, s->dim);
		break;
	case COW__STEP_SLICE:
	case COW__STEP_NARROW:
		/* An empty slice keeps the offset: start may be one past the
		 * end. */
		if (s->b > 0)
			cow__step_shift(l, s->a, l->strides[s->dim]);
		l->sizes[s->dim] = s->b;
		if (kind == COW__STEP_SLICE)
			l->strides[s->dim] = cow__sat_mul(l->strides[s->dim],
			    s->b > 1 ? s->c : 1);
		break;
	case COW__STEP_TRANSPOSE:
		x = l->sizes[s->dim];
		l->sizes[s->dim] = l->sizes[s->dim2];
		l->sizes[s->dim2] = x;
		x = l->strides[s->dim];
		l->strides[s->dim] = l->strides[s->dim2];
		l->strides[s->dim2] = x;
		break;
	case COW__STEP_PERMUTE:
		for (d = 0; d < s->ndim; d++) {
			sizes[d] = l->sizes[d];
			strides[d] = l->strides[d];
		}
		for (d = 0; d < s->ndim; d++) {
			l->sizes[d] = sizes[s->perm[d]];
			l->strides[d] = strides[s->perm[d]];
		}
		break;
	case COW__STEP_UNSQUEEZE:
		/* The stride a dense layout would give it (any value is
		 * valid). */
		x = s->dim < l->ndim ?
		    cow__sat_mul(l->sizes[s->dim], l->strides[s->dim]) : 1;
		for (d = l->ndim; d > s->dim; d--) {
			l->sizes[d] = l->sizes[d - 1];
			l->strides[d] = l->strides[d - 1];
		}
		l->sizes[s->dim] = 1;
		l->strides[s->dim] = x;
		l->ndim++;
		break;
	case COW__STEP_SQUEEZE:
		if (l->sizes[s->dim] == 1)
			cow__step_remove_dim(l, s->dim);
		break;
	case COW__STEP_SQUEEZE_ALL:
		for (d = l->ndim - 1; d >= 0; d--)
			if (l->sizes[d] == 1)
				cow__step_remove_dim(l, d);
		break;
	case COW__STEP_EXPAND:
		/* Downwards: entry d is written after every entry it may read
		 * (d - lead <= d) and before none. */
		a = s->ndim - l->ndim; /* the new leading dimensions */
		for (d = s->ndim - 1; d >= 0; d--) {
			int od = d - a;

			x = od >= 0 && l->sizes[od] == s->sizes[d] ?
			    l->strides[od] : 0;
			l->sizes[d] = s->sizes[d];
			l->strides[d] = x;
		}
		l->ndim = s->ndim;
		break;
	case COW__STEP_DIAGONAL:
		a = s->dim;
		b = s->dim2;
		x = cow__sat_add(l->strides[a], l->strides[b]);
		if (s->b > 0)
			cow__step_shift(l, s->a >= 0 ? s->a : -s->a,
			    l->strides[s->a >= 0 ? b : a]);
		cow__step_remove_dim(l, a > b ? a : b);
		cow__step_remove_dim(l, a > b ? b : a);
		l->sizes[l->ndim] = s->b;
		l->strides[l->ndim] = x;
		l->ndim++;
		break;
	default:
		break;
	}
	/* An empty view keeps its parent's offset. */
	for (d = 0; d < l->ndim; d++)
		if (l->sizes[d] == 0)
			l->offset = offset;
}

/* Python's slice bound: negative counts from the end, then clamp. */
COW__STEP_INLINE int64_t
cow__step_slice_bound(int64_t v, int64_t size)
{
	if (v < 0)
		v = v < -size ? 0 : v + size;
	return v > size ? size : v;
}

COW__STEP_INLINE cow_status_t
cow__step_check_view(const struct cow__view_step *s,
    const struct cow__layout *in)
{
	char x[COW__SHAPE_STR_MAX], y[COW__SHAPE_STR_MAX];
	char z[COW__SHAPE_STR_MAX];
	int64_t strides[COW_TENSOR_MAX_NDIM];

	if (cow__view_strides(in->ndim, in->sizes, in->strides, s->ndim,
	    s->sizes, strides))
		return COW_OK;
	return cow__error(COW_ESHAPE,
	    "shape %s is not compatible with sizes %s and strides %s "
	    "(a dimension spans non-contiguous memory; use reshape)",
	    cow__shape_str(x, s->ndim, s->sizes),
	    cow__shape_str(y, in->ndim, in->sizes),
	    cow__shape_str(z, in->ndim, in->strides));
}

/* Select, slice and narrow act on one dimension @d (wrapped) of @size. */
COW__STEP_INLINE cow_status_t
cow__step_check_select(struct cow__view_step *s, int d, int64_t size)
{
	if (s->a < -size || s->a >= size)
		return cow__error(COW_ERANGE,
		    "index %lld out of range for dim %d of size %lld",
		    (long long)s->a, d, (long long)size);
	if (s->a < 0)
		s->a += size;
	return COW_OK;
}

COW__STEP_INLINE cow_status_t
cow__step_check_slice(struct cow__view_step *s, int64_t size)
{
	if (s->c <= 0)
		return cow__error(COW_EINVAL,
		    "step %lld must be positive", (long long)s->c);
	s->a = cow__step_slice_bound(s->a, size);
	s->b = cow__step_slice_bound(s->b, size);
	/* From here on b is the length. */
	s->b = s->b > s->a ? (s->b - s->a - 1) / s->c + 1 : 0;
	return COW_OK;
}

COW__STEP_INLINE cow_status_t
cow__step_check_narrow(struct cow__view_step *s, int d, int64_t size)
{
	if (s->a < -size || s->a > size)
		return cow__error(COW_ERANGE,
		    "start %lld out of range [%lld, %lld] for dim %d",
		    (long long)s->a, (long long)-size, (long long)size, d);
	if (s->a < 0)
		s->a += size;
	if (s->b < 0 || s->b > size - s->a)
		return cow__error(COW_ERANGE,
		    "length %lld out of range [0, %lld] for start %lld of dim "
		    "%d", (long long)s->b, (long long)(size - s->a),
		    (long long)s->a, d);
	return COW_OK;
}

/* Select, slice or narrow (@kind): wrap the step's dimension, check the
 * kind's arguments against its size, then store the wrapped dimension. */
COW__STEP_INLINE cow_status_t
cow__step_check_one_dim(enum cow__step_kind kind, struct cow__view_step *s,
    const struct cow__layout *in)
{
	cow_status_t st;
	int64_t size;
	int d;

	if ((st = cow__wrap_dim(s->dim, in->ndim, &d)) != COW_OK)
		return st;
	size = in->sizes[d];
	if (kind == COW__STEP_SELECT)
		st = cow__step_check_select(s, d, size);
	else if (kind == COW__STEP_SLICE)
		st = cow__step_check_slice(s, size);
	else
		st = cow__step_check_narrow(s, d, size);
	if (st == COW_OK)
		s->dim = d;
	return st;
}

/* The view function checked the count of entries against @in's. */
COW__STEP_INLINE cow_status_t
cow__step_check_permute(struct cow__view_step *s)
{
	bool seen[COW_TENSOR_MAX_NDIM] = {false};
	cow_status_t st;
	int d;

	for (int i = 0; i < s->ndim; i++) {
		int raw = s->perm[i];

		if ((st = cow__wrap_dim(raw, s->ndim, &d)) != COW_OK)
			return st;
		if (seen[d])
			return cow__error(COW_EINVAL,
			    "dim %d appears twice in the permutation", raw);
		seen[d] = true;
		s->perm[i] = d;
	}
	return COW_OK;
}

/* The view function checked the count of entries (in [@in's ndim,
 * COW_TENSOR_MAX_NDIM]). */
COW__STEP_INLINE cow_status_t
cow__step_check_expand(struct cow__view_step *s,
    const struct cow__layout *in, size_t itemsize)
{
	char x[COW__SHAPE_STR_MAX], y[COW__SHAPE_STR_MAX];
	int64_t want[COW_TENSOR_MAX_NDIM];
	int lead = s->ndim - in->ndim;

	for (int d = 0; d < s->ndim; d++) {
		int od = d - lead;

		want[d] = s->sizes[d];
		if (want[d] == -1 && od >= 0)
			want[d] = in->sizes[od];
		if (want[d] < 0)
			return cow__error(COW_EINVAL,
			    "size %lld at dim %d is invalid%s",
			    (long long)s->sizes[d], d, s->sizes[d] == -1 ?
			    " (-1 is only allowed for existing dims)" : "");
		if (od >= 0 && in->sizes[od] != want[d] && in->sizes[od] != 1)
			return cow__error(COW_ESHAPE,
			    "cannot expand shape %s to %s: dim %d has size "
			    "%lld, not 1",
			    cow__shape_str(x, in->ndim, in->sizes),
			    cow__shape_str(y, s->ndim, s->sizes), od,
			    (long long)in->sizes[od]);
	}
	for (int d = 0; d < s->ndim; d++)
		s->sizes[d] = want[d];
	return cow__shape_check(s->ndim, s->sizes, itemsize, NULL, NULL);
}

COW__STEP_INLINE cow_status_t
cow__step_check_diagonal(struct cow__view_step *s, const struct cow__layout *in)
{
	int64_t n1, n2, off = s->a;
	cow_status_t st;
	int a, b;

	if ((st = cow__wrap_dim(s->dim, in->ndim, &a)) != COW_OK ||
	    (st = cow__wrap_dim(s->dim2, in->ndim, &b)) != COW_OK)
		return st;
	if (a == b)
		return cow__error(COW_EINVAL,
		    "dim1 %d and dim2 %d are the same dimension", s->dim,
		    s->dim2);
	n1 = in->sizes[a];
	n2 = in->sizes[b];
	/* Element k of the diagonal is [k, k + offset] (offset >= 0) or
	 * [k - offset, k] (offset < 0) in (dim1, dim2). */
	if (off >= 0)
		s->b = off >= n2 ? 0 : (n1 < n2 - off ? n1 : n2 - off);
	else
		s->b = off <= -n1 ? 0 : (n1 + off < n2 ? n1 + off : n2);
	s->dim = a;
	s->dim2 = b;
	return COW_OK;
}

/* Validation of each kind; writes normalised arguments into @s. */
COW__STEP_INLINE cow_status_t
cow__step_check(enum cow__step_kind kind, struct cow__view_step *s,
    const struct cow__layout *in, size_t itemsize, size_t nbytes)
{
	switch (kind) {
	case COW__STEP_VIEW:
		return cow__step_check_view(s, in);
	case COW__STEP_SELECT:
	case COW__STEP_SLICE:
	case COW__STEP_NARROW:
		return cow__step_check_one_dim(kind, s, in);
	case COW__STEP_TRANSPOSE: {
		cow_status_t st;

		if ((st = cow__wrap_dim(s->dim, in->ndim, &s->dim)) !=
		    COW_OK)
			return st;
		return cow__wrap_dim(s->dim2, in->ndim, &s->dim2);
	}
	case COW__STEP_PERMUTE:
		return cow__step_check_permute(s);
	case COW__STEP_UNSQUEEZE:
		if (in->ndim == COW_TENSOR_MAX_NDIM)
			return cow__error(COW_ERANGE,
			    "the tensor already has the maximum of %d "
			    "dimensions", COW_TENSOR_MAX_NDIM);
		return cow__wrap_dim(s->dim, in->ndim + 1, &s->dim);
	case COW__STEP_SQUEEZE:
		return cow__wrap_dim(s->dim, in->ndim, &s->dim);
	case COW__STEP_SQUEEZE_ALL:
		return COW_OK;
	case COW__STEP_EXPAND:
		return cow__step_check_expand(s, in, itemsize);
	case COW__STEP_DIAGONAL:
		return cow__step_check_diagonal(s, in);
	case COW__STEP_AS_STRIDED:
		/* The view function checked the shape. */
		return cow__layout_check(s->ndim, s->sizes, s->strides, s->a,
		    itemsize, nbytes);
	default:
		return cow__error(COW_EINVAL, "unknown view kind %d",
		    (int)kind);
	}
}

/* cow__view_step_apply() with the kind given apart, so that a caller
 * that knows it compiles only that kind's rules. */
COW__STEP_INLINE cow_status_t
cow__step_apply(enum cow__step_kind kind, struct cow__view_step *s,
    struct cow__layout *l, size_t itemsize, size_t nbytes)
{
	cow_status_t st;

	if ((st = cow__step_check(kind, s, l, itemsize, nbytes)) !=
	    COW_OK)
		return st;
	cow__step_layout(kind, s, l);
	return COW_OK;
}

#endif
